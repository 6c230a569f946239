"""Reliability: job interruptions, checkpointing, goodput and failure-aware time to train.

Pure functions take numbers (seconds, rates per day, bytes) and are tested by hand;
:func:`assess` wires them to a :class:`~gpucluster_lib.scenario.Scenario`.

Model
-----
* Unexpected job interruptions arrive as a Poisson process whose rate scales with the
  number of accelerators: ``rate [1/day] = GPUs x r / 1000`` with ``r`` in interruptions
  per 1000 GPU-days, per component (GPU, HBM, host, NIC, network, PSU, software).
  Defaults: the Llama 3 405B interruption table [1]_ (419 unexpected in 54 days on
  16,384 H100), or Meta's RSC-1/RSC-2 rates [2]_. The mean time between interruptions
  of the whole job is ``MTBI = 1 / rate`` (Kokolis et al. [2]_: MTTF = 1 / (N r_f)).
* Checkpointing: the optimal interval of Young [3]_ and Daly's higher-order one [4]_;
  expected wall-clock time of a run with exponential failures from Daly [4]_ eq. (13),
  which gives the goodput (useful fraction of wall-clock time).
* Hot spares: nodes in repair at any time are Poisson with mean
  ``node failures per hour x repair hours``; the spares needed are its quantile.
* Uncertainty: P10/P50/P90 of days to train from a seeded, vectorised Monte Carlo over
  the failure-rate and throughput ranges plus the Poisson count of interruptions.

References
----------
.. [1] Llama Team 2024, "The Llama 3 Herd of Models", arXiv:2407.21783, Sec. 3.3.4, Table 5.
.. [2] Kokolis et al. 2025, "Revisiting Reliability in Large-Scale Machine Learning
       Research Clusters", HPCA 2025, arXiv:2410.21680.
.. [3] J. W. Young 1974, "A first order approximation to the optimum checkpoint
       interval", Communications of the ACM 17(9):530-531.
.. [4] J. T. Daly 2006, "A higher order estimate of the optimum checkpoint interval for
       restart dumps", Future Generation Computer Systems 22(3):303-312, eqs. (13), (37).
.. [5] Rajbhandari et al. 2020, "ZeRO: Memory Optimizations Toward Training Trillion
       Parameter Models", SC20, Sec. 3.1: mixed-precision Adam keeps 2 + 2 + 12 bytes per
       parameter (fp16 weights, fp16 gradients, fp32 master weights + momentum + variance).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from statistics import NormalDist
from typing import Any

import numpy as np

from gpucluster_lib import training
from gpucluster_lib.checks import require_non_negative, require_positive
from gpucluster_lib.errors import ScenarioError, UnknownIdError
from gpucluster_lib.facility import storage as storage_mod
from gpucluster_lib.facility.storage import size_storage
from gpucluster_lib.findings import Finding, sort_findings
from gpucluster_lib.formatting import plural
from gpucluster_lib.hardware.resolve import catalog_for, resolve_hardware
from gpucluster_lib.resources import data_root, load_yaml
from gpucluster_lib.scenario import Scenario, parse_redundancy
from gpucluster_lib.units import (
    GB,
    HOURS_PER_DAY,
    HOURS_PER_YEAR,
    SECONDS_PER_DAY,
    SECONDS_PER_HOUR,
    SECONDS_PER_MINUTE,
    TERA,
)
from gpucluster_lib.workloads.checkpoint import CHECKPOINT_BYTES_PER_PARAM, checkpoint_bytes  # noqa: F401 (re-exported)

DATA_DIR = data_root()
FAILURE_RATES_PATH = DATA_DIR / "failure_rates.yaml"

#: Checkpoint file system defaults, re-exported from :mod:`gpucluster_lib.facility.storage` (the one
#: storage sizing shared with the facility budget and the cost).
DEFAULT_STORAGE_SYSTEM = storage_mod.DEFAULT_STORAGE_SYSTEM
FALLBACK_STORAGE_WRITE_GB_PER_S = storage_mod.FALLBACK_STORAGE_WRITE_GB_PER_S
FALLBACK_STORAGE_CAPACITY_TB = storage_mod.FALLBACK_STORAGE_CAPACITY_TB
#: Largest mean numpy's Poisson sampler takes here; above it the band draws a normal count.
POISSON_SAMPLER_MAX_MEAN = 1.0e12
#: Monte Carlo samples and seed of the days-to-train band (deterministic).
MC_SAMPLES = 20_000
MC_SEED = 20240723


# =========================================================================== pure functions


def young_interval_s(checkpoint_s: float, mtbf_s: float) -> float:
    """Young's first-order optimum checkpoint interval [s].

    Parameters
    ----------
    checkpoint_s : float
        Time to write one checkpoint, delta [s].
    mtbf_s : float
        Mean time between failures of the job, M [s].

    Notes
    -----
    .. math:: \\tau_{opt} = \\sqrt{2 \\delta M}

    References: Young 1974, CACM 17(9) (see module references).
    """
    require_positive(checkpoint_s=checkpoint_s, mtbf_s=mtbf_s)
    return math.sqrt(2.0 * checkpoint_s * mtbf_s)


def daly_interval_s(checkpoint_s: float, mtbf_s: float) -> float:
    """Daly's higher-order optimum checkpoint interval [s] (compute time between checkpoints).

    Parameters
    ----------
    checkpoint_s : float
        Time to write one checkpoint, delta [s].
    mtbf_s : float
        Mean time between failures of the job, M [s].

    Notes
    -----
    Daly 2006, FGCS 22(3), eq. (37):

    .. math:: \\tau_{opt} = \\sqrt{2\\delta M}\\left[1 + \\tfrac13\\sqrt{\\tfrac{\\delta}{2M}}
              + \\tfrac19 \\tfrac{\\delta}{2M}\\right] - \\delta \\quad (\\delta < 2M),
              \\qquad \\tau_{opt} = M \\quad (\\delta \\ge 2M)
    """
    require_positive(checkpoint_s=checkpoint_s, mtbf_s=mtbf_s)
    if checkpoint_s >= 2.0 * mtbf_s:
        return float(mtbf_s)
    x = checkpoint_s / (2.0 * mtbf_s)
    return math.sqrt(2.0 * checkpoint_s * mtbf_s) * (1.0 + math.sqrt(x) / 3.0 + x / 9.0) - checkpoint_s


def expected_wall_time_s(work_s: float, interval_s: float, checkpoint_s: float, restart_s: float,
                         mtbf_s: float) -> float:
    """Expected wall-clock time [s] to finish ``work_s`` of failure-free compute.

    Parameters
    ----------
    work_s : float
        Failure-free solve time T_s [s] (no checkpoints, no failures).
    interval_s : float
        Compute time between checkpoints, tau [s].
    checkpoint_s : float
        Checkpoint write time delta [s] (blocking).
    restart_s : float
        Time from a failure to computing again, R [s] (detect, reschedule, load).
    mtbf_s : float
        Mean time between interruptions M [s]; ``math.inf`` for none.

    Notes
    -----
    Daly 2006 eq. (13), exponentially distributed failures, failures possible during
    checkpoints and restarts:

    .. math:: T_w = M e^{R/M} \\left(e^{(\\tau + \\delta)/M} - 1\\right) \\frac{T_s}{\\tau}

    With no failures (M -> inf) this is T_s (tau + delta) / tau.
    """
    require_non_negative(work_s=work_s, checkpoint_s=checkpoint_s, restart_s=restart_s)
    require_positive(interval_s=interval_s)
    if not (isinstance(mtbf_s, (int, float)) and mtbf_s > 0):
        raise ValueError(f"mtbf_s must be positive (math.inf for no failures), got {mtbf_s!r}")
    return work_s / goodput(interval_s, checkpoint_s, restart_s, mtbf_s)


def goodput(interval_s: float, checkpoint_s: float, restart_s: float, mtbf_s: float) -> float:
    """Useful fraction of wall-clock time under checkpoint/restart [fraction, 0..1].

    Parameters
    ----------
    interval_s, checkpoint_s, restart_s, mtbf_s : float
        tau, delta, R and M [s] as in :func:`expected_wall_time_s`.

    Notes
    -----
    .. math:: G = \\frac{T_s}{T_w} = \\frac{\\tau}{M e^{R/M} (e^{(\\tau+\\delta)/M} - 1)}

    (Daly 2006 eq. 13). ``np.expm1`` keeps it exact for M much larger than tau.
    """
    require_positive(interval_s=interval_s)
    require_non_negative(checkpoint_s=checkpoint_s, restart_s=restart_s)
    if not (isinstance(mtbf_s, (int, float)) and mtbf_s > 0):
        raise ValueError(f"mtbf_s must be positive (math.inf for no failures), got {mtbf_s!r}")
    if math.isinf(mtbf_s):
        return interval_s / (interval_s + checkpoint_s)
    m = mtbf_s
    x, r = (interval_s + checkpoint_s) / m, restart_s / m
    if x < 700 and r < 700:
        return interval_s / (m * math.exp(r) * math.expm1(x))
    # restarts or checkpoints many MTBIs long: the same formula in logs (exp would overflow);
    # ln(e^x - 1) = x + ln(1 - e^-x)
    log_g = math.log(interval_s) - math.log(m) - r - (x + math.log1p(-math.exp(-x)))
    return math.exp(log_g) if log_g > -745 else 0.0


def goodput_array(interval_s: np.ndarray | float, checkpoint_s: float, restart_s: float,
                  mtbf_s: np.ndarray | float) -> np.ndarray:
    """:func:`goodput` vectorised over intervals and/or MTBFs (no input checks; for charts and Monte Carlo)."""
    tau = np.asarray(interval_s, dtype=float)
    m = np.asarray(mtbf_s, dtype=float)
    x, r = (tau + checkpoint_s) / m, restart_s / m
    # in logs, as goodput(): ln G = ln tau - ln M - R/M - ln(e^x - 1); no overflow for x, R/M >> 1
    with np.errstate(over="ignore", under="ignore", divide="ignore"):
        log_em1 = np.where(x < 30, np.log(np.expm1(np.minimum(x, 30))), x + np.log1p(-np.exp(-x)))
        return np.exp(np.log(tau) - np.log(m) - r - log_em1)


def interruptions_per_day(gpus: int, rate_per_1000_gpu_days: float) -> float:
    """Job interruptions per day [1/day] of a synchronous job on ``gpus`` accelerators.

    ``gpus x r / 1000`` with ``r`` in interruptions per 1000 GPU-days (Kokolis et al. 2025:
    MTTF = 1 / (N r_f), with N nodes and r_f per node-day).
    """
    require_positive(gpus=gpus)
    require_non_negative(rate_per_1000_gpu_days=rate_per_1000_gpu_days)
    return gpus * rate_per_1000_gpu_days / 1000.0


def mtbi_hours(rate_per_day: float) -> float:
    """Mean time between interruptions [h] from a rate [1/day]; ``inf`` for a zero rate."""
    require_non_negative(rate_per_day=rate_per_day)
    return math.inf if rate_per_day == 0 else HOURS_PER_DAY / rate_per_day


def checkpoint_write_s(size_bytes: float, write_gb_per_s: float) -> float:
    """Time to write a checkpoint [s] at an aggregate bandwidth [GB/s, 10^9 B/s]."""
    require_positive(size_bytes=size_bytes, write_gb_per_s=write_gb_per_s)
    return size_bytes / (write_gb_per_s * GB)


def storage_units_for_checkpoint(size_bytes: float, target_s: float, unit_write_gb_per_s: float,
                                 unit_capacity_tb: float, kept: int = 3) -> int:
    """Storage appliances needed to write a checkpoint in ``target_s`` and keep ``kept`` of them.

    ``max(ceil(size / (target x write)), ceil(kept x size / capacity), 1)`` [count].
    """
    require_positive(size_bytes=size_bytes, target_s=target_s, unit_write_gb_per_s=unit_write_gb_per_s,
                    unit_capacity_tb=unit_capacity_tb, kept=kept)
    return max(*storage_mod.appliances_needed(size_bytes, target_s, unit_write_gb_per_s, unit_capacity_tb, kept), 1)


#: Above this mean the Poisson distribution is replaced by its Cornish-Fisher normal expansion
#: (exact summation would take ~20 sqrt(mean) terms; the expansion is within one count there).
POISSON_EXACT_MAX_MEAN = 1.0e5
#: Standard deviations below the mean where the exact sums start: the mass below is
#: Phi(-12) ~ 2e-33, far under any confidence a spare plan asks for.
_TAIL_SD = 12.0


def _poisson_log_pmf(i: int, mean: float) -> float:
    """ln P(X = i) for X ~ Poisson(mean) > 0: i ln(mean) - mean - ln(i!) (no underflow, no loop)."""
    return i * math.log(mean) - mean - math.lgamma(i + 1)


def _poisson_start(mean: float) -> int:
    return max(0, math.floor(mean - _TAIL_SD * math.sqrt(mean) - 10))


def poisson_cdf(k: int, mean: float) -> float:
    """P(X <= k) for X ~ Poisson(mean) [probability].

    Each term is ``exp(ln pmf)`` from :func:`_poisson_log_pmf`, summed from 12 standard
    deviations below the mean, so a mean of thousands does not underflow ``exp(-mean)`` to 0
    (the product recursion p_i = p_(i-1) mean / i returned 0 for every k once mean > 745).
    Means above :data:`POISSON_EXACT_MAX_MEAN` use the normal approximation with continuity
    correction, Phi((k + 0.5 - mean) / sqrt(mean)).
    """
    require_non_negative(mean=mean)
    if k < 0:
        return 0.0
    if mean == 0:
        return 1.0
    if mean > POISSON_EXACT_MAX_MEAN:
        return NormalDist().cdf((k + 0.5 - mean) / math.sqrt(mean))
    start = _poisson_start(mean)
    if k < start:
        return 0.0
    stop = min(int(k), math.ceil(mean + 40.0 * math.sqrt(mean) + 40))  # terms beyond add < 1e-300
    total = math.fsum(math.exp(_poisson_log_pmf(i, mean)) for i in range(start, stop + 1))
    return min(total, 1.0)


def poisson_quantile(confidence: float, mean: float) -> int:
    """Smallest k with P(X <= k) >= confidence for X ~ Poisson(mean) [count].

    Exact (log-space terms, :func:`poisson_cdf`) up to :data:`POISSON_EXACT_MAX_MEAN`; above it
    the Cornish-Fisher expansion of the Poisson quantile, k = ceil(mean + z sqrt(mean) +
    (z^2 - 1)/6 - 1/2 + (z^3 - 7 z) / (72 sqrt(mean))) with z the standard normal quantile
    (Johnson, Kemp and Kotz 2005, "Univariate Discrete Distributions", 3rd ed., Sec. 4.6.2),
    within one count of the exact quantile at such means. The loop is bounded: at most
    ~52 sqrt(mean) + 50 terms are summed whatever the confidence.
    """
    require_non_negative(mean=mean)
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1 (exclusive), got {confidence!r}")
    if mean == 0:
        return 0
    if mean > POISSON_EXACT_MAX_MEAN:
        z = NormalDist().inv_cdf(confidence)
        r = math.sqrt(mean)
        return max(0, math.ceil(mean + z * r + (z * z - 1.0) / 6.0 - 0.5 + (z ** 3 - 7.0 * z) / (72.0 * r)))
    start = _poisson_start(mean)
    stop = math.ceil(mean + 40.0 * math.sqrt(mean) + 40)
    total = 0.0
    for k in range(start, stop + 1):
        total += math.exp(_poisson_log_pmf(k, mean))
        if total >= confidence:
            return k
    return stop  # confidence within rounding of 1: the tail beyond is below 1e-300


def spares_needed(node_failures_per_day: float, repair_hours: float, confidence: float = 0.99) -> int:
    """Hot spare nodes so that the nodes in repair exceed the spares with probability < 1 - confidence.

    Nodes in repair at a random moment ~ Poisson(lambda x MTTR) (an M/G/inf queue), with
    lambda the node-failure rate [1/h] and MTTR the repair time [h]. The answer is the
    smallest k with P(X <= k) >= confidence [count] (:func:`poisson_quantile`).
    """
    require_non_negative(node_failures_per_day=node_failures_per_day)
    require_positive(repair_hours=repair_hours)
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1 (exclusive), got {confidence!r}")
    return poisson_quantile(confidence, node_failures_per_day / HOURS_PER_DAY * repair_hours)


def availability(mtbf_h: float, mttr_h: float) -> float:
    """Steady-state availability MTBF / (MTBF + MTTR) [fraction]."""
    require_positive(mtbf_h=mtbf_h)
    require_non_negative(mttr_h=mttr_h)
    return mtbf_h / (mtbf_h + mttr_h)


def redundant_availability(single: float, copies: int) -> float:
    """Availability of ``copies`` independent units of which one suffices: 1 - (1 - A)^n [fraction]."""
    if not 0 <= single <= 1:
        raise ValueError(f"single availability must be between 0 and 1, got {single!r}")
    require_positive(copies=copies)
    return 1.0 - (1.0 - single) ** copies


def redundant_group_failures_per_year(needed: int, spares: int, unit_mtbf_h: float, repair_h: float) -> float:
    """Outages per year [1/yr] of an N+M group of units (e.g. power supplies) with repair.

    The group fails when one more unit fails while M are already down:
    ``f = C(n, M) (lambda MTTR)^M (n - M) lambda`` with n = N + M, lambda = 1/MTBF [1/h]
    (first-order, lambda MTTR << 1; M = 0 gives n lambda).
    """
    if needed < 1 or spares < 0:
        raise ValueError(f"redundancy must be N+M with N >= 1 and M >= 0, got {needed}+{spares}")
    require_positive(unit_mtbf_h=unit_mtbf_h)
    require_non_negative(repair_h=repair_h)
    n = needed + spares
    lam = 1.0 / unit_mtbf_h
    f_per_h = math.comb(n, spares) * (lam * repair_h) ** spares * (n - spares) * lam
    return f_per_h * HOURS_PER_YEAR


def ideal_training_days_6nd(active_params: float, tokens: float, gpus: int, peak_tflops: float,
                            mfu: float = 0.4) -> float:
    """Failure-free training days from the 6 N D rule [days].

    ``6 x active params x tokens / (GPUs x peak x MFU)`` (Kaplan et al. 2020, "Scaling Laws
    for Neural Language Models", arXiv:2001.08361, Sec. 2.1: C ~ 6 N D). A quick
    cross-check of the training engine's figure; the assessment reads the training engine.
    """
    require_positive(active_params=active_params, tokens=tokens, gpus=gpus, peak_tflops=peak_tflops, mfu=mfu)
    return 6.0 * active_params * tokens / (gpus * peak_tflops * TERA * mfu) / SECONDS_PER_DAY


def efficiency_time_factor(low: float, high: float) -> float:
    """Mean wall-time factor E[1/e] of a throughput multiplier e ~ Uniform(low, high) [-].

    E[1/e] = ln(high / low) / (high - low) (1 / low when low == high). The default range
    0.75-1.1 gives ln(1.4667) / 0.35 = 1.0943: on average the run takes 9.4% longer than at
    the nominal throughput (Jensen: slow samples weigh more than fast ones). The expected
    days to train include it, so the expectation is the mean of the P10-P90 band.
    """
    if not (0 < low <= high):
        raise ValueError(f"efficiency range must be 0 < low <= high, got ({low!r}, {high!r})")
    if high == low:
        return 1.0 / low
    return math.log(high / low) / (high - low)


def days_to_train_band(ideal_days: float, interval_s: float, checkpoint_s: float, restart_s: float,
                       mtbi_s: float, *, failure_range: tuple[float, float] = (0.6, 1.75),
                       efficiency_range: tuple[float, float] = (0.75, 1.1), availability_factor: float = 1.0,
                       planned_loss_fraction: float = 0.0, samples: int = MC_SAMPLES,
                       seed: int = MC_SEED) -> dict[str, float]:
    """P10 / P50 / P90 / mean of failure-aware days to train [days] (seeded Monte Carlo).

    Each sample draws a failure-rate multiplier (log-uniform over ``failure_range``) and a
    throughput multiplier (uniform over ``efficiency_range``); the expected wall time is
    Daly's eq. (13) at that rate, and the Poisson scatter of the number of interruptions
    around its mean adds ``(N - E[N]) x (R + (tau + delta)/2)`` of lost time.
    """
    require_positive(ideal_days=ideal_days, interval_s=interval_s, mtbi_s=mtbi_s, samples=samples)
    lo_f, hi_f = failure_range
    lo_e, hi_e = efficiency_range
    if not (0 < lo_f <= hi_f) or not (0 < lo_e <= hi_e):
        raise ValueError(f"ranges must be 0 < low <= high, got failure {failure_range}, efficiency {efficiency_range}")
    rng = np.random.default_rng(seed)
    f = np.exp(rng.uniform(math.log(lo_f), math.log(hi_f), samples))
    e = rng.uniform(lo_e, hi_e, samples)
    m = mtbi_s / f
    g = goodput_array(interval_s, checkpoint_s, restart_s, m)
    work_s = ideal_days * SECONDS_PER_DAY / e
    wall_s = work_s / g * (1.0 + planned_loss_fraction) / availability_factor
    mean_n = wall_s / m
    # numpy's Poisson sampler refuses means above ~1e19 ("lam value too large") and infinite ones
    # (goodput underflowed to 0); there the count is normal, N ~ mean + sqrt(mean) Z, drawn from its
    # own seeded stream so that ordinary designs draw exactly as before
    big = ~(mean_n <= POISSON_SAMPLER_MAX_MEAN)
    n = rng.poisson(np.where(big, 0.0, mean_n)).astype(float)
    if big.any():
        z = np.random.default_rng(seed + 1).standard_normal(samples)
        with np.errstate(invalid="ignore", over="ignore"):
            n = np.where(big, mean_n + np.sqrt(mean_n) * z, n)
    loss_s = restart_s + (interval_s + checkpoint_s) / 2.0
    with np.errstate(invalid="ignore", over="ignore"):
        days = np.maximum(wall_s + (n - mean_n) * loss_s, work_s) / SECONDS_PER_DAY
    days = np.where(np.isnan(days), np.inf, days)
    p10, p50, p90 = np.percentile(days, [10, 50, 90])
    return {"p10": float(p10), "p50": float(p50), "p90": float(p90), "mean": float(days.mean())}


# =========================================================================== data


@lru_cache(maxsize=2)
def load_failure_data(path: str | None = None) -> dict[str, Any]:
    """``data/failure_rates.yaml`` as a dict."""
    with Path(path or FAILURE_RATES_PATH).open(encoding="utf-8") as fh:
        return load_yaml(fh)


COMPONENTS: tuple[str, ...] = ("gpu", "hbm", "software", "network", "nic", "host", "psu")


def preset_rates(preset: str = "llama3-405b") -> dict[str, float]:
    """Per-component unexpected-interruption rates [per 1000 GPU-days] of a preset.

    Llama 3: Table 5 counts / 884,736 GPU-days x 1000. RSC-1/RSC-2: the published total
    per node-day divided by 8 GPUs per node, split in the Llama 3 component mix.
    """
    data = load_failure_data()
    presets = data["presets"]
    if preset not in presets:
        raise UnknownIdError("failure preset", preset, presets, "reliability.failure_preset")
    llama = presets["llama3-405b"]
    counts = llama["counts"]
    base = {c: counts[c] / llama["exposure_gpu_days"] * 1000.0 for c in COMPONENTS}
    p = presets[preset]
    if "counts" in p:
        return {c: p["counts"][c] / p["exposure_gpu_days"] * 1000.0 for c in COMPONENTS}
    total = p["per_1000_node_days"] / p["gpus_per_node"]
    scale = total / sum(base.values())
    return {c: v * scale for c, v in base.items()}


def planned_rate(preset: str = "llama3-405b") -> float:
    """Planned interruptions per 1000 GPU-days (Llama 3: 47 in 884,736 GPU-days; 0 where not published)."""
    p = load_failure_data()["presets"][preset]
    return p.get("planned_interruptions", 0) / p["exposure_gpu_days"] * 1000.0 if "exposure_gpu_days" in p else 0.0


# =========================================================================== scenario wiring


@dataclass
class ReliabilityResult:
    """Reliability of a scenario's training job. Times in hours/seconds/days as named.

    ``assumptions`` maps a figure's name to the assumption it rests on where the catalogue has no value
    (the storage system's row); figures not listed are computed
    from the scenario and the catalogue.
    """

    gpus: int
    nodes: int
    failure_preset: str
    rate_per_1000_gpu_days: float
    component_rates: dict[str, float]
    interruptions_per_day: float
    planned_interruptions_per_day: float
    mtbi_hours: float
    checkpoint_bytes: float
    checkpoint_write_gb_per_s: float
    checkpoint_write_s: float
    checkpoint_interval_s: float
    young_interval_s: float
    restart_s: float
    goodput: float
    storage_system: str
    storage_units: int
    training_days_ideal: float | None
    training_days_expected: float | None
    training_days_p10: float | None
    training_days_p50: float | None
    training_days_p90: float | None
    expected_interruptions: float | None
    spare_nodes: int
    spare_nodes_recommended: int
    full_size_availability: float
    node_repairs_per_day: float
    repair_hours: float
    head_nodes: int
    head_node_availability: float
    control_plane_downtime_hours_per_year: float
    psu_redundancy: str | None
    psu_node_outages_per_year: float | None
    psu_node_outages_per_year_without_redundancy: float | None
    assumptions: dict[str, str] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    #: the shared storage design (:func:`gpucluster_lib.facility.storage.size_storage`)
    storage: storage_mod.StorageDesign | None = None

    def to_dict(self) -> dict[str, Any]:
        """The ``gpucluster reliability --json`` contract."""
        per_day = self.interruptions_per_day
        total = sum(self.component_rates.values()) or 1.0
        return {
            "gpus": self.gpus,
            "nodes": self.nodes,
            "failure_preset": self.failure_preset,
            "rate_per_1000_gpu_days": self.rate_per_1000_gpu_days,
            "interruptions_per_day": per_day,
            "planned_interruptions_per_day": self.planned_interruptions_per_day,
            "mtbi_hours": self.mtbi_hours,
            "components": {
                c: {"per_1000_gpu_days": r, "interruptions_per_day": per_day * r / total, "share": r / total}
                for c, r in self.component_rates.items()
            },
            "checkpoint_bytes": self.checkpoint_bytes,
            "checkpoint_write_gb_per_s": self.checkpoint_write_gb_per_s,
            "checkpoint_write_s": self.checkpoint_write_s,
            "checkpoint_interval_s": self.checkpoint_interval_s,
            "young_interval_s": self.young_interval_s,
            "restart_s": self.restart_s,
            "goodput": self.goodput,
            "storage": {"system": self.storage_system, "units": self.storage_units,
                        **({k: v for k, v in self.storage.to_dict().items() if k not in ("system", "units")}
                           if self.storage is not None else {})},
            "training_days_ideal": self.training_days_ideal,
            "training_days_expected": self.training_days_expected,
            "training_days_p10": self.training_days_p10,
            "training_days_p50": self.training_days_p50,
            "training_days_p90": self.training_days_p90,
            "expected_interruptions": self.expected_interruptions,
            "spare_nodes": self.spare_nodes,
            "spare_nodes_recommended": self.spare_nodes_recommended,
            "availability": {
                "full_size": self.full_size_availability,
                "node_repairs_per_day": self.node_repairs_per_day,
                "repair_hours": self.repair_hours,
                "head_nodes": self.head_nodes,
                "head_node": self.head_node_availability,
                "control_plane_downtime_hours_per_year": self.control_plane_downtime_hours_per_year,
                "psu_redundancy": self.psu_redundancy,
                "psu_node_outages_per_year": self.psu_node_outages_per_year,
                "psu_node_outages_per_year_without_redundancy": self.psu_node_outages_per_year_without_redundancy,
            },
            "assumptions": dict(self.assumptions),
            "findings": [f.to_dict() for f in self.findings],
        }


def _range(values: list[float], path: str) -> tuple[float, float]:
    if len(values) != 2:
        raise ScenarioError(path, f"must be two numbers [low, high], got {len(values)}")
    lo, hi = float(values[0]), float(values[1])
    if not (0 < lo <= hi) or not all(math.isfinite(v) for v in (lo, hi)):
        raise ScenarioError(path, f"must satisfy 0 < low <= high, got [{lo}, {hi}]")
    return lo, hi


def component_rates_for(scenario: Scenario) -> dict[str, float]:
    """Per-component rates [per 1000 GPU-days]: the preset, scaled to
    ``gpu_failures_per_1000_gpu_days`` (the all-cause total) when given, then
    ``component_rates`` overrides single components."""
    rel = scenario.reliability
    rates = preset_rates(rel.failure_preset)
    if rel.gpu_failures_per_1000_gpu_days is not None:
        scale = rel.gpu_failures_per_1000_gpu_days / sum(rates.values())
        rates = {c: v * scale for c, v in rates.items()}
    for name, value in rel.component_rates.items():
        if name not in COMPONENTS:
            raise UnknownIdError("failure component", name, COMPONENTS, f"reliability.component_rates.{name}")
        if value < 0:
            raise ScenarioError(f"reliability.component_rates.{name}",
                                f"must be at least 0 failures per 1000 GPU-days, got {value!r}")
        rates[name] = float(value)
    return rates


@dataclass(frozen=True)
class SparePlan:
    """Hot-spare nodes: one decision that the facility (racks, power), the reliability and the
    cost all read. Rates per day, times in hours."""

    spare_nodes: int
    recommended: int
    node_repairs_per_day: float
    repair_hours: float
    confidence: float
    full_size_availability: float

    def to_dict(self) -> dict[str, Any]:
        return {"spare_nodes": self.spare_nodes, "recommended": self.recommended,
                "node_repairs_per_day": self.node_repairs_per_day, "repair_hours": self.repair_hours,
                "confidence": self.confidence, "full_size_availability": self.full_size_availability}


def spare_plan(scenario: Scenario, hardware: Any) -> SparePlan:
    """Hot spares for the hardware failures that take a node out for repair.

    Node repairs per day = GPUs x (sum of the hardware components' rates) / 1000; the spares
    cover the nodes in repair with probability ``reliability.spare_confidence`` (Poisson
    with mean repairs per hour x repair hours, :func:`spares_needed`);
    ``reliability.spare_nodes`` overrides the count.
    """
    rel = scenario.reliability
    data = load_failure_data()
    rates = component_rates_for(scenario)
    repair_h = rel.repair_hours or float(data["repair_hours"])
    repairs = interruptions_per_day(hardware.gpus, sum(rates[c] for c in data["hardware_components"]))
    recommended = spares_needed(repairs, repair_h, rel.spare_confidence)
    spares = rel.spare_nodes if rel.spare_nodes is not None else recommended
    full_size = poisson_cdf(spares, repairs / HOURS_PER_DAY * repair_h)
    return SparePlan(spare_nodes=int(spares), recommended=int(recommended), node_repairs_per_day=repairs,
                     repair_hours=repair_h, confidence=rel.spare_confidence, full_size_availability=full_size)


FROM_ENGINE: Any = type("FromEngine", (), {"__repr__": lambda self: "FROM_ENGINE"})()
"""Default of ``assess(training_days_ideal=...)``: ask the training engine (stand-alone use)."""


def assess(scenario: Scenario, catalog: Any = None, *, training_days_ideal: Any = FROM_ENGINE,
           hardware: Any = None, storage: storage_mod.StorageDesign | None = None,
           spares: SparePlan | None = None) -> ReliabilityResult:
    """Failure-aware reliability assessment of the scenario's training job.

    Parameters
    ----------
    scenario : Scenario
    catalog : Catalog, optional
        Defaults to :func:`gpucluster_lib.hardware.resolve.catalog_for`.
    training_days_ideal : float, optional
        Failure-free days to train [days] of a plan that fits (a Design passes its training
        stage's). Omitted outside a Design: taken from the training engine's one public
        function (:func:`gpucluster_lib.training.estimate`) when ``training.tokens`` is set and
        the plan fits in memory; a plan that does not fit gives no days, no band and no
        expected days.
    hardware, storage, spares : optional
        A Design's upstream results (resolved hardware, the storage design whose checkpoint
        size and write bandwidth are used, the spare plan); computed when omitted.
    """
    cat = catalog or catalog_for(scenario)
    hw = hardware if hardware is not None else resolve_hardware(scenario, cat)
    rel = scenario.reliability
    data = load_failure_data()
    findings: list[Finding] = []
    assumptions: dict[str, str] = {}
    fail_lo_hi = _range(rel.failure_rate_range, "reliability.failure_rate_range")
    eff_lo_hi = _range(rel.efficiency_range, "reliability.efficiency_range")

    rates = component_rates_for(scenario)
    total_rate = sum(rates.values())
    per_day = interruptions_per_day(hw.gpus, total_rate)
    planned_per_day = interruptions_per_day(hw.gpus, planned_rate(rel.failure_preset))
    mtbi_h = mtbi_hours(per_day)
    mtbi_s = mtbi_h * SECONDS_PER_HOUR

    store = storage if storage is not None else size_storage(scenario, cat, nodes=hw.nodes, gpus=hw.gpus)
    ckpt = store.checkpoint_bytes
    if "storage" in store.sources:
        assumptions["storage"] = store.sources["storage"]
    if store.basis == "local":
        findings.append(Finding("rel-storage-local", "info",
                                f"a single node writes its {ckpt / GB:.0f} GB checkpoint to local NVMe at "
                                f"{store.checkpoint_write_gb_per_s:g} GB/s ({store.checkpoint_write_s:.0f} s); "
                                "no central storage appliance",
                                fix="choose a storage system to add a shared file system",
                                field="reliability.storage_system"))
    sid, units, write_gbps = store.system, store.appliances, store.checkpoint_write_gb_per_s
    delta = checkpoint_write_s(ckpt, write_gbps)
    restart_s = (rel.restart_minutes if rel.restart_minutes is not None else data["restart_minutes"]) * SECONDS_PER_MINUTE
    if math.isinf(mtbi_s):
        tau_young = math.inf
        tau = rel.checkpoint_interval_s or 24 * SECONDS_PER_HOUR
    else:
        tau_young = young_interval_s(delta, mtbi_s)
        tau = rel.checkpoint_interval_s or daly_interval_s(delta, mtbi_s)
    g_unexp = goodput(tau, delta, restart_s, mtbi_s)
    planned_loss = planned_per_day / SECONDS_PER_DAY * (restart_s + delta)
    g = g_unexp / (1.0 + planned_loss)

    # hot spares for the hardware failures that take a node out for repair
    plan = spares if spares is not None else spare_plan(scenario, hw)
    repair_h, node_repairs_per_day = plan.repair_hours, plan.node_repairs_per_day
    recommended, spare_count, full_size = plan.recommended, plan.spare_nodes, plan.full_size_availability

    # control plane: head nodes
    head_a1 = availability(data["head_node_mtbf_hours"], data["head_node_repair_hours"])
    head_nodes = scenario.hardware.head_nodes
    ha = rel.redundant_head_node and head_nodes >= 2
    head_a = redundant_availability(head_a1, head_nodes) if ha else (head_a1 if head_nodes else 0.0)
    failover_h = data["failover_minutes"] / 60.0
    failovers_per_year = head_nodes * HOURS_PER_YEAR / data["head_node_mtbf_hours"] if ha else 0.0
    downtime_h = (1.0 - head_a) * HOURS_PER_YEAR + failovers_per_year * failover_h

    # power supplies of a compute node: N+M versus no redundancy
    psu_text, psu_f, psu_f0 = None, None, None
    server = hw.server or {}
    parts_psu = scenario.hardware.parts.psus if scenario.hardware.parts else None
    text = parts_psu.redundancy if parts_psu else server.get("psu_redundancy")
    if isinstance(text, str) and text:
        n, m = parse_redundancy(text, "hardware.parts.psus.redundancy")
        psu_text = text
        mtbf = data["psu_mtbf_hours"]
        psu_f = hw.nodes * redundant_group_failures_per_year(n, m, mtbf, data["repair_hours"])
        psu_f0 = hw.nodes * redundant_group_failures_per_year(n, 0, mtbf, data["repair_hours"])

    # days to train
    if training_days_ideal is FROM_ENGINE:
        ideal = None
        if scenario.training.tokens is not None:
            est = training.estimate(scenario, cat, hardware=hw)
            ideal = est.training_days if getattr(est, "fits", True) else None
    else:
        ideal = training_days_ideal
    expected = p10 = p50 = p90 = n_int = None
    if ideal is not None:
        if not ideal > 0:
            raise ValueError(f"training_days_ideal must be positive, got {ideal!r}")
        # the expectation over the same throughput range the band samples (E[1/e]); without it
        # "expected" sat at the nominal throughput, below the band's mean and P50
        with np.errstate(over="ignore"):
            expected = ideal * efficiency_time_factor(*eff_lo_hi) / g / full_size if g > 0 and full_size > 0 \
                else math.inf
        n_int = expected * per_day
        if not math.isfinite(expected):
            # goodput or the full-size availability underflowed to 0: the run never ends; the
            # goodput finding below says why, and no number of days is shown
            expected = p10 = p50 = p90 = n_int = None
        elif math.isinf(mtbi_s):
            p10 = p50 = p90 = expected
        else:
            band = days_to_train_band(ideal, tau, delta, restart_s, mtbi_s, failure_range=fail_lo_hi,
                                      efficiency_range=eff_lo_hi, availability_factor=full_size,
                                      planned_loss_fraction=planned_loss)
            p10, p50, p90 = (band[k] if math.isfinite(band[k]) else None for k in ("p10", "p50", "p90"))
    elif scenario.training.tokens is None:
        findings.append(Finding("rel-no-tokens", "info", "the training tokens are not set: no days to train",
                                fix="give the training tokens (such as 300 billion)", field="training.tokens"))

    # findings
    if g < 0.5:
        findings.append(Finding("rel-goodput-very-low", "error",
                                f"goodput {g:.0%}: checkpoints of {delta:.0f} s and restarts of {restart_s / 60:.0f} min "
                                f"against one interruption every {mtbi_h:.1f} h",
                                fix="write checkpoints faster (more storage, asynchronous checkpointing) or use fewer GPUs",
                                field="reliability.checkpoint_write_gbps"))
    elif g < 0.9:
        findings.append(Finding("rel-goodput-low", "warning",
                                f"goodput {g:.1%} is below the >90% effective training time Llama 3 reported",
                                fix="faster checkpoint writes, faster restarts (hot spares, in-memory checkpoints)",
                                field="reliability.restart_minutes"))
    if rel.spare_nodes is not None and rel.spare_nodes < recommended:
        findings.append(Finding("rel-too-few-spares", "warning",
                                f"{rel.spare_nodes} spare nodes cover the nodes in repair only {full_size:.1%} of the time; "
                                f"{recommended} give {rel.spare_confidence:.0%}",
                                fix=f"keep {plural(recommended, 'spare node')}", field="reliability.spare_nodes"))
    if rel.redundant_head_node and head_nodes < 2:
        findings.append(Finding("rel-head-node-not-redundant", "warning",
                                f"a redundant head node is asked for, but the cluster has {plural(head_nodes, 'head node')}",
                                fix="use 2 head nodes (an active and a standby scheduler and control plane)",
                                field="hardware.head_nodes"))
    elif not ha:
        findings.append(Finding("rel-single-head-node", "info",
                                f"a single head node: control plane available {head_a:.3%} "
                                f"({downtime_h:.0f} h down per year)",
                                fix="add a second head node for SLURM/Kubernetes control-plane HA",
                                field="reliability.redundant_head_node"))
    if psu_text and psu_f is not None and psu_f0 is not None and psu_f >= psu_f0:
        findings.append(Finding("rel-psu-no-redundancy", "info",
                                f"power supplies {psu_text}: no spare supply, each PSU failure stops a node",
                                field="hardware.parts.psus.redundancy"))
    deadline = scenario.training.deadline_days
    if deadline is not None and p90 is not None and p90 > deadline:
        findings.append(Finding("rel-deadline-at-risk", "warning",
                                f"P90 days to train {p90:.1f} exceeds the deadline of {deadline:g} days",
                                fix="add GPUs or accept a later date", field="training.deadline_days"))

    return ReliabilityResult(
        gpus=hw.gpus, nodes=hw.nodes, failure_preset=rel.failure_preset, rate_per_1000_gpu_days=total_rate,
        component_rates=rates, interruptions_per_day=per_day, planned_interruptions_per_day=planned_per_day,
        mtbi_hours=mtbi_h, checkpoint_bytes=ckpt, checkpoint_write_gb_per_s=write_gbps, checkpoint_write_s=delta,
        checkpoint_interval_s=tau, young_interval_s=tau_young, restart_s=restart_s, goodput=g,
        storage_system=sid, storage_units=units, training_days_ideal=ideal, training_days_expected=expected,
        training_days_p10=p10, training_days_p50=p50, training_days_p90=p90, expected_interruptions=n_int,
        spare_nodes=spare_count, spare_nodes_recommended=recommended, full_size_availability=full_size,
        node_repairs_per_day=node_repairs_per_day, repair_hours=repair_h, head_nodes=head_nodes,
        head_node_availability=head_a, control_plane_downtime_hours_per_year=downtime_h, psu_redundancy=psu_text,
        psu_node_outages_per_year=psu_f, psu_node_outages_per_year_without_redundancy=psu_f0,
        assumptions=assumptions, findings=sort_findings(findings), storage=store,
    )


def scaling_table(scenario: Scenario, catalog: Any = None, node_counts: list[int] | None = None, *,
                  base: ReliabilityResult | None = None, samples: int = MC_SAMPLES) -> list[dict[str, Any]]:
    """Days-to-train band against cluster size (the scenario with ``hardware.nodes`` varied).

    Failure-free days scale as 1 / nodes from the scenario's own estimate (perfect scaling,
    stated); the interruption and node-repair rates grow with the GPU count; the checkpoint
    (same model, same storage) keeps its write time, and the interval is re-optimised (Daly)
    at each size. Rows: nodes, gpus, mtbi_hours, goodput, spare_nodes, ideal, expected, p10,
    p50, p90 [days]. ``base``: an :func:`assess` result of the same scenario (reused).
    """
    base = base if base is not None else assess(scenario, catalog)
    if base.training_days_ideal is None:
        return []
    rel = scenario.reliability
    fail_lo_hi = _range(rel.failure_rate_range, "reliability.failure_rate_range")
    eff_lo_hi = _range(rel.efficiency_range, "reliability.efficiency_range")
    gpn = base.gpus // base.nodes
    counts = node_counts or sorted({max(1, round(base.nodes * k)) for k in (0.25, 0.5, 1, 2, 4, 8)})
    delta, restart = base.checkpoint_write_s, base.restart_s
    rows = []
    for n in counts:
        if not (isinstance(n, int) and n > 0):
            raise ValueError(f"node counts must be positive integers, got {n!r}")
        scale = n * gpn / base.gpus
        per_day = base.interruptions_per_day * scale
        mtbi_s = mtbi_hours(per_day) * SECONDS_PER_HOUR
        if math.isinf(mtbi_s):
            tau = rel.checkpoint_interval_s or 24 * SECONDS_PER_HOUR
        else:
            tau = rel.checkpoint_interval_s or daly_interval_s(delta, mtbi_s)
        planned = base.planned_interruptions_per_day * scale / SECONDS_PER_DAY * (restart + delta)
        g = goodput(tau, delta, restart, mtbi_s) / (1.0 + planned)
        repairs = base.node_repairs_per_day * scale
        spares = rel.spare_nodes if rel.spare_nodes is not None else spares_needed(
            repairs, base.repair_hours, rel.spare_confidence)
        full = poisson_cdf(spares, repairs / HOURS_PER_DAY * base.repair_hours)
        ideal = base.training_days_ideal * base.nodes / n
        expected = ideal * efficiency_time_factor(*eff_lo_hi) / g / full if g > 0 and full > 0 else math.inf
        if not math.isfinite(expected):  # the run never ends at this size (goodput underflowed to 0)
            expected = None
            band = {"p10": None, "p50": None, "p90": None}
        elif math.isinf(mtbi_s):
            band = {"p10": expected, "p50": expected, "p90": expected}
        else:
            band = days_to_train_band(ideal, tau, delta, restart, mtbi_s, failure_range=fail_lo_hi,
                                      efficiency_range=eff_lo_hi, availability_factor=full,
                                      planned_loss_fraction=planned, samples=samples)
        rows.append({"nodes": n, "gpus": n * gpn, "mtbi_hours": mtbi_s / SECONDS_PER_HOUR, "goodput": g,
                     "spare_nodes": spares, "ideal": ideal, "expected": expected,
                     "p10": band["p10"], "p50": band["p50"], "p90": band["p90"]})
    return rows


def goodput_curve(result: ReliabilityResult, points: int = 61) -> list[dict[str, float]]:
    """Goodput against checkpoint interval around the optimum (0.1x to 10x, log-spaced).

    Rows: ``interval_min`` [min], ``goodput`` [fraction], ``optimal`` (the chosen interval's row).
    Same model as :func:`assess` (Daly eq. 13, planned interruptions included).
    """
    if points < 2:
        raise ValueError(f"points must be at least 2, got {points!r}")
    tau0 = result.checkpoint_interval_s
    mtbi_s = result.mtbi_hours * SECONDS_PER_HOUR
    taus = np.unique(np.append(tau0 * np.logspace(-1, 1, points), tau0))
    planned = result.planned_interruptions_per_day / SECONDS_PER_DAY * (result.restart_s + result.checkpoint_write_s)
    if math.isinf(mtbi_s):
        g = taus / (taus + result.checkpoint_write_s)
    else:
        g = goodput_array(taus, result.checkpoint_write_s, result.restart_s, mtbi_s)
    g = g / (1.0 + planned)
    return [{"interval_min": float(t) / SECONDS_PER_MINUTE, "goodput": float(v), "optimal": bool(t == tau0)}
            for t, v in zip(taus, g, strict=True)]
