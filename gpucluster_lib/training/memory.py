"""Memory per GPU: model states (mixed-precision Adam, ZeRO) and activations (Korthikanti).

All functions take numbers or numpy arrays and return bytes.

References
----------
.. [1] Rajbhandari et al. 2020, ZeRO (arXiv:1910.02054) Sec. 3.1 and Fig. 1: mixed-precision
       Adam keeps 2 + 2 + K bytes per parameter (16-bit weights, 16-bit gradients, K = 12 bytes
       of fp32 master weights, momentum and variance); ZeRO-1/2/3 partition the optimizer states,
       + gradients, + parameters over the N_d data-parallel ranks.
.. [2] Korthikanti et al. 2022 (arXiv:2205.05198) Sec. 4.1-4.2, Table 2: activation bytes per
       layer ``s b h (34 + 5 a s / h)`` without parallelism; with tensor parallelism t
       ``s b h (10 + 24/t + 5 a s/(h t))``; with sequence parallelism ``s b h (34/t + 5 a s/(h t))``;
       selective recomputation drops the ``5 a s / h`` term; full recomputation keeps ``2 s b h``.
       The 34 counts, per token of a layer: the two LayerNorm inputs (2h each), the QKV and FC1
       inputs (2h each), Q, K and V (2h each), the projection input (2h), the GeLU input and the
       FC2 input (8h each for f = 4h) and two dropout masks of one byte (h each); the 5 a s
       counts the softmax output (2), the attention-dropout mask (1) and its output (2) per score.
.. [3] Megatron-LM ``megatron/training/theoretical_memory_usage.py`` (main, 2026): the same Table 2
       (``18 + 4 f/h`` per ``s b h`` with sequence parallelism and selective recomputation), the
       interleaving factor ``1 + (p-1)/(p v)`` for the first stage; weights and optimizer
       ``18`` bytes per parameter, ``6 + 12/d`` with the distributed optimizer ("bf16 model params,
       fp32 main gradients, fp32 main params, and fp32 Adam states"; the table of
       docs/user-guide/features/dist_optimizer.md: fp16 parameters and gradients 20 / ``4 + 16/d``).
.. [4] PyTorch ``aten/src/ATen/native/Dropout.cpp``: ``is_fused_kernel_acceptable`` requires
       ``p > 0`` and ``_dropout_impl`` returns its input when ``p == 0``, so a dropout of
       probability 0 saves no mask; Megatron-Core's bias-dropout-add calls
       ``torch.nn.functional.dropout(x, p=prob, ...)`` (megatron/core/fusions/fused_bias_dropout.py,
       core_v0.8.0).
.. [5] Transformer Engine v1.10 ``transformer_engine/pytorch/module/linear.py``: in FP8 a linear
       layer saves for its weight gradient the FP8 cast of its input (``saved_inputmat`` /
       ``saved_inputmat_t``, one byte per element) instead of the 16-bit input
       (``inputmat_no_fp8``); ``layernorm_linear.py`` normalises straight into FP8 (``ln_out_dtype =
       torch.uint8``) and saves that ``ln_out`` with the norm's input. With ``is_first_microbatch``
       given (Megatron-Core's TELinear passes it) the FP8 weight and its transpose are kept in a
       persistent workspace (``get_fp8_workspace(..., cache_name="weight", with_transpose=...)``):
       two bytes per weight element beside the 16-bit weight; FP8 primary weights (``Float8Tensor``,
       NeMo ``fp8_params``, Megatron ``--fp8-param-gather``) keep one byte and a transposed copy
       (``transpose_2d(fill_cache=True)``) in place of the 16-bit weight. On Blackwell per-tensor scales need
       no transpose ("Blackwell: supports columnwise access natively, so no transpose is needed", TE
       docs/features/low_precision_training/performance_considerations/performance_considerations.rst): one
       byte; MXFP8 keeps a row-wise and a column-wise copy with one E8M0 scale per 32 elements each
       (MXFP8Quantizer::create_tensor, csrc/quantizer.cpp): 2 + 2/32 bytes (data/training_frameworks.yaml
       fp8_recipes, columnwise_copy and scale_bytes).
.. [6] Megatron-Core ``forward_backward_pipelining_with_interleaving`` (core_v0.8.0,
       megatron/core/pipeline_parallel/schedules.py): pipeline rank i runs
       ``(p - i - 1) * 2 + (v - 1) * p`` warm-up forward passes of model chunks (at most ``m v``)
       before its first backward, and one more forward before each backward after it, so
       ``min(2 (p - i - 1) + (v - 1) p + 1, m v)`` chunks (of ``1/v`` of the stage's layers each)
       hold activations at once; with ``m == p`` every forward runs first (``m v`` chunks, all
       ``m`` micro-batches); the non-interleaved schedule runs ``min(p - i - 1, m)`` warm-up
       forwards (``min(p - i, m)`` micro-batches in flight).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpucluster_lib.workloads.transformer import TransformerArch

#: 16-bit weights and gradients, 12 bytes of fp32 optimizer state per parameter [1].
WEIGHT_BYTES, GRAD_BYTES, OPTIMIZER_BYTES = 2, 2, 12


@dataclass(frozen=True)
class StateBytes:
    """Bytes per parameter of the model states [B / parameter] [1, 3, 5].

    ``grad``: the gradient buffer (Megatron-Core holds it in the reduction precision: 4 with
    ``grad_reduce_in_fp32``); ``optimizer``: the optimizer's master copy and Adam's two moments
    (12 for fp32 master weights and moments; Apex's ``store_param_remainders`` keeps 2 bytes of
    the master copy, a bf16 optimizer keeps 2 + 2 for the moments); ``fp8_weight_copies``: the
    FP8 weight and its transpose that Transformer Engine keeps beside each 16-bit weight of a
    layer's matrix multiplications (2 on Hopper, 1 on Blackwell with per-tensor scales, which needs no
    transpose, 2.0625 with MXFP8's two copies and block scales; 0 with FP8 primary weights or without
    FP8); ``gemm_weight``: the bytes of each of those weights themselves (2; an FP8 primary weight, which
    replaces the 16-bit one, as many as the copy would take) [5].
    """

    weight: float = float(WEIGHT_BYTES)
    grad: float = float(GRAD_BYTES)
    optimizer: float = float(OPTIMIZER_BYTES)
    fp8_weight_copies: float = 0.0
    gemm_weight: float = float(WEIGHT_BYTES)


def model_state_bytes(params, dp, zero_stage, distributed_optimizer=False,
                      state: StateBytes | None = None) -> dict[str, np.ndarray]:
    """Weights, gradients and optimizer states of ``params`` parameters on one GPU [B] [1].

    Parameters
    ----------
    params : parameters held by the GPU before ZeRO sharding [parameters]
    dp : data-parallel ranks the states are sharded over [ranks]
    zero_stage : 0-3; ``distributed_optimizer`` (Megatron) shards the optimizer states like ZeRO-1.
    state : bytes per parameter of each state (default :class:`StateBytes`: 2, 2 and 12)
    """
    st = state or StateBytes()
    zero = np.asarray(zero_stage)
    shard_opt = (zero >= 1) | np.asarray(distributed_optimizer, dtype=bool)
    return {
        "weights": params * st.weight / np.where(zero >= 3, dp, 1),
        "gradients": params * st.grad / np.where(zero >= 2, dp, 1),
        "optimizer_states": params * st.optimizer / np.where(shard_opt, dp, 1),
    }


def activation_bytes_per_layer(arch: TransformerArch, micro_batch, seq_local, tp, sequence_parallel, recompute,
                               flash_attention, ffn_hidden_active=None, fp8_inputs: bool = False,
                               distribute_saved: bool = False):
    """Activation memory of one transformer layer for one micro-batch [B] [2].

    Korthikanti's Table 2, tensor by tensor, generalised to GQA/SwiGLU/MoE, per token:

    * replicated over the tensor-parallel ranks unless sequence parallelism is on: the inputs of
      the two norms (``2h`` each), the inputs of the QKV and FC1 projections (the norms' outputs,
      ``2h`` each, ``h`` in FP8 [5]) and, when the hidden dropout is not 0, its two masks
      (``h`` each; none at 0 [4]);
    * split over the tensor-parallel ranks: Q, K and V (``2q + 2kv + 2kv``, ``q``/``kv`` the query
      and key/value widths), the projection input (``2q``; in FP8 the projection keeps ``q`` and a
      fused attention kernel that is not recomputed keeps its 16-bit output too), the activation
      function's input (``2f``, SwiGLU ``4f``) and the FC2 input (``2f``, ``f`` in FP8).

    That is Korthikanti's ``34 s b h`` for MHA, GeLU, f = 4h and dropout. The ``a s^2 b`` score
    tensors (softmax output 2 bytes; with attention dropout its mask and output, 3 more) are stored
    only by unfused attention without selective recomputation; a fused kernel keeps a fp32
    log-sum-exp per row. ``recompute`` is 0 none, 1 selective, 2 full: full recomputation keeps the
    layer's 16-bit input (``2 s b h``), split over the tensor ranks with sequence parallelism or
    ``distribute_saved`` (Megatron-LM ``--distribute-saved-activations``, metaseq
    ``--distribute-checkpointed-activations``).

    Parameters
    ----------
    micro_batch : sequences per micro-batch [sequences]
    seq_local : tokens per sequence on this GPU (``s / cp``) [tokens]
    tp : tensor-parallel size; ``sequence_parallel`` bool
    ffn_hidden_active : FFN width active per token (MoE: (top-k + shared) x expert width) [elements]
    fp8_inputs : the linear layers save the FP8 cast of their inputs (Transformer Engine in FP8) [5]
    distribute_saved : full recomputation's saved layer inputs are split over the tensor ranks
    """
    h = float(arch.hidden_size)
    heads = float(arch.attention_heads)
    if arch.is_mla:
        q = heads * arch.qk_head_dim
        kv = heads * (arch.qk_head_dim + arch.value_head_dim) / 2.0
    else:
        q, kv = float(arch.q_dim), float(arch.kv_dim)
    f = float(ffn_hidden_active if ffn_hidden_active is not None else arch.ffn_hidden_size)
    act_in = 4.0 if arch.ffn_type == "swiglu" else 2.0  # the activation function's input per f
    gemm_in = 1.0 if fp8_inputs else 2.0  # bytes of an input saved for a weight gradient [5]
    masks = 2.0 if arch.hidden_dropout > 0 else 0.0  # two 1-byte hidden-dropout masks per h [2, 4]
    sb = micro_batch * seq_local
    rc = np.asarray(recompute)
    flash = np.asarray(flash_attention, dtype=bool)
    repl_div = np.where(sequence_parallel, tp, 1.0)
    # the fused kernel's own 16-bit output, kept beside the projection's FP8 input unless recomputed
    kernel_out = np.where(flash & (rc == 0), 2.0 * q, 0.0) if fp8_inputs else 0.0
    replicated = (2.0 + 2.0 + 2.0 * gemm_in + masks) * h
    split = 4.0 * q + 4.0 * kv - (2.0 - gemm_in) * q + kernel_out + (act_in + gemm_in) * f
    body = sb * (replicated / repl_div + split / tp)
    per_score = 2.0 + (3.0 if arch.attention_dropout > 0 else 0.0)  # softmax out (+ dropout mask, out) [2]
    scores = np.where(flash, 4.0 * micro_batch * heads / tp * seq_local,  # fp32 log-sum-exp per row
                      np.where(rc == 1, 0.0, per_score * micro_batch * heads / tp * seq_local * arch.seq_length))
    saved_div = np.where(np.asarray(sequence_parallel, dtype=bool) | distribute_saved, tp, 1.0)
    return np.where(rc == 2, 2.0 * sb * h / saved_div, body + scores)


def in_flight_factor(pp, micro_batches, virtual_stages, stage=0):
    """Micro-batches whose activations pipeline stage ``stage`` holds at its peak, as a multiple of
    one micro-batch through all its layers [6]: ``min(p - i, m)`` with the 1F1B schedule;
    interleaved over ``v`` chunks, ``min(2 (p - i - 1) + (v - 1) p + 1, m v) / v``, which is
    Korthikanti's ``p (1 + (p-1)/(p v))`` on the first stage [2, 3] and ``p - (p-1)/v`` on the last;
    with ``m == p`` every stage holds all ``m`` (Megatron-Core runs every forward first)."""
    pp = np.asarray(pp, dtype=float)
    m = np.asarray(micro_batches, dtype=float)
    v = np.asarray(virtual_stages, dtype=float)
    i = np.asarray(stage, dtype=float)
    one_f_one_b = np.minimum(np.maximum(pp - i, 1.0), m)
    # with as many micro-batches as stages every forward runs before the first backward [6]
    chunks = np.where(m == pp, m * v, np.minimum(2.0 * (pp - i - 1.0) + (v - 1.0) * pp + 1.0, m * v))
    return np.where(v > 1, chunks / np.maximum(v, 1.0), one_f_one_b)
