"""Rented capacity: per-GPU-hour prices with source and date, on-demand and reserved, TPUs rent-only."""

import pytest

from gpucluster_lib import design
from gpucluster_lib.economics.rent import load_rent_prices, rent_per_year, rent_price
from gpucluster_lib.errors import GpuClusterError, ScenarioError
from gpucluster_lib.scenario import from_dict

TPU = {"hardware": {"accelerator": "tpu-v5p", "gpus_per_node": 4, "nodes": 16}}


def test_price_file_has_sources_and_dates():
    prices = load_rent_prices()
    for acc, entry in prices.items():
        for term in ("on_demand", "reserved"):
            if term in entry:
                assert entry[term]["value"] > 0 and entry[term]["source"] and entry[term]["date"], (acc, term)
    for tpu in ("tpu-v4", "tpu-v5e", "tpu-v5p"):
        assert prices[tpu]["cloud_only"] is True


def test_rent_arithmetic_by_hand():
    assert rent_per_year(64, 4.20, "on-demand") == pytest.approx(64 * 4.20 * 8760)  # = 2,354,688
    assert rent_per_year(64, 4.20, "on-demand", 0.5) == pytest.approx(1_177_344)   # half the hours used
    assert rent_per_year(64, 2.94, "reserved", 0.5) == pytest.approx(64 * 2.94 * 8760)  # every hour paid
    price, src = rent_price("tpu-v5p", "reserved")
    assert price == 2.94 and "1-year" in src and "2024-06" in src  # Google Cloud TPU pricing page
    assert rent_price("h100-sxm5-80gb", "on-demand")[0] == pytest.approx(98.32 / 8)  # AWS p5.48xlarge / 8 GPUs
    assert rent_price("tpu-v5p", "on-demand", override=3.0) == (3.0, "scenario costs.rent_per_gpu_hour")
    with pytest.raises(ScenarioError, match=r"costs\.rent_per_gpu_hour: no reserved rental price for tpu-v4"):
        rent_price("tpu-v4", "reserved")


def test_tpu_is_rent_only():
    with pytest.raises(ScenarioError, match=r"costs\.purchase: Google TPU v5p .* is not sold: it is rented"):
        _ = design(from_dict(TPU)).cost
    c = design(from_dict({**TPU, "costs": {"purchase": "rent"}})).cost
    assert c.capex["total"] == 0 and c.nodes_bought == 0
    assert c.opex_per_year["rent"] == pytest.approx(64 * 4.20 * 8760)  # 64 chips on demand
    assert c.tco == pytest.approx(4 * 64 * 4.20 * 8760)                 # 4 years (costs.years default)
    assert c.cost_per_gpu_hour == pytest.approx(4.20)
    assert "cloud.google.com/tpu/pricing" in c.price_sources["rent"]
    assert c.to_dict()["purchase"] == "rent" and c.to_dict()["rent_term"] == "on-demand"


def test_reserved_term_pays_idle_hours():
    c = design(from_dict({**TPU, "costs": {"purchase": "rent", "rent_term": "reserved", "load_fraction": 0.5}})).cost
    assert c.opex_per_year["total"] == pytest.approx(64 * 2.94 * 8760)
    assert c.cost_per_gpu_hour == pytest.approx(2.94 / 0.5)  # per GPU-hour used


def test_rent_an_h100_cluster_instead_of_buying():
    s = from_dict({"hardware": {"server": "dgx-h100", "nodes": 4}, "costs": {"purchase": "rent"}})
    c = design(s).cost
    assert c.capex["total"] == 0 and c.opex_per_year["rent"] == pytest.approx(32 * 12.29 * 8760)
    bought = design(s.replace(costs__purchase="buy")).cost
    assert bought.capex["total"] > 0
    with pytest.raises(GpuClusterError, match="costs.rent_term"):
        from_dict({"costs": {"rent_term": "spot"}})
