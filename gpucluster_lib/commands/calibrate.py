"""``gpucluster calibrate``: fit a calibration profile to your own GEMM and nccl-tests measurements."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gpucluster_lib.commands import print_json
from gpucluster_lib.errors import excerpt, one_of

NAME = "calibrate"
ORDER = 90
HELP = "fit a calibration profile (GEMM curve, link bandwidth and latency) to your own measurements"
DESCRIPTION = (
    "Reads a GEMM micro-benchmark CSV (columns m, n, k, dtype, tflops) and the output of nccl-tests "
    "(all_reduce_perf, all_gather_perf or reduce_scatter_perf, as printed), fits the GEMM efficiency curve "
    "and the bandwidth and latency of each link level, and writes a named, dated profile (YAML) that a "
    "scenario selects with 'calibration: FILE'.")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--name", required=True, help="the profile's name, e.g. my-cluster")
    p.add_argument("--gemm", metavar="CSV", help="GEMM micro-benchmark table: m, n, k, dtype, tflops")
    p.add_argument("--nccl", action="append", default=[], metavar="[LEVEL=]FILE",
                   help="nccl-tests output; LEVEL nvlink (a run inside one node) or fabric (across nodes); "
                        "without LEVEL it is read from the output's rank lines (one host: nvlink), and output "
                        "without rank lines needs it; repeatable, one file per level")
    p.add_argument("--accelerator", metavar="ID", help="catalogue accelerator measured: its dense peaks per data type")
    p.add_argument("--peak", action="append", default=[], metavar="DTYPE=TFLOPS",
                   help="dense peak of a data type on the measured device, e.g. bf16=989.4 (repeatable)")
    p.add_argument("--ranks", type=int, help="ranks of the nccl-tests runs, when the output has no rank lines")
    p.add_argument("--gpus-per-node", type=int, metavar="N",
                   help="GPUs (ranks) per node of a fabric run whose output has no rank lines, e.g. 8")
    p.add_argument("--device", help="the measured device's name (default: from the nccl-tests rank lines)")
    p.add_argument("--date", help="date of the measurements, YYYY-MM-DD (default: today)")
    p.add_argument("--source", default="", help="what was measured, where, with which software")
    p.add_argument("-o", "--output", metavar="FILE", help="profile to write (default: NAME.yaml)")
    p.add_argument("--chart", metavar="FILE", help="also save the fit-quality chart (.svg, .png or .html)")
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")


def _peaks(args: argparse.Namespace) -> dict[str, float]:
    from gpucluster_lib.calibration.gemm import DTYPES, normalise_dtype
    from gpucluster_lib.calibration.nccl import CalibrationError
    from gpucluster_lib.calibration.run import dense_peaks
    from gpucluster_lib.errors import GpuClusterError

    try:
        peaks = dense_peaks(args.accelerator) if args.accelerator else {}
    except GpuClusterError as exc:
        raise CalibrationError(f"--accelerator: {exc}") from None
    for item in args.peak:
        dtype, sep, value = item.partition("=")
        try:
            v = float(value)
        except ValueError:
            v = float("nan")
        if not sep or not (0 < v < float("inf")):
            raise CalibrationError(f"--peak: expected DTYPE=TFLOPS such as bf16=989.4, got {excerpt(item)}")
        try:
            key = normalise_dtype(dtype)
        except ValueError:
            raise CalibrationError(f"--peak: unknown data type {excerpt(dtype.strip())}; use {one_of(DTYPES)}, "
                                   "such as bf16=989.4") from None
        peaks[key] = v
    return peaks


#: File types the fit-quality chart can be saved as (Altair with vl-convert).
CHART_SUFFIXES = (".svg", ".png", ".html")


def _write(option: str, path: Path, save: Callable[[str], Any]) -> None:
    from gpucluster_lib.calibration.nccl import CalibrationError

    try:
        save(str(path))
    except OSError as exc:
        raise CalibrationError(f"{option}: cannot write {excerpt(str(path), 240)} ({exc.strerror or exc}); choose a file "
                               "in a folder that exists and that you can write to") from None


def run(args: argparse.Namespace) -> int:
    from gpucluster_lib.calibration.nccl import LEVELS, CalibrationError, read_nccl_tests
    from gpucluster_lib.calibration.run import calibrate, read_gemm_table

    if args.ranks is not None and args.ranks < 2:
        raise CalibrationError(f"--ranks: a collective needs at least 2 ranks, got {args.ranks}")
    if args.gpus_per_node is not None and args.gpus_per_node < 1:
        raise CalibrationError(f"--gpus-per-node: a node has at least 1 GPU, got {args.gpus_per_node}")
    if args.output and Path(args.output).suffix.lower() not in ("", ".yaml", ".yml") and not Path(args.output).is_dir():
        raise CalibrationError(f"-o: a profile is a YAML file; end the file name in .yaml, got "
                               f"{excerpt(Path(args.output).name)}")
    if args.chart and Path(args.chart).suffix.lower() not in CHART_SUFFIXES:
        raise CalibrationError(f"--chart: cannot save a chart as {excerpt(Path(args.chart).name)}; end the file "
                               f"name in {', '.join(CHART_SUFFIXES[:-1])} or {CHART_SUFFIXES[-1]}")
    tests = []
    for item in args.nccl:
        level, sep, path = item.partition("=")
        if not sep or level not in LEVELS:
            if sep and not Path(item).exists() and Path(path).exists():
                raise CalibrationError(f"--nccl: unknown link level {excerpt(level)}; use "
                                       f"{' or '.join(f'{lv}=FILE' for lv in LEVELS)}, or the file alone")
            level, path = None, item
        tests.append((read_nccl_tests(path, ranks=args.ranks), level))
    gemm = read_gemm_table(args.gemm) if args.gemm else None
    result = calibrate(args.name, gemm=gemm, nccl=tests, peaks=_peaks(args), device=args.device, date=args.date,
                       source=args.source, gpus_per_node=args.gpus_per_node)
    out = Path(args.output or f"{result.profile.name}.yaml")
    if out.is_dir():
        out = out / f"{result.profile.name}.yaml"
    chart = None
    if args.chart:  # built before anything is written, so that a failure leaves no profile behind
        from gpucluster_lib.charts.calibration import calibration_charts

        chart = calibration_charts(result)
    _write("-o", out, result.profile.save)
    if chart is not None:
        _write("--chart", Path(args.chart), chart.save)
    if args.json:
        print_json({**result.to_dict(), "written": str(out)})
    else:
        print(result.summary())
        print(f"wrote {out}" + (f" and {args.chart}" if args.chart else ""))
    return 0
