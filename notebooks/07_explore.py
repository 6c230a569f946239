# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 7 · Explore: sweeps, fits, Pareto fronts and comparisons
#
# The questions people bring are inverse and comparative: *how many DGX H100 fit a hall of 2 MW
# and 40 racks of 40 kW air?*, *what does each extra megawatt buy?*, *H100 or H200 for the same
# hall?* Each answer below is many forward designs of one base scenario, every one a
# `gpucluster_lib.design(...)` computed in process; stages with equal inputs are shared between
# the designs (a sweep over the PUE designs the network once).
#
# The same from the command line: `gpucluster sweep hall-2mw -o out/hall`,
# `gpucluster fit hall.yaml --max-facility-kw 2000 --max-racks 40 --rack-kw 40 --cooling air`,
# `gpucluster compare out/hall:3 out/hall:35`. See docs/explore.md.

# %% tags=["parameters"]
sweep_file = "hall-2mw"  # a sweep YAML file, or the name of a shipped sweep (gpucluster_lib/data/sweeps/)

# %%
import altair as alt
import pandas as pd

from gpucluster_lib.explore.outputs import outputs
from gpucluster_lib.explore.sweep import load_sweep, run_sweep

alt.renderers.enable("svg")  # static, deterministic, offline
sweep = load_sweep(sweep_file)
labels = {o.key: (o.label, o.unit) for o in outputs(sweep.currency)}
pd.DataFrame({"axis": list(sweep.keys), "values": [", ".join(map(str, a.values)) for a in sweep.axes]})

# %% [markdown]
# ## The sweep
#
# One row per point: the axis values, whether the design worked out (`status`), whether it is inside
# the limits (`feasible`), and every result column with its unit in the name. In a terminal,
# `gpucluster sweep` runs the same on a process pool (`--workers N`) or Dask (`--dask-local N`,
# `--scheduler tcp://HOST:PORT`) with identical rows, and writes them to `results.csv` and
# `results.parquet`.

# %%
result = run_sweep(sweep)
summary = result.summary()
pd.Series({k: summary[k] for k in ("points", "ok", "failed", "feasible")} |
          {"limits": "; ".join(summary["constraints"]), "front": len(summary["pareto"])}).to_frame("sweep")

# %%
table = result.table
cols = ["point", *sweep.keys, "feasible", "facility.racks", "facility.facility_power_kw", "cost.capex_usd",
        "hardware.gpus"]
table[cols].head(12)

# %% [markdown]
# ## The Pareto front
#
# Among the designs inside the limits, those that no other design beats on both objectives (here
# less CapEx and more GPUs). In the chart every feasible design is a point, the front is joined by a
# line, and the tooltips give each point's values.

# %%
from gpucluster_lib.charts.explore import pareto_chart

front = result.pareto()
feasible = result.feasible
x, y = list(sweep.objectives)
pareto_chart(feasible, x, y, feasible["point"].isin(front["point"]).tolist(), senses=sweep.objectives,
             labels=labels, color="hardware.server", extra=list(sweep.keys))

# %%
front[["point", *sweep.keys, x, y, "facility.racks", "facility.facility_power_kw"]]

# %% [markdown]
# ## Inverse design: the largest design inside the hall
#
# `fit` enumerates node counts (in whole scalable units where the fabric has them), designs each, and
# keeps the largest inside every limit; the binding constraint is the one the next larger design
# breaks. The 40 kW racks hold three DGX H100 (10.2 kW each); the hall takes 110 nodes and 4 hot
# spares in 38 compute racks plus the network and storage racks: 40 racks, the binding limit, at
# 1.6 MW. With 1 MW instead, power binds first.

# %%
from gpucluster_lib.explore.solve import Limits, fit, fit_scenario

base = fit_scenario(sweep.base, rack_kw=40, cooling="air")
rows = []
for mw in (2.0, 1.0):
    r = fit(base, Limits(max_facility_kw=mw * 1000, max_racks=40)).to_dict()
    rows.append({"limit": f"{mw:g} MW, 40 racks", "nodes": r["nodes"], "GPUs": r["gpus"], "racks": r["racks"],
                 "facility kW": round(r["facility_power_kw"]), "CapEx (USD)": round(r["capex"]),
                 "binds": r["binding_constraint"], "next": f"{r['next']['nodes']} nodes break "
                 + ", ".join(r["next"]["breaks"] or [])})
pd.DataFrame(rows)

# %% [markdown]
# ## Side by side: H100 or H200 at the same size
#
# Two points of the sweep compared: each figure's value, the change against the first design and a
# mark on the better value; the chart puts the figures on one shared axis, relative to the first design.

# %%
from gpucluster_lib.charts.explore import compare_chart
from gpucluster_lib.explore.compare import compare

pick = table[(table["hardware.nodes"] == 64) & (table["status"] == "ok")]
cmp = compare([row.to_dict() | {"name": f"{row['hardware.server']}, 64 nodes"} for _, row in pick.iterrows()])
cmp.frame().set_index("Figure").loc[["GPUs", "Racks", "Facility power at peak", "CapEx", "TCO",
                                     "Cost per GPU-hour"]]

# %%
compare_chart(cmp.to_dict(), ["facility.racks", "facility.facility_power_kw", "cost.capex_usd", "cost.tco_usd"])

# %% [markdown]
# ## The Explore tab
#
# The app's panel on this sweep's base scenario: pick one or two settings and limits, run, see the
# front, and load a point as the current scenario.

# %% tags=["nbval-ignore-output"]
import ipywidgets as widgets

from gpucluster_lib.ui import tab_explore
from gpucluster_lib.ui.common import AppState, style_widget

widgets.VBox([style_widget(), tab_explore.build(AppState.from_scenario(sweep.base))])
