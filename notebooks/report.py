# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% tags=["parameters"]
# relative to gpucluster_lib/report/: the template runs from there (report.ipynb ships in the package)
scenario_path = "../data/scenarios/reference-8x-a100.yaml"

# %%
import altair as alt
from IPython.display import HTML, display

from gpucluster_lib import load_scenario
from gpucluster_lib.report.render import (
    key_figures_html,
    report_header_html,
    report_sections,
    section_html,
)

alt.renderers.enable("svg")  # static, deterministic, offline
scenario = load_scenario(scenario_path)
sections = report_sections(scenario)
display(HTML(report_header_html(scenario)))
display(HTML(key_figures_html(sections)))

# %%
for section in sections:
    display(HTML(section_html(section)))
    for chart in section.charts:
        display(chart)
