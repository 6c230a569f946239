"""The memory model's terms for modern Megatron-Core / NeMo runs, each worked by hand.

Korthikanti et al. 2022 (arXiv:2205.05198) Table 2 counts, per token of a layer, the two norm
inputs (2h each), the QKV and FC1 inputs (2h each), Q, K, V (2h each), the projection input (2h),
the GeLU and FC2 inputs (8h each at f = 4h) and two one-byte dropout masks: 34 s b h. The tests
below take one term away or change it at a time and check the bytes against the arithmetic on
their line.
"""

from __future__ import annotations

import pytest

from gpucluster_lib.errors import ScenarioError
from gpucluster_lib.scenario import ModelSpec
from gpucluster_lib.training.memory import activation_bytes_per_layer
from gpucluster_lib.workloads.transformer import resolve_transformer


def test_no_dropout_mask_is_stored_at_probability_zero():
    # Llama 3 70B (h 8192, 64 heads, 8 KV heads of 128, SwiGLU f 28672; NeMo's LlamaConfig: hidden_dropout 0.0):
    # TP8 with sequence parallelism, selective recomputation, one 8,192-token sequence. Per token:
    # norms' inputs 2h + 2h, QKV and FC1 inputs 2h + 2h (= 8h = 65,536), Q 2q + K 2kv + V 2kv + projection
    # input 2q (4 x 8192 + 4 x 1024 = 36,864), SwiGLU input 4f + FC2 input 2f (6 x 28672 = 172,032), all over 8:
    # (65,536 + 36,864 + 172,032) / 8 = 34,304 B; x 8,192 tokens = 281,018,368 B
    a = resolve_transformer("llama3-70b")
    assert a.hidden_dropout == 0.0 and a.attention_dropout == 0.0
    assert float(activation_bytes_per_layer(a, 1, 8192, 8, True, 1, True)) == pytest.approx(
        281_018_368 + 4 * 64 / 8 * 8192, rel=1e-12)  # + the fused kernel's fp32 log-sum-exp, 4 B x 8 heads per token
    # with Megatron-LM's default hidden dropout 0.1 the two one-byte masks come back: 2h / 8 = 2,048 B per token more
    drop = resolve_transformer(ModelSpec(preset="llama3-70b", hidden_dropout=0.1))
    assert float(activation_bytes_per_layer(drop, 1, 8192, 8, True, 1, True)) - float(
        activation_bytes_per_layer(a, 1, 8192, 8, True, 1, True)) == pytest.approx(2048 * 8192, rel=1e-12)


def test_unfused_attention_scores_without_attention_dropout():
    # Korthikanti Table 2's 5 a s^2 b: softmax output 2 + dropout mask 1 + dropout output 2 bytes per score.
    # Without attention dropout only the softmax output (2 bytes, also the A V input) stays:
    # GPT-3 175B shape (96 heads, s 2048), TP8, no recomputation: 2 x 96 x 2048^2 / 8 = 100,663,296 B per sequence
    # against 5 x 96 x 2048^2 / 8 = 251,658,240 B with it
    gpt = resolve_transformer("gpt3-175b")
    nodrop = resolve_transformer(ModelSpec(preset="gpt3-175b", attention_dropout=0.0))
    with_scores = float(activation_bytes_per_layer(gpt, 1, 2048, 8, True, 0, False))
    without = float(activation_bytes_per_layer(nodrop, 1, 2048, 8, True, 0, False))
    assert with_scores - without == pytest.approx(251_658_240 - 100_663_296, rel=1e-12)


def test_dropout_outside_zero_to_one_is_refused_naming_the_field():
    with pytest.raises(ScenarioError, match="model.hidden_dropout"):
        resolve_transformer(ModelSpec(preset="gpt3-175b", hidden_dropout=1.0))


def test_interleaved_in_flight_chunks_follow_megatron_core_warmup_on_every_stage():
    from gpucluster_lib.training.memory import in_flight_factor

    # Megatron-Core core_v0.8.0 schedules.py: rank i runs (p - i - 1) * 2 + (v - 1) * p warm-up forwards of
    # model chunks, at most m v, then one forward before each backward: min(2 (p-i-1) + (v-1) p + 1, m v) chunks
    # of 1/v of the stage. p = 4, v = 3, m = 8: 15, 13, 11, 9 chunks -> 5, 13/3, 11/3, 3 micro-batches' worth
    got = [float(in_flight_factor(4, 8, 3, i)) for i in range(4)]
    assert got == pytest.approx([5.0, 13 / 3, 11 / 3, 3.0], rel=1e-12)
    # the first stage is Korthikanti's p (1 + (p-1)/(p v)) = 4 x 1.25 = 5 (Sec. 4.2.3); the 1F1B schedule holds
    # min(p - i, m): 4, 3, 2, 1; with m = p = 4 every forward runs first (m v = 12 chunks = 4 micro-batches)
    assert [float(in_flight_factor(4, 8, 1, i)) for i in range(4)] == [4.0, 3.0, 2.0, 1.0]
    assert float(in_flight_factor(4, 4, 3, 0)) == pytest.approx(4.0)
    # "if num_microbatches == pipeline_parallel_size: num_warmup_microbatches = total_num_microbatches": the last
    # stage too holds all 4 x 3 = 12 chunks (the warm-up formula alone would give 2 x 0 + 2 x 4 + 1 = 9)
    assert float(in_flight_factor(4, 4, 3, 3)) == pytest.approx(4.0)


def _llama70(training=None, accelerator="h100-sxm5-80gb", **par):
    from gpucluster_lib.scenario import from_dict

    base = {"tensor": 8, "pipeline": 4, "micro_batch_size": 1, "global_batch_size": 64, "recompute": "selective",
            "sequence_parallel": True, "distributed_optimizer": True}
    return from_dict({"model": {"preset": "llama3-70b"}, "hardware": {"accelerator": accelerator, "nodes": 8},
                      "network": {"inter_node_gbps_per_gpu": 400}, "parallelism": {**base, **par},
                      "training": {"framework": "megatron", **(training or {})}})


def test_fp8_linear_layers_save_one_byte_inputs():
    from gpucluster_lib.training import build_context
    from gpucluster_lib.training.core import layer_memory

    # Transformer Engine v1.10 in FP8 (linear.py saved_inputmat(_t), layernorm_linear.py ln_out uint8): the QKV, FC1
    # and FC2 inputs and the projection input are saved in one byte. Llama 3 70B, TP8 + SP, selective, per token:
    # norms' inputs 2h + 2h, QKV and FC1 inputs h + h (6h = 49,152); Q 2q + K 2kv + V 2kv + projection input q
    # (3 x 8192 + 4 x 1024 = 28,672); SwiGLU input 4f + FC2 input f (5 x 28672 = 143,360): 221,184 / 8 = 27,648 B,
    # x 8,192 tokens = 226,492,416 B (+ the fp32 log-sum-exp, 4 B x 8 heads x 8,192 = 262,144 B)
    ctx = build_context(_llama70({"precision": "fp8"}))[0]
    per_layer, _ = layer_memory(ctx, 1, 8192, 8, True, 1, 28672.0)
    assert float(per_layer) == pytest.approx(226_492_416 + 262_144, rel=1e-12)
    # without recomputation the fused attention kernel keeps its own 16-bit output beside the projection's
    # FP8 copy: 2q / 8 = 2,048 B per token more
    none, _ = layer_memory(ctx, 1, 8192, 8, True, 0, 28672.0)
    assert float(none) - float(per_layer) == pytest.approx(2048 * 8192, rel=1e-12)
    # BF16: 34,304 B per token (test_no_dropout_mask_is_stored_at_probability_zero)
    bf16 = build_context(_llama70())[0]
    assert float(layer_memory(bf16, 1, 8192, 8, True, 1, 28672.0)[0]) == pytest.approx(
        34_304 * 8192 + 262_144, rel=1e-12)


def test_fp8_weight_copies_unless_fp8_primary_weights():
    from gpucluster_lib.training import estimate

    # Transformer Engine keeps an FP8 weight and its transpose (2 B per element) beside each 16-bit GEMM weight
    # (linear.py get_fp8_workspace, cache_name "weight"). Llama 3 70B layer GEMMs: 2 x 8192^2 + 2 x 8192 x 1024
    # + 3 x 8192 x 28672 = 855,638,016; / TP8 = 106,954,752 per GPU; 20 layers on stage 0 of PP4:
    # 20 x 106,954,752 x 2 = 4,278,190,080 B
    fp8 = estimate(_llama70({"precision": "fp8"})).memory_per_gpu_bytes["weights"]
    fp8_params = estimate(_llama70({"precision": "fp8", "fp8_params": True})).memory_per_gpu_bytes["weights"]
    bf16 = estimate(_llama70()).memory_per_gpu_bytes["weights"]
    assert fp8 - fp8_params == pytest.approx(4_278_190_080, rel=1e-12)
    assert fp8_params == pytest.approx(bf16, rel=1e-12)  # one byte plus a one-byte transpose: the 16-bit weight's 2
    # NeMo's FP8 recipes keep FP8 primary weights (v2.3.0 bf16_with_fp8_mixed: fp8_param_gather = True): its default
    nemo = estimate(_llama70({"precision": "fp8", "framework": "nemo"})).memory_per_gpu_bytes["weights"]
    assert nemo == pytest.approx(fp8_params, rel=1e-12)
    # FP8 weights outside FP8 training are a setting with no effect
    est = estimate(_llama70({"fp8_params": True}))
    assert any(f.code == "training-setting-ignored" and f.field == "training.fp8_params" for f in est.findings)


def test_fp8_weights_on_blackwell_take_one_byte_with_per_tensor_scales():
    from gpucluster_lib.training import estimate

    # Blackwell reads FP8 tensors column-wise without a transpose ("Blackwell: supports columnwise access natively,
    # so no transpose is needed", TE performance_considerations.rst; data/training_frameworks.yaml fp8_recipes
    # columnwise_copy blackwell 0 for delayed and current scaling): Transformer Engine's FP8 weight copy, and an FP8
    # primary weight, are 1 byte per element; MXFP8 keeps a row-wise and a column-wise copy with an E8M0 scale per 32
    # elements of each (csrc/quantizer.cpp MXFP8Quantizer::create_tensor): 1 + 1 + 2/32 = 2.0625 bytes. Llama 3 70B on
    # B200, stage 0 of TP8 PP4: 20 x 106,954,752 = 2,139,095,040 GEMM weight elements per GPU
    g = 20 * 106_954_752

    def weights(training):
        return estimate(_llama70(training, "b200-sxm-180gb")).memory_per_gpu_bytes["weights"]

    bf16 = weights({})
    assert weights({"precision": "fp8"}) - bf16 == pytest.approx(1 * g, rel=1e-12)  # delayed scaling: 1-byte copy
    assert weights({"precision": "fp8", "fp8_params": True}) - bf16 == pytest.approx(-1 * g, rel=1e-12)  # 1 for 2
    assert weights({"precision": "fp8", "fp8_recipe": "mxfp8"}) - bf16 == pytest.approx(2.0625 * g, rel=1e-12)
    assert weights({"precision": "fp8", "fp8_recipe": "mxfp8", "fp8_params": True}) - bf16 == pytest.approx(
        0.0625 * g, rel=1e-12)  # 2.0625 in place of 2
    # Hopper keeps the transpose: 2 bytes either way (test above)
    assert estimate(_llama70({"precision": "fp8"})).memory_per_gpu_bytes["weights"] - estimate(
        _llama70()).memory_per_gpu_bytes["weights"] == pytest.approx(2 * g, rel=1e-12)


#: Nemotron-4 340B as NVIDIA's dgxc-benchmarking v24.11.1 nemotron/nemotron4-340b-synth.yaml configures it
#: (96 layers, hidden 18432, FFN 73728 squared-ReLU, 96 heads of 192, 8 query groups, LayerNorm, untied,
#: vocab 256,000, sequence 4096, no dropout) and runs it on 128 H100: TP8 PP8 VP12, DP2, micro-batch 1,
#: batch 32, selective recomputation, sequence parallelism, distributed_fused_adam.
NEMOTRON_340B = {"preset": "llama3-8b", "layers": 96, "hidden_size": 18432, "attention_heads": 96, "kv_heads": 8,
                 "ffn_hidden_size": 73728, "ffn_type": "relu2", "vocab_size": 256000, "seq_length": 4096,
                 "tied_embeddings": False, "norm": "layernorm"}


def _nemotron340(training=None):
    from gpucluster_lib.scenario import from_dict

    return from_dict({"model": NEMOTRON_340B, "hardware": {"accelerator": "h100-sxm5-80gb", "nodes": 16},
                      "network": {"inter_node_gbps_per_gpu": 400},
                      "parallelism": {"tensor": 8, "pipeline": 8, "virtual_stages": 12, "micro_batch_size": 1,
                                      "global_batch_size": 32, "recompute": "selective", "sequence_parallel": True,
                                      "distributed_optimizer": True, "tp_comm_overlap": True},
                      "training": {"framework": "nemo", **(training or {})}})


def test_model_states_follow_the_gradient_buffer_and_the_optimizer_precision():
    from gpucluster_lib.training import estimate

    # stage 0 of the 340B plan: 12 layers of (attention 2 x 18432^2 + 2 x 18432 x 1536 = 736,100,352, squared-ReLU
    # FFN 2 x 18432 x 73728 = 2,717,908,992, two LayerNorms 4 x 18432 = 73,728) / 8 = 431,760,384 and the embedding
    # 256,000 x 18432 / 8 = 589,824,000: 5,770,948,608 parameters per GPU
    p = 12 * 431_760_384 + 589_824_000
    assert p == 5_770_948_608
    # Megatron-Core's default for bf16: fp32 main gradients (grad_reduce_in_fp32), fp32 master + fp32 Adam moments
    # sharded over DP2: 2 + 4 + 12/2 bytes per parameter (theoretical_memory_usage.py's 6 + 12/d)
    m = estimate(_nemotron340()).memory_per_gpu_bytes
    assert (m["weights"], m["gradients"], m["optimizer_states"]) == pytest.approx((2 * p, 4 * p, 6 * p), rel=1e-12)
    # the DGXC yaml's optim: grad_sync_dtype bf16, dtype bf16 -> a bf16 gradient buffer, bf16 moments and, with a
    # bf16 model, no master copy (NeMo v2.0.0 setup_optimization: store_params False when the dtypes match):
    # 2 + 2 + (2 + 2)/2 bytes per parameter
    run = {"grad_reduce_precision": "bf16", "optimizer_state_precision": "bf16", "master_weights": "none"}
    est = estimate(_nemotron340(run))
    m = est.memory_per_gpu_bytes
    assert (m["weights"], m["gradients"], m["optimizer_states"]) == pytest.approx((2 * p, 2 * p, 2 * p), rel=1e-12)
    # activations: per token and layer (8h + 4q + 4kv + 4f) / 8 = (147,456 + 73,728 + 6,144 + 294,912) / 8
    # = 65,280 B, x 4,096 tokens + the log-sum-exp 4 x 12 heads x 4,096 = 267,583,488 B; stage 0 holds
    # min(2 x 7 + 11 x 8 + 1, 16 x 12) = 103 chunks of one layer: 27,561,099,264 B
    assert m["activations"] == pytest.approx(103 * (65_280 * 4096 + 4 * 12 * 4096), rel=1e-12)
    # + 1 GiB context + 0.5 GiB buffers + 5% of (3 x 11,541,897,216 + 27,561,099,264): 66,906,743,193.6 B
    held = 6 * p + 103 * 267_583_488
    assert m["total"] == pytest.approx(held + 1.5 * 2**30 + 0.05 * held, rel=1e-12)
    assert est.fits and m["total"] == pytest.approx(66_906_743_193.6, rel=1e-12)


def test_apex_remainders_and_fp16_gradients():
    from gpucluster_lib.training import estimate

    p = 5_770_948_608
    # NeMo 1.x with a bf16 model and an fp32 optimizer: store_param_remainders, an int16 shard of the low bits
    # (Apex DistributedFusedAdam StateBucket.param_remainders_shard) + fp32 moments: (2 + 8) / 2 per parameter
    m = estimate(_nemotron340({"master_weights": "remainders"})).memory_per_gpu_bytes
    assert m["optimizer_states"] == pytest.approx(5 * p, rel=1e-12)
    # fp16 training: Megatron-LM turns fp32 gradient accumulation on with --bf16 only, so 2-byte gradients
    m = estimate(_nemotron340({"precision": "fp16"})).memory_per_gpu_bytes
    assert m["gradients"] == pytest.approx(2 * p, rel=1e-12)


def test_distributed_saved_activations_split_the_checkpoints_over_the_tensor_ranks():
    # Korthikanti Sec. 4.2.2: full recomputation keeps the layer input, 2 s b h; metaseq's OPT-175B launcher
    # (opt_baselines.py @f7ffa5fd: --checkpoint-activations --distribute-checkpointed-activations, model parallel 8)
    # splits it over the 8 tensor ranks: 2 x 2048 x 8 x 12288 / 8 = 50,331,648 B per layer and micro-batch of 8,
    # against 402,653,184 B held whole
    a = resolve_transformer("gpt3-175b")
    whole = activation_bytes_per_layer(a, 8, 2048, 8, False, 2, False)
    split = activation_bytes_per_layer(a, 8, 2048, 8, False, 2, False, distribute_saved=True)
    assert (float(whole), float(split)) == pytest.approx((402_653_184, 50_331_648), rel=1e-12)


def _gpt175(distribute=True, **par):
    from gpucluster_lib.scenario import from_dict

    base = {"tensor": 8, "pipeline": 1, "micro_batch_size": 8, "global_batch_size": 8, "recompute": "full",
            "sequence_parallel": False}
    return from_dict({"model": {"preset": "gpt3-175b"}, "hardware": {"accelerator": "a100-sxm4-80gb", "nodes": 1},
                      "network": {"inter_node_gbps_per_gpu": 200}, "parallelism": {**base, **par},
                      "training": {"distribute_saved_activations": distribute}})


def test_distribute_saved_activations_through_a_scenario():
    from gpucluster_lib.training import build_context, estimate
    from gpucluster_lib.training.core import layer_memory

    # training.distribute_saved_activations reaches the memory: GPT-3 175B on TP8 without sequence parallelism,
    # micro-batch 8, full recomputation: each layer's saved input 2 x 2048 x 8 x 12288 = 402,653,184 B whole, / 8 =
    # 50,331,648 B split over the tensor ranks (the memory engineer's worked case above)
    on, off = build_context(_gpt175())[0], build_context(_gpt175(False))[0]
    assert on.distribute_saved_activations and not off.distribute_saved_activations
    assert float(layer_memory(on, 8, 2048, 8, False, 2, 49152.0)[0]) == pytest.approx(50_331_648, rel=1e-12)
    assert float(layer_memory(off, 8, 2048, 8, False, 2, 49152.0)[0]) == pytest.approx(402_653_184, rel=1e-12)
    # one pipeline stage, one micro-batch in flight: 96 layers x (402,653,184 - 50,331,648) = 33,822,867,456 B less
    est_on, est_off = estimate(_gpt175()), estimate(_gpt175(False))
    assert est_off.memory_per_gpu_bytes["activations"] - est_on.memory_per_gpu_bytes["activations"] == pytest.approx(
        33_822_867_456, rel=1e-12)
    assert not [f for f in est_on.findings if f.field == "training.distribute_saved_activations"]


@pytest.mark.parametrize(("par", "why"), [
    ({"sequence_parallel": True}, "sequence parallelism already splits them"),
    ({"recompute": "selective"}, "the plan recomputes only the attention, so no layer input is saved for a "
                                 "recomputation"),
    ({"recompute": "none"}, "the plan recomputes nothing, so no layer input is saved for a recomputation"),
    ({"tensor": 1, "pipeline": 8}, "the plan has no tensor parallelism to split them over"),
])
def test_distribute_saved_activations_read_by_nothing_is_a_warning(par, why):
    from gpucluster_lib.training import estimate

    est = estimate(_gpt175(**par))
    (f,) = [f for f in est.findings if f.field == "training.distribute_saved_activations"]
    assert f.code == "training-setting-ignored" and f.severity == "warning"
    assert f.message == ("splitting full recomputation's saved layer inputs over the tensor-parallel ranks is set, "
                         f"but {why}: it has no effect")
    # and it changes nothing
    assert est.memory_per_gpu_bytes == estimate(_gpt175(False, **par)).memory_per_gpu_bytes


@pytest.mark.parametrize(("section", "key", "value", "message"), [
    ("model", "attention_dropout", 1.0, "model.attention_dropout: must be less than 1, got 1"),
    ("model", "attention_dropout", -0.1, "model.attention_dropout: must be at least 0, got -0.1"),
    ("training", "master_weights", "fp16", "training.master_weights: must be one of fp32, bf16, remainders or none, "
                                           "not 'fp16'"),
    ("training", "optimizer_state_precision", "fp8", "training.optimizer_state_precision: must be one of fp32 or "
                                                     "bf16, not 'fp8'"),
    ("training", "optimizer_state_precision", False, "training.optimizer_state_precision: must be one of fp32 or "
                                                     "bf16, not false"),
])
def test_bad_dropout_and_optimizer_precisions_are_refused_naming_the_field(section, key, value, message):
    import re

    from gpucluster_lib.scenario import from_dict

    d = {"model": {"preset": "gpt3-175b"}, "training": {}}
    d[section][key] = value
    with pytest.raises(ScenarioError, match="^" + re.escape(message)):
        resolve_transformer(from_dict({"name": "bad value", **d}).model)


def test_last_stage_of_an_interleaved_pipeline_against_megatron_lm_measured_peak():
    from gpucluster_lib.scenario import from_dict
    from gpucluster_lib.training import estimate

    # Megatron-LM functional test gpt3_mcore_te_tp1_pp4_vp1_dist_optimizer_overlap_grad_reduce_param_gather_overlap_
    # optimizer (model_config.yaml: 12 layers, hidden 512, 8 heads, micro-batch 4, batch 32, sequence 1024, TP1
    # PP4, one layer per virtual stage, distributed optimizer, bf16, unfused attention, default dropout 0.1;
    # tests/test_utils/recipes/h100/gpt.yaml: 1 node of 8 GPUs, so DP2 and 4 micro-batches) logs
    # mem-max-allocated-bytes 3,942,493,696 (golden_values_dev_dgx_h100.json, iterations 2-50) from the last rank
    # (global_vars.py: the tensorboard writer is rank world_size - 1), the last pipeline stage.
    # By hand: 4 micro-batches = 4 stages, so every forward runs first: 12 chunks of one layer, Korthikanti
    # s b h (34 + 5 a s / h) = 1024 x 4 x 512 x (34 + 80) = 239,075,328 B each (2,868,903,936); fp32 logits
    # 4 x 4 x 1024 x 50,304 = 824,180,736; 3 layers (3,152,384 each) + the tied output copy 50,304 x 512 + final
    # LayerNorm 1,024 = 35,213,824 parameters x (2 + 4 + 12/2) = 422,565,888: 4,115,650,560 B, 4.4% above the measure
    # (the earlier count, min(p - i, m) x (1 + (p-1)/(p v)) = 1.25 micro-batches on the last stage and 16-bit
    # gradients, gave 2,072,851,456 B, 47% below)
    sc = from_dict({"model": {"preset": "gpt3-175b", "layers": 12, "hidden_size": 512, "attention_heads": 8,
                              "kv_heads": 8, "ffn_hidden_size": 2048, "vocab_size": 50304, "seq_length": 1024},
                    "hardware": {"accelerator": "h100-sxm5-80gb", "nodes": 1}, "network": {"inter_node_gbps_per_gpu": 400},
                    "parallelism": {"tensor": 1, "pipeline": 4, "virtual_stages": 3, "micro_batch_size": 4,
                                    "global_batch_size": 32, "recompute": "none", "distributed_optimizer": True},
                    "training": {"flash_attention": False, "framework": "megatron"}})
    est = estimate(sc)
    m = est.memory_per_gpu_bytes
    held = m["total"] - m["other"]
    assert est.to_dict()["pipeline"]["memory_stage"] == 3
    assert held == pytest.approx(12 * 239_075_328 + 824_180_736 + 35_213_824 * 12, rel=1e-9)
    assert held / 3_942_493_696 - 1 == pytest.approx(0.044, abs=0.005)


def _megatron_7b(tp, pp, vp, mb, vocab):
    from gpucluster_lib.scenario import from_dict

    par = {"tensor": tp, "pipeline": pp, "micro_batch_size": mb, "global_batch_size": 8, "recompute": "none",
           "distributed_optimizer": True, "sequence_parallel": False, **({"virtual_stages": vp} if vp > 1 else {})}
    return from_dict({"model": {"preset": "gpt3-175b", "layers": 32, "hidden_size": 4096, "attention_heads": 32,
                                "kv_heads": 8, "ffn_hidden_size": 16384, "vocab_size": vocab, "seq_length": 8192,
                                "tied_embeddings": False},
                      "hardware": {"accelerator": "h100-sxm5-80gb", "nodes": 1},
                      "network": {"inter_node_gbps_per_gpu": 400}, "parallelism": par,
                      "training": {"framework": "megatron"}})


def test_megatron_lm_7b_memory_tests_measured_on_h100():
    from gpucluster_lib.training import estimate

    # Megatron-LM tests/functional_tests/test_cases/gpt/gpt3_7b_tp4_pp1_memory_speed (model_config.yaml: 32 layers,
    # hidden 4096, 32 heads, 8 query groups, untied, vocab 131,073 (padded to 131,584 for TP4), sequence 8192,
    # micro-batch 2, batch 8, TP4 PP1, distributed optimizer, bf16, Megatron's defaults: GeLU FFN 4h, biases,
    # LayerNorm, learned positions, dropout 0.1, no sequence parallelism; 1 node of 8 GPUs: DP2, 2 micro-batches),
    # golden_values_dev_dgx_h100.json (6e091e1b68): mem-allocated-bytes 20,663,519,232 after a step,
    # mem-max-allocated-bytes 57,143,791,616.
    # By hand: per GPU 32 layers x 176,207,872 / 4 + embedding and output 2 x 131,584 x 4096 / 4 + positions
    # 8192 x 4096 + final norm 2 x 4096 / 4 = 1,712,703,488 parameters x (2 + 4 + 12/2) = 20,552,441,856 B (-0.5%);
    # activations per layer (10h + (4q + 4kv + 4f)/4) x 16,384 tokens + the log-sum-exp = 1,023,934,464 B, x 32
    # layers + fp32 logits 4 x 16,384 x 131,584 / 4 = 34,921,775,104 B: 55,474,216,960 B in all, -2.9%
    m = estimate(_megatron_7b(4, 1, 1, 2, 131584)).memory_per_gpu_bytes
    states = m["weights"] + m["gradients"] + m["optimizer_states"]
    assert states == pytest.approx(1_712_703_488 * 12, rel=1e-12)
    assert m["activations"] == pytest.approx(32 * 1_023_934_464 + 2_155_872_256, rel=1e-12)
    assert states / 20_663_519_232 - 1 == pytest.approx(-0.005, abs=0.003)
    assert (m["total"] - m["other"]) / 57_143_791_616 - 1 == pytest.approx(-0.029, abs=0.003)
    # gpt3_7b_tp1_pp4_memory_speed: the same model at TP1 PP4, one layer per virtual stage (v = 8), micro-batch 1,
    # DP2, 4 micro-batches = 4 stages: every stage holds all 4 x 8 layers' activations; the last rank (the last
    # stage, with the output layer and the logits) logs mem-max-allocated-bytes 60,720,852,992: the model +0.4%
    est = estimate(_megatron_7b(1, 4, 8, 1, 131200))
    m = est.memory_per_gpu_bytes
    assert est.to_dict()["pipeline"]["memory_stage"] == 3
    assert (m["total"] - m["other"]) / 60_720_852_992 - 1 == pytest.approx(0.004, abs=0.003)
