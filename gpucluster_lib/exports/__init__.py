"""Files for procurement and operation written from one Design: SLURM and Kubernetes
configuration, bill of materials, NetBox import, rack elevations.

:func:`export_files` gives ``{relative path: text or bytes}`` of one kind; the CLI writes
them (``gpucluster export KIND SCENARIO -o PATH``) and the app zips them for download.
"""

from __future__ import annotations

import io
import zipfile
from typing import Any

#: Export kinds: the folder kinds, then the bill of materials (one file).
KINDS = ("slurm", "k8s", "bom", "netbox", "racks")
FOLDER_KINDS = ("slurm", "k8s", "netbox", "racks")
LABELS = {"slurm": "SLURM configuration", "k8s": "Kubernetes manifests", "bom": "Bill of materials",
          "netbox": "NetBox import", "racks": "Rack elevations"}


def export_files(kind: str, design: Any, *, xlsx: bool = False) -> dict[str, str | bytes]:
    """The files of one export kind (``bom``: ``bom.csv``, or ``bom.xlsx`` with ``xlsx``)."""
    if kind == "slurm":
        from gpucluster_lib.exports.slurm import slurm_files

        return dict(slurm_files(design))
    if kind == "k8s":
        from gpucluster_lib.exports.k8s import k8s_files

        return dict(k8s_files(design))
    if kind == "netbox":
        from gpucluster_lib.exports.netbox import netbox_files

        return dict(netbox_files(design))
    if kind == "racks":
        from gpucluster_lib.exports.racks import rack_files

        return dict(rack_files(design))
    if kind == "bom":
        from gpucluster_lib.exports.bom import bom_csv, bom_xlsx

        return {"bom.xlsx": bom_xlsx(design)} if xlsx else {"bom.csv": bom_csv(design)}
    from gpucluster_lib.errors import ScenarioError

    raise ScenarioError("KIND", f"unknown export {kind!r}; one of {', '.join(KINDS)}")


def zip_bytes(files: dict[str, str | bytes], folder: str) -> bytes:
    """The files in one ZIP archive under ``folder/`` (fixed timestamps: the same bytes every time)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name in sorted(files):
            data = files[name]
            info = zipfile.ZipInfo(f"{folder}/{name}", date_time=(2020, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data.encode("utf-8") if isinstance(data, str) else data)
    return buf.getvalue()
