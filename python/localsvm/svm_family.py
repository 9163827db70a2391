"""``localsvm.SVR``, ``localsvm.NuSVR`` and ``localsvm.OneClassSVM``: the rest
of LIBSVM's single-problem formulations on the Rust SMO core.

Each poses its dual as one :class:`~localsvm.QPProblem` in LIBSVM's form
(Chang & Lin, "LIBSVM: a library for support vector machines", ACM
Transactions on Intelligent Systems and Technology 2(3), 2011, §2-4):

* ε-SVR (Vapnik, "The Nature of Statistical Learning Theory", Springer,
  1995): ``2n`` variables ``(α, α*)`` over one kernel (the rows ``X[i]``
  taken twice), labels ``+1`` then ``−1``, linear term ``ε − y`` and
  ``ε + y``, boxes ``C · sample_weight`` and ``yᵀα = 0``;
* ν-SVR (Schölkopf, Smola, Williamson & Bartlett, "New support vector
  algorithms", Neural Computation 12, 2000): the same variables with
  linear term ``−y`` and ``+y`` and the two equality constraints of the
  ν-duals, started at LIBSVM's point (``Σ α = Σ α* = C·ν·n/2``);
* the one-class SVM (Schölkopf, Platt, Shawe-Taylor, Smola & Williamson,
  "Estimating the support of a high-dimensional distribution", Neural
  Computation 13, 2001): ``min ½αᵀKα`` with ``0 ≤ α_i ≤ sample_weight_i``
  and ``Σ α = ν · Σ sample_weight``, started, as LIBSVM, with the first
  examples at their bound.

The fitted attributes are scikit-learn's (:mod:`sklearn.svm`).
"""

from __future__ import annotations

import inspect
import textwrap
import time
import warnings
from numbers import Real
from typing import ClassVar

import numpy as np
import scipy.sparse as sp
from sklearn.base import OutlierMixin, RegressorMixin
from sklearn.utils import _safe_indexing
from sklearn.utils.validation import (
    _check_y,
    _num_samples,
    check_consistent_length,
    validate_data,
)

from ._base import (
    DUAL_CONSTRAINTS,
    BaseKernelEstimator,
    SVMDualMixin,
    box_constant,
    fit_method,
    numeric_input,
    positive_weights,
    read_only_coef,
    store_params,
)
from ._compat import Interval, StrOptions
from ._docstrings import X_PARTS, fill
from ._validation import prepare_input, reject_dask
from .backends.base import QPProblem, QPSolution, smo_settings, solve_checked
from .kernels import KERNELS, core_rows, decision_values
from .parallel import effective_n_jobs
from .svc import kernel_value_scale, small_weight_scale


def _describe(sol: QPSolution) -> str:
    state = "converged (KKT gap <= tol)" if sol.converged else "stopped before tol"
    return f"{sol.n_iter} iterations, {state}"


class _BaseSingleDual(SVMDualMixin, BaseKernelEstimator):
    """One dual per fit; the model is ``Σ_i c_i K(x_i, x) − ρ`` over the
    support vectors (``c = dual_coef_``)."""

    _parameter_constraints: ClassVar[dict] = {
        **BaseKernelEstimator._parameter_constraints,
        **{k: v for k, v in DUAL_CONSTRAINTS.items() if k != "C"},
        "kernel": [StrOptions(set(KERNELS)), callable],
        "shrinking": ["boolean"],
        "cache_size": [Interval(Real, 0, None, closed="neither")],
        "precision": [StrOptions({"auto", "float32", "float64"})],
    }

    def _sparse_native(self) -> bool:
        return self.kernel != "precomputed" and self._backend_sparse()

    # Subclasses: the problem, and the per-example coefficients from a solution.
    def _dual(self, X, y, sw) -> QPProblem:  # pragma: no cover - abstract
        raise NotImplementedError

    def _coefficients(self, sol: QPSolution, n: int) -> np.ndarray:
        return np.asarray(sol.alpha, dtype=np.float64)[:n].copy()

    _accepts_callable_kernel = True

    def _validate_fit(self, X, y):
        self._check_kernel_callable()
        # A callable kernel receives non-numeric X as given (scikit-learn's
        # behaviour: strings with a string kernel); only lengths are checked.
        self._raw_input = callable(self.kernel) and not numeric_input(X)
        if self._raw_input:
            if not self._needs_y:
                return X, None
            check_consistent_length(X, y)
            return X, np.asarray(_check_y(y, y_numeric=True, estimator=self), dtype=np.float64)
        native = self._sparse_native()
        X = prepare_input(X, native=native, who=type(self).__name__)
        reject_dask(y, "y", type(self).__name__)
        accept = "csr" if native else False
        if not self._needs_y:
            X = validate_data(self, X, dtype=np.float64, order="C", accept_sparse=accept)
            y = None
        else:
            X, y = validate_data(
                self, X, y, dtype=np.float64, order="C", accept_sparse=accept, y_numeric=True
            )
            y = np.asarray(y, dtype=np.float64)
        n = X.shape[0]
        if self.kernel == "precomputed" and X.shape[1] != n:
            raise ValueError(
                f"Precomputed matrix must be a square matrix. Input is a {n}x{X.shape[1]} matrix."
            )
        return X, y

    _needs_y: ClassVar[bool] = True

    def _weight_scale(self, sw: np.ndarray) -> float:
        """The power of two the weights are multiplied by for the solve (the
        solution divided by it after); 1 here, see :class:`OneClassSVM`."""
        return 1.0

    def _check_rounding(self, sol: QPSolution, problem: QPProblem, y) -> None:
        """Warn of a solution that the rounding of its gradient decides
        (nothing to check here; see :class:`NuSVR`)."""

    def _fit(self, X, y, sample_weight):
        # A warm start handed over by the search that refits this model
        # (SVRCV: the folds' averaged multipliers, one per variable of the
        # dual); read once, whatever this fit does.
        alpha_start = self.__dict__.pop("_alpha_start", None)
        X, y = self._validate_fit(X, y)
        n = _num_samples(X)
        sw = positive_weights(sample_weight, n)
        features = X
        X, spec = self._training_kernel(X)
        report = self._fit_report(1, X, y)
        tasks = report.subtasks("dual-problem", 1, iterative=True)
        scale = self._weight_scale(sw)
        problem = self._dual(X, y, sw * scale if scale != 1.0 else sw)
        problem.kernel = spec
        fits = alpha_start is not None and alpha_start[0].shape == (problem.n,)
        if fits and problem.alpha0 is None:
            problem.alpha0 = np.clip(alpha_start[0], 0.0, problem.upper)
        for name, value in smo_settings(self).items():
            setattr(problem, name, value)
        problem.n_threads = 2 if effective_n_jobs(self.n_jobs) >= 2 else 1
        problem.progress = tasks[0].solver_progress(float(self.tol), problem.n)
        backend = self._select_backend(problem)
        if sp.issparse(X):
            core_rows(X, cache=True)
        start = time.perf_counter()
        report.task_begin(0)
        sol = solve_checked(backend, problem)
        if scale != 1.0:
            # Back to the weights given (exact: a power of two).
            sol.alpha = np.asarray(sol.alpha, dtype=np.float64) / scale
            sol.rho = float(sol.rho) / scale
            sol.objective = float(sol.objective) / scale / scale
        report.task_end(0, sol, _describe)
        self._check_finite([sol])
        self._check_hard_margin([sol], "fits every target within epsilon")
        self._check_rounding(sol, problem, y)
        self.backend_ = backend.name
        self.precision_ = getattr(sol, "precision", "float64")
        coef = self._coefficients(sol, n)
        support = np.flatnonzero(coef != 0.0)
        self.support_ = support.astype(np.int32)
        self.n_support_ = np.array([support.size], dtype=np.int32)
        dual = coef[support][None, :]
        self._store_support_vectors(X, support, spec, dual)
        if callable(self.kernel):
            # The training examples as given (a list stays a list): what the
            # callable receives at prediction.
            self.support_vectors_ = _safe_indexing(features, support)
        self._dual_dense = dual
        self.dual_coef_ = sp.csr_matrix(dual) if sp.issparse(X) else dual
        self._rho = float(sol.rho)
        self.intercept_ = np.array([-self._rho])
        self.n_iter_ = int(sol.n_iter)
        self.dual_objective_ = float(sol.objective)
        self.fit_status_ = int(
            self._warn_unconverged([sol.converged], "dual problems", [sol.message or ""])
        )
        if self._linear_w is not None:
            self._linear_w = self._linear_w.reshape(1, -1)
        self.shape_fit_ = getattr(features, "shape", (n,))
        report.log(
            1,
            "%s fit: %d support vectors, %.3f s",
            type(self).__name__,
            support.size,
            time.perf_counter() - start,
        )
        report.end(X, y)
        return self

    def _decision(self, X) -> np.ndarray:
        """``Σ c_i K(x_i, x) − ρ``, one value per row."""
        X = self._predict_prologue(X)
        if callable(self.kernel):
            K = self._callable_kernel(X, self.support_vectors_)
            return K @ self._dual_dense[0] - self._rho
        if self._spec.precomputed:
            return X[:, self.support_] @ self._dual_dense[0] - self._rho
        if self._linear_w is not None:
            return np.asarray(X @ self._linear_w.T).ravel() - self._rho
        if self.support_.size == 0:
            return np.full(X.shape[0], -self._rho)
        precision = "float64" if self.precision_ == "float64" else self.precision
        return decision_values(
            self._spec,
            X,
            self.support_vectors_,
            self._dual_dense,
            np.array([-self._rho]),
            precision=precision,
        )[:, 0]

    @property
    def coef_(self):
        """Weights of the linear model (``kernel='linear'`` only).

        Read-only, and a CSR matrix after a sparse fit, as scikit-learn's.
        """
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self)
        if self._linear_w is None:
            raise AttributeError("coef_ is only available when using a linear kernel")
        return read_only_coef(self._linear_w, sparse=sp.issparse(self.support_vectors_))


#: Each parameter's entry, for the docstrings (in each signature's order).
_PARAM_DOC = {
    "kernel": """    kernel : {'linear', 'poly', 'rbf', 'sigmoid', 'precomputed'} or callable, \
default='rbf'
        The kernel. A callable ``kernel(X, Y)`` returns the kernel matrix of
        the rows of ``X`` against those of ``Y``; the training kernel is
        solved as a precomputed one, and ``X`` reaches the callable
        unconverted when it is not numeric (strings, say), as in
        scikit-learn.""",
    "degree": """    degree : int, default=3
        Degree of the polynomial kernel.""",
    "gamma": """    gamma : {'scale', 'auto'} or float, default='scale'
        Kernel coefficient of 'rbf', 'poly' and 'sigmoid' ('scale':
        ``1 / (n_features · X.var())``, 'auto': ``1 / n_features``).""",
    "coef0": """    coef0 : float, default=0.0
        Independent term of 'poly' and 'sigmoid'.""",
    "tol": """    tol : float, default=1e-3
        Stopping tolerance on the maximal KKT violation.""",
    "C": """    C : float, default=1.0
        Penalty parameter; ``np.inf`` for no limit (the finite box 1e150,
        as :class:`SVC`): where no function fits every target within
        ``epsilon`` the coefficients grow without bound, and with
        ``max_iter=-1`` the fit then raises ``ValueError`` instead of
        returning the capped solve.""",
    "epsilon": """    epsilon : float, default=0.1
        Width of the tube within which errors are not penalised; ``>= 0``.""",
    "nu": """    nu : float, default=0.5
        In ``(0, 1]``: an upper bound on the fraction of training errors and
        a lower bound on the fraction of support vectors.""",
    "shrinking": """    shrinking : bool, default=True
        Whether the solver shrinks variables stuck at a bound.""",
    "cache_size": """    cache_size : float, default=200
        Kernel cache, in megabytes.""",
    "verbose": """    verbose : int, default=0
        Log progress to the ``localsvm`` logger.""",
    "max_iter": """    max_iter : int, default=-1
        Iteration cap; -1 for the solver's safety cap.""",
    "backend": """    backend : str, default='auto'
        The solver backend.""",
    "n_jobs": """    n_jobs : int or None, default=None
        Two or more let the Rust solver use two threads on large problems.""",
    "precision": """    precision : {'auto', 'float32', 'float64'}, default='auto'
        The arithmetic of the kernel values (see :class:`~localsvm.SVC`).""",
}

#: ν-SVR's ``C``, which must be finite.
_C_FINITE = """    C : float, default=1.0
        Penalty parameter, positive and finite: ν-SVR's dual coefficients
        sum to ``C · nu · n``, so ``C = inf`` has no model (LIBSVM's is not
        finite) and is refused, as NaN is."""

_ATTR_DOC = """
    support_ : ndarray of shape (n_SV,)
        Indices of the support vectors.
    support_vectors_ : ndarray or CSR matrix of shape (n_SV, n_features)
        The support vectors (empty for a precomputed kernel).
    dual_coef_ : ndarray or CSR matrix of shape (1, n_SV)
        Their coefficients in the decision function.
    intercept_ : ndarray of shape (1,)
        The constant of the decision function, ``−ρ``.
    n_support_ : ndarray of shape (1,)
        Number of support vectors.
    fit_status_ : int
        0 when the solver converged, 1 otherwise (with a ``ConvergenceWarning``).
    n_iter_ : int
        Solver iterations.
    dual_objective_ : float
        The dual objective at the solution.
"""

#: ``X`` of the one-class SVM's scoring methods.
_X_SCORED = """\
Parameters
----------
X : {array-like, sparse matrix} of shape (n_samples, n_features) or (n_samples, n_train)
    Examples."""


def _documented(*, attributes: str = "", **entries: str):
    """Decorate an estimator: its docstring's ``{sections}`` field becomes the
    Parameters section, one ``_PARAM_DOC`` entry (or one of ``entries``) per
    parameter in the order of its signature, and the Attributes section, the
    models' common attributes then ``attributes``; the ``X`` fields of its
    methods are filled too."""

    def decorate(cls):
        names = inspect.signature(cls).parameters
        params = "\n".join(entries.get(name, _PARAM_DOC[name]) for name in names)
        attrs = _ATTR_DOC.strip("\n") + (f"\n\n{attributes}" if attributes else "")
        sections = (
            f"Parameters\n----------\n{textwrap.dedent(params)}\n\n"
            f"Attributes\n----------\n{textwrap.dedent(attrs)}"
        )
        return fill(sections=sections, X_scored=_X_SCORED, **X_PARTS)(cls)

    return decorate


def _regression_dual(X, upper, p_alpha, p_star, **fields) -> QPProblem:
    """The dual of ε-SVR and ν-SVR over ``2n`` variables ``(α, α*)``: the
    rows of ``X`` taken twice, labels ``+1`` then ``−1``, the boxes ``upper``
    for both halves, and the linear terms ``p_alpha`` then ``p_star``;
    ``fields`` are the formulation's other :class:`QPProblem` fields."""
    n = upper.shape[0]
    idx = np.arange(n)
    return QPProblem(
        X=X,
        rows=np.concatenate([idx, idx]),
        y=np.concatenate([np.ones(n), -np.ones(n)]),
        upper=np.concatenate([upper, upper]),
        p=np.concatenate([p_alpha, p_star]),
        **fields,
    )


def _regression_coefficients(sol: QPSolution, n: int) -> np.ndarray:
    """``α − α*``, each example's coefficient in the regression function."""
    a = np.asarray(sol.alpha, dtype=np.float64)
    return a[:n] - a[n:]


@_documented()
class SVR(RegressorMixin, _BaseSingleDual):
    """Epsilon-support vector regression on the Rust SMO core.

    ε-SVR (Vapnik, "The Nature of Statistical Learning Theory", Springer,
    1995), a drop-in for :class:`sklearn.svm.SVR`.

    The dual is solved in LIBSVM's form (Chang & Lin, "LIBSVM: a library for
    support vector machines", ACM TIST 2(3), 2011, §2.3): ``2n`` variables
    over the rows taken twice, with second-order working-set selection
    (Fan, Chen & Lin, JMLR 6, 2005) and shrinking.

    {sections}

    Examples
    --------
    >>> import numpy as np
    >>> from localsvm import SVR
    >>> X = np.linspace(0, 1, 20)[:, None]
    >>> reg = SVR(C=10.0, epsilon=0.05).fit(X, 2 * X[:, 0])
    >>> bool(abs(reg.predict([[0.5]])[0] - 1.0) < 0.1)
    True
    """

    _parameter_constraints: ClassVar[dict] = {
        **_BaseSingleDual._parameter_constraints,
        "C": [Interval(Real, 0.0, None, closed="right")],
        "epsilon": [Interval(Real, 0.0, None, closed="left")],
    }

    def __init__(
        self,
        *,
        kernel="rbf",
        degree=3,
        gamma="scale",
        coef0=0.0,
        tol=1e-3,
        C=1.0,
        epsilon=0.1,
        shrinking=True,
        cache_size=200,
        verbose=False,
        max_iter=-1,
        backend="auto",
        n_jobs=None,
        precision="auto",
    ):
        store_params(self, locals())

    def _dual(self, X, y, sw) -> QPProblem:
        eps = float(self.epsilon)
        return _regression_dual(X, box_constant(self.C) * sw, eps - y, eps + y)

    def _coefficients(self, sol, n):
        return _regression_coefficients(sol, n)

    @fit_method
    def fit(self, X, y, sample_weight=None):
        """Fit the model.

        {X_train_parameters}
        y : array-like of shape (n_samples,)
            Targets, finite numbers.
        sample_weight : array-like of shape (n_samples,), default=None
            Per-sample multipliers of ``C``; samples of weight ``<= 0`` are left out.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        return self._fit(X, y, sample_weight)

    def predict(self, X):
        """Predicted targets.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features) or (n_samples, n_train)
            Examples, or their kernel with the training examples.

        Returns
        -------
        ndarray of shape (n_samples,)
            The predictions.
        """
        return self._decision(X)


@_documented(
    C=_C_FINITE,
    attributes="""\
    epsilon_ : float
        The tube width the solution has (LIBSVM's ``−r``).""",
)
class NuSVR(RegressorMixin, _BaseSingleDual):
    """Nu-support vector regression on the Rust SMO core.

    ν-SVR (Schölkopf, Smola, Williamson & Bartlett, "New support vector
    algorithms", Neural Computation 12, 2000), a drop-in for
    :class:`sklearn.svm.NuSVR`.

    ``nu`` bounds the fraction of errors from above and the fraction of
    support vectors from below; the tube width is found by the solver.
    The dual is LIBSVM's (Chang & Lin, ACM TIST 2(3), 2011, §2.4 and §4.2):
    two equality constraints, working pairs from one label set.

    {sections}

    Examples
    --------
    >>> import numpy as np
    >>> from localsvm import NuSVR
    >>> X = np.linspace(0, 1, 20)[:, None]
    >>> reg = NuSVR(C=10.0, nu=0.5).fit(X, 2 * X[:, 0])
    >>> bool(abs(reg.predict([[0.5]])[0] - 1.0) < 0.1)
    True
    """

    _parameter_constraints: ClassVar[dict] = {
        **_BaseSingleDual._parameter_constraints,
        "C": [Interval(Real, 0.0, None, closed="neither")],
        "nu": [Interval(Real, 0.0, 1.0, closed="right")],
    }

    def __init__(
        self,
        *,
        nu=0.5,
        C=1.0,
        kernel="rbf",
        degree=3,
        gamma="scale",
        coef0=0.0,
        shrinking=True,
        tol=1e-3,
        cache_size=200,
        verbose=False,
        max_iter=-1,
        backend="auto",
        n_jobs=None,
        precision="auto",
    ):
        store_params(self, locals())

    def _dual(self, X, y, sw) -> QPProblem:
        upper = box_constant(self.C) * sw
        # LIBSVM's start: α_i = α*_i, filled in order up to C·ν·Σw / 2.
        start = fill_in_order(upper, float(self.nu) * upper.sum() / 2.0)
        return _regression_dual(
            X,
            upper,
            -y,
            y,
            alpha0=np.concatenate([start, start]),
            equality_kind="per_label",
        )

    def _coefficients(self, sol, n):
        self.epsilon_ = -float(getattr(sol, "r", 0.0))
        return _regression_coefficients(sol, n)

    def _check_rounding(self, sol: QPSolution, problem: QPProblem, y) -> None:
        """Warn when the rounding of the gradient is not small against the
        targets' spread. ν-SVR's multipliers sum to ``C · ν · Σ w`` from the
        start (LIBSVM's start, ``α_i = α*_i``), so every gradient entry
        carries a rounding of about ``ε · s · C · ν · Σ w`` (``s`` the
        kernel values' scale), however small the model's coefficients
        ``α − α*`` are; past the targets' spread the solver stops on
        rounding (or never reaches ``tol``) and the intercept, hence every
        prediction, is off by about that much."""
        if y is None or not np.size(y):
            return
        y = np.asarray(y, dtype=np.float64)
        spread = float(np.ptp(y)) or float(np.abs(y).max())
        # The float64 sums of α_j·K_ij (float32 kernel values round alike
        # for α_j and α*_j, which cancel): |K| <= 1 for 'rbf'.
        spec = problem.kernel
        scale = 1.0 if spec.name == "rbf" else kernel_value_scale(spec, problem.X, problem.rows)
        total = float(np.abs(np.asarray(sol.alpha, dtype=np.float64)).sum())
        rounding = float(np.finfo(np.float64).eps) * scale * total
        if spread > 0.0 and rounding > 1e-3 * spread:
            warnings.warn(
                f"NuSVR: the dual's gradient is rounded by about {rounding:.3g} (C · nu · "
                "sum(sample_weight) times the kernel values' scale times the unit roundoff), "
                f"not small against the spread of y ({spread:.3g}): the intercept and the "
                "predictions are not determined to better than that. Lower C (or the "
                "sample weights), or scale y (e.g. standardize it)",
                UserWarning,
                stacklevel=4,
            )

    fit = SVR.fit
    predict = SVR.predict


def fill_in_order(upper: np.ndarray, total: float) -> np.ndarray:
    """LIBSVM's start of the ν and one-class duals: each variable in turn
    takes ``min(upper_i, what is left of total)``.

    Parameters
    ----------
    upper : ndarray of shape (n,)
        The boxes.
    total : float
        The sum to distribute, at most ``upper.sum()``.

    Returns
    -------
    ndarray of shape (n,)
        The start.
    """
    before = np.concatenate([[0.0], np.cumsum(upper)[:-1]])
    return np.clip(total - before, 0.0, upper)


@_documented(
    attributes="""\
    offset_ : float
        ``ρ``: ``decision_function = score_samples − offset_``.""",
)
class OneClassSVM(OutlierMixin, _BaseSingleDual):
    """Unsupervised outlier detection by the one-class SVM on the Rust SMO core.

    The one-class SVM of Schölkopf, Platt, Shawe-Taylor, Smola & Williamson
    ("Estimating the support of a high-dimensional distribution", Neural
    Computation 13, 2001), a drop-in for :class:`sklearn.svm.OneClassSVM`.

    The dual ``min ½αᵀKα`` with ``0 ≤ α_i ≤ 1`` and ``Σ α = ν·n`` is solved
    as in LIBSVM (Chang & Lin, ACM TIST 2(3), 2011, §2.2) from its start,
    the first ``⌊ν·n⌋`` coefficients at 1. With ``sample_weight`` the boxes
    are the weights and the sum ``ν`` times theirs; weights whose largest is
    below ``2**-10`` are scaled by a power of two for the solve and the
    solution scaled back (exactly), since ``tol`` bounds a gradient that
    shrinks with them: LIBSVM stops near its start there.

    {sections}

    Examples
    --------
    >>> import numpy as np
    >>> from localsvm import OneClassSVM
    >>> X = np.random.RandomState(0).randn(100, 2)
    >>> det = OneClassSVM(nu=0.1, gamma=0.5).fit(X)
    >>> det.predict([[0.0, 0.0], [6.0, 6.0]]).tolist()
    [1, -1]
    """

    _needs_y = False

    _parameter_constraints: ClassVar[dict] = {
        **_BaseSingleDual._parameter_constraints,
        "nu": [Interval(Real, 0.0, 1.0, closed="right")],
    }

    def __init__(
        self,
        *,
        kernel="rbf",
        degree=3,
        gamma="scale",
        coef0=0.0,
        tol=1e-3,
        nu=0.5,
        shrinking=True,
        cache_size=200,
        verbose=False,
        max_iter=-1,
        backend="auto",
        n_jobs=None,
        precision="auto",
    ):
        store_params(self, locals())

    def _weight_scale(self, sw: np.ndarray) -> float:
        """:func:`~localsvm.svc.small_weight_scale`: the one-class dual
        (boxes ``w_i``, ``Σα = ν Σw``) and ``rho`` scale with the weights;
        the solution is scaled back after the solve. Large weights are left
        as they are (their solution scaled back could overflow)."""
        return small_weight_scale(sw)

    def _dual(self, X, y, sw) -> QPProblem:
        n = X.shape[0]
        return QPProblem(
            X=X,
            y=np.ones(n),
            upper=sw.copy(),
            p=np.zeros(n),
            alpha0=fill_in_order(sw, float(self.nu) * sw.sum()),
            equality_kind="start",
        )

    @fit_method
    def fit(self, X, y=None, sample_weight=None):
        """Detect the soft boundary of the set of samples ``X``.

        {X_train_parameters}
        y : Ignored
            Not used, present for API consistency.
        sample_weight : array-like of shape (n_samples,), default=None
            Per-sample boxes; samples of weight ``<= 0`` are left out.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        self._fit(X, None, sample_weight)
        self.offset_ = self._rho
        return self

    def decision_function(self, X):
        """Signed distance to the boundary: positive inside (inliers).

        {X_scored}

        Returns
        -------
        ndarray of shape (n_samples,)
            ``Σ α_i K(x_i, x) − ρ``.
        """
        return self._decision(X)

    def score_samples(self, X):
        """Raw scoring function of the samples, ``Σ α_i K(x_i, x)``.

        {X_scored}

        Returns
        -------
        ndarray of shape (n_samples,)
            The scores.
        """
        return self.decision_function(X) + self.offset_

    def predict(self, X):
        """+1 for inliers, −1 for outliers (a decision value of 0 is −1, as LIBSVM).

        {X_scored}

        Returns
        -------
        ndarray of shape (n_samples,)
            The labels.
        """
        return np.where(self.decision_function(X) > 0, 1, -1).astype(np.intp)
