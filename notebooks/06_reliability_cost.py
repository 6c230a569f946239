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
# `data/grid_intensity.yaml`); figures computed by a fallback because another module is missing are
# listed as such.

# %% tags=["parameters"]
scenario_path = "../gpucluster_lib/data/scenarios/gpt3-175b-1024-a100.yaml"

# %%
import ipywidgets as widgets

from gpucluster_lib.ui import tab_reliability
from gpucluster_lib.ui.common import AppState, style_widget

state = AppState.from_path(scenario_path)
widgets.VBox([style_widget(), tab_reliability.build(state)])

# %% [markdown]
# ## Key figures, without widgets
#
# The same calls the panel makes (`gpucluster reliability` / `gpucluster cost` print these as JSON).

# %%
import pandas as pd

from gpucluster_lib.economics import cost as cost
from gpucluster_lib.reliability import core as reliability

rel = reliability.assess(state.scenario, state.catalog)
cst = cost.assess(state.scenario, state.catalog, reliability_result=rel)
figures = {
    "interruptions per day": rel.interruptions_per_day,
    "MTBI [h]": rel.mtbi_hours,
    "checkpoint [TB]": rel.checkpoint_bytes / 1e12,
    "checkpoint write [s]": rel.checkpoint_write_s,
    "checkpoint interval [s]": rel.checkpoint_interval_s,
    "goodput": rel.goodput,
    "days ideal": rel.training_days_ideal,
    "days expected": rel.training_days_expected,
    "days P10": rel.training_days_p10,
    "days P90": rel.training_days_p90,
    "spare nodes": rel.spare_nodes,
    "CapEx total [USD]": cst.capex["total"],
    "OpEx per year [USD]": cst.opex_per_year["total"],
    f"TCO over {cst.years} years [USD]": cst.tco,
    "cost per GPU-hour [USD]": cst.cost_per_gpu_hour,
    "training run, own [USD]": cst.training_run_cost,
    "training run, rented [USD]": cst.rent_training_run_cost,
    "energy [MWh/yr]": cst.energy_mwh_per_year,
    "CO2e [t/yr]": cst.co2e_tonnes_per_year,
    "training run CO2e [t]": cst.training_run_co2e_tonnes,
}
def fmt(v):
    return "–" if v is None else (f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.4g}")


pd.Series(figures, name="value").map(fmt).to_frame()

# %% [markdown]
# ## Which figures came from fallbacks

# %%
pd.DataFrame(sorted({**{f"reliability.{k}": v for k, v in rel.fallbacks.items()}, **cst.fallbacks}.items()),
             columns=["figure", "how it was obtained"])

# %% [markdown]
# ## More GPUs: faster, but more failures
#
# Days to train against cluster size, with the failure-free line (perfect scaling of the scenario's
# estimate, stated) and the P10/P50/P90 band. The mean time between interruptions halves every time
# the GPU count doubles.

# %%
pd.DataFrame(reliability.scaling_table(state.scenario, state.catalog, base=rel)).round(2)

# %% [markdown]
# ## Check: Llama 3's published interruption rate
#
# With the default (Llama 3) rates, 16,384 GPUs see one unexpected interruption every
# 54 x 24 / 419 = 3.09 h, the paper's "about every 3.1 hours".

# %%
rates = reliability.preset_rates("llama3-405b")
round(reliability.mtbi_hours(reliability.interruptions_per_day(16_384, sum(rates.values()))), 2)
