"""One way to write a number for people: thousands separators, sensible precision, "–" for none.

Used by the app's tables, the report's tables and key figures, and the CLI text output, so
the same figure reads the same everywhere.
"""

from __future__ import annotations

import math
from typing import Any

#: What a missing value (None, NaN) reads as.
MISSING = "–"


def is_number(v: Any) -> bool:
    """A real quantity (int or float, not bool, not NaN)."""
    if isinstance(v, bool) or v is None:
        return False
    if hasattr(v, "item") and not isinstance(v, (str, bytes)):
        v = v.item()
    return isinstance(v, (int, float)) and not (isinstance(v, float) and math.isnan(v))


def significant(v: float, digits: int) -> float:
    """``v`` rounded to ``digits`` significant digits, as a float (the shortest decimal for it). Saved and
    displayed fit results use it: a fit's last digits differ between CPUs (the SIMD paths of numpy's sums),
    and the same fit should read the same wherever it ran."""
    return float(f"{v:.{digits}g}")


def format_value(v: Any, unit: str = "") -> str:
    """``v`` for a table or a sentence: 1,234 / 12.3 / 0.123 / 1.23e-05; yes/no; "–" for none.

    Integers (and whole floats) get thousands separators; other floats keep three
    significant figures below 10 and one decimal from 10 to 1,000; ``unit`` is appended
    after a space when the value is a number.
    """
    if hasattr(v, "item") and not isinstance(v, (str, bytes)):
        v = v.item()
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return MISSING
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        text = f"{v:,}"
    elif isinstance(v, float):
        a = abs(v)
        if math.isinf(v):
            text = "∞" if v > 0 else "-∞"
        elif (v.is_integer() and a < 1e15) or a >= 1000:
            text = f"{v:,.0f}"
        elif a >= 10:
            text = f"{v:,.1f}"
        elif a >= 0.01 or a == 0:
            text = f"{v:.3g}" if a < 1 else f"{v:.2f}"
        else:
            text = f"{v:.2e}"
    else:
        return str(v)
    return f"{text} {unit}" if unit else text


def format_duration(seconds: float) -> str:
    """A time for people, three significant figures in the unit that keeps it readable: "12.3 s",
    "1,234 s", "5.44 ms", "82.5 µs" (never a power of ten). The unit is chosen after rounding, so 0.09996 s
    reads "0.1 s", not "100 ms"; a time that is not a number reads "not available"."""
    if math.isnan(seconds):
        return "not available"
    if math.isinf(seconds):
        return "infinite" if seconds > 0 else "minus infinity"
    a = float(f"{abs(seconds):.3g}")
    if a == 0:
        return "0 s"
    if a < 1e-9:
        return "under 1 ns" if seconds > 0 else "minus under 1 ns"
    if a >= 1e12:  # beyond any run: the power of ten, as number_words writes it
        return f"{number_words(math.copysign(a, seconds))} s"
    if a >= 0.1:
        return f"{seconds:,.0f} s" if a >= 100 else f"{seconds:.3g} s"
    if a >= 1e-4:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds * 1e6:,.3g} µs" if a >= 1e-7 else f"{seconds * 1e9:,.3g} ns"


def stage_runs(values: list[int]) -> str:
    """Layers per pipeline stage in words, stages numbered from 1: ``[7, 8, ..., 8, 7]`` (16 stages) is
    ``7 layers on stage 1, 8 on stages 2 to 15, 7 on stage 16``; equal stages ``12 layers each``."""
    if len(set(values)) == 1:
        return f"{values[0]} layer{'' if values[0] == 1 else 's'} each"
    out: list[str] = []
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[j + 1] == values[i]:
            j += 1
        where = f"stage {i + 1}" if j == i else f"stages {i + 1} to {j + 1}"
        unit = "" if out else (" layer" if values[i] == 1 else " layers")
        out.append(f"{values[i]}{unit} on {where}")
        i = j + 1
    return ", ".join(out)


def number_words(v: int | float) -> str:
    """A number as a person writes it in a sentence: whole numbers with thousands separators and no ".0"
    (0, 16,777,216), 10^12 and above, and below 10^-4, as a power of ten ("10^15", "2 x 10^15", "1.5 x 10^-5"),
    others as written (0.5, 0.001)."""
    if isinstance(v, int) and not isinstance(v, bool):
        if abs(v) < 10**12:
            return f"{v:,}"
        if v.bit_length() > 1000:  # beyond a float: only its size
            return f"an integer of about {int(v.bit_length() * 0.30103) + 1:,} digits"
        v = float(v)
    if math.isnan(v):
        return "not a number"
    if math.isinf(v):
        return "infinity" if v > 0 else "minus infinity"
    a = abs(v)
    text = f"{v:.3g}"
    if a != 0 and (a >= 1e12 or a < 1e-4) and "e" in text:  # 9.9999e-5 rounds to "0.0001": no power then
        mantissa, exp = text.split("e")
        power = f"10^{int(exp)}"
        return {"1": power, "-1": f"-{power}"}.get(mantissa, f"{mantissa} x {power}")
    if a != 0 and a < 1e-4:
        return text
    if v.is_integer():
        return f"{int(v):,}"
    return f"{v:g}"


def plural(n: int | float, word: str, many: str | None = None) -> str:
    """``n`` with thousands separators and ``word`` in the number it takes: "1 rack",
    "1,024 racks", "0 hot spares" (``many``: an irregular plural, "switches")."""
    one = isinstance(n, (int, float)) and not isinstance(n, bool) and n == 1
    return f"{format_value(n)} {word if one else (many or word + 's')}"


_COUNT_S = None  # compiled on first use by :func:`singular_where_one`


def singular_where_one(text: str) -> str:
    """"1 head node(s)" -> "1 head node", "2 head node(s)" -> "2 head nodes", "3 switch(es)" ->
    "3 switches": the "(s)" or "(es)" of a count written before it is resolved (up to two words
    between the number and the noun)."""
    import re

    global _COUNT_S
    if _COUNT_S is None:
        _COUNT_S = re.compile(r"(?<![\w.,])(\d[\d,]*(?:\.\d+)?)((?:\s+(?!\d)[\w-]+){0,2}?\s+[A-Za-z-]+)\((e?s)\)")

    def fix(m: Any) -> str:
        n = m.group(1).replace(",", "")
        return m.group(1) + m.group(2) + ("" if n == "1" else m.group(3))

    return _COUNT_S.sub(fix, text)


def format_fraction(v: Any) -> str:
    """A fraction as a percentage with one decimal (0.392 -> 39.2%); "–" for none."""
    if not is_number(v):
        return MISSING
    return f"{float(v):.1%}"


def humanize_key(key: str) -> str:
    """A result key for people: ``it_power_kw`` -> "IT power (kW)", ``capex.total`` -> "CapEx: total"."""
    parts = [p for p in key.split(".") if p]
    return ": ".join(_human_word(p) for p in parts)


_UNITS = {"kw": "kW", "w": "W", "mw": "MW", "gb": "GB", "gib": "GiB", "tb": "TB", "s": "s", "h": "h",
          "kg": "kg", "m2": "m²", "u": "U", "gbps": "Gb/s", "tbps": "Tb/s", "usd": "USD", "kva": "kVA",
          "mwh": "MWh", "cfm": "CFM", "c": "°C", "tflops": "TFLOP/s", "pflops": "PFLOP/s", "btu": "BTU",
          "kwh": "kWh"}
#: a rate "per" one of these reads as words: "requests_per_s" -> "Requests per second"
_PER_WORDS = {"s": "second", "h": "hour", "kwh": "kWh", "gpu": "GPU", "node": "node", "rack": "rack"}
_WORDS = {"it": "IT", "capex": "CapEx", "opex": "OpEx", "tco": "TCO", "gpu": "GPU", "gpus": "GPUs",
          "cpu": "CPU", "psu": "PSU", "ups": "UPS", "pue": "PUE", "mfu": "MFU", "hfu": "HFU", "ttft": "TTFT",
          "tpot": "TPOT", "slo": "SLO", "kv": "KV", "nvlink": "NVLink", "co2e": "CO2e", "mtbi": "MTBI",
          "tp": "TP", "pp": "PP", "dp": "DP", "btu": "BTU", "nic": "NIC", "nics": "NICs", "ru": "U",
          "hbm": "HBM", "cdu": "CDU", "cuda": "CUDA", "nccl": "NCCL", "os": "OS", "slurm": "SLURM",
          "zero3": "ZeRO-3"}


def _human_word(part: str) -> str:
    words = part.split("_")
    unit = None
    if len(words) >= 3 and words[-2] == "per" and words[-1] in _PER_WORDS and words[-3] not in _UNITS:
        words[-1] = _PER_WORDS[words[-1]]  # a rate in words, not a unit in brackets
    elif len(words) > 3 and words[-2] == "per" and words[-1] in _UNITS and words[-3] in (_UNITS | _COUNTED):
        top = _UNITS.get(words[-3], words[-3])
        unit = f"{top}/{_UNITS[words[-1]]}"
        del words[-3:]
    elif len(words) > 1 and words[-1] in _UNITS:
        unit = _UNITS[words.pop()]
    text = " ".join(_WORDS.get(w, w.upper() if _PERCENTILE(w) else w) for w in words)
    text = text[:1].upper() + text[1:] if text and not text[:1].isupper() else text
    return f"{text} ({unit})" if unit else text


_COUNTED = {"tokens": "tokens", "images": "images", "requests": "requests"}


def _PERCENTILE(w: str) -> bool:  # noqa: N802 - p10, p50, p90
    return len(w) in (2, 3) and w[0] == "p" and w[1:].isdigit()
