"""Hardware picker panel: filter and rank accelerators, inspect one, see its servers."""

from __future__ import annotations

import html

import ipywidgets as widgets
import pandas as pd

from gpucluster_lib.catalog import PRECISION_COLUMNS
from gpucluster_lib.charts.hardware import accelerator_scatter, accelerator_scatter_spec
from gpucluster_lib.hardware.picker import (
    RANKINGS,
    SUMMARY_COLUMNS,
    PickerFilter,
    pick,
    servers_for,
)
from gpucluster_lib.ui.common import (
    AppState,
    chart_widget,
    guarded,
    html_table,
    message_area,
    section,
    table_widget,
    when_shown,
)

TITLE = "Hardware"
ORDER = 10

HEADERS = {
    "id": "id", "vendor": "vendor", "form_factor": "form", "memory_gib": "memory [GiB]",
    "memory_bandwidth_gb_per_s": "bandwidth [GB/s]", "peak_tflops": "peak [TFLOP/s]", "tdp_w": "TDP [W]",
    "tflops_per_w": "TFLOP/s per W", "price_usd_estimate": "price est. [USD]", "launch_year": "year",
}
SERVER_COLUMNS = ["id", "name", "fit", "gpu_count", "cpu_id", "cpu_count", "system_memory_gb", "rack_units",
                  "max_power_w", "psu_count", "psu_rating_w", "psu_redundancy"]


class HardwarePanel:
    """Widgets plus the callbacks that tie them to :mod:`gpucluster_lib.hardware.picker`."""

    def __init__(self, state: AppState):
        self.state = state
        acc = state.catalog.tables["accelerators"]
        self.msg = message_area()
        wide = {"description_width": "110px"}
        self.precision = widgets.Dropdown(options=list(PRECISION_COLUMNS), value="bf16", description="Precision",
                                          style=wide)
        self.min_memory = widgets.IntSlider(value=0, min=0, max=256, step=8, description="Min memory [GiB]",
                                            continuous_update=False, readout_format="d", style=wide)
        self.vendors = widgets.SelectMultiple(options=sorted(acc["vendor"].unique()), rows=4, description="Vendor")
        self.forms = widgets.SelectMultiple(options=sorted(acc["form_factor"].unique()), rows=4,
                                            description="Form factor")
        self.budget = widgets.BoundedFloatText(value=0, min=0, max=10_000_000, step=1000,
                                               description="Max price [USD]", tooltip="0 = no budget limit",
                                               style=wide)
        self.rank_by = widgets.Dropdown(options=list(RANKINGS), value="peak TFLOP/s", description="Rank by",
                                       style=wide)
        self.count = widgets.HTML()
        self.table = table_widget()
        self.picked = widgets.Dropdown(options=[], description="Inspect")
        self.use_btn = widgets.Button(description="Use in scenario", icon="check",
                                      tooltip="set hardware.accelerator to the inspected part")
        self.detail = widgets.HTML()
        self.servers = table_widget()
        self.ranked = pd.DataFrame()
        self._quiet = False
        #: (catalogue, {accelerator id: (its row, its servers) as HTML}) for the inspected parts
        self._parts: tuple = (None, {})
        self.all_vendors = tuple(sorted(acc["vendor"].unique()))
        self.chart = chart_widget(accelerator_scatter(pick(state.catalog, PickerFilter()), "bf16"))
        self.chart.embed_options = {**self.chart.embed_options, "renderer": "svg"}

        self.refresh = guarded(self.msg)(self._refresh)
        self.show_detail = guarded(self.msg)(self._show_detail)
        for w in (self.precision, self.min_memory, self.vendors, self.forms, self.budget, self.rank_by):
            w.observe(lambda _ch: self.refresh(), names="value")
        self.picked.observe(lambda _ch: self.show_detail(), names="value")
        self.use_btn.on_click(guarded(self.msg)(self._use))
        state.observe(when_shown(state, TITLE, lambda: self.refresh()), names=["catalog", "scenario"])

        filters = widgets.HBox([
            widgets.VBox([self.precision, self.min_memory, self.budget, self.rank_by]),
            self.vendors, self.forms,
        ])
        self.widget = widgets.VBox([
            widgets.HTML("<p>Filter and rank the catalogue's accelerators. Peaks are <b>dense</b> (never the "
                         "2:4-sparsity headline); prices are indicative estimates with their source.</p>"),
            filters, self.msg, self.count,
            section("Ranked accelerators", self.table),
            section("Peak against memory bandwidth", self.chart),
            section("Inspect one", widgets.HBox([self.picked, self.use_btn]), self.detail),
            section("Servers for the inspected accelerator", self.servers),
        ])
        self.refresh()

    # -------------------------------------------------------------- callbacks
    def current_filter(self) -> PickerFilter:
        return PickerFilter(
            precision=self.precision.value, min_memory_gib=float(self.min_memory.value),
            vendors=tuple(self.vendors.value), form_factors=tuple(self.forms.value),
            max_price_usd=self.budget.value or None, rank_by=self.rank_by.value,
            price_overrides=dict(self.state.scenario.costs.prices),
        )

    def _refresh(self) -> None:
        self.msg.value = ""
        flt = self.current_filter()
        self.ranked = pick(self.state.catalog, flt)
        n = len(self.ranked)
        self.count.value = (f"<b>Showing {n} accelerator{'s' if n != 1 else ''}</b> "
                            f"with a dense {flt.precision.upper()} figure, ranked by {flt.rank_by}.")
        current = self.state.accelerator_id()
        self.table.value = html_table(self.ranked[SUMMARY_COLUMNS], headers=HEADERS,
                                      highlight=lambda r: r["id"] == current)
        ids = list(self.ranked["id"])
        keep = self.picked.value if self.picked.value in ids else (current if current in ids else (ids[0] if ids else None))
        self._quiet = True  # one chart update per refresh, not one more from the picker
        try:
            self.picked.options = ids
            self.picked.value = keep
        finally:
            self._quiet = False
        self._show_detail()
        if not ids:
            self.detail.value = "<i>No accelerator matches these filters: relax the memory, vendor or budget limit.</i>"
            self.servers.value = ""

    def _show_detail(self) -> None:
        id_ = self.picked.value
        if not id_ or self._quiet:
            return
        self.detail.value, self.servers.value = self._part_html(id_)
        self.chart.spec = accelerator_scatter_spec(self.ranked, self.precision.value, highlight=id_,
                                                   vendors=self.all_vendors)

    def _part_html(self, id_: str) -> tuple[str, str]:
        """The inspected part's catalogue row and its servers (HTML): they depend only on the part
        and the catalogue, so a filter change reuses them."""
        cat = self.state.catalog
        if self._parts[0] is not cat:
            self._parts = (cat, {})
        hit = self._parts[1].get(id_)
        if hit is None:
            row = cat.accelerator(id_)
            lines = "".join(
                f"<tr><td>{html.escape(k)}</td><td>{html.escape('–' if v is None else str(v))}</td></tr>"
                for k, v in row.items())
            srv = servers_for(cat, id_)
            hit = self._parts[1][id_] = (
                f'<table class="gc-table">{lines}</table>',
                html_table(srv[SERVER_COLUMNS]) if len(srv)
                else f"<i>No catalogue server or chassis takes {html.escape(id_)}.</i>")
        return hit

    def _use(self, _btn: widgets.Button) -> None:
        if self.picked.value:
            server = self.state.scenario.hardware.server
            changes = {"hardware__accelerator": self.picked.value}
            if server and self.state.catalog.server(server)["kind"] != "chassis":
                changes["hardware__server"] = None  # a complete system fixes its GPU
            self.state.update(**changes)
            self.refresh()


def build(state: AppState) -> widgets.Widget:
    return HardwarePanel(state).widget
