"""LLM serving capacity: memory, prefill/decode latency, throughput against SLOs, fleet size.

Public API: :func:`serve` (scenario -> :class:`ServingEstimate`), :class:`ServingEfficiency`.
Submodules: ``precision`` (bytes and peaks), ``memory`` (weights, KV cache, max batch),
``latency`` (prefill/decode roofline), ``efficiency`` (achievable fractions, sourced),
``fleet`` (replicas to racks and power).
"""

from gpucluster_lib.inference.efficiency import DEFAULT_EFFICIENCY, ServingEfficiency
from gpucluster_lib.inference.serve import ServingEstimate, serve

__all__ = ["DEFAULT_EFFICIENCY", "ServingEfficiency", "ServingEstimate", "serve"]

