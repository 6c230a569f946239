"""Vectorised step-time and memory model of one training step (numpy).

:func:`evaluate` takes a :class:`Context` (model, hardware, efficiency: scalars) and a set
of parallel plans as numpy arrays of equal length (``tp``, ``pp``, ``dp``, ``cp``, ``ep``,
``mb``, ``gbs``, ``vp``, ``rc`` 0/1/2 = none/selective/full, ``sp``, ``zero``, ``dopt``),
and returns arrays of step time, its breakdown and the memory per GPU. The plan search
evaluates thousands of plans in one call; a single estimate is the same call with arrays
of length one, so both use exactly the same physics.

Model (per GPU, per micro-batch, bottleneck pipeline stage)
----------------------------------------------------------
* GEMMs: for each projection, ``t = max(2MKN / (P e_g d/(d+d0)), 2(MK+KN+MN) / (B e_m))``
  (roofline, [1]) with ``d = min(M, K, N)`` the size-efficiency term and ``P`` the dense peak
  of the training precision; backward = 2 x forward; full recomputation adds a forward [2].
* Attention core: fused (FlashAttention) at ``e_flash`` of the 16-bit peak over the causal
  half, backward 2.5x [5]; or unfused: batched GEMMs plus the s x s score traffic at memory
  bandwidth [3].
* Element-wise (norms, dropout, residuals, activation): bytes at memory bandwidth; the
  norm/residual part is split by TP only with sequence parallelism [3].
* Tensor parallel: per layer 2 all-reduces forward, 2 backward (+2 with full
  recomputation), ring ``2 (t-1)/t S / B + 2 (t-1) alpha`` [2, 6]; context parallel: ring
  exchange of K/V [7]; expert parallel: 2 all-to-alls forward, 2 backward.
* Pipeline: 1F1B, step = T_mb (m + (p-1)/v) (bubble (p-1)/(v m) [2]); p2p of the boundary
  activations per micro-batch and virtual stage.
* Data parallel: gradient all-reduce (fp32, Megatron default) or reduce-scatter +
  all-gather (ZeRO-1/2, distributed optimizer), exposed ``(1 - dp_overlap)``; ZeRO-3 gathers
  the parameters twice and reduce-scatters the gradients every micro-batch, hidden behind
  compute up to ``zero3_overlap`` [4].
* Optimizer: Adam state traffic at memory bandwidth. A fixed ``step_overhead`` fraction
  covers data loading, logging and stragglers.

Memory (first pipeline stage, the worst for 1F1B [3])
-----------------------------------------------------
Mixed-precision Adam: 2 + 2 + 12 bytes per parameter for weights, gradients and optimizer
states, sharded over DP x CP by ZeRO stage 3 / 2 / 1 (or Megatron's distributed optimizer) [4].
Activations per layer, Korthikanti 2022 Table 2 generalised to GQA/SwiGLU/MoE [3]:
``s b (10h + (4q + 4kv + 4f)/t) + 5 a s^2 b / t`` (16-bit) where the ``10h`` part is split by
TP only with sequence parallelism, the score term vanishes with selective recomputation or a
fused attention kernel, and full recomputation keeps only ``2 s b h`` per layer; the first
stage holds ``min(p, m)`` micro-batches in flight, times ``1 + (p-1)/(p v)`` when interleaved.
Plus CUDA context, communication buffers and fragmentation.

References
----------
.. [1] Williams, Waterman, Patterson 2009, "Roofline", CACM 52(4).
.. [2] Narayanan et al. 2021 (arXiv:2104.04473) Sec. 2.2 (bubble), 3.2, Eq. 3.
.. [3] Korthikanti et al. 2022 (arXiv:2205.05198) Sec. 4, Table 2, Eq. 2-6.
.. [4] Rajbhandari et al. 2020, ZeRO (arXiv:1910.02054) Sec. 3.1, 5, 7 (16 bytes/parameter;
       ZeRO-3 communication 1.5x data parallel).
.. [5] Dao 2023, FlashAttention-2 (arXiv:2307.08691).
.. [6] Thakur, Rabenseifner, Gropp 2005, "Optimization of collective communication operations
       in MPICH", IJHPCA 19(1): ring all-reduce 2 (n-1)/n S / B.
.. [7] Liu, Zaharia, Abbeel 2023, Ring Attention (arXiv:2310.01889).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpucluster_lib.training.comm import ring_allgather_s, ring_allreduce_s
from gpucluster_lib.training.efficiency import Efficiency
from gpucluster_lib.training.memory import (
    activation_bytes_per_layer,
    in_flight_factor,
    model_state_bytes,
)
from gpucluster_lib.units import GIB
from gpucluster_lib.workloads.transformer import TransformerArch

#: Bytes per element of 16-bit activations, weights and gradients.
BYTES_16 = 2
#: Mixed-precision Adam: fp32 master weights, momentum and variance [4].
OPTIMIZER_BYTES_PER_PARAM = 12
#: fp32 gradient reduction (Megatron-LM accumulates and all-reduces main grads in fp32).
GRAD_REDUCE_BYTES_FP32 = 4

PLAN_KEYS = ("tp", "pp", "dp", "cp", "ep", "mb", "gbs", "vp", "rc", "sp", "zero", "dopt")
RC_CODES = {"none": 0, "selective": 1, "full": 2}
RC_NAMES = {v: k for k, v in RC_CODES.items()}

BREAKDOWN_KEYS = ("compute", "recompute", "tp_comm", "cp_comm", "ep_comm", "pp_comm", "bubble",
                  "dp_comm", "optimizer", "overhead")
MEMORY_KEYS = ("weights", "gradients", "optimizer_states", "activations", "other")


@dataclass(frozen=True)
class Context:
    """Everything but the plan: model, hardware and efficiency (scalars, SI units)."""

    arch: TransformerArch
    gpus: int
    gpus_per_node: int
    nvlink_domain: int
    peak_flops: float  # dense peak of the training precision [FLOP/s]
    peak16_flops: float  # dense 16-bit peak (attention, element-wise math) [FLOP/s]
    memory_bw: float  # HBM bandwidth [B/s]
    memory_capacity: float  # device memory [B]
    nvlink_bw: float  # scale-up bandwidth per GPU per direction [B/s]
    nic_bw: float  # scale-out bandwidth per GPU per direction [B/s]
    eff: Efficiency
    flash_attention: bool = True
    flat_collectives: bool = False
    fp8: bool = False


def _gemm_time(M, K, N, P, e, d0, B, em):
    """Roofline time of one GEMM [s] with a size efficiency d / (d + d0) on the smallest dim."""
    d = np.minimum(np.minimum(M, K), N)
    flops = 2.0 * M * K * N
    byts = BYTES_16 * (M * K + K * N + M * N)
    return np.maximum(flops / (P * e * d / (d + d0)), byts / (B * em))


_ring_allreduce = ring_allreduce_s
_ring_gather = ring_allgather_s


def stage_params(ctx: Context, tp, pp, ep):
    """Parameters held by one GPU of the first and of the last pipeline stage [parameters]."""
    a = ctx.arch
    L = a.layers
    attn = a.attention_params_per_layer() + a.norm_params_per_layer()
    dense_ffn = a.ffn_params(a.ffn_hidden_size)
    e_ffn = a.ffn_params(a.expert_ffn_hidden_size or a.ffn_hidden_size) if a.is_moe else 0
    per_layer_attn = attn / tp
    ffn_dense_total = a.dense_ffn_layers * dense_ffn
    moe_total = a.moe_layers * ((a.num_experts / ep + a.shared_experts) * e_ffn + a.hidden_size * a.num_experts)
    layers_part = (L * per_layer_attn + ffn_dense_total / tp + moe_total / tp) / pp
    emb = a.vocab_size * a.hidden_size / tp + (a.seq_length * a.hidden_size if a.position_embedding == "learned" else 0)
    out = a.vocab_size * a.hidden_size / tp
    first = layers_part + emb
    last = layers_part + np.where(pp > 1, out, 0.0 if a.tied_embeddings else out)
    return first, last


def evaluate(ctx: Context, plans: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Step time [s], its breakdown [s] and memory per GPU [B] for every plan (arrays)."""
    a, e = ctx.arch, ctx.eff
    tp = np.asarray(plans["tp"], dtype=float)
    pp = np.asarray(plans["pp"], dtype=float)
    dp = np.asarray(plans["dp"], dtype=float)
    cp = np.asarray(plans["cp"], dtype=float)
    ep = np.asarray(plans["ep"], dtype=float)
    mb = np.asarray(plans["mb"], dtype=float)
    gbs = np.asarray(plans["gbs"], dtype=float)
    vp = np.asarray(plans["vp"], dtype=float)
    rc = np.asarray(plans["rc"], dtype=int)
    sp = np.asarray(plans["sp"], dtype=bool)
    zero = np.asarray(plans["zero"], dtype=int)
    dopt = np.asarray(plans["dopt"], dtype=bool)
    full = rc == 2
    sel = rc == 1

    h, s, V = float(a.hidden_size), float(a.seq_length), float(a.vocab_size)
    heads = float(a.attention_heads)
    P, P16, B = ctx.peak_flops, ctx.peak16_flops, ctx.memory_bw
    eg = e.gemm_efficiency * (e.fp8_gemm_factor if ctx.fp8 else 1.0)
    em, d0 = e.memory_efficiency, e.gemm_half_dim
    gpn = float(ctx.gpus_per_node)

    m = gbs / (dp * mb)  # micro-batches per step per pipeline
    s_loc = s / cp
    M = mb * s_loc  # tokens per micro-batch per GPU
    L_s = a.layers / pp
    moe_frac = a.moe_layers / a.layers
    dense_frac = 1.0 - moe_frac

    def gemm(Mx, K, N):
        return _gemm_time(Mx, K, N, P, eg, d0, B, em)

    # ---- per layer, forward, one micro-batch [s] ---------------------------------
    q_out = float(a.attention_output_dim())
    attn_in_n = (a.attention_matmul_params_per_layer() - q_out * h) / h
    t_attn_proj = gemm(M, h, attn_in_n / tp) + gemm(M, q_out / tp, h)
    mats = 3 if a.ffn_type == "swiglu" else 2
    f = float(a.ffn_hidden_size)
    t_ffn_dense = gemm(M, h, (mats - 1) * f / tp) + gemm(M, f / tp, h)
    if a.is_moe:
        fe = float(a.expert_ffn_hidden_size or a.ffn_hidden_size)
        experts_local = a.num_experts / ep
        Me = np.maximum(M * a.experts_per_token * ep / a.num_experts, 1.0)
        t_routed = experts_local * (gemm(Me, h, (mats - 1) * fe / tp) + gemm(Me, fe / tp, h))
        t_shared = a.shared_experts * (gemm(M, h, (mats - 1) * fe / tp) + gemm(M, fe / tp, h))
        t_router = gemm(M, h, float(a.num_experts))
        t_ffn_moe = t_routed + t_shared + t_router
        f_act = (a.experts_per_token + a.shared_experts) * fe
    else:
        t_ffn_moe = 0.0 * M
        f_act = f
    t_gemm_layer = t_attn_proj + dense_frac * t_ffn_dense + moe_frac * t_ffn_moe

    heads_loc = heads / tp
    score_flops = 2.0 * mb * s_loc * s * heads_loc * (a.qk_head_dim + a.value_head_dim)  # full s x s
    if ctx.flash_attention:
        t_attn_fwd = 0.5 * score_flops / (P16 * e.flash_attention_efficiency)  # causal half
        attn_bwd_factor = e.flash_backward_factor
        attn_recompute = np.where(full, 1.0, 0.0)  # FlashAttention recomputes internally: selective is free
    else:
        dmin = float(min(a.qk_head_dim, a.value_head_dim))
        t_attn_fwd = (score_flops / (P16 * e.gemm_efficiency * dmin / (dmin + d0))
                      + e.unfused_attention_bytes_per_score * mb * heads_loc * s_loc * s / (B * em))
        attn_bwd_factor = 2.0
        attn_recompute = np.where(full | sel, 1.0, 0.0)

    act_bytes = e.activation_bytes_per_ffn_swiglu if a.ffn_type == "swiglu" else e.activation_bytes_per_ffn_gelu
    ew_bytes = M * (e.elementwise_bytes_per_hidden * h / np.where(sp, tp, 1.0) + act_bytes * f_act / tp)
    t_ew_fwd = ew_bytes / (B * em)

    fwd_layer = t_gemm_layer + t_attn_fwd + t_ew_fwd + e.layer_overhead_s
    train_layer = 3.0 * (t_gemm_layer + t_ew_fwd + e.layer_overhead_s) + (1.0 + attn_bwd_factor) * t_attn_fwd
    recompute_layer = np.where(full, t_gemm_layer + t_ew_fwd + e.layer_overhead_s, 0.0) + attn_recompute * t_attn_fwd

    # output layer and loss on the last stage
    t_logits = 3.0 * gemm(M, h, V / tp) + e.cross_entropy_bytes_per_logit * M * V / tp / (B * em)
    del fwd_layer

    # ---- communication per micro-batch -------------------------------------------
    nvl_bw = ctx.nvlink_bw * e.nvlink_efficiency
    net_bw = ctx.nic_bw * e.network_efficiency
    tp_in_node = tp <= ctx.nvlink_domain
    tp_bw = np.where(tp_in_node, nvl_bw, net_bw)
    tp_alpha = np.where(tp_in_node, e.alpha_nvlink_s, e.alpha_network_s)
    act_size = M * h * BYTES_16
    t_tp_coll = _ring_allreduce(act_size, tp, tp_bw, tp_alpha)
    n_tp_coll = 4.0 + np.where(full, 2.0, 0.0)
    t_tp = (1.0 - e.tp_overlap) * L_s * n_tp_coll * t_tp_coll

    dom = float(ctx.nvlink_domain)
    cp_in_node = tp * cp <= dom
    cp_bw = np.where(cp_in_node, nvl_bw, net_bw)
    kv_bytes = M * a.kv_heads * (a.qk_head_dim + a.value_head_dim) / tp * BYTES_16
    t_cp = np.where(cp > 1, (1.0 - e.cp_overlap) * L_s * 3.0 * (cp - 1) * (kv_bytes / cp_bw + e.alpha_network_s), 0.0)

    if a.is_moe:
        ep_in_node = tp * cp * ep <= dom
        ep_bw = np.where(ep_in_node, nvl_bw, net_bw)
        a2a = (ep - 1) / ep * M * a.experts_per_token * h * BYTES_16 / ep_bw
        n_a2a = 4.0 + np.where(full, 2.0, 0.0)
        t_ep = np.where(ep > 1, (1.0 - e.ep_overlap) * L_s * moe_frac * n_a2a * a2a, 0.0)
    else:
        t_ep = 0.0 * M

    pp_cross = tp * cp * dp >= dom
    pp_bw = np.where(pp_cross, net_bw, nvl_bw)
    t_p2p = np.where(pp > 1, 2.0 * vp * (e.alpha_network_s + act_size / tp / pp_bw), 0.0)

    # ---- pipeline ---------------------------------------------------------------
    t_compute_mb = L_s * train_layer + t_logits
    t_recompute_mb = L_s * recompute_layer
    t_mb = t_compute_mb + t_recompute_mb + t_tp + t_cp + t_ep + t_p2p
    bubble_mult = (pp - 1.0) / vp
    t_pipe = t_mb * (m + bubble_mult)

    # ---- data parallel -------------------------------------------------------------
    p_first, p_last = stage_params(ctx, tp, pp, ep)
    p_gpu = np.maximum(p_first, p_last)
    n_dp = dp * cp
    per_node = np.minimum(n_dp, np.maximum(1.0, np.floor(gpn / tp)))
    in_node = tp * n_dp <= dom
    hier_bw = np.minimum(nvl_bw, per_node * net_bw)
    dp_bw = np.where(in_node, nvl_bw, net_bw if ctx.flat_collectives else hier_bw)
    nodes_in_group = np.maximum(1.0, n_dp / per_node)
    dp_alpha = np.where(in_node, e.alpha_nvlink_s, e.alpha_network_s)
    t_allreduce = _ring_allreduce(p_gpu * GRAD_REDUCE_BYTES_FP32, n_dp, dp_bw, dp_alpha)
    t_rs_ag = (_ring_gather(p_gpu * GRAD_REDUCE_BYTES_FP32, n_dp, dp_bw, dp_alpha)
               + _ring_gather(p_gpu * BYTES_16, n_dp, dp_bw, dp_alpha))
    t_dp_grad = np.where((zero == 0) & ~dopt, t_allreduce, t_rs_ag)
    exposed_grad = (1.0 - e.dp_overlap) * t_dp_grad
    # ZeRO-3: gather parameters for forward and backward and reduce-scatter gradients, per micro-batch.
    z3_bytes = 3.0 * p_gpu * BYTES_16
    t_z3 = m * (_ring_gather(z3_bytes, n_dp, dp_bw, 0.0) + 3.0 * L_s * (n_dp > 1) * dp_alpha * nodes_in_group)
    compute_total = t_mb * m
    exposed_z3 = np.maximum(t_z3 - e.zero3_overlap * compute_total, (1.0 - e.zero3_overlap) * t_z3)
    t_dp = np.where(zero == 3, exposed_z3, exposed_grad)

    # ---- optimizer ------------------------------------------------------------------
    sharded_opt = (zero >= 1) | dopt
    p_opt = np.where(sharded_opt, p_gpu / n_dp, p_gpu)
    t_opt = p_opt * e.optimizer_bytes_per_param / (B * em)

    base = t_pipe + t_dp + t_opt
    overhead = e.step_overhead * base
    step = base + overhead

    breakdown = {
        "compute": m * t_compute_mb,
        "recompute": m * t_recompute_mb,
        "tp_comm": m * t_tp,
        "cp_comm": m * t_cp,
        "ep_comm": m * t_ep,
        "pp_comm": m * t_p2p,
        "bubble": t_mb * bubble_mult,
        "dp_comm": t_dp,
        "optimizer": t_opt,
        "overhead": overhead,
    }

    # ---- memory (first stage) ---------------------------------------------------------
    states = model_state_bytes(p_first, n_dp, zero, dopt)
    weights, grads, opt = states["weights"], states["gradients"], states["optimizer_states"]
    layer_params = (p_first - a.vocab_size * h / tp) / np.maximum(L_s, 1.0)
    # ZeRO-3 keeps the gathered parameters of the current and the prefetched layer
    z3_buffers = np.where(zero == 3, 2.0 * layer_params * BYTES_16, 0.0)
    f_mem = dense_frac * f + moe_frac * (f_act if a.is_moe else f)
    per_layer = activation_bytes_per_layer(a, mb, s_loc, tp, sp, rc, ctx.flash_attention, f_mem)
    acts = per_layer * L_s * in_flight_factor(pp, m, vp)
    # with full recomputation one layer's activations are rebuilt and live during its backward
    acts = acts + np.where(full, activation_bytes_per_layer(a, mb, s_loc, tp, sp, 0, ctx.flash_attention, f_mem), 0.0)
    # pp == 1: the fp32 output logits live on the same GPU
    acts = acts + np.where(pp == 1, 4.0 * M * V / tp, 0.0)
    model_state = weights + grads + opt + z3_buffers
    other = e.cuda_context_gib * GIB + e.comm_buffers_gib * GIB + e.fragmentation * (model_state + acts)
    total = model_state + acts + other
    memory = {
        "weights": weights + z3_buffers,
        "gradients": grads,
        "optimizer_states": opt,
        "activations": acts,
        "other": other,
        "total": total,
    }
    return {"step_time_s": step, "micro_batches": m, "breakdown": breakdown, "memory": memory,
            "fits": total <= ctx.memory_capacity}
