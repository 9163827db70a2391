"""The private bases every localsvm classifier is built on.

:class:`BaseKernelEstimator` owns what every kernel estimator shares
(classifiers, regressors, the one-class SVM) and
:class:`BaseKernelClassifier` adds the classifiers' fit prologue; together
they hold what every kernel classifier shares: the
constraints of the kernel parameters and ``n_jobs``, the ``pairwise`` tag of
a precomputed kernel, the fit prologue (scikit-learn's input checks, the
class encoding, the kernel with ``gamma`` resolved on the training data) and
the predict prologue. :class:`SVMDualMixin` and :class:`BaseSVMClassifier`
add what the estimators that solve SVM duals share: ``C``, ``tol``, ``max_iter`` and ``backend``,
the backend choice, and one ``ConvergenceWarning`` when any solve stopped at
its iteration limit. An estimator declares only its own parameters, on top
of its base's ``_parameter_constraints``.

:class:`FitReport` is how a fit reports its progress: to scikit-learn's
callbacks (``sklearn.callback``; the estimators take ``set_callbacks``), as a
tree of tasks, and to the ``localsvm`` loggers when ``verbose`` is set.
"""

from __future__ import annotations

import functools
import logging
import math
import threading
import time
import warnings
from collections.abc import Callable, Iterable
from numbers import Integral, Real
from typing import ClassVar

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.validation import _num_samples, check_is_fitted, validate_data

from ._compat import CallbackSupportMixin, Hidden, Interval, StrOptions, fit_context
from ._docstrings import fill
from ._validation import (
    encode_classes,
    finite_sample_weight,
    prepare_input,
    validate_training_data,
)
from .backends.base import QPProblem, SolverBackend
from .backends.select import select_backend
from .kernels import KERNELS, KernelSpec, make_spec
from .plugins import get_backend

#: Kernel names without ``'precomputed'``, for estimators that need features.
FEATURE_KERNELS: frozenset[str] = frozenset(KERNELS) - {"precomputed"}

#: The finite box that stands for ``C = inf`` (the hard margin). The solvers
#: need finite bounds (clipping computes ``C_i − C_j``, and the gradient
#: part ``Ḡ`` sums ``C_j Q_j``); 1e150 exceeds any dual coefficient of a
#: separable problem by far and still leaves ``C_j · K_ij`` finite for
#: kernel values up to 1e150.
HARD_MARGIN_C = 1e150


def numeric_input(X) -> bool:
    """Whether ``X`` is validated as numbers: sparse, a numeric array, or
    anything that converts to a float array. A callable kernel receives any
    other ``X`` (a list of strings, an object array of strings) unconverted,
    as scikit-learn's SVMs pass it."""
    kind = getattr(getattr(X, "dtype", None), "kind", None)
    if sp.issparse(X) or (kind is not None and kind in "biuf"):
        return True
    try:
        np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError):
        return False
    return True


def box_constant(C: float) -> float:
    """``C`` as the solvers take it: :data:`HARD_MARGIN_C` for ``inf``.

    Parameters
    ----------
    C : float
        The regularisation parameter, positive, possibly ``inf``.

    Returns
    -------
    float
        A finite upper bound.
    """
    return HARD_MARGIN_C if math.isinf(C) else min(float(C), HARD_MARGIN_C)


def read_only_coef(w: np.ndarray, *, sparse: bool = False):
    """A fresh copy of the weights ``w`` that cannot be written through, as
    scikit-learn's ``coef_``: a read-only array, or with ``sparse`` a CSR
    matrix whose values are read-only.

    Parameters
    ----------
    w : ndarray of shape (n_models, n_features)
        The weights.
    sparse : bool, default=False
        Return a scipy CSR matrix (a fit on sparse input).

    Returns
    -------
    ndarray or scipy.sparse.csr_matrix
        The copy.
    """
    if sparse:
        import scipy.sparse as sp

        out = sp.csr_matrix(np.asarray(w, dtype=np.float64))
        out.data.flags.writeable = False
        return out
    out = np.array(w, dtype=np.float64)
    out.flags.writeable = False
    return out


def positive_weights(sample_weight, n_samples: int, y_idx: np.ndarray | None = None) -> np.ndarray:
    """``sample_weight`` as LIBSVM takes it: samples whose weight is zero or
    negative are left out of the problem (their weight becomes 0, which pins
    their dual coefficient at 0). Raises scikit-learn's messages when no
    sample is left, or (with class indices ``y_idx``) when those left are
    of one class.

    Parameters
    ----------
    sample_weight : array-like of shape (n_samples,), scalar or None
        The weights; None weighs every sample 1.
    n_samples : int
        The number of samples.
    y_idx : ndarray of shape (n_samples,) or None, default=None
        Class indices, for a classifier.

    Returns
    -------
    ndarray of shape (n_samples,)
        The weights, those at most 0 set to 0.
    """
    if sample_weight is None:
        return np.ones(n_samples)
    sw = finite_sample_weight(sample_weight, n_samples)
    keep = sw > 0
    if not np.any(keep):
        raise ValueError("Invalid input - all samples have zero or negative weights.")
    if y_idx is not None and not np.all(keep) and np.unique(y_idx[keep]).size < 2:
        raise ValueError(
            "Invalid input - all samples with positive weights belong to the same class."
        )
    return np.where(keep, sw, 0.0)


def balanced_class_factors(counts) -> np.ndarray:
    """scikit-learn's 'balanced' factors of ``C`` from the rows per class,
    ``n_samples / (n_classes · count)``, ``n_classes`` the classes that have
    rows (a class without rows gets ``n_samples / n_classes``, unused).

    Parameters
    ----------
    counts : array-like of int of shape (n_classes,)
        Rows per class.

    Returns
    -------
    ndarray of shape (n_classes,)
        The factors.
    """
    counts = np.asarray(counts)
    return counts.sum() / (np.count_nonzero(counts) * np.maximum(counts, 1.0))


def class_weights(estimator, y) -> np.ndarray:
    """Set and return ``estimator.class_weight_``: its ``class_weight``
    parameter (None: no parameter or no weights) as one factor of ``C`` per
    class of ``estimator.classes_``, scikit-learn's rule ('balanced' is
    ``n_samples / (n_classes · bincount(y))`` on the ``y`` given). A dict
    that names a class not in ``y`` is a ``ValueError`` naming it.

    Parameters
    ----------
    estimator : estimator instance
        With ``classes_`` set.
    y : ndarray of shape (n_samples,)
        The training labels.

    Returns
    -------
    ndarray of shape (n_classes,)
        The factors.
    """
    class_weight = getattr(estimator, "class_weight", None)
    classes = estimator.classes_
    if isinstance(class_weight, dict):
        unknown = sorted(set(class_weight) - set(classes.tolist()), key=str)
        if unknown:
            raise ValueError(
                f"class_weight names classes that are not in y: {unknown}; "
                f"the classes are {classes.tolist()}"
            )
    if class_weight is None:
        # compute_class_weight's answer, without its parameter validation
        # (a fixed cost of every small fit).
        estimator.class_weight_ = np.ones(classes.shape[0], dtype=np.float64)
        return estimator.class_weight_
    factors = compute_class_weight(class_weight, classes=classes, y=y)
    bad = ~np.isfinite(factors)
    if bad.any():
        raise ValueError(
            f"class_weight must give finite factors; class {classes[bad].tolist()[0]!r} has "
            f"{float(factors[bad][0])}"
        )
    estimator.class_weight_ = factors
    return estimator.class_weight_


def weighted_training_rows(estimator, X, y, y_idx, sample_weight):
    """Each training example's factor of ``C`` (``class_weight`` times
    ``sample_weight``, as scikit-learn's SVC composes them) and the examples
    that keep a positive one: what every classifier that takes weights
    does with them, in one place.

    ``class_weight_`` is set on the whole training set (:func:`class_weights`;
    'balanced' counts every example given, whatever its ``sample_weight``).
    As in LIBSVM and scikit-learn, an example whose factor is 0 or negative is
    left out of the problem: it is dropped here, before anything is computed
    from the rows (a scale such as ``gamma='scale'``, a partition, a
    clustering). ``ValueError`` when no example is left, when those left
    hold one class, or when a class of ``classes_`` loses every example.
    With ``kernel='precomputed'`` the square training kernel loses the
    dropped examples' rows and columns.

    Parameters
    ----------
    estimator : estimator instance
        A classifier with ``classes_`` set and, optionally, a
        ``class_weight`` parameter.
    X : ndarray or sparse matrix of shape (n_samples, ...)
        The training examples.
    y : ndarray of shape (n_samples,)
        Their labels.
    y_idx : ndarray of shape (n_samples,)
        Their indices into ``classes_``.
    sample_weight : array-like of shape (n_samples,), scalar or None
        The per-example weights; None weighs every example 1.

    Returns
    -------
    X, y, y_idx : the rows kept
    weights : ndarray of shape (n_kept,)
        Each kept example's factor of ``C``, positive (all ones without
        weights).
    kept : ndarray of shape (n_kept,)
        The kept examples' indices in the rows given.
    """
    n = _num_samples(X)
    cw = class_weights(estimator, y)
    w = cw[y_idx] * positive_weights(sample_weight, n, y_idx)
    keep = w > 0
    if not np.any(keep):
        raise ValueError(
            "Invalid input: every sample has zero weight (class_weight · sample_weight)"
        )
    if not np.all(keep):
        left = np.bincount(y_idx[keep], minlength=estimator.classes_.shape[0])
        if np.count_nonzero(left) < 2:
            raise ValueError(
                "Invalid input: all samples with positive weight (class_weight · "
                "sample_weight) belong to one class; at least two classes need positive weight"
            )
        if np.any(left == 0):
            lost = estimator.classes_[left == 0].tolist()
            raise ValueError(
                f"Invalid input: classes {lost} have no sample of positive weight "
                "(class_weight · sample_weight); give them positive weight or leave them out of y"
            )
        kept = np.flatnonzero(keep)
        X = _training_rows(estimator, X, kept)
        y, y_idx, w = y[kept], y_idx[kept], w[kept]
        return X, y, y_idx, np.ascontiguousarray(w, dtype=np.float64), kept
    return X, y, y_idx, np.ascontiguousarray(w, dtype=np.float64), np.arange(n)


def labels_of_every_row(labels: np.ndarray, kept: np.ndarray, n_given: int) -> np.ndarray:
    """Per-row labels (a cell, a cluster) over every training row given:
    ``labels`` (of the kept rows, :func:`weighted_training_rows`) at
    ``kept``, -1 for the rows a weight of 0 left out of the fit."""
    if kept.size == n_given:
        return labels
    full = np.full(n_given, -1, dtype=np.intp)
    full[kept] = labels
    return full


def equal_weight_rows(
    estimator, X, y, y_idx, sample_weight, why: str, instead: str, *, unit: bool = False
):
    """What an estimator whose algorithm cannot weigh its examples does
    with ``sample_weight``: the examples of weight ``<= 0`` are dropped (as
    :func:`weighted_training_rows` does), and the others must share one
    weight, which changes nothing (with ``unit``, the weight 1: where a
    common weight would scale ``C``); other weights are refused.

    Parameters
    ----------
    estimator : estimator instance
        A classifier with ``classes_`` set.
    X, y, y_idx, sample_weight
        As for :func:`weighted_training_rows`.
    why : str
        Why the algorithm cannot weigh examples, for the message.
    instead : str
        The estimators to use instead, for the message.
    unit : bool, default=False
        Require the weight 1 of the examples kept.

    Returns
    -------
    X, y, y_idx : the rows kept
    kept : ndarray of int or None
        Their indices in the rows given (None: every row is kept).
    """
    if sample_weight is None:
        return X, y, y_idx, None
    n = _num_samples(X)
    w = positive_weights(sample_weight, n, y_idx)
    positive = w[w > 0]
    if positive.size and not np.all(positive == (1.0 if unit else positive[0])):
        allowed = "keep them (weight 1)" if unit else "weigh all the others alike"
        raise ValueError(
            f"{type(estimator).__name__} cannot weigh its examples: {why}. sample_weight "
            f"may only leave examples out (weight 0) or {allowed}; use "
            f"{instead}, which take sample_weight and class_weight"
        )
    if np.all(w > 0):
        return X, y, y_idx, None
    kept = np.flatnonzero(w > 0)
    left = np.bincount(y_idx[kept], minlength=estimator.classes_.shape[0])
    if np.any(left == 0):
        lost = estimator.classes_[left == 0].tolist()
        raise ValueError(
            f"Invalid input: classes {lost} have no sample of positive weight; give them "
            "positive weight or leave them out of y"
        )
    return _training_rows(estimator, X, kept), y[kept], y_idx[kept], kept


def _training_rows(estimator, X, kept: np.ndarray):
    """The training examples ``kept`` of ``X``: its rows, or with
    ``kernel='precomputed'`` the rows and columns of the square training
    kernel."""
    if getattr(estimator, "kernel", None) == "precomputed":
        return np.ascontiguousarray(X[np.ix_(kept, kept)])
    return X[kept]


#: The constraint of a ``class_weight`` parameter.
CLASS_WEIGHT_CONSTRAINT = [StrOptions({"balanced"}), dict, None]

#: The constraints of ``cache_size`` (megabytes of kernel rows) and
#: ``class_weight``, parameters of most classifiers.
CACHE_CLASS_WEIGHT_CONSTRAINTS = {
    "cache_size": [Interval(Real, 0, None, closed="neither")],
    "class_weight": CLASS_WEIGHT_CONSTRAINT,
}


def store_params(estimator, arguments: dict) -> None:
    """Keep each argument of an estimator's ``__init__`` as the attribute of
    its name, unchanged: scikit-learn's convention, which ``get_params``,
    ``set_params`` and ``clone`` rely on (validation happens in ``fit``).

    The ``__init__`` still lists every parameter explicitly in its signature;
    this only writes the ``self.name = name`` lines once.

    Parameters
    ----------
    estimator : object
        The estimator being constructed.
    arguments : dict
        ``locals()`` at the top of its ``__init__``: the parameters by name
        (``self``, and the ``__class__`` cell of a method using ``super()``,
        are skipped).
    """
    for name, value in arguments.items():
        if name != "self" and not name.startswith("__"):
            setattr(estimator, name, value)


def restore_on_interrupt(method: Callable) -> Callable:
    """Make a fitting method leave the estimator as it was before the call
    when it is interrupted (``KeyboardInterrupt``, e.g. Ctrl-C).

    The instance's attributes are saved (a shallow copy of its ``__dict__``)
    and put back before the interrupt propagates: a first fit leaves no
    fitted attribute, a refit leaves the previous model. This holds because
    the fits build new objects and assign them, never updating the previous
    model's arrays in place.

    Parameters
    ----------
    method : callable
        A method of an estimator, ``method(self, *args, **kwargs)``.

    Returns
    -------
    callable
        The wrapped method.
    """

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        saved = dict(self.__dict__)
        try:
            return method(self, *args, **kwargs)
        except KeyboardInterrupt:
            self.__dict__.clear()
            self.__dict__.update(saved)
            raise

    return wrapper


def fit_method(method: Callable) -> Callable:
    """The decorators of every estimator's ``fit``: scikit-learn's
    ``_fit_context`` (parameters validated once, nested estimators' skipped,
    the callbacks' guard) inside :func:`restore_on_interrupt`.

    Parameters
    ----------
    method : callable
        An estimator's ``fit(self, X, y, ...)``.

    Returns
    -------
    callable
        The wrapped method.
    """
    return restore_on_interrupt(fit_context(prefer_skip_nested_validation=True)(method))


#: The package's logger; each module logs to its child (``localsvm.svc``, ...).
LOGGER = logging.getLogger("localsvm")
_handler_lock = threading.Lock()


def _enable_verbose_logging() -> None:
    """Make ``verbose`` output visible without any logging configuration:
    the ``localsvm`` logger gets level INFO if it has none, and a stderr
    handler if no handler would receive its records. Logging configured by
    the application (a level or handlers) is left alone."""
    with _handler_lock:
        if LOGGER.level == logging.NOTSET:
            LOGGER.setLevel(logging.INFO)
        if not LOGGER.hasHandlers():
            handler = logging.StreamHandler()
            handler.setFormatter(logging.Formatter("[%(name)s] %(message)s"))
            LOGGER.addHandler(handler)


#: The parameters of :meth:`FitReport.begin` and :meth:`FitReport.end`.
_TASK_PARAMS = """\
Parameters
----------
X, y : array-like or None, default=None
    The task's training data.
metadata : dict or None, default=None
    Extra facts about the task (e.g. iterations)."""


@fill(task_params=_TASK_PARAMS)
class FitReport:
    """One node of a fit's task tree, reported to scikit-learn callbacks and,
    with ``verbose``, to the estimator module's logger.

    Every method is cheap and does nothing for a fit without callbacks and
    with ``verbose=0``. Hooks are called under one lock per fit, so callbacks
    never run concurrently even when the tasks run in worker threads; a
    subtask's context is created by the thread that builds the task list,
    before the tasks start.

    Parameters
    ----------
    estimator : estimator instance
        The estimator being fitted.
    context : CallbackContext or None
        This task's callback context; None when the fit has no callbacks.
    lock : threading.RLock
        The fit's lock, shared by all its nodes.
    logger : logging.Logger
        Where ``verbose`` messages go.
    """

    def __init__(self, estimator, context, lock, logger) -> None:
        self.estimator = estimator
        self.context = context
        self.verbose = int(getattr(estimator, "verbose", 0) or 0)
        self._lock = lock
        self._logger = logger
        self._children: list[FitReport] = []
        self._child_label = "task"
        self._started: dict[int, float] = {}

    @property
    def active(self) -> bool:
        """Whether anything listens: callbacks or ``verbose``."""
        return self.context is not None or self.verbose > 0

    def log(self, level: int, message: str, *args) -> None:
        """Log ``message % args`` (INFO) when ``verbose >= level``.

        Parameters
        ----------
        level : int
            1 for per-solve lines, 2 for the estimator's steps.
        message : str
            A ``%``-format string.
        *args
            Its arguments.
        """
        if self.verbose >= level:
            self._logger.info(message, *args)

    def begin(self, X=None, y=None, metadata=None) -> None:
        """Call the callbacks' ``on_fit_task_begin`` for this task.

        {task_params}
        """
        if self.context is not None:
            with self._lock:
                self.context.call_on_fit_task_begin(
                    estimator=self.estimator, X=X, y=y, metadata=metadata
                )

    def end(self, X=None, y=None, metadata=None) -> bool:
        """Call the callbacks' ``on_fit_task_end`` for this task.

        {task_params}

        Returns
        -------
        bool
            True when a callback asked to stop.
        """
        if self.context is None:
            return False
        with self._lock:
            return bool(
                self.context.call_on_fit_task_end(
                    estimator=self.estimator, X=X, y=y, metadata=metadata
                )
            )

    def subtasks(self, name: str, n: int, *, iterative: bool = False) -> list[FitReport]:
        """Create ``n`` subtasks of this task (call once per task, from the
        thread that builds the task list).

        Parameters
        ----------
        name : str
            The subtasks' name.
        n : int
            How many; at most the ``max_subtasks`` this task was made with.
        iterative : bool, default=False
            True: each subtask has :data:`PROGRESS_STEPS` children of its
            own, the steps of :meth:`solver_progress`; False: they are
            leaves.

        Returns
        -------
        list of FitReport
            The subtasks, in order; also kept for :meth:`task_begin`.
        """
        self._child_label = name
        if not self.active:
            # Nothing listens: every method of the subtasks does nothing, so
            # one leaf serves them all (hundreds of one-vs-one problems).
            leaf = FitReport(self.estimator, None, self._lock, self._logger)
            self._children = [leaf] * n
            return self._children
        with self._lock:
            self._children = [
                FitReport(
                    self.estimator,
                    None
                    if self.context is None
                    else self.context.subcontext(
                        task_name=name, max_subtasks=PROGRESS_STEPS if iterative else 0
                    ),
                    self._lock,
                    self._logger,
                )
                for _ in range(n)
            ]
        return self._children

    def child(self, name: str, max_subtasks: int | None = 0) -> FitReport:
        """One more subtask of this task, outside :meth:`subtasks`.

        Parameters
        ----------
        name : str
            The subtask's name.
        max_subtasks : int or None, default=0
            Its own subtasks (None: not known in advance; 0: a leaf).

        Returns
        -------
        FitReport
            The subtask; call its :meth:`begin` and :meth:`end`.
        """
        with self._lock:
            ctx = (
                None
                if self.context is None
                else self.context.subcontext(task_name=name, max_subtasks=max_subtasks)
            )
        return FitReport(self.estimator, ctx, self._lock, self._logger)

    def task_begin(self, index: int) -> None:
        """Subtask ``index`` starts (a :func:`~localsvm.run_tasks` hook).

        Parameters
        ----------
        index : int
            Its position in :meth:`subtasks`.
        """
        if self.verbose > 0:
            self._started[index] = time.perf_counter()
        if self._children:
            self._children[index].begin()

    def task_end(self, index: int, result=None, describe: Callable | None = None) -> None:
        """Subtask ``index`` has finished (a :func:`~localsvm.run_tasks` hook):
        log ``describe(result)`` with its time at ``verbose >= 1``, then call
        the callbacks.

        Parameters
        ----------
        index : int
            Its position in :meth:`subtasks`.
        result : object, default=None
            What the task returned.
        describe : callable or None, default=None
            ``describe(result)``: a short text for the log line.
        """
        if self.verbose > 0:
            start = self._started.pop(index, None)
            took = "" if start is None else f" in {time.perf_counter() - start:.3f} s"
            what = describe(result) if describe is not None else "done"
            self.log(1, "%s %d: %s%s", self._child_name(), index, what, took)
        if self._children:
            self._children[index].end()

    def _child_name(self) -> str:
        return self._child_label

    def hooks(self, describe: Callable | None = None) -> dict:
        """The ``on_start``/``on_done`` arguments of :func:`~localsvm.run_tasks`
        that report this task's subtasks; empty when nothing listens.

        Parameters
        ----------
        describe : callable or None, default=None
            ``describe(result)`` for the per-task log line.

        Returns
        -------
        dict
            Keyword arguments for :func:`~localsvm.run_tasks`.
        """
        if not self.active:
            return {}
        return {
            "on_start": self.task_begin,
            "on_done": functools.partial(self._done, describe),
        }

    def _done(self, describe, index, result) -> None:
        self.task_end(index, result, describe)

    def solver_progress(
        self, tol: float, n_samples: int | None = None
    ) -> Callable[[int, float], None] | None:
        """A ``progress(n_iter, gap)`` function for a long solve in this
        (iterative) task: the solve's estimated share done, in
        :data:`PROGRESS_STEPS` leaf subtasks ``'smo-progress'`` (see
        :class:`_SolverProgress`) whose metadata holds the iterations, the
        KKT gap and that share; logged at ``verbose >= 2``. None when
        nothing listens.

        Parameters
        ----------
        tol : float
            The KKT gap at which the solve stops.
        n_samples : int or None, default=None
            The problem's examples, for the early estimate from iterations
            (see :class:`_SolverProgress`); None: the gap alone.

        Returns
        -------
        callable or None
            For :attr:`localsvm.QPProblem.progress`.
        """
        if self.context is None and self.verbose < 2:
            return None
        return _SolverProgress(self, tol, n_samples)


#: Steps of a solve's progress (:meth:`FitReport.solver_progress`): a
#: progress display moves by one per cent of the solve.
PROGRESS_STEPS = 100


def solve_share(first_gap: float, gap: float, tol: float) -> float:
    """The share of a solve done, estimated from its KKT gap on a log scale:
    0 at the first gap reported, 1 at ``tol`` (where the solve stops),
    ``log(first_gap / gap) / log(first_gap / tol)`` between, clipped to
    ``[0, 1]``. SMO's gap shrinks roughly geometrically once the working set
    settles (its linear convergence: P.-H. Chen, R.-E. Fan and C.-J. Lin, "A
    Study on SMO-Type Decomposition Methods for Support Vector Machines",
    IEEE Transactions on Neural Networks 17(4), 2006), so equal steps of
    this share take comparable numbers of iterations. 0 for a gap that is
    not finite or a first gap already within ``tol``.

    Parameters
    ----------
    first_gap, gap : float
        The first KKT gap reported, and the latest.
    tol : float
        The stopping tolerance.

    Returns
    -------
    float
        The share, in ``[0, 1]``.
    """
    if not (math.isfinite(first_gap) and math.isfinite(gap) and tol > 0 and first_gap > tol):
        return 0.0
    if gap <= tol:
        return 1.0
    return min(1.0, max(0.0, math.log(first_gap / gap) / math.log(first_gap / tol)))


def _same_progress(a: tuple[int, float] | None, b: tuple[int, float]) -> bool:
    """Whether two ``(n_iter, gap)`` reports are the same (NaN gaps equal)."""
    return (
        a is not None and a[0] == b[0] and (a[1] == b[1] or (math.isnan(a[1]) and math.isnan(b[1])))
    )


def _no_progress() -> None:
    """What a :class:`_SolverProgress` becomes in another process: none."""
    return None


class _SolverProgress:
    """``progress(n_iter, gap)`` of :meth:`FitReport.solver_progress`. It
    reports to this process's callbacks only: pickled (an engine running
    the solve elsewhere), it becomes None.

    The Rust core calls it every 50 ms with what the solver last published,
    which stays the same through a stretch without a report (a kernel-column
    fill, the gradient's reconstruction): such a repeat is logged once.
    For the callbacks, the task has :data:`PROGRESS_STEPS` leaf subtasks:
    each call ends as many more of them as the share done has gained whole
    steps, at most ``PROGRESS_STEPS - 1`` before the solve ends; the task's
    own end then completes it. The share is the larger of two estimates,
    the largest so far (so a gap that grows back never moves the display
    backwards): the gap's (:func:`solve_share`), and, with ``n_samples``,
    ``n_iter / (2·(n_iter + n_samples))``, below one half, which moves the
    display through SMO's first phase, where many multipliers leave zero while
    the gap stays near its start."""

    def __init__(self, report: FitReport, tol: float, n_samples: int | None = None) -> None:
        self.report = report
        self.tol = float(tol)
        self.n_samples = n_samples
        self._logged: tuple[int, float] | None = None
        self._first_gap = math.nan
        self._share = 0.0
        self._steps = 0

    def __reduce__(self):
        return (_no_progress, ())

    def __call__(self, n_iter: int, gap: float) -> None:
        report = self.report
        if report.verbose >= 2:
            with report._lock:
                last, self._logged = self._logged, (int(n_iter), float(gap))
            if not _same_progress(last, self._logged):
                report.log(2, "solver: %d iterations, KKT gap %.3g", n_iter, gap)
        if report.context is not None:
            with report._lock:
                gap = float(gap)
                if not math.isfinite(self._first_gap) and math.isfinite(gap):
                    self._first_gap = gap
                share = solve_share(self._first_gap, gap, self.tol)
                if self.n_samples:
                    share = max(share, n_iter / (2.0 * (n_iter + self.n_samples)))
                self._share = max(self._share, share)
                steps = min(int(self._share * PROGRESS_STEPS), PROGRESS_STEPS - 1)
                meta = {"n_iter": int(n_iter), "kkt_gap": gap, "share": self._share}
                for _ in range(steps - self._steps):
                    ctx = report.context.subcontext(task_name="smo-progress")
                    ctx.call_on_fit_task_begin(estimator=report.estimator, metadata=meta)
                    ctx.call_on_fit_task_end(estimator=report.estimator, metadata=meta)
                self._steps = max(self._steps, steps)


class BaseKernelEstimator(CallbackSupportMixin, BaseEstimator):
    """Shared constraints, tags and prologues of the kernel estimators
    (classifiers, regressors and the one-class SVM)."""

    _parameter_constraints: ClassVar[dict] = {
        # A callable passes the constraints, hidden from their message, so
        # that fit can say which estimators take one (_check_kernel_callable).
        "kernel": [StrOptions(set(KERNELS)), Hidden(callable)],
        "degree": [Interval(Integral, 0, None, closed="left")],
        "gamma": [StrOptions({"scale", "auto"}), Interval(Real, 0.0, None, closed="neither")],
        "coef0": [Interval(Real, None, None, closed="neither")],
        "n_jobs": [Integral, None],
        "verbose": ["verbose"],
    }

    def __init_subclass__(cls, **kwargs) -> None:
        """Hide ``callable`` in a subclass's own ``kernel`` constraint unless
        it takes callable kernels, so that a bad name's message (``must be a
        str among {...}``) offers only what the estimator accepts."""
        super().__init_subclass__(**kwargs)
        constraints = cls.__dict__.get("_parameter_constraints")
        if cls._accepts_callable_kernel or not constraints or "kernel" not in constraints:
            return
        kernel = [Hidden(callable) if c is callable else c for c in constraints["kernel"]]
        cls._parameter_constraints = {**constraints, "kernel": kernel}

    def _fit_report(
        self, n_subtasks: int | None = 0, X=None, y=None, *, task_name: str = "fit"
    ) -> FitReport:
        """Start reporting this fit: the root of its callback task tree (when
        callbacks are set) with ``n_subtasks`` subtasks (None: not known in
        advance), ``on_fit_task_begin`` called; end it with
        :meth:`FitReport.end`. Call once per fit, inside ``fit_context``.

        Parameters
        ----------
        n_subtasks : int or None, default=0
            The root task's subtasks.
        X, y : array-like or None, default=None
            The training data, passed to the callbacks.
        task_name : str, default='fit'
            The root task's name.

        Returns
        -------
        FitReport
            The root task.
        """
        ctx = None
        if hasattr(self, "_init_callback_context") and (
            getattr(self, "_skl_callbacks", None) or hasattr(self, "_parent_callback_ctx")
        ):
            ctx = self._init_callback_context(task_name=task_name, max_subtasks=n_subtasks)
        if getattr(self, "verbose", 0):
            _enable_verbose_logging()
        report = FitReport(self, ctx, threading.RLock(), self._logger())
        report.begin(X, y)
        return report

    def _log_report(self) -> FitReport:
        """A :class:`FitReport` that only logs (``verbose``), for work outside
        ``fit`` (the callback API covers fits only).

        Returns
        -------
        FitReport
            A root task without callbacks.
        """
        if getattr(self, "verbose", 0):
            _enable_verbose_logging()
        return FitReport(self, None, threading.RLock(), self._logger())

    def _logger(self) -> logging.Logger:
        module = type(self).__module__
        return logging.getLogger(module if module.startswith("localsvm") else "localsvm")

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = getattr(self, "kernel", None) == "precomputed"
        # Sparse input: native in SVC, densified under a documented limit
        # elsewhere (_validation.densify).
        tags.input_tags.sparse = True
        return tags

    def _sparse_native(self) -> bool:
        """Whether fit and prediction compute on sparse rows without a
        dense copy (else sparse input is densified, see
        :func:`localsvm._validation.densify`).

        Returns
        -------
        bool
            False here; :class:`~localsvm.SVC` overrides it.
        """
        return False

    #: Whether the estimator accepts a callable ``kernel`` (SVC only).
    _accepts_callable_kernel: ClassVar[bool] = False

    def _check_kernel_callable(self) -> None:
        """Refuse a callable ``kernel`` where the estimator has no use for one."""
        if callable(self.kernel) and not self._accepts_callable_kernel:
            raise ValueError(
                f"{type(self).__name__} does not accept a callable kernel: callable kernels "
                "are supported by SVC, NuSVC, SVR, NuSVR, OneClassSVM and ProfileSVC only; "
                "use one of the named kernels"
            )

    def _training_kernel(self, X) -> tuple[np.ndarray, KernelSpec]:
        """What the solver works on, and the kernel: for a callable kernel,
        its matrix on the training examples, solved as a precomputed one
        (scikit-learn's way); otherwise ``X`` and the kernel resolved on it
        (kept as :attr:`kernel_spec_`)."""
        if callable(self.kernel):
            self._spec = KernelSpec("precomputed")
            return self._callable_kernel(X, X), self._spec
        return X, self._resolve_kernel(X)

    def _callable_kernel(self, A, B) -> np.ndarray:
        """``kernel(A, B)`` checked: a finite float64 array of shape
        ``(len(A), len(B))``, C-ordered."""
        name = getattr(self.kernel, "__name__", repr(self.kernel))
        # The callable's own errors (a TypeError on data it cannot read,
        # say) reach the caller as raised; only its result is checked here.
        K = self.kernel(A, B)
        try:
            K = np.ascontiguousarray(K, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"The kernel callable {name} must return a numeric array; "
                f"converting its result failed: {exc}"
            ) from exc
        expected = (_num_samples(A), _num_samples(B))
        if K.shape != expected:
            raise ValueError(
                f"The kernel callable {name} returned an array of shape {K.shape}; "
                f"kernel(X, Y) must have shape (len(X), len(Y)) = {expected}"
            )
        if not np.all(np.isfinite(K)):
            raise ValueError(f"The kernel callable {name} returned NaN or infinite values")
        return K

    @property
    def _precomputed(self) -> bool:
        return self.kernel == "precomputed"

    def _resolve_kernel(self, X: np.ndarray) -> KernelSpec:
        """The kernel with ``gamma`` resolved on the training data ``X``;
        kept as :attr:`kernel_spec_`."""
        self._check_kernel_callable()
        self._spec = make_spec(self.kernel, self.gamma, self.coef0, self.degree, X)
        return self._spec

    def _predict_prologue(self, X) -> np.ndarray:
        """``X`` checked against the fitted model (C-ordered float64); as
        given, unconverted, for a callable kernel fitted on non-numeric
        ``X`` (``_raw_input``)."""
        check_is_fitted(self)
        if getattr(self, "_raw_input", False) and callable(self.kernel):
            return X
        native = self._sparse_native()
        X = prepare_input(X, native=native, who=type(self).__name__)
        return validate_data(
            self,
            X,
            dtype=np.float64,
            order="C",
            reset=False,
            accept_sparse="csr" if native else False,
        )

    @property
    def kernel_spec_(self) -> KernelSpec:
        """The kernel with its resolved parameters (``gamma`` as a number)."""
        check_is_fitted(self)
        if not hasattr(self, "_spec"):
            raise AttributeError(
                f"{type(self).__name__} resolves its kernel per sub-model, not once"
            )
        return self._spec


class BaseKernelClassifier(ClassifierMixin, BaseKernelEstimator):
    """Shared constraints, tags and prologues of the kernel classifiers."""

    def _fit_prologue(self, X, y):
        """Validated ``X`` (C-ordered float64; square for a precomputed
        kernel) and ``y``, ``classes_`` set, and each label's index into it."""
        self._check_kernel_callable()
        X, y = validate_training_data(
            self, X, y, precomputed=self._precomputed, sparse=self._sparse_native()
        )
        y_idx = encode_classes(self, y)
        return X, y, y_idx

    def _weighted_fit_prologue(self, X, y, sample_weight):
        """:meth:`_fit_prologue`, then the examples of positive weight:
        ``X, y, y_idx, weights, kept`` as :func:`weighted_training_rows`."""
        X, y, y_idx = self._fit_prologue(X, y)
        return weighted_training_rows(self, X, y, y_idx, sample_weight)


class SVMDualMixin:
    """The backend choice, the finiteness check and the convergence warning
    of the estimators that solve SVM duals through a solver backend."""

    def _select_backend(self, problem: QPProblem) -> SolverBackend:
        """The backend named by ``backend`` (or chosen by 'auto') for ``problem``."""
        return select_backend(self.backend, problem)

    def _backend_sparse(self) -> bool:
        """Whether the backend that ``backend`` names computes on sparse rows
        ('auto' picks the Rust one, which does; an unknown name is False and
        left to fit's backend choice to report)."""
        if self.backend == "auto":
            return True
        try:
            return bool(getattr(get_backend(self.backend).capabilities, "sparse", False))
        except ValueError:
            return False

    def _store_support_vectors(self, X, support: np.ndarray, spec: KernelSpec, coef) -> None:
        """Set ``support_vectors_`` to the rows ``support`` of ``X`` (CSR when
        ``X`` is sparse, as scikit-learn; empty for a precomputed kernel) and,
        for the linear kernel, ``_linear_w`` to each model's weight vector
        ``w = coef @ support_vectors_`` (prediction is then one matrix
        product instead of a kernel expansion); else ``_linear_w`` is None."""
        if spec.precomputed:
            self.support_vectors_ = np.empty((0, 0))
        elif sp.issparse(X):
            self.support_vectors_ = sp.csr_matrix(X[support])
        else:
            self.support_vectors_ = X[support]
        self._linear_w = None
        if spec.name == "linear":
            sv = self.support_vectors_
            self._linear_w = np.asarray((sv.T @ coef.T).T) if sp.issparse(sv) else coef @ sv

    def _check_finite(self, solutions) -> None:
        """Refuse a solution with a non-finite coefficient, bias or objective:
        never report one as a fitted model.

        Parameters
        ----------
        solutions : iterable of QPSolution
            The solves of one fit.
        """
        solutions = list(solutions)
        if not solutions:
            return
        # All at once: hundreds of one-vs-one solves cost three array
        # operations, not three each.
        scalars = np.array([(sol.rho, sol.objective) for sol in solutions], dtype=np.float64)
        alphas = np.concatenate([np.asarray(sol.alpha, dtype=np.float64) for sol in solutions])
        if not (np.isfinite(scalars).all() and np.isfinite(alphas).all()):
            raise ValueError(
                "The dual coefficients, intercept or objective are not finite: the "
                "kernel values overflow for this data and these kernel parameters. "
                "Scale the features (e.g. StandardScaler) or lower gamma."
            )

    def _check_hard_margin(self, solutions, model: str) -> None:
        """With ``C = inf`` (the box :data:`HARD_MARGIN_C`) and no
        ``max_iter`` of the user's, refuse a solve that ran out of
        iterations: that is how the dual behaves when no model of the hard
        margin exists (its coefficients grow without bound, the objective
        falls without bound), and the capped solution is not a model of the
        data. LIBSVM itself never stops there.

        Parameters
        ----------
        solutions : iterable of QPSolution
            The solves of one fit.
        model : str
            What a hard-margin model does, for the message ("separates the
            classes").
        """
        C = getattr(self, "C", 1.0)
        if not (isinstance(C, Real) and math.isinf(C)) or self.max_iter != -1:
            return
        stopped = [s for s in solutions if not s.converged]
        if stopped:
            largest = max(float(np.max(s.alpha, initial=0.0)) for s in stopped)
            raise ValueError(
                f"C=inf (the hard margin) has no model here: {len(stopped)} dual "
                "problem(s) ran out of the solver's iterations while their dual "
                f"coefficients grew to {largest:.3g}, as they do without bound when no "
                f"model {model} (or when one does only with a margin too thin for the "
                "solver to reach). Use a finite C (or set max_iter to keep a capped "
                "solve, with a ConvergenceWarning)"
            )

    def _warn_unconverged(
        self, converged: Iterable[bool], what: str, reasons: Iterable[str] = ()
    ) -> bool:
        """One ``ConvergenceWarning`` when any of the solves (``converged``
        flags) stopped before reaching ``tol``; returns True if one did."""
        flags = np.fromiter((bool(c) for c in converged), dtype=bool)
        n_failed = int(flags.size - flags.sum())
        if n_failed == 0:
            return False
        why = "; ".join(sorted(set(reasons)))
        warnings.warn(
            f"{n_failed} of {flags.size} {what} stopped before reaching tol={self.tol} "
            f"(max_iter={self.max_iter}){': ' + why if why else ''}. The model may be "
            "inaccurate; raise max_iter, or scale the features (StandardScaler or "
            "MinMaxScaler), which usually speeds convergence.",
            ConvergenceWarning,
            stacklevel=3,
        )
        return True


#: The constraints of ``C``, ``tol``, ``max_iter`` and ``backend``.
DUAL_CONSTRAINTS: dict = {
    "C": [Interval(Real, 0.0, None, closed="neither")],
    "tol": [Interval(Real, 0.0, None, closed="neither")],
    "max_iter": [Interval(Integral, -1, None, closed="left")],
    "backend": [str],
}


class BaseSVMClassifier(SVMDualMixin, BaseKernelClassifier):
    """Base of the classifiers that solve SVM duals through a solver backend.

    :class:`BaseKernelClassifier` plus the parameters ``C``, ``tol``,
    ``max_iter`` and ``backend``, the backend choice and the convergence
    warning.
    """

    _parameter_constraints: ClassVar[dict] = {
        **BaseKernelClassifier._parameter_constraints,
        **DUAL_CONSTRAINTS,
    }
