"""The default backend: the Rust SMO solver (``localsvm._core``).

Second-order working-set selection, shrinking, a kernel-column cache bounded
by ``cache_size`` megabytes (float32 kernel values on ordinary data, float64
when the data, the kernel parameters or ``tol`` need them: see
:func:`localsvm._core.solve_qp`), warm starts, subset optimisation and the
box-only dual; runs with the GIL released, so problems can be solved from
several threads at once.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .. import _core
from .._docstrings import fill
from ..hookspecs import register_builtins
from ..kernels import KernelSpec, core_rows
from .base import (
    INTERFACE_DOC,
    Capabilities,
    CPath,
    CPathResult,
    LocalBatch,
    LocalBatchResult,
    QPProblem,
    QPSolution,
    SolverBackend,
    kernel_rows,
)


def _settings(problem) -> _core.SolverSettings:
    """The SMO settings of a :class:`QPProblem` or a :class:`LocalBatch`."""
    return _core.SolverSettings(
        tol=float(problem.tol),
        max_iter=int(problem.max_iter),
        cache_size=float(getattr(problem, "cache_size", 200.0)),
        shrinking=bool(problem.shrinking),
        precision=str(getattr(problem, "precision", "auto")),
    )


#: ``solve_qp``'s constraint for each ``QPProblem.equality_kind`` (and the box).
_CONSTRAINTS = {
    "box": _core.QPConstraint.BOX,
    "zero": _core.QPConstraint.ZERO,
    "start": _core.QPConstraint.START,
    "per_label": _core.QPConstraint.PER_LABEL,
}

#: ``solve_qp``'s solver for each ``QPProblem.solver``.
_SOLVERS = {
    "auto": _core.QPSolver.AUTO,
    "smo": _core.QPSolver.SMO,
    "batched": _core.QPSolver.BATCHED,
}


def _options(problem: QPProblem) -> _core.QPOptions:
    """``solve_qp``'s options of a :class:`QPProblem`."""
    f64 = np.float64
    constraint = str(getattr(problem, "equality_kind", "zero")) if problem.equality else "box"
    return _core.QPOptions(
        p=None if problem.p is None else np.ascontiguousarray(problem.p, dtype=f64),
        alpha0=None if problem.alpha0 is None else np.ascontiguousarray(problem.alpha0, dtype=f64),
        active=None
        if problem.active is None
        else np.ascontiguousarray(problem.active, dtype=np.int64),
        rows=None if problem.rows is None else np.ascontiguousarray(problem.rows, dtype=np.int64),
        constraint=_CONSTRAINTS[constraint],
        start=_start(problem.start_gradient),
        threads=int(problem.n_threads),
        solver=_SOLVERS[str(getattr(problem, "solver", "auto"))],
    )


#: The fields that problems solved in one ``solve_qp_many`` call share.
_SHARED_FIELDS = ("kernel", "tol", "max_iter", "cache_size", "shrinking", "precision")


def _share_call(problems: list[QPProblem]) -> bool:
    """Whether ``problems`` can be solved in one ``solve_qp_many`` call:
    the same ``X`` object, kernel and settings, and no progress callback."""
    first = problems[0]
    shared = [getattr(first, name, None) for name in _SHARED_FIELDS]
    return all(
        p.X is first.X
        and p.progress is None
        and [getattr(p, name, None) for name in _SHARED_FIELDS] == shared
        for p in problems
    )


def _start(start):
    """``solve_qp``'s ``start`` for ``QPProblem.start_gradient``: None,
    ``'blocked'`` or the ``(G, Ḡ)`` pair as float64 arrays."""
    if start is None or isinstance(start, str):
        return start
    g, gbar = start
    return (np.ascontiguousarray(g, dtype=np.float64), np.ascontiguousarray(gbar, dtype=np.float64))


@fill(**INTERFACE_DOC)
class RustBackend(SolverBackend):
    """SMO in Rust; the default backend for every problem size."""

    name = "rust"
    priority = 100
    capabilities = Capabilities(
        warm_start=True,
        subset=True,
        box_only=True,
        thread_safe=True,
        local_batch=True,
        online=True,
        sparse=True,
        local_primal=True,
        equality_start=True,
        equality_per_label=True,
    )

    def solve(self, problem: QPProblem) -> QPSolution:
        out = _core.solve_qp(
            core_rows(problem.X),
            np.ascontiguousarray(problem.y, dtype=np.float64),
            np.ascontiguousarray(problem.upper, dtype=np.float64),
            kernel=problem.kernel.core(),
            settings=_settings(problem),
            options=_options(problem),
            progress=problem.progress,
        )
        return self._solution(out)

    def solve_many(self, problems: Sequence[QPProblem]) -> list[QPSolution]:
        """Solve the problems in one call into the core when they share
        ``X`` (the same object), the kernel and the solver settings and have
        no ``progress`` callback (the binary problems of a multiclass fit);
        else one :meth:`solve` each. The answers are :meth:`solve`'s.

        Parameters
        ----------
        problems : sequence of QPProblem
            The problems.

        Returns
        -------
        list of QPSolution
            One solution per problem, in order.
        """
        problems = list(problems)
        if len(problems) < 2 or not _share_call(problems):
            return [self.solve(problem) for problem in problems]
        first = problems[0]
        f64 = np.float64
        out = _core.solve_qp_many(
            core_rows(first.X),
            [
                (
                    np.ascontiguousarray(p.y, dtype=f64),
                    np.ascontiguousarray(p.upper, dtype=f64),
                    _options(p),
                )
                for p in problems
            ],
            kernel=first.kernel.core(),
            settings=_settings(first),
        )
        return [self._solution(o) for o in out]

    def _solution(self, out) -> QPSolution:
        """A :class:`QPSolution` of the core's ``QPResult``."""
        converged = bool(out.converged)
        return QPSolution(
            alpha=out.alpha,
            rho=float(out.rho),
            objective=float(out.objective),
            n_iter=int(out.n_iter),
            converged=converged,
            backend=self.name,
            message="" if converged else f"SMO stopped at the iteration cap ({out.n_iter})",
            precision=str(out.precision),
            kernel_evaluations=int(out.kernel_evaluations),
            start_evaluations=int(out.start_evaluations),
            start_seconds=float(out.start_seconds),
            r=float(out.r),
            solver=str(out.solver),
        )

    def kernel_matrix(
        self,
        base: np.ndarray,
        kernel: KernelSpec,
        tol: float | None = None,
        norms: np.ndarray | None = None,
    ) -> _core.KernelMatrix:
        """The kernel matrix of every row, kept in the Rust core, where
        :meth:`solve_c_path` reads each fold's rows of it in place (pass it
        as :attr:`CPath.X` with ``KernelSpec('precomputed')``).

        Parameters
        ----------
        base : ndarray of shape (n, n)
            The squared distances ``‖x_i − x_j‖²`` for the RBF kernel, the
            inner products ``⟨x_i, x_j⟩`` for the others.
        kernel : KernelSpec
            The kernel applied to ``base``.
        tol : float, optional
            The tolerance of the solves that will read the matrix. Given,
            an RBF matrix is kept in float32 when float32 arithmetic serves
            that tolerance (the solves then read the same numbers in half
            the memory); a solve that needs float64 refuses such a matrix.
        norms : ndarray of shape (n,), optional
            For the RBF kernel: the squared norms ``‖x_i‖²``, with ``base``
            then holding the inner products; the squared distances are
            formed from them as the matrix is computed.

        Returns
        -------
        localsvm._core.KernelMatrix
            The matrix, computed in parallel without the GIL.
        """
        return _core.KernelMatrix(
            np.ascontiguousarray(base, dtype=np.float64),
            kernel.core(),
            tol=tol,
            norms=None if norms is None else np.ascontiguousarray(norms, dtype=np.float64),
        )

    def kernel_matrix_itemsize(self, kernel: KernelSpec, tol: float | None = None) -> int:
        """Bytes per value of :meth:`kernel_matrix`'s matrix of ``kernel``
        for solves at ``tol``: 4 where it is kept in float32, else 8."""
        return int(_core.KernelMatrix.itemsize(kernel.core(), tol))

    def solve_c_path(self, path: CPath) -> CPathResult:
        """Solve the whole path in one call, on one Hessian and column cache.

        Each ``C`` starts from the previous solution and its gradient (no
        kernel work between two values), and the held-out rows' kernel
        columns are computed once per support vector (or, with a
        precomputed kernel, read from ``X``: an array, or a
        ``_core.KernelMatrix`` read in place) in the Rust core's ``c_path``;
        variables of weight 0 (pinned at 0) are left out.

        {c_path_io}
        """
        path.validate()
        f64 = np.float64
        weights = np.asarray(path.weights, dtype=f64)
        keep = np.flatnonzero(weights > 0)
        cs = np.ascontiguousarray(path.Cs, dtype=f64)
        valid = np.ascontiguousarray(path.valid, dtype=np.int64)
        if keep.size == 0:
            n_c = cs.size
            return CPathResult(
                decision=np.zeros((n_c, valid.size)),
                n_iter=np.zeros(n_c, dtype=np.int64),
                converged=np.ones(n_c, dtype=bool),
                error=[None] * n_c,
                alpha=np.zeros((n_c, weights.size)) if path.keep_alpha else None,
            )
        p = None if path.p is None else np.ascontiguousarray(np.asarray(path.p)[keep], dtype=f64)
        rows = np.ascontiguousarray(np.asarray(path.rows)[keep], dtype=np.int64)
        cross = None
        shared = isinstance(path.X, _core.KernelMatrix)
        if path.kernel.precomputed and not shared:
            cross = np.ascontiguousarray(np.asarray(path.X)[np.ix_(rows, valid)], dtype=f64)
        out = _core.c_path(
            path.X if shared else core_rows(path.X),
            np.ascontiguousarray(np.asarray(path.y)[keep], dtype=f64),
            np.ascontiguousarray(weights[keep]),
            cs,
            _core.CPathFold(
                rows,
                valid,
                p=p,
                cross=cross,
                target=None if path.prune is None else np.asarray(path.target, dtype=f64),
                stop_margin=path.prune,
                regression=bool(path.regression),
                keep_alpha=bool(path.keep_alpha),
            ),
            kernel=path.kernel.core(),
            settings=_settings(path),
        )
        alpha = None
        if path.keep_alpha:
            # The variables of weight 0 stay at 0.
            alpha = np.zeros((cs.size, weights.size))
            alpha[:, keep] = out.alpha
        return CPathResult(
            decision=np.asarray(out.decision),
            n_iter=np.asarray(out.n_iter, dtype=np.int64),
            converged=np.asarray(out.converged, dtype=bool),
            error=[None] * cs.size,
            stopped=out.stopped,
            alpha=alpha,
        )

    def solve_local(self, batch: LocalBatch) -> LocalBatchResult:
        """Solve the whole batch in one call, each query warm-started from ``batch.start``.

        {local_io}
        """
        f64 = np.float64
        start = getattr(batch, "start", None)
        primal = getattr(batch, "solver", "dual") == "primal"
        start_primal = getattr(batch, "start_primal", None) if primal else None
        anchors = getattr(batch, "anchors", None) if primal else None
        solutions = getattr(batch, "anchor_solutions", None) if anchors is not None else None
        # The primal models decide from the queries' features; otherwise the
        # decisions need the kernel rows.
        queries = getattr(batch, "queries", None) if primal else None
        cross = None
        if queries is None or batch.cross is not None:
            cross, queries = np.ascontiguousarray(kernel_rows(batch), dtype=f64), None
        primal_options = None
        if primal:
            primal_options = _core.LocalPrimal(
                start=(
                    None if start_primal is None else np.ascontiguousarray(start_primal, dtype=f64)
                ),
                anchors=(
                    None
                    if anchors is None
                    else (
                        np.ascontiguousarray(anchors, dtype=np.int64),
                        np.ascontiguousarray(solutions, dtype=f64),
                    )
                ),
                queries=None if queries is None else np.ascontiguousarray(queries, dtype=f64),
            )
        out = _core.solve_local(
            np.ascontiguousarray(batch.X, dtype=f64),
            np.ascontiguousarray(batch.y, dtype=f64),
            np.ascontiguousarray(batch.sigma, dtype=f64),
            cross,
            options=_core.LocalOptions(
                float(batch.C),
                threshold=float(batch.threshold),
                warm_start=bool(batch.warm_start),
                start=None if start is None else np.ascontiguousarray(start, dtype=f64),
                primal=primal_options,
            ),
            kernel=batch.kernel.core(),
            settings=_settings(batch),
        )
        return LocalBatchResult(
            decision=np.asarray(out.decision),
            status=np.asarray(out.status),
            n_iter=np.asarray(out.n_iter),
            n_active=np.asarray(out.n_active),
            n_support=np.asarray(out.n_support),
            converged=np.asarray(out.converged, dtype=bool),
            primal=None if out.primal is None else np.asarray(out.primal),
        )

    def online_learner(self, kernel, n_features):
        """Create the core's online learner (LISVM) for one binary problem.

        Every update runs in Rust: the neighbour search over the band, SMO on
        the working set, the decision values of the kept examples and a
        cache of their kernel rows.

        {learner_params}

        Returns
        -------
        localsvm._core.IncrementalLearner
            An empty learner.
        """
        return _core.IncrementalLearner(int(n_features), kernel.core())

    def online_settings(self, *, tol, max_iter, cache_size):
        """The settings the core's online learner takes.

        {settings_params}

        Returns
        -------
        localsvm._core.SolverSettings
            The settings, checked.
        """
        return _core.SolverSettings(
            tol=float(tol), max_iter=int(max_iter), cache_size=float(cache_size)
        )

    def online_options(
        self,
        *,
        C,
        threshold,
        epsilon,
        max_neighbors,
        neighbor_step,
        reprocess,
        max_support,
        rebatch,
    ):
        """The core learner's update options (see :meth:`SolverBackend.online_options`).

        Returns
        -------
        localsvm._core.LearnOptions
            The options, checked.
        """
        return _core.LearnOptions(
            C,
            threshold,
            epsilon=epsilon,
            max_neighbors=max_neighbors,
            neighbor_step=neighbor_step,
            reprocess=reprocess,
            max_support=max_support,
            rebatch=rebatch,
        )


localsvm_register_backends = register_builtins("localsvm_register_backends", RustBackend)
