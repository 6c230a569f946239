# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 6 · Reliability, cost and carbon
#
# Big runs last weeks and nodes fail. This notebook turns the scenario into a **failure-aware** time
# to train and into money and carbon:
#
# * job interruptions from public large-cluster data (Llama 3 405B Table 5: 419 unexpected
#   interruptions in 54 days on 16,384 H100; Meta RSC-1/RSC-2), per component;
# * checkpoint size from the model and optimizer state, write time from the storage system, the
#   optimal interval (Young 1974, Daly 2006), restart time, goodput (Daly's eq. 13);
# * hot spares, redundant head node and N+M supplies, and their effect on availability;
# * a P10-P90 band on days to train (seeded Monte Carlo over failure rate and throughput);
# * CapEx, OpEx and TCO with straight-line depreciation, cost per GPU-hour and per run, build versus
#   rent, energy and CO2e.
#
# Every price and rate carries a source (`data/failure_rates.yaml`, `data/cost_defaults.yaml`,
# `data/grid_intensity.yaml`).

# %% tags=["parameters"]
scenario_path = "../gpucluster_lib/data/scenarios/gpt3-175b-1024-a100.yaml"

# %%
import ipywidgets as widgets

from gpucluster_lib import design
from gpucluster_lib.ui import tab_reliability
from gpucluster_lib.ui.common import AppState, style_widget

d = design(scenario_path)
state = AppState.from_design(d)  # the panel reads this same design
widgets.VBox([style_widget(), tab_reliability.build(state)])

# %% [markdown]
# ## Reliability and cost in detail

# %%
import pandas as pd

from gpucluster_lib.formatting import format_value

rel, cst = d.reliability, d.cost
cur = cst.currency
details = {
    "interruptions per day": rel.interruptions_per_day,
    "MTBI [h]": rel.mtbi_hours,
    "checkpoint [TB]": rel.checkpoint_bytes / 1e12,
    "checkpoint write [s]": rel.checkpoint_write_s,
    "checkpoint interval [s]": rel.checkpoint_interval_s,
    "goodput": rel.goodput,
    "days P10": rel.training_days_p10,
    "days P50": rel.training_days_p50,
    "spare nodes recommended": rel.spare_nodes_recommended,
    "job at full size [fraction of time]": rel.full_size_availability,
    f"OpEx per year [{cur}]": cst.opex_per_year["total"],
    f"training run, rented [{cur}]": cst.rent_training_run_cost,
    "energy [MWh/yr]": cst.energy_mwh_per_year,
    "training run CO2e [t]": cst.training_run_co2e_tonnes,
}
pd.Series(details, name="value").map(format_value).to_frame()

# %% [markdown]
# ## Key figures
#
# From the scenario's design: the same numbers as the app, `gpucluster reliability` and
# `gpucluster cost`, and the report.

# %%
summary = d.summary()
pd.DataFrame([{"figure": summary[k]["label"], "value": format_value(summary[k]["value"]), "unit": summary[k]["unit"]}
              for k in ("gpus", "spare_nodes", "training_days", "training_days_expected", "training_days_p90",
                        "capex", "tco", "cost_per_gpu_hour", "training_run_cost", "co2e_tonnes_per_year")]
             ).set_index("figure")

# %% [markdown]
# ## More GPUs: faster, but more failures
#
# Days to train against cluster size, with the failure-free line (perfect scaling of the scenario's
# estimate, stated) and the P10/P50/P90 band. The mean time between interruptions halves every time
# the GPU count doubles. The band is drawn with the design's own Monte Carlo samples, so the row at
# the scenario's size repeats its key figures.

# %%
from gpucluster_lib.reliability import core as reliability

rows = reliability.scaling_table(d.scenario, d.catalog, base=d.reliability, samples=reliability.MC_SAMPLES)
pd.DataFrame(rows).round(2)

# %% [markdown]
# ## Check: Llama 3's published interruption rate
#
# With the default (Llama 3) rates, 16,384 GPUs see one unexpected interruption every
# 54 x 24 / 419 = 3.09 h, the paper's "about every 3.1 hours".

# %%
rates = reliability.preset_rates("llama3-405b")
round(reliability.mtbi_hours(reliability.interruptions_per_day(16_384, sum(rates.values()))), 2)
