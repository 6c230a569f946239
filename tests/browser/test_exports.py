"""The Operations tab in a real browser: the plans show, and each export downloads from the app
(SLURM, Kubernetes, bill of materials as CSV and XLSX, NetBox import, rack elevations)."""

from __future__ import annotations

import csv
import io
import zipfile

import pytest
from playwright.sync_api import expect  # a missing playwright fails here (never a skip)

pytestmark = pytest.mark.browser

REF = "Reference 8x A100 rack"


def _download(page, kind: str, which: int = 0):
    page.locator(f".gc-export-{kind}").click()
    link = page.locator(f".gc-export-link-{kind} a.gc-download").nth(which)
    expect(link).to_be_visible(timeout=60_000)
    with page.expect_download(timeout=60_000) as info:
        link.click()
    d = info.value
    return d.suggested_filename, open(d.path(), "rb").read()


def test_operations_tab_downloads_every_export(app_page, artifacts):
    from tests.browser.conftest import open_tab

    page = app_page
    page.locator("select", has=page.locator("option", has_text=REF)).first.select_option(label=REF)
    open_tab(page, "Operations")
    body = page.locator(".gc-table", has_text="Operating system image").first
    expect(body).to_contain_text("Ubuntu 22.04 LTS", timeout=120_000)
    expect(page.locator(".gc-table", has_text="MUNGE").first).to_be_visible()  # the security checklist

    name, data = _download(page, "slurm")
    assert name == "reference-8x-a100-rack-slurm.zip"
    z = zipfile.ZipFile(io.BytesIO(data))
    conf = z.read("reference-8x-a100-rack-slurm/slurm.conf").decode()
    # one 8-GPU A100 node (the example's hardware.nodes), GRES gpu:a100:8
    assert "NodeName=node0001 " in conf and "Gres=gpu:a100:8" in conf
    assert "SwitchName=switch01 Nodes=node0001" in z.read("reference-8x-a100-rack-slurm/topology.conf").decode()

    name, data = _download(page, "k8s")
    assert "reference-8x-a100-rack-k8s/nodes.yaml" in zipfile.ZipFile(io.BytesIO(data)).namelist()

    name, data = _download(page, "bom", 0)
    assert name.endswith("-bom.csv")
    rows = list(csv.reader(io.StringIO(data.decode())))
    assert rows[0][:2] == ["Category", "SKU"] and rows[-1][0] == "total"
    name, data = _download(page, "bom", 1)
    assert name.endswith("-bom.xlsx") and data[:2] == b"PK"

    name, data = _download(page, "netbox")
    names = zipfile.ZipFile(io.BytesIO(data)).namelist()
    assert "reference-8x-a100-rack-netbox/devices.csv" in names
    assert any(n.startswith("reference-8x-a100-rack-netbox/device-types/") for n in names)

    name, data = _download(page, "racks")
    svg = zipfile.ZipFile(io.BytesIO(data)).read("reference-8x-a100-rack-racks/rack001.svg").decode()
    assert svg.startswith("<svg") and "node0001" in svg
    assert "Traceback" not in page.locator("body").inner_text()
    page.screenshot(path=str(artifacts / "tab-operations.png"), full_page=True)
