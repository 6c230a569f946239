"""Generate notebooks/04_topology.ipynb (fixed cell ids, so regenerating gives clean diffs)."""

from pathlib import Path

import nbformat

cells = [
    nbformat.v4.new_markdown_cell(
        "# 04 Network topology\n\n"
        "How the nodes are wired: fat tree / leaf-spine, rail-optimised scalable units, tree, ring or one "
        "switch; switch, link, cable and transceiver counts; bisection bandwidth; the per-GPU all-reduce "
        "bandwidth the training engine reads (`hardware.fabric_gbps_per_gpu`). Counting rules: "
        "Al-Fares et al. 2008 and NVIDIA's DGX SuperPOD reference architectures (see `docs/topology.md`)."),
    nbformat.v4.new_code_cell('scenario_path = "../data/scenarios/llama3-70b-512-h100.yaml"'),
    nbformat.v4.new_code_cell(
        "from gpucluster_lib.ui import tab_topology\n"
        "from gpucluster_lib.ui.common import AppState\n\n"
        "state = AppState.from_path(scenario_path)\n"
        "tab_topology.build(state)"),
    nbformat.v4.new_markdown_cell("## Counts for this scenario and for 128 and 1,024 nodes of the same design"),
    nbformat.v4.new_code_cell(
        "import pandas as pd\n"
        "from gpucluster_lib.network.topology import design_topology\n\n"
        "rows = []\n"
        "for n in (state.scenario.hardware.nodes, 128, 1024):\n"
        "    d = design_topology(state.scenario, state.catalog, nodes=n)\n"
        "    rows.append({'nodes': n, 'tiers': d.tiers, **d.switches, **d.links,\n"
        "                 'bisection [Tb/s]': d.bisection_bandwidth_gbps / 1000,\n"
        "                 'per-GPU all-reduce [Gb/s]': d.per_gpu_allreduce_gbps,\n"
        "                 'network power [kW]': round(d.network_power_w / 1000, 1)})\n"
        "pd.DataFrame(rows).set_index('nodes')"),
]
cells[1].metadata["tags"] = ["parameters"]
for i, c in enumerate(cells):
    c["id"] = f"cell-{i:02d}"
nb = nbformat.v4.new_notebook(cells=cells, metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                                    "language": "python"}})
Path(__file__).resolve().parent.parent.joinpath("notebooks", "04_topology.ipynb").write_text(nbformat.writes(nb))
