"""Operating the cluster: the software-stack plan (OS, scheduler, head and management nodes,
GPU software, monitoring), the security plan and the data-management plan."""
