"""Scenario loading: every section, every error branch names the key path and the fix."""

from __future__ import annotations

import subprocess
import sys

import pytest

from gpucluster_lib import ScenarioError, UnknownIdError, dumps, load_scenario, loads
from gpucluster_lib.catalog import load_catalog
from gpucluster_lib.hardware.resolve import resolve_hardware
from gpucluster_lib.network.topology import fabric_gbps_per_gpu
from gpucluster_lib.scenario import field_docs, parse_redundancy


def test_examples_load(examples):
    names = {load_scenario(p).name for p in examples}
    assert {"Reference 8x A100 rack", "GPT-3 175B on 1024 A100", "Llama 3 70B on 512 H100"} <= names


def test_round_trip_through_yaml(examples):
    for p in examples:
        s = load_scenario(p)
        assert loads(dumps(s)) == s


def test_defaults_when_sections_are_missing():
    s = loads("name: minimal")
    assert s.facility.pue == 1.3 and s.network.topology == "fat-tree" and s.parallelism.auto is False


def test_shorthands():
    s = loads("model: llama2-70b\nparallelism: auto")
    assert s.model.preset == "llama2-70b"
    assert s.parallelism.auto is True


@pytest.mark.parametrize(
    ("text", "exc", "match"),
    [
        ("hardware: {nodes: -4}", ScenarioError, r"^hardware\.nodes: must be a positive integer, got -4$"),
        ("hardware: {nodes: 2.5}", ScenarioError, r"^hardware\.nodes: must be an integer, got 2.5$"),
        ("hardware: {nodes: many}", ScenarioError, r"hardware\.nodes: must be an integer, got 'many'"),
        ("hardwre: {nodes: 4}", ScenarioError, r"^hardwre: unknown key; did you mean 'hardware'\?"),
        ("hardware: {nodez: 4}", ScenarioError, r"^hardware\.nodez: unknown key; did you mean 'nodes'\?"),
        ("facility: {pue: 0.9}", ScenarioError, r"^facility\.pue: must be at least 1, got 0\.9$"),
        # a choice field names its choices in words and the value as YAML writes it (not Python's True)
        ("facility: {cooling: water}", ScenarioError, r"^facility\.cooling: must be one of air, rear_door or liquid, not 'water'$"),
        ("training: {param_gather_precision: true}", ScenarioError,
         r"^training\.param_gather_precision: must be one of fp32, bf16 or fp16, not true$"),
        ("costs: {facility_model: null}", ScenarioError, r"^costs\.facility_model: must be one of build or colocation, not null$"),
        ("network: {topology: fattree}", ScenarioError, r"single-switch, not 'fattree' \(did you mean 'fat-tree'\?\)$"),
        ("network: {oversubscription: 0.5}", ScenarioError, r"network\.oversubscription: must be at least 1, got 0\.5$"),
        ("parallelism: {zero_stage: 4}", ScenarioError, r"parallelism\.zero_stage: must be at most 3, got 4"),
        ("parallelism: {sequence_parallel: 'yes'}", ScenarioError, r"sequence_parallel: must be true or false"),
        ("training: {precision: fp4}", ScenarioError, r"^training\.precision: must be one of bf16, fp16, fp8, tf32 or fp32, not 'fp4'"),
        ("training: {tokens: lots}", ScenarioError, r"training\.tokens: must be a number, got 'lots'"),
        # a YAML boolean or null where a number is expected is named as YAML writes it, in words (not True/None)
        ("parallelism: {first_stage_layers: true}", ScenarioError,
         r"^parallelism\.first_stage_layers: must be an integer, got true \(a true/false value\)$"),
        ("hardware: {nodes: false}", ScenarioError, r"^hardware\.nodes: must be an integer, got false \(a true/false value\)$"),
        ("training: {tokens: true}", ScenarioError, r"^training\.tokens: must be a number, got true \(a true/false value\)$"),
        ("training: {flash_attention: null}", ScenarioError,
         r"^training\.flash_attention: must be true or false, got null \(no value\)$"),
        ("hardware: [1, 2]", ScenarioError, r"^hardware: must be a mapping"),
        ("- a\n- b", ScenarioError, r"top level must be a mapping"),
        ("name: [unclosed", ScenarioError, r"not valid YAML at line 1"),
        ("hardware: {parts: {psus: {count: 2, rating_w: 2000, redundancy: '0+2'}}}", ScenarioError,
         r"hardware\.parts\.psus\.redundancy: '0\+2' leaves no usable supply"),
        ("hardware: {parts: {psus: {count: 4, rating_w: 3000, redundancy: '2+1'}}}", ScenarioError,
         r"'2\+1' does not add up to the node's 4 power supplies"),
        ("hardware: {parts: {psus: {count: 4, redundancy: 'three plus one'}}}", ScenarioError,
         r"must be written N\+M"),
        ("hardware: {parts: {psus: {count: 4, rating_w: -3000}}}", ScenarioError,
         r"hardware\.parts\.psus\.rating_w: must be a positive number, got -3,000$"),
        ("hardware: {nodes: 4, gpus: 30, gpus_per_node: 8}", ScenarioError, r"hardware\.gpus: 30 GPUs do not equal"),
        ("inference: {requests_per_s: 5, tokens_per_s: 100}", ScenarioError, r"inference.tokens_per_s: give a request rate or a token rate, not both"),
    ],
)
def test_bad_scenarios(text, exc, match):
    with pytest.raises(exc, match=match):
        loads(text)


def test_missing_file():
    with pytest.raises(ScenarioError, match="scenario file not found"):
        load_scenario("no/such/file.yaml")


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("hardware: {accelerator: h100-sxm-80gb}", r"hardware\.accelerator: unknown accelerator 'h100-sxm-80gb'; did you mean 'h100-sxm5-80gb'"),
        ("hardware: {server: dgx-h1000}", r"hardware\.server: unknown server 'dgx-h1000'; did you mean 'dgx-h100'"),
    ],
)
def test_unknown_catalogue_ids_name_the_closest(text, match):
    with pytest.raises(UnknownIdError, match=match):
        resolve_hardware(loads(text))


def test_resolve_hardware_rules():
    cat = load_catalog()
    # DGX H100 User Guide: 8x H100 SXM5 80GB per system
    hw = resolve_hardware(loads("hardware: {server: dgx-h100, nodes: 64}"), cat)
    assert (hw.accelerator_id, hw.gpus_per_node, hw.gpus) == ("h100-sxm5-80gb", 8, 512)
    hw = resolve_hardware(loads("hardware: {accelerator: a100-sxm4-80gb, gpus: 1024}"), cat)
    assert hw.nodes == 128
    with pytest.raises(ScenarioError, match=r"hardware\.gpus: 1001 GPUs is not a multiple of 8 GPUs per node; use 1000 or 1008"):
        resolve_hardware(loads("hardware: {accelerator: a100-sxm4-80gb, gpus: 1001}"), cat)
    with pytest.raises(ScenarioError, match=r"hardware\.accelerator: server 'dgx-h100' comes with 'h100-sxm5-80gb'"):
        resolve_hardware(loads("hardware: {server: dgx-h100, accelerator: a100-sxm4-80gb}"), cat)
    with pytest.raises(ScenarioError, match=r"hardware\.gpus_per_node: server 'dgx-h100' has 8 GPUs, not 4"):
        resolve_hardware(loads("hardware: {server: dgx-h100, gpus_per_node: 4}"), cat)
    with pytest.raises(ScenarioError, match="empty chassis: name the accelerator"):
        resolve_hardware(loads("hardware: {server: generic-4u-8gpu-pcie}"), cat)


def test_fabric_bandwidth_from_nics():
    cat = load_catalog()
    # DGX H100 User Guide: 8x ConnectX-7 400 Gb/s compute ports for 8 GPUs -> 400 Gb/s per GPU
    s = loads("hardware: {server: dgx-h100}\nnetwork: {nic: connectx-7-ndr, nics_per_node: 8}")
    assert fabric_gbps_per_gpu(s, resolve_hardware(s, cat), cat) == pytest.approx(400)
    s = loads("hardware: {server: dgx-h100}\nnetwork: {inter_node_gbps_per_gpu: 100}")
    assert fabric_gbps_per_gpu(s, resolve_hardware(s, cat), cat) == 100


def test_redundancy_parser():
    assert parse_redundancy("3+1") == (3, 1)
    assert parse_redundancy(" 4 + 2 ") == (4, 2)
    with pytest.raises(ScenarioError, match="N\\+M"):
        parse_redundancy("N+1")


def test_replace_revalidates():
    s = loads("hardware: {nodes: 4}")
    assert s.replace(hardware__nodes=8).hardware.nodes == 8
    with pytest.raises(ScenarioError, match=r"hardware\.nodes: must be a positive integer, got 0"):
        s.replace(hardware__nodes=0)


def test_field_docs_cover_every_section():
    paths = {p for p, _, _ in field_docs()}
    for key in ("hardware.accelerator", "network.topology", "parallelism.tensor", "facility.pue",
                "inference.ttft_slo_s", "costs.years", "reliability.restart_minutes", "model.kv_heads"):
        assert key in paths


def test_cli_scenario_error_exits_2_with_message(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("hardware: {nodes: -4}\n")
    out = subprocess.run([sys.executable, "-m", "gpucluster_lib", "report", str(bad), "-o", str(tmp_path / "r.html")],
                         capture_output=True, text=True)
    assert out.returncode == 2
    assert "hardware.nodes: must be a positive integer, got -4" in out.stderr
    assert "Traceback" not in out.stderr


def test_scenario_reference_doc_is_up_to_date(root):
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_docs", root / "scripts" / "make_docs.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert (root / "docs" / "scenario.md").read_text() == mod.render(), "run: python scripts/make_docs.py"
