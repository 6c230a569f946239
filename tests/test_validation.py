"""Predicted against published training runs: the tolerances of the training-time engine.

Calibration rows (Narayanan 2021 Tables 1-2, MosaicML MPT on A100/H100 at 2,048 tokens and 17 MPT-3B / MPT-13B
rows at 4,096 to 65,536 tokens; the efficiency set in data/efficiency.yaml was fitted on them): the targets are
median |step-time error| <= 4% and every row <= 10% (measured 3.6% and 9.7%, docs/validation.md; met since full
recomputation on PyTorch 2.1 stops before the FFN output projection, training.checkpoint_early_stop); regression
guards keep today's errors from growing. Every Narayanan row (Megatron-LM and DeepSpeed ZeRO-3) is within 10% and
guarded so. External rows (never used for fitting; 126: MT-NLG 530B, BLOOM 176B, Llama 3 405B, Megatron-Core H100
weak scaling, 41 further llm-foundry MPT rows, and 70 rows of OPT-175B, GLM-130B, Megatron-LM's GPT-3 example and
NVIDIA's own NeMo / Megatron-Core runs on H100, H200, B200, GB200 and GB300): the targets median <= 7% (measured
5.4%) and every row <= 15% (measured 27.3%: five rows beyond it, named in BEYOND_15, an expected failure); the eight
long-sequence MPT-1B / MPT-7B rows are within 15% (measured 6.6%).
"""

from __future__ import annotations

import numpy as np
import pytest

from gpucluster_lib import training
from gpucluster_lib.training import validation
from tests.scripts import load_script


@pytest.fixture(scope="module")
def table():
    return validation.compare()


def test_every_run_is_evaluated(table):
    runs = validation.load_runs()
    assert len(table) == len(runs)
    # 10 Table 1 + 12 Table 2 + 10 MPT rows (visible file) + 17 MPT-3B / MPT-13B rows beyond 2,048 tokens
    assert (table["set"] == "calibration").sum() == 49
    assert (table["published_step_s"] > 0).all() and (table["predicted_step_s"] > 0).all()


def test_calibration_median_error_at_most_4_percent(table):
    cal = table[table["set"] == "calibration"]
    assert cal["error"].abs().median() <= 0.04  # the target: median <= 4%


def test_calibration_every_row_within_10_percent(table):
    # the target (max <= 10%): the five MPT rows with activation checkpointing that were 10-16% too slow while the
    # recomputation was charged a whole forward are within it once PyTorch 2.1's early stop leaves out the FFN output
    # projection (MPT-13B at 4,096 tokens on 8 A100 80GB: +15.6% -> +9.1%)
    cal = table[table["set"] == "calibration"]
    worst = cal.loc[cal["error"].abs().idxmax()]
    assert cal["error"].abs().max() <= 0.10, f"{worst['run_id']}: {worst['error']:+.1%}"  # the target


def test_narayanan_rows_within_10_percent(table):
    # Megatron-LM Tables 1-2 and the DeepSpeed ZeRO-3 rows of Table 2 (the target, met since the backward
    # pairs each module with the reduce-scatter DeepSpeed has in flight): the worst is 530B on 1120 A100, +9.7%
    nar = table[table["run_id"].str.startswith("megatron-") & (table["set"] == "calibration")]
    assert len(nar) == 22
    worst = nar.loc[nar["error"].abs().idxmax()]
    assert nar["error"].abs().max() <= 0.10, f"{worst['run_id']}: {worst['error']:+.1%}"


def test_calibration_regression_guard(table):
    # today: median 3.6%, the worst row 530B ZeRO-3 on 1120 A100 (DeepSpeed, Table 2) at +9.7% (+9.2% before ZeRO-3's per-layer
    # collectives paid NCCL's ring latency for each of the ring's n - 1 steps, nccl src/graph/tuning.cc); the rows with full recomputation
    # of MPT (FSDP) are within 9.1% (MPT-13B at 4,096 tokens on 8 A100 80GB, +9.1%; it was +15.6% with a whole forward
    # recomputed)
    runs = validation.load_runs().set_index("run_id")
    cal = table[table["set"] == "calibration"].set_index("run_id")["error"]
    assert cal.abs().median() < 0.037
    assert cal.abs().max() < 0.098, f"{cal.abs().idxmax()}: {cal[cal.abs().idxmax()]:+.1%}"
    full = cal[(runs.loc[cal.index, "recompute"] == "full") & (runs.loc[cal.index, "framework"] == "fsdp")]
    assert len(full) == 17
    assert full.abs().max() < 0.092, f"{full.abs().idxmax()}: {full[full.abs().idxmax()]:+.1%}"


def test_external_runs_within_target(table):
    ext = table[table["set"] == "external"]
    # 3 MT-NLG, BLOOM, 2 Llama 3, 9 Megatron-Core rows and 41 held-out llm-foundry MPT rows (33 at SeqLen 2048 or
    # 512, 8 at 8192 and 32768), and the 70 rows added by the rules in docs/validation.md: OPT-175B, 2 GLM-130B,
    # Megatron-LM's GPT-3 175B, 3 Nemotron-4 15B, 24 dgxc-benchmarking, 12 NeMo 24.07, 2 torchtitan and 25 NeMo 25.x /
    # Megatron-Bridge rows
    assert len(ext) == 126
    assert ext["error"].abs().median() <= 0.07  # held-out target: median <= 7%


#: The held-out rows beyond the 15% target, each with what the model lacks (docs/validation.md)
BEYOND_15 = {
    "mpt-a100-40-70b-s2048-g64-mb2",   # -27%: the same per-GPU work runs 35% faster on 32 A100 80GB; a second run of
                                       # that sweep (MPT-1B on 32 A100 40GB) is 18% slower than its siblings
    "nemo2502-b200-nemotron4-15b",     # -19%: NeMo 25.02 on B200, whose same plans ran 1.178x (Llama 3 8B) and 1.058x
                                       # (Llama 3.1 405B) as fast in 25.11 (test_release_series_published_data); its
                                       # sibling Nemotron-4 340B is within since it runs TE's unfused attention, as
                                       # its container's Transformer Engine chose (test below); TE v1.14's FP8
                                       # transposes on Blackwell (tests/test_transformer_engine.py) are one point
    "mb2604-gb300-llama3-70b-mxfp8",   # +17%, +17%, +25%: GB300 in the 2026 tables; the same plans in 26.02 are off
    "mb2606-gb300-llama31-405b-mxfp8",  # nearly as far, so not the 2026 software; GB300 runs Llama 3 8B 1.192x
    "mb2606-gb300-llama31-405b-fp8",    # GB200 in NVIDIA's 25.11 table, the model 1.105x (test below)
}


@pytest.mark.xfail(strict=True, reason="five held-out rows are beyond 15% (MPT-70B on 64 A100 40GB at -27%, NeMo 25.02's "
                   "B200 Nemotron-4 15B at -19%, three GB300 rows of the "
                   "2026 tables at +17% to +25%, whose same plans in 26.02 are off nearly as far); no sourced mechanism "
                   "puts them within 15% without moving the others (docs/validation.md)")
def test_external_every_row_within_15_percent(table):
    ext = table[table["set"] == "external"]
    worst = ext.loc[ext["error"].abs().idxmax()]
    assert ext["error"].abs().max() <= 0.15, f"{worst['run_id']}: {worst['error']:+.1%}"  # the target: every row <= 15%


def test_external_regression_guard(table):
    # beyond the 15% target: the five rows of BEYOND_15 only, the worst MPT-70B on 64 A100 40GB (-27.3%); median 5.4%.
    # The long-sequence rows have their own test below
    ext = table[table["set"] == "external"]
    ext = ext[~ext["run_id"].isin(LONG_ROWS)]
    over = ext[ext["error"].abs() > 0.15]
    assert set(over["run_id"]) <= BEYOND_15, sorted(set(over["run_id"]) - BEYOND_15)
    assert over["error"].abs().max() < 0.28
    assert ext["error"].abs().median() < 0.06
    # the 56 rows held out first: median 3.7%, only MPT-70B on 64 A100 40GB beyond 15%
    # (Megatron-Core's 1.7B at -12.6% with Megatron-Core's unfused cross-entropy and the embedding's gradient in the
    # last reduction counted, -20.4% before)
    older = ext[ext["run_id"].str.startswith(("mpt-", "mcore-", "mtnlg-", "bloom-", "llama3-"))]
    assert older["error"].abs().median() < 0.04


def _release(label: str) -> tuple[int, ...]:
    """A release label as a tuple of ints, so that releases compare in order ("25.09" -> (25, 9), "26.04.01" ->
    (26, 4, 1))."""
    return tuple(int(part) for part in label.split("."))


def test_release_labels_compare_as_numbers():
    assert _release("25.09") < _release("25.11") < _release("26.02") < _release("26.04") < _release("26.04.01")
    assert _release("25.9") == _release("25.09") and _release("9.1") < _release("25.02")


def test_release_series_published_data():
    # Data checks (the published figures of scripts/make_validation_doc.py RELEASE_SERIES, no model), behind the
    # release-series section of docs/validation.md. NeMo 25.02 DGX-B200 table
    # (docs.nvidia.com/nemo-framework/user-guide/latest/performance/performance_summary.html, stored copy): Llama 3 8B
    # 26,006, Llama 3.1 405B 625 tokens / s / GPU; Megatron-Bridge docs/performance-summary-archive.md @ 067f987d,
    # 25.11 DGX-B200: 30,624 and 661 on the same plans (8 GPUs TP1 MBS 2 GBS 128; 128 GPUs TP4 PP8 CP2 VP8 GBS 64)
    series = {label: pts for label, _, pts in load_script("make_validation_doc").RELEASE_SERIES}
    b8 = {rel: tps for rel, _, tps in series["B200, Llama 3 8B, TP1, 8 GPUs"]}
    b405 = {rel: tps for rel, _, tps in series["B200, Llama 3.1 405B, TP4 PP8 CP2 VP8, 128 GPUs"]}
    assert (b8["25.02"], b8["25.11"], b405["25.02"], b405["25.11"]) == (26006, 30624, 625, 661)
    # From 25.09 on, at a fixed global batch, the same plans move by at most 6.3% (GB200 Llama 3.1 405B 793 -> 843,
    # 26.02 -> 26.06), so a 25.11 / 25.02 ratio of 1.18 (Llama 3 8B) is a release effect, 1.06 (405B) at the edge
    for label, pts in series.items():
        late = [(gbs, tps) for rel, gbs, tps in pts if _release(rel) >= (25, 9)]
        for gbs in {g for g, _ in late}:
            tps = [t for g, t in late if g == gbs]
            assert max(tps) / min(tps) <= 843 / 793, label


def test_release_series_model_errors(table):
    # The model on the series (scripts/make_validation_doc.py release_series): each series is one validation row's
    # model and plan, re-estimated at each release's global batch against that release's figure.
    series = {label: pts for label, pts in load_script("make_validation_doc").release_series()}
    runs = validation.load_runs().set_index("run_id")
    errors = table.set_index("run_id")["error"]
    for label, run_id, _ in load_script("make_validation_doc").RELEASE_SERIES:
        # the series' point at the row's own figure (global batch and tokens / s) is the row's error in the table
        row = runs.loc[run_id]
        own = [err for _, gbs, tps, err in series[label]
               if gbs == int(row["gbs"]) and tps * int(row["gpus"]) == pytest.approx(float(row["published_value"]))]
        assert own and own[0] == pytest.approx(errors[run_id], rel=1e-9), label
    # Regression guard (the model's output, not a published value): the H100 Llama 3 70B plan (TP4 PP8 VP5) is too
    # slow by +6% to +10% on every release from 25.09 to 26.04 (measured +7.3% to +8.5%), a steady offset rather
    # than a trend over the releases (docs/validation.md)
    h70 = [err for *_, err in series["H100, Llama 3 70B, TP4 PP8 VP5, 64 GPUs"]]
    assert min(h70) > 0.06 and max(h70) < 0.10 and max(h70) - min(h70) < 0.02


def test_blackwell_gpu_ratios_against_nvidia_same_release_tables(table):
    # Megatron-Bridge docs/performance-summary-archive.md @ 067f987d, Llama 3 8B on 8 GPUs, TP1 MBS 2 GBS 128, FP8-CS:
    # 25.09 B200 29,994, GB200 31,357 (1.045x); 25.11 B200 30,624, GB200 31,508 (1.029x), GB300 37,556 (1.192x GB200).
    # The model's B200 / GB200 efficiencies (data/efficiency.yaml, from different harnesses) give 1.016x, within 3%
    # of NVIDIA's own ratio; GB300's (Azure cuBLASLt 1.14x GB200, cuDNN 9.22 attention 1.10-1.13x) give 1.105x, short
    # of the table's 1.192x (the GB300 rows of BEYOND_15)
    pred = table.set_index("run_id")["predicted_step_s"]
    gb200_b200 = pred["mb2511-b200-llama3-8b-fp8cs"] / pred["mb2511-gb200-llama3-8b-fp8cs"]
    gb300_gb200 = pred["mb2511-gb200-llama3-8b-fp8cs"] / pred["mb2511-gb300-llama3-8b-fp8cs"]
    assert 31508 / 30624 - 0.03 < gb200_b200 < 31357 / 29994 + 0.03
    assert 1.09 < gb300_gb200 < 37556 / 31508  # the upper bound published; the lower a regression guard (1.105x)


def test_mamf_finder_candidate_is_checked_and_rejected():
    # stas00/ml-engineering compute/accelerator/README.md @ 744d01e, "Maximum Achievable Matmul FLOPS comparison
    # table", FP8: H100 SXM 1402.6 of 1979, H200 SXM 1453.4 of 1979, B200 SXM 3432.5 of 4500, GB200 3615.6 of 5000
    # TFLOP/s. Carried over from Hopper by data/efficiency.yaml's rule, 0.58 x ratio x 0.95 / 0.96 (by hand: B200
    # 0.58 x 0.7628 / 0.7088 x 0.9896 = 0.618, GB200 0.58 x 0.7231 / 0.7088 x 0.9896 = 0.586; on H200's row
    # 0.58 x 0.7628 / 0.7344 x 0.9896 = 0.596 and 0.58 x 0.7231 / 0.7344 x 0.9896 = 0.565)
    mod = load_script("make_validation_doc")
    assert mod.mamf_gemm("b200-sxm-180gb") == pytest.approx(0.618, abs=1e-3)
    assert mod.mamf_gemm("gb200-gpu-186gb") == pytest.approx(0.586, abs=1e-3)
    assert mod.mamf_gemm("b200-sxm-180gb", "h200-sxm-141gb") == pytest.approx(0.596, abs=1e-3)
    assert mod.mamf_gemm("gb200-gpu-186gb", "h200-sxm-141gb") == pytest.approx(0.565, abs=1e-3)
    # The documented conclusion, on either Hopper base: with these values more held-out B200 / GB200 rows fall beyond
    # 15% than with the catalogue's (docs/validation.md)
    for base in ("h100-sxm5-80gb", "h200-sxm-141gb"):
        rows = mod.mamf_candidate(base)
        now = [e for r in rows.values() for _, e, _ in r]
        new = [e for r in rows.values() for _, _, e in r]
        assert len(now) == 18 and sum(abs(e) > 0.15 for e in new) > sum(abs(e) > 0.15 for e in now), base


def test_gb300_over_gb200_in_nvidia_2606_tables():
    # Data check (no model) behind docs/validation.md's GB300 bullet: Megatron-Bridge
    # docs/performance-summary-archive.md @ 067f987d, "26.06 NeMo Container", tokens / s / GPU GB300 / GB200, e.g.
    # Llama 3.1 405B FP8 1,048 / 843 = 1.243x, Nemotron 3 Super MXFP8 9,652 / 6,742 = 1.432x (TP1 against TP2)
    mod = load_script("make_validation_doc")
    pairs = {label: (a, b) for label, a, b in mod.GB300_GB200_2606}
    assert pairs["Llama 3.1 405B, FP8"] == (1048, 843) and pairs["Nemotron 3 Super, MXFP8"] == (9652, 6742)
    ratios = {k: a / b for k, (a, b) in pairs.items()}
    assert len(ratios) == 14 and min(ratios.values()) > 1.11 and max(ratios.values()) < 1.44
    # the dense Llama rows, the models of the validation set: 1.20x to 1.25x
    dense = [ratios[k] for k in mod.GB300_DENSE]
    assert min(dense) > 1.199 and max(dense) < 1.251


def test_gb300_over_gb200_in_nvidia_2608_tables():
    # Data check (no model): Megatron-Bridge docs/performance-summary.md @ 067f987d, "26.08 NeMo Container", tokens /
    # s / GPU GB300 / GB200: DeepSeek-V3 MXFP8 6,288 / 4,912 = 1.280x, DeepSeek-V4 Flash 8,224 / 7,776 = 1.058x,
    # Nemotron 3 Super NVFP4 10,240 / 7,168 = 1.429x (TP1 against TP2)
    mod = load_script("make_validation_doc")
    pairs = {label: (a, b) for label, a, b in mod.GB300_GB200_2608}
    assert pairs["DeepSeek-V3, MXFP8"] == (6288, 4912) and pairs["Nemotron 3 Ultra, MXFP8"] == (3552, 2528)
    ratios = sorted(a / b for a, b in pairs.values())
    assert len(ratios) == 8 and 1.057 < ratios[0] < 1.058 and 1.428 < ratios[-1] < 1.429


def test_nvidia_fp8_rows_regression_guard(table):
    # NVIDIA's DGX Cloud benchmarks (dgxc-benchmarking v24.11.1, NeMo on H100): published step times of the same
    # models and plans in BF16 and in FP8 (e.g. Llama 3.1 70B on 64 H100: 14.72 s and 11.01 s). With FP8 GEMMs at
    # 0.95 of the 16-bit efficiency (Transformer Engine's one-harness benchmark), their casts as HBM traffic and
    # cuDNN's attention, the 12 FP8 rows are within 15% (median 5.3%, mean -4.0%; max -13.3%, GPT-3 175B FP8 on 2048
    # H100, within 10% before the interleaved schedule's overlapped p2p was counted, core.py [26]); the BF16 rows median
    # 5.4%, max 8.7% (Megatron-Core's fused cross-entropy counted at 40 bytes a logit, data/training_frameworks.yaml
    # cross_entropy_losses; the output-layer wgrad deferral of the runs' yaml files, Llama 3.1 70B / 405B and
    # Nemotron-4 340B, core.py [27]); with the 0.62 fitted on one MPT row they were 25-50% too slow
    ext = table[table["set"] == "external"].set_index("run_id")["error"]
    fp8 = ext[ext.index.str.startswith("dgxc-") & ext.index.str.contains("-fp8-")]
    bf16 = ext[ext.index.str.startswith("dgxc-") & ext.index.str.contains("-bf16-")]
    assert len(fp8) == 12 and len(bf16) == 12
    assert fp8.abs().max() < 0.15 and fp8.abs().median() < 0.06 and abs(fp8.mean()) < 0.05
    assert bf16.abs().max() < 0.12 and bf16.abs().median() < 0.07
    # FP8 over BF16 per model and GPU count, predicted against published: every pair within 14% (measured: the
    # model's FP8 speed-up is 4-13% larger than published, its BF16 rows too slow by up to 11%, its FP8 rows too fast
    # by up to 10%)
    for rid in fp8.index:
        twin = rid.replace("-fp8-", "-bf16-")
        ratio = (1 + fp8[rid]) / (1 + bf16[twin]) - 1
        assert abs(ratio) < 0.14, f"{rid}: {ratio:+.1%}"


# llm-foundry benchmarking README (b2a43a1), tables 'H100 80GB BF16' and 'A100 80GB': MPT-1B and MPT-7B at SeqLen
# 8192 and 32768 on 8 GPUs (the rule, fixed before these rows were compared: both models, both lengths, both tables);
# held out: they test the Triton kernel's rate fitted on the MPT-3B / MPT-13B calibration rows
LONG_ROWS = ["mpt-h100-7b-s32768-g8-mb2", "mpt-h100-7b-s8192-g8-mb8", "mpt-h100-1b-s32768-g8-mb1",
             "mpt-h100-1b-s8192-g8-mb3", "mpt-a100-80-7b-s32768-g8-mb2", "mpt-a100-80-7b-s8192-g8-mb8",
             "mpt-a100-80-1b-s32768-g8-mb1", "mpt-a100-80-1b-s8192-g8-mb3"]


def test_long_sequence_rows_within_15_percent(table):
    long = table[table["run_id"].isin(LONG_ROWS)]
    assert len(long) == 8
    worst = long.loc[long["error"].abs().idxmax()]
    assert long["error"].abs().max() <= 0.15, f"{worst['run_id']}: {worst['error']:+.1%}"  # the external target


def test_long_sequence_rows_regression_guard(table):
    # with the kernel's rate (llm-foundry's Triton FlashAttention, fitted on the MPT-3B / MPT-13B calibration rows)
    # and checkpoint early stop the eight rows are -5.7% to +6.6% (-12.5% to +10.1% with a whole forward recomputed;
    # -0.5% to -34.8% at the one shared rate); the worst is MPT-7B on 8 A100 80GB at 8,192 tokens, +6.6%. Without
    # recomputation (MPT-1B) they are too fast
    long = table[table["run_id"].isin(LONG_ROWS)].set_index("run_id")["error"]
    assert len(long) == 8
    assert long.abs().max() < 0.07
    assert (long[[r for r in LONG_ROWS if "-1b-" in r]] < 0.0).all()


def test_held_out_mpt_short_steps_regression_guard(table):
    # llm-foundry benchmarking README (b2a43a1): the held-out MPT rows with steps under 2 s (MPT-125M to 13B, 0.43 to
    # 1.6 s; Composer's fixed 0.09 s is 6-21% of them). With the Triton kernel's rate at 2,048 tokens (0.345 x 2048 /
    # 2367 = 0.299 of the A100 peak, 0.167 of the H100's) and the fixed time refitted with checkpoint early stop
    # (0.15 -> 0.09 s) they average +0.9%, the worst MPT-1B FP8 at 512 tokens on 8 H100 at +15.0% (with 0.15 s and
    # a whole forward recomputed: +6% on average, MPT-1B on 8 H100 at +19.3%; docs/validation.md)
    ext = table[(table["set"] == "external") & table["run_id"].str.startswith("mpt-")]
    short = ext[ext["published_step_s"] < 2.0]
    assert len(short) == 14
    assert short["error"].abs().max() < 0.16
    assert abs(short["error"].mean()) < 0.02


def test_published_conversions_by_hand():
    runs = validation.load_runs().set_index("run_id")
    # Narayanan 2021 Table 1, 1T row: Eq. 3 FLOPs / (163e12 x 3072 GPUs)
    B, s, nl, h, V = 3072, 2048, 128, 25600, 51200
    f = 96 * B * s * nl * h**2 * (1 + s / (6 * h) + V / (16 * nl * h))
    assert validation.published_step_time_s(runs.loc["megatron-10"].to_dict() | {"run_id": "megatron-10"}, 312) == \
        pytest.approx(f / (163e12 * 3072))
    # llm-foundry MPT-7B on 8 A100: 96 sequences x 2048 tokens / 37,130 tokens/s
    assert validation.published_step_time_s(runs.loc["mpt-100"].to_dict(), 312) == pytest.approx(96 * 2048 / 37130)
    # llm-foundry README (b2a43a1), table 'A100 40GB', MPT-125M on 128 GPUs: 3328 x 2048 tokens / 15,863,837 T/s = 0.4296 s
    row = runs.loc["mpt-a100-40-125m-s2048-g128-mb26"].to_dict()
    assert validation.published_step_time_s(row, 312) == pytest.approx(0.42964, rel=1e-4)
    # H100 FP8 table, MPT-1B at SeqLen 512: 1792 x 512 tokens / 562,523 T/s = 1.6311 s
    row = runs.loc["mpt-h100fp8-1b-s512-g8-mb56"].to_dict()
    assert validation.published_step_time_s(row, 989) == pytest.approx(1.63105, rel=1e-4)
    # H100 BF16 table, row 34, MPT-1B at SeqLen 32768: 32 x 32768 tokens / 96,203 T/s = 10.8996 s
    row = runs.loc["mpt-h100-1b-s32768-g8-mb1"].to_dict()
    assert validation.published_step_time_s(row, 989) == pytest.approx(10.8996, rel=1e-4)
    # A100 80GB table, row 21, MPT-3B at SeqLen 65536 (MicroBatchSize 1, GradAccum 2, 8 GPUs: 16 sequences):
    # 16 x 65536 tokens / 14,137 T/s = 74.1727 s
    row = runs.loc["mpt-a100-80-3b-s65536-g8-mb1"].to_dict()
    assert row["gbs"] == 16 and row["recompute"] == "full" and row["set"] == "calibration"
    assert validation.published_step_time_s(row, 312) == pytest.approx(74.1727, rel=1e-4)


def test_every_published_calibration_plan_fits_in_memory(table):
    # the runs ran: the 530B ZeRO-3 run on 640 A100 (Narayanan 2021 Table 2, micro-batch 4, "did not fit on
    # 560 GPUs") fits with DeepSpeed's backward buffers at their peak: with the row's inferred live limit 2e9
    # (one module prefetched) 16/12 of a layer gathered or awaiting reduction in 16 bits, 13.42 GB: 85.6 GB of 85.9
    cal = table[table["set"] == "calibration"]
    assert cal["fits"].all(), list(cal.loc[~cal["fits"], "run_id"])


def test_530b_zero3_does_not_fit_on_560_gpus_as_published():
    # Narayanan 2021 Table 2 footnote: "530B did not fit on 560 GPUs with mbs=4, so 640 GPUs / batch 2560 used";
    # the 640-GPU row (batch 2560 = 640 x 4) on 560 GPUs at the same micro-batch is batch 2240 = 560 x 4.
    # Model states 16 x 529.6e9 / 560 = 15.1 GB (13.2 GB on 640), DeepSpeed's backward buffers 3.36 + 9.23 GB
    # at the default live limit (1e9), activations 53.4 GB: 86.7 GB with the fixed and fragmentation terms, above
    # the 85.9 GB (80 GiB) of an A100 (each part at its own peak, as the model adds activations; docs/training.md
    # "DeepSpeed ZeRO-3 buffers"). The row's inferred limit (2e9, one module prefetched) adds 1/12 of a layer,
    # 0.84 GB (0.88 GB with fragmentation): 87.6 GB on 560, 85.6 GB on 640, which fits by 0.3 GB. It holds under
    # the sum-of-peaks accounting only: timed to the instant of FC1's weight gradient (logits freed, part of the
    # rebuilt layer used up) 560 GPUs would hold 2.1-3.0 GB less (docs/training.md), and what closes the gap is
    # allocator fragmentation that no source sizes
    from gpucluster_lib.training import estimate

    runs = validation.load_runs()
    row = next(r for r in runs.to_dict(orient="records") if int(r["gpus"]) == 640 and "ZeRO-3" in str(r["label"]))
    assert estimate(validation.scenario_for(row)).fits is True
    row = row | {"gpus": 560, "dp": 560, "gbs": 2240}
    assert estimate(validation.scenario_for(row)).fits is False


def test_no_published_layout_is_refused(table):
    # BLOOM 176B: 70 layers on PP12 with embedding and loss as slots; Llama 3 405B: 126 layers on PP16, one
    # fewer on the first and the last stage; MT-NLG 530B on DeepSpeed; Megatron-Core H100 with --tp-comm-overlap
    rows = table.set_index("run_id")
    assert "[5/6/../5]" in rows.loc["bloom-384", "plan"]
    assert "[7/8/../7]" in rows.loc["llama3-405b-8k", "plan"]
    assert all("TP-overlap" in rows.loc[r, "plan"] for r in ("mcore-7.1b", "mcore-462b"))
    assert rows.loc["mtnlg-2240", "plan"].startswith("TP8 PP35 DP8")


def test_plan_search_space_contains_every_published_plan(table):
    """The search (only the GPU count and the global batch fixed) enumerates the published plan of every row,
    so its best is the published plan or a faster one."""
    from gpucluster_lib.scenario import ParallelismSpec
    from gpucluster_lib.training import build_context
    from gpucluster_lib.training.plans import Plan, enumerate_plans

    runs = validation.load_runs().set_index("run_id")
    for run_id, fields in zip(table["run_id"], table["plan_fields"], strict=True):
        row = runs.loc[run_id].to_dict()
        plan = Plan(**{**fields, "pipeline_layers": tuple(fields["pipeline_layers"]) if fields["pipeline_layers"]
                       else None})
        ctx = build_context(validation.scenario_for(row | {"run_id": run_id}))[0]
        codes = plan.arrays(ctx.arch.layers)
        spec = ParallelismSpec(auto=True, global_batch_size=int(row["gbs"]))
        space = enumerate_plans(spec, ctx.arch, ctx.gpus, ctx.nvlink_domain)
        hit = np.ones(len(space["tp"]), dtype=bool)
        for k, v in codes.items():
            hit &= space[k] == v[0]
        assert hit.any(), f"{run_id}: {plan.label()} is not in the search space"


def test_nemotron_figures_of_the_generated_doc_by_hand():
    # docs/validation.md's Nemotron-4 section takes its figures from scripts/make_validation_doc.py, not by hand
    mod = load_script("make_validation_doc")
    f = mod.nemotron_figures()
    # parameters: 32 x (6144 x (6144 + 2 x 1024) + 6144^2 + 2 x 6144 x 24576 + 2 x 6144) + 2 x 256000 x 6144 + 6144
    # = 15,628,376,064 (Nemotron-4 15B: 32 layers, h 6144, 48 heads / 8 KV heads of 128, squared-ReLU FFN 24,576)
    params = 32 * (6144 * (6144 + 2 * 1024) + 6144**2 + 2 * 6144 * 24576 + 2 * 6144) + 2 * 256000 * 6144 + 6144
    assert f["grad_bytes"] == pytest.approx(params / 8 * 4)            # fp32 gradients at TP8: 7.81 GB
    assert f["buckets"] == 79                                           # ceil(7.81 GB / 100 MB)
    assert f["bucket_latency_s"][96] == pytest.approx(2 * 95 * 8e-6 * 79)    # 0.120 s
    assert f["bucket_latency_s"][288] == pytest.approx(2 * 287 * 8e-6 * 79)  # 0.363 s
    assert f["nic_gb_s"] == pytest.approx(400 / 8 * 0.80)               # 400 Gb/s at Hopper's fabric efficiency
    assert f["pts_old"] == pytest.approx((f["o96"].step_time_s / 0.57 - 1) * 100)


def test_a100_fabric_efficiency_is_stated_as_a_fitted_knob_below_the_measured_range():
    # the A100 network efficiency sits below nccl-tests' 80-90% of line rate (large messages, quiet HDR
    # fabric): docs/validation.md says so with the figure in data/efficiency.yaml and the time it costs
    from pathlib import Path

    from gpucluster_lib.training.efficiency import load_table

    eff = load_table()["generations"]["ampere"]["network_efficiency"]
    assert eff < 0.80
    doc = " ".join((Path(__file__).resolve().parent.parent / "docs" / "validation.md").read_text().split())
    assert f"0.75 to {eff:g} of line rate). That is below the 80-90% of line rate" in doc
    assert f"takes {0.80 / eff:.2f}-{0.90 / eff:.2f} times the time" in doc     # 0.80 / 0.70, 0.90 / 0.70


def test_mpt_rows_state_composer_precisions_of_their_table():
    # llm-foundry benchmarking README, column "MP Mode": PURE gathers and reduces bf16; DEFAULT on the A100 40GB
    # table, whose rows predate commit b2a43a1 (Composer before v0.14, mosaic_fsdp.py v0.13.1), gathers fp32 and
    # reduces bf16; DEFAULT on the tables b2a43a1 re-ran (H100, and A100 80GB: submit_benchmarks.py at b2a43a1
    # installs llm-foundry v0.3.0, setup.py mosaicml>=0.16.3,<0.17; Composer v0.16.4 mosaic_fsdp_utils.py)
    # gathers bf16 and reduces fp32
    runs = validation.load_runs()
    mpt = runs[runs["run_id"].str.startswith("mpt-")]
    assert len(mpt) == 68 and (mpt["set"] == "calibration").sum() == 27  # 27 fitted, 41 held out
    for r in mpt.itertuples():
        if "PURE" in r.label:
            want = ("bf16", "bf16")
        elif r.accelerator == "a100-sxm4-40gb":
            want = ("fp32", "bf16")
        else:
            want = ("bf16", "fp32")
        assert (r.param_gather_precision, r.grad_reduce_precision) == want, r.run_id


def test_step_length_bands_of_the_generated_doc_by_hand():
    # docs/validation.md's "MPT rows by step length" table: bands [0, 2), [2, 20), [20, inf) s of the published step
    import pandas as pd

    mod = load_script("make_validation_doc")
    df = pd.DataFrame({"run_id": ["mpt-a", "mpt-b", "mpt-c", "mpt-d", "megatron-1"],
                       "set": ["external"] * 4 + ["calibration"],
                       "published_step_s": [0.5, 1.99, 2.0, 30.0, 1.0], "error": [0.10, -0.04, -0.20, 0.05, 0.5]})
    bands = {b["band"]: b for b in mod.step_length_rows(df)}
    assert set(bands) == {"under 2 s", "2 to 20 s", "20 s and more"}  # the Megatron row is not an MPT row
    assert bands["under 2 s"]["rows"] == 2
    assert bands["under 2 s"]["median"] == pytest.approx(0.07)   # (0.10 + 0.04) / 2
    assert bands["under 2 s"]["max"] == pytest.approx(0.10)
    assert bands["under 2 s"]["mean"] == pytest.approx(0.03)     # (0.10 - 0.04) / 2
    assert bands["2 to 20 s"]["mean"] == pytest.approx(-0.20)    # 2.0 s falls in the second band


def test_external_summary_without_the_rows_that_set_the_deepspeed_factor_by_hand():
    # the DeepSpeed pipeline-slot factor 1.15 comes from mtnlg-2240's 60.1 s (data/training_frameworks.yaml):
    # docs/validation.md gives the external median / max with and without the three MT-NLG rows
    import pandas as pd

    mod = load_script("make_validation_doc")
    assert mod.FACTOR_SOURCE_ROWS == ("mtnlg-2240", "mtnlg-2800", "mtnlg-3360")
    df = pd.DataFrame({"run_id": ["mtnlg-2240", "mtnlg-2800", "bloom-384", "mpt-x", "megatron-1"],
                       "set": ["external"] * 4 + ["calibration"], "error": [-0.30, 0.02, 0.10, -0.04, 0.5]})
    xs = mod.external_summary(df)
    assert xs["all"]["rows"] == 4 and xs["without"]["rows"] == 2
    assert xs["all"]["median"] == pytest.approx(0.07)      # |errors| 0.02, 0.04, 0.10, 0.30: (0.04 + 0.10) / 2
    assert xs["all"]["max"] == pytest.approx(0.30)
    assert xs["without"]["median"] == pytest.approx(0.07)  # 0.04 and 0.10
    assert xs["without"]["max"] == pytest.approx(0.10)


def test_generated_doc_marks_the_factor_rows_and_explains_the_dash():
    from pathlib import Path

    doc = (Path(__file__).resolve().parent.parent / "docs" / "validation.md").read_text(encoding="utf-8")
    mark = load_script("make_validation_doc").FACTOR_MARK
    for run_id in ("mtnlg-2240", "mtnlg-2800", "mtnlg-3360"):
        rows = [line for line in doc.splitlines() if line.startswith(f"| {run_id} ")]
        assert rows and all(line.startswith(f"| {run_id} {mark} |") for line in rows), run_id
    assert f"| external without the MT-NLG rows {mark} | 123 |" in doc  # 126 external rows less the 3 MT-NLG rows
    assert "A `-` in the speed-up column means that the published plan does not fit" in doc


def _long_context_findings(run_id, seq_length=None, kernel=None):
    from gpucluster_lib.training.estimate import estimate

    row = validation.load_runs().set_index("run_id").loc[run_id].to_dict() | {"run_id": run_id}
    if seq_length:
        row["model_overrides"] = f"{row['model_overrides'] or ''} seq_length={seq_length}".strip()
    if kernel:
        row["attention_kernel"] = kernel
    return [f for f in estimate(validation.scenario_for(row)).findings if f.code == "training-long-context-unvalidated"]


def test_long_context_finding_beyond_the_published_runs_of_the_kernel():
    # llm-foundry's Triton kernel: its longest published runs are MPT-3B at 65,536 tokens (calibration rows). MPT-1B
    # (24 layers, h 2048, 16 heads of 128, vocab 50,368) at 131,072 tokens: scores 2 x 24 x 131072 x 16 x 256 =
    # 25.77e9 FLOPs per token against 2 x 12 h^2 x 24 = 2.416e9 in the projections and FFN plus 2 x 2048 x 50368 =
    # 0.206e9 in the logits: 25.77 / 28.39 = 91% of the forward FLOPs
    (f,) = _long_context_findings("mpt-h100-1b-s32768-g8-mb1", seq_length=131072)
    assert f.severity == "warning" and f.field == "model.seq_length"
    assert f.message.startswith("attention at long context is not validated for Triton FlashAttention "
                                "(llm-foundry): at 131,072 tokens per sequence the attention scores are 91% of")
    assert "reach 65,536 tokens" in f.message
    # FlashAttention-2 at 32,768 tokens (MPT-1B: scores 6.442e9 of 9.064e9, 71%): beyond that kernel's published
    # runs (8,192 tokens, Llama 3 405B; a 21% share, Megatron-Core 1.7B at 4,096)
    (f,) = _long_context_findings("mpt-h100-1b-s32768-g8-mb1", kernel="flash-attention-2")
    assert "not validated for FlashAttention-2: at 32,768 tokens per sequence the attention scores are 71%" in f.message
    # MPT-1B at 8,192 with FlashAttention-2: scores 1.611e9 against 2.622e9: 38%, above the 21.4% of its runs
    (f,) = _long_context_findings("mpt-h100-1b-s8192-g8-mb3", kernel="flash-attention-2")
    assert "scores are 38% of" in f.message
    # MPT-7B at 8,192 with FlashAttention-2 (32 layers, h 4096, 32 heads: scores 2 x 32 x 8192 x 32 x 256 = 4.295e9
    # against 24 x 4096^2 x 32 + 2 x 4096 x 50368 = 13.30e9: 24.4%): within 8,192 tokens, but a larger share than
    # any published FlashAttention-2 run (21.4%, Megatron-Core 1.7B at 4,096)
    (f,) = _long_context_findings("mpt-h100-7b-s8192-g8-mb8", kernel="flash-attention-2")
    assert "at 8,192 tokens per sequence the attention scores are 24% of" in f.message


def test_no_long_context_finding_where_published_runs_are_reproduced():
    # the Triton kernel up to 65,536 tokens: MPT-1B at 32,768 (held out, within 15%) and MPT-3B at 65,536
    assert _long_context_findings("mpt-h100-1b-s32768-g8-mb1") == []
    assert _long_context_findings("mpt-a100-80-3b-s65536-g8-mb1") == []
    # cuDNN fused attention (Megatron-Core's kernel on H100): Llama 3 405B at 8,192 tokens (Llama Team 2024
    # Table 4; 7.7% of the FLOPs); Megatron-Core 1.7B at 4,096 tokens (24 layers, h 2048, vocabulary 131,072: scores
    # 4 x 4096 x 2048 x 24 = 805.3e6 against 24 x 2048^2 x 24 + 2 x 2048 x 131072 = 2,952.8e6: 805.3 / 3,758.1 =
    # 21.4%), both within the 22.5% that the kernel's published runs reach (22.2%): at 8,192 tokens per GPU
    # Megatron-Bridge's Llama 3 8B on B200 / GB200 / GB300; on H100 NVIDIA's NeMo Llama 3.1 8B, whose context
    # parallelism 2 gives the kernel 4,096-token chunks (the H100 runs at 8,192 tokens per GPU, Llama 3 405B and
    # Megatron-Bridge's Llama 3 70B, reach 13%)
    assert _long_context_findings("llama3-405b-8k") == []
    assert _long_context_findings("mcore-1.7b") == []
    # the same Llama model at 16,384 tokens is beyond every published run of that kernel: the finding
    (f,) = _long_context_findings("llama3-405b-8k", seq_length=16384)
    assert "for cuDNN fused attention: at 16,384 tokens per sequence" in f.message
    # unfused attention reads no fused kernel's rate: no finding from it
    from gpucluster_lib.training.estimate import estimate

    row = validation.load_runs().set_index("run_id").loc["mpt-h100-1b-s32768-g8-mb1"].to_dict()
    sc = validation.scenario_for(row | {"flash_attention": "false", "mb": 1})
    assert not [f for f in estimate(sc).findings if f.code == "training-long-context-unvalidated"]


def test_long_context_finding_quotes_the_validation_table(table):
    # the finding's evidence for the Triton kernel (estimate.py: MPT-3B at 65,536 tokens on 8 H100 and 8 A100,
    # reproduced within 10%) is the calibration rows' errors: they must move together
    err = table.set_index("run_id")["error"]
    assert max(abs(err["mpt-h100-3b-s65536-g8-mb1"]), abs(err["mpt-a100-80-3b-s65536-g8-mb1"])) < 0.10


def test_nemo_2502_and_2504_blackwell_rows_name_the_attention_kernel_transformer_engine_chose():
    # NeMo 25.02 = NeMo v2.2.0 on nvcr.io/nvidia/pytorch:25.01-py3 (NVIDIA/NeMo v2.2.0 requirements/manifest.json
    # "ngc-pytorch"; its Dockerfile.ci reinstalls only mcore and nemo), whose Transformer Engine is v1.14
    # (NVIDIA/bionemo-framework commit 67a869b3c: "pytorch 25.01-py3 (default TE_TG=v1.14)", citing the PyTorch 25.01
    # release notes). TE v1.14 get_attention_backend (release_v1.14 3b2a7b00): "if device_compute_capability >=
    # (9, 0)" -> FusedAttention (cuDNN), Blackwell (10.0) included; cuDNN's backend on sm100 only for heads of <= 128
    # (fused_attn.cpp "!(sm_arch_ == 100 && (head_dim_qk > 128 || head_dim_v > 128))"; later releases add only
    # 192 / 128 and 256 / 256, efficiency.cudnn_trains_heads)
    runs = validation.load_runs().set_index("run_id")
    for run_id, hidden, heads in (("nemo2502-b200-gpt3-175b", 12288, 96), ("nemo2502-b200-llama3-70b", 8192, 64),
                                  ("nemo2502-b200-nemotron4-15b", 6144, 48)):
        assert hidden // heads == 128, run_id  # GPT-3 175B, Llama 3 70B, Nemotron-4 15B: heads of 128
        assert runs.loc[run_id, "attention_kernel"] == "cudnn", run_id
        assert "TE_TG=v1.14" in runs.loc[run_id, "notes"], run_id
    # Nemotron-4 340B: 18432 / 96 = 192 > 128, so not cuDNN; flash-attn only at exactly 2.7.3 on compute capability
    # 10.0 (attention.py release_v1.14 l.119-147: _flash_attn_version_required_blackwell = _flash_attn_max_version =
    # 2.7.3), and NGC PyTorch 25.01 ships flash_attn 2.4.2: TE's UnfusedDotProductAttention. NeMo 25.04 (NeMo v2.3.0)
    # is built on the same pytorch:25.01-py3 (requirements/manifest.json at 2b03b748), so its GB200 row too
    assert 18432 // 96 == 192
    for run_id in ("nemo2502-b200-nemotron4-340b", "nemo2504-gb200-nemotron4-340b"):
        row = runs.loc[run_id]
        assert str(row["flash_attention"]).lower() == "false", run_id  # the engine's unfused attention
        assert "UnfusedDotProductAttention" in row["notes"], run_id  # the notes name the kernel the row runs
    # by default the engine runs FlashAttention-2 for such heads (TE's next backend; test_attention_kernel.py); the
    # rows, without an accepted flash-attn, run the unfused attention, which writes the s x s scores: slower
    ran = {}
    for run_id in ("nemo2502-b200-nemotron4-340b", "nemo2504-gb200-nemotron4-340b"):
        for fa in ("false", "true"):
            row = runs.loc[run_id].to_dict() | {"run_id": run_id, "flash_attention": fa}
            ran[run_id, fa] = training.estimate(validation.scenario_for(row)).step_time_s
        assert ran[run_id, "false"] > ran[run_id, "true"], run_id


def test_flash_attention_2_blackwell_rate_by_hand():
    # NVIDIA/cudnn-frontend benchmark/sdpa_benchmark_training/artifacts/, BF16, causal, batch 1, 128 / 8 heads of 128,
    # forward / backward TFLOP/s, combined 3.5 / (1/fwd + 2.5/bwd): GB200's PyTorch FlashAttention-2 kernel timed with
    # the profiler (..._NVIDIA_GB200.csv at d48a60e, backend pyt_flash_attention) times flash-attn's own kernel over
    # PyTorch's in one file and timing (..._NVIDIA_GB300.csv at bb37575, backends flash_attention / pyt_flash_attention)
    from gpucluster_lib.catalog import load_catalog
    from gpucluster_lib.training.efficiency import for_accelerator

    def comb(fwd, bwd):
        return 3.5 / (1 / fwd + 2.5 / bwd)

    gb200 = {2048: (336, 268), 4096: (387, 311), 8192: (414, 338), 16384: (430, 352)}
    native = {2048: (285.475, 246.511), 4096: (392.176, 314.788), 8192: (439.868, 351.692), 16384: (464.522, 368.995)}
    pytorch = {2048: (271.164, 230.185), 4096: (366.238, 291.593), 8192: (410.579, 330.096),
               16384: (430.746, 350.925)}
    cat = load_catalog()
    for acc in ("gb200-gpu-186gb", "gb300-gpu-288gb", "b200-sxm-180gb"):  # the generation value, B200 included
        eff = for_accelerator(cat.accelerator(acc), None, "flash-attention-2")
        assert (eff.flash_attention_efficiency, eff.attention_half_rate_tokens) == (0.165, 717), acc
    for s, bars in gb200.items():
        derived = comb(*bars) * comb(*native[s]) / comb(*pytorch[s])
        assert 0.165 * s / (s + 717) * 2500 == pytest.approx(derived, rel=0.012), s
    assert comb(430, 352) * comb(464.522, 368.995) / comb(430.746, 350.925) == pytest.approx(392.8, abs=0.05)
    # B200 takes the same fraction of its 2250: flash-attn's own kernel in the same bb37575 run (..._NVIDIA_B200.csv,
    # backend flash_attention) combines to 357.9 TFLOP/s at 16k
    assert 0.165 * 16384 / (16384 + 717) * 2250 == pytest.approx(357.9, rel=0.007)
    # FlashAttention-2 has no Blackwell instructions: 1.20x its H100 speed at 16k (Dao 2023 Fig. 7: 328 TFLOP/s),
    # far below Hopper's share of GB200's peak (0.337 x 16384 / 16916 x 2500 = 816 TFLOP/s)
    assert 392.8 / 328 == pytest.approx(1.1976, abs=1e-4)
    # cuDNN (PyTorch SDPA, cuDNN 9.10.2) in B200's 87a1bcd file runs 754.3 TFLOP/s at 4k (897.309 / 709.138): 2.5x
    # that file's FlashAttention-2 (347.732 / 291.053, 305.3)
    assert comb(897.309, 709.138) / comb(347.732, 291.053) == pytest.approx(2.47, abs=0.01)


def test_docs_validation_md_is_what_its_generator_writes_now():
    # docs/validation.md is generated (scripts/make_validation_doc.py): a change to the model, the rows or the
    # generator's text without regenerating it leaves the published errors stale, which no other test sees
    from pathlib import Path

    committed = (Path(__file__).resolve().parent.parent / "docs" / "validation.md").read_text(encoding="utf-8")
    assert load_script("make_validation_doc").render() == committed, "docs/validation.md is stale: run PYTHONPATH=. python scripts/make_validation_doc.py"


def test_nemo_2504_rows_run_transformer_engines_cross_entropy():
    # NeMo v2.3.0 (25.04) scripts/performance/utils.py l.290-291: "# enable cross entropy fusion with TE kernel",
    # recipe.model.config.cross_entropy_fusion_impl = "te"; NeMo v2.2.0's (25.02) scripts/llm/performance/utils.py sets
    # no cross-entropy implementation, so Megatron-Core's fused loss, NeMo's default (data/training_frameworks.yaml)
    runs = validation.load_runs().set_index("run_id")
    r2504 = runs[runs.index.str.startswith("nemo2504-")]
    r2502 = runs[runs.index.str.startswith("nemo2502-")]
    assert len(r2504) == 5 and (r2504["cross_entropy_loss"] == "te_triton").all()
    assert len(r2502) == 4 and (r2502["cross_entropy_loss"] == "").all()
    row = r2504.iloc[0].to_dict() | {"run_id": r2504.index[0]}
    assert validation.scenario_for(row).training.cross_entropy_loss == "te_triton"
