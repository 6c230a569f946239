"""Switch and link counts of folded-Clos (fat-tree), rail-optimised, tree and ring fabrics.

Pure integer arithmetic, no catalogue and no IO: :mod:`gpucluster_lib.network.topology` wires these
functions to a scenario. Every count is per fabric (compute or storage).

Conventions
-----------
* ``radix`` k: logical ports per switch at the link speed [count] (a 64 x 400G QM9700 has
  k = 64; a 64 x 800G SN5600 running 400G links through 2-way breakouts has k = 128).
* ``endpoints``: NIC ports attached to the fabric [count].
* ``oversubscription`` r: downlink : uplink bandwidth at a leaf (1 = non-blocking), Al-Fares
  et al. 2008, Sec. 2.1. Tiers above the leaves are built non-blocking.
* A *link* is one cable between two ports. Bandwidths are per direction [Gb/s].

Design rules (stated once, used everywhere)
-------------------------------------------
1. A leaf splits its ports into ``down`` and ``up = ceil(down / r)`` with ``down + up <= k``,
   maximising ``down`` (``leaf_port_split``); non-blocking gives k/2 + k/2.
2. Leaves are provisioned whole: every leaf cables all its ``up`` ports, also when its
   downlinks are not all used (NVIDIA DGX H100 SuperPOD RA, "Network Fabrics": "the fabric
   should be designed to support the full SU, including leaf switches and leaf-spine cables";
   Table 4: 1 SU of 31 nodes + UFM still has 8 x 32 = 256 leaf-spine cables).
3. Every leaf connects the same number of links ``p`` to every spine it reaches (balanced
   Clos, so that up/down routing spreads evenly): the spine count is the smallest divisor S of
   ``up`` with ``leaves x up / S <= k`` (this reproduces NVIDIA's 16 spines for 3 SUs, where
   ``ceil(768 / 64) = 12`` would not divide the 32 uplinks evenly).
4. Three tiers follow Al-Fares et al. 2008, Sec. 3.2 (k-ary fat tree): pods of k/2 leaves (whole
   groups) and ``up`` pod spines, each with k/2 ports down and k/2 up. A partial pod of n leaves
   gets ``ceil(n x up / (k/2))`` spines (its leaf uplinks over k/2 downlinks each), every spine
   uplinks as many links as it takes in, and the cores are ``ceil(spine uplinks / k)``: a
   non-blocking tree has N links at every tier boundary (NVIDIA DGX B200 SuperPOD, 16 SUs:
   4,096 / 4,096 / 4,096 links, 128 leaf / 128 spine / 64 core). Port-level wiring:
   :func:`three_tier_plan`.

References
----------
.. [1] M. Al-Fares, A. Loukissas, A. Vahdat, "A Scalable, Commodity Data Center Network
       Architecture", SIGCOMM 2008, pp. 63-74: k-ary fat tree, k^3/4 hosts, 5k^2/4 switches;
       oversubscription definition (Sec. 2.1).
.. [2] NVIDIA DGX SuperPOD reference architecture, DGX H100, Table 4 (scalable units of 32
       nodes, QM9700 leaf/spine counts and cables) and DGX B200 (three tiers from 16 SUs).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from gpucluster_lib.errors import ScenarioError


def _check_radix(radix: int, path: str = "network.switch") -> None:
    if isinstance(radix, bool) or not isinstance(radix, int) or radix < 2:
        raise ScenarioError(path, f"switch radix must be a whole number of ports of at least 2, got {radix!r}")


def _check_oversubscription(r: float, path: str = "network.oversubscription") -> None:
    if not (isinstance(r, (int, float)) and math.isfinite(r)) or r < 1:
        raise ScenarioError(path, f"must be at least 1 (1 = non-blocking, 2 = 2:1), got {r!r}")


def leaf_port_split(radix: int, oversubscription: float = 1.0) -> tuple[int, int]:
    """Ports down and up of a leaf switch for an oversubscription ratio.

    Parameters
    ----------
    radix : ports of the switch [count]
    oversubscription : downlink:uplink bandwidth ratio r >= 1 [-]

    Returns
    -------
    (down, up) : [count], with ``up = ceil(down / r)``, ``down + up <= radix`` and ``down``
        as large as possible; ties go to the larger ``up`` (more uplink bandwidth).

    Notes
    -----
    Non-blocking (r = 1) gives k/2 down and k/2 up (Al-Fares et al. 2008, Sec. 3.2).
    With k = 64 and r = 2: 42 down, 22 up (42/22 = 1.91 <= 2).
    """
    _check_radix(radix)
    _check_oversubscription(oversubscription)
    best = (0, 0)
    for up in range(1, radix):
        down = min(radix - up, math.floor(up * oversubscription + 1e-9))
        if down >= 1 and (down > best[0] or (down == best[0] and up > best[1])):
            best = (down, up)
    if best[0] < 1:
        raise ScenarioError("network.switch", f"a {radix}-port switch cannot split into downlinks and uplinks")
    return best


def balanced_divisor(up: int, groups: int, radix: int) -> int | None:
    """Smallest S dividing ``up`` with ``groups * up / S <= radix`` (rule 3), or None.

    Parameters
    ----------
    up : uplinks per lower switch [count]
    groups : lower switches that share the upper switches [count]
    radix : ports per upper switch [count]
    """
    for s in range(1, up + 1):
        if up % s == 0 and groups * (up // s) <= radix:
            return s
    return None


@dataclass(frozen=True)
class ClosCounts:
    """Counts of one folded-Clos fabric (1, 2 or 3 switch tiers).

    All fields are counts except ``oversubscription`` [-].
    """

    tiers: int
    radix: int
    endpoints: int
    leaves: int
    spines: int = 0
    cores: int = 0
    down_per_leaf: int = 0
    up_per_leaf: int = 0
    links_per_leaf_spine: int = 0  # p: parallel links between one leaf and one spine
    pods: int = 1
    leaves_per_pod: int = 0
    spines_per_pod: int = 0
    up_per_spine: int = 0
    cores_per_group: int = 0
    links_per_spine_core: int = 0
    oversubscription: float = 1.0
    node_leaf_links: int = 0
    leaf_spine_links: int = 0
    spine_core_links: int = 0
    fits: bool = True
    last_pod_leaves: int = 0  # three tiers: leaves of the last pod (= leaves_per_pod when it is full)
    last_pod_spines: int = 0  # three tiers: spines of the last pod (= spines_per_pod when it is full)
    notes: tuple[str, ...] = field(default=())

    @property
    def switches(self) -> int:
        return self.leaves + self.spines + self.cores

    @property
    def ports_total(self) -> int:
        return self.switches * self.radix

    @property
    def ports_used(self) -> int:
        """Switch ports with a cable in them (both ends of switch-switch links count)."""
        return self.node_leaf_links + 2 * self.leaf_spine_links + 2 * self.spine_core_links

    @property
    def ports_free(self) -> int:
        return self.ports_total - self.ports_used

    @property
    def switch_hops(self) -> int:
        """Switches on the longest shortest path between two endpoints [count]."""
        return 2 * self.tiers - 1

    @property
    def diameter_links(self) -> int:
        """Links on the longest shortest path between two endpoints [count]."""
        return 2 * self.tiers


def max_endpoints(radix: int, tiers: int, oversubscription: float = 1.0) -> int:
    """Largest number of endpoints a fabric of ``tiers`` tiers of k-port switches holds.

    Parameters
    ----------
    radix : k [count]
    tiers : 1, 2 or 3
    oversubscription : r at the leaves [-]

    Notes
    -----
    One tier: k. Two tiers: k leaves of ``down`` ports (each spine reaches every leaf once):
    k x down, = k^2/2 non-blocking. Three tiers: k pods of k/2 leaves: k^2/2 x down,
    = k^3/4 non-blocking (Al-Fares et al. 2008, Sec. 3.2).
    """
    _check_radix(radix)
    if tiers == 1:
        return radix
    down, _ = leaf_port_split(radix, oversubscription)
    if tiers == 2:
        return radix * down
    if tiers == 3:
        return radix * (radix // 2) * down
    raise ScenarioError("network.tiers", f"must be 1, 2 or 3, got {tiers!r}")


def clos_counts(endpoints: int, radix: int, oversubscription: float = 1.0, tiers: int | None = None, *,
                endpoints_per_group: int = 1, leaves_per_group: int | None = None,
                groups: int | None = None, down_per_leaf: int | None = None) -> ClosCounts:
    """Switch and link counts of a fat tree holding ``endpoints`` ports.

    Parameters
    ----------
    endpoints : NIC ports to attach [count]
    radix : k, ports per switch [count]
    oversubscription : r at the leaves [-] (>= 1)
    tiers : 1, 2 or 3; None = the fewest that hold the endpoints
    endpoints_per_group, leaves_per_group, groups, down_per_leaf :
        rail-optimised and node-aligned layouts pass whole groups (scalable units or nodes):
        ``groups`` groups each needing ``leaves_per_group`` leaves of ``down_per_leaf``
        provisioned downlinks; pods then hold whole groups. Default: endpoints packed into
        leaves of the maximal ``down``.

    Returns
    -------
    ClosCounts ; ``fits`` is False when the tiers asked for cannot hold the endpoints (the
    counts are then those of the fewest tiers that can, up to three).

    Notes
    -----
    Two tiers: leaves L = ceil(E / down); spines S = smallest divisor of ``up`` with
    L x up / S <= k (rule 3); links node-leaf = E, leaf-spine = L x up.
    Three tiers: pods of ``floor(k/2 / p1)`` leaves (whole groups); a pod of n leaves has
    ``ceil(n x up / (k/2))`` spines (``up`` in a full pod of k/2 leaves), each with as many
    uplinks as downlinks; spine-core links = leaf-spine links = L x up; cores =
    ceil(L x up / k); ``fits`` needs P <= k pods (every core reaches every pod). Examples:
    1,024 endpoints at k = 40 -> 52 leaves in pods of 20 + 20 + 12, 20 + 20 + 12 = 52 spines,
    1,040 links per tier, 26 cores. Checked against NVIDIA's DGX B200 SuperPOD table
    (16 SUs: 128 leaves, 128 spines, 64 cores, 4096 links per tier).
    """
    _check_radix(radix)
    _check_oversubscription(oversubscription)
    if isinstance(endpoints, bool) or not isinstance(endpoints, int) or endpoints < 0:
        raise ScenarioError("hardware.nodes", f"endpoints must be a whole number >= 0, got {endpoints!r}")
    if tiers is not None and tiers not in (1, 2, 3):
        raise ScenarioError("network.tiers", f"must be 1, 2 or 3, got {tiers!r}")
    notes: list[str] = []
    dmax, up = leaf_port_split(radix, oversubscription)
    if groups is None:
        down = dmax
        leaves = max(1, math.ceil(endpoints / down)) if endpoints else 0
        lpg = 1
    else:
        down = down_per_leaf or dmax
        if down > dmax:
            raise ScenarioError("network.scalable_unit_nodes",
                                f"{down} downlinks per leaf exceed the {dmax} a {radix}-port switch has at "
                                f"{oversubscription:g}:1")
        up = min(radix - down, math.ceil(down / oversubscription - 1e-9))
        lpg = leaves_per_group or 1
        leaves = groups * lpg

    def one_tier() -> ClosCounts:
        return ClosCounts(tiers=1, radix=radix, endpoints=endpoints, leaves=1 if endpoints else 0,
                          down_per_leaf=radix, up_per_leaf=0, oversubscription=1.0,
                          node_leaf_links=endpoints, fits=endpoints <= radix, notes=tuple(notes))

    def two_tier() -> ClosCounts | None:
        s = balanced_divisor(up, leaves, radix)
        if s is None:
            return None
        p = up // s
        return ClosCounts(tiers=2, radix=radix, endpoints=endpoints, leaves=leaves, spines=s,
                          down_per_leaf=down, up_per_leaf=up, links_per_leaf_spine=p,
                          leaves_per_pod=leaves, spines_per_pod=s,
                          oversubscription=down / up, node_leaf_links=endpoints,
                          leaf_spine_links=leaves * up, notes=tuple(notes))

    def three_tier(force: bool = False) -> ClosCounts | None:
        half = radix // 2
        p1 = 1
        lpp = half // p1
        if groups is not None:
            lpp = (lpp // lpg) * lpg
            if lpp == 0:
                notes.append(f"one scalable unit needs {lpg} leaves, more than the {half} a pod spine reaches")
                lpp = lpg
        pods = max(1, math.ceil(leaves / lpp))
        fits = pods <= radix  # every core switch reaches every pod at least once
        if not fits and not force:
            return None
        last = leaves - lpp * (pods - 1)  # leaves of the last (possibly partial) pod

        def pod_spines(n_leaves: int) -> int:
            # rule 4: the pod's leaf uplinks over k/2 downlinks per spine; a full pod of k/2 leaves -> up
            return max(1, math.ceil(n_leaves * up / half))

        sp, sp_last = pod_spines(lpp), pod_spines(last)
        spines = sp * (pods - 1) + sp_last
        up2 = math.ceil(lpp * up / sp)  # up = down on a spine of a full pod (non-blocking upper tiers)
        spine_core = leaves * up  # every spine uplinks what it takes in: N links at every tier boundary
        cores = max(1, math.ceil(spine_core / radix))
        g = max(1, math.ceil(cores / sp))  # cores per spine position (Al-Fares core groups)
        p2 = max(1, up2 // g)
        if last != lpp:
            notes.append(f"the last of {pods} pods holds {last} of {lpp} leaves: {sp_last} spine"
                         f"{'s' if sp_last > 1 else ''} there instead of {sp}, uplinked as they are downlinked")
            if up % sp_last:
                notes.append(f"in the partial pod a leaf's {up} uplinks spread unevenly over {sp_last} spines "
                             f"({up // sp_last} or {up // sp_last + 1} links per leaf-spine pair)")
        return ClosCounts(tiers=3, radix=radix, endpoints=endpoints, leaves=leaves, spines=spines,
                          cores=cores, down_per_leaf=down, up_per_leaf=up, links_per_leaf_spine=p1,
                          pods=pods, leaves_per_pod=lpp, spines_per_pod=sp, up_per_spine=up2,
                          cores_per_group=g, links_per_spine_core=p2, oversubscription=down / up,
                          node_leaf_links=endpoints, leaf_spine_links=leaves * up,
                          spine_core_links=spine_core, fits=fits, last_pod_leaves=last,
                          last_pod_spines=sp_last, notes=tuple(notes))

    if tiers is None:
        if endpoints <= radix:
            return one_tier()
        return two_tier() or three_tier(force=True)
    if tiers == 1:
        c1 = one_tier()
        return c1 if c1.fits else _mark_unfit(two_tier() or three_tier(force=True))
    if tiers == 2:
        c2 = two_tier()
        return c2 if c2 is not None else _mark_unfit(three_tier(force=True))
    return three_tier(force=True)  # type: ignore[return-value]


def three_tier_plan(c: ClosCounts):
    """Port-level wiring of a three-tier :class:`ClosCounts`, partial last pod included.

    Yields ``("leaf-spine", leaf, leaf_port, pod, spine, spine_port)`` and then
    ``("spine-core", pod, spine, spine_port, core, core_port)``; indices from 0, ports from 1.

    Notes
    -----
    In a pod of ``n`` leaves and ``S = ceil(n x up / (k/2))`` spines, the pod's leaf uplinks
    t = 0, 1, ... (leaf-major) go to spine ``t mod S`` (a full pod of k/2 leaves: leaf uplink q to
    spine q, Al-Fares 2008 Sec. 3.2), so no spine takes more than k/2. A spine with ``d``
    downlinks (ports 1..d) has ``d`` uplinks (ports k/2+1..k/2+d). All spine uplinks,
    numbered pod by pod, spine by spine, go to core ``t mod cores``: a core takes at most
    ``ceil(N / cores) <= k`` links and reaches every pod that has at least ``cores`` uplinks.
    """
    assert c.tiers == 3
    half = c.radix // 2
    lpp, up = c.leaves_per_pod, c.up_per_leaf
    down_count: dict[tuple[int, int], int] = {}
    for pod in range(c.pods):
        n = lpp if pod < c.pods - 1 else c.last_pod_leaves
        s = c.spines_per_pod if pod < c.pods - 1 else c.last_pod_spines
        for lj in range(n):
            for q in range(up):
                t = lj * up + q
                j = t % s
                port = down_count.get((pod, j), 0) + 1
                down_count[(pod, j)] = port
                yield ("leaf-spine", pod * lpp + lj, c.down_per_leaf + q + 1, pod, j, port)
    t = 0
    for (pod, j), d in sorted(down_count.items()):
        for q in range(d):
            yield ("spine-core", pod, j, half + q + 1, t % c.cores, t // c.cores + 1)
            t += 1


def _mark_unfit(c: ClosCounts | None) -> ClosCounts:
    assert c is not None  # three_tier(force=True) always returns counts
    return ClosCounts(**{**c.__dict__, "fits": False})


# --------------------------------------------------------------------------- simple fabrics


@dataclass(frozen=True)
class TreeCounts:
    """A tree of switches: every switch has one parent, reached over ``up`` parallel links."""

    tiers: int
    radix: int
    endpoints: int
    leaves: int
    middles: int
    roots: int
    down_per_leaf: int
    up_per_leaf: int
    oversubscription: float
    node_leaf_links: int
    leaf_up_links: int
    middle_root_links: int
    max_endpoints: int
    fits: bool


def tree_counts(endpoints: int, radix: int, oversubscription: float = 1.0) -> TreeCounts:
    """Counts of a (thin) tree: leaves with ``up`` bundled links to one parent, up to 3 tiers.

    Parameters
    ----------
    endpoints : [count]
    radix : k [count]
    oversubscription : r per tier [-]

    Notes
    -----
    Leaves split ``down``/``up`` as :func:`leaf_port_split`; a middle switch takes
    floor(down / up) leaves; the root takes floor(k / up) children. Largest tree:
    two tiers floor(k/up) x down, three tiers floor(k/up) x floor(down/up) x down endpoints.
    A non-blocking tree (r = 1) therefore never holds more than one switch's k ports: the
    root is the bottleneck, which is why fat trees replace it with many spines
    (Leiserson 1985, "Fat-trees", IEEE Trans. Computers C-34(10)).
    """
    _check_radix(radix)
    _check_oversubscription(oversubscription)
    down, up = leaf_port_split(radix, oversubscription)
    root_children = radix // up
    mid_children = down // up
    limit2 = root_children * down
    limit3 = root_children * mid_children * down
    if endpoints <= radix:
        return TreeCounts(1, radix, endpoints, 1, 0, 0, radix, 0, 1.0, endpoints, 0, 0, radix, True)
    leaves = math.ceil(endpoints / down)
    if leaves <= root_children:
        return TreeCounts(2, radix, endpoints, leaves, 0, 1, down, up, down / up, endpoints, leaves * up, 0,
                          limit2, True)
    middles = math.ceil(leaves / max(1, mid_children))
    fits = middles <= root_children and mid_children >= 1
    return TreeCounts(3, radix, endpoints, leaves, middles, 1, down, up, down / up, endpoints, leaves * up,
                      middles * up, limit3, fits)


@dataclass(frozen=True)
class RingCounts:
    """Nodes cabled in a ring, ``ports_per_node / 2`` parallel links to each neighbour."""

    nodes: int
    links_per_neighbour: int
    links: int
    diameter_links: int
    bisection_links: int


def ring_counts(nodes: int, ports_per_node: int) -> RingCounts:
    """Counts of a direct-connect ring.

    Parameters
    ----------
    nodes : N [count]
    ports_per_node : fabric ports per node P [count] (needs P >= 2)

    Notes
    -----
    Each node sends P/2 links to each neighbour: links = N x P/2 (N >= 3; N = 2 joins the
    two nodes with P links... counted once: P/2 x 2 = P; N = 1: none). Diameter floor(N/2)
    links; a bisection cuts two neighbour pairs: P links per direction.
    """
    if ports_per_node < 2:
        raise ScenarioError("network.nics_per_node",
                            f"a ring needs at least 2 fabric ports per node (one to each neighbour), got {ports_per_node}")
    half = ports_per_node // 2
    if nodes <= 1:
        return RingCounts(nodes, half, 0, 0, 0)
    if nodes == 2:
        return RingCounts(2, half, 2 * half, 1, 2 * half)
    return RingCounts(nodes, half, nodes * half, nodes // 2, 2 * half)
