"""Words for people: figures with units, and free text without dotted keys or identifiers.

The report is read by people who never saw the workbook, so every number is written once by
:func:`figure_text` (the same function for the executive summary, the sections and the app's
header) and every message that reaches the page goes through :func:`humanize_text`, which
turns scenario key paths (``costs.network_price``), catalogue file names (``servers.csv``),
module constants and snake_case names into words.
"""

from __future__ import annotations

import html
import re
from typing import Any

from gpucluster_lib.formatting import (
    MISSING,
    format_fraction,
    format_value,
    humanize_key,
    singular_where_one,
)

#: Units that read better written out after the number.
_UNIT_WORDS = {"fraction": "%", "USD": "USD", "days": "days"}


def figure_text(fig: dict[str, Any]) -> str:
    """One key figure of :meth:`Design.summary` as text: "1,024", "47.8%", "30,447,401 USD"."""
    value, unit = fig.get("value"), fig.get("unit", "")
    if value is None:
        return MISSING
    if unit == "fraction":
        return format_fraction(value)
    return format_value(value, unit) if isinstance(value, (int, float)) else str(value)


def value_text(value: Any, unit: str = "") -> str:
    """A value with its unit; a unit of ``%`` or ``fraction`` writes a fraction as a percentage."""
    if unit in ("%", "fraction"):
        return format_fraction(value)
    if value is None:
        return MISSING
    return format_value(value, unit) if isinstance(value, (int, float)) and not isinstance(value, bool) \
        else format_value(value)


def money_text(value: float | None, currency: str) -> str:
    """Money for people: "30.4 million USD", "1.60 USD"."""
    if value is None:
        return MISSING
    a = abs(value)
    if a >= 1e9:
        return f"{value / 1e9:,.2f} billion {currency}"
    if a >= 1e6:
        return f"{value / 1e6:,.1f} million {currency}"
    return format_value(value, currency)


_URL = re.compile(r"(https?://\S+|\bwww\.\S+|\b[\w-]+(?:\.[\w-]+)*\.(?:com|org|net|io|ai|gov|edu|dev)\b(?:/\S*)?)")
_CSV = re.compile(r"\b(?:data/)?([a-z_]+)\.(csv|yaml)\b")
_CONSTANT = re.compile(r"\b([a-z][a-z0-9_]*)\.[A-Z][A-Z0-9_]+\b")
_DOTTED = re.compile(r"\b[a-z][a-z0-9_]+(?:\.(?:[a-z_][a-z0-9_]*|\*))+")
_SNAKE = re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b")
_CATALOGUE_NAMES = {"accelerators": "accelerator", "servers": "server", "cpus": "CPU", "nics": "network adapter",
                    "switches": "switch", "storage": "storage"}


def _dotted(match: re.Match) -> str:
    text = match.group(0)
    if text.endswith(".*"):
        return f"the {humanize_key(text[:-2]).lower()} settings"
    return f"“{humanize_key(text)}”"


def humanize_text(text: str) -> str:
    """``text`` without dotted keys, file names, module constants or snake_case names.

    URLs and web addresses are kept as they are; ``costs.network_price`` becomes
    “Costs: network price”, ``servers.csv`` "the server catalogue",
    ``power_assumptions.STORAGE_APPLIANCE_W`` "the shipped power assumptions",
    ``head_node`` "head node".
    """
    if not text:
        return ""
    parts = _URL.split(str(text))
    out = []
    for i, part in enumerate(parts):
        if i % 2:  # a URL: keep
            out.append(part)
            continue
        part = re.sub(r"\bthe (?=\w+\.(?:csv|yaml)\b)", "", part)  # "the servers.csv row": one "the"
        part = _CSV.sub(lambda m: (f"the {_CATALOGUE_NAMES.get(m.group(1), m.group(1).replace('_', ' '))} catalogue"
                                   if m.group(2) == "csv" else f"the shipped {m.group(1).replace('_', ' ')} table"),
                        part)
        part = _CONSTANT.sub(lambda m: f"the shipped {m.group(1).replace('_', ' ')}", part)
        part = _DOTTED.sub(_dotted, part)
        part = _SNAKE.sub(lambda m: m.group(0).replace("_", " "), part)
        # 406299 plans -> 406,299 plans; a standard's number (ISO 27001, IEC 62040) stays as it is
        part = _BARE_COUNT.sub(lambda m: m.group(0) if m.group(1) else f"{int(m.group(2)):,}", part)
        out.append(singular_where_one(part))
    return "".join(out)


#: Bodies whose standards are cited by number ("ISO/IEC 27001", "EN 50600", "ASHRAE 90.4").
STANDARD_BODIES = ("IEC", "ISO", "IEEE", "EN", "ANSI", "TIA", "EIA", "ASHRAE", "NFPA", "UL", "ASTM", "BS", "DIN",
                   "ETSI", "ITU-T", "NEMA", "JEDEC", "RFC", "OCP")

#: a whole number of five or more digits written without separators, standing on its own
#: (not part of an id, a version, a date, a decimal or a path); four digits may be a year.
#: Group 1: a standards body before it (then the number is a standard's, not a count).
_BARE_COUNT = re.compile(r"(\b(?:" + "|".join(re.escape(b) for b in STANDARD_BODIES) + r")(?:[/-](?:"
                         + "|".join(re.escape(b) for b in STANDARD_BODIES) + r"))*[\s-]+)?"
                         r"(?<![\w.,/:#-])(\d{5,})(?![\w.,/:-])")


def esc(text: Any) -> str:
    """HTML-escaped, humanised text."""
    return html.escape(humanize_text(str(text)))
