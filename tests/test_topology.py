"""Topology: hand-worked and published switch/cable counts, bandwidth, bad input.

Sources on the lines: Al-Fares et al. 2008 (SIGCOMM, k-ary fat tree), NVIDIA DGX H100
SuperPOD RA Table 4 and DGX B200 SuperPOD RA (as tabulated in hw_reference.md sec. 5.3).
"""

from __future__ import annotations

import json
import math

import pytest

from gpucluster_lib import cli
from gpucluster_lib.catalog import load_catalog
from gpucluster_lib.errors import CatalogError, ScenarioError, UnknownIdError
from gpucluster_lib.hardware.resolve import resolve_hardware
from gpucluster_lib.network.cabling import load_cabling, parse_cabling
from gpucluster_lib.network.clos import (
    balanced_divisor,
    clos_counts,
    leaf_port_split,
    max_endpoints,
    ring_counts,
    three_tier_plan,
    tree_counts,
)
from gpucluster_lib.network.topology import (
    design_topology,
    effective_port_gbps,
    fabric_gbps_per_gpu,
    growth_table,
)
from gpucluster_lib.scenario import from_dict


def scen(**net):
    server = net.pop("server", "dgx-h100")
    nodes = net.pop("nodes", 128)
    base = {"topology": "rail-optimized", "switch": "qm9700", "nic": "connectx-7-ndr", "nics_per_node": 8}
    base.update(net)
    return from_dict({"hardware": {"server": server, "nodes": nodes}, "network": base,
                      "facility": {"rack_units": 48, "rack_power_limit_kw": 45}})


def codes(d):
    return {f.code: f for f in d.findings}


# --------------------------------------------------------------------------- Clos arithmetic


def test_leaf_split_nonblocking_is_half_and_half():
    assert leaf_port_split(64, 1.0) == (32, 32)  # Al-Fares 2008 Sec. 3.2: k/2 down, k/2 up
    assert leaf_port_split(40, 1.0) == (20, 20)  # QM8790 in the DGX A100 SuperPOD: 20 down / 20 up


def test_leaf_split_oversubscribed():
    # hand-worked: up=22 -> down=min(64-22, 2*22)=42 (42/22 = 1.91 <= 2); up=21 also gives 42: larger up wins
    assert leaf_port_split(64, 2.0) == (42, 22)
    assert leaf_port_split(64, 3.0) == (48, 16)  # 48/16 = 3 exactly, 64 ports used


def test_1024_endpoints_two_tier_64_port():
    # hand-worked: 1024/32 = 32 leaves; 32 x 32 uplinks = 1024 leaf-spine links; 1024/64 = 16 spines
    c = clos_counts(1024, 64)
    assert (c.tiers, c.leaves, c.spines, c.cores) == (2, 32, 16, 0)
    assert c.node_leaf_links == 1024 and c.leaf_spine_links == 1024
    assert c.links_per_leaf_spine == 2  # 32 uplinks over 16 spines
    assert c.ports_free == 0  # 48 switches x 64 ports = 3072 = 1024 + 2 x 1024


def test_radix_limits_al_fares():
    assert max_endpoints(64, 2) == 64**2 // 2 == 2048  # k^2/2 (hw_reference 5.4)
    assert max_endpoints(64, 3) == 64**3 // 4 == 65536  # k^3/4 (Al-Fares 2008)
    assert max_endpoints(40, 2) == 800 and max_endpoints(40, 3) == 16000  # k = 40: 800 / 16,000 hosts
    full2 = clos_counts(2048, 64)
    assert (full2.tiers, full2.switches) == (2, 96)  # 3k/2 switches
    full3 = clos_counts(65536, 64)
    assert (full3.tiers, full3.switches, full3.cores, full3.fits) == (3, 5120, 1024, True)  # 5k^2/4, (k/2)^2 cores
    over = clos_counts(65537, 64)
    assert not over.fits


def test_three_tier_k40_full():
    c = clos_counts(16000, 40)
    assert (c.leaves, c.spines, c.cores) == (800, 800, 400)  # k^2/2, k^2/2, k^2/4 with k = 40 -> 2000 switches


def test_three_tier_partial_pod_k40():
    # non-blocking tree: N links at every tier boundary (hw_reference 5.4); k = 40, down = up = 20
    c = clos_counts(1024, 40)
    assert c.tiers == 3  # 1024 > k^2/2 = 800
    assert c.leaves == 52  # ceil(1024 / 20)
    assert (c.pods, c.leaves_per_pod, c.last_pod_leaves) == (3, 20, 12)  # pods of k/2 = 20 leaves: 20 + 20 + 12
    assert (c.spines_per_pod, c.last_pod_spines) == (20, 12)  # full: 20 x 20 / 20; partial: ceil(12 x 20 / 20)
    assert c.spines == 52  # 20 + 20 + 12 (was 3 x 20 = 60)
    assert c.leaf_spine_links == c.spine_core_links == 1040  # 52 leaves x 20 up, whole leaves (rule 2)
    assert c.cores == 26  # ceil(1040 / 40) (was 40)
    assert c.ports_free == (52 + 52 + 26) * 40 - 1024 - 2 * 1040 - 2 * 1040  # = 16 unused leaf downlinks


def test_gpt3_example_node_aligned_partial_pod():
    # gpucluster_lib/data/scenarios/gpt3-175b-1024-a100.yaml: 128 DGX A100 x 8 HDR ports, node-aligned fat tree on QM8700 (k = 40)
    d = design_topology(scen(server="dgx-a100-640gb", nodes=128, topology="fat-tree", switch="qm8700",
                             nic="connectx-6-hdr"))
    assert d.tiers == 3
    assert d.switches["leaf"] == 64  # 20 // 8 = 2 nodes per leaf: 16 down / 16 up; 128 / 2
    # pods of 20 leaves: 20 + 20 + 20 + 4; spines 3 x ceil(20 x 16 / 20) + ceil(4 x 16 / 20) = 3 x 16 + 4
    assert d.switches["spine"] == 52
    assert d.switches["core"] == 26  # ceil(1024 spine uplinks / 40) (was 32, with 1280 spine-core links)
    assert d.links == {"node_leaf": 1024, "leaf_spine": 1024, "spine_core": 1024}  # N at every tier boundary
    assert d.oversubscription_by_tier == {"leaf": 1.0, "spine": 1.0}
    assert d.bisection_bandwidth_gbps == 1024 / 2 * 200  # HDR 200 Gb/s, full bisection
    f = codes(d)
    assert "640" in f["topology-node-aligned-limit"].message  # 40 leaves x 16 used downlinks, not k^2/2 = 800
    assert d.max_endpoints_by_tiers["2"] == 640
    assert "4 of 20 leaves: 4 spines" in f["topology-partial-pod"].message


def test_node_aligned_limit_only_when_leaf_ports_idle():
    d = design_topology(scen(nodes=128, topology="fat-tree"))  # QM9700: 32 // 8 = 4 nodes, all 32 downlinks used
    assert "topology-node-aligned-limit" not in codes(d)
    d = design_topology(scen(nodes=64, topology="fat-tree", switch="qm8700", nic="connectx-6-hdr",
                             server="dgx-a100-640gb"))
    # 512 endpoints <= 640: two tiers, 32 leaves of 16 down; the finding still states the 640 limit
    assert d.tiers == 2 and "640 endpoints, not 800" in codes(d)["topology-node-aligned-limit"].message


@pytest.mark.parametrize("args", [(1024, 40), (4096, 64), (3072, 64), (1024, 64, 2.0, 3)])
def test_three_tier_plan_uses_every_port_once(args):
    c = clos_counts(*args)
    rows = list(three_tier_plan(c))
    ls = [r for r in rows if r[0] == "leaf-spine"]
    sc = [r for r in rows if r[0] == "spine-core"]
    assert len(ls) == c.leaf_spine_links and len(sc) == c.spine_core_links
    assert len({(r[3], r[4]) for r in ls}) == c.spines and len({r[4] for r in sc}) == c.cores
    leaf_ports = [(r[1], r[2]) for r in ls]
    spine_ports = [(r[3], r[4], r[5]) for r in ls] + [(r[1], r[2], r[3]) for r in sc]
    core_ports = [(r[4], r[5]) for r in sc]
    for ports in (leaf_ports, spine_ports, core_ports):
        assert len(ports) == len(set(ports))
    assert max(p for r in ls for p in (r[2], r[5])) <= c.radix and max(p for r in sc for p in (r[3], r[5])) <= c.radix
    assert len({(r[1], r[4]) for r in sc}) == c.pods * c.cores  # every core reaches every pod


def test_balanced_divisor_rule():
    # 24 leaves x 32 uplinks on 64-port spines: 12 spines would do by ports, but 12 does not divide 32
    assert balanced_divisor(32, 24, 64) == 16  # NVIDIA H100 RA Table 4, 3 SUs: 16 spines
    assert balanced_divisor(32, 65, 64) is None  # more leaves than a spine has ports


# --------------------------------------------------------------------------- published designs


@pytest.mark.parametrize("nodes,leaf,spine,node_cables,leaf_spine", [
    (31, 8, 4, 252, 256),    # NVIDIA DGX H100 SuperPOD RA Table 4, 1 SU (31 nodes + UFM)
    (63, 16, 8, 508, 512),   # Table 4, 2 SUs
    (95, 24, 16, 764, 768),  # Table 4, 3 SUs
    (127, 32, 16, 1020, 1024),  # Table 4, 4 SUs
])
def test_dgx_h100_superpod_table4(nodes, leaf, spine, node_cables, leaf_spine):
    d = design_topology(scen(nodes=nodes, fabric_manager_ports=4, scalable_unit_nodes=32))
    assert d.tiers == 2
    assert d.switches == {"leaf": leaf, "spine": spine, "core": 0}
    assert d.links["node_leaf"] == node_cables
    assert d.links["leaf_spine"] == leaf_spine


@pytest.mark.parametrize("nodes,leaf,spine,core,cables", [
    # docs.nvidia.com/dgx-superpod/reference-architecture-scalable-infrastructure-b200 (SU table)
    (64, 16, 8, 0, 512),        # NVIDIA DGX B200 SuperPOD RA, 2 SUs
    (128, 32, 16, 0, 1024),     # 4 SUs
    (256, 64, 32, 0, 2048),     # 8 SUs: the largest two-tier (k^2/2 = 2048 GPUs)
    (512, 128, 128, 64, 4096),  # 16 SUs: three tiers, 4096 / 4096 / 4096
    (1024, 256, 256, 128, 8192),  # 32 SUs
    (2048, 512, 512, 256, 16384),  # 64 SUs
])
def test_dgx_b200_superpod_table(nodes, leaf, spine, core, cables):
    d = design_topology(scen(server="dgx-b200", nodes=nodes))
    assert d.switches == {"leaf": leaf, "spine": spine, "core": core}
    assert d.links["node_leaf"] == cables and d.links["leaf_spine"] == cables
    assert d.links["spine_core"] == (cables if core else 0)
    assert d.tiers == (3 if core else 2)


@pytest.mark.parametrize("nodes,leaf,spine,cables", [
    (64, 16, 8, 512),     # NVIDIA DGX B300 SuperPOD (NDR) RA Table 3: 1 SU of 64 nodes
    (128, 32, 16, 1024),  # 2 SUs
    (256, 64, 32, 2048),  # 4 SUs
])
def test_sixty_four_node_units_need_two_leaves_per_rail(nodes, leaf, spine, cables):
    # 64 nodes per SU on 64-port leaves with 32 down: 2 leaves per rail, 16 per SU (hw_reference 5.3)
    d = design_topology(scen(server="dgx-b200", nodes=nodes, scalable_unit_nodes=64))
    assert d.switches == {"leaf": leaf, "spine": spine, "core": 0}
    assert d.links["node_leaf"] == cables and d.links["leaf_spine"] == cables
    assert d.leaves_per_su == 16
    df = d.cable_list()
    row = df[(df.a_end == "node0033") & (df.a_port == 1)].iloc[0]
    assert (row.b_end, row.b_port) == ("leaf-su01-r1-2", 1)  # node 33 of the SU: second leaf of rail 1, port 1


def test_128_and_1024_dgx_h100_counts():
    d128 = design_topology(scen(nodes=128))
    assert d128.switches == {"leaf": 32, "spine": 16, "core": 0}  # 4 SUs x 8 rails; 1024 uplinks / 64
    assert d128.scalable_units == 4 and d128.switch_hops == 3
    assert d128.bisection_bandwidth_gbps == 1024 / 2 * 400  # full bisection: N/2 x 400 Gb/s
    d1024 = design_topology(scen(nodes=1024))
    assert d1024.switches == {"leaf": 256, "spine": 256, "core": 128}  # same pattern as B200 32 SUs
    assert d1024.links == {"node_leaf": 8192, "leaf_spine": 8192, "spine_core": 8192}
    assert d1024.switch_hops == 5 and d1024.diameter_links == 6


def test_transceivers_and_power_128_dgx_h100():
    d = design_topology(scen(nodes=128))
    comp = [g for g in d.link_groups if g.network == "compute"]
    node_leaf = next(g for g in comp if g.tier == "node-leaf")
    # DGX H100: 4 twin-port OSFP cages per node (User Guide) -> 128 x 4 = 512 flat-top modules
    assert (node_leaf.node_end, node_leaf.node_end_modules) == ("mma4z00-ns-flt", 512)
    # switch side: 1024 node links / 2 per twin module = 512; leaf-spine 2 ends x 1024 / 2 = 1024
    assert sum(g.switch_end_modules for g in comp) == 512 + 1024
    # 48 QM9700 at 747 W typical + 1536 modules x 15 W = 35,856 + 23,040 W
    assert d.network_summary()["compute"]["power_w"] == pytest.approx(48 * 747 + 1536 * 15)
    assert d.network_summary()["compute"]["rack_units"] == 48  # 1U each


# --------------------------------------------------------------------------- oversubscription


def test_two_to_one_halves_spine_facing_links():
    full = design_topology(scen(nodes=128, scalable_unit_nodes=32))
    half = design_topology(scen(nodes=128, scalable_unit_nodes=32, oversubscription=2.0))
    assert full.links["leaf_spine"] == 1024
    assert half.links["leaf_spine"] == 512  # 32 leaves x 16 uplinks (32 nodes down / 2)
    assert half.switches["spine"] == 8  # 512 / 64
    assert half.switches["leaf"] == full.switches["leaf"] == 32


def test_generic_two_to_one_1024_endpoints():
    c = clos_counts(1024, 64, 2.0)
    # 42 down / 22 up -> ceil(1024/42) = 25 leaves; 25 x 22 = 550 links; spines: divisors of 22, 25*22/11 = 50 <= 64
    assert (c.leaves, c.up_per_leaf, c.leaf_spine_links, c.spines) == (25, 22, 550, 11)


def test_per_gpu_bandwidth_oversubscription_and_rail_alignment():
    nb = design_topology(scen(nodes=128))
    assert nb.per_gpu_allreduce_gbps == 400  # 8 x 400 Gb/s NICs for 8 GPUs, non-blocking
    rail = design_topology(scen(nodes=128, oversubscription=2.0, scalable_unit_nodes=32))
    # x = (128 - 32) / 127 of a rail's peers are outside its leaf; 400 / (2 x 0.7559) = 264.6
    assert rail.per_gpu_allreduce_gbps == pytest.approx(400 / (2 * 96 / 127), rel=1e-3)
    ft = design_topology(scen(nodes=128, topology="fat-tree", oversubscription=2.0))
    # node-aligned leaf: 42 // 8 = 5 nodes (40 down, 20 up); x = 123/127; 400 / (2 x 0.9685) = 206.5
    assert ft.per_gpu_allreduce_gbps == pytest.approx(400 / (2 * 123 / 127), rel=1e-3)
    assert rail.per_gpu_allreduce_gbps > ft.per_gpu_allreduce_gbps


def test_effective_port_bandwidth():
    assert effective_port_gbps(400, 1.0, 1.0) == 400
    assert effective_port_gbps(400, 4.0, 1.0) == 100  # Al-Fares Sec 2.1: 1/r of host bandwidth at worst
    assert effective_port_gbps(400, 2.0, 0.5) == 400  # half the traffic stays local: no slow-down


def test_fabric_gbps_per_gpu_reads_topology():
    s = scen(nodes=128, oversubscription=2.0, scalable_unit_nodes=32)
    cat = load_catalog()
    hw = resolve_hardware(s, cat)
    assert fabric_gbps_per_gpu(s, hw, cat) == design_topology(s, cat).per_gpu_allreduce_gbps
    s2 = s.replace(network__inter_node_gbps_per_gpu=123.0)
    assert fabric_gbps_per_gpu(s2, hw, cat) == 123.0  # the override still wins


# --------------------------------------------------------------------------- other topologies


def test_single_switch_and_ring_and_tree():
    d = design_topology(scen(nodes=4, topology="single-switch"))
    assert d.tiers == 1 and d.switches["leaf"] == 1 and d.links["node_leaf"] == 32  # 4 x 8 ports on one QM9700
    r = ring_counts(4, 2)
    assert (r.links, r.diameter_links, r.bisection_links) == (4, 2, 2)  # 4-node ring: 4 links, 2 hops, cut 2
    r8 = ring_counts(6, 8)
    assert r8.links == 6 * 4  # 4 parallel links to each neighbour
    t = tree_counts(100, 64, 3.0)
    # 48 down / 16 up: ceil(100/48) = 3 leaves, root takes 64 // 16 = 4 children -> 2 tiers
    assert (t.tiers, t.leaves, t.roots, t.leaf_up_links, t.max_endpoints) == (2, 3, 1, 48, 4 * 48)


def test_ring_design_bandwidth():
    d = design_topology(scen(nodes=4, topology="ring", switch=None))
    assert d.links == {"node_node": 16}  # 4 nodes x 8 ports / 2
    assert d.bisection_bandwidth_gbps == 8 * 400  # two neighbour pairs x 4 links cut
    assert d.switches == {"leaf": 0, "spine": 0, "core": 0}


def test_breakout_on_800g_switch():
    d = design_topology(scen(nodes=128, switch="sn5600", topology="fat-tree"))
    assert d.breakout == 2 and d.radix == 128 and d.link_gbps == 400  # 64 x 800G split into 128 x 400G
    assert d.switches["leaf"] == 16  # 128 nodes / (64 // 8 = 8 nodes per 64-down leaf)
    assert "topology-breakout" in codes(d)


# --------------------------------------------------------------------------- bad input


def test_oversubscription_below_one_is_rejected():
    with pytest.raises(ScenarioError, match=r"network\.oversubscription: must be at least 1"):
        scen(oversubscription=0.5)
    with pytest.raises(ScenarioError, match=r"network\.oversubscription"):
        leaf_port_split(64, 0.5)


def test_radix_and_tiers_bad_values():
    with pytest.raises(ScenarioError, match=r"network\.switch"):
        clos_counts(10, 1)
    with pytest.raises(ScenarioError, match=r"network\.tiers: must be at most 3"):
        scen(tiers=4)
    with pytest.raises(ScenarioError, match=r"network\.tiers"):
        clos_counts(10, 64, tiers=4)
    with pytest.raises(ScenarioError, match=r"network\.tiers"):
        max_endpoints(64, 5)
    with pytest.raises(ScenarioError, match=r"hardware\.nodes"):
        clos_counts(-1, 64)


def test_radix_too_small_for_tiers_is_a_finding():
    d = design_topology(scen(nodes=512, tiers=2))  # 4096 endpoints > 2048 = 64^2/2
    f = codes(d)["topology-too-few-tiers"]
    assert f.severity == "error" and f.field == "network.tiers" and "2,048" in f.message
    assert d.tiers == 3  # the counts shown use the tiers that fit


def test_single_switch_too_small_is_a_finding():
    d = design_topology(scen(nodes=16, topology="single-switch"))  # 128 ports > 64
    f = codes(d)["topology-too-few-tiers"]
    assert f.field == "network.topology" and f.severity == "error"


def test_more_endpoints_than_three_tiers_hold():
    d = design_topology(scen(nodes=8193, topology="fat-tree"))  # 65,544 > 65,536 = 64^3/4
    f = codes(d)["topology-over-capacity"]
    assert f.severity == "error" and "65,536" in f.message


def test_extra_tiers_and_mismatches_are_findings():
    d = design_topology(scen(nodes=16, tiers=3))
    assert codes(d)["topology-extra-tiers"].severity == "info"
    d = design_topology(scen(nodes=16, nic="connectx-6-dx-100gbe", nics_per_node=8))
    assert codes(d)["topology-protocol-mismatch"].field == "network.switch"
    d = design_topology(scen(nodes=16, switch="qm8700"))
    assert codes(d)["topology-slow-switch"].severity == "warning" and d.link_gbps == 200
    d = design_topology(scen(nodes=16, mgmt_switch="sn2201"))
    assert codes(d)["topology-mgmt-slow"].field == "network.mgmt_switch"
    d = design_topology(scen(nodes=16, nics_per_node=4))
    assert codes(d)["topology-rail-misaligned"].field == "network.nics_per_node"
    d = design_topology(scen(nodes=100, scalable_unit_nodes=32))
    assert "28 node slots are free" in codes(d)["topology-partial-su"].message  # 4 x 32 - 100


def test_bad_ids_and_nodes_raise():
    with pytest.raises(UnknownIdError, match=r"network\.switch: unknown"):
        design_topology(scen(switch="qm9701"))
    with pytest.raises(ScenarioError, match=r"hardware\.nodes: must be a positive integer"):
        design_topology(scen(), nodes=0)
    with pytest.raises(ScenarioError, match=r"network\.nics_per_node"):
        design_topology(scen(nodes=4, topology="ring", nics_per_node=1, switch=None))


# --------------------------------------------------------------------------- cabling data and list


def test_cabling_file_is_sourced_and_valid():
    cab = load_cabling()
    assert set(cab.length_classes) == {"in-rack", "in-row", "hall"}
    assert all(t.source for t in cab.transceivers.values())
    assert cab.transceivers["mms4x00-nm"].power_w == 17  # NVIDIA MMS4X00-NM page: 17 W
    assert cab.transceivers["mma4z00-ns400"].power_w == 9  # MMA4Z00-NS400 page: 9 W maximum
    assert cab.medium(400, "in-rack").cable == "DAC"


def test_cabling_validation_errors():
    good = {"length_classes": [{"id": c, "max_m": 1, "typical_m": 1, "source": "x"} for c in
                               ("in-rack", "in-row", "hall")],
            "media": [{"speed_gbps": 400, "length_class": c, "cable": "DAC", "source": "x"} for c in
                      ("in-rack", "in-row", "hall")],
            "layout": {"rack_width_m": 0.6, "row_pitch_m": 4.2, "slack_m": 5, "source": "x"}}
    parse_cabling(good)
    bad = json.loads(json.dumps(good))
    del bad["length_classes"][0]["source"]
    with pytest.raises(CatalogError, match="source"):
        parse_cabling(bad)
    bad = json.loads(json.dumps(good))
    bad["media"][0]["cable"] = "string"
    with pytest.raises(CatalogError, match="cable must be one of"):
        parse_cabling(bad)
    bad = json.loads(json.dumps(good))
    bad["media"][0]["switch_end"] = "nope"
    with pytest.raises(CatalogError, match="unknown transceiver"):
        parse_cabling(bad)


def test_cable_list_uses_every_switch_port_once():
    d = design_topology(scen(nodes=128))
    df = d.cable_list()
    comp = df[df.network == "compute"]
    assert len(comp) == 2048  # 1024 node-leaf + 1024 leaf-spine
    ends = list(zip(comp.b_end, comp.b_port, strict=True)) + list(zip(comp[comp.tier != "node-leaf"].a_end,
                                                          comp[comp.tier != "node-leaf"].a_port, strict=True))
    assert len(ends) == len(set(ends))
    assert comp.b_port.max() <= 64
    first = comp.iloc[0]
    assert (first.a_end, first.a_port, first.b_end, first.b_port) == ("node0001", 1, "leaf-su01-r1", 1)


def test_growth_table_monotone():
    g = growth_table(scen(), node_counts=[16, 128, 256, 512])
    assert list(g.tiers) == [2, 2, 2, 3]  # 256 nodes = 2048 endpoints is the two-tier limit
    assert list(g.switches) == sorted(g.switches)


# --------------------------------------------------------------------------- CLI contract


def test_cli_json_contract(capsys, tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text("hardware: {server: dgx-h100, nodes: 128}\nnetwork: {topology: rail-optimized, switch: qm9700, "
                    "nic: connectx-7-ndr, nics_per_node: 8}\n")
    csv = tmp_path / "c.csv"
    assert cli.main(["topology", str(path), "--json", "--cables", str(csv)]) == 0
    out = json.loads(capsys.readouterr().out)
    for key in ("kind", "tiers", "endpoints", "switches", "links", "cables", "transceivers", "max_endpoints",
                "bisection_bandwidth_gbps", "oversubscription", "network_power_w", "network_rack_units",
                "per_gpu_allreduce_gbps", "findings"):
        assert key in out
    assert out["switches"] == {"leaf": 32, "spine": 16, "core": 0}
    assert out["endpoints"] == 1024 and out["max_endpoints"] == 2048
    assert csv.read_text().startswith("network,tier,a_end,a_port,b_end,b_port,cable,length_class")
    assert cli.main(["topology", str(path), "--nodes", "0"]) == 2
    assert "--nodes: must be a positive whole number of nodes, got 0" in capsys.readouterr().err
    assert math.isfinite(out["network_power_w"])


# --------------------------------------------------------------------------- drawing


def test_drawing_aggregates_large_fabrics():
    from gpucluster_lib.charts.topology import graph_frames, growth_chart, topology_chart

    small_nodes, small_edges = graph_frames(design_topology(scen(nodes=16)))
    assert (small_nodes.role == "compute").sum() == 16  # every node drawn
    assert (small_nodes.role == "leaf").sum() == 8 and (small_nodes.role == "spine").sum() == 4
    big_nodes, _ = graph_frames(design_topology(scen(nodes=1024)))
    assert "SU 3: 32 nodes" in set(big_nodes.label)  # 32 SUs drawn as 32 groups
    assert len(big_nodes) < 100
    exp_nodes, _ = graph_frames(design_topology(scen(nodes=1024)), expand="SU 3")
    assert "node0065" in set(exp_nodes.label) and "SU 3: 32 nodes" not in set(exp_nodes.label)
    spec = topology_chart(design_topology(scen(nodes=16))).to_dict()
    assert len(spec["layer"]) >= 3
    from gpucluster_lib.charts.topology import PrebuiltChart, topology_spec

    for n in (16, 1024):  # the widget's fast path gives the same Vega-Lite spec as altair
        d = design_topology(scen(nodes=n))
        assert topology_spec(d) == topology_chart(d).to_dict()
        assert PrebuiltChart(topology_spec(d)).to_dict() == topology_chart(d).to_dict()
    small, big = (PrebuiltChart(topology_spec(design_topology(scen(nodes=n)))) for n in (16, 1024))
    assert small != big and small == PrebuiltChart(topology_spec(design_topology(scen(nodes=16))))
    table = growth_table(scen(), node_counts=[16, 64])
    g = growth_chart(table)
    assert "hconcat" in g.to_dict()
    from gpucluster_lib.charts.topology import growth_spec

    assert growth_spec(table) == g.to_dict()


def _good_cabling() -> dict:
    return {"length_classes": [{"id": c, "max_m": 1, "typical_m": 1, "source": "x"} for c in
                               ("in-rack", "in-row", "hall")],
            "transceivers": [{"id": "t1", "name": "t", "links": 2, "speed_gbps": 400, "reach_m": 50, "power_w": 15,
                              "source": "x"}],
            "media": [{"speed_gbps": 400, "length_class": c, "cable": "DAC", "source": "x"} for c in
                      ("in-rack", "in-row", "hall")],
            "layout": {"rack_width_m": 0.6, "row_pitch_m": 4.2, "slack_m": 5, "source": "x"}}


@pytest.mark.parametrize("mutate,match", [
    (lambda d: d["length_classes"].pop(2), "length class 'hall' is missing"),
    (lambda d: d["transceivers"][0].update(links=3), "links per module must be 1, 2, 4 or 8"),
    (lambda d: d["transceivers"][0].update(price_usd_estimate=-5), "expected a price >= 0"),
    (lambda d: d["transceivers"][0].update(power_w="15 W"), "expected a number >= 0"),
    (lambda d: d["transceivers"][0].pop("source"), "required value is missing"),
    (lambda d: d["media"][0].update(length_class="far"), "unknown length class"),
    (lambda d: d["media"].pop(1), "no medium for length class 'in-row'"),
    (lambda d: d["layout"].pop("row_pitch_m"), "row_pitch_m"),
])
def test_cabling_validation_branches(mutate, match):
    parse_cabling(_good_cabling())
    data = _good_cabling()
    mutate(data)
    with pytest.raises(CatalogError, match=match):
        parse_cabling(data)


def test_cabling_top_level_and_missing_file(tmp_path):
    with pytest.raises(CatalogError, match="top level must be a mapping"):
        parse_cabling(["not", "a", "mapping"])
    with pytest.raises(CatalogError, match="not found"):
        load_cabling(str(tmp_path / "missing.yaml"))


def test_length_classes_from_layout():
    cab = load_cabling()
    # 600 mm racks, 4.2 m row pitch, 5 m slack: one row of 8 racks -> 2.4 + 0 + 5 = 7.4 m (multimode)
    assert cab.span_m(8, 10) == pytest.approx(7.4)
    assert cab.length_class_for(7.4) == "in-row"
    # 256 racks in 26 rows of 10: 3 + 12.5 x 4.2 + 5 = 60.5 m > 50 m multimode reach -> single mode
    assert cab.span_m(256, 10) == pytest.approx(60.5)
    assert cab.length_class_for(60.5) == "hall"


def test_bandwidth_cache_follows_the_scenario():
    from gpucluster_lib.network.topology import per_gpu_allreduce_gbps

    cat = load_catalog()
    s = scen(nodes=128, scalable_unit_nodes=32)
    assert per_gpu_allreduce_gbps(s, cat, 128) == 400
    s2 = s.replace(network__oversubscription=2.0)
    assert per_gpu_allreduce_gbps(s2, cat, 128) == pytest.approx(264.6, abs=0.1)  # not the cached 400


def test_cli_drawing_export(tmp_path, capsys):
    path = tmp_path / "s.yaml"
    path.write_text("hardware: {server: dgx-h100, nodes: 16}\nnetwork: {topology: rail-optimized, switch: qm9700}\n")
    svg = tmp_path / "d.svg"
    assert cli.main(["topology", str(path), "--drawing", str(svg)]) == 0
    assert svg.read_text().lstrip().startswith("<svg")
    assert "16 nodes" in capsys.readouterr().out
    assert cli.main(["topology", str(path), "--drawing", str(tmp_path / "d.pdfx")]) == 2
    assert "--drawing: must end in .svg, .png or .html" in capsys.readouterr().err


def test_contract_counts_are_compute_fabric_and_flat():
    d = design_topology(scen(nodes=128))
    # compute fabric of 128 DGX H100, one row of racks: 2048 multimode fibres (node-leaf + leaf-spine)
    assert d.cables == {"fibre-mmf:in-row": 2048}
    assert d.transceivers == {"mma4z00-ns": 1536, "mma4z00-ns-flt": 512}  # see test_transceivers_and_power
    assert sum(d.cables_all.values()) > sum(d.cables.values())  # management and storage come on top
    assert sum(d.cables.values()) == sum(g.cables for g in d.link_groups if g.network == "compute")


def test_cost_module_contract():
    # economics.cost prices the bill of materials: kind, id and count of every switch, cable and
    # transceiver of the compute, storage and management networks
    d = design_topology(scen(nodes=128))
    assert sum(d.switches.values()) == 48 and sum(d.cables.values()) == 2048
    bom = d.bom()
    kinds = {row["kind"] for row in bom}
    assert kinds == {"switch", "cable", "transceiver"}
    assert all({"kind", "id", "count", "network"} <= set(row) for row in bom)
    assert sum(r["count"] for r in bom if r["kind"] == "switch") == sum(g.count for g in d.switch_groups)
    assert sum(r["count"] for r in bom if r["kind"] == "cable") == sum(d.cables_all.values())


def test_cable_list_matches_counts_for_a_partial_pod_three_tier_fabric():
    """128 DGX A100 on QM8700 (k=40): pods of 20+20+20+4 leaves; non-blocking needs N = 1,024 links
    at every tier; spines 3 x 16 + ceil(4 x 16 / 20) = 52, cores ceil(1024 / 40) = 26."""
    from pathlib import Path

    from gpucluster_lib.network.cablelist import cable_list
    from gpucluster_lib.scenario import load_scenario

    root = Path(__file__).resolve().parent.parent
    d = design_topology(load_scenario(root / "gpucluster_lib/data/scenarios/gpt3-175b-1024-a100.yaml"))
    df = cable_list(d)
    comp = df[df["network"] == "compute"]
    assert comp.groupby("tier").size().to_dict() == {"node-leaf": 1024, "leaf-spine": 1024, "spine-core": 1024}
    sc = comp[comp["tier"] == "spine-core"]
    assert sc["a_end"].nunique() == 52 and sc["b_end"].nunique() == 26
    ends = list(zip(comp["a_end"], comp["a_port"], strict=True)) + list(zip(comp["b_end"], comp["b_port"], strict=True))
    assert len(ends) == len(set(ends))  # no switch port used twice
