# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% tags=["parameters"]
# a folder written by `gpucluster sweep SWEEP.yaml -o OUTDIR`; empty: run the shipped sweep below first
results_dir = ""
sweep_file = "hall-2mw"

# %%
import html

import altair as alt
from IPython.display import HTML, display

from gpucluster_lib.report.style import STYLE
from gpucluster_lib.report.sweep import findings_section, sweep_sections

alt.renderers.enable("svg")  # static, deterministic, offline
if not results_dir:
    import tempfile

    from gpucluster_lib.explore.sweep import load_sweep, run_sweep

    results_dir = tempfile.mkdtemp(prefix="sweep-")
    run_sweep(load_sweep(sweep_file), results_dir)
report = sweep_sections(results_dir)
display(HTML(f"{STYLE}<h1>{html.escape(report.title)}</h1>{report.summary_html}{findings_section(report)}"))

# %%
for title, body, charts in report.sections:
    display(HTML(f"<h2>{html.escape(title)}</h2>{body}"))
    for chart in charts:
        display(chart)
