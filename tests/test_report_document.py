"""The report as a design document: executive summary, one chapter per stage with its chart,
bill of materials, findings with fixes, the assumptions appendix; no dotted keys anywhere."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

from gpucluster_lib.design import Design
from gpucluster_lib.report import document
from gpucluster_lib.report.text import figure_text, humanize_text, money_text

#: A result or scenario key path (``node.component_peak_w``, ``costs.prices``), not a web
#: address or a file name.
DOTTED = re.compile(r"\b[a-z][a-z0-9_]+\.(?!(?:com|org|net|io|ai|gov|edu|dev|csv|yaml|html|pdf)\b)[a-z_][a-z0-9_]*\b")
SNAKE = re.compile(r"\b[a-z][a-z0-9]*_[a-z0-9_]+\b")
RAW = re.compile(r"\{'|\[\{|\bNone\b|\bTrue\b|\bFalse\b|issue #|\bTODO\b")


class _Text(HTMLParser):
    """Every text node of a page outside <style> and <script>."""

    def __init__(self) -> None:
        super().__init__()
        self.skip = 0
        self.nodes: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag in ("style", "script"):
            self.skip += 1

    def handle_endtag(self, tag):
        if tag in ("style", "script"):
            self.skip -= 1

    def handle_data(self, data):
        if not self.skip and data.strip():
            self.nodes.append(data)


def text_nodes(page: str) -> list[str]:
    p = _Text()
    p.feed(page)
    return p.nodes


def _without_urls(text: str) -> str:
    return re.sub(r"\S*(?:https?://|www\.|\.com\b|\.org\b|\.net\b)\S*", " ", text)


def identifier_leaks(page: str) -> list[str]:
    """Text nodes that show a dotted key, a snake_case name or a raw Python value."""
    bad = []
    for node in text_nodes(page):
        t = _without_urls(node)
        if DOTTED.search(t) or SNAKE.search(t) or RAW.search(t):
            bad.append(node.strip()[:160])
    return bad


@pytest.fixture(scope="module")
def llama(root):
    return Design.from_yaml(root / "gpucluster_lib/data/scenarios/llama3-70b-512-h100.yaml")


@pytest.fixture(scope="module")
def llama_html(llama):
    from gpucluster_lib.report.render import report_sections

    return document.document_html(llama, report_sections(llama))  # as the report and the app's download


def test_the_leak_detector_catches_what_the_old_report_showed():
    # the strings the old report printed (dotted result keys, raw fractions, internal notes)
    page = ("<p>node.component_peak_w</p><p>storage.sources.power</p><p>{'a': 1}</p>"
            "<p>facility budget (" + "issue" + " #4) when present</p><p>unfused_attention_bytes_per_score</p>")
    assert len(identifier_leaks(page)) == 5
    assert identifier_leaks("<p>see semianalysis.com/p/x_y and servers.csv, e.g. 1.5 kW</p>") == []


def test_humanize_text_turns_keys_into_words():
    assert humanize_text("set costs.network_price if wired") == "set “Costs: Network price” if wired"
    assert humanize_text("replace them in costs.* or costs.prices") == \
        "replace them in the costs settings or “Costs: Prices”"
    assert humanize_text("2.5 kW (ESTIMATE, power_assumptions.STORAGE_APPLIANCE_W)") == \
        "2.5 kW (ESTIMATE, the shipped power assumptions)"
    assert humanize_text("servers.csv id") == "the server catalogue id"
    assert humanize_text("head_node, https://a.example.com/x_y") == "head node, https://a.example.com/x_y"


def test_money_text():
    assert money_text(30_447_400.8, "USD") == "30.4 million USD"
    assert money_text(1.6022, "USD") == "1.60 USD"
    assert money_text(2.5e9, "EUR") == "2.50 billion EUR"


def test_document_has_no_dotted_keys_raw_values_or_snake_case(llama_html):
    assert identifier_leaks(llama_html) == []


def test_executive_summary_figures_are_the_designs(llama):
    page = document.executive_summary_html(llama)
    s = llama.summary()
    for key in ("gpus", "racks", "capex", "tco", "cost_per_gpu_hour", "training_days", "training_days_expected",
                "mfu", "tokens_per_s_per_gpu", "it_power_kw", "facility_power_kw"):
        assert figure_text(s[key]) in page, key
    assert "512 × NVIDIA H100" in page  # 64 DGX H100 x 8 GPUs (the scenario)
    assert f"{llama.training.mfu:.1%}" in page and f"{llama.training.mfu:.4f}" not in page  # a percentage
    assert f"{llama.facility.facility_power_kw / 1000:,.2f} MW" in page
    assert "What is built" in page and "What it does" in page and "What it costs" in page
    assert "OpEx per year" in page and "Cost per million output tokens" in page
    assert "The three most important findings" in page
    assert "<svg" in page  # the hall drawing


def test_every_stage_has_its_chapter_and_its_chart(llama_html):
    chapters = re.findall(r"<section class='gc-section'><h2>([^<]+)</h2>(.*?)</section>", llama_html, re.S)
    titles = [t for t, _ in chapters]
    assert titles[:8] == ["Hardware and node", "Network", "Shared storage", "Power, cooling and space", "Training",
                          "Serving", "Reliability and spares", "Cost and carbon"]
    assert titles[-3:] == ["Bill of materials", "Findings and fixes", "Appendix: assumptions and sources"]
    body = dict(chapters)
    charts = {t: b.count("<svg") for t, b in chapters}
    # step-time breakdown + memory; topology drawing; rack elevation + power + cooling; cost breakdown;
    # days-to-train band + interruptions; throughput curve + memory
    assert charts["Training"] == 2 and "One training step" in body["Training"]
    assert charts["Network"] == 1 and charts["Power, cooling and space"] == 3
    assert charts["Cost and carbon"] == 1 and "Total cost of ownership over 5 years" in body["Cost and carbon"]
    assert charts["Reliability and spares"] == 2 and "Days to train: P10" in body["Reliability and spares"]
    assert charts["Serving"] == 2


def test_bill_of_materials_counts_are_the_stages(llama):
    rows = document.bill_of_materials(llama)
    by_item = {r["item"]: r["quantity"] for r in rows}
    assert by_item["NVIDIA DGX H100"] == 67  # 64 job nodes + 3 hot spares (the spares stage)
    assert by_item["NVIDIA H100 SXM5 80GB"] == 67 * 8
    switches = sum(r["quantity"] for r in rows if r["group"] == "Network")
    assert switches == sum(g.count for g in llama.network.switch_groups)
    assert sum(r["quantity"] for r in rows if r["note"] == "optical transceivers") == \
        sum(llama.network.transceivers_all.values())


def test_appendix_names_values_units_and_sources(llama):
    groups = dict(document.assumptions(llama))
    assert {"Design inputs", "Catalogue parts", "Training time engine", "Serving engine", "Reliability",
            "Prices and other sources"} <= set(groups)
    inputs = {n: v for n, v, _ in groups["Design inputs"]}
    assert inputs["Facility: PUE"] == "1.25"  # llama3-70b-512-h100.yaml: facility.pue 1.25
    engine = {n: v for n, v, _ in groups["Training time engine"]}
    import yaml

    from gpucluster_lib.resources import data_path

    hopper = yaml.safe_load(data_path("efficiency.yaml").read_text())["generations"]["hopper"]
    assert engine["Matrix-multiply efficiency"] == f"{hopper['gemm_efficiency']:.1%}"  # a percentage, from the table
    assert all(src for _, _, src in groups["Prices and other sources"])


def test_appendix_names_are_the_named_ones_not_humanised_keys(llama):
    """Every serving-engine and storage name comes from the document's name tables: a humanised key
    ("Gemm efficiency used", "Storage checkpoint write (gb/s)") would show a code name and a
    lower-case unit."""
    groups = dict(document.assumptions(llama))
    serving = {n: v for n, v, _ in groups["Serving engine"]}
    assert "Gemm efficiency used" not in serving
    assert serving["Matrix-multiply efficiency at the serving precision"].endswith("%")  # a fraction shown as %
    names = [n for n, _, _ in groups["Prices and other sources"]]
    assert not [n for n in names if "gb/s" in n or "(" in n and n.startswith("Storage")]
    assert set(llama.storage.to_dict().get("sources") or {}) <= set(document.STORAGE_SOURCE_NAMES)


def test_serving_assumptions_follow_the_kv_cache_scheduling(root):
    """The appendix states what the KV cache holds under the chosen policy, not always no-eviction."""
    from gpucluster_lib.inference.serve import KV_ASSUMPTIONS

    base = Design.from_yaml(root / "gpucluster_lib/data/scenarios/llama3-70b-512-h100.yaml")
    util = base.evolve(base.scenario.replace(inference__kv_cache_scheduling="max_utilization"))
    assert KV_ASSUMPTIONS["no_evict"] in base.serving.assumptions
    assert KV_ASSUMPTIONS["max_utilization"] in util.serving.assumptions
    assert KV_ASSUMPTIONS["no_evict"] not in util.serving.assumptions


def test_findings_chapter_lists_fixes(root):
    d = Design.from_yaml(root / "gpucluster_lib/data/scenarios/reference-8x-a100.yaml")
    page = document.all_findings_html(d)
    # the reference rack has one head node while a redundant one is asked for: a warning with a fix
    assert "Warning:" in page and "What to do:" in page
    # the setting in words, not hardware.head_nodes
    assert "a redundant head node is asked for, but the cluster has 1 head node" in page
    assert "use 2 head nodes (an active and a standby scheduler and control plane)" in page
    assert "head_nodes" not in page
    assert identifier_leaks(document.document_html(d)) == []


def test_design_without_a_model(root):
    from gpucluster_lib.scenario import load_scenario

    sc = load_scenario(root / "gpucluster_lib/data/scenarios/gpt3-175b-1024-a100.yaml")
    sc = sc.replace(model=type(sc.model)())
    page = document.document_html(Design(sc))
    assert "No model in the scenario: nothing to train." in page
    assert "none in the scenario: hardware, facility and cost only" in page
    assert identifier_leaks(page) == []


def test_rack_scale_system_chapter_reads_without_missing_values(root):
    # a GB200 NVL72 row is one rack with its power shelves: no per-node supply count in the catalogue
    d = Design.from_yaml(root / "gpucluster_lib/data/scenarios/gb200-nvl72-superpod-su.yaml")
    page = document.section_html(document.stage_sections(d)[0])
    assert "power supplies" not in page and identifier_leaks(page) == []
    assert f"{d.hardware.gpus:,} GPUs in all" in page
