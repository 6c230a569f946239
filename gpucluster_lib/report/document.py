"""The design document: what the report says, section by section, from one Design.

A reader who never saw the workbook gets, on page 1, what is built, what it does and what it
costs, the three findings that matter most and a picture of the hall; then one section per
stage (a short narrative, the few numbers that matter, its charts, its findings with their
fixes), a bill of materials, every finding with its fix, and an appendix of the assumptions
with their values, units and sources.

Every number comes from the one :class:`~gpucluster_lib.design.Design` (``d.summary()`` and
the stage results) and is written by :mod:`gpucluster_lib.report.text`, so the same figure
reads the same on page 1, in its section and in the app's header. Charts are rendered to SVG
by vl-convert (deterministic, and vectors in the PDF).
"""

from __future__ import annotations

import dataclasses
import html
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpucluster_lib import __version__
from gpucluster_lib.design import Design
from gpucluster_lib.errors import GpuClusterError
from gpucluster_lib.findings import Finding, sort_findings
from gpucluster_lib.formatting import MISSING, format_value, humanize_key, plural
from gpucluster_lib.report.style import DOCUMENT_STYLE
from gpucluster_lib.report.text import esc, figure_text, humanize_text, money_text, value_text
from gpucluster_lib.training.framework import GENERATION_WORDS
from gpucluster_lib.units import GIB

SEVERITY_WORDS = {"error": "Error", "warning": "Warning", "info": "Note"}


# --------------------------------------------------------------------------- building blocks


@dataclass
class Section:
    """One chapter of the report: its title, its HTML (narrative and numbers), its charts
    (``alt.Chart``, rendered as SVG after the text) and its findings (listed with their fixes)."""

    title: str
    html: str
    charts: list[Any] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    data: dict[str, Any] | None = None
    module: str = ""


def chart_svg(chart: Any) -> str:
    """A chart as an inline SVG element (vl-convert: deterministic, a vector in the PDF)."""
    import vl_convert as vlc

    spec = chart if isinstance(chart, dict) else chart.to_dict()
    svg = vlc.vegalite_to_svg(spec)
    return svg.replace('class="marks"', 'class="marks gc-chart"', 1)


def figure_html(chart: Any) -> str:
    return f"<figure class='gc-figure'>{chart_svg(chart)}</figure>"


def numbers_html(rows: Iterable[tuple[str, str]]) -> str:
    """The few numbers that matter: (human name, value with unit) rows."""
    body = "".join(f"<tr><td>{esc(k)}</td><td class='num'>{html.escape(v)}</td></tr>" for k, v in rows
                   if v not in (None, ""))
    return f"<table class='gc-table gc-numbers'><tbody>{body}</tbody></table>"


def findings_list_html(findings: Sequence[Finding], empty: str = "") -> str:
    """Findings with their fixes, in words (the code in small print, for docs/findings.md)."""
    if not findings:
        return f"<p class='gc-ok'>{html.escape(empty)}</p>" if empty else ""
    items = []
    for f in sort_findings(list(findings)):
        fix = f"<div class='gc-fix'><b>What to do:</b> {esc(f.fix)}</div>" if f.fix else ""
        items.append(f"<li class='gc-sev-{f.severity}'><b>{SEVERITY_WORDS[f.severity]}:</b> {esc(f.message)}"
                     f" <span class='gc-code'>({html.escape(f.code)})</span>{fix}</li>")
    return "<ul class='gc-findings-list'>" + "".join(items) + "</ul>"


def section_html(section: Section) -> str:
    """A section as HTML: a page break, its title, its text, its charts as SVG, its findings."""
    out = [f"<section class='gc-section'><h2>{esc(section.title)}</h2>", section.html]
    out += [figure_html(c) for c in section.charts]
    if section.findings:
        out.append("<h3>Findings</h3>" + findings_list_html(section.findings))
    out.append("</section>")
    return "".join(out)


def _p(*sentences: str) -> str:
    return "<p>" + " ".join(esc(s) for s in sentences if s) + "</p>"


def _pct(v: float | None) -> str:
    return value_text(v, "%")


def _name(cat: Any, table: str, id_: str | None) -> str:
    if not id_:
        return MISSING
    try:
        return str(cat.get(table, id_).get("name") or id_)
    except GpuClusterError:
        return id_


def _fabric_words(d: Design) -> str:
    net = d.network
    kind = {"fat-tree": "fat-tree", "leaf-spine": "leaf-spine", "rail-optimized": "rail-optimised",
            "ring": "ring", "tree": "tree", "single-switch": "single-switch"}.get(net.kind, net.kind)
    switches = sum(g.count for g in net.switch_groups if g.network == "compute")
    return (f"{net.tiers}-tier {kind} fabric of {plural(switches, 'switch', 'switches')} "
            f"({_name(d.catalog, 'switches', net.switch_id)}), {net.injection_gbps_per_gpu:,.0f} Gb/s per GPU")


# --------------------------------------------------------------------------- executive summary


def _summary_groups(d: Design) -> list[tuple[str, list[tuple[str, str]]]]:
    """The executive summary's three lists: (heading, [(label, text)])."""
    s = d.summary()
    hw, fac, cst = d.hardware, d.facility, d.cost
    built = [
        ("GPUs", f"{figure_text(s['gpus'])} × {hw.accelerator['name']}"),
        ("Nodes", f"{figure_text(s['nodes'])} × {hw.server['name'] if hw.server else 'custom node'}"
                  f" (+ {figure_text(s['spare_nodes'])} hot spare{'' if s['spare_nodes']['value'] == 1 else 's'})"),
        (s["racks"]["label"], figure_text(s["racks"])),
        (s["it_power_kw"]["label"], f"{figure_text(s['it_power_kw'])} ({fac.it_power_kw / 1000:,.2f} MW)"),
        (s["facility_power_kw"]["label"],
         f"{figure_text(s['facility_power_kw'])} ({fac.facility_power_kw / 1000:,.2f} MW)"),
        ("Compute fabric", _fabric_words(d)),
        (s["switches"]["label"], figure_text(s["switches"])),
        (s["floor_area_m2"]["label"], figure_text(s["floor_area_m2"])),
    ]
    does: list[tuple[str, str]] = []
    if d.training is not None:
        does += [(s[k]["label"], figure_text(s[k])) for k in ("training_days", "training_days_expected",
                                                            "training_days_p90", "mfu") if s[k]["value"] is not None]
        does.append(("Training throughput", format_value(d.training.tokens_per_s, "tokens/s")))
    if d.serving is not None and s["tokens_per_s_per_gpu"]["value"] is not None:
        does += [(s["tokens_per_s_per_gpu"]["label"], figure_text(s["tokens_per_s_per_gpu"])),
                 (s["serving_gpus"]["label"], figure_text(s["serving_gpus"]))]
    if not does:
        does.append(("Workload", "none in the scenario: hardware, facility and cost only"))
    costs = [
        (s["capex"]["label"], figure_text(s["capex"])),
        ("OpEx per year", format_value(cst.opex_per_year["total"], cst.currency)),
        (s["tco"]["label"], figure_text(s["tco"])),
        (s["cost_per_gpu_hour"]["label"], figure_text(s["cost_per_gpu_hour"])),
    ]
    if cst.cost_per_million_tokens is not None:
        costs.append(("Cost per million output tokens", format_value(cst.cost_per_million_tokens, cst.currency)))
    if s["training_run_cost"]["value"] is not None:
        costs.append((s["training_run_cost"]["label"], figure_text(s["training_run_cost"])))
    costs.append((s["co2e_tonnes_per_year"]["label"], figure_text(s["co2e_tonnes_per_year"])))
    return [("What is built", built), ("What it does", does), ("What it costs", costs)]


def top_findings(d: Design, n: int = 3) -> list[Finding]:
    """The ``n`` findings that matter most: errors, then warnings, then notes that carry a fix."""
    ranked = sort_findings(d.findings)
    serious = [f for f in ranked if f.severity in ("error", "warning")]
    notes = [f for f in ranked if f.severity == "info" and f.fix]
    return (serious + notes)[:n]


def executive_summary_html(d: Design) -> str:
    """Page 1: title, what is built / does / costs, the three main findings, the hall."""
    from gpucluster_lib.charts.report_design import hall_chart

    sc = d.scenario
    findings = d.findings
    errors = sum(f.severity == "error" for f in findings)
    warnings = sum(f.severity == "warning" for f in findings)
    groups = "".join(
        f"<div class='gc-kf-group'><h3>{html.escape(title)}</h3>"
        + "".join(f"<div class='gc-kf'><span class='gc-kf-label'>{esc(k)}</span>"
                  f"<span class='gc-kf-value'>{html.escape(v)}</span></div>" for k, v in rows)
        + "</div>" for title, rows in _summary_groups(d))
    tops = top_findings(d)
    status = (f"{plural(errors, 'error')} and {plural(warnings, 'warning')} among {plural(len(findings), 'finding')}."
              if findings else "No findings.")
    return (
        "<section class='gc-summary'>"
        f"<h1>{html.escape(sc.name)}</h1>"
        + (f"<p class='gc-lede'>{esc(sc.description)}</p>" if sc.description else "")
        + "<h2 class='gc-nobreak'>Executive summary</h2>"
        f"<div class='gc-kf-groups'>{groups}</div>"
        f"<h3>The three most important findings</h3><p class='gc-status'>{html.escape(status)}</p>"
        + findings_list_html(tops, empty="No errors or warnings: the design holds together as specified.")
        + figure_html(hall_chart(d.facility))
        + f"<p class='gc-src'>GPU cluster design workbook {html.escape(__version__)}. Every figure comes from one "
          "design of the scenario; catalogue values carry their sources (appendix); prices are indicative.</p>"
        "</section>")


# --------------------------------------------------------------------------- stage sections


def _hardware_section(d: Design) -> Section:
    from gpucluster_lib.charts.report_design import node_power_chart

    hw, node = d.hardware, d.node
    acc = hw.accelerator
    bf16 = acc.get("bf16_tflops") or 0.0
    text = _p(
        f"The cluster is {plural(hw.nodes, 'node')} of {node.name}, each with {hw.gpus_per_node} {acc['name']} GPUs: "
        f"{hw.gpus:,} GPUs in all, {bf16 * hw.gpus / 1000:,.0f} PFLOP/s of dense BF16 compute at peak.",
        f"One node draws up to {node.peak_power_w / 1000:,.1f} kW ({node.typical_power_w / 1000:,.1f} kW typical)"
        + (f" from {node.psu_count} power supplies ({node.psu_redundancy})" if node.psu_count else "")
        + f" and takes {node.rack_units} rack units.")
    rows = [("GPU", acc["name"]), ("GPU memory", format_value(acc["memory_gib"], "GiB")),
            ("GPU memory bandwidth", format_value(acc["memory_bandwidth_gb_per_s"], "GB/s")),
            ("Dense BF16 compute per GPU", format_value(acc["bf16_tflops"], "TFLOP/s")),
            ("Dense FP8 compute per GPU", format_value(acc.get("fp8_tflops"), "TFLOP/s")),
            ("GPU power (TDP)", format_value(acc["tdp_w"], "W")),
            ("GPUs per node", format_value(hw.gpus_per_node)), ("Nodes", format_value(hw.nodes)),
            ("GPUs", format_value(hw.gpus)), ("Node peak power", format_value(node.peak_power_w, "W")),
            ("Node weight", format_value(node.weight_kg, "kg"))]
    return Section("Hardware and node", text + numbers_html(rows), [node_power_chart(node)], list(node.findings),
                   module="hardware")


def _network_section(d: Design) -> Section:
    from gpucluster_lib.charts.topology import topology_chart

    net = d.network
    nets = net.to_dict()["networks"]
    text = _p(
        f"The compute fabric is a {_fabric_words(d)}, {net.oversubscription:g}:1 oversubscribed at the leaves, "
        f"with a bisection bandwidth of {net.bisection_bandwidth_gbps / 1000:,.1f} Tb/s.",
        f"A GPU reaches any other in at most {net.switch_hops} switch hops. Separate storage and management "
        f"networks bring the total to {sum(g.count for g in net.switch_groups):,} switches "
        f"drawing {net.network_power_w / 1000:,.1f} kW.")
    rows = [("Topology", net.kind.replace("-", " ")), ("Switch tiers", format_value(net.tiers)),
            ("Compute switch", _name(d.catalog, "switches", net.switch_id)),
            ("Network adapter", _name(d.catalog, "nics", net.nic_id)),
            ("Link speed", format_value(net.link_gbps, "Gb/s")),
            ("Bandwidth per GPU", format_value(net.injection_gbps_per_gpu, "Gb/s")),
            ("Bisection bandwidth", format_value(net.bisection_bandwidth_gbps, "Gb/s")),
            ("Largest cluster this design grows to", format_value(net.max_endpoints, "GPUs")),
            ("Free switch ports", format_value(net.ports_free))]
    rows += [(f"{name.capitalize()} network", f"{plural(v['switches'], 'switch', 'switches')}, {plural(v['links'], 'link')}, "
              f"{v['power_w'] / 1000:,.1f} kW") for name, v in nets.items()]
    rows += [("Cables, all networks", format_value(sum(net.cables_all.values()))),
             ("Optical transceivers, all networks", format_value(sum(net.transceivers_all.values())))]
    return Section("Network", text + numbers_html(rows), [topology_chart(net, width=540, height=300)],
                   list(net.findings), module="network")


def _storage_section(d: Design) -> Section:
    st = d.storage
    sd = st.to_dict()
    name = _name(d.catalog, "storage", sd["system"])
    ckpt = (f"one checkpoint of {sd['checkpoint_bytes'] / 1e9:,.0f} GB is written in {sd['checkpoint_write_s']:,.0f} s "
            f"(target {sd['checkpoint_target_s']:,.0f} s).")
    if sd["units"]:
        text = _p(f"Checkpoints and data live on {sd['units']} × {name} ({sd['kind'].replace('-', ' ')}), "
                  f"{format_value(sd['capacity_tb'], 'TB')} usable, writing {sd['write_gb_per_s']:,.0f} GB/s: {ckpt}")
    else:
        text = _p(f"No shared storage appliance: checkpoints go to the node's local drives at "
                  f"{sd['write_gb_per_s']:,.0f} GB/s; {ckpt}")
    rows = [("Storage system", name), ("Appliances", format_value(sd["units"])),
            ("Usable capacity", format_value(sd["capacity_tb"], "TB")),
            ("Write bandwidth", format_value(sd["write_gb_per_s"], "GB/s")),
            ("Checkpoint size", format_value(sd["checkpoint_bytes"] / 1e9, "GB")),
            ("Checkpoint write time", format_value(sd["checkpoint_write_s"], "s")),
            ("Storage power", format_value(sd["power_w"], "W"))]
    return Section("Shared storage", text + numbers_html(rows), [], list(getattr(st, "findings", []) or []),
                   module="storage")


def _facility_section(d: Design) -> Section:
    from gpucluster_lib.charts.facility import rack_elevation
    from gpucluster_lib.charts.report_design import cooling_chart, power_chart

    f = d.facility
    cooling = {"air": "air", "rear_door": "rear-door heat exchangers", "liquid": "direct liquid cooling"}
    text = _p(
        f"{plural(f.nodes_installed, 'node')} ({f.nodes:,} for the job and {plural(f.spare_nodes, 'hot spare')}) "
        f"{'fills' if f.nodes_installed == 1 else 'fill'} {plural(f.compute_racks, 'compute rack')} at {f.nodes_per_rack} per rack, plus "
        f"{plural(f.infra_racks, 'rack')} of network, storage and head nodes: {plural(f.racks, 'rack')} in "
        f"{plural(f.rows, 'row')} on {f.floor_area_m2:,.0f} m².",
        f"What limits a rack is its {f.binding_constraint}: {f.rack_power_kw:,.1f} kW per compute rack.",
        f"The IT load is {f.it_power_kw:,.0f} kW at peak; at a PUE of {f.pue:g} the facility draws "
        f"{f.facility_power_kw:,.0f} kW. The heat leaves by {cooling.get(f.cooling, f.cooling)}.")
    rows = [("Racks", format_value(f.racks)), ("Compute racks", format_value(f.compute_racks)),
            ("Nodes per rack", format_value(f.nodes_per_rack)), ("Power per compute rack", format_value(f.rack_power_kw, "kW")),
            ("IT power at peak", format_value(f.it_power_kw, "kW")),
            ("IT power, typical", format_value(f.it_typical_kw, "kW")), ("PUE", format_value(f.pue)),
            ("Facility power at peak", format_value(f.facility_power_kw, "kW")),
            ("Heat load", f"{format_value(f.heat_load_kw, 'kW')} ({format_value(f.cooling_tons, 'tons')} of cooling)"),
            ("Airflow", format_value(f.airflow_cfm, "CFM")),
            ("UPS", f"{format_value(f.ups_kw, 'kW')} ({f.power_redundancy})"),
            ("Generator", format_value(f.generator_kw, "kW")),
            ("Planned growth", f"{_pct(f.growth_headroom)}: {format_value(f.planned_it_power_kw, 'kW')} of IT, "
                               f"{f.planned_racks:,} racks"),
            ("Energy per year", format_value(f.annual_energy_mwh, "MWh")),
            ("Floor area", format_value(f.floor_area_m2, "m²"))]
    return Section("Power, cooling and space", text + numbers_html(rows),
                   [rack_elevation(f), power_chart(f), cooling_chart(f)], list(f.findings), module="facility")


def _count_words(n: float) -> str:
    """A large count in words: 2.0 trillion, 300 billion."""
    for size, word in ((1e12, "trillion"), (1e9, "billion"), (1e6, "million")):
        if n >= size:
            return f"{n / size:,.3g} {word}"
    return f"{n:,.0f}"


def _plan_words(plan: dict[str, Any]) -> str:
    parts = [f"tensor {plan['tensor']}", f"pipeline {plan['pipeline']}", f"data {plan['data']}"]
    if plan.get("context", 1) > 1:
        parts.append(f"context {plan['context']}")
    if plan.get("expert", 1) > 1:
        parts.append(f"expert {plan['expert']}")
    return " × ".join(parts)


def _training_section(d: Design) -> Section:
    from gpucluster_lib.charts.report_design import step_time_chart, training_memory_chart

    t = d.training
    if t is None:
        return Section("Training", _p("No model in the scenario: nothing to train."), module="training")
    td = t.to_dict()
    plan = td["plan"]
    tokens = d.scenario.training.tokens
    text = _p(
        f"{td['model']} ({td['params'] / 1e9:,.1f} billion parameters) trains on {td['gpus']:,} GPUs split as "
        f"{_plan_words(plan)} (recompute: {plan['recompute']}).",
        f"One step of {td['tokens_per_step']:,} tokens takes {td['step_time_s']:.2f} s, so the cluster processes "
        f"{td['tokens_per_s']:,.0f} tokens/s at {_pct(td['mfu'])} model FLOPs utilisation"
        + (f"; {_count_words(tokens)} tokens take {td['training_days']:,.1f} days without failures." if tokens
           and td.get("training_days") else "."),
        "Memory per GPU " + ("fits." if td["fits"] else "does NOT fit: see the findings."))
    rows = [("Model", td["model"]), ("Parameters", format_value(td["params"])),
            ("Parallelism", _plan_words(plan)), ("Global batch", format_value(plan["global_batch_size"], "sequences")),
            ("Step time", format_value(td["step_time_s"], "s")),
            ("Training throughput", format_value(td["tokens_per_s"], "tokens/s")),
            ("Model FLOPs utilisation", _pct(td["mfu"])),
            ("Achieved compute per GPU", format_value(td["model_tflops_per_gpu"], "TFLOP/s")),
            ("Memory per GPU", f"{td['memory_per_gpu_bytes']['total'] / GIB:,.1f} of "
                               f"{td['memory_capacity_bytes'] / GIB:,.0f} GiB"),
            ("Days to train, no failures", format_value(td.get("training_days"), "days"))]
    return Section("Training", text + numbers_html(rows), [step_time_chart(t), training_memory_chart(t)],
                   list(t.findings), module="training")


def _serving_section(d: Design) -> Section:
    from gpucluster_lib.charts.report_design import serving_curve_chart, serving_memory_chart

    s = d.serving
    if s is None:
        return Section("Serving", _p("No model in the scenario: nothing to serve."), module="serving")
    if not getattr(s, "sweep", None) or getattr(s, "tokens_per_s_per_gpu", None) is None:
        sd = s.to_dict()
        rows = [(humanize_key(k), format_value(v)) for k, v in sd.items()
                if isinstance(v, (int, float)) and not isinstance(v, bool)][:12]
        return Section("Serving", _p(f"Serving {sd.get('model', 'the model')} takes {sd.get('gpus', MISSING)} GPUs.")
                       + numbers_html(rows), [], list(s.findings), module="serving")
    text = _p(
        f"Serving {s.model} in {s.precision.upper()} with {s.input_tokens:,} prompt and {s.output_tokens:,} output "
        f"tokens per request: a replica of {s.tensor_parallel} GPU(s) runs {s.batch:,} requests at once, "
        f"{s.tokens_per_s_per_gpu:,.0f} output tokens/s per GPU, first token in {s.ttft_s * 1000:,.0f} ms and "
        f"then one token every {s.tpot_s * 1000:,.0f} ms (targets {s.ttft_slo_s * 1000:,.0f} and "
        f"{s.tpot_slo_s * 1000:,.0f} ms).",
        (f"The demand of {s.target_tokens_per_s:,.0f} tokens/s takes {plural(s.replicas, 'replica')}: "
         f"{plural(s.gpus, 'GPU')}."
         if s.target_tokens_per_s else ""),
        "" if s.meets_slo else "The latency targets are NOT met: see the findings.")
    rows = [("Precision", s.precision.upper()), ("GPUs per replica", format_value(s.tensor_parallel)),
            ("Requests in flight per replica", format_value(s.batch)),
            ("Output tokens/s per GPU", format_value(s.tokens_per_s_per_gpu, "tokens/s")),
            ("Time to first token", format_value(s.ttft_s * 1000, "ms")),
            ("Time per output token", format_value(s.tpot_s * 1000, "ms")),
            ("Replicas for the demand", format_value(s.replicas)), ("GPUs for the demand", format_value(s.gpus)),
            ("Fleet output", format_value(s.fleet_tokens_per_s, "tokens/s")),
            ("Output per MW of facility power", format_value(s.tokens_per_s_per_mw, "tokens/s"))]
    return Section("Serving", text + numbers_html(rows), [serving_curve_chart(s), serving_memory_chart(s)],
                   list(s.findings), module="serving")


def _reliability_section(d: Design) -> Section:
    from gpucluster_lib.charts.report_design import days_band_chart, interruptions_chart

    r = d.reliability
    sp = d.spares
    if r is None:
        text = _p(f"No transformer training job to checkpoint. {sp.spare_nodes} hot-spare node(s) stand by.")
        return Section("Reliability and spares", text, [], list(getattr(sp, "findings", []) or []), module="reliability")
    text = _p(
        f"At the failure rates of the {r.failure_preset} preset, the job is interrupted about "
        f"{r.interruptions_per_day:.2f} times a day (one interruption every {r.mtbi_hours:,.0f} hours).",
        f"Writing a checkpoint every {r.checkpoint_interval_s / 60:,.0f} minutes keeps {_pct(r.goodput)} of the "
        "time productive (goodput).",
        (f"Training then takes {r.training_days_expected:,.1f} days on average (P10 {r.training_days_p10:,.1f}, "
         f"P90 {r.training_days_p90:,.1f}) instead of {r.training_days_ideal:,.1f} days without failures."
         if r.training_days_expected else ""),
        f"{r.spare_nodes} hot-spare node(s) keep the full job size available {_pct(r.full_size_availability)} of "
        f"the time ({r.spare_nodes_recommended} recommended).")
    rows = [("Interruptions per day", format_value(r.interruptions_per_day)),
            ("Mean time between interruptions", format_value(r.mtbi_hours, "h")),
            ("Checkpoint interval", format_value(r.checkpoint_interval_s / 60, "min")),
            ("Checkpoint write time", format_value(r.checkpoint_write_s, "s")),
            ("Restart time", format_value(r.restart_s / 60, "min")), ("Goodput", _pct(r.goodput)),
            ("Days to train, expected with failures", format_value(r.training_days_expected, "days")),
            ("Days to train, P90", format_value(r.training_days_p90, "days")),
            ("Hot-spare nodes", format_value(r.spare_nodes)),
            ("Availability of the full job size", _pct(r.full_size_availability))]
    charts = [interruptions_chart(r)]
    if r.training_days_expected:
        charts.insert(0, days_band_chart(r))
    return Section("Reliability and spares", text + numbers_html(rows), charts, list(r.findings),
                   module="reliability")


def _cost_section(d: Design) -> Section:
    from gpucluster_lib.charts.report_design import cost_chart

    c = d.cost
    cur = c.currency
    text = _p(
        f"Building the cluster costs {money_text(c.capex['total'], cur)}; running it "
        f"{money_text(c.opex_per_year['total'], cur)} a year. Over {c.years} years the total cost of ownership is "
        f"{money_text(c.tco, cur)}, {format_value(c.cost_per_gpu_hour, cur)} per GPU-hour.",
        (f"One training run costs {money_text(c.training_run_cost, cur)} on this cluster against "
         f"{money_text(c.rent_training_run_cost, cur)} rented at {format_value(c.rent_per_gpu_hour, cur)} per "
         f"GPU-hour; owning pays off above {_pct(c.break_even_utilization)} utilisation."
         if c.training_run_cost else ""),
        f"The cluster uses {c.energy_mwh_per_year:,.0f} MWh a year, {c.co2e_tonnes_per_year:,.0f} t of CO2e "
        f"at {c.grid_kg_co2e_per_kwh * 1000:,.0f} g per kWh.")
    rows = [(f"CapEx: {humanize_key(k).lower()}", format_value(v, cur)) for k, v in c.capex.items() if k != "total"]
    rows += [("CapEx", format_value(c.capex["total"], cur))]
    rows += [(f"OpEx per year: {humanize_key(k).lower()}", format_value(v, cur))
             for k, v in c.opex_per_year.items() if k != "total"]
    rows += [("OpEx per year", format_value(c.opex_per_year["total"], cur)),
             (f"TCO over {c.years} years", format_value(c.tco, cur)),
             ("Cost per GPU-hour", format_value(c.cost_per_gpu_hour, cur)),
             ("Cost per million output tokens", format_value(c.cost_per_million_tokens, cur)),
             ("Training run cost", format_value(c.training_run_cost, cur)),
             ("Energy per year", format_value(c.energy_mwh_per_year, "MWh")),
             ("CO2e per year", format_value(c.co2e_tonnes_per_year, "t"))]
    return Section("Cost and carbon", text + numbers_html(rows), [cost_chart(c)], list(c.findings), module="cost")


#: The stage sections, in reading order: (title, builder).
STAGE_SECTIONS = [
    ("Hardware and node", _hardware_section),
    ("Network", _network_section),
    ("Shared storage", _storage_section),
    ("Power, cooling and space", _facility_section),
    ("Training", _training_section),
    ("Serving", _serving_section),
    ("Reliability and spares", _reliability_section),
    ("Cost and carbon", _cost_section),
]


def stage_sections(d: Design) -> list[Section]:
    """One section per stage. A stage that rejects the scenario shows its message instead."""
    out = []
    for title, build in STAGE_SECTIONS:
        try:
            out.append(build(d))
        except GpuClusterError as exc:
            out.append(Section(title, f"<div class='gc-msg gc-error'>{esc(exc)}</div>"))
    return out


# --------------------------------------------------------------------------- bill of materials


def bill_of_materials(d: Design) -> list[dict[str, Any]]:
    """What to buy: one row per item (group, item, quantity, note), from the stages' results."""
    from gpucluster_lib.network.cabling import load_cabling

    hw, f, net, st = d.hardware, d.facility, d.network, d.storage.to_dict()
    server = hw.server["name"] if hw.server else d.node.name
    rows = [{"group": "Compute", "item": server, "quantity": f.nodes_installed,
             "note": f"{plural(hw.nodes, 'job node')} + {plural(f.spare_nodes, 'hot spare')}, "
                     f"{hw.gpus_per_node} GPUs each"},
            {"group": "Compute", "item": hw.accelerator["name"], "quantity": f.nodes_installed * hw.gpus_per_node,
             "note": "inside the nodes"}]
    if f.head_nodes:
        rows.append({"group": "Compute", "item": "Head / management node", "quantity": f.head_nodes, "note": ""})
    for g in net.switch_groups:
        rows.append({"group": "Network", "item": _name(d.catalog, "switches", g.switch_id), "quantity": g.count,
                     "note": f"{g.network} network, {g.role}"})
    cables: dict[str, int] = {}
    optics: dict[str, int] = {}
    cab = load_cabling()
    for r in net.bom():
        if r["kind"] == "cable":
            cables[r.get("part") or r["id"]] = cables.get(r.get("part") or r["id"], 0) + r["count"]
        elif r["kind"] == "transceiver":
            t = cab.transceivers.get(r["id"])
            name = getattr(t, "name", None) or r["id"]
            optics[name] = optics.get(name, 0) + r["count"]
    rows += [{"group": "Cabling", "item": k, "quantity": v, "note": "all networks"} for k, v in sorted(cables.items())]
    rows += [{"group": "Cabling", "item": k, "quantity": v, "note": "optical transceivers"}
             for k, v in sorted(optics.items())]
    if st["units"]:
        rows.append({"group": "Storage", "item": _name(d.catalog, "storage", st["system"]), "quantity": st["units"],
                     "note": f"{format_value(st['capacity_tb'], 'TB')} usable"})
    rows.append({"group": "Facility", "item": f"{f.rack_units}U rack with power distribution", "quantity": f.racks,
                 "note": f"{f.compute_racks} compute, {f.infra_racks} infrastructure"})
    return rows


def bill_of_materials_html(d: Design) -> str:
    rows = bill_of_materials(d)
    body = "".join(f"<tr><td>{esc(r['group'])}</td><td>{esc(r['item'])}</td><td class='num'>{r['quantity']:,}</td>"
                   f"<td>{esc(r['note'])}</td></tr>" for r in rows)
    c = d.cost
    capex = "".join(f"<tr><td>{esc(humanize_key(k))}</td><td class='num'>{html.escape(format_value(v, c.currency))}"
                    "</td></tr>" for k, v in c.capex.items() if k != "total")
    return ("<section class='gc-section'><h2>Bill of materials</h2>"
            "<p>What the design buys, from the same stages as the sections above; the prices behind the CapEx "
            "are in the appendix.</p>"
            "<table class='gc-table gc-bom'><thead><tr><th>Group</th><th>Item</th><th>Quantity</th><th>Note</th></tr>"
            f"</thead><tbody>{body}</tbody></table>"
            "<h3>CapEx by group</h3><table class='gc-table gc-numbers'><tbody>"
            f"{capex}<tr><td><b>CapEx</b></td><td class='num'><b>{html.escape(format_value(c.capex['total'], c.currency))}"
            "</b></td></tr></tbody></table></section>")


def all_findings_html(d: Design) -> str:
    findings = d.findings
    return ("<section class='gc-section'><h2>Findings and fixes</h2>"
            "<p>Every finding of every stage, most severe first. Errors make the design unworkable as specified; "
            "warnings deserve a decision; notes record how a figure was reached. Each code is explained in the "
            "workbook's findings reference.</p>"
            + findings_list_html(findings, empty="No findings.") + "</section>")


# --------------------------------------------------------------------------- appendix: assumptions

#: Human names of the training engine's efficiency parameters (the rest are humanised keys).
EFFICIENCY_NAMES = {
    "gemm_efficiency": ("Matrix-multiply efficiency", "%"), "fp8_gemm_factor": ("FP8 speed-up factor", ""),
    "memory_efficiency": ("Memory bandwidth efficiency", "%"),
    "flash_attention_efficiency": ("Fused attention efficiency at long sequences", "%"),
    "attention_half_rate_tokens": ("Sequence at half the attention kernel's rate", "tokens"),
    "nvlink_efficiency": ("NVLink bandwidth efficiency", "%"), "network_efficiency": ("Network bandwidth efficiency", "%"),
    "layer_overhead_s": ("Overhead per layer", "s"), "alpha_nvlink_s": ("NVLink message latency", "s"),
    "alpha_network_s": ("Network message latency", "s"), "dp_overlap": ("Data-parallel communication hidden", "%"),
    "zero3_overlap": ("ZeRO-3 communication hidden", "%"), "cp_overlap": ("Context-parallel communication hidden", "%"),
    "ep_overlap": ("Expert-parallel communication hidden", "%"), "tp_overlap": ("Tensor-parallel communication hidden", "%"),
    "step_overhead": ("Step overhead (a share of the step)", "%"), "cuda_context_gib": ("Runtime memory per GPU", "GiB"),
    "comm_buffers_gib": ("Communication buffers per GPU", "GiB"), "fragmentation": ("Memory fragmentation", "%"),
    "optimizer_bytes_per_param": ("Optimizer memory traffic per parameter", "bytes"),
    "gemm_half_dim": ("Matrix size at half efficiency", ""),
    "flash_backward_factor": ("Attention backward / forward cost", ""),
}
SERVING_NAMES = {
    "gemm_efficiency_16bit": ("Matrix-multiply efficiency, 16-bit", "%"),
    "gemm_efficiency_8bit": ("Matrix-multiply efficiency, 8-bit", "%"),
    "memory_bandwidth_efficiency": ("Memory bandwidth efficiency", "%"),
    "decode_step_overhead_s": ("Overhead per decode step", "s"), "allreduce_latency_s": ("All-reduce latency", "s"),
    "link_bandwidth_efficiency": ("NVLink bandwidth efficiency", "%"),
    "memory_utilization": ("Share of GPU memory the engine uses", "%"),
    "runtime_overhead_gib": ("Runtime memory outside the cache", "GiB"),
    "gemm_efficiency_used": ("Matrix-multiply efficiency at the serving precision", "%"),
    "iteration_host_time_s": ("Engine time per iteration (fitted)", "ms"),
    "host_time_per_sequence_s": ("Engine time per sequence in flight per iteration (fitted)", "µs"),
}
#: serving values shown in a smaller unit than the seconds they are kept in
SERVING_SCALE = {"iteration_host_time_s": 1e3, "host_time_per_sequence_s": 1e6}
#: Human names of the storage sizing's sources.
STORAGE_SOURCE_NAMES = {"power": "Storage power", "rack_units": "Storage rack units",
                        "storage": "Storage system", "checkpoint_bytes": "Checkpoint size",
                        "checkpoint_write_gb_per_s": "Checkpoint write bandwidth",
                        "read_gb_per_s_per_gpu": "Training data read bandwidth", "dataset": "Training data set size"}
PRICE_NAMES = {"facility_per_kw": "Facility build cost per kW", "head_node": "Head node", "network": "Network",
               "rack": "Rack with power distribution", "rent": "Rented GPU-hour", "server": "Server",
               "storage": "Storage system", "storage_per_tb": "Storage per TB",
               "storage:capacity": "Capacity-tier storage system",
               "storage_capacity_per_tb": "Capacity-tier storage per TB"}


def _price_name(key: str, d: Design) -> str:
    if ":" in key:
        kind, _, rest = key.partition(":")
        if kind in ("switch", "transceiver"):
            table = "switches" if kind == "switch" else None
            return f"{kind.capitalize()} {_name(d.catalog, table, rest) if table else rest}"
        if kind == "cable":
            parts = rest.split(":")
            return f"Cable {parts[0]} ({', '.join(parts[1:])})"
    return PRICE_NAMES.get(key, humanize_key(key))


#: Count units of the scenario fields and their singular ("1 entry", not "1 entrie").
_COUNT_UNITS = {"sequences": "sequence", "tokens": "token", "days": "day", "requests": "request", "images": "image",
                "entries": "entry", "nodes": "node", "GPUs": "GPU"}


def _scenario_inputs(d: Design) -> list[tuple[str, str, str]]:
    """(name, value, where it comes from) for every scenario input that is set."""
    from gpucluster_lib.scenario import field_docs

    rows = []
    for path, _tp, doc in field_docs():
        top = path.split(".")[0]
        if top in ("name", "description", "catalog"):
            continue
        value: Any = d.scenario
        try:
            for part in path.split("."):
                value = getattr(value, part)
        except AttributeError:
            continue
        if value is None or value == {} or value == [] or dataclasses.is_dataclass(value):
            continue
        unit = doc[1:doc.index("]")] if doc.startswith("[") else ""
        if isinstance(value, dict):
            text = ", ".join(f"{humanize_text(str(k))} {format_value(v)}" for k, v in value.items())
        elif isinstance(value, (list, tuple)):
            text = plural(len(value), "entry", "entries")
        elif isinstance(value, str):
            text = humanize_text(value.replace("_", " "))
        elif unit == "%":  # a scenario percentage is written as one (99 = 99 %), not as a fraction
            text = f"{format_value(value)}%"
        elif unit.startswith("currency"):
            text = format_value(value, unit.replace("currency", d.scenario.costs.currency))
        else:
            if value == 1 and unit in _COUNT_UNITS:
                unit = _COUNT_UNITS[unit]  # "1 sequence", not "1 sequences"
            text = value_text(value, unit)
        rows.append((humanize_key(path), text, "the scenario"))
    return rows


def assumptions(d: Design) -> list[tuple[str, list[tuple[str, str, str]]]]:
    """The appendix: groups of (name, value with unit, source)."""
    groups: list[tuple[str, list[tuple[str, str, str]]]] = [("Design inputs", _scenario_inputs(d))]
    hw = d.hardware
    parts = [("Accelerator", hw.accelerator["name"], f"{hw.accelerator['source']} ({hw.accelerator['source_date']})")]
    if hw.server:
        parts.append(("Server", hw.server["name"], f"{hw.server.get('source', '')} ({hw.server.get('source_date', '')})"))
    for table, id_ in (("switches", d.network.switch_id), ("nics", d.network.nic_id)):
        if id_ and d.catalog.has(table, id_):
            row = d.catalog.get(table, id_)
            parts.append((table.rstrip("es") if table == "switches" else "Network adapter", row.get("name") or id_,
                          f"{row.get('source', '')} ({row.get('source_date', '')})"))
    groups.append(("Catalogue parts", [(n.capitalize(), v, s) for n, v, s in parts]))
    if d.training is not None:
        td = d.training.to_dict()
        a = td.get("assumptions", {})
        eff = a.get("efficiency", {})
        gens = GENERATION_WORDS.get(str(eff.get("generation", "")), "other")
        src = (f"efficiency table for {gens} GPUs, calibrated on published training runs" if eff.get("validated", True)
               else f"efficiency table for {gens} GPUs, not calibrated on published training runs (see the findings)")
        rows = [("Peak dense compute per GPU", format_value(a.get("peak_tflops"), "TFLOP/s"), "the accelerator catalogue"),
                ("Memory bandwidth per GPU", format_value(a.get("memory_bandwidth_gb_per_s"), "GB/s"),
                 "the accelerator catalogue"),
                ("NVLink bandwidth per direction", format_value(a.get("nvlink_gb_per_s_per_direction"), "GB/s"),
                 "the accelerator catalogue"),
                ("Network bandwidth per GPU", format_value(a.get("fabric_gbps_per_gpu"), "Gb/s"), "the network design")]
        if a.get("attention_kernel"):
            rows.append(("Fused attention kernel", a["attention_kernel"],
                         "the scenario, or the training framework's kernel for this GPU generation"))
        if a.get("fp8_recipe"):
            rows.append(("FP8 scaling recipe", a["fp8_recipe"],
                         "the scenario, or the training framework's recipe (Transformer Engine and torchao sources "
                         "in the framework table)"))
        if a.get("checkpoint_early_stop") is not None:
            rows.append(("Recomputation with full activation checkpointing",
                         "stops before the feed-forward output projection (PyTorch 2.1 and later)"
                         if a["checkpoint_early_stop"] else "reruns the whole layer",
                         "the training framework, or the scenario's checkpoint early stop setting"))
        if a.get("zero3_max_live_parameters") is not None:
            rows.append(("ZeRO-3 live-parameter limit (no prefetch while this many parameters are gathered)",
                         value_text(a["zero3_max_live_parameters"], "parameters"),
                         "the training framework (DeepSpeed's default), or the scenario's live-parameter limit"))
        cal = a.get("calibration") or {}
        cal_src = ""
        if cal:
            from gpucluster_lib.training.estimate import CALIBRATION_TERM_NAMES

            kind = "an example built from public measurements" if cal.get("example") else "measured"
            cal_src = f"the calibration profile {cal['name']} ({kind}, {cal['date']})"
            terms = [CALIBRATION_TERM_NAMES.get(t, humanize_key(t)) for t in cal.get("terms", [])]
            rows.append(("Calibration profile", f"{cal['name']}, dated {cal['date']}"
                         + (f", measured on {cal['device']}" if cal.get("device") else "")
                         + (" (an example built from public measurements)" if cal.get("example") else ""),
                         "the scenario; it sets " + (", ".join(terms) if terms else "nothing the scenario "
                                                     "does not set itself")))
        for k, v in eff.items():
            if k in ("generation", "validated") or not isinstance(v, (int, float)):
                continue
            name, unit = EFFICIENCY_NAMES.get(k, (humanize_key(k), ""))
            rows.append((name, value_text(v, unit), cal_src if k in cal.get("terms", ()) else src))
        if a.get("flops_convention"):
            rows.append(("FLOPs convention", humanize_text(a["flops_convention"]), "Narayanan 2021, Korthikanti 2022"))
        groups.append(("Training time engine", rows))
    if d.serving is not None and getattr(d.serving, "efficiency", None):
        from gpucluster_lib.inference.engines import HOST_TERMS, engine_profile

        defaults = "serving efficiency defaults, checked against MLPerf Inference"
        engine = engine_profile(getattr(d.serving, "engine", None))
        own = set(engine.efficiency) | set(HOST_TERMS) if engine.terms else set()
        gemm_field = ("gemm_efficiency_8bit" if getattr(d.serving, "compute_precision", None) in ("fp8", "int8")
                      else "gemm_efficiency_16bit")
        if gemm_field in own:
            own.add("gemm_efficiency_used")
        src = {k: (f"the {engine.label} engine profile, fitted on TensorRT-LLM's own in-flight throughput tables"
                   if k in own else defaults) for k in d.serving.efficiency}
        rows = [(SERVING_NAMES.get(k, (humanize_key(k), ""))[0],
                 value_text(v * SERVING_SCALE.get(k, 1.0), SERVING_NAMES.get(k, ("", ""))[1]), src[k])
                for k, v in d.serving.efficiency.items()]
        prof = d.calibration if getattr(d.serving, "calibration", None) else None
        if prof is not None:
            rows.append(("Calibration profile", f"{prof.name}, dated {prof.date}"
                         + (f", measured on {prof.device}" if prof.device else ""),
                         "the scenario; its measured link bandwidth and latency and its matrix-multiply curve "
                         "replace the serving defaults the scenario does not set itself"
                         + (" (an example built from public measurements)" if prof.example else "")))
        rows += [("Modelling assumption", humanize_text(t), "serving engine") for t in d.serving.assumptions]
        groups.append(("Serving engine", rows))
    if d.reliability is not None:
        r = d.reliability
        from gpucluster_lib.charts.report_design import COMPONENT_NAMES

        rows = [(f"Failure rate: {COMPONENT_NAMES.get(k, humanize_key(k))}", format_value(v, "per 1,000 GPU-days"),
                 f"the {r.failure_preset} failure preset") for k, v in r.component_rates.items()]
        rows.append(("Restart time", format_value(r.restart_s / 60, "min"), "the scenario or the preset"))
        rows.append(("Repair time of a node", format_value(r.repair_hours, "h"), "the scenario or the preset"))
        groups.append(("Reliability", rows))
    c = d.cost
    rows = [(_price_name(k, d), "", humanize_text(v)) for k, v in sorted(c.price_sources.items())]
    rows.append(("Grid carbon intensity", format_value(c.grid_kg_co2e_per_kwh * 1000, "g CO2e/kWh"),
                 humanize_text(c.grid_source)))
    storage_sources = d.storage.to_dict().get("sources") or {}
    rows += [(STORAGE_SOURCE_NAMES.get(k, f"Storage {humanize_key(k).lower()}"), "", humanize_text(v)) for k, v in storage_sources.items()]
    groups.append(("Prices and other sources", rows))
    return groups


def assumptions_html(d: Design) -> str:
    parts = ["<section class='gc-section'><h2>Appendix: assumptions and sources</h2>"
             "<p>Every input of the design and every assumption of the engines behind it, with its value, unit and "
             "source. Values that come from the scenario can be changed there; the rest are the workbook's "
             "defaults.</p>"]
    for title, rows in assumptions(d):
        if not rows:
            continue
        body = "".join(f"<tr><td>{esc(n)}</td><td class='num'>{html.escape(v)}</td><td class='gc-src'>{esc(s)}</td></tr>"
                       for n, v, s in rows)
        parts.append(f"<h3>{html.escape(title)}</h3><table class='gc-table gc-appendix'><thead><tr><th>Name</th>"
                     f"<th>Value</th><th>Source</th></tr></thead><tbody>{body}</tbody></table>")
    parts.append("</section>")
    return "".join(parts)


# --------------------------------------------------------------------------- the whole document


def document_parts(d: Design, sections: Sequence[Section] | None = None) -> list[str]:
    """The document's HTML fragments in order (the report notebook displays them one by one)."""
    sections = stage_sections(d) if sections is None else sections
    return ([DOCUMENT_STYLE, executive_summary_html(d)] + [section_html(s) for s in sections]
            + [bill_of_materials_html(d), all_findings_html(d), assumptions_html(d)])


def html_page(title: str, body: str) -> str:
    return ("<!doctype html><html lang='en'><head><meta charset='utf-8'>"
            f"<title>{html.escape(title)}</title></head><body class='gc-doc'>{body}</body></html>")


def document_html(d: Design, sections: Sequence[Section] | None = None) -> str:
    """The whole design document as one standalone HTML page (the app's download)."""
    return html_page(d.scenario.name, "".join(document_parts(d, sections)))
