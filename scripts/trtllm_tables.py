"""The serving model on TensorRT-LLM's own throughput tables (Llama 70B, FP8, H100 / H200).

Reproduces the figures of docs/validation.md, "Candidate mechanisms measured" (an engine-version
factor; the per-GPU loss from TP 1 to TP 2), and prints them:

* the published / model ratio of each row at the table's own settings, and the gain from one
  release to the next through the model (the ratio of two such ratios);
* TP 1 / TP 2 per GPU on one GPU in one release, published and modelled;
* the wave and tile fill of a layer's GEMMs at TP 1 and TP 2.

The rows, each release with the file and section its table is in, are
``gpucluster_lib/data/validation/trtllm_llama2_70b_fp8.yaml``; the model runs at each table's settings
are ``gpucluster_lib.inference.validation.trtllm_ratio``; tests/test_trtllm_tables.py recomputes the
figures the docs quote. Sources (github.com/NVIDIA/TensorRT-LLM, each table at its release):

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

from gpucluster_lib.inference.validation import trtllm_model_per_gpu, trtllm_ratio, trtllm_row

LENGTHS = ((128, 128), (2048, 128), (128, 2048), (2048, 2048))


def release_gain(old: str, new: str, system: str, tp: int, isl: int, osl: int) -> tuple[float, float, float]:
    """(published / model in ``old``, the same in ``new``, the gain through the model new / old - 1)."""
    a, b = trtllm_ratio(trtllm_row(old, system, tp, isl, osl)), trtllm_ratio(trtllm_row(new, system, tp, isl, osl))
    return a, b, b / a - 1


def published_gain(old: str, new: str, system: str, tp: int, isl: int, osl: int) -> float:
    """The gain from ``old`` to ``new`` as published (same system, TP and lengths)."""
    return trtllm_row(new, system, tp, isl, osl).per_gpu / trtllm_row(old, system, tp, isl, osl).per_gpu - 1


def per_gpu_ratio(release_a: str, a: tuple, release_b: str, b: tuple) -> tuple[float, float]:
    """Per-GPU output tokens/s of row ``a`` over row ``b``: (published, model)."""
    ra, rb = trtllm_row(release_a, *a), trtllm_row(release_b, *b)
    return ra.per_gpu / rb.per_gpu, trtllm_model_per_gpu(ra) / trtllm_model_per_gpu(rb)


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
    static = ((128, 128), (2048, 128), (2048, 2048))
    print("0.8.0 -> 0.9.0, static, same batches (DGX H100, TP 2):",
          ", ".join(f"{published_gain('0.8.0', '0.9.0', 'dgx-h100', 2, i, o):+.1%}" for i, o in static))
    print("0.9.0 -> 0.11.0 through the model (DGX H100, TP 2):")
    for isl, osl in static:
        r9, r11, gain = release_gain("0.9.0", "0.11.0", "dgx-h100", 2, isl, osl)
        print(f"  {isl}/{osl}: published / model {r9:.3f} (0.9.0), {r11:.3f} (0.11.0), gain {gain:+.1%}")
    for system in ("dgx-h100", "dgx-h200"):
        gains = [published_gain("0.10.0", "0.11.0", system, 2, i, o) for i, o in LENGTHS]
        print(f"0.10.0 -> 0.11.0 as published ({system}, TP 2):", ", ".join(f"{g:+.1%}" for g in gains))
    print("model error on 0.10.0:")
    for system, tp in (("dgx-h200", 1), ("dgx-h100", 2)):
        errs = [1 / trtllm_ratio(trtllm_row("0.10.0", system, tp, i, o)) - 1 for i, o in LENGTHS]
        print(f"  {system} TP {tp}:", ", ".join(f"{e:+.1%}" for e in errs))
    print("0.10.0, H200, TP 1 / TP 2 per GPU:")
    for isl, osl in LENGTHS:
        pub, mod = per_gpu_ratio("0.10.0", ("dgx-h200", 1, isl, osl), "0.10.0", ("dgx-h200", 2, isl, osl))
        print(f"  {isl}/{osl}: published {pub:.2f}, model {mod:.2f}")
    print("0.9.0, H200 TP 1 over H100 TP 2 per GPU:")
    for isl, osl in ((128, 128), (2048, 128)):
        pub, mod = per_gpu_ratio("0.9.0", ("dgx-h200", 1, isl, osl), "0.9.0", ("dgx-h100", 2, isl, osl))
        print(f"  {isl}/{osl}: published {pub:.2f}, model {mod:.2f}")
    print("GEMM wave and tile fill, TP 1 / TP 2:")
    for tokens in (4096, 1573):
        for tile in ((128, 128), (128, 256)):
            print(f"  {tokens} tokens, {tile[0]} x {tile[1]} tiles: "
                  f"{gemm_fill(tokens, 1, tile):.1%} / {gemm_fill(tokens, 2, tile):.1%}")


if __name__ == "__main__":
    main()
