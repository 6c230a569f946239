"""Load test of the Voila app on loopback: pages opened and closed in sequence, then many at once.

    python benchmarks/bench_app_load.py [--sequence 100] [--at-once 20] [--gap 0] [--timeout 600]

Starts Voila on 127.0.0.1 with the repository's notebooks/voila.json (preheated pool, culling,
kernel cap, admission queue; the cap is raised to fit ``--at-once``), drives Debian's Chromium
through Playwright and reports, for each phase: pages that rendered (the first tab's widgets
visible), page-to-widgets time (median and worst), the kernels alive, the resident memory of the
server with all its kernels (RSS, from /proc) against the baseline taken with only the preheated
pool, and the resident memory of each open page's own kernel. In the sequence each page is closed once its widgets
show, ``--gap`` seconds before the next visitor comes (0: at once); the at-once pages each get
their own browser context (a visitor of their own: Chromium's six connections per host are per
context). After each phase the script waits until the kernel count is back to the pool size and
reports how long that took after the last page closed.
Exit status 1 when a page did not render, the kernels of closed pages were not gone within two
minutes, or memory did not return to within 15 % of the baseline.
Loopback only; nothing is fetched from the network.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

from gpucluster_lib.ui.server import kernel_pids, rss_mb

ROOT = Path(__file__).resolve().parent.parent
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--disable-dev-shm-usage"]
CONFIG = json.loads((ROOT / "notebooks" / "voila.json").read_text())
POOL = CONFIG["VoilaConfiguration"]["default_pool_size"]
CLOSED_BOUND_S = 120  # kernels of closed pages gone within two minutes


# Stamps, in the page, when the app's tab bar first shows (performance.now(), ms after the navigation
# started): each page's own page-to-widgets time, however many pages the script waits on.
READY_SCRIPT = """
new MutationObserver((_m, obs) => {
  for (const t of document.querySelectorAll('.lm-TabBar-tab')) {
    if (t.textContent.includes('Training') && t.offsetParent !== null) {
      window.__gcReady = performance.now(); obs.disconnect(); return;
    }
  }
}).observe(document, {childList: true, subtree: true});
"""


def kernel_pid(server: int, kernel_id: str) -> int | None:
    """The process of kernel ``kernel_id`` (its connection file, kernel-<id>.json, is on its command line)."""
    for pid in kernel_pids(server):
        try:
            if kernel_id.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                return pid
        except OSError:
            continue
    return None


def wait(pred, timeout: float) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.5)
    return False


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sequence", type=int, default=100, help="pages opened and closed one after the other")
    ap.add_argument("--at-once", type=int, default=20, help="pages open at the same time")
    ap.add_argument("--gap", type=float, default=0.0, help="seconds between closing a page and opening the next")
    ap.add_argument("--timeout", type=float, default=600, help="longest wait for one page [s]")
    ap.add_argument("--pool", type=int, default=POOL, help="preheated kernels (default: notebooks/voila.json)")
    args = ap.parse_args()
    from playwright.sync_api import expect, sync_playwright

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/"
    (ROOT / ".test-artifacts").mkdir(exist_ok=True)
    log = open(ROOT / ".test-artifacts" / "bench_app_load.log", "w")  # noqa: SIM115
    proc = subprocess.Popen([sys.executable, "-m", "voila", "app.ipynb", "--no-browser", f"--port={port}",
                             f"--CappedKernelManager.max_kernels={max(args.at_once, 1) + args.pool + 1}",
                             f"--VoilaConfiguration.default_pool_size={args.pool}"],
                            cwd=ROOT / "notebooks", stdout=log, stderr=subprocess.STDOUT, env=os.environ.copy())
    failed = False
    try:
        count = lambda: len(kernel_pids(proc.pid))  # noqa: E731
        mem = lambda: rss_mb([proc.pid, *kernel_pids(proc.pid)])  # noqa: E731
        if not wait(lambda: count() == args.pool, 300):
            print("the preheated pool did not start")
            return 1
        time.sleep(15)  # the pool kernel finishes running the notebook
        base = mem()
        print(f"baseline (server + {args.pool} preheated kernel(s)): {base:,.0f} MB (server {rss_mb([proc.pid]):,.0f} MB)")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=ARGS)

            def phase(name: str, batches: list[int]) -> None:
                nonlocal failed
                times, rendered, peak_k, peak_mem, per_page = [], 0, 0, 0.0, []
                t_phase = time.perf_counter()
                for n in batches:
                    ctxs = [browser.new_context(viewport={"width": 1200, "height": 800}) for _ in range(n)]
                    pages = [c.new_page() for c in ctxs]
                    for pg in pages:
                        pg.add_init_script(READY_SCRIPT)
                        pg.set_default_timeout(args.timeout * 1000)
                    for pg in pages:  # all navigations start together, none waits for another's answer
                        pg.evaluate("u => { window.location.href = u; }", url)
                    for pg in pages:
                        try:
                            expect(pg.locator(".lm-TabBar-tab", has_text="Training").first).to_be_visible(
                                timeout=args.timeout * 1000)
                            pg.wait_for_function("window.__gcReady !== undefined")
                            rendered += 1
                            times.append(pg.evaluate("window.__gcReady") / 1000)
                        except AssertionError:
                            pass
                    peak_k, peak_mem = max(peak_k, count()), max(peak_mem, mem())
                    for pg in pages:  # the memory of each page's own kernel while the page is open
                        kid = pg.evaluate("JSON.parse(document.getElementById('jupyter-config-data')"
                                          ".textContent).kernelId")
                        pid = kernel_pid(proc.pid, kid) if kid else None
                        if pid is not None:
                            per_page.append(rss_mb([pid]))
                    for pg in pages:
                        pg.close(run_before_unload=True)
                    time.sleep(0.5)  # the page-close beacons leave before their contexts go
                    for c in ctxs:
                        c.close()
                    if args.gap:
                        time.sleep(args.gap)
                total = sum(batches)
                t_closed = time.perf_counter()
                back = wait(lambda: count() <= args.pool, 300)
                gone_s = time.perf_counter() - t_closed
                time.sleep(5)
                after = mem()
                med = statistics.median(times) if times else float("nan")
                worst = max(times) if times else float("nan")
                print(f"{name}: {rendered}/{total} pages rendered in {time.perf_counter() - t_phase:,.0f} s; "
                      f"page to widgets median {med:,.1f} s, worst {worst:,.1f} s; "
                      f"peak {peak_k} kernels, {peak_mem:,.0f} MB; kernel of an open page "
                      f"{statistics.median(per_page) if per_page else float('nan'):,.0f} MB RSS (median of "
                      f"{len(per_page)}); kernels back to the pool "
                      f"{gone_s:,.0f} s after the last page closed; then {count()} kernel(s), "
                      f"{after:,.0f} MB ({after - base:+,.0f} MB against the baseline; server {rss_mb([proc.pid]):,.0f} MB)")
                if rendered < total or not back or gone_s > CLOSED_BOUND_S or after > base * 1.15:
                    failed = True

            if args.sequence:
                phase(f"{args.sequence} pages in sequence", [1] * args.sequence)
            if args.at_once:
                phase(f"{args.at_once} pages at once", [args.at_once])
            browser.close()
        text = (ROOT / ".test-artifacts" / "bench_app_load.log").read_text(errors="replace")
        refused = text.count("'_xsrf' argument missing")
        culled = text.count("Culling 'idle' kernel")
        print(f"page-close shutdowns refused by XSRF: {refused}; kernels culled: {culled}; "
              f"websocket ping timeouts: {text.count('WebSocket ping timeout')}")
        failed |= refused > 0
    finally:
        proc.terminate()
        proc.wait(30)
        log.close()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
