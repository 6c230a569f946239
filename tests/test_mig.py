"""MIG partition profiles (NVIDIA Multi-Instance GPU User Guide, "Supported MIG Profiles") and serving on them."""

import math

import pytest

from gpucluster_lib import design
from gpucluster_lib.catalog import load_catalog
from gpucluster_lib.errors import ScenarioError
from gpucluster_lib.inference.mig import PROFILES, instance_accelerator, profile
from gpucluster_lib.scenario import from_dict


def test_profile_tables():
    # MIG User Guide, A100-SXM4-40GB table: name, fraction of SMs (of 7), fraction of memory (of 8), instances
    rows = [(p.name, p.compute_slices, p.memory_slices, p.instances_per_gpu) for p in PROFILES["a100-sxm4-40gb"]]
    assert rows == [("1g.5gb", 1, 1, 7), ("1g.10gb", 1, 2, 4), ("2g.10gb", 2, 2, 3), ("3g.20gb", 3, 4, 2),
                    ("4g.20gb", 4, 4, 1), ("7g.40gb", 7, 8, 1)]
    # "For A100-SXM4-80GB the names change with the memory: 1g.10gb, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb"
    assert [p.name for p in PROFILES["a100-sxm4-80gb"]] == ["1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb",
                                                             "7g.80gb"]
    assert [p.name for p in PROFILES["h100-sxm5-80gb"]] == [p.name for p in PROFILES["a100-sxm4-80gb"]]
    # H200 141GB (names as in AWS SageMaker's MIG profile list: 1g.18gb, 2g.35gb, 3g.71gb, 7g.141gb)
    assert [p.name for p in PROFILES["h200-sxm-141gb"]] == ["1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb",
                                                             "7g.141gb"]
    cat = load_catalog()
    assert all(cat.has("accelerators", a) for a in PROFILES)


def test_instance_is_a_scaled_accelerator():
    acc = load_catalog().accelerator("h100-sxm5-80gb")
    one = instance_accelerator(acc, profile("h100-sxm5-80gb", "1g.10gb"))
    assert one["bf16_tflops"] == pytest.approx(989.4 / 7)               # 1 of 7 compute slices
    assert one["memory_bandwidth_gb_per_s"] == pytest.approx(3350 / 8)  # 1 of 8 memory slices
    assert one["memory_gib"] == 10 and one["scaleup_bandwidth_gb_per_s"] == 0
    three = instance_accelerator(acc, profile("h100-sxm5-80gb", "3g.40gb"))
    assert three["fp8_tflops"] == pytest.approx(1978.9 * 3 / 7) and three["memory_bandwidth_gb_per_s"] == 3350 / 2


def test_bad_profiles_name_the_field():
    with pytest.raises(ScenarioError, match=r"inference\.mig_profile: '2g\.5gb' is not a MIG profile of h100-sxm5-80gb"):
        profile("h100-sxm5-80gb", "2g.5gb")
    with pytest.raises(ScenarioError, match=r"inference\.mig_profile: b200-sxm-180gb has no MIG profiles"):
        profile("b200-sxm-180gb", "1g.23gb")
    s = from_dict({"model": "llama2-7b", "hardware": {"server": "dgx-h100"},
                   "inference": {"mig_profile": "1g.10gb", "tensor_parallel": 2}})
    with pytest.raises(ScenarioError, match=r"inference\.tensor_parallel: a MIG instance serves a replica alone"):
        _ = design(s).serving


def small_model(profile_name, tokens_per_s=2000.0):
    return from_dict({"model": {"preset": "llama2-7b"}, "hardware": {"server": "dgx-h100", "nodes": 2},
                      "inference": {"mig_profile": profile_name, "tokens_per_s": tokens_per_s, "precision": "fp8"}})


def test_serving_packs_instances_on_whole_gpus():
    sv = design(small_model("1g.20gb")).serving
    p = profile("h100-sxm5-80gb", "1g.20gb")
    assert sv.mig["profile"] == "1g.20gb" and sv.tensor_parallel == 1 and sv.meets_slo
    assert sv.replicas == math.ceil(2000 / sv.tokens_per_s_per_replica)  # instances for the target
    assert sv.gpus == math.ceil(sv.replicas / p.instances_per_gpu)       # 4 instances a GPU
    assert sv.tokens_per_s_per_gpu == pytest.approx(sv.tokens_per_s_per_replica * 4)
    assert any(f.code == "inference-mig" for f in sv.findings)
    # an instance is slower than the whole GPU: its compute and bandwidth are a fraction of it
    whole = design(small_model(None)).serving
    assert sv.tokens_per_s_per_replica < whole.tokens_per_s_per_replica


def test_auto_picks_the_profile_needing_fewest_gpus():
    sv = design(small_model("auto")).serving
    opts = {o["profile"]: o for o in sv.mig["options"]}
    assert set(opts) == {p.name for p in PROFILES["h100-sxm5-80gb"]}
    best = min(o["gpus"] for o in opts.values() if o["gpus"])
    assert sv.gpus == best and opts[sv.mig["profile"]]["gpus"] == best
