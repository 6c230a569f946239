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
.. [3] NCCL's own ring latency model, NVIDIA/nccl ``src/graph/tuning.cc`` (stored version 01afd20a),
       ``ncclTopoTuneModel``: for all-gather and reduce-scatter ``nsteps = nRanks-1``, ``nInterSteps =
       nNodes-1`` and ``latencies += (nsteps-nInterSteps)*intraLat + nInterSteps*interLat`` (Ring / Simple
       ``intraLat`` 3.4 us over NVLink, ``interLat`` 9.6 us over the network, ``hwLat``).
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


def ring_steps_latency_s(n, nodes, alpha_intra_s, alpha_inter_s):
    """Latency of one ring all-gather or reduce-scatter over ``n`` ranks on ``nodes`` nodes [s] [3]: the ring's
    ``n - 1`` steps, ``nodes - 1`` of them across the network at ``alpha_inter_s`` and the rest inside a node at
    ``alpha_intra_s`` (NCCL's ``(nsteps - nInterSteps) intraLat + nInterSteps interLat``). 0 for one rank.
    Elementwise over arrays that broadcast. Worked case: 512 ranks on 64 nodes at 3 / 8 us:
    448 x 3 + 63 x 8 = 1,848 us."""
    n = np.maximum(n, 1)
    inter = np.clip(np.asarray(nodes, dtype=float) - 1.0, 0.0, n - 1.0)
    return np.where(n > 1, (n - 1.0 - inter) * alpha_intra_s + inter * alpha_inter_s, 0.0)
