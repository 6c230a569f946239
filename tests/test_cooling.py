"""Liquid cooling plant: coolant flow by hand, CDUs, the liquid/air split, rear doors."""

import pytest

from gpucluster_lib import design
from gpucluster_lib.errors import ScenarioError
from gpucluster_lib.facility.cooling import coolant_flow_l_per_min, cooling_plant
from gpucluster_lib.scenario import from_dict


def test_flow_by_hand():
    # Q = P / (rho c_p dT): 100 kW at 10 K with water (997 kg/m3, 4,181 J/kg/K, NIST at 25 C)
    # = 100,000 / (997 x 4181 x 10) = 2.3990e-3 m3/s = 143.94 l/min
    assert coolant_flow_l_per_min(100_000, 10) == pytest.approx(143.94, abs=0.01)
    # 132 kW at 8 K: 132,000 / (997 x 4181 x 8) = 3.9583e-3 m3/s = 237.50 l/min
    assert coolant_flow_l_per_min(132_000, 8) == pytest.approx(237.50, abs=0.01)
    # half the rise, twice the flow
    assert coolant_flow_l_per_min(50_000, 5) == pytest.approx(coolant_flow_l_per_min(50_000, 10) * 2)
    with pytest.raises(ScenarioError, match=r"facility\.coolant_delta_t_c: must be a positive"):
        coolant_flow_l_per_min(1000, 0)


def test_in_row_cdus_by_hand():
    # 12 racks of 100 kW, 80% on liquid, 10 racks a row: row 1 holds 800 kW -> 1 x 1,000 kW + 1 spare;
    # row 2 holds 160 kW -> 1 + 1 spare: 4 CDUs in 2 groups
    p = cooling_plant(cooling="liquid", compute_racks=12, nodes=12, node_peak_w=100_000, node_liquid_fraction=0.8,
                      other_it_w=20_000, racks_per_row=10)
    assert (p.cdus, p.cdu_groups, p.cdu_kind) == (4, 2, "in-row")
    assert p.liquid_kw == pytest.approx(960) and p.air_kw == pytest.approx(240 + 20)  # residual air + network
    assert p.rack_liquid_kw == pytest.approx(80) and p.rack_air_kw == pytest.approx(20)
    assert p.secondary_flow_l_per_min == pytest.approx(960_000 / (997 * 4181 * 10) * 60_000)
    # in-rack units of 100 kW: 80 kW a rack -> 1 + 1 spare in each of the 12 racks
    r = cooling_plant(cooling="liquid", compute_racks=12, nodes=12, node_peak_w=100_000, node_liquid_fraction=0.8,
                      other_it_w=0, racks_per_row=10, cdu="in-rack")
    assert r.cdus == 24


def test_rear_door_third_option():
    # 40.8 kW racks under 50 kW doors: everything to water, no residual from the compute racks
    p = cooling_plant(cooling="rear_door", compute_racks=2, nodes=8, node_peak_w=10_200, node_liquid_fraction=0.0,
                      other_it_w=5_000, racks_per_row=10)
    assert p.rear_doors == 2 and p.rear_door_kw == pytest.approx(81.6) and p.air_kw == pytest.approx(5.0)
    # 60 kW racks: 10 kW a rack above the door's 50 kW reaches the room (a warning)
    q = cooling_plant(cooling="rear_door", compute_racks=2, nodes=2, node_peak_w=60_000, node_liquid_fraction=0.0,
                      other_it_w=0, racks_per_row=10)
    assert q.air_kw == pytest.approx(20.0) and q.findings[0].code == "facility-rear-door-overflow"


def test_nvl72_split_from_cold_plate_parts():
    # GB200 NVL72: GPUs, CPUs and NICs on cold plates (MLCommons Crusoe GB200-NVL72 system description);
    # the share follows the node's power table, not a constant
    d = design(from_dict({"hardware": {"server": "gb200-nvl72", "nodes": 8}, "facility": {"cooling": "liquid"},
                          "reliability": {"spare_nodes": 0}}))
    plant = d.facility.cooling_plant
    per = d.node.by_category()
    share = (per["gpu"] + per["cpu"] + per["network"]) / sum(per.values())
    assert plant.liquid_fraction == pytest.approx(share)
    assert 0.7 < share < 0.95  # GPUs (72 x 1.2 kW) dominate the 132 kW rack
    assert plant.rack_liquid_kw + plant.rack_air_kw == pytest.approx(132.0)
    # 8 racks of ~108 kW liquid in one row: ceil(861 / 1000) + 1 = 2 in-row CDUs
    assert plant.cdus == 2
    assert d.to_dict()["facility"]["cooling_plant"]["secondary_flow_l_per_min"] == pytest.approx(
        coolant_flow_l_per_min(plant.liquid_kw * 1000, 10), abs=0.1)
