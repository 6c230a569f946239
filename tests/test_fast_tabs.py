"""The Hardware and Inference tabs' fast paths show what the slow ones showed.

Each chart's layout is compiled once and only its data (and titles, scales) filled in per
change; these tests check the filled spec against altair's own compile of the same chart, and
that the tabs' cached parts (the accelerator comparison, the inspected part's servers) follow
every change and recover after an error.
"""

from __future__ import annotations

import copy
import json
import re

import pandas as pd
import pytest

from gpucluster_lib.catalog import load_catalog
from gpucluster_lib.charts import hardware as hcharts
from gpucluster_lib.charts import inference as icharts
from gpucluster_lib.hardware.picker import PickerFilter, pick, servers_for
from gpucluster_lib.inference.compare import compare_accelerators
from gpucluster_lib.ui.common import AppState, html_table
from tests.conftest import LLAMA3_70B

LLAMA = str(LLAMA3_70B)


def inline(spec: dict) -> dict:
    """``spec`` with its named datasets written into the layers that read them (one form for
    altair's compile, which names its data by a hash, and for a filled template)."""
    spec = copy.deepcopy(spec)
    datasets = spec.pop("datasets", {})

    def fix(node: dict) -> None:
        data = node.get("data")
        if isinstance(data, dict) and "name" in data:
            node["data"] = {"values": datasets[data["name"]]}
        for layer in node.get("layer", []):
            fix(layer)

    fix(spec)
    # altair names each chart's views afresh ("view_<hash>_1"): one name for the comparison
    return json.loads(re.sub(r"view_[0-9a-f]+_(\d+)", r"view_\1", json.dumps(spec)))


# ------------------------------------------------------------------ hardware scatter

@pytest.mark.parametrize(("precision", "flt"), [
    ("bf16", {}),
    ("int8", {}),                                    # TOP/s in the titles
    ("fp8", {"min_memory_gib": 100}),               # fewer parts: other decades and memory scale
    ("fp32", {"vendors": ("AMD",)}),
])
def test_the_filled_scatter_is_the_compiled_chart(precision, flt):
    cat = load_catalog()
    df = pick(cat, PickerFilter(precision=precision, **flt))
    vendors = tuple(sorted(set(cat.tables["accelerators"]["vendor"])))
    fast = hcharts.accelerator_scatter_spec(df, precision, highlight=df["id"].iloc[0], vendors=vendors)
    rows, key = hcharts._scatter_rows(df, df["id"].iloc[0])
    slow = hcharts._scatter(pd.DataFrame(rows), *hcharts._titles(precision), vendors, *key).to_dict()
    assert inline(fast) == inline(slow)
    unit = "TOP/s" if precision == "int8" else "TFLOP/s"
    y = fast["layer"][0]["encoding"]["y"]
    assert y["title"] == f"Dense {precision.upper()} peak [{unit}]"
    assert fast["title"] == f"Accelerators: dense {precision.upper()} peak vs memory bandwidth"
    peaks = [r["peak_tflops"] for r in fast["data"]["values"]]
    # whole decades around the shown peaks: the axis follows the filter
    assert y["scale"]["domain"][0] <= min(peaks) and max(peaks) <= y["scale"]["domain"][1]
    assert len(fast["data"]["values"]) == len(df)


def test_the_scatter_keeps_the_catalogue_values():
    df = pick(load_catalog(), PickerFilter(precision="bf16"))
    row = next(r for r in hcharts.accelerator_scatter_spec(df, "bf16")["data"]["values"] if r["id"] == "h100-sxm5-80gb")
    # H100 SXM5: 80 GiB HBM3, 3,350 GB/s, 989.4 dense BF16 TFLOP/s (NVIDIA H100 datasheet)
    assert (row["memory_gib"], row["memory_bandwidth_gb_per_s"]) == (80, 3350)
    assert row["peak_tflops"] == pytest.approx(989.4, rel=1e-3)
    assert row["label"] == "H100 SXM5 80GB" and row["picked"] is False


# ------------------------------------------------------------------ inference charts

def test_the_filled_inference_charts_are_the_compiled_charts(llama3_70b_serving):
    s, cat, est = llama3_70b_serving
    assert inline(icharts.memory_breakdown_spec(est.memory_per_gpu_bytes)) == \
        inline(icharts.memory_breakdown(est.memory_per_gpu_bytes).to_dict())
    assert inline(icharts.memory_breakdown_spec(est.memory_per_gpu_bytes, title="Other")) == \
        inline(icharts.memory_breakdown(est.memory_per_gpu_bytes, title="Other").to_dict())
    df = compare_accelerators(s, cat)
    assert inline(icharts.accelerator_comparison_spec(df)) == inline(icharts.accelerator_comparison(df).to_dict())
    assert icharts.accelerator_comparison_spec(df.head(2))["height"] == 56  # 28 px per accelerator
    for sweep in (est.sweep, est.sweep_frame()):
        assert inline(icharts.throughput_latency_spec(sweep, est.tpot_slo_s, est.batch)) == \
            inline(icharts.throughput_latency(est.sweep_frame(), est.tpot_slo_s, est.batch).to_dict())


def test_the_latency_chart_marks_the_chosen_batch_and_the_slo(llama3_70b_serving):
    _s, _cat, est = llama3_70b_serving
    spec = icharts.throughput_latency_spec(est.sweep, est.tpot_slo_s, est.batch)
    rows = spec["datasets"]["latency-sweep"]
    assert [r["batch"] for r in rows if r["chosen"]] == [est.batch]
    assert spec["datasets"]["latency-rule"][0]["label"] == "TPOT SLO 100 ms"  # 0.1 s in the scenario
    first = est.sweep[0]
    assert rows[0]["tpot_ms"] == pytest.approx(first["tpot_s"] * 1000)


# ------------------------------------------------------------------ tables

def test_html_table_reads_rows_as_iterrows_did():
    df = pd.DataFrame({"id": ["a", None], "launch_year": [2022, 2024], "gb": [1234.5, 2.0]})
    out = html_table(df, highlight=lambda r: r["id"] == "a")
    # a year as text, no separator; 1234.5 -> "1,234" (over 1,000: no decimals); a missing id -> "–"
    assert '<tr class="gc-picked"><td>a</td><td>2022</td><td class="num">1,234</td></tr>' in out
    assert '<tr><td>–</td><td>2024</td><td class="num">2</td></tr>' in out
    numeric = pd.DataFrame({"n": [3], "x": [0.5]})  # all numbers: one float row, 3 -> 3.0 -> "3"
    assert '<td class="num">3</td><td class="num">0.5</td>' in html_table(numeric)
    assert "… 1 more rows" in html_table(pd.DataFrame({"v": [1, 2]}), max_rows=1)


# ------------------------------------------------------------------ the tabs

def test_inference_comparison_follows_each_change_and_recovers_after_an_error():
    from gpucluster_lib.ui import tab_inference

    state = AppState.from_path(LLAMA)
    panel = tab_inference.InferencePanel(state)

    def shown_gpus() -> dict:
        return {r["accelerator"]: r["gpus"] for r in panel.compare.spec["data"]["values"]}

    before = shown_gpus()
    panel.rps.value = 200.0  # double the traffic: every accelerator needs about twice the GPUs
    fresh = compare_accelerators(state.scenario, state.catalog)
    assert panel.compare_table.value == html_table(fresh)
    assert shown_gpus() == {r["accelerator"]: r["gpus"] for r in fresh.to_dict("records")}
    assert shown_gpus()["h100-sxm5-80gb"] >= 2 * before["h100-sxm5-80gb"] - 8  # 8-GPU replicas round up
    table = panel.compare_table.value
    panel.vision_batch.value = 128  # not read by the comparison: the same table
    assert panel.compare_table.value == table
    tokens = panel.input_tokens.value
    panel.input_tokens.value = 10**6  # one sequence's KV cache no longer fits: nothing to compare
    assert "inference-model-does-not-fit" in panel.findings.value
    assert panel.compare_table.value == "" and panel.compare.layout.display == "none"
    panel.input_tokens.value = tokens  # back: the comparison of this scenario shows again
    assert panel.compare_table.value == table and panel.compare.layout.display != "none"


def test_hardware_tab_shows_the_inspected_parts_servers_after_each_change():
    from gpucluster_lib.ui import tab_hardware

    state = AppState.from_path(LLAMA)
    panel = tab_hardware.HardwarePanel(state)
    panel.picked.value = "h100-sxm5-80gb"
    expected = html_table(servers_for(state.catalog, "h100-sxm5-80gb")[tab_hardware.SERVER_COLUMNS])
    assert panel.servers.value == expected and "dgx-h100" in expected
    panel.min_memory.value = 80  # a filter change keeps the part and its servers
    assert panel.picked.value == "h100-sxm5-80gb" and panel.servers.value == expected
    panel.picked.value = "a100-sxm4-80gb"
    assert panel.servers.value == html_table(servers_for(state.catalog, "a100-sxm4-80gb")[tab_hardware.SERVER_COLUMNS])
    assert "dgx-a100-640gb" in panel.servers.value
    assert "<td>a100-sxm4-80gb</td>" in panel.detail.value
    spec = panel.chart.spec
    assert [r["id"] for r in spec["data"]["values"] if r["picked"]] == ["a100-sxm4-80gb"]
    assert all(r["memory_gib"] >= 80 for r in spec["data"]["values"])


# ------------------------------------------------------------------ explore

def sweep_table() -> pd.DataFrame:
    # three designs of a two-axis sweep (nodes x cooling); CapEx and facility power in their units
    return pd.DataFrame({"point": [0, 1, 2], "hardware.nodes": [64, 128, 256],
                         "facility.cooling": ["air", "liquid", "air"],
                         "cost.capex_usd": [1.0e8, 2.1e8, 3.9e8], "facility.facility_power_kw": [900.0, 1500.0, 3400.0],
                         "training.training_days": [40.0, 21.0, 11.0]})


@pytest.mark.parametrize("color", [None, "facility.cooling"])
def test_the_filled_pareto_front_is_the_compiled_chart(color):
    from gpucluster_lib.charts import explore as echarts

    labels = {"cost.capex_usd": ("CapEx", "USD"), "facility.facility_power_kw": ("Facility power", "kW"),
              "training.training_days": ("Days to train", "days")}
    extra = ["hardware.nodes", "facility.cooling"] if color else ["hardware.nodes"]
    for x, y in (("cost.capex_usd", "facility.facility_power_kw"), ("training.training_days", "cost.capex_usd")):
        kw = {"senses": {x: "min", y: "min"}, "labels": labels, "color": color, "extra": extra}
        front = [True, True, x == "training.training_days"]
        fast = echarts.pareto_spec(sweep_table(), x, y, front, **kw)
        assert inline(fast) == inline(echarts.pareto_chart(sweep_table(), x, y, front, **kw).to_dict())
        points = fast["layer"][1]
        assert points["encoding"]["x"]["title"] == f"{labels[x][0]} ({labels[x][1]}), lower is better"
        assert [r["x"] for r in fast["data"]["values"]] == list(sweep_table()[x])


def test_explore_keeps_one_chart_and_its_selection_across_figure_changes():
    from gpucluster_lib.ui import tab_explore

    state = AppState.from_path("gpucluster_lib/data/scenarios/gpt3-175b-1024-a100.yaml")
    panel = tab_explore.ExplorePanel(state)
    panel.axis1.value = "facility.pue"
    panel.values1.value = "1.2, 1.4"
    panel.axis2.value = tab_explore.NONE
    panel.run()
    chart = panel.chart
    picks = []
    panel._on_pick = lambda change: picks.append(change)  # what a click on a point reaches
    panel.y.value = "cost.capex_usd" if panel.x.value != "cost.capex_usd" else "facility.racks"
    assert panel.chart is chart  # the same widget took the new spec
    title = panel.chart.spec["layer"][1]["encoding"]["y"]["title"]
    assert title.startswith(panel._labels[panel.y.value][0])
    # the swept values (PUE 1.2 and 1.4, as typed) in the tooltip column of each point
    rows = panel.chart.spec["data"]["values"]
    assert [r["t0"] for r in rows] == [1.2, 1.4]
    assert "pick" in chart._vl_selections and list(chart.selections.traits()).count("pick") == 1


# ------------------------------------------------------------------ training

def test_training_charts_read_the_estimates_fields_without_its_table():
    from gpucluster_lib import design
    from gpucluster_lib.charts import training as tcharts

    est = design(LLAMA).training
    assert est.top_plans is not None  # an automatic plan: the estimate carries the search's table
    full = est.to_dict()
    assert tcharts._as_dict(est) == {k: full[k] for k in ("time_breakdown_s", "step_time_s", "memory_per_gpu_bytes",
                                                          "memory_capacity_bytes", "fits")}
    assert tcharts.time_breakdown_spec(est) == tcharts.time_breakdown_spec(full)
    assert tcharts.memory_spec(est) == tcharts.memory_spec(full)


def test_training_tab_table_of_plans_follows_the_design():
    from gpucluster_lib.charts.training import top_plans_frame
    from gpucluster_lib.ui import tab_training

    state = AppState.from_path(LLAMA)
    panel = tab_training.TrainingPanel(state)

    def expected() -> str:
        return html_table(top_plans_frame(state.design.training.top_plans, 10))

    assert panel.plans.value == expected() and "<td>" in panel.plans.value
    panel.tokens_b.value = panel.tokens_b.value + 100  # more tokens: more days in every row
    assert panel.plans.value == expected()
    panel.nodes.value = panel.nodes.value // 2  # half the GPUs: another search, other plans
    assert panel.plans.value == expected()
    panel.auto.value = False  # the manual plan: the table is the design's plan search
    assert panel.plans.value == html_table(top_plans_frame(state.design.plans.table, 10))


def test_a_hidden_operations_tab_catches_up_when_shown():
    from gpucluster_lib.ui import tab_operations

    state = AppState.from_path(LLAMA)
    state.shown = tab_operations.TITLE
    panel = tab_operations.OperationsPanel(state)
    state.shown = "Power & space"  # another tab on screen: the change there does not redraw this one
    before = panel.stack.value
    state.update(operations__scheduler="kubernetes")
    assert panel.scheduler.value == "slurm" and panel.stack.value == before
    state.shown = tab_operations.TITLE  # opened: the widgets and the plan are the current design's
    assert panel.scheduler.value == "kubernetes"
    assert panel.stack.value != before and "Kubernetes" in panel.stack.value
