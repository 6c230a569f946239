"""The app in a real browser: loads offline, the hardware filter changes the table and the chart."""

from __future__ import annotations

import pytest

from .conftest import open_tab

pytestmark = pytest.mark.browser


def test_hardware_filter_changes_table_and_chart(app_page, artifacts):
    from playwright.sync_api import expect

    page = app_page
    open_tab(page, "Hardware")
    count = page.locator("text=/Showing \\d+ accelerators/").first
    expect(count).to_be_visible(timeout=120_000)
    before = count.inner_text()
    # Ampere (A100) has BF16 but no FP8 tensor cores (A100 datasheet), so switching to FP8 drops it.
    table = page.locator("table.gc-table").first
    expect(table).to_contain_text("a100-sxm4-80gb")
    chart = page.locator(".vega-embed").first
    expect(chart).to_contain_text("BF16")
    page.locator(".widget-dropdown", has_text="Precision").locator("select").select_option("fp8")
    expect(count).not_to_have_text(before)
    expect(page.locator("body")).to_contain_text("with a dense FP8 figure")
    expect(table).not_to_contain_text("a100-sxm4-80gb")
    expect(table).to_contain_text("h100-sxm5-80gb")
    expect(chart).to_contain_text("FP8")  # the chart's title and axis follow the precision
    page.screenshot(path=str(artifacts / "app-hardware-fp8.png"), full_page=True)


def test_scenario_bar_and_download_link(app_page):
    from playwright.sync_api import expect

    page = app_page
    expect(page.get_by_text("Download scenario YAML")).to_be_visible()
    expect(page.locator("body")).to_contain_text("Scenario:")
    assert "Traceback" not in page.locator("body").inner_text()


def test_page_requests_nothing_outside_the_server(browser, voila_url):
    """The workbook runs offline: every request of a page load goes to the Voila server itself.
    Voila's lab template links two Font Awesome stylesheets on cdn.jsdelivr.net
    (share/jupyter/voila/templates/lab/index.html.j2, voila 0.5.13); the app's template
    (gpucluster_lib/ui/jupyter/voila/templates/gpucluster, selected in notebooks/voila.json) leaves them out."""
    from urllib.parse import urlsplit

    from playwright.sync_api import expect

    from .conftest import PAGE_TIMEOUT_MS

    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    hosts: list[str] = []  # the host of every network request (data: and blob: URLs are in the page)
    page.on("request", lambda request: hosts.append(urlsplit(request.url).hostname or "")
            if urlsplit(request.url).scheme in ("http", "https", "ws", "wss") else None)
    try:
        page.goto(voila_url, timeout=PAGE_TIMEOUT_MS)
        expect(page.locator(".lm-TabBar-tab").first).to_be_visible(timeout=PAGE_TIMEOUT_MS)
        expect(page.locator("body")).to_contain_text("Scenario:")
        html = page.content()
    finally:
        context.close()
    outside = sorted({h for h in hosts if h not in ("127.0.0.1", "localhost")})
    assert hosts and not outside, f"requests outside the server: {outside}"
    assert "cdn.jsdelivr.net" not in html
