"""Charts for the training-time estimate (altair; data in, ``alt.Chart`` out)."""

from __future__ import annotations

from typing import Any

import altair as alt
import pandas as pd

from gpucluster_lib.charts import fill_template, records
from gpucluster_lib.training.labels import BREAKDOWN_LABELS, MEMORY_LABELS  # noqa: F401 (the names every front end uses)
from gpucluster_lib.units import GIB


def _as_dict(est: Any) -> dict[str, Any]:
    """What the charts read of an estimate (its ``to_dict()`` fields), without converting its table
    of plans (``to_dict`` turns ten rows of it into dicts: about 30 ms per chart)."""
    if isinstance(est, dict):
        return est
    return {"time_breakdown_s": dict(est.time_breakdown_s), "step_time_s": est.step_time_s,
            "memory_per_gpu_bytes": dict(est.memory_per_gpu_bytes),
            "memory_capacity_bytes": est.memory_capacity_bytes, "fits": est.fits}


def _time_rows(d: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"category": BREAKDOWN_LABELS[k], "seconds": v, "order": i}
            for i, (k, v) in enumerate(d["time_breakdown_s"].items()) if v > 0]


def _time_title(d: dict[str, Any]) -> str:
    return f"Step time {d['step_time_s']:,.2f} s: breakdown"


def _time_chart(rows: list[dict[str, Any]], title: str) -> alt.Chart:
    return alt.Chart(pd.DataFrame(rows, columns=["category", "seconds", "order"])).mark_bar().encode(
        x=alt.X("seconds:Q", title="Time per step [s]", stack="zero"),
        color=alt.Color("category:N", title="Category", sort=[r["category"] for r in rows]),
        order=alt.Order("order:Q"),
        tooltip=[alt.Tooltip("category:N"), alt.Tooltip("seconds:Q", format=".3f")],
    ).properties(width=520, height=60, title=title)


def time_breakdown_chart(est: Any) -> alt.Chart:
    """Step time as one stacked bar, one segment per category [s]."""
    d = _as_dict(est)
    return _time_chart(_time_rows(d), _time_title(d))


def time_breakdown_spec(est: Any) -> dict[str, Any]:
    """The Vega-Lite spec of :func:`time_breakdown_chart`, fast: the layout is compiled (and
    validated) once per set of categories, then only its data and title change."""
    d = _as_dict(est)
    rows = _time_rows(d)
    key = ("time", tuple(r["category"] for r in rows))
    return fill_template(key, lambda: _time_chart(rows, ""), rows, _time_title(d))


def _memory_parts(d: dict[str, Any]) -> tuple[list[dict[str, Any]], float, str]:
    mem = d["memory_per_gpu_bytes"]
    cap = d["memory_capacity_bytes"] / GIB
    rows = [{"part": MEMORY_LABELS[k], "gib": mem[k] / GIB, "order": i} for i, k in enumerate(MEMORY_LABELS)]
    free = cap - mem["total"] / GIB
    if free > 0:
        rows.append({"part": "free", "gib": free, "order": len(rows)})
    status = "fits" if d["fits"] else "DOES NOT FIT"
    return rows, cap, f"Memory per GPU {mem['total'] / GIB:,.1f} of {cap:,.0f} GiB ({status})"


def _memory_chart(rows: list[dict[str, Any]], cap: float, title: str) -> alt.Chart:
    parts = [r["part"] for r in rows]
    palette = ["#4c78a8", "#f58518", "#e45756", "#72b7b2", "#9d755d", "#54a24b", "#b279a2"]
    colours = [("#dddddd" if p == "free" else palette[i % len(palette)]) for i, p in enumerate(parts)]
    return alt.Chart(pd.DataFrame(rows, columns=["part", "gib", "order"])).mark_bar().encode(
        x=alt.X("gib:Q", title=f"Memory per GPU [GiB] (GPU memory {cap:,.0f} GiB)", stack="zero"),
        color=alt.Color("part:N", title="Part", sort=parts, scale=alt.Scale(domain=parts, range=colours)),
        order=alt.Order("order:Q"),
        tooltip=[alt.Tooltip("part:N"), alt.Tooltip("gib:Q", format=".1f", title="GiB")],
    ).properties(width=520, height=60, title=title)


def memory_chart(est: Any) -> alt.Chart:
    """Memory per GPU (the pipeline stage that needs the most) as a stacked bar against the GPU's memory [GiB].

    A grey "free" segment fills the bar up to the GPU's memory when the plan fits; when it
    does not, the bar runs past the capacity (the axis ends at the larger of the two).
    """
    return _memory_chart(*_memory_parts(_as_dict(est)))


def memory_spec(est: Any) -> dict[str, Any]:
    """The Vega-Lite spec of :func:`memory_chart`, fast (layout compiled once per GPU memory)."""
    rows, cap, title = _memory_parts(_as_dict(est))
    key = ("memory", tuple(r["part"] for r in rows), round(cap))
    return fill_template(key, lambda: _memory_chart(rows, cap, ""), rows, title)


#: plan-search table column -> its heading in the table of top plans
TOP_PLAN_COLUMNS = {
    "tp": "TP", "pp": "PP", "vp": "virtual", "dp": "DP", "cp": "CP", "ep": "EP", "mb": "micro-batch",
    "gbs": "global batch", "recompute": "recompute", "zero": "ZeRO", "step_time_s": "step [s]",
    "tokens_per_s": "tokens/s", "mfu": "MFU [%]", "memory_gib": "memory [GiB]", "training_days": "days",
    "fits": "fits", "reason": "why not",
}


def top_plans_frame(table: pd.DataFrame, n: int = 10) -> pd.DataFrame:
    """The first ``n`` rows of a plan-search table with readable column names, MFU in per cent (one decimal, as
    the Training tab's summary gives it)."""
    top = table.head(n)[list(TOP_PLAN_COLUMNS)].assign(mfu=lambda t: (t["mfu"] * 100).round(1))
    return top.set_axis(list(TOP_PLAN_COLUMNS.values()), axis=1).reset_index(drop=True)


def scaling_chart(df: pd.DataFrame) -> alt.HConcatChart:
    """Time to train [days] and MFU against GPU count, best plan at each count."""
    base = alt.Chart(df).encode(x=alt.X("gpus:Q", title="GPUs", scale=alt.Scale(type="log", base=2)))
    tip = [alt.Tooltip("gpus:Q"), alt.Tooltip("plan:N"), alt.Tooltip("training_days:Q", format=".1f"),
           alt.Tooltip("mfu:Q", format=".1%")]
    days = base.mark_line(point=True).encode(
        y=alt.Y("training_days:Q", title="Time to train [days]", scale=alt.Scale(type="log")), tooltip=tip,
    ).properties(width=300, height=220, title="Time to train")
    mfu = base.mark_line(point=True, color="#d62728").encode(
        y=alt.Y("mfu:Q", title="MFU", axis=alt.Axis(format="%"), scale=alt.Scale(zero=True)), tooltip=tip,
    ).properties(width=300, height=220, title="Model FLOPs utilisation")
    return alt.hconcat(days, mfu)


def scaling_spec(df: pd.DataFrame) -> dict[str, Any]:
    """The Vega-Lite spec of :func:`scaling_chart`, fast (layout compiled once)."""
    cols = ["gpus", "plan", "training_days", "mfu"]
    return fill_template(("scaling",), lambda: scaling_chart(df[cols]), records(df[cols]))


def validation_chart(df: pd.DataFrame) -> alt.HConcatChart:
    """Predicted against published step time (log-log, y = x line) and the error per run."""
    lo = float(min(df["published_step_s"].min(), df["predicted_step_s"].min())) * 0.8
    hi = float(max(df["published_step_s"].max(), df["predicted_step_s"].max())) * 1.25
    scale = alt.Scale(type="log", domain=[lo, hi])
    tip = [alt.Tooltip("label:N"), alt.Tooltip("plan:N"), alt.Tooltip("published_step_s:Q", format=".3g"),
           alt.Tooltip("predicted_step_s:Q", format=".3g"), alt.Tooltip("error:Q", format="+.1%")]
    pts = alt.Chart(df).mark_point(filled=True, size=60).encode(
        x=alt.X("published_step_s:Q", title="Published step time [s]", scale=scale),
        y=alt.Y("predicted_step_s:Q", title="Predicted step time [s]", scale=scale),
        color=alt.Color("set:N", title="Set"), shape=alt.Shape("accelerator:N", title="GPU"), tooltip=tip)
    line = alt.Chart(pd.DataFrame({"x": [lo, hi]})).mark_line(color="gray", strokeDash=[4, 3]).encode(
        x=alt.X("x:Q", scale=scale), y=alt.Y("x:Q", scale=scale))
    err = alt.Chart(df).mark_bar().encode(
        y=alt.Y("run_id:N", title=None, sort=None),
        x=alt.X("error:Q", title="Step-time error (predicted / published - 1)", axis=alt.Axis(format="%")),
        color=alt.Color("set:N", title="Set"), tooltip=tip)
    band = alt.Chart(pd.DataFrame({"x": [-0.2, 0.2]})).mark_rule(color="gray", strokeDash=[2, 2]).encode(x="x:Q")
    return alt.hconcat((line + pts).properties(width=330, height=330, title="Predicted vs published"),
                       (err + band).properties(width=300, height=14 * len(df), title="Error per run"))
