"""Charts for the inference tab: throughput against latency, memory per GPU, accelerators."""

from __future__ import annotations

import altair as alt
import pandas as pd

from gpucluster_lib.charts import fill_named, records
from gpucluster_lib.units import GB

MEMORY_ORDER = ["weights", "kv_cache", "workspace", "runtime", "free"]
MEMORY_COLOURS = ["#4c78a8", "#f58518", "#72b7b2", "#b279a2", "#d9d9d9"]


def _latency_frames(sweep: pd.DataFrame, tpot_slo_s: float, chosen_batch: int | None) -> dict[str, pd.DataFrame]:
    data = sweep.copy()
    data["tpot_ms"] = data["tpot_s"] * 1000
    data["status"] = data["meets_slo"].map({True: "meets SLO", False: "misses SLO"})
    data["chosen"] = data["batch"] == chosen_batch
    return {"sweep": data,
            "region": pd.DataFrame({"x0": [0.0], "x1": [tpot_slo_s * 1000]}),
            "rule": pd.DataFrame({"x": [tpot_slo_s * 1000], "label": [f"TPOT SLO {tpot_slo_s * 1000:g} ms"]})}


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


def _xmax(data: pd.DataFrame, tpot_slo_s: float) -> float:
    return float(max(data["tpot_s"].max() * 1000, tpot_slo_s * 1000) * 1.1) if len(data) else tpot_slo_s * 1100


def throughput_latency(sweep: pd.DataFrame, tpot_slo_s: float, chosen_batch: int | None = None) -> alt.Chart:
    """Tokens/s per GPU against TPOT across batch sizes, the region TPOT <= SLO shaded.

    ``sweep`` is :meth:`ServingEstimate.sweep_frame` (batch, tpot_s, ttft_s,
    tokens_per_s_per_gpu, meets_slo). Points that also miss TTFT are drawn hollow red.
    """
    return _latency_chart(_latency_frames(sweep, tpot_slo_s, chosen_batch), _xmax(sweep, tpot_slo_s))


def throughput_latency_spec(sweep: pd.DataFrame, tpot_slo_s: float, chosen_batch: int | None = None) -> dict:
    """The Vega-Lite spec of :func:`throughput_latency`, fast: the layout is compiled once and its
    three datasets and the axis range swapped."""
    frames = _latency_frames(sweep, tpot_slo_s, chosen_batch)
    xmax = _xmax(sweep, tpot_slo_s)
    names = {k: alt.Data(name=f"latency-{k}") for k in frames}
    spec = fill_named(("latency",), lambda: _latency_chart(names, 1.0),
                      {f"latency-{k}": records(df) for k, df in frames.items()})
    layers = []
    for layer in spec["layer"]:  # the axis range follows the data: set it in copies of the layers
        x = layer.get("encoding", {}).get("x", {})
        if "scale" in x:
            layer = {**layer, "encoding": {**layer["encoding"],
                                           "x": {**x, "scale": {**x["scale"], "domain": [0, xmax]}}}}
        layers.append(layer)
    spec["layer"] = layers
    return spec


def memory_breakdown(memory_bytes: dict[str, float], title: str = "Memory per GPU") -> alt.Chart:
    """One stacked bar of weights, KV cache, workspace, runtime and free memory [GB]."""
    rows = [{"part": k, "gb": memory_bytes.get(k, 0.0) / GB, "order": i} for i, k in enumerate(MEMORY_ORDER)]
    data = pd.DataFrame(rows)
    return alt.Chart(data).mark_bar().encode(
        x=alt.X("sum(gb):Q", title="GB (10^9 bytes)"),
        color=alt.Color("part:N", title="", scale=alt.Scale(domain=MEMORY_ORDER, range=MEMORY_COLOURS),
                        sort=MEMORY_ORDER),
        order=alt.Order("order:Q"),
        tooltip=[alt.Tooltip("part:N"), alt.Tooltip("gb:Q", title="GB", format=",.1f")],
    ).properties(width=520, height=60, title=title)


def accelerator_comparison(df: pd.DataFrame) -> alt.Chart:
    """GPUs needed for the same target on each accelerator (from ``compare_accelerators``)."""
    data = df.copy()
    data["label"] = data.apply(lambda r: f"{r['accelerator']} ({r['precision']}, TP {r['tensor_parallel']})", axis=1)
    data["gpus_shown"] = data["gpus"].fillna(0)
    data["status"] = data["meets_slo"].map({True: "meets SLO", False: "cannot meet SLO"})
    return alt.Chart(data).mark_bar().encode(
        y=alt.Y("label:N", title="", sort="x"),
        x=alt.X("gpus_shown:Q", title="GPUs for the target"),
        color=alt.Color("status:N", title="", scale=alt.Scale(domain=["meets SLO", "cannot meet SLO"],
                                                               range=["#4c78a8", "#d62728"])),
        tooltip=[alt.Tooltip("accelerator:N"), alt.Tooltip("gpus:Q", title="GPUs"),
                 alt.Tooltip("tokens_per_s_per_gpu:Q", title="tokens/s/GPU", format=",.0f"),
                 alt.Tooltip("servers_kw:Q", title="servers kW", format=",.1f")],
    ).properties(width=520, height=28 * max(len(data), 1), title="Same target on other accelerators")
