"""Inference tab: model, precision, GPU, TP, traffic and SLOs -> fleet size, curves, comparison."""

from __future__ import annotations

import ipywidgets as widgets

from gpucluster_lib.charts.inference import (
    accelerator_comparison,
    memory_breakdown,
    throughput_latency,
)
from gpucluster_lib.errors import ScenarioError
from gpucluster_lib.inference.compare import compare_accelerators, system_for
from gpucluster_lib.inference.precision import WEIGHT_BYTES, supported_precisions
from gpucluster_lib.ui.common import (
    AppState,
    chart_widget,
    guarded,
    html_table,
    kv_html,
    message_area,
    section,
    show_findings,
    table_widget,
)
from gpucluster_lib.units import GB
from gpucluster_lib.workloads.transformer import preset_ids
from gpucluster_lib.workloads.vision import estimate_inference, load_vision_presets

TITLE = "Inference"
ORDER = 50

SWEEP_HEADERS = {"batch": "batch", "ttft_s": "TTFT [s]", "tpot_s": "TPOT [s]",
                 "tokens_per_s_per_replica": "tokens/s per replica", "tokens_per_s_per_gpu": "tokens/s per GPU",
                 "meets_slo": "meets SLO", "kv_cache_bytes_per_gpu": "KV cache per GPU [B]"}


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
        self.rps = widgets.BoundedFloatText(value=inf.requests_per_s or 10.0, min=0.01, max=1e6, step=1,
                                            description="Requests/s")
        self.input_tokens = widgets.BoundedIntText(value=inf.input_tokens, min=1, max=1_000_000,
                                                   description="Input tok")
        self.output_tokens = widgets.BoundedIntText(value=inf.output_tokens, min=1, max=1_000_000,
                                                    description="Output tok")
        self.ttft = widgets.BoundedFloatText(value=inf.ttft_slo_s, min=0.001, max=1000, step=0.5,
                                             description="TTFT SLO s")
        self.tpot = widgets.BoundedFloatText(value=inf.tpot_slo_s * 1000, min=1, max=100_000, step=10,
                                             description="TPOT SLO ms")
        self.arrival = widgets.Dropdown(options=[("saturated (offline)", "offline"), ("Poisson, p99 SLOs", "poisson")],
                                        value=inf.arrival, description="Arrivals")
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
        self._sync_from_scenario()
        est = self._serving()
        self.curve = chart_widget(throughput_latency(est.sweep_frame(), est.tpot_slo_s, est.batch))
        self.memory = chart_widget(memory_breakdown(est.memory_per_gpu_bytes))
        self.compare = chart_widget(accelerator_comparison(compare_accelerators(self.state.scenario,
                                                                                self.state.catalog)))
        for jc in (self.curve, self.memory, self.compare):  # SVG: text in the DOM (browser tests, copy)
            jc.embed_options = {**jc.embed_options, "renderer": "svg"}
        self.refresh = guarded(self.msg)(self._refresh)
        self.apply = guarded(self.msg)(self._apply)
        for w in (self.model, self.precision, self.accelerator, self.tp, self.rps, self.input_tokens,
                  self.output_tokens, self.ttft, self.tpot, self.arrival):
            w.observe(lambda _ch: self.apply(), names="value")
        state.observe(lambda _ch: self._on_scenario(), names="scenario")
        self._busy = False
        inputs = widgets.HBox([
            widgets.VBox([self.model, self.precision, self.accelerator, self.tp]),
            widgets.VBox([self.rps, self.input_tokens, self.output_tokens, self.ttft, self.tpot, self.arrival]),
        ])
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
        self._render(est)
        self.vision()

    def _serving(self):
        est = self.state.design.serving
        if est is None:
            raise ScenarioError("model.preset", "the scenario has no model: pick one above")
        return est

    # ---------------------------------------------------------------- state <-> widgets
    def _sync_from_scenario(self) -> None:
        s = self.state.scenario
        hw = self.state.design.hardware
        self._busy = True
        try:
            if s.model.preset in self.model.options:
                self.model.value = s.model.preset
            if hw.accelerator_id in self.accelerators:
                self.accelerator.value = hw.accelerator_id
            inf = s.inference
            self.precision.value = inf.precision
            self.tp.value = inf.tensor_parallel or 0
            self.input_tokens.value = inf.input_tokens
            self.output_tokens.value = inf.output_tokens
            self.ttft.value = inf.ttft_slo_s
            self.tpot.value = inf.tpot_slo_s * 1000
            self.arrival.value = inf.arrival
            if inf.requests_per_s:
                self.rps.value = inf.requests_per_s
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
            "inference__requests_per_s": float(self.rps.value), "inference__tokens_per_s": None,
            "inference__input_tokens": int(self.input_tokens.value),
            "inference__output_tokens": int(self.output_tokens.value),
            "inference__ttft_slo_s": float(self.ttft.value), "inference__tpot_slo_s": float(self.tpot.value) / 1000,
            "inference__arrival": self.arrival.value,
        }
        if self.accelerator.value != self.state.design.hardware.accelerator_id:
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
        ok = "✔ meets" if est.meets_slo else "✖ does not meet"
        self.summary.value = kv_html([
            ("Fleet", f"{est.replicas} replicas x TP {est.tensor_parallel} = {est.gpus} GPUs, {est.nodes} nodes, "
                      f"{_fmt(est.racks, 'd')} racks, {_fmt(est.it_power_kw, ',.3f', 1e-3, ' MW IT')}"),
            ("Per GPU", f"{_fmt(est.tokens_per_s_per_gpu, ',.0f')} output tokens/s at batch {est.batch} "
                        f"(max {est.max_batch} fits)"),
            ("Latency", f"TTFT {_fmt(est.ttft_s, '.3f', 1, ' s')}, TPOT {_fmt(est.tpot_s, '.1f', 1000, ' ms')}: "
                        f"{ok} the SLO" + _load_text(getattr(est, "load", None))),
            ("Memory", f"weights {est.weights_bytes_per_gpu / GB:.1f} GB/GPU; KV cache "
                       f"{est.kv_cache_bytes_per_token:,.0f} bytes/token ({est.kv_cache_precision})"),
            ("Efficiency", f"{_fmt(est.tokens_per_s_per_mw, ',.0f')} tokens/s per MW IT; "
                           f"{_fmt(est.tokens_per_s_per_rack, ',.0f')} per rack; "
                           f"{_fmt(est.tokens_per_s_per_usd, ',.0f', 1e6)} per $1M CapEx"),
        ])
        show_findings(self.findings, est.findings)
        sweep = est.sweep_frame()
        self.sweep_table.value = html_table(sweep, headers=SWEEP_HEADERS,
                                            highlight=lambda r: r["batch"] == est.batch) if len(sweep) else ""
        if len(sweep):
            self.curve.chart = throughput_latency(sweep, est.tpot_slo_s, est.batch)
        self.memory.chart = memory_breakdown(est.memory_per_gpu_bytes)
        if hasattr(self, "vision_out"):
            self.vision()
        comparison = compare_accelerators(self.state.scenario, self.state.catalog)
        self.compare_table.value = html_table(comparison)
        if hasattr(self, "compare"):
            self.compare.chart = accelerator_comparison(comparison)


def _load_text(load) -> str:
    """The queue at the max Poisson rate, for the Latency line (empty for saturated batches)."""
    at = (load or {}).get("at_max_rate")
    if not at:
        return ""
    pct = f"{load['percentile']:g}th percentile"
    return (f" ({pct}); Poisson arrivals up to {load['max_rate_per_replica_per_s']:,.2f} requests/s per replica, "
            f"median TTFT {at['ttft_p50_s']:.3f} s and TPOT {at['tpot_p50_s'] * 1000:.1f} ms there")


def build(state: AppState) -> widgets.Widget:
    return InferencePanel(state).widget
