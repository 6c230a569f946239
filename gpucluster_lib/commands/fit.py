"""``gpucluster fit SCENARIO --max-facility-kw 2000 --max-racks 40``: the largest or cheapest design that fits."""

from __future__ import annotations

import argparse

from gpucluster_lib.commands import add_scenario_arguments, print_json, read_scenario

NAME = "fit"
ORDER = 61
HELP = "inverse design: the largest (or cheapest) node count that meets power, racks, floor, budget, deadline"
DESCRIPTION = (
    "gpucluster fit SCENARIO --max-facility-kw 2000 --max-racks 40 --rack-kw 40 --cooling air: every node "
    "count of the scenario (in whole scalable units where the fabric has them) is a forward design; the "
    "answer is the largest one inside every limit (--objective max-gpus) or the cheapest that meets the "
    "deadline or serving demand (min-cost), the constraint that binds, and the next larger design."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_scenario_arguments(p)
    g = p.add_argument_group("limits")
    g.add_argument("--max-facility-kw", type=float, help="power at the meter (IT x PUE) [kW]")
    g.add_argument("--max-it-kw", type=float, help="IT power at peak [kW]")
    g.add_argument("--max-racks", type=int, help="racks, compute and network/storage")
    g.add_argument("--max-floor-m2", type=float, help="hall floor area [m²]")
    g.add_argument("--max-capex", type=float, help="CapEx budget [scenario currency, USD by default]")
    g.add_argument("--deadline-days", type=float, help="days to train, expected with failures")
    g.add_argument("--serving", action="store_true", help="the design must hold the serving fleet the scenario's "
                                                         "inference demand and SLOs need")
    h = p.add_argument_group("the hall")
    h.add_argument("--rack-kw", type=float, help="power per rack [kW]; also the rack's cooling limit unless "
                                                 "--rack-cooling-kw is given")
    h.add_argument("--rack-cooling-kw", type=float, help="heat the cooling removes per rack [kW]")
    h.add_argument("--cooling", choices=["air", "rear_door", "liquid"], help="cooling type of the hall")
    p.add_argument("--objective", choices=["max-gpus", "min-cost"], default="max-gpus")
    p.add_argument("--step", type=int, default=None, help="node step (default: the fabric's scalable unit, else 1)")


def _text(d: dict) -> str:
    if not d["feasible"]:
        return "\n".join(f"{f['severity']:<10} {f['code']}: {f['message']}\n           fix: {f['fix']}"
                         for f in d["findings"])
    lines = [f"answer     {d['nodes']:,} nodes, {d['gpus']:,} GPUs, {d['racks']} racks, "
             f"{d['facility_power_kw']:,.0f} kW at the meter, CapEx {d['capex']:,.0f} {d['currency']}"
             + (f", {d['training_days']:,.1f} days" if d["training_days"] is not None else ""),
             f"binds      {d['binding_constraint']}: {d['binding_detail']}",
             f"step       {d['step_nodes']} node(s); {d['candidates_evaluated']} designs evaluated"]
    n = d["next"]
    if n:
        lines.append(f"next       {n['nodes']:,} nodes ({n['gpus']} GPUs, {n['racks']} racks, "
                     f"{(n['facility_power_kw'] or 0):,.0f} kW) breaks {', '.join(n['breaks'] or ['nothing'])}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from gpucluster_lib.explore.solve import Limits, fit, fit_scenario

    base = fit_scenario(read_scenario(args), rack_kw=args.rack_kw, rack_cooling_kw=args.rack_cooling_kw,
                        cooling=args.cooling)
    limits = Limits(max_facility_kw=args.max_facility_kw, max_it_kw=args.max_it_kw, max_racks=args.max_racks,
                    max_floor_m2=args.max_floor_m2, max_capex=args.max_capex, deadline_days=args.deadline_days,
                    serving=args.serving)
    result = fit(base, limits, objective=args.objective, step=args.step).to_dict()
    if args.json:
        print_json(result)
    else:
        print(_text(result))
    return 0 if result["feasible"] else 1
