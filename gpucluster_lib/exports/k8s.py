"""Kubernetes files from a design: node labels and taints per role, the control plane, GPU and
network operator values, priority classes and the serving replicas.

* ``nodes.yaml``: one ``Node`` per head node of the control plane (label
  ``node-role.kubernetes.io/control-plane``, kubeadm's ``NoSchedule`` taint) and per compute
  node (role, rack and leaf-switch labels from the designed fabric, so pods can be placed by
  topology; GPU nodes tainted ``nvidia.com/gpu=present:NoSchedule`` so that only pods that
  ask for GPUs land there; serving nodes tainted with their role too).
* ``control-plane.yaml``: kubeadm ``ClusterConfiguration`` and ``InitConfiguration`` of a
  three-node control plane with stacked etcd (one etcd member on each control-plane node,
  kubeadm's "stacked etcd topology"), behind one API endpoint.
* ``gpu-operator-values.yaml`` / ``network-operator-values.yaml``: Helm values of NVIDIA's
  gpu-operator and network-operator charts (driver version, container toolkit, DCGM
  exporter, MIG strategy; RDMA shared device plug-in and OFED for InfiniBand).
* ``scheduling.yaml``: ``PriorityClass`` objects for serving (higher) and training.
* ``serving.yaml`` (with a serving demand): ``Namespace``, ``Deployment`` of N+1 replicas of
  the serving engine, each with its tensor-parallel GPUs, a ``Service`` of type LoadBalancer
  and a ``PodDisruptionBudget`` that keeps the N replicas the demand needs.

Every Kubernetes object validates against the Kubernetes OpenAPI schemas
(``kubernetes-validate``, tests/test_k8s_export.py); kubeadm's and Helm's files are not
Kubernetes objects and are checked for their keys.
"""

from __future__ import annotations

from typing import Any

import yaml

from gpucluster_lib.design import Design
from gpucluster_lib.exports.slurm import switch_tree

#: Kubernetes release the objects target (kubeadm v1beta3 configuration API).
KUBERNETES_VERSION = "v1.30.0"
#: Serving engine image (vLLM's OpenAI-compatible server; replace with the site's registry).
SERVING_IMAGE = "vllm/vllm-openai:v0.6.3"
API_ENDPOINT = "k8s-api.cluster.internal:6443"


class _NoAliases(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # libyaml when available: 10x faster
    """A YAML dumper that writes repeated objects out in full (no ``&id001`` anchors)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _dump(docs: list[dict[str, Any]]) -> str:
    return yaml.dump_all(docs, Dumper=_NoAliases, sort_keys=False, default_flow_style=False)


def _leaf_of(design: Design) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, kind, kids in switch_tree(design):
        if kind == "Nodes":
            for n in kids:
                out.setdefault(n, name)
    return out


def control_plane_nodes(design: Design) -> list[str]:
    """The three control-plane nodes: the plan's, else the first three head nodes (fewer when
    the design has fewer head nodes)."""
    st = design.operations.stack
    return list(st.control_plane) or [s.name for s in st.service_nodes[:3]]


def node_objects(design: Design) -> list[dict[str, Any]]:
    """``Node`` objects with labels and taints per role."""
    st = design.operations.stack
    npr = max(1, int(design.network.nodes_per_rack or 1))
    leaf = _leaf_of(design)
    serving = set(next((q.nodes for q in st.queues if q.name == "serving"), ()))
    docs: list[dict[str, Any]] = []
    for name in control_plane_nodes(design):
        docs.append({"apiVersion": "v1", "kind": "Node", "metadata": {
            "name": name, "labels": {"node-role.kubernetes.io/control-plane": "", "gpucluster/role": "control-plane",
                                     "gpucluster/etcd": "member"}},
            "spec": {"taints": [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]}})
    for i, name in enumerate(st.compute_nodes):
        role = "serving" if name in serving else "training"
        labels = {"node-role.kubernetes.io/worker": "", "gpucluster/role": role,
                  "gpucluster/rack": f"rack{i // npr + 1:03d}", "nvidia.com/gpu.count": str(st.gpus_per_node),
                  "gpucluster/gpu-type": st.gpu_type}
        if name in leaf:
            labels["gpucluster/leaf-switch"] = leaf[name]
        taints = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
        if role == "serving":
            taints.append({"key": "gpucluster/role", "value": "serving", "effect": "NoSchedule"})
        docs.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
                     "spec": {"taints": taints}})
    return docs


def kubeadm_config(design: Design) -> list[dict[str, Any]]:
    """kubeadm ``ClusterConfiguration`` (stacked etcd on each control-plane node) and ``InitConfiguration``."""
    cp = control_plane_nodes(design)
    return [
        {"apiVersion": "kubeadm.k8s.io/v1beta3", "kind": "ClusterConfiguration",
         "kubernetesVersion": KUBERNETES_VERSION, "clusterName": "gpucluster", "controlPlaneEndpoint": API_ENDPOINT,
         "etcd": {"local": {"dataDir": "/var/lib/etcd", "serverCertSANs": list(cp), "peerCertSANs": list(cp)}},
         "networking": {"podSubnet": "10.244.0.0/16", "serviceSubnet": "10.96.0.0/12"},
         "apiServer": {"certSANs": [API_ENDPOINT.split(":")[0], *cp],
                       "extraArgs": {"encryption-provider-config": "/etc/kubernetes/encryption-config.yaml"}}},
        {"apiVersion": "kubeadm.k8s.io/v1beta3", "kind": "InitConfiguration",
         "nodeRegistration": {"name": cp[0] if cp else "head01",
                              "taints": [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]}},
    ]


def gpu_operator_values(design: Design) -> dict[str, Any]:
    """Helm values of NVIDIA's gpu-operator chart for the design's driver and runtime."""
    st = design.operations.stack
    sw = st.gpu_software
    preinstalled = st.os_image.startswith("dgx-os")
    return {
        "operator": {"defaultRuntime": "containerd"},
        "driver": {"enabled": not preinstalled, "version": sw["driver"]},
        "toolkit": {"enabled": True},
        "devicePlugin": {"enabled": True},
        "dcgmExporter": {"enabled": True, "serviceMonitor": {"enabled": True}},
        "gfd": {"enabled": True},
        "mig": {"strategy": "single"},
        "daemonsets": {"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
                                       {"key": "gpucluster/role", "operator": "Exists", "effect": "NoSchedule"}]},
    }


def network_operator_values(design: Design) -> dict[str, Any]:
    """Helm values of NVIDIA's network-operator chart (RDMA for the compute fabric)."""
    ib = design.operations.stack.fabric == "InfiniBand"
    return {"nfd": {"enabled": True}, "sriovNetworkOperator": {"enabled": False}, "deployCR": True,
            "ofedDriver": {"deploy": True}, "rdmaSharedDevicePlugin": {"deploy": True},
            "ibKubernetes": {"deploy": ib}, "secondaryNetwork": {"deploy": True}}


def scheduling_objects(design: Design) -> list[dict[str, Any]]:
    """Priority classes: serving above training, so a training job never evicts a replica."""
    return [
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "serving"},
         "value": 100000, "globalDefault": False, "description": "inference replicas (N+1 behind the load balancer)"},
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "training"},
         "value": 1000, "globalDefault": True, "preemptionPolicy": "Never",
         "description": "training jobs; fair share between teams is the queue's"},
    ]


def serving_objects(design: Design) -> list[dict[str, Any]]:
    """Namespace, Deployment (N+1 replicas), LoadBalancer Service and PodDisruptionBudget; none without demand."""
    sp = design.operations.stack.serving
    if sp is None:
        return []
    labels = {"app": "llm-server"}
    model = design.scenario.model.preset or "model"
    container = {
        "name": "server", "image": SERVING_IMAGE,
        "args": ["--model", f"/models/{model}", "--tensor-parallel-size", str(sp.gpus_per_replica)],
        "ports": [{"containerPort": 8000, "name": "http"}],
        "resources": {"limits": {"nvidia.com/gpu": sp.gpus_per_replica}},
        "readinessProbe": {"httpGet": {"path": "/health", "port": 8000}, "periodSeconds": 10},
    }
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "serving"}},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "llm-server", "namespace": "serving"},
         "spec": {"replicas": sp.replicas, "selector": {"matchLabels": labels},
                  "template": {"metadata": {"labels": labels}, "spec": {
                      "priorityClassName": "serving", "nodeSelector": {"gpucluster/role": "serving"},
                      "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
                                      {"key": "gpucluster/role", "operator": "Equal", "value": "serving",
                                       "effect": "NoSchedule"}],
                      "containers": [container]}}}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "llm-server", "namespace": "serving"},
         "spec": {"type": "LoadBalancer", "selector": labels, "ports": [{"port": 80, "targetPort": 8000,
                                                                          "name": "http"}]}},
        {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
         "metadata": {"name": "llm-server", "namespace": "serving"},
         "spec": {"minAvailable": sp.replicas_for_demand, "selector": {"matchLabels": labels}}},
    ]


def k8s_files(design: Design) -> dict[str, str]:
    """{file name: YAML text} of the Kubernetes export."""
    files = {
        "nodes.yaml": _dump(node_objects(design)),
        "control-plane.yaml": _dump(kubeadm_config(design)),
        "gpu-operator-values.yaml": _dump([gpu_operator_values(design)]),
        "network-operator-values.yaml": _dump([network_operator_values(design)]),
        "scheduling.yaml": _dump(scheduling_objects(design)),
    }
    serving = serving_objects(design)
    if serving:
        files["serving.yaml"] = _dump(serving)
    return files


#: The files whose documents are Kubernetes API objects (validated against the OpenAPI schemas).
KUBERNETES_OBJECT_FILES = ("nodes.yaml", "scheduling.yaml", "serving.yaml")
