"""``gpucluster serve SCENARIO.yaml``: size a serving fleet for the scenario's traffic and SLOs."""

from __future__ import annotations

import argparse

from gpucluster_lib.commands import add_scenario_arguments, print_json, read_design, require

NAME = "serve"
ORDER = 50
HELP = "size an inference fleet (GPUs, nodes, racks, MW) for a traffic target and latency SLOs"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_scenario_arguments(p)


def run(args: argparse.Namespace) -> int:
    result = require(read_design(args).serving, "serving fleet")  # CNN/ViT models: images/s
    if args.json:
        print_json(result.to_dict())
        return 0
    print(result.summary() if hasattr(result, "summary") else result.to_dict())
    return 0
