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


def recompute_flops_per_token(arch: TransformerArch, recompute: str, early_stop: bool = False) -> float:
    """Extra forward FLOPs per token repeated by activation recomputation [FLOP/token].

    ``full`` repeats the forward of every layer (not the output layer) [1], less, with
    ``early_stop`` (PyTorch 2.1's non-reentrant checkpoint, training/core.py reference [14]), each
    dense layer's FFN output projection, 2 h f per token; ``selective`` repeats only the attention
    scores/values [2]; ``none`` nothing.
    """
    parts = layer_matmul_flops_per_token(arch)
    if recompute == "full":
        skipped = 2.0 * arch.dense_ffn_layers * arch.hidden_size * arch.ffn_hidden_size if early_stop else 0.0
        return parts["attention"] + parts["ffn"] + parts["scores"] - skipped
    if recompute == "selective":
        return parts["scores"]
    return 0.0


def hardware_flops_per_token(arch: TransformerArch, recompute: str, early_stop: bool = False) -> float:
    """Model FLOPs plus recomputation [FLOP/token] (``early_stop``: see :func:`recompute_flops_per_token`)."""
    return model_flops_per_token(arch) + recompute_flops_per_token(arch, recompute, early_stop)


def narayanan_eq3_flops(batch: int, seq: int, layers: int, hidden: int, vocab: int) -> float:
    """Narayanan 2021 Eq. 3, FLOPs per iteration with full recomputation [FLOP] [1]."""
    return 96.0 * batch * seq * layers * hidden**2 * (1 + seq / (6 * hidden) + vocab / (16 * layers * hidden))


def korthikanti_model_flops(batch: int, seq: int, layers: int, hidden: int, vocab: int) -> float:
    """Korthikanti 2022 model FLOPs per iteration (no recomputation) [FLOP] [2]."""
    return 72.0 * batch * seq * layers * hidden**2 * (1 + seq / (6 * hidden) + vocab / (12 * layers * hidden))
