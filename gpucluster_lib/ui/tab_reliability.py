"""Reliability & cost panel: interruptions, checkpointing, days-to-train band, CapEx/OpEx/TCO,
build versus rent and carbon. All numbers come from :mod:`gpucluster_lib.reliability.core`
and :mod:`gpucluster_lib.economics.cost`; this module only links widgets to the scenario."""

from __future__ import annotations

import html

import ipywidgets as widgets

from gpucluster_lib.charts.cost import cost_panel_chart, cost_spec
from gpucluster_lib.charts.reliability import (
    days_band_chart,
    days_band_spec,
    reliability_panel_chart,
    reliability_spec,
)
from gpucluster_lib.design import Design
from gpucluster_lib.economics import cost as cost_mod
from gpucluster_lib.economics.carbon import load_grid_presets
from gpucluster_lib.findings import sort_findings
from gpucluster_lib.reliability import core as rel_mod
from gpucluster_lib.ui.common import (
    AppState,
    FieldBinding,
    chart_widget,
    guarded,
    kv_html,
    message_area,
    section,
    set_shown,
    show_findings,
    when_shown,
)

TITLE = "Reliability & cost"
ORDER = 60

PRESETS = ["llama3-405b", "rsc1", "rsc2"]


def summary_pairs(r: rel_mod.ReliabilityResult | None, c: cost_mod.CostResult, fits: bool = True
                  ) -> list[tuple[str, str]]:
    """The key figures shown at the top of the panel (label, formatted value); the cost alone
    when the design has no training run (``r`` None)."""

    def days(v: float | None) -> str:
        return "–" if v is None else f"{v:.1f}"

    cur = c.currency
    pairs = [] if r is None else [
        ("Interruptions per day", f"{r.interruptions_per_day:.2f} (one every {r.mtbi_hours:.1f} h)"),
        ("Checkpoint", f"{r.checkpoint_bytes / 1e12:.2f} TB, written in {r.checkpoint_write_s:.0f} s, "
                       f"every {r.checkpoint_interval_s / 60:.0f} min"),
        ("Goodput", f"{r.goodput:.1%}"),
        ("Days to train", "– (the training plan does not fit in memory: change it on the Training tab)"
         if not fits else f"ideal {days(r.training_days_ideal)}, expected {days(r.training_days_expected)}, "
                          f"P10-P90 {days(r.training_days_p10)}-{days(r.training_days_p90)}"),
        ("Hot spare nodes", f"{r.spare_nodes} (recommended {r.spare_nodes_recommended}; job at full size "
                            f"{r.full_size_availability:.1%} of the time)"),
    ]
    pairs += [
        ("CapEx", f"{c.capex['total']:,.0f} {cur}"),
        ("OpEx per year", f"{c.opex_per_year['total']:,.0f} {cur}"),
        (f"TCO over {c.years} years", f"{c.tco:,.0f} {cur}; {c.cost_per_gpu_hour:.2f} {cur} per GPU-hour"),
        ("Training run", "–" if c.training_run_cost is None or not fits else
         f"own {c.training_run_cost:,.0f}, rent {c.rent_training_run_cost:,.0f} {cur}"),
        ("Energy and carbon", f"{c.energy_mwh_per_year:,.0f} MWh/yr, {c.co2e_tonnes_per_year:,.0f} t CO2e/yr"
                              + ("" if c.training_run_co2e_tonnes is None else
                                 f"; run {c.training_run_co2e_tonnes:,.0f} t")),
    ]
    return pairs


def assumptions_html(c: cost_mod.CostResult) -> str:
    """The figures that rest on an assumption (e.g. a storage system missing from the catalogue)."""
    if not c.assumptions:
        return ""
    lis = "".join(f"<li>{html.escape(v)}</li>" for _, v in sorted(c.assumptions.items()))
    return f'<div class="gc-msg gc-info">Assumed where the catalogue has no figure:<ul>{lis}</ul></div>'


def compute(design: Design) -> tuple[rel_mod.ReliabilityResult | None, cost_mod.CostResult, list[dict]]:
    """The panel's figures, without widgets: the design's reliability and cost, and the
    days-to-train band against cluster size (none without days to train: no token budget, or a
    plan that does not fit; also what the benchmark times)."""
    r, c = design.reliability, design.cost
    rows = rel_mod.scaling_table(design.scenario, design.catalog, base=r) \
        if r is not None and r.training_days_ideal is not None else []
    return r, c, rows


def no_band_text(design: Design) -> str:
    """Why a design with a training job has no days-to-train band, in words."""
    if design.scenario.training.tokens is None:
        return ("No days-to-train band: the scenario sets no training token budget "
                "(set the tokens to train on the Training tab).")
    return ("No days-to-train band: the training plan does not fit in GPU memory, so it has no days to "
            "train (change the plan on the Training tab).")


def reliability_spec_of(r: rel_mod.ReliabilityResult) -> dict:
    """The checkpoint-interval and interruption charts of ``r`` (Vega-Lite, validated once)."""
    return reliability_spec(r, rel_mod.goodput_curve(r))


def cost_spec_of(c: cost_mod.CostResult) -> dict:
    """The four cost charts of ``c`` (Vega-Lite, validated once per currency)."""
    return cost_spec(c, cost_mod.grid_presets())


class ReliabilityPanel:
    def __init__(self, state: AppState):
        self.state = state
        self.msg = message_area()
        self.findings = widgets.HTML()
        self.summary = widgets.HTML()
        self.assumptions = widgets.HTML()
        rs = state.scenario.reliability
        cs = state.scenario.costs
        fs = state.scenario.facility
        regions = ["(scenario value)", *load_grid_presets()["regions"]]
        self.preset = widgets.Dropdown(options=PRESETS, value=rs.failure_preset, description="Failure rates")
        self.restart = widgets.IntSlider(value=int(rs.restart_minutes or 10), min=1, max=120,
                                         description="Restart [min]", continuous_update=False)
        self.write = widgets.BoundedFloatText(value=rs.checkpoint_write_gbps or 0.0, min=0, max=100_000, step=10,
                                              description="Ckpt GB/s", tooltip="0 = sized from the storage system")
        self.spares = widgets.IntSlider(value=-1 if rs.spare_nodes is None else rs.spare_nodes, min=-1, max=64,
                                        description="Spares", tooltip="-1 = recommended", continuous_update=False)
        self.price = widgets.BoundedFloatText(value=fs.energy_price_per_kwh, min=0, max=5, step=0.01,
                                              description="$/kWh")
        self.years = widgets.IntSlider(value=cs.years, min=1, max=10, description="Years", continuous_update=False)
        self.rent = widgets.BoundedFloatText(value=cs.rent_per_gpu_hour or 0.0, min=0, max=100, step=0.1,
                                             description="Rent $/GPU-h", tooltip="0 = default for the accelerator")
        self.model = widgets.Dropdown(options=["build", "colocation"], value=cs.facility_model, description="Facility")
        self.grid = widgets.Dropdown(options=regions, value=fs.grid_region or "(scenario value)", description="Grid")
        self.band_chart = chart_widget(days_band_chart([]))
        self.band_note = widgets.HTML()
        self.rel_chart = chart_widget(reliability_panel_chart())
        self.cost_chart = chart_widget(cost_panel_chart("USD", "training run"))
        for jc in (self.band_chart, self.rel_chart, self.cost_chart):  # svg: text in the DOM (testable), crisp lines
            jc.embed_options = {**(jc.embed_options or {}), "renderer": "svg"}

        #: what a failed design empties: no number of an earlier state stays beside the error
        self.outputs = [self.summary, self.assumptions, self.findings, self.band_note, self.band_chart,
                        self.rel_chart, self.cost_chart]
        #: each widget writes only its own field: a change of one leaves the others as the scenario has them
        self.binding = FieldBinding(state, {
            self.preset: ("reliability__failure_preset", str),
            self.restart: ("reliability__restart_minutes", float),
            self.write: ("reliability__checkpoint_write_gbps", lambda v: v or None),
            self.spares: ("reliability__spare_nodes", lambda v: None if v < 0 else int(v)),
            self.price: ("facility__energy_price_per_kwh", float),
            self.grid: ("facility__grid_region", lambda v: None if v == "(scenario value)" else v),
            self.years: ("costs__years", int),
            self.rent: ("costs__rent_per_gpu_hour", lambda v: v or None),
            self.model: ("costs__facility_model", str),
        }, after=self._refresh)
        self.refresh = guarded(self.msg, clears=self.outputs)(self._refresh)
        self.apply = guarded(self.msg, clears=self.outputs)(self.binding.apply)
        self._rel: rel_mod.ReliabilityResult | None = None
        self._note = ""
        self.binding.observe(self.apply)
        redraw = when_shown(state, TITLE, self._from_state)
        state.observe(lambda _ch: None if self.binding.busy else redraw(), names=["scenario", "catalog"])

        for w in (self.preset, self.restart, self.write, self.spares, self.price, self.years, self.rent,
                  self.model, self.grid):
            w.style.description_width = "120px"
        controls = widgets.HBox([
            widgets.VBox([self.preset, self.restart, self.write, self.spares]),
            widgets.VBox([self.price, self.years, self.rent, self.model, self.grid]),
        ])
        self.widget = widgets.VBox([
            widgets.HTML("<p>Failure-aware time to train (Llama 3 / Meta RSC failure rates, Young and Daly "
                         "checkpoint intervals, Daly's goodput) and the cost and carbon of the cluster "
                         "(CapEx, OpEx, TCO with straight-line depreciation, build versus rent).</p>"),
            controls, self.msg, self.summary, self.assumptions, self.findings,
            section("Reliability: days-to-train band, checkpoint interval, interruptions by component",
                    self.band_note, self.band_chart, self.rel_chart),
            section("Cost: waterfall, TCO over years, build versus rent, carbon", self.cost_chart),
        ])
        self.refresh()

    def _from_state(self) -> None:
        """Another panel (or a loaded file) changed the scenario: show its values, recompute."""
        s = self.state.scenario
        rs, cs, fs = s.reliability, s.costs, s.facility
        with self.binding.quiet():
            self.preset.value = rs.failure_preset
            self.restart.value = int(round(rs.restart_minutes or 10))
            self.write.value = rs.checkpoint_write_gbps or 0.0
            self.spares.value = -1 if rs.spare_nodes is None else min(rs.spare_nodes, self.spares.max)
            self.price.value = fs.energy_price_per_kwh
            self.grid.value = fs.grid_region if fs.grid_region in self.grid.options else "(scenario value)"
            self.years.value = cs.years
            self.rent.value = cs.rent_per_gpu_hour or 0.0
            self.model.value = cs.facility_model
        self.refresh()

    def _refresh(self) -> None:
        self.msg.value = ""
        d = self.state.design
        r, c = d.reliability, d.cost
        self.cost_chart.spec = cost_spec_of(c)  # a template filled with the data: no altair per change
        self.assumptions.value = assumptions_html(c)
        if r is None:  # a scenario without a transformer: the cost stands on its own
            self.band_note.value = ""
            set_shown(self.band_chart, False)
            set_shown(self.rel_chart, False)
            self._rel = None
            self.summary.value = kv_html(summary_pairs(None, c))
            show_findings(self.findings, sort_findings(c.findings))
            self.msg.value = ('<div class="gc-msg gc-info">The scenario has no transformer model to train: '
                              "reliability needs one (pick a model on the Training tab); the cost below "
                              "still applies.</div>")
            return
        # the reliability charts only change with the reliability stage: a price change reuses them
        if r is not self._rel:
            self.rel_chart.spec = reliability_spec_of(r)
            set_shown(self.rel_chart, True)
            rows = rel_mod.scaling_table(d.scenario, d.catalog, base=r) if r.training_days_ideal is not None else []
            if rows:
                self.band_chart.spec = days_band_spec(rows, r.gpus)
                set_shown(self.band_chart, True)
                self._note = ""
            else:  # no days to train: no band (and no empty axes), and why in words
                set_shown(self.band_chart, False)
                self._note = f'<div class="gc-msg gc-info">{html.escape(no_band_text(d))}</div>'
            self._rel = r
        self.band_note.value = self._note  # emptied by an error in between: written on every refresh
        tr = d.training
        self.summary.value = kv_html(summary_pairs(r, c, fits=tr is None or getattr(tr, "fits", True)))
        show_findings(self.findings, sort_findings([*r.findings, *c.findings]))


def build(state: AppState) -> widgets.Widget:
    return ReliabilityPanel(state).widget
