"""Serving CNNs and ViTs: a fleet sized for images/s or video streams (model in
:mod:`gpucluster_lib.workloads.vision`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

from gpucluster_lib.errors import ScenarioError
from gpucluster_lib.findings import Finding, sort_findings
from gpucluster_lib.hardware.resolve import catalog_for, resolve_hardware
from gpucluster_lib.inference.fleet import per_mw, size_fleet
from gpucluster_lib.scenario import Scenario
from gpucluster_lib.workloads.vision import (
    DEFAULT_VISION_EFFICIENCY,
    INFERENCE_PEAK_COLUMNS,
    VisionEfficiency,
    dense_peak,
    estimate_inference,
    resolve_vision,
)


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

    def summary(self, accelerator_name: str | None = None) -> str:
        """A few lines for the terminal; ``accelerator_name``: the accelerator's catalogue name, else its id."""
        def count(n: int | None, word: str) -> str:
            return ("n/a" if n is None else f"{n:,d}") + f" {word}{'' if n == 1 else 's'}"

        ips = "n/a" if self.images_per_s_per_gpu is None else f"{self.images_per_s_per_gpu:,.0f}"
        lines = [f"{self.model} on {accelerator_name or self.accelerator}, {self.precision}, batch {self.batch_size}: "
                 f"{ips} images/s/GPU"
                 + (f", {self.streams_per_gpu} streams of {self.video_fps:g} fps per GPU" if self.video_fps else ""),
                 f"  {count(self.gpus, 'GPU')}, {count(self.nodes, 'node')}, {count(self.racks, 'rack')}, "
                 f"{'n/a' if self.it_power_kw is None else f'{self.it_power_kw:,.1f}'} kW IT"]
        lines += [f"  [{f.severity}] {f.code}: {f.message}" for f in sort_findings(self.findings)]
        return "\n".join(lines)


def _vision_efficiency(scenario: Scenario) -> VisionEfficiency:
    eff = DEFAULT_VISION_EFFICIENCY
    if scenario.inference.vision_efficiency is not None:
        eff = replace(eff, compute_efficiency=scenario.inference.vision_efficiency)
    return eff


def serve_vision(scenario: Scenario, catalog: Any = None, *, hardware: Any = None, node: Any = None,
                 cluster_facility: Any = None, network: Any = None) -> VisionServingEstimate:
    """Size a vision serving fleet: images/s (or video streams x fps) over images/s per GPU.

    ``hardware``, ``node``, ``cluster_facility`` and ``network``: a Design's upstream results
    (computed when omitted).
    """
    cat = catalog or catalog_for(scenario)
    hw = hardware if hardware is not None else resolve_hardware(scenario, cat)
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
    if dense_peak(hw.accelerator, inf.precision, INFERENCE_PEAK_COLUMNS) is None:
        findings.append(Finding("inference-precision-unsupported", "error",
                                f"{hw.accelerator['id']} has no dense {inf.precision} peak: it cannot serve at "
                                f"{inf.precision}", fix="use the precision fp16 or bf16",
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
            findings.append(Finding("inference-no-target", "info", "no traffic target (images per second or video "
                                    f"streams): sized the scenario's {hw.gpus} GPUs",
                                    fix="set a traffic target: images per second or video streams",
                                    field="inference.images_per_s"))
    fleet = size_fleet(scenario, cat, hw, replicas=gpus, tp=1, findings=findings, node=node,
                       cluster_facility=cluster_facility, network=network,
                       target="inference.images_per_s" if inf.images_per_s is not None else "inference.video_streams")
    total = est.images_per_s_per_gpu * fleet.gpus if est else None
    return VisionServingEstimate(
        m.name, hw.accelerator["id"], inf.precision, batch, est.latency_s if est else None,
        est.images_per_s_per_gpu if est else None, fps, est.streams_per_gpu if est else None, target,
        fleet.gpus, fleet.nodes, fleet.racks, fleet.it_power_kw, fleet.facility_power_kw,
        per_mw(total, fleet.it_power_kw) if total else None, eff.to_dict(), findings)
