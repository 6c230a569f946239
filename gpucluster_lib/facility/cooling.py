"""The liquid cooling plant: cold-plate loops, coolant distribution units, facility water, rear doors.

:func:`cooling_plant` splits each rack's heat between liquid and air and sizes the plant that
carries it:

* **direct liquid cooling** (``facility.cooling: liquid``): the parts on cold plates (the
  server row's ``liquid_cooled_parts``, e.g. GB200 NVL72 ``gpu; cpu; network`` from its
  MLCommons system description; otherwise :data:`power_assumptions.LIQUID_HEAT_FRACTION`)
  go to the technology cooling loop; the rest of the node and every network, storage and
  head-node rack stay on air (the residual air load). Coolant distribution units (CDUs)
  exchange the loop's heat into facility water, **in-row** (one unit feeds a row of racks)
  or **in-rack** (one unit per rack), with one redundant unit per group (N+1);
* **rear-door heat exchangers** (``facility.cooling: rear_door``): the servers stay
  air-cooled; a water coil in each rack door takes up to its capacity of the exhaust heat
  (:data:`power_assumptions.COOLING_DENSITY_LIMIT_KW` ``rear_door``, 50 kW); what a rack
  releases above that reaches the room;
* **air**: all heat to the room's air handlers; no water loop at the racks.

Coolant flow from heat and temperature rise (sensible heat of a liquid, e.g. ASHRAE
Handbook Fundamentals ch. 1; ASHRAE TC 9.9 "Liquid Cooling Guidelines for Datacom Equipment
Centers"):

.. math::

    \\dot V = \\frac{P}{\\rho \\, c_p \\, \\Delta T} \\qquad [\\mathrm{m^3/s}],
    \\qquad \\dot V_{l/min} = 60\\,000 \\, \\dot V

with water at 25 C: rho = 997.0 kg/m^3, c_p = 4,181 J/(kg K) (NIST Chemistry WebBook, water
at 0.1 MPa). 100 kW at a 10 K rise is 100,000 / (997 x 4,181 x 10) = 2.399 l/s = 143.9 l/min.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from gpucluster_lib.errors import ScenarioError, one_of, yaml_value
from gpucluster_lib.findings import Finding
from gpucluster_lib.hardware import power_assumptions as pa
from gpucluster_lib.units import W_PER_KW

#: Density of water at 25 C and 0.1 MPa [kg/m^3] (NIST Chemistry WebBook, SRD 69, isobaric data).
WATER_DENSITY_KG_PER_M3 = 997.0
#: Isobaric specific heat of water at 25 C [J/(kg K)] (NIST Chemistry WebBook, SRD 69).
WATER_CP_J_PER_KG_K = 4181.0
#: Litres per cubic metre and seconds per minute.
L_PER_M3 = 1000.0
S_PER_MIN = 60.0
#: Heat one CDU exchanges [kW] by kind. ESTIMATES from vendor ranges: in-rack CDUs are about
#: 50-200 kW in 4-8U (resistancezero.com CDU selection guide, "In-rack CDU ~50-200 kW"), 100 kW
#: taken; in-row liquid-to-liquid CDUs are about 0.5-2.6 MW (same guide; panic-nb.com: enterprise
#: CDU platforms to 2.6 MW), 1,000 kW taken. Set facility.cdu_capacity_kw to the chosen model's.
CDU_CAPACITY_KW = {"in-row": 1000.0, "in-rack": 100.0}
#: In-row CDUs serve at most this many racks per group (one row) before another group starts.
#: ESTIMATE: secondary manifolds run along one row.
CDU_REDUNDANT_UNITS = 1  # N+1 per group (ASHRAE TC 9.9: concurrently maintainable pumps/exchangers)


def coolant_flow_l_per_min(heat_w: float, delta_t_k: float, *, density_kg_per_m3: float = WATER_DENSITY_KG_PER_M3,
                           cp_j_per_kg_k: float = WATER_CP_J_PER_KG_K) -> float:
    """Coolant flow that carries ``heat_w`` at a supply/return rise ``delta_t_k`` [l/min].

    V = P / (rho c_p dT) [m^3/s] x 60,000 (module doc). Water at 25 C by default; pass the
    properties of a glycol mix (e.g. PG25: about 1,020 kg/m^3 and 3,900 J/(kg K)).
    """
    if delta_t_k <= 0:
        raise ScenarioError("facility.coolant_delta_t_c", f"must be a positive temperature rise, got {delta_t_k!r}")
    if heat_w < 0:
        raise ScenarioError("heat_w", f"must not be negative, got {heat_w!r}")
    return heat_w / (density_kg_per_m3 * cp_j_per_kg_k * delta_t_k) * L_PER_M3 * S_PER_MIN


def liquid_fraction(node: Any, server: dict[str, Any] | None, cooling: str) -> float:
    """Share of a compute node's heat that leaves in liquid [fraction].

    Direct liquid cooling: the node's power in the categories on cold plates (the server row's
    ``liquid_cooled_parts``, ``;``-separated node power categories: gpu, cpu, memory, network,
    storage) over its total, from the node's power table; without that column the
    :data:`power_assumptions.LIQUID_HEAT_FRACTION` estimate (0.75). Air and rear-door: 0 (the
    node itself is air-cooled; a rear door captures its exhaust outside the node).
    """
    if cooling != "liquid":
        return 0.0
    parts = str((server or {}).get("liquid_cooled_parts") or "").strip()
    if not parts:
        return pa.LIQUID_HEAT_FRACTION["liquid"]
    cats = {p.strip() for p in parts.replace(",", ";").split(";") if p.strip()}
    per = node.by_category()
    total = sum(per.values())
    return sum(v for k, v in per.items() if k in cats) / total if total else 0.0


@dataclass(frozen=True)
class CoolingPlant:
    """Heat paths and the liquid plant of a design. Powers in kW, flows in l/min."""

    cooling: str
    compute_racks: int
    rack_heat_kw: float
    rack_liquid_kw: float
    rack_air_kw: float
    liquid_fraction: float
    liquid_kw: float
    air_kw: float
    rear_door_kw: float
    rear_doors: int
    cdu_kind: str | None
    cdu_capacity_kw: float | None
    cdus: int
    cdu_groups: int
    coolant_delta_t_c: float
    facility_water_delta_t_c: float
    secondary_flow_l_per_min: float
    rack_flow_l_per_min: float
    facility_water_flow_l_per_min: float
    findings: list[Finding] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "cooling": self.cooling, "compute_racks": self.compute_racks,
            "rack_heat_kw": round(self.rack_heat_kw, 3), "rack_liquid_kw": round(self.rack_liquid_kw, 3),
            "rack_air_kw": round(self.rack_air_kw, 3), "liquid_fraction": round(self.liquid_fraction, 4),
            "liquid_kw": round(self.liquid_kw, 3), "air_kw": round(self.air_kw, 3),
            "rear_door_kw": round(self.rear_door_kw, 3), "rear_doors": self.rear_doors,
            "cdu_kind": self.cdu_kind, "cdu_capacity_kw": self.cdu_capacity_kw, "cdus": self.cdus,
            "cdu_groups": self.cdu_groups, "coolant_delta_t_c": self.coolant_delta_t_c,
            "facility_water_delta_t_c": self.facility_water_delta_t_c,
            "secondary_flow_l_per_min": round(self.secondary_flow_l_per_min, 1),
            "rack_flow_l_per_min": round(self.rack_flow_l_per_min, 1),
            "facility_water_flow_l_per_min": round(self.facility_water_flow_l_per_min, 1),
        }


def cooling_plant(*, cooling: str, compute_racks: int, nodes: int, node_peak_w: float, node_liquid_fraction: float,
                  other_it_w: float, racks_per_row: int, cdu: str = "in-row", cdu_capacity_kw: float | None = None,
                  coolant_delta_t_c: float = 10.0, facility_water_delta_t_c: float = 10.0) -> CoolingPlant:
    """Split the heat between liquid and air and size CDUs, rear doors and water flows.

    Parameters
    ----------
    cooling : "air", "rear_door" or "liquid"
    compute_racks : compute racks [count]; ``nodes`` installed compute nodes [count]
    node_peak_w : one node's peak power [W]; ``node_liquid_fraction`` its share on cold plates
    other_it_w : network, storage and head-node power, all air-cooled [W]
    racks_per_row : racks in one row (one in-row CDU group per row)
    cdu : "in-row" or "in-rack"; ``cdu_capacity_kw`` one unit's heat [kW] (default by kind)
    coolant_delta_t_c, facility_water_delta_t_c : supply/return rises of the technology
        loop and of the facility water [K]

    Returns
    -------
    CoolingPlant. In-row: per row of r racks, ceil(liquid heat / capacity) + 1 units; in-rack:
    ceil(rack liquid heat / capacity) + 1 per rack. Rear doors: one per compute rack; a rack's
    heat above the door capacity is residual air.
    """
    if cdu not in CDU_CAPACITY_KW:
        raise ScenarioError("facility.cdu", f"must be one of {one_of(CDU_CAPACITY_KW)}, not {yaml_value(cdu)}")
    cap = float(cdu_capacity_kw) if cdu_capacity_kw is not None else CDU_CAPACITY_KW[cdu]
    if cap <= 0:
        raise ScenarioError("facility.cdu_capacity_kw", f"must be a positive number of kW, got {cap!r}")
    findings: list[Finding] = []
    node_heat_w = nodes * node_peak_w
    rack_heat_w = node_heat_w / compute_racks if compute_racks else 0.0
    frac = node_liquid_fraction if cooling == "liquid" else 0.0
    rack_liquid_w = rack_heat_w * frac
    rack_air_w = rack_heat_w - rack_liquid_w
    liquid_w = node_heat_w * frac
    air_w = node_heat_w - liquid_w + other_it_w
    door_w = 0.0
    doors = 0
    cdus = groups = 0
    kind: str | None = None
    if cooling == "rear_door":
        doors = compute_racks
        door_cap_w = pa.COOLING_DENSITY_LIMIT_KW["rear_door"] * W_PER_KW
        per_door = min(rack_heat_w, door_cap_w)
        door_w = per_door * doors
        air_w = node_heat_w - door_w + other_it_w
        rack_liquid_w, rack_air_w = per_door, rack_heat_w - per_door
        if rack_heat_w > door_cap_w:
            findings.append(Finding("facility-rear-door-overflow", "warning",
                                    f"each compute rack releases {rack_heat_w / W_PER_KW:,.1f} kW, above the "
                                    f"{door_cap_w / W_PER_KW:g} kW a rear door removes: "
                                    f"{(rack_heat_w - door_cap_w) / W_PER_KW:,.1f} kW a rack reaches the room",
                                    fix="fewer nodes per rack, or direct liquid cooling",
                                    field="facility.cooling"))
    elif cooling == "liquid" and liquid_w > 0:
        kind = cdu
        if cdu == "in-rack":
            per_rack = math.ceil(rack_liquid_w / (cap * W_PER_KW) - 1e-9) + CDU_REDUNDANT_UNITS
            cdus, groups = per_rack * compute_racks, compute_racks
        else:
            rows = math.ceil(compute_racks / racks_per_row)
            for r in range(rows):
                racks_here = min(racks_per_row, compute_racks - r * racks_per_row)
                cdus += math.ceil(racks_here * rack_liquid_w / (cap * W_PER_KW) - 1e-9) + CDU_REDUNDANT_UNITS
            groups = rows
        if cdu == "in-rack" and rack_liquid_w > cap * W_PER_KW:
            findings.append(Finding("facility-cdu-in-rack", "info",
                                    f"a rack's {rack_liquid_w / W_PER_KW:,.1f} kW on liquid needs "
                                    f"{per_rack - CDU_REDUNDANT_UNITS} in-rack CDUs of {cap:g} kW (plus one spare)",
                                    fix="in-row coolant distribution units (CDUs) for racks this dense", field="facility.cdu"))
    sec = coolant_flow_l_per_min(liquid_w + door_w, coolant_delta_t_c)
    rack_flow = coolant_flow_l_per_min(rack_liquid_w, coolant_delta_t_c)
    fws = coolant_flow_l_per_min(liquid_w + door_w, facility_water_delta_t_c)
    return CoolingPlant(
        cooling=cooling, compute_racks=compute_racks, rack_heat_kw=rack_heat_w / W_PER_KW,
        rack_liquid_kw=rack_liquid_w / W_PER_KW, rack_air_kw=rack_air_w / W_PER_KW, liquid_fraction=frac,
        liquid_kw=liquid_w / W_PER_KW, air_kw=air_w / W_PER_KW, rear_door_kw=door_w / W_PER_KW, rear_doors=doors,
        cdu_kind=kind, cdu_capacity_kw=cap if kind else None, cdus=cdus, cdu_groups=groups,
        coolant_delta_t_c=coolant_delta_t_c, facility_water_delta_t_c=facility_water_delta_t_c,
        secondary_flow_l_per_min=sec, rack_flow_l_per_min=rack_flow, facility_water_flow_l_per_min=fws,
        findings=findings)
