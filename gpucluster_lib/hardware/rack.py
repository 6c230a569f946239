"""Does a node fit a rack, and how many: space, power, cooling and weight limits.

One rack fit for the whole library: the facility budget packs compute racks with it, the
network design lays its racks out with it, and the serving fleet's quick estimate uses it.

Two vendor shapes come before the generic limits:

* a **rack-scale system** (servers.csv ``racks_count``: GB200/GB300 NVL72 1, NVL36x2 2) is its
  own rack: one node per ``racks_count`` racks, its power and cooling are its own (a facility
  limit below them is an error finding, not a repacking);
* a **vendor rack layout** (servers.csv ``rack_systems_count``: DGX H100 SuperPOD, 4 systems per
  air-cooled rack at 4 x 10.2 kW = 40.8 kW, NVIDIA DGX SuperPOD H100 RA) sets the rack power and
  cooling limits to that rack's power when the scenario gives neither
  ``facility.rack_power_limit_kw`` nor ``facility.rack_cooling_limit_kw``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

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
    #: racks one node occupies: 1 for a rack-mount server or an NVL72 rack, 2 for NVL36x2
    racks_per_node: int = 1
    #: where the limits came from: "facility" (scenario or defaults), "vendor" (the vendor's
    #: reference rack layout) or "rack-scale" (the node is the rack)
    basis: str = "facility"
    #: the rack power and cooling limits used [W]
    power_limit_w: float = 0.0
    cooling_limit_w: float = 0.0
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def fits(self) -> bool:
        return self.limits[self.binding] >= 1

    def racks_for(self, nodes: int) -> int:
        """Compute racks for ``nodes`` nodes [count]: ceil(nodes / nodes per rack) x racks per node."""
        return math.ceil(nodes / self.nodes_per_rack) * self.racks_per_node if nodes > 0 else 0


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


def rack_power_limit_kw_of(fac: FacilitySpec) -> float:
    """Power one rack's feeds deliver [kW]: ``facility.rack_power_limit_kw``, else
    :data:`power_assumptions.DEFAULT_RACK_POWER_KW` (40 kW)."""
    return fac.rack_power_limit_kw or pa.DEFAULT_RACK_POWER_KW


def vendor_layout(fac: FacilitySpec, server: dict[str, Any] | None) -> int | None:
    """Systems per rack of the vendor's reference layout, when it applies [count].

    It applies when the server row has ``rack_systems_count`` and the scenario sets neither
    rack limit (``facility.rack_power_limit_kw``, ``facility.rack_cooling_limit_kw``): the
    defaults follow the vendor, explicit limits follow the site.
    """
    if not server or not server.get("rack_systems_count"):
        return None
    if fac.rack_power_limit_kw is not None or fac.rack_cooling_limit_kw is not None:
        return None
    return int(server["rack_systems_count"])


def reserved_units(fac: FacilitySpec, node: NodeDesign) -> int:
    """Rack units kept free in a compute rack (management switch, patch panel) [U], never more
    than what leaves room for one node."""
    return min(fac.reserved_rack_units, max(0, fac.rack_units - node.rack_units))


def node_rack_fit(scenario: Scenario, node: NodeDesign, server: dict[str, Any] | None = None) -> RackFit:
    """The rack fit of the scenario's node under its facility limits (``facility.rack_units``,
    ``rack_power_limit_kw``, ``rack_weight_limit_kg``, the cooling ceiling), with the reserved
    units holding the rack's management switch (:data:`power_assumptions.MGMT_SWITCH_W`).

    ``server``: the node's catalogue row. A rack-scale system (``racks_count``) is its own rack;
    a vendor rack layout (``rack_systems_count``) sets the power and cooling limits to that many
    systems at their peak (plus the management switch) when the scenario gives no rack limits.
    """
    fac = scenario.facility
    if server and server.get("racks_count"):
        return rack_scale_fit(fac, node, int(server["racks_count"]))
    reserved_u = reserved_units(fac, node)
    reserved_w = pa.MGMT_SWITCH_W if reserved_u else 0.0
    per_rack = vendor_layout(fac, server)
    if per_rack is not None:
        limit_w = per_rack * node.peak_power_w + reserved_w
        cooling_w = limit_w
        basis = "vendor"
        notes: tuple[str, ...] = (f"{server['id']} reference rack: {per_rack} systems at {node.peak_power_w / W_PER_KW:g} kW "
                                  f"= {per_rack * node.peak_power_w / W_PER_KW:g} kW (vendor reference architecture)",)
    else:
        limit_w = rack_power_limit_kw_of(fac) * W_PER_KW
        cooling_w = cooling_limit_kw_of(fac) * W_PER_KW
        basis, notes = "facility", ()
    fit = rack_fit(node.rack_units, node.peak_power_w, node.weight_kg, rack_units=fac.rack_units,
                   rack_power_limit_w=limit_w, rack_weight_limit_kg=fac.rack_weight_limit_kg,
                   cooling_limit_w=cooling_w, reserved_u=reserved_u, reserved_w=reserved_w,
                   reserved_kg=pa.MGMT_SWITCH_KG if reserved_u else 0.0)
    return RackFit(limits=fit.limits, nodes_per_rack=fit.nodes_per_rack, binding=fit.binding, basis=basis,
                   power_limit_w=limit_w, cooling_limit_w=cooling_w, notes=notes)


def rack_scale_fit(fac: FacilitySpec, node: NodeDesign, racks_per_node: int) -> RackFit:
    """A rack-scale system's "fit": one node per ``racks_per_node`` racks.

    Its racks carry its own power shelves and cold plates, so the node's peak is the rack's
    power and cooling. A ``facility.rack_power_limit_kw`` or ``rack_cooling_limit_kw`` given
    below the power per rack leaves the limit at 0 (``fits`` False: an error finding in the
    budget); unset, the system's own figures apply (NVIDIA GB200 NVL72: about 120-132 kW a rack).
    """
    per_rack_w = node.peak_power_w / racks_per_node
    power_w = fac.rack_power_limit_kw * W_PER_KW if fac.rack_power_limit_kw is not None else per_rack_w
    cooling_w = fac.rack_cooling_limit_kw * W_PER_KW if fac.rack_cooling_limit_kw is not None else per_rack_w
    limits = {"space": 1, "power": int(power_w >= per_rack_w - 1e-6), "cooling": int(cooling_w >= per_rack_w - 1e-6),
              "weight": 1}
    binding = min(CONSTRAINTS, key=lambda c: (limits[c], CONSTRAINTS.index(c)))
    return RackFit(limits=limits, nodes_per_rack=1, binding=binding, racks_per_node=racks_per_node,
                   basis="rack-scale", power_limit_w=power_w, cooling_limit_w=cooling_w,
                   notes=(f"rack-scale system: one node takes {racks_per_node} rack(s) of "
                          f"{per_rack_w / W_PER_KW:,.1f} kW each",))


@dataclass(frozen=True)
class RackDevice:
    """A whole device to rack (a switch, a storage appliance, a head node): it cannot be split
    across racks. ``index`` numbers the devices of one (kind, role, model) from 0."""

    kind: str  # switch, storage, capacity, head
    role: str
    model: str
    height_u: int
    power_w: float
    index: int = 0


def pack_racks(devices: list[RackDevice] | tuple[RackDevice, ...], usable_u: int,
               cap_w: float) -> tuple[tuple[RackDevice, ...], ...]:
    """Whole devices into as few racks as first-fit decreasing finds [racks of devices].

    Each rack holds at most ``usable_u`` units and ``cap_w`` watts (the rack's power and
    cooling cap). Devices go tallest first (then highest power, then their given order)
    into the first rack with room for both their height and their power, else a new rack:
    first-fit decreasing bin packing (D. S. Johnson, "Near-optimal bin packing algorithms",
    MIT thesis 1973; at most 11/9 OPT + 6/9 racks for one dimension, G. Dósa 2007), here
    with two capacities (units and watts). A device taller than ``usable_u`` or above
    ``cap_w`` on its own gets a rack to itself. Deterministic: ties keep the given order.
    """
    if usable_u < 1:
        raise ScenarioError("facility.rack_units", f"a rack needs at least 1 usable unit, got {usable_u!r}")
    order = sorted(range(len(devices)), key=lambda i: (-devices[i].height_u, -devices[i].power_w, i))
    racks: list[list[RackDevice]] = []
    free_u: list[int] = []
    free_w: list[float] = []
    first_open = 0  # racks before it have no unit left
    last: tuple[int, float] | None = None
    start = 0
    for i in order:
        dev = devices[i]
        h, w = int(dev.height_u), float(dev.power_w)
        # a device like the one before cannot go into a rack that had no room for that one
        r = max(first_open, start if (h, w) == last else 0)
        while r < len(racks) and not (free_u[r] >= h and free_w[r] >= w - 1e-9):
            r += 1
        if r == len(racks):
            racks.append([])
            free_u.append(usable_u)
            free_w.append(cap_w)
        racks[r].append(dev)
        free_u[r] = max(free_u[r] - h, 0)
        free_w[r] = max(free_w[r] - w, 0.0)
        last, start = (h, w), r
        while first_open < len(racks) and free_u[first_open] == 0:
            first_open += 1
    return tuple(tuple(r) for r in racks)
