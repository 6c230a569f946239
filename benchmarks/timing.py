"""The timing loop the benchmark scripts share: one warm-up call, then the median of runs.

    from timing import median_ms   # benchmarks/ is the script's folder, so it is on sys.path
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def median_ms(fn: Callable[[], object], repeat: int = 30) -> float:
    """Median wall time of ``fn()`` over ``repeat`` runs [ms], after one warm-up call (imports,
    catalogue and chart-template caches)."""
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)
