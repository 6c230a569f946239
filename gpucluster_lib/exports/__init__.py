"""Files for procurement and operation written from one Design: SLURM and Kubernetes
configuration, bill of materials, NetBox import, rack elevations."""
