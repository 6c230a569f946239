"""The Network tab in a real browser: a fabric the design refuses empties the figures and hides
the drawing and the growth chart (never "the design holds the cluster" beside the error), and the
next valid choice on the tab brings them back."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import open_tab

pytestmark = pytest.mark.browser

GPT3 = Path(__file__).resolve().parents[2] / "gpucluster_lib" / "data" / "scenarios" / "gpt3-175b-1024-a100.yaml"


def test_network_error_empties_numbers_and_hides_charts(app_page, artifacts):
    from playwright.sync_api import expect

    page = app_page
    # the GPT-3 example with one fabric port per node, on a ring: a ring needs a port to each neighbour
    text = GPT3.read_text(encoding="utf-8").replace("nics_per_node: 8", "nics_per_node: 1").replace(
        "topology: fat-tree", "topology: ring")
    with page.expect_file_chooser() as chooser:  # the upload button opens the browser's file chooser
        page.locator("button", has_text="Upload YAML").first.click()
    chooser.value.set_files(files=[{"name": "ring.yaml", "mimeType": "text/yaml", "buffer": text.encode("utf-8")}])
    expect(page.locator("body")).to_contain_text("Loaded 'ring.yaml'", timeout=120_000)
    open_tab(page, "Network")
    topology = page.locator(".widget-dropdown", has_text="Topology").filter(visible=True).locator("select")
    expect(topology).to_have_value("ring", timeout=180_000)  # the tab is built, its inputs beside the error
    # the message twice: in the header above the tabs and on the tab itself
    error = page.locator(".gc-error", has_text="a ring needs at least 2 fabric ports per node").filter(visible=True)
    expect(error).to_have_count(2, timeout=60_000)
    expect(page.locator(".gc-topology-summary").filter(visible=True)).to_have_count(0)
    expect(page.get_by_text("The design holds the cluster").filter(visible=True)).to_have_count(0)
    expect(page.locator(".vega-embed", has_text="Switches vs nodes").filter(visible=True)).to_have_count(0)
    page.screenshot(path=str(artifacts / "tab-topology-error.png"), full_page=True)
    # a fat tree takes one port per node: 128 nodes x 1 port = 128 endpoints at 200 Gb/s (HDR)
    topology.select_option("fat-tree")
    summary = page.locator(".gc-topology-summary").filter(visible=True)
    expect(summary).to_contain_text("128 endpoints at 200 Gb/s", timeout=60_000)
    expect(page.locator(".gc-error").filter(visible=True)).to_have_count(0)  # header and tab alike
    expect(page.locator(".vega-embed", has_text="Switches vs nodes").filter(visible=True)).to_have_count(1)
    expect(page.locator(".vega-embed", has_text="fat-tree").filter(visible=True).first).to_be_visible()
    assert "Traceback" not in page.locator("body").inner_text()
