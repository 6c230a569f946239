"""``gpucluster estimate SCENARIO.yaml``: training step time, MFU, memory and time to train."""

from __future__ import annotations

import argparse

from gpucluster_lib.commands import add_scenario_arguments, print_json, read_design, require
from gpucluster_lib.formatting import format_value, humanize_key
from gpucluster_lib.training.labels import BREAKDOWN_LABELS, MEMORY_LABELS

NAME = "estimate"
ORDER = 30
HELP = "training-time estimate: step time, tokens/s, MFU/HFU, memory per GPU, days to train, plan"
DESCRIPTION = (HELP + ". With parallelism: auto (or auto: true and some fields fixed) the best plan is searched. "
               "--deadline DAYS also reports the smallest GPU count that meets it.")


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_scenario_arguments(p)
    p.add_argument("--deadline", type=float, metavar="DAYS",
                   help="also find the smallest GPU count of this accelerator that trains within DAYS")


def run(args: argparse.Namespace) -> int:
    from gpucluster_lib.errors import ScenarioError
    from gpucluster_lib.training import min_gpus_for_deadline

    d = read_design(args)
    scenario = d.scenario
    out = require(d.training, "training estimate").to_dict()
    if args.deadline is not None:
        if args.deadline <= 0:
            raise ScenarioError("--deadline", f"must be a positive number of days, got {args.deadline}")
        out["deadline"] = min_gpus_for_deadline(scenario, args.deadline)
    if args.json:
        print_json(out)
        return 0
    hardware = getattr(d, "hardware", None)
    _print_text(out, (hardware.accelerator or {}).get("name") if hardware is not None else None)
    return 0


def _print_text(d: dict, accelerator_name: str | None = None) -> None:
    """The estimate ``d`` (``to_dict()``) as text, the accelerator by its catalogue name."""
    if accelerator_name:
        d = {**d, "accelerator": accelerator_name}
    if "step_time_s" not in d:  # a vision result: its fields in words, numbers as a table shows them
        for k, v in d.items():
            if not isinstance(v, (dict, list)):
                print(f"{humanize_key(k):>24}: {format_value(v) if not isinstance(v, str) else v}")
        return
    gib = 2**30
    p = d["plan"]
    print(f"{d['model']} on {d['gpus']} x {d['accelerator']}")
    print(f"  plan            TP{p['tensor']} PP{p['pipeline']} (v{p['virtual_stages']}) DP{p['data']} CP{p['context']} "
          f"EP{p['expert']}  mb {p['micro_batch_size']}  gbs {p['global_batch_size']}  recompute {p['recompute']}  "
          f"ZeRO-{p['zero_stage']}{'  (searched)' if p['auto'] else ''}")
    print(f"  step time       {d['step_time_s']:.3f} s   tokens/s {d['tokens_per_s']:,.0f}")
    print(f"  per GPU         {d['model_tflops_per_gpu']:.0f} model TFLOP/s, {d['hardware_tflops_per_gpu']:.0f} hardware "
          f"TFLOP/s   MFU {d['mfu']:.1%}  HFU {d['hfu']:.1%}")
    m = d["memory_per_gpu_bytes"]
    print(f"  memory per GPU  {m['total'] / gib:.1f} GiB of {d['memory_capacity_bytes'] / gib:.1f} GiB "
          f"({'fits' if d['fits'] else 'DOES NOT FIT'}): "
          + ", ".join(f"{MEMORY_LABELS.get(k, humanize_key(k))} {v / gib:.1f} GiB" for k, v in m.items() if k != "total"))
    print("  time breakdown  " + ", ".join(f"{BREAKDOWN_LABELS.get(k, humanize_key(k))} {v:.3g} s"
                                           for k, v in d["time_breakdown_s"].items() if v > 0))
    if d["training_days"] is not None:
        print(f"  time to train   {d['training_days']:.1f} days")
    if "deadline" in d:
        dl = d["deadline"]
        print(f"  deadline        {dl['deadline_days']:g} days: " + (f"{dl['gpus']} GPUs" if dl.get("gpus") else "not met"))
    for f in d["findings"]:
        print(f"  [{f['severity']}] {f['code']}: {f['message']}")
