"""The per-GPU accuracy the training estimate quotes (gpucluster_lib/accuracy.py,
data/validation/accuracy.yaml): current with the model, in words, and only for the catalogue's values."""

from __future__ import annotations

import pandas as pd
import pytest

from gpucluster_lib import accuracy
from gpucluster_lib.scenario import from_dict
from gpucluster_lib.training import validation
from gpucluster_lib.training.estimate import estimate

NEMO = "NVIDIA NeMo (Megatron-Core)"


def _scenario(accelerator, precision="bf16", efficiency=None, gemm_efficiency=None, dp_overlap=None,
              calibration=None):
    training = {"framework": "nemo", "precision": precision}
    if efficiency:
        training["efficiency"] = efficiency
    if gemm_efficiency is not None:
        training["gemm_efficiency"] = gemm_efficiency
    par = {"tensor": 1, "pipeline": 1, "micro_batch_size": 2, "global_batch_size": 16, "recompute": "none",
           "zero_stage": 1}
    if dp_overlap is not None:
        par["dp_overlap"] = dp_overlap
    doc = {"name": "by hand", "model": {"preset": "llama3-8b"},
           "hardware": {"accelerator": accelerator, "gpus_per_node": 8, "nodes": 1},
           "parallelism": par, "training": training}
    if calibration:
        doc["calibration"] = calibration
    return from_dict(doc)


def _warning(sc):
    (f,) = [f for f in estimate(sc).findings if f.code == "training-efficiency-unvalidated"]
    return f.message


@pytest.fixture(scope="module")
def table():
    return validation.compare()


def test_the_file_is_the_current_model(table):
    # data/validation/accuracy.yaml is regenerated with docs/validation.md (scripts/make_validation_doc.py); a model
    # change that moves a held-out row or an MLPerf result moves it, and this fails until it is regenerated
    from gpucluster_lib.inference.validation import mlperf_accuracy_rows

    expected = accuracy.summarise(table)
    serving = accuracy.summarise_serving(mlperf_accuracy_rows())
    assert accuracy.load() == expected and accuracy.load_serving() == serving
    assert accuracy.ACCURACY_PATH.read_text(encoding="utf-8") == accuracy.to_yaml(expected) + accuracy.serving_yaml(serving)


def test_summarise_by_hand():
    # three held-out rows on one GPU (errors -10%, +5%, +20%) and a calibration row that is not counted
    df = pd.DataFrame({"set": ["external", "external", "external", "calibration"],
                       "accelerator": ["x", "x", "x", "x"], "error": [-0.10, 0.05, 0.20, 0.50],
                       "precision": ["fp8", "bf16", "fp8", "fp16"], "framework": ["B", "A", "A", "C"]})
    by = {"bf16": {"runs": 1, "precisions": ["bf16"], "frameworks": ["A"], "error_min": 0.05, "error_median": 0.05,
                   "error_max": 0.05},
          "fp8": {"runs": 2, "precisions": ["fp8"], "frameworks": ["A", "B"], "error_min": -0.1,
                  "error_median": 0.05, "error_max": 0.2}}  # median of -10% and +20%: +5%
    assert accuracy.summarise(df) == {"x": {"runs": 3, "precisions": ["bf16", "fp8"], "frameworks": ["A", "B"],
                                            "error_min": -0.1, "error_median": 0.05, "error_max": 0.2,
                                            "by_precision": by}}
    # one precision only: no split
    one = df[df["precision"] != "bf16"]
    assert "by_precision" not in accuracy.summarise(one)["x"]


RUNS = "published training runs on this GPU (FP8, NVIDIA NeMo) that were not used to set these values"


@pytest.mark.parametrize("row, words", [
    # all slower than published: the span in increasing order, the median's side named
    ((5, 0.060, 0.169, 0.250), f"checked against 5 {RUNS}, the estimated step time was 6% to 25% longer than "
                               "published (median 17% longer)"),
    # all faster: -19.7% and -1.2% read as 1% to 20% shorter
    ((8, -0.197, -0.066, -0.012), f"checked against 8 {RUNS}, the estimated step time was 1% to 20% shorter than "
                                  "published (median 7% shorter)"),
    # both sides
    ((10, -0.077, 0.031, 0.126), f"checked against 10 {RUNS}, the estimated step time ranged from 8% shorter to 13% "
                                 "longer than published (median 3% longer)"),
    # one run
    ((1, 0.004, 0.004, 0.004), "checked against 1 published training run on this GPU (FP8, NVIDIA NeMo) that was not "
                               "used to set these values, the estimated step time was about the same as published"),
    # a median that rounds to zero
    ((3, -0.05, 0.002, 0.04), f"checked against 3 {RUNS}, the estimated step time ranged from 5% shorter to 4% "
                              "longer than published (median about the same)"),
    # both ends round to zero: one figure
    ((3, -0.004, 0.0, 0.004), f"checked against 3 {RUNS}, the estimated step time was about the same as published"),
    # one end rounds to zero
    ((3, 0.004, 0.1, 0.2), f"checked against 3 {RUNS}, the estimated step time ranged from about the same to 20% "
                           "longer than published (median 10% longer)"),
    ((3, -0.004, 0.1, 0.2), f"checked against 3 {RUNS}, the estimated step time ranged from about the same to 20% "
                            "longer than published (median 10% longer)"),
    # both ends round to the same figure on one side: one figure, not "5% to 5%"
    ((2, 0.051, 0.0525, 0.054), f"checked against 2 {RUNS}, the estimated step time was 5% longer than published"),
    # halves round up (12.5% -> 13%, as 3.5% -> 4%), not to even
    ((2, 0.035, 0.08, 0.125), f"checked against 2 {RUNS}, the estimated step time was 4% to 13% longer than "
                              "published (median 8% longer)"),
])
def test_sentence_in_words(monkeypatch, row, words):
    n, lo, mid, hi = row
    monkeypatch.setattr(accuracy, "load", lambda: {"x": {"runs": n, "precisions": ["fp8"], "frameworks": [NEMO],
                                                         "error_min": lo, "error_median": mid, "error_max": hi}})
    assert accuracy.sentence("x") == words
    assert accuracy.sentence("x", "fp8") == words
    # an estimate in another precision is told what the runs were
    tail = "; those runs are FP8 and this estimate is BF16" if n != 1 else "; that run is FP8 and this estimate is BF16"
    assert accuracy.sentence("x", "bf16") == words + tail
    assert accuracy.sentence("not-measured") is None


def test_no_file_no_sentence(monkeypatch, tmp_path):
    # a data folder from before the file existed: no sentence, no error
    monkeypatch.setattr(accuracy, "ACCURACY_PATH", tmp_path / "accuracy.yaml")
    accuracy._document.cache_clear()
    try:
        assert accuracy.load() == {} and accuracy.sentence("gb300-gpu-288gb") is None
        assert accuracy.load_serving() == {} and accuracy.serving_sentence("h100-sxm5-80gb") is None
    finally:
        accuracy._document.cache_clear()


def test_the_unvalidated_finding_quotes_this_gpus_runs(table):
    # GB300: every held-out row is slower in the model (docs/validation.md, the GB300 rows of BEYOND_15). The figures
    # the warning gives are those of the validation table's GB300 rows, read here from the table itself
    gb300 = table[(table["accelerator"] == "gb300-gpu-288gb") & (table["set"] == "external")]
    err = gb300["error"]
    lo, hi, mid = (int(abs(x) * 100 + 0.5) for x in (err.min(), err.max(), err.median()))
    assert err.min() > 0 and set(gb300["precision"]) == {"fp8"}
    msg = _warning(_scenario("gb300-gpu-288gb", "fp8"))
    assert (f"not from training runs; checked against {len(err)} published training runs on this GPU (FP8, NVIDIA "
            f"NeMo) that were not used to set these values, the estimated step time was {lo}% to {hi}% longer than "
            f"published (median {mid}% longer); treat the estimate as indicative") in msg
    # a BF16 estimate on the same GPU is told the runs were FP8
    assert "those runs are FP8 and this estimate is BF16; treat" in _warning(_scenario("gb300-gpu-288gb"))
    # on B200 every held-out run is faster in the model (notebooks/validation.py says so)
    b200 = table[(table["accelerator"] == "b200-sxm-180gb") & (table["set"] == "external")]["error"]
    assert b200.max() < 0 and "shorter than published" in _warning(_scenario("b200-sxm-180gb", "fp8"))


@pytest.mark.parametrize("own", [
    {"efficiency": {"gemm_efficiency": 0.6}},
    {"gemm_efficiency": 0.6},
    {"dp_overlap": 0.5},
    {"calibration": "example-h100-public-data"},
])
def test_own_values_are_not_described_by_the_runs(own):
    # each way a scenario sets its own efficiency values drops the sentence (the runs measured the catalogue's)
    sc = _scenario("gb300-gpu-288gb", "fp8", **own)
    msg = _warning(sc)
    assert "published training runs on this GPU" not in msg and msg.endswith("; treat the estimate as indicative")
    assert estimate(sc).assumptions["efficiency"]["accuracy"] == ""


def test_calibrated_gpus_get_it_as_a_note(table):
    # H100 (Hopper, calibrated on the calibration rows): no warning, but the held-out runs on H100 as a note. A BF16
    # estimate quotes the BF16 runs (H100 has runs in BF16 and FP8, at least 3 of each), with the figures of the
    # validation table's H100 BF16 rows, read here from the table itself
    h100 = table[(table["accelerator"] == "h100-sxm5-80gb") & (table["set"] == "external")]
    assert {"bf16", "fp8"} == set(h100["precision"]) and min(h100["precision"].value_counts()) >= 3
    err = h100[h100["precision"] == "bf16"]["error"]
    lo, hi, mid = (int(abs(x) * 100 + 0.5) for x in (err.min(), err.max(), err.median()))
    assert err.min() < 0 < err.max()
    est = estimate(_scenario("h100-sxm5-80gb"))
    codes = {f.code: f for f in est.findings}
    assert "training-efficiency-unvalidated" not in codes
    note = codes["training-accuracy-published-runs"]
    assert note.severity == "info" and note.message.startswith(f"checked against {len(err)} published training runs "
                                                               "on this GPU (BF16, ")
    assert f"ranged from {lo}% shorter to {hi}% longer than published" in note.message
    assert note.message.endswith(f"(median {mid}% {'longer' if err.median() > 0 else 'shorter'})" if mid
                                 else "(median about the same)")
    assert est.assumptions["efficiency"]["accuracy"] == note.message
    # not with the scenario's own values
    own = estimate(_scenario("h100-sxm5-80gb", gemm_efficiency=0.6))
    assert "training-accuracy-published-runs" not in {f.code for f in own.findings}
    # another vendor's accelerator (unvalidated, no held-out run): the warning without it
    assert "published training runs on this GPU" not in _warning(_scenario("mi300x"))


def test_the_estimates_precision_is_quoted_on_its_own(table):
    # an FP8 estimate on H100 quotes the FP8 runs only; on A100 80GB the FP16 runs are too few (under
    # MIN_RUNS_OF_A_PRECISION), so an FP16 estimate quotes all the GPU's runs, FP16 among them (no mismatch clause)
    ext = table[table["set"] == "external"]
    n_fp8 = int(((ext["accelerator"] == "h100-sxm5-80gb") & (ext["precision"] == "fp8")).sum())
    assert accuracy.sentence("h100-sxm5-80gb", "fp8").startswith(
        f"checked against {n_fp8} published training runs on this GPU (FP8, ")
    a100 = ext[ext["accelerator"] == "a100-sxm4-80gb"]
    assert 0 < int((a100["precision"] == "fp16").sum()) < accuracy.MIN_RUNS_OF_A_PRECISION
    fp16 = accuracy.sentence("a100-sxm4-80gb", "fp16")
    assert fp16.startswith(f"checked against {len(a100)} published training runs on this GPU (BF16 and FP16, ")
    assert "this estimate is" not in fp16


def test_serving_summary_and_words_by_hand(monkeypatch):
    rows = [{"accelerator": "x", "round": r, "scenario": sc, "model": "Llama 2 70B", "precision": "fp8", "error": e}
            for r, sc, e in (("v4.0", "offline", 0.09), ("v4.0", "server", 0.15), ("v4.1", "offline", -0.03),
                             ("v4.1", "server", 0.095))]
    s = accuracy.summarise_serving(rows)["x"]
    # the median of four: (0.09 + 0.095) / 2 = 0.0925
    assert (s["results"], s["rounds"], s["scenarios"]) == (4, ["v4.0", "v4.1"], ["offline", "server"])
    assert (s["error_min"], s["error_median"], s["error_max"]) == (-0.03, 0.0925, 0.15)
    monkeypatch.setattr(accuracy, "load_serving", lambda: {"x": s})
    assert accuracy.serving_sentence("x") == (
        "checked against 4 MLPerf Inference results on this GPU (Llama 2 70B in FP8, offline and server, rounds v4.0 "
        "and v4.1), the estimated throughput ranged from 3% lower to 15% higher than published (median 9% higher)")
    assert accuracy.serving_sentence("x", "fp8") == accuracy.serving_sentence("x")
    assert accuracy.serving_sentence("x", "bf16").endswith("(median 9% higher); those results are FP8 and this "
                                                           "estimate is BF16")
    assert accuracy.serving_sentence("y") is None


def _serve_scenario(accelerator="h100-sxm5-80gb", **inference):
    return from_dict({"name": "by hand", "model": {"preset": "llama2-70b"},
                      "hardware": {"accelerator": accelerator, "gpus_per_node": 8, "nodes": 1},
                      "inference": {"precision": "fp8", "requests_per_s": 1.0, **inference}})


def test_the_serving_estimate_quotes_the_mlperf_results():
    from gpucluster_lib.inference.serve import serve
    from gpucluster_lib.inference.validation import mlperf_rows

    # DGX H100 and H200 ran the MLPerf rows: 4 results each (data/validation/mlperf_llama2_70b.yaml)
    assert sum(r.system == "dgx-h100" for r in mlperf_rows()) == 4
    notes = [f for f in serve(_serve_scenario()).findings if f.code == "inference-accuracy-published-runs"]
    assert len(notes) == 1 and notes[0].severity == "info"
    assert notes[0].message == accuracy.serving_sentence("h100-sxm5-80gb")
    assert notes[0].message.startswith("checked against 4 MLPerf Inference results on this GPU (Llama 2 70B in FP8")
    # not with another engine profile or the scenario's own serving efficiencies, nor on a GPU with no result
    # a BF16 estimate is told the results were FP8
    bf16 = [f for f in serve(_serve_scenario(precision="bf16")).findings if f.code == "inference-accuracy-published-runs"]
    assert len(bf16) == 1 and bf16[0].message.endswith("those results are FP8 and this estimate is BF16")
    for sc in (_serve_scenario(engine="tensorrt-llm"), _serve_scenario(memory_bandwidth_efficiency=0.7),
               _serve_scenario("b200-sxm-180gb"), _serve_scenario(mig_profile="3g.40gb")):
        assert not any(f.code == "inference-accuracy-published-runs" for f in serve(sc).findings)
