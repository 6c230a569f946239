"""Rack and hall budgets, conversions and the budget CLI (issue #4)."""

from __future__ import annotations

import json
import sys
import types

import numpy as np
import pytest

from gpucluster_lib import units
from gpucluster_lib.catalog import load_catalog
from gpucluster_lib.cli import main
from gpucluster_lib.errors import ScenarioError
from gpucluster_lib.facility.site import (
    airflow_cfm,
    budget,
    cfm_per_kw,
    cooling_tons,
    fabric_switch_count,
    facility_power_w,
    growth_table,
    hall_layout,
    heat_btu_per_h,
    rack_fit,
    redundant_capacity_kw,
)
from gpucluster_lib.scenario import from_dict, load_scenario

REF = "gpucluster_lib/data/scenarios/reference-8x-a100.yaml"


@pytest.fixture(scope="module")
def cat():
    return load_catalog()


@pytest.fixture(autouse=True)
def no_topology(monkeypatch):
    """Pin the network to the documented fallback estimate (issue 5's module may be merged)."""
    monkeypatch.setitem(sys.modules, "gpucluster_lib.network.topology", None)


def superpod(**facility):
    return from_dict({
        "hardware": {"server": "dgx-a100-640gb", "nodes": 140, "head_nodes": 2},
        "network": {"topology": "fat-tree", "switch": "qm8790", "nic": "connectx-6-hdr", "nics_per_node": 8},
        "facility": {"rack_units": 42, "rack_power_limit_kw": 30, "cooling": "air", "pue": 1.3, **facility},
    })


# ----------------------------------------------------------------- conversions by hand

def test_btu_per_watt():
    assert units.BTU_PER_H_PER_W == pytest.approx(3.412, abs=1e-3)  # 3600 J/h / 1055.056 J per BTU
    assert heat_btu_per_h(6500) == pytest.approx(22_179, abs=1)  # DGX A100 User Guide: 22,179 BTU/h at 6.5 kW


def test_ton_of_refrigeration():
    assert units.KW_PER_TON == pytest.approx(3.517, abs=1e-3)  # 12,000 BTU/h / 3.412 BTU/h per W
    assert cooling_tons(3516.85) == pytest.approx(1.0, abs=1e-4)
    assert cooling_tons(12_000 / 3.412142) == pytest.approx(1.0, abs=1e-5)  # 12,000 BTU/h


def test_cfm_per_kw_sensible_heat():
    # 3412 BTU/h / (1.08 x 20 F) = 158 CFM per kW at 11.1 K (hw_reference 5.1: ~157 with 1.085)
    assert cfm_per_kw(11.1) == pytest.approx(3412.142 / (1.08 * 11.1 * 1.8), rel=1e-4)
    assert cfm_per_kw(11.1) == pytest.approx(158, abs=1)
    assert cfm_per_kw(25 / 1.8) == pytest.approx(126, abs=1)  # 25 F: ~126 CFM/kW (Dell/insideHPC)
    # SI cross-check: V = P / (rho cp dT) = 1000 / (1.2 x 1005 x 11.1) m3/s in CFM
    si = 1000 / (units.AIR_DENSITY_KG_PER_M3 * units.AIR_CP_J_PER_KG_K * 11.1) / units.M3_PER_S_PER_CFM
    assert airflow_cfm(1000, 11.1) == pytest.approx(si, rel=0.01)
    # DGX H100 User Guide: 1,105 CFM for 10.2 kW implies dT = 3.412 x 10200 / (1.08 x 1105) F = 16.2 K
    assert airflow_cfm(10_200, 16.2) == pytest.approx(1105, rel=0.01)


def test_conversion_bad_input():
    with pytest.raises(ScenarioError, match=r"facility\.delta_t_c: must be a positive temperature rise"):
        airflow_cfm(1000, 0)
    with pytest.raises(ScenarioError, match=r"facility\.pue: must be at least 1"):
        facility_power_w(1000, 0.95)
    with pytest.raises(ScenarioError, match="it_power_w: must not be negative"):
        facility_power_w(-1, 1.3)


# ----------------------------------------------------------------- rack fit

def test_dgx_h100_four_per_rack_power_bound(cat):
    # NVIDIA DGX H100 RA layout: 4 systems per rack, ~40.8 kW (hw_reference 5.2)
    fit = rack_fit(8, 10_200, 130.45, rack_units=48, rack_power_limit_w=45_000, rack_weight_limit_kg=1360,
                   cooling_limit_w=50_000, reserved_u=2, reserved_w=100)
    assert fit.limits == {"space": 5, "power": 4, "cooling": 4, "weight": 10}  # 46//8, 44900//10200, ...
    assert (fit.nodes_per_rack, fit.binding) == (4, "power")


@pytest.mark.parametrize(("kw", "kind", "expect"), [
    # space: (12 - 2) // 4 = 2 in a 12U rack with a 100 kW budget
    (dict(node_u=4, node_peak_w=6500, node_kg=80, rack_units=12, rack_power_limit_w=100e3,
          rack_weight_limit_kg=2000, cooling_limit_w=120e3), "space", 2),
    # cooling: air removes ~30 kW: (30000 - 0) // 10200 = 2, power would allow 5
    (dict(node_u=8, node_peak_w=10_200, node_kg=130, rack_units=48, rack_power_limit_w=60e3,
          rack_weight_limit_kg=2000, cooling_limit_w=30e3), "cooling", 2),
    # weight: (200 - 0) // 123.16 = 1
    (dict(node_u=6, node_peak_w=6500, node_kg=123.16, rack_units=42, rack_power_limit_w=60e3,
          rack_weight_limit_kg=200, cooling_limit_w=60e3), "weight", 1),
])
def test_binding_constraints(kw, kind, expect):
    fit = rack_fit(**kw, reserved_u=2 if kind == "space" else 0)
    assert (fit.binding, fit.nodes_per_rack) == (kind, expect)


def test_rack_shorter_than_node():
    with pytest.raises(ScenarioError, match=r"facility\.rack_units: a 4U rack is shorter than one 6U node"):
        rack_fit(6, 6500, 123, rack_units=4, rack_power_limit_w=30e3, rack_weight_limit_kg=1000,
                 cooling_limit_w=30e3)
    with pytest.raises(ScenarioError, match="shorter than one 8U node"):
        budget(from_dict({"hardware": {"server": "dgx-h100"}, "facility": {"rack_units": 6}}))


def test_rack_fit_bad_power():
    with pytest.raises(ScenarioError, match="node peak_power_w: must be a positive number of watts"):
        rack_fit(4, -5, 80, rack_units=42, rack_power_limit_w=30e3, rack_weight_limit_kg=1000, cooling_limit_w=30e3)
    with pytest.raises(ScenarioError, match=r"facility\.rack_power_limit_kw: must be a positive number"):
        rack_fit(4, 6500, 80, rack_units=42, rack_power_limit_w=0, rack_weight_limit_kg=1000, cooling_limit_w=30e3)
    with pytest.raises(ScenarioError, match=r"facility\.rack_power_limit_kw: must be a positive number, got -2"):
        from_dict({"facility": {"rack_power_limit_kw": -2}})
    with pytest.raises(ScenarioError, match=r"facility\.pue: must be at least 1"):
        from_dict({"facility": {"pue": 0.9}})


def test_node_over_rack_power_is_a_finding(cat):
    b = budget(from_dict({"hardware": {"server": "dgx-h100", "nodes": 3},
                          "facility": {"rack_power_limit_kw": 8}}), cat)
    err = [f for f in b.findings if f.code == "rack_power"]
    assert err and err[0].severity == "error" and "10.2 kW" in err[0].message
    assert b.compute_racks == 3  # one node per rack, flagged


# ----------------------------------------------------------------- hall

def test_superpod_it_power_node_max_times_count_plus_network(cat):
    # DGX SuperPOD A100 RA (RA-09950-001): 7 SUs x 20 = 140 DGX A100. Network, storage and
    # head nodes given explicitly as zero: IT = 140 x 6.5 kW (DGX A100 User Guide) = 910 kW
    b = budget(superpod(storage_power_kw=0).replace(hardware__head_nodes=0), cat, network_power_w=0,
               network_rack_units=0)
    assert b.it_power_kw == pytest.approx(140 * 6.5)
    # with a network of 98 kW: 140 QM8790 x 700 W (switches.csv; three tiers since
    # 1,120 endpoints > 40^2/2 = 800, 5E/k = 5 x 1120 / 40 = 140 switches, Al-Fares 2008)
    b = budget(superpod(storage_power_kw=0).replace(hardware__head_nodes=0), cat, network_power_w=98_000)
    assert b.it_power_kw == pytest.approx(140 * 6.5 + 98)


def test_superpod_full_hall(cat):
    b = budget(superpod(), cat)
    # racks: (30 kW - 0.1 kW management switch) // 6.5 kW = 4 nodes per rack -> 35 compute racks
    assert (b.nodes_per_rack, b.binding_constraint, b.compute_racks) == (4, "power", 35)
    # fallback network: 140 fabric switches x 700 W + 35 management switches x 100 W = 101.5 kW
    assert b.network_power_w == pytest.approx(140 * 700 + 35 * 100)
    # storage (gpucluster_lib.facility.storage): no model, so no checkpoint to size by -> the one-appliance
    # minimum for > 1 node: 1 ddn-ai400x2 x 2.5 kW (ESTIMATE, no power in storage.csv), 2U;
    # head nodes 2 x 0.75 kW
    assert (b.storage.appliances, b.storage.basis) == (1, "minimum")
    assert b.storage_power_w == pytest.approx(1 * 2500) and b.head_power_w == pytest.approx(1500)
    assert b.storage_rack_units == 2
    it = 140 * 6.5 + 101.5 + 2.5 + 1.5  # = 1015.5 kW
    assert b.it_power_kw == pytest.approx(it)
    assert b.facility_power_kw == pytest.approx(it * 1.3)
    assert b.heat_load_btu_per_h == pytest.approx(it * 1000 * 3.412142, rel=1e-6)
    assert b.cooling_tons == pytest.approx(it * 1000 * 3.412142 / 12_000, rel=1e-6)
    assert b.airflow_cfm == pytest.approx(it * 3412.142 / (1.08 * 11.1 * 1.8), rel=1e-6)
    # infrastructure racks: 140U of switches + 2U storage + 2U heads = 144U over 40U -> 3.6 -> 4;
    # power (98 + 2.5 + 1.5) kW / 30 kW = 3.4 -> 4
    assert b.infra_racks == 4 and b.racks == 39
    rows, length, depth, area = hall_layout(39, 10)
    assert rows == 4 and b.floor_area_m2 == pytest.approx(area)
    # N+1 UPS on IT x 1.2 growth: 1218.6 kW over n = max(2, ceil(1.2186)) = 2 modules, +1 -> x1.5
    assert b.ups_kw == pytest.approx(it * 1.2 * 1.5)


def test_reference_server_budget(cat):
    b = budget(load_scenario(REF), cat)
    # 15 kW rack: (15 - 0.1) // 6.5 = 2 nodes per rack, power bound
    assert (b.nodes_per_rack, b.binding_constraint) == (2, "power")
    # IT: 6.5 kW node + QM8700 700 W + management switch 100 W + 1 head node 750 W = 8.05 kW
    assert b.it_power_kw == pytest.approx(6.5 + 0.7 + 0.1 + 0.75)
    assert b.facility_power_kw == pytest.approx(8.05 * 1.5)  # PUE 1.5
    assert b.racks == 1 and b.infra_racks == 0  # switch and head node share the one rack
    assert b.rack_units_used == 4 + 1 + 1 + 2  # node 4U, switch 1U, head 1U, reserved 2U
    assert b.floor_area_m2 == pytest.approx((0.6 + 2.4) * (1.2 + 2.1))  # one rack + aisles + row ends


def test_energy_and_cost_relation(cat):
    b = budget(load_scenario(REF), cat)
    assert b.annual_energy_mwh == pytest.approx(b.it_typical_kw * 1.5 * 8760 / 1000)
    assert b.annual_energy_cost == pytest.approx(b.annual_energy_mwh * 1000 * 0.12)  # 0.12 per kWh
    assert b.it_typical_kw < b.it_power_kw


def test_liquid_split(cat):
    b = budget(superpod(cooling="liquid"), cat)
    assert b.liquid_heat_kw == pytest.approx(0.75 * b.it_power_kw)
    assert b.air_heat_kw == pytest.approx(0.25 * b.it_power_kw)
    b = budget(superpod(cooling="rear_door"), cat)
    assert b.liquid_heat_kw == pytest.approx(b.it_power_kw) and b.air_heat_kw == 0


def test_hall_layout_by_hand():
    assert hall_layout(1) == pytest.approx((1, 3.0, 3.3, 9.9))
    # 20 racks, 10 per row: 2 rows; 10 x 0.6 + 2 x 1.2 = 8.4 m; 2 x (1.2 + 1.05) + 1.05 = 5.55 m
    assert hall_layout(20, 10) == pytest.approx((2, 8.4, 5.55, 8.4 * 5.55))
    assert hall_layout(0) == (0, 0.0, 0.0, 0.0)


def test_redundancy_by_hand():
    assert redundant_capacity_kw(100, "N") == (100, 1, 1)
    assert redundant_capacity_kw(100, "N+1")[0] == pytest.approx(150)  # 2 modules of 50 + 1 spare
    assert redundant_capacity_kw(100, "2N")[0] == 200
    assert redundant_capacity_kw(2500, "N+1")[0] == pytest.approx(2500 * 4 / 3)  # 3 x 833 kW + 1
    with pytest.raises(ScenarioError, match="power_redundancy: must be one of"):
        redundant_capacity_kw(100, "3N")
    with pytest.raises(ScenarioError, match="must not be negative"):
        redundant_capacity_kw(-1, "N")


def test_fabric_switch_count_by_hand():
    sw, tiers = fabric_switch_count(np.array([0, 40, 1024, 1120]), 40)
    # 1024 > 800 = 40^2/2 -> three tiers: 5 x 1024 / 40 = 128
    assert list(sw) == [0, 1, 128, 140] and list(tiers) == [0, 1, 3, 3]
    sw, tiers = fabric_switch_count(1024, 64)  # 2 tiers: 32 leaves + 16 spines (issue 5 worked example)
    assert int(sw) == 48 and int(tiers) == 2


def test_nodes_override(cat):
    b = budget(superpod(), cat, nodes=20)
    assert b.nodes == 20 and b.compute_racks == 5
    for bad in (0, -3, True, 2.5):
        with pytest.raises(ScenarioError, match="nodes: must be a positive whole number"):
            budget(superpod(), cat, nodes=bad)
    with pytest.raises(ScenarioError, match="network_power_w: must not be negative"):
        budget(superpod(), cat, network_power_w=-1)


def test_growth_table_matches_budget(cat):
    s = superpod()
    b = budget(s, cat)
    g = growth_table(b, [1, 20, 140, 560], s, cat).set_index("nodes")
    assert g.loc[140, "racks"] == b.racks
    assert g.loc[140, "it_mw"] == pytest.approx(b.it_power_kw / 1000)
    b20 = budget(s, cat, nodes=20)
    assert g.loc[20, "racks"] == b20.racks and g.loc[20, "it_mw"] == pytest.approx(b20.it_power_kw / 1000)
    assert g["facility_mw"].is_monotonic_increasing


def test_topology_module_is_used_when_present(monkeypatch, cat):
    fake = types.ModuleType("gpucluster_lib.network.topology")
    fake.design_topology = lambda scenario, catalog=None, *, nodes=None: types.SimpleNamespace(
        network_power_w=1000.0 * nodes, network_rack_units=nodes // 4)
    monkeypatch.setitem(sys.modules, "gpucluster_lib.network.topology", fake)
    b = budget(superpod(storage_power_kw=0).replace(hardware__head_nodes=0), cat)
    assert b.network_source == "topology" and b.network_power_w == 140_000
    assert b.it_power_kw == pytest.approx(140 * 6.5 + 140)
    assert not [f for f in b.findings if f.code == "network_estimate"]


def test_fallback_network_is_reported(cat):
    b = budget(superpod(), cat)
    assert b.network_source == "estimate"
    assert any(f.code == "network_estimate" and f.severity == "info" for f in b.findings)


# ----------------------------------------------------------------- CLI contract

CONTRACT = {"node", "nodes", "racks", "rack_units_used", "it_power_kw", "facility_power_kw",
            "heat_load_btu_per_h", "cooling_tons", "airflow_cfm", "floor_area_m2", "annual_energy_mwh",
            "annual_energy_cost", "binding_constraint", "findings"}


def test_cli_json_contract(capsys):
    assert main(["budget", REF, "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert CONTRACT <= set(d)
    assert {"peak_power_w", "typical_power_w", "psu_usable_w", "rack_units"} <= set(d["node"])
    assert d["node"]["psu_usable_w"] == 9000 and d["node"]["peak_power_w"] == 6500 and d["node"]["rack_units"] == 4
    assert d["binding_constraint"] in ("space", "power", "cooling", "weight")
    assert all({"code", "severity", "message"} <= set(f) for f in d["findings"])


def test_cli_text_and_nodes(capsys):
    assert main(["budget", REF, "--nodes", "3"]) == 0
    assert "3 (24 GPUs)" in capsys.readouterr().out


def test_cli_bad_input_no_traceback(tmp_path, capsys):
    p = tmp_path / "bad.yaml"
    p.write_text("hardware: {server: dgx-h100}\nfacility: {pue: 0.8}\n")
    assert main(["budget", str(p), "--json"]) == 2
    err = capsys.readouterr().err
    assert "facility.pue: must be at least 1" in err and "Traceback" not in err
    p.write_text("hardware: {server: dgx-h100}\nfacility: {rack_units: 6}\n")
    assert main(["budget", str(p)]) == 2
    assert "shorter than one 8U node" in capsys.readouterr().err


def test_rack_power_never_exceeds_it_power(cat):
    """The per-rack 100 W management switch is IT power only in the fallback network estimate."""
    s = load_scenario(REF)
    # network power given (as from a topology design, whose management switches are in it):
    # IT = 6.5 kW node + 0.7 kW network + 0.75 kW head node = 7.95 kW; the one shared rack holds
    # all of it, so the rack draws 7.95 kW, not 7.95 + 0.1 (before the fix: 8.05 kW > IT 7.95 kW)
    b = budget(s, cat, network_power_w=700.0)
    assert b.it_power_kw == pytest.approx(6.5 + 0.7 + 0.75)
    assert b.rack_power_kw == pytest.approx(6.5 + 0.7 + 0.75)
    # fallback estimate: QM8700 700 W + the 100 W management switch it counts = 8.05 kW IT and rack
    e = budget(s, cat)
    assert e.network_source == "estimate"
    assert e.rack_power_kw == pytest.approx(6.5 + 0.7 + 0.1 + 0.75)
    assert e.rack_power_kw <= e.it_power_kw + 1e-9
