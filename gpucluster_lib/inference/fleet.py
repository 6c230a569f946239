"""From one replica to a fleet: replicas, GPUs, nodes, racks, power and cost.

Racks and IT power come from the facility budget
(:func:`gpucluster_lib.facility.site.budget`, with ``nodes`` = the fleet's nodes: compute racks
plus network, storage and head nodes, IT power including them); its warnings and errors
are passed on. The quick mode (``use_facility=False``, for comparing many accelerators at once)
counts the compute nodes only: each at the built node's peak power
(:func:`gpucluster_lib.hardware.node.build_node`, the same node model as the facility
budget) and packed by the same rack fit (:func:`gpucluster_lib.hardware.rack.node_rack_fit`);
no network, storage or head nodes.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from gpucluster_lib.facility import site as facility
from gpucluster_lib.findings import Finding
from gpucluster_lib.hardware.node import build_node
from gpucluster_lib.hardware.rack import node_rack_fit
from gpucluster_lib.scenario import HardwareSpec
from gpucluster_lib.units import KW_PER_MW, W_PER_KW

#: Largest fleet the facility budget sizes node by node [nodes]: the scenario's own limit on
#: ``hardware.nodes`` (gpucluster_lib.scenario.HardwareSpec); a larger fleet gets the quick estimate.
MAX_FACILITY_NODES: int = next(f for f in dataclasses.fields(HardwareSpec) if f.name == "nodes").metadata["le"]

#: The traffic targets a fleet is sized for, in the order the serving models read them, with their
#: names in the app's words.
TARGET_WORDS = {"inference.requests_per_s": "requests per second", "inference.tokens_per_s": "tokens per second",
                "inference.images_per_s": "images per second", "inference.video_streams": "video streams"}


def target_field(scenario: Any) -> str:
    """The scenario key of the traffic target that is set (requests_per_s first, as the LLM model reads
    them); ``inference.requests_per_s`` when none is."""
    inf = scenario.inference
    return next((k for k in TARGET_WORDS if getattr(inf, k.split(".")[1], None) is not None),
                "inference.requests_per_s")


def _num(v: Any) -> float | None:
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)


@dataclass(frozen=True)
class FleetSize:
    replicas: int
    gpus: int
    nodes: int
    racks: int
    it_power_kw: float
    facility_power_kw: float
    capex_usd: float | None
    source: str  # "facility budget", "quick estimate", or "no fleet" (no replicas)


def size_fleet(scenario: Any, catalog: Any, hw: Any, *, replicas: int, tp: int,
               findings: list[Finding], use_facility: bool = True, node: Any = None,
               cluster_facility: Any = None, network: Any = None, target: str | None = None) -> FleetSize:
    """Nodes, racks, power and CapEx of ``replicas`` replicas of ``tp`` GPUs on ``hw`` nodes.

    ``node`` (the built node), ``network`` (the cluster's network design) and
    ``cluster_facility`` (the cluster's budget, used as it is, hot spares included, when the
    fleet is the cluster: the same node count) come from a Design; computed when omitted.
    ``target`` is the scenario key of the traffic target the replicas serve (default
    :func:`target_field`).
    """
    gpn = hw.gpus_per_node
    if tp <= gpn:
        per_node = gpn // tp
        nodes = math.ceil(replicas / per_node) if replicas else 0
    else:
        nodes = replicas * math.ceil(tp / gpn)
    gpus = replicas * tp
    racks = it_kw = fac_kw = None
    source = "quick estimate"
    if nodes > MAX_FACILITY_NODES:
        field = target or target_field(scenario)
        use_facility = False  # a node-by-node rack plan of millions of nodes would take minutes and gigabytes
        findings.append(Finding(
            "inference-fleet-beyond-facility-model", "warning",
            f"the traffic target needs {nodes:,} nodes, more than the {MAX_FACILITY_NODES:,} nodes a scenario's "
            "cluster may have; its racks and power are a quick estimate of the compute nodes only",
            fix=f"lower the traffic target ({TARGET_WORDS[field]}), or serve more per GPU: a lower precision, "
                "a larger batch, a faster accelerator", field=field))
    if use_facility and nodes:
        if cluster_facility is not None and cluster_facility.nodes == nodes:
            b = cluster_facility  # the fleet is the cluster itself, with its installed hot spares
        else:
            b = facility.budget(scenario, catalog, nodes=nodes, hardware=hw, node=node, network=network)
        racks, it_kw, fac_kw = int(b.racks), float(b.it_power_kw), float(b.facility_power_kw)
        source = "facility budget"
        # the budget's problems (rack power, cooling, PSU load) concern this fleet too; its infos stay there
        findings.extend(f for f in b.findings if f.severity != "info")
    elif not nodes:   # nothing served: no racks, no power, nothing estimated
        racks, it_kw, fac_kw = 0, 0.0, 0.0
        source = "no fleet"
    else:
        node = node if node is not None else build_node(scenario, catalog, hardware=hw)
        node_w = node.peak_power_w
        fac = scenario.facility
        fit = node_rack_fit(scenario, node, getattr(hw, "server", None))
        npr = fit.nodes_per_rack
        if not fit.fits:
            findings.append(Finding(
                "inference-node-exceeds-rack", "error",
                f"one {node.rack_units}U node of {node_w / W_PER_KW:.1f} kW peak breaks the rack's {fit.binding} "
                f"limit ({fit.power_limit_w / W_PER_KW:g} kW, {fac.rack_units}U, {fac.cooling} cooling); "
                "counted one node per rack",
                fix="raise the rack power limit (with liquid or rear-door cooling) or use a smaller server",
                field="facility.rack_power_limit_kw"))
        racks = fit.racks_for(nodes)
        it_kw = nodes * node_w / W_PER_KW
        fac_kw = it_kw * scenario.facility.pue
        findings.append(Finding(
            "inference-quick-estimate", "info",
            f"racks and power estimated quickly: {nodes:,} nodes x {node_w / W_PER_KW:.1f} kW "
            f"(node peak power), {npr} nodes per rack ({fit.power_limit_w / W_PER_KW:g} kW, {fac.rack_units}U); "
            f"facility power = IT x PUE {scenario.facility.pue:g}",
            fix="the design's facility budget adds network, storage and head nodes"))
    capex = capex_usd(scenario, hw, nodes=nodes, gpus=gpus, findings=findings)
    return FleetSize(replicas, gpus, nodes, racks, it_kw, fac_kw, capex, source)


def capex_usd(scenario: Any, hw: Any, *, nodes: int, gpus: int, findings: list[Finding]) -> float | None:
    """Hardware CapEx [USD]: nodes x server price (systems include their GPUs), else the GPUs of
    whole nodes x GPU price.

    A fleet occupies whole nodes, so a replica smaller than a node still buys the node's GPUs
    (``nodes x gpus_per_node``, not ``gpus``). ``costs.server_price`` /
    ``costs.accelerator_price`` override the catalogue's ``price_usd_estimate``. A chassis price
    is added to the GPUs' when both are known; without a system price the rest of the node
    (CPUs, memory, NICs) is not priced here (``gpucluster cost`` prices it).
    """
    costs = scenario.costs
    server = hw.server or {}
    server_price = costs.server_price if costs.server_price is not None else _num(server.get("price_usd_estimate"))
    gpu_price = costs.accelerator_price if costs.accelerator_price is not None \
        else _num(hw.accelerator.get("price_usd_estimate"))
    if server_price is not None and server.get("kind") != "chassis" and server:
        return nodes * server_price
    if gpu_price is not None:
        bought = max(gpus, nodes * int(getattr(hw, "gpus_per_node", 0) or 0))
        return bought * gpu_price + (nodes * server_price if server_price is not None else 0.0)
    findings.append(Finding(
        "inference-no-price", "info",
        f"no price for {server.get('id') or hw.accelerator['id']} in the catalogue: tokens/s per dollar not computed",
        fix="set a server price (per node) or an accelerator price (per GPU) in the costs",
        field="costs.server_price"))
    return None


def per_mw(tokens_per_s: float, power_kw: float | None) -> float | None:
    """Tokens/s per MW of power [tokens/s/MW]."""
    if not power_kw:
        return None
    return tokens_per_s / (power_kw / KW_PER_MW)
