# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 2 · Power, cooling and space
#
# From parts to racks to the hall. Pick a catalogue server or build a node from parts (chassis, GPUs,
# CPUs, memory, NICs, supplies) and see its design checks: supply capacity under the redundancy
# scheme with a 20% margin, PCIe slots and lanes, the RAM floor, network ports, cooling and form
# factor. Then set the node count and the rack and facility limits: nodes per rack and the limit that
# binds first (space, power, cooling density or weight), the elevation of a representative rack, the
# power breakdown with the cooling overhead through the PUE, the hall totals (IT and facility power,
# heat in BTU/h and tons, airflow, floor area, UPS and generator, annual energy and cost) and how
# racks and megawatts grow with the node count. Installed hot-spare nodes take rack space and power.
#
# Peak power sizes supplies, racks, cooling and UPS; typical power (measured H100 nodes run at 76-82%
# of their rating) gives the energy. Every assumption that is not a catalogue value is in
# `gpucluster_lib/hardware/power_assumptions.py` with its source.

# %% tags=["parameters"]
scenario_path = "../gpucluster_lib/data/scenarios/reference-8x-a100.yaml"

# %%
import ipywidgets as widgets

from gpucluster_lib import design
from gpucluster_lib.ui import tab_power
from gpucluster_lib.ui.common import AppState, style_widget

d = design(scenario_path)
state = AppState.from_design(d)  # the panel reads this same design
widgets.VBox([style_widget(), tab_power.build(state)])

# %% [markdown]
# ## The node and the hall in detail
#
# The design's facility stage. The node's component estimate is shown beside the vendor maximum where
# the catalogue has one.

# %%
import pandas as pd

b = d.facility
hall_keys = ["nodes_installed", "nodes_per_rack", "binding_constraint", "compute_racks", "infra_racks",
             "rack_units_used", "network_source", "heat_load_btu_per_h", "cooling_tons", "airflow_cfm",
             "ups_kw", "generator_kva", "annual_energy_mwh", "annual_energy_cost"]
facts = b.to_dict()
node = pd.Series({k: facts["node"][k] for k in ("peak_power_w", "typical_power_w", "component_peak_w",
                                                "psu_usable_w", "rack_units")}, name="node")
hall = pd.Series({k: facts[k] for k in hall_keys}, name="hall")
pd.concat([node, hall]).to_frame("value")

# %% [markdown]
# ## Node power by component (W)

# %%
pd.DataFrame([{"part": c.label, "detail": c.detail, "peak_w": round(c.peak_w, 1), "typical_w": round(c.typical_w, 1)}
              for c in b.node.components])

# %% [markdown]
# ## Key figures
#
# From the scenario's design: the same numbers as the app, `gpucluster budget SCENARIO.yaml` and the
# report.

# %%
from gpucluster_lib.formatting import format_value

summary = d.summary()
pd.DataFrame([{"figure": summary[k]["label"], "value": format_value(summary[k]["value"]), "unit": summary[k]["unit"]}
              for k in ("nodes", "spare_nodes", "racks", "it_power_kw", "facility_power_kw", "floor_area_m2")]
             ).set_index("figure")

# %% [markdown]
# ## A SuperPOD-scale hall: 140 DGX A100
#
# NVIDIA's DGX SuperPOD A100 reference architecture (RA-09950-001) has 7 scalable units of 20
# DGX A100 (1,120 GPUs) on an HDR InfiniBand fat tree. The design of the same hall for 140 nodes at
# 6.5 kW (DGX A100 User Guide), 30 kW racks, air cooling and PUE 1.3, hot spares included:

# %%
from gpucluster_lib.scenario import from_dict

pod = from_dict({
    "hardware": {"server": "dgx-a100-640gb", "nodes": 140, "head_nodes": 2},
    "network": {"topology": "fat-tree", "switch": "qm8790", "nic": "connectx-6-hdr", "nics_per_node": 8},
    "facility": {"rack_units": 42, "rack_power_limit_kw": 30, "cooling": "air", "pue": 1.3,
                 "energy_price_per_kwh": 0.10, "power_redundancy": "N+1"},
})
p = design(pod, d.catalog).facility.to_dict()
pod_keys = ["nodes", "spare_nodes", "racks", "it_power_kw", "facility_power_kw", "floor_area_m2", *hall_keys,
            "network_power_w", "storage_power_w"]
pd.Series({k: p[k] for k in pod_keys}, name="140x DGX A100").to_frame()
