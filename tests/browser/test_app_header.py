"""The app's header in a real browser: the design's key figures follow the scenario, and the
report downloads as HTML and PDF."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser


def _figure(page, label: str):
    return page.locator(".gc-hf", has=page.locator(".gc-hf-label", has_text=label)).locator(".gc-hf-value").first


def test_header_follows_the_scenario_and_downloads_the_report(app_page, artifacts):
    from playwright.sync_api import expect

    page = app_page
    expect(page.locator(".gc-header")).to_be_visible(timeout=120_000)
    for label in ("GPUs", "Racks", "Facility power", "CapEx", "Errors", "Warnings"):
        expect(_figure(page, label)).to_be_visible()
    page.locator(".widget-dropdown", has_text="Example").locator("select").select_option(
        label="Llama 3 70B on 512 H100")
    expect(_figure(page, "GPUs")).to_have_text("512", timeout=120_000)  # 64 DGX H100 x 8 (the scenario)
    expect(_figure(page, "TCO over 5 years")).to_be_visible()  # llama3-70b-512-h100.yaml: costs.years 5
    page.get_by_role("button", name="Download report (HTML/PDF)").click()
    html_link = page.locator("a[download='llama-3-70b-on-512-h100.html']")
    expect(html_link).to_be_visible(timeout=180_000)
    expect(page.locator("a[download='llama-3-70b-on-512-h100.pdf']")).to_be_visible()
    assert html_link.get_attribute("href").startswith("data:text/html;base64,")
    page.screenshot(path=str(artifacts / "app-header.png"), full_page=False)
