"""Serving model: hand-worked memory terms, roofline bounds, published runs, bad input."""

from __future__ import annotations

import json
import math
import re

import pytest

from gpucluster_lib.cli import main
from gpucluster_lib.hardware.rack import rack_fit
from gpucluster_lib.inference import serve
from gpucluster_lib.inference.latency import weights_read_bytes
from gpucluster_lib.inference.memory import kv_cache_bytes_per_token_per_gpu
from gpucluster_lib.inference.precision import WEIGHT_BYTES, compute_peak_tflops
from gpucluster_lib.scenario import from_dict, load_scenario
from gpucluster_lib.workloads.transformer import resolve_transformer

LLAMA3_SCENARIO = "gpucluster_lib/data/scenarios/llama3-70b-512-h100.yaml"


def scenario(**inference):
    hardware = inference.pop("hardware", {"server": "dgx-h100", "nodes": 1})
    model = inference.pop("model", "llama2-70b")
    return from_dict({"model": {"preset": model}, "hardware": hardware, "inference": inference})


# ---------------------------------------------------------------- memory, hand-worked


def test_kv_cache_llama2_70b_bf16_hand_worked():
    # Llama 2 70B (Touvron 2023, GQA with 8 KV heads):
    # 80 layers x 2 (K and V) x 8 KV heads x 128 head dim x 2 bytes = 327,680 bytes/token
    est = serve(scenario(precision="bf16", tensor_parallel=4, requests_per_s=1))
    assert est.kv_cache_bytes_per_token == 327_680
    assert est.kv_cache_bytes_per_token_per_gpu == 327_680 / 4  # 2 of the 8 KV heads per GPU


def test_kv_cache_replicated_when_tp_exceeds_kv_heads():
    arch = resolve_transformer("llama2-70b")
    # TP 16 > 8 KV heads: one head per GPU, 80 x 2 x 1 x 128 x 2 = 40,960 bytes/token
    assert kv_cache_bytes_per_token_per_gpu(arch, 16, 2.0) == 40_960


def test_weights_per_gpu_fp8_tp2():
    # meta-llama/Llama-2-70b-hf config: 68,976,648,192 parameters; FP8 = 1 byte; TP 2
    est = serve(scenario(precision="fp8", tensor_parallel=2, requests_per_s=1))
    assert est.weights_bytes_per_gpu == pytest.approx(68_976_648_192 / 2, rel=1e-9)


def test_int4_is_weight_only_with_group_scales():
    # 4 bits + one 16-bit scale per 128 weights (GPTQ/AWQ group size 128): 0.5 + 2/128 bytes
    assert WEIGHT_BYTES["int4"] == 0.515625
    est = serve(scenario(precision="int4", tensor_parallel=2, requests_per_s=1))
    assert est.compute_precision == "bf16"
    assert any(f.code == "inference-int4-weight-only" for f in est.findings)


def test_fp8_peak_is_read_not_derived():
    # a made-up row whose FP8 is not 2x BF16: the FP8 column is used as is
    assert compute_peak_tflops("fp8", {"bf16_tflops": 800.0, "fp8_tflops": 1000.0}) == 1000.0
    # no FP8 column: cannot serve FP8 even though BF16 exists
    assert compute_peak_tflops("fp8", {"bf16_tflops": 312.0, "fp8_tflops": float("nan")}) is None


def test_memory_breakdown_adds_up():
    est = serve(scenario(precision="fp8", tensor_parallel=2, requests_per_s=10))
    m = est.memory_per_gpu_bytes
    assert m["weights"] + m["kv_cache"] + m["workspace"] + m["runtime"] + m["free"] == pytest.approx(m["total"])
    assert m["total"] == 80 * 2**30  # H100 SXM: 80 GiB of HBM3 (catalogue memory_gib)


# ---------------------------------------------------------------- roofline bounds


@pytest.mark.parametrize(("server", "precision", "tp"), [("dgx-h100", "fp8", 8), ("dgx-h200", "fp8", 1),
                                                          ("dgx-a100-640gb", "bf16", 4)])
def test_batch1_decode_is_bounded_by_weight_streaming(server, precision, tp):
    est = serve(scenario(model="llama3-70b", precision=precision, tensor_parallel=tp, batch_size=1,
                         requests_per_s=1, hardware={"server": server, "nodes": 1}))
    bw = {"dgx-h100": 3350e9, "dgx-h200": 4800e9, "dgx-a100-640gb": 2039e9}[server]  # datasheet HBM B/s
    lower = est.weights_bytes_per_gpu / bw  # every weight byte read once per generated token
    assert est.tpot_s >= lower
    assert est.tpot_s <= 2 * lower + 0.006  # within 2x + overheads: decode at batch 1 is memory-bound


def test_moe_reads_only_the_experts_it_hits():
    arch = resolve_transformer("mixtral-8x7b")
    w = float(arch.total_params())
    expert = arch.ffn_params(arch.expert_ffn_hidden_size)
    routed = arch.moe_layers * arch.num_experts * expert
    # batch 1, top-2 of 8: a quarter of the routed experts are read
    assert weights_read_bytes(arch, w, 1)[()] == pytest.approx(w - routed + routed * 2 / 8)


# ---------------------------------------------------------------- published runs

# MLPerf Inference v4.0 closed, NVIDIA DGX-H100_H100-SXM-80GBx8_TRT, llama2-70b-99.9
# (shared/validation/published_runs_visible.csv rows 141, 142): FP8, TP2 x 4 replicas,
# output 294.45 tokens per sample (mlcommons/inference language/llama2-70b/README.md, accuracy target);
# the mean input ~222 tokens is not in that README (an earlier figure of this suite).
MLPERF_OFFLINE_TOKENS_PER_S = 21_805.8   # row 141, Offline "Tokens per second"
MLPERF_SERVER_TOKENS_PER_S = 20_556.4    # row 142, Server "Completed tokens per second"


def _mlperf(ttft_slo_s, tpot_slo_s):
    s = scenario(precision="fp8", tensor_parallel=2, input_tokens=222, output_tokens=294,
                 ttft_slo_s=ttft_slo_s, tpot_slo_s=tpot_slo_s)
    est = serve(s)
    return est, 4 * est.tokens_per_s_per_replica  # 8 GPUs = 4 replicas of TP 2


def test_mlperf_v40_llama2_70b_offline_within_25pct():
    est, predicted = _mlperf(1e6, 1e6)  # offline: no latency constraint
    assert est.meets_slo
    assert predicted == pytest.approx(MLPERF_OFFLINE_TOKENS_PER_S, rel=0.25)


def test_mlperf_v40_llama2_70b_server_within_25pct():
    est, predicted = _mlperf(2.0, 0.2)  # MLPerf server: TTFT <= 2 s, TPOT <= 200 ms
    assert est.meets_slo and est.ttft_s <= 2.0 and est.tpot_s <= 0.2
    assert predicted == pytest.approx(MLPERF_SERVER_TOKENS_PER_S, rel=0.25)


# NVIDIA NIM 1.8.0 benchmark (docs.nvidia.com/nim/benchmarking/llm/1.0.0/performance),
# Llama-3.3-70B-Instruct (Llama 3 70B architecture) FP8 TP2 on 2x H100 80GB, 5000 in / 500 out.
@pytest.mark.parametrize(("concurrency", "ttft_s", "itl_s"), [(1, 0.40677, 0.01858), (50, None, 0.05973)])
def test_nim_llama33_70b_fp8_tp2(concurrency, ttft_s, itl_s):
    est = serve(scenario(model="llama3-70b", precision="fp8", tensor_parallel=2, input_tokens=5000,
                         output_tokens=500, batch_size=concurrency, ttft_slo_s=100, tpot_slo_s=10,
                         hardware={"server": "dgx-h100", "nodes": 1}))
    assert est.tpot_s == pytest.approx(itl_s, rel=0.25)
    if ttft_s is not None:
        assert est.ttft_s == pytest.approx(ttft_s, rel=0.25)


# ---------------------------------------------------------------- fleet


def test_fleet_counts_follow_from_the_replica():
    est = serve(load_scenario(LLAMA3_SCENARIO))
    target = 100 * 256  # 100 requests/s x 256 output tokens
    assert est.target_tokens_per_s == target
    assert est.replicas == math.ceil(target / est.tokens_per_s_per_replica)
    assert est.gpus == est.replicas * 8 and est.nodes == est.replicas  # TP 8 = one DGX per replica
    assert est.tokens_per_s_per_mw == pytest.approx(est.fleet_tokens_per_s / (est.it_power_kw / 1000))
    assert est.fleet_tokens_per_s == est.replicas * est.tokens_per_s_per_replica >= target
    assert est.tokens_per_s == target  # served = the demand, which the fleet carries
    assert est.meets_slo and est.tpot_s <= 0.1 and est.ttft_s <= 2.0


def test_rack_fit_hand_worked():
    # the one rack fit the fleet shares with the facility budget and the network layout.
    # DGX H100: 10.2 kW peak, 8U, 130.45 kg (servers.csv); 2U and a 100 W management switch reserved:
    # (45 kW - 0.1 kW) / 10.2 kW = 4.4 -> 4; (48U - 2U) / 8U = 5.75 -> 5: 4 per rack, power binds
    fit = rack_fit(8, 10_200, 130.45, rack_units=48, rack_power_limit_w=45_000, rack_weight_limit_kg=1360,
                   cooling_limit_w=50_000, reserved_u=2, reserved_w=100)
    assert (fit.nodes_per_rack, fit.binding) == (4, "power")
    # 40 kW: (40 kW - 0.1 kW) / 10.2 kW -> 3 (hw_reference: 4 per rack needs 40.8 kW)
    assert rack_fit(8, 10_200, 130.45, rack_units=42, rack_power_limit_w=40_000, rack_weight_limit_kg=1360,
                    cooling_limit_w=50_000, reserved_u=2, reserved_w=100).nodes_per_rack == 3


def test_capex_override_and_tokens_per_dollar():
    s = load_scenario(LLAMA3_SCENARIO).replace(costs__server_price=400_000.0)
    est = serve(s)
    assert est.capex_usd == est.nodes * 400_000.0
    assert est.tokens_per_s_per_usd == pytest.approx(est.fleet_tokens_per_s / est.capex_usd)


def test_tp_is_searched_when_absent():
    est = serve(load_scenario(LLAMA3_SCENARIO).replace(inference__tensor_parallel=None))
    options = {o["tensor_parallel"]: o["gpus"] for o in est.tp_options}
    assert set(options) == {1, 2, 4, 8}
    assert est.gpus == min(g for g in options.values() if g is not None)


def test_efficiency_overrides_are_used_and_echoed():
    base = serve(scenario(precision="fp8", tensor_parallel=2, batch_size=1, requests_per_s=1))
    slow = serve(scenario(precision="fp8", tensor_parallel=2, batch_size=1, requests_per_s=1,
                          memory_bandwidth_efficiency=0.4))
    assert slow.efficiency["memory_bandwidth_efficiency"] == 0.4
    assert slow.tpot_s > 1.5 * base.tpot_s - 0.01  # weight streaming dominates batch 1


# ---------------------------------------------------------------- bad input -> findings


def codes(est):
    return {f.code: f for f in est.findings}


def test_fp8_on_a100_is_a_finding():
    est = serve(scenario(precision="fp8", tensor_parallel=8, requests_per_s=1,
                         hardware={"server": "dgx-a100-640gb", "nodes": 1}))
    f = codes(est)["inference-precision-unsupported"]
    assert f.severity == "error" and "a100-sxm4-80gb" in f.message and "bf16" in f.fix
    assert est.meets_slo is False


def test_model_that_fits_nowhere():
    # Llama 3 405B in BF16: 405.85e9 x 2 B / 8 = 101 GB per GPU > 0.9 x 80 GiB = 77.3 GB
    est = serve(scenario(model="llama3-405b", precision="bf16", tensor_parallel=8, requests_per_s=1))
    f = codes(est)["inference-model-does-not-fit"]
    assert f.severity == "error"
    assert "101.5 GB" in f.message and "77.3 GB" in f.message
    assert "a tensor parallelism of 16" in f.fix and "the precision fp8" in f.fix
    assert est.meets_slo is False and est.tokens_per_s_per_gpu is None


def test_slo_no_batch_meets():
    est = serve(scenario(precision="fp8", tensor_parallel=2, requests_per_s=1, tpot_slo_s=0.005))
    f = codes(est)["inference-slo-unmet"]
    assert f.severity == "error" and "TPOT <= 5 ms" in f.message and f.field == "inference.tpot_slo_s"  # 0.005 s in ms
    assert est.meets_slo is False


def test_tp_not_dividing_kv_heads():
    est = serve(scenario(precision="fp8", tensor_parallel=3, requests_per_s=1))
    f = codes(est)["inference-tp-kv-heads"]
    assert "8 KV heads" in f.message and f.fix == "use a tensor parallelism of 1, 2, 4, 8, 16, 32 or 64"


def test_batch_larger_than_memory():
    est = serve(scenario(precision="bf16", tensor_parallel=2, batch_size=100_000, requests_per_s=1))
    f = codes(est)["inference-batch-exceeds-memory"]
    assert f"at most {est.max_batch} sequences" in f.message


# ---------------------------------------------------------------- CLI contract

CONTRACT = ("weights_bytes_per_gpu", "kv_cache_bytes_per_token", "max_batch", "ttft_s", "tpot_s",
            "tokens_per_s_per_gpu", "tokens_per_s_per_replica", "replicas", "gpus", "nodes", "racks",
            "it_power_kw", "tokens_per_s_per_mw", "meets_slo", "findings")


def test_cli_serve_json_contract(capsys):
    assert main(["serve", LLAMA3_SCENARIO, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    for key in CONTRACT:
        assert key in out, key
    assert out["meets_slo"] is True and isinstance(out["findings"], list)
    assert out["kv_cache_bytes_per_token"] == 163_840  # 80 x 2 x 8 x 128 x 1 byte (FP8 KV)
    assert out["efficiency"]["gemm_efficiency_8bit"] == 0.45 and out["sweep"]


def test_cli_serve_bad_key_exits_2(tmp_path, capsys):
    p = tmp_path / "bad.yaml"
    p.write_text("model: {preset: llama2-70b}\ninference: {precison: fp8}\n")
    assert main(["serve", str(p), "--json"]) == 2
    err = capsys.readouterr().err
    assert "inference.precison" in err and "precision" in err and "Traceback" not in err


def test_tp_not_dividing_attention_heads():
    # custom GQA model: 24 query heads, 8 KV heads; TP 16 is a multiple of the KV heads but 24 % 16 != 0
    s = from_dict({"model": {"layers": 4, "hidden_size": 3072, "attention_heads": 24, "kv_heads": 8,
                             "ffn_hidden_size": 8192, "ffn_type": "swiglu", "vocab_size": 32000, "seq_length": 4096},
                   "hardware": {"server": "dgx-h100", "nodes": 2},
                   "inference": {"precision": "bf16", "tensor_parallel": 16, "requests_per_s": 1}})
    found = codes(serve(s))
    assert "24 attention heads" in found["inference-tp-attention-heads"].message
    assert found["inference-tp-across-nodes"].severity == "warning"  # 16 > 8 GPUs per DGX H100


def test_node_exceeding_rack_power():
    s = load_scenario(LLAMA3_SCENARIO).replace(facility__rack_power_limit_kw=5.0)
    f = codes(serve(s))["facility-rack-power"]  # from the facility budget: DGX H100 peak 10.2 kW > 5 kW
    assert f.severity == "error" and "10.2 kW" in f.message and f.field == "facility.rack_power_limit_kw"


def test_quick_rack_estimate():
    from gpucluster_lib.hardware.resolve import catalog_for, resolve_hardware
    from gpucluster_lib.inference.fleet import size_fleet

    s = load_scenario(LLAMA3_SCENARIO)
    cat = catalog_for(s)
    found = []
    fleet = size_fleet(s, cat, resolve_hardware(s, cat), replicas=5, tp=8, findings=found, use_facility=False)
    # 5 DGX H100 x 10.2 kW node peak (servers.csv max_power_w of a complete system) = 51 kW;
    # min((45 kW - 0.1 kW) // 10.2 kW = 4, (48U - 2U reserved) // 8U = 5) = 4 per rack -> 2 racks;
    # facility = 51 kW x PUE 1.25
    assert (fleet.nodes, fleet.racks, fleet.it_power_kw, fleet.source) == (5, 2, 51.0, "quick estimate")
    assert fleet.facility_power_kw == pytest.approx(51.0 * 1.25)
    assert found[0].code == "inference-quick-estimate"
    found.clear()
    tight = s.replace(facility__rack_power_limit_kw=5.0)
    size_fleet(tight, cat, resolve_hardware(tight, cat), replicas=5, tp=8, findings=found, use_facility=False)
    assert found[0].code == "inference-node-exceeds-rack" and "10.2 kW" in found[0].message


def test_fleet_racks_and_power_from_the_facility_budget():
    from gpucluster_lib.hardware.resolve import catalog_for, resolve_hardware
    from gpucluster_lib.inference.fleet import size_fleet

    s = load_scenario(LLAMA3_SCENARIO)
    cat = catalog_for(s)
    fleet = size_fleet(s, cat, resolve_hardware(s, cat), replicas=5, tp=8, findings=[])
    assert (fleet.nodes, fleet.source) == (5, "facility budget")
    # network of 5 DGX H100, counted by hand from the topology rules and the catalogue:
    # compute 5 x 8 NDR ports = 40 <= 64: one QM9700 at 747 W (switches.csv typical);
    # storage 5 x 2 ports + ceil(10 x 0.25) = 3 targets + 2 head nodes = 15: one QM9700, 747 W;
    # management 5 x 2 + 2 x 2 + 2 switches = 16 links: one SN2700, 233 W;
    # 5 nodes in 2 racks: in-row 400G fibre with twin-port MMA4Z00-NS switch optics at 15 W
    # (cabling.yaml): 40 / 2 = 20 compute + ceil(15 / 2) = 8 storage modules = 420 W
    network_kw = (747 + 747 + 233 + 28 * 15) / 1000  # = 2.147 kW
    # IT = 5 x 10.2 kW + network + one 2.5 kW storage appliance + the 1.2 kW capacity-tier enclosure
    # (facility.storage: (2e12 tokens x 4 B x 10 raw + 2e12 x 4 B + 10 x 0.99 TB) x 2 = 196 TB -> 1)
    # + 2 x 0.75 kW head nodes
    assert fleet.it_power_kw == pytest.approx(5 * 10.2 + network_kw + 2.5 + 1.2 + 1.5)  # = 58.347 kW
    assert fleet.facility_power_kw == pytest.approx(fleet.it_power_kw * 1.25)  # PUE 1.25
    # ceil(5 / 4) = 2 compute racks + 1 for 3U of switches, 2U + 4U storage and 2U of head nodes
    assert fleet.racks == 3


def test_capex_rules_and_missing_price():
    from types import SimpleNamespace

    from gpucluster_lib.inference.fleet import capex_usd

    sc = scenario(precision="bf16", requests_per_s=1)
    acc = {"id": "x-gpu", "price_usd_estimate": float("nan")}
    system = {"id": "x-sys", "kind": "system", "price_usd_estimate": 300_000.0}
    chassis = {"id": "x-chassis", "kind": "chassis", "price_usd_estimate": 20_000.0}
    found = []
    # a complete system's price includes its GPUs: 3 nodes x 300k
    assert capex_usd(sc, SimpleNamespace(server=system, accelerator=acc), nodes=3, gpus=24, findings=found) == 900_000
    # a chassis plus GPUs priced by the scenario: 24 x 25k + 3 x 20k
    sc_gpu = sc.replace(costs__accelerator_price=25_000.0)
    assert capex_usd(sc_gpu, SimpleNamespace(server=chassis, accelerator=acc), nodes=3, gpus=24,
                     findings=found) == 24 * 25_000 + 3 * 20_000
    # nothing priced: None and an info finding naming the overrides
    assert capex_usd(sc, SimpleNamespace(server=None, accelerator=acc), nodes=3, gpus=24, findings=found) is None
    assert found[-1].code == "inference-no-price" and found[-1].field == "costs.server_price"
    assert "a server price (per node) or an accelerator price (per GPU)" in found[-1].fix
    # a 1-GPU replica still occupies a whole 8-GPU node: 1 node x 8 GPUs x 25k, not 1 x 25k
    assert capex_usd(sc_gpu, SimpleNamespace(server=None, accelerator=acc, gpus_per_node=8), nodes=1, gpus=1,
                     findings=found) == 8 * 25_000


def test_no_target_sizes_the_scenario_cluster():
    s = scenario(precision="fp8", tensor_parallel=2, hardware={"server": "dgx-h100", "nodes": 3})
    est = serve(s)
    assert est.gpus == 24 and est.replicas == 12  # 3 nodes x 8 GPUs / TP 2
    assert codes(est)["inference-no-target"].field == "inference.requests_per_s"


def test_vision_dispatch():
    from gpucluster_lib.inference.vision import VisionServingEstimate

    vis = serve(from_dict({"model": {"preset": "resnet50"}, "hardware": {"server": "dgx-h100", "nodes": 1},
                           "inference": {"precision": "fp16", "images_per_s": 1000}}))
    assert isinstance(vis, VisionServingEstimate)


# ---------------------------------------------------------------- user-facing text

# A finding's message and fix, and the estimate's assumptions, are read in the app, the CLI and the report:
# no scenario key path ("inference.tensor_parallel"), no snake_case key ("batch_size"), no Python list.
KEY_LIKE = re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b|\b[a-z_]+\.[a-z_]+\b|[\[\]]")


def _texts(est):
    return [(f.code, t) for f in est.findings for t in (f.message, f.fix)] + [("assumption", t)
                                                                              for t in est.assumptions]


def test_serving_findings_and_assumptions_name_settings_in_words():
    from gpucluster_lib import design

    cases = [scenario(precision="fp8", tensor_parallel=3, requests_per_s=1),           # KV heads
             scenario(precision="fp8", tensor_parallel=48, requests_per_s=1),          # attention heads, nodes
             scenario(precision="fp8", tensor_parallel=16, requests_per_s=1,
                      hardware={"server": "dgx-h100", "nodes": 2}),                    # KV heads replicated
             scenario(precision="fp8", requests_per_s=1, hardware={"server": "dgx-a100-640gb", "nodes": 1}),
             scenario(precision="int4", requests_per_s=1),
             scenario(model="llama3-405b", precision="bf16", tensor_parallel=8, requests_per_s=1),
             scenario(precision="bf16", tensor_parallel=2, batch_size=100_000, requests_per_s=1),
             scenario(precision="fp8", tensor_parallel=2, batch_size=100_000, kv_cache_scheduling="max_utilization",
                      requests_per_s=1),
             scenario(precision="fp8", tensor_parallel=2, tpot_slo_s=0.001, requests_per_s=1),
             scenario(precision="fp8", tensor_parallel=2, tpot_slo_s=0.001, arrival="poisson", requests_per_s=1),
             scenario(precision="fp8", input_tokens=9000, max_num_tokens=8192, requests_per_s=1),
             scenario(precision="fp8", output_tokens_cv=2.0, requests_per_s=1),
             scenario(precision="fp8"),                                                 # no target
             scenario(precision="fp8", requests_per_s=1e7),                             # beyond the facility model
             scenario(precision="fp8", arrival="poisson", requests_per_s=10),
             scenario(precision="fp8", tensor_parallel=16),                             # TP above the 8 GPUs
             scenario(model="bert-large", precision="fp8", requests_per_s=1)]           # encoder, 512 tokens
    codes_seen, texts = set(), []
    for s in cases:
        est = serve(s)
        codes_seen |= {f.code for f in est.findings}
        texts += _texts(est)
    mig = design(from_dict({"model": {"preset": "llama2-7b"}, "hardware": {"server": "dgx-h100", "nodes": 2},
                            "inference": {"mig_profile": "1g.20gb", "tokens_per_s": 2000.0, "precision": "fp8"}}))
    vision = design(from_dict({"model": {"preset": "resnet50"}, "hardware": {"server": "dgx-h100", "nodes": 1},
                               "inference": {"precision": "fp16"}}))
    for d in (mig, vision):
        codes_seen |= {f.code for f in d.serving.findings}
        texts += [(f.code, t) for f in d.serving.findings for t in (f.message, f.fix)]
    # the cases reach every finding whose wording was at stake
    assert {"inference-tp-kv-heads", "inference-tp-attention-heads", "inference-kv-heads-replicated",
            "inference-tp-across-nodes", "inference-precision-unsupported", "inference-model-does-not-fit",
            "inference-batch-exceeds-memory", "inference-batch-limited-by-kv-pool", "inference-slo-unmet",
            "inference-prompt-exceeds-token-budget", "inference-no-target", "inference-mig",
            "inference-tp-exceeds-gpus", "inference-context-exceeded", "inference-encoder-only"} <= codes_seen
    bad = [(code, t) for code, t in texts if KEY_LIKE.search(t)]
    assert not bad, bad
