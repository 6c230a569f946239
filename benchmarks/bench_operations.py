"""Timings of the operations stage, its tab change and every export.

    PYTHONPATH=. python benchmarks/bench_operations.py

Target: < 100 ms of compute for the Operations tab's widget change (the operations stage on
an evolved design: its upstream stages are reused); the exports run on a click or from the
CLI and are timed for information. Prints medians in milliseconds.
"""

from __future__ import annotations

from pathlib import Path

from timing import median_ms

from gpucluster_lib.design import Design
from gpucluster_lib.exports import KINDS, export_files

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "gpucluster_lib" / "data" / "scenarios"


def bench(name: str, repeat: int = 5) -> None:
    base = Design.from_yaml(EXAMPLES / f"{name}.yaml")
    base.cost, base.operations  # noqa: B018 - compute the upstream stages once
    other = base.scenario.replace(operations__scheduler="both")

    def change() -> object:
        return base.evolve(other).operations  # what a tab change recomputes

    print(f"{name}: operations stage after a tab change {median_ms(change, 20):8.1f} ms")
    for kind in KINDS:
        print(f"{name}:   export {kind:7s} {median_ms(lambda k=kind: export_files(k, base), repeat):8.1f} ms")


if __name__ == "__main__":
    for n in ("reference-8x-a100", "llama3-70b-512-h100", "gpt3-175b-1024-a100"):
        bench(n)
