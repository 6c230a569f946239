"""Inference charts (through chart.to_dict()) and the tab's widget logic (no browser)."""

from __future__ import annotations

import pytest

from gpucluster_lib.charts.inference import (
    accelerator_comparison,
    memory_breakdown,
    throughput_latency,
)
from gpucluster_lib.inference.compare import compare_accelerators
from tests.conftest import LLAMA3_70B

SCENARIO = str(LLAMA3_70B)


def test_throughput_latency_marks_slo_region(llama3_70b_serving):
    _s, _cat, est = llama3_70b_serving
    d = throughput_latency(est.sweep_frame(), est.tpot_slo_s, est.batch).to_dict()
    region, rule = d["layer"][0], d["layer"][1]
    region_data = d["datasets"][region["data"]["name"]]
    assert region_data == [{"x0": 0.0, "x1": 100.0}]  # TPOT SLO 0.1 s = 100 ms, from the scenario
    assert rule["mark"]["type"] == "rule"
    points = d["datasets"][d["layer"][3]["data"]["name"]] if "data" in d["layer"][3] else d["datasets"][d["data"]["name"]]
    assert any(p["chosen"] and p["batch"] == est.batch for p in points)


def test_memory_breakdown_bars(llama3_70b_serving):
    _s, _cat, est = llama3_70b_serving
    d = memory_breakdown(est.memory_per_gpu_bytes).to_dict()
    rows = {r["part"]: r["gb"] for r in d["datasets"][d["data"]["name"]]}
    assert rows["weights"] == pytest.approx(70_553_706_496 / 8 / 1e9)  # Llama 3 70B, FP8, TP 8
    assert sum(rows.values()) == pytest.approx(80 * 2**30 / 1e9)     # 80 GiB H100


def test_accelerator_comparison(llama3_70b_serving):
    s, cat, _est = llama3_70b_serving
    df = compare_accelerators(s, cat)
    a100 = df[df["accelerator"] == "a100-sxm4-80gb"].iloc[0]
    assert a100["precision"] != "fp8"  # A100 has no FP8 peak: falls back to int8
    h100 = df[df["accelerator"] == "h100-sxm5-80gb"].iloc[0]
    h200 = df[df["accelerator"] == "h200-sxm-141gb"].iloc[0]
    assert h200["gpus"] <= h100["gpus"]  # same compute, more memory and bandwidth
    d = accelerator_comparison(df).to_dict()
    assert d["encoding"]["x"]["field"] == "gpus_shown"


def test_tab_reacts_and_shows_findings():
    from gpucluster_lib.ui import tab_inference
    from gpucluster_lib.ui.common import AppState

    state = AppState.from_path(SCENARIO)
    panel = tab_inference.InferencePanel(state)
    assert "40 GPUs" in panel.summary.value
    panel.rps.value = 200.0  # double the traffic
    assert state.scenario.inference.requests_per_s == 200.0
    assert "80 GPUs" in panel.summary.value
    panel.tpot.value = 2.0   # 2 ms: no batch can meet it
    assert "inference-slo-unmet" in panel.findings.value
    panel.tpot.value = 100.0
    panel.accelerator.value = "a100-sxm4-80gb"  # fp8 on A100: a finding, not a traceback
    assert state.scenario.hardware.server == "dgx-a100-640gb"
    assert "inference-precision-unsupported" in panel.findings.value
    assert panel.msg.value == ""


def test_tab_vision_section():
    from gpucluster_lib.ui import tab_inference
    from gpucluster_lib.ui.common import AppState

    panel = tab_inference.InferencePanel(AppState.from_path(SCENARIO))
    panel.vision_model.value = "resnet50"
    panel.vision_fps.value = 30.0
    # H100 FP8: 64 x 8.18 GFLOP / (1978.9 TFLOP/s x 0.20) + 10 ms = 11.3 ms per batch -> 5,652 img/s, 188 streams
    assert "5,652 images/s" in panel.vision_out.value and "188 streams" in panel.vision_out.value
    panel.accelerator.value = "a100-sxm4-80gb"  # no FP8 on A100: a message, no stale numbers
    assert "no dense fp8" in panel.vision_msg.value and panel.vision_out.value == ""
