"""A small Levenberg-Marquardt least-squares solver (numpy only).

Used by :func:`gpucluster_lib.calibration.gemm.fit_gemm_curve`. Parameters are fitted in log
space (every parameter of the curves here is positive), so the solver needs no bounds.

References
----------
.. [1] Marquardt 1963, "An algorithm for least-squares estimation of nonlinear parameters",
       J. SIAM 11(2): the damped Gauss-Newton step ``(J^T J + lambda diag(J^T J)) dp = -J^T r``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def levenberg_marquardt(residuals: Callable[[np.ndarray], np.ndarray], p0: np.ndarray, *,
                        iterations: int = 300, tolerance: float = 1e-12) -> np.ndarray:
    """Minimise ``sum(residuals(p)**2)`` from ``p0`` (Marquardt's damped Gauss-Newton [1]).

    The Jacobian is taken by forward differences. Deterministic: no random restarts.
    Returns the parameter vector at the minimum found.
    """
    p = np.asarray(p0, dtype=float).copy()
    r = residuals(p)
    cost = float(r @ r)
    lam = 1e-3
    for _ in range(iterations):
        jac = np.empty((r.size, p.size))
        for j in range(p.size):
            h = 1e-7 * max(abs(p[j]), 1.0)
            dp = np.zeros_like(p)
            dp[j] = h
            jac[:, j] = (residuals(p + dp) - r) / h
        a = jac.T @ jac
        g = jac.T @ r
        improved = False
        while lam < 1e12:
            try:
                step = np.linalg.solve(a + lam * np.diag(np.diag(a) + 1e-12), -g)
            except np.linalg.LinAlgError:
                lam *= 4.0
                continue
            p_new = p + step
            r_new = residuals(p_new)
            cost_new = float(r_new @ r_new)
            if np.isfinite(cost_new) and cost_new < cost:
                converged = cost - cost_new <= tolerance * max(cost, 1e-30)
                p, r, cost = p_new, r_new, cost_new
                lam = max(lam / 3.0, 1e-12)
                improved = True
                break
            lam *= 4.0
        if not improved or converged:
            break
    return p
