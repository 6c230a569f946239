"""Megatron-Core's deferral of the output layer's weight-gradient GEMMs to the pipeline flush.

Source (core.py [27]): NVIDIA/Megatron-LM core_v0.8.0 (the same code paths at 3cdfd613, the commit NeMo v2.3.0 pins,
and at core_v0.18.0): megatron/core/model_parallel_config.py ``defer_embedding_wgrad_compute`` ("defers the embedding
WGRAD GEMMs while pipeline flush is taking place enabling us to hide pipeline flush latency") and
``wgrad_deferral_limit`` ("Defaults to 0, which means all micro-batches are deferred"); megatron/core/tensor_parallel/
layers.py: the first ``limit`` micro-batches' output gradients go to ``grad_output_buffer`` ("if wgrad_deferral_limit
== 0 or len(grad_output_buffer) < wgrad_deferral_limit") and their weight-gradient GEMM is skipped; megatron/core/
pipeline_parallel/schedules.py: ``finish_embedding_wgrad_compute`` runs the buffered GEMMs on the last pipeline rank
after its cool-down loop, before ``finalize_model_grads_func``.
"""

from __future__ import annotations

import dataclasses
import importlib
from types import SimpleNamespace

import numpy as np
import pytest

from gpucluster_lib.scenario import from_dict
from gpucluster_lib.training import build_context, validation
from gpucluster_lib.training.core import deferred_wgrad_bytes, output_wgrad_deferral
from gpucluster_lib.training.estimate import estimate
from gpucluster_lib.training.framework import framework

est = importlib.import_module("gpucluster_lib.training.estimate")

ON22 = SimpleNamespace(defer_output_wgrad=True, wgrad_deferral_limit=22)
ON_ALL = SimpleNamespace(defer_output_wgrad=True, wgrad_deferral_limit=0)


def test_worked_case_by_hand():
    # p = 8, v = 5, m = 128, k = 22 (NeMo's limit), phi = 1; the first stage and the six middle stages 0.1480 s a
    # micro-batch, the last (with the output layer) 0.1717 s, its output weight-gradient GEMM g = 0.0080 s:
    # t_sum = 7 x 0.1480 + 0.1717 = 1.2077 s.
    # A deferred micro-batch takes max(0.1717 - 0.0080, 0.1480) = 0.1637 s: saved = 22 / 128 x 0.0080 = 0.001375 s
    # per micro-batch. The last stage's idle time in the flush: 2/3 x (1.2077 - 0.1717) / 5 = 0.138133 s, against
    # the 22 deferred GEMMs' 0.176 s: drain = 0.176 - 0.138133 = 0.037867 s.
    saved, drain = output_wgrad_deferral(ON22, 0.0080, 128.0, 0.1480, 0.1480, 0.1717, 1.2077, 1.0, 8.0, 5.0)
    assert float(saved) == pytest.approx(0.001375, rel=1e-9)
    assert float(drain) == pytest.approx(0.176 - 2.0 / 3.0 * 1.036 / 5.0, rel=1e-9)
    assert float(drain) == pytest.approx(0.037867, abs=1e-6)
    # the step (m x saved less, drain more) shortens by the idle time it filled: 0.176 - 0.037867 = 0.138133 s
    assert 128 * float(saved) - float(drain) == pytest.approx(0.138133, abs=1e-6)


def test_limit_zero_defers_every_micro_batch():
    # wgrad_deferral_limit 0 = all 128: saved = 0.0080 s a micro-batch, drain = 128 x 0.0080 - 0.138133 = 0.885867 s;
    # the step still shortens only by the idle time, 1.024 - 0.885867 = 0.138133 s
    saved, drain = output_wgrad_deferral(ON_ALL, 0.0080, 128.0, 0.1480, 0.1480, 0.1717, 1.2077, 1.0, 8.0, 5.0)
    assert float(saved) == pytest.approx(0.0080, rel=1e-9)
    assert float(drain) == pytest.approx(0.885867, abs=1e-6)


def test_a_deferred_micro_batch_is_set_by_the_slowest_other_stage():
    # g = 0.0300 s: the last stage without it (0.1417 s) is faster than the others (0.1480 s), so a deferred
    # micro-batch takes 0.1480 s: saved = 22 / 128 x (0.1717 - 0.1480) = 0.00407344 s; drain = 22 x 0.03 - 0.138133
    saved, drain = output_wgrad_deferral(ON22, 0.0300, 128.0, 0.1480, 0.1480, 0.1717, 1.2077, 1.0, 8.0, 5.0)
    assert float(saved) == pytest.approx(22 / 128 * 0.0237, rel=1e-9)
    assert float(drain) == pytest.approx(0.66 - 0.138133, abs=1e-6)


def test_nothing_saved_when_the_last_stage_is_not_the_bottleneck():
    # the last stage at 0.1400 s under the others' 0.1480 s: no saving; idle 2/3 x (7 x 0.148) / 5 = 0.138133 s
    # covers 22 x 0.004 = 0.088 s, so nothing is exposed either
    saved, drain = output_wgrad_deferral(ON22, 0.0040, 128.0, 0.1480, 0.1480, 0.1400, 7 * 0.1480 + 0.1400,
                                         1.0, 8.0, 5.0)
    assert float(saved) == 0.0 and float(drain) == 0.0


def test_no_deferral_without_the_flag_or_without_pipeline_parallelism():
    off = SimpleNamespace(defer_output_wgrad=False, wgrad_deferral_limit=22)
    assert output_wgrad_deferral(off, 0.008, 128.0, 0.148, 0.148, 0.1717, 1.2077, 1.0, 8.0, 5.0) == (0.0, 0.0)
    # Megatron-Core drains only in the pipelined schedules (forward_backward_no_pipelining has no drain)
    saved, drain = output_wgrad_deferral(ON22, np.array([0.008]), np.array([128.0]), np.array([1.0]),
                                         np.array([0.0]), np.array([1.0]), np.array([1.0]), 1.0, np.array([1.0]), 1.0)
    assert saved[0] == 0.0 and drain[0] == 0.0


def _scenario(defer=None, limit=None, framework_id="nemo", pipeline=8):
    training = {"precision": "bf16", "framework": framework_id}
    if defer is not None:
        training["defer_output_wgrad"] = defer
    if limit is not None:
        training["wgrad_deferral_limit"] = limit
    return from_dict({"model": {"preset": "llama3-70b"}, "hardware": {"server": "dgx-h100", "nodes": 8},
                      "parallelism": {"tensor": 4, "pipeline": pipeline, "virtual_stages": 5 if pipeline > 1 else 1,
                                      "micro_batch_size": 1, "global_batch_size": 256, "sequence_parallel": True},
                      "training": training})


def test_buffers_held_to_the_flush_by_hand():
    # Llama 3 70B (h 8,192, V 128,256), TP4 with sequence parallelism, micro-batch 1 of 8,192 tokens, k = 22:
    # input shards 8,192 x 8,192 / 4 and output gradients 8,192 x 128,256 / 4, two bytes each, 22 times:
    # 22 x 8,192 x (2,048 + 32,064) x 2 = 12,295,602,176 B (11.45 GiB)
    ctx = build_context(_scenario(True, 22))[0]
    assert float(deferred_wgrad_bytes(ctx, 4.0, 8.0, 1.0, 8192.0, 128.0, True)) == 12_295_602_176
    # without sequence parallelism the input is held whole: 22 x 8,192 x (8,192 + 32,064) x 2 = 14,510,194,688 B
    assert float(deferred_wgrad_bytes(ctx, 4.0, 8.0, 1.0, 8192.0, 128.0, False)) == 14_510_194_688
    assert float(deferred_wgrad_bytes(ctx, 4.0, 1.0, 1.0, 8192.0, 128.0, True)) == 0.0  # no pipeline: nothing held


def test_the_frameworks_default_is_off_and_the_scenario_turns_it_on():
    # Megatron-Core's default (defer_embedding_wgrad_compute False), Megatron-Bridge's CommOverlapConfig default
    # (src/megatron/bridge/training/comm_overlap.py v0.4.0: defer_embedding_wgrad_compute = False) and NeMo 1.x's
    # (cfg.get('defer_embedding_wgrad_compute', False)); only Megatron-Core's frameworks have the path
    for fid in ("megatron", "nemo"):
        assert framework(fid).output_wgrad_deferral and not framework(fid).defer_output_wgrad
    for fid in ("deepspeed", "fsdp", "torchtitan"):
        assert not framework(fid).output_wgrad_deferral
    assert not build_context(_scenario())[0].defer_output_wgrad
    ctx = build_context(_scenario(True, 22))[0]
    assert ctx.defer_output_wgrad and ctx.wgrad_deferral_limit == 22
    # the step: the last stage (10 layers + the output layer) sets the pace; 22 of the m = 256 / 2 = 128
    # micro-batches skip the output layer's weight-gradient GEMM, which then runs in the flush
    on, off = estimate(_scenario(True, 22)), estimate(_scenario(False))
    assert on.step_time_s < off.step_time_s
    assert off.step_time_s - on.step_time_s < 0.01 * off.step_time_s  # the GEMMs are ~1% of the step
    # the last stage holds the 22 buffers to the flush (12,295,602,176 B, above) with the fragmentation on top
    last_on, last_off = on.stages["stage_memory_bytes"][-1], off.stages["stage_memory_bytes"][-1]
    assert last_on - last_off == pytest.approx(12_295_602_176 * (1.0 + ctx.eff.fragmentation), rel=1e-9)
    assert on.stages["stage_memory_bytes"][:-1] == off.stages["stage_memory_bytes"][:-1]


def test_idle_counts_the_other_stages_compute_and_the_blocking_cool_down_transfers_by_hand():
    # the worked case above with one transfer x = 1 ms, hidden in the steady state (overlap_p2p_comm): the stages'
    # compute 0.1480 s (first, middle) and c_last = 0.1717 s, t_sum = 1.2077 + 8 x 2 x 5 x 0.001 = 1.2877 s.
    # The last stage idles for the other stages' last chunk backwards, 2/3 x 7 x 0.1480 / 5 = 0.138133 s, and their
    # 7 blocking cool-down transfers (send_backward_recv_backward, schedules.py core_r0.8.0 l.1095-1120), 0.007 s:
    # i = 0.145133 s; drain = 22 x 0.0080 - 0.145133 = 0.030867 s
    saved, drain = output_wgrad_deferral(ON22, 0.0080, 128.0, 0.1480, 0.1480, 0.1717, 1.2877, 1.0, 8.0, 5.0,
                                         c_last=0.1717, x=0.001)
    assert float(saved) == pytest.approx(0.001375, rel=1e-9)
    assert float(drain) == pytest.approx(0.176 - (2 / 3 * 7 * 0.1480 / 5 + 7 * 0.001), rel=1e-9)
    assert float(drain) == pytest.approx(0.030867, abs=1e-6)


def test_a_limit_without_the_deferral_is_reported_ignored():
    for sc in (_scenario(None, 22), _scenario(False, 22)):
        found = [f for f in estimate(sc).findings if f.field == "training.wgrad_deferral_limit"]
        assert len(found) == 1 and found[0].code == "training-setting-ignored" and found[0].severity == "warning"
        assert "_" not in found[0].message and "training." not in found[0].message  # human words, no keys
    assert not [f for f in estimate(_scenario(True, 22)).findings if f.field == "training.wgrad_deferral_limit"]


def test_the_setting_is_reported_ignored_where_it_has_no_effect():
    ds = estimate(_scenario(True, 22, framework_id="deepspeed"))
    assert [f for f in ds.findings if f.field == "training.defer_output_wgrad"]
    single = estimate(_scenario(True, 22, pipeline=1))
    assert [f for f in single.findings if f.field == "training.defer_output_wgrad"]
    assert not [f for f in estimate(_scenario(True, 22)).findings if f.field == "training.defer_output_wgrad"]


@pytest.mark.parametrize("run_id, defer, limit", [
    # dgxc-benchmarking v24.11.1 (35a9aecc8d5b): llama3.1/llama3.1_70b.yaml l.118-119, llama3.1_405b.yaml l.124-125,
    # nemotron/nemotron4-340b-synth.yaml l.214-215
    ("dgxc-llama31-70b-bf16-64", True, 22), ("dgxc-llama31-405b-fp8-2304", True, 50),
    ("dgxc-nemotron4-340b-bf16-128", True, 22),
    # the GPT-3 175B hydra yaml does not name it: NeMo 1.x's default (off)
    ("dgxc-gpt3-175b-bf16-128", None, None),
    # NeMo v2.3.0 recipes, pretrain_performance_optimizations: gpt3_175b.py l.232-233 (50), llama3_70b.py l.234-235
    # (22), llama31_405b.py l.241-242 (50)
    ("nemo2504-gb200-gpt3-175b", True, 50), ("nemo2502-b200-llama3-70b", True, 22),
    ("nemo2504-gb200-llama31-405b", True, 50),
    # Megatron-FSDP: NeMo v2.3.0 scripts/performance/utils.py turns it off
    ("nemo2504-gb200-llama3-70b-fsdp", False, None),
    # Megatron-Bridge v0.4.0 / v0.5.0 llama3 pretrain recipes and perf configs do not name it: the default (off)
    ("mb2604-h100-llama3-70b-fp8", None, None), ("mb2606-gb300-llama31-405b-fp8", None, None),
])
def test_validation_rows_carry_the_runs_setting(run_id, defer, limit):
    runs = validation.load_runs().set_index("run_id")
    row = {"run_id": run_id, **runs.loc[run_id].to_dict()}
    tr = validation.scenario_for(row).training
    assert (tr.defer_output_wgrad, tr.wgrad_deferral_limit) == (defer, limit)


@pytest.mark.parametrize("limit", [22, 0])
def test_search_equals_exhaustive_with_deferral(limit):
    # the plan search's memory fit and step bound read the deferral (and NeMo's p2p overlap with its warm-up and
    # cool-down transfers) as the full evaluation does
    from gpucluster_lib.training import search
    from gpucluster_lib.training.plans import plan_space
    tests_plan_search = importlib.import_module("tests.test_plan_search")
    s = from_dict({"model": {"preset": "llama3-70b"}, "hardware": {"server": "dgx-h100", "nodes": 8},
                   "parallelism": {"auto": True, "global_batch_size": 256},
                   "training": {"tokens": 1e11, "framework": "nemo", "defer_output_wgrad": True,
                                "wgrad_deferral_limit": limit}})
    ctx = build_context(s)[0]
    space = plan_space(s.parallelism, ctx.arch, ctx.gpus, min(ctx.nvlink_domain, ctx.gpus))
    # the bounded search did not fall back to every plan: no evaluated plan fell below its bound
    assert search.candidates(ctx, space, 100) is not None
    fast, full, evaluated = tests_plan_search.both(s, limit=100)
    tests_plan_search.assert_same(fast, full)
    ctx = build_context(s)[0]
    assert dataclasses.replace(ctx, defer_output_wgrad=False) != ctx


def test_a_row_with_a_limit_that_is_not_a_count_is_refused():
    from gpucluster_lib.errors import GpuClusterError
    runs = validation.load_runs().set_index("run_id")
    row = {"run_id": "dgxc-llama31-70b-bf16-64", **runs.loc["dgxc-llama31-70b-bf16-64"].to_dict()}
    with pytest.raises(GpuClusterError, match="wgrad_deferral_limit"):
        validation.scenario_for(row | {"wgrad_deferral_limit": "22.5"})
