"""The private bases every localsvm classifier is built on.

:class:`BaseKernelClassifier` owns what every kernel classifier shares: the
constraints of the kernel parameters and ``n_jobs``, the ``pairwise`` tag of
a precomputed kernel, the fit prologue (scikit-learn's input checks, the
class encoding, the kernel with ``gamma`` resolved on the training data) and
the predict prologue. :class:`BaseSVMClassifier` adds what the estimators
that solve SVM duals share: ``C``, ``tol``, ``max_iter`` and ``backend``,
the backend choice, and one ``ConvergenceWarning`` when any solve stopped at
its iteration limit. An estimator declares only its own parameters, on top
of its base's ``_parameter_constraints``.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Iterable
from numbers import Integral, Real
from typing import ClassVar

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted, validate_data

from ._compat import Interval, StrOptions
from ._validation import encode_classes, validate_training_data
from .backends.base import QPProblem, SolverBackend
from .backends.select import select_backend
from .kernels import KERNELS, KernelSpec, make_spec

#: Kernel names without ``'precomputed'``, for estimators that need features.
FEATURE_KERNELS: frozenset[str] = frozenset(KERNELS) - {"precomputed"}


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


class BaseKernelClassifier(ClassifierMixin, BaseEstimator):
    """Shared constraints, tags and prologues of the kernel classifiers."""

    _parameter_constraints: ClassVar[dict] = {
        # A callable passes the constraints so that fit can say that only
        # SVC takes one (_check_kernel_callable).
        "kernel": [StrOptions(set(KERNELS)), callable],
        "degree": [Interval(Integral, 0, None, closed="left")],
        "gamma": [StrOptions({"scale", "auto"}), Interval(Real, 0.0, None, closed="neither")],
        "coef0": [Interval(Real, None, None, closed="neither")],
        "n_jobs": [Integral, None],
    }

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = getattr(self, "kernel", None) == "precomputed"
        return tags

    #: Whether the estimator accepts a callable ``kernel`` (SVC only).
    _accepts_callable_kernel: ClassVar[bool] = False

    def _check_kernel_callable(self) -> None:
        """Refuse a callable ``kernel`` where the estimator has no use for one."""
        if callable(self.kernel) and not self._accepts_callable_kernel:
            raise ValueError(
                f"{type(self).__name__} does not accept a callable kernel: callable kernels "
                "are supported by SVC only; use one of the named kernels"
            )

    @property
    def _precomputed(self) -> bool:
        return self.kernel == "precomputed"

    def _fit_prologue(self, X, y):
        """Validated ``X`` (C-ordered float64; square for a precomputed
        kernel) and ``y``, ``classes_`` set, and each label's index into it."""
        self._check_kernel_callable()
        X, y = validate_training_data(self, X, y, precomputed=self._precomputed)
        y_idx = encode_classes(self, y)
        return X, y, y_idx

    def _resolve_kernel(self, X: np.ndarray) -> KernelSpec:
        """The kernel with ``gamma`` resolved on the training data ``X``;
        kept as :attr:`kernel_spec_`."""
        self._check_kernel_callable()
        self._spec = make_spec(self.kernel, self.gamma, self.coef0, self.degree, X)
        return self._spec

    def _predict_prologue(self, X) -> np.ndarray:
        """``X`` checked against the fitted model (C-ordered float64)."""
        check_is_fitted(self)
        return validate_data(self, X, dtype=np.float64, order="C", reset=False)

    @property
    def kernel_spec_(self) -> KernelSpec:
        """The kernel with its resolved parameters (``gamma`` as a number)."""
        check_is_fitted(self)
        if not hasattr(self, "_spec"):
            raise AttributeError(
                f"{type(self).__name__} resolves its kernel per sub-model, not once"
            )
        return self._spec


class BaseSVMClassifier(BaseKernelClassifier):
    """Base of the estimators that solve SVM duals through a solver backend.

    :class:`BaseKernelClassifier` plus the parameters ``C``, ``tol``,
    ``max_iter`` and ``backend``, the backend choice and the convergence
    warning.
    """

    _parameter_constraints: ClassVar[dict] = {
        **BaseKernelClassifier._parameter_constraints,
        "C": [Interval(Real, 0.0, None, closed="neither")],
        "tol": [Interval(Real, 0.0, None, closed="neither")],
        "max_iter": [Interval(Integral, -1, None, closed="left")],
        "backend": [str],
    }

    def _select_backend(self, problem: QPProblem) -> SolverBackend:
        """The backend named by ``backend`` (or chosen by 'auto') for ``problem``."""
        return select_backend(self.backend, problem)

    def _check_finite(self, solutions) -> None:
        """Refuse a solution with a non-finite coefficient, bias or objective:
        never report one as a fitted model.

        Parameters
        ----------
        solutions : iterable of QPSolution
            The solves of one fit.
        """
        for sol in solutions:
            if not (
                np.all(np.isfinite(sol.alpha))
                and np.isfinite(sol.rho)
                and np.isfinite(sol.objective)
            ):
                raise ValueError(
                    "The dual coefficients, intercept or objective are not finite: the "
                    "kernel values overflow for this data and these kernel parameters. "
                    "Scale the features (e.g. StandardScaler) or lower gamma."
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
