"""Full design of each shipped example, in process and through the CLI.

    python benchmarks/bench_design.py [--repeat 7] [--before PATH_TO_OLD_CHECKOUT]

In process: one fresh :class:`~gpucluster_lib.design.Design` per run, every stage computed
(``to_dict()`` and the findings), the catalogue already loaded (as in the app and the
report). CLI: the wall time of ``gpucluster cost EXAMPLE --json`` (a new interpreter each
time, imports included). Medians over ``--repeat`` runs.

``--before DIR`` times the same work on another checkout of the project (e.g. a
``git worktree`` of the commit before the Design): there each capability fetched its own
upstream stages, so the equivalent of one design is what a report computed: facility
budget, topology, training estimate, serving, reliability and cost, one call each.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ["gpt3-175b-1024-a100", "llama3-70b-512-h100", "reference-8x-a100"]

IN_PROCESS_NOW = """
import statistics, sys, time
from gpucluster_lib.design import Design
from gpucluster_lib.scenario import load_scenario
from gpucluster_lib.resources import example_path
out = {}
for name in sys.argv[2:]:
    s = load_scenario(example_path(name))
    Design(s).to_dict()  # warm: catalogue and presets loaded once, as in the app
    times = []
    for _ in range(int(sys.argv[1])):
        t = time.perf_counter()
        d = Design(s)
        d.to_dict()
        d.findings
        times.append(time.perf_counter() - t)
    out[name] = statistics.median(times) * 1000
print(out)
"""

IN_PROCESS_BEFORE = """
import statistics, sys, time
from pathlib import Path
from gpucluster_lib import cost, facility, inference, reliability, topology, training
from gpucluster_lib.scenario import load_scenario
out = {}
for name in sys.argv[2:]:
    s = load_scenario(Path("data/scenarios") / f"{name}.yaml")
    def full():
        for fn in (facility.budget, topology.design_topology, training.estimate, inference.serve,
                   reliability.assess, cost.assess):
            fn(s).to_dict()
    full()
    times = []
    for _ in range(int(sys.argv[1])):
        t = time.perf_counter()
        full()
        times.append(time.perf_counter() - t)
    out[name] = statistics.median(times) * 1000
print(out)
"""


def in_process(code: str, cwd: Path, python: str, repeat: int) -> dict[str, float]:
    res = subprocess.run([python, "-c", code, str(repeat), *EXAMPLES], cwd=cwd, capture_output=True, text=True,
                         check=True, env={"PYTHONPATH": str(cwd), "PATH": "/usr/bin:/bin"})
    return eval(res.stdout.strip().splitlines()[-1])  # noqa: S307 - our own dict literal


def cli(cwd: Path, python: str, repeat: int, scenario: str) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        subprocess.run([python, "-m", "gpucluster_lib", "cost", scenario, "--json"], cwd=cwd, check=True,
                       capture_output=True, env={"PYTHONPATH": str(cwd), "PATH": "/usr/bin:/bin"})
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--before", type=Path, help="another checkout to time the same work on")
    args = ap.parse_args()
    py = sys.executable
    rows = {"now": {"in_process_ms": in_process(IN_PROCESS_NOW, ROOT, py, args.repeat),
                    "cli_ms": {n: cli(ROOT, py, max(3, args.repeat // 2), n) for n in EXAMPLES}}}
    if args.before:
        rows["before"] = {"in_process_ms": in_process(IN_PROCESS_BEFORE, args.before, py, args.repeat),
                          "cli_ms": {n: cli(args.before, py, max(3, args.repeat // 2), f"data/scenarios/{n}.yaml")
                                     for n in EXAMPLES}}
    for label, r in rows.items():
        for name in EXAMPLES:
            print(f"{label:>6}  {name:<22} full design in process {r['in_process_ms'][name]:7.1f} ms   "
                  f"gpucluster cost (new process) {r['cli_ms'][name]:7.0f} ms")
    print(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
