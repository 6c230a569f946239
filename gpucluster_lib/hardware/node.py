"""Node builder: one node's parts, power, supplies, space and design checks.

:func:`build_node` takes a scenario's ``hardware`` section and returns a
:class:`NodeDesign`: the power of each component at peak and in typical training load,
the node's peak and typical draw, the usable supply capacity under its redundancy
scheme, rack units and weight, and the findings of the design checks (stable codes
``node-psu-capacity``, ``node-pcie-slots``, ``node-pcie-lanes``, ``node-ram-floor``,
``node-network-ports``, ``node-cooling-mismatch``, ``node-form-factor``).

Two ways to describe a node:

* a catalogue **system** or **workstation** (``hardware.server``, kind ``system`` /
  ``workstation`` with its GPUs): its vendor ``max_power_w`` is the peak; the sum of
  the component estimates is reported beside it (``component_peak_w``);
* **parts**: a chassis (``hardware.server`` or ``hardware.parts.chassis``, kind
  ``chassis``) or no chassis at all, plus ``hardware.accelerator``,
  ``hardware.gpus_per_node`` and ``hardware.parts`` (CPUs, memory, NICs, drives, PSUs).
  What is left out gets a default (:func:`default_parts`); the peak is the component sum.

Component power model (constants and their sources in
:mod:`gpucluster_lib.hardware.power_assumptions`):

.. math::

    E = n_{gpu} P_{TDP,gpu} + n_{cpu} P_{TDP,cpu} + c_{mem} M + \\sum P_{nic} + \\sum P_{drive}

    P_{peak} = E (1 + f_{fan} + f_{other})

and the typical draw applies a per-component fraction (GPU 0.85, CPU 0.5, ...; fans at
80% speed draw 0.8^3 by the fan affinity law).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from gpucluster_lib.catalog import Catalog
from gpucluster_lib.errors import ScenarioError
from gpucluster_lib.findings import Finding, sort_findings
from gpucluster_lib.hardware import power_assumptions as pa
from gpucluster_lib.hardware.resolve import ClusterHardware, catalog_for, resolve_hardware
from gpucluster_lib.scenario import CountSpec, Scenario, parse_redundancy
from gpucluster_lib.units import GB, GIB

#: Defaults for a node built from parts when the scenario leaves a part out.
DEFAULT_CPU = "epyc-7742"
DEFAULT_CPU_GEN5 = "epyc-9654"
DEFAULT_BOOT_DRIVE = "micron-7400-pro-m2-1.92tb"
DEFAULT_DATA_DRIVE = "micron-7450-pro-3.84tb"
DEFAULT_NIC = "connectx-6-hdr"
DEFAULT_NIC_GEN5 = "connectx-7-ndr"
DEFAULT_CHASSIS = {"sxm": "generic-4u-hgx-8gpu", "oam": "generic-4u-hgx-8gpu", "pcie_small": "generic-2u-4gpu-pcie",
                   "pcie": "generic-4u-8gpu-pcie"}
#: GPU counts an SXM/OAM baseboard comes in (HGX 4-GPU and 8-GPU boards; OCP UBB 8 OAM).
BASEBOARD_GPU_COUNTS = (4, 8)
#: Supply rating used when a node's supplies are sized automatically [W] (DGX H100/B200: 3.3 kW).
AUTO_PSU_RATING_W = 3300.0
#: PCIe lanes per NVMe drive (U.2/M.2 NVMe are x4).
NVME_LANES = 4

CHECK_CODES = ("node-psu-capacity", "node-pcie-slots", "node-pcie-lanes", "node-ram-floor", "node-network-ports",
               "node-cooling-mismatch", "node-form-factor")


# --------------------------------------------------------------------------- pure helpers


def usable_psu_w(count: int, rating_w: float, redundancy: str, *, field_path: str = "psus") -> float:
    """Capacity of the N working supplies of an N+M scheme [W].

    Parameters
    ----------
    count : supplies installed (must equal N + M)
    rating_w : output rating of one supply [W]
    redundancy : ``"N+M"``, e.g. ``"3+1"``: N carry the load, M are spares

    Returns
    -------
    N x ``rating_w`` [W]. The reference 4x 3000 W server in 3+1 gives 3 x 3000 = 9000 W.
    """
    if rating_w <= 0:
        raise ScenarioError(f"{field_path}.rating_w", f"must be a positive number of watts, got {rating_w!r}")
    n, m = parse_redundancy(redundancy, f"{field_path}.redundancy")
    if n < 1:
        raise ScenarioError(f"{field_path}.redundancy",
                            f"'{redundancy}' leaves no usable supply: N must be at least 1 (e.g. '1+1')")
    if n + m != count:
        raise ScenarioError(f"{field_path}.redundancy", f"'{redundancy}' does not add up to {count} supplies")
    return n * rating_w


def nic_power_w(nic: dict[str, Any]) -> float:
    """A NIC's maximum power [W]: the catalogue's ``max_power_w``, else by port speed (estimate)."""
    if nic.get("max_power_w"):
        return float(nic["max_power_w"])
    speed = float(nic.get("speed_gbps") or 100)
    for limit, watts in pa.NIC_W_BY_SPEED_GBPS:
        if speed <= limit:
            return watts
    return pa.NIC_W_BY_SPEED_GBPS[-1][1]


def drive_power_w(drive: dict[str, Any]) -> float:
    """A drive's active maximum power [W]: ``max_power_w``, else by kind and interface (estimate)."""
    if drive.get("max_power_w"):
        return float(drive["max_power_w"])
    kind = drive.get("kind", "nvme-ssd")
    if kind == "hdd":
        return pa.HDD_W
    if kind == "sata-ssd":
        return pa.SATA_SSD_W
    if "M.2" in str(drive.get("interface", "")):
        return pa.NVME_M2_W
    return pa.NVME_U2_W


def cpu_io_lanes(cpu: dict[str, Any], count: int) -> int:
    """PCIe lanes the host CPUs give to I/O.

    Intel Xeon: lanes add up per socket. AMD EPYC in two sockets: each socket gives half
    its lanes to the inter-socket xGMI links, so two sockets give 128 lanes in total, the
    same as one (power_assumptions [8]).
    """
    lanes = int(cpu["pcie_lanes"])
    if count >= 2 and str(cpu.get("vendor", "")).upper() == "AMD" and "EPYC" in str(cpu.get("name", "")).upper():
        return lanes * count // 2
    return lanes * count


# --------------------------------------------------------------------------- result types


@dataclass(frozen=True)
class Component:
    """One line of the node's power table."""

    category: str  # gpu, cpu, memory, network, storage, fans, other
    label: str
    detail: str
    count: int
    peak_w: float
    typical_w: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Nic:
    id: str
    count: int
    role: str  # compute, storage, mgmt
    ports: int
    speed_gbps: float
    lanes: int
    protocol: str
    power_w: float


@dataclass(frozen=True)
class NodeDesign:
    """One node: components, power, supplies, space, weight and design findings.

    Powers in W, memory in GB (10^9 B), weight in kg, height in rack units.
    """

    name: str
    origin: str  # "catalogue" or "parts"
    server_id: str | None
    chassis_id: str | None
    accelerator_id: str
    gpus_per_node: int
    components: list[Component]
    component_peak_w: float
    component_typical_w: float
    vendor_max_power_w: float | None
    peak_power_w: float
    typical_power_w: float
    psu_count: int | None
    psu_rating_w: float | None
    psu_redundancy: str | None
    psu_usable_w: float | None
    psu_margin: float
    rack_units: int
    weight_kg: float
    weight_estimated: bool
    cooling: str
    airflow_cfm: float | None
    memory_gb: float
    gpu_memory_gb: float
    cpu_id: str | None
    cpu_count: int
    nics: list[Nic] = field(default_factory=list)
    pcie_lanes_needed: int | None = None
    pcie_lanes_available: int | None = None
    findings: list[Finding] = field(default_factory=list)

    @property
    def fabric_ports(self) -> int:
        return sum(n.ports * n.count for n in self.nics if n.role == "compute" and _is_fabric(n))

    @property
    def network_ports(self) -> int:
        return sum(n.ports * n.count for n in self.nics)

    def by_category(self, typical: bool = False) -> dict[str, float]:
        """Peak (or typical) power per category [W], scaled so the total is the node's figure."""
        total = self.component_typical_w if typical else self.component_peak_w
        target = self.typical_power_w if typical else self.peak_power_w
        scale = target / total if total else 1.0
        out: dict[str, float] = {}
        for c in self.components:
            out[c.category] = out.get(c.category, 0.0) + (c.typical_w if typical else c.peak_w) * scale
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "origin": self.origin, "server": self.server_id, "chassis": self.chassis_id,
            "accelerator": self.accelerator_id, "gpus_per_node": self.gpus_per_node,
            "peak_power_w": round(self.peak_power_w, 1), "typical_power_w": round(self.typical_power_w, 1),
            "vendor_max_power_w": self.vendor_max_power_w,
            "component_peak_w": round(self.component_peak_w, 1),
            "component_typical_w": round(self.component_typical_w, 1),
            "psu_count": self.psu_count, "psu_rating_w": self.psu_rating_w, "psu_redundancy": self.psu_redundancy,
            "psu_usable_w": self.psu_usable_w, "psu_margin": self.psu_margin,
            "rack_units": self.rack_units, "weight_kg": round(self.weight_kg, 2),
            "weight_estimated": self.weight_estimated, "cooling": self.cooling, "airflow_cfm": self.airflow_cfm,
            "memory_gb": self.memory_gb, "gpu_memory_gb": round(self.gpu_memory_gb, 1),
            "cpu": self.cpu_id, "cpu_count": self.cpu_count,
            "network_ports": self.network_ports, "fabric_ports": self.fabric_ports,
            "pcie_lanes_needed": self.pcie_lanes_needed, "pcie_lanes_available": self.pcie_lanes_available,
            "components": [
                {**c.to_dict(), "peak_w": round(c.peak_w, 1), "typical_w": round(c.typical_w, 1)}
                for c in self.components
            ],
            "findings": [f.to_dict() for f in self.findings],
        }


def _is_fabric(nic: Nic) -> bool:
    """A high-speed fabric port: InfiniBand/VPI, or Ethernet at 100 Gb/s or more (RoCE)."""
    return nic.protocol in ("InfiniBand", "VPI") or (nic.protocol == "Ethernet" and nic.speed_gbps >= 100)


# --------------------------------------------------------------------------- building


def _present(cat: Catalog, table: str, id_: str | None) -> bool:
    return bool(id_) and cat.has(table, id_)


def _nic(cat: Catalog, id_: str, count: int, role: str, path: str) -> Nic:
    row = cat.get("nics", id_, path=path)
    return Nic(id=id_, count=int(count), role=role, ports=int(row["ports"]), speed_gbps=float(row["speed_gbps"]),
               lanes=int(row["pcie_lanes"]), protocol=str(row["protocol"]), power_w=nic_power_w(row))


def default_chassis(acc: dict[str, Any], gpus: int, cat: Catalog) -> dict[str, Any]:
    """The frame of a node built from parts without a chassis.

    PCIe cards: the catalogue's generic 2U 4-GPU or 4U 8-GPU PCIe chassis. SXM GPUs up to
    500 W (A100 class): the generic 4U HGX chassis. Otherwise (H100/B200-class SXM, OAM,
    or a catalogue without those rows) a generic baseboard frame: 8U for GPUs up to 750 W
    (DGX H100 and 8x MI300X platforms are 8U), 10U above (DGX B200), 4U for 4 GPUs; supplies sized to the
    estimate (:data:`AUTO_PSU_RATING_W`, N+1), weight estimated.
    """
    ff = acc["form_factor"]
    key = None
    if ff == "PCIe":
        key = "pcie_small" if gpus <= 4 else "pcie"
    elif ff == "SXM" and float(acc["tdp_w"]) <= 500:
        key = "sxm"
    if key and _present(cat, "servers", DEFAULT_CHASSIS[key]):
        return cat.server(DEFAULT_CHASSIS[key])
    tdp = float(acc["tdp_w"])
    ru = 4 if gpus <= 4 else (8 if tdp <= 750 else 10)
    base = {"SXM": "sxm", "OAM": "oam", "PCIe": "pcie"}.get(ff, "none")
    return {"id": f"generic-{ru}u-{base}-{gpus}gpu", "name": "generic frame", "kind": "chassis",
            "gpu_baseboard": base, "cpu_count": 2, "rack_units": ru, "cooling": "air", "mgmt_ports_count": 2,
            "pcie_x16_slots": None, "pcie_x8_slots": None, "max_gpu_slot_width_slots": None, "max_power_w": None,
            "psu_count": None, "psu_rating_w": None, "psu_redundancy": None, "weight_kg": None, "airflow_cfm": None}


def default_parts(scenario: Scenario, acc: dict[str, Any], gpus: int, chassis: dict[str, Any] | None,
                  cat: Catalog) -> dict[str, Any]:
    """What a parts-built node gets for the parts the scenario leaves out.

    CPUs: the chassis' socket count (2 without a chassis) of an EPYC 7742 (PCIe 4 GPUs) or
    EPYC 9654 (PCIe 5). Memory: the recommended floor (64 GB, 2x GPU memory) rounded up to
    a power of two. Compute NICs: ``network.nic`` x ``network.nics_per_node``, else one
    ConnectX-6 HDR (PCIe 4) / ConnectX-7 NDR (PCIe 5) per GPU on a baseboard chassis, one
    per free x16 slot in a PCIe chassis, none in a workstation. Management: the chassis'
    ports, else 2 (BMC + 1 GbE). Drives: 2 M.2 boot + 4 U.2 3.84 TB. Supplies: the
    chassis' (a single supply is '1+0'), else sized to the estimated peak in N+1.
    """
    gen5 = (acc.get("pcie_gen") or 4) >= 5
    sockets = int((chassis or {}).get("cpu_count") or 2)
    cpu_id = DEFAULT_CPU_GEN5 if gen5 else DEFAULT_CPU
    gpu_mem_gb = gpus * float(acc["memory_gib"]) * GIB / GB
    floor = max(pa.RAM_RECOMMENDED_FLOOR_GB, pa.RAM_PER_GPU_MEMORY * gpu_mem_gb)
    memory = float(2 ** math.ceil(math.log2(floor)))
    net = scenario.network
    nic_id = net.nic or (DEFAULT_NIC_GEN5 if gen5 else DEFAULT_NIC)
    drives = [CountSpec(DEFAULT_BOOT_DRIVE, 2), CountSpec(DEFAULT_DATA_DRIVE, 4)]
    drives = [d for d in drives if _present(cat, "storage", d.id)]
    ch = chassis or {}
    if ch.get("psu_count") and ch.get("psu_rating_w"):
        psus = (int(ch["psu_count"]), float(ch["psu_rating_w"]),
                str(ch.get("psu_redundancy") or f"{int(ch['psu_count'])}+0"))
    else:
        psus = (0, AUTO_PSU_RATING_W, "auto")  # sized to the estimated peak in build_node
    if net.nics_per_node:
        nic_count = net.nics_per_node
    elif ch.get("kind") == "workstation":
        nic_count = 0 if not net.nic else 1
    elif ch.get("gpu_baseboard") == "pcie" and ch.get("pcie_x16_slots") is not None:
        free = int(ch["pcie_x16_slots"]) - (gpus if acc["form_factor"] == "PCIe" else 0)
        nic_count = max(1, min(gpus, free))
    else:
        nic_count = gpus
    return {"cpu": CountSpec(cpu_id, sockets), "memory_gb": memory,
            "nics": CountSpec(nic_id, nic_count) if nic_count and _present(cat, "nics", nic_id) else None,
            "mgmt_ports": int(ch.get("mgmt_ports_count") or 2), "drives": drives, "psus": psus}


def build_node(scenario: Scenario, catalog: Catalog | None = None, *,
               hardware: ClusterHardware | None = None) -> NodeDesign:
    """Build one node from the scenario and check it.

    Parameters
    ----------
    scenario : the scenario; ``hardware`` (server or parts), ``network`` (NICs when parts
        leave them out; topology for the fabric-port rule) and ``facility.cooling`` are read.
    catalog : the catalogue (default: the scenario's).
    hardware : the resolved hardware (default: resolved from the scenario).

    Returns
    -------
    NodeDesign with findings. Design problems are findings; malformed input raises
    :class:`~gpucluster_lib.errors.ScenarioError`.
    """
    cat = catalog or catalog_for(scenario)
    hw = hardware if hardware is not None else resolve_hardware(scenario, cat)
    acc, server, gpus = hw.accelerator, hw.server, hw.gpus_per_node
    parts = scenario.hardware.parts
    chassis: dict[str, Any] | None = None
    if parts is not None and parts.chassis:
        chassis = cat.server(parts.chassis, path="hardware.parts.chassis")
        if chassis["kind"] != "chassis":
            raise ScenarioError("hardware.parts.chassis", f"{chassis['id']!r} is a complete {chassis['kind']}, not a "
                                "chassis: put it in hardware.server, or pick a servers.csv row of kind 'chassis'")
        if server is not None and server["id"] != chassis["id"]:
            raise ScenarioError("hardware.parts.chassis", f"give the chassis once: hardware.server is "
                                f"{server['id']!r} and hardware.parts.chassis {chassis['id']!r}")
    elif server is not None and server["kind"] == "chassis":
        chassis = server
    complete = server is not None and server["kind"] in ("system", "workstation") and bool(server.get("gpu_count"))
    open_workstation = server is not None and server["kind"] == "workstation" and not server.get("gpu_count")
    frame = server if complete or open_workstation else chassis
    if frame is None and not complete:
        chassis = frame = default_chassis(acc, gpus, cat)
    defaults = default_parts(scenario, acc, gpus, frame, cat)
    findings: list[Finding] = []

    # ---- parts: CPUs, memory, NICs, drives, supplies
    overrides = parts is not None and (parts.cpus is not None or parts.memory_gb is not None or parts.nics is not None
                                       or parts.mgmt_nics is not None or bool(parts.drives))
    if complete:
        s = server
        cpu_spec = CountSpec(s["cpu_id"], int(s["cpu_count"] or 0)) if s.get("cpu_id") else None
        memory_gb = float(s["system_memory_gb"]) if s.get("system_memory_gb") else defaults["memory_gb"]
        nic_list = []
        if s.get("compute_nic_id") and s.get("compute_nic_count"):
            nic_list.append(_nic(cat, s["compute_nic_id"], s["compute_nic_count"], "compute", "hardware.server"))
        if s.get("storage_nic_id") and s.get("storage_nic_count"):
            nic_list.append(_nic(cat, s["storage_nic_id"], s["storage_nic_count"], "storage", "hardware.server"))
        mgmt_ports = int(s.get("mgmt_ports_count") or 0)
        drive_list = _catalogue_drives(s, cat)
        psus = (s.get("psu_count"), s.get("psu_rating_w"), s.get("psu_redundancy"))
    else:
        cpu_spec = defaults["cpu"]
        memory_gb = defaults["memory_gb"]
        nic_list = [] if defaults["nics"] is None else [
            _nic(cat, defaults["nics"].id, defaults["nics"].count, "compute", "network.nic")]
        mgmt_ports = defaults["mgmt_ports"]
        drive_list = [(cat.get("storage", d.id), d.count) for d in defaults["drives"]]
        psus = defaults["psus"]
    if parts is not None:
        if parts.cpus is not None:
            cpu_spec = parts.cpus
        if parts.memory_gb is not None:
            memory_gb = parts.memory_gb
        if parts.nics is not None:
            nic_list = [n for n in nic_list if n.role != "compute"]
            if parts.nics.count:
                nic_list.insert(0, _nic(cat, parts.nics.id, parts.nics.count, "compute", "hardware.parts.nics.id"))
        if parts.mgmt_nics is not None:
            mgmt_ports = 0
            if parts.mgmt_nics.count:
                nic_list.append(_nic(cat, parts.mgmt_nics.id, parts.mgmt_nics.count, "mgmt",
                                     "hardware.parts.mgmt_nics.id"))
        if parts.drives:
            drive_list = [(cat.get("storage", d.id, path=f"hardware.parts.drives[{i}].id"), d.count)
                          for i, d in enumerate(parts.drives)]
        if parts.psus is not None:
            psus = (parts.psus.count, parts.psus.rating_w, parts.psus.redundancy)
    cpu = cat.get("cpus", cpu_spec.id, path="hardware.parts.cpus.id") if cpu_spec and cpu_spec.id else None
    cpu_count = cpu_spec.count if cpu else 0
    margin = parts.psu_margin if parts is not None else pa.PSU_MARGIN

    # ---- power per component
    gpu_mem_gb = gpus * float(acc["memory_gib"]) * GIB / GB
    comps: list[Component] = [
        Component("gpu", "GPUs", f"{gpus} x {acc['id']} ({acc['tdp_w']:g} W TDP)", gpus,
                  gpus * float(acc["tdp_w"]), gpus * float(acc["tdp_w"]) * pa.GPU_TYPICAL_FRACTION),
    ]
    if cpu:
        p = cpu_count * float(cpu["tdp_w"])
        comps.append(Component("cpu", "CPUs", f"{cpu_count} x {cpu['id']} ({cpu['tdp_w']:g} W TDP)", cpu_count,
                               p, p * pa.CPU_TYPICAL_FRACTION))
    p = memory_gb * pa.DIMM_W_PER_GB
    comps.append(Component("memory", "Memory", f"{memory_gb:g} GB at {pa.DIMM_W_PER_GB} W/GB", 1, p,
                           p * pa.MEMORY_TYPICAL_FRACTION))
    for n in nic_list:
        p = n.count * n.power_w
        comps.append(Component("network", f"NICs ({n.role})", f"{n.count} x {n.id} ({n.power_w:g} W)", n.count, p,
                               p * pa.NIC_TYPICAL_FRACTION))
    for d, count in drive_list:
        p = count * drive_power_w(d)
        comps.append(Component("storage", "Drives", f"{count} x {d['id']} ({drive_power_w(d):g} W)", count, p,
                               p * pa.DRIVE_TYPICAL_FRACTION))
    e_peak = sum(c.peak_w for c in comps)
    e_typ = sum(c.typical_w for c in comps)
    comps.append(Component("fans", "Fans", f"{pa.FAN_FRACTION:.0%} of electronics at full speed", 1,
                           e_peak * pa.FAN_FRACTION, e_peak * pa.FAN_FRACTION * pa.FAN_TYPICAL_FRACTION))
    comps.append(Component("other", "Board, baseboard, VRM and PSU losses", f"{pa.OTHER_FRACTION:.0%} of electronics",
                           1, e_peak * pa.OTHER_FRACTION, e_typ * pa.OTHER_FRACTION))
    comp_peak = sum(c.peak_w for c in comps)
    comp_typ = sum(c.typical_w for c in comps)
    for c in comps:
        if c.peak_w < 0:  # pragma: no cover - catalogue minimums make this impossible
            raise ScenarioError("hardware", f"{c.label}: negative power {c.peak_w:g} W")
    vendor_max = float(server["max_power_w"]) if complete and server.get("max_power_w") and not overrides else None
    if vendor_max is not None:
        peak = vendor_max
        typical = vendor_max * comp_typ / comp_peak
    else:
        peak, typical = comp_peak, comp_typ
        if complete and overrides and server.get("max_power_w"):
            findings.append(Finding("node-psu-capacity", "info",
                                    f"the parts given change {server['id']}'s components, so the peak is the "
                                    f"component estimate {comp_peak:,.0f} W, not the vendor's "
                                    f"{server['max_power_w']:,.0f} W", field="hardware.parts"))

    # ---- supplies
    psu_count, psu_rating, psu_red = psus
    if psu_red == "auto":
        n_work = max(1, math.ceil(peak / ((1 - margin) * psu_rating)))
        psu_count, psu_red = n_work + 1, f"{n_work}+1"
        findings.append(Finding("node-psu-capacity", "info",
                                f"no supplies given: sized as {psu_red} x {psu_rating:,.0f} W for the estimated "
                                f"peak {peak:,.0f} W", fix="list the node's supplies among its parts", field="hardware.parts.psus"))
    usable = None
    if psu_count and psu_rating and psu_red:
        path = "hardware.parts.psus" if parts is not None and parts.psus is not None else "servers.csv psu_redundancy"
        usable = usable_psu_w(int(psu_count), float(psu_rating), str(psu_red), field_path=path)
        findings += check_psu(peak, int(psu_count), float(psu_rating), str(psu_red), usable, margin)
    else:
        findings.append(Finding("node-psu-capacity", "info",
                                f"{server['id'] if server else 'this node'}: the catalogue gives no supply "
                                "configuration, so the supply check is skipped",
                                fix="add the supply count, rating and redundancy to the server catalogue, or list the node's supplies among its parts"))
    if frame is not None and not complete and frame.get("max_power_w") and comp_peak > float(frame["max_power_w"]):
        what = "recommended maximum draw" if frame["kind"] == "workstation" else "power envelope"
        findings.append(Finding("node-psu-capacity", "warning",
                                f"estimated peak {comp_peak:,.0f} W exceeds {frame['id']}'s {what} of "
                                f"{frame['max_power_w']:,.0f} W",
                                fix="fewer or lower-power GPUs, or a larger chassis", field="hardware.gpus_per_node"))

    # ---- checks
    findings += check_form_factor(acc, gpus, frame, complete)
    findings += check_cooling(acc, frame, complete, scenario.facility.cooling)
    if not (complete and server.get("racks_count")):  # a rack-scale system's memory is the vendor's design
        findings += check_ram(memory_gb, gpu_mem_gb, cpu, cpu_count)
    lanes_needed = lanes_avail = None
    if not complete:
        slot_f, lanes_needed, lanes_avail, lane_f = check_pcie(acc, gpus, frame, nic_list, drive_list, cpu, cpu_count)
        findings += slot_f + lane_f
    findings += check_network(nic_list, mgmt_ports, gpus, hw.nodes, scenario.network.topology)

    # ---- space and weight
    ru = (frame or {}).get("rack_units")
    if ru is None:
        ru = pa.TOWER_RACK_UNITS
        findings.append(Finding("node-form-factor", "info",
                                f"{(frame or {}).get('id', 'this node')} is a tower; on a rack shelf it is counted as "
                                f"{ru}U", fix="use a rack-mount server for a rack deployment"))
    weight = (frame or {}).get("weight_kg")
    estimated = weight is None
    if weight is None:
        weight = pa.SERVER_KG_PER_U * int(ru)
    if complete:
        name = server["name"]
    else:
        name = f"{gpus}x {acc['id']} in {frame['id'] if frame else 'a generic chassis'}"
    mem = [Nic("mgmt-onboard", mgmt_ports, "mgmt", 1, 1.0, 0, "Ethernet", 0.0)] if mgmt_ports else []
    return NodeDesign(
        name=name, origin="catalogue" if complete else "parts", server_id=server["id"] if server else None,
        chassis_id=frame["id"] if frame is not None and not complete else None, accelerator_id=acc["id"],
        gpus_per_node=gpus, components=comps, component_peak_w=comp_peak, component_typical_w=comp_typ,
        vendor_max_power_w=vendor_max, peak_power_w=peak, typical_power_w=typical,
        psu_count=int(psu_count) if psu_count else None, psu_rating_w=float(psu_rating) if psu_rating else None,
        psu_redundancy=str(psu_red) if psu_red else None, psu_usable_w=usable, psu_margin=margin,
        rack_units=int(ru), weight_kg=float(weight), weight_estimated=estimated,
        cooling=str((frame or {}).get("cooling") or "air"), airflow_cfm=(frame or {}).get("airflow_cfm"),
        memory_gb=float(memory_gb), gpu_memory_gb=gpu_mem_gb, cpu_id=cpu["id"] if cpu else None, cpu_count=cpu_count,
        nics=nic_list + mem, pcie_lanes_needed=lanes_needed, pcie_lanes_available=lanes_avail,
        findings=sort_findings(findings),
    )


def _catalogue_drives(server: dict[str, Any], cat: Catalog) -> list[tuple[dict[str, Any], int]]:
    """Drives of a catalogue system, counted from its OS and data capacity (1.92 TB M.2 boot
    drives, 3.84 TB U.2 data drives), as the DGX user guides list them."""
    out = []
    boot = {"id": "m.2-boot-1.92tb", "kind": "nvme-ssd", "interface": "M.2", "max_power_w": None}
    data = {"id": "u.2-nvme-3.84tb", "kind": "nvme-ssd", "interface": "U.2", "max_power_w": None}
    if _present(cat, "storage", DEFAULT_BOOT_DRIVE):
        boot = cat.get("storage", DEFAULT_BOOT_DRIVE)
    if _present(cat, "storage", DEFAULT_DATA_DRIVE):
        data = cat.get("storage", DEFAULT_DATA_DRIVE)
    if server.get("os_storage_tb"):
        out.append((boot, max(1, round(float(server["os_storage_tb"]) / 1.92))))
    if server.get("data_storage_tb"):
        out.append((data, max(1, math.ceil(float(server["data_storage_tb"]) / 3.84 - 1e-9))))
    return out


# --------------------------------------------------------------------------- checks


def check_psu(peak_w: float, count: int, rating_w: float, redundancy: str, usable_w: float,
              margin: float = pa.PSU_MARGIN) -> list[Finding]:
    """``node-psu-capacity``: the N working supplies against the peak draw with a margin.

    error: peak above all supplies together, or above the N working ones (a supply failure
    would trip the node); warning: peak above (1 - margin) x usable; else an info line.
    """
    if peak_w <= 0:
        raise ScenarioError("peak_power_w", f"must be a positive number of watts, got {peak_w!r}")
    allowed = usable_w * (1 - margin)
    total = count * rating_w
    head = f"{redundancy} x {rating_w:,.0f} W supplies give {usable_w:,.0f} W usable"
    if peak_w > total:
        return [Finding("node-psu-capacity", "error",
                        f"peak draw {peak_w:,.0f} W exceeds all {count} supplies together ({total:,.0f} W)",
                        fix="more or larger supplies, or fewer / lower-power GPUs", field="hardware.parts.psus")]
    if peak_w > usable_w:
        return [Finding("node-psu-capacity", "error",
                        f"{head}, below the peak draw {peak_w:,.0f} W: the node is not redundant, one supply "
                        "failure trips it", fix="add a supply (e.g. N+1 with larger N) or larger supplies",
                        field="hardware.parts.psus")]
    if peak_w > allowed:
        return [Finding("node-psu-capacity", "warning",
                        f"{head}; peak draw {peak_w:,.0f} W loads them to {peak_w / usable_w:.0%}, above the "
                        f"{1 - margin:.0%} limit ({allowed:,.0f} W) of a {margin:.0%} margin",
                        fix="larger supplies or one more working supply", field="hardware.parts.psus")]
    return [Finding("node-psu-capacity", "info",
                    f"{head}; peak draw {peak_w:,.0f} W loads them to {peak_w / usable_w:.0%} "
                    f"(limit {1 - margin:.0%}, {allowed:,.0f} W)")]


def check_form_factor(acc: dict[str, Any], gpus: int, frame: dict[str, Any] | None,
                      complete: bool) -> list[Finding]:
    """``node-form-factor``: SXM/OAM modules need a matching baseboard; PCIe cards need slots;
    board-level parts (GB200, TPU) come only as complete systems."""
    if complete:
        return []
    ff = acc["form_factor"]
    out: list[Finding] = []
    if ff in ("board", "TPU"):
        return [Finding("node-form-factor", "error",
                        f"{acc['id']} ({ff}) is not sold as a part; it comes only in a vendor system",
                        fix="pick a catalogue server for this accelerator; a TPU is rented as cloud capacity "
                        "(rent it in place of buying it)",
                        field="hardware.accelerator")]
    base = (frame or {}).get("gpu_baseboard")
    fid = (frame or {}).get("id", "the chassis")
    if ff in ("SXM", "OAM"):
        want = ff.lower()
        if base is not None and base != want:
            out.append(Finding("node-form-factor", "error",
                               f"{acc['id']} is an {ff} module and needs an {'HGX/DGX' if ff == 'SXM' else 'OAM UBB'}"
                               f" baseboard; {fid} has {base} GPU slots",
                               fix=f"pick a chassis with a {want} GPU baseboard, or a PCIe version of the GPU",
                               field="hardware.parts.chassis"))
        if gpus not in BASEBOARD_GPU_COUNTS:
            out.append(Finding("node-form-factor", "error",
                               f"{ff} baseboards hold {' or '.join(map(str, BASEBOARD_GPU_COUNTS))} GPUs, not {gpus}",
                               fix="use 4 or 8 GPUs per node", field="hardware.gpus_per_node"))
    elif ff == "PCIe" and base in ("sxm", "oam"):
        out.append(Finding("node-form-factor", "error",
                           f"{acc['id']} is a PCIe card; {fid} is a {base.upper()} baseboard chassis without GPU "
                           "slots", fix="pick a PCIe GPU chassis, or the SXM version of the GPU",
                           field="hardware.parts.chassis"))
    return out


def check_cooling(acc: dict[str, Any], frame: dict[str, Any] | None, complete: bool,
                  facility_cooling: str) -> list[Finding]:
    """``node-cooling-mismatch``: passive cards need a server with ducted front-to-back airflow (not a
    tower built for fan cards); liquid-cooled parts need liquid cooling in the node and the hall."""
    out: list[Finding] = []
    node_cooling = str((frame or {}).get("cooling") or "air")
    fid = (frame or {}).get("id", "the chassis")
    if not complete:
        if acc["cooling"] == "passive" and (frame or {}).get("kind") == "workstation":
            out.append(Finding("node-cooling-mismatch", "error",
                               f"{acc['id']} is passively cooled and relies on the server's ducted airflow; "
                               f"{fid} is a tower built for cards with their own fans",
                               fix="use actively cooled cards in a workstation, or a rack server for passive cards",
                               field="hardware.accelerator"))
        if acc["cooling"] == "liquid" and node_cooling == "air":
            out.append(Finding("node-cooling-mismatch", "error",
                               f"{acc['id']} is liquid-cooled but {fid} is air-cooled",
                               fix="pick a liquid-cooled chassis or an air-cooled GPU", field="hardware.accelerator"))
    if node_cooling == "liquid" and facility_cooling != "liquid":
        out.append(Finding("node-cooling-mismatch", "error",
                           f"{fid} needs direct liquid cooling but the facility cooling is {facility_cooling.replace('_', '-')}",
                           fix="use direct liquid cooling (coolant distribution units)",
                           field="facility.cooling"))
    elif node_cooling == "hybrid" and facility_cooling == "air":
        out.append(Finding("node-cooling-mismatch", "warning",
                           f"{fid} is hybrid (liquid + air) cooled but the facility cooling is air",
                           fix="use direct liquid or rear-door cooling", field="facility.cooling"))
    return out


def check_ram(memory_gb: float, gpu_memory_gb: float, cpu: dict[str, Any] | None, cpu_count: int) -> list[Finding]:
    """``node-ram-floor``: below 24 GB is an error; below max(64 GB, 2x GPU memory) a warning
    (power_assumptions: Puget/Lambda guidance; DGX A100/H100 ship 3.2x)."""
    if memory_gb <= 0:
        raise ScenarioError("hardware.parts.memory_gb", f"must be a positive number of GB, got {memory_gb!r}")
    rec = max(pa.RAM_RECOMMENDED_FLOOR_GB, pa.RAM_PER_GPU_MEMORY * gpu_memory_gb)
    out: list[Finding] = []
    if memory_gb < pa.RAM_HARD_FLOOR_GB:
        out.append(Finding("node-ram-floor", "error",
                           f"{memory_gb:g} GB of system memory is below the {pa.RAM_HARD_FLOOR_GB:g} GB floor",
                           fix=f"fit at least {rec:,.0f} GB", field="hardware.parts.memory_gb"))
    elif memory_gb < rec:
        out.append(Finding("node-ram-floor", "warning",
                           f"{memory_gb:,.0f} GB of system memory is below the recommended {rec:,.0f} GB "
                           f"(max of {pa.RAM_RECOMMENDED_FLOOR_GB:g} GB and {pa.RAM_PER_GPU_MEMORY:g}x the "
                           f"{gpu_memory_gb:,.0f} GB of GPU memory)",
                           fix=f"fit {rec:,.0f} GB or more", field="hardware.parts.memory_gb"))
    if cpu is not None and cpu.get("max_memory_gb") and cpu_count and memory_gb > cpu["max_memory_gb"] * cpu_count:
        out.append(Finding("node-ram-floor", "error",
                           f"{memory_gb:,.0f} GB exceeds what {cpu_count} x {cpu['id']} address "
                           f"({cpu['max_memory_gb'] * cpu_count:,.0f} GB)",
                           fix="less memory or more / larger CPUs", field="hardware.parts.memory_gb"))
    return out


def check_pcie(acc: dict[str, Any], gpus: int, frame: dict[str, Any] | None, nics: list[Nic],
               drives: list[tuple[dict[str, Any], int]], cpu: dict[str, Any] | None,
               cpu_count: int) -> tuple[list[Finding], int | None, int | None, list[Finding]]:
    """``node-pcie-slots`` and ``node-pcie-lanes`` for a node built from parts.

    Slots: each PCIe GPU takes an x16 slot no narrower than the card; x16 NICs take x16
    slots, x8 NICs an x8 or a spare x16. Lanes: PCIe GPUs x16 + NICs + NVMe drives x4
    against the CPUs' I/O lanes (:func:`cpu_io_lanes`). On SXM/OAM baseboards the GPUs and
    their NICs hang off the baseboard's PCIe switches, so only slots are checked.
    """
    slots: list[Finding] = []
    lanes: list[Finding] = []
    ff = acc["form_factor"]
    pcie_gpus = gpus if ff == "PCIe" else 0
    f = frame or {}
    fid = f.get("id", "the chassis")
    x16, x8 = f.get("pcie_x16_slots"), f.get("pcie_x8_slots") or 0
    nic16 = sum(n.count for n in nics if n.lanes >= 16 and n.role != "mgmt-onboard")
    nic8 = sum(n.count for n in nics if n.lanes < 16)
    if x16 is not None:
        if pcie_gpus > x16:
            slots.append(Finding("node-pcie-slots", "error", f"{pcie_gpus} PCIe GPUs need {pcie_gpus} x16 slots; {fid} "
                                 f"has {x16}", fix="fewer GPUs or a larger chassis", field="hardware.gpus_per_node"))
        width, max_width = acc.get("slot_width_slots"), f.get("max_gpu_slot_width_slots")
        if pcie_gpus and width and max_width and width > max_width:
            slots.append(Finding("node-pcie-slots", "error",
                                 f"{acc['id']} is {width} slots wide; {fid} takes cards up to {max_width} slots",
                                 fix="a narrower card or a chassis with wider GPU positions",
                                 field="hardware.accelerator"))
        free16 = max(0, x16 - pcie_gpus)
        if nic16 > free16:
            slots.append(Finding("node-pcie-slots", "error",
                                 f"{nic16} x16 NICs but only {free16} x16 slots are left after the GPUs in {fid}",
                                 fix="fewer NICs, dual-port NICs, or a chassis with more slots",
                                 field="hardware.parts.nics"))
        elif nic8 > x8 + (free16 - nic16):
            slots.append(Finding("node-pcie-slots", "error",
                                 f"{nic8} x8 NICs but only {x8} x8 and {free16 - nic16} spare x16 slots in {fid}",
                                 fix="fewer NICs", field="hardware.parts.nics"))
    if ff in ("SXM", "OAM"):
        return slots, None, None, lanes
    if cpu is None or not cpu_count:
        return slots, None, None, lanes
    nvme = sum(c for d, c in drives if d.get("kind") == "nvme-ssd")
    needed = pcie_gpus * int(acc.get("pcie_lanes") or 16) + sum(n.lanes * n.count for n in nics) + NVME_LANES * nvme
    avail = cpu_io_lanes(cpu, cpu_count)
    if needed > avail:
        lanes.append(Finding("node-pcie-lanes", "warning",
                             f"the cards need {needed} PCIe lanes ({pcie_gpus} GPUs x16, NICs, {nvme} NVMe x4) but "
                             f"{cpu_count} x {cpu['id']} give {avail}",
                             fix="a chassis with PCIe switches (GPUs then share uplink bandwidth), fewer cards, or "
                             "CPUs with more lanes", field="hardware.parts.cpus"))
    return slots, needed, avail, lanes


def check_network(nics: list[Nic], mgmt_ports: int, gpus: int, nodes: int, topology: str) -> list[Finding]:
    """``node-network-ports``: at least two ports per node (management and data); at least one
    high-speed fabric port (InfiniBand/VPI, or Ethernet >= 100 Gb/s for RoCE) per node
    in a multi-node cluster, and one per GPU for a rail-optimised fabric."""
    ports = sum(n.ports * n.count for n in nics) + mgmt_ports
    fabric = sum(n.ports * n.count for n in nics if n.role == "compute" and _is_fabric(n))
    out: list[Finding] = []
    if ports == 0:
        out.append(Finding("node-network-ports", "error", "the node has no network port",
                           fix="add a network adapter and management ports", field="hardware.parts.nics"))
    elif ports < 2:
        out.append(Finding("node-network-ports", "warning",
                           f"the node has {ports} network port; at least two (management and data) are needed",
                           fix="add a management or data NIC", field="hardware.parts.mgmt_nics"))
    if nodes > 1 and fabric == 0:
        out.append(Finding("node-network-ports", "error",
                           f"{nodes} nodes but no high-speed fabric port (InfiniBand, or Ethernet >= 100 Gb/s for "
                           "RoCE) on the node", fix="add compute network adapters (InfiniBand or RoCE Ethernet)",
                           field="hardware.parts.nics"))
    elif nodes > 1 and topology == "rail-optimized" and fabric < gpus:
        out.append(Finding("node-network-ports", "warning",
                           f"a rail-optimised fabric wants one fabric port per GPU: {fabric} ports for {gpus} GPUs",
                           fix=f"fit {gpus} compute NIC ports", field="hardware.parts.nics"))
    return out
