"""Vision workloads (CNNs and ViTs): images/s for inference and training, video streams, epochs.

Presets live in ``data/vision_models.yaml`` (FLOPs per image and parameters from the
papers, torchvision counts). A scenario's ``model.preset`` naming one of them (or
``model.kind: cnn|vit``) routes ``gpucluster serve`` to
:func:`gpucluster_lib.inference.vision.serve_vision` and ``gpucluster estimate`` to
:func:`gpucluster_lib.training.vision.estimate_training`.

Model
-----
One forward pass costs ``2 x MACs`` FLOPs (1 multiply-accumulate = 2 FLOPs); training
costs three forward passes (forward + backward of activations and weights, Kaplan et al.
2020 Sec. 2.1). At batch B, one forward step takes

    t(B) = max(weight bytes / (HBM x e_bw), B x 2 MACs / (peak x e)) + t_batch

and images/s = B / t(B). Training: images/s per GPU = peak x e / (3 x 2 MACs); a cluster
of n > 1 GPUs runs data-parallel at ``data_parallel_scaling`` of linear. Video: streams
per GPU = floor(images/s / frames per stream per second).

Efficiency (fraction of the dense peak at the compute precision), one value for CNNs and
ViTs, chosen from NVIDIA DeepLearningExamples ResNet-50 v1.5 PyTorch (README, "Training
performance: NVIDIA DGX A100 (8x A100 80GB)", pytorch-21.03): 1 GPU, mixed precision,
2,470 img/s x 3 x 8.18 GFLOP = 60.6 TFLOP/s = 0.194 of 312 -> ``compute_efficiency`` 0.20.
``batch_overhead_s`` 0.010: the same README's batch-1 inference latencies (12.8 ms on
V100, 13.0 ms on T4 in PyTorch eager, of which < 1 ms is arithmetic). ``data_parallel_scaling``
0.85: its 8-GPU mixed-precision run, 16,621 / (8 x 2,470) = 0.84 (data loading, all-reduce).
Checks against other figures are in ``tests/test_vision.py``.
"""

from __future__ import annotations

import math
from dataclasses import MISSING, asdict, dataclass, fields
from functools import lru_cache
from pathlib import Path
from typing import Any

from gpucluster_lib.errors import ScenarioError, UnknownIdError
from gpucluster_lib.findings import Finding
from gpucluster_lib.resources import data_path, load_yaml
from gpucluster_lib.scenario import ModelSpec, Scenario
from gpucluster_lib.units import GB, TERA

VISION_PATH = data_path("vision_models.yaml")
#: ImageNet-1k training set [images] (Russakovsky et al. 2015, Table 2: 1,281,167).
IMAGENET_1K_TRAIN_IMAGES = 1_281_167
#: Forward + backward = 3 forward passes (Kaplan et al. 2020, Sec. 2.1).
TRAINING_PASSES = 3
FLOPS_PER_MAC = 2

#: Training precision -> the accelerator catalogue column of its dense peak [TFLOP/s].
TRAINING_PEAK_COLUMNS = {"bf16": "bf16_tflops", "fp16": "fp16_tflops", "fp8": "fp8_tflops", "tf32": "tf32_tflops",
               "fp32": "fp32_tflops"}
#: Serving precision -> the accelerator catalogue column of its dense peak [TFLOP/s; TOP/s for int8].
INFERENCE_PEAK_COLUMNS = {"bf16": "bf16_tflops", "fp16": "fp16_tflops", "fp8": "fp8_tflops", "int8": "int8_tops"}
_WEIGHT_BYTES = {"bf16": 2, "fp16": 2, "fp8": 1, "int8": 1, "int4": 0.5, "tf32": 4, "fp32": 4}


@dataclass(frozen=True)
class VisionEfficiency:
    """Achievable fractions for vision models (sources in the module doc)."""

    compute_efficiency: float = 0.20
    memory_bandwidth_efficiency: float = 0.80
    batch_overhead_s: float = 0.010
    data_parallel_scaling: float = 0.85

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


DEFAULT_VISION_EFFICIENCY = VisionEfficiency()


@dataclass(frozen=True)
class VisionModel:
    id: str
    name: str
    kind: str
    params: int
    macs_per_image: float
    resolution: int
    source: str

    @property
    def flops_per_image(self) -> float:
        """Forward FLOPs per image at the native resolution [FLOP] = 2 x MACs."""
        return FLOPS_PER_MAC * self.macs_per_image


@lru_cache(maxsize=2)
def load_vision_presets(path: str | None = None) -> dict[str, dict[str, Any]]:
    with Path(path or VISION_PATH).open(encoding="utf-8") as fh:
        data = load_yaml(fh) or {}
    for key, entry in data.items():
        if not entry.get("source"):
            raise ScenarioError(f"vision_models.yaml:{key}", "every preset needs a source")
    return data


def _normalise(name: str) -> str:
    return name.lower().replace("_", "").replace("-", "").replace("/", "")


def _lookup(preset: str) -> str | None:
    presets = load_vision_presets()
    if preset in presets:
        return preset
    by_norm = {_normalise(k): k for k in presets}
    return by_norm.get(_normalise(preset))


def is_vision_model(spec: ModelSpec | str | None) -> bool:
    """True when the model is a vision preset or declares ``kind: cnn|vit``."""
    if spec is None:
        return False
    if isinstance(spec, str):
        return _lookup(spec) is not None
    return spec.kind in ("cnn", "vit") or (spec.preset is not None and _lookup(spec.preset) is not None)


def resolve_vision(spec: ModelSpec | str, *, path: str = "model.preset") -> VisionModel:
    """The :class:`VisionModel` of a preset id (``resnet50``, ``vit-l16``; ``ResNet-50`` works too)."""
    preset = spec if isinstance(spec, str) else spec.preset
    if preset is None:
        raise ScenarioError(path, f"a vision model needs model.preset, one of: {', '.join(load_vision_presets())}")
    key = _lookup(preset)
    if key is None:
        raise UnknownIdError("vision preset", preset, load_vision_presets(), path)
    e = load_vision_presets()[key]
    return VisionModel(key, e["name"], e["kind"], int(e["params"]), float(e["macs_per_image"]),
                       int(e["resolution"]), e["source"])


# --------------------------------------------------------------------------- settings a vision model ignores

#: The scenario keys only a language model reads, by the stage that would read them, each with
#: its name in words (the app's Training tab labels where it has the control). A vision model
#: is its preset (:func:`resolve_vision`); its training reads ``training.precision``,
#: ``gemm_efficiency``, ``epochs`` and ``dataset_images`` (:mod:`gpucluster_lib.training.vision`),
#: its serving the precision, batch size, images/s or video streams, video frame rate and
#: ``vision_efficiency`` (:mod:`gpucluster_lib.inference.vision`). ``training.tokens`` and
#: ``deadline_days`` are not listed: the storage and reliability stages read them for any model.
LANGUAGE_MODEL_SETTINGS: dict[str, dict[str, str]] = {
    "model": {
        "layers": "The number of layers", "hidden_size": "The hidden size",
        "attention_heads": "The number of attention heads", "kv_heads": "The number of KV heads",
        "head_dim": "The attention head size", "ffn_hidden_size": "The feed-forward size",
        "ffn_type": "The feed-forward type", "vocab_size": "The vocabulary size",
        "seq_length": "The sequence length", "tied_embeddings": "Tied embeddings",
        "position_embedding": "The position embedding", "bias": "The linear layers' biases",
        "norm": "The normalisation", "num_experts": "The number of experts",
        "experts_per_token": "The experts per token", "expert_ffn_hidden_size": "The expert feed-forward size",
        "shared_experts": "The shared experts", "moe_layer_interval": "The spacing of the mixture-of-experts layers",
        "dense_layers": "The leading dense layers", "q_lora_rank": "The latent attention's query rank",
        "kv_lora_rank": "The latent attention's KV rank", "qk_rope_head_dim": "The latent attention's RoPE size",
        "v_head_dim": "The value head size", "hidden_dropout": "The hidden dropout",
        "attention_dropout": "The attention dropout",
    },
    "training": {
        "flash_attention": "Fused (flash) attention", "framework": "The training framework",
        "efficiency": "The training efficiency overrides", "param_gather_precision": "The parameter gather precision",
        "grad_reduce_precision": "The gradient reduction precision",
        "zero3_max_live_parameters": "The ZeRO-3 live-parameter limit",
        "fp8_params": "FP8 weights", "distribute_saved_activations": "The distributed saved activations",
        "optimizer_state_precision": "The optimizer state precision", "master_weights": "The master weights",
        "cross_entropy_loss": "The cross-entropy loss implementation",
        "defer_output_wgrad": "The output-layer weight-gradient deferral",
        "wgrad_deferral_limit": "The weight-gradient deferral limit",
        "transformer_engine": "The Transformer Engine release",
    },
    "parallelism": {
        "auto": "The automatic plan search", "tensor": "The tensor parallelism (TP)",
        "pipeline": "The pipeline parallelism (PP)", "data": "The data parallelism",
        "context": "The context parallelism (CP)", "expert": "The expert parallelism",
        "virtual_stages": "The virtual pipeline stages", "micro_batch_size": "The micro-batch size",
        "global_batch_size": "The global batch size", "recompute": "The recomputation",
        "sequence_parallel": "Sequence parallelism", "zero_stage": "The ZeRO stage",
        "overlap_p2p_comm": "The pipeline transfer overlap",
        "distributed_optimizer": "The distributed optimizer",
        "allow_tp_across_nodes": "Tensor parallelism across nodes",
        "dp_overlap": "The hidden share of the data-parallel communication",
        "sharded_collectives": "The sharded collectives", "pipeline_layers": "The layers of each pipeline stage",
        "first_stage_layers": "The first pipeline stage's layers", "last_stage_layers": "The last pipeline stage's layers",
        "embedding_in_pipeline_split": "The embedding's share of the pipeline split",
        "loss_in_pipeline_split": "The loss's share of the pipeline split",
        "tp_comm_overlap": "The TP communication overlap", "overlap_grad_reduce": "The overlapped gradient reduction",
        "overlap_param_gather": "The overlapped parameter gather",
    },
    "inference": {
        "tensor_parallel": "The serving tensor parallelism", "input_tokens": "The prompt length",
        "output_tokens": "The output length", "requests_per_s": "The request rate",
        "tokens_per_s": "The token rate", "ttft_slo_s": "The time-to-first-token target",
        "tpot_slo_s": "The time-per-output-token target", "arrival": "The request arrival",
        "slo_percentile": "The latency percentile", "output_tokens_cv": "The spread of output lengths",
        "kv_cache_scheduling": "The KV-cache scheduling", "max_num_tokens": "The engine's token budget",
        "kv_cache_precision": "The KV-cache precision", "memory_bandwidth_efficiency": "The HBM bandwidth efficiency",
        "decode_step_overhead_s": "The fixed time per decode step", "allreduce_latency_s": "The all-reduce latency",
        "link_bandwidth_efficiency": "The NVLink bandwidth efficiency", "memory_utilization": "The engine's memory share",
        "runtime_overhead_gib": "The runtime memory overhead", "mig_profile": "The MIG profile",
    },
}

#: What the training and the serving stage read of the scenario sections above.
_STAGE_SECTIONS = {"training": ("model", "training", "parallelism"), "serving": ("model", "inference")}
_STAGE_READS = {"training": "trains for a number of epochs over a data set of images",
                "serving": "is served at a target in images per second or video streams"}


def ignored_language_settings(scenario: Scenario, stage: str) -> list[Finding]:
    """A warning for every key of ``scenario`` that only a language model reads, when its model is
    a vision model (:func:`is_vision_model`): the key is set (differs from its default) and has no
    effect. ``stage``: "training" (model, training and parallelism keys) or "serving" (model and
    inference keys); a model key is reported by both stages, with the same code and message, so
    the design lists it once. No findings for a language model."""
    if not is_vision_model(scenario.model):
        return []
    m = resolve_vision(scenario.model)
    found = []
    for section in _STAGE_SECTIONS[stage]:
        spec = getattr(scenario, section)
        defaults = {f.name: f for f in fields(spec)}
        for key, name in LANGUAGE_MODEL_SETTINGS[section].items():
            f = defaults[key]
            default = f.default_factory() if f.default_factory is not MISSING else f.default
            if getattr(spec, key) == default:
                continue
            found.append(Finding(
                "workload-setting-ignored", "warning",
                f"{name} is set, but {m.name} is a vision model: only language models read it, so it has no effect",
                fix="remove it; a vision model's architecture comes from its preset" if section == "model"
                else f"remove it; a vision model {_STAGE_READS[stage]}", field=f"{section}.{key}"))
    return found


def dense_peak(acc: dict[str, Any], precision: str, table: dict[str, str]) -> float | None:
    """The accelerator's dense peak at ``precision`` [TFLOP/s, TOP/s for int8], read from the
    catalogue column ``table`` names (:data:`TRAINING_PEAK_COLUMNS` or
    :data:`INFERENCE_PEAK_COLUMNS`; int4 weights compute at the bf16 rate); None when the
    precision has no column or the accelerator no positive value in it."""
    col = table.get("bf16" if precision == "int4" else precision)
    v = acc.get(col) if col else None
    if v is None or (isinstance(v, float) and math.isnan(v)) or v <= 0:
        return None
    return float(v)


# --------------------------------------------------------------------------- inference


@dataclass(frozen=True)
class VisionInference:
    """Per-GPU inference of a vision model at one batch size."""

    model: str
    accelerator: str
    precision: str
    batch_size: int
    latency_s: float
    images_per_s_per_gpu: float
    video_fps: float | None
    streams_per_gpu: int | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def estimate_inference(model: VisionModel | str, accelerator: dict[str, Any], *, precision: str = "fp16",
                       batch_size: int = 64, video_fps: float | None = None,
                       efficiency: VisionEfficiency = DEFAULT_VISION_EFFICIENCY) -> VisionInference:
    """Images/s per GPU at ``batch_size`` and video streams per GPU at ``video_fps`` (module doc).

    Parameters
    ----------
    model : preset id or :class:`VisionModel`
    accelerator : catalogue row (dict) with the peak column of ``precision`` and memory bandwidth
    precision : 'bf16', 'fp16', 'fp8', 'int8' (int4: weight-only, 16-bit compute)
    batch_size : images per forward pass [images]
    video_fps : frames per second of one stream [1/s]

    Raises
    ------
    ScenarioError
        when the accelerator has no dense peak at ``precision`` or batch_size < 1.
    """
    m = resolve_vision(model) if isinstance(model, str) else model
    if batch_size < 1:
        raise ScenarioError("inference.batch_size", f"must be at least 1, got {batch_size}")
    peak = dense_peak(accelerator, precision, INFERENCE_PEAK_COLUMNS)
    if peak is None:
        raise ScenarioError("inference.precision", f"{accelerator['id']} has no dense {precision} peak in the catalogue")
    compute = peak * TERA * efficiency.compute_efficiency
    bw = float(accelerator["memory_bandwidth_gb_per_s"]) * GB * efficiency.memory_bandwidth_efficiency
    t = max(m.params * _WEIGHT_BYTES[precision] / bw, batch_size * m.flops_per_image / compute) \
        + efficiency.batch_overhead_s
    ips = batch_size / t
    streams = int(ips // video_fps) if video_fps else None
    return VisionInference(m.id, accelerator["id"], precision, batch_size, t, ips, video_fps, streams)
