"""Generate notebooks/03_training_time.ipynb and notebooks/validation.ipynb (stable cell ids).

    python scripts/make_training_notebooks.py
    python scripts/execute_notebooks.py notebooks/03_training_time.ipynb notebooks/validation.ipynb
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from nbgen import code, md, write  # noqa: E402

NB = Path(__file__).resolve().parent.parent / "notebooks"


write(NB / "03_training_time.ipynb", [
    md("""
# 3 · Training time

How long does this model take to train on this cluster, with which parallel plan, and does it fit in
memory? Pick a model preset, an accelerator and a node count, then either write the parallel plan
(tensor, pipeline, virtual stages, context, micro-batch, global batch, recomputation, ZeRO stage) or let
the search find the fastest plan that fits. The panel shows the step-time breakdown, the memory per GPU
against the GPU's memory, the top plans of the search and, on request, how time to train and MFU scale
with the GPU count.

The physics (FLOPs, memory, communication, pipeline bubble) is in `gpucluster_lib.training`; the
efficiency assumptions are in `data/efficiency.yaml` and were checked against published runs
(`notebooks/validation.ipynb`, `docs/validation.md`).
"""),
    code('scenario_path = "../data/scenarios/llama3-70b-512-h100.yaml"', tags=["parameters"]),
    code("""
import ipywidgets as widgets
from gpucluster_lib.ui import tab_training
from gpucluster_lib.ui.common import AppState, style_widget

state = AppState.from_path(scenario_path)
widgets.VBox([style_widget(), tab_training.build(state)])
"""),
    md("""
## The estimate, without widgets

`gpucluster_lib.training.estimate(scenario)` is what the panel and `gpucluster estimate SCENARIO --json`
call. Key figures for the scenario as loaded:
"""),
    code("""
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
"""),
    md("## Where the step time goes [s]"),
    code("""
pd.Series(est.time_breakdown_s).round(3)
"""),
    md("## Top five plans of the search"),
    code("""
from gpucluster_lib.charts.training import top_plans_frame

top_plans_frame(training.search_plans(scenario).table, 5).round(3)
"""),
])

write(NB / "validation.ipynb", [
    md("""
# Validation: predicted against published training runs

Every row of `gpucluster_lib/data/validation/training_runs.csv` is turned into a scenario (model preset, accelerator,
GPU count, fabric bandwidth, the published parallel plan) and estimated with the default efficiency
set of `data/efficiency.yaml`. The published figure is converted to seconds per step with the
source's own FLOP definition (Narayanan 2021 Eq. 3 hardware FLOPs for Megatron-LM and
Megatron-DeepSpeed; tokens/s for llm-foundry; the iteration time for MT-NLG; MFU for Llama 3).

* **calibration** rows (Narayanan 2021 Tables 1 and 2, MosaicML MPT on A100 and H100): the efficiency
  parameters were fitted on these (`scripts/calibrate_training.py`), no per-row constants.
* **external** rows (MT-NLG 530B, BLOOM 176B, Llama 3 405B): never used for fitting.

Error = predicted / published - 1 on the step time (positive: the model is too slow).
"""),
    code("""
import altair as alt
from gpucluster_lib.training import validation
from gpucluster_lib.charts.training import validation_chart

alt.renderers.enable("svg")  # static, deterministic, offline
df = validation.compare()
validation_chart(df)
"""),
    md("## Errors per run"),
    code("""
cols = ["run_id", "set", "label", "plan", "published_step_s", "predicted_step_s", "error"]
df[cols].assign(error=(df["error"] * 100).round(1)).round(3).rename(columns={"error": "error [%]"})
"""),
    md("## Summary: median and maximum absolute error per set"),
    code("""
validation.summary(df).round(3)
"""),
])
