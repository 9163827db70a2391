"""Helpers for backends that work on the dense Hessian (scipy, clarabel, …).

A dense backend reduces the problem to the variables that may move with
:func:`reduce_problem` (the dense Hessian of those, fixed variables folded
into the linear term, zero-width boxes dropped), solves the reduced QP however
it likes, and hands the result to :func:`finish`, which computes ρ from the
KKT conditions and the objective the same way for every backend.
:func:`dense_hessian` gives the whole ``Q``. Third-party plugins are welcome
to use these.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..kernels import kernel_matrix_numpy
from .base import QPProblem, QPSolution

#: Relative distance to a bound under which :func:`finish` puts α on the bound.
SNAP_TOL = 1e-7


def dense_hessian(problem: QPProblem) -> np.ndarray:
    """``Q = (y yᵀ) ∘ K`` as a dense ``n × n`` array (kernel in NumPy)."""
    X = np.asarray(problem.examples(), dtype=np.float64)
    K = X if problem.kernel.precomputed else kernel_matrix_numpy(problem.kernel, X, X)
    y = np.asarray(problem.y, dtype=np.float64)
    return K * np.outer(y, y)


@dataclass
class ReducedQP:
    """``min ½ aᵀQa + pᵀa, 0 ≤ a ≤ upper [, yᵀa = rhs]`` over ``index``."""

    Q: np.ndarray
    p: np.ndarray
    y: np.ndarray
    upper: np.ndarray
    alpha0: np.ndarray
    rhs: float
    index: np.ndarray
    alpha_full: np.ndarray


def _kernel_block(problem: QPProblem, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """``K[rows][:, cols]`` (kernel values in NumPy, or sliced when precomputed)."""
    if problem.rows is not None:
        base = np.asarray(problem.rows, dtype=np.intp)
        rows, cols = base[rows], base[cols]
    X = np.asarray(problem.X, dtype=np.float64)
    if problem.kernel.precomputed:
        return X[np.ix_(rows, cols)]
    return kernel_matrix_numpy(problem.kernel, X[rows], X[cols])


def reduce_problem(problem: QPProblem) -> ReducedQP:
    """Restrict to the variables that may move (``problem.movable``), folding
    the fixed ones into ``p``. Only the blocks ``Q_SS`` and ``Q_SF`` (for the
    fixed variables with ``α ≠ 0``) are computed, so a small active set of a
    large problem stays cheap."""
    n = problem.n
    upper = np.asarray(problem.upper, dtype=np.float64)
    y = np.asarray(problem.y, dtype=np.float64)
    alpha = (
        np.zeros(n)
        if problem.alpha0 is None
        else np.clip(np.asarray(problem.alpha0, dtype=np.float64), 0.0, upper)
    )
    alpha[upper == 0] = 0.0
    idx = problem.movable
    fixed = np.setdiff1d(np.arange(n), idx)
    fixed = fixed[alpha[fixed] != 0.0]
    p = -np.ones(n) if problem.p is None else np.asarray(problem.p, dtype=np.float64)
    Q = _kernel_block(problem, idx, idx) * np.outer(y[idx], y[idx])
    p_sub = p[idx].copy()
    if fixed.size:
        K_sf = _kernel_block(problem, idx, fixed)
        p_sub += y[idx] * (K_sf @ (y[fixed] * alpha[fixed]))
    return ReducedQP(
        Q=Q,
        p=p_sub,
        y=y[idx],
        upper=upper[idx],
        alpha0=alpha[idx],
        rhs=-float(y[fixed] @ alpha[fixed]),
        index=idx,
        alpha_full=alpha,
    )


def rho_from_kkt(y: np.ndarray, grad: np.ndarray, alpha: np.ndarray, upper: np.ndarray) -> float:
    """ρ of the C-SVC dual: mean of ``y_i G_i`` over free variables, else the
    middle of the interval allowed by the bounded ones. Variables within a
    relative 1e-6 of a bound count as bounded (interior-point solvers stop
    just inside the box)."""
    if alpha.size == 0:
        return 0.0
    yg = y * grad
    slack = 1e-6 * np.maximum(upper, 1.0)
    at_lower = alpha <= slack
    at_upper = alpha >= upper - slack
    free = ~(at_lower | at_upper)
    if free.any():
        return float(yg[free].mean())
    pos = y > 0
    ub_mask = (at_upper & ~pos) | (at_lower & pos)
    lb_mask = ~ub_mask
    ub = yg[ub_mask].min() if ub_mask.any() else np.inf
    lb = yg[lb_mask].max() if lb_mask.any() else -np.inf
    if np.isfinite(ub) and np.isfinite(lb):
        return float(0.5 * (ub + lb))
    if np.isfinite(ub):
        return float(ub)
    if np.isfinite(lb):
        return float(lb)
    return 0.0


def kkt_violation(
    y: np.ndarray, grad: np.ndarray, alpha: np.ndarray, upper: np.ndarray, equality: bool
) -> float:
    """How far ``alpha`` is from optimal, in SMO's measure: ``m(α) − M(α)``
    (the largest violating pair) with the equality constraint, else the
    largest projected-gradient violation. 0 at an exact optimum."""
    if alpha.size == 0:
        return 0.0
    can_up = alpha < upper
    can_down = alpha > 0
    if not equality:
        viol = np.where(can_up, np.maximum(-grad, 0.0), 0.0)
        viol = np.maximum(viol, np.where(can_down, np.maximum(grad, 0.0), 0.0))
        return float(viol.max())
    yg = y * grad
    pos = y > 0
    up = (pos & can_up) | (~pos & can_down)
    low = (pos & can_down) | (~pos & can_up)
    if not up.any() or not low.any():
        return 0.0
    return max(float(np.max(-yg[up]) + np.max(yg[low])), 0.0)


def finish(
    problem: QPProblem,
    reduced: ReducedQP,
    alpha_sub: np.ndarray,
    *,
    n_iter: int,
    converged: bool,
    backend: str,
    message: str = "",
) -> QPSolution:
    """Clip the reduced solution into its box, snap values within a relative
    1e-7 of a bound onto it (general-purpose solvers stop just inside the box,
    which would otherwise make every example a support vector), compute ρ and
    the objective, and scatter the result back over all variables.

    The result counts as converged when the solver says so or when its KKT
    violation (:func:`kkt_violation`) is within ``problem.tol``, the same
    test SMO stops on."""
    upper = reduced.upper
    a = np.clip(np.asarray(alpha_sub, dtype=np.float64), 0.0, upper)
    snap = SNAP_TOL * upper
    a[a <= snap] = 0.0
    a[a >= upper - snap] = upper[a >= upper - snap]
    grad = reduced.Q @ a + reduced.p
    r = 0.0
    if problem.equality and getattr(problem, "equality_kind", "zero") == "per_label":
        # The ν-duals: each label set has its own threshold on G (Chang &
        # Lin, ACM TIST 2011, §4.2): ρ = (r₊ − r₋)/2 and r = (r₊ + r₋)/2;
        # pairs never cross label sets, so neither do violations.
        pos = reduced.y > 0
        thresholds, violation = [], 0.0
        for side in (pos, ~pos):
            ones = np.ones(int(side.sum()))
            thresholds.append(rho_from_kkt(ones, grad[side], a[side], upper[side]))
            violation = max(violation, kkt_violation(ones, grad[side], a[side], upper[side], True))
        rho = 0.5 * (thresholds[0] - thresholds[1])
        r = 0.5 * (thresholds[0] + thresholds[1])
    else:
        rho = rho_from_kkt(reduced.y, grad, a, reduced.upper) if problem.equality else 0.0
        violation = kkt_violation(reduced.y, grad, a, upper, problem.equality)
    if not converged and violation <= problem.tol:
        converged, message = True, ""
    elif not converged:
        message = f"{message or 'the solver failed'} (KKT violation {violation:.3g})"
    objective = float(0.5 * a @ (reduced.Q @ a) + reduced.p @ a)
    alpha = reduced.alpha_full.copy()
    alpha[reduced.index] = a
    return QPSolution(
        alpha=alpha,
        rho=rho,
        objective=objective,
        n_iter=int(n_iter),
        converged=bool(converged),
        backend=backend,
        message=message,
        r=r,
    )
