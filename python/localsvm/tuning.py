"""Cross-validated choice of ``C`` and ``gamma`` (and ε) that shares its work:
``SVCCV`` and ``SVRCV``.

A grid search refits from scratch at every grid point and fold. Here each
(γ, fold) pair is one task: the fold's dual is solved along the increasing
``C`` values, each solve starting from the previous solution (which stays
feasible, the boxes only widening: the α seeding of DeCoste & Wagstaff,
"Alpha seeding for support vector machines", KDD 2000), with the kernel
values and the gradient kept from one ``C`` to the next by backends that
can (the Rust one: one call per task, the GIL released), and the held-out
rows' decision values computed from the same solutions. When they fit the
memory budget, the kernel values themselves are computed once: one matrix
of squared distances (or inner products) over all the rows, and from it one
kernel matrix per γ that every fold and ``C`` reads. The tasks run in
``n_jobs`` threads; each is computed alone, so the results do not depend
on how the threads interleave. With ``prune`` (the default) a fold's path
stops once it is clearly beaten, and the variants race after the first
folds: the candidates clearly beaten there are not solved on the next folds
(their scores there are NaN, as ``HalvingGridSearchCV``'s dropped
candidates'); with ``prune=None`` every candidate is scored on every fold.
The folds' solves stop at ``10 · tol`` unless ``cv_tol`` says otherwise.

The default grids follow the data's scale: ``gammas`` around
γ_scale = 1 / (n_features · X.var()) (scikit-learn's ``gamma='scale'``),
``Cs`` on the range where the RBF dual's boxes go from most examples at
their bound to almost none (kernel values lie in [0, 1]).

>>> from sklearn.datasets import make_classification
>>> from localsvm.tuning import SVCCV
>>> X, y = make_classification(n_samples=120, random_state=0)
>>> search = SVCCV(Cs=3, gammas=3, cv=3).fit(X, y)
>>> len(search.cv_results_["params"]), search.best_estimator_.C == search.C_
(9, True)
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import threading
import time
import warnings
from numbers import Integral, Real
from typing import ClassVar

import numpy as np
import scipy.sparse as sp
from scipy.stats import rankdata
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, is_classifier
from sklearn.exceptions import ConvergenceWarning, FitFailedWarning
from sklearn.metrics import check_scoring
from sklearn.model_selection import KFold, StratifiedKFold, check_cv
from sklearn.utils.validation import _num_samples, check_is_fitted, validate_data

from ._base import (
    CLASS_WEIGHT_CONSTRAINT,
    BaseKernelEstimator,
    balanced_class_factors,
    class_weights,
    positive_weights,
    restore_on_interrupt,
    store_params,
)
from ._compat import Interval, StrOptions, fit_context
from ._docstrings import fill
from ._memory import check_memory, memory_budget
from ._multiclass import binary_index, ovo_pairs, ovo_to_ovr, vote_winner
from ._validation import encode_classes, prepare_input, validate_training_data
from .backends import select_backend
from .backends.base import CPath, CPathResult, QPProblem, equality_start, solve_c_path
from .engines import interrupt_epoch, interrupted_since
from .kernels import KernelSpec, core_rows, resolve_gamma
from .parallel import effective_n_jobs, run_tasks
from .svc import SVC
from .svm_family import SVR

__all__ = ["SVCCV", "SVRCV"]

#: Fewest features for which ``kernel_matrix='auto'`` shares kernel
#: matrices (dense rows, a kernel other than the linear one): below it, a
#: fold's kernel columns cost less to compute from the features (the
#: vectorised fills of the solver's cache) than an ``n × n`` matrix per γ
#: costs to build and to read through each fold's permutation.
SHARE_MIN_FEATURES = 64

#: Decades of the default ``Cs`` grid: 10⁻¹ … 10³.
C_DECADES = (-1.0, 3.0)
#: Decades of the default ``gammas`` grid around γ_scale: 10⁻² … 10^1.5.
GAMMA_DECADES = (-2.0, 1.5)
#: Decades of the default ``epsilons`` grid, times the targets' standard
#: deviation: 10^-2.5 … 10^-0.5.
EPSILON_DECADES = (-2.5, -0.5)


def _grid(values, name: str, default, zero: bool = False) -> np.ndarray:
    """A grid parameter as a 1-d float array: ``values`` itself, or for an
    int that many points from ``default(k)``. Raises ``ValueError`` naming
    ``name`` for an empty grid or a value that is not positive (with
    ``zero``, non-negative) and finite."""
    if isinstance(values, Integral) and not isinstance(values, bool):
        if values < 1:
            raise ValueError(f"{name} must be a positive number of grid points, got {values}")
        check_memory(8.0 * int(values), f"a grid of {values} {name}", f"give fewer {name}")
        return np.asarray(default(int(values)), dtype=np.float64)
    if np.ndim(values) != 1:
        raise ValueError(f"{name} must be an int or a 1-d list of values, got {values!r}")
    arr = np.asarray(values, dtype=np.float64)
    if arr.size == 0:
        raise ValueError(f"{name} must list at least one value")
    bad = arr[~(np.isfinite(arr) & ((arr >= 0) if zero else (arr > 0)))]
    if bad.size:
        kind = "non-negative" if zero else "positive"
        raise ValueError(f"{name} must hold {kind} finite values, got {bad[0]!r}")
    return arr


def _split_rows(part, n: int, k: int, what: str) -> np.ndarray:
    """One part (``what``: 'training' or 'test') of ``cv``'s split ``k`` as
    row indices into ``n`` rows, read as scikit-learn's searches index rows:
    integer indices (negative ones from the end) or a boolean mask of
    length ``n``. Anything else (a mask of another length, indices out of
    range, floats) is a ``ValueError`` naming ``cv``: cast to integers,
    a mask would index rows 0 and 1 and floats would be truncated."""
    arr = np.asarray(part)
    if arr.size == 0:
        return np.empty(0, dtype=np.intp)
    if arr.ndim != 1:
        raise ValueError(
            f"cv's split {k} gives {what} rows of shape {arr.shape}: each part of a split must "
            "be a 1-d array of row indices or a boolean mask"
        )
    if arr.dtype == bool:
        if arr.size != n:
            raise ValueError(
                f"cv's split {k} gives a boolean mask of {arr.size} {what} rows for {n} rows"
            )
        return np.flatnonzero(arr).astype(np.intp)
    if arr.dtype.kind not in "iu":
        raise ValueError(
            f"cv's split {k} gives {what} rows of dtype {arr.dtype}: row indices must be "
            "integers (or a boolean mask)"
        )
    bad = (arr >= n) | (arr < -n)
    if bad.any():
        raise ValueError(
            f"cv's split {k} names {what} row {arr[bad][0]}, outside the {n} rows of X"
        )
    return np.where(arr < 0, arr + n, arr).astype(np.intp)


def _logspace(decades: tuple[float, float], k: int, scale: float = 1.0) -> np.ndarray:
    """``k`` log-spaced points over ``decades`` (the middle one for ``k = 1``), times ``scale``."""
    if k == 1:
        return np.array([scale * 10.0 ** (0.5 * (decades[0] + decades[1]))])
    return scale * np.logspace(decades[0], decades[1], k)


class _DecidedClassifier(ClassifierMixin, BaseEstimator):
    """A stand-in for a scorer: answers ``predict`` and ``decision_function``
    with held-out values computed already (the ``X`` it is given must be
    those held-out rows)."""

    def __init__(self, classes=None, predicted=None, decision=None) -> None:
        self.classes = classes
        self.predicted = predicted
        self.decision = decision

    @property
    def classes_(self):
        return self.classes

    def predict(self, X):
        return self.predicted

    def decision_function(self, X):
        return self.decision


class _DecidedRegressor(RegressorMixin, BaseEstimator):
    """:class:`_DecidedClassifier` for regressors."""

    def __init__(self, predicted=None) -> None:
        self.predicted = predicted

    def predict(self, X):
        return self.predicted


class _SharedKernels:
    """The kernel matrix of every row, one per variant (γ), built from one
    base matrix computed once (the squared distances for 'rbf', the inner
    products otherwise) when a task first asks for it, and dropped once all
    its folds are done: the kernel values a grid search computes again for
    every fold and ``C`` are computed once per γ."""

    def __init__(self, X, specs, epoch, native=None) -> None:
        n = X.shape[0]
        rbf = any(s.name == "rbf" for s in specs)
        XT = X.T.tocsc() if sp.issparse(X) else X.T
        sq = np.asarray(X.multiply(X).sum(axis=1)).ravel() if sp.issparse(X) else None
        if sq is None:
            sq = np.einsum("ij,ij->i", X, X)
        G = np.empty((n, n))
        # The core forms the RBF kernel's squared distances from the inner
        # products and squared norms in its own parallel pass over the base.
        self.norms = sq if rbf and native is not None else None
        # Row blocks, so that Ctrl-C is seen between them.
        for lo, hi in _blocks(n):
            if sp.issparse(X):
                G[lo:hi] = (X[lo:hi] @ XT).toarray()
            elif X.dtype == G.dtype:
                np.matmul(X[lo:hi], XT, out=G[lo:hi])  # no temporary block
            else:
                G[lo:hi] = X[lo:hi] @ XT
            if rbf and self.norms is None:
                g = G[lo:hi]
                g *= -2.0
                g += sq[lo:hi, None]
                g += sq[None, :]
                np.maximum(g, 0.0, out=g)
                g[np.arange(hi - lo), np.arange(lo, hi)] = 0.0
        self.base = G
        self.native = native
        self.epoch = epoch
        self.specs = specs
        # The tasks still to read each matrix (set by expect).
        self.pending = dict.fromkeys(range(len(specs)), 0)
        self.mats: dict[int, np.ndarray] = {}
        self.locks = [threading.Lock() for _ in specs]
        self.guard = threading.Lock()

    @staticmethod
    def bytes_needed(
        n: int, n_workers: int, block_factor: int, itemsize: int | None = None
    ) -> float:
        """Peak bytes: the float64 base matrix and a kernel matrix per
        worker and one more. With the core's matrices (``itemsize``, the
        bytes per value: 4 for an RBF kernel whose solves run in float32,
        else 8), each fold reads its rows in place; without them the
        matrices are float64 and each worker also copies a fold's block
        (``block_factor`` times ``8 n²`` bytes at most: 4 for ε-SVR, whose
        ``2n`` variables repeat each row)."""
        if itemsize is None:
            return 8.0 * n * n * (2 + n_workers + n_workers * block_factor)
        return float(n) * n * (8 + itemsize * (1 + n_workers))

    def get(self, v: int) -> np.ndarray:
        """The kernel matrix of variant ``v``, built if no task has yet. A
        task that finds another building it builds the next variant's
        meanwhile instead of waiting idle."""
        if not self.locks[v].acquire(blocking=False):
            if v + 1 < len(self.specs) and self.locks[v + 1].acquire(blocking=False):
                try:
                    self._build(v + 1)
                finally:
                    self.locks[v + 1].release()
            self.locks[v].acquire()
        try:
            return self._build(v)
        finally:
            self.locks[v].release()

    def _build(self, v: int) -> np.ndarray:
        """Variant ``v``'s matrix, built unless it is (its lock held)."""
        K = self.mats.get(v)
        if K is not None:
            return K
        spec = self.specs[v]
        if self.native is not None:
            # The backend's own matrix, read in place by every fold's path.
            K = self.native(self.base, spec, norms=self.norms)
        elif spec.name == "linear":
            K = self.base
        else:
            K = np.empty_like(self.base)
            for lo, hi in _blocks(K.shape[0]):
                if interrupted_since(self.epoch):
                    raise KeyboardInterrupt
                k = np.multiply(
                    self.base[lo:hi],
                    -spec.gamma if spec.name == "rbf" else spec.gamma,
                    out=K[lo:hi],
                )
                if spec.name == "rbf":
                    np.exp(k, out=k)
                elif spec.name == "poly":
                    k += spec.coef0
                    np.power(k, spec.degree, out=k)
                else:
                    k += spec.coef0
                    np.tanh(k, out=k)
        with self.guard:
            if self.pending[v] > 0:
                self.mats[v] = K
        return K

    def expect(self, uses: list[int]) -> None:
        """The next batch of tasks reads matrix ``v`` ``uses[v]`` times (a
        matrix dropped after the last batch is built again)."""
        with self.guard:
            self.pending = dict(enumerate(uses))

    def release(self, v: int, uses: int = 1) -> None:
        """``uses`` fewer tasks will read matrix ``v`` (one has, or a race
        left them out); it is dropped after the last."""
        with self.guard:
            self.pending[v] -= uses
            if self.pending[v] <= 0:
                self.mats.pop(v, None)


def _blocks(n: int, cells: int = 1 << 21):
    """Row ranges of an ``n × n`` matrix of about ``cells`` entries each."""
    step = max(1, cells // max(n, 1))
    return [(lo, min(n, lo + step)) for lo in range(0, n, step)]


def _race(paths, row_loss, valids, margin: float, caps) -> np.ndarray:
    """How many of the increasing ``C`` values each variant solves on the
    next folds, from its paths on the folds raced so far (``paths[v]``, one
    :func:`_path_task` result per fold, None for a variant already out;
    ``valids`` those folds' held-out rows): up to its largest ``C`` not
    clearly beaten, 0 for a variant beaten at every ``C``; never more than
    ``caps[v]``, what it solved so far. Clearly beaten: the mean per-row
    loss (``row_loss(decision, valid)``) over those folds' held-out rows
    above the best candidate's by more than ``margin`` standard errors of
    the paired per-row difference (a paired test: both models are judged
    on the same rows). A ``C`` a path's own early stop left unsolved is
    beaten; one whose solve failed is not (the other folds record it)."""
    losses = {}
    unsolved = {}
    for v, folds in enumerate(paths):
        if folds is None:
            continue
        stop = min([int(caps[v])] + [int(out[4]) for out in folds])
        unsolved[v] = stop
        for j in range(stop):
            if all(out[3][j] is None for out in folds):
                losses[v, j] = np.concatenate(
                    [
                        np.asarray(row_loss(out[0][j], valid), dtype=np.float64)
                        for out, valid in zip(folds, valids, strict=True)
                    ]
                )
    out_caps = np.zeros(len(paths), dtype=np.intp)
    if not losses:
        return np.asarray(caps, dtype=np.intp).copy()
    best = min(losses, key=lambda key: (float(losses[key].mean()), key))
    ref = losses[best]
    n = ref.size
    for v, stop in unsolved.items():
        for j in range(int(caps[v])):
            if (v, j) in losses:
                d = losses[v, j] - ref
                mean = float(d.mean())
                se = float(d.std(ddof=1)) / np.sqrt(n) if n > 1 else 0.0
                beaten = mean > margin * se and mean > 0.0
            else:
                beaten = j >= stop
            if not beaten:
                out_caps[v] = j + 1
    return out_caps


def _mean(values: np.ndarray, w: np.ndarray | None) -> float:
    """The mean of ``values``, weighted by ``w`` when given (NaN when the
    weights sum to zero: no row counts)."""
    if w is None:
        return float(np.mean(values))
    total = float(np.sum(w))
    return float(np.dot(values, w) / total) if total > 0 else np.nan


def _times(w: np.ndarray | None, values: np.ndarray) -> np.ndarray:
    """``values`` weighted by ``w`` (as they are when ``w`` is None)."""
    return values if w is None else w * values


def _weighed(loss, weights: np.ndarray):
    """A per-row loss for the race scaled by the held-out rows' sample
    weights (``weights``, every row's), so that its mean over a fold is
    the weighted mean loss (all zero where the fold's rows weigh nothing).
    Its ``row_weights(valid)`` gives the factors (see
    :func:`_effective_rows`)."""

    def row_weights(valid):
        w = weights[valid]
        total = float(np.sum(w))
        return w * (valid.size / total) if total > 0 else np.zeros(valid.size)

    def weighed_loss(decision, valid):
        return np.asarray(loss(decision, valid), dtype=np.float64) * row_weights(valid)

    weighed_loss.row_weights = row_weights
    return weighed_loss


def _effective_rows(row_loss, valids) -> float:
    """How many held-out rows the race's losses over the folds ``valids``
    amount to: their count when ``row_loss`` weighs every row alike, else
    Kish's effective sample size ``(Σw)² / Σw²`` of the factors its
    ``row_weights(valid)`` gives (a class-balanced loss on two very unequal
    classes counts about four times the smaller class's rows)."""
    weigh = getattr(row_loss, "row_weights", None)
    if weigh is None:
        return float(sum(v.size for v in valids))
    w = np.concatenate([np.asarray(weigh(v), dtype=np.float64) for v in valids])
    sq = float(np.dot(w, w))
    return float(np.sum(w)) ** 2 / sq if sq > 0 else 0.0


def _convex_dual(spec: KernelSpec) -> bool:
    """Whether the dual of ``spec``'s kernel is convex (the kernel positive
    semi-definite): 'linear', 'rbf', and 'poly' with ``coef0 >= 0``. The
    'sigmoid' kernel and 'poly' with ``coef0 < 0`` are not; their duals have
    several stationary points, and which one a solve ends at depends on
    where it starts."""
    return spec.name in ("linear", "rbf") or (spec.name == "poly" and spec.coef0 >= 0.0)


#: The largest ratio of one ``C`` to the previous that a path starts from
#: the previous solution: its multipliers at their bounds are scaled by
#: that ratio, and the rounding of the gradient they leave grows with it
#: (from 1 to 1e50 a solve no longer reaches ``tol``), so a larger step
#: starts again from zero, as a fit does.
MAX_C_STEP = 1e6


def _solve_segments(backend, path: CPath, starts) -> CPathResult:
    """``path`` solved in pieces, each from zero along its own ``C`` values:
    ``starts`` lists the index of each piece's first ``C`` (0 first).
    Without the path's early stop."""
    bounds = [*starts, len(path.Cs)]
    parts = [
        solve_c_path(backend, dataclasses.replace(path, Cs=path.Cs[a:b], prune=None))
        for a, b in itertools.pairwise(bounds)
    ]
    alphas = [part.alpha for part in parts]
    return CPathResult(
        decision=np.concatenate([np.asarray(part.decision) for part in parts]),
        n_iter=np.concatenate([np.asarray(part.n_iter) for part in parts]),
        converged=np.concatenate([np.asarray(part.converged) for part in parts]),
        error=[e for part in parts for e in part.error],
        alpha=None if any(a is None for a in alphas) else np.concatenate(alphas),
    )


def _solve_each_c(backend, path: CPath) -> CPathResult:
    """``path`` solved at each of its ``C`` values from zero, as a fit is:
    for a kernel whose dual is not convex (:func:`_convex_dual`), where a
    start from the previous ``C``'s solution can end at another stationary
    point than the fit's. Without the path's early stop."""
    return _solve_segments(backend, path, range(len(path.Cs)))


def _path_task(task, shared):
    """Solve one (variant, fold) task (a variant is a γ, or for ε-SVR an
    (ε, γ) pair): every binary problem of the fold along the increasing
    ``Cs``; returns the held-out decision values per ``C`` (shape ``(n_C,
    n_valid, n_problems)``, NaN for a problem the fold cannot pose),
    iterations, convergence, errors, the first ``C`` (in increasing order)
    that a problem's early stop left unsolved (``n_C``: none), the seconds
    taken and, when the search keeps them for the refit (``keep``), each
    problem's multipliers per ``C`` (else None per problem)."""
    v, f = task
    X, folds, problems_of, variants, cs, caps, settings, backend = shared[:8]
    kernels, kernel_of, epoch, keep = shared[8:]
    if interrupted_since(epoch):
        raise KeyboardInterrupt
    train, valid = folds[f]
    start = time.perf_counter()
    spec = variants[v][0]
    convex = _convex_dual(spec)
    if kernels is not None:
        X, spec = kernels.get(kernel_of[v]), KernelSpec("precomputed")
    problems = problems_of(train, valid, v)
    n_c = cs.size
    # The race leaves the C values past caps[v] unsolved.
    pruned_from = int(caps[v])
    solved = cs[:pruned_from]
    # The path starts again from zero past a step of C above MAX_C_STEP
    # (or one whose ratio overflows: C from 1e-300 to 1e300).
    with np.errstate(over="ignore"):
        steps = solved[1:] / solved[:-1]
    jumps = [0, *(np.flatnonzero(~(steps <= MAX_C_STEP)) + 1).tolist()]
    decision = np.full((n_c, valid.size, len(problems)), np.nan)
    n_iter = np.zeros(n_c, dtype=np.int64)
    converged = np.ones(n_c, dtype=bool)
    errors: list = [None] * n_c
    # With keep: each problem's multipliers per solved C (the refit's start).
    alphas: list = [None] * len(problems)
    if all(pr is None for pr in problems):
        errors = ["ValueError: the training fold holds fewer than two classes"] * n_c
    for k, problem in enumerate(problems):
        if problem is None:
            continue
        if interrupted_since(epoch):
            raise KeyboardInterrupt
        rows, y, weights, p, target = problem
        path = CPath(
            X=X,
            rows=rows,
            y=y,
            weights=weights,
            p=p,
            Cs=solved,
            valid=valid,
            kernel=spec,
            target=target,
            keep_alpha=keep,
            **settings,
        )
        try:
            if not convex:
                out = _solve_each_c(backend, path)
            elif len(jumps) > 1:
                out = _solve_segments(backend, path, jumps)
            else:
                out = solve_c_path(backend, path)
        except (ValueError, ArithmeticError, MemoryError) as exc:
            errors = [errors[i] or f"{type(exc).__name__}: {exc}" for i in range(n_c)]
            continue
        m = solved.size
        decision[:m, :, k] = out.decision
        alphas[k] = out.alpha
        if out.stopped is not None:
            pruned_from = min(pruned_from, int(out.stopped))
        n_iter[:m] += np.asarray(out.n_iter, dtype=np.int64)
        converged[:m] &= np.asarray(out.converged, dtype=bool)
        errors = [errors[i] or (out.error[i] if i < m else None) for i in range(n_c)]
    if kernels is not None:
        kernels.release(kernel_of[v])
    return decision, n_iter, converged, errors, pruned_from, time.perf_counter() - start, alphas


def _copy_of(rows: np.ndarray) -> np.ndarray:
    """For each entry of ``rows``, how many entries before it hold the
    same row (ε-SVR's variables take each row twice: 0, then 1)."""
    order = np.argsort(rows, kind="stable")
    sorted_rows = rows[order]
    first = np.r_[True, sorted_rows[1:] != sorted_rows[:-1]]
    run_start = np.maximum.accumulate(np.where(first, np.arange(rows.size), 0))
    copy = np.empty(rows.size, dtype=np.intp)
    copy[order] = np.arange(rows.size) - run_start
    return copy


def _fold_average(done, folds, problems_of, v, j, n_rows):
    """The refit's start for candidate (variant ``v``, ``j``-th smallest
    ``C``): per problem, a vector over ``copies · n_rows`` slots (slot
    ``copy · n_rows + row`` for a problem variable on ``row``) holding
    the folds' multipliers summed over the folds and divided by the most
    folds any row trained in, so that each ``α_i`` lies in its box and
    ``yᵀα = 0`` holds as on every fold (with k-fold splits: each row's
    mean over the ``k − 1`` folds it trained in): related problems'
    solutions as a start, as α seeding does (DeCoste & Wagstaff, "Alpha
    seeding for support vector machines", KDD 2000). None when a fold left
    the candidate unsolved."""
    sums: list = []
    signs: list = []
    trained = np.zeros(n_rows)
    for f, (train, valid) in enumerate(folds):
        out = done.get((v, f))
        if out is None or out[6] is None:
            return None
        problems = problems_of(train, valid, v)
        if not sums:
            sums = [None] * len(problems)
            signs = [None] * len(problems)
        for k, (problem, alpha) in enumerate(zip(problems, out[6], strict=True)):
            if problem is None:
                continue
            if alpha is None or not np.all(np.isfinite(alpha[j])):
                return None  # failed, or left unsolved by the early stop
            rows = problem[0]
            copy = _copy_of(rows)
            if sums[k] is None:
                sums[k] = np.zeros((int(copy.max()) + 1) * n_rows)
                signs[k] = np.zeros_like(sums[k])
            sums[k][copy * n_rows + rows] += alpha[j]
            signs[k][copy * n_rows + rows] = problem[1]
        trained[train] += 1
    most = float(trained.max())
    if most == 0 or any(s is None for s in sums):
        return None
    # Each fold's yᵀα = 0 holds to rounding of the largest multipliers its
    # path held, which a path over a wide range of C (1 to 1e12) makes larger
    # than the refit's start allows: it then starts from zero.
    starts = [equality_start(s / most, sign) for s, sign in zip(sums, signs, strict=True)]
    return None if any(s is None for s in starts) else starts


#: Bytes a candidate's records take at most: its kernel and parameters,
#: and its row of ``cv_results_`` (boxed values in dicts and object arrays).
CANDIDATE_BYTES = 1024

#: The folds after which a search races its variants (see ``prune``).
RACE_FOLDS = 3

#: The held-out rows (of the folds raced so far) below which a race round
#: is skipped: the paired test's normal approximation needs a few dozen.
#: For a loss that weighs rows unequally, their effective number
#: (:func:`_effective_rows`).
RACE_MIN_ROWS = 50

#: Bytes of the folds' multipliers a search keeps for the refit's warm
#: start (one float64 per training variable, ``C``, candidate and fold);
#: a search that would need more refits from zero.
WARM_REFIT_BYTES = 64 << 20

#: The parameters a search passes on unchanged to the model it refits.
_SHARED_WITH_REFIT = (
    "kernel",
    "degree",
    "coef0",
    "tol",
    "cache_size",
    "max_iter",
    "shrinking",
    "backend",
    "n_jobs",
)


class _BaseSVMCV(BaseKernelEstimator):
    """The search shared by :class:`SVCCV` and :class:`SVRCV`."""

    _parameter_constraints: ClassVar[dict] = {
        "Cs": ["array-like", Interval(Integral, 1, None, closed="left")],
        "gammas": ["array-like", Interval(Integral, 1, None, closed="left")],
        "cv": ["cv_object"],
        "scoring": [str, callable, None],
        "n_jobs": [Integral, None],
        "refit": ["boolean"],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "kernel": [StrOptions({"linear", "poly", "rbf", "sigmoid"})],
        "degree": [Interval(Integral, 0, None, closed="left")],
        "coef0": [Interval(Real, None, None, closed="neither")],
        "tol": [Interval(Real, 0.0, None, closed="neither")],
        "cv_tol": [Interval(Real, 0.0, None, closed="neither"), None],
        "cache_size": [Interval(Real, 0.0, None, closed="neither")],
        "max_iter": [Interval(Integral, -1, None, closed="left")],
        "shrinking": ["boolean"],
        "error_score": [StrOptions({"raise"}), Real],
        "backend": [str],
        "kernel_matrix": [StrOptions({"auto", "shared", "per_fold"})],
        "prune": [Interval(Real, 0.0, None, closed="left"), None],
    }

    #: A fold's block of a shared NumPy kernel matrix, copied by a
    #: third-party solver, in units of ``8 · n²`` bytes at most (ε-SVR's 2n
    #: variables: 4).
    _block_factor: ClassVar[int] = 1

    # -------------------------------------------------------------- helpers

    def _c_grid(self) -> np.ndarray:
        cs = _grid(self.Cs, "Cs", lambda k: _logspace(C_DECADES, k))
        if np.unique(cs).size != cs.size:
            raise ValueError("Cs must not repeat a value")
        return cs

    def _gamma_grid(self, X) -> np.ndarray:
        if self.kernel == "linear":
            return np.array([resolve_gamma("scale", X)])
        g_scale = resolve_gamma("scale", X)
        return _grid(self.gammas, "gammas", lambda k: _logspace(GAMMA_DECADES, k, g_scale))

    def _check_candidates(self, n_c: int, n_v: int, names: str) -> None:
        """``MemoryError`` naming the grids (``names``) when ``n_c · n_v``
        candidates' records (their kernels, parameters and ``cv_results_``
        rows, :data:`CANDIDATE_BYTES` each) exceed the memory budget."""
        check_memory(
            float(CANDIDATE_BYTES) * n_c * n_v,
            f"the records of {n_c} x {n_v} candidates",
            f"give fewer {names}",
        )

    def _refit_estimator(self, estimator_class, **chosen):
        """The model to refit: ``estimator_class`` with the chosen values
        (``chosen``) and this search's parameters of the same name and
        meaning (:data:`_SHARED_WITH_REFIT`)."""
        shared = {name: getattr(self, name) for name in _SHARED_WITH_REFIT}
        return estimator_class(**shared, **chosen)

    def _spec(self, gamma: float) -> KernelSpec:
        g = float(gamma) if self.kernel != "linear" else 1.0
        return KernelSpec(self.kernel, gamma=g, coef0=float(self.coef0), degree=int(self.degree))

    def _splits(self, X, y) -> list[tuple[np.ndarray, np.ndarray]]:
        classifier = is_classifier(self)
        cv = self.cv
        if cv is None or (isinstance(cv, Integral) and not isinstance(cv, bool)):
            k = 5 if cv is None else int(cv)
            kw = {}
            if self.random_state is not None:
                kw = {"shuffle": True, "random_state": self.random_state}
            cv = StratifiedKFold(k, **kw) if classifier else KFold(k, **kw)
        try:
            splits = list(check_cv(cv, y, classifier=classifier).split(X, y))
        except ValueError as exc:
            if "groups" not in str(exc):
                raise
            raise ValueError(
                f"cv={self.cv!r} splits by groups, which {type(self).__name__}.fit does not "
                "take: give its splits as a list of (train, test) index pairs, "
                f"list(cv.split(X, y, groups)) ({exc})"
            ) from exc
        if not splits:
            raise ValueError(f"cv={self.cv!r} gives no (train, test) splits to score by")
        n = _num_samples(X)
        splits = [
            (_split_rows(tr, n, k, "training"), _split_rows(va, n, k, "test"))
            for k, (tr, va) in enumerate(splits)
        ]
        for k, (tr, va) in enumerate(splits):
            if tr.size == 0 or va.size == 0:
                raise ValueError(
                    f"cv's split {k} has {tr.size} training and {va.size} test rows: every "
                    "split needs both"
                )
        return splits

    def _search(
        self,
        X,
        y,
        cs,
        variants,
        problems_of,
        score_fold,
        label,
        folds=None,
        row_loss=None,
        path_stop=True,
    ):
        """Score every (C, variant) candidate on every fold, fill
        ``cv_results_`` and the ``best_*`` attributes; returns which
        candidates stopped at ``max_iter`` on some fold (shape
        ``(n_variants, n_C)``). ``folds``: the (train, valid) index pairs
        when the caller made them (default: ``cv``'s splits of ``X, y``).

        ``variants`` lists ``(KernelSpec, params)`` in ``cv_results_``'s
        order after ``C`` (``params`` the candidate's other parameters);
        ``problems_of(train, valid, v)`` the fold's binary problems for
        variant ``v``, each with its held-out targets for the early stop;
        ``score_fold(decision, valid)`` a held-out score; ``row_loss(decision,
        valid)`` each held-out row's loss, ranking candidates as
        ``scoring`` does, for the race after the first folds (None: no
        race); ``path_stop``: whether the paths' own early stop (by the 0-1
        error of each binary problem, or the squared error) ranks them so
        (:meth:`_prune_rule`).

        Also returns, with ``refit``, the refit's warm start when the folds'
        multipliers fit :data:`WARM_REFIT_BYTES`: per problem of
        ``problems_of``, the best candidate's multipliers averaged over the
        folds (:func:`_fold_average`), else None."""
        if folds is None:
            folds = self._splits(X, y)
        self.n_splits_ = len(folds)
        order = np.argsort(cs, kind="stable")
        settings = dict(
            tol=float(self.cv_tol if self.cv_tol is not None else 10.0 * self.tol),
            max_iter=int(self.max_iter),
            cache_size=float(self.cache_size),
            shrinking=bool(self.shrinking),
            prune=None if self.prune is None or not path_stop else float(self.prune),
            regression=not is_classifier(self),
        )
        probe = QPProblem(
            X=X,
            y=np.array([1.0, -1.0]),
            upper=np.ones(2),
            rows=np.array([0, 0]),
            kernel=variants[0][0],
        )
        backend = select_backend(self.backend, probe)
        if sp.issparse(X):
            core_rows(X, cache=True)  # the core's copy, shared by the tasks
        n_v, n_f, n_c = len(variants), len(folds), cs.size
        # Each running task holds the held-out decision values of every C
        # (n_C · n_valid per binary problem); the results, three numbers per
        # candidate and fold.
        n_problems = len(problems_of(*folds[0], 0))
        most_valid = max(valid.size for _, valid in folds)
        running = min(effective_n_jobs(self.n_jobs), n_v * n_f)
        check_memory(
            8.0 * n_c * (most_valid * n_problems * running + 3 * n_v * n_f),
            f"scoring {n_c} C values x {n_v} {label} on {n_f} folds",
            "give fewer Cs (and gammas" + (", epsilons" if label != "gammas" else "") + ")",
        )
        # Variants with the same kernel (ε-SVR's epsilons at one γ) share
        # its matrix: their tasks run one after another.
        specs: list[KernelSpec] = []
        kernel_of = []
        for spec, _ in variants:
            if spec not in specs:
                specs.append(spec)
            kernel_of.append(specs.index(spec))
        tasks = sorted(
            ((v, f) for v in range(n_v) for f in range(n_f)), key=lambda t: (kernel_of[t[0]], t)
        )
        report = self._fit_report(len(tasks), X, y)
        report.subtasks("variant-fold", len(tasks))
        name = type(self).__name__
        report.log(
            1,
            "%s: %d C values x %d %s, %d folds: %d tasks on backend %r",
            name,
            n_c,
            n_v,
            label,
            n_f,
            len(tasks),
            backend.name,
        )

        def describe(out):
            _, it, _, err, _, secs, _ = out
            bad = sum(e is not None for e in err)
            return f"{int(it.sum())} iterations, {secs:.2f} s" + (f", {bad} failed" if bad else "")

        kernels = None
        n_rows = X.shape[0]
        workers = min(effective_n_jobs(self.n_jobs), len(tasks))
        native = getattr(backend, "kernel_matrix", None)
        itemsize = None
        if native is not None:
            # The core keeps an RBF matrix in float32 when the solves run
            # in float32 at this tol (they read the same numbers).
            itemsize = max(backend.kernel_matrix_itemsize(s, settings["tol"]) for s in specs)
            native = functools.partial(native, tol=settings["tol"])
        if self.kernel_matrix == "auto":
            need = _SharedKernels.bytes_needed(n_rows, workers, self._block_factor, itemsize)
            cheap = (
                self.kernel != "linear" and not sp.issparse(X) and X.shape[1] < SHARE_MIN_FEATURES
            )
            share = need <= memory_budget() and not cheap
        else:
            share = self.kernel_matrix == "shared"
        epoch = interrupt_epoch()
        race = row_loss is not None and self.prune is not None and n_f > 2 and n_v > 1
        if share:
            kernels = _SharedKernels(X, specs, epoch, native)
        report.log(
            2,
            "%s: kernel matrices %s",
            name,
            "shared across folds and C values" if share else "computed per fold",
        )
        caps = np.full(n_v, n_c)
        # The refit starts from the folds' multipliers when they fit.
        per_fold = sum(pr[0].size for pr in problems_of(*folds[0], 0) if pr is not None)
        keep_alpha = (
            bool(self.refit)
            and self._warm_refit()
            and 8.0 * n_v * n_f * n_c * per_fold <= WARM_REFIT_BYTES
        )
        hooks = report.hooks(describe)
        index_of = {t: i for i, t in enumerate(tasks)}
        # A raced search keeps each matrix from its first fold to its last
        # when every variant's fits the budget beside the base (else it is
        # built again in each round that reads it).
        keep = (
            race
            and kernels is not None
            and itemsize is not None
            and float(n_rows) * n_rows * (8 + itemsize * (len(specs) + 1)) <= memory_budget()
        )
        if keep:
            kernels.expect([n_f * kernel_of.count(k) for k in range(len(specs))])
        done: dict = {}

        def run(batch):
            """Run ``batch`` (some of ``tasks``), reported under their
            indices in ``tasks``."""
            if (kernels is None or keep) and all((v, 0) in done for v, _ in batch):
                # Longest first (by the variant's first fold), so that no
                # worker is left with a long task while the others idle.
                batch = sorted(batch, key=lambda t: (-done[t[0], 0][5], t))
            where = [index_of[t] for t in batch]
            if kernels is not None and not keep:
                # Each matrix is dropped after the batch's last task reading it.
                kernels.expect(
                    [sum(kernel_of[v] == k for v, _ in batch) for k in range(len(specs))]
                )
            relay = {}
            if "on_start" in hooks:
                relay["on_start"] = lambda i: hooks["on_start"](where[i])
            if "on_done" in hooks:
                relay["on_done"] = lambda i, r: hooks["on_done"](where[i], r)
            shared = (
                X,
                folds,
                problems_of,
                variants,
                cs[order],
                caps.copy(),
                settings,
                backend,
                kernels,
                kernel_of,
                epoch,
                keep_alpha,
            )
            out = run_tasks(
                _path_task,
                batch,
                n_jobs=self.n_jobs,
                thread_safe=backend.capabilities.thread_safe,
                shared=shared,
                **relay,
            )
            return dict(zip(batch, out, strict=True))

        for f in range(min(RACE_FOLDS, n_f - 2) if race else 0):
            # Race the variants on fold f (and those before): only the C
            # values not clearly beaten there go on to the next folds.
            done.update(run([t for t in tasks if t[1] == f and caps[t[0]] > 0]))
            if _effective_rows(row_loss, [folds[g][1] for g in range(f + 1)]) < RACE_MIN_ROWS:
                continue  # too few held-out rows to tell candidates apart
            raced = [
                [done[v, g] for g in range(f + 1)] if caps[v] > 0 else None for v in range(n_v)
            ]
            before = caps
            caps = _race(raced, row_loss, [folds[g][1] for g in range(f + 1)], self.prune, caps)
            for v in np.flatnonzero((before > 0) & (caps == 0)):
                if keep:
                    kernels.release(kernel_of[v], n_f - f - 1)
                for g in range(f + 1):
                    done[v, g] = (*done[v, g][:6], None)  # no refit starts from it
            report.log(
                1,
                "%s: after fold %d, %d of %d %s left out, %d C values of the others",
                name,
                f,
                int(np.sum(caps == 0)),
                n_v,
                label,
                int(np.sum((n_c - caps)[caps > 0])),
            )
        done.update(run([t for t in tasks if t not in done and caps[t[0]] > 0]))
        scores = np.full((n_v, n_f, n_c), np.nan)
        fit_time = np.zeros((n_v, n_f, n_c))
        score_time = np.zeros((n_v, n_f, n_c))
        unconverged = np.zeros((n_v, n_c), dtype=bool)
        failures: list[str] = []
        # Candidate-fold scores that scoring itself made NaN or infinite.
        non_finite: list[tuple[int, int, int]] = []
        iters = np.zeros((n_v, n_c), dtype=np.int64)
        n_pruned = 0
        for v, f in tasks:
            if (v, f) not in done:
                # A variant the race left out.
                n_pruned += n_c
                continue
            decision, it, conv, errors, pruned_from, secs, _ = done[v, f]
            valid = folds[f][1]
            for j in range(n_c):
                k = order[j]  # the j-th smallest C is the k-th given
                t0 = time.perf_counter()
                if j >= pruned_from:
                    # Left unsolved by the early stop: clearly beaten on this fold.
                    scores[v, f, k] = np.nan
                    n_pruned += 1
                elif errors[j] is not None:
                    if self.error_score == "raise":
                        raise ValueError(
                            f"{name} failed for C={cs[k]:g}, {variants[v][1]} on fold {f}: "
                            f"{errors[j]}"
                        )
                    failures.append(errors[j])
                    scores[v, f, k] = self.error_score
                else:
                    scores[v, f, k] = score_fold(decision[j], valid)
                    if not np.isfinite(scores[v, f, k]):
                        non_finite.append((k, v, f))
                score_time[v, f, k] = time.perf_counter() - t0
                fit_time[v, f, k] = secs / n_c
                unconverged[v, k] |= not conv[j]
                iters[v, k] += int(it[j])
        # Every score NaN, some by scoring: _fill_results' error names the
        # failed fits too, and a warning before it would say it twice. (All
        # fits failed: warned and raised, as GridSearchCV does.)
        all_nan = bool(non_finite) and bool(np.isnan(scores).all())
        if failures and not all_nan:
            self._warn(
                f"{len(failures)} of {scores.size} fits failed and were scored "
                f"error_score={self.error_score!r}. The first reason: {failures[0]}",
                FitFailedWarning,
            )
        smallest = min(valid.size for _, valid in folds)
        if non_finite and not all_nan:
            # As GridSearchCV does for scores that are not finite.
            k, v, f = non_finite[0]
            self._warn(
                f"{len(non_finite)} of {scores.size} held-out scores are not finite (the "
                f"first: C={cs[k]:g}, {variants[v][1]} on fold {f}, of {folds[f][1].size} "
                f"held-out rows); scoring={self.scoring!r} gave no finite score there"
                + self._non_finite_hint(smallest),
                UserWarning,
            )
        if n_pruned:
            report.log(
                1,
                "%s: %d of %d candidate-fold scores left out by the early stop or the race "
                "(prune=%g)",
                name,
                n_pruned,
                scores.size,
                self.prune,
            )
        self._fill_results(
            scores,
            fit_time,
            score_time,
            cs,
            variants,
            failed=failures[0] if failures else None,
            n_failed=len(failures),
            n_non_finite=len(non_finite),
            smallest=smallest,
        )
        # In cv_results_' order: candidate (C number ic, variant v) at ic · n_v + v.
        self.n_iter_ = iters.T.reshape(-1)
        report.log(
            1,
            "%s: best %s, mean score %.4f",
            name,
            self.best_params_,
            self.best_score_,
        )
        report.end(X, y)
        start = None
        if keep_alpha:
            ic, v = divmod(int(self.best_index_), n_v)
            j = int(np.flatnonzero(order == ic)[0])
            start = _fold_average(done, folds, problems_of, v, j, n_rows)
        return unconverged, start

    def _prune_rule(self, rules: dict) -> tuple:
        """What ``prune`` judges candidates by: ``rules[scoring]``, a row
        loss for the race and whether the paths' own early stop may run,
        for the scorings these losses rank candidates as; ``(None, False)``
        for any other (a loss that ranks unlike ``scoring`` would leave out
        the candidates it prefers), which scores every candidate on every
        fold."""
        key = self.scoring if self.scoring is None or isinstance(self.scoring, str) else ()
        return rules.get(key, (None, False))

    def _scorer(self):
        """``scoring`` as a scorer (None for the default score). One that
        needs ``predict_proba`` is refused naming ``scoring``: before the
        search for a scikit-learn scorer that says so, when it asks for a
        method the held-out rows lack otherwise (they are scored from
        decision values)."""
        if self.scoring is None:
            return None
        scorer = check_scoring(self, scoring=self.scoring)
        wanted = getattr(scorer, "_response_method", None)
        wanted = {wanted} if isinstance(wanted, str) else set(wanted or ())
        name = type(self).__name__
        if wanted and wanted <= {"predict_proba", "predict_log_proba"}:
            raise ValueError(
                f"scoring={self.scoring!r} needs predict_proba, which {name} cannot score "
                "by: the held-out rows are scored from decision values, and the model it "
                "refits has no predict_proba. Use a scorer that reads predict or "
                "decision_function."
            )

        def score(estimator, X, y, **kw):
            try:
                return scorer(estimator, X, y, **kw)
            except AttributeError as exc:
                raise ValueError(
                    f"scoring={self.scoring!r} asks for a method that {name} cannot score by "
                    f"({exc}): the held-out rows are scored from predict"
                    + (" and decision_function" if is_classifier(self) else "")
                    + ", as the model it refits answers them."
                ) from exc

        return score

    def _warm_refit(self) -> bool:
        """Whether the refit may start from the folds' averaged multipliers
        (:func:`_fold_average`): they must lie in the refit's boxes, and
        the dual be convex (a start elsewhere than the fit's can end at
        another of its stationary points)."""
        return _convex_dual(self._spec(1.0))

    def _non_finite_hint(self, smallest: int) -> str:
        """What a warning about scores that are not finite adds, given the
        fewest held-out rows of a fold (``smallest``)."""
        return ""

    def _fill_results(
        self,
        scores,
        fit_time,
        score_time,
        cs,
        variants,
        failed=None,
        n_failed=0,
        n_non_finite=0,
        smallest=2,
    ) -> None:
        """``cv_results_`` in ``GridSearchCV``'s layout over the grid ``{'C':
        Cs, ...}``: the candidate of ``C`` number ``ic`` and variant ``v`` at
        index ``ic · n_variants + v`` (ParameterGrid's order with the
        parameters sorted by name, the last varying fastest)."""
        n_v, n_f, n_c = scores.shape
        params = []
        split = np.empty((n_c * n_v, n_f))
        times = np.empty((n_c * n_v, 4))
        for ic in range(n_c):
            for v in range(n_v):
                idx = ic * n_v + v
                params.append({"C": float(cs[ic]), **variants[v][1]})
                split[idx] = scores[v, :, ic]
                times[idx] = (
                    fit_time[v, :, ic].mean(),
                    fit_time[v, :, ic].std(),
                    score_time[v, :, ic].mean(),
                    score_time[v, :, ic].std(),
                )
        res: dict = {
            "mean_fit_time": times[:, 0],
            "std_fit_time": times[:, 1],
            "mean_score_time": times[:, 2],
            "std_score_time": times[:, 3],
        }
        for key in params[0]:
            col = np.ma.MaskedArray(np.empty(len(params), dtype=object), mask=False)
            for i, p in enumerate(params):
                col[i] = p[key]
            res[f"param_{key}"] = col
        res["params"] = params
        for k in range(n_f):
            res[f"split{k}_test_score"] = split[:, k]
        with np.errstate(invalid="ignore"):
            mean = split.mean(axis=1)
            std = split.std(axis=1)
        res["mean_test_score"] = mean
        res["std_test_score"] = std
        # As GridSearchCV: a NaN mean ranks last; ties share the smallest rank.
        key = np.where(np.isnan(mean), -np.inf, mean)
        res["rank_test_score"] = rankdata(-key, method="min").astype(np.int32)
        self.cv_results_ = res
        if np.all(np.isnan(split)):
            if failed and not n_non_finite:
                raise ValueError(
                    f"All the {split.size} fits of {type(self).__name__} failed: no score to "
                    f"choose by. The first reason: {failed}"
                )
            also = ""
            if failed:
                also = (
                    f" ({n_failed} of the {split.size} fits failed and were scored "
                    f"error_score={self.error_score!r}; the first reason: {failed})"
                )
            raise ValueError(
                f"Every held-out score of {type(self).__name__} is NaN: scoring="
                f"{self.scoring!r} gave no score to choose by on these folds"
                + also
                + self._non_finite_hint(smallest)
            )
        self.best_index_ = int(np.argmin(res["rank_test_score"]))
        self.best_params_ = dict(params[self.best_index_])
        self.best_score_ = float(mean[self.best_index_])

    def _finish(self, X, y, estimator, unconverged, start=None, sample_weight=None) -> None:
        """Refit ``estimator`` on all the data (``refit=True``; from the
        multipliers ``start``, one vector per binary problem, when given;
        with ``sample_weight``, when given) and warn once for every solve of
        the search and the refit that stopped at ``max_iter``."""
        refit_warned = False
        if self.refit:
            t0 = time.perf_counter()
            if start is not None:
                # Read and dropped by the estimator's fit (SVC, SVR): a
                # speed hint, as its alpha0 checks feasibility.
                estimator._alpha_start = start
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                if sample_weight is None:
                    estimator.fit(X, y)
                else:
                    estimator.fit(X, y, sample_weight=sample_weight)
            for w in caught:
                if issubclass(w.category, ConvergenceWarning):
                    refit_warned = True
                else:
                    warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
            self.refit_time_ = time.perf_counter() - t0
            names = getattr(self, "feature_names_in_", None)
            if names is not None:
                # Fitted on the validated array: the names let its predict
                # check a DataFrame's columns, as a grid search's refit does.
                estimator.feature_names_in_ = names
            self.best_estimator_ = estimator
        else:
            # Not left over from an earlier fit with refit=True (on other data).
            for name in ("best_estimator_", "refit_time_"):
                self.__dict__.pop(name, None)
        n_bad = int(unconverged.sum())
        if n_bad or refit_warned:
            if self.max_iter == -1:
                # The solver's own cap: raising max_iter is no remedy.
                cap = "the solver's iteration cap (max_iter=-1: max(10^7, 100 per variable))"
                remedy = "scale the features (StandardScaler), or leave out the largest Cs"
            else:
                cap = f"max_iter={self.max_iter}"
                remedy = "raise max_iter, or scale the features (StandardScaler)"
            what = f"{n_bad} of {unconverged.size} candidates stopped at {cap}"
            what += " on some fold" + (", and so did the refit," if refit_warned else "")
            self._warn(
                f"{type(self).__name__}: {what} before reaching tol. Their scores may be "
                f"inaccurate; {remedy}.",
                ConvergenceWarning,
            )

    def _warn(self, message: str, category: type[Warning]) -> None:
        """Warn the caller of ``fit``, or, for a search run on a caller's
        behalf (:class:`localsvm.CellSVC`'s cells, which set
        ``_warning_sink`` to a list), record ``(category, message)`` there
        for the caller to report once for all its searches."""
        sink = getattr(self, "_warning_sink", None)
        if sink is None:
            # Past this method, _search or _finish and _fit_weighted: at fit.
            warnings.warn(message, category, stacklevel=4)
        else:
            sink.append((category, message))

    def _best(self, method: str, X):
        """``method`` of the refitted model on ``X``, whose feature count
        and names are checked against this search's fit first: a mismatch
        is reported in this estimator's name, not in its refitted model's
        (SVC, SVR), and only once."""
        check_is_fitted(self)
        if not self.refit:
            raise AttributeError(
                f"{type(self).__name__} was fitted with refit=False: {method} needs the "
                "model refitted on all the data"
            )
        shape = getattr(X, "shape", None)
        if shape is not None:
            rows_of_features = len(shape) == 2
        else:
            rows_of_features = (
                isinstance(X, (list, tuple))
                and len(X) > 0
                and isinstance(X[0], (list, tuple, np.ndarray))
            )
        if rows_of_features:
            # Else the refitted model's check says what X should be.
            validate_data(self, X, reset=False, skip_check_array=True)
        with warnings.catch_warnings():
            # Said above, in this estimator's name.
            warnings.filterwarnings(
                "ignore", message="X (does not have valid|has) feature names", category=UserWarning
            )
            return getattr(self.best_estimator_, method)(X)

    def predict(self, X):
        """Predict with the refitted best model.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The samples.

        Returns
        -------
        ndarray of shape (n_samples,)
            Predicted classes or targets.
        """
        return self._best("predict", X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


# The parameters of the kernel and of the solves, the same in SVCCV and SVRCV.
_KERNEL_PARAMS = """\
verbose : int, default=0
    Log each task's progress (``logging``, logger ``localsvm.tuning``).
kernel : {'rbf', 'linear', 'poly', 'sigmoid'}, default='rbf'
    The kernel.
degree : int, default=3
    Degree of 'poly'.
coef0 : float, default=0.0
    Constant term of 'poly' and 'sigmoid'.
"""
_SOLVE_PARAMS = """\
tol : float, default=1e-3
    Stopping tolerance of the refit.
cv_tol : float or None, default=None
    Stopping tolerance of the folds' solves; None uses ``10 · tol``.
    The folds are judged by their held-out predictions, which a looser
    tolerance moves only for points within about ``cv_tol`` of the
    decision boundary (the KKT violation bounds the error of the
    decision values); give ``cv_tol=tol`` for the scores of
    ``GridSearchCV`` at the refit's tolerance.
cache_size : float, default=200
    Megabytes of kernel values each running task may keep.
max_iter : int, default=-1
    Iteration cap per solve; -1 for the solver's own safety cap.
shrinking : bool, default=True
    Whether the solver may shrink.
error_score : 'raise' or float, default=np.nan
    The score of a candidate whose solve fails on a fold (with a
    ``FitFailedWarning``), or 'raise' to raise the error.
backend : str, default='auto'
    The solver backend (:func:`localsvm.select_backend`).
kernel_matrix : {'auto', 'shared', 'per_fold'}, default='auto'
    'shared' computes one base matrix over all the rows (the squared
    distances for 'rbf', the inner products otherwise) and from it, per
    ``gamma``, the kernel matrix every fold and ``C`` value then reads;
    'per_fold' computes kernel values per fold through the solver's
    column cache (``cache_size``). 'auto' shares when the matrices fit
    the memory budget (see Notes) and, for a kernel other than 'linear',
    the rows are sparse or have at least 64 features: with fewer, a kernel
    value costs less to compute from the features than a shared matrix
    costs to build for every ``gamma`` and to read.
prune : float or None, default=2.0
    Stops a fold's path over increasing ``C`` (for one ``gamma``) once it
    is clearly beaten: when its held-out error (the 0-1 error of each
    one-vs-one problem, or the squared error of the regression) has been
    more than ``prune`` standard errors above the best the path reached,
    for two ``C`` values in a row, the larger ``C`` values, the slowest to
    solve, are left out on that fold. Their ``split<k>_test_score`` is
    NaN, so their mean is NaN and they rank last, as the candidates
    ``HalvingGridSearchCV`` drops. Held-out error along ``C`` usually
    falls to one minimum and then rises, so a path seldom recovers once it
    is beaten twice in a row. With three folds or more the variants
    (``gamma``, or ``(epsilon, gamma)``) also race, after the first fold
    and (with four or more) after the second and (with five or more) the
    third, once those folds hold 50 held-out rows or more: a candidate
    whose mean per-row loss over the folds solved so far (the same
    losses) is more than ``prune`` standard errors of the paired per-row
    difference above the best candidate's is clearly beaten, and on the
    next folds each variant solves only up to its largest ``C`` not
    beaten (none, for a variant beaten at every ``C``). The candidates
    left out keep the scores of the folds they were solved on and get NaN
    on the others. These losses rank candidates as the default
    ``scoring`` does, and as 'accuracy' (``SVCCV``) or 'r2',
    'neg_mean_squared_error' and 'neg_root_mean_squared_error'
    (``SVRCV``); for 'balanced_accuracy' the race weighs each class's
    rows alike and for 'neg_mean_absolute_error' it judges the absolute
    error, without the paths' early stop; any other ``scoring`` ranks
    candidates unlike them, and every candidate is scored on every fold.
    Where the race's loss weighs rows unequally (class-balanced, or with
    ``sample_weight``) the 50 rows are counted as Kish's effective sample
    size ``(Σw)² / Σw²``: a small class counts for about four times its
    rows. None scores every candidate on every fold.
"""


# The sample_weight of SVCCV.fit and SVRCV.fit.
_SAMPLE_WEIGHT_PARAM = """\
sample_weight : array-like of shape (n_samples,), default=None
    Per-sample multipliers of ``C`` in every fold's fits and in the refit,
    as ``GridSearchCV`` hands them to the fit on each fold: a sample of
    weight ``<= 0`` is left out of the fits. The held-out scores weigh each
    row by its weight, as ``GridSearchCV``'s do; ``prune`` then races by
    the weighted loss, and the paths' own early stop (which counts rows
    alike) does not run.
"""


# The attributes every search sets, the same in SVCCV and SVRCV.
_SEARCH_ATTRIBUTES = """\
n_splits_ : int
    Number of folds.
n_iter_ : ndarray of shape (n_candidates,)
    Solver iterations per candidate, summed over the folds (in
    ``cv_results_``'s order).
refit_time_ : float
    Seconds spent refitting.
n_features_in_ : int
    Number of features seen during fit.
"""


#: The docstring fields SVCCV and SVRCV share.
_search_docs = fill(
    kernel_params=_KERNEL_PARAMS,
    solve_params=_SOLVE_PARAMS,
    search_attributes=_SEARCH_ATTRIBUTES,
    sample_weight_param=_SAMPLE_WEIGHT_PARAM,
)


@_search_docs
class SVCCV(ClassifierMixin, _BaseSVMCV):
    """C-SVM classifier with ``C`` and ``gamma`` chosen by cross-validation.

    Scores the grid ``Cs × gammas`` as
    ``GridSearchCV(SVC(), {'C': Cs, 'gamma': gammas})`` would, but shares
    the work: for each ``gamma`` and fold the dual is solved once along the
    increasing ``Cs``, each solve warm-started from the previous one with
    the kernel values and the gradient kept (DeCoste & Wagstaff, "Alpha
    seeding for support vector machines", KDD 2000), and the held-out
    rows are scored from the same solutions. The (γ, fold) tasks run in
    ``n_jobs`` threads. The best candidate is then refitted on all the
    data as a :class:`~localsvm.SVC`, started from its multipliers on the
    folds (each row's mean over the folds it trained in, a feasible point
    of the whole dual) when they take at most 64 MiB
    (``8 · n_C · n_gamma · n_folds · v`` bytes, ``v`` the variables of
    one fold's binary problems), else from zero. The 'sigmoid' kernel and
    'poly' with ``coef0 < 0`` are not positive semi-definite: their dual
    has several stationary points and the one a solve reaches depends on
    its start, so each ``C`` is solved from zero, as an ``SVC`` fit is
    (without the path's early stop), and so is the refit.

    Parameters
    ----------
    Cs : int or array-like of float, default=10
        The ``C`` values, or how many of them on the default grid
        10⁻¹ … 10³ (log-spaced): with kernel values in [0, 1], ``C`` = 0.1
        leaves most examples at their bound and ``C`` = 1000 almost none on
        standardized data.
    gammas : int or array-like of float, default=10
        The ``gamma`` values, or how many on the default grid
        γ_scale · 10⁻² … γ_scale · 10^1.5 (log-spaced), where γ_scale =
        1 / (n_features · X.var()) is scikit-learn's ``gamma='scale'``: from
        nearly linear models to nearly nearest-neighbour ones. Ignored for
        ``kernel='linear'``.
    cv : int, cross-validation generator or iterable, default=None
        The splits: None for 5 folds, an int for that many
        (``StratifiedKFold``, as ``GridSearchCV``), or any scikit-learn
        splitter or list of ``(train, test)`` index pairs.
    scoring : str, callable or None, default=None
        A scikit-learn scorer; None is accuracy. Scorers that need
        ``predict_proba`` are not available (the held-out rows are scored
        from decision values).
    n_jobs : int or None, default=None
        Threads for the (γ, fold) tasks; None or -1 for all CPUs.
    refit : bool, default=True
        Refit the best candidate on all the data (``best_estimator_``);
        ``predict`` and the other model methods need it.
    random_state : int, RandomState or None, default=None
        With an int ``cv``, shuffles the samples before splitting them into
        folds (None: no shuffling, as ``GridSearchCV``).
    {kernel_params}
    class_weight : dict, 'balanced' or None, default=None
        Multipliers of ``C`` per class, as :class:`~localsvm.SVC`'s.
        'balanced' is resolved on each training fold's labels, as by the
        ``SVC`` a grid search fits on that fold, and on all the rows for
        the refit (which then starts from zero: the folds' boxes differ
        from its own).
    {solve_params}

    Attributes
    ----------
    C_ : float
        The chosen ``C``.
    gamma_ : float
        The chosen ``gamma`` (for the linear kernel: the refit's resolved
        ``gamma='scale'``, which the linear kernel does not use).
    best_score_ : float
        The chosen candidate's mean held-out score.
    best_params_ : dict
        ``{'C': C_, 'gamma': gamma_}``.
    best_index_ : int
        The chosen candidate's index into ``cv_results_``.
    cv_results_ : dict of ndarray
        Per candidate, in ``GridSearchCV``'s layout (``params``,
        ``param_C``, ``param_gamma``, ``split{k}_test_score``,
        ``mean_test_score``, ``std_test_score``, ``rank_test_score``,
        ``mean_fit_time``, ...; the fit time of a task is shared equally by
        its ``C`` values).
    best_estimator_ : SVC
        The chosen candidate refitted on all the data (``refit=True``).
    classes_ : ndarray of shape (n_classes,)
        The class labels.
    class_weight_ : ndarray of shape (n_classes,)
        The factor of ``C`` per class (from ``class_weight``).
    {search_attributes}

    See Also
    --------
    localsvm.SVC : The classifier refitted with the chosen parameters.
    SVRCV : The same search for ε-SVR.

    Notes
    -----
    Memory: with shared kernel matrices (``kernel_matrix='shared'``, or
    'auto' when they fit), ``n² · (8 + b · (1 + n_jobs))`` bytes at most
    for ``n`` training rows: the float64 base matrix, and a kernel matrix
    per running task and one more, kept in the Rust core, where each fold
    reads its rows in place; ``b = 4`` bytes per value for the RBF kernel
    when the solves run in float32 at ``cv_tol`` (they read the same
    numbers), else 8 ('auto' shares when this is at most half the
    available memory: 500 MB for 5 000 rows and 2 jobs with the RBF
    kernel). A raced search (``prune``) keeps every ``gamma``'s matrix
    from its first fold to its last, ``n² · (8 + b · (n_gammas + 1))``
    bytes, when that fits the same budget (for 5 000 rows and 10 ``gamma``
    values, 1.3 GB), and otherwise builds a matrix again for each round
    that reads it. A third-party solver backend gets
    NumPy matrices and copies each fold's block: ``8 · n² · (2 + 2 ·
    n_jobs)`` bytes. Otherwise each running task holds its fold's training
    rows. Either way a running task keeps at most ``cache_size`` megabytes
    of kernel columns and as many of held-out kernel values, and the
    held-out decision values of every
    ``C`` (``n_C · n_valid`` floats per binary problem).

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from localsvm.tuning import SVCCV
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = SVCCV(Cs=[0.1, 1.0, 10.0], gammas=[0.1, 1.0], cv=3).fit(X, y)
    >>> clf.best_params_ == {"C": clf.C_, "gamma": clf.gamma_}
    True
    >>> clf.score(X, y) > 0.9
    True
    """

    _parameter_constraints: ClassVar[dict] = {
        **_BaseSVMCV._parameter_constraints,
        "class_weight": CLASS_WEIGHT_CONSTRAINT,
    }

    def __init__(
        self,
        *,
        Cs=10,
        gammas=10,
        cv=None,
        scoring=None,
        n_jobs=None,
        refit=True,
        random_state=None,
        verbose=0,
        kernel="rbf",
        degree=3,
        coef0=0.0,
        class_weight=None,
        tol=1e-3,
        cv_tol=None,
        cache_size=200,
        max_iter=-1,
        shrinking=True,
        error_score=np.nan,
        backend="auto",
        kernel_matrix="auto",
        prune=2.0,
    ):
        store_params(self, locals())

    @restore_on_interrupt
    @fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Score every candidate by cross-validation and refit the best.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training examples.
        y : array-like of shape (n_samples,)
            Class labels.
        {sample_weight_param}

        Returns
        -------
        self : SVCCV
            The fitted search.
        """
        return self._fit_weighted(X, y, sample_weight=sample_weight)

    def _fit_weighted(self, X, y, box_weights=None, sample_weight=None):
        """:meth:`fit` with its ``sample_weight``, or with ``box_weights``
        (positive, one per row, or None) multiplying each example's box
        beside ``class_weight`` but not weighing the held-out scores: the
        search :class:`localsvm.CellSVC` runs on each cell's rows with the
        factors of ``C`` the whole training set gave them (with
        ``refit=False``). The caller validates the parameters (``fit`` does
        it through ``fit_context``)."""
        X, y = validate_training_data(self, X, y, sparse=True)
        y_idx = encode_classes(self, y)
        classes = self.classes_
        n_classes = classes.size
        row_w = None if box_weights is None else np.asarray(box_weights, dtype=np.float64)
        # The held-out scores' weights (and the refit's): sample_weight's.
        score_w = weights_given = None
        if sample_weight is not None:
            score_w = weights_given = positive_weights(sample_weight, y.size, y_idx)
            row_w = score_w if row_w is None else row_w * score_w
        box = class_weights(self, y)[y_idx]
        if row_w is not None:
            box = box * row_w
        # 'balanced' weighs the classes by each training fold's own counts,
        # as the SVC a grid search fits on that fold does (``class_weight_``
        # and the refit: by all the rows').
        balanced = isinstance(self.class_weight, str) and self.class_weight == "balanced"
        cs = self._c_grid()
        gammas = self._gamma_grid(X)
        self._check_candidates(cs.size, gammas.size, "Cs and gammas")
        variants = [
            (self._spec(g), {"gamma": float(g) if self.kernel != "linear" else "scale"})
            for g in gammas
        ]
        scorer = self._scorer()
        pairs = ovo_pairs(n_classes)
        folds, Xs, ys = None, X, y
        grouped = n_classes > 2 and _convex_dual(self._spec(1.0))
        if grouped:
            # The search's rows grouped by class: a one-vs-one problem then
            # reads two runs of each shared kernel row instead of values
            # scattered over all of it (a third less time on 10 classes).
            # The folds are cv's splits of the rows as given. Not for a
            # dual that is not convex: where its solve from zero ends
            # depends on the order of the variables, and SVC poses each
            # pair's rows in the order given.
            order = np.argsort(y_idx, kind="stable")
            inv = np.empty_like(order)
            inv[order] = np.arange(order.size)
            folds = [(np.sort(inv[tr]), np.sort(inv[va])) for tr, va in self._splits(X, y)]
            Xs, ys, y_idx, box = X[order], y[order], y_idx[order], box[order]
            row_w = None if row_w is None else row_w[order]
            score_w = None if score_w is None else score_w[order]

        def problems_of(train, valid, v):
            """The fold's one-vs-one problems, None for a pair it lacks; each
            with its held-out labels (±1, 0 for the other classes' rows)."""
            present = set(np.unique(y_idx[train]).tolist())
            if len(present) < 2:
                return [None] * len(pairs)
            fold_box = box
            if balanced:
                fold_w = balanced_class_factors(np.bincount(y_idx[train], minlength=n_classes))
                fold_box = fold_w[y_idx] if row_w is None else fold_w[y_idx] * row_w
            if row_w is not None:
                # Samples of weight 0 are left out of the fold's fits.
                train = train[row_w[train] > 0]
                present = set(np.unique(y_idx[train]).tolist())
            out = []
            for a, b in pairs:
                if a not in present or b not in present:
                    out.append(None)
                    continue
                rows = train[(y_idx[train] == a) | (y_idx[train] == b)]
                yv = y_idx[valid]
                target = np.where(yv == a, 1.0, np.where(yv == b, -1.0, 0.0))
                labels = np.where(y_idx[rows] == a, 1.0, -1.0)
                out.append((rows, labels, fold_box[rows], None, target))
            return out

        def predicted(decision, public=False):
            """The held-out classes (indices) and, for two classes or with
            ``public``, the public decision values (``SVC``'s: one per
            class, 'ovr' shaped, for more classes), from the pairs' decision
            values ``(n_valid, n_pairs)``; a pair the fold lacked abstains."""
            if n_classes == 2:
                values = -decision[:, 0]
                return binary_index(values), values
            abstain = np.isnan(decision)
            votes = np.where(abstain, 0.0, decision)
            values = ovo_to_ovr(votes, n_classes, abstain) if public else None
            return vote_winner(votes, n_classes, abstain), values

        def row_loss(decision, valid):
            return (predicted(decision)[0] != y_idx[valid]).astype(np.float64)

        def class_balance(valid):
            """Each held-out row's factor that makes every class weigh
            alike (their mean is 1)."""
            truth = y_idx[valid]
            return balanced_class_factors(np.bincount(truth, minlength=n_classes))[truth]

        def balanced_row_loss(decision, valid):
            """The 0-1 loss with each class's rows weighing alike: its mean
            over a fold is one less the fold's balanced accuracy."""
            return row_loss(decision, valid) * class_balance(valid)

        balanced_row_loss.row_weights = class_balance

        def score_fold(decision, valid):
            """Held-out score from the pairs' decision values (weighted by
            the held-out rows' sample weights, when given)."""
            w = None if score_w is None else score_w[valid]
            if scorer is None:
                return _mean(predicted(decision)[0] == y_idx[valid], w)
            pred, public = predicted(decision, public=True)
            stand_in = _DecidedClassifier(classes, classes[pred], public)
            kw = {} if w is None else {"sample_weight": w}
            return float(scorer(stand_in, Xs[valid], ys[valid], **kw))

        if score_w is None:
            rules = {
                None: (row_loss, True),
                "accuracy": (row_loss, True),
                "balanced_accuracy": (balanced_row_loss, False),
            }
        else:
            # The accuracy weighted by the sample weights; the paths' early
            # stop counts every held-out row alike, so it does not run.
            weighed = _weighed(row_loss, score_w)
            rules = {None: (weighed, False), "accuracy": (weighed, False)}
        race_loss, path_stop = self._prune_rule(rules)
        unconverged, start = self._search(
            Xs,
            ys,
            cs,
            variants,
            problems_of,
            score_fold,
            "gammas",
            folds=folds,
            row_loss=race_loss,
            path_stop=path_stop,
        )
        if start is not None and grouped:
            # Back from the rows grouped by class to the rows as given.
            for k, s in enumerate(start):
                start[k] = np.empty_like(s)
                start[k][order] = s
        self.C_ = float(self.best_params_["C"])
        self.gamma_ = float(gammas[self.best_index_ % len(variants)])
        estimator = self._refit_estimator(
            SVC, C=self.C_, gamma=self.gamma_, class_weight=self.class_weight
        )
        self._finish(X, y, estimator, unconverged, start, weights_given)
        return self

    def _warm_refit(self) -> bool:
        # With 'balanced' each fold's boxes follow its own class counts, and
        # their average can leave the refit's boxes.
        balanced = isinstance(self.class_weight, str) and self.class_weight == "balanced"
        return super()._warm_refit() and not balanced

    def decision_function(self, X):
        """Decision values of the refitted best model.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The samples.

        Returns
        -------
        ndarray of shape (n_samples,) or (n_samples, n_classes)
            As :meth:`localsvm.SVC.decision_function`.
        """
        return self._best("decision_function", X)


@_search_docs
class SVRCV(RegressorMixin, _BaseSVMCV):
    """Epsilon-SVR with ``C``, ``gamma`` and ``epsilon`` chosen by cross-validation.

    Scores the grid ``Cs × epsilons × gammas`` as
    ``GridSearchCV(SVR(), {'C': Cs, 'epsilon': epsilons, 'gamma': gammas})``
    would, sharing the work as :class:`SVCCV` does: for each (ε, γ) and fold
    the ``2n``-variable ε-SVR dual is solved once along the increasing
    ``Cs``, each solve warm-started from the previous one (DeCoste &
    Wagstaff, "Alpha seeding for support vector machines", KDD 2000). The
    best candidate is refitted on all the data as a :class:`~localsvm.SVR`,
    started from its multipliers on the folds as :class:`SVCCV`'s refit
    is (within the same 64 MiB).

    Parameters
    ----------
    Cs : int or array-like of float, default=10
        The ``C`` values, or how many on the default grid 10⁻¹ … 10³
        (log-spaced), times the targets' standard deviation (the dual's
        coefficients carry the targets' scale).
    gammas : int or array-like of float, default=10
        The ``gamma`` values, or how many on the default grid
        γ_scale · 10⁻² … γ_scale · 10^1.5 (γ_scale = 1 / (n_features ·
        X.var()), scikit-learn's ``gamma='scale'``). Ignored for
        ``kernel='linear'``.
    epsilons : int or array-like of float, default=3
        The ``epsilon`` values (non-negative, as ``SVR``'s), or how many on
        the default grid 10^-2.5 … 10^-0.5 times the targets' standard
        deviation (the tube's width follows the targets' scale).
    cv : int, cross-validation generator or iterable, default=None
        The splits: None for 5 folds, an int for that many (``KFold``), or
        any scikit-learn splitter or list of ``(train, test)`` index pairs.
    scoring : str, callable or None, default=None
        A scikit-learn scorer; None is R².
    n_jobs : int or None, default=None
        Threads for the (ε, γ, fold) tasks; None or -1 for all CPUs.
    refit : bool, default=True
        Refit the best candidate on all the data (``best_estimator_``).
    random_state : int, RandomState or None, default=None
        With an int ``cv``, shuffles the samples before splitting them
        (None: no shuffling, as ``GridSearchCV``).
    {kernel_params}
    {solve_params}

    Attributes
    ----------
    C_ : float
        The chosen ``C``.
    gamma_ : float
        The chosen ``gamma``.
    epsilon_ : float
        The chosen ``epsilon``.
    best_score_ : float
        The chosen candidate's mean held-out score.
    best_params_ : dict
        ``{'C': C_, 'epsilon': epsilon_, 'gamma': gamma_}``.
    best_index_ : int
        The chosen candidate's index into ``cv_results_``.
    cv_results_ : dict of ndarray
        Per candidate, in ``GridSearchCV``'s layout (see :class:`SVCCV`).
    best_estimator_ : SVR
        The chosen candidate refitted on all the data (``refit=True``).
    {search_attributes}

    See Also
    --------
    localsvm.SVR : The regressor refitted with the chosen parameters.
    SVCCV : The same search for classification.

    Notes
    -----
    Memory: as :class:`SVCCV`'s (see its Notes); with a third-party
    solver backend, the copy of a fold's block of a shared matrix covers
    ``2 · n_train`` dual variables, up to ``32 · n²`` bytes per running
    task, so the peak is ``8 · n² · (2 + 5 · n_jobs)`` bytes.

    Examples
    --------
    >>> from sklearn.datasets import make_regression
    >>> from localsvm.tuning import SVRCV
    >>> X, y = make_regression(n_samples=100, n_features=4, noise=1.0, random_state=0)
    >>> reg = SVRCV(Cs=3, gammas=3, epsilons=2, cv=3).fit(X, y)
    >>> sorted(reg.best_params_) == ["C", "epsilon", "gamma"]
    True
    >>> len(reg.cv_results_["params"])
    18
    """

    _parameter_constraints: ClassVar[dict] = {
        **_BaseSVMCV._parameter_constraints,
        "epsilons": ["array-like", Interval(Integral, 1, None, closed="left")],
    }

    _block_factor: ClassVar[int] = 4

    def _non_finite_hint(self, smallest: int) -> str:
        if self.scoring in (None, "r2") and smallest < 2:
            return (
                " (R² needs at least two held-out rows, and a split of cv holds out "
                f"{smallest}: hold out more rows per split, or give a scoring defined on one "
                "row, such as 'neg_mean_squared_error')"
            )
        return ""

    def __init__(
        self,
        *,
        Cs=10,
        gammas=10,
        epsilons=3,
        cv=None,
        scoring=None,
        n_jobs=None,
        refit=True,
        random_state=None,
        verbose=0,
        kernel="rbf",
        degree=3,
        coef0=0.0,
        tol=1e-3,
        cv_tol=None,
        cache_size=200,
        max_iter=-1,
        shrinking=True,
        error_score=np.nan,
        backend="auto",
        kernel_matrix="auto",
        prune=2.0,
    ):
        store_params(self, locals())

    @restore_on_interrupt
    @fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Score every candidate by cross-validation and refit the best.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training examples.
        y : array-like of shape (n_samples,)
            Targets, finite numbers.
        {sample_weight_param}

        Returns
        -------
        self : SVRCV
            The fitted search.
        """
        X = prepare_input(X, native=True, who=type(self).__name__)
        X, y = validate_data(
            self, X, y, dtype=np.float64, order="C", accept_sparse="csr", y_numeric=True
        )
        y = np.asarray(y, dtype=np.float64)
        sw = None if sample_weight is None else positive_weights(sample_weight, y.size)
        with np.errstate(over="ignore", invalid="ignore"):
            scale = float(np.std(y)) or 1.0
        if not np.isfinite(scale):
            raise ValueError(
                f"the targets' spread overflows float64 (largest |y| = {np.max(np.abs(y)):.3g}): "
                "the default grids, epsilon's scale and the squared errors cannot be computed; "
                "scale y (e.g. divide it by its standard deviation)"
            )
        cs = _grid(self.Cs, "Cs", lambda k: _logspace(C_DECADES, k, scale))
        if np.unique(cs).size != cs.size:
            raise ValueError("Cs must not repeat a value")
        eps = _grid(
            self.epsilons, "epsilons", lambda k: _logspace(EPSILON_DECADES, k, scale), zero=True
        )
        gammas = self._gamma_grid(X)
        self._check_candidates(cs.size, eps.size * gammas.size, "Cs, epsilons and gammas")
        variants = [
            (
                self._spec(g),
                {"epsilon": float(e), "gamma": float(g) if self.kernel != "linear" else "scale"},
                float(e),
            )
            for e in eps
            for g in gammas
        ]
        scorer = self._scorer()

        def problems_of(train, valid, v):
            e = variants[v][2]
            if sw is not None:
                # Samples of weight 0 are left out of the fold's fits.
                train = train[sw[train] > 0]
            m = train.size
            yt = y[train]
            return [
                (
                    np.concatenate([train, train]),
                    np.concatenate([np.ones(m), -np.ones(m)]),
                    np.ones(2 * m) if sw is None else np.concatenate([sw[train], sw[train]]),
                    np.concatenate([e - yt, e + yt]),
                    y[valid],
                )
            ]

        def score_fold(decision, valid):
            pred = decision[:, 0]
            w = None if sw is None else sw[valid]
            if scorer is None:
                truth = y[valid]
                if w is not None and not w.sum() > 0:
                    return np.nan  # no held-out row weighs anything
                if truth.size < 2:
                    return np.nan  # R² is not defined on one row (r2_score's NaN)
                ss = float(np.sum(_times(w, (truth - np.average(truth, weights=w)) ** 2)))
                res = float(np.sum(_times(w, (truth - pred) ** 2)))
                if ss == 0.0:
                    return 1.0 if res == 0.0 else 0.0
                return 1.0 - res / ss
            kw = {} if w is None else {"sample_weight": w}
            return float(scorer(_DecidedRegressor(pred), X[valid], y[valid], **kw))

        def row_loss(decision, valid):
            return (decision[:, 0] - y[valid]) ** 2

        def absolute_loss(decision, valid):
            return np.abs(decision[:, 0] - y[valid])

        if sw is None:
            rules = {
                None: (row_loss, True),
                "r2": (row_loss, True),
                "neg_mean_squared_error": (row_loss, True),
                "neg_root_mean_squared_error": (row_loss, True),
                "neg_mean_absolute_error": (absolute_loss, False),
            }
        else:
            # The losses weighted by the sample weights; the paths' early
            # stop counts every held-out row alike, so it does not run.
            squared, absolute = _weighed(row_loss, sw), _weighed(absolute_loss, sw)
            rules = {
                None: (squared, False),
                "r2": (squared, False),
                "neg_mean_squared_error": (squared, False),
                "neg_root_mean_squared_error": (squared, False),
                "neg_mean_absolute_error": (absolute, False),
            }
        race_loss, path_stop = self._prune_rule(rules)
        unconverged, start = self._search(
            X,
            y,
            cs,
            [v[:2] for v in variants],
            problems_of,
            score_fold,
            "(epsilon, gamma)",
            row_loss=race_loss,
            path_stop=path_stop,
        )
        best = variants[self.best_index_ % len(variants)]
        self.C_ = float(self.best_params_["C"])
        self.epsilon_ = best[2]
        self.gamma_ = float(gammas[self.best_index_ % len(gammas)])
        estimator = self._refit_estimator(SVR, C=self.C_, epsilon=self.epsilon_, gamma=self.gamma_)
        self._finish(X, y, estimator, unconverged, start, sw)
        return self
