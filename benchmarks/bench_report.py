"""The design document and the app header: how long they take.

    python benchmarks/bench_report.py [--repeat 5]

Measures, per shipped example: the design document as HTML from a computed design
(``document_html``: the charts through vl-convert), its PDF (headless Chromium), and the app
header's refresh after a change (the stages the change invalidates are recomputed, as every
tab would, plus the header's own formatting), p50 and max over ``--repeat`` changes: the
energy price (facility, serving, cost and what follows) and the rack power limit (the rack fit:
network and every stage after it, the training plan search included where the plan is
automatic).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from gpucluster_lib.design import Design
from gpucluster_lib.report.document import document_html
from gpucluster_lib.report.render import report_sections
from gpucluster_lib.resources import example_paths


def _ms(t0: float) -> float:
    return (time.perf_counter() - t0) * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--header-only", action="store_true", help="only the header refresh (no document, no PDF)")
    args = ap.parse_args()
    from gpucluster_lib.ui.common import AppState
    from gpucluster_lib.ui.header import Header, header_html

    print(f"{'example':32} {'html [s]':>9} {'pdf [s]':>8} {'header, energy price [ms]':>26} "
          f"{'header, rack kW [ms]':>19} {'header html only [ms]':>22}")
    for name, path in example_paths().items():
        d = Design.from_yaml(path)
        _ = d.findings  # every stage computed once, outside the timings
        html_s = pdf_s = float("nan")
        if not args.header_only:
            t0 = time.perf_counter()
            page = document_html(d, report_sections(d))
            html_s = _ms(t0) / 1000
        if shutil.which("chromium") and not args.header_only:
            from gpucluster_lib.report.pdf import html_to_pdf

            with tempfile.TemporaryDirectory() as tmp:
                src = Path(tmp) / "r.html"
                src.write_text(page, encoding="utf-8")
                t0 = time.perf_counter()
                html_to_pdf(src)
                pdf_s = _ms(t0) / 1000
        state = AppState.from_design(d)
        Header(state)
        price, nodes, fmt = [], [], []
        base = d.scenario.facility.energy_price_per_kwh
        kw0 = d.scenario.facility.rack_power_limit_kw or 150.0  # vendor racks (NVL72) set none
        for i in range(args.repeat):
            t0 = time.perf_counter()
            state.update(facility__energy_price_per_kwh=base * (1.01 + i / 100))
            price.append(_ms(t0))
            t0 = time.perf_counter()
            state.update(facility__rack_power_limit_kw=kw0 + 5 * (1 + i % 2))
            nodes.append(_ms(t0))
            t0 = time.perf_counter()
            header_html(state.design)
            fmt.append(_ms(t0))
        print(f"{name:32} {html_s:9.2f} {pdf_s:8.2f} {statistics.median(price):12.0f} (max {max(price):5.0f}) "
              f"{statistics.median(nodes):8.0f} (max {max(nodes):5.0f}) {statistics.median(fmt):15.1f}")


if __name__ == "__main__":
    main()
