"""Training-time engine: parameter counts, FLOPs, memory, bubble, search, CLI contract, bad input.

Expected values are published figures or worked by hand from the cited formula; the
source is on each line.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gpucluster_lib.errors import ScenarioError, UnknownIdError
from gpucluster_lib.scenario import from_dict, load_scenario
from gpucluster_lib.training import estimate, min_gpus_for_deadline, search_plans
from gpucluster_lib.training import flops as fl
from gpucluster_lib.training.comm import ring_allgather_s, ring_allreduce_s
from gpucluster_lib.training.memory import (
    activation_bytes_per_layer,
    in_flight_factor,
    model_state_bytes,
)
from gpucluster_lib.workloads.transformer import resolve_transformer

ROOT = Path(__file__).resolve().parent.parent
GPT3 = ROOT / "gpucluster_lib" / "data" / "scenarios" / "gpt3-175b-1024-a100.yaml"
LLAMA70 = ROOT / "gpucluster_lib" / "data" / "scenarios" / "llama3-70b-512-h100.yaml"


def scen(**sections):
    base = {"model": {"preset": "gpt3-175b"}, "hardware": {"accelerator": "a100-sxm4-80gb", "nodes": 128},
            "network": {"inter_node_gbps_per_gpu": 200},
            "parallelism": {"tensor": 8, "pipeline": 8, "micro_batch_size": 1, "global_batch_size": 1536,
                            "recompute": "full"},
            "training": {"tokens": 3.0e11}}
    for k, v in sections.items():
        base[k] = {**base.get(k, {}), **v} if isinstance(v, dict) else v
    return from_dict(base)


# ----------------------------------------------------------------------------- parameters


@pytest.mark.parametrize("preset, published, rel", [
    ("gpt3-175b", 174.6e9, 0.001),        # Narayanan 2021 Table 2 / Brown 2020: 174.6B (V = 51,200)
    ("megatron-1t", 1008.0e9, 0.001),     # Narayanan 2021 Table 1: 1008.0B
    ("megatron-529.6b", 529.6e9, 0.001),  # Narayanan 2021 Table 1: 529.6B
    ("megatron-145.6b", 145.6e9, 0.001),  # Narayanan 2021 Table 1: 145.6B
    ("megatron-1.7b", 1.7e9, 0.03),       # Table 1 rounds 1.65B to "1.7B"
    ("llama2-7b", 6_738_415_616, 1e-6),   # meta-llama/Llama-2-7b-hf: 6,738,415,616
    ("llama2-13b", 13_015_864_320, 1e-6),  # meta-llama/Llama-2-13b-hf: 13,015,864,320
    ("llama2-70b", 68_976_648_192, 1e-6),  # meta-llama/Llama-2-70b-hf: 68,976,648,192
    ("llama3-8b", 8_030_261_248, 1e-6),   # meta-llama/Meta-Llama-3-8B: 8,030,261,248
    ("llama3-70b", 70_553_706_496, 1e-6),  # meta-llama/Meta-Llama-3-70B: 70,553,706,496
    ("llama3-405b", 405_853_388_800, 1e-6),  # meta-llama/Llama-3.1-405B: 405,853,388,800
    ("bloom-176b", 176_247_271_424, 1e-6),  # bigscience/bloom: 176,247,271,424 (embedding LayerNorm 28,672 not modelled)
    ("deepseek-v3", 671e9, 0.002),        # DeepSeek-V3 report Sec. 4.2: 671B total (excl. 14B MTP)
    ("mixtral-8x7b", 46.7e9, 0.002),      # Jiang 2024: 46.7B total
    ("bert-large", 335_141_888, 0.005),   # bert-large-uncased 335,141,888 incl. pooler (~1M) not modelled
])
def test_parameter_counts_match_published(preset, published, rel):
    assert resolve_transformer(preset).total_params() == pytest.approx(published, rel=rel)


@pytest.mark.parametrize("preset, active, rel", [
    ("deepseek-v3", 37e9, 0.02),     # DeepSeek-V3 report: 37B activated per token
    ("mixtral-8x7b", 12.9e9, 0.005),  # Jiang 2024: 12.9B active (13B)
])
def test_moe_active_parameters(preset, active, rel):
    assert resolve_transformer(preset).active_params() == pytest.approx(active, rel=rel)


def test_megatron_param_formula_by_hand():
    # Narayanan 2021 Sec. 5.1: P = 12 l h^2 (1 + 13/(12h) + (V+s)/(12 nl h)); 1T: nl=128, h=25600
    nl, h, V, s = 128, 25600, 51200, 2048
    p = 12 * nl * h**2 * (1 + 13 / (12 * h) + (V + s) / (12 * nl * h))
    # our count adds the final LayerNorm (2h) which the formula leaves out
    assert resolve_transformer("megatron-1t").total_params() == pytest.approx(p + 2 * h, rel=1e-9)


def test_mla_kv_cache_is_the_latent():
    # DeepSeek-V2 Sec. 2.1.2: cache (d_c + d_h^R) nl elements per token = (512 + 64) x 61
    assert resolve_transformer("deepseek-v3").kv_cache_bytes_per_token(2) == 61 * 576 * 2


# ----------------------------------------------------------------------------- FLOPs


def test_hardware_flops_equal_narayanan_eq3_by_hand():
    a = resolve_transformer("gpt3-175b")
    B, s, nl, h, V = 1536, 2048, 96, 12288, 51200
    eq3 = 96 * B * s * nl * h**2 * (1 + s / (6 * h) + V / (16 * nl * h))  # Narayanan 2021 Eq. 3
    assert fl.hardware_flops_per_token(a, "full") * B * s == pytest.approx(eq3, rel=1e-9)


def test_model_flops_equal_korthikanti_by_hand():
    a = resolve_transformer("megatron-1t")
    B, s, nl, h, V = 3072, 2048, 128, 25600, 51200
    model = 72 * B * s * nl * h**2 * (1 + s / (6 * h) + V / (12 * nl * h))  # Korthikanti 2022 model FLOPs
    assert fl.model_flops_per_token(a) * B * s == pytest.approx(model, rel=1e-9)


def test_selective_recompute_adds_only_attention_scores():
    a = resolve_transformer("gpt3-175b")
    s, nl, h = 2048, 96, 12288
    # Korthikanti 2022 Sec. 5: selective recomputes Q K^T and A V forward, 4 s^2 h per layer per sequence
    assert fl.recompute_flops_per_token(a, "selective") == pytest.approx(4 * s * h * nl, rel=1e-12)


def test_paper_training_days_formula():
    # Narayanan 2021 Sec. 5.1: 8 T P / (n X) = 8 * 300e9 * 174.6e9 / (1024 * 140e12) s ~ 34 days
    days = 8 * 300e9 * 174.6e9 / (1024 * 140e12) / 86400
    assert days == pytest.approx(34, abs=1)
    est = estimate(load_scenario(GPT3))
    assert 25 < est.training_days < 40  # same model and cluster, our own efficiency model


# ----------------------------------------------------------------------------- memory


def test_zero_model_states_match_rajbhandari_figure1():
    psi, nd = 7.5e9, 64  # ZeRO Fig. 1: Psi = 7.5B, N_d = 64, K = 12
    total = {z: sum(model_state_bytes(psi, nd, z).values()) / 1e9 for z in range(4)}
    assert total[0] == pytest.approx(120, rel=1e-3)  # (2 + 2 + K) Psi = 120 GB
    assert total[1] == pytest.approx(31.4, rel=2e-3)  # 2Psi + 2Psi + K Psi / N_d = 31.4 GB
    assert total[2] == pytest.approx(16.6, rel=3e-3)  # 2Psi + (2 + K) Psi / N_d = 16.6 GB
    assert total[3] == pytest.approx(1.9, abs=0.03)  # (2 + 2 + K) Psi / N_d = 1.875, printed as 1.9 GB


@pytest.mark.parametrize("tp, sp, rc, coef", [
    (1, False, 0, lambda a, s, h, t: 34 + 5 * a * s / h),            # Korthikanti Table 2, no parallelism
    (8, False, 0, lambda a, s, h, t: 10 + 24 / t + 5 * a * s / (h * t)),  # tensor parallel
    (8, True, 0, lambda a, s, h, t: 34 / t + 5 * a * s / (h * t)),   # tensor + sequence parallel
    (8, True, 1, lambda a, s, h, t: 34 / t),                          # + selective recomputation
    (8, False, 1, lambda a, s, h, t: 10 + 24 / t),                    # tensor parallel + selective
])
def test_activation_memory_matches_korthikanti_table2(tp, sp, rc, coef):
    a = resolve_transformer("gpt3-175b")
    s, h, heads, b = 2048, 12288, 96, 1
    got = activation_bytes_per_layer(a, b, s, tp, sp, rc, False)
    assert float(got) == pytest.approx(s * b * h * coef(heads, s, h, tp), rel=1e-9)


def test_full_recompute_keeps_layer_inputs_only():
    a = resolve_transformer("gpt3-175b")
    # Korthikanti 2022 Sec. 4.2.2: full recomputation stores 2 s b h per layer
    assert float(activation_bytes_per_layer(a, 1, 2048, 8, False, 2, False)) == 2 * 2048 * 12288


def test_interleaved_in_flight_factor():
    # Korthikanti 2022 Sec. 4.2.3: first stage holds p micro-batches x (1 + (p-1)/(p v))
    assert float(in_flight_factor(8, 96, 2)) == pytest.approx(8 * (1 + 7 / 16))
    assert float(in_flight_factor(8, 4, 1)) == 4  # fewer micro-batches than stages


def test_plan_that_does_not_fit_is_a_finding():
    s = scen(model={"preset": "llama2-70b"}, hardware={"nodes": 1},
             parallelism={"tensor": 1, "pipeline": 1, "global_batch_size": 8, "recompute": "none", "zero_stage": 0})
    est = estimate(s)
    assert not est.fits
    # 70B params x 16 bytes (ZeRO Sec. 3.1) = 1,104 GB >> 80 GiB
    assert est.memory_per_gpu_bytes["optimizer_states"] == pytest.approx(68_976_648_192 * 12, rel=0.01)
    f = [x for x in est.findings if x.code == "training-memory-exceeded"]
    assert f and f[0].severity == "error" and "GiB" in f[0].message
    # the parts are named as the memory chart names them, not by their keys
    assert "optimizer states 77" in f[0].message and "optimizer_states" not in f[0].message  # 827.7e9 B = 770.9 GiB


# ----------------------------------------------------------------------------- time


def test_ring_collectives_by_hand():
    # Thakur 2005: 2 (n-1)/n S/B; 8 ranks, 1 GB at 100 GB/s, no latency = 17.5 ms
    assert float(ring_allreduce_s(1e9, 8, 100e9, 0.0)) == pytest.approx(2 * 7 / 8 * 1e9 / 100e9)
    assert float(ring_allgather_s(1e9, 8, 100e9, 1e-5)) == pytest.approx(7 / 8 * 1e-2 + 7e-5)
    assert float(ring_allreduce_s(1e9, 1, 100e9, 1e-5)) == 0.0


def test_pipeline_bubble_fraction():
    est = estimate(scen(parallelism={"virtual_stages": 2}))
    b = est.time_breakdown_s
    t = est.stages["stage_time_per_micro_batch_s"]
    m, v = 96, 2  # 1536 sequences / (DP16 x mb1); two model chunks per GPU
    # interleaved 1F1B with unequal stages: T = m max t_i + (sum t_i - max t_i) / v; for equal stages this is
    # Narayanan 2021 Sec. 2.2.2's t (m + (p-1)/v), i.e. bubble / ideal = (p - 1) / (v m) = 7 / (2 x 96)
    assert b["bubble"] == pytest.approx((sum(t) - max(t)) / v, rel=1e-9)
    assert b["bubble"] / (m * max(t)) < 7 / (v * m)  # the output layer (last stage only) is no longer in the bubble
    assert b["bubble"] / (m * t[1]) == pytest.approx(7 / (v * m), rel=0.05)  # middle stages: no embedding/output
    est1 = estimate(scen(parallelism={"virtual_stages": 1}))
    assert est1.time_breakdown_s["bubble"] > est.time_breakdown_s["bubble"]


def test_mfu_definition():
    est = estimate(load_scenario(GPT3))
    a = resolve_transformer("gpt3-175b")
    # PaLM App. B: MFU = model FLOP/s / (GPUs x peak); A100 bf16 peak 312 TFLOP/s
    assert est.mfu == pytest.approx(fl.model_flops_per_token(a) * est.tokens_per_s / (1024 * 312e12), rel=1e-9)
    assert est.hfu == pytest.approx(est.mfu * 4 * 96 * 12288**2 * (1 + 2048 / (6 * 12288) + 51200 / (16 * 96 * 12288))
                                    / (3 * 96 * 12288**2 * (1 + 2048 / (6 * 12288) + 51200 / (12 * 96 * 12288))),
                                    rel=1e-6)  # Eq. 3 / Korthikanti model FLOPs
    assert 0 < est.mfu < est.hfu < 1


def test_more_bandwidth_is_not_slower_and_dp_costs_time():
    slow = estimate(scen(network={"inter_node_gbps_per_gpu": 25}))
    fast = estimate(scen(network={"inter_node_gbps_per_gpu": 400}))
    assert fast.step_time_s < slow.step_time_s
    assert slow.time_breakdown_s["dp_comm"] > fast.time_breakdown_s["dp_comm"]


def test_flash_attention_is_faster_than_unfused():
    fused = estimate(scen(training={"flash_attention": True}))
    unfused = estimate(scen(training={"flash_attention": False}))
    assert fused.step_time_s < unfused.step_time_s


def test_overrides_are_visible_in_assumptions():
    est = estimate(scen(training={"gemm_efficiency": 0.5, "efficiency": {"step_overhead": 0.1}}))
    eff = est.assumptions["efficiency"]
    assert eff["gemm_efficiency"] == 0.5 and eff["step_overhead"] == 0.1
    assert est.step_time_s > estimate(scen()).step_time_s


def test_moe_plan_with_expert_parallel():
    s = scen(model={"preset": "mixtral-8x7b", "seq_length": 4096}, hardware={"nodes": 8},
             parallelism={"tensor": 2, "pipeline": 1, "expert": 8, "global_batch_size": 512, "recompute": "selective",
                          "zero_stage": 1})
    est = estimate(s)
    assert est.time_breakdown_s["ep_comm"] > 0
    # active params drive the FLOPs: model FLOPs per token ~ 6 x 12.9B (PaLM App. B) plus attention
    a = resolve_transformer(s.model)
    assert fl.model_flops_per_token(a) == pytest.approx(6 * a.active_params(), rel=0.15)


# ----------------------------------------------------------------------------- search


def test_search_returns_valid_fitting_plans_ranked():
    s = load_scenario(LLAMA70)
    res = search_plans(s)
    t = res.table
    assert res.enumerated >= len(t) > 100 and res.fitting >= int(t["fits"].sum())
    assert (t["tp"] * t["pp"] * t["dp"] * t["cp"] == 512).all()
    assert (64 % t["tp"] == 0).all() and (8 % t["tp"] == 0).all() and (80 % t["pp"] == 0).all()
    assert (t["gbs"] % (t["dp"] * t["mb"]) == 0).all()
    fit = t[t["fits"]]
    assert fit["tokens_per_s"].is_monotonic_decreasing
    assert (t.loc[~t["fits"], "reason"].str.contains("GiB")).all()
    est = estimate(s)
    assert est.searched and est.fits and est.plan == res.best


def test_search_is_at_least_as_good_as_the_paper_plan():
    manual = estimate(load_scenario(GPT3))
    auto = estimate(load_scenario(GPT3).replace(parallelism={"auto": True, "global_batch_size": 1536}))
    assert auto.tokens_per_s >= manual.tokens_per_s * 0.999


def test_search_keeps_fixed_fields():
    s = load_scenario(LLAMA70).replace(parallelism__tensor=8, parallelism__recompute="full")
    t = search_plans(s).table
    assert set(t["tp"]) == {8} and set(t["rc"]) == {2}


def test_min_gpus_for_deadline():
    s = load_scenario(LLAMA70)
    base = estimate(s).training_days
    r = min_gpus_for_deadline(s, deadline_days=base / 1.5)
    assert r["gpus"] > 512 and r["training_days"] <= base / 1.5
    smaller = min_gpus_for_deadline(s, deadline_days=base * 3)
    assert smaller["gpus"] < r["gpus"]


# ----------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("changes, match", [
    ({"parallelism": {"tensor": 5}}, r"parallelism.tensor: 5 does not divide the model's 96 attention heads; valid: 1, 2, 3"),
    ({"model": {"preset": "llama2-70b"}, "parallelism": {"tensor": 16, "pipeline": 1}},
     r"parallelism.tensor: 16 does not divide the model's 8 KV heads"),
    ({"parallelism": {"pipeline": 8, "pipeline_layers": [12] * 7}}, r"parallelism.pipeline_layers: gives 7 stages"),
    ({"parallelism": {"pipeline": 8, "pipeline_layers": [13] * 8}},
     r"parallelism.pipeline_layers: .* adding up to the model's 96 layers; they add up to 104"),
    ({"parallelism": {"pipeline": 8, "virtual_stages": 8, "first_stage_layers": 6}},
     r"parallelism.virtual_stages: 8 model chunks per stage need every stage's layers to split into 8 "
     r"equal chunks.*stages of 6 to 13 layers \(first 6, last 12\) allow 1;"),
    ({"parallelism": {"tensor": 1, "pipeline": 8, "tp_comm_overlap": True}}, r"parallelism.tp_comm_overlap: needs tensor parallelism .*; raise the tensor parallelism to 2 or more"),
    ({"parallelism": {"global_batch_size": 1000}}, r"parallelism.global_batch_size: 1000 is not divisible by data"),
    ({"hardware": {"nodes": 3}, "parallelism": {"pipeline": 16}}, r"parallelism: 24 GPUs are not divisible by"),
    ({"parallelism": {"data": 4}}, r"parallelism.data: .* not the 1024 GPUs"),
    ({"parallelism": {"pipeline": 1, "virtual_stages": 2}}, r"parallelism.virtual_stages: 2 needs a pipeline of 2 or more stages"),
    ({"parallelism": {"virtual_stages": 5}}, r"parallelism.virtual_stages: 5 does not divide the 12 layers"),
    ({"parallelism": {"expert": 2}}, r"parallelism.expert: 2 needs a mixture-of-experts model"),
    ({"model": {"preset": "mixtral-8x7b"}, "parallelism": {"tensor": 1, "pipeline": 1, "expert": 3}},
     r"parallelism.expert: 3 does not divide the model's 8 experts"),
    ({"parallelism": {"context": 3}}, r"parallelism.context: 3 does not divide the sequence length of 2048 tokens"),
    ({"training": {"precision": "fp8"}}, r"training.precision: a100-sxm4-80gb has no dense fp8 peak"),
    ({"training": {"efficiency": {"gemm_eff": 0.5}}}, r"training.efficiency.gemm_eff: unknown efficiency parameter"),
])
def test_bad_plan_raises_named_error(changes, match):
    with pytest.raises(ScenarioError, match=match):
        estimate(scen(**changes))


def test_unknown_preset_and_accelerator():
    with pytest.raises(UnknownIdError, match=r"model.preset: unknown model preset 'gpt3-17b'; did you mean 'gpt3-175b'"):
        estimate(scen(model={"preset": "gpt3-17b"}))
    with pytest.raises(UnknownIdError, match=r"hardware.accelerator: unknown accelerator 'a100-sxm4-81gb'"):
        estimate(scen(hardware={"accelerator": "a100-sxm4-81gb"}))


@pytest.mark.parametrize("section, key, value, match", [
    ("model", "layers", 0, r"model.layers: must be a positive integer, got 0"),
    ("parallelism", "micro_batch_size", -1, r"parallelism.micro_batch_size: must be a positive integer, got -1"),
    ("training", "tokens", -5.0, r"training.tokens: must be a positive number"),
    ("hardware", "nodes", 0, r"hardware.nodes: must be a positive integer"),
])
def test_zero_or_negative_sizes(section, key, value, match):
    with pytest.raises(ScenarioError, match=match):
        scen(**{section: {key: value}})


def test_vision_kind_needs_a_vision_preset():
    with pytest.raises(ScenarioError, match=r"model.preset: a vision model needs model.preset, one of: resnet50, "):
        estimate(scen(model={"preset": None, "kind": "cnn"}))


def test_deadline_needs_tokens():
    s = scen(training={"tokens": None, "deadline_days": 10})
    with pytest.raises(ScenarioError, match=r"training.tokens: give the token budget"):
        min_gpus_for_deadline(s)


# ----------------------------------------------------------------------------- CLI contract


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "gpucluster_lib", "estimate", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)


def test_cli_json_contract():
    r = _cli(str(GPT3.relative_to(ROOT)), "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    for k in ("step_time_s", "tokens_per_s", "model_tflops_per_gpu", "hardware_tflops_per_gpu", "mfu", "hfu",
              "memory_per_gpu_bytes", "fits", "time_breakdown_s", "training_days", "plan", "findings"):
        assert k in d, k
    assert set(d["memory_per_gpu_bytes"]) == {"weights", "gradients", "optimizer_states", "gather_buffers",
                                              "unreduced_gradients", "activations", "other",
                                              "total"}
    m = d["memory_per_gpu_bytes"]
    assert m["total"] == pytest.approx(sum(v for k, v in m.items() if k != "total"))
    assert isinstance(d["fits"], bool) and 0 < d["mfu"] < d["hfu"] < 1
    assert d["plan"]["tensor"] == 8 and d["plan"]["pipeline"] == 8 and d["plan"]["data"] == 16
    # tokens/s x step time = global batch tokens = 1536 x 2048
    assert d["tokens_per_s"] * d["step_time_s"] == pytest.approx(1536 * 2048)
    assert d["training_days"] == pytest.approx(3e11 / d["tokens_per_s"] / 86400)
    assert all({"code", "severity", "message"} <= set(f) for f in d["findings"])
    assert sum(d["time_breakdown_s"].values()) == pytest.approx(d["step_time_s"])


def test_cli_bad_input_exits_2_with_one_line(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("model: {preset: gpt3-175b}\nhardware: {accelerator: a100-sxm4-80gb, nodes: 128}\n"
                   "parallelism: {tensor: 5}\n")
    r = _cli(str(bad), "--json")
    assert r.returncode == 2
    assert r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "parallelism.tensor" in lines[0] and "Traceback" not in r.stderr


def test_training_days_none_without_tokens():
    est = estimate(scen(training={"tokens": None}))
    assert est.training_days is None and est.to_dict()["training_days"] is None
    assert any(f.code == "training-no-token-budget" for f in est.findings)


def test_arrays_and_single_plan_agree():
    s = load_scenario(LLAMA70)
    res = search_plans(s)
    row = res.table.iloc[3]
    from gpucluster_lib.training.plans import plan_from_codes
    single = estimate(s.replace(parallelism={**plan_from_codes(row.to_dict()).to_dict()}))
    assert single.step_time_s == pytest.approx(float(row["step_time_s"]), rel=1e-12)
    assert np.isfinite(res.table["step_time_s"]).all()


def test_nvlink_domain_from_the_catalogue():
    from gpucluster_lib.catalog import load_catalog
    from gpucluster_lib.training.estimate import nvlink_domain

    cat = load_catalog()
    assert nvlink_domain(cat.accelerator("gb200-gpu-186gb"), 4) == 72  # GB200 NVL72: 72-GPU NVLink domain
    assert nvlink_domain(cat.accelerator("h100-nvl-94gb"), 8) == 2  # H100 NVL: NVLink bridge pairs
    assert nvlink_domain(cat.accelerator("h100-sxm5-80gb"), 8) == 8  # HGX H100: NVSwitch across the 8 GPUs


def test_tp_across_nodes_is_a_warning_not_an_error():
    est = estimate(scen(parallelism={"tensor": 16, "pipeline": 4, "allow_tp_across_nodes": True}))
    f = [x for x in est.findings if x.code == "training-tp-across-nodes"]
    assert f and f[0].severity == "warning"
    assert est.time_breakdown_s["tp_comm"] > estimate(scen(parallelism={"pipeline": 8})).time_breakdown_s["tp_comm"]


def test_vision_preset_is_dispatched_to_the_vision_module():
    s = from_dict({"model": {"preset": "resnet50"}, "hardware": {"accelerator": "a100-sxm4-80gb", "nodes": 1},
                   "training": {"epochs": 90}})
    d = estimate(s).to_dict()
    assert d["model"].startswith("ResNet-50") and d["epochs"] == 90 and d["training_days"] > 0


def test_mfu_above_the_published_ceiling_is_flagged():
    """MosaicML llm-foundry: best published training MFU 64.23% (MPT-7B, 8x A100 80GB): estimates
    above 65% carry a warning, estimates below do not."""
    from pathlib import Path

    from gpucluster_lib.training import estimate
    from gpucluster_lib.training.estimate import MFU_PUBLISHED_CEILING
    from gpucluster_lib.workloads.checkpoint import has_transformer

    assert MFU_PUBLISHED_CEILING == 0.65
    seen = set()
    for path in sorted((Path(__file__).resolve().parent.parent / "gpucluster_lib" / "data" / "scenarios").glob("*.yaml")):
        sc = load_scenario(path)
        if not has_transformer(sc):  # a facility-only example has no model to train
            continue
        est = estimate(sc)
        flagged = any(f.code == "training-mfu-above-published" for f in est.findings)
        assert flagged == (est.mfu > 0.65), path.name
        seen.add(flagged)
    assert seen == {True, False}  # the examples exercise both branches


def test_plan_ranking_ties_go_to_the_earlier_plan():
    # two plans with the same tokens/s and memory (indices 5 and 6 of 200 enumerated plans): the earlier in
    # enumeration order ranks first, whether the table keeps the best 50 or every plan
    from gpucluster_lib.training.estimate import _top

    tps, mem, fits = np.full(200, 1.0), np.full(200, 10.0), np.ones(200, dtype=bool)
    tps[[5, 6]] = 5.0
    tps[100:110] = 4.0
    assert list(_top(fits, tps, mem, 50)[:3]) == [5, 6, 100]
    assert list(_top(fits, tps, mem, None)[:3]) == [5, 6, 100]
    # a cut through tying plans keeps the earlier ones: the best one alone is plan 5, and the best 50 are the
    # first 50 of the full ranking (5, 6, 100..109, then the plans at 1.0 from index 0 on)
    assert list(_top(fits, tps, mem, 1)) == [5]
    assert list(_top(fits, tps, mem, 50)) == list(_top(fits, tps, mem, None)[:50])
    assert list(_top(fits, tps, mem, 50)[12:15]) == [0, 1, 2]
    # Llama 3 70B on 512 H100: TP4 PP2 DP64 without recomputation ties with selective recomputation (free beside
    # a fused attention kernel, same memory); "none" is enumerated first and wins in both searches
    s = load_scenario(LLAMA70)
    best50, best_all = (search_plans(s, limit=n).table.iloc[:2] for n in (50, None))
    for t in (best50, best_all):
        assert list(t["recompute"]) == ["none", "selective"]
        assert t["tokens_per_s"].iloc[0] == t["tokens_per_s"].iloc[1]
        assert t["memory_gib"].iloc[0] == t["memory_gib"].iloc[1]
    assert best50.iloc[0].equals(best_all.iloc[0])


def test_fused_cross_entropy_bytes_per_logit_by_framework():
    """The fused losses the other frameworks run, counted per logit of the GPU's vocabulary shard, forward +
    backward (data/training_frameworks.yaml cross_entropy_losses, where each line names its source)."""
    import dataclasses

    from gpucluster_lib.training import validation
    from gpucluster_lib.training.estimate import build_context
    from gpucluster_lib.training.framework import cross_entropy_bytes, framework

    # Megatron-Core cross_entropy_loss_fusion (megatron/core/fusions/fused_cross_entropy.py core_r0.8.0, four
    # torch.compile'd graphs): cast + max in one kernel 2 + 4, in-place exp with the row sum 4 + 4, in-place div_
    # 4 + 4; backward: the functionalised scatter's copy 4 + 4, then read 4, write back the fp32 softmax 4 and the
    # bf16 gradient 2
    assert cross_entropy_bytes("megatron_fused") == (2 + 4) + 8 + 8 + 8 + (4 + 4 + 2) == 40
    assert framework("nemo").cross_entropy_bytes_per_logit == 40  # NeMo 2.x GPTConfig: fusion on (v2.0.0)
    # flash-attn 1.0.9 xentropy (llm-foundry's MPT default): two reads of the bf16 row forward, read 2 write 2 back
    assert cross_entropy_bytes("flash_attn_xentropy") == (2 + 2) + (2 + 2) == 8
    assert framework("fsdp").cross_entropy_bytes_per_logit == 8
    # TorchTitan's compiled F.cross_entropy (torch 2.6 Inductor): two bf16 reads forward, one read and one bf16 write back
    assert cross_entropy_bytes("torch_compile") == (2 + 2) + (2 + 2) == 8
    assert framework("torchtitan").cross_entropy_bytes_per_logit == 8
    # Transformer Engine's Triton kernel (v2.9-v2.17): the online-softmax read, the forward's gradient written in
    # place (read 2, write 2), the backward's in-place multiplication by the per-token gradient (read 2, write 2)
    assert cross_entropy_bytes("te_triton") == 2 + (2 + 2) + (2 + 2) == 10
    # rows whose config runs another loss name it: NeMo 24.07's GPT-3 config has no cross_entropy_loss_fusion
    # (NeMo-Framework-Launcher 8325688d8345 gpt3/175b.yaml), so Megatron-Core's unfused loss runs
    runs = validation.load_runs().set_index("run_id")
    row = runs.loc["nemo2407-gpt3-175b-128"].to_dict() | {"run_id": "nemo2407-gpt3-175b-128"}
    assert build_context(validation.scenario_for(row))[0].eff.cross_entropy_bytes_per_logit == 52.0
    row = runs.loc["nemo2407-llama3-8b-8"].to_dict() | {"run_id": "nemo2407-llama3-8b-8"}
    sc = validation.scenario_for(row)
    ctx = build_context(sc)[0]
    assert ctx.eff.cross_entropy_bytes_per_logit == 40.0
    # NeMo 24.07 Llama 3 8B on 8 H100 (TP1 CP2, micro-batch 1 of 8,192 tokens: 4,096 tokens per GPU, vocabulary
    # 128,256) at 3,350 GB/s x 0.85: the fused loss's 28 bytes above the generic 12 add
    # 28 x 4,096 x 128,256 / (3.35e12 x 0.85) = 5.16 ms per micro-batch
    sc12 = dataclasses.replace(sc, training=dataclasses.replace(sc.training, efficiency={"cross_entropy_bytes_per_logit": 12.0}))
    from gpucluster_lib.training.estimate import estimate
    m = 128 // (8 // 2)  # micro-batches per step: global batch 128 over DP 4
    d = estimate(sc).to_dict()["time_breakdown_s"]["compute"] - estimate(sc12).to_dict()["time_breakdown_s"]["compute"]
    assert d == pytest.approx(m * 28 * 4096 * 128256 / (3.35e12 * 0.85), rel=1e-9)


def test_megatron_core_cross_entropy_bytes_per_logit():
    """Megatron-Core's unfused vocab-parallel cross-entropy, counted per logit of the GPU's vocabulary shard
    (megatron/core/tensor_parallel/cross_entropy.py at core_r0.8.0 = baf94af3c6; data/training_frameworks.yaml)."""
    import dataclasses

    from gpucluster_lib.training import validation
    from gpucluster_lib.training.estimate import build_context
    from gpucluster_lib.training.framework import framework

    # forward: .float() 2 + 4, max 4, in-place -= 4 + 4, exp 4 + 4, sum 4, div_ 4 + 4 = 38;
    # backward: mul_ 4 + 4, the fp32 gradient cast back to bf16 4 + 2 = 14; 52 in all
    assert framework("megatron").cross_entropy_bytes_per_logit == (2 + 4) + 4 + 8 + 8 + 4 + 8 + 8 + 6 == 52
    # Megatron-DeepSpeed calls the same unfused loss on .float() logits (megatron/model/gpt_model.py, 070c64b)
    assert framework("deepspeed").cross_entropy_bytes_per_logit == 52
    row = validation.load_runs().set_index("run_id").loc["mcore-1.7b"].to_dict() | {"run_id": "mcore-1.7b"}
    row["mb"] = 4
    sc = validation.scenario_for(row)
    ctx = build_context(sc)[0]
    assert ctx.eff.cross_entropy_bytes_per_logit == 52.0
    # a scenario's own value wins over the framework's
    sc12 = dataclasses.replace(sc, training=dataclasses.replace(sc.training, efficiency={"cross_entropy_bytes_per_logit": 12.0}))
    assert build_context(sc12)[0].eff.cross_entropy_bytes_per_logit == 12.0
    # Megatron-Core weak-scaling GPT 1.7B (TP1, micro-batch 4 x 4,096 tokens, vocabulary 131,072) on H100
    # (3,350 GB/s, data/accelerators.csv; memory efficiency 0.85, data/efficiency.yaml): the 40 bytes a logit
    # above the generic 12 add 40 x 16,384 x 131,072 / (3.35e12 x 0.85) = 30.16 ms to the step's compute (one
    # micro-batch per step: 192 / (48 x 4))
    c52 = estimate(sc).to_dict()["time_breakdown_s"]["compute"]
    c12 = estimate(sc12).to_dict()["time_breakdown_s"]["compute"]
    assert c52 - c12 == pytest.approx(40 * 16384 * 131072 / (3.35e12 * 0.85), rel=1e-6)
    assert c52 - c12 == pytest.approx(0.03016, abs=1e-5)


def test_torchtitan_op_selective_checkpointing_reruns_every_second_matmul():
    """TorchTitan's op-level selective activation checkpointing ("Saves output of all compute ops, except every
    second mm", torchtitan/models/llama3/parallelize_llama.py at e7c0cae) on a Llama block, whose forward calls
    wq, wk, wv, wo, w1, w3, w2 in that order (torchtitan/models/llama3/model.py, e7c0cae): wk, wo and w3 rerun."""
    from gpucluster_lib.training import core, validation
    from gpucluster_lib.training.estimate import build_context
    from gpucluster_lib.training.framework import framework

    assert framework("torchtitan").selective_recompute == "every_second_mm"
    assert framework("megatron").selective_recompute == "attention"
    assert framework("fsdp").selective_recompute == "attention"
    row = validation.load_runs().set_index("run_id").loc["torchtitan-h200-llama31-8b-32"].to_dict()
    sc = validation.scenario_for(row | {"run_id": "torchtitan-h200-llama31-8b-32"})
    ctx = build_context(sc)[0]
    # Llama 3.1 8B: h 4096, K 8 x 128 = 1024, output projection 4096 x 4096, w3 4096 x 14336; at 1e15 FLOP/s and
    # 16,384 tokens: 2 x 16384 x 4096 x (1024 + 4096 + 14336) / 1e15 = 2.611340e-3 s
    flops_only = lambda m, k, n: 2.0 * m * k * n / 1e15  # noqa: E731
    assert core.every_second_mm_s(ctx, flops_only, 16384.0, 1.0) == pytest.approx(2.611340e-3, rel=1e-6)
    # in the estimate: one micro-batch (64 / (32 x 2)) of 32 layers, each rerunning those three GEMMs
    est = estimate(sc)
    P, e = ctx.peak_flops, ctx.eff
    eg = e.gemm_efficiency * e.fp8_gemm_factor * ctx.fp8_casts.gemm_rate
    gemm = lambda m, k, n: core._gemm_time(m, k, n, P, eg, ctx.gemm, ctx.memory_bw, e.memory_efficiency)  # noqa: E731
    assert est.time_breakdown_s["recompute"] == pytest.approx(32 * core.every_second_mm_s(ctx, gemm, 16384.0, 1.0),
                                                              rel=1e-9)


def test_last_gradient_bucket_holds_the_input_embedding():
    """The backward computes the input embedding's gradient last, so the step's last data-parallel reduction holds
    it whole (Megatron-Core ParamAndGradBuffer, megatron/core/distributed/param_and_grad_buffer.py at core_r0.8.0:
    parameters in reverse order, never split, a bucket closed at >= max(40M, 1M x DP) parameters)."""
    import dataclasses

    from gpucluster_lib.training import core, validation
    from gpucluster_lib.training.estimate import build_context

    # GPT 1.7B of the Megatron-Core weak-scaling table on 48 GPUs: max(4e7, 48 x 1e6) = 4.8e7 against the embedding
    # 131,072 x 2,048 = 268,435,456
    assert core.last_bucket_params(4e7, 1e6, 48.0, 131072 * 2048) == 268435456
    assert core.last_bucket_params(4e7, 1e6, 48.0, 1.0e7) == 4.8e7  # a small embedding: the bucket size
    row = validation.load_runs().set_index("run_id").loc["mcore-1.7b"].to_dict() | {"run_id": "mcore-1.7b"}
    row["mb"] = 4
    sc = validation.scenario_for(row)
    ctx = build_context(sc)[0]
    one = np.array([1.0])
    emb_p = float(core.embedding_params(ctx, one)[0][0])
    # vocabulary 131,072 x hidden 2,048 + learned positions 4,096 x 2,048 (the megatron-1.7b preset, the row's
    # overrides)
    assert emb_p == 131072 * 2048 + 4096 * 2048 == 276_824_064
    # by hand, the GPU's parameters (TP1, GELU FFN 8,192, biases, LayerNorm; the output layer tied): a layer
    # QKV 3 x 2048^2 + 3 x 2048, projection 2048^2 + 2048, FC1 2048 x 8192 + 8192, FC2 8192 x 2048 + 2048, two
    # LayerNorms 4 x 2048 = 50,358,272; 24 layers + the embedding + the final LayerNorm 4,096 = 1,485,426,688
    layer = 3 * 2048**2 + 3 * 2048 + 2048**2 + 2048 + 2048 * 8192 + 8192 + 8192 * 2048 + 2048 + 4 * 2048
    assert layer == 50_358_272
    p_gpu = 24 * layer + 276_824_064 + 2 * 2048
    assert p_gpu == 1_485_426_688
    # one micro-batch a step (192 / (48 x 4)): its backward (most of the 0.40 s step) is far longer than the
    # reduction, so what stays exposed is the last bucket's share, emb_p / p_gpu, of the distributed optimizer's
    # fp32 gradient reduce-scatter (4 bytes, Megatron's reduction precision) and of its bf16 parameter all-gather
    # (2 bytes), each a ring over the 48 DP ranks of 6 nodes: hierarchical, min(NVLink 450 x 0.8, 8 GPUs x 50 GB/s x 0.8) = 320 GB/s,
    # and 47 steps of 8 us (data/efficiency.yaml alpha_network_s):
    #   emb_p / p_gpu x [(47/48 x 6 p_gpu / 320e9) + 2 x 47 x 8e-6] = 5.0823 ms + 0.1401 ms = 5.2225 ms
    t_ring = 47 / 48 * 6 * p_gpu / 320e9 + 2 * 47 * 8e-6
    by_hand = 276_824_064 / p_gpu * t_ring
    assert by_hand == pytest.approx(5.2225e-3, abs=1e-7)
    est = estimate(sc)
    assert est.time_breakdown_s["dp_comm"] == pytest.approx(by_hand, rel=1e-9)
    # against the no-overlap step, the whole reduction exposed: t_ring
    full = estimate(dataclasses.replace(sc, parallelism=dataclasses.replace(sc.parallelism, overlap_grad_reduce=False,
                                                                            overlap_param_gather=False)))
    assert full.time_breakdown_s["dp_comm"] == pytest.approx(t_ring, rel=1e-9)
