"""Compute per widget change on each tab, and start-up time and memory of the Voila app with
one browser viewer; optional screenshot.

    python benchmarks/bench_app.py [--changes-only] [--example NAME] [--rounds 3]
        [--screenshot docs/img/app.png] [--tab Training]

Per tab and shipped example (in process, no browser): every panel and the header are built on one
app state, the tab is the one on screen (``AppState.shown``, as the app sets it), and each listed
widget change (and the change back to the example's value) is timed from the widget's new value
to the end of every callback it triggers, the header's refresh included (p50 and p95 over the
changes; the target is under 100 ms); the header's own share is shown beside it. Vega drawing in
the browser is not included.

Measures, on this machine: Voila launch -> HTTP up, page load -> first tab's widgets visible
(cold kernel), the resident memory (RSS) of the Voila server and of its kernel with one viewer,
and a tab switch. Uses Debian's Chromium through Playwright (no browser download).
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def rss_mb(pid: int) -> float:
    """Resident set size of ``pid`` and all its descendants [MB]."""
    total = 0
    pids = [pid]
    while pids:
        p = pids.pop()
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
            children = Path(f"/proc/{p}/task/{p}/children").read_text().split()
            pids.extend(int(c) for c in children)
        except (FileNotFoundError, ProcessLookupError):
            continue
    return total / 1e6


#: (widget attribute, the value to change to from the current one) for each tab: ordinary edits a
#: user makes; each change is followed by one back to the example's own value
CHANGES = {
    "tab_hardware": [("min_memory", lambda v: 80 if v != 80 else 0), ("precision", lambda v: "fp8" if v != "fp8" else "bf16")],
    "tab_power": [("rack_kw", lambda v: v + 5), ("pue", lambda v: round(v + 0.1, 2)), ("nodes", lambda v: v + 12)],
    "tab_training": [("pp", lambda v: v * 2 if v <= 32 else v // 2), ("mb", lambda v: 2 if v != 2 else 1),
                     ("recompute", lambda v: "selective" if v != "selective" else "full")],
    "tab_topology": [("oversub", lambda v: 2.0 if v != 2.0 else 1.0)],
    "tab_inference": [("rps", lambda v: v + 10.0), ("output_tokens", lambda v: v * 2), ("tp", lambda v: 4 if v != 4 else 8)],
    "tab_reliability": [("years", lambda v: v + 1 if v < 10 else v - 1), ("restart", lambda v: v + 10),
                        ("price", lambda v: round(v + 0.02, 3))],
}
PANELS = {"tab_hardware": "HardwarePanel", "tab_power": "PowerPanel", "tab_training": "TrainingPanel",
          "tab_topology": "TopologyPanel", "tab_inference": "InferencePanel", "tab_reliability": "ReliabilityPanel"}


def _p50_p95(times: list[float]) -> tuple[float, float]:
    import statistics

    times = sorted(times)
    p95 = times[min(len(times) - 1, int(round(0.95 * (len(times) - 1))))]
    return statistics.median(times) * 1e3, p95 * 1e3


def tab_changes(example: str = "gpt3-175b-1024-a100", rounds: int = 3) -> dict[str, tuple[float, float, float, float]]:
    """Per tab of one example: p50 and p95 [ms] of one widget change with the tab on screen and
    the header above it (as in the app), and p50 and p95 of the header's own refresh in them."""
    import importlib

    from gpucluster_lib.resources import example_paths
    from gpucluster_lib.ui import header as header_mod
    from gpucluster_lib.ui.common import AppState

    state = AppState.from_path(example_paths()[example])
    header_times: list[float] = []
    refresh = header_mod.Header.refresh

    def timed_refresh(self):
        t = time.perf_counter()
        refresh(self)
        header_times.append(time.perf_counter() - t)

    header = header_mod.Header(state)
    header.refresh = timed_refresh.__get__(header)  # the observer calls self.refresh()
    panels = {}
    for name, cls in PANELS.items():
        mod = importlib.import_module(f"gpucluster_lib.ui.{name}")
        state.shown = mod.TITLE
        panels[name] = (mod.TITLE, getattr(mod, cls)(state))
    out = {}
    for name, changes in CHANGES.items():
        title, panel = panels[name]
        state.shown = title  # the user opened this tab: it catches up with the design first
        times, header_times[:] = [], []
        for _ in range(rounds):
            for attr, other in changes:
                w = getattr(panel, attr)
                start = w.value
                for v in (other(start), start):
                    t = time.perf_counter()
                    w.value = v
                    times.append(time.perf_counter() - t)
        out[title] = (*_p50_p95(times), *(_p50_p95(header_times) if header_times else (0.0, 0.0)))
        msg = getattr(panel, "msg", None)
        if msg is not None and msg.value and "gc-error" in msg.value:
            print(f"  note: {example}, {title} shows an error after its changes: {msg.value[:120]}")
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--screenshot", type=Path)
    ap.add_argument("--tab", default="Training")
    ap.add_argument("--changes-only", action="store_true", help="only the per-tab compute, no browser")
    ap.add_argument("--example", action="append", help="example(s) to measure (default: every shipped one)")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    from gpucluster_lib.resources import example_paths

    print("compute of one widget change, the tab on screen, header included (target: p95 under 100 ms)")
    print(f"  {'example':28s} {'tab':20s} {'p50 [ms]':>9s} {'p95 [ms]':>9s}   {'header p50':>10s} {'p95 [ms]':>9s}")
    for example in args.example or list(example_paths()):
        for title, (p50, p95, h50, h95) in tab_changes(example, args.rounds).items():
            print(f"  {example:28s} {title:20s} {p50:9.1f} {p95:9.1f}   {h50:10.1f} {h95:9.1f}")
    if args.changes_only:
        return 0
    from playwright.sync_api import expect, sync_playwright

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "voila", "app.ipynb", "--no-browser", f"--port={port}",
                             "--Voila.ip=127.0.0.1", "--VoilaExecutor.timeout=300"],
                            cwd=ROOT / "notebooks", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=os.environ.copy())
    try:
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        up = time.perf_counter() - t0
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 1100})
            t1 = time.perf_counter()
            page.goto(f"http://127.0.0.1:{port}/", timeout=180_000)
            expect(page.locator("text=/Showing \\d+ accelerators/").first).to_be_visible(timeout=180_000)
            loaded = time.perf_counter() - t1
            t2 = time.perf_counter()
            page.locator(".lm-TabBar-tab", has_text=args.tab).first.click()
            expect(page.locator(".vega-embed").nth(1)).to_be_visible(timeout=120_000)
            tab = time.perf_counter() - t2
            time.sleep(1)
            mem = rss_mb(proc.pid)
            if args.screenshot:
                args.screenshot.parent.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(args.screenshot), full_page=False)
            browser.close()
        print(f"voila launch -> HTTP up:              {up:6.1f} s")
        print(f"page load -> first tab's widgets:     {loaded:6.1f} s (cold kernel)")
        print(f"switch to the {args.tab} tab (build + draw): {tab:6.1f} s")
        print(f"RSS, voila server + kernel, 1 viewer: {mem:6.0f} MB")
    finally:
        proc.terminate()
        proc.wait(15)
    return 0


if __name__ == "__main__":
    sys.exit(main())
