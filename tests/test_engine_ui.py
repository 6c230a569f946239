"""The Inference tab's serving engine dropdown (no browser): scenario in and out, the engine's host time."""

from __future__ import annotations

import pytest

from gpucluster_lib.inference.engines import engine_profile
from gpucluster_lib.scenario import dumps, loads
from gpucluster_lib.ui import tab_inference
from gpucluster_lib.ui.common import AppState
from tests.conftest import LLAMA3_70B


def test_engine_dropdown_writes_the_scenario_and_adds_the_host_time():
    state = AppState.from_path(LLAMA3_70B)  # Llama 3 70B, FP8, TP 8 on H100
    state.update(inference__batch_size=32)  # a fixed batch: both engines at the same 32 sequences
    panel = tab_inference.InferencePanel(state)
    assert panel.engine.value == "generic"
    assert [name for _, name in panel.engine.options] == ["generic", "tensorrt-llm"]
    assert panel.engine.options[1][0].startswith("TensorRT-LLM 0.10 and 0.11")
    generic = state.design.serving.tpot_s
    panel.engine.value = "tensorrt-llm"
    assert state.scenario.inference.engine == "tensorrt-llm"
    trt = state.design.serving
    # at 32 sequences the decode step reads the weights (memory-bound), so the FP8 matrix-multiply efficiency
    # does not enter; TensorRT-LLM's step adds its host time F + c x 32 sequences (responses not streamed) in
    # place of the generic 3 ms step overhead (data/serving_engines.yaml; inference/efficiency.py)
    prof = engine_profile("tensorrt-llm")
    assert trt.batch == 32
    assert trt.tpot_s - generic == pytest.approx(prof.iteration_host_time_s + 32 * prof.per_sequence(False) - 0.003,
                                                 rel=1e-9)
    assert f"TPOT {trt.tpot_s * 1000:,.1f} ms" in panel.summary.value
    # a saved scenario keeps the engine, and loading it shows it again
    saved = dumps(state.scenario)
    panel.engine.value = "generic"
    assert state.scenario.inference.engine == "generic"
    state.load(loads(saved))
    assert panel.engine.value == "tensorrt-llm" and state.design.serving.tpot_s == pytest.approx(trt.tpot_s)


def test_streaming_checkbox_charges_the_streamed_host_time_per_sequence():
    state = AppState.from_path(LLAMA3_70B)  # Llama 3 70B, FP8, TP 8 on H100
    state.update(inference__batch_size=32, inference__engine="tensorrt-llm")
    panel = tab_inference.InferencePanel(state)
    assert panel.streaming.value is False
    whole = state.design.serving.tpot_s
    panel.streaming.value = True
    assert state.scenario.inference.streaming is True
    # data/serving_engines.yaml: 12 us per streamed sequence (fitted on 0.10.0, run with --streaming) against
    # 5 us per sequence returned whole (0.11.0): 32 x (12 - 5) us = 0.224 ms more a step, nothing else moves
    assert state.design.serving.tpot_s - whole == pytest.approx(32 * 7e-6, rel=1e-6)
    # the generic engine has no host terms: streaming changes nothing there
    panel.engine.value = "generic"
    streamed_generic = state.design.serving.tpot_s
    panel.streaming.value = False
    assert state.design.serving.tpot_s == pytest.approx(streamed_generic, rel=1e-12)
    # a saved scenario keeps the choice
    panel.streaming.value = True
    saved = dumps(state.scenario)
    panel.streaming.value = False
    state.load(loads(saved))
    assert panel.streaming.value is True
