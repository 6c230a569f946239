"""The result columns of a sweep, a fit and a comparison: one table of output keys.

Every key is ``stage.figure_unit``: the stage the figure comes from and its unit in the name
(``facility.facility_power_kw``, ``cost.capex_usd``, ``training.training_days``). Money is in
the scenario's ``costs.currency`` and its key carries that currency's code in lower case
(``_usd`` by default: every catalogue price is in US dollars). A figure that does not apply
(days to train without a model) is empty (NaN).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gpucluster_lib.errors import ScenarioError, closest


@dataclass(frozen=True)
class Output:
    """One result column: its key, human label, unit, and how to read it from a design."""

    key: str
    label: str
    unit: str
    get: Callable[[Any], Any]
    #: which is better for a comparison: "min", "max" or "" (neither)
    better: str = ""


def _g(obj: Any, name: str) -> Any:
    return None if obj is None else getattr(obj, name, None)


def _switches(d: Any) -> int:
    return sum(g.count for g in d.network.switch_groups)


def _outputs(cur: str) -> tuple[Output, ...]:
    c = cur.lower()
    m = cur.upper()
    return (
        Output("hardware.accelerator", "Accelerator", "", lambda d: d.hardware.accelerator_id),
        Output("hardware.server", "Server", "", lambda d: d.hardware.server_id),
        Output("hardware.gpus", "GPUs", "", lambda d: d.hardware.gpus, "max"),
        Output("hardware.nodes", "Nodes", "", lambda d: d.hardware.nodes),
        Output("facility.spare_nodes", "Hot-spare nodes", "", lambda d: d.facility.spare_nodes),
        Output("facility.nodes_per_rack", "Nodes per rack", "", lambda d: d.facility.rack_fit.nodes_per_rack),
        Output("facility.racks", "Racks", "", lambda d: d.facility.racks, "min"),
        Output("facility.compute_racks", "Compute racks", "", lambda d: d.facility.compute_racks, "min"),
        Output("facility.it_power_kw", "IT power at peak", "kW", lambda d: d.facility.it_power_kw, "min"),
        Output("facility.facility_power_kw", "Facility power at peak", "kW", lambda d: d.facility.facility_power_kw,
               "min"),
        Output("facility.floor_area_m2", "Floor area", "m²", lambda d: d.facility.floor_area_m2, "min"),
        Output("network.switches", "Switches, all networks", "", _switches, "min"),
        Output("network.tiers", "Compute fabric tiers", "", lambda d: d.network.tiers, "min"),
        Output("network.bisection_gbps", "Bisection bandwidth", "Gb/s",
               lambda d: d.network.bisection_bandwidth_gbps, "max"),
        Output(f"cost.capex_{c}", "CapEx", m, lambda d: d.cost.capex["total"], "min"),
        Output(f"cost.opex_{c}_per_year", "OpEx per year", f"{m}/year", lambda d: d.cost.opex_per_year["total"],
               "min"),
        Output(f"cost.tco_{c}", "TCO", m, lambda d: d.cost.tco, "min"),
        Output(f"cost.{c}_per_gpu_hour", "Cost per GPU-hour", f"{m}/GPU-hour", lambda d: d.cost.cost_per_gpu_hour,
               "min"),
        Output(f"cost.training_run_{c}", "Training run cost", m, lambda d: d.cost.training_run_cost, "min"),
        Output(f"cost.{c}_per_million_tokens", "Cost per million tokens served", m,
               lambda d: d.cost.cost_per_million_tokens, "min"),
        Output("cost.co2e_t_per_year", "CO2e per year", "t/year", lambda d: d.cost.co2e_tonnes_per_year, "min"),
        Output("training.training_days", "Days to train, no failures", "days",
               lambda d: _g(d.training, "training_days"), "min"),
        Output("training.mfu", "Model FLOPs utilisation", "fraction", lambda d: _g(d.training, "mfu"), "max"),
        Output("training.tokens_per_s", "Training throughput", "tokens/s", lambda d: _g(d.training, "tokens_per_s"),
               "max"),
        Output("reliability.training_days_expected", "Days to train, expected with failures", "days",
               lambda d: _g(d.reliability, "training_days_expected"), "min"),
        Output("reliability.goodput", "Goodput", "fraction", lambda d: _g(d.reliability, "goodput"), "max"),
        Output("serving.gpus", "GPUs to serve the demand", "", lambda d: _g(d.serving, "gpus"), "min"),
        Output("serving.tokens_per_s_per_gpu", "Output tokens/s per GPU", "tokens/s",
               lambda d: _g(d.serving, "tokens_per_s_per_gpu"), "max"),
        Output("serving.ttft_s", "Time to first token", "s", lambda d: _g(d.serving, "ttft_s"), "min"),
        Output("serving.tpot_s", "Time per output token", "s", lambda d: _g(d.serving, "tpot_s"), "min"),
    )


_CACHE: dict[str, tuple[Output, ...]] = {}


def outputs(currency: str = "USD") -> tuple[Output, ...]:
    """The result columns for designs priced in ``currency``."""
    if currency not in _CACHE:
        _CACHE[currency] = _outputs(currency)
    return _CACHE[currency]


def output_keys(currency: str = "USD") -> list[str]:
    return [o.key for o in outputs(currency)]


def output(key: str, currency: str = "USD") -> Output:
    """The output column ``key``; an unknown key names the closest valid ones."""
    for o in outputs(currency):
        if o.key == key:
            return o
    raise unknown_key(key, output_keys(currency), "output", "")


def unknown_key(key: str, valid: list[str], kind: str, path: str) -> ScenarioError:
    near = closest(key, valid)
    hint = f"did you mean {', '.join(repr(k) for k in near)}?" if near else \
        f"valid keys: {', '.join(valid[:16])}{' ...' if len(valid) > 16 else ''}"
    return ScenarioError(path, f"unknown {kind} key {key!r}; {hint}")


def clean(value: Any) -> Any:
    """A table cell: numbers as float/int, None for what does not apply."""
    if value is None:
        return None
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def row_of(design: Any, currency: str = "USD") -> dict[str, Any]:
    """Every output column of ``design`` (computes the whole chain)."""
    return {o.key: clean(o.get(design)) for o in outputs(currency)}
