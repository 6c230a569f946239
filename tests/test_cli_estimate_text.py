"""``gpucluster estimate``'s text names the step's and the memory's parts as the app's charts do
(gpucluster_lib.training.labels), never by their keys (dp_comm, optimizer_states, gather_buffers)."""

from __future__ import annotations

import re

from gpucluster_lib.cli import main
from gpucluster_lib.resources import PACKAGE_DATA

GPT3 = PACKAGE_DATA / "scenarios" / "gpt3-175b-1024-a100.yaml"
SNAKE = re.compile(r"\b[a-z0-9]+_[a-z0-9_]+\b")  # a result key such as optimizer_states


def test_estimate_text_names_parts_in_words(capsys):
    assert main(["estimate", str(GPT3)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("GPT-3 175B on 1,024 x NVIDIA A100 SXM4 80GB\n")  # the catalogue's name, not its id
    lines = {line.split("  ")[1].strip() if line.startswith("  ") else "": line for line in
             out.splitlines()}
    memory, breakdown = lines["memory per GPU"], lines["time breakdown"]
    # ZeRO-0 (the scenario's plan): Adam's states are not sharded, and nothing is gathered: the ZeRO-3-only
    # lines (gathered parameters, gradients awaiting reduction) are left out
    for words in ("weights", "gradients", "optimizer states", "activations"):
        assert words in memory, memory
    assert "ZeRO-3" not in memory and "awaiting" not in memory, memory
    # TP8 PP8 DP16 with full recompute: tensor and pipeline communication, a bubble, exposed DP comm
    for words in ("compute", "recompute", "TP comm", "PP comm", "pipeline bubble", "DP comm (exposed)"):
        assert words in breakdown, breakdown
    assert not SNAKE.findall(memory + breakdown)


def test_vision_estimate_text_has_words_and_yaml_values(tmp_path, capsys):
    (tmp_path / "v.yaml").write_text("model: resnet50\nhardware: {server: dgx-a100-640gb, nodes: 1}\n")
    assert main(["estimate", str(tmp_path / "v.yaml")]) == 0
    out = capsys.readouterr().out
    assert "Accelerator: NVIDIA A100 SXM4 80GB" in out
    assert "GPUs: 8" in out and "Fits: yes" in out  # one DGX A100: 8 GPUs (NVIDIA DGX A100 datasheet)
    assert "True" not in out and not SNAKE.findall(out)


def test_estimate_text_shows_the_pipeline_stages(capsys):
    import json

    assert main(["estimate", str(GPT3), "--json"]) == 0
    pipe = json.loads(capsys.readouterr().out)["pipeline"]
    assert main(["estimate", str(GPT3)]) == 0
    line = [x for x in capsys.readouterr().out.splitlines() if x.startswith("  pipeline ")][0]
    # GPT-3 175B, 96 layers on PP 8: 12 a stage (Narayanan 2021 Table 1 plan); the last stage also runs the
    # output layer and loss, so it sets the pace; 1F1B keeps p - i micro-batches in flight on stage i
    # (Narayanan 2021 Sec. 2.2.1), 8 on the first, which holds the most activations
    t_last_ms = pipe["stage_time_per_micro_batch_s"][7] * 1e3
    assert line == ("  pipeline        8 stages, 12 layers each; slowest stage 8 "
                    f"({t_last_ms:,.1f} ms per micro-batch); most memory on stage 1 "
                    f"({pipe['stage_memory_bytes'][0] / 2**30:.1f} GiB)")


def test_estimate_text_uneven_stages_and_zero3_lines(tmp_path, capsys):
    # Llama 3 405B on 16 stages: 126 layers, one fewer on the first and the last (Llama 3 paper Sec. 3.3.2)
    assert main(["estimate", "roce-24k-h100"]) == 0
    out = capsys.readouterr().out
    assert "  pipeline        16 stages, 7 layers on stage 1, 8 on stages 2 to 15, 7 on stage 16; slowest stage" \
        in out
    # ZeRO-3 (no pipeline): the gathered parameters are a line of their own, and no pipeline line
    (tmp_path / "z3.yaml").write_text(
        "model: {preset: llama2-7b}\nhardware: {accelerator: h100-sxm5-80gb, nodes: 2}\n"
        "network: {inter_node_gbps_per_gpu: 400}\n"
        "parallelism: {tensor: 1, pipeline: 1, micro_batch_size: 1, global_batch_size: 64, zero_stage: 3}\n")
    assert main(["estimate", str(tmp_path / "z3.yaml")]) == 0
    out = capsys.readouterr().out
    assert "gathered parameters (ZeRO-3)" in out and "  pipeline " not in out


def test_memory_finding_names_zero3_lines_only_under_zero3(tmp_path, capsys):
    # Llama 3 70B on TP1 PP4 without ZeRO: 16 bytes per parameter on a stage of 20 of 80 layers is
    # about 280 GB, far over 80 GiB; the finding lists the parts, without the ZeRO-3-only ones
    (tmp_path / "b.yaml").write_text("model: {preset: llama3-70b}\nhardware: {accelerator: h100-sxm5-80gb, nodes: 8}\n"
                                     "parallelism: {tensor: 1, pipeline: 4}\n")
    assert main(["estimate", str(tmp_path / "b.yaml")]) == 0
    line = [x for x in capsys.readouterr().out.splitlines() if "training-memory-exceeded" in x][0]
    assert "optimizer states" in line and "ZeRO-3" not in line and "awaiting" not in line


def test_catalog_text_has_no_python_values(capsys):
    # the switch table's managed column is yes/no, and cells with no value are a dash (not True, NaN, <NA>)
    assert main(["catalog", "switches"]) == 0
    out = capsys.readouterr().out
    assert not re.search(r"\b(?:True|False|NaN|None)\b|<NA>", out), out
    qm8790 = [x for x in out.splitlines() if x.strip().startswith("qm8790 ")][0]
    assert " no " in qm8790  # the catalogue's QM8790 row: "externally managed"
