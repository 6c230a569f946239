"""Constraints and objectives over result columns: a tiny grammar, parsed without ``eval``.

A constraint is ``KEY OP NUMBER`` with OP one of ``<=``, ``<``, ``>=``, ``>``, ``==``, ``!=``
(``facility.racks <= 40``, ``training.training_days <= 30``); an objective is a key and
``min`` or ``max``. Keys are result columns (:mod:`gpucluster_lib.explore.outputs`) or the
sweep's axes.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpucluster_lib.errors import ScenarioError
from gpucluster_lib.explore.outputs import unknown_key

_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "<=": operator.le, "<": operator.lt, ">=": operator.ge, ">": operator.gt, "==": operator.eq, "!=": operator.ne,
}
_WORDS = {"<=": "at most", "<": "below", ">=": "at least", ">": "above", "==": "equal to", "!=": "other than"}
_RE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_.]*)\s*(<=|>=|==|!=|<|>)\s*([-+]?(?:\d[\d_]*\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*$")


@dataclass(frozen=True)
class Constraint:
    """``key op limit``, e.g. ``facility.racks <= 40``."""

    key: str
    op: str
    limit: float

    @property
    def text(self) -> str:
        lim = int(self.limit) if float(self.limit).is_integer() else self.limit
        return f"{self.key} {self.op} {lim}"

    def describe(self, label: str = "") -> str:
        """Human words: 'Racks at most 40'."""
        lim = int(self.limit) if float(self.limit).is_integer() else self.limit
        return f"{label or self.key} {_WORDS[self.op]} {lim:,}"

    def holds(self, value: Any) -> bool:
        """Whether ``value`` meets the constraint (an empty value never does)."""
        if value is None or isinstance(value, str) or (isinstance(value, float) and math.isnan(value)):
            return False
        return bool(_OPS[self.op](value, self.limit))

    def mask(self, values: np.ndarray) -> np.ndarray:
        """Vectorised :meth:`holds` over a column (NaN never holds)."""
        v = np.asarray(values, dtype=float)
        with np.errstate(invalid="ignore"):
            return np.asarray(_OPS[self.op](v, self.limit)) & ~np.isnan(v)


def parse_constraint(text: Any, valid: Iterable[str], path: str = "constraints") -> Constraint:
    """Parse ``"KEY OP NUMBER"``; errors name the entry, the unknown key and the closest keys."""
    if not isinstance(text, str):
        raise ScenarioError(path, f"a constraint is text like 'facility.racks <= 40', got {text!r}")
    m = _RE.match(text)
    if not m:
        raise ScenarioError(path, f"cannot read {text!r}: write KEY OP NUMBER, e.g. 'facility.racks <= 40' "
                                  f"(OP one of {', '.join(_OPS)})")
    key, op, num = m.groups()
    valid = list(valid)
    if key not in valid:
        raise unknown_key(key, valid, "result", path)
    return Constraint(key, op, float(num.replace("_", "")))


def parse_constraints(items: Any, valid: Iterable[str], path: str = "constraints") -> list[Constraint]:
    if items is None:
        return []
    if isinstance(items, str):
        items = [items]
    if not isinstance(items, list):
        raise ScenarioError(path, f"must be a list of constraints like 'facility.racks <= 40', got {items!r}")
    valid = list(valid)
    return [parse_constraint(t, valid, f"{path}[{i}]") for i, t in enumerate(items)]


def parse_objectives(items: Any, valid: Iterable[str], path: str = "objectives") -> dict[str, str]:
    """``{key: "min" | "max"}``; a list of keys means minimise each."""
    if items is None:
        return {}
    if isinstance(items, list):
        items = {k: "min" for k in items}
    if not isinstance(items, Mapping):
        raise ScenarioError(path, f"must map result keys to min or max, e.g. {{cost.capex_usd: min}}, got {items!r}")
    valid = list(valid)
    out: dict[str, str] = {}
    for key, sense in items.items():
        if key not in valid:
            raise unknown_key(str(key), valid, "result", f"{path}.{key}")
        if sense not in ("min", "max"):
            raise ScenarioError(f"{path}.{key}", f"must be min or max, got {sense!r}")
        out[str(key)] = sense
    if len(out) > 3:
        raise ScenarioError(path, f"at most three objectives for a Pareto front, got {len(out)}")
    return out
