"""Startup cost: ``import gpucluster_lib`` wall time and catalogue look-ups by id.

    PYTHONPATH=. python benchmarks/bench_startup.py

Prints
- the median wall time of ``python -c "import gpucluster_lib"`` over ``IMPORT_RUNS`` fresh
  subprocesses, next to a bare ``python -c "pass"`` (the interpreter's own start), and which
  heavy modules (pandas, numpy, altair, ipywidgets) the import pulled in;
- the time of one load of the shipped catalogue;
- the median per-call time of ``catalog.accelerator(id)``, ``catalog.server(id)`` and
  ``catalog.get("switches", id)``, in microseconds;
- the per-call time of ``catalog.records("switches")`` (the switch pickers scan it).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
IMPORT_RUNS = 15
LOOKUP_CALLS = 2_000
HEAVY = ("pandas", "numpy", "altair", "ipywidgets")


def _run(code: str) -> float:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=ROOT)
    return time.perf_counter() - t0


def median_s(code: str, runs: int = IMPORT_RUNS) -> float:
    _run(code)  # warm the file-system cache and the .pyc files
    return statistics.median(_run(code) for _ in range(runs))


def heavy_modules_after_import() -> list[str]:
    code = f"import sys, gpucluster_lib; print(' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    out = subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=ROOT,
                         capture_output=True, text=True).stdout
    return out.split()


def per_call_us(fn, calls: int = LOOKUP_CALLS, repeat: int = 5) -> float:
    fn()
    best = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        best.append((time.perf_counter() - t0) / calls * 1e6)
    return statistics.median(best)


def main() -> None:
    bare = median_s("pass")
    imp = median_s("import gpucluster_lib")
    print(f"python -c 'pass'                    {bare * 1000:8.1f} ms (median of {IMPORT_RUNS})")
    print(f"python -c 'import gpucluster_lib'   {imp * 1000:8.1f} ms (median of {IMPORT_RUNS}; "
          f"{(imp - bare) * 1000:.1f} ms above a bare interpreter)")
    heavy = heavy_modules_after_import()
    print(f"heavy modules loaded by the import:  {', '.join(heavy) if heavy else 'none'}")

    sys.path.insert(0, str(ROOT))
    from gpucluster_lib import catalog as catalog_mod

    t0 = time.perf_counter()
    cat = catalog_mod._load_catalog((), str(catalog_mod.DATA_DIR), False)
    print(f"load the shipped catalogue            {(time.perf_counter() - t0) * 1000:8.1f} ms (first, uncached)")

    acc = cat.ids("accelerators")[len(cat.ids("accelerators")) // 2]
    srv = cat.ids("servers")[-1]
    sw = cat.ids("switches")[0]
    print(f"catalog.accelerator({acc!r})  {per_call_us(lambda: cat.accelerator(acc)):10.2f} us per call")
    print(f"catalog.server({srv!r})  {per_call_us(lambda: cat.server(srv)):10.2f} us per call")
    print(f"catalog.get('switches', {sw!r})  {per_call_us(lambda: cat.get('switches', sw)):10.2f} us per call")
    print(f"catalog.records('switches')         {per_call_us(lambda: cat.records('switches'), calls=200):10.2f} us per call")


if __name__ == "__main__":
    main()
