"""Hostile and malformed files are refused fast, with a short message and no traceback.

Each case is one a fuzzing run or a visitor produced: reproduced here, then the refusal checked.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import time
import typing

import pytest

from gpucluster_lib.catalog import (
    MAX_CATALOG_BYTES,
    MAX_CELL_CHARS,
    catalog_from_bytes,
    load_catalog,
)
from gpucluster_lib.cli import main
from gpucluster_lib.errors import EXCERPT_CHARS, CatalogError, ScenarioError, excerpt
from gpucluster_lib.scenario import MAX_SCENARIO_BYTES, Scenario, load_scenario, loads
from tests.test_catalog import one_row

COMMANDS = ("estimate", "budget", "topology", "serve", "reliability", "cost")
HW = "hardware: {server: dgx-h100, nodes: 4}\n"

# "billion laughs": 9 aliases per level, 7 levels = 9^7 = 4.8 million strings from 641 bytes
BOMB = ("network:\n  topology: &t9 [&t8 [&t7 [&t6 [&t5 [&t4 [&t3 [lol, lol, lol, lol, lol, lol, lol, lol, lol],\n"
        + "".join(f"    *t{i}, *t{i}, *t{i}, *t{i}, *t{i}, *t{i}, *t{i}, *t{i}],\n" for i in range(3, 8))
        + "    *t8, *t8, *t8, *t8, *t8, *t8, *t8, *t8]\n")


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(list(argv))
    return rc, out.getvalue(), err.getvalue()


def refused(text: str | bytes, match: str) -> ScenarioError:
    t0 = time.perf_counter()
    with pytest.raises(ScenarioError, match=match) as e:
        loads(text, source="s.yaml")
    assert time.perf_counter() - t0 < 0.5  # "refused in well under a second"
    assert len(str(e.value)) < 400  # a short message, whatever the input
    return e.value


# ------------------------------------------------------------------ YAML bombs and limits

def test_alias_bomb_is_refused_before_it_is_expanded():
    assert len(BOMB.encode()) < 700
    refused(BOMB, r"s\.yaml: not valid YAML at line \d+, column \d+: (holds more than 20,000 values once its "
                  r"aliases are expanded|more than 64 aliases)")


def test_alias_bomb_under_hardware_nodes_prints_a_short_line():
    text = BOMB.replace("network:\n  topology:", "hardware:\n  nodes:")
    refused(text, "not valid YAML")


def test_a_few_aliases_are_fine():
    s = loads("x: &gpus 8\nhardware: {server: dgx-h100, nodes: 4}\n".replace("x: &gpus 8\n", "")
              + "inference: {input_tokens: &n 512, output_tokens: *n}\n")
    assert s.inference.output_tokens == 512


def test_recursive_alias_is_refused():
    refused("name: x\nhardware: &h {parts: {drives: [*h]}}\n", "alias refers to the list or mapping it is inside")


def test_deep_nesting_is_refused_without_recursion_error():
    refused("a: " + "[" * 500 + "]" * 500 + "\n", r"nested more than 20 levels deep")
    refused("a:\n" + "".join("  " * i + f"k{i}:\n" for i in range(1, 60)), r"nested more than 20 levels deep")


def test_size_limit_and_long_strings_are_not_echoed():
    e = refused("name: x\nnetwork: {topology: " + "x" * 10_000_000 + "}\n", r"more than the 65,536")
    assert "xxxx" not in str(e)
    # under the size limit, a long value is quoted as a short excerpt
    e = refused(HW + "network: {topology: " + "x" * 50_000 + "}\n",
                r"network\.topology: must be one of .*, not 'x{48}…' \(50,000 characters\)$")


def test_excerpt_is_short_for_any_value():
    for value in ("y" * 10**6, 10**5000, list(range(10**5)), {"k": 1}, 1e308, b"\x00" * 10**5):
        assert len(excerpt(value)) <= EXCERPT_CHARS + 40


# ------------------------------------------------------------------ encodings and files

BASE = "name: café\n" + HW


@pytest.mark.parametrize(("data", "match"), [
    (BASE.encode("utf-16"), r"^s\.yaml: is UTF-16 text; save it as UTF-8$"),
    (BASE.encode("utf-16-le"), r"holds NUL bytes: a binary file, or UTF-16 text without its byte-order mark"),
    (BASE.encode("utf-32"), "is UTF-32 text"),
    (BASE.encode("latin-1"), r"is not UTF-8 text \(byte 9 cannot be read\); save it as UTF-8"),  # é is byte 9
    (b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)), "holds NUL bytes"),
    (b"\x89PNG\r\n\x1a\n\x00\x00", "holds NUL bytes"),
    ("name: x\x1b[31m\n" + HW, r"control character \(U\+001B\) at character 7: a binary file"),
])
def test_non_utf8_and_binary_files_are_refused_with_the_fix(data, match):
    refused(data, match)


def test_utf8_with_bom_is_read():
    assert loads(b"\xef\xbb\xbf" + BASE.encode(), source="s.yaml").name == "café"


def test_binary_upload_through_the_cli_and_a_directory(tmp_path):
    (tmp_path / "bin.yaml").write_bytes(bytes(range(256)) * 4)
    rc, out, err = cli("budget", str(tmp_path / "bin.yaml"))
    assert rc == 2 and out == "" and "Traceback" not in err and "bin.yaml: holds NUL bytes" in err
    (tmp_path / "folder.yaml").mkdir()
    rc, _, err = cli("cost", str(tmp_path / "folder.yaml"))
    assert rc == 2 and "folder.yaml is a folder, not a scenario file" in err
    big = tmp_path / "big.yaml"
    big.write_text("# " + "x" * MAX_SCENARIO_BYTES + "\n" + HW)
    rc, _, err = cli("budget", str(big))
    assert rc == 2 and "more than the 65,536 a scenario may have" in err


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("text", ["", "\n\n   \n", "# only a comment\n"])
def test_empty_scenario_is_an_error_in_every_command(tmp_path, command, text):
    (tmp_path / "e.yaml").write_text(text)
    rc, out, err = cli(command, str(tmp_path / "e.yaml"), "--json")
    assert rc == 2 and out == ""
    assert err.strip() == (f"gpucluster {command}: error: e.yaml: empty scenario: give at least hardware "
                           "(e.g. hardware: {server: dgx-h100, nodes: 4})")


# ------------------------------------------------------------------ YAML read as a person means it

@pytest.mark.parametrize(("text", "expect"), [
    ("hardware: {nodes: 010}", 10),  # YAML 1.1 read 8 (octal)
    ("hardware: {nodes: 0x10}", 16),
    ("hardware: {nodes: +12}", 12),
])
def test_integers_read_as_written(text, expect):
    assert loads(text).hardware.nodes == expect


def test_numbers_and_words_read_as_written():
    assert loads("training: {tokens: 1e12}").training.tokens == 1e12  # YAML 1.1 read the string '1e12'
    refused("hardware: {nodes: 1:30}", r"hardware\.nodes: must be an integer, got '1:30'$")  # 1.1: 90
    refused("parallelism: {sequence_parallel: yes}", r"sequence_parallel: must be true or false, got 'yes'")
    assert loads("name: no\n" + HW).name == "no"  # the Norway problem: text stays text


@pytest.mark.parametrize(("text", "match"), [
    ("hardware: {nodes: !!int eight}", r"line 1, column 19: 'eight' is not an integer$"),
    ("hardware: {nodes: !!int ''}", r"'' is not an integer$"),
    ("hardware: {nodes: " + "9" * 4301 + "}", r"an integer of 4,301 digits is too large$"),
    ("hardware: {nodes: !!float x}", r"'x' is not a number$"),
    ("hardware: {nodes: !!bool maybe}", r"'maybe' is not true or false$"),
    ("name: !!binary aGVsbG8=", r"the tag 'tag:yaml.org,2002:binary' is not allowed"),
    ("name: !!python/object:os.system x", r"is not allowed in a scenario"),
    ("name: 2024-01-01\n" + HW, None),  # a date is text in the core schema
])
def test_tags_and_huge_integers_are_refused_at_their_line(text, match):
    if match is None:
        assert loads(text).name == "2024-01-01"
    else:
        refused(text, match)


def test_duplicate_keys_are_refused():
    refused("hardware: {server: dgx-h100, nodes: 8}\nhardware: {nodes: 2}\n",
            r"line 2, column 1: duplicate key 'hardware' \(first on line 1\); give each key once$")
    refused("hardware: {nodes: 8, nodes: 2}", r"duplicate key 'nodes'")
    refused("{[1, 2]: x}", "a key must be a name")


# ------------------------------------------------------------------ bounds on every numeric field

def _numeric_fields(cls: type = Scenario, prefix: str = "") -> list[tuple[str, dataclasses.Field, typing.Any]]:
    out = []
    hints = typing.get_type_hints(cls)
    for fl in dataclasses.fields(cls):
        if fl.metadata.get("internal"):
            continue
        tp = hints[fl.name]
        inner = [a for a in typing.get_args(tp) if dataclasses.is_dataclass(a)] or (
            [tp] if dataclasses.is_dataclass(tp) else [])
        inner += [a for a in typing.get_args(tp) if dataclasses.is_dataclass(a) is False
                  and typing.get_origin(a) is list and dataclasses.is_dataclass(typing.get_args(a)[0])]
        if typing.get_origin(tp) is list and dataclasses.is_dataclass(typing.get_args(tp)[0]):
            out += _numeric_fields(typing.get_args(tp)[0], f"{prefix}{fl.name}[].")
        elif inner and dataclasses.is_dataclass(inner[0]):
            out += _numeric_fields(inner[0], f"{prefix}{fl.name}.")
        else:
            args = [a for a in typing.get_args(tp) if a is not type(None)] or [tp]
            for a in args:
                if a in (int, float) or (typing.get_origin(a) in (list, dict) and typing.get_args(a)[-1] in (int, float)):
                    out.append((prefix + fl.name, fl, tp))
                    break
    return out


def test_every_numeric_field_has_a_lower_and_an_upper_bound():
    fields = _numeric_fields()
    assert len(fields) > 100

    def bounded(md) -> bool:
        return bool({"le", "lt"} & set(md)) and bool({"ge", "gt"} & set(md))

    # a mapping with a rule per key (training.efficiency) is bounded when every key's rule is
    missing = [p for p, fl, _ in fields
               if not (all(bounded(rule) for rule in fl.metadata["keys"].values()) if "keys" in fl.metadata
                       else bounded(fl.metadata))]
    assert missing == [], ("scenario fields without physical bounds: give each a lower (ge/gt) and an upper "
                           f"(le/lt) bound in its f(...) metadata: {missing}")


@pytest.mark.parametrize(("text", "match"), [
    ("hardware: {server: dgx-h100, nodes: 1.0e+300}", r"^hardware\.nodes: must be an integer, got 1e\+300$"),
    ("hardware: {server: dgx-h100, nodes: 8.0}", r"must be an integer, got 8\.0: write it without a decimal point"),
    ("hardware: {server: dgx-h100, nodes: 1000000000000000000000}",  # 10^21
     r"^hardware\.nodes: must be at most 100,000, got 10\^21$"),
    ("model: {preset: llama3-8b, ffn_hidden_size: 1.0e+308}", r"model\.ffn_hidden_size: must be an integer"),
    ("model: {preset: llama3-8b, ffn_hidden_size: 100000000}", r"model\.ffn_hidden_size: must be at most 1,048,576"),
    ("model: {preset: llama3-8b, layers: 100000}", r"model\.layers: must be at most 2,048, got 100,000$"),
    ("reliability: {restart_minutes: 416537350}", r"reliability\.restart_minutes: must be at most 10,080 min"),
    ("network: {storage_oversubscription: 1e308}", r"network\.storage_oversubscription: must be at most 64, got 10\^308"),
    ("reliability: {checkpoint_write_gbps: 1e-300}", r"checkpoint_write_gbps: must be at least 0\.001 GB/s"),
    ("reliability: {component_rates: {gpu: 1e300}}", r"reliability\.component_rates\.gpu: must be at most 1,000"),
    ("costs: {prices: {qm9700: -5}}", r"costs\.prices\.qm9700: must be at least 0"),
    ("training: {tokens: .inf}", r"training\.tokens: must be a finite number, got inf"),
    ("training: {tokens: .nan}", r"training\.tokens: must be a finite number, got nan"),
    ("name: " + "n" * 300, r"^name: must be at most 200 characters, got 300$"),
    ("catalog: [" + ", ".join(["a_cpus.csv"] * 20) + "]", r"^catalog: must have at most 16 items, got 20$"),
])
def test_absurd_values_are_refused_with_the_bound(text, match):
    refused(text + "\n", match)


def test_the_examples_sit_inside_the_bounds(examples):
    for p in examples:
        load_scenario(p)


# ------------------------------------------------------------------ catalogue overlays

def test_excel_utf8_bom_csv_is_accepted():
    cat = catalog_from_bytes("accelerators", b"\xef\xbb\xbf" + one_row("accelerators").encode(), "mine.csv")
    assert cat.accelerator("x1")["tdp_w"] == 700


@pytest.mark.parametrize(("content", "match"), [
    (one_row("accelerators", name="Xé").encode("latin-1"), r"mine\.csv: is not UTF-8 text \(byte \d+ cannot be "
                                                            r"read\); save it as UTF-8"),
    (one_row("accelerators").encode("utf-16"), r"mine\.csv: is UTF-16 text"),
    (one_row("accelerators", name="X\x001").encode(), r"holds NUL bytes"),
    (one_row("accelerators", name="X\x07").encode(), r"control character \(U\+0007\)"),
    (one_row("accelerators", notes="n" * 5000).encode(), rf"row 2, column 'notes': a cell of 5,000 "
                                                          rf"characters, more than the {MAX_CELL_CHARS:,}"),
    (one_row("accelerators", notes="n" * 131_073).encode(), rf"a cell longer than {MAX_CELL_CHARS:,} characters"),
    (b"id\n" + b"x" * (MAX_CATALOG_BYTES + 1), "more than the 2,097,152 allowed"),
    (b'id,name\n"x1,"unterminated\n', None),
])
def test_catalogue_encodings_cells_and_sizes(content, match):
    if match is None:  # malformed quoting is a message, not a traceback
        with pytest.raises(CatalogError):
            catalog_from_bytes("accelerators", content, "mine.csv")
        return
    with pytest.raises(CatalogError, match=match):
        catalog_from_bytes("accelerators", content, "mine.csv")


def test_catalogue_folder_and_missing_file_are_refused_by_name(tmp_path):
    (tmp_path / "my_accelerators.csv").mkdir()
    with pytest.raises(CatalogError, match=r"^my_accelerators\.csv: is a folder, not a CSV file$"):
        load_catalog([tmp_path / "my_accelerators.csv"])
    with pytest.raises(CatalogError, match=r"^no_accelerators\.csv: file not found$"):
        load_catalog([tmp_path / "no_accelerators.csv"])


def test_catalogue_cache_is_keyed_by_content(tmp_path):
    path = tmp_path / "my_accelerators.csv"
    path.write_text(one_row("accelerators"))
    first = load_catalog([path])
    assert load_catalog([path]) is first  # same bytes: the same catalogue (stages are kept)
    path.write_text(one_row("accelerators", tdp_w="-5"))  # edited in place, same path
    with pytest.raises(CatalogError, match=r"row 2, column 'tdp_w': negative value -5"):
        load_catalog([path])


# ------------------------------------------------------------------ internal errors fixed at their source

REF = "gpucluster_lib/data/scenarios/reference-8x-a100.yaml"


def test_fp16_training_on_v100_uses_its_fp16_peak(tmp_path):
    # V100 SXM2 has no BF16 units; fp16 was refused with "no dense bf16 peak ... choose one of: fp16, fp32"
    (tmp_path / "v.yaml").write_text("model: megatron-1.7b\nhardware: {server: dgx-1-v100, nodes: 2}\n"
                                     "training: {precision: fp16, tokens: 1.0e+9}\n")
    rc, out, err = cli("estimate", str(tmp_path / "v.yaml"), "--json")
    assert rc == 0, err
    d = json.loads(out)
    # MFU is model FLOP/s per GPU over the dense FP16 tensor peak: 125 TFLOP/s (NVIDIA V100 datasheet)
    assert d["mfu"] == pytest.approx(d["model_tflops_per_gpu"] / 125.0, rel=1e-9)
    (tmp_path / "v.yaml").write_text("model: megatron-1.7b\nhardware: {server: dgx-1-v100, nodes: 2}\n"
                                     "training: {precision: bf16, tokens: 1.0e+9}\n")
    rc, _, err = cli("estimate", str(tmp_path / "v.yaml"))
    assert rc == 2 and "no dense bf16 peak" in err and "fp16" in err  # bf16 is still refused, with the choice


@pytest.mark.parametrize("preset", ["resnet50", "vit-b16"])
def test_vision_presets_run_in_every_command(tmp_path, preset):
    (tmp_path / "v.yaml").write_text(f"model: {preset}\nhardware: {{server: dgx-h100, nodes: 2}}\n"
                                     "training: {epochs: 90, dataset_images: 1.28e+6}\ninference: {images_per_s: 1000}\n")
    for command in COMMANDS:
        rc, out, err = cli(command, str(tmp_path / "v.yaml"), "--json")
        assert rc == 0, (command, err)
    r = json.loads(cli("reliability", str(tmp_path / "v.yaml"), "--json")[1])
    params = {"resnet50": 25.6e6, "vit-b16": 86.6e6}[preset]  # He 2016 Table 1; Dosovitskiy 2021 Table 1
    assert r["checkpoint_bytes"] == pytest.approx(params * 14, rel=0.01)  # 14 B per parameter (Adam, bf16)
    assert r["training_days_expected"] > r["training_days_ideal"] > 0


@pytest.mark.parametrize("accelerator", ["tpu-v4", "mi250x"])
def test_serving_on_an_accelerator_without_a_scaleup_figure(tmp_path, accelerator):
    (tmp_path / "s.yaml").write_text(f"model: llama3-8b\nhardware: {{accelerator: {accelerator}, nodes: 2}}\n"
                                     "inference: {requests_per_s: 1}\n")
    rc, out, err = cli("serve", str(tmp_path / "s.yaml"), "--json")
    assert rc == 0, err  # was TypeError in the replica hardware
    assert "inference-no-scaleup-bandwidth" in [f["code"] for f in json.loads(out)["findings"]]


def test_one_power_supply_with_a_spare_is_a_message_naming_the_supplies():
    from gpucluster_lib.ui import tab_power
    from gpucluster_lib.ui.common import AppState

    p = tab_power.PowerPanel(AppState.from_path(REF))
    p.mode.value = "Build from parts"
    p.psu_spares.value = "two (N+2)"
    p.psu_count.value = 1  # was "must be written N+M, got '-1+2'"
    assert "1 power supply cannot keep 2 as spares" in p.msg.value
    assert "-1+2" not in p.msg.value and "Unexpected" not in p.msg.value


def test_mla_fields_without_a_kv_latent_are_refused():
    # found by benchmarks/fuzz_scenarios.py: v_head_dim 320 on Llama 3 8B (no MLA) made the QKV GEMM
    # 4096 + 2 x 1024 + 4096 - 32 x 320 = 0 wide, and the GEMM curve raised ValueError
    from gpucluster_lib.design import Design

    d = Design(loads("model: {preset: llama3-8b, v_head_dim: 320}\n" + HW))
    with pytest.raises(ScenarioError, match=r"^model\.v_head_dim: applies to multi-head latent attention only"):
        assert d.training is None
