"""The operations plans as report sections (and the Operations tab's HTML): the software
stack, the security checklist and the data-management plan, in words and tables with units.

:func:`sections` returns ``(title, html, findings)`` triples; ``report.render`` wraps them as
its sections and the app's Operations tab shows the same HTML, so both read one design.
"""

from __future__ import annotations

import html
from typing import Any

from gpucluster_lib.findings import Finding
from gpucluster_lib.formatting import format_value, singular_where_one
from gpucluster_lib.units import GB, TB

SCHEDULERS = {"slurm": "SLURM", "kubernetes": "Kubernetes", "both": "SLURM and Kubernetes"}
MANAGERS = {"base-command-manager": "NVIDIA Base Command Manager", "warewulf": "Warewulf", "xcat": "xCAT",
            "maas": "Canonical MAAS", "none": "none"}
OS_IMAGES = {"ubuntu-22.04": "Ubuntu 22.04 LTS", "ubuntu-24.04": "Ubuntu 24.04 LTS", "rocky-9": "Rocky Linux 9",
             "rhel-9": "Red Hat Enterprise Linux 9", "dgx-os-6": "NVIDIA DGX OS 6"}
RUNTIMES = {"enroot-pyxis": "enroot with the pyxis SLURM plug-in", "apptainer": "Apptainer",
            "containerd": "containerd", "docker": "Docker"}


def _e(x: Any) -> str:
    """HTML-escaped, with "1 node(s)" written "1 node" and "2 node(s)" "2 nodes"."""
    return html.escape(singular_where_one(str(x)))


def _table(head: list[str], rows: list[list[Any]]) -> str:
    th = "".join(f"<th>{_e(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td style='text-align:left'>{_e(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table class='gc-table'><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


def _pairs(rows: list[tuple[str, str]]) -> str:
    return _table(["", ""], [[a, b] for a, b in rows]).replace("<thead><tr><th></th><th></th></tr></thead>", "")


def stack_html(plan: Any) -> str:
    """The software-stack plan: choices, head nodes and their roles, monitoring, queues."""
    st = plan.stack
    sw = st.gpu_software
    m = st.monitoring
    rows = [
        ("Operating system image", OS_IMAGES.get(st.os_image, st.os_image)),
        ("Cluster manager", MANAGERS.get(st.cluster_manager, st.cluster_manager)),
        ("Scheduler", SCHEDULERS[st.scheduler]),
        ("High availability", "yes: primary and standby management nodes" if st.ha else "no"),
        ("Head nodes", f"{st.head_nodes} ({st.head_nodes_recommended} recommended: {st.management_nodes} management"
                       + (f", {st.control_plane_nodes} Kubernetes control plane" if st.kubernetes else "")
                       + f", {st.login_nodes} login)"),
        ("GPU driver, CUDA, NCCL", f"{sw['driver']}, CUDA {sw['cuda']}, NCCL {sw['nccl']}"),
        ("Container runtime", RUNTIMES.get(sw["container_runtime"], sw["container_runtime"])),
        ("NVIDIA GPU operator", "yes" if sw["gpu_operator"] else "no"),
        ("NVIDIA network operator", "yes" if sw["network_operator"] else "no"),
        ("Compute fabric", sw["fabric"]),
        ("Monitoring", ", ".join(m.exporters) + f"; {m.servers} Prometheus server(s)"),
        ("Prometheus series", f"{format_value(m.series)} ({format_value(m.samples_per_s)} samples per second)"),
        ("Prometheus disk", f"{format_value(m.disk_bytes / GB)} GB per server for {m.retention_days:g} days"),
    ]
    if st.serving is not None:
        s = st.serving
        rows.append(("Serving replicas", f"{s.replicas_for_demand} for the demand + {s.spare_replicas} spare = "
                                         f"{s.replicas} x {s.gpus_per_replica} GPU(s) on {s.nodes} node(s)"))
        rows.append(("Load balancer", s.load_balancer))
    rows.append(("Training priority", f"fair share (weight {format_value(st.priority['PriorityWeightFairshare'])}), usage "
                                      f"half-life {st.priority['PriorityDecayHalfLife'].replace('-0', '')} days"))
    nodes = _table(["Head node", "Runs", "Cores", "Memory [GB]"],
                   [[s.name, ", ".join(s.roles), s.cpu_cores, s.memory_gb] for s in st.service_nodes])
    queues = _table(["Queue", "Nodes", "Priority tier", "Time limit", "Purpose"],
                    [[q.name, len(q.nodes), q.priority_tier, q.max_time.lower(), q.purpose] for q in st.queues])
    return _pairs(rows) + "<h4>Head nodes</h4>" + nodes + "<h4>Queues</h4>" + queues


def security_html(plan: Any) -> str:
    """The security checklist: each control with the reason this design needs it."""
    return _table(["Topic", "Control", "Why this design needs it", "NIST SP 800-53 family"],
                  [[i.topic, i.control, i.reason, i.family] for i in plan.security.items])


def data_html(plan: Any) -> str:
    """The data-management plan: steps, then the capacities."""
    dp = plan.data
    rows = list(dp.steps)
    if dp.fast_tier_capacity_bytes is not None:
        rows.append(("Fast tier", f"{format_value(dp.fast_tier_need_bytes / TB)} TB needed of "
                                  f"{format_value(dp.fast_tier_capacity_bytes / TB)} TB"))
    rows.append(("Capacity tier", f"{format_value(dp.capacity_tier_bytes / TB)} TB"))
    return _pairs(rows)


def sections(design: Any) -> list[tuple[str, str, list[Finding]]]:
    """(title, HTML, findings) of the software-stack, security and data-management sections."""
    plan = design.operations
    return [("Software stack and scheduler", stack_html(plan), list(plan.stack.findings)),
            ("Security plan", security_html(plan), list(plan.security.findings)),
            ("Data management", data_html(plan), list(plan.data.findings))]
