"""The Network tab in process: an error empties the numbers it invalidates and hides the charts,
never leaving "no findings" or the old figures beside it; the next valid design shows them again."""

from __future__ import annotations

from pathlib import Path

from gpucluster_lib.charts import topology as charts
from gpucluster_lib.ui import tab_topology as tab
from gpucluster_lib.ui.common import AppState

GPT3 = Path(__file__).resolve().parent.parent / "gpucluster_lib" / "data" / "scenarios" / "gpt3-175b-1024-a100.yaml"


def _panel():
    state = AppState.from_path(GPT3)
    return state, tab.TopologyPanel(state)


def test_the_panel_shows_the_fabric_of_the_design():
    state, panel = _panel()
    d = state.design.network
    # 128 DGX A100 x 8 HDR ports = 1,024 endpoints on 40-port QM8700 switches; a non-blocking
    # two-tier fat tree of k-port switches holds k^2/2 = 800 endpoints (Al-Fares 2008): three tiers
    assert d.endpoints == 1024 and d.tiers == 3
    assert "1,024 endpoints at 200 Gb/s" in panel.summary.value
    assert panel.findings.value and panel.counts.value and panel.cables.value
    assert panel.chart.spec["datasets"] == charts.topology_spec(d)["datasets"]
    growth = {row["nodes"]: row for row in panel.growth.spec["datasets"]["growth"]}
    assert sorted(growth) == tab.GROWTH_NODES and growth[128]["switches"] == sum(d.switches.values())


def test_an_error_empties_the_numbers_and_hides_the_charts_until_the_design_is_valid():
    state, panel = _panel()
    state.update(network__nics_per_node=1)  # one fabric port per node: fine on a fat tree
    assert panel.msg.value == "" and "128 endpoints" in panel.summary.value  # 128 nodes x 1 port
    panel.topology.value = "ring"  # a ring needs a port to each neighbour: refused
    assert "a ring needs at least 2 fabric ports per node" in panel.msg.value
    assert panel.summary.value == panel.findings.value == panel.counts.value == panel.cables.value == ""
    assert panel.chart.layout.display == "none" and panel.growth.layout.display == "none"
    assert "The design holds the cluster" not in panel.findings.value
    assert state.scenario.network.topology == "fat-tree"  # the refused edit is not committed
    panel.topology.value = "fat-tree"  # back to a valid design: numbers and charts return
    assert panel.msg.value == ""
    assert "1,024 endpoints" not in panel.summary.value and "128 endpoints" in panel.summary.value  # 128 x 1 port
    assert panel.counts.value and panel.cables.value and panel.findings.value
    assert panel.chart.layout.display is None and panel.growth.layout.display is None


def test_an_invalid_scenario_from_another_tab_clears_the_panel_too():
    state, panel = _panel()
    state.scenario = state.scenario.replace(network__topology="ring", network__nics_per_node=1)
    assert "a ring needs at least 2 fabric ports per node" in panel.msg.value
    assert panel.summary.value == panel.counts.value == panel.cables.value == panel.findings.value == ""
    assert panel.chart.layout.display == "none"
    state.scenario = state.scenario.replace(network__topology="fat-tree", network__nics_per_node=8)
    assert panel.msg.value == "" and "1,024 endpoints at 200 Gb/s" in panel.summary.value
    assert panel.chart.layout.display is None


def test_the_growth_chart_is_not_redrawn_for_a_node_count_change():
    state, panel = _panel()
    before = panel.growth.spec
    panel.nodes.value = 64
    assert state.design.hardware.nodes == 64 and "512 endpoints" in panel.summary.value  # 64 x 8 ports
    assert panel.growth.spec is before  # switches against nodes: the same chart for any node count
    panel.oversub.value = 2.0
    assert panel.growth.spec is not before


def test_a_tab_built_on_an_invalid_design_shows_the_error_beside_its_inputs():
    state = AppState.from_path(GPT3)
    state.scenario = state.scenario.replace(network__topology="ring", network__nics_per_node=1)
    panel = tab.TopologyPanel(state)  # the app builds a tab when it is first opened
    assert "a ring needs at least 2 fabric ports per node" in panel.msg.value
    assert panel.topology.value == "ring" and panel.summary.value == ""
    assert panel.chart.layout.display == "none"
    panel.topology.value = "fat-tree"  # fixed on the tab itself
    assert panel.msg.value == "" and "128 endpoints" in panel.summary.value  # 128 nodes x 1 port
    assert panel.chart.layout.display is None and state.scenario.network.topology == "fat-tree"
