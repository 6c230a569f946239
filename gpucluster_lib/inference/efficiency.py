"""Serving efficiency parameters: the one place where achievable fractions live.

Every latency and throughput in :mod:`gpucluster_lib.inference` is a physical
quantity (FLOPs, bytes) divided by a catalogue peak (dense TFLOP/s at the serving
precision, HBM GB/s, NVLink GB/s) times one of the fractions below. They are the
same for every model, accelerator and traffic mix; a scenario may override any of
them under ``inference.*`` (see :func:`efficiency_from_spec`), and every result
echoes the values it used.

Sources and how each value was chosen
--------------------------------------
gemm_efficiency_16bit = 0.60
    Achieved fraction of the dense BF16/FP16 peak in serving GEMMs (prefill and
    large-batch decode). Large cuBLAS GEMMs reach 70-75% of dense peak on A100/H100;
    serving steps also run attention, norms and sampling, so we take 0.60. Not fitted
    to any serving row in ``shared/validation`` (there is no BF16 one).
gemm_efficiency_8bit = 0.45
    The same for FP8/INT8 GEMMs (fraction of the *FP8/INT8* dense peak). FP8 kernels
    keep a lower share of their doubled peak (per-tensor scaling, conversion and the
    same non-GEMM work, which does not speed up). Chosen from a source outside the
    validation file: NVIDIA NIM 1.8.0 benchmark, Llama-3.3-70B FP8 TP2 on 2x H100 SXM,
    5000 input tokens, concurrency 1: TTFT 406.77 ms (docs.nvidia.com/nim/benchmarking/
    llm/1.0.0/performance). 2 x 70.6e9 x 5000 + attention = 7.4e14 FLOP over
    2 x 1978.9 TFLOP/s in 0.407 s is 0.46 of peak. MLPerf v4.0 is then a check, not a fit.
memory_bandwidth_efficiency = 0.80
    Achieved fraction of the HBM datasheet bandwidth by decode GEMV and paged-attention
    kernels (stream benchmarks reach ~0.85-0.90 on H100; decode kernels are shorter).
decode_step_overhead_s = 0.003
    Per decode iteration: scheduler, sampling, kernel-launch gaps that CUDA graphs do
    not remove. From the same NIM table at concurrency 1: ITL 18.58 ms against a
    roofline of 35.3 GB / (3.35 TB/s x 0.80) = 13.2 ms plus 1.4 ms of all-reduce
    latency, leaving ~4 ms; we take 3 ms (TensorRT-LLM is leaner than NIM's server).
allreduce_latency_s = 8e-6
    Fixed cost of one small NVLink all-reduce (NCCL LL / TensorRT-LLM one-shot kernels:
    5-10 us on NVSwitch systems).
link_bandwidth_efficiency = 0.70
    Achieved fraction of the per-direction NVLink bandwidth (NCCL all-reduce bus
    bandwidth ~ 360 of 450 GB/s on H100 at large sizes, less at the MB sizes of TP).
memory_utilization = 0.90
    Fraction of HBM the engine may use for weights, workspace and KV cache
    (vLLM ``gpu_memory_utilization`` default 0.9; TensorRT-LLM
    ``kv_cache_free_gpu_mem_fraction`` default 0.9).
runtime_overhead_gib = 1.5
    CUDA context, cuBLAS workspaces and NCCL buffers outside the engine's pool [GiB].
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any


@dataclass(frozen=True)
class ServingEfficiency:
    """Achievable fractions and fixed overheads used by the serving model (see module doc)."""

    gemm_efficiency_16bit: float = 0.60
    gemm_efficiency_8bit: float = 0.45
    memory_bandwidth_efficiency: float = 0.80
    decode_step_overhead_s: float = 0.003
    allreduce_latency_s: float = 8e-6
    link_bandwidth_efficiency: float = 0.70
    memory_utilization: float = 0.90
    runtime_overhead_gib: float = 1.5

    def gemm_efficiency(self, compute_precision: str) -> float:
        """Fraction of the dense peak at ``compute_precision`` ('bf16', 'fp16', 'fp8', 'int8')."""
        return self.gemm_efficiency_8bit if compute_precision in ("fp8", "int8") else self.gemm_efficiency_16bit

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


DEFAULT_EFFICIENCY = ServingEfficiency()

#: ``inference.*`` scenario keys that override a :class:`ServingEfficiency` field.
OVERRIDE_FIELDS = tuple(f.name for f in fields(ServingEfficiency))


def efficiency_from_spec(spec: Any, base: dict[str, float] | None = None) -> ServingEfficiency:
    """The defaults, then ``base`` (a serving engine profile's values, :mod:`.engines`), then any non-null
    ``inference.<field>`` override."""
    changes = dict(base or {})
    changes.update({name: getattr(spec, name) for name in OVERRIDE_FIELDS if getattr(spec, name, None) is not None})
    return replace(DEFAULT_EFFICIENCY, **changes)
