"""cuDNN fused attention, the FP8 GEMM rate and FP8 cast traffic (Transformer Engine, Megatron-Core, NeMo).

Three mechanisms, each with its published figures (values by hand, the source on the line):

1. the attention kernel: Transformer Engine selects cuDNN fused attention on Hopper (v1.2) and Blackwell (v2.0),
   fitted to NVIDIA's cudnn-frontend benchmark files (data/efficiency.yaml ``attention_kernels.cudnn``), the
   framework's kernel per GPU generation (data/training_frameworks.yaml ``attention_kernel``);
2. the FP8 GEMM kernels at 0.95 of the 16-bit efficiency against the FP8 peak (TE's GEMM benchmark,
   docs/examples/gemm_profiling/gemm_profiling.rst), the output layer in 16 bits;
3. the casts to FP8 as memory traffic per FP8 GEMM (data/training_frameworks.yaml ``fp8_recipes``,
   ``training.fp8_recipe``).
"""

from __future__ import annotations

import dataclasses

import pytest

from gpucluster_lib.calibration.gemm import GemmCurve
from gpucluster_lib.errors import ScenarioError
from gpucluster_lib.scenario import from_dict
from gpucluster_lib.training import validation
from gpucluster_lib.training.core import (
    fp8_cast_bytes,
    fp8_weight_cast_s,
    layer_params,
    layer_terms,
    pipeline_schedule,
)
from gpucluster_lib.training.efficiency import load_table
from gpucluster_lib.training.estimate import build_context, estimate
from gpucluster_lib.training.framework import fp8_casts, framework

P16 = 989.4e12       # H100 SXM dense BF16 peak [FLOP/s] (data/accelerators.csv)
P8 = 1978.9e12       # H100 SXM dense FP8 peak [FLOP/s] (data/accelerators.csv)
B = 3350e9 * 0.85    # H100 HBM3 3,350 GB/s x Hopper memory_efficiency 0.85 (data/efficiency.yaml) [B/s]
E_GEMM = 0.58        # Hopper gemm_efficiency (data/efficiency.yaml)
#: GPT-3 5B as NeMo's launcher 24.07 conf/training/gpt3/5b.yaml has it (validation row nemo2407-gpt3-5b-64)
GPT5B = {"preset": "gpt3-175b", "layers": 24, "hidden_size": 4096, "attention_heads": 32, "kv_heads": 32,
         "ffn_hidden_size": 16384, "vocab_size": 50304, "seq_length": 2048}


def _scenario(model, accelerator="h100-sxm5-80gb", framework_id="megatron", precision="bf16", tp=1, mb=4,
              gbs=64, sp=False, **training):
    return from_dict({"name": "by hand", "model": model,
                      "hardware": {"accelerator": accelerator, "gpus_per_node": 8, "nodes": 2},
                      "parallelism": {"tensor": tp, "pipeline": 1, "micro_batch_size": mb, "global_batch_size": gbs,
                                      "recompute": "none", "zero_stage": 1, "sequence_parallel": sp},
                      "training": {"framework": framework_id, "precision": precision, **training}})


def _ctx(model=None, flat=True, **kw):
    ctx = build_context(_scenario(model or GPT5B, **kw))[0]
    if flat:  # a flat GEMM curve (shape factor 1, no fixed time): GEMM times by hand
        ctx = dataclasses.replace(ctx, gemm=GemmCurve(eff_max=1.0, m_half=0.0, n_half=0.0, k_half=0.0))
    return ctx


# ---- 1. cuDNN fused attention -----------------------------------------------------------------------------


def _rate(kernel, gen):
    k = load_table()["attention_kernels"][kernel][gen]
    return lambda s: k["rate"] * s / (s + k["half_rate_tokens"])


def test_cudnn_curve_reproduces_nvidia_benchmark_files():
    # NVIDIA/cudnn-frontend benchmark/benchmark_results.csv at de355c7, cuDNN 9.4.0 BF16, causal, d 128, 16 heads,
    # "cuDNN BF16 FWD+BWD (TFLOPs/s)" at 4k-64k tokens, of H100's 989.4 TFLOP/s
    hopper = {4096: 477.36, 8192: 502.82, 16384: 525.88, 32768: 535.90, 65536: 538.06}
    for s, tflops in hopper.items():
        assert _rate("cudnn", "hopper")(s) * 989.4 == pytest.approx(tflops, rel=0.01), s
    # .../results/llama3.1/gb200/llama3.1_20260424_100750.csv at fb682ce, cuDNN 9.22, GB200, causal, batch 2, 64/8
    # heads: forward, backward TFLOP/s, combined as 3.5 / (1/fwd + 2.5/bwd) (time-weighted), of GB200's 2500
    gb200 = {2048: (1097, 885), 4096: (1408, 1148), 8192: (1574, 1332), 16384: (1708, 1328)}
    for s, (fwd, bwd) in gb200.items():
        combined = 3.5 / (1 / fwd + 2.5 / bwd)
        assert _rate("cudnn", "blackwell")(s) * 2500 == pytest.approx(combined, rel=0.03), s
    assert 3.5 / (1 / 1097 + 2.5 / 885) == pytest.approx(936.7, abs=0.1)
    # Ampere: TE keeps flash-attn there: FlashAttention-2's values
    fa2 = load_table()["attention_kernels"]["flash-attention-2"]
    assert load_table()["attention_kernels"]["cudnn"]["ampere"] == fa2["ampere"]


def test_cudnn_is_faster_than_flash_attention_2_as_in_one_harness():
    # the same de355c7 file runs PyTorch SDPA's FlashAttention-2 at 257.94 (4k) and 287.26 (8k) TFLOP/s: cuDNN is
    # 477.36 / 257.94 = 1.85x and 502.82 / 287.26 = 1.75x; the engine's two curves (fitted to different harnesses:
    # Dao 2023 Fig. 7 for FlashAttention-2) give 1.61x and 1.62x
    for s, lo, hi in ((4096, 1.6, 1.9), (8192, 1.6, 1.8)):
        assert lo < _rate("cudnn", "hopper")(s) / _rate("flash-attention-2", "hopper")(s) < hi


@pytest.mark.parametrize("framework_id, accelerator, kernel", [
    # Megatron-Core / NeMo: Transformer Engine's choice (cuDNN on Hopper from TE v1.2 and Blackwell from v2.0,
    # flash-attn on Ampere)
    ("megatron", "h100-sxm5-80gb", "cudnn"), ("nemo", "b200-sxm-180gb", "cudnn"),
    ("megatron", "a100-sxm4-80gb", "flash-attention-2"),
    # TorchTitan at e7c0cae: [FLASH, EFFICIENT, MATH], cuDNN first only on compute capability 10.0 (PR 1196); FLASH is
    # PyTorch's own copy of FlashAttention-2
    ("torchtitan", "h200-sxm-141gb", "pytorch-flash-attention"), ("torchtitan", "gb200-gpu-186gb", "cudnn"),
    # FSDP (Composer) and DeepSpeed: FlashAttention-2
    ("fsdp", "h100-sxm5-80gb", "flash-attention-2"), ("deepspeed", "h100-sxm5-80gb", "flash-attention-2"),
])
def test_framework_default_kernel_per_generation(framework_id, accelerator, kernel):
    ctx = build_context(_scenario(GPT5B, accelerator=accelerator, framework_id=framework_id))[0]
    assert ctx.eff.attention_kernel == kernel


def test_attention_kernel_setting_overrides_the_framework():
    ctx = build_context(_scenario(GPT5B, attention_kernel="flash-attention-2"))[0]
    assert ctx.eff.attention_kernel == "flash-attention-2"
    assert estimate(_scenario(GPT5B)).assumptions["attention_kernel"] == "cuDNN fused attention"


def test_one_layer_attention_with_cudnn_by_hand():
    # GPT-3 5B (32 heads of 128) at 2,048 tokens, micro-batch 4, one layer on one H100: forward FLOPs of the causal
    # half 4 x 4 x 2048^2 x 32 x 128 / 2 = 1.3744e11; forward + backward 3.5x (flash_backward_factor 2.5).
    # cuDNN: 0.549 x 2048 / (2048 + 586) = 0.42686 of 989.4 TFLOP/s -> 3.5 x 1.3744e11 / 422.33e12 = 1.1390 ms;
    # FlashAttention-2: 0.337 x 2048 / (2048 + 532) = 0.26751 -> 3.5 x 1.3744e11 / 264.68e12 = 1.8174 ms. Only the
    # kernel differs.
    flops = 4 * 4 * 2048**2 * 32 * 128 / 2
    assert flops == pytest.approx(1.3744e11, rel=1e-4)
    cudnn = layer_terms(_ctx(), tp=1, cp=1, ep=1, mb=4, rc=0, sp=False, tpo=0)[0]
    fa2 = layer_terms(_ctx(attention_kernel="flash-attention-2"), tp=1, cp=1, ep=1, mb=4, rc=0, sp=False, tpo=0)[0]
    assert float(fa2 - cudnn) == pytest.approx(1.8174e-3 - 1.1390e-3, rel=2e-3)


# ---- 2. the FP8 GEMM rate ---------------------------------------------------------------------------------


def test_fp8_gemm_factor_is_te_gemm_benchmark_ratio():
    # TE docs/examples/gemm_profiling/gemm_profiling.rst, pre-quantized per-layer totals: H200 NVL BF16 31.968 ms,
    # FP8 current 16.785 ms; B300 13.102 / 6.812 ms. FP8 dense peak = 2 x BF16 (H200 NVL 1670.5 / 835.5, GB300
    # 5000 / 2500 TFLOP/s, data/accelerators.csv): the FP8 kernel's share of peak over BF16's
    gens = load_table()["generations"]
    assert gens["hopper"]["fp8_gemm_factor"] == pytest.approx(31.968 / 16.785 / 2, abs=0.005)   # 0.952
    assert gens["blackwell"]["fp8_gemm_factor"] == pytest.approx(13.102 / 6.812 / 2, abs=0.005)  # 0.962
    # MXFP8's block-scaled kernels: B300 pre-quantized 7.161 ms against FP8 current's 6.812 ms
    assert fp8_casts(framework("nemo"), "blackwell", "mxfp8").gemm_rate == pytest.approx(6.812 / 7.161, abs=1e-3)


def test_fp8_layer_gemms_by_hand():
    # GPT-3 5B layer, M = 4 x 2048 = 8192 tokens, no TP: GEMM FLOPs 2 M (3h^2 + h^2 + 2 x 4h^2) = 2 x 8192 x 12 x
    # 4096^2 = 3.2985e12 forward, x3 with the backward. BF16 at 0.58 x 989.4; FP8 at 0.58 x 0.95 x 1978.9.
    # With the flat curve and casts counted apart, the layer's GEMMs take 3 x 3.2985e12 / rate.
    gemm = 3 * 2 * 8192 * 12 * 4096**2
    bf16, fp8 = _ctx(), _ctx(precision="fp8")
    t16 = float(layer_terms(bf16, tp=1, cp=1, ep=1, mb=4, rc=0, sp=False, tpo=0)[0])
    t8 = float(layer_terms(fp8, tp=1, cp=1, ep=1, mb=4, rc=0, sp=False, tpo=0)[0])
    fwd, bwd, _ = fp8_cast_bytes(fp8, 8192.0, 1.0, False)
    casts = float(fwd + bwd) / B
    expected = gemm / (E_GEMM * P16) - gemm / (E_GEMM * 0.95 * P8)  # 17.246 - 9.077 ms
    assert t16 - (t8 - casts) == pytest.approx(expected, rel=1e-6)


def test_output_layer_runs_in_16_bits_with_fp8():
    # Megatron-Core's output_layer is a tensor_parallel.ColumnParallelLinear, not a TE module (gpt_model.py,
    # core_r0.8.0): the same time in an FP8 run as in a BF16 run
    import numpy as np

    q = {k: np.array([v], dtype=float) for k, v in dict(tp=1, pp=1, dp=16, cp=1, vp=1, lf=24, ll=24, lm=24).items()}
    outs = [pipeline_schedule(_ctx(precision=p), q, 8192.0, 4.0, 0.0)["t_out"] for p in ("bf16", "fp8")]
    assert float(outs[0][0]) == pytest.approx(float(outs[1][0]), rel=1e-12)


# ---- 3. FP8 casts -----------------------------------------------------------------------------------------


def test_recipe_bytes_per_element():
    # read 2 + write 1 + column-wise copy (a transpose on Hopper, none on Blackwell for per-tensor scales: TE
    # performance_considerations.rst) + amax pass (current scaling: nvte_compute_amax_with_config, quantizer.cpp)
    mg = framework("megatron")
    delayed, current = fp8_casts(mg, "hopper"), fp8_casts(mg, "hopper", "current")
    assert (delayed.quantize, current.quantize) == (4.0, 6.0)
    assert fp8_casts(mg, "blackwell", "current").quantize == 5.0
    # MXFP8: both copies and one E8M0 scale per 32 elements for each: 2 + 1 + 1 + 2/32
    assert fp8_casts(mg, "blackwell", "mxfp8").quantize == pytest.approx(4.0625)
    assert delayed.recipe == "delayed" and fp8_casts(framework("torchtitan"), "hopper").recipe == "current"
    # Megatron-Core: QKV and FC1 take the norm's FP8 output (TELayerNormColumnParallelLinear), weights cached over a
    # global batch (is_first_microbatch); llm-foundry's te.Linear: neither
    assert (delayed.norm_qkv, delayed.norm_fc1, delayed.weight_cast_per_step) == (True, True, True)
    foundry = fp8_casts(framework("fsdp"), "hopper")
    assert (foundry.norm_qkv, foundry.norm_fc1, foundry.weight_cast_per_step) == (False, False, False)


def test_cast_bytes_of_one_layer_by_hand():
    # the worked case of core.fp8_cast_bytes: GPT-3 5B layer, M 8192, no TP, Megatron-Core, delayed scaling, H100.
    # Forward: QKV and FC1 inputs written by the norm (-1 byte each), projection (4096) and FC2 (16384) inputs 4:
    # (-1 + 4 - 1) x 8192 x 4096 + 4 x 8192 x 16384 = 603.98e6. Backward: the two transposes 2 x 2 x 8192 x 4096 =
    # 134.22e6 and the output gradients 4 x 8192 x (12288 + 4096 + 16384 + 4096) = 1,207.96e6.
    fwd, bwd, fc2 = fp8_cast_bytes(_ctx(precision="fp8"), 8192.0, 1.0, False)
    assert float(fwd) == pytest.approx(603.98e6, rel=1e-5)
    assert float(bwd) == pytest.approx(134.22e6 + 1207.96e6, rel=1e-5)
    assert float(fc2) == pytest.approx(4 * 8192 * 16384)  # left out of a recomputation that stops early
    assert float(fwd + bwd) / B == pytest.approx(0.6835e-3, rel=1e-3)  # 1,946.16e6 B at 2.8475 TB/s
    # current scaling: +2 per element cast on its own, the norm's output cast at 2 + 1 + 1 (amax in the norm), no
    # transpose after: forward (4 + 6 + 4) x 8192 x 4096 + 6 x 8192 x 16384, backward 6 x 8192 x 36864
    fwd, bwd, _ = fp8_cast_bytes(_ctx(precision="fp8", fp8_recipe="current"), 8192.0, 1.0, False)
    assert float(fwd) == pytest.approx(14 * 8192 * 4096 + 6 * 8192 * 16384)
    assert float(bwd) == pytest.approx(6 * 8192 * 36864)
    # no casts in 16 bits
    assert float(sum(fp8_cast_bytes(_ctx(), 8192.0, 1.0, False))) == 0.0


def test_sequence_parallel_casts_on_the_shard():
    # TP4 with sequence parallelism: the column-parallel inputs (QKV, FC1) come from the norm on the 1/4 shard
    # (-1/4 byte) and are transposed whole in the backward (2); the row-parallel inputs (projection 1024 = 4096/4,
    # FC2 4096 wide) are local (4); the row-parallel output gradients (projection, FC2: M x 4096) are cast on the
    # shard (3/4) and transposed whole (2); the column-parallel ones (QKV 3072, FC1 4096 wide) local (4).
    # TE v1.9 layernorm_linear.py / base.py grad_output_preprocess ("FP8 case with gather")
    M = 8192.0
    fwd, bwd, _ = fp8_cast_bytes(_ctx(precision="fp8", tp=4, sp=True), M, 4.0, True)
    assert float(fwd) == pytest.approx(M * (2 * -0.25 * 4096 + 4 * 1024 + 4 * 4096))
    assert float(bwd) == pytest.approx(M * (2 * 2 * 4096 + 4 * (3072 + 4096) + 2 * 2.75 * 4096))


def test_te_gemm_benchmark_cast_gap_by_hand():
    # Mechanism check against TE's own benchmark (gemm_profiling.rst, "NVIDIA H200 NVL", 5B shapes, M = 15,872):
    # autocast Fprop casts each call's input and weight (benchmark_gemm.py runs te.Linear forward with grad on, no
    # is_first_microbatch). Inputs 15872 x (4096 + 4096 + 4096 + 16384), weights 4096 x (12288 + 4096 + 16384) +
    # 16384 x 4096 elements; at the engine's Hopper memory efficiency on H200 NVL (0.85 x 4.8 TB/s)
    elements = 15872 * 28672 + 4096 * 32768 + 16384 * 4096
    bw = 0.85 * 4800e9
    mg = framework("megatron")
    delayed = elements * fp8_casts(mg, "hopper").quantize / bw
    current = elements * fp8_casts(mg, "hopper", "current").quantize / bw
    # measured: FP8Delayed autocast Fprop 6.188 ms, FP8Current autocast 6.503 ms, pre-quantized FP8 kernels 5.577 ms
    assert delayed == pytest.approx(6.188e-3 - 5.577e-3, rel=0.10)  # 0.644 against 0.611 ms
    assert current == pytest.approx(6.503e-3 - 5.577e-3, rel=0.10)  # 0.965 against 0.926 ms


def test_weight_casts_once_per_global_batch_or_every_micro_batch():
    # GPT-3 5B layer: 12 h^2 + 13 h = 201.38e6 parameters (layer_params, norms and biases included), 4 bytes each
    # cast; Megatron-Core once per global batch (16 micro-batches here), llm-foundry's te.Linear every forward
    mg, fsdp = _ctx(precision="fp8"), _ctx(precision="fp8", framework_id="fsdp")
    w = float(layer_params(mg, 1.0, 1.0))
    assert w == pytest.approx(12 * 4096**2 + 13 * 4096, rel=1e-9)
    assert float(fp8_weight_cast_s(mg, 1.0, 1.0, 16.0)) == pytest.approx(4 * w / B / 16)
    assert float(fp8_weight_cast_s(fsdp, 1.0, 1.0, 16.0)) == pytest.approx(4 * w / B)
    assert float(fp8_weight_cast_s(_ctx(), 1.0, 1.0, 16.0)) == 0.0


def test_fp8_recipe_is_validated_on_load():
    with pytest.raises(ScenarioError) as exc:
        _scenario(GPT5B, precision="fp8", fp8_recipe="tensorwise")
    assert str(exc.value).startswith("training.fp8_recipe: must be one of delayed, current or mxfp8, not 'tensorwise'")
    # MXFP8 needs Blackwell ("MXFP8 and NVFP4 require Blackwell", gemm_profiling.rst)
    with pytest.raises(ScenarioError) as exc:
        build_context(_scenario(GPT5B, precision="fp8", fp8_recipe="mxfp8"))
    assert str(exc.value) == ("training.fp8_recipe: MXFP8 block scaling needs a Blackwell GPU; the NVIDIA H100 SXM5 "
                              "80GB is a Hopper GPU; choose delayed or current scaling")
    # another vendor's accelerator (the "default" generation) is named, not its generation key
    with pytest.raises(ScenarioError) as exc:
        build_context(_scenario(GPT5B, accelerator="mi300x", precision="fp8", fp8_recipe="mxfp8"))
    assert str(exc.value) == ("training.fp8_recipe: MXFP8 block scaling needs a Blackwell GPU; the AMD Instinct MI300X "
                              "is not one; choose delayed or current scaling")
    # a recipe the table does not know, asked for by name (the scenario's own key refuses it on load, above)
    from gpucluster_lib.training.framework import fp8_casts, framework

    with pytest.raises(ScenarioError) as exc:
        fp8_casts(framework("megatron"), "hopper", "tensorwise")
    assert str(exc.value) == ("training.fp8_recipe: tensorwise is not an FP8 scaling recipe; choose delayed, current "
                              "or mxfp8")
    assert build_context(_scenario(GPT5B, accelerator="b200-sxm-180gb", precision="fp8",
                                   fp8_recipe="mxfp8"))[0].fp8_casts.recipe == "mxfp8"


def test_fp8_recipe_without_fp8_is_a_warning_and_the_estimate_names_the_recipe():
    est = estimate(_scenario(GPT5B, fp8_recipe="current"))
    (f,) = [f for f in est.findings if f.field == "training.fp8_recipe"]
    assert f.code == "training-setting-ignored" and "the training precision is bf16" in f.message
    assert est.assumptions["fp8_recipe"] is None
    fp8 = estimate(_scenario(GPT5B, precision="fp8"))
    assert fp8.assumptions["fp8_recipe"] == "FP8 delayed scaling (Transformer Engine DelayedScaling)"


def test_validation_rows_carry_their_recipe():
    # dgxc-benchmarking v24.11.1: fp8_hybrid with fp8_params (NeMo 1 delayed scaling); NeMo 24.07: delayed; NeMo
    # 25.04 and Megatron-Bridge "FP8-CS": current; "FP8-MX": mxfp8; torchao tensorwise: current; llm-foundry amp_fp8
    # (Composer's DelayedScaling): delayed; NeMo 25.02 (not stated on its page): the framework's
    runs = validation.load_runs().set_index("run_id")
    expect = {"dgxc-llama31-8b-fp8-8": "delayed", "nemo2407-gpt3-5b-64": "delayed",
              "nemo2504-gb200-gpt3-175b": "current", "mb2511-b200-llama3-8b-fp8cs": "current",
              "mb2604-h100-llama3-70b-fp8": "current", "mb2511-b200-llama3-8b-mxfp8": "mxfp8",
              "torchtitan-h200-llama31-8b-32": "current", "mpt-97": "delayed", "nemo2502-b200-gpt3-175b": ""}
    for run_id, recipe in expect.items():
        assert runs.loc[run_id, "fp8_recipe"] == recipe, run_id
        sc = validation.scenario_for(runs.loc[run_id].to_dict() | {"run_id": run_id})
        assert sc.training.fp8_recipe == (recipe or None)
    assert (runs.loc[runs["precision"] != "fp8", "fp8_recipe"] == "").all()


def test_mpt_fp8_calibration_row_within_target():
    # MPT-3B FP8 on 8 H100 (llm-foundry, te.Linear): every input, output gradient and (each micro-batch) weight cast
    # on its own; the calibration target is 10%
    runs = validation.load_runs()
    (err,) = validation.compare(runs[runs["run_id"] == "mpt-97"])["error"]
    assert abs(err) < 0.10
