"""Does a node fit a rack, and how many: space, power, cooling and weight limits.

One rack fit for the whole library: the facility budget packs compute racks with it, the
network design lays its racks out with it, and the serving fleet's quick estimate uses it.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpucluster_lib.errors import ScenarioError
from gpucluster_lib.hardware import power_assumptions as pa
from gpucluster_lib.hardware.node import NodeDesign
from gpucluster_lib.scenario import FacilitySpec, Scenario
from gpucluster_lib.units import W_PER_KW

CONSTRAINTS = ("space", "power", "cooling", "weight")


@dataclass(frozen=True)
class RackFit:
    """Nodes per rack under each limit; ``nodes_per_rack`` is the smallest (at least 1)."""

    limits: dict[str, int]
    nodes_per_rack: int
    binding: str

    @property
    def fits(self) -> bool:
        return self.limits[self.binding] >= 1


def rack_fit(node_u: int, node_peak_w: float, node_kg: float, *, rack_units: int, rack_power_limit_w: float,
             rack_weight_limit_kg: float, cooling_limit_w: float, reserved_u: int = pa.RESERVED_RACK_UNITS,
             reserved_w: float = 0.0, reserved_kg: float = 0.0) -> RackFit:
    """How many nodes fit one rack, and which limit binds first.

    space = floor((U - reserved U) / node U), power = floor((P_rack - reserved W) / node peak),
    cooling = floor((cooling ceiling - reserved W) / node peak),
    weight = floor((weight limit - reserved kg) / node kg). Ties go to the earlier of
    space, power, cooling, weight. A node that breaks a power, cooling or weight limit on
    its own still gets a rack to itself (``fits`` is False; the budget reports it).

    Raises
    ------
    ScenarioError
        a non-positive power or limit, or a rack shorter than one node.
    """
    if node_peak_w <= 0:
        raise ScenarioError("node peak_power_w", f"must be a positive number of watts, got {node_peak_w!r}")
    if node_u <= 0:
        raise ScenarioError("node rack_units", f"must be a positive number of rack units, got {node_u!r}")
    if node_kg <= 0:
        raise ScenarioError("node weight_kg", f"must be a positive weight, got {node_kg!r}")
    for name, v in (("facility.rack_power_limit_kw", rack_power_limit_w), ("facility.rack_cooling_limit_kw",
                                                                            cooling_limit_w),
                    ("facility.rack_weight_limit_kg", rack_weight_limit_kg)):
        if v <= 0:
            raise ScenarioError(name, f"must be a positive number, got {v!r}")
    if rack_units < node_u:
        raise ScenarioError("facility.rack_units",
                            f"a {rack_units}U rack is shorter than one {node_u}U node; use a taller rack "
                            f"(at least {node_u}U, e.g. 42 or 48)")
    space = (rack_units - reserved_u) // node_u if rack_units - reserved_u >= node_u else 1
    limits = {
        "space": int(space),
        "power": int(max(0.0, rack_power_limit_w - reserved_w) // node_peak_w),
        "cooling": int(max(0.0, cooling_limit_w - reserved_w) // node_peak_w),
        "weight": int(max(0.0, rack_weight_limit_kg - reserved_kg) // node_kg),
    }
    binding = min(CONSTRAINTS, key=lambda c: (limits[c], CONSTRAINTS.index(c)))
    return RackFit(limits=limits, nodes_per_rack=max(1, limits[binding]), binding=binding)


def cooling_limit_kw_of(fac: FacilitySpec) -> float:
    """Heat one rack's cooling removes [kW]: ``facility.rack_cooling_limit_kw``, else by cooling type."""
    return fac.rack_cooling_limit_kw or pa.COOLING_DENSITY_LIMIT_KW[fac.cooling]


def reserved_units(fac: FacilitySpec, node: NodeDesign) -> int:
    """Rack units kept free in a compute rack (management switch, patch panel) [U], never more
    than what leaves room for one node."""
    return min(fac.reserved_rack_units, max(0, fac.rack_units - node.rack_units))


def node_rack_fit(scenario: Scenario, node: NodeDesign) -> RackFit:
    """The rack fit of the scenario's node under its facility limits (``facility.rack_units``,
    ``rack_power_limit_kw``, ``rack_weight_limit_kg``, the cooling ceiling), with the reserved
    units holding the rack's management switch (:data:`power_assumptions.MGMT_SWITCH_W`)."""
    fac = scenario.facility
    reserved_u = reserved_units(fac, node)
    return rack_fit(node.rack_units, node.peak_power_w, node.weight_kg, rack_units=fac.rack_units,
                    rack_power_limit_w=fac.rack_power_limit_kw * W_PER_KW,
                    rack_weight_limit_kg=fac.rack_weight_limit_kg,
                    cooling_limit_w=cooling_limit_kw_of(fac) * W_PER_KW,
                    reserved_u=reserved_u, reserved_w=pa.MGMT_SWITCH_W if reserved_u else 0.0,
                    reserved_kg=pa.MGMT_SWITCH_KG if reserved_u else 0.0)
