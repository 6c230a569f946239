"""The plan search without evaluating every plan: the same ranked table, a fraction of the work.

A search ranks every valid plan by time to train, fitting plans first, and keeps the best
``limit`` (:func:`gpucluster_lib.training.estimate.search_plans`). Evaluating all of them
(139,299 plans for Llama 3 70B on a GB200 NVL72 scalable unit) costs about 0.1 s on one core;
this module gets the identical table, the identical fitting count and the identical best plan
from about ``1.25 limit`` evaluations:

1. **Factorised memory.** A plan is a base row (TP, PP with its stage layout and interleaving,
   DP, CP, EP, micro-batch, global batch) and a switch row (recomputation, ZeRO stage,
   distributed optimizer, sequence parallelism, TP overlap): :class:`~.plans.PlanSpace`.
   Memory depends on the switches only through (ZeRO, distributed optimizer) and
   (recomputation, sequence parallelism), so the engine's own memory formulas
   (:func:`~.core.memory_stages`) run with these two pairs and the base rows on three
   broadcast axes: each term is computed once per combination of the dimensions it depends on.
   A plan fits when every stage that can need the most does (its memory is the largest of
   them, :func:`~.core.plan_memory`). A stage's total is its model states and activations with
   the CUDA context, buffers and fragmentation on top (:meth:`~.core.MemoryCommon.on_top`),
   which does not decrease as they grow, so it fits exactly when they are at most the largest
   amount that fits, found once by bisection over the floats. Only additions, multiplications
   and divisions are involved: every plan's fit is the one the full evaluation gives.
2. **A bound on the step time.** The step is the pipeline time plus the exposed data-parallel
   communication plus the optimizer, plus a fixed overhead fraction
   (:func:`~.core.step_time`, non-decreasing in each term). The data-parallel and optimizer
   terms are never negative, so the step is at least the step without them, which depends only
   on the base row and (recomputation, sequence parallelism, TP overlap): a bound on tokens/s
   for every plan at the cost of a few array operations per base row.
3. **Exact evaluation of the plans that can reach the table.** Plans are evaluated
   (:func:`~.core.evaluate`) in batches, from the best bound down; the ``k``-th best tokens/s
   among those evaluated is a floor that the ``k``-th best plan overall reaches, so a plan whose
   bound is below it cannot be in the table. The loop ends when no unevaluated bound reaches
   the floor; the plans whose bound does are ranked exactly as the full search ranks them
   (fitting first, then by tokens/s, highest first, then by memory, least first; ties by enumeration order).

The evaluated plans are checked against both premises (their fit equals the factorised fit,
their step time is not below the bound); if either fails, :func:`candidates` returns None and
the caller evaluates every plan. The memory fits of the last searches are kept, keyed by the
context without its link bandwidths: a change of the fabric alone keeps every plan's memory.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from gpucluster_lib.training.core import (
    Context,
    concat_results,
    evaluate,
    layer_memory,
    layer_terms,
    memory_stages,
    pipeline_schedule,
    plan_arrays,
    step_time,
)
from gpucluster_lib.training.plans import PlanSpace

#: Relative slack on the step-time bound: covers rounding of the terms taken as zero (a
#: DeepSpeed prefetch pass sums four shares of a layer's compute) [fraction].
BOUND_SLACK = 1e-9


def _rows(values: dict[str, np.ndarray], keys: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Distinct rows of the integer columns ``keys`` and, for every row, the index of its distinct row."""
    cols = [np.asarray(values[k], dtype=np.int64) for k in keys]
    key = np.zeros(len(cols[0]), dtype=np.int64)
    for c in cols:  # one mixed-radix integer per row (the columns are small non-negative counts)
        key = key * (int(c.max(initial=0)) + 1) + c
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    return np.stack([c[first] for c in cols], axis=1), inverse.reshape(-1)


def _largest_fitting(total_of, cap: float) -> float:
    """The largest float ``x >= 0`` with ``total_of(x) <= cap``, for a non-decreasing ``total_of``
    (``-1`` when not even 0 fits): a bisection over the bit patterns of the non-negative floats,
    which are ordered as the floats are."""
    lo, hi = np.float64(0.0).view(np.int64), np.float64(np.inf).view(np.int64)
    if not total_of(np.float64(0.0)) <= cap:
        return -1.0
    while hi - lo > 1:  # total_of(lo) <= cap < total_of(hi)
        mid = lo + (hi - lo) // 2
        if total_of(np.int64(mid).view(np.float64)) <= cap:
            lo = mid
        else:
            hi = mid
    return float(np.int64(lo).view(np.float64))


def _memory_fits(ctx: Context, b, lk, lk_of, tp_k, cp_k, mb_k, zd, zd_of, rs, rs_of, f_act) -> np.ndarray:
    """Whether each (switch row, base row) pair fits in memory: the engine's memory formulas on
    the axes (zero, dopt), (rc, sp), base row."""
    nb = len(b["tp"])
    s = float(ctx.arch.seq_length)
    sp_r = rs[:, 1:2].astype(bool) & (tp_k > 1)
    per_layer, rebuilt = (np.broadcast_to(np.asarray(x, dtype=float), (len(rs), len(lk)))[:, lk_of]
                          for x in layer_memory(ctx, mb_k, s / cp_k, tp_k, sp_r, rs[:, 0:1], f_act))

    # memory on three axes: (zero, dopt), (rc, sp), base row
    q3 = {k: v.reshape(1, 1, nb) for k, v in b.items()}
    q3["zero"] = zd[:, 0].reshape(-1, 1, 1)
    q3["dopt"] = zd[:, 1].astype(bool).reshape(-1, 1, 1)
    q3["sp"] = rs[:, 1].astype(bool).reshape(1, -1, 1) & (q3["tp"] > 1)  # the deferred output-layer inputs' shard
    # the plan's memory is the largest stage total (plan_memory): it fits when every stage does. A
    # stage's total is its model states and activations plus what comes on top of them, which does
    # not decrease as they grow: it fits when they are at most the largest amount that fits.
    common, stages = memory_stages(ctx, q3, per_layer[None], rebuilt[None])
    ceiling = _largest_fitting(lambda x: common.on_top(x)[1], ctx.memory_capacity)
    pp = q3["pp"]
    fit_stage = []
    for args in stages:
        held = common.held(*args)
        fit_stage.append(held["model"] + held["activations"] <= ceiling)
    fits3 = fit_stage[0] & (fit_stage[1] | (pp <= 2)) & (fit_stage[2] | (pp <= 1))

    fits = fits3[zd_of, rs_of]
    fits.flags.writeable = False  # kept for the next search of the same plans and memory
    return fits


#: Fits of recent searches, keyed by what the memory reads: the context without its link
#: bandwidths and the plan space. A change of the fabric (oversubscription, NIC, switch) keeps them
#: (one byte per plan each).
FITS_CACHE_SIZE = 4
_FITS: dict[tuple, dict[str, Any]] = {}


def per_bound(cells: np.ndarray, perm: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """How many pairs of the mask ``cells`` (switch rows, base rows) share each bound (time switch
    row, base row), flattened [plans]."""
    return np.add.reduceat(cells[perm].astype(np.int32), starts, axis=0).reshape(-1)


def bounds(ctx: Context, space: PlanSpace, key: tuple | None = None) -> dict[str, np.ndarray]:
    """Whether each (switch row, base row) pair fits in memory (``fits``: shape ``(switch rows, base
    rows)``, the transpose of ``space.allowed``: the base rows are the long axis, kept innermost so
    that every array operation runs along it), and a lower bound on the step time [s] and the
    upper bound it gives on tokens/s (``step_lower``, ``tps_upper``: shape ``(time switch rows,
    base rows)``; ``tk_of``: the time switch row of each switch row, the recomputation, SP and TP
    overlap it reads; ``allowed``, ``fit_cells``: the valid pairs and those that fit, in the shape
    of ``fits``; ``fitting``: their count; ``fit_count``: per bound, how many fitting pairs share it).

    ``key``: what made the plan space (the fixed fields and the TP limit), to reuse the memory
    fits of a search that differs only in link bandwidths; None: no reuse."""
    b = plan_arrays(space.base)  # the engine's dtypes: floats
    w = space.switches
    nb = len(b["tp"])
    s = float(ctx.arch.seq_length)

    # switch rows by what the terms read: (rc, sp, tpo) for time, (zero, dopt) and (rc, sp) for memory
    tk, tk_of = _rows(w, ("rc", "sp", "tpo"))
    zd, zd_of = _rows(w, ("zero", "dopt"))
    rs, rs_of = _rows(w, ("rc", "sp"))

    # the per-layer terms read (tp, cp, ep, mb) of the base row: once per distinct combination
    lk, lk_of = _rows(space.base, ("tp", "cp", "ep", "mb"))
    tp_k, cp_k, ep_k, mb_k = (lk[None, :, i].astype(float) for i in range(4))
    sp_t = tk[:, 1:2].astype(bool) & (tp_k > 1)  # sequence parallelism needs TP > 1
    parts = layer_terms(ctx, tp_k, cp_k, ep_k, mb_k, tk[:, 0:1], sp_t, tk[:, 2:3].astype(float))
    shape = (len(tk), len(lk))
    train, recomp, t_tp, t_cp, t_ep = (np.broadcast_to(np.asarray(x, dtype=float), shape) for x in parts[:5])
    t_layer = (train + recomp + t_tp + t_cp + t_ep)[:, lk_of]  # (time switch rows, base rows)

    # the switch rows sorted by their time switch row, and where each group starts
    perm = np.argsort(tk_of, kind="stable")
    starts = np.flatnonzero(np.r_[True, np.diff(tk_of[perm]) != 0])
    mem_key = None if key is None else (dataclasses.replace(ctx, nvlink_bw=0.0, nic_bw=0.0), key)
    try:
        mem = _FITS.get(mem_key) if mem_key is not None else None
    except TypeError:  # a context with an unhashable field: no reuse
        mem_key, mem = None, None
    if mem is None:
        fits = _memory_fits(ctx, b, lk, lk_of, tp_k, cp_k, mb_k, zd, zd_of, rs, rs_of, parts[5])
        allowed = np.ascontiguousarray(space.allowed.T)  # (switch rows, base rows), as the fits
        fit_cells = fits & allowed
        mem = {"fits": fits, "allowed": allowed, "fit_cells": fit_cells, "fitting": int(np.count_nonzero(fit_cells)),
               "fit_count": per_bound(fit_cells, perm, starts)}
        for v in (allowed, fit_cells, mem["fit_count"]):
            v.flags.writeable = False
        if mem_key is not None:
            _FITS[mem_key] = mem
            while len(_FITS) > FITS_CACHE_SIZE:
                del _FITS[next(iter(_FITS))]

    # the step with no data-parallel and no optimizer time: (rc, sp, tpo) x base row
    q2 = {k: v.reshape(1, nb) for k, v in b.items()}
    m = q2["gbs"] / (q2["dp"] * q2["mb"])
    M = q2["mb"] * (s / q2["cp"])
    t_pipe = pipeline_schedule(ctx, q2, M, m, t_layer, bottleneck=False)["t_pipe"]
    lower = step_time(ctx, t_pipe, 0.0, 0.0)[0] * (1.0 - BOUND_SLACK)
    tokens = space.base["gbs"][None, :] * ctx.arch.seq_length  # per step, as the table ranks them
    return {**mem, "tk_of": tk_of, "perm": perm, "starts": starts, "step_lower": lower,
            "tps_upper": tokens / lower}  # tokens/s no plan of the (time switch row, base row) exceeds


def candidates(ctx: Context, space: PlanSpace, limit: int,
               key: tuple | None = None) -> tuple[dict[str, np.ndarray], dict[str, Any], int] | None:
    """The plans that can be among the best ``limit`` of ``space``, evaluated, in enumeration
    order, with the count of every plan that fits: ``(plans, evaluation, fitting)``; None when
    an evaluated plan contradicts the factorised fit or the bound (then evaluate every plan).
    ``key``: as :func:`bounds`."""
    bd = bounds(ctx, space, key)
    if not np.isfinite(bd["step_lower"]).any():  # no bound to prune with (a zero efficiency)
        return None
    allowed, fit_cells, fitting = bd["allowed"], bd["fit_cells"], bd["fitting"]
    ns, nb = allowed.shape
    # the switch rows of each time switch row (padded with -1): the plans that share one bound
    tk_of, perm, starts = bd["tk_of"], bd["perm"], bd["starts"]
    sizes = np.diff(np.r_[starts, ns])
    rows_of = np.full((len(starts), int(sizes.max())), -1)
    for t, (a, n) in enumerate(zip(starts.tolist(), sizes.tolist(), strict=True)):
        rows_of[t, :n] = perm[a:a + n]
    upper = bd["tps_upper"].reshape(-1)
    done = _Evaluated(ctx, space)

    def cells_of(keys: np.ndarray, cells: np.ndarray) -> np.ndarray:
        """Flat indices of the pairs in the mask ``cells`` that share the bounds ``keys``."""
        t, b = np.divmod(keys, nb)
        j = rows_of[t]
        ok = j >= 0
        j = np.where(ok, j, 0)
        ok &= cells[j, b[:, None]]
        return (j * nb + b[:, None])[ok]

    def reachable(cells: np.ndarray, k: int, count: np.ndarray) -> np.ndarray:
        """Flat indices of the pairs (a mask, ``count`` of them per bound) whose plans can be among
        the ``k`` fastest of them: evaluated in batches of bounds from the best down until no
        unevaluated bound reaches the ``k``-th fastest plan evaluated so far."""
        keys = np.flatnonzero(count)
        if count.sum() <= k:
            return cells_of(keys, cells)
        ub, per_key = upper[keys], count[keys]
        seen = np.zeros(len(keys), dtype=bool)
        found: list[np.ndarray] = []
        floor, batch = -np.inf, 1.25 * k
        while True:
            todo = np.flatnonzero(~seen & (ub >= floor))
            if len(todo) == 0:
                break
            if per_key[todo].sum() > batch:  # the best bounds holding about ``batch`` plans
                n = min(len(todo), int(np.ceil(2 * batch / per_key[todo].mean())))
                if n < len(todo):
                    todo = todo[np.argpartition(-ub[todo], n - 1)[:n]]
                todo = todo[np.argsort(-ub[todo], kind="stable")]
                todo = todo[:int(np.searchsorted(np.cumsum(per_key[todo]), batch)) + 1]
            found.append(done.add(cells_of(keys[todo], cells)))
            seen[todo] = True
            tps = np.concatenate(found)
            if len(tps) >= k:  # the k-th fastest plan overall is at least this fast
                floor = np.partition(tps, len(tps) - k)[len(tps) - k]
            batch *= 2
        return cells_of(keys[seen & (ub >= floor)], cells)

    if fitting >= limit:
        chosen = reachable(fit_cells, limit, bd["fit_count"])
    else:
        rest = allowed & ~bd["fits"]
        chosen = np.union1d(np.flatnonzero(fit_cells), reachable(rest, limit - fitting, per_bound(rest, perm, starts)))
    js, ib = np.divmod(chosen, nb)
    order = np.argsort(ib * ns + js)  # enumeration order: base row, then switch row
    res = done.take(chosen[order])
    cells = np.concatenate(done.cells)  # every plan evaluated checks both premises
    fits_all = np.concatenate([np.asarray(r["fits"], dtype=bool) for r in done.results])
    step_all = np.concatenate([r["step_time_s"] for r in done.results])
    j_all, b_all = np.divmod(cells, nb)
    ok = np.array_equal(fits_all, bd["fits"].reshape(-1)[cells]) \
        and bool(np.all(step_all >= bd["step_lower"][tk_of[j_all], b_all]))
    return (space.plans(ib[order], js[order]), res, fitting) if ok else None


class _Evaluated:
    """Plans evaluated so far (:func:`~.core.evaluate`), by flat cell index."""

    def __init__(self, ctx: Context, space: PlanSpace) -> None:
        self.ctx, self.space = ctx, space
        self.cells: list[np.ndarray] = []
        self.results: list[dict[str, Any]] = []

    def add(self, cells: np.ndarray) -> np.ndarray:
        """Evaluate the plans of ``cells`` (flat indices of (switch row, base row) pairs); their
        tokens/s, as the ranked table computes them."""
        js, ib = np.unravel_index(cells, self.space.allowed.shape[::-1])
        plans = self.space.plans(ib, js)
        res = evaluate(self.ctx, plans)
        self.cells.append(cells)
        self.results.append(res)
        return plans["gbs"] * self.ctx.arch.seq_length / res["step_time_s"]

    def take(self, cells: np.ndarray) -> dict[str, Any]:
        """The evaluation of ``cells`` (evaluating those not yet seen), in their order."""
        have = np.concatenate(self.cells) if self.cells else np.zeros(0, dtype=np.int64)
        new = np.setdiff1d(cells, have)
        if len(new) or not self.results:  # nothing evaluated yet: an evaluation of ``cells`` (maybe none)
            self.add(new)
            have = np.concatenate(self.cells)
        order = np.argsort(have, kind="stable")
        pos = order[np.searchsorted(have[order], cells)]
        return _take(concat_results(self.results), pos)


def _take(res: Any, pos: np.ndarray) -> Any:
    if isinstance(res, dict):
        return {k: _take(v, pos) for k, v in res.items()}
    return np.asarray(res)[pos]
