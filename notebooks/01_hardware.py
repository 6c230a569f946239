# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 1 · Hardware picker
#
# Filter the sourced accelerator catalogue (`data/accelerators.csv`) by memory, precision, vendor,
# form factor and budget; rank by peak, efficiency or price; inspect one part with its datasheet
# source and see the catalogue servers that carry it. All peaks are **dense** (never the 2:4-sparsity
# headline); prices are indicative estimates with their source, overridable in the scenario
# (`costs.prices`).
#
# Every number below comes from one design of the scenario (`gpucluster_lib.design`), the same one
# the panel, the app, the command line and the report read.

# %% tags=["parameters"]
scenario_path = "../gpucluster_lib/data/scenarios/reference-8x-a100.yaml"

# %%
import ipywidgets as widgets

from gpucluster_lib import design
from gpucluster_lib.ui import tab_hardware
from gpucluster_lib.ui.common import AppState, style_widget

d = design(scenario_path)
state = AppState.from_design(d)  # the panel reads this same design
widgets.VBox([style_widget(), tab_hardware.build(state)])

# %% [markdown]
# ## The same ranking, without widgets
#
# The ten accelerators with at least 80 GiB of memory, ranked by dense BF16 peak
# (`gpucluster_lib.hardware.picker.pick`); this table is what the regression test compares.

# %%
from gpucluster_lib.hardware.picker import SUMMARY_COLUMNS, PickerFilter, pick

pick(d.catalog, PickerFilter(precision="bf16", min_memory_gib=80))[SUMMARY_COLUMNS].head(10)

# %% [markdown]
# ## Servers that carry the scenario's accelerator

# %%
from gpucluster_lib.hardware.picker import servers_for

servers_for(d.catalog, d.hardware.accelerator_id)[["id", "fit", "gpu_count", "cpu_id", "rack_units", "max_power_w",
                                                   "psu_redundancy"]]

# %% [markdown]
# ## Key figures
#
# From the scenario's design: the same numbers as the app, the command line and the report.

# %%
import pandas as pd

from gpucluster_lib.formatting import format_value

summary = d.summary()
pd.DataFrame([{"figure": summary[k]["label"], "value": format_value(summary[k]["value"]), "unit": summary[k]["unit"]}
              for k in ("accelerator", "gpus", "nodes", "spare_nodes")]).set_index("figure")
