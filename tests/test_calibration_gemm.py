"""GEMM efficiency by shape (gpucluster_lib/calibration/gemm.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gpucluster_lib.calibration.gemm import (
    DEFAULT_CURVES,
    GemmCurve,
    fit_gemm_curve,
    fit_quality,
    gemm_curve,
    gemm_efficiency,
)

DATA = Path(__file__).parent / "data"


def xla_table(dtype: str) -> pd.DataFrame:
    df = pd.read_csv(DATA / "xla_sm90_gemm_subset.csv", comment="#")
    return df[df.dtype == dtype]


def test_hill_curve_by_hand():
    c = GemmCurve(eff_max=0.8, m_half=100, n_half=100, k_half=100, exponent=1.0)
    assert c.efficiency(100, 100, 100) == pytest.approx(0.8 * 0.5 ** 3)  # each g = 100/(100+100)
    c2 = c.replace(exponent=2.0)
    assert c2.efficiency(200, 100, 100) == pytest.approx(0.8 * 0.8 * 0.25)  # 200^2/(200^2+100^2) = 0.8


def test_fixed_time_by_hand():
    # e_shape 0.5, t0 1 us, P 1000 TFLOP/s, 1000^3: t = 2e9/(1e15*0.5) + 1e-6 = 5 us -> 2e9/(1e15*5e-6) = 0.4
    c = GemmCurve(eff_max=0.5, m_half=0, n_half=0, k_half=0, fixed_time_s=1e-6)
    assert c.efficiency(1000, 1000, 1000, peak_tflops=1000) == pytest.approx(0.4)
    assert c.time_s(1000, 1000, 1000, peak_tflops=1000) == pytest.approx(5e-6)
    assert c.efficiency(1000, 1000, 1000) == pytest.approx(0.5)  # no peak anywhere: t0 cannot apply
    assert c.shape_factor(1000, 1000, 1000, peak_tflops=1000) == pytest.approx(0.8)


def test_vectorised_and_monotonic():
    x = np.array([256, 512, 1024, 4096, 16384])
    e = gemm_efficiency(x, 4096, 4096, "bf16")
    assert e.shape == (5,)
    assert np.all(np.diff(e) > 0)
    assert np.all(e <= DEFAULT_CURVES["bf16"].eff_max)
    grid = gemm_efficiency(x[:, None], x[None, :], 4096)
    assert grid.shape == (5, 5)
    assert isinstance(gemm_efficiency(4096, 4096, 4096), float)


@pytest.mark.parametrize(("m", "n", "k", "measured"), [
    (4096, 4096, 4096, 783.3),  # OpenXLA sm_90 table, b=1 4096^3 bf16: 783,328,793,548,203 FLOP/s
    (1024, 1024, 1024, 236.3),  # same table: 236,298,816,901,408 FLOP/s
    (4096, 4096, 256, 392.2),   # same table: 392,162,828,341,855 FLOP/s
    (256, 4096, 4096, 412.0),   # same table: 412,026,793,553,338 FLOP/s
])
def test_default_bf16_curve_matches_xla_h100(m, n, k, measured):
    predicted = gemm_efficiency(m, n, k, "bf16", peak_tflops=989.4) * 989.4  # H100 SXM dense BF16
    assert predicted == pytest.approx(measured, rel=0.10)


def test_defaults_are_reproducible_from_the_source_table():
    t = xla_table("bf16")
    c = fit_gemm_curve(t.m, t.n, t.k, t.tflops, 989.4)
    d = DEFAULT_CURVES["bf16"]
    for name in ("eff_max", "m_half", "n_half", "k_half", "fixed_time_s"):
        assert getattr(c, name) == pytest.approx(getattr(d, name), rel=0.02), name
    q = fit_quality(d, t.m, t.n, t.k, t.tflops)
    assert q["max_abs_error"] < 0.13  # module doc: max 12.5%
    assert q["rms_error"] < 0.06       # module doc: rms 5.6%
    t32 = xla_table("tf32")
    c32 = fit_gemm_curve(t32.m, t32.n, t32.k, t32.tflops, 494.7)
    assert c32.eff_max == pytest.approx(DEFAULT_CURVES["tf32"].eff_max, rel=0.02)


def test_fit_recovers_known_curve_with_exponent():
    known = GemmCurve(eff_max=0.75, m_half=300.0, n_half=150.0, k_half=500.0, exponent=1.6,
                      fixed_time_s=4e-6, peak_tflops=500.0)
    dims = np.array([128, 256, 512, 1024, 2048, 8192])
    m, n, k = (a.ravel() for a in np.meshgrid(dims, dims, dims, indexing="ij"))
    tflops = known.efficiency(m, n, k) * 500.0
    fitted = fit_gemm_curve(m, n, k, tflops, 500.0, exponent=None)
    for name in ("eff_max", "m_half", "n_half", "k_half", "exponent", "fixed_time_s"):
        assert getattr(fitted, name) == pytest.approx(getattr(known, name), rel=0.01), name


def test_the_exponent_is_bounded_in_the_curve_and_in_the_fit():
    from gpucluster_lib.calibration.gemm import EXPONENT_BOUNDS

    assert EXPONENT_BOUNDS == (0.25, 8.0)
    with pytest.raises(ValueError, match="exponent must be between 0.25 and 8"):
        GemmCurve(eff_max=0.5, m_half=1, n_half=1, k_half=1, exponent=100)   # x^100 overflows at x = 1e4
    with pytest.raises(ValueError, match="exponent must be between 0.25 and 8"):
        GemmCurve(eff_max=0.5, m_half=1, n_half=1, k_half=1, exponent=0.1)
    with pytest.raises(ValueError, match="exponent must be between 0.25 and 8"):
        fit_gemm_curve([1] * 6, [1] * 6, [1] * 6, [1] * 6, 100.0, exponent=9)
    # rates that step from 0 to 0.8 at 512 (a Hill curve with p = 20, beyond the bound): the fitted
    # exponent stops at the bound and the curve stays finite up to dimensions of 1e6
    dims = np.array([256, 384, 512, 768, 1024, 4096])
    m, n, k = (a.ravel() for a in np.meshgrid(dims, dims, dims, indexing="ij"))
    step = lambda x: x ** 20.0 / (x ** 20.0 + 512.0 ** 20.0)   # noqa: E731
    fitted = fit_gemm_curve(m, n, k, 0.8 * step(m) * step(n) * step(k) * 500.0, 500.0, exponent=None,
                            fixed_time=False)
    assert 0.25 <= fitted.exponent <= 8.0 and fitted.exponent > 7.9
    assert np.isfinite(fitted.efficiency(1e6, 1e6, 1e6))


def test_fit_without_fixed_time_recovers_plain_saturation():
    known = GemmCurve(eff_max=0.9, m_half=64.0, n_half=128.0, k_half=32.0, exponent=1.0)
    dims = np.array([32, 64, 256, 1024, 4096])
    m, n, k = (a.ravel() for a in np.meshgrid(dims, dims, dims, indexing="ij"))
    fitted = fit_gemm_curve(m, n, k, known.efficiency(m, n, k) * 312.0, 312.0, exponent=1.0, fixed_time=False)
    assert fitted.fixed_time_s == 0.0
    for name in ("eff_max", "m_half", "n_half", "k_half"):
        assert getattr(fitted, name) == pytest.approx(getattr(known, name), rel=0.005), name


def test_profile_curves_take_precedence():
    mine = GemmCurve(eff_max=0.5, m_half=0, n_half=0, k_half=0)
    assert gemm_efficiency(64, 64, 64, "bfloat16", profile={"bf16": mine}) == pytest.approx(0.5)
    assert gemm_curve("fp16", profile={"bf16": mine}) is DEFAULT_CURVES["fp16"]
    assert gemm_efficiency(64, 64, 64, "bf16", profile={"bf16": mine.to_dict()}) == pytest.approx(0.5)

    class Profile:
        gemm = {"bf16": mine}

    assert gemm_curve("bf16", Profile()) is mine


def test_bad_input_names_the_problem():
    with pytest.raises(ValueError, match="unknown GEMM dtype 'fp64'; valid: bf16"):
        gemm_efficiency(1, 1, 1, "fp64")
    with pytest.raises(ValueError, match="GEMM dimension k must be positive"):
        gemm_efficiency(1, 1, 0)
    with pytest.raises(ValueError, match="eff_max must be at most 1"):
        GemmCurve(eff_max=1.5, m_half=1, n_half=1, k_half=1)
    with pytest.raises(ValueError, match="m_half must be a non-negative"):
        GemmCurve(eff_max=0.5, m_half=-1, n_half=1, k_half=1)
    with pytest.raises(ValueError, match="unknown GEMM curve parameter 'tile'"):
        GemmCurve.from_dict({"eff_max": 0.5, "m_half": 1, "n_half": 1, "k_half": 1, "tile": 128})
    with pytest.raises(ValueError, match="GEMM curve needs k_half"):
        GemmCurve.from_dict({"eff_max": 0.5, "m_half": 1, "n_half": 1})
    with pytest.raises(ValueError, match="at least 5 measured shapes"):
        fit_gemm_curve([1, 2], [1, 2], [1, 2], [1.0, 2.0], 100.0)
    with pytest.raises(ValueError, match="measured TFLOP/s must be positive"):
        fit_gemm_curve([1] * 6, [1] * 6, [1] * 6, [1, 2, 3, 4, 5, -1], 100.0)
