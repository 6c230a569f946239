"""Floating-point operations of transformer training.

Model FLOPs count the work of one forward and one backward pass (backward = 2x forward);
hardware FLOPs add what activation recomputation repeats. Both count the GEMMs and the
attention score/value products over the *full* s x s matrix (no causal halving), as
Narayanan 2021 Eq. 3, Korthikanti 2022 Eq. 7 and llm-foundry's MFU do; element-wise
operations are not counted.

References
----------
.. [1] Narayanan et al. 2021 (arXiv:2104.04473) Eq. 3: F = 96 B s l h^2 (1 + s/(6h) + V/(16 l h))
       per iteration with full recomputation (4 passes of the layers, 3 of the output layer).
.. [2] Korthikanti et al. 2022 (arXiv:2205.05198) Eq. 7 (model FLOPs, 72 B s l h^2 (1 + s/(6h) +
       V/(12 l h))) and Sec. 5 / Eq. 8 (selective recomputation repeats only the attention core).
.. [3] Chowdhery et al. 2022, PaLM (arXiv:2204.02311) App. B: MFU = 6N + 12 l h s per token.
"""

from __future__ import annotations

from gpucluster_lib.workloads.transformer import TransformerArch

RECOMPUTE_MODES = ("none", "selective", "full")


def layer_matmul_flops_per_token(arch: TransformerArch) -> dict[str, float]:
    """Forward GEMM FLOPs per token for all layers, split by part [FLOP/token].

    ``attention``: Q/K/V/O projections (2 x params); ``ffn``: dense FFNs plus, for MoE,
    the top-k and shared experts and the router (2 x active params) [1, 4 of models.py];
    ``scores``: Q K^T and A V, 2 s heads (d_qk + d_v) per layer (full, non-causal) [1].
    """
    s = arch.seq_length
    attn = 2 * arch.layers * arch.attention_matmul_params_per_layer()
    ffn = 2 * arch.dense_ffn_layers * arch.ffn_matmul_params(arch.ffn_hidden_size)
    if arch.is_moe:
        e_ffn = arch.expert_ffn_hidden_size or arch.ffn_hidden_size
        per_moe = ((arch.experts_per_token + arch.shared_experts) * arch.ffn_matmul_params(e_ffn)
                   + arch.hidden_size * arch.num_experts)
        ffn += 2 * arch.moe_layers * per_moe
    scores = 2 * arch.layers * s * arch.attention_heads * (arch.qk_head_dim + arch.value_head_dim)
    return {"attention": float(attn), "ffn": float(ffn), "scores": float(scores)}


def logits_flops_per_token(arch: TransformerArch) -> float:
    """Output-layer GEMM, forward: 2 h V [FLOP/token] [1]."""
    return 2.0 * arch.hidden_size * arch.vocab_size


def forward_flops_per_token(arch: TransformerArch) -> float:
    """All forward FLOPs per token [FLOP/token]."""
    return sum(layer_matmul_flops_per_token(arch).values()) + logits_flops_per_token(arch)


def model_flops_per_token(arch: TransformerArch) -> float:
    """Training model FLOPs per token, forward + backward = 3 x forward [FLOP/token] [2, 3]."""
    return 3.0 * forward_flops_per_token(arch)


def every_second_mm_flops_per_token(arch: TransformerArch) -> float:
    """Forward FLOPs per token that TorchTitan's op-level selective checkpointing reruns [FLOP/token]
    (training/core.py reference [25], ``every_second_mm_s``): every layer's K and output projections,
    ``2 h (kv_dim + q_out)``, each dense layer's third FFN GEMM (w3 of SwiGLU, ``2 h f``; FC2 of a GELU FFN, the
    same count) and each MoE layer's routed experts in full (``torch._grouped_mm``, not in the policy's save list),
    ``2 k x`` the FFN GEMM parameters of one expert. The attention core is saved (its SDPA op is in the list).

    Worked case (by hand): Llama 3.1 8B (h 4,096, kv_dim 1,024, q_out 4,096, f 14,336, 32 layers):
    2 x 4,096 x (1,024 + 4,096 + 14,336) x 32 = 5,100,273,664 FLOP/token."""
    h = float(arch.hidden_size)
    attn = 2.0 * arch.layers * h * (arch.kv_dim + arch.attention_output_dim())
    dense = 2.0 * arch.dense_ffn_layers * h * arch.ffn_hidden_size
    experts = 0.0
    if arch.is_moe:
        e_ffn = arch.expert_ffn_hidden_size or arch.ffn_hidden_size
        experts = 2.0 * arch.moe_layers * arch.experts_per_token * arch.ffn_matmul_params(e_ffn)
    return float(attn + dense + experts)


def recompute_flops_per_token(arch: TransformerArch, recompute: str, early_stop: bool = False,
                              selective: str = "attention") -> float:
    """Extra forward FLOPs per token repeated by activation recomputation [FLOP/token].

    ``full`` repeats the forward of every layer (not the output layer) [1], less, with
    ``early_stop`` (PyTorch 2.1's non-reentrant checkpoint, training/core.py reference [14]), each
    dense layer's FFN output projection, 2 h f per token; ``selective`` repeats only the attention
    scores/values [2], or, with ``selective="every_second_mm"`` (the framework's ``selective_recompute``,
    TorchTitan), the matmuls of :func:`every_second_mm_flops_per_token`; ``none`` nothing.
    """
    parts = layer_matmul_flops_per_token(arch)
    if recompute == "full":
        skipped = 2.0 * arch.dense_ffn_layers * arch.hidden_size * arch.ffn_hidden_size if early_stop else 0.0
        return parts["attention"] + parts["ffn"] + parts["scores"] - skipped
    if recompute == "selective":
        return every_second_mm_flops_per_token(arch) if selective == "every_second_mm" else parts["scores"]
    return 0.0


def hardware_flops_per_token(arch: TransformerArch, recompute: str, early_stop: bool = False,
                             selective: str = "attention") -> float:
    """Model FLOPs plus recomputation [FLOP/token] (``early_stop``, ``selective``: see
    :func:`recompute_flops_per_token`)."""
    return model_flops_per_token(arch) + recompute_flops_per_token(arch, recompute, early_stop, selective)


def narayanan_eq3_flops(batch: int, seq: int, layers: int, hidden: int, vocab: int) -> float:
    """Narayanan 2021 Eq. 3, FLOPs per iteration with full recomputation [FLOP] [1]."""
    return 96.0 * batch * seq * layers * hidden**2 * (1 + seq / (6 * hidden) + vocab / (16 * layers * hidden))


def korthikanti_model_flops(batch: int, seq: int, layers: int, hidden: int, vocab: int) -> float:
    """Korthikanti 2022 model FLOPs per iteration (no recomputation) [FLOP] [2]."""
    return 72.0 * batch * seq * layers * hidden**2 * (1 + seq / (6 * hidden) + vocab / (12 * layers * hidden))
