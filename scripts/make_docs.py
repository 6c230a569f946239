"""Regenerate docs/scenario.md (the scenario key reference) from the schema in scenario.py.

    python scripts/make_docs.py
"""

from __future__ import annotations

from pathlib import Path

from gpucluster_lib.scenario import field_docs

ROOT = Path(__file__).resolve().parent.parent

HEADER = """# Scenario reference

A scenario is one YAML file with the sections below, each optional where a default exists.
Loading is strict: an unknown key, a wrong type or an out-of-range value is refused with its
key path (`hardware.nodes: must be a positive integer, got -4`); an unknown catalogue id is
refused with the closest ids. Examples: `gpucluster_lib/data/scenarios/`.

Every number has physical bounds, shown in brackets after its meaning (`1 <= x <= 100,000`):
an absurd value is refused with its bound, never carried into the results as infinity or NaN.
Integers are written without a decimal point (`8`, not `8.0`). The file is read as YAML 1.2
(`010` is ten, `1:30` and `yes` are text), at most 64 KiB, UTF-8; a key given twice, more
than 64 aliases or 20 levels of nesting are refused ([security](security.md)).

Shorthands: `model: llama3-70b` is `model: {preset: llama3-70b}`; `parallelism: auto` is
`parallelism: {auto: true}`.

This page is generated from `gpucluster_lib/scenario.py` by `python scripts/make_docs.py`
(a test fails when it is out of date).

| key | type | meaning [unit] |
|---|---|---|
"""


def render() -> str:
    rows = [f"| `{path}` | {tp} | {doc} |" for path, tp, doc in field_docs()]
    return HEADER + "\n".join(rows) + "\n"


if __name__ == "__main__":
    (ROOT / "docs" / "scenario.md").write_text(render(), encoding="utf-8")
    print("wrote docs/scenario.md")
