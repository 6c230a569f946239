"""Power & space panel: node builder, rack fit, hall totals and growth."""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets
import pandas as pd

from gpucluster_lib.charts import facility as charts
from gpucluster_lib.design import Design
from gpucluster_lib.errors import GpuClusterError, ScenarioError
from gpucluster_lib.facility.site import Budget, default_node_counts, growth_table
from gpucluster_lib.findings import Finding, findings_html
from gpucluster_lib.formatting import plural
from gpucluster_lib.hardware.rack import rack_power_limit_kw_of
from gpucluster_lib.scenario import Scenario, parse_redundancy
from gpucluster_lib.ui.common import (
    AppState,
    chart_widget,
    guarded,
    html_table,
    kv_html,
    message_area,
    section,
    when_shown,
)

TITLE = "Power & space"
ORDER = 20

RACK_PRESETS = {"42U": 42, "48U": 48, "52U": 52, "custom": None}
SPARES = {"none (N)": 0, "one (N+1)": 1, "two (N+2)": 2, "half (N+N)": -1}
_W = widgets.Layout(width="300px")
_S = {"description_width": "130px"}


def totals_frame(b: Budget, currency: str = "USD") -> pd.DataFrame:
    """The hall totals as a (quantity, value, unit) table; money in ``currency`` (``costs.currency``)."""
    rows = [
        ("Nodes / GPUs", f"{b.nodes:,} / {b.nodes * b.node.gpus_per_node:,}", ""),
        ("Nodes per rack", f"{b.nodes_per_rack} (limited by {b.binding_constraint})", ""),
        ("Racks (compute + network/storage)", f"{b.racks} ({b.compute_racks} + {b.infra_racks})", ""),
        ("Rows / floor area", f"{b.rows} / {b.floor_area_m2:,.1f}", "m²"),
        ("IT power (peak / typical)", f"{b.it_power_kw:,.1f} / {b.it_typical_kw:,.1f}", "kW"),
        (f"Facility power (PUE {b.pue:g})", f"{b.facility_power_kw:,.1f}", "kW"),
        ("Heat load", f"{b.heat_load_kw:,.1f} kW = {b.heat_load_btu_per_h:,.0f}", "BTU/h"),
        ("Cooling", f"{b.cooling_tons:,.1f}", "tons"),
        (f"Airflow at ΔT {b.delta_t_c:g} K", f"{b.airflow_cfm:,.0f}", "CFM"),
        ("Heat to air / to liquid", f"{b.air_heat_kw:,.1f} / {b.liquid_heat_kw:,.1f}", "kW"),
        (f"UPS ({b.power_redundancy}, +{b.growth_headroom:.0%} growth)", f"{b.ups_kw:,.0f} kW / {b.ups_kva:,.0f}",
         "kVA"),
        ("Generator", f"{b.generator_kw:,.0f} kW / {b.generator_kva:,.0f}", "kVA"),
        ("Planned with growth", f"{b.planned_it_power_kw:,.1f} kW IT, {plural(b.planned_racks, 'rack')}", ""),
        ("Annual energy", f"{b.annual_energy_mwh:,.1f}", "MWh"),
        ("Annual energy cost", f"{b.annual_energy_cost:,.0f}", f"{currency} per year"),
    ]
    return pd.DataFrame(rows, columns=["quantity", "value", "unit"])


def node_frame(b: Budget) -> pd.DataFrame:
    return pd.DataFrame([{"part": c.label, "detail": c.detail, "peak [W]": round(c.peak_w, 1),
                          "typical [W]": round(c.typical_w, 1)} for c in b.node.components])


class PowerPanel:
    """Widgets for the node source, counts and facility limits; results from :func:`facility.budget`."""

    def __init__(self, state: AppState):
        self.state = state
        self._syncing = False
        cat = state.catalog
        servers = cat.tables["servers"]
        self.msg = message_area()
        self.mode = widgets.ToggleButtons(options=["Catalogue server", "Build from parts"], description="Node")
        self.server = widgets.Dropdown(options=list(servers[servers["kind"] != "chassis"]["id"]),
                                       description="Server", layout=_W, style=_S)
        self.chassis = widgets.Dropdown(options=[("(generic for the GPU)", "")] + [
            (i, i) for i in servers[servers["kind"] == "chassis"]["id"]], description="Chassis", layout=_W, style=_S)
        self.accelerator = widgets.Dropdown(options=list(cat.tables["accelerators"]["id"]), description="GPU",
                                            layout=_W, style=_S)
        self.gpus = widgets.BoundedIntText(value=8, min=1, max=16, description="GPUs per node", layout=_W, style=_S)
        self.cpu = widgets.Dropdown(options=list(cat.tables["cpus"]["id"]), description="CPU", layout=_W, style=_S)
        self.cpu_count = widgets.BoundedIntText(value=2, min=1, max=8, description="CPU sockets", layout=_W, style=_S)
        self.memory = widgets.BoundedFloatText(value=1024, min=1, max=65536, description="RAM [GB]", layout=_W,
                                               style=_S)
        self.nic = widgets.Dropdown(options=list(cat.tables["nics"]["id"]), description="Compute NIC", layout=_W,
                                    style=_S)
        self.nic_count = widgets.BoundedIntText(value=8, min=0, max=32, description="NICs", layout=_W, style=_S)
        self.psu_count = widgets.BoundedIntText(value=4, min=1, max=16, description="PSUs", layout=_W, style=_S)
        self.psu_rating = widgets.BoundedFloatText(value=3000, min=100, max=20000, step=100,
                                                   description="PSU rating [W]", layout=_W, style=_S)
        self.psu_spares = widgets.Dropdown(options=list(SPARES), value="one (N+1)", description="Spare PSUs",
                                           layout=_W, style=_S)
        self.nodes = widgets.BoundedIntText(value=1, min=1, max=100_000, description="Nodes", layout=_W, style=_S)
        self.rack = widgets.Dropdown(options=list(RACK_PRESETS), value="42U", description="Rack height",
                                     layout=_W, style=_S)
        self.rack_custom = widgets.BoundedIntText(value=42, min=1, max=60, description="Custom [U]", layout=_W,
                                                  style=_S, disabled=True)
        self.rack_kw = widgets.BoundedFloatText(value=40, min=0.1, max=500, step=1, description="Rack limit [kW]",
                                                layout=_W, style=_S)
        self.rack_kg = widgets.BoundedFloatText(value=1360, min=1, max=5000, step=10,
                                                description="Rack limit [kg]", layout=_W, style=_S)
        self.cooling = widgets.Dropdown(options=["air", "rear_door", "liquid"], description="Cooling", layout=_W,
                                        style=_S)
        self.pue = widgets.BoundedFloatText(value=1.3, min=0.5, max=4, step=0.05, description="PUE", layout=_W,
                                            style=_S)
        self.price = widgets.BoundedFloatText(value=0.1, min=0, max=10, step=0.01, description="Energy [USD/kWh]",
                                              layout=_W, style=_S)
        self.delta_t = widgets.BoundedFloatText(value=11.1, min=0.1, max=40, step=0.5, description="ΔT air [K]",
                                                layout=_W, style=_S)
        self.redundancy = widgets.Dropdown(options=["N", "N+1", "2N"], value="N+1", description="UPS/generator",
                                           layout=_W, style=_S)
        self.findings = widgets.HTML()
        self.summary = widgets.HTML()
        self.node_table = widgets.HTML()
        self.totals = widgets.HTML()
        try:
            first = state.design.facility
        except GpuClusterError:  # placeholder charts only; the refresh below shows the error
            first = Design(Scenario(), state.catalog).facility
        self.budget: Budget = first
        self.elevation = chart_widget(charts.rack_elevation(first))
        self.breakdown = chart_widget(charts.power_breakdown(first))
        self.growth = chart_widget(charts.growth(growth_table(first, [1, 2])))

        #: what a failed change empties (tables, findings) or hides (charts): no number of an earlier
        #: design stays beside the error, and "All node checks pass" never shows next to one
        self.outputs = [self.findings, self.summary, self.totals, self.node_table, self.elevation, self.breakdown,
                        self.growth]
        self.apply = guarded(self.msg, clears=self.outputs)(self._apply)
        self.refresh = guarded(self.msg, clears=self.outputs)(self._refresh)
        self.sync = guarded(self.msg, clears=self.outputs)(self._from_scenario)
        inputs = [self.mode, self.server, self.chassis, self.accelerator, self.gpus, self.cpu, self.cpu_count,
                  self.memory, self.nic, self.nic_count, self.psu_count, self.psu_rating, self.psu_spares,
                  self.nodes, self.rack, self.rack_custom, self.rack_kw, self.rack_kg, self.cooling, self.pue,
                  self.price, self.delta_t, self.redundancy]
        for w in inputs:
            w.observe(self._changed, names="value")
        redraw = when_shown(state, TITLE, self.sync)
        state.observe(lambda _ch: None if self._syncing else redraw(), names=["scenario", "catalog"])

        self.catalog_box = widgets.VBox([self.server])
        self.parts_box = widgets.VBox([
            widgets.HBox([widgets.VBox([self.chassis, self.accelerator, self.gpus, self.cpu, self.cpu_count]),
                          widgets.VBox([self.memory, self.nic, self.nic_count, self.psu_count, self.psu_rating,
                                        self.psu_spares])])])
        facility = widgets.HBox([
            widgets.VBox([self.nodes, self.rack, self.rack_custom, self.rack_kw, self.rack_kg, self.cooling]),
            widgets.VBox([self.pue, self.price, self.delta_t, self.redundancy]),
        ])
        self.widget = widgets.VBox([
            widgets.HTML("<p>Pick a catalogue server or build a node from parts, set the node count and the rack "
                         "and facility limits. Peak power sizes racks, supplies, cooling and UPS; typical power "
                         "gives the energy. Assumptions and sources: <code>gpucluster_lib/power_assumptions.py"
                         "</code>.</p>"),
            self.mode, self.catalog_box, self.parts_box,
            section("Cluster and facility", facility),
            self.msg,
            section("Node checks", self.findings),
            section("Nodes per rack and hall", self.summary),
            widgets.HBox([section("Representative rack", self.elevation),
                          widgets.VBox([section("Power breakdown", self.breakdown),
                                        section("Hall totals", self.totals)])]),
            section("Node power by component", self.node_table),
            section("Growth: racks and facility power against node count", self.growth),
        ])
        self.sync()

    # -------------------------------------------------------------- scenario <-> widgets
    def _from_scenario(self) -> None:
        """Set the widgets from the state's scenario (on start and when another one is loaded)."""
        s, cat = self.state.scenario, self.state.catalog
        hw, fac = s.hardware, s.facility
        self._syncing = True
        try:
            kind = cat.server(hw.server)["kind"] if hw.server and hw.server in set(cat.ids("servers")) else None
            if kind in ("system", "workstation") and hw.parts is None and hw.accelerator is None:
                self.mode.value = "Catalogue server"
                self.server.value = hw.server
            else:
                self.mode.value = "Build from parts"
                parts = hw.parts
                self.chassis.value = (parts.chassis if parts and parts.chassis else (hw.server or "")) \
                    if kind in (None, "chassis") else ""
                if hw.accelerator:
                    self.accelerator.value = hw.accelerator
                self.gpus.value = hw.gpus_per_node or 8
                if parts and parts.cpus:
                    self.cpu.value, self.cpu_count.value = parts.cpus.id, max(1, parts.cpus.count)
                if parts and parts.memory_gb:
                    self.memory.value = parts.memory_gb
                if parts and parts.nics:
                    self.nic.value, self.nic_count.value = parts.nics.id, parts.nics.count
                if parts and parts.psus:
                    n, m = parse_redundancy(parts.psus.redundancy)
                    self.psu_count.value, self.psu_rating.value = parts.psus.count, parts.psus.rating_w
                    self.psu_spares.value = "half (N+N)" if n == m and n > 2 else next(
                        (k for k, v in SPARES.items() if v == m), "one (N+1)")
            self.nodes.value = self.state.scenario.hardware.nodes or 1
            preset = next((k for k, v in RACK_PRESETS.items() if v == fac.rack_units), "custom")
            self.rack.value = preset
            self.rack_custom.value = fac.rack_units
            self.rack_custom.disabled = preset != "custom"
            self.rack_kw.value, self.rack_kg.value = rack_power_limit_kw_of(fac), fac.rack_weight_limit_kg
            self.cooling.value, self.pue.value = fac.cooling, fac.pue
            self.price.value, self.delta_t.value = fac.energy_price_per_kwh, fac.delta_t_c
            self.redundancy.value = fac.power_redundancy
        finally:
            self._syncing = False
        self._show_mode()
        self._refresh()  # inside the caller's guard: a failure empties the outputs once

    def _show_mode(self) -> None:
        parts = self.mode.value == "Build from parts"
        self.catalog_box.layout.display = "none" if parts else None
        self.parts_box.layout.display = None if parts else "none"

    def _rack_kw(self) -> float | None:
        """The rack power limit to write: left unset while the widget shows the default, so the
        vendor's rack layout (DGX H100: 4 a rack) stays the default until the user sets a limit."""
        fac = self.state.scenario.facility
        kw = float(self.rack_kw.value)
        if fac.rack_power_limit_kw is None and kw == rack_power_limit_kw_of(fac):
            return None
        return kw

    def changes(self) -> dict[str, Any]:
        """The scenario fields the widgets stand for, as ``state.update`` keyword arguments."""
        rack_u = RACK_PRESETS[self.rack.value] or int(self.rack_custom.value)
        out: dict[str, Any] = {
            "hardware__nodes": int(self.nodes.value), "hardware__gpus": None,
            "facility__rack_units": rack_u, "facility__rack_power_limit_kw": self._rack_kw(),
            "facility__rack_weight_limit_kg": float(self.rack_kg.value), "facility__cooling": self.cooling.value,
            "facility__pue": float(self.pue.value), "facility__energy_price_per_kwh": float(self.price.value),
            "facility__delta_t_c": float(self.delta_t.value), "facility__power_redundancy": self.redundancy.value,
        }
        if self.mode.value == "Catalogue server":
            out.update(hardware__server=self.server.value, hardware__accelerator=None,
                       hardware__gpus_per_node=None, hardware__parts=None)
        else:
            count = int(self.psu_count.value)
            spares = SPARES[self.psu_spares.value]
            spares = count // 2 if spares < 0 else spares
            if spares >= count:  # e.g. 1 supply with "one spare": N would be 0 or negative
                raise ScenarioError("hardware.parts.psus.count",
                                    f"{count} power suppl{'y' if count == 1 else 'ies'} cannot keep {spares} as "
                                    f"spare{'s' if spares != 1 else ''}: at least one must carry the load; add "
                                    "supplies or choose fewer spares")
            parts = {"cpus": {"id": self.cpu.value, "count": int(self.cpu_count.value)},
                     "memory_gb": float(self.memory.value),
                     "nics": {"id": self.nic.value, "count": int(self.nic_count.value)},
                     "psus": {"count": count, "rating_w": float(self.psu_rating.value),
                              "redundancy": f"{count - spares}+{spares}"}}
            out.update(hardware__server=self.chassis.value or None, hardware__accelerator=self.accelerator.value,
                       hardware__gpus_per_node=int(self.gpus.value), hardware__parts=parts)
        return out

    # -------------------------------------------------------------- callbacks
    def _changed(self, change: dict) -> None:
        if self._syncing:
            return
        if change["owner"] is self.mode:
            if self.mode.value == "Build from parts":
                self._prefill_parts()
            self._show_mode()
        if change["owner"] is self.rack:
            self.rack_custom.disabled = self.rack.value != "custom"
        self.apply()

    def _prefill_parts(self) -> None:
        """Start the parts form from the node shown so far (same GPU, CPUs, memory, supplies)."""
        n = self.budget.node
        self._syncing = True
        try:
            ids = [v for _, v in self.chassis.options]
            self.chassis.value = n.chassis_id if n.chassis_id in ids else ""
            self.accelerator.value = n.accelerator_id
            self.gpus.value = n.gpus_per_node
            if n.cpu_id:
                self.cpu.value, self.cpu_count.value = n.cpu_id, max(1, n.cpu_count)
            self.memory.value = n.memory_gb
            compute = [x for x in n.nics if x.role == "compute"]
            if compute:
                self.nic.value, self.nic_count.value = compute[0].id, compute[0].count
            if n.psu_count and n.psu_rating_w and n.psu_redundancy:
                m = parse_redundancy(n.psu_redundancy)[1]
                self.psu_count.value, self.psu_rating.value = n.psu_count, n.psu_rating_w
                self.psu_spares.value = "half (N+N)" if 2 * m == n.psu_count and m > 2 else next(
                    (k for k, v in SPARES.items() if v == m), "one (N+1)")
        finally:
            self._syncing = False

    def _apply(self) -> None:
        self._syncing = True  # the state's observer must not re-sync the widgets we are editing
        try:
            self.state.update(**self.changes())
        finally:
            self._syncing = False
        self._refresh()  # inside the guard of apply: a failing design empties the outputs

    def _refresh(self) -> None:
        if self._syncing:
            return
        self.msg.value = ""
        b = self.state.design.facility
        self.budget = b
        self.findings.value = findings_html(_node_findings(b.findings), empty="All node checks pass.")
        lim = b.rack_fit.limits
        self.summary.value = kv_html([
            ("Node", f"{b.node.name}: peak {b.node.peak_power_w:,.0f} W, typical {b.node.typical_power_w:,.0f} W, "
                     f"{b.node.rack_units}U, {b.node.weight_kg:,.0f} kg"),
            ("Supplies", f"{b.node.psu_redundancy or '?'} x {b.node.psu_rating_w or 0:,.0f} W = "
                         f"{b.node.psu_usable_w or 0:,.0f} W usable"),
            ("Nodes per rack", f"{b.nodes_per_rack}, limited by {b.binding_constraint} "
                               f"(space {lim['space']}, power {lim['power']}, cooling {lim['cooling']}, "
                               f"weight {lim['weight']})"),
            ("Hall", f"{plural(b.nodes, 'node')} + {plural(b.spare_nodes, 'hot spare')} in {plural(b.racks, 'rack')}, "
                     f"{b.it_power_kw:,.1f} kW IT, {b.facility_power_kw:,.1f} kW facility, "
                     f"{b.annual_energy_mwh:,.1f} MWh/year"),
        ]) + findings_html([f for f in b.findings if f not in b.node.findings], empty="No hall findings.")
        currency = self.state.scenario.costs.currency
        self.price.description = f"Energy [{currency}/kWh]"
        self.totals.value = html_table(totals_frame(b, currency))
        self.node_table.value = html_table(node_frame(b))
        # set the Vega-Lite specs directly: the templates were validated once (charts.facility)
        self.elevation.spec = charts.rack_elevation_spec(b)
        self.breakdown.spec = charts.power_breakdown_spec(b)
        self.growth.spec = charts.growth_spec(growth_table(b, default_node_counts(b.nodes), self.state.scenario,
                                                          self.state.catalog), b.nodes)


def _node_findings(findings: list[Finding]) -> list[Finding]:
    from gpucluster_lib.hardware.node import CHECK_CODES

    return [f for f in findings if f.code in CHECK_CODES]


def build(state: AppState) -> widgets.Widget:
    return PowerPanel(state).widget
