"""The interleaved schedule's point-to-point overlap (``parallelism.overlap_p2p_comm``) is read only on frameworks
whose pipeline schedule has it (Megatron-Core's forward_backward_pipelining_with_interleaving, schedules.py
core_r0.8.0; Megatron-LM since 2023-05-31, commit f9283c5a8a; NeMo through Megatron-Core) and only with an
interleaved plan (Megatron-Core refuses it in the non-interleaved schedule, schedules.py core_r0.8.0 l.1286-1289);
elsewhere it is ignored with a warning."""

from __future__ import annotations

import pytest

from gpucluster_lib.scenario import from_dict
from gpucluster_lib.training.estimate import estimate
from gpucluster_lib.training.framework import framework

FIELD = "parallelism.overlap_p2p_comm"


def _scenario(framework_id="megatron", overlap=None, pipeline=8, vp=5):
    par = {"tensor": 4, "pipeline": pipeline, "virtual_stages": vp, "micro_batch_size": 1,
           "global_batch_size": 256, "sequence_parallel": True}
    if overlap is not None:
        par["overlap_p2p_comm"] = overlap
    return from_dict({"model": {"preset": "llama3-70b"}, "hardware": {"server": "dgx-h100", "nodes": 8},
                      "parallelism": par, "training": {"precision": "bf16", "framework": framework_id}})


def _ignored(sc):
    return [f for f in estimate(sc).findings if f.field == FIELD]


def test_the_frameworks_say_whether_they_have_the_option():
    # Megatron-LM / NeMo: Megatron-Core's schedule option; DeepSpeed's pipeline engine: a non-interleaved 1F1B
    # TrainSchedule with blocking p2p.send / p2p.recv (deepspeed/runtime/pipe/schedule.py, engine.py, 38327e07f6);
    # FSDP / TorchTitan: not modelled
    assert framework("megatron").p2p_overlap_path and framework("nemo").p2p_overlap_path
    for fid in ("deepspeed", "fsdp", "torchtitan"):
        assert not framework(fid).p2p_overlap_path


@pytest.mark.parametrize("fid", ["deepspeed", "fsdp", "torchtitan"])
def test_frameworks_without_the_option_ignore_it_with_a_warning(fid):
    on, off = estimate(_scenario(fid, True)), estimate(_scenario(fid, False))
    assert on.step_time_s == off.step_time_s  # not applied: every transfer stays exposed
    assert on.to_dict()["time_breakdown_s"]["pp_comm"] > 0.0
    found = [f for f in on.findings if f.field == FIELD]
    assert len(found) == 1 and found[0].code == "training-setting-ignored" and found[0].severity == "warning"
    msg = found[0].message
    assert framework(fid).name in msg and "_" not in msg and "parallelism." not in msg  # human words, no keys
    assert not _ignored(_scenario(fid, False))


def test_megatron_applies_it_with_virtual_stages_and_warns_without():
    on, off = estimate(_scenario("megatron", True)), estimate(_scenario("megatron", False))
    assert on.step_time_s < off.step_time_s and not _ignored(_scenario("megatron", True))
    for pipeline, vp in ((8, 1), (1, 1)):
        found = _ignored(_scenario("megatron", True, pipeline=pipeline, vp=vp))
        assert len(found) == 1 and found[0].code == "training-setting-ignored"
        assert "interleaved" in found[0].message and "_" not in found[0].message
    assert not _ignored(_scenario("megatron", False, vp=1))
