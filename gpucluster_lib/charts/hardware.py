"""Charts for the hardware picker."""

from __future__ import annotations

import math
from functools import lru_cache

import altair as alt
import pandas as pd

from gpucluster_lib.charts import fill_slots, labels, vendor_scale, with_values

PRECISION_LABEL = {"int8": "TOP/s"}


def accelerator_scatter(df: pd.DataFrame, precision: str, highlight: str | None = None) -> alt.LayerChart:
    """Dense peak at ``precision`` against memory bandwidth; size = memory, colour = vendor.

    ``df`` is :func:`gpucluster_lib.hardware.picker.pick` output (needs ``peak_tflops``).
    Points are labelled with short names where a label fits without touching another label
    or point (:func:`gpucluster_lib.charts.labels.place_point_labels`: the picked part first,
    then the fastest); every point keeps its full name in the tooltip.
    """
    return alt.LayerChart.from_dict(accelerator_scatter_spec(df, precision, highlight), validate=False)


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


def _column(df: pd.DataFrame, name: str) -> list:
    """A column as JSON-ready Python values (NaN and NA as None), as :func:`records` gives them."""
    return [None if v is pd.NA or (isinstance(v, float) and math.isnan(v)) else v for v in df[name].tolist()]


def _decades(values: list) -> tuple[float, float]:
    """A log axis domain of whole decades around the positive ``values`` (missing ones skipped)."""
    v = [x for x in values if x is not None and x > 0]
    if not v:
        return (1.0, 10.0)
    lo, hi = math.floor(math.log10(min(v))), math.ceil(math.log10(max(v)))
    return (10.0 ** lo, 10.0 ** (hi if hi > lo else lo + 1))


def _layout_key(cols: dict[str, list]) -> tuple[tuple[float, float], tuple[float, float], float]:
    """(x domain, y domain, largest memory) that fix the chart's scales."""
    mems = [float(m) for m in cols["memory_gib"] if m is not None]
    mem = max(mems) if mems else 1.0
    return (_decades(cols["memory_bandwidth_gb_per_s"]), _decades(cols["peak_tflops"]),
            float(32 * math.ceil(max(mem, 1.0) / 32)))


def _scatter_rows(df: pd.DataFrame, highlight: str | None) -> tuple[list[dict], tuple]:
    """The chart's rows (the picker's columns, ``picked``, the short ``label`` and where it goes)
    and the layout key, read from the columns as Python values (no DataFrame per call)."""
    cols = {c: _column(df, c) for c in SCATTER_COLUMNS}
    n = len(df)
    ids = cols["id"]
    picked = [i == highlight for i in ids]
    names = [short_name(str(nm), str(v)) for nm, v in zip(cols["name"], cols["vendor"], strict=True)]
    key = _layout_key(cols)
    dom_x, dom_y, mem_max = key
    peak = [float("nan") if v is None else float(v) for v in cols["peak_tflops"]]
    bws = [float("nan") if v is None else float(v) for v in cols["memory_bandwidth_gb_per_s"]]
    mems = [float("nan") if v is None else float(v) for v in cols["memory_gib"]]
    order = sorted(range(n), key=lambda i: (not picked[i], -peak[i], str(ids[i])))
    pts, texts = [], []
    for i in order:
        area = SIZE_RANGE[0] + (SIZE_RANGE[1] - SIZE_RANGE[0]) * min(max(mems[i], 0.0), mem_max) / mem_max
        ok = bws[i] > 0 and peak[i] > 0
        pts.append((labels.log_pixel(bws[i], dom_x, WIDTH) if ok else -1e9,
                    labels.log_pixel(peak[i], dom_y, HEIGHT, flip=True) if ok else -1e9, math.sqrt(area / math.pi)))
        texts.append(str(names[i]))
    spots = labels.place_point_labels(pts, texts, WIDTH, HEIGHT, LABEL_FONT)
    lx: list[float | None] = [None] * n
    ly: list[float | None] = [None] * n
    for i, spot in zip(order, spots, strict=True):
        if spot is not None:
            lx[i] = labels.log_value(spot[0], dom_x, WIDTH)
            ly[i] = labels.log_value(spot[1], dom_y, HEIGHT, flip=True)
    rows = [{**{c: cols[c][i] for c in SCATTER_COLUMNS}, "picked": picked[i], "label": names[i],
             "label_x": lx[i], "label_y": ly[i]} for i in range(n)]
    return rows, key


def _scatter(data: pd.DataFrame, y_title: str, peak_title: str, title: str, vendors: tuple[str, ...],
             dom_x: tuple[float, float], dom_y: tuple[float, float], mem_max: float) -> alt.Chart:
    xs = alt.Scale(type="log", domain=list(dom_x), nice=False)
    ys = alt.Scale(type="log", domain=list(dom_y), nice=False)
    base = alt.Chart(data).encode(
        x=alt.X("memory_bandwidth_gb_per_s:Q", title="Memory bandwidth [GB/s]", scale=xs),
        y=alt.Y("peak_tflops:Q", title=y_title, scale=ys),
    )
    points = base.mark_circle(opacity=0.8, stroke="black").encode(
        size=alt.Size("memory_gib:Q", title="Memory [GiB]",
                      scale=alt.Scale(domain=[0, mem_max], range=list(SIZE_RANGE), clamp=True)),
        color=alt.Color("vendor:N", title="Vendor", scale=vendor_scale(list(vendors))),
        strokeWidth=alt.condition("datum.picked", alt.value(2.5), alt.value(0)),
        tooltip=[
            alt.Tooltip("name:N", title="Accelerator"),
            alt.Tooltip("peak_tflops:Q", title=peak_title, format=",.1f"),
            alt.Tooltip("memory_gib:Q", title="Memory [GiB]"),
            alt.Tooltip("memory_bandwidth_gb_per_s:Q", title="Bandwidth [GB/s]", format=",.0f"),
            alt.Tooltip("tdp_w:Q", title="TDP [W]"),
            alt.Tooltip("price_usd_estimate:Q", title="Price estimate [USD]", format=",.0f"),
        ],
    )
    names = alt.Chart(data).mark_text(align="left", baseline="middle", fontSize=LABEL_FONT).encode(
        x=alt.X("label_x:Q", scale=xs), y=alt.Y("label_y:Q", scale=ys), text="label:N",
    ).transform_filter("datum.label_x != null")
    return (points + names).properties(width=WIDTH, height=HEIGHT, title=title)


def _titles(precision: str) -> tuple[str, str, str]:
    """(y axis, peak tooltip, chart) titles for ``precision``."""
    unit = PRECISION_LABEL.get(precision, "TFLOP/s")
    p = precision.upper()
    return f"Dense {p} peak [{unit}]", f"{p} [{unit}]", f"Accelerators: dense {p} peak vs memory bandwidth"


#: stand-ins compiled into the one layout per vendor set (titles, then the x and y domains and the
#: largest memory), each replaced by the chart's own value: no altair compile per precision or scale
_SLOTS = ("\x00y-title", "\x00peak-title", "\x00title", 1.0e-301, 2.0e-301, 3.0e-301, 4.0e-301, 5.0e-301)


@lru_cache(maxsize=16)
def _scatter_template(vendors: tuple[str, ...]) -> dict:
    empty = pd.DataFrame({c: [] for c in [*SCATTER_COLUMNS, "picked", "label", "label_x", "label_y"]})
    t1, t2, t3, x0, x1, y0, y1, mem = _SLOTS
    return _scatter(empty, t1, t2, t3, vendors, (x0, x1), (y0, y1), mem).to_dict()


def accelerator_scatter_spec(df: pd.DataFrame, precision: str, highlight: str | None = None,
                             vendors: tuple[str, ...] | None = None) -> dict:
    """The compiled Vega-Lite spec of :func:`accelerator_scatter`, fast: the layout is compiled once
    per vendor set, its titles and scales filled in, its data swapped.

    ``vendors`` fixes the colour domain (default: the vendors in ``df``).
    """
    vendors = vendors or tuple(sorted(set(df["vendor"])))
    rows, (dom_x, dom_y, mem_max) = _scatter_rows(df, highlight)
    filled = fill_slots(_scatter_template(vendors), dict(zip(_SLOTS, (*_titles(precision), *dom_x, *dom_y, mem_max),
                                                        strict=True)))
    return with_values(filled, rows)
