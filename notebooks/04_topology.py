# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 04 Network topology
#
# How the nodes are wired: fat tree / leaf-spine, rail-optimised scalable units, tree, ring or one switch; switch, link, cable and transceiver counts; bisection bandwidth; the per-GPU all-reduce bandwidth the training engine reads (`hardware.fabric_gbps_per_gpu`). Counting rules: Al-Fares et al. 2008 and NVIDIA's DGX SuperPOD reference architectures (see `docs/topology.md`).

# %% tags=["parameters"]
scenario_path = "../gpucluster_lib/data/scenarios/llama3-70b-512-h100.yaml"

# %%
from gpucluster_lib.ui import tab_topology
from gpucluster_lib.ui.common import AppState

state = AppState.from_path(scenario_path)
tab_topology.build(state)

# %% [markdown]
# ## Counts for this scenario and for 128 and 1,024 nodes of the same design

# %%
import pandas as pd

from gpucluster_lib.network.topology import design_topology

rows = []
for n in (state.scenario.hardware.nodes, 128, 1024):
    d = design_topology(state.scenario, state.catalog, nodes=n)
    rows.append({'nodes': n, 'tiers': d.tiers, **d.switches, **d.links,
                 'bisection [Tb/s]': d.bisection_bandwidth_gbps / 1000,
                 'per-GPU all-reduce [Gb/s]': d.per_gpu_allreduce_gbps,
                 'network power [kW]': round(d.network_power_w / 1000, 1)})
pd.DataFrame(rows).set_index('nodes')
