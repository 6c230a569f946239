"""Generate the foundation notebooks (hardware picker, app, report) with stable cell ids.

    python scripts/make_notebooks.py && python scripts/execute_notebooks.py notebooks/01_hardware.ipynb ...
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from nbgen import code, md, write  # noqa: E402

NB = Path(__file__).resolve().parent.parent / "notebooks"

write(NB / "01_hardware.ipynb", [
    md("""
# 1 · Hardware picker

Filter the sourced accelerator catalogue (`data/accelerators.csv`) by memory, precision, vendor,
form factor and budget; rank by peak, efficiency or price; inspect one part with its datasheet
source and see the catalogue servers that carry it. All peaks are **dense** (never the 2:4-sparsity
headline); prices are indicative estimates with their source, overridable in the scenario
(`costs.prices`).
"""),
    code('scenario_path = "../data/scenarios/reference-8x-a100.yaml"', tags=["parameters"]),
    code("""
import ipywidgets as widgets
from gpucluster_lib.ui import tab_hardware
from gpucluster_lib.ui.common import AppState, style_widget

state = AppState.from_path(scenario_path)
widgets.VBox([style_widget(), tab_hardware.build(state)])
"""),
    md("""
## The same ranking, without widgets

The ten accelerators with at least 80 GiB of memory, ranked by dense BF16 peak
(`gpucluster_lib.hardware.picker.pick`); this table is what the regression test compares.
"""),
    code("""
from gpucluster_lib.hardware.picker import SUMMARY_COLUMNS, PickerFilter, pick

pick(state.catalog, PickerFilter(precision="bf16", min_memory_gib=80))[SUMMARY_COLUMNS].head(10)
"""),
    md("## Servers that carry the scenario's accelerator"),
    code("""
from gpucluster_lib.hardware.resolve import resolve_hardware
from gpucluster_lib.hardware.picker import servers_for

hw = resolve_hardware(state.scenario, state.catalog)
servers_for(state.catalog, hw.accelerator_id)[["id", "fit", "gpu_count", "cpu_id", "rack_units", "max_power_w", "psu_redundancy"]]
"""),
])

write(NB / "app.ipynb", [
    md("""
# GPU Cluster Design Workbook

Pick an example scenario or upload your own YAML, then walk through the tabs: hardware, power and
space, training time, network, inference, reliability and cost. Download the scenario you built as
YAML to run it again with `gpucluster` or as a batch report.
"""),
    code("""
from gpucluster_lib.ui.app import build_app

build_app()
"""),
])

write(NB / "report.ipynb", [
    code('scenario_path = "../data/scenarios/reference-8x-a100.yaml"', tags=["parameters"]),
    code("""
import altair as alt
from IPython.display import HTML, display

from gpucluster_lib import load_scenario
from gpucluster_lib.report.render import key_figures_html, report_header_html, report_sections, section_html

alt.renderers.enable("svg")  # static, deterministic, offline
scenario = load_scenario(scenario_path)
sections = report_sections(scenario)
display(HTML(report_header_html(scenario)))
display(HTML(key_figures_html(sections)))
"""),
    code("""
for section in sections:
    display(HTML(section_html(section)))
    for chart in section.charts:
        display(chart)
"""),
])
print("written")
