"""Rack and hall budgets: nodes per rack, racks, power, heat, airflow, floor, UPS, energy.

:func:`budget` turns a scenario into a :class:`Budget`: how many nodes fit a rack and
which limit binds (space, power, cooling density or weight), how many racks and rows the
hall needs, the IT power (compute nodes + network + storage + head nodes), the facility
power through the PUE, the heat in kW, BTU/h and refrigeration tons, the airflow at the
chosen temperature rise, the air/liquid split, the floor area with hot/cold aisles, UPS
and generator sizes under the power redundancy scheme, and the annual energy and its cost.

Conversions (constants in :mod:`gpucluster_lib.units`):

* heat [BTU/h] = P [W] x 3.412142 (1 BTU_IT = 1055.056 J; NIST SP 811);
* refrigeration [tons] = heat [BTU/h] / 12,000 (1 ton = 3.516853 kW);
* airflow [CFM] = P [W] x 3.412142 / (1.08 x dT [F]) (ASHRAE sensible-heat equation for
  standard air; dT [F] = 1.8 x dT [K]), about 158 CFM per kW at 11.1 K (20 F).

Peak power sizes the electrical and cooling plant; typical power gives the energy.
Assumptions that are not catalogue values are in :mod:`gpucluster_lib.hardware.power_assumptions`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from gpucluster_lib.catalog import Catalog
from gpucluster_lib.errors import ScenarioError, one_of, yaml_value
from gpucluster_lib.facility.cooling import CoolingPlant, cooling_plant, liquid_fraction
from gpucluster_lib.facility.storage import StorageDesign, size_storage
from gpucluster_lib.findings import Finding, sort_findings
from gpucluster_lib.formatting import plural
from gpucluster_lib.hardware import power_assumptions as pa
from gpucluster_lib.hardware.node import NodeDesign, build_node
from gpucluster_lib.hardware.rack import (  # noqa: F401 (re-exported)
    CONSTRAINTS,
    RackDevice,
    RackFit,
    cooling_limit_kw_of,
    node_rack_fit,
    pack_racks,
    rack_fit,
    rack_power_limit_kw_of,
    reserved_units,
)
from gpucluster_lib.hardware.resolve import ClusterHardware, catalog_for, resolve_hardware
from gpucluster_lib.network.topology import TopologyDesign, design_topology
from gpucluster_lib.scenario import Scenario
from gpucluster_lib.units import (
    BTU_PER_H_PER_TON,
    BTU_PER_H_PER_W,
    F_PER_K,
    GENERATOR_POWER_FACTOR,
    HOURS_PER_YEAR,
    KW_PER_MW,
    SENSIBLE_HEAT_FACTOR_BTU_PER_H_CFM_F,
    TB,
    UPS_POWER_FACTOR,
    W_PER_KW,
)

if TYPE_CHECKING:
    import pandas as pd

#: Largest UPS / generator module assumed when splitting an N+1 system [kW] (ESTIMATE:
#: large modular UPS frames and diesel gensets are about 0.5-3 MW each).
MAX_MODULE_KW = 1000.0
#: Storage appliances draw this fraction of their maximum in normal operation (ESTIMATE).
STORAGE_TYPICAL_FRACTION = 0.7


# --------------------------------------------------------------------------- conversions


def heat_btu_per_h(power_w: float | np.ndarray) -> float | np.ndarray:
    """Heat released by ``power_w`` of electrical load [BTU/h]: P x 3.412142 (NIST SP 811)."""
    return power_w * BTU_PER_H_PER_W


def cooling_tons(power_w: float) -> float:
    """Refrigeration needed to remove ``power_w`` [tons]: P x 3.412142 / 12,000."""
    return power_w * BTU_PER_H_PER_W / BTU_PER_H_PER_TON


def airflow_cfm(power_w: float, delta_t_k: float) -> float:
    """Air volume that carries ``power_w`` away at a temperature rise ``delta_t_k`` [CFM].

    Sensible-heat equation for standard air (ASHRAE Fundamentals ch. 1):
    q [BTU/h] = 1.08 x CFM x dT [F], so CFM = P x 3.412142 / (1.08 x 1.8 x dT [K]).
    """
    if delta_t_k <= 0:
        raise ScenarioError("facility.delta_t_c", f"must be a positive temperature rise, got {delta_t_k!r}")
    return power_w * BTU_PER_H_PER_W / (SENSIBLE_HEAT_FACTOR_BTU_PER_H_CFM_F * delta_t_k * F_PER_K)


def cfm_per_kw(delta_t_k: float) -> float:
    """Airflow per kW of heat at a temperature rise [CFM/kW] (about 158 at 11.1 K)."""
    return airflow_cfm(W_PER_KW, delta_t_k)


def facility_power_w(it_power_w: float, pue: float) -> float:
    """Facility power [W] = IT power x PUE (The Green Grid, PUE definition, WP #49)."""
    if pue < 1:
        raise ScenarioError("facility.pue", f"must be at least 1 (facility power includes the IT power), got {pue!r}")
    if it_power_w < 0:
        raise ScenarioError("it_power_w", f"must not be negative, got {it_power_w!r}")
    return it_power_w * pue


def redundant_capacity_kw(required_kw: float, scheme: str) -> tuple[float, int, int]:
    """Installed UPS / generator capacity for a redundancy scheme [kW].

    N: the load itself. N+1: the load over n = max(2, ceil(load / 1 MW)) working modules,
    plus one spare module. 2N: two complete systems (Uptime Tier IV style).

    Returns
    -------
    (installed_kw, working_modules, total_modules)
    """
    if required_kw < 0:
        raise ScenarioError("facility", f"required capacity must not be negative, got {required_kw!r}")
    if scheme == "N":
        return required_kw, 1, 1
    if scheme == "N+1":
        n = max(pa.UPS_MODULES_N_PLUS_1, math.ceil(required_kw / MAX_MODULE_KW))
        return required_kw * (n + 1) / n, n, n + 1
    if scheme == "2N":
        return 2 * required_kw, 1, 2
    raise ScenarioError("facility.power_redundancy", f"must be one of {one_of(['N', 'N+1', '2N'])}, not {yaml_value(scheme)}")


# --------------------------------------------------------------------------- rack packing


def hall_layout(racks: int, racks_per_row: int = pa.RACKS_PER_ROW) -> tuple[int, float, float, float]:
    """Rows and white-space floor area of a hot/cold-aisle hall.

    Rows of ``racks_per_row`` racks (600 x 1200 mm) face each other across 1.2 m cold
    aisles and back onto 0.9 m hot aisles (TIA-942-B), with 1.2 m at each row end:

    length = racks in the longest row x 0.6 + 2 x 1.2
    depth  = rows x (1.2 + (1.2 + 0.9) / 2) + (1.2 + 0.9) / 2

    Returns
    -------
    (rows, length_m, depth_m, area_m2). Electrical and mechanical rooms are not included.
    """
    if racks <= 0:
        return 0, 0.0, 0.0, 0.0
    rows = math.ceil(racks / racks_per_row)
    per_row = min(racks, racks_per_row)
    half_aisles = (pa.COLD_AISLE_M + pa.HOT_AISLE_M) / 2
    length = per_row * pa.RACK_WIDTH_M + 2 * pa.ROW_END_CLEARANCE_M
    depth = rows * (pa.RACK_DEPTH_M + half_aisles) + half_aisles
    return rows, length, depth, length * depth


# --------------------------------------------------------------------------- budget


@dataclass(frozen=True)
class RackItem:
    """One device in the representative rack (for the elevation drawing); ``bottom_u`` is 1-based."""

    label: str
    kind: str  # node, switch, patch, empty
    bottom_u: int
    height_u: int
    power_w: float


@dataclass(frozen=True)
class Budget:
    """The rack and hall budget of a scenario. Powers in kW unless the name says W."""

    node: NodeDesign
    #: job nodes (the nodes the workload runs on) [count]
    nodes: int
    rack_units: int
    rack_fit: RackFit
    compute_racks: int
    infra_racks: int
    racks: int
    rows: int
    rack_units_used: int
    network_power_w: float
    network_typical_w: float
    network_rack_units: int
    network_source: str
    storage_power_w: float
    storage_rack_units: int
    head_nodes: int
    head_power_w: float
    it_power_kw: float
    it_typical_kw: float
    pue: float
    facility_power_kw: float
    heat_load_kw: float
    heat_load_btu_per_h: float
    cooling_tons: float
    airflow_cfm: float
    delta_t_c: float
    cooling: str
    air_heat_kw: float
    liquid_heat_kw: float
    floor_area_m2: float
    hall_length_m: float
    hall_depth_m: float
    power_redundancy: str
    growth_headroom: float
    planned_it_power_kw: float
    planned_facility_power_kw: float
    planned_racks: int
    ups_kw: float
    ups_kva: float
    generator_kw: float
    generator_kva: float
    annual_energy_mwh: float
    energy_price_per_kwh: float
    annual_energy_cost: float
    rack_power_kw: float
    elevation: list[RackItem] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    #: the shared storage design (:func:`gpucluster_lib.facility.storage.size_storage`)
    storage: StorageDesign | None = None
    #: installed hot-spare nodes: racked and counted at peak power, standing by (not in the typical power)
    spare_nodes: int = 0
    #: the liquid/air split and the cooling plant (:func:`gpucluster_lib.facility.cooling.cooling_plant`)
    cooling_plant: CoolingPlant | None = None
    #: where the airflow came from: "vendor" (the catalogue's CFM per node) or "delta-t" (the heat)
    airflow_basis: str = "delta-t"
    #: network and management racks of the vendor's scalable-unit layout (0 when the generic count applies)
    vendor_infra_racks: int = 0
    #: the infrastructure racks' devices, whole (:func:`~gpucluster_lib.hardware.rack.pack_racks`):
    #: switches, storage appliances and head nodes; empty when they share the one compute rack.
    #: A vendor layout may add empty racks beyond these (``infra_racks`` counts them).
    infra_layout: tuple[tuple[RackDevice, ...], ...] = ()
    #: every infrastructure device (in the layout's racks, or in the shared compute rack)
    infra_devices: tuple[RackDevice, ...] = ()

    @property
    def nodes_installed(self) -> int:
        """Job nodes plus installed spares [count]."""
        return self.nodes + self.spare_nodes

    @property
    def nodes_per_rack(self) -> int:
        return self.rack_fit.nodes_per_rack

    @property
    def binding_constraint(self) -> str:
        return self.rack_fit.binding

    def breakdown_kw(self) -> dict[str, float]:
        """Facility power by part at peak [kW]: node components x nodes, network, storage,
        head nodes, and the cooling and power-distribution overhead (PUE - 1) x IT."""
        per = self.node.by_category()
        out = {
            "GPUs": per.get("gpu", 0.0) * self.nodes / W_PER_KW,
            "CPUs": per.get("cpu", 0.0) * self.nodes / W_PER_KW,
            "Memory": per.get("memory", 0.0) * self.nodes / W_PER_KW,
            "Network": (per.get("network", 0.0) * self.nodes + self.network_power_w) / W_PER_KW,
            "Storage": (per.get("storage", 0.0) * self.nodes + self.storage_power_w) / W_PER_KW,
            "Fans & other": (per.get("fans", 0.0) + per.get("other", 0.0)) * self.nodes / W_PER_KW,
            "Head nodes": self.head_power_w / W_PER_KW,
            "Cooling & power overhead (PUE)": self.facility_power_kw - self.it_power_kw,
        }
        return out

    def to_dict(self) -> dict[str, Any]:
        n = self.node
        return {
            "node": {
                "name": n.name, "server": n.server_id, "accelerator": n.accelerator_id,
                "gpus_per_node": n.gpus_per_node,
                "peak_power_w": round(n.peak_power_w, 1), "typical_power_w": round(n.typical_power_w, 1),
                "psu_usable_w": n.psu_usable_w, "rack_units": n.rack_units,
                "component_peak_w": round(n.component_peak_w, 1), "vendor_max_power_w": n.vendor_max_power_w,
                "weight_kg": round(n.weight_kg, 2),
                "components": [{"category": c.category, "label": c.label, "detail": c.detail,
                                "peak_w": round(c.peak_w, 1), "typical_w": round(c.typical_w, 1)}
                               for c in n.components],
            },
            "nodes": self.nodes,
            "spare_nodes": self.spare_nodes,
            "nodes_installed": self.nodes_installed,
            "gpus": self.nodes * n.gpus_per_node,
            "nodes_per_rack": self.nodes_per_rack,
            "binding_constraint": self.binding_constraint,
            "rack_limits": dict(self.rack_fit.limits),
            "racks": self.racks,
            "compute_racks": self.compute_racks,
            "infra_racks": self.infra_racks,
            "rows": self.rows,
            "rack_units": self.rack_units,
            "rack_units_used": self.rack_units_used,
            "rack_power_kw": round(self.rack_power_kw, 3),
            "network_power_w": round(self.network_power_w, 1),
            "network_rack_units": self.network_rack_units,
            "network_source": self.network_source,
            "storage_power_w": round(self.storage_power_w, 1),
            **({"storage": {**self.storage.to_dict(), "power_w": round(self.storage_power_w, 1),
                            "rack_units": self.storage_rack_units}} if self.storage is not None else {}),
            "head_nodes": self.head_nodes,
            "it_power_kw": round(self.it_power_kw, 3),
            "it_typical_kw": round(self.it_typical_kw, 3),
            "pue": self.pue,
            "facility_power_kw": round(self.facility_power_kw, 3),
            "heat_load_kw": round(self.heat_load_kw, 3),
            "heat_load_btu_per_h": round(self.heat_load_btu_per_h, 0),
            "cooling_tons": round(self.cooling_tons, 2),
            "airflow_cfm": round(self.airflow_cfm, 0),
            "delta_t_c": self.delta_t_c,
            "cooling": self.cooling,
            "air_heat_kw": round(self.air_heat_kw, 3),
            "liquid_heat_kw": round(self.liquid_heat_kw, 3),
            "airflow_basis": self.airflow_basis,
            "rack_layout": self.rack_fit.basis,
            "racks_per_node": self.rack_fit.racks_per_node,
            **({"cooling_plant": self.cooling_plant.to_dict()} if self.cooling_plant is not None else {}),
            "floor_area_m2": round(self.floor_area_m2, 1),
            "power_redundancy": self.power_redundancy,
            "ups_kw": round(self.ups_kw, 1),
            "ups_kva": round(self.ups_kva, 1),
            "generator_kw": round(self.generator_kw, 1),
            "generator_kva": round(self.generator_kva, 1),
            "growth_headroom": self.growth_headroom,
            "planned_it_power_kw": round(self.planned_it_power_kw, 3),
            "planned_racks": self.planned_racks,
            "annual_energy_mwh": round(self.annual_energy_mwh, 3),
            "energy_price_per_kwh": self.energy_price_per_kwh,
            "annual_energy_cost": round(self.annual_energy_cost, 2),
            "findings": [f.to_dict() for f in self.findings],
        }


def _network(scenario: Scenario, cat: Catalog, hw: ClusterHardware, node: NodeDesign, nodes: int,
             network: TopologyDesign | None, network_power_w: float | None,
             network_rack_units: int | None) -> tuple[float, float, int, str, TopologyDesign | None]:
    """(peak W, typical W, rack units, source, design) of the networks: given (no design),
    else the topology design."""
    if network_power_w is not None:
        if network_power_w < 0:
            raise ScenarioError("network_power_w", f"must not be negative, got {network_power_w!r}")
        ru = network_rack_units
        if ru is None:
            ru = (network if network is not None and network.nodes == nodes
                  else design_topology(scenario, cat, nodes=nodes, hardware=hw, node=node)).network_rack_units
        return float(network_power_w), float(network_power_w), int(ru), "given", None
    topo = network if network is not None and network.nodes == nodes else design_topology(
        scenario, cat, nodes=nodes, hardware=hw, node=node)
    ru = int(topo.network_rack_units if network_rack_units is None else network_rack_units)
    # the switch datasheets give maximum power only: the typical draw is taken as the maximum
    return float(topo.network_power_w), float(topo.network_power_w), ru, "topology", topo


def budget(scenario: Scenario, catalog: Catalog | None = None, *, nodes: int | None = None,
           spare_nodes: int = 0, network_power_w: float | None = None, network_rack_units: int | None = None,
           hardware: ClusterHardware | None = None, node: NodeDesign | None = None,
           network: TopologyDesign | None = None, storage: StorageDesign | None = None) -> Budget:
    """The rack and hall budget of a scenario.

    Parameters
    ----------
    scenario : reads ``hardware`` (node, ``nodes``, ``head_nodes``), ``network`` and ``facility``.
    catalog : the catalogue (default: the scenario's).
    nodes : compute nodes, overriding ``hardware.nodes`` (e.g. a serving fleet) [count].
    spare_nodes : installed hot spares [count]: racked, powered at peak (the building and
        the UPS must carry them when they replace failed nodes), not in the typical draw
        (a spare stands by). The fabric and the storage are sized for the job nodes: a spare
        takes a free port or the failed node's place.
    network_power_w : total switch power [W], overriding the topology design.
    network_rack_units : switch rack units [U].
    hardware, node, network, storage : a Design's upstream results (the resolved hardware,
        the built node, the network design and the storage design); computed when omitted.

    Returns
    -------
    Budget. IT power = nodes x node peak + network + storage + head nodes; facility power
    = IT x PUE; heat load = IT power (all electrical power ends as heat); energy uses the
    typical draw for 8,760 h a year.
    """
    cat = catalog or catalog_for(scenario)
    fac = scenario.facility
    if fac.pue < 1:
        raise ScenarioError("facility.pue", f"must be at least 1, got {fac.pue!r}")
    hw = hardware if hardware is not None else resolve_hardware(scenario, cat)
    node = node if node is not None else build_node(scenario, cat, hardware=hw)
    if nodes is None:
        n = hw.nodes
    else:
        if isinstance(nodes, bool) or not isinstance(nodes, (int, np.integer)) or nodes < 1:
            raise ScenarioError("nodes", f"must be a positive whole number of nodes, got {nodes!r}")
        n = int(nodes)
    if isinstance(spare_nodes, bool) or not isinstance(spare_nodes, (int, np.integer)) or spare_nodes < 0:
        raise ScenarioError("reliability.spare_nodes", f"must be a whole number of nodes, at least 0, got {spare_nodes!r}")
    spares = int(spare_nodes)
    installed = n + spares
    findings: list[Finding] = list(node.findings)

    # ---- racks for compute
    fit = node_rack_fit(scenario, node, hw.server)
    cooling_limit_kw = fit.cooling_limit_w / W_PER_KW
    reserved_u = reserved_units(fac, node) if fit.basis != "rack-scale" else 0
    _rack_findings(fit, node, fac, cooling_limit_kw, findings)
    npr = fit.nodes_per_rack
    compute_racks = fit.racks_for(installed)

    # ---- network, storage, head nodes
    net_w, net_typ_w, net_ru, net_src, topo = _network(scenario, cat, hw, node, n, network, network_power_w,
                                                       network_rack_units)
    # shared storage: the same design as the checkpoint write time and the storage CapEx
    store = storage if storage is not None else size_storage(scenario, cat, nodes=n, gpus=n * hw.gpus_per_node)
    if fac.storage_power_kw is not None:
        storage_w = fac.storage_power_kw * W_PER_KW
        appliances = math.ceil(storage_w / store.appliance_power_w - 1e-9) if storage_w else 0
        if appliances != store.appliances:
            findings.append(Finding("storage-power-override", "info",
                                    f"the storage power of {fac.storage_power_kw:g} kW is racked as {appliances} "
                                    f"x {store.appliance_rack_units}U appliance(s); reliability and cost use "
                                    f"{store.appliances} x {store.system}",
                                    fix="give the same count of storage appliances for the storage reliability",
                                    field="facility.storage_power_kw"))
    else:
        appliances = store.appliances
        storage_w = store.total_power_w  # the fast tier and the capacity tier
        if appliances:
            need = (f"one {store.checkpoint_bytes / TB:.2f} TB checkpoint within {store.checkpoint_target_s:g} s at "
                    f"{store.appliance_write_gb_per_s:g} GB/s each: {store.by_bandwidth}; "
                    f"{store.checkpoints_kept} kept: {store.by_capacity}; the GPUs' reads of "
                    f"{store.read_needed_gb_per_s:,.0f} GB/s at {store.appliance_read_gb_per_s:g} GB/s each: "
                    f"{store.by_read}; their writes of {store.write_needed_gb_per_s:,.0f} GB/s: {store.by_write}; "
                    f"the {store.dataset_bytes / TB:,.1f} TB data set: {store.by_data}; basis {store.basis}")
            findings.append(Finding("storage-sized", "info",
                                    f"shared storage sized as {appliances} x {store.appliance_rack_units}U {store.system} "
                                    f"of {store.appliance_power_w / W_PER_KW:g} kW ({need})",
                                    fix="give your storage system's power",
                                    field="facility.storage_power_kw"))
    storage_ru = (store.total_rack_units if fac.storage_power_kw is None
                  else appliances * store.appliance_rack_units)
    heads = scenario.hardware.head_nodes
    head_w = heads * pa.HEAD_NODE_PEAK_W
    head_ru = heads * pa.HEAD_NODE_RACK_UNITS

    # ---- infrastructure racks (network, storage, head nodes)
    infra_ru = net_ru + storage_ru + head_ru
    infra_w = net_w + storage_w + head_w
    usable_u = max(1, fac.rack_units - fac.reserved_rack_units)
    if fit.basis == "rack-scale":  # network racks are ordinary racks at the facility's limits
        rack_cap_w = min(rack_power_limit_kw_of(fac), cooling_limit_kw_of(fac)) * W_PER_KW
        free_u, free_w = 0, 0.0
    else:
        rack_cap_w = min(fit.power_limit_w, fit.cooling_limit_w)
        free_u = fac.rack_units - reserved_u - installed * node.rack_units
        free_w = rack_cap_w - (pa.MGMT_SWITCH_W if reserved_u else 0.0) - installed * node.peak_power_w
    devices = _infra_devices(topo, net_ru, net_w, store, appliances, storage_w, fac.storage_power_kw is None, heads)
    shared_fits = compute_racks == 1 and infra_ru <= free_u and infra_w <= free_w
    layout = () if infra_ru <= 0 or shared_fits else pack_racks(devices, usable_u, rack_cap_w)
    if layout:
        _over_rack_findings(devices, usable_u, fac, rack_cap_w, fit.power_limit_w <= fit.cooling_limit_w, findings)
    infra_racks = len(layout)
    vendor_infra = _vendor_infra_racks(scenario, hw.server, n, fit)
    if vendor_infra:
        if vendor_infra < infra_racks:
            findings.append(Finding("facility-vendor-network-racks", "info",
                                    f"the vendor layout has {vendor_infra} network and management racks; this "
                                    f"design's switches, storage and head nodes fill {infra_racks} at "
                                    f"{rack_cap_w / W_PER_KW:g} kW a rack", field="facility.rack_power_limit_kw"))
        else:
            findings.append(Finding("facility-vendor-network-racks", "info",
                                    f"network and management racks as the vendor lays them out: {vendor_infra} "
                                    f"({hw.server['su_network_racks_count']} per scalable unit of "
                                    f"{hw.server['su_nodes_count']} nodes, plus "
                                    f"{hw.server.get('pod_management_racks_count') or 0} for the pod)"))
        infra_racks = max(infra_racks, vendor_infra)
    racks = compute_racks + infra_racks
    shared = infra_ru > 0 and infra_racks == 0
    rows, length, depth, area = hall_layout(racks, fac.racks_per_row)
    ru_used = installed * node.rack_units + infra_ru + (compute_racks + infra_racks) * reserved_u

    # ---- power, heat, air
    it_w = installed * node.peak_power_w + net_w + storage_w + head_w
    it_typ_w = (n * node.typical_power_w + net_typ_w + storage_w * STORAGE_TYPICAL_FRACTION
                + heads * pa.HEAD_NODE_TYPICAL_W)
    fac_w = facility_power_w(it_w, fac.pue)
    node_liquid = liquid_fraction(node, hw.server, fac.cooling)
    plant = cooling_plant(cooling=fac.cooling, compute_racks=compute_racks, nodes=installed,
                          node_peak_w=node.peak_power_w, node_liquid_fraction=node_liquid,
                          other_it_w=net_w + storage_w + head_w, racks_per_row=fac.racks_per_row, cdu=fac.cdu,
                          cdu_capacity_kw=fac.cdu_capacity_kw, coolant_delta_t_c=fac.coolant_delta_t_c,
                          facility_water_delta_t_c=fac.facility_water_delta_t_c)
    findings.extend(plant.findings)
    liquid_kw = plant.liquid_kw + plant.rear_door_kw
    liquid_frac = liquid_kw * W_PER_KW / it_w if it_w else 0.0
    vendor_cfm = node.airflow_cfm
    if vendor_cfm:
        # the vendor's airflow per node (DGX H100 user guide: 1,105 CFM at 80% fan speed) for the
        # nodes; network, storage and head nodes by the sensible-heat equation
        cfm = installed * float(vendor_cfm) + airflow_cfm(net_w + storage_w + head_w, fac.delta_t_c)
        air_basis = "vendor"
    else:
        cfm = airflow_cfm(installed * node.peak_power_w * (1 - node_liquid) + net_w + storage_w + head_w,
                          fac.delta_t_c)
        air_basis = "delta-t"
    growth = 1 + fac.growth_headroom
    planned_it_kw = it_w * growth / W_PER_KW
    planned_fac_kw = fac_w * growth / W_PER_KW
    ups_kw, _, _ = redundant_capacity_kw(planned_it_kw, fac.power_redundancy)
    gen_kw, _, _ = redundant_capacity_kw(planned_fac_kw, fac.power_redundancy)
    energy_mwh = facility_power_w(it_typ_w, fac.pue) * HOURS_PER_YEAR / W_PER_KW / KW_PER_MW
    if fac.power_redundancy == "N":
        findings.append(Finding("facility-power-redundancy", "warning",
                                "the power redundancy is N: one UPS or generator failure drops the load",
                                fix="use 'N+1' (or '2N' for Tier IV style)", field="facility.power_redundancy"))
    # the per-rack management switch is in the network design's power (its management
    # network), so it is not added to the rack again here
    rack_kw = (min(npr, installed) * node.peak_power_w / fit.racks_per_node + (infra_w if shared else 0.0)) / W_PER_KW

    return Budget(
        node=node, nodes=n, rack_units=fac.rack_units, rack_fit=fit, compute_racks=compute_racks,
        infra_racks=infra_racks, racks=racks, rows=rows, rack_units_used=int(ru_used),
        network_power_w=net_w, network_typical_w=net_typ_w, network_rack_units=int(net_ru), network_source=net_src,
        storage_power_w=storage_w, storage_rack_units=storage_ru, head_nodes=heads, head_power_w=head_w,
        it_power_kw=it_w / W_PER_KW, it_typical_kw=it_typ_w / W_PER_KW, pue=fac.pue,
        facility_power_kw=fac_w / W_PER_KW, heat_load_kw=it_w / W_PER_KW,
        heat_load_btu_per_h=it_w * BTU_PER_H_PER_W, cooling_tons=cooling_tons(it_w), airflow_cfm=cfm,
        delta_t_c=fac.delta_t_c, cooling=fac.cooling, air_heat_kw=it_w * (1 - liquid_frac) / W_PER_KW,
        liquid_heat_kw=liquid_kw, floor_area_m2=area, hall_length_m=length, hall_depth_m=depth,
        power_redundancy=fac.power_redundancy, growth_headroom=fac.growth_headroom,
        planned_it_power_kw=planned_it_kw, planned_facility_power_kw=planned_fac_kw,
        planned_racks=math.ceil(racks * growth - 1e-9), ups_kw=ups_kw, ups_kva=ups_kw / UPS_POWER_FACTOR,
        generator_kw=gen_kw, generator_kva=gen_kw / GENERATOR_POWER_FACTOR, annual_energy_mwh=energy_mwh,
        energy_price_per_kwh=fac.energy_price_per_kwh,
        annual_energy_cost=energy_mwh * KW_PER_MW * fac.energy_price_per_kwh, rack_power_kw=rack_kw,
        elevation=rack_elevation(node, min(npr, installed), fac.rack_units, reserved_u,
                                 extra=_infra_items(net_ru, storage_ru, heads, infra_w - storage_w - head_w, storage_w)
                                 if shared else ()),
        findings=sort_findings(findings), storage=store, spare_nodes=spares, cooling_plant=plant,
        airflow_basis=air_basis, vendor_infra_racks=vendor_infra, infra_layout=layout,
        infra_devices=tuple(devices),
    )


def _infra_devices(topo: TopologyDesign | None, net_ru: int, net_w: float, store: StorageDesign, appliances: int,
                   storage_w: float, designed_storage: bool, heads: int) -> list[RackDevice]:
    """The whole devices of the infrastructure racks: every switch of the network design (a
    given network power or rack units without a design: ``net_ru`` 1U shares of its power), the
    storage appliances
    and capacity units, the head nodes."""
    out: list[RackDevice] = []
    groups = getattr(topo, "switch_groups", None)
    if groups is not None and sum(g.rack_units_each * g.count for g in groups) == net_ru:
        # the optics and active cables plugged into a network's switches draw power in those
        # switches' racks: spread over its switches in proportion to their own power
        optics = {net: sum(lg.switch_side_power_w for lg in topo.link_groups if lg.network == net)
                  for net in {g.network for g in topo.switch_groups}}
        own = {net: sum(g.power_w for g in topo.switch_groups if g.network == net) for net in optics}
        for g in topo.switch_groups:
            scale = 1.0 + optics[g.network] / own[g.network] if own[g.network] > 0 else 1.0
            out += [RackDevice("switch", f"{g.network} {g.role}", g.switch_id, max(1, int(g.rack_units_each)),
                               float(g.power_w_each) * scale, i) for i in range(g.count)]
    elif net_ru:
        out += [RackDevice("switch", "network", "network", 1, net_w / net_ru, i) for i in range(int(net_ru))]
    if designed_storage:
        out += [RackDevice("storage", "shared storage", store.system, int(store.appliance_rack_units),
                           float(store.appliance_power_w), i) for i in range(store.appliances)]
        if store.capacity_units:
            out += [RackDevice("capacity", "capacity storage", store.capacity_system or "capacity",
                               int(store.capacity_unit_rack_units), float(store.capacity_unit_power_w), i)
                    for i in range(store.capacity_units)]
    elif appliances:
        out += [RackDevice("storage", "shared storage", store.system, int(store.appliance_rack_units),
                           storage_w / appliances, i) for i in range(appliances)]
    out += [RackDevice("head", "head node", "head-node", pa.HEAD_NODE_RACK_UNITS, pa.HEAD_NODE_PEAK_W, i)
            for i in range(heads)]
    return out


def _over_rack_findings(devices: list[RackDevice], usable_u: int, fac: Any, cap_w: float, power_binds: bool,
                        findings: list[Finding]) -> None:
    """An error finding for the infrastructure devices that no rack of the facility holds:
    taller than the usable units, or above the rack's power and cooling cap on their own
    (:func:`~gpucluster_lib.hardware.rack.pack_racks` gives each a rack of its own)."""
    tall: dict[str, list[RackDevice]] = {}
    hot: dict[str, list[RackDevice]] = {}
    for d in devices:
        if d.height_u > usable_u:
            tall.setdefault(d.model, []).append(d)
        if d.power_w > cap_w + 1e-6:
            hot.setdefault(d.model, []).append(d)

    def name(model: str, ds: list[RackDevice]) -> str:
        roles = list(dict.fromkeys(d.role for d in ds))
        return f"{len(ds):,} x {model}" + ("" if roles == [model] else f" ({', '.join(roles)})")

    if tall:
        need = max(d.height_u for ds in tall.values() for d in ds)
        what = "; ".join(f"{name(m, ds)} of {max(d.height_u for d in ds)}U"
                         for m, ds in tall.items())
        findings.append(Finding("facility-infra-device-over-rack-limit", "error",
                                f"{what}: taller than the {usable_u} usable units of a rack "
                                f"({fac.rack_units}U less {fac.reserved_rack_units}U reserved); each is counted "
                                f"in a rack of its own that cannot hold it",
                                fix=f"racks of at least {need + fac.reserved_rack_units}U",
                                field="facility.rack_units"))
    if hot:
        need_kw = max(d.power_w for ds in hot.values() for d in ds) / W_PER_KW
        what = "; ".join(f"{name(m, ds)} of {max(d.power_w for d in ds) / W_PER_KW:,.1f} kW"
                         for m, ds in hot.items())
        key = "facility.rack_power_limit_kw" if power_binds else "facility.rack_cooling_limit_kw"
        findings.append(Finding("facility-infra-device-over-rack-limit", "error",
                                f"{what}: above the {cap_w / W_PER_KW:,.1f} kW a rack's power and cooling carry; "
                                f"each is counted in a rack of its own that cannot carry it",
                                fix=f"raise the rack {'power' if power_binds else 'cooling'} limit to at least "
                                    f"{math.ceil(need_kw)} kW, or use better cooling", field=key))


def _vendor_infra_racks(scenario: Scenario, server: dict[str, Any] | None, nodes: int, fit: RackFit) -> int:
    """Network and management racks of the vendor's scalable-unit layout [count], or 0.

    It applies with the vendor's rack layout (no rack limits in the scenario) when the server
    row gives ``su_nodes_count`` and ``su_network_racks_count``: SUs = ceil((nodes + fabric
    manager slots) / SU nodes); racks = SUs x network racks per SU + the pod's management racks
    (NVIDIA DGX SuperPOD H100 RA Table 7: 4 SUs, 127 nodes, 38 racks).
    """
    if not server or fit.basis != "vendor" or not server.get("su_nodes_count") or \
            server.get("su_network_racks_count") is None:
        return 0
    net = scenario.network
    per_node = (net.nics_per_node or server.get("compute_nic_count") or 1)
    slots = math.ceil(net.fabric_manager_ports / per_node) if net.fabric_manager_ports else 0
    sus = math.ceil((nodes + slots) / int(server["su_nodes_count"]))
    return sus * int(server["su_network_racks_count"]) + int(server.get("pod_management_racks_count") or 0)


def _rack_findings(fit: RackFit, node: NodeDesign, fac: Any, cooling_limit_kw: float,
                   findings: list[Finding]) -> None:
    lim = fit.limits
    peak_kw = node.peak_power_w / W_PER_KW
    if lim["power"] < 1:
        findings.append(Finding("facility-rack-power", "error",
                                f"one node's peak {peak_kw:,.1f} kW exceeds the rack power limit "
                                f"{fit.power_limit_w / W_PER_KW:g} kW", fix=f"raise the rack power limit to at "
                                f"least {math.ceil(peak_kw + pa.MGMT_SWITCH_W / W_PER_KW)} kW",
                                field="facility.rack_power_limit_kw"))
    if lim["cooling"] < 1:
        findings.append(Finding("facility-rack-cooling", "error",
                                f"one node's peak {peak_kw:,.1f} kW exceeds what {fac.cooling} cooling removes per "
                                f"rack ({cooling_limit_kw:g} kW)",
                                fix="rear-door or direct liquid cooling", field="facility.cooling"))
    if lim["weight"] < 1:
        findings.append(Finding("facility-rack-weight", "error",
                                f"one node ({node.weight_kg:,.0f} kg) exceeds the rack weight limit "
                                f"{fac.rack_weight_limit_kg:g} kg", field="facility.rack_weight_limit_kg",
                                fix="a rack with a higher load rating"))
    if node.weight_estimated:
        findings.append(Finding("facility-rack-weight", "info",
                                f"node weight not in the catalogue; estimated {node.weight_kg:,.0f} kg "
                                f"({pa.SERVER_KG_PER_U:g} kg per U)", fix="add the server's weight to its row of the server catalogue"))
    if fit.fits:
        others = ", ".join(f"{c} {lim[c]}" for c in CONSTRAINTS if c != fit.binding)
        if fit.basis == "rack-scale":
            findings.append(Finding("facility-rack-fit", "info", "; ".join(fit.notes)))
        else:
            findings.append(Finding("facility-rack-fit", "info",
                                    f"{plural(fit.nodes_per_rack, 'node')} per {fac.rack_units}U rack, limited by "
                                    f"{fit.binding} ({others})" + (f"; {fit.notes[0]}" if fit.notes else "")))


def infra_rack_count(infra_ru: Any, infra_w: Any, compute_racks: Any, free_u: Any, free_w: Any, usable_u: float,
                     cap_w: float) -> Any:
    """Racks for network, storage and head nodes (vectorised).

    A single-rack cluster keeps them in its one compute rack when they fit the space and
    power left there; otherwise they get their own racks, as many as their rack units or
    their power (against the rack's power/cooling cap) need.
    """
    infra_ru, infra_w = np.asarray(infra_ru, dtype=float), np.asarray(infra_w, dtype=float)
    own = np.maximum(np.ceil(infra_ru / usable_u), np.ceil(infra_w / cap_w))
    fits = (np.asarray(compute_racks) == 1) & (infra_ru <= np.asarray(free_u)) & (infra_w <= np.asarray(free_w))
    return np.where((infra_ru <= 0) | fits, 0, own).astype(int)


def _infra_items(net_ru: int, storage_ru: int, heads: int, net_w: float, storage_w: float) -> list[tuple]:
    out = []
    if net_ru:
        out.append(("network switches", "switch", int(net_ru), net_w))
    if storage_ru:
        out.append(("storage", "storage", int(storage_ru), storage_w))
    for i in range(heads):
        out.append((f"head node {i + 1}", "head", pa.HEAD_NODE_RACK_UNITS, pa.HEAD_NODE_PEAK_W))
    return out


def rack_elevation(node: NodeDesign, nodes_in_rack: int, rack_units: int, reserved_u: int,
                   extra: tuple | list = ()) -> list[RackItem]:
    """Devices of a representative compute rack from the bottom up: nodes, any shared
    infrastructure (``extra``: (label, kind, height U, W)), then the management switch and
    patch panel at the top, the rest empty."""
    items: list[RackItem] = []
    u = 1
    for i in range(nodes_in_rack):
        items.append(RackItem(f"node {i + 1}: {node.server_id or node.chassis_id or 'node'}", "node", u,
                              node.rack_units, node.peak_power_w))
        u += node.rack_units
    for label, kind, height, watts in extra:
        items.append(RackItem(label, kind, u, height, watts))
        u += height
    top = rack_units + 1
    tail: list[RackItem] = []
    if reserved_u >= 1:
        top -= 1
        tail.append(RackItem("management switch", "switch", top, 1, pa.MGMT_SWITCH_W))
    if reserved_u >= 2:
        top -= reserved_u - 1
        tail.append(RackItem("patch panel / cable management", "patch", top, reserved_u - 1, 0.0))
    if top > u:
        items.append(RackItem("empty", "empty", u, top - u, 0.0))
    return items + sorted(tail, key=lambda it: it.bottom_u)


# --------------------------------------------------------------------------- growth


def growth_table(b: Budget, node_counts: np.ndarray | list[int], scenario: Scenario | None = None,
                 catalog: Catalog | None = None) -> pd.DataFrame:
    """Racks, IT and facility power against node count, vectorised from a budget.

    The node, rack fit, PUE, storage rule and head nodes come from ``b``. Network power:
    it scales linearly with the node count (an approximation: real fabrics grow in steps;
    the Network tab's growth chart counts them). Infrastructure racks hold as many units
    each as the budget's full racks of whole devices hold (``Budget.infra_layout`` without
    its least filled rack).

    Returns
    -------
    DataFrame with columns nodes, racks, it_mw, facility_mw.
    """
    import pandas as pd

    n = np.asarray(node_counts, dtype=float)
    if np.any(n < 1):
        raise ScenarioError("nodes", "node counts must be at least 1")
    node = b.node
    compute_racks = np.ceil(n / b.nodes_per_rack) * b.rack_fit.racks_per_node
    per = b.network_power_w / b.nodes
    net_w = per * n
    net_ru = np.ceil(b.network_rack_units / b.nodes * n)
    infra_net_w = net_w
    fac_store = b.storage_power_w if (scenario is not None and scenario.facility.storage_power_kw is not None) else None
    if fac_store is not None:
        storage_w = np.full_like(n, fac_store)
        storage_ru = np.full_like(n, b.storage_rack_units)
    elif b.storage is not None:
        # the storage design does not depend on the node count beyond one node / more
        st = b.storage
        if scenario is not None:
            cat = catalog or catalog_for(scenario)
            one = size_storage(scenario, cat, nodes=1, checkpoint_bytes=st.checkpoint_bytes).appliances
            many = size_storage(scenario, cat, nodes=2, checkpoint_bytes=st.checkpoint_bytes).appliances
        else:
            one = st.appliances if b.nodes == 1 else 0
            many = st.appliances if st.appliances else max(st.by_bandwidth, st.by_capacity, 1)
        appl = np.where(n > 1, many, one)
        if st.basis != "scenario" and (st.by_read or st.by_write) and b.nodes > 1:
            # the read and sustained-write needs scale with the GPUs (facility.storage)
            scale = n / b.nodes
            by_gpus = np.maximum(np.ceil(st.by_read * scale - 1e-9), np.ceil(st.by_write * scale - 1e-9))
            appl = np.where(n > 1, np.maximum(max(st.by_bandwidth, st.by_capacity, st.by_data, 1), by_gpus), one)
        cap_units = np.where(appl > 0, st.capacity_units, 0)
        storage_w = appl * st.appliance_power_w + cap_units * st.capacity_unit_power_w
        storage_ru = appl * st.appliance_rack_units + cap_units * st.capacity_unit_rack_units
    else:
        storage_w = np.zeros_like(n)
        storage_ru = np.zeros_like(n)
    head_w = b.head_power_w
    head_ru = b.head_nodes * pa.HEAD_NODE_RACK_UNITS
    usable_u = max(1, b.rack_units - (scenario.facility.reserved_rack_units if scenario else pa.RESERVED_RACK_UNITS))
    cap_w = b.rack_power_kw * W_PER_KW if scenario is None else min(b.rack_fit.power_limit_w, b.rack_fit.cooling_limit_w)
    infra_ru = net_ru + storage_ru + head_ru
    if len(b.infra_layout) > 1:
        # whole devices fill a rack less than fully (two 16U chassis in 40U): as the budget's
        # full racks are packed. The least filled rack holds what was left over, so it is not
        # counted: with it, 38U + 4U would read 21U a rack and twice the devices 4 racks, not 3.
        fills = sorted(sum(x.height_u for x in rack) for rack in b.infra_layout)[1:]
        usable_u = min(usable_u, sum(fills) / len(fills))
    reserved = scenario.facility.reserved_rack_units if scenario else pa.RESERVED_RACK_UNITS
    free_u = b.rack_units - min(reserved, b.rack_units - node.rack_units) - n * node.rack_units
    free_w = cap_w - pa.MGMT_SWITCH_W - n * node.peak_power_w
    infra_racks = infra_rack_count(infra_ru, infra_net_w + storage_w + head_w, compute_racks, free_u, free_w,
                                   usable_u, cap_w)
    it_w = n * node.peak_power_w + net_w + storage_w + head_w
    return pd.DataFrame({
        "nodes": n.astype(int),
        "racks": (compute_racks + infra_racks).astype(int),
        "it_mw": it_w / W_PER_KW / KW_PER_MW,
        "facility_mw": it_w * b.pue / W_PER_KW / KW_PER_MW,
    })


def default_node_counts(nodes: int, points: int = 24) -> np.ndarray:
    """Node counts for the growth chart: 1 to max(4 x nodes, 16), log-spaced, unique."""
    top = max(4 * nodes, 16)
    return np.unique(np.round(np.geomspace(1, top, points)).astype(int))
