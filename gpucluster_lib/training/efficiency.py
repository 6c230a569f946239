"""Efficiency parameters: achievable fractions of datasheet peaks, per GPU generation.

All values live in ``data/efficiency.yaml`` with the evidence each one rests on. They
are the *only* tunable numbers of the training-time engine: the same set is used for
every estimate and every validation row. A scenario can override any of them
(``training.gemm_efficiency``, ``parallelism.dp_overlap``, ``training.efficiency``).
Software terms (what the framework overlaps, its pipeline slot time) live apart, in
:mod:`gpucluster_lib.training.framework`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from gpucluster_lib.errors import ScenarioError
from gpucluster_lib.resources import data_path, load_yaml

EFFICIENCY_PATH = data_path("efficiency.yaml")
#: The fused attention kernel a scenario runs unless it says otherwise (``training.attention_kernel``).
DEFAULT_ATTENTION_KERNEL = "flash-attention-2"


@dataclass(frozen=True)
class Efficiency:
    """Fractions of peak and software constants used by :mod:`gpucluster_lib.training.core`.

    Fractions are dimensionless; times in [s]; sizes in [bytes] or [GiB] as named.
    """

    generation: str
    gemm_efficiency: float
    fp8_gemm_factor: float
    memory_efficiency: float
    #: Fused attention kernel's asymptotic rate, a fraction of the 16-bit peak, and the sequence at
    #: which it runs at half that rate [tokens] (``attention_kernels`` of data/efficiency.yaml, per kernel).
    flash_attention_efficiency: float
    attention_half_rate_tokens: float
    nvlink_efficiency: float
    network_efficiency: float
    layer_overhead_s: float
    unfused_attention_bytes_per_score: float
    elementwise_bytes_per_hidden: float
    activation_bytes_per_ffn_gelu: float
    activation_bytes_per_ffn_swiglu: float
    cross_entropy_bytes_per_logit: float
    optimizer_bytes_per_param: float
    flash_backward_factor: float
    alpha_nvlink_s: float
    alpha_network_s: float
    zero3_overlap: float
    cp_overlap: float
    ep_overlap: float
    step_overhead: float
    cuda_context_gib: float
    comm_buffers_gib: float
    fragmentation: float
    validated: bool = True
    #: What published evidence the generation's values rest on, for a generation not validated against
    #: published runs (``evidence`` of data/efficiency.yaml; the unvalidated-efficiency finding quotes it).
    evidence: str = ""
    #: How the estimate with the catalogue's values has compared with held-out published runs on this GPU, in
    #: words (data/validation/accuracy.yaml through :func:`gpucluster_lib.accuracy.sentence`; filled by
    #: the estimate's ``build_context``, empty when the GPU has none or the scenario sets its own values). The
    #: unvalidated-efficiency warning quotes it, or a note of its own on a calibrated generation.
    accuracy: str = ""
    #: The fused attention kernel the two attention values belong to (``training.attention_kernel``).
    attention_kernel: str = DEFAULT_ATTENTION_KERNEL
    #: Fixed hidden fractions that replace the scheduled overlap models when given
    #: (``parallelism.dp_overlap``; ``training.efficiency: {tp_overlap: ...}``); None = modelled.
    dp_overlap: float | None = None
    tp_overlap: float | None = None

    def replace(self, **changes: Any) -> Efficiency:
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


FIELDS = tuple(f.name for f in dataclasses.fields(Efficiency)
               if f.name not in ("generation", "validated", "evidence", "accuracy", "attention_kernel"))


@lru_cache(maxsize=2)
def load_table(path: str | None = None) -> dict[str, Any]:
    with Path(path or EFFICIENCY_PATH).open(encoding="utf-8") as fh:
        return load_yaml(fh)


def generation_of(accelerator: dict[str, Any]) -> str:
    """Map a catalogue accelerator row to a generation key of ``data/efficiency.yaml``."""
    arch = str(accelerator.get("architecture") or "").lower()
    for key in ("ampere", "hopper", "blackwell"):
        if key in arch:
            # Ampere GA102 (A10) and Ada are not the GA100 data-centre part; treat as default.
            if key == "ampere" and "ga100" not in arch:
                return "default"
            return key
    return "default"


def attention_kernel_name(kernel: str) -> str:
    """The human name of a fused attention kernel (``attention_kernels`` of data/efficiency.yaml)."""
    return str(load_table()["attention_kernels"][kernel]["name"])


def attention_kernels() -> dict[str, str]:
    """Every fused attention kernel a scenario may choose: id -> human name."""
    return {k: str(v["name"]) for k, v in load_table()["attention_kernels"].items()}


#: The (query-key, value) head dimensions cuDNN's fused attention trains on Blackwell besides both <= 128, as
#: Transformer Engine offers them: 192 / 128 (multi-head latent attention; cuDNN >= 9.11, TE v2.5 on) and 256 / 256
#: (cuDNN >= 9.23, TE v2.18). transformer_engine/common/fused_attn/fused_attn.cpp, v2.18, the head-dimension
#: conditions of nvte_get_fused_attn_backend (l.312-336: "(head_dim_qk <= 128 && head_dim_v <= 128)", "9.11: d_qk =
#: 192, d_v = 128 + Blackwell + bprop", "9.23: d_qk = d_v = 256 + SM10x ... + bprop"); TE v1.14 to v2.4 allow on
#: Blackwell only heads of at most 128 (release_v1.14, 3b2a7b00: "!(sm_arch_ == 100 && (head_dim_qk > 128 ||
#: head_dim_v > 128))").
CUDNN_BLACKWELL_TRAINING_HEAD_PAIRS = ((192, 128), (256, 256))
#: The widest heads cuDNN trains on Blackwell in every Transformer Engine release (both dimensions).
CUDNN_BLACKWELL_TRAINING_MAX_HEAD = 128


def cudnn_trains_heads(generation: str, qk_head_dim: int, value_head_dim: int) -> bool:
    """Whether cuDNN's fused attention, through Transformer Engine, trains attention heads of these dimensions
    on a GPU generation: on Blackwell heads of at most 128, or one of :data:`CUDNN_BLACKWELL_TRAINING_HEAD_PAIRS`
    (TE's newest releases); elsewhere true (Hopper trains heads up to 256 from cuDNN 9.5, fused_attn.cpp v2.5
    l.234-237; no model here has wider ones)."""
    if generation != "blackwell":
        return True
    qk, v = int(qk_head_dim), int(value_head_dim)
    return max(qk, v) <= CUDNN_BLACKWELL_TRAINING_MAX_HEAD or (qk, v) in CUDNN_BLACKWELL_TRAINING_HEAD_PAIRS


def _either(names: list[str]) -> str:
    """``a``, ``a or b``, ``a, b or c``: the choices in words."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def vendor_check(accelerator: dict[str, Any], kernel: str, kernels: dict[str, Any]) -> None:
    """A ``ScenarioError`` naming ``training.attention_kernel`` when the kernel is one vendor's library
    (``vendor`` of data/efficiency.yaml ``attention_kernels``: cuDNN, NVIDIA's) and the accelerator is another
    vendor's (data/accelerators.csv ``vendor``; an accelerator without one is not refused)."""
    need = kernels[kernel].get("vendor")
    have = str(accelerator.get("vendor") or "").strip()
    if need is None or not have or have.split()[0].lower() == str(need).lower():
        return
    others = ", ".join(k for k, v in kernels.items() if v.get("vendor") is None)
    name = accelerator.get("name") or accelerator.get("id")
    raise ScenarioError("training.attention_kernel",
                        f"{kernels[kernel]['name']} is {need}'s library and runs only on {need} GPUs, but the {name} "
                        f"is made by {have}; choose {_either(others.split(', '))}")


def for_accelerator(accelerator: dict[str, Any], overrides: dict[str, float] | None = None,
                    attention_kernel: str = DEFAULT_ATTENTION_KERNEL) -> Efficiency:
    """The efficiency set for an accelerator row and attention kernel, with scenario overrides applied.

    The generation's values (``generations``), replaced by the GPU's own measured ones where
    data/efficiency.yaml has them under ``accelerators`` (keyed by the catalogue id), then the overrides."""
    table = load_table()
    gen = generation_of(accelerator)
    kernels = table["attention_kernels"]
    if attention_kernel not in kernels:
        raise ScenarioError("training.attention_kernel", "unknown attention kernel; valid: "
                            + ", ".join(f"{k} ({v['name']})" for k, v in kernels.items()))
    vendor_check(accelerator, attention_kernel, kernels)
    # the GPU's own measured values inside its generation (``accelerators`` of data/efficiency.yaml)
    own = dict((table.get("accelerators") or {}).get(str(accelerator.get("id") or ""), {}))
    kern = {**kernels[attention_kernel][gen], **own.pop("attention_kernels", {}).get(attention_kernel, {})}
    generation = dict(table["generations"][gen])
    validated = bool(generation.pop("validated", True))
    evidence = str(generation.pop("evidence", "") or "").strip()
    values = {**table["software"], **generation, **own, "flash_attention_efficiency": kern["rate"],
              "attention_half_rate_tokens": kern["half_rate_tokens"]}
    eff = Efficiency(generation=gen, validated=validated, evidence=evidence, attention_kernel=attention_kernel,
                     **{k: float(v) for k, v in values.items()})
    if overrides:
        bad = [k for k in overrides if k not in FIELDS]
        if bad:
            raise ScenarioError(f"training.efficiency.{bad[0]}",
                                f"unknown efficiency parameter; valid: {', '.join(FIELDS)}")
        eff = eff.replace(**{k: float(v) for k, v in overrides.items()})
    return eff
