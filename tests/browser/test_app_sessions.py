"""Kernel lifecycle of the Voila app with the real browser: a closed page frees its kernel at
once, a kernel nobody connects to (a bare HTTP GET) is culled, the preheated pool is refilled,
pages arriving together take their kernels through the admission queue, and a page beyond the
kernel cap gets a clear "workbook is full" page instead of a kernel.

The server runs notebooks/voila.json with short culling settings, a pool of 2 and a cap of 3
kernels: the bare GET and the first page take the two preheated kernels, the second page the
refill that follows (it waits while a ready kernel is left, then starts at once), and the
refills after it wait for room. The bare GET comes first so that
its grace runs out while the pages load.
"""

from __future__ import annotations

import re
import time
import urllib.error
import urllib.request

import pytest

from gpucluster_lib.ui.server import kernel_pids

from .conftest import PAGE_TIMEOUT_MS, voila_server

pytestmark = pytest.mark.browser

CULL_IDLE_S = 4
CULL_INTERVAL_S = 2
CONNECT_GRACE_S = 45  # a kernel no page has connected to is kept this long once ready (90 s in voila.json);
# longer than two pages take to load on a busy 2-core machine, so the bare GET's kernel is still there at the cap
MAX_KERNELS = 3  # the bare GET's and two pages'
POOL = 2  # preheated kernels (as in notebooks/voila.json)


def _wait_for(pred, timeout: float, what: str, poll: float = 0.5):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = pred()
        if value:
            return value
        time.sleep(poll)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


@pytest.fixture(scope="module")
def short_lived_server(chromium_path):
    with voila_server(f"--MappingKernelManager.cull_idle_timeout={CULL_IDLE_S}",
                      f"--MappingKernelManager.cull_interval={CULL_INTERVAL_S}",
                      f"--CappedKernelManager.max_kernels={MAX_KERNELS}",
                      f"--CappedKernelManager.connect_grace_s={CONNECT_GRACE_S}",
                      f"--VoilaConfiguration.default_pool_size={POOL}",
                      log_name="voila-sessions.log") as (url, proc):
        yield url, proc


def _get(url: str) -> tuple[int, str, str]:
    """(status, body, Set-Cookie) of a plain GET, as curl would do it."""
    try:
        with urllib.request.urlopen(url, timeout=PAGE_TIMEOUT_MS / 1000) as r:
            return r.status, r.read().decode(), "; ".join(r.headers.get_all("Set-Cookie") or [])
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(), ""


def _kernel_id(html: str) -> str:
    return re.search(r'"kernelId": *"([0-9a-f-]+)"', html).group(1)


def test_pages_free_their_kernels_and_the_cap_refuses_clearly(browser, short_lived_server, artifacts):
    from playwright.sync_api import expect

    url, proc = short_lived_server
    log = artifacts / "voila-sessions.log"
    text = lambda: log.read_text(errors="replace")  # noqa: E731
    count = lambda: len(kernel_pids(proc.pid))  # noqa: E731
    _wait_for(lambda: text().count("has run the notebook") == POOL, 120, "the preheated pool")

    # a bare GET renders the page (the pool's kernel ran the notebook) but never connects
    status, body, cookie = _get(url)
    assert status == 200 and "_xsrf=" in cookie  # the cookie the page-close beacon posts back
    bare = _kernel_id(body)
    # its refill waits (refill_defer_s, 10 s in voila.json): the other pool kernel is ready for
    # the next page, so no kernel starts beside the page that is loading
    time.sleep(3)
    assert count() == POOL

    # two pages at once, each in a context of its own (two visitors): both render, the second
    # with the refill that the bare GET's taking asked for (started at once when the first page
    # took the last ready kernel)
    contexts = [browser.new_context(viewport={"width": 1200, "height": 800}) for _ in range(2)]
    pages = [c.new_page() for c in contexts]
    for page in pages:
        page.evaluate("u => { window.location.href = u; }", url)
    for page in pages:
        expect(page.locator(".lm-TabBar-tab", has_text="Training").first).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    page_kernels = {_kernel_id(p.content()) for p in pages}
    assert len(page_kernels) == len(pages) and bare not in page_kernels
    assert all(f"Kernel {k} has run the notebook" in text() for k in page_kernels)  # all admitted

    # the cap: the bare GET's and the pages' kernels are all there is; the pool's refills wait
    assert count() == MAX_KERNELS
    status, body, _ = _get(url)
    assert status == 503, body[:300]
    assert "The workbook is full" in body and f"all {MAX_KERNELS} sessions are in use" in body
    assert "Traceback" not in body
    assert count() <= MAX_KERNELS

    # closing the pages shuts their kernels down through the beacon, not through the culler
    for page in pages:
        page.close(run_before_unload=True)
    _wait_for(lambda: all(f"Kernel shutdown: {k}" in text() for k in page_kernels), 30,
              "the closed pages' kernels to shut down")
    for c in contexts:
        c.close()
    assert "'_xsrf' argument missing" not in text()
    assert not [k for k in page_kernels if f"({k})" in text()]  # none of them culled

    # the bare GET's kernel: culled once its grace ran out
    _wait_for(lambda: f"({bare})" in text(), CONNECT_GRACE_S + 3 * CULL_INTERVAL_S + 10,
              "the bare GET's kernel to be culled")
    _wait_for(lambda: count() == POOL, 120, "the kernel count to return to the pool size")
