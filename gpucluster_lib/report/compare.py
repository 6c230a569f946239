"""The comparison report: several designs side by side, in the design document's style.

Each column is one :class:`~gpucluster_lib.design.Design`; each row one of its key figures
(:meth:`Design.summary`, written by :func:`~gpucluster_lib.report.text.figure_text`, so a
figure reads as in that design's own report), then small bar charts of the figures that
differ most between designs and each design's most important findings.
"""

from __future__ import annotations

import html
import os
from collections.abc import Sequence
from pathlib import Path

from gpucluster_lib.design import Design
from gpucluster_lib.report.document import chart_svg, findings_list_html, html_page, top_findings
from gpucluster_lib.report.style import DOCUMENT_STYLE
from gpucluster_lib.report.text import esc, figure_text

#: The figures charted side by side: (summary key, label with unit).
CHARTED = [("gpus", "GPUs"), ("facility_power_kw", "Facility power at peak [kW]"), ("racks", "Racks"),
           ("capex", "CapEx [million]"), ("tco", "TCO [million]"), ("cost_per_gpu_hour", "Cost per GPU-hour"),
           ("training_days_expected", "Days to train, expected"), ("tokens_per_s_per_gpu", "Output tokens/s per GPU")]
_MILLIONS = {"capex", "tco"}


def comparison_rows(designs: Sequence[Design]) -> list[tuple[str, list[str]]]:
    """(figure label, [its text in each design]) for every key figure any design has."""
    summaries = [d.summary() for d in designs]
    rows = []
    for key, fig in summaries[0].items():
        texts = [figure_text(s[key]) if key in s else "–" for s in summaries]
        if any(s.get(key, {}).get("value") is not None for s in summaries):
            label = fig["label"] if key != "tco" else "TCO"
            rows.append((label, texts))
    return rows


def comparison_html(designs: Sequence[Design], title: str = "Designs compared") -> str:
    """The comparison report as one standalone HTML page."""
    from gpucluster_lib.charts.report_design import comparison_chart

    names = [d.scenario.name for d in designs]
    head = "".join(f"<th>{esc(n)}</th>" for n in names)
    body = "".join(f"<tr><td>{esc(label)}</td>" + "".join(f"<td class='num'>{html.escape(t)}</td>" for t in texts)
                   + "</tr>" for label, texts in comparison_rows(designs))
    years = sorted({d.cost.years for d in designs})
    note = ("" if len(years) == 1 else
            f"<p class='gc-src'>The designs are costed over different periods ({', '.join(map(str, years))} years): "
            "compare their cost per GPU-hour rather than their TCO.</p>")
    chart_rows = []
    for d in designs:
        s = d.summary()
        row = {"design": d.scenario.name}
        for key, _label in CHARTED:
            v = s[key]["value"]
            row[key] = (v / 1e6 if key in _MILLIONS else v) if isinstance(v, (int, float)) else None
        chart_rows.append(row)
    findings = "".join(f"<h3>{esc(d.scenario.name)}</h3>"
                       + findings_list_html(top_findings(d), empty="No errors or warnings.") for d in designs)
    return html_page(title, DOCUMENT_STYLE
                     + f"<section class='gc-summary'><h1>{html.escape(title)}</h1>"
                     f"<p class='gc-lede'>{len(designs)} designs, each computed by the same workbook; the figures are "
                     "those of each design's own report.</p>"
                     f"<table class='gc-table gc-compare'><thead><tr><th>Figure</th>{head}</tr></thead>"
                     f"<tbody>{body}</tbody></table>{note}</section>"
                     "<section class='gc-section'><h2>Side by side</h2>"
                     f"<figure class='gc-figure'>{chart_svg(comparison_chart(chart_rows, CHARTED))}</figure>"
                     f"<h2>The most important findings of each design</h2>{findings}</section>")


def render_comparison(paths: Sequence[str | os.PathLike], out_html: str | os.PathLike, *, pdf: bool = False) -> Path:
    """Write the comparison of the scenarios at ``paths`` to ``out_html`` (and its PDF)."""
    designs = [Design.from_yaml(p) for p in paths]
    out = Path(out_html)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(comparison_html(designs), encoding="utf-8")
    if pdf:
        from gpucluster_lib.report.pdf import html_to_pdf

        html_to_pdf(out, out.with_suffix(".pdf"))
    return out
