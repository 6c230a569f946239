"""The report as PDF (headless Chromium) and the comparison report.

The PDF is checked the way a reader sees it: ``pdftotext`` for the words (page 1 holds the
design's summary figures, written as everywhere else; every chapter title is there; chart
labels are text, so the charts are vectors) and ``pdftoppm`` to render the pages.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from gpucluster_lib.design import Design
from gpucluster_lib.report.text import figure_text

pytestmark = pytest.mark.notebook


def _need(tool: str, package: str) -> str:
    path = shutil.which(tool)
    if not path:
        pytest.fail(f"{tool} is missing: install it with `sudo apt-get install -y {package}`")
    return path


def _text(pdf, *pages: int) -> str:
    args = [_need("pdftotext", "poppler-utils"), "-layout"]
    if pages:
        args += ["-f", str(pages[0]), "-l", str(pages[-1])]
    return subprocess.run([*args, str(pdf), "-"], capture_output=True, text=True, check=True, timeout=60).stdout


@pytest.fixture(scope="module")
def llama_pdf(tmp_path_factory, root):
    _need("chromium", "chromium")
    out = tmp_path_factory.mktemp("pdf") / "llama.html"
    proc = subprocess.run([sys.executable, "-m", "gpucluster_lib", "report", "llama3-70b-512-h100", "-o", str(out),
                           "--pdf", "--json"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)["reports"][0]
    assert report["pdf"] == str(out.with_suffix(".pdf"))
    return out.with_suffix(".pdf")


def test_pdf_page_one_holds_the_designs_summary_figures(llama_pdf, root):
    d = Design.from_yaml(root / "gpucluster_lib/data/scenarios/llama3-70b-512-h100.yaml")
    s = d.summary()
    page1 = _text(llama_pdf, 1)
    assert "Executive summary" in page1 and "Llama 3 70B on 512 H100" in page1
    for key in ("gpus", "racks", "it_power_kw", "facility_power_kw", "training_days", "training_days_expected",
                "mfu", "tokens_per_s_per_gpu", "capex", "tco", "cost_per_gpu_hour"):
        assert figure_text(s[key]) in page1, key
    assert "page 1 of" in page1  # the footer's page numbers


def test_pdf_has_every_chapter_on_its_own_pages(llama_pdf, root):
    pages = _text(llama_pdf).split("\f")
    first_lines = [" ".join(p.split()[:6]) for p in pages]
    for title in ("Hardware and node", "Network", "Shared storage", "Power, cooling and space", "Training",
                  "Serving", "Reliability and spares", "Cost and carbon", "Bill of materials", "Findings and fixes",
                  "Appendix: assumptions and sources"):
        # a page break before every chapter: its title opens a page
        assert any(line.startswith(title) for line in first_lines), title
    everything = "\n".join(pages)
    # chart titles and axis labels are text in the PDF: the charts are vectors, not pictures
    assert "One training step" in everything and "Time per step [s]" in everything
    d = Design.from_yaml(root / "gpucluster_lib/data/scenarios/llama3-70b-512-h100.yaml")
    assert f"Facility power at peak: {d.facility.facility_power_kw:,.0f} kW" in everything  # the power chart's title


def test_pdf_pages_render(llama_pdf, tmp_path):
    info = subprocess.run([_need("pdfinfo", "poppler-utils"), str(llama_pdf)], capture_output=True, text=True,
                          check=True).stdout
    pages = int(next(line.split()[-1] for line in info.splitlines() if line.startswith("Pages:")))
    assert "A4" in info and pages >= 12  # page 1 + 11 chapters, each starting a page
    subprocess.run([_need("pdftoppm", "poppler-utils"), "-r", "30", "-png", str(llama_pdf), str(tmp_path / "p")],
                   check=True, timeout=120)
    images = sorted(tmp_path.glob("p-*.png"))
    assert len(images) == pages and all(p.stat().st_size > 1000 for p in images)


def test_missing_chromium_is_a_clear_error(monkeypatch):
    from gpucluster_lib.errors import GpuClusterError
    from gpucluster_lib.report import pdf

    monkeypatch.setattr(pdf.shutil, "which", lambda name: None)
    with pytest.raises(GpuClusterError, match=r"apt-get install -y chromium"):
        pdf.html_to_pdf("nowhere.html")


def test_comparison_report(tmp_path, root):
    from gpucluster_lib.report.compare import comparison_rows, render_comparison
    from tests.test_report_document import identifier_leaks

    paths = [root / f"gpucluster_lib/data/scenarios/{n}.yaml" for n in ("gpt3-175b-1024-a100", "llama3-70b-512-h100")]
    out = render_comparison(paths, tmp_path / "cmp.html")
    page = out.read_text()
    designs = [Design.from_yaml(p) for p in paths]
    rows = {label: (texts, best) for label, texts, best in comparison_rows(designs)}
    assert rows["GPUs"] == (["1,024", "512"], [0])  # 128 DGX A100 x 8, 64 DGX H100 x 8 (the scenarios); more is better
    assert rows["Model FLOPs utilisation"][0] == [f"{d.training.mfu:.1%}" for d in designs]  # percentages
    for d in designs:
        assert figure_text(d.summary()["capex"]) in page
    assert "Side by side" in page and "<svg" in page
    assert "costed over different periods (4, 5 years)" in page  # gpt3: costs.years 4; llama: 5
    assert identifier_leaks(page) == []


def test_batch_with_compare_links_the_comparison(tmp_path, root):
    from gpucluster_lib.report.render import render_batch

    def fake(path, target, timeout_s):
        target.write_text("ok")
        return target

    src = root / "gpucluster_lib/data/scenarios"
    results = render_batch([src / "reference-8x-a100.yaml", src / "llama3-70b-512-h100.yaml"], tmp_path,
                           progress=False, render=fake, compare=True)
    assert all(r.ok for r in results)
    assert "comparison.html" in (tmp_path / "index.html").read_text()
    page = (tmp_path / "comparison.html").read_text()
    assert "Llama 3 70B on 512 H100" in page and "<th>GPUs</th>" not in page  # designs are the columns
