"""Argument checks of the pure calculation functions: one style, one message.

Pure functions (numbers in, numbers out) raise :class:`ValueError` naming the argument, its
rule and the value: ``"mtbf_s must be a positive finite number, got -1"``. Scenario input is
checked earlier, when the scenario loads (:mod:`gpucluster_lib.scenario`), and names the
scenario field instead.
"""

from __future__ import annotations

import math
from typing import Any


def _finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def require_positive(**values: Any) -> None:
    """Each value must be a finite number > 0."""
    for name, v in values.items():
        if not (_finite(v) and v > 0):
            raise ValueError(f"{name} must be a positive finite number, got {v!r}")


def require_non_negative(**values: Any) -> None:
    """Each value must be a finite number >= 0."""
    for name, v in values.items():
        if not (_finite(v) and v >= 0):
            raise ValueError(f"{name} must be a non-negative finite number, got {v!r}")
