"""Load test of the Voila app on loopback: pages opened and closed in sequence, then many at once.

    python benchmarks/bench_app_load.py [--preheated 10] [--tabs] [--sequence 100] [--at-once 20]
                                        [--gap 0] [--timeout 600]

Starts Voila on 127.0.0.1 with the repository's notebooks/voila.json (preheated pool, culling,
kernel cap, admission queue; the cap is raised to fit ``--at-once``), drives Debian's Chromium
through Playwright and reports, for each phase: pages that rendered (the first tab's widgets
visible), page-to-widgets time (median and worst), the kernels alive, the resident memory of the
server with all its kernels (RSS, from /proc) against the baseline taken with only the preheated
pool, and the resident memory of each open page's own kernel. "Widgets visible" is the first
tab's own text on screen (``FIRST_TAB_TEXT``), stamped in the page itself (``performance.now()``,
from the start of the navigation), so each page's time is its own however many pages the
script waits on.

``--preheated N``: N visitors one after the other, each arriving only once the pool is full
and its kernels have run the notebook (Voila's log says so), the time a visitor of a workbook
that is not being stormed waits. Each page's time is split into: the HTML answer, the scripts
before the kernel's websocket opens, the widget state (the largest message on the socket: its
bytes, and the count of widget models in it), and the render up to the first tab's text.
``--tabs``: in one page, the time from a click on each other tab to its widgets replacing the
"Preparing the <name> tab…" note (those tabs are built on their first selection).
In the sequence each page is closed once its widgets
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


FIRST_TAB_TEXT = r"Showing \d+ accelerators"  # the Hardware tab's count line, the first tab (ORDER 10)
SHOWN_TAB = ".widget-tab-contents > .lm-Widget:not(.lm-mod-hidden)"  # the shown tab's panel (ipywidgets 8)

# Stamps, in the page (performance.now(): ms after the navigation started), when the first tab's
# text shows (window.__gcReady), when the kernel's websocket opened, and the largest message on
# it (the widget state the page asks for once connected: its size, its arrival, its model count).
READY_SCRIPT = """
(() => {
  const T = window.__gc = {wsOpen: null, stateBytes: 0, stateAt: null, stateModels: null, messages: 0};
  const NativeWS = window.WebSocket;
  window.WebSocket = function (...args) {
    const ws = new NativeWS(...args);
    ws.addEventListener('open', () => { if (T.wsOpen === null) T.wsOpen = performance.now(); });
    ws.addEventListener('message', (e) => {
      T.messages++;
      const n = typeof e.data === 'string' ? e.data.length : (e.data.byteLength || e.data.size || 0);
      if (n > T.stateBytes) {
        T.stateBytes = n; T.stateAt = performance.now();
        try {  // Jupyter's websocket message: JSON text, or binary (v1 protocol: offsets, then parts)
          let content;
          if (typeof e.data === 'string') content = JSON.parse(e.data).content;
          else {
            const dv = new DataView(e.data), at = (i) => Number(dv.getBigUint64(8 * (i + 1), true));
            content = JSON.parse(new TextDecoder().decode(e.data.slice(at(4), at(5))));
          }
          const st = content.data && content.data.states;
          if (st) T.stateModels = Object.keys(st).length;
        } catch (_err) { /* not the state reply */ }
      }
    });
    return ws;
  };
  window.WebSocket.prototype = NativeWS.prototype;
  Object.assign(window.WebSocket, NativeWS);
  const re = new RegExp(FIRST_TAB_TEXT);
  const poll = setInterval(() => {  // textContent: no layout forced, unlike innerText
    const shown = document.querySelector(SHOWN_TAB);
    if (shown && re.test(shown.textContent) && shown.offsetParent !== null) {
      window.__gcReady = performance.now(); clearInterval(poll);
    }
  }, 10);
})();
""".replace("FIRST_TAB_TEXT", json.dumps(FIRST_TAB_TEXT)).replace("SHOWN_TAB", json.dumps(SHOWN_TAB))


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


# each part of a page's time [ms from the navigation's start], read once its first tab shows
PARTS_SCRIPT = """() => {
  const nav = performance.getEntriesByType('navigation')[0], T = window.__gc;
  return {html: nav.responseEnd, wsOpen: T.wsOpen, stateAt: T.stateAt, stateBytes: T.stateBytes,
          stateModels: T.stateModels, ready: window.__gcReady,
          scripts: performance.getEntriesByType('resource').filter(r => r.initiatorType === 'script').length};
}"""


def report_parts(parts: list[dict]) -> None:
    """Each page's time, split, and the median and worst of each part [s]."""
    rows = []
    for i, t in enumerate(parts):
        row = {"HTML": t["html"], "scripts to socket open": t["wsOpen"] - t["html"],
               "socket open to widget state": t["stateAt"] - t["wsOpen"],
               "widget state to first tab shown": t["ready"] - t["stateAt"], "total": t["ready"]}
        rows.append(row)
        print(f"  page {i + 1}: " + ", ".join(f"{k} {v / 1000:.2f} s" for k, v in row.items())
              + f"; widget state {t['stateBytes'] / 1e6:.2f} MB, {t['stateModels']} models; {t['scripts']} scripts")
    for k in rows[0]:
        vals = [r[k] / 1000 for r in rows]
        print(f"  {k}: median {statistics.median(vals):.2f} s, worst {max(vals):.2f} s")


def tab_selection(browser, url: str, timeout: float, server: int) -> bool:
    """Open one page, then each other tab in turn: the time from the click to its widgets in place
    of the "Preparing the <name> tab…" note. False when a tab shows a traceback or never builds."""
    from playwright.sync_api import expect

    ctx = browser.new_context(viewport={"width": 1200, "height": 800})
    pg = ctx.new_page()
    pg.set_default_timeout(timeout * 1000)
    pg.goto(url)
    expect(pg.locator(f"text=/{FIRST_TAB_TEXT}/").first).to_be_visible()
    ok = True
    titles = [t.strip() for t in pg.locator(".lm-TabBar-tab").all_inner_texts()]
    shown = SHOWN_TAB
    for title in titles[1:]:
        t0 = pg.evaluate("performance.now()")
        pg.locator(".lm-TabBar-tab", has_text=title).first.click()
        pg.wait_for_function(f"""() => {{ const p = document.querySelector('{shown}');
            return p && !p.textContent.includes('Preparing the') && p.querySelector('.jupyter-widgets') !== null; }}""")
        dt = pg.evaluate("performance.now()") - t0
        text = pg.locator(shown).first.inner_text()
        bad = "Traceback" in text
        ok &= not bad
        print(f"  first selection of {title}: {dt / 1000:.2f} s{' TRACEBACK' if bad else ''}")
    kid = pg.evaluate("JSON.parse(document.getElementById('jupyter-config-data').textContent).kernelId")
    pid = kernel_pid(server, kid) if kid else None
    if pid is not None:
        print(f"  kernel of that page with every tab built: {rss_mb([pid]):,.0f} MB RSS")
    pg.close(run_before_unload=True)  # the page-close beacon frees its kernel
    time.sleep(0.5)
    ctx.close()
    return ok


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--preheated", type=int, default=0,
                    help="visitors one after the other, each once the pool's kernels have run the notebook")
    ap.add_argument("--tabs", action="store_true", help="time each other tab's first selection in one page")
    ap.add_argument("--sequence", type=int, default=100, help="pages opened and closed one after the other")
    ap.add_argument("--at-once", type=int, default=20, help="pages open at the same time")
    ap.add_argument("--gap", type=float, default=0.0, help="seconds between closing a page and opening the next")
    ap.add_argument("--timeout", type=float, default=600, help="longest wait for one page [s]")
    ap.add_argument("--pool", type=int, default=POOL, help="preheated kernels (default: notebooks/voila.json)")
    ap.add_argument("--voila-arg", action="append", default=[],
                    help="one more Voila setting, e.g. --voila-arg=--CappedKernelManager.preheat_niceness=0")
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
                             f"--VoilaConfiguration.default_pool_size={args.pool}", *args.voila_arg],
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
        log_text = lambda: (ROOT / ".test-artifacts" / "bench_app_load.log").read_text(errors="replace")  # noqa: E731
        visited = 0  # pages opened so far: each took a kernel that had run (or will run) the notebook
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=ARGS)

            def phase(name: str, batches: list[int], preheated: bool = False) -> None:
                nonlocal failed, visited
                times, rendered, peak_k, peak_mem, per_page, parts = [], 0, 0, 0.0, [], []
                t_phase = time.perf_counter()
                for n in batches:
                    if preheated:  # the pool is full and every kernel in it has run the notebook
                        ready_count = visited + args.pool
                        wait(lambda: log_text().count("has run the notebook") >= ready_count, args.timeout)  # noqa: B023
                        time.sleep(1)
                    visited += n
                    ctxs = [browser.new_context(viewport={"width": 1200, "height": 800}) for _ in range(n)]
                    pages = [c.new_page() for c in ctxs]
                    for pg in pages:
                        pg.add_init_script(READY_SCRIPT)
                        pg.set_default_timeout(args.timeout * 1000)
                    for pg in pages:  # all navigations start together, none waits for another's answer
                        pg.evaluate("u => { window.location.href = u; }", url)
                    for pg in pages:
                        try:
                            expect(pg.locator(f"text=/{FIRST_TAB_TEXT}/").first).to_be_visible(
                                timeout=args.timeout * 1000)
                            pg.wait_for_function("window.__gcReady !== undefined")
                            rendered += 1
                            times.append(pg.evaluate("window.__gcReady") / 1000)
                            if preheated:
                                parts.append(pg.evaluate(PARTS_SCRIPT))
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
                if parts:
                    report_parts(parts)
                if rendered < total or not back or gone_s > CLOSED_BOUND_S or after > base * 1.15:
                    failed = True

            if args.preheated:
                phase(f"{args.preheated} pages, each with a preheated kernel ready", [1] * args.preheated,
                      preheated=True)
            if args.tabs:
                failed |= not tab_selection(browser, url, args.timeout, proc.pid)
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
