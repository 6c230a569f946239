"""Serving at its limits: ``gpucluster serve --max-rate`` on the scenario's GPUs (the tensor parallelism with the
highest rate, whatever the traffic target), designs that serve nothing (their error findings, exit status 0), one
median, the chosen batch under Poisson arrivals, ``--percentile``, MIG findings, the output-length pmf at a wide
spread, the model's context, the offline batch against the token budget, and the app's Serving tab on a vision
model and on the scenario's percentile."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from gpucluster_lib.cli import main
from gpucluster_lib.errors import ScenarioError
from gpucluster_lib.inference.queueing import (
    ReplicaCurve,
    gamma_length_pmf,
    last_request_latency,
    length_grid,
    load_point,
    percentile_label,
)
from gpucluster_lib.inference.serve import serve
from gpucluster_lib.scenario import from_dict

BASE = {"precision": "fp8", "input_tokens": 1024, "output_tokens": 256, "requests_per_s": 50, "ttft_slo_s": 2.0,
        "tpot_slo_s": 0.05, "arrival": "poisson"}


def _scenario(model: str = "llama3-8b", nodes: int = 2, **inference):
    return from_dict({"name": "t", "model": {"preset": model}, "hardware": {"server": "dgx-h100", "nodes": nodes},
                      "inference": {**BASE, **inference}})


def _yaml(tmp_path, model: str = "llama3-8b", nodes: int = 2, name: str = "s.yaml", **inference) -> str:
    import yaml

    inf = {k: v for k, v in {**BASE, **inference}.items() if v is not None}
    path = tmp_path / name
    path.write_text(yaml.safe_dump({"name": "t", "model": {"preset": model},
                                    "hardware": {"server": "dgx-h100", "nodes": nodes}, "inference": inf}))
    return str(path)


def _max_rate(capsys, path: str, *extra: str) -> dict:
    assert main(["serve", path, "--max-rate", "--json", *extra]) == 0
    return json.loads(capsys.readouterr().out)


# ---------------------------------------------------------------- --max-rate: the TP option with the highest rate


def test_max_rate_is_the_best_tensor_parallelism_on_the_scenarios_gpus(tmp_path, capsys):
    # Llama 3 70B, 2 DGX H100 (16 GPUs), TPOT <= 30 ms. The max rate of the scenario's GPUs is the largest of
    # (rate per replica x 16 / TP) over the TP options, each option computed on its own (tensor_parallel fixed)
    slo = {"tpot_slo_s": 0.03}
    per_tp = {}
    for tp in (1, 2, 4, 8):
        d = _max_rate(capsys, _yaml(tmp_path, "llama3-70b", name=f"tp{tp}.yaml", tensor_parallel=tp, **slo))
        per_tp[tp] = (d["max_rate_per_replica_per_s"] or 0.0) * (16 // tp)
    best = max(per_tp.values())
    # the traffic target does not enter: 1 and 2 requests/s give the same max rate (the cheapest option for 1
    # request/s, TP 1 at 2 GPUs, is not the one with the highest rate)
    one = _max_rate(capsys, _yaml(tmp_path, "llama3-70b", requests_per_s=1, **slo))
    two = _max_rate(capsys, _yaml(tmp_path, "llama3-70b", requests_per_s=2, **slo))
    assert one["max_rate_per_s"] == pytest.approx(best, rel=1e-9)
    assert two["max_rate_per_s"] == pytest.approx(best, rel=1e-9)
    assert one["gpus"] == 16 and one["max_rate_per_s"] == pytest.approx(
        one["max_rate_per_replica_per_s"] * 16 / one["tensor_parallel"])


def test_raising_an_slo_never_lowers_the_max_rate(tmp_path, capsys):
    # per TP option the max rate grows with each SLO; the max over the options then does too
    def rate(**inf):
        return _max_rate(capsys, _yaml(tmp_path, "llama3-70b", requests_per_s=1, **inf))["max_rate_per_s"] or 0.0

    assert rate(tpot_slo_s=0.03) >= rate(tpot_slo_s=0.0275) > 0
    assert rate(tpot_slo_s=0.03, ttft_slo_s=0.2) >= rate(tpot_slo_s=0.03, ttft_slo_s=0.15) > 0


def test_same_gpus_for_the_target_go_to_the_option_with_more_tokens_per_gpu():
    # 1 request/s of Llama 3 70B at TPOT <= 30 ms: TP 1 and TP 2 both need 2 GPUs; TP 2 serves more per GPU
    est = serve(_scenario("llama3-70b", requests_per_s=1, tpot_slo_s=0.03))
    fewest = min(o["gpus"] for o in est.tp_options if o["gpus"] is not None)
    tied = [o for o in est.tp_options if o["gpus"] == fewest]
    assert len(tied) >= 2                                                   # the tie this rule settles
    chosen = next(o for o in tied if o["tensor_parallel"] == est.tensor_parallel)
    assert chosen["tokens_per_s_per_gpu"] == max(o["tokens_per_s_per_gpu"] for o in tied)


# ---------------------------------------------------------------- --max-rate: designs that serve nothing


@pytest.mark.parametrize(("inference", "code"), [
    ({"input_tokens": 9000, "max_num_tokens": 8192}, "inference-prompt-exceeds-token-budget"),
    ({"max_num_tokens": 1}, "inference-prompt-exceeds-token-budget"),
    ({"mig_profile": "1g.10gb", "precision": "bf16"}, "inference-model-does-not-fit"),
])
def test_a_language_model_that_serves_nothing_prints_its_finding(tmp_path, capsys, inference, code):
    path = _yaml(tmp_path, **inference)
    assert main(["serve", path, "--max-rate"]) == 0
    out = capsys.readouterr().out
    assert f"[error] {code}" in out and "vision" not in out
    d = _max_rate(capsys, path)
    assert code in [f["code"] for f in d["findings"]] and d["max_rate_per_s"] is None


def test_unsupported_precision_with_max_rate(tmp_path, capsys):
    path = tmp_path / "a100.yaml"
    path.write_text("model: {preset: llama3-8b}\nhardware: {server: dgx-a100-640gb, nodes: 1}\n"
                    "inference: {precision: fp8, input_tokens: 1024, output_tokens: 256}\n")
    assert main(["serve", str(path), "--max-rate"]) == 0
    assert "[error] inference-precision-unsupported" in capsys.readouterr().out
    vision = tmp_path / "r.yaml"   # a vision model is the one that --max-rate refuses (images, not tokens)
    vision.write_text("model: {preset: resnet50}\nhardware: {server: dgx-h100, nodes: 1}\n"
                      "inference: {precision: fp8, images_per_s: 1000}\n")
    assert main(["serve", str(vision), "--max-rate"]) == 2
    assert "vision models serve images" in capsys.readouterr().err
    assert main(["serve", str(path)]) == 0
    out = capsys.readouterr().out
    assert "compute None" not in out and "no dense rate at this precision" in out
    # an empty fleet: no racks or power estimated, so no note on how they were estimated
    assert "inference-quick-estimate" not in out and "0 racks" in out


def test_max_rate_text_prints_the_error_findings_beside_a_rate(tmp_path, capsys):
    # TP 3 does not divide Llama 3 8B's 8 KV heads: a rate is still computed, and the error is printed with it
    path = _yaml(tmp_path, nodes=1, tensor_parallel=3)
    assert main(["serve", path, "--max-rate"]) == 0
    out = capsys.readouterr().out
    assert "max rate" in out and "[error] inference-tp-kv-heads" in out


def test_no_replica_larger_than_the_scenarios_gpus(tmp_path, capsys):
    # TP 16 on one DGX H100 (8 GPUs): not one replica, no rate, and a finding naming the tensor parallelism
    d = _max_rate(capsys, _yaml(tmp_path, nodes=1, tensor_parallel=16))
    assert d["gpus"] == 0 and d["max_rate_per_s"] is None and d["tokens_per_s_per_gpu"] is None
    f = next(f for f in d["findings"] if f["code"] == "inference-tp-exceeds-gpus")
    assert f["field"] == "inference.tensor_parallel" and "16 GPUs" in f["message"] and "8 GPUs" in f["message"]
    assert "2 nodes of 8 GPUs" in f["fix"]                                   # ceil(16 / 8) = 2 nodes
    # the same in plain serve without a target: 0 replicas, not max(8 // 16, 1) = 1
    est = serve(_scenario(nodes=1, tensor_parallel=16, requests_per_s=None))
    assert est.replicas == 0 and est.gpus == 0
    assert any(f.code == "inference-tp-exceeds-gpus" for f in est.findings)


def test_mean_batch_below_one_is_written_as_a_fraction(tmp_path, capsys):
    path = _yaml(tmp_path, batch_size=1)
    assert main(["serve", path, "--max-rate"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if "mean batch" in x)
    assert "below one sequence in flight" in line and "mean batch 0 " not in line + " "


# ---------------------------------------------------------------- one median; the chosen batch


def _linear_replica() -> ReplicaCurve:
    b = np.arange(1, 1001)
    return ReplicaCurve(b, 0.010 + 0.001 * b, 0.05, 1000, 100, 1000)


def test_the_median_tpot_is_the_step_at_the_poisson_median_batch():
    # Little: rate = b / (100 (0.01 + 0.001 b)): 5/3 requests/s at b = 2, 30/13 at b = 3; 2.0 requests/s lies
    # between, b = 2 + (2 - 5/3) / (30/13 - 5/3) = 2.52 (the rate grid interpolated, module queueing).
    # Poisson(2.52): P(N <= 1) = e^-2.52 x 3.52 = 0.2832, P(N <= 2) = 0.2832 + e^-2.52 x 3.1752 = 0.5387: median 2,
    # so TPOT p50 = T(2) = 0.012 s (the mean batch's step would be T(2.52) = 0.01252 s)
    p = load_point(2.0, _linear_replica(), 99)
    assert p.mean_batch == pytest.approx(2.52)
    assert p.tpot_p50_s == pytest.approx(0.012)
    at50 = load_point(2.0, _linear_replica(), 50)
    assert at50.tpot_pct_s == at50.tpot_p50_s and at50.ttft_pct_s == at50.ttft_p50_s


def test_at_p50_one_figure_and_a_chosen_batch_that_meets_the_slos():
    est = serve(_scenario(precision="bf16", tensor_parallel=2, input_tokens=4096, output_tokens=64, ttft_slo_s=0.5,
                          tpot_slo_s=0.03, engine="tensorrt-llm", output_tokens_cv=0.71, slo_percentile=50))
    at = est.load["at_max_rate"]
    assert at["tpot_p50_s"] == at["tpot_pct_s"] <= 0.03
    assert est.batch == math.floor(at["mean_batch"])                         # the whole part of the mean batch
    row = next(r for r in est.sweep if r["batch"] == est.batch)
    assert row["meets_slo"]
    assert "TTFT p50" in est.summary() and ", p50 " not in est.summary()     # p50 written once


# ---------------------------------------------------------------- --percentile


def test_percentile_without_max_rate(tmp_path, capsys):
    offline = _yaml(tmp_path, name="off.yaml", arrival="offline")
    assert main(["serve", offline, "--percentile", "50"]) == 2
    assert "--max-rate" in capsys.readouterr().err
    poisson = _yaml(tmp_path, name="poi.yaml")
    assert main(["serve", poisson, "--percentile", "90", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["load"]["percentile"] == 90.0   # applied, not the scenario's 99


def test_percentile_labels_by_hand():
    assert percentile_label(99) == "p99" and percentile_label(99.9) == "p99.9" and percentile_label(50.0) == "p50"
    assert percentile_label(99.99999999999999) == "p99.99999999999999"     # not rounded up to p100
    assert percentile_label(1e-9) == "p10^-9"                               # not p1e-09


# ---------------------------------------------------------------- MIG


def test_mig_findings_offer_larger_profiles_and_name_the_instance():
    est = serve(_scenario(mig_profile="1g.10gb", precision="bf16"))
    f = next(f for f in est.findings if f.code == "inference-model-does-not-fit")
    assert "a MIG 1g.10gb instance of NVIDIA H100 SXM5 80GB offers" in f.message
    assert "tensor parallelism" not in f.fix and f.field == "inference.mig_profile"
    # Llama 3 8B in BF16 needs 18.7 GB; 1g.20gb offers 0.9 x 20 GiB = 19.3 GB: the smallest larger slice that fits
    assert "a larger MIG profile (1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb or 7g.80gb, or auto)" in f.fix
    codes = {f.code for f in serve(_scenario(mig_profile="auto")).findings}
    assert "inference-no-scaleup-bandwidth" not in codes and "inference-mig" in codes


# ---------------------------------------------------------------- output lengths at a wide spread


def test_gamma_length_pmf_bins_by_hand():
    # cv 1 is the exponential: P(L = 1) = 1 - e^(-1.5/100), P(L = k) = e^(-(k - 1/2)/100) - e^(-(k + 1/2)/100)
    x, p = gamma_length_pmf(100, 1.0, 2000)
    assert p[0] == pytest.approx(1 - math.exp(-0.015), rel=1e-9)                # 0.014888
    assert p[99] == pytest.approx(math.exp(-0.995) - math.exp(-1.005), rel=1e-9)  # 0.0036788
    assert p[-1] == pytest.approx(math.exp(-1999.5 / 100), rel=1e-6)           # the tail above 1,999.5 tokens


def test_gamma_length_pmf_keeps_the_mean():
    # MLPerf's spread (0.71) as before, within 0.5%; the wide spreads the scenario allows (up to 10) within 2%
    for cv, tolerance in ((0.71, 0.005), (2.0, 0.02), (5.0, 0.02), (10.0, 0.02)):
        x, p = gamma_length_pmf(256, cv, length_grid(256, cv))
        assert (x * p).sum() == pytest.approx(256, rel=tolerance), cv


def test_last_request_latency_at_a_wide_spread():
    # a step that does not depend on the batch, 10 ms: ttft + T (E[L] - 1) = 0.1 + 0.01 x 255 = 2.65 s
    b = np.arange(1, 1001)
    flat = ReplicaCurve(b, np.full(1000, 0.01), 0.03, 222, 256, 1000, service_cv=10.0)
    assert last_request_latency(flat, 100.0, 0.1) == pytest.approx(2.65, rel=0.02)


# ---------------------------------------------------------------- the model's context; encoder-only models


def test_a_request_beyond_the_models_sequence_length():
    # Llama 3 8B: 8,192 tokens (rotary positions, the preset's training sequence): a warning, the fleet is sized
    est = serve(_scenario(input_tokens=200_000))
    f = next(f for f in est.findings if f.code == "inference-context-exceeded")
    assert f.severity == "warning" and "200,256 tokens" in f.message and "8,192" in f.message   # 200,000 + 256


def test_an_encoder_only_model_is_not_served(tmp_path, capsys):
    est = serve(_scenario("bert-large"))
    codes = {f.code: f for f in est.findings}
    assert codes["inference-encoder-only"].severity == "error"
    # 1,024 + 256 = 1,280 tokens against BERT-large's 512 learned positions: an error
    assert codes["inference-context-exceeded"].severity == "error" and "1,280" in codes["inference-context-exceeded"].message
    assert est.gpus == 0 and est.tokens_per_s_per_gpu is None and est.load is None
    d = _max_rate(capsys, _yaml(tmp_path, "bert-large"))
    assert d["max_rate_per_s"] is None and "inference-encoder-only" in [f["code"] for f in d["findings"]]


# ---------------------------------------------------------------- the offline batch against the token budget


def test_offline_batch_above_the_token_budget_is_a_warning():
    est = serve(_scenario(tensor_parallel=1, input_tokens=4096, output_tokens=64, ttft_slo_s=20, tpot_slo_s=2,
                          arrival="offline"))
    f = next(f for f in est.findings if f.code == "inference-step-exceeds-token-budget")
    # each sequence takes 1 + 4096 / 64 = 65 tokens a step; the default budget is 8,192, so at most 126 fit
    assert f.severity == "warning" and f"{est.batch * 65:,} tokens" in f.message and "at most 126" in f.fix
    assert est.batch * 65 > 8192


# ---------------------------------------------------------------- the Serving tab


def test_serving_tab_on_a_vision_model(tmp_path):
    from gpucluster_lib.ui import tab_inference
    from gpucluster_lib.ui.common import AppState

    path = tmp_path / "r.yaml"
    path.write_text("model: {preset: resnet50}\nhardware: {server: dgx-h100, nodes: 2}\n"
                    "inference: {precision: fp8, images_per_s: 1000}\n")
    panel = tab_inference.InferencePanel(AppState.from_path(str(path)))
    assert panel.msg.value == ""
    # H100 FP8: 64 x 8.18 GFLOP / (1978.9 TFLOP/s x 0.20) + 10 ms = 11.3 ms per batch -> 5,652 images/s;
    # 1,000 images/s need ceil(1000 / 5652) = 1 GPU
    assert "5,652 images/s" in panel.summary.value and "1 GPU," in panel.summary.value


def test_serving_tab_label_carries_the_percentile(tmp_path):
    from gpucluster_lib.ui import tab_inference
    from gpucluster_lib.ui.common import AppState

    panel = tab_inference.InferencePanel(AppState.from_path(_yaml(tmp_path, slo_percentile=90)))
    assert dict((v, k) for k, v in panel.arrival.options)["poisson"] == "Poisson, p90 SLOs"
    assert "p90" in panel.summary.value and "p99" not in panel.summary.value
    assert "1 node," in panel.summary.value                                   # 2 replicas of TP 1 on one node


def test_a_replica_larger_than_the_scenario_serves_nothing_and_says_so():
    # TP 16 on one DGX H100 (8 GPUs), no target: one replica needs 16 GPUs, so nothing is served; the summary must
    # not also say it meets the SLOs or give a throughput
    from gpucluster_lib.inference.serve import serve
    from gpucluster_lib.scenario import from_dict

    est = serve(from_dict({"model": {"preset": "llama3-8b"}, "hardware": {"server": "dgx-h100", "nodes": 1},
                           "inference": {"precision": "fp8", "tensor_parallel": 16, "input_tokens": 1024,
                                         "output_tokens": 256, "ttft_slo_s": 2, "tpot_slo_s": 0.05}}))
    assert "inference-tp-exceeds-gpus" in [f.code for f in est.findings]
    assert est.gpus == 0 and not est.meets_slo and est.tokens_per_s_per_gpu is None and est.batch == 0


@pytest.mark.parametrize("percentile, fixed", [(99, None), (50, None), (99, 256)])
def test_the_shown_batch_row_meets_the_slos(percentile, fixed):
    # Llama 3 70B FP8 on TP 2, Poisson at the max rate: the batch shown is min(floor(b), Q_q(b)) (its TPOT is at
    # most the percentile's, within the SLO); a fixed batch size has only its own row, shown only when it is that
    from gpucluster_lib.inference.serve import serve
    from gpucluster_lib.scenario import from_dict

    inf = {"precision": "fp8", "input_tokens": 1024, "output_tokens": 256, "requests_per_s": 5, "tensor_parallel": 2,
           "ttft_slo_s": 2.0, "tpot_slo_s": 0.03, "arrival": "poisson", "slo_percentile": percentile}
    if fixed:
        inf["batch_size"] = fixed
    est = serve(from_dict({"model": {"preset": "llama3-70b"}, "hardware": {"server": "dgx-h100", "nodes": 2},
                           "inference": inf}))
    assert est.meets_slo
    rows = [r for r in est.sweep if r["batch"] == est.batch]
    assert all(r["meets_slo"] for r in rows)
    shown = next(o["batch"] for o in est.tp_options if o["tensor_parallel"] == 2)   # the row the app highlights
    if fixed:
        assert est.batch != fixed and rows == [] and shown is None
    else:
        assert len(rows) == 1 and shown == est.batch


@pytest.mark.parametrize("percentile", [10, 49.9, 100])
def test_slo_percentile_is_the_median_or_above(percentile):
    # a latency SLO below the median would be met by most requests missing it: refused, naming the field
    from gpucluster_lib.scenario import from_dict

    with pytest.raises(ScenarioError, match="inference.slo_percentile"):
        from_dict({"model": {"preset": "llama3-70b"}, "hardware": {"server": "dgx-h100", "nodes": 1},
                   "inference": {"arrival": "poisson", "slo_percentile": percentile}})


@pytest.mark.parametrize("value", ["-inf", "-nan", "-Infinity"])
def test_a_minus_infinity_option_value_reaches_the_range_check(value, capsys):
    # argparse alone would read "-inf" as an option and say only "expected one argument"
    assert main(["serve", "llama3-70b-512-h100", "--max-rate", "--percentile", value]) == 2
    assert "--percentile: must be from 50 (the median) up to, not including, 100" in capsys.readouterr().err
