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
# ## Check against MLPerf Inference v4.0 (Llama 2 70B, 8x H100 SXM)
#
# NVIDIA's closed-division submission (TensorRT-LLM, FP8, TP2 x 4 replicas; mean input ~222 and
# output 294.45 tokens; github.com/mlcommons/inference_results_v4.0, closed/NVIDIA,
# DGX-H100_H100-SXM-80GBx8_TRT), predicted with the same efficiency parameters as everything else.

# %%
from gpucluster_lib.scenario import from_dict


def mlperf(ttft, tpot):
    s = from_dict({"model": {"preset": "llama2-70b"}, "hardware": {"server": "dgx-h100", "nodes": 1},
                   "inference": {"precision": "fp8", "tensor_parallel": 2, "input_tokens": 222,
                                 "output_tokens": 294, "ttft_slo_s": ttft, "tpot_slo_s": tpot}})
    return 4 * serve(s, d.catalog).tokens_per_s_per_replica

checks = pd.DataFrame([
    {"scenario": "Offline", "published tokens/s": 21805.8, "predicted tokens/s": round(mlperf(1e6, 1e6))},
    {"scenario": "Server (TTFT 2 s, TPOT 200 ms)", "published tokens/s": 20556.4, "predicted tokens/s": round(mlperf(2.0, 0.2))},
])
checks["error %"] = (100 * (checks["predicted tokens/s"] / checks["published tokens/s"] - 1)).round(1)
checks

# %% [markdown]
# ## Efficiency parameters used (override any of them under `inference:`)

# %%
pd.DataFrame(sorted(d.serving.efficiency.items()), columns=["parameter", "value"])
