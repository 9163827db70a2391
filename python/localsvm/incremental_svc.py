"""``localsvm.IncrementalSVC``: an online kernel SVM learnt one example at a
time by local re-optimisation (LISVM), with ``partial_fit``.

Each binary learner keeps the examples worth reconsidering, their multipliers
α, the kernel expansion ``g_i = Σ_j α_j y_j K(x_j, x_i)`` on them and the
bias ``b``, so that ``f(x_i) = g_i + b`` is known without a kernel sum. A new
example that the current machine classifies with margin (``y f(x) ≥ 1``)
changes nothing. Otherwise a working set grows from the new example and its
nearest neighbours in input space, among the examples of the band; the dual
is re-optimised over the working set only (the other multipliers fixed, the
equality constraint kept), until the slack criterion ``‖ξ‖² / t`` falls under
``threshold``. See :class:`IncrementalSVC`.

The update itself is written once, in the Rust core
(``rust/src/incremental/``, ``localsvm._core.IncrementalLearner``); a
backend provides it through ``online_learner`` (``capabilities.online``).
This module validates the stream, drives one learner per binary problem and
assembles the fitted attributes.
"""

from __future__ import annotations

import time
import warnings
import weakref
from dataclasses import dataclass
from numbers import Integral, Real
from typing import ClassVar

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from ._base import (
    FEATURE_KERNELS,
    BaseSVMClassifier,
    equal_weight_rows,
    fit_method,
    store_params,
)
from ._compat import Interval, StrOptions, fit_context
from ._multiclass import (
    BinaryModelsMixin,
    assemble,
    binary_tasks,
    problem_classes,
)
from ._validation import finite_sample_weight, prepare_input, reject_dask
from .backends.base import QPProblem, SolverBackend
from .backends.select import select_backend
from .kernels import KernelSpec, decision_values
from .parallel import run_tasks

#: The fitted attributes built from the learners' state (after partial_fit,
#: when first read).
_ASSEMBLED = (
    "support_",
    "support_vectors_",
    "n_support_",
    "_model_coef",
    "_model_intercept",
    "n_iter_",
    "dual_coef_",
    "intercept_",
)

#: Columns of :attr:`IncrementalSVC.history_`.
HISTORY_FIELDS = (
    "learner",
    "n_seen",
    "updated",
    "neighbourhood",
    "n_solves",
    "reached",
    "criterion",
    "n_support",
    "n_stored",
    "time",
)


@dataclass
class _Context:
    """What a binary learner needs from its estimator for one ``partial_fit``
    call (not stored in the learner, so a pickled model holds no backend)."""

    spec: KernelSpec
    C: float
    threshold: float
    epsilon: float
    max_neighbors: int
    neighbor_step: int
    reprocess: int
    rebatch: bool
    max_support: int | None
    #: The backend's solver settings (tol, max_iter, this learner's share of
    #: cache_size), from ``backend.online_settings``.
    settings: object
    backend: SolverBackend


@dataclass
class _CallStats:
    """Per call: updates whose neighbourhood hit ``max_neighbors`` before
    the criterion fell under the threshold, and unconverged solves."""

    capped: int = 0
    updates: int = 0
    solves: int = 0
    unconverged: int = 0


def _describe_learn(result) -> str:
    """A log line's account of one binary model's batch."""
    stats = result[1]
    return f"{stats.updates} updates, {stats.solves} solves, {stats.unconverged} not converged"


_HISTORY_DTYPES = (np.intp, np.int64, bool, np.intp, np.intp, bool, float, np.intp, np.intp, float)


def _history_columns(rows: list[tuple]) -> dict[str, np.ndarray]:
    cols = list(zip(*rows, strict=True)) if rows else [()] * len(HISTORY_FIELDS)
    return {
        name: np.asarray(col, dtype=dt)
        for name, col, dt in zip(HISTORY_FIELDS, cols, _HISTORY_DTYPES, strict=True)
    }


#: Each estimator's backend and the settings it was chosen for (see
#: ``IncrementalSVC._online_backend``).
_BACKENDS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

#: Each estimator's learner context and the settings it was built for (see
#: ``IncrementalSVC._context``).
_CONTEXTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

#: The parameters a learner context is built from, besides the backend, the
#: kernel and the shape of the model.
_CONTEXT_PARAMS = (
    "C",
    "threshold",
    "epsilon",
    "max_neighbors",
    "neighbor_step",
    "reprocess",
    "strategy",
    "max_support",
    "tol",
    "max_iter",
    "cache_size",
)


class _Binary:
    """One binary online SVM, learnt by the backend's online learner (the
    Rust core's ``IncrementalLearner`` for the built-in backend), every step
    of a batch in one call. The learner's state (``X``, ``y``, ``cls``,
    ``seen``, ``alpha``, ``g``, ``alive``, ``b``, ``t``, ``n``, ``n_iter``,
    ``n_support``, ``n_alive``) is read through the same attribute names."""

    def __init__(self, native, learner: int) -> None:
        self.native = native
        self.learner = learner
        self._history: list[dict[str, np.ndarray]] = []

    def __getattr__(self, name):
        # X, y, cls, seen, alpha, g, alive, b, t, n, n_iter, n_support, n_alive
        if name in {"native", "learner", "_history"}:
            raise AttributeError(name)
        return getattr(self.native, name)

    def support(self) -> np.ndarray:
        """Store indices of the support vectors (α > 0, alive)."""
        return np.asarray(self.native.support(), dtype=np.intp)

    def learn(self, Xb, labels, cls, seen, ctx: _Context, stats: _CallStats) -> None:
        """Learn the rows of ``Xb`` in order, in one native call."""
        res = self.native.learn(
            Xb,
            np.ascontiguousarray(labels, dtype=np.float64),
            np.ascontiguousarray(cls, dtype=np.int64),
            np.ascontiguousarray(seen, dtype=np.int64),
            options=_options(ctx),
            settings=ctx.settings,
        )
        stats.capped += res.capped
        stats.updates += res.updates
        stats.solves += res.solves
        stats.unconverged += res.unconverged
        # The columns as the core returned them, converted when history_ is
        # read: a stream of one-row calls pays for none of it meanwhile.
        self._history.append(_call_history(res, seen))

    def history_arrays(self) -> dict[str, np.ndarray]:
        """Every call's history, as columns (see :data:`HISTORY_FIELDS`)."""
        if not self._history:
            return _history_columns([])
        return {
            k: np.concatenate([self._call_columns(h)[k] for h in self._history])
            for k in HISTORY_FIELDS
        }

    def _call_columns(self, call) -> dict[str, np.ndarray]:
        """One call's history as typed columns; ``call`` is what
        :meth:`learn` kept, ``(start, stop, columns)`` (this learner's
        slice of columns shared by every learner of a batch, from
        ``IncrementalSVC._learn_many``), or (in models pickled before
        either) the columns themselves."""
        if isinstance(call, dict):
            return call
        if len(call) == 3:
            start, stop, shared = call
            call = tuple(col[start:stop] for col in shared)
        seen = np.asarray(call[0], dtype=np.int64)
        cols = (np.full(seen.shape[0], self.learner), seen, *call[1:])
        return {
            k: np.asarray(v, dtype=dt)
            for k, v, dt in zip(HISTORY_FIELDS, cols, _HISTORY_DTYPES, strict=True)
        }


def _call_history(res, seen) -> tuple:
    """A native call's history columns, as the core returned them, over the
    rows at stream positions ``seen``."""
    return (
        seen,
        res.updated,
        res.neighbourhood,
        res.n_solves,
        res.reached,
        res.criterion,
        res.n_support,
        res.n_stored,
        res.time,
    )


def _options(ctx: _Context):
    """The backend's update options for ``ctx``."""
    return ctx.backend.online_options(
        C=ctx.C,
        threshold=ctx.threshold,
        epsilon=ctx.epsilon,
        max_neighbors=ctx.max_neighbors,
        neighbor_step=ctx.neighbor_step,
        reprocess=ctx.reprocess,
        max_support=ctx.max_support,
        rebatch=ctx.rebatch,
    )


#: The name pickles written before the learner had a single implementation
#: refer to.
_NativeBinary = _Binary


def _learn_task(task):
    learner, Xb, labels, cls, seen, ctx = task
    stats = _CallStats()
    learner.learn(Xb, labels, cls, seen, ctx, stats)
    return learner, stats


class IncrementalSVC(BinaryModelsMixin, BaseSVMClassifier):
    """Online kernel SVM learnt one example at a time by local updates (LISVM).

    Each binary learner processes the examples in the order given. A new
    example ``(x_t, y_t)`` starts with multiplier ``α_t = 0``; if the current
    machine classifies it with margin (``y_t f(x_t) ≥ 1``) nothing changes.
    Otherwise a working set ``W`` starts as ``x_t`` and its nearest neighbour
    (Euclidean distance in input space) among the *candidates*, and grows by
    ``neighbor_step`` next-nearest candidates at a time. For each ``W`` the
    dual is re-optimised over the multipliers in ``W`` only, the others fixed
    and the equality constraint ``yᵀα = 0`` kept, by SMO warm-started from
    the previous working set's solution, giving a candidate machine; its
    bias comes from the KKT conditions of every kept example (the working
    set's few multipliers often all sit at a bound, which leaves its own
    bias undetermined).

    Growth is driven by the slack criterion ``E = ‖ξ‖² / t`` of [1]_
    (``ξ_i = max(0, 1 − y_i f(x_i))`` over the examples kept, ``t`` the
    number of examples the learner has seen), the part of the
    Cristianini–Shawe-Taylor margin bound that differs between candidates.
    It stops at the first candidate whose ``E`` is below ``threshold`` (η)
    or whose ``E`` differs by less than the fraction η from the previous
    candidate's (a neighbour that leaves the machine unchanged is skipped
    in that comparison), or when the candidates (at most ``max_neighbors``)
    are used up; the last candidate becomes the new machine. The paper's
    procedure grows "while the error estimate is above a threshold" and its
    abstract conditions the neighbourhood on "the variation of the error
    estimate"; on noisy data ``E`` settles well above any small η (about
    0.25 on Banana with C = 1), so the level alone would always use every
    neighbour, and the variation is what lets η in {0.1, 0.01, 0.001} give
    small, medium and large neighbourhoods.

    The candidates are the examples of the band around the decision surface
    (an example of class ``y`` whose ``y f(x) ≤ 1 + epsilon``) and the
    support vectors. An example with ``α = 0`` that lies beyond the band is
    forgotten: it is not reconsidered and counts as zero slack afterwards.
    The decision values of the stored examples are updated from the changed
    multipliers only.

    *Cost of an update.* With ``n_SV`` support vectors and ``n_kept ≥ n_SV``
    kept examples (the support vectors and the band; on ijcnn1 and a9a
    ``n_kept`` is 1.2 to 1.3 ``n_SV``), a new example costs ``n_SV``
    kernel values to classify (``f(x_t)``, what any kernel machine pays to
    predict) and nothing more when it is classified with margin. Otherwise
    the update costs: the rest of its kernel row (``n_kept − n_SV`` values),
    which also gives the input-space distances of the neighbour search (one
    scan of the kept examples that keeps the ``max_neighbors`` nearest as it
    goes, no further dot products and no sort of the band); one solve per growth
    step on the working set ``W`` (``O(|W|²)`` per SMO iteration, ``|W| ≤
    max_neighbors + 1``); ``O(n_kept)`` per moved multiplier to update the
    decision values, plus ``n_kept`` kernel values for each one whose row
    is not cached (``cache_size``); ``O(n_kept)`` for the bias, the slack
    criterion at each step and the repair step's choice of violators (again
    one scan keeping the most violating); ``O(1)`` per forgotten example
    (its entries in the cached rows are skipped from then on, not cleared). In
    all ``O((|W| + 10·reprocess) · n_kept)``, that is ``O(|W| · n_SV)``
    operations, with kernel values only for the new example and the rows
    missing from the cache; none of it grows with the number of examples
    seen beyond ``n_SV``. The dot products of a batch's rows with the kept
    examples are formed together (up to 64 rows per pass over the kept
    examples, stored feature by feature), each over the row's nonzero
    features, so sparse rows (as a9a's) cost their nonzeros; every kernel
    value is the same function of its pair however it is computed, so the
    model does not depend on how the stream is cut into ``partial_fit``
    calls.
    ``max_support`` bounds ``n_SV`` and the kept examples, and so the cost
    of every update.

    ``strategy='rebatch'`` is the baseline of [1]_: every example is kept and
    each new one triggers a batch SVM trained afresh on all the examples
    seen, so the model is always the batch SVM of the examples so far (up to
    ``tol``).

    Parameters
    ----------
    C : float, default=1.0
        Regularisation; must be positive.
    kernel : {'rbf', 'linear', 'poly', 'sigmoid'}, default='rbf'
        The local approach assumes a local kernel (RBF); the others are
        accepted. A precomputed kernel is not (the examples arrive one by
        one).
    degree : int, default=3
        Degree of the 'poly' kernel.
    gamma : {'scale', 'auto'} or float, default='scale'
        Kernel coefficient; 'scale' (``1 / (n_features · X.var())``) is
        computed on the first batch that :meth:`partial_fit` (or
        :meth:`fit`) receives and then kept.
    coef0 : float, default=0.0
        Constant term of the 'poly' and 'sigmoid' kernels.
    threshold : float, default=0.1
        The η of [1]_: growth of the working set stops once ``‖ξ‖² / t`` is
        below it or varies by less than this fraction from one candidate to
        the next; must be positive. Smaller values mean larger
        neighbourhoods. With the repair step (``reprocess``), η in
        {0.1, 0.01, 0.001} gave errors within about half a point of the batch
        SVM on Banana, Ringnorm and Diabetis (three splits each), and 0.1 is
        the fastest of the three (about a third of 0.001's time on Banana),
        hence the default.
    epsilon : float, default=0.5
        Width of the band: examples with ``y f(x) ≤ 1 + epsilon`` are kept
        and reconsidered; must be non-negative.
    max_neighbors : int, default=50
        Most neighbours added to a working set (which then has at most
        ``max_neighbors + 1`` examples).
    neighbor_step : int, default=1
        Neighbours added to the working set at each growth step (1 is the
        original procedure; larger steps solve fewer subproblems).
    reprocess : int, default=1
        After each local update, this many subproblems over the 10 kept
        examples that violate the KKT conditions most (the largest and the
        smallest ``y_i − g_i`` among the multipliers free to move each way),
        each solved with the other multipliers fixed; 0 is the paper's
        update alone. The local update never revisits multipliers away from
        the new example: on ijcnn1 (20 000 rows) they drift (multipliers at
        ``C`` of examples now well classified, ``b`` from inconsistent free
        multipliers) and the test accuracy falls to 86.7 % against 94.8 %
        for the batch SVM; one subproblem per update gives 94.7 %.
    strategy : {'local', 'rebatch'}, default='local'
        'local': the update described above. 'rebatch': retrain on all the
        examples seen at each new example.
    max_support : int or None, default=None
        Budget. When a binary learner holds more support vectors than this,
        the one with the smallest margin ``y f(x)`` is removed (the example
        deepest on the wrong side of the boundary, usually an outlier held
        at ``α = C``; among equal margins, the smallest multiplier): its
        multiplier is
        handed to its nearest same-class neighbours (or, if they lack room
        under ``C``, taken from its nearest other-class neighbours), so that
        ``yᵀα = 0`` still holds, and those neighbours are re-optimised once.
        When no neighbour can take it, the support vector with the next
        smallest margin is removed instead.
        Of the kept examples without a multiplier only the ``max_support``
        most recent stay. Memory is then bounded whatever the stream length.
        Ignored by ``strategy='rebatch'``.
    tol : float, default=1e-3
        Stopping tolerance of each subproblem's solver (maximal KKT
        violation).
    max_iter : int, default=-1
        Iteration cap of each subproblem's solver; -1 means
        ``max(100000, 1000·k)`` for a working set of ``k`` examples (the
        solver's own cap for ``strategy='rebatch'``), so that no single
        update runs for long.
    cache_size : float, default=200
        Kernel rows cached, in MB, shared equally by the binary learners:
        the rows ``K(x_i, ·)`` over the kept examples of the examples whose
        multipliers moved lately (least recently used out first). An update
        whose moved multipliers all have their rows cached computes one
        kernel row only, the new example's; see *Cost of an update*.
    multiclass : {'ovo', 'ovr'}, default='ovo'
        'ovo': one online learner per pair of classes (each sees its two
        classes' examples), prediction by votes. 'ovr': one learner per class
        against the rest (each sees every example), prediction by the largest
        decision value. Two classes use one learner.
    decision_function_shape : {'ovr', 'ovo'}, default='ovr'
        With ``multiclass='ovo'``: 'ovo' returns the pairwise decision values,
        'ovr' one score per class (votes plus a tie-breaking confidence), as
        :class:`SVC` and scikit-learn's ``SVC``.
    break_ties : bool, default=False
        With ``multiclass='ovo'``, more than two classes and
        ``decision_function_shape='ovr'``, predict the largest score of
        ``decision_function``; otherwise the lowest class wins a tie of
        votes, as :class:`SVC`.
    backend : str, default='auto'
        Solver backend, chosen when the model is created (by :meth:`fit` or
        the first :meth:`partial_fit`); it must provide an online learner
        (``capabilities.online``, as the built-in Rust backend does for every
        kernel allowed here), which runs each whole update. 'auto' picks the
        highest-priority such backend; a named backend without one is
        refused with a ``ValueError`` that lists the backends that have one.
    n_jobs : int or None, default=None
        Binary learners updated at once (threads) during a ``partial_fit``
        call. None or -1: all CPUs.
    verbose : int, default=0
        Logging through :mod:`logging` (logger ``localsvm.incremental_svc``): 0
        logs nothing; 1 one line per binary model per batch (updates,
        solves, time) and a summary; 2 also the batch's size. Records are
        emitted at level INFO; without any logging configuration they go
        to stderr.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    support_ : ndarray of shape (n_SV,)
        Positions in the stream (counted over every row passed to
        :meth:`partial_fit` since the model was created by :meth:`fit` or
        the first :meth:`partial_fit` call) of the support vectors, grouped
        by class.
    support_vectors_ : ndarray of shape (n_SV, n_features)
    n_support_ : ndarray of shape (n_classes,), dtype=int32
    dual_coef_ : ndarray
        ``y_i α_i`` of the support vectors, laid out as in :class:`SVC`:
        ``(1, n_SV)`` for two classes (positive for ``classes_[1]``),
        ``(n_classes − 1, n_SV)`` for one-vs-one, ``(n_classes, n_SV)`` for
        one-vs-rest.
    intercept_ : ndarray of shape (n_models,)
    n_iter_ : ndarray of shape (n_models,)
        Solver iterations of each binary learner, summed over its updates.
    n_seen_ : int
        Examples learnt so far.
    history_ : dict of ndarray
        One entry per example and binary learner, in the order learnt:
        ``learner``, ``n_seen`` (position in the stream), ``updated``
        (False when the example was classified with margin),
        ``neighbourhood`` (final working-set size, 0 without an update),
        ``n_solves`` (subproblems solved), ``reached`` (the criterion fell
        under ``threshold``), ``criterion`` (``‖ξ‖² / t`` after the
        example), ``n_support``, ``n_stored`` (examples kept) and
        ``time`` (seconds spent on the example).
    kernel_spec_ : KernelSpec

    See Also
    --------
    SVC : The batch SVM that the 'rebatch' strategy reproduces.

    Notes
    -----
    Progress: ``set_callbacks`` takes scikit-learn ≥ 1.9 callbacks (e.g.
    ``sklearn.callback.ProgressBar()``). ``fit`` and each ``partial_fit``
    call (one batch of a stream) is one task with one subtask per binary
    model.

    Weights: the online learner keeps one box ``C`` for every example it
    stores (its local re-optimisations, its bias and its stopping test all
    read that one bound), so it takes no ``class_weight``, and
    ``sample_weight`` only leaves examples out (weight 0: the example is not
    learnt) or keeps them (weight 1); other weights raise a ``ValueError``
    naming :class:`localsvm.SVC` and :class:`localsvm.CellSVC`, which take
    per-example boxes ``C · class_weight · sample_weight``.

    References
    ----------
    .. [1] L. Ralaivola and F. d'Alché-Buc, "Incremental Support Vector
       Machine Learning: a Local Approach", in *Artificial Neural Networks —
       ICANN 2001*, Lecture Notes in Computer Science 2130, Springer, 2001,
       pp. 322–330.

    Examples
    --------
    >>> from localsvm import IncrementalSVC
    >>> from localsvm.datasets import load_banana
    >>> d = load_banana()
    >>> clf = IncrementalSVC(C=1.0, gamma=1.0)
    >>> for start in range(0, 400, 100):
    ...     _ = clf.partial_fit(d.X_train[start : start + 100],
    ...                         d.y_train[start : start + 100], classes=[-1, 1])
    >>> clf.n_seen_
    400
    >>> clf.score(d.X_test, d.y_test) > 0.85
    True
    """

    _parameter_constraints: ClassVar[dict] = {
        **BaseSVMClassifier._parameter_constraints,
        "kernel": [StrOptions(set(FEATURE_KERNELS)), callable],
        "threshold": [Interval(Real, 0.0, None, closed="neither")],
        "epsilon": [Interval(Real, 0.0, None, closed="left")],
        "max_neighbors": [Interval(Integral, 1, None, closed="left")],
        "neighbor_step": [Interval(Integral, 1, None, closed="left")],
        "reprocess": [Interval(Integral, 0, None, closed="left")],
        "strategy": [StrOptions({"local", "rebatch"})],
        "max_support": [Interval(Integral, 1, None, closed="left"), None],
        "cache_size": [Interval(Real, 0, None, closed="neither")],
        "multiclass": [StrOptions({"ovo", "ovr"})],
        "decision_function_shape": [StrOptions({"ovr", "ovo"})],
        "break_ties": ["boolean"],
    }

    def __init__(
        self,
        *,
        C=1.0,
        kernel="rbf",
        degree=3,
        gamma="scale",
        coef0=0.0,
        threshold=0.1,
        epsilon=0.5,
        max_neighbors=50,
        neighbor_step=1,
        reprocess=1,
        strategy="local",
        max_support=None,
        tol=1e-3,
        max_iter=-1,
        cache_size=200,
        multiclass="ovo",
        decision_function_shape="ovr",
        break_ties=False,
        backend="auto",
        n_jobs=None,
        verbose=0,
    ):
        store_params(self, locals())

    # ------------------------------------------------------------ fitting

    @fit_method
    def fit(self, X, y, sample_weight=None):
        """Learn every row of ``X`` in order, starting from a fresh model.

        The same as one :meth:`partial_fit` call on a new estimator, with the
        classes found in ``y``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The training rows, learnt in the order given.
        y : array-like of shape (n_samples,)
            Their labels; at least two classes.
        sample_weight : array-like of shape (n_samples,), default=None
            0 leaves a row out, 1 learns it; no other weights (see Notes).

        Returns
        -------
        self : IncrementalSVC
            The fitted estimator.
        """
        self._reset()
        X, y, idx = self._fit_prologue(X, y)
        given = X.shape[0]
        X, _, idx, kept = self._equal_weight_rows(X, y, idx, sample_weight)
        self._start(X, self.classes_)
        return self._learn(X, idx, "fit", kept=kept, given=given)

    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """Learn the rows of ``X`` in order, one example at a time.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The rows, learnt in the order given; the same number of features
            on every call.
        y : array-like of shape (n_samples,)
            Their labels, each one of ``classes``.
        classes : array-like of shape (n_classes,), default=None
            Every class the stream can hold. Required on the first call
            unless ``y`` already holds at least two classes; later calls may
            omit it, or must repeat the same classes.
        sample_weight : array-like of shape (n_samples,), default=None
            0 leaves a row out (it is not learnt, nor counted in
            ``n_seen_``), 1 learns it; no other weights (see Notes). A
            batch after the first may leave out every row: the model then
            stays as it was.

        Returns
        -------
        self : IncrementalSVC
            The updated estimator.

        Notes
        -----
        The binary learners are updated in place, one example at a time, so
        an interrupted call (``KeyboardInterrupt``, e.g. Ctrl-C) cannot put
        the previous model back: it discards the model and leaves the
        estimator unfitted. An interrupted :meth:`fit` leaves the estimator
        as it was before the call.
        """
        try:
            if sample_weight is None and self._plain_quiet_batch(X, y):
                # A later batch of plain arrays, no callbacks: nothing for
                # scikit-learn's fit context to do (the parameters of a
                # fitted model are not validated again, no callback to set
                # up or tear down), and its cost dominates a call of one row.
                self._check_classes(classes)
                idx = self._encode(y, self.classes_)
                return self._learn(X, idx, "partial_fit", assemble=False)
            return self._partial_fit_in_context(X, y, classes, sample_weight)
        except KeyboardInterrupt:
            self._discard_model()
            raise

    def _partial_fit_in_context(self, X, y, classes, sample_weight=None):
        return self._partial_fit(X, y, classes, sample_weight)

    # scikit-learn's fit context recognises partial_fit by the method's name
    # (a fitted model's parameters are not validated again).
    _partial_fit_in_context.__name__ = "partial_fit"
    _partial_fit_in_context = fit_context(prefer_skip_nested_validation=True)(
        _partial_fit_in_context
    )

    def _discard_model(self) -> None:
        """Forget everything but the constructor's parameters (unfitted)."""
        params = set(self.get_params(deep=False))
        for name in list(vars(self)):
            if name not in params:
                delattr(self, name)

    def _equal_weight_rows(self, X, y, idx, sample_weight):
        """The rows of positive ``sample_weight`` and their indices (None:
        all); weights other than 0 and 1 refused (see the Notes)."""
        return equal_weight_rows(
            self,
            X,
            y,
            idx,
            sample_weight,
            "the online learner keeps one box C for every example it stores",
            "SVC or CellSVC (CellSVC for large data)",
            unit=True,
        )

    def _partial_fit(self, X, y, classes, sample_weight=None):
        first = not hasattr(self, "_learners")
        if sample_weight is None and not first and self._plain_batch(X, y):
            # A later batch of plain arrays: the checks below would only
            # repeat what the Rust core and _encode check anyway (finite
            # values, labels among classes_), at a cost that dominates a
            # call of one row.
            self._check_classes(classes)
            return self._learn(X, self._encode(y, self.classes_), "partial_fit", assemble=False)
        X = prepare_input(X, native=False, who=type(self).__name__)
        reject_dask(y, "y", type(self).__name__)
        X, y = validate_data(self, X, y, dtype=np.float64, order="C", reset=first)
        check_classification_targets(y)
        if first:
            if classes is None:
                known = np.unique(y)
                if known.size < 2:
                    raise ValueError(
                        "classes must be passed on the first call to partial_fit unless y holds "
                        f"at least two classes; got only {known.tolist()}"
                    )
            else:
                known = np.unique(np.asarray(classes))
                if known.size < 2:
                    raise ValueError(
                        f"classes must list at least two classes, got {known.tolist()}"
                    )
            idx = self._encode(y, known)
            self.classes_ = known
            given = X.shape[0]
            X, y, idx, kept = self._weighted_batch(X, y, idx, sample_weight)
            self._start(X, known)
            return self._learn(X, idx, "partial_fit", kept=kept, given=given)
        self._check_classes(classes)
        given = X.shape[0]
        X, y, idx, kept = self._weighted_batch(
            X, y, self._encode(y, self.classes_), sample_weight, later=True
        )
        if X.shape[0] == 0:
            # Every row left out: the model is as it was, the stream moved on.
            self._n_passed = self._stream_position() + given
            return self
        return self._learn(X, idx, "partial_fit", assemble=False, kept=kept, given=given)

    def _weighted_batch(self, X, y, idx, sample_weight, later=False):
        """A batch's rows of positive ``sample_weight`` (every row of a batch
        may go: a stream's batch need not hold every class). A ``later``
        batch (not the first) may lose every row; the first must keep one.
        The fourth value is the positions of the rows kept in the batch
        (None: all of them)."""
        if sample_weight is None:
            return X, y, idx, None
        w = finite_sample_weight(sample_weight, X.shape[0])
        keep = w > 0
        if np.all(keep):
            self._equal_weight_rows(X, y, idx, None if np.all(w == 1.0) else w)
            return X, y, idx, None
        if not (later and not np.any(keep)):
            self._equal_weight_rows(X[keep], y[keep], idx[keep], w[keep])
        return X[keep], y[keep], idx[keep], np.flatnonzero(keep)

    def _check_classes(self, classes) -> None:
        """``ValueError`` unless ``classes`` (None: not given) are the classes
        of the first call. ``classes_`` is sorted and unique, so the same
        array given again needs no sort (which dominates a one-row call)."""
        if classes is None:
            return
        given = np.asarray(classes)
        if given.shape == self.classes_.shape and np.array_equal(given, self.classes_):
            return
        if not np.array_equal(np.unique(given), self.classes_):
            raise ValueError(
                f"classes={np.unique(given).tolist()} is not the same as on the first call "
                f"to partial_fit: {self.classes_.tolist()}"
            )

    def _plain_quiet_batch(self, X, y) -> bool:
        """True for a fitted model without callbacks (its own or a
        meta-estimator's) and a :meth:`_plain_batch`."""
        own = self.__dict__
        return (
            "_learners" in own
            and not own.get("_skl_callbacks")
            and "_parent_callback_ctx" not in own
            and self._plain_batch(X, y)
        )

    def _plain_batch(self, X, y) -> bool:
        """True for a non-empty C-ordered float64 matrix of the fitted width
        (fitted without feature names) and a matching 1-d numeric ``y``."""
        return (
            type(X) is np.ndarray
            and type(y) is np.ndarray
            and X.dtype == np.float64
            and X.ndim == 2
            and X.flags.c_contiguous
            and X.shape[0] > 0
            and X.shape[1] == self.n_features_in_
            and y.ndim == 1
            and y.shape[0] == X.shape[0]
            and y.dtype.kind in "iuf"
            and self.classes_.dtype.kind in "iuf"
            and "feature_names_in_" not in self.__dict__
        )

    def _reset(self) -> None:
        for name in ("_learners", "_spec", "classes_", "n_seen_", "_n_passed"):
            if hasattr(self, name):
                delattr(self, name)

    def _start(self, X, classes) -> None:
        """Resolve the kernel on ``X`` and create the binary learners."""
        self._resolve_kernel(X)
        self._tasks = problem_classes(classes.shape[0], self.multiclass)
        backend = self._context().backend
        d = X.shape[1]
        self._learners = [
            _Binary(backend.online_learner(self._spec, d), k) for k in range(len(self._tasks))
        ]
        self.n_seen_ = 0
        self._n_passed = 0

    def _context(self) -> _Context:
        """The learners' context for this call: built once per model and
        setting, as the backend is (see :meth:`_online_backend`)."""
        key = (
            self.backend,
            self._spec,
            self.n_features_in_,
            len(getattr(self, "_learners", ())),
            *(getattr(self, name) for name in _CONTEXT_PARAMS),
        )
        memo = _CONTEXTS.get(self)
        if memo is not None and memo[0] == key:
            return memo[1]
        ctx = self._new_context()
        _CONTEXTS[self] = (key, ctx)
        return ctx

    def _new_context(self) -> _Context:
        backend = self._online_backend()
        return _Context(
            spec=self._spec,
            C=float(self.C),
            threshold=float(self.threshold),
            epsilon=float(self.epsilon),
            max_neighbors=int(self.max_neighbors),
            neighbor_step=int(self.neighbor_step),
            reprocess=int(self.reprocess),
            rebatch=self.strategy == "rebatch",
            max_support=None
            if self.max_support is None or self.strategy == "rebatch"
            else int(self.max_support),
            settings=backend.online_settings(
                tol=float(self.tol),
                max_iter=int(self.max_iter),
                cache_size=float(self.cache_size) / max(len(getattr(self, "_learners", ())), 1),
            ),
            backend=backend,
        )

    def _online_backend(self) -> SolverBackend:
        """The backend that provides the learners: chosen once per model and
        setting (a choice per ``partial_fit`` call would dominate a call of
        one row), kept beside the estimator so that a pickled model holds
        none."""
        d = self.n_features_in_
        key = (self.backend, self._spec, float(self.C), d)
        memo = _BACKENDS.get(self)
        if memo is not None and memo[0] == key:
            return memo[1]
        probe = QPProblem(
            X=np.zeros((2, d)),
            y=np.array([1.0, -1.0]),
            upper=np.full(2, float(self.C)),
            kernel=self._spec,
        )
        backend = select_backend(self.backend, probe, needs=("online",))
        _BACKENDS[self] = (key, backend)
        return backend

    @staticmethod
    def _encode(y, classes) -> np.ndarray:
        """Each label's index into ``classes``; ``ValueError`` for a label
        outside them."""
        y = np.asarray(y)
        if y.dtype.kind != classes.dtype.kind and not (
            y.dtype.kind in "iuf" and classes.dtype.kind in "iuf"
        ):
            raise ValueError(
                f"y's labels (dtype {y.dtype}) cannot belong to classes={classes.tolist()}"
            )
        # searchsorted gives positions 0..size: only the top needs clipping.
        idx = np.minimum(np.searchsorted(classes, y), classes.size - 1)
        bad = classes[idx] != y
        if bad.any():
            unknown = np.unique(y[bad]).tolist()
            raise ValueError(
                f"y holds labels {unknown} outside classes={classes.tolist()} "
                "(given on the first call to partial_fit, or found by fit)"
            )
        return idx

    def _stream_position(self) -> int:
        """Rows passed so far, those of weight 0 included: the position in
        the stream of the next row (``support_``, ``history_``)."""
        return int(self.__dict__.get("_n_passed", self.n_seen_))

    def _learn(self, X, idx, task_name: str, assemble: bool = True, kept=None, given=None):
        """Learn one batch: a callback task (``task_name``) with one subtask
        per binary model. The fitted attributes are assembled now, or
        (``assemble=False``) when first read after the call (see
        :meth:`__getattr__`): a stream of small batches then does not copy
        every support vector after each one. ``kept`` holds the positions
        of the rows of ``X`` in the batch of ``given`` rows passed (None:
        ``X`` is that batch)."""
        began = time.perf_counter()
        report = self._fit_report(len(self._learners), X, None, task_name=task_name)
        if report.active:
            report.subtasks("binary-model", len(self._learners))
        report.log(
            2,
            "IncrementalSVC %s: a batch of %d rows, %d binary models",
            task_name,
            X.shape[0],
            len(self._learners),
        )
        ctx = self._context()
        start = self._stream_position()
        n = X.shape[0]
        if kept is None:
            seen = np.arange(start, start + n, dtype=np.int64)
        else:
            seen = (start + np.asarray(kept)).astype(np.int64)
        many = self._learn_many_threads(ctx, report)
        if many is not None:
            stats = self._learn_many(X, idx, seen, ctx, many)
            self._finish_learn(X, start, n, given, ctx, stats, assemble, report, began, task_name)
            return self
        # A problem over every row (two classes, or one-vs-rest) takes the
        # batch as it is, without copies.
        if len(self._tasks) == 1:
            # Two classes: binary_tasks' pair (0, 1) over every row.
            tasks = [(self._learners[0], X, np.where(idx == 0, 1.0, -1.0), idx, seen, ctx)]
        else:
            tasks = [
                (learner, X, labels, idx, seen, ctx)
                if rows.size == n
                else (learner, X[rows], labels, idx[rows], seen[rows], ctx)
                for learner, (rows, labels) in zip(
                    self._learners,
                    binary_tasks(idx, self._tasks),
                    strict=True,
                )
            ]
        results = run_tasks(
            _learn_task,
            tasks,
            n_jobs=self.n_jobs,
            thread_safe=ctx.backend.capabilities.thread_safe,
            **report.hooks(_describe_learn),
        )
        self._learners = [r[0] for r in results]
        stats = [r[1] for r in results]
        self._finish_learn(X, start, n, given, ctx, stats, assemble, report, began, task_name)
        return self

    def _learn_many_threads(self, ctx: _Context, report) -> int | None:
        """Threads for learning a batch of several binary problems in one
        native call (``learn_many`` of the core's learner), or None when
        the learners go through :func:`run_tasks` one task each: one
        problem, callbacks or ``verbose`` (which report per binary model),
        ``strategy='rebatch'``, a learner without ``learn_many``, or an
        engine that runs tasks elsewhere."""
        from .parallel import effective_n_jobs, get_default_engine

        if len(self._learners) < 2 or report.active or ctx.rebatch:
            return None
        if not hasattr(type(self._learners[0].native), "learn_many"):
            return None
        engine = get_default_engine()
        if engine == "serial" or not ctx.backend.capabilities.thread_safe:
            return 1
        if engine != "threads":
            return None
        return min(2, effective_n_jobs(self.n_jobs))

    def _learn_many(self, X, idx, seen, ctx: _Context, threads: int) -> list[_CallStats]:
        """Every binary learner learns its rows of the batch, in one native
        call (the rows of each problem picked there): the same models as
        one call per learner, without a Python task per learner."""
        res = type(self._learners[0].native).learn_many(
            [lr.native for lr in self._learners],
            X,
            np.ascontiguousarray(idx, dtype=np.int64),
            seen,
            self._tasks,
            options=_options(ctx),
            settings=ctx.settings,
            threads=threads,
        )
        # One result for every learner, each learner's history a slice of
        # it (read when history_ is): a few objects per batch, not a
        # dozen per learner.
        columns = _call_history(res, res.seen)
        offsets = res.offsets.tolist()
        for k, learner in enumerate(self._learners):
            if offsets[k + 1] > offsets[k]:
                learner._history.append((offsets[k], offsets[k + 1], columns))
        stats = _CallStats(
            capped=res.capped, updates=res.updates, solves=res.solves, unconverged=res.unconverged
        )
        return [stats]

    def _finish_learn(self, X, start, n, given, ctx, stats, assemble, report, began, task_name):
        """The bookkeeping after a batch is learnt (see :meth:`_learn`)."""
        self.n_seen_ += X.shape[0]
        self._n_passed = start + (n if given is None else int(given))
        self.backend_ = ctx.backend.name
        self._warn(stats)
        if assemble:
            self._assemble()
        else:
            for name in _ASSEMBLED:
                self.__dict__.pop(name, None)
            self._stale = True
        if report.verbose >= 1:
            report.log(
                1,
                "IncrementalSVC %s: %d rows seen, %d support vectors, %.3f s",
                task_name,
                self.n_seen_,
                self.support_.size,
                time.perf_counter() - began,
            )
        report.end(X, None)

    def _warn(self, stats: list[_CallStats]) -> None:
        capped = sum(s.capped for s in stats)
        updates = sum(s.updates for s in stats)
        if capped:
            warnings.warn(
                f"{capped} of {updates} updates used max_neighbors={self.max_neighbors} "
                "neighbours while the slack criterion was still above threshold="
                f"{self.threshold} and varying by more than that fraction; raise "
                "max_neighbors or threshold if the model is not accurate enough",
                ConvergenceWarning,
                stacklevel=3,
            )
        unconverged = sum(s.unconverged for s in stats)
        if unconverged:
            self._warn_unconverged(
                [True] * (sum(s.solves for s in stats) - unconverged) + [False] * unconverged,
                "subproblem solves",
            )

    def __getattr__(self, name):
        # Only called when normal lookup fails: a fitted attribute that
        # partial_fit left to be assembled on first use.
        if name in _ASSEMBLED and self.__dict__.get("_stale", False):
            self._assemble()
            return self.__dict__[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def _assemble(self) -> None:
        """The fitted attributes from the learners' current state."""
        self._stale = False
        parts = [(lr, lr.support()) for lr in self._learners]
        models = assemble(
            [lr.seen[s] for lr, s in parts],
            [lr.alpha[s] * lr.y[s] for lr, s in parts],
            [lr.b for lr in self._learners],
            [lr.cls[s] for lr, s in parts],
            self.classes_.shape[0],
            self.multiclass,
        )
        self.support_ = models.support.astype(np.int64)
        rows = np.concatenate([lr.X[s] for lr, s in parts]).reshape(-1, self.n_features_in_)
        offset = np.concatenate([[0], np.cumsum([s.size for _, s in parts])])
        model, position = models.source.T
        self.support_vectors_ = rows[offset[model] + position]
        self.n_support_ = models.n_support
        self._model_coef = models.coef
        self._model_intercept = models.intercept
        self.n_iter_ = np.array([lr.n_iter for lr in self._learners], dtype=np.int64)
        self.dual_coef_ = models.dual_coef
        self.intercept_ = models.public_intercept

    @property
    def history_(self) -> dict[str, np.ndarray]:
        """Per example and binary learner: see the class docstring."""
        check_is_fitted(self)
        parts = [lr.history_arrays() for lr in self._learners]
        cols = {k: np.concatenate([p[k] for p in parts]) for k in HISTORY_FIELDS}
        order = np.lexsort((cols["learner"], cols["n_seen"]))
        return {k: v[order] for k, v in cols.items()}

    # ------------------------------------------------------------ predicting

    def _model_decision(self, X) -> np.ndarray:
        X = self._predict_prologue(X)
        if self.support_vectors_.shape[0] == 0:
            return np.tile(self._model_intercept, (X.shape[0], 1))
        return decision_values(
            self._spec,
            X,
            np.ascontiguousarray(self.support_vectors_),
            self._model_coef,
            self._model_intercept,
            # The learner keeps its multipliers and kernel values in float64;
            # float32 sums would turn exact zeros into tiny values of either
            # sign and flip one-vs-one votes.
            precision="float64",
        )

    def decision_function(self, X):
        """Compute the signed distances to the decision boundaries.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The rows to score.

        Returns
        -------
        ndarray of shape (n_samples,), (n_samples, n_classes) or (n_samples, n_pairs)
            For two classes, positive for ``classes_[1]``; otherwise one
            column per class (one-vs-one votes with a confidence tie-break,
            as :class:`SVC`, or the one-vs-rest decision values), or one per
            class pair for ``multiclass='ovo'`` with
            ``decision_function_shape='ovo'``.
        """
        return self._multiclass_decision(X)

    def predict(self, X):
        """Predict the class of each row of ``X``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The rows to classify.

        Returns
        -------
        ndarray of shape (n_samples,)
            The predicted labels, taken from ``classes_``.
        """
        return self._multiclass_predict(X)
