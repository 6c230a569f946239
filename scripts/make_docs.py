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
