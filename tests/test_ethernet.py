"""Ethernet (RoCE) AI fabrics: Spectrum-X and two other vendors, counted like InfiniBand; multi-plane."""

import pytest

from gpucluster_lib.catalog import load_catalog
from gpucluster_lib.network.topology import design_topology
from gpucluster_lib.scenario import from_dict


@pytest.fixture(scope="module")
def cat():
    return load_catalog()


def test_switch_datasheets(cat):
    sn = cat.get("switches", "sn5600")
    # NVIDIA SN5000 manual, Data Interfaces: SN5600 64 x 800GbE (or 128 x 400GbE), 2U
    assert (sn["protocol"], sn["ports"], sn["port_speed_gbps"], sn["rack_units"]) == ("Ethernet", 64, 800, 2)
    a = cat.get("switches", "arista-7808r3")
    # Arista 7800R3 Platform Architecture, Table 1: 7808R3 288 x 400G in 16 RU
    assert (a["vendor"], a["ports"], a["port_speed_gbps"], a["rack_units"]) == ("Arista", 288, 400, 16)
    t5 = cat.get("switches", "arista-7060x6-64pe")
    # Arista 7060X6 product page: 64 x 800G OSFP, 2RU, Tomahawk 5 (51.2 Tb/s = 64 x 800G one way)
    assert (t5["ports"] * t5["port_speed_gbps"], t5["rack_units"]) == (51_200, 2)
    assert cat.get("switches", "cisco-nexus-9364e-sg2")["vendor"] == "Cisco"
    vendors = {r["vendor"] for r in cat.records("switches") if r["protocol"] == "Ethernet" and r["port_speed_gbps"] >= 400}
    assert {"NVIDIA", "Arista", "Cisco"} <= vendors
    nic = cat.get("nics", "bluefield-3-supernic-400g")
    assert (nic["protocol"], nic["speed_gbps"]) == ("Ethernet", 400)  # Spectrum-X: 400 Gb/s RoCE per GPU
    for r in cat.records("switches") + cat.records("nics"):
        assert r["source"] and r["source_date"], r["id"]


def fabric(switch, nodes=64, nic="connectx-7-ndr", topology="rail-optimized", **net):
    return from_dict({"hardware": {"server": "dgx-h100", "nodes": nodes},
                      "network": {"topology": topology, "switch": switch, "nic": nic, **net}})


def test_roce_counts_equal_infiniband_at_equal_radix(cat):
    # QM9700 (InfiniBand, 64 x 400G) and Minipack2 (Ethernet, 64 x 400G): the same Clos
    ib = design_topology(fabric("qm9700"), cat)
    eth = design_topology(fabric("meta-minipack2"), cat)
    assert ib.switches == eth.switches and ib.links == eth.links
    assert ib.bisection_bandwidth_gbps == eth.bisection_bandwidth_gbps
    assert sum(ib.cables.values()) == sum(eth.cables.values())
    assert sum(ib.transceivers.values()) == sum(eth.transceivers.values())
    # 64 DGX H100 x 8 rails, 32 down a leaf: 2 SUs of 32 nodes, 8 leaves each; 16 leaves, 8 spines
    # (as NVIDIA's DGX SuperPOD H100 RA Table 4 at 2 SUs with 64 nodes: 16 leaf, 8 spine)
    assert ib.switches["leaf"] == 16 and ib.switches["spine"] == 8
    assert not [f for f in eth.findings if f.code == "topology-protocol-mismatch"]


def test_ethernet_nic_on_infiniband_switch_is_a_mismatch(cat):
    t = design_topology(fabric("qm9700", nic="bluefield-3-supernic-400g"), cat)
    assert any(f.code == "topology-protocol-mismatch" and f.severity == "error" for f in t.findings)


def test_spectrum_x_with_breakout(cat):
    # BlueField-3 SuperNIC 400G on SN5600 800G ports: each port splits into 2 x 400G, radix 128
    t = design_topology(fabric("sn5600", nodes=128, nic="bluefield-3-supernic-400g"), cat)
    assert t.radix == 128 and t.link_gbps == 400
    # 1,024 endpoints: k = 128 holds k^2/2 = 8,192 in two tiers; 64 down a leaf -> 16 leaves, 8 spines
    assert (t.tiers, t.switches["leaf"], t.switches["spine"]) == (2, 16, 8)
    assert t.bisection_bandwidth_gbps == pytest.approx(1024 / 2 * 400)


def test_multi_plane_removes_a_tier(cat):
    # 1,024 DGX H100 x 8 ports = 8,192 endpoints on 64-port switches: more than k^2/2 = 2,048, so one
    # fabric needs three tiers. Four planes of 2 ports a node: 2,048 endpoints each -> two tiers
    # of k = 64 (node-aligned: 16 nodes x 2 ports a leaf -> 64 leaves, 32 spines) per plane.
    one = design_topology(from_dict({"hardware": {"server": "dgx-h100", "nodes": 1024},
                                     "network": {"topology": "fat-tree", "switch": "qm9700"}}), cat)
    four = design_topology(from_dict({"hardware": {"server": "dgx-h100", "nodes": 1024},
                                      "network": {"topology": "fat-tree", "switch": "qm9700", "planes": 4}}), cat)
    assert one.tiers == 3 and four.tiers == 2
    assert four.switches == {"leaf": 4 * 64, "spine": 4 * 32, "core": 0}
    assert four.links["node_leaf"] == 8192 and four.links["leaf_spine"] == 8192
    assert four.bisection_bandwidth_gbps == pytest.approx(8192 / 2 * 400)  # same as one non-blocking fabric
    assert sum(g.count for g in four.switch_groups if g.network == "compute") == 384
    assert sum(g.count for g in one.switch_groups if g.network == "compute") > 384
