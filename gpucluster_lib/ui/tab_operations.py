"""Operations tab: the software-stack, security and data-management plans of the design, and
one download per export (SLURM, Kubernetes, bill of materials, NetBox, rack elevations).

The plans come from the design's ``operations`` stage (the same HTML as the report's
sections); a download button builds its files from the current design and offers them as a
``data:`` link (a ZIP for folders), so no server path is involved.
"""

from __future__ import annotations

import base64
import html
import re

import ipywidgets as widgets

from gpucluster_lib.exports import FOLDER_KINDS, LABELS, export_files, zip_bytes
from gpucluster_lib.report.operations import data_html, security_html, stack_html
from gpucluster_lib.ui.common import (
    AppState,
    FieldBinding,
    guarded,
    message_area,
    section,
    show_findings,
    when_shown,
)

TITLE = "Operations"
ORDER = 70

MIME = {"zip": "application/zip", "csv": "text/csv",
        "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"}


def file_stem(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "design"


def data_link(data: bytes, filename: str, label: str) -> str:
    """An ``<a download>`` link carrying ``data`` as a base64 ``data:`` URI."""
    ext = filename.rsplit(".", 1)[-1]
    b64 = base64.b64encode(data).decode()
    return (f'<a class="gc-download" download="{html.escape(filename)}" href="data:{MIME[ext]};base64,{b64}" '
            f'style="font-weight:bold">⬇ {html.escape(label)}</a>')


def export_links(design, kind: str) -> str:
    """The download link(s) of one export kind for ``design`` (the BOM as CSV and XLSX)."""
    stem = file_stem(design.scenario.name)
    if kind in FOLDER_KINDS:
        folder = f"{stem}-{kind}"
        return data_link(zip_bytes(export_files(kind, design), folder), f"{folder}.zip",
                         f"{LABELS[kind]} ({folder}.zip)")
    csv_text = export_files("bom", design)["bom.csv"]
    xlsx = export_files("bom", design, xlsx=True)["bom.xlsx"]
    return (data_link(str(csv_text).encode(), f"{stem}-bom.csv", f"{LABELS['bom']} (CSV)") + " &nbsp; "
            + data_link(bytes(xlsx), f"{stem}-bom.xlsx", f"{LABELS['bom']} (XLSX)"))


class OperationsPanel:
    def __init__(self, state: AppState):
        self.state = state
        self.msg = message_area()
        self.findings = widgets.HTML()
        self.stack = widgets.HTML()
        self.security = widgets.HTML()
        self.data = widgets.HTML()
        ops = state.scenario.operations
        self.scheduler = widgets.Dropdown(options=[("SLURM", "slurm"), ("Kubernetes", "kubernetes"),
                                                   ("SLURM and Kubernetes", "both")],
                                          value=ops.scheduler, description="Scheduler")
        self.spares = widgets.IntSlider(value=ops.serving_spare_replicas, min=0, max=8, description="Spare replicas",
                                        continuous_update=False)
        # a text box, not a slider: the scenario takes fractions and up to 100 years, and a value
        # out of range is refused with the field's message instead of being clamped silently
        self.retention = widgets.FloatText(value=ops.retention_days, description="Metrics kept [days]")
        self.backup = widgets.Dropdown(options=[("off-site copy", "offsite"), ("snapshots", "snapshot"),
                                                ("none", "none")], value=ops.backup, description="Backup")
        for w in (self.scheduler, self.spares, self.retention, self.backup):
            w.style.description_width = "120px"
        self.binding = FieldBinding(state, {self.scheduler: ("operations__scheduler", str),
                                            self.spares: ("operations__serving_spare_replicas", int),
                                            self.retention: ("operations__retention_days", float),
                                            self.backup: ("operations__backup", str)}, after=self._refresh)
        self.refresh = guarded(self.msg)(self._refresh)
        self.apply = guarded(self.msg)(self.binding.apply)
        self.binding.observe(self.apply)
        redraw = when_shown(state, TITLE, self._from_state)  # hidden: once when next shown, not per change
        state.observe(lambda _ch: None if self.binding.busy else redraw(), names="scenario")

        self.buttons: dict[str, widgets.Button] = {}
        self.links: dict[str, widgets.HTML] = {}
        rows = []
        for kind in ("slurm", "k8s", "bom", "netbox", "racks"):
            b = widgets.Button(description=LABELS[kind], tooltip=f"build the {LABELS[kind].lower()} of this design",
                               layout=widgets.Layout(width="220px"))
            b.add_class(f"gc-export-{kind}")
            link = widgets.HTML()
            link.add_class(f"gc-export-link-{kind}")
            b.on_click(guarded(self.msg)(lambda _b, k=kind: self._prepare(k)))
            self.buttons[kind], self.links[kind] = b, link
            rows.append(widgets.HBox([b, link]))
        self.widget = widgets.VBox([
            widgets.HTML("<p>How the design is run: operating system, scheduler, head nodes, GPU software and "
                         "monitoring; the security checklist and the data plan. Each export is built from the "
                         "design shown here.</p>"),
            widgets.HBox([widgets.VBox([self.scheduler, self.spares]), widgets.VBox([self.retention, self.backup])]),
            self.msg, self.findings,
            section("Exports (click to build, then download)", *rows),
            section("Software stack and scheduler", self.stack),
            section("Security plan", self.security),
            section("Data management", self.data),
        ])
        self.refresh()

    def _from_state(self) -> None:
        ops = self.state.scenario.operations
        with self.binding.quiet():
            self.scheduler.value = ops.scheduler
            self.spares.value = ops.serving_spare_replicas
            self.retention.value = ops.retention_days
            self.backup.value = ops.backup
        self.refresh()

    def _prepare(self, kind: str) -> None:
        self.msg.value = ""
        self.links[kind].value = export_links(self.state.design, kind)

    def _refresh(self) -> None:
        self.msg.value = ""
        plan = self.state.design.operations
        self.stack.value = stack_html(plan)
        self.security.value = security_html(plan)
        self.data.value = data_html(plan)
        show_findings(self.findings, plan.findings)
        for link in self.links.values():  # files of an older design must not be offered
            link.value = ""


def build(state: AppState) -> widgets.Widget:
    return OperationsPanel(state).widget
