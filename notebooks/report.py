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

from gpucluster_lib import design
from gpucluster_lib.report.render import (
    key_figures_html,
    report_header_html,
    report_sections,
    section_html,
)

alt.renderers.enable("svg")  # static, deterministic, offline
d = design(scenario_path)  # one design: every section and the key figures read its stages
sections = report_sections(d)
display(HTML(report_header_html(d)))
display(HTML(key_figures_html(sections)))

# %%
for section in sections:
    display(HTML(section_html(section)))
    for chart in section.charts:
        display(chart)
