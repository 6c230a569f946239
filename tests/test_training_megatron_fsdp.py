"""Megatron-Core's ZeRO-3 (its custom FSDP, NeMo's ``use_custom_fsdp``) follows a one-unit-ahead schedule.

Source (data/training_frameworks.yaml, nemo): Megatron-LM 3cdfd613 (the commit NeMo v2.3.0 = 25.04 pins in
requirements/manifest.json), megatron/core/distributed/custom_fsdp/fully_sharded_data_parallel.py:
fsdp_unit_modules = [TransformerLayer]; "The suggested size is twice the number of elements in the FSDP modules.
This ensures we process the current FSDP module and attempt to prefetch the next FSDP module"; the pre-backward
hook gathers with PrefetchOrder.BACKWARD_PASS_ORDER (BACKWARD_PRE).
"""

from __future__ import annotations

import pytest

from gpucluster_lib.training import validation
from gpucluster_lib.training.estimate import estimate
from gpucluster_lib.training.framework import framework


def test_nemo_zero3_gathers_one_layer_ahead():
    fw = framework("nemo")
    assert (fw.zero3_prefetch, fw.backward_prefetch) == ("unit", "pre")
    # Megatron-LM's row documents core_r0.8.0 (no ZeRO-3): it keeps the fitted share zero3_overlap
    assert framework("megatron").zero3_prefetch == "fraction"


def test_nemo_megatron_fsdp_row_exposes_only_the_first_gathers_and_the_root_unit():
    # NeMo 25.04's Llama 3 70B on 64 GB200 with Megatron-FSDP (the validation row; TP1, 64-way sharding, one
    # NVL72 NVLink domain, micro-batch 1, global batch 128: m = 2 micro-batches), by hand:
    # parameters (Llama 3 70B: h 8192, 64 heads / 8 KV heads of 128, FFN 28672 gated, vocabulary 128256):
    #   one layer QKV 8192 x 10240 = 83,886,080 + projection 8192^2 = 67,108,864 + FC1 2 x 8192 x 28672 =
    #   469,762,048 + FC2 234,881,024 + two norms 16,384 = 855,654,400; 80 layers 68,452,352,000; embedding and
    #   output 2 x 128256 x 8192 = 2,101,346,304, final norm 8192: 70,553,706,496 in all.
    # One 16-bit gather pass over 64 ranks on NVLink 5 (900 GB/s a direction, data/accelerators.csv 1800
    #   bidirectional, x nvlink_efficiency 0.76, data/efficiency.yaml = 684 GB/s):
    #   63/64 x 2 x 70,553,706,496 / 684e9 = 0.2030740 s, plus the ring latency, NCCL's 63 ring steps of a 64-rank
    #   ring inside one NVLink domain (nccl src/graph/tuning.cc: nsteps = nRanks - 1, none across nodes) at
    #   alpha_nvlink 3 us, for each of the 80 layers' collectives: 80 x 63 x 3 us = 0.01512 s: t_ag = 0.2181940 s;
    #   the bf16 reduce-scatter the same, t_rs = t_ag.
    # The layers hold u = 68,452,352,000 / 70,553,706,496 = 0.9702162 of the parameters: one layer's gather a =
    #   reduce-scatter r = t_ag u / 80 = 0.0026462 s, far below one layer's compute (about 8 ms forward, 16 ms
    #   backward), so per micro-batch only the first forward gather, the first backward gather and the last
    #   reduce-scatter are exposed, 2a + r = 3a = 0.0079386 s, and the root unit (embedding, final norm, output
    #   layer), (t_ag + t_rs)(1 - u) = 0.0129973 s: 0.0209358 s a micro-batch, 0.041872 s a step (m = 2).
    # The fitted share it replaces (zero3_overlap 0.6 of the compute) left 0.4 x m (2 t_ag + t_rs) = 0.52 s.
    params, layer_params = 70_553_706_496, 80 * 855_654_400
    t_ag = 63 / 64 * 2 * params / (900e9 * 0.76) + 80 * 63 * 3e-6
    u = layer_params / params
    by_hand = 2 * (3 * t_ag * u / 80 + 2 * t_ag * (1 - u))
    assert by_hand == pytest.approx(0.041872, abs=1e-6)
    row = validation.load_runs().set_index("run_id").loc["nemo2504-gb200-llama3-70b-fsdp"].to_dict()
    row["run_id"] = "nemo2504-gb200-llama3-70b-fsdp"
    est = estimate(validation.scenario_for(row))
    assert est.plan.zero_stage == 3 and est.plan.data == 64
    assert est.to_dict()["time_breakdown_s"]["dp_comm"] == pytest.approx(by_hand, rel=1e-9)
    # Megatron-FSDP's reduce-scatter queue holds two layers' unsharded bf16 gradients (suggested_RS_queue_capacity,
    # fully_sharded_data_parallel.py 3cdfd613 lines 219-226): 2 x 855,654,400 x 2 B = 3,422,617,600 B
    assert est.to_dict()["memory_per_gpu_bytes"]["unreduced_gradients"] == pytest.approx(3_422_617_600, rel=1e-9)
