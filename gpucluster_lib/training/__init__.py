"""Training-time engine: FLOPs, memory, communication, step time, plan search.

Public API::

    from gpucluster_lib import training
    est = training.estimate(scenario)          # TrainingEstimate; est.to_dict() is the CLI JSON
    res = training.search_plans(scenario)      # every valid plan, ranked (numpy, vectorised)
    training.min_gpus_for_deadline(scenario, deadline_days=30)

Modules: :mod:`.flops` (FLOP counts), :mod:`.core` (vectorised step time and memory),
:mod:`.plans` (plan validation and enumeration), :mod:`.efficiency` (per-generation
fractions of peak from ``data/efficiency.yaml``), :mod:`.estimate` (scenario wiring).
"""

from gpucluster_lib.training.core import Context, evaluate
from gpucluster_lib.training.efficiency import Efficiency, for_accelerator
from gpucluster_lib.training.estimate import (
                       SearchResult,
                       TrainingEstimate,
                       build_context,
                       estimate,
                       min_gpus_for_deadline,
                       scaling,
                       search_plans,
)
from gpucluster_lib.training.plans import Plan, resolve_plan

__all__ = ["Context", "Efficiency", "Plan", "SearchResult", "TrainingEstimate", "build_context", "estimate",
           "evaluate", "for_accelerator", "min_gpus_for_deadline", "resolve_plan", "scaling", "search_plans"]
