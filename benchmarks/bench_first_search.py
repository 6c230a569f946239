"""Compute of an app change that needs a new plan search, on the examples with automatic plans.

    python benchmarks/bench_first_search.py [--example NAME] [--rounds 3] [--cold]

The header shows the days to train, so a change of anything the automatic plan search reads
(the node count, the oversubscription, the NIC: the fabric bandwidth per GPU) runs a new search
whichever tab is on screen. The search cache and the Design's memo of the training stages are
emptied before every change, so each one is a first search. The search keeps the plan spaces and
memory fits of its last searches, which a change of the fabric alone reuses (the app has searched
the example's own fabric when it loaded it); ``--cold`` empties them too, so that every change
also enumerates the plans and computes every plan's memory. Per example: the change is made on
the Network tab's widgets with the tab on screen and the header above it, as in the app (see
benchmarks/bench_app.py), and timed from the widget's new value to the end of every callback;
each change is followed by the change back, also a first search. Prints p50 and p95 over the
changes [ms] (wall clock per widget, all changes together, and the process's CPU time, which
another process's load inflates less) with the time spent in the plan search, and the load
average before and after (this is a shared machine: compare runs under similar load). Target:
p95 under 100 ms.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one core
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

#: examples whose header runs an automatic plan search
EXAMPLES = ("gb200-nvl72-superpod-su", "llama3-70b-512-h100")


def _changes(panel) -> list[tuple[str, object]]:
    """(widget, new value) pairs: each a value the search has not seen since the caches were emptied."""
    nodes = panel.nodes.value
    oversub = panel.oversub.value
    nic = panel.nic.value
    other_nic = next(v for v in ("connectx-6-hdr", "connectx-8-800g") if v != nic)
    return [("nodes", nodes + 1), ("nodes", nodes), ("nodes", max(1, nodes - 1)), ("nodes", nodes),
            ("oversub", 2.0 if oversub != 2.0 else 1.5), ("oversub", oversub),
            ("oversub", 3.0 if oversub != 3.0 else 4.0), ("oversub", oversub),
            ("nic", other_nic), ("nic", nic)]


def first_search_changes(example: str, rounds: int, cold: bool = False) -> dict[str, list[float]]:
    """Per widget: the compute of each change [s], and the plan-search share of it."""
    from gpucluster_lib.resources import example_paths
    from gpucluster_lib.ui import header as header_mod
    from gpucluster_lib.ui.common import AppState

    est = importlib.import_module("gpucluster_lib.training.estimate")
    # what the search keeps besides its results (absent before the bounded search: the same bench
    # then measures the earlier code)
    kept = [getattr(est, "_SPACES", {})]
    if importlib.util.find_spec("gpucluster_lib.training.search") is not None:
        kept.append(importlib.import_module("gpucluster_lib.training.search")._FITS)
    tab = importlib.import_module("gpucluster_lib.ui.tab_topology")
    state = AppState.from_path(example_paths()[example])
    header_mod.Header(state)
    state.shown = tab.TITLE
    panel = tab.TopologyPanel(state)

    searched: list[float] = []
    search = est._search

    def timed_search(*args, **kwargs):
        t = time.perf_counter()
        try:
            return search(*args, **kwargs)
        finally:
            searched.append(time.perf_counter() - t)

    est._search = timed_search
    out: dict[str, list[float]] = {"total": [], "cpu": [], "search": []}
    try:
        for _ in range(rounds):
            for attr, value in _changes(panel):
                est._SEARCHES.clear()  # every change is a first search
                if cold:
                    for cache in kept:
                        cache.clear()
                memo = state.design._memo
                for stage in ("training", "plans", "reliability"):
                    memo.pop(stage, None)
                searched.clear()
                t, c = time.perf_counter(), time.process_time()
                getattr(panel, attr).value = value
                out["cpu"].append(time.process_time() - c)
                out["total"].append(time.perf_counter() - t)
                out["search"].append(sum(searched))
                out.setdefault(attr, []).append(out["total"][-1])
    finally:
        est._search = search
    msg = getattr(panel, "msg", None)
    if msg is not None and msg.value and "gc-error" in msg.value:
        print(f"  note: {example} shows an error after its changes: {msg.value[:120]}")
    return out


def p50_p95(times: list[float]) -> tuple[float, float]:
    times = sorted(times)
    return statistics.median(times) * 1e3, times[min(len(times) - 1, int(round(0.95 * (len(times) - 1))))] * 1e3


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--example", action="append", help="example(s) to measure (default: the two with automatic plans)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cold", action="store_true", help="also forget the plan spaces and memory fits of earlier searches")
    args = ap.parse_args()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("compute of a change that needs a new plan search, Network tab on screen, header included "
          f"(target: p95 under 100 ms){'; cold: no plan space or memory fit kept' if args.cold else ''}")
    print(f"  {'example':26s} {'change':10s} {'n':>3s} {'p50 [ms]':>9s} {'p95 [ms]':>9s}   {'search p50':>10s} {'p95 [ms]':>9s}")
    for example in args.example or EXAMPLES:
        res = first_search_changes(example, args.rounds, args.cold)
        s50, s95 = p50_p95(res["search"])
        for what in ("nodes", "oversub", "nic", "total", "cpu"):
            p50, p95 = p50_p95(res[what])
            extra = f"   {s50:10.1f} {s95:9.1f}" if what == "total" else ""
            print(f"  {example:26s} {what:10s} {len(res[what]):3d} {p50:9.1f} {p95:9.1f}{extra}")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
