"""Serving precisions: bytes per weight, KV-cache bytes, compute precision and its peak.

``bf16``/``fp16``: weights, activations and KV cache in 16 bits.
``fp8``: FP8 weights and activations (W8A8, e.g. TensorRT-LLM/ModelOpt FP8), FP8 KV cache.
``int8``: INT8 weights and activations (W8A8, SmoothQuant, Xiao et al. 2023), INT8 KV cache.
``int4``: *weight-only* quantisation (W4A16: GPTQ, Frantar et al. 2023; AWQ, Lin et al. 2024):
weights stored in 4 bits with one 16-bit scale per group of 128 weights, dequantised on the
fly; the GEMMs run at the 16-bit activation precision, so the compute peak is BF16 (FP16
where the accelerator has no BF16) and only the bytes read shrink.

The compute peak always comes from the catalogue column of the compute precision
(``bf16_tflops``, ``fp16_tflops``, ``fp8_tflops``, ``int8_tops``); an FP8 peak is never
derived from the BF16 one. A missing column means the accelerator cannot serve at that
precision (:func:`compute_peak_tflops` returns ``None`` and the caller reports a finding).
"""

from __future__ import annotations

import math
from typing import Any

#: Bytes per stored weight [bytes]. int4: 4 bits + a 16-bit scale per group of 128 (GPTQ/AWQ).
INT4_GROUP_SIZE = 128
WEIGHT_BYTES: dict[str, float] = {"bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0,
                                  "int4": 0.5 + 2.0 / INT4_GROUP_SIZE}
#: Bytes per KV-cache element [bytes].
KV_BYTES: dict[str, float] = {"bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0}
#: Bytes per activation element exchanged in TP all-reduces [bytes] (16-bit in every mode:
#: FP8/INT8 engines keep the residual stream and the all-reduce in BF16/FP16).
ACTIVATION_BYTES = 2.0
#: Default KV-cache precision for each serving precision.
DEFAULT_KV_PRECISION = {"bf16": "bf16", "fp16": "fp16", "fp8": "fp8", "int8": "int8", "int4": "bf16"}
_PEAK_COLUMN = {"bf16": "bf16_tflops", "fp16": "fp16_tflops", "fp8": "fp8_tflops", "int8": "int8_tops"}


def _present(v: Any) -> bool:
    return v is not None and not (isinstance(v, float) and math.isnan(v)) and v > 0


def compute_precision(precision: str, accelerator: dict[str, Any]) -> str:
    """The precision the GEMMs run at: the serving precision, or 16-bit for int4 weight-only."""
    if precision != "int4":
        return precision
    return "bf16" if _present(accelerator.get("bf16_tflops")) else "fp16"


def compute_peak_tflops(precision: str, accelerator: dict[str, Any]) -> float | None:
    """Dense peak at the compute precision of ``precision`` [TFLOP/s or TOP/s]; None when not supported."""
    value = accelerator.get(_PEAK_COLUMN[compute_precision(precision, accelerator)])
    return float(value) if _present(value) else None


def supported_precisions(accelerator: dict[str, Any]) -> list[str]:
    """Serving precisions the catalogue row has a dense peak for."""
    return [p for p in WEIGHT_BYTES if compute_peak_tflops(p, accelerator) is not None]
