"""The run's Transformer Engine release (``training.transformer_engine``, data/training_frameworks.yaml
``transformer_engine`` and the ``transformer_engine`` of each recipe and loss): what each release has, by hand.

Sources (NVIDIA/TransformerEngine tags): ``non_tn_fp8_gemm_supported`` (csrc/extensions/util.cpp, compute capability
major >= 10) and ``create_transpose = columnwise_usage && !non_tn_fp8_gemm_supported()`` (csrc/extensions/
quantizer.cpp) first in v2.0, absent from release_v1.14; ``class MXFP8BlockScaling`` first in v2.0; ``class
Float8CurrentScaling`` first in v2.2 (release_v1.14's ``CurrentScaling`` is a stub its modules never run:
module/base.py tests ``recipe.delayed`` without calling it); transformer_engine/pytorch/triton/cross_entropy.py
first in v2.2.
"""

from __future__ import annotations

import pytest

from gpucluster_lib.errors import ScenarioError
from gpucluster_lib.scenario import from_dict
from gpucluster_lib.training import validation
from gpucluster_lib.training.core import fp8_cast_bytes
from gpucluster_lib.training.estimate import build_context, estimate
from gpucluster_lib.training.framework import fp8_casts, framework, te_release

#: GPT-3 5B as in tests/test_training_fp8_attention.py (NeMo's launcher 24.07 conf/training/gpt3/5b.yaml)
GPT5B = {"preset": "gpt3-175b", "layers": 24, "hidden_size": 4096, "attention_heads": 32, "kv_heads": 32,
         "ffn_hidden_size": 16384, "vocab_size": 50304, "seq_length": 2048}


def _scenario(accelerator="b200-sxm-180gb", gbs=64, **training):
    training = {"framework": "megatron", "precision": "fp8", **training}
    return from_dict({"name": "by hand", "model": GPT5B,
                      "hardware": {"accelerator": accelerator, "gpus_per_node": 8, "nodes": 2},
                      "parallelism": {"tensor": 1, "pipeline": 1, "micro_batch_size": 4, "global_batch_size": gbs,
                                      "recompute": "none", "zero_stage": 1},
                      "training": training})


def test_releases_compare_as_numbers():
    assert te_release("2.10") > te_release("2.2") > te_release("2.0") > te_release("1.14") > te_release("1.9")
    assert te_release(None) is None and te_release("2.2.0") > te_release("2.2")


def test_blackwell_transposes_before_2_0():
    fw = framework("megatron")
    # Hopper: the column-wise copy is always written (TN-only FP8 GEMMs), whatever the release
    assert fp8_casts(fw, "hopper", "delayed").columnwise == fp8_casts(fw, "hopper", "delayed", None, "1.14").columnwise == 1
    # Blackwell: none from v2.0 (non-TN FP8 GEMMs), one as on Hopper with v1.14 (quantize 2 + 1 + 1 = 4 bytes)
    assert fp8_casts(fw, "blackwell", "delayed").columnwise == 0
    assert fp8_casts(fw, "blackwell", "delayed", None, "2.0").columnwise == 0
    assert fp8_casts(fw, "blackwell", "delayed", None, "1.14").columnwise == 1
    assert fp8_casts(fw, "blackwell", "delayed", None, "1.14").quantize == 4.0
    # and the FP8 weights with their transposed copy: 2 bytes a weight element, not 1
    assert fp8_casts(fw, "blackwell", "delayed", None, "1.14").weight_bytes == 2.0


def test_cast_traffic_by_hand_on_b200():
    # GPT-3 5B layer, Megatron-Core, delayed scaling, no TP, M = 4 x 2048 = 8192 tokens. With v1.14 on Blackwell the
    # bytes are Hopper's worked case (core.py fp8_cast_bytes): forward (-1 + 4 - 1) x 8192 x 4096 + 4 x 8192 x 16384 =
    # 603.98e6, backward the two transposes 2 x 2 x 8192 x 4096 = 134.22e6 and dY 4 x 8192 x (12288 + 4096 + 16384 +
    # 4096) = 1,207.96e6. With a current release (c = 0, quantize 3): forward (-1 + 3 - 1) x 8192 x 4096 + 3 x 8192 x
    # 16384 = 436.21e6, backward no transposes and dY 3 x 8192 x 36864 = 905.97e6
    M = 4 * 2048
    old = build_context(_scenario(transformer_engine="1.14"))[0]
    new = build_context(_scenario())[0]
    fwd, bwd, _ = fp8_cast_bytes(old, M, 1, False)
    assert float(fwd) == pytest.approx(603.98e6, rel=1e-5) and float(bwd) == pytest.approx(1342.18e6, rel=1e-5)
    fwd, bwd, _ = fp8_cast_bytes(new, M, 1, False)
    assert float(fwd) == pytest.approx(436.21e6, rel=1e-5) and float(bwd) == pytest.approx(905.97e6, rel=1e-5)
    # the step (16 micro-batches a GPU, so the compute shows) is longer by that traffic, and Hopper does not move
    assert estimate(_scenario(gbs=1024, transformer_engine="1.14")).step_time_s > estimate(_scenario(gbs=1024)).step_time_s
    h100 = estimate(_scenario("h100-sxm5-80gb", gbs=1024)).step_time_s
    assert estimate(_scenario("h100-sxm5-80gb", gbs=1024, transformer_engine="1.14")).step_time_s == h100


@pytest.mark.parametrize("training, names", [
    ({"fp8_recipe": "mxfp8", "transformer_engine": "1.14"}, ("MXFP8 block scaling", "2.0", "1.14")),
    ({"fp8_recipe": "current", "transformer_engine": "2.1"}, ("FP8 current scaling", "2.2", "2.1")),
    ({"cross_entropy_loss": "te_triton", "transformer_engine": "2.1"}, ("Triton cross-entropy", "2.2", "2.1")),
])
def test_a_feature_newer_than_the_release_is_refused(training, names):
    with pytest.raises(ScenarioError) as e:
        estimate(_scenario(**training))
    assert e.value.path == "training.transformer_engine"
    what, need, have = names
    assert what in str(e.value) and f"from release {need}, but this scenario gives {have}" in str(e.value)
    # the first release that has it is accepted
    estimate(_scenario(**{**training, "transformer_engine": need}))


@pytest.mark.parametrize("value, words", [
    (2.1, "write the release in quotes, e.g. '1.14' or '2.10'"),   # YAML's 2.10 would arrive as 2.1
    (2, "write the release in quotes"),
    pytest.param(10 ** 5000, "got an integer of about 5,001 digits", id="huge"),  # a hostile number: a short message
    ("１.１４", "must be a release number"),                            # digits, but not ASCII ones
    ("two", "must be a release number such as '1.14' or '2.2'"),
    ("2.x", "must be a release number"),
])
def test_release_form(value, words):
    with pytest.raises(ScenarioError) as e:
        _scenario(transformer_engine=value)
    assert e.value.path == "training.transformer_engine" and words in str(e.value)


def test_nemo_25_02_rows_name_v1_14():
    # NeMo 25.02 = NeMo v2.2.0 on NGC PyTorch 25.01, whose Transformer Engine is v1.14 (the rows' notes); the other
    # rows leave it to the default (a current release)
    runs = validation.load_runs()
    named = runs[runs["transformer_engine"].astype(str).str.strip() != ""]
    assert set(named["run_id"]) == set(runs[runs["run_id"].str.startswith("nemo2502-")]["run_id"])
    assert set(named["transformer_engine"]) == {"1.14"} and len(named) == 4


def test_the_release_is_ignored_where_nothing_reads_it():
    # BF16 training with Megatron-Core's fused loss: no FP8 cast and no Transformer Engine loss reads the release
    codes = {f.code: f for f in estimate(_scenario(precision="bf16", transformer_engine="1.14")).findings}
    f = codes["training-setting-ignored"]
    assert f.field == "training.transformer_engine" and "the training precision is bf16" in f.message
    # TorchTitan trains in FP8 with torchao: the release changes nothing and is named as ignored
    tt = _scenario(framework="torchtitan", transformer_engine="1.14")
    assert estimate(tt).step_time_s == estimate(_scenario(framework="torchtitan")).step_time_s
    assert any(g.code == "training-setting-ignored" and g.field == "training.transformer_engine"
               and "torchao" in g.message for g in estimate(tt).findings)
    # read by a BF16 run whose loss is Transformer Engine's (its release is checked): no such warning
    bf16_te = _scenario(precision="bf16", cross_entropy_loss="te_triton", transformer_engine="2.2")
    assert not any(g.field == "training.transformer_engine" for g in estimate(bf16_te).findings)
    # read: FP8 with Megatron-LM (no such warning)
    assert not any(g.field == "training.transformer_engine" for g in estimate(_scenario(transformer_engine="1.14")).findings)


def test_a_release_that_skipped_the_scenario_check_is_still_refused_by_name():
    from gpucluster_lib.training.framework import te_release as parse

    for bad in ("2", "2.x", "1.2.3.4"):
        with pytest.raises(ScenarioError) as e:
            parse(bad)
        assert e.value.path == "training.transformer_engine"
