"""Batch reports: execute ``notebooks/report.ipynb`` with papermill, export HTML without code.

``render_report(scenario_path, out_html)`` runs one scenario; ``render_batch(paths, out_dir)``
runs several (files or folders of ``*.yaml``), writes one report each plus ``index.html``,
shows a progress bar, and records a failing scenario in the index without stopping the others.

The report notebook itself only calls :func:`report_sections`, which gathers the
sections from the capability modules that are installed (hardware always; training,
power, network, inference, reliability and cost when their modules are present).
"""

from __future__ import annotations

import html
import importlib
import os
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpucluster_lib.errors import GpuClusterError, ScenarioError
from gpucluster_lib.findings import Finding, findings_html
from gpucluster_lib.scenario import Scenario, load_scenario

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


#: The headline numbers of each capability: (module, dotted key in its JSON, label, unit).
KEY_FIGURES: list[tuple[str, str, str, str]] = [
    ("training", "training_days", "Time to train (ideal)", "days"),
    ("training", "mfu", "Model FLOPs utilisation", ""),
    ("training", "fits", "Plan fits in GPU memory", ""),
    ("reliability", "training_days_expected", "Time to train with failures", "days"),
    ("reliability", "training_days_p10", "… P10", "days"),
    ("reliability", "training_days_p90", "… P90", "days"),
    ("reliability", "goodput", "Goodput", ""),
    ("facility", "racks", "Racks", ""),
    ("facility", "it_power_kw", "IT power", "kW"),
    ("facility", "facility_power_kw", "Facility power (PUE)", "kW"),
    ("facility", "cooling_tons", "Cooling", "tons"),
    ("topology", "switches.leaf", "Leaf switches", ""),
    ("topology", "switches.spine", "Spine switches", ""),
    ("topology", "switches.core", "Core switches", ""),
    ("topology", "per_gpu_allreduce_gbps", "All-reduce bandwidth per GPU", "Gb/s"),
    ("inference", "gpus", "Serving GPUs", ""),
    ("inference", "meets_slo", "Meets the latency SLO", ""),
    ("cost", "capex.total", "CapEx", "USD"),
    ("cost", "tco", "TCO", "USD"),
    ("cost", "cost_per_gpu_hour", "Cost per GPU-hour", "USD"),
    ("cost", "co2e_tonnes_per_year", "Emissions per year", "t CO2e"),
]


def _dig(d: dict[str, Any], dotted: str) -> Any:
    for part in dotted.split("."):
        if not isinstance(d, dict) or part not in d:
            return None
        d = d[part]
    return d


def key_figures_html(sections: Sequence[Section]) -> str:
    """The headline numbers across sections, as one small table."""
    by_module = {s.module: s.data for s in sections if s.data is not None}
    rows = []
    for module, key, label, unit in KEY_FIGURES:
        value = _dig(by_module.get(module) or {}, key)
        if value is None:
            continue
        if module in ("training", "reliability") and key in ("mfu", "goodput") and isinstance(value, float):
            text = f"{value:.1%}"
        else:
            text = _fmt_value(value)
        rows.append(f"<tr><td>{html.escape(label)}</td><td class='num'>{html.escape(text)}</td>"
                    f"<td>{html.escape(unit)}</td></tr>")
    errors = sum(1 for s in sections for f in s.findings if f.severity == "error")
    warnings = sum(1 for s in sections for f in s.findings if f.severity == "warning")
    status = (f"<p><b>{errors} error(s)</b> and {warnings} warning(s) in the findings below.</p>"
              if errors or warnings else "<p>No errors or warnings in the findings.</p>")
    return ("<h2>Key figures</h2><table class='gc-table gc-kf'><tbody>" + "".join(rows)
            + "</tbody></table>" + status)


def _fmt_value(v: Any) -> str:
    if isinstance(v, float):
        if v != v:
            return "–"
        a = abs(v)
        return f"{v:,.0f}" if a >= 1000 else (f"{v:,.2f}" if a >= 1 else f"{v:.4g}")
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}"
    if v is None:
        return "–"
    return str(v)


def dict_table(d: dict[str, Any], prefix: str = "") -> str:
    """A nested result dict (a CLI JSON object) as a two-column HTML table."""
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
                    rows.append((key, ", ".join(_fmt_value(x) for x in v)))
                elif v:
                    rows.append((key, f"{len(v)} entries"))
            else:
                rows.append((key, _fmt_value(v)))

    walk(d, prefix)
    body = "".join(f"<tr><td style='text-align:left'><code>{html.escape(k)}</code></td>"
                   f"<td class='num'>{html.escape(v)}</td></tr>" for k, v in rows)
    return f"<table class='gc-table'><tbody>{body}</tbody></table>"


def _hardware_section(scenario: Scenario) -> Section:
    from gpucluster_lib.hardware.resolve import catalog_for, resolve_hardware

    cat = catalog_for(scenario)
    hw = resolve_hardware(scenario, cat)
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
    return Section("Hardware", dict_table(facts) + src, [], [])


#: (title, module, function returning a result with to_dict(), chart hook or None)
CAPABILITIES: list[tuple[str, str, str]] = [
    ("Power, cooling and space", "facility", "budget"),
    ("Network topology", "topology", "design_topology"),
    ("Training time", "training", "estimate"),
    ("Inference serving", "inference", "serve"),
    ("Reliability", "reliability", "assess"),
    ("Cost and carbon", "cost", "assess"),
]


def report_sections(scenario: Scenario) -> list[Section]:
    """Every section the installed modules can produce for ``scenario``.

    A capability whose module is absent is skipped; one that rejects the scenario shows
    its message as the section body, so one weak section never sinks the report.
    """
    sections = [_hardware_section(scenario)]
    for title, module, func in CAPABILITIES:
        try:
            mod = importlib.import_module(f"gpucluster_lib.{module}")
        except ModuleNotFoundError:
            continue
        fn: Callable[..., Any] | None = getattr(mod, func, None)
        if fn is None:
            continue
        try:
            result = fn(scenario)
        except GpuClusterError as exc:
            sections.append(Section(title, f"<div class='gc-msg gc-error'>⚠ {html.escape(str(exc))}</div>", [], []))
            continue
        data = result.to_dict() if hasattr(result, "to_dict") else dict(result)
        charts = []
        chart_fn = getattr(mod, "report_charts", None)
        if chart_fn is not None:
            charts = list(chart_fn(result))
        findings = [f if isinstance(f, Finding) else Finding(**f) for f in (getattr(result, "findings", None) or [])]
        sections.append(Section(title, dict_table(data), charts, findings, data=data, module=module))
    return sections


def report_header_html(scenario: Scenario) -> str:
    """Title block: scenario name, description and the scenario itself as YAML."""
    from gpucluster_lib import __version__
    from gpucluster_lib.scenario import dumps
    from gpucluster_lib.report.style import STYLE

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
