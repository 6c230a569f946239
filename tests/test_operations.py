"""The operations stage: software stack, monitoring, serving headroom, security and data plans."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpucluster_lib.design import Design
from gpucluster_lib.errors import ScenarioError
from gpucluster_lib.operations.dataplan import text_dataset_bytes, token_id_bytes
from gpucluster_lib.operations.stack import (
    default_login_nodes,
    gpu_type_name,
    head_node_size,
    prometheus_disk_bytes,
    recommended_head_nodes,
)
from gpucluster_lib.scenario import from_dict, load_scenario

EXAMPLES = Path(__file__).resolve().parent.parent / "gpucluster_lib" / "data" / "scenarios"
LLAMA = EXAMPLES / "llama3-70b-512-h100.yaml"


def _codes(findings):
    return {f.code for f in findings}


def test_prometheus_disk_formula():
    # Prometheus storage docs: retention_s x samples/s x bytes/sample;
    # 10,000 series / 15 s x 15 d (1,296,000 s) x 2 B = 1.728e9 B
    assert prometheus_disk_bytes(10_000, 15.0, 15.0, 2.0) == pytest.approx(1.728e9)


def test_head_node_rules():
    assert recommended_head_nodes(ha=True, kubernetes=False, login=2) == (2, 0, 4)
    assert recommended_head_nodes(ha=True, kubernetes=True, login=2) == (2, 3, 5)  # etcd: 3 members
    assert recommended_head_nodes(ha=False, kubernetes=False, login=0) == (1, 0, 1)
    assert default_login_nodes(8, ha=True) == 0  # below one 32-node scalable unit
    assert default_login_nodes(127, ha=True) == 2  # SuperPOD RA: 2 login nodes for 127 DGX
    assert default_login_nodes(256, ha=True) == 3  # one more per 128 nodes above 128
    assert head_node_size(64) == (64, 1024)  # SuperPOD control-plane minimum: 2 x 32 cores, 1 TB
    assert gpu_type_name("h100-sxm5-80gb") == "h100"


def test_dataset_size_rules():
    # 4 B of raw text + token ids: uint16 below 65,500 entries, int32 above (Megatron-LM)
    assert token_id_bytes(50_257) == 2 and token_id_bytes(128_256) == 4
    assert text_dataset_bytes(15e12, 128_256) == pytest.approx(120e12)  # 15e12 x (4 + 4)


def test_llama_plan_monitoring_and_serving():
    ops = Design.from_yaml(LLAMA).operations
    st = ops.stack
    # 64 DGX H100 x 8 GPUs x 21 DCGM series = 10,752; (64 + 2 head) hosts x 1000 = 66,000
    assert st.monitoring.gpu_series == 10_752
    assert st.monitoring.host_series == 66_000
    # 100 requests/s needs 5 replicas of TP 8 (serving stage); N+1 = 6 replicas = 48 GPUs = 6 nodes
    assert (st.serving.replicas_for_demand, st.serving.replicas, st.serving.gpus, st.serving.nodes) == (5, 6, 48, 6)
    assert [q.name for q in st.queues] == ["training", "serving"]
    assert len(st.queues[1].nodes) == 6 and len(st.queues[0].nodes) == 58
    assert st.slurm_controllers == ["head01", "head02"]
    assert "ops-head-nodes-short" in _codes(ops.findings)  # 2 heads < 2 management + 2 login


def test_kubernetes_needs_three_control_plane_nodes():
    s = load_scenario(LLAMA).replace(operations__scheduler="both", hardware__head_nodes=5)
    st = Design(s).operations.stack
    assert st.control_plane == ["head01", "head02", "head03"]
    assert st.login_hosts == ["head04", "head05"]
    assert st.gpu_software["gpu_operator"] and st.gpu_software["network_operator"]
    assert "ops-head-nodes" in _codes(st.findings)


def test_no_spare_replica_and_no_backup_are_warnings():
    s = load_scenario(LLAMA).replace(operations__serving_spare_replicas=0, operations__backup="none")
    codes = _codes(Design(s).operations.findings)
    assert {"ops-serving-no-headroom", "ops-data-no-backup"} <= codes


def test_old_driver_for_cuda_is_a_warning():
    # CUDA 12.4 needs the 550 branch (CUDA Toolkit Release Notes, Table 3)
    s = load_scenario(LLAMA).replace(operations__gpu_driver="535.183.01")
    assert "ops-driver-cuda" in _codes(Design(s).operations.findings)


def test_data_plan_of_llama():
    d = Design.from_yaml(LLAMA)
    data = d.operations.data
    # the storage stage sizes the tokenised set: 2e12 tokens x 4 B (128,256-entry vocabulary > 65,536)
    assert data.dataset_bytes == pytest.approx(8e12)
    assert data.archived_checkpoints == 30  # one a day for the default 30 days
    # one source of truth: the capacity tier is the storage stage's
    assert data.capacity_tier_bytes == pytest.approx(d.storage.capacity_needed_tb * 1e12)
    # without the storage stage's figures the plan's own rule: 2 versions + 30 daily checkpoints
    s = load_scenario(LLAMA).replace(operations__dataset_tb=16.0)
    assert Design(s).operations.data.dataset_bytes == pytest.approx(16e12)


def test_security_items_give_reasons_from_the_design():
    d = Design.from_yaml(LLAMA)
    items = {i.topic: i for i in d.operations.security.items}
    assert "SLURM authentication (MUNGE)" in items
    assert "Tenant isolation for inference" in items  # the design serves a demand
    assert "Kubernetes control plane" not in items  # SLURM only
    assert "66 servers" in items["Out-of-band (BMC) network"].reason  # 64 nodes + 2 head nodes


def test_bad_operations_key_names_the_field():
    with pytest.raises(ScenarioError, match="operations.scheduler"):
        from_dict({"operations": {"scheduler": "pbs"}})


def test_data_plan_reads_the_storage_stages_data_set_and_capacity_tier():
    from types import SimpleNamespace

    from gpucluster_lib.operations.dataplan import plan_data

    # a storage stage that sizes the data set (5 TB) and a 10 TB capacity tier: 2 versions x 5 TB
    # + 30 daily checkpoints x 0.1 TB = 13 TB > 10 TB
    storage = SimpleNamespace(dataset_bytes=5e12, capacity_tier_tb=10.0, checkpoint_bytes=1e11, checkpoints_kept=3,
                              capacity_tb=368.6, appliances=1, appliance_write_gb_per_s=65.0)
    plan = plan_data(load_scenario(LLAMA), storage=storage)
    assert plan.dataset_bytes == 5e12
    assert plan.capacity_tier_bytes == pytest.approx(13e12)
    assert "ops-data-capacity-tier-full" in _codes(plan.findings)
    assert plan.staging_s == pytest.approx(5e12 / 65e9)  # 76.9 s at one appliance's 65 GB/s


def test_operations_command_prints_the_plan_as_json():
    import contextlib
    import io
    import json

    from gpucluster_lib.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["operations", str(LLAMA), "--json"]) == 0
    data = json.loads(out.getvalue())
    assert data["stack"]["slurm_controllers"] == ["head01", "head02"]
    assert data["stack"]["monitoring"]["gpu_series"] == 10_752  # 512 GPUs x 21
    assert data["data"]["dataset_tb"] == pytest.approx(8.0)  # 2e12 tokens x 4 B token ids
    assert any(i["topic"] == "SLURM authentication (MUNGE)" for i in data["security"]["items"])
