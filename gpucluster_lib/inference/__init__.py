"""LLM serving capacity: memory, prefill/decode latency, throughput against SLOs, fleet size.

Public API: :func:`serve` (scenario -> :class:`ServingEstimate`), :class:`ServingEfficiency`.
Submodules: ``precision`` (bytes and peaks), ``memory`` (weights, KV cache, max batch),
``latency`` (prefill/decode roofline), ``efficiency`` (achievable fractions, sourced),
``fleet`` (replicas to racks and power).
"""

from gpucluster_lib.inference.efficiency import DEFAULT_EFFICIENCY, ServingEfficiency
from gpucluster_lib.inference.serve import ServingEstimate, serve

__all__ = ["DEFAULT_EFFICIENCY", "ServingEfficiency", "ServingEstimate", "report_charts", "serve"]


def report_charts(result):  # noqa: ANN001, ANN201 - hook of gpucluster_lib.report.render
    """Charts for the batch report: throughput against latency and memory per GPU (LLM serving only)."""
    if not isinstance(result, ServingEstimate) or not result.sweep:
        return []
    from gpucluster_lib.charts.inference import memory_breakdown, throughput_latency

    return [throughput_latency(result.sweep_frame(), result.tpot_slo_s, result.batch),
            memory_breakdown(result.memory_per_gpu_bytes)]
