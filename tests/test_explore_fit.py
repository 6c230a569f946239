"""Inverse design: hand-worked halls, checked by forward designs at N and at the next step."""

from __future__ import annotations

import json
import math

import pytest

from gpucluster_lib.cli import main
from gpucluster_lib.design import Design
from gpucluster_lib.errors import ScenarioError
from gpucluster_lib.explore.solve import Limits, fit, fit_scenario, step_nodes
from gpucluster_lib.resources import PACKAGE_DATA, scenario_path
from gpucluster_lib.scenario import load_scenario

HALL = PACKAGE_DATA / "sweeps" / "hall-dgx-h100.yaml"


def hall(**kw):
    return fit_scenario(load_scenario(HALL), rack_kw=40, cooling="air", **kw)


def forward(base, nodes):
    return Design(base.replace(hardware__nodes=nodes))


def test_rack_bound_hall_2mw_40_racks():
    base = hall()
    r = fit(base, Limits(max_facility_kw=2000, max_racks=40))
    assert r.step_nodes == 1  # a fat-tree has no scalable unit
    assert r.best["hardware.nodes"] == 110 and r.binding_constraint == "max-racks"
    at, nxt = forward(base, 110).facility, forward(base, 111).facility
    # by hand: a 40 kW rack holds (40,000 W - 100 W switch) // 10,200 W = 3 DGX H100 (NVIDIA DGX H100
    # datasheet: 10.2 kW max); hot spares for 880 GPUs: 880 x 321 / 884,736 GPU-days (Llama 3, Dubey et al.
    # 2024 Table 5) x 72 h / 24 h = 0.958 nodes in repair, Poisson P(X <= 3) = 0.983 < 0.99 <= P(X <= 4) = 0.997,
    # so 4 spares: 110 + 4 = 114 nodes = 38 full compute racks, plus the network and storage racks
    assert (at.rack_fit.nodes_per_rack, at.spare_nodes, at.compute_racks) == (3, 4, 38)
    assert at.racks == 38 + at.infra_racks == 40 and at.facility_power_kw <= 2000
    # one node more: 115 nodes need ceil(115 / 3) = 39 compute racks, 41 in all
    assert nxt.compute_racks == 39 and nxt.racks == 41 and nxt.facility_power_kw <= 2000
    d = r.to_dict()
    assert (d["nodes"], d["gpus"], d["racks"]) == (110, 880, 40)  # 8 GPUs per DGX H100
    assert d["next"]["nodes"] == 111 and d["next"]["breaks"] == ["max-racks"]


def test_power_bound_hall_1mw_40_racks():
    base = hall()
    r = fit(base, Limits(max_facility_kw=1000, max_racks=40))
    n = r.best["hardware.nodes"]
    assert r.binding_constraint == "max-facility-kw"
    at, nxt = forward(base, n).facility, forward(base, n + 1).facility
    assert at.facility_power_kw <= 1000 < nxt.facility_power_kw and nxt.racks <= 40
    # by hand: facility = IT x PUE 1.3 (The Green Grid WP #49)
    assert at.facility_power_kw == pytest.approx(at.it_power_kw * 1.3)
    # spares for 536 GPUs: 536 x 321 / 884,736 x 72 h / 24 h = 0.583 nodes in repair (Dubey et al. 2024
    # Table 5), Poisson P(X <= 2) = 0.978 < 0.99 <= P(X <= 3) = 0.997: 3 spares, 70 nodes installed
    assert (n, at.spare_nodes) == (67, 3)
    # IT = 70 x 10.2 kW (DGX H100 datasheet) + the switches + 2.5 kW storage + 1.5 kW head nodes
    assert at.it_power_kw == pytest.approx(70 * 10.2 + at.network_power_w / 1000 + 2.5 + 1.5)
    # one node more adds 10.2 x 1.3 = 13.3 kW at the meter: past 1,000 kW
    assert nxt.facility_power_kw - at.facility_power_kw >= 10.2 * 1.3


def test_scalable_units_of_a_rail_optimised_superpod():
    base = fit_scenario(load_scenario(HALL).replace(network__topology="rail-optimized",
                                                    network__scalable_unit_nodes=32), rack_kw=40, cooling="air")
    assert step_nodes(base) == 32  # DGX SuperPOD H100 reference architecture: 32 nodes per scalable unit
    r = fit(base, Limits(max_facility_kw=2000, max_racks=40))
    # the racks allow 110 nodes (above); whole scalable units: 3 x 32 = 96 fit, 4 x 32 = 128 do not
    assert r.best["hardware.nodes"] == 96 and r.binding_constraint == "max-racks"
    assert forward(base, 96).facility.racks <= 40 < forward(base, 128).facility.racks
    assert r.next["nodes"] == 128


def test_min_cost_meets_a_deadline():
    base = fit_scenario(load_scenario(scenario_path("gpt3-175b-1024-a100")))
    # tensor 8 x pipeline 8 = 64 GPUs = 8 DGX A100: the plan steps by 8 nodes
    assert step_nodes(base) == 8
    r = fit(base, Limits(deadline_days=30), objective="min-cost")
    # data parallel = nodes / 8 must divide the global batch of 1536: 16 (128 nodes) and 24 (192) do,
    # 17 to 23 do not, so 192 nodes is the next valid design after 128
    assert r.best["hardware.nodes"] == 192 and r.binding_constraint == "deadline-days"
    slow = forward(base, 128).reliability.training_days_expected
    fast = forward(base, 192).reliability.training_days_expected
    assert slow > 30 >= fast
    assert r.to_dict()["training_days"] == pytest.approx(fast)


def test_infeasible_names_the_limit():
    r = fit(hall(), Limits(max_facility_kw=10, max_racks=40))
    assert r.best is None
    (f,) = r.findings
    # one DGX H100 draws 10.2 kW (datasheet), 13.3 kW at PUE 1.3: 10 kW alone rules every design out
    assert f.code == "explore-fit-infeasible" and f.field == "--max-facility-kw"
    assert "Facility power" in f.message


def test_deadline_against_racks_names_both():
    base = fit_scenario(load_scenario(scenario_path("gpt3-175b-1024-a100")))
    r = fit(base, Limits(deadline_days=30, max_racks=40), objective="min-cost")
    (f,) = r.findings
    assert f.field == "--deadline-days" and "192 nodes" in f.message and "Racks" in f.message


def test_bad_limits():
    with pytest.raises(ScenarioError, match="--max-racks"):
        Limits(max_racks=-1)
    with pytest.raises(ScenarioError, match="upper limit"):
        fit(hall(), Limits(deadline_days=30))
    with pytest.raises(ScenarioError, match="--objective"):
        fit(hall(), Limits(max_racks=4), objective="cheapest")


def test_cli_fit_json(capsys):
    code = main(["fit", str(HALL), "--max-facility-kw", "2000", "--max-racks", "40", "--rack-kw", "40",
                 "--cooling", "air", "--json"])
    d = json.loads(capsys.readouterr().out)
    assert code == 0
    assert (d["nodes"], d["gpus"], d["racks"], d["binding_constraint"]) == (110, 880, 40, "max-racks")
    assert set(d) >= {"nodes", "gpus", "racks", "facility_power_kw", "capex", "binding_constraint", "next"}
    assert math.isfinite(d["capex"]) and d["next"]["nodes"] == 111


def test_cli_fit_infeasible_exits_1(capsys):
    assert main(["fit", str(HALL), "--max-facility-kw", "10"]) == 1
    assert "explore-fit-infeasible" in capsys.readouterr().out


def test_min_cost_meets_the_serving_demand():
    base = fit_scenario(load_scenario(scenario_path("reference-8x-a100")).replace(
        inference__requests_per_s=200, network__topology="fat-tree"))
    r = fit(base, Limits(serving=True), objective="min-cost")
    # the fixed plan (tensor 1, pipeline 1) leaves data = GPUs, which must divide the global batch of 256:
    # 8, 16, 32, 64 GPUs (1, 2, 4, 8 nodes) are valid, 3, 5, 6, 7 nodes are not
    assert r.best["hardware.nodes"] == 8 and r.binding_constraint == "serving"
    at, before = forward(base, 8), forward(base, 4)
    assert at.hardware.gpus >= at.serving.gpus > before.hardware.gpus  # enough GPUs at 8 nodes, too few at 4


def test_serving_against_a_single_switch_names_the_design_error():
    base = fit_scenario(load_scenario(scenario_path("reference-8x-a100")).replace(inference__requests_per_s=200))
    (f,) = fit(base, Limits(serving=True), objective="min-cost").findings
    # one 40-port switch holds 40 ports (QM8700): 8 nodes x 8 NICs = 64 need a second tier
    assert f.field == "--serving" and "8 nodes" in f.message and "topology-too-few-tiers" in f.message
