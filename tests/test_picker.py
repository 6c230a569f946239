"""Hardware picker: filters, rankings and server matching, checked against datasheet arithmetic."""

from __future__ import annotations

import pytest

from gpucluster_lib import ScenarioError, load_catalog
from gpucluster_lib.charts.hardware import accelerator_scatter
from gpucluster_lib.hardware.picker import PickerFilter, pick, servers_for, with_metrics


@pytest.fixture(scope="module")
def cat():
    return load_catalog()


def test_fp8_excludes_parts_without_fp8(cat):
    ids = set(pick(cat, PickerFilter(precision="fp8"))["id"])
    # A100 and V100 datasheets list no FP8 tensor format; H100 (Hopper) introduced FP8.
    assert "a100-sxm4-80gb" not in ids and "v100-sxm2-32gb" not in ids
    assert "h100-sxm5-80gb" in ids


def test_min_memory_and_vendor_filters(cat):
    df = pick(cat, PickerFilter(precision="bf16", min_memory_gib=150, vendors=("AMD",)))
    # AMD: MI300X 192 GB, MI325X 256 GB (AMD Instinct pages); MI250X has 128 GB, below the floor
    assert set(df["id"]) == {"mi300x", "mi325x"}


def test_rank_by_peak_bf16(cat):
    df = pick(cat, PickerFilter(precision="bf16", vendors=("NVIDIA",), form_factors=("SXM",)))
    # Dense BF16: B200 2,250 (HGX page, 4.5 PF sparse) > H100 = H200 989.4 > A100 312
    assert list(df["id"][:3]) == ["b200-sxm-180gb", "h100-sxm5-80gb", "h200-sxm-141gb"]
    assert list(df["peak_tflops"][:2]) == [2250, 989.4]


def test_tflops_per_watt_metric(cat):
    df = with_metrics(cat.tables["accelerators"], "bf16").set_index("id")
    # H100 SXM: 989.4 TFLOP/s / 700 W = 1.4134 TFLOP/s per W (H100 datasheet)
    assert df.loc["h100-sxm5-80gb", "tflops_per_w"] == pytest.approx(989.4 / 700)
    # A100 SXM4: 312 / 400 = 0.78
    assert df.loc["a100-sxm4-80gb", "tflops_per_w"] == pytest.approx(0.78)


def test_budget_filter_and_price_override(cat):
    # With H100 SXM overridden to 20,000 USD, a 25,000 budget admits it; the shipped estimate is above
    shipped = cat.accelerator("h100-sxm5-80gb")["price_usd_estimate"]
    assert shipped > 25_000
    df = pick(cat, PickerFilter(max_price_usd=25_000))
    assert "h100-sxm5-80gb" not in set(df["id"])
    df = pick(cat, PickerFilter(max_price_usd=25_000, price_overrides={"h100-sxm5-80gb": 20_000}))
    assert "h100-sxm5-80gb" in set(df["id"])
    assert df.set_index("id").loc["h100-sxm5-80gb", "tflops_per_kusd"] == pytest.approx(989.4 / 20)


def test_ranking_is_deterministic_on_ties(cat):
    df = pick(cat, PickerFilter(precision="bf16"))
    # H100 SXM and H200 SXM share 989.4: ties break by id
    tied = [i for i in df["id"] if i in ("h100-sxm5-80gb", "h200-sxm-141gb")]
    assert tied == ["h100-sxm5-80gb", "h200-sxm-141gb"]


def test_servers_for_sxm_and_pcie(cat):
    sxm = servers_for(cat, "h100-sxm5-80gb")
    assert {"dgx-h100", "generic-4u-hgx-8gpu"} <= set(sxm["id"])
    assert "generic-4u-8gpu-pcie" not in set(sxm["id"])
    pcie = servers_for(cat, "l40s")
    assert "generic-4u-8gpu-pcie" in set(pcie["id"]) and "dgx-h100" not in set(pcie["id"])


@pytest.mark.parametrize(("kw", "match"), [
    (dict(precision="fp4"), "precision: must be one of"),
    (dict(rank_by="speed"), "rank_by: must be one of"),
    (dict(min_memory_gib=-1), "min_memory_gib: must be zero or more"),
    (dict(max_price_usd=0), "max_price_usd: must be a positive budget"),
])
def test_bad_filters(cat, kw, match):
    with pytest.raises(ScenarioError, match=match):
        pick(cat, PickerFilter(**kw))


def test_scatter_chart_encodes_the_picked_precision(cat):
    spec = accelerator_scatter(pick(cat, PickerFilter(precision="fp8")), "fp8", highlight="h100-sxm5-80gb").to_dict()
    layer = spec["layer"][0]
    assert layer["encoding"]["y"]["title"] == "Dense FP8 peak [TFLOP/s]"
    assert layer["encoding"]["size"]["field"] == "memory_gib"
    assert "FP8" in spec["title"]
