"""Timings of the serving model (run by hand, not in the test suite).

    PYTHONPATH=. python benchmarks/bench_inference.py

Measures: serve() with a fixed TP and with TP searched (every batch 1..max_batch
evaluated with numpy; racks and power from the facility budget), the accelerator
comparison of the Inference tab, the compute of one tab update (chart rendering by
altair/vega not included), a vision estimate, and the same batch sweep as a
plain-Python loop for comparison.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

import numpy as np

from gpucluster_lib.hardware.resolve import catalog_for, resolve_hardware
from gpucluster_lib.inference import serve
from gpucluster_lib.inference.compare import compare_accelerators
from gpucluster_lib.inference.efficiency import DEFAULT_EFFICIENCY
from gpucluster_lib.inference.latency import ReplicaHardware, mixed_step_times
from gpucluster_lib.inference.memory import memory_plan
from gpucluster_lib.scenario import load_scenario
from gpucluster_lib.workloads.transformer import resolve_transformer
from gpucluster_lib.workloads.vision import estimate_inference

ROOT = Path(__file__).resolve().parent.parent


def timeit(fn, repeat: int = 20) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3


def main() -> None:
    s = load_scenario(ROOT / "gpucluster_lib" / "data" / "scenarios" / "llama3-70b-512-h100.yaml")
    cat = catalog_for(s)
    auto = s.replace(inference__tensor_parallel=None)
    print(f"serve, TP 8 fixed:                 {timeit(lambda: serve(s, cat)):7.2f} ms")
    print(f"serve, TP searched (1,2,4,8):      {timeit(lambda: serve(auto, cat)):7.2f} ms")
    poisson = auto.replace(inference__arrival="poisson")
    print(f"serve, Poisson max rate, TP searched: {timeit(lambda: serve(poisson, cat)):7.2f} ms")
    trt = poisson.replace(inference__engine="tensorrt-llm", inference__streaming=True)
    print(f"  the same, tensorrt-llm engine:    {timeit(lambda: serve(trt, cat)):7.2f} ms")
    print(f"compare_accelerators (6 GPUs):     {timeit(lambda: compare_accelerators(s, cat), 5):7.2f} ms")
    def tab_update() -> None:  # what one widget change computes (scenario update, sizing, comparison)
        s2 = s.replace(inference__requests_per_s=120.0)
        serve(s2, cat)
        compare_accelerators(s2, cat)

    print(f"Inference tab update (compute):    {timeit(tab_update, 5):7.2f} ms")
    acc = cat.accelerator("h100-sxm5-80gb")
    print(f"vision estimate_inference:         {timeit(lambda: estimate_inference('resnet50', acc)):7.3f} ms")

    arch = resolve_transformer("llama3-70b")
    hw = resolve_hardware(s, cat)
    eff = DEFAULT_EFFICIENCY
    mem = memory_plan(arch, memory_gib=80, tp=8, weight_bytes=1, kv_bytes=1, input_tokens=1024,
                      output_tokens=256, eff=eff)
    rhw = ReplicaHardware(float(hw.accelerator["fp8_tflops"]), 3350.0, 450.0, 8)
    batches = np.arange(1, mem.max_batch + 1)
    kw = dict(input_tokens=1024, output_tokens=256, weights_bytes_per_gpu=mem.weights_bytes,
              kv_bytes_per_token_per_gpu=mem.kv_bytes_per_token, hw=rhw, gemm_efficiency=0.45, eff=eff)
    vec = timeit(lambda: mixed_step_times(arch, batches, **kw).total)
    loop = timeit(lambda: [mixed_step_times(arch, np.array([b]), **kw).total[0] for b in batches], 3)
    print(f"batch sweep of {len(batches)} sizes: numpy {vec:.2f} ms, plain loop {loop:.1f} ms "
          f"({loop / vec:.0f}x)")


if __name__ == "__main__":
    main()
