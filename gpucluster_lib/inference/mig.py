"""Multi-Instance GPU (MIG): serving a small model on slices of an A100, H100 or H200.

A MIG profile ``<g>g.<m>gb`` gives an instance ``g`` of the GPU's 7 compute slices (its
"fraction of SMs") and ``m`` GB of memory on a share of its 8 memory slices (its "fraction of
memory", with the memory controllers and L2 of those slices). Profiles, fractions and the
instances per GPU are NVIDIA's *Multi-Instance GPU User Guide*, "Supported MIG Profiles"
(docs.nvidia.com/datacenter/tesla/mig-user-guide/supported-mig-profiles.html): the A100-SXM4-40GB
table (1g.5gb x 7, 1g.10gb x 4, 2g.10gb x 3, 3g.20gb x 2, 4g.20gb x 1, 7g.40gb x 1), the same
fractions renamed by memory for the 80 GB A100 and H100 (1g.10gb ... 7g.80gb), the 94 GB H100 NVL
(1g.12gb ... 7g.94gb) and the 141 GB H200 (1g.18gb ... 7g.141gb; the names also in AWS SageMaker's
AcceleratorPartitionConfig list).

The serving model runs one replica per instance on an accelerator scaled to the instance
(an approximation: peak throughput x g/7, memory bandwidth x memory slices/8, memory = the
profile's GB); :func:`serve_on_mig` then packs the instances ``instances_per_gpu`` to a GPU and
sizes the fleet of whole GPUs and nodes.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gpucluster_lib.errors import ScenarioError
from gpucluster_lib.findings import Finding
from gpucluster_lib.hardware.resolve import ClusterHardware
from gpucluster_lib.inference.fleet import per_mw, size_fleet

#: GPU compute slices and memory slices of a MIG-capable GPU (MIG User Guide, "Concepts").
COMPUTE_SLICES = 7
MEMORY_SLICES = 8


@dataclass(frozen=True)
class MigProfile:
    """One MIG profile: compute slices of 7, memory slices of 8, memory [GB], instances per GPU."""

    name: str
    compute_slices: int
    memory_slices: int
    memory_gb: float
    instances_per_gpu: int

    @property
    def compute_fraction(self) -> float:
        return self.compute_slices / COMPUTE_SLICES

    @property
    def memory_fraction(self) -> float:
        return self.memory_slices / MEMORY_SLICES

    def to_dict(self) -> dict[str, Any]:
        return {"profile": self.name, "compute_slices": self.compute_slices, "memory_slices": self.memory_slices,
                "memory_gb": self.memory_gb, "instances_per_gpu": self.instances_per_gpu,
                "compute_fraction": round(self.compute_fraction, 4), "memory_fraction": self.memory_fraction}


def _family(mem: dict[str, float]) -> tuple[MigProfile, ...]:
    """The six profiles of the A100/H100/H200 layout for the memory per memory-slice count."""
    return (MigProfile(f"1g.{mem[1]:g}gb", 1, 1, mem[1], 7), MigProfile(f"1g.{mem[2]:g}gb", 1, 2, mem[2], 4),
            MigProfile(f"2g.{mem[2]:g}gb", 2, 2, mem[2], 3), MigProfile(f"3g.{mem[4]:g}gb", 3, 4, mem[4], 2),
            MigProfile(f"4g.{mem[4]:g}gb", 4, 4, mem[4], 1), MigProfile(f"7g.{mem[8]:g}gb", 7, 8, mem[8], 1))


_A100_40 = _family({1: 5, 2: 10, 4: 20, 8: 40})
_GB80 = _family({1: 10, 2: 20, 4: 40, 8: 80})
_H100_94 = _family({1: 12, 2: 24, 4: 47, 8: 94})
_H200 = _family({1: 18, 2: 35, 4: 71, 8: 141})

#: MIG profiles by catalogue accelerator id (NVIDIA MIG User Guide, "Supported MIG Profiles").
PROFILES: dict[str, tuple[MigProfile, ...]] = {
    "a100-sxm4-40gb": _A100_40, "a100-pcie-40gb": _A100_40,
    "a100-sxm4-80gb": _GB80, "a100-pcie-80gb": _GB80,
    "h100-sxm5-80gb": _GB80, "h100-pcie-80gb": _GB80,
    "h100-nvl-94gb": _H100_94,
    "h200-sxm-141gb": _H200, "h200-nvl-141gb": _H200,
}

_PEAK_COLUMNS = ("fp64_tflops", "fp32_tflops", "tf32_tflops", "bf16_tflops", "fp16_tflops", "fp8_tflops", "int8_tops")


def profiles_for(acc_id: str) -> tuple[MigProfile, ...]:
    """The MIG profiles of an accelerator; a ScenarioError naming the field when it has none."""
    try:
        return PROFILES[acc_id]
    except KeyError:
        raise ScenarioError("inference.mig_profile",
                            f"{acc_id} has no MIG profiles in the workbook (A100, H100 and H200 do: "
                            f"{', '.join(sorted(PROFILES))}); drop inference.mig_profile") from None


def profile(acc_id: str, name: str) -> MigProfile:
    """One named profile (``1g.10gb``) of an accelerator."""
    for p in profiles_for(acc_id):
        if p.name == name:
            return p
    valid = ", ".join(p.name for p in profiles_for(acc_id))
    raise ScenarioError("inference.mig_profile", f"{name!r} is not a MIG profile of {acc_id}; use one of {valid} "
                        "or 'auto'")


def instance_accelerator(acc: dict[str, Any], p: MigProfile) -> dict[str, Any]:
    """The catalogue row of one MIG instance: peaks x g/7, HBM bandwidth x slices/8, the profile's memory,
    TDP x g/7 (an approximation; the GPU's power is shared), no NVLink (an instance serves alone)."""
    out = dict(acc)
    for col in _PEAK_COLUMNS:
        if out.get(col):
            out[col] = float(out[col]) * p.compute_fraction
    out["memory_bandwidth_gb_per_s"] = float(acc["memory_bandwidth_gb_per_s"]) * p.memory_fraction
    out["memory_gib"] = float(p.memory_gb)
    out["tdp_w"] = float(acc["tdp_w"]) * p.compute_fraction
    out["scaleup_bandwidth_gb_per_s"] = 0.0
    out["name"] = f"{acc['name']} MIG {p.name}"
    out["mig_profile"] = p.name   # what the serving findings name (an instance, not a GPU)
    return out


def larger_profiles(acc_id: str, name: str, by: str = "memory") -> list[str]:
    """The profiles of ``acc_id`` larger than ``name`` (smallest first) by ``by``: ``"memory"`` (what a model
    that does not fit on a ``name`` instance may fit on) or ``"compute"`` (more compute slices: faster steps)."""
    mine = profile(acc_id, name)
    if by == "compute":
        return [p.name for p in profiles_for(acc_id) if p.compute_slices > mine.compute_slices]
    return [p.name for p in profiles_for(acc_id) if p.memory_gb > mine.memory_gb]


def serve_on_mig(scenario: Any, catalog: Any, hw: Any, *, serve: Callable[..., Any], node: Any = None,
                 cluster_facility: Any = None, network: Any = None, fabric_gbps: float | None = None) -> Any:
    """Serve ``scenario`` one replica per MIG instance (``inference.mig_profile``; ``auto`` picks the
    profile that needs the fewest GPUs for the target, or gives the most tokens/s per GPU without one).

    ``serve`` is :func:`gpucluster_lib.inference.serve.serve` (passed in to keep the modules acyclic).
    Returns its ServingEstimate for whole GPUs: ``gpus`` = ceil(instances / instances per GPU),
    ``tokens_per_s_per_gpu`` = per instance x instances per GPU, the fleet's nodes, racks, power and
    CapEx of those GPUs, and ``mig`` with the profile.
    """
    inf = scenario.inference
    if inf.tensor_parallel not in (None, 1):
        raise ScenarioError("inference.tensor_parallel", "a MIG instance serves a replica alone: use "
                            "tensor_parallel 1 (or leave it out) with inference.mig_profile")
    acc = hw.accelerator
    names = [p.name for p in profiles_for(acc["id"])] if inf.mig_profile == "auto" else [inf.mig_profile]
    single = scenario.replace(inference__mig_profile=None, inference__tensor_parallel=1)
    options = []
    for name in names:
        p = profile(acc["id"], name)
        vhw = ClusterHardware(accelerator=instance_accelerator(acc, p), server=None,
                              gpus_per_node=hw.gpus_per_node * p.instances_per_gpu, nodes=hw.nodes)
        est = serve(single, catalog, facility_budget=False, hardware=vhw, fabric_gbps=fabric_gbps, node=node)
        options.append((p, est))

    def gpus_needed(item: tuple[MigProfile, Any]) -> tuple[float, int]:
        p, est = item
        if not est.meets_slo or not est.tokens_per_s_per_replica:
            return (math.inf, p.compute_slices)
        if est.target_tokens_per_s is None:
            return (-est.tokens_per_s_per_replica * p.instances_per_gpu, p.compute_slices)
        return (math.ceil(est.replicas / p.instances_per_gpu), p.compute_slices)

    p, est = min(options, key=gpus_needed)
    # not the whole-node MLPerf results: they measured whole GPUs, not a slice (gpucluster_lib/accuracy.py)
    findings = [f for f in est.findings if f.code not in ("inference-quick-estimate", "inference-accuracy-published-runs")]
    instances = est.replicas
    gpus = math.ceil(instances / p.instances_per_gpu) if instances else 0
    fleet = size_fleet(scenario, catalog, hw, replicas=gpus, tp=1, findings=findings, node=node,
                       cluster_facility=cluster_facility, network=network)
    per_gpu = est.tokens_per_s_per_replica * p.instances_per_gpu if est.tokens_per_s_per_replica else None
    fleet_tok = est.tokens_per_s_per_replica * instances if est.tokens_per_s_per_replica else None
    findings.append(Finding("inference-mig", "info",
                            f"served on MIG {p.name} instances of {acc['id']} ({p.compute_slices}/7 of the compute, "
                            f"{p.memory_gb:g} GB, {p.instances_per_gpu} a GPU): {instances} instances on {gpus} GPUs",
                            fix="the MIG profile \"auto\" picks the profile that needs the fewest GPUs",
                            field="inference.mig_profile"))
    return dataclasses.replace(
        est, accelerator=acc["id"], replicas=instances, gpus=fleet.gpus, nodes=fleet.nodes, racks=fleet.racks,
        it_power_kw=fleet.it_power_kw, facility_power_kw=fleet.facility_power_kw, fleet_tokens_per_s=fleet_tok,
        tokens_per_s_per_gpu=per_gpu,
        tokens_per_s_per_mw=per_mw(fleet_tok, fleet.it_power_kw) if fleet_tok and fleet.it_power_kw else None,
        tokens_per_s_per_rack=fleet_tok / fleet.racks if fleet_tok and fleet.racks else None,
        capex_usd=fleet.capex_usd,
        tokens_per_s_per_usd=fleet_tok / fleet.capex_usd if fleet_tok and fleet.capex_usd else None,
        findings=findings, mig={**p.to_dict(), "instances": instances,
                                "options": [{"profile": q.name, "meets_slo": e.meets_slo,
                                             "tokens_per_s_per_instance": e.tokens_per_s_per_replica,
                                             "gpus": (math.ceil(e.replicas / q.instances_per_gpu)
                                                      if e.meets_slo and e.replicas else None)}
                                            for q, e in options]})
