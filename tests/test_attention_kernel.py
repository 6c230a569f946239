"""The fused attention kernel (``training.attention_kernel``): its rate per kernel and GPU generation.

Each kernel runs the causal attention of a sequence of s tokens at ``rate x s / (s + half_rate_tokens)``
of the 16-bit peak (data/efficiency.yaml, ``attention_kernels``), counting FLOPs as FlashAttention's
benchmark does (forward 4 b s^2 heads d_head halved for the causal mask, backward 2.5x the forward).
"""

from __future__ import annotations

import dataclasses
import typing

import pytest

from gpucluster_lib.errors import ScenarioError
from gpucluster_lib.scenario import TrainingSpec, from_dict
from gpucluster_lib.training import validation
from gpucluster_lib.training.core import layer_terms
from gpucluster_lib.training.efficiency import attention_kernels, load_table
from gpucluster_lib.training.estimate import build_context


def _curve(gen, kernel):
    k = load_table()["attention_kernels"][kernel][gen]
    return lambda s: k["rate"] * s / (s + k["half_rate_tokens"])


def test_flash_attention_2_curve_reproduces_its_published_bars():
    # Dao 2023 (arXiv:2307.08691) Fig. 4d, A100 80GB, forward + backward, causal, head dimension 128 [TFLOP/s]
    a100 = {512: 99, 1024: 133, 2048: 155, 4096: 173, 8192: 182, 16384: 189}
    # Dao 2023 Fig. 7 (flash-attention README assets/flash2_h100_fwd_bwd_benchmark.png), H100 80GB, same panel
    h100 = {512: 163, 1024: 221, 2048: 265, 4096: 294, 8192: 308, 16384: 328}
    for gen, peak, bars in (("ampere", 312.0, a100), ("hopper", 989.4, h100)):
        rate = _curve(gen, "flash-attention-2")
        for s, tflops in bars.items():
            assert rate(s) * peak == pytest.approx(tflops, rel=0.025), (gen, s)  # every bar within 2.5%


def test_triton_rate_inside_the_published_flash_attention_1_class_range():
    # data/efficiency.yaml attention_kernels.triton: A100 between Dao 2023 Fig. 4d's Triton-op / FlashAttention (1)
    # asymptotes (0.257, 0.261 of 312) and the top of FlashAttention (1)'s "25-40%" (Dao 2023 abstract); H100 between
    # FlashAttention (1) on H100 (0.133 of 989) and FlashAttention-2 on H100 (0.337)
    k = load_table()["attention_kernels"]["triton"]
    assert 0.25 <= k["ampere"]["rate"] <= 0.40
    assert 0.13 <= k["hopper"]["rate"] <= 0.34
    # the Triton port is FlashAttention (1)'s algorithm: slower than FlashAttention-2 on both generations
    fa2 = load_table()["attention_kernels"]["flash-attention-2"]
    for gen in ("ampere", "hopper"):
        assert k[gen]["rate"] < fa2[gen]["rate"]


def _mpt_1b_h100(kernel, seq=8192):
    sc = from_dict({"name": "attention by hand", "model": {"preset": "mpt-1b", "seq_length": seq},
                    "hardware": {"accelerator": "h100-sxm5-80gb", "gpus_per_node": 8, "nodes": 1},
                    "parallelism": {"tensor": 1, "pipeline": 1, "micro_batch_size": 1, "global_batch_size": 8,
                                    "recompute": "none", "zero_stage": 3},
                    "training": {"attention_kernel": kernel}})
    ctx = build_context(sc)[0]
    train = layer_terms(ctx, tp=1, cp=1, ep=1, mb=1, rc=0, sp=False, tpo=0)[0]
    return float(train), ctx


def test_one_layer_attention_time_by_hand():
    # MPT-1B (16 heads of 128) at 8,192 tokens, micro-batch 1, one layer on one H100 (989.4 TFLOP/s bf16):
    # attention FLOPs, causal half, forward: 4 x 8192^2 x 16 x 128 / 2 = 2.749e11; forward + backward 3.5x.
    # Only the kernel differs between the two estimates, so the layer time differs by the attention alone:
    #   FlashAttention-2: 0.337 x 8192 / (8192 + 532) = 0.31645 of peak -> 2.749e11 / (0.31645 x 989.4e12) = 0.8780 ms
    #   Triton (rate r, half-rate 319 tokens): 2.749e11 x (1 + 319 / 8192) / (r x 989.4e12) = 0.28868 ms / r
    fwd_flops = 4 * 8192**2 * 16 * 128 / 2
    assert fwd_flops == pytest.approx(2.749e11, rel=1e-3)
    fa2, ctx = _mpt_1b_h100("flash-attention-2")
    triton, ctx_t = _mpt_1b_h100("triton")
    assert ctx.eff.attention_kernel == "flash-attention-2" and ctx_t.eff.attention_kernel == "triton"
    r = ctx_t.eff.flash_attention_efficiency
    t_fa2 = 3.5 * 0.8780e-3
    t_triton = 3.5 * 0.28868e-3 / r
    assert triton - fa2 == pytest.approx(t_triton - t_fa2, rel=2e-3)


def test_attention_kernel_rate_grows_with_the_sequence():
    # at 512 tokens the cost per query block weighs: FlashAttention-2 on H100 runs at 0.337 x 512 / 1044 = 0.165 of
    # peak (Fig. 7: 163 of 989 TFLOP/s), at 16,384 at 0.337 x 16384 / 16916 = 0.326 (328)
    rate = _curve("hopper", "flash-attention-2")
    assert rate(512) == pytest.approx(0.1653, rel=2e-3)
    assert rate(16384) == pytest.approx(0.3264, rel=2e-3)


def test_bad_attention_kernel_names_the_field_and_the_choices():
    with pytest.raises(ScenarioError) as exc:
        from_dict({"name": "x", "model": {"preset": "mpt-7b"}, "training": {"attention_kernel": "flash3"}})
    text = str(exc.value)
    assert text.startswith("training.attention_kernel: must be one of flash-attention-2, pytorch-flash-attention, triton "
                           "or cudnn, not 'flash3'")


def test_schema_choices_are_the_kernels_of_the_efficiency_table():
    hints = typing.get_type_hints(TrainingSpec)
    literal, none = typing.get_args(hints["attention_kernel"])  # Literal[...] | None
    assert none is type(None) and set(typing.get_args(literal)) == set(attention_kernels())
    assert TrainingSpec().attention_kernel is None  # the framework's kernel for the GPU generation
    # human names for the app and the report
    assert attention_kernels() == {"flash-attention-2": "FlashAttention-2",
                                   "pytorch-flash-attention": "FlashAttention-2 (PyTorch SDPA)",
                                   "triton": "Triton FlashAttention (llm-foundry)",
                                   "cudnn": "cuDNN fused attention"}


def test_published_runs_name_their_kernel():
    # llm-foundry's benchmark tables ran attn_impl: triton (scripts/train/benchmarking/submit_benchmarks.py default);
    # every other fused-attention row (Megatron-Core, Llama 3) runs the default FlashAttention-2-class kernel
    runs = validation.load_runs()
    mpt = runs["run_id"].str.startswith("mpt-")
    assert (runs.loc[mpt, "attention_kernel"] == "triton").all()
    # NVIDIA's dgxc-benchmarking scripts switch cuDNN's fused attention off for Nemotron-4 340B and GPT-3 175B
    # (nemotron/configure.sh, nemo_megatron/configure.sh: export NVTE_FUSED_ATTN=0): those rows name FlashAttention-2
    fa2 = runs["run_id"].str.startswith(("dgxc-nemotron4-340b-", "dgxc-gpt3-175b-"))
    assert fa2.sum() == 8 and (runs.loc[fa2, "attention_kernel"] == "flash-attention-2").all()
    # NeMo 25.02's B200 rows with heads of 128 name the kernel Transformer Engine v1.14 chose there (cuDNN: "if
    # device_compute_capability >= (9, 0)", transformer_engine/pytorch/attention.py on release_v1.14; the container's
    # TE version in the rows' notes; tests/test_validation.py)
    te114 = runs["run_id"].isin(["nemo2502-b200-gpt3-175b", "nemo2502-b200-llama3-70b", "nemo2502-b200-nemotron4-15b"])
    assert (runs.loc[te114, "attention_kernel"] == "cudnn").all()
    assert (runs.loc[~mpt & ~fa2 & ~te114, "attention_kernel"] == "").all()
    assert validation.scenario_for(runs[mpt].iloc[0].to_dict()).training.attention_kernel == "triton"
    # the others leave it to their framework (data/training_frameworks.yaml attention_kernel): Megatron-Core / NeMo
    # on H100 run cuDNN fused attention (Transformer Engine's choice on Hopper), Megatron-LM on A100 FlashAttention-2
    by_id = runs.set_index("run_id")
    for run_id, kernel in (("dgxc-llama31-8b-bf16-8", "cudnn"), ("mcore-1.7b", "cudnn"),
                           ("megatron-gpt3-175b-1024", "flash-attention-2"),
                           ("torchtitan-h200-llama31-8b-32", "pytorch-flash-attention")):
        sc = validation.scenario_for(by_id.loc[run_id].to_dict() | {"run_id": run_id})
        assert sc.training.attention_kernel is None
        assert build_context(sc)[0].eff.attention_kernel == kernel, run_id


def test_estimate_states_the_kernel_it_ran():
    from gpucluster_lib.training import estimate

    sc = from_dict({"name": "x", "model": {"preset": "mpt-1b"},
                    "hardware": {"accelerator": "h100-sxm5-80gb", "gpus_per_node": 8, "nodes": 1},
                    "parallelism": "auto", "training": {"attention_kernel": "triton"}})
    assert estimate(sc).assumptions["attention_kernel"] == "Triton FlashAttention (llm-foundry)"
    unfused = from_dict({"name": "x", "model": {"preset": "mpt-1b"},
                         "hardware": {"accelerator": "h100-sxm5-80gb", "gpus_per_node": 8, "nodes": 1},
                         "parallelism": "auto", "training": {"flash_attention": False}})
    assert estimate(unfused).assumptions["attention_kernel"] is None  # no fused kernel is read


def test_cudnn_is_refused_on_another_vendors_accelerator():
    # cuDNN is NVIDIA's CUDA library (docs.nvidia.com/cudnn; data/efficiency.yaml attention_kernels.cudnn vendor):
    # asked for on an AMD Instinct MI300X it is refused in words; the other kernels, and the framework's default
    # there (FlashAttention-2: MI300X is of the "default" generation), are not
    from gpucluster_lib.training import estimate

    def mi300x(kernel=None):
        training = {"tokens": 1e11, **({"attention_kernel": kernel} if kernel else {})}
        return from_dict({"model": {"preset": "llama3-8b"}, "hardware": {"accelerator": "mi300x", "nodes": 1},
                          "parallelism": {"tensor": 1, "pipeline": 1, "micro_batch_size": 1, "global_batch_size": 64},
                          "training": training})

    with pytest.raises(ScenarioError, match=r"^training.attention_kernel: cuDNN fused attention "
                                            r"is NVIDIA's library and runs only on NVIDIA GPUs, but the AMD "
                                            r"Instinct MI300X is made by AMD; choose flash-attention-2, pytorch-flash-attention or triton$"):
        estimate(mi300x("cudnn"))
    assert estimate(mi300x("triton")).step_time_s > 0
    assert estimate(mi300x()).assumptions["attention_kernel"] == "FlashAttention-2"


def test_cudnn_trains_heads_as_transformer_engine_offers_them():
    # transformer_engine/common/fused_attn/fused_attn.cpp v2.18 l.312-336: training on Blackwell with heads of at most
    # 128, "9.11: d_qk = 192, d_v = 128 + Blackwell + bprop", "9.23: d_qk = d_v = 256 + SM10x ... + bprop"; Hopper
    # trains heads up to 256 from cuDNN 9.5 (v2.5 l.234-237)
    from gpucluster_lib.training.efficiency import cudnn_trains_heads

    assert cudnn_trains_heads("blackwell", 128, 128)       # Llama, GPT-3: heads of 128
    assert cudnn_trains_heads("blackwell", 192, 128)       # DeepSeek-V3's latent attention
    assert cudnn_trains_heads("blackwell", 256, 256)
    assert not cudnn_trains_heads("blackwell", 192, 192)   # Nemotron-4 340B: 18432 / 96
    assert not cudnn_trains_heads("blackwell", 160, 160)   # Narayanan 2021's 530B and 1T: 20480 / 128, 25600 / 160
    assert cudnn_trains_heads("hopper", 192, 192)


def _nemotron340_b200(**training):
    """NVIDIA's NeMo 25.02 Nemotron-4 340B on 128 B200 (the validation row), with fused attention and ``training``."""
    row = validation.load_runs().set_index("run_id").loc["nemo2502-b200-nemotron4-340b"].to_dict()
    sc = validation.scenario_for(row | {"run_id": "nemotron4-340b", "flash_attention": "true"})
    return dataclasses.replace(sc, training=dataclasses.replace(sc.training, **training))


def _kernel_and_attention_findings(sc):
    from gpucluster_lib.training import estimate

    est = estimate(sc)
    return est, est.assumptions["attention_kernel"], [(f.code, f.severity) for f in est.findings
                                                       if f.code == "training-attention-heads-not-cudnn"]


def test_megatron_core_heads_cudnn_does_not_train_fall_back_to_flash_attention():
    # 192-wide heads on B200: NeMo's cuDNN default gives way to FlashAttention-2 (TE's next backend), with a finding
    est, kernel, found = _kernel_and_attention_findings(_nemotron340_b200())
    assert kernel == "FlashAttention-2" and found == [("training-attention-heads-not-cudnn", "info")]
    # the same step as naming FlashAttention-2: the fallback is that kernel, nothing else
    named, _, none = _kernel_and_attention_findings(_nemotron340_b200(attention_kernel="flash-attention-2"))
    assert est.step_time_s == named.step_time_s and none == []
    # the scenario names cuDNN's kernel for such heads: kept, with a warning
    _, kernel, found = _kernel_and_attention_findings(_nemotron340_b200(attention_kernel="cudnn"))
    assert kernel.startswith("cuDNN") and found == [("training-attention-heads-not-cudnn", "warning")]
    # TorchTitan runs cuDNN through PyTorch's SDPA, not Transformer Engine: no fallback, no finding
    _, kernel, found = _kernel_and_attention_findings(_nemotron340_b200(framework="torchtitan"))
    assert kernel.startswith("cuDNN") and found == []
    # unfused attention: nothing to say
    _, kernel, found = _kernel_and_attention_findings(_nemotron340_b200(flash_attention=False))
    assert kernel is None and found == []


def test_heads_cudnn_trains_keep_cudnn():
    from gpucluster_lib.training import estimate

    runs = validation.load_runs().set_index("run_id")
    for run_id in ("nemo2502-b200-nemotron4-15b",     # heads of 128 on B200
                   "nemo2407-nemotron-340b-128"):     # heads of 192 on H100
        est = estimate(validation.scenario_for(runs.loc[run_id].to_dict() | {"run_id": run_id}))
        assert est.assumptions["attention_kernel"].startswith("cuDNN"), run_id
        assert "training-attention-heads-not-cudnn" not in [f.code for f in est.findings], run_id
    # DeepSeek-V3's 192 / 128 latent attention on B200 with NeMo: cuDNN trains it (TE v2.5 on, cuDNN 9.11 on)
    sc = from_dict({"name": "dsv3", "model": {"preset": "deepseek-v3"},
                    "hardware": {"accelerator": "b200-sxm-180gb", "gpus_per_node": 8, "nodes": 128},
                    "parallelism": {"tensor": 1, "pipeline": 16, "expert": 8, "data": 64, "micro_batch_size": 1,
                                    "global_batch_size": 1024, "zero_stage": 1, "distributed_optimizer": True},
                    "training": {"framework": "nemo", "precision": "fp8"}})
    est = estimate(sc)
    assert est.assumptions["attention_kernel"].startswith("cuDNN")
    assert "training-attention-heads-not-cudnn" not in [f.code for f in est.findings]


def test_pytorch_flash_attention_curve_reproduces_nvidia_files():
    # PyTorch SDPA's copy of FlashAttention-2 (what TorchTitan runs on Ampere and Hopper), NVIDIA/cudnn-frontend:
    # Hopper benchmark/benchmark_results.csv at de355c7, "Pytorch FWD+BWD", causal, head dimension 128 [TFLOP/s of
    # 989.4]; Blackwell sdpa_bf16_benchmark_results_NVIDIA_GB200.csv at d48a60e, pyt_flash_attention, combined
    # 3.5 / (1/fwd + 2.5/bwd) [TFLOP/s of 2500]
    hopper = {4096: 257.94, 8192: 287.26, 16384: 311.17, 32768: 324.62, 65536: 328.09}
    blackwell = {2048: 3.5 / (1 / 336 + 2.5 / 268), 4096: 3.5 / (1 / 387 + 2.5 / 311),
                 8192: 3.5 / (1 / 414 + 2.5 / 338), 16384: 3.5 / (1 / 430 + 2.5 / 352)}
    for gen, peak, bars, tol in (("hopper", 989.4, hopper, 0.013), ("blackwell", 2500.0, blackwell, 0.005)):
        rate = _curve(gen, "pytorch-flash-attention")
        for s, tflops in bars.items():
            assert rate(s) * peak == pytest.approx(tflops, rel=tol), (gen, s)
    # slower than flash-attn's own kernel on Hopper (Dao 2023 Fig. 7, H100: 294, 308, 328 at 4k, 8k, 16k)
    for s, native in ((4096, 294), (8192, 308), (16384, 328)):
        assert _curve("hopper", "pytorch-flash-attention")(s) * 989.4 < native, s


def test_a_framework_attention_fallback_must_be_a_kernel_and_is_named_when_not():
    # a typo in data/training_frameworks.yaml attention_fallback would be read as a kernel nobody has: refused on load,
    # naming the key (not attention_kernel); the shipped TE-based frameworks fall back to flash-attn's own kernel
    from gpucluster_lib.errors import CatalogError
    from gpucluster_lib.training.framework import framework, framework_from_rows, framework_rows

    rows = {"megatron": {**framework_rows()["megatron"], "attention_fallback": "flash-attn"}}
    with pytest.raises(CatalogError, match=r"^training_frameworks\.yaml: framework megatron, attention_fallback: must "
                                           r"be one of flash-attention-2, pytorch-flash-attention, triton, cudnn, "
                                           r"got 'flash-attn'$"):
        framework_from_rows("megatron", rows)
    assert framework("megatron").attention_fallback == framework("nemo").attention_fallback == "flash-attention-2"
    assert framework("torchtitan").attention_fallback is None
