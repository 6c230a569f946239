"""The data-management plan: data set size, versions, staging from the capacity tier to the
fast tier, checkpoint retention and backup.

The fast tier is the shared file system of the storage stage
(:func:`gpucluster_lib.facility.storage.size_storage`: its appliances and their capacity); the
capacity tier (object store or data lake outside the fast tier) holds the data set versions
and the archived checkpoints. Rules [bytes]::

    data set      = operations.dataset_tb, else the storage stage's data set when it sizes
                    one, else tokens x (4 B of raw text + 2 or 4 B of token ids) for a language model,
                    images x 108 kB for an image model
    fast tier     = data set (current version) + reliability.checkpoints_kept x checkpoint
    capacity tier = the storage stage's capacity tier need when it sizes one, else
                    data set x operations.dataset_versions
                  + checkpoint x ceil(operations.checkpoint_retention_days)   (one a day)
    staging [s]   = data set / (appliances x write bandwidth)   (ingest into the fast tier)
    backup        = the capacity tier again off site ("offsite"), snapshots of the fast tier
                    ("snapshot"), nothing ("none")

Sources: 4 characters (bytes) of English text per token (OpenAI, "What are tokens and how to
count them?"); token ids stored as uint16 when the vocabulary has fewer than 65,500 entries,
else int32 (Megatron-LM ``indexed_dataset.DType.optimal_dtype``); 108 kB per image: ImageNet-1k
training set, 1,281,167 images in the 138 GB ILSVRC2012_img_train.tar (Russakovsky et al. 2015).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from gpucluster_lib.errors import GpuClusterError
from gpucluster_lib.findings import Finding, sort_findings
from gpucluster_lib.formatting import number_words, plural
from gpucluster_lib.scenario import Scenario
from gpucluster_lib.units import GB, SECONDS_PER_DAY, SECONDS_PER_HOUR, TB
from gpucluster_lib.workloads.transformer import resolve_transformer

#: Raw text per token [B] (OpenAI tokenizer guide: about 4 characters of English per token).
RAW_TEXT_BYTES_PER_TOKEN = 4.0
#: Vocabulary size below which Megatron-LM stores token ids as uint16 (2 B), else int32 (4 B).
UINT16_VOCAB_LIMIT = 65_500
#: Bytes per training image: 138e9 B / 1,281,167 ImageNet-1k training images [B].
BYTES_PER_IMAGE = 138e9 / 1_281_167


@dataclass
class DataPlan:
    """Where the data lives and for how long. Bytes unless the name says otherwise."""

    dataset_bytes: float | None
    dataset_basis: str
    dataset_versions: int
    fast_tier_capacity_bytes: float | None
    fast_tier_need_bytes: float
    capacity_tier_bytes: float
    checkpoint_bytes: float
    checkpoints_on_fast_tier: int
    checkpoints_per_day: float | None
    checkpoint_retention_days: float
    archived_checkpoints: int
    staging_s: float | None
    backup: str
    backup_bytes: float
    steps: list[tuple[str, str]]
    findings: list[Finding] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "dataset_tb": None if self.dataset_bytes is None else self.dataset_bytes / TB,
            "dataset_basis": self.dataset_basis, "dataset_versions": self.dataset_versions,
            "fast_tier_capacity_tb": None if self.fast_tier_capacity_bytes is None
            else self.fast_tier_capacity_bytes / TB,
            "fast_tier_need_tb": self.fast_tier_need_bytes / TB, "capacity_tier_tb": self.capacity_tier_bytes / TB,
            "checkpoint_tb": self.checkpoint_bytes / TB, "checkpoints_on_fast_tier": self.checkpoints_on_fast_tier,
            "checkpoints_per_day": self.checkpoints_per_day,
            "checkpoint_retention_days": self.checkpoint_retention_days,
            "archived_checkpoints": self.archived_checkpoints, "staging_hours": None if self.staging_s is None
            else self.staging_s / SECONDS_PER_HOUR, "backup": self.backup, "backup_tb": self.backup_bytes / TB,
            "steps": [{"step": a, "detail": b} for a, b in self.steps],
            "findings": [f.to_dict() for f in self.findings],
        }


def duration_text(seconds: float) -> str:
    """``42 min`` below an hour, else ``3.5 h``."""
    if seconds < SECONDS_PER_HOUR:
        return f"{max(1, round(seconds / 60))} min"
    return f"{seconds / SECONDS_PER_HOUR:,.1f} h"


def token_id_bytes(vocab_size: int) -> int:
    """Bytes per stored token id: 2 (uint16) below 65,500 entries, else 4 (int32) [B]."""
    return 2 if vocab_size < UINT16_VOCAB_LIMIT else 4


def text_dataset_bytes(tokens: float, vocab_size: int) -> float:
    """Raw text plus token ids of a ``tokens``-token corpus [B].

    15e12 tokens with a 128,256-entry vocabulary: 15e12 x (4 + 4) = 120 TB.
    """
    return tokens * (RAW_TEXT_BYTES_PER_TOKEN + token_id_bytes(vocab_size))


def _dataset(scenario: Scenario, storage: Any = None) -> tuple[float | None, str]:
    ops, tr = scenario.operations, scenario.training
    if ops.dataset_tb is not None:
        return ops.dataset_tb * TB, "operations.dataset_tb"
    sized = float(getattr(storage, "dataset_bytes", 0.0) or 0.0)
    if sized > 0:  # the storage stage sizes the data set itself: one figure for both
        return sized, "the data set the shared storage is sized for"
    if tr.tokens is not None:
        try:
            vocab = resolve_transformer(scenario.model).vocab_size
        except GpuClusterError:
            vocab = UINT16_VOCAB_LIMIT
        return text_dataset_bytes(tr.tokens, vocab), (
            f"{number_words(round(float(tr.tokens)))} tokens x ({RAW_TEXT_BYTES_PER_TOKEN:g} B raw text + {token_id_bytes(vocab)} B token id)")
    if tr.dataset_images is not None:
        return tr.dataset_images * BYTES_PER_IMAGE, f"{number_words(round(float(tr.dataset_images)))} images x {BYTES_PER_IMAGE / 1e3:.0f} kB"
    return None, "no training data set in the scenario"


def plan_data(scenario: Scenario, *, storage: Any, reliability: Any = None) -> DataPlan:
    """The data-management plan of a design (rules in the module docstring)."""
    ops = scenario.operations
    findings: list[Finding] = []
    data, basis = _dataset(scenario, storage)
    ckpt = float(storage.checkpoint_bytes or 0.0)
    kept = int(storage.checkpoints_kept)
    cap_tb = storage.capacity_tb
    fast_cap = cap_tb * TB if cap_tb is not None else None
    fast_need = (data or 0.0) + kept * ckpt
    interval = getattr(reliability, "checkpoint_interval_s", None) if reliability is not None else None
    per_day = SECONDS_PER_DAY / interval if interval else None
    archived = math.ceil(ops.checkpoint_retention_days - 1e-9) if ckpt else 0
    capacity = (data or 0.0) * ops.dataset_versions + archived * ckpt
    tier_tb = float(getattr(storage, "capacity_tier_tb", 0.0) or 0.0)  # the storage stage's capacity tier
    sized_tb = float(getattr(storage, "capacity_needed_tb", 0.0) or 0.0)
    if sized_tb > 0:  # the storage stage sizes the capacity tier itself: one figure for both
        capacity = sized_tb * TB
    elif tier_tb and capacity > tier_tb * TB:
        findings.append(Finding("ops-data-capacity-tier-full", "warning",
                                f"{plural(ops.dataset_versions, 'data set version')} and {plural(archived, 'archived checkpoint')} need "
                                f"{capacity / TB:,.1f} TB, more than the {tier_tb:,.1f} TB capacity tier",
                                fix="keep fewer data set versions, or keep checkpoints for fewer days",
                                field="operations.checkpoint_retention_days"))
    bw = storage.appliances * storage.appliance_write_gb_per_s * GB
    staging = data / bw if (data and bw) else None
    backup_bytes = capacity if ops.backup == "offsite" else (fast_need if ops.backup == "snapshot" else 0.0)

    if data is None:
        findings.append(Finding("ops-data-no-dataset", "info",
                                "no data set size: the scenario gives no training tokens or images",
                                fix="give the data set size", field="operations.dataset_tb"))
    if fast_cap is not None and fast_need > fast_cap:
        findings.append(Finding("ops-data-fast-tier-full", "warning",
                                f"the fast tier holds {fast_cap / TB:,.1f} TB but the data set and {kept} checkpoints "
                                f"need {fast_need / TB:,.1f} TB", fix="add storage appliances, or stage part of "
                                "the data set at a time", field="reliability.storage_units"))
    elif fast_cap is None and data:
        findings.append(Finding("ops-data-local", "info",
                                f"no shared file system: the {data / TB:,.2f} TB data set is copied to every node's "
                                "local NVMe", field="reliability.storage_system"))
    if ops.backup == "none":
        findings.append(Finding("ops-data-no-backup", "warning",
                                "no backup: a lost data set version or checkpoint archive cannot be restored",
                                fix="choose an off-site backup", field="operations.backup"))
    if data and staging is not None:
        findings.append(Finding("ops-data-staging", "info",
                                f"staging the {data / TB:,.1f} TB data set into the fast tier at "
                                f"{bw / GB:,.0f} GB/s takes {duration_text(staging)}", field="operations.dataset_tb"))

    steps = [
        ("Data set", f"{data / TB:,.2f} TB ({basis})" if data else basis),
        ("Versioning", f"{plural(ops.dataset_versions, 'version')} kept on the capacity tier, each immutable and named "
                       "by its content hash; a training run records the version it read"),
        ("Staging", "copy the current version from the capacity tier to the fast tier before the run"
                    + (f": {duration_text(staging)} at {bw / GB:,.0f} GB/s" if staging else "")),
        ("Checkpoints", f"the last {kept} on the fast tier ({kept * ckpt / TB:,.2f} TB)"
                        + (f", written {per_day:,.1f} times a day" if per_day else "")
                        + f"; one a day archived to the capacity tier for {ops.checkpoint_retention_days:g} days"),
        ("Backup", {"offsite": f"an off-site copy of the capacity tier ({backup_bytes / TB:,.1f} TB)",
                    "snapshot": f"snapshots of the fast tier ({backup_bytes / TB:,.1f} TB)",
                    "none": "none"}[ops.backup]),
    ]
    return DataPlan(dataset_bytes=data, dataset_basis=basis, dataset_versions=ops.dataset_versions,
                    fast_tier_capacity_bytes=fast_cap, fast_tier_need_bytes=fast_need, capacity_tier_bytes=capacity,
                    checkpoint_bytes=ckpt, checkpoints_on_fast_tier=kept, checkpoints_per_day=per_day,
                    checkpoint_retention_days=ops.checkpoint_retention_days, archived_checkpoints=archived,
                    staging_s=staging, backup=ops.backup, backup_bytes=backup_bytes, steps=steps,
                    findings=sort_findings(findings))
