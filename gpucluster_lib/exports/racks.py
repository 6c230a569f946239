"""Rack layout and rack elevations (one SVG per rack) of a design.

The layout is the facility budget's: ``compute_racks`` racks of ``nodes_per_rack``
installed nodes each (job nodes, then the hot spares), each with the reserved units at the
top (patch panel and cable management); then the infrastructure racks exactly as the budget
packed them (``Budget.infra_layout``, whole devices): every switch of the network design
(compute fabric leaves, spines and cores under the cable list's names, storage and
management switches), the storage appliances and the head nodes, bottom up in each rack.
When the budget shares one rack (``infra_racks == 0``) the infrastructure goes into the
compute rack's free units; a device that does not fit there is refused (``GpuClusterError``),
never left out. So the export and the budget always count the same racks, device for device.
A device the facility's racks cannot hold (the budget's ``facility-infra-device-over-rack-limit``
finding) is drawn in a rack of its own, as tall as the device.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

from gpucluster_lib.design import Design
from gpucluster_lib.errors import GpuClusterError
from gpucluster_lib.hardware.rack import RackDevice as BudgetDevice

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
    """(name, role, model, index in its group) of every switch: compute-fabric names from the cable list."""
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
            out.append((name, f"{g.network} {g.role}", g.switch_id, i))
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
    heads = list(st.service_nodes)

    def named(dev: BudgetDevice) -> tuple[str, str, str, str, int]:
        """(name, kind, role, model, height U) of one of the budget's devices."""
        if dev.kind == "switch":
            name = switch_names.get((dev.role, dev.model, dev.index), f"{dev.role.replace(' ', '-')}{dev.index + 1:02d}")
            return name, "switch", dev.role, dev.model, dev.height_u
        if dev.kind == "head":
            if dev.index < len(heads):
                return heads[dev.index].name, "head", ", ".join(heads[dev.index].roles), dev.model, dev.height_u
            return f"head{dev.index + 1:02d}", "head", dev.role, dev.model, dev.height_u
        prefix = "storage" if dev.kind == "storage" else "capacity"
        return f"{prefix}{dev.index + 1:02d}", "storage", dev.role, dev.model, dev.height_u

    switch_names = {(role, m, i): n for n, role, m, i in switches}

    def place(devs: list[RackDevice], item: tuple[str, str, str, str, int], limit: int, where: str) -> None:
        """Put ``item`` at the lowest free units of the rack below ``limit``; refuse it when none
        are free (the budget counted it in this rack, so leaving it out would lose a device)."""
        name, kind, role, m, h = item
        used = {u for d in devs for u in range(d.position, d.position + d.height_u)}
        for u in range(1, limit - h + 2):
            if all(x not in used for x in range(u, u + h)):
                devs.append(RackDevice(name, kind, role, m, u, h))
                return
        free = limit - len({u for u in used if u <= limit})
        raise GpuClusterError(f"rack export: {name} ({m}, {h}U) does not fit {where}, which has {free}U free; "
                              f"the facility budget counted it there. Give the rack "
                              f"more units (facility.rack_units) or fewer reserved ones "
                              f"(facility.reserved_rack_units)")

    infra_racks: list[list[RackDevice]] = []
    if not b.infra_layout and racks:  # the budget keeps them in the one compute rack's free units
        for dev in b.infra_devices:
            place(racks[-1], named(dev), u_height, "the one compute rack")
    usable = u_height - reserved
    for r, contents in enumerate(b.infra_layout):  # the budget's racks, device for device, bottom up
        devs: list[RackDevice] = []
        for dev in sorted(contents, key=lambda x: (-x.height_u, x.kind, x.role, x.index)):
            place(devs, named(dev), max(usable, dev.height_u), f"infrastructure rack {r + 1}")
        infra_racks.append(devs)
    infra_racks += [[] for _ in range(b.infra_racks - len(infra_racks))]  # a vendor layout's spare racks
    # a rack-scale system (GB200 NVL72: 48U) is its own rack, taller than the facility's default
    compute_u = max(u_height, int(node.rack_units) * (1 if b.rack_fit.basis == "rack-scale" else 0))
    out = [Rack(f"rack{i + 1:03d}", compute_u if i < len(racks) else max([u_height] + [x.height_u for x in d]),
                tuple(sorted(d, key=lambda x: x.position))) for i, d in enumerate(racks + infra_racks)]
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
