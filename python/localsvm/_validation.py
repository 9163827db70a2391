"""Input checks shared by the classifiers' ``fit`` and prediction methods.

Sparse input (any scipy sparse matrix or array) is checked and put in
canonical form here, once for every estimator: :func:`canonical_sparse`
returns a CSR copy with sorted, summed entries. Estimators that compute on
sparse rows natively (``SVC`` with a named kernel function) keep it sparse;
every other estimator gets it densified by :func:`densify`, which refuses a
dense copy larger than :data:`DENSIFY_LIMIT_BYTES` or half the available
memory with a ``MemoryError`` naming the size.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import validate_data

from ._docstrings import fill
from ._memory import GIB, available_memory, memory_budget

#: The largest dense copy of sparse input an estimator without native sparse
#: support makes (bytes, 8 per value): 4 GiB, or half the available memory
#: when that is less.
DENSIFY_LIMIT_BYTES = 4 * 2**30


def canonical_sparse(X, name: str = "X") -> sp.csr_matrix:
    """A checked CSR float64 copy of the sparse matrix ``X`` with sorted,
    summed entries.

    Parameters
    ----------
    X : scipy sparse matrix or array
        Any format (CSR, CSC, COO, ...), with int32 or int64 indices.
    name : str, default='X'
        The parameter's name, for the messages.

    Returns
    -------
    scipy.sparse.csr_matrix
        A new matrix (never ``X`` itself): float64 values, int32 indices
        when they fit (else int64), sorted column indices without
        duplicates (duplicates summed, as scipy and the dense equivalent do).

    Raises
    ------
    ValueError
        For a structurally invalid matrix (indices out of range, ``indptr``
        not non-decreasing or of the wrong length), stored NaN or infinity,
        a matrix that is not two-dimensional, or complex values.
    """
    if X.ndim != 2:
        raise ValueError(f"{name} must be a 2-D sparse matrix, got {X.ndim} dimensions")
    if np.issubdtype(X.dtype, np.complexfloating):
        raise ValueError(f"Complex data not supported for sparse {name}")
    try:
        if X.format in ("csr", "csc", "bsr"):
            X.check_format(full_check=True)
        elif X.format == "coo":
            coords = getattr(X, "coords", None) or (X.row, X.col)
            for axis, c in enumerate(coords):
                if c.size and (c.min() < 0 or c.max() >= X.shape[axis]):
                    raise ValueError(
                        f"{'row' if axis == 0 else 'column'} index out of range for shape {X.shape}"
                    )
        csr = sp.csr_matrix(X, dtype=np.float64, copy=True)
    except (ValueError, IndexError, TypeError, OverflowError) as exc:
        raise ValueError(f"{name} is not a valid sparse matrix: {exc}") from exc
    csr.sum_duplicates()  # also sorts the indices
    csr.sort_indices()
    if not np.all(np.isfinite(csr.data)):
        raise ValueError(f"Input {name} contains NaN or infinity among its stored values.")
    csr.eliminate_zeros()
    return csr


#: The ``name`` and ``who`` parameters, which only word the error messages.
_NAME_WHO = """\
name : str, default='X'
    The parameter's name, for the error messages.
who : str, default='this estimator'
    The estimator, for the error messages."""


@fill(name_who=_NAME_WHO)
def densify(X, name: str = "X", who: str = "this estimator") -> np.ndarray:
    """The dense float64 copy of the canonical sparse ``X``, when it fits.

    Parameters
    ----------
    X : scipy.sparse.csr_matrix
        From :func:`canonical_sparse`.
    {name_who}

    Returns
    -------
    ndarray of shape X.shape
        C-ordered float64.

    Raises
    ------
    MemoryError
        When ``n × d × 8`` bytes exceed :data:`DENSIFY_LIMIT_BYTES` or half
        the available memory: naming the size and what to do instead.
    """
    n, d = X.shape
    nbytes = 8.0 * n * d
    limit = min(float(DENSIFY_LIMIT_BYTES), memory_budget())
    if nbytes > limit:
        avail = available_memory()
        mem = "" if avail is None else f", {avail / GIB:.2f} GiB of memory available"
        raise MemoryError(
            f"{who} computes on dense rows: sparse {name} of shape ({n}, {d}) would need a "
            f"{nbytes / GIB:.2f} GiB dense copy, more than the {limit / GIB:.2f} GiB limit "
            f"(4 GiB or half the available memory{mem}); use localsvm.SVC, which works on "
            "sparse rows natively, or reduce the features (e.g. TruncatedSVD) first"
        )
    return np.ascontiguousarray(X.toarray(), dtype=np.float64)


def reject_dask(X, name: str = "X", who: str = "this estimator") -> None:
    """Refuse a Dask collection (never compute one into this process).

    Only :class:`localsvm.CellSVC` fits and predicts on Dask collections,
    where the data lives; every other estimator raises ``TypeError``.
    """
    if hasattr(X, "__dask_graph__") and callable(getattr(X, "__dask_graph__", None)):
        raise TypeError(
            f"{who} does not take a Dask collection as {name}: it would be computed into "
            f"this process whole. Of localsvm's estimators only CellSVC fits and predicts on "
            f"Dask arrays and dataframes (on the cluster's workers); for {who}, pass "
            f"{name}.compute() if it fits in memory"
        )


@fill(name_who=_NAME_WHO)
def prepare_input(X, *, native: bool, name: str = "X", who: str = "this estimator"):
    """Sparse ``X`` made canonical (:func:`canonical_sparse`) and, unless
    ``native``, densified (:func:`densify`); anything else unchanged.

    Parameters
    ----------
    X : array-like or sparse matrix
        The input.
    native : bool
        Whether the caller computes on sparse rows.
    {name_who}

    Returns
    -------
    array-like or scipy.sparse.csr_matrix
        ``X``, canonical CSR, or its dense copy.
    """
    reject_dask(X, name, who)
    if not sp.issparse(X):
        return X
    X = canonical_sparse(X, name)
    return X if native else densify(X, name, who)


def validate_training_data(estimator, X, y, *, precomputed: bool = False, sparse: bool = False):
    """``X`` as C-ordered float64 and ``y`` checked as classification targets
    (scikit-learn's messages); with ``precomputed``, ``X`` must be square.
    Sparse ``X`` stays canonical CSR with ``sparse`` (else it is densified
    under :data:`DENSIFY_LIMIT_BYTES`)."""
    X = prepare_input(X, native=sparse, who=type(estimator).__name__)
    reject_dask(y, "y", type(estimator).__name__)
    X, y = validate_data(
        estimator, X, y, dtype=np.float64, order="C", accept_sparse="csr" if sparse else False
    )
    check_classification_targets(y)
    n = X.shape[0]
    if precomputed and X.shape[1] != n:
        raise ValueError(
            f"Precomputed matrix must be a square matrix. Input is a {n}x{X.shape[1]} matrix."
        )
    return X, y


def encode_classes(estimator, y) -> np.ndarray:
    """Set ``estimator.classes_`` and return each label's index into it;
    at least two classes are required."""
    estimator.classes_, y_idx = np.unique(y, return_inverse=True)
    n_classes = estimator.classes_.shape[0]
    if n_classes < 2:
        raise ValueError(f"The number of classes has to be greater than one; got {n_classes} class")
    return y_idx


def finite_sample_weight(sample_weight, n_samples: int) -> np.ndarray:
    """``sample_weight`` as ``n_samples`` finite float64 values: ``None``
    is all ones and a scalar is repeated; any other shape, NaN or infinity
    raises ``ValueError``."""
    if sample_weight is None:
        return np.ones(n_samples)
    sw = np.asarray(sample_weight, dtype=np.float64)
    if sw.ndim == 0:
        sw = np.full(n_samples, float(sw))
    if sw.shape != (n_samples,):
        raise ValueError(f"sample_weight must have shape ({n_samples},) to match X, got {sw.shape}")
    if not np.all(np.isfinite(sw)):
        raise ValueError("sample_weight contains NaN or infinity")
    return sw


def check_sample_weight(sample_weight, n_samples: int) -> np.ndarray:
    """Validate ``sample_weight``: ``None`` (all ones), a scalar, or
    ``n_samples`` finite, non-negative numbers."""
    sw = finite_sample_weight(sample_weight, n_samples)
    if np.any(sw < 0):
        raise ValueError("sample_weight must be non-negative")
    return sw
