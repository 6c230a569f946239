"""Central storage sizing (gpucluster_lib.facility.storage): one design for budget, reliability and cost.

Hand-worked values; appliance figures from data/storage.csv (ddn-ai400x2: 65 GB/s write,
368.6 TB, 2U, no power -> the 2.5 kW ESTIMATE of power_assumptions; generic-nfs-2u-nvme:
10 GB/s write, 184.3 TB, 2U).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpucluster_lib.catalog import load_catalog
from gpucluster_lib.economics import cost as cost
from gpucluster_lib.errors import ScenarioError
from gpucluster_lib.facility.site import budget, growth_table
from gpucluster_lib.facility.storage import (
    LOCAL_NVME_WRITE_GB_PER_S,
    appliances_needed,
    scenario_checkpoint_bytes,
    size_storage,
)
from gpucluster_lib.reliability import core as reliability
from gpucluster_lib.scenario import load_scenario

ROOT = Path(__file__).resolve().parent.parent
GPT3 = ROOT / "gpucluster_lib" / "data" / "scenarios" / "gpt3-175b-1024-a100.yaml"
LLAMA = ROOT / "gpucluster_lib" / "data" / "scenarios" / "llama3-70b-512-h100.yaml"
REF = ROOT / "gpucluster_lib" / "data" / "scenarios" / "reference-8x-a100.yaml"
GPT3_CKPT = 2.444621856768e12  # 174.6e9 params (gpt3-175b preset) x 14 B (ZeRO Sec. 3.1 less gradients)


@pytest.fixture(scope="module")
def cat():
    return load_catalog()


# --------------------------------------------------------------------------- pure function


def test_appliances_needed_by_hand():
    assert appliances_needed(GPT3_CKPT, 60, 65, 368.6) == (1, 1)   # 2.4446e12 / (60 x 65e9) = 0.63 -> 1; 3 x 2.44 TB / 368.6 -> 1
    assert appliances_needed(GPT3_CKPT, 10, 65, 368.6) == (4, 1)   # 2.4446e12 / (10 x 65e9) = 3.76 -> 4
    assert appliances_needed(GPT3_CKPT, 60, 65, 368.6, kept=200) == (1, 2)  # 200 x 2.4446 TB = 488.9 TB / 368.6 = 1.33 -> 2
    assert appliances_needed(0.0, 60, 65, 368.6) == (0, 0)        # no checkpoint: no bandwidth or capacity need
    assert appliances_needed(1e12, 60, 65, None) == (1, 0)        # unknown capacity: bandwidth only
    with pytest.raises(ValueError, match="target_s"):
        appliances_needed(1e12, 0, 65, 368.6)


def test_gpt3_checkpoint_size(cat):
    assert scenario_checkpoint_bytes(load_scenario(GPT3)) == pytest.approx(GPT3_CKPT)


def test_gpt3_default_is_one_appliance(cat):
    d = size_storage(load_scenario(GPT3), cat, nodes=128)
    assert (d.system, d.appliances, d.basis) == ("ddn-ai400x2", 1, "bandwidth")  # 0.63 -> 1 (see above)
    assert d.power_w == 2500 and d.rack_units == 2           # 1 x 2.5 kW ESTIMATE, 1 x 2U (storage.csv)
    assert d.capacity_tb == pytest.approx(368.6)
    assert d.checkpoint_write_s == pytest.approx(37.61, abs=0.01)  # 2.4446e12 / 65e9
    assert "power" in d.sources  # no max_power_w in storage.csv: the ESTIMATE is labelled


def test_bandwidth_bound_by_hand(cat):
    s = load_scenario(GPT3).replace(reliability__checkpoint_target_s=10)
    d = size_storage(s, cat, nodes=128)
    assert (d.appliances, d.basis) == (4, "bandwidth")       # 2.4446e12 / (10 x 65e9) = 3.76 -> 4
    assert d.power_w == 4 * 2500 and d.rack_units == 4 * 2   # 10 kW, 8U
    assert d.checkpoint_write_gb_per_s == 4 * 65             # 260 GB/s
    assert d.checkpoint_write_s == pytest.approx(9.40, abs=0.01)   # 2.4446e12 / 260e9


def test_capacity_bound_by_hand(cat):
    s = load_scenario(GPT3).replace(reliability__checkpoints_kept=200)
    d = size_storage(s, cat, nodes=128)
    assert (d.by_bandwidth, d.by_capacity, d.appliances, d.basis) == (1, 2, 2, "capacity")  # 488.9 TB / 368.6 -> 2


def test_nfs_appliance_by_hand(cat):
    s = load_scenario(GPT3).replace(reliability__storage_system="generic-nfs-2u-nvme")
    d = size_storage(s, cat, nodes=128)
    assert d.appliances == 5                                 # 2.4446e12 / (60 x 10e9) = 4.07 -> 5
    assert d.checkpoint_write_gb_per_s == 50                 # 5 x 10 GB/s


def test_single_node_uses_local_nvme(cat):
    d = size_storage(load_scenario(REF), cat, nodes=1)
    assert (d.appliances, d.basis, d.system, d.power_w, d.rack_units) == (0, "local", "local-nvme", 0, 0)
    assert d.checkpoint_write_gb_per_s == LOCAL_NVME_WRITE_GB_PER_S == 14.0  # 4 drives x 3.5 GB/s (ESTIMATE)
    assert d.checkpoint_write_s == pytest.approx(6.74, abs=0.01)  # llama2-7b 6.738e9 x 14 B = 94.3 GB / 14 GB/s
    # naming a storage system puts one appliance behind the single node
    named = size_storage(load_scenario(REF).replace(reliability__storage_system="ddn-ai400x2"), cat, nodes=1)
    assert (named.appliances, named.basis) == (1, "bandwidth")


def test_scenario_units_override(cat):
    d = size_storage(load_scenario(GPT3).replace(reliability__storage_units=3), cat, nodes=128)
    assert (d.appliances, d.basis, d.power_w) == (3, "scenario", 3 * 2500)


def test_a_drive_is_not_an_appliance(cat):
    s = load_scenario(GPT3).replace(reliability__storage_system="micron-7450-pro-7.68tb")
    with pytest.raises(ScenarioError, match="reliability.storage_system: micron-7450-pro-7.68tb is a nvme-ssd drive"):
        size_storage(s, cat, nodes=128)


# --------------------------------------------------------------------------- the three modules agree


def _three(s, cat):
    b = budget(s, cat)
    r = reliability.assess(s, cat)
    c = cost.assess(s, cat, budget=b, reliability_result=r)
    return b, r, c


def test_gpt3_budget_reliability_cost_agree(cat):
    s = load_scenario(GPT3).replace(reliability__checkpoint_target_s=10)
    b, r, c = _three(s, cat)
    # 4 appliances (2.4446e12 / (10 x 65e9) = 3.76 -> 4) in every module
    assert b.storage.appliances == r.storage_units == c.storage["units"] == 4
    # + the capacity tier: 1 x 1.2 kW, 4U enclosure of 1,440 TB (74.1 TB needed, see test_facility)
    assert b.storage_power_w == 4 * 2500 + 1200 and b.storage_rack_units == 8 + 4
    assert r.checkpoint_write_s == pytest.approx(GPT3_CKPT / 260e9)         # 9.40 s at 4 x 65 GB/s
    # 4 x 368.6 TB x 400 USD/TB = 589,760 + 1,440 TB x 60 USD/TB = 86,400 (cost_defaults ESTIMATEs)
    assert c.capex["storage"] == pytest.approx(4 * 368.6 * 400 + 1440 * 60)


@pytest.mark.parametrize("path, units", [(GPT3, 2), (LLAMA, 1)])
def test_examples_agree(cat, path, units):
    # GPT-3: checkpoint 0.63 -> 1, but 1,024 GPUs x 160/1,016 GB/s = 161.3 GB/s read / 90 -> 2;
    # Llama 3 70B: 512 x 0.1575 = 80.6 GB/s -> 1 (checkpoint 0.99 TB / (60 x 65e9) = 0.25 -> 1)
    b, r, c = _three(load_scenario(path), cat)
    assert b.storage.appliances == r.storage_units == c.storage["units"] == units
    assert b.storage.capacity_units == 1  # tens of TB of raw data and archived checkpoints: one enclosure
    assert b.storage_power_w == units * 2500 + 1200
    assert c.capex["storage"] == pytest.approx(units * 368.6 * 400 + 1440 * 60)
    assert b.to_dict()["storage"]["units"] == r.to_dict()["storage"]["units"] == c.to_dict()["storage"]["units"]


def test_reference_has_no_central_appliance_anywhere(cat):
    b, r, c = _three(load_scenario(REF), cat)
    assert b.storage_power_w == 0 and b.storage_rack_units == 0
    assert r.storage_units == 0 and r.storage_system == "local-nvme"
    assert r.checkpoint_write_gb_per_s == 14.0
    assert any(f.code == "rel-storage-local" for f in r.findings)
    assert c.capex["storage"] == 0 and c.storage == {"system": "local-nvme", "units": 0}


def test_growth_table_uses_the_same_storage(cat):
    s = load_scenario(GPT3).replace(reliability__checkpoint_target_s=10)
    b = budget(s, cat)
    g = growth_table(b, [1, 128], s, cat)
    # at the scenario's own size the growth table's IT power is the budget's
    assert g["it_mw"].iloc[1] == pytest.approx(b.it_power_kw / 1000, rel=1e-6)


# --------------------------------------------------------------------------- storage for data


def test_dataset_bytes_by_hand():
    from gpucluster_lib.facility.storage import dataset_bytes
    from gpucluster_lib.scenario import from_dict

    # GPT-3's 50,257-entry vocabulary fits uint16: 300e9 tokens x 2 B = 0.6 TB tokenised;
    # raw text 300e9 x 4 B (about 4 characters a token) x 10 (RefinedWeb keeps about a tenth) = 12 TB
    data, raw, _ = dataset_bytes(load_scenario(GPT3))
    assert data == pytest.approx(0.6e12) and raw == pytest.approx(12e12)
    # Llama 3's 128,256 entries need 4 B: 15.6e12 tokens (Llama 3 paper sec. 3.1) x 4 B = 62.4 TB
    s = from_dict({"model": "llama3-405b", "training": {"tokens": 15.6e12}})
    assert dataset_bytes(s)[0] == pytest.approx(62.4e12)
    # images: ILSVRC-2012's 1,281,167 train images x 110 kB = 140.9 GB
    v = from_dict({"model": "resnet50", "training": {"dataset_images": 1_281_167, "epochs": 90}})
    assert dataset_bytes(v)[0] == pytest.approx(1_281_167 * 110e3)


def llama3_scale(**storage):
    from gpucluster_lib.scenario import from_dict

    return from_dict({"model": {"preset": "llama3-405b"}, "hardware": {"server": "dgx-h100", "nodes": 2048},
                      "training": {"tokens": 15.6e12}, "storage": storage})


def test_llama3_scale_lands_in_the_published_range(cat):
    d = size_storage(llama3_scale(), cat, nodes=2048, gpus=16_384)
    # read: 16,384 GPUs x 160/1,016 GB/s ("better" class) = 2,580 GB/s over 90 GB/s AI400X2 -> 29;
    # sustained write 16,384 x 80/1,016 = 1,290 GB/s over 65 GB/s -> 20; checkpoint 405B x 14 B = 5.7 TB
    # in 60 s at 65 GB/s -> 2; data 62.4 TB + 3 x 5.7 TB on 368.6 TB -> 1
    assert (d.by_read, d.by_write, d.by_bandwidth, d.by_data) == (29, 20, 2, 1)
    assert (d.appliances, d.basis) == (29, "read")
    assert d.read_gb_per_s == pytest.approx(29 * 90)
    # Llama 3 paper sec. 3.3.1: 240 PB on 7,500 servers, 2 TB/s sustained and 7 TB/s peak throughput
    assert 1_000 < d.read_gb_per_s < 7_000 and 1_000 < d.checkpoint_write_gb_per_s < 7_000
    assert 10_000 < d.total_capacity_tb < 240_000  # tens of PB: 29 x 368.6 TB flash + the capacity tier
    t = d.to_dict()
    assert {"capacity_tb", "read_gb_per_s", "write_gb_per_s", "units"} <= set(t)
    # "best" class: 500/1,016 GB/s per GPU = 8.06 TB/s read (the paper's 7 TB/s peak) -> 90 appliances
    best = size_storage(llama3_scale(performance_class="best"), cat, nodes=2048, gpus=16_384)
    assert best.by_read == 90


def test_capacity_tier_by_hand(cat):
    s = load_scenario(GPT3)
    d = size_storage(s, cat, nodes=128, gpus=1024)
    # (12 TB raw + 0.6 TB tokenised + 10 archived x 2.4446 TB) x 2 growth = 74.09 TB -> 1 x 1,440 TB
    assert d.capacity_needed_tb == pytest.approx((12 + 0.6 + 10 * 2.444621856768) * 2, rel=1e-6)
    assert (d.capacity_system, d.capacity_units, d.capacity_tier_tb) == ("generic-hdd-object-4u", 1, 1440)
    assert d.total_power_w == 2 * 2500 + 1200 and d.total_rack_units == 2 * 2 + 4
    off = size_storage(s.replace(storage__capacity_tier=False), cat, nodes=128, gpus=1024)
    assert off.capacity_units == 0 and off.total_power_w == off.power_w
    # growth 20: 37.05 TB x 20 = 741 TB -> still 1; raw x 600: (720 + 0.6 + 24.45) x 2 = 1,490 TB -> 2
    assert size_storage(s.replace(storage__growth_factor=20.0), cat, nodes=128, gpus=1024).capacity_units == 1
    assert size_storage(s.replace(storage__raw_data_multiple=600.0), cat, nodes=128, gpus=1024).capacity_units == 2
