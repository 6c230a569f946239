"""Reliability charts: days-to-train band against cluster size, checkpoint interval and goodput,
interruptions by component. Functions take result data and return ``alt.Chart``; the ``*_spec``
functions give the same charts as Vega-Lite specs for widget updates (the layout compiled and
validated once, then only the data swapped: see :func:`gpucluster_lib.charts.fill_named`)."""

from __future__ import annotations

import math
from typing import Any

import altair as alt

from gpucluster_lib.charts import fill_named
from gpucluster_lib.charts.report_design import COMPONENT_NAMES  # the report's names of the parts

#: Named datasets of the charts (each chart reads its data by name, filled per update).
BAND, BAND_NOW, CURVE, COMPONENTS = "days-band", "days-band-scenario", "goodput-curve", "interruptions"
BAND_COLUMNS = ("gpus", "p10", "p50", "p90", "ideal", "mtbi_hours")


def _plain(v: Any) -> Any:
    """A JSON-ready scalar: numpy scalars as Python numbers, NaN and inf as None."""
    v = v.item() if hasattr(v, "item") else v
    return None if isinstance(v, float) and not math.isfinite(v) else v


def band_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The band chart's rows from :func:`gpucluster_lib.reliability.core.scaling_table`."""
    return [{k: _plain(r.get(k)) for k in BAND_COLUMNS} for r in rows]


def curve_rows(curve: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"interval_min": _plain(r["interval_min"]), "goodput": _plain(r["goodput"]),
             "optimal": bool(r["optimal"])} for r in curve]


def component_rows(result: Any) -> list[dict[str, Any]]:
    d = result.to_dict() if hasattr(result, "to_dict") else result
    return [{"component": c, "name": COMPONENT_NAMES.get(c, c.capitalize()), "per_day": _plain(v["interruptions_per_day"])}
            for c, v in d["components"].items()]


def _band_layers() -> alt.LayerChart:
    x = alt.X("gpus:Q", title="GPUs", scale=alt.Scale(type="log"))
    band = alt.Chart(alt.Data(name=BAND)).mark_area(opacity=0.25, color="#1f77b4").encode(
        x=x, y=alt.Y("p10:Q", title="Days to train"), y2="p90:Q",
        tooltip=[alt.Tooltip("gpus:Q", title="GPUs"), alt.Tooltip("p10:Q", format=".1f", title="P10 days"),
                 alt.Tooltip("p90:Q", format=".1f", title="P90 days"),
                 alt.Tooltip("mtbi_hours:Q", format=".1f", title="MTBI [h]")])
    p50 = alt.Chart(alt.Data(name=BAND)).mark_line(point=True, color="#1f77b4").encode(x=x, y="p50:Q")
    ideal = alt.Chart(alt.Data(name=BAND)).mark_line(strokeDash=[4, 4], color="#555").encode(x=x, y="ideal:Q")
    now = alt.Chart(alt.Data(name=BAND_NOW)).mark_rule(color="#d62728").encode(x="gpus:Q")
    return alt.layer(band, p50, ideal, now).properties(
        width=520, height=300,
        title="Days to train: P10-P90 band (blue), P50 (line), failure-free (dashed), scenario (red)")


def _band_data(rows: list[dict[str, Any]], current_gpus: int | None) -> dict[str, list[dict]]:
    return {BAND: band_rows(rows), BAND_NOW: [] if current_gpus is None else [{"gpus": int(current_gpus)}]}


def days_band_chart(rows: list[dict[str, Any]], current_gpus: int | None = None) -> alt.LayerChart:
    """P10-P90 band and P50 of failure-aware days to train against GPUs, with the failure-free line.

    ``rows`` from :func:`gpucluster_lib.reliability.core.scaling_table`.
    """
    chart = _band_layers()
    chart.datasets = _band_data(rows, current_gpus)
    return chart


def _goodput_layers() -> alt.LayerChart:
    x = alt.X("interval_min:Q", title="Checkpoint interval [min]", scale=alt.Scale(type="log"))
    line = alt.Chart(alt.Data(name=CURVE)).mark_line(color="#2ca02c").encode(
        x=x, y=alt.Y("goodput:Q", title="Goodput", axis=alt.Axis(format="%"), scale=alt.Scale(zero=False)),
        tooltip=[alt.Tooltip("interval_min:Q", format=".1f", title="interval [min]"),
                 alt.Tooltip("goodput:Q", format=".2%")])
    opt = alt.Chart(alt.Data(name=CURVE)).transform_filter("datum.optimal").mark_point(
        size=90, filled=True, color="#d62728").encode(x=x, y="goodput:Q")
    return alt.layer(line, opt).properties(width=520, height=260,
                                           title="Checkpoint interval and goodput (red: Daly optimum)")


def interval_goodput_chart(curve: list[dict[str, Any]]) -> alt.LayerChart:
    """Goodput against checkpoint interval; the chosen (Daly) interval is marked.

    ``curve`` from :func:`gpucluster_lib.reliability.core.goodput_curve`.
    """
    chart = _goodput_layers()
    chart.datasets = {CURVE: curve_rows(curve)}
    return chart


def _component_bars() -> alt.Chart:
    return alt.Chart(alt.Data(name=COMPONENTS)).mark_bar(color="#ff7f0e").encode(
        x=alt.X("per_day:Q", title="Interruptions per day"),
        y=alt.Y("name:N", sort="-x", title=None),
        tooltip=[alt.Tooltip("name:N", title="Component"), alt.Tooltip("per_day:Q", format=".3f")],
    ).properties(width=520, height=180, title="Unexpected interruptions by component")


def component_chart(result: Any) -> alt.Chart:
    """Unexpected interruptions per day by component (``ReliabilityResult`` or its ``to_dict()``)."""
    chart = _component_bars()
    chart.datasets = {COMPONENTS: component_rows(result)}
    return chart


def days_band_spec(rows: list[dict[str, Any]], current_gpus: int | None = None) -> dict:
    """:func:`days_band_chart` as a Vega-Lite spec, the layout validated once."""
    return fill_named(("days-band",), _band_layers, _band_data(rows, current_gpus))


def reliability_panel_chart() -> alt.VConcatChart:
    """Checkpoint interval and goodput above the interruptions by component (named data)."""
    return alt.vconcat(_goodput_layers(), _component_bars()).resolve_scale(color="independent")


def reliability_spec(result: Any, curve: list[dict[str, Any]]) -> dict:
    """:func:`reliability_panel_chart` with the data of ``result`` and its goodput ``curve``."""
    return fill_named(("reliability-panel",), reliability_panel_chart,
                      {CURVE: curve_rows(curve), COMPONENTS: component_rows(result)})
