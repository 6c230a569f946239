"""No stale or broken state, in the real browser, in one page session (each step first
reproduces what a user did, then checks the fixed behaviour):

* Nodes = 1 on Power & space before opening Training: the tab offers its inputs beside the
  error (it used to show only the error, for the whole session) and recovers at 128 nodes;
* TP = 3: the error empties the old numbers (no "No findings" beside it); TP = 8 brings them back;
* Requests/s on the Inference tab shows the scenario's target (none: 0) and 10 is used;
* the title and the download name follow an edited design and a newly loaded example.
"""

from __future__ import annotations

import re

import pytest

from .conftest import open_tab

pytestmark = pytest.mark.browser


def _input(page, label: str):
    """The input labelled exactly ``label`` on the shown tab (other tabs have a "Nodes" too)."""
    box = page.locator(".widget-inline-hbox:visible").filter(
        has=page.locator("label", has_text=re.compile(f"^{re.escape(label)}$")))
    return box.locator("input").first


def _shown(page, css: str, text: str):
    return page.locator(css, has_text=text).filter(visible=True)


def _type(page, label: str, value: str) -> None:
    box = _input(page, label)
    box.fill(value)
    box.press("Enter")


def test_state_follows_the_design(app_page, artifacts):
    from playwright.sync_api import expect

    page = app_page
    body = page.locator("body")
    page.locator(".widget-dropdown", has_text="Example").locator("select").select_option(
        label="GPT-3 175B on 1024 A100")
    expect(body).to_contain_text("Loaded example scenario 'GPT-3 175B on 1024 A100'")
    title = page.locator("p", has_text="Scenario:").first

    # Nodes = 1 on Power & space, then Training: TP 8 x PP 8 cannot run on 8 GPUs
    open_tab(page, "Power & space")
    expect(_input(page, "Rack limit [kW]")).to_be_visible(timeout=120_000)
    _type(page, "Nodes", "1")
    open_tab(page, "Training")
    expect(_input(page, "Tensor (TP)")).to_be_visible(timeout=120_000)
    error = page.locator(".gc-error").filter(visible=True).last
    expect(error).to_contain_text("8 GPUs are not divisible", timeout=120_000)
    expect(_input(page, "Nodes")).to_be_visible()  # the inputs are there to fix it
    expect(_shown(page, ".gc-kv", "Step time")).to_have_count(0)
    expect(page.get_by_text("No findings").filter(visible=True)).to_have_count(0)
    expect(title).to_contain_text("(edited from GPT-3 175B on 1024 A100)")
    _type(page, "Nodes", "128")
    summary = _shown(page, ".gc-kv", "Step time").first
    expect(summary).to_contain_text("TP8 PP8x2 DP16", timeout=60_000)
    expect(page.locator(".gc-error").filter(visible=True)).to_have_count(0)

    # TP = 3: an error, and the numbers of the TP 8 plan go with it
    _type(page, "Tensor (TP)", "3")
    expect(page.locator(".gc-error").filter(visible=True).first).to_contain_text("parallelism", timeout=60_000)
    expect(_shown(page, ".gc-kv", "Step time")).to_have_count(0)
    expect(page.get_by_text("No findings").filter(visible=True)).to_have_count(0)
    page.screenshot(path=str(artifacts / "app-state-bad-plan.png"), full_page=True)
    _type(page, "Tensor (TP)", "8")
    expect(_shown(page, ".gc-kv", "Step time").first).to_contain_text("TP8", timeout=60_000)

    # Inference: the scenario has no traffic target, so the box says 0; 10 requests/s sizes a fleet
    open_tab(page, "Inference")
    rps = _input(page, "Requests/s")
    expect(rps).to_have_value("0", timeout=120_000)
    fleet = _shown(page, ".gc-kv", "Traffic target").first
    expect(fleet).to_contain_text("none", timeout=60_000)
    _type(page, "Requests/s", "10")
    expect(fleet).to_contain_text("10 requests/s", timeout=60_000)
    expect(fleet).not_to_contain_text("1,024 GPUs")

    # another example: title and download name are its own
    page.locator(".widget-dropdown", has_text="Example").locator("select").select_option(
        label="Llama 3 70B on 512 H100")
    expect(title).to_contain_text("Llama 3 70B on 512 H100", timeout=60_000)
    expect(title).not_to_contain_text("edited")
    # the download link is its own widget: its update may arrive just after the title's
    expect(page.get_by_text("Download scenario YAML")).to_have_attribute("download", "llama-3-70b-on-512-h100.yaml")
    expect(rps).to_have_value("100")  # that scenario's own target
    assert "Traceback" not in body.inner_text()
