"""Bad input to the newer scenario keys and commands: one message naming the field and the fix.

Every expected message here was written by hand from what a user needs to read (the field,
what is wrong with the value, what to do); each case used to crash with a traceback or to
print an unclear message (Python's None, a blamed key the user never set).
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from gpucluster_lib.calibration.nccl import CalibrationError
from gpucluster_lib.calibration.run import calibrate
from gpucluster_lib.cli import main
from gpucluster_lib.errors import ScenarioError
from gpucluster_lib.scenario import ParallelismSpec
from gpucluster_lib.training.plans import resolve_layout

DATA = Path(__file__).parent / "data"
NCCL = DATA / "nccl_all_reduce_2x8_h100_a3mega.txt"


# ----------------------------------------------------------------- pipeline stage layouts (96 layers)

@pytest.mark.parametrize(("par", "pp", "message"), [
    ({"pipeline_layers": [12] * 8, "first_stage_layers": 10}, 8,
     "parallelism.pipeline_layers: gives every stage's layers, so the first and last stages' layer counts cannot "
     "be set as well; keep one or the other"),
    ({"first_stage_layers": 3}, 1,
     "parallelism.first_stage_layers: sets the layers of one pipeline stage, but the pipeline has a single stage; "
     "raise the pipeline parallelism to 2 or more, or remove it"),
    ({"first_stage_layers": 200}, 8,
     "parallelism.first_stage_layers: 200 on the first stage is more than the model's 96 layers; lower it"),
    # 2 stages: first + last = 40 + 40 = 80 of 96
    ({"first_stage_layers": 40, "last_stage_layers": 40}, 2,
     "parallelism.first_stage_layers: with 2 stages the first and last stages hold every layer, but 40 on the "
     "first stage and 40 on the last stage add up to 80, not the model's 96; make them add up to 96"),
    # 8 stages, the last given: the other 7 need one layer each, so the last holds at most 96 - 7 = 89
    ({"last_stage_layers": 96}, 8,
     "parallelism.last_stage_layers: 96 on the last stage leaves a stage with no layers; each of the 8 stages "
     "needs at least one layer, so it may hold at most 89"),
    # both given on 8 stages: the 6 middle stages need one each, so 96 - 6 = 90 for the two
    ({"first_stage_layers": 50, "last_stage_layers": 45}, 8,
     "parallelism.first_stage_layers: 50 on the first stage and 45 on the last stage leaves a stage with no "
     "layers; each of the 8 stages needs at least one layer, so the first and last stages together may hold at "
     "most 90"),
    ({"last_stage_layers": 0}, 8,
     "parallelism.last_stage_layers: is 0, but every pipeline stage needs at least one layer; give 1 or more, "
     "or remove it"),
    ({"pipeline_layers": [16] * 6 + [0, 0]}, 8,
     "parallelism.pipeline_layers: gives stage 7 of 8 no layers; every stage needs at least one layer (use fewer "
     "pipeline stages)"),
])
def test_stage_layout_messages(par, pp, message):
    with pytest.raises(ScenarioError) as err:
        resolve_layout(ParallelismSpec(pipeline=pp, **par), 96, pp)
    assert str(err.value) == message


def test_a_valid_uneven_layout_still_resolves():
    # 96 layers, first 10 and last 10 on 8 stages: 76 over the 6 middle stages, 13 + 13 + 13 + 13 + 12 + 12
    assert resolve_layout(ParallelismSpec(pipeline=8, first_stage_layers=10, last_stage_layers=10), 96, 8) == \
        (10, 13, 13, 13, 13, 12, 12, 10)


# ----------------------------------------------------------------- gpucluster calibrate

def _calibrate(capsys, *argv: str) -> str:
    rc = main(["calibrate", *argv])
    captured = capsys.readouterr()
    assert rc == 2 and captured.out == "" and "Traceback" not in captured.err
    return captured.err.strip()


def test_calibrate_output_paths_are_checked(tmp_path, capsys):
    missing = tmp_path / "no-such-folder" / "lab.yaml"
    assert _calibrate(capsys, "--name", "lab", "--nccl", str(NCCL), "-o", str(missing)) == (
        f"gpucluster calibrate: error: -o: cannot write '{missing}' (No such file or directory); choose a file in "
        "a folder that exists and that you can write to")
    assert _calibrate(capsys, "--name", "lab", "--nccl", str(NCCL), "--chart", str(tmp_path / "fit.bmp")) == (
        "gpucluster calibrate: error: --chart: cannot save a chart as 'fit.bmp'; end the file name in .svg, .png "
        "or .html")
    assert not list(tmp_path.iterdir())   # the chart check comes before the profile is written
    # a name with folders in it would write NAME.yaml outside the working folder
    assert _calibrate(capsys, "--name", "../../etc/lab", "--nccl", str(NCCL)) == (
        "gpucluster calibrate: error: --name: '../../etc/lab' is not a profile name; use letters, digits, '-', '_' "
        "and '.' only, such as my-cluster (the file goes to NAME.yaml, or where -o says)")


def test_calibrate_output_folder_gets_name_yaml(tmp_path, capsys):
    assert main(["calibrate", "--name", "lab", "--nccl", str(NCCL), "-o", str(tmp_path), "--date", "2026-12-01"]) == 0
    assert (tmp_path / "lab.yaml").is_file()


def test_calibrate_option_messages(tmp_path, capsys):
    assert _calibrate(capsys, "--name", "lab", "--nccl", f"pcie={NCCL}") == (
        "gpucluster calibrate: error: --nccl: unknown link level 'pcie'; use nvlink=FILE or fabric=FILE, or the "
        "file alone")
    # checked before the file is read: the old message said the rank count was unknown
    assert _calibrate(capsys, "--name", "lab", "--nccl", str(NCCL), "--ranks", "-3") == (
        "gpucluster calibrate: error: --ranks: a collective needs at least 2 ranks, got -3")


def test_calibrate_gemm_table_too_small_or_above_the_peak():
    one = pd.DataFrame({"m": [4096], "n": [4096], "k": [4096], "dtype": ["bf16"], "tflops": [700.0]})
    with pytest.raises(CalibrationError) as err:
        calibrate("lab", gemm=one, peaks={"bf16": 989.4})
    # eff_max, m_half, n_half, k_half and the fixed time: 5 parameters
    assert str(err.value) == ("GEMM table: 1 bf16 shape (m, n, k); the curve has 5 parameters, so measure at least "
                              "5 different shapes, small and large")
    dims = [256, 512, 1024, 2048, 4096, 8192]
    fast = pd.DataFrame({"m": dims, "n": dims, "k": dims, "dtype": "bf16", "tflops": [300, 500, 700, 800, 2100, 900]})
    with pytest.raises(CalibrationError) as err:
        calibrate("lab", gemm=fast, peaks={"bf16": 989.4})
    # the fifth data row (CSV row 6 after the header) claims 2,100 TFLOP/s on a 989.4 TFLOP/s device
    assert str(err.value) == ("GEMM table, row 6: 2,100 TFLOP/s is above the dense bf16 peak of 989.4 TFLOP/s; give "
                              "the measured device's peak (--accelerator ID or --peak bf16=TFLOPS)")


# ----------------------------------------------------------------- gpucluster report: checked before any kernel runs

REFERENCE = Path(__file__).resolve().parent.parent / "gpucluster_lib/data/scenarios/reference-8x-a100.yaml"


def _report(capsys, *argv: str) -> str:
    rc = main(["report", *argv])
    captured = capsys.readouterr()
    assert rc == 2 and "Traceback" not in captured.err
    return captured.err.strip()


def test_report_output_paths_are_checked_first(tmp_path, capsys):
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    target = blocked / "r.html"   # a folder that cannot be made: its parent is a file
    assert _report(capsys, str(REFERENCE), "-o", str(target)) == (
        f"gpucluster report: error: -o: cannot write '{target}' ('{blocked}' is a file, not a folder); choose a file "
        "in a folder you can write to")
    assert _report(capsys, str(REFERENCE), str(REFERENCE), "-o", str(blocked), "--no-progress") == (
        f"gpucluster report: error: -o: '{blocked}' is a file, but several scenarios write one report each into a "
        "folder; give a folder name (OUTDIR)")
    assert _report(capsys, str(REFERENCE), "-o", "out.pdf") == (
        "gpucluster report: error: -o: give the HTML file to write, such as out.html; --pdf writes the PDF beside it")
    assert _report(capsys, str(REFERENCE), "-o", "out.html", "--timeout", "-5") == (
        "gpucluster report: error: --timeout: must be a positive number of seconds per notebook cell, got -5")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]


# ----------------------------------------------------------------- a traffic target beyond any cluster

def test_a_fleet_of_millions_of_nodes_is_a_finding_not_minutes_of_rack_packing():
    from gpucluster_lib.design import Design
    from gpucluster_lib.scenario import from_dict

    s = from_dict({"model": {"preset": "llama3-8b"}, "hardware": {"server": "dgx-h100", "nodes": 2},
                   "inference": {"requests_per_s": 1.0e8}})   # the schema's largest target
    serving = Design(s).serving
    # 10^8 requests/s on 8-GPU nodes: far above the 100,000 nodes that hardware.nodes allows
    assert serving.nodes > 100_000
    found = {f.code: f for f in serving.findings}
    assert found["inference-fleet-beyond-facility-model"].message == (
        f"the traffic target needs {serving.nodes:,} nodes, more than the 100,000 nodes a scenario's cluster "
        "may have; its racks and power are a quick estimate of the compute nodes only")
    assert found["inference-fleet-beyond-facility-model"].field == "inference.requests_per_s"
    assert found["inference-fleet-beyond-facility-model"].fix == (
        "lower the traffic target (requests per second), or serve more per GPU: a lower precision, a larger batch, "
        "a faster accelerator")
    assert "inference-quick-estimate" in found


def test_the_fleet_finding_names_the_target_that_is_set():
    from gpucluster_lib.design import Design
    from gpucluster_lib.scenario import from_dict

    s = from_dict({"model": {"preset": "llama3-8b"}, "hardware": {"server": "dgx-h100", "nodes": 2},
                   "inference": {"tokens_per_s": 1.0e10}})   # the schema's largest tokens/s target
    found = {f.code: f for f in Design(s).serving.findings}["inference-fleet-beyond-facility-model"]
    assert found.field == "inference.tokens_per_s" and "(tokens per second)" in found.fix


def test_the_fleet_node_limit_is_the_scenario_limit_on_nodes():
    from gpucluster_lib.errors import ScenarioError
    from gpucluster_lib.inference.fleet import MAX_FACILITY_NODES
    from gpucluster_lib.scenario import from_dict

    assert MAX_FACILITY_NODES == 100_000          # docs/scenario.md: hardware.nodes, 0 < x <= 100,000
    from_dict({"hardware": {"nodes": MAX_FACILITY_NODES}})
    with pytest.raises(ScenarioError, match="hardware.nodes"):
        from_dict({"hardware": {"nodes": MAX_FACILITY_NODES + 1}})


# ----------------------------------------------------------------- gpucluster sweep -o

def test_sweep_output_folder_is_checked(tmp_path, capsys):
    sweep = tmp_path / "s.yaml"
    sweep.write_text(f"base: {REFERENCE}\naxes:\n  hardware.nodes: [1, 2]\n")
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    for out, message in [
        (blocked, f"-o: '{blocked}' is a file; a sweep writes its results into a folder: give a folder name (OUTDIR)"),
        (blocked / "sub", f"-o: cannot write into '{blocked / 'sub'}' (Not a directory); choose a folder you can "
                          "write to"),
    ]:
        rc = main(["sweep", str(sweep), "-o", str(out), "--no-progress"])
        err = capsys.readouterr().err
        assert rc == 2 and err.strip() == f"gpucluster sweep: error: {message}"


def test_a_checkpoint_target_below_a_second_is_refused():
    from gpucluster_lib.scenario import from_dict

    # 1 ns for a checkpoint sized the storage as about 10^8 appliances, racked one by one (minutes, gigabytes)
    with pytest.raises(ScenarioError) as err:
        from_dict({"hardware": {"server": "dgx-h100", "nodes": 2}, "reliability": {"checkpoint_target_s": 1e-9}})
    assert str(err.value) == "reliability.checkpoint_target_s: must be at least 1 s, got 10^-9"


def test_a_tab_in_the_indentation_says_so():
    from gpucluster_lib.scenario import loads

    with pytest.raises(ScenarioError) as err:
        loads("name: x\nhardware:\n\tnodes: 2\n")
    # PyYAML's own words were "found character '\t' that cannot start any token"
    assert str(err.value).endswith("not valid YAML at line 3, column 1: a tab character; YAML indents with spaces "
                                   "only: replace the tabs with spaces")


# ----------------------------------------------------------------- the plan search with a fixed stage layout

@pytest.mark.parametrize(("par", "message"), [
    # two stages given, the first empty: the layout's own message, not "no valid plan"
    ({"pipeline_layers": [0, 32]},
     "parallelism.pipeline_layers: gives stage 1 of 2 no layers; every stage needs at least one layer (use fewer "
     "pipeline stages)"),
    ({"pipeline": 4, "first_stage_layers": 40},
     "parallelism.first_stage_layers: 40 on the first stage is more than the model's 32 layers; lower it"),
    # no pipeline size fixed: no pipeline size takes 40 of 32 layers on the first stage, so the layout's
    # own message (was "no valid plan ... with the fixed fields first_stage_layers=40")
    ({"first_stage_layers": 40},
     "parallelism.first_stage_layers: 40 on the first stage is more than the model's 32 layers; lower it"),
])
def test_the_plan_search_names_what_is_wrong_with_a_fixed_layout(par, message):
    from gpucluster_lib.scenario import from_dict
    from gpucluster_lib.training import estimate

    s = from_dict({"model": {"preset": "llama3-8b"}, "hardware": {"server": "dgx-h100", "nodes": 2},
                   "training": {"tokens": 1e9}, "parallelism": {"auto": True, **par}})   # Llama 3 8B: 32 layers
    with pytest.raises(ScenarioError) as err:
        estimate(s)
    assert str(err.value) == message


def test_a_family_name_suggests_the_ids_of_the_family():
    from gpucluster_lib.errors import closest

    # the catalogue's H100 rows all begin with 'h100'; difflib alone offered 'a10' (ratio 0.75)
    assert closest("h100", ["a10", "a100-sxm4-80gb", "h100-nvl-94gb", "h100-pcie-80gb", "h100-sxm5-80gb"]) == \
        ["h100-nvl-94gb", "h100-pcie-80gb", "h100-sxm5-80gb"]
    assert closest("gpt3-17b", ["gpt3-175b", "llama3-8b"]) == ["gpt3-175b"]   # a typo: difflib, as before


def test_a_batch_report_lists_bad_input_by_its_message(tmp_path):
    from gpucluster_lib.errors import ScenarioError as Bad
    from gpucluster_lib.report.render import render_batch

    def fake(path, target, timeout_s):
        raise Bad("hardware.nodes", "must be a positive integer, got -4")

    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.yaml").write_text("name: a\n")
    (result,) = render_batch([tmp_path / "in"], tmp_path / "out", progress=False, render=fake)
    # no class name (was "ScenarioError: hardware.nodes: ..."); a bug still shows its type (tests/test_report.py)
    assert result.error == "hardware.nodes: must be a positive integer, got -4"


# ----------------------------------------------------------------- training efficiency overrides

GPT3_FSDP = {"model": {"preset": "gpt3-175b"}, "hardware": {"server": "dgx-h100", "nodes": 8},
             "parallelism": {"auto": True, "global_batch_size": 512}, "training": {"tokens": 1e11, "framework": "fsdp"}}


@pytest.mark.parametrize(("efficiency", "message"), [
    # a hidden fraction above 1 made the FSDP ZeRO-3 exposed time negative (MFU above 1 at 1.7) and the
    # bounded plan search drop the fastest plan (TP8 PP1 DP8 ZeRO-3 on 8 x DGX H100)
    ({"zero3_overlap": 1.3}, "training.efficiency.zero3_overlap: must be from 0 to 1 (the fraction of the "
                             "communication hidden behind compute), got 1.3"),
    ({"dp_overlap": -0.1}, "training.efficiency.dp_overlap: must be from 0 to 1 (the fraction of the "
                           "communication hidden behind compute), got -0.1"),
    # 0 of the peak: every time divided by zero (was IndexError / ZeroDivisionError)
    ({"memory_efficiency": 0}, "training.efficiency.memory_efficiency: must be greater than 0 and at most 1 "
                               "(a fraction of the datasheet peak), got 0"),
    ({"gemm_efficiency": 0}, "training.efficiency.gemm_efficiency: must be greater than 0 and at most 1 "
                             "(a fraction of the datasheet peak), got 0"),
    ({"network_efficiency": 0}, "training.efficiency.network_efficiency: must be greater than 0 and at most 1 "
                                "(a fraction of the datasheet peak), got 0"),
    ({"nvlink_efficiency": 1.2}, "training.efficiency.nvlink_efficiency: must be greater than 0 and at most 1 "
                                 "(a fraction of the datasheet peak), got 1.2"),
    ({"cuda_context_gib": -1}, "training.efficiency.cuda_context_gib: must be from 0 to 1,024 GiB, got -1"),
    # the bound 2^24 = 16,777,216 tokens written out, not in Python's float format (1.67772e+07)
    ({"attention_half_rate_tokens": -1}, "training.efficiency.attention_half_rate_tokens: must be from 0 to "
                                         "16,777,216 tokens, got -1"),
    ({"zero3_overlp": 0.5}, "training.efficiency.zero3_overlp: unknown efficiency parameter; did you mean 'zero3_overlap'?"),
])
def test_training_efficiency_override_out_of_its_range_is_refused_at_load(efficiency, message):
    from gpucluster_lib.scenario import from_dict
    d = {**GPT3_FSDP, "training": {**GPT3_FSDP["training"], "efficiency": efficiency}}
    with pytest.raises(ScenarioError) as err:
        from_dict(d)
    assert str(err.value) == message


def test_every_training_efficiency_parameter_has_a_range():
    from gpucluster_lib.scenario import TRAINING_EFFICIENCY_RULES, from_dict
    from gpucluster_lib.training.efficiency import FIELDS
    assert set(TRAINING_EFFICIENCY_RULES) == set(FIELDS)
    # the ends of the ranges are accepted: every communication hidden (1), a full peak (1)
    d = {**GPT3_FSDP, "training": {**GPT3_FSDP["training"],
                                   "efficiency": {"zero3_overlap": 1, "ep_overlap": 0, "gemm_efficiency": 1}}}
    assert from_dict(d).training.efficiency == {"zero3_overlap": 1.0, "ep_overlap": 0.0, "gemm_efficiency": 1.0}


# ----------------------------------------------------------------- automatic plan search with no plan to try

@pytest.mark.parametrize(("par", "message"), [
    # 16 GPUs, Llama 2 70B (80 layers): the rule that empties the search space speaks for itself
    ({"first_stage_layers": 0}, "parallelism.first_stage_layers: is 0, but every pipeline stage needs at least "
                                "one layer; give 1 or more, or remove it"),
    ({"tp_comm_overlap": True, "sequence_parallel": False},
     "parallelism.tp_comm_overlap: needs tensor parallelism with sequence parallelism (Megatron pipelines the "
     "all-gather / reduce-scatter of the sequence-parallel layers with the GEMMs); turn sequence parallelism on, "
     "or turn the TP communication overlap off"),
    ({"tensor": 1, "tp_comm_overlap": True},
     "parallelism.tp_comm_overlap: needs tensor parallelism with sequence parallelism (Megatron pipelines the "
     "all-gather / reduce-scatter of the sequence-parallel layers with the GEMMs); raise the tensor parallelism to "
     "2 or more, or turn the TP communication overlap off"),
    ({"zero_stage": 3, "pipeline": 2}, "parallelism.zero_stage: 3 is left out of the plan search beside pipeline "
                                       "stages (ZeRO-3 re-gathers every parameter for each micro-batch), but the "
                                       "pipeline is fixed at 2 stages; lower the ZeRO stage to 2 or less, use a "
                                       "pipeline of 1 stage, or write the plan out in full (no automatic search)"),
    # data 16 x pipeline 2 = 32 GPUs, not 16: no single rule; every fixed field is listed in words,
    # a 0 kept, a false one as "off", no Python True / None
    ({"data": 16, "pipeline": 2, "zero_stage": 0, "sequence_parallel": False},
     "parallelism: no valid plan for 16 GPUs with the fixed fields pipeline 2, data 16, sequence parallel off, "
     "ZeRO stage 0; relax them or change the GPU count"),
])
def test_automatic_plan_search_with_an_empty_space_says_which_rule(par, message):
    import gpucluster_lib
    from gpucluster_lib.scenario import from_dict
    d = {"model": {"preset": "llama2-70b"}, "hardware": {"server": "dgx-h100", "nodes": 2},
         "parallelism": {"auto": True, **par}, "training": {"tokens": 1e11}}
    with pytest.raises(ScenarioError) as err:
        _ = gpucluster_lib.design(from_dict(d)).training
    assert str(err.value) == message


# ----------------------------------------------------------------- a failed report leaves nothing behind

def test_a_failed_report_removes_the_file_and_only_the_folders_it_made(tmp_path, monkeypatch):
    from gpucluster_lib.report import render

    def fail(*args, **kwargs):
        raise RuntimeError("the notebook failed")

    monkeypatch.setattr(render, "_execute", fail)
    (tmp_path / "kept").mkdir()
    out = tmp_path / "kept" / "new" / "deeper" / "report.html"
    with pytest.raises(RuntimeError, match="the notebook failed"):
        render.render_report(REFERENCE, out)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept"] and not any((tmp_path / "kept").iterdir())
    # a file that was there before is not removed, nor its folder
    before = tmp_path / "kept" / "old.html"
    before.write_text("x")
    with pytest.raises(RuntimeError):
        render.render_report(REFERENCE, before)
    assert before.read_text() == "x"
    # a folder the run made but someone wrote into meanwhile stays, with its content
    made = tmp_path / "made"

    def write_beside(scenario, scenario_path, out_html, *args):
        (made / "other.txt").write_text("y")
        raise RuntimeError("the notebook failed")

    monkeypatch.setattr(render, "_execute", write_beside)
    with pytest.raises(RuntimeError):
        render.render_report(REFERENCE, made / "report.html")
    assert sorted(p.name for p in made.iterdir()) == ["other.txt"]


def test_a_report_whose_pdf_fails_removes_the_page_and_the_folders_it_made(tmp_path, monkeypatch):
    from gpucluster_lib.report import pdf, render
    from gpucluster_lib.report.pdf import PdfError

    def write_page(scenario, scenario_path, out_html, *args):
        out_html.write_text("<html></html>")

    def fail(html_path, pdf_path, **kwargs):
        pdf_path.write_bytes(b"%PDF-1.7 half")  # Chromium stopped half-way
        raise PdfError("Chromium could not print report.html")

    monkeypatch.setattr(render, "_execute", write_page)
    monkeypatch.setattr(pdf, "chromium_path", lambda: "chromium")
    monkeypatch.setattr(pdf, "html_to_pdf", fail)
    out = tmp_path / "new" / "report.html"
    with pytest.raises(PdfError, match="could not print"):
        render.render_report(REFERENCE, out, pdf=True)
    assert list(tmp_path.iterdir()) == []  # no page, no half PDF, no folder "new"
    # a PDF that was there before stays (only what this run made is removed), with its folder
    (tmp_path / "kept").mkdir()
    (tmp_path / "kept" / "report.pdf").write_bytes(b"%PDF old")
    with pytest.raises(PdfError):
        render.render_report(REFERENCE, tmp_path / "kept" / "report.html", pdf=True)
    assert [p.name for p in (tmp_path / "kept").iterdir()] == ["report.pdf"]


def test_calibrate_gemm_messages_name_the_file_and_its_line(tmp_path):
    from gpucluster_lib.calibration.run import read_gemm_table

    text = ("# measured on lab box\n"                       # line 1: a comment
            "m,n,k,dtype,tflops\n"                          # line 2: the header
            "256,256,256,bf16,100\n"                        # line 3
            "\n"                                            # line 4: blank
            "512,512,512,bf16,200\n1024,1024,1024,bf16,400\n2048,2048,2048,bf16,600\n"   # lines 5-7
            "4096,4096,4096,bf16,700\n8192,8192,8192,bf16,2000\n")                     # lines 8-9
    csv = tmp_path / "c.csv"
    csv.write_text(text)
    with pytest.raises(CalibrationError) as err:
        calibrate("lab", gemm=read_gemm_table(csv), peaks={"bf16": 989.4})
    # 2,000 TFLOP/s on line 9 (the sixth data row) is above the H100 SXM's 989.4 dense bf16
    assert str(err.value) == ("c.csv, line 9: 2,000 TFLOP/s is above the dense bf16 peak of 989.4 TFLOP/s; give "
                              "the measured device's peak (--accelerator ID or --peak bf16=TFLOPS)")
    csv.write_text(text.replace("512,512,512,bf16,200", "512,512,512,bf16,-1"))
    with pytest.raises(CalibrationError, match=r"^c\.csv, line 5, column 'tflops': must be a positive number"):
        read_gemm_table(csv)
    csv.write_text(text.replace("bf16,2000", "bf16,900"))
    with pytest.raises(CalibrationError, match=r"^c\.csv: no dense bf16 peak"):
        calibrate("lab", gemm=read_gemm_table(csv), peaks={})


# ----------------------------------------------------------------- plan messages name settings in words

#: What the app and the report must not show in a plan's message or fix: a dotted scenario key
#: ("parallelism.pipeline"), a snake_case key ("sequence_parallel"), a YAML setting
#: ("sequence_parallel: true", "pipeline: 1") or Python ("True", "None", a list, "pipeline > 1").
PLAN_KEYS = "|".join(f.name for f in __import__("dataclasses").fields(ParallelismSpec))
NOT_WORDS = re.compile(r"\b[a-z][a-z_]+\.[a-z][a-z_]+\b|\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b|:\s*(?:true|false)\b"
                       rf"|\b(?:{PLAN_KEYS})\s*:|\b(?:True|False|None)\b|[\[\]{{}}]|==|!=|[<>]=?\s*\d")

#: GPT-3 175B (96 layers, 96 heads) on 128 x 8 A100 unless a case says otherwise; Mixtral 8x7B has 8
#: experts and 8 KV heads, Llama 2 70B 8 KV heads
PLAN_CASES = [
    ({"tensor": 5}, {}),                                                  # 96 attention heads
    ({"tensor": 16, "pipeline": 1}, {"model": "llama2-70b"}),             # 8 KV heads
    ({"context": 3}, {}),                                                 # 2,048 tokens
    ({"pipeline": 16}, {"nodes": 3}),                                     # 24 GPUs, not divisible by 8 x 16
    ({"data": 4}, {}),                                                    # 8 x 8 x 4 = 256 of 1,024 GPUs
    ({"expert": 2}, {}),                                                  # GPT-3 is dense
    ({"tensor": 1, "pipeline": 1, "expert": 3}, {"model": "mixtral-8x7b"}),
    ({"tensor": 8, "pipeline": 1, "expert": 4}, {"model": "mixtral-8x7b", "nodes": 2}),   # data 2, expert 4
    ({"pipeline": 1, "virtual_stages": 2}, {}),
    ({"virtual_stages": 5}, {}),                                          # 12 layers per stage
    ({"virtual_stages": 8, "first_stage_layers": 6}, {}),
    ({"global_batch_size": 1000}, {}),                                    # data 16 x micro-batch 1
    ({"tensor": 1, "tp_comm_overlap": True}, {}),
    ({"tensor": 8, "sequence_parallel": False, "tp_comm_overlap": True}, {}),
    ({"tensor": 16, "allow_tp_across_nodes": True, "tp_comm_overlap": True}, {}),   # 8-GPU NVLink domains
    ({"pipeline_layers": [12] * 8, "first_stage_layers": 10}, {}),
    ({"pipeline_layers": [12] * 7}, {}),
    ({"pipeline_layers": [13] * 8}, {}),
    ({"pipeline_layers": [16] * 6 + [0, 0]}, {}),
    ({"pipeline": 1, "first_stage_layers": 3}, {}),
    ({"first_stage_layers": 200}, {}),
    ({"pipeline": 2, "first_stage_layers": 40, "last_stage_layers": 40}, {}),
    ({"last_stage_layers": 0}, {}),
    ({"last_stage_layers": 96}, {}),
    ({"pipeline": 128}, {}),                                              # 128 stages for 96 layers
    # the automatic plan search: the rule that empties its space
    ({"auto": True, "tp_comm_overlap": True, "sequence_parallel": False}, {}),
    ({"auto": True, "tensor": 1, "tp_comm_overlap": True}, {}),
    ({"auto": True, "tensor": 16, "allow_tp_across_nodes": True, "tp_comm_overlap": True}, {}),
    ({"auto": True, "zero_stage": 3, "pipeline": 2}, {}),
    ({"auto": True, "first_stage_layers": 0}, {}),
    ({"auto": True, "data": 16, "pipeline": 2, "zero_stage": 0, "sequence_parallel": False}, {"nodes": 2}),
    ({"auto": True, "pipeline": 2}, {"framework": "fsdp"}),               # llm-foundry has no pipeline schedule
    ({"auto": True, "micro_batch_size": 3, "global_batch_size": 64}, {}),  # 3 does not divide 64
    ({"auto": True, "pipeline": 3}, {"nodes": 2}),                        # 16 GPUs, not divisible by 3
    ({"auto": True, "first_stage_layers": 3}, {"framework": "fsdp"}),     # a stage layout, no pipeline schedule
    ({"auto": True, "zero_stage": 3, "tensor": 8, "tp_comm_overlap": True}, {"framework": "nemo"}),  # not with ZeRO-3
]


def _plan_training(par, model="gpt3-175b", nodes=128, framework="megatron"):
    import gpucluster_lib
    from gpucluster_lib.scenario import from_dict

    base = {} if par.get("auto") else {"tensor": 8, "pipeline": 8, "micro_batch_size": 1}
    return gpucluster_lib.design(from_dict({
        "model": {"preset": model}, "hardware": {"accelerator": "a100-sxm4-80gb", "nodes": nodes},
        "parallelism": {**base, **par}, "training": {"tokens": 3e11, "framework": framework}})).training


def test_every_plan_message_and_fix_names_settings_in_words():
    """Every message the plan checks (training/plans.py) can raise, for a written plan and for the
    plan search, and the fix of the uneven-split finding: no key, YAML or Python in the text. The
    cases reach every ``raise`` of plans.py, so a new message comes with a case."""
    import ast
    import inspect
    import traceback

    from gpucluster_lib.training import plans

    texts, reached = [], set()
    for par, where in PLAN_CASES:
        with pytest.raises(ScenarioError) as err:
            _plan_training(par, **where)
        texts.append(err.value.detail)  # the message after the field's key path (kept for machines)
        frames = [f for f in traceback.extract_tb(err.value.__traceback__) if f.filename == plans.__file__]
        if frames:
            reached.add(frames[-1].lineno)
    raises = [(n.lineno, n.end_lineno) for n in ast.walk(ast.parse(inspect.getsource(plans)))
              if isinstance(n, ast.Raise) and isinstance(n.exc, ast.Call)
              and getattr(n.exc.func, "id", "") in ("ScenarioError", "_tp_overlap_error", "_tp_overlap_domain_error")]
    assert len(raises) == 32 and [r for r in raises if not any(r[0] <= n <= r[1] for n in reached)] == []
    # 96 layers on 5 stages (40 GPUs): the balanced split is a finding, with a fix
    uneven = [f for f in _plan_training({"pipeline": 5}, nodes=5).findings if f.code == "training-pipeline-uneven-split"]
    assert uneven and uneven[0].field == "parallelism.pipeline"
    texts += [uneven[0].message, uneven[0].fix]
    assert [t for t in texts if NOT_WORDS.search(t)] == []
