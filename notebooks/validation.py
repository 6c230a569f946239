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
# source's own FLOP definition (Narayanan 2021 Eq. 3 hardware FLOPs for Megatron-LM, Megatron-DeepSpeed and
# OPT; tokens/s for llm-foundry, NeMo's performance summaries and torchtitan; the iteration time for MT-NLG,
# GLM-130B, Nemotron-4 and the DGX Cloud benchmarks; MFU for Llama 3).
#
# * **calibration** rows (Narayanan 2021 Tables 1 and 2, MosaicML MPT on A100 and H100): the efficiency
#   parameters were fitted on these (`scripts/calibrate_training.py`), no per-row constants.
# * **external** rows, never used for fitting: MT-NLG 530B, BLOOM 176B, Llama 3 405B, OPT-175B, GLM-130B,
#   Megatron-LM's GPT-3 175B example, Megatron-Core on H100, 41 further MosaicML MPT runs of the same
#   llm-foundry tables (MPT-125M to 70B), and NVIDIA's own published runs: Nemotron-4 15B, the DGX Cloud
#   benchmarks (NeMo on H100, BF16 and FP8), the NeMo and Megatron-Bridge performance summaries (H100, B200,
#   GB200, GB300, FP8), and torchtitan on H200. docs/validation.md gives each source and the rule that chose its
#   rows.
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

# %% [markdown]
# ## By GPU: the held-out runs on each accelerator
#
# Signed step-time error of the external rows on each GPU (positive: the model is too slow). The training
# estimate quotes this range in its warning on GPUs whose efficiencies are not validated (Blackwell):
# on GB300 every held-out run is slower in the model, on B200 every one faster.

# %%
from gpucluster_lib import accuracy
from gpucluster_lib.catalog import load_catalog

names = load_catalog().accelerators.set_index("id")["name"]
by_gpu = pd.DataFrame.from_dict(accuracy.summarise(df), orient="index").drop(
    columns=["precisions", "frameworks", "by_precision"], errors="ignore")
(by_gpu.assign(**{c: (by_gpu[c] * 100).round(1) for c in ("error_min", "error_median", "error_max")})
 .rename(index=names.to_dict(),
         columns={"runs": "held-out runs", "error_min": "most negative: model faster [%]",
                  "error_median": "median error [%]", "error_max": "most positive: model slower [%]"})
 .rename_axis("GPU"))
