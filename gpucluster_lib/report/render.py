"""Reports: execute the report notebook with papermill, export HTML without code.

``render_report(scenario_path, out_html)`` runs one scenario; ``render_batch(paths, out_dir)``
runs several (files or folders of ``*.yaml``), writes one report each plus ``index.html``,
shows a progress bar, and records a failing scenario in the index without stopping the others.

The report notebook calls :func:`report_sections` on one
:class:`~gpucluster_lib.design.Design`: every section reads that design's stage results, so
the report shows the same numbers as the CLI and the app.
"""

from __future__ import annotations

import html
import os
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpucluster_lib import __version__
from gpucluster_lib.design import Design
from gpucluster_lib.errors import GpuClusterError, ScenarioError
from gpucluster_lib.findings import Finding, findings_html
from gpucluster_lib.formatting import format_fraction, format_value, humanize_key
from gpucluster_lib.report.style import STYLE
from gpucluster_lib.scenario import dumps, load_scenario

NOTEBOOK_DIR = Path(__file__).resolve().parent  # report.ipynb ships in the package (source: notebooks/report.py)
REPORT_NOTEBOOK = NOTEBOOK_DIR / "report.ipynb"
EXECUTION_TIMEOUT_S = 600


# ---------------------------------------------------------------- sections (used inside the notebook)

@dataclass
class Section:
    title: str
    html: str
    charts: list[Any]
    findings: list[Finding]
    data: dict[str, Any] | None = None
    module: str = ""


def _design(x: Any) -> Design:
    return x if isinstance(x, Design) else Design(x)


class ReportSections(list):
    """The report's sections, with the design they came from."""

    def __init__(self, sections: Iterable[Section], design: Design):
        super().__init__(sections)
        self.design = design


def key_figures_html(x: Any) -> str:
    """The design's key figures (:meth:`Design.summary`) as one small table, and the count of
    errors and warnings among its findings. ``x``: a Design or :func:`report_sections`' result."""
    d = x.design if isinstance(x, ReportSections) else _design(x)
    rows = []
    for fig in d.summary().values():
        value = fig["value"]
        if value is None:
            continue
        text = format_fraction(value) if fig["unit"] == "fraction" else format_value(value)
        unit = "" if fig["unit"] == "fraction" else fig["unit"]
        rows.append(f"<tr><td>{html.escape(fig['label'])}</td><td class='num'>{html.escape(text)}</td>"
                    f"<td>{html.escape(unit)}</td></tr>")
    findings = d.findings
    errors = sum(1 for f in findings if f.severity == "error")
    warnings = sum(1 for f in findings if f.severity == "warning")
    status = (f"<p><b>{errors} error(s)</b> and {warnings} warning(s) in the findings below.</p>"
              if errors or warnings else "<p>No errors or warnings in the findings.</p>")
    return ("<h2>Key figures</h2><table class='gc-table gc-kf'><tbody>" + "".join(rows)
            + "</tbody></table>" + status)


def dict_table(d: dict[str, Any], prefix: str = "") -> str:
    """A nested result dict (a CLI JSON object) as a two-column HTML table with human labels."""
    rows = []

    def walk(obj: dict[str, Any], pre: str) -> None:
        for k, v in obj.items():
            if k == "findings":
                continue
            key = f"{pre}{k}"
            if isinstance(v, dict):
                walk(v, key + ".")
            elif isinstance(v, list):
                if v and all(not isinstance(x, (dict, list)) for x in v):
                    rows.append((key, ", ".join(format_value(x) for x in v)))
                elif v:
                    rows.append((key, f"{len(v)} entries"))
            else:
                rows.append((key, format_value(v)))

    walk(d, prefix)
    body = "".join(f"<tr><td style='text-align:left'>{html.escape(humanize_key(k))}</td>"
                   f"<td class='num'>{html.escape(v)}</td></tr>" for k, v in rows)
    return f"<table class='gc-table'><tbody>{body}</tbody></table>"


def _hardware_section(d: Design) -> Section:
    hw = d.hardware
    acc = hw.accelerator
    facts = {
        "accelerator": f"{acc['name']} ({acc['id']})",
        "server": hw.server["name"] if hw.server else "generic node",
        "gpus_per_node": hw.gpus_per_node,
        "nodes": hw.nodes,
        "gpus": hw.gpus,
        "memory_per_gpu_gib": acc["memory_gib"],
        "memory_bandwidth_gb_per_s": acc["memory_bandwidth_gb_per_s"],
        "dense_bf16_tflops": acc["bf16_tflops"],
        "dense_fp8_tflops": acc["fp8_tflops"],
        "tdp_w": acc["tdp_w"],
        "cluster_dense_bf16_pflops": (acc["bf16_tflops"] or 0) * hw.gpus / 1000,
    }
    src = f"<p class='gc-src'>Source: {html.escape(acc['source'])} ({html.escape(str(acc['source_date']))})</p>"
    return Section("Hardware", dict_table(facts) + src, [], list(d.node.findings), data=facts, module="hardware")


def _charts(stage: str, result: Any) -> list[Any]:
    if stage == "serving":
        if not getattr(result, "sweep", None):
            return []  # a vision fleet (or a model that does not fit) has no batch sweep
        from gpucluster_lib.charts.inference import memory_breakdown, throughput_latency

        return [throughput_latency(result.sweep_frame(), result.tpot_slo_s, result.batch),
                memory_breakdown(result.memory_per_gpu_bytes)]
    if stage == "reliability":
        from gpucluster_lib.charts.reliability import component_chart, interval_goodput_chart
        from gpucluster_lib.reliability.core import goodput_curve

        return [interval_goodput_chart(goodput_curve(result)), component_chart(result)]
    if stage == "cost":
        from gpucluster_lib.charts.cost import (
            build_vs_rent,
            carbon_chart,
            cost_waterfall,
            tco_over_years,
        )
        from gpucluster_lib.economics.cost import grid_presets

        return [cost_waterfall(result), tco_over_years(result), build_vs_rent(result),
                carbon_chart(result, grid_presets())]
    return []


#: (title, stage of the Design)
SECTIONS: list[tuple[str, str]] = [
    ("Power, cooling and space", "facility"),
    ("Network topology", "network"),
    ("Training time", "training"),
    ("Inference serving", "serving"),
    ("Reliability", "reliability"),
    ("Cost and carbon", "cost"),
]

#: What a section says when its stage does not apply to the scenario.
NOT_APPLICABLE = {
    "training": "No model in the scenario: nothing to train.",
    "serving": "No model in the scenario: nothing to serve.",
    "reliability": "No transformer model to checkpoint: no training-job reliability.",
}


def report_sections(x: Any) -> ReportSections:
    """The report's sections, each reading one stage of the same Design.

    ``x``: a :class:`~gpucluster_lib.design.Design` or a Scenario. A stage that rejects the
    scenario shows its message as the section body, so one weak section never sinks the
    report.
    """
    d = _design(x)
    sections = [_hardware_section(d)]
    for title, stage in SECTIONS:
        try:
            result = d.stage(stage)
        except GpuClusterError as exc:
            sections.append(Section(title, f"<div class='gc-msg gc-error'>⚠ {html.escape(str(exc))}</div>", [], []))
            continue
        if result is None:
            sections.append(Section(title, f"<p>{html.escape(NOT_APPLICABLE[stage])}</p>", [], [], module=stage))
            continue
        data = result.to_dict()
        findings = [f if isinstance(f, Finding) else Finding(**f) for f in (getattr(result, "findings", None) or [])]
        sections.append(Section(title, dict_table(data), _charts(stage, result), findings, data=data,
                                module=stage))
    # the software-stack, security and data-management plans (report/operations.py)
    from gpucluster_lib.report import operations as ops_sections

    try:
        sections += [Section(t, h, [], f, module="operations") for t, h, f in ops_sections.sections(d)]
    except GpuClusterError as exc:
        sections.append(Section("Operations", f"<div class='gc-msg gc-error'>⚠ {html.escape(str(exc))}</div>", [], []))
    return ReportSections(sections, d)


def report_header_html(x: Any) -> str:
    """Title block: scenario name, description and the scenario itself as YAML."""
    scenario = x.scenario if isinstance(x, Design) else x
    return (f"{STYLE}<h1>{html.escape(scenario.name)}</h1>"
            + (f"<p>{html.escape(scenario.description)}</p>" if scenario.description else "")
            + f"<p class='gc-src'>gpucluster_lib {__version__}. Every catalogue value carries its source "
            "(data/*.csv); prices are indicative estimates.</p>"
            f"<details><summary>Scenario YAML</summary><pre>{html.escape(dumps(scenario))}</pre></details>")


def section_html(section: Section) -> str:
    out = f"<h2>{html.escape(section.title)}</h2>{section.html}"
    if section.findings:
        out += findings_html(section.findings)
    return out


def render_sections_html(sections: Sequence[Section]) -> str:
    return "".join(section_html(s) for s in sections)


# ---------------------------------------------------------------- execution (papermill + nbconvert)

def render_report(scenario_path: str | os.PathLike, out_html: str | os.PathLike, *,
                  notebook: str | os.PathLike = REPORT_NOTEBOOK, timeout_s: int = EXECUTION_TIMEOUT_S,
                  keep_notebook: bool = False) -> Path:
    """Execute the report notebook for one scenario and write ``out_html`` (no code cells).

    The scenario is loaded first, so a malformed file fails fast with its key path.
    """
    import nbformat
    import papermill as pm
    from nbconvert import HTMLExporter

    scenario_path = Path(scenario_path).resolve()
    load_scenario(scenario_path)  # validate before spending a kernel on it
    out_html = Path(out_html)
    out_html.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        executed = Path(tmp) / "report.ipynb"
        pm.execute_notebook(
            str(notebook), str(executed), parameters={"scenario_path": str(scenario_path)},
            cwd=str(Path(notebook).resolve().parent), execution_timeout=timeout_s, progress_bar=False,
            kernel_name="python3", log_output=False,
        )
        nb = nbformat.read(executed, as_version=4)
        nb.metadata.pop("widgets", None)
        exporter = HTMLExporter(exclude_input=True, exclude_input_prompt=True, exclude_output_prompt=True)
        body, _ = exporter.from_notebook_node(nb)
        out_html.write_text(body, encoding="utf-8")
        if keep_notebook:
            nbformat.write(nb, out_html.with_suffix(".ipynb"))
    return out_html


def expand_inputs(inputs: Iterable[str | os.PathLike]) -> list[Path]:
    """Scenario files from files and folders (``*.yaml``/``*.yml``, sorted)."""
    paths: list[Path] = []
    for item in inputs:
        p = Path(item)
        if p.is_dir():
            paths.extend(sorted([*p.glob("*.yaml"), *p.glob("*.yml")]))
        elif p.exists():
            paths.append(p)
        else:
            raise ScenarioError("", f"scenario file or folder not found: {item}")
    if not paths:
        raise ScenarioError("", "no scenario files (*.yaml) found in the given paths")
    return paths


@dataclass
class BatchResult:
    scenario: Path
    output: Path | None
    seconds: float
    error: str = ""

    @property
    def ok(self) -> bool:
        return not self.error


def render_batch(inputs: Iterable[str | os.PathLike], out_dir: str | os.PathLike, *, progress: bool = True,
                 timeout_s: int = EXECUTION_TIMEOUT_S,
                 render: Callable[..., Path] | None = None) -> list[BatchResult]:
    """One report per scenario plus ``index.html``; failures are recorded, not raised."""
    from tqdm.auto import tqdm

    render = render or render_report
    paths = expand_inputs(inputs)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    results: list[BatchResult] = []
    bar = tqdm(paths, desc="reports", unit="scenario", disable=not progress)
    for p in bar:
        bar.set_postfix_str(p.name)
        t0 = time.perf_counter()
        target = out_dir / f"{p.stem}.html"
        try:
            render(p, target, timeout_s=timeout_s)
            results.append(BatchResult(p, target, time.perf_counter() - t0))
        except Exception as exc:  # noqa: BLE001 - one bad scenario must not stop the batch
            msg = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
            results.append(BatchResult(p, None, time.perf_counter() - t0, f"{type(exc).__name__}: {msg}"))
    (out_dir / "index.html").write_text(index_html(results), encoding="utf-8")
    return results


def index_html(results: Sequence[BatchResult]) -> str:
    rows = []
    for r in results:
        link = (f"<a href='{html.escape(r.output.name)}'>{html.escape(r.output.name)}</a>" if r.output
                else "<span style='color:#b00020'>failed</span>")
        rows.append(f"<tr><td>{html.escape(r.scenario.name)}</td><td>{link}</td>"
                    f"<td>{html.escape(r.error)}</td></tr>")
    ok = sum(r.ok for r in results)
    return ("<!doctype html><html><head><meta charset='utf-8'><title>GPU cluster reports</title>"
            "<style>body{font-family:sans-serif} td,th{padding:4px 10px;border-bottom:1px solid #ddd}</style>"
            f"</head><body><h1>GPU cluster design reports</h1><p>{ok} of {len(results)} scenarios reported.</p>"
            "<table><tr><th>scenario</th><th>report</th><th>error</th></tr>" + "".join(rows) + "</table></body></html>")
