"""Network tab in the Voila app: change the node count, see the drawing and counts update.

Screenshots of the drawing for 16 and 1024 nodes go to .test-artifacts/.
"""

from __future__ import annotations

import pytest

playwright = pytest.importorskip("playwright.sync_api")
from playwright.sync_api import expect  # noqa: E402

pytestmark = pytest.mark.browser


def _set_nodes(page, n: int) -> None:
    box = page.locator(".widget-inline-hbox", has_text="Nodes").locator("input").first
    box.fill(str(n))
    box.press("Enter")


def test_network_tab_16_and_1024_nodes(app_page, artifacts):
    from tests.browser.conftest import open_tab

    page = app_page
    # the Llama 3 70B example: 64 DGX H100 on a rail-optimised QM9700 fabric
    page.locator("select", has=page.locator("option", has_text="Llama 3 70B on 512 H100")).first.select_option(
        label="Llama 3 70B on 512 H100")
    open_tab(page, "Network")
    summary = page.locator(".gc-topology-summary")
    expect(summary).to_be_visible(timeout=90_000)
    _set_nodes(page, 16)
    expect(page.locator(".gc-topology-switches")).to_contain_text("leaf 8, spine 4", timeout=30_000)
    expect(page.locator("svg.marks >> visible=true").first).to_be_visible(timeout=30_000)
    expect(page.locator("text=rail-optimized, 2 tiers: 16 nodes").first).to_be_visible(timeout=30_000)  # drawing title
    page.screenshot(path=str(artifacts / "topology_16_nodes.png"), full_page=True)
    drawing = page.locator("svg.marks >> visible=true").first
    drawing.scroll_into_view_if_needed()
    drawing.screenshot(path=str(artifacts / "topology_16_drawing.png"))
    _set_nodes(page, 1024)
    # NVIDIA B200/H100 SuperPOD pattern at 32 SUs: 256 leaf, 256 spine, 128 core
    expect(page.locator(".gc-topology-switches")).to_contain_text("leaf 256, spine 256, core 128", timeout=30_000)
    page.screenshot(path=str(artifacts / "topology_1024_nodes.png"), full_page=True)
    expect(page.locator("text=rail-optimized, 3 tiers: 1024 nodes").first).to_be_visible(timeout=30_000)
    drawing = page.locator("svg.marks >> visible=true").first
    drawing.scroll_into_view_if_needed()
    drawing.screenshot(path=str(artifacts / "topology_1024_drawing.png"))
