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
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from gpucluster_lib.errors import ScenarioError, UnknownIdError
from gpucluster_lib.resources import data_path, load_yaml
from gpucluster_lib.scenario import ModelSpec
from gpucluster_lib.units import GB, TERA

VISION_PATH = data_path("vision_models.yaml")
#: ImageNet-1k training set [images] (Russakovsky et al. 2015, Table 2: 1,281,167).
IMAGENET_1K_TRAIN_IMAGES = 1_281_167
#: Forward + backward = 3 forward passes (Kaplan et al. 2020, Sec. 2.1).
TRAINING_PASSES = 3
FLOPS_PER_MAC = 2

_TRAIN_PEAK = {"bf16": "bf16_tflops", "fp16": "fp16_tflops", "fp8": "fp8_tflops", "tf32": "tf32_tflops",
               "fp32": "fp32_tflops"}
_INFER_PEAK = {"bf16": "bf16_tflops", "fp16": "fp16_tflops", "fp8": "fp8_tflops", "int8": "int8_tops"}
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


def _peak(acc: dict[str, Any], precision: str, table: dict[str, str]) -> float | None:
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
    peak = _peak(accelerator, precision, _INFER_PEAK)
    if peak is None:
        raise ScenarioError("inference.precision", f"{accelerator['id']} has no dense {precision} peak in the catalogue")
    compute = peak * TERA * efficiency.compute_efficiency
    bw = float(accelerator["memory_bandwidth_gb_per_s"]) * GB * efficiency.memory_bandwidth_efficiency
    t = max(m.params * _WEIGHT_BYTES[precision] / bw, batch_size * m.flops_per_image / compute) \
        + efficiency.batch_overhead_s
    ips = batch_size / t
    streams = int(ips // video_fps) if video_fps else None
    return VisionInference(m.id, accelerator["id"], precision, batch_size, t, ips, video_fps, streams)
