"""The Explore tab in a real browser: run a small sweep, see the front, load a point as the scenario."""

from __future__ import annotations

import pytest

from .conftest import open_tab

pytestmark = pytest.mark.browser


def _sweep_gpt3_over_64_and_128_nodes(page) -> None:
    """Load the GPT-3 example, open Explore and run a one-axis sweep of the node count over 64 and 128."""
    from playwright.sync_api import expect

    example = page.locator(".widget-dropdown", has_text="Example").locator("select")
    example.select_option(label="GPT-3 175B on 1024 A100")
    expect(page.locator("p", has_text="Scenario:").first).to_contain_text("GPT-3 175B", timeout=120_000)
    open_tab(page, "Explore")
    values = page.locator(".widget-text", has_text="Values")
    expect(values.first).to_be_visible(timeout=180_000)
    values.first.locator("input").fill("64, 128")
    page.locator(".widget-dropdown", has_text="Second axis").locator("select").select_option(label="(none)")
    page.get_by_role("button", name="Run the sweep").click()


def test_explore_tab_runs_a_sweep_and_loads_a_point(app_page, artifacts):
    from playwright.sync_api import expect

    page = app_page
    _sweep_gpt3_over_64_and_128_nodes(page)
    # GPT-3 175B on 64 and 128 DGX A100: the smaller costs less and draws less, so it alone is on the front
    summary = page.locator(".widget-html", has_text="designs").filter(has_text="on the front").first
    expect(summary).to_contain_text("2 designs", timeout=180_000)
    expect(summary).to_contain_text("1 on the front")
    expect(page.locator(".vega-embed", has_text="Pareto front")).to_be_visible()
    expect(page.locator(".gc-table").last).to_contain_text("64")
    pick = page.locator(".widget-dropdown", has_text="Design").locator("select")
    expect(pick).to_contain_text("Point 0: Nodes 64")
    page.get_by_role("button", name="Load as the current scenario").click()
    # point 0 is 64 DGX A100 = 512 GPUs; the title names an edited design by its GPUs
    expect(page.locator("p", has_text="Scenario:").first).to_contain_text("GPT-3 175B on 512", timeout=60_000)
    assert "Traceback" not in page.locator("body").inner_text()
    page.screenshot(path=str(artifacts / "tab-explore.png"), full_page=True)


def test_a_click_on_the_front_loads_the_point_after_the_figures_change(app_page):
    from playwright.sync_api import expect

    page = app_page
    _sweep_gpt3_over_64_and_128_nodes(page)
    expect(page.locator(".vega-embed", has_text="Pareto front")).to_be_visible(timeout=180_000)
    # another figure across: the chart on screen takes the new spec (its selection set up once)
    page.locator(".widget-dropdown", has_text="Front: across").locator("select").select_option(index=2)
    chart = page.locator(".vega-embed", has_text="Pareto front")
    expect(chart).not_to_contain_text("CapEx (USD), lower is better", timeout=60_000)
    chart.locator(".mark-symbol.role-mark path").first.click()  # the first point drawn: 64 DGX A100 (point 0)
    expect(page.locator(".gc-info", has_text="Loaded point")).to_be_visible(timeout=60_000)
    expect(page.locator("p", has_text="Scenario:").first).to_contain_text("GPT-3 175B on 512", timeout=60_000)
