"""Timings of the power & space budget: library calls and one widget change.

    PYTHONPATH=. python benchmarks/bench_facility.py

Target: < 100 ms of compute per widget change (docs/architecture.md). Prints the median of
30 runs in milliseconds (benchmarks/timing.py).
"""

from __future__ import annotations

from pathlib import Path

from timing import median_ms

from gpucluster_lib.charts import facility as charts
from gpucluster_lib.facility.site import budget, default_node_counts, growth_table
from gpucluster_lib.hardware.node import build_node
from gpucluster_lib.hardware.resolve import catalog_for
from gpucluster_lib.scenario import load_scenario

ROOT = Path(__file__).resolve().parent.parent


def bench_scenario(name: str) -> None:
    s = load_scenario(ROOT / "gpucluster_lib" / "data" / "scenarios" / f"{name}.yaml")
    cat = catalog_for(s)
    b = budget(s, cat)
    counts = default_node_counts(b.nodes)

    def specs() -> object:
        return (charts.rack_elevation_spec(b), charts.power_breakdown_spec(b),
                charts.growth_spec(growth_table(b, counts, s, cat), b.nodes))

    print(f"{name}:")
    print(f"  build_node            {median_ms(lambda: build_node(s, cat)):7.2f} ms")
    print(f"  budget                {median_ms(lambda: budget(s, cat)):7.2f} ms")
    print(f"  growth_table ({len(counts)} pts) {median_ms(lambda: growth_table(b, counts, s, cat)):7.2f} ms")
    print(f"  3 chart specs         {median_ms(specs):7.2f} ms")
    print(f"  scenario.replace      {median_ms(lambda: s.replace(hardware__nodes=b.nodes + 1)):7.2f} ms")


def main() -> None:
    for name in ("reference-8x-a100", "gpt3-175b-1024-a100", "llama3-70b-512-h100", "roce-24k-h100"):
        bench_scenario(name)

    try:
        from gpucluster_lib.ui import tab_power
        from gpucluster_lib.ui.common import AppState
    except ImportError:  # the UI layer is optional for the library benchmark
        return
    state = AppState.from_path(ROOT / "gpucluster_lib" / "data" / "scenarios" / "gpt3-175b-1024-a100.yaml")
    panel = tab_power.PowerPanel(state)

    def change() -> None:
        panel.nodes.value = 128 if panel.nodes.value != 128 else 140

    print(f"widget change (nodes, full refresh incl. widget sync): {median_ms(change):7.2f} ms")

    def pue() -> None:
        panel.pue.value = 1.3 if panel.pue.value != 1.3 else 1.4

    print(f"widget change (PUE):                                  {median_ms(pue):7.2f} ms")


if __name__ == "__main__":
    main()
