"""``gpucluster estimate SCENARIO.yaml``: training step time, MFU, memory and time to train."""

from __future__ import annotations

import argparse
import math

from gpucluster_lib.commands import add_scenario_arguments, print_json, read_design, require
from gpucluster_lib.formatting import format_duration, format_value, humanize_key, stage_runs
from gpucluster_lib.training.labels import BREAKDOWN_LABELS, MEMORY_LABELS, memory_parts

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
        if not (math.isfinite(args.deadline) and args.deadline > 0):
            raise ScenarioError("--deadline", f"must be a positive, finite number of days, got {args.deadline:g}")
        out["deadline"] = min_gpus_for_deadline(scenario, args.deadline)
    if args.json:
        print_json(out)
        return 0
    hardware = getattr(d, "hardware", None)
    _print_text(out, (hardware.accelerator or {}).get("name") if hardware is not None else None)
    return 0


def _size(n_bytes: float, gib: float) -> str:
    """Bytes in GiB to one decimal, or in MiB when that would read 0.0 GiB (a small model's ZeRO-3 shard), KiB
    when MiB would too, bytes when KiB would."""
    if 0 < n_bytes < 0.05 * gib / 1024**2:
        return f"{n_bytes:,.0f} B"
    if 0 < n_bytes < 0.05 * gib / 1024:
        return f"{n_bytes / (gib / 1024**2):,.1f} KiB"
    if 0 < n_bytes < 0.05 * gib:
        return f"{n_bytes / (gib / 1024):,.1f} MiB"
    return f"{n_bytes / gib:,.1f} GiB"


def _described(p: dict) -> str:
    """The plan of an estimate's dictionary in words (:func:`~gpucluster_lib.training.plans.describe`)."""
    import dataclasses

    from gpucluster_lib.training.plans import Plan, describe

    names = {f.name for f in dataclasses.fields(Plan)}
    d = {k: v for k, v in p.items() if k in names}
    if d.get("pipeline_layers") is not None:
        d["pipeline_layers"] = tuple(d["pipeline_layers"])
    return describe(Plan(**d))


def _stage_text(pipe: dict, gib: float) -> str:
    """The stage layout, the stage that sets the pace and the one that needs the most memory
    (stages numbered from 1, as the memory finding numbers them)."""
    layers = [int(x) for x in pipe["layers_per_stage"]]
    n = len(layers)
    slow, mem = int(pipe["bottleneck_stage"]), int(pipe["memory_stage"])
    t = pipe["stage_time_per_micro_batch_s"][slow]
    return (f"{n} stages, {stage_runs(layers)}; slowest stage {slow + 1} ({t * 1e3:,.1f} ms per micro-batch); "
            f"most memory on stage {mem + 1} ({pipe['stage_memory_bytes'][mem] / gib:,.1f} GiB)")


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
    print(f"{d['model']} on {d['gpus']:,} x {d['accelerator']}")
    print(f"  plan            {_described(p)}, global batch {p['global_batch_size']:,} sequences"
          + (" (searched)" if p["auto"] else ""))
    print(f"  step time       {d['step_time_s']:,.3f} s   tokens/s {d['tokens_per_s']:,.0f}")
    print(f"  per GPU         {d['model_tflops_per_gpu']:.0f} model TFLOP/s, {d['hardware_tflops_per_gpu']:.0f} hardware "
          f"TFLOP/s   MFU {d['mfu']:.1%}  HFU {d['hfu']:.1%}")
    if p["pipeline"] > 1 and d.get("pipeline"):
        print(f"  pipeline        {_stage_text(d['pipeline'], gib)}")
    m = d["memory_per_gpu_bytes"]
    print(f"  memory per GPU  {m['total'] / gib:.1f} GiB of {d['memory_capacity_bytes'] / gib:.1f} GiB "
          f"({'fits' if d['fits'] else 'DOES NOT FIT'}): "
          + ", ".join(f"{MEMORY_LABELS.get(k, humanize_key(k))} {_size(m[k], gib)}" for k in memory_parts(m, m)))
    print("  time breakdown  " + ", ".join(f"{BREAKDOWN_LABELS.get(k, humanize_key(k))} {format_duration(v)}"
                                           for k, v in d["time_breakdown_s"].items() if v > 0))
    if d["training_days"] is not None:
        print(f"  time to train   {d['training_days']:,.1f} days")
    cal = (d.get("assumptions") or {}).get("calibration")
    if cal:
        from gpucluster_lib.training.estimate import CALIBRATION_TERM_NAMES

        terms = ", ".join(CALIBRATION_TERM_NAMES.get(t, humanize_key(t)) for t in cal["terms"]) or "nothing"
        print(f"  calibration     profile {cal['name']}, dated {cal['date']}"
              + (" (an example)" if cal.get("example") else "") + f": sets the {terms}")
    if "deadline" in d:
        dl = d["deadline"]
        if dl.get("gpus"):
            text = f"{dl['gpus']:,} GPUs ({dl['nodes']:,} nodes) train in {dl['training_days']:,.1f} days"
        elif dl.get("best_gpus"):
            text = f"not met; the fastest tried, {dl['best_gpus']:,} GPUs, takes {dl['training_days']:,.1f} days"
        else:
            text = "not met" + (f": {dl['reason']}" if dl.get("reason") else "")
        days = dl["deadline_days"]
        print(f"  deadline        {days:g} day{'' if days == 1 else 's'}: {text}")
    for f in d["findings"]:
        print(f"  [{f['severity']}] {f['code']}: {f['message']}")
