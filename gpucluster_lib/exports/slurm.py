"""SLURM configuration from a design: ``slurm.conf``, ``gres.conf`` and ``topology.conf``.

* ``slurm.conf``: the compute nodes with their real sockets, cores, threads and memory
  (``RealMemory`` in MiB) and ``Gres=gpu:<type>:<GPUs per node>``, one partition per queue of
  the stack plan (training with fair share, serving in a higher priority tier), the
  multifactor priority settings, and ``SlurmctldHost`` for the primary and, with a redundant
  head node, the backup controller.
* ``gres.conf``: the GPU devices of every compute node.
* ``topology.conf`` (``topology/tree``): the designed compute fabric read from the network's
  cable list, so SLURM's topology-aware placement follows the real switches: each leaf switch
  with the nodes cabled to it, each spine with its leaves, each core with its spines. In a
  rail-optimised fabric every node is cabled to one leaf per rail; the leaves of a scalable
  unit that serve the same nodes are one switch to SLURM (named after the unit), because the
  tree plugin places a node under exactly one leaf.

Keys and their meaning: slurm.conf(5), gres.conf(5), topology.conf(5) (SLURM 22.05).
:class:`SlurmSite` holds what the design cannot know (addresses, paths, ports, the
authentication plugin); the defaults are the Debian package's paths and MUNGE.
"""

from __future__ import annotations

import re
import weakref
from collections import defaultdict
from dataclasses import dataclass, field

from gpucluster_lib.design import Design


@dataclass(frozen=True)
class SlurmSite:
    """Site settings of the generated files (not part of the design)."""

    cluster_name: str = "gpucluster"
    #: ``name`` or ``name(address)`` of each controller; default: the plan's head nodes
    controllers: tuple[str, ...] = ()
    #: NodeAddr of every compute node (None: the node names resolve)
    node_addr: str | None = None
    auth_type: str = "auth/munge"
    cred_type: str = "cred/munge"
    slurm_user: str = "slurm"
    state_save_location: str = "/var/spool/slurmctld"
    slurmd_spool_dir: str = "/var/spool/slurmd"
    slurmctld_pid_file: str = "/run/slurmctld.pid"
    slurmd_pid_file: str = "/run/slurmd.pid"
    slurmctld_log_file: str = "/var/log/slurm/slurmctld.log"
    slurmd_log_file: str = "/var/log/slurm/slurmd.log"
    slurmctld_port: int = 6817
    slurmd_port: int = 6818
    accounting: str = "accounting_storage/slurmdbd"
    extra: dict[str, str] = field(default_factory=dict)


# --------------------------------------------------------------------------- host lists


def hostlist(names: list[str]) -> str:
    """SLURM host-list expression of ``names`` (``node[0001-0004,0007]``), in the given order.

    Names are grouped by their alphabetic prefix and digit width; consecutive numbers become
    ranges (the inverse of ``scontrol show hostnames``).
    """
    groups: dict[tuple[str, int, str], list[int]] = {}
    order: list[tuple[str, int, str]] = []
    plain: list[str] = []
    for n in names:
        m = re.fullmatch(r"(.*?)(\d+)([^\d]*)", n)
        if not m:
            plain.append(n)
            continue
        key = (m[1], len(m[2]), m[3])
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(int(m[2]))
    parts = list(plain)
    for key in order:
        prefix, width, suffix = key
        nums = sorted(set(groups[key]))
        ranges: list[str] = []
        start = prev = nums[0]
        for x in [*nums[1:], None]:
            if x is not None and x == prev + 1:
                prev = x
                continue
            ranges.append(f"{start:0{width}d}" if start == prev else f"{start:0{width}d}-{prev:0{width}d}")
            if x is not None:
                start = prev = x
        if len(nums) == 1 and not suffix:
            parts.append(f"{prefix}{nums[0]:0{width}d}")
        else:
            parts.append(f"{prefix}[{','.join(ranges)}]{suffix}")
    return ",".join(parts)


# --------------------------------------------------------------------------- topology

#: The switch tree of each design (the Kubernetes labels and both SLURM files read it).
_TREES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def switch_tree(design: Design) -> list[tuple[str, str, list[str]]]:
    """(switch, "Nodes" or "Switches", children) of the compute fabric, leaves first.

    From the network's cable list: node-leaf cables give each leaf its nodes (leaves serving
    the same nodes, the rails of a scalable unit, are merged), leaf-spine cables each spine
    its leaves, spine-core cables each core its spines. A single switch lists every node; a
    ring (no switch) gives an empty tree.
    """
    cached = _TREES.get(design)
    if cached is not None:
        return list(cached)
    df = design.network.cable_list()
    df = df[df["network"] == "compute"]
    # ordered sets (dicts): a leaf of a large fabric has thousands of cables
    leaf_nodes: dict[str, dict[str, None]] = defaultdict(dict)
    up: dict[str, dict[str, dict[str, None]]] = {"leaf-spine": defaultdict(dict), "spine-core": defaultdict(dict)}
    for tier, a, b in zip(df["tier"].tolist(), df["a_end"].tolist(), df["b_end"].tolist(), strict=True):
        if tier in ("node-leaf", "node-switch"):
            if not a.startswith("node"):
                continue  # the fabric manager is not a SLURM node
            leaf_nodes[b][a] = None
        elif tier in up:
            up[tier][b][a] = None
    # merge leaves with the same node set (rails of one scalable unit)
    group_of: dict[str, str] = {}
    by_set: dict[tuple[str, ...], str] = {}
    out: list[tuple[str, str, list[str]]] = []
    for leaf, nodes in leaf_nodes.items():
        key = tuple(sorted(nodes))
        if key not in by_set:
            m = re.match(r"leaf-(su\d+)-r\d+(-\d+)?$", leaf)
            name = (m[1] + (m[2] or "")) if m else leaf
            by_set[key] = name
            out.append((name, "Nodes", sorted(nodes)))
        group_of[leaf] = by_set[key]
    for spine, leaves in up["leaf-spine"].items():
        kids = list(dict.fromkeys(group_of.get(leaf, leaf) for leaf in leaves))
        out.append((spine, "Switches", kids))
    for core, spines in up["spine-core"].items():
        out.append((core, "Switches", list(spines)))
    _TREES[design] = tuple(out)
    return out


# --------------------------------------------------------------------------- files


def _controllers(design: Design, site: SlurmSite) -> list[str]:
    if site.controllers:
        return list(site.controllers)
    plan = design.operations.stack
    return list(plan.slurm_controllers) or (["head01"] if plan.head_nodes else [plan.compute_nodes[0]])


def slurm_conf(design: Design, site: SlurmSite | None = None) -> str:
    """The ``slurm.conf`` of a design."""
    site = site or SlurmSite()
    st = design.operations.stack
    tree = switch_tree(design)
    lines = [f"# slurm.conf for {design.scenario.name}: {len(st.compute_nodes)} nodes x {st.gpus_per_node} "
             f"{st.gpu_type} GPUs", "# generated by gpucluster_lib from the design; see slurm.conf(5)",
             f"ClusterName={site.cluster_name}"]
    for host in _controllers(design, site):
        lines.append(f"SlurmctldHost={host}")
    lines += [
        f"AuthType={site.auth_type}", f"CredType={site.cred_type}", f"SlurmUser={site.slurm_user}",
        f"SlurmctldPort={site.slurmctld_port}", f"SlurmdPort={site.slurmd_port}",
        f"StateSaveLocation={site.state_save_location}", f"SlurmdSpoolDir={site.slurmd_spool_dir}",
        f"SlurmctldPidFile={site.slurmctld_pid_file}", f"SlurmdPidFile={site.slurmd_pid_file}",
        f"SlurmctldLogFile={site.slurmctld_log_file}", f"SlurmdLogFile={site.slurmd_log_file}",
        "ProctrackType=proctrack/cgroup", "TaskPlugin=task/affinity,task/cgroup",
        "SelectType=select/cons_tres", "SelectTypeParameters=CR_Core_Memory", "GresTypes=gpu",
        f"TopologyPlugin={'topology/tree' if tree else 'topology/none'}",
        "ReturnToService=2", "SlurmctldTimeout=120", "SlurmdTimeout=300",
        f"AccountingStorageType={site.accounting}",
        *(["AccountingStorageTRES=gres/gpu"] if site.accounting.endswith("slurmdbd") else []),
        "JobAcctGatherType=jobacct_gather/cgroup", "MpiDefault=none",
        "# fair share and priority of the training queue (priority/multifactor)",
    ]
    for key, value in st.priority.items():
        lines.append(f"{key}={value}")
    for key, value in site.extra.items():
        lines.append(f"{key}={value}")
    lines.append("# compute nodes")
    node_line = (f"NodeName={hostlist(st.compute_nodes)}"
                 + (f" NodeAddr={site.node_addr}" if site.node_addr else "")
                 + f" Sockets={st.cpu_sockets} CoresPerSocket={st.cores_per_socket}"
                 f" ThreadsPerCore={st.threads_per_core} RealMemory={max(1, st.memory_mib)}"
                 f" Gres=gpu:{st.gpu_type}:{st.gpus_per_node} State=UNKNOWN")
    lines.append(node_line)
    lines.append("# partitions: one per queue of the stack plan")
    for q in st.queues:
        lines.append(f"PartitionName={q.name} Nodes={hostlist(list(q.nodes))} Default={'YES' if q.default else 'NO'}"
                     f" MaxTime={q.max_time} PriorityTier={q.priority_tier} State=UP")
    return "\n".join(lines) + "\n"


def gres_conf(design: Design) -> str:
    """The ``gres.conf`` of a design: every compute node's GPUs as devices."""
    st = design.operations.stack
    last = st.gpus_per_node - 1
    files = "/dev/nvidia0" if last == 0 else f"/dev/nvidia[0-{last}]"
    return ("# gres.conf: GPUs of the compute nodes; see gres.conf(5)\n"
            f"NodeName={hostlist(st.compute_nodes)} Name=gpu Type={st.gpu_type} File={files}\n")


def topology_conf(design: Design) -> str:
    """The ``topology.conf`` of a design (``topology/tree``), from the designed fabric."""
    lines = ["# topology.conf: the compute fabric as designed (leaves, spines, cores); see topology.conf(5)"]
    for name, kind, kids in switch_tree(design):
        lines.append(f"SwitchName={name} {kind}={hostlist(kids)}")
    return "\n".join(lines) + "\n"


def slurm_files(design: Design, site: SlurmSite | None = None) -> dict[str, str]:
    """{file name: text} of the three files."""
    return {"slurm.conf": slurm_conf(design, site), "gres.conf": gres_conf(design),
            "topology.conf": topology_conf(design)}
