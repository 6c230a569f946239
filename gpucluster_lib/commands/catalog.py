"""``gpucluster catalog TABLE``: print a catalogue table."""

from __future__ import annotations

import argparse

from gpucluster_lib.catalog import TABLES, load_catalog
from gpucluster_lib.commands import print_json

NAME = "catalog"
ORDER = 10
HELP = "print a catalogue table (accelerators, servers, cpus, nics, switches, storage)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("table", choices=TABLES)
    p.add_argument("--json", action="store_true", help="a JSON list of objects, one per row, all columns")
    p.add_argument("--extra", action="append", default=[], metavar="CSV",
                   help="merge a user CSV with the same schema (repeatable)")


def run(args: argparse.Namespace) -> int:

    cat = load_catalog(args.extra)
    if args.json:
        print_json(cat.records(args.table))
    else:
        df = cat.tables[args.table]
        cols = [c for c in df.columns if c not in ("source", "notes", "price_source", "source_date", "price_date")]
        print(_cells(df[cols]).to_string(index=False))
    return 0


def _cells(df):
    """The table as text cells: a yes/no column as yes and no, an empty cell as a dash (not pandas'
    True, NaN or <NA>)."""
    import numpy as np

    out = df.astype(object).where(df.notna(), "–")
    for c in out.columns:
        out[c] = [("yes" if v else "no") if isinstance(v, (bool, np.bool_)) else v for v in out[c]]
    return out
