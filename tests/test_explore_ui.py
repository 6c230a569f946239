"""The Explore tab without a browser: run a sweep, see the front, load a point, fit."""

from __future__ import annotations

import pytest

from gpucluster_lib.errors import ScenarioError
from gpucluster_lib.resources import PACKAGE_DATA
from gpucluster_lib.ui.common import AppState
from gpucluster_lib.ui.tab_explore import ExplorePanel, parse_values

HALL = PACKAGE_DATA / "sweeps" / "hall-dgx-h100.yaml"


@pytest.fixture
def panel():
    return ExplorePanel(AppState.from_path(HALL))


def test_parse_values():
    assert parse_values("16, 32,64", "v") == [16, 32, 64]
    assert parse_values("1.1, air", "v") == [1.1, "air"]
    with pytest.raises(ScenarioError, match="at least one value"):
        parse_values(" , ", "Values of the first axis")


def test_defaults_around_the_scenario(panel):
    assert panel.values1.value == "16, 32, 48, 64"  # the hall's 32 nodes: half, itself, 1.5x, 2x


def test_run_shows_the_front_and_loads_a_point(panel):
    panel.values1.value = "8, 16"
    panel.values2.value = "1.2, 1.5"
    panel.max_racks.value = 100
    panel.x.value, panel.y.value = "cost.tco_usd", "hardware.gpus"
    r = panel.run()
    assert len(r.table) == 4 and panel.progress.value == 4
    # TCO against GPUs: at each size PUE 1.2 costs less energy for the same GPUs, so it alone is on the front
    assert sorted(panel.front["point"]) == [0, 2]
    assert "4 designs" in panel.summary.value and "2 on the front" in panel.summary.value
    assert panel.chart is not None and [v for _, v in panel.pick.options] == [0, 2]
    panel.load_button.click()  # the first design of the front
    assert panel.state.scenario.hardware.nodes == 8 and "point 0" in panel.state.scenario.name
    panel._on_pick({"new": type("Sel", (), {"value": [{"point": 2}]})()})  # a click on point 2
    s = panel.state.scenario
    assert (s.hardware.nodes, s.facility.pue) == (16, 1.2)
    assert panel.state.design.hardware.gpus == 128  # 16 DGX H100 x 8


def test_bad_input_is_a_message_not_a_crash(panel):
    panel.values1.value = "8, -4"
    panel.run_button.click()
    assert "must be a positive integer" in panel.msg.value and "Traceback" not in panel.msg.value
    panel.max_kw.value = 0
    panel.fit_button.click()
    assert "set at least one limit" in panel.msg.value


def test_fit_loads_the_largest_design(panel):
    panel.max_kw.value = 2000
    panel.max_racks.value = 40
    panel.fit()
    # the 40 kW racks of this hall hold 3 DGX H100 each; 110 nodes + 4 spares fill 38 + 2 racks
    # (worked in tests/test_explore_fit.py)
    assert panel.state.scenario.hardware.nodes == 110
    assert "110 nodes, 880 GPUs" in panel.summary.value
