"""ZeRO-3 / FSDP terms read from the frameworks' and NCCL's sources, with values worked out by hand.

* NeMo's Megatron-FSDP gathers 16-bit parameters and runs no TP overlap beside it: NVIDIA/NeMo v2.3.0 (= 25.04,
  2b03b748) scripts/performance/utils.py lines 352-354 ("Currently FSDP does not support FP8 param gather.
  Disabling fp8 param gather.") and lines 314-325 ("Currently, TP overlap performance is poor when FSDP is used
  because of jitters. ... Disabling TP overlap.").
* NCCL's ring latency: NVIDIA/nccl src/graph/tuning.cc (01afd20a) ``nsteps = nRanks-1``, ``nInterSteps =
  nNodes-1``, ``(nsteps-nInterSteps)*intraLat + nInterSteps*interLat``.
* The FSDP root unit: torchtitan/models/llama3/parallelize_llama.py ``apply_fsdp`` (e7c0cae) lines 344-367.
* TorchTitan's op-level selective checkpointing on MoE layers: torchtitan/experiments/llama4/model/moe.py (e7c0cae)
  lines 60-85 (``torch._grouped_mm`` / ``torch.bmm``, not in ``_save_list``).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from gpucluster_lib.scenario import ParallelismSpec
from gpucluster_lib.training import core, flops, validation
from gpucluster_lib.training.comm import ring_steps_latency_s
from gpucluster_lib.training.estimate import build_context, estimate, search_plans
from gpucluster_lib.training.framework import framework
from gpucluster_lib.workloads.transformer import resolve_transformer


def _row_scenario(run_id: str, **training):
    row = validation.load_runs().set_index("run_id").loc[run_id].to_dict() | {"run_id": run_id}
    sc = validation.scenario_for(row)
    if training:
        sc = dataclasses.replace(sc, training=dataclasses.replace(sc.training, **training))
    return row, sc


def test_ring_latency_counts_the_rings_steps():
    # nccl tuning.cc: 512 ranks on 64 nodes: 511 steps, 63 across the network: 448 x 3 us + 63 x 8 us = 1,848 us
    assert ring_steps_latency_s(512, 64, 3e-6, 8e-6) == pytest.approx(1.848e-3, rel=1e-12)
    # one NVLink domain of 64 ranks (GB200 NVL72): 63 steps at 3 us = 189 us
    assert ring_steps_latency_s(64, 1, 3e-6, 8e-6) == pytest.approx(1.89e-4, rel=1e-12)
    assert ring_steps_latency_s(1, 1, 3e-6, 8e-6) == 0.0


def test_nemo_megatron_fsdp_keeps_16_bit_gathers_and_no_tp_overlap():
    fw = framework("nemo")
    assert fw.fp8_params and not fw.zero3_fp8_param_gather and not fw.zero3_tp_comm_overlap
    assert framework("megatron").zero3_fp8_param_gather and framework("torchtitan").zero3_fp8_param_gather
    # NeMo 24.07's Llama 2 70B FP8 row states fp8_params (its distributed optimizer gathers one byte); under
    # ZeRO-3 (TP1 DP32 CP2) Megatron-FSDP gathers 16 bits: two layers gathered (current and prefetched) of
    # 8192 x 10240 + 8192^2 + 3 x 8192 x 28672 + 2 x 8192 = 855,654,400 parameters, 2 bytes each:
    # 2 x 855,654,400 x 2 = 3,422,617,600 B (in FP8 the GEMM weights would be 1 byte: 1,711,341,568 B)
    row, sc = _row_scenario("nemo2407-llama2-70b-64")
    assert sc.training.fp8_params is True
    plan = ParallelismSpec(tensor=1, pipeline=1, data=32, context=2, zero_stage=3, micro_batch_size=1,
                           global_batch_size=int(row["gbs"]), recompute="selective")
    est = estimate(dataclasses.replace(sc, parallelism=plan))
    assert est.to_dict()["memory_per_gpu_bytes"]["gather_buffers"] == pytest.approx(3_422_617_600, rel=1e-9)
    assert any(f.code == "training-setting-ignored" and f.field == "training.fp8_params" for f in est.findings)
    # the same plan's step with fp8_params off: identical (ZeRO-3 gathers 16 bits either way)
    off = estimate(dataclasses.replace(sc, parallelism=plan,
                                       training=dataclasses.replace(sc.training, fp8_params=False)))
    assert est.step_time_s == pytest.approx(off.step_time_s, rel=1e-12)


def test_plan_search_offers_nemo_no_one_byte_zero3_gathers():
    # With one-byte ZeRO-3 gathers (FP8 weights) the search preferred TP1 DP32 CP2 ZeRO-3 for this row;
    # with Megatron-FSDP's 16-bit gathers it is a ZeRO-2 plan, and no plan in the table pairs ZeRO-3 with TP overlap.
    row, sc = _row_scenario("nemo2407-llama2-70b-64")
    res = search_plans(sc, spec=ParallelismSpec(auto=True, global_batch_size=int(row["gbs"]),
                                               sharded_collectives=row["collectives"]), limit=20)
    assert res.best.zero_stage < 3
    assert not ((res.table["zero"] == 3) & (res.table["tpo"] == 1)).any()
    # the plan space: with the framework's zero3_tp_comm_overlap false no allowed cell has ZeRO-3 and TP overlap
    from gpucluster_lib.training.plans import PlanCaps, plan_space

    spec = ParallelismSpec(auto=True, global_batch_size=int(row["gbs"]))
    for z3_tpo, expected in ((True, True), (False, False)):
        space = plan_space(spec, sc_arch(sc), 64, 8, 8, PlanCaps(zero3_tp_overlap=z3_tpo))
        pair = (space.switches["zero"] == 3) & (space.switches["tpo"] == 1)
        assert bool((space.allowed & pair[None, :]).any()) is expected


def sc_arch(sc):
    return build_context(sc)[0].arch


def test_fsdp_root_unit_is_the_last_reduction():
    # Llama 3.1 8B untied (vocabulary 128,256, hidden 4,096), TP 1, one stage: embedding 525,336,576 + output layer
    # 525,336,576 + final norm 4,096 = 1,050,677,248 parameters
    emb = 128256 * 4096
    assert core.root_unit_params(emb, emb + 4096, True, 0.0, 0.0) == 1_050_677_248
    # with pipeline stages the larger end stage's root: the first's embedding or the last's output layer and norm
    assert core.root_unit_params(emb, emb + 4096, False, 2.0, 1.0) == emb
    assert core.root_unit_params(emb, emb + 4096, False, 1.0, 2.0) == emb + 4096
    assert framework("torchtitan").dp_last_reduction == framework("fsdp").dp_last_reduction == "root_unit"
    assert framework("nemo").dp_last_reduction == framework("megatron").dp_last_reduction == "embedding"


def test_megatron_fsdp_reduce_scatter_queue_in_memory():
    # GPT-3 175B layer: 12 h^2 + 13 h with h = 12,288: 1,812,099,072 parameters; two in the queue in 16 bits:
    # 2 x 1,812,099,072 x 2 = 7,248,396,288 B
    h = 12288
    lp = 12 * h * h + 13 * h
    assert lp == 1_812_099_072
    ctx = core.Context(arch=resolve_transformer("gpt3-175b"), gpus=8, gpus_per_node=8, nvlink_domain=8,
                       peak_flops=1e15, peak16_flops=1e15, memory_bw=3e12, memory_capacity=8e10, nvlink_bw=4.5e11,
                       nic_bw=5e10, eff=build_context(_row_scenario("nemo2407-gpt3-175b-512")[1])[2],
                       framework=framework("nemo"))
    assert float(core.reduce_queue_bytes(ctx, lp)) == pytest.approx(7_248_396_288, rel=1e-12)
    assert framework("fsdp").zero3_reduce_queue_layers == framework("torchtitan").zero3_reduce_queue_layers == 0.0


def test_torchtitan_selective_recompute_flops():
    # Llama 3.1 8B: K (1024), output projection (4096) and w3 (14336) of every layer, 2 x 4096 x (...) x 32
    arch = resolve_transformer("llama3-8b")
    assert flops.every_second_mm_flops_per_token(arch) == 2 * 4096 * (1024 + 4096 + 14336) * 32 == 5_100_273_664
    assert flops.hardware_flops_per_token(arch, "selective", selective="every_second_mm") == pytest.approx(
        flops.model_flops_per_token(arch) + 5_100_273_664, rel=1e-12)
    # Mixtral 8x7B (32 MoE layers, top-2 of 8 experts of 3 x 4096 x 14336): K and O on every layer
    # 2 x 4096 x (1024 + 4096) x 32 = 1,342,177,280, the two routed experts in full 2 x 32 x 2 x 176,160,768 =
    # 22,548,578,304: 23,890,755,584 FLOP/token
    moe = resolve_transformer("mixtral-8x7b")
    assert flops.every_second_mm_flops_per_token(moe) == 23_890_755_584


def test_torchtitan_selective_reruns_k_and_o_on_moe_layers_and_the_experts():
    # every_second_mm_s on an all-MoE model at 1e15 FLOP/s, 16,384 tokens, t_experts = 1 ms: K + O
    # 2 x 16384 x 4096 x (1024 + 4096) / 1e15 = 0.687195 ms, plus the experts 1 ms (no dense w3): 1.687195 ms
    _, sc = _row_scenario("torchtitan-h200-llama31-8b-32")
    ctx = dataclasses.replace(build_context(sc)[0], arch=resolve_transformer("mixtral-8x7b"))
    flops_only = lambda m, k, n: 2.0 * m * k * n / 1e15  # noqa: E731
    assert core.every_second_mm_s(ctx, flops_only, 16384.0, 1.0, 1e-3) == pytest.approx(1.687195e-3, rel=1e-6)
    assert np.isfinite(core.every_second_mm_s(ctx, flops_only, np.array([16384.0]), np.array([1.0]), 0.0)).all()
