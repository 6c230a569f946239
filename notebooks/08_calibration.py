# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 8 · Calibration from your own measurements
#
# The workbook's default efficiencies come from published measurements. Your cluster has its own
# GEMM rates and its own links: measure them, fit them here, and save a named, dated **profile**
# that a scenario selects with `calibration: my-cluster.yaml`.
#
# * **GEMM**: a micro-benchmark table with one row per shape and data type, columns
#   `m, n, k, dtype, tflops` (achieved TFLOP/s = 2 m n k / time / 10^12; a torch `matmul` loop over a
#   grid of shapes is enough). The fit is the curve of `gpucluster_lib/calibration/gemm.py`:
#   `e = e_max g(m) g(n) g(k)` with `g(x) = x^p / (x^p + x_half^p)`, plus a fixed time per GEMM.
# * **Links**: the output of nccl-tests (`all_reduce_perf`, `all_gather_perf`,
#   `reduce_scatter_perf`) exactly as printed: one run inside a node (NVLink) and one across nodes
#   (fabric). The fit is alpha-beta: `t = h alpha + F S / B`, B the bus bandwidth of nccl-tests'
#   `PERFORMANCE.md`.
#
# The same fit runs from the command line:
# `gpucluster calibrate --name my-cluster --gemm gemm.csv --nccl nvlink=ar_node.txt --nccl fabric=ar_4nodes.txt --accelerator h100-sxm5-80gb`.
#
# The inputs below are **public example measurements** (OpenXLA's H100 GEMM table and a two-node
# A3 Mega all-reduce run; `tests/data/README.md` gives their sources), not your cluster.

# %% tags=["parameters"]
gemm_csv = "../tests/data/xla_sm90_gemm_subset.csv"   # None: links only
nccl_files = ["../tests/data/nccl_all_reduce_2x8_h100_a3mega.txt"]   # FILE or LEVEL=FILE (nvlink, fabric); [] for none
gpus_per_node = None   # for a fabric run whose output has no rank lines, e.g. 8
accelerator = "h100-sxm5-80gb"
profile_name = "example-h100"
measured_on = "2026-12-01"
example = True   # public example data; False for your own measurements

# %%
import altair as alt
import pandas as pd
from IPython.display import display

from gpucluster_lib.calibration.nccl import LEVELS, read_nccl_tests
from gpucluster_lib.calibration.run import calibrate, dense_peaks, read_gemm_table
from gpucluster_lib.charts.calibration import gemm_fit, link_fit

alt.renderers.enable("svg")  # static, deterministic, offline


def level_and_file(item):
    """'fabric=run.txt' -> ('fabric', 'run.txt'); 'run.txt' -> (None, 'run.txt'): the level from its rank lines."""
    level, sep, path = item.partition("=")
    return (level, path) if sep and level in LEVELS else (None, item)


runs = [level_and_file(item) for item in nccl_files]
result = calibrate(profile_name, gemm=read_gemm_table(gemm_csv) if gemm_csv else None,
                   nccl=[(read_nccl_tests(path), level) for level, path in runs],
                   peaks=dense_peaks(accelerator), date=measured_on, gpus_per_node=gpus_per_node,
                   source="public example measurements" if example else "", example=example)
print(result.summary())

# %% [markdown]
# ## GEMM: measured against fitted
#
# Each point is one measured shape; on the dashed line the curve is exact. Small shapes sit far
# below the large-GEMM rate (tile and wave quantisation, and the fixed time per GEMM).

# %%
gemm_table = pd.concat(list(result.gemm_tables.values()), ignore_index=True) if result.gemm_tables else None
if gemm_table is None:
    print("no GEMM table given")
else:
    display(gemm_fit(gemm_table))
    display(gemm_table.assign(error=(gemm_table["error"] * 100).round(1)).round(1).rename(
        columns={"tflops": "measured [TFLOP/s]", "predicted_tflops": "fitted [TFLOP/s]", "error": "error [%]"}))

# %% [markdown]
# ## Links: measured time against the alpha-beta line
#
# NCCL changes protocol and algorithm with the message size, so the straight line holds at the
# small (latency) and large (bandwidth) ends and misses in between. The bandwidth is fitted on the
# large sizes (from 1/16 of the largest: the ones gradient buckets reach) and is never above the
# bus bandwidth they measured; the summary above gives the worst error at those sizes.

# %%
for level in sorted(result.tests):
    display(link_fit(result.tests[level], result.profile.links[level]))
if not result.tests:
    print("no nccl-tests output given")

# %% [markdown]
# ## The profile
#
# Save it with `result.profile.save("my-cluster.yaml")` and select it in a scenario with
# `calibration: my-cluster.yaml` (next to the scenario file). The training engine then scales its
# GEMM rate by the measured large-GEMM level (against the 0.832 of the default curve its
# efficiency was fitted with), takes the curve's size effect, and sets its NVLink and network
# efficiencies and latencies from the links (efficiencies at most 100%). The serving model uses
# the NVLink bus bandwidth and latency for the tensor-parallel all-reduces and scales its GEMM
# efficiency by the measured curve. The scenario's own efficiency values win over the profile's;
# the training result names the profile and the terms it set.

# %%
print(result.profile.to_yaml())
