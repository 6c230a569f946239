"""The long fuzzing run: many scenarios through every CLI subcommand, and edits through the app's state.

    python benchmarks/fuzz_scenarios.py [--examples 2000] [--edits 2000] [--seed 1] [--max-changes 3]

The same strategies and checks as tests/test_fuzz.py (tests/strategies.py), with far more
examples and a seed of your choice; not part of the test suite (it takes minutes). Prints the
counts (scenarios, command runs answered / refused, app edits answered / refused) and, on a
failure, hypothesis's shrunk failing example, then exits 1.
"""

from __future__ import annotations

import argparse
import collections
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hypothesis import HealthCheck, Phase, given, seed, settings  # noqa: E402

from gpucluster_lib.errors import GpuClusterError  # noqa: E402
from gpucluster_lib.scenario import from_dict  # noqa: E402
from tests.strategies import BASES, check_design_dicts, edits, exercise, scenarios  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", type=int, default=2000, help="scenarios through the six commands")
    ap.add_argument("--edits", type=int, default=2000, help="app-state edits")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-changes", type=int, default=3, help="keys changed per scenario")
    args = ap.parse_args(argv)
    counts: collections.Counter[str] = collections.Counter()
    common = dict(deadline=None, database=None, print_blob=True, phases=[Phase.generate, Phase.shrink],
                  suppress_health_check=list(HealthCheck))

    @seed(args.seed)
    @settings(max_examples=max(args.examples, 1), **common)
    @given(data=scenarios(max_changes=args.max_changes))
    def cli_runs(data: dict) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            statuses = exercise(data, Path(tmp))
        counts["scenarios"] += 1
        for command, rc in statuses.items():
            counts[f"{command} {'answered' if rc == 0 else 'refused'}"] += 1

    @seed(args.seed)
    @settings(max_examples=max(args.edits, 1), **common)
    @given(changes=edits(max_changes=args.max_changes))
    def app_edits(changes: dict) -> None:
        from gpucluster_lib.ui.common import AppState

        state = AppState.from_scenario(from_dict(BASES[0]))
        try:
            state.update(**changes)
        except GpuClusterError:
            counts["app edits refused"] += 1
            return
        check_design_dicts(state.design)
        counts["app edits answered"] += 1

    failed = False
    for name, fn, n in (("CLI", cli_runs, args.examples), ("app state", app_edits, args.edits)):
        if n <= 0:
            continue
        t0 = time.perf_counter()
        try:
            fn()
        except Exception as exc:  # noqa: BLE001 - report and go on with the other half
            failed = True
            notes = "\n".join(getattr(exc, "__notes__", []))
            print(f"{name}: FAILED: {type(exc).__name__}: {str(exc)[:2000]}\n{notes[:4000]}", file=sys.stderr)
        print(f"{name}: {time.perf_counter() - t0:,.0f} s")
    for key, value in sorted(counts.items()):
        print(f"  {key:<28} {value:>8,}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
