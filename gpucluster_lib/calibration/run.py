"""From measurement files to a :class:`~.profile.CalibrationProfile`: what ``gpucluster calibrate``
and ``notebooks/08_calibration`` run.

* :func:`read_gemm_table` ``(path)`` -> DataFrame ``m, n, k, dtype, tflops`` (a GEMM
  micro-benchmark CSV: one row per shape and dtype, the achieved TFLOP/s = 2 m n k / time / 1e12).
* :func:`dense_peaks` ``(accelerator_id)`` -> ``{dtype: TFLOP/s}`` from the catalogue's dense columns.
* :func:`calibrate` ``(name, gemm=..., nccl=[(test, level)], peaks=..., ...)`` ->
  :class:`CalibrationResult` (the profile plus the fit quality of every curve and link).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from gpucluster_lib.calibration.gemm import GemmCurve, fit_gemm_curve, fit_quality, normalise_dtype
from gpucluster_lib.calibration.nccl import CalibrationError, LinkFit, NcclTest, fit_alpha_beta
from gpucluster_lib.calibration.profile import CalibrationProfile
from gpucluster_lib.errors import excerpt

#: A profile name: also the default file name (NAME.yaml), so no folders, spaces or leading dot.
PROFILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
#: Column names accepted for the measured rate (case-insensitive).
_RATE_NAMES = ("tflops", "tflop/s", "tflop_s", "tflops_per_s", "tflop_per_s")
#: Catalogue column of each dtype's dense peak.
PEAK_COLUMNS = {"bf16": "bf16_tflops", "fp16": "fp16_tflops", "tf32": "tf32_tflops", "fp8": "fp8_tflops",
                "int8": "int8_tops"}


def read_gemm_table(path: str | Path) -> Any:
    """Read a GEMM micro-benchmark CSV (columns ``m, n, k, dtype, tflops``; ``#`` lines are comments).

    Raises :class:`~.nccl.CalibrationError` naming the file, the row and the column.
    """
    import pandas as pd

    p = Path(path)
    try:
        df = pd.read_csv(p, comment="#", skipinitialspace=True)
    except OSError as exc:
        raise CalibrationError(f"{p}: cannot read the GEMM table ({exc.strerror or exc})") from exc
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise CalibrationError(f"{p.name}: not a CSV table ({str(exc).splitlines()[0]})") from None
    return gemm_frame(df, p.name, lines=_data_lines(p, len(df)))


def _data_lines(path: Path, rows: int) -> tuple[int, ...] | None:
    """The file's line number of each data row (after the header; ``#`` comments and blank lines
    skipped, as the CSV reader skips them), or None when they cannot be matched to the rows."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    kept = [i for i, line in enumerate(text.splitlines(), start=1) if line.split("#", 1)[0].strip()]
    return tuple(kept[1:]) if len(kept) == rows + 1 else None


def gemm_frame(df: Any, where: str | None = None, lines: tuple[int, ...] | None = None) -> Any:
    """Check and normalise a GEMM table (a DataFrame): columns ``m, n, k, dtype, tflops``.

    ``where`` names the table in messages (the file name) and ``lines`` gives each row's line in
    that file; both are kept in the result's ``attrs`` (``"where"``, ``"lines"``), so a table checked
    again (by :func:`calibrate`) reports the same places."""
    import pandas as pd

    where = where or df.attrs.get("where") or "GEMM table"
    if lines is None:
        lines = df.attrs.get("lines")

    def at(i: int) -> str:   # i: the row's position from 0
        return f"{where}, line {lines[i]}" if lines is not None else f"{where}, row {i + 2}"

    cols = {str(c).strip().lower(): c for c in df.columns}
    rate = next((cols[c] for c in _RATE_NAMES if c in cols), None)
    missing = [c for c in ("m", "n", "k", "dtype") if c not in cols] + ([] if rate is not None else ["tflops"])
    if missing:
        raise CalibrationError(f"{where}: missing column {missing[0]!r}; a GEMM table has the columns "
                               "m, n, k, dtype, tflops (achieved TFLOP/s = 2 m n k / time / 1e12)")
    if len(df) == 0:
        raise CalibrationError(f"{where}: no rows; a GEMM table has one row per measured shape and data type "
                               "(m, n, k, dtype, tflops), at least 5 shapes per data type")
    out = pd.DataFrame({c: df[cols[c]] for c in ("m", "n", "k", "dtype")})
    out["tflops"] = df[rate]
    for i, row in enumerate(out.itertuples(index=False)):
        for c in ("m", "n", "k", "tflops"):
            v = getattr(row, c)
            try:
                ok = float(v) > 0 and np.isfinite(float(v))
            except (TypeError, ValueError):
                ok = False
            if not ok:
                raise CalibrationError(f"{at(i)}, column {c!r}: must be a positive number, got {excerpt(v)}")
            if c != "tflops" and float(v) != int(float(v)):
                raise CalibrationError(f"{at(i)}, column {c!r}: a GEMM dimension is a whole number of elements, "
                                       f"got {excerpt(v)}")
        try:
            normalise_dtype(row.dtype)
        except ValueError as exc:
            raise CalibrationError(f"{at(i)}, column 'dtype': {exc}") from None
    out[["m", "n", "k", "tflops"]] = out[["m", "n", "k", "tflops"]].astype(float)
    out["dtype"] = [normalise_dtype(d) for d in out["dtype"]]
    out.attrs["where"] = where
    if lines is not None and len(lines) == len(out):
        out.attrs["lines"] = tuple(lines)
    return out


def size_text(size_bytes: int) -> str:
    """A message size in words: powers of two as nccl-tests steps them (``512 MiB``), else in MB."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if size_bytes >= 1 << shift and size_bytes % (1 << shift) == 0:
            return f"{size_bytes >> shift:,} {unit}"
    return f"{size_bytes:,} B" if size_bytes < 10**6 else f"{size_bytes / 1e6:,.3g} MB"


def dense_peaks(accelerator_id: str, catalog: Any = None) -> dict[str, float]:
    """Dense peaks per dtype [TFLOP/s] of a catalogue accelerator (the columns in :data:`PEAK_COLUMNS`)."""
    from gpucluster_lib.catalog import load_catalog

    cat = catalog or load_catalog()
    acc = cat.accelerator(accelerator_id)
    out = {}
    for dtype, col in PEAK_COLUMNS.items():
        v = acc.get(col)
        if v is not None and v == v and float(v) > 0:
            out[dtype] = float(v)
    return out


@dataclass
class CalibrationResult:
    """A fitted profile and how well each part fits its measurements."""

    profile: CalibrationProfile
    gemm_tables: dict[str, Any] = field(default_factory=dict)     # dtype -> DataFrame with predicted, error
    gemm_quality: dict[str, dict[str, float]] = field(default_factory=dict)
    tests: dict[str, NcclTest] = field(default_factory=dict)       # level -> test
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"profile": self.profile.to_dict(), "gemm_quality": self.gemm_quality,
                "links": {k: v.to_dict() for k, v in self.profile.links.items()}, "notes": list(self.notes)}

    def summary(self) -> str:
        p = self.profile
        lines = [f"calibration profile {p.name!r}, measured {p.date}" + (f" on {p.device}" if p.device else "")]
        for dtype, c in sorted(p.gemm.items()):
            q = self.gemm_quality.get(dtype, {})
            lines.append(f"  GEMM {dtype}: large-GEMM efficiency {c.eff_max:.3f} of {c.peak_tflops:g} TFLOP/s, "
                         f"half-rate dimensions m {c.m_half:.0f}, n {c.n_half:.0f}, k {c.k_half:.0f}, "
                         f"fixed time {c.fixed_time_s * 1e6:.1f} us; median error "
                         f"{q.get('median_abs_error', float('nan')):.1%}, max {q.get('max_abs_error', float('nan')):.1%}")
        for level, f in sorted(p.links.items()):
            lat = "n/a" if f.alpha_s is None else f"{f.alpha_s * 1e6:.2f} us per step"
            fit = "" if f.rms_error is None else f", rms error {f.rms_error:.0%} over all sizes"
            if f.large_sizes_max_abs_error is not None and f.large_sizes_from_bytes:
                fit += (f", at most {f.large_sizes_max_abs_error:.0%} from {size_text(f.large_sizes_from_bytes)} up "
                        "(the sizes the bandwidth is fitted on)")
            lines.append(f"  {level}: {f.collective.replace('_', '-')} on {f.ranks} GPUs, bus bandwidth "
                         f"{f.bus_bandwidth_gb_per_s:,.1f} GB/s (peak measured {f.peak_busbw_gb_per_s:,.1f}), "
                         f"latency {lat}{fit}")
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


def calibrate(name: str, *, gemm: Any = None, nccl: list[tuple[NcclTest, str | None]] | None = None,
              peaks: dict[str, float] | None = None, device: str | None = None, date: str | None = None,
              source: str = "", example: bool = False, exponent: float | None = 2.0) -> CalibrationResult:
    """Fit a profile from a GEMM table (DataFrame, :func:`gemm_frame` columns) and nccl-tests runs.

    ``peaks``: dense peak per dtype [TFLOP/s] of the measured device (required for every dtype
    in the GEMM table). ``nccl``: (test, level) pairs, level None = from the test's hosts; one
    run per level (a second raises). ``date`` defaults to today (UTC).
    """
    if not isinstance(name, str) or not name.strip():
        raise CalibrationError("a calibration profile needs a name (--name)")
    if not PROFILE_NAME.fullmatch(name.strip()):
        raise CalibrationError(f"--name: {excerpt(name)} is not a profile name; use letters, digits, '-', '_' and "
                               "'.' only, such as my-cluster (the file goes to NAME.yaml, or where -o says)")
    if gemm is None and not nccl:
        raise CalibrationError("nothing to calibrate: give a GEMM table (--gemm) and/or nccl-tests output (--nccl)")
    try:
        peaks = {normalise_dtype(k): float(v) for k, v in (peaks or {}).items()}
    except ValueError as exc:
        raise CalibrationError(f"dense peaks: {exc}") from None
    bad = next((k for k, v in peaks.items() if not 0 < v < float("inf")), None)
    if bad is not None:
        raise CalibrationError(f"dense peaks: the {bad} peak must be a positive number of TFLOP/s, got {peaks[bad]!r}")
    curves: dict[str, GemmCurve] = {}
    tables: dict[str, Any] = {}
    quality: dict[str, dict[str, float]] = {}
    notes: list[str] = []
    if gemm is not None:
        table = gemm_frame(gemm).reset_index(drop=True)
        where = table.attrs["where"]
        lines = table.attrs.get("lines")
        for dtype, sub in table.groupby("dtype", sort=True):
            if dtype not in peaks:
                raise CalibrationError(f"{where}: no dense {dtype} peak for the measured device; give "
                                       f"--accelerator (a catalogue id) or --peak {dtype}=TFLOPS")
            shapes = len(set(zip(sub.m, sub.n, sub.k, strict=True)))
            needed = 5 if exponent is not None else 6   # eff_max, three half-rate sizes, fixed time (+ exponent)
            if shapes < needed:
                raise CalibrationError(f"{where}: {shapes} {dtype} shape{'s' if shapes > 1 else ''} (m, n, k); "
                                       f"the curve has {needed} parameters, so measure at least {needed} different "
                                       "shapes, small and large")
            over = sub[sub.tflops > peaks[dtype]]
            if len(over):
                i = int(over.index[0])
                place = f"{where}, line {lines[i]}" if lines is not None else f"{where}, row {i + 2}"
                raise CalibrationError(f"{place}: {over.tflops[i]:,.6g} TFLOP/s is above the dense "
                                       f"{dtype} peak of {peaks[dtype]:,.6g} TFLOP/s; give the measured device's "
                                       f"peak (--accelerator ID or --peak {dtype}=TFLOPS)")
            try:
                curve = fit_gemm_curve(sub.m, sub.n, sub.k, sub.tflops, peaks[dtype], exponent=exponent,
                                       source=source or "measured")
            except ValueError as exc:  # a fit that leaves the curve's bounds: the shapes cannot pin it down
                raise CalibrationError(f"{where}: the {dtype} rates cannot be fitted with the GEMM curve ({exc}); "
                                       "measure shapes from small (256) to large (8192) in each dimension") from None
            q = fit_quality(curve, sub.m, sub.n, sub.k, sub.tflops)
            curves[dtype] = curve
            t = sub.reset_index(drop=True).copy()
            t["predicted_tflops"] = q["predicted_tflops"]
            t["error"] = q["error"]
            tables[dtype] = t
            quality[dtype] = {k: v for k, v in q.items() if k.endswith("error") and k != "error"}
    links: dict[str, LinkFit] = {}
    tests: dict[str, NcclTest] = {}
    for test, level in nccl or []:
        fit = fit_alpha_beta(test, level)
        if fit.level in links:
            raise CalibrationError(f"two nccl-tests runs for the {fit.level} level ({links[fit.level].source} and "
                                   f"{fit.source}); give one per level")
        links[fit.level] = fit
        tests[fit.level] = test
        notes += [f"{test.source}: {n}" for n in test.notes]
        if fit.level == "fabric" and fit.ranks_per_host and fit.ranks // fit.ranks_per_host <= 2:
            notes.append(f"{test.source}: fabric measured on {fit.ranks // fit.ranks_per_host} nodes; NCCL's tree "
                         "and NVLS algorithms beat the ring on so few nodes, so measure on 4 or more for a figure "
                         "that holds at scale")
    when = date or dt.datetime.now(dt.UTC).date().isoformat()
    try:
        when = dt.date.fromisoformat(str(when)).isoformat()
    except ValueError:
        raise CalibrationError(f"--date: must be a date like 2026-12-01, got {date!r}") from None
    dev = device or next((f.device for f in links.values() if f.device), None)
    profile = CalibrationProfile(name=name.strip(), date=when, device=dev,
                                 example=example, source=source, gemm=curves, links=links)
    return CalibrationResult(profile, tables, quality, tests, notes)


__all__ = ["PEAK_COLUMNS", "CalibrationResult", "calibrate", "dense_peaks", "gemm_frame", "read_gemm_table"]
