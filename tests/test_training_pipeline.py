"""Uneven pipeline stages, TP / DP overlap, framework terms, ZeRO-3 buffers, the plan space.

Expected values are published layouts or worked by hand from the cited formula; the source
is on each line.
"""

from __future__ import annotations

import numpy as np
import pytest

from gpucluster_lib.errors import CatalogError, ScenarioError
from gpucluster_lib.scenario import ParallelismSpec, from_dict
from gpucluster_lib.training import build_context, estimate, evaluate, search_plans
from gpucluster_lib.training.framework import framework, framework_from_rows, framework_rows
from gpucluster_lib.training.plans import (
    balanced_layout,
    enumerate_plans,
    interleavings,
    resolve_layout,
)
from gpucluster_lib.workloads.transformer import resolve_transformer


def scen(model="gpt3-175b", nodes=128, accelerator="a100-sxm4-80gb", gbps=200, training=None, **par):
    base = {"tensor": 8, "pipeline": 8, "micro_batch_size": 1, "global_batch_size": 1536, "recompute": "full"}
    return from_dict({"model": {"preset": model}, "hardware": {"accelerator": accelerator, "nodes": nodes},
                      "network": {"inter_node_gbps_per_gpu": gbps}, "parallelism": {**base, **par},
                      "training": {"tokens": 3e11, **(training or {})}})


def llama405(**par):
    return scen("llama3-405b", nodes=1024, accelerator="h100-sxm5-80gb", gbps=400,
                **{"tensor": 8, "pipeline": 16, "global_batch_size": 2048, "recompute": "none",
                   "zero_stage": 1, **par})


# ----------------------------------------------------------------------------- layouts


def test_bloom_layout_embedding_and_loss_as_slots():
    # BLOOM 176B: 70 layers + embedding + output = 72 slots on 12 stages of 6 (BigScience tr11 layout)
    assert balanced_layout(70, 12, True, True) == (5,) + (6,) * 10 + (5,)
    # without the flags the balanced split puts the spare slots on the middle stages: the same layout
    assert balanced_layout(70, 12) == (5,) + (6,) * 10 + (5,)


def test_llama3_layout_one_layer_fewer_on_first_and_last():
    # Llama 3 405B: 126 layers on 16 stages, one fewer on the first and the last (Llama 3 paper Sec. 3.3.2)
    spec = ParallelismSpec(pipeline=16, first_stage_layers=7, last_stage_layers=7)
    assert resolve_layout(spec, 126, 16) == (7,) + (8,) * 14 + (7,)
    assert balanced_layout(126, 16) == (7,) + (8,) * 14 + (7,)
    assert resolve_layout(ParallelismSpec(pipeline=16, pipeline_layers=[7] + [8] * 14 + [7]), 126, 16) == \
        (7,) + (8,) * 14 + (7,)
    assert resolve_layout(ParallelismSpec(pipeline=8), 96, 8) is None  # 12 each: equal stages
    # the stage count follows from the list when pipeline is not given
    est = estimate(llama405(pipeline=None, pipeline_layers=[7] + [8] * 14 + [7]))
    assert est.plan.pipeline == 16 and est.stages["layers_per_stage"] == [7] + [8] * 14 + [7]


def test_published_layouts_are_not_refused():
    bloom = estimate(scen("bloom-176b", nodes=48, gbps=50, tensor=4, pipeline=12, micro_batch_size=2,
                          global_batch_size=2048, zero_stage=1, embedding_in_pipeline_split=True,
                          loss_in_pipeline_split=True, training={"framework": "deepspeed"}))
    assert bloom.stages["layers_per_stage"] == [5] + [6] * 10 + [5]
    assert not any(f.code == "training-pipeline-uneven-split" for f in bloom.findings)  # the layout was given
    llama = estimate(llama405(first_stage_layers=7, last_stage_layers=7))
    assert llama.stages["layers_per_stage"] == [7] + [8] * 14 + [7]
    plain = estimate(llama405())  # 126 on 16 with no layout: balanced split and a finding, not an error
    assert plain.stages["layers_per_stage"] == [7] + [8] * 14 + [7]
    assert any(f.code == "training-pipeline-uneven-split" and f.field == "parallelism.pipeline"
               for f in plain.findings)


def test_interleaving_needs_equal_chunks_on_every_stage():
    # Megatron-Core builds layers / v layers in each model chunk of a stage (core_r0.11.0 transformer_block.py
    # get_num_layers_to_build: "num_layers_per_pipeline_rank should be divisible by vp_size"); with
    # account_for_embedding / account_for_loss the embedding and the output layer count as one layer each
    # Llama 3 405B, 7/8../7 (Llama 3 paper Sec. 3.3.2: "the first model chunk on the first stage has only the
    # embedding"), embedding and loss counted as slots: 8 layer slots on every stage, so v = 1, 2, 4 or 8 (v = 8:
    # one slot per chunk); the same layer counts without the slots: 7 and 8 share only 1
    assert interleavings((7,) + (8,) * 14 + (7,), True, True) == [1, 2, 4, 8]
    assert interleavings((7,) + (8,) * 14 + (7,)) == [1]
    # BLOOM 5/6../5 (72 slots, 6 a stage): the divisors of 6
    assert interleavings((5,) + (6,) * 10 + (5,), True, True) == [1, 2, 3, 6]
    # Llama 3 70B on 8 stages with the embedding/loss slots, 9/11/11/10/10/10/10/9: 10 and 11 share no divisor
    # but 1, so no interleaving (the audit found PP8x5 searched here: 9 layers do not split into 5 chunks)
    assert interleavings(balanced_layout(80, 8, True, True), True, True) == [1]
    # 92 layers on 3 stages, 31/31/30 with the loss as a slot of the last: 31 chunks of one layer, the last chunk
    # of the last stage the output layer; without the slot only 1
    assert interleavings((31, 31, 30), False, True) == [1, 31]
    assert interleavings((31, 31, 30)) == [1]
    assert interleavings((20,) * 4) == [1, 2, 4, 5, 10, 20]  # equal stages: the divisors of 20
    # an equal split counts no slot: 40 layers on each of 2 stages take the divisors of 40, never 41 (v above a
    # stage's 40 layers; 41 divides 40 + 1 only if the embedding or the loss were a slot); with both slots
    # counted each stage has 41 slots (balanced_layout(80, 2, True, True) = 40 + 40): 1 and 41
    assert interleavings((40, 40)) == [1, 2, 4, 5, 8, 10, 20, 40]
    assert interleavings((40, 40), True, True) == [1, 41]
    assert interleavings((40, 40), True, False) == [1]  # 41 and 40 share only 1


def test_pp2_with_40_layers_refuses_41_chunks():
    # Llama 3 70B (80 layers) on TP8 PP2: 40 layers a stage; 41 chunks would need the embedding or the loss as a
    # slot, which an equal split does not count (the review found it accepted, with a 0.0135 s bubble)
    with pytest.raises(ScenarioError, match=r"^parallelism.virtual_stages: 41 does not divide the 40 layers per "
                                            r"stage; valid: 1, 2, 4, 5, 8, 10, 20, 40$"):
        estimate(scen("llama3-70b", nodes=8, accelerator="h100-sxm5-80gb", gbps=400, tensor=8, pipeline=2,
                      virtual_stages=41, global_batch_size=64))
    # the search does not offer it either: Llama 3 8B (32 layers) on PP2 gets the divisors of 16, not 17
    s = scen("llama3-8b", nodes=2, accelerator="h100-sxm5-80gb", gbps=400)
    ctx = build_context(s)[0]
    p = enumerate_plans(ParallelismSpec(auto=True, pipeline=2, global_batch_size=512), ctx.arch, ctx.gpus,
                        ctx.nvlink_domain)
    assert set(p["vp"].tolist()) == {1, 2, 4, 8, 16}


def test_written_interleaving_on_uneven_stages_is_refused_unless_chunks_are_equal():
    slots = {"embedding_in_pipeline_split": True, "loss_in_pipeline_split": True}
    ok4 = estimate(llama405(virtual_stages=4, **slots))
    ok8 = estimate(llama405(virtual_stages=8, **slots))
    assert ok4.plan.virtual_stages == 4 and ok8.plan.virtual_stages == 8
    assert ok4.stages["layers_per_stage"] == [7] + [8] * 14 + [7]
    # 9/11/11/10/10/10/10/9 layers in 5 chunks a stage: 9 and 11 do not split into 5 (nor 10 + 1 into 5 either)
    with pytest.raises(ScenarioError, match=r"parallelism.virtual_stages: 5 model chunks per stage need every "
                                            r"stage's layers to split into 5 equal chunks.*allow 1;"):
        estimate(scen("llama3-70b", nodes=8, accelerator="h100-sxm5-80gb", gbps=400, tensor=8, pipeline=8,
                      virtual_stages=5, global_batch_size=64, embedding_in_pipeline_split=True,
                      loss_in_pipeline_split=True))
    # 7/8../7 in 3 chunks: neither 7 + 1 nor 8 splits into 3
    with pytest.raises(ScenarioError, match=r"chunks, the embedding counting as one layer of the first stage and the "
                                            r"output layer and loss as one of the last; stages of 7 to 8 layers "
                                            r"\(first 7, last 7\) allow 1, 2, 4, 8;"):
        estimate(llama405(virtual_stages=3, **slots))
    # the same 7/8../7 given as layer counts counts no slot (Megatron-Core refuses its slot options beside
    # explicit first- and last-stage counts): 7 layers do not split into 4 chunks
    with pytest.raises(ScenarioError, match=r"4 model chunks per stage need every stage's layers to split into 4 "
                                            r"equal chunks; stages of 7 to 8 layers \(first 7, last 7\) allow 1;"):
        estimate(llama405(first_stage_layers=7, last_stage_layers=7, virtual_stages=4))


def test_interleaving_needs_micro_batches_a_multiple_of_the_stages():
    # Megatron-Core core_r0.8.0 forward_backward_pipelining_with_interleaving: "number of microbatches ... is not
    # divisible by pipeline-model-parallel-size when using interleaved schedule" (schedules.py line 614). GPT-3 175B
    # on TP8 PP4 (32 GPUs, DP1), 2 chunks, micro-batch 1, global batch 6: 6 micro-batches on 4 stages
    with pytest.raises(ScenarioError, match=r"^parallelism.virtual_stages: 2 model chunks per stage \(the interleaved "
                                            r"schedule\) need the micro-batches per step to be a multiple of the 4 "
                                            r"pipeline stages, but a global batch of 6 sequences over data "
                                            r"parallelism 1 x micro-batch size 1 gives 6; use a global batch that is "
                                            r"a multiple of 4 \(data parallelism x micro-batch size x pipeline "
                                            r"stages\), e.g. 8, or no interleaving$"):
        estimate(scen(nodes=4, pipeline=4, virtual_stages=2, global_batch_size=6))
    assert estimate(scen(nodes=4, pipeline=4, virtual_stages=2, global_batch_size=8)).plan.micro_batches == 8
    assert estimate(scen(nodes=4, pipeline=4, global_batch_size=6)).plan.micro_batches == 6  # 1F1B takes any m
    # the same plan searched with only the global batch free of a multiple is refused with the same words
    with pytest.raises(ScenarioError, match=r"need the micro-batches per step to be a multiple of the 4 pipeline"):
        estimate(scen(nodes=4, pipeline=4, virtual_stages=2, global_batch_size=6, data=1, auto=True))
    # the default global batch of an interleaved plan: 2,048 sequences of 2,048 tokens (4M tokens) rounded up to a
    # multiple of DP3 x mb1 x PP4 = 12: 2,052 (684 = 4 x 171 micro-batches); without interleaving a multiple of 3:
    # 2,049 (683 micro-batches)
    inter = estimate(scen(nodes=12, pipeline=4, virtual_stages=2, global_batch_size=None))
    assert inter.plan.data == 3 and inter.plan.global_batch_size == 2052 and inter.plan.micro_batches == 684
    assert estimate(scen(nodes=12, pipeline=4, global_batch_size=None)).plan.global_batch_size == 2049
    # the search with the global batch free: every interleaved plan's micro-batches are a multiple of its stages
    ctx = build_context(scen(nodes=12))[0]
    p = enumerate_plans(ParallelismSpec(auto=True, tensor=8), ctx.arch, ctx.gpus, ctx.nvlink_domain)
    m = p["gbs"] // (p["dp"] * p["mb"])
    inter = p["vp"] > 1
    assert inter.any() and np.all(m[inter] % p["pp"][inter] == 0)
    assert np.any(m[~inter] % p["pp"][~inter] != 0)  # 1F1B plans keep the plain default (e.g. 2,049 on DP3)


def test_plan_search_tries_only_interleavings_with_equal_chunks():
    s = scen("llama3-70b", nodes=64, accelerator="h100-sxm5-80gb", gbps=400)
    ctx = build_context(s)[0]
    p = enumerate_plans(ParallelismSpec(auto=True, global_batch_size=512), ctx.arch, ctx.gpus, ctx.nvlink_domain)
    slots8 = (p["pp"] == 8) & (p["lf"] == 9)  # the embedding/loss-slot split 9/11/../10 of 80 layers on 8 stages
    assert slots8.any() and set(p["vp"][slots8]) == {1}
    even8 = (p["pp"] == 8) & (p["lf"] == 10)  # 10 each
    assert set(p["vp"][even8]) == {1, 2, 5, 10}
    # every plan's stages split evenly into its chunks: the layers, or the slot layout's layers with the
    # embedding on the first stage and the loss on the last (balanced_layout(80, p, True, True))
    for pp, lf, ll, lm, vp in {tuple(int(x) for x in r) for r in zip(p["pp"], p["lf"], p["ll"], p["lm"], p["vp"],
                                                                          strict=True)}:
        if pp > 1:
            plain = lf % vp == 0 and ll % vp == 0 and (pp == 2 or lm % vp == 0)
            slotted = (lf + 1) % vp == 0 and (ll + 1) % vp == 0 and (pp == 2 or lm % vp == 0) \
                and (lf, ll) == (balanced_layout(80, pp, True, True)[0], balanced_layout(80, pp, True, True)[-1])
            assert plain or slotted, (pp, lf, ll, lm, vp)


def test_one_f_one_b_step_from_max_and_sum_of_stage_times():
    est = estimate(llama405(first_stage_layers=7, last_stage_layers=7))
    t = est.stages["stage_time_per_micro_batch_s"]
    b = est.time_breakdown_s
    m = 2048 // 64  # micro-batches: 2048 sequences / (DP64 x mb1)
    pipe = sum(b[k] for k in ("compute", "recompute", "tp_comm", "cp_comm", "ep_comm", "pp_comm", "bubble",
                              "framework"))
    # 1F1B with unequal stages: T = (m - 1) max t_i + sum t_i (flow-shop makespan)
    assert pipe == pytest.approx((m - 1) * max(t) + sum(t), rel=1e-9)
    # the first and last stages carry the embedding and the output layer besides their 7 layers
    assert t[0] < t[1] == pytest.approx(t[7]) and t[-1] > t[1] * 7 / 8


def test_moving_a_layer_off_the_output_stage_is_faster():
    # the last stage carries the output layer and loss (h x V GEMMs, V = 128,256): it should get fewer layers
    light_last = estimate(llama405(pipeline_layers=[8] + [8] * 14 + [6]))
    heavy_last = estimate(llama405(pipeline_layers=[6] + [8] * 14 + [8]))
    assert light_last.step_time_s < heavy_last.step_time_s
    assert heavy_last.stages["bottleneck_stage"] == 15


def test_memory_per_stage_reports_the_largest_and_its_stage():
    est = estimate(llama405(first_stage_layers=7, last_stage_layers=7))
    mem = est.stages["stage_memory_bytes"]
    # 1F1B: stage i holds min(p - i, m) micro-batches (Narayanan 2021 Sec. 2.2.1): stage 1 keeps 8 layers x 15
    # in flight against stage 0's 7 x 16 (+ the embedding), so stage 1 needs the most
    assert est.stages["memory_stage"] == 1 == int(np.argmax(mem))
    assert est.memory_per_gpu_bytes["total"] == pytest.approx(max(mem))
    assert mem[1] > mem[0] > mem[8]


def test_zero3_model_states_read_16_bytes_per_parameter_over_dp():
    s = scen("llama2-7b", nodes=2, accelerator="h100-sxm5-80gb", gbps=400, tensor=1, pipeline=1,
             global_batch_size=64, zero_stage=3, training={"grad_reduce_precision": "bf16"})
    est = estimate(s)
    m = est.memory_per_gpu_bytes
    p = resolve_transformer("llama2-7b").total_params()
    # ZeRO (Rajbhandari 2020) Sec. 5.1: stage 3 keeps (2 + 2 + 12) P / N_d bytes of model states (16-bit gradients)
    assert m["weights"] + m["gradients"] + m["optimizer_states"] == pytest.approx(16 * p / 16, rel=1e-9)
    # Megatron-Core's bf16 default reduces and holds fp32 gradients (grad_reduce_in_fp32): (2 + 4 + 12) P / N_d
    m32 = estimate(scen("llama2-7b", nodes=2, accelerator="h100-sxm5-80gb", gbps=400, tensor=1, pipeline=1,
                        global_batch_size=64, zero_stage=3)).memory_per_gpu_bytes
    assert m32["weights"] + m32["gradients"] + m32["optimizer_states"] == pytest.approx(18 * p / 16, rel=1e-9)
    # plus the gathered parameters of the current and the prefetched layer, as their own line
    layer = (p - 2 * 32000 * 4096) / 32  # llama2-7b: 32 layers, untied 32,000 x 4,096 embedding and output
    assert m["gather_buffers"] == pytest.approx(2 * layer * 2, rel=1e-3)


def test_deepspeed_zero3_gathered_parameters_and_unreduced_gradients_at_the_backward_peak():
    # DeepSpeed ZeRO-3 v0.3.13-v0.4.0 defaults (deepspeed/runtime/zero/constants.py): reduce_bucket_size 5e8,
    # stage3_max_live_parameters 1e9, stage3_prefetch_bucket_size 5e7, contiguous_gradients false. In the backward
    # (FC2, FC1, proj, QKV, then the layer below) module j's weight gradient is made while the bucket reduced before
    # (partitioned only at the next reduction) and the bucket being filled hold full 16-bit gradients
    # (stage3.py reduce_ipg_grads / partition_previous_reduced_grads); the module computing is gathered, and the next
    # one is prefetched only while fewer than 1e9 elements are gathered (prefetch_next_sub_modules).
    # GPT-3 175B layer: 12 x 12288^2 + 13 x 12288 = 1,812,099,072 parameters; QKV 3/12 (4.53e8), proj 1/12 (1.51e8),
    # FC1 and FC2 4/12 (6.04e8) each: every module fills a bucket of its own (proj + QKV = 6.04e8 > 5e8).
    # At FC2: gradients proj + QKV (the layer above) + FC2 = 8/12, gathered FC2 + FC1 prefetched (6.04e8 < 1e9) = 8/12;
    # at FC1: gradients QKV + FC2 + FC1 = 11/12, gathered FC1 + proj = 5/12: both 16/12 of a layer, the first is kept.
    layer = 1_812_099_072
    base = dict(model="gpt3-175b", nodes=48, tensor=1, pipeline=1, micro_batch_size=4, zero_stage=3)
    ds = estimate(scen(**base, training={"framework": "deepspeed"})).memory_per_gpu_bytes
    assert ds["gather_buffers"] == pytest.approx(8 / 12 * layer * 2, rel=1e-9)        # 2,416,132,096 B
    assert ds["unreduced_gradients"] == pytest.approx(8 / 12 * layer * 2, rel=1e-9)   # 2,416,132,096 B
    fsdp = estimate(scen(**base, training={"framework": "fsdp"})).memory_per_gpu_bytes
    assert fsdp["gather_buffers"] == pytest.approx(2 * layer * 2, rel=1e-9)           # two FSDP units (layers)
    assert fsdp["unreduced_gradients"] == 0.0


def test_deepspeed_zero3_buffers_of_a_530b_layer_peak_at_fc1():
    # GPT 530B (Narayanan 2021 Table 2: h 20480, 4h FFN): a layer of 12 x 20480^2 + 13 x 20480 = 5,033,431,040
    # parameters; QKV 1.26e9, proj 4.19e8, FC1 and FC2 1.68e9 elements. FC2, FC1 and QKV exceed
    # stage3_max_live_parameters (1e9): nothing is prefetched behind them; behind proj (4.19e8) the QKV weight is.
    # Per backward module (gradients alive / gathered, in twelfths of a layer): FC2 8 / 4, FC1 (QKV of the layer
    # above, FC2, FC1) 11 / 4, proj 9 / 1 + 3, QKV 8 / 3: the peak is at FC1, 15/12 of a layer in 16 bits.
    from gpucluster_lib.training.core import deepspeed_zero3_buffers

    layer = 12 * 20480**2 + 13 * 20480
    ctx = build_context(scen(model="megatron-529.6b", nodes=80, tensor=1, pipeline=1, micro_batch_size=4,
                             zero_stage=3, training={"framework": "deepspeed"}))[0]
    gathered, grads = deepspeed_zero3_buffers(ctx, np.array([float(layer)]))
    assert gathered[0] == pytest.approx(4 / 12 * layer, rel=1e-12)   # FC1's weight: 1.68e9 elements, 3.36 GB
    assert grads[0] == pytest.approx(11 / 12 * layer, rel=1e-12)     # QKV + FC2 + FC1: 4.61e9 elements, 9.23 GB



# ----------------------------------------------------------------------------- overlap


def test_tp_comm_overlap_hides_tensor_parallel_communication():
    base = dict(model="llama3-70b", nodes=64, accelerator="h100-sxm5-80gb", gbps=400, pipeline=4,
                global_batch_size=512, recompute="selective")
    plain = estimate(scen(**base))
    ovl = estimate(scen(**base, tp_comm_overlap=True))
    serial = estimate(scen(**base, training={"efficiency": {"tp_overlap": 0.0}}))  # the 2021 serial model
    assert ovl.time_breakdown_s["tp_comm"] < plain.time_breakdown_s["tp_comm"] < serial.time_breakdown_s["tp_comm"]
    assert estimate(scen(**base, training={"efficiency": {"tp_overlap": 1.0}})).time_breakdown_s["tp_comm"] == 0
    assert ovl.plan.tp_comm_overlap and "TP-overlap" in ovl.plan.label()
    with pytest.raises(ScenarioError, match="parallelism.tp_comm_overlap"):
        estimate(scen(**base, tp_comm_overlap=True, sequence_parallel=False))


def test_tp_comm_overlap_only_inside_the_nvlink_domain():
    # Transformer Engine's userbuffers overlap needs the TP group on one NVLink fabric: "Tensor-parallel GPUs
    # must be on a single node, and connected over NVLink/NVSwitch" (TE examples/pytorch/comm_gemm_overlap/
    # README.md, v2.2-v2.18; github.com/NVIDIA/TransformerEngine/issues/1071); multi-node NVLink from TE v2.2 (pull 1470)
    base = dict(model="gpt3-175b", nodes=64, accelerator="h100-sxm5-80gb", gbps=400, tensor=16, pipeline=4,
                global_batch_size=512, recompute="selective", allow_tp_across_nodes=True)
    with pytest.raises(ScenarioError, match=r"parallelism.tp_comm_overlap: needs the tensor-parallel group inside "
                                            r"one NVLink domain .* a tensor parallelism of 16 spans NVLink domains "
                                            r"of 8 GPUs; lower the tensor parallelism to 8 or less"):
        estimate(scen(**base, tp_comm_overlap=True))
    # not asked for: TP 16 runs without the overlap, and the engine does not hide its cross-node collectives
    plain = estimate(scen(**base))
    assert not plain.plan.tp_comm_overlap
    ctx = build_context(scen(**base))[0]
    arrays = plain.plan.arrays(ctx.arch.layers)
    with_flag = evaluate(ctx, {**arrays, "tpo": np.array([1])})  # the flag forced past the plan check
    assert with_flag["breakdown"]["tp_comm"][0] == plain.time_breakdown_s["tp_comm"]
    # inside the node the same flag does hide TP traffic (the guard is the domain, not the flag)
    tp8 = {**base, "tensor": 8, "allow_tp_across_nodes": False}
    assert estimate(scen(**tp8, tp_comm_overlap=True)).time_breakdown_s["tp_comm"] < \
        estimate(scen(**tp8)).time_breakdown_s["tp_comm"]
    # the plan search never pairs the overlap with a TP group beyond the node's 8 GPUs, and does within it
    p = enumerate_plans(ParallelismSpec(auto=True, global_batch_size=512, allow_tp_across_nodes=True), ctx.arch,
                        ctx.gpus, ctx.gpus, ctx.nvlink_domain)
    assert (p["tp"] == 16).any() and not ((p["tp"] > 8) & (p["tpo"] == 1)).any()
    assert ((p["tp"] == 8) & (p["tpo"] == 1)).any()
    # with TP 16 and the overlap both fixed, the search says why nothing is left
    with pytest.raises(ScenarioError, match=r"parallelism.tp_comm_overlap: needs the tensor-parallel group"):
        estimate(scen(**{**base, "pipeline": None}, auto=True, tp_comm_overlap=True))


def test_tp_comm_overlap_across_trays_of_one_nvlink_domain():
    # GB200 NVL72: one NVLink domain of 72 GPUs across 18 trays of 4 (catalogue scaleup_link), so TP 24 (three
    # groups a rack; GPT-3's 96 heads split in 24) may overlap
    s = from_dict({"model": {"preset": "gpt3-175b"}, "hardware": {"server": "gb200-nvl72", "nodes": 1},
                   "parallelism": {"tensor": 24, "pipeline": 1, "global_batch_size": 24, "micro_batch_size": 1,
                                   "recompute": "selective", "tp_comm_overlap": True}})
    est = estimate(s)
    assert est.plan.tp_comm_overlap and est.assumptions["nvlink_domain_gpus"] == 72


def test_dp_exposed_without_overlap_by_hand():
    s = scen("llama2-7b", nodes=2, accelerator="h100-sxm5-80gb", gbps=400, tensor=1, pipeline=1,
             global_batch_size=64, recompute="none", distributed_optimizer=True,
             overlap_grad_reduce=False, overlap_param_gather=False)
    est = estimate(s)
    p = resolve_transformer("llama2-7b").total_params()
    # hierarchical ring over 16 ranks on 2 nodes: min(NVLink 450 x 0.80, 8 NICs x 50 GB/s x 0.80) = 320 GB/s,
    # alpha 8 us (data/efficiency.yaml); fp32 reduce-scatter + bf16 all-gather (Thakur 2005: (n-1)/n S/B + (n-1) a)
    bw, a, n = 320e9, 8e-6, 16
    t = (n - 1) / n * p * 4 / bw + (n - 1) * a + (n - 1) / n * p * 2 / bw + (n - 1) * a
    assert est.time_breakdown_s["dp_comm"] == pytest.approx(t, rel=1e-6)
    hidden = estimate(s.replace(parallelism__overlap_grad_reduce=True, parallelism__overlap_param_gather=True))
    assert hidden.time_breakdown_s["dp_comm"] < est.time_breakdown_s["dp_comm"]
    # the last bucket, max(40M, 1M x 16) parameters, is never hidden (Megatron-Core DDP bucket size)
    assert hidden.time_breakdown_s["dp_comm"] >= 4e7 / p * t * 0.999


def test_fixed_dp_overlap_still_overrides_the_schedule():
    s = scen(dp_overlap=0.0)
    assert estimate(s).time_breakdown_s["dp_comm"] > estimate(scen()).time_breakdown_s["dp_comm"]


# ----------------------------------------------------------------------------- framework


def test_deepspeed_pipeline_factor_from_the_published_comparison():
    # Narayanan 2021 Table 2, 530B on 2240 A100: Eq. 3 FLOPs / (159 TFLOP/s x 2240) = 55.4 s, 280 micro-batches,
    # v = 3; MT-NLG (Smith 2022 Sec. 2.4): 60.1 s, 240 micro-batches, v = 1; both p = 35
    ratio = (60.1 / (240 + 34)) / (55.4 / (280 + 34 / 3))
    assert framework("deepspeed").pipeline_stage_factor == pytest.approx(ratio, abs=0.01)
    assert framework("megatron").pipeline_stage_factor == 1.0
    nemo, mega = framework("nemo").to_dict(), framework("megatron").to_dict()  # NeMo runs Megatron-Core
    # but its FP8 recipes keep FP8 primary weights (NeMo v2.3.0 bf16_with_fp8_mixed: fp8_param_gather = True)
    assert nemo["fp8_params"] and not mega["fp8_params"]
    # and its cross-entropy: NeMo 2.x fuses it by default (GPTConfig cross_entropy_loss_fusion = True, v2.0.0): 40
    # bytes a logit against Megatron-LM's unfused default, 52 (data/training_frameworks.yaml cross_entropy_losses)
    assert nemo["cross_entropy_bytes_per_logit"] == 40.0 and mega["cross_entropy_bytes_per_logit"] == 52.0
    # and its interleaved schedule overlaps the p2p transfers (NeMo 2.x MegatronCommOverlapCallback, vp > 1)
    assert nemo["overlap_p2p_comm"] and not mega["overlap_p2p_comm"]
    # and its ZeRO-3 is Megatron-Core's custom FSDP, one layer ahead (NeMo v2.3.0 use_custom_fsdp;
    # tests/test_training_megatron_fsdp.py), where Megatron-LM's row (core_r0.8.0, no ZeRO-3) keeps the fitted share
    assert (nemo["zero3_prefetch"], nemo["backward_prefetch"]) == ("unit", "pre")
    # and its Megatron-FSDP gathers 16 bits, runs no TP overlap beside it and queues two layers' unsharded gradients
    # for the reduce-scatter (NeMo v2.3.0 scripts/performance/utils.py lines 352-354 and 314-325; Megatron-LM 3cdfd613
    # fully_sharded_data_parallel.py suggested_RS_queue_capacity; tests/test_training_zero3_sources.py)
    assert not nemo["zero3_fp8_param_gather"] and not nemo["zero3_tp_comm_overlap"]
    assert nemo["zero3_reduce_queue_layers"] == 2.0
    own = ("id", "name", "fp8_params", "cross_entropy_bytes_per_logit", "cross_entropy_loss", "overlap_p2p_comm",
           "zero3_prefetch", "backward_prefetch", "zero3_fp8_param_gather", "zero3_tp_comm_overlap",
           "zero3_reduce_queue_layers")
    assert {k: v for k, v in nemo.items() if k not in own} == {k: v for k, v in mega.items() if k not in own}


def test_framework_term_is_its_own_breakdown_line():
    mega = estimate(scen())
    ds = estimate(scen(training={"framework": "deepspeed"}))
    assert mega.time_breakdown_s["framework"] == 0
    assert ds.time_breakdown_s["framework"] > 0 and ds.step_time_s > mega.step_time_s
    assert sum(ds.time_breakdown_s.values()) == pytest.approx(ds.step_time_s)
    # without pipelining (ZeRO-3) DeepSpeed's pipeline engine is not used: no framework term
    z3 = estimate(scen(tensor=1, pipeline=1, zero_stage=3, global_batch_size=2048, training={"framework": "deepspeed"}))
    assert z3.time_breakdown_s["framework"] == 0
    with pytest.raises(ScenarioError, match="training.framework"):
        scen(training={"framework": "jax"})


# ----------------------------------------------------------------------------- plan space


def test_search_covers_every_modelled_dimension():
    s = scen("llama3-70b", nodes=64, accelerator="h100-sxm5-80gb", gbps=400)
    spec = ParallelismSpec(auto=True, global_batch_size=512)
    ctx = build_context(s)[0]
    p = enumerate_plans(spec, ctx.arch, ctx.gpus, ctx.nvlink_domain)
    assert set(p["tpo"]) == {0, 1} and set(p["dopt"]) == {False, True} and set(p["zero"]) == {0, 1, 2, 3}
    assert set(p["cp"]) == {1, 2, 4, 8} and set(p["rc"]) == {0, 1, 2}
    assert (512 % (p["dp"] * p["mb"]) == 0).all()
    local = 512 // 8  # DP8: every micro-batch that divides the 64-sequence local batch, 1 to 64
    assert set(p["mb"][p["dp"] == 8]) == {1, 2, 4, 8, 16, 32, 64}
    # 80 layers: PP 16 divides; PP 32 does not (balanced split 2/3/../2), both searched
    assert {16, 32} <= set(p["pp"])
    assert ((p["pp"] == 32) & (p["lf"] == 2) & (p["lm"] == 3)).any()
    even4 = (p["pp"] == 4) & (p["lf"] == 20)  # the equal split (the embedding/loss-slot split is 19/21/21/19)
    assert set(p["vp"][even4]) == {1, 2, 4, 5, 10, 20}  # every divisor of the 20 layers per stage
    assert local == 64


def test_chunked_evaluation_equals_one_call():
    s = scen("llama3-70b", nodes=64, accelerator="h100-sxm5-80gb", gbps=400)
    ctx = build_context(s)[0]
    p = enumerate_plans(ParallelismSpec(auto=True, global_batch_size=512), ctx.arch, ctx.gpus, ctx.nvlink_domain)
    one = evaluate(ctx, p, chunk=10**9)
    parts = evaluate(ctx, p, chunk=997)
    assert np.array_equal(one["step_time_s"], parts["step_time_s"])
    assert np.array_equal(one["memory"]["total"], parts["memory"]["total"])


def test_search_result_keeps_the_best_rows_and_counts_all():
    s = scen("llama3-70b", nodes=64, accelerator="h100-sxm5-80gb", gbps=400, auto=True, tensor=None,
             pipeline=None, micro_batch_size=None, recompute=None, global_batch_size=512)
    full = search_plans(s, limit=None)
    top = search_plans(s, limit=50)
    assert len(top.table) == 50 < full.enumerated == top.enumerated == len(full.table)
    assert top.fitting == full.fitting == int(full.table["fits"].sum())
    assert top.table["tokens_per_s"].iloc[0] == full.table["tokens_per_s"].iloc[0]
    assert top.best == full.best
    est = estimate(s)
    assert est.step_time_s == pytest.approx(float(full.table["step_time_s"].iloc[0]), rel=1e-12)


def test_calibration_profile_feeds_the_training_engine():
    from gpucluster_lib.calibration.profile import scenario_profile

    s = scen("llama3-70b", nodes=64, accelerator="h100-sxm5-80gb", gbps=400, pipeline=4, global_batch_size=512)
    cal = s.replace(calibration="example-h100-public-data")
    prof = scenario_profile(cal)
    fab = prof.link("fabric")
    eff = estimate(cal).assumptions["efficiency"]
    # measured bus bandwidth over the hierarchical bound (ranks per host x 400 Gb/s = 50 GB/s per GPU)
    assert eff["network_efficiency"] == pytest.approx(fab.bus_bandwidth_gb_per_s / (fab.ranks_per_host * 50), rel=1e-9)
    assert eff["alpha_network_s"] == fab.alpha_s
    assert estimate(cal.replace(training__efficiency={"network_efficiency": 0.5})).assumptions["efficiency"][
        "network_efficiency"] == 0.5  # the scenario's own override wins


def test_deepspeed_zero3_fetches_one_module_ahead():
    """DeepSpeed ZeRO-3 prefetches the next module's weights (stage3_prefetch_bucket_size 5e7 is
    smaller than every GPT-3 175B weight, DeepSpeed partitioned_param_coordinator.py)."""
    from gpucluster_lib.training.core import _prefetch_pass, module_shares

    ctx, _, _ = build_context(from_dict({"model": {"preset": "gpt3-175b"},
                                         "hardware": {"accelerator": "a100-sxm4-80gb", "nodes": 48},
                                         "training": {"framework": "deepspeed"}}))
    # QKV 3h^2, projection h^2, FC1 4h^2, FC2 4h^2 (Narayanan 2021 Sec. 3: 12 h^2 per layer)
    assert module_shares(ctx) == pytest.approx((3 / 12, 1 / 12, 4 / 12, 4 / 12))
    # compute 12, gathers 18 per layer: max(3, 1.5) + max(1, 6) + max(4, 6) + max(4, 4.5) = 19.5 (by hand)
    assert float(_prefetch_pass(ctx, np.array(12.0), np.array(18.0))) == pytest.approx(19.5)
    # compute-bound: the gathers hide entirely (compute 24, gathers 6)
    assert float(_prefetch_pass(ctx, np.array(24.0), np.array(6.0))) == pytest.approx(24.0)


def test_deepspeed_zero3_backward_runs_beside_the_reduce_scatter_two_modules_back():
    """DeepSpeed ZeRO-3 reduces a module's gradients when the next gradient reaches the bucket and first waits
    for the reduction in flight (stage3.py v0.3.13 reduce_independent_p_g_buckets_and_remove_grads,
    reduce_ipg_grads): while module j computes, the reduce-scatter of module j+2 runs, and the next module
    down (j-1) is gathered."""
    from gpucluster_lib.training.core import _backward_pass

    ctx, _, _ = build_context(from_dict({"model": {"preset": "gpt3-175b"},
                                         "hardware": {"accelerator": "a100-sxm4-80gb", "nodes": 48},
                                         "training": {"framework": "deepspeed"}}))
    # shares 3/12, 1/12, 4/12, 4/12 (QKV, projection, FC1, FC2); compute 24, gathers 6, reduce-scatters 18:
    # QKV max(6, 6 x 4/12 + 18 x 4/12) = 8, projection max(2, 6 x 3/12 + 18 x 4/12) = 7.5,
    # FC1 max(8, 6 x 1/12 + 18 x 3/12) = 8, FC2 max(8, 6 x 4/12 + 18 x 1/12) = 8: 31.5 (by hand)
    assert float(_backward_pass(ctx, np.array(24.0), np.array(6.0), np.array(18.0))) == pytest.approx(31.5)
    # after a recomputed forward (nothing left to gather): max(6, 6) + max(2, 6) + max(8, 4.5) + max(8, 1.5) = 28;
    # pairing each module with the next one's reduce-scatter instead would give 6 + 4.5 + 8 + 8 = 26.5
    assert float(_backward_pass(ctx, np.array(24.0), 0.0, np.array(18.0))) == pytest.approx(28.0)


def test_fsdp_unit_schedule_serialises_the_prefetched_gather_behind_the_reduce_scatter():
    """PyTorch FSDP, one unit per layer (llm-foundry's fsdp_wrap_fn), every collective of a rank on one NCCL
    stream in issue order (torch/distributed/fsdp/api.py BackwardPrefetch; docs/source/notes/fsdp.rst): with
    backward prefetch each unit computes beside the reduce-scatter of the unit above and the gather of the unit
    below; without it the gather waits for the reduce-scatter. Units n = 3, forward 2, backward 4, gather 3,
    reduce-scatter 5 per unit (by hand)."""
    from gpucluster_lib.training.core import fsdp_exposed

    # forward, implicit prefetch: first gather 3, max(2, 3) beside units 0 and 1, unit 2's compute 2: 11, 5 exposed.
    # backward with prefetch: gather 3, unit 2 beside the gather of unit 1: max(4, 3) = 4, unit 1 beside the
    # reduce-scatter of 2 and the gather of 0: max(4, 5 + 3) = 8, unit 0 beside the reduce-scatter of 1:
    # max(4, 5) = 5, last reduce-scatter 5: 25, 13 exposed. Total 18.
    assert float(fsdp_exposed(2.0, 4.0, 3.0, 5.0, 3.0)) == pytest.approx(18.0)
    # no backward prefetch: 3 x (3 + 4 + 5) = 36, 24 exposed; total 29
    assert float(fsdp_exposed(2.0, 4.0, 3.0, 5.0, 3.0, prefetch=False)) == pytest.approx(29.0)
    # one unit: forward 3 + 2, backward gather 3 + 4 + reduce-scatter 5: 17, less the compute 6: 11
    assert float(fsdp_exposed(2.0, 4.0, 3.0, 5.0, 1.0)) == pytest.approx(11.0)
    # compute-bound units hide all but the first gather of each pass and the last reduce-scatter:
    # n = 3, forward 10, backward 20, gather 1, reduce-scatter 1: 1 + 1 + 1 = 3; without prefetch 1 + 3 x 2 = 7
    assert float(fsdp_exposed(10.0, 20.0, 1.0, 1.0, 3.0)) == pytest.approx(3.0)
    assert float(fsdp_exposed(10.0, 20.0, 1.0, 1.0, 3.0, prefetch=False)) == pytest.approx(7.0)


def test_composer_fsdp_mixed_precision_sets_the_gather_and_reduce_bytes():
    """Composer's FSDP mixed precision: DEFAULT from v0.16.4 gathers 16-bit parameters and reduces fp32
    (composer/trainer/mosaic_fsdp_utils.py v0.16.4, get_mixed_precision: reduce_dtype torch.float32); DEFAULT up to
    v0.13 leaves param_dtype None (fp32 gathers) and reduces in the autocast dtype (mosaic_fsdp.py v0.13.1);
    PURE gathers and reduces in 16 bits."""
    fw = framework("fsdp")
    assert (fw.zero3_gather_bytes, fw.zero3_reduce_bytes) == (2.0, 4.0)  # bf16 params, fp32 gradients
    old = {"framework": "fsdp", "param_gather_precision": "fp32", "grad_reduce_precision": "bf16"}
    ctx_old, _, _ = build_context(scen("mpt-30b", nodes=1, training=old, zero_stage=3))
    assert (ctx_old.framework.zero3_gather_bytes, ctx_old.framework.zero3_reduce_bytes) == (4.0, 2.0)
    pure = {"framework": "fsdp", "param_gather_precision": "bf16", "grad_reduce_precision": "bf16"}
    ctx_pure, _, _ = build_context(scen("mpt-30b", nodes=1, training=pure, zero_stage=3))
    assert (ctx_pure.framework.zero3_gather_bytes, ctx_pure.framework.zero3_reduce_bytes) == (2.0, 2.0)
    assert ctx_pure.framework.grad_reduce_bytes == 2.0  # the non-sharded data-parallel reduction too
    # DeepSpeed ZeRO-3 reduce-scatters the 16-bit gradients (allreduce_always_fp32 false, stage3.py v0.3.13)
    assert framework("deepspeed").zero3_reduce_bytes == 2.0


def test_fsdp_exposed_time_follows_the_gather_precision_when_communication_bound():
    """MPT-30B on 8 A100 (one node), micro-batch 1, no recomputation: a layer's bf16 gather of 12 x 7168^2 = 617M
    parameters, 1.23 GB, takes 1.23 GB x 7/8 / 255 GB/s = 4.2 ms on NVLink and its fp32 gather twice that; the
    first gather of each pass is exposed, so Composer's pre-0.14 DEFAULT (fp32 gathers) exposes more of the FSDP
    traffic than PURE (bf16)."""
    par = dict(zero_stage=3, tensor=1, pipeline=1, micro_batch_size=1, recompute="none", global_batch_size=8)
    base = {"framework": "fsdp", "grad_reduce_precision": "bf16"}
    t16 = estimate(scen("mpt-30b", nodes=1, training={**base, "param_gather_precision": "bf16"}, **par))
    t32 = estimate(scen("mpt-30b", nodes=1, training={**base, "param_gather_precision": "fp32"}, **par))
    # one micro-batch (global batch 8 = DP 8 x 1) and every unit's compute (tens of ms) longer than its gather or
    # reduce-scatter: exposed are the first gather of the forward and of the backward pass, the last reduce-scatter
    # and the root unit (embedding 50368 x 7168 + learned positions 2048 x 7168 + final norm: 29.972e9 - 48 x
    # 616.59e6 = 0.376e9 parameters) gathered and reduce-scattered, at 300 GB/s x 0.85 = 255 GB/s, ring 7/8:
    layer16 = 616.59e6 * 2 * 7 / 8 / 255e9  # 4.232 ms: one layer's bf16 gather or reduce-scatter
    root = 0.376e9 * 7 / 8 / 255e9  # 1.29 ms per byte per element
    # ring latency, NCCL's 7 ring steps over NVLink at 3 us per collective (nccl src/graph/tuning.cc), 48 a pass,
    # spread over the units by their parameter share (the layers 0.98745, the root 0.01255): 3 x 21 us x 0.98745 +
    # 2 x 48 x 21 us x 0.01255 = 0.0875 ms
    lat = 3 * 21e-6 * 0.98745 + 2 * 48 * 21e-6 * 0.01255
    assert t16.time_breakdown_s["dp_comm"] == pytest.approx(3 * layer16 + root * (2 + 2) + lat, rel=2e-3)  # 17.95 ms
    # fp32 gathers: both first gathers and the root's gather twice as long, the bf16 reduce-scatters as before
    assert t32.time_breakdown_s["dp_comm"] == pytest.approx(2 * 2 * layer16 + layer16 + root * (4 + 2) + lat,
                                                            rel=2e-3)  # 29.00 ms


def test_fsdp_gathered_parameters_take_the_gather_precision_in_memory():
    """FSDP keeps the gathered parameters of two units (the computing one and the prefetched one): MPT-30B layers
    of 12 x 7168^2 + 4 x 7168 (two layernorms) = 616.59M parameters, in fp32 (Composer's pre-0.14 DEFAULT,
    param_dtype None) 2 x 616.59M x 4 B = 4.93e9 B (4.59 GiB), in bf16 half of it."""
    par = dict(zero_stage=3, tensor=1, pipeline=1, micro_batch_size=1, recompute="none", global_batch_size=8)
    base = {"framework": "fsdp", "grad_reduce_precision": "bf16"}
    t16 = estimate(scen("mpt-30b", nodes=1, training={**base, "param_gather_precision": "bf16"}, **par))
    t32 = estimate(scen("mpt-30b", nodes=1, training={**base, "param_gather_precision": "fp32"}, **par))
    layer = 12 * 7168**2 + 4 * 7168  # MPT-30B (models.yaml: hidden 7168, ffn 28672, no biases)
    assert t32.memory_per_gpu_bytes["gather_buffers"] == pytest.approx(2 * layer * 4, rel=1e-9)  # 4.93e9 B
    assert t16.memory_per_gpu_bytes["gather_buffers"] == pytest.approx(2 * layer * 2, rel=1e-9)  # 2.47e9 B
    # the whole difference, with the fragmentation allowance on top of it
    assert t32.memory_per_gpu_bytes["total"] - t16.memory_per_gpu_bytes["total"] == pytest.approx(
        2 * layer * 2 * (1 + t16.assumptions["efficiency"]["fragmentation"]), rel=1e-6)


def test_framework_fixed_step_time_is_its_own_breakdown_line_and_not_inherited_by_torchtitan():
    """Composer's fitted time per step (data/training_frameworks.yaml, fsdp) is charged once per step, in the
    framework line; TorchTitan takes FSDP's schedule and precisions but states its own (zero) step time."""
    assert framework("torchtitan").zero3_prefetch == "unit"
    assert framework("torchtitan").step_fixed_s == 0.0
    fw = framework("fsdp")
    assert fw.step_fixed_s > 0.0
    par = dict(zero_stage=3, tensor=1, pipeline=1, micro_batch_size=1, recompute="full", global_batch_size=64)
    fsdp = estimate(scen("mpt-7b", nodes=1, training={"framework": "fsdp"}, **par))
    titan = estimate(scen("mpt-7b", nodes=1, training={"framework": "torchtitan"}, **par))
    assert fsdp.time_breakdown_s["framework"] == pytest.approx(fw.step_fixed_s)  # no pipeline: only the step time
    assert titan.time_breakdown_s["framework"] == pytest.approx(0.0)
    # the step's fixed-fraction overhead (3%) applies to it too
    assert fsdp.step_time_s - titan.step_time_s == pytest.approx(fw.step_fixed_s * 1.03, rel=1e-6)


@pytest.mark.parametrize(("key", "typo"), [("zero3_prefetch", "units"), ("backward_prefetch", "Post")])
def test_a_typo_in_a_framework_schedule_key_is_refused_naming_the_framework_and_the_key(key, typo):
    # "units" would silently select the fitted-fraction schedule, "Post" would keep prefetch on
    rows = {"fsdp": {**framework_rows()["fsdp"], key: typo},
            "torchtitan": {"name": "TorchTitan", "same_as": "fsdp"}}
    for name in ("fsdp", "torchtitan"):  # a row that inherits the typo is refused as well
        with pytest.raises(CatalogError, match=rf"^training_frameworks\.yaml: framework {name}, {key}: must be one of "):
            framework_from_rows(name, rows)
    for name in framework_rows():  # the shipped rows load
        assert framework_from_rows(name, framework_rows()).id == name


def test_fp8_weights_by_default_need_an_fp8_weight_path():
    # a framework row that keeps FP8 weights by default (fp8_params) but has no FP8-weight path (fp8_param_gather)
    # would have its default silently dropped: refused when loaded
    rows = {"deepspeed": {**framework_rows()["deepspeed"], "fp8_params": True}}
    with pytest.raises(CatalogError, match=r"^training_frameworks\.yaml: framework deepspeed, fp8_params: FP8 weights "
                                           r"by default need an FP8-weight path \(fp8_param_gather: true\)$"):
        framework_from_rows("deepspeed", rows)
    # the shipped rows: Megatron-LM, NeMo (its own FP8 weights by default) and TorchTitan have the path
    assert [n for n in framework_rows() if framework(n).fp8_param_gather] == ["megatron", "nemo", "torchtitan"]
    assert framework("nemo").fp8_params and not framework("megatron").fp8_params


def test_zero3_buffers_are_their_own_lines_in_the_app_and_report_memory_charts():
    # GPT 530B at micro-batch 4 on 640 A100 with DeepSpeed ZeRO-3: FC1 gathered, 4/12 of a 5,033,431,040-parameter
    # layer in 16 bits = 3.36e9 B, and the gradients of QKV, FC2 and FC1, 11/12 = 9.23e9 B, each its own bar
    from gpucluster_lib.charts import report_design
    from gpucluster_lib.charts.training import memory_spec
    from gpucluster_lib.units import GIB

    layer = 12 * 20480**2 + 13 * 20480
    est = estimate(scen(model="megatron-529.6b", nodes=80, tensor=1, pipeline=1, micro_batch_size=4,
                        global_batch_size=2560, recompute="full", zero_stage=3, training={"framework": "deepspeed"}))
    app = {r["part"]: r["gib"] for r in memory_spec(est)["data"]["values"]}
    assert app["gathered parameters (ZeRO-3)"] == pytest.approx(4 / 12 * layer * 2 / GIB, rel=1e-9)
    assert app["gradients awaiting reduction (ZeRO-3)"] == pytest.approx(11 / 12 * layer * 2 / GIB, rel=1e-9)
    spec = report_design.training_memory_chart(est).to_dict()
    rep = {r["part"]: r["gib"] for rows in spec["datasets"].values() for r in rows if "part" in r}
    assert rep["Gathered parameters (ZeRO-3)"] == pytest.approx(4 / 12 * layer * 2 / GIB, rel=1e-9)
    assert rep["Gradients awaiting reduction (ZeRO-3)"] == pytest.approx(11 / 12 * layer * 2 / GIB, rel=1e-9)


def test_deepspeed_zero3_buckets_that_span_modules_and_layers_by_hand():
    # GPT-3's shares QKV 3, proj 1, FC1 4, FC2 4 (twelfths of a layer of lp = 1.2e9: u = 1e8 elements), a reduce
    # bucket of 14u, every prefetch allowed (no live limit) and taking the next weight only. Backward FC2, FC1, proj,
    # QKV, ...: the bucket fills 4, 8, 9, 12 over the first layer, FC2 of the second overflows it (12 + 4 > 14): 12u
    # reduced, awaiting partition; then 4, 8, 9, 12 again. At the third layer's FC2: 12u reduced before + 12u in the
    # bucket + 4u of FC2's own = 28u of gradients, FC2 gathered + FC1 prefetched = 8u: the peak (36u).
    import dataclasses

    from gpucluster_lib.training.core import deepspeed_zero3_buffers

    ctx = build_context(scen(nodes=48, tensor=1, pipeline=1, micro_batch_size=1, zero_stage=3,
                             training={"framework": "deepspeed"}))[0]
    fw = dataclasses.replace(ctx.framework, bucket_params=14e8, zero3_max_live_params=float("inf"),
                             zero3_prefetch_params=1.0)
    gathered, grads = deepspeed_zero3_buffers(dataclasses.replace(ctx, framework=fw), np.array([12e8]))
    assert grads[0] == pytest.approx(28e8, rel=1e-12)
    assert gathered[0] == pytest.approx(8e8, rel=1e-12)


def test_interleaved_schedule_hides_steady_state_p2p_with_overlap_p2p_comm():
    """Megatron-Core's interleaved schedule with ``overlap_p2p_comm`` (schedules.py core_r0.8.0,
    forward_backward_pipelining_with_interleaving; core.py [26]): each steady-state send/receive is waited one chunk
    later, behind a chunk of the other direction; the bubble's (p-1)/v slots and the last stage's (v-1) p warm-up and
    cool-down chunks keep their transfers."""
    import dataclasses

    from gpucluster_lib.training import validation
    from gpucluster_lib.training.estimate import estimate
    from gpucluster_lib.training.framework import framework

    # NeMo 2.x / Megatron-Bridge turn it on for vp > 1 (comm_overlap.py v0.2.0 line 453); Narayanan 2021's
    # Megatron-LM predates it (added 2023-05-31, f9283c5a8a)
    assert framework("nemo").overlap_p2p_comm and not framework("megatron").overlap_p2p_comm
    row = validation.load_runs().set_index("run_id").loc["nemo2407-gpt3-175b-512"].to_dict()
    sc = validation.scenario_for(row | {"run_id": "nemo2407-gpt3-175b-512"})
    off = dataclasses.replace(sc, parallelism=dataclasses.replace(sc.parallelism, overlap_p2p_comm=False))
    on_b, off_b = (estimate(s).to_dict()["time_breakdown_s"] for s in (sc, off))
    # NeMo 24.07 GPT-3 175B on 512 H100, TP4 PP8 VP6, micro-batch 2 x 2,048 tokens, DP16: 2048 / (16 x 2) = 64
    # micro-batches; one transfer: the boundary activation split over TP, 4,096 x 12,288 x 2 / 4 = 25,165,824 bytes
    # at 50 GB/s x 0.8 (400 Gb/s, network efficiency) plus 8 us: 0.63715 ms; 2 x 6 transfers per micro-batch
    x = 8e-6 + 4096 * 12288 * 2 / 4 / (50e9 * 0.8)
    assert off_b["pp_comm"] == pytest.approx(64 * 2 * 6 * x, rel=1e-6)  # 0.4893 s
    # a chunk is 12 / 6 = 2 layers of 175B per micro-batch (tens of ms), far longer than 0.64 ms: nothing left exposed
    assert on_b["pp_comm"] == 0.0
    # the warm-up and cool-down: (v-1) p / v = 5 x 8 / 6 micro-batches' worth of the 2 v = 12 transfers beyond the
    # bubble's (schedules.py core_r0.8.0 l.650-652: the last rank's (v-1) p warm-up forwards; NeMo's slot factor 1.0):
    # 40/6 x 12 x 0.63715 ms = 80 x 0.63715 ms = 0.050972 s more than the bubble without the overlap
    assert framework("nemo").pipeline_stage_factor == 1.0
    assert on_b["bubble"] - off_b["bubble"] == pytest.approx(80 * x, rel=1e-6)


def test_interleaved_p2p_overlap_partial_hiding_by_hand():
    """Megatron-Core's interleaved schedule with overlap_p2p_comm (schedules.py core_r0.8.0 l.916-1017; core.py
    [26]), a transfer between a third and two thirds of a chunk: only the backward transfer (behind a forward chunk,
    1/3) shows, x - c/3v per chunk pair; the warm-up and cool-down add (v-1) p / v micro-batches at full cost."""
    import numpy as np

    from gpucluster_lib.training.core import interleaved_p2p_overlap

    # session-25 review's replay of the schedule (review2_sim_partial.py): p 8, v 4, m 32, forward chunk 1, backward 2
    # (chunk 3), one transfer x 1.5: the forward transfer hides behind a backward chunk (2 > 1.5), the backward
    # transfer behind a forward chunk shows 1.5 - 1 = 0.5: t_slot = 4 x 0.5 = 2 (2/3 and 1/3 both on 2: 0; both on 1: 4)
    t_slot, n = interleaved_p2p_overlap(1.5, 3.0, 4.0, 8.0, 32.0)
    assert float(t_slot) == pytest.approx(2.0, rel=1e-12)
    assert float(n) == pytest.approx(3 * 8 / 4, rel=1e-12)  # (v-1) p / v = 6
    # the step: m (c + t_slot) + (p-1)/v (c + 2 v x) + n (2 v x - t_slot) with c = 4 x 3 = 12, 2 v x = 12:
    # 32 x 14 + 7/4 x 24 + 6 x 10 = 448 + 42 + 60 = 550 against the replay's 549.5
    assert 32 * (12 + float(t_slot)) + 7 / 4 * 24 + float(n) * (12 - float(t_slot)) == pytest.approx(549.5, rel=1e-3)
    # full hiding (x 0.3 < chunk / 3 = 1): 32 x 12 + 7/4 x 14.4 + 6 x 2.4 = 384 + 25.2 + 14.4 = 423.6 = the replay's
    t_slot, n = interleaved_p2p_overlap(0.3, 3.0, 4.0, 8.0, 32.0)
    assert float(t_slot) == 0.0
    assert 32 * 12 + 7 / 4 * 14.4 + float(n) * 2.4 == pytest.approx(423.6, rel=1e-9)
    # m = p: every chunk runs in the warm-up and cool-down (num_warmup_microbatches = total, l.646-648): n = m
    assert float(interleaved_p2p_overlap(np.array(0.3), 3.0, 4.0, 8.0, 8.0)[1]) == 8.0
