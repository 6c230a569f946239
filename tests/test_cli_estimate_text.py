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
    assert out.startswith("GPT-3 175B on 1024 x NVIDIA A100 SXM4 80GB\n")  # the catalogue's name, not its id
    lines = {line.split("  ")[1].strip() if line.startswith("  ") else "": line for line in
             out.splitlines()}
    memory, breakdown = lines["memory per GPU"], lines["time breakdown"]
    # ZeRO-0 (the scenario's plan): Adam's states are not sharded, and nothing is gathered
    for words in ("weights", "gradients", "optimizer states", "gathered parameters (ZeRO-3) 0.0 GiB", "activations"):
        assert words in memory, memory
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
