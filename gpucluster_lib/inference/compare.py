"""The same serving target on several accelerators (one row each)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from ..findings import has_errors
from ..scenario import Scenario
from .precision import compute_peak_tflops
from .serve import serve

#: Accelerators compared by default (those present in the catalogue are used).
DEFAULT_COMPARISON = ("a100-sxm4-80gb", "h100-sxm5-80gb", "h200-sxm-141gb", "b200-sxm-180gb", "mi300x", "l40s")
_FALLBACK = ("fp8", "int8", "bf16", "fp16")


def system_for(catalog: Any, accelerator_id: str) -> str | None:
    """The first complete system (servers.csv kind 'system') built around ``accelerator_id``."""
    srv = catalog.tables["servers"]
    rows = srv[(srv["kind"] == "system") & (srv["gpu_id"] == accelerator_id)]
    return None if rows.empty else str(rows.iloc[0]["id"])


def compare_accelerators(scenario: Scenario, catalog: Any, accelerators: tuple[str, ...] = DEFAULT_COMPARISON,
                         ) -> pd.DataFrame:
    """Size the scenario's target on each accelerator with the TP searched (1-8).

    Each accelerator runs in its catalogue system when there is one (power, price), else
    in a generic 8-GPU node. When it lacks the scenario's precision, the first of fp8,
    int8, bf16, fp16 it supports is used and shown in the ``precision`` column.
    """
    rows = []
    known = set(catalog.tables["accelerators"]["id"])
    for acc_id in accelerators:
        if acc_id not in known:
            continue
        acc = catalog.accelerator(acc_id)
        precision = scenario.inference.precision
        if compute_peak_tflops(precision, acc) is None:
            precision = next((p for p in _FALLBACK if compute_peak_tflops(p, acc) is not None), precision)
        server = system_for(catalog, acc_id)
        s = scenario.replace(hardware__server=server, hardware__accelerator=None if server else acc_id,
                             hardware__gpus_per_node=None, hardware__gpus=None, hardware__nodes=1,
                             inference__precision=precision, inference__tensor_parallel=None)
        est = serve(s, catalog)
        rows.append({"accelerator": acc_id, "server": server or "generic 8-GPU", "precision": precision,
                     "tensor_parallel": est.tensor_parallel, "batch": est.batch,
                     "tokens_per_s_per_gpu": est.tokens_per_s_per_gpu, "gpus": est.gpus if est.meets_slo else None,
                     "nodes": est.nodes if est.meets_slo else None, "racks": est.racks if est.meets_slo else None,
                     "it_power_kw": est.it_power_kw if est.meets_slo else None,
                     "tokens_per_s_per_mw": est.tokens_per_s_per_mw if est.meets_slo else None,
                     "meets_slo": est.meets_slo and not has_errors(est.findings)})
    return pd.DataFrame(rows)
