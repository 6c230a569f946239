"""Workload definitions: transformer architectures, presets and parameter counts.

A :class:`TransformerArch` is resolved from a scenario's ``model`` section: a preset
from ``data/models.yaml`` with any fields given beside it overriding the preset.
Parameter counts are computed from the architecture, never copied from the preset,
and tests compare them with the published counts.

References
----------
.. [1] Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU
       Clusters Using Megatron-LM", SC21 (arXiv:2104.04473), Sec. 5.1:
       P = 12 l h^2 (1 + 13/(12h) + (V + s)/(12 l h)) for GPT with biases, LayerNorm,
       learned positions and tied embeddings.
.. [2] Ainslie et al. 2023, "GQA" (arXiv:2305.13245): K and V projections of
       kv_heads x head_dim columns each.
.. [3] Shazeer 2020, "GLU Variants Improve Transformer" (arXiv:2002.05202): SwiGLU FFN
       has three h x f matrices.
.. [4] Fedus et al. 2022, "Switch Transformers"; Jiang et al. 2024, "Mixtral of Experts":
       routed experts, router h x E, top-k active experts per token.
.. [5] DeepSeek-AI 2024, "DeepSeek-V2" (arXiv:2405.04434) Sec. 2.1 and "DeepSeek-V3 Technical
       Report" (arXiv:2412.19437) Sec. 2.1.1: multi-head latent attention (MLA), a query
       down/up projection of rank d_c', a joint KV latent of rank d_c plus a decoupled RoPE key
       of d_h^R per token; only the latent and the RoPE key are cached.
.. [6] Dropout probabilities: Megatron-LM's defaults ``--hidden-dropout 0.1`` and
       ``--attention-dropout 0.1`` (megatron/training/arguments.py, core_v0.8.0), taken for an
       architecture given without them; each preset carries its model's own (data/models.yaml).
       A dropout of probability 0 stores no mask (training.memory).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from gpucluster_lib.errors import ScenarioError, UnknownIdError
from gpucluster_lib.resources import data_path, load_yaml
from gpucluster_lib.scenario import ModelSpec

#: Presets ship with the code (``data/models.yaml``); GPUCLUSTER_DATA only redirects the CSV catalogue.
MODELS_PATH = data_path("models.yaml")

FfnType = Literal["gelu", "swiglu", "relu2"]


@dataclass(frozen=True)
class TransformerArch:
    """A decoder (or encoder) transformer, dense or mixture-of-experts.

    All sizes are counts (elements), not bytes.
    """

    name: str
    layers: int
    hidden_size: int
    attention_heads: int
    kv_heads: int
    ffn_hidden_size: int
    ffn_type: FfnType
    vocab_size: int
    seq_length: int
    head_dim: int
    tied_embeddings: bool = False
    position_embedding: str = "rope"
    bias: bool = False
    norm: str = "rmsnorm"
    num_experts: int = 1
    experts_per_token: int = 1
    expert_ffn_hidden_size: int = 0
    shared_experts: int = 0
    moe_layer_interval: int = 1
    dense_layers: int = 0
    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    qk_rope_head_dim: int = 0
    v_head_dim: int = 0
    #: dropout probability after the attention projection and after the FFN (Megatron
    #: ``hidden_dropout``, llm-foundry ``resid_pdrop``) and on the attention probabilities [6]
    hidden_dropout: float = 0.1
    attention_dropout: float = 0.1
    #: an encoder-only model (bidirectional attention, trained to fill in masked tokens: BERT): it generates
    #: no tokens, so it has nothing to serve as a text generator (data/models.yaml; decoders leave it out)
    encoder_only: bool = False
    kind: str = "transformer"
    source: str = ""
    published_params_billion: float | None = None
    published_active_params_billion: float | None = None

    # ---- structure --------------------------------------------------------
    @property
    def is_moe(self) -> bool:
        return self.num_experts > 1

    @property
    def moe_layers(self) -> int:
        """Number of layers whose FFN is a mixture of experts."""
        if not self.is_moe:
            return 0
        candidates = self.layers - self.dense_layers
        return (candidates + self.moe_layer_interval - 1) // self.moe_layer_interval

    @property
    def dense_ffn_layers(self) -> int:
        return self.layers - self.moe_layers

    @property
    def q_dim(self) -> int:
        """Width of the query projection output, heads x head_dim."""
        return self.attention_heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        """Width of each of the K and V projection outputs, kv_heads x head_dim [2]."""
        return self.kv_heads * self.head_dim

    @property
    def is_mla(self) -> bool:
        """Multi-head latent attention (DeepSeek-V2/V3) [5]."""
        return self.kv_lora_rank > 0

    @property
    def qk_head_dim(self) -> int:
        """Query/key width per head used in the scores: head_dim (+ the RoPE part for MLA) [5]."""
        return self.head_dim + (self.qk_rope_head_dim if self.is_mla else 0)

    @property
    def value_head_dim(self) -> int:
        """Value width per head (``v_head_dim`` for MLA, else ``head_dim``)."""
        return self.v_head_dim or self.head_dim

    # ---- parameter counts [parameters] -------------------------------------
    def attention_params_per_layer(self) -> int:
        """Q, K, V and output projections (+ biases when ``bias``) [1, 2]; MLA projections [5]."""
        h = self.hidden_size
        if self.is_mla:
            a, qk, v = self.attention_heads, self.qk_head_dim, self.value_head_dim
            if self.q_lora_rank:
                q = h * self.q_lora_rank + self.q_lora_rank + self.q_lora_rank * a * qk  # down, RMSNorm, up
            else:
                q = h * a * qk
            kv = (h * (self.kv_lora_rank + self.qk_rope_head_dim) + self.kv_lora_rank
                  + self.kv_lora_rank * a * (self.head_dim + v))
            return q + kv + a * v * h
        weights = h * self.q_dim + 2 * h * self.kv_dim + self.q_dim * h
        biases = (self.q_dim + 2 * self.kv_dim + h) if self.bias else 0
        return weights + biases

    def attention_matmul_params_per_layer(self) -> int:
        """Parameters of the attention projections that take part in GEMMs (no biases/norms)."""
        if self.is_mla:
            extra_norms = self.kv_lora_rank + (self.q_lora_rank if self.q_lora_rank else 0)
            return self.attention_params_per_layer() - extra_norms
        h = self.hidden_size
        return h * self.q_dim + 2 * h * self.kv_dim + self.q_dim * h

    def ffn_matmul_params(self, ffn_hidden: int) -> int:
        """Weight-matrix parameters of one FFN or expert (no biases): 2hf or 3hf (SwiGLU) [3]."""
        return (3 if self.ffn_type == "swiglu" else 2) * self.hidden_size * ffn_hidden

    def attention_output_dim(self) -> int:
        """Input width of the attention output projection, heads x value head dim."""
        return self.attention_heads * self.value_head_dim

    def ffn_params(self, ffn_hidden: int) -> int:
        """One FFN (or one expert): 2 h f for GeLU/ReLU^2, 3 h f for SwiGLU [3]."""
        h = self.hidden_size
        mats = 3 if self.ffn_type == "swiglu" else 2
        biases = (ffn_hidden * (mats - 1) + h) if self.bias else 0
        return mats * h * ffn_hidden + biases

    def norm_params_per_layer(self) -> int:
        """Two norms per layer; LayerNorm has a scale and a bias, RMSNorm a scale only."""
        return 2 * self.hidden_size * (2 if self.norm == "layernorm" else 1)

    def embedding_params(self) -> int:
        """Input embedding (+ learned positions) and, when untied, the output layer."""
        h = self.hidden_size
        n = self.vocab_size * h
        if self.position_embedding == "learned":
            n += self.seq_length * h
        if not self.tied_embeddings:
            n += self.vocab_size * h
        return n

    def _expert_ffn(self) -> int:
        return self.expert_ffn_hidden_size or self.ffn_hidden_size

    def moe_params_per_layer(self, active: bool) -> int:
        experts = self.experts_per_token if active else self.num_experts
        router = self.hidden_size * self.num_experts
        return (experts + self.shared_experts) * self.ffn_params(self._expert_ffn()) + router

    def total_params(self) -> int:
        """All parameters [parameters]."""
        return self._params(active=False)

    def active_params(self) -> int:
        """Parameters used per token (top-k experts for MoE) [parameters]."""
        return self._params(active=True)

    def non_embedding_params(self, active: bool = False) -> int:
        return self._params(active) - self.embedding_params()

    def _params(self, active: bool) -> int:
        per_layer_common = self.attention_params_per_layer() + self.norm_params_per_layer()
        final_norm = self.hidden_size * (2 if self.norm == "layernorm" else 1)
        return (
            self.layers * per_layer_common
            + self.dense_ffn_layers * self.ffn_params(self.ffn_hidden_size)
            + self.moe_layers * self.moe_params_per_layer(active)
            + final_norm
            + self.embedding_params()
        )

    # ---- inference-facing sizes --------------------------------------------
    def kv_cache_bytes_per_token(self, bytes_per_element: float) -> float:
        """K and V for one token across all layers: layers x 2 x kv_heads x head_dim x bytes [2].

        For MLA only the compressed latent and the RoPE key are cached:
        layers x (kv_lora_rank + qk_rope_head_dim) x bytes [5].
        """
        if self.is_mla:
            return self.layers * (self.kv_lora_rank + self.qk_rope_head_dim) * bytes_per_element
        return self.layers * 2 * self.kv_heads * self.head_dim * bytes_per_element


_ARCH_FIELDS = {fl.name for fl in dataclasses.fields(TransformerArch)}
_REQUIRED = ("layers", "hidden_size", "attention_heads", "ffn_hidden_size", "vocab_size", "seq_length")


@lru_cache(maxsize=4)
def load_presets(path: str | None = None) -> dict[str, dict[str, Any]]:
    """The presets in ``data/models.yaml`` as plain dicts keyed by id."""
    path = Path(path or MODELS_PATH)
    with path.open(encoding="utf-8") as fh:
        data = load_yaml(fh) or {}
    for key, entry in data.items():
        if not entry.get("source"):
            raise ScenarioError(f"models.yaml:{key}", "every preset needs a source")
    return data


def preset_ids(kind: str | None = None) -> list[str]:
    return [k for k, v in load_presets().items() if kind is None or v.get("kind", "transformer") == kind]


def resolve_transformer(spec: ModelSpec | str, *, path: str = "model") -> TransformerArch:
    """Build a :class:`TransformerArch` from a preset id or a scenario ``model`` section."""
    if isinstance(spec, str):
        spec = ModelSpec(preset=spec)
    values: dict[str, Any] = {}
    if spec.preset is not None:
        presets = load_presets()
        if spec.preset not in presets:
            raise UnknownIdError("model preset", spec.preset, presets, f"{path}.preset")
        values.update(presets[spec.preset])
    for fl in dataclasses.fields(spec):
        v = getattr(spec, fl.name)
        if v is not None and fl.name != "preset":
            values[fl.name] = v
    kind = values.get("kind", "transformer")
    if kind != "transformer":
        raise ScenarioError(f"{path}.kind", f"{values.get('name', spec.preset)!r} is a {kind} model, not a transformer")
    missing = [k for k in _REQUIRED if values.get(k) is None]
    if missing:
        raise ScenarioError(f"{path}.{missing[0]}",
                            f"required for a custom transformer (or give model.preset, one of: {', '.join(preset_ids('transformer'))})")
    values.setdefault("kv_heads", values["attention_heads"])
    values.setdefault("ffn_type", "gelu")
    if values["hidden_size"] % values["attention_heads"] and values.get("head_dim") is None:
        raise ScenarioError(f"{path}.attention_heads",
                            f"hidden_size {values['hidden_size']} is not divisible by attention_heads "
                            f"{values['attention_heads']}; give head_dim explicitly")
    values.setdefault("head_dim", values["hidden_size"] // values["attention_heads"])
    if values["attention_heads"] % values["kv_heads"]:
        raise ScenarioError(f"{path}.kv_heads", f"attention_heads {values['attention_heads']} must be a multiple of "
                            f"kv_heads {values['kv_heads']} (grouped-query attention)")
    if values.get("num_experts", 1) > 1 and values.get("experts_per_token", 1) > values["num_experts"]:
        raise ScenarioError(f"{path}.experts_per_token",
                            f"top-k {values['experts_per_token']} exceeds num_experts {values['num_experts']}")
    for key in ("hidden_dropout", "attention_dropout"):
        p = values.get(key)
        if p is not None and not 0.0 <= float(p) < 1.0:
            raise ScenarioError(f"{path}.{key}", f"a dropout probability is at least 0 and below 1, got {p}")
    if not values.get("kv_lora_rank"):  # the MLA fields mean nothing without a compressed KV latent
        for key in ("q_lora_rank", "qk_rope_head_dim", "v_head_dim"):
            if values.get(key):
                raise ScenarioError(f"{path}.{key}", "applies to multi-head latent attention only: set "
                                                     "model.kv_lora_rank as well, or remove it")
    values.setdefault("name", spec.preset or "custom transformer")
    values["kind"] = kind
    return TransformerArch(**{k: v for k, v in values.items() if k in _ARCH_FIELDS})
