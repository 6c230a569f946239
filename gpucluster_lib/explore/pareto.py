"""Pareto fronts: the designs no other design beats on every objective at once.

A design *dominates* another when it is at least as good on every objective and strictly
better on one (Deb 2001, *Multi-Objective Optimization using Evolutionary Algorithms*,
Definition 2.5). The front is the set of non-dominated designs. With the rows sorted
lexicographically (each objective turned into one to minimise), a row can only be dominated
by a row before it, so one pass that checks each row against the front found so far gives
the front (the "simple cull" of Kung, Luccio and Preparata 1975, J. ACM 22(4)): O(n x front).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from gpucluster_lib.errors import ScenarioError


def pareto_mask(values: Any, senses: Any) -> np.ndarray:
    """Which rows of ``values`` (n x k, k = 1..3 objectives) are non-dominated.

    ``senses`` gives ``"min"`` or ``"max"`` per column. Rows with a NaN are never on the front;
    identical rows are all on it when one is.
    """
    v = np.asarray(values, dtype=float)
    if v.ndim != 2:
        raise ScenarioError("objectives", "need a table of objective values (rows x objectives)")
    senses = list(senses)
    if len(senses) != v.shape[1] or not 1 <= v.shape[1] <= 3:
        raise ScenarioError("objectives", f"a front is over one to three objectives, got {v.shape[1]}")
    for s in senses:
        if s not in ("min", "max"):
            raise ScenarioError("objectives", f"each objective is min or max, got {s!r}")
    sign = np.array([1.0 if s == "min" else -1.0 for s in senses])
    x = v * sign
    keep = np.zeros(len(x), dtype=bool)
    finite = ~np.isnan(x).any(axis=1)
    idx = np.flatnonzero(finite)
    if not len(idx):
        return keep
    order = idx[np.lexsort(x[idx].T[::-1])]
    front = np.empty((0, x.shape[1]))
    for i in order:
        p = x[i]
        if len(front) and np.any(np.all(front <= p, axis=1) & np.any(front < p, axis=1)):
            continue
        keep[i] = True
        front = np.vstack([front, p])
    return keep


def pareto_rows(table: Any, objectives: Mapping[str, str]) -> Any:
    """The non-dominated rows of ``table`` over ``objectives`` ({column: "min"|"max"}), sorted by
    the first objective; without objectives, the whole table."""
    if not objectives or not len(table):
        return table
    for k in objectives:
        if k not in table.columns:
            from gpucluster_lib.explore.outputs import unknown_key

            raise unknown_key(k, list(table.columns), "result", f"objectives.{k}")
    cols = list(objectives)
    mask = pareto_mask(table[cols].astype(float).to_numpy(), [objectives[c] for c in cols])
    front = table[mask]
    return front.sort_values(cols, ascending=[objectives[c] == "min" for c in cols], kind="stable")
