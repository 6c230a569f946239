"""The software-stack plan: OS image, cluster manager, scheduler, head nodes and their roles,
GPU software, monitoring, load balancing of the serving replicas and fair share for training.

:func:`plan_stack` reads the scenario's ``operations`` section and the design's hardware,
node, network and serving stages; every choice is a scenario key with a default, and the plan
explains itself in findings (codes ``ops-...``).

Head nodes (``hardware.head_nodes``, the nodes the cost stage prices) carry every service::

    management  = 2 with a redundant head node (reliability.redundant_head_node), else 1
                  (NVIDIA DGX SuperPOD RA, management servers: two Base Command Manager
                  nodes in HA; SLURM: SlurmctldHost primary + backup)
    control     = 3 with Kubernetes, else 0: etcd keeps quorum with (n - 1) / 2 = 1 member
                  lost out of 3 (etcd FAQ, "Why an odd number of cluster members?"); the
                  control plane runs on the head nodes, stacked etcd (kubeadm HA topology)
    login       = operations.login_nodes, default none below 32 compute nodes (one SuperPOD
                  scalable unit: users log in on the management node), else 2 with a redundant
                  head node or 1, plus one per 128 compute nodes above 128 (the SuperPOD RA
                  gives two SLURM login nodes to a 4-SU, 127-node SuperPOD)
    recommended = max(management, control) + login

Head-node size by compute nodes (cores, memory [GB]): a DGX SuperPOD control-plane node is
at least 2 x 32 cores and 1 TB of RAM (RA, management servers), used from one scalable unit
(32 nodes) up; below that ESTIMATES: 32 cores / 256 GB up to 31 nodes, 16 cores / 64 GB up
to 8 nodes (a cluster manager alone needs 4 cores and 8 GB: Penguin ClusterWare head-node
requirements).

Monitoring (Prometheus storage docs, "Operational aspects")::

    series      = GPUs x 21 (dcgm-exporter etc/default-counters.csv, 21 enabled fields)
                + hosts x operations.node_exporter_series
                + switch ports in use x 8 (ESTIMATE: bytes, packets, errors, discards in and out)
    samples/s   = series / operations.scrape_interval_s
    disk [B]    = retention [s] x samples/s x operations.bytes_per_sample (docs: 1-2 B/sample)

Serving (N+1): replicas = the serving stage's replicas for the demand + operations.serving_spare_replicas,
behind a load balancer, so one failed replica leaves the demand served.

References
----------
.. [1] NVIDIA DGX SuperPOD Reference Architecture, "Management Servers" (docs.nvidia.com/dgx-superpod).
.. [2] Prometheus documentation, "Storage", operational aspects (needed_disk_space formula).
.. [3] NVIDIA dcgm-exporter, etc/default-counters.csv (commit 00d6d344).
.. [4] CUDA Toolkit Release Notes, Table 3: CUDA toolkit and minimum driver versions.
.. [5] SLURM slurm.conf(5): PriorityType=priority/multifactor, PriorityDecayHalfLife (default 7-0).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from gpucluster_lib.findings import Finding, sort_findings
from gpucluster_lib.formatting import plural
from gpucluster_lib.scenario import Scenario
from gpucluster_lib.units import GB, SECONDS_PER_DAY

#: Enabled fields of dcgm-exporter's default counter set (etc/default-counters.csv [3]).
DCGM_SERIES_PER_GPU = 21
#: Series per switch port in use. ESTIMATE: bytes, packets, errors and discards, in and out.
SWITCH_SERIES_PER_PORT = 8
#: Compute nodes per extra login node above the first ones (SuperPOD RA: 2 for 127 nodes).
NODES_PER_LOGIN_NODE = 128
#: Nodes of a DGX SuperPOD scalable unit (RA): below it, login runs on the management node.
SCALABLE_UNIT_NODES = 32
#: etcd members of an HA control plane (tolerates one failure).
CONTROL_PLANE_NODES = 3
#: Head-node size by compute nodes: (up to nodes, cores, memory GB); the last row is the
#: SuperPOD control-plane minimum [1], the others ESTIMATES (see the module docstring).
HEAD_NODE_SIZES = ((8, 16, 64), (31, 32, 256), (math.inf, 64, 1024))
#: Local disk of a SuperPOD control-plane node for services (2 x 7.68 TB NVMe) [B] [1].
HEAD_NODE_LOCAL_DISK_BYTES = 2 * 7.68e12
#: Minimum driver branch per CUDA minor release (CUDA Toolkit Release Notes, Table 3 [4]).
MIN_DRIVER_FOR_CUDA = {"12.0": 525, "12.1": 530, "12.2": 535, "12.3": 545, "12.4": 550, "12.5": 555,
                       "12.6": 560, "12.8": 570, "12.9": 575}


@dataclass(frozen=True)
class ServiceNode:
    """One head node and the services it runs."""

    name: str
    roles: tuple[str, ...]
    cpu_cores: int
    memory_gb: int


@dataclass(frozen=True)
class Monitoring:
    """Prometheus sizing [2]. Disk in bytes; rates per second."""

    series: int
    gpu_series: int
    host_series: int
    switch_series: int
    samples_per_s: float
    retention_days: float
    bytes_per_sample: float
    disk_bytes: float
    servers: int
    exporters: tuple[str, ...]


@dataclass(frozen=True)
class ServingPlan:
    """Serving replicas behind a load balancer with spare replicas (N+1)."""

    replicas_for_demand: int
    spare_replicas: int
    replicas: int
    gpus_per_replica: int
    gpus: int
    nodes: int
    load_balancer: str


@dataclass(frozen=True)
class Queue:
    """A scheduler partition / queue: its nodes (names) and priority settings."""

    name: str
    nodes: tuple[str, ...]
    default: bool
    priority_tier: int
    max_time: str
    purpose: str


@dataclass
class StackPlan:
    """The software stack of a design. ``to_dict()`` is the CLI's JSON."""

    os_image: str
    cluster_manager: str
    scheduler: str
    slurm: bool
    kubernetes: bool
    ha: bool
    head_nodes: int
    head_nodes_recommended: int
    management_nodes: int
    control_plane_nodes: int
    login_nodes: int
    service_nodes: list[ServiceNode]
    slurm_controllers: list[str]
    control_plane: list[str]
    login_hosts: list[str]
    compute_nodes: list[str]
    gpus_per_node: int
    gpu_type: str
    cpu_sockets: int
    cores_per_socket: int
    threads_per_core: int
    memory_mib: int
    gpu_software: dict[str, Any]
    monitoring: Monitoring
    serving: ServingPlan | None
    queues: list[Queue]
    priority: dict[str, Any]
    fabric: str
    findings: list[Finding] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        m = self.monitoring
        return {
            "os_image": self.os_image, "cluster_manager": self.cluster_manager, "scheduler": self.scheduler,
            "ha": self.ha, "head_nodes": self.head_nodes, "head_nodes_recommended": self.head_nodes_recommended,
            "management_nodes": self.management_nodes, "control_plane_nodes": self.control_plane_nodes,
            "login_nodes": self.login_nodes,
            "service_nodes": [{"name": s.name, "roles": list(s.roles), "cpu_cores": s.cpu_cores,
                               "memory_gb": s.memory_gb} for s in self.service_nodes],
            "slurm_controllers": list(self.slurm_controllers), "control_plane": list(self.control_plane),
            "login_hosts": list(self.login_hosts), "compute_nodes": len(self.compute_nodes),
            "gpus_per_node": self.gpus_per_node, "gpu_type": self.gpu_type,
            "gpu_software": dict(self.gpu_software),
            "monitoring": {"series": m.series, "gpu_series": m.gpu_series, "host_series": m.host_series,
                           "switch_series": m.switch_series, "samples_per_s": m.samples_per_s,
                           "retention_days": m.retention_days, "bytes_per_sample": m.bytes_per_sample,
                           "disk_gb": m.disk_bytes / GB, "servers": m.servers, "exporters": list(m.exporters)},
            "serving": None if self.serving is None else dict(self.serving.__dict__),
            "queues": [{"name": q.name, "nodes": len(q.nodes), "default": q.default, "priority_tier": q.priority_tier,
                        "max_time": q.max_time, "purpose": q.purpose} for q in self.queues],
            "priority": dict(self.priority),
            "findings": [f.to_dict() for f in self.findings],
        }


# --------------------------------------------------------------------------- pure functions


def recommended_head_nodes(ha: bool, kubernetes: bool, login: int) -> tuple[int, int, int]:
    """(management, control-plane, recommended total) head nodes; see the module docstring."""
    management = 2 if ha else 1
    control = CONTROL_PLANE_NODES if kubernetes else 0
    return management, control, max(management, control) + login


def default_login_nodes(nodes: int, ha: bool) -> int:
    """Dedicated login nodes: none below one scalable unit (32 nodes: users log in on the
    management node), else 2 with HA or 1, plus one per 128 compute nodes above 128 [count]."""
    if nodes < SCALABLE_UNIT_NODES:
        return 0
    base = 2 if ha else 1
    return base + max(0, math.ceil((nodes - NODES_PER_LOGIN_NODE) / NODES_PER_LOGIN_NODE))


def head_node_size(nodes: int) -> tuple[int, int]:
    """(CPU cores, memory GB) of a head node for ``nodes`` compute nodes (HEAD_NODE_SIZES)."""
    for limit, cores, mem in HEAD_NODE_SIZES:
        if nodes <= limit:
            return cores, mem
    raise AssertionError("unreachable")  # pragma: no cover


def prometheus_disk_bytes(series: int, scrape_interval_s: float, retention_days: float,
                          bytes_per_sample: float) -> float:
    """Prometheus local storage [B] = retention [s] x samples/s x bytes per sample [2].

    10,000 series scraped every 15 s for 15 days at 2 B/sample:
    1,296,000 s x 666.7 /s x 2 B = 1.728 GB.
    """
    return retention_days * SECONDS_PER_DAY * (series / scrape_interval_s) * bytes_per_sample


def gpu_type_name(accelerator_id: str) -> str:
    """The GRES type of an accelerator: its catalogue id up to the first dash (``h100-sxm5-80gb`` -> ``h100``)."""
    return re.sub(r"[^a-z0-9]", "", accelerator_id.split("-")[0].lower()) or "gpu"


def node_names(count: int, prefix: str = "node", width: int = 4) -> list[str]:
    """``node0001`` ... (the names of the network's cable list)."""
    return [f"{prefix}{i + 1:0{width}d}" for i in range(count)]


def _driver_branch(version: str) -> int | None:
    m = re.match(r"\s*(\d+)", version)
    return int(m[1]) if m else None


# --------------------------------------------------------------------------- the plan


def plan_stack(scenario: Scenario, catalog: Any, *, hardware: Any, node: Any, network: Any,
               serving: Any = None) -> StackPlan:
    """The software-stack plan of a design (see the module docstring for every rule)."""
    ops = scenario.operations
    findings: list[Finding] = []
    slurm = ops.scheduler in ("slurm", "both")
    k8s = ops.scheduler in ("kubernetes", "both")
    ha = bool(scenario.reliability.redundant_head_node)
    heads = int(scenario.hardware.head_nodes)
    nodes = int(hardware.nodes)
    login = ops.login_nodes if ops.login_nodes is not None else default_login_nodes(nodes, ha)
    management, control, recommended = recommended_head_nodes(ha, k8s, login)
    cores, mem = head_node_size(nodes)

    # ---- roles of the head nodes
    names = node_names(heads, "head", 2)
    roles: list[list[str]] = [[] for _ in names]
    core_n = max(management, control)
    if names:
        pair = min(management, heads) > 1
        for i in range(min(management, heads)):
            roles[i].append("cluster manager" + (" (primary)" if i == 0 and pair else " (standby)" if i else ""))
            if slurm:
                roles[i].append("SLURM controller" + (" (primary)" if i == 0 and pair else " (backup)" if i else ""))
        if slurm:
            roles[0].append("SLURM accounting database")
        for i in range(min(control, heads)):
            roles[i].append("Kubernetes control plane with etcd")
        for i in range(min(2 if ha else 1, heads)):
            roles[i].append("Prometheus")
        login_idx = list(range(core_n, min(heads, core_n + login)))
        if not login_idx:
            login_idx = [0]
        for i in login_idx:
            roles[i].append("login")
    else:
        login_idx = []
    service = [ServiceNode(n, tuple(r), cores, mem) for n, r in zip(names, roles, strict=True)]
    controllers = names[:min(management, heads)] if slurm else []
    control_plane = names[:min(control, heads)] if k8s else []
    login_hosts = [names[i] for i in login_idx]

    if heads == 0:
        findings.append(Finding("ops-no-head-node", "warning",
                                "no head node: the scheduler, cluster manager and monitoring run on compute node "
                                "node0001 and take its resources from jobs",
                                fix=f"use {plural(recommended, 'head node')}", field="hardware.head_nodes"))
    elif heads < recommended:
        needs = ", ".join(f"{n} {what}" for n, what in ((management, "management"), (control, "control-plane"),
                                                        (login, "login")) if n)
        findings.append(Finding("ops-head-nodes-short", "warning",
                                f"{plural(heads, 'head node')} for {needs} roles: {recommended} recommended, so services "
                                "share nodes"
                                + (" and Kubernetes' etcd has no quorum after one failure" if k8s and heads < 3
                                   else ""),
                                fix=f"use {plural(recommended, 'head node')}", field="hardware.head_nodes"))
    else:
        findings.append(Finding("ops-head-nodes", "info",
                                f"{plural(heads, 'head node')}: {management} management" + (" (HA pair)" if ha else "")
                                + (f", {control} Kubernetes control plane with stacked etcd" if k8s else "")
                                + f", {login} login; each {cores} cores and {mem} GB for {nodes} compute nodes",
                                field="hardware.head_nodes"))

    # ---- compute node facts for the scheduler
    cpu = None
    if node.cpu_id:
        try:
            cpu = catalog.get("cpus", node.cpu_id)
        except Exception:  # a parts build may name a CPU outside the catalogue
            cpu = None
    sockets = max(1, int(node.cpu_count or 1))
    if cpu and cpu.get("cores"):
        cps = int(cpu["cores"])
        tpc = max(1, int(round(float(cpu.get("threads") or cps) / cps)))
    else:
        cps, tpc = 32, 2
        findings.append(Finding("ops-cpu-unknown", "info",
                                f"no CPU core count for the node: the scheduler files assume {sockets} x {cps} cores "
                                f"with {tpc} threads each", fix="name the node's CPU among its parts",
                                field="hardware.parts.cpus"))
    memory_mib = int(float(node.memory_gb or 0) * GB // 2**20)

    # ---- GPU software
    vendor = str(hardware.accelerator.get("vendor") or "")
    nvidia = vendor.upper().startswith("NVIDIA")
    runtime = ops.container_runtime or ("enroot-pyxis" if slurm else "containerd")
    gpu_operator = ops.gpu_operator if ops.gpu_operator is not None else k8s
    sw = catalog.get("switches", network.switch_id) if network.switch_id else None
    fabric = str((sw or {}).get("protocol") or "Ethernet")
    net_operator = ops.network_operator if ops.network_operator is not None else k8s
    gpu_sw: dict[str, Any] = {"os_image": ops.os_image, "driver": ops.gpu_driver, "cuda": ops.cuda,
                              "nccl": ops.nccl, "container_runtime": runtime, "gpu_operator": gpu_operator,
                              "network_operator": net_operator, "fabric": fabric}
    if not nvidia:
        findings.append(Finding("ops-non-nvidia-software", "info",
                                f"{hardware.accelerator_id} is a {vendor} accelerator: the driver, CUDA, NCCL and GPU "
                                "operator settings are NVIDIA's; use the vendor's stack (ROCm and RCCL for AMD)",
                                field="operations.cuda"))
    branch = _driver_branch(ops.gpu_driver)
    need = MIN_DRIVER_FOR_CUDA.get(".".join(ops.cuda.split(".")[:2]))
    if nvidia and branch is not None and need is not None and branch < need:
        findings.append(Finding("ops-driver-cuda", "warning",
                                f"CUDA {ops.cuda} needs driver branch {need} or newer, the plan has {ops.gpu_driver}: "
                                "only CUDA minor-version compatibility applies (no new features such as PTX JIT)",
                                fix=f"use a GPU driver of branch {need} or newer, or an older CUDA version",
                                field="operations.gpu_driver"))
    if k8s and fabric == "InfiniBand" and not net_operator:
        findings.append(Finding("ops-rdma-without-network-operator", "warning",
                                "Kubernetes pods on an InfiniBand fabric need the RDMA device plugin of the network "
                                "operator for GPUDirect RDMA", fix="turn the network operator on",
                                field="operations.network_operator"))

    # ---- monitoring
    hosts = nodes + heads
    ports = sum(g.ports_used for g in network.switch_groups)
    gpu_series = hardware.gpus * DCGM_SERIES_PER_GPU
    host_series = hosts * ops.node_exporter_series
    switch_series = ports * SWITCH_SERIES_PER_PORT
    series = gpu_series + host_series + switch_series
    disk = prometheus_disk_bytes(series, ops.scrape_interval_s, ops.retention_days, ops.bytes_per_sample)
    exporters = ["DCGM exporter (GPUs)" if nvidia else "vendor GPU exporter", "node exporter (hosts)",
                 "switch exporter (fabric ports)"] + (["SLURM exporter (queues, jobs)"] if slurm else []) + \
                (["kube-state-metrics"] if k8s else [])
    mon = Monitoring(series=series, gpu_series=gpu_series, host_series=host_series, switch_series=switch_series,
                     samples_per_s=series / ops.scrape_interval_s, retention_days=ops.retention_days,
                     bytes_per_sample=ops.bytes_per_sample, disk_bytes=disk, servers=2 if ha else 1,
                     exporters=tuple(exporters))
    findings.append(Finding("ops-monitoring-sized", "info",
                            f"Prometheus: {series:,} series ({gpu_series:,} GPU, {host_series:,} host, "
                            f"{switch_series:,} switch) every {ops.scrape_interval_s:g} s = "
                            f"{mon.samples_per_s:,.0f} samples/s; {ops.retention_days:g} days at "
                            f"{ops.bytes_per_sample:g} B/sample = {disk / GB:,.1f} GB per server",
                            field="operations.retention_days"))
    if disk > HEAD_NODE_LOCAL_DISK_BYTES:
        findings.append(Finding("ops-monitoring-disk", "warning",
                                f"Prometheus needs {disk / GB:,.0f} GB, more than a head node's "
                                f"{HEAD_NODE_LOCAL_DISK_BYTES / GB:,.0f} GB of local NVMe",
                                fix="keep metrics for fewer days or scrape them less often, or use "
                                    "remote storage", field="operations.retention_days"))

    # ---- serving replicas (N+1) and queues
    compute = node_names(nodes)
    gpn = hardware.gpus_per_node
    serving_plan = None
    demand = serving is not None and getattr(serving, "target_tokens_per_s", None) is not None \
        and int(getattr(serving, "replicas", 0) or 0) > 0
    if demand:
        tp = int(getattr(serving, "tensor_parallel", 1) or 1)
        n_rep = int(serving.replicas)
        total = n_rep + ops.serving_spare_replicas
        gpus = total * tp
        s_nodes = math.ceil(gpus / gpn)
        lb = "Kubernetes Service behind an L7 load balancer (least outstanding requests)" if k8s else \
            "L7 load balancer (least outstanding requests) over the replicas' endpoints"
        serving_plan = ServingPlan(n_rep, ops.serving_spare_replicas, total, tp, gpus, s_nodes, lb)
        if ops.serving_spare_replicas == 0:
            findings.append(Finding("ops-serving-no-headroom", "warning",
                                    f"{plural(n_rep, 'serving replica')} exactly {'meets' if n_rep == 1 else 'meet'} the demand: one failed replica "
                                    "drops requests", fix="keep one spare serving replica",
                                    field="operations.serving_spare_replicas"))
        if s_nodes > nodes:
            findings.append(Finding("ops-serving-exceeds-cluster", "warning",
                                    f"{total} replicas x {tp} GPUs = {gpus} GPUs on {s_nodes} nodes, more than the "
                                    f"cluster's {nodes}", fix="add nodes or lower the demand",
                                    field="hardware.nodes"))
        else:
            findings.append(Finding("ops-serving-replicas", "info",
                                    f"{plural(n_rep, 'replica')} for the demand + {ops.serving_spare_replicas} spare = "
                                    f"{total} x {tp} GPU{'' if tp == 1 else 's'} on {s_nodes} node{'' if s_nodes == 1 else 's'}, "
                                    "behind a load balancer",
                                    field="operations.serving_spare_replicas"))
    s_count = min(nodes, serving_plan.nodes) if serving_plan else 0
    serving_nodes = compute[nodes - s_count:] if s_count else []
    training_nodes = compute[:nodes - s_count] if s_count < nodes else compute
    queues = [Queue("training", tuple(training_nodes), True, 1, "UNLIMITED",
                    "training jobs, fair share between accounts")]
    if serving_nodes:
        queues.append(Queue("serving", tuple(serving_nodes), False, 10, "UNLIMITED",
                            "inference replicas (higher priority tier, not preempted)"))
    priority = {"PriorityType": "priority/multifactor",
                "PriorityDecayHalfLife": f"{ops.priority_decay_half_life_days:g}-0",
                "PriorityWeightFairshare": ops.fairshare_weight, "PriorityWeightAge": 1000,
                "PriorityWeightJobSize": 1000, "PriorityWeightPartition": 1000, "PriorityWeightQOS": 2000,
                "PriorityFavorSmall": "NO"}
    return StackPlan(
        os_image=ops.os_image, cluster_manager=ops.cluster_manager, scheduler=ops.scheduler, slurm=slurm,
        kubernetes=k8s, ha=ha, head_nodes=heads, head_nodes_recommended=recommended,
        management_nodes=management, control_plane_nodes=control, login_nodes=login, service_nodes=service,
        slurm_controllers=controllers, control_plane=control_plane, login_hosts=login_hosts,
        compute_nodes=compute, gpus_per_node=gpn, gpu_type=gpu_type_name(hardware.accelerator_id),
        cpu_sockets=sockets, cores_per_socket=cps, threads_per_core=tpc, memory_mib=memory_mib,
        gpu_software=gpu_sw, monitoring=mon, serving=serving_plan, queues=queues, priority=priority,
        fabric=fabric, findings=sort_findings(findings))
