"""The Power & space tab in a real browser: node count and PUE change the hall totals; a refused
value empties the old numbers and hides the charts until the design is valid again."""

from __future__ import annotations

import re

import pytest

from .conftest import open_tab

pytestmark = pytest.mark.browser


def _input(page, label: str):
    box = page.locator(".widget-inline-hbox").filter(has=page.locator("label", has_text=re.compile(f"^{label}$")))
    return box.locator("input").first


def test_power_tab_nodes_and_bad_pue(app_page, artifacts):
    from playwright.sync_api import expect

    page = app_page
    body = page.locator("body")
    # GPT-3 on 128 DGX A100 with 30 kW racks: 4 per rack by power (the app opens on another example)
    page.locator(".widget-dropdown", has_text="Example").locator("select").select_option(
        label="GPT-3 175B on 1024 A100")
    expect(page.locator("p", has_text="Scenario:").first).to_contain_text("GPT-3 175B", timeout=120_000)
    open_tab(page, "Power & space")
    expect(body).to_contain_text("limited by power", timeout=120_000)
    expect(body).to_contain_text("128 / 1,024")
    elevation = page.locator(".vega-embed", has_text="Rack unit").first  # the hardware tab has charts too
    expect(elevation).to_contain_text("42U rack")
    nodes = _input(page, "Nodes")
    nodes.fill("140")
    nodes.press("Enter")
    # 140 DGX A100 = 1,120 GPUs (DGX SuperPOD A100 RA: 7 SUs x 20 nodes)
    expect(body).to_contain_text("140 / 1,120")
    page.screenshot(path=str(artifacts / "app-power-140-nodes.png"), full_page=True)
    elevation.scroll_into_view_if_needed()
    expect(elevation).to_contain_text("4 nodes")
    page.screenshot(path=str(artifacts / "app-power-charts.png"))
    pue = _input(page, "PUE")
    pue.fill("0.9")
    pue.press("Enter")
    expect(body).to_contain_text("facility.pue: must be at least 1")
    assert "Traceback" not in body.inner_text()
    # the numbers of the last good design are gone and its charts hidden while the error stands
    expect(body).not_to_contain_text("140 / 1,120")
    expect(body).not_to_contain_text("All node checks pass")
    expect(elevation).to_be_hidden()
    page.screenshot(path=str(artifacts / "app-power-bad-pue.png"), full_page=True)
    pue.fill("1.3")
    pue.press("Enter")  # valid again: the tab recovers with the new design
    expect(body).to_contain_text("140 / 1,120")
    expect(elevation).to_be_visible()
    expect(body).not_to_contain_text("facility.pue: must be at least 1")
