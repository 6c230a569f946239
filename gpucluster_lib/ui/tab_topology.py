"""Network panel: topology, switch, NIC, oversubscription and nodes; drawing, counts, cables, growth."""

from __future__ import annotations

import dataclasses
import html
from typing import Any

import ipywidgets as widgets
import pandas as pd

from gpucluster_lib.charts.topology import (
    growth_placeholder,
    growth_spec,
    topology_placeholder,
    topology_spec,
)
from gpucluster_lib.network.cablelist import cable_list, cable_summary
from gpucluster_lib.network.topology import KINDS, growth_table
from gpucluster_lib.ui.common import (
    AppState,
    chart_widget,
    guarded,
    html_table,
    message_area,
    section,
    show_findings,
    table_widget,
    when_shown,
)

TITLE = "Network"
ORDER = 40

#: Largest node count for which the panel shows the first rows of the full cable list.
CABLE_PREVIEW_MAX_NODES = 256
GROWTH_NODES = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096]


class TopologyPanel:
    """Widgets and callbacks tying the scenario's ``network`` section to :mod:`gpucluster_lib.network.topology`."""

    def __init__(self, state: AppState):
        self.state = state
        self.msg = message_area()
        self.findings = widgets.HTML()
        wide = {"description_width": "120px"}
        cat = state.catalog
        switches = [r["id"] for r in cat.records("switches")]
        nics = [r["id"] for r in cat.records("nics")]
        self.topology = widgets.Dropdown(options=list(KINDS), description="Topology", style=wide)
        self.switch = widgets.Dropdown(options=["(default)"] + switches, description="Switch", style=wide)
        self.nic = widgets.Dropdown(options=["(server's)"] + nics, description="NIC", style=wide)
        self.oversub = widgets.Dropdown(options=[("1:1 non-blocking", 1.0), ("1.5:1", 1.5), ("2:1", 2.0),
                                                 ("3:1", 3.0), ("4:1", 4.0)], description="Oversubscription",
                                        style=wide)
        self.nodes = widgets.BoundedIntText(value=1, min=1, max=65536, description="Nodes", style=wide)
        self.expand = widgets.Dropdown(options=["(none)"], description="Expand group", style=wide)
        self.summary = widgets.HTML()
        # placeholders: the design may be invalid when the tab is built (its error shows, its inputs stay)
        self.chart = chart_widget(topology_placeholder())
        self.counts = table_widget()
        self.cables = table_widget()
        self.growth = chart_widget(growth_placeholder())
        #: what a failed design empties: no number of an earlier state stays beside the error
        self.outputs = [self.summary, self.findings, self.counts, self.cables, self.chart, self.growth]
        self.refresh = guarded(self.msg, clears=self.outputs)(self._refresh)
        self.load = guarded(self.msg, clears=self.outputs)(self._load)
        self._growth_key: Any = None
        self._cables_of: Any = None
        for w in (self.topology, self.switch, self.nic, self.oversub):
            w.observe(self._changed, names="value")
        self.nodes.observe(lambda _ch: None if self._loading else self.refresh(), names="value")
        self.expand.observe(lambda _ch: self.refresh(), names="value")
        redraw = when_shown(state, TITLE, lambda: self.load())
        state.observe(lambda _ch: None if self._loading else redraw(), names=["scenario", "catalog"])
        self._loading = False
        self.load()

    # -- scenario <-> widgets -------------------------------------------------------
    def _load(self) -> None:
        s = self.state.scenario
        self._loading = True
        try:
            self.topology.value = s.network.topology
            self.switch.value = s.network.switch if s.network.switch in self.switch.options else "(default)"
            self.nic.value = s.network.nic if s.network.nic in self.nic.options else "(server's)"
            opts = [v for _, v in self.oversub.options]
            if s.network.oversubscription not in opts:
                self.oversub.options = list(self.oversub.options) + [(f"{s.network.oversubscription:g}:1",
                                                                      s.network.oversubscription)]
            self.oversub.value = s.network.oversubscription
            self.nodes.value = self.state.design.hardware.nodes
        finally:
            self._loading = False
        self._refresh()

    def _changed(self, _change: dict) -> None:
        if not self._loading:
            self.refresh()

    def _scenario(self):
        s = self.state.scenario
        changes = dict(
            network__topology=self.topology.value,
            network__switch=None if self.switch.value == "(default)" else self.switch.value,
            network__nic=None if self.nic.value == "(server's)" else self.nic.value,
            network__oversubscription=float(self.oversub.value))
        if int(self.nodes.value) != self.state.design.hardware.nodes:
            changes.update(hardware__nodes=int(self.nodes.value), hardware__gpus=None)
        new = s.replace(**changes)
        return s if new == s else new

    # -- compute and show ------------------------------------------------------------
    def _refresh(self) -> None:
        cables_of, growth_key = self._cables_of, self._growth_key
        self._cables_of = self._growth_key = None  # a failure below empties them: the next success redraws
        scenario = self._scenario()
        design = self.state.design_for(scenario)
        d = design.network  # raises (shown in the message) before the scenario changes
        if scenario is not self.state.scenario:
            self._loading = True  # the state's observer must not reload the widgets we are editing
            try:
                self.state.commit(design)
            finally:
                self._loading = False
        self.msg.value = ""
        show_findings(self.findings, d.findings, empty="The design holds the cluster.")
        from gpucluster_lib.network.clos import ClosCounts
        from gpucluster_lib.network.graph import group_names

        groups = ["(none)"]
        if isinstance(d.counts, ClosCounts) and d.counts.tiers > 1 and d.nodes > 32:
            groups += group_names(d, d.counts)
        if list(self.expand.options) != groups:
            self.expand.options = groups
        expand = None if self.expand.value == "(none)" else self.expand.value
        # a validated template filled with this design's data: no altair validation per change
        self.chart.spec = topology_spec(d, expand=expand)
        self.summary.value = _summary_html(d)
        if d is not cables_of:  # counts and cables follow the network design alone
            self.counts.value = html_table(d.counts_table())
            text = html_table(cable_summary(d))
            if d.nodes <= CABLE_PREVIEW_MAX_NODES:
                text += ("<p><b>First cables</b> (all of them: <code>gpucluster topology SCENARIO --cables "
                         "out.csv</code>)</p>")
                text += html_table(cable_list(d, limit=40))
            self.cables.value = text
        key = growth_inputs(scenario, self.state.catalog)
        if key != growth_key:  # the growth chart does not follow the node count (nor the expanded group)
            self.growth.spec = growth_spec(growth_table(scenario, self.state.catalog, GROWTH_NODES))
        self._cables_of, self._growth_key = d, key

    def widget(self) -> widgets.Widget:
        controls = widgets.VBox([self.topology, self.switch, self.nic, self.oversub, self.nodes, self.expand])
        return widgets.VBox([
            self.msg,
            widgets.HBox([controls, self.summary]),
            self.findings,
            section("Drawing", self.chart),
            section("Counts", self.counts),
            section("Cables", self.cables),
            section("Growth", self.growth),
        ])


def growth_inputs(scenario, catalog) -> tuple:
    """What the growth chart reads: the network stage's inputs (network, facility, hardware, the
    extra catalogue files) without the node count, which the chart varies itself. The catalogue
    itself is kept (it compares by identity): an id could be reused by a later catalogue once
    the earlier one is freed."""
    hw = dataclasses.replace(scenario.hardware, nodes=None, gpus=None)
    return (catalog, scenario.catalog, scenario.network, scenario.facility, hw)


def _summary_html(d) -> str:
    rows = [
        ("fabric", f"{d.kind}, {d.tiers} tier(s), {d.endpoints:,} endpoints at {d.link_gbps:g} Gb/s"),
        ("switches", f"leaf {d.switches['leaf']}, spine {d.switches['spine']}, core {d.switches['core']}"),
        ("links", ", ".join(f"{k.replace('_', '-')} {v:,}" for k, v in d.links.items())),
        ("max endpoints", f"{d.max_endpoints:,}" if d.max_endpoints else "–"),
        ("bisection", f"{d.bisection_bandwidth_gbps / 1000:,.1f} Tb/s"),
        ("per-GPU all-reduce", f"{d.per_gpu_allreduce_gbps:,.1f} Gb/s (injection {d.injection_gbps_per_gpu:g})"),
        ("hops", f"{d.switch_hops} switches, {d.diameter_links} links"),
        ("all networks", f"{d.network_power_w / 1000:,.1f} kW, {d.network_rack_units} U"),
        ("cables / transceivers", f"compute {sum(d.cables.values()):,} / {sum(d.transceivers.values()):,}; "
                                  f"all networks {sum(d.cables_all.values()):,} / "
                                  f"{sum(d.transceivers_all.values()):,}"),
    ]
    body = "".join(f"<tr><th style='text-align:left;padding-right:12px'>{html.escape(k)}</th>"
                   f"<td class='gc-topology-{html.escape(k.split()[0])}'>{html.escape(v)}</td></tr>" for k, v in rows)
    return f"<table class='gc-topology-summary'>{body}</table>"


def build(state: AppState) -> widgets.Widget:
    """The Network tab."""
    return TopologyPanel(state).widget()


__all__ = ["build", "TITLE", "ORDER", "TopologyPanel", "pd"]
