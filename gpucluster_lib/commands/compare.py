"""``gpucluster compare A.yaml B.yaml ...``: two to six designs side by side, the better value marked."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from gpucluster_lib.commands import print_json

NAME = "compare"
ORDER = 62
HELP = "2-6 designs side by side (scenario files, example names or sweep points): values, changes, the better marked"
DESCRIPTION = (
    "gpucluster compare A.yaml B.yaml [C.yaml ...]: one row per figure (GPUs, racks, kW, CapEx, days, ...), "
    "one column per design with its change against the first and a mark on the better value. A sweep's "
    "point is OUTDIR:POINT (e.g. out/hall:12), read from OUTDIR/results.parquet."
)

_POINT = re.compile(r"^(?P<dir>.+):(?P<point>\d+)$")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("designs", nargs="+", metavar="DESIGN",
                   help="scenario YAML, shipped example name, or OUTDIR:POINT of a sweep")
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")


def _load(ref: str) -> object:
    from gpucluster_lib.design import Design
    from gpucluster_lib.explore.compare import sweep_rows
    from gpucluster_lib.resources import scenario_path
    from gpucluster_lib.scenario import load_scenario

    m = _POINT.match(ref)
    if m and Path(m["dir"]).is_dir():
        return sweep_rows(m["dir"], [int(m["point"])])[0]
    return Design(load_scenario(scenario_path(ref)))


def run(args: argparse.Namespace) -> int:
    from gpucluster_lib.explore.compare import compare

    cmp = compare([_load(r) for r in args.designs])
    if args.json:
        print_json(cmp.to_dict())
    else:
        print(cmp.frame().to_string(index=False))
    return 0
