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

Storage for data (the ``storage`` section) adds three needs to the fast tier, so the count is
the largest of five:

    read:      ceil(G x r / R)        G GPUs reading r GB/s each (``storage.performance_class``:
                                      NVIDIA DGX SuperPOD storage guidance, :data:`PERFORMANCE_CLASSES`)
                                      from appliances of R GB/s read
    write:     ceil(G x w / W)        the class's sustained write per GPU (beside the checkpoint burst)
    capacity:  ceil((D + k x C) / Cap) the tokenised data set D = tokens x bytes per token (2 B for a
                                      vocabulary up to 65,536, else 4 B) or images x bytes per image,
                                      plus the k checkpoints kept

and a **capacity tier** (``storage.capacity_system``, default :data:`DEFAULT_CAPACITY_SYSTEM`)
holds the raw data (``raw_data_multiple`` x tokens x ``raw_bytes_per_token``), a copy of the
tokenised set and ``checkpoints_archived`` checkpoints, all times ``storage.growth_factor``.
Both tiers' capacity, read and write bandwidth are in :meth:`StorageDesign.to_dict` (the budget's
``storage`` section: ``capacity_tb``, ``read_gb_per_s``, ``write_gb_per_s``, ``units``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from gpucluster_lib.checks import require_non_negative, require_positive
from gpucluster_lib.errors import GpuClusterError, ScenarioError, UnknownIdError
from gpucluster_lib.formatting import number_words
from gpucluster_lib.hardware import power_assumptions as pa
from gpucluster_lib.scenario import Scenario
from gpucluster_lib.units import GB, TB
from gpucluster_lib.workloads.checkpoint import scenario_checkpoint_bytes
from gpucluster_lib.workloads.transformer import resolve_transformer

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
#: Shared storage classes [GB/s per GPU]: NVIDIA DGX SuperPOD H100 reference architecture, storage
#: performance guidance ("Good / Better / Best"), 4-SU (1,016 GPU) aggregate read 60 / 160 / 500 GB/s
#: and write 30 / 80 / 250 GB/s, divided by the 1,016 GPUs. The RA text was read through a mirror
#: in this session only for its single-node GDS read of "over 40 GBps"; the class table is as
#: NVIDIA publishes it in its DGX SuperPOD RAs. Llama 3 (Dubey et al. 2024, sec. 3.3.1): 2 TB/s
#: sustained and 7 TB/s peak for 16K H100, i.e. 0.12 and 0.43 GB/s per GPU, between "better" and "best".
PERFORMANCE_CLASSES: dict[str, dict[str, float]] = {
    "good": {"read": 60 / 1016, "write": 30 / 1016},
    "better": {"read": 160 / 1016, "write": 80 / 1016},
    "best": {"read": 500 / 1016, "write": 250 / 1016},
}
#: Capacity tier used when the scenario names none (storage.csv id).
DEFAULT_CAPACITY_SYSTEM = "generic-hdd-object-4u"
#: Vocabulary size up to which a token id fits in 2 bytes (uint16).
UINT16_VOCAB = 65_536


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
    #: appliances the read, the sustained write and the capacity of the data need [count]
    by_read: int = 0
    by_write: int = 0
    by_data: int = 0
    appliance_read_gb_per_s: float = 0.0
    #: bandwidth the GPUs need [GB/s] and the tokenised data set [B]
    read_needed_gb_per_s: float = 0.0
    write_needed_gb_per_s: float = 0.0
    dataset_bytes: float = 0.0
    performance_class: str = "better"
    #: capacity tier: system, units, capacity needed [TB], per-unit figures
    capacity_system: str | None = None
    capacity_units: int = 0
    capacity_needed_tb: float = 0.0
    capacity_unit_tb: float = 0.0
    capacity_unit_read_gb_per_s: float = 0.0
    capacity_unit_write_gb_per_s: float = 0.0
    capacity_unit_power_w: float = 0.0
    capacity_unit_rack_units: int = 0

    @property
    def power_w(self) -> float:
        """Maximum power of the fast tier's appliances [W]."""
        return self.appliances * self.appliance_power_w

    @property
    def rack_units(self) -> int:
        """Rack space of the fast tier's appliances [U]."""
        return self.appliances * self.appliance_rack_units

    @property
    def total_power_w(self) -> float:
        """Maximum power of both tiers [W]."""
        return self.power_w + self.capacity_units * self.capacity_unit_power_w

    @property
    def total_rack_units(self) -> int:
        """Rack space of both tiers [U]."""
        return self.rack_units + self.capacity_units * self.capacity_unit_rack_units

    @property
    def read_gb_per_s(self) -> float:
        """Read bandwidth of the fast tier [GB/s] (the capacity tier is not read by the jobs)."""
        return self.appliances * self.appliance_read_gb_per_s

    @property
    def capacity_tier_tb(self) -> float:
        """Capacity of the capacity tier [TB]."""
        return self.capacity_units * self.capacity_unit_tb

    @property
    def total_capacity_tb(self) -> float:
        """Capacity of both tiers [TB]."""
        return (self.capacity_tb or 0.0) + self.capacity_tier_tb

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
            "read_gb_per_s": round(self.read_gb_per_s, 3),
            "write_gb_per_s": self.checkpoint_write_gb_per_s,
            "by_read": self.by_read,
            "by_write": self.by_write,
            "by_data": self.by_data,
            "read_needed_gb_per_s": round(self.read_needed_gb_per_s, 3),
            "write_needed_gb_per_s": round(self.write_needed_gb_per_s, 3),
            "dataset_tb": round(self.dataset_bytes / TB, 3),
            "performance_class": self.performance_class,
            "capacity_tier": {"system": self.capacity_system, "units": self.capacity_units,
                              "power_w": round(self.capacity_units * self.capacity_unit_power_w, 1),
                              "rack_units": self.capacity_units * self.capacity_unit_rack_units,
                              "capacity_tb": round(self.capacity_tier_tb, 3),
                              "needed_tb": round(self.capacity_needed_tb, 3),
                              "read_gb_per_s": round(self.capacity_units * self.capacity_unit_read_gb_per_s, 3),
                              "write_gb_per_s": round(self.capacity_units * self.capacity_unit_write_gb_per_s, 3)},
            "total_capacity_tb": round(self.total_capacity_tb, 3),
            "total_power_w": round(self.total_power_w, 1),
            "total_rack_units": self.total_rack_units,
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


def dataset_bytes(scenario: Scenario) -> tuple[float, float, str]:
    """(tokenised data set [B], raw source data [B], how) of the scenario.

    Tokens: ``storage.dataset_tokens``, else ``training.tokens``; bytes per token
    ``storage.bytes_per_token``, else 2 B for a vocabulary up to 65,536 ids (uint16) and 4 B
    above (Llama 3's 128,256). Raw: tokens x ``raw_bytes_per_token`` (about 4 characters of
    English a BPE token) x ``raw_data_multiple`` (RefinedWeb, Penedo et al. 2023: filtering
    removes almost 90% of Common Crawl). Images: ``training.dataset_images`` x
    ``bytes_per_image`` (ILSVRC-2012 train: about 138 GB for 1.28 M images = 108 kB), raw = the same.
    """
    st = scenario.storage
    tokens = st.dataset_tokens or scenario.training.tokens
    if scenario.training.dataset_images:
        size = float(scenario.training.dataset_images) * st.bytes_per_image
        return size, size, f"{scenario.training.dataset_images:,.0f} images x {st.bytes_per_image:,.0f} B"
    if not tokens:
        return 0.0, 0.0, "no data set (no training.tokens or storage.dataset_tokens)"
    per = st.bytes_per_token
    if per is None:
        try:
            vocab = resolve_transformer(scenario.model).vocab_size
            per = 2.0 if vocab <= UINT16_VOCAB else 4.0
        except GpuClusterError:
            per = 4.0
    raw = float(tokens) * st.raw_bytes_per_token * st.raw_data_multiple
    return float(tokens) * per, raw, f"{number_words(round(float(tokens)))} tokens x {per:g} B"


def size_storage(scenario: Scenario, catalog: Any, *, nodes: int, gpus: int | None = None,
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
    # ---- storage for data: read and sustained write per GPU, the data set on the fast tier
    st = scenario.storage
    cls = PERFORMANCE_CLASSES[st.performance_class]
    n_gpus = int(gpus) if gpus is not None else 0
    read_per = st.read_gb_per_s_per_gpu if st.read_gb_per_s_per_gpu is not None else cls["read"]
    write_per = st.write_gb_per_s_per_gpu if st.write_gb_per_s_per_gpu is not None else cls["write"]
    read_need = n_gpus * read_per if nodes > 1 else 0.0
    write_need = n_gpus * write_per if nodes > 1 else 0.0
    read = (_num(row, "read_gb_per_s") if row is not None else None) or write
    data_b, raw_b, data_how = dataset_bytes(scenario)
    by_read = math.ceil(read_need / read - 1e-9) if read_need else 0
    by_write = math.ceil(write_need / write - 1e-9) if write_need else 0
    by_data = math.ceil((data_b + rel.checkpoints_kept * size) / (cap * TB) - 1e-9) if cap and data_b else 0
    if rel.storage_units:
        count, basis = int(rel.storage_units), "scenario"
    elif nodes <= 1 and not named:
        count, basis = 0, "local"
    else:
        needs = {"bandwidth": by_bw, "read": by_read, "write": by_write, "capacity": max(by_cap, by_data)}
        count = max(max(needs.values()), 1)
        basis = next((k for k, v in needs.items() if v == count), "minimum")
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
    if read_need:
        sources["read_gb_per_s_per_gpu"] = (f"{read_per:.4g} GB/s per GPU x {n_gpus} GPUs = {read_need:,.1f} GB/s "
                                            f"({'scenario storage.read_gb_per_s_per_gpu' if st.read_gb_per_s_per_gpu is not None else 'NVIDIA DGX SuperPOD storage class ' + repr(st.performance_class)})")
    if data_b:
        sources["dataset"] = data_how
    # ---- capacity tier: raw data, a copy of the tokenised set, archived checkpoints, x growth
    cap_sys, cap_units, cap_need_tb = None, 0, 0.0
    c_tb = c_read = c_write = c_power = 0.0
    c_ru = 0
    if st.capacity_tier and count and (raw_b or data_b or size):
        cap_sys = st.capacity_system or DEFAULT_CAPACITY_SYSTEM
        crow = _row(catalog, cap_sys, bool(st.capacity_system))
        if crow is not None:
            c_tb = _num(crow, "capacity_tb") or 0.0
            c_read, c_write = _num(crow, "read_gb_per_s") or 0.0, _num(crow, "write_gb_per_s") or 0.0
            c_power = _num(crow, "max_power_w") or pa.STORAGE_APPLIANCE_W
            c_ru = int(_num(crow, "rack_units") or pa.STORAGE_APPLIANCE_RACK_UNITS)
        if c_tb:
            cap_need_tb = (raw_b + data_b + st.checkpoints_archived * size) * st.growth_factor / TB
            cap_units = max(1, math.ceil(cap_need_tb / c_tb - 1e-9))
        else:
            cap_sys = None
    return StorageDesign(
        system=sid if count else "local-nvme", kind=kind if count else "local-nvme", appliances=count, basis=basis,
        appliance_write_gb_per_s=write, appliance_capacity_tb=cap, appliance_power_w=float(power),
        appliance_rack_units=int(ru), checkpoint_bytes=size, checkpoint_target_s=target,
        checkpoints_kept=rel.checkpoints_kept, by_bandwidth=by_bw, by_capacity=by_cap,
        checkpoint_write_gb_per_s=ckpt_write, sources=sources, by_read=by_read, by_write=by_write, by_data=by_data,
        appliance_read_gb_per_s=float(read), read_needed_gb_per_s=read_need, write_needed_gb_per_s=write_need,
        dataset_bytes=data_b, performance_class=st.performance_class, capacity_system=cap_sys,
        capacity_units=cap_units, capacity_needed_tb=cap_need_tb, capacity_unit_tb=c_tb,
        capacity_unit_read_gb_per_s=c_read, capacity_unit_write_gb_per_s=c_write, capacity_unit_power_w=c_power,
        capacity_unit_rack_units=c_ru,
    )
