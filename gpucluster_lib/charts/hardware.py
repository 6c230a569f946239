"""Charts for the hardware picker."""

from __future__ import annotations

import math
from functools import lru_cache

import altair as alt
import pandas as pd

from gpucluster_lib.charts import labels, records, vendor_scale, with_values

PRECISION_LABEL = {"int8": "TOP/s"}


def accelerator_scatter(df: pd.DataFrame, precision: str, highlight: str | None = None) -> alt.LayerChart:
    """Dense peak at ``precision`` against memory bandwidth; size = memory, colour = vendor.

    ``df`` is :func:`gpucluster_lib.hardware.picker.pick` output (needs ``peak_tflops``).
    Points are labelled with short names where a label fits without touching another label
    or point (:func:`gpucluster_lib.charts.labels.place_point_labels`: the picked part first,
    then the fastest); every point keeps its full name in the tooltip.
    """
    data = _scatter_data(df, highlight)
    return alt.LayerChart.from_dict(with_values(_scatter_template(precision, tuple(sorted(set(df["vendor"]))),
                                                             *_layout_key(df)), records(data)), validate=False)


SCATTER_COLUMNS = ["id", "name", "vendor", "form_factor", "memory_gib", "memory_bandwidth_gb_per_s",
                   "peak_tflops", "tdp_w", "price_usd_estimate"]
#: plot area [px] and the point areas [px²] of the size scale (memory from 0 to its maximum)
WIDTH, HEIGHT, SIZE_RANGE = 560, 360, (40, 900)
LABEL_FONT = 10


def short_name(name: str, vendor: str) -> str:
    """The catalogue name without the vendor and the bracketed note: "H100 SXM5 80GB"."""
    text = name.split(" (")[0]
    first = vendor.split()[0] if vendor else ""
    if first and text.startswith(first + " "):
        text = text[len(first) + 1:]
    return text


def _decades(values: pd.Series) -> tuple[float, float]:
    """A log axis domain of whole decades around the positive ``values``."""
    v = values[values > 0]
    if v.empty:
        return (1.0, 10.0)
    lo, hi = math.floor(math.log10(v.min())), math.ceil(math.log10(v.max()))
    return (10.0 ** lo, 10.0 ** (hi if hi > lo else lo + 1))


def _layout_key(df: pd.DataFrame) -> tuple[tuple[float, float], tuple[float, float], float]:
    """(x domain, y domain, largest memory) that fix the chart's scales (and its cached layout)."""
    mem = float(df["memory_gib"].max()) if len(df) else 1.0
    return (_decades(df["memory_bandwidth_gb_per_s"]), _decades(df["peak_tflops"]),
            float(32 * math.ceil(max(mem, 1.0) / 32)))


def _scatter_data(df: pd.DataFrame, highlight: str | None) -> pd.DataFrame:
    data = df[SCATTER_COLUMNS].copy()
    data["picked"] = data["id"] == highlight
    data["label"] = [short_name(str(n), str(v)) for n, v in zip(data["name"], data["vendor"], strict=True)]
    dom_x, dom_y, mem_max = _layout_key(df)
    picked, peak = data["picked"].tolist(), [float(v) for v in data["peak_tflops"]]
    bws, mems, ids = [float(v) for v in data["memory_bandwidth_gb_per_s"]], [float(v) for v in data["memory_gib"]], \
        data["id"].tolist()
    names = data["label"].tolist()
    order = sorted(range(len(data)), key=lambda i: (not picked[i], -peak[i], str(ids[i])))
    pts, texts = [], []
    for i in order:
        area = SIZE_RANGE[0] + (SIZE_RANGE[1] - SIZE_RANGE[0]) * min(max(mems[i], 0.0), mem_max) / mem_max
        ok = bws[i] > 0 and peak[i] > 0
        pts.append((labels.log_pixel(bws[i], dom_x, WIDTH) if ok else -1e9,
                    labels.log_pixel(peak[i], dom_y, HEIGHT, flip=True) if ok else -1e9, math.sqrt(area / math.pi)))
        texts.append(str(names[i]))
    spots = labels.place_point_labels(pts, texts, WIDTH, HEIGHT, LABEL_FONT)
    lx: list[float | None] = [None] * len(data)
    ly: list[float | None] = [None] * len(data)
    for i, spot in zip(order, spots, strict=True):
        if spot is not None:
            lx[i] = labels.log_value(spot[0], dom_x, WIDTH)
            ly[i] = labels.log_value(spot[1], dom_y, HEIGHT, flip=True)
    data["label_x"], data["label_y"] = lx, ly
    return data


def _scatter(data: pd.DataFrame, precision: str, vendors: tuple[str, ...], dom_x: tuple[float, float],
             dom_y: tuple[float, float], mem_max: float) -> alt.Chart:
    unit = PRECISION_LABEL.get(precision, "TFLOP/s")
    xs = alt.Scale(type="log", domain=list(dom_x), nice=False)
    ys = alt.Scale(type="log", domain=list(dom_y), nice=False)
    base = alt.Chart(data).encode(
        x=alt.X("memory_bandwidth_gb_per_s:Q", title="Memory bandwidth [GB/s]", scale=xs),
        y=alt.Y("peak_tflops:Q", title=f"Dense {precision.upper()} peak [{unit}]", scale=ys),
    )
    points = base.mark_circle(opacity=0.8, stroke="black").encode(
        size=alt.Size("memory_gib:Q", title="Memory [GiB]",
                      scale=alt.Scale(domain=[0, mem_max], range=list(SIZE_RANGE), clamp=True)),
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
    names = alt.Chart(data).mark_text(align="left", baseline="middle", fontSize=LABEL_FONT).encode(
        x=alt.X("label_x:Q", scale=xs), y=alt.Y("label_y:Q", scale=ys), text="label:N",
    ).transform_filter("datum.label_x != null")
    return (points + names).properties(
        width=WIDTH, height=HEIGHT, title=f"Accelerators: dense {precision.upper()} peak vs memory bandwidth"
    )


@lru_cache(maxsize=64)
def _scatter_template(precision: str, vendors: tuple[str, ...], dom_x: tuple[float, float],
                      dom_y: tuple[float, float], mem_max: float) -> dict:
    empty = pd.DataFrame({c: [] for c in [*SCATTER_COLUMNS, "picked", "label", "label_x", "label_y"]})
    return _scatter(empty, precision, vendors, dom_x, dom_y, mem_max).to_dict()


def accelerator_scatter_spec(df: pd.DataFrame, precision: str, highlight: str | None = None,
                             vendors: tuple[str, ...] | None = None) -> dict:
    """The compiled Vega-Lite spec of :func:`accelerator_scatter`, fast (layout cached, data swapped).

    ``vendors`` fixes the colour domain (default: the vendors in ``df``).
    """
    vendors = vendors or tuple(sorted(set(df["vendor"])))
    return with_values(_scatter_template(precision, vendors, *_layout_key(df)), records(_scatter_data(df, highlight)))
