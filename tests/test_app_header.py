"""The app's header: the current design's key figures, refreshed on every change, and the
report download (HTML always, PDF through Chromium)."""

from __future__ import annotations

import base64
import re
import shutil

import pytest

from gpucluster_lib.report.text import figure_text
from gpucluster_lib.ui.common import AppState
from gpucluster_lib.ui.header import Header, header_figures


@pytest.fixture()
def state(root):
    return AppState.from_path(root / "gpucluster_lib/data/scenarios/llama3-70b-512-h100.yaml")


def _values(header: Header) -> dict[str, str]:
    pairs = re.findall(r"gc-hf-label'>([^<]+)</span><span class='gc-hf-value'>([^<]+)<", header.figures.value)
    return {k: v.replace("&amp;", "&") for k, v in pairs}


def test_header_shows_the_designs_key_figures(state):
    header = Header(state)
    s = state.design.summary()
    shown = _values(header)
    assert shown["GPUs"] == figure_text(s["gpus"]) == "512"  # 64 DGX H100 x 8 (the scenario)
    assert shown["Racks"] == figure_text(s["racks"])
    assert shown["Facility power"] == f"{state.design.facility.facility_power_kw / 1000:,.2f} MW"
    assert shown["Days to train, expected"] == figure_text(s["training_days_expected"])
    assert shown["Output tokens/s per GPU"] == figure_text(s["tokens_per_s_per_gpu"])
    assert shown["CapEx"] == figure_text(s["capex"]) and shown["TCO over 5 years"] == figure_text(s["tco"])
    errors = sum(f.severity == "error" for f in state.design.findings)
    assert shown["Errors"] == str(errors) and "Warnings" in shown


def test_header_follows_every_change(state):
    header = Header(state)
    state.update(hardware__nodes=32)  # half the nodes: 256 GPUs
    shown = _values(header)
    assert shown["GPUs"] == "256"
    assert shown["CapEx"] == figure_text(state.design.summary()["capex"])
    state.update(costs__years=3)
    assert "TCO over 3 years" in _values(header)


def test_header_without_a_model_has_no_days(root):
    from gpucluster_lib.design import Design
    from gpucluster_lib.scenario import load_scenario

    sc = load_scenario(root / "gpucluster_lib/data/scenarios/gpt3-175b-1024-a100.yaml")
    labels = [k for k, _ in header_figures(Design(sc.replace(model=type(sc.model)())))]
    assert labels[:3] == ["GPUs", "Racks", "Facility power"]
    assert not any(k.startswith("Days") for k in labels) and "Output tokens/s per GPU" not in labels


def test_download_gives_the_report_as_html_and_pdf(state):
    if not shutil.which("chromium"):
        pytest.fail("chromium is missing: install it with `sudo apt-get install -y chromium`")
    header = Header(state)
    header.button.click()
    links = header.links.value
    html_b64 = re.search(r'download="llama-3-70b-on-512-h100.html" href="data:text/html;base64,([^"]+)"', links)
    assert html_b64, links[:300]
    page = base64.b64decode(html_b64.group(1)).decode()
    assert "Executive summary" in page and figure_text(state.design.summary()["tco"]) in page
    assert "<h2>Software stack and scheduler</h2>" in page  # the same chapters as the batch report
    pdf_b64 = re.search(r'href="data:application/pdf;base64,([^"]+)"', links)
    assert pdf_b64 and base64.b64decode(pdf_b64.group(1)).startswith(b"%PDF")
    state.update(hardware__nodes=16)
    assert header.links.value == ""  # no report of the old scenario left behind


def test_download_without_chromium_says_how_to_install(state, monkeypatch):
    from gpucluster_lib.report import pdf

    monkeypatch.setattr(pdf.shutil, "which", lambda name: None)
    header = Header(state)
    header.button.click()
    assert "data:text/html;base64," in header.links.value
    assert "No PDF" in header.links.value and "apt-get install -y chromium" in header.links.value
