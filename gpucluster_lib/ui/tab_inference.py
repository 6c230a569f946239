"""Inference tab: model, precision, GPU, TP, traffic and SLOs -> fleet size, curves, comparison."""

from __future__ import annotations

import altair as alt
import ipywidgets as widgets
import pandas as pd

from gpucluster_lib.charts.inference import (
    accelerator_comparison_spec,
    memory_breakdown_spec,
    throughput_latency_spec,
)
from gpucluster_lib.design import STAGES, scenario_input
from gpucluster_lib.errors import ScenarioError
from gpucluster_lib.formatting import plural
from gpucluster_lib.inference.compare import compare_accelerators, system_for
from gpucluster_lib.inference.engines import engine_profiles
from gpucluster_lib.inference.precision import WEIGHT_BYTES, supported_precisions
from gpucluster_lib.inference.queueing import percentile_label
from gpucluster_lib.inference.serve import latency_words
from gpucluster_lib.ui.common import (
    AppState,
    chart_widget,
    guarded,
    html_table,
    kv_html,
    message_area,
    section,
    set_shown,
    show_findings,
    table_widget,
    when_shown,
)
from gpucluster_lib.units import GB
from gpucluster_lib.workloads.transformer import preset_ids
from gpucluster_lib.workloads.vision import estimate_inference, load_vision_presets

TITLE = "Inference"
ORDER = 50

SWEEP_HEADERS = {"batch": "batch", "ttft_s": "TTFT [s]", "tpot_s": "TPOT [s]",
                 "tokens_per_s_per_replica": "tokens/s per replica", "tokens_per_s_per_gpu": "tokens/s per GPU",
                 "meets_slo": "meets SLO", "kv_cache_bytes_per_gpu": "KV cache per GPU [B]"}


def _arrival_options(percentile: float) -> list[tuple[str, str]]:
    """The Arrivals choices, the Poisson one with the scenario's SLO percentile ("Poisson, p90 SLOs")."""
    return [("saturated (offline)", "offline"), (f"Poisson, {percentile_label(percentile)} SLOs", "poisson")]


def _fmt(v, spec: str, scale: float = 1.0, unit: str = "") -> str:
    if v is None:
        return "–"
    return f"{format(v * scale if scale != 1.0 else v, spec)}{unit}"


class InferencePanel:
    """Widgets bound to ``scenario.inference`` and the accelerator; results from :func:`serve`."""

    def __init__(self, state: AppState):
        self.state = state
        s = state.scenario
        inf = s.inference
        acc_df = state.catalog.tables["accelerators"]
        self.accelerators = [r["id"] for r in state.catalog.records("accelerators") if supported_precisions(r)]
        self.msg = message_area()
        self.model = widgets.Dropdown(options=preset_ids("transformer"), description="Model")
        self.precision = widgets.Dropdown(options=list(WEIGHT_BYTES), value=inf.precision, description="Precision")
        self.accelerator = widgets.Dropdown(options=self.accelerators, description="GPU")
        self.tp = widgets.Dropdown(options=[("auto", 0), ("1", 1), ("2", 2), ("4", 4), ("8", 8)],
                                   value=inf.tensor_parallel or 0, description="TP")
        self.rps = widgets.BoundedFloatText(value=inf.requests_per_s or 0.0, min=0, max=1e6, step=1,
                                            description="Requests/s",
                                            tooltip="traffic target; 0 = none (the fleet is the cluster's GPUs)")
        self.input_tokens = widgets.BoundedIntText(value=inf.input_tokens, min=1, max=1_000_000,
                                                   description="Input tok")
        self.output_tokens = widgets.BoundedIntText(value=inf.output_tokens, min=1, max=1_000_000,
                                                    description="Output tok")
        self.ttft = widgets.BoundedFloatText(value=inf.ttft_slo_s, min=0.001, max=1000, step=0.5,
                                             description="TTFT SLO s")
        self.tpot = widgets.BoundedFloatText(value=inf.tpot_slo_s * 1000, min=1, max=100_000, step=10,
                                             description="TPOT SLO ms")
        self.arrival = widgets.Dropdown(options=_arrival_options(inf.slo_percentile), value=inf.arrival,
                                        description="Arrivals")
        self.engine = widgets.Dropdown(options=[(p.label, name) for name, p in engine_profiles().items()],
                                       value=inf.engine, description="Engine", layout=widgets.Layout(width="640px"),
                                       tooltip="the serving software: its host time per step, matrix-multiply "
                                               "efficiency and token budget, fitted on its own published tables")
        self.streaming = widgets.Checkbox(value=inf.streaming, indent=False,
                                          description="Stream responses token by token",
                                          tooltip="each sequence's new token is returned every step (as chat "
                                                  "front ends do); the TensorRT-LLM engine's host time per "
                                                  "sequence is then its streamed one")
        for w in (self.rps, self.input_tokens, self.output_tokens, self.ttft, self.tpot, self.arrival):
            w.style.description_width = "100px"
        self.vision_model = widgets.Dropdown(options=list(load_vision_presets()), description="Vision model")
        self.vision_batch = widgets.BoundedIntText(value=64, min=1, max=65536, description="Batch")
        self.vision_fps = widgets.BoundedFloatText(value=30.0, min=0.1, max=1000, description="Frames/s")
        self.vision_out = widgets.HTML()
        self.vision_msg = message_area()
        self.vision = guarded(self.vision_msg)(self._vision)
        for w in (self.vision_model, self.vision_batch, self.vision_fps):
            w.observe(lambda _ch: self.vision(), names="value")
        self.summary = widgets.HTML()
        self.findings = widgets.HTML()
        self.sweep_table = table_widget()
        self.compare_table = table_widget()
        del acc_df
        self._busy = False
        # empty until the first estimate: a design that does not serve must not break the tab
        self.curve = chart_widget(alt.Chart(pd.DataFrame({"x": []})).mark_point())
        self.memory = chart_widget(alt.Chart(pd.DataFrame({"x": []})).mark_bar())
        self.compare = chart_widget(alt.Chart(pd.DataFrame({"x": []})).mark_bar())
        #: the accelerator comparison (catalogue, what it read of the scenario, its table, its chart):
        #: computed again only when they change
        self._comparison: tuple | None = None
        for jc in (self.curve, self.memory, self.compare):  # SVG: text in the DOM (browser tests, copy)
            jc.embed_options = {**jc.embed_options, "renderer": "svg"}
        #: what a failed design empties: no number of an earlier state stays beside the error
        self.outputs = [self.summary, self.findings, self.sweep_table, self.compare_table, self.curve,
                        self.memory, self.compare]
        self.refresh = guarded(self.msg, clears=self.outputs)(self._refresh)
        self.apply = guarded(self.msg, clears=self.outputs)(self._apply)
        guarded(self.msg, clears=self.outputs)(self._sync_from_scenario)()
        for w in (self.model, self.precision, self.accelerator, self.tp, self.rps, self.input_tokens,
                  self.output_tokens, self.ttft, self.tpot, self.arrival, self.engine, self.streaming):
            w.observe(lambda _ch: self.apply(), names="value")
        redraw = when_shown(state, TITLE, self._on_scenario)
        state.observe(lambda _ch: None if self._busy else redraw(), names=["scenario", "catalog"])
        inputs = widgets.VBox([widgets.HBox([
            widgets.VBox([self.model, self.precision, self.accelerator, self.tp]),
            widgets.VBox([self.rps, self.input_tokens, self.output_tokens, self.ttft, self.tpot, self.arrival]),
        ]), widgets.HBox([self.engine, self.streaming])])
        self.widget = widgets.VBox([
            widgets.HTML("<p>Size an LLM serving fleet: the largest batch that fits, prefill and decode times "
                         "(roofline with sourced efficiencies, continuous batching), the best throughput that "
                         "meets TTFT and TPOT, and the GPUs, nodes, racks and power for the traffic.</p>"),
            inputs, self.msg, self.summary, self.findings,
            section("Throughput against latency", self.curve),
            section("Memory per GPU at the chosen batch", self.memory),
            section("Batch sweep", self.sweep_table),
            section("The same target on other accelerators (TP searched)", self.compare, self.compare_table),
            section("Vision models on this GPU (images/s and video streams)",
                    widgets.HBox([self.vision_model, self.vision_batch, self.vision_fps]), self.vision_msg,
                    self.vision_out),
        ])
        self.refresh()

    def _serving(self):
        est = self.state.design.serving
        if est is None:
            raise ScenarioError("model.preset", "the scenario has no model: pick one above")
        return est

    # ---------------------------------------------------------------- state <-> widgets
    def _sync_from_scenario(self) -> None:
        s = self.state.scenario
        acc = self.state.accelerator_id()
        self._busy = True
        try:
            if s.model.preset in self.model.options:
                self.model.value = s.model.preset
            if acc in self.accelerators:
                self.accelerator.value = acc
            inf = s.inference
            self.precision.value = inf.precision
            self.tp.value = inf.tensor_parallel or 0
            self.input_tokens.value = inf.input_tokens
            self.output_tokens.value = inf.output_tokens
            self.ttft.value = inf.ttft_slo_s
            self.tpot.value = inf.tpot_slo_s * 1000
            self.arrival.options = _arrival_options(inf.slo_percentile)
            self.arrival.value = inf.arrival
            self.engine.value = inf.engine
            self.streaming.value = inf.streaming
            self.rps.value = inf.requests_per_s or 0.0  # 0: no target (or a tokens/s target, kept)
        finally:
            self._busy = False

    def _on_scenario(self) -> None:
        if self._busy:
            return
        self._sync_from_scenario()
        self.refresh()

    def _apply(self) -> None:
        if self._busy:
            return
        changes = {
            "model": {"preset": self.model.value},
            "inference__precision": self.precision.value,
            "inference__tensor_parallel": self.tp.value or None,
            "inference__requests_per_s": float(self.rps.value) or None,
            "inference__input_tokens": int(self.input_tokens.value),
            "inference__output_tokens": int(self.output_tokens.value),
            "inference__ttft_slo_s": float(self.ttft.value), "inference__tpot_slo_s": float(self.tpot.value) / 1000,
            "inference__arrival": self.arrival.value,
            "inference__engine": self.engine.value,
            "inference__streaming": bool(self.streaming.value),
        }
        if self.rps.value:  # a request rate replaces a tokens/s target; 0 keeps the scenario's
            changes["inference__tokens_per_s"] = None
        if self.accelerator.value != self.state.accelerator_id():
            server = system_for(self.state.catalog, self.accelerator.value)
            changes.update(hardware__server=server, hardware__accelerator=None if server else self.accelerator.value,
                           hardware__gpus_per_node=None, hardware__gpus=None)
        self._busy = True
        try:
            self.state.update(**changes)
        finally:
            self._busy = False
        self._refresh()

    def _refresh(self) -> None:
        self.msg.value = ""
        self.vision()  # its own message area: the vision section follows the accelerator either way
        self._render(self._serving())

    def _vision(self) -> None:
        self.vision_msg.value = self.vision_out.value = ""
        acc = self.state.design.hardware.accelerator
        precision = self.state.scenario.inference.precision
        est = estimate_inference(self.vision_model.value, acc, precision=precision,
                                 batch_size=int(self.vision_batch.value), video_fps=float(self.vision_fps.value))
        self.vision_out.value = kv_html([
            ("Throughput", f"{est.images_per_s_per_gpu:,.0f} images/s per {acc['id']} at batch {est.batch_size} "
                           f"({precision}), {est.latency_s * 1000:.1f} ms per batch"),
            ("Video", f"{est.streams_per_gpu} streams of {est.video_fps:g} frames/s per GPU"),
        ])

    def _render(self, est) -> None:
        if not hasattr(est, "sweep_frame"):  # a CNN/ViT scenario: images/s, no token batch sweep
            self._render_vision(est)
            return
        target = self.state.scenario.inference
        if target.requests_per_s:
            traffic = f"{target.requests_per_s:,.6g} requests/s"
        elif target.tokens_per_s:
            traffic = f"{target.tokens_per_s:,.6g} output tokens/s"
        else:
            traffic = "none: the fleet is the cluster's GPUs (set Requests/s to size one)"
        sweep = est.sweep_frame()
        if not est.gpus or not len(sweep):  # nothing serves: no fleet, latency or efficiency to print
            name = self.state.design.hardware.accelerator.get("name") or est.accelerator
            self.summary.value = kv_html([
                ("Traffic target", traffic),
                ("Fleet", f"none: {est.model} serves no request on {name} at TP {est.tensor_parallel} "
                          f"({est.precision}); the errors below say why"),
                ("Memory", f"weights {est.weights_bytes_per_gpu / GB:,.1f} GB per GPU"),
            ])
            show_findings(self.findings, est.findings, empty="")
            self.sweep_table.value = self.compare_table.value = ""
            for chart in (self.curve, self.compare):  # hidden on purpose: the refresh's guard keeps them so
                set_shown(chart, False)
            set_shown(self.memory, True)
            self.memory.spec = memory_breakdown_spec(est.memory_per_gpu_bytes)
            return
        for chart in (self.curve, self.memory, self.compare):
            set_shown(chart, True)
        ok = "✔ meets" if est.meets_slo else "✖ does not meet"
        load = est.load if est.load and est.load.get("at_max_rate") else None
        pct = percentile_label(load["percentile"]) if load else ""
        rows = [
            ("Traffic target", traffic),
            ("Fleet", f"{plural(est.replicas, 'replica')} x TP {est.tensor_parallel} = {plural(est.gpus, 'GPU')}, "
                      f"{plural(est.nodes, 'node')}, "
                      f"{plural(est.racks, 'rack') if est.racks is not None else '– racks'}, "
                      f"{_fmt(est.it_power_kw, ',.3f', 1e-3, ' MW IT')}"),
            ("Per GPU", f"{_fmt(est.tokens_per_s_per_gpu, ',.0f')} output tokens/s at batch {est.batch:,} "
                        f"(max {est.max_batch:,} fits)"),
            ("Latency", (f"at the max rate per replica, {pct}: " if load else "")
             + f"TTFT {_fmt(est.ttft_s, ',.3f', 1, ' s')}, TPOT {_fmt(est.tpot_s, ',.1f', 1000, ' ms')}: "
               f"{ok} the SLO"),
        ]
        if load:
            rows.append(("Poisson arrivals", f"max {load['max_rate_per_replica_per_s']:,.2f} requests/s per replica: "
                                             + latency_words(load["at_max_rate"], pct)))
            at = load.get("at_target")
            if at:
                rows.append(("At the target", f"{at['rate_per_s']:,.2f} requests/s per replica: "
                             + (latency_words(at, pct) if at.get("stable") and at.get("ttft_pct_s") is not None
                                else "above what a replica sustains (no steady state)")))
        self.summary.value = kv_html(rows + [
            ("Memory", f"weights {est.weights_bytes_per_gpu / GB:,.1f} GB/GPU; KV cache "
                       f"{est.kv_cache_bytes_per_token:,.0f} bytes/token ({est.kv_cache_precision})"),
            ("Efficiency", f"{_fmt(est.tokens_per_s_per_mw, ',.0f')} tokens/s per MW IT; "
                           f"{_fmt(est.tokens_per_s_per_rack, ',.0f')} per rack; "
                           f"{_fmt(est.tokens_per_s_per_usd, ',.0f', 1e6)} per 1M USD of CapEx"),
        ])
        show_findings(self.findings, est.findings)
        self.sweep_table.value = html_table(sweep, headers=SWEEP_HEADERS, highlight=lambda r: r["batch"] == est.batch)
        self.curve.spec = throughput_latency_spec(est.sweep, est.tpot_slo_s, est.batch)
        self.memory.spec = memory_breakdown_spec(est.memory_per_gpu_bytes)
        key = self._comparison_key()
        if self._comparison is None or not (self._comparison[0] is self.state.catalog
                                            and self._comparison[1] == key):
            comparison = compare_accelerators(self.state.scenario, self.state.catalog)
            self._comparison = (self.state.catalog, key, html_table(comparison),
                                accelerator_comparison_spec(comparison))
        # set every time: an error in between emptied the table (the same values notify nothing)
        self.compare_table.value, self.compare.spec = self._comparison[2], self._comparison[3]

    def _render_vision(self, est) -> None:
        """A vision scenario's fleet (``VisionServingEstimate``): images/s per GPU and the GPUs for the target;
        the token charts and tables stay empty (they describe language models)."""
        inf = self.state.scenario.inference
        if inf.images_per_s:
            traffic = f"{inf.images_per_s:,.6g} images/s"
        elif inf.video_streams:
            traffic = f"{inf.video_streams:,} video streams of {inf.video_fps or 0:g} frames/s"
        else:
            traffic = "none: the fleet is the cluster's GPUs"
        acc = self.state.design.hardware.accelerator
        name = acc.get("name") or est.accelerator
        if est.images_per_s_per_gpu is None:
            per_gpu = f"none: {est.model} cannot run at {est.precision} on {name}; see the findings"
        else:
            per_gpu = (f"{est.images_per_s_per_gpu:,.0f} images/s at batch {est.batch_size:,}, "
                       f"{_fmt(est.latency_s, ',.1f', 1000, ' ms')} per batch")
        self.summary.value = kv_html([
            ("Model", f"{est.model} (a vision model: images per second, not tokens; pick a language model above "
                      "to size a token fleet)"),
            ("Traffic target", traffic),
            ("Per GPU", per_gpu),
            ("Fleet", f"{plural(est.gpus, 'GPU')}, {plural(est.nodes, 'node')}, "
                      f"{plural(est.racks, 'rack') if est.racks is not None else '– racks'}, "
                      f"{_fmt(est.it_power_kw, ',.3f', 1e-3, ' MW IT')}"),
        ])
        show_findings(self.findings, est.findings)
        self.sweep_table.value = self.compare_table.value = ""
        for chart in (self.curve, self.memory, self.compare):  # nothing of a token model to draw
            set_shown(chart, False)

    def _comparison_key(self) -> tuple:
        """What the comparison reads of the scenario: the sections the Design's serving stage and its
        calibration read (the comparison is that estimate on other accelerators, without the facility)."""
        s = self.state.scenario
        return tuple(scenario_input(s, name) for name in (*STAGES["serving"].sections, *STAGES["calibration"].sections)
                     if name != "catalog")


def build(state: AppState) -> widgets.Widget:
    return InferencePanel(state).widget
