"""Memory per GPU of a tensor-parallel serving replica, and the largest batch that fits.

Terms (per GPU, bytes):

* weights: ``P x b_w / TP`` (Megatron-style TP shards every matrix, including the
  vocabulary-parallel embedding and output layer; Shoeybi et al. 2019, Sec. 3);
* KV cache per token: ``layers x 2 x (kv_heads / TP) x head_dim x b_kv``: K and V for
  every layer (Pope et al. 2023, "Efficiently Scaling Transformer Inference", Sec. 2.1),
  GQA/MQA-aware (Ainslie et al. 2023); when TP exceeds the KV heads each GPU keeps one
  replicated head (vLLM/TensorRT-LLM behaviour);
* activation workspace: one engine step of ``max_num_tokens`` tokens (TensorRT-LLM's
  default 8192) holding the residual stream, the Q/K/V and the two FFN up-projections:
  ``T x (4 h + (q + 2 kv)/TP + 2 f/TP) x 2 bytes``, plus FP32 logits of ``V / TP`` per
  sequence;
* runtime: CUDA context and library buffers outside the engine pool
  (:class:`~gpucluster_lib.inference.efficiency.ServingEfficiency`).

The engine may use ``memory_utilization`` of the HBM. Each sequence reserves KV for its
full length ``input + output`` (TensorRT-LLM's *guaranteed no evict* scheduling), so
``max_batch = floor(free / (kv_per_token x R + logits))`` with ``R`` the KV budget of a
sequence in flight [tokens]. When every request is alike, ``R = L_in + L_out``. When output
lengths spread (``output_tokens_cv`` = c, standard deviation over the mean), the sequences in
flight are a length-biased sample and hold ``L_in + (1 + c^2) L_out / 2`` tokens of context on
average (:func:`~gpucluster_lib.inference.latency.mean_context_in_flight`; Cox 1962, *Renewal
Theory*): a long request holds more than ``L_in + L_out`` near its end, the short ones beside it
less, and the paged cache (Kwon et al. 2023, vLLM's PagedAttention; TensorRT-LLM's paged KV
cache) hands the pages of finished requests to growing ones. So ``R = max(L_in + L_out,
L_in + (1 + c^2) L_out / 2)``: for c <= 1 the full length of a mean request covers the mean
context; for c > 1 the mean context is larger, and the budget follows it, so the cache always
holds the KV a decode step reads (finding ``inference-length-spread-exceeds-reserve``).

KV-cache scheduling (``inference.kv_cache_scheduling``). The reservation above is TensorRT-LLM's
``GUARANTEED_NO_EVICT`` capacity policy (``no_evict``, the default here). Its ``MAX_UTILIZATION``
policy (``max_utilization``; TensorRT-LLM ``executor::CapacitySchedulerPolicy::kMAX_UTILIZATION``,
the default of NVIDIA's MLPerf harness: ``--trtllm_batch_sched_policy`` = ``max_util`` in
``code/harness/harness_llm/main_llm.cc``, mlcommons/inference_results_v4.1) reserves nothing ahead:
it packs as many requests as the pages allow "at the risk of having to pause requests if the KV
cache size limit is reached" (TensorRT-LLM, docs/source/performance/perf-best-practices.md, "Batch
Scheduler Policy"; vLLM's preemption does the same: Kwon et al. 2023, SOSP, Sec. 4.5). The pool then has to hold only the context in
flight, ``R = L_in + (1 + c^2) L_out / 2`` per sequence on average; pauses (and their recomputed
prompts) are not modelled, so this is the batch the pool holds at its mean.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpucluster_lib.inference.efficiency import ServingEfficiency
from gpucluster_lib.inference.latency import mean_context_in_flight
from gpucluster_lib.inference.precision import ACTIVATION_BYTES
from gpucluster_lib.scenario import DEFAULT_MAX_NUM_TOKENS
from gpucluster_lib.units import GIB
from gpucluster_lib.workloads.transformer import TransformerArch

#: Logits are produced in FP32 [bytes].
LOGIT_BYTES = 4.0


def kv_heads_per_gpu(kv_heads: int, tp: int) -> int:
    """KV heads stored on each GPU: kv_heads / TP, at least one (replicated when TP > kv_heads)."""
    return max(math.ceil(kv_heads / tp), 1)


def kv_cache_bytes_per_token_per_gpu(arch: TransformerArch, tp: int, kv_bytes: float) -> float:
    """layers x 2 x ceil(kv_heads / TP) x head_dim x b_kv [bytes/token] (Pope et al. 2023 Sec. 2.1)."""
    return arch.layers * 2 * kv_heads_per_gpu(arch.kv_heads, tp) * arch.head_dim * kv_bytes


def token_budget(max_num_tokens: int | None, input_tokens: int | None) -> int:
    """The engine's token budget per step [tokens]: ``inference.max_num_tokens`` when set, else TensorRT-LLM's
    default 8192 (``trtllm-build --max_num_tokens``) raised to one whole prompt (an engine for longer prompts
    is built with a larger budget; without chunked context its ``max_input_len`` cannot exceed it)."""
    return max_num_tokens or max(DEFAULT_MAX_NUM_TOKENS, input_tokens or 0)


def workspace_bytes_per_gpu(arch: TransformerArch, tp: int, max_num_tokens: int) -> float:
    """Activation workspace of one engine step of ``max_num_tokens`` tokens [bytes].

    Per token, the live activations of one layer at a time (the engine reuses the buffers
    layer after layer): the residual stream and its normalised copy plus the attention output
    and the FFN input (4 h), this GPU's share of the Q, K and V projections
    ((q_dim + 2 kv_dim) / tp) and of the FFN's two up-projections (2 f / tp, SwiGLU's gate and
    up; an upper bound for GeLU). The same per-layer accounting as Korthikanti et al. 2022
    (arXiv:2205.05198) Sec. 4.1, without the tensors kept for the backward pass, which inference
    does not need; ``ACTIVATION_BYTES`` per element.
    """
    h = arch.hidden_size
    per_token = 4 * h + (arch.q_dim + 2 * arch.kv_dim) / tp + 2 * max(arch.ffn_hidden_size,
                                                                       arch.expert_ffn_hidden_size) / tp
    return max_num_tokens * per_token * ACTIVATION_BYTES


@dataclass(frozen=True)
class MemoryPlan:
    """Memory of one GPU in a replica [bytes]; ``max_batch`` [sequences]."""

    capacity_bytes: float
    usable_bytes: float
    weights_bytes: float
    workspace_bytes: float
    runtime_bytes: float
    kv_bytes_per_token: float
    bytes_per_sequence: float
    max_batch: int

    @property
    def free_for_kv_bytes(self) -> float:
        return self.usable_bytes - self.weights_bytes - self.workspace_bytes - self.runtime_bytes

    def breakdown(self, batch: int) -> dict[str, float]:
        """Bytes per GPU by category at ``batch`` sequences."""
        kv = batch * self.bytes_per_sequence
        used = self.weights_bytes + self.workspace_bytes + self.runtime_bytes + kv
        return {"weights": self.weights_bytes, "kv_cache": kv, "workspace": self.workspace_bytes,
                "runtime": self.runtime_bytes, "free": max(self.capacity_bytes - used, 0.0),
                "total": self.capacity_bytes}


#: KV-cache capacity policies (TensorRT-LLM ``CapacitySchedulerPolicy``; module doc).
KV_CACHE_SCHEDULING = ("no_evict", "max_utilization")


def reserved_tokens_per_sequence(input_tokens: float, output_tokens: float, output_tokens_cv: float = 0.0,
                                 scheduling: str = "no_evict") -> float:
    """KV budget of a sequence in flight [tokens] (module doc).

    ``no_evict``: ``max(L_in + L_out, L_in + (1 + c^2) L_out / 2)``; ``max_utilization``: the mean
    context in flight ``L_in + (1 + c^2) L_out / 2`` alone.
    """
    if scheduling not in KV_CACHE_SCHEDULING:
        raise ValueError(f"scheduling must be one of {KV_CACHE_SCHEDULING}, got {scheduling!r}")
    if scheduling == "max_utilization":
        return mean_context_in_flight(input_tokens, output_tokens, output_tokens_cv)
    return max(float(input_tokens) + float(output_tokens),
               mean_context_in_flight(input_tokens, output_tokens, output_tokens_cv))


def memory_plan(arch: TransformerArch, *, memory_gib: float, tp: int, weight_bytes: float, kv_bytes: float,
                input_tokens: int, output_tokens: int, eff: ServingEfficiency,
                max_num_tokens: int | None = None, output_tokens_cv: float = 0.0,
                kv_scheduling: str = "no_evict") -> MemoryPlan:
    """Memory per GPU and the largest batch that fits (see module doc for each term).

    Parameters
    ----------
    arch : the transformer
    memory_gib : HBM per GPU [GiB]
    tp : tensor-parallel size [GPUs]
    weight_bytes, kv_bytes : bytes per weight and per KV element [bytes]
    input_tokens, output_tokens : per request [tokens]
    eff : memory_utilization [fraction] and runtime_overhead_gib [GiB]
    max_num_tokens : tokens per engine step [tokens]; default ``DEFAULT_MAX_NUM_TOKENS`` (8192) or one
        whole prompt when it is longer
    output_tokens_cv : spread of output lengths, standard deviation over the mean [-]; it sets the
        KV budget of a sequence in flight when it exceeds 1 (module doc)
    kv_scheduling : ``no_evict`` (reserve each sequence's full length) or ``max_utilization``
        (pages on demand: the mean context in flight) (module doc)

    Returns
    -------
    MemoryPlan
        bytes per GPU by category and ``max_batch`` [sequences] (0 when nothing fits).
    """
    capacity = memory_gib * GIB
    usable = capacity * eff.memory_utilization
    weights = arch.total_params() * weight_bytes / tp
    workspace = workspace_bytes_per_gpu(arch, tp, token_budget(max_num_tokens, input_tokens))
    runtime = eff.runtime_overhead_gib * GIB
    kv_tok = kv_cache_bytes_per_token_per_gpu(arch, tp, kv_bytes)
    per_seq = (kv_tok * reserved_tokens_per_sequence(input_tokens, output_tokens, output_tokens_cv, kv_scheduling)
               + arch.vocab_size / tp * LOGIT_BYTES)
    free = usable - weights - workspace - runtime
    max_batch = int(free // per_seq) if free > 0 else 0
    return MemoryPlan(capacity, usable, weights, workspace, runtime, kv_tok, per_seq, max_batch)
