"""Scenario wiring of the training-time engine: one estimate, the plan search, the inverse.

``estimate(scenario)`` resolves the model, the hardware and the efficiency set, takes the
plan from ``parallelism`` (or searches it when ``auto``), evaluates it with
:func:`gpucluster_lib.training.core.evaluate`, and returns a :class:`TrainingEstimate`
whose ``to_dict()`` is the ``gpucluster estimate --json`` contract.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from gpucluster_lib.accuracy import sentence as accuracy_sentence
from gpucluster_lib.calibration.gemm import DEFAULT_CURVES, gemm_curve
from gpucluster_lib.calibration.profile import (
    CalibrationProfile,
    profile_findings,
    scenario_profile,
)
from gpucluster_lib.catalog import Catalog
from gpucluster_lib.errors import GpuClusterError, ScenarioError, UnknownIdError, all_of, excerpt
from gpucluster_lib.findings import Finding, sort_findings
from gpucluster_lib.formatting import format_duration, plural
from gpucluster_lib.hardware.resolve import ClusterHardware, catalog_for, resolve_hardware
from gpucluster_lib.network.topology import TopologyDesign, fabric_gbps_per_gpu
from gpucluster_lib.scenario import ParallelismSpec, Scenario
from gpucluster_lib.training import flops as fl
from gpucluster_lib.training.core import (
    BREAKDOWN_KEYS,
    MEMORY_KEYS,
    MODULE_NAMES,
    PLAN_KEYS,
    Context,
    evaluate,
    layer_params,
    live_limit_to_prefetch,
    module_shares,
    pipelined_fsdp2,
    prefetched_modules,
    stage_table,
)
from gpucluster_lib.training.efficiency import (
    Efficiency,
    attention_kernel_name,
    cudnn_trains_heads,
    for_accelerator,
    generation_of,
)
from gpucluster_lib.training.framework import (
    GENERATION_WORDS,
    cross_entropy_bytes,
    fp8_recipes,
    framework_ids,
    te_requirement,
)
from gpucluster_lib.training.framework import fp8_casts as fp8_cast_terms
from gpucluster_lib.training.framework import framework as framework_terms
from gpucluster_lib.training.labels import BREAKDOWN_LABELS, MEMORY_LABELS, memory_parts
from gpucluster_lib.training.memory import StateBytes
from gpucluster_lib.training.plans import (
    Plan,
    PlanCaps,
    check_fixed_fields,
    check_fixed_values,
    framework_plan_problems,
    layout_findings,
    plan_from_codes,
    plan_space,
    resolve_plan,
)
from gpucluster_lib.training.plans import (
    describe as describe_plan,
)
from gpucluster_lib.training.search import candidates
from gpucluster_lib.training.vision import estimate_training
from gpucluster_lib.units import GB, GBPS_IN_BYTES_PER_S, GIB, SECONDS_PER_DAY, TERA
from gpucluster_lib.workloads.transformer import TransformerArch, load_presets, resolve_transformer
from gpucluster_lib.workloads.vision import is_vision_model

if TYPE_CHECKING:
    import pandas as pd

#: GEMM efficiency curve (gpucluster_lib.calibration.gemm) for each training precision.
GEMM_DTYPE = {"bf16": "bf16", "fp16": "fp16", "fp8": "fp8", "tf32": "tf32", "fp32": "tf32"}

#: Bytes per element of ``training.grad_reduce_precision`` and ``training.param_gather_precision``.
PRECISION_BYTES = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0}

#: Peak-FLOP/s column of the accelerator table for each training precision.
PRECISION_PEAK = {"bf16": "bf16_tflops", "fp16": "fp16_tflops", "fp8": "fp8_tflops",
                  "tf32": "tf32_tflops", "fp32": "fp32_tflops"}


@dataclass
class TrainingEstimate:
    """Result of :func:`estimate`. Times [s], rates [tokens/s], FLOP/s in [TFLOP/s], memory [B]."""

    model: str
    accelerator: str
    gpus: int
    params: int
    active_params: int
    step_time_s: float
    tokens_per_step: int
    tokens_per_s: float
    model_tflops_per_gpu: float
    hardware_tflops_per_gpu: float
    mfu: float
    hfu: float
    memory_per_gpu_bytes: dict[str, float]
    memory_capacity_bytes: float
    fits: bool
    time_breakdown_s: dict[str, float]
    training_days: float | None
    plan: Plan
    findings: list[Finding]
    assumptions: dict[str, Any] = field(default_factory=dict)
    searched: bool = False
    top_plans: pd.DataFrame | None = None
    #: the plans of the first rows of ``top_plans`` (the JSON's ``top_plans`` names their fields as the scenario does)
    top_plan_list: list[Plan] = field(default_factory=list)
    #: Per pipeline stage: layers, time per micro-batch [s], memory per GPU [B]; the stage
    #: that sets the pace and the one that needs the most memory (0-based).
    stages: dict[str, Any] = field(default_factory=dict)

    @property
    def bubble_fraction(self) -> float:
        return self.time_breakdown_s["bubble"] / self.step_time_s

    def to_dict(self) -> dict[str, Any]:
        out = {
            "model": self.model,
            "accelerator": self.accelerator,
            "gpus": self.gpus,
            "params": self.params,
            "active_params": self.active_params,
            "step_time_s": self.step_time_s,
            "tokens_per_step": self.tokens_per_step,
            "tokens_per_s": self.tokens_per_s,
            "model_tflops_per_gpu": self.model_tflops_per_gpu,
            "hardware_tflops_per_gpu": self.hardware_tflops_per_gpu,
            "mfu": self.mfu,
            "hfu": self.hfu,
            "memory_per_gpu_bytes": dict(self.memory_per_gpu_bytes),
            "memory_capacity_bytes": self.memory_capacity_bytes,
            "fits": self.fits,
            "time_breakdown_s": dict(self.time_breakdown_s),
            "training_days": self.training_days,
            "plan": {**self.plan.to_dict(), "auto": self.searched, "micro_batches": self.plan.micro_batches},
            "findings": [f.to_dict() for f in self.findings],
            "assumptions": self.assumptions,
            "pipeline": dict(self.stages),
        }
        if self.top_plans is not None:
            layers = sum(self.stages["layers_per_stage"]) if self.stages else None
            out["top_plans"] = [
                {**plan.to_dict(), "layers_per_stage": list(plan.stage_layers(layers)) if layers else None,
                 **{k: row[k] for k in TOP_PLAN_RESULTS if k in row}}
                for plan, row in zip(self.top_plan_list, self.top_plans.head(len(self.top_plan_list))
                                     .to_dict(orient="records"), strict=True)]
        return out


#: The results of a search-table row that the JSON's ``top_plans`` gives beside the plan.
TOP_PLAN_RESULTS = ("step_time_s", "tokens_per_s", "mfu", "memory_gib", "fits", "bubble_s", "training_days", "reason")


# --------------------------------------------------------------------------- context


def _is_vision(scenario: Scenario) -> bool:
    """A CNN/ViT workload: ``model.kind`` cnn/vit or a preset of ``data/vision_models.yaml``."""
    spec = scenario.model
    if spec.kind in ("cnn", "vit"):
        return True
    if spec.preset is None or spec.preset in load_presets():
        return False
    return is_vision_model(spec)


def peak_tflops(acc: dict[str, Any], precision: str) -> float:
    """Dense peak of the accelerator in the training precision [TFLOP/s]."""
    col = PRECISION_PEAK[precision]
    value = acc.get(col)
    if (value is None or (isinstance(value, float) and math.isnan(value))) and precision == "fp16":
        value = acc.get("bf16_tflops")
    if value is None or (isinstance(value, float) and math.isnan(value)) or value <= 0:
        have = [p for p, c in PRECISION_PEAK.items() if acc.get(c) not in (None, 0) and not
                (isinstance(acc.get(c), float) and math.isnan(acc.get(c)))]
        raise ScenarioError("training.precision", f"{acc['id']} has no dense {precision} peak in the catalogue; "
                            f"choose one of: {', '.join(have) or 'none'}")
    return float(value)


def nvlink_domain(acc: dict[str, Any], gpus_per_node: int) -> int:
    """GPUs that share the scale-up (NVLink) fabric [GPUs].

    The node by default; an ``N-GPU domain`` in the accelerator's ``scaleup_link`` (GB200
    NVL72: 72) extends it across trays; an ``NVLink bridge (2 GPUs)`` limits it to the pair.
    """
    link = str(acc.get("scaleup_link") or "")
    m = re.search(r"(\d+)-GPU domain", link)
    if m:
        return int(m[1])
    m = re.search(r"bridge \((\d+)", link)
    if m:
        return min(int(m[1]), gpus_per_node)
    return gpus_per_node


def build_context(scenario: Scenario, catalog: Catalog | None = None, *, gpus: int | None = None,
                  arch: TransformerArch | None = None, hardware: ClusterHardware | None = None,
                  network: TopologyDesign | None = None) -> tuple[Context, ClusterHardware, Efficiency]:
    """Resolve model, hardware and efficiency of a scenario into a :class:`Context`.

    ``hardware`` and ``network``: a Design's resolved hardware and network design (the fabric
    bandwidth per GPU is read from it); computed when omitted. A calibration profile selected by
    the scenario supplies the GEMM curve and the link efficiencies and latencies it measured.
    """
    cat = catalog or catalog_for(scenario)
    hw = hardware if hardware is not None else resolve_hardware(scenario, cat)
    arch = arch or resolve_transformer(scenario.model)
    acc = hw.accelerator
    tr = scenario.training
    scaleup = float(acc.get("scaleup_bandwidth_gb_per_s") or 0.0)
    nvlink_bw = max(scaleup / 2.0, 1.0) * GB  # datasheet figure is bidirectional
    nic_bw = fabric_gbps_per_gpu(scenario, hw, cat, network) * GBPS_IN_BYTES_PER_S
    # a calibration profile (``calibration: FILE``): measured link terms, GEMM level and curve; the
    # scenario's own overrides win
    profile = scenario_profile(scenario)
    overrides = calibration_terms(scenario, profile, acc, nvlink_bw, nic_bw)[0]
    overrides.update(tr.efficiency)
    if tr.gemm_efficiency is not None:
        overrides["gemm_efficiency"] = tr.gemm_efficiency
    if scenario.parallelism.dp_overlap is not None:
        overrides["dp_overlap"] = scenario.parallelism.dp_overlap
    own_values = bool(overrides)  # the user's (or a calibration profile's) values, not the catalogue's
    fw = framework_terms(tr.framework)
    # the cross-entropy traffic of the loss the run names (training.cross_entropy_loss), else of the framework's
    # (both counted from the loss code, data/training_frameworks.yaml cross_entropy_losses), unless the scenario
    # sets the bytes themselves (training.efficiency cross_entropy_bytes_per_logit)
    if tr.cross_entropy_loss is not None:
        fw = dataclasses.replace(fw, cross_entropy_loss=tr.cross_entropy_loss,
                                 cross_entropy_bytes_per_logit=cross_entropy_bytes(tr.cross_entropy_loss))
    if fw.cross_entropy_bytes_per_logit is not None and "cross_entropy_bytes_per_logit" not in overrides:
        overrides["cross_entropy_bytes_per_logit"] = fw.cross_entropy_bytes_per_logit
    # the run's fused attention kernel, else the framework's for this GPU generation; a framework that runs cuDNN's
    # kernel through Transformer Engine falls back (its attention_fallback, flash-attn) for heads cuDNN cannot train
    generation = generation_of(acc)
    kernel = tr.attention_kernel or fw.attention_kernel(generation)
    if tr.attention_kernel is None and kernel == "cudnn" and fw.attention_fallback is not None \
            and not cudnn_trains_heads(generation, arch.qk_head_dim, arch.value_head_dim):
        kernel = fw.attention_fallback
    eff = for_accelerator(acc, overrides, kernel)
    if not own_values:  # the held-out runs measured the catalogue's values, not a scenario's own (gpucluster_lib/accuracy.py)
        eff = eff.replace(accuracy=accuracy_sentence(str(acc.get("id") or ""), tr.precision) or "")
    if tr.grad_reduce_precision is not None:  # the run's own reduction precision (Composer's PURE: bf16)
        b = PRECISION_BYTES[tr.grad_reduce_precision]
        fw = dataclasses.replace(fw, grad_reduce_bytes=b, zero3_reduce_bytes=b)
    if scenario.parallelism.overlap_p2p_comm is not None and fw.p2p_overlap_path:
        # the run's interleaved-schedule p2p overlap (core.py [26]), only on a framework that has that schedule option
        fw = dataclasses.replace(fw, overlap_p2p_comm=scenario.parallelism.overlap_p2p_comm)
    if tr.checkpoint_early_stop is not None:  # the run's PyTorch checkpoint (before 2.1: the whole layer reruns)
        fw = dataclasses.replace(fw, checkpoint_early_stop=tr.checkpoint_early_stop)
    if tr.param_gather_precision is not None:  # Composer's DEFAULT before 0.14 gathers fp32 parameters
        fw = dataclasses.replace(fw, zero3_gather_bytes=PRECISION_BYTES[tr.param_gather_precision])
    if tr.zero3_max_live_parameters is not None:  # the run's DeepSpeed stage3_max_live_parameters
        fw = dataclasses.replace(fw, zero3_max_live_params=float(tr.zero3_max_live_parameters))
    par = scenario.parallelism
    # FP8 training: the cast traffic of the run's recipe (else the framework's) on this GPU generation
    te = tr.transformer_engine if fw.fp8_transformer_engine else None  # TorchTitan's float8 is torchao's
    fp8_casts = (fp8_cast_terms(fw, generation_of(acc), tr.fp8_recipe, str(acc.get("name") or acc.get("id")), te)
                 if tr.precision == "fp8" else None)
    if fw.cross_entropy_loss is not None:  # a loss kernel newer than the run's Transformer Engine is refused
        te_requirement("cross_entropy_losses", fw.cross_entropy_loss, tr.transformer_engine, "cross-entropy loss",
                       "the Triton cross-entropy kernel")
    states, fp8_inputs = memory_terms(tr, fw, fp8_casts)
    peak = peak_tflops(acc, tr.precision) * TERA
    # the 16-bit peak of the precision asked for: fp16 on V100/P100, which have no bf16 units
    peak16 = peak_tflops(acc, "fp16" if tr.precision == "fp16" else "bf16") * TERA \
        if tr.precision in ("fp8", "bf16", "fp16") else peak
    n = gpus if gpus is not None else hw.gpus
    ctx = Context(arch=arch, gpus=n, gpus_per_node=hw.gpus_per_node, nvlink_domain=hw.nvlink_domain_gpus,
                  peak_flops=peak, peak16_flops=peak16, memory_bw=float(acc["memory_bandwidth_gb_per_s"]) * GB,
                  memory_capacity=float(acc["memory_gib"]) * GIB, nvlink_bw=nvlink_bw, nic_bw=nic_bw, eff=eff,
                  flash_attention=tr.flash_attention,
                  flat_collectives=par.sharded_collectives == "flat",
                  fp8=tr.precision == "fp8", fp8_casts=fp8_casts, framework=fw,
                  overlap_grad_reduce=fw.overlap_grad_reduce if par.overlap_grad_reduce is None else par.overlap_grad_reduce,
                  overlap_param_gather=(fw.overlap_param_gather if par.overlap_param_gather is None
                                        else par.overlap_param_gather),
                  gemm=gemm_curve(GEMM_DTYPE.get(tr.precision, "bf16"), profile),
                  states=states, fp8_saved_inputs=fp8_inputs,
                  distribute_saved_activations=tr.distribute_saved_activations,
                  fp8_params=fp8_weights(tr, fw),
                  # ZeRO-3 gathers FP8 weights only where the framework's ZeRO-3 can (NeMo's Megatron-FSDP: not)
                  zero3_fp8_params=fp8_weights(tr, fw) and fw.zero3_fp8_param_gather,
                  defer_output_wgrad=fw.output_wgrad_deferral and (fw.defer_output_wgrad if tr.defer_output_wgrad is None
                                                                   else bool(tr.defer_output_wgrad)),
                  wgrad_deferral_limit=(fw.wgrad_deferral_limit if tr.wgrad_deferral_limit is None
                                        else int(tr.wgrad_deferral_limit)),
                  pipeline_layers=(tuple(int(x) for x in par.pipeline_layers) if par.pipeline_layers is not None
                                   else None))
    return ctx, hw, eff


#: Words for the engine terms a calibration profile can set (the result's assumptions, the report).
CALIBRATION_TERM_NAMES = {
    "gemm_efficiency": "matrix-multiply efficiency", "fp8_gemm_factor": "FP8 matrix-multiply rate",
    "gemm_curve": "matrix-multiply efficiency by shape", "nvlink_efficiency": "NVLink bandwidth efficiency",
    "alpha_nvlink_s": "NVLink message latency", "network_efficiency": "network bandwidth efficiency",
    "alpha_network_s": "network message latency"}


def calibration_terms(scenario: Scenario, profile: CalibrationProfile | None, accelerator: dict[str, Any],
                      nvlink_bw: float, nic_bw: float) -> tuple[dict[str, float], list[Finding], dict[str, Any] | None]:
    """What a calibration profile sets in the training engine: ``(overrides, findings, record)``.

    ``overrides``: efficiency values by the names of :class:`~.efficiency.Efficiency` (the scenario's
    own ``training.efficiency`` and ``training.gemm_efficiency`` are applied after them, so they win);
    ``findings``: the profile's findings (an example profile, another device, a link measured above
    its nominal rate); ``record``: the profile's name, date, whether it is an example and the terms it
    set (``assumptions["calibration"]``), None without a profile. ``nvlink_bw`` and ``nic_bw``: the
    design's nominal scale-up and scale-out bandwidth per GPU per direction [B/s].

    Links: ``nvlink_efficiency = B / nvlink_bw``, ``network_efficiency = B / (ranks per host x
    nic_bw)``, capped at 1 with a warning when the measurement is above the nominal rate, and the
    per-step latencies ``alpha`` (:meth:`CalibrationProfile.efficiency_overrides`).

    GEMM level. The engine's ``gemm_efficiency`` (data/efficiency.yaml) is an end-to-end fraction of
    the dense peak, fitted against published training runs with the default GEMM curve
    (:data:`~gpucluster_lib.calibration.gemm.DEFAULT_CURVES`: OpenXLA's H100 table, BF16 large-GEMM
    level ``e_max`` 0.832) supplying the size effect. It therefore carries that curve's level: what
    it adds beyond the curve (the non-GEMM share of a step) is ``gemm_efficiency / e_max_default``.
    A profile that measured the training precision's GEMMs replaces the level, not the non-GEMM
    share, so the engine's GEMM rate is scaled by the measured level over the default's::

        gemm_efficiency = gemm_efficiency_default x e_max_profile / e_max_default

    and the size effect is the profile's curve (``shape_factor = efficiency / e_max``), so a GEMM of
    any shape runs at ``gemm_efficiency_default x efficiency_profile(m, n, k) / e_max_default``. A
    profile at the default level changes nothing; one at half the level doubles every GEMM's time.
    FP8 training: the 16-bit level (a measured BF16 curve) scales ``gemm_efficiency`` as above, and a
    measured FP8 curve replaces the FP8 rate the engine otherwise carries in ``fp8_gemm_factor`` (FP8
    over BF16): ``fp8_gemm_factor = e_max_fp8 / e_max_bf16`` with the BF16 level in force (measured,
    else the default's), so the FP8 GEMMs run at ``gemm_efficiency_default x e_max_fp8 / e_max_default``.
    The fitted efficiencies of other GPU generations (A100: 0.72) were also fitted with the H100
    curve, so they too are scaled by the measured level over 0.832. A scenario's own
    ``training.gemm_efficiency`` (or ``training.efficiency`` value) is taken as given and wins.
    """
    if profile is None:
        return {}, [], None
    tr = scenario.training
    overrides = dict(profile.efficiency_overrides(nvlink_bw, nic_bw))
    findings = profile_findings(profile, accelerator)
    words = {"nvlink": ("NVLink", "NVLink bandwidth efficiency"), "fabric": ("network", "network bandwidth efficiency")}
    for level, measured, nominal in profile.links_above_nominal(nvlink_bw, nic_bw):
        key = "nvlink_efficiency" if level == "nvlink" else "network_efficiency"
        if key in tr.efficiency:
            continue  # the scenario's own value is used
        fit = profile.links[level]
        if level == "nvlink":
            basis = f"{nvlink_bw / GB:,.1f} GB/s of NVLink per GPU and direction"
        else:
            basis = (f"{plural(fit.ranks_per_host, 'GPU')} per node x {nic_bw / GB:,.1f} GB/s, "
                     f"{nic_bw / GBPS_IN_BYTES_PER_S:,.0f} Gb/s, of network per GPU")
        findings.append(Finding(
            "calibration-link-above-nominal", "warning",
            f"the calibration profile '{profile.name}' measured {measured:,.1f} GB/s of {words[level][0]} bus bandwidth, "
            f"above this design's nominal {nominal:,.1f} GB/s ({basis}); the {words[level][1]} is capped at 100%",
            fix="measure on the design's own links (the network on 4 or more nodes, since on 2 nodes NCCL's tree and NVLS "
                "algorithms beat the ring), or select a profile measured on this hardware",
            field="calibration"))
    dtype = GEMM_DTYPE.get(tr.precision, "bf16")
    explicit = tr.efficiency
    if tr.gemm_efficiency is None and "gemm_efficiency" not in explicit:
        level = profile.gemm_level("bf16" if dtype == "fp8" else dtype)
        if level is not None:
            base = for_accelerator(accelerator)  # the generation's matrix-multiply efficiency (any kernel)
            overrides["gemm_efficiency"] = min(base.gemm_efficiency * level, 1.0)
    if dtype == "fp8" and "fp8" in profile.gemm and "fp8_gemm_factor" not in explicit:
        bf16 = profile.gemm.get("bf16") or DEFAULT_CURVES["bf16"]
        overrides["fp8_gemm_factor"] = profile.gemm["fp8"].eff_max / bf16.eff_max
    terms = sorted(k for k in overrides if k not in explicit and not (k == "gemm_efficiency"
                                                                       and tr.gemm_efficiency is not None))
    if dtype in profile.gemm:
        terms.append("gemm_curve")
    record = {"name": profile.name, "date": profile.date, "example": profile.example, "device": profile.device,
              "terms": terms}
    return overrides, findings, record


#: Bytes per parameter of the optimizer's copy of the weights (``training.master_weights``) and of each
#: of Adam's two moments (``training.optimizer_state_precision``).
MASTER_BYTES = {"fp32": 4.0, "bf16": 2.0, "remainders": 2.0, "none": 0.0}
MOMENT_BYTES = {"fp32": 4.0, "bf16": 2.0}


def fp8_weights(tr: Any, fw: Any) -> bool:
    """Whether the run keeps FP8 primary weights: FP8 training on a framework with an FP8-weight path
    (``fp8_param_gather``: Megatron-LM, NeMo, TorchTitan) and ``training.fp8_params``, default the framework's.
    DeepSpeed and Composer's FSDP gather 16-bit parameters: there the setting is ignored (a warning)."""
    return tr.precision == "fp8" and fw.fp8_param_gather and (fw.fp8_params if tr.fp8_params is None
                                                              else bool(tr.fp8_params))


def memory_terms(tr: Any, fw: Any, casts: Any = None) -> tuple[StateBytes, bool]:
    """Bytes per parameter of the model states and whether the linear layers save FP8 inputs, from
    the scenario's training section ``tr`` and the framework's terms ``fw`` (the run's reduction
    precision already in ``fw.grad_reduce_bytes``) (core.py [20, 21]).

    * Gradients: a framework that holds its gradient buffer in the reduction precision
      (``grad_buffer_in_reduce_precision``: Megatron-Core's ``grad_reduce_in_fp32`` main-gradient buffer)
      keeps ``grad_reduce_bytes`` per parameter (4 for its fp32 default), but in fp16 training 2 unless
      ``training.grad_reduce_precision`` says otherwise (Megatron-LM switches fp32 accumulation on with
      ``--bf16`` only; NeMo's ``fp16_mixed`` sets ``grad_reduce_in_fp32=False``); a framework whose sharded
      gradients take the parameters' dtype (``grad_in_param_precision``: TorchTitan's FSDP2) 4 with fp32 master
      weights, else 2; other frameworks 2.
    * Optimizer: the master copy (``training.master_weights``: fp32 4, bf16 2, Apex's remainders 2, none 0)
      and two moments (``training.optimizer_state_precision``: fp32 4 + 4, bf16 2 + 2): 12 by default.
    * In FP8 a framework running Transformer Engine (``fp8_weight_copies``) keeps an FP8 weight and its
      transpose beside every 16-bit GEMM weight of the layers unless the weights are FP8 themselves
      (``training.fp8_params``, default the framework's), when they take its place: ``casts.weight_bytes``
      per element (``casts``: the run's :class:`~.framework.Fp8Casts`; Hopper 1 + 1, Blackwell per-tensor 1,
      MXFP8 1 + 1 + 0.0625; 2 without it)."""
    fp8 = tr.precision == "fp8"
    te = fp8 and fw.fp8_weight_copies  # Transformer Engine's FP8 weights (TorchTitan keeps bf16 shards)
    fp8_bytes = casts.weight_bytes if casts is not None else 2.0
    primary = te and fp8_weights(tr, fw)
    copies = fp8_bytes if te and not primary else 0.0
    gemm_weight = fp8_bytes if primary else StateBytes.gemm_weight
    if fw.grad_buffer_in_reduce_precision:
        grad = fw.grad_reduce_bytes if (tr.grad_reduce_precision is not None or tr.precision != "fp16") else 2.0
    elif fw.grad_in_param_precision:  # FSDP2: the sharded parameters' dtype, fp32 beside fp32 master weights
        grad = 4.0 if (tr.master_weights or "fp32") == "fp32" else 2.0
    else:
        grad = 2.0
    optimizer = MASTER_BYTES[tr.master_weights or "fp32"] + 2.0 * MOMENT_BYTES[tr.optimizer_state_precision or "fp32"]
    return (StateBytes(grad=grad, optimizer=optimizer, fp8_weight_copies=copies, gemm_weight=gemm_weight),
            fp8 and fw.fp8_saved_inputs)


# --------------------------------------------------------------------------- search


@dataclass
class SearchResult:
    """Valid plans, evaluated and ranked (fitting plans first, fastest first).

    ``table`` holds the best ``limit`` plans of the ``enumerated`` ones (all when the search
    was asked for all); ``fitting`` counts every plan that fits, shown or not.
    """

    table: pd.DataFrame
    enumerated: int
    fitting_count: int = -1
    layers: int | None = None
    #: the scenario's ``parallelism.pipeline_layers``, kept as given (the table's layout codes hold only
    #: its first, last and largest middle stage)
    pipeline_layers: tuple[int, ...] | None = None

    def plan(self, row: dict[str, Any]) -> Plan:
        """The :class:`Plan` of one table row, with the given stage layout where the scenario sets one."""
        plan = plan_from_codes(row, self.layers)
        if self.pipeline_layers is not None and len(self.pipeline_layers) == plan.pipeline:
            given = self.pipeline_layers
            plan = dataclasses.replace(plan, pipeline_layers=None if len(set(given)) == 1 else given)
        return plan

    @property
    def best(self) -> Plan | None:
        fit = self.table[self.table["fits"]]
        return self.plan(fit.iloc[0].to_dict()) if len(fit) else None

    @property
    def fitting(self) -> int:
        return self.fitting_count if self.fitting_count >= 0 else int(self.table["fits"].sum())


#: Plans kept in a search table (the UI shows 10; the ranking is over all of them).
SEARCH_TABLE_ROWS = 1000


def _top(fits: np.ndarray, tps: np.ndarray, mem: np.ndarray, limit: int | None) -> np.ndarray:
    """Indices of the best ``limit`` plans: fitting first, then by tokens/s (desc), memory (asc), and
    enumeration order among plans that tie on all three (e.g. selective recomputation, free with
    a fused attention kernel, beside none)."""
    n = len(tps)

    def fastest(idx: np.ndarray, k: int) -> np.ndarray:
        # the k fastest of idx and every plan tying with the k-th (argpartition cuts ties arbitrarily);
        # the sort below orders them and the cut to ``limit`` keeps the earlier ones
        kth = np.partition(-tps[idx], k - 1)[k - 1]
        return idx[-tps[idx] <= kth]

    if limit is None or n <= limit:
        sel = np.arange(n)
    else:
        fit_idx = np.flatnonzero(fits)
        if len(fit_idx) >= limit:
            sel = fastest(fit_idx, limit)
        else:
            sel = np.concatenate([fit_idx, fastest(np.flatnonzero(~fits), limit - len(fit_idx))])
    order = np.lexsort((sel, mem[sel], -tps[sel], ~fits[sel]))
    return sel[order][:limit]


def _rank_table(ctx: Context, plans: dict[str, np.ndarray], res: dict[str, Any], tokens: float | None,
                limit: int | None = SEARCH_TABLE_ROWS) -> pd.DataFrame:
    """The ranking is numeric over all plans; strings are built only for the rows kept."""
    import pandas as pd

    a = ctx.arch
    step = res["step_time_s"]
    require_finite_steps(step, res["breakdown"])
    tps = plans["gbs"] * a.seq_length / step
    mem = res["memory"]["total"]
    fits = np.asarray(res["fits"], dtype=bool)
    idx = _top(fits, tps, mem, limit)
    cols: dict[str, Any] = {k: np.asarray(plans[k])[idx] for k in PLAN_KEYS}
    kept_tps, kept_gib, kept_fits = tps[idx], mem[idx] / GIB, fits[idx]
    cols["step_time_s"] = step[idx]
    cols["tokens_per_s"] = kept_tps
    cols["mfu"] = fl.model_flops_per_token(a) * kept_tps / ctx.gpus / ctx.peak_flops
    cols["memory_gib"] = kept_gib
    cols["fits"] = kept_fits
    cols["bubble_s"] = res["breakdown"]["bubble"][idx]
    cols["training_days"] = (tokens / kept_tps / SECONDS_PER_DAY) if tokens else np.full(len(idx), np.nan)
    cap = ctx.memory_capacity / GIB
    cols["reason"] = ["" if ok else f"needs {m:.1f} GiB of {cap:.1f} GiB"
                      for ok, m in zip(kept_fits.tolist(), kept_gib.tolist(), strict=True)]
    cols["recompute"] = [("none", "selective", "full")[int(r)] for r in cols["rc"].tolist()]
    layouts: dict[tuple, str] = {}  # a table has few distinct stage layouts: each one's text once
    keys = list(zip(*(np.asarray(cols[k], dtype=np.int64).tolist() for k in ("pp", "lf", "ll", "lm")), strict=True))
    for key in keys:
        if key not in layouts:
            layouts[key] = _layout_text(a.layers, *key)
    cols["layers_per_stage"] = [layouts[key] for key in keys]
    return pd.DataFrame(cols)


def require_finite_steps(step: np.ndarray, breakdown: dict[str, np.ndarray], scenario: Scenario | None = None) -> None:
    """Raise a :class:`~gpucluster_lib.errors.GpuClusterError` naming the parts of the step that are
    not finite numbers (a zero or overflowing rate), so that no estimate prints a step time of nan
    or inf [s]."""
    step = np.asarray(step, dtype=float)
    if np.all(np.isfinite(step)):
        return
    bad = [BREAKDOWN_LABELS.get(k, k) for k, v in breakdown.items() if not np.all(np.isfinite(np.asarray(v, dtype=float)))]
    parts = ", ".join(bad) if bad else "the sum of its parts"
    cal = getattr(scenario, "calibration", None) if scenario is not None else None
    suspect = (f"the calibration profile {excerpt(cal)} or the scenario's efficiency values" if cal
               else "the scenario's efficiency values or the catalogue's rates")
    raise GpuClusterError(f"the training step time is not a finite number: {parts} came out as not a number or "
                          f"infinite, so a rate it divides by is zero or overflows; check {suspect}")


def _layout_text(layers: int, pp: int, lf: int, ll: int, lm: int) -> str:
    if pp == 1:
        return str(layers)
    if layers % pp == 0 and lf == ll == lm == layers // pp:
        return f"{layers // pp} each"
    return f"first {lf}, middle up to {lm}, last {ll}" if pp > 2 else f"{lf} + {ll}"


def search_plans(scenario: Scenario, catalog: Catalog | None = None, *, gpus: int | None = None,
                 spec: ParallelismSpec | None = None, context: Context | None = None,
                 limit: int | None = SEARCH_TABLE_ROWS) -> SearchResult:
    """Enumerate every valid plan (fields fixed in ``parallelism`` are kept) and rank them by time
    to train, fitting plans first.

    Not every plan is evaluated (:mod:`gpucluster_lib.training.search`): the memory fit of every
    plan is exact and cheap, and a lower bound on each step time orders the plans; they are
    evaluated with numpy in batches from the best bound down until no remaining bound can reach the
    ``limit``-th fastest plan found. The table, the fitting count and the best plan are those of
    evaluating every plan (``limit=None`` does, and so does a search with few plans per table row).

    Parameters
    ----------
    scenario : Scenario
    catalog : Catalog, optional
    gpus : int, optional
        GPU count to plan for [GPUs] (default: the scenario's cluster).
    spec : ParallelismSpec, optional
        Fixed fields (default: ``scenario.parallelism``).
    limit : int or None
        Rows kept in the table (None: all); the ranking always covers every plan.

    The last :data:`SEARCH_CACHE_SIZE` searches are kept, keyed by everything the search reads
    (the context, the fixed fields, the token budget, the rows kept): an automatic plan and the
    Training tab's table of alternatives are one search, and so is a repeat in an app session.
    """
    ctx = context or build_context(scenario, catalog, gpus=gpus)[0]
    spec = spec or scenario.parallelism
    try:  # the search reads exactly these: a repeat (the plan and the Training tab's table) is free
        key: tuple | None = (ctx, spec, scenario.training.tokens, limit)
        hit = _SEARCHES.get(key)
    except TypeError:  # an unhashable field (a list of pipeline layers): no reuse
        key, hit = None, None
    if hit is not None:
        _SEARCHES[key] = _SEARCHES.pop(key)  # the latest used last
        return dataclasses.replace(hit, table=hit.table.copy())
    result = _search(ctx, spec, scenario.training.tokens, limit)
    if key is not None:
        _SEARCHES[key] = result
        while len(_SEARCHES) > SEARCH_CACHE_SIZE:
            del _SEARCHES[next(iter(_SEARCHES))]
    return dataclasses.replace(result, table=result.table.copy())


#: Searches kept by :func:`search_plans`, keyed by (context, fixed fields, tokens, rows kept).
SEARCH_CACHE_SIZE = 8
_SEARCHES: dict[tuple, SearchResult] = {}
#: Plan spaces of the last searches, keyed by what enumeration reads (fixed fields, model, GPUs, TP
#: limit): a fabric change enumerates nothing again. A few suffice (0.5-5 MB each).
SPACE_CACHE_SIZE = 4
_SPACES: dict[tuple, Any] = {}


#: Below this many plans per table row, evaluating every plan is quicker than bounding them.
EXHAUSTIVE_PLANS_PER_ROW = 4


def _search(ctx: Context, spec: ParallelismSpec, tokens: float | None, limit: int | None,
            exhaustive: bool | None = None) -> SearchResult:
    """Rank every valid plan; only the plans that can reach the table are evaluated
    (:mod:`gpucluster_lib.training.search`) unless ``exhaustive``: True evaluates every plan (the
    reference the bounded search is tested against, and its fallback), None (default) does so
    for a search of at most :data:`EXHAUSTIVE_PLANS_PER_ROW` plans per row kept."""
    check_fixed_values(spec, ctx.arch)
    tp_limit = ctx.gpus if spec.allow_tp_across_nodes else min(ctx.nvlink_domain, ctx.gpus)
    try:  # what made the plan space: a search that differs only in link bandwidths reuses it and its memory fits
        caps = PlanCaps.of(ctx.framework)
        key: tuple | None = (spec, tp_limit, ctx.nvlink_domain, caps)
        space_key = (spec, ctx.arch, ctx.gpus, tp_limit, ctx.nvlink_domain, caps)
        space = _SPACES.get(space_key)
    except TypeError:  # an unhashable field (a list of pipeline layers): no reuse
        key, space_key, space = None, None, None
    if space is None:
        space = plan_space(spec, ctx.arch, ctx.gpus, tp_limit, ctx.nvlink_domain, PlanCaps.of(ctx.framework))
        if space_key is not None:
            _SPACES[space_key] = space
            while len(_SPACES) > SPACE_CACHE_SIZE:
                del _SPACES[next(iter(_SPACES))]
    n = space.size
    if n == 0:
        # a rule's own message when one rule empties the space
        check_fixed_fields(spec, ctx.arch.layers, ctx.gpus, ctx.nvlink_domain, ctx.framework)
        raise ScenarioError("parallelism", f"no valid plan for {ctx.gpus} GPUs with the fixed fields "
                            f"{_fixed_fields(spec)}; relax them or change the GPU count")
    if exhaustive is None:
        exhaustive = limit is None or n <= EXHAUSTIVE_PLANS_PER_ROW * limit
    found = candidates(ctx, space, limit, key) if limit is not None and n > limit and not exhaustive else None
    if found is not None:
        plans, res, fitting = found
    else:
        plans = space.plans()
        res = evaluate(ctx, plans)
        fitting = int(np.count_nonzero(res["fits"]))
    given = tuple(int(x) for x in spec.pipeline_layers) if spec.pipeline_layers is not None else None
    return SearchResult(table=_rank_table(ctx, plans, res, tokens, limit), enumerated=n,
                        fitting_count=fitting, layers=ctx.arch.layers, pipeline_layers=given)


def _fixed_fields(spec: ParallelismSpec) -> str:
    # the fields set away from their default (by identity: a 0 is a value, False only where the default is None)
    defaults = {f.name: f.default for f in dataclasses.fields(spec)}
    d = {k: v for k, v in dataclasses.asdict(spec).items() if v is not None and v is not defaults[k] and k != "auto"}
    words = {True: "on", False: "off"}
    names = {"zero_stage": "ZeRO stage", "tp_comm_overlap": "TP communication overlap",
             "micro_batch_size": "micro-batch size", "virtual_stages": "model chunks per stage",
             "allow_tp_across_nodes": "TP across nodes", "pipeline_layers": "layers per stage"}
    return ", ".join(f"{names.get(k, k.replace('_', ' '))} " + (" / ".join(map(str, v)) if isinstance(v, (list, tuple))
                                                  else words.get(v, str(v)) if isinstance(v, bool) else f"{v:,}"
                                                  if isinstance(v, int) else str(v))
                     for k, v in d.items()) or "none"


def _why_no_plan(refusal: ScenarioError | None, searched: bool, where: str) -> str:
    """Why a series of plan searches over cluster sizes found no plan, in words: the first refusal when every size
    was refused (a fixed field no size allows), else that no plan fits in memory ``where``."""
    return str(refusal) if refusal is not None and not searched else f"no plan fits in memory {where}"


def min_gpus_for_deadline(scenario: Scenario, deadline_days: float | None = None, catalog: Catalog | None = None,
                          *, max_nodes: int = 4096) -> dict[str, Any]:
    """Smallest GPU count (whole nodes of the scenario's accelerator) whose best plan trains
    ``training.tokens`` within ``deadline_days`` [days].

    Node counts are tried in increasing order over 1, 2, 3, 4, 6, 8, 12, 16, ... (powers of two
    and 1.5x powers of two) up to ``max_nodes``; returns the first that meets the deadline,
    with its plan and days, or ``{"gpus": None}`` with the best found, or, when no count gives a plan
    that fits, the ``reason`` in words (the first refusal when every count was refused, else that no plan fits in
    memory).
    """
    deadline = deadline_days or scenario.training.deadline_days
    if deadline is None:
        raise ScenarioError("training.deadline_days", "give a deadline in days to size the cluster for")
    if not scenario.training.tokens:
        raise ScenarioError("training.tokens", "give the token budget to train within the deadline")
    cat = catalog or catalog_for(scenario)
    hw = resolve_hardware(scenario, cat)
    candidates = sorted({n for k in range(0, 13) for n in (2**k, 3 * 2**k // 2) if 1 <= n <= max_nodes})
    spec = dataclasses.replace(scenario.parallelism, auto=True, data=None)
    best_seen: dict[str, Any] = {"gpus": None, "training_days": math.inf}
    refusal: ScenarioError | None = None
    searched = False  # some node count got as far as a search (its plans then did not fit)
    for nodes in candidates:
        g = nodes * hw.gpus_per_node
        try:
            res = search_plans(scenario, cat, gpus=g, spec=spec)
        except ScenarioError as e:
            refusal = refusal or e
            continue
        searched = True
        plan = res.best
        if plan is None:
            continue
        days = float(res.table[res.table["fits"]].iloc[0]["training_days"])
        if days < best_seen["training_days"]:
            best_seen = {"gpus": None, "best_gpus": g, "training_days": days, "plan": plan.to_dict()}
        if days <= deadline:
            return {"gpus": g, "nodes": nodes, "training_days": days, "plan": plan.to_dict(), "deadline_days": deadline}
    best_seen["deadline_days"] = deadline
    if best_seen.get("best_gpus") is None:
        best_seen["reason"] = _why_no_plan(refusal, searched, f"on any of the node counts tried, 1 to {candidates[-1]:,}")
    return best_seen


# --------------------------------------------------------------------------- estimate


def estimate(scenario: Scenario, catalog: Catalog | None = None, *, hardware: ClusterHardware | None = None,
             network: TopologyDesign | None = None) -> TrainingEstimate:
    """Training step time, throughput, MFU, memory and time to train for a scenario.

    Vision workloads (``model.kind`` cnn/vit or a vision preset) are handed to
    :func:`gpucluster_lib.training.vision.estimate_training`. ``hardware`` and ``network``
    are a Design's upstream results (computed when omitted).
    """
    if _is_vision(scenario):
        return estimate_training(scenario, catalog, hardware=hardware)
    spec = scenario.model
    if spec.preset is not None and spec.preset not in load_presets():
        raise UnknownIdError("model preset", spec.preset, load_presets(), "model.preset")
    cat = catalog or catalog_for(scenario)
    ctx, hw, eff = build_context(scenario, cat, hardware=hardware, network=network)
    arch = ctx.arch
    par = scenario.parallelism
    findings: list[Finding] = []
    top, top_list = None, []
    if par.auto:
        result = search_plans(scenario, cat, context=ctx)
        plan = result.best
        top = result.table
        top_list = [result.plan(r) for r in top.head(10).to_dict(orient="records")]
        if plan is None:
            plan = result.plan(result.table.iloc[0].to_dict())  # the fastest of those that do not fit
            findings.append(Finding("training-no-plan-fits", "error",
                                    f"none of the {result.enumerated:,} valid plans fits in "
                                    f"{ctx.memory_capacity / GIB:.0f} GiB per GPU",
                                    fix="add GPUs, use an accelerator with more memory, or fix a smaller micro-batch / "
                                        "full recomputation / ZeRO-3"))
        findings.append(Finding("training-plan-search", "info",
                                f"searched {result.enumerated:,} valid plans, {result.fitting:,} fit in memory; "
                                f"best: {describe_plan(plan)}"))
    else:
        plan = resolve_plan(par, arch, hw.gpus, default_tp_overlap=ctx.framework.tp_comm_overlap,
                            nvlink_domain=ctx.nvlink_domain)
        findings += layout_findings(par, arch.layers, plan)
        if plan.tp_comm_overlap and plan.zero_stage == 3 and not ctx.framework.zero3_tp_comm_overlap:
            # NeMo turns TP overlap off under Megatron-FSDP (data/training_frameworks.yaml): estimated without it
            plan = dataclasses.replace(plan, tp_comm_overlap=False)
            findings.append(Finding("training-setting-ignored", "warning",
                                    f"TP communication overlap is asked for with ZeRO-3, but {ctx.framework.name} "
                                    "turns it off under Megatron-FSDP (its performance scripts: TP overlap "
                                    "performs poorly beside FSDP), so the plan is estimated without it",
                                    fix="turn the TP communication overlap off, or lower the ZeRO stage to 2 or less",
                                    field="parallelism.tp_comm_overlap"))
    arrays = plan.arrays(arch.layers)
    res = evaluate(ctx, arrays)
    require_finite_steps(res["step_time_s"], res["breakdown"], scenario)
    step = float(res["step_time_s"][0])
    breakdown = {k: float(res["breakdown"][k][0]) for k in BREAKDOWN_KEYS}
    table = stage_table(ctx, arrays, list(plan.stage_layers(arch.layers)))
    worst = int(np.argmax(table["memory"]["total"]))
    memory = {k: float(table["memory"][k][worst]) for k in (*MEMORY_KEYS, "total")}
    fits = memory["total"] <= ctx.memory_capacity
    stages = {"layers_per_stage": [int(x) for x in table["layers"]],
              "stage_time_per_micro_batch_s": [float(x) for x in table["time_s"]],
              "stage_memory_bytes": [float(x) for x in table["memory"]["total"]],
              "bottleneck_stage": int(np.argmax(table["time_s"])), "memory_stage": worst}
    tokens_step = plan.global_batch_size * arch.seq_length
    tps = tokens_step / step
    mflops = fl.model_flops_per_token(arch) * tps / hw.gpus
    hflops = fl.hardware_flops_per_token(arch, plan.recompute, ctx.framework.checkpoint_early_stop,
                                         ctx.framework.selective_recompute) * tps / hw.gpus
    days = scenario.training.tokens / tps / SECONDS_PER_DAY if scenario.training.tokens else None
    findings += _findings(scenario, ctx, plan, memory, fits, breakdown, step, days, eff, stages)
    findings += _blocked_prefetch(ctx, plan, arrays, step, memory["total"])
    _, cal_findings, cal_record = calibration_terms(scenario, scenario_profile(scenario), hw.accelerator,
                                                    ctx.nvlink_bw, ctx.nic_bw)
    findings += cal_findings
    efficiency = eff.to_dict()
    if ctx.framework.zero3_prefetch != "fraction":  # its own ZeRO-3 schedule: the fitted hidden share is not read
        efficiency.pop("zero3_overlap", None)
    assumptions = {
        "efficiency": efficiency,
        "peak_tflops": ctx.peak_flops / TERA,
        "memory_bandwidth_gb_per_s": ctx.memory_bw / GB,
        "nvlink_gb_per_s_per_direction": ctx.nvlink_bw / GB,
        "fabric_gbps_per_gpu": ctx.nic_bw / GBPS_IN_BYTES_PER_S,
        "nvlink_domain_gpus": ctx.nvlink_domain,
        "flash_attention": ctx.flash_attention,
        "attention_kernel": attention_kernel_name(eff.attention_kernel) if ctx.flash_attention else None,
        "framework": ctx.framework.to_dict(),
        # full recomputation: stops before the FFN output projection (true) or reruns the whole layer
        "checkpoint_early_stop": ctx.framework.checkpoint_early_stop if plan.recompute == "full" else None,
        # DeepSpeed ZeRO-3: no prefetch while this many parameter elements are gathered [elements]
        "zero3_max_live_parameters": (ctx.framework.zero3_max_live_params
                                      if plan.zero_stage == 3 and ctx.framework.zero3_prefetch == "module" else None),
        "overlap_grad_reduce": ctx.overlap_grad_reduce,
        "overlap_param_gather": ctx.overlap_param_gather,
        "sharded_collectives": "flat" if ctx.flat_collectives else "hierarchical",
        "precision": scenario.training.precision,
        # the calibration profile used: name, date, example or not, the engine terms it set (None: none)
        "calibration": cal_record,
        "fp8_recipe": fp8_recipes()[ctx.fp8_casts.recipe] if ctx.fp8_casts is not None else None,
        "flops_convention": "model FLOPs = 3 x forward GEMM FLOPs incl. full s x s attention (Narayanan 2021 / "
                            "Korthikanti 2022); hardware FLOPs add recomputation",
    }
    mfu = mflops / ctx.peak_flops
    if mfu > MFU_PUBLISHED_CEILING:
        findings = sort_findings([*findings, Finding(
            "training-mfu-above-published", "warning",
            f"estimated MFU {mfu:.1%} is above the best published training MFU we know of "
            f"({MFU_PUBLISHED_CEILING:.0%}: MPT-7B on 8x A100 80GB, 64.2%, MosaicML llm-foundry benchmarks); "
            "treat this estimate as optimistic",
            fix="calibrate the matrix-multiply efficiency (or the other training efficiencies) to a measured run "
                "on your stack",
            field="training.gemm_efficiency")])
    return TrainingEstimate(
        model=arch.name, accelerator=hw.accelerator_id, gpus=hw.gpus, params=arch.total_params(),
        active_params=arch.active_params(), step_time_s=step, tokens_per_step=tokens_step, tokens_per_s=tps,
        model_tflops_per_gpu=mflops / TERA, hardware_tflops_per_gpu=hflops / TERA, mfu=mflops / ctx.peak_flops,
        hfu=hflops / ctx.peak_flops, memory_per_gpu_bytes=memory, memory_capacity_bytes=ctx.memory_capacity,
        fits=fits, time_breakdown_s=breakdown, training_days=days, plan=plan, findings=sort_findings(findings),
        assumptions=assumptions, searched=par.auto, top_plans=top, top_plan_list=top_list, stages=stages)


#: Highest training MFU in published runs we know of, rounded up: MosaicML llm-foundry benchmark
#: table "A100 80GB (1600 Gbps RoCE)", MPT-7B on 8 GPUs, 64.23% MFU (validation row 100).
#: Estimates above it get a warning, not a cap.
MFU_PUBLISHED_CEILING = 0.65

#: How far published runs with each fused attention kernel are reproduced at long context (docs/validation.md,
#: "Long sequences"). llm-foundry's Triton FlashAttention: the MPT-3B / MPT-13B calibration rows up to 65,536
#: tokens per sequence (benchmarking README at b2a43a1), and the held-out MPT-1B / MPT-7B rows at 8,192 and
#: 32,768 tokens (attention scores up to 71% of the model FLOPs) within the 15% target. FlashAttention-2:
#: TorchTitan's Llama 3.1 8B on 32 and 64 H200 (PyTorch SDPA's flash backend, torchtitan e7c0cae) at 8,192
#: tokens, no context parallelism. Llama 3 8B's attention scores are 22.2% of its forward FLOPs
#: (``flops.layer_matmul_flops_per_token()["scores"] / flops.forward_flops_per_token()``: 2 s heads (d_qk + d_v)
#: = 2 x 8192 x 32 x 256 = 134.2M a layer and token, 32 layers, 4.295e9 of 19.30e9), the largest share of
#: either kernel's published runs, so the bound is 22.5%, just above them. cuDNN fused attention, counting the
#: tokens each GPU's kernel sees (a sequence split by context parallelism runs in chunks): at 8,192 tokens per
#: GPU the Megatron-Bridge 25.11 Llama 3 8B rows on B200, GB200 and GB300 (mb2511-*-llama3-8b-*, 22.2%, -3.2% to
#: +8.0%); on Hopper the runs at 8,192 tokens per GPU are Llama 3 405B on 8,192 and 16,384 H100 (Llama Team 2024
#: Table 4; llama3-405b-8k / -16k, 7.7%, -1.2% and +4.6%) and Megatron-Bridge's Llama 3 70B on 64 H100
#: (mb2604-h100-llama3-70b-fp8, 13.4%, +13.9%), while NVIDIA's NeMo Llama 3.1 8B on 8 and 128 H100 (DGX Cloud
#: benchmarks v24.11.1, NVTE_FUSED_ATTN=1; NeMo 24.07's LLAMA3-8B) run context parallelism 2, so their kernel saw
#: 4,096-token chunks (22.2%, -10.8% to +7.0%). So the kernel's bound, 8,192 tokens and 22.5%, is reached on
#: Blackwell; on Hopper the share at 8,192 tokens per GPU is validated to 13% only (the bound is the kernel's,
#: not the generation's). Beyond them the rate rests on the kernel benchmarks alone (FlashAttention-2: Dao 2023
#: Fig. 4 and 7, up to 16,384 tokens; cuDNN: NVIDIA's cudnn-frontend files, up to 65,536 tokens on Hopper and
#: 16,384 on Blackwell).
LONG_CONTEXT_VALIDATED = {  # kernel: (tokens per sequence, share of the attention scores in the FLOPs)
    "triton": (65536, 1.0),
    "flash-attention-2": (8192, 0.225),
    "pytorch-flash-attention": (8192, 0.225),
    "cudnn": (8192, 0.225),
}
#: The published runs behind each kernel's bound, as the finding quotes them.
LONG_CONTEXT_EVIDENCE = {
    "triton": "published runs with this kernel reach 65,536 tokens (MPT-3B on 8 H100 and on 8 A100, reproduced "
              "within 10%)",
    "flash-attention-2": "published runs with FlashAttention-2 reach 8,192 tokens and an attention share of 22% "
                         "(TorchTitan Llama 3.1 8B on H200, through PyTorch's copy of the kernel); beyond them its "
                         "speed rests on the kernel's published benchmark (up to 16,384 tokens), while with "
                         "llm-foundry's Triton kernel published MPT runs are reproduced up to 65,536 tokens",
    "pytorch-flash-attention": "published runs with this kernel reach 8,192 tokens and an attention share of 22% "
                               "(TorchTitan Llama 3.1 8B on H200); beyond them its speed rests on NVIDIA's benchmark "
                               "files (up to 65,536 tokens on Hopper, 131,072 on Blackwell)",
    "cudnn": "published runs with this kernel reach 8,192 tokens per GPU and an attention share of 22% (NVIDIA's "
             "Megatron-Bridge Llama 3 8B on B200, GB200 and GB300); on H100 the runs at 8,192 tokens per GPU (Llama 3 "
             "405B on 8,192 and 16,384 GPUs, Megatron-Bridge Llama 3 70B on 64) reach a share of 13%, and NVIDIA's "
             "NeMo Llama 3.1 8B reaches 22% at 4,096 tokens per GPU (its sequences split over 2 GPUs by context "
             "parallelism); beyond them its speed rests on NVIDIA's cuDNN benchmark files (up to 65,536 tokens on "
             "Hopper, 16,384 on Blackwell)",
}


def _findings(scenario: Scenario, ctx: Context, plan: Plan, memory: dict[str, float], fits: bool,
              breakdown: dict[str, float], step: float, days: float | None, eff: Efficiency,
              stages: dict[str, Any] | None = None) -> list[Finding]:
    out: list[Finding] = []
    cap = ctx.memory_capacity
    if not fits:
        parts = ", ".join(f"{MEMORY_LABELS[k]} {memory[k] / GIB:.1f} GiB" for k in memory_parts(memory, MEMORY_KEYS))
        where = f"pipeline stage {stages['memory_stage'] + 1} of {plan.pipeline}" if stages and plan.pipeline > 1 \
            else "the only pipeline stage"
        out.append(Finding("training-memory-exceeded", "error",
                           f"plan {describe_plan(plan)} needs {memory['total'] / GIB:.1f} GiB per GPU ({where}: "
                           f"{parts}) but the accelerator has {cap / GIB:.1f} GiB",
                           fix="raise tensor/pipeline parallelism, use ZeRO/distributed optimizer, full recomputation, "
                               "a smaller micro-batch, or the automatic plan search", field="parallelism"))
    if plan.tensor > ctx.nvlink_domain:
        out.append(Finding("training-tp-across-nodes", "warning",
                           f"tensor parallelism {plan.tensor} spans nodes (NVLink domain {ctx.nvlink_domain}); "
                           "its all-reduces run over the scale-out fabric",
                           fix="keep the tensor parallelism at most the GPUs per node",
                           field="parallelism.tensor"))
    cannot = framework_plan_problems(ctx.framework, plan.pipeline, plan.zero_stage, plan.tp_comm_overlap,
                                     plan.distributed_optimizer, plan.context)
    for where, message, fix in cannot:
        out.append(Finding("training-framework-cannot-run", "error", message, fix=fix, field=where))
    if plan.tensor > 1 and ctx.framework.tp_scope == "ffn":
        out.append(Finding("training-tp-scope-not-modelled", "warning",
                           f"{ctx.framework.name} splits only the feed-forward layers over its tensor parallelism "
                           f"(attention stays whole on a share of the tokens), but this estimate charges a tensor "
                           f"parallelism of {plan.tensor} as Megatron's split of attention and feed-forward: its "
                           "time and memory are not the framework's for this plan",
                           fix="use a tensor parallelism of 1 (the plan search does), or a framework with "
                               "Megatron-style tensor parallelism (Megatron-LM, NeMo, DeepSpeed or TorchTitan)",
                           field="parallelism.tensor"))
    zero3_pp = not cannot and plan.zero_stage == 3 and plan.pipeline > 1
    if zero3_pp and ctx.framework.pipeline_zero3 == "step":
        grad = {4.0: "32-bit", 2.0: "16-bit"}.get(ctx.framework.grad_reduce_bytes, "")
        out.append(Finding("training-zero3-gathered-once-a-step", "info", f"{ctx.framework.name} keeps ZeRO-3's "
                           "parameters gathered and its gradients unreduced for the whole step beside pipeline "
                           "stages (one all-gather, and one reduce-scatter after the last backward), so this plan "
                           f"holds 16-bit parameters and {grad + ' ' if grad else ''}gradients whole, the rest "
                           "sharded, and is estimated so", field="parallelism.zero_stage"))
    elif zero3_pp:
        out.append(Finding("training-zero3-with-pp", "warning", "ZeRO-3 with pipeline parallelism re-gathers "
                           "every parameter for each micro-batch (more traffic than the pipeline saves, so the plan "
                           "search leaves it out)", field="parallelism.zero_stage"))
    if breakdown["bubble"] > 0.15 * step:
        out.append(Finding("training-pipeline-bubble", "warning",
                           f"pipeline bubble is {breakdown['bubble'] / step:.0%} of the step "
                           f"(p={plan.pipeline} stages, v={plan.virtual_stages} chunks, m={plan.micro_batches} "
                           "micro-batches)",
                           fix="more micro-batches (larger global batch), virtual stages, or less pipelining",
                           field="parallelism.pipeline"))
    comm = sum(breakdown[k] for k in ("tp_comm", "cp_comm", "ep_comm", "pp_comm", "dp_comm"))
    if comm > 0.3 * step:
        out.append(Finding("training-communication-bound", "warning",
                           f"exposed communication is {comm / step:.0%} of the step",
                           fix="more bandwidth per GPU, less data/tensor parallelism across nodes, or more overlap"))
    seq = int(ctx.arch.seq_length)
    share = fl.layer_matmul_flops_per_token(ctx.arch)["scores"] / fl.forward_flops_per_token(ctx.arch)
    max_seq, max_share = LONG_CONTEXT_VALIDATED.get(eff.attention_kernel, LONG_CONTEXT_VALIDATED["flash-attention-2"])
    if ctx.flash_attention and (seq > max_seq or share > max_share):
        kernel = attention_kernel_name(eff.attention_kernel)
        evidence = LONG_CONTEXT_EVIDENCE.get(eff.attention_kernel, LONG_CONTEXT_EVIDENCE["flash-attention-2"])
        out.append(Finding("training-long-context-unvalidated", "warning",
                           f"attention at long context is not validated for {kernel}: at {seq:,} tokens per "
                           f"sequence the attention scores are {share:.0%} of this model's FLOPs; {evidence}",
                           fix="treat the step time as indicative, or calibrate the attention efficiency to a "
                               "measured run of your attention kernel",
                           field="model.seq_length"))
    qk, v = int(ctx.arch.qk_head_dim), int(ctx.arch.value_head_dim)
    fallback = ctx.framework.attention_fallback
    if ctx.flash_attention and fallback and not cudnn_trains_heads(eff.generation, qk, v):
        # cuDNN's fused attention does not train these heads on this GPU (efficiency.cudnn_trains_heads): Transformer
        # Engine runs flash-attn instead, else its unfused attention (data/training_frameworks.yaml attention_fallback)
        heads = f"attention heads of {qk} x {v}" if qk != v else f"attention heads {qk} wide"
        if eff.attention_kernel == "cudnn":  # the scenario names cuDNN's kernel
            out.append(Finding("training-attention-heads-not-cudnn", "warning",
                               f"cuDNN's fused attention is chosen, but on {GENERATION_WORDS[eff.generation]} GPUs "
                               f"it does not train {heads} (Transformer Engine releases up to v2.18): "
                               f"{ctx.framework.name} would run {attention_kernel_name(fallback)}, or Transformer "
                               "Engine's unfused attention",
                               fix=f"choose {attention_kernel_name(fallback)} as the attention kernel, or turn fused "
                                   "attention off",
                               field="training.attention_kernel"))
        elif scenario.training.attention_kernel is None:  # the framework's cuDNN default fell back
            out.append(Finding("training-attention-heads-not-cudnn", "info",
                               f"on {GENERATION_WORDS[eff.generation]} GPUs cuDNN's fused attention does not train "
                               f"{heads} (Transformer Engine releases up to v2.18), so {ctx.framework.name} "
                               f"runs {attention_kernel_name(eff.attention_kernel)} instead, as this estimate "
                               "assumes; that needs a flash-attn release that Transformer Engine accepts (2.7.3 or "
                               "later, up to 2.8.3 for Transformer Engine 2.18), and without one Transformer Engine "
                               "runs its unfused attention, which is slower",
                               fix="if your container has no such flash-attn (NGC PyTorch 25.01, the base of NeMo "
                                   "25.02 and 25.04, ships 2.4.2), turn fused attention off",
                               field="training.flash_attention"))
    if not eff.validated:
        why = f": {eff.evidence}" if eff.evidence else ""
        gpus = (f"{GENERATION_WORDS[eff.generation]} GPUs" if eff.generation in GENERATION_WORDS
                else "this accelerator (not an Ampere, Hopper or Blackwell data-centre GPU)")
        said = f"; {eff.accuracy}" if eff.accuracy else ""
        out.append(Finding("training-efficiency-unvalidated", "warning",
                           f"efficiency parameters for {gpus} are not calibrated on published training runs{why}{said}; "
                           "treat the estimate as indicative", field="hardware.accelerator"))
    elif eff.accuracy:  # a calibrated generation: how far off the estimate has been on this GPU, as a note
        out.append(Finding("training-accuracy-published-runs", "info", eff.accuracy,
                           fix="measure your cluster's matrix-multiply and network rates and use them as a "
                               "calibration profile ('gpucluster calibrate')",
                           field="hardware.accelerator"))
    dl = scenario.training.deadline_days
    if days is not None and dl is not None and days > dl:
        out.append(Finding("training-deadline-missed", "warning",
                           f"training takes {days:.1f} days, more than the {dl:g}-day deadline",
                           fix="add GPUs (sizing the cluster for the deadline finds how many) or reduce the token "
                               "budget",
                           field="training.deadline_days"))
    fixed = ctx.framework.step_fixed_s
    if fixed > 0:  # a fitted constant, not a mechanism: say what it is and how large a share of this step
        out.append(Finding("training-framework-step-time", "info",
                           f"{ctx.framework.name} adds a fixed {fixed:.2f} s per step, {fixed / step:.0%} of this step: "
                           "it is fitted to MosaicML's Composer runs of MPT (the training loop's host-side work per "
                           "batch), not measured",
                           fix="for PyTorch FSDP without Composer's training loop, choose TorchTitan (FSDP2) as the "
                               "training framework", field="training.framework"))
    out += _ignored_settings(scenario, ctx, plan)
    if days is None:
        out.append(Finding("training-no-token-budget", "info", "the training tokens are not set: no time to train",
                           field="training.tokens"))
    return out


def _count_words(n: float) -> str:
    """A count in words: 2e9 -> "2 billion", 1.678e9 -> "1.68 billion"."""
    for scale, word in ((1e12, "trillion"), (1e9, "billion"), (1e6, "million")):
        if n >= scale:
            return f"{n / scale:.3g} {word}"
    return f"{n:,.0f}"


def _params(n: float) -> str:
    """A count of parameters in words, singular for one: "2 billion parameters", "1 parameter"."""
    return f"{_count_words(n)} parameter{'' if _count_words(n) == '1' else 's'}"


def _blocked_prefetch(ctx: Context, plan: Plan, arrays: dict[str, np.ndarray], step: float,
                      total: float) -> list[Finding]:
    """A warning when DeepSpeed ZeRO-3 issues no prefetch behind some weight modules of the plan
    (a module of at least ``stage3_max_live_parameters`` elements is gathered: core.py [17, 18]), so
    their gathers wait for the compute before them: the time this costs per step (the step at the
    smallest one-digit limit that lets every prefetch be issued, :func:`core.live_limit_to_prefetch`,
    minus this step) and the memory that limit adds (its worst stage against this plan's) [s, B]."""
    fw = ctx.framework
    if plan.zero_stage != 3 or fw.zero3_prefetch != "module":
        return []
    lp = float(layer_params(ctx, float(plan.tensor), float(plan.expert)))
    fwd, bwd = (tuple(bool(x) for x in prefetched_modules(ctx, lp, backward=b)) for b in (False, True))
    if all(fwd) and all(bwd):
        return []
    limit = live_limit_to_prefetch(ctx, lp)
    wide = dataclasses.replace(ctx, framework=dataclasses.replace(fw, zero3_max_live_params=limit))
    faster = float(evaluate(wide, arrays)["step_time_s"][0])
    exposed = step - faster
    if exposed <= 1e-3 * step:  # the gathers are exposed but too short to matter
        return []
    layers = list(plan.stage_layers(ctx.arch.layers))
    more = float(np.max(stage_table(wide, arrays, layers)["memory"]["total"]))
    cap = ctx.memory_capacity
    full = plan.recompute == "full"  # the backward gathers nothing: the recomputed forward has
    blocked = sorted({i for i, f in enumerate(fwd) if not f} | (set() if full else {i for i, b in enumerate(bwd) if not b}))
    names = [MODULE_NAMES[i] for i in blocked]
    which = all_of(names)
    passes = (", in the forward and again in the recomputed forward" if full
              else f" ({sum(not f for f in fwd)} of 4 gathers in the forward, {sum(not b for b in bwd)} of 4 in the "
                   "backward)")
    fits = "it still fits" if more <= cap else "which does not fit"
    return [Finding(
        "training-zero3-prefetch-blocked", "warning",
        f"DeepSpeed ZeRO-3 issues no parameter prefetch while {_params(fw.zero3_max_live_params)} "
        f"or more are gathered (its live-parameter limit), and this plan's largest weights hold "
        f"{_params(max(module_shares(ctx)) * lp)} per GPU, so in each layer the gathers of the "
        f"{which} weights wait for the compute before them instead of running beside it{passes}: "
        f"{format_duration(exposed)} per step ({exposed / step:.0%} of the step). A limit of {_params(limit)} "
        f"lets every gather be prefetched, for {(more - total) / GB:.2f} GB more memory per GPU "
        f"({more / GB:.1f} GB of {cap / GB:.1f} GB, {fits})",
        fix=f"raise DeepSpeed's maximum live parameters of stage 3 to {_count_words(limit)} if the memory allows, "
            "or use tensor parallelism so that each GPU holds smaller weights",
        field="training.zero3_max_live_parameters")]


def _frameworks_with(term: str) -> str:
    """The human names of the frameworks whose ``term`` (a flag of data/training_frameworks.yaml) is true,
    comma-separated: the choices an ignored-setting finding's fix offers."""
    return ", ".join(framework_terms(n).name for n in framework_ids() if getattr(framework_terms(n), term))


def _ignored_settings(scenario: Scenario, ctx: Context, plan: Plan) -> list[Finding]:
    """A warning for each training setting the chosen framework and plan do not read (it is set
    and has no effect): the hidden share of ZeRO-3 communication (only frameworks with
    ``zero3_prefetch: fraction``, Megatron-LM, read it; FSDP, NeMo's Megatron-FSDP and DeepSpeed schedule
    their gathers, core.py [12, 13]), the parameter gather precision below ZeRO-3 (ZeRO-1/2 and the
    distributed optimizer gather 16-bit parameters), the FP8 recipe without FP8 training, the gradient
    reduction precision without data parallelism (nothing is reduced), FP8 weights outside FP8 training or
    on a framework without an FP8-weight path (``fp8_param_gather``: DeepSpeed, Composer's FSDP), and the split
    of full recomputation's saved inputs without full recomputation, with sequence parallelism (which splits
    them already) or without tensor parallelism."""
    tr, fw = scenario.training, ctx.framework
    out = []
    if scenario.parallelism.overlap_grad_reduce and bool(pipelined_fsdp2(ctx, plan.zero_stage, plan.pipeline)):
        out.append(Finding("training-setting-ignored", "warning",
                           f"the gradient reduction is asked to overlap the backward, but {fw.name} reduces "
                           "beside pipeline stages once, after the last backward (PyTorch's pipeline schedules), "
                           "so the setting has no effect",
                           fix="remove it; the reduction of this plan is exposed",
                           field="parallelism.overlap_grad_reduce"))
    if "zero3_overlap" in tr.efficiency and fw.zero3_prefetch != "fraction":
        how = "one unit ahead" if fw.zero3_prefetch == "unit" else "one module ahead"
        out.append(Finding("training-setting-ignored", "warning",
                           f"the hidden share of ZeRO-3 communication is set, but {fw.name} prefetches its parameter "
                           f"gathers {how} and what stays exposed follows from that schedule: the setting has no "
                           "effect",
                           fix="remove it; only Megatron-LM reads it",
                           field="training.efficiency.zero3_overlap"))
    if tr.param_gather_precision is not None and plan.zero_stage != 3:
        out.append(Finding("training-setting-ignored", "warning",
                           f"the parameter gather precision is set, but the plan shards no parameters (ZeRO stage "
                           f"{plan.zero_stage}): only ZeRO-3 (FSDP's full sharding) gathers parameters in it, so it has no "
                           "effect",
                           fix="remove it, or choose ZeRO stage 3", field="training.param_gather_precision"))
    if tr.zero3_max_live_parameters is not None and (fw.zero3_prefetch != "module" or plan.zero_stage != 3):
        why = (f"the plan shards no parameters (ZeRO stage {plan.zero_stage})" if fw.zero3_prefetch == "module"
               else f"{fw.name} does not schedule its gathers by DeepSpeed's live-parameter limit")
        out.append(Finding("training-setting-ignored", "warning",
                           f"the live-parameter limit of ZeRO-3 is set, but {why}: it has no effect",
                           fix="remove it; only DeepSpeed with ZeRO stage 3 reads it",
                           field="training.zero3_max_live_parameters"))
    if tr.transformer_engine is not None and not (tr.precision == "fp8" and fw.fp8_transformer_engine) \
            and fw.cross_entropy_loss != "te_triton":
        why = (f"{fw.name} trains in FP8 with torchao, not Transformer Engine" if tr.precision == "fp8"
               else f"the training precision is {tr.precision}")
        out.append(Finding("training-setting-ignored", "warning",
                           f"the Transformer Engine release is set, but {why}, and the loss is not Transformer "
                           "Engine's: nothing the estimate reads depends on it, so it has no effect",
                           fix="remove it, or train in fp8 with a framework that runs Transformer Engine",
                           field="training.transformer_engine"))
    if tr.fp8_recipe is not None and tr.precision != "fp8":
        out.append(Finding("training-setting-ignored", "warning",
                           f"the FP8 recipe is set, but the training precision is {tr.precision}: no tensor is cast "
                           "to FP8, so it has no effect",
                           fix="remove it, or train in fp8", field="training.fp8_recipe"))
    if tr.grad_reduce_precision is not None and plan.data * plan.context == 1:
        out.append(Finding("training-setting-ignored", "warning",
                           "the gradient reduction precision is set, but the plan has no data parallelism: no "
                           "gradients are reduced, so it has no effect",
                           fix="remove it, or train with more than one data-parallel replica",
                           field="training.grad_reduce_precision"))
    if tr.fp8_params is not None and tr.precision != "fp8":
        out.append(Finding("training-setting-ignored", "warning",
                           f"FP8 weights are set, but the training precision is {tr.precision}: only FP8 training "
                           "keeps FP8 weights, so it has no effect",
                           fix="remove it, or train in FP8", field="training.fp8_params"))
    elif tr.fp8_params and not fw.fp8_param_gather:
        able = _frameworks_with("fp8_param_gather")
        out.append(Finding("training-setting-ignored", "warning",
                           f"FP8 weights are set, but {fw.name} has no FP8-weight path: it keeps 16-bit weights and "
                           "gathers them in 16 bits, so the setting has no effect",
                           fix=f"remove it, or choose a framework that gathers FP8 weights ({able})",
                           field="training.fp8_params"))
    elif tr.fp8_params and plan.zero_stage == 3 and tr.precision == "fp8" and not fw.zero3_fp8_param_gather:
        out.append(Finding("training-setting-ignored", "warning",
                           f"FP8 weights are set, but {fw.name} does not gather FP8 weights under ZeRO-3 (NeMo's "
                           "performance scripts turn the FP8 parameter gather off with Megatron-FSDP): the ZeRO-3 "
                           "gathers stay in 16 bits, so the setting has no effect on them",
                           fix="remove it, or use ZeRO stage 1 or 2 (the distributed optimizer) for one-byte gathers",
                           field="training.fp8_params"))
    if tr.defer_output_wgrad and not fw.output_wgrad_deferral:
        able = _frameworks_with("output_wgrad_deferral")
        out.append(Finding("training-setting-ignored", "warning",
                           f"the output layer's weight gradient is set to be deferred, but {fw.name} has no such "
                           "path: it computes it in every backward, so the setting has no effect",
                           fix=f"remove it, or choose a framework that defers it ({able})",
                           field="training.defer_output_wgrad"))
    elif tr.defer_output_wgrad and plan.pipeline == 1:
        out.append(Finding("training-setting-ignored", "warning",
                           "the output layer's weight gradient is set to be deferred, but the plan has no pipeline "
                           "parallelism: Megatron-Core defers it only to a pipeline flush, so it has no effect",
                           fix="remove it, or train with pipeline parallelism", field="training.defer_output_wgrad"))
    if tr.wgrad_deferral_limit is not None and not tr.defer_output_wgrad:
        out.append(Finding("training-setting-ignored", "warning",
                           "the deferral limit of the output layer's weight gradient is set, but the weight gradient "
                           "is not deferred: the limit has no effect",
                           fix="remove it, or turn on the deferral of the output layer's weight gradient",
                           field="training.wgrad_deferral_limit"))
    if scenario.parallelism.overlap_p2p_comm and not fw.p2p_overlap_path:
        able = _frameworks_with("p2p_overlap_path")
        out.append(Finding("training-setting-ignored", "warning",
                           f"the pipeline transfer overlap is set, but {fw.name} has no such schedule option: its "
                           "pipeline transfers stay exposed, so the setting has no effect",
                           fix=f"remove it, or choose a framework that has it ({able})",
                           field="parallelism.overlap_p2p_comm"))
    elif scenario.parallelism.overlap_p2p_comm and (plan.virtual_stages <= 1 or plan.pipeline <= 1):
        out.append(Finding("training-setting-ignored", "warning",
                           "the pipeline transfer overlap is set, but the plan has no interleaved pipeline schedule "
                           f"({plan.pipeline} pipeline stage{'s' if plan.pipeline != 1 else ''}, "
                           f"{plan.virtual_stages} virtual stage{'s' if plan.virtual_stages != 1 else ''} per GPU): "
                           "Megatron-Core overlaps the transfers only in the interleaved schedule and refuses the "
                           "setting in the non-interleaved one, so it has no effect",
                           fix="remove it, or use more than one virtual stage per GPU with pipeline parallelism",
                           field="parallelism.overlap_p2p_comm"))
    if tr.distribute_saved_activations and (plan.recompute != "full" or plan.sequence_parallel or plan.tensor == 1):
        rc = {"none": "recomputes nothing", "selective": "recomputes only the attention"}.get(plan.recompute, "")
        why = (f"the plan {rc}, so no layer input is saved for a recomputation" if plan.recompute != "full" else
               "sequence parallelism already splits them" if plan.sequence_parallel
               else "the plan has no tensor parallelism to split them over")
        out.append(Finding("training-setting-ignored", "warning",
                           f"splitting full recomputation's saved layer inputs over the tensor-parallel ranks is set, "
                           f"but {why}: it has no effect",
                           fix="remove it; it is read only with full recomputation, tensor parallelism and no "
                               "sequence parallelism",
                           field="training.distribute_saved_activations"))
    return out


def scaling(scenario: Scenario, catalog: Catalog | None = None, *, node_counts: list[int] | None = None) -> pd.DataFrame:
    """Best plan, time to train and MFU at several cluster sizes (whole nodes) [days, fraction].

    Each size is searched with the scenario's fixed ``parallelism`` fields (``data`` freed).
    Default sizes: 1/4x to 4x the scenario's node count in powers of two. With no row, ``attrs["reason"]``
    says why in words (the refusal when every size was refused, else that no plan fits in memory).
    """
    import pandas as pd

    cat = catalog or catalog_for(scenario)
    hw = resolve_hardware(scenario, cat)
    if node_counts is None:
        node_counts = sorted({max(1, int(hw.nodes * f)) for f in (0.25, 0.5, 1, 2, 4)})
    spec = dataclasses.replace(scenario.parallelism, auto=True, data=None)
    rows = []
    refusal: ScenarioError | None = None
    searched = False
    for nodes in node_counts:
        g = nodes * hw.gpus_per_node
        try:
            res = search_plans(scenario, cat, gpus=g, spec=spec)
        except ScenarioError as e:
            refusal = refusal or e
            continue
        searched = True
        fit = res.table[res.table["fits"]]
        if not len(fit):
            continue
        best = fit.iloc[0]
        rows.append({"gpus": g, "nodes": nodes, "plan": res.plan(best.to_dict()).label(),
                     "tokens_per_s": float(best["tokens_per_s"]), "mfu": float(best["mfu"]),
                     "training_days": float(best["training_days"]) if scenario.training.tokens else np.nan})
    df = pd.DataFrame(rows, columns=["gpus", "nodes", "plan", "tokens_per_s", "mfu", "training_days"])
    if not rows:  # why no size gave a plan: the refusal when every size was refused, else memory
        df.attrs["reason"] = _why_no_plan(refusal, searched, "at any of the sizes tried, "
                                          + ", ".join(f"{n:,}" for n in node_counts) + " nodes")
    return df
