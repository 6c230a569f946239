"""The comparison report: several designs side by side, in the design document's style.

The table is :func:`gpucluster_lib.explore.compare.compare` (the Explore tab's and ``gpucluster
compare``'s comparison: one row per figure, the better value marked), written with the
report's formatter (percentages as percentages, the unit after the value), then small bar
charts of the main figures and each design's most important findings.
"""

from __future__ import annotations

import html
import os
from collections.abc import Sequence
from pathlib import Path

from gpucluster_lib.design import Design
from gpucluster_lib.explore.compare import MAX_DESIGNS, compare
from gpucluster_lib.report.document import chart_svg, findings_list_html, html_page, top_findings
from gpucluster_lib.report.style import DOCUMENT_STYLE
from gpucluster_lib.report.text import esc, value_text
from gpucluster_lib.scenario import load_scenario

#: The figures charted side by side: (comparison key, label with unit).
CHARTED = [("hardware.gpus", "GPUs"), ("facility.facility_power_kw", "Facility power at peak [kW]"),
           ("facility.racks", "Racks"), ("cost.capex_usd", "CapEx [million]"), ("cost.tco_usd", "TCO [million]"),
           ("cost.usd_per_gpu_hour", "Cost per GPU-hour"),
           ("reliability.training_days_expected", "Days to train, expected"),
           ("serving.tokens_per_s_per_gpu", "Output tokens/s per GPU")]
_MILLIONS = {"cost.capex_usd", "cost.tco_usd"}


def _unit(unit: str) -> str:
    return "" if unit == "fraction" else unit


def comparison_rows(designs: Sequence[Design]) -> list[tuple[str, list[str], list[int]]]:
    """(figure label, [its text in each design], [indices of the better designs]) per figure."""
    out = []
    for r in compare(designs).rows:
        texts = [value_text(v, "%" if r["unit"] == "fraction" else _unit(r["unit"])) if not isinstance(v, str)
                 else v for v in r["values"]]
        out.append((r["label"], texts, list(r["best"])))
    return out


def comparison_html(designs: Sequence[Design], title: str = "Designs compared") -> str:
    """The comparison report of 2-6 designs (the first six of more) as one standalone HTML page."""
    from gpucluster_lib.charts.report_design import comparison_chart

    left_out = max(0, len(designs) - MAX_DESIGNS)
    designs = list(designs)[:MAX_DESIGNS]
    names = [d.scenario.name for d in designs]
    head = "".join(f"<th>{esc(n)}</th>" for n in names)
    body = "".join(
        f"<tr><td>{esc(label)}</td>"
        + "".join(f"<td class='num'>{'<b>' if i in best else ''}{html.escape(t)}{' ✔</b>' if i in best else ''}</td>"
                  for i, t in enumerate(texts)) + "</tr>"
        for label, texts, best in comparison_rows(designs))
    years = sorted({d.cost.years for d in designs})
    note = ("" if len(years) == 1 else
            f"<p class='gc-src'>The designs are costed over different periods ({', '.join(map(str, years))} years): "
            "compare their cost per GPU-hour rather than their TCO.</p>")
    if left_out:
        note += f"<p class='gc-src'>{left_out} more design(s) left out: a comparison holds at most {MAX_DESIGNS}.</p>"
    by_key = {r["key"]: r["values"] for r in compare(designs).rows}
    chart_rows = []
    for i, d in enumerate(designs):
        row = {"design": d.scenario.name}
        for key, _label in CHARTED:
            v = by_key.get(key, [None] * len(designs))[i]
            row[key] = (v / 1e6 if key in _MILLIONS else v) if isinstance(v, (int, float)) else None
        chart_rows.append(row)
    findings = "".join(f"<h3>{esc(d.scenario.name)}</h3>"
                       + findings_list_html(top_findings(d), empty="No errors or warnings.") for d in designs)
    return html_page(title, DOCUMENT_STYLE
                     + f"<section class='gc-summary'><h1>{html.escape(title)}</h1>"
                     f"<p class='gc-lede'>{len(designs)} designs, each computed by the same workbook; the figures are "
                     "those of each design's own report; the better value of a figure is marked ✔.</p>"
                     f"<table class='gc-table gc-compare'><thead><tr><th>Figure</th>{head}</tr></thead>"
                     f"<tbody>{body}</tbody></table>{note}</section>"
                     "<section class='gc-section'><h2>Side by side</h2>"
                     f"<figure class='gc-figure'>{chart_svg(comparison_chart(chart_rows, CHARTED))}</figure>"
                     f"<h2>The most important findings of each design</h2>{findings}</section>")


def render_comparison(paths: Sequence[str | os.PathLike], out_html: str | os.PathLike, *, pdf: bool = False,
                      allow_paths: bool = False) -> Path:
    """Write the comparison of the scenarios at ``paths`` to ``out_html`` (and its PDF); their
    ``catalog:`` CSVs must lie inside each scenario's folder unless ``allow_paths``."""
    designs = [Design(load_scenario(p, allow_paths=allow_paths)) for p in paths]
    out = Path(out_html)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(comparison_html(designs), encoding="utf-8")
    if pdf:
        from gpucluster_lib.report.pdf import html_to_pdf

        html_to_pdf(out, out.with_suffix(".pdf"))
    return out
