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
       The first 1F1B stage holds p micro-batches (``L`` layers' worth), times
       ``1 + (p-1)/(p v)`` with the interleaved schedule.
"""

from __future__ import annotations

import numpy as np

from gpucluster_lib.workloads.transformer import TransformerArch

#: 16-bit weights and gradients, 12 bytes of fp32 optimizer state per parameter [1].
WEIGHT_BYTES, GRAD_BYTES, OPTIMIZER_BYTES = 2, 2, 12


def model_state_bytes(params, dp, zero_stage, distributed_optimizer=False) -> dict[str, np.ndarray]:
    """Weights, gradients and optimizer states of ``params`` parameters on one GPU [B] [1].

    Parameters
    ----------
    params : parameters held by the GPU before ZeRO sharding [parameters]
    dp : data-parallel ranks the states are sharded over [ranks]
    zero_stage : 0-3; ``distributed_optimizer`` (Megatron) shards the optimizer states like ZeRO-1.
    """
    zero = np.asarray(zero_stage)
    shard_opt = (zero >= 1) | np.asarray(distributed_optimizer, dtype=bool)
    return {
        "weights": params * WEIGHT_BYTES / np.where(zero >= 3, dp, 1),
        "gradients": params * GRAD_BYTES / np.where(zero >= 2, dp, 1),
        "optimizer_states": params * OPTIMIZER_BYTES / np.where(shard_opt, dp, 1),
    }


def activation_bytes_per_layer(arch: TransformerArch, micro_batch, seq_local, tp, sequence_parallel, recompute,
                               flash_attention, ffn_hidden_active=None):
    """Activation memory of one transformer layer for one micro-batch [B] [2].

    Korthikanti's Table 2 generalised: attention stores ``s b (3h + 4q + 4kv)`` (``q``/``kv``
    the query and key/value widths, 11 s b h for MHA), the FFN ``s b (3h + 4f)`` for GeLU or
    ``s b (3h + 6f)`` for SwiGLU, the two norms ``4 s b h``; of these ``10 s b h`` are not split
    by tensor parallelism unless sequence parallelism is on. The ``5 a s^2 b`` score tensors
    are stored only by unfused attention without selective recomputation (a fused kernel keeps
    a fp32 log-sum-exp per row). ``recompute`` is 0 none, 1 selective, 2 full.

    Parameters
    ----------
    micro_batch : sequences per micro-batch [sequences]
    seq_local : tokens per sequence on this GPU (``s / cp``) [tokens]
    tp : tensor-parallel size; ``sequence_parallel`` bool
    ffn_hidden_active : FFN width active per token (MoE: (top-k + shared) x expert width) [elements]
    """
    h = float(arch.hidden_size)
    heads = float(arch.attention_heads)
    if arch.is_mla:
        q = heads * arch.qk_head_dim
        kv = heads * (arch.qk_head_dim + arch.value_head_dim) / 2.0
    else:
        q, kv = float(arch.q_dim), float(arch.kv_dim)
    f = float(ffn_hidden_active if ffn_hidden_active is not None else arch.ffn_hidden_size)
    ffn_coef = 6.0 if arch.ffn_type == "swiglu" else 4.0
    sb = micro_batch * seq_local
    rc = np.asarray(recompute)
    repl_div = np.where(sequence_parallel, tp, 1.0)
    body = sb * (10.0 * h / repl_div + (4.0 * q + 4.0 * kv + ffn_coef * f) / tp)
    flash = np.asarray(flash_attention, dtype=bool)
    scores = np.where(flash, 4.0 * micro_batch * heads / tp * seq_local,  # fp32 log-sum-exp per row
                      np.where(rc == 1, 0.0, 5.0 * micro_batch * heads / tp * seq_local * arch.seq_length))
    return np.where(rc == 2, 2.0 * sb * h / repl_div, body + scores)


def in_flight_factor(pp, micro_batches, virtual_stages):
    """Micro-batches whose activations the first 1F1B stage holds, as a multiple of one [2]:
    ``min(p, m)``, times ``1 + (p-1)/(p v)`` when interleaved."""
    return np.minimum(pp, micro_batches) * np.where(virtual_stages > 1, 1.0 + (pp - 1.0) / (pp * virtual_stages), 1.0)
