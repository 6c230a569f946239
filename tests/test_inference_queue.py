"""Serving under load: the queue (gpucluster_lib/inference/queueing.py), Poisson arrivals in serve(),
``gpucluster serve --max-rate``, and MLPerf Inference server against offline."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from gpucluster_lib.cli import main
from gpucluster_lib.errors import GpuClusterError
from gpucluster_lib.inference.queueing import (
    ReplicaCurve,
    erlang_c,
    load_point,
    max_rate,
    mg1_wait_quantile,
    poisson_quantile,
)
from gpucluster_lib.inference.serve import serve
from gpucluster_lib.inference.validation import mlperf_predicted, mlperf_rows, mlperf_scenario
from gpucluster_lib.scenario import from_dict
from tests.scripts import load_script

# ----------------------------------------------------------------- building blocks, by hand


def test_poisson_quantiles_from_the_tables():
    assert poisson_quantile(1.0, 0.5) == 1    # P(N<=0) = e^-1 = 0.368, P(N<=1) = 0.736
    assert poisson_quantile(1.0, 0.99) == 4   # P(N<=3) = 0.981, P(N<=4) = 0.996
    assert poisson_quantile(10.0, 0.99) == 18  # P(N<=17) = 0.986, P(N<=18) = 0.993
    assert poisson_quantile(0.0, 0.99) == 0


def test_erlang_c_by_hand():
    assert erlang_c(1, 0.3) == pytest.approx(0.3)        # M/M/1: P(wait) = rho
    # c = 2, a = 1: (a^2/2! x c/(c-a)) / (1 + a + a^2/2! x c/(c-a)) = 1 / 3
    assert erlang_c(2, 1.0) == pytest.approx(1 / 3)
    assert erlang_c(4, 4.0) == 1.0 and erlang_c(4, 0.0) == 0.0


def test_mg1_tail_is_exact_for_mm1():
    # M/M/1 (c_s^2 = 1), rho 0.5, mean service 1 s: P(W > t) = rho exp(-(mu - lambda) t) = 0.5 exp(-t / 2)
    assert mg1_wait_quantile(0.5, 1.0, 0.99, cs2=1.0) == pytest.approx(2 * math.log(50))
    # M/D/1: the Pollaczek-Khinchine mean halves (0.5 s), the tail keeps P(W > 0) = rho
    assert mg1_wait_quantile(0.5, 1.0, 0.99) == pytest.approx(math.log(50))
    assert mg1_wait_quantile(0.005, 1.0, 0.99) == 0.0          # rho < 1 - q: the 99th percentile waits 0
    assert mg1_wait_quantile(1.0, 1.0, 0.99) == math.inf


def linear_replica() -> ReplicaCurve:
    """T(b) = 10 ms + 1 ms x b, 100 output and 1000 input tokens, 1000 KV-cache slots, 50 ms prefill."""
    b = np.arange(1, 1001)
    return ReplicaCurve(b, 0.010 + 0.001 * b, 0.05, 1000, 100, 1000)


def test_load_point_by_hand():
    p = load_point(5.0, linear_replica(), 99)
    # Little: 5 = b / (100 (0.01 + 0.001 b))  ->  b = 5 / (1 - 0.5) = 10 sequences
    assert p.mean_batch == pytest.approx(10.0)
    assert p.tpot_p50_s == pytest.approx(0.020)            # T(10)
    assert p.tpot_pct_s == pytest.approx(0.028)            # T(18): Poisson(10) 99th percentile is 18
    # prefill: (8192 - 10) / 1000 = 8.182 prompts per 20 ms step -> s = 2.444 ms, rho = 5 s = 0.01222
    s = 0.020 / (8182 / 1000)
    rho = 5.0 * s
    assert p.prefill_utilisation == pytest.approx(rho)
    wq = s / (2 * (1 - rho)) * math.log(rho / 0.01)          # M/D/1 tail at 99 %
    assert p.ttft_pct_s == pytest.approx(0.020 + 0.05 + wq)  # step + own prefill + prefill wait (slots: none)
    assert p.ttft_p50_s == pytest.approx(0.070)             # rho < 0.5: the median waits 0
    assert p.output_tokens_per_s == pytest.approx(500.0)


def test_unstable_beyond_capacity():
    c = linear_replica()
    assert c.capacity_per_s == pytest.approx(1000 / (100 * 1.010))   # B_max / (L_out T(B_max))
    assert not load_point(c.capacity_per_s * 1.01, c).stable


def test_max_rate_where_the_tpot_percentile_binds():
    # TPOT SLO 28.5 ms allows T(b_99) with b_99 <= 18: mean batch in [10, 11) (Poisson(11) q99 = 19),
    # rate = b / (1 + 0.1 b) in [5.0, 5.24) requests/s
    p = max_rate(linear_replica(), ttft_slo_s=10.0, tpot_slo_s=0.0285, percentile=99)
    assert 5.0 <= p.rate_per_s < 5.24
    assert p.tpot_pct_s <= 0.0285
    assert max_rate(linear_replica(), ttft_slo_s=0.01, tpot_slo_s=1.0) is None   # TTFT 70 ms > 10 ms even idle


def test_one_kv_slot_is_an_mm1_queue_at_low_load():
    # one slot, 100 tokens of 50 ms: 5 s a request; at 0.1 request/s the slot is busy half the time
    # (Little: b = 0.1 x 5 s = 0.5 sequences in flight), and a request waits with probability rho = 0.5
    # (Erlang C with one server is M/M/1's P(wait) = rho; Kleinrock 1975, Queueing Systems I, Sec. 3.2)
    c = ReplicaCurve(np.array([1]), np.array([0.05]), 0.0, 100, 100, 1)
    p = load_point(0.1, c)
    assert p.stable
    assert p.mean_batch == pytest.approx(0.5)
    assert p.slot_wait_probability == pytest.approx(0.5)
    assert not load_point(0.2, c).stable          # 0.2 request/s = 1 / 5 s: the slot's capacity


def test_poisson_serving_with_a_batch_of_one_is_an_answer_not_a_crash():
    # a one-sequence engine: capacity 1 / (L_out T(1)); the scenario is answered (a rate or a finding)
    sc = from_dict({"model": {"preset": "llama2-70b"}, "hardware": {"server": "dgx-h100", "nodes": 1},
                    "inference": {"precision": "fp8", "arrival": "poisson", "requests_per_s": 1, "batch_size": 1}})
    est = serve(sc)
    assert est.batch == 1
    assert est.load is not None or any(f.code.startswith("inference-") for f in est.findings)


def test_kv_slots_queue_near_capacity():
    c = ReplicaCurve(np.arange(1, 101), np.full(100, 0.05), 0.0, 100, 100, 100)  # 100 slots, 5 s per request
    near = load_point(19.0, c)        # a = 95 of 100 slots
    assert near.slot_wait_probability == pytest.approx(erlang_c(100, 95.0))
    assert near.ttft_pct_s > load_point(10.0, c).ttft_pct_s


def test_slot_wait_grows_with_the_output_length_spread():
    # Allen-Cunneen: the M/M/c tail with service S = L_out T = 100 x 0.05 = 5 s, scaled by (1 + c_s^2) / 2
    base = ReplicaCurve(np.arange(1, 101), np.full(100, 0.05), 0.0, 100, 100, 100)
    spread = ReplicaCurve(np.arange(1, 101), np.full(100, 0.05), 0.0, 100, 100, 100, service_cv=1.0)
    pw = erlang_c(100, 95.0)                                  # a = 19 x 5 = 95 of 100 slots
    wait_cv0 = math.log(pw / 0.01) * 5.0 * 0.5 / (100 - 95)   # P(W > t) = C exp(-(c - a) t / (S / 2)) at 99 %
    assert pw > 0.01
    a, b = load_point(19.0, base), load_point(19.0, spread)
    assert b.ttft_pct_s - a.ttft_pct_s == pytest.approx(wait_cv0)   # (1 + 1) / 2 = twice the c_s = 0 wait


def test_mean_context_in_flight_is_length_biased():
    from gpucluster_lib.inference.latency import mean_context_in_flight

    assert mean_context_in_flight(222, 294) == pytest.approx(369.0)         # 222 + 294 / 2: every request alike
    assert mean_context_in_flight(222, 294, 1.0) == pytest.approx(516.0)    # exponential lengths: 222 + 294
    assert mean_context_in_flight(222, 294, 0.71) == pytest.approx(222 + 1.5041 * 147)


def test_output_length_spread_slows_decode_and_lowers_the_max_rate():
    # at the same batch, the KV bytes read per step grow with the mean context in flight: 443.1 / 369 tokens
    fixed, spread = (serve(mlperf("dgx-h100", batch_size=512, output_tokens_cv=cv)) for cv in (0.0, 0.71))
    assert spread.step_time_breakdown_s["attention"] / fixed.step_time_breakdown_s["attention"] == pytest.approx(
        443.1 / 369.0, rel=1e-3)
    fixed, spread = serve(mlperf("dgx-h100")), serve(mlperf("dgx-h100", output_tokens_cv=0.71))
    assert spread.tokens_per_s_per_gpu < fixed.tokens_per_s_per_gpu
    srv0 = serve(mlperf("dgx-h100", arrival="poisson"))
    srv1 = serve(mlperf("dgx-h100", arrival="poisson", output_tokens_cv=0.71))
    assert srv1.load["max_rate_per_replica_per_s"] < srv0.load["max_rate_per_replica_per_s"]
    assert any("443 tokens of context" in a for a in spread.assumptions)   # 222 + 1.5041 x 147
    # Allen-Cunneen: against equal lengths (factor 1/2) the slot wait grows by 1 + c^2 = 1 + 0.71^2 = 1.50
    assert any("slot is 1 + 0.71² = 1.50 times that with equal lengths" in a for a in spread.assumptions)
    assert not any("output lengths vary" in a for a in fixed.assumptions)


def test_kv_budget_covers_the_mean_context_in_flight():
    from gpucluster_lib.inference.memory import reserved_tokens_per_sequence

    # max(L_in + L_out, L_in + (1 + c^2) L_out / 2): the full length of a mean request up to c = 1
    assert reserved_tokens_per_sequence(222, 294) == pytest.approx(516.0)          # 222 + 294
    assert reserved_tokens_per_sequence(222, 294, 0.71) == pytest.approx(516.0)    # 443 in flight < 516
    assert reserved_tokens_per_sequence(222, 294, 2.0) == pytest.approx(957.0)     # 222 + 5 x 147 > 516
    # Llama 2 70B at FP8 on TP 2: KV 80 layers x 2 x (8 / 2) heads x 128 x 1 byte = 81,920 B/token per GPU,
    # FP32 logits 32,000 / 2 x 4 = 64,000 B (models.yaml, Touvron et al. 2023 Table 1)
    for cv, tokens in ((0.0, 516), (2.0, 957)):
        est = serve(mlperf("dgx-h100", ttft_slo_s=1e6, tpot_slo_s=1e6, output_tokens_cv=cv))
        assert est.kv_cache_bytes_per_token_per_gpu == 81_920
        assert est.memory_per_gpu_bytes["kv_cache"] == pytest.approx(est.batch * (81_920 * tokens + 64_000))
        spread = [f for f in est.findings if f.code == "inference-length-spread-exceeds-reserve"]
        assert len(spread) == (1 if cv > 1 else 0)
    assert spread[0].field == "inference.output_tokens_cv" and "957 tokens" in spread[0].message
    # the KV a decode step reads at c = 2 is what memory holds: attention at 957 / 516 of the c = 0 context
    a, b = (serve(mlperf("dgx-h100", batch_size=256, output_tokens_cv=cv)) for cv in (0.0, 2.0))
    assert b.memory_per_gpu_bytes["kv_cache"] / a.memory_per_gpu_bytes["kv_cache"] == pytest.approx(
        (81_920 * 957 + 64_000) / (81_920 * 516 + 64_000))
    assert b.step_time_breakdown_s["attention"] / a.step_time_breakdown_s["attention"] == pytest.approx(
        957 / 369, rel=1e-3)                                                      # 369 = 222 + 294 / 2


# ----------------------------------------------------------------- serve() with Poisson arrivals

def mlperf(server, tp=2, **extra):
    # MLPerf Inference llama2-70b: FP8, output 294.45 tokens per sample (mlcommons/inference
    # language/llama2-70b/README.md, accuracy target; the mean input ~222 tokens is this suite's earlier
    # figure, not in that README), TTFT <= 2 s and TPOT <= 200 ms at p99. The layout is the submitter's:
    # NVIDIA's configs/llama2-70b/{Offline,Server}/__init__.py (inference_results_v4.0 and v4.1) set
    # tensor_parallelism = 2 for H100_SXM_80GB_TP2x4 and tensor_parallelism = 1 for H200_SXM_141GBx8.
    inf = {"precision": "fp8", "tensor_parallel": tp, "input_tokens": 222, "output_tokens": 294, "ttft_slo_s": 2.0,
           "tpot_slo_s": 0.2, **extra}
    return from_dict({"model": {"preset": "llama2-70b"}, "hardware": {"server": server, "nodes": 1},
                      "inference": inf})


def test_offline_is_unchanged_and_poisson_is_at_most_offline():
    off = serve(mlperf("dgx-h100"))
    srv = serve(mlperf("dgx-h100", arrival="poisson"))
    assert off.load is None and srv.load["arrival"] == "poisson"
    assert srv.tokens_per_s_per_gpu <= off.tokens_per_s_per_gpu
    at = srv.load["at_max_rate"]
    assert at["ttft_pct_s"] <= 2.0 + 1e-9 and at["tpot_pct_s"] <= 0.2 + 1e-9
    assert at["ttft_p50_s"] <= at["ttft_pct_s"] and at["tpot_p50_s"] <= at["tpot_pct_s"]
    # tokens/s per GPU at the max rate = rate x output tokens / TP (MLPerf's completed tokens/s)
    assert srv.tokens_per_s_per_gpu == pytest.approx(srv.load["max_rate_per_replica_per_s"] * 294 / 2)


# The MLPerf rows: published tokens/s, the submitter's engine per system, scenario and round, and the
# benchmark's request mix, each value with its source file, are one table,
# gpucluster_lib/data/validation/mlperf_llama2_70b.yaml (read by gpucluster_lib/inference/validation.py and
# notebooks/05_inference). The same hardware gained 12.5% (H100) and 12.9% (H200) offline from v4.0 to v4.1
# software (TensorRT-LLM): a hardware model sits between the two rounds.
MLPERF_TARGET = 0.10        # the target: every MLPerf row within 10% of the published tokens/s
_TP2 = ("the model's TP 2 step is 8-13% faster than the published one at the published batch (docs/inference.md), "
        "and the published server ran below its SLO limits at 0.943 of its offline tokens/s, where the model's "
        "throughput is flat in the batch (its server is 1.002 of its offline: no queue-side limit lowers it)")
MLPERF_MISSES = {
    "v4.0-dgx-h100-server": "measured +15.1% (LoadGen's completed-rate window included): " + _TP2,
    "v4.1-dgx-h200-offline": ("measured -12.9%: v4.1 software gained 12.9% over v4.0 on the same H200, which a "
                              "hardware model sits between (v4.0 row -1.7%)"),
}
MLPERF_ROWS = [pytest.param(row, id=row.id, marks=[pytest.mark.xfail(strict=True, reason=MLPERF_MISSES[row.id])]
                            if row.id in MLPERF_MISSES else []) for row in mlperf_rows()]
#: regression guard, not the target: today's worst row is the v4.0 DGX H100 Server at +15.1%
MLPERF_REGRESSION_GUARD = 0.16
# Spread of output lengths in the MLPerf set: the v4.0 server logs give latency percentiles (p50, p90, p95,
# p97, p99, p99.9, min, max) with a nearly constant TPOT (p90 / p50 = 1.07), so latency ~ TTFT + L_out TPOT;
# integrating the piecewise-linear quantile function gives sd / (mean - TTFT) = 0.712 (DGX H100: mean 40.06 s,
# p50 34.78 s, p99 132.2 s), 0.714 (H200) and 0.707 (v4.1 DGX H100); the mean it implies, 290 tokens,
# matches the published 294.45.
MLPERF_OUTPUT_CV = 0.71


def test_the_mlperf_table_gives_the_submitters_engine():
    # v4.1 closed/NVIDIA/configs/llama2-70b/Server/__init__.py: H200_SXM_141GBx8 inherits tensor_parallelism = 1 and
    # gpu_batch_size 896 from H200_SXM_141GBx1; configs/llama2-70b/__init__.py: max_num_tokens = 4096;
    # code/harness/harness_llm/main_llm.cc: --trtllm_batch_sched_policy default "max_util"
    s = mlperf_scenario("v4.1", "dgx-h200", "server")
    inf = s.inference
    assert (inf.tensor_parallel, inf.batch_size, inf.max_num_tokens, inf.kv_cache_scheduling) == (
        1, 896, 4096, "max_utilization")
    # loadgen/mlperf.conf: llama2-70b.Server.ttft_latency = 2000, tpot_latency = 200 (ms), at p99; Poisson arrivals
    assert (inf.arrival, inf.ttft_slo_s, inf.tpot_slo_s, inf.slo_percentile) == ("poisson", 2.0, 0.2, 99)
    assert (inf.input_tokens, inf.output_tokens, inf.output_tokens_cv) == (222, 294, MLPERF_OUTPUT_CV)
    assert s.hardware.server == "dgx-h200" and s.hardware.nodes == 1 and s.model.preset == "llama2-70b"
    # v4.0 Offline, DGX H100 (configs/llama2-70b/Offline/__init__.py, H100_SXM_80GB_TP2x4: TP 2, batch 896);
    # v4.0's base config is not published: no token budget, the package's default applies
    off = mlperf_scenario("v4.0", "dgx-h100", "offline").inference
    assert (off.tensor_parallel, off.batch_size, off.max_num_tokens, off.arrival) == (2, 896, None, "offline")
    # the eight published rows (v4.0 and v4.1, two systems, Offline and Server), each with its results file
    rows = mlperf_rows()
    assert len(rows) == 8 and len({r.id for r in rows}) == 8
    assert all(r.source.startswith(r.round + " results/") for r in rows)
    assert next(r for r in rows if r.id == "v4.0-dgx-h100-offline").tokens_per_s == 21_805.8  # validation row 141


# Published tokens/s of every row, read from the MLPerf results summaries (closed/NVIDIA/results/<system>/
# <model>/<Scenario>/performance/run_1/mlperf_log_summary.txt of mlcommons/inference_results_v4.0 at 3c4a1cf and
# inference_results_v4.1 at a2f5d66): "Tokens per second" (Offline), "Completed tokens per second" (Server).
PUBLISHED_TOKENS_PER_S = {
    "v4.0-dgx-h100-offline": 21805.8,   # v4.0 DGX-H100_H100-SXM-80GBx8_TRT/llama2-70b-99.9/Offline
    "v4.0-dgx-h100-server": 20556.40,   # v4.0 DGX-H100_H100-SXM-80GBx8_TRT/llama2-70b-99.9/Server
    "v4.0-dgx-h200-offline": 27738.3,   # v4.0 H200-SXM-141GBx8_TRT/llama2-70b-99.9/Offline
    "v4.0-dgx-h200-server": 26485.43,   # v4.0 H200-SXM-141GBx8_TRT/llama2-70b-99.9/Server
    "v4.1-dgx-h100-offline": 24524.9,   # v4.1 DGX-H100_H100-SXM-80GBx8_TRT/llama2-70b-99.9/Offline
    "v4.1-dgx-h100-server": 21605.79,   # v4.1 DGX-H100_H100-SXM-80GBx8_TRT/llama2-70b-99.9/Server
    "v4.1-dgx-h200-offline": 31302.7,   # v4.1 H200-SXM-141GBx8_TRT/llama2-70b-99/Offline
    "v4.1-dgx-h200-server": 29228.22,   # v4.1 H200-SXM-141GBx8_TRT/llama2-70b-99/Server
}


def test_every_mlperf_row_holds_its_published_tokens_per_s():
    rows = {r.id: r for r in mlperf_rows()}
    assert set(rows) == set(PUBLISHED_TOKENS_PER_S)
    for rid, published in PUBLISHED_TOKENS_PER_S.items():
        # the table may round to 0.1 token/s (26,485.43 is kept as 26,485.4)
        assert rows[rid].tokens_per_s == pytest.approx(published, abs=0.05), rid


def test_every_expected_miss_names_a_row_of_the_table():
    """A renamed or dropped row must not leave its expected-failure entry behind, unseen."""
    assert set(MLPERF_MISSES) <= {r.id for r in mlperf_rows()}


def test_the_mlperf_table_refuses_what_it_does_not_hold():
    with pytest.raises(GpuClusterError, match="no MLPerf round 'v3.1'"):
        mlperf_scenario("v3.1", "dgx-h100", "offline")
    with pytest.raises(GpuClusterError, match="no MLPerf engine for dgx-a100 offline"):
        mlperf_scenario("v4.0", "dgx-a100", "offline")
    with pytest.raises(GpuClusterError, match="unknown MLPerf scenario 'single-stream'"):
        mlperf_scenario("v4.0", "dgx-h100", "single-stream")


@pytest.mark.parametrize("row", MLPERF_ROWS)
def test_mlperf_llama2_70b_rows(row):
    assert mlperf_predicted(row) == pytest.approx(row.tokens_per_s, rel=MLPERF_TARGET)


def test_mlperf_rows_regression_guard():
    # not the target (10%, above): every row, the expected failures included, stays below today's worst error
    errors = {row.id: mlperf_predicted(row) / row.tokens_per_s - 1 for row in mlperf_rows()}
    worst = max(errors, key=lambda k: abs(errors[k]))
    assert abs(errors[worst]) < MLPERF_REGRESSION_GUARD, f"{worst}: {errors[worst]:+.1%}"


# Published step times, [sequences in decode, step s]: Server from Little's law on the summary (decode sequences =
# completed samples/s per replica x (mean latency - mean TTFT); step = those sequences / completed tokens/s per
# replica), Offline the engine batch over its tokens/s per replica. v4.0 DGX H100 (4 replicas): 70.42 x (40.055 -
# 0.382) / 4 = 698 at 698 / (20,556.4 / 4) = 135.9 ms; 896 / (21,805.8 / 4) = 164.4 ms. v4.0 H200 (8): 90.35 x
# (48.395 - 0.413) / 8 = 542 at 163.7 ms; 806 / (27,738.3 / 8) = 232.5 ms. v4.1 H200: 100.35 x (35.855 - 0.198)
# / 8 = 447 at 122.4 ms; 806 / (31,302.7 / 8) = 206.0 ms. (v4.1 DGX H100: 831 at 153.9 ms, 896 at 146.1 ms: the
# server step is the slower one, no line through both.)
PUBLISHED_STEPS = [("v4.0 DGX H100 Server", (698, 0.1359), (896, 0.1644), 1024, 4, 20_556.4),
                   ("v4.0 H200 Server", (542, 0.1637), (806, 0.2325), 896, 8, 26_485.4),
                   ("v4.1 H200 Server", (447, 0.1224), (806, 0.2060), 896, 8, 29_228.22)]


@pytest.mark.parametrize(("row", "server_point", "offline_point", "slots", "replicas", "published"), PUBLISHED_STEPS)
def test_the_queue_on_the_published_step_times_meets_the_server_rows(row, server_point, offline_point, slots,
                                                                     replicas, published):
    # the queue alone: fed the straight line through the published server and offline steps (not the timing
    # model), the Poisson max rate at the p99 SLOs lands within the target of the published server tokens/s
    (b1, t1), (b2, t2) = server_point, offline_point
    slope = (t2 - t1) / (b2 - b1)
    batches = np.arange(1, slots + 1)
    # 0.03 s: one 222-token prompt on an idle replica, 222 x 2 x 68.7e9 FLOP / (1,978.9e12 x 0.45) = 34 ms at TP 1
    curve = ReplicaCurve(batches, t1 + slope * (batches - b1), 0.03, 222, 294, slots, service_cv=MLPERF_OUTPUT_CV)
    at = max_rate(curve, 2.0, 0.2)
    assert at.output_tokens_per_s * replicas == pytest.approx(published, rel=MLPERF_TARGET)


def test_h200_server_is_bound_by_the_tpot_percentile_as_published():
    # published H200 Server: p99 TPOT 194.99 ms against the 200 ms limit, p99 TTFT 0.753 s of 2 s
    at = serve(mlperf("dgx-h200", 1, arrival="poisson", output_tokens_cv=MLPERF_OUTPUT_CV)).load["at_max_rate"]
    assert at["tpot_pct_s"] == pytest.approx(0.2, rel=0.01)
    assert at["ttft_pct_s"] < 1.0


def _server_candidates():
    """scripts/mlperf_server_candidates.py, which prints the figures docs/inference.md quotes for the server rows."""
    return load_script("mlperf_server_candidates")


def test_loadgen_early_stopping_percentile_by_hand():
    es = _server_candidates().early_stopping_percentile
    # n = 1,000 at p = 0.99: P(X <= t) for X ~ Binomial(1000, 0.01) is 4.32e-5, 4.80e-4, 2.68e-3 (t = 0, 1, 2) and
    # 1.007e-2 at t = 3, above 1 - 0.99 (mlcommons/inference loadgen/early_stopping.cc): 2 over-limit queries
    # allowed, so the run must meet its p99.8
    assert es(1000) == pytest.approx(99.8, abs=1e-9)
    # v4.0 DGX H100 server: 70.42 queries/s x 2,400 s (the summaries' "min_duration (ms): 2400000", NVIDIA's
    # configs/llama2-70b/Server ServerGPUBaseConfig.min_duration = 2400000) = 169,008 queries; the normal
    # approximation allows 1,690.08 - 2.326 x sqrt(169,008 x 0.01 x 0.99 = 1,673.18) = 1,594.94 over-limit
    # queries: 1 - 1,594.94 / 169,008 = p99.0563
    assert es(169_008) == pytest.approx(99.056, abs=0.002)
    # the script's runs are queries/s x 2,400 s: at 600 s (LoadGen's default) the same run would be 42,252
    assert _server_candidates().MIN_DURATION_S == 2_400
    # docs/inference.md: p99.05 for the four server runs (169,000-241,000 queries); at that percentile the
    # max rate moves by less than 0.1 point
    base = serve(mlperf_scenario("v4.0", "dgx-h100", "server")).tokens_per_s_per_gpu * 8   # the max rate
    later = serve(mlperf_scenario("v4.0", "dgx-h100", "server", slo_percentile=99.056)).tokens_per_s_per_gpu * 8
    assert later == pytest.approx(base, rel=1e-3)


def test_the_tp2_allreduce_the_model_charges_for_the_mlperf_offline_step():
    # TensorRT-LLM's AUTO all-reduce takes its one-shot kernel at TP 2 only within 16,000,000 bytes
    # (tensorrt_llm/plugin/plugin.py, CustomAllReduceHelper.max_workspace_size_auto): 16e6 / (8,192 x 2) = 976.6
    # tokens; the v4.0 DGX H100 offline step carries 896 x (1 + 222 / 294) = 1,572.6 tokens, 25.77 MB
    # (896 x 1.7551 x 8,192 x 2 B)
    mod = _server_candidates()
    assert mod.ONE_SHOT_MAX_BYTES_TP2 / (8192 * 2) == pytest.approx(976.6, abs=0.05)
    # docs/inference.md's shares of the steps on NCCL, prompts a step ~ Poisson(batch / 294): offline 896
    # sequences need one prompt ((976.6 - 896) / 222 = 0.36), 1 - e^-3.048 = 1 - 0.0475 = 0.9525; server 698 need two
    # ((976.6 - 698) / 222 = 1.25), 1 - e^-2.374 x (1 + 2.374) = 1 - 0.0931 x 3.374 = 0.6859
    share, need, prompts = mod.nccl_step_share(896)
    assert (need, prompts) == (1, pytest.approx(3.048, abs=5e-4)) and share == pytest.approx(0.9525, abs=2e-4)
    share, need, prompts = mod.nccl_step_share(698)
    assert (need, prompts) == (2, pytest.approx(2.374, abs=5e-4)) and share == pytest.approx(0.6859, abs=2e-4)
    # the model's ring for that call: 25.77 MB / (450 GB/s x 0.70) + 8 us = 89.8 us, x 160 calls = 14.4 ms a step
    est = serve(mlperf_scenario("v4.0", "dgx-h100", "offline"))
    assert est.step_time_breakdown_s["communication"] == pytest.approx(160 * (25.77e6 / 315e9 + 8e-6), rel=2e-3)


def test_no_queue_side_limit_lowers_the_models_server_below_its_offline():
    """docs/inference.md, "Server against offline": the model's throughput is flat in the batch, so the slots,
    the queue and the percentile leave the server rows at their offline ones, against published ratios of
    0.88-0.955 (v4.0 DGX H100 20,556.4 / 21,805.8 = 0.943; v4.1 21,605.79 / 24,524.9 = 0.881; H200 0.955, 0.934)."""
    for rnd, system in (("v4.0", "dgx-h100"), ("v4.0", "dgx-h200")):
        srv = serve(mlperf_scenario(rnd, system, "server")).tokens_per_s_per_gpu
        off = serve(mlperf_scenario(rnd, system, "offline")).tokens_per_s_per_gpu
        assert srv / off == pytest.approx(1.0, abs=0.01), system
    # published decode sequences (Little's law on the summaries, PUBLISHED_STEPS above): 698 (v4.0 DGX H100,
    # 1,024 slots) and 542 (v4.0 H200, the 880-sequence pool): Erlang C, the chance of waiting for a slot,
    # is negligible there, (c - b) / sqrt(b) = 12.3 and 14.5 in Halfin-Whitt's terms
    assert erlang_c(1024, 698) < 1e-10
    assert erlang_c(880, 542) < 1e-10


def test_max_utilization_holds_the_context_in_flight_not_the_full_length():
    from gpucluster_lib.inference.memory import reserved_tokens_per_sequence

    assert reserved_tokens_per_sequence(222, 294, 0.71) == pytest.approx(516)          # no_evict: 222 + 294
    assert reserved_tokens_per_sequence(222, 294, 0.71, "max_utilization") == pytest.approx(
        222 + 1.5041 * 147)                                                              # 1 + 0.71^2 = 1.5041
    assert reserved_tokens_per_sequence(222, 294, 0.0, "max_utilization") == pytest.approx(369)  # 222 + 294 / 2
    with pytest.raises(ValueError, match="scheduling"):
        reserved_tokens_per_sequence(222, 294, 0.0, "fifo")


def test_the_submitters_h200_batch_fits_only_with_max_utilization():
    # NVIDIA's H200_SXM_141GBx8 Offline engine runs 806 sequences (configs/llama2-70b/Offline, v4.0 and v4.1)
    # under the harness's max_util policy; reserving 516 tokens a sequence the model holds fewer
    engine = {"batch_size": 806, "output_tokens_cv": MLPERF_OUTPUT_CV, "ttft_slo_s": 1e6, "tpot_slo_s": 1e6}
    reserve = serve(mlperf("dgx-h200", 1, **engine))
    paged = serve(mlperf("dgx-h200", 1, kv_cache_scheduling="max_utilization", **engine))
    assert any(f.code == "inference-batch-exceeds-memory" for f in reserve.findings)
    assert not [f for f in paged.findings if f.severity == "error"] and paged.batch == 806
    # per sequence: 80 layers x 2 x 8 KV heads x 128 x 1 byte (FP8) = 163,840 B a token, plus 32,000 x 4 B logits
    exceeds = next(f for f in reserve.findings if f.code == "inference-batch-exceeds-memory")
    assert "sequences of 516 tokens" in exceeds.message                                 # 222 + 294 reserved
    assert paged.memory_per_gpu_bytes["kv_cache"] / 806 == pytest.approx(163_840 * (222 + 1.5041 * 147) + 128_000)


def test_a_batch_above_the_pool_runs_at_the_pool_with_max_utilization():
    # the Server engine's 896 (configs/llama2-70b/Server) is a cap; the pool holds fewer at the mean context
    est = serve(mlperf("dgx-h200", 1, batch_size=896, kv_cache_scheduling="max_utilization",
                       output_tokens_cv=MLPERF_OUTPUT_CV, ttft_slo_s=1e6, tpot_slo_s=1e6))
    limited = [f for f in est.findings if f.code == "inference-batch-limited-by-kv-pool"]
    assert limited and limited[0].severity == "warning" and limited[0].field == "inference.batch_size"
    assert est.batch == est.max_batch < 896


def test_engine_token_budget_sets_the_prefill_queue():
    # prefill utilisation rho = rate x T(b) / ((K - b) / L_in) (module queueing, item 4) with K = max_num_tokens
    est = serve(mlperf("dgx-h100", arrival="poisson", max_num_tokens=4096, output_tokens_cv=MLPERF_OUTPUT_CV))
    at = est.load["at_max_rate"]
    # rate x T(b) = b / L_out by Little's law (the mean step, not the median's), L_out = 294
    assert at["prefill_utilisation"] == pytest.approx(
        at["mean_batch"] / 294 * 222 / (4096 - at["mean_batch"]), rel=1e-6)


@pytest.mark.parametrize("arrival", ["offline", "poisson"])
def test_a_prompt_longer_than_the_token_budget_is_refused_with_no_fleet(arrival):
    # 222-token prompts, a budget of 221 tokens a step: the engine prefills prompts whole (no chunked
    # context: NVIDIA's MLPerf harness, llm_core.cc, v4.1), so no request is served, offline or Poisson alike
    est = serve(mlperf("dgx-h100", arrival=arrival, max_num_tokens=221, requests_per_s=10.0))
    codes = {f.code: f for f in est.findings}
    refused = codes["inference-prompt-exceeds-token-budget"]
    assert refused.severity == "error" and refused.field == "inference.max_num_tokens"
    assert "222 tokens" in refused.message and "221 tokens" in refused.message and "222 tokens" in refused.fix
    assert est.gpus == 0 and est.replicas == 0 and est.tokens_per_s_per_gpu is None and est.batch == 0
    assert "inference-slo-unmet" not in codes      # the budget, not the SLO, is the reason
    # a budget equal to the prompt serves it
    assert serve(mlperf("dgx-h100", arrival=arrival, max_num_tokens=222, requests_per_s=10.0)).gpus > 0


def test_without_a_set_budget_a_long_prompt_gets_an_engine_built_for_it():
    # No inference.max_num_tokens: the budget is TensorRT-LLM's default 8192 raised to one whole prompt
    # (an engine for 9,000-token prompts is built with --max_num_tokens >= 9000), so the prompt is
    # served and the workspace holds 9,000 tokens; a budget the user sets below the prompt is refused.
    est = serve(mlperf("dgx-h100", input_tokens=9000, requests_per_s=1.0))
    assert est.gpus > 0
    assert "inference-prompt-exceeds-token-budget" not in {f.code for f in est.findings}
    # 133,120 bytes of workspace per token for Llama 2 70B at TP 2 (the 8192-token case worked in
    # test_one_default_token_budget_for_the_workspace_and_the_queue): 9,000 x 133,120 B
    assert est.memory_per_gpu_bytes["workspace"] == pytest.approx(9000 * 133_120)
    refused = serve(mlperf("dgx-h100", input_tokens=9000, requests_per_s=1.0, max_num_tokens=8192))
    assert refused.gpus == 0
    assert "inference-prompt-exceeds-token-budget" in {f.code for f in refused.findings}


def test_the_token_budget_finding_is_not_hidden_by_a_batch_that_does_not_fit():
    # batch 1,000,000 of 516-token sequences exceeds any H100's KV cache: both errors are reported
    est = serve(mlperf("dgx-h100", max_num_tokens=100, batch_size=1_000_000))
    codes = {f.code for f in est.findings}
    assert {"inference-batch-exceeds-memory", "inference-prompt-exceeds-token-budget"} <= codes
    assert est.gpus == 0


def test_one_default_token_budget_for_the_workspace_and_the_queue():
    # workspace = K x (4 h + (q + 2 kv) / TP + 2 f / TP) x 2 bytes (module memory); Llama 2 70B h = q = 8192,
    # kv = 1024, f = 28672 (Touvron et al. 2023, Table 1 and the HF config), TP 2:
    # 32,768 + 5,120 + 28,672 = 66,560 values a token, 133,120 bytes; default K = 8192 (TensorRT-LLM)
    default = serve(mlperf("dgx-h100", arrival="poisson", output_tokens_cv=MLPERF_OUTPUT_CV))
    assert default.memory_per_gpu_bytes["workspace"] == pytest.approx(8192 * 133_120)
    explicit = serve(mlperf("dgx-h100", arrival="poisson", output_tokens_cv=MLPERF_OUTPUT_CV, max_num_tokens=8192))
    assert default.load == explicit.load and default.tokens_per_s_per_gpu == explicit.tokens_per_s_per_gpu
    at = default.load["at_max_rate"]   # the queue's budget is the same 8192 (module queueing, item 4)
    assert at["prefill_utilisation"] == pytest.approx(   # rate x T(b) = b / L_out (Little), L_out = 294
        at["mean_batch"] / 294 * 222 / (8192 - at["mean_batch"]), rel=1e-6)


def test_fleet_for_a_target_rate_and_the_operating_point():
    est = serve(mlperf("dgx-h100", arrival="poisson", requests_per_s=100.0))
    per_replica = est.load["max_rate_per_replica_per_s"]
    assert est.replicas == math.ceil(100.0 / per_replica)
    at = est.load["at_target"]
    assert at["rate_per_s"] == pytest.approx(100.0 / est.replicas)
    assert at["ttft_pct_s"] <= 2.0 and at["tpot_pct_s"] <= 0.2


def test_poisson_slo_unmet_is_a_finding():
    est = serve(mlperf("dgx-h100", arrival="poisson", tpot_slo_s=0.001))
    assert not est.meets_slo
    assert any(f.code == "inference-slo-unmet" and "Poisson" in f.message for f in est.findings)


def test_percentile_is_checked_when_the_scenario_loads():
    from gpucluster_lib.errors import ScenarioError

    with pytest.raises(ScenarioError, match="inference.slo_percentile"):
        mlperf("dgx-h100", slo_percentile=100)
    with pytest.raises(ScenarioError, match="inference.arrival"):
        mlperf("dgx-h100", arrival="bursty")
    with pytest.raises(ScenarioError, match="inference.output_tokens_cv"):
        mlperf("dgx-h100", output_tokens_cv=-0.5)
    with pytest.raises(ScenarioError, match="inference.kv_cache_scheduling"):
        mlperf("dgx-h100", kv_cache_scheduling="fifo")
    with pytest.raises(ScenarioError, match="inference.max_num_tokens"):
        mlperf("dgx-h100", max_num_tokens=0)


def test_cli_max_rate(capsys):
    assert main(["serve", "llama3-70b-512-h100", "--max-rate", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["percentile"] == 99.0 and out["max_rate_per_s"] > 0
    assert out["max_rate_per_s"] == pytest.approx(out["max_rate_per_replica_per_s"] * out["gpus"]
                                                  / out["tensor_parallel"])
    assert out["tokens_per_s_per_gpu"] == pytest.approx(out["max_rate_per_replica_per_s"] * 256
                                                        / out["tensor_parallel"])   # the example: 256 out tokens
    assert main(["serve", "llama3-70b-512-h100", "--max-rate", "--percentile", "50"]) == 0
    assert "p50" in capsys.readouterr().out
    assert main(["serve", "llama3-70b-512-h100", "--max-rate", "--percentile", "100"]) == 2


# -- LoadGen's Server metric: tokens over the time the last scheduled query completes -----------------------
# mlcommons/inference loadgen/results.cc: tps_as_completed = token_count / final_query_all_samples_done_time;
# loadgen/loadgen.cc: final_query_all_samples_done_time = final_query.all_samples_done_time - start.


def test_loadgen_completed_factor_by_hand():
    from gpucluster_lib.inference.validation import loadgen_completed_factor
    # 2,400 s of scheduled queries (the summaries' "min_duration (ms): 2400000") and a last query of 24 s:
    # 2400 / 2424 = 0.990099
    assert loadgen_completed_factor(2400.0, 24.0) == pytest.approx(2400 / 2424, rel=1e-12)
    assert loadgen_completed_factor(2400.0, 0.0) == 1.0
    with pytest.raises(GpuClusterError):
        loadgen_completed_factor(0.0, 1.0)


def test_the_published_server_summaries_give_the_last_query_latency():
    # Scheduled and Completed samples per second of the four Server summaries (v4.0 at 3c4a1cf, v4.1 at
    # a2f5d66): the last query's latency is D (scheduled / completed - 1), D = 2,400 s (derived)
    published = {"v4.0-dgx-h100-server": (70.98, 70.42), "v4.0-dgx-h200-server": (91.24, 90.35),
                 "v4.1-dgx-h100-server": (75.10, 74.42), "v4.1-dgx-h200-server": (101.25, 100.35)}
    drains = {k: 2400 * (s / c - 1) for k, (s, c) in published.items()}
    assert drains == pytest.approx({"v4.0-dgx-h100-server": 19.09, "v4.0-dgx-h200-server": 23.64,
                                    "v4.1-dgx-h100-server": 21.93, "v4.1-dgx-h200-server": 21.52}, abs=0.01)
    # the model's last request (decode-only steps of the draining batch, queueing.last_request_latency) at its max
    # rate: 16.0 s on the DGX H100 and 17.4 s on the H200, 16-27% below these single draws (the generic step has
    # almost no fixed part); with the tensorrt-llm profile's 26 ms a step, 20.8 and 23.3 s; its mean-load
    # latency (no drain) would be 48-54 s, twice the published
    for rid, engine, low, high in (("v4.0-dgx-h100-server", "generic", 0.7, 1.0), ("v4.0-dgx-h200-server", "generic", 0.7, 1.0),
                                   ("v4.1-dgx-h100-server", "tensorrt-llm", 0.9, 1.1),
                                   ("v4.1-dgx-h200-server", "tensorrt-llm", 0.9, 1.1)):
        row = next(r for r in mlperf_rows() if r.id == rid)
        est = serve(mlperf_scenario(row.round, row.system, row.scenario, engine=engine), drain_latency=True)
        lat = est.load["last_request_latency_s"]
        assert low * drains[rid] < lat < high * drains[rid], (rid, engine, lat)


def test_gamma_length_pmf_by_hand():
    from gpucluster_lib.inference.queueing import gamma_length_pmf
    x, p = gamma_length_pmf(294, 0.71, 20 * 294)
    assert p.sum() == pytest.approx(1.0)
    assert (x * p).sum() == pytest.approx(294, rel=2e-3)                     # the mean
    sd = math.sqrt(((x - (x * p).sum()) ** 2 * p).sum())
    assert sd / (x * p).sum() == pytest.approx(0.71, rel=5e-3)               # the spread
    x0, p0 = gamma_length_pmf(294, 0.0, 600)
    assert p0[293] == 1.0 and p0.sum() == 1.0                                # every request at 294 tokens


def test_last_request_latency_by_hand():
    from gpucluster_lib.inference.queueing import last_request_latency
    batches = np.arange(1, 1001)
    # a step that does not depend on the batch (0.1 s): the drain does not shorten it, the latency is
    # TTFT + 0.1 (E[L] - 1) = 0.5 + 0.1 x 99 = 10.4 s for 100 tokens, every request alike
    flat = ReplicaCurve(batches, np.full(1000, 0.1), 0.03, 222, 100, 1000, service_cv=0.0)
    assert last_request_latency(flat, 500.0, 0.5) == pytest.approx(10.4, rel=1e-9)
    # every request 100 tokens: the residual life of those in flight is uniform on 0..99, so j steps later
    # R(j) = (100 - j) / 100 of the batch is left; with T(b) = 1 ms x b the request's steps take
    # sum_{j=1}^{99} 1e-3 (500 (100 - j) / 100 + 1) = 1e-3 (5 x 4950 + 99) = 24.849 s
    linear = ReplicaCurve(batches, 1e-3 * batches, 0.03, 222, 100, 1000, service_cv=0.0)
    assert last_request_latency(linear, 500.0, 0.0) == pytest.approx(24.849, rel=1e-9)


def test_a_decode_only_step_carries_no_prompt():
    # latency.mixed_step_times(prefill=False), the drain's step: no prompt tokens. With the weight read far
    # below the work (a peak of 1 TFLOP/s, 1 TB/s of HBM, 1 GB of weights), TP 1, no overhead, the GEMM time is
    # tokens x 2N / (peak e): the mixed step carries b (1 + L_in / L_out) tokens, the decode-only one b, so at
    # L_in = 222 and L_out = 294 their GEMM times differ by 1 + 222 / 294 = 1.7551 (by hand)
    from gpucluster_lib.inference.efficiency import ServingEfficiency
    from gpucluster_lib.inference.latency import ReplicaHardware, mixed_step_times
    from gpucluster_lib.workloads.transformer import resolve_transformer
    arch = resolve_transformer("llama2-70b")
    hw = ReplicaHardware(peak_tflops=1.0, memory_bandwidth_gb_per_s=1000.0, link_gb_per_s=450.0, tp=1)
    eff = ServingEfficiency(decode_step_overhead_s=0.0)
    kw = dict(input_tokens=222, output_tokens=294, weights_bytes_per_gpu=1e9, kv_bytes_per_token_per_gpu=0.0,
              hw=hw, gemm_efficiency=0.5, eff=eff)
    b = np.array([100.0, 800.0])
    mixed = mixed_step_times(arch, b, **kw)
    decode = mixed_step_times(arch, b, prefill=False, **kw)
    assert mixed.gemm / decode.gemm == pytest.approx(1 + 222 / 294, rel=1e-12)
    assert np.all(decode.total < mixed.total)


def _mlperf_table_without(tmp_path, section: str, key: str):
    """The shipped MLPerf table with ``section.key`` removed (section "benchmark", or "results" / "engines" /
    "rounds" for their first entry), written to a file of its own."""
    import yaml

    from gpucluster_lib.inference.validation import MLPERF_PATH
    data = yaml.safe_load(MLPERF_PATH.read_text(encoding="utf-8"))
    part = data[section]
    entry = part if section == "benchmark" else (part[0] if isinstance(part, list) else next(iter(part.values())))
    del entry[key]
    out = tmp_path / f"no-{section}-{key}.yaml"
    out.write_text(yaml.safe_dump(data), encoding="utf-8")
    return out


def test_a_table_without_the_scheduled_duration_names_the_key(tmp_path):
    # a user's table without benchmark.min_duration_s: a GpuClusterError naming the key and the fix, not a KeyError
    path = _mlperf_table_without(tmp_path, "benchmark", "min_duration_s")
    row = next(r for r in mlperf_rows(path) if r.scenario == "server")
    with pytest.raises(GpuClusterError, match=r"benchmark\.min_duration_s.*min_duration \(ms\)"):
        mlperf_predicted(row, path=path)
    offline = next(r for r in mlperf_rows(path) if r.scenario == "offline")
    assert mlperf_predicted(offline, path=path) > 0  # the Offline figure does not read it


@pytest.mark.parametrize("section, key", [("benchmark", "tpot_slo_s"), ("benchmark", "model_preset"),
                                          ("results", "tokens_per_s"), ("engines", "batch_size"),
                                          ("rounds", "max_num_tokens")])
def test_a_table_missing_a_key_names_it(tmp_path, section, key):
    path = _mlperf_table_without(tmp_path, section, key)
    with pytest.raises(GpuClusterError, match=key):
        row = next(r for r in mlperf_rows(path) if r.scenario == "server")
        mlperf_scenario(row.round, row.system, row.scenario, path)


def test_the_drain_helpers_refuse_a_spread_or_time_that_is_not_a_number():
    from gpucluster_lib.inference.queueing import gamma_length_pmf, last_request_latency
    from gpucluster_lib.inference.validation import loadgen_completed_factor
    for cv in (-0.1, float("nan")):
        with pytest.raises(ValueError, match="cv"):
            gamma_length_pmf(294, cv, 600)
    flat = ReplicaCurve(np.arange(1, 11), np.full(10, 0.1), 0.03, 222, 100, 10, service_cv=0.0)
    with pytest.raises(ValueError, match="ttft_s"):
        last_request_latency(flat, 5.0, -1.0)
    for d, lat in ((float("nan"), 1.0), (2400.0, float("nan")), (float("inf"), 1.0)):
        with pytest.raises(GpuClusterError):
            loadgen_completed_factor(d, lat)



def test_the_drain_latency_is_computed_only_when_asked(monkeypatch):
    # it sums over every output length (queueing.last_request_latency): the app and the CLI do not ask for it
    import sys

    serve_mod = sys.modules["gpucluster_lib.inference.serve"]   # the module (the package exports the function)

    def refuse(*a, **k):
        raise AssertionError("last_request_latency called")

    row = next(r for r in mlperf_rows() if r.id == "v4.0-dgx-h100-server")
    scenario = mlperf_scenario(row.round, row.system, row.scenario)
    monkeypatch.setattr(serve_mod, "last_request_latency", refuse)
    est = serve(scenario)
    assert est.load is not None and est.load["last_request_latency_s"] is None
    with pytest.raises(AssertionError, match="last_request_latency called"):
        serve(scenario, drain_latency=True)
