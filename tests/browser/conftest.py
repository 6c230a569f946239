"""Voila + Debian Chromium (through Playwright) fixtures for the app's browser tests.

No browser download: Playwright drives /usr/bin/chromium. Without Chromium, or without
Playwright, the tests FAIL with the command that installs it, on CI and locally alike (a test
that needs an absent tool never skips).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage"]
PAGE_TIMEOUT_MS = 180_000  # a cold kernel on 2 busy cores


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


CHROMIUM_MISSING = "chromium is missing: install it with `sudo apt-get install -y chromium` (Debian/Ubuntu)"
PLAYWRIGHT_MISSING = "playwright is missing: install it with `pip install -e '.[test]'` (never `playwright install`)"


def need_chromium() -> str:
    """Debian's Chromium, or a test failure that says how to install it."""
    path = _chromium()
    if path is None:
        pytest.fail(CHROMIUM_MISSING)
    return path


@pytest.fixture(scope="session")
def chromium_path() -> str:
    return need_chromium()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def voila_server(*extra: str, log_name: str = "voila.log") -> Iterator[tuple[str, subprocess.Popen]]:
    """Voila serving notebooks/app.ipynb on 127.0.0.1 with the repository's notebooks/voila.json
    (kernel culling, preheated pool, kernel cap); ``extra`` command-line settings override it.
    Yields (url, process); the process is stopped on exit."""
    port = _free_port()
    (ROOT / ".test-artifacts").mkdir(exist_ok=True)
    log = open(ROOT / ".test-artifacts" / log_name, "w")  # noqa: SIM115
    proc = subprocess.Popen(
        [sys.executable, "-m", "voila", str(ROOT / "notebooks" / "app.ipynb"), "--no-browser",
         f"--port={port}", "--Voila.ip=127.0.0.1", "--VoilaExecutor.timeout=300",
         "--Voila.root_dir=" + str(ROOT / "notebooks"), *extra],
        cwd=ROOT / "notebooks", stdout=log, stderr=subprocess.STDOUT, env=os.environ.copy(),
    )
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"voila exited with {proc.returncode}; see .test-artifacts/{log_name}")
            try:  # any TCP answer means the server is up (GET / would take a kernel)
                with socket.create_connection(("127.0.0.1", port), timeout=2):
                    break
            except OSError:
                time.sleep(0.5)
        else:
            raise RuntimeError("voila did not start within 120 s")
        yield url, proc
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


TEST_POOL = 2  # preheated kernels of the shared server: each test's page finds one ready


@pytest.fixture(scope="session")
def voila_url(chromium_path: str) -> Iterator[str]:
    """Voila serving notebooks/app.ipynb on 127.0.0.1 for the whole session. Its pool holds two
    kernels (as notebooks/voila.json does): a test runs for less time than a refill takes on a
    busy machine, so with one the next test's page waited for the refill."""
    with voila_server(f"--VoilaConfiguration.default_pool_size={TEST_POOL}") as (url, _proc):
        yield url


@pytest.fixture(scope="session")
def browser(chromium_path: str):
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail(PLAYWRIGHT_MISSING)

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


@pytest.fixture
def app_page(browser, voila_url: str):
    """A fresh page with the app loaded (its first tab built)."""
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(60_000)
    page.goto(voila_url, timeout=PAGE_TIMEOUT_MS)
    expect(page.locator(".lm-TabBar-tab").first).to_be_visible(timeout=PAGE_TIMEOUT_MS)
    yield page
    context.close()


def open_tab(page, title: str):
    """Click the app tab labelled ``title`` and return the page."""
    page.locator(".lm-TabBar-tab", has_text=title).first.click()
    return page


def visible_panel(page):
    """The currently shown tab panel (ipywidgets 8 Tab)."""
    return page.locator(".jupyter-widget-Collapse-contents, .lm-TabPanel-stackedPanel:not(.lm-mod-hidden)").last


GPT3_EXAMPLE = "GPT-3 175B on 1024 A100"


def open_example(page, label: str = GPT3_EXAMPLE):
    """Load the shipped example ``label`` from the scenario bar and wait until the title shows it
    (the app opens on the first example by file name, which is not the one most tests are about)."""
    from playwright.sync_api import expect

    page.locator(".widget-dropdown", has_text="Example").locator("select").select_option(label=label)
    expect(page.locator("p", has_text="Scenario:").first).to_contain_text(label.split(" on ")[0], timeout=120_000)
    return page
