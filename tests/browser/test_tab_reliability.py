"""The Reliability & cost tab in a real browser: changing the failure-rate preset updates the figures."""

from __future__ import annotations

import pytest

from .conftest import open_example, open_tab

pytestmark = pytest.mark.browser


def test_reliability_tab_preset_changes_figures(app_page, artifacts):
    from playwright.sync_api import expect

    page = app_page
    open_example(page)  # GPT-3 175B on 128 DGX A100
    open_tab(page, "Reliability & cost")
    summary = page.locator(".gc-kv", has_text="Interruptions per day").first
    # GPT-3 175B on 1,024 A100 with the Llama 3 rates: 24 x 884,736 / (1,024 x 419) = 49.5 h between interruptions
    expect(summary).to_contain_text("one every 49.5 h", timeout=180_000)
    expect(summary).to_contain_text("Goodput")
    expect(page.locator(".vega-embed").last).to_be_visible()
    page.locator(".widget-dropdown", has_text="Failure rates").locator("select").select_option("rsc1")
    # Meta RSC-1: 6.50 per 1000 node-days x 128 nodes = 0.832/day -> 28.8 h, the paper's model value at 1,024 GPUs
    expect(summary).to_contain_text("one every 28.8 h")
    assert "Traceback" not in page.locator("body").inner_text()
    charts = page.locator(".vega-embed")
    expect(charts.last).to_contain_text("Carbon of the training run")
    expect(charts.last).to_contain_text("rent 24/7")  # legend of the TCO chart (independent colour scales)
    expect(charts.nth(charts.count() - 2)).to_contain_text("Days to train")
    page.screenshot(path=str(artifacts / "tab-reliability.png"), full_page=True)
    charts.nth(charts.count() - 2).screenshot(path=str(artifacts / "tab-reliability-chart.png"))
    charts.last.screenshot(path=str(artifacts / "tab-reliability-cost-chart.png"))
