"""Timings of the topology module (run: PYTHONPATH=. python benchmarks/bench_topology.py).

What a widget change in the Network tab computes: design_topology (counts, cables, power),
the drawing graph (networkx, aggregated) and its DataFrames, and, separately, altair's
serialisation of the drawing (what JupyterChart sends to the browser), the growth table
(13 designs) and the full cable list (CLI export only).
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

from gpucluster_lib.catalog import load_catalog
from gpucluster_lib.charts.topology import graph_frames, topology_chart
from gpucluster_lib.network.topology import design_topology, growth_table
from gpucluster_lib.scenario import load_scenario

ROOT = Path(__file__).resolve().parent.parent


def timed(fn, repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000


def main() -> None:
    s = load_scenario(ROOT / "gpucluster_lib" / "data" / "scenarios" / "llama3-70b-512-h100.yaml")
    cat = load_catalog()
    design_topology(s, cat)  # warm caches (catalogue, cabling.yaml)
    print(f"{'nodes':>6} {'design':>8} {'graph':>8} {'compute':>8} {'altair':>8} {'cables':>8}  [ms, median of 5]")
    for n in (16, 128, 1024, 4096):
        d = design_topology(s, cat, nodes=n)
        t_design = timed(lambda n=n: design_topology(s, cat, nodes=n))
        t_graph = timed(lambda d=d: graph_frames(d))
        t_chart = timed(lambda d=d: topology_chart(d).to_dict(), repeat=3)
        t_cables = timed(lambda d=d: d.cable_list(), repeat=3)
        print(f"{n:>6} {t_design:8.1f} {t_graph:8.1f} {t_design + t_graph:8.1f} {t_chart:8.1f} {t_cables:8.1f}")
    print(f"growth table (13 node counts): {timed(lambda: growth_table(s, cat), repeat=3):.1f} ms")
    try:  # the whole widget callback, JupyterChart serialisation included (needs the UI package)
        from gpucluster_lib.ui import tab_topology
        from gpucluster_lib.ui.common import AppState
    except ImportError as e:
        print(f"Network tab not timed ({e})")
        return
    panel = tab_topology.TopologyPanel(AppState.from_scenario(s, cat))
    for n in (16, 128, 1024, 4096):
        def change(n=n):
            panel.nodes.value = 1
            panel.nodes.value = n
        print(f"Network tab, node count -> {n:>5}: {timed(change, repeat=3) / 2:.0f} ms per change")
    panel.nodes.value = 1024

    def flip():
        panel.oversub.value = 2.0
        panel.oversub.value = 1.0
    print(f"Network tab, oversubscription change at 1024 nodes (growth chart too): {timed(flip, repeat=3) / 2:.0f} ms")



if __name__ == "__main__":
    main()
