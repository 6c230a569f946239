"""Explore charts: a sweep's Pareto front with tooltips, and designs compared on one shared axis.

Functions take plain tables (a sweep's result table, a comparison's ``to_dict()``) and return
``alt.Chart``. Column names of the result tables hold dots (``facility.racks``), which vega
reads as nested fields, so the chart data uses plain column names and keeps the human labels
as titles. The specs are built once per layout; :func:`gpucluster_lib.charts.with_values`
swaps the data of an update.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import altair as alt
import pandas as pd

from gpucluster_lib.formatting import humanize_key

#: The selection a click on a point makes (the app reads ``selections.pick``).
PICK = "pick"


def _title(key: str, labels: Mapping[str, tuple[str, str]]) -> str:
    """A column's words: its label and unit, or a scenario key in words (``Facility: PUE``)."""
    if key not in labels:
        return humanize_key(key)
    label, unit = labels[key]
    return f"{label} ({unit})" if unit else label


def pareto_data(table: pd.DataFrame, x: str, y: str, front: Sequence[bool], *, color: str | None = None,
                extra: Sequence[str] = ()) -> pd.DataFrame:
    """The chart data of :func:`pareto_chart`: point, x, y, colour, on_front, t0.. (tooltips)."""
    out = pd.DataFrame({"point": table["point"].astype(int).to_numpy(),
                        "x": pd.to_numeric(table[x], errors="coerce").to_numpy(),
                        "y": pd.to_numeric(table[y], errors="coerce").to_numpy(),
                        "on_front": ["on the front" if f else "dominated" for f in front]})
    out["colour"] = table[color].astype(str).to_numpy() if color else out["on_front"]
    for i, k in enumerate(extra):
        out[f"t{i}"] = table[k].to_numpy()
    return out


def pareto_chart(table: pd.DataFrame, x: str, y: str, front: Sequence[bool], *, senses: Mapping[str, str],
                 labels: Mapping[str, tuple[str, str]], color: str | None = None, extra: Sequence[str] = (),
                 title: str = "") -> alt.LayerChart:
    """Every feasible design as a point (x against y), the non-dominated ones joined by a line.

    ``front`` marks the Pareto rows; ``senses`` gives min or max per axis (the axis titles say
    which way is better); ``extra`` are more columns for the tooltip (axes of the sweep). A click
    on a point selects it (selection ``pick`` on the field ``point``).
    """
    data = pareto_data(table, x, y, front, color=color, extra=extra)
    return _pareto(data, *_pareto_titles(x, y, senses, labels, color, extra, title), has_colour=bool(color))


def _pareto_titles(x: str, y: str, senses: Mapping[str, str], labels: Mapping[str, tuple[str, str]],
                   color: str | None, extra: Sequence[str], title: str) -> tuple:
    """(x axis, y axis, x tooltip, y tooltip, colour, chart title, the extra tooltips' titles)."""
    better = {"min": "lower is better", "max": "higher is better"}
    xt = f"{_title(x, labels)}, {better.get(senses.get(x, ''), '')}".rstrip(", ")
    yt = f"{_title(y, labels)}, {better.get(senses.get(y, ''), '')}".rstrip(", ")
    return (xt, yt, _title(x, labels), _title(y, labels), _title(color, labels) if color else None,
            title or "Pareto front", tuple(_title(k, labels) for k in extra))


def _pareto(data: pd.DataFrame, xt: str, yt: str, x_tip: str, y_tip: str, colour_title: str | None, title: str,
            extra_tips: Sequence[str], *, has_colour: bool) -> alt.LayerChart:
    pick = alt.selection_point(name=PICK, fields=["point"], on="click", clear="dblclick")
    tips = [alt.Tooltip("point:Q", title="Point"), alt.Tooltip("x:Q", title=x_tip, format=",.4~g"),
            alt.Tooltip("y:Q", title=y_tip, format=",.4~g")]
    tips += [alt.Tooltip(f"t{i}", title=t) for i, t in enumerate(extra_tips)]
    base = alt.Chart(data)
    if has_colour:
        colour = alt.Color("colour:N", title=colour_title)
    else:
        colour = alt.Color("colour:N", title=None, scale=alt.Scale(domain=["on the front", "dominated"],
                                                                   range=["#d62728", "#9e9e9e"]))
    points = base.mark_point(filled=True, size=70).encode(
        x=alt.X("x:Q", title=xt, scale=alt.Scale(zero=False)),
        y=alt.Y("y:Q", title=yt, scale=alt.Scale(zero=False)),
        color=colour,
        shape=alt.Shape("on_front:N", title=None, scale=alt.Scale(domain=["on the front", "dominated"],
                                                                 range=["diamond", "circle"])),
        opacity=alt.condition(pick, alt.value(1.0), alt.value(0.35)),
        tooltip=tips,
    ).add_params(pick)
    line = base.transform_filter(alt.datum.on_front == "on the front").mark_line(color="#d62728", strokeDash=[4, 3]) \
        .encode(x="x:Q", y="y:Q", order="x:Q")
    return alt.layer(line, points).properties(width=520, height=320, title=title)


_PARETO_TEMPLATES: dict[tuple, dict] = {}


def pareto_spec(table: pd.DataFrame, x: str, y: str, front: Sequence[bool], *, senses: Mapping[str, str],
                labels: Mapping[str, tuple[str, str]], color: str | None = None, extra: Sequence[str] = (),
                title: str = "") -> dict:
    """The Vega-Lite spec of :func:`pareto_chart`, fast: compiled once per layout (a colour column or
    not, the kinds of the tooltip columns) with stand-in titles, then titles filled in and rows swapped.
    The selection ``pick`` is the same in every layout, so a chart on screen can take a new spec."""
    from altair.utils.core import infer_vegalite_type_for_pandas

    from gpucluster_lib.charts import fill_slots, records, with_values

    data = pareto_data(table, x, y, front, color=color, extra=extra)
    kinds = tuple(str(infer_vegalite_type_for_pandas(data[f"t{i}"])) for i in range(len(extra)))
    key = (bool(color), kinds)
    slots = ("\x00pareto-xt", "\x00pareto-yt", "\x00pareto-x", "\x00pareto-y", "\x00pareto-colour",
             "\x00pareto-title", tuple(f"\x00pareto-t{i}" for i in range(len(extra))))
    spec = _PARETO_TEMPLATES.get(key)
    if spec is None:  # compiled from this data: the tooltip columns' types are inferred from it
        spec = _PARETO_TEMPLATES[key] = _pareto(data, *slots, has_colour=bool(color)).to_dict()
    titles = _pareto_titles(x, y, senses, labels, color, extra, title)
    values = dict(zip(slots[:6], titles[:6], strict=True)) | dict(zip(slots[6], titles[6], strict=True))
    return with_values(fill_slots(spec, values), records(data))


def compare_data(comparison: Mapping[str, Any], keys: Sequence[str] | None = None) -> pd.DataFrame:
    """One row per (figure, design): the value and its ratio to the first design."""
    rows = []
    for r in comparison["rows"]:
        if keys is not None and r["key"] not in keys:
            continue
        vals = r["values"]
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals if v is not None):
            continue
        base = vals[0]
        for i, (name, v) in enumerate(zip(comparison["designs"], vals, strict=True)):
            ratio = v / base if v is not None and base not in (None, 0) else None
            rows.append({"figure": f"{r['label']} ({r['unit']})" if r["unit"] else r["label"], "design": name,
                         "value": v, "ratio": None if ratio is None or not math.isfinite(ratio) else ratio,
                         "better": "better" if i in r["best"] else "", "order": len(rows)})
    return pd.DataFrame(rows, columns=["figure", "design", "value", "ratio", "better", "order"])


def compare_chart(comparison: Mapping[str, Any], keys: Sequence[str] | None = None) -> alt.Chart:
    """Each figure of the designs as bars on one shared axis: the ratio to the first design (1 = the same)."""
    data = compare_data(comparison, keys)
    first = comparison["designs"][0]
    return alt.Chart(data).mark_bar().encode(
        y=alt.Y("figure:N", sort=alt.SortField("order"), title=None),
        yOffset=alt.YOffset("design:N", sort=list(comparison["designs"])),
        x=alt.X("ratio:Q", title=f"Relative to {first} (1 = the same)"),
        color=alt.Color("design:N", sort=list(comparison["designs"]), title=None),
        stroke=alt.condition(alt.datum.better == "better", alt.value("black"), alt.value(None)),
        tooltip=[alt.Tooltip("figure:N", title="Figure"), alt.Tooltip("design:N", title="Design"),
                 alt.Tooltip("value:Q", title="Value", format=",.4~g"),
                 alt.Tooltip("ratio:Q", title="Relative", format=".3f"), alt.Tooltip("better:N", title=" ")],
    ).properties(width=460, title="Side by side, relative to the first design (outlined: the better value)")
