"""Training CNNs and ViTs: images/s, epoch time and days (model in
:mod:`gpucluster_lib.workloads.vision`)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from gpucluster_lib.findings import Finding, sort_findings
from gpucluster_lib.hardware.resolve import catalog_for, resolve_hardware
from gpucluster_lib.scenario import Scenario
from gpucluster_lib.units import SECONDS_PER_DAY, SECONDS_PER_HOUR, TERA
from gpucluster_lib.workloads.vision import (
    DEFAULT_VISION_EFFICIENCY,
    IMAGENET_1K_TRAIN_IMAGES,
    TRAINING_PASSES,
    TRAINING_PEAK_COLUMNS,
    dense_peak,
    resolve_vision,
)


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


def estimate_training(scenario: Scenario, catalog: Any = None, *, hardware: Any = None) -> VisionTrainingEstimate:
    """Images/s, epoch time and days for ``training.epochs`` over ``training.dataset_images``.

    images/s per GPU = peak x e / (3 x 2 MACs); cluster = per GPU x n x (scaling if n > 1);
    MFU = per-GPU model FLOP/s / peak (PaLM definition, Chowdhery et al. 2022, App. B).
    ``training.gemm_efficiency`` overrides ``compute_efficiency``. Defaults: 90 epochs of
    ImageNet-1k (1,281,167 images).
    """
    cat = catalog or catalog_for(scenario)
    hw = hardware if hardware is not None else resolve_hardware(scenario, cat)
    tr = scenario.training
    m = resolve_vision(scenario.model)
    eff = DEFAULT_VISION_EFFICIENCY
    if tr.gemm_efficiency is not None:
        eff = replace(eff, compute_efficiency=tr.gemm_efficiency)
    findings: list[Finding] = []
    epochs = tr.epochs or 90.0
    images = tr.dataset_images or IMAGENET_1K_TRAIN_IMAGES
    if tr.epochs is None:
        findings.append(Finding("training-default-epochs", "info", "the training epochs are not set: 90 epochs "
                                "assumed (the ResNet-50 ImageNet recipe)", field="training.epochs"))
    flops_train = TRAINING_PASSES * m.flops_per_image
    peak = dense_peak(hw.accelerator, tr.precision, TRAINING_PEAK_COLUMNS)
    if peak is None:
        findings.append(Finding("training-precision-unsupported", "error",
                                f"{hw.accelerator.get('name') or hw.accelerator['id']} has no dense {tr.precision} peak in the catalogue",
                                fix="train in fp16 (V100 and older have no bf16)",
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
