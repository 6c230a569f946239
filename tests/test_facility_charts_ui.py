"""Charts (through their Vega-Lite dicts) and the Power & space panel without a browser."""

from __future__ import annotations

import pytest

from gpucluster_lib.catalog import load_catalog
from gpucluster_lib.charts import facility as charts
from gpucluster_lib.facility.site import budget, default_node_counts, growth_table
from gpucluster_lib.scenario import load_scenario

REF = "gpucluster_lib/data/scenarios/reference-8x-a100.yaml"


@pytest.fixture(scope="module")
def ref():
    s = load_scenario(REF)
    return s, budget(s, load_catalog())


def test_elevation_chart(ref):
    _, b = ref
    d = charts.rack_elevation(b).to_dict()
    rows = d["datasets"]["elevation"]
    # bottom up: the 4U node (U 0-4), then the network the topology module designs for one node
    # (QM8700 1U fabric switch + SN2700 1U management switch = 2U, switches.csv), the 1U head node,
    # 33U empty, patch panel at U 41 and the rack's reserved management-switch slot at U 42
    assert [(r["kind"], r["u0"], r["u1"]) for r in rows] == [
        ("node", 0, 4), ("switch", 4, 6), ("head", 6, 7), ("empty", 7, 40), ("patch", 40, 41), ("switch", 41, 42)]
    assert d["layer"][0]["encoding"]["y"]["scale"]["domain"] == [0, 42]
    assert "limit: power" in d["title"]


def test_breakdown_chart_sums_to_facility_power(ref):
    _, b = ref
    d = charts.power_breakdown(b).to_dict()
    rows = {r["part"]: r["kw"] for r in d["datasets"]["breakdown"]}
    assert sum(rows.values()) == pytest.approx(b.facility_power_kw, abs=0.01)
    # cooling overhead through the PUE: (1.5 - 1) x IT, IT = node 6.5 + QM8700 0.7 + SN2700 0.233
    # (switches.csv max power) + head node 0.75 = 8.183 kW
    assert rows["Cooling & power overhead (PUE)"] == pytest.approx(0.5 * (6.5 + 0.7 + 0.233 + 0.75), abs=1e-3)
    assert rows["Head nodes"] == pytest.approx(0.75)


def test_growth_chart(ref):
    s, b = ref
    df = growth_table(b, default_node_counts(b.nodes), s)
    d = charts.growth(df, b.nodes).to_dict()
    assert d["datasets"]["current"] == [{"nodes": 1}]
    assert len(d["datasets"]["growth"]) == len(df) and d["datasets"]["growth"][0]["racks"] == 1
    assert len(d["hconcat"]) == 2


def test_panel_updates_scenario_and_results():
    from gpucluster_lib.ui import tab_power
    from gpucluster_lib.ui.common import AppState

    state = AppState.from_path(REF)
    p = tab_power.PowerPanel(state)
    assert "limited by power" in p.summary.value and p.msg.value == ""
    p.nodes.value = 140
    assert state.scenario.hardware.nodes == 140 and p.budget.nodes == 140
    assert "140 / 1,120" in p.totals.value
    p.pue.value = 0.9  # bad input: a message naming the field, no exception
    assert "facility.pue" in p.msg.value and "at least 1" in p.msg.value
    p.pue.value = 1.3
    assert p.msg.value == ""
    p.mode.value = "Build from parts"
    assert state.scenario.hardware.accelerator == "a100-sxm4-80gb" and state.scenario.hardware.parts is not None
    p.psu_count.value, p.psu_spares.value = 2, "one (N+1)"  # 1+1 x 3000 W for an 8x A100 node
    assert "node-psu-capacity" in p.findings.value and "error" in p.findings.value
    p.rack.value = "custom"
    p.rack_custom.value = 3  # shorter than the 4U generic HGX chassis
    assert "shorter than one 4U node" in p.msg.value


def _shown(p) -> dict[str, str]:
    """What the panel shows: the text of its HTML outputs, and which charts are visible."""
    import ipywidgets as widgets

    return {str(i): (w.value if isinstance(w, widgets.HTML) else ("hidden" if w.layout.display == "none" else "shown"))
            for i, w in enumerate(p.outputs)}


def test_panel_errors_empty_old_numbers_and_it_recovers():
    from gpucluster_lib.ui import tab_power
    from gpucluster_lib.ui.common import AppState

    state = AppState.from_path(REF)
    p = tab_power.PowerPanel(state)
    assert len(p.outputs) == 7 and set(_shown(p).values()) >= {"shown"}
    # IT 8.183 kW (node 6.5 + QM8700 0.7 + SN2700 0.233 + head node 0.75, see above) x PUE 1.5 = 12.27 kW
    assert "12.3" in p.totals.value and "node-psu-capacity" in p.findings.value
    assert "1 node + 0 hot spares in 1 rack," in p.summary.value  # the reference design: one node, one rack
    # money with its currency (costs.currency, USD by default): about 83.0 MWh a year x 0.12 USD/kWh
    assert "9,958</td><td>USD per year" in p.totals.value and p.price.description == "Energy [USD/kWh]"
    for bad, message in [(lambda: setattr(p.pue, "value", 0.9), "at least 1"),  # refused by the scenario
                         (lambda: (setattr(p.rack, "value", "custom"), setattr(p.rack_custom, "value", 3)),
                          "shorter than one 4U node")]:  # accepted, but the budget cannot place a node
        bad()
        assert message in p.msg.value
        # every table and finding emptied, every chart hidden: nothing of the last good design
        assert all(v in ("", "hidden") for v in _shown(p).values()), _shown(p)
        assert "No hall findings" not in p.msg.value and "pass" not in p.msg.value
        p.pue.value, p.rack.value = 1.3, "42U"  # valid again: the tab shows the new design
        assert p.msg.value == "" and all(v not in ("", "hidden") for v in _shown(p).values())
        assert "10.6" in p.totals.value  # 8.183 kW x PUE 1.3 = 10.64 kW

    # a change made elsewhere (another tab) that the budget rejects, then undone
    state.update(facility__rack_units=2)
    assert "shorter than one 4U node" in p.msg.value and p.totals.value == "" and p.elevation.layout.display == "none"
    state.update(facility__rack_units=48)
    assert p.msg.value == "" and p.elevation.layout.display != "none" and "10.6" in p.totals.value
    assert p.rack.value == "48U"
