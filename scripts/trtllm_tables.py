"""The serving model on TensorRT-LLM's own throughput tables (Llama 70B, FP8, H100 / H200).

Reproduces the figures of docs/validation.md, "Candidate mechanisms measured" (an engine-version
factor; the per-GPU loss from TP 1 to TP 2), and prints them:

* the published / model ratio of each row at the table's own settings, and the gain from one
  release to the next through the model (the ratio of two such ratios);
* TP 1 / TP 2 per GPU on one GPU in one release, published and modelled;
* the wave and tile fill of a layer's GEMMs at TP 1 and TP 2.

Sources (github.com/NVIDIA/TensorRT-LLM, each table at its release):

* 0.8.0 and 0.9.0: ``docs/source/performance.md``, "Peak Throughput", H100 / H200 GPUs (FP8), output
  tokens/s per GPU, static batches (``gptSessionBenchmark``) at the stated batch;
* 0.10.0 and 0.11.0: ``docs/source/performance/perf-overview.md``, "Throughput Measurements", output
  tokens/s of the TP group, in-flight batching (``gptManagerBenchmark``, uniform lengths). 0.10.0:
  ``trtllm-build --max_batch_size 2048 --max_num_tokens 2048``, ``--scheduler_policy max_utilization``;
  0.11.0: TP 2 ``$max_batch_size`` 2048, ``$max_num_tokens`` 2048 ("General"),
  ``--scheduler_policy guaranteed_no_evict``;
* release versions: ``docs/source/release-notes.md`` (0.9.0 "requires TensorRT 9.3"; 0.11.0: TensorRT
  10.2.0, CUDA 12.4.1).

    PYTHONPATH=. python scripts/trtllm_tables.py
"""

from __future__ import annotations

import math

from gpucluster_lib.inference.serve import serve
from gpucluster_lib.scenario import from_dict

LENGTHS = ((128, 128), (2048, 128), (128, 2048), (2048, 2048))

#: 0.9.0 static rows: (system, TP, input, output) -> (batch, output tokens/s per GPU)
R090 = {("dgx-h100", 2, 128, 128): (1024, 3214), ("dgx-h100", 2, 2048, 128): (96, 346),
        ("dgx-h100", 2, 2048, 2048): (64, 1011), ("dgx-h200", 1, 128, 128): (1024, 3989),
        ("dgx-h200", 1, 2048, 128): (64, 418), ("dgx-h200", 1, 2048, 2048): (64, 1458)}
#: 0.8.0 static rows at the same batches as 0.9.0 (output tokens/s per GPU)
R080 = {("dgx-h100", 2, 128, 128): 3269, ("dgx-h100", 2, 2048, 128): 347, ("dgx-h100", 2, 2048, 2048): 1020}
#: 0.10.0 and 0.11.0, LLaMA v2 70B FP8, output tokens/s of the TP group, in LENGTHS order
R010 = {("dgx-h200", 1): (4055.97, 493.87, 3199.9, 1734.58), ("dgx-h200", 2): (6299.21, 784.47, 6747, 3455.34),
        ("dgx-h100", 2): (6035.36, 757.55, 4710.45, 2267.45)}
R011 = {("dgx-h200", 2): (6652.29, 766.38, 7014.86, 3554.71), ("dgx-h100", 2): (6502.44, 747.14, 5267.56, 2457.73)}
#: each in-flight-batching release's engine limits and scheduler
IFB = {"0.10.0": (R010, "max_utilization"), "0.11.0": (R011, "no_evict")}
ENGINE_BATCH = ENGINE_TOKENS = 2048


def model_per_gpu(system: str, tp: int, isl: int, osl: int, *, batch: int | None = None,
                  scheduling: str = "no_evict", max_num_tokens: int | None = None) -> float:
    """The model's output tokens/s per GPU, uniform lengths, no latency limit."""
    inf = {"precision": "fp8", "input_tokens": isl, "output_tokens": osl, "output_tokens_cv": 0.0,
           "arrival": "offline", "ttft_slo_s": 1e6, "tpot_slo_s": 1e6, "tensor_parallel": tp,
           "max_num_tokens": max_num_tokens, "kv_cache_scheduling": scheduling}
    if batch is not None:
        inf["batch_size"] = batch

    def run(extra: dict) -> object:
        sc = from_dict({"model": {"preset": "llama2-70b"}, "hardware": {"server": system, "nodes": 1},
                        "inference": {**inf, **extra}})
        return serve(sc)

    if batch is None:  # in-flight batching: the engine's batch limit or the KV pool, the smaller
        pool = run({}).max_batch
        return run({"batch_size": min(ENGINE_BATCH, pool)}).tokens_per_s_per_gpu
    return run({}).tokens_per_s_per_gpu


def static_ratio(key: tuple) -> float:
    """0.9.0 published / model at the stated batch."""
    batch, pub = R090[key]
    return pub / model_per_gpu(*key, batch=batch)


def ifb_ratio(release: str, system: str, tp: int, isl: int, osl: int) -> float:
    """Published / model for an in-flight-batching row at the release's settings."""
    table, scheduling = IFB[release]
    pub = table[(system, tp)][LENGTHS.index((isl, osl))] / tp
    return pub / model_per_gpu(system, tp, isl, osl, scheduling=scheduling, max_num_tokens=ENGINE_TOKENS)


def gemm_fill(tokens: int, tp: int, tile: tuple[int, int], sms: int = 132) -> float:
    """Useful / issued MACs of a Llama 2 70B layer's four GEMMs (QKV, O, fused gate+up, down) per GPU
    with whole output tiles in whole waves over ``sms`` SMs (H100 SXM: 132)."""
    h, kv, f = 8192, 1024, 28672
    useful = issued = 0.0
    for n, k in (((h + 2 * kv) // tp, h), (h, h // tp), (2 * f // tp, h), (h, f // tp)):
        tm, tn = tile
        tiles = math.ceil(tokens / tm) * math.ceil(n / tn)
        useful += tokens * n * k
        issued += math.ceil(tiles / sms) * sms * tm * tn * k
    return useful / issued


def main() -> None:
    print("0.8.0 -> 0.9.0, static, same batches (DGX H100, TP 2):",
          ", ".join(f"{R090[k][1] / v - 1:+.1%}" for k, v in R080.items()))
    print("0.9.0 -> 0.11.0 through the model (DGX H100, TP 2):")
    for isl, osl in ((128, 128), (2048, 128), (2048, 2048)):
        key = ("dgx-h100", 2, isl, osl)
        r9, r11 = static_ratio(key), ifb_ratio("0.11.0", *key)
        print(f"  {isl}/{osl}: published / model {r9:.3f} (0.9.0), {r11:.3f} (0.11.0), gain {r11 / r9 - 1:+.1%}")
    for system in ("dgx-h100", "dgx-h200"):
        gains = [b / a - 1 for a, b in zip(R010[(system, 2)], R011[(system, 2)], strict=True)]
        print(f"0.10.0 -> 0.11.0 as published ({system}, TP 2):", ", ".join(f"{g:+.1%}" for g in gains))
    print("model error on 0.10.0:")
    for system, tp in (("dgx-h200", 1), ("dgx-h100", 2)):
        errs = [1 / ifb_ratio("0.10.0", system, tp, i, o) - 1 for i, o in LENGTHS]
        print(f"  {system} TP {tp}:", ", ".join(f"{e:+.1%}" for e in errs))
    print("0.10.0, H200, TP 1 / TP 2 per GPU:")
    for isl, osl in LENGTHS:
        idx = LENGTHS.index((isl, osl))
        pub = R010[("dgx-h200", 1)][idx] / (R010[("dgx-h200", 2)][idx] / 2)
        kw = {"scheduling": "max_utilization", "max_num_tokens": ENGINE_TOKENS}
        mod = model_per_gpu("dgx-h200", 1, isl, osl, **kw) / model_per_gpu("dgx-h200", 2, isl, osl, **kw)
        print(f"  {isl}/{osl}: published {pub:.2f}, model {mod:.2f}")
    print("0.9.0, H200 TP 1 over H100 TP 2 per GPU:")
    for isl, osl in ((128, 128), (2048, 128)):
        a, b = ("dgx-h200", 1, isl, osl), ("dgx-h100", 2, isl, osl)
        pub = R090[a][1] / R090[b][1]
        mod = model_per_gpu(*a, batch=R090[a][0]) / model_per_gpu(*b, batch=R090[b][0])
        print(f"  {isl}/{osl}: published {pub:.2f}, model {mod:.2f}")
    print("GEMM wave and tile fill, TP 1 / TP 2:")
    for tokens in (4096, 1573):
        for tile in ((128, 128), (128, 256)):
            print(f"  {tokens} tokens, {tile[0]} x {tile[1]} tiles: "
                  f"{gemm_fill(tokens, 1, tile):.1%} / {gemm_fill(tokens, 2, tile):.1%}")


if __name__ == "__main__":
    main()
