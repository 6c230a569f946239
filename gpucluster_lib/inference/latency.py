"""Prefill and decode time of a tensor-parallel replica, vectorised over batch sizes.

All functions take numpy arrays of batch sizes and return seconds.

FLOPs
    A token through the linear layers costs ``2 N`` FLOPs, N the active parameters that
    are multiplied (everything but the input-embedding lookup) (Kaplan et al. 2020,
    Sec. 2.1, C_forward = 2N). Causal attention over a context of c tokens costs
    ``4 layers c q_dim`` per generated token (QK^T and AV, 2 FLOPs per MAC) and
    ``2 layers s^2 q_dim`` for a prompt of s tokens (half of the full s x s product).
Decode step (Pope et al. 2023, Sec. 2; the "roofline" of Williams et al. 2009)
    GEMMs: ``max(W / (B_hbm e_bw), tokens 2N / (TP peak e_gemm))``: the weights are read
    once per step whatever the batch, the work grows with it. Attention: the KV cache of
    every sequence is read once, ``max(bytes / (B_hbm e_bw), FLOPs / (peak e_gemm))``.
    TP: two all-reduces of ``tokens x h`` 16-bit activations per layer (Shoeybi et al.
    2019, Fig. 3), ring cost ``2 (p-1)/p x bytes / (link e_link) + latency``.
    Plus a fixed per-step overhead, and the serving engine's host time per iteration ``F + c B``
    (:mod:`.engines`; zero for the generic engine), added to the GPU's time: the engine's loop waits
    for a step's tokens before it schedules the next step.
Continuous batching (Yu et al. 2022, Orca; Agrawal et al. 2024, Sarathi-Serve)
    In steady state with B sequences in flight, ``B / L_out`` sequences finish per step
    and as many prompts are prefilled, so each *mixed* step carries B decode tokens and
    ``B L_in / L_out`` prompt tokens (chunked prefill). TPOT is the mixed-step time;
    output tokens/s per replica = B / TPOT; TTFT = one mixed step of waiting plus the
    prompt's own prefill on an otherwise idle replica (queueing: :mod:`.queueing`).
Spread of output lengths (``output_tokens_cv`` = c, standard deviation over the mean)
    The sequences in flight at a given step are a length-biased sample: a request that
    generates L tokens stays L steps, so it is caught in flight in proportion to L, and its
    elapsed output at that moment is uniform on (0, L). The mean context of a sequence in
    flight is therefore ``L_in + E[L^2] / (2 E[L]) = L_in + (1 + c^2) L_out / 2`` (the
    inspection paradox of renewal theory: Cox 1962, *Renewal Theory*, the backward recurrence
    time; Feller 1971, *An Introduction to Probability Theory and Its Applications*, Vol. II,
    the waiting-time paradox). It sets the KV bytes and the attention FLOPs of a decode step;
    c = 0 gives the plain ``L_in + L_out / 2``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from gpucluster_lib.inference.efficiency import ServingEfficiency
from gpucluster_lib.inference.precision import ACTIVATION_BYTES
from gpucluster_lib.units import GB, TERA
from gpucluster_lib.workloads.transformer import TransformerArch


@dataclass(frozen=True)
class ReplicaHardware:
    """Per-GPU peaks used by the timing model (already at the compute precision)."""

    peak_tflops: float                  # dense, at the compute precision [TFLOP/s]
    memory_bandwidth_gb_per_s: float    # HBM [GB/s]
    link_gb_per_s: float                # TP link, one direction [GB/s]
    tp: int


def linear_flops_per_token(arch: TransformerArch) -> float:
    """2 x (active parameters - input embedding) [FLOP/token] (Kaplan et al. 2020)."""
    return 2.0 * (arch.active_params() - arch.vocab_size * arch.hidden_size)


def decode_attention_flops(arch: TransformerArch, context: np.ndarray | float) -> np.ndarray:
    """4 x layers x context x q_dim per generated token [FLOP]."""
    return 4.0 * arch.layers * np.asarray(context, dtype=float) * arch.q_dim


def prefill_attention_flops(arch: TransformerArch, prompt: float) -> float:
    """2 x layers x s^2 x q_dim for a causal prompt of s tokens [FLOP]."""
    return 2.0 * arch.layers * prompt**2 * arch.q_dim


def allreduce_time(bytes_: np.ndarray | float, hw: ReplicaHardware, eff: ServingEfficiency) -> np.ndarray:
    """Ring all-reduce over TP GPUs [s]: 2 (p-1)/p x bytes / (link x e) + latency; 0 for TP 1.

    The bandwidth term of the ring algorithm (Thakur, Rabenseifner and Gropp 2005,
    "Optimization of collective communication operations in MPICH", IJHPCA 19(1); Patarasuk
    and Yuan 2009, JPDC 69(2)); ``link_gb_per_s`` is the per-GPU NVLink bandwidth in one
    direction [GB/s] and ``allreduce_latency_s`` the fixed cost per call [s].
    """
    if hw.tp <= 1:
        return np.zeros_like(np.asarray(bytes_, dtype=float))
    p = hw.tp
    return 2 * (p - 1) / p * np.asarray(bytes_, dtype=float) / (hw.link_gb_per_s * GB * eff.link_bandwidth_efficiency) \
        + eff.allreduce_latency_s


def tp_comm_time(arch: TransformerArch, tokens: np.ndarray | float, hw: ReplicaHardware,
                 eff: ServingEfficiency) -> np.ndarray:
    """Two all-reduces of tokens x h activations per layer [s] (Shoeybi et al. 2019)."""
    return 2 * arch.layers * allreduce_time(np.asarray(tokens, dtype=float) * arch.hidden_size * ACTIVATION_BYTES,
                                            hw, eff)


def weights_read_bytes(arch: TransformerArch, weights_bytes_per_gpu: float, batch: np.ndarray) -> np.ndarray:
    """Weight bytes read per GPU per step [bytes].

    Dense: all weights. MoE: the non-expert weights plus the expected number of distinct
    experts hit by ``batch`` tokens choosing top-k of E uniformly,
    ``E (1 - (1 - k/E)^batch)`` per MoE layer.
    """
    batch = np.asarray(batch, dtype=float)
    if not arch.is_moe:
        return np.full_like(batch, weights_bytes_per_gpu)
    expert = arch.ffn_params(arch.expert_ffn_hidden_size or arch.ffn_hidden_size)
    routed_total = arch.moe_layers * arch.num_experts * expert
    frac_routed = routed_total / arch.total_params()
    hit = 1.0 - (1.0 - arch.experts_per_token / arch.num_experts) ** batch
    return weights_bytes_per_gpu * ((1 - frac_routed) + frac_routed * hit)


def mean_context_in_flight(input_tokens: float, output_tokens: float, output_tokens_cv: float = 0.0) -> float:
    """Mean context of a sequence in flight [tokens]: ``L_in + (1 + c^2) L_out / 2`` (module doc)."""
    return float(input_tokens) + (1.0 + output_tokens_cv ** 2) * float(output_tokens) / 2.0


@dataclass(frozen=True)
class StepTimes:
    """Mixed-step components [s], arrays over the batch sweep."""

    gemm: np.ndarray
    attention: np.ndarray
    communication: np.ndarray
    overhead: np.ndarray
    engine_host: np.ndarray | None = None   # the engine's host time per iteration (None: the generic engine)

    @property
    def total(self) -> np.ndarray:
        gpu = self.gemm + self.attention + self.communication + self.overhead
        return gpu if self.engine_host is None else gpu + self.engine_host


def mixed_step_times(arch: TransformerArch, batch: np.ndarray, *, input_tokens: int, output_tokens: int,
                     weights_bytes_per_gpu: float, kv_bytes_per_token_per_gpu: float, hw: ReplicaHardware,
                     gemm_efficiency: float, eff: ServingEfficiency, output_tokens_cv: float = 0.0,
                     host_time: Any = None, prefill: bool = True) -> StepTimes:
    """One continuous-batching step with ``batch`` decode sequences and their share of prefills [s].

    ``output_tokens_cv`` is the spread of output lengths (module doc: the mean context in flight);
    ``host_time`` the engine's host time per iteration as a function of the batch [s]
    (:meth:`.engines.EngineProfile.host_time`), added to the step; None for none. ``prefill=False``: a
    decode-only step, no prompt joins (a replica draining after its arrivals stop,
    :func:`~gpucluster_lib.inference.queueing.last_request_latency`), with the same mean context.
    """
    b = np.asarray(batch, dtype=float)
    prompts_per_step = b / output_tokens if prefill else np.zeros_like(b)
    tokens = b + prompts_per_step * input_tokens
    compute = hw.peak_tflops * TERA * gemm_efficiency
    bw = hw.memory_bandwidth_gb_per_s * GB * eff.memory_bandwidth_efficiency
    gemm = np.maximum(weights_read_bytes(arch, weights_bytes_per_gpu, b) / bw,
                      tokens * linear_flops_per_token(arch) / hw.tp / compute)
    context = mean_context_in_flight(input_tokens, output_tokens, output_tokens_cv)
    kv_read = b * context * kv_bytes_per_token_per_gpu
    attn_flops = (b * decode_attention_flops(arch, context)
                  + prompts_per_step * prefill_attention_flops(arch, input_tokens)) / hw.tp
    attention = np.maximum(kv_read / bw, attn_flops / compute)
    comm = tp_comm_time(arch, tokens, hw, eff)
    overhead = np.full_like(b, eff.decode_step_overhead_s)
    host = None if host_time is None else np.asarray(host_time(b), dtype=float) + np.zeros_like(b)
    return StepTimes(gemm, attention, comm, overhead, host)


def prefill_time(arch: TransformerArch, prompt_tokens: int, *, weights_bytes_per_gpu: float, hw: ReplicaHardware,
                 gemm_efficiency: float, eff: ServingEfficiency) -> float:
    """Prefill of one prompt on an idle replica [s]: compute-bound FLOPs over TP x peak x e, plus TP comm."""
    compute = hw.peak_tflops * TERA * gemm_efficiency
    bw = hw.memory_bandwidth_gb_per_s * GB * eff.memory_bandwidth_efficiency
    flops = (prompt_tokens * linear_flops_per_token(arch) + prefill_attention_flops(arch, prompt_tokens)) / hw.tp
    gemm = max(weights_bytes_per_gpu / bw, flops / compute)
    return float(gemm + tp_comm_time(arch, prompt_tokens, hw, eff))
