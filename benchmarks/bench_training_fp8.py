"""Compute per change of the Training tab's FP8 recipe and FP8 weights dropdowns (target: well under 100 ms).

    python benchmarks/bench_training_fp8.py [--rounds 3] [--example NAME]

Per shipped example, the app's panels and header are built on one state (``bench_app.app_panels``),
the Training tab is on screen and its precision set to fp8 (an example whose GPU has no FP8 peak is
skipped). Then, with the example's plan search on
("auto") and with the plan it chose fixed ("manual"), each dropdown steps through its options (the
recipe: framework default, delayed, current, and MXFP8 on Blackwell; the weights: default, on, off)
``rounds`` times. Each change is timed from the widget's new value to the end of every callback it
triggers, the header's refresh included: wall time and this process's CPU time (on a shared machine
the wall time also counts the waits for other work). A change that runs a new plan search (the first
search for new search inputs: each recipe and weight setting is one) is counted, and its search time
shown apart, as in ``bench_app.py``.
"""

from __future__ import annotations

import argparse
import importlib
import time

# benchmarks/ is the script's folder, so it is on sys.path
from bench_app import _p50_p95, app_panels

from gpucluster_lib.resources import example_paths


def changes(panel, widget, rounds: int, searches: list[float], search_cpu: list[float]) -> dict[str, float]:
    """Step ``widget`` through its options ``rounds`` times (ending where it began): whole changes'
    wall and CPU p50 / p95 / max [ms], and the changes that ran a plan search (count, slowest search)."""
    wall, cpu, searched = [], [], []
    start = widget.value
    values = [v for _, v in widget.options]
    order = values[values.index(start) + 1:] + values[:values.index(start) + 1]
    for _ in range(rounds):
        for v in order:
            searches[:], search_cpu[:] = [], []
            t, c = time.perf_counter(), time.process_time()
            widget.value = v
            wall.append(time.perf_counter() - t)
            cpu.append(time.process_time() - c)
            if searches:
                searched.append(sum(searches))
            if "gc-error" in panel.msg.value:
                print(f"    note: {widget.description} = {v}: {panel.msg.value[:160]}")
    w50, w95 = _p50_p95(wall)
    c50, c95 = _p50_p95(cpu)
    return {"n": len(wall), "wall_p50": w50, "wall_p95": w95, "wall_max": max(wall) * 1e3, "cpu_p50": c50,
            "cpu_p95": c95, "cpu_max": max(cpu) * 1e3, "searches": len(searched),
            "search_max": max(searched, default=0.0) * 1e3}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--example", action="append", help="an example's name (default: every shipped one)")
    args = ap.parse_args()
    estimate = importlib.import_module("gpucluster_lib.training.estimate")  # the module, not the function
    search = estimate._search
    searches: list[float] = []
    search_cpu: list[float] = []

    def timed_search(*a, **k):
        t, c = time.perf_counter(), time.process_time()
        try:
            return search(*a, **k)
        finally:
            searches.append(time.perf_counter() - t)
            search_cpu.append(time.process_time() - c)

    estimate._search = timed_search
    print(f"{'example':<28} {'plan':<7} {'dropdown':<11} {'n':>3}  {'wall p50/p95/max [ms]':>22}  "
          f"{'CPU p50/p95/max [ms]':>21}  searches (slowest)")
    try:
        for name in args.example or list(example_paths()):
            state, _header, panels = app_panels(name)
            panel = panels["tab_training"][1]
            state.shown = panels["tab_training"][0]  # the Training tab on screen
            panel.precision.value = "fp8"
            if "gc-error" in panel.msg.value:  # an accelerator without an FP8 peak (A100): nothing to time
                print(f"{name:<28} skipped: {panel.msg.value[panel.msg.value.find('training.'):][:100]}")
                continue
            for mode in ("auto", "manual"):
                if mode == "manual":
                    panel.auto.value = False  # the plan the search chose, fixed
                elif not panel.auto.value:
                    panel.auto.value = True
                for widget in (panel.fp8_recipe, panel.fp8_params):
                    r = changes(panel, widget, args.rounds, searches, search_cpu)
                    print(f"{name:<28} {mode:<7} {widget.description:<11} {r['n']:>3}  "
                          f"{r['wall_p50']:>6.1f} {r['wall_p95']:>6.1f} {r['wall_max']:>6.1f}      "
                          f"{r['cpu_p50']:>6.1f} {r['cpu_p95']:>6.1f} {r['cpu_max']:>6.1f}      "
                          f"{r['searches']} ({r['search_max']:.0f} ms)")
    finally:
        estimate._search = search
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
