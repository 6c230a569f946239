"""Load test of the Voila app on loopback: pages opened and closed in sequence, then many at once.

    python benchmarks/bench_app_load.py [--sequence 100] [--at-once 20] [--timeout 600]

Starts Voila on 127.0.0.1 with the repository's notebooks/voila.json (preheated pool, culling,
kernel cap; the cap is raised to fit ``--at-once``), drives Debian's Chromium through Playwright
and reports, for each phase: pages that rendered (the first tab's widgets visible), page-to-widgets
time (median and worst), the kernels alive, and the resident memory of the server with all its
kernels (RSS, from /proc) against the baseline taken with only the preheated pool. After each
phase the pages are closed and the script waits until the kernel count is back to the pool size.
Exit status 1 when a page did not render or memory did not return to within 15 % of the baseline.
Loopback only; nothing is fetched from the network.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--disable-dev-shm-usage"]
POOL = 1  # notebooks/voila.json: VoilaConfiguration.default_pool_size


def kernels(server: int) -> list[int]:
    out = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            ppid = int((p / "stat").read_text().rsplit(")", 1)[1].split()[1])
            cmd = (p / "cmdline").read_bytes()
        except (OSError, IndexError, ValueError):
            continue
        if ppid == server and b"ipykernel" in cmd:
            out.append(int(p.name))
    return out


def rss_mb(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            continue
    return total / 1e6


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
    ap.add_argument("--timeout", type=float, default=600, help="longest wait for one page [s]")
    args = ap.parse_args()
    from playwright.sync_api import expect, sync_playwright

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/"
    (ROOT / ".test-artifacts").mkdir(exist_ok=True)
    log = open(ROOT / ".test-artifacts" / "bench_app_load.log", "w")  # noqa: SIM115
    proc = subprocess.Popen([sys.executable, "-m", "voila", "app.ipynb", "--no-browser", f"--port={port}",
                             f"--CappedKernelManager.max_kernels={args.at_once + POOL + 1}"],
                            cwd=ROOT / "notebooks", stdout=log, stderr=subprocess.STDOUT, env=os.environ.copy())
    failed = False
    try:
        count = lambda: len(kernels(proc.pid))  # noqa: E731
        mem = lambda: rss_mb([proc.pid, *kernels(proc.pid)])  # noqa: E731
        if not wait(lambda: count() == POOL, 300):
            print("the preheated pool did not start")
            return 1
        time.sleep(15)  # the pool kernel finishes running the notebook
        base = mem()
        print(f"baseline (server + {POOL} preheated kernel): {base:,.0f} MB")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=ARGS)

            def phase(name: str, batches: list[int]) -> None:
                nonlocal failed
                times, rendered, peak_k, peak_mem = [], 0, 0, 0.0
                t_phase = time.perf_counter()
                for n in batches:
                    ctx = browser.new_context(viewport={"width": 1200, "height": 800})
                    pages = [ctx.new_page() for _ in range(n)]
                    t0 = time.perf_counter()
                    for pg in pages:
                        pg.goto(url, timeout=args.timeout * 1000, wait_until="commit")
                    for pg in pages:
                        try:
                            expect(pg.locator(".lm-TabBar-tab", has_text="Training").first).to_be_visible(
                                timeout=args.timeout * 1000)
                            rendered += 1
                            times.append(time.perf_counter() - t0)
                        except AssertionError:
                            pass
                    peak_k, peak_mem = max(peak_k, count()), max(peak_mem, mem())
                    for pg in pages:
                        pg.close(run_before_unload=True)
                    ctx.close()
                total = sum(batches)
                back = wait(lambda: count() <= POOL, 300)
                time.sleep(5)
                after = mem()
                print(f"{name}: {rendered}/{total} pages rendered in {time.perf_counter() - t_phase:,.0f} s; "
                      f"page to widgets median {statistics.median(times):,.1f} s, worst {max(times):,.1f} s; "
                      f"peak {peak_k} kernels, {peak_mem:,.0f} MB; after closing: {count()} kernel(s), "
                      f"{after:,.0f} MB ({after - base:+,.0f} MB against the baseline)")
                if rendered < total or not back or after > base * 1.15:
                    failed = True

            phase(f"{args.sequence} pages in sequence", [1] * args.sequence)
            phase(f"{args.at_once} pages at once", [args.at_once])
            browser.close()
        text = (ROOT / ".test-artifacts" / "bench_app_load.log").read_text(errors="replace")
        refused = text.count("'_xsrf' argument missing")
        print(f"page-close shutdowns refused by XSRF: {refused}; kernels culled: {text.count('Culling')}")
        failed |= refused > 0
    finally:
        proc.terminate()
        proc.wait(30)
        log.close()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
