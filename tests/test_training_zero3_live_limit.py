"""DeepSpeed ZeRO-3's live-parameter limit (``stage3_max_live_parameters``) as a scenario key,
``training.zero3_max_live_parameters``: its validation, its default (DeepSpeed v0.3.13's
deepspeed/runtime/zero/constants.py: 1e9) and the warning when nothing reads it."""

from __future__ import annotations

import pytest

from gpucluster_lib.errors import ScenarioError
from gpucluster_lib.scenario import from_dict, loads
from gpucluster_lib.training import build_context, estimate


def scen(model="megatron-529.6b", nodes=140, training=None, **par):
    base = {"tensor": 1, "pipeline": 1, "micro_batch_size": 2, "global_batch_size": 2240, "recompute": "full",
            "zero_stage": 3, "sharded_collectives": "flat"}
    return from_dict({"model": {"preset": model}, "hardware": {"accelerator": "a100-sxm4-80gb", "nodes": nodes},
                      "network": {"inter_node_gbps_per_gpu": 200}, "parallelism": {**base, **par},
                      "training": {"framework": "deepspeed", **(training or {})}})


def ctx_of(**kw):
    return build_context(scen(**kw))[0]


# ----------------------------------------------------------------------------- the scenario key


@pytest.mark.parametrize(("text", "match"), [
    ("training: {zero3_max_live_parameters: 0}", r"^training\.zero3_max_live_parameters: must be a positive number"),
    ("training: {zero3_max_live_parameters: -1e9}", r"^training\.zero3_max_live_parameters: must be a positive number"),
    ("training: {zero3_max_live_parameters: many}", r"^training\.zero3_max_live_parameters: must be a number, got 'many'"),
    ("training: {zero3_max_live_parameters: 1e16}", r"^training\.zero3_max_live_parameters: must be at most "),
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
