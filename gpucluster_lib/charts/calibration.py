"""Charts of a calibration's fit quality: measured against fitted GEMM rates and collective times."""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from gpucluster_lib.formatting import format_duration, significant


def gemm_fit(table: pd.DataFrame, title: str = "GEMM: measured against fitted rate") -> alt.Chart:
    """Measured TFLOP/s against the fitted curve's, one point per shape, the identity line dashed.

    ``table``: a :class:`~gpucluster_lib.calibration.run.CalibrationResult` ``gemm_tables`` entry
    (m, n, k, dtype, tflops, predicted_tflops, error), or several concatenated.
    """
    data = table.copy()
    # four significant digits: the chart's text carries the values, and a fit's last digits differ
    # between CPUs (numpy's SIMD sums), which would make the same chart differ from machine to machine
    for col in ("tflops", "predicted_tflops", "error"):
        data[col] = _round_sig(data[col])
    data["shape"] = [f"{int(m)} x {int(n)} x {int(k)}" for m, n, k in zip(data.m, data.n, data.k, strict=True)]
    data["error_pct"] = data["error"] * 100
    hi = float(max(data["tflops"].max(), data["predicted_tflops"].max()) * 1.15)
    lo = float(max(min(data["tflops"].min(), data["predicted_tflops"].min()) / 1.3, 1e-3))
    ident = alt.Chart(pd.DataFrame({"x": [lo, hi], "y": [lo, hi]})).mark_line(
        color="#888", strokeDash=[4, 3]).encode(x="x:Q", y="y:Q")
    scale = alt.Scale(type="log", domain=[lo, hi])
    points = alt.Chart(data).mark_point(filled=True, size=55).encode(
        x=alt.X("tflops:Q", title="Measured [TFLOP/s]", scale=scale),
        y=alt.Y("predicted_tflops:Q", title="Fitted curve [TFLOP/s]", scale=scale),
        color=alt.Color("dtype:N", title="Data type"),
        tooltip=[alt.Tooltip("shape:N", title="m x n x k"), alt.Tooltip("dtype:N", title="data type"),
                 alt.Tooltip("tflops:Q", title="measured [TFLOP/s]", format=",.1f"),
                 alt.Tooltip("predicted_tflops:Q", title="fitted [TFLOP/s]", format=",.1f"),
                 alt.Tooltip("error_pct:Q", title="error [%]", format="+.1f")],
    )
    return (ident + points).properties(width=360, height=300, title=title)


def link_fit(test, fit, title: str | None = None) -> alt.Chart:
    """Measured collective time against message size (log-log), and the fitted alpha-beta line.

    ``test``: a :class:`~gpucluster_lib.calibration.nccl.NcclTest`; ``fit`` its
    :class:`~gpucluster_lib.calibration.nccl.LinkFit`.
    """
    sizes = np.array([r.size_bytes for r in test.rows], dtype=float)
    measured = pd.DataFrame({"size_mb": sizes / 1e6, "time_us": [r.time_us for r in test.rows],
                             "busbw": [r.busbw_gb_per_s for r in test.rows], "series": "measured"})
    grid = np.geomspace(sizes.min(), sizes.max(), 60)
    fitted = pd.DataFrame({"size_mb": _round_sig(grid / 1e6),
                           "time_us": _round_sig(np.asarray(fit.predict_time_s(grid)) * 1e6), "series": "fitted"})
    x = alt.X("size_mb:Q", title="Message size [MB]", scale=alt.Scale(type="log"))
    y = alt.Y("time_us:Q", title="Time [µs]", scale=alt.Scale(type="log"))
    line = alt.Chart(fitted).mark_line(color="#f58518").encode(x=x, y=y)
    pts = alt.Chart(measured).mark_point(filled=True, size=40, color="#4c78a8").encode(
        x=x, y=y, tooltip=[alt.Tooltip("size_mb:Q", title="size [MB]", format=",.4g"),
                           alt.Tooltip("time_us:Q", title="time [µs]", format=",.1f"),
                           alt.Tooltip("busbw:Q", title="bus bandwidth [GB/s]", format=",.1f")])
    lat = "latency not measured" if fit.alpha_s is None else f"alpha {format_duration(fit.alpha_s)} per ring step"
    name = title or (f"{fit.level}: {fit.collective.replace('_', '-')} on {fit.ranks} GPUs, "
                     f"B {fit.bus_bandwidth_gb_per_s:,.0f} GB/s, {lat}")
    return (line + pts).properties(width=360, height=300, title=name)


def _round_sig(values, digits: int = 4) -> np.ndarray:
    """``values`` rounded to ``digits`` significant digits (display only; :func:`~gpucluster_lib.formatting.significant`)."""
    return np.array([significant(v, digits) for v in np.asarray(values, dtype=float).ravel()])


def calibration_charts(result) -> alt.Chart | None:
    """Every fit of a :class:`~gpucluster_lib.calibration.run.CalibrationResult` side by side."""
    parts = []
    if result.gemm_tables:
        parts.append(gemm_fit(pd.concat(list(result.gemm_tables.values()), ignore_index=True)))
    for level in sorted(result.tests):
        parts.append(link_fit(result.tests[level], result.profile.links[level]))
    if not parts:
        return None
    return alt.hconcat(*parts) if len(parts) > 1 else parts[0]


__all__ = ["calibration_charts", "gemm_fit", "link_fit"]
