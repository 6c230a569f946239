"""Vision workloads (CNNs and ViTs): images/s for inference and training, video streams, epochs.

Presets live in ``data/vision_models.yaml`` (FLOPs per image and parameters from the
papers, torchvision counts). A scenario's ``model.preset`` naming one of them (or
``model.kind: cnn|vit``) routes ``gpucluster serve`` here and ``gpucluster estimate``
to :func:`estimate_training`.

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
from dataclasses import asdict, dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from gpucluster_lib.resources import data_path
from gpucluster_lib.errors import ScenarioError, UnknownIdError
from gpucluster_lib.findings import Finding, sort_findings
from gpucluster_lib.scenario import ModelSpec, Scenario
from gpucluster_lib.units import GB, SECONDS_PER_DAY, SECONDS_PER_HOUR, TERA

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
        data = yaml.safe_load(fh) or {}
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


@dataclass
class VisionServingEstimate:
    """A vision serving fleet (``gpucluster serve`` on a CNN/ViT scenario)."""

    model: str
    accelerator: str
    precision: str
    batch_size: int
    latency_s: float | None
    images_per_s_per_gpu: float | None
    video_fps: float | None
    streams_per_gpu: int | None
    target_images_per_s: float | None
    gpus: int
    nodes: int
    racks: int | None
    it_power_kw: float | None
    facility_power_kw: float | None
    images_per_s_per_mw: float | None
    efficiency: dict[str, float]
    findings: list[Finding] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "findings"}
        out["findings"] = [f.to_dict() for f in sort_findings(self.findings)]
        return out

    def summary(self) -> str:
        """A few lines for the terminal."""
        ips = "n/a" if self.images_per_s_per_gpu is None else f"{self.images_per_s_per_gpu:,.0f}"
        lines = [f"{self.model} on {self.accelerator}, {self.precision}, batch {self.batch_size}: {ips} images/s/GPU"
                 + (f", {self.streams_per_gpu} streams of {self.video_fps:g} fps per GPU" if self.video_fps else ""),
                 f"  {self.gpus} GPUs, {self.nodes} nodes, {self.racks} racks, "
                 f"{'n/a' if self.it_power_kw is None else f'{self.it_power_kw:,.1f}'} kW IT"]
        lines += [f"  [{f.severity}] {f.code}: {f.message}" for f in sort_findings(self.findings)]
        return "\n".join(lines)


def _vision_efficiency(scenario: Scenario) -> VisionEfficiency:
    eff = DEFAULT_VISION_EFFICIENCY
    if scenario.inference.vision_efficiency is not None:
        eff = replace(eff, compute_efficiency=scenario.inference.vision_efficiency)
    return eff


def serve_vision(scenario: Scenario, catalog: Any = None) -> VisionServingEstimate:
    """Size a vision serving fleet: images/s (or video streams x fps) over images/s per GPU."""
    from gpucluster_lib.hardware.resolve import catalog_for, resolve_hardware
    from gpucluster_lib.inference.fleet import per_mw, size_fleet

    cat = catalog or catalog_for(scenario)
    hw = resolve_hardware(scenario, cat)
    inf = scenario.inference
    m = resolve_vision(scenario.model)
    eff = _vision_efficiency(scenario)
    findings: list[Finding] = []
    batch = inf.batch_size or 64
    fps = inf.video_fps
    if inf.images_per_s is not None:
        target = inf.images_per_s
    elif inf.video_streams is not None:
        if fps is None:
            raise ScenarioError("inference.video_fps", "video_streams needs video_fps (frames per second per stream)")
        target = inf.video_streams * fps
    else:
        target = None
    if _peak(hw.accelerator, inf.precision, _INFER_PEAK) is None:
        findings.append(Finding("inference.precision_unsupported", "error",
                                f"{hw.accelerator['id']} has no dense {inf.precision} peak: it cannot serve at "
                                f"{inf.precision}", fix="use inference.precision fp16 or bf16",
                                field="inference.precision"))
        est = None
    else:
        est = estimate_inference(m, hw.accelerator, precision=inf.precision, batch_size=batch, video_fps=fps,
                                 efficiency=eff)
    if est is not None and target is not None:
        gpus = math.ceil(target / est.images_per_s_per_gpu)
    else:
        gpus = hw.gpus
        if est is not None:
            findings.append(Finding("inference.no_target", "info", f"no images_per_s or video_streams: sized the "
                                    f"scenario's {hw.gpus} GPUs", fix="set inference.images_per_s",
                                    field="inference.images_per_s"))
    fleet = size_fleet(scenario, cat, hw, replicas=gpus, tp=1, findings=findings)
    total = est.images_per_s_per_gpu * fleet.gpus if est else None
    return VisionServingEstimate(
        m.name, hw.accelerator["id"], inf.precision, batch, est.latency_s if est else None,
        est.images_per_s_per_gpu if est else None, fps, est.streams_per_gpu if est else None, target,
        fleet.gpus, fleet.nodes, fleet.racks, fleet.it_power_kw, fleet.facility_power_kw,
        per_mw(total, fleet.it_power_kw) if total else None, eff.to_dict(), findings)


# --------------------------------------------------------------------------- training


@dataclass
class VisionTrainingEstimate:
    """Training throughput and time of a vision model on the scenario's cluster."""

    model: str
    accelerator: str
    precision: str
    gpus: int
    flops_per_image: float
    images_per_s_per_gpu: float | None
    images_per_s: float | None
    epoch_time_s: float | None
    epochs: float
    dataset_images: float
    training_days: float | None
    mfu: float | None
    model_tflops_per_gpu: float | None
    efficiency: dict[str, float]
    findings: list[Finding] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "findings"}
        out["epoch_time_h"] = self.epoch_time_s / SECONDS_PER_HOUR if self.epoch_time_s else None
        out["fits"] = True
        out["findings"] = [f.to_dict() for f in sort_findings(self.findings)]
        return out


def estimate_training(scenario: Scenario, catalog: Any = None) -> VisionTrainingEstimate:
    """Images/s, epoch time and days for ``training.epochs`` over ``training.dataset_images``.

    images/s per GPU = peak x e / (3 x 2 MACs); cluster = per GPU x n x (scaling if n > 1);
    MFU = per-GPU model FLOP/s / peak (PaLM definition, Chowdhery et al. 2022, App. B).
    ``training.gemm_efficiency`` overrides ``compute_efficiency``. Defaults: 90 epochs of
    ImageNet-1k (1,281,167 images).
    """
    from gpucluster_lib.hardware.resolve import catalog_for, resolve_hardware

    cat = catalog or catalog_for(scenario)
    hw = resolve_hardware(scenario, cat)
    tr = scenario.training
    m = resolve_vision(scenario.model)
    eff = DEFAULT_VISION_EFFICIENCY
    if tr.gemm_efficiency is not None:
        eff = replace(eff, compute_efficiency=tr.gemm_efficiency)
    findings: list[Finding] = []
    epochs = tr.epochs or 90.0
    images = tr.dataset_images or IMAGENET_1K_TRAIN_IMAGES
    if tr.epochs is None:
        findings.append(Finding("training.default_epochs", "info", "training.epochs not set: 90 epochs assumed "
                                "(the ResNet-50 ImageNet recipe)", field="training.epochs"))
    flops_train = TRAINING_PASSES * m.flops_per_image
    peak = _peak(hw.accelerator, tr.precision, _TRAIN_PEAK)
    if peak is None:
        findings.append(Finding("training.precision_unsupported", "error",
                                f"{hw.accelerator['id']} has no dense {tr.precision} peak in the catalogue",
                                fix="use training.precision fp16 (V100 and older have no bf16)",
                                field="training.precision"))
        per_gpu = total = epoch_s = days = mfu = tflops = None
    else:
        per_gpu = peak * TERA * eff.compute_efficiency / flops_train
        scaling = eff.data_parallel_scaling if hw.gpus > 1 else 1.0
        total = per_gpu * hw.gpus * scaling
        epoch_s = images / total
        days = epochs * epoch_s / SECONDS_PER_DAY
        tflops = per_gpu * scaling * flops_train / TERA
        mfu = tflops / peak
    return VisionTrainingEstimate(m.name, hw.accelerator["id"], tr.precision, hw.gpus, m.flops_per_image, per_gpu,
                                  total, epoch_s, epochs, images, days, mfu, tflops, eff.to_dict(), findings)
