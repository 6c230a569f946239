"""Charts for the network topology: the layered drawing and the growth chart."""

from __future__ import annotations

import json
from collections import Counter
from functools import lru_cache
from typing import TYPE_CHECKING

import altair as alt
import pandas as pd

if TYPE_CHECKING:
    from gpucluster_lib.network.topology import TopologyDesign

ROLE_COLOURS = {
    "compute": "#4c78a8", "leaf": "#f58518", "spine": "#54a24b", "core": "#e45756",
    "head": "#b279a2", "management": "#9d755d", "storage": "#72b7b2", "file system": "#bab0ac",
}
TIER_NAMES = {0: "compute nodes", 1: "leaf", 2: "spine", 3: "core"}


def graph_frames(d: TopologyDesign, *, expand: str | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(nodes, edges) DataFrames of :func:`gpucluster_lib.network.graph.build_graph`."""
    from gpucluster_lib.network.graph import build_graph

    g = build_graph(d, expand=expand)
    nodes = pd.DataFrame([{"key": k, **a} for k, a in g.nodes(data=True)])
    edges = pd.DataFrame([{"x": g.nodes[a]["x"], "y": g.nodes[a]["y"], "x2": g.nodes[b]["x"], "y2": g.nodes[b]["y"],
                           "links": e["links"], "network": e["network"],
                           "between": f"{g.nodes[a]['label']} - {g.nodes[b]['label']}"}
                          for a, b, e in g.edges(data=True)],
                         columns=["x", "y", "x2", "y2", "links", "network", "between"])
    return nodes, edges


def _records(df: pd.DataFrame) -> list[dict]:
    """JSON-safe records (NaN -> None)."""
    return [{k: (None if isinstance(v, float) and v != v else v) for k, v in row.items()}
            for row in df.to_dict(orient="records")]


def _unify(rows: list[dict]) -> list[dict]:
    """Rows with every numeric column of one type, as a DataFrame column would have it (a column
    holding a float holds floats only), so the drawing's data read the same on every path."""
    floats = {k for r in rows for k, v in r.items() if isinstance(v, float)}
    for r in rows:
        for k in floats:
            v = r.get(k)
            if isinstance(v, int) and not isinstance(v, bool):
                r[k] = float(v)
    return rows


def _drawing_rows(d: TopologyDesign, expand: str | None) -> dict[str, list[dict]]:
    """The drawing's three datasets as JSON-ready rows, without pandas (a few milliseconds):
    devices (with their short labels and label mode), links and tier names."""
    from gpucluster_lib.network.graph import build_graph

    g = build_graph(d, expand=expand)
    nodes = [{"key": k, **a} for k, a in g.nodes(data=True)]
    per_row = Counter(n["y"] for n in nodes)
    many = len(nodes) > 60
    out = []
    for n in nodes:
        side, compute = n["x"] > 1.0, n["role"] == "compute"
        crowded = not side and per_row[n["y"]] > 12
        short = n["label"]
        if crowded and compute and n["count"] > 1:
            short = n["info"]  # a crowded row gets short, slanted labels (the tooltip keeps the full name)
        elif crowded and not compute:
            short = ""
        mode = "crowded" if crowded else "roomy"
        if many and compute and n["count"] == 1 and not side and not crowded:
            mode = "none"
        free = float(n["count"] * n["ports"] - n["ports_used"]) if n["ports"] != 0 else None
        out.append({"key": n["key"], "label": n["label"], "short": short, "labelmode": mode, "role": n["role"],
                    "count": n["count"], "ports": n["ports"], "ports_used": n["ports_used"], "free": free,
                    "info": n["info"], "x": n["x"], "y": n["y"]})
    pos = g.nodes
    edges = [{"x": pos[a]["x"], "y": pos[a]["y"], "x2": pos[b]["x"], "y2": pos[b]["y"], "links": e["links"],
              "network": e["network"], "between": f"{pos[a]['label']} - {pos[b]['label']}"}
             for a, b, e in g.edges(data=True)]
    tiers = [{"y": y, "name": name} for y, name in TIER_NAMES.items()]
    return {"nodes": _unify(out), "edges": _unify(edges), "tiers": tiers}


def _drawing_title(d: TopologyDesign, expand: str | None) -> str:
    return (f"{d.kind}, {d.tiers} tier{'s' if d.tiers != 1 else ''}: {d.nodes} nodes, "
            f"{sum(d.switches.values()) if d.kind != 'ring' else 0} compute switches"
            + (f" (expanded: {expand})" if expand else ""))


def _drawing_layers(datasets: dict, title: str, width: int, height: int) -> alt.LayerChart:
    x = alt.X("x:Q", axis=None, scale=alt.Scale(domain=[-0.02, 1.3]))
    y = alt.Y("y:Q", axis=None, scale=alt.Scale(domain=[-0.5, 3.5]))
    lines = alt.Chart(alt.Data(name="edges")).mark_rule(opacity=0.35, color="#8c8c8c").encode(
        x=x, y=y, x2="x2:Q", y2="y2:Q",
        strokeWidth=alt.StrokeWidth("links:Q", scale=alt.Scale(type="sqrt", range=[0.5, 4]), legend=None),
        tooltip=[alt.Tooltip("between:N", title="between"), alt.Tooltip("links:Q", title="links")],
    )
    node_data = alt.Data(name="nodes")
    points = alt.Chart(node_data).mark_point(filled=True, shape="square", opacity=0.95).encode(
        x=x, y=y,
        size=alt.Size("count:Q", scale=alt.Scale(type="sqrt", range=[60, 600]), legend=None),
        color=alt.Color("role:N", title="role", scale=alt.Scale(domain=list(ROLE_COLOURS),
                                                                range=list(ROLE_COLOURS.values()))),
        tooltip=[alt.Tooltip("label:N", title="name"), alt.Tooltip("role:N"), alt.Tooltip("count:Q", title="devices"),
                 alt.Tooltip("ports:Q", title="ports each"), alt.Tooltip("ports_used:Q", title="ports used"),
                 alt.Tooltip("free:Q", title="ports free"), alt.Tooltip("info:N", title="note")],
    )
    labels = alt.Chart(node_data).mark_text(dy=-12, fontSize=10).encode(x=x, y=y, text="short:N").transform_filter(
        "datum.labelmode == 'roomy'")
    slanted = alt.Chart(node_data).mark_text(dy=14, angle=300, align="right", fontSize=8).encode(
        x=x, y=y, text="short:N").transform_filter("datum.labelmode == 'crowded'")
    tier_labels = alt.Chart(alt.Data(name="tiers")).mark_text(align="left", x=2, fontSize=10, color="#666",
                                                               dy=-22).encode(y=y, text="name:N")
    return alt.LayerChart(layer=[lines, points, labels, slanted, tier_labels], datasets=datasets,
                          width=width, height=height, title=title)


def topology_chart(d: TopologyDesign, *, expand: str | None = None, width: int = 860, height: int = 420) -> alt.LayerChart:
    """The fabric drawn in layers (compute, leaf, spine, core), colour by role, tooltips.

    Large fabrics are aggregated ("SU 3: 32 nodes"); ``expand`` draws one unit device by device.
    The data sit once in top-level named datasets (``nodes``, ``edges``, ``tiers``).
    """
    return _drawing_layers(_drawing_rows(d, expand), _drawing_title(d, expand), width, height)


def topology_placeholder(width: int = 860, height: int = 420) -> alt.LayerChart:
    """The drawing's layout without data: what a panel shows before (or without) a valid design."""
    return _drawing_layers({"nodes": [], "edges": [], "tiers": []}, "", width, height)


def growth_placeholder() -> alt.HConcatChart:
    """The growth chart's layout without data."""
    return _growth_layers({"switches": [], "growth": []})


@lru_cache(maxsize=4)
def _template(width: int, height: int) -> str:
    """The drawing's Vega-Lite spec without data, validated once by altair (JSON text)."""
    return json.dumps(_drawing_layers({"nodes": [], "edges": [], "tiers": []}, "", width, height).to_dict())


class PrebuiltChart(alt.LayerChart):
    """A layer chart whose ``to_dict()`` returns a spec built beforehand (see :func:`topology_spec`).

    ``JupyterChart.chart = PrebuiltChart(spec)`` goes through altair's normal update path
    (spec, params and selections sent together) without re-validating the data.
    """

    def __init__(self, spec: dict):
        super().__init__(layer=[])
        self.__dict__["_prebuilt"] = spec

    def to_dict(self, *args, **kwargs) -> dict:  # noqa: ARG002 - same signature as altair's
        return json.loads(json.dumps(self.__dict__["_prebuilt"]))

    def __eq__(self, other: object) -> bool:
        # traitlets skips an assignment equal to the old value; altair's __eq__ compares only the
        # (empty) constructor arguments, so compare the specs
        return isinstance(other, PrebuiltChart) and other.__dict__["_prebuilt"] == self.__dict__["_prebuilt"]

    __hash__ = None  # type: ignore[assignment]


def topology_spec(d: TopologyDesign, *, expand: str | None = None, width: int = 860, height: int = 420) -> dict:
    """``topology_chart(...).to_dict()`` without altair's per-call cost (for widget updates).

    The spec is a validated template with the datasets and the title filled in; a widget sets
    it with ``jupyter_chart.spec = topology_spec(d)``.
    """
    spec = json.loads(_template(width, height))
    spec["datasets"] = _drawing_rows(d, expand)
    spec["title"] = _drawing_title(d, expand)
    return spec


GROWTH_COLUMNS = ["nodes", "tiers", "leaf", "spine", "core", "switches", "bisection_tbps", "per_gpu_allreduce_gbps"]


def _growth_layers(datasets: dict) -> alt.HConcatChart:
    sw = alt.Chart(alt.Data(name="switches")).mark_area(opacity=0.8).encode(
        x=alt.X("nodes:Q", title="nodes", scale=alt.Scale(type="log", base=2)),
        y=alt.Y("count:Q", title="compute switches", stack="zero"),
        color=alt.Color("tier:N", scale=alt.Scale(domain=["leaf", "spine", "core"],
                                                  range=[ROLE_COLOURS["leaf"], ROLE_COLOURS["spine"],
                                                         ROLE_COLOURS["core"]])),
        tooltip=["nodes:Q", "tier:N", "count:Q"],
    ).properties(width=380, height=220, title="Switches vs nodes")
    bis = alt.Chart(alt.Data(name="growth")).mark_line(point=True).encode(
        x=alt.X("nodes:Q", title="nodes", scale=alt.Scale(type="log", base=2)),
        y=alt.Y("bisection_tbps:Q", title="bisection [Tb/s]", scale=alt.Scale(type="log")),
        tooltip=["nodes:Q", "tiers:Q", alt.Tooltip("bisection_tbps:Q", format=",.1f"),
                 alt.Tooltip("per_gpu_allreduce_gbps:Q", title="per-GPU all-reduce [Gb/s]")],
    ).properties(width=380, height=220, title="Bisection bandwidth vs nodes")
    return alt.HConcatChart(hconcat=[sw, bis], datasets=datasets)


def _growth_datasets(table: pd.DataFrame) -> dict:
    data = _records(table[GROWTH_COLUMNS])
    # long form for the stacked area: every leaf row, then every spine row, then every core row
    long = [{"nodes": r["nodes"], "tier": tier, "count": r[tier]} for tier in ("leaf", "spine", "core") for r in data]
    return {"switches": long, "growth": data}


def growth_chart(table: pd.DataFrame) -> alt.HConcatChart:
    """Switch count and bisection bandwidth against node count (``topology.growth_table`` output)."""
    return _growth_layers(_growth_datasets(table))


@lru_cache(maxsize=1)
def _growth_template() -> str:
    return json.dumps(_growth_layers({"switches": [], "growth": []}).to_dict())


def growth_spec(table: pd.DataFrame) -> dict:
    """``growth_chart(table).to_dict()`` from a validated template (for widget updates)."""
    spec = json.loads(_growth_template())
    spec["datasets"] = _growth_datasets(table)
    return spec
