"""Text a person reads: counts agree with their nouns, one "the", human names in labels and
titles, assumptions that say what the model does (every shipped example's design document)."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from gpucluster_lib.design import Design
from gpucluster_lib.formatting import humanize_key, number_words, plural, singular_where_one
from gpucluster_lib.report.document import document_html
from gpucluster_lib.report.render import report_sections
from gpucluster_lib.scenario import load_scenario

EXAMPLES = Path(__file__).resolve().parent.parent / "gpucluster_lib" / "data" / "scenarios"


def document_text(path: Path) -> str:
    d = Design(load_scenario(path))
    h = document_html(d, report_sections(d))
    h = re.sub(r"<(svg|style)\b.*?</\1>", " ", h, flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", "\n", h))


def test_counts_take_their_noun_in_the_right_number():
    assert plural(1, "rack") == "1 rack" and plural(958, "rack") == "958 racks"
    assert plural(0, "hot spare") == "0 hot spares" and plural(1, "switch", "switches") == "1 switch"
    assert plural(1_024, "switch", "switches") == "1,024 switches"
    assert singular_where_one("1 head node(s) for 2 management role(s)") == "1 head node for 2 management roles"
    assert singular_where_one("0 hot-spare node(s); 1 switch(es) and 3 switch(es)") == \
        "0 hot-spare nodes; 1 switch and 3 switches"
    assert singular_where_one("1,024 GPU(s)") == "1,024 GPUs"


def test_report_text_separates_thousands_but_not_ids_or_versions():
    from gpucluster_lib.report.text import humanize_text

    assert humanize_text("searched 406299 valid plans") == "searched 406,299 valid plans"
    for kept in ("RA-09950-001", "driver 550.127.08", "https://example.org/12345", "year 2024", "3.14159"):
        assert humanize_text(kept) == kept


@pytest.mark.parametrize(("value", "text"), [
    (0, "0"), (0.0, "0"), (1.0, "1"), (0.9, "0.9"), (-1.0, "-1"), (16_777_216, "16,777,216"),
    (100_000_000.0, "100,000,000"), (1e15, "10^15"), (2.5e15, "2.5 x 10^15"), (10**21, "10^21"), (-1e15, "-10^15"),
    (1e-9, "10^-9"), (3.35e-5, "3.35 x 10^-5"), (0.001, "0.001"), (float("inf"), "infinity"),
])
def test_numbers_in_messages_read_as_a_person_writes_them(value, text):
    # range messages (scenario.py): no "0.0" for 0, no "1,000,000,000,000,000.0" for 10^15, no "1e-09"
    assert number_words(value) == text


def test_standard_numbers_keep_no_thousands_separator():
    from gpucluster_lib.report.text import humanize_text

    # UPS standard IEC 62040, ISMS standard ISO/IEC 27001, data-centre standard EN 50600,
    # telecom cabling ANSI/TIA 56800 (made-up number of 5 digits): numbers, not counts
    for kept in ("IEC 62040", "IEC 62040-3", "ISO 27001", "ISO/IEC 27001", "ISO/IEC 27001:2022", "EN 50600",
                 "rated to IEEE 80211 and ANSI/TIA 56800"):
        assert humanize_text(kept) == kept, kept
    # a count next to them still gets its separators
    assert humanize_text("ISO 27001 audit of 12000 nodes") == "ISO 27001 audit of 12,000 nodes"
    assert humanize_text("TOKEN 12345") == "TOKEN 12,345"  # "EN" only as a word of its own


def test_rates_and_acronyms_in_labels():
    assert humanize_key("inference.requests_per_s") == "Inference: Requests per second"  # not "Requests per (s)"
    assert humanize_key("facility.energy_price_per_kwh") == "Facility: Energy price per kWh"
    assert humanize_key("operations.cuda") == "Operations: CUDA"
    assert humanize_key("it_power_kw") == "IT power (kW)"  # units in brackets stay


# the one-node reference (where "1 racks" and "the the" were seen) and the largest example
@pytest.mark.parametrize("name", ["reference-8x-a100", "roce-24k-h100"])
def test_design_document_text_has_no_grammar_slips(name):
    text = document_text(EXAMPLES / f"{name}.yaml")
    assert not re.search(r"\bthe the\b", text, re.I)
    assert not re.search(r"\w\((e?s)\)", text), re.findall(r".{30}\w\(e?s\).{10}", text)[:3]
    slips = re.findall(r"(?<![\d.,])1 (?:compute |hot )?(?:nodes|racks|rows|switches|replicas|GPUs|spares|"
                       r"sequences|errors|warnings)\b", text)
    assert slips == []
    # the failure-rate rows of the appendix: component names as people write them
    rates = re.findall(r"Failure rate: ([^\n]+)", text)
    assert "GPU" in rates and "GPU memory (HBM)" in rates and all(r[:1].isupper() for r in rates), rates
    # Poisson queueing is modelled: the serving assumption says so in words
    assert "arrival poisson" not in text and "with Poisson arrivals" in text
    assert not re.search(r"bursty arrivals is not modelled", text)
    assert "Requests per (s)" not in text
    # counts of five digits or more carry thousands separators (searched 406,299 plans, weight 10,000)
    bare = re.findall(r"(?<![\w.,/:#-])\d{5,}(?![\w.,/:-])", text)
    assert bare == [], bare[:5]


def test_reference_appendix_percentage_and_currency():
    text = document_text(EXAMPLES / "reference-8x-a100.yaml")
    # inference.slo_percentile 99 is a percentage already (scenario unit %), not a fraction
    assert re.search(r"Inference: SLO percentile\n+99%", text)
    # facility.energy_price_per_kwh 0.12 in the scenario's currency (costs.currency USD)
    assert re.search(r"Facility: Energy price per kWh\n+0\.12 USD/kWh", text)
    # 1 node + 1 head node in one rack: the power section reads in the singular
    assert "1 node (1 for the job and 0 hot spares) fills 1 compute rack at" in text


def test_edited_app_title_names_the_accelerator_as_the_catalogue_does():
    from gpucluster_lib.ui.app import shown_scenario
    from gpucluster_lib.ui.common import AppState

    state = AppState.from_path(EXAMPLES / "gpt3-175b-1024-a100.yaml")
    loaded = state.scenario
    state.update(hardware__nodes=64, hardware__gpus=None)
    title = shown_scenario(state, loaded).name
    # 64 DGX A100 x 8 GPUs = 512; accelerators.csv name of a100-sxm4-80gb
    assert title == "GPT-3 175B on 512 NVIDIA A100 SXM4 80GB (edited from GPT-3 175B on 1024 A100)"
    assert "a100-sxm4" not in title


def test_appendix_counts_of_one_take_the_singular():
    import types

    from gpucluster_lib.report.document import _COUNT_UNITS, _scenario_inputs

    s = load_scenario(EXAMPLES / "reference-8x-a100.yaml")

    def shown(scenario, name):
        return dict((k, v) for k, v, _ in _scenario_inputs(types.SimpleNamespace(scenario=scenario)))[name]

    # a one-stage pipeline split lists one entry, two stages two entries
    assert shown(s.replace(parallelism__pipeline_layers=[80]), "Parallelism: Pipeline layers") == "1 entry"
    assert shown(s.replace(parallelism__pipeline_layers=[40, 40]), "Parallelism: Pipeline layers") == "2 entries"
    assert shown(s.replace(parallelism__micro_batch_size=1), "Parallelism: Micro batch size") == "1 sequence"
    assert _COUNT_UNITS["entries"] == "entry"  # not "entrie" (the plural less its last letter)


@pytest.mark.parametrize("name", ["reference-8x-a100", "roce-24k-h100"])
def test_finding_messages_resolve_their_plurals(name):
    # the app's findings list and the CLI print the messages as they are: "1 head node", not
    # "1 head node(s)", in the finding itself
    d = Design(load_scenario(EXAMPLES / f"{name}.yaml"))
    texts = [f"{f.message} {f.fix or ''}" for f in d.findings]
    assert not [t for t in texts if re.search(r"\w\((e?s)\)", t)]
    if name == "reference-8x-a100":  # 1 head node for 2 roles (hardware.head_nodes 1)
        (short,) = [f for f in d.findings if f.code == "ops-head-nodes-short"]
        assert short.message.startswith("1 head node for ")
        (fit,) = [f for f in d.findings if f.code == "facility-rack-fit"]
        # (15 kW rack limit - 0.1 kW management switch) // 6.5 kW DGX A100 peak = 2 nodes a rack
        assert fit.message.startswith("2 nodes per 42U rack, limited by power")


def test_app_interruptions_chart_names_the_parts_as_the_report_does():
    from gpucluster_lib.charts import reliability as rc

    d = Design(load_scenario(EXAMPLES / "reference-8x-a100.yaml"))
    spec = rc.component_chart(d.reliability).to_dict()
    assert spec["encoding"]["y"]["field"] == "name"  # the bars are labelled with names, not keys
    names = {row["component"]: row["name"] for row in spec["datasets"][rc.COMPONENTS]}
    assert names["gpu"] == "GPU" and names["hbm"] == "GPU memory (HBM)" and names["psu"] == "Power supply (PSU)"


def test_operations_plan_and_cli_resolve_their_plurals(capsys):
    from gpucluster_lib.cli import main

    d = Design(load_scenario(EXAMPLES / "reference-8x-a100.yaml"))
    reasons = [item.reason for item in d.operations.security.items]
    assert not [r for r in reasons if re.search(r"\w\((e?s)\)", r)]
    # one head node, one management switch (SN2700) in the one-node reference
    assert any(r.startswith("the design has a management network of 1 switch and ") for r in reasons)
    assert main(["operations", str(EXAMPLES / "reference-8x-a100.yaml")]) == 0
    out = capsys.readouterr().out
    assert "; 1 head node (2 recommended)" in out and not re.search(r"\w\((e?s)\)", out)


@pytest.mark.parametrize("seconds, text", [
    (12.34, "12.3 s"), (1234.0, "1,234 s"), (0.00544, "5.44 ms"), (8.25e-05, "82.5 µs"), (0.0, "0 s"),
    (0.1, "0.1 s"), (2.5e-8, "25 ns"),
])
def test_durations_read_without_powers_of_ten(seconds, text):
    from gpucluster_lib.formatting import format_duration

    assert format_duration(seconds) == text


def test_dataset_sources_write_token_counts_in_words():
    from gpucluster_lib.facility.storage import dataset_bytes
    from gpucluster_lib.scenario import from_dict

    s = from_dict({"model": {"preset": "llama3-8b"}, "hardware": {"server": "dgx-h100", "nodes": 1},
                   "training": {"tokens": 2e10}})
    _, _, source = dataset_bytes(s)
    # 2 x 10^10 tokens: below 10^12, so written out with separators
    assert source.startswith("20,000,000,000 tokens x ") and "e+" not in source
    # a fractional count is a whole count of tokens: 1,234,567,890.5 rounds to 1,234,567,890 (half to even)
    s = from_dict({"model": {"preset": "llama3-8b"}, "hardware": {"server": "dgx-h100", "nodes": 1},
                   "training": {"tokens": 1234567890.5}})
    assert dataset_bytes(s)[2].startswith("1,234,567,890 tokens x ")


@pytest.mark.parametrize("value, text", [(9.9999e-5, "0.0001"), (9.995e-5, "0.0001"), (2e-9, "2 x 10^-9"),
                                         (1e-9, "10^-9")])
def test_tiny_numbers_in_words(value, text):
    # 9.9999e-5 has three significant figures 1.00e-4, which Python writes "0.0001" (no exponent to split)
    from gpucluster_lib.inference.queueing import percentile_label

    assert number_words(value) == text
    assert percentile_label(value) == "p" + text


def test_a_scenario_value_just_below_1e_4_loads_or_is_refused_cleanly():
    from gpucluster_lib.errors import GpuClusterError
    from gpucluster_lib.scenario import from_dict

    try:
        from_dict({"model": {"preset": "llama3-8b"}, "hardware": {"server": "dgx-h100", "nodes": 1},
                   "inference": {"ttft_slo_s": 0.0000999999, "slo_percentile": 0.0000999999}})
    except GpuClusterError:
        pass
