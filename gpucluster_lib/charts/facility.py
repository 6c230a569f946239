"""Charts for the power, cooling and space budget.

Each chart has two forms: ``*_spec(...) -> dict`` (a Vega-Lite spec) and the
``alt.Chart`` built from it. The spec comes from a template validated by altair once
(per rack height) and cached; an update only swaps the named datasets and the title,
so a widget change costs about a millisecond instead of altair's ~50 ms schema
validation. Widgets set ``JupyterChart.spec`` with the dict; notebooks and reports use
the chart objects.
"""

from __future__ import annotations

import copy
from functools import lru_cache
from typing import Any

import altair as alt
import pandas as pd

from gpucluster_lib.charts import records
from gpucluster_lib.facility.site import Budget
from gpucluster_lib.formatting import plural

KIND_COLOURS = {"node": "#76b900", "switch": "#1f77b4", "head": "#9467bd", "storage": "#8c564b",
                "patch": "#bbbbbb", "empty": "#f4f4f4"}
BREAKDOWN_COLOURS = {"GPUs": "#76b900", "CPUs": "#ed7d31", "Memory": "#ffc000", "Network": "#1f77b4",
                     "Storage": "#8c564b", "Fans & other": "#a5a5a5", "Head nodes": "#9467bd",
                     "Cooling & power overhead (PUE)": "#d62728"}


def _records(df: pd.DataFrame) -> list[dict[str, Any]]:
    return records(df)  # NaN -> None: the spec stays valid JSON


def _fill(template: dict[str, Any], datasets: dict[str, pd.DataFrame], title: str | None = None) -> dict[str, Any]:
    spec = copy.deepcopy(template)
    spec["datasets"] = {name: _records(df) for name, df in datasets.items()}
    if title is not None:
        spec["title"] = title
    return spec


# --------------------------------------------------------------------------- rack elevation


#: rack drawing: width of the rack [px], where the side labels start [px], their font [px]
RACK_W_PX, SIDE_X_PX, LABEL_PX = 240, 252, 10
SIDE_W_PX = 230


def elevation_height_px(rack_units: int) -> int:
    """Height of the elevation drawing [px]: 9 px a unit, at least 300 px."""
    return max(300, 9 * rack_units)


def elevation_frame(b: Budget) -> pd.DataFrame:
    """The representative rack as rows (label, kind, bottom U, top U, power W, text) and where
    each label goes: inside its device when the box is tall and wide enough for it
    (``inside``), else in a column beside the rack at ``label_u`` (a leader line joins them;
    :func:`gpucluster_lib.charts.labels.dodge_labels`), or nowhere when the column is full
    (``side`` False: the device keeps its tooltip)."""
    from gpucluster_lib.charts.labels import dodge_labels, text_width_px

    height = elevation_height_px(b.rack_units)
    per_u = height / b.rack_units
    rows = []
    for it in b.elevation:
        kw = f", {it.power_w / 1000:,.1f} kW" if it.power_w else ""
        text = f"{it.label} ({it.height_u}U{kw})"
        fits = it.height_u * per_u >= LABEL_PX + 4 and text_width_px(text, LABEL_PX) <= RACK_W_PX - 8
        rows.append({"label": it.label, "kind": it.kind, "u0": it.bottom_u - 1, "u1": it.bottom_u - 1 + it.height_u,
                     "mid": it.bottom_u - 1 + it.height_u / 2, "units": it.height_u, "power_w": float(it.power_w),
                     "text": text, "inside": bool(fits), "side": False, "label_u": None})
    outside = [r for r in rows if not r["inside"]]
    ys = dodge_labels([height - r["mid"] * per_u for r in outside], height, LABEL_PX)
    for r, y in zip(outside, ys, strict=True):
        if y is not None:
            r["side"], r["label_u"] = True, (height - y) / per_u
    return pd.DataFrame(rows)


@lru_cache(maxsize=16)
def _elevation_template(rack_units: int) -> dict[str, Any]:
    kinds = list(KIND_COLOURS)
    scale = alt.Scale(domain=[0, rack_units], nice=False)
    y = alt.Y("u0:Q", title="Rack unit", scale=scale, axis=alt.Axis(values=list(range(0, rack_units + 1, 6)), grid=False))
    boxes = alt.Chart().mark_rect(stroke="#333333", strokeWidth=0.8).encode(
        y=y, y2="u1:Q", x=alt.value(0), x2=alt.value(RACK_W_PX),
        color=alt.Color("kind:N", title="Device", scale=alt.Scale(domain=kinds, range=list(KIND_COLOURS.values()))),
        tooltip=[alt.Tooltip("label:N", title="Device"), alt.Tooltip("units:Q", title="Height [U]"),
                 alt.Tooltip("power_w:Q", title="Peak [W]", format=",.0f")],
    )
    inside = alt.Chart().mark_text(fontSize=LABEL_PX, align="center", baseline="middle").encode(
        x=alt.value(RACK_W_PX / 2), y=alt.Y("mid:Q", scale=scale), text="text:N",
    ).transform_filter("datum.inside")
    leaders = alt.Chart().mark_rule(color="#777777", strokeWidth=0.6).encode(
        x=alt.value(RACK_W_PX), x2=alt.value(SIDE_X_PX - 3), y=alt.Y("mid:Q", scale=scale), y2="label_u:Q",
    ).transform_filter("datum.side")
    side = alt.Chart().mark_text(fontSize=LABEL_PX, align="left", baseline="middle").encode(
        x=alt.value(SIDE_X_PX), y=alt.Y("label_u:Q", scale=scale), text="text:N",
    ).transform_filter("datum.side")
    chart = alt.layer(boxes, inside, leaders, side, data=alt.Data(name="elevation")).properties(
        width=SIDE_X_PX + SIDE_W_PX, height=elevation_height_px(rack_units), title="rack")
    return chart.to_dict()


def rack_elevation_spec(b: Budget) -> dict[str, Any]:
    title = (f"{b.rack_units}U rack: {plural(min(b.nodes_per_rack, b.nodes), 'node')}, {b.rack_power_kw:,.1f} kW "
             f"(limit: {b.binding_constraint})")
    return _fill(_elevation_template(b.rack_units), {"elevation": elevation_frame(b)}, title)


def rack_elevation(b: Budget) -> alt.LayerChart:
    """Front elevation of one representative compute rack, U 1 at the bottom."""
    return alt.LayerChart.from_dict(rack_elevation_spec(b), validate=False)


# --------------------------------------------------------------------------- power breakdown


def breakdown_frame(b: Budget) -> pd.DataFrame:
    bd = b.breakdown_kw()
    total = sum(bd.values())
    return pd.DataFrame({"part": list(bd), "kw": [round(v, 3) for v in bd.values()],
                         "share": [v / total if total else 0.0 for v in bd.values()]})


@lru_cache(maxsize=1)
def _breakdown_template() -> dict[str, Any]:
    chart = alt.Chart(alt.Data(name="breakdown")).mark_bar().encode(
        y=alt.Y("part:N", title=None, sort=list(BREAKDOWN_COLOURS)),
        x=alt.X("kw:Q", title="Peak power [kW]"),
        color=alt.Color("part:N", legend=None, scale=alt.Scale(domain=list(BREAKDOWN_COLOURS),
                                                               range=list(BREAKDOWN_COLOURS.values()))),
        tooltip=[alt.Tooltip("part:N", title="Part"), alt.Tooltip("kw:Q", title="kW", format=",.2f"),
                 alt.Tooltip("share:Q", title="Share", format=".1%")],
    ).properties(width=360, height=200, title="breakdown")
    return chart.to_dict()


def power_breakdown_spec(b: Budget) -> dict[str, Any]:
    title = f"Facility power {b.facility_power_kw:,.1f} kW at PUE {b.pue:g} (IT {b.it_power_kw:,.1f} kW)"
    return _fill(_breakdown_template(), {"breakdown": breakdown_frame(b)}, title)


def power_breakdown(b: Budget) -> alt.Chart:
    """Facility power at peak by part [kW], cooling and distribution overhead via the PUE."""
    return alt.Chart.from_dict(power_breakdown_spec(b), validate=False)


# --------------------------------------------------------------------------- growth


@lru_cache(maxsize=1)
def _growth_template() -> dict[str, Any]:
    x = alt.X("nodes:Q", title="Nodes", scale=alt.Scale(type="log", nice=False))
    rule = alt.Chart(alt.Data(name="current")).mark_rule(strokeDash=[4, 3], color="#555555").encode(x=x)
    racks = alt.Chart(alt.Data(name="growth")).mark_line(point=True, color="#1f77b4").encode(
        x=x, y=alt.Y("racks:Q", title="Racks"),
        tooltip=[alt.Tooltip("nodes:Q", title="Nodes"), alt.Tooltip("racks:Q", title="Racks")])
    mw = alt.Chart(alt.Data(name="growth")).mark_line(point=True, color="#d62728").encode(
        x=x, y=alt.Y("facility_mw:Q", title="Facility power [MW]"),
        tooltip=[alt.Tooltip("nodes:Q", title="Nodes"), alt.Tooltip("facility_mw:Q", title="MW", format=",.3f"),
                 alt.Tooltip("it_mw:Q", title="IT MW", format=",.3f")])
    chart = alt.hconcat((racks + rule).properties(width=260, height=180, title="Racks"),
                        (mw + rule).properties(width=260, height=180, title="Facility power"))
    return chart.to_dict()


def growth_spec(df: pd.DataFrame, current_nodes: int | None = None) -> dict[str, Any]:
    current = pd.DataFrame({"nodes": [current_nodes] if current_nodes else []}, dtype="int64")
    return _fill(_growth_template(), {"growth": df[["nodes", "racks", "it_mw", "facility_mw"]], "current": current})


def growth(df: pd.DataFrame, current_nodes: int | None = None) -> alt.HConcatChart:
    """Racks and facility MW against node count (``df`` from :func:`facility.growth_table`),
    with a dashed rule at the scenario's node count."""
    return alt.HConcatChart.from_dict(growth_spec(df, current_nodes), validate=False)
