"""``serve(scenario)``: size an LLM serving fleet for a traffic target and latency SLOs.

Wiring only: memory (:mod:`.memory`), timing (:mod:`.latency`), efficiencies
(:mod:`.efficiency`) and the fleet (:mod:`.fleet`) hold the formulas and their sources.

Steps: resolve the model and accelerator; for the tensor-parallel size (given, or each
power of two up to the node's GPUs when ``inference.tensor_parallel`` is absent) find the
largest batch that fits, sweep batch sizes, keep the highest-throughput batch that meets
TTFT and TPOT (continuous batching); keep the size that needs the fewest GPUs for the target
(of two that need as many, the one with more tokens/s per GPU), or without a target the one
whose whole replicas serve the most on the scenario's GPUs; then count replicas for the target,
and nodes, racks and power for those replicas. Design problems are findings, never exceptions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from gpucluster_lib.accuracy import serving_sentence as accuracy_serving_sentence
from gpucluster_lib.calibration.gemm import DEFAULT_CURVES, gemm_curve
from gpucluster_lib.calibration.profile import (
    CalibrationProfile,
    profile_findings,
    scenario_profile,
)
from gpucluster_lib.findings import Finding, sort_findings
from gpucluster_lib.formatting import number_words, plural
from gpucluster_lib.hardware.resolve import catalog_for, resolve_hardware
from gpucluster_lib.inference import mig as mig_mod
from gpucluster_lib.inference.efficiency import OVERRIDE_FIELDS, ServingEfficiency
from gpucluster_lib.inference.engines import (
    DEFAULT_ENGINE,
    EngineProfile,
    engine_efficiency,
    engine_profile,
)
from gpucluster_lib.inference.fleet import FleetSize, per_mw, size_fleet
from gpucluster_lib.inference.latency import (
    ReplicaHardware,
    mean_context_in_flight,
    mixed_step_times,
    prefill_time,
)
from gpucluster_lib.inference.memory import (
    MemoryPlan,
    memory_plan,
    reserved_tokens_per_sequence,
    token_budget,
)
from gpucluster_lib.inference.precision import (
    DEFAULT_KV_PRECISION,
    KV_BYTES,
    WEIGHT_BYTES,
    compute_peak_tflops,
    compute_precision,
    supported_precisions,
)
from gpucluster_lib.inference.queueing import (
    LoadPoint,
    ReplicaCurve,
    last_request_latency,
    load_point,
    max_rate,
    percentile_label,
    poisson_quantile,
)
from gpucluster_lib.inference.vision import serve_vision
from gpucluster_lib.network.topology import fabric_gbps_per_gpu
from gpucluster_lib.scenario import Scenario
from gpucluster_lib.units import GB, GBPS_IN_BYTES_PER_S
from gpucluster_lib.workloads.transformer import TransformerArch, resolve_transformer
from gpucluster_lib.workloads.vision import is_vision_model

ASSUMPTIONS = (
    "continuous (in-flight) batching: on average each step carries B decode tokens and B x L_in / L_out "
    "prompt tokens, each prompt prefilled whole within the step's token budget",
    "tokens/s are output (generated) tokens, as MLPerf Inference reports them",
    "TTFT = one step of waiting + the prompt's own prefill; with Poisson arrivals (MLPerf Server) the waits in "
    "the prefill and KV-slot queues are added",
    "tensor parallelism only (no pipeline or expert parallelism); replicas are independent",
    "int4 is weight-only (W4A16): GEMMs run at 16-bit, only the weight bytes shrink",
    "power and racks: the facility budget for the fleet (only the accelerator comparison uses a quick "
    "estimate: the compute nodes at their peak power, packed by the same rack fit)",
)

#: What the KV cache must hold under each ``inference.kv_cache_scheduling`` policy (TensorRT-LLM's
#: GUARANTEED_NO_EVICT and MAX_UTILIZATION capacity schedulers; see :mod:`.memory`).
KV_ASSUMPTIONS = {
    "no_evict": "each sequence reserves KV cache for its whole input + output length (no eviction)",
    "max_utilization": "the KV cache holds the mean context in flight, not each sequence's whole length "
                       "(maximum-utilisation scheduling)",
}


@dataclass
class ServingEstimate:
    """The sizing of one serving fleet (see :func:`serve`). Units in the field names."""

    model: str
    accelerator: str
    precision: str
    compute_precision: str | None
    kv_cache_precision: str
    tensor_parallel: int
    input_tokens: int
    output_tokens: int
    ttft_slo_s: float
    tpot_slo_s: float
    weights_bytes_per_gpu: float
    kv_cache_bytes_per_token: float
    kv_cache_bytes_per_token_per_gpu: float
    max_batch: int
    batch: int
    ttft_s: float | None
    tpot_s: float | None
    tokens_per_s_per_gpu: float | None
    tokens_per_s_per_replica: float | None
    requests_per_s_per_replica: float | None
    target_tokens_per_s: float | None
    replicas: int
    gpus: int
    nodes: int
    racks: int | None
    it_power_kw: float | None
    facility_power_kw: float | None
    fleet_tokens_per_s: float | None
    tokens_per_s_per_mw: float | None
    tokens_per_s_per_rack: float | None
    capex_usd: float | None
    tokens_per_s_per_usd: float | None
    meets_slo: bool
    memory_per_gpu_bytes: dict[str, float]
    step_time_breakdown_s: dict[str, float]
    sweep: list[dict[str, Any]]
    tp_options: list[dict[str, Any]]
    efficiency: dict[str, float]
    calibration: str | None
    load: dict[str, Any] | None
    assumptions: list[str]
    findings: list[Finding] = field(default_factory=list)
    #: the MIG profile the replicas run on (``inference.mig_profile``), else None
    mig: dict[str, Any] | None = None
    #: the serving engine profile (``inference.engine``; :mod:`.engines`)
    engine: str = DEFAULT_ENGINE

    def to_dict(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "findings"}
        out["findings"] = [f.to_dict() for f in sort_findings(self.findings)]
        return out

    @property
    def tokens_per_s(self) -> float | None:
        """Output tokens/s served [tokens/s]: the target when the fleet carries it, else the fleet's
        capacity (replicas x per replica); what cost.py divides the cost by."""
        if self.fleet_tokens_per_s is None:
            return None
        if self.target_tokens_per_s is not None:
            return min(self.target_tokens_per_s, self.fleet_tokens_per_s)
        return self.fleet_tokens_per_s

    def summary(self, accelerator_name: str | None = None) -> str:
        """A few lines for the terminal; ``accelerator_name``: the accelerator's catalogue name
        (as ``gpucluster estimate`` prints it), else its id."""
        def fmt(v: Any, spec: str) -> str:
            return "n/a" if v is None else format(v, spec)

        def count(n: int | None, word: str) -> str:
            return f"{fmt(n, ',d')} {word}{'' if n == 1 else 's'}"

        compute = (f"compute {self.compute_precision}" if self.compute_precision
                   else "no dense rate at this precision on this GPU")
        slos = f"SLO TTFT {number_words(self.ttft_slo_s)} s, TPOT {number_words(self.tpot_slo_s * 1e3)} ms"
        poisson = bool(self.load and self.load.get("at_max_rate"))
        if self.ttft_s is None or self.tpot_s is None:
            latency = f"  no request served ({slos}): does not meet the SLOs"
        else:
            where = f"at the max rate per replica, {percentile_label(self.load['percentile'])}: " if poisson else ""
            latency = (f"  {where}TTFT {self.ttft_s:,.3f} s (SLO {number_words(self.ttft_slo_s)} s), TPOT "
                       f"{self.tpot_s * 1e3:,.1f} ms (SLO {number_words(self.tpot_slo_s * 1e3)} ms), "
                       f"{'meets the SLOs' if self.meets_slo else 'does not meet the SLOs'}")
        lines = [
            f"{self.model} on {accelerator_name or self.accelerator}, {self.precision} ({compute}), TP "
            f"{self.tensor_parallel}, {self.input_tokens:,} in / {self.output_tokens:,} out tokens",
            f"  weights {self.weights_bytes_per_gpu / GB:.1f} GB/GPU, KV {self.kv_cache_bytes_per_token:,.0f} B/token, "
            f"max batch {self.max_batch:,}, chosen batch {self.batch:,}",
            latency,
            f"  {fmt(self.tokens_per_s_per_gpu, ',.0f')} tokens/s/GPU; {count(self.replicas, 'replica')} = "
            f"{count(self.gpus, 'GPU')}, {count(self.nodes, 'node')}, {count(self.racks, 'rack')}, "
            f"{fmt(self.it_power_kw, ',.1f')} kW IT",
        ]
        if self.engine != DEFAULT_ENGINE and "iteration_host_time_s" in self.efficiency:
            lines.append(f"  serving engine {self.engine}: host time {self.efficiency['iteration_host_time_s'] * 1e3:g} ms "
                         f"+ {self.efficiency['host_time_per_sequence_s'] * 1e6:g} µs per sequence a step"
                         + (f" ({self.step_time_breakdown_s['engine_host'] * 1e3:.1f} ms of the "
                            f"{(self.tpot_s or 0) * 1e3:.1f} ms step)" if "engine_host" in self.step_time_breakdown_s
                            and self.tpot_s else ""))
        if self.load and self.load.get("at_max_rate"):
            pct = percentile_label(self.load["percentile"])
            lines.append(f"  Poisson arrivals: max {self.load['max_rate_per_replica_per_s']:,.2f} requests/s per replica "
                         f"({latency_words(self.load['at_max_rate'], pct)})")
            at = self.load.get("at_target")
            if at:
                lines.append(f"  at the target rate, {at['rate_per_s']:,.2f} requests/s per replica: "
                             + (latency_words(at, pct) if at.get("stable") and at.get("ttft_pct_s") is not None
                                else "above what a replica sustains (no steady state)"))
        lines += [f"  [{f.severity}] {f.code}: {f.message}" for f in sort_findings(self.findings)]
        return "\n".join(lines)

    def sweep_frame(self):
        """The batch sweep as a pandas DataFrame (one row per batch size)."""
        import pandas as pd

        return pd.DataFrame(self.sweep)


def latency_words(at: dict[str, Any], pct: str) -> str:
    """TTFT and TPOT at the median and at the SLO percentile ``pct`` ("p99") of one load point
    (``LoadPoint.to_dict()``); at "p50" the two are one figure, written once."""
    if pct == "p50":
        return f"TTFT p50 {at['ttft_p50_s']:,.3f} s; TPOT p50 {at['tpot_p50_s'] * 1e3:,.1f} ms"
    return (f"TTFT p50 {at['ttft_p50_s']:,.3f} s, {pct} {at['ttft_pct_s']:,.3f} s; TPOT p50 "
            f"{at['tpot_p50_s'] * 1e3:,.1f} ms, {pct} {at['tpot_pct_s'] * 1e3:,.1f} ms")


@dataclass
class _TpResult:
    tp: int
    mem: MemoryPlan
    batches: np.ndarray
    ttft: np.ndarray
    tpot: np.ndarray
    tok_replica: np.ndarray
    meets: np.ndarray
    parts: Any
    chosen: int | None      # index into batches
    fits: bool
    eff: ServingEfficiency
    gemm_efficiency: float
    capacity: float | None = None       # output tokens/s per replica: SLO-meeting batch, or at the max Poisson rate
    load: LoadPoint | None = None       # Poisson arrivals: the replica at its max rate
    curve: ReplicaCurve | None = None


def _domain(hw: Any) -> int:
    """GPUs of one NVLink domain [GPUs]: the hardware's (an NVL72 rack: 72), else the node."""
    return int(getattr(hw, "nvlink_domain_gpus", None) or hw.gpus_per_node)


def _replica_hardware(scenario: Scenario, hw: Any, catalog: Any, tp: int, peak: float,
                      fabric_gbps: float | None = None) -> ReplicaHardware:
    acc = hw.accelerator
    scaleup = acc.get("scaleup_bandwidth_gb_per_s")
    if tp <= _domain(hw) and scaleup:  # inside the NVLink domain (the node, or an NVL72 rack)
        link = float(scaleup) / 2  # catalogue: bidirectional total
    else:  # across nodes, or no scale-up figure in the catalogue (TPU v4, MI250X): the fabric
        gbps = fabric_gbps if fabric_gbps is not None else fabric_gbps_per_gpu(scenario, hw, catalog)
        link = gbps * GBPS_IN_BYTES_PER_S / GB
    return ReplicaHardware(peak, float(acc["memory_bandwidth_gb_per_s"]), link, tp)


def _batch_grid(max_batch: int, fixed: int | None) -> np.ndarray:
    """Every batch size 1..max_batch (vectorised, so the best SLO-meeting batch is exact)."""
    if fixed is not None:
        return np.array([fixed])
    return np.arange(1, max(max_batch, 1) + 1)


def _display_rows(batches: np.ndarray, chosen: int | None) -> np.ndarray:
    """Indices shown in the sweep: powers of two, the largest batch and the chosen one."""
    n = len(batches)
    idx = {i for i in range(n) if batches[i] & (batches[i] - 1) == 0} | {n - 1}
    if chosen is not None:
        idx.add(chosen)
    return np.array(sorted(idx), dtype=int)


def _calibrated(eff: ServingEfficiency, scenario: Scenario, prof: CalibrationProfile | None, rhw: ReplicaHardware,
                within_node: bool) -> ServingEfficiency:
    """The link terms of a calibration profile for this replica (scenario overrides win).

    NVLink (TP within a node): ``link_bandwidth_efficiency = B_bus / link`` and
    ``allreduce_latency_s = 2 (TP - 1) alpha`` (the ring's latency term, Thakur et al. 2005);
    across nodes the fabric's terms, its bandwidth per GPU ``B_bus / ranks_per_host``.
    """
    if prof is None or rhw.tp <= 1:
        return eff
    link = prof.link("nvlink" if within_node else "fabric")
    if link is None:
        return eff
    inf = scenario.inference
    changes: dict[str, float] = {}
    if inf.link_bandwidth_efficiency is None:  # capped at 1: see _link_above_nominal
        per_gpu = link.bus_bandwidth_gb_per_s / (1 if within_node else link.ranks_per_host)
        changes["link_bandwidth_efficiency"] = min(per_gpu / rhw.link_gb_per_s, 1.0)
    if inf.allreduce_latency_s is None and link.alpha_s is not None:
        changes["allreduce_latency_s"] = 2.0 * (rhw.tp - 1) * link.alpha_s
    return replace(eff, **changes) if changes else eff


def _link_above_nominal(scenario: Scenario, prof: CalibrationProfile | None, rhw: ReplicaHardware,
                        within_node: bool) -> Finding | None:
    """A warning when the profile's bus bandwidth per GPU for this replica's tensor-parallel link is above
    the link's nominal rate, so that :func:`_calibrated` capped the link efficiency at 1."""
    if prof is None or rhw.tp <= 1 or scenario.inference.link_bandwidth_efficiency is not None:
        return None
    link = prof.link("nvlink" if within_node else "fabric")
    if link is None:
        return None
    per_host = 1 if within_node else link.ranks_per_host
    per_gpu = link.bus_bandwidth_gb_per_s / per_host
    if per_gpu <= rhw.link_gb_per_s:
        return None
    what = "NVLink" if within_node else "network"
    measured = (f"{per_gpu:,.1f} GB/s" if per_host == 1 else
                f"{link.bus_bandwidth_gb_per_s:,.1f} GB/s shared by {per_host} GPUs per node, {per_gpu:,.1f} GB/s")
    return Finding("calibration-link-above-nominal", "warning",
                   f"the calibration profile '{prof.name}' measured {measured} of {what} bus bandwidth per GPU, above "
                   f"this design's nominal {rhw.link_gb_per_s:,.1f} GB/s per GPU and direction; the serving link "
                   "efficiency is capped at 100%",
                   fix="measure on the design's own links, or select a profile measured on this hardware",
                   field="calibration")


def _calibrated_gemm(gemm_eff: float, scenario: Scenario, prof: CalibrationProfile | None, arch: TransformerArch,
                     cprec: str | None, tp: int, peak: float | None) -> float:
    """The serving GEMM efficiency scaled by the profile's GEMM curve against the default curve at the
    prompt's shape (m = input tokens, n = FFN width / TP, k = hidden), so the non-GEMM share the
    default efficiency carries (attention, norms, sampling) is kept."""
    if prof is None or not cprec or not prof.gemm:
        return gemm_eff
    inf = scenario.inference
    override = inf.gemm_efficiency_8bit if cprec in ("fp8", "int8") else inf.gemm_efficiency_16bit
    if override is not None or cprec not in prof.gemm:
        return gemm_eff
    shape = (max(inf.input_tokens, 1), max(arch.ffn_hidden_size / tp, 1.0), float(arch.hidden_size))
    mine = gemm_curve(cprec, prof).efficiency(*shape, peak_tflops=peak)
    ref = DEFAULT_CURVES[cprec].efficiency(*shape, peak_tflops=peak)
    return min(gemm_eff * mine / ref, 1.0)


def _evaluate_tp(arch: TransformerArch, scenario: Scenario, hw: Any, catalog: Any, tp: int, peak: float,
                 gemm_eff: float, eff: ServingEfficiency, weight_bytes: float, kv_bytes: float,
                 fabric_gbps: float | None = None, prof: CalibrationProfile | None = None,
                 engine: EngineProfile | None = None) -> _TpResult:
    inf = scenario.inference
    engine = engine or engine_profile(None)
    host = (lambda b: engine.host_time(b, inf.streaming)) if engine.has_host_time else None
    mem = memory_plan(arch, memory_gib=float(hw.accelerator["memory_gib"]), tp=tp, weight_bytes=weight_bytes,
                      kv_bytes=kv_bytes, input_tokens=inf.input_tokens, output_tokens=inf.output_tokens, eff=eff,
                      output_tokens_cv=inf.output_tokens_cv, max_num_tokens=_token_budget(inf),
                      kv_scheduling=inf.kv_cache_scheduling)
    rhw = _replica_hardware(scenario, hw, catalog, tp, peak, fabric_gbps)
    eff = _calibrated(eff, scenario, prof, rhw, tp <= hw.gpus_per_node)
    fits = mem.max_batch >= 1
    fixed = inf.batch_size
    if fixed is not None and inf.kv_cache_scheduling == "max_utilization":
        fixed = min(fixed, max(mem.max_batch, 1))   # the engine's cap; the pool sets the batch (module memory)
    # an engine whose token budget counts decode tokens holds at most this many sequences (module engines)
    cap = engine.batch_cap(_token_budget(inf), inf.input_tokens, inf.output_tokens)
    if cap is not None and fixed is not None:
        fixed = min(fixed, cap)
    batches = _batch_grid(max(min(mem.max_batch, cap or mem.max_batch), 1), fixed)
    parts = mixed_step_times(arch, batches, input_tokens=inf.input_tokens, output_tokens=inf.output_tokens,
                             weights_bytes_per_gpu=mem.weights_bytes, kv_bytes_per_token_per_gpu=mem.kv_bytes_per_token,
                             hw=rhw, gemm_efficiency=gemm_eff, eff=eff, output_tokens_cv=inf.output_tokens_cv,
                             host_time=host)
    tpot = parts.total
    ttft = tpot + prefill_time(arch, inf.input_tokens, weights_bytes_per_gpu=mem.weights_bytes, hw=rhw,
                               gemm_efficiency=gemm_eff, eff=eff)
    tok_replica = batches / tpot
    meets = (ttft <= inf.ttft_slo_s) & (tpot <= inf.tpot_slo_s) & (batches <= mem.max_batch)
    # a prompt longer than the engine's token budget cannot be prefilled (whole prompts: no chunked
    # context, module queueing item 4): no batch serves it, offline or under Poisson arrivals
    prompt_fits = _token_budget(inf) >= inf.input_tokens
    meets &= prompt_fits
    chosen = int(np.argmax(np.where(meets, tok_replica, -1.0))) if fits and meets.any() else None
    capacity = float(tok_replica[chosen]) if chosen is not None else None
    load = curve = None
    if inf.arrival == "poisson" and fits and prompt_fits and np.isfinite(peak):
        # the queue needs T(b) over every mean batch up to the KV-cache slots (module inference.queueing)
        slots = min(mem.max_batch, inf.batch_size) if inf.batch_size is not None else mem.max_batch
        slots = min(slots, cap) if cap is not None else slots
        grid = np.arange(1, slots + 1)
        if inf.batch_size is not None:
            grid_parts = mixed_step_times(arch, grid, input_tokens=inf.input_tokens, output_tokens=inf.output_tokens,
                                          weights_bytes_per_gpu=mem.weights_bytes,
                                          kv_bytes_per_token_per_gpu=mem.kv_bytes_per_token, hw=rhw,
                                          gemm_efficiency=gemm_eff, eff=eff,
                                          output_tokens_cv=inf.output_tokens_cv, host_time=host)
            grid_tpot = grid_parts.total
        else:
            grid_tpot = tpot
        # decode-only steps (no prompt joins): the drain after the arrivals stop (queueing.last_request_latency)
        grid_decode = mixed_step_times(arch, grid, input_tokens=inf.input_tokens, output_tokens=inf.output_tokens,
                                       weights_bytes_per_gpu=mem.weights_bytes,
                                       kv_bytes_per_token_per_gpu=mem.kv_bytes_per_token, hw=rhw,
                                       gemm_efficiency=gemm_eff, eff=eff, output_tokens_cv=inf.output_tokens_cv,
                                       host_time=host, prefill=False).total
        curve = ReplicaCurve(grid, grid_tpot, float(ttft[0] - tpot[0]), inf.input_tokens, inf.output_tokens, slots,
                             token_budget=_token_budget(inf), service_cv=inf.output_tokens_cv, decode_s=grid_decode)
        load = max_rate(curve, inf.ttft_slo_s, inf.tpot_slo_s, inf.slo_percentile)
        capacity = load.output_tokens_per_s if load is not None else None
        # the batch shown: the whole part of the mean (Little's law), but no more than the Poisson batch at the SLO
        # percentile, min(floor(b), Q_q(b)): its step is at most T(Q_q(b)) = TPOT_q <= the SLO, so the sweep's row
        # for it meets them at any percentile (at 50 or more floor(b) is the smaller: a Poisson median is at least
        # b - ln 2, Choi 1994, Proc. AMS 121(1):245-251). A fixed batch size has that one row: it is shown only
        # when it is that batch.
        chosen = None
        if load is not None:
            want = _shown_batch(load, inf.slo_percentile)
            near = int(np.argmin(np.abs(batches - want)))
            chosen = near if inf.batch_size is None or int(batches[near]) == want else None
    return _TpResult(tp, mem, batches, ttft, tpot, tok_replica, meets, parts, chosen, fits, eff, gemm_eff, capacity,
                     load, curve)


def _shown_batch(load: LoadPoint, percentile: float) -> int:
    """The batch shown for a Poisson load point [sequences]: ``min(floor(b), Q_q(b))``, at least 1 (see
    :func:`_evaluate_tp`: its row of the sweep meets the SLOs)."""
    return _whole_batch(min(load.mean_batch, poisson_quantile(load.mean_batch, percentile / 100.0)))


def _whole_batch(mean_batch: float) -> int:
    """The batch shown for a Poisson mean batch [sequences]: its whole part, at least 1 (below one in flight on
    average, a request runs alone)."""
    return max(math.floor(mean_batch), 1)


def _token_budget(inf: Any) -> int:
    """The engine's token budget per step [tokens] (:func:`.memory.token_budget`)."""
    return token_budget(inf.max_num_tokens, inf.input_tokens)


POISSON_ASSUMPTION = ("Poisson arrivals: mean batch by Little's law, batch spread Poisson (M/G/inf), KV-cache slots "
                      "M/G/c (Erlang C), prefill M/D/1 within the step token budget; TTFT and TPOT at the median "
                      "and at the SLO percentile")


def _spread_assumption(inf: Any) -> str:
    """The output-length spread in words (ServingEstimate.assumptions)."""
    ctx = mean_context_in_flight(inf.input_tokens, inf.output_tokens, inf.output_tokens_cv)
    return (f"output lengths vary (standard deviation {inf.output_tokens_cv:g} of the mean): a sequence in flight "
            f"holds {ctx:,.0f} tokens of context on average (longer requests stay longer in the batch), and the "
            f"wait for a free KV-cache slot is 1 + {inf.output_tokens_cv:g}² = {1 + inf.output_tokens_cv ** 2:.2f} "
            f"times that with equal lengths (Allen-Cunneen approximation)")


def _engine_assumptions(engine: EngineProfile, streaming: bool) -> list[str]:
    """The serving engine's terms in words (ServingEstimate.assumptions); none for the generic engine."""
    out = []
    if engine.has_host_time:
        out.append(f"serving engine {engine.label}: each step adds the engine's fitted time per iteration "
                   f"{engine.iteration_host_time_s * 1e3:g} ms + {engine.per_sequence(streaming) * 1e6:g} µs per "
                   f"sequence in flight{' (responses streamed token by token)' if streaming else ''}, after the "
                   "GPU's work (taken as the host work the engine does between steps, not overlapped; its size is "
                   "fitted on TensorRT-LLM's own throughput tables, not measured)")
    if engine.token_budget_counts_decode:
        out.append("the token budget per step counts one token for each sequence in generation and the prompt "
                   "tokens: at most budget / (1 + input / output tokens) sequences are in flight")
    return out


def _load_summary(best: _TpResult, inf: Any, target: float | None, replicas: int, gpus: int,
                  drain_latency: bool = False) -> dict[str, Any]:
    """The queue at the max rate and at the target rate (per replica), for ``ServingEstimate.load``."""
    out: dict[str, Any] = {"arrival": "poisson", "percentile": inf.slo_percentile,
                           "max_rate_per_replica_per_s": best.load.rate_per_s if best.load else None,
                           # the scenario's GPUs in whole replicas (none when one replica needs more GPUs)
                           "max_rate_per_s": (best.load.rate_per_s * (gpus // best.tp)
                                              if best.load else None),
                           "capacity_per_replica_per_s": best.curve.capacity_per_s,
                           "at_max_rate": best.load.to_dict() if best.load else None, "at_target": None,
                           # a request arriving as the arrivals stop, at the max rate (queueing.last_request_latency:
                           # what MLPerf LoadGen's server tokens/s waits for); computed only when asked
                           # (serve(drain_latency=True), the MLPerf comparison): it sums over every output length
                           "last_request_latency_s": (last_request_latency(best.curve, best.load.mean_batch,
                                                                           best.load.ttft_p50_s)
                                                      if drain_latency and best.load and best.load.stable else None)}
    if best.load is not None and target is not None and replicas:
        out["at_target"] = load_point(target / inf.output_tokens / replicas, best.curve, inf.slo_percentile).to_dict()
    return out


def _target_tokens_per_s(scenario: Scenario) -> float | None:
    inf = scenario.inference
    if inf.requests_per_s is not None:
        return inf.requests_per_s * inf.output_tokens
    return inf.tokens_per_s


def _tp_candidates(arch: TransformerArch, hw: Any, given: int | None) -> list[int]:
    if given is not None:
        return [given]
    cands = [t for t in (1, 2, 4, 8, 16, 32, 64) if t <= _domain(hw) and arch.attention_heads % t == 0
             and (arch.kv_heads % t == 0 or t % arch.kv_heads == 0)]
    return cands or [1]


def _or_words(items: list[Any]) -> str:
    """``[1, 2, 4]`` -> "1, 2 or 4" (a list in words for a fix)."""
    words = [str(i) for i in items]
    return " or ".join([", ".join(words[:-1]), words[-1]]) if len(words) > 1 else "".join(words)


def _tp_findings(arch: TransformerArch, tp: int, hw: Any, findings: list[Finding]) -> None:
    valid = [t for t in (1, 2, 4, 8, 16, 32, 64) if arch.attention_heads % t == 0
             and (arch.kv_heads % t == 0 or t % arch.kv_heads == 0)]
    if arch.kv_heads % tp and tp % arch.kv_heads:
        findings.append(Finding(
            "inference-tp-kv-heads", "error",
            f"tensor parallelism {tp} does not divide the {arch.kv_heads} KV heads of {arch.name} (nor is a "
            f"multiple of them): the KV cache cannot be split evenly",
            fix=f"use a tensor parallelism of {_or_words(valid)}", field="inference.tensor_parallel"))
    elif arch.attention_heads % tp:
        findings.append(Finding(
            "inference-tp-attention-heads", "error",
            f"tensor parallelism {tp} does not divide the {arch.attention_heads} attention heads of {arch.name}",
            fix=f"use a tensor parallelism of {_or_words(valid)}", field="inference.tensor_parallel"))
    elif tp > arch.kv_heads:
        findings.append(Finding(
            "inference-kv-heads-replicated", "info",
            f"tensor parallelism {tp} exceeds the {arch.kv_heads} KV heads: each KV head is stored on "
            f"{tp // arch.kv_heads} GPUs", field="inference.tensor_parallel"))
    if tp > _domain(hw):
        findings.append(Finding(
            "inference-tp-across-nodes", "warning",
            f"tensor parallelism {tp} spans {math.ceil(tp / _domain(hw))} NVLink domains of {_domain(hw)} GPUs: "
            "its all-reduces run over the scale-out fabric",
            fix=f"use a tensor parallelism of at most {_domain(hw)}", field="inference.tensor_parallel"))


def _context_findings(arch: TransformerArch, scenario: Scenario) -> list[Finding]:
    """An encoder-only model asked to generate tokens (error), and a request longer than the model's sequence
    length ``arch.seq_length`` [tokens]: an error with learned positions (the position table has that many
    rows: no position beyond it), a warning otherwise (rotary or ALiBi positions: the presets' figure is the
    sequence the model was trained at, which a long-context version may extend)."""
    inf = scenario.inference
    out = []
    if arch.encoder_only:   # data/models.yaml (BERT: Devlin et al. 2019, arXiv:1810.04805, Sec. 3)
        out.append(Finding(
            "inference-encoder-only", "error",
            f"{arch.name} is an encoder-only model (bidirectional attention, trained to fill in masked tokens): it "
            "generates no tokens, so it has no output tokens to serve and no fleet is sized",
            fix="choose a decoder (generative) model such as llama3-8b, or size the encoder's work as a training "
                "or batch job",
            field="model.preset"))
    total = inf.input_tokens + inf.output_tokens
    if total <= arch.seq_length:
        return out
    request = f"a request of {inf.input_tokens:,} input + {inf.output_tokens:,} output = {total:,} tokens"
    if arch.position_embedding == "learned":
        out.append(Finding(
            "inference-context-exceeded", "error",
            f"{request} is longer than {arch.name}'s {arch.seq_length:,}-token context: its learned position "
            f"table has {arch.seq_length:,} positions, none beyond, so no such request is served and no fleet "
            "is sized",
            fix=f"use at most {arch.seq_length:,} input plus output tokens, or a model with a longer context",
            field="inference.input_tokens"))
    else:
        out.append(Finding(
            "inference-context-exceeded", "warning",
            f"{request} is longer than the {arch.seq_length:,}-token sequence {arch.name} is described with "
            f"(the model's sequence length, {arch.position_embedding} positions): a model trained only that far "
            "may not keep its quality beyond it; the fleet is sized as asked",
            fix=f"use at most {arch.seq_length:,} input plus output tokens, or a long-context version of the "
                "model (with its context as the model's sequence length)",
            field="inference.input_tokens"))
    return out


def _slo_fix(inf: Any, tp: int, hw: Any, arch: TransformerArch, acc: dict[str, Any], slo: str) -> str:
    """The fix of an unmet SLO: only the changes not already made (a larger tensor parallelism inside the
    NVLink domain, FP8 when the GPU has it and the precision is wider)."""
    steps = [f"relax {slo}"]
    mig = acc.get("mig_profile")
    larger = mig_mod.larger_profiles(acc["id"], mig, by="compute") if mig \
        else [t for t in _tp_candidates(arch, hw, None) if t > tp]
    if mig and larger:   # a MIG instance serves alone (TP 1): a larger slice is the way up
        steps.append(f"use a larger MIG profile ({_or_words(larger)}, or auto)")
    elif larger:
        steps.append(f"raise the tensor parallelism (up to {larger[-1]})")
    if WEIGHT_BYTES[inf.precision] > WEIGHT_BYTES["fp8"] and "fp8" in supported_precisions(acc):
        steps.append("use FP8")
    steps.append("use a faster accelerator")
    return ", ".join(steps[:-1]) + " or " + steps[-1]


def _tp_exceeds_gpus(tp: int, hw: Any) -> Finding:
    """An error: one replica of ``tp`` GPUs needs more GPUs than the scenario has (no traffic target, so the
    fleet is the scenario's GPUs)."""
    nodes = math.ceil(tp / hw.gpus_per_node)
    return Finding(
        "inference-tp-exceeds-gpus", "error",
        f"tensor parallelism {tp} needs {plural(tp, 'GPU')} for one replica; the scenario has "
        f"{plural(hw.gpus, 'GPU')}, so it serves nothing",
        fix=f"use a tensor parallelism of at most {hw.gpus}, or at least {plural(nodes, 'node')} of "
            f"{plural(hw.gpus_per_node, 'GPU')}",
        field="inference.tensor_parallel")


def serve(scenario: Scenario, catalog: Any = None, *, facility_budget: bool = True, hardware: Any = None,
          fabric_gbps: float | None = None, node: Any = None, cluster_facility: Any = None,
          network: Any = None, calibration: Any = "scenario", drain_latency: bool = False) -> ServingEstimate:
    """Size the serving fleet of ``scenario`` (see module doc).

    Parameters
    ----------
    scenario : Scenario
        ``model`` (a transformer preset or architecture), ``hardware`` (accelerator or
        server), ``inference`` (precision, tensor_parallel, input/output tokens [tokens],
        requests_per_s [1/s] or tokens_per_s [output tokens/s], ttft_slo_s and
        tpot_slo_s [s], optional batch_size and efficiency overrides), ``facility`` and
        ``costs`` for racks, power and CapEx.
    catalog : Catalog, optional
        Defaults to the scenario's catalogue (:func:`~gpucluster_lib.hardware.resolve.catalog_for`).
    facility_budget : bool
        Racks and IT power of the fleet from the facility budget (default); False uses the
        servers' maximum power and a rack fit (faster; used by the accelerator comparison).
    hardware, fabric_gbps, node, cluster_facility, network : optional
        Upstream results of a :class:`~gpucluster_lib.design.Design` (the resolved hardware,
        the fabric bandwidth per GPU [Gb/s], the built node, the cluster's facility budget
        and network design, reused when the fleet has the cluster's node count); computed
        when omitted.
    calibration : CalibrationProfile or None, optional
        The design's calibration stage (default ``"scenario"``: the scenario's ``calibration``
        file, if any; None: no profile):
        its NVLink / fabric bus bandwidth and latency set the TP all-reduce terms, its GEMM
        curve scales the GEMM efficiency (scenario ``inference.*`` overrides win).
    drain_latency : bool
        Poisson arrivals: also the latency of a request that arrives as the arrivals stop
        (``load['last_request_latency_s']``, :func:`~gpucluster_lib.inference.queueing.last_request_latency`),
        which MLPerf LoadGen's server throughput waits for; a sum over every output length, so only
        the MLPerf comparison asks for it (default False: None).

    Returns
    -------
    ServingEstimate
        (a :class:`~gpucluster_lib.workloads.vision.VisionServingEstimate` when the model is a CNN/ViT.)
        Bytes per GPU [bytes], latencies [s], throughputs [output tokens/s], counts,
        power [kW], the batch sweep, the efficiencies used and the findings. Design
        problems (does not fit, SLO unmet, bad TP, unsupported precision) are findings;
        only malformed input raises (:class:`~gpucluster_lib.errors.GpuClusterError`).
    """
    cat = catalog or catalog_for(scenario)
    hw = hardware if hardware is not None else resolve_hardware(scenario, cat)
    if is_vision_model(scenario.model):  # CNN/ViT: images/s and video streams instead of tokens
        return serve_vision(scenario, cat, hardware=hw, node=node, cluster_facility=cluster_facility,
                            network=network)
    if scenario.inference.mig_profile:  # one replica per MIG instance (inference/mig.py)
        return mig_mod.serve_on_mig(scenario, cat, hw, serve=serve, node=node, cluster_facility=cluster_facility,
                                    network=network, fabric_gbps=fabric_gbps)
    arch = resolve_transformer(scenario.model)
    inf = scenario.inference
    engine = engine_profile(inf.engine)
    eff = engine_efficiency(inf, engine)
    findings: list[Finding] = []
    acc = hw.accelerator
    precision = inf.precision
    kv_prec = inf.kv_cache_precision or DEFAULT_KV_PRECISION[precision]
    weight_bytes, kv_bytes = WEIGHT_BYTES[precision], KV_BYTES[kv_prec]
    peak = compute_peak_tflops(precision, acc)
    cprec = compute_precision(precision, acc) if peak is not None else None
    if peak is None:
        ok = supported_precisions(acc)
        findings.append(Finding(
            "inference-precision-unsupported", "error",
            f"{acc['id']} has no dense {precision.upper()} figure in the catalogue: it cannot serve at {precision}",
            fix=f"use the precision {_or_words(ok)}" + (" or an accelerator with FP8 (H100, H200, B200, MI300X)"
                                                         if precision == "fp8" else ""),
            field="inference.precision"))
    if precision == "int4":
        findings.append(Finding("inference-int4-weight-only", "info",
                                f"int4 is weight-only: weights take {weight_bytes:.3f} bytes each (4 bits + a 16-bit "
                                f"scale per 128), GEMMs run at {cprec} peak", field="inference.precision"))
    if inf.tensor_parallel is not None:
        _tp_findings(arch, inf.tensor_parallel, hw, findings)
    mig = acc.get("mig_profile")   # a MIG instance (inference/mig.py): no NVLink on purpose, TP 1
    if not acc.get("scaleup_bandwidth_gb_per_s") and _domain(hw) > 1 and not mig:
        findings.append(Finding(
            "inference-no-scaleup-bandwidth", "info",
            f"{acc['id']} has no scale-up (GPU-to-GPU) bandwidth in the catalogue: tensor parallelism "
            "inside a node is sized on the network bandwidth per GPU",
            fix="add the accelerator's scale-up bandwidth (GB/s per GPU) to its catalogue row (a catalogue "
                "overlay)",
            field="hardware.accelerator"))
    context = _context_findings(arch, scenario)
    findings += context
    refused = any(f.severity == "error" for f in context)   # nothing to serve: no batch, no fleet
    target = _target_tokens_per_s(scenario)
    prof = scenario_profile(scenario) if isinstance(calibration, str) else calibration
    results = [_evaluate_tp(arch, scenario, hw, cat, tp, peak or float("nan"),
                            _calibrated_gemm(eff.gemm_efficiency(cprec or "bf16"), scenario, prof, arch, cprec, tp,
                                             peak),
                            eff, weight_bytes, kv_bytes, fabric_gbps, prof, engine)
               for tp in _tp_candidates(arch, hw, inf.tensor_parallel)]

    def gpus_for(r: _TpResult) -> float:
        """The option's rank: the GPUs the target needs, fewest first; without a target, minus the output
        tokens/s of the scenario's GPUs (whole replicas of TP GPUs), the most first."""
        if r.capacity is None:
            return math.inf
        if target is None:
            return -r.capacity * (hw.gpus // r.tp)
        return math.ceil(target / r.capacity) * r.tp

    # the same GPUs for the target: the option with more tokens/s per GPU (headroom), then the smaller TP
    best = min(results, key=lambda r: (gpus_for(r), -(r.capacity or 0.0) / r.tp, r.tp)) \
        if peak is not None else results[-1]
    if peak is not None and best.capacity is None and inf.tensor_parallel is None:
        best = max(results, key=lambda r: (r.fits, r.tp))   # report the most capable option
    tp, mem = best.tp, best.mem
    per_tok_model = arch.kv_cache_bytes_per_token(kv_bytes)
    # the MLPerf results measured the catalogue's values with the generic engine (accuracy.py); a MIG slice drops the
    # note in inference/mig.py
    own = prof is not None or inf.engine != DEFAULT_ENGINE \
        or any(getattr(inf, name, None) is not None for name in OVERRIDE_FIELDS)
    said = None if own else accuracy_serving_sentence(str(acc.get("id") or ""), precision)
    if said:
        findings.append(Finding("inference-accuracy-published-runs", "info", said,
                                fix="measure your engine's throughput at your request mix, and use a calibration "
                                    "profile of your GPUs' matrix-multiply and network rates",
                                field="hardware.accelerator"))
    if prof is not None:   # an example profile, another device, a link measured above its nominal rate
        findings += profile_findings(prof, acc)
        above = _link_above_nominal(scenario, prof, _replica_hardware(scenario, hw, cat, tp, peak or 1.0, fabric_gbps),
                                    tp <= hw.gpus_per_node)
        if above is not None:
            findings.append(above)

    budget = _token_budget(inf)
    prompt_too_long = budget < inf.input_tokens
    where = f"on a MIG {mig} instance" if mig else f"at TP {tp}"
    if not best.fits:
        needed = mem.weights_bytes + mem.workspace_bytes + mem.runtime_bytes + mem.bytes_per_sequence
        fitting = [t for t in (1, 2, 4, 8, 16, 32, 64) if t > tp and
                   memory_plan(arch, memory_gib=float(acc["memory_gib"]), tp=t, weight_bytes=weight_bytes,
                               kv_bytes=kv_bytes, input_tokens=inf.input_tokens, output_tokens=inf.output_tokens,
                               eff=eff, output_tokens_cv=inf.output_tokens_cv, max_num_tokens=_token_budget(inf),
                               kv_scheduling=inf.kv_cache_scheduling).max_batch >= 1]
        smaller = [p for p in ("fp8", "int8", "int4") if WEIGHT_BYTES[p] < weight_bytes and p in supported_precisions(acc)]
        fix = []
        if mig:   # one instance serves a replica alone (TP 1): a larger slice, or whole GPUs
            # the larger slices whose usable memory holds what this one lacks (the same need: the model's bytes)
            larger = [q for q in mig_mod.larger_profiles(acc["id"], mig)
                      if mem.usable_bytes / float(acc["memory_gib"]) * mig_mod.profile(acc["id"], q).memory_gb
                      >= needed]
            if larger:
                fix.append(f"a larger MIG profile ({_or_words(larger)}, or auto)")
        elif fitting:
            fix.append(f"a tensor parallelism of {fitting[0]}")
        if smaller:
            fix.append(f"the precision {smaller[0]}")
        fix.append("whole GPUs (no MIG profile)" if mig else "an accelerator with more memory")
        findings.append(Finding(
            "inference-model-does-not-fit", "error",
            f"{arch.name} at {precision} needs {needed / GB:.1f} GB "
            + (f"per MIG {mig} instance" if mig else f"per GPU at TP {tp}")
            + f" (weights {mem.weights_bytes / GB:.1f} GB + workspace {mem.workspace_bytes / GB:.1f} GB + runtime "
            f"{mem.runtime_bytes / GB:.1f} GB + one sequence's KV {mem.bytes_per_sequence / GB:.2f} GB) but "
            + (f"a MIG {mig} instance of {(acc.get('name') or acc['id']).removesuffix(f' MIG {mig}')}" if mig
               else acc.get("name") or acc["id"])
            + f" offers {mem.usable_bytes / GB:.1f} GB ({eff.memory_utilization:.0%} of "
            f"{float(acc['memory_gib']):g} GiB)",
            fix="use " + _or_words(fix), field="inference.mig_profile" if mig else "inference.tensor_parallel"))
    elif (inf.batch_size is not None and inf.batch_size > mem.max_batch
          and inf.kv_cache_scheduling == "max_utilization"):
        findings.append(Finding(
            "inference-batch-limited-by-kv-pool", "warning",
            f"the batch size {inf.batch_size} is the engine's cap, but the KV cache pool ({mem.free_for_kv_bytes / GB:.1f} GB "
            f"per GPU) holds about {mem.max_batch} sequences of "
            f"{reserved_tokens_per_sequence(inf.input_tokens, inf.output_tokens, inf.output_tokens_cv, 'max_utilization'):,.0f}"
            f" tokens of context on average: the batch runs at {mem.max_batch}, and requests beyond it wait or are "
            "paused when the pool runs out",
            fix=f"use a batch size of at most {mem.max_batch} or a larger tensor parallelism",
            field="inference.batch_size"))
    elif inf.batch_size is not None and inf.batch_size > mem.max_batch:
        findings.append(Finding(
            "inference-batch-exceeds-memory", "error",
            f"the batch size {inf.batch_size} needs {inf.batch_size * mem.bytes_per_sequence / GB:.1f} GB of KV cache "
            f"per GPU; only {mem.free_for_kv_bytes / GB:.1f} GB is free: at most {mem.max_batch} sequences of "
            f"{reserved_tokens_per_sequence(inf.input_tokens, inf.output_tokens, inf.output_tokens_cv, inf.kv_cache_scheduling):,.0f} tokens"
            + (" of context on average" if inf.output_tokens_cv > 1 else ""),
            fix=(f"use a batch size of at most {mem.max_batch}, a larger tensor parallelism, a smaller KV-cache "
                 "precision, or the max-utilization KV-cache scheduling when the engine takes KV pages on demand"),
            field="inference.batch_size"))
    elif prompt_too_long or refused:
        pass   # its own finding below; no batch is sized, so no SLO finding either
    elif best.capacity is None and peak is not None and inf.arrival == "poisson":
        i0 = 0
        findings.append(Finding(
            "inference-slo-unmet", "error",
            f"no Poisson arrival rate meets the {percentile_label(inf.slo_percentile)} TTFT <= "
            f"{number_words(inf.ttft_slo_s)} s and TPOT <= {number_words(inf.tpot_slo_s * 1e3)} ms {where}: even "
            f"one request at a time takes TTFT {best.ttft[i0]:,.3f} s and TPOT {best.tpot[i0] * 1e3:,.1f} ms",
            fix=_slo_fix(inf, tp, hw, arch, acc, "the SLO or its percentile"),
            field="inference.tpot_slo_s" if best.tpot[i0] > inf.tpot_slo_s else "inference.ttft_slo_s"))
    elif best.chosen is None and peak is not None:
        i0 = 0
        findings.append(Finding(
            "inference-slo-unmet", "error",
            f"no batch size meets TTFT <= {number_words(inf.ttft_slo_s)} s and TPOT <= "
            f"{number_words(inf.tpot_slo_s * 1e3)} ms {where}: at batch {int(best.batches[i0]):,} TTFT is "
            f"{best.ttft[i0]:,.3f} s and TPOT {best.tpot[i0] * 1e3:,.1f} ms",
            fix=_slo_fix(inf, tp, hw, arch, acc, "the SLO"),
            field="inference.tpot_slo_s" if best.tpot[i0] > inf.tpot_slo_s else "inference.ttft_slo_s"))
    if prompt_too_long:
        findings.append(Finding(
            "inference-prompt-exceeds-token-budget", "error",
            f"a prompt of {inf.input_tokens:,} tokens is longer than the engine's budget of {budget:,} tokens per "
            "step: the engine prefills each prompt whole, in one step (no chunked context, as in NVIDIA's MLPerf "
            "harness), so it serves no request and no fleet is sized",
            fix=f"raise the engine's token budget per step to at least {inf.input_tokens:,} tokens",
            field="inference.max_num_tokens"))
    outside = engine.outside_fit(scenario.model.preset, precision, acc["id"], tp) if engine.terms else []
    if outside:
        findings.append(Finding(
            "inference-engine-profile-extrapolated", "info",
            f"the {engine.label} engine profile was fitted on {engine.fitted_on.get('words', 'its own rows')}; "
            f"{_or_words(outside).replace(' or ', ' and ')} of this replica {'lies' if len(outside) == 1 else 'lie'} "
            "outside that, so its fitted times and efficiency are carried over unchecked",
            fix="check the result against a measured run of the engine on this model and hardware",
            field="inference.engine"))
    cap = engine.batch_cap(budget, inf.input_tokens, inf.output_tokens)
    if cap is not None and inf.batch_size is not None and inf.batch_size > cap and best.fits and not prompt_too_long:
        findings.append(Finding(
            "inference-batch-limited-by-token-budget", "warning",
            f"the batch size {inf.batch_size} is more than the engine's token budget of {budget:,} tokens per step "
            f"carries: each sequence takes one token a step and its prompt's {inf.input_tokens:,} tokens spread over "
            f"its {inf.output_tokens:,} output steps, so at most {cap} sequences are in flight and the batch runs "
            f"at {min(cap, mem.max_batch)}",
            fix=f"raise the engine's token budget per step to at least "
                f"{math.ceil(inf.batch_size * (1 + inf.input_tokens / inf.output_tokens)):,} tokens, or use a batch "
                f"size of at most {cap}",
            field="inference.max_num_tokens"))
    if (cap is None and inf.arrival == "offline" and best.chosen is not None and best.fits and not prompt_too_long
            and not refused):
        # the generic engine's offline batch is not capped by the budget (the MLPerf rows, sized this way, sit far
        # below it); say so when the steady state needs more tokens a step than the budget holds
        b_off = int(best.batches[best.chosen])
        per_step = b_off * (1 + inf.input_tokens / inf.output_tokens)
        if per_step > budget:
            findings.append(Finding(
                "inference-step-exceeds-token-budget", "warning",
                f"the chosen batch of {b_off:,} sequences needs about {per_step:,.0f} tokens a step (one decode token "
                f"each plus its share of the prompts, {inf.input_tokens:,} prompt tokens over {inf.output_tokens:,} "
                f"output steps), more than the engine's budget of {budget:,} tokens per step: the engine cannot "
                "keep this batch in flight, so its throughput is lower than shown",
                fix=f"raise the engine's token budget per step to at least {math.ceil(per_step):,} tokens, or fix "
                    f"the batch size at most {max(int(budget / (1 + inf.input_tokens / inf.output_tokens)), 1):,}",
                field="inference.max_num_tokens"))
    if inf.output_tokens_cv > 1 and best.fits:
        ctx = mean_context_in_flight(inf.input_tokens, inf.output_tokens, inf.output_tokens_cv)
        findings.append(Finding(
            "inference-length-spread-exceeds-reserve", "warning",
            f"output lengths spread by {inf.output_tokens_cv:g} times their mean: a sequence in flight holds "
            f"{ctx:,.0f} tokens of context on average, more than the {inf.input_tokens + inf.output_tokens:,} "
            f"tokens of a mean request, so the KV cache is budgeted at {ctx:,.0f} tokens a sequence "
            f"({mem.max_batch} sequences per replica) and the longest requests rely on the pages that "
            f"finished ones free",
            fix="check the spread of output lengths (MLPerf Llama 2 70B: 0.71), or cap the output length",
            field="inference.output_tokens_cv"))

    # no SLO-meeting batch: report the fastest (smallest) batch, flagged meets_slo = False
    idx = best.chosen if best.chosen is not None else 0
    meets = best.capacity is not None and best.fits and peak is not None
    if peak is None or not best.fits or prompt_too_long:
        tok_rep = ttft = tpot = None
        batch = 0
    else:
        tok_rep, ttft, tpot = float(best.tok_replica[idx]), float(best.ttft[idx]), float(best.tpot[idx])
        batch = int(best.batches[idx])
    if best.load is not None:   # Poisson arrivals: the replica's capacity is its max rate meeting the SLOs
        tok_rep = best.load.output_tokens_per_s
        ttft, tpot = best.load.ttft_pct_s, best.load.tpot_pct_s
        batch = _shown_batch(best.load, inf.slo_percentile)
    if refused:
        tok_rep = ttft = tpot = None
        batch = 0
        meets = False
    if tok_rep and target is not None:
        replicas = math.ceil(target / tok_rep)
    elif tok_rep and hw.gpus < tp:   # one replica needs more GPUs than the scenario has: it serves nothing
        replicas = 0
        findings.append(_tp_exceeds_gpus(tp, hw))
        tok_rep = ttft = tpot = None
        batch = 0
        meets = False
    elif tok_rep:
        replicas = hw.gpus // tp
        findings.append(Finding("inference-no-target", "info",
                                f"no traffic target: sized the scenario's {plural(hw.gpus, 'GPU')} "
                                f"({plural(replicas, 'replica')} of TP {tp})",
                                fix="set a traffic target: requests per second or tokens per second",
                                field="inference.requests_per_s"))
    else:
        replicas = 0
    fleet: FleetSize = size_fleet(scenario, cat, hw, replicas=replicas, tp=tp, findings=findings,
                                  use_facility=facility_budget, node=node, cluster_facility=cluster_facility,
                                  network=network)
    fleet_tok = tok_rep * replicas if tok_rep else None
    rows = _display_rows(best.batches, best.chosen)
    sweep = [{"batch": int(b), "ttft_s": float(t1), "tpot_s": float(t2), "tokens_per_s_per_replica": float(r),
              "tokens_per_s_per_gpu": float(r / tp), "meets_slo": bool(m),
              "kv_cache_bytes_per_gpu": float(b * mem.bytes_per_sequence)}
             for b, t1, t2, r, m in zip(*(a[rows] for a in (best.batches, best.ttft, best.tpot, best.tok_replica,
                                                            best.meets)), strict=True)] \
        if peak is not None else []
    tp_options = [{"tensor_parallel": r.tp, "max_batch": r.mem.max_batch,
                   "batch": int(r.batches[r.chosen]) if r.chosen is not None else None,
                   "tokens_per_s_per_gpu": r.capacity / r.tp if r.capacity is not None else None,
                   "gpus": (math.ceil(target / r.capacity) * r.tp
                            if r.capacity is not None and target is not None else None)}
                  for r in results] if peak is not None else []
    parts = best.parts
    breakdown = {k: float(getattr(parts, k)[idx]) for k in ("gemm", "attention", "communication", "overhead")} \
        if peak is not None and best.fits else {}
    if breakdown and parts.engine_host is not None:
        breakdown["engine_host"] = float(parts.engine_host[idx])
    return ServingEstimate(
        model=arch.name, accelerator=acc["id"], precision=precision, compute_precision=cprec,
        kv_cache_precision=kv_prec, tensor_parallel=tp, input_tokens=inf.input_tokens,
        output_tokens=inf.output_tokens, ttft_slo_s=inf.ttft_slo_s, tpot_slo_s=inf.tpot_slo_s,
        weights_bytes_per_gpu=mem.weights_bytes, kv_cache_bytes_per_token=per_tok_model,
        kv_cache_bytes_per_token_per_gpu=mem.kv_bytes_per_token, max_batch=mem.max_batch, batch=batch,
        ttft_s=ttft, tpot_s=tpot, tokens_per_s_per_gpu=tok_rep / tp if tok_rep else None,
        tokens_per_s_per_replica=tok_rep, requests_per_s_per_replica=tok_rep / inf.output_tokens if tok_rep else None,
        target_tokens_per_s=target, replicas=fleet.replicas, gpus=fleet.gpus, nodes=fleet.nodes, racks=fleet.racks,
        it_power_kw=fleet.it_power_kw, facility_power_kw=fleet.facility_power_kw, fleet_tokens_per_s=fleet_tok,
        tokens_per_s_per_mw=per_mw(fleet_tok, fleet.it_power_kw) if fleet_tok else None,
        tokens_per_s_per_rack=fleet_tok / fleet.racks if fleet_tok and fleet.racks else None,
        capex_usd=fleet.capex_usd,
        tokens_per_s_per_usd=fleet_tok / fleet.capex_usd if fleet_tok and fleet.capex_usd else None,
        meets_slo=bool(meets), memory_per_gpu_bytes=mem.breakdown(batch), step_time_breakdown_s=breakdown,
        sweep=sweep, tp_options=tp_options, efficiency={**best.eff.to_dict(), **engine.echo(inf.streaming), "gemm_efficiency_used": float(best.gemm_efficiency)},
        calibration=prof.name if prof is not None else None,
        load=(_load_summary(best, inf, target, replicas, hw.gpus, drain_latency)
              if best.curve is not None and not refused else None),
        assumptions=list(ASSUMPTIONS) + [KV_ASSUMPTIONS[inf.kv_cache_scheduling]] + ([POISSON_ASSUMPTION] if inf.arrival == "poisson" else [])
        + ([_spread_assumption(inf)] if inf.output_tokens_cv > 0 else []) + _engine_assumptions(engine, inf.streaming),
        findings=findings, engine=engine.name)


__all__ = ["ServingEstimate", "serve"]
