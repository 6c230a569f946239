"""Training-time panel: model, cluster and plan in; step time, memory, plans and scaling out."""

from __future__ import annotations

import dataclasses
import html
from typing import Any

import altair as alt
import ipywidgets as widgets
import pandas as pd

from gpucluster_lib.charts.training import (
    memory_spec,
    scaling_spec,
    time_breakdown_spec,
    top_plans_frame,
)
from gpucluster_lib.errors import GpuClusterError, ScenarioError
from gpucluster_lib.training import min_gpus_for_deadline, scaling
from gpucluster_lib.training.efficiency import attention_kernels, generation_of
from gpucluster_lib.training.framework import (
    cross_entropy_bytes,
    cross_entropy_losses,
    fp8_casts,
    framework,
    framework_ids,
)
from gpucluster_lib.training.plans import interleavings
from gpucluster_lib.ui.common import (
    AppState,
    chart_widget,
    guarded,
    html_table,
    kv_html,
    message_area,
    section,
    show_findings,
    when_shown,
)
from gpucluster_lib.units import GIB
from gpucluster_lib.workloads.transformer import load_presets, preset_ids

TITLE = "Training"
ORDER = 30

RECOMPUTE = ["none", "selective", "full"]
PRECISIONS = ["bf16", "fp16", "fp8"]
#: Tensor-parallel communication overlap: the framework's default, or on / off (Megatron --tp-comm-overlap).
TP_OVERLAP = [("Framework default", "default"), ("On (needs sequence parallelism)", "on"), ("Off", "off")]
#: The value each "framework default / on / off" dropdown writes (the scenario's None / True / False), and
#: back: the choice that shows a scenario's value.
TRISTATE = {"default": None, "on": True, "off": False}
TRISTATE_CHOICE = {v: k for k, v in TRISTATE.items()}
#: The parallelism fields the tab's plan widgets write (the rest of the scenario's parallelism is kept).
PLAN_FIELDS = ("tensor", "pipeline", "virtual_stages", "context", "micro_batch_size", "recompute", "zero_stage")
#: The stage layout fields, which hold for one model and one stage count.
LAYOUT_FIELDS = ("pipeline_layers", "first_stage_layers", "last_stage_layers")
#: Where full activation checkpointing's rerun of a layer ends: the framework's default, stop once every
#: tensor the backward needs is back (PyTorch 2.1's non-reentrant checkpoint), or rerun the whole layer.
EARLY_STOP = [("Framework default (on for FSDP and TorchTitan)", "default"),
              ("On: stop once the saved tensors are back (PyTorch 2.1+)", "on"),
              ("Off: rerun the whole layer", "off")]
#: The fused attention kernel: the framework's for the GPU generation, or one named (data/efficiency.yaml).
KERNEL_DEFAULT = "default"
#: FP8 training's scaling recipe (training.fp8_recipe; data/training_frameworks.yaml fp8_recipes): the
#: framework's, or one named. MXFP8 is offered on the GPU generations the engine allows it on (Blackwell).
FP8_RECIPE = [("Framework default (current scaling for TorchTitan, delayed for the others)", "default"),
              ("Delayed scaling (scales from the amax history)", "delayed"),
              ("Current scaling (an amax pass before each cast)", "current"),
              ("MXFP8 block scaling (Blackwell only)", "mxfp8")]
#: FP8 primary weights (training.fp8_params): the framework's, or on / off.
FP8_PARAMS = [("Framework default (on for NeMo)", "default"),
              ("On: the weights themselves in FP8, gathered in one byte", "on"),
              ("Off: 16-bit weights, cast to FP8 for the GEMMs", "off")]
#: The interleaved schedule's pipeline-transfer overlap (parallelism.overlap_p2p_comm, Megatron-Core
#: overlap_p2p_comm): the framework's default, or on / off.
P2P_OVERLAP = [("Framework default (on for NeMo)", "default"),
               ("On: steady-state sends and receives behind the other direction's chunk", "on"),
               ("Off: every transfer waited for", "off")]
#: Deferring the output layer's weight-gradient GEMMs to the pipeline flush (training.defer_output_wgrad and
#: training.wgrad_deferral_limit; Megatron-Core defer_embedding_wgrad_compute / wgrad_deferral_limit): the
#: framework's default (off), off, or on for all or the first 22 / 50 micro-batches (NeMo's recipes' limits).
WGRAD_DEFERRAL = [("Framework default (off)", "default"), ("Off", "off"),
                  ("On, every micro-batch", "0"), ("On, the first 22 micro-batches (NeMo's 70B recipes)", "22"),
                  ("On, the first 50 micro-batches (NeMo's 175B and 405B recipes)", "50")]
#: Each choice's (training.defer_output_wgrad, training.wgrad_deferral_limit).
WGRAD_DEFERRAL_VALUE = {"default": (None, None), "off": (False, None), "0": (True, 0), "22": (True, 22),
                        "50": (True, 50)}


class TrainingPanel:
    """Widgets bound to ``state.scenario``; every change re-estimates (about 2 ms manual, 30-80 ms auto)."""

    def __init__(self, state: AppState):
        self.state = state
        self.msg = message_area()
        self.findings = widgets.HTML()
        wide = {"description_width": "120px"}
        presets = load_presets()
        tids = preset_ids("transformer")
        self.preset = widgets.Dropdown(options=[(f"{presets[p]['name']} ({p})", p) for p in tids],
                                       description="Model", style=wide, layout=widgets.Layout(width="360px"))
        accs = state.catalog.tables["accelerators"]
        acc_ids = [r for r, bf in zip(accs["id"], accs["bf16_tflops"], strict=False) if bf == bf and bf]
        self.accelerator = widgets.Dropdown(options=acc_ids, description="Accelerator", style=wide)
        self.nodes = widgets.BoundedIntText(min=1, max=100_000, description="Nodes", style=wide)
        self.precision = widgets.Dropdown(options=PRECISIONS, description="Precision", style=wide)
        self.tokens_b = widgets.BoundedFloatText(min=0, max=1e6, step=100, description="Tokens [B]", style=wide,
                                                 tooltip="training token budget in billions; 0 = none")
        self.auto = widgets.ToggleButtons(options=[("Manual plan", False), ("Search (auto)", True)],
                                          description="Plan", style=wide)
        self.tp = widgets.BoundedIntText(min=1, max=1024, description="Tensor (TP)", style=wide)
        self.pp = widgets.BoundedIntText(min=1, max=1024, description="Pipeline (PP)", style=wide)
        self.vp = widgets.BoundedIntText(min=1, max=64, description="Virtual stages", style=wide)
        self.cp = widgets.BoundedIntText(min=1, max=64, description="Context (CP)", style=wide)
        self.mb = widgets.BoundedIntText(min=1, max=1024, description="Micro-batch", style=wide)
        self.gbs = widgets.BoundedIntText(min=1, max=10_000_000, description="Global batch", style=wide)
        self.recompute = widgets.Dropdown(options=RECOMPUTE, description="Recompute", style=wide)
        self.zero = widgets.Dropdown(options=[0, 1, 2, 3], description="ZeRO stage", style=wide)
        self.flash = widgets.Checkbox(description="Fused (flash) attention", indent=False)
        self.kernel = widgets.Dropdown(options=[("Framework default (per GPU generation)", KERNEL_DEFAULT)]
                                       + [(name, k) for k, name in attention_kernels().items()],
                                       description="Attention kernel", style=wide,
                                       layout=widgets.Layout(width="360px"),
                                       tooltip="the fused attention kernel and its speed (read with fused attention)")
        self.framework = widgets.Dropdown(options=[(framework(f).name, f) for f in framework_ids()],
                                          description="Framework", style=wide, layout=widgets.Layout(width="360px"),
                                          tooltip="training software: pipeline, overlap and gradient-reduction terms")
        self.tp_overlap = widgets.Dropdown(options=TP_OVERLAP, description="TP comm. overlap", style=wide,
                                           tooltip="tensor-parallel all-gathers and reduce-scatters pipelined with "
                                                   "the matrix multiplications next to them")
        self.early_stop = widgets.Dropdown(options=EARLY_STOP, description="Checkpoint stop", style=wide,
                                           layout=widgets.Layout(width="520px"),
                                           tooltip="full activation checkpointing: whether the rerun of a layer "
                                                   "stops once every tensor its backward needs is back, leaving "
                                                   "out the feed-forward output projection (read with full "
                                                   "recomputation)")
        self.fp8_recipe = widgets.Dropdown(options=FP8_RECIPE, description="FP8 recipe", style=wide,
                                           layout=widgets.Layout(width="520px"),
                                           tooltip="how the tensors are scaled when cast to FP8, and the cast "
                                                   "traffic that costs (read with precision fp8)")
        self.fp8_params = widgets.Dropdown(options=FP8_PARAMS, description="FP8 weights", style=wide,
                                           layout=widgets.Layout(width="520px"),
                                           tooltip="FP8 primary weights (Megatron --fp8-param-gather, NeMo "
                                                   "fp8_params): one-byte weights in memory and in the "
                                                   "data-parallel gathers (read with precision fp8)")
        self.p2p_overlap = widgets.Dropdown(options=P2P_OVERLAP, description="PP transfers", style=wide,
                                            layout=widgets.Layout(width="520px"),
                                            tooltip="the interleaved pipeline schedule's sends and receives run "
                                                    "behind the other direction's chunk (Megatron-Core "
                                                    "overlap_p2p_comm; read with virtual stages)")
        self.wgrad_deferral = widgets.Dropdown(options=WGRAD_DEFERRAL, description="Output wgrad", style=wide,
                                               layout=widgets.Layout(width="520px"),
                                               tooltip="the last pipeline stage defers the output layer's "
                                                       "weight-gradient GEMMs to the pipeline flush (Megatron-Core "
                                                       "defer_embedding_wgrad_compute; read with pipeline "
                                                       "parallelism)")
        self._deferral_values = dict(WGRAD_DEFERRAL_VALUE)  # this panel's choices (a loaded limit adds one)
        self.loss = widgets.Dropdown(options=[("Framework default", "default")]
                                     + [(f"{name}: {cross_entropy_bytes(k):g} bytes a logit", k)
                                        for k, name in cross_entropy_losses().items()],
                                     description="Cross-entropy", style=wide, layout=widgets.Layout(width="520px"),
                                     tooltip="the loss implementation over the vocabulary and its memory traffic "
                                             "per logit, counted from its kernels")
        self.summary = widgets.HTML()
        self.plans = widgets.HTML(layout=widgets.Layout(max_height="360px", overflow="auto"))
        self.deadline = widgets.BoundedFloatText(min=0, max=100_000, step=1, description="Deadline [days]",
                                                 style=wide, tooltip="0 = none")
        self.deadline_btn = widgets.Button(description="Smallest cluster", icon="search",
                                           tooltip="fewest nodes of this accelerator whose best plan meets the deadline")
        self.deadline_out = widgets.HTML()
        self.scale_btn = widgets.Button(description="Compute scaling", icon="line-chart",
                                        tooltip="search the best plan at 1/4x to 4x the nodes (about a second)")
        self.est = None
        self.est_before = None
        #: the parallelism keys a written plan took from the search (freed when the search is switched on again)
        self._from_search: set[str] = set()
        self._loading = False
        #: (the estimate or plan search whose table is drawn, its HTML)
        self._plans_html: tuple[Any, str] = (object(), "")
        # empty until the first estimate: a plan that does not work must not break the tab
        self.time_chart = chart_widget(alt.Chart(pd.DataFrame({"seconds": []})).mark_bar())
        self.mem_chart = chart_widget(alt.Chart(pd.DataFrame({"gib": []})).mark_bar())
        self.scale_chart = chart_widget(alt.Chart(pd.DataFrame({"gpus": []})).mark_line())
        self.scale_chart.layout.display = "none"  # shown once computed for the current design
        #: what a failed estimate empties: no number of an earlier plan stays beside the error
        self.outputs = [self.summary, self.findings, self.plans, self.time_chart, self.mem_chart]

        self.refresh = guarded(self.msg, clears=self.outputs)(self._refresh)
        self.apply = guarded(self.msg, clears=self.outputs)(self._apply)
        self.load = guarded(self.msg, clears=self.outputs)(self._load)
        self.plan_widgets = [self.tp, self.pp, self.vp, self.cp, self.mb, self.recompute, self.zero]
        for w in (self.preset, self.accelerator, self.nodes, self.precision, self.tokens_b, self.auto, self.gbs,
                  self.flash, self.kernel, self.framework, self.tp_overlap, self.early_stop, self.fp8_recipe,
                  self.fp8_params, self.p2p_overlap, self.wgrad_deferral, self.loss, *self.plan_widgets):
            w.observe(lambda _ch: self.apply(), names="value")
        self.scale_btn.on_click(guarded(self.msg)(self._scaling))
        self.deadline_btn.on_click(guarded(self.msg)(self._deadline))
        redraw = when_shown(state, TITLE, lambda: self.load())
        state.observe(lambda _ch: None if self._loading else redraw(), names=["scenario", "catalog"])

        inputs = widgets.VBox([
            self.preset, self.accelerator, self.nodes, self.precision, self.fp8_recipe, self.fp8_params, self.tokens_b,
            widgets.HBox([self.deadline, self.deadline_btn]), self.deadline_out, self.flash, self.kernel,
            self.framework,
            self.tp_overlap, self.p2p_overlap, self.wgrad_deferral, self.loss, self.early_stop, self.auto,
            widgets.HBox([widgets.VBox([self.tp, self.pp, self.vp, self.cp]),
                          widgets.VBox([self.mb, self.gbs, self.recompute, self.zero])]),
        ])
        self.widget = widgets.VBox([
            widgets.HTML("<p>How long does this model take to train on this cluster, with which parallel plan, "
                         "and does it fit in memory? The efficiencies behind the estimate come from the workbook's "
                         "efficiency table, each with its source; the notes beside the results say how far the "
                         "estimate has been from published training runs on this GPU (the documentation's "
                         "validation page has every run).</p>"),
            widgets.HBox([inputs, widgets.VBox([self.summary, self.msg, self.findings],
                                               layout=widgets.Layout(width="50%"))]),
            section("Step-time breakdown", self.time_chart),
            section("Memory per GPU (the pipeline stage that needs the most)", self.mem_chart),
            section("Top plans (plan search)", self.plans),
            section("Scaling: time to train and MFU against GPU count", self.scale_btn, self.scale_chart),
        ])
        self.load()

    # -------------------------------------------------------------- state <-> widgets
    @staticmethod
    def _estimate(design):
        est = design.training
        if est is None:
            raise ScenarioError("model.preset", "the scenario has no model: pick one above")
        return est

    def _load(self) -> None:
        """Copy the scenario into the widgets (without a re-estimate per widget), then show its design.

        The inputs come from the scenario itself, so they are there even when its plan does not
        work (the estimate below then shows why); a searched plan fills in the fields it chose.
        """
        s = self.state.scenario
        self._loading = True
        try:
            if s.model.preset in [o[1] for o in self.preset.options]:
                self.preset.value = s.model.preset
            try:
                hw = self.state.design.hardware
            except GpuClusterError:
                hw = None
            acc = hw.accelerator_id if hw is not None else s.hardware.accelerator
            if acc in self.accelerator.options:
                self.accelerator.value = acc
            self.nodes.value = hw.nodes if hw is not None else (s.hardware.nodes or 1)
            self.precision.value = s.training.precision if s.training.precision in PRECISIONS else "bf16"
            self.tokens_b.value = (s.training.tokens or 0) / 1e9
            self.deadline.value = s.training.deadline_days or 0
            self.flash.value = s.training.flash_attention
            self.kernel.value = s.training.attention_kernel or KERNEL_DEFAULT
            self.kernel.disabled = not s.training.flash_attention
            self.framework.value = s.training.framework
            self.auto.value = bool(s.parallelism.auto)
            p = s.parallelism
            self.tp_overlap.value = TRISTATE_CHOICE[p.tp_comm_overlap]
            self.early_stop.value = TRISTATE_CHOICE[s.training.checkpoint_early_stop]
            self._fp8_recipe_options(acc or self.accelerator.value, s.training.fp8_recipe or "default")
            self.fp8_params.value = TRISTATE_CHOICE[s.training.fp8_params]
            self.p2p_overlap.value = TRISTATE_CHOICE[p.overlap_p2p_comm]
            self.wgrad_deferral.value = self._deferral_choice(s.training.defer_output_wgrad,
                                                              s.training.wgrad_deferral_limit)
            self.loss.value = s.training.cross_entropy_loss or "default"
            for w, v in ((self.tp, p.tensor), (self.pp, p.pipeline), (self.vp, p.virtual_stages),
                         (self.cp, p.context), (self.mb, p.micro_batch_size), (self.gbs, p.global_batch_size),
                         (self.recompute, p.recompute), (self.zero, p.zero_stage)):
                if v is not None:
                    w.value = v
            for w in self.plan_widgets:
                w.disabled = bool(p.auto)
            self._enable_early_stop()
            self._enable_fp8()
        finally:
            self._loading = False
        self._refresh()
        self._show_plan()

    def _show_plan(self) -> None:
        """Put the plan of the estimate into the plan fields after every change: the one the automatic search
        chose (greyed fields), or the written plan with the values the scenario leaves to their defaults."""
        if self.est is None:
            return
        self._loading = True
        try:
            q = self.est.plan
            self.tp.value, self.pp.value, self.vp.value, self.cp.value = (q.tensor, q.pipeline,
                                                                          q.virtual_stages, q.context)
            self.mb.value, self.gbs.value = q.micro_batch_size, q.global_batch_size
            self.recompute.value, self.zero.value = q.recompute, q.zero_stage
        finally:
            self._loading = False

    def _parallelism(self, auto: bool) -> dict:
        """The scenario's ``parallelism`` with the tab's plan fields written in. The settings the tab has no field
        for (a stage layout, the overlap switches, the distributed optimizer, expert parallelism, ...) are kept;
        data parallelism follows the node count; sequence parallelism off gives way to its default (on) when TP
        overlap, which needs it, is switched on.

        Switching the automatic search off starts from the plan it chose (its expert parallelism, sequence
        parallelism, distributed optimizer, TP overlap and stage layout too, with the embedding and loss counted as
        stage slots where its interleaving needs them); switching it back on frees
        those choices again, and the tab's plan fields. A stage layout goes when the pipeline field changes the
        stage count or the model changes."""
        cur = self.state.scenario.parallelism
        par = {k: v for k, v in dataclasses.asdict(cur).items() if v is not None and k not in ("auto", "data")}
        if self.preset.value != self.state.scenario.model.preset:  # another layer count: the old layout goes
            for k in LAYOUT_FIELDS:
                par.pop(k, None)
        if self.tp_overlap.value == "on" and par.get("sequence_parallel") is False:
            par.pop("sequence_parallel")
        if auto:
            if not cur.auto:  # from a written plan: the search chooses again
                for k in (*PLAN_FIELDS, *self._from_search):
                    par.pop(k, None)
                if "tp_comm_overlap" in self._from_search:
                    self._set_quietly(self.tp_overlap, "default")
                    par.pop("tp_comm_overlap", None)
                self._from_search = set()
            par.update(auto=True, global_batch_size=int(self.gbs.value))
            return par
        searched = self.est_before.plan if (self.est_before is not None and self.est_before.searched) else None
        if searched is not None and cur.auto:  # the search's choice becomes the written plan
            copied: dict = {"expert": searched.expert, "sequence_parallel": searched.sequence_parallel,
                            "distributed_optimizer": searched.distributed_optimizer,
                            "tp_comm_overlap": searched.tp_comm_overlap}
            if searched.pipeline_layers is not None:
                layers, vp = tuple(searched.pipeline_layers), searched.virtual_stages
                if vp > 1 and vp not in interleavings(layers, False, False) and vp in interleavings(layers, True, True):
                    # the search's split that counts the embedding and the loss as slots: written as those two
                    # flags (which make that split), since given stage counts leave the flags unread
                    copied["embedding_in_pipeline_split"] = copied["loss_in_pipeline_split"] = True
                else:
                    copied["pipeline_layers"] = list(layers)
            self._from_search = {k for k, v in copied.items() if par.get(k) != v}
            par.update(copied)
            if self.tp_overlap.value == "default":  # shown, so that the next edit writes it again
                self._set_quietly(self.tp_overlap, TRISTATE_CHOICE[searched.tp_comm_overlap])
        par.update(tensor=int(self.tp.value), pipeline=int(self.pp.value), virtual_stages=int(self.vp.value),
                   context=int(self.cp.value), micro_batch_size=int(self.mb.value),
                   global_batch_size=int(self.gbs.value), recompute=self.recompute.value,
                   zero_stage=int(self.zero.value))
        if par.get("pipeline_layers") is not None and len(par["pipeline_layers"]) != par["pipeline"]:
            par.pop("pipeline_layers")
        if cur.pipeline not in (None, par["pipeline"]):  # a new stage count: the old first / last stage counts go
            par.pop("first_stage_layers", None)
            par.pop("last_stage_layers", None)
        return par

    def _set_quietly(self, widget, value) -> None:
        """Set a widget without writing the scenario (its observer runs :meth:`_apply`)."""
        loading, self._loading = self._loading, True
        try:
            widget.value = value
        finally:
            self._loading = loading

    def _apply(self) -> None:
        """Write the widgets into the scenario (every value the user typed becomes the state's,
        even a plan that does not work: every tab then shows why), then show the new design."""
        if self._loading:
            return
        auto = bool(self.auto.value)
        for w in self.plan_widgets:
            w.disabled = auto
        self.kernel.disabled = not self.flash.value  # the kernel is read with fused attention only
        self._enable_early_stop()
        self._enable_fp8()
        recipe = self.fp8_recipe.value
        self._loading = True  # new options reset the dropdown's value: no re-entry while it is put back
        try:
            self._fp8_recipe_options(self.accelerator.value, recipe)
        finally:
            self._loading = False
        fp8 = self.precision.value == "fp8"  # a greyed FP8 control is not read: the scenario does not hold it
        changes = {
            "model": {"preset": self.preset.value},
            "training__precision": self.precision.value,
            "training__tokens": self.tokens_b.value * 1e9 if self.tokens_b.value else None,
            "training__flash_attention": bool(self.flash.value),
            "training__attention_kernel": None if self.kernel.value == KERNEL_DEFAULT else self.kernel.value,
            "training__framework": self.framework.value,
            "training__checkpoint_early_stop": TRISTATE[self.early_stop.value],
            "training__fp8_recipe": None if not fp8 or recipe == "default" else recipe,
            "training__fp8_params": TRISTATE[self.fp8_params.value] if fp8 else None,
            "training__defer_output_wgrad": self._deferral_values[self.wgrad_deferral.value][0],
            "training__wgrad_deferral_limit": self._deferral_values[self.wgrad_deferral.value][1],
            "training__cross_entropy_loss": None if self.loss.value == "default" else self.loss.value,
        }
        if self.accelerator.value != self.state.accelerator_id():
            changes["hardware__accelerator"] = self.accelerator.value
            changes["hardware__server"] = None
        changes["hardware__nodes"] = int(self.nodes.value)
        changes["hardware__gpus"] = None
        self.est_before = self.est
        changes["parallelism"] = self._parallelism(auto)
        changes["parallelism"]["tp_comm_overlap"] = TRISTATE[self.tp_overlap.value]
        changes["parallelism"]["overlap_p2p_comm"] = TRISTATE[self.p2p_overlap.value]
        self.est = None
        self._loading = True  # the state's observer must not copy the scenario back into these widgets
        try:
            self.state.update(**changes)  # a value the scenario refuses raises here (shown, outputs emptied)
        finally:
            self._loading = False
        self._refresh()
        self._show_plan()

    def _deferral_choice(self, defer: bool | None, limit: int | None) -> str:
        """The deferral dropdown's choice for a scenario's (defer_output_wgrad, wgrad_deferral_limit); a limit
        the dropdown does not offer is added as its own choice, so a loaded scenario shows what it holds."""
        if not defer:
            return {None: "default", False: "off"}[defer]
        key = str(limit or 0)
        if key not in self._deferral_values:
            self._deferral_values[key] = (True, int(key))
            self.wgrad_deferral.options = (*self.wgrad_deferral.options,
                                           (f"On, the first {int(key):,} micro-batches", key))
        return key

    def _enable_early_stop(self) -> None:
        """The early stop is read with full recomputation only: a manual plan without it greys it out."""
        self.early_stop.disabled = not self.auto.value and self.recompute.value != "full"

    def _enable_fp8(self) -> None:
        """The FP8 recipe and weights are read with precision fp8 only: other precisions grey them out."""
        self.fp8_recipe.disabled = self.fp8_params.disabled = self.precision.value != "fp8"

    def _recipe_allowed(self, accelerator: str, recipe: str) -> bool:
        """Whether the engine runs the FP8 recipe on this accelerator's GPU generation with the scenario's
        Transformer Engine release (its own checks, fp8_casts: MXFP8 on Blackwell from 2.0, current scaling from
        2.2)."""
        if not self.state.catalog.has("accelerators", accelerator):
            return recipe != "mxfp8"
        try:
            fw = framework(self.framework.value)
            gen = generation_of(self.state.catalog.accelerator(accelerator))
            release = self.state.scenario.training.transformer_engine if fw.fp8_transformer_engine else None
            fp8_casts(fw, gen, recipe, None, release)
        except GpuClusterError:
            return False
        return True

    def _fp8_recipe_options(self, accelerator: str, value: str) -> None:
        """Offer the recipes the engine runs on this GPU generation and Transformer Engine release, and keep one
        offered while it is the choice (the estimate then shows the engine's message, and the user picks another
        recipe here); ``value`` becomes the dropdown's value. New options only when they change (they reset the
        value)."""
        options = tuple(o for o in FP8_RECIPE
                        if o[1] in ("default", "delayed", value) or self._recipe_allowed(accelerator, o[1]))
        if self.fp8_recipe.options != options:
            self.fp8_recipe.options = options
        self.fp8_recipe.value = value

    def _refresh(self) -> None:
        self.est = None
        self.msg.value = ""
        self.scale_chart.layout.display = "none"  # computed for an earlier design: press the button again
        self.deadline_out.value = ""
        self.est = self._estimate(self.state.design)
        self._render()

    def _render(self) -> None:
        e = self.est
        m = e.memory_per_gpu_bytes
        memory = (f"{m['total'] / GIB:,.1f} of {e.memory_capacity_bytes / GIB:,.0f} GiB "
                  f"({'fits' if e.fits else 'does not fit'})"
                  + (f", pipeline stage {e.stages['memory_stage'] + 1}" if e.plan.pipeline > 1 else ""))
        if e.fits:
            days = "–" if e.training_days is None else f"{e.training_days:,.1f} days"
            self.summary.value = kv_html([
                ("Plan", e.plan.label() + (" (searched)" if e.searched else "")),
                ("Step time", f"{e.step_time_s:,.3f} s ({e.plan.micro_batches:,} micro-batches)"),
                ("Throughput", f"{e.tokens_per_s:,.0f} tokens/s"),
                ("Per GPU", f"{e.model_tflops_per_gpu:,.0f} model TFLOP/s · MFU {e.mfu:.1%} · HFU {e.hfu:.1%}"),
                *self._recompute_row(e),
                *self._fp8_row(e),
                ("Memory per GPU", memory),
                ("Time to train", days),
            ])
        else:  # an impossible plan has no step time, throughput or days to show
            none = "– (the plan does not fit in memory)"
            self.summary.value = kv_html([
                ("Plan", e.plan.label() + (" (searched)" if e.searched else "")),
                *self._fp8_row(e),
                ("Memory per GPU", memory),
                ("Step time", none), ("Throughput", none), ("Time to train", none),
            ])
        show_findings(self.findings, e.findings, empty="No findings: the plan is valid and fits.")
        self.time_chart.spec = time_breakdown_spec(e)
        self.mem_chart.spec = memory_spec(e)
        try:  # manual plan: the design's search; a search with no plan to offer does not hide the plan's estimate
            source = e if e.top_plans is not None else self.state.design.plans
        except ScenarioError as exc:
            self._plans_html = (exc, f"<i>{html.escape('No alternative plans: ' + str(exc))}</i>")
            self.plans.value = self._plans_html[1]
            return
        if self._plans_html[0] is not source:  # a stage result the design kept: its table is drawn already
            table = None if source is None else (e.top_plans if source is e else source.table)
            self._plans_html = (source, html_table(top_plans_frame(table, 10)) if table is not None else "")
        self.plans.value = self._plans_html[1]

    @staticmethod
    def _recompute_row(e) -> list[tuple[str, str]]:
        """The recomputation's time per step and its share of the step; with full recomputation, where
        the rerun of each layer ends (no row when nothing is rerun: no recomputation, or selective
        recomputation with fused attention, whose kernel recomputes the scores itself)."""
        t = e.time_breakdown_s["recompute"]
        if t <= 0.0:
            return []
        text = f"{t:,.3f} s per step ({t / e.step_time_s:.1%} of it)"
        early = e.assumptions.get("checkpoint_early_stop")
        if early is not None:
            text += (", stops before the feed-forward output projection" if early
                     else ", reruns the whole layer")
        return [("Recomputation", text)]

    def _fp8_row(self, e) -> list[tuple[str, str]]:
        """FP8 training: the scaling recipe in effect and whether the weights are FP8 (the framework's
        default or the scenario's choice); no row in 16 bits."""
        recipe = e.assumptions.get("fp8_recipe")
        if recipe is None:
            return []
        tr = self.state.scenario.training
        params = framework(tr.framework).fp8_params if tr.fp8_params is None else tr.fp8_params
        return [("FP8", f"{recipe}; weights {'in FP8' if params else 'in 16 bits'}")]

    def _deadline(self, _btn=None) -> None:
        days = float(self.deadline.value)
        if days <= 0:
            self.deadline_out.value = "<i>Enter a deadline in days first.</i>"
            return
        self.state.update(training__deadline_days=days)
        r = min_gpus_for_deadline(self.state.scenario, days, self.state.catalog)
        if r.get("gpus"):
            self.deadline_out.value = (f"<b>{r['gpus']:,} GPUs</b> ({r['nodes']} nodes) train in "
                                       f"{r['training_days']:.1f} days &le; {days:g}")
        else:
            best = r.get("best_gpus")
            self.deadline_out.value = ("<b>Not met</b> up to 4,096 nodes" + (
                f"; fastest found: {best:,} GPUs, {r['training_days']:.1f} days" if best else "")
                + (f": {html.escape(r['reason'])}" if r.get("reason") else ""))

    def _scaling(self, _btn=None) -> None:
        df = scaling(self.state.scenario, self.state.catalog)
        if not len(df):
            reason = df.attrs.get("reason") or "no plan fits at any of the sizes tried"
            self.msg.value = f"<i>{html.escape('No scaling curve: ' + reason)}</i>"
            return
        self.scale_chart.spec = scaling_spec(df)
        self.scale_chart.layout.display = None


def build(state: AppState) -> widgets.Widget:
    return TrainingPanel(state).widget
