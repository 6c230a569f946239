"""The drawing graph of a designed topology (networkx), aggregated so large fabrics stay legible.

Small fabrics (up to ``detail_limit`` nodes) are drawn device by device. Larger ones are
drawn by *units*: a scalable unit for rail-optimised fabrics ("SU 3: 32 nodes"), a block of
leaves otherwise, or a pod when there are more than ``MAX_UNITS`` units. ``expand="SU 3"``
(a unit's label prefix) draws that one unit device by device. Node attributes: ``label``,
``role``, ``tier`` (0 compute, 1 leaf, 2 spine, 3 core), ``x``, ``y``, ``count``, ``ports``,
``ports_used``, ``info``; edge attributes: ``links``, ``network``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import networkx as nx

from gpucluster_lib.network.clos import ClosCounts, RingCounts, TreeCounts, three_tier_plan

MAX_UNITS = 32
MAX_SWITCHES_SHOWN = 32
ROLES = ("compute", "leaf", "spine", "core", "head", "management", "storage", "file system")


@dataclass(frozen=True)
class _Unit:
    name: str
    nodes: range
    leaves: range
    pod: int


def group_names(d: Any, c: ClosCounts) -> list[str]:
    """The names of the groups a large fabric is drawn as, one box each: "SU 1", ... for a
    rail-optimized fabric of scalable units, else "Group 1", ... (the leaf switches in at most 16
    blocks, with their nodes), or "Pod 1", ... for a three-tier fabric that would have more than
    ``MAX_UNITS`` groups. These are the choices the topology view offers for expanding one group
    into its nodes and switches. ``d``: the network design
    (:class:`~gpucluster_lib.network.topology.TopologyDesign`), ``c``: its Clos switch counts."""
    return [u.name for u in _units(d, c)]


def _units(d: Any, c: ClosCounts) -> list[_Unit]:
    """Compute units: scalable units (rail), leaf blocks (node-aligned), or pods when too many."""
    L = c.leaves
    lpp = c.leaves_per_pod or L
    if d.kind == "rail-optimized" and d.scalable_units:
        su, lps = d.scalable_unit_nodes or 1, d.leaves_per_su
        units = [_Unit(f"SU {s + 1}", range(s * su, min(d.nodes, (s + 1) * su)), range(s * lps, (s + 1) * lps),
                       (s * lps) // lpp) for s in range(d.scalable_units)]
        label = "SU"
    else:
        npl = max(1, d.nodes_per_leaf)
        block = max(1, math.ceil(L / 16))
        units = []
        for i, start in enumerate(range(0, L, block)):
            lr = range(start, min(L, start + block))
            units.append(_Unit(f"Group {i + 1}", range(start * npl, min(d.nodes, (start + len(lr)) * npl)), lr,
                               start // lpp))
        label = "Group"
    if len(units) > MAX_UNITS and c.tiers == 3:
        pods = []
        for p in range(c.pods):
            mine = [u for u in units if u.pod == p]
            if mine:
                pods.append(_Unit(f"Pod {p + 1}", range(mine[0].nodes.start, mine[-1].nodes.stop),
                                  range(mine[0].leaves.start, mine[-1].leaves.stop), p))
        units = pods
    del label
    return units


def _add(g: nx.Graph, key: str, label: str, role: str, tier: int, count: int = 1, ports: int = 0,
         ports_used: int = 0, info: str = "") -> None:
    g.add_node(key, label=label, role=role, tier=tier, count=count, ports=ports, ports_used=ports_used, info=info)


def _link(g: nx.Graph, a: str, b: str, links: int, network: str = "compute") -> None:
    if links <= 0:
        return
    if g.has_edge(a, b):
        g[a][b]["links"] += links
    else:
        g.add_edge(a, b, links=links, network=network)


def build_graph(d: Any, *, expand: str | None = None, detail_limit: int = 32) -> nx.Graph:
    """The drawing graph; positions in node attributes ``x`` (0..1 per tier) and ``y`` (tier).

    Parameters
    ----------
    d : the designed topology
    expand : label of one aggregated unit to draw device by device ("SU 3", "Group 2", "Pod 1")
    detail_limit : largest node count drawn device by device [count]
    """
    g = nx.Graph()
    c = d.counts
    P = d.ports_per_node
    if isinstance(c, RingCounts) or d.kind == "ring":
        n = d.nodes
        shown = n if n <= detail_limit else 0
        if shown:
            for i in range(n):
                _add(g, f"n{i}", f"node{i + 1:04d}", "compute", 0, ports=P, ports_used=P)
            for i in range(n if n > 2 else n - 1):
                _link(g, f"n{i}", f"n{(i + 1) % n}", c.links_per_neighbour if isinstance(c, RingCounts) else 1)
        else:
            _add(g, "ring", f"Ring: {n} nodes", "compute", 0, count=n, ports=P)
    elif isinstance(c, TreeCounts):
        _add(g, "nodes", f"{d.nodes} nodes", "compute", 0, count=d.nodes, ports=P)
        if c.tiers == 1:
            _add(g, "sw", "switch01", "leaf", 1, ports=d.radix, ports_used=d.endpoints)
            _link(g, "nodes", "sw", d.endpoints)
        else:
            _add(g, "leaves", f"Leaves ({c.leaves})", "leaf", 1, count=c.leaves, ports=d.radix)
            _link(g, "nodes", "leaves", d.endpoints)
            top = "leaves"
            if c.middles:
                _add(g, "mid", f"Middle ({c.middles})", "spine", 2, count=c.middles, ports=d.radix)
                _link(g, "leaves", "mid", c.leaf_up_links)
                top = "mid"
            _add(g, "root", "Root", "core", 3, count=1, ports=d.radix)
            _link(g, top, "root", c.middle_root_links or c.leaf_up_links)
    elif isinstance(c, ClosCounts) and c.tiers == 1:
        if d.nodes <= detail_limit:
            for i in range(d.nodes):
                _add(g, f"n{i}", f"node{i + 1:04d}", "compute", 0, ports=P, ports_used=P)
                _link(g, f"n{i}", "sw", P)
        else:
            _add(g, "nodes", f"{d.nodes} nodes", "compute", 0, count=d.nodes, ports=P)
            _link(g, "nodes", "sw", d.nodes * P)
        _add(g, "sw", "switch01", "leaf", 1, ports=d.radix, ports_used=d.endpoints)
    elif isinstance(c, ClosCounts):
        _clos_graph(g, d, c, expand, detail_limit)
    _side_networks(g, d)
    _layout(g)
    return g


def _spine_key(c: ClosCounts, pod: int, j: int, individual: bool) -> str:
    if c.tiers == 2:
        return f"s{j}" if individual else "spines"
    return f"s{pod}-{j}" if individual else f"spines-p{pod}"


def _clos_graph(g: nx.Graph, d: Any, c: ClosCounts, expand: str | None, detail_limit: int) -> None:
    P = d.ports_per_node
    rail = d.kind == "rail-optimized"
    detail = d.nodes <= detail_limit and c.switches <= 64
    units = _units(d, c)
    ind_spines = c.tiers == 2 and c.spines <= MAX_SWITCHES_SHOWN
    # spines and cores
    if c.tiers == 2:
        if ind_spines:
            for j in range(c.spines):
                _add(g, f"s{j}", f"spine{j + 1:03d}", "spine", 2, ports=d.radix,
                     ports_used=c.leaves * c.links_per_leaf_spine)
        else:
            _add(g, "spines", f"Spines ({c.spines})", "spine", 2, count=c.spines, ports=d.radix)
    else:
        def pod_spines(p: int) -> int:  # the last pod may be partial (fewer spines)
            return c.last_pod_spines if p == c.pods - 1 and c.last_pod_spines else c.spines_per_pod

        for p in range(c.pods):
            _add(g, f"spines-p{p}", f"Pod {p + 1} ({pod_spines(p)})", "spine", 2, count=pod_spines(p),
                 ports=d.radix)
        if c.cores <= MAX_SWITCHES_SHOWN:
            links: dict[tuple[int, int], int] = {}
            for row in three_tier_plan(c):
                if row[0] == "spine-core":
                    key = (row[1], row[4])
                    links[key] = links.get(key, 0) + 1
            per_core: dict[int, int] = {}
            for (_, core), n in links.items():
                per_core[core] = per_core.get(core, 0) + n
            for k in range(c.cores):
                _add(g, f"c{k}", f"core{k + 1:03d}", "core", 3, ports=d.radix, ports_used=per_core.get(k, 0))
            for (p, core), n in sorted(links.items()):
                _link(g, f"spines-p{p}", f"c{core}", n)
        else:
            _add(g, "cores", f"Core ({c.cores})", "core", 3, count=c.cores, ports=d.radix)
            for p in range(c.pods):
                _link(g, f"spines-p{p}", "cores", pod_spines(p) * c.up_per_spine)

    def leaf_name(li: int) -> str:
        if rail:
            s, rem = divmod(li, d.leaves_per_su)
            m = d.leaves_per_su // P
            r, k = divmod(rem, m)
            return f"leaf-su{s + 1:02d}-r{r + 1}" + (f"-{k + 1}" if m > 1 else "")
        return f"leaf{li + 1:03d}"

    def leaf_up(key: str, li: int) -> None:
        pod = li // (c.leaves_per_pod or c.leaves)
        if c.tiers == 2:
            if ind_spines:
                for j in range(c.spines):
                    _link(g, key, f"s{j}", c.links_per_leaf_spine)
            else:
                _link(g, key, "spines", c.up_per_leaf)
        else:
            _link(g, key, f"spines-p{pod}", c.up_per_leaf)

    for u in units:
        individual = detail or (expand is not None and (u.name == expand or u.name.split(":")[0] == expand))
        if individual:
            for li in u.leaves:
                _add(g, f"l{li}", leaf_name(li), "leaf", 1, ports=d.radix,
                     ports_used=c.down_per_leaf + c.up_per_leaf, info=u.name)
                leaf_up(f"l{li}", li)
            for ni in u.nodes:
                _add(g, f"n{ni}", f"node{ni + 1:04d}", "compute", 0, ports=P, ports_used=P, info=u.name)
                if rail:
                    lps = d.leaves_per_su
                    m = lps // P
                    s, j = divmod(ni, d.scalable_unit_nodes or 1)
                    for r in range(P):
                        _link(g, f"n{ni}", f"l{s * lps + r * m + j // c.down_per_leaf}", 1)
                else:
                    _link(g, f"n{ni}", f"l{min(c.leaves - 1, ni // max(1, d.nodes_per_leaf))}", P)
        else:
            nk, lk = f"u{u.name}", f"ul{u.name}"
            _add(g, nk, f"{u.name}: {len(u.nodes)} nodes", "compute", 0, count=len(u.nodes), ports=P,
                 ports_used=len(u.nodes) * P, info=u.name)
            _add(g, lk, f"{u.name} leaves ({len(u.leaves)})", "leaf", 1, count=len(u.leaves), ports=d.radix,
                 ports_used=len(u.nodes) * P + len(u.leaves) * c.up_per_leaf, info=u.name)
            _link(g, nk, lk, len(u.nodes) * P)
            for li in u.leaves:
                leaf_up(lk, li)


def _side_networks(g: nx.Graph, d: Any) -> None:
    """Head node, management and storage networks, drawn in a side column."""
    summ = d.network_summary()
    if d.head_nodes:
        _add(g, "head", f"Head node{'s' if d.head_nodes > 1 else ''} ({d.head_nodes})", "head", 0,
             count=d.head_nodes, info="management, scheduler, gateway to the outside")
    if "management" in summ:
        m = summ["management"]
        _add(g, "mgmt", f"Management ({m['switches']} sw)", "management", 1, count=m["switches"],
             info=f"{m['links']} links, {', '.join(m['switch_models'])}")
        _link(g, "head", "mgmt", 2 * d.head_nodes, "management")
    if "storage" in summ:
        s = summ["storage"]
        _add(g, "storage", f"Storage fabric ({s['switches']} sw)", "storage", 2, count=s["switches"],
             info=f"{s['links']} links, {', '.join(s['switch_models'])}")
        _add(g, "fs", "File system (NFS/Lustre)", "file system", 3, info="central file system servers")
        _link(g, "storage", "fs", 1, "storage")
        if d.head_nodes:
            _link(g, "head", "storage", d.head_nodes, "storage")


def _layout(g: nx.Graph) -> None:
    """x in [0, 1] per tier for the fabric; the side column at x = 1.12."""
    side = {"head", "management", "storage", "file system"}
    for tier in range(4):
        keys = [k for k, a in g.nodes(data=True) if a["tier"] == tier and a["role"] not in side]
        for i, k in enumerate(keys):
            g.nodes[k]["x"] = (i + 0.5) / len(keys)
            g.nodes[k]["y"] = tier
    for _key, a in g.nodes(data=True):
        if a["role"] in side:
            a["x"], a["y"] = 1.12, a["tier"]
