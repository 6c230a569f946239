"""Reliability charts: days-to-train band against cluster size, checkpoint interval and goodput,
interruptions by component. Functions take result data and return ``alt.Chart``."""

from __future__ import annotations

from typing import Any

import altair as alt
import pandas as pd


def days_band_chart(rows: list[dict[str, Any]], current_gpus: int | None = None) -> alt.LayerChart:
    """P10-P90 band and P50 of failure-aware days to train against GPUs, with the failure-free line.

    ``rows`` from :func:`gpucluster_lib.reliability.core.scaling_table`.
    """
    df = pd.DataFrame(rows)
    if df.empty:
        df = pd.DataFrame({"gpus": [], "p10": [], "p50": [], "p90": [], "ideal": [], "mtbi_hours": []})
    x = alt.X("gpus:Q", title="GPUs", scale=alt.Scale(type="log"))
    band = alt.Chart(df).mark_area(opacity=0.25, color="#1f77b4").encode(
        x=x, y=alt.Y("p10:Q", title="Days to train"), y2="p90:Q",
        tooltip=[alt.Tooltip("gpus:Q", title="GPUs"), alt.Tooltip("p10:Q", format=".1f", title="P10 days"),
                 alt.Tooltip("p90:Q", format=".1f", title="P90 days"),
                 alt.Tooltip("mtbi_hours:Q", format=".1f", title="MTBI [h]")])
    p50 = alt.Chart(df).mark_line(point=True, color="#1f77b4").encode(x=x, y="p50:Q")
    ideal = alt.Chart(df).mark_line(strokeDash=[4, 4], color="#555").encode(x=x, y="ideal:Q")
    layers = [band, p50, ideal]
    if current_gpus is not None:
        layers.append(alt.Chart(pd.DataFrame({"gpus": [current_gpus]})).mark_rule(color="#d62728").encode(x="gpus:Q"))
    return alt.layer(*layers).properties(
        width=520, height=300,
        title="Days to train: P10-P90 band (blue), P50 (line), failure-free (dashed), scenario (red)")


def interval_goodput_chart(curve: list[dict[str, Any]]) -> alt.LayerChart:
    """Goodput against checkpoint interval; the chosen (Daly) interval is marked.

    ``curve`` from :func:`gpucluster_lib.reliability.core.goodput_curve`.
    """
    df = pd.DataFrame(curve)
    x = alt.X("interval_min:Q", title="Checkpoint interval [min]", scale=alt.Scale(type="log"))
    line = alt.Chart(df).mark_line(color="#2ca02c").encode(
        x=x, y=alt.Y("goodput:Q", title="Goodput", axis=alt.Axis(format="%"), scale=alt.Scale(zero=False)),
        tooltip=[alt.Tooltip("interval_min:Q", format=".1f", title="interval [min]"),
                 alt.Tooltip("goodput:Q", format=".2%")])
    opt = alt.Chart(df[df["optimal"]]).mark_point(size=90, filled=True, color="#d62728").encode(x=x, y="goodput:Q")
    return alt.layer(line, opt).properties(width=520, height=260,
                                           title="Checkpoint interval and goodput (red: Daly optimum)")


def component_chart(result: Any) -> alt.Chart:
    """Unexpected interruptions per day by component (``ReliabilityResult`` or its ``to_dict()``)."""
    d = result.to_dict() if hasattr(result, "to_dict") else result
    df = pd.DataFrame([{"component": c, "per_day": v["interruptions_per_day"]} for c, v in d["components"].items()])
    return alt.Chart(df).mark_bar(color="#ff7f0e").encode(
        x=alt.X("per_day:Q", title="Interruptions per day"),
        y=alt.Y("component:N", sort="-x", title=None),
        tooltip=["component:N", alt.Tooltip("per_day:Q", format=".3f")],
    ).properties(width=520, height=180, title="Unexpected interruptions by component")
