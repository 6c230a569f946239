"""Spot checks of the shipped catalogue against vendor datasheets.

Each assertion carries its source on the line. Tensor figures are DENSE: NVIDIA
Ampere-and-later headline TF32/BF16/FP16/FP8/INT8 figures are 2:4-sparse and are
stored halved.
"""

from __future__ import annotations

import pytest

from gpucluster_lib.catalog import load_catalog


@pytest.fixture(scope="module")
def cat():
    return load_catalog()


def row(cat, table, id_):
    return cat.get(table, id_)


REQUIRED = {
    "accelerators": [
        "k80", "p100-sxm2-16gb", "p100-pcie-16gb", "v100-sxm2-32gb", "v100-pcie-32gb", "a100-sxm4-40gb",
        "a100-sxm4-80gb", "a100-pcie-40gb", "a100-pcie-80gb", "h100-sxm5-80gb", "h100-pcie-80gb", "h100-nvl-94gb",
        "h200-sxm-141gb", "b200-sxm-180gb", "l40s", "l4", "t4", "a10", "mi250x", "mi300x", "mi325x", "tpu-v4",
        "tpu-v5e", "tpu-v5p", "gaudi2", "gaudi3",
    ],
    "servers": [
        "dgx-1-p100", "dgx-1-v100", "dgx-2", "dgx-a100-320gb", "dgx-a100-640gb", "dgx-station-a100-160gb",
        "dgx-station-a100-320gb", "dgx-h100", "dgx-h200", "dgx-b200", "lambda-workstation", "reference-a100-4u",
        "generic-2u-4gpu-pcie", "generic-4u-8gpu-pcie", "generic-4u-hgx-8gpu",
    ],
    "cpus": ["epyc-7742", "epyc-7763", "epyc-9654", "xeon-8480c", "xeon-8570", "xeon-8168", "xeon-e5-2698-v4",
             "xeon-8380", "grace"],
    "nics": ["connectx-6-hdr", "connectx-7-ndr"],
    "switches": ["qm8700", "qm9700", "sn2700", "sn4600", "sn5600"],
}


@pytest.mark.parametrize("table", sorted(REQUIRED))
def test_required_ids_present(cat, table):
    missing = sorted(set(REQUIRED[table]) - set(cat.ids(table)))
    assert not missing, f"{table}: missing {missing}"


def test_every_row_is_sourced(cat):
    for table in cat.tables:
        for r in cat.records(table):
            assert r["source"] and r["source_date"], (table, r["id"])


def test_prices_have_sources(cat):
    for table in cat.tables:
        for r in cat.records(table):
            if r["price_usd_estimate"] is not None:
                assert r["price_source"] and r["price_date"], (table, r["id"])


def test_mgmt_nic_25gbe_or_less(cat):
    slow = [r["id"] for r in cat.records("nics") if r["speed_gbps"] <= 25 and r["protocol"] == "Ethernet"]
    assert slow, "need a <=25 GbE management NIC"


# ---------------------------------------------------------------- accelerators
def test_a100(cat):
    a40, a80 = row(cat, "accelerators", "a100-sxm4-40gb"), row(cat, "accelerators", "a100-sxm4-80gb")
    for a in (a40, a80):
        assert a["bf16_tflops"] == pytest.approx(312)  # NVIDIA A100 datasheet: BF16 312 | 624* (* = sparsity)
        assert a["tf32_tflops"] == pytest.approx(156)  # NVIDIA A100 datasheet: TF32 156 | 312*
        assert a["fp32_tflops"] == pytest.approx(19.5)  # NVIDIA A100 datasheet: FP32 19.5 TF
        assert a["fp64_tflops"] == pytest.approx(9.7)  # NVIDIA A100 datasheet: FP64 9.7 TF (tensor 19.5)
        assert a["fp8_tflops"] is None  # Ampere has no FP8
        assert a["scaleup_bandwidth_gb_per_s"] == 600  # NVIDIA: NVLink 3 600 GB/s
    assert a40["memory_bandwidth_gb_per_s"] == pytest.approx(1555)  # NVIDIA A100 datasheet: 40GB HBM2 1,555 GB/s
    assert a80["memory_bandwidth_gb_per_s"] == pytest.approx(2039)  # NVIDIA A100 datasheet: 80GB SXM HBM2e 2,039 GB/s
    assert a80["memory_gib"] == 80 and a80["tdp_w"] == 400  # NVIDIA A100 datasheet: 80 GB, 400 W
    assert row(cat, "accelerators", "a100-pcie-80gb")["tdp_w"] == 300  # NVIDIA A100 datasheet: PCIe 80GB 300 W


def test_h100_sxm(cat):
    h = row(cat, "accelerators", "h100-sxm5-80gb")
    assert h["bf16_tflops"] == pytest.approx(989.4, rel=0.01)  # NVIDIA H100 datasheet: 1,979 TFLOPS BF16 with sparsity -> 989.4 dense
    assert h["fp8_tflops"] == pytest.approx(1978.9, rel=0.01)  # NVIDIA H100 datasheet: 3,958 FP8 with sparsity -> 1,979 dense
    assert h["tf32_tflops"] == pytest.approx(494.7, rel=0.01)  # NVIDIA H100 datasheet: 989 TF32 with sparsity
    assert h["fp64_tflops"] == pytest.approx(34)  # NVIDIA H100 datasheet: FP64 34 TF (tensor 67)
    assert h["memory_bandwidth_gb_per_s"] == pytest.approx(3350)  # NVIDIA H100 datasheet: 3.35 TB/s
    assert h["tdp_w"] == 700 and h["scaleup_bandwidth_gb_per_s"] == 900  # NVIDIA H100 datasheet: up to 700 W, NVLink 900 GB/s


def test_h200(cat):
    h = row(cat, "accelerators", "h200-sxm-141gb")
    assert h["memory_gib"] == 141  # NVIDIA H200 page: 141 GB HBM3e
    assert h["memory_bandwidth_gb_per_s"] == pytest.approx(4800)  # NVIDIA H200 page: 4.8 TB/s
    assert h["bf16_tflops"] == pytest.approx(989.4, rel=0.01)  # NVIDIA H200 page: 1,979 BF16 with sparsity


def test_b200(cat):
    b = row(cat, "accelerators", "b200-sxm-180gb")
    assert b["bf16_tflops"] == pytest.approx(2250)  # NVIDIA HGX page: BF16 4.5 PF per GPU with sparsity -> 2.25 PF dense
    assert b["fp8_tflops"] == pytest.approx(4500)  # NVIDIA HGX page: FP8 9 PF with sparsity
    assert b["memory_gib"] == 180 and b["memory_bandwidth_gb_per_s"] == pytest.approx(7700)  # NVIDIA HGX page (current): 180 GB, 7.7 TB/s
    assert b["tdp_w"] == 1000 and b["scaleup_bandwidth_gb_per_s"] == 1800  # NVIDIA HGX page: 1,000 W; NVLink 5 1.8 TB/s


def test_v100(cat):
    v = row(cat, "accelerators", "v100-sxm2-32gb")
    assert v["fp16_tflops"] == pytest.approx(125)  # NVIDIA V100 datasheet: 125 TF tensor (dense; no sparsity on Volta)
    assert v["fp32_tflops"] == pytest.approx(15.7) and v["fp64_tflops"] == pytest.approx(7.8)  # NVIDIA V100 datasheet (SXM2)
    assert v["bf16_tflops"] is None and v["fp8_tflops"] is None and v["tf32_tflops"] is None  # Volta: no BF16, TF32 or FP8
    assert row(cat, "accelerators", "v100-pcie-32gb")["fp16_tflops"] == pytest.approx(112)  # NVIDIA V100 datasheet: PCIe 112 TF


def test_mi300x(cat):
    m = row(cat, "accelerators", "mi300x")
    assert m["bf16_tflops"] == pytest.approx(1307.4)  # AMD ROCm MI300 docs: FP16/BF16 1,307.4 TF (dense)
    assert m["fp8_tflops"] == pytest.approx(2614.9)  # AMD ROCm MI300 docs: FP8 2,614.9 TF (dense)
    assert m["fp64_tflops"] == pytest.approx(81.7)  # AMD ROCm MI300 docs: FP64 vector 81.7 (matrix 163.4)
    assert m["memory_gib"] == 192 and m["memory_bandwidth_gb_per_s"] == pytest.approx(5300)  # AMD: 192 GB HBM3, 5.3 TB/s
    assert m["tdp_w"] == 750  # MLPerf system name 'MI300X-...-192GB-750W'


def test_mi250x_formats(cat):
    m = row(cat, "accelerators", "mi250x")
    assert m["bf16_tflops"] == pytest.approx(383)  # AMD MI200 launch table: FP16/BF16 383 TF
    assert m["tf32_tflops"] is None and m["fp8_tflops"] is None  # CDNA 2: no TF32, no FP8


def test_tpu_v4(cat):
    t = row(cat, "accelerators", "tpu-v4")
    assert t["bf16_tflops"] == pytest.approx(275)  # Google Cloud TPU v4 docs: 275 TFLOPS BF16 per chip
    assert t["memory_gib"] == 32 and t["memory_bandwidth_gb_per_s"] == pytest.approx(1200)  # Google: 32 GiB HBM2, 1,200 GB/s


def test_tpu_v5(cat):
    assert row(cat, "accelerators", "tpu-v5e")["bf16_tflops"] == pytest.approx(197)  # Google Cloud TPU v5e docs: 197 TF BF16
    p = row(cat, "accelerators", "tpu-v5p")
    assert p["bf16_tflops"] == pytest.approx(459) and p["memory_gib"] == 95  # Google Cloud TPU v5p docs: 459 TF, 95 GiB
    assert p["scaleup_bandwidth_gb_per_s"] == 1200  # Google v5p docs: ICI 1,200 GB/s per chip


NVIDIA_AMPERE_PLUS = ("Ampere", "Hopper", "Ada", "Blackwell")


def test_nvidia_ampere_plus_dense_not_sparse(cat):
    for a in cat.records("accelerators"):
        if a["vendor"] != "NVIDIA" or not a["architecture"].startswith(NVIDIA_AMPERE_PLUS):
            continue
        if a["bf16_tflops"] is None:
            continue
        assert a["bf16_tflops"] / a["tdp_w"] < 2.6, a["id"]  # a sparse headline would exceed 2.6 TFLOP/s per W
        if a["fp8_tflops"] is not None:
            assert a["bf16_tflops"] <= a["fp8_tflops"], a["id"]
        if a["tf32_tflops"] is not None:
            assert a["tf32_tflops"] == pytest.approx(a["bf16_tflops"] / 2, rel=0.03), a["id"]  # TF32 is half of BF16 (B200: NVIDIA rounds 1,125 to "2.2 PF" sparse)


def test_pcie_cards_have_slot_width(cat):
    widths = {a["id"]: a["slot_width_slots"] for a in cat.records("accelerators") if a["form_factor"] == "PCIe"}
    assert widths["l4"] == 1 and widths["t4"] == 1 and widths["a10"] == 1  # NVIDIA: single-slot cards
    for id_ in ("k80", "l40s", "a100-pcie-80gb", "h100-pcie-80gb", "h100-nvl-94gb"):
        assert widths[id_] == 2, id_  # NVIDIA: dual-slot cards


# ---------------------------------------------------------------- servers
def test_dgx_a100(cat):
    for id_ in ("dgx-a100-320gb", "dgx-a100-640gb"):
        s = row(cat, "servers", id_)
        assert s["max_power_w"] == 6500  # NVIDIA DGX A100 User Guide: 6.5 kW max
        assert (s["psu_count"], s["psu_rating_w"], s["psu_redundancy"]) == (6, 3000, "3+3")  # DGX A100 UG: 6x 3 kW, 3+3
        assert s["rack_units"] == 6 and s["cpu_id"] == "epyc-7742" and s["cpu_count"] == 2  # DGX A100 UG
        assert s["compute_nic_id"] == "connectx-6-hdr" and s["compute_nic_count"] == 8  # DGX A100 UG: 8x ConnectX-6 HDR compute
        assert s["airflow_cfm"] == 840  # DGX A100 UG: 840 CFM at 80% PWM
    assert row(cat, "servers", "dgx-a100-640gb")["gpu_id"] == "a100-sxm4-80gb"


def test_dgx_h100(cat):
    s = row(cat, "servers", "dgx-h100")
    assert s["max_power_w"] == 10200  # NVIDIA DGX H100 User Guide: 10.2 kW max
    assert (s["psu_count"], s["psu_rating_w"], s["psu_redundancy"]) == (6, 3300, "4+2")  # DGX H100 UG: 6x 3.3 kW, 4+2
    assert s["rack_units"] == 8 and s["weight_kg"] == pytest.approx(130.45)  # DGX H100 UG: 8U, 130.45 kg
    assert s["compute_nic_id"] == "connectx-7-ndr" and s["compute_nic_count"] == 8  # DGX H100 UG: 8x ConnectX-7 400G
    assert row(cat, "servers", "dgx-h200")["max_power_w"] == 10200  # DGX H100/H200 UG


def test_dgx_b200(cat):
    s = row(cat, "servers", "dgx-b200")
    assert s["max_power_w"] == 14300 and s["psu_redundancy"] == "5+1" and s["rack_units"] == 10  # NVIDIA DGX B200 UG
    assert s["cpu_id"] == "xeon-8570"  # DGX B200 UG: 2x Xeon Platinum 8570


def test_reference_a100_4u(cat):
    s = row(cat, "servers", "reference-a100-4u")
    assert (s["psu_count"], s["psu_rating_w"], s["psu_redundancy"]) == (4, 3000, "3+1")  # project seed requirement
    assert s["gpu_id"] == "a100-sxm4-80gb" and s["gpu_count"] == 8  # seed: 8x A100 SXM4 80GB = 640 GB
    assert s["cpu_id"] == "epyc-7742" and s["cpu_count"] == 2  # seed: 2x EPYC 7742
    assert s["system_memory_gb"] in (2000, 2048)  # seed: 2 TB RAM
    assert s["rack_units"] == 4  # seed / Supermicro AS-4124GO-NART class 4U


def test_chassis_rows_are_empty_shells(cat):
    for id_ in ("generic-2u-4gpu-pcie", "generic-4u-8gpu-pcie", "generic-4u-hgx-8gpu"):
        s = row(cat, "servers", id_)
        assert s["kind"] == "chassis" and s["gpu_id"] is None and s["gpu_count"] == 0
    assert row(cat, "servers", "generic-4u-hgx-8gpu")["gpu_baseboard"] == "sxm"
    assert row(cat, "servers", "generic-4u-8gpu-pcie")["max_gpu_slot_width_slots"] == 2


def test_lambda_workstation(cat):
    s = row(cat, "servers", "lambda-workstation")
    assert s["kind"] == "workstation" and s["psu_rating_w"] == 1600  # Lambda blog: workstation PSUs top out at 1600 W
    assert s["max_power_w"] <= 1440  # Lambda blog: stay at or below 1440 W (80% of 15 A / 120 V)


# ---------------------------------------------------------------- CPUs, NICs, switches
def test_epyc_7742(cat):
    c = row(cat, "cpus", "epyc-7742")
    assert (c["cores"], c["tdp_w"], c["pcie_lanes"], c["pcie_gen"]) == (64, 225, 128, 4)  # AMD EPYC 7742 spec


def test_nics(cat):
    n6, n7 = row(cat, "nics", "connectx-6-hdr"), row(cat, "nics", "connectx-7-ndr")
    assert (n6["speed_gbps"], n6["ports"], n6["pcie_gen"], n6["pcie_lanes"]) == (200, 1, 4, 16)  # ConnectX-6 HDR, Gen4 x16
    assert (n7["speed_gbps"], n7["ports"], n7["pcie_gen"], n7["pcie_lanes"]) == (400, 1, 5, 16)  # ConnectX-7 NDR OSFP, Gen5 x16


@pytest.mark.parametrize("id_, ports, speed, ru", [
    ("qm8700", 40, 200, 1),   # NVIDIA QM87xx manual: 40x HDR 200G, 1U
    ("qm9700", 64, 400, 1),   # NVIDIA QM97xx manual: 32 OSFP x 2 = 64x NDR 400G, 1U
    ("sn2700", 32, 100, 1),   # mlxsw wiki: SN2700 32x 100G, 1U
    ("sn4600", 64, 200, 2),   # mlxsw wiki / netbox: SN4600 64x 200G, 2U
    ("sn5600", 64, 800, 2),   # NVIDIA SN5000 manual: SN5600 64x 800GbE, 2U
])
def test_switch_ports(cat, id_, ports, speed, ru):
    s = row(cat, "switches", id_)
    assert (s["ports"], s["port_speed_gbps"], s["rack_units"]) == (ports, speed, ru)
    assert s["max_power_w"] > 0


def test_switch_power_ordering(cat):
    for s in cat.records("switches"):
        if s["typical_power_w"] is not None:
            assert s["typical_power_w"] <= s["max_power_w"], s["id"]
    assert row(cat, "switches", "qm9700")["max_power_w"] == 1720  # QM9700 datasheet as quoted: 1,720 W max with active cables


# --- Indicative prices (estimates; sources in the CSV price_source column) ---

# Sold accelerators for which no dated public price was found yet. Shrink this set as sources are added;
# the test fails if a sold accelerator outside it has no price.
UNPRICED_SOLD_ACCELERATORS = {
    "h100-nvl-94gb", "h200-nvl-141gb", "gb200-gpu-186gb", "gb300-gpu-288gb", "l40s", "l4", "t4", "a10",
    "mi250x", "mi300x", "mi325x", "gaudi2",
}


def test_sold_accelerators_priced_with_source(cat):
    missing = []
    for r in cat.records("accelerators"):
        if r["vendor"] == "Google":
            assert r["price_usd_estimate"] is None, r["id"]  # TPUs are not sold; cloud price is in notes
            continue
        if r["price_usd_estimate"] is None:
            missing.append(r["id"])
        else:
            assert r["price_source"] and r["price_date"], r["id"]
    assert set(missing) <= UNPRICED_SOLD_ACCELERATORS, sorted(set(missing) - UNPRICED_SOLD_ACCELERATORS)


@pytest.mark.parametrize(
    "table,id_,lo,hi",
    [
        ("accelerators", "h100-sxm5-80gb", 20_000, 45_000),  # Raymond James via Barron's/TechSpot 2023-08: $25k-30k
        ("accelerators", "b200-sxm-180gb", 25_000, 50_000),  # CNBC 2024-10: $30k-40k per Blackwell unit
        ("accelerators", "k80", 4_000, 6_000),  # AnandTech 2014-11: launch price $5,000
        ("accelerators", "v100-sxm2-32gb", 8_000, 15_000),  # Microway 2018: list $11,458
        ("accelerators", "gaudi3", 12_000, 20_000),  # Intel Computex 2024: 8-chip kit $125,000
        ("servers", "dgx-h100", 200_000, 500_000),  # SemiAnalysis 2023-05: ~$270,000
        ("servers", "dgx-a100-320gb", 150_000, 250_000),  # AnandTech GTC 2020: $199,000
    ],
)
def test_price_plausible(cat, table, id_, lo, hi):
    r = row(cat, table, id_)
    assert r["price_source"], id_
    assert lo <= r["price_usd_estimate"] <= hi, (id_, r["price_usd_estimate"])


def test_tpu_v4_cloud_price_in_notes(cat):
    # Google Cloud TPU pricing page (archived 2022-05-11): v4 $3.22 per chip-hour on demand
    assert "$3.22 per chip-hour" in row(cat, "accelerators", "tpu-v4")["notes"]
