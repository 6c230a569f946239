"""CLI subcommands, one module each (found by :func:`gpucluster_lib.cli.build_parser`).

A module defines ``NAME``, ``HELP``, optional ``ORDER`` (listing order) and
``DESCRIPTION``, ``add_arguments(parser)`` and ``run(args) -> int``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
from typing import Any

from gpucluster_lib.resources import scenario_path
from gpucluster_lib.scenario import Scenario, load_scenario


def add_scenario_arguments(parser: argparse.ArgumentParser) -> None:
    """The common arguments of scenario-driven commands: SCENARIO and --json."""
    parser.add_argument(
        "scenario", metavar="SCENARIO",
        help="scenario YAML file, or the name of a shipped example (`gpucluster examples` lists them)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    parser.add_argument(
        "--allow-paths", action="store_true",
        help="let the scenario's catalog: list name CSV files outside the scenario's folder "
             "(absolute or ../ paths); without it they must be inside it",
    )


def read_scenario(args: argparse.Namespace) -> Scenario:
    """The scenario named by ``args.scenario``: a YAML path or a shipped example's name.

    The ``catalog:`` CSVs named in the file resolve against its folder and must stay inside it
    (no absolute or ``../`` paths) unless ``--allow-paths`` was given.
    """
    return load_scenario(scenario_path(args.scenario), allow_paths=bool(getattr(args, "allow_paths", False)))


def read_design(args: argparse.Namespace, *, nodes: int | None = None) -> Any:
    """The :class:`~gpucluster_lib.design.Design` of ``args.scenario`` (``nodes`` overrides
    ``hardware.nodes``, e.g. from ``--nodes``)."""
    from gpucluster_lib.design import Design
    from gpucluster_lib.errors import ScenarioError

    scenario = read_scenario(args)
    if nodes is not None:
        if isinstance(nodes, bool) or not isinstance(nodes, int) or nodes < 1:
            raise ScenarioError("--nodes", f"must be a positive whole number of nodes, got {nodes!r}")
        scenario = scenario.replace(hardware__nodes=nodes, hardware__gpus=None)
    return Design(scenario)


def require(result: Any, what: str) -> Any:
    """``result``, or a clear error when the scenario has no workload for ``what``."""
    if result is None:
        from gpucluster_lib.errors import ScenarioError

        raise ScenarioError("model", f"the scenario has no model, so there is no {what}: set model.preset "
                                     "(e.g. llama3-70b; `gpucluster catalog` and docs/scenario.md list them)")
    return result


def jsonable(obj: Any) -> Any:
    """Plain JSON data: NaN/inf become null, numpy scalars become numbers, dataclasses dicts."""
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
    """One JSON object on stdout (the ``--json`` contract)."""
    json.dump(jsonable(obj), sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")
