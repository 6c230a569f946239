"""Data-parallel overlap with the interleaved schedule and FP8 parameter all-gathers (core.py [11, 19, 24]).

Expected values are worked by hand from the cited schedule; the source is on each line.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from gpucluster_lib.scenario import from_dict
from gpucluster_lib.training import build_context, estimate
from gpucluster_lib.training.core import dp_exposed


def _dp(t_grad, t_param, t_max, bucket, pp, vp):
    g, p = dp_exposed(*(np.array([x], dtype=float) for x in (t_grad, t_param, t_max, bucket, pp, vp)))
    return float(g[0]), float(p[0])


# ----------------------------------------------------------------------------- the schedule by hand


def test_interleaved_worked_case_by_hand():
    # p = 4, v = 3, t_max = 0.3 s: backward of one micro-batch w = 0.2 s, of one chunk w / v = 0.0667 s.
    # Megatron-Core launches chunk c's reduction after its last backward (grad_sync_func, schedules.py):
    # chunks 2, 1, 0 end 2 x 4, 1 x 4, 0 chunk-backwards before the last backward: -0.533, -0.267, 0 s.
    # Reductions of 1.2 / 3 = 0.4 s each, one after another: -0.533..-0.133, -0.133..0.267, 0.267..0.667.
    grad, param = _dp(1.2, 0.6, 0.3, 0.05, 4, 3)
    assert grad == pytest.approx(0.6667, abs=1e-4)  # = 1.2 - 2 x 4 x 0.2 / 3
    # all-gathers of 0.6 / 3 = 0.2 s, forward of one chunk 0.1 / 3 = 0.0333 s, p of them 0.1333 s:
    # chunk 0 bucketed behind its first forward: max(0.2 - 0.0333, min(0.2, 0.05 x 0.6)) = 0.1667 s;
    # chunk 1 (gathered second, from the start) ready at 0.4 s, wanted at 0.1667 + 0.1333 = 0.3 s;
    # chunk 2 launched at chunk 1's first forward (0.4 s), ready 0.6 s, wanted at 2 x 0.1333 = 0.2667 s.
    assert param == pytest.approx(0.3333, abs=1e-4)  # = 0.6 - 0.2667


def test_one_chunk_keeps_the_last_micro_batch_rule():
    # v = 1 (Megatron-Core DDP, core_r0.8.0): buckets behind the last backward, never less than one bucket
    grad, param = _dp(1.2, 0.6, 0.3, 0.05, 4, 1)
    assert grad == pytest.approx(1.0)  # max(1.2 - 0.2, 0.05 x 1.2)
    assert param == pytest.approx(0.5)  # max(0.6 - 0.1, 0.05 x 0.6)
    small = _dp(0.1, 0.05, 0.3, 0.05, 4, 1)
    assert small == pytest.approx((0.005, 0.0025))  # only the last bucket: 0.05 x 0.1, 0.05 x 0.05


def test_chunk_zero_reduction_is_never_hidden():
    # chunk 0's last backward is the last of the step: its reduction starts after it (grad_sync_func after
    # backward_step; the leftover chunks synchronised after the cool-down), so 0.1 / 4 = 0.025 s is exposed
    # however much backward precedes it; with one chunk only the last bucket, 0.05 x 0.1 = 0.005 s
    assert _dp(0.1, 0.0, 0.3, 0.05, 8, 4)[0] == pytest.approx(0.025)
    assert _dp(0.1, 0.0, 0.3, 0.05, 8, 1)[0] == pytest.approx(0.005)


def _simulated(t_grad, t_param, t_max, bucket, p, v):
    """The schedule event by event (independent of the closed forms): reductions launched after each chunk's
    last backward on one serial stream; gathers of chunks 0 and 1 at the start, chunk c >= 2 at chunk c-1's
    first forward, each chunk's first forward p chunk-forwards after the one before it."""
    s_b, s_f = 2.0 * t_max / 3.0 / v, t_max / 3.0 / v
    c, a = t_grad / v, t_param / v
    free = -np.inf
    for i in reversed(range(v)):  # i chunks still to finish their backward after this one
        free = max(free, -i * p * s_b) + c
    grad = free
    e0 = max(a - s_f, min(a, bucket * t_param))
    start, free = [e0], 2.0 * a  # chunk 0's first forward (delayed by e0), the stream after chunks 0, 1
    for k in range(1, v):
        if k >= 2:  # launched when chunk k-1's first forward starts, after what is on the stream
            free = max(free, start[k - 1]) + a
        start.append(max(start[k - 1] + p * s_f, free))
    return grad, start[-1] - (v - 1) * p * s_f


@pytest.mark.parametrize("p, v", list(itertools.product((2, 4, 8), (2, 3, 6, 12))))
def test_closed_forms_follow_the_schedule_step_by_step(p, v):
    for t_grad, t_param, t_max in ((1.2, 0.6, 0.3), (0.05, 0.02, 0.3), (3.0, 2.0, 0.05), (0.4, 0.2, 0.2)):
        assert _dp(t_grad, t_param, t_max, 0.01, p, v) == pytest.approx(
            _simulated(t_grad, t_param, t_max, 0.01, p, v), abs=1e-12)


# ----------------------------------------------------------------------------- through the estimate


def _gpt3(**par):
    base = {"tensor": 8, "pipeline": 8, "micro_batch_size": 1, "global_batch_size": 1536, "recompute": "full",
            "virtual_stages": 3}
    return from_dict({"model": {"preset": "gpt3-175b"}, "hardware": {"accelerator": "a100-sxm4-80gb", "nodes": 128},
                      "network": {"inter_node_gbps_per_gpu": 200}, "parallelism": {**base, **par},
                      "training": {"tokens": 3e11}})


def test_interleaved_plan_exposes_the_chunked_reduction():
    # GPT-3 175B, TP8 PP8 x 3 chunks, DP16, plain all-reduce (no distributed optimizer: no gather)
    off = estimate(_gpt3(overlap_grad_reduce=False, overlap_param_gather=False))
    on = estimate(_gpt3(overlap_grad_reduce=True, overlap_param_gather=True))
    t, t_max = off.time_breakdown_s["dp_comm"], max(on.stages["stage_time_per_micro_batch_s"])
    # max(t / v, t - (v - 1) p w / v), w = 2 t_max / 3 (core.dp_exposed)
    assert on.time_breakdown_s["dp_comm"] == pytest.approx(max(t / 3, t - 2 * 8 * (2 * t_max / 3) / 3), rel=1e-9)
    one = estimate(_gpt3(virtual_stages=1, overlap_grad_reduce=True, overlap_param_gather=True))
    assert on.time_breakdown_s["dp_comm"] < one.time_breakdown_s["dp_comm"]


def _llama7b(training, **par):
    base = {"tensor": 1, "pipeline": 1, "micro_batch_size": 1, "global_batch_size": 64, "recompute": "none",
            "distributed_optimizer": True, "overlap_grad_reduce": False, "overlap_param_gather": False}
    return from_dict({"model": {"preset": "llama2-7b"}, "hardware": {"accelerator": "h100-sxm5-80gb", "nodes": 2},
                      "network": {"inter_node_gbps_per_gpu": 400}, "parallelism": {**base, **par},
                      "training": {"tokens": 3e11, **training}})


def test_fp8_params_gather_the_gemm_weights_in_one_byte_by_hand():
    # Megatron-Core fp8_param_gather: "perform the param all-gather in fp8" (DistributedDataParallelConfig,
    # core_r0.10.0); the Float8Tensor buffer is uint8 (distributed_data_parallel.py, core_r0.9.0)
    fp8 = estimate(_llama7b({"precision": "fp8", "framework": "megatron", "fp8_params": True}))
    b16 = estimate(_llama7b({"precision": "fp8", "framework": "megatron", "fp8_params": False}))
    # Llama 2 7B (data/models.yaml): 32 layers, h 4096, MHA, SwiGLU FFN 11008: GEMM weights per layer
    # 4 x 4096^2 + 3 x 4096 x 11008 = 67,108,864 + 135,266,304 = 202,375,168; x 32 = 6,476,005,376.
    # One byte less each over the ring of 16 ranks at 320 GB/s (test_training_pipeline's hierarchical
    # ring: min(NVLink 450 x 0.80, 8 NICs x 50 GB/s x 0.80)): 15/16 x 6,476,005,376 / 320e9 = 18.9727 ms
    saved = b16.time_breakdown_s["dp_comm"] - fp8.time_breakdown_s["dp_comm"]
    assert saved == pytest.approx(15 / 16 * 6_476_005_376 / 320e9, rel=1e-9)
    # NeMo's default (fp8_params true as its FP8 recipes) gathers FP8 weights too
    nemo = estimate(_llama7b({"precision": "fp8", "framework": "nemo"}))
    assert build_context(_llama7b({"precision": "fp8", "framework": "nemo"}))[0].fp8_params
    assert nemo.time_breakdown_s["dp_comm"] < b16.time_breakdown_s["dp_comm"]


def test_fp8_params_need_fp8_training():
    # bf16 training has no FP8 weights: the setting is ignored (warning training-setting-ignored)
    ctx = build_context(_llama7b({"precision": "bf16", "framework": "nemo", "fp8_params": True}))[0]
    assert not ctx.fp8_params
    on = estimate(_llama7b({"precision": "bf16", "framework": "megatron", "fp8_params": True}))
    off = estimate(_llama7b({"precision": "bf16", "framework": "megatron"}))
    assert on.time_breakdown_s["dp_comm"] == pytest.approx(off.time_breakdown_s["dp_comm"], rel=1e-12)


def test_fp8_params_shrink_zero3_gathers():
    # Megatron-FSDP takes the same fp8_param_gather flag (megatron/core/distributed/fsdp/mcore_fsdp_adapter.py)
    fsdp = {"zero_stage": 3, "distributed_optimizer": False}
    # (Megatron-LM: the fitted share below; NeMo schedules its Megatron-FSDP gathers one layer ahead,
    # tests/test_training_megatron_fsdp.py)
    on = estimate(_llama7b({"precision": "fp8", "framework": "megatron", "fp8_params": True}, **fsdp))
    off = estimate(_llama7b({"precision": "fp8", "framework": "megatron", "fp8_params": False}, **fsdp))
    # ZeRO-3 gathers the parameters twice per micro-batch (m = 64 / (DP16 x mb1) = 4): each pass moves the
    # 6,476,005,376 GEMM weight elements in one byte less, 15/16 x 6,476,005,376 / 320e9 = 18.9727 ms over the
    # ring (the DP test above), 4 x 2 x 18.9727 = 151.78 ms of gathers less. Megatron-LM hides the fitted share
    # zero3_overlap 0.6 of the compute (data/efficiency.yaml): the gathers (0.48 s) are shorter than 0.6 of the
    # 0.89 s of compute, so 1 - 0.6 = 40% of them is exposed: 0.4 x 151.78 = 60.713 ms
    assert off.time_breakdown_s["dp_comm"] - on.time_breakdown_s["dp_comm"] == pytest.approx(
        0.4 * 4 * 2 * 15 / 16 * 6_476_005_376 / 320e9, rel=1e-9)
    # memory: the gathered parameters of two layers follow the one-byte weights too (as the timing moves them):
    # 2 layers x 202,375,168 GEMM weight elements x 1 byte less = 404,750,336 B; of 2 x 2 x 202,383,360 (the
    # layer with its two RMSNorms of 4,096) = 809,533,440 B
    assert off.memory_per_gpu_bytes["gather_buffers"] == pytest.approx(809_533_440, rel=1e-12)
    assert off.memory_per_gpu_bytes["gather_buffers"] - on.memory_per_gpu_bytes["gather_buffers"] == pytest.approx(
        404_750_336, rel=1e-12)


def test_fp8_params_ignored_on_frameworks_without_an_fp8_weight_path():
    # DeepSpeed (no FP8 path read; ZeRO gathers 16-bit parameters) and Composer's FSDP (the units gather in the
    # mixed-precision param_dtype, 16 bits): data/training_frameworks.yaml has no fp8_param_gather for them, so
    # FP8 weights change nothing and the setting gets the ignored-setting warning (the review found DeepSpeed
    # ZeRO-3 16% faster with it)
    z3 = {"zero_stage": 3, "distributed_optimizer": False}
    for fw in ("deepspeed", "fsdp"):
        on = estimate(_llama7b({"precision": "fp8", "framework": fw, "fp8_params": True}, **z3))
        off = estimate(_llama7b({"precision": "fp8", "framework": fw, "fp8_params": False}, **z3))
        assert not build_context(_llama7b({"precision": "fp8", "framework": fw, "fp8_params": True}, **z3))[0].fp8_params
        assert on.step_time_s == off.step_time_s and on.memory_per_gpu_bytes == off.memory_per_gpu_bytes
        (f,) = [f for f in on.findings if f.field == "training.fp8_params"]
        assert f.code == "training-setting-ignored" and f.severity == "warning"
        assert f.message.endswith("has no FP8-weight path: it keeps 16-bit weights and gathers them in 16 bits, so "
                                  "the setting has no effect")
        assert "Megatron-LM / Megatron-Core, NVIDIA NeMo (Megatron-Core), TorchTitan (FSDP2)" in f.fix
        assert not [f for f in off.findings if f.field == "training.fp8_params"]  # off is what they do anyway
    # TorchTitan gathers FP8 weights with torchao's enable_fsdp_float8_all_gather (torchao/float8/fsdp_utils.py
    # fsdp_pre_all_gather, v0.11.0): read, no warning
    on = estimate(_llama7b({"precision": "fp8", "framework": "torchtitan", "fp8_params": True}, **z3))
    off = estimate(_llama7b({"precision": "fp8", "framework": "torchtitan", "fp8_params": False}, **z3))
    assert on.time_breakdown_s["dp_comm"] < off.time_breakdown_s["dp_comm"]
    assert not [f for f in on.findings if f.field == "training.fp8_params"]
