"""Charts for the hardware picker."""

from __future__ import annotations

from functools import lru_cache

import altair as alt
import pandas as pd

from gpucluster_lib.charts import records, vendor_scale, with_values

PRECISION_LABEL = {"int8": "TOP/s"}


def accelerator_scatter(df: pd.DataFrame, precision: str, highlight: str | None = None) -> alt.Chart:
    """Dense peak at ``precision`` against memory bandwidth; size = memory, colour = vendor.

    ``df`` is :func:`gpucluster_lib.hardware.picker.pick` output (needs ``peak_tflops``).
    """
    return _scatter(_scatter_data(df, highlight), precision, tuple(sorted(set(df["vendor"]))))


SCATTER_COLUMNS = ["id", "name", "vendor", "form_factor", "memory_gib", "memory_bandwidth_gb_per_s",
                   "peak_tflops", "tdp_w", "price_usd_estimate"]


def _scatter_data(df: pd.DataFrame, highlight: str | None) -> pd.DataFrame:
    data = df[SCATTER_COLUMNS].copy()
    data["picked"] = data["id"] == highlight
    return data


def _scatter(data: pd.DataFrame, precision: str, vendors: tuple[str, ...]) -> alt.Chart:
    unit = PRECISION_LABEL.get(precision, "TFLOP/s")
    base = alt.Chart(data).encode(
        x=alt.X("memory_bandwidth_gb_per_s:Q", title="Memory bandwidth [GB/s]", scale=alt.Scale(type="log")),
        y=alt.Y("peak_tflops:Q", title=f"Dense {precision.upper()} peak [{unit}]", scale=alt.Scale(type="log")),
    )
    points = base.mark_circle(opacity=0.8, stroke="black").encode(
        size=alt.Size("memory_gib:Q", title="Memory [GiB]", scale=alt.Scale(range=[40, 900])),
        color=alt.Color("vendor:N", title="Vendor", scale=vendor_scale(list(vendors))),
        strokeWidth=alt.condition("datum.picked", alt.value(2.5), alt.value(0)),
        tooltip=[
            alt.Tooltip("name:N", title="Accelerator"),
            alt.Tooltip("peak_tflops:Q", title=f"{precision.upper()} [{unit}]", format=",.1f"),
            alt.Tooltip("memory_gib:Q", title="Memory [GiB]"),
            alt.Tooltip("memory_bandwidth_gb_per_s:Q", title="Bandwidth [GB/s]", format=",.0f"),
            alt.Tooltip("tdp_w:Q", title="TDP [W]"),
            alt.Tooltip("price_usd_estimate:Q", title="Price estimate [USD]", format=",.0f"),
        ],
    )
    labels = base.mark_text(align="left", dx=8, dy=-6, fontSize=10).encode(text="id:N")
    return (points + labels).properties(
        width=560, height=360, title=f"Accelerators: dense {precision.upper()} peak vs memory bandwidth"
    )


@lru_cache(maxsize=64)
def _scatter_template(precision: str, vendors: tuple[str, ...]) -> dict:
    empty = pd.DataFrame({c: [] for c in [*SCATTER_COLUMNS, "picked"]})
    return _scatter(empty, precision, vendors).to_dict()


def accelerator_scatter_spec(df: pd.DataFrame, precision: str, highlight: str | None = None,
                             vendors: tuple[str, ...] | None = None) -> dict:
    """The compiled Vega-Lite spec of :func:`accelerator_scatter`, fast (layout cached, data swapped).

    ``vendors`` fixes the colour domain (default: the vendors in ``df``).
    """
    vendors = vendors or tuple(sorted(set(df["vendor"])))
    return with_values(_scatter_template(precision, vendors), records(_scatter_data(df, highlight)))
