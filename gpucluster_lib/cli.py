"""The ``gpucluster`` command line.

Subcommands live in :mod:`gpucluster_lib.commands`, one module each, and are found
automatically: a module defines ``NAME``, ``HELP``, ``add_arguments(parser)`` and
``run(args) -> int``. Scenario-driven commands take a YAML path and print JSON with
``--json``. Bad input exits with status 2 and a one-line message on stderr (no traceback).
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import pkgutil
import sys
from collections.abc import Sequence
from typing import Any

from gpucluster_lib import __version__, commands
from gpucluster_lib.errors import GpuClusterError


def _modules() -> list[Any]:
    mods = []
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        mods.append(importlib.import_module(f"{commands.__name__}.{info.name}"))
    return sorted(mods, key=lambda m: getattr(m, "ORDER", 50))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gpucluster",
        description="GPU cluster design workbook: catalogue, sizing and reports from a scenario YAML.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subs = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    for mod in _modules():
        p = subs.add_parser(mod.NAME, help=mod.HELP, description=getattr(mod, "DESCRIPTION", mod.HELP))
        mod.add_arguments(p)
        p.set_defaults(_run=mod.run)
    return parser


def jsonable(obj: Any) -> Any:
    """Plain JSON data: NaN/inf become null, numpy scalars become numbers, dataclasses dicts."""
    import dataclasses

    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        if hasattr(obj, "to_dict"):
            return jsonable(obj.to_dict())
        return {k: jsonable(v) for k, v in dataclasses.asdict(obj).items()}
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if hasattr(obj, "item") and not isinstance(obj, (str, bytes)):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def print_json(obj: Any) -> None:
    json.dump(jsonable(obj), sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "_run", None):
        parser.print_help()
        return 0
    try:
        return int(args._run(args) or 0)
    except GpuClusterError as e:
        print(f"gpucluster {args.command}: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
