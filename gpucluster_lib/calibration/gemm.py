"""GEMM efficiency by shape: the achieved fraction of dense peak for an (m x k) @ (k x n) GEMM.

Public API (stable; other packages call only these):

* :class:`GemmCurve` -- the parameters of one curve (one dtype on one device), with
  ``curve.efficiency(m, n, k, peak_tflops=None)``, ``curve.shape_factor(m, n, k, ...)``,
  ``curve.time_s(m, n, k, peak_tflops)``, ``to_dict()`` / ``GemmCurve.from_dict(d)``.
* :func:`gemm_efficiency` ``(m, n, k, dtype="bf16", profile=None, peak_tflops=None)`` -> fraction
  of the dense peak of ``dtype`` (a float for scalars, an array for arrays; numpy broadcasting).
* :func:`gemm_curve` ``(dtype, profile=None)`` -> the :class:`GemmCurve` in force for ``dtype``.
* :data:`DEFAULT_CURVES` -- the shipped curves per dtype, each with its source.
* :func:`fit_gemm_curve` ``(m, n, k, tflops, peak_tflops, ...)`` -> a fitted :class:`GemmCurve`
  (used by ``gpucluster calibrate``), and :func:`fit_quality` for its errors.

``profile`` is anything with a ``gemm`` mapping ``{dtype: GemmCurve}`` (a
:class:`~gpucluster_lib.calibration.profile.CalibrationProfile`) or such a mapping itself;
dtypes it lacks fall back to :data:`DEFAULT_CURVES`.

Model
-----
Each dimension's utilisation saturates (a Hill curve, exponent ``p``)::

    g(x; x_half) = x^p / (x^p + x_half^p)
    e_shape      = e_max g(m; m_half) g(n; n_half) g(k; k_half)
    t            = 2 m n k / (P e_shape) + t_0            [s]
    efficiency   = 2 m n k / (P t) = 1 / (1 / e_shape + P t_0 / (2 m n k))

``m`` and ``n`` set how many output tiles there are to spread over the SMs (tile and wave
quantisation) and ``k`` how long each tile's main loop runs against its prologue and epilogue
(NVIDIA, "Matrix Multiplication Background User's Guide", DU-09799-001, Sec. 2.3 and Ch. 3
"Dimension Quantization Effects": small dimensions leave SMs idle or tiles partly empty). The
smooth ``g`` is the average of those staircases over cuBLAS's choice among tile shapes,
split-K and stream-K kernels. ``t_0`` is a fixed time per GEMM (kernel prologue, pipeline fill,
epilogue) that dominates tiny GEMMs; it needs a peak ``P`` [FLOP/s] to become a fraction:
``peak_tflops`` given, else the peak the curve was measured against (``curve.peak_tflops``),
else ``t_0`` is ignored. ``p = 1`` is the plain ``x / (x + x_half)`` saturation.

Memory-bound GEMMs (decode with a small ``m``) are not this curve's business: callers take
``max(compute time, bytes / bandwidth)`` (roofline); a measured table includes both regimes,
so a fitted curve is only as good as the shapes measured.

Default parameters (:data:`DEFAULT_CURVES`)
------------------------------------------
Fitted with :func:`fit_gemm_curve` (``p = 2``) to OpenXLA's measured H100 (``sm_90``) GEMM
table, ``xla/service/gpu/model/matmul_interpolator_data.h`` (github.com/openxla/xla, as
vendored in tensorflow/tensorflow ``third_party/xla``, commit 372d578b): 22 rows with ``b = 1``
(the cubes 256^3 to 4096^3, each dimension varied from 256 to 2048 with the other two at 4096,
and six mixed shapes; ``tests/data/xla_sm90_gemm_subset.csv``), against the dense H100 SXM peaks
(BF16 989.4, TF32 494.7 TFLOP/s, NVIDIA H100 datasheet). Fit quality of the rounded parameters:
BF16 median |error| 4.3%, rms 5.6%, max 12.5%; TF32 median 10%, rms 16%, max 38% (the table's
TF32 rows are noisy). Examples (BF16): 4096^3 measured 783.3 TFLOP/s (0.79 of peak), 1024^3
236.3 (0.24), 256^3 6.5 (0.007: the fixed time dominates).
FP16 shares BF16's tensor-core rate on Ampere and Hopper and takes the BF16 curve; FP8 and INT8
take the BF16 shape as a fraction of their own peak (no published FP8 sweep was found: marked
``measured: false``; the training engine's ``fp8_gemm_factor`` carries the FP8 rate).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpucluster_lib.calibration.fit import levenberg_marquardt
from gpucluster_lib.checks import require_positive
from gpucluster_lib.errors import excerpt, shown
from gpucluster_lib.units import TERA

#: Bounds of the Hill exponent ``p`` [-]. ``g`` rises from 10% to 90% of its range while ``x / x_half``
#: grows by ``81^(1/p)``: at ``p = 0.25`` by 4.3e7, more than any GEMM dimension spans, and at ``p = 8``
#: by 1.73, already a step; no measurement supports a curve beyond either (the OpenXLA H100 table
#: fits ``p = 2``). The upper bound also keeps ``x^p`` finite for every dimension below 1e38.
EXPONENT_BOUNDS = (0.25, 8.0)

#: Bounds a curve's parameters must keep, far beyond any GEMM (a typing slip trips them; an overflow in
#: the engines does not follow): half-rate dimensions [elements], the fixed time per GEMM [s] (launches take
#: microseconds) and the dense peak [TFLOP/s] (B200 FP4 dense: 9,000).
MAX_HALF = 1e6
MAX_FIXED_TIME_S = 1e-2
MAX_PEAK_TFLOPS = 1e5

#: dtype names accepted (aliases map onto these).
DTYPES = ("bf16", "fp16", "tf32", "fp8", "int8")
#: FP32 GEMMs on tensor-core GPUs run as TF32 in cuBLAS only when TF32 is allowed (PyTorch
#: ``torch.backends.cuda.matmul.allow_tf32``), so ``fp32`` rows are taken for TF32: measure with TF32 on.
#: FP8 names: the OCP formats (E4M3, E5M2) and PyTorch's ``torch.float8_e4m3fn`` / ``float8_e5m2`` (and the
#: ``fnuz`` variants of AMD GPUs); ``torch.`` is dropped from any name.
_ALIASES = {"bfloat16": "bf16", "float16": "fp16", "half": "fp16", "fp32": "tf32", "f32": "tf32",
            "float32": "tf32", "float": "tf32", "float8": "fp8", "e4m3": "fp8", "e5m2": "fp8", "fp8_e4m3": "fp8",
            "fp8_e5m2": "fp8", "fp8e4m3": "fp8", "fp8e5m2": "fp8", "float8_e4m3fn": "fp8", "float8_e5m2": "fp8",
            "float8_e4m3fnuz": "fp8", "float8_e5m2fnuz": "fp8", "e4m3fn": "fp8", "int8_t": "int8", "i8": "int8"}
#: The names of FP32 among the aliases: their rows are fitted as TF32 rows (a fit says so in its notes).
FP32_NAMES = frozenset(k for k, v in _ALIASES.items() if v == "tf32")


@dataclass(frozen=True)
class GemmCurve:
    """One GEMM efficiency curve (see the module doc for the formula).

    Attributes
    ----------
    eff_max : float
        Asymptotic fraction of the dense peak for very large GEMMs [-], in (0, 1].
    m_half, n_half, k_half : float
        Dimension at which that dimension's utilisation is one half [elements].
    exponent : float
        Hill exponent ``p`` of the saturation (1: ``x / (x + x_half)``) [-].
    fixed_time_s : float
        Fixed time per GEMM ``t_0`` [s].
    peak_tflops : float or None
        Dense peak the curve was measured against [TFLOP/s] (for ``t_0`` when the caller
        gives none).
    source : str
        Where the parameters come from.
    measured : bool
        False when the curve is carried over from another dtype, not measured.
    """

    eff_max: float
    m_half: float
    n_half: float
    k_half: float
    exponent: float = 2.0
    fixed_time_s: float = 0.0
    peak_tflops: float | None = None
    source: str = ""
    measured: bool = True

    def __post_init__(self) -> None:
        def number(name: str, low: float, high: float, what: str, strict: bool = False) -> None:
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                    and (v > low if strict else v >= low) and v <= high):
                raise ValueError(f"{name} must be {what}, got {shown(v)}")

        number("eff_max", 0.0, 1.0, "at most 1 and above 0 (a fraction of peak)", strict=True)
        lo, hi = EXPONENT_BOUNDS
        number("exponent", lo, hi, f"between {lo:g} and {hi:g} (the steepness of the curve)")
        for name in ("m_half", "n_half", "k_half"):
            number(name, 0.0, MAX_HALF, f"a non-negative number of elements, at most {MAX_HALF:,.0f}")
        number("fixed_time_s", 0.0, MAX_FIXED_TIME_S, f"a non-negative number of seconds, at most {MAX_FIXED_TIME_S:g}")
        if self.peak_tflops is not None:
            number("peak_tflops", 0.0, MAX_PEAK_TFLOPS, f"a positive number of TFLOP/s, at most {MAX_PEAK_TFLOPS:,.0f}",
                   strict=True)
        if not isinstance(self.measured, bool):
            raise ValueError(f"measured must be true or false, got {shown(self.measured)}")
        if not isinstance(self.source, str):
            raise ValueError(f"source must be text, got {shown(self.source)}")

    def _g(self, x: np.ndarray, half: float) -> np.ndarray:
        if half == 0:
            return np.ones_like(x)
        xp = x ** self.exponent
        return xp / (xp + half ** self.exponent)

    def shape_efficiency(self, m: Any, n: Any, k: Any) -> Any:
        """``e_max g(m) g(n) g(k)`` without the fixed time [-]."""
        m, n, k = (np.asarray(v, dtype=float) for v in (m, n, k))
        _check_dims(m, n, k)
        out = self.eff_max * self._g(m, self.m_half) * self._g(n, self.n_half) * self._g(k, self.k_half)
        return _scalar(out)

    def efficiency(self, m: Any, n: Any, k: Any, peak_tflops: float | None = None) -> Any:
        """Achieved fraction of the dense peak for GEMMs of shape (m, n, k) [-] (vectorised)."""
        m, n, k = (np.asarray(v, dtype=float) for v in (m, n, k))
        e = np.asarray(self.shape_efficiency(m, n, k), dtype=float)
        peak = peak_tflops if peak_tflops is not None else self.peak_tflops
        if self.fixed_time_s > 0 and peak is not None:
            require_positive(peak_tflops=peak)
            flops = 2.0 * m * n * k
            e = 1.0 / (1.0 / e + peak * TERA * self.fixed_time_s / flops)
        return _scalar(e)

    def shape_factor(self, m: Any, n: Any, k: Any, peak_tflops: float | None = None) -> Any:
        """``efficiency / eff_max``, in (0, 1]: how much of the large-GEMM rate this shape gets.

        For engines that keep their own large-GEMM efficiency and want only the size effect.
        """
        return _scalar(np.asarray(self.efficiency(m, n, k, peak_tflops), dtype=float) / self.eff_max)

    def time_s(self, m: Any, n: Any, k: Any, peak_tflops: float) -> Any:
        """Time of the GEMM at ``peak_tflops`` [s]: ``2 m n k / (P e_shape) + t_0``."""
        require_positive(peak_tflops=peak_tflops)
        m, n, k = (np.asarray(v, dtype=float) for v in (m, n, k))
        e = np.asarray(self.shape_efficiency(m, n, k), dtype=float)
        return _scalar(2.0 * m * n * k / (peak_tflops * TERA * e) + self.fixed_time_s)

    def replace(self, **changes: Any) -> GemmCurve:
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GemmCurve:
        """Build from a mapping (a profile's YAML); unknown keys raise ``ValueError`` naming them."""
        names = {f.name for f in dataclasses.fields(cls)}
        bad = sorted(set(data) - names)
        if bad:
            raise ValueError(f"unknown GEMM curve parameter {bad[0]!r}; valid: {', '.join(sorted(names))}")
        missing = [n for n in ("eff_max", "m_half", "n_half", "k_half") if n not in data]
        if missing:
            raise ValueError(f"GEMM curve needs {', '.join(missing)}")
        return cls(**dict(data))


def _check_dims(m: np.ndarray, n: np.ndarray, k: np.ndarray) -> None:
    for name, v in (("m", m), ("n", n), ("k", k)):
        if not np.all(np.isfinite(v)) or np.any(v <= 0):
            raise ValueError(f"GEMM dimension {name} must be positive and finite")


def _scalar(x: np.ndarray) -> Any:
    x = np.asarray(x)
    return float(x) if x.ndim == 0 else x


_XLA = ("OpenXLA measured H100 sm_90 GEMM table (xla/service/gpu/model/matmul_interpolator_data.h, "
        "tensorflow/tensorflow third_party/xla commit 372d578b), 22 b=1 shapes 256-4096, fitted p=2")

#: H100 SXM BF16 fit (rms 5.6%, max 12.5% over the 22 shapes); dense peak 989.4 TFLOP/s.
_BF16 = GemmCurve(eff_max=0.832, m_half=159.0, n_half=188.0, k_half=200.0, exponent=2.0,
                  fixed_time_s=5.8e-6, peak_tflops=989.4, source=_XLA + " (bf16xbf16->bf16)")

#: The shipped curves per dtype (see the module doc for the sources).
DEFAULT_CURVES: dict[str, GemmCurve] = {
    "bf16": _BF16,
    "fp16": _BF16.replace(source="BF16 curve: FP16 runs at the BF16 tensor-core rate (NVIDIA H100 and A100 "
                                 "datasheets); not separately measured", measured=False),
    "tf32": GemmCurve(eff_max=0.721, m_half=214.0, n_half=136.0, k_half=226.0, exponent=2.0,
                      fixed_time_s=8.6e-6, peak_tflops=494.7,
                      source=_XLA + " (f32xf32->f32, TF32 tensor cores; rms 16%, max 38%)"),
    "fp8": _BF16.replace(peak_tflops=1978.9, source="BF16 curve's shape as a fraction of the FP8 peak; no "
                                                    "published FP8 sweep found", measured=False),
    "int8": _BF16.replace(peak_tflops=1978.9, source="BF16 curve's shape as a fraction of the INT8 peak; "
                                                     "not measured", measured=False),
}


def normalise_dtype(dtype: str) -> str:
    """``"bfloat16"`` -> ``"bf16"`` etc.; ``ValueError`` naming the valid dtypes otherwise."""
    key = str(dtype).strip().lower().removeprefix("torch.")
    key = _ALIASES.get(key, key)
    if key not in DTYPES:
        raise ValueError(f"unknown GEMM dtype {excerpt(str(dtype).strip())}; valid: {', '.join(DTYPES)} (or bfloat16, "
                         "float16, fp32 for TF32, fp8_e4m3 / float8_e4m3fn, fp8_e5m2)")
    return key




def gemm_curve(dtype: str = "bf16", profile: Any = None) -> GemmCurve:
    """The curve in force for ``dtype``: the profile's when it has one, else the default."""
    key = normalise_dtype(dtype)
    curves = getattr(profile, "gemm", profile) if profile is not None else None
    if curves:
        for name, curve in curves.items():
            if normalise_dtype(name) == key:
                return curve if isinstance(curve, GemmCurve) else GemmCurve.from_dict(curve)
    return DEFAULT_CURVES[key]


def gemm_efficiency(m: Any, n: Any, k: Any, dtype: str = "bf16", profile: Any = None,
                    peak_tflops: float | None = None) -> Any:
    """Achieved fraction of the dense ``dtype`` peak for an (m x k) @ (k x n) GEMM [-].

    Parameters
    ----------
    m, n, k : int, float or array
        GEMM dimensions [elements] (rows of A and C, columns of B and C, the reduced
        dimension); arrays broadcast. A batch of ``b`` GEMMs is ``m = b m``.
    dtype : str
        ``bf16``, ``fp16``, ``tf32``, ``fp8`` or ``int8``.
    profile : CalibrationProfile or mapping, optional
        A calibration profile (its ``gemm`` curves) or ``{dtype: GemmCurve}``; None: the defaults.
    peak_tflops : float, optional
        Dense peak of the device the GEMM runs on [TFLOP/s], for the fixed-time term; default
        the peak the curve was measured against.

    Returns
    -------
    float or numpy.ndarray
        Fraction of peak in (0, eff_max].
    """
    return gemm_curve(dtype, profile).efficiency(m, n, k, peak_tflops)


def fit_gemm_curve(m: Any, n: Any, k: Any, tflops: Any, peak_tflops: float, *, exponent: float | None = 2.0,
                   fixed_time: bool = True, source: str = "") -> GemmCurve:
    """Least-squares fit of a :class:`GemmCurve` to measured GEMM rates.

    Minimises the squared log error ``sum(log(e_fit / e_measured)^2)`` (every shape weighs the
    same whatever its rate) with Levenberg-Marquardt (:mod:`.fit`).

    Parameters
    ----------
    m, n, k : array
        Measured shapes [elements].
    tflops : array
        Measured rates [TFLOP/s] (2 m n k / time).
    peak_tflops : float
        Dense peak of the dtype on the measured device [TFLOP/s].
    exponent : float or None
        Fixed Hill exponent, or None to fit it too.
    fixed_time : bool
        Fit the fixed time per GEMM ``t_0`` (else 0).
    """
    m, n, k, y = (np.asarray(v, dtype=float).ravel() for v in (m, n, k, tflops))
    require_positive(peak_tflops=peak_tflops)
    lo, hi = EXPONENT_BOUNDS
    if exponent is not None and not lo <= exponent <= hi:
        raise ValueError(f"exponent must be between {lo:g} and {hi:g}, got {exponent!r}")
    if not (m.size == n.size == k.size == y.size):
        raise ValueError("m, n, k and tflops must have the same length")
    _check_dims(m, n, k)
    if not np.all(np.isfinite(y)) or np.any(y <= 0):
        raise ValueError("measured TFLOP/s must be positive and finite")
    n_params = 4 + (1 if fixed_time else 0) + (1 if exponent is None else 0)
    if y.size < n_params:
        raise ValueError(f"a GEMM fit needs at least {n_params} measured shapes, got {y.size}")
    eff = y / peak_tflops
    flops = 2.0 * m * n * k
    peak = peak_tflops * TERA

    def unpack(q: np.ndarray) -> tuple[float, float, float, float, float, float]:
        em, hm, hn, hk = np.exp(q[:4])
        i = 4
        t0 = 0.0
        if fixed_time:
            t0 = float(np.exp(q[i]))
            i += 1
        # a fitted exponent stays inside EXPONENT_BOUNDS: lo (hi/lo)^sigmoid(q), sigmoid(q) = (1 + tanh(q/2)) / 2
        p = float(lo * (hi / lo) ** (0.5 + 0.5 * math.tanh(0.5 * q[i]))) if exponent is None else float(exponent)
        return float(em), float(hm), float(hn), float(hk), t0, p

    def predict(q: np.ndarray) -> np.ndarray:
        em, hm, hn, hk, t0, p = unpack(q)
        e = em * m ** p / (m ** p + hm ** p) * n ** p / (n ** p + hn ** p) * k ** p / (k ** p + hk ** p)
        return 1.0 / (1.0 / e + peak * t0 / flops)

    def residuals(q: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            r = np.log(predict(q)) - np.log(eff)
        return np.where(np.isfinite(r), r, 1e3)

    q0 = [min(1.2 * eff.max(), 1.0), np.median(m) / 4, np.median(n) / 4, np.median(k) / 4]
    if fixed_time:
        q0.append(float(np.min(flops / y)) / TERA * 0.5)
    q0 = list(np.log(np.asarray(q0, dtype=float)))
    if exponent is None:  # start at p = 1.5: sigmoid(q) = log(1.5 / lo) / log(hi / lo)
        f0 = math.log(1.5 / lo) / math.log(hi / lo)
        q0.append(math.log(f0 / (1.0 - f0)))
    q = levenberg_marquardt(residuals, np.asarray(q0, dtype=float))
    em, hm, hn, hk, t0, p = unpack(q)
    # a level above the peak is clamped to 1: the shapes never show where the rate levels off, so
    # run.check_gemm_fit refuses a curve at the clamp
    return GemmCurve(eff_max=min(em, 1.0), m_half=hm, n_half=hn, k_half=hk, exponent=p, fixed_time_s=t0,
                     peak_tflops=float(peak_tflops), source=source)


def fit_quality(curve: GemmCurve, m: Any, n: Any, k: Any, tflops: Any) -> dict[str, Any]:
    """Errors of ``curve`` against measured rates: per-shape predicted TFLOP/s and relative error,
    and their median |error|, rms and max |error| [fractions]."""
    m, n, k, y = (np.asarray(v, dtype=float).ravel() for v in (m, n, k, tflops))
    if curve.peak_tflops is None:
        raise ValueError("the curve has no peak_tflops to turn efficiency into TFLOP/s")
    pred = np.asarray(curve.efficiency(m, n, k), dtype=float).ravel() * curve.peak_tflops
    err = pred / y - 1.0
    return {"predicted_tflops": pred, "error": err, "median_abs_error": float(np.median(np.abs(err))),
            "rms_error": float(np.sqrt(np.mean(err ** 2))), "max_abs_error": float(np.max(np.abs(err)))}


__all__ = ["DEFAULT_CURVES", "DTYPES", "EXPONENT_BOUNDS", "FP32_NAMES", "GemmCurve", "fit_gemm_curve", "fit_quality",
           "gemm_curve", "gemm_efficiency", "normalise_dtype"]
