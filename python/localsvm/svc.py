"""``localsvm.SVC``: C-support vector classification on a pluggable QP backend.

A drop-in for scikit-learn's :class:`sklearn.svm.SVC` (same parameters where
they mean the same thing, same fitted attributes and shapes), trained by the
Rust SMO solver by default. See :class:`SVC`.
"""

from __future__ import annotations

import itertools
import math
import time
import warnings
from numbers import Integral, Real
from typing import ClassVar

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import NotFittedError
from sklearn.utils import _safe_indexing, check_random_state
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import (
    _num_samples,
    check_consistent_length,
    check_is_fitted,
    column_or_1d,
)

from ._base import (
    CACHE_CLASS_WEIGHT_CONSTRAINTS,
    BaseSVMClassifier,
    box_constant,
    class_weights,
    fit_method,
    numeric_input,
    positive_weights,
    read_only_coef,
    store_params,
)
from ._compat import Hidden, Interval, StrOptions
from ._docstrings import CLASSIFIER_ATTRIBUTES, X_PARTS, fill
from ._multiclass import (
    BinaryModelsMixin,
    assemble_joined,
    binary_tasks,
    ovo_compact,
    problem_classes,
)
from ._probability import couple_pairwise, fit_sigmoid, fold_splits, sigmoid_proba
from ._validation import encode_classes
from .backends.base import (
    QPProblem,
    QPSolution,
    smo_settings,
    solve_checked,
    solve_many_checked,
)
from .kernels import KERNELS, core_rows, decision_values, decision_values_ovo
from .parallel import effective_n_jobs, run_tasks

#: The warning of an explicit ``probability`` (scikit-learn 1.9's wording).
PROBABILITY_DEPRECATION = (
    "The `probability` parameter is deprecated, as in scikit-learn 1.9 (which removes "
    "it in version 1.11), and will be removed in a future version. Use "
    "`CalibratedClassifierCV(SVC(), ensemble=False)` instead of `SVC(probability=True)`"
)


def _pair_problem(task, shared) -> QPProblem:
    """The dual of one binary problem of a fit (a pair's rows and ±1 labels);
    with ``nu`` in the settings, the ν-SVC dual (:func:`nu_start`)."""
    rows, labels = task
    X, upper, settings, _ = shared
    nu = settings.get("nu")
    if nu is not None:
        settings = {k: v for k, v in settings.items() if k != "nu"}
    # Every row (rows is then 0..n-1): the boxes as they are, not a copy.
    whole = rows.size == X.shape[0]
    problem = QPProblem(
        X=X,
        rows=None if whole else rows,
        y=labels,
        upper=upper if whole else upper[rows],
        **settings,
    )
    if nu is not None:
        problem.p = np.zeros(rows.size)
        problem.alpha0 = nu_start(labels, problem.upper, nu)
        problem.equality_kind = "per_label"
    return problem


def nu_start(labels: np.ndarray, upper: np.ndarray, nu: float) -> np.ndarray:
    """LIBSVM's start of the ν-SVC dual: each label set's coefficients, in
    order, take ``min(upper_i, what is left)`` of ``ν · Σ upper / 2``.

    Parameters
    ----------
    labels : ndarray of shape (n,)
        ±1.
    upper : ndarray of shape (n,)
        The boxes (the sample weights).
    nu : float
        ν.

    Returns
    -------
    ndarray of shape (n,)
        The start.
    """
    half = nu * float(upper.sum()) / 2.0
    start = np.zeros(labels.shape[0])
    for side in (1.0, -1.0):
        idx = np.flatnonzero(labels == side)
        before = np.concatenate([[0.0], np.cumsum(upper[idx])[:-1]])
        start[idx] = np.clip(half - before, 0.0, upper[idx])
    return start


#: Unit roundoff of the kernel values of each precision.
_ROUNDOFF = {"float32": float(np.finfo(np.float32).eps), "float64": float(np.finfo(np.float64).eps)}


def kernel_value_scale(spec, X, rows: np.ndarray | None = None) -> float:
    """The scale ``s`` of a problem's kernel values, as the Rust core
    bounds their rounding (about ``ε · s``): ``S = max‖x‖²`` for 'linear',
    ``(γS + |coef0|)^degree`` for 'poly', ``max(1, 2γS)`` for 'rbf',
    ``max(1, γS + |coef0|)`` for 'sigmoid', ``max|K|`` for 'precomputed'.

    Parameters
    ----------
    spec : KernelSpec
        The kernel.
    X : {ndarray, sparse matrix}
        Features, or the square kernel matrix for 'precomputed'.
    rows : ndarray of int or None, default=None
        The problem's rows of ``X`` (None: all).

    Returns
    -------
    float
        ``s`` (0.0 for a problem without rows).
    """
    idx = np.arange(X.shape[0]) if rows is None else np.asarray(rows, dtype=np.intp)
    if idx.size == 0:
        return 0.0
    if spec.precomputed:
        # Block by block: never a copy of the whole sub-matrix.
        return max(
            float(np.abs(X[idx[b : b + 1024]][:, idx]).max()) for b in range(0, idx.size, 1024)
        )
    with np.errstate(over="ignore"):
        if sp.issparse(X):
            sub = X[idx]
            S = float(np.asarray(sub.multiply(sub).sum(axis=1)).max())
        else:
            S = max(
                float(np.einsum("ij,ij->i", block, block).max())
                for block in _row_blocks(X, rows, idx, 4096)
            )
        g, c0 = float(spec.gamma), abs(float(spec.coef0))
        if spec.name == "linear":
            return S
        if spec.name == "poly":
            return float((g * S + c0) ** int(spec.degree))
        if spec.name == "rbf":
            return max(1.0, 2.0 * g * S)
        return max(1.0, g * S + c0)


def _row_blocks(X, rows, idx: np.ndarray, size: int):
    """The rows ``idx`` of ``X`` in blocks of ``size``, C-contiguous: views of
    ``X`` when ``rows`` is None (every row) and ``X`` is C-contiguous, else
    copies."""
    for b in range(0, idx.size, size):
        yield np.ascontiguousarray(X[b : b + size]) if rows is None else X[idx[b : b + size]]


def small_weight_scale(weights: np.ndarray) -> float:
    """The power of two that brings the largest of ``weights`` to ``[1, 2)``
    when it is below ``2**-10``, else 1. For the duals homogeneous in the
    weights (ν-SVC, the one-class SVM): their solution scales with a common
    factor of the weights, and so does their gradient, which ``tol`` bounds
    in absolute terms; solved at this scale, small weights do not stop the
    solver near its start. Multiplying by it is exact."""
    top = float(np.max(weights)) if np.size(weights) else 1.0
    if not (np.isfinite(top) and 0.0 < top < 2.0**-10):
        return 1.0
    return float(np.ldexp(1.0, -int(np.frexp(top)[1] - 1)))


def _rescale_nu(sol: QPSolution, nu: float, floor: float) -> QPSolution:
    """A ν-SVC solution in C-SVC form (LIBSVM): ``α``, ``ρ`` divided by the
    margin variable ``r``, the objective by ``r²``.

    ``r`` is ``‖w‖² / Σα`` of the ν solution (twice its objective over the
    coefficients' sum, at an optimum with free support vectors), the margin
    by which the classes' reduced convex hulls stand apart; it is known only
    up to ``floor``, the solve's tolerance plus the rounding of a gradient
    entry (``ε · s · Σα``, with ``s`` the kernel-value scale of
    :func:`kernel_value_scale`). Where ``|r| ≤ floor`` the hulls meet within
    that uncertainty: ``w`` is indistinguishable from 0, ``α / r`` is as
    large as ``1 / floor`` and of arbitrary size, and the labels of the
    points on the margin are arbitrary. LIBSVM divides all the same and
    returns such a model; here it raises ``ValueError`` instead.
    """
    r = float(getattr(sol, "r", 0.0))
    # A kernel that is not positive semi-definite ('sigmoid', some callables
    # or precomputed matrices) may give a non-convex dual whose r is well
    # below 0: LIBSVM divides by it, and so does this (the model is LIBSVM's).
    if not (np.isfinite(r) and abs(r) > floor):
        raise ValueError(
            f"The nu-SVC margin variable r = {r:.3g} is within its uncertainty "
            f"{floor:.3g} of 0 (tol plus the rounding of the kernel values), so the decision "
            "function is 0 within that uncertainty and the dual coefficients alpha / r "
            f"are not determined: for nu={nu!r} the two classes' reduced convex hulls "
            "meet (a larger nu shrinks them), or nu or the sample weights are so small "
            "that every gradient is below tol (the multipliers, and r with them, scale "
            "with the weights; tol does not). Raise nu, lower tol, scale small sample "
            "weights up (e.g. to mean 1), or change the kernel"
        )
    sol.alpha = np.asarray(sol.alpha) / r
    sol.rho = sol.rho / r
    sol.objective = sol.objective / r / r
    return sol


def _nu_floor(sol: QPSolution, problem: QPProblem) -> float:
    """The uncertainty of a ν-SVC solve's ``r`` (see :func:`_rescale_nu`)."""
    precision = getattr(sol, "precision", "float64")
    eps = _ROUNDOFF.get(precision, _ROUNDOFF["float64"])
    if problem.kernel.name == "rbf" and precision == "float64" and not sp.issparse(problem.X):
        # Dense float64 RBF values come from ‖x − z‖² directly: each is off
        # by at most about ε · γ‖x − z‖² · exp(−γ‖x − z‖²) ≤ ε.
        scale = 1.0
    else:
        scale = kernel_value_scale(problem.kernel, problem.X, problem.rows)
    total = float(np.abs(np.asarray(sol.alpha, dtype=np.float64)).sum())
    return float(problem.tol) + eps * scale * total


def describe_solution(sol: QPSolution) -> str:
    """A log line's account of one solve: iterations, convergence and
    support vectors."""
    state = "converged (KKT gap <= tol)" if sol.converged else "stopped before tol"
    n_sv = int(np.count_nonzero(sol.alpha))
    how = getattr(sol, "solver", "smo")
    return f"{how}: {sol.n_iter} iterations, {state}, {n_sv} support vectors"


def _pair_solution(sol: QPSolution, problem: QPProblem, settings: dict) -> QPSolution:
    """A binary problem's solution in C-SVC form: ν-SVC's rescaled
    (:func:`_rescale_nu`), C-SVC's as it is."""
    if "nu" not in settings:
        return sol
    return _rescale_nu(sol, settings["nu"], _nu_floor(sol, problem))


def _solve_pair(task, shared) -> QPSolution:
    """Solve one binary problem of a fit with the chosen backend (a
    :func:`~localsvm.run_tasks` task: module-level, so it pickles)."""
    problem = _pair_problem(task, shared)
    return _pair_solution(solve_checked(shared[3], problem), problem, shared[2])


def _solve_pairs(chunk, shared) -> list[QPSolution]:
    """Solve a chunk of a fit's binary problems through the backend's
    ``solve_many`` (the Rust backend: one call into its core), each as
    :func:`_solve_pair` solves it (a :func:`~localsvm.run_tasks` task)."""
    problems = [_pair_problem(task, shared) for task in chunk]
    solutions = solve_many_checked(shared[3], problems)
    return [
        _pair_solution(sol, problem, shared[2])
        for sol, problem in zip(solutions, problems, strict=True)
    ]


#: Chunks per worker when a fit's binary problems are solved in chunks
#: (:func:`solve_pairs`): a few, so a worker whose chunk ends early takes
#: another while the others finish.
CHUNKS_PER_JOB = 4


def solve_pairs(tasks, shared, *, n_jobs, thread_safe, hooks) -> list[QPSolution]:
    """Solve a fit's binary problems ``(rows, labels)``, in task order.

    Without progress hooks, the problems go to the backend in chunks, one
    :func:`_solve_pairs` task each (one chunk on one worker, else
    :data:`CHUNKS_PER_JOB` per worker), so hundreds of small one-vs-one
    problems cost one call each chunk, not one each problem; with hooks
    (callbacks, ``verbose``), one :func:`_solve_pair` task per problem, as
    the hooks report problem by problem.
    """
    tasks = list(tasks)
    if hooks or len(tasks) < 2:
        return run_tasks(
            _solve_pair, tasks, n_jobs=n_jobs, thread_safe=thread_safe, shared=shared, **hooks
        )
    jobs = 1 if n_jobs == 1 or not thread_safe else effective_n_jobs(n_jobs)
    n_chunks = 1 if jobs == 1 else min(len(tasks), CHUNKS_PER_JOB * jobs)
    bounds = np.linspace(0, len(tasks), n_chunks + 1).round().astype(int)
    chunks = [tasks[a:b] for a, b in itertools.pairwise(bounds)]
    solved = run_tasks(_solve_pairs, chunks, n_jobs=n_jobs, thread_safe=thread_safe, shared=shared)
    return [sol for part in solved for sol in part]


def _solve_pair_from(task, shared) -> QPSolution:
    """Solve one binary problem warm-started from ``alpha0`` (None: from
    zero), its start gradient computed as ``gradient`` asks
    (:attr:`~localsvm.backends.base.QPProblem.start_gradient`: 'blocked',
    blocked products over the start's support vectors, for the concatenated
    cell solutions; None, the kernel columns of the backend)."""
    rows, labels, alpha0, gradient = task
    problem = _pair_problem((rows, labels), shared)
    if alpha0 is not None:
        problem.alpha0 = alpha0
        problem.start_gradient = gradient
    return solve_checked(shared[3], problem)


#: ``cell_size='auto'``: rows per cell of ``init='cells'``.
AUTO_CELL_SIZE = 10_000

#: Cells of one level of ``init='cells'`` inside each cell of the level above.
CELL_BRANCHING = 4


def _cells_partition():
    """:func:`localsvm.cells.partition_cells` (the kernel k-means divide step)."""
    from .cells import partition_cells

    return partition_cells


#: What ``probA_`` and ``probB_`` say of themselves besides their meaning.
_PLATT_NOTE = """\
Empty, shape (0,), without ``probability=True``, as scikit-learn's.
Deprecated as in scikit-learn 1.9: reading it gives a
``FutureWarning``."""


@fill(**X_PARTS, classifier_attributes=CLASSIFIER_ATTRIBUTES)
class SVC(BinaryModelsMixin, BaseSVMClassifier):
    """C-support vector classification, solved by a pluggable QP backend.

    The dual of each binary problem is ``min ½αᵀQα − eᵀα`` subject to
    ``yᵀα = 0`` and ``0 ≤ α_i ≤ C · class_weight[y_i] · sample_weight_i``
    (Chang & Lin [1]_), solved by SMO with second-order working-set
    selection (Fan, Chen & Lin [2]_), shrinking and a kernel cache (the
    ``rust`` backend), or by any registered backend.

    Parameters
    ----------
    C : float, default=1.0
        Regularisation; must be positive. ``np.inf`` is the hard margin (no
        training error allowed), solved with the finite box 1e150, far above
        any dual coefficient of a separable problem (the solver's clipping
        and gradient bookkeeping need finite boxes). On data that no model
        separates the coefficients grow without bound: with ``max_iter=-1``
        the fit raises ``ValueError`` when the solver's safety cap stops it
        (LIBSVM never stops there), with a ``max_iter`` of yours it keeps
        the capped solve with a ``ConvergenceWarning``.
    kernel : {'linear', 'poly', 'rbf', 'sigmoid', 'precomputed'} or callable, \
            default='rbf'
        The kernel; 'precomputed' takes kernel values instead of features
        (the square training kernel at fit, the kernel between the samples
        and the training samples at predict). A callable ``kernel(X, Y)``
        returns the kernel matrix of shape ``(len(X), len(Y))``, as in
        scikit-learn: ``fit`` calls it on the training data and solves on
        that matrix; prediction calls it on the samples and the support
        vectors. A result of another shape or with non-finite values raises
        ``ValueError`` naming the callable.
    degree : int, default=3
        Degree of the 'poly' kernel.
    gamma : {'scale', 'auto'} or float, default='scale'
        Kernel coefficient: 'scale' is ``1 / (n_features · X.var())``, 'auto'
        is ``1 / n_features``; a float must be positive.
    coef0 : float, default=0.0
        Constant term of the 'poly' and 'sigmoid' kernels.
    shrinking : bool, default=True
        Use the shrinking heuristic: in SMO, and between the batched rounds
        (see ``solver``).
    probability : bool, default='deprecated'
        Deprecated as in scikit-learn 1.9: setting it (True or False) gives
        a ``FutureWarning`` at fit; ``CalibratedClassifierCV(SVC(),
        ensemble=False)`` is the replacement. True enables
        :meth:`predict_proba` and :meth:`predict_log_proba` as LIBSVM
        computes them: ``fit`` also trains every binary model on 5
        cross-validation folds of its own data (five more solves per model,
        folds drawn with ``random_state``), fits Platt's sigmoid to the
        held-out decision values (Lin, Lin & Weng [4]_) and, with more than
        two classes, couples the pairwise probabilities (Wu, Lin & Weng
        [5]_; with ``multiclass='ovr'`` the per-class probabilities are
        normalised to sum 1). The probabilities may disagree with
        :meth:`predict` on a few samples.
    tol : float, default=1e-3
        Stop when the maximal KKT violation is at most ``tol``.
    cache_size : float, default=200
        Kernel cache per binary problem, in MB.
    class_weight : dict or 'balanced', default=None
        Multiplies ``C`` per class; 'balanced' uses
        ``n_samples / (n_classes · bincount(y))``.
    verbose : bool or int, default=False
        Logging through :mod:`logging` (logger ``localsvm.svc``): 0 logs
        nothing; 1 one line per binary solve (iterations, convergence,
        support vectors, time) and a summary; 2 also the fit's steps and,
        every 50 ms of a long solve, its iterations and KKT gap. Records
        are emitted at level INFO; without any logging configuration they
        go to stderr.
    max_iter : int, default=-1
        Iteration cap per binary problem; -1 means none (beyond the solver's
        safety cap of ``max(10⁷, 100·n)`` iterations, as in LIBSVM). A
        ``ConvergenceWarning`` is issued when the cap stops a solver.
    decision_function_shape : {'ovr', 'ovo'}, default='ovr'
        With ``multiclass='ovo'``: 'ovo' returns the pairwise decision values,
        'ovr' turns them into one score per class (votes plus a tie-breaking
        confidence, as scikit-learn). With ``multiclass='ovr'`` the decision
        values are always one per class and this setting has no effect.
    break_ties : bool, default=False
        With ``multiclass='ovo'``, more than two classes and
        ``decision_function_shape='ovr'``, predict the largest score of
        ``decision_function`` (ties between classes with equal votes broken
        by the confidence); otherwise the lowest class wins a tie of votes.
        The rules are scikit-learn's, in :mod:`localsvm._multiclass`.
    random_state : int, RandomState instance or None, default=None
        Draws the cross-validation folds of ``probability=True`` and, with
        ``init='cells'``, the kernel k-means sample and its starting
        centres; an int makes them reproducible. The SMO solver itself is
        deterministic and draws no random numbers.
    multiclass : {'ovo', 'ovr'}, default='ovo'
        'ovo': one binary SVM per pair of classes, prediction by voting
        (LIBSVM). 'ovr': one SVM per class against the rest, prediction by the
        largest decision value. Two classes always train one SVM.
    backend : str, default='auto'
        Name of a registered solver backend (``localsvm.list_backends()``);
        'auto' picks the highest-priority backend that accepts the problem
        (the Rust one, with the built-ins).
    n_jobs : int or None, default=None
        CPUs the fit may use (threads; the solvers release the GIL). None or
        -1: all CPUs. Binary problems are solved ``n_jobs`` at once; when
        ``n_jobs`` is at least twice the number of binary problems (a
        two-class fit on two or more CPUs, for instance), each problem of at
        least 8192 examples on dense data or a precomputed kernel is solved
        by two threads instead (see Notes).
    precision : {'auto', 'float32', 'float64'}, default='auto'
        The arithmetic of the kernel values (``rust`` backend).
        'float32': computed by vectorised float32 loops and cached as
        float32, fast, and off by about ``1.2e-7 · s`` where ``s`` is the
        kernel-value scale (``max‖x‖²`` for 'linear',
        ``(γ·max‖x‖² + |coef0|)^degree`` for 'poly', ``max(1, 2γ·max‖x‖²)``
        for 'rbf', ``max(1, γ·max‖x‖² + |coef0|)`` for 'sigmoid', ``max|K|``
        for 'precomputed'); data or parameters outside float32's safe range
        (magnitudes beyond ``2^±100``) raise ``ValueError``. 'float64':
        computed and cached in float64 (slower, half as many columns per
        ``cache_size``), right for any finite data whose kernel values
        float64 can hold. 'auto' takes float32 when the data and parameters
        are within its range and ``tol ≥ 10 · 1.2e-7 · s``, float64
        otherwise; kernel values even float64 cannot hold raise
        ``ValueError`` naming the cause. Prediction uses float64 when the
        fit did, or when the test data needs it.
    init : {None, 'cells'}, default=None
        Start point of each binary solve. None: SMO from ``α = 0``.
        'cells': the divide-and-conquer start of Hsieh, Si & Dhillon [6]_.
        The binary problem's rows are partitioned into ``ceil(n_rows /
        cell_size)`` cells by two-step kernel k-means
        (:func:`localsvm.cells.partition_cells`, drawn with
        ``random_state``; a cell beyond twice its share is cut again),
        each cell's dual is solved on its own (the cells run ``n_jobs`` at
        once), and the global SMO starts from their
        concatenated multipliers, which are feasible for it (the boxes hold
        and ``yᵀα`` is a sum of zeros). The start's gradient is computed by
        blocked products over its support vectors, in parallel, not one
        kernel column at a time (one kernel value per row and support
        vector of the start), summed in float64 unless float32's rounding
        stays below a tenth of ``tol``. The solution is the same optimum to
        ``tol``.
        The closer the cells' solutions lie to it (the less kernel mass
        between cells: clustered data and a local kernel, such as 'rbf'
        with a large ``gamma``), the fewer iterations the global solve
        needs; it also computes fewer kernel columns than a solve from
        zero, since most multipliers start at a bound and are soon
        shrunk. A problem with fewer than ``2 · cell_size`` rows, and
        sparse ``X``, are solved from zero; a precomputed or callable
        kernel raises ``ValueError`` (cells need features). It is never
        chosen for you (no 'auto' setting of this class picks it) and is
        not faster than ``init=None`` today where the plain fit runs the
        batched rounds (see Notes).
    cell_size : int or 'auto', default='auto'
        Rows per cell with ``init='cells'``, at least 2; 'auto' is 10000.
        Unused with ``init=None``.
    cell_levels : int, default=1
        Levels of cells with ``init='cells'`` (DC-SVM's multilevel
        scheme), at least 1: level ``l`` (from 0) has cells of about
        ``cell_size · 4^l`` rows, each inside a cell of the level above
        (the partition runs top-down), and the levels are solved bottom-up,
        each cell warm-started from the cells inside it, the global problem
        last. A level whose cells would hold the whole problem (fewer than
        ``2 · cell_size · 4^l`` rows) is left out. Unused with ``init=None``.
    solver : {'auto', 'smo', 'batched'}, default='auto'
        How each binary problem is solved from zero. 'smo': LIBSVM's SMO
        (two variables per iteration, one or two kernel columns each, with
        shrinking). 'batched': first rounds on batched working sets (Wen,
        Shi, Li, He & Chen, "ThunderSVM: A Fast SVM Library on GPUs and
        CPUs", Journal of Machine Learning Research 19, 2018): each round
        takes the 1024 most violating variables (half of them kept from
        the previous round), computes their kernel columns in one blocked
        pass over the data and solves the subproblem on their block, until
        the KKT gap is below ``10 · tol``; SMO then finishes to ``tol``, so
        the solution is the same dual optimum. With ``shrinking``, every ten
        rounds the examples that cannot be in a violating pair (at a bound,
        their gradient beyond the current maximal violations: LIBSVM's rule,
        Chang & Lin, ACM TIST 2, 2011, §5.1) leave the rounds' selection,
        column fills and gradient updates; their gradient is brought up to
        date from the multipliers that moved since, before SMO takes over
        (those kernel values count in ``kernel_evaluations_``). The kernel
        columns of the working sets (float32, those of the last eight
        working sets at most, as many as ``cache_size`` holds: a variable
        that comes back costs no new column) count inside ``cache_size``
        (fewer variables per round when it holds less than 1024 columns;
        SMO alone below 128) and are freed before SMO fills its cache. It
        needs dense ``X`` with a kernel function and float32 kernel values
        (``precision_``); with ``init='cells'`` the rounds start from the
        cells' multipliers and their blocked start gradient. Where it cannot
        run, ``ValueError``. 'auto': 'batched' for binary problems
        of at least 100 000 examples where it can run and ``max_iter`` is
        -1 (there one blocked pass over the data is much cheaper than the
        columns one at a time), else 'smo'. ``solver_`` reports the choice.

    {classifier_attributes}
    support_ : ndarray of shape (n_SV,)
        Indices of support vectors, grouped by class.
    support_vectors_ : {ndarray, scipy.sparse.csr_matrix} of shape (n_SV, n_features)
        The support vectors; empty, shape (0, 0), for a precomputed kernel;
        a CSR matrix after a fit on sparse ``X`` (as scikit-learn).
    n_support_ : ndarray of shape (n_classes,), dtype=int32
        Number of support vectors of each class.
    dual_coef_ : ndarray
        ``y_i α_i`` of the support vectors. Shape ``(n_classes − 1, n_SV)`` in
        LIBSVM's one-vs-one layout (``(1, n_SV)`` for two classes, positive
        for ``classes_[1]``); ``(n_classes, n_SV)`` with ``multiclass='ovr'``,
        row ``c`` for the SVM of class ``c``.
    intercept_ : ndarray of shape (n_models,)
        Constant term of each binary model's decision function (with the
        sign convention of ``dual_coef_``).
    n_iter_ : ndarray of shape (n_models,)
        Iterations of each binary solve.
    kernel_evaluations_ : ndarray of shape (n_models,), dtype=int64
        Kernel values each binary solve computed, that is what its kernel
        cache did not hold (-1 where the backend does not count them). Each
        support vector's column is computed at least once, so a solve makes
        at least ``n_SV · n`` evaluations (its support vectors times its
        examples); the excess over that counts columns evicted and computed
        again, and columns of examples that end up with ``α = 0``.
    fit_status_ : int
        0 if every binary problem converged, 1 otherwise.
    dual_objective_ : ndarray of shape (n_models,)
        Dual objective ``½αᵀQα − eᵀα`` of each binary problem.
    class_weight_ : ndarray of shape (n_classes,)
        The multiplier of ``C`` for each class.
    backend_ : str
        Name of the backend that solved the problems.
    shape_fit_ : tuple of int
        Shape of the training ``X``.
    precision_ : {'float32', 'float64'}
        The arithmetic the binary problems were solved in ('float64' when any
        was).
    probA_, probB_ : ndarray of shape (n_models,) or (0,)
        The sigmoid ``1 / (1 + exp(A·f + B))`` of each binary model's
        decision value ``f`` (positive for the model's first class) with
        ``probability=True``; empty arrays otherwise, as scikit-learn's.
        Deprecated, as there: reading them gives a ``FutureWarning``.
    solver_ : {'smo', 'batched', 'mixed'}
        How the binary problems were solved (see ``solver``): 'batched' when
        every one started with batched rounds, 'smo' when none did, 'mixed'
        otherwise. ``n_iter_`` counts the batched rounds' pair updates too,
        and ``kernel_evaluations_`` their kernel columns.
    init_time_ : dict
        Only with ``init='cells'``: seconds of the fit's stages.
        ``'partition'``: kernel k-means of every binary problem;
        ``'cells'``: the cell solves of every level (wall time, with the
        start gradients above the finest level); ``'gradient'``: the global
        solves' start gradients' blocked products (summed over the binary
        problems);
        ``'smo'``: the global solves (wall time, less ``'gradient'``). With
        ``init='cells'``, ``n_iter_`` counts the global solve's iterations
        only and ``kernel_evaluations_`` adds up the cells', the start
        gradient's (rows times the start's support vectors) and the global
        solve's.
    init_n_iter_ : ndarray of shape (n_models,)
        Only with ``init='cells'``: iterations of each binary problem's
        cell solves, summed over its cells and levels (0 where it was
        solved from zero).
    n_cells_ : ndarray of shape (n_models,)
        Only with ``init='cells'``: cells of the finest level of each
        binary problem that were solved (those holding both classes; 0
        where the problem was solved from zero).

    Notes
    -----
    Progress: with scikit-learn ≥ 1.9, ``set_callbacks`` takes callbacks
    of ``sklearn.callback`` (e.g. ``ProgressBar()``). The fit is one task
    with one subtask per binary problem; a two-class fit's single problem
    has 100 subtasks ``'smo-progress'``, one per hundredth of its solve done
    as estimated from the KKT gap's approach to ``tol`` on a log scale and,
    early on, from the iterations against the number of examples (checked
    every 50 ms; the last ones end with the solve), whose
    ``metadata`` holds the iterations (``'n_iter'``), the KKT gap
    (``'kkt_gap'``) and the estimated share done (``'share'``).

    Sparse input: with a named kernel function ('linear', 'poly', 'rbf',
    'sigmoid') on the Rust backend, ``fit``, ``predict`` and
    ``decision_function`` compute on the CSR rows natively (any scipy
    sparse format is converted to CSR once; unsorted or duplicate entries
    are summed on a copy; stored NaN or infinity and structurally invalid
    matrices raise ``ValueError``): kernel values come from dot products
    over the stored entries, never from a dense copy of ``X``, and are
    computed and cached in float64 whatever ``precision`` says
    (``precision_`` is 'float64'). The exception is dense-like input, with
    at least a sixteenth of its entries stored
    (:data:`localsvm.kernels.DENSE_LIKE_DENSITY`) and dense copies within
    half the available memory: it is computed as dense rows, with the
    precision rule of dense data, because its dense copies need at most
    192 bytes per stored entry and the dense kernels run several times
    faster (``support_vectors_`` is CSR all the same). ``gamma='scale'`` uses
    ``X.multiply(X).mean() - X.mean() ** 2``, as scikit-learn. A model
    fitted on sparse data predicts dense ``X`` too, and one fitted on dense
    data sparse ``X`` (each converted to the other's form, without a dense
    copy of the sparse side). With a precomputed or callable kernel or
    another backend, sparse ``X`` is densified when its dense copy fits
    (4 GiB, or half the available memory), else ``MemoryError``.

    Threads: one binary solve is sequential minimal optimisation, one
    working pair after another, so its parallelism lies inside each step.
    Given two threads (``n_jobs`` as above), a solve of at least 8192
    examples starts one helper thread for the whole solve; each kernel
    column of at least 2¹⁵ rows × features is computed as row ranges the
    two threads take in turn, and the working-set search and the gradient
    update are split the same way while at least 8192 examples are active.
    The helper spins briefly between steps and sleeps when there is
    nothing to share; the calling thread never waits for it to wake up.
    When the second CPU is busy with other work (the helper then takes few
    of the pieces, or is descheduled in the middle of one), the solve
    continues on the calling thread alone for a while (0.2 s, doubling
    up to 3.2 s while the CPU stays busy) before trying two threads again,
    so a busy machine costs little against one thread.
    Every kernel value and every step is computed exactly as on one thread,
    so ``dual_coef_``, ``intercept_`` and ``n_iter_`` do not depend on
    ``n_jobs``. Sparse input, smaller problems, and fits of several binary
    problems whose count ``n_jobs`` does not cover twice, use one thread
    per problem; a problem of at least 8192 examples solved on one thread
    keeps all of its work there, the blocked gradient products and the
    fills of long kernel columns included (they run on a thread pool of the
    solve's own size; a smaller problem's products are short and run on
    rayon's shared pool).

    Exact mode (``init='cells'``) speed: the start's gradient, one kernel
    value per row and start support vector, costs about what the steps it
    saves cost. One run of ``python -m localsvm bench scale`` (2 CPUs, RBF,
    ``C = 1``) fitted 200 000 generated rows in 24.50 s with
    ``init='cells'`` against 22.45 s with ``init=None``, ijcnn1's 100 000
    rows in 3.83 s against 2.00 s, and 50 000 generated rows in 6.52 s
    against 4.23 s. Both reach the same dual objective. For speed on large problems, ``CellSVC``
    (localized, not the global optimum) is the faster choice.

    On the USPS digits Ulén [3]_ reports 4.38 % test error with one-vs-rest
    RBF SVMs (C = 10, the class of the largest decision value) on
    Gaussian-smoothed images; ``python -m localsvm reproduce usps`` runs that
    set-up as far as the report's text allows and says what it assumes.
    ``python -m localsvm demo`` trains a different case (one-vs-one,
    ``gamma='scale'``, raw pixels).

    References
    ----------
    .. [1] C.-C. Chang and C.-J. Lin, "LIBSVM: A library for support vector
       machines", ACM Transactions on Intelligent Systems and Technology
       2(3), 2011.
    .. [2] R.-E. Fan, P.-H. Chen and C.-J. Lin, "Working set selection using
       second order information for training support vector machines",
       Journal of Machine Learning Research 6, 2005.
    .. [3] J. Ulén, "Support Vector Machines", student project report, Lund
       University (in Swedish).
    .. [4] H.-T. Lin, C.-J. Lin and R. C. Weng, "A note on Platt's
       probabilistic outputs for support vector machines", Machine Learning
       68(3), 2007.
    .. [5] T.-F. Wu, C.-J. Lin and R. C. Weng, "Probability estimates for
       multi-class classification by pairwise coupling", Journal of Machine
       Learning Research 5, 2004.
    .. [6] C.-J. Hsieh, S. Si and I. S. Dhillon, "A Divide-and-Conquer
       Solver for Kernel SVMs", International Conference on Machine
       Learning (ICML), 2014.

    Examples
    --------
    >>> from localsvm import SVC
    >>> from localsvm.datasets import load_banana
    >>> d = load_banana()
    >>> clf = SVC(C=1.0, gamma=1.0).fit(d.X_train, d.y_train)
    >>> round(clf.score(d.X_test, d.y_test), 2) > 0.85
    True
    """

    _parameter_constraints: ClassVar[dict] = {
        **BaseSVMClassifier._parameter_constraints,
        # C = inf is the hard margin (scikit-learn's closed interval).
        "C": [Interval(Real, 0.0, None, closed="right")],
        "kernel": [StrOptions(set(KERNELS)), callable],
        "shrinking": ["boolean"],
        "probability": ["boolean", Hidden(StrOptions({"deprecated"}))],
        "verbose": ["verbose"],
        **CACHE_CLASS_WEIGHT_CONSTRAINTS,
        "decision_function_shape": [StrOptions({"ovr", "ovo"})],
        "break_ties": ["boolean"],
        "random_state": ["random_state"],
        "multiclass": [StrOptions({"ovo", "ovr"})],
        "precision": [StrOptions({"auto", "float32", "float64"})],
        "init": [StrOptions({"cells"}), None],
        "cell_size": [Interval(Integral, 2, None, closed="left"), StrOptions({"auto"})],
        "cell_levels": [Interval(Integral, 1, None, closed="left")],
        "solver": [StrOptions({"auto", "smo", "batched"})],
    }
    _accepts_callable_kernel = True

    def _sparse_native(self) -> bool:
        """Sparse ``X`` stays sparse with a named kernel function on a
        backend that solves sparse problems ('auto' picks one; the Rust
        backend does); a precomputed or callable kernel, or another backend,
        densifies it (see the class notes).

        Returns
        -------
        bool
            Whether fit and prediction compute on sparse rows.
        """
        if callable(self.kernel) or self.kernel == "precomputed":
            return False
        return self._backend_sparse()

    def __init__(
        self,
        *,
        C=1.0,
        kernel="rbf",
        degree=3,
        gamma="scale",
        coef0=0.0,
        shrinking=True,
        probability="deprecated",
        tol=1e-3,
        cache_size=200,
        class_weight=None,
        verbose=False,
        max_iter=-1,
        decision_function_shape="ovr",
        break_ties=False,
        random_state=None,
        multiclass="ovo",
        backend="auto",
        n_jobs=None,
        precision="auto",
        init=None,
        cell_size="auto",
        cell_levels=1,
        solver="auto",
    ):
        store_params(self, locals())

    # ------------------------------------------------------------------ fit

    def _binary_tasks(
        self, n_classes: int, y_idx: np.ndarray
    ) -> list[tuple[np.ndarray, np.ndarray]]:
        """(row indices, ±1 labels) of each binary problem."""
        return binary_tasks(y_idx, problem_classes(n_classes, self.multiclass))

    @fit_method
    def fit(self, X, y, sample_weight=None):
        """Fit one SVM per binary problem.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features) or (n_samples, n_samples)
            Training examples, or the square training kernel for
            ``kernel='precomputed'``.
        y : array-like of shape (n_samples,)
            Class labels.
        sample_weight : array-like of shape (n_samples,), default=None
            Per-sample multipliers of ``C``; None weighs every sample 1. As
            in LIBSVM, a sample of weight ``<= 0`` is left out of the problem
            (its index never appears in ``support_``).

        Returns
        -------
        self : SVC
            The fitted estimator.
        """
        # A warm start handed over by the search that refits this model
        # (SVCCV: per binary problem, the folds' averaged multipliers over
        # every row); read once, whatever this fit does.
        alpha_start = self.__dict__.pop("_alpha_start", None)
        if self.probability != "deprecated":
            warnings.warn(PROBABILITY_DEPRECATION, FutureWarning, stacklevel=3)
        X, y, y_idx = self._fit_prologue(X, y)
        n = _num_samples(X)
        n_classes = self.classes_.shape[0]
        sw = positive_weights(sample_weight, n, y_idx)
        class_weights(self, y)
        upper = self._box(y_idx, sw)
        del sw  # n floats not needed past the boxes
        self._check_box(upper, y_idx)
        if not np.any(upper > 0):
            raise ValueError(
                "Invalid input: every sample has zero weight (C · class_weight · sample_weight)"
            )
        if np.unique(y_idx[upper > 0]).size < 2:
            raise ValueError(
                "Invalid input: all samples with non-zero weight belong to one class; "
                "at least two classes need positive weight"
            )
        if self.init == "cells" and (callable(self.kernel) or self.kernel == "precomputed"):
            raise ValueError(
                "init='cells' partitions the training examples by their features and needs a "
                "kernel function; with a precomputed or callable kernel use init=None"
            )
        features = X
        X, spec = self._training_kernel(X)

        tasks = self._binary_tasks(n_classes, y_idx)
        start = time.perf_counter()
        report = self._fit_report(len(tasks), X, y)
        pairs = report.subtasks("binary-problem", len(tasks), iterative=len(tasks) == 1)

        settings = dict(kernel=spec, **smo_settings(self), solver=self.solver)
        settings.update(self._formulation())
        settings["n_threads"] = self._threads_per_problem(len(tasks))
        if len(tasks) == 1:
            settings["progress"] = pairs[0].solver_progress(float(self.tol), tasks[0][0].size)
        largest = max(range(len(tasks)), key=lambda k: tasks[k][0].size)
        # Sparse X: 'auto' takes a backend whose capabilities include it.
        backend = self._select_backend(_pair_problem(tasks[largest], (X, upper, settings, None)))
        if sp.issparse(X):
            core_rows(X, cache=True)  # the core's copy, shared by the binary problems
        report.log(
            2,
            "SVC fit: %d samples, %d classes, %d binary problems, kernel %r, backend %r",
            n,
            n_classes,
            len(tasks),
            spec.name,
            backend.name,
        )
        # The training data travels once per batch (run_tasks' shared data);
        # each task is a pair's rows and labels.
        if self.init == "cells":
            solutions = self._fit_from_cells(tasks, X, upper, settings, backend, report)
        elif alpha_start is not None and len(alpha_start) == len(tasks) and "nu" not in settings:
            solutions = run_tasks(
                _solve_pair_from,
                [
                    # The box as this fit sets it (a rounding's worth above it
                    # from the folds' mean is taken back); the start gradient
                    # from the kernel columns, in float64 sums.
                    (rows, labels, np.clip(s[rows], 0.0, upper[rows]), None)
                    for (rows, labels), s in zip(tasks, alpha_start, strict=True)
                ],
                n_jobs=self.n_jobs,
                thread_safe=backend.capabilities.thread_safe,
                shared=(X, upper, settings, backend),
                **report.hooks(describe_solution),
            )
        else:
            solutions = solve_pairs(
                tasks,
                (X, upper, settings, backend),
                n_jobs=self.n_jobs,
                thread_safe=backend.capabilities.thread_safe,
                hooks=report.hooks(describe_solution),
            )
        self._check_finite(solutions)
        self._check_hard_margin(solutions, "separates the classes")
        self.backend_ = backend.name
        used = {getattr(s, "precision", "float64") for s in solutions}
        self.precision_ = "float32" if used == {"float32"} else "float64"
        ways = {getattr(s, "solver", "smo") for s in solutions}
        self.solver_ = ways.pop() if len(ways) == 1 else "mixed"
        self._store_solution(X, y_idx, n_classes, tasks, solutions)
        if self.init == "cells":
            self.kernel_evaluations_ = self._cells_evaluations + np.array(
                [
                    -1
                    if getattr(s, "kernel_evaluations", None) is None
                    else s.kernel_evaluations + getattr(s, "start_evaluations", 0)
                    for s in solutions
                ],
                dtype=np.int64,
            )
            self.init_time_["gradient"] = float(
                sum(getattr(s, "start_seconds", 0.0) for s in solutions)
            )
            self.init_time_["smo"] = max(self.init_time_["smo"] - self.init_time_["gradient"], 0.0)
        if callable(self.kernel):
            # The training examples as given (a list stays a list): what the
            # callable receives at prediction.
            self.support_vectors_ = _safe_indexing(features, self.support_)
            self.shape_fit_ = getattr(features, "shape", (n,))
        self._probA = self._probB = None
        if self.probability != "deprecated" and bool(self.probability):
            shared = (X, upper, settings, backend)
            self._probA, self._probB = self._calibrate(tasks, shared)
        report.log(
            1,
            "SVC fit: %d binary problems, %d support vectors in all, %.3f s",
            len(tasks),
            self.support_.size,
            time.perf_counter() - start,
        )
        report.end(X, y)
        return self

    def _box(self, y_idx: np.ndarray, sw: np.ndarray) -> np.ndarray:
        """Each sample's upper bound ``C · class_weight · sample_weight``
        (``C = inf``, the hard margin, as :data:`~localsvm._base.HARD_MARGIN_C`)."""
        return box_constant(self.C) * self.class_weight_[y_idx] * sw

    def _formulation(self) -> dict:
        """Extra settings of the binary problems: none for C-SVC."""
        return {}

    def _check_box(self, upper: np.ndarray, y_idx: np.ndarray) -> None:
        """Refuse boxes no problem can be posed with (C-SVC: none)."""

    def _fit_prologue(self, X, y):
        """As the base's, except that a callable kernel receives ``X`` as
        given, unconverted, when ``X`` is not numeric (scikit-learn's
        behaviour: a list of strings with a string kernel, say); only its
        length is checked against ``y``. Numeric ``X`` is validated as for
        a named kernel (float64, ``n_features_in_``)."""
        self._raw_input = callable(self.kernel) and not numeric_input(X)
        if not self._raw_input:
            return super()._fit_prologue(X, y)
        check_consistent_length(X, y)
        y = column_or_1d(y, warn=True)
        check_classification_targets(y)
        y_idx = encode_classes(self, y)
        return X, y, y_idx

    def _resolved_cell_size(self) -> int:
        """``cell_size`` as a number of rows ('auto': :data:`AUTO_CELL_SIZE`)."""
        return AUTO_CELL_SIZE if self.cell_size == "auto" else int(self.cell_size)

    def _cell_levels(self, X, rows, partition_cells, spec, rng) -> list[list[np.ndarray]]:
        """The cells of one binary problem, as positions into ``rows``: one
        list per level, finest first. Level ``l`` has cells of about
        ``cell_size · 4^l`` rows, each inside a cell of level ``l + 1``
        (partitioned top-down, each cell of a level cut by its own kernel
        k-means); only cells that are cut appear at the level below."""
        cell_size = self._resolved_cell_size()
        sizes = [cell_size * CELL_BRANCHING**level for level in range(int(self.cell_levels))]
        groups = [np.arange(rows.size)]
        levels: list[list[np.ndarray]] = []
        for size in reversed(sizes):
            cut: list[np.ndarray] = []
            for group in groups:
                if group.size < 2 * size:
                    continue
                n_cells = math.ceil(group.size / size)
                labels = np.asarray(
                    partition_cells(X[rows[group]], n_cells, spec=spec, random_state=rng),
                    dtype=np.intp,
                )
                order = np.argsort(labels, kind="stable")
                # The budget may have cut a cell: count the cells given.
                n_cells = int(labels.max()) + 1
                bounds = np.searchsorted(labels[order], np.arange(n_cells + 1))
                cut.extend(
                    group[order[bounds[c] : bounds[c + 1]]]
                    for c in range(n_cells)
                    if bounds[c + 1] > bounds[c]
                )
            if cut:
                # Rows of uncut groups stay in one cell at the finer levels.
                kept = [g for g in groups if g.size < 2 * size]
                groups = cut + kept
                levels.append(cut)
        return levels[::-1]

    def _fit_from_cells(self, tasks, X, upper, settings, backend, report) -> list[QPSolution]:
        """The binary solves of ``init='cells'``: each problem's rows cut
        into cells by kernel k-means, every cell's dual solved on its own
        (all cells of a level of all problems in one batch; above the
        finest level, warm-started from the cells inside), then the global
        solves warm-started from the concatenated cell solutions.

        Sets ``init_time_``, ``init_n_iter_``, ``n_cells_`` and the cells'
        kernel evaluations per problem (``_cells_evaluations``).
        """
        spec = settings["kernel"]
        rng = check_random_state(self.random_state)
        n_models = len(tasks)
        self.n_cells_ = np.zeros(n_models, dtype=np.int64)
        self.init_n_iter_ = np.zeros(n_models, dtype=np.int64)
        self._cells_evaluations = np.zeros(n_models, dtype=np.int64)
        self.init_time_ = {"partition": 0.0, "cells": 0.0, "gradient": 0.0, "smo": 0.0}

        clock = time.perf_counter()
        # Per problem, its cells level by level. Sparse rows: no kernel
        # k-means on them (partition_cells takes dense features); those
        # problems are solved from zero.
        tree: list[list[list[np.ndarray]]] = [[] for _ in tasks]
        if not sp.issparse(X):
            partition_cells = _cells_partition()
            for k, (rows, _) in enumerate(tasks):
                tree[k] = self._cell_levels(X, rows, partition_cells, spec, rng)
        self.init_time_["partition"] = time.perf_counter() - clock
        n_levels = max((len(levels) for levels in tree), default=0)
        report.log(
            2,
            "SVC init='cells': %d cells in %d levels over %d binary problems, %.3f s",
            sum(len(cells) for levels in tree for cells in levels),
            n_levels,
            sum(1 for levels in tree if levels),
            self.init_time_["partition"],
        )

        clock = time.perf_counter()
        alpha = [np.zeros(rows.size) for rows, _ in tasks]
        cell_settings = {key: v for key, v in settings.items() if key != "progress"}
        for level in range(n_levels):
            cell_tasks, owners = [], []
            for k, (rows, labels) in enumerate(tasks):
                if level >= len(tree[k]):
                    continue
                for members in tree[k][level]:
                    # A cell of one class has α = 0 as its only feasible point.
                    if np.unique(labels[members]).size < 2:
                        continue
                    start = alpha[k][members]
                    cell_tasks.append(
                        (
                            rows[members],
                            labels[members],
                            start if start.any() else None,
                            "blocked",
                        )
                    )
                    owners.append((k, members))
                    if level == 0:
                        self.n_cells_[k] += 1
            if not cell_tasks:
                continue
            cell_settings["n_threads"] = self._threads_per_problem(len(cell_tasks))
            cell_solutions: list[QPSolution] = run_tasks(
                _solve_pair_from,
                cell_tasks,
                n_jobs=self.n_jobs,
                thread_safe=backend.capabilities.thread_safe,
                shared=(X, upper, cell_settings, backend),
            )
            self._check_finite(cell_solutions)
            for (k, members), sol in zip(owners, cell_solutions, strict=True):
                rows = tasks[k][0]
                alpha[k][members] = np.clip(sol.alpha, 0.0, upper[rows[members]])
                self.init_n_iter_[k] += int(sol.n_iter)
                evaluations = getattr(sol, "kernel_evaluations", None)
                self._cells_evaluations[k] += (
                    0 if evaluations is None else int(evaluations)
                ) + int(getattr(sol, "start_evaluations", 0))
        self.init_time_["cells"] = time.perf_counter() - clock
        report.log(
            2,
            "SVC init='cells': cell solves %d iterations in all, %.3f s",
            int(self.init_n_iter_.sum()),
            self.init_time_["cells"],
        )

        clock = time.perf_counter()
        solutions: list[QPSolution] = run_tasks(
            _solve_pair_from,
            [
                (rows, labels, a0 if a0.any() else None, "blocked")
                for (rows, labels), a0 in zip(tasks, alpha, strict=True)
            ],
            n_jobs=self.n_jobs,
            thread_safe=backend.capabilities.thread_safe,
            shared=(X, upper, settings, backend),
            **report.hooks(describe_solution),
        )
        self.init_time_["smo"] = time.perf_counter() - clock
        return solutions

    def _threads_per_problem(self, n_problems: int) -> int:
        """Threads each of ``n_problems`` binary solves may use: 2 when
        ``n_jobs`` allows two per problem (a two-class fit on two or more
        CPUs, say), else 1, so solves run in parallel never oversubscribe
        the CPUs ``n_jobs`` grants."""
        return 2 if effective_n_jobs(self.n_jobs) >= 2 * max(n_problems, 1) else 1

    def _calibrate(self, tasks, shared) -> tuple[np.ndarray, np.ndarray]:
        """Platt's sigmoid of each binary model, fitted to decision values of
        a 5-fold cross-validation on the model's rows (LIBSVM's procedure)."""
        X, _, _, backend = shared
        rng = check_random_state(self.random_state)
        # Per model: its held-out decision values, filled fold by fold.
        held_out = [np.zeros(rows.size) for rows, _ in tasks]
        fold_tasks, where = [], []
        for m, (rows, labels) in enumerate(tasks):
            for train, test in fold_splits(rows.size, rng):
                if test.size == 0:
                    continue
                n_pos = int(np.count_nonzero(labels[train] > 0))
                if n_pos == 0 or n_pos == train.size:
                    # One side only in the training folds: a constant, as LIBSVM.
                    held_out[m][test] = 0.0 if train.size == 0 else (1.0 if n_pos else -1.0)
                    continue
                fold_tasks.append((rows[train], labels[train]))
                where.append((m, rows[test], test))
        # The folds run several at a time: their own share of n_jobs.
        fold_settings = {**shared[2], "n_threads": self._threads_per_problem(len(fold_tasks))}
        shared = (shared[0], shared[1], fold_settings, shared[3])
        solutions: list[QPSolution] = run_tasks(
            _solve_pair,
            fold_tasks,
            n_jobs=self.n_jobs,
            thread_safe=backend.capabilities.thread_safe,
            shared=shared,
        )
        self._check_finite(solutions)
        for (train_rows, labels), sol, (m, test_rows, test) in zip(
            fold_tasks, solutions, where, strict=True
        ):
            nz = sol.alpha != 0.0
            coef = (labels[nz] * sol.alpha[nz])[None, :]
            if self._spec.precomputed:
                dec = X[np.ix_(test_rows, train_rows[nz])] @ coef[0] - sol.rho
            elif not np.any(nz):
                dec = np.full(test_rows.size, -sol.rho)
            else:
                fitted = getattr(sol, "precision", "float64")
                sv = X[train_rows[nz]]
                dec = decision_values(
                    self._spec,
                    X[test_rows],
                    sv if sp.issparse(sv) else np.ascontiguousarray(sv),
                    coef,
                    np.array([-sol.rho]),
                    precision="float64" if fitted == "float64" else self.precision,
                )[:, 0]
            held_out[m][test] = dec
        sigmoids = [
            fit_sigmoid(dec, labels > 0) for dec, (_, labels) in zip(held_out, tasks, strict=True)
        ]
        return np.array([a for a, _ in sigmoids]), np.array([b for _, b in sigmoids])

    def _store_solution(self, X, y_idx, n_classes, tasks, solutions) -> None:
        # Support vectors: the union over the binary models, grouped by class
        # as LIBSVM orders them; each model's coefficients y_i α_i over that
        # union (never an n_models × n array).
        # The models' rows, labels and coefficients joined, so hundreds of
        # one-vs-one models cost a few array operations, not a few each.
        alpha = np.concatenate([np.asarray(sol.alpha, dtype=np.float64) for sol in solutions])
        rows = np.concatenate([rows for rows, _ in tasks])
        labels = np.concatenate([labels for _, labels in tasks])
        nz = alpha != 0.0
        # Each model's number of support vectors.
        before = np.concatenate(([0], np.cumsum(nz)))
        counts = np.diff(before[np.cumsum([0] + [r.size for r, _ in tasks])])
        sv_rows = rows[nz]
        models = assemble_joined(
            sv_rows,
            labels[nz] * alpha[nz],
            [-s.rho for s in solutions],
            y_idx[sv_rows],
            counts,
            n_classes,
            self.multiclass,
        )
        support = models.support
        self.support_ = support.astype(np.int32)
        self.n_support_ = models.n_support
        self._model_coef = models.coef
        self._model_intercept = models.intercept
        self.n_iter_ = np.array([s.n_iter for s in solutions], dtype=np.int32)
        self.kernel_evaluations_ = np.array(
            [
                -1 if getattr(s, "kernel_evaluations", None) is None else s.kernel_evaluations
                for s in solutions
            ],
            dtype=np.int64,
        )
        self.dual_objective_ = np.array([s.objective for s in solutions])
        self.fit_status_ = int(
            self._warn_unconverged(
                (s.converged for s in solutions),
                "binary problems",
                (s.message or "no reason given" for s in solutions if not s.converged),
            )
        )
        self._store_support_vectors(X, support, self._spec, self._model_coef)
        self.shape_fit_ = X.shape

        # As scikit-learn: a sparse fit's dual coefficients are CSR.
        self.dual_coef_ = sp.csr_matrix(models.dual_coef) if sp.issparse(X) else models.dual_coef
        self.intercept_ = models.public_intercept
        self._pair_coef = self._compact_pair_coef()

    def _compact_pair_coef(self) -> np.ndarray | None:
        """Each one-vs-one pair's coefficients over its two classes' support
        vectors only (:func:`~localsvm._multiclass.ovo_compact`), for
        prediction with more than two classes; None where the dense
        ``_model_coef`` path is used (two classes, one-vs-rest, linear,
        precomputed or callable kernels)."""
        n_classes = self.classes_.shape[0]
        if (
            n_classes <= 2
            or self.multiclass != "ovo"
            or callable(self.kernel)
            or self._spec.precomputed
            or self._spec.name == "linear"
        ):
            return None
        return ovo_compact(self._model_coef, self.n_support_)

    # -------------------------------------------------------------- predict

    def _model_decision(self, X) -> np.ndarray:
        """Decision values of every binary model, ``(n_samples, n_models)``,
        positive for the model's +1 side."""
        X = self._predict_prologue(X)
        if callable(self.kernel):
            K = self._callable_kernel(X, self.support_vectors_)
            return K @ self._model_coef.T + self._model_intercept
        if self._spec.precomputed:
            return X[:, self.support_] @ self._model_coef.T + self._model_intercept
        if self._linear_w is not None:
            return X @ self._linear_w.T + self._model_intercept
        # A model solved in float64 is evaluated in float64; one solved in
        # float32 as asked ('auto' still switches for out-of-range test data).
        fitted = getattr(self, "precision_", "float32")
        precision = "float64" if fitted == "float64" else getattr(self, "precision", "auto")
        # One-vs-one with many classes: one kernel value per (row, support
        # vector), then each pair from its two classes' support vectors.
        pair_coef = getattr(self, "_pair_coef", None)
        if pair_coef is None and not hasattr(self, "_pair_coef"):
            pair_coef = self._compact_pair_coef()  # a model restored without it
        if pair_coef is not None:
            return decision_values_ovo(
                self._spec,
                X,
                self.support_vectors_,
                self.n_support_,
                pair_coef,
                self._model_intercept,
                precision=precision,
            )
        return decision_values(
            self._spec,
            X,
            self.support_vectors_,
            self._model_coef,
            self._model_intercept,
            precision=precision,
        )

    def decision_function(self, X):
        """Signed distances to the decision boundaries.

        {X_predict_parameters}

        Returns
        -------
        ndarray of shape (n_samples,), (n_samples, n_classes) or (n_samples, n_pairs)
            Two classes: one value per sample, positive for ``classes_[1]``.
            Otherwise one column per class, or one per class pair for
            ``multiclass='ovo'`` with ``decision_function_shape='ovo'``.
        """
        return self._multiclass_decision(X)

    def predict(self, X):
        """Predict the class of each sample.

        {predict_sections}
        """
        return self._multiclass_predict(X)

    def _check_proba(self) -> bool:
        if self.probability == "deprecated" or not self.probability:
            raise AttributeError("predict_proba is not available when probability=False")
        return True

    @available_if(_check_proba)
    @fill(**X_PARTS)
    def predict_proba(self, X):
        """Class probabilities (fitted with ``probability=True``).

        Platt's sigmoid of each binary model's decision value, coupled over
        the class pairs (see the ``probability`` parameter).

        {X_predict_parameters}

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            Probabilities of the classes, in the order of ``classes_``; each
            row sums to 1.

        Raises
        ------
        AttributeError
            When ``probability`` is not True.
        NotFittedError
            When the model was fitted without ``probability=True``.
        """
        check_is_fitted(self)
        if getattr(self, "_probA", None) is None:
            raise NotFittedError(
                "predict_proba is not available when fitted with probability=False"
            )
        r = sigmoid_proba(self._model_decision(X), self._probA, self._probB)
        n_classes = self.classes_.shape[0]
        if n_classes == 2:
            return np.column_stack([r[:, 0], 1.0 - r[:, 0]])
        if self.multiclass == "ovr":
            return r / r.sum(axis=1, keepdims=True)
        return couple_pairwise(r, n_classes)

    @available_if(_check_proba)
    @fill(**X_PARTS)
    def predict_log_proba(self, X):
        """Logarithms of the class probabilities of :meth:`predict_proba`.

        {X_predict_parameters}

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            Log-probabilities of the classes, in the order of ``classes_``.
        """
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))

    def _platt(self, name: str) -> np.ndarray:
        """``probA_``/``probB_``: scikit-learn 1.9's deprecated attributes,
        with its ``FutureWarning``; an empty array when fitted without
        ``probability=True``, as there."""
        check_is_fitted(self)
        warnings.warn(
            f"Attribute `{name}_` was deprecated in version 1.9 and will be removed in 1.11 "
            "as the `probability=True` option for SVC and NuSVC was deprecated and will be "
            "removed in 1.11.",
            FutureWarning,
            stacklevel=3,
        )
        value = getattr(self, f"_{name}", None)
        return np.empty(0, dtype=np.float64) if value is None else value.copy()

    @property
    @fill(platt_note=_PLATT_NOTE)
    def probA_(self) -> np.ndarray:
        """Slope ``A`` of each binary model's sigmoid (``probability=True``).

        {platt_note}
        """
        return self._platt("probA")

    @property
    @fill(platt_note=_PLATT_NOTE)
    def probB_(self) -> np.ndarray:
        """Offset ``B`` of each binary model's sigmoid (``probability=True``).

        {platt_note}
        """
        return self._platt("probB")

    @property
    def coef_(self) -> np.ndarray:
        """Feature weights of each binary model (``kernel='linear'`` only).

        Shape ``(1, n_features)`` for two classes (positive towards
        ``classes_[1]``), else one row per model, as ``intercept_``. Read-only,
        as scikit-learn's (a fresh array whose writes raise ``ValueError``; a
        scipy CSR matrix after a sparse fit).
        """
        check_is_fitted(self)
        if self._linear_w is None:
            raise AttributeError("coef_ is only available when using a linear kernel")
        w = -self._linear_w if self.classes_.shape[0] == 2 else self._linear_w
        return read_only_coef(w, sparse=sp.issparse(self.support_vectors_))


class NuSVC(SVC):
    """Nu-support vector classification on the Rust SMO core.

    ν-SVC (Schölkopf, Smola, Williamson & Bartlett, "New support vector
    algorithms", Neural Computation 12, 2000), a drop-in for
    :class:`sklearn.svm.NuSVC`. ``nu`` in ``(0, 1]`` bounds the fraction of
    margin errors from above and the fraction of support vectors from below.
    Each binary problem's dual has two equality constraints (one per class)
    and is solved as LIBSVM does (Chang & Lin, "LIBSVM: a library for
    support vector machines", ACM TIST 2(3), 2011, §2.2 and §4.2; Chen, Lin
    & Schölkopf, "A tutorial on ν-support vector machines", Applied
    Stochastic Models in Business and Industry 21, 2005): working pairs from
    one class, LIBSVM's start, and the solution rescaled by the margin
    variable ``r`` into the C-SVC form of the fitted attributes. More than
    two classes are one-vs-one, with :class:`SVC`'s voting and tie rules.
    ``nu`` must be feasible for every pair of classes: ``nu · (n_i + n_j) / 2
    <= min(n_i, n_j)`` (sums of the sample weights), else
    ``ValueError('specified nu is infeasible')``; the limit itself, where
    the smaller class is all bounded support vectors and the decision
    function is not determined, is refused too. A solution whose margin
    variable ``r`` is within its uncertainty of 0 (``tol`` plus the rounding
    of the kernel values, ``ε · s · Σα`` with ``s`` the kernel-value scale)
    raises ``ValueError`` instead of dividing by it: there the two classes'
    reduced convex hulls meet and ``α / r`` is of arbitrary size, which
    LIBSVM returns all the same. As LIBSVM's, the solver
    ignores ``class_weight`` (the attribute ``class_weight_`` is still set);
    ``sample_weight`` sets each sample's box. A common factor of the weights
    does not change the model, but ``tol`` bounds a gradient that shrinks
    with them: weights whose largest is below ``2**-10`` are scaled up by a
    power of two for the solve (where LIBSVM stops near its start).

    Parameters
    ----------
    nu : float, default=0.5
        In ``(0, 1]``.
    kernel : {'linear', 'poly', 'rbf', 'sigmoid', 'precomputed'} or callable, default='rbf'
        As :class:`SVC`'s.
    degree : int, default=3
        As :class:`SVC`'s.
    gamma : {'scale', 'auto'} or float, default='scale'
        As :class:`SVC`'s.
    coef0 : float, default=0.0
        As :class:`SVC`'s.
    shrinking : bool, default=True
        As :class:`SVC`'s.
    probability : bool, default='deprecated'
        As :class:`SVC`'s.
    tol : float, default=1e-3
        As :class:`SVC`'s.
    cache_size : float, default=200
        As :class:`SVC`'s.
    class_weight : dict, 'balanced' or None, default=None
        Kept as ``class_weight_``; not used by the solver (as LIBSVM's).
    verbose : bool, default=False
        As :class:`SVC`'s.
    max_iter : int, default=-1
        As :class:`SVC`'s.
    decision_function_shape : {'ovo', 'ovr'}, default='ovr'
        As :class:`SVC`'s.
    break_ties : bool, default=False
        As :class:`SVC`'s.
    random_state : int, RandomState instance or None, default=None
        As :class:`SVC`'s.
    backend : str, default='auto'
        As :class:`SVC`'s.
    n_jobs : int or None, default=None
        As :class:`SVC`'s.
    precision : {'auto', 'float32', 'float64'}, default='auto'
        As :class:`SVC`'s.

    Attributes
    ----------
    support_, support_vectors_, n_support_, dual_coef_, intercept_ : ndarray
        As :class:`SVC`'s (the ν solution divided by ``r``).
    fit_status_, n_iter_, classes_, class_weight_, dual_objective_ : object
        As :class:`SVC`'s.

    Examples
    --------
    >>> import numpy as np
    >>> from localsvm import NuSVC
    >>> X = np.array([[-1.0, -1.0], [-2.0, -1.0], [1.0, 1.0], [2.0, 1.0]])
    >>> NuSVC(nu=0.5).fit(X, [1, 1, 2, 2]).predict([[-0.8, -1.0]]).tolist()
    [1]
    """

    _parameter_constraints: ClassVar[dict] = {
        k: v
        for k, v in SVC._parameter_constraints.items()
        if k not in {"C", "multiclass", "init", "cell_size", "cell_levels", "solver"}
    } | {"nu": [Interval(Real, 0.0, 1.0, closed="right")]}

    # SVC's settings that NuSVC does not offer, at their fixed values.
    C = 1.0
    multiclass = "ovo"
    init = None
    cell_size = "auto"
    cell_levels = 1
    solver = "smo"

    def __init__(
        self,
        *,
        nu=0.5,
        kernel="rbf",
        degree=3,
        gamma="scale",
        coef0=0.0,
        shrinking=True,
        probability="deprecated",
        tol=1e-3,
        cache_size=200,
        class_weight=None,
        verbose=False,
        max_iter=-1,
        decision_function_shape="ovr",
        break_ties=False,
        random_state=None,
        backend="auto",
        n_jobs=None,
        precision="auto",
    ):
        store_params(self, locals())

    def _box(self, y_idx: np.ndarray, sw: np.ndarray) -> np.ndarray:
        """The sample weights (LIBSVM's ν-SVC boxes; no ``C``, no class
        weight); weights whose largest is below ``2**-10`` multiplied by the
        power of two that brings it to ``[1, 2)``. The fitted model does not
        change with a common factor of the weights (``α / r`` and ``ρ / r``
        are the same), but ``tol`` bounds a gradient that shrinks with them,
        so small weights stopped the solver near its start, or left ``r``
        within ``tol`` of 0 (refused). The factor is exact."""
        return sw.astype(np.float64, copy=True) * small_weight_scale(sw)

    def _check_box(self, upper: np.ndarray, y_idx: np.ndarray) -> None:
        """LIBSVM's feasibility test of ``nu`` over every pair of classes,
        its limit included: at ``nu · (n_i + n_j) / 2 = min(n_i, n_j)``
        (to rounding) every sample of the smaller class is at its bound, the
        margin ``r`` is not bounded above and the decision function not
        determined (LIBSVM's intercept is then NaN)."""
        sums = np.bincount(y_idx, weights=upper, minlength=self.classes_.shape[0])
        for i in range(sums.size):
            for j in range(i + 1, sums.size):
                need, have = self.nu * (sums[i] + sums[j]) / 2, min(sums[i], sums[j])
                if need > have:
                    raise ValueError("specified nu is infeasible")
                if need >= have * (1.0 - 1e-12):
                    raise ValueError(
                        f"specified nu is infeasible: nu={self.nu!r} is the largest nu "
                        f"classes {self.classes_[i]!r} and {self.classes_[j]!r} allow "
                        "(2 · min(n_i, n_j) / (n_i + n_j), in sample weights), where every "
                        "sample of the smaller class is a bounded support vector and the "
                        "margin, hence the decision function, is not determined; lower nu"
                    )

    def _formulation(self) -> dict:
        return {"nu": float(self.nu)}
