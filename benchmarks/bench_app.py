"""Start-up time and memory of the Voila app with one browser viewer; optional screenshot.

    python benchmarks/bench_app.py [--screenshot docs/img/app.png] [--tab Training]

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


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--screenshot", type=Path)
    ap.add_argument("--tab", default="Training")
    args = ap.parse_args()
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
