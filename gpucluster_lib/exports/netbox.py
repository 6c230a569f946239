"""NetBox import of a design: device types, site, racks with positions, devices and cables.

Files (NetBox's bulk-import formats, ``netbox/dcim/forms/bulk_import.py``; the required
columns of each form are in :data:`REQUIRED`):

* ``device-types/<Manufacturer>/<model>.yaml``: one device type per model in the layout of
  the community device-type library (``netbox-community/devicetype-library``: required
  ``manufacturer``, ``model``, ``slug``, ``u_height``, ``is_full_depth``; ``interfaces`` with
  ``name`` and ``type``), so NetBox creates each device's interfaces from its type;
* ``manufacturers.csv``, ``device-roles.csv``, ``sites.csv``, ``racks.csv``;
* ``devices.csv``: every device with its rack, position (lowest unit) and face, from the rack
  layout of :mod:`gpucluster_lib.exports.racks`;
* ``cables.csv``: every compute-fabric cable of the network's cable list, interface to
  interface (``dcim.interface``), with NetBox's cable type.

Import in this order: manufacturers, device types, device roles, site, racks, devices, cables.
Management and storage links are counted groups in the cable list (no port plan), so they
are not in ``cables.csv``.
"""

from __future__ import annotations

import csv
import io
import re
from typing import Any

import yaml

from gpucluster_lib.design import Design
from gpucluster_lib.errors import UnknownIdError
from gpucluster_lib.exports.racks import rack_layout

#: Required columns of NetBox's CSV import forms (SiteImportForm, RackImportForm,
#: ManufacturerImportForm, DeviceRoleImportForm, DeviceImportForm, CableImportForm).
REQUIRED = {
    "sites.csv": ("name", "slug", "status"),
    "racks.csv": ("site", "name", "status", "width"),
    "manufacturers.csv": ("name", "slug"),
    "device-roles.csv": ("name", "slug"),
    "devices.csv": ("role", "manufacturer", "device_type", "status", "site"),
    "cables.csv": ("side_a_device", "side_a_type", "side_a_name", "side_b_device", "side_b_type", "side_b_name"),
}
#: Required keys of a device type in the community device-type library (schema/devicetype.json).
DEVICE_TYPE_REQUIRED = ("manufacturer", "model", "slug", "u_height", "is_full_depth")
ROLE_COLOURS = {"compute": "2196f3", "hot spare": "90caf9", "switch": "ff9800", "storage": "4caf50",
                "head": "9c27b0", "patch": "9e9e9e"}
#: NetBox interface types (InterfaceTypeChoices) by protocol and speed [Gb/s].
IB_TYPES = {100: "infiniband-edr", 200: "infiniband-hdr", 400: "infiniband-ndr", 800: "infiniband-xdr"}
ETH_TYPES = {1: "1000base-t", 10: "10gbase-t", 25: "25gbase-x-sfp28", 100: "100gbase-x-qsfp28",
             200: "200gbase-x-qsfp56", 400: "400gbase-x-osfp", 800: "800gbase-x-osfp"}
#: NetBox cable types (CableTypeChoices) by the cable list's medium.
CABLE_TYPES = {"dac": "dac-passive", "aoc": "aoc", "fibre-mmf": "mmf", "fibre-smf": "smf", "copper-rj45": "cat6a"}


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


def interface_type(protocol: str, speed_gbps: float) -> str:
    """NetBox interface type for a port of ``protocol`` at ``speed_gbps``; ``other`` when unknown."""
    table = IB_TYPES if str(protocol).lower().startswith("infiniband") else ETH_TYPES
    return table.get(int(round(speed_gbps)), "other")


def _csv(rows: list[dict[str, Any]], columns: list[str]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n", extrasaction="ignore")
    w.writeheader()
    for r in rows:
        w.writerow(r)
    return buf.getvalue()


def _compute_port(p: int) -> str:
    return f"fabric{p}"


def storage_vendor(cat: Any, model: str) -> str:
    """The vendor of a storage system in the catalogue; "Generic" for one outside it (the
    default sizing's systems). Any other error is a bug and is not hidden."""
    try:
        return str(cat.get("storage", model).get("vendor") or "Generic")
    except UnknownIdError:
        return "Generic"


def netbox_files(design: Design, site_name: str | None = None) -> dict[str, str]:
    """{relative path: text} of the NetBox import (see the module docstring)."""
    cat, net, node = design.catalog, design.network, design.node
    site = site_name or design.scenario.name
    racks = rack_layout(design)
    link = float(net.link_gbps)
    protocol = "Ethernet"
    if net.switch_id:
        protocol = str(cat.get("switches", net.switch_id).get("protocol") or "Ethernet")
    types: dict[str, dict[str, Any]] = {}
    manufacturers: dict[str, str] = {}

    def add_type(model: str, manufacturer: str, u: int, interfaces: list[dict[str, Any]], part: str) -> None:
        manufacturers[manufacturer] = slug(manufacturer)
        if model not in types:
            types[model] = {"manufacturer": manufacturer, "model": model, "slug": slug(f"{manufacturer}-{model}"),
                            "part_number": part[:50], "u_height": u, "is_full_depth": True,
                            "interfaces": interfaces}

    mgmt = [{"name": "bmc", "type": "1000base-t", "mgmt_only": True}]
    srv = design.hardware.server or {}
    model_of = {}
    node_model = node.server_id or node.chassis_id or "gpu-node"
    ports = [{"name": _compute_port(p + 1), "type": interface_type(protocol, link)} for p in range(net.ports_per_node)]
    add_type(node_model, str(srv.get("vendor") or "Generic"), int(node.rack_units), mgmt + ports, node_model)
    model_of["node"] = model_of["spare"] = node_model
    for g in net.switch_groups:
        row = cat.get("switches", g.switch_id)
        sw_if = [{"name": f"port{p + 1}", "type": interface_type(str(row.get("protocol") or "Ethernet"),
                                                                  float(g.ports and row["port_speed_gbps"]))}
                 for p in range(int(g.ports))]
        add_type(g.switch_id, str(row.get("vendor") or "Generic").split(" (")[0], max(1, int(g.rack_units_each)),
                 mgmt + sw_if, g.switch_id)
    store = design.facility.storage
    if store is not None and store.appliances:
        add_type(store.system, storage_vendor(cat, store.system), int(store.appliance_rack_units), mgmt, store.system)
    if store is not None and store.capacity_units:  # the capacity tier's units are racked too
        cap_model = store.capacity_system or "capacity"
        add_type(cap_model, storage_vendor(cat, cap_model), int(store.capacity_unit_rack_units), mgmt, cap_model)
    add_type("head-node", "Generic", 1, mgmt + [{"name": "eth0", "type": "10gbase-t"}], "head-node")
    add_type("patch-panel", "Generic", 1, [], "patch-panel")

    files: dict[str, str] = {}
    for t in types.values():
        body = {k: v for k, v in t.items() if not (k == "interfaces" and not v)}
        files[f"device-types/{slug(t['manufacturer'])}/{slug(t['model'])}.yaml"] = yaml.safe_dump(body, sort_keys=False)
    files["manufacturers.csv"] = _csv([{"name": m, "slug": s} for m, s in sorted(manufacturers.items())],
                                      ["name", "slug"])
    roles = sorted({d.role if d.kind != "switch" else "switch" for r in racks for d in r.devices} |
                   {"switch"})
    role_rows = []
    for role in roles:
        key = role if role in ROLE_COLOURS else next((k for k in ROLE_COLOURS if k in role), "head")
        role_rows.append({"name": role, "slug": slug(role), "color": ROLE_COLOURS[key]})
    files["device-roles.csv"] = _csv(role_rows, ["name", "slug", "color"])
    files["sites.csv"] = _csv([{"name": site, "slug": slug(site), "status": "planned",
                                "description": f"{design.hardware.gpus} GPUs, {len(racks)} racks"}],
                              ["name", "slug", "status", "description"])
    files["racks.csv"] = _csv([{"site": site, "name": r.name, "status": "planned", "width": 19,
                                "u_height": r.u_height} for r in racks],
                              ["site", "name", "status", "width", "u_height"])
    devices = []
    for r in racks:
        for d in r.devices:
            model = model_of.get(d.kind, d.model)
            if d.kind == "head":
                model = "head-node"
            manufacturer = types[model]["manufacturer"]
            devices.append({"name": d.name, "role": d.role if d.kind != "switch" else "switch",
                            "manufacturer": manufacturer, "device_type": model, "status": "planned", "site": site,
                            "rack": r.name, "position": d.position, "face": "front"})
    files["devices.csv"] = _csv(devices, ["name", "role", "manufacturer", "device_type", "status", "site", "rack",
                                          "position", "face"])
    df = net.cable_list()
    df = df[(df["network"] == "compute") & (df["a_end"] != "*")]
    placed = {d["name"] for d in devices}
    cables = []
    cols = [df[c].tolist() for c in ("a_end", "a_port", "b_end", "b_port", "cable", "length_class")]
    for a, ap, b, bp, cable, length in zip(*cols, strict=True):
        if a not in placed or b not in placed:
            continue  # the fabric manager appliance is not a device of the layout
        a_name = _compute_port(int(ap)) if str(a).startswith("node") else f"port{int(ap)}"
        cables.append({"side_a_device": a, "side_a_type": "dcim.interface", "side_a_name": a_name,
                       "side_b_device": b, "side_b_type": "dcim.interface", "side_b_name": f"port{int(bp)}",
                       "type": CABLE_TYPES.get(str(cable).lower(), ""), "status": "planned",
                       "label": f"{length}"})
    files["cables.csv"] = _csv(cables, ["side_a_device", "side_a_type", "side_a_name", "side_b_device",
                                        "side_b_type", "side_b_name", "type", "status", "label"])
    return files
