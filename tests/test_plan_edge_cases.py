"""Edge cases of explicit plans and of the plan search: two-stage layouts given as first and last
stage layers, a given stage list kept through the search, fixed values the model cannot split by,
the distributed optimizer fixed beside ZeRO-1, and the ``--deadline`` bound.

Expected values are worked by hand on each line.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from gpucluster_lib.cli import main
from gpucluster_lib.errors import ScenarioError
from gpucluster_lib.resources import PACKAGE_DATA
from gpucluster_lib.scenario import from_dict
from gpucluster_lib.training import build_context, estimate, search_plans
from gpucluster_lib.training.core import stage_table


def scen(model="llama3-8b", nodes=2, **par):
    return from_dict({"model": {"preset": model}, "hardware": {"server": "dgx-h100", "nodes": nodes},
                      "parallelism": {"global_batch_size": 64, **par}, "training": {"precision": "bf16"}})


@pytest.mark.parametrize("first, last", [(12, 20), (16, 16)])
def test_two_stages_given_as_first_and_last_layers(first, last):
    # Llama 3 8B has 32 layers: on 2 stages the two counts are the whole layout (12 + 20 = 32, 16 + 16 = 32)
    est = estimate(scen(tensor=8, pipeline=2, first_stage_layers=first, last_stage_layers=last))
    assert est.stages["layers_per_stage"] == [first, last]
    searched = estimate(scen(auto=True, pipeline=2, first_stage_layers=first, last_stage_layers=last))
    assert searched.stages["layers_per_stage"] == [first, last]


def test_two_stages_that_do_not_add_up_are_refused():
    # 12 + 12 = 24 of 32 layers, and no middle stage takes the rest
    with pytest.raises(ScenarioError, match="add up to 24, not the model's 32"):
        estimate(scen(tensor=8, pipeline=2, first_stage_layers=12, last_stage_layers=12))


def test_search_keeps_a_given_stage_list():
    # Llama 3 70B, 80 layers: 1 + 1 + 40 + 38 = 80; the table's codes hold only first (1), last (38) and the
    # largest middle stage (40), from which an even rebuild would give 1 / 21 / 20 / 38
    est = estimate(scen("llama3-70b", nodes=8, auto=True, pipeline=4, pipeline_layers=[1, 1, 40, 38]))
    assert est.stages["layers_per_stage"] == [1, 1, 40, 38]
    assert est.plan.pipeline_layers == (1, 1, 40, 38)


def test_search_memory_of_a_given_list_is_its_fullest_stage():
    # stage 3 (40 layers, 2 micro-batches in flight under 1F1B: p - i = 4 - 2) holds more than stage 2 (1 layer,
    # 3 in flight): the search charges each plan its fullest stage, as every stage's own memory (stage_table)
    # gives it, so it keeps TP 4 with CP 2, whose stage 3 fits, rather than TP 8 (the review's hand-built repro:
    # 34,498 against 32,944 tokens/s)
    s = scen("llama3-70b", nodes=8, auto=True, pipeline=4, pipeline_layers=[1, 1, 40, 38])
    est = estimate(s)
    assert (est.plan.tensor, est.plan.context, est.plan.data) == (4, 2, 2)
    assert est.stages["memory_stage"] == 2  # 0-based: stage 3


@pytest.mark.parametrize("nodes, layers", [(8, [1, 1, 40, 38]), (16, [1, 1, 1, 1, 1, 1, 70, 4])])
def test_search_fit_of_a_given_list_is_stage_by_stage(nodes, layers):
    # every valid plan (limit None) against every stage's own memory: the same memory, the same fit, the same count
    s = scen("llama3-70b", nodes=nodes, auto=True, pipeline=len(layers), pipeline_layers=layers)
    res = search_plans(s, limit=None)
    ctx = build_context(s)[0]
    fitting = 0
    for _, row in res.table.iterrows():
        plan = res.plan(row.to_dict())
        worst = float(np.max(stage_table(ctx, plan.arrays(80), layers)["memory"]["total"]))
        assert row["memory_gib"] * 2**30 == pytest.approx(worst, rel=1e-9)
        assert bool(row["fits"]) == (worst <= ctx.memory_capacity)
        fitting += worst <= ctx.memory_capacity
    assert res.fitting == fitting > 0


@pytest.mark.parametrize("par, field, words", [
    ({"tensor": 16}, "parallelism.tensor", "does not divide the model's 8 KV heads"),   # Llama 3 8B: 8 KV heads
    ({"expert": 2}, "parallelism.expert", "needs a mixture-of-experts model"),          # Llama 3 8B is dense
    ({"context": 3}, "parallelism.context", "does not divide the sequence length of 8192"),  # 8192 = 2^13
])
def test_search_refuses_fixed_values_the_explicit_plan_refuses(par, field, words):
    with pytest.raises(ScenarioError, match=words) as e:
        estimate(scen(auto=True, **par))
    assert e.value.path == field
    with pytest.raises(ScenarioError, match=words):
        estimate(scen(**par))


def test_search_takes_the_distributed_optimizer_fixed_beside_zero_1():
    # the explicit plan accepts the pair (the distributed optimizer is ZeRO-1's sharding of the optimizer states)
    est = estimate(scen(auto=True, zero_stage=1, distributed_optimizer=True))
    assert est.plan.zero_stage == 1


@pytest.mark.parametrize("days", ["nan", "inf", "-1", "0"])
def test_deadline_must_be_a_positive_finite_number(days, capsys):
    scenario = PACKAGE_DATA / "scenarios" / "gpt3-175b-1024-a100.yaml"
    assert main(["estimate", str(scenario), "--deadline", days]) == 2
    assert "--deadline: must be a positive, finite number of days" in capsys.readouterr().err


def test_one_layer_reads_singular(tmp_path, capsys):
    # 1 + 1 + 15 + 15 = 32 layers of Llama 3 8B on 4 stages
    (tmp_path / "s.yaml").write_text(
        "name: t\nmodel: {preset: llama3-8b}\nhardware: {server: dgx-h100, nodes: 2}\n"
        "parallelism: {tensor: 4, pipeline: 4, pipeline_layers: [1, 1, 15, 15], global_batch_size: 64}\n")
    assert main(["estimate", str(tmp_path / "s.yaml")]) == 0
    assert "4 stages, 1 layer on stages 1 to 2, 15 on stages 3 to 4;" in capsys.readouterr().out


def fw_scen(framework, **par):
    return from_dict({"model": {"preset": "llama3-70b"}, "hardware": {"server": "dgx-h100", "nodes": 8},
                      "parallelism": {"global_batch_size": 64, **par},
                      "training": {"precision": "bf16", "framework": framework}})


def test_deepspeed_pipeline_with_zero_2_is_an_error_finding():
    # DeepSpeed's PipelineEngine asserts zero_optimization_stage() < ZeroStageEnum.gradients (2)
    est = estimate(fw_scen("deepspeed", tensor=8, pipeline=4, zero_stage=2))
    cannot = [f for f in est.findings if f.code == "training-framework-cannot-run"]
    assert cannot and cannot[0].severity == "error" and cannot[0].field == "parallelism.zero_stage"
    assert "at most ZeRO-1 beside pipeline stages" in cannot[0].message
    ok = estimate(fw_scen("deepspeed", tensor=8, pipeline=4, zero_stage=1))   # ZeRO-1 with a pipeline runs
    assert not [f for f in ok.findings if f.code == "training-framework-cannot-run"]


def test_search_offers_each_framework_only_what_it_runs():
    # every valid plan (limit None), not only the best 1,000
    ds = search_plans(fw_scen("deepspeed", auto=True), limit=None).table
    assert not ((ds["pp"] > 1) & (ds["zero"] >= 2)).any() and (ds["pp"] > 1).any()
    assert (ds["tpo"] == 0).all()      # Megatron-DeepSpeed has no --tp-comm-overlap
    assert (ds["cp"] == 1).all()       # nor ring-attention context parallelism (Ulysses only, not modelled)
    fsdp = search_plans(fw_scen("fsdp", auto=True), limit=None).table    # llm-foundry / Composer
    assert (fsdp["pp"] == 1).all() and (fsdp["tpo"] == 0).all()
    assert (fsdp["tp"] == 1).all()     # its FFN-only tensor parallelism is not modelled: not searched
    assert (fsdp["cp"] == 1).all()     # llm-foundry has no context parallelism
    titan = search_plans(fw_scen("torchtitan", auto=True), limit=None).table   # torch.distributed.pipelining
    staged = titan[titan["pp"] > 1]
    # FSDP2 beside pipeline stages: ZeRO-3 (gathered once a step) or none, no distributed optimizer
    assert len(staged) and set(staged["zero"]) == {0, 3} and not staged["dopt"].any()
    assert (titan["tpo"] == 1).any()   # asynchronous TP
    mega = search_plans(fw_scen("megatron", auto=True), limit=None).table
    assert not ((mega["pp"] > 1) & (mega["zero"] == 3)).any()


@pytest.mark.parametrize("framework", ["deepspeed", "fsdp"])
def test_tp_overlap_on_a_framework_without_it(framework):
    est = estimate(fw_scen(framework, tensor=8, pipeline=1, sequence_parallel=True, tp_comm_overlap=True))
    cannot = [f for f in est.findings if f.code == "training-framework-cannot-run"]
    assert cannot and cannot[0].field == "parallelism.tp_comm_overlap"
    assert "has no TP communication overlap" in cannot[0].message
    with pytest.raises(ScenarioError, match="has no TP communication overlap") as e:
        estimate(fw_scen(framework, auto=True, tp_comm_overlap=True))
    assert e.value.path == "parallelism.tp_comm_overlap"


def test_torchtitan_zero3_beside_a_pipeline_is_gathered_once_a_step():
    # torch.distributed.pipelining keeps FSDP2's parameters gathered and gradients unreduced for the step: the
    # memory of ZeRO-1 (16-bit parameters and gradients whole, fp32 copies and optimizer states sharded), one
    # all-gather and one reduce-scatter a step, the reduce-scatter after the last backward (exposed whole)
    plan = {"tensor": 8, "pipeline": 4, "micro_batch_size": 1, "recompute": "full"}
    z3 = estimate(fw_scen("torchtitan", zero_stage=3, **plan))
    z1 = estimate(fw_scen("torchtitan", zero_stage=1, **plan))
    m3, m1 = z3.memory_per_gpu_bytes, z1.memory_per_gpu_bytes
    assert (m3["weights"], m3["optimizer_states"], m3["gather_buffers"]) == \
        (m1["weights"], m1["optimizer_states"], m1["gather_buffers"])
    # FSDP2 accumulates an unsynchronised gradient in reduce_dtype, TorchTitan's float32, whole: 4 bytes a parameter
    # against the whole 16-bit weights' 2
    assert m3["gradients"] == pytest.approx(2 * m3["weights"], rel=1e-12)
    t3, t1 = z3.time_breakdown_s, z1.time_breakdown_s
    assert t3["bubble"] == t1["bubble"] and t3["compute"] == t1["compute"]
    assert t3["dp_comm"] > t1["dp_comm"]   # the reduce-scatter is no longer behind the backward
    assert [f.severity for f in z3.findings if f.code == "training-zero3-gathered-once-a-step"] == ["info"]
    assert [f.field for f in z1.findings if f.code == "training-framework-cannot-run"] == ["parallelism.zero_stage"]
    # Megatron-LM gathers ZeRO-3 per micro-batch: the warning, and more memory traffic than ZeRO-1
    mz3 = estimate(fw_scen("megatron", zero_stage=3, **plan))
    assert [f.code for f in mz3.findings if f.code.startswith("training-zero3")] == ["training-zero3-with-pp"]


def test_fsdp_pipeline_is_refused_or_flagged():
    with pytest.raises(ScenarioError, match="has no pipeline schedule") as e:
        estimate(fw_scen("fsdp", auto=True, pipeline=2))
    assert e.value.path == "parallelism.pipeline"
    est = estimate(fw_scen("fsdp", tensor=8, pipeline=2))
    assert [f.field for f in est.findings if f.code == "training-framework-cannot-run"] == ["parallelism.pipeline"]


@pytest.mark.parametrize("par, field", [
    ({"first_stage_layers": 3}, "parallelism.first_stage_layers"),
    ({"first_stage_layers": 16, "last_stage_layers": 16}, "parallelism.first_stage_layers"),
    ({"pipeline_layers": [40, 40]}, "parallelism.pipeline_layers"),   # Llama 3 70B: 80 layers
])
def test_fsdp_stage_layout_names_the_missing_pipeline_schedule(par, field):
    # llm-foundry / Composer has no pipeline schedule: a stage layout is the cause, not a generic empty search
    with pytest.raises(ScenarioError, match="has no pipeline schedule") as e:
        estimate(fw_scen("fsdp", auto=True, **par))
    assert e.value.path == field


def test_deadline_not_met_says_why(capsys, tmp_path):
    # FSDP at a fixed pipeline of 2: every node count's search is refused, and the line gives the refusal
    (tmp_path / "s.yaml").write_text(
        "model: {preset: llama3-8b}\nhardware: {server: dgx-h100, nodes: 2}\n"
        "parallelism: {tensor: 8, pipeline: 2, global_batch_size: 64}\n"
        "training: {precision: bf16, framework: fsdp, tokens: 1e12}\n")
    assert main(["estimate", str(tmp_path / "s.yaml"), "--deadline", "30"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.strip().startswith("deadline"))
    assert "30 days: not met: " in line and "has no pipeline schedule" in line


@pytest.mark.parametrize("par, words", [
    ({"tensor": 4, "pipeline": 4, "first_stage_layers": 7, "embedding_in_pipeline_split": True},
     "the embedding counted as a pipeline layer: ignored, as the stage layer counts are given"),
    ({"tensor": 8, "pipeline": 1, "loss_in_pipeline_split": True},
     "the output layer and loss counted as a pipeline layer: ignored, as the pipeline has a single stage"),
])
def test_slot_flags_that_are_not_read_are_named(par, words):
    est = estimate(scen(**par))
    assert [f.message.startswith(words) for f in est.findings if f.code == "training-setting-ignored"] == [True]


def test_slots_that_megatron_core_cannot_split_evenly_are_noted():
    # 32 layers + embedding + loss = 34 slots on 4 stages: 34 / 4 = 8.5, which Megatron-Core's
    # account_for_*_in_pipeline_split refuses; the balanced split is 8-1 / 9 / 9 / 8-1 = 7 / 9 / 9 / 7
    est = estimate(scen(tensor=4, pipeline=4, embedding_in_pipeline_split=True, loss_in_pipeline_split=True))
    assert est.stages["layers_per_stage"] == [7, 9, 9, 7]
    assert [f.code for f in est.findings if f.code == "training-pipeline-slots-uneven"]
    # 32 + 2 = 34 on 2 stages: 17 each (16 layers and a slot), no note
    even = estimate(scen(tensor=4, pipeline=2, embedding_in_pipeline_split=True, loss_in_pipeline_split=True))
    assert even.stages["layers_per_stage"] == [16, 16]
    assert not [f for f in even.findings if f.code == "training-pipeline-slots-uneven"]


def test_deadline_line_gives_gpus_nodes_and_days(capsys):
    import re

    assert main(["estimate", "llama3-70b-512-h100", "--deadline", "30"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.strip().startswith("deadline"))
    m = re.fullmatch(r"\s+deadline\s+30 days: ([\d,]+) GPUs \(([\d,]+) nodes\) train in ([\d.,]+) days", line)
    assert m, line
    gpus, nodes, days = int(m[1].replace(",", "")), int(m[2].replace(",", "")), float(m[3].replace(",", ""))
    assert gpus == 8 * nodes and days <= 30   # DGX H100: 8 GPUs a node; the deadline is met


def test_findings_describe_the_plan_in_words():
    from gpucluster_lib.training.plans import Plan, describe

    plan = Plan(tensor=4, pipeline=2, data=64, context=1, expert=1, virtual_stages=10, micro_batch_size=1,
                global_batch_size=512, recompute="none", sequence_parallel=True, zero_stage=0,
                distributed_optimizer=True, tp_comm_overlap=True)
    assert describe(plan) == ("TP 4, PP 2 with 10 model chunks per stage, DP 64, micro-batch 1, no recomputation, "
                              "distributed optimizer, TP communication overlap")
    est = estimate(scen(auto=True))
    search = next(f.message for f in est.findings if f.code == "training-plan-search")
    assert "best: TP " in search and " mb" not in search and "dist-opt" not in search


def test_a_micro_batch_above_the_local_batch_is_told_to_shrink():
    # 16 GPUs at TP 8: data parallelism 2, so a global batch of 64 is 64 / 2 = 32 sequences per rank; 128 > 32
    with pytest.raises(ScenarioError, match="or a micro-batch size that divides the 32 sequences per data-parallel"):
        estimate(scen(tensor=8, micro_batch_size=128))


def test_small_memory_lines_read_in_mib(tmp_path, capsys):
    (tmp_path / "s.yaml").write_text(
        "name: t\nmodel: {preset: mpt-125m}\nhardware: {server: dgx-h100, nodes: 2}\n"
        "parallelism: {tensor: 1, zero_stage: 3, global_batch_size: 64}\ntraining: {framework: fsdp}\n")
    assert main(["estimate", str(tmp_path / "s.yaml"), "--json"]) == 0
    import json

    params = json.loads(capsys.readouterr().out)["params"]
    assert main(["estimate", str(tmp_path / "s.yaml")]) == 0
    out = capsys.readouterr().out
    # ZeRO-3 over 16 GPUs: 2 bytes a parameter / 16 (the ZeRO paper's 2P / N_d), about 125M x 2 / 16 = 15.6 MB
    assert f"weights {2 * params / 16 / 2**20:,.1f} MiB" in out and not re.search(r"\b0\.0 GiB", out)
    assert not re.search(r"\de[-+]\d", out)   # no power-of-ten notation (the optimizer's 82.5 µs read 8.25e-05 s)


def test_an_interleaving_no_stage_layout_allows_says_use_one():
    # GPT-3 175B, 96 layers on 8 stages with 6 on the first: 90 left over 7 stages = 13 x 6 + 12; the chunk count
    # must divide 6, 13 and 12, and only 1 does
    from tests.test_input_messages import _plan_training

    with pytest.raises(ScenarioError, match=r"stages of 6 to 13 layers \(first 6, last 12\) allow 1; use 1 "
                                            r"\(no interleaving\), or stages whose layers 8 divides") as e:
        _plan_training({"virtual_stages": 8, "first_stage_layers": 6})
    assert e.value.path == "parallelism.virtual_stages"


@pytest.mark.parametrize("seconds, text", [
    (0.09996, "0.1 s"),          # rounds to 0.1 s before the unit is chosen, not "100 ms"
    (9.9996e-5, "0.1 ms"),       # likewise one unit down
    (-0.0, "0 s"),
    (float("nan"), "not available"),
    (5e-324, "under 1 ns"),
    (1e30, "10^30 s"),
])
def test_duration_edge_cases(seconds, text):
    from gpucluster_lib.formatting import format_duration

    assert format_duration(seconds) == text


def test_describe_gives_long_stage_lists_as_runs():
    from gpucluster_lib.training.plans import Plan, describe

    # 126 layers on 16 stages, one fewer on the first and last (Llama 3 405B's layout): 7 + 14 x 8 + 7 = 126
    plan = Plan(tensor=8, pipeline=16, data=4, pipeline_layers=(7,) + (8,) * 14 + (7,))
    assert describe(plan).startswith("TP 8, PP 16 (7 layers on stage 1, 8 on stages 2 to 15, 7 on stage 16), DP 4")


def test_tiny_memory_reads_in_kib():
    from gpucluster_lib.commands.estimate import _size

    gib = 2**30
    assert _size(1024, gib) == "1.0 KiB"            # 1,024 B; 0.0 MiB otherwise
    assert _size(0.5 * 2**20, gib) == "0.5 MiB"     # 0.0 GiB otherwise


def test_json_top_plans_use_the_scenario_names(tmp_path, capsys):
    import json

    (tmp_path / "s.yaml").write_text(
        "model: {preset: llama3-70b}\nhardware: {server: dgx-h100, nodes: 8}\n"
        "parallelism: {auto: true, pipeline: 4, pipeline_layers: [1, 1, 40, 38], global_batch_size: 64}\n"
        "training: {precision: bf16}\n")
    assert main(["estimate", str(tmp_path / "s.yaml"), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    first = d["top_plans"][0]
    # the best plan heads the list, under the names the scenario's parallelism uses (no internal codes)
    assert {k: first[k] for k in d["plan"] if k in first} == {k: v for k, v in d["plan"].items() if k in first}
    assert first["layers_per_stage"] == [1, 1, 40, 38] and first["recompute"] == "none"
    assert not {"tp", "pp", "rc", "tpo", "lf", "ll", "lm", "l1", "dopt"} & set(first)


def test_torchtitan_zero0_beside_a_pipeline_reduces_after_the_last_backward():
    # TorchTitan's ZeRO-0 is FSDP2 with a shard degree of 1: under torch.distributed.pipelining its all-reduce runs
    # once after the last backward (exposed whole) and the whole gradients wait in float32; Megatron-Core's
    # overlaps the all-reduce with the last micro-batch's backward and keeps its fp32 gradient buffer too
    plan = {"tensor": 8, "pipeline": 4, "micro_batch_size": 1, "recompute": "full", "zero_stage": 0}
    titan, mega = estimate(fw_scen("torchtitan", **plan)), estimate(fw_scen("megatron", **plan))
    assert titan.memory_per_gpu_bytes["gradients"] == mega.memory_per_gpu_bytes["gradients"]   # 4 B each
    assert titan.time_breakdown_s["dp_comm"] > 10 * mega.time_breakdown_s["dp_comm"]


def test_a_written_plan_gets_every_framework_problem():
    # llm-foundry has neither a pipeline schedule nor TP overlap: both are named, not only the first
    est = estimate(fw_scen("fsdp", tensor=8, pipeline=2, sequence_parallel=True, tp_comm_overlap=True))
    fields = sorted(f.field for f in est.findings if f.code == "training-framework-cannot-run")
    assert fields == ["parallelism.pipeline", "parallelism.tp_comm_overlap"]


def test_torchtitan_searches_zero3_beside_a_fixed_pipeline():
    # the ZeRO-3-beside-a-pipeline refusal is Megatron's; TorchTitan keeps the plans (ZeRO-3 once a step)
    res = search_plans(fw_scen("torchtitan", auto=True, pipeline=4, zero_stage=3), limit=None)
    assert len(res.table) and set(res.table["zero"]) == {3} and set(res.table["pp"]) == {4}
    with pytest.raises(ScenarioError, match="3 is left out of the plan search beside pipeline stages"):
        search_plans(fw_scen("megatron", auto=True, pipeline=4, zero_stage=3))


def test_deadline_reason_when_later_counts_search_but_nothing_fits(capsys, tmp_path):
    # TP 8 x PP 16 = 128 GPUs: 1 to 12 nodes (8 to 96 GPUs) are refused, 16 nodes and more are searched, and a
    # micro-batch of 64 sequences of 8,192 tokens of Llama 3 70B without recomputation fits nowhere (its activations
    # alone are hundreds of GiB): the reason is the memory, not the first refusal
    (tmp_path / "s.yaml").write_text(
        "model: {preset: llama3-70b}\nhardware: {server: dgx-h100, nodes: 16}\n"
        "parallelism: {tensor: 8, pipeline: 16, micro_batch_size: 64, recompute: none, context: 1,"
        " global_batch_size: 4096}\n"
        "training: {precision: bf16, tokens: 1e12}\n")
    assert main(["estimate", str(tmp_path / "s.yaml"), "--deadline", "30"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.strip().startswith("deadline"))
    assert "not met: no plan fits in memory on any of the node counts tried" in line, line


def test_settings_a_framework_overrides_are_named():
    # NeMo turns TP overlap off under Megatron-FSDP: a written ZeRO-3 plan that asks for it is estimated without it
    nemo = estimate(fw_scen("nemo", tensor=8, pipeline=1, zero_stage=3, sequence_parallel=True, tp_comm_overlap=True))
    assert [f.field for f in nemo.findings if f.code == "training-setting-ignored"] == ["parallelism.tp_comm_overlap"]
    assert nemo.plan.tp_comm_overlap is False
    off = estimate(fw_scen("nemo", tensor=8, pipeline=1, zero_stage=3, sequence_parallel=True, tp_comm_overlap=False))
    assert nemo.step_time_s == off.step_time_s
    # TorchTitan beside pipeline stages reduces once, after the last backward: an overlap setting has no effect
    titan = estimate(fw_scen("torchtitan", tensor=8, pipeline=2, zero_stage=3, overlap_grad_reduce=True))
    assert [f.field for f in titan.findings if f.code == "training-setting-ignored"] == \
        ["parallelism.overlap_grad_reduce"]


def test_torchtitan_sharded_gradients_are_fp32():
    # FSDP2 casts the reduce-scatter output to the sharded parameter's dtype, fp32: 4 bytes a parameter over the
    # shard, against the 2 of Composer's FSDP at the same plan (the same parameters per GPU)
    plan = {"tensor": 8, "pipeline": 1, "micro_batch_size": 1, "recompute": "full", "zero_stage": 2}
    titan, composer = estimate(fw_scen("torchtitan", **plan)), estimate(fw_scen("fsdp", **plan))
    assert titan.memory_per_gpu_bytes["gradients"] == pytest.approx(2 * composer.memory_per_gpu_bytes["gradients"])


def test_llm_foundry_context_parallelism_cannot_run():
    est = estimate(fw_scen("fsdp", tensor=1, pipeline=1, context=2, zero_stage=3))
    assert [f.field for f in est.findings if f.code == "training-framework-cannot-run"] == ["parallelism.context"]
    with pytest.raises(ScenarioError, match="has no ring-attention context parallelism") as e:
        estimate(fw_scen("fsdp", auto=True, context=2))
    assert e.value.path == "parallelism.context"


def test_llm_foundry_tensor_parallelism_is_flagged():
    # llm-foundry's ffn strategy splits the feed-forward projections only: a written TP 8 plan is estimated as
    # Megatron's split, with a warning on the field
    est = estimate(fw_scen("fsdp", tensor=8, pipeline=1, zero_stage=3))
    assert [f.field for f in est.findings if f.code == "training-tp-scope-not-modelled"] == ["parallelism.tensor"]
    assert not [f for f in estimate(fw_scen("torchtitan", tensor=8, pipeline=1, zero_stage=3)).findings
                if f.code == "training-tp-scope-not-modelled"]
