"""Hardware picker: filter and rank accelerators, find the servers that carry one.

Pure functions over the catalogue's ``accelerators`` and ``servers`` tables.
Ranking metrics are derived columns with units in their names:

``peak_tflops``            dense peak at the chosen precision [TFLOP/s or TOP/s for int8]
``tflops_per_w``           peak / TDP [TFLOP/s per W]
``tflops_per_kusd``        peak / indicative price [TFLOP/s per 1000 USD]
``memory_gib_per_kusd``    memory / indicative price [GiB per 1000 USD]
``bandwidth_per_tflop``    memory bandwidth / peak [GB/s per TFLOP/s]: how memory-bound work fares

Prices are the catalogue's indicative estimates (``price_usd_estimate``, with source
and date), which the user can override.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from gpucluster_lib.catalog import PRECISION_COLUMNS, Catalog
from gpucluster_lib.errors import ScenarioError, one_of, yaml_value

RANKINGS: dict[str, str] = {
    "peak TFLOP/s": "peak_tflops",
    "TFLOP/s per watt": "tflops_per_w",
    "TFLOP/s per $1000": "tflops_per_kusd",
    "memory GiB per $1000": "memory_gib_per_kusd",
    "memory bandwidth": "memory_bandwidth_gb_per_s",
    "memory": "memory_gib",
}


@dataclass(frozen=True)
class PickerFilter:
    """What the user asks for. Empty tuples mean "any"."""

    precision: str = "bf16"
    min_memory_gib: float = 0.0
    vendors: tuple[str, ...] = ()
    form_factors: tuple[str, ...] = ()
    max_price_usd: float | None = None
    rank_by: str = "peak TFLOP/s"
    price_overrides: dict[str, float] = field(default_factory=dict)

    def validate(self) -> None:
        if self.precision not in PRECISION_COLUMNS:
            raise ScenarioError("precision", f"must be one of {one_of(PRECISION_COLUMNS)}, not {yaml_value(self.precision)}")
        if self.rank_by not in RANKINGS:
            raise ScenarioError("rank_by", f"must be one of {one_of(RANKINGS)}, not {yaml_value(self.rank_by)}")
        if self.min_memory_gib < 0:
            raise ScenarioError("min_memory_gib", f"must be zero or more, got {self.min_memory_gib}")
        if self.max_price_usd is not None and self.max_price_usd <= 0:
            raise ScenarioError("max_price_usd", f"must be a positive budget, got {self.max_price_usd}")


def with_metrics(accelerators: pd.DataFrame, precision: str = "bf16",
                 price_overrides: dict[str, float] | None = None) -> pd.DataFrame:
    """The accelerator table plus the derived ranking columns for ``precision``."""
    df = accelerators.copy()
    if price_overrides:
        for id_, price in price_overrides.items():
            df.loc[df["id"] == id_, "price_usd_estimate"] = float(price)
    peak = df[PRECISION_COLUMNS[precision]].astype("float64")
    price = df["price_usd_estimate"].astype("float64")
    df["peak_tflops"] = peak
    df["tflops_per_w"] = peak / df["tdp_w"]
    df["tflops_per_kusd"] = peak / price * 1000
    df["memory_gib_per_kusd"] = df["memory_gib"] / price * 1000
    df["bandwidth_per_tflop"] = df["memory_bandwidth_gb_per_s"] / peak
    return df


def pick(catalog: Catalog, flt: PickerFilter) -> pd.DataFrame:
    """Accelerators that meet the filter, best first by ``flt.rank_by``.

    Parts without a figure at the chosen precision are dropped (they cannot run it);
    rows without a price are kept unless a budget is set. Ties break on id, so the
    order is deterministic.
    """
    flt.validate()
    df = with_metrics(catalog.tables["accelerators"], flt.precision, flt.price_overrides)
    keep = df["peak_tflops"].notna() & (df["memory_gib"] >= flt.min_memory_gib)
    if flt.vendors:
        keep &= df["vendor"].isin(flt.vendors)
    if flt.form_factors:
        keep &= df["form_factor"].isin(flt.form_factors)
    if flt.max_price_usd is not None:
        keep &= df["price_usd_estimate"].notna() & (df["price_usd_estimate"] <= flt.max_price_usd)
    out = df[keep]
    key = RANKINGS[flt.rank_by]
    out = out.assign(_rank=out[key].fillna(-np.inf)).sort_values(["_rank", "id"], ascending=[False, True])
    return out.drop(columns="_rank").reset_index(drop=True)


def servers_for(catalog: Catalog, accelerator_id: str) -> pd.DataFrame:
    """Complete systems that ship with ``accelerator_id``, and chassis that can take it.

    A chassis takes a PCIe card when the card's slot width fits
    (``max_gpu_slot_width_slots``) and an SXM/OAM module when it has the matching baseboard.
    """
    acc = catalog.accelerator(accelerator_id)
    servers = catalog.tables["servers"]
    systems = servers[servers["gpu_id"] == accelerator_id].assign(fit="ships with it")
    chassis = servers[servers["kind"] == "chassis"]
    if acc["form_factor"] == "PCIe":
        width = acc.get("slot_width_slots") or 2
        ok = (chassis["gpu_baseboard"] == "pcie") & (chassis["max_gpu_slot_width_slots"].fillna(2) >= width)
    elif acc["form_factor"] in ("SXM", "OAM"):
        ok = chassis["gpu_baseboard"] == acc["form_factor"].lower()
    else:
        ok = pd.Series(False, index=chassis.index)
    fits = chassis[ok].assign(fit="chassis to fill")
    return pd.concat([systems, fits]).reset_index(drop=True)


SUMMARY_COLUMNS = ["id", "vendor", "form_factor", "memory_gib", "memory_bandwidth_gb_per_s", "peak_tflops",
                   "tdp_w", "tflops_per_w", "price_usd_estimate", "launch_year"]
