"""Charts and the Reliability & cost panel, driven without a browser (through chart.to_dict())."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpucluster_lib.charts import cost as cc
from gpucluster_lib.charts import reliability as rc
from gpucluster_lib.design import Design
from gpucluster_lib.economics import cost as cost
from gpucluster_lib.reliability import core as reliability
from gpucluster_lib.scenario import load_scenario

GPT3 = Path(__file__).resolve().parent.parent / "gpucluster_lib" / "data" / "scenarios" / "gpt3-175b-1024-a100.yaml"


@pytest.fixture()
def results():
    d = Design(load_scenario(GPT3))
    return d.scenario, d.reliability, d.cost


def _values(spec):
    """All inline data rows of a (possibly layered / concatenated) vega-lite spec."""
    return [row for ds in spec.get("datasets", {}).values() for row in ds]


def test_goodput_curve_peaks_at_daly_optimum(results):
    _, r, _ = results
    curve = reliability.goodput_curve(r)
    best = max(curve, key=lambda row: row["goodput"])
    opt = next(row for row in curve if row["optimal"])
    assert opt["interval_min"] == pytest.approx(r.checkpoint_interval_s / 60)
    assert best["goodput"] == pytest.approx(opt["goodput"], abs=1e-4)  # Daly's interval is the optimum
    assert opt["goodput"] == pytest.approx(r.goodput)


def test_goodput_curve_bad_points(results):
    with pytest.raises(ValueError, match="points must be at least 2"):
        reliability.goodput_curve(results[1], points=1)


def test_days_band_chart(results):
    s, r, _ = results
    rows = reliability.scaling_table(s, node_counts=[64, 128], base=r)
    spec = rc.days_band_chart(rows, r.gpus).to_dict()
    assert len(spec["layer"]) == 4
    gpus = sorted({row["gpus"] for row in _values(spec) if "p10" in row})
    assert gpus == [512, 1024]


def test_interval_and_component_charts(results):
    _, r, _ = results
    spec = rc.interval_goodput_chart(reliability.goodput_curve(r, 11)).to_dict()
    assert spec["layer"][0]["mark"]["type"] == "line"
    comp = rc.component_chart(r).to_dict()
    per_day = {row["component"]: row["per_day"] for row in _values(comp)}
    assert per_day["gpu"] == pytest.approx(r.interruptions_per_day * 196 / 419)  # Table 5 GPU share


def test_waterfall_adds_up_to_capex_plus_opex(results):
    _, _, c = results
    df = cc.waterfall_data(c)
    assert df["end"].iloc[-1] == pytest.approx(c.capex["total"] + c.years * c.opex_per_year["total"])
    assert list(df["kind"]).count("CapEx") == 4
    cc.cost_waterfall(c).to_dict()


def test_tco_and_rent_lines(results):
    _, _, c = results
    df = cc.tco_years_data(c)
    own = df[df["option"] == "own (TCO)"]["cost"].tolist()
    assert own == pytest.approx(c.tco_by_year)
    rent1 = df[(df["option"] == "rent 24/7") & (df["year"] == 1)]["cost"].iloc[0]
    assert rent1 == pytest.approx(c.gpus * 8760 * c.rent_per_gpu_hour)
    cc.tco_over_years(c).to_dict()


def test_build_vs_rent_cross_at_break_even(results):
    _, _, c = results
    df = cc.build_vs_rent_data(c, points=3)
    rent_full = df[(df["option"] == "rent") & (df["utilization"] == 1.0)]["cost_per_year"].iloc[0]
    assert c.annualized_cost / rent_full == pytest.approx(c.break_even_utilization)
    assert len(cc.build_vs_rent(c).to_dict()["layer"]) == 2


def test_carbon_chart(results):
    _, _, c = results
    df = cc.carbon_data(c, {"france": 0.056})
    assert df.loc[df["grid"] == "france", "tonnes"].iloc[0] == pytest.approx(c.training_run_energy_mwh * 0.056)
    cc.carbon_chart(c, cost.grid_presets()).to_dict()


def test_report_sections_carry_the_charts(results):
    from gpucluster_lib.report.render import report_sections

    titles = {s.title: len(s.charts) for s in report_sections(load_scenario(GPT3))}
    # the design document: reliability draws interruptions by cause and the days-to-train band;
    # cost draws one breakdown (CapEx and OpEx by category)
    assert titles["Reliability and spares"] == 2 and titles["Cost and carbon"] == 1


def test_panel_updates_scenario_and_figures(results):
    from gpucluster_lib.ui import common
    from gpucluster_lib.ui import tab_reliability as tab

    state = common.AppState.from_path(GPT3)
    panel = tab.ReliabilityPanel(state)
    assert "Goodput" in panel.summary.value
    before = panel.summary.value
    panel.restart.value = 60
    assert state.scenario.reliability.restart_minutes == 60
    assert panel.summary.value != before
    panel.spares.value = 0
    assert "rel-too-few-spares" in panel.findings.value
    panel.years.value = 6
    assert "TCO over 6 years" in panel.summary.value
    assert panel.msg.value == ""
    assert tab.TITLE == "Reliability & cost" and tab.ORDER == 60


def test_panel_shows_error_not_traceback(results):
    from gpucluster_lib.ui import common
    from gpucluster_lib.ui import tab_reliability as tab

    state = common.AppState.from_path(GPT3)
    panel = tab.ReliabilityPanel(state)
    state.scenario = state.scenario.replace(facility__grid_region="atlantis")  # e.g. a loaded file with a typo
    assert "facility.grid_region: unknown grid region &#x27;atlantis&#x27;" in panel.msg.value


def test_panel_charts_have_independent_colours(results):
    from gpucluster_lib.ui import tab_reliability as tab

    _, r, c = results
    spec = tab.cost_spec_of(c)
    assert spec["resolve"]["scale"]["color"] == "independent"  # else the TCO/rent lines get no colour
    assert len(spec["vconcat"]) == 4
    assert tab.reliability_spec_of(r)["resolve"]["scale"]["color"] == "independent"


def test_panel_specs_carry_the_same_data_and_titles_as_the_charts(results):
    """The panel's specs are templates compiled once and filled per change: they must show what
    the chart functions show (same rows, same titles), for this design and after a change."""
    import altair as alt

    s, r, c = results
    regions = cost.grid_presets()
    for res in (c, Design(s.replace(costs__years=6, facility__energy_price_per_kwh=0.2)).cost):
        spec = cc.cost_spec(res, regions)
        alt.VConcatChart.from_dict(spec)  # a valid Vega-Lite spec
        charts = [cc.cost_waterfall(res), cc.tco_over_years(res), cc.build_vs_rent(res), cc.carbon_chart(res, regions)]
        assert [sub["title"] for sub in spec["vconcat"]] == [ch.to_dict()["title"] for ch in charts]
        assert spec["datasets"] == {k: v for ch in charts for k, v in ch.to_dict()["datasets"].items()}
    six = cc.cost_spec(Design(s.replace(costs__years=6)).cost, regions)
    assert six["vconcat"][0]["title"] == "Cost waterfall over 6 years"
    # 6 years of OpEx: the waterfall ends at CapEx + 6 x OpEx per year
    c6 = Design(s.replace(costs__years=6)).cost
    assert six["datasets"][cc.WATERFALL][-1]["end"] == pytest.approx(c6.capex["total"] + 6 * c6.opex_per_year["total"])
    rel = rc.reliability_spec(r, reliability.goodput_curve(r))
    comp = {row["component"]: row["per_day"] for row in rel["datasets"][rc.COMPONENTS]}
    assert comp["gpu"] == pytest.approx(r.interruptions_per_day * 196 / 419)  # Llama 3 Table 5 GPU share
    band = rc.days_band_spec(reliability.scaling_table(s, node_counts=[64, 128], base=r), r.gpus)
    assert [row["gpus"] for row in band["datasets"][rc.BAND]] == [512, 1024]  # 64 and 128 DGX A100 x 8
    assert band["datasets"][rc.BAND_NOW] == [{"gpus": 1024}]


def test_panel_hides_the_band_of_a_plan_that_does_not_fit():
    from gpucluster_lib.ui import tab_reliability as tab
    from gpucluster_lib.ui.common import AppState

    state = AppState.from_path(GPT3)
    panel = tab.ReliabilityPanel(state)
    assert panel.band_chart.layout.display is None and panel.band_note.value == ""
    p10 = min(row["p10"] for row in panel.band_chart.spec["datasets"][rc.BAND])
    assert p10 > 0
    # TP 8 x PP 1 x DP 128 without ZeRO: 16 B x 175e9 / 8 = 350 GB per GPU, over 80 GB (ZeRO Sec. 3)
    state.update(parallelism__pipeline=1, parallelism__data=128, parallelism__virtual_stages=1)
    assert state.design.training.fits is False
    assert panel.band_chart.layout.display == "none"
    assert "No days-to-train band: the training plan does not fit in GPU memory" in panel.band_note.value
    assert "Days to train</b> – (the training plan does not fit" in panel.summary.value
    assert panel.rel_chart.layout.display is None  # goodput and interruptions do not need the plan
    assert panel.cost_chart.layout.display is None
    from gpucluster_lib.ui.header import header_figures

    # the key figures above the tabs have no days either (they had the band's expected days before)
    assert not any(label.startswith("Days to train") for label, _ in header_figures(state.design))
    assert state.design.summary()["training_days_expected"]["value"] is None
    # back to the plan that fits (PP 8 x DP 16): the band is drawn again, the note is gone
    state.update(parallelism__pipeline=8, parallelism__data=16, parallelism__virtual_stages=2)
    assert panel.band_chart.layout.display is None and panel.band_note.value == ""
    assert min(row["p10"] for row in panel.band_chart.spec["datasets"][rc.BAND]) == pytest.approx(p10)


def test_panel_error_empties_its_numbers_and_hides_its_charts_until_fixed():
    from gpucluster_lib.ui import tab_reliability as tab
    from gpucluster_lib.ui.common import AppState

    state = AppState.from_path(GPT3)
    panel = tab.ReliabilityPanel(state)
    state.update(parallelism__pipeline=1, parallelism__data=128, parallelism__virtual_stages=1)  # no band
    assert panel.band_chart.layout.display == "none"
    state.scenario = state.scenario.replace(facility__grid_region="atlantis")  # a loaded file with a typo
    assert "unknown grid region" in panel.msg.value
    assert panel.summary.value == panel.findings.value == panel.band_note.value == ""
    assert {w.layout.display for w in (panel.band_chart, panel.rel_chart, panel.cost_chart)} == {"none"}
    panel.grid.value = "france"  # fixed on the panel: numbers back; the band stays hidden (the plan still misfits)
    assert panel.msg.value == "" and "Goodput" in panel.summary.value and "No findings" not in panel.msg.value
    assert panel.band_chart.layout.display == "none" and "does not fit" in panel.band_note.value
    assert panel.rel_chart.layout.display is None and panel.cost_chart.layout.display is None
