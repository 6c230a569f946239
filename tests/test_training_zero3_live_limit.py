"""DeepSpeed ZeRO-3's live-parameter limit (``stage3_max_live_parameters``, the scenario's
``training.zero3_max_live_parameters``): one setting read by the timing and the memory.

Expected values are worked by hand from DeepSpeed v0.3.13's source (core.py references [12, 17, 18]):
``prefetch_next_sub_modules`` issues a prefetch only while ``total_available_parameter_numel`` (the
elements gathered, the module computing among them) is below ``max_available_parameters_in_numel``,
and ``get_params_to_prefetch`` takes whole weights until it holds ``stage3_prefetch_bucket_size``
elements; a module that was not prefetched is gathered in its own pre-hook, after
``_allgather_param``'s ``torch.cuda.synchronize()``, so after the compute of the module before it.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from gpucluster_lib.errors import ScenarioError
from gpucluster_lib.scenario import from_dict, loads
from gpucluster_lib.training import build_context, estimate, validation
from gpucluster_lib.training.core import (
    _backward_pass,
    _prefetch_pass,
    deepspeed_zero3_buffers,
    live_limit_to_prefetch,
    prefetched_modules,
)

#: GPT 530B (Narayanan 2021 Table 2: h 20480, 4h FFN, 105 layers): 12 h^2 + 13 h parameters a layer;
#: QKV 3/12, projection 1/12, FC1 and FC2 4/12 of it (core.module_shares).
LAYER_530B = 12 * 20480**2 + 13 * 20480  # 5,033,431,040


def scen(model="megatron-529.6b", nodes=140, training=None, **par):
    base = {"tensor": 1, "pipeline": 1, "micro_batch_size": 2, "global_batch_size": 2240, "recompute": "full",
            "zero_stage": 3, "sharded_collectives": "flat"}
    return from_dict({"model": {"preset": model}, "hardware": {"accelerator": "a100-sxm4-80gb", "nodes": nodes},
                      "network": {"inter_node_gbps_per_gpu": 200}, "parallelism": {**base, **par},
                      "training": {"framework": "deepspeed", **(training or {})}})


def ctx_of(**kw):
    return build_context(scen(**kw))[0]


# ----------------------------------------------------------------------------- the rule


def test_530b_modules_prefetched_at_the_default_limit_and_at_2e9():
    ctx = ctx_of()
    # QKV 1.26e9, projection 4.19e8, FC1 and FC2 1.68e9 elements; the default limit 1e9
    # (deepspeed/runtime/zero/constants.py v0.3.13) lets a prefetch be issued only at the projection.
    # Forward QKV, proj, FC1, FC2: FC1 is prefetched (behind the projection), the rest are not.
    assert prefetched_modules(ctx, LAYER_530B) == (False, False, True, False)
    # Backward FC2, FC1, proj, QKV: QKV is prefetched (behind the projection), the rest are not.
    assert prefetched_modules(ctx, LAYER_530B, backward=True) == (True, False, False, False)
    wide = ctx_of(training={"zero3_max_live_parameters": 2e9})
    assert wide.framework.zero3_max_live_params == 2e9
    # 1.68e9 < 2e9: a prefetch is issued at every module (the check precedes adding the prefetched weight)
    assert prefetched_modules(wide, LAYER_530B) == (True,) * 4
    assert prefetched_modules(wide, LAYER_530B, backward=True) == (True,) * 4


def test_a_prefetch_window_reaches_past_a_weight_at_the_limit():
    # lp = 1.2e8: QKV 3e7, proj 1e7, FC1 4e7, FC2 4e7 elements; live limit 3.5e7, prefetch bucket 5e7.
    # Forward: at QKV (3e7 < 3.5e7) the prefetch takes proj, then FC1 (1e7 held < 5e7), not FC2 (5e7 held);
    # at proj (1e7) it takes FC1 and FC2 (4e7 held < 5e7), not the next QKV (8e7); at FC1 and FC2 (4e7 >= 3.5e7)
    # none. So proj, FC1 and FC2 are prefetched and QKV is not, though FC1 is at the limit.
    ctx = ctx_of(model="gpt3-175b")
    fw = dataclasses.replace(ctx.framework, zero3_max_live_params=3.5e7, zero3_prefetch_params=5e7)
    ctx = dataclasses.replace(ctx, framework=fw)
    assert prefetched_modules(ctx, 1.2e8) == (False, True, True, True)
    # vectorised over plans: the same flags elementwise, and everything prefetched for a small layer
    flags = prefetched_modules(ctx, np.array([1.2e8, 1.2e6]))
    assert [list(f) for f in flags] == [[False, True], [True, True], [True, True], [True, True]]


def test_the_limit_to_suggest_is_the_next_one_digit_value_above_the_largest_weight():
    # FC1 = FC2 = 4/12 x 5,033,431,040 = 1,677,810,346.7 elements: 2e9 (1e9 and 1.68e9 would not do)
    assert live_limit_to_prefetch(ctx_of(), LAYER_530B) == 2e9
    # GPT-3 175B (h 12288): 4/12 x (12 x 12288^2 + 13 x 12288) = 604,033,024: 7e8
    assert live_limit_to_prefetch(ctx_of(model="gpt3-175b"), 12 * 12288**2 + 13 * 12288) == 7e8


# ----------------------------------------------------------------------------- timing


def test_a_gather_that_was_not_prefetched_runs_after_the_module_before_it():
    ctx = ctx_of(model="gpt3-175b")  # shares 3/12, 1/12, 4/12, 4/12 (QKV, proj, FC1, FC2)
    # forward, compute 12 and gathers 18 a layer: prefetched max(3, 1.5) + max(1, 6) + max(4, 6) + max(4, 4.5)
    # = 19.5; FC2 not prefetched: FC1's term is 4 + 6 = 10 instead of 6, the pass 23.5 (by hand)
    assert float(_prefetch_pass(ctx, np.array(12.0), np.array(18.0), (True, True, True, False))) == pytest.approx(23.5)
    assert float(_prefetch_pass(ctx, np.array(12.0), np.array(18.0), (True,) * 4)) == pytest.approx(19.5)
    # nothing prefetched: every gather after the compute before it, 12 + 18 = 30
    assert float(_prefetch_pass(ctx, np.array(12.0), np.array(18.0), (False,) * 4)) == pytest.approx(30.0)
    # backward, compute 24, gathers 6, reduce-scatters 18 (31.5 with every prefetch, test_training_pipeline);
    # the projection not prefetched behind FC1: FC1 computes beside QKV's reduce-scatter only, max(8, 4.5),
    # then the projection's gather 0.5 runs: 8.5 instead of 8, the pass 32 (by hand)
    assert float(_backward_pass(ctx, np.array(24.0), np.array(6.0), np.array(18.0),
                                (True, False, True, True))) == pytest.approx(32.0)
    # after a recomputed forward nothing is gathered: the flags change nothing (28, as before)
    assert float(_backward_pass(ctx, np.array(24.0), 0.0, np.array(18.0), (False,) * 4)) == pytest.approx(28.0)


def test_530b_step_follows_the_limit_and_175b_does_not():
    slow = estimate(scen())
    fast = estimate(scen(training={"zero3_max_live_parameters": 2e9}))
    inf = estimate(scen(training={"zero3_max_live_parameters": 1e15}))
    assert slow.step_time_s > fast.step_time_s * 1.1  # three of four gathers a pass exposed
    assert fast.step_time_s == pytest.approx(inf.step_time_s, rel=1e-12)  # 2e9 already lets every prefetch go
    # only the ZeRO-3 communication changes: compute and memory-bound work are the same
    assert slow.time_breakdown_s["compute"] == fast.time_breakdown_s["compute"]
    assert slow.time_breakdown_s["dp_comm"] > fast.time_breakdown_s["dp_comm"]
    # GPT-3 175B: every weight (6.04e8 at most) is below 1e9, so the default already prefetches everything
    base = dict(model="gpt3-175b", nodes=96, micro_batch_size=2, global_batch_size=1536)
    assert estimate(scen(**base)).step_time_s == pytest.approx(
        estimate(scen(**base, training={"zero3_max_live_parameters": 1e15})).step_time_s, rel=1e-12)


# ----------------------------------------------------------------------------- memory and timing agree


def test_memory_holds_what_timing_prefetches_at_the_530b_peak():
    # At the backward peak (FC1 making its weight gradient) FC1 is gathered and, when a prefetch is issued at
    # FC1, the projection behind it: timing's backward flag for the projection is the memory's prefetch.
    layer = np.array([float(LAYER_530B)])
    for live, proj_prefetched, gathered_twelfths, grads_twelfths in ((1e9, False, 4, 11), (2e9, True, 8, 8)):
        ctx = ctx_of(training={"zero3_max_live_parameters": live})
        assert prefetched_modules(ctx, LAYER_530B, backward=True)[1] is proj_prefetched
        gathered, grads = deepspeed_zero3_buffers(ctx, layer)
        # 1e9: FC1 alone (4/12) and the gradients of QKV above, FC2 and FC1 (11/12) = 15/12 of a layer;
        # 2e9: FC1 + proj (5/12) + 11/12 = 16/12 at FC1, tied with FC2 + FC1 gathered (8/12) + gradients of
        # proj and QKV above and FC2 (8/12) = 16/12 at FC2, which comes first and is kept
        assert gathered[0] == pytest.approx(gathered_twelfths / 12 * LAYER_530B, rel=1e-12)
        assert grads[0] == pytest.approx(grads_twelfths / 12 * LAYER_530B, rel=1e-12)
    # one module prefetched holds 1/12 of a layer more: 5,033,431,040 / 12 x 2 B = 0.839 GB (16-bit)
    assert (16 - 15) / 12 * LAYER_530B * 2 == pytest.approx(0.839e9, rel=1e-3)


def test_530b_fits_on_640_and_not_on_560_with_one_module_prefetched():
    # Narayanan 2021 Table 2: 530B ZeRO-3 at micro-batch 4 ran on 640 GPUs and "did not fit on 560". With the
    # live limit the published times point to (2e9, the CSV's inferred value), 1/12 of a layer more is gathered
    # at the peak: + 0.839 GB x 1.05 (fragmentation) = 0.881 GB on the defaults' 84.74 / 86.73 GB
    # (test_validation): 85.62 GB on 640 (fits in 85.90 = 80 GiB) and 87.61 GB on 560 (does not).
    rows = validation.load_runs().set_index("run_id")
    row = rows.loc["megatron-16"].to_dict() | {"run_id": "megatron-16"}
    assert float(row["zero3_max_live_params"]) == 2e9
    on640 = estimate(validation.scenario_for(row))
    on560 = estimate(validation.scenario_for(row | {"gpus": 560, "dp": 560, "gbs": 2240}))
    assert on640.fits and not on560.fits
    assert on640.memory_per_gpu_bytes["total"] == pytest.approx(85.62e9, rel=1e-3)
    assert on560.memory_per_gpu_bytes["total"] == pytest.approx(87.61e9, rel=1e-3)


# ----------------------------------------------------------------------------- the finding


def test_blocked_prefetch_finding_names_the_cost_the_setting_and_its_memory():
    slow = estimate(scen())  # 530B on 1,120 A100 at the default limit
    fast = estimate(scen(training={"zero3_max_live_parameters": 2e9}))
    (f,) = [f for f in slow.findings if f.code == "training-zero3-prefetch-blocked"]
    assert f.severity == "warning" and f.field == "training.zero3_max_live_parameters"
    assert "1 billion parameters or more are gathered" in f.message
    assert "largest weights hold 1.68 billion parameters per GPU" in f.message  # 4/12 x 5,033,431,040
    assert "attention QKV, attention output projection and second feed-forward weights" in f.message
    exposed = slow.step_time_s - fast.step_time_s
    assert f"{exposed:.3g} s per step ({exposed / slow.step_time_s:.0%} of the step)" in f.message
    assert "A limit of 2 billion parameters" in f.message and "2 billion" in f.fix
    # 1/12 of a layer in 16 bits with 5% fragmentation: 5,033,431,040 / 12 x 2 x 1.05 = 0.881 GB (by hand)
    assert "0.88 GB more memory per GPU" in f.message and "it still fits" in f.message
    assert fast.memory_per_gpu_bytes["total"] - slow.memory_per_gpu_bytes["total"] == pytest.approx(
        LAYER_530B / 12 * 2 * 1.05, rel=1e-9)
    # no finding once every prefetch is issued, nor for GPT-3 175B (every weight below 1e9)
    assert not [f for f in fast.findings if f.code == "training-zero3-prefetch-blocked"]
    small = estimate(scen(model="gpt3-175b", nodes=96, global_batch_size=1536))
    assert not [f for f in small.findings if f.code == "training-zero3-prefetch-blocked"]


def test_blocked_prefetch_finding_counts_one_parameter_in_the_singular():
    # a live limit of 1 element: no prefetch is issued at all, and the message reads "1 parameter"
    (f,) = [f for f in estimate(scen(training={"zero3_max_live_parameters": 1})).findings
            if f.code == "training-zero3-prefetch-blocked"]
    assert "issues no parameter prefetch while 1 parameter or more are gathered" in f.message
    assert "1 parameters" not in f.message


# ----------------------------------------------------------------------------- the scenario key


@pytest.mark.parametrize(("text", "match"), [
    # numbers as a person writes them: 0, not 0.0; 10^15, not 1,000,000,000,000,000.0
    ("training: {zero3_max_live_parameters: 0}", r"^training\.zero3_max_live_parameters: must be a positive number, "
                                                 r"got 0$"),
    ("training: {zero3_max_live_parameters: -1e9}", r"^training\.zero3_max_live_parameters: must be a positive number, "
                                                    r"got -1,000,000,000$"),
    ("training: {zero3_max_live_parameters: many}", r"^training\.zero3_max_live_parameters: must be a number, got 'many'"),
    ("training: {zero3_max_live_parameters: 1e16}", r"^training\.zero3_max_live_parameters: must be at most 10\^15 "
                                                    r"parameters, got 10\^16$"),
    ("training: {zero3_max_live_parameters: 2.5e15}", r"^training\.zero3_max_live_parameters: must be at most 10\^15 "
                                                      r"parameters, got 2\.5 x 10\^15$"),
])
def test_bad_live_limits_name_the_field_and_the_rule(text, match):
    with pytest.raises(ScenarioError, match=match):
        loads(text)


def test_live_limit_loads_and_defaults_to_the_framework():
    assert loads("training: {zero3_max_live_parameters: 2e9}").training.zero3_max_live_parameters == 2e9
    assert loads("name: x").training.zero3_max_live_parameters is None
    # DeepSpeed's default (deepspeed/runtime/zero/constants.py v0.3.13: stage3_max_live_parameters 1e9)
    assert ctx_of().framework.zero3_max_live_params == 1e9


def test_live_limit_the_plan_or_framework_does_not_read_is_a_warning():
    for training, par in (({"framework": "fsdp"}, {}), ({}, {"zero_stage": 1})):
        est = estimate(scen(training={"zero3_max_live_parameters": 2e9, **training}, **par))
        (f,) = [f for f in est.findings if f.code == "training-setting-ignored"]
        assert f.field == "training.zero3_max_live_parameters" and "no effect" in f.message
    est = estimate(scen(training={"zero3_max_live_parameters": 2e9}))
    assert not [f for f in est.findings if f.code == "training-setting-ignored"]
    assert est.assumptions["zero3_max_live_parameters"] == 2e9


# ----------------------------------------------------------------------------- the validation column


def test_the_csv_column_reaches_the_scenario():
    rows = validation.load_runs().set_index("run_id")
    assert "zero3_max_live_params" in rows.columns
    for rid in ("megatron-16", "megatron-17", "megatron-18"):  # 530B ZeRO-3: inferred, not stated
        row = rows.loc[rid].to_dict() | {"run_id": rid}
        assert validation.scenario_for(row).training.zero3_max_live_parameters == 2e9
        assert "inferred from the published step times, not stated" in row["notes"]
    for rid in ("megatron-13", "megatron-14", "megatron-15"):  # 175B ZeRO-3: empty, the framework's default
        row = rows.loc[rid].to_dict() | {"run_id": rid}
        assert row["zero3_max_live_params"] == ""
        assert validation.scenario_for(row).training.zero3_max_live_parameters is None
