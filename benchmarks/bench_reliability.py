"""Timing of the Reliability & cost panel's work (not a test; run by hand).

    PYTHONPATH=. python benchmarks/bench_reliability.py [SCENARIO.yaml]

Reports the median of repeated runs, in ms, for: the library computation of one widget
update (reliability.assess + cost.assess + the cluster-size sweep), a price-only update
(cost.assess reusing the reliability result, as the panel does), building the charts,
serialising them (altair to_dict with validation, what the JupyterChart does), and a
full widget update (a slider change in the panel, end to end, without a browser).
"""

from __future__ import annotations

import sys
from pathlib import Path

from timing import median_ms

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ROOT / "gpucluster_lib" / "data" / "scenarios" / "gpt3-175b-1024-a100.yaml"


def timed(fn, repeat: int = 15) -> float:
    """Median [ms] of ``repeat`` runs after a warm-up (benchmarks/timing.py)."""
    return median_ms(fn, repeat)


def main(path: str | Path = DEFAULT) -> dict[str, float]:
    from gpucluster_lib.economics import cost as cost
    from gpucluster_lib.hardware.resolve import catalog_for
    from gpucluster_lib.reliability import core as reliability
    from gpucluster_lib.scenario import load_scenario

    s = load_scenario(path)
    cat = catalog_for(s)
    from gpucluster_lib.design import Design

    days = Design(s, cat).training.training_days  # the failure-free days a Design passes on
    r = reliability.assess(s, cat, training_days_ideal=days)
    out = {
        "reliability.assess": timed(lambda: reliability.assess(s, cat, training_days_ideal=days)),
        "cost.assess (reusing reliability)": timed(lambda: cost.assess(s, cat, reliability_result=r)),
        "scaling_table (6 sizes)": timed(lambda: reliability.scaling_table(s, cat, base=r)),
    }
    from gpucluster_lib.ui import tab_reliability as tab
    from gpucluster_lib.ui.common import AppState

    out["panel compute (fresh design: every stage)"] = timed(lambda: tab.compute(Design(s, cat)))
    rc, c, rows = tab.compute(Design(s, cat))
    from gpucluster_lib.charts.reliability import days_band_spec

    out["chart specs (templates filled)"] = timed(
        lambda: (days_band_spec(rows, rc.gpus), tab.reliability_spec_of(rc), tab.cost_spec_of(c)))
    panel = tab.ReliabilityPanel(AppState.from_scenario(s, cat))
    years = iter(range(1, 10_000))
    out["widget update: years (cost only)"] = timed(lambda: setattr(panel.years, "value", next(years) % 10 + 1), 5)
    vals = iter(range(1, 10_000))
    out["widget update: restart slider (all)"] = timed(lambda: setattr(panel.restart, "value", next(vals) % 100 + 1), 5)
    prices = iter(range(1, 10_000))
    out["widget update: energy price (facility and after)"] = timed(
        lambda: setattr(panel.price, "value", 0.05 + (next(prices) % 50) / 1000), 5)
    for k, v in out.items():
        print(f"{k:45s} {v:8.1f} ms")
    return out


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else DEFAULT)
