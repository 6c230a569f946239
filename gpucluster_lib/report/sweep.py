"""The sweep report: a sweep's front, its table and the best design per objective, as HTML.

``render_sweep_report(outdir)`` executes the template ``sweep_report.ipynb`` (its source is
``notebooks/sweep_report.py``) with papermill on a sweep's results folder (``results.parquet``
and ``sweep.json``, as ``gpucluster sweep`` writes them) and exports ``OUTDIR/report.html``
without code. The template calls :func:`sweep_sections`, which reads only that folder.
"""

from __future__ import annotations

import html
import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpucluster_lib.errors import ScenarioError
from gpucluster_lib.findings import Finding, findings_html
from gpucluster_lib.formatting import format_value, humanize_key

NOTEBOOK_DIR = Path(__file__).resolve().parent
SWEEP_NOTEBOOK = NOTEBOOK_DIR / "sweep_report.ipynb"
#: Rows of the full table shown in the report (the files hold every row).
TABLE_ROWS = 50


@dataclass
class SweepReport:
    """What the template shows: a heading, sections of HTML and charts."""

    title: str
    summary_html: str
    sections: list[tuple[str, str, list[Any]]] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)


@dataclass(frozen=True)
class _Meta:
    constraints: tuple[Any, ...]
    currency: str


def _table_html(df: Any, headers: dict[str, str]) -> str:
    head = "".join(f"<th>{html.escape(headers.get(c, humanize_key(c)))}</th>" for c in df.columns)
    body = []
    for _, row in df.iterrows():
        cells = []
        for v in row.tolist():
            if isinstance(v, bool) or type(v).__name__ == "bool_":
                v = "yes" if v else "no"
            num = isinstance(v, (int, float)) and not isinstance(v, bool)
            text = format_value(v) if num else html.escape("" if v is None else str(v))
            cells.append(f'<td class="num">{text}</td>' if num else f"<td>{text}</td>")
        body.append(f"<tr>{''.join(cells)}</tr>")
    return f'<table class="gc-table"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def load_results(outdir: str | os.PathLike) -> tuple[Any, dict[str, Any]]:
    """A sweep folder's table and metadata; a clear error when it holds none."""
    import pandas as pd

    folder = Path(outdir)
    if not (folder / "results.parquet").is_file() or not (folder / "sweep.json").is_file():
        raise ScenarioError("", f"{folder} holds no sweep results (results.parquet, sweep.json): "
                                "run gpucluster sweep SWEEP.yaml -o OUTDIR first")
    return pd.read_parquet(folder / "results.parquet"), json.loads((folder / "sweep.json").read_text("utf-8"))


def sweep_sections(outdir: str | os.PathLike) -> SweepReport:
    """The report of a sweep folder: summary, findings, the front (chart and table), the best
    design per objective, and the first rows of the whole table."""
    from gpucluster_lib.charts.explore import pareto_chart
    from gpucluster_lib.explore.expr import parse_constraints
    from gpucluster_lib.explore.outputs import outputs
    from gpucluster_lib.explore.pareto import pareto_rows
    from gpucluster_lib.explore.sweep import failure_findings, infeasibility_findings

    table, meta = load_results(outdir)
    cur = meta.get("currency", "USD")
    labels = {o.key: (o.label, o.unit) for o in outputs(cur)}
    headers = {"point": "Point", "status": "Status", "feasible": "Feasible", "message": "Message",
               **{k: (lab + (f" ({u})" if u else "")) for k, (lab, u) in labels.items()}}
    axes = [a for a in meta.get("axes", []) if a in table.columns]
    objectives = dict(meta.get("objectives") or {})
    cons = tuple(parse_constraints(meta.get("constraints"), list(table.columns)))
    findings = failure_findings(table) + infeasibility_findings(table, _Meta(cons, cur))
    feas = table[table["feasible"]]
    status = table["status"].value_counts()
    rep = SweepReport(
        title=str(meta.get("name") or "Sweep"),
        summary_html=(
            f"<p><b>{len(table):,} designs</b> ({meta.get('method', 'grid')} over "
            f"{html.escape(', '.join(humanize_key(a) for a in axes))}): {int(status.get('ok', 0)):,} worked out, "
            f"{int(status.get('invalid', 0) + status.get('error', 0)):,} could not be built, "
            f"<b>{len(feas):,} inside the limits</b>.</p>"
            + ("<p>Limits: " + "; ".join(html.escape(c.describe(headers.get(c.key, c.key))) for c in cons)
               + ".</p>" if cons else "")),
        findings=findings)
    cols = list(dict.fromkeys(["point", *axes, *objectives]))
    if objectives and len(feas):
        front = pareto_rows(feas, objectives)
        keys = list(objectives)
        charts = []
        if len(keys) >= 2:
            mask = feas["point"].isin(set(front["point"])).tolist()
            charts.append(pareto_chart(feas, keys[0], keys[1], mask, senses=objectives, labels=labels,
                                       color=axes[1] if len(axes) > 1 else None, extra=axes,
                                       title=f"{headers.get(keys[0])} against {headers.get(keys[1])}"))
        words = ", ".join(f"{headers.get(k, k)} ({'lowest' if s == 'min' else 'highest'})"
                          for k, s in objectives.items())
        rep.sections.append(("The front", f"<p>{len(front):,} designs inside the limits that no other beats on "
                             f"every objective: {html.escape(words)}.</p>" + _table_html(front[cols], headers),
                             charts))
        best_rows = []
        for k, s in objectives.items():
            col = feas[k].astype(float)
            if col.notna().any():
                r = feas.loc[col.idxmin() if s == "min" else col.idxmax()]
                best_rows.append({"Objective": f"{'Lowest' if s == 'min' else 'Highest'} {headers.get(k, k)}",
                                  **{headers.get(c, c): r[c] for c in cols}})
        if best_rows:
            import pandas as pd

            rep.sections.append(("The best design per objective", _table_html(pd.DataFrame(best_rows), {}), []))
    shown = table.head(TABLE_ROWS)
    more = f"<p>The first {TABLE_ROWS} of {len(table):,} rows; results.csv holds them all.</p>" \
        if len(table) > TABLE_ROWS else ""
    key_cols = list(dict.fromkeys(["point", *axes, "status", "feasible", *objectives,
                                   *[c.key for c in cons], "message"]))
    rep.sections.append(("Every design", _table_html(shown[key_cols], headers) + more, []))
    return rep


def findings_section(rep: SweepReport) -> str:
    return findings_html(rep.findings, empty="No findings: every point worked out and some are inside the limits.")


def render_sweep_report(outdir: str | os.PathLike, out_html: str | os.PathLike | None = None, *,
                        timeout_s: int = 600) -> Path:
    """Execute the sweep report template on ``outdir`` and write ``out_html`` (default
    ``OUTDIR/report.html``) without code cells."""
    from gpucluster_lib.report.render import remove_created, writable_file

    folder = Path(outdir).resolve()
    load_results(folder)  # fail fast, before a kernel starts
    out = Path(out_html) if out_html is not None else folder / "report.html"
    created = writable_file(out)  # a failed run removes what this made
    try:
        _execute(folder, out, timeout_s)
    except BaseException:
        remove_created(created)
        raise
    return out


def _execute(folder: Path, out: Path, timeout_s: int) -> None:
    import nbformat

    from gpucluster_lib.report.kernel import execute_notebook, html_without_code
    from gpucluster_lib.report.render import esc_path

    with tempfile.TemporaryDirectory() as tmp:
        executed = Path(tmp) / "sweep_report.ipynb"
        execute_notebook(SWEEP_NOTEBOOK, executed, {"results_dir": str(folder)}, cwd=NOTEBOOK_DIR, timeout_s=timeout_s,
                         what=f"the sweep report of {esc_path(folder)}")
        out.write_text(html_without_code(nbformat.read(executed, as_version=4)), encoding="utf-8")
