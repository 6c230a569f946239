"""Chart functions: each returns an ``alt.Chart`` built from result data (no widgets, no IO).

Rendering is the caller's choice: the widgets wrap charts in an offline
``alt.JupyterChart``; reports and nbval use the deterministic ``svg`` renderer.
"""

from __future__ import annotations

import altair as alt

#: One palette for vendors/roles so colours mean the same in every chart.
VENDOR_COLOURS = {"NVIDIA": "#76b900", "AMD": "#ed1c24", "Google": "#4285f4", "Intel": "#0071c5"}


def vendor_scale(vendors: list[str]) -> alt.Scale:
    domain = sorted(set(vendors))
    fallback = ["#7f7f7f", "#9467bd", "#8c564b", "#e377c2"]
    rng = [VENDOR_COLOURS.get(v.split()[0], fallback[i % len(fallback)]) for i, v in enumerate(domain)]
    return alt.Scale(domain=domain, range=rng)


def with_values(spec: dict, records: list[dict]) -> dict:
    """A copy of a compiled single-dataset spec with its data replaced by ``records``.

    Widget callbacks build a chart's spec once per layout (``chart.to_dict()``, ~100 ms of
    altair validation) and then only swap the data (~1 ms), so an update stays well under
    the 100 ms budget. ``spec`` must use one top-level dataset, as altair charts built from
    one DataFrame do.
    """
    out = {k: v for k, v in spec.items() if k != "datasets"}
    out["data"] = {"values": records}
    return out


def records(df) -> list[dict]:
    """DataFrame rows as JSON-ready dicts (NaN -> None), column order kept."""
    import math

    return [{k: (None if isinstance(v, float) and math.isnan(v) else (v.item() if hasattr(v, "item") else v))
             for k, v in row.items()} for row in df.to_dict(orient="records")]


_TEMPLATES: dict[tuple, dict] = {}


def fill_template(key: tuple, build, rows: list[dict], title: str | None = None) -> dict:
    """A chart's Vega-Lite spec with ``rows`` as its data: the layout (``build()``, an altair
    chart over one DataFrame) is compiled and validated once per ``key``, later calls only swap
    the data and the top-level title (about a millisecond instead of 30-100 ms of altair)."""
    spec = _TEMPLATES.get(key)
    if spec is None:
        spec = _TEMPLATES[key] = build().to_dict()
    out = with_values(spec, rows)
    if title is not None:
        out["title"] = title
    return out


def fill_named(key: tuple, build, datasets: dict[str, list[dict]], title: str | None = None) -> dict:
    """Like :func:`fill_template` for a chart whose layers read named datasets
    (``alt.Data(name=...)``): compiled once per ``key``, then only ``datasets`` are swapped."""
    spec = _TEMPLATES.get(key)
    if spec is None:
        spec = _TEMPLATES[key] = build().to_dict()
    out = {k: v for k, v in spec.items() if k != "datasets"}
    out["datasets"] = datasets
    if title is not None:
        out["title"] = title
    return out


def fill_slots(node, values: dict):
    """A copy of ``node`` (a compiled spec) with every stand-in value (a key of ``values``: an unusual
    string or float compiled into the layout in place of a title or a scale's end) replaced.

    A layout whose titles and domains change with the data is then compiled once, with stand-ins,
    instead of once per title."""
    if isinstance(node, dict):
        return {k: fill_slots(v, values) for k, v in node.items()}
    if isinstance(node, list):
        return [fill_slots(v, values) for v in node]
    if isinstance(node, (str, float)):
        return values.get(node, node)
    return node
