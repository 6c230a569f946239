"""Cost and carbon charts: cost waterfall, TCO over years, build versus rent, carbon by grid.
Functions take a ``CostResult`` (or its ``to_dict()``) and return ``alt.Chart``; :func:`cost_spec`
gives the four as one Vega-Lite spec for widget updates (the layout compiled and validated once
per currency, then only the data and the titles swapped)."""

from __future__ import annotations

from typing import Any

import altair as alt
import pandas as pd

from gpucluster_lib.charts import fill_named
from gpucluster_lib.units import HOURS_PER_YEAR

#: Named datasets of the charts.
WATERFALL, TCO_YEARS, RENT, BREAK_EVEN, CARBON = ("cost-waterfall", "cost-tco-years", "cost-rent",
                                                  "cost-break-even", "cost-carbon")


def _d(result: Any) -> dict[str, Any]:
    return result.to_dict() if hasattr(result, "to_dict") else result


def _waterfall_rows(d: dict[str, Any]) -> list[dict[str, Any]]:
    steps = [(f"CapEx {k}", v) for k, v in d["capex"].items() if k != "total"]
    steps += [(f"OpEx {k} x {d['years']} yr", v * d["years"]) for k, v in d["opex_per_year"].items() if k != "total"]
    rows, start = [], 0.0
    for i, (label, v) in enumerate(steps):
        rows.append({"order": i, "step": label, "start": start, "end": start + v, "amount": v,
                     "kind": "CapEx" if label.startswith("CapEx") else "OpEx"})
        start += v
    return rows


def waterfall_data(result: Any) -> pd.DataFrame:
    """Steps of the TCO waterfall: CapEx categories, then OpEx categories over the years."""
    return pd.DataFrame(_waterfall_rows(_d(result)))


def _waterfall(currency: str) -> alt.Chart:
    return alt.Chart(alt.Data(name=WATERFALL)).mark_bar().encode(
        x=alt.X("step:N", sort=alt.SortField("order"), title=None, axis=alt.Axis(labelAngle=-30)),
        y=alt.Y("start:Q", title=f"Cumulative cost [{currency}]"), y2="end:Q",
        color=alt.Color("kind:N", scale=alt.Scale(domain=["CapEx", "OpEx"], range=["#1f77b4", "#ff7f0e"])),
        tooltip=["step:N", alt.Tooltip("amount:Q", format=",.0f")],
    ).properties(width=520, height=280, title="Cost waterfall")


def _waterfall_title(d: dict[str, Any]) -> str:
    return f"Cost waterfall over {d['years']} years"


def cost_waterfall(result: Any) -> alt.Chart:
    """CapEx and OpEx by category, stacked as a waterfall (building counted in full)."""
    d = _d(result)
    chart = _waterfall(d["currency"]).properties(title=_waterfall_title(d))
    chart.datasets = {WATERFALL: _waterfall_rows(d)}
    return chart


def _tco_rows(d: dict[str, Any]) -> list[dict[str, Any]]:
    rent = d["build_vs_rent"]["rent_per_gpu_hour"]
    rows = []
    for year, own in enumerate(d["tco_by_year"]):
        rows.append({"year": year, "option": "own (TCO)", "cost": own})
        rows.append({"year": year, "option": "rent 24/7", "cost": d["gpus"] * HOURS_PER_YEAR * rent * year})
    return rows


def tco_years_data(result: Any) -> pd.DataFrame:
    """Cumulative own TCO and the cost of renting the same GPUs 24/7, by year."""
    return pd.DataFrame(_tco_rows(_d(result)))


def _tco(currency: str) -> alt.Chart:
    return alt.Chart(alt.Data(name=TCO_YEARS)).mark_line(point=True).encode(
        x=alt.X("year:O", title="Year"), y=alt.Y("cost:Q", title=f"Cumulative cost [{currency}]"),
        color=alt.Color("option:N", title=None), tooltip=["option:N", "year:O", alt.Tooltip("cost:Q", format=",.0f")],
    ).properties(width=520, height=260, title="TCO over the years: own versus rent")


def tco_over_years(result: Any) -> alt.Chart:
    """Cumulative TCO against renting the same number of GPUs around the clock."""
    d = _d(result)
    chart = _tco(d["currency"])
    chart.datasets = {TCO_YEARS: _tco_rows(d)}
    return chart


def _rent_rows(d: dict[str, Any], points: int = 21) -> list[dict[str, Any]]:
    rent = d["build_vs_rent"]["rent_per_gpu_hour"]
    rows = []
    for i in range(points):
        u = i / (points - 1)
        rows.append({"utilization": u, "option": "own", "cost_per_year": d["annualized_cost"]})
        rows.append({"utilization": u, "option": "rent", "cost_per_year": d["gpus"] * HOURS_PER_YEAR * u * rent})
    return rows


def build_vs_rent_data(result: Any, points: int = 21) -> pd.DataFrame:
    """Yearly cost of owning (flat) and renting (proportional to use) against utilisation."""
    return pd.DataFrame(_rent_rows(_d(result), points))


def _rent(currency: str) -> alt.LayerChart:
    lines = alt.Chart(alt.Data(name=RENT)).mark_line().encode(
        x=alt.X("utilization:Q", title="GPU utilisation", axis=alt.Axis(format="%")),
        y=alt.Y("cost_per_year:Q", title=f"Cost per year [{currency}]"),
        color=alt.Color("option:N", title=None),
        tooltip=["option:N", alt.Tooltip("utilization:Q", format=".0%"), alt.Tooltip("cost_per_year:Q", format=",.0f")])
    rule = alt.Chart(alt.Data(name=BREAK_EVEN)).mark_rule(strokeDash=[4, 4]).encode(x="utilization:Q")
    return alt.layer(lines, rule).properties(width=520, height=260, title="Build versus rent")


def _rent_title(d: dict[str, Any]) -> str:
    return f"Build versus rent (break-even at {d['build_vs_rent']['break_even_utilization']:.0%} use)"


def _break_even(d: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"utilization": min(d["build_vs_rent"]["break_even_utilization"], 1.0)}]


def build_vs_rent(result: Any) -> alt.LayerChart:
    """Build versus rent: yearly cost against utilisation; they cross at the break-even utilisation."""
    d = _d(result)
    chart = _rent(d["currency"]).properties(title=_rent_title(d))
    chart.datasets = {RENT: _rent_rows(d), BREAK_EVEN: _break_even(d)}
    return chart


def _carbon_rows(d: dict[str, Any], regions: dict[str, float]) -> list[dict[str, Any]]:
    mwh = d["training_run_energy_mwh"] if d["training_run_energy_mwh"] is not None else d["energy_mwh_per_year"]
    rows = [{"grid": "scenario", "kg_per_kwh": d["grid_kg_co2e_per_kwh"], "tonnes": mwh * d["grid_kg_co2e_per_kwh"],
             "scenario": True}]
    rows += [{"grid": k, "kg_per_kwh": v, "tonnes": mwh * v, "scenario": False} for k, v in sorted(regions.items())]
    return rows


def carbon_data(result: Any, regions: dict[str, float]) -> pd.DataFrame:
    """CO2e of the training run [t] (or of a year when no run) for the scenario's grid and presets."""
    return pd.DataFrame(_carbon_rows(_d(result), regions))


def _carbon_what(d: dict[str, Any]) -> str:
    return "training run" if d["training_run_energy_mwh"] is not None else "one year"


def _carbon(what: str) -> alt.Chart:
    return alt.Chart(alt.Data(name=CARBON)).mark_bar().encode(
        x=alt.X("tonnes:Q", title=f"CO2e of the {what} [t]"),
        y=alt.Y("grid:N", sort="-x", title=None),
        color=alt.condition("datum.scenario", alt.value("#d62728"), alt.value("#7f7f7f")),
        tooltip=["grid:N", alt.Tooltip("kg_per_kwh:Q", format=".3f"), alt.Tooltip("tonnes:Q", format=",.0f")],
    ).properties(width=520, height=260, title=f"Carbon of the {what} by grid")


def carbon_chart(result: Any, regions: dict[str, float]) -> alt.Chart:
    """Training-run CO2e on the scenario's grid and on the preset grids."""
    d = _d(result)
    chart = _carbon(_carbon_what(d))
    chart.datasets = {CARBON: _carbon_rows(d, regions)}
    return chart


def cost_panel_chart(currency: str, what: str) -> alt.VConcatChart:
    """The four cost charts one above the other (named data; titles set by :func:`cost_spec`)."""
    return alt.vconcat(_waterfall(currency), _tco(currency), _rent(currency),
                       _carbon(what)).resolve_scale(color="independent")


def cost_spec(result: Any, regions: dict[str, float]) -> dict:
    """:func:`cost_panel_chart` filled with ``result``: the waterfall, TCO over years, build versus
    rent and carbon charts as one Vega-Lite spec, validated once per currency and period kind."""
    d = _d(result)
    what = _carbon_what(d)
    spec = fill_named(("cost-panel", d["currency"], what), lambda: cost_panel_chart(d["currency"], what), {
        WATERFALL: _waterfall_rows(d), TCO_YEARS: _tco_rows(d), RENT: _rent_rows(d), BREAK_EVEN: _break_even(d),
        CARBON: _carbon_rows(d, regions)})
    charts = [dict(c) for c in spec["vconcat"]]  # copies: the template stays as compiled
    charts[0]["title"], charts[2]["title"] = _waterfall_title(d), _rent_title(d)
    spec["vconcat"] = charts
    return spec
