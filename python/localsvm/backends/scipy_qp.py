"""A reference backend: the dual solved by ``scipy.optimize.minimize``
(SLSQP) on the dense Hessian, with kernels computed in NumPy.

It is slow (dense ``n × n`` memory, cubic-time subproblems; a 300-sample
problem takes seconds) and meant for small problems (at most 1000 samples)
and as an independent check of the Rust solver: it shares no code with it
beyond the problem definition. It solves every equality kind
(``QPProblem.equality_kind``), so it is the reference for the one-class and
ν duals too.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize

from ..hookspecs import register_builtins
from .base import Capabilities, QPProblem, QPSolution, SolverBackend
from .dense import finish, reduce_problem

MAX_SAMPLES = 1000


class ScipyBackend(SolverBackend):
    """SLSQP on the dense dual (small problems; independent reference)."""

    name = "scipy"
    priority = 10
    capabilities = Capabilities(
        warm_start=True,
        subset=True,
        box_only=True,
        max_samples=MAX_SAMPLES,
        thread_safe=False,
        equality_start=True,
        equality_per_label=True,
    )

    def solve(self, problem: QPProblem) -> QPSolution:
        problem.validate()
        red = reduce_problem(problem)
        m = red.index.size
        if m == 0:
            return finish(problem, red, red.alpha0, n_iter=0, converged=True, backend=self.name)
        Q, p = red.Q, red.p

        def objective(a: np.ndarray) -> tuple[float, np.ndarray]:
            Qa = Q @ a
            return float(0.5 * a @ Qa + p @ a), Qa + p

        constraints = []
        kind = getattr(problem, "equality_kind", "zero")
        if problem.equality:
            if kind == "zero":
                rows, rhs = red.y[None, :], np.array([red.rhs])
            elif kind == "start":
                # yᵀα kept at the start's value over the moving variables.
                rows, rhs = red.y[None, :], np.array([red.y @ red.alpha0])
            else:
                # per_label: each label set's sum kept at the start's.
                rows = np.vstack([red.y > 0, red.y < 0]).astype(np.float64)
                rhs = rows @ red.alpha0
            constraints.append(
                {
                    "type": "eq",
                    "fun": lambda a: rows @ a - rhs,
                    "jac": lambda a: rows,
                }
            )
        max_iter = 10 * m + 100 if problem.max_iter < 0 else max(problem.max_iter, 1)
        res = minimize(
            objective,
            red.alpha0,
            jac=True,
            method="SLSQP",
            bounds=list(zip(np.zeros(m), red.upper, strict=True)),
            constraints=constraints,
            options={"maxiter": max_iter, "ftol": 1e-14},
        )
        return finish(
            problem,
            red,
            res.x,
            n_iter=int(res.nit),
            converged=bool(res.success),
            backend=self.name,
            message="" if res.success else f"SLSQP: {res.message}",
        )


localsvm_register_backends = register_builtins("localsvm_register_backends", ScipyBackend)
