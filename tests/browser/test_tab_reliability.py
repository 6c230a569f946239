"""The Reliability & cost tab in a real browser: changing the failure-rate preset updates the
figures; a plan that does not fit has no days-to-train band (hidden, with a message)."""

from __future__ import annotations

import re

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
    band = charts.filter(has_text="Days to train: P10-P90 band")
    expect(band).to_be_visible()
    page.screenshot(path=str(artifacts / "tab-reliability.png"), full_page=True)
    band.screenshot(path=str(artifacts / "tab-reliability-chart.png"))
    charts.last.screenshot(path=str(artifacts / "tab-reliability-cost-chart.png"))


def _type(page, label: str, value: str) -> None:
    """Type into the input labelled exactly ``label`` on the shown tab, then Enter."""
    box = page.locator(".widget-inline-hbox:visible").filter(
        has=page.locator("label", has_text=re.compile(f"^{re.escape(label)}$"))).locator("input").first
    box.fill(value)
    box.press("Enter")


def test_a_plan_that_does_not_fit_has_no_days_band(app_page, artifacts):
    from playwright.sync_api import expect

    page = app_page
    open_example(page)  # GPT-3 175B on 128 DGX A100, TP 8 x PP 8 x DP 16
    open_tab(page, "Training")
    expect(page.locator(".gc-kv", has_text="Step time").filter(visible=True).first).to_be_visible(timeout=180_000)
    # TP 8 x PP 1 x DP 128 without ZeRO: 16 B x 175e9 / 8 = 350 GB per GPU, over 80 GB (ZeRO Sec. 3)
    _type(page, "Virtual stages", "1")
    _type(page, "Pipeline (PP)", "1")
    expect(page.locator(".gc-kv", has_text="PP1").filter(visible=True).first).to_be_visible(timeout=60_000)
    open_tab(page, "Reliability & cost")
    note = page.locator(".gc-info", has_text="No days-to-train band").filter(visible=True)
    expect(note).to_contain_text("the training plan does not fit in GPU memory", timeout=120_000)
    expect(page.locator(".vega-embed", has_text="Days to train: P10-P90 band").filter(visible=True)).to_have_count(0)
    summary = page.locator(".gc-kv", has_text="Interruptions per day").filter(visible=True).first
    expect(summary).to_contain_text("one every 49.5 h")  # the failure rates do not need the plan
    expect(summary).to_contain_text("the training plan does not fit in memory")
    expect(page.locator(".vega-embed", has_text="Carbon of the").filter(visible=True)).to_have_count(1)
    page.screenshot(path=str(artifacts / "tab-reliability-no-band.png"), full_page=True)
    assert "Traceback" not in page.locator("body").inner_text()
