"""The MagKmeans objective: class-balance vectors, per-cluster imbalance,
cohesion, and the data diameter that sets the default penalty weight.

MagKmeans (H. Cheng, P.-N. Tan and R. Jin, "Localized Support Vector Machine
and Its Efficient Algorithm", SIAM International Conference on Data Mining
(SDM), 2007, §4.1) minimises

    Σ_j Σ_i Z_ij ‖X_i − C_j‖² + R Σ_j imbalance_j

over hard assignments ``Z`` and centroids ``C``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["class_imbalance", "data_diameter", "magkmeans_objective"]

# The class-balance term.  With labels coded 0..K-1, each example i gets a
# "balance vector" a_i and the imbalance of cluster j is  Σ_p |Σ_i Z_ij a_ip|:
#
# * K = 2 (the paper):  a_i = y_i ∈ {−1, +1} (one column; class 1 is +1), so the
#   term is |Σ_i Z_ij y_i|.
# * K ≥ 3 (extension):  a_ic = 1[y_i = c] − 1/K (K columns), so the term is
#   Σ_c |n_jc − n_j/K| with n_jc = Σ_i Z_ij 1[y_i = c] and n_j = Σ_c n_jc: the
#   distance of the cluster's class counts from an equal split.
#
# For K = 2 the two forms agree exactly: n_j1 − n_j/2 = (n_j1 − n_j0)/2 =
# −(n_j0 − n_j/2), so each class term is |Σ_i Z_ij y_i| / 2 and their sum is
# the paper's term.  The binary form needs one LP slack per cluster instead of
# two.  With a single class (K = 1) the multiclass form gives a_i = 0: no
# penalty, i.e. k-means with an LP assignment step.


def encode_labels(y: Any, n_samples: int) -> tuple[np.ndarray, np.ndarray]:
    """Map class labels to ``0..K-1`` with :func:`numpy.unique`.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Any class labels; ``None`` is an error (MagKmeans needs them).
    n_samples : int
        The number of rows ``y`` must have.

    Returns
    -------
    codes : ndarray of shape (n_samples,)
        The class index of each example.
    classes : ndarray of shape (K,)
        The sorted distinct labels.
    """
    if y is None:
        raise ValueError(
            "MagKmeans needs the class labels y (it balances the classes in each "
            "cluster); got y=None — use clustering='kmeans' for unlabelled data"
        )
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D, got an array of shape {y.shape}")
    if y.shape[0] != n_samples:
        raise ValueError(
            f"y has {y.shape[0]} labels but profiles has {n_samples} rows; they must match"
        )
    classes, codes = np.unique(y, return_inverse=True)
    return codes.astype(np.intp).ravel(), classes


def balance_matrix(codes: np.ndarray, n_classes: int, form: str = "auto") -> np.ndarray:
    """The balance vectors ``a_i``, one row per example.

    Parameters
    ----------
    codes : ndarray of shape (n_samples,)
        Class indices in ``0..n_classes-1``.
    n_classes : int
        K, the number of classes.
    form : {"auto", "binary", "multiclass"}, default="auto"
        ``"binary"`` (K = 2 only): one column, ``±1``; ``"multiclass"``: K
        columns, ``1[y_i = c] − 1/K``; ``"auto"``: binary for K = 2,
        multiclass otherwise.

    Returns
    -------
    ndarray of shape (n_samples, P)
    """
    if form not in ("auto", "binary", "multiclass"):
        raise ValueError(f"form must be 'auto', 'binary' or 'multiclass', got {form!r}")
    if form == "binary" or (form == "auto" and n_classes == 2):
        if n_classes != 2:
            raise ValueError(f"form='binary' needs exactly 2 classes, got {n_classes}")
        return np.where(codes == 1, 1.0, -1.0)[:, None]
    onehot = np.zeros((codes.shape[0], n_classes))
    onehot[np.arange(codes.shape[0]), codes] = 1.0
    return onehot - 1.0 / n_classes


def _membership(Z: Any, n_samples: int, n_clusters: int | None) -> np.ndarray:
    """``Z`` as an ``(n_samples, κ)`` float matrix (one-hot if given as labels)."""
    Z = np.asarray(Z)
    if Z.ndim == 1:
        labels = Z.astype(np.intp)
        k = int(labels.max()) + 1 if n_clusters is None else int(n_clusters)
        M = np.zeros((n_samples, k))
        M[np.arange(n_samples), labels] = 1.0
        return M
    if Z.ndim != 2 or Z.shape[0] != n_samples:
        raise ValueError(f"Z must be (n_samples, n_clusters) or labels, got shape {Z.shape}")
    return Z.astype(np.float64)


def class_imbalance(
    Z: Any, y: Any, *, n_clusters: int | None = None, form: str = "auto"
) -> np.ndarray:
    """The class imbalance of each cluster.

    Parameters
    ----------
    Z : array-like of shape (n_samples, κ) or (n_samples,)
        A membership matrix (hard or fractional) or a vector of cluster labels.
    y : array-like of shape (n_samples,)
        Any class labels (mapped to ``0..K-1`` with :func:`numpy.unique`).
    n_clusters : int, optional
        κ when ``Z`` is a label vector (default: its largest label + 1).
    form : {"auto", "binary", "multiclass"}, default="auto"
        ``"binary"`` (K = 2 only): ``|Σ_i Z_ij y_i|`` with ``y_i = ±1`` (the
        larger class label is +1); ``"multiclass"``:
        ``Σ_c |Σ_i Z_ij (1[y_i = c] − 1/K)|``; ``"auto"``: binary for K = 2,
        multiclass otherwise. Both forms are equal for K = 2 (each class term
        is half the binary one).

    Returns
    -------
    ndarray of shape (κ,)

    Examples
    --------
    >>> Z = np.array([[1.0, 0.0], [0.3, 0.7], [0.0, 1.0]])
    >>> y = np.array([-1, 1, 1])
    >>> class_imbalance(Z, y, form="binary").tolist()
    [0.7, 1.7]
    >>> np.allclose(class_imbalance(Z, y, form="multiclass"), [0.7, 1.7])
    True
    """
    if y is not None:
        y = np.asarray(y)
    codes, classes = encode_labels(y, y.shape[0] if y is not None and y.ndim else -1)
    M = _membership(Z, codes.shape[0], n_clusters)
    A = balance_matrix(codes, classes.shape[0], form)
    return np.abs(M.T @ A).sum(axis=1)


def cluster_sums(labels: np.ndarray, V: np.ndarray, k: int) -> np.ndarray:
    """The sum of the rows of ``V`` in each of the ``k`` clusters, shape ``(k, ·)``."""
    onehot = np.zeros((k, labels.shape[0]))
    onehot[labels, np.arange(labels.shape[0])] = 1.0
    return onehot @ V


#: The parameters of the assignment step's local searches
#: (:func:`~localsvm.clustering.greedy.greedy_assign` and
#: :func:`~localsvm.clustering.batched.batched_assign`).
ASSIGN_PARAMS = """\
D : ndarray of shape (n_samples, k)
    Squared distances to the centroids.
codes : ndarray of shape (n_samples,)
    Class indices ``0..K-1``.
A : ndarray of shape (n_samples, P)
    The balance vectors of the examples.
R : float
    The penalty weight.
labels : ndarray of shape (n_samples,)
    The starting assignment (not modified).
min_size : int, default=0
    Examples of clusters with ``min_size`` members or fewer do not move."""


def start_moves(D: np.ndarray, codes: np.ndarray, A: np.ndarray, R: float, labels: np.ndarray):
    """What the assignment step's local searches keep up to date as they move
    examples: a copy of ``labels`` (as ``intp``), the balance vector of each
    class ``a_cls`` (an example's depends only on its class), the per-cluster
    sums of the balance vectors ``S``, the cluster sizes ``counts``, and the
    tolerance ``tol`` below which a change of the objective is rounding."""
    n, k = D.shape
    labels = labels.astype(np.intp).copy()
    a_cls = np.zeros((int(codes.max()) + 1, A.shape[1]))
    a_cls[codes] = A
    S = cluster_sums(labels, A, k)
    counts = np.bincount(labels, minlength=k)
    tol = 1e-12 * (float(np.abs(D).max()) + R * n + 1.0)
    return labels, a_cls, S, counts, tol


def join_leave_changes(S: np.ndarray, a_cls: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``add[c, j]`` and ``rem[c, j]``: the change of cluster ``j``'s imbalance
    when an example of class ``c`` joins it, and when one leaves it."""
    absS = np.abs(S).sum(axis=1)
    add = np.abs(S[None, :, :] + a_cls[:, None, :]).sum(axis=2) - absS[None, :]
    rem = np.abs(S[None, :, :] - a_cls[:, None, :]).sum(axis=2) - absS[None, :]
    return add, rem


def move_example(
    S: np.ndarray, counts: np.ndarray, labels: np.ndarray, i: int, dst: int, a: np.ndarray
) -> None:
    """Move example ``i``, of balance vector ``a``, to cluster ``dst``, keeping
    the local searches' cluster sums ``S`` and sizes ``counts`` (of
    :func:`start_moves`) up to date, all in place."""
    src = labels[i]
    S[src] -= a
    S[dst] += a
    counts[src] -= 1
    counts[dst] += 1
    labels[i] = dst


def imbalance_from_sums(S: np.ndarray) -> np.ndarray:
    """Per-cluster imbalance from the per-cluster sums of the balance vectors."""
    return np.abs(S).sum(axis=1)


def hard_objective(D: np.ndarray, labels: np.ndarray, A: np.ndarray, R: float, k: int) -> float:
    """``Σ_i D[i, labels_i] + R Σ_j imbalance_j`` of a hard assignment.

    Parameters
    ----------
    D : ndarray of shape (n_samples, k)
        Squared distances to the centroids.
    labels : ndarray of shape (n_samples,)
        The cluster of each example.
    A : ndarray of shape (n_samples, P)
        The balance vectors (:func:`balance_matrix`).
    R : float
        The penalty weight.
    k : int
        The number of clusters.

    Returns
    -------
    float
    """
    S = cluster_sums(labels, A, k)
    return float(D[np.arange(D.shape[0]), labels].sum() + R * imbalance_from_sums(S).sum())


def magkmeans_objective(
    profiles: Any, labels: Any, centers: Any, y: Any, R: float
) -> tuple[float, float, np.ndarray]:
    """The MagKmeans objective of a hard assignment.

    Parameters
    ----------
    profiles : array-like of shape (n_samples, n_features)
        The clustered rows ``X``.
    labels : array-like of shape (n_samples,)
        The cluster of each row.
    centers : array-like of shape (κ, n_features)
        The centroids ``C``.
    y : array-like of shape (n_samples,)
        Class labels.
    R : float
        The penalty weight.

    Returns
    -------
    objective : float
        ``cohesion + R · Σ_j imbalance_j``.
    cohesion : float
        ``Σ_i ‖X_i − C_{labels_i}‖²``.
    imbalance : ndarray of shape (κ,)
        Per cluster, as :func:`class_imbalance`.
    """
    X = np.asarray(profiles, dtype=np.float64)
    C = np.asarray(centers, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.intp)
    codes, classes = encode_labels(y, X.shape[0])
    A = balance_matrix(codes, classes.shape[0])
    cohesion = float(((X - C[labels]) ** 2).sum())
    S = cluster_sums(labels, A, C.shape[0])
    imb = imbalance_from_sums(S)
    return cohesion + float(R) * float(imb.sum()), cohesion, imb


def sq_distances(X: np.ndarray, C: np.ndarray, xx: np.ndarray | None = None) -> np.ndarray:
    """``D[i, j] = ‖X_i − C_j‖²``, clipped at 0; ``xx`` may hold ``‖X_i‖²``."""
    if xx is None:
        xx = (X * X).sum(axis=1)
    D = xx[:, None] - 2.0 * (X @ C.T) + (C * C).sum(axis=1)[None, :]
    return np.maximum(D, 0.0)


def data_diameter(profiles: Any, *, exact_max: int = 2000, chunk: int = 256) -> float:
    """The diameter ``max_{i,k} ‖X_i − X_k‖`` of the rows of ``profiles``.

    Parameters
    ----------
    profiles : array-like of shape (n_samples, n_features)
        The rows ``X``.
    exact_max : int, default=2000
        Up to this many rows the diameter is exact (all pairs).
    chunk : int, default=256
        Rows per block in the exact computation.

    Returns
    -------
    float
        The exact diameter for at most ``exact_max`` rows. Otherwise a
        double-sweep estimate: from row 0 go to the farthest row ``a``, from
        ``a`` to the farthest row ``b``, and repeat from ``b`` (four sweeps in
        all), returning the longest distance seen. That is a lower bound of the
        diameter and at least half of it (``‖p − q‖ ≤ ‖p − a‖ + ‖a − q‖ ≤
        2 max_q ‖a − q‖``), and usually close to it; it costs ``O(n m)`` per
        sweep.
    """
    X = np.asarray(profiles, dtype=np.float64)
    n = X.shape[0]
    if n < 2:
        return 0.0
    sq = (X * X).sum(axis=1)
    if n <= exact_max:
        best = 0.0
        for s in range(0, n, chunk):
            blk = X[s : s + chunk]
            d2 = sq[s : s + chunk, None] - 2.0 * (blk @ X.T) + sq[None, :]
            best = max(best, float(d2.max()))
        return float(np.sqrt(max(best, 0.0)))
    best, cur = 0.0, 0
    for _ in range(4):
        d2 = np.maximum(sq - 2.0 * (X @ X[cur]) + sq[cur], 0.0)
        far = int(np.argmax(d2))
        best = max(best, float(d2[far]))
        if far == cur:
            break
        cur = far
    return float(np.sqrt(best))
