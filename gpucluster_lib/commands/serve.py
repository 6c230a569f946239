"""``gpucluster serve SCENARIO.yaml``: size a serving fleet for the scenario's traffic and SLOs.

``--max-rate``: the highest Poisson request rate the scenario's GPUs sustain with the percentile
TTFT and TPOT within the SLOs (MLPerf's server scenario), and the output tokens/s per GPU there.
"""

from __future__ import annotations

import argparse

from gpucluster_lib.commands import (
    add_scenario_arguments,
    print_json,
    read_design,
    read_scenario,
    require,
)

NAME = "serve"
ORDER = 50
HELP = "size an inference fleet (GPUs, nodes, racks, MW) for a traffic target and latency SLOs"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_scenario_arguments(p)
    p.add_argument("--max-rate", action="store_true",
                   help="the highest Poisson request rate whose percentile TTFT and TPOT meet the SLOs on the "
                        "scenario's GPUs, with output tokens/s per GPU at that rate (MLPerf server); the traffic "
                        "target is not read")
    p.add_argument("--percentile", type=float, metavar="P",
                   help="SLO percentile of TTFT and TPOT with Poisson arrivals (default: the scenario's SLO "
                        "percentile, 99); needs --max-rate or Poisson arrivals in the scenario")


def _percentile_change(args: argparse.Namespace, scenario) -> dict:
    """``--percentile`` as a scenario change (checked: between 0 and 100, Poisson arrivals or --max-rate)."""
    from gpucluster_lib.errors import ScenarioError

    if args.percentile is None:
        return {}
    if not 50 <= args.percentile < 100:
        raise ScenarioError("--percentile", f"must be from 50 (the median) up to, not including, 100, got "
                            f"{args.percentile:g}")
    if not args.max_rate and scenario.inference.arrival != "poisson":
        raise ScenarioError("--percentile", "the SLO percentile applies to Poisson arrivals: add --max-rate, or "
                                            "set the scenario's arrival to poisson")
    return {"inference__slo_percentile": args.percentile}


def _max_rate(args: argparse.Namespace) -> int:
    from gpucluster_lib.design import Design
    from gpucluster_lib.errors import ScenarioError
    from gpucluster_lib.formatting import number_words
    from gpucluster_lib.inference.queueing import percentile_label
    from gpucluster_lib.workloads.vision import is_vision_model

    scenario = read_scenario(args)
    if is_vision_model(scenario.model):
        raise ScenarioError("model", "--max-rate needs a language model (tokens); vision models serve images")
    # the scenario's GPUs, whatever the traffic target: the tensor parallelism with the highest rate on them
    changes = {"inference__arrival": "poisson", "inference__requests_per_s": None, "inference__tokens_per_s": None,
               **_percentile_change(args, scenario)}
    d = Design(scenario.replace(**changes))
    result = require(d.serving, "serving fleet")
    load = result.load or {}
    pct = d.scenario.inference.slo_percentile
    served = bool(load.get("at_max_rate")) and bool(result.gpus)
    at = load.get("at_max_rate") if served else None
    errors = [f.to_dict() for f in result.findings if f.severity == "error"]
    out = {"model": result.model, "accelerator": result.accelerator, "precision": result.precision,
           "mig_profile": (result.mig or {}).get("profile"),
           "tensor_parallel": result.tensor_parallel, "percentile": pct,
           "ttft_slo_s": result.ttft_slo_s, "tpot_slo_s": result.tpot_slo_s, "gpus": result.gpus,
           "max_rate_per_s": load.get("max_rate_per_s") if served else None,
           "max_rate_per_replica_per_s": load.get("max_rate_per_replica_per_s"),
           "tokens_per_s_per_gpu": result.tokens_per_s_per_gpu if served else None,
           "offline_capacity_per_replica_per_s": load.get("capacity_per_replica_per_s"), "at_max_rate": at,
           "findings": errors}
    if args.json:
        print_json(out)
        return 0
    name = _accelerator_name(d) + (f" MIG {out['mig_profile']}" if out["mig_profile"] else "")
    p = percentile_label(pct)
    slos = f"TTFT {number_words(result.ttft_slo_s)} s, TPOT {number_words(result.tpot_slo_s * 1e3)} ms"
    if not served:  # error findings, exit status 0 as for every finding (docs/inference.md)
        what = (f"no Poisson rate meets the {p} SLOs ({slos})"
                if any(f["code"] == "inference-slo-unmet" for f in errors) or not errors
                else f"serves no requests at the {p} SLOs ({slos})")
        print(f"{result.model} on {name}: {what}")
    else:
        replica = "instance" if out["mig_profile"] else "replica"
        mean_batch = at["mean_batch"]
        print(f"{result.model} on {out['gpus']:,} x {name}, {result.precision}, TP {result.tensor_parallel}, "
              f"{result.input_tokens:,} in / {result.output_tokens:,} out tokens")
        print(f"  max rate {out['max_rate_per_s']:,.2f} requests/s ({out['max_rate_per_replica_per_s']:,.2f} per "
              f"{replica}; {out['offline_capacity_per_replica_per_s']:,.2f} at the memory-limited batch, no SLO)")
        print(f"  {out['tokens_per_s_per_gpu']:,.0f} output tokens/s per GPU at that rate, mean batch "
              + (f"{mean_batch:,.0f}" if mean_batch >= 10 else f"{mean_batch:.1f}" if mean_batch >= 1
                 else f"{mean_batch:.2f} (below one sequence in flight)"))
        ttft = f"TTFT p50 {at['ttft_p50_s']:,.3f} s" + (f", {p} {at['ttft_pct_s']:,.3f} s" if p != "p50" else "")
        tpot = f"TPOT p50 {at['tpot_p50_s'] * 1e3:,.1f} ms" + (f", {p} {at['tpot_pct_s'] * 1e3:,.1f} ms"
                                                               if p != "p50" else "")
        print(f"  {ttft} (SLO {number_words(result.ttft_slo_s)} s); {tpot} (SLO "
              f"{number_words(result.tpot_slo_s * 1e3)} ms)")
    for f in errors:
        print(f"  [{f['severity']}] {f['code']}: {f['message']}")
    return 0


def _accelerator_name(d) -> str:
    """The accelerator's catalogue name (``NVIDIA H100 SXM5 80GB``), as ``gpucluster estimate`` prints it."""
    acc = getattr(d.hardware, "accelerator", None) or {}
    return acc.get("name") or acc.get("id") or ""


def run(args: argparse.Namespace) -> int:
    """Error findings (an SLO no batch meets, no Poisson rate that meets them) are printed with the
    result and the exit status is 0, as ``gpucluster estimate`` does with a plan that does not fit;
    bad input exits 2."""
    if args.max_rate:
        return _max_rate(args)
    if args.percentile is not None:
        from gpucluster_lib.design import Design

        scenario = read_scenario(args)
        d = Design(scenario.replace(**_percentile_change(args, scenario)))
    else:
        d = read_design(args)
    result = require(d.serving, "serving fleet")  # CNN/ViT models: images/s
    if args.json:
        print_json(result.to_dict())
        return 0
    if hasattr(result, "summary"):
        print(result.summary(_accelerator_name(d)))
    else:
        print(result.to_dict())
    return 0
