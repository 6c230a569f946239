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
# catalogue CSVs outside the scenario's folder may be read only with `gpucluster report --allow-paths`
allow_paths = False

# %%
# The design document of one scenario: every part reads the same design's stages, and the
# charts are SVG rendered by vl-convert (static, deterministic, vectors in the PDF).
from IPython.display import HTML, display

from gpucluster_lib import design
from gpucluster_lib.report.render import (
    report_header_html,
    report_sections,
    report_tail_html,
    section_html,
)
from gpucluster_lib.scenario import load_scenario

d = design(load_scenario(scenario_path, allow_paths=allow_paths))
sections = report_sections(d)
display(HTML(report_header_html(d)))

# %%
for section in sections:
    display(HTML(section_html(section)))
display(HTML(report_tail_html(sections)))
