"""The same serving target on several accelerators (one row each)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from gpucluster_lib.findings import has_errors
from gpucluster_lib.inference.precision import compute_peak_tflops
from gpucluster_lib.inference.serve import serve
from gpucluster_lib.scenario import Scenario

if TYPE_CHECKING:
    import pandas as pd

#: Accelerators compared by default (those present in the catalogue are used).
DEFAULT_COMPARISON = ("a100-sxm4-80gb", "h100-sxm5-80gb", "h200-sxm-141gb", "b200-sxm-180gb", "mi300x", "l40s")
_FALLBACK = ("fp8", "int8", "bf16", "fp16")


def _systems(catalog: Any) -> dict[str, str]:
    """accelerator id -> the first complete system (servers.csv kind 'system') built around it."""
    out: dict[str, str] = {}
    for row in catalog.records("servers"):
        if row.get("kind") == "system" and row.get("gpu_id"):
            out.setdefault(row["gpu_id"], row["id"])
    return out


def system_for(catalog: Any, accelerator_id: str) -> str | None:
    """The first complete system (servers.csv kind 'system') built around ``accelerator_id``."""
    return _systems(catalog).get(accelerator_id)


def compare_accelerators(scenario: Scenario, catalog: Any, accelerators: tuple[str, ...] = DEFAULT_COMPARISON,
                         ) -> pd.DataFrame:
    """Size the scenario's target on each accelerator with the TP searched (1-8).

    Each accelerator runs in its catalogue system when there is one (power, price), else
    in a generic 8-GPU node. When it lacks the scenario's precision, the first of fp8,
    int8, bf16, fp16 it supports is used and shown in the ``precision`` column. For speed
    (the Inference tab redraws this on every change) power is the servers' maximum power
    (``servers_kw``), without the facility budget's network, storage and head nodes.
    """
    import pandas as pd

    rows = []
    known = set(catalog.ids("accelerators"))
    systems = _systems(catalog)
    for acc_id in accelerators:
        if acc_id not in known:
            continue
        acc = catalog.accelerator(acc_id)
        precision = scenario.inference.precision
        if compute_peak_tflops(precision, acc) is None:
            precision = next((p for p in _FALLBACK if compute_peak_tflops(p, acc) is not None), precision)
        server = systems.get(acc_id)
        # valid by construction (catalogue ids, a listed precision): skip re-validation for speed
        hw = dataclasses.replace(scenario.hardware, server=server, accelerator=None if server else acc_id,
                                 gpus_per_node=None, gpus=None, nodes=1)
        inf = dataclasses.replace(scenario.inference, precision=precision, tensor_parallel=None)
        est = serve(dataclasses.replace(scenario, hardware=hw, inference=inf), catalog, facility_budget=False)
        ok = est.meets_slo and not has_errors(est.findings)
        rows.append({"accelerator": acc_id, "server": server or "generic 8-GPU", "precision": precision,
                     "tensor_parallel": est.tensor_parallel, "batch": est.batch,
                     "tokens_per_s_per_gpu": est.tokens_per_s_per_gpu, "gpus": est.gpus if ok else None,
                     "nodes": est.nodes if ok else None, "servers_kw": est.it_power_kw if ok else None,
                     "tokens_per_s_per_mw": est.tokens_per_s_per_mw if ok else None, "meets_slo": ok})
    return pd.DataFrame(rows)
