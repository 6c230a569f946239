"""Alpha-beta cost of collectives (ring algorithms) [s].

References
----------
.. [1] Thakur, Rabenseifner, Gropp 2005, "Optimization of collective communication operations
       in MPICH", IJHPCA 19(1): ring all-reduce ``2 (n-1)/n S / B + 2 (n-1) alpha``; ring
       all-gather / reduce-scatter ``(n-1)/n S / B + (n-1) alpha``.
.. [2] NCCL performance notes (nccl-tests PERFORMANCE.md): "bus bandwidth" B is the per-rank
       rate at which these formulas run; across nodes with one NIC per GPU and NCCL rings
       striped over all rails, B is bounded by the node's total NIC bandwidth shared by the
       group's GPUs on that node.
"""

from __future__ import annotations

import numpy as np


def ring_allreduce_s(size_bytes, n, bus_bw, alpha_s):
    """Ring all-reduce of ``size_bytes`` over ``n`` ranks at bus bandwidth ``bus_bw`` [B/s] [1]."""
    n = np.maximum(n, 1)
    return np.where(n > 1, 2.0 * (n - 1) / n * size_bytes / bus_bw + 2.0 * (n - 1) * alpha_s, 0.0)


def ring_allgather_s(size_bytes, n, bus_bw, alpha_s):
    """Ring all-gather (or reduce-scatter) producing ``size_bytes`` per rank [1]."""
    n = np.maximum(n, 1)
    return np.where(n > 1, (n - 1) / n * size_bytes / bus_bw + (n - 1) * alpha_s, 0.0)
