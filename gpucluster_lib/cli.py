"""The ``gpucluster`` command line.

Subcommands live in :mod:`gpucluster_lib.commands`, one module each, and are found
automatically: a module defines ``NAME``, ``HELP``, ``add_arguments(parser)`` and
``run(args) -> int``. Scenario-driven commands take a YAML path and print JSON with
``--json``. Bad input exits with status 2 and a one-line message on stderr (no traceback).
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import re
import sys
from collections.abc import Sequence
from typing import Any

from gpucluster_lib import __version__, commands
from gpucluster_lib.commands import jsonable, print_json  # noqa: F401 (re-exported)
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


#: Option values that argparse would take for an option of their own: minus infinity and minus NaN.
_NEGATIVE_WORDS = re.compile(r"-(inf|infinity|nan)", re.IGNORECASE)


def _join_negative_words(argv: Sequence[str]) -> list[str]:
    """``--opt -inf`` as ``--opt=-inf``: argparse reads a value that starts with a dash and is not a plain
    negative number as an option, and says only that the option "expected one argument"; joined, the value
    reaches the option's own check, which names the range."""
    out: list[str] = []
    for arg in argv:
        if out and out[-1].startswith("--") and "=" not in out[-1] and _NEGATIVE_WORDS.fullmatch(arg):
            out[-1] = f"{out[-1]}={arg}"
        else:
            out.append(arg)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(_join_negative_words(sys.argv[1:] if argv is None else argv))
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
