"""CLI subcommands, one module each (found by :func:`gpucluster_lib.cli.build_parser`).

A module defines ``NAME``, ``HELP``, optional ``ORDER`` (listing order) and
``DESCRIPTION``, ``add_arguments(parser)`` and ``run(args) -> int``.
"""

from __future__ import annotations

import argparse

from gpucluster_lib.resources import scenario_path
from gpucluster_lib.scenario import Scenario, load_scenario


def add_scenario_arguments(parser: argparse.ArgumentParser) -> None:
    """The common arguments of scenario-driven commands: SCENARIO and --json."""
    parser.add_argument(
        "scenario", metavar="SCENARIO",
        help="scenario YAML file, or the name of a shipped example (`gpucluster examples` lists them)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")


def read_scenario(args: argparse.Namespace) -> Scenario:
    """The scenario named by ``args.scenario``: a YAML path or a shipped example's name.

    Relative paths inside the file (``catalog.extra`` CSVs) resolve against its folder.
    """
    return load_scenario(scenario_path(args.scenario))
