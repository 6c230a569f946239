"""Blackwell efficiencies (data/efficiency.yaml ``generations.blackwell`` and ``accelerators``), by hand.

Each value is Hopper's carried over by a published measurement of Blackwell against Hopper in one harness, or a
fraction measured on Blackwell directly; none is fitted to a training run. The numbers below are the sources'
(locators on the lines and in data/efficiency.yaml); the arithmetic is ours.
"""

from __future__ import annotations

import dataclasses
import statistics

import pytest

from gpucluster_lib.calibration.gemm import GemmCurve
from gpucluster_lib.catalog import load_catalog
from gpucluster_lib.scenario import from_dict
from gpucluster_lib.training.core import layer_terms
from gpucluster_lib.training.efficiency import for_accelerator, load_table
from gpucluster_lib.training.estimate import build_context, estimate
from gpucluster_lib.training.validation import load_runs

HOPPER_GEMM = 0.58  # data/efficiency.yaml generations.hopper.gemm_efficiency (fitted on the calibration rows)
FP8_FACTOR = {"hopper": 0.95, "blackwell": 0.96}  # fp8_gemm_factor (TE gemm_profiling.rst, pre-quantized)

# OpenXLA matmul_interpolator_data.h, bf16xbf16->bf16, b = 4, 4096^3: sm_100 (B200: github.com/openxla/xla/issues/48627)
# 1670467342710337 FLOP/s of B200's 2250 TFLOP/s; sm_90 788699393418751 of H100's 989.4
XLA_B200 = (1670.467 / 2250) / (788.699 / 989.4)
# Transformer Engine gemm_profiling.rst, BF16 per-layer totals (autocast, pre-quantized) of 3 x 2 x 15872 x 4096
# x 49152 FLOPs: "NVIDIA B300 SXM6 AC" 12.758 / 13.102 ms of HGX B300's 2250; "NVIDIA H200 NVL" 32.014 / 31.968 ms
# of 835.5
LAYER_FLOPS = 3 * 2 * 15872 * 4096 * 49152
TE_B300 = (LAYER_FLOPS / ((12.758 + 13.102) / 2e3) / 2250e12) / (LAYER_FLOPS / ((32.014 + 31.968) / 2e3) / 835.5e12)
# Azure AI-benchmarking-guide, cuBLASLt FP8, best square: GB200 2906.9, GB300 3308.5 TFLOP/s (16384^3) of 5000;
# H100 1382.2 (32768^3) of 1978.9; over the FP8 kernels' own shares of the 16-bit efficiency
FP8_SHARES = FP8_FACTOR["hopper"] / FP8_FACTOR["blackwell"]
AZURE_GB200 = (2906.9 / 5000) / (1382.2 / 1978.9) * FP8_SHARES
AZURE_GB300 = (3308.5 / 5000) / (1382.2 / 1978.9) * FP8_SHARES


def test_the_ratios_by_hand():
    assert XLA_B200 == pytest.approx(0.931, abs=5e-4)
    assert LAYER_FLOPS == pytest.approx(19.17e12, rel=1e-3)
    assert TE_B300 == pytest.approx(0.919, abs=5e-4)
    assert AZURE_GB200 == pytest.approx(0.824, abs=5e-4)
    assert AZURE_GB300 == pytest.approx(0.937, abs=5e-4)
    # one harness, two GPUs of one catalogue peak (2500 / 5000): GB300's FP8 GEMM is 1.14x GB200's
    assert 3308.5 / 2906.9 == pytest.approx(1.138, abs=5e-4)


def test_blackwell_gemm_efficiency_is_hoppers_times_the_measured_ratios():
    table = load_table()
    assert table["generations"]["hopper"]["gemm_efficiency"] == HOPPER_GEMM  # refitted Hopper: recompute these
    # the generation (any other Blackwell GPU): the median of the four ratios, 0.925 x 0.58 = 0.537
    median = statistics.median([XLA_B200, TE_B300, AZURE_GB200, AZURE_GB300])
    assert table["generations"]["blackwell"]["gemm_efficiency"] == round(HOPPER_GEMM * median, 2) == 0.54
    # each catalogued GPU its own ratio
    own = table["accelerators"]
    assert own["b200-sxm-180gb"]["gemm_efficiency"] == round(HOPPER_GEMM * XLA_B200, 2) == 0.54
    assert own["gb200-gpu-186gb"]["gemm_efficiency"] == round(HOPPER_GEMM * AZURE_GB200, 2) == 0.48
    assert own["gb300-gpu-288gb"]["gemm_efficiency"] == round(HOPPER_GEMM * AZURE_GB300, 2) == 0.54


def test_blackwell_memory_nvlink_and_network():
    bw, hopper = load_table()["generations"]["blackwell"], load_table()["generations"]["hopper"]
    # NCCL all-reduce, ring, 8 GB, bus bandwidth (Azure ND GB200 v6 / ND GB300 v6) of NVLink 5's 900 GB/s per direction
    assert bw["nvlink_efficiency"] == round(679.61 / 900, 2) == 0.76
    assert 680.45 / 900 == pytest.approx(bw["nvlink_efficiency"], abs=0.005)  # GB300, the same harness
    # STREAM-like triad: GB300 7.140 of 8.0 TB/s (KernelAgent-Oink), H100 2.97 of 3.35 (Azure): Hopper's 0.85 x 1.007
    assert bw["memory_efficiency"] == round(hopper["memory_efficiency"] * (7.140 / 8.0) / (2.97 / 3.35), 2) == 0.86
    # the same NDR 400 Gb/s ConnectX-7 fabric as DGX H100
    assert bw["network_efficiency"] == hopper["network_efficiency"]


def _acc(acc_id):
    return load_catalog().accelerator(acc_id)


def test_a_gpu_takes_its_own_values_inside_its_generation():
    b200, gb200, gb300 = (for_accelerator(_acc(a), attention_kernel="cudnn")
                          for a in ("b200-sxm-180gb", "gb200-gpu-186gb", "gb300-gpu-288gb"))
    assert {b200.generation, gb200.generation, gb300.generation} == {"blackwell"}
    assert (b200.gemm_efficiency, gb200.gemm_efficiency, gb300.gemm_efficiency) == (0.54, 0.48, 0.54)
    # the rest is the generation's
    assert b200.nvlink_efficiency == gb200.nvlink_efficiency == gb300.nvlink_efficiency == 0.76
    # a scenario override still wins over the GPU's own value
    assert for_accelerator(_acc("gb200-gpu-186gb"), {"gemm_efficiency": 0.6}).gemm_efficiency == 0.6
    # a GPU the table does not name (a user's catalogue row of a Blackwell part) takes the generation's
    other = {**_acc("gb200-gpu-186gb"), "id": "my-blackwell"}
    assert for_accelerator(other).gemm_efficiency == 0.54


def _scenario(accelerator, tp=1, mb=2):
    return from_dict({"name": "by hand", "model": {"preset": "llama3-8b"},
                      "hardware": {"accelerator": accelerator, "gpus_per_node": 8, "nodes": 1},
                      "parallelism": {"tensor": tp, "pipeline": 1, "micro_batch_size": mb, "global_batch_size": 16,
                                      "recompute": "none", "zero_stage": 1},
                      "training": {"framework": "nemo", "precision": "bf16"}})


def _ctx(accelerator):
    ctx = build_context(_scenario(accelerator))[0]
    # a flat GEMM curve (shape factor 1, no fixed time): GEMM times by hand
    return dataclasses.replace(ctx, gemm=GemmCurve(eff_max=1.0, m_half=0.0, n_half=0.0, k_half=0.0))


def test_gemm_time_on_gb200_and_b200_by_hand():
    # Llama 3 8B, one layer, micro-batch 2 x 8192 tokens, BF16: the QKV (4096 -> 6144), projection (4096 -> 4096)
    # and SwiGLU FFN (4096 -> 2 x 14336, 14336 -> 4096) GEMMs, forward + backward 3 x 2 M K N FLOPs
    M = 2 * 8192
    flops = 3 * 2 * M * 4096 * (6144 + 4096 + 2 * 14336 + 14336)
    b200, gb200 = _ctx("b200-sxm-180gb"), _ctx("gb200-gpu-186gb")
    t_b200 = flops / (2250e12 * 0.54)   # B200's dense BF16 peak x its own gemm_efficiency
    t_gb200 = flops / (2500e12 * 0.48)  # GB200's: a higher peak, a lower measured share -> 1.2% slower GEMMs
    assert t_gb200 / t_b200 == pytest.approx(2250 * 0.54 / (2500 * 0.48), rel=1e-9) == pytest.approx(1.0125)
    # the engine: the layer times differ by the GEMMs only (the same attention rate of the same 16-bit peak share,
    # the same memory bandwidth fraction; GB200 8.0 TB/s against B200's 7.7 moves the element-wise part)
    lt = {k: layer_terms(c, tp=1, cp=1, ep=1, mb=2, rc=0, sp=False, tpo=0)[0] for k, c in (("b", b200), ("g", gb200))}
    # element-wise: 20 h (22 h less the two one-byte dropout masks: Llama 3 has no hidden dropout) + 6 f a token
    ew = {k: 2 * 8192 * (20 * 4096 + 6 * 14336) * 3 / (bw * 0.86) for k, bw in (("b", 7700e9), ("g", 8000e9))}
    attn_fraction = {k: 0.628 * 8192 / (8192 + 1297) for k in ("b", "g")}  # cuDNN on Blackwell, 0.542 of peak
    attn_flops = 3.5 * 4 * 2 * 8192**2 * 32 * 128 / 2  # 4 b s^2 heads d / 2 (causal, b = 2), fwd + bwd 3.5x
    attn = {"b": attn_flops / (2250e12 * attn_fraction["b"]), "g": attn_flops / (2500e12 * attn_fraction["g"])}
    for k, t_g in (("b", t_b200), ("g", t_gb200)):
        assert float(lt[k]) == pytest.approx(t_g + ew[k] + attn[k], rel=1e-3), k


def test_gb300_runs_cudnn_attention_at_its_own_measured_rate():
    # NVIDIA/cudnn-frontend results/llama3.1/gb300/llama3.1_20260424_100757.csv (60e572b7, cuDNN 9.22), BF16, causal,
    # batch 2, 64/8 heads of 128: forward, backward TFLOP/s, combined 3.5 / (1/fwd + 2.5/bwd), of GB300's 2500
    k = load_table()["accelerators"]["gb300-gpu-288gb"]["attention_kernels"]["cudnn"]
    gb300 = {2048: (1373, 967), 4096: (1703, 1248), 8192: (1856, 1435), 16384: (1915, 1507)}
    for s, (fwd, bwd) in gb300.items():
        combined = 3.5 / (1 / fwd + 2.5 / bwd)
        assert k["rate"] * s / (s + k["half_rate_tokens"]) * 2500 == pytest.approx(combined, rel=0.02), s
    assert 3.5 / (1 / 1856 + 2.5 / 1435) == pytest.approx(1534.4, abs=0.1)
    # the same file's GB200 twin (llama3.1_20260424_100750.csv) combines to 1393.2 at 8k: GB300 1.10x
    assert 1534.4 / (3.5 / (1 / 1574 + 2.5 / 1332)) == pytest.approx(1.101, abs=1e-3)
    gb300_eff = for_accelerator(_acc("gb300-gpu-288gb"), attention_kernel="cudnn")
    gb200_eff = for_accelerator(_acc("gb200-gpu-186gb"), attention_kernel="cudnn")
    assert (gb300_eff.flash_attention_efficiency, gb300_eff.attention_half_rate_tokens) == (0.702, 1299)
    assert (gb200_eff.flash_attention_efficiency, gb200_eff.attention_half_rate_tokens) == (0.628, 1297)
    # another kernel on GB300 keeps the generation's values
    fa2 = for_accelerator(_acc("gb300-gpu-288gb"), attention_kernel="flash-attention-2")
    assert fa2.flash_attention_efficiency == load_table()["attention_kernels"]["flash-attention-2"]["blackwell"]["rate"]


def test_gb300_attention_time_by_hand():
    # Llama 3 8B (32 heads of 128) at 8,192 tokens, micro-batch 2, one layer: 2 x 2 x 8192^2 x 32 x 128 x 2 / 2
    # FLOPs forward (causal half), 3.5x forward + backward; GB300 0.702 x 8192 / (8192 + 1299) of 2500 TFLOP/s,
    # GB200 0.628 x 8192 / (8192 + 1297): GB300's attention takes 0.8947 of GB200's time
    fwd = 2 * 2 * 8192**2 * 32 * 128 * 2 / 2
    t300 = 3.5 * fwd / (2500e12 * 0.702 * 8192 / (8192 + 1299))
    t200 = 3.5 * fwd / (2500e12 * 0.628 * 8192 / (8192 + 1297))
    assert t300 / t200 == pytest.approx(0.8947, abs=1e-4)
    l300 = layer_terms(_ctx("gb300-gpu-288gb"), tp=1, cp=1, ep=1, mb=2, rc=0, sp=False, tpo=0)[0]
    l200 = layer_terms(_ctx("gb200-gpu-186gb"), tp=1, cp=1, ep=1, mb=2, rc=0, sp=False, tpo=0)[0]
    # GB300's GEMMs: 0.54 of 2500 against GB200's 0.48 (Azure, one harness); memory the same 8.0 TB/s
    M = 2 * 8192
    gemm = 3 * 2 * M * 4096 * (6144 + 4096 + 2 * 14336 + 14336)
    assert float(l200 - l300) == pytest.approx(t200 - t300 + gemm / (2500e12 * 0.48) - gemm / (2500e12 * 0.54),
                                               rel=1e-6)


def test_unvalidated_blackwell_finding_says_what_evidence_exists():
    codes = {f.code: f for f in estimate(_scenario("b200-sxm-180gb")).findings}
    f = codes["training-efficiency-unvalidated"]
    # in words: the generation by name, the evidence without a repository path
    assert f.message.startswith("efficiency parameters for Blackwell GPUs are not calibrated on published training "
                                "runs: their GEMM, attention, memory and NVLink values come from published "
                                "microbenchmarks")
    # then how the estimate compared with the held-out runs on B200 (their count from the validation table; the
    # figures, tests/test_accuracy.py), then the advice
    runs = load_runs()
    n = int(((runs["accelerator"] == "b200-sxm-180gb") & (runs["set"] == "external")).sum())
    assert n >= 8 and f"not from training runs; checked against {n} published training runs on this GPU (FP8, " \
        "NVIDIA NeMo) that were not used to set these values, the estimated step time" in f.message
    assert f.message.endswith("those runs are FP8 and this estimate is BF16; treat the estimate as indicative")
    assert "docs/" not in f.message and "'" not in f.message.split(":")[0]
    # another vendor's accelerator (the "default" generation): no generation key in quotes either
    (g,) = [f for f in estimate(_scenario("mi300x")).findings if f.code == "training-efficiency-unvalidated"]
    assert g.message == ("efficiency parameters for this accelerator (not an Ampere, Hopper or Blackwell data-centre "
                         "GPU) are not calibrated on published training runs: these are conservative generic fractions, "
                         "not measured for this GPU; treat the estimate as indicative")
    assert not for_accelerator(_acc("b200-sxm-180gb")).validated
    # Hopper and Ampere are validated (the calibration rows): no such finding
    assert "training-efficiency-unvalidated" not in {f.code for f in estimate(_scenario("h100-sxm5-80gb")).findings}
    assert for_accelerator(_acc("a100-sxm4-80gb")).validated
