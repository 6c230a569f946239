"""Plan-search and widget-update timings of the training-time engine.

Full search: every valid plan of the Megatron 1T model (Narayanan 2021 Table 1) on 4096
A100 (512 DGX A100) at a global batch of 4096 -- every dimension the engine models (TP, PP
with equal, balanced and embedding/loss-slot splits, DP, CP, every micro-batch dividing the
local batch, every interleaving dividing the layers per stage, recomputation, ZeRO 0-3,
distributed optimizer, TP overlap). The search (``search_plans``) computes every plan's memory
fit with the plan dimensions on broadcast axes, bounds every plan's step time from below, and
evaluates only the plans whose bound can reach the ranked table
(``gpucluster_lib.training.search``); the exhaustive search (every plan evaluated with numpy in
chunks of ``core.CHUNK`` plans) is timed beside it and must give the identical table. Target:
< 2 s on one core.
Compared with a plain-Python loop that evaluates plans one at a time through the same code
(timed on a sample, extrapolated). Widget update: one ``training.estimate`` of the Llama 3
70B example (< 100 ms).

    PYTHONPATH=. python benchmarks/bench_plan_search.py
"""

from __future__ import annotations

import importlib
import os
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one core
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from gpucluster_lib.catalog import load_catalog  # noqa: E402
from gpucluster_lib.scenario import from_dict, load_scenario  # noqa: E402
from gpucluster_lib.training import build_context, estimate, evaluate, search_plans  # noqa: E402
from gpucluster_lib.training.core import PLAN_KEYS  # noqa: E402
from gpucluster_lib.training.estimate import SEARCH_TABLE_ROWS, _rank_table, _search  # noqa: E402

est = importlib.import_module("gpucluster_lib.training.estimate")  # the module (the package exports a function of that name)
plan_search = importlib.import_module("gpucluster_lib.training.search")
from gpucluster_lib.training.plans import enumerate_plans  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def best_of(fn, repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    cat = load_catalog()
    s = from_dict({"model": {"preset": "megatron-1t"},
                   "hardware": {"server": "dgx-a100-640gb", "nodes": 512},
                   "parallelism": {"auto": True, "global_batch_size": 4096},
                   "training": {"tokens": 4.5e11}})
    ctx = build_context(s, cat)[0]
    plans = enumerate_plans(s.parallelism, ctx.arch, ctx.gpus, ctx.nvlink_domain)
    n = len(plans["tp"])

    t_enum = best_of(lambda: enumerate_plans(s.parallelism, ctx.arch, ctx.gpus, ctx.nvlink_domain))
    t_eval = best_of(lambda: evaluate(ctx, plans))
    def first_search():  # a new search each time, nothing kept from earlier ones
        est._SPACES.clear()
        plan_search._FITS.clear()
        return _search(ctx, s.parallelism, s.training.tokens, SEARCH_TABLE_ROWS)

    def fabric_change():  # the plan space and the memory fits of the last search kept
        return _search(ctx, s.parallelism, s.training.tokens, SEARCH_TABLE_ROWS)

    def exhaustive():
        return _search(ctx, s.parallelism, s.training.tokens, SEARCH_TABLE_ROWS, exhaustive=True)

    t_search = best_of(first_search)
    t_fabric = best_of(fabric_change)
    t_full = best_of(exhaustive, repeat=3)
    assert first_search().table.equals(exhaustive().table), "the search and the exhaustive search differ"

    sample = np.linspace(0, n - 1, min(n, 300)).astype(int)

    def loop():
        out = []
        for i in sample:
            one = {k: plans[k][i:i + 1] for k in PLAN_KEYS}
            out.append(float(evaluate(ctx, one)["step_time_s"][0]))
        return out

    t0 = time.perf_counter()
    looped = loop()
    t_loop = (time.perf_counter() - t0) * n / len(sample)
    vec = evaluate(ctx, plans)["step_time_s"][sample]
    assert np.allclose(vec, looped, rtol=1e-12), "vectorised and looped results differ"
    evaluated = evaluate(ctx, plans)
    t_rank = best_of(lambda: _rank_table(ctx, plans, evaluated, s.training.tokens))

    res = search_plans(s, cat, context=ctx)
    best = res.table.iloc[0]
    print(f"Megatron 1T on {ctx.gpus} A100: {n} valid plans ({res.fitting} fit in 80 GiB)")
    print(f"  enumerate plans (numpy)          {t_enum * 1e3:8.1f} ms")
    print(f"  evaluate all plans (numpy)       {t_eval * 1e3:8.1f} ms")
    print(f"  ranking (top {SEARCH_TABLE_ROWS} rows)            {t_rank * 1e3:8.1f} ms")
    print(f"  search incl. ranking table       {t_search * 1e3:8.1f} ms   target < 2000 ms: "
          f"{'OK' if t_search < 2 else 'FAILED'}")
    print(f"  same, after a fabric change      {t_fabric * 1e3:8.1f} ms   (plan space and memory fits kept)")
    print(f"  exhaustive search (every plan)   {t_full * 1e3:8.1f} ms   (identical table)")
    print(f"  plain-Python loop, same plans    {t_loop * 1e3:8.0f} ms   ({t_loop / t_eval:,.0f}x slower than numpy; "
          f"{len(sample)}-plan sample)")
    print(f"  best plan: {res.best.label()}: {best.step_time_s:.1f} s/step, MFU {best.mfu:.1%}")

    scen = load_scenario(ROOT / "gpucluster_lib" / "data" / "scenarios" / "llama3-70b-512-h100.yaml")
    manual = scen.replace(parallelism={"tensor": 8, "pipeline": 4, "virtual_stages": 5, "micro_batch_size": 1,
                                       "global_batch_size": 512, "recompute": "selective"})
    t_manual = best_of(lambda: estimate(manual, cat), repeat=20)
    t_auto = best_of(lambda: estimate(scen, cat), repeat=5)
    print(f"widget update, one estimate (manual plan)  {t_manual * 1e3:8.1f} ms   target < 100 ms: "
          f"{'OK' if t_manual < 0.1 else 'FAILED'}")
    print(f"widget update, estimate with auto search   {t_auto * 1e3:8.1f} ms   (Llama 3 70B, 512 H100)")


if __name__ == "__main__":
    main()
