# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 3 · Training time
#
# How long does this model take to train on this cluster, with which parallel plan, and does it fit in
# memory? Pick a model preset, an accelerator and a node count, then either write the parallel plan
# (tensor, pipeline, virtual stages, context, micro-batch, global batch, recomputation, ZeRO stage) or let
# the search find the fastest plan that fits. The panel shows the step-time breakdown, the memory per GPU
# against the GPU's memory, the top plans of the search and, on request, how time to train and MFU scale
# with the GPU count.
#
# The physics (FLOPs, memory, communication, pipeline bubble) is in `gpucluster_lib.training`; the
# efficiency assumptions are in `data/efficiency.yaml` and were checked against published runs
# (`notebooks/validation.ipynb`, `docs/validation.md`).

# %% tags=["parameters"]
scenario_path = "../gpucluster_lib/data/scenarios/llama3-70b-512-h100.yaml"

# %%
import ipywidgets as widgets

from gpucluster_lib.ui import tab_training
from gpucluster_lib.ui.common import AppState, style_widget

state = AppState.from_path(scenario_path)
widgets.VBox([style_widget(), tab_training.build(state)])

# %% [markdown]
# ## The estimate, without widgets
#
# `gpucluster_lib.training.estimate(scenario)` is what the panel and `gpucluster estimate SCENARIO --json`
# call. Key figures for the scenario as loaded:

# %%
import pandas as pd

from gpucluster_lib import load_scenario, training

scenario = load_scenario(scenario_path)
est = training.estimate(scenario)
pd.Series({
    "plan": est.plan.label(),
    "step time [s]": round(est.step_time_s, 3),
    "tokens/s": round(est.tokens_per_s),
    "model TFLOP/s per GPU": round(est.model_tflops_per_gpu, 1),
    "MFU": round(est.mfu, 3),
    "memory per GPU [GiB]": round(est.memory_per_gpu_bytes["total"] / 2**30, 1),
    "fits": est.fits,
    "training days": None if est.training_days is None else round(est.training_days, 1),
})

# %% [markdown]
# ## Where the step time goes [s]

# %%
pd.Series(est.time_breakdown_s).round(3)

# %% [markdown]
# ## Top five plans of the search

# %%
from gpucluster_lib.charts.training import top_plans_frame

top_plans_frame(training.search_plans(scenario).table, 5).round(3)
