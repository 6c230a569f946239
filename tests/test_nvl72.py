"""Rack-scale NVL72 systems and vendor-shaped rack layouts, against NVIDIA's published figures."""

import pytest

from gpucluster_lib import design
from gpucluster_lib.catalog import load_catalog
from gpucluster_lib.scenario import from_dict
from gpucluster_lib.training.estimate import build_context


@pytest.fixture(scope="module")
def cat():
    return load_catalog()


def test_nvl72_catalogue_rows(cat):
    for sid in ("gb200-nvl72", "gb300-nvl72"):
        s = cat.server(sid)
        assert s["gpu_count"] == 72 and s["nvlink_domain_gpus"] == 72  # NVIDIA GB200/GB300 NVL72 pages: 72 GPUs, one NVLink domain
        assert s["cpu_count"] == 36  # 36 Grace CPUs (NVIDIA GB200 NVL72 page: 2,592 Arm cores = 36 x 72)
        assert (s["compute_trays_count"], s["switch_trays_count"]) == (18, 9)  # BCM manual: 9 NVLink switch trays a rack
        assert s["power_shelves_count"] == 8  # BCM manual Power Shelf Integration: 8 shelves of 6 x 5.5 kW
        assert s["racks_count"] == 1 and s["weight_kg"] == 1360  # STH / Tom's Hardware GTC 2024: 1.36 t (3,000 lb)
        assert s["cooling"] == "liquid" and s["source"]
        assert 120_000 <= s["max_power_w"] <= 132_000  # 120 kW (STH) to 132 kW (power shelves' DC output)
    pair = cat.server("gb200-nvl36x2")
    assert (pair["gpu_count"], pair["nvlink_domain_gpus"], pair["racks_count"]) == (72, 72, 2)  # 36 GPUs a rack, 72 per domain
    assert cat.get("cpus", "nvidia-grace")["cores"] == 72  # 2,592 cores / 36 CPUs (GB200 NVL72 page)


def su(**over):
    data = {"hardware": {"server": "gb200-nvl72", "nodes": 8}, "facility": {"cooling": "liquid"},
            "reliability": {"spare_nodes": 0}}
    for k, v in over.items():
        data.setdefault(k, {}).update(v)
    return from_dict(data)


def test_nodes_count_racks_and_domain_in_hardware_stage():
    d = design(su())
    hw = d.to_dict()["hardware"]
    assert (hw["gpus"], hw["nvlink_domain_gpus"], hw["racks_per_node"]) == (576, 72, 1)  # 8 racks x 72 GPUs


def test_gb200_superpod_scalable_unit():
    d = design(su())
    b = d.facility
    assert b.compute_racks == 8 and b.nodes_per_rack == 1  # GB200 SuperPOD RA: one SU = 8 DGX GB200 racks
    assert b.rack_fit.basis == "rack-scale" and b.rack_fit.fits
    assert b.rack_power_kw == pytest.approx(132.0)  # one rack per system, its own power shelves
    # GB200 SuperPOD RA: "Each SU requires a TDP of 1.2 MW" (8 racks plus their network)
    assert b.it_power_kw == pytest.approx(1200, rel=0.15)
    assert not [f for f in d.findings if f.severity == "error"]


def test_nvl36x2_takes_two_racks_per_domain():
    d = design(su(hardware={"server": "gb200-nvl36x2", "nodes": 4}))
    assert d.facility.compute_racks == 8  # 4 pairs x 2 racks
    assert d.hardware.nvlink_domain_gpus == 72 and d.hardware.gpus_per_node == 72
    assert d.facility.rack_power_kw == pytest.approx(66.0)  # 132 kW over the pair's two racks


def test_rack_limit_below_the_system_is_an_error():
    d = design(su(facility={"rack_power_limit_kw": 60}))
    codes = {(f.code, f.severity) for f in d.facility.findings}
    assert ("facility-rack-power", "error") in codes  # 132 kW rack on a 60 kW feed
    air = design(su(facility={"cooling": "air"}))
    assert any(f.code == "node-cooling-mismatch" and f.severity == "error" for f in air.node.findings)


def test_nvlink_domain_reaches_training_and_serving():
    s = su(model={"preset": "llama3-70b"}, training={"tokens": 1e12})
    d = design(s)
    ctx = build_context(s, hardware=d.hardware, network=d.network)[0]
    assert ctx.nvlink_domain == 72  # TP/EP inside the 72-GPU domain
    # a DGX H100 node's domain is its 8 GPUs
    h = from_dict({"hardware": {"server": "dgx-h100", "nodes": 4}})
    assert design(h).hardware.nvlink_domain_gpus == 8
    # serving: tensor parallel 16 is inside an NVL72 domain (no across-node warning), not in a DGX H100
    s16 = su(model={"preset": "llama3-70b"}, inference={"tensor_parallel": 16, "tokens_per_s": 1e5})
    codes = {f.code for f in design(s16).serving.findings}
    assert "inference-tp-across-nodes" not in codes
    h16 = from_dict({"hardware": {"server": "dgx-h100", "nodes": 4}, "model": {"preset": "llama3-70b"},
                     "inference": {"tensor_parallel": 16, "tokens_per_s": 1e5}})
    assert "inference-tp-across-nodes" in {f.code for f in design(h16).serving.findings}


def test_dgx_h100_superpod_38_racks():
    # NVIDIA DGX SuperPOD H100 RA, Table 7: 4 SUs, 127 DGX H100 (+ UFM in one node slot), 38 racks
    s = from_dict({"hardware": {"server": "dgx-h100", "nodes": 127},
                   "network": {"topology": "rail-optimized", "scalable_unit_nodes": 32, "fabric_manager_ports": 4},
                   "reliability": {"spare_nodes": 0}})
    b = design(s).facility
    assert b.nodes_per_rack == 4 and b.rack_fit.basis == "vendor"  # 4 DGX H100 per air-cooled rack
    assert b.rack_power_kw == pytest.approx(40.8)  # 4 x 10.2 kW (DGX H100 User Guide max power)
    assert b.compute_racks == 32  # ceil(127 / 4)
    assert b.racks == 38  # Table 7
    # explicit site limits replace the vendor layout: 30 kW air -> (30 - 0.1) // 10.2 = 2 a rack
    s30 = s.replace(facility__rack_power_limit_kw=30.0)
    assert design(s30).facility.nodes_per_rack == 2


def test_vendor_airflow_dgx_h100():
    s = from_dict({"hardware": {"server": "dgx-h100", "nodes": 4}, "reliability": {"spare_nodes": 0}})
    b = design(s).facility
    assert b.airflow_basis == "vendor"
    other_w = b.network_power_w + b.storage_power_w + b.head_power_w
    # DGX H100 User Guide: 1,105 CFM at 80% fan PWM per system; the rest by q = 1.08 CFM dT[F]
    assert b.airflow_cfm == pytest.approx(4 * 1105 + other_w * 3.412142 / (1.08 * 11.1 * 1.8), rel=1e-6)


def test_nvlink_switch_system_256_domain_spans_nodes():
    # H100 architecture whitepaper, NVLink Switch System: 256 GPUs over 32 DGX H100 in one NVLink domain
    s = from_dict({"hardware": {"server": "dgx-h100-nvlink-256", "nodes": 32}, "model": {"preset": "llama3-70b"},
                   "training": {"tokens": 1e12}, "reliability": {"spare_nodes": 0}})
    d = design(s)
    assert d.hardware.nvlink_domain_gpus == 256 and d.hardware.gpus_per_node == 8
    assert build_context(s, hardware=d.hardware, network=d.network)[0].nvlink_domain == 256
    # the node is a DGX H100: the vendor rack layout and 10.2 kW still apply
    assert d.facility.nodes_per_rack == 4 and d.node.peak_power_w == 10_200
