"""``gpucluster reliability SCENARIO.yaml``: interruptions, checkpointing, goodput, days to train."""

from __future__ import annotations

import argparse

from gpucluster_lib.commands import add_scenario_arguments, print_json, read_design, require

NAME = "reliability"
ORDER = 60
HELP = "job interruptions, checkpoint interval, goodput and failure-aware days to train (P10/P50/P90)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_scenario_arguments(p)


def run(args: argparse.Namespace) -> int:
    r = require(read_design(args).reliability, "training job to assess")
    if args.json:
        print_json(r.to_dict())
        return 0
    d = r.to_dict()
    print(f"{r.gpus} GPUs on {r.nodes} nodes, failure rates: {r.failure_preset}")
    print(f"  interruptions/day      {d['interruptions_per_day']:.3f}  (MTBI {d['mtbi_hours']:.1f} h)")
    print(f"  checkpoint             {d['checkpoint_bytes'] / 1e12:.2f} TB in {d['checkpoint_write_s']:.0f} s, "
          f"every {d['checkpoint_interval_s'] / 60:.0f} min (Daly)")
    print(f"  goodput                {d['goodput']:.1%}")
    if r.training_days_ideal is not None:
        print(f"  days to train          ideal {r.training_days_ideal:.1f}, expected {r.training_days_expected:.1f}, "
              f"P10-P90 {r.training_days_p10:.1f}-{r.training_days_p90:.1f}")
    print(f"  hot spare nodes        {r.spare_nodes} (recommended {r.spare_nodes_recommended})")
    for key, how in r.assumptions.items():
        print(f"  assumed: {key}: {how}")
    for f in r.findings:
        print(f"  {f.severity}: {f.code}: {f.message}")
    return 0
