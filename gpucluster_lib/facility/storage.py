"""Central (shared) storage sizing: one design used by the facility budget, reliability and cost.

:func:`size_storage` sizes the checkpoint / data file system of a scenario once, so that the
rack space and power in ``gpucluster budget``, the checkpoint write time in ``gpucluster
reliability`` and the storage CapEx in ``gpucluster cost`` describe the same appliances.

Appliances of the storage.csv row ``reliability.storage_system`` (default
:data:`DEFAULT_STORAGE_SYSTEM`, a parallel-fs appliance) [count]::

    appliances = reliability.storage_units                      if set, else
                 0                                               for a single node with no storage_system named
                                                                 (it checkpoints to its local NVMe), else
                 max(ceil(C / (t x W)),                          bandwidth: one checkpoint within the target
                     ceil(k x C / Cap),                          capacity: k checkpoints kept
                     1)                                          at least one shared file system

with C the checkpoint size [B] (params x ``reliability.checkpoint_bytes_per_param``, default
14 B: Rajbhandari et al. 2020, ZeRO Sec. 3.1, without the 2 B of gradients), t =
``reliability.checkpoint_target_s`` [s], W the appliance write bandwidth [B/s], k =
``reliability.checkpoints_kept`` and Cap the appliance capacity [B]. Power and rack units
come from the catalogue row, else from :mod:`gpucluster_lib.hardware.power_assumptions` (ESTIMATE).

Not modelled: read bandwidth for data loading (training reads are small next to a checkpoint
burst for LLMs; image/video pipelines may need more appliances: set reliability.storage_units)
and the data set's capacity.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from gpucluster_lib.checks import require_non_negative, require_positive
from gpucluster_lib.errors import GpuClusterError, ScenarioError, UnknownIdError
from gpucluster_lib.hardware import power_assumptions as pa
from gpucluster_lib.scenario import Scenario
from gpucluster_lib.units import GB, TB
from gpucluster_lib.workloads.checkpoint import scenario_checkpoint_bytes

#: Shared file system used when the scenario names none (storage.csv id; the DDN A3I
#: appliance of the NVIDIA DGX SuperPOD reference architectures).
DEFAULT_STORAGE_SYSTEM = "ddn-ai400x2"
#: Write bandwidth [GB/s] and capacity [TB] of one DEFAULT_STORAGE_SYSTEM when the catalogue
#: lacks its row (DDN AI400X2 datasheet as quoted in storage.csv: 65 GB/s write, 368.6 TB in
#: the 24 x 15.36 TB example configuration).
FALLBACK_STORAGE_WRITE_GB_PER_S = 65.0
FALLBACK_STORAGE_CAPACITY_TB = 368.6
#: storage.csv kinds that are shared appliances (drives are not).
APPLIANCE_KINDS = ("parallel-fs", "nfs-appliance", "object-store")
#: Write bandwidth of a single node's local NVMe data volume [GB/s]. ESTIMATE: 4 U.2 PCIe 4.0
#: drives in RAID 0 at 3.5 GB/s sequential write each (samsung-pm1733-3.84tb row of
#: storage.csv; the DGX A100 320GB data volume is 4x 3.84 TB U.2, servers.csv).
LOCAL_NVME_WRITE_GB_PER_S = 4 * 3.5
#: Default checkpoint write target [s], the default of ``reliability.checkpoint_target_s``.
#: ESTIMATE with a rationale: with Young's interval the checkpoint overhead is about
#: sqrt(2 delta / MTBI) (Young, CACM 1974), so delta = 60 s keeps it under 5 % for an MTBI
#: above 2 x 60 / 0.05^2 = 48,000 s = 13.3 h (about 1,000-2,000 GPUs at the Llama 3 405B
#: rate of interruptions).
CHECKPOINT_TARGET_S = 60.0


@dataclass(frozen=True)
class StorageDesign:
    """The central storage of a scenario. Units in the names; ``basis`` says which need set the count.

    ``basis``: "bandwidth", "capacity", "minimum" (one appliance for a shared file system),
    "scenario" (reliability.storage_units) or "local" (a single node on its own NVMe, no
    appliance).
    """

    system: str
    kind: str
    appliances: int
    basis: str
    appliance_write_gb_per_s: float
    appliance_capacity_tb: float | None
    appliance_power_w: float
    appliance_rack_units: int
    checkpoint_bytes: float
    checkpoint_target_s: float
    checkpoints_kept: int
    by_bandwidth: int
    by_capacity: int
    checkpoint_write_gb_per_s: float
    sources: dict[str, str] = field(default_factory=dict)

    @property
    def power_w(self) -> float:
        """Maximum power of the appliances [W]."""
        return self.appliances * self.appliance_power_w

    @property
    def rack_units(self) -> int:
        """Rack space of the appliances [U]."""
        return self.appliances * self.appliance_rack_units

    @property
    def capacity_tb(self) -> float | None:
        """Capacity of the appliances [TB]; None for local NVMe or an unknown capacity."""
        if not self.appliances or self.appliance_capacity_tb is None:
            return None
        return self.appliances * self.appliance_capacity_tb

    @property
    def checkpoint_write_s(self) -> float:
        """Time to write one checkpoint [s] = checkpoint bytes / write bandwidth."""
        return self.checkpoint_bytes / (self.checkpoint_write_gb_per_s * GB)

    def to_dict(self) -> dict[str, Any]:
        """The ``storage`` object of the budget / reliability / cost JSON."""
        return {
            "system": self.system,
            "kind": self.kind,
            "units": self.appliances,
            "basis": self.basis,
            "by_bandwidth": self.by_bandwidth,
            "by_capacity": self.by_capacity,
            "power_w": round(self.power_w, 1),
            "rack_units": self.rack_units,
            "capacity_tb": self.capacity_tb,
            "write_gb_per_s": self.checkpoint_write_gb_per_s,
            "checkpoint_bytes": self.checkpoint_bytes,
            "checkpoint_target_s": self.checkpoint_target_s,
            "checkpoint_write_s": self.checkpoint_write_s,
            "sources": dict(self.sources),
        }


def appliances_needed(checkpoint_bytes: float, target_s: float, write_gb_per_s: float,
                      capacity_tb: float | None, kept: int = 3) -> tuple[int, int]:
    """(by bandwidth, by capacity) appliance counts [count].

    ``ceil(C / (t x W))`` writes one checkpoint of C [B] within t [s] at W [GB/s] per
    appliance; ``ceil(k x C / Cap)`` keeps k checkpoints on appliances of Cap [TB] (0 when
    the capacity is unknown).
    """
    require_positive(target_s=target_s, write_gb_per_s=write_gb_per_s, kept=kept)
    require_non_negative(checkpoint_bytes=checkpoint_bytes)
    by_bw = math.ceil(checkpoint_bytes / (target_s * write_gb_per_s * GB) - 1e-9)
    by_cap = math.ceil(kept * checkpoint_bytes / (capacity_tb * TB) - 1e-9) if capacity_tb else 0
    return by_bw, by_cap


def _num(row: Any, key: str) -> float | None:
    v = row.get(key) if row is not None else None
    try:
        v = float(v)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(v) else v


def _row(catalog: Any, sid: str, named: bool) -> Any:
    try:
        return catalog.get("storage", sid, path="reliability.storage_system")
    except (UnknownIdError, KeyError):
        if named:
            raise
    except Exception:  # a catalogue without a storage table
        if named:
            raise
    return None


def size_storage(scenario: Scenario, catalog: Any, *, nodes: int,
                 checkpoint_bytes: float | None = None) -> StorageDesign:
    """Size the central storage of ``scenario`` for ``nodes`` compute nodes (see the module doc).

    Parameters
    ----------
    scenario : Scenario
    catalog : Catalog (only ``catalog.get("storage", id)`` is used).
    nodes : compute nodes of the job [count].
    checkpoint_bytes : checkpoint size [B]; default :func:`scenario_checkpoint_bytes`, or 0
        (no bandwidth or capacity need: the one-appliance minimum) when the scenario has no
        resolvable transformer (a facility-only or vision scenario).

    Raises
    ------
    ScenarioError : the named storage row is a drive, or has no write bandwidth.
    UnknownIdError : ``reliability.storage_system`` is not in the catalogue.
    """
    rel = scenario.reliability
    named = bool(rel.storage_system)
    sid = rel.storage_system or DEFAULT_STORAGE_SYSTEM
    sources: dict[str, str] = {}
    if checkpoint_bytes is not None:
        size = float(checkpoint_bytes)
    else:
        try:
            size = scenario_checkpoint_bytes(scenario)
        except GpuClusterError as exc:  # no model, or not a transformer preset (e.g. a vision model)
            size = 0.0
            sources["checkpoint_bytes"] = f"no checkpoint size ({exc}): one appliance for more than one node"
    row = _row(catalog, sid, named)
    if row is None:
        kind, write, cap = "parallel-fs", FALLBACK_STORAGE_WRITE_GB_PER_S, FALLBACK_STORAGE_CAPACITY_TB
        power, ru = None, None
        sources["storage"] = (f"{sid} not in the catalogue: {write:g} GB/s write and {cap:g} TB per unit "
                              "(DDN AI400X2 datasheet figures)")
    else:
        kind = str(row.get("kind") or "parallel-fs")
        if kind not in APPLIANCE_KINDS:
            raise ScenarioError("reliability.storage_system",
                                f"{sid} is a {kind} drive, not a shared storage appliance: use one of kind "
                                f"{', '.join(APPLIANCE_KINDS)} (e.g. {DEFAULT_STORAGE_SYSTEM})")
        write, cap = _num(row, "write_gb_per_s"), _num(row, "capacity_tb")
        if not (write and write > 0):
            raise ScenarioError("reliability.storage_system", f"{sid} has no write bandwidth in the catalogue")
        power, ru = _num(row, "max_power_w"), _num(row, "rack_units")
    if not power:
        power = pa.STORAGE_APPLIANCE_W
        sources["power"] = (f"{sid} has no power in the catalogue: {power / 1000:g} kW per appliance "
                            "(ESTIMATE, power_assumptions.STORAGE_APPLIANCE_W)")
    if not ru:
        ru = pa.STORAGE_APPLIANCE_RACK_UNITS
        sources["rack_units"] = f"{sid} has no rack units in the catalogue: {ru}U (ESTIMATE)"
    target = rel.checkpoint_target_s
    by_bw, by_cap = appliances_needed(size, target, write, cap, rel.checkpoints_kept)
    if rel.storage_units:
        count, basis = int(rel.storage_units), "scenario"
    elif nodes <= 1 and not named:
        count, basis = 0, "local"
    else:
        count = max(by_bw, by_cap, 1)
        basis = "bandwidth" if count == by_bw and by_bw >= by_cap else (
            "capacity" if count == by_cap else "minimum")
    if rel.checkpoint_write_gbps is not None:
        ckpt_write = float(rel.checkpoint_write_gbps)
        sources["checkpoint_write_gb_per_s"] = "scenario reliability.checkpoint_write_gbps"
    elif count:
        ckpt_write = count * write
    else:
        ckpt_write = LOCAL_NVME_WRITE_GB_PER_S
        sources["checkpoint_write_gb_per_s"] = (
            f"single node: checkpoints go to its local NVMe at {ckpt_write:g} GB/s (ESTIMATE: 4 U.2 drives in "
            "RAID 0 at 3.5 GB/s); no central appliance")
    return StorageDesign(
        system=sid if count else "local-nvme", kind=kind if count else "local-nvme", appliances=count, basis=basis,
        appliance_write_gb_per_s=write, appliance_capacity_tb=cap, appliance_power_w=float(power),
        appliance_rack_units=int(ru), checkpoint_bytes=size, checkpoint_target_s=target,
        checkpoints_kept=rel.checkpoints_kept, by_bandwidth=by_bw, by_capacity=by_cap,
        checkpoint_write_gb_per_s=ckpt_write, sources=sources,
    )
