# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 5 · Inference serving capacity
#
# How many GPUs, nodes, racks and megawatts does a traffic target need? For the scenario's model,
# precision, accelerator and tensor-parallel size, the workbook finds the largest batch that fits in
# memory (weights + KV cache + workspace), times prefill (compute-bound) and decode (a roofline of
# bytes read against FLOPs, plus NVLink all-reduces), keeps the highest-throughput batch that meets
# TTFT and TPOT under continuous batching, and counts replicas, nodes, racks and power.
# Every efficiency is sourced in `gpucluster_lib/inference/efficiency.py` and can be overridden
# under `inference:` in the scenario.

# %% tags=["parameters"]
scenario_path = "../gpucluster_lib/data/scenarios/llama3-70b-512-h100.yaml"

# %%
import ipywidgets as widgets

from gpucluster_lib import design
from gpucluster_lib.ui import tab_inference
from gpucluster_lib.ui.common import AppState, style_widget

d = design(scenario_path)
state = AppState.from_design(d)  # the panel reads this same design
widgets.VBox([style_widget(), tab_inference.build(state)])

# %% [markdown]
# ## The scenario's serving fleet in detail

# %%
import pandas as pd

sv = d.serving
pd.Series({
    "tensor parallel": sv.tensor_parallel,
    "batch": sv.batch,
    "TTFT [s]": round(sv.ttft_s, 3),
    "TPOT [ms]": round(sv.tpot_s * 1000, 1),
    "meets SLO": sv.meets_slo,
    "replicas": sv.replicas,
    "nodes": sv.nodes,
    "racks": sv.racks,
    "IT power [kW]": round(sv.it_power_kw, 1),
})

# %% [markdown]
# ## Key figures
#
# From the scenario's design: the same numbers as the app, `gpucluster serve SCENARIO.yaml` and the
# report. Tokens/s are output tokens.

# %%
from gpucluster_lib.formatting import format_value

summary = d.summary()
pd.DataFrame([{"figure": summary[k]["label"], "value": format_value(summary[k]["value"]), "unit": summary[k]["unit"]}
              for k in ("accelerator", "serving_gpus", "tokens_per_s_per_gpu")]).set_index("figure")

# %% [markdown]
# ## Other accelerators and tensor-parallel sizes
#
# The scenario's target on its own accelerator and on the H200 (same TP), and with the TP searched.
# Tokens/s are output tokens; power is IT power.

# %%
from gpucluster_lib.inference import serve
from gpucluster_lib.inference.compare import system_for


def rounded(v, scale=1, nd=0):
    return None if v is None else round(v * scale, nd)


rows = []
for acc in ("h100-sxm5-80gb", "h200-sxm-141gb"):
    for tp in (d.scenario.inference.tensor_parallel, None):
        s = d.scenario.replace(hardware__server=system_for(d.catalog, acc), hardware__nodes=1,
                               inference__tensor_parallel=tp)
        e = serve(s, d.catalog)
        rows.append({"accelerator": acc, "TP": e.tensor_parallel if tp else f"{e.tensor_parallel} (searched)",
                     "batch": e.batch, "tokens/s/GPU": rounded(e.tokens_per_s_per_gpu), "GPUs": e.gpus,
                     "nodes": e.nodes, "racks": e.racks, "IT MW": rounded(e.it_power_kw, 1e-3, 4),
                     "TTFT s": rounded(e.ttft_s, 1, 3), "TPOT ms": rounded(e.tpot_s, 1000, 1),
                     "meets SLO": e.meets_slo})
pd.DataFrame(rows)

# %% [markdown]
# ## Check against MLPerf Inference v4.0 and v4.1 (Llama 2 70B, 8 GPUs)
#
# NVIDIA's closed-division submissions (TensorRT-LLM, FP8; github.com/mlcommons/inference_results_v4.0 and
# _v4.1, closed/NVIDIA), each run with the submitter's engine: tensor parallelism, engine batch, token budget
# per step and KV-cache scheduling by system, scenario and round, as the table
# `gpucluster_lib/data/validation/mlperf_llama2_70b.yaml` gives them with their source files. The Server rows
# have Poisson arrivals and the p99 limits (TTFT 2 s, TPOT 200 ms); all rows have the spread of output lengths
# that the published server logs give (0.71, docs/inference.md) and the same efficiency parameters as
# everything else. v4.1 ran newer software on the same hardware (+12.5% H100 and +12.9% H200 offline).

# %%
from gpucluster_lib.inference.validation import mlperf_engine, mlperf_predicted, mlperf_rows

checks = pd.DataFrame([{"round": r.round, "system": r.label, "scenario": r.scenario.capitalize(),
                        "engine batch": mlperf_engine(r.round, r.system, r.scenario)["batch_size"],
                        "published tokens/s": r.tokens_per_s,
                        "predicted tokens/s": round(mlperf_predicted(r, d.catalog))} for r in mlperf_rows()])
checks["error %"] = (100 * (checks["predicted tokens/s"] / checks["published tokens/s"] - 1)).round(1)
checks

# %% [markdown]
# ## The TensorRT-LLM engine profile (`inference.engine: tensorrt-llm`)
#
# `inference.engine` picks a serving engine profile (`gpucluster_lib/data/serving_engines.yaml`). The
# default, `generic`, adds nothing: the figures above. `tensorrt-llm` is TensorRT-LLM 0.10 / 0.11's batch
# manager (in-flight batching, no CUDA graphs), fitted on that runtime's own throughput tables: every step
# adds a host time of 26 ms plus 5 µs per sequence in flight (12 µs when every response streams token by
# token, as MLPerf Server does), the FP8 GEMMs run at 0.68 of peak, and the token budget per step counts the
# decode tokens (docs/inference.md, "Serving engine profiles";
# `scripts/calibrate_serving.py` prints the fit). First its 20 calibration rows, then the MLPerf rows,
# which it was never fitted on.

# %%
from gpucluster_lib.inference.serve import serve
from gpucluster_lib.inference.validation import (
    mlperf_scenario,
    trtllm_engine_per_gpu,
    trtllm_model_per_gpu,
    trtllm_rows,
)

calibration_rows = pd.DataFrame([{"release": r.release, "system": r.system, "TP": r.tp,
                                  "in / out": f"{r.input_tokens}/{r.output_tokens}",
                                  "published tokens/s per GPU": round(r.per_gpu, 1),
                                  "generic error %": round(100 * (trtllm_model_per_gpu(r) / r.per_gpu - 1), 1),
                                  "tensorrt-llm error %": round(100 * (trtllm_engine_per_gpu(r).tokens_per_s_per_gpu
                                                                       / r.per_gpu - 1), 1)}
                                 for rel in ("0.10.0", "0.11.0") for r in trtllm_rows(rel)])
calibration_rows

# %%
checks["tensorrt-llm predicted"] = [round(serve(mlperf_scenario(r.round, r.system, r.scenario, engine="tensorrt-llm"),
                                                d.catalog).tokens_per_s_per_gpu * 8) for r in mlperf_rows()]
checks["tensorrt-llm error %"] = (100 * (checks["tensorrt-llm predicted"] / checks["published tokens/s"] - 1)).round(1)
checks

# %% [markdown]
# ## Efficiency parameters used (override any of them under `inference:`)

# %%
pd.DataFrame(sorted(d.serving.efficiency.items()), columns=["parameter", "value"])
