"""Training charts (through ``chart.to_dict()``), the scaling table, and the panel without a browser."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpucluster_lib.charts.training import (
    memory_chart,
    scaling_chart,
    time_breakdown_chart,
    top_plans_frame,
    validation_chart,
)
from gpucluster_lib.scenario import load_scenario
from gpucluster_lib.training import estimate, scaling, search_plans
from gpucluster_lib.ui import tab_training
from gpucluster_lib.ui.common import AppState
from gpucluster_lib.units import GIB

ROOT = Path(__file__).resolve().parent.parent
LLAMA70 = ROOT / "gpucluster_lib" / "data" / "scenarios" / "llama3-70b-512-h100.yaml"
GPT3 = ROOT / "gpucluster_lib" / "data" / "scenarios" / "gpt3-175b-1024-a100.yaml"


def _values(spec):
    name = spec["data"]["name"]
    return spec["datasets"][name]


def test_time_breakdown_chart_stacks_to_the_step_time():
    est = estimate(load_scenario(GPT3))
    spec = time_breakdown_chart(est).to_dict()
    rows = _values(spec)
    assert sum(r["seconds"] for r in rows) == pytest.approx(est.step_time_s)
    assert {r["category"] for r in rows} >= {"compute", "recompute", "TP comm", "pipeline bubble"}
    assert spec["encoding"]["x"]["title"] == "Time per step [s]"


def test_memory_chart_fills_up_to_the_gpu_memory_when_it_fits():
    est = estimate(load_scenario(GPT3))
    rows = _values(memory_chart(est).to_dict())
    assert est.fits
    assert sum(r["gib"] for r in rows) == pytest.approx(est.memory_capacity_bytes / GIB)  # parts + free = 80 GiB
    too_big = estimate(load_scenario(GPT3).replace(parallelism={"tensor": 1, "pipeline": 1, "global_batch_size": 1024}))
    rows = _values(memory_chart(too_big).to_dict())
    assert not too_big.fits and "free" not in {r["part"] for r in rows}
    assert "DOES NOT FIT" in memory_chart(too_big).to_dict()["title"]


def test_scaling_more_gpus_train_faster():
    s = load_scenario(LLAMA70)
    df = scaling(s, node_counts=[32, 64, 128])
    assert list(df["gpus"]) == [256, 512, 1024]
    assert df["training_days"].is_monotonic_decreasing
    spec = scaling_chart(df).to_dict()
    assert len(spec["hconcat"]) == 2


def test_top_plans_frame_and_validation_chart():
    t = top_plans_frame(search_plans(load_scenario(LLAMA70)).table, 5)
    assert len(t) == 5 and {"TP", "PP", "MFU", "fits", "why not"} <= set(t.columns)
    from gpucluster_lib.training import validation

    df = validation.compare(validation.load_runs().head(3))
    assert len(validation_chart(df).to_dict()["hconcat"]) == 2


def test_panel_updates_and_shows_errors():

    panel = tab_training.TrainingPanel(AppState.from_path(GPT3))
    assert "TP8 PP8x2 DP16" in panel.summary.value
    panel.recompute.value = "selective"
    assert "selective" in panel.summary.value
    assert panel.state.scenario.parallelism.recompute == "selective"
    panel.tp.value = 5
    assert "parallelism.tensor: 5 does not divide the model&#x27;s 96 attention heads" in panel.msg.value
    # the scenario holds what the page shows (so every tab and the download agree), and no number
    # of the old plan stays beside the error: summary, findings and plans are emptied
    assert panel.state.scenario.parallelism.tensor == 5
    assert panel.summary.value == panel.findings.value == panel.plans.value == ""
    assert panel.time_chart.layout.display == "none"
    panel.tp.value = 8  # back to a plan that works: the numbers come back
    assert panel.msg.value == "" and "TP8 PP8x2 DP16" in panel.summary.value
    assert panel.time_chart.layout.display is None


def test_panel_deadline_button():

    panel = tab_training.TrainingPanel(AppState.from_path(LLAMA70))
    days = panel.est.training_days
    panel.deadline.value = round(days / 2)
    panel.deadline_btn.click()
    assert "GPUs" in panel.deadline_out.value and panel.msg.value == ""
    assert panel.state.scenario.training.deadline_days == round(days / 2)


def test_panel_framework_and_tp_overlap_inputs():

    panel = tab_training.TrainingPanel(AppState.from_path(GPT3))
    assert panel.framework.value == "megatron" and panel.tp_overlap.value == "default"
    assert panel.est.time_breakdown_s["framework"] == 0.0
    panel.framework.value = "deepspeed"
    assert panel.state.scenario.training.framework == "deepspeed"
    b = panel.est.time_breakdown_s
    # DeepSpeed's pipeline slot takes 1.15x Megatron-LM's (MT-NLG 530B, Smith 2022 Sec. 2.4, against
    # Narayanan 2021 Table 2; data/training_frameworks.yaml): the framework line is 0.15 of the slot time
    slots = b["compute"] + b["recompute"] + b["tp_comm"] + b["pp_comm"]
    assert b["framework"] == pytest.approx(0.15 * slots)
    panel.framework.value = "megatron"
    tp_default = panel.est.time_breakdown_s["tp_comm"]
    panel.tp_overlap.value = "on"  # TP 8 with sequence parallelism (the panel's default for TP > 1)
    assert panel.state.scenario.parallelism.tp_comm_overlap is True
    assert "TP-overlap" in panel.summary.value
    assert panel.est.time_breakdown_s["tp_comm"] < tp_default  # the collectives run behind their GEMMs
    panel.tp.value = 1
    assert "tp_comm_overlap: needs tensor parallelism with sequence parallelism" in panel.msg.value
    assert "raise the tensor parallelism to 2 or more" in panel.msg.value  # the message names the fix


def test_panel_attention_kernel_dropdown():
    panel = tab_training.TrainingPanel(AppState.from_path(LLAMA70))
    assert panel.kernel.value == "default"  # the framework's kernel for the GPU generation
    assert [name for name, _ in panel.kernel.options] == ["Framework default (per GPU generation)", "FlashAttention-2",
                                                          "Triton FlashAttention (llm-foundry)",
                                                          "cuDNN fused attention (Transformer Engine)"]
    compute = panel.est.time_breakdown_s["compute"]
    panel.kernel.value = "triton"
    assert panel.state.scenario.training.attention_kernel == "triton"
    # llm-foundry's Triton kernel is slower than cuDNN fused attention, Megatron's kernel on H100 (asymptotes 0.193
    # and 0.549 of the peak, data/efficiency.yaml): the same plan computes longer
    assert panel.est.time_breakdown_s["compute"] > compute
    panel.kernel.value = "default"
    assert panel.state.scenario.training.attention_kernel is None
    panel.flash.value = False
    assert panel.kernel.disabled  # no fused kernel is read


def test_panel_checkpoint_early_stop_dropdown():
    from gpucluster_lib.scenario import dumps, loads

    panel = tab_training.TrainingPanel(AppState.from_path(GPT3))  # full recomputation, Megatron-LM
    assert [v for _, v in panel.early_stop.options] == ["default", "on", "off"]
    assert panel.early_stop.value == "default" and not panel.early_stop.disabled
    # GPT-3 175B (l 96, h 12288, f 4h, s 2048, V 51200): model FLOPs per token 72 l h^2 (1 + s/(6h) + V/(12 l h))
    # (Korthikanti 2022 Eq. 7); full recomputation adds each layer's forward, l (24 h^2 + 4 s h) (Narayanan 2021
    # Eq. 3), less with early stop the FFN output projection 2 h f = 8 h^2 (docs/training.md): HFU / MFU =
    # 1 + (24 + 4 s/h) / (72 (1 + s/(6h) + V/(12 l h))) = 1 + 24.6667 / 74.2604 off, 1 + 16.6667 / 74.2604 on
    model = 72 * (1 + 2048 / (6 * 12288) + 51200 / (12 * 96 * 12288))
    assert panel.est.hfu / panel.est.mfu == pytest.approx(1 + (24 + 4 * 2048 / 12288) / model, rel=1e-9)
    assert "reruns the whole layer" in panel.summary.value  # Megatron-LM's reentrant checkpoint
    step, recompute = panel.est.step_time_s, panel.est.time_breakdown_s["recompute"]
    panel.early_stop.value = "on"
    assert panel.state.scenario.training.checkpoint_early_stop is True
    assert panel.est.hfu / panel.est.mfu == pytest.approx(1 + (16 + 4 * 2048 / 12288) / model, rel=1e-9)
    # the rerun leaves out a third of each layer's GEMM FLOPs (8 of 24 h^2), the residual add and the TP
    # collective after it; the attention core and the rest of the element-wise work stay: more than a quarter
    assert panel.est.time_breakdown_s["recompute"] < recompute * (1 - 1 / 4)
    assert panel.est.step_time_s < step
    r = panel.est.time_breakdown_s["recompute"]
    assert f"{r:,.3f} s per step ({r / panel.est.step_time_s:.1%} of it)" in panel.summary.value
    assert "stops before the feed-forward output projection" in panel.summary.value
    # a saved scenario keeps the setting, and loading it shows it again
    saved = dumps(panel.state.scenario)
    panel.early_stop.value = "off"
    assert panel.state.scenario.training.checkpoint_early_stop is False
    panel.state.load(loads(saved))
    assert panel.early_stop.value == "on" and panel.state.scenario.training.checkpoint_early_stop is True
    assert panel.est.hfu / panel.est.mfu == pytest.approx(1 + (16 + 4 * 2048 / 12288) / model, rel=1e-9)
    # the framework default: FSDP's non-reentrant checkpoint stops early (data/training_frameworks.yaml)
    panel.early_stop.value = "default"
    panel.framework.value = "fsdp"
    assert panel.state.scenario.training.checkpoint_early_stop is None
    assert panel.est.hfu / panel.est.mfu == pytest.approx(1 + (16 + 4 * 2048 / 12288) / model, rel=1e-9)
    panel.recompute.value = "selective"  # read with full recomputation only
    assert panel.early_stop.disabled
    # selective recomputation reruns the attention core, which the fused kernel recomputes anyway: no rerun row
    assert "Recomputation" not in panel.summary.value
    panel.flash.value = False  # unfused: the s x s scores are rerun, with no word on where a layer's rerun ends
    assert "Recomputation" in panel.summary.value and "feed-forward" not in panel.summary.value
