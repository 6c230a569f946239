"""A whole benchmark run of identical requests on an in-flight batching engine, step by step.

A throughput benchmark such as TensorRT-LLM's ``gptManagerBenchmark`` queues N requests of one length
at t = 0 (``--request_rate -1``) and reports the output tokens of all of them over the run's whole
time, first request to last response (``benchmarks/cpp/gptManagerBenchmark.cpp``, the recorder's
``calculateMetrics``: ``mTokenThroughput = totalOutputTokens / (mTotalLatency / 1000)``). So the
start-up, while the batch fills, and the drain, while the last requests finish with a thinning batch,
count; the steady state of :mod:`.latency` does not have them. With few requests per slot (2,000
requests of 2,048 output tokens on 249 slots: eight full waves and a ninth of eight requests) they
move the rate by several per cent.

:func:`trace_run` walks the scheduler: each iteration every sequence in generation takes one token of
the budget and produces one token; the budget left goes to prompt chunks of the requests in their
context phase, oldest first, then to new requests while a slot is free (chunked context: a prompt may
span iterations; the iteration that finishes a prompt produces its first token). A slot is a request
the KV pool holds at its full length (``no_evict``). Iterations in which nothing is admitted or
chunked are merged up to the next finish, so a run of many waves costs a few thousand groups.

:func:`run_time` prices a trace with the step model of :func:`.latency.mixed_step_times`: per group,
``max(weights, GEMM FLOPs) + max(KV read, attention FLOPs) + TP all-reduces + overhead + host``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from gpucluster_lib.errors import GpuClusterError
from gpucluster_lib.inference.efficiency import ServingEfficiency
from gpucluster_lib.inference.latency import (
    ReplicaHardware,
    decode_attention_flops,
    linear_flops_per_token,
    prefill_attention_flops,
    tp_comm_time,
    weights_read_bytes,
)
from gpucluster_lib.units import GB, TERA
from gpucluster_lib.workloads.transformer import TransformerArch


@dataclass(frozen=True)
class RunTrace:
    """The iterations of one run, in groups of identical work (arrays over the groups)."""

    requests: int
    output_tokens: int
    steps: np.ndarray          # iterations in the group
    tokens: np.ndarray         # tokens an iteration: decode + prompt chunk
    context: np.ndarray        # sum over the group's iterations of the context the decode sequences read [tokens]
    prefill_square: np.ndarray  # sum over the group's prompt chunks from d to d + k of (d + k)^2 - d^2 [tokens^2]
    in_flight: np.ndarray      # sum over the group's iterations of the sequences in flight

    @property
    def iterations(self) -> int:
        return int(self.steps.sum())

    @property
    def mean_in_flight(self) -> float:
        """Sequences in flight per iteration, on average over the run."""
        return float(self.in_flight.sum() / self.steps.sum())


@lru_cache(maxsize=64)
def trace_run(requests: int, input_tokens: int, output_tokens: int, slots: int, budget: int) -> RunTrace:
    """The run of ``requests`` requests of ``input_tokens`` + ``output_tokens`` with ``slots`` sequences
    at most and ``budget`` tokens an iteration (module doc)."""
    if min(requests, input_tokens, output_tokens, slots, budget) < 1:
        raise GpuClusterError("a benchmark run needs at least one request, one input and output token, one slot "
                              "and one token of budget an iteration")
    lin, lout = input_tokens, output_tokens
    waiting, finished = requests, 0
    cohorts: list[list[int]] = []     # [count, prompt tokens done, output tokens done], oldest first
    rows: list[tuple[int, int, float, float, float]] = []
    while finished < requests:
        running = sum(c[0] for c in cohorts)
        n_gen = sum(c[0] for c in cohorts if c[1] >= lin)
        prefilling = any(c[1] < lin for c in cohorts)
        if not prefilling and not (waiting and running < slots and budget > n_gen):
            # pure decode up to the next finish: merge the iterations
            k = min(lout - c[2] for c in cohorts)
            ctx0 = sum(c[0] * (lin + c[2]) for c in cohorts)
            rows.append((k, n_gen, k * ctx0 + n_gen * k * (k - 1) / 2, 0.0, float(k * n_gen)))
            for c in cohorts:
                c[2] += k
        else:
            left = budget - n_gen
            ctx = float(sum(c[0] * (lin + c[2]) for c in cohorts if c[1] >= lin))
            square = 0.0
            chunked = 0
            new: list[list[int]] = []
            for c in cohorts:
                if c[1] >= lin or left <= 0:
                    new.append(c)
                    continue
                per = lin - c[1]
                full = min(c[0], left // per)
                if full:
                    new.append([full, lin, c[2] + 1])       # prompt done: its first token
                    square += full * (lin ** 2 - c[1] ** 2)
                    left -= full * per
                    chunked += full * per
                rest = c[0] - full
                if rest and left > 0:
                    new.append([1, c[1] + left, c[2]])
                    square += (c[1] + left) ** 2 - c[1] ** 2
                    chunked += left
                    left = 0
                    rest -= 1
                if rest:
                    new.append([rest, c[1], c[2]])
            gen_before = {id(c) for c in cohorts if c[1] >= lin}
            for c in new:   # the decode sequences of this iteration produce their token
                if id(c) in gen_before:
                    c[2] += 1
            running = sum(c[0] for c in new)
            if waiting and running < slots and left > 0:
                full = min(waiting, slots - running, left // lin)
                if full:
                    new.append([full, lin, 1])
                    square += full * lin ** 2
                    left -= full * lin
                    chunked += full * lin
                    waiting -= full
                    running += full
                if waiting and running < slots and left > 0:
                    new.append([1, left, 0])
                    square += left ** 2
                    chunked += left
                    waiting -= 1
                    running += 1
                    left = 0
            rows.append((1, n_gen + chunked, ctx, square, float(running)))
            cohorts = new
        done = [c for c in cohorts if c[2] >= lout]
        finished += sum(c[0] for c in done)
        cohorts = [c for c in cohorts if c[2] < lout]
        merged: list[list[int]] = []
        for c in cohorts:
            if merged and merged[-1][1:] == c[1:]:
                merged[-1][0] += c[0]
            else:
                merged.append(c)
        cohorts = merged
    a = np.array(rows, dtype=float)
    return RunTrace(requests, output_tokens, a[:, 0], a[:, 1], a[:, 2], a[:, 3], a[:, 4])


def run_gpu_time(trace: RunTrace, arch: TransformerArch, *, weights_bytes_per_gpu: float,
                 kv_bytes_per_token_per_gpu: float, hw: ReplicaHardware, gemm_efficiency: float,
                 eff: ServingEfficiency) -> float:
    """The GPU's time of the whole run [s]: the step model of :mod:`.latency` summed over the groups."""
    compute = hw.peak_tflops * TERA * gemm_efficiency
    bw = hw.memory_bandwidth_gb_per_s * GB * eff.memory_bandwidth_efficiency
    w = weights_read_bytes(arch, weights_bytes_per_gpu, trace.tokens) / bw
    gemm = trace.steps * np.maximum(w, trace.tokens * linear_flops_per_token(arch) / hw.tp / compute)
    # decode reads each group's summed context; a prompt chunk from d to d + k costs the causal
    # 2 layers q_dim ((d + k)^2 - d^2), summed in prefill_square (latency module doc)
    attn_flops = decode_attention_flops(arch, trace.context) + prefill_attention_flops(arch, 1.0) * trace.prefill_square
    attention = np.maximum(trace.context * kv_bytes_per_token_per_gpu / bw, attn_flops / hw.tp / compute)
    comm = trace.steps * tp_comm_time(arch, trace.tokens, hw, eff)
    return float(np.sum(gemm + attention + comm + trace.steps * eff.decode_step_overhead_s))


def run_host_time(trace: RunTrace, engine: Any, streaming: bool = False) -> float:
    """The engine's host time over the run [s]: F per iteration and c per sequence in flight per iteration
    (the streamed c when every response streams token by token)."""
    return float(engine.iteration_host_time_s * trace.steps.sum()
                 + engine.per_sequence(streaming) * trace.in_flight.sum())


__all__ = ["RunTrace", "run_gpu_time", "run_host_time", "trace_run"]
