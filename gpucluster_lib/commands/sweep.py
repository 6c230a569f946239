"""``gpucluster sweep SWEEP.yaml -o OUTDIR``: many designs over scenario axes, in parallel."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from gpucluster_lib.commands import print_json

NAME = "sweep"
ORDER = 60
HELP = "evaluate a grid or sample of designs over scenario keys (process pool or Dask); results table and Pareto set"
DESCRIPTION = (
    "gpucluster sweep SWEEP.yaml -o OUTDIR: every point of the sweep file (a base scenario, axes over "
    "scenario keys, sampling, constraints, objectives; see docs/explore.md) is one design, computed in "
    "process. Writes OUTDIR/results.csv and OUTDIR/results.parquet (one row per point); re-running "
    "skips the finished points. Shipped sweep files can be named without their folder "
    "(gpucluster_lib/data/sweeps/)."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("sweep", metavar="SWEEP", help="sweep YAML file, or the name of a shipped sweep")
    p.add_argument("-o", "--output", required=True, metavar="OUTDIR", help="folder for the results")
    ex = p.add_mutually_exclusive_group()
    ex.add_argument("--workers", type=int, default=None,
                    help="processes of the local pool (default: the CPU count; 1 runs in this process)")
    ex.add_argument("--dask-local", type=int, default=None, metavar="N",
                    help="start a Dask LocalCluster of N worker processes (needs the dask extra)")
    ex.add_argument("--scheduler", default=None, metavar="tcp://HOST:PORT",
                    help="run on an existing Dask scheduler (e.g. a SLURMCluster's)")
    p.add_argument("--yes", action="store_true", help="allow a sweep of more than 10 million points")
    p.add_argument("--report", action="store_true", help="also write OUTDIR/report.html (papermill)")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object")


def _text(s: dict) -> str:
    lines = [f"sweep      {s['name']}: {s['points']:,} points, {s['ok']:,} ok, {s['failed']:,} failed "
             f"({s['invalid']:,} invalid, {s['error']:,} errors), {s['feasible']:,} feasible"
             + (f", {s['skipped']:,} from an earlier run" if s["skipped"] else ""),
             f"time       {s['seconds']:.1f} s"]
    if s["constraints"]:
        lines.append(f"limits     {'; '.join(s['constraints'])}")
    if s["objectives"]:
        lines.append(f"front      {len(s['pareto'])} non-dominated designs over "
                     f"{', '.join(f'{k} ({v})' for k, v in s['objectives'].items())}")
        for k, row in s["best"].items():
            axes = ", ".join(f"{a}={row[a]}" for a in s["axes"])
            lines.append(f"best       {k} = {row[k]:,.6g} at point {row['point']} ({axes})")
    for f in s["findings"]:
        lines.append(f"{f['severity']:<10} {f['code']}: {f['message']}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from gpucluster_lib.explore.sweep import load_sweep, run_sweep

    sweep = load_sweep(args.sweep, yes=args.yes)
    workers = args.workers if args.workers is not None else (os.cpu_count() or 1)
    result = run_sweep(sweep, args.output, workers=workers, dask_local=args.dask_local, scheduler=args.scheduler,
                       progress=not args.no_progress and not args.json)
    summary = result.summary()
    summary["axes"] = list(sweep.keys)
    out = Path(args.output)
    summary["files"] = [str(out / "results.csv"), str(out / "results.parquet")]
    if args.report:
        from gpucluster_lib.report.sweep import render_sweep_report

        summary["files"].append(str(render_sweep_report(out)))
    if args.json:
        print_json(summary)
    else:
        print(_text(summary))
        print(f"files      {', '.join(summary['files'])}")
    return 0
