"""The app at a glance: the design's key figures above the tabs, and the report download.

:class:`Header` observes the :class:`~gpucluster_lib.ui.common.AppState` (scenario and
catalogue) and, on every change, reads the key figures of ``state.design`` (GPUs, racks, MW,
days to train or output tokens/s, CapEx, TCO, and the count of errors and warnings among
the findings). The figures are written by the report's own formatter, so the header, the
report and its PDF read the same.

"Download report (HTML/PDF)" makes the design document of the current design
(:func:`gpucluster_lib.report.document.document_html`) and offers it as a ``data:`` link;
the PDF is printed by headless Chromium in the kernel's process when it is installed, and a
message says how to install it when it is not.
"""

from __future__ import annotations

import base64
import html
import tempfile
from pathlib import Path
from typing import Any

import ipywidgets as widgets

from gpucluster_lib.errors import GpuClusterError
from gpucluster_lib.report.text import figure_text
from gpucluster_lib.ui.common import AppState, error_html, guarded

HEADER_STYLE = """
<style>
.gc-header { display: flex; flex-wrap: wrap; gap: 6px; margin: 4px 0; font-family: var(--jp-ui-font-family, sans-serif); }
.gc-header .gc-hf { border: 1px solid #d8dee4; border-radius: 4px; padding: 2px 8px; background: #f8fafb; min-width: 86px; }
.gc-header .gc-hf-label { display: block; font-size: 10px; color: #555; }
.gc-header .gc-hf-value { display: block; font-size: 15px; font-weight: bold; font-variant-numeric: tabular-nums; }
.gc-header .gc-hf.gc-bad { border-color: #b00020; background: #fdecee; }
.gc-header .gc-hf.gc-warn { border-color: #a15c00; background: #fff6e5; }
</style>
"""


def header_figures(design: Any) -> list[tuple[str, str]]:
    """(label, text) of the header's figures for ``design``, in display order."""
    s = design.summary()
    figs = [("GPUs", figure_text(s["gpus"])), ("Racks", figure_text(s["racks"])),
            ("Facility power", f"{design.facility.facility_power_kw / 1000:,.2f} MW")]
    if s["training_days_expected"]["value"] is not None:
        figs.append(("Days to train, expected", figure_text(s["training_days_expected"])))
    elif s["training_days"]["value"] is not None:
        figs.append(("Days to train", figure_text(s["training_days"])))
    if s["tokens_per_s_per_gpu"]["value"] is not None:
        figs.append(("Output tokens/s per GPU", figure_text(s["tokens_per_s_per_gpu"])))
    figs += [("CapEx", figure_text(s["capex"])), (s["tco"]["label"], figure_text(s["tco"]))]
    findings = design.findings
    figs.append(("Errors", str(sum(f.severity == "error" for f in findings))))
    figs.append(("Warnings", str(sum(f.severity == "warning" for f in findings))))
    return figs


def header_html(design: Any) -> str:
    cells = []
    for label, text in header_figures(design):
        cls = ""
        if label == "Errors" and text != "0":
            cls = " gc-bad"
        elif label == "Warnings" and text != "0":
            cls = " gc-warn"
        cells.append(f"<div class='gc-hf{cls}'><span class='gc-hf-label'>{html.escape(label)}</span>"
                     f"<span class='gc-hf-value'>{html.escape(text)}</span></div>")
    return HEADER_STYLE + "<div class='gc-header'>" + "".join(cells) + "</div>"


def file_stem(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "-" for c in name.lower()).strip("-") or "design"


def data_link(data: bytes, mime: str, filename: str, text: str) -> str:
    b64 = base64.b64encode(data).decode()
    return (f'<a download="{html.escape(filename)}" href="data:{mime};base64,{b64}" '
            f'style="font-weight:bold;margin-right:12px">⬇ {html.escape(text)}</a>')


def report_links(design: Any) -> str:
    """The report of ``design`` as download links: HTML always, PDF when Chromium is installed."""
    from gpucluster_lib.report.document import document_html
    from gpucluster_lib.report.pdf import PdfError, html_to_pdf
    from gpucluster_lib.report.render import report_sections

    page = document_html(design, report_sections(design))  # the chapters of the batch report
    stem = file_stem(design.scenario.name)
    links = data_link(page.encode("utf-8"), "text/html", f"{stem}.html", "Report (HTML)")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            src = Path(tmp) / f"{stem}.html"
            src.write_text(page, encoding="utf-8")
            pdf = html_to_pdf(src, Path(tmp) / f"{stem}.pdf").read_bytes()
        links += data_link(pdf, "application/pdf", f"{stem}.pdf", "Report (PDF)")
    except PdfError as exc:
        links += f"<span class='gc-src'>No PDF: {html.escape(str(exc))}</span>"
    return links


class Header:
    """Key figures of the current design, refreshed on every change, and the report download."""

    def __init__(self, state: AppState) -> None:
        self.state = state
        self.figures = widgets.HTML()
        self.button = widgets.Button(description="Download report (HTML/PDF)", icon="download",
                                     layout=widgets.Layout(width="240px"),
                                     tooltip="The design document of the current scenario")
        self.links = widgets.HTML()
        self.button.on_click(guarded(self.links)(self._on_download))
        state.observe(lambda _ch: self.refresh(), names=["scenario", "catalog"])
        self.widget = widgets.VBox([self.figures, widgets.HBox([self.button, self.links],
                                                               layout=widgets.Layout(align_items="center"))])
        self.refresh()

    def refresh(self) -> None:
        """Show the key figures of ``state.design``; a stage's error is shown, never raised."""
        self.links.value = ""  # a report of an older scenario must not linger
        try:
            self.figures.value = header_html(self.state.design)
        except GpuClusterError as exc:
            self.figures.value = error_html(exc)

    def _on_download(self, _button: Any = None) -> None:
        self.links.value = "<i>writing the report…</i>"
        self.links.value = report_links(self.state.design)
