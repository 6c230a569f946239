"""``gpucluster topology SCENARIO.yaml``: design the networks and count switches, cables, optics."""

from __future__ import annotations

import argparse
from pathlib import Path

from gpucluster_lib.commands import add_scenario_arguments, print_json, read_design

NAME = "topology"
ORDER = 40
HELP = "network topology: switch, link, cable and transceiver counts, bisection, per-GPU bandwidth"
DESCRIPTION = (HELP + ". --cables writes the cable list (CSV), --drawing the drawing (SVG, PNG or HTML).")


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_scenario_arguments(p)
    p.add_argument("--nodes", type=int, default=None, help="override hardware.nodes")
    p.add_argument("--cables", metavar="CSV", help="write the cable list (A-end, B-end, cable type, length class)")
    p.add_argument("--drawing", metavar="FILE", help="write the drawing (.svg, .png or .html)")
    p.add_argument("--expand", metavar="GROUP", default=None, help="expand one aggregated group, e.g. 'SU 3'")


def run(args: argparse.Namespace) -> int:
    from gpucluster_lib.errors import ScenarioError
    design = read_design(args, nodes=args.nodes)
    scenario, d = design.scenario, design.network
    if args.cables:
        d.cable_list().to_csv(args.cables, index=False)
    if args.drawing:
        suffix = Path(args.drawing).suffix.lower()
        if suffix not in (".svg", ".png", ".html"):
            raise ScenarioError("--drawing", f"must end in .svg, .png or .html, got {args.drawing!r}")
        from gpucluster_lib.charts.topology import topology_chart

        topology_chart(d, expand=args.expand).save(args.drawing)
    if args.json:
        print_json(d)
        return 0
    print(f"{scenario.name}: {d.kind}, {d.tiers} tier(s), {d.nodes} nodes x {d.ports_per_node} ports = "
          f"{d.endpoints} endpoints at {d.link_gbps:g} Gb/s on {d.switch_id}")
    print(f"  switches: leaf {d.switches.get('leaf', 0)}, spine {d.switches.get('spine', 0)}, "
          f"core {d.switches.get('core', 0)} (max endpoints {d.max_endpoints})")
    print("  links: " + ", ".join(f"{k} {v}" for k, v in d.links.items()))
    print(f"  bisection {d.bisection_bandwidth_gbps / 1000:,.1f} Tb/s, per-GPU all-reduce "
          f"{d.per_gpu_allreduce_gbps:g} Gb/s, oversubscription {d.oversubscription:g}:1")
    print(f"  all networks: {d.network_power_w / 1000:,.1f} kW, {d.network_rack_units} U")
    for f in d.findings:
        print(f"  {f.severity}: {f.code}: {f.message}")
    return 0
