# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Validation: predicted against published training runs
#
# Every row of `gpucluster_lib/data/validation/training_runs.csv` is turned into a scenario (model preset, accelerator,
# GPU count, fabric bandwidth, the published parallel plan) and estimated with the default efficiency
# set of `data/efficiency.yaml`. The published figure is converted to seconds per step with the
# source's own FLOP definition (Narayanan 2021 Eq. 3 hardware FLOPs for Megatron-LM and
# Megatron-DeepSpeed; tokens/s for llm-foundry; the iteration time for MT-NLG; MFU for Llama 3).
#
# * **calibration** rows (Narayanan 2021 Tables 1 and 2, MosaicML MPT on A100 and H100): the efficiency
#   parameters were fitted on these (`scripts/calibrate_training.py`), no per-row constants.
# * **external** rows (MT-NLG 530B, BLOOM 176B, Llama 3 405B, Megatron-Core on H100, and 33 further MosaicML
#   MPT runs of the same llm-foundry tables, MPT-125M to 70B): never used for fitting.
#
# Error = predicted / published - 1 on the step time (positive: the model is too slow).

# %%
import altair as alt

from gpucluster_lib.charts.training import validation_chart
from gpucluster_lib.training import validation

alt.renderers.enable("svg")  # static, deterministic, offline
df = validation.compare()
validation_chart(df)

# %% [markdown]
# ## Errors per run

# %%
import pandas as pd

pd.set_option("display.max_rows", 200)  # every run, not the first and last five
cols = ["run_id", "set", "label", "plan", "published_step_s", "predicted_step_s", "error"]
df[cols].assign(error=(df["error"] * 100).round(1)).round(3).rename(columns={"error": "error [%]"})

# %% [markdown]
# ## Summary: median and maximum absolute error per set

# %%
validation.summary(df).round(3)
