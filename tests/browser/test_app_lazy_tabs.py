"""Tabs built on their first selection, in the real browser: until then a tab says it is being
prepared; once selected it shows its widgets with the same numbers as the design computed here
with the library; and no tab of the page shows a Python traceback."""

from __future__ import annotations

import pytest

from gpucluster_lib import design
from gpucluster_lib.scenario import load_scenario
from gpucluster_lib.ui.app import SCENARIO_DIR, example_scenarios

from .conftest import open_tab

pytestmark = pytest.mark.browser

SHOWN_TAB = ".widget-tab-contents > .lm-Widget:not(.lm-mod-hidden)"  # the shown tab's panel (ipywidgets 8)


def _first_example():
    """The example the app opens on: the first shipped scenario by file name."""
    path = next(iter(example_scenarios().values()))
    assert path.parent == SCENARIO_DIR
    return load_scenario(path)


def test_a_tab_built_on_selection_shows_the_designs_numbers(app_page):
    from playwright.sync_api import expect

    page = app_page
    scenario = _first_example()
    expect(page.locator("p", has_text="Scenario:").first).to_contain_text(scenario.name)
    # not built yet: its panel holds the note, hidden behind the first tab
    note = page.locator(".gc-preparing", has_text="Preparing the Power & space tab…")
    expect(note).to_have_count(1)
    expect(note).to_be_hidden()
    open_tab(page, "Power & space")
    shown = page.locator(SHOWN_TAB)
    expect(shown).to_contain_text("Facility power (PUE", timeout=120_000)
    expect(note).to_have_count(0)  # replaced by the tab's widgets
    b = design(scenario).facility  # the same stage result, computed in this process
    row = shown.locator("tr", has_text="Facility power (PUE").first
    expect(row).to_contain_text(f"{b.facility_power_kw:,.1f}")
    nodes_gpus = shown.locator("tr", has_text="Nodes / GPUs").first
    expect(nodes_gpus).to_contain_text(f"{b.nodes:,} / {b.nodes * b.node.gpus_per_node:,}")
    # by hand: a DGX SuperPOD GB200 scalable unit is 8 NVL72 racks of 72 GPUs (NVIDIA's reference architecture)
    expect(nodes_gpus).to_contain_text("8 / 576")
    # the header's figure is the same facility power, in MW
    header = page.locator(".gc-hf", has=page.locator(".gc-hf-label", has_text="Facility power"))
    expect(header.locator(".gc-hf-value")).to_have_text(f"{b.facility_power_kw / 1000:,.2f} MW")


def test_no_tab_shows_a_traceback(app_page):
    from playwright.sync_api import expect

    page = app_page
    titles = [t.strip() for t in page.locator(".lm-TabBar-tab").all_inner_texts()]
    assert len(titles) >= 8, titles
    for title in titles:
        open_tab(page, title)
        shown = page.locator(SHOWN_TAB)
        expect(shown.locator(".gc-preparing")).to_have_count(0, timeout=120_000)
        expect(shown.locator(".jupyter-widgets").first).to_be_visible()
        text = shown.inner_text()
        assert "Traceback" not in text and 'File "' not in text, title
    body = page.locator("body").inner_text()
    assert "Traceback" not in body and 'File "' not in body
    # nothing went to the page's error stream either (Voila's cell errors, a widget's exception)
    expect(page.locator("[data-mime-type='application/vnd.jupyter.stderr']")).to_have_count(0)
