"""Sourced assumptions of the node and facility power models, in one place.

Every number the node builder (:mod:`gpucluster_lib.hardware.node`) and the facility budget
(:mod:`gpucluster_lib.facility.site`) use that is not in the catalogue lives here, with its
source or, where no published figure was read, the reasoning behind the estimate
(marked ESTIMATE). :data:`ASSUMPTIONS` lists them for the docs and the app.

References
----------
.. [1] I. Latif et al., "Single-Node Power Demand During AI Training: Measurements on an
       8-GPU NVIDIA H100 System", IEEE Access 13 (2025) 61740-61747 (arXiv:2412.08602):
       maximum observed draw about 8.4 kW, 18% below the rated 10.2 kW, GPUs near full use.
.. [2] A. C. Newkirk et al., "Empirically-Calibrated H100 Node Power Models ...",
       arXiv:2506.14551 (2025): compute-intensive training runs at 76% of the 10.2 kW rating.
.. [3] Fan affinity laws (ASHRAE Handbook HVAC Systems and Equipment, ch. 21 "Fans"):
       fan power scales with the cube of speed, so 80% speed draws 0.8^3 = 51% power.
.. [4] US National Electrical Code (NFPA 70) 210.19(A)/210.20(A): continuous loads sized at
       125% of the load, i.e. loaded to at most 80% of the rating; Lambda's workstation
       guidance applies the same 80% rule (1,440 W on a 1,800 W, 15 A / 120 V circuit).
.. [5] 80 PLUS Titanium/Platinum requirements (CLEAResult): efficiency peaks near 50% load
       and falls towards full load, so supplies are best run well below their rating.
.. [6] ANSI/TIA-942-B (2017), data centre telecommunications infrastructure: cold aisles of
       at least 1.2 m (two floor tiles) and hot aisles of at least 0.9 m; hot/cold aisle layout.
.. [7] hw_reference.md section 5.2 (Uptime Institute surveys; air cooling ceiling of about
       30 kW per rack; direct liquid cooling 50-120 kW per rack; NVIDIA DGX RA rack powers).
.. [8] AMD EPYC 7002/7003 platform: 128 PCIe lanes per socket in one-socket systems; in
       two-socket systems half of each socket's lanes carry the inter-socket (xGMI) links,
       leaving 128 lanes (up to 160 with three xGMI links) for I/O in total.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Assumption:
    name: str
    value: float
    unit: str
    source: str


# ------------------------------------------------------------------ node: typical vs peak
#: GPU draw in sustained training as a fraction of TDP. ESTIMATE bracketed by [1] and [2]:
#: with the other fractions below, a DGX H100 comes to 0.80 of its 10.2 kW rating, between
#: the 76% [2] and 82% [1] measured at node level.
GPU_TYPICAL_FRACTION = 0.85
#: Host CPUs feed the GPUs (data loading, launch) and rarely sit at TDP in GPU training. ESTIMATE.
CPU_TYPICAL_FRACTION = 0.5
#: DRAM draw under the same load. ESTIMATE.
MEMORY_TYPICAL_FRACTION = 0.6
#: NICs and optics run close to their maximum while the fabric carries traffic. ESTIMATE.
NIC_TYPICAL_FRACTION = 0.8
#: NVMe drives are mostly idle between checkpoint writes and data-set reads. ESTIMATE.
DRIVE_TYPICAL_FRACTION = 0.5
#: Fans at about 80% speed draw 0.8^3 = 0.51 of their full-speed power [3].
FAN_TYPICAL_FRACTION = 0.51

# ------------------------------------------------------------------ node: component powers
#: Registered DIMM power per GB of capacity at load [W/GB]: a 64 GB DDR4-3200 / DDR5-4800
#: RDIMM draws roughly 6-10 W under load; 8 W / 64 GB = 0.125 W/GB. ESTIMATE (vendor power
#: calculators; not read in this session).
DIMM_W_PER_GB = 0.125
#: Enterprise U.2/U.3 NVMe drive, active maximum [W]: PCIe 4.0 drives are specified at
#: 20-25 W, within the 25 W U.2 slot budget. ESTIMATE for rows without max_power_w.
NVME_U2_W = 20.0
#: M.2 boot drive [W]: the catalogue's Micron 7400 PRO M.2 figure (storage.csv, 8.25 W).
NVME_M2_W = 8.25
#: Enterprise SATA SSD and 3.5 in HDD active power [W]. ESTIMATE / storage.csv (HDD 10 W).
SATA_SSD_W = 5.0
HDD_W = 10.0
#: NIC power when the catalogue row has no max_power_w, by port speed [Gb/s -> W].
#: Anchored on the ConnectX-7 NDR figure in nics.csv (24.9 W); ESTIMATE below and above.
NIC_W_BY_SPEED_GBPS: tuple[tuple[float, float], ...] = ((25, 10.0), (100, 15.0), (200, 20.0), (400, 25.0),
                                                         (800, 30.0))
#: Fans at full speed, as a fraction of the electronics (GPUs, CPUs, memory, NICs, drives).
#: ESTIMATE: dense GPU servers spend roughly 5-15% of their power on fans at full speed.
FAN_FRACTION = 0.10
#: Motherboard, BMC, GPU baseboard (NVSwitch, PCIe switches), voltage-regulator and power
#: supply conversion losses, as a fraction of the electronics. ESTIMATE: a Platinum/Titanium
#: supply alone loses 4-6% at the wall [5].
OTHER_FRACTION = 0.10
#: Share of the N supplies' capacity kept free at peak draw: at most 80% loading for
#: continuous loads [4], which also keeps the supplies near their efficient mid-load range [5]
#: and absorbs GPU power excursions above TDP that last milliseconds.
PSU_MARGIN = 0.20
#: A tower workstation placed on a rack shelf [U]: the DGX Station A100 is 639 mm tall
#: (servers.csv notes): 639 / 44.45 = 14.4, so 15U. ESTIMATE for towers without a height.
TOWER_RACK_UNITS = 15
#: Server weight per rack unit when the catalogue has none [kg/U]: DGX A100 123.16 kg / 6U =
#: 20.5, DGX H100 130.45 kg / 8U = 16.3 (servers.csv). ESTIMATE.
SERVER_KG_PER_U = 20.0

# ------------------------------------------------------------------ node: RAM rules
#: Below this much system memory a GPU node cannot stage data, pin buffers and run the
#: framework's host processes [GB]. ESTIMATE.
RAM_HARD_FLOOR_GB = 24.0
#: Recommended minimum system memory [GB]: 64 GB for any GPU node, and at least twice the
#: total GPU memory (Puget Systems' and Lambda's workstation guidance; NVIDIA's DGX A100/H100
#: ship 2 TB for 640 GB of GPU memory, 3.2x).
RAM_RECOMMENDED_FLOOR_GB = 64.0
RAM_PER_GPU_MEMORY = 2.0

# ------------------------------------------------------------------ rack
#: Rack units reserved in each compute rack for a 1U management (out-of-band) switch and a
#: 1U patch panel / cable manager; PDUs are vertical 0U strips. ESTIMATE.
RESERVED_RACK_UNITS = 2
#: Rack heat-density ceilings by cooling type [kW per rack] [7]: air with hot/cold aisle
#: containment about 30 kW; a rear-door heat exchanger about 50 kW (ESTIMATE, vendor ranges
#: 35-75 kW); direct liquid cooling 50-120 kW, 120 kW as for GB200 NVL72.
COOLING_DENSITY_LIMIT_KW = {"air": 30.0, "rear_door": 50.0, "liquid": 120.0}
#: Rack power limit when ``facility.rack_power_limit_kw`` is not given and the catalogue has no
#: vendor rack layout for the server [kW]. ESTIMATE: a 40 kW feed (two 3-phase 415 V 32 A
#: feeds at about 80% load is 2 x 18 kW; high-density AI rows are built for 40 kW and more).
DEFAULT_RACK_POWER_KW = 40.0
#: Share of the IT heat carried away by liquid: rear-door coils take all rack exhaust heat
#: into water (room-neutral design); direct-to-chip cold plates capture about 75% (GPUs,
#: CPUs), the rest leaves in air. ESTIMATE (ASHRAE TC 9.9 liquid cooling guidance: 60-80%).
LIQUID_HEAT_FRACTION = {"air": 0.0, "rear_door": 1.0, "liquid": 0.75}
#: Rack footprint [m]: 600 mm wide, 1200 mm deep (deep racks for GPU servers and cabling).
RACK_WIDTH_M = 0.6
RACK_DEPTH_M = 1.2
#: Aisles [m] [6]: cold aisle 1.2 m, hot aisle 0.9 m; 1.2 m clearance at each row end.
COLD_AISLE_M = 1.2
HOT_AISLE_M = 0.9
ROW_END_CLEARANCE_M = 1.2
#: Racks per row. ESTIMATE (rows of 10-20 racks are usual; Meta's RSC pods are 10 racks).
RACKS_PER_ROW = 10

# ------------------------------------------------------------------ hall: non-compute IT
#: Head / management node: a dual-socket 1U server with 2x 800 W supplies. ESTIMATE.
HEAD_NODE_PEAK_W = 750.0
HEAD_NODE_TYPICAL_W = 450.0
HEAD_NODE_RACK_UNITS = 1
HEAD_NODE_KG = 20.0
#: Shared storage appliance figures used when its catalogue row has none: 2.5 kW and 2U per
#: all-flash parallel file system appliance. ESTIMATE. (How many appliances: gpucluster_lib.facility.storage.)
STORAGE_APPLIANCE_W = 2500.0
STORAGE_APPLIANCE_RACK_UNITS = 2
STORAGE_APPLIANCE_KG = 45.0
#: Management (out-of-band) switch kept in each compute rack's reserved units, for the rack
#: fit (space, power and weight a rack must leave free): 48x 1GbE, 100 W, 1U (NVIDIA SN2201
#: row in switches.csv).
MGMT_SWITCH_W = 100.0
MGMT_SWITCH_KG = 10.0

# ------------------------------------------------------------------ power chain
#: UPS and generator redundancy: installed capacity per unit of required capacity, with the
#: load split over n = 2 working modules for N+1 (so N+1 installs 1.5x), 2N installs 2x.
UPS_MODULES_N_PLUS_1 = 2


ASSUMPTIONS: tuple[Assumption, ...] = (
    Assumption("GPU typical / TDP", GPU_TYPICAL_FRACTION, "", "estimate bracketed by Latif 2025 (82%) and "
               "Newkirk 2025 (76%) node measurements of DGX/HGX H100"),
    Assumption("CPU typical / TDP", CPU_TYPICAL_FRACTION, "", "estimate"),
    Assumption("memory typical / peak", MEMORY_TYPICAL_FRACTION, "", "estimate"),
    Assumption("NIC typical / max", NIC_TYPICAL_FRACTION, "", "estimate"),
    Assumption("drive typical / max", DRIVE_TYPICAL_FRACTION, "", "estimate"),
    Assumption("fan typical / full speed", FAN_TYPICAL_FRACTION, "", "fan affinity law, 0.8^3 (ASHRAE)"),
    Assumption("DIMM power", DIMM_W_PER_GB, "W/GB", "estimate: 8 W per 64 GB RDIMM"),
    Assumption("U.2 NVMe drive", NVME_U2_W, "W", "estimate: PCIe 4.0 U.2 drives 20-25 W"),
    Assumption("M.2 boot drive", NVME_M2_W, "W", "storage.csv Micron 7400 PRO"),
    Assumption("fans at full speed", FAN_FRACTION, "of electronics", "estimate"),
    Assumption("board, baseboard, VRM and PSU losses", OTHER_FRACTION, "of electronics", "estimate"),
    Assumption("PSU margin", PSU_MARGIN, "of peak", "80% continuous-load rule (NEC 210.19/210.20; "
               "Lambda 1,440 W guidance); 80 PLUS efficiency curve; GPU power excursions"),
    Assumption("RAM hard floor", RAM_HARD_FLOOR_GB, "GB", "estimate: data staging, pinned buffers, host processes"),
    Assumption("RAM recommended", RAM_RECOMMENDED_FLOOR_GB, "GB", "and 2x GPU memory (Puget/Lambda guidance)"),
    Assumption("reserved U per rack", RESERVED_RACK_UNITS, "U", "estimate: 1U OOB switch + 1U patch panel"),
    Assumption("air rack ceiling", COOLING_DENSITY_LIMIT_KW["air"], "kW", "Uptime / hw_reference 5.2"),
    Assumption("rear-door rack ceiling", COOLING_DENSITY_LIMIT_KW["rear_door"], "kW", "estimate (35-75 kW)"),
    Assumption("liquid rack ceiling", COOLING_DENSITY_LIMIT_KW["liquid"], "kW", "GB200 NVL72 ~120 kW"),
    Assumption("DLC heat to liquid", LIQUID_HEAT_FRACTION["liquid"], "", "estimate (ASHRAE TC 9.9: 60-80%)"),
    Assumption("rack footprint", RACK_WIDTH_M * RACK_DEPTH_M, "m2", "600 x 1200 mm"),
    Assumption("cold aisle", COLD_AISLE_M, "m", "TIA-942-B"),
    Assumption("hot aisle", HOT_AISLE_M, "m", "TIA-942-B"),
    Assumption("racks per row", RACKS_PER_ROW, "", "estimate"),
    Assumption("head node", HEAD_NODE_PEAK_W, "W", "estimate: 1U dual-socket server"),
    Assumption("storage appliance", STORAGE_APPLIANCE_W, "W", "estimate: 2U all-flash, 1 per 20 nodes"),
)
