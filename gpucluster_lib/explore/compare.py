"""Designs side by side: two to six designs, one row per figure, the better value marked.

Each design is a :class:`~gpucluster_lib.design.Design` or a row of a sweep (its result columns
are the same :mod:`gpucluster_lib.explore.outputs`). Every row of the comparison is one figure
with its label and unit, the value of each design, its change against the first design in
percent, and which designs hold the better value (the lower CapEx, the higher bandwidth;
figures with no better side, such as the accelerator, are not marked).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpucluster_lib.errors import ScenarioError
from gpucluster_lib.explore.outputs import clean, outputs, row_of

MIN_DESIGNS, MAX_DESIGNS = 2, 6
#: The mark after a better value in the text table.
BETTER = "✔"


@dataclass
class Comparison:
    """The side-by-side table: design names and one row per figure."""

    names: list[str]
    rows: list[dict[str, Any]] = field(default_factory=list)
    currency: str = "USD"

    def to_dict(self) -> dict[str, Any]:
        """The ``gpucluster compare --json`` contract: designs and rows of key, label, unit,
        values, deltas_pct (against the first design) and best (indices of the better designs)."""
        return {"designs": self.names, "currency": self.currency, "rows": self.rows}

    def frame(self, *, marks: bool = True) -> Any:
        """A table for people: Figure, Unit, one column per design (better values marked)."""
        import pandas as pd

        from gpucluster_lib.formatting import format_value

        out = []
        for r in self.rows:
            line = {"Figure": r["label"], "Unit": r["unit"]}
            for i, (name, v) in enumerate(zip(self.names, r["values"], strict=True)):
                text = "–" if v is None else (format_value(v) if not isinstance(v, str) else v)
                if i and r["deltas_pct"][i] is not None and abs(r["deltas_pct"][i]) >= 0.05:
                    text += f" ({r['deltas_pct'][i]:+.1f}%)"
                if marks and i in r["best"]:
                    text += f" {BETTER}"
                line[name] = text
            out.append(line)
        return pd.DataFrame(out)


def _name(d: Any, i: int) -> str:
    if isinstance(d, Mapping):
        return str(d.get("name") or f"design {i + 1}")
    return str(getattr(getattr(d, "scenario", None), "name", None) or f"design {i + 1}")


def compare(designs: Sequence[Any], names: Sequence[str] | None = None, currency: str | None = None) -> Comparison:
    """Compare 2-6 designs (``Design`` objects or sweep rows: mappings of result columns). The better value of
    each row is marked among the designs without error findings (all of them when every design has some)."""
    n = len(designs)
    if not MIN_DESIGNS <= n <= MAX_DESIGNS:
        raise ScenarioError("designs", f"compare takes {MIN_DESIGNS} to {MAX_DESIGNS} designs, got {n}")
    if currency is None:
        first = designs[0]
        currency = first.scenario.costs.currency if hasattr(first, "scenario") else "USD"
    rows_in = [dict(d) if isinstance(d, Mapping) else row_of(d, currency) for d in designs]
    names = list(names) if names is not None else [_name(d, i) for i, d in enumerate(designs)]
    if len(set(names)) < len(names):  # two designs of the same name: number them
        names = [f"{i + 1}. {nm}" for i, nm in enumerate(names)]
    # a design with error findings (a plan its framework cannot run, one that does not fit) is never marked better
    errors = [str(d.get("error_findings") or "") if isinstance(d, Mapping)
              else " ".join(dict.fromkeys(f.code for f in getattr(d, "findings", ()) if f.severity == "error"))
              for d in designs]
    markable = set(range(n)) if all(errors) else {i for i in range(n) if not errors[i]}
    cmp = Comparison(names=names, currency=currency)
    for o in outputs(currency):
        vals = [clean(r.get(o.key)) for r in rows_in]
        if all(v is None for v in vals):
            continue
        numeric = all(v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)) for v in vals)
        deltas: list[float | None] = [None] * n
        best: list[int] = []
        if numeric:
            base = vals[0]
            for i, v in enumerate(vals):
                if v is not None and base not in (None, 0):
                    deltas[i] = round((v - base) / abs(base) * 100, 3)
            present = [(v, i) for i, v in enumerate(vals) if v is not None and not math.isnan(v)]
            cand = [(v, i) for v, i in present if i in markable]
            if o.better and cand and len(present) > 1 and len({v for v, _ in present}) > 1:
                target = min(v for v, _ in cand) if o.better == "min" else max(v for v, _ in cand)
                best = [i for v, i in cand if v == target]
        cmp.rows.append({"key": o.key, "label": o.label, "unit": o.unit, "values": vals, "deltas_pct": deltas,
                         "better": o.better or None, "best": best})
    if any(errors):  # say why a design's values are never marked better
        cmp.rows.append({"key": "error_findings", "label": "Error findings (never marked better)", "unit": "",
                         "values": [c or "none" for c in errors], "deltas_pct": [None] * n, "better": None,
                         "best": []})
    return cmp


def sweep_rows(outdir: Any, points: Sequence[int]) -> list[dict[str, Any]]:
    """Rows of a sweep's results (``OUTDIR/results.parquet``) by point, named by their axis values."""
    import json
    from pathlib import Path

    import pandas as pd

    folder = Path(outdir)
    table_path = folder / "results.parquet"
    if not table_path.is_file():
        raise ScenarioError("", f"{folder} holds no sweep results (results.parquet); run gpucluster sweep first")
    table = pd.read_parquet(table_path)
    meta = json.loads((folder / "sweep.json").read_text(encoding="utf-8")) if (folder / "sweep.json").is_file() else {}
    axes = [a for a in meta.get("axes", []) if a in table.columns]
    out = []
    for p in points:
        hit = table[table["point"] == p]
        if not len(hit):
            raise ScenarioError("", f"{folder}: no point {p}; the sweep has points 0 to {int(table['point'].max())}")
        row = {k: clean(v) for k, v in hit.iloc[0].to_dict().items()}
        if row.get("status") != "ok":
            raise ScenarioError("", f"{folder}: point {p} has no design ({row.get('status')}: {row.get('message')})")
        row["name"] = f"point {p}" + (": " + ", ".join(str(row[a]) for a in axes) if axes else "")
        out.append(row)
    return out
