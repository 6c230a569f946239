"""Kernel lifecycle of the Voila app with the real browser: a closed page frees its kernel at
once, a kernel nobody connects to (a bare HTTP GET) is culled, the preheated pool is refilled,
and a page beyond the kernel cap gets a clear "workbook is full" page instead of a kernel.

The server runs notebooks/voila.json with short culling settings and a cap of 3 kernels
(the pool's one included), so the whole cycle takes about a minute.
"""

from __future__ import annotations

import re
import time
import urllib.error
import urllib.request

import pytest

from .conftest import PAGE_TIMEOUT_MS, kernel_pids, voila_server

pytestmark = pytest.mark.browser

CULL_IDLE_S = 6
CULL_INTERVAL_S = 2
CONNECT_GRACE_S = 30  # a page still loading keeps its kernel this long (90 s in notebooks/voila.json)
MAX_KERNELS = 3
POOL = 1  # notebooks/voila.json: VoilaConfiguration.default_pool_size


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
    count = lambda: len(kernel_pids(proc.pid))  # noqa: E731
    _wait_for(lambda: count() == POOL, 120, "the preheated pool")

    # two pages at once: both render (one kernel from the pool, one started while they load)
    context = browser.new_context(viewport={"width": 1200, "height": 800})
    pages = [context.new_page() for _ in range(MAX_KERNELS - POOL)]
    for page in pages:
        page.goto(url, timeout=PAGE_TIMEOUT_MS, wait_until="commit")
    for page in pages:
        expect(page.locator(".lm-TabBar-tab", has_text="Training").first).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    page_kernels = {_kernel_id(p.content()) for p in pages}
    assert len(page_kernels) == len(pages)
    # the page handler set the _xsrf cookie that the page-close beacon posts back
    assert any(c["name"] == "_xsrf" for c in context.cookies())

    # the cap: the pages plus the pool's refill hold every kernel; the next visitor is told so
    _wait_for(lambda: count() == MAX_KERNELS, 60, "the pool's refill up to the cap")
    status, body, cookie = _get(url)
    bare = None
    if status == 200:  # the refilled pool kernel was ready and went to this bare GET
        bare = _kernel_id(body)
        assert "_xsrf=" in cookie
        status, body, _ = _get(url)
    assert status == 503, body[:300]
    assert "The workbook is full" in body and f"all {MAX_KERNELS} sessions are in use" in body
    assert "Traceback" not in body
    assert count() <= MAX_KERNELS

    # closing the pages shuts their kernels down through the beacon, not through the culler
    for page in pages:
        page.close(run_before_unload=True)
    context.close()
    _wait_for(lambda: all(f"Kernel shutdown: {k}" in log.read_text(errors="replace") for k in page_kernels),
              30, "the closed pages' kernels to shut down")
    text = log.read_text(errors="replace")
    assert "'_xsrf' argument missing" not in text
    assert not [k for k in page_kernels if f"({k})" in text]  # none of them culled

    # a bare GET renders the page (the kernel runs the notebook) but never connects: culled
    if bare is None:
        _wait_for(lambda: count() == POOL, 120, "the pool's refill")
        status, body, cookie = _get(url)
        assert status == 200 and "_xsrf=" in cookie
        bare = _kernel_id(body)
    _wait_for(lambda: f"({bare})" in log.read_text(errors="replace"),
              CONNECT_GRACE_S + 3 * CULL_INTERVAL_S + 10, "the bare GET's kernel to be culled")
    _wait_for(lambda: count() == POOL, 120, "the kernel count to return to the pool size")
