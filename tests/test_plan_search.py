"""The plan search evaluates only the plans that can reach its ranked table: it must give the
table, the counts and the best plan of the exhaustive search (every plan evaluated), and pick
the plans the physics says must win on scenarios small enough to reason about by hand.
"""

from __future__ import annotations

import dataclasses
import importlib

import numpy as np
import pytest

from gpucluster_lib.resources import example_paths
from gpucluster_lib.scenario import ParallelismSpec, from_dict, load_scenario
from gpucluster_lib.training import build_context
from gpucluster_lib.training.plans import plan_space

# the module, not the function of the same name that gpucluster_lib.training exports
est = importlib.import_module("gpucluster_lib.training.estimate")
search = importlib.import_module("gpucluster_lib.training.search")

#: GPT-2 small (Radford et al. 2019, Table 2: 12 layers, d_model 768; 12 heads of 64, GPT-2's
#: released config) at a 1,024-token context: 124M parameters.
TINY = {"kind": "transformer", "layers": 12, "hidden_size": 768, "attention_heads": 12, "kv_heads": 12,
        "ffn_hidden_size": 3072, "ffn_type": "gelu", "vocab_size": 50257, "seq_length": 1024}


def scenario(model: dict, nodes: int = 1, server: str = "dgx-h100", par: dict | None = None,
             training: dict | None = None):
    return from_dict({"model": model, "hardware": {"server": server, "nodes": nodes},
                      "parallelism": {"auto": True, **(par or {})}, "training": {"tokens": 1e11, **(training or {})}})


def both(s, limit: int, spec: ParallelismSpec | None = None):
    """(fast, exhaustive) search results of scenario ``s``, and how many plans the fast one evaluated."""
    ctx = build_context(s)[0]
    spec = spec or s.parallelism
    space = plan_space(spec, ctx.arch, ctx.gpus, min(ctx.nvlink_domain, ctx.gpus))
    found = search.candidates(ctx, space, limit)
    assert found is not None, "the fast search fell back to evaluating every plan"
    fast = est._search(ctx, spec, s.training.tokens, limit, exhaustive=False)
    full = est._search(ctx, spec, s.training.tokens, limit, exhaustive=True)
    return fast, full, len(found[0]["tp"])


def assert_same(fast, full):
    assert fast.enumerated == full.enumerated
    assert fast.fitting == full.fitting
    assert fast.best == full.best
    # every column of every kept row, exactly (floats included): the same numbers, the same order
    assert list(fast.table.columns) == list(full.table.columns)
    assert fast.table.equals(full.table)


def test_tiny_model_trains_fastest_with_data_parallelism_only():
    # 124M parameters x 16 bytes (mixed-precision Adam, Rajbhandari 2020 Sec. 3.1) = 2 GB: every
    # plan fits one 80 GB H100 without sharding. All plans do the same FLOPs on the same 8 GPUs;
    # tensor, pipeline and context parallelism only add communication and bubbles and shrink the
    # GEMMs, so TP 1, PP 1, CP 1 (DP 8) must rank first.
    s = scenario(TINY, par={"global_batch_size": 256})
    fast, full, evaluated = both(s, limit=50)
    assert_same(fast, full)
    best = fast.best
    assert (best.tensor, best.pipeline, best.context, best.data) == (1, 1, 1, 8)
    assert fast.fitting == fast.enumerated  # nothing this small runs out of memory
    assert evaluated < fast.enumerated / 4


def test_memory_limited_model_fits_only_with_pipelining():
    # Llama 2 7B (6.74e9 parameters, Touvron 2023 Table 1) with TP 1 and no ZeRO / distributed
    # optimizer holds 16 bytes per parameter: 107.8e9 B = 100.4 GiB > the 80 GiB of an H100, so no
    # PP 1 plan fits; PP 2 halves that to 50.2 GiB, which leaves room for activations.
    s = scenario({"preset": "llama2-7b"}, par={"tensor": 1, "zero_stage": 0, "distributed_optimizer": False,
                                               "global_batch_size": 64})
    fast, full, _ = both(s, limit=50)
    assert_same(fast, full)
    assert fast.best.pipeline >= 2
    every = est._search(build_context(s)[0], s.parallelism, s.training.tokens, None).table  # all plans
    assert (every["pp"] == 1).any() and not every.loc[every["pp"] == 1, "fits"].any()
    assert every["fits"].sum() == fast.fitting > 0


def test_fewer_fitting_plans_than_rows_fills_the_table_with_the_fastest_that_do_not_fit():
    # the same memory-limited model, a table longer than the fitting plans: every fitting plan is
    # listed first, then the non-fitting ones by speed, as in the exhaustive ranking
    s = scenario({"preset": "llama2-7b"}, par={"tensor": 1, "zero_stage": 0, "distributed_optimizer": False,
                                               "global_batch_size": 64})
    fast, full, _ = both(s, limit=500)
    assert 0 < fast.fitting < 500 < fast.enumerated
    assert_same(fast, full)
    assert fast.table["fits"].iloc[:fast.fitting].all() and not fast.table["fits"].iloc[fast.fitting:].any()


@pytest.mark.parametrize("model, server, nodes, par, training", [
    ({"preset": "mixtral-8x7b"}, "dgx-h100", 4, {}, {}),  # experts: EP and its all-to-alls
    ({"preset": "llama2-13b"}, "dgx-h100", 8, {"global_batch_size": 256}, {"framework": "deepspeed"}),  # ZeRO-3 prefetch
    ({"preset": "llama2-7b"}, "dgx-h100", 4, {}, {"framework": "torchtitan"}),  # FSDP unit prefetch, with TP and CP
    ({"preset": "llama3-8b"}, "dgx-h100", 2, {}, {"precision": "fp8", "flash_attention": False}),
    ({"preset": "gpt3-175b"}, "dgx-a100-640gb", 16, {}, {}),  # no global batch given: one per DP x micro-batch
    ({"preset": "bloom-176b"}, "dgx-h100", 24, {"global_batch_size": 2048}, {}),  # tied embeddings, 70 layers
])
def test_fast_search_equals_exhaustive_search(model, server, nodes, par, training):
    fast, full, evaluated = both(scenario(model, nodes, server, par, training), limit=100)
    assert_same(fast, full)
    assert evaluated < fast.enumerated / 2


def test_shipped_example_plan_table_equals_exhaustive_search():
    # Llama 3 70B on 512 H100: the Training tab's table and the automatic plan
    s = load_scenario(example_paths()["llama3-70b-512-h100"])
    fast, full, evaluated = both(s, limit=est.SEARCH_TABLE_ROWS)
    assert_same(fast, full)
    assert evaluated < fast.enumerated / 20


def test_step_time_bound_holds_for_every_plan_with_deepspeed_prefetch():
    # the bound leaves out the exposed data-parallel time; DeepSpeed's ZeRO-3 prefetch computes it
    # as a sum over modules minus the compute, the case where rounding could take it below zero
    s = scenario({"preset": "llama2-13b"}, nodes=2, par={"global_batch_size": 128}, training={"framework": "deepspeed"})
    ctx = build_context(s)[0]
    space = plan_space(s.parallelism, ctx.arch, ctx.gpus, ctx.nvlink_domain)
    ib, js = np.nonzero(space.allowed)
    res = est.evaluate(ctx, space.plans(ib, js))
    bd = search.bounds(ctx, space)
    assert (res["step_time_s"] >= bd["step_lower"][bd["tk_of"][js], ib]).all()  # (time switch row, base row)
    assert np.array_equal(res["fits"], bd["fits"][js, ib])  # the factorised fit is the evaluated one
    assert (res["breakdown"]["dp_comm"][res["step_time_s"] > 0] < res["step_time_s"]).all()


def test_a_wrong_bound_is_caught_and_every_plan_evaluated(monkeypatch):
    # a bound above the true step time would drop plans that belong in the table: the evaluated
    # plans contradict it, the fast path gives up, and the search evaluates every plan instead
    s = scenario({"preset": "llama3-8b"}, nodes=2, par={"global_batch_size": 256})
    ctx = build_context(s)[0]
    right = est._search(ctx, s.parallelism, s.training.tokens, 50, exhaustive=True)
    real = search.step_time
    monkeypatch.setattr(search, "step_time", lambda c, t, d, o: (2.0 * real(c, t, d, o)[0], None))
    space = plan_space(s.parallelism, ctx.arch, ctx.gpus, ctx.nvlink_domain)
    assert search.candidates(ctx, space, 50) is None
    assert_same(est._search(ctx, s.parallelism, s.training.tokens, 50, exhaustive=False), right)


def test_a_fabric_change_reuses_the_memory_fits_and_still_equals_the_exhaustive_search():
    # memory holds bytes, it does not move them: no plan's fit depends on the link bandwidths, so a
    # search at half the fabric bandwidth (an oversubscription or NIC change) reuses the fits of
    # the first search, and must still give the exhaustive table of the slower fabric
    s = scenario({"preset": "llama3-8b"}, nodes=2, par={"global_batch_size": 256})
    ctx = build_context(s)[0]
    slow = dataclasses.replace(ctx, nic_bw=ctx.nic_bw / 2)
    tp_limit = min(ctx.nvlink_domain, ctx.gpus)
    space = plan_space(s.parallelism, ctx.arch, ctx.gpus, tp_limit)
    search._FITS.clear()
    est._search(ctx, s.parallelism, s.training.tokens, 50, exhaustive=False)
    assert len(search._FITS) == 1
    fast = est._search(slow, s.parallelism, s.training.tokens, 50, exhaustive=False)
    assert len(search._FITS) == 1  # reused, not computed again
    assert_same(fast, est._search(slow, s.parallelism, s.training.tokens, 50, exhaustive=True))
    assert np.array_equal(search.bounds(slow, space)["fits"], search.bounds(ctx, space)["fits"])


def test_fast_search_equals_exhaustive_search_with_fields_fixed_at_random():
    # fixed parallelism fields prune the plan space in every dimension (and a fixed ZeRO-3 or TP 1
    # changes which switch rows a base row allows): seeded draws of them, of the framework, the
    # precision and the rows kept, each compared with the exhaustive search
    import random

    rng = random.Random(15)
    fields = [("tensor", [1, 2, 4, 8]), ("pipeline", [1, 2, 4]), ("micro_batch_size", [1, 2, 4]),
              ("recompute", ["none", "selective", "full"]), ("zero_stage", [0, 1, 2, 3]),
              ("sequence_parallel", [True, False]), ("tp_comm_overlap", [True, False]),
              ("distributed_optimizer", [True, False]), ("context", [1, 2]), ("global_batch_size", [64, 256, 512])]
    compared = 0
    while compared < 10:
        par = {k: rng.choice(v) for k, v in fields if rng.random() < 0.2}
        training = {"framework": rng.choice(["megatron", "deepspeed", "fsdp"]), "precision": rng.choice(["bf16", "fp8"])}
        s = scenario({"preset": rng.choice(["llama3-8b", "llama2-13b", "mixtral-8x7b"])}, rng.choice([1, 2, 4]),
                     par=par, training=training)
        ctx = build_context(s)[0]
        limit = rng.choice([1, 20, 200])
        try:
            full = est._search(ctx, s.parallelism, s.training.tokens, limit, exhaustive=True)
        except est.ScenarioError:  # the fixed fields leave no valid plan
            continue
        if full.enumerated <= limit:
            continue
        space = plan_space(s.parallelism, ctx.arch, ctx.gpus, min(ctx.nvlink_domain, ctx.gpus))
        assert search.candidates(ctx, space, limit) is not None  # the bounded search itself, no fallback
        assert_same(est._search(ctx, s.parallelism, s.training.tokens, limit, exhaustive=False), full)
        compared += 1


@pytest.mark.parametrize("zero_key", ["memory_efficiency", "gemm_efficiency"])
def test_a_zero_efficiency_leaves_no_finite_bound_and_the_search_evaluates_every_plan(zero_key):
    # a Python caller can build an efficiency set the scenario refuses (0 of the peak): every time
    # is x / 0, so no lower bound is finite, nothing can be pruned, and the search falls back to
    # evaluating every plan (was an IndexError from an empty evaluation). Every step time is then
    # infinite, which is never ranked or printed: both searches refuse it the same way, naming the parts
    from gpucluster_lib.errors import GpuClusterError

    s = scenario({"preset": "llama2-7b"})
    ctx = build_context(s)[0]
    ctx = dataclasses.replace(ctx, eff=ctx.eff.replace(**{zero_key: 0.0}))
    space = plan_space(s.parallelism, ctx.arch, ctx.gpus, min(ctx.nvlink_domain, ctx.gpus))
    with np.errstate(all="ignore"):
        assert not np.isfinite(search.bounds(ctx, space)["step_lower"]).any()
        assert search.candidates(ctx, space, 5) is None
        for exhaustive in (False, True):
            with pytest.raises(GpuClusterError, match="the training step time is not a finite number: compute"):
                est._search(ctx, s.parallelism, s.training.tokens, 5, exhaustive=exhaustive)


def test_taking_no_plans_before_any_evaluation_gives_an_empty_evaluation():
    s = scenario(TINY)
    ctx = build_context(s)[0]
    space = plan_space(s.parallelism, ctx.arch, ctx.gpus, min(ctx.nvlink_domain, ctx.gpus))
    res = search._Evaluated(ctx, space).take(np.zeros(0, dtype=np.int64))
    assert len(res["step_time_s"]) == 0


def test_gpt3_zero3_overlap_above_one_is_refused_before_any_search():
    # zero3_overlap 1.3 made the ZeRO-3 exposed time negative: the bounded search then returned
    # TP4 PP8 DP2 ZeRO-2 (28,708 tokens/s) while the exhaustive one found TP8 PP1 DP8 ZeRO-3
    # (31,153 tokens/s). A hidden fraction is at most 1, so the scenario is refused at load.
    # (Megatron, whose ZeRO-3 hides that fraction; PyTorch FSDP schedules its gathers by unit.)
    from gpucluster_lib.errors import ScenarioError
    with pytest.raises(ScenarioError, match=r"^training\.efficiency\.zero3_overlap: must be from 0 to 1 "):
        scenario({"preset": "gpt3-175b"}, nodes=8, par={"global_batch_size": 512},
                 training={"framework": "megatron", "efficiency": {"zero3_overlap": 1.3}})


def test_fsdp_fp32_gathers_enter_the_factorised_memory_fit():
    # MPT-30B on 8 H100 at global batch 64: fp32 gathered parameters (Composer's pre-0.14 DEFAULT) take
    # 2 layers x 616.59M x 4 B = 4.93e9 B per GPU under ZeRO-3 instead of 2.47e9 B in bf16, so fewer plans fit;
    # the bounded search reads the same memory as the evaluation and stays exact. TorchTitan gathers one unit ahead
    # as Composer's FSDP does, and its search also has tensor parallelism (llm-foundry's is FFN-only, not searched)
    fits = {}
    for precision in ("bf16", "fp32"):
        s = scenario({"preset": "mpt-30b"}, par={"global_batch_size": 64},
                     training={"framework": "torchtitan", "param_gather_precision": precision})
        fast, full, _ = both(s, 10)
        assert_same(fast, full)
        fits[precision] = full.fitting
    assert fits["fp32"] < fits["bf16"]
