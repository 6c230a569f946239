"""Side-by-side comparison and the explore charts."""

from __future__ import annotations

import json

import pytest

from gpucluster_lib.charts.explore import compare_chart, compare_data, pareto_chart
from gpucluster_lib.cli import main
from gpucluster_lib.design import Design
from gpucluster_lib.errors import ScenarioError
from gpucluster_lib.explore.compare import BETTER, compare, sweep_rows
from gpucluster_lib.explore.outputs import outputs
from gpucluster_lib.explore.pareto import pareto_mask
from gpucluster_lib.explore.sweep import parse_sweep, run_sweep
from gpucluster_lib.resources import PACKAGE_DATA
from gpucluster_lib.scenario import load_scenario

HALL = PACKAGE_DATA / "sweeps" / "hall-dgx-h100.yaml"


def hall(nodes: int, name: str) -> Design:
    return Design(load_scenario(HALL).replace(hardware__nodes=nodes, name=name))


def test_two_halls_side_by_side():
    cmp = compare([hall(8, "small"), hall(16, "large")])
    rows = {r["key"]: r for r in cmp.to_dict()["rows"]}
    assert cmp.names == ["small", "large"]
    gpus = rows["hardware.gpus"]
    assert gpus["values"] == [64, 128] and gpus["deltas_pct"] == [0.0, 100.0]  # 8 x 8 and 16 x 8 GPUs: +100%
    assert gpus["best"] == [1]  # more GPUs is better
    assert rows["cost.capex_usd"]["best"] == [0]  # less CapEx is better
    assert rows["hardware.server"]["best"] == []  # no better side
    assert "training.training_days" not in rows  # no model: the figure does not apply to either
    frame = cmp.frame()
    line = frame[frame["Figure"] == "GPUs"].iloc[0]
    assert line["large"] == f"128 (+100.0%) {BETTER}" and line["small"] == "64"


def test_compare_needs_two_to_six():
    d = hall(8, "a")
    with pytest.raises(ScenarioError, match="2 to 6"):
        compare([d])
    with pytest.raises(ScenarioError, match="2 to 6"):
        compare([d] * 7)
    assert compare([d, d]).names == ["1. a", "2. a"]  # same name twice: numbered


def test_compare_sweep_points_from_cli(tmp_path, capsys):
    sw = parse_sweep({"base": str(HALL), "axes": {"hardware.nodes": [8, 24]}})
    run_sweep(sw, tmp_path)
    rows = sweep_rows(tmp_path, [0, 1])
    assert [r["name"] for r in rows] == ["point 0: 8", "point 1: 24"]
    assert main(["compare", f"{tmp_path}:0", f"{tmp_path}:1", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    gpus = next(r for r in d["rows"] if r["key"] == "hardware.gpus")
    assert gpus["values"] == [64, 192] and gpus["deltas_pct"][1] == 200.0  # 24 / 8 - 1 = +200%
    with pytest.raises(ScenarioError, match="no point 9"):
        sweep_rows(tmp_path, [9])


def test_cli_compare_two_examples(capsys):
    assert main(["compare", "reference-8x-a100", "gpt3-175b-1024-a100"]) == 0
    out = capsys.readouterr().out
    assert "GPUs" in out and "1,024 (+12700.0%)" in out  # 1024 / 8 - 1 = +12,700%


def test_pareto_chart_has_tooltips_and_a_click_selection():
    sw = parse_sweep({"base": str(HALL), "axes": {"hardware.nodes": [8, 16], "facility.pue": [1.2, 1.5]}})
    t = run_sweep(sw).table
    front = pareto_mask(t[["cost.tco_usd", "hardware.gpus"]].to_numpy(), ["min", "max"])
    labels = {o.key: (o.label, o.unit) for o in outputs()}
    spec = pareto_chart(t, "cost.tco_usd", "hardware.gpus", front, senses={"cost.tco_usd": "min",
                        "hardware.gpus": "max"}, labels=labels, extra=["facility.pue"]).to_dict()
    layer = spec["layer"][1]
    assert spec["params"][0]["name"] == "pick" and spec["params"][0]["select"]["fields"] == ["point"]
    titles = [tt["title"] for tt in layer["encoding"]["tooltip"]]
    assert titles == ["Point", "TCO (USD)", "GPUs", "Facility: PUE"]
    assert layer["encoding"]["x"]["title"] == "TCO (USD), lower is better"
    (values,) = spec["datasets"].values()
    # PUE 1.2 beats 1.5 at each size on TCO with the same GPUs: 2 of the 4 designs are on the front
    assert sorted(v["point"] for v in values if v["on_front"] == "on the front") == [0, 2]


def test_compare_chart_shares_one_axis():
    cmp = compare([hall(8, "small"), hall(16, "large")]).to_dict()
    df = compare_data(cmp, ["hardware.gpus", "cost.capex_usd"])
    gpus = df[df["figure"] == "GPUs"]
    assert list(gpus["ratio"]) == [1.0, 2.0]  # 128 / 64
    spec = compare_chart(cmp, ["hardware.gpus"]).to_dict()
    assert spec["encoding"]["x"]["field"] == "ratio"
