"""Argument checks of the pure calculation functions: one style, one message.

Pure functions (numbers in, numbers out) raise :class:`ValueError` naming the argument, its
rule and the value: ``"mtbf_s must be a positive finite number, got -1"``. Scenario input is
checked earlier, when the scenario loads (:mod:`gpucluster_lib.scenario`), and names the
scenario field instead.
"""

from __future__ import annotations

import math
import re
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


_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")

#: Byte-order marks of the encodings a text file may carry; only UTF-8's is accepted.
_BOMS = ((b"\xef\xbb\xbf", "UTF-8"), (b"\x00\x00\xfe\xff", "UTF-32"), (b"\xff\xfe\x00\x00", "UTF-32"),
         (b"\xfe\xff", "UTF-16"), (b"\xff\xfe", "UTF-16"))


def decode_text(data: bytes | str, *, limit_bytes: int) -> str:
    """UTF-8 text of an uploaded or read file, or :class:`ValueError` saying why it is not text.

    Accepted: UTF-8, with or without the byte-order mark Excel and Notepad write (it is
    dropped). Refused, with the fix in the message: more than ``limit_bytes`` bytes, a
    UTF-16 or UTF-32 byte-order mark, bytes that are not UTF-8 (latin-1, Windows-1252),
    and control characters other than tab, newline and carriage return (a binary file).
    The message never quotes the content, only a position. Text (``str``) given instead of
    bytes gets the same size and control-character checks.
    """
    if isinstance(data, str):
        if len(data) > limit_bytes:
            raise ValueError(f"is {len(data):,} characters, more than the {limit_bytes:,} allowed")
        return _check_controls(data.removeprefix("\ufeff"))
    if len(data) > limit_bytes:
        raise ValueError(f"is {len(data):,} bytes, more than the {limit_bytes:,} allowed")
    for bom, name in _BOMS:
        if data.startswith(bom):
            if name != "UTF-8":
                raise ValueError(f"is {name} text; save it as UTF-8")
            data = data[len(bom):]
            break
    if b"\x00" in data:
        raise ValueError("holds NUL bytes: a binary file, or UTF-16 text without its byte-order mark; "
                         "save it as UTF-8")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"is not UTF-8 text (byte {e.start:,} cannot be read); save it as UTF-8") from None
    return _check_controls(text)


def _check_controls(text: str) -> str:
    bad = _CONTROL.search(text)
    if bad is not None:
        raise ValueError(f"holds a control character (U+{ord(bad.group()):04X}) at character {bad.start():,}: "
                         "a binary file, not text")
    return text
