"""Similarity strategies σ(x_s, x_i) ∈ [0, 1] for localized SVMs.

A strategy turns training examples and query (test) examples into the
``(n_train, n_query)`` matrix of similarities that weights each training
example's box in a local SVM (``U_i = C·σ(x_s, x_i)``; H. Cheng, P.-N. Tan and
R. Jin, "Localized Support Vector Machine and Its Efficient Algorithm", SIAM
International Conference on Data Mining (SDM), 2007). Built in:
``"gaussian"`` (soft, SLSVM) and ``"knn"`` (hard, HLSVM, the SVM-KNN of H.
Zhang, A. C. Berg, M. Maire and J. Malik, CVPR 2006). More register through
the ``localsvm_register_similarities`` hook.

>>> import numpy as np
>>> X = np.array([[0.0], [1.0], [3.0]])
>>> get_similarity("knn").compute(X, np.array([[0.2]]), k=2).ravel()
array([1., 1., 0.])
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any

import numpy as np

from .._compat import Interval, StrOptions
from .._docstrings import CLASSES, N_FEATURES_IN, attributes
from ..hookspecs import register_builtins
from ..kernels import KernelSpec, kernel_matrix
from ..plugins import get_similarity
from .base import SimilarityStrategy

__all__ = [
    "GaussianSimilarity",
    "KNNSimilarity",
    "SimilarityStrategy",
    "compute_similarity",
    "get_similarity",
    "similarity_kwargs",
]


def squared_distances(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Compute ``‖A[i] − B[j]‖²`` for all pairs, clipped at 0 against rounding.

    Parameters
    ----------
    A : array-like of shape (n_a, n_features)
        First set of points.
    B : array-like of shape (n_b, n_features)
        Second set of points.

    Returns
    -------
    ndarray of shape (n_a, n_b)
        The squared Euclidean distances.
    """
    A = np.asarray(A, dtype=np.float64)
    B = np.asarray(B, dtype=np.float64)
    d = (A * A).sum(1)[:, None] + (B * B).sum(1)[None, :] - 2.0 * (A @ B.T)
    return np.maximum(d, 0.0)


def _unit_scale(A: np.ndarray, B: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``A`` and ``B`` divided by their largest absolute entry (unchanged when
    that is 0): squared distances at that scale stay within float64."""
    A = np.asarray(A, dtype=np.float64)
    B = np.asarray(B, dtype=np.float64)
    scale = max(np.abs(A).max(initial=0.0), np.abs(B).max(initial=0.0))
    if scale == 0.0 or not np.isfinite(scale):
        return A, B
    return A / scale, B / scale


def similarity_parameter_constraints() -> dict[str, list]:
    """scikit-learn parameter constraints of the estimator parameters that
    choose and configure a similarity strategy (LocalSVC, ProfileSVC)."""
    return {
        "similarity": [str],
        "bandwidth": [Interval(Real, 0.0, None, closed="neither"), StrOptions({"scale"})],
        "k": [Interval(Integral, 1, None, closed="left")],
        "similarity_params": [dict, None],
    }


def bandwidth_parts(similarity: str) -> dict[str, str]:
    """The docstring parts (for ``_docstrings.fill``) of the estimators that
    take a ``bandwidth`` (LocalSVC, ProfileSVC): ``bandwidth``, the
    parameter's entry with the Gaussian ``similarity`` written as a formula,
    and ``bandwidth_attributes``, the start of the Attributes section."""
    parameter = f"""\
bandwidth : float or 'scale', default='scale'
    The width λ of the Gaussian similarity ``{similarity}``;
    a number must be > 0. 'scale' (the default since this release;
    1.0 before) is ``n_features · X.var()`` on the training data, the
    ``1 / gamma`` of ``gamma='scale'``, so the similarity follows the
    data's scale (a fixed 1.0 on standardized data with 20 features
    makes every similarity about ``e⁻⁴⁰``); the number used is
    ``bandwidth_``."""
    fitted = """\
bandwidth_ : float
    The Gaussian similarity's width λ in use (``bandwidth`` with 'scale'
    resolved on the training data)."""
    return {
        "bandwidth": parameter,
        "bandwidth_attributes": attributes(CLASSES, fitted, N_FEATURES_IN),
    }


def resolve_bandwidth(bandwidth: Any, X) -> Any:
    """Turn ``bandwidth='scale'`` into a number: ``n_features · X.var()``.

    That is ``1 / gamma`` of scikit-learn's ``gamma='scale'``, so the Gaussian
    similarity ``exp(−‖x − x'‖² / λ)`` is the RBF kernel of the global SVM's
    default width: on standardized data two examples at a typical distance
    (``‖x − x'‖² ≈ 2·n_features``) are ``e⁻²`` similar, whatever the number of
    features. A number is returned as it is.

    Parameters
    ----------
    bandwidth : float or 'scale'
        The setting.
    X : {ndarray, sparse matrix} of shape (n_samples, n_features)
        The training data it is resolved on.

    Returns
    -------
    float
        The width λ.
    """
    if isinstance(bandwidth, str) and bandwidth == "scale":
        from ..kernels import resolve_gamma

        return 1.0 / resolve_gamma("scale", X)
    return bandwidth


def similarity_kwargs(strategy: Any, estimator: Any, X=None) -> dict[str, Any]:
    """The keyword parameters for ``strategy.compute``: each name the
    strategy declares in ``parameters`` taken from the estimator's attribute
    of that name (``bandwidth``, ``k``), then ``similarity_params`` on top.
    ``bandwidth='scale'`` is resolved on the training data ``X`` and kept as
    the estimator's ``bandwidth_``."""
    kwargs = {
        name: getattr(estimator, name)
        for name in getattr(strategy, "parameters", ())
        if hasattr(estimator, name)
    }
    kwargs.update(estimator.similarity_params or {})
    if "bandwidth" in kwargs and X is not None:
        kwargs["bandwidth"] = resolve_bandwidth(kwargs["bandwidth"], X)
    if hasattr(estimator, "bandwidth") and X is not None:
        estimator.bandwidth_ = resolve_bandwidth(estimator.bandwidth, X)
    return kwargs


def compute_similarity(
    name: str, X_train: np.ndarray, X_query: np.ndarray, **params: Any
) -> np.ndarray:
    """Compute σ(x_s, x_i) with the registered strategy ``name``, checked.

    Parameters
    ----------
    name : str
        A name from :func:`localsvm.list_similarities`.
    X_train : ndarray of shape (n_train, n_features)
        Training examples.
    X_query : ndarray of shape (n_query, n_features)
        Query (test) examples.
    **params : dict
        The strategy's parameters.

    Returns
    -------
    ndarray of shape (n_train, n_query)
        The similarities; ``ValueError`` if the strategy returned another
        shape or values that are not finite and in [0, 1].
    """
    strategy = get_similarity(name)
    sigma = np.asarray(strategy.compute(X_train, X_query, **params), dtype=np.float64)
    expected = (X_train.shape[0], X_query.shape[0])
    if sigma.shape != expected:
        raise ValueError(
            f"similarity strategy {name!r} returned shape {sigma.shape}, expected {expected}"
        )
    if not np.all(np.isfinite(sigma)) or sigma.min(initial=0.0) < 0 or sigma.max(initial=0.0) > 1:
        raise ValueError(f"similarity strategy {name!r} returned values outside [0, 1]")
    return sigma


class GaussianSimilarity:
    """Soft similarity ``exp(−‖x_s − x_i‖² / bandwidth)`` (SLSVM)."""

    name = "gaussian"
    parameters = ("bandwidth",)

    def compute(
        self, X_train: np.ndarray, X_query: np.ndarray, *, bandwidth: float = 1.0
    ) -> np.ndarray:
        if isinstance(bandwidth, bool) or not isinstance(bandwidth, Real):
            raise ValueError(f"bandwidth must be a positive number, got {bandwidth!r}")
        if not (np.isfinite(bandwidth) and bandwidth > 0):
            raise ValueError(f"bandwidth must be a positive number, got {bandwidth!r}")
        return kernel_matrix(KernelSpec("rbf", gamma=1.0 / float(bandwidth)), X_train, X_query)


class KNNSimilarity:
    """Hard similarity: 1 for the ``k`` training examples nearest to each
    query, 0 otherwise (HLSVM / KNN-SVM). Ties at equal distance go to the
    lower training index."""

    name = "knn"
    parameters = ("k",)

    def compute(self, X_train: np.ndarray, X_query: np.ndarray, *, k: int = 10) -> np.ndarray:
        n_train = np.asarray(X_train).shape[0]
        if isinstance(k, bool) or not isinstance(k, Integral) or k < 1:
            raise ValueError(f"k must be a positive integer, got {k!r}")
        if k > n_train:
            raise ValueError(f"k={k} is larger than the number of training examples ({n_train})")
        # The order of the distances does not depend on the scale: work at
        # unit scale, where ‖x − z‖² neither overflows nor underflows.
        X_train, X_query = _unit_scale(X_train, X_query)
        d = squared_distances(X_train, X_query)
        order = np.argsort(d, axis=0, kind="stable")[:k]
        sigma = np.zeros_like(d)
        np.put_along_axis(sigma, order, 1.0, axis=0)
        return sigma


localsvm_register_similarities = register_builtins(
    "localsvm_register_similarities", GaussianSimilarity, KNNSimilarity
)
