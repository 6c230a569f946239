"""Serving under load: a continuous-batching replica fed by Poisson arrivals.

Public API:

* :func:`load_point` ``(rate_per_s, curve, percentile=99)`` -> :class:`LoadPoint`: mean batch,
  TTFT and TPOT at the median and at the percentile, utilisations, stability.
* :func:`max_rate` ``(curve, ttft_slo_s, tpot_slo_s, percentile=99)`` -> :class:`LoadPoint` at the
  highest rate whose percentile TTFT and TPOT meet the SLOs (MLPerf's server scenario), or None.
* :class:`ReplicaCurve` -- what the queue needs from the timing model: the batch grid, the
  mixed-step time (TPOT) at each mean batch, the prefill of one prompt, input/output tokens,
  the memory-limited batch and the engine's token budget per step.
* :func:`last_request_latency` ``(curve, mean_batch, ttft_s)``: the latency of a request that arrives as
  the arrivals stop (the replica drains under it), what MLPerf LoadGen's server metric waits for.
* Helpers with their own tests: :func:`poisson_quantile`, :func:`erlang_c`, :func:`mg1_wait_quantile`,
  :func:`gamma_length_pmf`.

Model (per replica; rates in requests/s, times in s)
----------------------------------------------------
1. **Decode batch by Little's law** (Little 1961, "A proof for the queuing formula L = lambda W",
   Operations Research 9(3)). A request stays ``L_out`` steps in the batch, so at rate
   ``lambda`` the mean batch ``b`` solves ``lambda = b / (L_out T(b))`` with ``T(b)`` the
   mixed-step time of :func:`~gpucluster_lib.inference.latency.mixed_step_times` (which carries
   the prefill share ``b L_in / L_out`` of each step). The replica is stable while
   ``lambda < B_max / (L_out T(B_max))``, the offline capacity.
2. **Batch fluctuations**: sequences in decode form an M/G/infinity system, whose occupancy is
   Poisson with mean ``lambda E[S]`` whatever the service distribution (Palm's theorem; Gross,
   Shortle, Thompson and Harris 2008, *Fundamentals of Queueing Theory*, 4th ed., the M/G/inf
   queue). ``TPOT_q = T(min(Q_q(b), B_max))`` with ``Q_q`` the Poisson q-quantile: every step a
   request lives through is about that long (a request's TPOT averages ~L_out steps of a batch that
   changes slowly, so this bounds it from above). The median TPOT is the same formula at q = 0.5,
   ``T(Q_0.5(b))`` (the step at the Poisson median batch, not at the mean batch ``b``), so at
   ``slo_percentile: 50`` the p50 and percentile figures are one number.
3. **KV-cache slots** (admission): with ``c = B_max`` slots the queue is M/G/c. The probability
   of waiting is Erlang's C formula ``C(c, a)``, ``a = b`` the offered load in slots (Erlang
   1917; Gross et al. 2008, the M/M/c queue), and the waiting tail the M/M/c one,
   ``P(W > t) = C exp(-(c - a) t / S)``, with ``S = L_out T(b)`` scaled by Allen and Cunneen's
   ``(1 + c_s^2) / 2`` for a general service time (Allen 1990, *Probability, Statistics and
   Queueing Theory*, 2nd ed.); ``c_s`` is the spread of output lengths, ``inference.output_tokens_cv``
   (0: every request decodes ``L_out`` tokens; MLPerf's Llama 2 70B set: 0.71, from the published
   latency percentiles of three server runs, see docs/inference.md).
4. **Prefill**: each step admits whole prompts up to the engine's token budget ``K`` less the decode
   tokens (``inference.max_num_tokens``, at least ``L_in``; TensorRT-LLM's default 8192; no chunked
   context, as in NVIDIA's MLPerf harness), i.e. ``m = (K - b) / L_in`` prompts per step on average
   (the mean over steps of whole prompts; Agrawal et al. 2024, Sarathi-Serve, for the mixed step). Prompts queue as M/D/1 with
   service ``T(b) / m`` and utilisation ``rho = lambda T(b) / m``: Pollaczek-Khinchine mean wait
   ``W = rho s / (2 (1 - rho))`` (Gross et al. 2008, the M/G/1 queue) and the exponential tail
   with that mean and ``P(W > 0) = rho``, ``W_q = (W / rho) ln(rho / (1 - q))``.
5. ``TTFT_q = T(b) + t_prefill + W_prefill,q + W_slots,q``: one step of waiting and the prompt's
   own prefill (the no-load figure of :mod:`~gpucluster_lib.inference.latency`) plus the two
   waits at the same quantile (adding quantiles over-estimates the sum's quantile: conservative).

The spread of output lengths enters the slot wait (Allen-Cunneen) and, through the timing model,
the mean context in flight (:func:`~gpucluster_lib.inference.latency.mean_context_in_flight`).
Not modelled: the spread of prompt lengths (one ``L_in``), the per-request TPOT spread beyond the
batch fluctuation, preemption and swapping, prefix caching, and scheduler overheads beyond the
per-step overhead.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from gpucluster_lib.checks import require_non_negative, require_positive
from gpucluster_lib.errors import ScenarioError
from gpucluster_lib.formatting import number_words
from gpucluster_lib.scenario import DEFAULT_MAX_NUM_TOKENS

_LOG_FACT = np.zeros(1)


def _log_factorials(n: int) -> np.ndarray:
    """``log k!`` for k = 0..n (a table grown in powers of two, shared by every call)."""
    global _LOG_FACT
    if len(_LOG_FACT) <= n:
        size = 1 << max(int(n).bit_length(), 10)
        _LOG_FACT = np.concatenate([[0.0], np.cumsum(np.log(np.arange(1, size + 1, dtype=float)))])
    return _LOG_FACT[: n + 1]


def poisson_quantile(mean: float, q: float) -> int:
    """Smallest ``k`` with ``P(N <= k) >= q`` for ``N ~ Poisson(mean)`` (exact sum of the pmf)."""
    if not 0 < q < 1:
        raise ValueError(f"q must be in (0, 1), got {q!r}")
    if mean <= 0:
        return 0
    hi = int(mean + 12 * math.sqrt(mean) + 30)
    lo = max(int(mean - 12 * math.sqrt(mean) - 30), 0)   # the mass below lo is < 1e-30
    k = np.arange(lo, hi + 1, dtype=float)
    cdf = np.cumsum(np.exp(k * math.log(mean) - mean - _log_factorials(hi)[lo:]))
    return min(lo + int(np.searchsorted(cdf, q)), hi)


def erlang_c(c: int, a: float) -> float:
    """Erlang C: probability that an arrival waits in an M/M/c queue with offered load ``a``
    [Erlangs] on ``c`` servers (1 when ``a >= c``).

    Through Erlang B written with the Poisson law, ``B = P(N = c) / P(N <= c)`` for
    ``N ~ Poisson(a)``, and ``C = c B / (c - a (1 - B))`` (vectorised, no overflow).
    """
    if a <= 0:
        return 0.0
    if a >= c:
        return 1.0
    if c - a > 10.0 * math.sqrt(a) + 40.0:   # Halfin-Whitt: waiting is then below 1e-20
        return 0.0
    k = np.arange(c + 1, dtype=float)
    logp = k * math.log(a) - _log_factorials(c)
    top = logp.max()
    w = np.exp(logp - top)
    b = float(w[-1] / w.sum())
    return c * b / (c - a * (1.0 - b))


def mg1_wait_quantile(rho: float, service_s: float, q: float, cs2: float = 0.0) -> float:
    """Waiting time quantile of an M/G/1 queue [s]: exponential tail with the Pollaczek-Khinchine
    mean ``rho s (1 + c_s^2) / (2 (1 - rho))`` and ``P(W > 0) = rho`` (inf when ``rho >= 1``)."""
    if rho <= 0:
        return 0.0
    if rho >= 1:
        return math.inf
    mean = rho * service_s * (1.0 + cs2) / (2.0 * (1.0 - rho))
    if rho <= 1.0 - q:
        return 0.0
    return mean / rho * math.log(rho / (1.0 - q))


@dataclass(frozen=True)
class ReplicaCurve:
    """The timing model of one replica as the queue sees it (see module doc)."""

    batches: np.ndarray          # mean decode batch grid [sequences], increasing
    tpot_s: np.ndarray           # mixed-step time at each batch [s]
    prefill_s: float             # one prompt's prefill on an idle replica [s]
    input_tokens: int
    output_tokens: int
    max_batch: int               # KV-cache slots (memory-limited batch)
    token_budget: int = DEFAULT_MAX_NUM_TOKENS
    service_cv: float = 0.0      # spread of output lengths (standard deviation / mean) = the slot service spread
    decode_s: np.ndarray | None = None   # decode-only step at each batch [s] (no prompt joins); None: tpot_s

    def step_s(self, batch: float) -> float:
        """Mixed-step time at a (possibly fractional) mean batch [s] (linear interpolation)."""
        return float(np.interp(batch, self.batches, self.tpot_s))

    def rate_at(self, batch: float) -> float:
        """Requests/s completed at mean batch ``batch``: ``b / (L_out T(b))`` (Little)."""
        return batch / (self.output_tokens * self.step_s(batch))

    @property
    def capacity_per_s(self) -> float:
        """Highest stable rate: the memory-limited batch's [requests/s]."""
        return self.rate_at(float(min(self.max_batch, self.batches[-1])))


@dataclass(frozen=True)
class LoadPoint:
    """A replica at one arrival rate (units in the names; quantile = the SLO percentile)."""

    rate_per_s: float
    percentile: float
    stable: bool
    mean_batch: float | None
    tpot_p50_s: float | None
    tpot_pct_s: float | None
    ttft_p50_s: float | None
    ttft_pct_s: float | None
    slot_wait_probability: float | None
    prefill_utilisation: float | None
    output_tokens_per_s: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _mean_batch(rate: float, curve: ReplicaCurve) -> float | None:
    b = curve.batches.astype(float)
    cap = float(min(curve.max_batch, b[-1]))
    rates = b / (curve.output_tokens * curve.tpot_s)
    keep = b <= cap
    if rate >= curve.rate_at(cap):
        return None
    if rate <= rates[0]:
        # below the grid's first batch the step no longer shrinks (one sequence runs alone): the mean
        # number of sequences in flight is Little's law on that step, b = rate L_out T(b_0), a fraction
        # of a slot at low load (the replica idles between requests)
        return float(rate * curve.output_tokens * curve.tpot_s[0])
    # rates increase with b (throughput grows with the batch): invert by interpolation
    return float(np.interp(rate, rates[keep], b[keep]))


def load_point(rate_per_s: float, curve: ReplicaCurve, percentile: float = 99.0) -> LoadPoint:
    """TTFT and TPOT of a replica at ``rate_per_s`` Poisson arrivals [1/s] (module doc)."""
    require_positive(rate_per_s=rate_per_s)
    if not 50 <= percentile < 100:  # as inference.slo_percentile: the median or above
        raise ScenarioError("inference.slo_percentile", f"must be from 50 (the median) up to, not including, 100, "
                            f"got {number_words(percentile)}")
    q = percentile / 100.0
    tokens_per_s = rate_per_s * curve.output_tokens
    b = _mean_batch(rate_per_s, curve)
    if b is None:
        return LoadPoint(rate_per_s, percentile, False, None, None, None, None, None, 1.0, None, tokens_per_s)
    c = int(min(curve.max_batch, curve.batches[-1]))
    if b >= c:   # every KV slot busy on average: the slot queue has no steady state (Erlang C needs b < c)
        return LoadPoint(rate_per_s, percentile, False, None, None, None, None, None, 1.0, None, tokens_per_s)
    step = curve.step_s(b)   # the mean step: throughput and the queues' service times
    tpot50 = curve.step_s(min(poisson_quantile(b, 0.5), c))   # the median, as the percentile (module doc, item 2)
    tpot_q = curve.step_s(min(poisson_quantile(b, q), c))
    # KV-cache slots: M/G/c, Erlang C with the Allen-Cunneen factor (1 + c_s^2) / 2
    service = curve.output_tokens * step
    pw = erlang_c(c, b)
    allen_cunneen = (1.0 + curve.service_cv ** 2) / 2.0

    def slot_wait(quant: float) -> float:
        if pw <= 1.0 - quant:
            return 0.0
        return math.log(pw / (1.0 - quant)) * service * allen_cunneen / (c - b)

    # prefill: M/D/1 on prompt slots within the token budget
    free = max(curve.token_budget - b, 1.0)
    per_step = free / curve.input_tokens
    s_prompt = step / per_step
    rho = rate_per_s * s_prompt
    if rho >= 1.0:
        return LoadPoint(rate_per_s, percentile, False, b, tpot50, tpot_q, None, None, pw, rho, tokens_per_s)
    base = step + curve.prefill_s
    ttft50 = base + mg1_wait_quantile(rho, s_prompt, 0.5) + slot_wait(0.5)
    ttft_q = base + mg1_wait_quantile(rho, s_prompt, q) + slot_wait(q)
    return LoadPoint(rate_per_s, percentile, True, b, tpot50, tpot_q, ttft50, ttft_q, pw, rho, tokens_per_s)


def max_rate(curve: ReplicaCurve, ttft_slo_s: float, tpot_slo_s: float, percentile: float = 99.0,
             iterations: int = 32) -> LoadPoint | None:
    """The highest Poisson rate whose percentile TTFT and TPOT meet the SLOs (bisection; both grow
    with the rate), or None when even a vanishing rate misses them."""
    require_positive(ttft_slo_s=ttft_slo_s, tpot_slo_s=tpot_slo_s)

    def ok(p: LoadPoint) -> bool:
        return p.stable and p.ttft_pct_s <= ttft_slo_s and p.tpot_pct_s <= tpot_slo_s

    hi = curve.capacity_per_s
    lo_rate = hi * 1e-6
    low = load_point(lo_rate, curve, percentile)
    if not ok(low):
        return None
    lo = lo_rate
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        if ok(load_point(mid, curve, percentile)):
            lo = mid
        else:
            hi = mid
    return load_point(lo, curve, percentile)


def _gamma_tail(shape: float, x: np.ndarray) -> np.ndarray:
    """Regularised upper incomplete gamma ``Q(a, x) = Gamma(a, x) / Gamma(a)`` (dimensionless) at ``x >= 0``
    [in units of the scale]: the probability that a gamma variable of shape ``a`` and scale 1 exceeds ``x``.

    Source: Press, Teukolsky, Vetterling and Flannery 2007, *Numerical Recipes*, 3rd ed., section 6.2: the
    series ``P(a, x) = e^-x x^a / Gamma(a) sum_n x^n / (a (a+1) ... (a+n))`` for ``x < a + 1`` (Abramowitz
    and Stegun 1964, 6.5.29) and the continued fraction for ``Q`` above it (A&S 6.5.31, modified Lentz),
    vectorised; relative error at most 2.3e-13 against mpmath at shapes 0.01 to 100 (x from 1e-6 to 700); each
    loop stops after 100,000 terms, which the series needs only beyond a shape of about 3 x 10^8 (6 sqrt(a) terms)."""
    x = np.asarray(x, dtype=float)
    out = np.ones_like(x)
    lg = math.lgamma(shape)
    tiny = 1e-300
    low = (x > 0) & (x < shape + 1.0)
    if low.any():
        xs = x[low]
        term = np.full_like(xs, 1.0 / shape)
        total = term.copy()
        ap = shape
        for _ in range(100_000):
            ap += 1.0
            term = term * xs / ap
            total += term
            if np.all(term < total * 1e-16):
                break
        out[low] = 1.0 - total * np.exp(shape * np.log(xs) - xs - lg)
    high = x >= shape + 1.0
    if high.any():
        xc = x[high]
        b = xc + 1.0 - shape
        c = np.full_like(xc, 1.0 / tiny)
        d = 1.0 / b
        h = d.copy()
        for i in range(1, 100_000):
            an = -i * (i - shape)
            b = b + 2.0
            d = an * d + b
            d = np.where(np.abs(d) < tiny, tiny, d)
            c = b + an / c
            c = np.where(np.abs(c) < tiny, tiny, c)
            d = 1.0 / d
            delta = d * c
            h = h * delta
            if np.all(np.abs(delta - 1.0) < 1e-15):
                break
        out[high] = np.exp(shape * np.log(xc) - xc - lg) * h
    return np.clip(out, 0.0, 1.0)


def gamma_length_pmf(mean_tokens: float, cv: float, max_tokens: int) -> tuple[np.ndarray, np.ndarray]:
    """Output lengths 1..``max_tokens`` [tokens] and their probabilities: a gamma density of mean
    ``mean_tokens`` [tokens] and spread ``cv`` (standard deviation over the mean; shape ``1 / cv^2``, scale
    ``mean cv^2``) integrated over each length's bin, ``(k - 1/2, k + 1/2]`` (rounding to the nearest
    length), through the gamma distribution function (:func:`_gamma_tail`). The mass below 1.5 tokens
    goes to 1 (a request generates at least one token) and the mass above ``max_tokens - 1/2`` to
    ``max_tokens`` (an engine's cap on the output length), so the probabilities sum to 1 and the mean is
    the gamma's up to that cap and the rounding (below 1% from 20 mean lengths on for cv <= 1).
    ``cv = 0``, or a spread under half a token (``mean cv < 0.5``, where the bins would need the incomplete gamma
    at a shape beyond its series' reach), puts every request at the mean (rounded). The cost grows with
    ``max_tokens`` and with the shape, so only the MLPerf comparison calls it (``serve(drain_latency=True)``).
    The gamma is an assumption: the published MLPerf
    logs give the spread (``cv``, docs/inference.md), not the shape of the distribution."""
    require_positive(mean_tokens=mean_tokens, max_tokens=max_tokens)
    require_non_negative(cv=cv)
    x = np.arange(1, int(max_tokens) + 1, dtype=float)
    if cv <= 0 or mean_tokens * cv < 0.5:   # no spread, or under half a token: every length rounds to the mean
        p = (x == min(max(round(mean_tokens), 1), int(max_tokens))).astype(float)
        return x, p
    shape = 1.0 / cv ** 2
    theta = mean_tokens * cv ** 2
    edges = np.concatenate([[0.0], x[:-1] + 0.5])           # the lower edge of each length's bin
    tail = _gamma_tail(shape, edges / theta)                # P(L > edge)
    p = tail - np.concatenate([tail[1:], [0.0]])            # the last bin keeps the tail above it
    p = np.clip(p, 0.0, None)
    return x, p / p.sum()


def _truncated_mean_share(mean_tokens: float, cv: float, max_tokens: int) -> float:
    """``E[min(L, N)] / E[L]`` for the gamma of :func:`gamma_length_pmf` cut at ``N = max_tokens``
    (dimensionless): ``P(a + 1, N / theta) + (N / mean) Q(a, N / theta)``, from ``x f_a(x) = a theta f_{a+1}(x)``
    (the gamma density's own identity; Johnson, Kotz and Balakrishnan 1994, *Continuous Univariate
    Distributions* 1, ch. 17)."""
    if cv <= 0:
        return min(max_tokens / mean_tokens, 1.0)
    shape, theta = 1.0 / cv ** 2, mean_tokens * cv ** 2
    z = np.array([max_tokens / theta])
    return float(1.0 - _gamma_tail(shape + 1.0, z)[0] + max_tokens / mean_tokens * _gamma_tail(shape, z)[0])


#: Longest length grid :func:`last_request_latency` extends to for a wide spread of output lengths [tokens]
#: (2^22: 32 MiB an array); 20 mean lengths is the shortest.
MAX_LENGTH_GRID = 1 << 22


def length_grid(mean_tokens: float, cv: float) -> int:
    """The longest output length [tokens] :func:`last_request_latency` sums over: 20 mean lengths, doubled
    until the lengths beyond it carry under 0.1% of the mean (at cv 5 about 160 mean lengths: most of a wide
    gamma's mean lies in its rare long requests), at most :data:`MAX_LENGTH_GRID` unless 20 mean lengths
    are more."""
    n = int(20 * mean_tokens)
    while n < MAX_LENGTH_GRID and _truncated_mean_share(mean_tokens, cv, n) < 0.999:
        n = min(2 * n, MAX_LENGTH_GRID)
    return max(n, 1)


def last_request_latency(curve: ReplicaCurve, mean_batch: float, ttft_s: float) -> float:
    """Expected latency of a request that arrives as the arrivals stop [s], the replica at ``mean_batch``.

    Why: MLPerf LoadGen's Server throughput divides every token by the time the *last scheduled*
    query completes, ``tps_as_completed = token_count / final_query_all_samples_done_time``
    (mlcommons/inference ``loadgen/results.cc``, ``LogSummary``, at the rounds' tags v4.0 l.573-574 and v4.1
    l.584-585), with ``final_query_all_samples_done_time = final_query.all_samples_done_time - start``
    (``loadgen/loadgen.cc`` l.582-583 at both tags), so the published
    "Completed tokens per second" is the sustained rate times ``D / (D + this latency)``, ``D`` the
    scheduled duration (:func:`gpucluster_lib.inference.validation.loadgen_completed_factor`).

    How: no request arrives after it, so the batch it runs in drains. The sequences in flight at that
    moment have the equilibrium residual life of the output lengths (Cox 1962, *Renewal Theory*,
    the forward recurrence time): ``R(j) = E[(L - j)^+] / E[L]`` of them are still in flight ``j``
    steps later. The request's own step ``j`` runs (``P(L > j)``) at ``T(b R(j) + 1)``, so the
    latency is ``ttft_s + sum_{j >= 1} P(L > j) T(b R(j) + 1)``, ``T`` the decode-only step (``curve.decode_s``:
    no prompt joins a draining replica; the mixed step when the curve has none), ``L`` the gamma of
    :func:`gamma_length_pmf` with the curve's mean and spread, up to :func:`length_grid` tokens. With a step
    that does not depend on the batch, ``T``, it is ``ttft_s + T (E[L] - 1)``: the latency of a
    mean request.
    """
    require_positive(mean_batch=mean_batch)
    require_non_negative(ttft_s=ttft_s)
    mean = float(curve.output_tokens)
    x, p = gamma_length_pmf(mean, curve.service_cv, length_grid(mean, curve.service_cv))
    el = float((x * p).sum())
    # survival S(j) = P(L > j) and the integrated survival E[(L - j)^+] = sum_{i >= j} S(i), j = 0..n-1
    surv = 1.0 - np.concatenate([[0.0], np.cumsum(p)[:-1]])     # P(L > j) for j = 0..n-1 (P(L > 0) = 1)
    excess = np.cumsum(surv[::-1])[::-1]                         # E[(L - j)^+] for j = 0..n-1
    j = np.arange(1, len(x))
    residual = excess[j] / el
    step = curve.tpot_s if curve.decode_s is None else curve.decode_s
    steps = np.interp(mean_batch * residual + 1.0, curve.batches, step)
    return float(ttft_s + (surv[j] * steps).sum())


def percentile_label(percentile: float) -> str:
    """A percentile as people write it: "p99", "p99.9", "p50" (at most four decimals); one that those
    decimals would round to 0 or 100 keeps the digits it needs ("p99.99999999999999"), and one below
    0.0001 is written as a power of ten ("p10^-9")."""
    p = float(percentile)
    for digits in range(5):
        text = f"{p:.{digits}f}"
        if abs(float(text) - p) <= 1e-9 * max(p, 1e-12) and 0.0 < float(text) < 100.0:
            return f"p{text}"
    if p < 1e-4:
        return "p" + number_words(p)
    return "p" + np.format_float_positional(p, trim="-")


__all__ = ["LoadPoint", "ReplicaCurve", "erlang_c", "gamma_length_pmf", "last_request_latency", "length_grid",
           "load_point", "max_rate", "mg1_wait_quantile", "percentile_label", "poisson_quantile"]
