"""What sets the MLPerf Llama 2 70B server rows below the offline ones, and the TP 2 all-reduce, sized.

Reproduces the figures of docs/inference.md ("What the published runs show beyond the step line",
items 1 and 2) and docs/validation.md ("Candidate mechanisms measured", the server and all-reduce
items), and prints them:

* server over offline, published and modelled, for the four server rows;
* the model's replica at the published server rate: its mean decode batch and p99 TPOT against the
  published decode sequences (Little's law on the summary) and p99 TPOT;
* the KV-cache slots: the server rows with the engine's cap lowered to 900, 800 and 730 sequences, and
  Erlang's C at the published decode sequences;
* LoadGen's early stopping: the percentile a run of N queries has to meet, and the rows at it;
* the TP 2 all-reduce: its bytes at the mean step, the kernel TensorRT-LLM's ``AUTO`` strategy picks for
  them, the model's time per call, and what a 10% slower TP 2 step would ask of it.

Sources:

* published rows and engines: ``gpucluster_lib/data/validation/mlperf_llama2_70b.yaml`` (each value with
  its file); completed queries/s, mean latency and mean TTFT of the server summaries
  (``results/<system>/llama2-70b-99.9/Server/performance/run_1/mlperf_log_summary.txt``, v4.0 and v4.1):
  v4.0 DGX H100 70.42, 40.055 s, 0.382 s; v4.0 H200 90.35, 48.395 s, 0.413 s; v4.1 DGX H100 74.42 q/s and
  831 sequences; v4.1 H200 100.35, 35.855 s, 0.198 s (the decode sequences as in
  tests/test_inference_queue.py, ``PUBLISHED_STEPS``);
* early stopping: mlcommons/inference ``loadgen/early_stopping.cc``: a run passes when the count t of
  queries over the latency limit among n satisfies ``BetaRegularized(p, n - t, 1 + t) <= 1 - c``, the
  binomial CDF, with p = 0.99 and confidence c = 0.99 (near ``n (1 - p) - 2.326 sqrt(n p (1 - p))``, its
  normal approximation); n = queries/s x 2,400 s, the server runs' ``min_duration``: "min_duration (ms):
  2400000" under "Test Parameters Used" of the v4.1 DGX H100 and H200 server summaries above, set by
  NVIDIA's harness (``closed/NVIDIA/configs/llama2-70b/Server/__init__.py``, ``ServerGPUBaseConfig.min_duration
  = 2400000``, v4.1), which overrides LoadGen's default of 600 s (``loadgen/mlperf.conf``); the v4.0 runs are
  taken at the same duration;
* the all-reduce strategy: NVIDIA/TensorRT-LLM ``cpp/tensorrt_llm/plugins/ncclPlugin/allreducePlugin.cpp``
  (``AllreducePlugin::selectImplementation``: a message above the custom kernels' workspace goes to NCCL;
  within it, 2 ranks take the one-shot kernel) and ``tensorrt_llm/plugin/plugin.py``
  (``CustomAllReduceHelper.max_workspace_size_auto``: 16,000,000 bytes for TP <= 2, 8,000,000 above), the
  same value in the older (``two_opt_profiles``) and the current ``plugin.py``.

    PYTHONPATH=. python scripts/mlperf_server_candidates.py
"""

from __future__ import annotations

import math

from gpucluster_lib.inference.efficiency import DEFAULT_EFFICIENCY
from gpucluster_lib.inference.queueing import erlang_c, poisson_quantile
from gpucluster_lib.inference.serve import serve
from gpucluster_lib.inference.validation import mlperf_rows, mlperf_scenario

#: row id: (completed queries/s of the 8 GPUs, replicas, decode sequences per replica, p99 TPOT [s])
PUBLISHED_SERVER = {"v4.0-dgx-h100-server": (70.42, 4, 698, 0.156),
                    "v4.0-dgx-h200-server": (90.35, 8, 542, 0.195),
                    "v4.1-dgx-h100-server": (74.42, 4, 831, 0.175),
                    "v4.1-dgx-h200-server": (100.35, 8, 447, 0.146)}
#: the server runs' minimum duration [s] ("min_duration (ms): 2400000" in their summaries; module doc)
MIN_DURATION_S = 2_400
#: TensorRT-LLM's custom all-reduce workspace for TP <= 2 [bytes] (module doc)
ONE_SHOT_MAX_BYTES_TP2 = 16_000_000
HIDDEN, LAYERS, INPUT, OUTPUT = 8192, 80, 222, 294


def early_stopping_percentile(queries: float, p: float = 0.99, confidence: float = 0.99) -> float:
    """The percentile [%] a run of ``queries`` must meet under LoadGen's early stopping (module doc): the
    most over-limit queries t with ``P(Binomial(n, 1 - p) <= t) <= 1 - confidence``, as ``1 - t / n``."""
    n = int(round(queries))
    q = 1.0 - p
    cdf, allowed = 0.0, -1
    for t in range(n + 1):
        cdf += math.exp(math.lgamma(n + 1) - math.lgamma(t + 1) - math.lgamma(n - t + 1)
                        + t * math.log(q) + (n - t) * math.log(p))
        if cdf > 1.0 - confidence:
            break
        allowed = t
    return 100.0 * (1.0 - max(allowed, 0) / n)


def nccl_step_share(batch: int) -> tuple[float, int, float]:
    """The share of TP 2 steps whose all-reduce goes to NCCL (above the one-shot workspace, module doc), the
    prompts a step needs for that and the mean prompts a step: prompts a step ~ Poisson(batch / L_out), each
    adding its 222 tokens to the batch's one decode token a sequence."""
    prompts, need = batch / OUTPUT, math.ceil((ONE_SHOT_MAX_BYTES_TP2 / (HIDDEN * 2) - batch) / INPUT)
    share = 1.0 - sum(math.exp(-prompts) * prompts ** k / math.factorial(k) for k in range(max(need, 0)))
    return share, need, prompts


def step_s(rnd: str, system: str, batch: int) -> float:
    """The model's mixed-step time (TPOT) of the submitter's engine at ``batch`` sequences [s]."""
    return serve(mlperf_scenario(rnd, system, "offline", batch_size=int(batch))).tpot_s


def model_at_rate(rnd: str, system: str, tokens_per_s_per_replica: float) -> tuple[float, float] | None:
    """The model's replica fed ``tokens_per_s_per_replica``: (mean decode batch by Little's law, b = rate x
    T(b) in tokens, and the step at its Poisson 99th percentile, queueing item 2) or None above its capacity."""
    pool = serve(mlperf_scenario(rnd, system, "offline")).max_batch
    if pool / step_s(rnd, system, pool) < tokens_per_s_per_replica:
        return None
    def step(b: float) -> float:   # linear between whole batches: the throughput is so flat that b moves a lot
        k = min(int(b), pool - 1)
        return step_s(rnd, system, k) + (b - k) * (step_s(rnd, system, k + 1) - step_s(rnd, system, k))

    lo, hi = 1.0, float(pool)
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if mid / step(mid) < tokens_per_s_per_replica else (lo, mid)
    return lo, step_s(rnd, system, min(poisson_quantile(lo, 0.99), pool))


def tokens_per_s(rid: str, **inference: object) -> float:
    row = next(r for r in mlperf_rows() if r.id == rid)
    return serve(mlperf_scenario(row.round, row.system, row.scenario, **inference)).tokens_per_s_per_gpu * 8


def main() -> None:
    rows = {r.id: r for r in mlperf_rows()}
    print("Server over offline, published / model; the model's replica at the published rate")
    for rid, (_qps, replicas, seqs, tpot99) in PUBLISHED_SERVER.items():
        srv, off = rows[rid], rows[rid.replace("server", "offline")]
        model_srv, model_off = tokens_per_s(rid), tokens_per_s(off.id)
        at = model_at_rate(srv.round, srv.system, srv.tokens_per_s / replicas)
        there = ("above the model's capacity" if at is None else
                 f"the model runs {at[0]:.0f} sequences (p99 TPOT {at[1] * 1e3:.0f} ms)")
        print(f"  {rid}: published {srv.tokens_per_s / off.tokens_per_s:.3f}, model {model_srv / model_off:.3f}; "
              f"at {srv.tokens_per_s / replicas:,.0f} tokens/s a replica {there} against the published {seqs} "
              f"({tpot99 * 1e3:.0f} ms)")
    print("KV-cache slots: the server rows with the engine's cap lowered, and Erlang C at the published sequences")
    for rid, (_qps, _replicas, seqs, _tpot) in PUBLISHED_SERVER.items():
        published = rows[rid].tokens_per_s
        est = serve(mlperf_scenario(rows[rid].round, rows[rid].system, "server"))
        slots = min(est.max_batch, mlperf_scenario(rows[rid].round, rows[rid].system, "server").inference.batch_size)
        capped = ", ".join(f"{c}: {tokens_per_s(rid, batch_size=c) / published - 1:+.1%}" for c in (900, 800, 730))
        print(f"  {rid}: {slots} slots (pool {est.max_batch}), model {tokens_per_s(rid) / published - 1:+.1%}; "
              f"cap {capped}; P(wait) at {seqs} sequences {erlang_c(slots, seqs):.1e}")
    print(f"LoadGen early stopping (n = queries/s x {MIN_DURATION_S:,} s)")
    for rid, (qps, _replicas, _seqs, _tpot) in PUBLISHED_SERVER.items():
        pct = early_stopping_percentile(qps * MIN_DURATION_S)
        err = tokens_per_s(rid, slo_percentile=round(pct, 3)) / rows[rid].tokens_per_s - 1
        print(f"  {rid}: n = {qps * MIN_DURATION_S:,.0f}, p{pct:.3f}: {err:+.1%} (p99: "
              f"{tokens_per_s(rid) / rows[rid].tokens_per_s - 1:+.1%})")
    print("TP 2 all-reduce (DGX H100, 450 GB/s NVLink a direction)")
    eff = DEFAULT_EFFICIENCY
    per_call = lambda nbytes: nbytes / (450e9 * eff.link_bandwidth_efficiency) + eff.allreduce_latency_s  # noqa: E731
    print(f"  one-shot up to {ONE_SHOT_MAX_BYTES_TP2 / (HIDDEN * 2):.0f} tokens a step, NCCL above")
    for label, batch in (("offline, 896 sequences", 896), ("server, 698 sequences (published)", 698)):
        tokens = batch * (1 + INPUT / OUTPUT)
        nbytes = tokens * HIDDEN * 2
        route = "one-shot" if nbytes <= ONE_SHOT_MAX_BYTES_TP2 else "NCCL"
        nccl, need, prompts = nccl_step_share(batch)
        print(f"  {label}: {tokens:,.0f} tokens, {nbytes / 1e6:.1f} MB a call -> {route}; {nccl:.0%} of the steps "
              f"({need} prompts or more, {prompts:.2f} a step) on NCCL; model {per_call(nbytes) * 1e6:.0f} us a call, "
              f"{2 * LAYERS * per_call(nbytes) * 1e3:.1f} ms a step")
    est = serve(mlperf_scenario("v4.0", "dgx-h100", "offline"))
    step = sum(est.step_time_breakdown_s.values())
    extra = 0.10 * step / (2 * LAYERS)
    nbytes = 896 * (1 + INPUT / OUTPUT) * HIDDEN * 2
    print(f"  a 10% slower offline step ({step * 1e3:.1f} ms) is {extra * 1e6:.0f} us more a call: "
          f"{nbytes / (per_call(nbytes) + extra) / 1e9:.0f} GB/s effective against the model's "
          f"{nbytes / per_call(nbytes) / 1e9:.0f}")


if __name__ == "__main__":
    main()
