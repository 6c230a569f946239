"""Rack layout and rack elevations (one SVG per rack) of a design.

The layout follows the facility budget: ``compute_racks`` racks of ``nodes_per_rack``
installed nodes each (job nodes, then the hot spares), each with the reserved units at the
top (patch panel and cable management); then the
infrastructure racks with every switch of the network design (compute fabric leaves, spines
and cores under the cable list's names, storage and management switches), the storage
appliances and the head nodes, packed first-fit bottom-up. When the budget shares one rack
(``infra_racks == 0``) the infrastructure goes into the compute rack's free units.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

from gpucluster_lib.design import Design
from gpucluster_lib.hardware import power_assumptions as pa

#: Fill colours of the elevation drawing by device kind.
COLOURS = {"node": "#4c78a8", "spare": "#9ecae9", "switch": "#f58518", "storage": "#54a24b", "head": "#b279a2",
           "patch": "#bab0ac", "empty": "#ffffff"}
U_PX = 14
RACK_W = 300
MARGIN = 34


@dataclass(frozen=True)
class RackDevice:
    """One device in a rack: ``position`` is its lowest unit (1-based), ``model`` a catalogue id."""

    name: str
    kind: str  # node, spare, switch, storage, head, patch
    role: str
    model: str
    position: int
    height_u: int


@dataclass(frozen=True)
class Rack:
    name: str
    u_height: int
    devices: tuple[RackDevice, ...]

    @property
    def used_u(self) -> int:
        return sum(d.height_u for d in self.devices)


def _switch_names(design: Design) -> list[tuple[str, str, str, int]]:
    """(name, role, model, height U) of every switch: compute-fabric names from the cable list."""
    net = design.network
    df = net.cable_list()
    comp = df[df["network"] == "compute"]
    seen: dict[str, dict[str, None]] = {"leaf": {}, "spine": {}, "core": {}, "switch": {}}
    for col in ("a_end", "b_end"):
        for n in dict.fromkeys(comp[col].tolist()):
            for role in ("spine", "core", "leaf", "switch"):
                if str(n).startswith(role):
                    seen[role][n] = None
                    break
    names_by_role = {role: list(names) for role, names in seen.items()}
    out: list[tuple[str, str, str, int]] = []
    for g in net.switch_groups:
        known = names_by_role.get(g.role, []) if g.network == "compute" else []
        for i in range(g.count):
            prefix = {"management": "mgmt", "storage": "stor"}.get(g.network, g.network)
            name = known[i] if i < len(known) else f"{prefix}-{g.role}{i + 1:02d}"
            out.append((name, f"{g.network} {g.role}", g.switch_id, max(1, int(g.rack_units_each))))
    return out


def rack_layout(design: Design) -> list[Rack]:
    """Every rack with its devices and their positions (see the module docstring)."""
    b, node, st = design.facility, design.node, design.operations.stack
    fac = design.scenario.facility
    u_height = int(fac.rack_units)
    reserved = int(min(fac.reserved_rack_units, u_height - node.rack_units))
    npr = max(1, int(b.nodes_per_rack))
    installed = [(n, "node") for n in st.compute_nodes] + [(f"spare{i + 1:02d}", "spare")
                                                           for i in range(b.spare_nodes)]
    model = node.server_id or node.chassis_id or "node"
    switches = _switch_names(design)
    racks: list[list[RackDevice]] = []
    for r in range(b.compute_racks):
        devs: list[RackDevice] = []
        u = 1
        for name, kind in installed[r * npr:(r + 1) * npr]:
            devs.append(RackDevice(name, kind, "compute" if kind == "node" else "hot spare", model, u,
                                   node.rack_units))
            u += node.rack_units
        if reserved >= 1:
            devs.append(RackDevice(f"patch{r + 1:03d}", "patch", "patch panel and cable management", "patch-panel",
                                   u_height - reserved + 1, reserved))
        racks.append(devs)
    infra: list[tuple[str, str, str, str, int]] = [(n, "switch", role, m, h) for n, role, m, h in switches]
    store = b.storage
    if store is not None and store.appliances:
        infra += [(f"storage{i + 1:02d}", "storage", "shared storage", store.system, int(store.appliance_rack_units))
                  for i in range(store.appliances)]
    infra += [(s.name, "head", ", ".join(s.roles), "head-node", pa.HEAD_NODE_RACK_UNITS) for s in st.service_nodes]
    usable = u_height - reserved

    def free_ranges(devs: list[RackDevice]) -> list[int]:
        used = set()
        for d in devs:
            used.update(range(d.position, d.position + d.height_u))
        return [u for u in range(1, u_height + 1) if u not in used]

    def place(devs: list[RackDevice], item: tuple[str, str, str, str, int], limit: int) -> bool:
        name, kind, role, m, h = item
        free = set(free_ranges(devs))
        for u in range(1, limit - h + 2):
            if all(x in free for x in range(u, u + h)):
                devs.append(RackDevice(name, kind, role, m, u, h))
                return True
        return False

    if b.infra_racks == 0 and racks:
        pending = [it for it in infra if not place(racks[-1], it, u_height)]
    else:
        pending = infra
    infra_racks: list[list[RackDevice]] = [[] for _ in range(b.infra_racks)]
    free_u = [usable] * len(infra_racks)  # units left in each infrastructure rack
    for item in pending:
        h = item[4]
        for i, rk in enumerate(infra_racks):
            if free_u[i] >= h and place(rk, item, usable):
                free_u[i] -= h
                break
        else:
            infra_racks.append([])
            place(infra_racks[-1], item, max(usable, h))
            free_u.append(max(usable, h) - h)
    out = [Rack(f"rack{i + 1:03d}", u_height, tuple(sorted(d, key=lambda x: x.position)))
           for i, d in enumerate(racks + infra_racks)]
    return out


def rack_svg(rack: Rack, title: str = "") -> str:
    """The elevation of one rack as a standalone SVG (unit 1 at the bottom)."""
    h = rack.u_height * U_PX
    width = RACK_W + 2 * MARGIN
    height = h + 2 * MARGIN
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="10">',
             f'<title>{html.escape(title or rack.name)}</title>',
             f'<text x="{MARGIN}" y="{MARGIN - 12}" font-size="13" font-weight="bold">'
             f'{html.escape(title or rack.name)} ({rack.used_u} of {rack.u_height} U used)</text>',
             f'<rect x="{MARGIN}" y="{MARGIN}" width="{RACK_W}" height="{h}" fill="#f4f4f4" stroke="#333"/>']
    for u in range(1, rack.u_height + 1):
        y = MARGIN + h - u * U_PX
        parts.append(f'<text x="{MARGIN - 4}" y="{y + U_PX - 3}" text-anchor="end" fill="#777">{u}</text>')
    for d in rack.devices:
        y = MARGIN + h - (d.position + d.height_u - 1) * U_PX
        hh = d.height_u * U_PX
        parts.append(f'<rect x="{MARGIN + 1}" y="{y + 1}" width="{RACK_W - 2}" height="{hh - 2}" '
                     f'fill="{COLOURS.get(d.kind, "#ccc")}" stroke="#222" stroke-width="0.5">'
                     f'<title>{html.escape(d.name)}: {html.escape(d.role)} ({html.escape(d.model)}), '
                     f'U{d.position}-{d.position + d.height_u - 1}</title></rect>')
        parts.append(f'<text x="{MARGIN + 6}" y="{y + min(hh, U_PX) - 3}" fill="#111">'
                     f'{html.escape(d.name)} · {html.escape(d.model)}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def rack_files(design: Design) -> dict[str, str]:
    """{``rack001.svg``: SVG text, ...} of every rack of the design."""
    name = design.scenario.name
    return {f"{r.name}.svg": rack_svg(r, f"{name}: {r.name}") for r in rack_layout(design)}
