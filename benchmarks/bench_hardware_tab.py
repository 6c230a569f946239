"""Time one widget update of the hardware picker (target: under 100 ms of compute).

    python benchmarks/bench_hardware_tab.py
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

from gpucluster_lib.hardware.picker import PickerFilter, pick
from gpucluster_lib.ui.common import AppState
from gpucluster_lib.ui.tab_hardware import HardwarePanel

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    panel = HardwarePanel(AppState.from_path(ROOT / "gpucluster_lib/data/scenarios/gpt3-175b-1024-a100.yaml"))
    cat = panel.state.catalog
    t = []
    for _ in range(20):
        t0 = time.perf_counter()
        pick(cat, PickerFilter(precision="fp8", min_memory_gib=80))
        t.append(time.perf_counter() - t0)
    print(f"pick(): median {statistics.median(t) * 1e3:.1f} ms")
    t = []
    for i in range(20):
        t0 = time.perf_counter()
        panel.precision.value = ("fp8", "bf16", "fp16", "int8")[i % 4]
        t.append(time.perf_counter() - t0)
    print(f"widget update (precision change -> table, chart, detail, servers): median {statistics.median(t) * 1e3:.1f} ms, "
          f"max {max(t) * 1e3:.1f} ms over {len(t)} changes")


if __name__ == "__main__":
    main()
