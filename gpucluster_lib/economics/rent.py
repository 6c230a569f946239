"""Rented capacity: a design that rents its accelerators instead of buying them.

``costs.purchase: rent`` prices the design as cloud capacity (``data/rent_prices.yaml``, each
price with its source and date; ``costs.rent_per_gpu_hour`` overrides):

    cost per year = GPUs x price per GPU-hour x 8,760 h x u

with u = ``costs.load_fraction`` for on-demand capacity (paid per hour used) and u = 1 for a
reserved term (``costs.rent_term: reserved``: every hour of the term is paid). The rental
price includes the provider's hardware, network, storage, power, cooling and space, so the
design has no CapEx, energy or maintenance of its own; the carbon of the energy it uses is
still counted (the provider's hall draws it).

Cloud-only accelerators (``cloud_only`` in the price file: Google's TPUs are rented on Google
Cloud, not sold) cannot be bought: such a design must rent, with a clear message otherwise.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from gpucluster_lib.errors import ScenarioError
from gpucluster_lib.resources import data_path, load_yaml
from gpucluster_lib.units import HOURS_PER_YEAR

RENT_PRICES_PATH = data_path("rent_prices.yaml")
#: form factors that are never sold as parts or systems (catalogue accelerators.csv)
CLOUD_ONLY_FORM_FACTORS = ("TPU",)


@lru_cache(maxsize=2)
def load_rent_prices(path: str | None = None) -> dict[str, Any]:
    """``data/rent_prices.yaml``: {accelerator id: {cloud_only, on_demand, reserved}}."""
    with open(path or RENT_PRICES_PATH, encoding="utf-8") as fh:
        return load_yaml(fh) or {}


def is_cloud_only(acc: dict[str, Any]) -> bool:
    """Whether an accelerator is only rented (a TPU, or ``cloud_only`` in the price file)."""
    entry = load_rent_prices().get(acc["id"], {})
    return bool(entry.get("cloud_only")) or acc.get("form_factor") in CLOUD_ONLY_FORM_FACTORS


def require_purchasable(acc: dict[str, Any], purchase: str) -> None:
    """Refuse to buy a cloud-only accelerator, naming the field and the fix."""
    if purchase == "buy" and is_cloud_only(acc):
        raise ScenarioError("costs.purchase",
                            f"{acc['name']} ({acc['id']}) is not sold: it is rented as cloud capacity (Google "
                            "Cloud TPUs). Set costs.purchase to rent (and costs.rent_term to on-demand or "
                            "reserved), or pick an accelerator that can be bought")


def rent_price(acc_id: str, term: str, override: float | None = None) -> tuple[float, str]:
    """(price per GPU-hour [USD], source with date) for ``term`` ("on-demand" / "reserved")."""
    if override is not None:
        return float(override), "scenario costs.rent_per_gpu_hour"
    key = "on_demand" if term == "on-demand" else "reserved"
    entry = load_rent_prices().get(acc_id, {}).get(key)
    if not entry:
        have = [t.replace("_", "-") for t in ("on_demand", "reserved") if load_rent_prices().get(acc_id, {}).get(t)]
        hint = f"; the price file has {', '.join(have)} for it" if have else ""
        raise ScenarioError("costs.rent_per_gpu_hour",
                            f"no {term} rental price for {acc_id} in rent_prices.yaml{hint}: set "
                            "costs.rent_per_gpu_hour (USD per GPU-hour) or another costs.rent_term")
    term_txt = f", {entry['term']}" if entry.get("term") else ""
    return float(entry["value"]), f"{entry['source']}{term_txt} ({entry['date']})"


def rent_per_year(gpus: int, price_per_gpu_hour: float, term: str, load_fraction: float = 1.0) -> float:
    """Rental cost per year [USD] = GPUs x price x 8,760 h x (load fraction if on-demand, else 1)."""
    if gpus < 0 or price_per_gpu_hour < 0:
        raise ScenarioError("costs.rent_per_gpu_hour", "prices and GPU counts must not be negative")
    use = load_fraction if term == "on-demand" else 1.0
    return gpus * price_per_gpu_hour * HOURS_PER_YEAR * use
