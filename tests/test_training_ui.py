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
    assert len(t) == 5 and {"TP", "PP", "MFU [%]", "fits", "why not"} <= set(t.columns)
    best = search_plans(load_scenario(LLAMA70)).table.iloc[0]
    assert t["MFU [%]"].iloc[0] == round(best["mfu"] * 100, 1)   # a fraction shown in per cent
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


def _fsdp_pipeline_panel(tmp_path):
    """A Training tab on Llama 3 8B with llm-foundry (no pipeline schedule) at a fixed pipeline of 2 stages."""
    (tmp_path / "s.yaml").write_text(
        "model: {preset: llama3-8b}\nhardware: {server: dgx-h100, nodes: 2}\n"
        "parallelism: {tensor: 8, pipeline: 2, global_batch_size: 64}\n"
        "training: {precision: bf16, framework: fsdp, tokens: 1e12}\n")
    return tab_training.TrainingPanel(AppState.from_path(tmp_path / "s.yaml"))


def test_panel_deadline_not_met_says_why(tmp_path):
    # FSDP (llm-foundry / Composer) at a fixed pipeline of 2: no node count can run it, and the page says why
    panel = _fsdp_pipeline_panel(tmp_path)
    panel.deadline.value = 30
    panel.deadline_btn.click()
    assert "Not met" in panel.deadline_out.value and "has no pipeline schedule" in panel.deadline_out.value


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
    # TP 1 on the same 1,024 GPUs makes DP 128: 12 micro-batches a step, not a multiple of the 8 stages, which the
    # interleaved schedule refuses (Megatron-Core schedules.py, core_r0.8.0); without interleaving the overlap's own
    # message shows
    panel.vp.value = 1
    panel.tp.value = 1
    assert "tp_comm_overlap: needs tensor parallelism with sequence parallelism" in panel.msg.value
    assert "raise the tensor parallelism to 2 or more" in panel.msg.value  # the message names the fix


def test_panel_attention_kernel_dropdown():
    panel = tab_training.TrainingPanel(AppState.from_path(LLAMA70))
    assert panel.kernel.value == "default"  # the framework's kernel for the GPU generation
    assert [name for name, _ in panel.kernel.options] == ["Framework default (per GPU generation)", "FlashAttention-2",
                                                          "FlashAttention-2 (PyTorch SDPA)",
                                                          "Triton FlashAttention (llm-foundry)",
                                                          "cuDNN fused attention"]
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
    panel.state.update(parallelism__sequence_parallel=None)  # the YAML's is off: its default (on), which fits
    panel.recompute.value = "selective"  # read with full recomputation only
    assert panel.early_stop.disabled
    # selective recomputation reruns the attention core, which the fused kernel recomputes anyway: no rerun row
    assert "Recomputation" not in panel.summary.value
    panel.flash.value = False  # unfused: the s x s scores are rerun, with no word on where a layer's rerun ends
    assert "Recomputation" in panel.summary.value and "feed-forward" not in panel.summary.value


def _mpt1b_fp8_state(accelerator: str = "h100-sxm5-80gb", **training) -> AppState:
    """MPT-1B (l 24, h 2048, f 8192 GeLU, s 2048, no biases, LayerNorm) on one node of 8 GPUs in FP8 with
    Megatron-LM: TP 1, PP 8 (3 layers a stage), DP 1, micro-batch 1, 8 micro-batches, no recomputation."""
    state = AppState.from_path(LLAMA70)
    state.update(model={"preset": "mpt-1b"}, hardware__accelerator=accelerator, hardware__server=None,
                 hardware__nodes=1, training__precision="fp8",
                 **{f"training__{k}": v for k, v in training.items()},
                 parallelism={"auto": False, "tensor": 1, "pipeline": 8, "virtual_stages": 1, "context": 1,
                              "micro_batch_size": 1, "global_batch_size": 8, "recompute": "none", "zero_stage": 0})
    return state


def test_panel_fp8_recipe_and_weights_dropdowns():
    from gpucluster_lib.scenario import dumps, loads
    from gpucluster_lib.training.framework import framework, framework_ids

    panel = tab_training.TrainingPanel(AppState.from_path(LLAMA70))  # bf16: both greyed out
    assert [name for name, _ in panel.fp8_recipe.options] == [
        "Framework default (current scaling for TorchTitan, delayed for the others)",
        "Delayed scaling (scales from the amax history)", "Current scaling (an amax pass before each cast)"]
    assert [name for name, _ in panel.fp8_params.options] == [
        "Framework default (on for NeMo)", "On: the weights themselves in FP8, gathered in one byte",
        "Off: 16-bit weights, cast to FP8 for the GEMMs"]
    # the default labels say what the frameworks do (data/training_frameworks.yaml)
    assert {f for f in framework_ids() if framework(f).fp8_recipe == "current"} == {"torchtitan"}
    assert {framework(f).fp8_recipe for f in framework_ids()} == {"current", "delayed"}
    assert {f for f in framework_ids() if framework(f).fp8_params} == {"nemo"}
    assert panel.fp8_recipe.value == panel.fp8_params.value == "default"
    assert panel.fp8_recipe.disabled and panel.fp8_params.disabled
    assert "FP8" not in panel.summary.value

    panel = tab_training.TrainingPanel(_mpt1b_fp8_state())
    assert not panel.fp8_recipe.disabled and not panel.fp8_params.disabled
    assert [v for _, v in panel.fp8_recipe.options] == ["default", "delayed", "current"]  # no MXFP8 on Hopper
    assert "FP8 delayed scaling (Transformer Engine DelayedScaling); weights in 16 bits" in panel.summary.value
    panel.fp8_recipe.value = "current"
    assert panel.state.scenario.training.fp8_recipe == "current"
    assert "FP8 current scaling (Transformer Engine Float8CurrentScaling)" in panel.summary.value
    weights = panel.est.memory_per_gpu_bytes["weights"]
    panel.fp8_params.value = "on"
    assert panel.state.scenario.training.fp8_params is True
    assert "weights in FP8" in panel.summary.value
    # Megatron-LM keeps an FP8 weight and its transpose (2 bytes) beside each 16-bit GEMM weight unless the
    # weights are FP8 (estimate.state_bytes): 3 layers x (4 h^2 + 2 h f) = 3 x 50,331,648 GEMM weights on a stage
    assert weights - panel.est.memory_per_gpu_bytes["weights"] == pytest.approx(2 * 3 * 50_331_648, rel=1e-12)
    # a saved scenario keeps both, and loading it shows them again
    saved = dumps(panel.state.scenario)
    panel.fp8_recipe.value, panel.fp8_params.value = "delayed", "off"
    assert panel.state.scenario.training.fp8_recipe == "delayed"
    assert panel.state.scenario.training.fp8_params is False
    panel.state.load(loads(saved))
    assert (panel.fp8_recipe.value, panel.fp8_params.value) == ("current", "on")
    assert panel.state.scenario.training.fp8_recipe == "current" and panel.state.scenario.training.fp8_params
    # back to the framework's: the scenario holds neither (absent = the framework's default)
    panel.fp8_recipe.value, panel.fp8_params.value = "default", "default"
    assert panel.state.scenario.training.fp8_recipe is None and panel.state.scenario.training.fp8_params is None
    # bf16: both greyed out; a greyed control is not read, so the scenario drops it (no "set but has no effect"
    # warning the user could not act on), and the page keeps the choice for the next switch to FP8
    panel.fp8_recipe.value, panel.fp8_params.value = "current", "on"
    panel.precision.value = "bf16"
    assert panel.fp8_recipe.disabled and panel.fp8_params.disabled
    assert panel.state.scenario.training.fp8_recipe is None and panel.state.scenario.training.fp8_params is None
    assert "training-setting-ignored" not in panel.findings.value and "FP8" not in panel.summary.value
    assert (panel.fp8_recipe.value, panel.fp8_params.value) == ("current", "on")
    panel.precision.value = "fp8"
    assert not panel.fp8_recipe.disabled and not panel.fp8_params.disabled
    assert panel.state.scenario.training.fp8_recipe == "current" and panel.state.scenario.training.fp8_params


def test_panel_fp8_recipe_mxfp8_then_hopper():
    panel = tab_training.TrainingPanel(_mpt1b_fp8_state("b200-sxm-180gb", fp8_recipe="mxfp8"))
    assert [v for _, v in panel.fp8_recipe.options] == ["default", "delayed", "current", "mxfp8"]  # Blackwell
    assert panel.fp8_recipe.value == "mxfp8" and panel.msg.value == ""
    assert "MXFP8 block scaling" in panel.summary.value
    panel.accelerator.value = "h100-sxm5-80gb"
    # the engine's message, no number of the Blackwell design beside it; MXFP8 stays the choice shown, in a
    # dropdown that can still be changed
    assert ("training.fp8_recipe: MXFP8 block scaling needs a Blackwell GPU; the NVIDIA H100 SXM5 80GB is a Hopper "
            "GPU; choose delayed or current scaling") in panel.msg.value
    assert panel.summary.value == panel.findings.value == ""
    assert panel.state.scenario.training.fp8_recipe == "mxfp8"
    assert panel.fp8_recipe.value == "mxfp8" and not panel.fp8_recipe.disabled
    panel.fp8_recipe.value = "delayed"  # picked in the tab: the outputs come back
    assert panel.msg.value == "" and "Step time" in panel.summary.value
    assert panel.state.scenario.training.fp8_recipe == "delayed"
    assert panel.state.scenario.hardware.accelerator == "h100-sxm5-80gb"
    assert "FP8 delayed scaling" in panel.summary.value
    assert [v for _, v in panel.fp8_recipe.options] == ["default", "delayed", "current"]  # MXFP8 no longer offered
    # a saved Hopper scenario with MXFP8 loads the same way: the message, and the recipe to change
    panel.state.update(training__fp8_recipe="mxfp8")
    panel.load()
    assert "needs a Blackwell GPU" in panel.msg.value and panel.fp8_recipe.value == "mxfp8"
    panel.fp8_recipe.value = "current"
    assert panel.msg.value == "" and "FP8 current scaling" in panel.summary.value


def test_panel_fp8_recipe_current_against_delayed_by_hand():
    """Current scaling's extra cast traffic, worked by hand from core.fp8_cast_bytes and fp8_weight_cast_s.

    H100 (Hopper: column-wise copy c = 1 byte), Megatron-LM (the norm writes QKV's and FC1's FP8 input with
    delayed scaling; the FP8 weights cast once per global batch). Per element of a cast: delayed 2 + 1 + 1 = 4
    bytes, current 4 + 2 (the amax pass) = 6; a norm-written input: delayed -1 forward and a 2 c transpose
    backward, current 6 - 2 = 4 forward (the norm takes the amax) and none backward. MPT-1B, M = 1 x 2048
    tokens a micro-batch, h 2048, attention output h, QKV 3h, f 8192 (GeLU), TP 1, per layer and micro-batch:
      forward   delayed -Mh + 4Mh - Mh + 4Mf,  current 4Mh + 6Mh + 4Mh + 6Mf:     +12 Mh + 2 Mf
      backward  delayed 2Mh + 2Mh + 4M3h + 4Mh + 4Mf + 4Mh, current 6M3h + 6Mh + 6Mf + 6Mh:  +6 Mh + 2 Mf
    = M (18 h + 4 f) = 2048 x 69,632 = 142,606,336 bytes; the weights (layer_params: 4 h^2 + two LayerNorms'
    4 h + 2 h f = 50,339,840) +2 bytes each once per 8 micro-batches: 12,584,960 bytes a micro-batch.
    1F1B over 8 stages of 3 layers: step = (m - 1) max t_i + sum t_i, so each stage's 3 layers count
    m - 1 + p = 15 times: 45 x 155,191,296 = 6,983,608,320 bytes at 0.85 (Hopper memory efficiency,
    data/efficiency.yaml) x 3.35 TB/s (catalogue), times 1.03 (step_overhead): 2.52612 ms more a step.
    """
    panel = tab_training.TrainingPanel(_mpt1b_fp8_state())
    panel.fp8_recipe.value = "delayed"
    delayed = panel.est
    assert delayed.plan.label() == "TP1 PP8 DP1 mb1 none" and delayed.plan.micro_batches == 8
    panel.fp8_recipe.value = "current"
    current = panel.est
    per_mb = 2048 * (18 * 2048 + 4 * 8192) + 2 * (4 * 2048**2 + 4 * 2048 + 2 * 2048 * 8192) / 8
    assert per_mb == 155_191_296
    added = 45 * per_mb / (3.35e12 * 0.85) * 1.03
    assert added == pytest.approx(2.52612e-3, abs=1e-8)
    assert current.step_time_s - delayed.step_time_s == pytest.approx(added, rel=1e-9)
    assert f"{current.step_time_s:,.3f} s (8 micro-batches)" in panel.summary.value
    assert f"{delayed.step_time_s:,.3f} s" != f"{current.step_time_s:,.3f} s"  # the figure shown moves


def test_panel_fp8_keys_loaded_with_bf16_are_shown_greyed_until_the_next_change():
    state = _mpt1b_fp8_state(fp8_recipe="current", fp8_params=True)
    state.update(training__precision="bf16")  # a saved file may hold them with another precision
    panel = tab_training.TrainingPanel(state)
    assert (panel.fp8_recipe.value, panel.fp8_params.value) == ("current", "on")
    assert panel.fp8_recipe.disabled and panel.fp8_params.disabled
    # the engine says both have no effect (estimate.py, training-setting-ignored)
    assert panel.findings.value.count("training-setting-ignored") == 2
    panel.mb.value = 2  # the next change on the tab writes what the tab reads: neither
    assert state.scenario.training.fp8_recipe is None and state.scenario.training.fp8_params is None
    assert "training-setting-ignored" not in panel.findings.value


def test_panel_pipeline_transfer_overlap_wgrad_deferral_and_loss_dropdowns():
    # the three Megatron-Core schedule and loss settings reach the scenario, and the panel shows the estimate of
    # exactly that scenario (the terms themselves have hand-worked tests: test_training_pipeline.py,
    # test_training_output_wgrad_deferral.py, test_training.py)
    panel = tab_training.TrainingPanel(AppState.from_path(GPT3))  # TP8 PP8 with 2 virtual stages, Megatron-LM
    assert (panel.p2p_overlap.value, panel.wgrad_deferral.value, panel.loss.value) == ("default", "default", "default")
    panel.p2p_overlap.value = "off"  # the first change writes the panel's plan (sequence parallelism with TP > 1)
    assert panel.state.scenario.parallelism.overlap_p2p_comm is False
    step, p2p = panel.est.step_time_s, panel.est.time_breakdown_s["pp_comm"]
    assert p2p > 0  # every transfer waited for
    panel.p2p_overlap.value = "on"
    assert panel.state.scenario.parallelism.overlap_p2p_comm is True
    # the steady state's transfers run behind the other direction's chunk (Megatron-Core schedules.py core_r0.8.0)
    assert panel.est.time_breakdown_s["pp_comm"] < p2p and panel.est.step_time_s < step
    panel.wgrad_deferral.value = "22"
    t = panel.state.scenario.training
    assert (t.defer_output_wgrad, t.wgrad_deferral_limit) == (True, 22)  # NeMo's llama3_70b recipe's limit
    panel.loss.value = "megatron_fused"
    assert panel.state.scenario.training.cross_entropy_loss == "megatron_fused"
    assert [name for name, _ in panel.loss.options][1:3] == [
        "Megatron vocab-parallel cross-entropy, eager PyTorch (Megatron-LM, Megatron-DeepSpeed, metaseq): 52 bytes "
        "a logit", "Megatron-Core fused cross-entropy (cross_entropy_loss_fusion, torch.compile'd): 40 bytes a logit"]
    assert panel.est.step_time_s == pytest.approx(estimate(panel.state.scenario).step_time_s, rel=1e-12)
    # DeepSpeed's pipeline engine has neither path: both settings are ignored with a warning naming them
    panel.framework.value = "deepspeed"
    assert "the pipeline transfer overlap is set, but DeepSpeed" in panel.findings.value
    assert "weight gradient is set to be deferred, but DeepSpeed" in panel.findings.value
    # back to the defaults: the scenario holds none of the three
    panel.framework.value = "megatron"
    panel.p2p_overlap.value, panel.wgrad_deferral.value, panel.loss.value = "default", "default", "default"
    t, p = panel.state.scenario.training, panel.state.scenario.parallelism
    assert (p.overlap_p2p_comm, t.defer_output_wgrad, t.wgrad_deferral_limit, t.cross_entropy_loss) == (None,) * 4
    assert panel.est.step_time_s == pytest.approx(step, rel=1e-12)  # Megatron-LM's row: the overlap off


def test_panel_loads_a_deferral_limit_it_does_not_offer():
    state = AppState.from_path(GPT3)
    state.update(training__defer_output_wgrad=True, training__wgrad_deferral_limit=7,
                 parallelism__overlap_p2p_comm=False, training__cross_entropy_loss="te_triton")
    panel = tab_training.TrainingPanel(state)
    assert panel.wgrad_deferral.value == "7" and panel.wgrad_deferral.options[-1] == ("On, the first 7 micro-batches",
                                                                                        "7")
    assert panel.p2p_overlap.value == "off" and panel.loss.value == "te_triton"
    panel.precision.value = "bf16"  # any change writes the widgets back: the loaded values survive it
    t = panel.state.scenario.training
    assert (t.defer_output_wgrad, t.wgrad_deferral_limit, t.cross_entropy_loss) == (True, 7, "te_triton")


def test_panel_fp8_recipes_follow_the_transformer_engine_release():
    # A scenario that names Transformer Engine v1.14 on B200: MXFP8 (from 2.0) and current scaling (from 2.2) are not
    # offered (tests/test_transformer_engine.py for the sources); with 2.2 both are
    panel = tab_training.TrainingPanel(_mpt1b_fp8_state("b200-sxm-180gb", transformer_engine="1.14"))
    assert [v for _, v in panel.fp8_recipe.options] == ["default", "delayed"]
    assert panel.msg.value == "" and "Step time" in panel.summary.value
    panel = tab_training.TrainingPanel(_mpt1b_fp8_state("b200-sxm-180gb", transformer_engine="2.2"))
    assert [v for _, v in panel.fp8_recipe.options] == ["default", "delayed", "current", "mxfp8"]
    # a loaded choice the release cannot run stays shown, with the engine's message naming the release
    panel = tab_training.TrainingPanel(_mpt1b_fp8_state("b200-sxm-180gb", transformer_engine="1.14",
                                                        fp8_recipe="mxfp8"))
    assert [v for _, v in panel.fp8_recipe.options] == ["default", "delayed", "mxfp8"]
    assert "training.transformer_engine: MXFP8 block scaling is in Transformer Engine from release 2.0" in panel.msg.value


def test_the_plan_fields_follow_every_search_and_other_plan_settings_stay(tmp_path):
    panel = tab_training.TrainingPanel(AppState.from_path(LLAMA70))
    # llm-foundry has no pipeline schedule: after the new search the greyed fields hold its plan (PP 1), so that
    # "Manual plan" starts from a plan the framework runs
    panel.framework.value = "fsdp"
    assert panel.est.searched and panel.est.plan.pipeline == 1
    assert (panel.tp.value, panel.pp.value, panel.cp.value) == (panel.est.plan.tensor, 1, panel.est.plan.context)
    searched, step = panel.est.plan, panel.est.step_time_s
    panel.auto.value = False
    assert panel.est.step_time_s == step and panel.est.plan.label() == searched.label()
    assert not [f for f in panel.est.findings if f.code == "training-framework-cannot-run"]
    # the written plan is the searched one, TP overlap and distributed optimizer included: the same step time
    assert panel.est.plan.tp_comm_overlap == searched.tp_comm_overlap
    assert panel.est.plan.distributed_optimizer == searched.distributed_optimizer
    # a fixed pipeline and its stage layout (no field on the tab) survive an edit of the token budget
    (tmp_path / "pl.yaml").write_text(
        "model: {preset: llama3-70b}\nhardware: {server: dgx-h100, nodes: 64}\n"
        "parallelism: {auto: true, pipeline: 4, pipeline_layers: [1, 1, 40, 38], global_batch_size: 512}\n"
        "training: {framework: torchtitan, tokens: 2.0e+12, precision: bf16}\n")
    panel = tab_training.TrainingPanel(AppState.from_path(tmp_path / "pl.yaml"))
    before = panel.est.step_time_s
    panel.tokens_b.value = 1000
    assert list(panel.state.scenario.parallelism.pipeline_layers) == [1, 1, 40, 38]
    assert panel.est.plan.pipeline_layers == (1, 1, 40, 38) and panel.est.step_time_s == before


def test_the_scaling_button_says_why_there_is_no_curve(tmp_path):
    # llm-foundry at a fixed pipeline of 2 stages: every size is refused, and the message is the refusal
    panel = _fsdp_pipeline_panel(tmp_path)
    panel.scale_btn.click()
    assert "No scaling curve" in panel.msg.value and "has no pipeline schedule" in panel.msg.value


def test_a_new_stage_count_drops_the_old_stage_layout(tmp_path):
    # 6 layers on the first stage of 4 (Llama 3 8B, 32 layers): on 2 stages the layout no longer applies
    (tmp_path / "s.yaml").write_text(
        "model: {preset: llama3-8b}\nhardware: {server: dgx-h100, nodes: 2}\n"
        "parallelism: {tensor: 4, pipeline: 4, first_stage_layers: 6, global_batch_size: 64}\n"
        "training: {precision: bf16, tokens: 1e11}\n")
    panel = tab_training.TrainingPanel(AppState.from_path(tmp_path / "s.yaml"))
    assert panel.est.stages["layers_per_stage"][0] == 6
    panel.pp.value = 2
    assert panel.msg.value == "" and panel.est.stages["layers_per_stage"] == [16, 16]
    assert panel.state.scenario.parallelism.first_stage_layers is None


SCENARIOS = ROOT / "gpucluster_lib" / "data" / "scenarios"


def test_a_written_plan_from_the_search_is_the_searched_plan(tmp_path):
    # Llama 3 405B on 24,576 H100: the search counts the embedding and the loss as stage slots so that its chunks
    # split evenly (126 layers + 2 slots on 16 stages); the written plan says so with the two flags
    panel = tab_training.TrainingPanel(AppState.from_path(SCENARIOS / "roce-24k-h100.yaml"))
    panel.auto.value = True
    searched, step = panel.est.plan, panel.est.step_time_s
    panel.auto.value = False
    assert panel.msg.value == "" and panel.est.step_time_s == step and panel.est.plan.label() == searched.label()
    # the search's choices the tab has no field for are freed again with the search (the YAML's own distributed
    # optimizer stays: the user's setting)
    panel.auto.value = True
    p = panel.state.scenario.parallelism
    assert (p.tp_comm_overlap, p.distributed_optimizer, p.embedding_in_pipeline_split) == (None, True, False)
    assert panel.tp_overlap.value == "default" and panel.est.step_time_s == step
    # expert parallelism, which has no field either, goes into the written plan (Mixtral 8x7B: 8 experts)
    (tmp_path / "moe.yaml").write_text("model: {preset: mixtral-8x7b}\nhardware: {server: dgx-h100, nodes: 4}\n"
                                       "parallelism: {auto: true, global_batch_size: 256}\n"
                                       "training: {precision: bf16, tokens: 1e11}\n")
    panel = tab_training.TrainingPanel(AppState.from_path(tmp_path / "moe.yaml"))
    searched, step = panel.est.plan, panel.est.step_time_s
    panel.auto.value = False
    assert panel.est.plan.expert == searched.expert and panel.est.step_time_s == step


def test_fields_show_the_plan_and_kept_settings_stay_kept(tmp_path):
    # a loaded scenario's unset values show as the plan uses them (no interleaving, ZeRO 0 ...)
    panel = tab_training.TrainingPanel(AppState.from_path(LLAMA70))
    panel.state.load(load_scenario(SCENARIOS / "roce-24k-h100.yaml"))
    q = panel.est.plan
    assert (panel.vp.value, panel.zero.value, panel.pp.value) == (q.virtual_stages, q.zero_stage, q.pipeline)
    panel.tokens_b.value = 500
    assert panel.msg.value == ""
    # sequence parallelism off stays off through an unrelated edit
    (tmp_path / "sp.yaml").write_text("model: {preset: llama3-70b}\nhardware: {server: dgx-h100, nodes: 8}\n"
                                      "parallelism: {tensor: 8, pipeline: 2, sequence_parallel: false,"
                                      " recompute: full, global_batch_size: 64}\n"
                                      "training: {precision: bf16, tokens: 1e11}\n")
    panel = tab_training.TrainingPanel(AppState.from_path(tmp_path / "sp.yaml"))
    step = panel.est.step_time_s
    panel.tokens_b.value = 200
    assert panel.est.plan.sequence_parallel is False and panel.est.step_time_s == step
    # another model drops a stage layout made for the old one's 80 layers
    (tmp_path / "pl.yaml").write_text("model: {preset: llama3-70b}\nhardware: {server: dgx-h100, nodes: 8}\n"
                                      "parallelism: {tensor: 8, pipeline: 4, pipeline_layers: [1, 1, 40, 38],"
                                      " global_batch_size: 64}\ntraining: {precision: bf16, tokens: 1e11}\n")
    panel = tab_training.TrainingPanel(AppState.from_path(tmp_path / "pl.yaml"))
    panel.preset.value = "llama3-8b"
    assert panel.msg.value == "" and panel.est.stages["layers_per_stage"] == [8, 8, 8, 8]


def test_a_written_plan_keeps_its_estimate_when_no_alternative_plan_exists():
    # GPT-3 on 1,024 A100 at a global batch of 1,536 under llm-foundry: its search has TP 1, PP 1, CP 1 only,
    # and 1,536 sequences over 1,024 data-parallel ranks leave no micro-batch; the written plan is still estimated
    panel = tab_training.TrainingPanel(AppState.from_path(GPT3))
    panel.framework.value = "fsdp"
    assert panel.msg.value == "" and "TP8 PP8x2" in panel.summary.value
    assert "No alternative plans" in panel.plans.value
    assert [f.field for f in panel.est.findings if f.code == "training-framework-cannot-run"] == ["parallelism.pipeline"]
