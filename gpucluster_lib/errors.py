"""Exceptions for malformed input.

Design problems (a model that does not fit, an overloaded PSU) are *findings*
(:mod:`gpucluster_lib.findings`), not exceptions. Exceptions are for input that
cannot be interpreted at all; their message names the field and the fix.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

#: Longest excerpt of a user's value that a message quotes [characters].
EXCERPT_CHARS = 48


def excerpt(value: object, limit: int = EXCERPT_CHARS) -> str:
    """A short, quoted excerpt of ``value`` for a message: never more than ``limit`` characters.

    ``excerpt("x" * 10**7)`` is ``'xxxx…' (10,000,000 characters)``: a hostile value (a 10 MB
    string, an expanded YAML alias bomb) cannot make a message long. The repr of a container
    is never built whole: lists and mappings are summarised by their length.
    """
    if isinstance(value, (list, tuple, dict, set)):
        kind = "a mapping" if isinstance(value, dict) else "a list"
        return f"{kind} of {len(value):,} item{'s' if len(value) != 1 else ''}"
    if isinstance(value, str):
        if len(value) <= limit:
            return repr(value)
        head = repr(value[:limit])
        return f"{head[:-1]}…{head[-1]} ({len(value):,} characters)"
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 3.33 * limit:
        # str() of a huge int is slow (and refused beyond 4,300 digits): count digits from the bits
        return f"an integer of about {int(value.bit_length() * 0.30103) + 1:,} digits"
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "…"


def shown(value: object) -> str:
    """A value from a YAML file as a message shows it: ``nothing`` for null, ``true``/``false``, numbers as
    written, text quoted (and said to be text), lists and mappings by their length (:func:`excerpt`)."""
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.1f}" if value.is_integer() and abs(value) < 1e15 else f"{value:g}"
    if isinstance(value, int):
        return excerpt(value) if value.bit_length() > 3.33 * EXCERPT_CHARS else str(value)
    if isinstance(value, str):
        return f"the text {excerpt(value)}"
    return excerpt(value)


def one_of(choices: Iterable[object]) -> str:
    """Choices as a message lists them: ``one_of(["fp32", "bf16", "fp16"])`` is
    ``fp32, bf16 or fp16`` (no quotes, brackets or Python reprs)."""
    words = [str(c) for c in choices]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def all_of(items: Iterable[object]) -> str:
    """Items as a sentence lists them: ``all_of(["BF16", "FP16", "FP8"])`` is ``BF16, FP16 and FP8`` (the
    ``and`` counterpart of :func:`one_of`)."""
    words = [str(c) for c in items]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def yaml_value(value: object) -> str:
    """A scenario value as its YAML file spells it, for a message: ``true``/``false``, ``null``,
    numbers as they are, strings and containers as :func:`excerpt` quotes or summarises them."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    return excerpt(value)


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
        close = closest(wanted, valid) if isinstance(wanted, str) else []
        hint = f"did you mean {', '.join(repr(c) for c in close)}?" if close else (
            f"valid ids: {', '.join(valid[:12])}{' ...' if len(valid) > 12 else ''}"
        )
        prefix = f"{path}: " if path else ""
        self.message = f"{prefix}unknown {kind} {excerpt(wanted)}; {hint}"
        super().__init__(self.message)

    def __str__(self) -> str:  # KeyError would otherwise repr() the message
        return self.message


def closest(wanted: str, valid: Iterable[str], n: int = 3) -> list[str]:
    """The ``n`` ids in ``valid`` closest to ``wanted`` (difflib ratio >= 0.5).

    Only short words are compared: difflib is quadratic, and nothing longer than
    :data:`CLOSEST_MAX_CHARS` is close to a catalogue id.
    """
    wanted = str(wanted)
    if len(wanted) > CLOSEST_MAX_CHARS:
        return []
    valid = sorted(valid)
    # a family name (h100, llama3) names the ids that begin with it, which difflib's ratio misses
    # for long ids ('h100' -> 'a10', not 'h100-sxm5-80gb')
    start = [v for v in valid if len(wanted) >= 3 and v.lower().startswith(wanted.lower()) and v != wanted]
    near = difflib.get_close_matches(wanted, valid, n=n, cutoff=0.5)
    return (start + [v for v in near if v not in start])[:n]


#: Words longer than this are never compared with the valid ids [characters].
CLOSEST_MAX_CHARS = 100
