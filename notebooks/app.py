# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # GPU Cluster Design Workbook
#
# Pick an example scenario or upload your own YAML, then walk through the tabs: hardware, power and
# space, training time, network, inference, reliability and cost. Download the scenario you built as
# YAML to run it again with `gpucluster` or as a batch report.

# %%
from gpucluster_lib.ui.app import build_app

build_app()
