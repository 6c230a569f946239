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

from gpucluster_lib.calibration.gemm import (
    FP32_NAMES,
    GemmCurve,
    fit_gemm_curve,
    fit_quality,
    normalise_dtype,
)
from gpucluster_lib.calibration.nccl import (
    COLLECTIVES,
    SAVE_AS_UTF8,
    CalibrationError,
    LinkFit,
    NcclTest,
    decode_text,
    fit_alpha_beta,
    link_level,
    size_text,
)
from gpucluster_lib.calibration.profile import CalibrationProfile
from gpucluster_lib.errors import all_of, excerpt
from gpucluster_lib.formatting import format_duration, plural

#: A profile name: also the default file name (NAME.yaml), so no folders, spaces or leading dot.
PROFILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
#: Column names accepted for the measured rate (case-insensitive).
_RATE_NAMES = ("tflops", "tflop/s", "tflop_s", "tflops_per_s", "tflop_per_s")
#: Catalogue column of each dtype's dense peak.
PEAK_COLUMNS = {"bf16": "bf16_tflops", "fp16": "fp16_tflops", "tf32": "tf32_tflops", "fp8": "fp8_tflops",
                "int8": "int8_tops"}


def read_gemm_table(path: str | Path) -> Any:
    """Read a GEMM micro-benchmark CSV (columns ``m, n, k, dtype, tflops``; ``#`` starts a comment).

    UTF-8, or UTF-16 with its byte-order mark (PowerShell's ``>``); a trailing comma on each row is
    allowed, an extra value is not. Raises :class:`~.nccl.CalibrationError` naming the file, the line and
    the column.
    """
    import csv
    import io

    import pandas as pd

    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise CalibrationError(f"{p}: cannot read the GEMM table ({exc.strerror or exc})") from exc
    text = decode_text(data, p.name)
    kept = [(i, line.split("#", 1)[0]) for i, line in enumerate(text.splitlines(), start=1)
            if line.split("#", 1)[0].strip()]
    bad = next((i for i, line in kept if "\ufffd" in line), None)
    if bad is not None:
        raise CalibrationError(f"{p.name}, line {bad}: the file is not UTF-8 text (it holds bytes that UTF-8 does not "
                               f"allow); {SAVE_AS_UTF8}")
    if kept:
        header = next(csv.reader([kept[0][1]]))
        if len(header) == 1 and (";" in kept[0][1] or "\t" in kept[0][1]):
            sep = "semicolons" if ";" in kept[0][1] else "tabs"
            raise CalibrationError(f"{p.name}, line {kept[0][0]}: the columns are separated by {sep}, not commas; "
                                   "save the table as CSV with commas (m,n,k,dtype,tflops)")
        width = len([h for h in header if h.strip()])
        for i, line in kept[1:]:
            fields = next(csv.reader([line]), [])
            if any(f.strip() for f in fields[width:]):
                raise CalibrationError(f"{p.name}, line {i}: {plural(len(fields), 'value')}, but the header (line "
                                       f"{kept[0][0]}) names {plural(width, 'column')}; give each row one value per "
                                       "column")
    try:
        df = pd.read_csv(io.StringIO(text), comment="#", skipinitialspace=True, index_col=False, dtype=str)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as exc:
        raise CalibrationError(f"{p.name}: not a CSV table ({str(exc).splitlines()[0] if str(exc) else 'empty'}); "
                               "save it as comma-separated text with the header m,n,k,dtype,tflops") from None
    df = df.loc[:, [c for c in df.columns if not str(c).startswith("Unnamed:")]]
    return gemm_frame(df, p.name, lines=_data_lines(text, len(df)))


def _data_lines(text: str, rows: int) -> tuple[int, ...] | None:
    """The file's line number of each data row (after the header; ``#`` comments and blank lines
    skipped, as the CSV reader skips them), or None when they cannot be matched to the rows."""
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
                raise CalibrationError(f"{at(i)}, column {c!r}: must be a positive number, got {_cell(v)}")
            if c != "tflops" and float(v) != int(float(v)):
                raise CalibrationError(f"{at(i)}, column {c!r}: a GEMM dimension is a whole number of elements, "
                                       f"got {_cell(v)}")
        try:
            normalise_dtype(row.dtype)
        except ValueError as exc:
            raise CalibrationError(f"{at(i)}, column 'dtype': {exc}") from None
    out[["m", "n", "k", "tflops"]] = out[["m", "n", "k", "tflops"]].astype(float)
    fp32 = sum(str(d).strip().lower().removeprefix("torch.") in FP32_NAMES for d in out["dtype"])
    out["dtype"] = [normalise_dtype(d) for d in out["dtype"]]
    out.attrs["where"] = where
    # rows written as fp32 (fitted as TF32): counted here, or carried from a table checked before
    out.attrs["fp32_rows"] = int(fp32 or df.attrs.get("fp32_rows", 0))
    if lines is not None and len(lines) == len(out):
        out.attrs["lines"] = tuple(lines)
    return out


def _cell(value: Any) -> str:
    """A table cell as the file wrote it: a number as is (``-3``, not ``-3.0``), other text quoted, an empty
    cell said so."""
    if value is None or (isinstance(value, float) and value != value):
        return "an empty cell"
    if isinstance(value, str):
        text = value.strip()
        try:
            float(text)
        except ValueError:
            return excerpt(text) if text else "an empty cell"
        return text
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return excerpt(value)


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


#: The GEMM fit is refused above these errors [fractions]: the median |error| (the shipped H100 fits: BF16
#: 4.3%, TF32 10%) and the largest (BF16 12.5%, TF32 38%; 100% = a shape predicted at twice its rate).
GEMM_MAX_MEDIAN_ERROR = 0.25
GEMM_MAX_ERROR = 1.0
#: Each dimension of training GEMMs reaches this size at least [elements]: tokens per micro-batch (4096 and
#: up) by the hidden size (4096 for Llama 3 8B, 8192 for 70B) and the FFN width; a table whose largest shape
#: stops below it in some dimension leaves the large-GEMM level an extrapolation (noted).
TRAINING_GEMM_DIM = 4096
#: A table whose smallest shape is above this in some dimension [elements] leaves the fall of the rate for
#: small GEMMs unmeasured (noted): the shipped H100 fits put half rate at 136-226, so 1024 is where the
#: curve is within a few percent of its level and the shapes below tell it the half-rate sizes.
SMALL_GEMM_DIM = 1024


def check_gemm_fit(curve: GemmCurve, table: Any, quality: dict[str, Any], dtype: str, where: str) -> list[str]:
    """Refuse a GEMM fit that does not describe its measurements; return notes on one that holds.

    Refused (:class:`~.nccl.CalibrationError`, naming the dtype and the shapes to add): a median |error| above
    :data:`GEMM_MAX_MEDIAN_ERROR` or a largest above :data:`GEMM_MAX_ERROR`; a half-rate dimension above the
    largest measured in that dimension (the rate is still climbing at the largest shape, so the large-GEMM
    level is a guess); a large-GEMM level at the clamp of 1 (:func:`~.gemm.fit_gemm_curve`). Noted: a dimension
    whose largest measured value is below :data:`TRAINING_GEMM_DIM`, or whose smallest is above
    :data:`SMALL_GEMM_DIM`.
    """
    med, worst = quality["median_abs_error"], quality["max_abs_error"]
    add = "measure shapes from small (256) to large (8192) in each of m, n and k"
    if med > GEMM_MAX_MEDIAN_ERROR or worst > GEMM_MAX_ERROR:
        raise CalibrationError(
            f"{where}: the {dtype} GEMM curve misses the measured rates by {med:.0%} at the median and {worst:.0%} at "
            f"worst (at most {GEMM_MAX_MEDIAN_ERROR:.0%} and {GEMM_MAX_ERROR:.0%} are accepted), so it does not "
            f"describe them; check the rates (achieved TFLOP/s = 2 m n k / time / 10^12) and {add}")
    if curve.eff_max >= 1.0:
        raise CalibrationError(
            f"{where}: the {dtype} fit puts the large-GEMM level at the dense peak ({curve.peak_tflops:,.6g} TFLOP/s), "
            "which no GEMM reaches: the measured rates do not level off below it; check the peak (--accelerator or "
            f"--peak {dtype}=TFLOPS) and {add}")
    for dim, half in (("m", curve.m_half), ("n", curve.n_half), ("k", curve.k_half)):
        top = float(np.max(table[dim]))
        if half > top:
            raise CalibrationError(
                f"{where}: the {dtype} rate is still below half its level at the largest {dim} measured ({top:,.0f}; "
                f"the fit puts half rate at {dim} = {half:,.0f}), so the large-GEMM level is a guess; add shapes "
                f"with {dim} of 4096 and 8192 (such as 8192 x 8192 x 8192)")
    notes = []
    short = [f"{dim} {float(np.max(table[dim])):,.0f}" for dim in ("m", "n", "k")
             if float(np.max(table[dim])) < TRAINING_GEMM_DIM]
    if short:
        notes.append(f"{where}: the largest {dtype} shapes measured reach only {all_of(short)}; training GEMMs reach "
                     f"{TRAINING_GEMM_DIM:,} and more in every dimension, so the large-GEMM level there is "
                     "extrapolated; add shapes up to 8192")
    large = [f"{dim} {float(np.min(table[dim])):,.0f}" for dim in ("m", "n", "k")
             if float(np.min(table[dim])) > SMALL_GEMM_DIM]
    if large:
        notes.append(f"{where}: the smallest {dtype} shapes measured start at {all_of(large)}, so the curve's fall "
                     "for smaller GEMMs is not measured (it predicts them near the large-GEMM level); add shapes from "
                     "256")
    return notes


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
        lines = [f"calibration profile '{p.name}', measured {p.date}" + (f" on {p.device}" if p.device else "")]
        for dtype, c in sorted(p.gemm.items()):
            q = self.gemm_quality.get(dtype, {})
            lines.append(f"  GEMM {dtype}: large-GEMM efficiency {c.eff_max:.3f} of {c.peak_tflops:g} TFLOP/s, "
                         f"half-rate dimensions m {c.m_half:.0f}, n {c.n_half:.0f}, k {c.k_half:.0f}, "
                         f"fixed time {format_duration(c.fixed_time_s)}; median error "
                         f"{q.get('median_abs_error', float('nan')):.1%}, max {q.get('max_abs_error', float('nan')):.1%}")
        for level, f in sorted(p.links.items()):
            if f.alpha_s is None:
                lat = "latency not measured"
            else:
                steps = COLLECTIVES[f.collective][1](f.ranks)
                # the ring model of training/comm.py: h alpha per collective, h = 2 (n - 1) for an all-reduce
                lat = (f"alpha {format_duration(f.alpha_s)} per ring step ({format_duration(f.alpha_s * steps)} per "
                       f"{f.collective.replace('_', '-')} on {plural(f.ranks, 'GPU')}: {plural(int(steps), 'step')})")
            fit = "" if f.rms_error is None else f", rms error {f.rms_error:.0%} over all sizes"
            if f.large_sizes_max_abs_error is not None and f.large_sizes_from_bytes:
                fit += (f", at most {f.large_sizes_max_abs_error:.0%} from {size_text(f.large_sizes_from_bytes)} up "
                        "(the sizes the bandwidth is fitted on)")
            lines.append(f"  {level}: {f.collective.replace('_', '-')} on {f.ranks} GPUs, bus bandwidth "
                         f"{f.bus_bandwidth_gb_per_s:,.1f} GB/s (peak measured {f.peak_busbw_gb_per_s:,.1f}), "
                         f"{lat}{fit}")
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


def calibrate(name: str, *, gemm: Any = None, nccl: list[tuple[NcclTest, str | None]] | None = None,
              peaks: dict[str, float] | None = None, device: str | None = None, date: str | None = None,
              source: str = "", example: bool = False, exponent: float | None = 2.0,
              gpus_per_node: int | None = None) -> CalibrationResult:
    """Fit a profile from a GEMM table (DataFrame, :func:`gemm_frame` columns) and nccl-tests runs.

    ``peaks``: dense peak per dtype [TFLOP/s] of the measured device (required for every dtype
    in the GEMM table). ``nccl``: (test, level) pairs, level None = from the test's rank lines
    (:func:`~.nccl.link_level`); one run per level (a second raises). ``gpus_per_node``: the ranks per
    host of a fabric run without rank lines (:func:`~.nccl.fit_alpha_beta`). ``date`` defaults to today (UTC).

    A GEMM fit is refused when it does not describe the measurements (:func:`check_gemm_fit`), and noted
    when the shapes stop short of training-size GEMMs; a link whose latency is extrapolated sets no
    ``alpha`` and is noted.
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
        fp32_rows = table.attrs.get("fp32_rows", 0)
        for dtype, sub in table.groupby("dtype", sort=True):
            as_tf32 = " (the fp32 rows are fitted as TF32 tensor-core rows)" if dtype == "tf32" and fp32_rows else ""
            if dtype not in peaks:
                raise CalibrationError(f"{where}: no dense {dtype} peak for the measured device{as_tf32}; give "
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
                                       f"{dtype} peak of {peaks[dtype]:,.6g} TFLOP/s{as_tf32}; give the measured "
                                       "device's "
                                       f"peak (--accelerator ID or --peak {dtype}=TFLOPS)")
            try:
                curve = fit_gemm_curve(sub.m, sub.n, sub.k, sub.tflops, peaks[dtype], exponent=exponent,
                                       source=source or "measured")
            except ValueError:  # a fit that leaves the curve's bounds (a half-rate size beyond any GEMM): the shapes
                # cannot pin it down, typically a rate still rising at the largest shapes measured
                raise CalibrationError(
                    f"{where}: the {dtype} rates cannot be fitted with the GEMM curve: they do not level off within the "
                    f"shapes measured (the largest m, n and k: {int(sub.m.max()):,}, {int(sub.n.max()):,} and "
                    f"{int(sub.k.max()):,}); measure shapes from small (256) to large (8192) in each dimension") from None
            q = fit_quality(curve, sub.m, sub.n, sub.k, sub.tflops)
            if as_tf32:
                notes.append(f"{where}: the fp32 rows ({plural(fp32_rows, 'row')}) are fitted as TF32 tensor-core rows, "
                             f"against the dense TF32 peak of {peaks[dtype]:,.6g} TFLOP/s: cuBLAS runs FP32 GEMMs on "
                             "the TF32 tensor cores when TF32 is allowed (PyTorch: "
                             "torch.backends.cuda.matmul.allow_tf32 = True), so measure with TF32 on")
            notes += check_gemm_fit(curve, sub, q, dtype, where)
            curves[dtype] = curve
            t = sub.reset_index(drop=True).copy()
            t["predicted_tflops"] = q["predicted_tflops"]
            t["error"] = q["error"]
            tables[dtype] = t
            quality[dtype] = {k: v for k, v in q.items() if k.endswith("error") and k != "error"}
    links: dict[str, LinkFit] = {}
    tests: dict[str, NcclTest] = {}
    for test, level in nccl or []:
        lvl = link_level(test, level)
        if lvl in links:
            raise CalibrationError(f"two nccl-tests runs for the {lvl} level ({links[lvl].source} and "
                                   f"{test.source}); give one per level")
        fit = fit_alpha_beta(test, lvl, gpus_per_node=gpus_per_node if lvl == "fabric" else None)
        links[fit.level] = fit
        tests[fit.level] = test
        src = test.source or "the nccl-tests output"
        notes += [f"{src}: {n}" for n in test.notes]
        if fit.level == "fabric" and fit.ranks_per_host and fit.ranks // fit.ranks_per_host <= 2:
            notes.append(f"{src}: fabric measured on "
                         f"{plural(fit.ranks // fit.ranks_per_host, 'node')}; NCCL's tree "
                         "and NVLS algorithms beat the ring on so few nodes, so measure on 4 or more for a figure "
                         "that holds at scale")
        if fit.level == "nvlink" and len(test.hosts) > 1:
            notes.append(f"{src}: the rank lines put the ranks on {len(test.hosts)} hosts; taken as NVLink, as "
                         "given: right for a multi-node NVLink domain (GB200 NVL72), otherwise give it as fabric=FILE")
        if fit.alpha_s is None and fit.latency_s is not None:
            notes.append(f"{src}: latency not measured: the smallest size is {size_text(test.rows[0].size_bytes)}"
                         f", above the small-message plateau, so the line's {format_duration(fit.latency_s)} at "
                         "size 0 is an extrapolation; the profile sets no latency (the engine's default stays); run "
                         "from -b 8 to measure it")
    when = date or dt.datetime.now(dt.UTC).date().isoformat()
    try:
        when = dt.date.fromisoformat(str(when)).isoformat()
    except ValueError:
        raise CalibrationError(f"--date: must be a date like 2026-12-01, got {date!r}") from None
    dev = device or next((f.device for f in links.values() if f.device), None)
    profile = CalibrationProfile(name=name.strip(), date=when, device=dev,
                                 example=example, source=source, gemm=curves, links=links)
    return CalibrationResult(profile, tables, quality, tests, notes)


__all__ = ["PEAK_COLUMNS", "CalibrationResult", "calibrate", "check_gemm_fit", "dense_peaks", "gemm_frame",
           "read_gemm_table", "size_text"]
