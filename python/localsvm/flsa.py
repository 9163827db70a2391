"""Sparse least-squares SVMs: ``FLSAClassifier``, ``RFLSAClassifier`` and
``FLSAClassifierCV``.

FLSA-SVM is X.-L. Xia et al., "A Novel Sparse Least Squares Support Vector
Machines", Mathematical Problems in Engineering 2013, Article ID 602341;
RFLSA-SVM, contexts inheritance and the model selection along the path are
X.-L. Xia, S. Qian, X. Liu and H. Xing, "Efficient Model Selection for Sparse
Least-Square SVMs", Mathematical Problems in Engineering 2013, Article ID
712437.

The model is ``f(x) = b + Σ_{j∈S} β_j K(x, x_j)``, the least-squares fit of
±1 targets on the kernel columns ``K[:, S]`` and a constant. ``S`` grows one
column at a time (forward selection) while the selected columns are kept
orthonormalised (Gram–Schmidt in the Rust core, ``rust/src/flsa.rs``):

* **FLSA** (``selection="greedy"``) adds the candidate with the largest
  reduction of the training error; one step costs one pass over the
  candidate columns, ``O(n · #candidates)``.
* **RFLSA** (``selection="random"``) draws a dictionary of
  ``dictionary_size`` random columns and takes them in that random order;
  one step costs ``O(n · |S|)`` and only the columns used are evaluated.

Candidates that become linearly dependent on the selected columns (relative
residue norm ≤ ``tol``) are pruned, so the number of support vectors
``n_support`` — the only regularisation parameter — is capped by the
numerical rank of the kernel matrix; the fit stops there with a warning.

**Contexts inheritance.** The factorisation for ``k`` support vectors is a
prefix of the one for any larger ``k``, so one fit keeps the whole path:
``path_`` (one :class:`FLSAPath` per binary model), the decision values of
every prefix (:meth:`~FLSAClassifier.path_decision_function`,
:meth:`~FLSAClassifier.staged_decision_function`) and the model at any ``k``
(:meth:`~FLSAClassifier.sparse_model`) without refitting.
:class:`FLSAClassifierCV` picks ``n_support`` by cross-validation with one
pass per fold.

**Memory.** Greedy selection reads every candidate column at every step.
``gram="precomputed"`` holds them: an ``n × m`` block of ``8·n·m`` bytes for
``m`` candidates (all ``n`` training points by default: 72 MB for
``n = 3000``, 800 MB for ``n = 10000``). ``gram="on_the_fly"`` holds no
kernel block and evaluates each candidate column again at each step
(``O(n · m · d)`` kernel work per step instead of ``O(n · m)`` reads);
``gram="auto"`` precomputes when the block fits in :data:`GRAM_AUTO_BYTES`
and in half of the available memory (``MemAvailable``). Every one-vs-rest
model fitted at once holds its own block and its orthonormal basis
(``8·n·(n_support + 1)`` bytes; twice that for 'random', plus a block of
up to 32 columns and a copy of the training data); when these would
need more than half of the available memory, ``fit`` raises ``MemoryError``
before computing anything, naming ``gram``, ``dictionary_size``,
``n_support`` or ``n_jobs``.
For large ``n`` the rectangular route is a smaller dictionary
(``dictionary_size``, greedy over ``m`` random candidates), or RFLSA, which
never needs more than ``n · n_support`` numbers (the orthonormal basis).
Multiclass problems are one-vs-rest: one path per class.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from numbers import Integral, Real
from typing import ClassVar

import numpy as np
from scipy.linalg import solve_triangular
from sklearn.model_selection import check_cv
from sklearn.utils import Bunch, check_random_state
from sklearn.utils.validation import check_is_fitted

from . import _core
from ._base import (
    BaseKernelClassifier,
    equal_weight_rows,
    fit_method,
    store_params,
)
from ._compat import Interval, RealNotInt, StrOptions
from ._docstrings import CLASSIFIER_ATTRIBUTES, X_PARTS, fill
from ._memory import check_memory, memory_budget
from ._multiclass import binary_index
from ._validation import encode_classes, validate_training_data
from .kernels import kernel_matrix as _kernel_matrix
from .parallel import effective_n_jobs, run_tasks

GRAM_AUTO_BYTES = 1 << 30

#: Why the FLSA estimators refuse unequal ``sample_weight`` (the messages').
WEIGHTS_WHY = (
    "the forward selection fits unweighted least squares: its orthonormal basis of "
    "kernel columns and its pruning test are computed on the columns as they are, where "
    "a weighted fit needs every column's rows scaled by sqrt(sample_weight)"
)
#: The estimators that take weights, for the messages.
WEIGHTS_INSTEAD = "SVC or CellSVC (CellSVC for large data)"
"""``gram="auto"`` holds the candidate block when it needs at most this many
bytes (1 GiB), else evaluates columns on the fly."""


class FLSARankWarning(UserWarning):
    """Warning that the forward pass stopped before ``n_support`` columns.

    Every remaining candidate was linearly dependent on the selected ones (or
    the dictionary ran out), so the models use fewer support vectors than
    asked for.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from localsvm import FLSAClassifier, FLSARankWarning
    >>> X = np.array([[0., 0.], [1., 0.], [0., 1.], [1., 1.], [2., 1.], [1., 2.]])
    >>> y = np.array([0, 0, 0, 1, 1, 1])
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     clf = FLSAClassifier(n_support=5, kernel="linear").fit(X, y)
    >>> caught[0].category is FLSARankWarning, clf.n_support_
    (True, array([2]))
    """


#: Docstring text shared by the FLSA classes: the papers, and the kernel and
#: selection parameters as RFLSA and the cross-validated estimator state them,
#: and ``verbose`` as FLSA and RFLSA state it.
_FLSA_PARTS = {
    "references": """\
References
----------
.. [1] X.-L. Xia et al., "A Novel Sparse Least Squares Support Vector
   Machines", Mathematical Problems in Engineering 2013, Article ID
   602341.
.. [2] X.-L. Xia, S. Qian, X. Liu and H. Xing, "Efficient Model Selection
   for Sparse Least-Square SVMs", Mathematical Problems in Engineering
   2013, Article ID 712437.""",
    "reference_contexts": """\
References
----------
.. [1] X.-L. Xia, S. Qian, X. Liu and H. Xing, "Efficient Model Selection
   for Sparse Least-Square SVMs", Mathematical Problems in Engineering
   2013, Article ID 712437.""",
    "verbose": """\
verbose : int, default=0
    Logging through :mod:`logging` (logger ``localsvm.flsa``): 0 logs
    nothing; 1 one line per forward pass (support vectors,
    time); 2 also the fit's steps. Records are emitted at level INFO;
    without any logging configuration they go to stderr.""",
    "column_params": """\
kernel : {'linear', 'poly', 'rbf', 'sigmoid', 'precomputed'}, default='rbf'
    The kernel whose columns are selected.
degree : int, default=3
    Degree of the 'poly' kernel.
gamma : {'scale', 'auto'} or float, default='scale'
    Coefficient of the 'poly', 'rbf' and 'sigmoid' kernels.
coef0 : float, default=0.0
    Constant term of the 'poly' and 'sigmoid' kernels.
tol : float, default=1e-6
    Relative residue norm under which a candidate is pruned.
gram : {'auto', 'precomputed', 'on_the_fly'}, default='auto'
    Whether greedy selection holds the candidate columns.""",
}


@fill(**_FLSA_PARTS)
@dataclass(frozen=True)
class FLSAPath:
    """One binary model's forward pass.

    The parameters are kept as attributes of the same names. The pass is the
    forward selection of Xia et al. [1]_; every prefix of it is a model
    (contexts inheritance, Xia, Qian, Liu & Xing [2]_).

    Parameters
    ----------
    support : ndarray of shape (k,)
        Training indices of the selected columns, in the order selected.
    R : ndarray of shape (k + 1, k + 1)
        Upper-triangular factor of ``[1, K[:, support]] = U R`` (constant
        column first).
    z : ndarray of shape (k + 1,)
        ``Uᵀ y``: the target's coordinates in the orthonormal basis.
    residual_sq : ndarray of shape (k + 1,)
        Training squared error ``‖y − f_j‖²`` of the model with ``j`` columns.
    n_pruned : int
        Candidates dropped as linearly dependent.
    exhausted : bool
        True when the rank (or the dictionary), not ``n_support``, ended it.

    {references}

    Examples
    --------
    >>> import numpy as np
    >>> from localsvm import FLSAClassifier
    >>> X = np.array([[0., 0.], [1., 0.], [0., 1.], [1., 1.], [2., 1.], [1., 2.]])
    >>> y = np.array([0, 0, 0, 1, 1, 1])
    >>> path = FLSAClassifier(n_support=1, kernel="linear").fit(X, y).path_[0]
    >>> len(path), path.support, np.round(path.residual_sq, 3)
    (1, array([3]), array([6.   , 1.091]))
    >>> b, beta = path.coef(1)
    >>> round(b, 3), np.round(beta, 3)
    (-1.364, array([0.818]))
    """

    support: np.ndarray
    R: np.ndarray
    z: np.ndarray
    residual_sq: np.ndarray
    n_pruned: int
    exhausted: bool

    def __len__(self) -> int:
        return int(self.support.shape[0])

    def coef(self, k: int) -> tuple[float, np.ndarray]:
        """Compute the coefficients of the model with the first ``k`` columns.

        A back-substitution ``R[:k+1, :k+1] (b, β) = z[:k+1]``.

        Parameters
        ----------
        k : int
            Number of columns; capped at the path's length.

        Returns
        -------
        intercept : float
            The constant ``b``.
        beta : ndarray of shape (min(k, len(self)),)
            The weight of each selected column, in ``support`` order.
        """
        k = min(int(k), len(self))
        sol = solve_triangular(self.R[: k + 1, : k + 1], self.z[: k + 1], lower=False)
        return float(sol[0]), sol[1:]


def _resolve_dictionary(dictionary_size, n: int) -> int:
    if dictionary_size is None:
        return n
    if isinstance(dictionary_size, Integral):
        if dictionary_size > n:
            raise ValueError(
                f"dictionary_size={dictionary_size} is larger than the number of training "
                f"examples ({n}); use at most {n} or a fraction in (0, 1]"
            )
        return int(dictionary_size)
    return max(1, round(float(dictionary_size) * n))


#: The core's column selection for each ``selection`` of the estimators.
_SELECTIONS = {"greedy": _core.FLSASelection.GREEDY, "in_order": _core.FLSASelection.IN_ORDER}

#: The core's holding of the candidate columns for each resolved ``gram``.
_GRAMS = {"precomputed": _core.FLSAGram.PRECOMPUTED, "on_the_fly": _core.FLSAGram.ON_THE_FLY}


def _forward_path(positive: int, shared) -> FLSAPath:
    """The forward pass for one target (class ``positive`` against the rest);
    a :func:`~localsvm.run_tasks` task, module-level so it pickles."""
    X, y_idx, cand, kernel, settings = shared
    target = np.where(y_idx == positive, 1.0, -1.0)
    options = _core.FLSAOptions(
        max_terms=settings["max_terms"],
        tol=settings["tol"],
        selection=_SELECTIONS[settings["selection"]],
        gram=_GRAMS[settings["gram"]],
    )
    res = _core.flsa_path(X, target, cand, kernel=kernel, options=options)
    return FLSAPath(
        support=res.selected.astype(np.intp),
        R=res.r,
        z=res.z,
        residual_sq=res.residual_sq,
        n_pruned=int(res.n_pruned),
        exhausted=bool(res.exhausted),
    )


def _describe_path(path: FLSAPath) -> str:
    """A log line's account of one forward pass."""
    return f"{len(path)} support vectors, {path.n_pruned} candidates pruned"


def _describe_fold(scores: np.ndarray) -> str:
    """A log line's account of one fold."""
    return f"best validation accuracy {float(np.max(scores)):.4f}"


def _score_fold(fold, shared) -> np.ndarray:
    """The validation accuracy of every stage of one fold's path (a
    :func:`~localsvm.run_tasks` task); a fold whose path stopped early keeps
    its last model's score for the remaining stages."""
    train, val = fold
    X, y, params, K = shared
    est = FLSAClassifier(**params)
    if params["kernel"] == "precomputed":
        X_tr, X_val = X[np.ix_(train, train)], X[np.ix_(val, train)]
    else:
        X_tr, X_val = X[train], X[val]
    est._validate_xy(X_tr, y[train])
    est._fit_paths(X_tr, y[train], K, warn=False)
    scores = est.path_score(X_val, y[val])
    return np.concatenate([scores, np.full(K + 1 - scores.size, scores[-1])])


def _check_fold_dictionary(dictionary_size, n: int, folds) -> None:
    """A dictionary given as a count must fit every cross-validation
    training fold, which holds fewer examples than the data."""
    if not isinstance(dictionary_size, Integral):
        return
    smallest = min(len(train) for train, _ in folds)
    if dictionary_size > smallest:
        raise ValueError(
            f"dictionary_size={dictionary_size} is larger than the smallest "
            f"cross-validation training fold ({smallest} of the {n} training "
            f"examples); use at most {smallest}, fewer folds (cv), or a fraction "
            "in (0, 1], which is taken of each fold's size"
        )


@fill(**X_PARTS, **_FLSA_PARTS, classifier_attributes=CLASSIFIER_ATTRIBUTES)
class FLSAClassifier(BaseKernelClassifier):
    """Forward least-squares approximation SVM (FLSA-SVM).

    The model is the least-squares fit of ±1 targets on ``n_support`` kernel
    columns chosen one at a time (Xia et al. [1]_); one fit keeps the whole
    regularisation path, every model with fewer columns, as the contexts
    inheritance of Xia, Qian, Liu & Xing [2]_ does.

    Parameters
    ----------
    n_support : int, default=30
        Number of support vectors (kernel columns) ``N_sv``: the
        regularisation parameter. The pass stops earlier, with a
        :class:`FLSARankWarning`, when the remaining candidates are linearly
        dependent on the selected ones.
    selection : {'greedy', 'random'}, default='greedy'
        'greedy': the column with the largest error reduction (FLSA);
        'random': the dictionary's columns in random order (RFLSA).
    dictionary_size : int, float or None, default=None
        Candidate columns: a number ``m ≤ n``, a fraction of ``n`` in (0, 1],
        or None for all ``n`` training points. Drawn at random (with
        ``random_state``) when smaller than ``n``.
    kernel : {'linear', 'poly', 'rbf', 'sigmoid', 'precomputed'}, default='rbf'
        The kernel whose columns are selected; 'precomputed' takes the square
        training kernel at fit.
    degree : int, default=3
        Degree of the 'poly' kernel.
    gamma : {'scale', 'auto'} or float, default='scale'
        As in :class:`localsvm.SVC`; the paper's RBF width σ is
        ``gamma = 1 / (2σ²)``.
    coef0 : float, default=0.0
        Constant term of the 'poly' and 'sigmoid' kernels.
    tol : float, default=1e-6
        A candidate is pruned once the norm of its component orthogonal to
        the selected columns is at most ``tol`` times its own norm. Values
        below ~1e-7 are not resolved by the downdated norms (rounding).
    gram : {'auto', 'precomputed', 'on_the_fly'}, default='auto'
        Greedy selection only: hold the ``n × m`` block of candidate columns
        (``8·n·m`` bytes) or evaluate them at every step (no block, ``d``
        times more work per step); 'auto' holds it up to
        :data:`GRAM_AUTO_BYTES` and half of the available memory. A block
        (with the bases) that needs more than half of the available memory
        raises ``MemoryError`` up front. Random selection always evaluates
        just the columns it uses.
    random_state : int, RandomState instance or None, default=None
        Draws the dictionary (and its order for 'random').
    n_jobs : int or None, default=None
        One-vs-rest models fitted at once (threads; the core releases the GIL).
    {verbose}

    {classifier_attributes}
    path_ : list of FLSAPath
        One per binary model (one for two classes, else one per class,
        one-vs-rest).
    support_ : ndarray of shape (n_SV,)
        Training indices of the support vectors of the active model (the
        union over the one-vs-rest models, sorted).
    support_vectors_ : ndarray of shape (n_SV, n_features)
        Empty, shape (0, 0), for a precomputed kernel.
    dual_coef_ : ndarray of shape (n_models, n_SV)
        β of each binary model over ``support_``.
    intercept_ : ndarray of shape (n_models,)
        Constant term of each binary model.
    n_support_ : ndarray of shape (n_models,)
        Support vectors each binary model uses (≤ ``n_support``).
    n_pruned_ : ndarray of shape (n_models,)
        Candidates each binary model's pass dropped as linearly dependent.
    gram_ : {'precomputed', 'on_the_fly'}
        How the candidate columns were held during the fit.

    Notes
    -----
    Weights: the model minimises the squared training error
    ``Σ_i (f(x_i) − y_i)²`` (Xia et al. [1]_), every example counting once,
    and takes no ``class_weight``. A weighted error ``Σ_i w_i (f(x_i) −
    y_i)²`` is still a least-squares problem (each row of the kernel columns
    and of the targets scaled by ``√w_i``), but the forward selection
    orthonormalises and prunes the columns as they are, in the Rust core, so
    it is not offered: ``fit`` takes ``sample_weight`` only to leave examples
    out (weight 0) or to weigh all of them alike, and refuses other weights
    with a ``ValueError`` naming :class:`localsvm.SVC` and
    :class:`localsvm.CellSVC`, which take both ``sample_weight`` and
    ``class_weight``.

    {references}

    Examples
    --------
    >>> from localsvm import FLSAClassifier
    >>> from localsvm.datasets import load_banana
    >>> d = load_banana()
    >>> clf = FLSAClassifier(n_support=30, gamma=1.0).fit(d.X_train, d.y_train)
    >>> clf.support_.shape, round(clf.score(d.X_test, d.y_test), 2) > 0.85
    ((30,), True)
    >>> path = clf.path_decision_function(d.X_test)   # models with 0..30 SVs
    >>> path.shape
    (31, 4900)
    """

    _parameter_constraints: ClassVar[dict] = {
        **BaseKernelClassifier._parameter_constraints,
        "n_support": [Interval(Integral, 1, None, closed="left")],
        "selection": [StrOptions({"greedy", "random"})],
        "dictionary_size": [
            Interval(Integral, 1, None, closed="left"),
            Interval(RealNotInt, 0.0, 1.0, closed="right"),
            None,
        ],
        "tol": [Interval(Real, 0.0, 1.0, closed="neither")],
        "gram": [StrOptions({"auto", "precomputed", "on_the_fly"})],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        *,
        n_support=30,
        selection="greedy",
        dictionary_size=None,
        kernel="rbf",
        degree=3,
        gamma="scale",
        coef0=0.0,
        tol=1e-6,
        gram="auto",
        random_state=None,
        n_jobs=None,
        verbose=0,
    ):
        store_params(self, locals())

    # ------------------------------------------------------------------ fit

    def _validate_xy(self, X, y, sample_weight=None):
        """The training data, less the examples of weight 0. ``_kept_rows``
        keeps the indices of those left (None: all of them) and
        ``_given_shape`` the shape of ``X`` as given, so that the fitted
        model speaks of the examples given to ``fit``."""
        self._check_kernel_callable()
        X, y = validate_training_data(self, X, y, precomputed=self._precomputed)
        self._given_shape = X.shape
        self._kept_rows = None
        if sample_weight is not None:
            y_idx = encode_classes(self, y)
            X, y, _, self._kept_rows = equal_weight_rows(
                self, X, y, y_idx, sample_weight, WEIGHTS_WHY, WEIGHTS_INSTEAD
            )
        return X, y

    def _fit_paths(self, X, y, n_terms: int, *, warn: bool = True, report=None) -> None:
        """Validated data in, ``path_`` and the private state out; the
        forward passes are subtasks of ``report`` (a FitReport) if given."""
        y_idx = encode_classes(self, y)
        n_classes = self.classes_.shape[0]
        n = X.shape[0]
        m = _resolve_dictionary(self.dictionary_size, n)
        rng = check_random_state(self.random_state)
        selection = self.selection
        if selection == "random":
            candidates = rng.permutation(n)[:m]
        elif m < n:
            candidates = np.sort(rng.choice(n, size=m, replace=False))
        else:
            candidates = np.arange(n)
        spec = self._resolve_kernel(X)
        # Every path fitted at once holds its candidate block (8·n·m bytes
        # with gram='precomputed') and its basis (8·n per term, twice that in
        # the in-order pass).
        at_once = min(1 if n_classes == 2 else n_classes, effective_n_jobs(self.n_jobs))
        block = 8.0 * n * m
        basis = 8.0 * n * (min(int(n_terms), m) + 1)
        if selection == "random":
            # The in-order pass keeps the basis twice (column-major and in
            # panels of eight rows), computes its columns a block of up to 32
            # at a time, and reads the rows from a copy transposed into panels of eight.
            basis = 2 * basis + 8.0 * n * min(32, int(n_terms), m)
            basis += 0.0 if spec.precomputed else 8.0 * X.size
        if selection == "random":
            gram = "on_the_fly"
        elif self.gram == "auto":
            fits = at_once * (block + basis) <= memory_budget()
            gram = "precomputed" if block <= GRAM_AUTO_BYTES and fits else "on_the_fly"
        else:
            gram = self.gram
        if spec.precomputed:
            gram = "precomputed"
        self.gram_ = gram
        if gram == "precomputed":
            hint = (
                "use fewer candidates (dictionary_size)"
                if spec.precomputed
                else "use gram='on_the_fly' (columns computed when needed) or fewer "
                "candidates (dictionary_size)"
            )
            check_memory(
                at_once * block,
                f"the {n} × {m} block of candidate columns"
                + (f" ({at_once} one-vs-rest models at once)" if at_once > 1 else ""),
                hint + ("" if at_once == 1 else ", or n_jobs=1"),
            )
        check_memory(
            at_once * (basis + (block if gram == "precomputed" else 0.0)),
            f"the orthonormal basis of {min(int(n_terms), m) + 1} columns of {n} values"
            + (" with the candidate block" if gram == "precomputed" else ""),
            "use a smaller n_support" + ("" if at_once == 1 else " or n_jobs=1"),
        )
        # One path per target: class 1 against class 0 for two classes, else
        # each class against the rest. The data travels once per batch.
        positives = [1] if n_classes == 2 else list(range(n_classes))
        settings = dict(
            max_terms=int(n_terms),
            tol=float(self.tol),
            selection="greedy" if selection == "greedy" else "in_order",
            gram=gram,
        )
        cand = candidates.astype(np.int64)
        hooks = {}
        if report is not None:
            report.subtasks("forward-pass", len(positives))
            hooks = report.hooks(_describe_path)
            report.log(
                2,
                "%s: %d forward passes over %d candidates, up to %d support vectors, gram %r",
                type(self).__name__,
                len(positives),
                m,
                n_terms,
                gram,
            )
        self.path_ = run_tasks(
            _forward_path,
            positives,
            n_jobs=self.n_jobs,
            shared=(X, y_idx, cand, spec.core(), settings),
            **hooks,
        )
        short = [len(p) for p in self.path_ if len(p) < n_terms]
        if warn and short:
            warnings.warn(
                f"n_support={n_terms} exceeds what the data supports: the forward pass "
                f"stopped at {min(short)} support vectors because every remaining "
                f"candidate (of {m}) is linearly dependent on the selected ones (tol="
                f"{self.tol}); the models use at most {max(len(p) for p in self.path_)}.",
                FLSARankWarning,
                stacklevel=3,
            )
        rows = np.unique(np.concatenate([p.support for p in self.path_]))
        self._path_X = None if spec.precomputed else X[rows]
        kept = getattr(self, "_kept_rows", None)
        if kept is not None:
            # Indices into the examples given to fit, not those kept.
            self.path_ = [
                dataclasses.replace(p, support=kept[p.support].astype(np.intp)) for p in self.path_
            ]
            rows = kept[rows].astype(np.intp)
        self._path_rows = rows
        self.n_pruned_ = np.array([p.n_pruned for p in self.path_])
        self.shape_fit_ = getattr(self, "_given_shape", X.shape)

    @fit_method
    def fit(self, X, y, sample_weight=None):
        """Fit the path up to ``n_support`` support vectors.

        The active model (``support_``, ``dual_coef_``, ...) is the one with
        ``n_support`` of them.

        {X_train_parameters}
        y : array-like of shape (n_samples,)
            Class labels.
        sample_weight : array-like of shape (n_samples,), default=None
            Only leaves examples out: those of weight ``<= 0`` are dropped,
            and the others must share one weight (``ValueError`` otherwise;
            see Notes).

        Returns
        -------
        self : FLSAClassifier
            The fitted estimator.
        """
        X, y = self._validate_xy(X, y, sample_weight)
        report = self._fit_report(1 if np.unique(y).size == 2 else np.unique(y).size, X, y)
        self._fit_paths(X, y, self.n_support, report=report)
        self._activate(self.n_support)
        report.end(X, y)
        return self

    # ------------------------------------------------------------- the path

    def sparse_model(self, k: int) -> Bunch:
        """Read the model with ``k`` support vectors off the fitted path.

        No refitting is needed: the factorisation for ``k`` columns is a
        prefix of the fitted one.

        Parameters
        ----------
        k : int
            Number of support vectors; each binary model is capped at its
            path's length.

        Returns
        -------
        Bunch
            ``support_``, ``support_vectors_``, ``dual_coef_``, ``intercept_``
            and ``n_support_``, as the fitted attributes of the same names.
        """
        check_is_fitted(self)
        k = int(k)
        if k < 0:
            raise ValueError(f"k must be a non-negative number of support vectors, got {k}")
        coefs = [p.coef(k) for p in self.path_]
        used = [p.support[: min(k, len(p))] for p in self.path_]
        support = np.unique(np.concatenate(used)).astype(np.intp)
        dual = np.zeros((len(self.path_), support.size))
        for row, (sup, (_, beta)) in enumerate(zip(used, coefs, strict=True)):
            dual[row, np.searchsorted(support, sup)] = beta
        if self._path_X is None:
            sv = np.empty((0, 0))
        else:
            sv = self._path_X[np.searchsorted(self._path_rows, support)]
        return Bunch(
            support_=support,
            support_vectors_=sv,
            dual_coef_=dual,
            intercept_=np.array([b for b, _ in coefs]),
            n_support_=np.array([u.size for u in used]),
        )

    def _activate(self, k: int) -> None:
        model = self.sparse_model(k)
        self.support_ = model.support_
        self.support_vectors_ = model.support_vectors_
        self.dual_coef_ = model.dual_coef_
        self.intercept_ = model.intercept_
        self.n_support_ = model.n_support_

    def _columns(self, X, rows: np.ndarray) -> np.ndarray:
        """``K(X, x_rows)`` for training rows among the path's support vectors."""
        if self._spec.precomputed:
            return X[:, rows]
        sv = self._path_X[np.searchsorted(self._path_rows, rows)]
        if rows.size == 0:
            return np.zeros((X.shape[0], 0))
        return _kernel_matrix(self._spec, X, sv)

    def _check_X(self, X):
        X = self._predict_prologue(X)
        if self._spec.precomputed and X.shape[1] != self.shape_fit_[0]:
            raise ValueError(
                f"X must be the kernel between the samples and the {self.shape_fit_[0]} "
                f"training samples, got shape {X.shape}"
            )
        return X

    def _format(self, dec: np.ndarray) -> np.ndarray:
        return dec[..., 0] if self.classes_.shape[0] == 2 else dec

    def decision_function(self, X):
        """Evaluate the decision function of the active model.

        {X_predict_parameters}

        Returns
        -------
        ndarray of shape (n_samples,) or (n_samples, n_classes)
            Two classes: one value per sample, positive for ``classes_[1]``;
            else one column per class (one-vs-rest).
        """
        X = self._check_X(X)
        dec = self._columns(X, self.support_) @ self.dual_coef_.T + self.intercept_
        return self._format(dec)

    def predict(self, X):
        """Predict the class of each sample with the active model.

        {predict_sections}
        """
        return self._labels(self.decision_function(X))

    def _labels(self, dec: np.ndarray) -> np.ndarray:
        """Labels from decision values (of one model or a path of them):
        the shared rules of :mod:`localsvm._multiclass`."""
        if self.classes_.shape[0] == 2:
            return self.classes_[binary_index(dec)]
        return self.classes_[np.argmax(dec, axis=-1)]

    def path_decision_function(self, X, max_n_support: int | None = None) -> np.ndarray:
        """Evaluate every model along the path, from one kernel evaluation.

        With ``u(x) = [1, K(x, S)] R⁻¹`` (a triangular solve), the model
        with ``k`` columns is ``Σ_{j≤k} z_j u_j(x)``: a cumulative sum.

        {X_predict_parameters}
        max_n_support : int or None, default=None
            Largest number of support vectors evaluated; None goes to the
            end of the longest path.

        Returns
        -------
        ndarray of shape (K + 1, n_samples) or (K + 1, n_samples, n_classes)
            Entry ``k`` holds the decision values of the model with ``k``
            support vectors (``k = 0``: the constant); ``K`` is the longest
            path's length (or ``max_n_support``). A binary model whose path is
            shorter keeps its last value.
        """
        if max_n_support is not None and (
            isinstance(max_n_support, bool)
            or not isinstance(max_n_support, Integral)
            or max_n_support < 0
        ):
            raise ValueError(
                f"max_n_support must be a non-negative int or None, got {max_n_support!r}"
            )
        X = self._check_X(X)
        longest = max(len(p) for p in self.path_)
        K = longest if max_n_support is None else min(int(max_n_support), longest)
        if len(self.path_) == 1:
            # One path (two classes): its columns in its own order.
            p = self.path_[0]
            k = min(K, len(p))
            return self._staged(p, self._path_phi(X, p.support[:k]), k).T
        cols = self._path_phi(X, self._path_rows)
        out = np.empty((K + 1, X.shape[0], len(self.path_)))
        for c, p in enumerate(self.path_):
            k = min(K, len(p))
            phi = cols[np.searchsorted(self._path_rows, p.support[:k])]
            staged = self._staged(p, phi, k)
            out[: k + 1, :, c] = staged.T
            out[k + 1 :, :, c] = staged[:, -1]
        return out

    def _path_phi(self, X, support: np.ndarray) -> np.ndarray:
        """``K(x_s, X)`` for the training rows ``s`` in ``support`` (among the
        path's support vectors), one row per support vector, in that order."""
        if self._spec.precomputed:
            return np.ascontiguousarray(X[:, support].T)
        if support.size == 0:
            return np.zeros((0, X.shape[0]))
        sv = self._path_X[np.searchsorted(self._path_rows, support)]
        return _kernel_matrix(self._spec, sv, X)

    @staticmethod
    def _staged(path: FLSAPath, phi: np.ndarray, k: int) -> np.ndarray:
        """The decision values of ``path``'s models with ``0..k`` columns,
        shape ``(n_samples, k + 1)``: ``u = R⁻ᵀ [1, φ]`` by forward
        substitution, a tile of points and a block of stages at a time in the
        core, then ``Σ_{j≤k} z_j u_j``."""
        return _core.flsa_staged(phi, path.R, path.z, k + 1)

    def staged_decision_function(self, X) -> Iterator[np.ndarray]:
        """Yield the decision values for ``n_support = 1, 2, …``.

        As scikit-learn's ``staged_*`` methods, one model of the path at a
        time.

        {X_predict_parameters}

        Yields
        ------
        ndarray of shape (n_samples,) or (n_samples, n_classes)
            The decision values of the next model along the path, as
            :meth:`decision_function` returns them.
        """
        yield from self.path_decision_function(X)[1:]

    def staged_predict(self, X) -> Iterator[np.ndarray]:
        """Yield the predicted labels for ``n_support = 1, 2, …``.

        {X_predict_parameters}

        Yields
        ------
        ndarray of shape (n_samples,)
            The labels the next model along the path predicts.
        """
        for dec in self.staged_decision_function(X):
            yield self._labels(dec)

    def path_score(self, X, y) -> np.ndarray:
        """Score every model along the path on ``(X, y)``.

        {X_predict_parameters}
        y : array-like of shape (n_samples,)
            True labels.

        Returns
        -------
        ndarray of shape (K + 1,)
            The accuracy of each model; the index is its number of support
            vectors.
        """
        y = np.asarray(y)
        if len(self.path_) == 1 and y.ndim == 1:
            # Two classes: the core counts each model's correct signs.
            X = self._check_X(X)
            if y.shape[0] != X.shape[0]:
                raise ValueError(f"y has {y.shape[0]} labels but X has {X.shape[0]} samples")
            p = self.path_[0]
            target = np.where(
                y == self.classes_[1], 1.0, np.where(y == self.classes_[0], -1.0, 0.0)
            )
            phi = self._path_phi(X, p.support)
            counts = _core.flsa_staged_correct(phi, p.R, p.z, len(p) + 1, target)
            return counts / max(X.shape[0], 1)
        correct = self._labels(self.path_decision_function(X)) == y
        return correct.mean(axis=1)


@fill(**_FLSA_PARTS)
class RFLSAClassifier(FLSAClassifier):
    """Reduced FLSA-SVM: :class:`FLSAClassifier` with ``selection='random'``.

    A dictionary of ``dictionary_size`` random training columns (all of them
    by default) is taken in random order (Xia, Qian, Liu & Xing [1]_);
    columns dependent on the selected ones are skipped. A step costs
    ``O(n · k)`` and the kernel matrix needed is the ``n × m`` dictionary at
    most (only the columns used are ever evaluated). ``random_state`` fixes
    the dictionary and its order. The fitted attributes and methods are those
    of :class:`FLSAClassifier`.

    Parameters
    ----------
    n_support : int, default=30
        Number of support vectors ``N_sv``, as in :class:`FLSAClassifier`.
    selection : {'greedy', 'random'}, default='random'
        How columns are chosen, as in :class:`FLSAClassifier`.
    dictionary_size : int, float or None, default=None
        Candidate columns: a number, a fraction of ``n`` or None for all.
    {column_params}
    random_state : int, RandomState instance or None, default=None
        Draws the dictionary and its order.
    n_jobs : int or None, default=None
        One-vs-rest models fitted at once (threads).
    {verbose}

    {reference_contexts}

    Examples
    --------
    >>> from localsvm import RFLSAClassifier
    >>> from localsvm.datasets import load_banana
    >>> d = load_banana()
    >>> clf = RFLSAClassifier(n_support=40, gamma=1.0, random_state=0)
    >>> round(clf.fit(d.X_train, d.y_train).score(d.X_test, d.y_test), 2) > 0.8
    True
    """

    def __init__(
        self,
        *,
        n_support=30,
        selection="random",
        dictionary_size=None,
        kernel="rbf",
        degree=3,
        gamma="scale",
        coef0=0.0,
        tol=1e-6,
        gram="auto",
        random_state=None,
        n_jobs=None,
        verbose=0,
    ):
        store_params(self, locals())


@fill(**X_PARTS, **_FLSA_PARTS)
class FLSAClassifierCV(FLSAClassifier):
    """FLSA / RFLSA with ``n_support`` chosen by cross-validation along the path.

    One forward pass per fold (folds run through :func:`localsvm.run_tasks`)
    scores every ``k ≤ n_support`` at once, thanks to contexts inheritance
    (Xia, Qian, Liu & Xing [1]_), then one pass on all the data gives the
    model at the best ``k``.

    Parameters
    ----------
    n_support : int, default=30
        The largest number of support vectors tried.
    selection : {'greedy', 'random'}, default='greedy'
        How columns are chosen, as in :class:`FLSAClassifier`.
    dictionary_size : int, float or None, default=None
        Candidate columns: a number, a fraction of ``n`` or None for all.
        A number must not exceed the smallest cross-validation training fold
        (``ValueError`` otherwise); a fraction is taken of each fold's size.
    {column_params}
    cv : int, cross-validation generator or iterable, default=5
        As scikit-learn's ``cv``: an int for stratified k-fold, a splitter or
        an iterable of (train, validation) index arrays (rows of ``X`` as
        given to :meth:`fit`; those of ``sample_weight`` 0 are left out of
        them). An int or a splitter splits the rows of positive weight.
    random_state : int, RandomState instance or None, default=None
        Draws the dictionary (and its order for 'random').
    n_jobs : int or None, default=None
        Folds (and one-vs-rest models) fitted at once (threads).
    verbose : int, default=0
        Logging through :mod:`logging` (logger ``localsvm.flsa``): 0 logs
        nothing; 1 one line per forward pass and per fold (support vectors,
        time); 2 also the fit's steps. Records are emitted at level INFO;
        without any logging configuration they go to stderr.

    Attributes
    ----------
    cv_scores_ : ndarray of shape (n_folds, n_support + 1)
        Validation accuracy of each fold's model with ``k`` support vectors.
    mean_cv_scores_ : ndarray of shape (n_support + 1,)
    best_n_support_ : int
        The smallest ``k ≥ 1`` with the best mean validation accuracy. A
        ``UserWarning`` says when that accuracy is within two standard
        errors of predicting the majority class (the choice is then noise).
    path_, support_, dual_coef_, intercept_ : see FLSAClassifier
        As in :class:`FLSAClassifier`, for the model at ``best_n_support_``
        (``path_`` runs up to ``n_support``).

    {reference_contexts}

    Examples
    --------
    >>> from localsvm import FLSAClassifierCV
    >>> from localsvm.datasets import load_banana
    >>> d = load_banana()
    >>> clf = FLSAClassifierCV(n_support=40, gamma=1.0, cv=3).fit(d.X_train, d.y_train)
    >>> 1 <= clf.best_n_support_ <= 40 and clf.cv_scores_.shape == (3, 41)
    True
    """

    _parameter_constraints: ClassVar[dict] = {
        **FLSAClassifier._parameter_constraints,
        "cv": ["cv_object"],
    }

    def __init__(
        self,
        *,
        n_support=30,
        selection="greedy",
        dictionary_size=None,
        kernel="rbf",
        degree=3,
        gamma="scale",
        coef0=0.0,
        tol=1e-6,
        gram="auto",
        cv=5,
        random_state=None,
        n_jobs=None,
        verbose=0,
    ):
        store_params(self, locals())

    def _warn_if_chance(self, y, K: int) -> None:
        """Warn when no ``k`` validates better than predicting the majority
        class (within two standard errors of that rate over the ``n``
        validation predictions): the choice of ``best_n_support_`` is then
        noise, and the model, with few support vectors, fits even the
        training data poorly. Seen on 200 random sparse rows of 100 000
        features: the RBF kernel is nearly a constant plus the identity, so
        each support vector fits about one example, and the CV model
        reached a training accuracy of 0.54 while FLSA with 30 reached 0.69
        and SVC 1.00."""
        _, counts = np.unique(y, return_counts=True)
        majority = counts.max() / y.size
        noise = 2.0 * np.sqrt(majority * (1.0 - majority) / y.size)
        best = self.best_n_support_
        score = float(self.mean_cv_scores_[best])
        if best and score <= majority + noise:
            warnings.warn(
                f"cross-validation found no n_support that beats chance: the best mean "
                f"validation accuracy, {score:.3f} (n_support={best} of {K}), is within "
                f"two standard errors ({noise:.3f}) of predicting the majority class "
                f"({majority:.3f}), so the choice is noise and the model, with "
                f"{best} support vectors, may fit even the training data poorly. The "
                "kernel's columns do not generalise on this data (e.g. nearly "
                "independent examples, as with very many sparse features): check the "
                "features' scaling and gamma, or fix n_support with FLSAClassifier",
                UserWarning,
                stacklevel=3,
            )

    def _folds(self, X, y) -> list:
        """The cross-validation folds over the rows kept (``X``, ``y``). An
        int or a splitter splits them; (train, test) index arrays name rows
        of ``X`` as given to :meth:`fit`, so with rows of weight 0 left out
        they are mapped onto the rows kept."""
        kept = getattr(self, "_kept_rows", None)
        cv = self.cv
        if kept is None or cv is None or isinstance(cv, Integral) or hasattr(cv, "split"):
            return list(check_cv(cv, y, classifier=True).split(X, y))
        where = np.full(self._given_shape[0], -1, dtype=np.intp)
        where[kept] = np.arange(kept.size)
        folds = []
        for k, (train, test) in enumerate(cv):
            parts = []
            for part in (train, test):
                part = np.asarray(part)
                rows = where[np.flatnonzero(part) if part.dtype == bool else part]
                parts.append(rows[rows >= 0])
            if parts[0].size == 0 or parts[1].size == 0:
                raise ValueError(
                    f"cv fold {k} has no example of positive sample_weight in its "
                    f"{'training' if parts[0].size == 0 else 'test'} rows"
                )
            folds.append(tuple(parts))
        return folds

    @fit_method
    def fit(self, X, y, sample_weight=None):
        """Choose ``n_support`` by cross-validation, then fit on all the data.

        Every ``k ≤ n_support`` is scored on each fold; the path fitted on all
        the data is then activated at the best ``k``.

        {X_train_parameters}
        y : array-like of shape (n_samples,)
            Class labels.
        sample_weight : array-like of shape (n_samples,), default=None
            Only leaves examples out, as in :meth:`FLSAClassifier.fit`.

        Returns
        -------
        self : FLSAClassifierCV
            The fitted estimator.
        """
        X, y = self._validate_xy(X, y, sample_weight)
        folds = self._folds(X, y)
        _check_fold_dictionary(self.dictionary_size, X.shape[0], folds)
        params = {k: v for k, v in self.get_params().items() if k not in ("cv", "verbose")}
        K = int(self.n_support)
        # One subtask per fold, then the refit on all the data.
        report = self._fit_report(len(folds) + 1, X, y)
        report.subtasks("fold", len(folds))
        self.cv_scores_ = np.array(
            run_tasks(
                _score_fold,
                folds,
                n_jobs=self.n_jobs,
                shared=(X, y, params, K),
                **report.hooks(_describe_fold),
            )
        )
        self.mean_cv_scores_ = self.cv_scores_.mean(axis=0)
        refit = report.child("refit", max_subtasks=None)
        refit.begin(X, y)
        self._fit_paths(X, y, K, report=refit)
        refit.end(X, y)
        longest = max(len(p) for p in self.path_)
        best = 1 + int(np.argmax(self.mean_cv_scores_[1 : longest + 1])) if longest else 0
        self.best_n_support_ = best
        self._activate(best)
        self._warn_if_chance(y, K)
        report.log(1, "FLSAClassifierCV fit: best n_support %d of %d", best, K)
        report.end(X, y)
        return self
