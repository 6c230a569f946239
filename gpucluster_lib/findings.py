"""Findings: design problems reported to the user instead of raised.

A finding has a stable ``code`` (tests and other tools match on it), a
``severity`` (``error`` means the design cannot work as given, ``warning`` that it
works but is risky or wasteful, ``info`` a note), a ``message`` with the numbers,
and a suggested ``fix``.
"""

from __future__ import annotations

import html
from dataclasses import asdict, dataclass
from typing import Literal

Severity = Literal["error", "warning", "info"]
SEVERITIES: tuple[Severity, ...] = ("error", "warning", "info")


@dataclass(frozen=True)
class Finding:
    code: str
    severity: Severity
    message: str
    fix: str = ""
    field: str = ""

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(f"severity must be one of {SEVERITIES}, got {self.severity!r}")

    def to_dict(self) -> dict:
        return asdict(self)


def has_errors(findings: list[Finding]) -> bool:
    return any(f.severity == "error" for f in findings)


def sort_findings(findings: list[Finding]) -> list[Finding]:
    """Errors first, then warnings, then infos; stable within a severity."""
    order = {s: i for i, s in enumerate(SEVERITIES)}
    return sorted(findings, key=lambda f: order[f.severity])


_COLOURS = {"error": "#b00020", "warning": "#8a5a00", "info": "#1f5f99"}
_ICONS = {"error": "✖", "warning": "⚠", "info": "ℹ"}


def findings_html(findings: list[Finding], empty: str = "No findings.") -> str:
    """Findings as a small HTML list (used by widgets and reports)."""
    if not findings:
        return f'<div class="gc-findings gc-ok">✔ {html.escape(empty)}</div>'
    items = []
    for f in sort_findings(findings):
        fix = f"<br><i>Fix:</i> {html.escape(f.fix)}" if f.fix else ""
        items.append(
            f'<li style="color:{_COLOURS[f.severity]}"><b>{_ICONS[f.severity]} {f.severity}</b> '
            f"<code>{html.escape(f.code)}</code>: {html.escape(f.message)}{fix}</li>"
        )
    return '<ul class="gc-findings">' + "".join(items) + "</ul>"
