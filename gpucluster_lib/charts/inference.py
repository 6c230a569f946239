"""Charts for the inference tab: throughput against latency, memory per GPU, accelerators."""

from __future__ import annotations

import math

import altair as alt
import pandas as pd

from gpucluster_lib.charts import fill_named, fill_template, records
from gpucluster_lib.units import GB

MEMORY_ORDER = ["weights", "kv_cache", "workspace", "runtime", "free"]
MEMORY_COLOURS = ["#4c78a8", "#f58518", "#72b7b2", "#b279a2", "#d9d9d9"]


def _latency_rows(sweep: list[dict], tpot_slo_s: float, chosen_batch: int | None) -> dict[str, list[dict]]:
    """The chart's three datasets as rows (JSON-ready): the sweep with its TPOT in ms, the status
    and the chosen batch marked; the shaded region; the SLO rule."""
    rows = []
    for r in sweep:
        row = {k: _plain(v) for k, v in r.items()}
        tpot = row.get("tpot_s")
        row["tpot_ms"] = None if tpot is None else tpot * 1000
        row["status"] = {True: "meets SLO", False: "misses SLO"}.get(row.get("meets_slo"))
        row["chosen"] = row.get("batch") == chosen_batch
        rows.append(row)
    return {"sweep": rows, "region": [{"x0": 0.0, "x1": tpot_slo_s * 1000}],
            "rule": [{"x": tpot_slo_s * 1000, "label": f"TPOT SLO {tpot_slo_s * 1000:g} ms"}]}


def _plain(v):
    """A JSON-ready cell: numpy scalars as Python numbers, NaN as None."""
    v = v.item() if hasattr(v, "item") else v
    return None if isinstance(v, float) and math.isnan(v) else v


def _latency_frames(sweep: pd.DataFrame, tpot_slo_s: float, chosen_batch: int | None) -> dict[str, pd.DataFrame]:
    return {k: pd.DataFrame(rows) for k, rows in _latency_rows(records(sweep), tpot_slo_s, chosen_batch).items()}


def _latency_chart(frames: dict[str, pd.DataFrame | alt.Data], xmax: float) -> alt.LayerChart:
    region = alt.Chart(frames["region"]).mark_rect(color="#2ca02c", opacity=0.08).encode(x="x0:Q", x2="x1:Q")
    rule = alt.Chart(frames["rule"]).mark_rule(color="#2ca02c", strokeDash=[4, 3]).encode(x="x:Q", tooltip="label:N")
    base = alt.Chart(frames["sweep"]).encode(
        x=alt.X("tpot_ms:Q", title="Time per output token [ms]", scale=alt.Scale(domain=[0, xmax])),
        y=alt.Y("tokens_per_s_per_gpu:Q", title="Output tokens/s per GPU"),
    )
    line = base.mark_line(color="#888")
    points = base.mark_point(filled=True, size=60).encode(
        color=alt.Color("status:N", title="", scale=alt.Scale(domain=["meets SLO", "misses SLO"],
                                                               range=["#2ca02c", "#d62728"])),
        shape=alt.condition("datum.chosen", alt.value("diamond"), alt.value("circle")),
        size=alt.condition("datum.chosen", alt.value(220), alt.value(60)),
        tooltip=[alt.Tooltip("batch:Q", title="batch"), alt.Tooltip("tpot_ms:Q", title="TPOT [ms]", format=".1f"),
                 alt.Tooltip("ttft_s:Q", title="TTFT [s]", format=".3f"),
                 alt.Tooltip("tokens_per_s_per_gpu:Q", title="tokens/s/GPU", format=",.0f")],
    )
    labels = base.mark_text(dx=6, dy=-8, fontSize=9, align="left").encode(text="batch:Q")
    return (region + rule + line + points + labels).properties(
        width=520, height=320, title="Throughput against latency across batch sizes (shaded: TPOT within SLO)")


def _xmax(sweep: list[dict], tpot_slo_s: float) -> float:
    tpots = [r["tpot_s"] for r in sweep if r.get("tpot_s") is not None and r["tpot_s"] == r["tpot_s"]]
    return float(max(max(tpots) * 1000, tpot_slo_s * 1000) * 1.1) if tpots else tpot_slo_s * 1100


def throughput_latency(sweep: pd.DataFrame, tpot_slo_s: float, chosen_batch: int | None = None) -> alt.Chart:
    """Tokens/s per GPU against TPOT across batch sizes, the region TPOT <= SLO shaded.

    ``sweep`` is :meth:`ServingEstimate.sweep_frame` (batch, tpot_s, ttft_s,
    tokens_per_s_per_gpu, meets_slo). Points that also miss TTFT are drawn hollow red.
    """
    return _latency_chart(_latency_frames(sweep, tpot_slo_s, chosen_batch), _xmax(records(sweep), tpot_slo_s))


def throughput_latency_spec(sweep: pd.DataFrame | list[dict], tpot_slo_s: float,
                            chosen_batch: int | None = None) -> dict:
    """The Vega-Lite spec of :func:`throughput_latency`, fast: the layout is compiled once and its
    three datasets and the axis range swapped. ``sweep`` may also be the sweep's rows
    (:attr:`ServingEstimate.sweep`), which skips pandas."""
    rows = records(sweep) if isinstance(sweep, pd.DataFrame) else sweep
    data = _latency_rows(rows, tpot_slo_s, chosen_batch)
    xmax = _xmax(rows, tpot_slo_s)
    spec = fill_named(("latency",), lambda: _latency_chart({k: alt.Data(name=f"latency-{k}") for k in data}, 1.0),
                      {f"latency-{k}": v for k, v in data.items()})
    layers = []
    for layer in spec["layer"]:  # the axis range follows the data: set it in copies of the layers
        x = layer.get("encoding", {}).get("x", {})
        if "scale" in x:
            layer = {**layer, "encoding": {**layer["encoding"],
                                           "x": {**x, "scale": {**x["scale"], "domain": [0, xmax]}}}}
        layers.append(layer)
    spec["layer"] = layers
    return spec


def _memory_rows(memory_bytes: dict[str, float]) -> list[dict]:
    return [{"part": k, "gb": memory_bytes.get(k, 0.0) / GB, "order": i} for i, k in enumerate(MEMORY_ORDER)]


def _memory_chart(data: pd.DataFrame, title: str) -> alt.Chart:
    return alt.Chart(data).mark_bar().encode(
        x=alt.X("sum(gb):Q", title="GB (10^9 bytes)"),
        color=alt.Color("part:N", title="", scale=alt.Scale(domain=MEMORY_ORDER, range=MEMORY_COLOURS),
                        sort=MEMORY_ORDER),
        order=alt.Order("order:Q"),
        tooltip=[alt.Tooltip("part:N"), alt.Tooltip("gb:Q", title="GB", format=",.1f")],
    ).properties(width=520, height=60, title=title)


def memory_breakdown(memory_bytes: dict[str, float], title: str = "Memory per GPU") -> alt.Chart:
    """One stacked bar of weights, KV cache, workspace, runtime and free memory [GB]."""
    return _memory_chart(pd.DataFrame(_memory_rows(memory_bytes)), title)


def memory_breakdown_spec(memory_bytes: dict[str, float], title: str = "Memory per GPU") -> dict:
    """The Vega-Lite spec of :func:`memory_breakdown`, fast: compiled once, then only its rows swapped."""
    empty = pd.DataFrame({"part": [], "gb": [], "order": []})
    return fill_template(("inference-memory",), lambda: _memory_chart(empty, "Memory per GPU"),
                         _memory_rows(memory_bytes), title=title)


def _comparison_rows(df: pd.DataFrame) -> list[dict]:
    rows = records(df)
    for r in rows:
        r["label"] = f"{r['accelerator']} ({r['precision']}, TP {r['tensor_parallel']})"
        r["gpus_shown"] = 0 if r["gpus"] is None else r["gpus"]
        r["status"] = {True: "meets SLO", False: "cannot meet SLO"}.get(r["meets_slo"])
    return rows


def _comparison_chart(data: pd.DataFrame | alt.Data, rows: int) -> alt.Chart:
    return alt.Chart(data).mark_bar().encode(
        y=alt.Y("label:N", title="", sort="x"),
        x=alt.X("gpus_shown:Q", title="GPUs for the target"),
        color=alt.Color("status:N", title="", scale=alt.Scale(domain=["meets SLO", "cannot meet SLO"],
                                                               range=["#4c78a8", "#d62728"])),
        tooltip=[alt.Tooltip("accelerator:N"), alt.Tooltip("gpus:Q", title="GPUs"),
                 alt.Tooltip("tokens_per_s_per_gpu:Q", title="tokens/s/GPU", format=",.0f"),
                 alt.Tooltip("servers_kw:Q", title="servers kW", format=",.1f")],
    ).properties(width=520, height=28 * max(rows, 1), title="Same target on other accelerators")


def accelerator_comparison(df: pd.DataFrame) -> alt.Chart:
    """GPUs needed for the same target on each accelerator (from ``compare_accelerators``)."""
    return _comparison_chart(pd.DataFrame(_comparison_rows(df), columns=[*df.columns, "label", "gpus_shown", "status"]),
                             len(df))


def accelerator_comparison_spec(df: pd.DataFrame) -> dict:
    """The Vega-Lite spec of :func:`accelerator_comparison`, fast: compiled once, then its rows and
    its height (one band per accelerator) swapped."""
    spec = fill_template(("inference-comparison",), lambda: _comparison_chart(pd.DataFrame({"label": []}), 1),
                         _comparison_rows(df))
    spec["height"] = 28 * max(len(df), 1)
    return spec
