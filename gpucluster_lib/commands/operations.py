"""``gpucluster operations SCENARIO``: the software-stack, security and data-management plans."""

from __future__ import annotations

import argparse

from gpucluster_lib.commands import add_scenario_arguments, print_json, read_design
from gpucluster_lib.formatting import plural

NAME = "operations"
ORDER = 75
HELP = "software stack (OS, scheduler, head nodes, GPU software, monitoring), security and data plans"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_scenario_arguments(p)


def run(args: argparse.Namespace) -> int:
    plan = read_design(args).operations
    if args.json:
        print_json(plan.to_dict())
        return 0
    st, m = plan.stack, plan.stack.monitoring
    print(f"{st.os_image}, {st.cluster_manager}, scheduler {st.scheduler}; {plural(st.head_nodes, 'head node')} "
          f"({st.head_nodes_recommended} recommended)")
    for s in st.service_nodes:
        print(f"  {s.name}: {', '.join(s.roles)} ({s.cpu_cores} cores, {s.memory_gb} GB)")
    sw = st.gpu_software
    print(f"  GPU software: driver {sw['driver']}, CUDA {sw['cuda']}, NCCL {sw['nccl']}, {sw['container_runtime']}")
    print(f"  monitoring: {m.series:,} series, {m.samples_per_s:,.0f} samples/s, {m.disk_bytes / 1e9:,.1f} GB "
          f"for {m.retention_days:g} days")
    for q in st.queues:
        print(f"  queue {q.name}: {len(q.nodes)} nodes, priority tier {q.priority_tier}")
    print("security:")
    for item in plan.security.items:
        print(f"  {item.topic}: {item.reason}")
    print("data:")
    for step, detail in plan.data.steps:
        print(f"  {step}: {detail}")
    for f in plan.findings:
        print(f"  {f.severity}: {f.code}: {f.message}")
    return 0
