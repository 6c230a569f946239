"""Predicted against published serving runs (``data/validation/mlperf_llama2_70b.yaml``).

MLPerf Inference Llama 2 70B, NVIDIA's closed-division TensorRT-LLM submissions on 8 GPUs
(inference_results_v4.0 and v4.1). The data file holds, each value with the file it comes from:

* ``benchmark``: the request mix and latency limits (model, precision, input and output tokens,
  the spread of output lengths, TTFT and TPOT limits at their percentile);
* ``engines``: the submitter's tensor parallelism and engine batch per system and scenario;
* ``rounds``: what differs by round (the engine's token budget per step, the KV-cache scheduler);
* ``results``: the published output tokens per second of the 8 GPUs.

:func:`mlperf_scenario` turns a (round, system, scenario) into this package's scenario: Offline
is saturated batches with no latency limit (``arrival: offline``), Server is Poisson arrivals
with the limits at their percentile (``arrival: poisson``), both with the submitter's engine.
:func:`mlperf_predicted` is the model's output tokens per second of the 8 GPUs for it, comparable
with the published ``tokens_per_s``. The checks are ``tests/test_inference_queue.py``; the table
of rows and errors is in docs/inference.md and ``notebooks/05_inference``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from gpucluster_lib.catalog import load_catalog
from gpucluster_lib.errors import GpuClusterError
from gpucluster_lib.inference.serve import serve
from gpucluster_lib.resources import data_path, load_yaml
from gpucluster_lib.scenario import Scenario, from_dict
from gpucluster_lib.workloads.transformer import load_presets

MLPERF_PATH = data_path("validation", "mlperf_llama2_70b.yaml")

#: MLPerf's scenario names -> this package's arrival process
ARRIVALS = {"offline": "offline", "server": "poisson"}
#: an Offline run has no latency limit: limits far above any step time
NO_LIMIT_S = 1e6


@dataclass(frozen=True)
class MlperfRow:
    """One published result: ``tokens_per_s`` output tokens per second of the 8 GPUs."""

    id: str
    round: str
    system: str
    scenario: str
    label: str
    tokens_per_s: float
    source: str


def _read_table(path: str, what: str) -> Any:
    """A validation table's YAML, read as every shipped data file is (:func:`resources.load_yaml`);
    a missing or broken file is a GpuClusterError naming ``what`` and the path."""
    try:
        with open(path, encoding="utf-8") as fh:
            return load_yaml(fh)
    except (OSError, yaml.YAMLError) as exc:
        raise GpuClusterError(f"cannot read the {what} {path}: {exc}") from exc


@lru_cache(maxsize=4)
def _load(path: str) -> dict[str, Any]:
    data = _read_table(path, "MLPerf serving table")
    for key in ("benchmark", "engines", "rounds", "results"):
        if not isinstance(data, dict) or key not in data:
            raise GpuClusterError(f"the MLPerf serving table {path} has no '{key}' section")
    if not isinstance(data["benchmark"], dict) or not isinstance(data["rounds"], dict):
        raise GpuClusterError(f"the MLPerf serving table {path}: 'benchmark' and 'rounds' are mappings (key: value)")
    fields = ("system", "scenario", "tensor_parallel", "batch_size")
    for key, entries, need in (("results", data["results"], tuple(MlperfRow.__dataclass_fields__)),
                               ("engines", data["engines"], fields)):
        for i, entry in enumerate(entries if isinstance(entries, list) else [None]):
            missing = [k for k in need if not isinstance(entry, dict) or k not in entry]
            if missing:
                raise GpuClusterError(f"the MLPerf serving table {path}: entry {i + 1} of '{key}' has no "
                                      f"{', '.join(missing)}; each entry of '{key}' needs {', '.join(need)}")
    for name, rnd in data["rounds"].items():
        missing = [k for k in ("max_num_tokens", "kv_cache_scheduling") if not isinstance(rnd, dict) or k not in rnd]
        if missing:
            raise GpuClusterError(f"the MLPerf serving table {path}: round {name} has no {', '.join(missing)}")
    return data


def load_mlperf(path: str | Path | None = None) -> dict[str, Any]:
    """The data file as a mapping (benchmark, engines, rounds, results)."""
    return _load(str(path or MLPERF_PATH))


def _benchmark(path: str | Path | None, key: str) -> Any:
    """``benchmark.<key>`` of the MLPerf serving table; a GpuClusterError naming the key, the table and the fix
    when it is missing (the shipped data/validation/mlperf_llama2_70b.yaml has every key, each with its source)."""
    b = load_mlperf(path)["benchmark"]
    if not isinstance(b, dict) or key not in b:
        raise GpuClusterError(f"the MLPerf serving table {path or MLPERF_PATH} has no 'benchmark.{key}': add it to "
                              f"its benchmark section ({_BENCHMARK_KEYS.get(key, 'see the shipped table')})")
    return b[key]


#: what each key of the table's ``benchmark`` section holds, for the error that names a missing one
_BENCHMARK_KEYS = {
    "model_preset": "the model preset served, e.g. llama2-70b",
    "precision": "the serving precision, e.g. fp8",
    "input_tokens": "mean prompt tokens of the request set",
    "output_tokens": "mean output tokens of the request set",
    "output_tokens_cv": "the spread of output lengths, standard deviation over the mean",
    "ttft_slo_s": "the Server scenario's TTFT limit [s]",
    "tpot_slo_s": "the Server scenario's TPOT limit [s]",
    "slo_percentile": "the percentile of both limits, e.g. 99",
    "gpus": "the GPUs of the system the results are for, e.g. 8",
    "min_duration_s": "the run's scheduled duration [s]: LoadGen's summary line 'min_duration (ms)' / 1000, "
                      "2400 for the shipped rows",
}


def mlperf_rows(path: str | Path | None = None) -> list[MlperfRow]:
    """The published results, in the file's order."""
    return [MlperfRow(**{k: r[k] for k in MlperfRow.__dataclass_fields__}) for r in load_mlperf(path)["results"]]


def mlperf_serving_engine(path: str | Path | None = None) -> str:
    """The serving engine profile of the submitter's engine (the table's ``benchmark.serving_engine``)."""
    return str(load_mlperf(path)["benchmark"].get("serving_engine", "generic"))


def mlperf_engine(round_: str, system: str, scenario: str, path: str | Path | None = None) -> dict[str, Any]:
    """The submitter's engine as ``inference`` scenario keys: tensor parallelism, engine batch, token
    budget per step and KV-cache scheduling."""
    data = load_mlperf(path)
    match = [e for e in data["engines"] if e["system"] == system and e["scenario"] == scenario]
    if not match:
        raise GpuClusterError(f"no MLPerf engine for {system} {scenario} in {path or MLPERF_PATH}")
    if round_ not in data["rounds"]:
        raise GpuClusterError(f"no MLPerf round {round_!r} in {path or MLPERF_PATH} "
                              f"(rounds: {', '.join(data['rounds'])})")
    rnd = data["rounds"][round_]
    return {"tensor_parallel": match[0]["tensor_parallel"], "batch_size": match[0]["batch_size"],
            "max_num_tokens": rnd["max_num_tokens"], "kv_cache_scheduling": rnd["kv_cache_scheduling"]}


def mlperf_inference(scenario: str, path: str | Path | None = None) -> dict[str, Any]:
    """The benchmark's request mix and limits as ``inference`` scenario keys for an MLPerf scenario
    (``offline``: no latency limit; ``server``: Poisson arrivals, limits at their percentile)."""
    if scenario not in ARRIVALS:
        raise GpuClusterError(f"unknown MLPerf scenario {scenario!r}; use one of {', '.join(ARRIVALS)}")
    inf = {key: _benchmark(path, key) for key in ("precision", "input_tokens", "output_tokens", "output_tokens_cv")}
    inf["arrival"] = ARRIVALS[scenario]
    if scenario == "offline":
        inf.update(ttft_slo_s=NO_LIMIT_S, tpot_slo_s=NO_LIMIT_S)
    else:
        inf.update({key: _benchmark(path, key) for key in ("ttft_slo_s", "tpot_slo_s", "slo_percentile")})
    streaming = load_mlperf(path)["benchmark"].get("streaming") or {}
    inf["streaming"] = bool(streaming.get(scenario, False)) if isinstance(streaming, dict) else False
    return inf


def mlperf_scenario(round_: str, system: str, scenario: str, path: str | Path | None = None,
                    **inference: Any) -> Scenario:
    """One node of ``system`` serving the benchmark with the submitter's engine; ``inference`` keys
    given here replace the table's."""
    inf = {**mlperf_inference(scenario, path), **mlperf_engine(round_, system, scenario, path), **inference}
    return from_dict({"model": {"preset": _benchmark(path, "model_preset")}, "hardware": {"server": system, "nodes": 1},
                      "inference": inf})


def loadgen_completed_factor(duration_s: float, last_request_latency_s: float) -> float:
    """LoadGen's Server "Completed tokens per second" over the sustained rate [dimensionless].

    mlcommons/inference ``loadgen/results.cc`` (the Server summary; tag v4.0 l.573-574, tag v4.1 l.584-585, the
    LoadGen of the two rounds here): ``tps_as_completed = token_count / final_query_all_samples_done_time``, and
    ``loadgen/loadgen.cc`` (l.582-583 at both tags): ``final_query_all_samples_done_time =
    DurationToSeconds(final_query.all_samples_done_time - start)``, the time the last *scheduled* query
    completes. The queries are scheduled over ``duration_s`` (``final_query_scheduled_time``, at least the
    run's ``min_duration``), so the tokens of ``rate x duration_s`` requests are divided by ``duration_s +
    last_request_latency_s`` [s]: the factor is ``D / (D + latency)``. E.g. D = 2,400 s and 24 s give
    2400 / 2424 = 0.9901.
    """
    if not (math.isfinite(duration_s) and math.isfinite(last_request_latency_s)) \
            or duration_s <= 0 or last_request_latency_s < 0:
        raise GpuClusterError(f"need a positive duration and a non-negative latency, got {duration_s!r}, "
                              f"{last_request_latency_s!r}")
    return duration_s / (duration_s + last_request_latency_s)


def mlperf_predicted(row: MlperfRow, catalog: Any = None, path: str | Path | None = None,
                     engine: str = "generic") -> float:
    """The model's output tokens per second of the 8 GPUs for a published row, with the serving engine
    profile ``engine`` (``generic``: no engine terms; the submitter's is the table's ``serving_engine``).

    Offline: the sustained rate. Server: the sustained rate at the max Poisson rate as LoadGen counts it,
    times :func:`loadgen_completed_factor` of the run's scheduled duration (``benchmark.min_duration_s``) and
    the latency of the last request (``ServingEstimate.load['last_request_latency_s']``,
    :func:`~gpucluster_lib.inference.queueing.last_request_latency`)."""
    est = serve(mlperf_scenario(row.round, row.system, row.scenario, path, engine=engine), catalog,
                drain_latency=row.scenario == "server")
    tokens = est.tokens_per_s_per_gpu * _benchmark(path, "gpus")
    if row.scenario == "server" and est.load and est.load.get("last_request_latency_s") is not None:
        tokens *= loadgen_completed_factor(float(_benchmark(path, "min_duration_s")),
                                           est.load["last_request_latency_s"])
    return tokens


def mlperf_accuracy_rows(catalog: Any = None, path: str | Path | None = None) -> list[dict[str, Any]]:
    """Every published MLPerf row with the generic engine's error, ``predicted / published - 1`` on the throughput
    (positive: the estimate serves more), and the accelerator, model and precision it ran: the input of the
    serving part of data/validation/accuracy.yaml (gpucluster_lib/accuracy.py)."""
    cat = catalog or load_catalog()
    model = str(_benchmark(path, "model_preset"))
    presets = load_presets()
    name = str(presets[model].get("name") or model) if model in presets else model
    out = []
    for row in mlperf_rows(path):
        out.append({"accelerator": str(cat.get("servers", row.system)["gpu_id"]), "round": row.round,
                    "scenario": row.scenario, "model": name, "precision": str(_benchmark(path, "precision")),
                    "error": mlperf_predicted(row, cat, path) / row.tokens_per_s - 1.0})
    return out


# -- TensorRT-LLM's own throughput tables ------------------------------------------------------------

TRTLLM_PATH = data_path("validation", "trtllm_llama2_70b_fp8.yaml")
#: the tables' model, precision and systems: Llama 2 70B in FP8 on one DGX H100 or H200 node
TRTLLM_MODEL = "llama2-70b"
_TRTLLM_METHODS = ("static", "inflight")


@dataclass(frozen=True)
class TrtllmRow:
    """One row of a TensorRT-LLM release's table: ``tokens_per_s`` as published (per GPU for a static
    row, of the TP group for an in-flight one), ``batch`` the stated batch of a static row."""

    release: str
    method: str
    system: str
    tp: int
    input_tokens: int
    output_tokens: int
    tokens_per_s: float
    batch: int | None = None

    @property
    def per_gpu(self) -> float:
        """Published output tokens per second per GPU."""
        return self.tokens_per_s if self.method == "static" else self.tokens_per_s / self.tp


@lru_cache(maxsize=4)
def _load_trtllm(path: str) -> dict[str, Any]:
    data = _read_table(path, "TensorRT-LLM table")
    releases = data.get("releases") if isinstance(data, dict) else None
    if not isinstance(releases, dict) or not releases:
        raise GpuClusterError(f"the TensorRT-LLM table {path} has no 'releases' section")
    for name, rel in releases.items():
        if rel.get("method") not in _TRTLLM_METHODS or not rel.get("file") or not rel.get("rows"):
            raise GpuClusterError(f"release {name} of {path} needs a method ({' or '.join(_TRTLLM_METHODS)}), "
                                  "the file its table is in, and rows")
        if rel["method"] == "static" and any(r.get("batch") is None for r in rel["rows"]):
            raise GpuClusterError(f"release {name} of {path}: every static row states its batch")
        if rel["method"] == "inflight" and any(k not in rel for k in ("max_batch_size", "max_num_tokens",
                                                                        "kv_cache_scheduling")):
            raise GpuClusterError(f"release {name} of {path}: an in-flight table names its engine limits "
                                  "(max_batch_size, max_num_tokens) and its KV-cache scheduling")
    return releases


def trtllm_releases(path: str | Path | None = None) -> dict[str, dict[str, Any]]:
    """The releases of the data file, each with its method, source file, engine settings and rows."""
    return _load_trtllm(str(path or TRTLLM_PATH))


def trtllm_rows(release: str, path: str | Path | None = None) -> list[TrtllmRow]:
    """The rows of one release's table, in the file's order."""
    rels = trtllm_releases(path)
    if release not in rels:
        raise GpuClusterError(f"no TensorRT-LLM release {release!r} in {path or TRTLLM_PATH} "
                              f"(releases: {', '.join(rels)})")
    rel = rels[release]
    return [TrtllmRow(release=release, method=rel["method"], **r) for r in rel["rows"]]


def trtllm_check_rows(release: str, path: str | Path | None = None) -> list[TrtllmRow]:
    """The rows of one release's table kept as a check set, outside the fit (``check_rows``; none if absent)."""
    rel = trtllm_releases(path)[release]
    return [TrtllmRow(release=release, method=rel["method"], **r) for r in rel.get("check_rows") or []]


def trtllm_row(release: str, system: str, tp: int, input_tokens: int, output_tokens: int,
               path: str | Path | None = None) -> TrtllmRow:
    """The row of ``release`` for one system, TP and pair of lengths."""
    for r in trtllm_rows(release, path):
        if (r.system, r.tp, r.input_tokens, r.output_tokens) == (system, tp, input_tokens, output_tokens):
            return r
    raise GpuClusterError(f"TensorRT-LLM {release} has no row for {system} at TP {tp}, "
                          f"{input_tokens}/{output_tokens} tokens")


def trtllm_model_per_gpu(row: TrtllmRow, catalog: Any = None, path: str | Path | None = None) -> float:
    """The model's output tokens per second per GPU at the row's own settings: lengths of one value
    (no spread), FP8, no latency limit; a static row at its stated batch, an in-flight row at the
    release's engine limits and scheduler with the batch the smaller of the engine's limit and the KV
    pool (the engine admits what fits)."""
    inf: dict[str, Any] = {"precision": "fp8", "input_tokens": row.input_tokens, "output_tokens": row.output_tokens,
                           "output_tokens_cv": 0.0, "arrival": "offline", "ttft_slo_s": NO_LIMIT_S,
                           "tpot_slo_s": NO_LIMIT_S, "tensor_parallel": row.tp}
    rel = trtllm_releases(path)[row.release]

    def run(extra: dict[str, Any]) -> Any:
        sc = from_dict({"model": {"preset": TRTLLM_MODEL}, "hardware": {"server": row.system, "nodes": 1},
                        "inference": {**inf, **extra}})
        return serve(sc, catalog)

    if row.method == "static":
        return run({"batch_size": row.batch, "kv_cache_scheduling": "no_evict"}).tokens_per_s_per_gpu
    engine = {"max_num_tokens": rel["max_num_tokens"], "kv_cache_scheduling": rel["kv_cache_scheduling"]}
    pool = run(engine).max_batch
    return run({**engine, "batch_size": min(int(rel["max_batch_size"]), pool)}).tokens_per_s_per_gpu


def trtllm_inflight_inputs(row: TrtllmRow, catalog: Any = None, path: str | Path | None = None) -> dict[str, Any]:
    """The ``inference`` keys of an in-flight row for the ``tensorrt-llm`` engine (docs/inference.md,
    "Serving engine profiles"): the release's engine limits, and the batch its KV pool holds.

    * The pool: TensorRT-LLM gives the KV cache ``kv_cache_free_gpu_mem_fraction`` of the memory left
      free once the engine is loaded (perf-best-practices.md), not a share of the whole HBM: the model's
      ``memory_utilization`` is set so that its pool is that fraction of HBM less weights, workspace and
      runtime memory.
    * The batch: every request has one length and all are queued at t = 0, so they run in waves that
      start (within the token budget's admission) and finish together; under ``no_evict`` (0.11.0) the
      pool holds a wave at its final length ``L_in + L_out``, and the batch is the smaller of the
      engine's ``max_batch_size`` and that pool; the engine caps it further by its token budget.
      0.10.0 ran ``max_utilization``, which admits on the pages of the next step and pauses the newest
      requests when the pool runs out: an event simulation of it (``scripts/calibrate_serving.py``) holds
      more sequences (409 against 222 at 128/2048 on the DGX H100). Its rows are sized at the full-length
      pool all the same, an empirical choice: 0.11.0 is above 0.10.0 at three of the four lengths on the
      same GPUs, which a 1.3-1.8 times larger 0.10.0 batch could not give (docs/inference.md, "Serving
      engine profiles").
    """
    rel = trtllm_releases(path)[row.release]
    if row.method != "inflight":
        raise GpuClusterError(f"{row.release} is a static table: no in-flight inputs")
    inf = {"precision": "fp8", "input_tokens": row.input_tokens, "output_tokens": row.output_tokens,
           "output_tokens_cv": 0.0, "arrival": "offline", "ttft_slo_s": NO_LIMIT_S, "tpot_slo_s": NO_LIMIT_S,
           "tensor_parallel": row.tp, "max_num_tokens": rel["max_num_tokens"], "kv_cache_scheduling": "no_evict",
           "engine": "tensorrt-llm", "streaming": bool(rel.get("streaming", False))}
    sc = from_dict({"model": {"preset": TRTLLM_MODEL}, "hardware": {"server": row.system, "nodes": 1},
                    "inference": inf})
    mem = serve(sc, catalog, facility_budget=False).memory_per_gpu_bytes
    held = mem["weights"] + mem["workspace"] + mem["runtime"]
    frac = float(rel["kv_cache_free_gpu_mem_fraction"])
    inf["memory_utilization"] = min((held + frac * (mem["total"] - held)) / mem["total"], 1.0)
    sc = from_dict({"model": {"preset": TRTLLM_MODEL}, "hardware": {"server": row.system, "nodes": 1},
                    "inference": inf})
    pool = serve(sc, catalog, facility_budget=False).max_batch
    inf["batch_size"] = max(min(int(rel["max_batch_size"]), pool), 1)
    return inf


def trtllm_engine_per_gpu(row: TrtllmRow, catalog: Any = None, path: str | Path | None = None) -> Any:
    """The ``tensorrt-llm`` engine's steady-state estimate (a ServingEstimate) for an in-flight row, at
    :func:`trtllm_inflight_inputs`."""
    sc = from_dict({"model": {"preset": TRTLLM_MODEL}, "hardware": {"server": row.system, "nodes": 1},
                    "inference": trtllm_inflight_inputs(row, catalog, path)})
    return serve(sc, catalog, facility_budget=False)


def trtllm_requests(row: TrtllmRow, path: str | Path | None = None) -> int:
    """The number of requests of an in-flight row's run (the release's ``requests``: one number, or one per
    input/output pair)."""
    req = trtllm_releases(path)[row.release].get("requests")
    if isinstance(req, dict):
        req = req.get(f"{row.input_tokens}/{row.output_tokens}")
    if not isinstance(req, int) or req < 1:
        raise GpuClusterError(f"release {row.release} of {path or TRTLLM_PATH} gives no request count for "
                              f"{row.input_tokens}/{row.output_tokens}")
    return req


def trtllm_run_inputs(row: TrtllmRow, catalog: Any = None, path: str | Path | None = None) -> dict[str, Any]:
    """What a whole-run prediction of an in-flight row needs: its run trace (:mod:`.benchmark_run`: the
    release's request count, the slots of :func:`trtllm_inflight_inputs`, the token budget), the replica's
    hardware, the efficiencies and the engine profile of the ``tensorrt-llm`` estimate."""
    from gpucluster_lib.hardware.resolve import resolve_hardware
    from gpucluster_lib.inference.benchmark_run import trace_run
    from gpucluster_lib.inference.efficiency import ServingEfficiency
    from gpucluster_lib.inference.engines import engine_profile
    from gpucluster_lib.inference.latency import ReplicaHardware
    from gpucluster_lib.workloads.transformer import resolve_transformer

    inf = trtllm_inflight_inputs(row, catalog, path)
    sc = from_dict({"model": {"preset": TRTLLM_MODEL}, "hardware": {"server": row.system, "nodes": 1},
                    "inference": inf})
    est = serve(sc, catalog, facility_budget=False)
    acc = resolve_hardware(sc, catalog).accelerator
    hw = ReplicaHardware(float(acc["fp8_tflops"]), float(acc["memory_bandwidth_gb_per_s"]),
                         float(acc["scaleup_bandwidth_gb_per_s"]) / 2, row.tp)
    eff = ServingEfficiency(**{k: est.efficiency[k] for k in ServingEfficiency.__dataclass_fields__})
    trace = trace_run(trtllm_requests(row, path), row.input_tokens, row.output_tokens, int(inf["batch_size"]),
                      int(inf["max_num_tokens"]))
    return {"trace": trace, "arch": resolve_transformer(TRTLLM_MODEL), "hw": hw, "eff": eff,
            "weights_bytes_per_gpu": est.weights_bytes_per_gpu,
            "kv_bytes_per_token_per_gpu": est.kv_cache_bytes_per_token_per_gpu,
            "gemm_efficiency": est.efficiency["gemm_efficiency_used"], "engine": engine_profile(inf["engine"]),
            "streaming": bool(inf.get("streaming", False))}


def trtllm_run_per_gpu(row: TrtllmRow, catalog: Any = None, path: str | Path | None = None) -> float:
    """The ``tensorrt-llm`` engine's output tokens per second per GPU over an in-flight row's whole run, as
    gptManagerBenchmark measures it (:mod:`.benchmark_run`): every request's output over the run's time,
    start-up and drain included."""
    from gpucluster_lib.inference.benchmark_run import run_gpu_time, run_host_time

    r = trtllm_run_inputs(row, catalog, path)
    gpu = run_gpu_time(r["trace"], r["arch"], weights_bytes_per_gpu=r["weights_bytes_per_gpu"],
                       kv_bytes_per_token_per_gpu=r["kv_bytes_per_token_per_gpu"], hw=r["hw"],
                       gemm_efficiency=r["gemm_efficiency"], eff=r["eff"])
    total = gpu + run_host_time(r["trace"], r["engine"], r["streaming"])
    return r["trace"].requests * row.output_tokens / total / row.tp


def trtllm_static_per_gpu(row: TrtllmRow, catalog: Any = None, path: str | Path | None = None,
                          engine: str = "tensorrt-llm", host_time: bool = False) -> float:
    """A static row (``gptSessionBenchmark``: one batch of ``row.batch``, the whole batch's prefill, then
    ``L_out`` decode steps at the mean context ``L_in + L_out / 2``) with the GPU terms of ``engine``'s
    profile, and its host time per decode step when ``host_time`` (the batch manager's, which this runtime
    does not run: a check) [output tokens/s per GPU]. A check set, not a calibration (docs/inference.md)."""
    from gpucluster_lib.hardware.resolve import resolve_hardware
    from gpucluster_lib.inference.engines import engine_efficiency, engine_profile
    from gpucluster_lib.inference.latency import (
        ReplicaHardware,
        decode_attention_flops,
        linear_flops_per_token,
        prefill_attention_flops,
        tp_comm_time,
    )
    from gpucluster_lib.units import GB, TERA
    from gpucluster_lib.workloads.transformer import resolve_transformer

    if row.method != "static" or not row.batch:
        raise GpuClusterError(f"{row.release} {row.system}: not a static row with a batch")
    inf = {"precision": "fp8", "input_tokens": row.input_tokens, "output_tokens": row.output_tokens,
           "arrival": "offline", "ttft_slo_s": NO_LIMIT_S, "tpot_slo_s": NO_LIMIT_S, "tensor_parallel": row.tp,
           "batch_size": row.batch, "engine": engine}
    sc = from_dict({"model": {"preset": TRTLLM_MODEL}, "hardware": {"server": row.system, "nodes": 1},
                    "inference": inf})
    est = serve(sc, catalog, facility_budget=False)
    prof = engine_profile(engine)
    eff = engine_efficiency(sc.inference, prof)
    arch = resolve_transformer(TRTLLM_MODEL)
    acc = resolve_hardware(sc, catalog).accelerator
    hw = ReplicaHardware(float(acc["fp8_tflops"]), float(acc["memory_bandwidth_gb_per_s"]),
                         float(acc["scaleup_bandwidth_gb_per_s"]) / 2, row.tp)
    compute = hw.peak_tflops * TERA * eff.gemm_efficiency("fp8")
    bw = hw.memory_bandwidth_gb_per_s * GB * eff.memory_bandwidth_efficiency
    b, lin, lout, tp = row.batch, row.input_tokens, row.output_tokens, row.tp
    prefill = (b * (lin * linear_flops_per_token(arch) + prefill_attention_flops(arch, lin)) / tp / compute
               + float(tp_comm_time(arch, b * lin, hw, eff)))
    ctx = lin + lout / 2
    decode = (max(est.weights_bytes_per_gpu / bw, b * linear_flops_per_token(arch) / tp / compute)
              + max(b * ctx * est.kv_cache_bytes_per_token_per_gpu / bw,
                    b * float(decode_attention_flops(arch, ctx)) / tp / compute)
              + float(tp_comm_time(arch, b, hw, eff)) + eff.decode_step_overhead_s)
    if host_time:
        decode += float(prof.host_time(b))
    return b * lout / (prefill + lout * decode) / tp


def trtllm_ratio(row: TrtllmRow, catalog: Any = None, path: str | Path | None = None) -> float:
    """Published / model output tokens per second per GPU for one row."""
    return row.per_gpu / trtllm_model_per_gpu(row, catalog, path)
