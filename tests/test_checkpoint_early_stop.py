"""Checkpoint early stop (``training.checkpoint_early_stop``): full recomputation without the FFN output projection.

PyTorch's non-reentrant checkpoint (torch/utils/checkpoint.py, v2.1.0 and later) stops the recomputation once every
tensor saved for the backward is back. In an MPT block (llm-foundry b2a43a1, llmfoundry/models/layers/blocks.py,
ffn.py: norm_1, attention, out_proj, residual, norm_2, up_proj, GELU, down_proj, residual) the last saved tensor is
down_proj's input, so down_proj and the residual add after it are not rerun.
"""

from __future__ import annotations

import dataclasses

import pytest

from gpucluster_lib.calibration.gemm import GemmCurve
from gpucluster_lib.errors import ScenarioError
from gpucluster_lib.scenario import from_dict
from gpucluster_lib.training import validation
from gpucluster_lib.training.core import layer_terms
from gpucluster_lib.training.estimate import build_context, estimate
from gpucluster_lib.training.framework import framework

#: MPT-1B (data/models.yaml, llm-foundry scripts/train/yamls/pretrain/mpt-1b.yaml): d_model 2048, FFN 4 x 2048, GELU
H, F, S = 2048, 8192, 2048
P = 989.4e12        # H100 SXM dense BF16 peak [FLOP/s] (NVIDIA H100 datasheet; data/accelerators.csv)
E_GEMM = 0.58       # Hopper gemm_efficiency (data/efficiency.yaml, generations.hopper)
B = 3350e9 * 0.85   # H100 HBM3 3,350 GB/s (datasheet) x Hopper memory_efficiency 0.85 (data/efficiency.yaml)


def _ctx(early=None, framework_id="fsdp", mb=1):
    training = {"framework": framework_id, "attention_kernel": "triton"}
    if early is not None:
        training["checkpoint_early_stop"] = early
    sc = from_dict({"name": "early stop by hand", "model": {"preset": "mpt-1b"},
                    "hardware": {"accelerator": "h100-sxm5-80gb", "gpus_per_node": 8, "nodes": 1},
                    "parallelism": {"tensor": 1, "pipeline": 1, "micro_batch_size": mb, "global_batch_size": 8 * mb,
                                    "recompute": "full", "zero_stage": 3},
                    "training": training})
    ctx = build_context(sc)[0]
    # a flat GEMM curve (shape factor 1, no fixed time): every projection at 0.58 of the peak, so the GEMM
    # times can be written out by hand
    return dataclasses.replace(ctx, gemm=GemmCurve(eff_max=1.0, m_half=0.0, n_half=0.0, k_half=0.0))


def _recompute(ctx, rc=2):
    return float(layer_terms(ctx, tp=1, cp=1, ep=1, mb=1, rc=rc, sp=False, tpo=0)[1])


def test_framework_defaults_follow_their_checkpoint_implementation():
    # FSDP (Composer, non-reentrant: llm-foundry's yamls set activation_checkpointing_reentrant: false) and TorchTitan
    # (FSDP2, same checkpoint) stop early on PyTorch >= 2.1; Megatron-LM / NeMo and DeepSpeed rerun the whole layer
    # (their CheckpointFunction is a reentrant torch.autograd.Function)
    assert framework("fsdp").checkpoint_early_stop is True
    assert framework("torchtitan").checkpoint_early_stop is True
    assert framework("megatron").checkpoint_early_stop is False
    assert framework("nemo").checkpoint_early_stop is False
    assert framework("deepspeed").checkpoint_early_stop is False


def test_one_mpt_block_recompute_with_and_without_early_stop_by_hand():
    full, early = _ctx(early=False), _ctx(early=True)
    assert full.peak_flops == pytest.approx(P)
    assert full.eff.gemm_efficiency == pytest.approx(E_GEMM)
    assert full.memory_bw * full.eff.memory_efficiency == pytest.approx(B)
    assert full.eff.elementwise_bytes_per_hidden == 22.0   # data/efficiency.yaml: 2 LayerNorms 4h + 2 residual adds 7h
    assert full.eff.layer_overhead_s == 0.0                # data/efficiency.yaml software.layer_overhead_s
    M = S  # one sequence of 2,048 tokens per micro-batch
    # forward GEMMs of the block: QKV 2 M h 3h, out_proj 2 M h h, up_proj 2 M h 4h, down_proj 2 M 4h h = 24 M h^2 FLOPs
    # = 206.2 GFLOP at 0.58 x 989.4 TFLOP/s = 0.3593 ms (every one compute-bound: down_proj moves 2 (M F + F h + M h)
    # = 75.5 MB, 26.5 us at 2.85 TB/s against 119.8 us of FLOPs)
    gemm = 24 * M * H**2 / (P * E_GEMM)
    down_proj = 2 * M * F * H / (P * E_GEMM)
    assert gemm == pytest.approx(3.593e-4, rel=1e-3)
    assert down_proj == pytest.approx(gemm / 3)            # 8 M h^2 of 24 M h^2: a third of the block's GEMMs
    # element-wise forward: (20 h + 4 F) bytes per token (GELU reads 2 writes 2 per FFN element) at 2.85 TB/s: the
    # 22 h of two LayerNorms (4 h each) and two dropout-residual-adds (7 h each) less the two one-byte dropout
    # masks, which MPT's resid_pdrop 0.0 does not write (data/models.yaml mpt-1b hidden_dropout 0.0)
    assert full.arch.hidden_dropout == 0.0
    elementwise = M * (20 * H + 4 * F) / B
    residual = M * 6 * H / B                               # the last residual add: 6 h bytes per token, no mask
    assert elementwise == pytest.approx(5.3027e-5, rel=1e-4)  # 150,994,944 B
    # the attention forward (llm-foundry's Triton kernel, rerun either way): 4 s^2 h FLOPs halved for the causal mask,
    # 17.18 GFLOP at 0.193 x 989.4 TFLOP/s x (1 + 319 / 2048) (data/efficiency.yaml attention_kernels.triton.hopper)
    attn = 0.5 * 4 * S**2 * H / (P * 0.193) * (1 + 319 / S)
    assert attn == pytest.approx(1.0399e-4, rel=1e-3)
    assert _recompute(full) == pytest.approx(gemm + elementwise + attn, rel=1e-9)
    # what early stop leaves out is down_proj and the residual add
    assert _recompute(full) - _recompute(early) == pytest.approx(down_proj + residual, rel=1e-9)
    assert down_proj + residual == pytest.approx(1.2859e-4, rel=1e-4)  # 0.11975 ms + 8.84 us
    assert _recompute(early) == pytest.approx(2 / 3 * gemm + elementwise - residual + attn, rel=1e-9)


def test_a_hidden_dropout_adds_its_masks_to_the_element_wise_traffic():
    # with a hidden dropout above 0 each dropout-residual-add also writes its one-byte mask: 22 h (data/efficiency.yaml
    # elementwise_bytes_per_hidden) and the last add 7 h of them; at 0, 20 h and 6 h (test above)
    zero = _ctx(early=True)
    drop = dataclasses.replace(zero, arch=dataclasses.replace(zero.arch, hidden_dropout=0.1))
    # forward + backward + full recomputation without the last add: (3 + 1) x 2 h - 1 h more bytes per token, at B
    assert float(sum(layer_terms(drop, tp=1, cp=1, ep=1, mb=1, rc=2, sp=False, tpo=0)[:2])) - float(
        sum(layer_terms(zero, tp=1, cp=1, ep=1, mb=1, rc=2, sp=False, tpo=0)[:2])) == pytest.approx(
        S * (4 * 2 - 1) * H / B, rel=1e-9)


def test_selective_and_no_recompute_do_not_change():
    for rc in (0, 1):
        assert _recompute(_ctx(early=True), rc) == _recompute(_ctx(early=False), rc)


def test_swiglu_block_leaves_out_w2_only():
    ctx = _ctx(early=True)
    arch = dataclasses.replace(ctx.arch, ffn_type="swiglu", ffn_hidden_size=5632)
    on = dataclasses.replace(ctx, arch=arch)
    off = dataclasses.replace(on, framework=dataclasses.replace(on.framework, checkpoint_early_stop=False))
    # w2: 2 M f h at 0.58 x 989.4 TFLOP/s, plus the residual add's 6 h bytes per token (no dropout mask at MPT's 0.0)
    w2 = 2 * S * 5632 * H / (P * E_GEMM) + S * 6 * H / B
    assert _recompute(off) - _recompute(on) == pytest.approx(w2, rel=1e-9)


def test_scenario_setting_overrides_the_framework_default():
    assert build_context(from_dict({"name": "x", "model": {"preset": "mpt-1b"},
                                    "training": {"framework": "megatron", "checkpoint_early_stop": True}}
                                   ))[0].framework.checkpoint_early_stop is True
    assert _ctx(early=None).framework.checkpoint_early_stop is True        # FSDP's default
    assert _ctx(early=False).framework.checkpoint_early_stop is False


def test_bad_value_names_the_field():
    with pytest.raises(ScenarioError) as err:
        from_dict({"name": "x", "model": {"preset": "mpt-1b"}, "training": {"checkpoint_early_stop": "sometimes"}})
    assert "training.checkpoint_early_stop" in str(err.value)


def test_rows_that_predate_pytorch_2_1_turn_early_stop_off():
    # llm-foundry commit b2a43a1 re-ran the H100 tables and most of the A100 80GB table on sweep.sh's
    # mosaicml/pytorch:2.1.0 image; the A100 40GB table and the A100 80GB 70B rows kept their earlier values (bf16 PURE)
    runs = validation.load_runs()
    fsdp = runs[(runs["framework"] == "fsdp") & runs["run_id"].str.startswith("mpt-")]  # llm-foundry's rows
    off = set(fsdp[fsdp["checkpoint_early_stop"].astype(str).str.strip().str.lower() == "false"]["run_id"])
    assert {"mpt-98", "mpt-101", "mpt-102", "mpt-a100-80-70b-s2048-g32-mb2"} <= off
    assert {"mpt-93", "mpt-94", "mpt-99", "mpt-a100-80-13b-s4096-g8-mb10"}.isdisjoint(off)
    for row in fsdp.itertuples():
        if row.accelerator == "a100-sxm4-40gb":
            assert row.run_id in off
        assert "checkpoint early stop" in row.notes
        sc = validation.scenario_for(row._asdict())
        assert build_context(sc)[0].framework.checkpoint_early_stop is (row.run_id not in off)


def test_estimate_states_it_only_with_full_recomputation():
    sc = from_dict({"name": "x", "model": {"preset": "mpt-1b"},
                    "hardware": {"accelerator": "h100-sxm5-80gb", "gpus_per_node": 8, "nodes": 1},
                    "parallelism": {"tensor": 1, "pipeline": 1, "micro_batch_size": 1, "global_batch_size": 8,
                                    "recompute": "full", "zero_stage": 3},
                    "training": {"framework": "fsdp"}})
    assert estimate(sc).assumptions["checkpoint_early_stop"] is True
    none = dataclasses.replace(sc, parallelism=dataclasses.replace(sc.parallelism, recompute="none"))
    assert estimate(none).assumptions["checkpoint_early_stop"] is None


def test_report_names_the_recomputation_in_words():
    from gpucluster_lib.design import design
    from gpucluster_lib.report import document

    sc = from_dict({"name": "x", "model": {"preset": "mpt-1b"},
                    "hardware": {"accelerator": "h100-sxm5-80gb", "gpus_per_node": 8, "nodes": 1},
                    "parallelism": {"tensor": 1, "pipeline": 1, "micro_batch_size": 1, "global_batch_size": 8,
                                    "recompute": "full", "zero_stage": 3},
                    "training": {"framework": "fsdp", "tokens": 1e9}})
    rows = [r for _, group in document.assumptions(design(sc)) for r in group]
    (row,) = [r for r in rows if r[0] == "Recomputation with full activation checkpointing"]
    assert row[1] == "stops before the feed-forward output projection (PyTorch 2.1 and later)"
    off = dataclasses.replace(sc, training=dataclasses.replace(sc.training, checkpoint_early_stop=False))
    rows = [r for _, group in document.assumptions(design(off)) for r in group]
    assert ("Recomputation with full activation checkpointing", "reruns the whole layer") in [r[:2] for r in rows]


def test_tensor_parallel_recompute_leaves_out_the_ffn_output_collective():
    # Megatron's default TP (no overlap): the forward's 4 collectives of one layer activation c, exposed; without
    # sequence parallelism two all-reduces (2c each), the FFN output's one of them (Korthikanti 2022 Sec. 4.2.2)
    ctx = _ctx(early=False)
    on = dataclasses.replace(ctx, framework=dataclasses.replace(ctx.framework, checkpoint_early_stop=True))

    def tp_time(c, sp):
        return float(layer_terms(c, tp=2, cp=1, ep=1, mb=1, rc=2, sp=sp, tpo=0)[2])

    # one ring all-gather / reduce-scatter over 2 ranks (Thakur 2005): (n-1)/n x 8.39 MB (2,048 x 2,048 bf16) at
    # H100's 450 GB/s per direction x the NVLink efficiency, + (n-1) x the NVLink latency (data/efficiency.yaml)
    assert ctx.nvlink_bw == pytest.approx(450e9)  # 900 GB/s NVLink 4 (bidirectional, datasheet) / 2
    c = 0.5 * S * H * 2 / (450e9 * ctx.eff.nvlink_efficiency) + ctx.eff.alpha_nvlink_s
    assert tp_time(ctx, False) - tp_time(on, False) == pytest.approx(2 * c, rel=1e-9)  # the all-reduce
    assert tp_time(ctx, True) - tp_time(on, True) == pytest.approx(c, rel=1e-9)        # the reduce-scatter


def test_hardware_flops_leave_out_the_ffn_output_projection():
    from gpucluster_lib.training import flops as fl

    arch = _ctx().arch  # MPT-1B at 2,048 tokens: 24 layers, h 2048, FFN 8192, 16 heads of 128
    # per layer: projections 2 x 4 h^2 = 33.55 M, FFN 2 x 2 h f = 67.11 M, scores 2 s heads (128 + 128) = 16.78 M
    # FLOPs per token; full recomputation repeats all of it in 24 layers: 2,818.6 M; early stop not down_proj's
    # 2 h f = 33.55 M per layer: 2,013.3 M
    assert fl.recompute_flops_per_token(arch, "full") == pytest.approx(24 * (8 * H**2 + 4 * H * F + 2 * S * 16 * 256))
    assert fl.recompute_flops_per_token(arch, "full") == pytest.approx(2.8186e9, rel=1e-4)
    assert fl.recompute_flops_per_token(arch, "full", early_stop=True) == pytest.approx(2.0133e9, rel=1e-4)
    assert fl.recompute_flops_per_token(arch, "selective", early_stop=True) == fl.recompute_flops_per_token(
        arch, "selective")
