"""Network topology: design the fabrics, count switches, cables and optics, and derive the
bandwidth the training engine sees.

:func:`design_topology` turns a scenario's ``network`` section (topology, switch, NIC,
oversubscription, tiers) and its node count into a :class:`TopologyDesign`: the compute
fabric (fat tree / leaf-spine, rail-optimised, tree, ring or a single switch), the
management (out-of-band Ethernet) network and the storage network, with switch, link,
cable and transceiver counts, power, rack units, bisection bandwidth and the per-GPU
all-reduce bandwidth. Design problems are findings; malformed input raises
:class:`~gpucluster_lib.errors.ScenarioError` naming the field.

Counting rules and their sources are in :mod:`gpucluster_lib.network.clos`; cable media in
:mod:`gpucluster_lib.network.cabling` (``data/cabling.yaml``); the drawing graph in
:mod:`gpucluster_lib.network.graph`.

References
----------
.. [1] M. Al-Fares, A. Loukissas, A. Vahdat, SIGCOMM 2008 (fat tree, oversubscription).
.. [2] NVIDIA DGX SuperPOD reference architectures, DGX H100 (Table 4) and DGX B200.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gpucluster_lib.catalog import Catalog
from gpucluster_lib.errors import ScenarioError
from gpucluster_lib.findings import Finding, sort_findings
from gpucluster_lib.formatting import plural
from gpucluster_lib.hardware.node import NodeDesign, build_node
from gpucluster_lib.hardware.rack import node_rack_fit
from gpucluster_lib.hardware.resolve import ClusterHardware, catalog_for, resolve_hardware
from gpucluster_lib.network.cabling import Cabling, load_cabling
from gpucluster_lib.network.clos import (
    ClosCounts,
    RingCounts,
    TreeCounts,
    clos_counts,
    leaf_port_split,
    max_endpoints,
    ring_counts,
    tree_counts,
)
from gpucluster_lib.scenario import Scenario

if TYPE_CHECKING:
    import pandas as pd

KINDS = ("fat-tree", "leaf-spine", "rail-optimized", "ring", "tree", "single-switch")

#: Leaf oversubscription of the management network: out-of-band traffic is light.
#: (NVIDIA's OOB SN2201 has 48 x 1G down and 4 x 100G up, so bandwidth is not its limit.)
MGMT_OVERSUBSCRIPTION = 4.0
#: Default file-system ports on the storage fabric per client port (an ESTIMATE: one
#: storage-server port per four client ports; set ``network.storage_target_ports``).
STORAGE_TARGET_PORTS_PER_CLIENT_PORT = 0.25
#: Largest breakout of one switch port into lower-speed links (QSFP/OSFP 4-lane cages).
MAX_BREAKOUT = 4
#: Rack units kept free in a compute rack for PDUs / a management switch.
RESERVED_RACK_UNITS = 2
#: Fallback NIC speed when neither the scenario nor the server names one (as hardware.py).
FALLBACK_LINK_GBPS = 200.0


@dataclass(frozen=True)
class SwitchGroup:
    """Switches of one role in one network, all of one catalogue model."""

    network: str  # compute / management / storage
    role: str  # leaf / spine / core / switch / root / middle
    switch_id: str
    count: int
    ports: int  # logical ports per switch at the link speed
    ports_used: int  # over all switches of the group
    rack_units_each: int
    power_w_each: float
    price_usd_each: float | None

    @property
    def ports_free(self) -> int:
        return self.count * self.ports - self.ports_used

    @property
    def power_w(self) -> float:
        return self.count * self.power_w_each

    @property
    def rack_units(self) -> int:
        return self.count * self.rack_units_each


@dataclass(frozen=True)
class LinkGroup:
    """Links of one tier boundary in one network, all in one length class and medium."""

    network: str
    tier: str  # node-leaf / leaf-spine / spine-core / node-node / leaf-root / ...
    links: int
    speed_gbps: float
    length_class: str
    cable: str
    part: str
    cables: int
    switch_end: str | None
    switch_end_modules: int
    node_end: str | None
    node_end_modules: int
    switch_side_power_w: float  # modules in switches + active cables [W]
    node_side_power_w: float  # modules in the nodes' NIC cages [W] (inside the node's power)


@dataclass
class TopologyDesign:
    """A designed cluster network. ``to_dict()`` is the ``gpucluster topology --json`` contract.

    Units: bandwidths [Gb/s] per direction, power [W], rack units [U], counts otherwise.
    """

    kind: str
    tiers: int
    nodes: int
    gpus_per_node: int
    ports_per_node: int
    endpoints: int
    link_gbps: float
    switch_id: str | None
    nic_id: str | None
    radix: int
    breakout: int
    switches: dict[str, int]
    links: dict[str, int]
    cables: dict[str, int]  # compute fabric: "<cable type>:<length class>" -> cables
    transceivers: dict[str, int]  # compute fabric: transceiver id -> modules (both ends)
    cables_all: dict[str, int]  # all networks (compute, management, storage)
    transceivers_all: dict[str, int]
    max_endpoints: int | None
    max_endpoints_by_tiers: dict[str, int]
    bisection_bandwidth_gbps: float
    oversubscription: float
    oversubscription_by_tier: dict[str, float]
    network_power_w: float
    network_rack_units: int
    per_gpu_allreduce_gbps: float
    injection_gbps_per_gpu: float
    switch_hops: int
    diameter_links: int
    ports_used: int
    ports_free: int
    scalable_unit_nodes: int | None
    scalable_units: int | None
    head_nodes: int
    fabric_manager_ports: int
    nodes_per_rack: int
    compute_racks: int
    rows: int
    switch_groups: tuple[SwitchGroup, ...]
    link_groups: tuple[LinkGroup, ...]
    findings: list[Finding]
    # internal: what the drawing and the cable list need
    counts: ClosCounts | TreeCounts | RingCounts | None = field(default=None, repr=False)
    mgmt_counts: ClosCounts | None = field(default=None, repr=False)
    storage_counts: ClosCounts | None = field(default=None, repr=False)
    leaves_per_su: int = 0
    nodes_per_leaf: int = 0

    # -- derived ------------------------------------------------------------------
    @property
    def node_side_transceiver_power_w(self) -> float:
        """Power of the modules in the nodes' NIC cages [W] (already in the node's maximum)."""
        return sum(g.node_side_power_w for g in self.link_groups)

    @property
    def switch_counts_by_model(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for g in self.switch_groups:
            out[g.switch_id] = out.get(g.switch_id, 0) + g.count
        return dict(sorted(out.items()))

    def network_summary(self) -> dict[str, dict[str, Any]]:
        """Per network (compute / management / storage): switches, power [W], rack units [U], links."""
        out: dict[str, dict[str, Any]] = {}
        for net in ("compute", "management", "storage"):
            sg = [g for g in self.switch_groups if g.network == net]
            lg = [g for g in self.link_groups if g.network == net]
            if not sg and not lg:
                continue
            out[net] = {
                "switches": sum(g.count for g in sg),
                "switch_models": sorted({g.switch_id for g in sg}),
                "links": sum(g.links for g in lg),
                "power_w": round(sum(g.power_w for g in sg) + sum(g.switch_side_power_w for g in lg), 1),
                "rack_units": sum(g.rack_units for g in sg),
            }
        return out

    def bom(self) -> list[dict[str, Any]]:
        """Bill of materials rows for the cost model: kind, id, count, network, unit power/price."""
        rows: list[dict[str, Any]] = []
        for g in self.switch_groups:
            rows.append({"kind": "switch", "id": g.switch_id, "network": g.network, "role": g.role,
                         "count": g.count, "power_w_each": g.power_w_each, "rack_units_each": g.rack_units_each,
                         "price_usd_each": g.price_usd_each})
        cab = load_cabling()
        for g in self.link_groups:
            rows.append({"kind": "cable", "id": f"{g.cable}:{g.length_class}:{g.speed_gbps:g}G", "network": g.network,
                         "role": g.tier, "count": g.cables, "part": g.part, "power_w_each": None,
                         "rack_units_each": 0, "price_usd_each": None})
            for tid, n in ((g.switch_end, g.switch_end_modules), (g.node_end, g.node_end_modules)):
                if tid and n:
                    t = cab.transceivers[tid]
                    rows.append({"kind": "transceiver", "id": tid, "network": g.network, "role": g.tier,
                                 "count": n, "power_w_each": t.power_w, "rack_units_each": 0,
                                 "price_usd_each": t.price_usd_estimate})
        return rows

    def counts_table(self) -> pd.DataFrame:
        """One row per switch group: network, role, model, count, ports, power, rack units."""
        import pandas as pd

        rows = [{"network": g.network, "role": g.role, "switch": g.switch_id, "count": g.count,
                 "ports each": g.ports, "ports used": g.ports_used, "ports free": g.ports_free,
                 "power [W]": round(g.power_w), "rack units [U]": g.rack_units} for g in self.switch_groups]
        return pd.DataFrame(rows, columns=["network", "role", "switch", "count", "ports each", "ports used",
                                           "ports free", "power [W]", "rack units [U]"])

    def links_table(self) -> pd.DataFrame:
        """One row per link group: network, tier, links, speed, length class, cable, modules."""
        import pandas as pd

        rows = [{"network": g.network, "tier": g.tier, "links": g.links, "speed [Gb/s]": g.speed_gbps,
                 "length class": g.length_class, "cable": g.cable, "cables": g.cables,
                 "switch-end module": g.switch_end or "", "switch-end modules": g.switch_end_modules,
                 "node-end module": g.node_end or "", "node-end modules": g.node_end_modules}
                for g in self.link_groups]
        return pd.DataFrame(rows)

    def cable_list(self) -> pd.DataFrame:
        """Every cable: A-end, B-end, cable type, length class (see :mod:`topology_cablelist`)."""
        from gpucluster_lib.network.cablelist import cable_list

        return cable_list(self)

    def to_dict(self) -> dict[str, Any]:
        """The CLI's JSON object (``gpucluster topology SCENARIO --json``)."""
        return {
            "kind": self.kind,
            "tiers": self.tiers,
            "nodes": self.nodes,
            "gpus_per_node": self.gpus_per_node,
            "ports_per_node": self.ports_per_node,
            "endpoints": self.endpoints,
            "link_gbps": self.link_gbps,
            "switch": self.switch_id,
            "nic": self.nic_id,
            "radix": self.radix,
            "breakout": self.breakout,
            "switches": dict(self.switches),
            "links": dict(self.links),
            "cables": dict(self.cables),
            "cables_total": sum(self.cables.values()),
            "transceivers": dict(self.transceivers),
            "transceivers_total": sum(self.transceivers.values()),
            "cables_all_networks": dict(self.cables_all),
            "transceivers_all_networks": dict(self.transceivers_all),
            "max_endpoints": self.max_endpoints,
            "max_endpoints_by_tiers": dict(self.max_endpoints_by_tiers),
            "bisection_bandwidth_gbps": self.bisection_bandwidth_gbps,
            "oversubscription": self.oversubscription,
            "oversubscription_by_tier": dict(self.oversubscription_by_tier),
            "network_power_w": self.network_power_w,
            "network_rack_units": self.network_rack_units,
            "node_side_transceiver_power_w": round(self.node_side_transceiver_power_w, 1),
            "per_gpu_allreduce_gbps": self.per_gpu_allreduce_gbps,
            "injection_gbps_per_gpu": self.injection_gbps_per_gpu,
            "switch_hops": self.switch_hops,
            "diameter_links": self.diameter_links,
            "ports_used": self.ports_used,
            "ports_free": self.ports_free,
            "scalable_unit_nodes": self.scalable_unit_nodes,
            "scalable_units": self.scalable_units,
            "head_nodes": self.head_nodes,
            "fabric_manager_ports": self.fabric_manager_ports,
            "layout": {"nodes_per_rack": self.nodes_per_rack, "compute_racks": self.compute_racks,
                       "rows": self.rows},
            "switches_by_model": self.switch_counts_by_model,
            "networks": self.network_summary(),
            "findings": [f.to_dict() for f in sort_findings(self.findings)],
        }


# --------------------------------------------------------------------------- helpers


def _switch_power_w(sw: dict) -> float:
    """Switch power without optics [W]: typical with passive cables where given, else the maximum.

    NVIDIA's QM9700 maximum (1,720 W "with active optics") is about its typical 747 W plus
    64 ports x 15 W modules, so typical + counted transceivers reproduces the maximum.
    """
    return float(sw.get("typical_power_w") or sw["max_power_w"])


def _protocol_ok(nic_protocol: str, switch_protocol: str) -> bool:
    return nic_protocol == "VPI" or nic_protocol == switch_protocol


def default_switch(catalog: Catalog, speed_gbps: float, protocol: str = "VPI") -> dict:
    """The catalogue switch for NICs of ``speed_gbps``: the slowest ports >= that speed; for VPI NICs
    InfiniBand before Ethernet (an Ethernet RoCE fabric is chosen by naming its switch); then fixed
    1-2U switches before modular chassis, then the most ports."""
    rows = [r for r in catalog.records("switches") if _protocol_ok(protocol, r["protocol"])
            and r["port_speed_gbps"] >= speed_gbps and r["ports"] >= 16]
    if not rows:
        rows = [r for r in catalog.records("switches") if r["ports"] >= 16]
    rows.sort(key=lambda r: (r["port_speed_gbps"], r["protocol"] != "InfiniBand", int(r["rack_units"]) > 2,
                             -r["ports"], r["id"]))
    return rows[0]


def side_switch(catalog: Catalog, speed_gbps: float, protocol: str, ports_needed: int,
                fallback: dict | None = None) -> dict:
    """The switch of a side network (management, storage) when the scenario names none.

    Among the catalogue switches of a compatible protocol whose ports run at >= ``speed_gbps``:
    the lowest-power one that holds all ``ports_needed`` links alone (after breakouts); when
    none does, ``fallback`` (the compute switch, for storage) or the one with most logical ports.
    """
    rows = [r for r in catalog.records("switches") if _protocol_ok(protocol, r["protocol"])
            and r["port_speed_gbps"] >= speed_gbps]
    if not rows:
        return fallback or default_switch(catalog, speed_gbps, protocol)
    fixed = [r for r in rows if int(r["rack_units"]) <= 2]  # modular spine chassis only when named
    rows = fixed or rows
    radix = {r["id"]: int(r["ports"]) * _link(r, speed_gbps)[1] for r in rows}
    fits = [r for r in rows if radix[r["id"]] >= ports_needed]
    if fits:
        return min(fits, key=lambda r: (_switch_power_w(r), r["rack_units"], r["id"]))
    if fallback is not None and _protocol_ok(protocol, fallback["protocol"]) and \
            fallback["port_speed_gbps"] >= speed_gbps:
        return fallback
    return max(rows, key=lambda r: (radix[r["id"]], -_switch_power_w(r), r["id"]))


def _link(switch: dict, nic_speed: float) -> tuple[float, int]:
    """(link speed [Gb/s], breakout factor) for NIC ports of ``nic_speed`` on ``switch``."""
    sp = float(switch["port_speed_gbps"])
    if sp >= 2 * nic_speed:
        ratio = int(sp // nic_speed)
        b = 1
        while b * 2 <= min(ratio, MAX_BREAKOUT):
            b *= 2
        return nic_speed, b
    return min(sp, nic_speed), 1


def default_nodes_per_rack(scenario: Scenario, node: NodeDesign, server: dict | None = None) -> int:
    """Compute nodes per rack: the rack fit of the node (:func:`gpucluster_lib.hardware.rack.node_rack_fit`,
    the same one the facility budget packs racks with; ``server`` its catalogue row)."""
    return node_rack_fit(scenario, node, server).nodes_per_rack


@dataclass(frozen=True)
class _Layout:
    nodes_per_rack: int
    racks: int
    racks_per_row: int
    cab: Cabling

    @property
    def rows(self) -> int:
        return math.ceil(self.racks / self.racks_per_row)

    def racks_for(self, nodes: int) -> int:
        return max(1, math.ceil(nodes / self.nodes_per_rack))

    def inter_rack(self, nodes: int) -> str:
        """Length class of links from ``nodes`` nodes' racks to a central network rack."""
        return self.cab.length_class_for(self.cab.span_m(self.racks_for(nodes), self.racks_per_row))

    def access(self, nodes_per_switch: int) -> str:
        """in-rack when a switch's nodes fit one rack (top-of-rack), else to the row's network rack."""
        if nodes_per_switch <= self.nodes_per_rack:
            return "in-rack"
        return self.inter_rack(nodes_per_switch)


def _link_group(cab: Cabling, network: str, tier: str, links: int, speed: float, length_class: str, *,
                switch_ends: int, node_twin_modules: int | None = None) -> LinkGroup | None:
    """Cables and modules of ``links`` links; ``switch_ends`` is 2 for switch-switch, 1 for node-switch."""
    if links <= 0:
        return None
    m = cab.medium(speed, length_class)
    cables = math.ceil(links / m.links_per_cable)
    sw_mod = node_mod = 0
    sw_w = node_w = 0.0
    if m.switch_end:
        t = cab.transceivers[m.switch_end]
        sw_mod = switch_ends * math.ceil(links / t.links)
        sw_w += sw_mod * t.power_w
    node_id = None
    if switch_ends == 1 and (m.node_end or m.node_end_twin):
        if node_twin_modules is not None and m.node_end_twin:
            node_id, node_mod = m.node_end_twin, node_twin_modules
        else:
            node_id = m.node_end
            node_mod = math.ceil(links / cab.transceivers[node_id].links) if node_id else 0
        if node_id:
            node_w = node_mod * cab.transceivers[node_id].power_w
    elif switch_ends == 2 and m.switch_end:
        pass
    sw_w += cables * m.power_w_per_cable
    return LinkGroup(network, tier, links, speed, length_class, m.cable, m.part, cables,
                     m.switch_end, sw_mod, node_id, node_mod, round(sw_w, 1), round(node_w, 1))


def _locality_factor(nodes: int, local_nodes: int) -> float:
    """Fraction of a node's peers outside its leaf, (N - g) / (N - 1), under uniform traffic."""
    if nodes <= 1:
        return 0.0
    return max(0.0, min(1.0, (nodes - min(local_nodes, nodes)) / (nodes - 1)))


def effective_port_gbps(link_gbps: float, oversubscription: float, outside_fraction: float) -> float:
    """Per-port bandwidth [Gb/s] when a fraction of the traffic leaves an oversubscribed leaf.

    Parameters
    ----------
    link_gbps : link speed s [Gb/s]
    oversubscription : leaf downlink:uplink ratio r [-]
    outside_fraction : x, share of a port's traffic that goes through the leaf's uplinks [-]

    Notes
    -----
    A leaf with d ports down and u = d / r up carries d x b x x of leaving traffic on u x s
    of uplinks, so b <= s / (r x). Hence b = s x min(1, 1 / (r x)). Al-Fares et al. 2008,
    Sec. 2.1: with r:1 oversubscription only 1/r of the host bandwidth is available for some
    communication patterns (x = 1); traffic kept under the leaf (x < 1, as rail alignment
    does for same-rail GPUs of one scalable unit) is not slowed.
    """
    load = oversubscription * outside_fraction
    return link_gbps if load <= 1 else link_gbps / load


# --------------------------------------------------------------------------- design


def design_topology(scenario: Scenario, catalog: Catalog | None = None, *, nodes: int | None = None,
                    side_networks: bool = True, hardware: ClusterHardware | None = None,
                    node: NodeDesign | None = None) -> TopologyDesign:
    """Design the scenario's networks and count everything.

    Parameters
    ----------
    scenario : the scenario (``network``, ``hardware``, ``facility`` sections)
    catalog : the catalogue (default: the scenario's)
    nodes : override of ``hardware.nodes`` [count] (for growth charts)
    side_networks : also design the management and storage networks (False: compute fabric
        only, for growth charts and bandwidth look-ups)
    hardware : the resolved hardware (default: resolved from the scenario)
    node : the built node (default: built from the scenario), for the racks' layout when
        ``network.nodes_per_rack`` is not given

    Returns
    -------
    TopologyDesign

    Raises
    ------
    ScenarioError, UnknownIdError : malformed input (unknown switch/NIC id, nodes < 1).
    """
    cat = catalog or catalog_for(scenario)
    hw = hardware if hardware is not None else resolve_hardware(scenario, cat)
    if nodes is not None:
        if isinstance(nodes, bool) or not isinstance(nodes, int) or nodes < 1:
            raise ScenarioError("hardware.nodes", f"must be a positive integer, got {nodes!r}")
        n = nodes
    else:
        n = hw.nodes
    net = scenario.network
    server = hw.server or {}
    gpn = hw.gpus_per_node
    cab = load_cabling()
    findings: list[Finding] = []
    kind = net.topology

    # -- NIC and switch ---------------------------------------------------------
    nic_id = net.nic or server.get("compute_nic_id")
    nic = cat.get("nics", nic_id, path="network.nic" if net.nic else "hardware.server") if nic_id else None
    if nic is not None:
        nic_speed, nic_ports, nic_protocol = float(nic["speed_gbps"]), int(nic["ports"]), nic["protocol"]
        nics = net.nics_per_node or server.get("compute_nic_count") or gpn
    else:
        nic_speed, nic_ports, nic_protocol = FALLBACK_LINK_GBPS, 1, "VPI"
        nics = net.nics_per_node or gpn
        findings.append(Finding("topology-no-nic", "info",
                                f"no compute NIC named: assumed {nics} x {nic_speed:g} Gb/s per node",
                                "name the compute NIC (one of the catalogue's NICs)", "network.nic"))
    ports_per_node = int(nics) * nic_ports
    switch: dict | None = None
    if net.switch:
        switch = cat.get("switches", net.switch, path="network.switch")
    elif kind != "ring":
        switch = default_switch(cat, nic_speed, nic_protocol)
        findings.append(Finding("topology-default-switch", "info",
                                f"no switch named: using {switch['id']} ({switch['ports']} x "
                                f"{switch['port_speed_gbps']:g} Gb/s)", "name the compute switch", "network.switch"))
    if switch is not None:
        link_gbps, breakout = _link(switch, nic_speed)
        radix = int(switch["ports"]) * breakout
        if not _protocol_ok(nic_protocol, switch["protocol"]):
            findings.append(Finding("topology-protocol-mismatch", "error",
                                    f"{nic_id} is {nic_protocol} but {switch['id']} is {switch['protocol']}",
                                    "pick a switch and NIC of the same protocol (or a VPI NIC)", "network.switch"))
        if switch["port_speed_gbps"] < nic_speed:
            findings.append(Finding("topology-slow-switch", "warning",
                                    f"{switch['id']} ports run at {switch['port_speed_gbps']:g} Gb/s, below the "
                                    f"{nic_speed:g} Gb/s NICs: links run at {link_gbps:g} Gb/s",
                                    "pick a switch as fast as the NICs", "network.switch"))
        if breakout > 1:
            findings.append(Finding("topology-breakout", "info",
                                    f"each {switch['port_speed_gbps']:g} Gb/s port is split into {breakout} x "
                                    f"{link_gbps:g} Gb/s links: {radix} logical ports per switch"))
    else:
        link_gbps, breakout, radix = nic_speed, 1, 0
    r = net.oversubscription
    injection = ports_per_node * link_gbps / gpn
    # multi-plane: each node's fabric ports are split over `planes` identical, independent fabrics
    # (plane i takes port i of every node); each plane is designed alone, then counted `planes` times
    planes = net.planes if kind not in ("ring",) else 1
    node_ports_total = ports_per_node
    if planes > 1:
        if ports_per_node % planes:
            findings.append(Finding("topology-planes-uneven", "warning",
                                    f"{ports_per_node} fabric ports per node do not split evenly over {planes} "
                                    f"planes: each plane takes {math.ceil(ports_per_node / planes)} (rounded up)",
                                    "use a plane count that divides the ports per node", "network.planes"))
        ports_per_node = math.ceil(ports_per_node / planes)
    fm = math.ceil(net.fabric_manager_ports / planes) if planes > 1 else net.fabric_manager_ports
    endpoints = n * ports_per_node + fm

    npr = net.nodes_per_rack or default_nodes_per_rack(
        scenario, node if node is not None else build_node(scenario, cat, hardware=hw), hw.server)
    racks = math.ceil(n / npr) * max(1, hw.racks_per_node)
    lay = _Layout(npr, racks, net.racks_per_row, cab)

    switch_groups: list[SwitchGroup] = []
    link_groups: list[LinkGroup] = []
    twin = server.get("id") in cab.twin_port_servers

    def node_modules(nodes_: int) -> int | None:
        return nodes_ * math.ceil(ports_per_node / 2) if twin else None

    def add_switches(network: str, role: str, sw: dict, count: int, ports: int, used: int) -> None:
        if count > 0:
            switch_groups.append(SwitchGroup(network, role, sw["id"], count, ports, used, int(sw["rack_units"]),
                                             _switch_power_w(sw), sw.get("price_usd_estimate")))

    def add_links(*args: Any, **kw: Any) -> None:
        g = _link_group(cab, *args, **kw)
        if g is not None:
            link_groups.append(g)

    counts: ClosCounts | TreeCounts | RingCounts | None = None
    su_nodes = su_count = None
    leaves_per_su = nodes_per_leaf = 0
    by_tiers: dict[str, int] = {}
    max_ep: int | None
    switches = {"leaf": 0, "spine": 0, "core": 0}
    links = {"node_leaf": 0, "leaf_spine": 0, "spine_core": 0}
    over_tier: dict[str, float] = {}
    tiers = 0
    hops = diameter = 0
    bisection = 0.0
    per_port = link_gbps

    if kind == "ring":
        if net.tiers is not None:
            findings.append(Finding("topology-tiers-ignored", "info", "a ring has no switch tiers",
                                    "leave the number of switch tiers unset", "network.tiers"))
        if fm:
            findings.append(Finding("topology-fm-ignored", "info",
                                    "a ring has no switch for the fabric manager ports", "", "network.fabric_manager_ports"))
        rc = ring_counts(n, ports_per_node)
        counts = rc
        endpoints = n * ports_per_node
        links = {"node_node": rc.links}
        max_ep = None
        bisection = rc.bisection_links * link_gbps
        diameter = rc.diameter_links
        hops = 0
        if racks > 1 and n > 2:
            cross = racks * rc.links_per_neighbour
            add_links("compute", "node-node", rc.links - cross, link_gbps, "in-rack", switch_ends=2)
            add_links("compute", "node-node", cross, link_gbps, lay.inter_rack(n), switch_ends=2)
        else:
            add_links("compute", "node-node", rc.links, link_gbps, "in-rack", switch_ends=2)
        # direct node-node optics sit in NIC cages: count them as node-side modules
        link_groups[:] = [LinkGroup(g.network, g.tier, g.links, g.speed_gbps, g.length_class, g.cable, g.part,
                                    g.cables, None, 0, g.switch_end, g.switch_end_modules, 0.0,
                                    g.switch_side_power_w) for g in link_groups]
        if n > 8:
            findings.append(Finding("topology-ring-large", "warning",
                                    f"a ring of {n} nodes is {rc.diameter_links} hops across and one broken link "
                                    "splits it into a line", "use a switched fabric (fat-tree) beyond a few nodes",
                                    "network.topology"))
    elif kind == "tree":
        assert switch is not None
        tc = tree_counts(endpoints, radix, r)
        counts = tc
        tiers = tc.tiers
        max_ep = tc.max_endpoints
        down, up = leaf_port_split(radix, r)
        by_tiers = {"1": radix, "2": (radix // up) * down, "3": (radix // up) * (down // up) * down}
        switches = {"leaf": tc.leaves if tiers > 1 else 0, "spine": tc.middles, "core": tc.roots}
        if tiers == 1:
            switches = {"leaf": 1, "spine": 0, "core": 0}
        links = {"node_leaf": endpoints, "leaf_spine": tc.leaf_up_links, "spine_core": tc.middle_root_links}
        hops, diameter = 2 * tiers - 1, 2 * tiers
        nodes_per_leaf = max(1, (tc.down_per_leaf // ports_per_node)) if ports_per_node <= tc.down_per_leaf else 1
        if not tc.fits:
            findings.append(_over_capacity(endpoints, tc.max_endpoints, "a three-level tree", radix))
        add_switches("compute", "leaf" if tiers > 1 else "switch", switch, switches["leaf"], radix, endpoints + tc.leaf_up_links)
        add_switches("compute", "middle", switch, tc.middles, radix, tc.leaf_up_links + tc.middle_root_links)
        add_switches("compute", "root", switch, tc.roots, radix, tc.middle_root_links or tc.leaf_up_links)
        add_links("compute", "node-leaf", endpoints, link_gbps, lay.access(nodes_per_leaf), switch_ends=1,
                  node_twin_modules=node_modules(n))
        add_links("compute", "leaf-root" if tiers == 2 else "leaf-middle", tc.leaf_up_links, link_gbps,
                  lay.inter_rack(n), switch_ends=2)
        add_links("compute", "middle-root", tc.middle_root_links, link_gbps, lay.inter_rack(n), switch_ends=2)
        if tiers == 1:
            bisection = endpoints / 2 * link_gbps
        else:
            top = tc.leaf_up_links if tiers == 2 else tc.middle_root_links
            bisection = min(endpoints, top) / 2 * link_gbps
            x1 = _locality_factor(n, nodes_per_leaf)
            per_port = effective_port_gbps(link_gbps, tc.oversubscription, x1)
            if tiers == 3:
                mid_nodes = nodes_per_leaf * max(1, tc.down_per_leaf // tc.up_per_leaf)
                x2 = _locality_factor(n, mid_nodes)
                c = max(1, tc.down_per_leaf // tc.up_per_leaf)
                per_port = min(per_port, effective_port_gbps(link_gbps, tc.oversubscription * c, x2))
            over_tier = {"leaf": round(tc.oversubscription, 3)}
        if r == 1 and tiers > 1:
            findings.append(Finding("topology-tree-nonblocking", "info",
                                    "a non-blocking tree never holds more than one switch's ports; its root is "
                                    "the bottleneck", "use fat-tree for more endpoints", "network.topology"))
    else:
        assert switch is not None
        dmax, _ = leaf_port_split(radix, r)
        rail = kind == "rail-optimized"
        forced_tiers = 1 if kind == "single-switch" else net.tiers
        slots_fm = math.ceil(fm / ports_per_node) if fm else 0
        if rail:
            if ports_per_node != gpn:
                findings.append(Finding("topology-rail-misaligned", "warning",
                                        f"rail-optimised wiring wants one NIC port per GPU: {ports_per_node} ports "
                                        f"for {gpn} GPUs per node", "use as many NICs per node as GPUs",
                                        "network.nics_per_node"))
            su_nodes = net.scalable_unit_nodes or dmax
            m = math.ceil(su_nodes / dmax)
            down = math.ceil(su_nodes / m)
            leaves_per_su = ports_per_node * m
            su_count = math.ceil((n + slots_fm) / su_nodes)
            nodes_per_leaf = down
            if m > 1:
                findings.append(Finding("topology-su-split", "info",
                                        f"a scalable unit of {su_nodes} nodes needs {m} leaves per rail "
                                        f"({dmax} downlinks each)", "", "network.scalable_unit_nodes"))
            if (n + slots_fm) % su_nodes and su_count > 1:
                findings.append(Finding("topology-partial-su", "info",
                                        f"{n} nodes{' + fabric manager' if fm else ''} fill {su_count} scalable units "
                                        f"of {su_nodes} only partly: {su_count * su_nodes - n - slots_fm} node slots "
                                        "are free", "", "hardware.nodes"))
            cc = clos_counts(endpoints, radix, r, forced_tiers, groups=su_count, leaves_per_group=leaves_per_su,
                             down_per_leaf=down)
            by_tiers = {"1": radix, "2": (radix // leaves_per_su) * su_nodes * ports_per_node,
                        "3": radix * ((radix // 2) // leaves_per_su) * su_nodes * ports_per_node}
        else:
            if ports_per_node <= dmax:
                nodes_per_leaf = dmax // ports_per_node
                groups = math.ceil((n + slots_fm) / nodes_per_leaf)
                cc = clos_counts(endpoints, radix, r, forced_tiers, groups=groups, leaves_per_group=1,
                                 down_per_leaf=nodes_per_leaf * ports_per_node)
                per_leaf = nodes_per_leaf * ports_per_node
                if per_leaf < dmax and endpoints > radix:
                    findings.append(Finding(
                        "topology-node-aligned-limit", "info",
                        f"node-aligned leaves hold whole nodes: {nodes_per_leaf} x {ports_per_node} ports = "
                        f"{per_leaf} of {dmax} downlinks used, so two tiers of {radix}-port switches hold "
                        f"{radix * per_leaf:,} endpoints, not {max_endpoints(radix, 2, r):,} (k^2/2 at "
                        f"{r:g}:1), and three tiers {radix * (radix // 2) * per_leaf:,}, not "
                        f"{max_endpoints(radix, 3, r):,}",
                        "rail-optimized wiring, or a switch whose downlinks are a multiple of the ports per node, "
                        "uses every leaf port", "network.topology"))
            else:
                nodes_per_leaf = 1
                cc = clos_counts(endpoints, radix, r, forced_tiers)
                per_leaf = dmax
            by_tiers = {"1": radix, "2": radix * per_leaf, "3": radix * (radix // 2) * per_leaf}
        counts = cc
        tiers = cc.tiers
        if cc.tiers == 3 and cc.last_pod_leaves != cc.leaves_per_pod:
            findings.append(Finding("topology-partial-pod", "info",
                                    "; ".join(n for n in cc.notes if "pod" in n and "scalable unit" not in n),
                                    "", "hardware.nodes"))
        if cc.tiers == 1 and endpoints <= radix:
            nodes_per_leaf = n
        max_ep = by_tiers[str(tiers)] if tiers in (1, 2, 3) else max_endpoints(radix, 3, r)
        if not cc.fits:
            if forced_tiers is not None and forced_tiers < 3 and endpoints <= by_tiers["3"]:
                fld = "network.topology" if kind == "single-switch" else "network.tiers"
                findings.append(Finding(
                    "topology-too-few-tiers", "error",
                    f"{forced_tiers} tier{'s' if forced_tiers > 1 else ''} of {radix}-port switches hold at most "
                    f"{by_tiers[str(forced_tiers)]:,} endpoints; {endpoints:,} asked. The counts shown use "
                    f"{tiers} tiers",
                    "use fat-tree / more tiers, or a switch with more ports", fld))
            else:
                findings.append(_over_capacity(endpoints, by_tiers["3"], "three tiers", radix))
        elif net.tiers is not None and kind != "single-switch":
            fewest = clos_counts(endpoints, radix, r, None, **({"groups": su_count, "leaves_per_group": leaves_per_su,
                                                                 "down_per_leaf": nodes_per_leaf} if rail else {})).tiers
            if fewest < tiers:
                findings.append(Finding("topology-extra-tiers", "info",
                                        f"{tiers} tiers asked where {fewest} would hold {endpoints:,} endpoints: "
                                        "more switches and hops than needed", f"use {fewest} switch tiers",
                                        "network.tiers"))
        if tiers == 1:
            switches = {"leaf": 1, "spine": 0, "core": 0}
            links = {"node_leaf": endpoints, "leaf_spine": 0, "spine_core": 0}
            add_switches("compute", "switch", switch, 1, radix, endpoints)
            add_links("compute", "node-switch", endpoints, link_gbps,
                      "in-rack" if racks == 1 else lay.inter_rack(n), switch_ends=1, node_twin_modules=node_modules(n))
            bisection = endpoints / 2 * link_gbps
            over_tier = {"switch": 1.0}
        else:
            switches = {"leaf": cc.leaves, "spine": cc.spines, "core": cc.cores}
            links = {"node_leaf": cc.node_leaf_links, "leaf_spine": cc.leaf_spine_links,
                     "spine_core": cc.spine_core_links}
            add_switches("compute", "leaf", switch, cc.leaves, radix, cc.node_leaf_links + cc.leaf_spine_links)
            add_switches("compute", "spine", switch, cc.spines, radix, cc.leaf_spine_links + cc.spine_core_links)
            add_switches("compute", "core", switch, cc.cores, radix, cc.spine_core_links)
            access = lay.inter_rack(su_nodes or 1) if rail and lay.racks_for(su_nodes or 1) > 1 else (
                "in-rack" if rail else lay.access(nodes_per_leaf))
            add_links("compute", "node-leaf", cc.node_leaf_links, link_gbps, access, switch_ends=1,
                      node_twin_modules=node_modules(n))
            if tiers == 2:
                add_links("compute", "leaf-spine", cc.leaf_spine_links, link_gbps, lay.inter_rack(n), switch_ends=2)
            else:
                per_group = (su_nodes if rail else nodes_per_leaf) or 1
                groups_per_pod = cc.leaves_per_pod // (leaves_per_su if rail else 1)
                add_links("compute", "leaf-spine", cc.leaf_spine_links, link_gbps,
                          lay.inter_rack(min(n, groups_per_pod * per_group)), switch_ends=2)
                add_links("compute", "spine-core", cc.spine_core_links, link_gbps, lay.inter_rack(n), switch_ends=2)
            cap = min(endpoints, cc.leaves * cc.up_per_leaf)
            if tiers == 3:
                cap = min(cap, cc.spine_core_links)
            bisection = cap / 2 * link_gbps
            x = _locality_factor(n, nodes_per_leaf)
            per_port = effective_port_gbps(link_gbps, cc.oversubscription, x)
            over_tier = {"leaf": round(cc.oversubscription, 3)}
            if tiers == 3:
                # every spine uplinks as many links as it takes in from its leaves (non-blocking)
                over_tier["spine"] = round(cc.leaf_spine_links / max(1, cc.spine_core_links), 3)
            if r > 1 and abs(cc.oversubscription - r) > 0.05:
                findings.append(Finding("topology-oversubscription-rounded", "info",
                                        f"{r:g}:1 asked; whole ports give {cc.down_per_leaf} down / "
                                        f"{cc.up_per_leaf} up = {cc.oversubscription:.2f}:1", "",
                                        "network.oversubscription"))
        hops, diameter = 2 * tiers - 1, 2 * tiers
    if kind == "leaf-spine" and switch is not None and switch["protocol"] == "InfiniBand":
        findings.append(Finding("topology-leaf-spine-ib", "info",
                                "leaf-spine is the Ethernet/RoCE name of a two-tier fat tree; counted the same",
                                "", "network.topology"))
    if kind in ("rail-optimized", "fat-tree", "leaf-spine", "tree") and r > 1:
        findings.append(Finding("topology-oversubscribed", "info",
                                f"leaves are {r:g}:1 oversubscribed: traffic leaving a leaf gets "
                                f"{per_port / link_gbps:.0%} of the link rate under uniform load",
                                "", "network.oversubscription"))

    if planes > 1:
        switch_groups[:] = [dataclasses.replace(g, count=g.count * planes, ports_used=g.ports_used * planes)
                            for g in switch_groups]
        link_groups[:] = [dataclasses.replace(
            g, links=g.links * planes, cables=g.cables * planes, switch_end_modules=g.switch_end_modules * planes,
            node_end_modules=g.node_end_modules * planes, switch_side_power_w=g.switch_side_power_w * planes,
            node_side_power_w=g.node_side_power_w * planes) for g in link_groups]
        switches = {k: v * planes for k, v in switches.items()}
        links = {k: v * planes for k, v in links.items()}
        bisection *= planes
        endpoints *= planes
        fm = net.fabric_manager_ports
        if max_ep is not None:
            max_ep *= planes
        findings.append(Finding("topology-planes", "info",
                                f"{planes} independent planes of {plural(ports_per_node, 'port')} per node each: every "
                                "count above is one plane's times the planes", "", "network.planes"))
        ports_per_node = node_ports_total
    per_gpu = injection * per_port / link_gbps if n > 1 else injection
    compute_switches = sum(g.count for g in switch_groups)

    def add_side_network(name: str, cc: Any, sw: dict[str, Any], radix: int, endpoints: int,
                         link: Any, ports_per_node: int) -> None:
        """Switches and links of a storage or management network sized by ``clos_counts``."""
        if cc.tiers == 1:
            add_switches(name, "switch", sw, 1, radix, endpoints)
            add_links(name, "node-switch", endpoints, link, "in-rack" if racks == 1 else lay.inter_rack(n),
                      switch_ends=1)
            return
        add_switches(name, "leaf", sw, cc.leaves, radix, cc.node_leaf_links + cc.leaf_spine_links)
        add_switches(name, "spine", sw, cc.spines, radix, cc.leaf_spine_links + cc.spine_core_links)
        add_switches(name, "core", sw, cc.cores, radix, cc.spine_core_links)
        add_links(name, "node-leaf", endpoints, link, lay.access(max(1, cc.down_per_leaf // max(1, ports_per_node))),
                  switch_ends=1)
        add_links(name, "leaf-spine", cc.leaf_spine_links, link, lay.inter_rack(n), switch_ends=2)
        add_links(name, "spine-core", cc.spine_core_links, link, lay.inter_rack(n), switch_ends=2)

    # -- storage network ---------------------------------------------------------
    storage_cc = None
    storage_switches = 0
    if net.storage_network and n == 1 and side_networks:
        findings.append(Finding("topology-storage-single-node", "info",
                                "one node: no separate storage fabric; its file system is local or reached "
                                "over the management network", "", "network.storage_network"))
    if net.storage_network and n > 1 and side_networks:
        spn = net.storage_ports_per_node if net.storage_ports_per_node is not None else (
            server.get("storage_nic_count") or 1)
        snic_id = server.get("storage_nic_id")
        s_speed = float(cat.get("nics", snic_id)["speed_gbps"]) if snic_id else nic_speed
        clients = n * spn
        targets = net.storage_target_ports if net.storage_target_ports is not None else math.ceil(
            clients * STORAGE_TARGET_PORTS_PER_CLIENT_PORT)
        s_ep = clients + targets + scenario.hardware.head_nodes
        s_protocol = cat.get("nics", snic_id)["protocol"] if snic_id else nic_protocol
        ssw = cat.get("switches", net.storage_switch, path="network.storage_switch") if net.storage_switch else (
            side_switch(cat, s_speed, s_protocol, s_ep, fallback=switch))
        s_link, s_b = _link(ssw, s_speed)
        s_radix = int(ssw["ports"]) * s_b
        storage_cc = clos_counts(s_ep, s_radix, net.storage_oversubscription)
        add_side_network("storage", storage_cc, ssw, s_radix, s_ep, s_link, spn)
        storage_switches = storage_cc.switches if storage_cc.tiers > 1 else 1

    # -- management network -------------------------------------------------------
    mgmt_cc = None
    if side_networks:
        mpn = net.mgmt_ports_per_node if net.mgmt_ports_per_node is not None else (server.get("mgmt_ports_count") or 2)
        m_ep = n * mpn + 2 * scenario.hardware.head_nodes + compute_switches + storage_switches + (1 if fm else 0)
        msw = cat.get("switches", net.mgmt_switch, path="network.mgmt_switch") if net.mgmt_switch else (
            side_switch(cat, net.mgmt_link_gbps, "Ethernet", m_ep))
        m_link, m_b = _link(msw, net.mgmt_link_gbps)
        if msw["port_speed_gbps"] < net.mgmt_link_gbps:
            findings.append(Finding("topology-mgmt-slow", "warning",
                                    f"management switch {msw['id']} ports run at {msw['port_speed_gbps']:g} Gb/s, "
                                    f"below the {net.mgmt_link_gbps:g} Gb/s asked", "pick a 10 GbE (or faster) switch",
                                    "network.mgmt_switch"))
        m_radix = int(msw["ports"]) * m_b
        mgmt_cc = clos_counts(m_ep, m_radix, MGMT_OVERSUBSCRIPTION)
        add_side_network("management", mgmt_cc, msw, m_radix, m_ep, m_link, mpn)
        if mpn < 2:
            findings.append(Finding("topology-mgmt-ports", "warning",
                                    f"{mpn} management port per node: the BMC and the OS need one each",
                                    "give each node 2 management ports", "network.mgmt_ports_per_node"))

    # -- totals --------------------------------------------------------------------
    def tally(groups: list[LinkGroup]) -> tuple[dict[str, int], dict[str, int]]:
        cab_n: dict[str, int] = {}
        tx_n: dict[str, int] = {}
        for g in groups:
            key = f"{g.cable}:{g.length_class}"
            cab_n[key] = cab_n.get(key, 0) + g.cables
            for tid, k in ((g.switch_end, g.switch_end_modules), (g.node_end, g.node_end_modules)):
                if tid and k:
                    tx_n[tid] = tx_n.get(tid, 0) + k
        return dict(sorted(cab_n.items())), dict(sorted(tx_n.items()))

    cables, transceivers = tally([g for g in link_groups if g.network == "compute"])
    cables_all, transceivers_all = tally(link_groups)
    power = sum(g.power_w for g in switch_groups) + sum(g.switch_side_power_w for g in link_groups)
    ru = sum(g.rack_units for g in switch_groups)
    compute_groups = [g for g in switch_groups if g.network == "compute"]
    ports_total = sum(g.count * g.ports for g in compute_groups)
    ports_used = sum(g.ports_used for g in compute_groups)
    return TopologyDesign(
        kind=kind, tiers=tiers, nodes=n, gpus_per_node=gpn, ports_per_node=ports_per_node, endpoints=endpoints,
        link_gbps=link_gbps, switch_id=switch["id"] if switch else None, nic_id=nic_id, radix=radix,
        breakout=breakout, switches=switches, links=links, cables=cables, transceivers=transceivers,
        cables_all=cables_all, transceivers_all=transceivers_all, max_endpoints=max_ep, max_endpoints_by_tiers=by_tiers,
        bisection_bandwidth_gbps=round(bisection, 3), oversubscription=round(over_tier.get("leaf", 1.0), 3),
        oversubscription_by_tier=over_tier, network_power_w=round(power, 1), network_rack_units=ru,
        per_gpu_allreduce_gbps=round(per_gpu, 3), injection_gbps_per_gpu=round(injection, 3), switch_hops=hops,
        diameter_links=diameter, ports_used=ports_used, ports_free=ports_total - ports_used,
        scalable_unit_nodes=su_nodes, scalable_units=su_count, head_nodes=scenario.hardware.head_nodes,
        fabric_manager_ports=fm, nodes_per_rack=npr, compute_racks=racks, rows=lay.rows,
        switch_groups=tuple(switch_groups), link_groups=tuple(link_groups), findings=sort_findings(findings),
        counts=counts, mgmt_counts=mgmt_cc, storage_counts=storage_cc, leaves_per_su=leaves_per_su,
        nodes_per_leaf=nodes_per_leaf)


_BW_CACHE: dict[tuple, tuple[Catalog, float]] = {}
_BW_CACHE_MAX = 512


def per_gpu_allreduce_gbps(scenario: Scenario, catalog: Catalog, nodes: int,
                           hardware: ClusterHardware | None = None, node: NodeDesign | None = None) -> float:
    """``design_topology(...).per_gpu_allreduce_gbps`` [Gb/s], cached for the training engine's searches.

    The key is every input the bandwidth depends on: the network section, the hardware section,
    the facility section (rack layout), the catalogue object and the node count.
    """
    key = (scenario.network, repr(scenario.hardware), scenario.facility, id(catalog), nodes)
    hit = _BW_CACHE.get(key)
    if hit is not None and hit[0] is catalog:
        return hit[1]
    value = design_topology(scenario, catalog, nodes=nodes, side_networks=False,
                            hardware=hardware, node=node).per_gpu_allreduce_gbps
    if len(_BW_CACHE) >= _BW_CACHE_MAX:
        _BW_CACHE.clear()
    _BW_CACHE[key] = (catalog, value)
    return value


#: Fabric bandwidth per GPU when neither the scenario nor the server names NICs [Gb/s]:
#: one 200 Gb/s HDR port per GPU, as in the DGX A100 (DGX A100 User Guide: 8x ConnectX-6 200 Gb/s).
DEFAULT_GBPS_PER_GPU = 200.0


def fabric_gbps_per_gpu(scenario: Scenario, hw: ClusterHardware, catalog: Catalog,
                        network: TopologyDesign | None = None) -> float:
    """Scale-out (inter-node) injection bandwidth per GPU [Gb/s], one direction.

    ``network.inter_node_gbps_per_gpu`` when given; with a named switch (or a ring) the
    designed fabric's all-reduce bandwidth per GPU (oversubscription and rail alignment
    included): ``network`` when it is the design of the same node count, else a compute-only
    design for ``hw.nodes``; otherwise the compute NICs (``network.nic`` x
    ``network.nics_per_node``, else the server's compute NICs): speed x ports x count / GPUs
    per node, divided by ``network.oversubscription``.
    """
    net = scenario.network
    if net.inter_node_gbps_per_gpu is not None:
        return net.inter_node_gbps_per_gpu
    if net.switch or net.topology == "ring":
        if network is not None and network.nodes == hw.nodes:
            return network.per_gpu_allreduce_gbps
        return per_gpu_allreduce_gbps(scenario, catalog, hw.nodes, hardware=hw)
    nic_id = net.nic or (hw.server or {}).get("compute_nic_id")
    count = net.nics_per_node or (hw.server or {}).get("compute_nic_count") or (hw.gpus_per_node if nic_id else 0)
    if not nic_id or not count:
        return DEFAULT_GBPS_PER_GPU / net.oversubscription
    nic = catalog.get("nics", nic_id, path="network.nic")
    return nic["speed_gbps"] * nic["ports"] * count / hw.gpus_per_node / net.oversubscription


def _over_capacity(endpoints: int, limit: int, what: str, radix: int) -> Finding:
    return Finding("topology-over-capacity", "error",
                   f"{endpoints:,} endpoints exceed the {limit:,} that {what} of {radix}-port switches can hold "
                   "(k^3/4 for a non-blocking three-tier fat tree, Al-Fares 2008)",
                   "pick a switch with more ports, oversubscribe the leaves, or split the cluster",
                   "hardware.nodes")


def growth_table(scenario: Scenario, catalog: Catalog | None = None, node_counts: list[int] | None = None) -> pd.DataFrame:
    """Switches, tiers and bisection bandwidth for a range of node counts (the growth chart).

    Columns: nodes, tiers, leaf, spine, core, switches, bisection_tbps, per_gpu_allreduce_gbps.
    """
    import pandas as pd

    cat = catalog or catalog_for(scenario)
    if node_counts is None:
        node_counts = [2 ** i for i in range(0, 13)]
    hw = resolve_hardware(scenario, cat)
    node = build_node(scenario, cat, hardware=hw)
    rows = []
    for k in node_counts:
        d = design_topology(scenario, cat, nodes=int(k), side_networks=False, hardware=hw, node=node)
        rows.append({"nodes": int(k), "tiers": d.tiers, "leaf": d.switches.get("leaf", 0),
                     "spine": d.switches.get("spine", 0), "core": d.switches.get("core", 0),
                     "switches": sum(d.switches.values()) if d.kind != "ring" else 0,
                     "bisection_tbps": d.bisection_bandwidth_gbps / 1000,
                     "per_gpu_allreduce_gbps": d.per_gpu_allreduce_gbps,
                     "fits": not any(f.severity == "error" for f in d.findings)})
    return pd.DataFrame(rows)
