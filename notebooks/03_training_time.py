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

from gpucluster_lib import design
from gpucluster_lib.ui import tab_training
from gpucluster_lib.ui.common import AppState, style_widget

d = design(scenario_path)
state = AppState.from_design(d)  # the panel reads this same design
widgets.VBox([style_widget(), tab_training.build(state)])

# %% [markdown]
# ## The plan in detail

# %%
import pandas as pd

est = d.training
pd.Series({
    "plan": est.plan.label(),
    "step time [s]": round(est.step_time_s, 3),
    "tokens/s": round(est.tokens_per_s),
    "model TFLOP/s per GPU": round(est.model_tflops_per_gpu, 1),
    "memory per GPU [GiB]": round(est.memory_per_gpu_bytes["total"] / 2**30, 1),
    "fits": est.fits,
})

# %% [markdown]
# ## Where the step time goes [s]

# %%
pd.Series(est.time_breakdown_s).round(3)

# %% [markdown]
# ## Top five plans of the search
#
# Every plan for the model on this cluster at the scenario's global batch, fitting plans first,
# ranked by time to train (the panel's table of alternatives).

# %%
from gpucluster_lib.charts.training import top_plans_frame

top_plans_frame(d.plans.table, 5).round(3)

# %% [markdown]
# ## Key figures
#
# From the scenario's design, as loaded: the same numbers as the app,
# `gpucluster estimate SCENARIO.yaml` and the report. Days to train here assume no failures; notebook 6
# adds interruptions and checkpoints.

# %%
from gpucluster_lib.formatting import format_fraction, format_value


def figure_row(fig):
    """One key figure for people: its label, its value (fractions as percentages) and its unit."""
    if fig["unit"] == "fraction":
        return {"figure": fig["label"], "value": format_fraction(fig["value"]), "unit": ""}
    return {"figure": fig["label"], "value": format_value(fig["value"]), "unit": fig["unit"]}


summary = d.summary()
pd.DataFrame([figure_row(summary[k]) for k in ("gpus", "training_days", "mfu")]).set_index("figure")
