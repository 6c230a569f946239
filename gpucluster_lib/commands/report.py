"""``gpucluster report``: papermill-executed HTML reports, one scenario or a batch."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gpucluster_lib.commands import print_json

NAME = "report"
ORDER = 90
HELP = "write an HTML design report (no code) per scenario, executed with papermill"
DESCRIPTION = (
    "One scenario: gpucluster report SCENARIO -o OUT.html (a YAML file or a shipped example's name, "
    "see `gpucluster examples`). Several files or folders: "
    "gpucluster report a.yaml b.yaml dir/ -o OUTDIR (one report each plus OUTDIR/index.html; "
    "a failing scenario is listed in the index and does not stop the others). "
    "--pdf also prints each report to PDF beside its HTML (headless Chromium); "
    "--compare adds OUTDIR/comparison.html, the designs side by side."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("scenarios", nargs="+", metavar="SCENARIO",
                   help="scenario YAML files, folders of them, or names of shipped examples")
    p.add_argument("-o", "--output", required=True, help="OUT.html for one scenario file, a folder for a batch")
    p.add_argument("--timeout", type=int, default=600, help="execution timeout per notebook cell [s]")
    p.add_argument("--json", action="store_true", help="print what was written as JSON")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    p.add_argument("--pdf", action="store_true",
                   help="also write each report as PDF beside its HTML (needs Debian's chromium)")
    p.add_argument("--compare", action="store_true",
                   help="with several scenarios: also write comparison.html, the designs side by side")
    p.add_argument("--allow-paths", action="store_true",
                   help="let a scenario's catalog: list name CSV files outside the scenario's folder "
                        "(absolute or ../ paths); without it they must be inside it")


def run(args: argparse.Namespace) -> int:
    from gpucluster_lib.report.render import ReportError, render_batch, render_report
    from gpucluster_lib.resources import scenario_path

    if args.timeout <= 0:
        raise ReportError(f"--timeout: must be a positive number of seconds per notebook cell, got {args.timeout}")
    if args.output.lower().endswith(".pdf"):
        raise ReportError(f"-o: give the HTML file to write, such as {args.output[:-4]}.html; --pdf writes the PDF "
                          "beside it")
    args.scenarios = [p if Path(p).is_dir() else str(scenario_path(p)) for p in args.scenarios]

    single = len(args.scenarios) == 1 and Path(args.scenarios[0]).is_file() and args.output.endswith(".html")
    if single:
        out = render_report(args.scenarios[0], args.output, timeout_s=args.timeout, pdf=args.pdf,
                            allow_paths=args.allow_paths)
        pdf = str(out.with_suffix(".pdf")) if args.pdf else None
        if args.json:
            print_json({"reports": [{"scenario": args.scenarios[0], "output": str(out), "pdf": pdf, "ok": True}]})
        else:
            print(f"wrote {out}" + (f" and {pdf}" if pdf else ""))
        return 0
    if args.pdf:
        from gpucluster_lib.report.pdf import chromium_path

        chromium_path()  # no browser: one clear line before any notebook runs
    results = render_batch(args.scenarios, args.output, progress=not args.no_progress, timeout_s=args.timeout,
                           pdf=args.pdf, compare=args.compare, allow_paths=args.allow_paths)
    comparison = Path(args.output) / "comparison.html"
    if args.json:
        print_json({"index": str(Path(args.output) / "index.html"),
                    "comparison": str(comparison) if args.compare and comparison.exists() else None,
                    "reports": [{"scenario": str(r.scenario), "output": str(r.output) if r.output else None,
                                 "pdf": str(r.output.with_suffix(".pdf")) if args.pdf and r.output else None,
                                 "ok": r.ok, "error": r.error, "seconds": round(r.seconds, 2)} for r in results]})
    else:
        for r in results:
            print(f"{'ok    ' if r.ok else 'FAILED'} {r.scenario} -> {r.output or r.error}")
        print(f"index: {Path(args.output) / 'index.html'}")
    failed = [r for r in results if not r.ok]
    if failed:
        print(f"gpucluster report: {len(failed)} of {len(results)} scenarios failed", file=sys.stderr)
        return 1
    return 0
