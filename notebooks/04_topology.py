# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 4 · Network topology
#
# How the nodes are wired: fat tree / leaf-spine, rail-optimised scalable units, tree, ring or one
# switch; switch, link, cable and transceiver counts; bisection bandwidth; the per-GPU all-reduce
# bandwidth the training engine reads. Counting rules: Al-Fares et al. 2008 and NVIDIA's DGX SuperPOD
# reference architectures (see `docs/topology.md`).

# %% tags=["parameters"]
scenario_path = "../gpucluster_lib/data/scenarios/llama3-70b-512-h100.yaml"

# %%
from gpucluster_lib import design
from gpucluster_lib.ui import tab_topology
from gpucluster_lib.ui.common import AppState

d = design(scenario_path)
state = AppState.from_design(d)  # the panel reads this same design
tab_topology.build(state)

# %% [markdown]
# ## The compute fabric for this scenario and for 128 and 1,024 nodes of the same design

# %%
import pandas as pd

from gpucluster_lib.network.topology import design_topology

fabrics = [d.network] + [design_topology(d.scenario, d.catalog, nodes=n, hardware=d.hardware)
                         for n in (128, 1024) if n != d.hardware.nodes]
rows = []
for net in fabrics:
    rows.append({"nodes": net.nodes, "tiers": net.tiers, **net.switches, **net.links,
                 "bisection [Tb/s]": net.bisection_bandwidth_gbps / 1000,
                 "per-GPU all-reduce [Gb/s]": net.per_gpu_allreduce_gbps,
                 "network power [kW]": round(net.network_power_w / 1000, 1)})
pd.DataFrame(rows).set_index("nodes")

# %% [markdown]
# ## Key figures
#
# From the scenario's design: the same numbers as the app, `gpucluster topology SCENARIO.yaml` and the
# report. The switch count covers every network (compute, storage and management).

# %%
from gpucluster_lib.formatting import format_value

summary = d.summary()
pd.DataFrame([{"figure": summary[k]["label"], "value": format_value(summary[k]["value"]), "unit": summary[k]["unit"]}
              for k in ("nodes", "gpus", "switches")]).set_index("figure")
