"""``localsvm.ClusterSVC``: the multiclass cluster SVM (MCSVM), one
non-parallel hyperplane per class.

For a k-class problem MCSVM trains k hyperplanes ``x·w_i + b_i = 0``; each
lies close to the examples of its own class and at (soft) distance at least 1
from every other class. A new example gets the class of the nearest
hyperplane. See :class:`ClusterSVC`.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from numbers import Integral, Real
from typing import ClassVar

import numpy as np
from scipy.linalg import LinAlgError, cholesky, solve_triangular
from scipy.linalg.blas import dsyrk
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from ._base import (
    CLASS_WEIGHT_CONSTRAINT,
    BaseSVMClassifier,
    fit_method,
    store_params,
)
from ._compat import Interval
from ._docstrings import X_PARTS, fill
from ._memory import memory_budget
from ._multiclass import binary_index
from .backends.base import QPProblem, QPSolution, solve_checked
from .engines import interrupt_epoch, interrupted_since
from .kernels import KernelSpec, kernel_matrix
from .parallel import effective_n_jobs, one_blas_thread, run_tasks

__all__ = ["ClusterSVC"]

#: Bytes of the kernel cache each box QP's solver may hold (the Rust
#: backend's ``cache_size``, in MB, is this over 2**20).
CACHE_BYTES = 200 << 20

#: Rows that join the working set of a class's QP per round (see
#: :func:`solve_box_qp`).
WORKING_SET_STEP = 256

#: Columns of the Gaussian sketch that estimates the Hessian's diagonal.
SKETCH_SIZE = 32

#: Floating-point operations of one uninterrupted piece of ``PᵀP`` (a chunk
#: of rows): about 0.1-0.3 s on one core, so Ctrl-C is seen that soon.
CHUNK_FLOPS = 1e9

#: Values of ``[A e]`` computed (and copied) per piece in ``fit``.
FILL_VALUES = 1 << 22

#: Columns per block of the blocked Cholesky factorisation (each block's
#: update is at most ``dim² · 128 / 2`` multiply-adds).
CHOLESKY_BLOCK = 128


def _poll(epoch: tuple[int, int] | None) -> None:
    """``KeyboardInterrupt`` once Ctrl-C has stopped the batch that began at
    ``epoch`` (:func:`~localsvm.engines.interrupt_epoch`): a worker thread
    never sees the signal itself. In the main thread Python raises it
    between the pieces of work anyway; in another process (a Dask worker)
    the epoch never matches and this never raises."""
    if interrupted_since(epoch):
        raise KeyboardInterrupt


def _gram_lower(
    F: np.ndarray,
    rows: np.ndarray,
    epoch: tuple[int, int] | None,
    scale: np.ndarray | None = None,
) -> np.ndarray:
    """The lower triangle of ``PᵀP`` for ``P = F[rows]`` (Fortran order, the
    upper triangle zero), accumulated by ``dsyrk`` over chunks of rows of
    about :data:`CHUNK_FLOPS` each, polling for Ctrl-C between them. One
    BLAS call on the whole ``P`` ran for seconds without a check. With
    ``scale`` (one factor per row of ``F``), ``P``'s rows are multiplied by
    theirs: ``PᵀWP`` for ``W = diag(scale²)``."""
    dim = F.shape[1]
    M = np.zeros((dim, dim), order="F")
    step = max(1, int(CHUNK_FLOPS // max(dim * dim, 1)))
    for s in range(0, rows.size, step):
        _poll(epoch)
        part = rows[s : s + step]
        P = F[part] if scale is None else F[part] * scale[part, None]
        M = dsyrk(1.0, P, beta=1.0, c=M, trans=1, lower=1, overwrite_c=1)
    return M


def _cholesky_lower(M: np.ndarray, epoch: tuple[int, int] | None) -> np.ndarray:
    """The lower Cholesky factor of the symmetric ``M`` (only its lower
    triangle is read; ``M`` is overwritten), left-looking by blocks of
    :data:`CHOLESKY_BLOCK` columns with a Ctrl-C poll between blocks (one
    LAPACK call on a 6000 × 6000 matrix ran for seconds without one).
    ``LinAlgError`` when ``M`` is not positive definite numerically."""
    n = M.shape[0]
    b = CHOLESKY_BLOCK
    for j in range(0, n, b):
        _poll(epoch)
        e = min(j + b, n)
        if j:
            M[j:, j:e] -= M[j:, :j] @ M[j:e, :j].T
        M[j:e, j:e] = cholesky(M[j:e, j:e], lower=True, check_finite=False)
        if e < n:
            M[e:, j:e] = solve_triangular(
                M[j:e, j:e], M[e:, j:e].T, lower=True, check_finite=False
            ).T
    return np.tril(M)


def _memory_limit() -> int | None:
    """Physical memory of this machine in bytes (None when unknown)."""
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, OSError, ValueError):  # pragma: no cover - non-POSIX
        return None


def solve_box_qp(
    backend,
    Q: np.ndarray,
    L: np.ndarray,
    C: float | np.ndarray,
    *,
    tol: float = 1e-3,
    max_iter: int = -1,
    step: int | None = None,
    epoch: tuple[int, int] | None = None,
) -> tuple[np.ndarray, np.ndarray, QPSolution]:
    """Solve one class's dual ``min ½ αᵀHα − eᵀα, 0 ≤ α ≤ C`` with
    ``H = Q (L Lᵀ)⁻¹ Qᵀ`` through ``backend``, on a growing working set.
    ``C`` is one bound for every row of ``Q``, or one per row (positive).

    ``Q`` holds the rows ``[x_j e]`` (or ``[K(x_j, R) e]``) of the other
    classes' examples, ``L`` the lower Cholesky factor of ``PᵀP + εI``. With
    ``Z = Q L⁻ᵀ``, ``H = Z Zᵀ``; ``H`` is never formed whole. Only the rows
    with ``α > 0`` shape the solution, and they are few next to all the rows,
    so each round solves the QP over a working set ``S`` (a box-only
    :class:`~localsvm.backends.QPProblem` with the precomputed Hessian
    ``Z_S Z_Sᵀ``, warm-started), computes the gradient of every row,
    ``∇_j = −q_j·u − 1`` with ``u = −(PᵀP + εI)⁻¹ Q_Sᵀ α_S`` the current
    hyperplane, and adds the ``step`` rows outside ``S`` that violate
    optimality most (``∇_j < −tol`` at ``α_j = 0``, ranked by the decrease
    of the objective a step on ``α_j`` alone would give, ``∇_j² / 2H_jj``),
    until none does. The result is then optimal to ``tol`` over all rows,
    as if the whole QP had been solved. ``H_jj = ‖z_j‖²`` is estimated with
    a fixed Gaussian sketch of 32 columns (it only orders the rows).
    ``max_iter`` caps the backend's iterations summed over the rounds.
    ``epoch``, the :func:`~localsvm.engines.interrupt_epoch` when the batch
    began (None: not polled), stops the rounds once Ctrl-C has stopped the
    batch (the backend's solves stop by themselves).

    Returns ``α`` (over the rows of ``Q``), the hyperplane ``u`` and a
    :class:`QPSolution` whose ``n_iter`` is the total over the rounds and
    ``objective`` that of the whole QP.
    """
    m, dim = Q.shape
    upper = np.broadcast_to(np.asarray(C, dtype=np.float64), (m,))
    step = max(1, int(step or WORKING_SET_STEP))
    # ‖z_j‖² = ‖L⁻¹ q_j‖² ≈ ‖G L⁻¹ q_j‖² for a Gaussian G with E[GᵀG] = I.
    sketch = np.random.default_rng(0).standard_normal((dim, SKETCH_SIZE)) / np.sqrt(SKETCH_SIZE)
    QY = Q @ solve_triangular(L, sketch, lower=True, trans="T", check_finite=False)
    h = np.einsum("ij,ij->i", QY, QY)
    alpha = np.zeros(m)
    u = np.zeros(dim)
    grad = -np.ones(m)
    S = np.empty(0, dtype=np.intp)
    in_S = np.zeros(m, dtype=bool)
    Z_S = np.empty((0, dim))
    H = np.empty((0, 0))
    n_iter, converged, message, objective = 0, True, "", 0.0
    precomputed = KernelSpec("precomputed")
    while True:
        _poll(epoch)
        cand = np.flatnonzero(~in_S & (grad < -tol))
        if cand.size == 0:
            break
        if max_iter >= 0 and n_iter >= max_iter:
            converged, message = False, f"stopped at the iteration cap ({n_iter})"
            break
        gain = grad[cand] ** 2 / np.maximum(h[cand], np.finfo(np.float64).tiny)
        new = cand[np.argsort(-gain, kind="stable")[:step]]
        Z_new = solve_triangular(L, Q[new].T, lower=True, check_finite=False).T
        cross = Z_new @ Z_S.T
        H = np.block([[H, cross.T], [cross, Z_new @ Z_new.T]])
        Z_S = np.vstack([Z_S, Z_new])
        S = np.concatenate([S, new])
        in_S[new] = True
        problem = QPProblem(
            X=H,
            y=np.ones(S.size),
            upper=np.ascontiguousarray(upper[S]),
            kernel=precomputed,
            alpha0=alpha[S],
            equality=False,
            tol=tol,
            max_iter=-1 if max_iter < 0 else max_iter - n_iter,
            cache_size=CACHE_BYTES / 2**20,
        )
        sol = solve_checked(backend, problem)
        alpha[S] = np.clip(np.asarray(sol.alpha, dtype=np.float64), 0.0, upper[S])
        n_iter += int(sol.n_iter)
        objective = float(sol.objective)
        v = Z_S.T @ alpha[S]
        u = -solve_triangular(L, v, lower=True, trans="T", check_finite=False)
        grad = -(Q @ u) - 1.0
        if not sol.converged:
            converged, message = False, sol.message or "the solver did not converge"
            break
    result = QPSolution(
        alpha=alpha,
        rho=0.0,
        objective=objective,
        n_iter=n_iter,
        converged=converged,
        backend=getattr(backend, "name", str(backend)),
        message=message,
    )
    return alpha, u, result


@dataclass
class _ClassFit:
    """One class's hyperplane ``u = [w; b]`` and the solve that gave it."""

    u: np.ndarray
    alpha: np.ndarray
    solution: QPSolution


@dataclass
class _ClassProblem:
    """What every class's fit reads: ``[A e]`` for all examples, the labels
    and the solver settings (shared by the tasks of one fit)."""

    F: np.ndarray
    y_idx: np.ndarray
    classes: np.ndarray
    ridge: float
    C: float
    #: Each example's factor of ``C`` (class_weight · sample_weight); None: all 1.
    weights: np.ndarray | None
    tol: float
    max_iter: int
    backend: object
    #: :func:`~localsvm.engines.interrupt_epoch` when the fit began.
    epoch: tuple[int, int] | None = None


def _describe_class_fit(fit: _ClassFit) -> str:
    """A log line's account of one class's solve."""
    sol = fit.solution
    state = "converged" if sol.converged else "stopped before tol"
    return f"{sol.n_iter} iterations, {state}, {np.count_nonzero(fit.alpha)} non-zero multipliers"


def _fit_class(i: int, shared: _ClassProblem) -> _ClassFit:
    """Fit class ``i``'s hyperplane (a :func:`~localsvm.run_tasks` task,
    module-level so it pickles)."""
    F = shared.F
    dim = F.shape[1]
    own = shared.y_idx == i
    w = shared.weights
    M = _gram_lower(F, np.flatnonzero(own), shared.epoch, None if w is None else np.sqrt(w))
    M[np.diag_indices_from(M)] += shared.ridge * max(np.trace(M) / dim, 1e-12)
    try:
        L = _cholesky_lower(M, shared.epoch)
    except LinAlgError as exc:  # pragma: no cover - ε > 0 makes M definite
        raise ValueError(
            f"PᵀP + εI of class {shared.classes[i]!r} is not positive definite "
            f"numerically; raise ridge (now {shared.ridge})"
        ) from exc
    _poll(shared.epoch)
    alpha, u, sol = solve_box_qp(
        shared.backend,
        F[~own],
        L,
        shared.C if w is None else shared.C * w[~own],
        tol=shared.tol,
        max_iter=shared.max_iter,
        epoch=shared.epoch,
    )
    return _ClassFit(u=u, alpha=alpha, solution=sol)


@fill(**X_PARTS)
class ClusterSVC(BaseSVMClassifier):
    """Multiclass cluster SVM (MCSVM): one hyperplane per class, nearest wins.

    For each class ``i``, with ``P = [A e]`` its own examples and ``Q = [B e]``
    the examples of every other class (a column of ones appended, so
    ``u = [w; b]``), the hyperplane solves

        min ½‖P u‖² + C Σ ξ_j   s.t.  −(Q u)_j ≥ 1 − ξ_j,  ξ ≥ 0,

    whose dual is the box-constrained QP

        max_α  eᵀα − ½ αᵀ Q (PᵀP + εI)⁻¹ Qᵀ α,   0 ≤ α ≤ C,

    (with weights, see ``class_weight`` and :meth:`fit`: each own example's
    term of ``‖P u‖²`` and each other example's slack count ``w_i`` times,
    so ``PᵀP`` becomes ``PᵀWP`` and the box ``C·w_j``),

    with no equality constraint, and ``u = −(PᵀP + εI)⁻¹ Qᵀ α``. With the
    Cholesky factor ``L Lᵀ = PᵀP + εI`` the Hessian is ``H = Z Zᵀ``,
    ``Z = Q L⁻ᵀ``. Only the other classes' examples with ``α > 0`` shape the
    hyperplane, and they are few, so the QP is solved on a growing working
    set (:func:`solve_box_qp`): each round poses the QP over the working set
    to the solver backend as a box-only dual with a precomputed Hessian (the
    Rust backend solves it by greedy coordinate descent, stopping when the
    largest projected-gradient violation is at most ``tol``), then adds the
    examples that violate optimality most, until none does; ``H`` is never
    formed whole. The ``k`` problems are independent and run in parallel.

    With ``kernel='linear'`` the hyperplanes live in the feature space
    (``A`` and ``B`` are the features). Any other kernel uses the kernel form:
    ``A`` and ``B`` are replaced by ``K(A, R)`` and ``K(B, R)`` for a set ``R``
    of training examples (``n_columns`` of them, drawn at random), and the
    hyperplane is ``f_i(x) = Σ_r ψ_ir K(x, x_r) + b_i``.

    A new example ``x`` is given the class whose hyperplane is nearest:
    ``|f_i(x)| / ‖w_i‖`` by default, the geometric distance, where ``‖w_i‖``
    is ``sqrt(ψ_iᵀ K_RR ψ_i)`` in the kernel form (the norm of
    ``w_i = Σ_r ψ_ir φ(x_r)`` in the kernel's feature space);
    ``normalize=False`` compares ``|f_i(x)|`` as the original paper does.

    Parameters
    ----------
    C : float, default=1.0
        Penalty on the slacks of the other classes' examples (the box of the
        dual); must be positive.
    kernel : {'linear', 'poly', 'rbf', 'sigmoid', 'precomputed'}, default='rbf'
        'linear' fits the hyperplanes on the features themselves; the others
        use the kernel form. 'precomputed' takes the square training kernel
        matrix in ``fit`` and the ``(n_test, n_train)`` kernel values in
        ``predict``; only the columns of ``columns_`` are read at prediction,
        but the matrices must have every training column.
    degree : int, default=3
        Degree of the 'poly' kernel.
    gamma : {'scale', 'auto'} or float, default='scale'
        Kernel coefficient, as :class:`localsvm.SVC`.
    coef0 : float, default=0.0
        Constant term of the 'poly' and 'sigmoid' kernels.
    n_columns : int or None, default=500
        Kernel form only: the number of training examples whose kernel
        columns ``K(·, x_r)`` span the hyperplanes, drawn uniformly at random
        without replacement (``random_state``); all of them when the training
        set is no larger. ``None`` uses every training example: then each
        class costs an ``(n+1) × (n+1)`` factorisation (O(k·n³) time and
        O(n²) memory), which is only sensible for a few thousand examples.
    ridge : float, default=1e-4
        The ridge ε that makes ``PᵀP`` invertible, relative to its mean
        diagonal entry: ``ε = ridge · trace(PᵀP) / (d + 1)``, so it does not
        depend on the scale of the features or the size of the class.
        ``PᵀP`` is singular whenever a class has fewer examples than ``d + 1``
        (kernel form: than ``n_columns + 1``), and then ``ridge`` also acts as
        a regulariser (the hyperplane keeps ``‖Pu‖² + ε‖u‖²`` small), worth
        tuning with ``C`` and ``gamma``. Very small values make the dual
        badly conditioned: the Rust solver caches the Hessian in single
        precision and may then stop at its iteration cap.
    normalize : bool, default=True
        Predict by the geometric distance ``|f_i(x)| / ‖w_i‖``; False uses
        the unnormalised ``|f_i(x)|`` of the original paper. A class whose
        hyperplane has no normal (``‖w_i‖ = 0``) counts as farthest.
    tol : float, default=1e-3
        Stop each box QP when its largest projected-gradient violation is at
        most ``tol`` (in units of the margin 1).
    max_iter : int, default=-1
        Iteration cap per class's QP; -1 means none (beyond the solver's
        safety cap). A ``ConvergenceWarning`` is issued when the cap stops a
        solver.
    random_state : int, RandomState instance or None, default=None
        Draws the kernel columns when ``n_columns`` is smaller than the
        training set.
    backend : str, default='auto'
        Name of a registered solver backend that solves box-only duals
        (``localsvm.list_backends()``); 'auto' picks the Rust one.
    class_weight : dict, 'balanced' or None, default=None
        Multiplies the weight of each class's examples, as in
        :class:`localsvm.SVC`: ``w_i = class_weight[y_i] · sample_weight_i``
        scales both the example's term of its own hyperplane's
        ``½‖P u‖²`` and its slack in every other class's problem (the box
        ``C · w_i``), which is what repeating the example ``w_i`` times
        does for an integer ``w_i``. 'balanced' is
        ``n_samples / (n_classes · bincount(y))`` (``class_weight_``).
    n_jobs : int or None, default=None
        Classes solved at once (threads); None or -1: all CPUs. The fit's
        products and factorisations run on one BLAS thread (a limit shared
        by the fits of every thread), so the model is bitwise the same for
        every ``n_jobs`` and whatever else the process runs.
    verbose : int, default=0
        Logging through :mod:`logging` (logger ``localsvm.cluster_svc``): 0
        logs nothing; 1 one line per class's solve (iterations,
        convergence, non-zero multipliers, time) and a summary; 2 also the
        fit's steps. Records are emitted at level INFO; without any logging
        configuration they go to stderr.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    coef_ : ndarray of shape (n_classes, n_features)
        ``w_i`` of each hyperplane; ``kernel='linear'`` only.
    intercept_ : ndarray of shape (n_classes,)
        ``b_i`` of each hyperplane.
    class_weight_ : ndarray of shape (n_classes,)
        The factor of each class's weight (``class_weight`` resolved).
    expansion_coef_ : ndarray of shape (n_classes, n_columns)
        ``ψ_i`` of each hyperplane over the kernel columns ``columns_``;
        the kernel form only (``kernel != 'linear'``).
    columns_ : ndarray of shape (n_columns,)
        Indices of the training examples whose kernel columns span the
        hyperplanes (kernel form only).
    column_vectors_ : ndarray of shape (n_columns, n_features)
        Those training examples (empty, shape (0, 0), for a precomputed
        kernel); kernel form only.
    w_norm_ : ndarray of shape (n_classes,)
        ``‖w_i‖`` of each hyperplane (the divisor of ``normalize=True``).
    dual_coef_ : list of n_classes ndarrays
        ``α`` of each class's dual, over the training examples of the other
        classes (in the order of the training set).
    n_support_ : ndarray of shape (n_classes,), dtype=int32
        Non-zero ``α`` per class: the other classes' examples that constrain
        the hyperplane.
    n_iter_ : ndarray of shape (n_classes,)
        Iterations of each class's solve.
    dual_objective_ : ndarray of shape (n_classes,)
        ``½αᵀHα − eᵀα`` of each class's dual (the negated maximum).
    fit_status_ : int
        0 if every class's QP converged, 1 otherwise.
    backend_ : str
        Name of the backend that solved the QPs.

    See Also
    --------
    localsvm.SVC : One-vs-one or one-vs-rest C-SVC.
    solve_box_qp : The working-set solver of each class's dual.

    Notes
    -----
    Cost, with ``n`` training examples, ``k`` classes and ``D = d + 1``
    (linear) or ``D = n_columns + 1`` (kernel form): the rows ``[K(x, R) e]``
    take ``8·n·D`` bytes (n·(D − 1) kernel evaluations). Each class forms
    and factorises ``PᵀP + εI`` (O(m_i·D² + D³) time, ``16·D²`` bytes, plus
    ``8·n·D`` for the rows of ``P`` and ``Q``); each working-set round costs
    O(n·D) for the gradient and O(s·D² + s²·D) for the ``s`` new rows, and
    the working set's Hessian takes ``8·|S|²`` bytes, ``|S|`` a little more
    than the class's non-zero ``α``. Up to ``n_jobs`` classes are held at
    once; ``fit`` raises ``MemoryError`` before allocating when the fixed
    part would exceed half of the available memory. With ``n_columns=None`` the
    factorisations cost O(k·n³) time and ``16·n²`` bytes per class.
    Prediction costs O(n_test·D) per class. On USPS (7291 examples, 256
    features, 10 classes) with ``n_columns=1000`` a fit takes a few seconds
    of CPU time.

    A class with a single example works (the ridge makes its ``PᵀP``
    invertible). With two classes ``decision_function`` returns one column,
    as scikit-learn's binary classifiers do.

    Progress: ``set_callbacks`` takes scikit-learn ≥ 1.9 callbacks (e.g.
    ``sklearn.callback.ProgressBar()``); the fit is one task with one
    subtask per class (its hyperplane's solve).

    References
    ----------
    Wang Zhiyi and Yang Yifan, "Multiclass cluster support vector machines"
    (多分类簇支持向量机方法), Journal of Computer Applications (计算机应用)
    30(1), 2010. The nearest-hyperplane rule and the non-parallel hyperplanes
    follow O. L. Mangasarian and E. W. Wild, "Multisurface proximal support
    vector machine classification via generalized eigenvalues", IEEE TPAMI
    28(1), 2006.

    Examples
    --------
    >>> from localsvm import ClusterSVC
    >>> from localsvm.datasets import load_iris
    >>> from sklearn.model_selection import train_test_split
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> d = load_iris()
    >>> X_tr, X_te, y_tr, y_te = train_test_split(d.X, d.y, random_state=0, stratify=d.y)
    >>> clf = make_pipeline(StandardScaler(), ClusterSVC(C=1.0)).fit(X_tr, y_tr)
    >>> clf.score(X_te, y_te) > 0.9
    True
    """

    _parameter_constraints: ClassVar[dict] = {
        **BaseSVMClassifier._parameter_constraints,
        "n_columns": [Interval(Integral, 1, None, closed="left"), None],
        "ridge": [Interval(Real, 0.0, None, closed="neither")],
        "normalize": ["boolean"],
        "random_state": ["random_state"],
        "class_weight": CLASS_WEIGHT_CONSTRAINT,
    }

    def __init__(
        self,
        *,
        C=1.0,
        kernel="rbf",
        degree=3,
        gamma="scale",
        coef0=0.0,
        n_columns=500,
        ridge=1e-4,
        normalize=True,
        tol=1e-3,
        max_iter=-1,
        random_state=None,
        backend="auto",
        class_weight=None,
        n_jobs=None,
        verbose=0,
    ):
        store_params(self, locals())

    # ------------------------------------------------------------------ fit

    @property
    def _linear_form(self) -> bool:
        return self.kernel == "linear"

    def _draw_columns(self, n: int) -> np.ndarray:
        if self.n_columns is None or self.n_columns >= n:
            return np.arange(n)
        rng = check_random_state(self.random_state)
        return np.sort(rng.choice(n, size=int(self.n_columns), replace=False))

    def _check_memory(self, n: int, dim: int, n_other: int, workers: int) -> None:
        """Raise ``MemoryError`` when the fit would need more than
        half of the available memory (see the Notes of :class:`ClusterSVC`)."""
        # Per class: PᵀP and its factor and the rows of P and Q; the working
        # set (which grows with the number of non-zero α) is not counted.
        per_class = 8 * (2 * dim * dim + n * dim)
        need = 8 * n * dim + workers * per_class
        limit = min(_memory_limit() or np.inf, memory_budget())
        if need <= limit:
            return
        if self._linear_form:
            fix = "reduce the number of features, or use a kernel with n_columns"
        else:
            fix = f"lower n_columns (now {self.n_columns}) or n_jobs"
        raise MemoryError(
            f"ClusterSVC would need about {need / 2**30:.1f} GiB ({n} examples, {dim} "
            f"columns per hyperplane, {workers} classes at once), more than half of the "
            f"{2 * limit / 2**30:.1f} GiB of memory available; {fix}"
        )

    @fit_method
    def fit(self, X, y, sample_weight=None):
        """Fit one hyperplane per class.

        {X_train_parameters}
        y : array-like of shape (n_samples,)
            Class labels; a class may have a single example.
        sample_weight : array-like of shape (n_samples,), default=None
            Per-example weights, composed with ``class_weight`` (see there);
            None weighs every example 1. As in LIBSVM, an example of weight
            ``<= 0`` is left out before anything is computed
            (``gamma='scale'`` and the kernel columns included; with
            ``kernel='precomputed'`` its row and column of ``X``).

        Returns
        -------
        self : ClusterSVC
            The fitted estimator.
        """
        X, y, y_idx, weights, kept = self._weighted_fit_prologue(X, y, sample_weight)
        n = X.shape[0]
        n_classes = self.classes_.shape[0]
        spec = self._resolve_kernel(X)
        began = time.perf_counter()
        report = self._fit_report(n_classes, X, y)
        if self._linear_form:
            columns = None
            dim = X.shape[1] + 1
        else:
            columns = self._draw_columns(n)
            dim = columns.size + 1
        counts = np.bincount(y_idx, minlength=n_classes)
        n_other = int(n - counts.min())
        workers = max(1, min(effective_n_jobs(self.n_jobs), n_classes))
        self._check_memory(n, dim, n_other, workers)

        # Every product and factorisation of the fit on one BLAS thread,
        # whatever n_jobs and whatever else the process runs: OpenBLAS
        # rounds its products and factorisations differently on 1 and 2
        # threads (n_jobs=1 and 2 differed by 4e-11), and classes in parallel
        # do not oversubscribe the cores. The limit is shared by the fits of
        # every thread (one_blas_thread), so concurrent fits equal lone ones.
        with one_blas_thread():
            # [A e] for every training example: features, or kernel columns,
            # by blocks of rows: one copy of a 20000 x 6000 kernel into F ran
            # for seconds without seeing Ctrl-C (and held a second copy).
            F = np.empty((n, dim))
            Xc = None if self._linear_form or spec.precomputed else X[columns]
            block = max(1, FILL_VALUES // dim)
            for s in range(0, n, block):
                rows = slice(s, min(s + block, n))
                if Xc is not None:
                    F[rows, :-1] = kernel_matrix(spec, X[rows], Xc)
                elif self._linear_form:
                    F[rows, :-1] = X[rows]
                else:
                    F[rows, :-1] = X[rows, columns]
            F[:, -1] = 1.0

            # What the backend must accept: box-only QPs with a precomputed
            # Hessian, up to one variable per example of the other classes.
            probe = QPProblem(
                X=np.empty((0, 0)),
                y=np.ones(n_other),
                upper=np.full(n_other, float(self.C)),
                kernel=KernelSpec("precomputed"),
                equality=False,
            )
            backend = self._select_backend(probe)
            report.log(
                2,
                "ClusterSVC fit: %d samples, %d classes, rows [A e] of width %d, backend %r",
                n,
                n_classes,
                dim,
                backend.name,
            )
            report.subtasks("class", n_classes)

            fits: list[_ClassFit] = run_tasks(
                _fit_class,
                range(n_classes),
                n_jobs=self.n_jobs,
                thread_safe=backend.capabilities.thread_safe,
                shared=_ClassProblem(
                    F=F,
                    y_idx=y_idx,
                    classes=self.classes_,
                    ridge=float(self.ridge),
                    C=float(self.C),
                    weights=None if np.all(weights == 1.0) else weights,
                    tol=float(self.tol),
                    max_iter=int(self.max_iter),
                    backend=backend,
                    epoch=interrupt_epoch(),
                ),
                **report.hooks(_describe_class_fit),
            )
            self.backend_ = backend.name
            U = np.array([f.u for f in fits])
            self.intercept_ = U[:, -1].copy()
            W = U[:, :-1]
            if self._linear_form:
                self._coef = W.copy()
                norms = np.linalg.norm(W, axis=1)
            else:
                self.expansion_coef_ = W.copy()
                # Indices of the training rows given (a precomputed test
                # kernel has a column for every one of them).
                self.columns_ = kept[columns]
                self.column_vectors_ = np.empty((0, 0)) if spec.precomputed else X[columns]
                K_rr = F[columns, :-1]
                norms = np.sqrt(np.maximum(np.einsum("ij,ij->i", W @ K_rr, W), 0.0))
        self.w_norm_ = norms
        self.dual_coef_ = [f.alpha for f in fits]
        self.n_support_ = np.array([np.count_nonzero(f.alpha) for f in fits], dtype=np.int32)
        self.n_iter_ = np.array([f.solution.n_iter for f in fits], dtype=np.int64)
        self.dual_objective_ = np.array([f.solution.objective for f in fits])
        self.fit_status_ = int(
            self._warn_unconverged(
                (f.solution.converged for f in fits),
                "per-class problems",
                (f.solution.message or "no reason given" for f in fits if not f.solution.converged),
            )
        )
        report.log(1, "ClusterSVC fit: %d classes, %.3f s", n_classes, time.perf_counter() - began)
        report.end(X, y)
        return self

    # -------------------------------------------------------------- predict

    def _hyperplane_values(self, X) -> np.ndarray:
        """``f_i(x)`` of every hyperplane, shape ``(n_samples, n_classes)``."""
        X = self._predict_prologue(X)
        # One BLAS thread, as at fit: the products round the same whatever
        # else the process runs (OpenBLAS's differ by 1e-13 on 1 and 2 threads).
        with one_blas_thread():
            if self._linear_form:
                return X @ self._coef.T + self.intercept_
            if self._spec.precomputed:
                K = X[:, self.columns_]
            else:
                K = kernel_matrix(self._spec, X, self.column_vectors_)
            return K @ self.expansion_coef_.T + self.intercept_

    def distances(self, X) -> np.ndarray:
        """Compute the distance of each example to each class's hyperplane.

        {X_predict_parameters}

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            ``|f_i(x)| / ‖w_i‖``, or ``|f_i(x)|`` with ``normalize=False``.
            A class whose hyperplane has no normal (``‖w_i‖`` zero, or below
            float64's resolution of the largest norm: its examples' features
            vanished) is farther than any other class; when every class is
            so, ``|f_i(x)|`` alone ranks them. Distances beyond float64's
            range are capped at its largest value, so they stay finite.
        """
        d = np.abs(self._hyperplane_values(X))
        big = np.finfo(np.float64).max
        if self.normalize:
            norms = np.asarray(self.w_norm_, dtype=np.float64)
            flat = norms <= np.finfo(np.float64).eps * norms.max(initial=0.0)
            if not flat.all():
                with np.errstate(over="ignore"):
                    d[:, ~flat] /= norms[~flat]
                d[:, flat] = big
        return np.minimum(d, big)

    def decision_function(self, X):
        """Score each class by minus the distance to its hyperplane.

        {X_predict_parameters}

        Returns
        -------
        ndarray of shape (n_samples, n_classes) or (n_samples,)
            ``−d_i``: the largest value is the predicted class. Two classes:
            ``d_0 − d_1``, positive when the hyperplane of ``classes_[1]`` is
            nearer.
        """
        d = self.distances(X)
        if self.classes_.shape[0] == 2:
            return d[:, 0] - d[:, 1]
        return -d

    def predict(self, X):
        """Predict the class of the nearest hyperplane for each example.

        {X_predict_parameters}

        Returns
        -------
        ndarray of shape (n_samples,)
            Class labels. Equal distances go to the first class, except with
            two classes, where they go to ``classes_[1]``, as a decision value
            of 0 does in every two-class model.
        """
        check_is_fitted(self)
        d = self.distances(X)
        if self.classes_.shape[0] == 2:
            # By the decision value d_0 − d_1, as every two-class model here:
            # equal distances (a value of 0) predict classes_[1].
            return self.classes_[binary_index(d[:, 0] - d[:, 1])]
        return self.classes_[np.argmin(d, axis=1)]

    @property
    def coef_(self) -> np.ndarray:
        """``w_i`` of each hyperplane, for ``kernel='linear'`` only."""
        check_is_fitted(self)
        if not self._linear_form:
            raise AttributeError("coef_ is only available when using a linear kernel")
        return self._coef.copy()
