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

# %% tags=["parameters"]
scenario_path = "../gpucluster_lib/data/scenarios/reference-8x-a100.yaml"

# %%
import ipywidgets as widgets

from gpucluster_lib.ui import tab_hardware
from gpucluster_lib.ui.common import AppState, style_widget

state = AppState.from_path(scenario_path)
widgets.VBox([style_widget(), tab_hardware.build(state)])

# %% [markdown]
# ## The same ranking, without widgets
#
# The ten accelerators with at least 80 GiB of memory, ranked by dense BF16 peak
# (`gpucluster_lib.hardware.picker.pick`); this table is what the regression test compares.

# %%
from gpucluster_lib.hardware.picker import SUMMARY_COLUMNS, PickerFilter, pick

pick(state.catalog, PickerFilter(precision="bf16", min_memory_gib=80))[SUMMARY_COLUMNS].head(10)

# %% [markdown]
# ## Servers that carry the scenario's accelerator

# %%
from gpucluster_lib.hardware.picker import servers_for
from gpucluster_lib.hardware.resolve import resolve_hardware

hw = resolve_hardware(state.scenario, state.catalog)
servers_for(state.catalog, hw.accelerator_id)[["id", "fit", "gpu_count", "cpu_id", "rack_units", "max_power_w", "psu_redundancy"]]
