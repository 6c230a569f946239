"""Node builder: vendor figures, supplies, and every design check."""

from __future__ import annotations

import pytest

from gpucluster_lib.catalog import load_catalog
from gpucluster_lib.errors import ScenarioError
from gpucluster_lib.hardware.node import (
    build_node,
    check_cooling,
    check_pcie,
    check_psu,
    cpu_io_lanes,
    usable_psu_w,
)
from gpucluster_lib.scenario import from_dict, load_scenario


@pytest.fixture(scope="module")
def cat():
    return load_catalog()


def node(cat, hardware: dict, **sections):
    return build_node(from_dict({"hardware": hardware, **sections}), cat)


def codes(n, severity=None):
    return {f.code for f in n.findings if severity is None or f.severity == severity}


# ----------------------------------------------------------------- vendor figures

def test_dgx_a100_peak_is_user_guide_max(cat):
    n = node(cat, {"server": "dgx-a100-640gb"})
    assert n.peak_power_w == 6500  # DGX A100 User Guide: 6.5 kW max
    assert n.psu_usable_w == 3 * 3000  # DGX A100 User Guide: 6x 3 kW, 3+3 redundant
    assert n.rack_units == 6 and n.weight_kg == pytest.approx(123.16)  # DGX A100 User Guide
    # the component estimate is reported beside the vendor figure: above the GPUs' 8 x 400 W
    # (A100 SXM4 TDP, NVIDIA datasheet), below the 6.5 kW wall-power rating
    assert 8 * 400 < n.component_peak_w < 6500
    assert n.to_dict()["vendor_max_power_w"] == 6500


def test_dgx_h100_peak_and_typical(cat):
    n = node(cat, {"server": "dgx-h100"})
    assert n.peak_power_w == 10200  # DGX H100 User Guide: 10.2 kW max
    assert n.psu_usable_w == 4 * 3300  # DGX H100 User Guide: 6x 3.3 kW, 4+2
    # Newkirk et al. 2025 (arXiv:2506.14551): training at 76% of 10.2 kW; Latif et al. 2025
    # (IEEE Access 13:61740): maximum observed 8.4 kW = 82%. Typical must sit near that band.
    assert 0.74 * 10200 <= n.typical_power_w <= 0.85 * 10200
    assert not codes(n, "error") and not codes(n, "warning")


def test_reference_server_3plus1_supplies_cover_8x_a100(cat):
    n = build_node(load_scenario("gpucluster_lib/data/scenarios/reference-8x-a100.yaml"), cat)
    assert n.psu_usable_w == 3 * 3000  # seed: 4x 3000 W PSUs in 3+1 -> 9 kW N-capacity
    gpus = next(c for c in n.components if c.category == "gpu")
    assert gpus.peak_w == 8 * 400  # 8x A100 SXM4 at 400 W TDP (NVIDIA A100 datasheet)
    assert n.peak_power_w == 6500  # servers.csv: estimate taken from the DGX A100 (same BOM)
    # 6.5 kW / 9 kW = 72% load, inside the 80% limit of the 20% margin: info only
    psu = [f for f in n.findings if f.code == "node-psu-capacity"]
    assert [f.severity for f in psu] == ["info"] and "72%" in psu[0].message
    assert n.gpu_memory_gb == pytest.approx(8 * 80 * 2**30 / 1e9)  # 80 GiB per GPU = 85.9 GB


def test_component_model_by_hand(cat):
    # 4x L4 in the generic 2U PCIe chassis, everything given explicitly
    n = node(cat, {"accelerator": "l4", "gpus_per_node": 4, "server": "generic-2u-4gpu-pcie",
                   "parts": {"cpus": {"id": "epyc-7742", "count": 2}, "memory_gb": 256,
                             "nics": {"id": "connectx-7-ndr", "count": 1},
                             "drives": [{"id": "micron-7400-pro-m2-1.92tb", "count": 2}],
                             "psus": {"count": 2, "rating_w": 2000, "redundancy": "1+1"}}})
    # by hand: GPUs 4 x 72 (L4 page) = 288; CPUs 2 x 225 = 450; memory 256 x 0.125 = 32;
    # NIC 24.9 (nics.csv CX-7); drives 2 x 8.25 = 16.5; electronics E = 811.4; fans and
    # other 10% + 10% of E -> peak = 1.2 x 811.4 = 973.68 W
    assert n.component_peak_w == pytest.approx(1.2 * (288 + 450 + 32 + 24.9 + 16.5))
    assert n.peak_power_w == n.component_peak_w and n.vendor_max_power_w is None
    assert n.psu_usable_w == 2000
    assert not codes(n, "error")


# ----------------------------------------------------------------- supplies

@pytest.mark.parametrize(("count", "rating", "scheme", "usable"), [
    (4, 3000, "3+1", 9000),  # reference server (seed)
    (6, 3000, "3+3", 9000),  # DGX A100 User Guide
    (6, 3300, "4+2", 13200),  # DGX H100 User Guide
    (6, 3300, "5+1", 16500),  # DGX B200 User Guide
    (2, 2000, "1+1", 2000),
])
def test_usable_psu(count, rating, scheme, usable):
    assert usable_psu_w(count, rating, scheme) == usable


def test_psu_redundancy_leaving_no_supply_is_refused():
    with pytest.raises(ScenarioError, match="leaves no usable supply"):
        usable_psu_w(2, 3000, "0+2")
    with pytest.raises(ScenarioError, match=r"hardware\.parts\.psus\.redundancy.*no usable supply"):
        from_dict({"hardware": {"parts": {"psus": {"count": 2, "rating_w": 3000, "redundancy": "0+2"}}}})


def test_psu_bad_inputs():
    with pytest.raises(ScenarioError, match="rating_w: must be a positive number of watts"):
        usable_psu_w(4, 0, "3+1")
    with pytest.raises(ScenarioError, match="does not add up to 4 supplies"):
        usable_psu_w(4, 3000, "2+1")
    with pytest.raises(ScenarioError, match="must be written N\\+M"):
        usable_psu_w(4, 3000, "3-1")
    with pytest.raises(ScenarioError, match=r"hardware\.parts\.psus\.rating_w: must be a positive number"):
        from_dict({"hardware": {"parts": {"psus": {"count": 2, "rating_w": -100, "redundancy": "1+1"}}}})
    with pytest.raises(ScenarioError, match="peak_power_w: must be a positive number of watts"):
        check_psu(0, 4, 3000, "3+1", 9000)


def test_psu_findings_by_hand():
    # 3+1 x 3000 W: 9000 W usable, 12000 W installed, 80% limit = 7200 W
    assert check_psu(6500, 4, 3000, "3+1", 9000)[0].severity == "info"
    warn = check_psu(7500, 4, 3000, "3+1", 9000)[0]  # 7500 / 9000 = 83% > 80%
    assert (warn.code, warn.severity) == ("node-psu-capacity", "warning") and "83%" in warn.message
    err = check_psu(9500, 4, 3000, "3+1", 9000)[0]  # above N capacity: not redundant
    assert err.severity == "error" and "not redundant" in err.message
    err = check_psu(12500, 4, 3000, "3+1", 9000)[0]  # above all four together
    assert err.severity == "error" and "12,000 W" in err.message


def test_parts_psu_too_small_is_error(cat):
    n = node(cat, {"accelerator": "h100-sxm5-80gb", "gpus_per_node": 8,
                   "parts": {"psus": {"count": 2, "rating_w": 3000, "redundancy": "1+1"}}})
    # 8 x 700 W GPUs alone (5.6 kW, H100 SXM datasheet) exceed one 3 kW supply
    assert "node-psu-capacity" in codes(n, "error")


# ----------------------------------------------------------------- PCIe

def test_cpu_lanes():
    epyc = {"vendor": "AMD", "name": "AMD EPYC 7742", "pcie_lanes": 128}
    xeon = {"vendor": "Intel", "name": "Intel Xeon Platinum 8480C", "pcie_lanes": 80}
    assert cpu_io_lanes(epyc, 1) == 128  # AMD EPYC 7002: 128 lanes in 1P
    assert cpu_io_lanes(epyc, 2) == 128  # and 128 in 2P (half of each socket's lanes carry xGMI)
    assert cpu_io_lanes(xeon, 2) == 160  # Xeon: 80 per socket, additive


def test_too_many_pcie_gpus_for_slots(cat):
    n = node(cat, {"accelerator": "a100-pcie-80gb", "gpus_per_node": 11, "server": "generic-4u-8gpu-pcie"})
    msgs = [f.message for f in n.findings if f.code == "node-pcie-slots"]
    assert any("11 PCIe GPUs need 11 x16 slots" in m and "has 10" in m for m in msgs)


def test_nics_beyond_free_slots(cat):
    n = node(cat, {"accelerator": "a100-pcie-80gb", "gpus_per_node": 8, "server": "generic-4u-8gpu-pcie",
                   "parts": {"nics": {"id": "connectx-6-hdr", "count": 4}}})
    # 10 x16 slots - 8 GPUs = 2 free for 4 x16 NICs
    assert any("4 x16 NICs but only 2" in f.message for f in n.findings if f.code == "node-pcie-slots")


def test_lanes_oversubscribed_warning(cat):
    n = node(cat, {"accelerator": "a100-pcie-80gb", "gpus_per_node": 8, "server": "generic-4u-8gpu-pcie",
                   "parts": {"nics": {"id": "connectx-6-hdr", "count": 2},
                             "drives": [{"id": "micron-7450-pro-3.84tb", "count": 2}]}})
    # 8 GPUs x16 + 2 NICs x16 + 2 NVMe x4 = 168 lanes > 128 from 2x EPYC 7742
    assert n.pcie_lanes_needed == 8 * 16 + 2 * 16 + 2 * 4
    assert n.pcie_lanes_available == 128
    assert "node-pcie-lanes" in codes(n, "warning")


def test_card_wider_than_chassis_slot():
    acc = {"id": "wide", "form_factor": "PCIe", "slot_width_slots": 2, "pcie_lanes": 16}
    frame = {"id": "slim", "pcie_x16_slots": 4, "pcie_x8_slots": 0, "max_gpu_slot_width_slots": 1}
    slots, *_ = check_pcie(acc, 2, frame, [], [], None, 0)
    assert any("2 slots wide" in f.message and f.severity == "error" for f in slots)


# ----------------------------------------------------------------- form factor, cooling

def test_sxm_gpu_in_pcie_chassis(cat):
    n = node(cat, {"accelerator": "h100-sxm5-80gb", "gpus_per_node": 4, "server": "generic-2u-4gpu-pcie"})
    assert "node-form-factor" in codes(n, "error")


def test_pcie_gpu_in_hgx_chassis(cat):
    n = node(cat, {"accelerator": "l40s", "gpus_per_node": 8, "server": "generic-4u-hgx-8gpu"})
    assert any("PCIe card" in f.message for f in n.findings if f.code == "node-form-factor")


def test_sxm_count_must_match_baseboard(cat):
    n = node(cat, {"accelerator": "a100-sxm4-80gb", "gpus_per_node": 6})
    assert any("not 6" in f.message for f in n.findings if f.code == "node-form-factor")


def test_tpu_cannot_be_built_from_parts(cat):
    n = node(cat, {"accelerator": "tpu-v4", "gpus_per_node": 4})
    assert "node-form-factor" in codes(n, "error")


def test_passive_gpu_in_workstation(cat):
    n = node(cat, {"server": "lambda-workstation", "accelerator": "l40s", "gpus_per_node": 2})
    assert "node-cooling-mismatch" in codes(n, "error")


def test_liquid_parts_need_liquid_cooling():
    acc = {"id": "hot", "cooling": "liquid"}
    assert check_cooling(acc, {"id": "box", "cooling": "air", "kind": "chassis"}, False, "air")[0].severity == "error"
    out = check_cooling({"id": "x", "cooling": "passive"}, {"id": "dlc", "cooling": "liquid"}, True, "air")
    assert out[0].code == "node-cooling-mismatch" and "facility.cooling" in out[0].fix + out[0].field
    assert check_cooling({"id": "x", "cooling": "passive"}, {"id": "dlc", "cooling": "liquid"}, True, "liquid") == []


# ----------------------------------------------------------------- RAM

def test_ram_hard_floor(cat):
    n = node(cat, {"accelerator": "l4", "gpus_per_node": 1, "server": "generic-2u-4gpu-pcie",
                   "parts": {"memory_gb": 16}})
    assert any("16 GB" in f.message and "24 GB" in f.message for f in n.findings
               if f.code == "node-ram-floor" and f.severity == "error")


def test_ram_recommended_floor(cat):
    n = node(cat, {"accelerator": "a100-sxm4-80gb", "gpus_per_node": 8, "parts": {"memory_gb": 512}})
    # 2 x GPU memory = 2 x 8 x 80 GiB = 1,374 GB recommended (Puget/Lambda: at least twice VRAM)
    warn = [f for f in n.findings if f.code == "node-ram-floor"]
    assert warn[0].severity == "warning" and "1,374 GB" in warn[0].message


def test_ram_negative_is_refused():
    with pytest.raises(ScenarioError, match=r"hardware\.parts\.memory_gb: must be a positive number"):
        from_dict({"hardware": {"parts": {"memory_gb": -8}}})


# ----------------------------------------------------------------- network ports

def test_no_network_port(cat):
    n = node(cat, {"accelerator": "l4", "gpus_per_node": 1, "server": "generic-2u-4gpu-pcie",
                   "parts": {"nics": {"id": "connectx-6-hdr", "count": 0},
                             "mgmt_nics": {"id": "intel-x710-10gbe", "count": 0}}})
    assert any("no network port" in f.message for f in n.findings if f.code == "node-network-ports")


def test_multi_node_needs_fabric_port(cat):
    n = node(cat, {"accelerator": "l4", "gpus_per_node": 4, "server": "generic-2u-4gpu-pcie", "nodes": 4,
                   "parts": {"nics": {"id": "connectx-4-lx-25gbe", "count": 1}}})
    assert "node-network-ports" in codes(n, "error")


def test_rail_optimized_wants_port_per_gpu(cat):
    n = node(cat, {"accelerator": "a100-sxm4-80gb", "gpus_per_node": 8, "nodes": 16,
                   "parts": {"nics": {"id": "connectx-6-hdr", "count": 2}}},
             network={"topology": "rail-optimized"})
    assert any("2 ports for 8 GPUs" in f.message for f in n.findings if f.code == "node-network-ports")


def test_chassis_must_be_a_chassis(cat):
    with pytest.raises(ScenarioError, match=r"hardware\.parts\.chassis: 'dgx-h100' is a complete system"):
        node(cat, {"accelerator": "h100-sxm5-80gb", "parts": {"chassis": "dgx-h100"}})


def test_no_chassis_for_large_sxm_gets_sized_frame_and_supplies(cat):
    n = node(cat, {"accelerator": "b200-sxm-180gb", "gpus_per_node": 8})
    # B200 at 1,000 W (NVIDIA HGX page): a 10U frame as the DGX B200 (User Guide), supplies
    # sized N+1 at 3.3 kW for the estimate: N = ceil(peak / (0.8 x 3300))
    import math
    assert n.rack_units == 10
    assert n.psu_redundancy == f"{math.ceil(n.peak_power_w / (0.8 * 3300))}+1"
    assert not codes(n, "error")
    n = node(cat, {"accelerator": "mi300x", "gpus_per_node": 8})  # OAM: no SXM chassis forced on it
    assert "node-form-factor" not in codes(n, "error") and n.rack_units == 8
