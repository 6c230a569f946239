"""Fit the efficiency parameters of data/efficiency.yaml to the calibration rows.

Coordinate descent over a few physically bounded parameters (bounds in PARAMS), minimising
the mean absolute step-time error plus a penalty on rows beyond 8%, over the rows of
gpucluster_lib/data/validation/training_runs.csv whose ``set`` is ``calibration`` only (the ``external``
rows are never used for fitting). Prints the values to copy into data/efficiency.yaml.

    PYTHONPATH=. python scripts/calibrate_training.py
"""

from __future__ import annotations

import numpy as np

from gpucluster_lib.catalog import load_catalog
from gpucluster_lib.training import efficiency, framework, validation

PARAMS = {  # (section, key): (low, high)
    ("ampere", "gemm_efficiency"): (0.70, 0.90),
    ("ampere", "nvlink_efficiency"): (0.60, 0.90),
    ("ampere", "network_efficiency"): (0.60, 0.90),
    ("ampere", "flash_attention_efficiency"): (0.40, 0.72),
    ("hopper", "gemm_efficiency"): (0.52, 0.80),
    ("hopper", "flash_attention_efficiency"): (0.30, 0.60),
    ("hopper", "fp8_gemm_factor"): (0.50, 0.80),
    ("software", "unfused_attention_bytes_per_score"): (6.0, 16.0),
    ("software", "elementwise_bytes_per_hidden"): (12.0, 40.0),
    ("software", "layer_overhead_s"): (0.0, 3e-4),
    ("framework:fsdp", "step_fixed_s"): (0.0, 0.3),
}


def _section(table, sec):
    """The mapping that holds a parameter: data/efficiency.yaml's software or generation section, or
    (``framework:ID``) a framework row of data/training_frameworks.yaml."""
    if sec.startswith("framework:"):
        return framework._table()["frameworks"][sec.split(":", 1)[1]]
    return table["software"] if sec == "software" else table["generations"][sec]


def _set(table, key, value):
    sec, name = key
    _section(table, sec)[name] = float(value)
    if sec == "hopper":
        table["generations"]["blackwell"][name] = float(value)
    framework.framework.cache_clear()


def loss(runs, cat) -> tuple[float, float, float]:
    df = validation.compare(runs, cat)
    err = df["error"].abs().to_numpy()
    return float(err.mean() + 3.0 * np.clip(err - 0.08, 0, None).sum() / len(err)), float(np.median(err)), float(err.max())


def main() -> None:
    runs = validation.load_runs()
    runs = runs[runs["set"] == "calibration"]
    cat = load_catalog()
    table = efficiency.load_table()
    best = loss(runs, cat)
    print("start", best)
    for sweep in range(3):
        for key, (lo, hi) in PARAMS.items():
            sec, name = key
            cur = _section(table, sec)[name]
            grid = np.unique(np.clip(np.concatenate([np.linspace(lo, hi, 7), [cur]]), lo, hi))
            scores = []
            for g in grid:
                _set(table, key, g)
                scores.append((loss(runs, cat), g))
            (score, g) = min(scores, key=lambda t: t[0][0])
            if score[0] < best[0] - 1e-6:
                best = score
            else:
                g = cur
            _set(table, key, g)
            print(f"sweep {sweep} {sec}.{name} = {g:.4g}  loss {best[0]:.4f} median {best[1]:.3f} max {best[2]:.3f}")
    print({f"{s}.{n}": _section(table, s)[n] for s, n in PARAMS})


if __name__ == "__main__":
    main()
