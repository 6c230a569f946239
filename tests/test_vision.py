"""Vision presets and estimators against papers and published throughput."""

from __future__ import annotations

import json

import pytest

from gpucluster_lib.catalog import load_catalog
from gpucluster_lib.cli import main
from gpucluster_lib.errors import ScenarioError, UnknownIdError
from gpucluster_lib.inference.vision import serve_vision
from gpucluster_lib.scenario import from_dict
from gpucluster_lib.training.vision import estimate_training
from gpucluster_lib.workloads.vision import (
    IMAGENET_1K_TRAIN_IMAGES,
    estimate_inference,
    is_vision_model,
    resolve_vision,
)


@pytest.fixture(scope="module")
def cat():
    return load_catalog()


def training(preset, accelerator, gpus_per_node, nodes, precision, **extra):
    return from_dict({"model": {"preset": preset},
                      "hardware": {"accelerator": accelerator, "gpus_per_node": gpus_per_node, "nodes": nodes},
                      "training": {"precision": precision, **extra}})


# ---------------------------------------------------------------- presets


def test_resnet50_macs_versus_flops_convention():
    m = resolve_vision("resnet50")
    assert m.macs_per_image == pytest.approx(4.1e9, rel=0.01)   # torchvision v1.5: 4.09 GMACs
    assert m.flops_per_image == pytest.approx(8.2e9, rel=0.01)  # 1 MAC = 2 FLOPs
    assert m.params == 25_557_032                              # torchvision resnet50 num_params


@pytest.mark.parametrize(("preset", "paper_params_m"), [("resnet101", 44.5), ("resnet152", 60.2),
                                                          ("vit-b16", 86), ("vit-l16", 307)])
def test_params_match_papers(preset, paper_params_m):
    # He 2016 / torchvision; Dosovitskiy 2021 Table 1: ViT-Base 86M, ViT-Large 307M
    assert resolve_vision(preset).params / 1e6 == pytest.approx(paper_params_m, rel=0.015)


def test_aliases_and_unknown_preset():
    assert resolve_vision("ResNet-50").id == "resnet50"
    assert is_vision_model("vit-l16") and not is_vision_model("llama2-70b")
    with pytest.raises(UnknownIdError, match="resnet5"):
        resolve_vision("resnet5")
    with pytest.raises(ScenarioError, match="model.preset"):
        resolve_vision(from_dict({"model": {"kind": "cnn"}}).model)


# ---------------------------------------------------------------- training vs published

# NVIDIA DeepLearningExamples, PyTorch/Classification/ConvNets/resnet50v1.5/README.md,
# "Training performance results" (pytorch-21.03 NGC container), mixed precision:
@pytest.mark.parametrize(("acc", "gpus", "published"), [
    ("a100-sxm4-80gb", 1, 2470),    # DGX A100 (8x A100 80GB), 1 GPU: 2470 img/s
    ("a100-sxm4-80gb", 8, 16621),   # DGX A100, 8 GPUs: 16621 img/s
    ("v100-sxm2-32gb", 1, 1156),    # DGX-1 32GB, 1 GPU: 1156 img/s
    ("v100-sxm2-32gb", 8, 8056),    # DGX-1 32GB, 8 GPUs: 8056 img/s
])
def test_resnet50_training_deeplearningexamples(cat, acc, gpus, published):
    precision = "bf16" if acc.startswith("a100") else "fp16"
    est = estimate_training(training("resnet50", acc, gpus, 1, precision), cat)
    assert est.images_per_s == pytest.approx(published, rel=0.25)


@pytest.mark.parametrize(("preset", "nodes", "published"), [
    ("vit-l16", 4, 5256),  # PaddlePaddle PLSC task/classification/vit README: ViT-L/16 224, 32 A100: 5256 img/s
    ("vit-b16", 1, 3583),  # same table: ViT-B/16 224 pre-training on 8 A100 (N1C8): 3583 img/s
])
def test_vit_training_plsc(cat, preset, nodes, published):
    est = estimate_training(training(preset, "a100-sxm4-40gb", 8, nodes, "bf16"), cat)
    assert est.images_per_s == pytest.approx(published, rel=0.25)


def test_training_days_hand_worked(cat):
    est = estimate_training(training("resnet50", "a100-sxm4-80gb", 8, 1, "bf16", epochs=90), cat)
    assert est.dataset_images == IMAGENET_1K_TRAIN_IMAGES == 1_281_167
    assert est.training_days == pytest.approx(90 * 1_281_167 / est.images_per_s / 86_400)
    # MFU = 3 x 8.18 GFLOP x img/s per GPU / 312 TFLOP/s
    assert est.mfu == pytest.approx(3 * 8.178e9 * est.images_per_s / 8 / 312e12, rel=1e-3)
    d = est.to_dict()
    assert {"images_per_s_per_gpu", "images_per_s", "epoch_time_s", "training_days", "mfu", "findings"} <= set(d)


def test_training_precision_missing_is_a_finding(cat):
    est = estimate_training(training("resnet50", "v100-sxm2-32gb", 8, 1, "bf16"), cat)  # V100: no BF16
    f = {f.code: f for f in est.findings}["training-precision-unsupported"]
    assert f.severity == "error" and "fp16" in f.fix
    assert est.images_per_s is None


def test_gemm_efficiency_override(cat):
    est = estimate_training(training("resnet50", "a100-sxm4-80gb", 1, 1, "bf16", gemm_efficiency=0.4), cat)
    assert est.images_per_s == pytest.approx(312e12 * 0.4 / (3 * 8.178e9), rel=1e-3)


# ---------------------------------------------------------------- inference


def test_resnet50_inference_v100_batch256(cat):
    # DeepLearningExamples README, "Inference performance: NVIDIA DGX-1 (1x V100 16GB)",
    # mixed precision, batch 256: 3382 img/s
    est = estimate_inference("resnet50", cat.accelerator("v100-sxm2-32gb"), precision="fp16", batch_size=256)
    assert est.images_per_s_per_gpu == pytest.approx(3382, rel=0.25)


def test_video_streams(cat):
    est = estimate_inference("resnet50", cat.accelerator("h100-sxm5-80gb"), precision="fp8", batch_size=64,
                             video_fps=30)
    assert est.streams_per_gpu == int(est.images_per_s_per_gpu // 30)
    # 64 images x 8.18 GFLOP / (1978.9 TFLOP/s x 0.2) + 10 ms per batch
    assert est.latency_s == pytest.approx(64 * 8.178e9 / (1978.9e12 * 0.2) + 0.010, rel=1e-3)


def test_inference_bad_input(cat):
    with pytest.raises(ScenarioError, match="batch_size"):
        estimate_inference("resnet50", cat.accelerator("h100-sxm5-80gb"), batch_size=0)
    with pytest.raises(ScenarioError, match="no dense fp8"):
        estimate_inference("resnet50", cat.accelerator("a100-sxm4-80gb"), precision="fp8")


def test_serve_vision_fleet(cat):
    s = from_dict({"model": {"preset": "resnet50"}, "hardware": {"server": "dgx-h100", "nodes": 1},
                   "inference": {"precision": "fp16", "video_streams": 1000, "video_fps": 30, "batch_size": 64}})
    est = serve_vision(s, cat)
    assert est.target_images_per_s == 30_000
    assert est.gpus == -(-30_000 // est.images_per_s_per_gpu)
    with pytest.raises(ScenarioError, match="video_fps"):
        serve_vision(s.replace(inference__video_fps=None), cat)


def test_cli_serve_dispatches_vision(tmp_path, capsys):
    p = tmp_path / "v.yaml"
    p.write_text("model: {preset: vit-b16}\nhardware: {server: dgx-h100, nodes: 1}\n"
                 "inference: {precision: fp8, images_per_s: 10000}\n")
    assert main(["serve", str(p), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["model"] == "ViT-B/16" and out["gpus"] >= 1 and out["images_per_s_per_gpu"] > 0


# ---------------------------------------------------------------- language-model settings on a vision model

def test_language_model_settings_on_a_vision_model_are_findings_naming_them():
    """Keys only a language model reads, set on ResNet-50, each get one warning in words; the
    training stage reports the model and training/parallelism keys, the serving stage the model
    and inference keys, and the design lists the model key once."""
    import re

    import gpucluster_lib

    d = gpucluster_lib.design(from_dict({
        "model": {"preset": "resnet50", "seq_length": 4096},
        "hardware": {"server": "dgx-h100", "nodes": 1},
        "parallelism": {"tensor": 8}, "training": {"framework": "deepspeed", "epochs": 90},
        "inference": {"input_tokens": 2000, "requests_per_s": 5, "images_per_s": 1000, "batch_size": 32}}))

    def ignored(findings):
        return {f.field: f for f in findings if f.code == "workload-setting-ignored"}

    assert set(ignored(d.training.findings)) == {"model.seq_length", "parallelism.tensor", "training.framework"}
    assert set(ignored(d.serving.findings)) == {"model.seq_length", "inference.input_tokens",
                                                "inference.requests_per_s"}
    everything = [f for f in d.findings if f.code == "workload-setting-ignored"]
    assert sorted(f.field for f in everything) == ["inference.input_tokens", "inference.requests_per_s",
                                                   "model.seq_length", "parallelism.tensor", "training.framework"]
    seq = ignored(d.findings)["model.seq_length"]
    assert seq.severity == "warning"
    assert seq.message == ("The sequence length is set, but ResNet-50 (v1.5) is a vision model: only language "
                           "models read it, so it has no effect")
    assert ignored(d.serving.findings)["inference.input_tokens"].message.startswith("The prompt length is set")
    assert ignored(d.training.findings)["parallelism.tensor"].message.startswith("The tensor parallelism (TP) is set")
    for f in everything:  # words, not keys
        assert not re.search(r"\b[a-z]+_[a-z_]+\b|\b[a-z_]+\.[a-z_]+\b", f.message + " " + f.fix), f
    # the settings a vision model reads (epochs, images/s, batch size) are no finding, and its numbers hold
    assert d.serving.batch_size == 32 and d.training.epochs == 90


def test_the_same_settings_on_a_language_model_or_left_unset_are_no_finding():
    import gpucluster_lib

    lm = gpucluster_lib.design(from_dict({
        "model": {"preset": "llama2-7b", "seq_length": 4096}, "hardware": {"server": "dgx-h100", "nodes": 1},
        "parallelism": {"tensor": 8}, "inference": {"input_tokens": 2000, "requests_per_s": 5}}))
    vision = gpucluster_lib.design(from_dict({
        "model": {"preset": "vit-l16"}, "hardware": {"server": "dgx-h100", "nodes": 1},
        "training": {"epochs": 300, "dataset_images": 1.2e6}, "inference": {"images_per_s": 500}}))
    for d in (lm, vision):
        assert [f for f in d.findings if f.code == "workload-setting-ignored"] == []


def test_the_language_model_settings_table_covers_every_architecture_and_plan_key():
    """Every architecture key (but the preset and family a vision model is chosen by) and every
    parallelism key is listed; none that a vision model's stages read is."""
    import dataclasses

    from gpucluster_lib.scenario import InferenceSpec, ModelSpec, ParallelismSpec, TrainingSpec
    from gpucluster_lib.workloads.vision import LANGUAGE_MODEL_SETTINGS as T

    assert set(T["model"]) == {f.name for f in dataclasses.fields(ModelSpec)} - {"preset", "kind"}
    assert set(T["parallelism"]) == {f.name for f in dataclasses.fields(ParallelismSpec)}
    assert set(T["training"]) <= {f.name for f in dataclasses.fields(TrainingSpec)}
    assert set(T["inference"]) <= {f.name for f in dataclasses.fields(InferenceSpec)}
    # read by training/vision.py, inference/vision.py, or by the storage and reliability stages for any model
    assert not set(T["training"]) & {"precision", "gemm_efficiency", "epochs", "dataset_images", "tokens",
                                      "deadline_days"}
    assert not set(T["inference"]) & {"precision", "batch_size", "images_per_s", "video_streams", "video_fps",
                                       "vision_efficiency"}
