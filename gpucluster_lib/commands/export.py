"""``gpucluster export KIND SCENARIO -o PATH``: SLURM, Kubernetes, BOM, NetBox and rack files."""

from __future__ import annotations

import argparse
from pathlib import Path

from gpucluster_lib.commands import read_design

NAME = "export"
ORDER = 80
HELP = "write SLURM or Kubernetes configuration, the bill of materials, a NetBox import or rack elevations"
DESCRIPTION = (HELP + ". slurm, k8s, netbox and racks write a folder; bom writes a CSV file, or XLSX when PATH "
               "ends in .xlsx.")


def add_arguments(p: argparse.ArgumentParser) -> None:
    from gpucluster_lib.exports import KINDS

    p.add_argument("kind", metavar="KIND", choices=KINDS, help="what to write: " + ", ".join(KINDS))
    p.add_argument("scenario", metavar="SCENARIO",
                   help="scenario YAML file, or the name of a shipped example (`gpucluster examples` lists them)")
    p.add_argument("-o", "--output", metavar="PATH", required=True,
                   help="folder to write (slurm, k8s, netbox, racks) or file (bom: .csv or .xlsx)")


def run(args: argparse.Namespace) -> int:
    from gpucluster_lib.errors import ScenarioError
    from gpucluster_lib.exports import FOLDER_KINDS, export_files

    out = Path(args.output)
    if args.kind == "bom" and out.suffix.lower() not in (".csv", ".xlsx"):
        raise ScenarioError("-o", f"the bill of materials is a .csv or .xlsx file, got {args.output!r}")
    if args.kind in FOLDER_KINDS and out.exists() and not out.is_dir():
        raise ScenarioError("-o", f"{args.output!r} is a file; {args.kind} writes a folder")
    design = read_design(args)
    files = export_files(args.kind, design, xlsx=out.suffix.lower() == ".xlsx")
    try:
        if args.kind == "bom":
            out.parent.mkdir(parents=True, exist_ok=True)
            (data,) = files.values()
            out.write_bytes(data) if isinstance(data, bytes) else out.write_text(data, encoding="utf-8")
            written = [out]
        else:
            written = []
            for name, data in sorted(files.items()):
                path = out / name
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data) if isinstance(data, bytes) else path.write_text(data, encoding="utf-8")
                written.append(path)
    except OSError as exc:
        raise ScenarioError("-o", f"cannot write {args.output!r}: {exc.strerror or exc}") from None
    print(f"{design.scenario.name}: wrote {len(written)} file(s) to {out}")
    return 0
