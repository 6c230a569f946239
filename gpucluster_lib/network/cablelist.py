"""The cable list of a designed topology: one row per cable (A-end, B-end, type, length class).

Names: ``node0001``, rail leaves ``leaf-su01-r1`` (``-2`` when a rail needs several leaves
per scalable unit), node-aligned leaves ``leaf001``, spines ``spine001`` (three tiers:
``spine-p01-01``, pod and position), cores ``core001``, a single switch ``switch01``,
the fabric manager ``ufm01``. Ports are 1-based. Only the compute fabric is listed link by
link; management and storage links are listed as counted groups (``A-end`` = ``*``).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from gpucluster_lib.network.clos import ClosCounts, RingCounts, three_tier_plan

if TYPE_CHECKING:
    import pandas as pd

COLUMNS = ["network", "tier", "a_end", "a_port", "b_end", "b_port", "cable", "length_class", "speed_gbps"]


def _node_name(i: int) -> str:
    return f"node{i + 1:04d}"


def _endpoints(d: Any) -> list[tuple[str, int]]:
    """(device, port) of every compute endpoint, in slot order (fabric manager after the nodes)."""
    out = [(_node_name(n), p + 1) for n in range(d.nodes) for p in range(d.ports_per_node)]
    out += [("ufm01", p + 1) for p in range(d.fabric_manager_ports)]
    return out


def _leaf_of(d: Any, c: ClosCounts) -> list[tuple[str, int]]:
    """(leaf, port) for every endpoint of :func:`_endpoints`."""
    P = d.ports_per_node
    res = []
    if d.kind == "rail-optimized":
        su = d.scalable_unit_nodes or 1
        m = d.leaves_per_su // P
        down = c.down_per_leaf
        fm_left = d.fabric_manager_ports
        slots = [(n, p) for n in range(d.nodes) for p in range(P)]
        fm_slot = d.nodes
        slots += [(fm_slot + p // P, p % P) for p in range(fm_left)]
        for slot, rail in slots:
            s, j = divmod(slot, su)
            sub, port = divmod(j, down)
            name = f"leaf-su{s + 1:02d}-r{rail + 1}" + (f"-{sub + 1}" if m > 1 else "")
            res.append((name, port + 1))
        return res
    per_leaf = c.down_per_leaf
    npl = d.nodes_per_leaf if P <= per_leaf else 0
    for e in range(d.endpoints):
        if npl:
            slot, p = divmod(e, P)
            leaf, j = divmod(slot, npl)
            port = j * P + p
        else:
            leaf, port = divmod(e, per_leaf)
        res.append((f"leaf{leaf + 1:03d}", port + 1))
    return res


def _leaf_names(d: Any, c: ClosCounts) -> list[str]:
    if d.kind == "rail-optimized":
        P = d.ports_per_node
        m = d.leaves_per_su // P
        return [f"leaf-su{s + 1:02d}-r{r + 1}" + (f"-{k + 1}" if m > 1 else "")
                for s in range(d.scalable_units or 0) for r in range(P) for k in range(m)]
    return [f"leaf{i + 1:03d}" for i in range(c.leaves)]


def _spine_name(c: ClosCounts, pod: int, j: int) -> str:
    return f"spine{j + 1:03d}" if c.tiers == 2 else f"spine-p{pod + 1:02d}-{j + 1:02d}"


def cable_list(d: Any, limit: int | None = None) -> pd.DataFrame:
    """One row per compute-fabric cable, plus one summary row per management/storage group.

    ``limit``: only the first rows (a preview): the same rows as ``cable_list(d).head(limit)``,
    without building a table of every cable."""
    import pandas as pd

    rows: list[tuple] = []
    groups = {g.tier: g for g in d.link_groups if g.network == "compute"}

    def meta(tier: str) -> tuple[str, str, float]:

        g = groups.get(tier)
        return (g.cable, g.length_class, g.speed_gbps) if g else ("", "", d.link_gbps)

    c = d.counts
    if isinstance(c, RingCounts):
        cab, lc, sp = meta("node-node")
        half = c.links_per_neighbour
        pairs = [(i, (i + 1) % c.nodes) for i in range(c.nodes if c.nodes > 2 else c.nodes - 1)]
        for a, b in pairs:
            for k in range(half if c.nodes > 2 else 2 * half):
                rows.append(("compute", "node-node", _node_name(a), half + k + 1 if c.nodes > 2 else k + 1,
                             _node_name(b), k + 1, cab, lc, sp))
    elif isinstance(c, ClosCounts) and c.tiers == 1:
        cab, lc, sp = meta("node-switch")
        for i, (dev, port) in enumerate(_endpoints(d)):
            rows.append(("compute", "node-switch", dev, port, "switch01", i + 1, cab, lc, sp))
    elif isinstance(c, ClosCounts):
        cab, lc, sp = meta("node-leaf")
        for (dev, port), (leaf, lport) in zip(_endpoints(d), _leaf_of(d, c), strict=True):
            rows.append(("compute", "node-leaf", dev, port, leaf, lport, cab, lc, sp))
        cab, lc, sp = meta("leaf-spine")
        leaves = _leaf_names(d, c)
        if c.tiers == 3:
            # port-level plan shared with the counts (partial last pod included)
            cab2, lc2, sp2 = meta("spine-core")
            for row in three_tier_plan(c):
                if row[0] == "leaf-spine":
                    _, li, lport, pod, j, sport = row
                    rows.append(("compute", "leaf-spine", leaves[li], lport, _spine_name(c, pod, j), sport,
                                 cab, lc, sp))
                else:
                    _, pod, j, sport, core, cport = row
                    rows.append(("compute", "spine-core", _spine_name(c, pod, j), sport, f"core{core + 1:03d}",
                                 cport, cab2, lc2, sp2))
        else:
            p = c.links_per_leaf_spine
            spines_per = c.spines_per_pod
            lpp = c.leaves_per_pod or len(leaves)
            for li, leaf in enumerate(leaves):
                pod, lj = divmod(li, lpp)
                for q in range(c.up_per_leaf):
                    j, k = divmod(q, p)
                    rows.append(("compute", "leaf-spine", leaf, c.down_per_leaf + q + 1,
                                 _spine_name(c, pod, j % spines_per), lj * p + k + 1, cab, lc, sp))
    df = pd.DataFrame(rows if limit is None else rows[:limit], columns=COLUMNS)
    extra = [{"network": g.network, "tier": g.tier, "a_end": "*", "a_port": None, "b_end": "*", "b_port": None,
              "cable": g.cable, "length_class": g.length_class, "speed_gbps": g.speed_gbps, "count": g.cables}
             for g in d.link_groups if g.network != "compute"]
    df["count"] = 1
    if extra and (limit is None or len(df) < limit):
        df = pd.concat([df, pd.DataFrame(extra)], ignore_index=True)
    return df if limit is None else df.head(limit)


def cable_summary(d: Any) -> pd.DataFrame:
    """Cables by network, tier, type and length class (counts), without building the full list."""
    import pandas as pd

    rows = [{"network": g.network, "tier": g.tier, "cable": g.cable, "length class": g.length_class,
             "speed [Gb/s]": g.speed_gbps, "links": g.links, "cables": g.cables} for g in d.link_groups]
    return pd.DataFrame(rows)


__all__ = ["cable_list", "cable_summary", "COLUMNS", "math"]
