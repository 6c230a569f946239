"""The security plan: a checklist derived from the design, each item with the reason it applies.

Items follow the controls of NIST SP 800-223 ("High-Performance Computing Security:
Architecture, Threat Analysis, and Security Posture", 2024: zones for access, management,
computing and data storage) and NIST SP 800-53 Rev. 5 control families (AC access control, IA
identification and authentication, SC system and communications protection, AU audit, SI
system integrity). An item appears when the design has what it protects: a management
network, BMCs, a scheduler, shared storage, a serving fleet, a Kubernetes control plane.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpucluster_lib.findings import Finding
from gpucluster_lib.formatting import plural
from gpucluster_lib.scenario import Scenario


@dataclass(frozen=True)
class SecurityItem:
    """One checklist item: the control, why this design needs it, its NIST SP 800-53 family."""

    topic: str
    control: str
    reason: str
    family: str


@dataclass
class SecurityPlan:
    items: list[SecurityItem]
    findings: list[Finding] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"items": [dict(i.__dict__) for i in self.items], "findings": [f.to_dict() for f in self.findings]}


def _hosts(names: list[str]) -> str:
    """``login host head01`` / ``login hosts head03, head04`` (the users' entry points)."""
    if not names:
        return "no login host"
    return ("login host " if len(names) == 1 else "login hosts ") + ", ".join(names)


def plan_security(scenario: Scenario, *, hardware: Any, network: Any, storage: Any, stack: Any,
                  data: Any = None) -> SecurityPlan:
    """The checklist of a design; every item's reason names the design's own numbers."""
    nets = network.network_summary()
    mgmt = nets.get("management", {})
    hosts = hardware.nodes + stack.head_nodes
    switches = sum(g.count for g in network.switch_groups)
    items: list[SecurityItem] = []

    def add(topic: str, control: str, reason: str, family: str) -> None:
        items.append(SecurityItem(topic, control, reason, family))

    add("Management network isolation",
        "Keep provisioning and management traffic on its own network and VLANs, reachable only from the head "
        "nodes and an administrators' jump host; no route from the compute or storage fabrics.",
        f"the design has a management network of {plural(mgmt.get('switches', 0), 'switch', 'switches')} and "
        f"{mgmt.get('links', 0):,} links to {hosts:,} hosts; whoever reaches it can reinstall any node",
        "SC-7 boundary protection")
    add("Out-of-band (BMC) network",
        "Put every BMC (IPMI/Redfish) on a separate out-of-band network, change default credentials, disable "
        "IPMI over LAN where Redfish suffices, keep BMC firmware patched.",
        f"{hosts} servers and {switches} switches have management controllers with full power and console "
        "control", "AC-17 remote access")
    add("User authentication",
        "Central identities (LDAP or Active Directory) with Kerberos or SSO and multi-factor login on the "
        "login nodes; SSH keys or certificates, no shared accounts.",
        f"{_hosts(stack.login_hosts)} {'is' if len(stack.login_hosts) == 1 else 'are'} the users' entry point to "
        f"{hardware.gpus:,} GPUs",
        "IA-2 identification and authentication")
    if stack.slurm:
        add("SLURM authentication (MUNGE)",
            "AuthType=auth/munge with one MUNGE key on every node, readable only by the munge user; rotate it when "
            "a node leaves; slurmdbd on the head node only.",
            f"slurmctld on {', '.join(stack.slurm_controllers) or 'the head node'} trusts any request signed with "
            f"the cluster key from {hardware.nodes:,} compute node{'s' if hardware.nodes != 1 else ''}",
            "IA-3 device identification")
    if stack.kubernetes:
        add("Kubernetes control plane",
            "RBAC with least privilege, TLS between all components, etcd encrypted at rest "
            "(EncryptionConfiguration) and reachable only from the API servers, Pod Security admission "
            "'restricted' for user namespaces.",
            f"the control plane with etcd runs on {plural(len(stack.control_plane), 'head node')} and holds every secret "
            "of the cluster", "AC-6 least privilege")
    cap = storage.capacity_tb
    data_tb = getattr(data, "dataset_bytes", None)
    add("Encryption at rest",
        "Self-encrypting drives or file-system encryption on the shared storage and node NVMe, keys in a key "
        "manager (KMIP) rather than on the appliances; crypto-erase drives before return.",
        (f"{storage.appliances} {storage.system} appliance(s) hold {cap:,.0f} TB" if cap else
         "node-local drives hold the data set and checkpoints")
        + (f", including the {data_tb / 1e12:,.1f} TB data set" if data_tb else "")
        + " and the model checkpoints, the most valuable artefact", "SC-28 protection of information at rest")
    add("Encryption in flight",
        "TLS for every service (web UIs, APIs, Prometheus, the container registry); keep the RDMA fabrics "
        "physically closed, since RDMA traffic is not encrypted, or use IPsec/MACsec offload on Ethernet.",
        f"the {stack.fabric} compute fabric and the storage network carry model weights and data in clear",
        "SC-8 transmission confidentiality")
    add("Secrets",
        "A secrets manager (Vault or the cluster manager's) for BMC, database and registry credentials; no "
        "secrets in images, job scripts or the scenario files.",
        f"{hosts} BMC passwords, the MUNGE key and service credentials must be issued and rotated",
        "IA-5 authenticator management")
    add("Audit and intrusion detection",
        "auditd and central log collection from every host, scheduler accounting kept a year, file-integrity "
        "monitoring of the node image, and an intrusion-detection system on the login and management networks.",
        f"{hosts} hosts and {_hosts(stack.login_hosts)} shared by many users; GPU clusters are targets for "
        "cryptomining and model theft", "AU-6 audit review; SI-4 system monitoring")
    add("Node image and firmware integrity",
        f"Secure Boot with a signed {stack.os_image} image from the cluster manager, signed GPU/NIC/BMC firmware, "
        "a patch window per month with rolling reboots.",
        (f"{hardware.nodes:,} compute nodes boot the same image: one compromised image is every node"
         if hardware.nodes != 1 else "the one compute node boots this image: a compromised image is the whole cluster"),
        "SI-7 software and firmware integrity")
    if stack.serving is not None:
        add("Tenant isolation for inference",
            "One namespace or partition per tenant, network policies between them, API gateway authentication "
            "and rate limits, MIG or whole GPUs per tenant (no time-slicing across tenants), no shared KV caches.",
            f"{plural(stack.serving.replicas, 'serving replica')} {'answers' if stack.serving.replicas == 1 else 'answer'} outside requests next to the training jobs",
            "SC-4 information in shared resources; AC-4 information flow")
    findings: list[Finding] = []
    if stack.slurm and stack.kubernetes:
        findings.append(Finding("ops-security-two-schedulers", "info",
                                "SLURM and Kubernetes both schedule onto the nodes: one identity source and one "
                                "audit log must cover both", field="operations.scheduler"))
    return SecurityPlan(items, findings)
