"""Kernel specifications shared by every estimator and backend.

A :class:`KernelSpec` names a kernel and carries its resolved parameters
(``gamma`` is a number here, never ``'scale'``). Kernel values are computed by
the Rust core (:func:`kernel_matrix`); :func:`kernel_matrix_numpy` is an
independent NumPy implementation used by the dense backends and the tests, so
the two can check each other.

>>> import numpy as np
>>> spec = KernelSpec("rbf", gamma=0.5)
>>> X = np.array([[0.0, 0.0], [1.0, 0.0]])
>>> np.round(kernel_matrix(spec, X, X), 4)
array([[1.    , 0.6065],
       [0.6065, 1.    ]])
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from . import _core
from ._docstrings import fill
from ._memory import memory_budget
from ._multiclass import ovo_pairs

KERNELS: tuple[str, ...] = ("linear", "poly", "rbf", "sigmoid", "precomputed")
"""The kernel names understood everywhere in localsvm (as in scikit-learn)."""


@dataclass(frozen=True)
class KernelSpec:
    """A kernel with numeric parameters.

    ``linear``: ⟨x, z⟩; ``poly``: (γ⟨x, z⟩ + coef0)^degree; ``rbf``:
    exp(−γ‖x − z‖²); ``sigmoid``: tanh(γ⟨x, z⟩ + coef0); ``precomputed``: the
    caller passes kernel values instead of features. The parameters are kept
    as attributes of the same names; invalid values raise ``ValueError``.

    Parameters
    ----------
    name : {'linear', 'poly', 'rbf', 'sigmoid', 'precomputed'}, default='rbf'
        The kernel.
    gamma : float, default=1.0
        Coefficient γ of 'poly', 'rbf' and 'sigmoid'; positive and finite
        (scikit-learn's 'scale' and 'auto' are resolved before this point).
    coef0 : float, default=0.0
        Constant term of 'poly' and 'sigmoid'.
    degree : int, default=3
        Degree of 'poly'; a non-negative integer.

    Examples
    --------
    >>> from localsvm import KernelSpec
    >>> spec = KernelSpec("poly", gamma=0.5, degree=2)
    >>> spec.precomputed, spec.core().degree
    (False, 2)
    """

    name: str = "rbf"
    gamma: float = 1.0
    coef0: float = 0.0
    degree: int = 3

    def __post_init__(self) -> None:
        if self.name not in KERNELS:
            raise ValueError(f"kernel must be one of {KERNELS}, got {self.name!r}")
        if self.name in ("poly", "rbf", "sigmoid") and not (
            np.isfinite(self.gamma) and self.gamma > 0
        ):
            raise ValueError(f"gamma must be a positive finite number, got {self.gamma!r}")
        if not np.isfinite(self.coef0):
            raise ValueError(f"coef0 must be finite, got {self.coef0!r}")
        if int(self.degree) != self.degree or self.degree < 0:
            raise ValueError(f"degree must be a non-negative integer, got {self.degree!r}")

    @property
    def precomputed(self) -> bool:
        """True when inputs are kernel values rather than features."""
        return self.name == "precomputed"

    def core(self) -> _core.Kernel:
        """Return the kernel as the Rust core's functions take it.

        Returns
        -------
        localsvm._core.Kernel
            The name and parameters, as Python scalars.
        """
        return _core.Kernel(self.name, float(self.gamma), float(self.coef0), int(self.degree))


def resolve_gamma(gamma: str | float, X: np.ndarray) -> float:
    """Turn scikit-learn's ``gamma`` setting into a number.

    ``'scale'`` is ``1 / (n_features · X.var())`` (1.0 when the variance is
    0), ``'auto'`` is ``1 / n_features``; a number is returned as it is (the
    estimators' parameter constraints have checked it).

    Parameters
    ----------
    gamma : {'scale', 'auto'} or float
        The setting.
    X : {ndarray, sparse matrix} of shape (n_samples, n_features)
        The training data it is resolved on (for sparse ``X`` the variance
        is ``X.multiply(X).mean() - X.mean() ** 2``, as scikit-learn).

    Returns
    -------
    float
        The kernel coefficient.
    """
    n_features = X.shape[1]
    if gamma == "scale":
        size = X.shape[0] * X.shape[1]
        with np.errstate(over="ignore", invalid="ignore"):
            if sp.issparse(X):
                # scikit-learn's formula for sparse X (no dense copy).
                var = float(X.multiply(X).mean() - X.mean() ** 2) if size else 0.0
            else:
                var = float(X.var()) if X.size else 0.0
        if not np.isfinite(var):
            raise ValueError(
                "gamma='scale' needs the variance of X, which overflows float64 for this "
                "data; scale the features (e.g. StandardScaler) or pass a numeric gamma"
            )
        if var == 0 and size and _spread(X) > 0:
            raise ValueError(
                "gamma='scale' needs the variance of X, which underflows float64 for this "
                f"data (largest |x| = {float(abs(X).max()):.3g}): X is not constant, but "
                "X.var() rounds to 0; scale the features (e.g. StandardScaler) or pass a "
                "numeric gamma"
            )
        g = 1.0 / (n_features * var) if var > 0 else 1.0
        if not (np.isfinite(g) and g > 0):
            raise ValueError(
                f"gamma='scale' gives 1 / (n_features * X.var()) = {g!r} for this data "
                f"(X.var() = {var!r}); scale the features or pass a numeric gamma"
            )
        return g
    if gamma == "auto":
        return 1.0 / max(n_features, 1)
    return float(gamma)


def _spread(X) -> float:
    """``max(X) − min(X)`` of a dense or sparse matrix."""
    return float(X.max() - X.min())


#: Sparse input with at least this fraction of its entries stored is
#: computed as dense rows: its dense copy (float64, plus the float32 copy the
#: dense kernels read) then takes at most 192 bytes per stored entry, still
#: O(nnz), and the dense SIMD kernels run several times faster than sums
#: over stored entries down to about this density (and their float32 cache
#: holds twice the columns). Sparser input stays sparse.
DENSE_LIKE_DENSITY = 1 / 16

#: The core copies of sparse training matrices made by :func:`core_rows`
#: with ``cache=True``, by ``id`` of the scipy matrix (dropped with it).
_CORE_CACHE: dict[int, tuple[weakref.ref, Any]] = {}


def dense_like(A) -> bool:
    """Whether the sparse matrix ``A`` is computed as dense rows.

    Parameters
    ----------
    A : scipy sparse matrix
        The input.

    Returns
    -------
    bool
        True when at least :data:`DENSE_LIKE_DENSITY` of its entries are
        stored and its dense copies (12 bytes per entry) need at most half
        of the available memory.
    """
    n, d = A.shape
    cells = n * d
    if cells == 0 or A.nnz < DENSE_LIKE_DENSITY * cells:
        return False
    return 12.0 * cells <= memory_budget()


def core_rows(A, *, cache: bool = False, keep_sparse: bool = False):
    """``A`` as the Rust core takes it: a C-ordered float64 array, or for a
    scipy sparse matrix a :class:`localsvm._core.CsrMatrix` (checked and
    copied once), or its dense copy when it is dense-like
    (:func:`dense_like`).

    Parameters
    ----------
    A : array-like or scipy sparse matrix
        Canonical CSR (sorted indices, no duplicates, as
        :func:`localsvm._validation.canonical_sparse` makes) when sparse.
    cache : bool, default=False
        Keep the core copy of a sparse ``A`` while ``A`` lives, so the
        binary problems of one fit share it; only for matrices the caller
        owns and does not modify.
    keep_sparse : bool, default=False
        Give a sparse ``A`` to the core as sparse rows even when it is
        dense-like.

    Returns
    -------
    ndarray or localsvm._core.CsrMatrix
        The core's input.
    """
    if not sp.issparse(A):
        return np.ascontiguousarray(A, dtype=np.float64)
    as_dense = not keep_sparse and dense_like(A)
    key = (id(A), as_dense)
    hit = _CORE_CACHE.get(key)
    if hit is not None and hit[0]() is A:
        return hit[1]
    csr = A if A.format == "csr" else A.tocsr()
    if as_dense:
        out = np.ascontiguousarray(csr.toarray(), dtype=np.float64)
    else:
        out = _core.CsrMatrix(
            np.ascontiguousarray(csr.data, dtype=np.float64),
            np.ascontiguousarray(csr.indices, dtype=np.int64),
            np.ascontiguousarray(csr.indptr, dtype=np.int64),
            (int(csr.shape[0]), int(csr.shape[1])),
        )
    if cache:
        ref = weakref.ref(A, lambda _, key=key: _CORE_CACHE.pop(key, None))
        _CORE_CACHE[key] = (ref, out)
    return out


def _core_pair(X, support_vectors):
    """``X`` and the support vectors in one form for the core: both dense
    arrays when neither is sparse or every sparse one is dense-like
    (:func:`dense_like`), else both sparse
    (:class:`localsvm._core.CsrMatrix`)."""
    if not (sp.issparse(X) or sp.issparse(support_vectors)):
        return X, support_vectors
    if all(not sp.issparse(M) or dense_like(M) for M in (X, support_vectors)):
        return core_rows(X), core_rows(support_vectors)
    return (
        core_rows(sp.csr_matrix(X, dtype=np.float64), keep_sparse=True),
        core_rows(sp.csr_matrix(support_vectors, dtype=np.float64), keep_sparse=True),
    )


def make_spec(
    kernel: str, gamma: str | float, coef0: float, degree: int, X: np.ndarray
) -> KernelSpec:
    """A :class:`KernelSpec` from scikit-learn style parameters and the data.

    The parameters are validated once, by the estimators' constraints;
    :class:`KernelSpec` itself rejects values no kernel can use.

    Parameters
    ----------
    kernel : str
        One of :data:`KERNELS`.
    gamma : {'scale', 'auto'} or float
        Resolved on ``X`` by :func:`resolve_gamma`.
    coef0 : float
        Constant term of 'poly' and 'sigmoid'.
    degree : int
        Degree of 'poly'.
    X : ndarray of shape (n_samples, n_features)
        The training data.

    Returns
    -------
    KernelSpec
        The kernel with numeric parameters.
    """
    g = resolve_gamma(gamma, X) if kernel in ("poly", "rbf", "sigmoid") else 1.0
    return KernelSpec(kernel, gamma=g, coef0=float(coef0), degree=int(degree))


def _as_rows(A: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(A, dtype=np.float64)


def _require_function(spec: KernelSpec, who: str) -> None:
    if spec.precomputed:
        raise ValueError(f"{who} needs a kernel function, not 'precomputed'")


_SPEC_A_B = """\
spec : KernelSpec
    The kernel; not 'precomputed'.
A : array-like of shape (n_a, n_features)
    Row points.
B : array-like of shape (n_b, n_features)
    Column points."""


@fill(spec_a_b=_SPEC_A_B)
def kernel_matrix(spec: KernelSpec, A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Compute ``K[i, j] = k(A[i], B[j])`` in the Rust core, in parallel.

    Parameters
    ----------
    {spec_a_b}

    Returns
    -------
    ndarray of shape (n_a, n_b)
        The kernel matrix.
    """
    _require_function(spec, "kernel_matrix")
    return _core.kernel_matrix(_as_rows(A), _as_rows(B), kernel=spec.core())


#: The first parameters of the decision-value functions.
_SPEC_X = """\
spec : KernelSpec
    A kernel function (not ``'precomputed'``).
X : {ndarray, sparse matrix} of shape (n_samples, n_features)
    The rows to evaluate."""

#: Their ``precision`` parameter.
_PRECISION = """\
precision : {'auto', 'float32', 'float64'}, default='auto'
    The arithmetic of the kernel values and sums."""


@fill(spec_x=_SPEC_X, precision=_PRECISION)
def decision_values(
    spec: KernelSpec,
    X: np.ndarray,
    support_vectors: np.ndarray,
    coef: np.ndarray,
    intercept: np.ndarray,
    *,
    precision: str = "auto",
) -> np.ndarray:
    """Kernel expansions of several binary models, computed by the Rust core.

    'float32' computes the kernel values with the vectorised float32 loops
    and sums them in float32 blocks (off by about 1e-7 of the kernel-value
    scale per term); 'float64' computes everything in float64; 'auto' takes
    float32 when ``X``, the support vectors, the kernel parameters and the
    coefficients are within float32's safe range, else float64. A model
    fitted in float64 should be evaluated in float64.

    Parameters
    ----------
    {spec_x}
    support_vectors : {ndarray, sparse matrix} of shape (n_SV, n_features)
        The support vectors shared by the models.
    coef : ndarray of shape (n_models, n_SV)
        Each model's coefficients ``y·α`` (0 where a vector is not its own).
    intercept : ndarray of shape (n_models,)
        Each model's intercept.
    {precision}

    Returns
    -------
    ndarray of shape (n_samples, n_models)
        ``K(X, support_vectors) @ coef.T + intercept``.

    Notes
    -----
    When ``X`` or the support vectors are sparse, both are taken as CSR
    and the values computed in float64 from dot products over the stored
    entries, whatever ``precision`` says; unless every sparse one is
    dense-like (:func:`dense_like`), which is computed as dense rows.
    """
    X, support_vectors = _core_pair(X, support_vectors)
    return _core.decision_values(
        X, support_vectors, coef, intercept, kernel=spec.core(), precision=precision
    )


@fill(spec_x=_SPEC_X, precision=_PRECISION)
def decision_values_ovo(
    spec: KernelSpec,
    X: np.ndarray,
    support_vectors: np.ndarray,
    n_support: np.ndarray,
    pair_coef: np.ndarray,
    intercept: np.ndarray,
    *,
    precision: str = "auto",
) -> np.ndarray:
    """Decision values of every one-vs-one pair, computed by the Rust core.

    Each row's kernel values against all support vectors are computed once,
    then each pair's value from its two classes' support vectors only: the
    cost is one kernel evaluation per (row, support vector) plus a short dot
    product per pair, not one per (pair, support vector). ``precision`` as
    in :func:`decision_values`, whose values these equal to rounding.

    Parameters
    ----------
    {spec_x}
    support_vectors : {ndarray, sparse matrix} of shape (n_SV, n_features)
        The support vectors, grouped by class in class order.
    n_support : ndarray of shape (n_classes,)
        How many support vectors each class has.
    pair_coef : ndarray of shape (n_values,)
        For each pair ``(a, b)``, ``a < b``, in LIBSVM's order: its
        coefficients ``y·α`` over class ``a``'s support vectors, then over
        class ``b``'s.
    intercept : ndarray of shape (n_pairs,)
        Each pair's intercept.
    {precision}

    Returns
    -------
    ndarray of shape (n_samples, n_pairs)
        Each pair's decision value, positive for its first class.
    """
    pairs = np.array(ovo_pairs(len(n_support)), dtype=np.int64).reshape(-1, 2)
    X, support_vectors = _core_pair(X, support_vectors)
    return _core.decision_values_ovo(
        X,
        support_vectors,
        np.asarray(n_support, dtype=np.int64),
        pairs,
        np.asarray(pair_coef, dtype=np.float64),
        np.asarray(intercept, dtype=np.float64),
        kernel=spec.core(),
        precision=precision,
    )


@fill(spec_a_b=_SPEC_A_B)
def kernel_matrix_numpy(
    spec: KernelSpec,
    A: np.ndarray,
    B: np.ndarray,
    *,
    sq_a: np.ndarray | None = None,
    sq_b: np.ndarray | None = None,
) -> np.ndarray:
    """Compute the same kernel matrix in plain NumPy (a reference implementation).

    In float64 throughout; for thin blocks (a few rows or columns) one matrix
    product here is also cheaper than a parallel call into the core.

    Parameters
    ----------
    {spec_a_b}
    sq_a, sq_b : ndarray of shape (n_a,) and (n_b,), optional
        The rows' squared norms when already known ('rbf' only).

    Returns
    -------
    ndarray of shape (n_a, n_b)
        The kernel matrix.
    """
    _require_function(spec, "kernel_matrix_numpy")
    A = _as_rows(A)
    B = _as_rows(B)
    dot = A @ B.T
    if spec.name == "linear":
        return dot
    if spec.name == "poly":
        return (spec.gamma * dot + spec.coef0) ** spec.degree
    if spec.name == "sigmoid":
        return np.tanh(spec.gamma * dot + spec.coef0)
    if sq_a is None:
        sq_a = (A * A).sum(axis=1)
    if sq_b is None:
        sq_b = (B * B).sum(axis=1)
    sq = sq_a[:, None] + sq_b[None, :] - 2.0 * dot
    return np.exp(-spec.gamma * np.maximum(sq, 0.0))
