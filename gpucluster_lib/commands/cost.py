"""``gpucluster cost SCENARIO.yaml``: CapEx, OpEx, TCO, cost per GPU-hour and per run, carbon."""

from __future__ import annotations

import argparse

from gpucluster_lib.commands import add_scenario_arguments, print_json, read_design

NAME = "cost"
ORDER = 61
HELP = "CapEx, OpEx, TCO, cost per GPU-hour and training run, build vs rent, energy and CO2e"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_scenario_arguments(p)


def run(args: argparse.Namespace) -> int:
    r = read_design(args).cost
    if args.json:
        print_json(r.to_dict())
        return 0
    c = r.currency
    print(f"{r.gpus} GPUs ({r.nodes_bought} nodes bought), {r.it_power_kw:.0f} kW IT, {r.racks} racks")
    print("  CapEx   " + ", ".join(f"{k} {v:,.0f}" for k, v in r.capex.items()) + f" {c}")
    print("  OpEx/yr " + ", ".join(f"{k} {v:,.0f}" for k, v in r.opex_per_year.items()) + f" {c}")
    print(f"  TCO over {r.years} years {r.tco:,.0f} {c}; {r.cost_per_gpu_hour:.2f} {c} per GPU-hour")
    if r.training_run_cost is not None:
        print(f"  training run {r.training_days:.1f} days: own {r.training_run_cost:,.0f}, "
              f"rent {r.rent_training_run_cost:,.0f} {c}")
    print(f"  energy {r.energy_mwh_per_year:,.0f} MWh/yr, {r.co2e_tonnes_per_year:,.0f} t CO2e/yr "
          f"at {r.grid_kg_co2e_per_kwh} kg/kWh")
    for key, how in r.assumptions.items():
        print(f"  assumed: {key}: {how}")
    for f in r.findings:
        print(f"  {f.severity}: {f.code}: {f.message}")
    return 0
