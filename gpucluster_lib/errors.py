"""Exceptions for malformed input.

Design problems (a model that does not fit, an overloaded PSU) are *findings*
(:mod:`gpucluster_lib.findings`), not exceptions. Exceptions are for input that
cannot be interpreted at all; their message names the field and the fix.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class GpuClusterError(Exception):
    """Base class of every error this library raises on purpose."""


class CatalogError(GpuClusterError, ValueError):
    """A catalogue CSV breaks a rule: names file, row, column and the rule."""

    def __init__(self, file: str, row: int | None, column: str | None, rule: str):
        self.file, self.row, self.column, self.rule = file, row, column, rule
        where = file
        if row is not None:
            where += f", row {row}"
        if column:
            where += f", column '{column}'"
        super().__init__(f"{where}: {rule}")


class ScenarioError(GpuClusterError, ValueError):
    """A scenario field is missing, of the wrong type or out of range."""

    def __init__(self, path: str, message: str):
        self.path = path
        self.detail = message
        super().__init__(f"{path}: {message}" if path else message)


class UnknownIdError(GpuClusterError, KeyError):
    """An id that is not in the catalogue (or preset list); lists the closest ones."""

    def __init__(self, kind: str, wanted: str, valid: Iterable[str], path: str = ""):
        valid = sorted(valid)
        self.kind, self.wanted, self.valid, self.path = kind, wanted, valid, path
        close = difflib.get_close_matches(str(wanted), valid, n=3, cutoff=0.5)
        hint = f"did you mean {', '.join(repr(c) for c in close)}?" if close else (
            f"valid ids: {', '.join(valid[:12])}{' ...' if len(valid) > 12 else ''}"
        )
        prefix = f"{path}: " if path else ""
        self.message = f"{prefix}unknown {kind} {wanted!r}; {hint}"
        super().__init__(self.message)

    def __str__(self) -> str:  # KeyError would otherwise repr() the message
        return self.message


def closest(wanted: str, valid: Iterable[str], n: int = 3) -> list[str]:
    """The ``n`` ids in ``valid`` closest to ``wanted`` (difflib ratio >= 0.5)."""
    return difflib.get_close_matches(str(wanted), sorted(valid), n=n, cutoff=0.5)
