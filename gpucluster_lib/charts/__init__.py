"""Chart functions: each returns an ``alt.Chart`` built from result data (no widgets, no IO).

Rendering is the caller's choice: the widgets wrap charts in an offline
``alt.JupyterChart``; reports and nbval use the deterministic ``svg`` renderer.
"""

from __future__ import annotations

import altair as alt

#: One palette for vendors/roles so colours mean the same in every chart.
VENDOR_COLOURS = {"NVIDIA": "#76b900", "AMD": "#ed1c24", "Google": "#4285f4", "Intel": "#0071c5"}


def vendor_scale(vendors: list[str]) -> alt.Scale:
    domain = sorted(set(vendors))
    fallback = ["#7f7f7f", "#9467bd", "#8c564b", "#e377c2"]
    rng = [VENDOR_COLOURS.get(v.split()[0], fallback[i % len(fallback)]) for i, v in enumerate(domain)]
    return alt.Scale(domain=domain, range=rng)
