"""Serving engine profiles (``inference.engine``): what one engine's runtime adds to the roofline step.

The roofline step of :mod:`.latency` is the GPU's work. A real engine adds its own host work and its
own limits; a profile names them, each with its value, how it was obtained and the mechanism it
stands for (``gpucluster_lib/data/serving_engines.yaml``):

``generic`` (the default)
    No engine terms: the efficiencies of :mod:`.efficiency` as they are.
``tensorrt-llm``
    TensorRT-LLM 0.10 / 0.11 with its C++ batch manager (``gptManagerBenchmark``, in-flight batching,
    no CUDA graphs), fitted on that runtime's own in-flight throughput tables
    (``gpucluster_lib/data/validation/trtllm_llama2_70b_fp8.yaml``, the 20 in-flight rows;
    ``scripts/calibrate_serving.py`` prints the fit). Its terms:

    * ``iteration_host_time_s`` F [s] and ``host_time_per_sequence_s`` c [s per sequence]: the host
      work of one iteration of the batch manager's loop, ``F + c B`` for B sequences in flight
      (scheduling, the decoder's sampling and stop checks, per-request bookkeeping and responses);
      ``host_time_per_streamed_sequence_s`` is c when every response streams token by token
      (``inference.streaming``: one response per sequence per iteration).
      The step is **additive**, ``T = T_gpu + F + c B``: the loop waits for the step's new tokens
      before it schedules the next one, so the host work is not hidden behind the GPU's.
    * the efficiencies it replaces (``gemm_efficiency_8bit``, ``decode_step_overhead_s``).
    * ``token_budget_counts_decode``: the engine's token budget per step (``max_num_tokens``) counts
      one token for every sequence in generation as well as the prompt tokens, so a steady state of B
      sequences needs ``B (1 + L_in / L_out) <= max_num_tokens`` (every request's prompt is spread over
      its ``L_out`` steps): the batch is capped at ``max_num_tokens / (1 + L_in / L_out)``.

Scenario overrides (``inference.gemm_efficiency_8bit`` and the others) win over a profile's values. A
profile names the rows it was fitted on (``fitted_on``: models, precisions, accelerators, tensor-parallel
sizes); a replica outside them gets the finding ``inference-engine-profile-extrapolated``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from gpucluster_lib.errors import GpuClusterError
from gpucluster_lib.inference.efficiency import (
    OVERRIDE_FIELDS,
    ServingEfficiency,
    efficiency_from_spec,
)
from gpucluster_lib.resources import data_path, load_yaml

ENGINES_PATH = data_path("serving_engines.yaml")
#: the engine a scenario gets when ``inference.engine`` is absent
DEFAULT_ENGINE = "generic"
#: terms of a profile that are not efficiency overrides
HOST_TERMS = ("iteration_host_time_s", "host_time_per_sequence_s", "host_time_per_streamed_sequence_s")


@dataclass(frozen=True)
class EngineProfile:
    """One engine: its efficiency overrides, its host time per iteration and its batch limits."""

    name: str
    label: str
    efficiency: dict[str, float] = field(default_factory=dict)   # ServingEfficiency fields it replaces
    iteration_host_time_s: float = 0.0          # F: host time per iteration of the engine's loop [s]
    host_time_per_sequence_s: float = 0.0       # c: host time per sequence in flight per iteration [s]
    host_time_per_streamed_sequence_s: float = 0.0   # the same when every response streams token by token [s]
    token_budget_counts_decode: bool = False    # the token budget per step also counts decode tokens
    fitted_on: dict[str, Any] = field(default_factory=dict)     # models, precisions, accelerators, TPs, words
    terms: dict[str, dict[str, Any]] = field(default_factory=dict)   # every term as the data file gives it

    @property
    def has_host_time(self) -> bool:
        return (self.iteration_host_time_s > 0 or self.host_time_per_sequence_s > 0
                or self.host_time_per_streamed_sequence_s > 0)

    def per_sequence(self, streaming: bool = False) -> float:
        """c [s per sequence per iteration]: the streamed figure when responses stream token by token."""
        return self.host_time_per_streamed_sequence_s if streaming else self.host_time_per_sequence_s

    def host_time(self, batch: Any, streaming: bool = False) -> Any:
        """Host time of one iteration with ``batch`` sequences in flight [s]: ``F + c B``."""
        return self.iteration_host_time_s + self.per_sequence(streaming) * batch

    def batch_cap(self, max_num_tokens: int, input_tokens: int, output_tokens: int) -> int | None:
        """The largest steady-state batch the token budget allows [sequences] (module doc), else None."""
        if not self.token_budget_counts_decode:
            return None
        return max(int(max_num_tokens / (1.0 + input_tokens / output_tokens)), 1)

    def outside_fit(self, model: str | None, precision: str, accelerator: str, tp: int) -> list[str]:
        """What of a replica lies outside the rows the profile was fitted on, in words (empty: inside)."""
        if not self.fitted_on:
            return []
        checks = (("models", model, "the model"), ("precisions", precision, "the precision"),
                  ("accelerators", accelerator, "the accelerator"), ("tensor_parallel", tp, "the tensor parallelism"))
        return [what for key, value, what in checks if key in self.fitted_on and value not in self.fitted_on[key]]

    def echo(self, streaming: bool = False) -> dict[str, float]:
        """The engine's host terms as used, for the result's echoed efficiency (nothing for an engine without)."""
        if not self.has_host_time:
            return {}
        return {"iteration_host_time_s": self.iteration_host_time_s,
                "host_time_per_sequence_s": self.per_sequence(streaming)}


def _value(name: str, term: str, spec: Any) -> Any:
    if not isinstance(spec, dict) or "value" not in spec or not spec.get("how") or not spec.get("mechanism"):
        raise GpuClusterError(f"serving engine {name!r}, term {term!r} in {ENGINES_PATH}: give its value, how it "
                              "was obtained (how) and the mechanism it stands for (mechanism)")
    return spec["value"]


@lru_cache(maxsize=2)
def _load(path: str) -> dict[str, EngineProfile]:
    try:
        with open(path, encoding="utf-8") as fh:
            data = load_yaml(fh)
    except OSError as exc:
        raise GpuClusterError(f"cannot read the serving engine profiles {path}: {exc}") from exc
    engines = data.get("engines") if isinstance(data, dict) else None
    if not isinstance(engines, dict) or DEFAULT_ENGINE not in engines:
        raise GpuClusterError(f"the serving engine profiles {path} need an 'engines' section with '{DEFAULT_ENGINE}'")
    out = {}
    for name, raw in engines.items():
        terms = dict(raw.get("terms") or {})
        eff, host, budget = {}, {}, False
        for term, spec in terms.items():
            value = _value(name, term, spec)
            if term == "token_budget_counts_decode":
                budget = bool(value)
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise GpuClusterError(f"serving engine {name!r}, term {term!r} in {path}: the value must be a "
                                      f"number of at least 0, not {value!r}")
            if term in OVERRIDE_FIELDS:
                eff[term] = float(value)
            elif term in HOST_TERMS:
                host[term] = float(value)
            else:
                raise GpuClusterError(f"serving engine {name!r} in {path}: unknown term {term!r} (known: "
                                      f"{', '.join((*OVERRIDE_FIELDS, *HOST_TERMS, 'token_budget_counts_decode'))})")
        out[name] = EngineProfile(name, str(raw.get("label") or name), eff, token_budget_counts_decode=budget,
                                  terms=terms, fitted_on=dict(raw.get("fitted_on") or {}), **host)
    return out


def engine_profiles() -> dict[str, EngineProfile]:
    """Every shipped engine profile by name (``generic`` first)."""
    return _load(str(ENGINES_PATH))


def engine_profile(name: str | None) -> EngineProfile:
    """The profile of ``name`` (``generic`` when None); an unknown name is a GpuClusterError naming the
    scenario key and the choices (the scenario's schema already refuses one)."""
    profiles = engine_profiles()
    key = name or DEFAULT_ENGINE
    if key not in profiles:
        raise GpuClusterError(f"inference.engine: unknown serving engine {key!r}; use one of {', '.join(profiles)}")
    return profiles[key]


def engine_efficiency(spec: Any, profile: EngineProfile) -> ServingEfficiency:
    """The defaults, then the engine's values, then any non-null ``inference.<field>`` override."""
    return efficiency_from_spec(spec, profile.efficiency)


__all__ = ["DEFAULT_ENGINE", "EngineProfile", "engine_efficiency", "engine_profile", "engine_profiles"]
