"""Rack and hall budgets, conversions and the budget CLI.

The network power of a budget comes from the topology design (``network_source`` "topology")
or is given (``network_power_w``, source "given"); the hand-worked figures below count the
topology's switches and optics with the Clos rules of :mod:`gpucluster_lib.network.clos`
and the catalogue values of ``data/switches.csv`` and ``data/cabling.yaml``.
"""

from __future__ import annotations

import json
import types

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
    facility_power_w,
    growth_table,
    hall_layout,
    heat_btu_per_h,
    rack_fit,
    redundant_capacity_kw,
)
from gpucluster_lib.network.topology import design_topology
from gpucluster_lib.scenario import from_dict, load_scenario

REF = "gpucluster_lib/data/scenarios/reference-8x-a100.yaml"
GPT3 = "gpucluster_lib/data/scenarios/gpt3-175b-1024-a100.yaml"

# Network power of the superpod below (140 DGX A100, 8 x HDR per node, 2 head nodes), counted by
# hand with the Clos rules of gpucluster_lib.network.clos and the catalogue:
# compute: 1,120 ports; node-aligned leaves of 40-port QM8790 hold 20 // 8 = 2 nodes (16 down,
#   16 up) -> 70 leaves; two tiers hold 40 x 16 = 640 < 1,120 -> three tiers: pods of 20 leaves
#   (4 pods, the last with 10 leaves: ceil(10 x 16 / 20) = 8 spines) -> 3 x 16 + 8 = 56 spines;
#   1,120 spine-core links / 40 ports = 28 cores: 154 switches x 700 W (switches.csv max_power_w)
#   = 107,800 W; 2 x 1,120 in-row HDR AOCs x 9 W (cabling.yaml power_w_per_cable) = 20,160 W
#   (node-leaf links are in-rack passive DAC: 0 W).
# storage: 140 x 2 ports (servers.csv storage_nic_count) + ceil(280 x 0.25) = 70 targets + 2 head
#   nodes = 352 ports on QM8790 (no catalogue switch holds 352 alone: the compute switch);
#   3:1 leaves split 30 down / 10 up -> ceil(352 / 30) = 12 leaves; spines: smallest divisor S of
#   10 with 12 x 10 / S <= 40 -> 5 (clos rule 3): 17 x 700 W = 11,900 W; (352 + 120) AOCs x 9 W
#   = 4,248 W.
# management: 140 x 1 port (servers.csv mgmt_ports_count) + 2 x 2 head-node ports + 154 + 17
#   switch ports = 315 links at 10 GbE; no Ethernet switch holds 315 alone (SN4600C 64 x 4
#   breakout = 256): SN4600C leaves of 204 down / 52 up at 4:1 -> 2 leaves + 1 spine, 3 x 466 W
#   = 1,398 W (copper RJ45: 0 W).
SUPERPOD_NETWORK_W = 107_800 + 20_160 + 11_900 + 4_248 + 1_398  # = 145,506 W


@pytest.fixture(scope="module")
def cat():
    return load_catalog()


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
    err = [f for f in b.findings if f.code == "facility-rack-power"]
    assert err and err[0].severity == "error" and "10.2 kW" in err[0].message
    assert b.compute_racks == 3  # one node per rack, flagged


# ----------------------------------------------------------------- hall

def test_superpod_it_power_node_max_times_count_plus_network(cat):
    # DGX SuperPOD A100 RA (RA-09950-001): 7 SUs x 20 = 140 DGX A100. Network, storage and
    # head nodes given explicitly as zero: IT = 140 x 6.5 kW (DGX A100 User Guide) = 910 kW
    b = budget(superpod(storage_power_kw=0).replace(hardware__head_nodes=0), cat, network_power_w=0,
               network_rack_units=0)
    assert b.it_power_kw == pytest.approx(140 * 6.5)
    # a given network power of 98 kW is added as it is (network_source "given")
    b = budget(superpod(storage_power_kw=0).replace(hardware__head_nodes=0), cat, network_power_w=98_000)
    assert b.it_power_kw == pytest.approx(140 * 6.5 + 98)
    assert b.network_source == "given"


def test_superpod_full_hall(cat):
    b = budget(superpod(), cat)
    # racks: (30 kW - 0.1 kW management switch) // 6.5 kW = 4 nodes per rack -> 35 compute racks
    assert (b.nodes_per_rack, b.binding_constraint, b.compute_racks) == (4, "power", 35)
    # network from the topology design: 145,506 W (SUPERPOD_NETWORK_W, counted by hand above)
    assert b.network_source == "topology"
    assert b.network_power_w == pytest.approx(SUPERPOD_NETWORK_W)
    assert b.network_rack_units == 154 + 17 + 3 * 2  # 1U QM8790s, 2U SN4600Cs (switches.csv rack_units)
    # storage (gpucluster_lib.facility.storage): no model, so no checkpoint or data set; the read
    # bandwidth of NVIDIA's DGX SuperPOD "better" class, 160 GB/s per 1,016 GPUs: 1,120 x 0.1575 =
    # 176.4 GB/s over 90 GB/s ddn-ai400x2 -> 2 x 2.5 kW (ESTIMATE, no power in storage.csv), 2 x 2U;
    # no capacity tier without data; head nodes 2 x 0.75 kW
    assert (b.storage.appliances, b.storage.basis) == (2, "read")
    assert b.storage_power_w == pytest.approx(2 * 2500) and b.head_power_w == pytest.approx(1500)
    assert b.storage_rack_units == 4
    it = 140 * 6.5 + 145.506 + 5.0 + 1.5  # = 1062.006 kW
    assert b.it_power_kw == pytest.approx(it)
    assert b.facility_power_kw == pytest.approx(it * 1.3)
    assert b.heat_load_btu_per_h == pytest.approx(it * 1000 * 3.412142, rel=1e-6)
    assert b.cooling_tons == pytest.approx(it * 1000 * 3.412142 / 12_000, rel=1e-6)
    # airflow: the DGX A100 User Guide's 840 CFM per node (at 80% fan PWM) for the 140 nodes, the
    # switches, storage and head nodes by the sensible-heat equation at 11.1 K
    other_w = (145.506 + 5.0 + 1.5) * 1000
    assert b.airflow_basis == "vendor"
    assert b.airflow_cfm == pytest.approx(140 * 840 + other_w * 3.412142 / (1.08 * 11.1 * 1.8), rel=1e-6)
    # infrastructure racks: 177U of switches + 4U storage + 2U heads = 183U over 40U -> 4.6 -> 5;
    # power (145.506 + 5.0 + 1.5) kW / 30 kW = 5.07 -> 6
    assert b.infra_racks == 6 and b.racks == 41
    rows, length, depth, area = hall_layout(41, 10)
    assert rows == 5 and b.floor_area_m2 == pytest.approx(area)
    # N+1 UPS on IT x 1.2 growth: 1271.4 kW over n = max(2, ceil(1.2714)) = 2 modules, +1 -> x1.5
    assert b.ups_kw == pytest.approx(it * 1.2 * 1.5)


def test_reference_server_budget(cat):
    b = budget(load_scenario(REF), cat)
    # 15 kW rack: (15 - 0.1) // 6.5 = 2 nodes per rack, power bound
    assert (b.nodes_per_rack, b.binding_constraint) == (2, "power")
    # IT: 6.5 kW node + QM8700 700 W (switches.csv) + management switch SN2700 233 W (the
    # lowest-power Ethernet switch with >= 10 GbE ports that holds the 5 management links:
    # 1 node x 2 + 1 head node x 2 + 1 compute switch) + 1 head node 750 W = 8.183 kW
    assert b.network_source == "topology"
    assert b.network_power_w == pytest.approx(700 + 233)
    assert b.it_power_kw == pytest.approx(6.5 + 0.7 + 0.233 + 0.75)
    assert b.facility_power_kw == pytest.approx(8.183 * 1.5)  # PUE 1.5
    assert b.racks == 1 and b.infra_racks == 0  # switches and head node share the one rack
    # node 4U, QM8700 1U, SN2700 1U, head 1U, reserved 2U; one node: local NVMe, no storage appliance
    assert b.storage_rack_units == 0
    assert b.rack_units_used == 4 + 1 + 1 + 1 + 2
    assert b.floor_area_m2 == pytest.approx((0.6 + 2.4) * (1.2 + 2.1))  # one rack + aisles + row ends


def test_energy_and_cost_relation(cat):
    b = budget(load_scenario(REF), cat)
    assert b.annual_energy_mwh == pytest.approx(b.it_typical_kw * 1.5 * 8760 / 1000)
    assert b.annual_energy_cost == pytest.approx(b.annual_energy_mwh * 1000 * 0.12)  # 0.12 per kWh
    assert b.it_typical_kw < b.it_power_kw


def test_liquid_split(cat):
    # cold plates take 75% of the nodes' heat (power_assumptions.LIQUID_HEAT_FRACTION, no
    # liquid_cooled_parts for the DGX A100); the switches, storage and head nodes stay on air
    b = budget(superpod(cooling="liquid"), cat)
    nodes_kw = 140 * 6.5
    assert b.liquid_heat_kw == pytest.approx(0.75 * nodes_kw)
    assert b.air_heat_kw == pytest.approx(b.it_power_kw - 0.75 * nodes_kw)
    # rear doors on the compute racks (4 x 6.5 = 26 kW each, under the 50 kW a door removes) take
    # all the nodes' heat; the network racks have none
    b = budget(superpod(cooling="rear_door"), cat)
    assert b.liquid_heat_kw == pytest.approx(nodes_kw)
    assert b.air_heat_kw == pytest.approx(b.it_power_kw - nodes_kw)


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
    # other node counts scale the network linearly (documented approximation of growth_table):
    # 20 nodes: 20 x 6.5 + 145.506 x 20 / 140 + 2.5 storage + 1.5 heads = 154.787 kW
    assert g.loc[20, "it_mw"] == pytest.approx((20 * 6.5 + 145.506 * 20 / 140 + 2.5 + 1.5) / 1000)
    # 5 compute racks (4 per rack) + 1: ceil(177 x 20 / 140) = 26U of switches + 2U + 2U < 40U
    assert g.loc[20, "racks"] == 6 == budget(s, cat, nodes=20).racks
    assert g["facility_mw"].is_monotonic_increasing


def test_growth_table_counts_infrastructure_racks_as_full_racks_hold_them(cat):
    # The reviewer's layout: one 38U device in one rack, a 4U one in a second (42U of devices).
    # Superpod, 140 DGX A100 at 4 a rack (35 compute racks), no storage or head nodes, a given
    # 1 kW network of 42U. Twice the nodes: ceil(42 / 140 x 280) = 84U, i.e. 2 x 38U + 2 x 4U,
    # which whole devices fill into 38 | 38 | 4 + 4 = 3 racks (84 / 38 -> 3). Counting 21U a
    # rack (42U over the 2 racks, the partly filled one included) gave 84 / 21 = 4.
    import dataclasses

    from gpucluster_lib.hardware.rack import RackDevice, pack_racks

    s = superpod(storage_power_kw=0).replace(hardware__head_nodes=0)
    b = budget(s, cat, network_power_w=1_000.0, network_rack_units=42)
    layout = (((RackDevice("switch", "network", "big", 38, 500.0),), (RackDevice("switch", "network", "small", 4,
                                                                                     500.0),)))
    b = dataclasses.replace(b, infra_layout=layout, infra_devices=tuple(x for r in layout for x in r))
    g = growth_table(b, [140, 280], s, cat).set_index("nodes")
    assert g.loc[140, "racks"] == 35 + 2
    doubled = [RackDevice("switch", "network", m, h, 500.0, i) for i in range(2) for m, h in (("big", 38),
                                                                                            ("small", 4))]
    assert len(pack_racks(doubled, 40, 30_000.0)) == 3  # the packer agrees with the hand count
    assert g.loc[280, "racks"] == 70 + 3  # 280 / 4 = 70 compute racks


def test_the_network_design_passed_in_is_used(cat):
    # a Design passes its network stage: the budget reads that design's power and rack units
    net = types.SimpleNamespace(nodes=140, network_power_w=140_000.0, network_rack_units=35)
    b = budget(superpod(storage_power_kw=0).replace(hardware__head_nodes=0), cat, network=net)
    assert b.network_source == "topology" and b.network_power_w == 140_000
    assert b.network_rack_units == 35
    assert b.it_power_kw == pytest.approx(140 * 6.5 + 140)
    # the default is the scenario's own topology design, the same one `gpucluster topology` shows
    s = superpod()
    assert budget(s, cat).network_power_w == pytest.approx(design_topology(s, cat).network_power_w)


def test_installed_spares_take_rack_space_and_peak_power(cat):
    s = load_scenario(GPT3)
    b0 = budget(s, cat)
    # GPT-3 example, 128 DGX A100: network from the topology design, counted as for the superpod:
    # compute 64 leaves + (3 x 16 + ceil(4 x 16 / 20) = 4) = 52 spines + ceil(1024 / 40) = 26 cores
    # = 142 QM8700 x 700 W = 99,400 W and 2 x 1,024 AOCs x 9 W = 18,432 W; storage 128 x 2 + 64
    # targets + 2 = 322 ports: ceil(322 / 30) = 11 leaves + 5 spines = 16 x 700 W = 11,200 W and
    # (322 + 110) AOCs x 9 W = 3,888 W; management 128 + 4 + 142 + 16 = 290 links: 3 SN4600C x
    # 466 W = 1,398 W. Total 134,318 W
    assert b0.network_power_w == pytest.approx(99_400 + 18_432 + 11_200 + 3_888 + 1_398)
    # storage (facility.storage): 1,024 GPUs x 160/1,016 GB/s (NVIDIA DGX SuperPOD "better" class) =
    # 161.3 GB/s read over 90 GB/s appliances -> 2 x 2.5 kW; capacity tier: (300e9 tokens x 4 B x 10 raw
    # + 300e9 x 2 B tokenised + 10 x 2.4446 TB checkpoints) x 2 growth = 74.1 TB -> 1 x 1.2 kW enclosure
    # IT = 128 x 6.5 kW + 134.318 + 6.2 kW storage + 2 x 0.75 kW heads = 974.018 kW
    assert b0.it_power_kw == pytest.approx(128 * 6.5 + 134.318 + 2 * 2.5 + 1.2 + 1.5)
    assert (b0.compute_racks, b0.infra_racks, b0.racks) == (32, 5, 37)  # ceil(128 / 4); 174U / 40U -> 5
    b = budget(s, cat, spare_nodes=4)
    assert (b.nodes, b.spare_nodes, b.nodes_installed) == (128, 4, 132)
    # 4 hot spares racked at the DGX A100 peak 6.5 kW (DGX A100 User Guide): 970.318 + 4 x 6.5
    assert b.it_power_kw == pytest.approx(974.018 + 4 * 6.5)  # = 1,000.018 kW
    assert b.facility_power_kw == pytest.approx(1000.018 * 1.3)  # PUE 1.3
    # ceil(132 / 4) = 33 compute racks + the same 5 infrastructure racks = 38
    assert (b.compute_racks, b.infra_racks, b.racks) == (33, 5, 38)
    # the fabric is sized for the job nodes; a spare stands by, so the typical power is unchanged
    assert b.network_power_w == b0.network_power_w
    assert b.it_typical_kw == pytest.approx(b0.it_typical_kw)
    assert b.annual_energy_mwh == pytest.approx(b0.annual_energy_mwh)
    d = b.to_dict()
    assert (d["nodes"], d["spare_nodes"], d["nodes_installed"], d["racks"]) == (128, 4, 132, 38)
    for bad in (-1, True, 1.5):
        with pytest.raises(ScenarioError, match="reliability.spare_nodes: must be a whole number of nodes, at least 0"):
            budget(s, cat, spare_nodes=bad)


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
    """The management switches are in the network design's power; the rack adds none of its own."""
    s = load_scenario(REF)
    # network power given (as from a topology design, whose management switches are in it):
    # IT = 6.5 kW node + 0.7 kW network + 0.75 kW head node = 7.95 kW; the one shared rack holds
    # all of it, so the rack draws 7.95 kW, not 7.95 + 0.1 (before the fix: 8.05 kW > IT 7.95 kW)
    b = budget(s, cat, network_power_w=700.0)
    assert b.it_power_kw == pytest.approx(6.5 + 0.7 + 0.75)
    assert b.rack_power_kw == pytest.approx(6.5 + 0.7 + 0.75)
    # topology design: QM8700 700 W + SN2700 management switch 233 W = 8.183 kW IT and rack
    e = budget(s, cat)
    assert e.network_source == "topology"
    assert e.rack_power_kw == pytest.approx(6.5 + 0.7 + 0.233 + 0.75)
    assert e.rack_power_kw <= e.it_power_kw + 1e-9


def test_pack_racks_keeps_devices_whole():
    from gpucluster_lib.hardware.rack import RackDevice, pack_racks

    chassis = [RackDevice("switch", "spine", "c16", 16, 10_000.0, i) for i in range(5)]
    # 5 x 16U = 80U would be 2 racks of 40U if split; whole chassis go 2, 2, 1 -> 3 racks
    racks = pack_racks(chassis, 40, 40_000.0)
    assert [len(r) for r in racks] == [2, 2, 1]
    # power binds: 1U devices of 15 kW under a 40.9 kW cap: 2 a rack (3 x 15 = 45 kW > 40.9 kW)
    hot = [RackDevice("switch", "leaf", "h1", 1, 15_000.0, i) for i in range(5)]
    assert [len(r) for r in pack_racks(hot, 40, 40_900.0)] == [2, 2, 1]
    # tallest first, smaller ones fill the gaps: 2 x 16U + 4 x 2U in one 40U rack
    mixed = [RackDevice("switch", "m", "s2", 2, 500.0, i) for i in range(4)] + chassis[:2]
    (only,) = pack_racks(mixed, 40, 40_000.0)
    assert [x.height_u for x in only] == [16, 16, 2, 2, 2, 2]
    # a device above the cap on its own still gets a rack (the budget's findings report it)
    assert len(pack_racks([RackDevice("switch", "x", "big", 50, 50_000.0)], 40, 40_000.0)) == 1
    assert pack_racks([], 40, 40_000.0) == ()


def test_an_infrastructure_device_no_rack_holds_is_an_error_finding(cat):
    # RoCE example in 16U racks: 16 - 2 reserved = 14 usable U, below one 16U Arista 7808R3
    # (switches.csv, Arista 7800R3 white paper Table 1). The topology has 171 + 144 compute and
    # 36 + 9 storage chassis = 360; each is counted in a rack of its own, the other 188U of
    # 2U/4U/1U devices fill ceil(188 / 14) = 14 racks: 374 infrastructure racks
    s = load_scenario("gpucluster_lib/data/scenarios/roce-24k-h100.yaml").replace(facility__rack_units=16)
    b = budget(s, cat)
    (f,) = [f for f in b.findings if f.code == "facility-infra-device-over-rack-limit"]
    assert f.severity == "error" and f.field == "facility.rack_units"
    # one group per model, with its roles
    assert "360 x arista-7808r3 (compute leaf, compute spine, storage leaf, storage spine) of 16U" in f.message
    assert "of 16U" in f.message and "14 usable units" in f.message
    assert "at least 18U" in f.fix  # 16U chassis + 2U reserved
    assert b.infra_racks == 360 + 14
    # power: a given 35 kW network in one 1U share, above the 30 kW rack limit (air cooling 30 kW too)
    b = budget(superpod(storage_power_kw=0).replace(hardware__head_nodes=0), cat, network_power_w=35_000,
               network_rack_units=1)
    (f,) = [f for f in b.findings if f.code == "facility-infra-device-over-rack-limit"]
    assert "35.0 kW" in f.message and "30.0 kW" in f.message
    assert f.field == "facility.rack_power_limit_kw" and "at least 35 kW" in f.fix
    assert b.infra_racks == 1
    # the superpod's own devices all fit a rack: no such finding
    assert not [f for f in budget(superpod(), cat).findings if f.code == "facility-infra-device-over-rack-limit"]
