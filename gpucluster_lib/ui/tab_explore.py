"""Explore panel: sweep one or two scenario keys under limits, see the Pareto front, load a point;
or fit the largest design inside the limits. The numbers come from :mod:`gpucluster_lib.explore`;
this module only links widgets to it."""

from __future__ import annotations

import html
from typing import Any

import altair as alt
import ipywidgets as widgets

from gpucluster_lib.charts.explore import PICK, pareto_spec
from gpucluster_lib.errors import ScenarioError
from gpucluster_lib.explore.outputs import outputs
from gpucluster_lib.explore.pareto import pareto_mask
from gpucluster_lib.explore.solve import Limits, fit, fit_scenario
from gpucluster_lib.explore.sweep import SweepResult, parse_sweep, run_sweep
from gpucluster_lib.formatting import format_value, humanize_key
from gpucluster_lib.scenario import Scenario
from gpucluster_lib.ui.common import (
    AppState,
    chart_widget,
    guarded,
    html_table,
    message_area,
    section,
    show_info,
)

TITLE = "Explore"
ORDER = 80

#: Scenario keys offered as axes (any key works in a sweep file; these are the common ones).
AXES = ("hardware.nodes", "hardware.server", "facility.pue", "facility.cooling", "facility.rack_power_limit_kw",
        "facility.energy_price_per_kwh", "network.topology", "network.oversubscription", "costs.years",
        "training.tokens")
NONE = "(none)"
#: The most points the panel runs (a sweep file on the command line takes any number).
MAX_POINTS = 200
_W = widgets.Layout(width="340px")
_S = {"description_width": "150px"}


def axis_label(key: str) -> str:
    return humanize_key(key)


def parse_values(text: str, what: str) -> list[Any]:
    """Comma-separated values: whole numbers, numbers or words."""
    out: list[Any] = []
    for tok in (t.strip() for t in text.split(",")):
        if not tok:
            continue
        for conv in (int, float):
            try:
                out.append(conv(tok))
                break
            except ValueError:
                continue
        else:
            out.append(tok)
    if not out:
        raise ScenarioError(what, "give at least one value, separated by commas (e.g. 16, 32, 64)")
    return out


def default_values(scenario: Scenario, key: str) -> str:
    """Values around the scenario's own for an axis."""
    if key == "hardware.nodes":
        n = scenario.hardware.nodes or 8
        return ", ".join(str(v) for v in sorted({max(1, n // 2), n, n * 3 // 2, n * 2}))
    if key == "facility.pue":
        return "1.1, 1.3, 1.5"
    if key == "facility.cooling":
        return "air, rear_door, liquid"
    if key == "hardware.server":
        return "dgx-a100-640gb, dgx-h100, dgx-h200"
    return ""


class ExplorePanel:
    def __init__(self, state: AppState):
        self.state = state
        self.msg = message_area()
        self.result: SweepResult | None = None
        self.front = None
        cur = state.scenario.costs.currency
        self._labels = {o.key: (o.label, o.unit) for o in outputs(cur)}
        numeric = [o for o in outputs(cur) if o.better]
        self._senses = {o.key: o.better for o in numeric}
        opts = [(f"{o.label}" + (f" ({o.unit})" if o.unit else "") + (" ↓" if o.better == "min" else " ↑"), o.key)
                for o in numeric]
        axis_opts = [(axis_label(k), k) for k in AXES]
        self.axis1 = widgets.Dropdown(options=axis_opts, value="hardware.nodes", description="First axis",
                                      layout=_W, style=_S)
        self.values1 = widgets.Text(value=default_values(state.scenario, "hardware.nodes"), description="Values",
                                    layout=_W, style=_S)
        self.axis2 = widgets.Dropdown(options=[(NONE, NONE), *axis_opts], value="facility.pue",
                                      description="Second axis", layout=_W, style=_S)
        self.values2 = widgets.Text(value=default_values(state.scenario, "facility.pue"), description="Values",
                                    layout=_W, style=_S)
        self.max_kw = widgets.BoundedFloatText(value=0, min=0, max=10_000_000, description="Max facility kW",
                                               tooltip="0 = no limit", layout=_W, style=_S)
        self.max_racks = widgets.BoundedIntText(value=0, min=0, max=1_000_000, description="Max racks",
                                                tooltip="0 = no limit", layout=_W, style=_S)
        self.max_capex = widgets.BoundedFloatText(value=0, min=0, max=1e13, description=f"Max CapEx ({cur})",
                                                  tooltip="0 = no limit", layout=_W, style=_S)
        self.max_days = widgets.BoundedFloatText(value=0, min=0, max=100_000, description="Max days to train",
                                                 tooltip="0 = no limit", layout=_W, style=_S)
        self.x = widgets.Dropdown(options=opts, value=f"cost.capex_{cur.lower()}", description="Front: across",
                                  layout=_W, style=_S)
        self.y = widgets.Dropdown(options=opts, value="facility.facility_power_kw", description="against",
                                  layout=_W, style=_S)
        self.run_button = widgets.Button(description="Run the sweep", button_style="primary", icon="play")
        self.fit_button = widgets.Button(description="Largest design inside the limits", icon="search",
                                         layout=widgets.Layout(width="280px"))
        self.progress = widgets.IntProgress(value=0, min=0, max=1, description="Points", layout=_W, style=_S)
        self.summary = widgets.HTML()
        self.table = widgets.HTML(layout=widgets.Layout(max_height="360px", overflow="auto"))
        self.pick = widgets.Dropdown(options=[], description="Design", layout=widgets.Layout(width="520px"),
                                     style=_S)
        self.load_button = widgets.Button(description="Load as the current scenario", icon="upload",
                                          layout=widgets.Layout(width="260px"))
        self.chart = None
        self._spec: dict | None = None
        self.chart_box = widgets.VBox()

        self.axis1.observe(lambda ch: self._defaults(self.values1, ch["new"]), names="value")
        self.axis2.observe(lambda ch: self._defaults(self.values2, ch["new"]), names="value")
        self.run_button.on_click(guarded(self.msg)(lambda _b: self.run()))
        self.fit_button.on_click(guarded(self.msg)(lambda _b: self.fit()))
        self.load_button.on_click(guarded(self.msg)(lambda _b: self.load(self.pick.value)))
        for w in (self.x, self.y):
            w.observe(guarded(self.msg)(lambda _ch: self.show()), names="value")

        self.widget = widgets.VBox([
            widgets.HTML("<p>Sweep one or two scenario settings, keep the designs inside the limits, and see "
                         "the trade-off between two figures: the designs no other beats on both form the front. "
                         "Click a point (or pick it below) to load it as the current scenario.</p>"),
            widgets.HBox([
                section("What to vary", self.axis1, self.values1, self.axis2, self.values2),
                section("Limits (0 = none)", self.max_kw, self.max_racks, self.max_capex, self.max_days),
                section("Front", self.x, self.y),
            ], layout=widgets.Layout(flex_flow="row wrap")),
            widgets.HBox([self.run_button, self.fit_button, self.progress]),
            self.msg, self.summary, self.chart_box,
            widgets.HBox([self.pick, self.load_button]),
            section("The front", self.table),
        ])

    # -------------------------------------------------------------- inputs
    def _defaults(self, box: widgets.Text, key: str) -> None:
        box.value = default_values(self.state.scenario, key) if key != NONE else ""

    def sweep_data(self) -> dict[str, Any]:
        axes = {self.axis1.value: parse_values(self.values1.value, "Values of the first axis")}
        if self.axis2.value != NONE:
            if self.axis2.value == self.axis1.value:
                raise ScenarioError("Second axis", "pick another setting than the first axis, or none")
            axes[self.axis2.value] = parse_values(self.values2.value, "Values of the second axis")
        cur = self.state.scenario.costs.currency.lower()
        cons = []
        if self.max_kw.value > 0:
            cons.append(f"facility.facility_power_kw <= {self.max_kw.value}")
        if self.max_racks.value > 0:
            cons.append(f"facility.racks <= {self.max_racks.value}")
        if self.max_capex.value > 0:
            cons.append(f"cost.capex_{cur} <= {self.max_capex.value}")
        if self.max_days.value > 0:
            cons.append(f"training.training_days <= {self.max_days.value}")
        if self.x.value == self.y.value:
            raise ScenarioError("Front", "pick two different figures")
        return {"axes": axes, "constraints": cons, "objectives": {self.x.value: self._senses[self.x.value],
                                                                 self.y.value: self._senses[self.y.value]}}

    # -------------------------------------------------------------- actions
    def run(self) -> SweepResult:
        sw = parse_sweep(self.sweep_data(), base=self.state.scenario)
        if sw.n_points > MAX_POINTS:
            raise ScenarioError("Values", f"{sw.n_points} designs is more than this panel runs ({MAX_POINTS}); "
                                          "use fewer values, or a sweep file with gpucluster sweep")
        self.progress.max, self.progress.value = sw.n_points, 0

        def step(done: int, total: int) -> None:
            self.progress.value = done

        self.result = run_sweep(sw, on_rows=step)
        self.show()
        return self.result

    def show(self) -> None:
        r = self.result
        if r is None:
            return
        sw = r.sweep
        objectives = {self.x.value: self._senses[self.x.value], self.y.value: self._senses[self.y.value]}
        sw.objectives = objectives
        s = r.summary()
        feas = r.feasible
        front = feas[pareto_mask(feas[list(objectives)].astype(float).to_numpy(), list(objectives.values()))] \
            if len(feas) else feas
        self.front = front
        lines = [f"<b>{s['points']} designs</b>: {s['ok']} worked out, {s['failed']} could not be built, "
                 f"{s['feasible']} inside the limits, <b>{len(front)} on the front</b>."]
        lines += [f'<div class="gc-msg gc-{"error" if f["severity"] == "error" else "info"}">'
                  f'{html.escape(f["message"])}. {html.escape(f["fix"])}</div>' for f in s["findings"]]
        self.summary.value = "".join(lines)
        extra = list(sw.keys)
        color = sw.keys[1] if len(sw.keys) > 1 else None
        mask = [p in set(front["point"]) for p in feas["point"]]
        if len(feas):
            spec = pareto_spec(feas, self.x.value, self.y.value, mask, senses=objectives, labels=self._labels,
                               color=color, extra=extra)
            if self.chart is None:  # the selection is set up once; every layout has the same one
                self.chart = chart_widget(alt.LayerChart.from_dict(spec, validate=False))
                self.chart.embed_options = {**self.chart.embed_options, "renderer": "svg"}  # points in the DOM
                self.chart_box.children = [self.chart]
                self.chart.selections.observe(guarded(self.msg)(self._on_pick), names=[PICK])
            else:
                self.chart.spec = spec  # compiled once per layout: no altair validation per change
        else:
            self.chart_box.children = []
            self.chart = None
        self.pick.options = [(self._describe(row), int(row["point"])) for _, row in front.iterrows()]
        self.pick.value = self.pick.options[0][1] if self.pick.options else None
        cols = ["point", *sw.keys, *objectives]
        headers = {"point": "Point", **{k: axis_label(k) for k in sw.keys},
                   **{k: self._labels[k][0] + (f" ({self._labels[k][1]})" if self._labels[k][1] else "")
                      for k in objectives}}
        self.table.value = html_table(front[list(dict.fromkeys(cols))], headers=headers) if len(front) else \
            "<p>No design is inside the limits.</p>"

    def _describe(self, row: Any) -> str:
        sw = self.result.sweep if self.result else None
        parts = [f"{axis_label(k).split(': ', 1)[-1]} {format_value(row[k])}" for k in (sw.keys if sw else ())]
        return f"Point {int(row['point'])}: " + ", ".join(parts)

    def _on_pick(self, change: dict) -> None:
        sel = change["new"]
        value = getattr(sel, "value", None) or []
        if value:
            self.load(int(value[0]["point"]))

    def load(self, point: int | None) -> None:
        if point is None or self.result is None:
            raise ScenarioError("Design", "run the sweep first, then pick a design of the front")
        scenario = self.result.sweep.scenario_at(int(point))
        self.state.scenario = scenario
        show_info(self.msg, f"Loaded point {int(point)} as the current scenario: {scenario.name}.")

    def fit(self) -> Any:
        lim = Limits(max_facility_kw=self.max_kw.value or None, max_racks=self.max_racks.value or None,
                     max_capex=self.max_capex.value or None, deadline_days=self.max_days.value or None)
        if lim.max_facility_kw is None and lim.max_racks is None and lim.max_capex is None:
            raise ScenarioError("Limits", "set at least one limit (facility power, racks or CapEx) for the "
                                          "largest design inside them")
        base = fit_scenario(self.state.scenario)
        r = fit(base, lim, catalog=self.state.catalog)
        d = r.to_dict()
        if not d["feasible"]:
            self.summary.value = "".join(f'<div class="gc-msg gc-error">{html.escape(f["message"])}. '
                                         f'{html.escape(f["fix"])}</div>' for f in d["findings"])
            return r
        nxt = d["next"] or {}
        self.summary.value = (
            f"<b>Largest design inside the limits: {d['nodes']:,} nodes, {d['gpus']:,} GPUs</b>, {d['racks']} racks, "
            f"{d['facility_power_kw']:,.0f} kW at the meter, CapEx {d['capex']:,.0f} {d['currency']}. "
            f"What binds: {html.escape(d['binding_detail'])}"
            + (f" (at {nxt['nodes']:,} nodes)." if nxt else ".")
            + f" Nodes step by {d['step_nodes']}.")
        self.state.scenario = base.replace(hardware__nodes=d["nodes"], hardware__gpus=None,
                                           name=f"{base.name} · fitted")
        show_info(self.msg, f"Loaded the fitted design ({d['nodes']:,} nodes) as the current scenario.")
        return r


def build(state: AppState) -> widgets.Widget:
    return ExplorePanel(state).widget
