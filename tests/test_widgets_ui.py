"""Every input on the app's tabs is used: changing it changes the design (the scenario the tabs
share) or what the tab shows (a picker filter, a vision estimate), never nothing.

Each panel is built on the GPT-3 example; every input widget is moved to another valid value
in turn, on a fresh state, and the test records what changed.
"""

from __future__ import annotations

from pathlib import Path

import ipywidgets as widgets
import pytest

from gpucluster_lib.ui import (
    tab_hardware,
    tab_inference,
    tab_operations,
    tab_power,
    tab_reliability,
    tab_topology,
    tab_training,
)
from gpucluster_lib.ui.common import AppState

GPT3 = Path(__file__).resolve().parent.parent / "gpucluster_lib" / "data" / "scenarios" / "gpt3-175b-1024-a100.yaml"
PANELS = {
    "hardware": tab_hardware.HardwarePanel, "power": tab_power.PowerPanel, "training": tab_training.TrainingPanel,
    "network": tab_topology.TopologyPanel, "inference": tab_inference.InferencePanel,
    "reliability": tab_reliability.ReliabilityPanel, "operations": tab_operations.OperationsPanel,
}
INPUTS = (widgets.Dropdown, widgets.BoundedIntText, widgets.BoundedFloatText, widgets.FloatText, widgets.IntSlider,
          widgets.Checkbox,
          widgets.ToggleButtons, widgets.SelectMultiple)
#: inputs read by a button rather than on change (the button's own test covers them)
BY_BUTTON = {("training", "deadline")}


def _other_value(w: widgets.Widget):
    """A valid value different from the widget's current one."""
    if isinstance(w, widgets.SelectMultiple):
        return (w.options[0],) if w.value != (w.options[0],) else (w.options[-1],)
    if isinstance(w, (widgets.Dropdown, widgets.ToggleButtons)):
        values = [o[1] if isinstance(o, tuple) else o for o in w.options]
        return next(v for v in values if v != w.value)
    if isinstance(w, widgets.Checkbox):
        return not w.value
    if not hasattr(w, "min"):  # an unbounded box: the scenario's bounds check what is typed
        return w.value * 2 if w.value else 1.0
    lo, hi = w.min, w.max
    for v in (w.value * 2 if w.value else (lo + hi) / 2, w.value + (w.step or 1), w.value / 2, lo, hi):
        v = type(w.value)(v) if isinstance(w.value, int) else v
        if lo <= v <= hi and v != w.value:
            return v
    raise AssertionError(f"no other value for {w.description}")


def _outputs(panel) -> tuple:
    """Everything the panel shows: its HTML areas and chart specs."""
    out = []
    for v in vars(panel).values():
        if isinstance(v, widgets.HTML):
            out.append(v.value)
        elif hasattr(v, "spec") and isinstance(getattr(v, "spec", None), dict):
            out.append(repr(v.spec))
    return tuple(out)


def _inputs(panel) -> list[tuple[str, widgets.Widget]]:
    return [(k, v) for k, v in vars(panel).items() if isinstance(v, INPUTS) and not v.disabled]


@pytest.mark.parametrize("tab", list(PANELS))
def test_every_input_changes_the_design_or_the_view(tab):
    unused, checked = [], 0
    probe = PANELS[tab](AppState.from_path(GPT3))
    names = [k for k, _ in _inputs(probe)]
    assert names, f"no inputs found on the {tab} tab"
    for name in names:
        if (tab, name) in BY_BUTTON:
            continue
        panel = PANELS[tab](AppState.from_path(GPT3))  # each input from the example's own state
        if tab == "power" and any(w is getattr(panel, name) for w in panel.parts_box.children[0].children[0].children
                                  + panel.parts_box.children[0].children[1].children):
            panel.mode.value = "Build from parts"  # these inputs are shown (and read) in that mode only
        w = getattr(panel, name)
        if w.disabled:
            continue
        before_s, before_v = panel.state.scenario, _outputs(panel)
        w.value = _other_value(w)
        checked += 1
        if panel.state.scenario == before_s and _outputs(panel) == before_v:
            unused.append(f"{name} ({w.description})")
    assert not unused, f"{tab} tab: inputs that change neither the design nor the view: {unused}"
    assert checked >= 1
