"""Fit the ``tensorrt-llm`` serving engine profile on TensorRT-LLM's own in-flight throughput tables.

Prints the values that go into ``gpucluster_lib/data/serving_engines.yaml`` (it writes nothing), the
fit's RMS and largest error, every row before (the generic engine) and after, and four checks:

* additive against overlapped host time: ``T = T_gpu + F + c B`` against ``T = max(T_gpu, F + c B)``,
  each fitted on the same rows;
* the whole run instead of the steady state (:mod:`gpucluster_lib.inference.benchmark_run`: the release's
  request count queued at t = 0, start-up and drain included, as gptManagerBenchmark measures): the same
  three terms fitted on it, and each row at the shipped values;
* the wave argument of the in-flight batch (:func:`gpucluster_lib.inference.validation.trtllm_inflight_inputs`):
  a small event simulation of the two capacity schedulers on two rows (every request of one length,
  all queued at t = 0, a token budget per iteration, a KV pool of a fixed number of tokens), giving the
  mean number of sequences in generation per iteration;
* the static rows (0.8.0 / 0.9.0, ``gptSessionBenchmark``: one batch, the whole batch's prefill, then
  ``L_out`` decode steps) with the GPU terms of the fit and no batch-manager host time.

The rows: the 20 in-flight rows of ``gpucluster_lib/data/validation/trtllm_llama2_70b_fp8.yaml``
(releases 0.10.0 and 0.11.0, ``gptManagerBenchmark``), each at
:func:`~gpucluster_lib.inference.validation.trtllm_inflight_inputs`. The step of each row is the
model's steady state (:func:`gpucluster_lib.inference.latency.mixed_step_times`, what ``serve`` uses) with
the HBM, link and all-reduce efficiencies of the generic engine; three terms are fitted, by a
deterministic grid search on the log error (numpy only): the FP8 GEMM efficiency e8, the host time per
iteration F and per sequence c, the latter apart for the release whose responses streamed token by
token (0.10.0, ``--streaming``; the batch manager sends a response for each sequence every iteration).

    PYTHONPATH=. python scripts/calibrate_serving.py
"""

from __future__ import annotations

import numpy as np

from gpucluster_lib.hardware.resolve import resolve_hardware
from gpucluster_lib.inference.benchmark_run import run_gpu_time
from gpucluster_lib.inference.engines import engine_profile
from gpucluster_lib.inference.latency import (
    decode_attention_flops,
    linear_flops_per_token,
    mean_context_in_flight,
    prefill_attention_flops,
)
from gpucluster_lib.inference.validation import (
    TRTLLM_MODEL,
    trtllm_engine_per_gpu,
    trtllm_inflight_inputs,
    trtllm_model_per_gpu,
    trtllm_releases,
    trtllm_rows,
    trtllm_run_inputs,
    trtllm_run_per_gpu,
    trtllm_static_per_gpu,
)
from gpucluster_lib.scenario import from_dict
from gpucluster_lib.units import GB, TERA
from gpucluster_lib.workloads.transformer import resolve_transformer

INFLIGHT = ("0.10.0", "0.11.0")
STATIC = ("0.8.0", "0.9.0")
#: the grid of the fit: e8, F [s], c for whole and for streamed responses [s]
GRID_E8 = np.round(np.arange(0.50, 0.801, 0.01), 2)
GRID_F = np.round(np.arange(0.010, 0.0401, 0.0005), 4)
GRID_C = np.round(np.arange(0.0, 30.1e-6, 1e-6), 7)
#: a wider, coarser grid for the overlapped form, whose optimum lies outside the additive grid
WIDE_E8 = np.round(np.arange(0.30, 1.001, 0.02), 2)
WIDE_F = np.round(np.arange(0.0, 0.1501, 0.0025), 4)
WIDE_C = np.round(np.arange(0.0, 100.1e-6, 4e-6), 7)


def row_terms(row) -> dict:
    """The e8-free pieces of one row's step at its in-flight inputs [s], and its published per-GPU rate."""
    inf = trtllm_inflight_inputs(row)
    est = trtllm_engine_per_gpu(row)
    arch = resolve_transformer(TRTLLM_MODEL)
    sc = from_dict({"model": {"preset": TRTLLM_MODEL}, "hardware": {"server": row.system, "nodes": 1},
                    "inference": inf})
    acc = resolve_hardware(sc).accelerator
    peak = float(acc["fp8_tflops"]) * TERA
    bw = float(acc["memory_bandwidth_gb_per_s"]) * GB * est.efficiency["memory_bandwidth_efficiency"]
    b, lin, lout, tp = float(est.batch), row.input_tokens, row.output_tokens, row.tp
    prompts = b / lout
    tokens = b + prompts * lin
    ctx = mean_context_in_flight(lin, lout, 0.0)
    return {"row": row, "b": b, "tp": tp, "published": row.per_gpu, "streaming": inf["streaming"],
            "weights_s": est.weights_bytes_per_gpu / bw,
            "gemm_at_peak_s": tokens * linear_flops_per_token(arch) / tp / peak,
            "kv_s": b * ctx * est.kv_cache_bytes_per_token_per_gpu / bw,
            "attn_at_peak_s": (b * float(decode_attention_flops(arch, ctx)) + prompts * prefill_attention_flops(arch, lin))
            / tp / peak,
            "comm_s": est.step_time_breakdown_s["communication"]}


def gpu_time(t: dict, e8):
    """The roofline step at GEMM efficiency e8 [s] (latency.mixed_step_times, without host time)."""
    return (np.maximum(t["weights_s"], t["gemm_at_peak_s"] / e8) + np.maximum(t["kv_s"], t["attn_at_peak_s"] / e8)
            + t["comm_s"])


def predicted(t: dict, e8, f, c, overlapped: bool = False, c_streamed=None):
    """Output tokens/s per GPU of one row (``c_streamed`` the per-sequence time of a streaming row)."""
    host = f + (c_streamed if t["streaming"] and c_streamed is not None else c) * t["b"]
    step = np.maximum(gpu_time(t, e8), host) if overlapped else gpu_time(t, e8) + host
    return t["b"] / step / t["tp"]


def fit(terms: list[dict], overlapped: bool = False) -> tuple[float, float, float, float, float]:
    """(e8, F, c, c streamed, RMS of the log error) on the grid, the smallest RMS (ties: the first in grid
    order); c streamed is fitted on the rows whose responses streamed (0.10.0), c on the others. The
    overlapped form is fitted on the wider grid."""
    grids = (WIDE_E8, WIDE_F, WIDE_C, WIDE_C) if overlapped else (GRID_E8, GRID_F, GRID_C, GRID_C)
    e8, f, c, cs = np.meshgrid(*grids, indexing="ij")
    sq = np.zeros_like(e8)
    for t in terms:
        sq += np.log(predicted(t, e8, f, c, overlapped, cs) / t["published"]) ** 2
    rms = np.sqrt(sq / len(terms))
    i = np.unravel_index(int(np.argmin(rms)), rms.shape)
    return float(e8[i]), float(f[i]), float(c[i]), float(cs[i]), float(rms[i])


def run_terms(row) -> dict:
    """One row's whole run (validation.trtllm_run_inputs): the GPU's time at each e8 of the grid [s], the
    iterations and the sequences in flight summed over them, and the published per-GPU rate."""
    r = trtllm_run_inputs(row)
    trace = r["trace"]
    gpu = np.array([run_gpu_time(trace, r["arch"], weights_bytes_per_gpu=r["weights_bytes_per_gpu"],
                                 kv_bytes_per_token_per_gpu=r["kv_bytes_per_token_per_gpu"], hw=r["hw"],
                                 gemm_efficiency=float(e8), eff=r["eff"]) for e8 in GRID_E8])
    return {"row": row, "gpu_s": gpu, "steps": float(trace.steps.sum()), "in_flight": float(trace.in_flight.sum()),
            "streaming": trtllm_inflight_inputs(row)["streaming"],
            "tokens": trace.requests * row.output_tokens / row.tp, "published": row.per_gpu}


def fit_runs(terms: list[dict]) -> tuple[float, float, float, float, float]:
    """(e8, F, c, c streamed, RMS of the log error) of the whole-run prediction on the grid (ties: the first
    in grid order)."""
    f, c, cs = np.meshgrid(GRID_F, GRID_C, GRID_C, indexing="ij")
    best = None
    for i, e8 in enumerate(GRID_E8):
        sq = np.zeros_like(f)
        for t in terms:
            total = t["gpu_s"][i] + t["steps"] * f + t["in_flight"] * (cs if t["streaming"] else c)
            sq += np.log(t["tokens"] / total / t["published"]) ** 2
        rms = np.sqrt(sq / len(terms))
        j = np.unravel_index(int(np.argmin(rms)), rms.shape)
        if best is None or rms[j] < best[4]:
            best = (float(e8), float(f[j]), float(c[j]), float(cs[j]), float(rms[j]))
    return best


def simulate(isl: int, osl: int, requests: int, pool_tokens: int, max_batch: int, budget: int, policy: str) -> float:
    """Mean sequences in generation per iteration, over a whole run of ``requests`` of one length queued at
    t = 0 (a sketch of the capacity and micro-batch schedulers: prompts in chunks within ``budget`` tokens
    an iteration, one token for each sequence in generation; ``no_evict`` admits a request only when the
    pool holds it at its full length; ``max_utilization`` admits on the pages of its prompt and, when a
    step's new tokens do not fit, pauses the newest request, which frees its pages and later recomputes
    its prompt and the tokens it had generated)."""
    from collections import deque

    waiting = deque(range(requests))
    out = [0] * requests
    run: dict[int, list[int]] = {}      # id -> [context to process, context done, pages held, admission order]
    steps = in_gen = finished = order = 0
    while finished < requests:
        steps += 1
        gen = [i for i, s in run.items() if s[1] >= s[0]]
        if policy == "max_utilization":
            while run and sum(s[2] for s in run.values()) + len(gen) > pool_tokens:
                newest = max(run, key=lambda i: run[i][3])
                run.pop(newest)
                waiting.appendleft(newest)
                gen = [i for i in gen if i != newest]
        tokens = len(gen)
        for s in run.values():
            if s[1] < s[0] and tokens < budget:
                take = min(s[0] - s[1], budget - tokens)
                s[1] += take
                tokens += take
        held = len(run) * (isl + osl) if policy == "no_evict" else sum(s[2] for s in run.values())
        while waiting and tokens < budget and len(run) < max_batch:
            i = waiting[0]
            need = isl + osl if policy == "no_evict" else isl + out[i]
            if held + need > pool_tokens:
                break
            waiting.popleft()
            order += 1
            take = min(isl + out[i], budget - tokens)
            run[i] = [isl + out[i], take, isl + out[i], order]
            tokens += take
            held += need
        for i in gen:
            out[i] += 1
            run[i][2] += 1
            if out[i] >= osl:
                del run[i]
                finished += 1
        in_gen += len(gen)
    return in_gen / steps


def main() -> None:
    rows = [r for rel in INFLIGHT for r in trtllm_rows(rel)]
    runs = [run_terms(r) for r in rows]
    e8, f, c, cst, rms = fit_runs(runs)
    steady = [row_terms(r) for r in rows]
    e8s, fs, cs, css, rmss = fit(steady)
    e8o, fo, co, cso, rmso = fit(steady, overlapped=True)
    one = [{**t, "streaming": False} for t in steady]
    e81, f1, c1, _, rms1 = fit(one)
    prof = engine_profile("tensorrt-llm")
    print("fit on the 20 in-flight rows (0.10.0 streamed, 0.11.0 not), the steady state of serve(), HBM "
          "efficiency 0.80 (shipped):")
    print(f"  gemm_efficiency_8bit = {e8s:.2f}, iteration_host_time_s = {fs:.4f}, host_time_per_sequence_s = {cs:.1e}, "
          f"host_time_per_streamed_sequence_s = {css:.1e}; RMS of the log error {rmss:.4f}")
    print(f"  one per-sequence term for both releases: e8 {e81:.2f}, F {f1:.4f}, c {c1:.1e}, RMS {rms1:.4f}")
    print(f"  overlapped host time max(GPU, F + c B) instead of additive: e8 {e8o:.2f}, F {fo:.4f}, c {co:.1e} / "
          f"{cso:.1e}, RMS {rmso:.4f}")
    print(f"  whole runs instead (start-up and drain, benchmark_run): e8 {e8:.2f}, F {f:.4f}, c {c:.1e} / {cst:.1e}, "
          f"RMS {rms:.4f}")
    print(f"shipped: gemm_efficiency_8bit = {prof.efficiency.get('gemm_efficiency_8bit')}, iteration_host_time_s = "
          f"{prof.iteration_host_time_s}, host_time_per_sequence_s = {prof.host_time_per_sequence_s}, "
          f"host_time_per_streamed_sequence_s = {prof.host_time_per_streamed_sequence_s}")
    print("row                               slots  requests  in flight  published  generic  tensorrt-llm  whole run")
    errs = []
    for r in rows:
        gen = trtllm_model_per_gpu(r) / r.per_gpu - 1
        run = trtllm_run_per_gpu(r) / r.per_gpu - 1
        st = trtllm_engine_per_gpu(r).tokens_per_s_per_gpu / r.per_gpu - 1
        tr = trtllm_run_inputs(r)["trace"]
        errs.append(st)
        print(f"  {r.release:7s} {r.system} TP {r.tp} {r.input_tokens:>4d}/{r.output_tokens:<4d} "
              f"{trtllm_inflight_inputs(r)['batch_size']:5d} {tr.requests:9d} {tr.mean_in_flight:9.0f} "
              f"{r.per_gpu:10.1f}  {gen:+7.1%}  {st:+9.1%}     {run:+.1%}")
    e = np.array(errs)
    print(f"  shipped values: RMS {np.sqrt(np.mean(np.log1p(e) ** 2)):.4f} (log), largest |error| {np.max(np.abs(e)):.1%}")
    print("static rows (gptSessionBenchmark), prefill then decode (validation.trtllm_static_per_gpu), the shipped "
          "GPU terms: no host time, and the in-flight F + c B per decode step:")
    for rel in STATIC:
        for r in trtllm_rows(rel):
            print(f"  {rel} {r.system} TP {r.tp} {r.input_tokens}/{r.output_tokens} batch {r.batch}: "
                  f"{trtllm_static_per_gpu(r) / r.per_gpu - 1:+.1%}, {trtllm_static_per_gpu(r, host_time=True) / r.per_gpu - 1:+.1%}")
    rel = trtllm_releases()["0.10.0"]
    for isl, osl, system in ((128, 2048, "dgx-h100"), (2048, 2048, "dgx-h100")):
        row = next(r for r in trtllm_rows("0.10.0") if (r.system, r.tp, r.input_tokens, r.output_tokens)
                   == (system, 2, isl, osl))
        b = trtllm_inflight_inputs(row)["batch_size"]
        pool = b * (isl + osl)
        for policy in ("no_evict", "max_utilization"):
            m = simulate(isl, osl, int(rel["requests"]), pool, int(rel["max_batch_size"]), int(rel["max_num_tokens"]),
                         policy)
            print(f"event simulation {isl}/{osl} {system} TP 2, pool {pool:,} tokens = {b} x (L_in + L_out), "
                  f"2000 requests, {policy}: {m:.0f} sequences in generation per iteration on average")


if __name__ == "__main__":
    main()
