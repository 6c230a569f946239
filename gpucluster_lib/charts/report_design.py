"""Static charts of the design document (the report and its PDF).

Each function takes stage results of one :class:`~gpucluster_lib.design.Design` and returns an
``alt.Chart``; the report renders them to SVG with vl-convert (deterministic, vector in the
PDF). Labels are human names with units in brackets; colours follow the app's charts.
"""

from __future__ import annotations

import math
from typing import Any

import altair as alt
import pandas as pd

from gpucluster_lib.formatting import plural
from gpucluster_lib.units import GIB

#: Width of a full-width chart on an A4 page with 15 mm margins [px at 96 dpi, less the legend].
PAGE_WIDTH_PX = 560

#: Step-time categories of the training estimate, in human words.
STEP_LABELS = {
    "compute": "Compute", "recompute": "Activation recompute", "tp_comm": "Tensor-parallel communication",
    "cp_comm": "Context-parallel communication", "ep_comm": "Expert-parallel communication",
    "pp_comm": "Pipeline communication", "bubble": "Pipeline bubble",
    "dp_comm": "Data-parallel communication (not hidden)", "optimizer": "Optimizer step",
    "framework": "Framework: pipeline slots and fixed time per step", "overhead": "Step overhead (a share of the step)",
}
MEMORY_LABELS = {"weights": "Weights", "gradients": "Gradients", "optimizer_states": "Optimizer states",
                 "gather_buffers": "Gathered parameters (ZeRO-3)",
                 "unreduced_gradients": "Gradients awaiting reduction (ZeRO-3)", "activations": "Activations",
                 "other": "Runtime, buffers, fragmentation"}
SERVING_MEMORY_LABELS = {"weights": "Weights", "kv_cache": "KV cache", "workspace": "Workspace",
                         "runtime": "Runtime", "free": "Free"}
CAPEX_LABELS = {"compute": "Compute nodes", "network": "Network", "storage": "Storage",
                "facility": "Facility (building, power, cooling)"}
OPEX_LABELS = {"energy": "Energy", "maintenance": "Maintenance and support", "space": "Space (colocation)"}
RACK_COLOURS = {"Compute rack": "#76b900", "Network, storage and head nodes": "#1f77b4"}


def _bar(df: pd.DataFrame, x: str, y: str, title: str, x_title: str, *, colour: str = "#4c78a8",
         fmt: str = ",.2f", height_per_row: int = 22) -> alt.Chart:
    return alt.Chart(df).mark_bar(color=colour).encode(
        x=alt.X(f"{x}:Q", title=x_title),
        y=alt.Y(f"{y}:N", title=None, sort=list(df[y])),
    ).properties(width=PAGE_WIDTH_PX - 200, height=max(60, height_per_row * len(df)), title=title) + \
        alt.Chart(df).mark_text(align="left", dx=3, fontSize=10).encode(
            x=f"{x}:Q", y=alt.Y(f"{y}:N", sort=list(df[y])), text=alt.Text(f"{x}:Q", format=fmt))


def step_time_chart(training: Any) -> alt.LayerChart:
    """Where one training step's time goes, per category [s] (``TrainingEstimate``)."""
    rows = [{"part": STEP_LABELS[k], "seconds": float(v)}
            for k, v in training.time_breakdown_s.items() if v > 0]
    return _bar(pd.DataFrame(rows), "seconds", "part", f"One training step: {training.step_time_s:.2f} s",
                "Time per step [s]", fmt=".3f")


def training_memory_chart(training: Any) -> alt.LayerChart:
    """Memory per GPU by part against the GPU's memory [GiB] (``TrainingEstimate``)."""
    mem = training.memory_per_gpu_bytes
    cap = training.memory_capacity_bytes / GIB
    rows = [{"part": label, "gib": mem.get(k, 0.0) / GIB} for k, label in MEMORY_LABELS.items()]
    rows.append({"part": "Free", "gib": max(0.0, cap - mem["total"] / GIB)})
    status = "fits" if training.fits else "does not fit"
    return _bar(pd.DataFrame(rows), "gib", "part",
                f"Memory per GPU: {mem['total'] / GIB:.1f} of {cap:.0f} GiB ({status})", "Memory per GPU [GiB]",
                colour="#f58518", fmt=".1f")


def serving_memory_chart(serving: Any) -> alt.LayerChart:
    """Memory per GPU of one serving replica by part [GiB] (``ServingEstimate``)."""
    mem = serving.memory_per_gpu_bytes
    rows = [{"part": label, "gib": mem[k] / GIB} for k, label in SERVING_MEMORY_LABELS.items() if k in mem]
    return _bar(pd.DataFrame(rows), "gib", "part", f"Memory per GPU when serving ({mem['total'] / GIB:.0f} GiB)",
                "Memory per GPU [GiB]", colour="#f58518", fmt=".1f")


def serving_curve_chart(serving: Any) -> alt.LayerChart:
    """Output tokens/s per GPU against the time per output token, one point per batch size;
    the latency target as a rule and the chosen batch marked (``ServingEstimate``)."""
    df = pd.DataFrame([{"batch": r["batch"], "tpot_ms": r["tpot_s"] * 1000, "tps": r["tokens_per_s_per_gpu"],
                        "meets": "meets the latency target" if r["meets_slo"] else "too slow"}
                       for r in serving.sweep])
    x = alt.X("tpot_ms:Q", title="Time per output token [ms]", scale=alt.Scale(type="log"))
    line = alt.Chart(df).mark_line(color="#999999").encode(x=x, y=alt.Y("tps:Q", title="Output tokens/s per GPU"))
    pts = alt.Chart(df).mark_point(filled=True, size=40).encode(
        x=x, y="tps:Q", color=alt.Color("meets:N", title=None,
                                        scale=alt.Scale(domain=["meets the latency target", "too slow"],
                                                        range=["#2ca02c", "#d62728"])))
    slo = alt.Chart(pd.DataFrame({"tpot_ms": [serving.tpot_slo_s * 1000]})).mark_rule(strokeDash=[4, 3]).encode(x=x)
    chosen = alt.Chart(pd.DataFrame({"tpot_ms": [serving.tpot_s * 1000], "tps": [serving.tokens_per_s_per_gpu],
                                     "text": [f"batch {serving.batch}"]}))
    mark = chosen.mark_point(size=160, shape="diamond", color="#000000", filled=False).encode(x=x, y="tps:Q") + \
        chosen.mark_text(dx=8, align="left", dy=-8).encode(x=x, y="tps:Q", text="text:N")
    return alt.layer(line, pts, slo, mark).properties(
        width=PAGE_WIDTH_PX - 160, height=220, title="Serving: throughput against latency (dashed: target)")


def node_power_chart(node: Any) -> alt.LayerChart:
    """One node's peak power by part [W], as the parts list adds it up (``NodeDesign``)."""
    rows = [{"part": c.label, "w": float(c.peak_w)} for c in node.components if c.peak_w > 0]
    return _bar(pd.DataFrame(rows), "w", "part", f"One node at peak, by part: {node.component_peak_w:,.0f} W",
                "Peak power [W]", colour="#76b900", fmt=",.0f")


def power_chart(facility: Any) -> alt.LayerChart:
    """Facility power at peak by part [kW], the cooling and distribution overhead last (``Budget``)."""
    rows = [{"part": k, "kw": float(v)} for k, v in facility.breakdown_kw().items() if v > 0]
    return _bar(pd.DataFrame(rows), "kw", "part",
                f"Facility power at peak: {facility.facility_power_kw:,.0f} kW (IT {facility.it_power_kw:,.0f} kW)",
                "Peak power [kW]", colour="#d62728", fmt=",.1f")


def cooling_chart(facility: Any) -> alt.LayerChart:
    """Heat removed by air and by liquid [kW] (``Budget``)."""
    rows = [{"part": "Removed by air", "kw": float(facility.air_heat_kw)},
            {"part": "Removed by liquid or rear-door water", "kw": float(facility.liquid_heat_kw)}]
    return _bar(pd.DataFrame(rows), "kw", "part", f"Heat load: {facility.heat_load_kw:,.0f} kW", "Heat [kW]",
                colour="#1f77b4", fmt=",.1f")


def hall_chart(facility: Any) -> alt.LayerChart:
    """The hall seen from above: racks in rows, compute racks green, infrastructure racks blue."""
    racks, rows_n = int(facility.racks), max(1, int(facility.rows))
    per_row = math.ceil(racks / rows_n) if racks else 0
    cells = []
    for i in range(racks):
        kind = "Compute rack" if i < facility.compute_racks else "Network, storage and head nodes"
        row, col = divmod(i, per_row) if per_row else (0, 0)
        cells.append({"x": col, "x2": col + 0.9, "y": row * 1.6, "y2": row * 1.6 + 1.0, "kind": kind})
    df = pd.DataFrame(cells, columns=["x", "x2", "y", "y2", "kind"])
    width = min(PAGE_WIDTH_PX - 120, max(160, 18 * per_row))
    return alt.Chart(df).mark_rect(stroke="#333333", strokeWidth=0.6).encode(
        x=alt.X("x:Q", axis=None, scale=alt.Scale(domain=[0, max(per_row, 1)])), x2="x2:Q",
        y=alt.Y("y:Q", axis=None, scale=alt.Scale(domain=[rows_n * 1.6, -0.6])), y2="y2:Q",
        color=alt.Color("kind:N", title=None, scale=alt.Scale(domain=list(RACK_COLOURS),
                                                             range=list(RACK_COLOURS.values())),
                        legend=alt.Legend(orient="bottom")),
    ).properties(width=width, height=max(40, 26 * rows_n),
                 title=f"The hall: {plural(racks, 'rack')} in {plural(rows_n, 'row')}, {facility.floor_area_m2:,.0f} m²")


def cost_chart(cost: Any) -> alt.Chart:
    """CapEx by category and OpEx by category over the cost period, as two stacked bars [currency]."""
    rows = [{"bar": "CapEx", "part": CAPEX_LABELS.get(k, k), "amount": v / 1e6}
            for k, v in cost.capex.items() if k != "total" and v > 0]
    rows += [{"bar": f"OpEx over {cost.years} years", "part": OPEX_LABELS.get(k, k), "amount": v * cost.years / 1e6}
             for k, v in cost.opex_per_year.items() if k != "total" and v > 0]
    parts = [r["part"] for r in rows]
    return alt.Chart(pd.DataFrame(rows)).mark_bar().encode(
        x=alt.X("amount:Q", title=f"Million {cost.currency}", stack="zero"),
        y=alt.Y("bar:N", title=None, sort=["CapEx", f"OpEx over {cost.years} years"]),
        color=alt.Color("part:N", title=None, sort=parts, legend=alt.Legend(orient="bottom", columns=2)),
        order=alt.Order("amount:Q", sort="descending"),
    ).properties(width=PAGE_WIDTH_PX - 140, height=90,
                 title=f"Total cost of ownership over {cost.years} years: {cost.tco / 1e6:,.1f} million {cost.currency}")


def days_band_chart(reliability: Any) -> alt.LayerChart:
    """Days to train: without failures, P10-P90 band with failures, P50 and the expectation."""
    r = reliability
    band = pd.DataFrame([{"lo": r.training_days_p10, "hi": r.training_days_p90, "y": "With failures"}])
    pts = pd.DataFrame([
        {"days": r.training_days_ideal, "y": "Without failures", "what": "no failures"},
        {"days": r.training_days_p50, "y": "With failures", "what": "median (P50)"},
        {"days": r.training_days_expected, "y": "With failures", "what": "expected"},
    ])
    y = alt.Y("y:N", title=None, sort=["Without failures", "With failures"])
    lo = min(r.training_days_ideal, r.training_days_p10)
    scale = alt.Scale(zero=False, domain=[lo * 0.9, r.training_days_p90 * 1.05])
    x = alt.X("days:Q", title="Days to train", scale=scale)
    bars = alt.Chart(band).mark_bar(height=16, color="#9ecae1").encode(
        x=alt.X("lo:Q", scale=scale, title="Days to train"), x2="hi:Q", y=y)
    dots = alt.Chart(pts).mark_point(filled=True, size=80).encode(
        x=x, y=y, shape=alt.Shape("what:N", title=None), color=alt.Color("what:N", title=None))
    return alt.layer(bars, dots).properties(
        width=PAGE_WIDTH_PX - 220, height=90,
        title=f"Days to train: P10 {r.training_days_p10:.1f} to P90 {r.training_days_p90:.1f} days")


#: component keys of the failure presets (reliability), named for people
COMPONENT_NAMES = {"gpu": "GPU", "hbm": "GPU memory (HBM)", "software": "Software", "network": "Network",
                   "nic": "Network adapter (NIC)", "host": "Host (CPU, memory, board)", "psu": "Power supply (PSU)",
                   "nvlink": "NVLink", "storage": "Storage", "fan": "Fan", "cooling": "Cooling"}


def interruptions_chart(reliability: Any) -> alt.LayerChart:
    """Unexpected interruptions per day by component (``ReliabilityResult``)."""
    rows = sorted(({"part": COMPONENT_NAMES.get(k, k.capitalize()), "per_day": v["interruptions_per_day"]}
                   for k, v in reliability.to_dict()["components"].items()), key=lambda r: -r["per_day"])
    return _bar(pd.DataFrame(rows), "per_day", "part", "Interruptions per day by cause", "Interruptions per day",
                colour="#ff7f0e", fmt=".3f")


def comparison_chart(rows: list[dict[str, Any]], metrics: list[tuple[str, str]]) -> alt.FacetChart:
    """Several designs side by side, one small bar chart per metric.

    ``rows``: one dict per design with ``design`` and a value per metric key; ``metrics``:
    (key, label with unit).
    """
    data = [{"design": r["design"], "metric": label, "value": r[key]}
            for r in rows for key, label in metrics if r.get(key) is not None]
    df = pd.DataFrame(data, columns=["design", "metric", "value"])
    return alt.Chart(df).mark_bar().encode(
        x=alt.X("value:Q", title=None), y=alt.Y("design:N", title=None),
        color=alt.Color("design:N", legend=None),
    ).properties(width=210, height=22 * max(1, len(rows))).facet(
        facet=alt.Facet("metric:N", title=None, sort=[label for _, label in metrics]), columns=2,
    ).resolve_scale(x="independent")
