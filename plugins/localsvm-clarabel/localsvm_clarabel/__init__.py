"""localsvm-clarabel: a localsvm solver backend built on the Clarabel
interior-point solver.

The kernel dual that localsvm states as a :class:`localsvm.QPProblem`,

    min_α ½ αᵀQα + pᵀα,   0 ≤ α_i ≤ U_i,   yᵀα = 0 (unless box-only),
(or ``yᵀα`` held at its start value, the one-class dual, or each label set's
``Σ α`` held at its start value, the ν-duals: ``QPProblem.equality_kind``)

is reduced to the variables that may move (localsvm's dense helpers fold the
fixed ones into the linear term) and handed to Clarabel as a conic program:
the equality rows go to a zero cone and the boxes ``α ≤ U`` and ``−α ≤ 0``
to a non-negative cone. The solution is finished (snapped onto its box, ρ
from the KKT conditions, the ν-duals' ``r``, objective) by
:func:`localsvm.backends.dense.finish`, exactly as for the built-in dense
backend.

The package registers itself through the ``localsvm`` entry-point group, so
after ``pip install`` the backend is available as ``backend="clarabel"``::

    >>> import localsvm
    >>> "clarabel" in localsvm.list_backends()
    True
"""

from __future__ import annotations

import functools
import importlib.metadata
from collections.abc import Mapping
from typing import Any

import clarabel
import numpy as np
import scipy.sparse as sp

import localsvm
from localsvm.backends import Capabilities, QPProblem, QPSolution, SolverBackend
from localsvm.backends.dense import ReducedQP, finish, reduce_problem

__all__ = ["MAX_SAMPLES", "ClarabelBackend", "localsvm_register_backends"]

#: The version in pyproject.toml (the installed metadata), written once.
__version__ = importlib.metadata.version("localsvm-clarabel")

#: Largest problem the backend accepts. The Hessian is dense, so Clarabel's
#: KKT factorisation costs O(n³) per interior-point iteration: about 1 s for
#: 1000 samples and 4 s for 2000 (faer, two cores), each solve taking ~10-15
#: iterations.
MAX_SAMPLES = 2000

#: Clarabel settings applied to every solve (overridable per backend
#: instance). The tolerances are far tighter than Clarabel's defaults (1e-8)
#: so that the dual objective matches an SMO solve run with a small ``tol``.
DEFAULT_SETTINGS: Mapping[str, Any] = {
    "verbose": False,
    "tol_gap_abs": 1e-10,
    "tol_gap_rel": 1e-10,
    "tol_feas": 1e-10,
}

#: Statuses reported as converged: ``AlmostSolved`` means Clarabel met its
#: reduced tolerances (still ~1e-5 or better), which is ample for an SVM.
_CONVERGED = (clarabel.SolverStatus.Solved, clarabel.SolverStatus.AlmostSolved)
_INFEASIBLE = (
    clarabel.SolverStatus.PrimalInfeasible,
    clarabel.SolverStatus.AlmostPrimalInfeasible,
)


@functools.lru_cache(maxsize=1)
def _preferred_solve_method() -> str:
    """Clarabel's ``direct_solve_method`` to use: ``"faer"`` (a supernodal,
    multithreaded LDLᵀ, several times faster than QDLDL on the dense KKT
    systems these problems produce) where the installed build has it, else
    Clarabel's own choice."""
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    settings.direct_solve_method = "faer"
    one = sp.csc_matrix(np.ones((1, 1)))
    try:
        clarabel.DefaultSolver(
            one, np.zeros(1), one, np.ones(1), [clarabel.NonnegativeConeT(1)], settings
        )
    except Exception:
        return clarabel.DefaultSettings().direct_solve_method
    return "faer"


def equality_rows(reduced: ReducedQP, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """The equality constraints ``rows · x = rhs`` of the reduced dual.

    ``kind`` is ``QPProblem.equality_kind``: 'zero' (``yᵀx`` equal to what
    keeps ``yᵀα = 0`` with the fixed variables), 'start' (``yᵀx`` kept at
    the start's value, the one-class dual) or 'per_label' (each label set's
    ``Σ x`` kept at the start's, the ν-duals).
    """
    if kind == "per_label":
        rows = np.vstack([reduced.y > 0, reduced.y < 0]).astype(np.float64)
        return rows, rows @ reduced.alpha0
    rhs = reduced.rhs if kind == "zero" else float(reduced.y @ reduced.alpha0)
    return reduced.y[None, :], np.array([rhs])


def conic_form(
    reduced: ReducedQP, equality: bool, kind: str = "zero"
) -> tuple[sp.csc_matrix, np.ndarray, sp.csc_matrix, np.ndarray, list]:
    """The reduced dual as Clarabel's ``(P, q, A, b, cones)``.

    ``P`` is the upper triangle of ``Q`` in CSC form, ``q = p``; the
    constraints ``A x + s = b, s ∈ cones`` are the equality rows of ``kind``
    (:func:`equality_rows`) with ``s = 0`` (only when ``equality``), then
    ``x + s = U`` and ``−x + s = 0`` with ``s ≥ 0``.
    """
    m = reduced.index.size
    P = sp.csc_matrix(np.triu(reduced.Q))
    eye = sp.identity(m, format="csc")
    rows = [eye, -eye]
    rhs = [reduced.upper, np.zeros(m)]
    cones: list = []
    if equality:
        eq, eq_rhs = equality_rows(reduced, kind)
        rows.insert(0, sp.csc_matrix(eq))
        rhs.insert(0, eq_rhs)
        cones.append(clarabel.ZeroConeT(eq.shape[0]))
    cones.append(clarabel.NonnegativeConeT(2 * m))
    A = sp.vstack(rows, format="csc")
    return P, np.asarray(reduced.p, dtype=np.float64), A, np.concatenate(rhs), cones


class ClarabelBackend(SolverBackend):
    """The dense kernel dual solved by Clarabel's interior-point method.

    An independent, high-accuracy check of the SMO solver for problems of up
    to :data:`MAX_SAMPLES` movable variables. Interior-point methods cannot use
    a start point (hence ``warm_start=False``), so ``alpha0`` only matters
    through the variables it holds fixed (those outside ``active``). ``tol``
    (SMO's KKT tolerance) is not used: Clarabel runs to the tolerances in
    :data:`DEFAULT_SETTINGS`.
    ``max_iter`` (when not -1) caps Clarabel's interior-point iterations,
    which are few (usually 10-20), so caps meant for SMO rarely bind.

    ``thread_safe`` is True: every solve builds its own Clarabel solver and
    touches no shared state (this backend never calls Clarabel's one global
    setter, ``set_infinity``).

    Parameters
    ----------
    settings : mapping, optional
        Clarabel settings (attribute names of ``clarabel.DefaultSettings``)
        applied after :data:`DEFAULT_SETTINGS`, e.g. ``{"max_threads": 1}``
        or ``{"direct_solve_method": "qdldl"}``.
    """

    name = "clarabel"
    priority = 20
    capabilities = Capabilities(
        warm_start=False,
        subset=True,
        box_only=True,
        max_samples=MAX_SAMPLES,
        thread_safe=True,
        equality_start=True,
        equality_per_label=True,
    )

    def __init__(self, settings: Mapping[str, Any] | None = None) -> None:
        self.settings = dict(settings or {})
        probe = clarabel.DefaultSettings()
        unknown = sorted(k for k in self.settings if not hasattr(probe, k))
        if unknown:
            raise ValueError(f"unknown Clarabel settings: {', '.join(unknown)}")

    def _clarabel_settings(self, problem: QPProblem) -> Any:
        settings = clarabel.DefaultSettings()
        settings.direct_solve_method = _preferred_solve_method()
        for key, value in {**DEFAULT_SETTINGS, **self.settings}.items():
            setattr(settings, key, value)
        if problem.max_iter >= 0:
            settings.max_iter = max(int(problem.max_iter), 1)
        return settings

    def solve(self, problem: QPProblem) -> QPSolution:
        """Solve ``problem`` (see the class docstring); ``ValueError`` for
        invalid input, including a warm start that is not feasible
        (``QPProblem.validate`` checks it)."""
        problem.validate()
        red = reduce_problem(problem)
        if red.index.size == 0:
            return finish(problem, red, red.alpha0, n_iter=0, converged=True, backend=self.name)
        kind = getattr(problem, "equality_kind", "zero")
        P, q, A, b, cones = conic_form(red, problem.equality, kind)
        solver = clarabel.DefaultSolver(P, q, A, b, cones, self._clarabel_settings(problem))
        result = solver.solve()
        status = result.status
        if status in _INFEASIBLE:
            raise ValueError(
                "the problem is infeasible: the variables held fixed leave no way to "
                "satisfy the equality constraints within the boxes"
            )
        x = np.asarray(result.x, dtype=np.float64)
        if x.shape != (red.index.size,) or not np.all(np.isfinite(x)):
            raise RuntimeError(f"Clarabel returned no usable solution (status {status})")
        return finish(
            problem,
            red,
            x,
            n_iter=int(result.iterations),
            converged=status in _CONVERGED,
            backend=self.name,
            message="" if status in _CONVERGED else f"Clarabel stopped with status {status}",
        )


@localsvm.hookimpl
def localsvm_register_backends(register):
    """Register the ``"clarabel"`` backend with localsvm."""
    register(ClarabelBackend())
