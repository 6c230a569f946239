"""The per-GPU accuracy the training estimate quotes (gpucluster_lib/training/accuracy.py,
data/validation/accuracy.yaml): current with the model, in words, and only for the catalogue's values."""

from __future__ import annotations

import pandas as pd
import pytest

from gpucluster_lib.catalog import load_catalog
from gpucluster_lib.scenario import from_dict
from gpucluster_lib.training import accuracy, validation
from gpucluster_lib.training.efficiency import for_accelerator
from gpucluster_lib.training.estimate import estimate


def _scenario(accelerator, efficiency=None):
    training = {"framework": "nemo", "precision": "bf16"}
    if efficiency:
        training["efficiency"] = efficiency
    return from_dict({"name": "by hand", "model": {"preset": "llama3-8b"},
                      "hardware": {"accelerator": accelerator, "gpus_per_node": 8, "nodes": 1},
                      "parallelism": {"tensor": 1, "pipeline": 1, "micro_batch_size": 2, "global_batch_size": 16,
                                      "recompute": "none", "zero_stage": 1},
                      "training": training})


def test_the_file_is_the_current_model():
    # data/validation/accuracy.yaml is regenerated with docs/validation.md (scripts/make_validation_doc.py); a model
    # change that moves a held-out row moves it, and this fails until it is regenerated
    expected = accuracy.summarise(validation.compare())
    assert accuracy.load() == expected
    assert accuracy.ACCURACY_PATH.read_text(encoding="utf-8") == accuracy.to_yaml(expected)


def test_summarise_by_hand():
    # three held-out rows on one GPU (errors -10%, +5%, +20%) and a calibration row that is not counted
    df = pd.DataFrame({"set": ["external", "external", "external", "calibration"],
                       "accelerator": ["x", "x", "x", "x"], "error": [-0.10, 0.05, 0.20, 0.50]})
    assert accuracy.summarise(df) == {"x": {"runs": 3, "error_min": -0.1, "error_median": 0.05, "error_max": 0.2}}


@pytest.mark.parametrize("row, words", [
    # all slower than published: the span in increasing order, the median's side named
    ({"runs": 5, "error_min": 0.060, "error_median": 0.169, "error_max": 0.250},
     "against 5 published training runs on this GPU (not used to set its efficiencies) the estimated step time was "
     "6% to 25% longer than published (median 17% longer)"),
    # all faster: -19.7% and -1.2% read as 1% to 20% shorter
    ({"runs": 8, "error_min": -0.197, "error_median": -0.066, "error_max": -0.012},
     "against 8 published training runs on this GPU (not used to set its efficiencies) the estimated step time was "
     "1% to 20% shorter than published (median 7% shorter)"),
    # both sides
    ({"runs": 10, "error_min": -0.077, "error_median": 0.031, "error_max": 0.126},
     "against 10 published training runs on this GPU (not used to set its efficiencies) the estimated step time "
     "ranged from 8% shorter to 13% longer than published (median 3% longer)"),
    # one run, and a median that rounds to zero
    ({"runs": 1, "error_min": 0.004, "error_median": 0.004, "error_max": 0.004},
     "against 1 published training run on this GPU (not used to set its efficiencies) the estimated step time was "
     "the same as published"),
    ({"runs": 3, "error_min": -0.05, "error_median": 0.002, "error_max": 0.04},
     "against 3 published training runs on this GPU (not used to set its efficiencies) the estimated step time "
     "ranged from 5% shorter to 4% longer than published (median the same)"),
])
def test_sentence_in_words(monkeypatch, row, words):
    monkeypatch.setattr(accuracy, "load", lambda: {"x": row})
    assert accuracy.sentence("x") == words
    assert accuracy.sentence("not-measured") is None


def test_the_unvalidated_finding_quotes_this_gpus_runs():
    # GB300: every held-out row is slower in the model (docs/validation.md, the GB300 rows of BEYOND_15); the finding
    # gives the user that range from the file, which the first test ties to the model
    (f,) = [f for f in estimate(_scenario("gb300-gpu-288gb")).findings if f.code == "training-efficiency-unvalidated"]
    said = accuracy.sentence("gb300-gpu-288gb")
    s = accuracy.load()["gb300-gpu-288gb"]
    assert said and f"; {said}; treat the estimate as indicative" in f.message
    assert s["error_min"] > 0 and "longer than published" in said
    # and on B200 every held-out run is faster in the model (notebooks/validation.py and docs/training.md say so)
    assert accuracy.load()["b200-sxm-180gb"]["error_max"] < 0
    # an override replaces the catalogue's values: the runs no longer describe this estimate, so it is not quoted
    (g,) = [f for f in estimate(_scenario("gb300-gpu-288gb", {"gemm_efficiency": 0.6})).findings
            if f.code == "training-efficiency-unvalidated"]
    assert "published training runs on this GPU" not in g.message
    assert for_accelerator(load_catalog().accelerator("gb300-gpu-288gb")).accuracy == said
    # a GPU of an unvalidated generation with no held-out run says nothing of the kind
    (h,) = [f for f in estimate(_scenario("mi300x")).findings if f.code == "training-efficiency-unvalidated"]
    assert "published training runs on this GPU" not in h.message
