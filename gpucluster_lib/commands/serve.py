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
                   help="the highest Poisson request rate whose percentile TTFT and TPOT meet the SLOs, with "
                        "output tokens/s per GPU at that rate (MLPerf server)")
    p.add_argument("--percentile", type=float, metavar="P",
                   help="SLO percentile for --max-rate (default: the scenario's inference.slo_percentile, 99)")


def _max_rate(args: argparse.Namespace) -> int:
    from gpucluster_lib.design import Design
    from gpucluster_lib.errors import ScenarioError

    scenario = read_scenario(args)
    changes = {"inference__arrival": "poisson"}
    if args.percentile is not None:
        if not 0 < args.percentile < 100:
            raise ScenarioError("--percentile", f"must be between 0 and 100 (exclusive), got {args.percentile:g}")
        changes["inference__slo_percentile"] = args.percentile
    d = Design(scenario.replace(**changes))
    result = require(d.serving, "serving fleet")
    if getattr(result, "load", None) is None:
        raise ScenarioError("model", "--max-rate needs a language model (tokens); vision models serve images")
    load = result.load
    at = load["at_max_rate"]
    out = {"model": result.model, "accelerator": result.accelerator, "precision": result.precision,
           "tensor_parallel": result.tensor_parallel, "percentile": load["percentile"],
           "ttft_slo_s": result.ttft_slo_s, "tpot_slo_s": result.tpot_slo_s,
           "gpus": result.tensor_parallel * max(d.hardware.gpus // result.tensor_parallel, 1),
           "max_rate_per_s": load["max_rate_per_s"], "max_rate_per_replica_per_s": load["max_rate_per_replica_per_s"],
           "tokens_per_s_per_gpu": result.tokens_per_s_per_gpu if at else None,
           "offline_capacity_per_replica_per_s": load["capacity_per_replica_per_s"], "at_max_rate": at,
           "findings": [f.to_dict() for f in result.findings if f.severity == "error"]}
    if args.json:
        print_json(out)
        return 0
    name = _accelerator_name(d)
    if at is None:  # an error finding, exit status 0 as for every finding (docs/inference.md)
        print(f"{result.model} on {name}: no Poisson rate meets the p{load['percentile']:g} SLOs "
              f"(TTFT {result.ttft_slo_s:g} s, TPOT {result.tpot_slo_s * 1e3:g} ms)")
        for f in out["findings"]:
            print(f"  [{f['severity']}] {f['code']}: {f['message']}")
        return 0
    p = f"p{load['percentile']:g}"
    print(f"{result.model} on {out['gpus']} x {name}, {result.precision}, TP {result.tensor_parallel}, "
          f"{result.input_tokens} in / {result.output_tokens} out tokens")
    print(f"  max rate {out['max_rate_per_s']:,.2f} requests/s ({out['max_rate_per_replica_per_s']:,.2f} per replica; "
          f"offline capacity {out['offline_capacity_per_replica_per_s']:,.2f})")
    print(f"  {out['tokens_per_s_per_gpu']:,.0f} output tokens/s per GPU at that rate, mean batch "
          f"{at['mean_batch']:,.0f}")
    print(f"  TTFT p50 {at['ttft_p50_s']:.3f} s, {p} {at['ttft_pct_s']:.3f} s (SLO {result.ttft_slo_s:g} s); "
          f"TPOT p50 {at['tpot_p50_s'] * 1e3:.1f} ms, {p} {at['tpot_pct_s'] * 1e3:.1f} ms "
          f"(SLO {result.tpot_slo_s * 1e3:g} ms)")
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
