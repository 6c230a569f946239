"""Reports: execute the report notebook with papermill, export HTML without code.

``render_report(scenario_path, out_html)`` runs one scenario; ``render_batch(paths, out_dir)``
runs several (files or folders of ``*.yaml``), writes one report each plus ``index.html``,
shows a progress bar, and records a failing scenario in the index without stopping the others.

The report notebook shows the design document (:mod:`gpucluster_lib.report.document`) of one
:class:`~gpucluster_lib.design.Design`: the executive summary, :func:`report_sections` (one
chapter per stage), the bill of materials, the findings and the appendix all read that design's
stage results, so the report shows the same numbers as the CLI and the app.
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

from gpucluster_lib.design import Design
from gpucluster_lib.errors import GpuClusterError, ScenarioError, excerpt
from gpucluster_lib.report.document import (
    Section,
    all_findings_html,
    assumptions_html,
    bill_of_materials_html,
    executive_summary_html,
    section_html,
    stage_sections,
)
from gpucluster_lib.report.kernel import ReportError
from gpucluster_lib.report.style import DOCUMENT_STYLE
from gpucluster_lib.report.text import esc, figure_text
from gpucluster_lib.scenario import load_scenario

NOTEBOOK_DIR = Path(__file__).resolve().parent  # report.ipynb ships in the package (source: notebooks/report.py)
REPORT_NOTEBOOK = NOTEBOOK_DIR / "report.ipynb"
EXECUTION_TIMEOUT_S = 600




# ---------------------------------------------------------------- sections (used inside the notebook)

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
        if fig["value"] is None:
            continue
        rows.append(f"<tr><td>{html.escape(fig['label'])}</td><td class='num'>{html.escape(figure_text(fig))}</td></tr>")
    findings = d.findings
    errors = sum(1 for f in findings if f.severity == "error")
    warnings = sum(1 for f in findings if f.severity == "warning")
    status = (f"<p><b>{errors} error(s)</b> and {warnings} warning(s) in the findings below.</p>"
              if errors or warnings else "<p>No errors or warnings in the findings.</p>")
    return ("<h2>Key figures</h2><table class='gc-table gc-kf'><tbody>" + "".join(rows)
            + "</tbody></table>" + status)


def report_sections(x: Any) -> ReportSections:
    """The report's chapters, one per stage of the same Design (see :mod:`.document`).

    ``x``: a :class:`~gpucluster_lib.design.Design` or a Scenario. A stage that rejects the
    scenario shows its message as the section body, so one weak section never sinks the
    report.
    """
    d = _design(x)
    sections = stage_sections(d)
    # the software-stack, security and data-management plans (report/operations.py)
    from gpucluster_lib.report import operations as ops_sections

    try:
        sections += [Section(t, h, [], f, module="operations") for t, h, f in ops_sections.sections(d)]
    except GpuClusterError as exc:
        sections.append(Section("Operations", f"<div class='gc-msg gc-error'>{esc(exc)}</div>", [], []))
    return ReportSections(sections, d)


def report_header_html(x: Any) -> str:
    """Page 1 of the design document: the executive summary (with the document's CSS)."""
    d = _design(x)
    return DOCUMENT_STYLE + executive_summary_html(d)


def report_tail_html(x: Any) -> str:
    """After the stage sections: the bill of materials, every finding with its fix, the appendix."""
    d = x.design if isinstance(x, ReportSections) else _design(x)
    return bill_of_materials_html(d) + all_findings_html(d) + assumptions_html(d)


def render_sections_html(sections: Sequence[Section]) -> str:
    return "".join(section_html(s) for s in sections)


# ---------------------------------------------------------------- execution (papermill + nbconvert)

def render_report(scenario_path: str | os.PathLike, out_html: str | os.PathLike, *,
                  notebook: str | os.PathLike = REPORT_NOTEBOOK, timeout_s: int = EXECUTION_TIMEOUT_S,
                  keep_notebook: bool = False, pdf: bool = False, allow_paths: bool = False) -> Path:
    """Execute the report notebook for one scenario and write ``out_html`` (no code cells);
    with ``pdf``, also ``out_html`` printed to PDF beside it (:func:`.pdf.html_to_pdf`).

    The scenario is loaded first, so a malformed file fails fast with its key path. Its
    ``catalog:`` CSVs must lie inside its folder unless ``allow_paths`` (``--allow-paths``),
    which the notebook's kernel is given too.
    """
    scenario_path = Path(scenario_path).resolve()
    scenario = load_scenario(scenario_path, allow_paths=allow_paths)  # validate before spending a kernel on it
    if pdf:
        from gpucluster_lib.report.pdf import chromium_path

        chromium_path()  # no browser: fail before the notebook runs, with the install command
    out_html = Path(out_html)
    created = writable_file(out_html)  # an unwritable -o fails now, not after the notebook has run
    pdf_path = out_html.with_suffix(".pdf")
    if pdf and not pdf_path.exists():
        created.insert(0, pdf_path)  # a PDF that fails half-way is removed with the rest
    try:
        _execute(scenario, scenario_path, out_html, notebook, timeout_s, keep_notebook, allow_paths)
        if pdf:
            from gpucluster_lib.report.pdf import html_to_pdf

            html_to_pdf(out_html, pdf_path)
    except BaseException:
        remove_created(created)  # a failed run, the notebook's or the PDF's, leaves nothing it made
        raise
    return out_html


def writable_file(path: Path, option: str = "-o") -> list[Path]:
    """Make ``path``'s folder and check that ``path`` can be written (a :class:`ReportError`
    naming ``option`` if not). Returns what the check created, for :func:`remove_created`: the
    (empty) file if it was new, then the folders it made, deepest first."""
    if path.is_dir():
        raise ReportError(f"{option}: {esc_path(path)} is a folder; give a file in it, such as "
                          f"{esc_path(path / 'report.html')}")
    existed = path.exists()
    new_folders = []
    for folder in path.parents:
        if folder.exists() or folder.is_symlink():
            break
        new_folders.append(folder)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "ab"):
            pass
    except OSError as exc:
        remove_created([f for f in new_folders if f.is_dir()])
        above = next((a for a in path.parents if a.exists()), None)
        reason = f"{esc_path(above)} is a file, not a folder" if above is not None and not above.is_dir() else (
            exc.strerror or str(exc))
        raise ReportError(f"{option}: cannot write {esc_path(path)} ({reason}); choose a file in a folder you can "
                          "write to") from None
    return ([] if existed else [path]) + new_folders


def remove_created(paths: list[Path]) -> None:
    """Remove what :func:`writable_file` created (a failed run leaves nothing behind): the file,
    then each folder while it is empty (one that now holds something else is kept)."""
    for p in paths:
        try:
            if p.is_dir() and not p.is_symlink():
                p.rmdir()
            else:
                p.unlink(missing_ok=True)
        except OSError:
            return   # a folder someone else has written into meanwhile: keep it and those above it


def writable_folder(path: Path, option: str = "-o") -> None:
    """Make the folder ``path`` (a :class:`ReportError` naming ``option`` if it cannot be)."""
    if path.exists() and not path.is_dir():
        raise ReportError(f"{option}: {esc_path(path)} is a file, but several scenarios write one report each "
                          "into a folder; give a folder name (OUTDIR)")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ReportError(f"{option}: cannot make the folder {esc_path(path)} ({exc.strerror or exc}); choose a "
                          "folder you can write to") from None


def esc_path(path: Path) -> str:
    """A path quoted for a message (long ones shortened)."""
    return excerpt(str(path), 240)


def _execute(scenario: Any, scenario_path: Path, out_html: Path, notebook: str | os.PathLike, timeout_s: int,
             keep_notebook: bool, allow_paths: bool) -> None:
    import nbformat

    from gpucluster_lib.report.kernel import execute_notebook, html_without_code

    with tempfile.TemporaryDirectory() as tmp:
        executed = Path(tmp) / "report.ipynb"
        # a failed or timed-out cell is a one-line ReportError (e.g. a price the cost stage needs)
        execute_notebook(notebook, executed, {"scenario_path": str(scenario_path), "allow_paths": allow_paths},
                         cwd=Path(notebook).resolve().parent, timeout_s=timeout_s,
                         what=f"the report of {scenario.name!r}", timeout_option="--timeout")
        nb = nbformat.read(executed, as_version=4)
        nb.metadata["title"] = scenario.name  # the page's title (and the PDF footer's)
        out_html.write_text(html_without_code(nb), encoding="utf-8")
        if keep_notebook:
            nbformat.write(nb, out_html.with_suffix(".ipynb"))


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
                 render: Callable[..., Path] | None = None, pdf: bool = False,
                 compare: bool = False, allow_paths: bool = False) -> list[BatchResult]:
    """One report per scenario (and its PDF with ``pdf``) plus ``index.html``; failures are
    recorded, not raised. With ``compare``, also ``comparison.html``: the reported designs side
    by side (:mod:`.compare`)."""
    from tqdm.auto import tqdm

    render = render or render_report
    paths = expand_inputs(inputs)
    out_dir = Path(out_dir)
    writable_folder(out_dir)
    results: list[BatchResult] = []
    bar = tqdm(paths, desc="reports", unit="scenario", disable=not progress)
    for p in bar:
        bar.set_postfix_str(p.name)
        t0 = time.perf_counter()
        target = out_dir / f"{p.stem}.html"
        try:
            render(p, target, timeout_s=timeout_s, **({"pdf": True} if pdf else {}),
                   **({"allow_paths": True} if allow_paths else {}))
            results.append(BatchResult(p, target, time.perf_counter() - t0))
        except Exception as exc:  # noqa: BLE001 - one bad scenario must not stop the batch
            msg = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
            # bad input reads as its message; anything else is a bug and keeps its type for the report
            results.append(BatchResult(p, None, time.perf_counter() - t0,
                                       msg if isinstance(exc, GpuClusterError) else f"{type(exc).__name__}: {msg}"))
    comparison = None
    good = [r.scenario for r in results if r.ok]
    if compare and len(good) >= 2:
        from gpucluster_lib.report.compare import render_comparison

        comparison = render_comparison(good, out_dir / "comparison.html", pdf=pdf, allow_paths=allow_paths).name
    (out_dir / "index.html").write_text(index_html(results, comparison), encoding="utf-8")
    return results


def index_html(results: Sequence[BatchResult], comparison: str | None = None) -> str:
    rows = []
    for r in results:
        pdf = r.output.with_suffix(".pdf") if r.output else None
        link = (f"<a href='{html.escape(r.output.name)}'>{html.escape(r.output.name)}</a>"
                + (f" · <a href='{html.escape(pdf.name)}'>PDF</a>" if pdf is not None and pdf.exists() else "")
                if r.output else "<span style='color:#b00020'>failed</span>")
        rows.append(f"<tr><td>{html.escape(r.scenario.name)}</td><td>{link}</td>"
                    f"<td>{html.escape(r.error)}</td></tr>")
    ok = sum(r.ok for r in results)
    return ("<!doctype html><html><head><meta charset='utf-8'><title>GPU cluster reports</title>"
            "<style>body{font-family:sans-serif} td,th{padding:4px 10px;border-bottom:1px solid #ddd}</style>"
            f"</head><body><h1>GPU cluster design reports</h1><p>{ok} of {len(results)} scenarios reported.</p>"
            + (f"<p><a href='{html.escape(comparison)}'>The designs compared side by side</a></p>" if comparison else "")
            +
            "<table><tr><th>scenario</th><th>report</th><th>error</th></tr>" + "".join(rows) + "</table></body></html>")
