"""Clustering strategies for cluster-based local SVMs (Profile SVM, MCSVM).

A strategy partitions rows (for Profile SVM: each training example's
similarity profile) into ``n_clusters`` groups, and may use the labels ``y``
(MagKmeans balances classes per cluster; plain k-means ignores them).
Built in:

* ``"kmeans"`` — scikit-learn's :class:`~sklearn.cluster.KMeans`; ignores ``y``.
* ``"magkmeans"`` — MagKmeans (Cheng, Tan, Jin, SDM 2007, §4.1): k-means plus a
  class-imbalance penalty ``R Σ_j |Σ_i Z_ij y_i|``; the assignment step is a
  linear program (:func:`magkmeans_lp`, solved by HiGHS), extended to any
  number of classes (:func:`class_imbalance`).
* ``"magkmeans-greedy"`` — the same objective, with the assignment step done by
  exact single-point local search instead of the LP (much faster, reaches a
  local minimum of the assignment step).

More register through the ``localsvm_register_clusterings`` hook.

>>> import numpy as np
>>> X = np.array([[0.0], [0.1], [5.0], [5.1]])
>>> res = get_clustering("kmeans").cluster(X, None, 2, random_state=0)
>>> len(set(res.labels[:2])), len(set(res.labels[2:])), bool(res.labels[0] != res.labels[2])
(1, 1, True)

k-means makes pure clusters here; MagKmeans with a large ``R`` puts one example
of each class in each cluster:

>>> X = np.array([[0.0], [0.2], [1.0], [1.2]])
>>> y = np.array([0, 0, 1, 1])
>>> res = get_clustering("magkmeans").cluster(X, y, 2, R=10.0, random_state=0)
>>> [sorted(y[res.labels == j].tolist()) for j in range(2)], res.imbalance.tolist()
([[0, 1], [0, 1]], [0.0, 0.0])
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .hookspecs import hookimpl
from .plugins import get_clustering

__all__ = [
    "ClusteringResult",
    "ClusteringStrategy",
    "KMeansClustering",
    "MagKmeansClustering",
    "MagKmeansGreedyClustering",
    "class_imbalance",
    "data_diameter",
    "get_clustering",
    "magkmeans_assign",
    "magkmeans_lp",
    "magkmeans_objective",
]


@dataclass
class ClusteringResult:
    """``labels[i]`` is the cluster of row ``i``; ``centers`` has one row per cluster.

    The optional fields are filled by strategies that have them (MagKmeans):
    ``imbalance`` — the class imbalance of each cluster (see
    :func:`class_imbalance`); ``cohesion`` — the k-means part of the objective;
    ``history`` — the objective after each iteration; ``R`` — the penalty weight
    used.
    """

    labels: np.ndarray
    centers: np.ndarray
    n_iter: int
    objective: float
    imbalance: np.ndarray | None = None
    cohesion: float | None = None
    history: tuple[float, ...] | None = None
    R: float | None = None


@runtime_checkable
class ClusteringStrategy(Protocol):
    """The interface of a clustering strategy."""

    #: The name users pass as ``clustering=...``.
    name: str

    def cluster(
        self,
        profiles: np.ndarray,
        y: np.ndarray | None,
        n_clusters: int,
        *,
        random_state: Any = None,
        **params: Any,
    ) -> ClusteringResult:
        """Partition the rows of ``profiles`` into ``n_clusters`` clusters."""
        ...


def check_n_clusters(n_clusters: Any, n_samples: int) -> int:
    """Validate ``n_clusters`` against the number of rows."""
    if isinstance(n_clusters, bool) or not isinstance(n_clusters, Integral) or n_clusters < 1:
        raise ValueError(f"n_clusters must be a positive integer, got {n_clusters!r}")
    if n_clusters > n_samples:
        raise ValueError(
            f"n_clusters={n_clusters} is larger than the number of examples ({n_samples})"
        )
    return int(n_clusters)


class KMeansClustering:
    """Lloyd's k-means with k-means++ seeding (scikit-learn); ignores ``y``."""

    name = "kmeans"

    def cluster(
        self,
        profiles: np.ndarray,
        y: np.ndarray | None,
        n_clusters: int,
        *,
        random_state: Any = None,
        n_init: int = 4,
        max_iter: int = 300,
    ) -> ClusteringResult:
        from sklearn.cluster import KMeans

        profiles = np.asarray(profiles, dtype=np.float64)
        k = check_n_clusters(n_clusters, profiles.shape[0])
        km = KMeans(n_clusters=k, n_init=n_init, max_iter=max_iter, random_state=random_state)
        labels = km.fit_predict(profiles)
        return ClusteringResult(
            labels=labels.astype(np.intp),
            centers=km.cluster_centers_,
            n_iter=int(km.n_iter_),
            objective=float(km.inertia_),
        )


# ---------------------------------------------------------------------------
# MagKmeans
# ---------------------------------------------------------------------------
#
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


def _encode_labels(y: Any, n_samples: int) -> tuple[np.ndarray, np.ndarray]:
    """``(codes, classes)``: ``y`` mapped to 0..K-1 with ``np.unique``."""
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


def _balance_matrix(codes: np.ndarray, n_classes: int, form: str = "auto") -> np.ndarray:
    """The ``(n, P)`` balance vectors ``a_i`` (see the comment above)."""
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

    ``Z`` is an ``(n, κ)`` membership matrix (hard or fractional) or a vector
    of cluster labels (then ``n_clusters`` sets κ, default ``max + 1``); ``y``
    any class labels (mapped to 0..K-1 with ``np.unique``). ``form="binary"``
    (K = 2 only): ``|Σ_i Z_ij y_i|`` with ``y_i = ±1`` (the larger class label
    is +1); ``form="multiclass"``: ``Σ_c |Σ_i Z_ij (1[y_i = c] − 1/K)|``;
    ``"auto"``: binary for K = 2, multiclass otherwise. Both forms are equal
    for K = 2 (each class term is half the binary one):

    >>> Z = np.array([[1.0, 0.0], [0.3, 0.7], [0.0, 1.0]])
    >>> y = np.array([-1, 1, 1])
    >>> class_imbalance(Z, y, form="binary").tolist()
    [0.7, 1.7]
    >>> np.allclose(class_imbalance(Z, y, form="multiclass"), [0.7, 1.7])
    True
    """
    if y is not None:
        y = np.asarray(y)
    codes, classes = _encode_labels(y, y.shape[0] if y is not None and y.ndim else -1)
    M = _membership(Z, codes.shape[0], n_clusters)
    A = _balance_matrix(codes, classes.shape[0], form)
    return np.abs(M.T @ A).sum(axis=1)


def _cluster_sums(labels: np.ndarray, V: np.ndarray, k: int) -> np.ndarray:
    """``(k, ·)``: the sum of the rows of ``V`` in each cluster."""
    onehot = np.zeros((k, labels.shape[0]))
    onehot[labels, np.arange(labels.shape[0])] = 1.0
    return onehot @ V


def _imbalance_from_sums(S: np.ndarray) -> np.ndarray:
    return np.abs(S).sum(axis=1)


def _hard_objective(D: np.ndarray, labels: np.ndarray, A: np.ndarray, R: float, k: int) -> float:
    S = _cluster_sums(labels, A, k)
    return float(D[np.arange(D.shape[0]), labels].sum() + R * _imbalance_from_sums(S).sum())


def magkmeans_objective(
    profiles: Any, labels: Any, centers: Any, y: Any, R: float
) -> tuple[float, float, np.ndarray]:
    """``(objective, cohesion, imbalance)`` of a hard assignment.

    ``cohesion = Σ_i ‖X_i − C_{labels_i}‖²``, ``imbalance`` per cluster (see
    :func:`class_imbalance`), ``objective = cohesion + R · Σ_j imbalance_j``.
    """
    X = np.asarray(profiles, dtype=np.float64)
    C = np.asarray(centers, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.intp)
    codes, classes = _encode_labels(y, X.shape[0])
    A = _balance_matrix(codes, classes.shape[0])
    cohesion = float(((X - C[labels]) ** 2).sum())
    S = _cluster_sums(labels, A, C.shape[0])
    imb = _imbalance_from_sums(S)
    return cohesion + float(R) * float(imb.sum()), cohesion, imb


def _sq_distances(X: np.ndarray, C: np.ndarray, xx: np.ndarray | None = None) -> np.ndarray:
    if xx is None:
        xx = (X * X).sum(axis=1)
    D = xx[:, None] - 2.0 * (X @ C.T) + (C * C).sum(axis=1)[None, :]
    return np.maximum(D, 0.0)


def data_diameter(profiles: Any, *, exact_max: int = 2000, chunk: int = 256) -> float:
    """The diameter ``max_{i,k} ‖X_i − X_k‖`` of the rows of ``profiles``.

    Exact (all pairs, in chunks of ``chunk`` rows) when there are at most
    ``exact_max`` rows. Otherwise a double-sweep estimate: from row 0 go to the
    farthest row ``a``, from ``a`` to the farthest row ``b``, and repeat from
    ``b`` (four sweeps in all), returning the longest distance seen. That is a
    lower bound of the diameter and at least half of it (``‖p − q‖ ≤ ‖p − a‖
    + ‖a − q‖ ≤ 2 max_q ‖a − q‖``), and usually close to it; it costs
    ``O(n m)`` per sweep.
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


def magkmeans_lp(
    D: Any, y: Any, R: float, *, form: str = "auto", min_size: int = 0
) -> tuple[np.ndarray, float]:
    """Solve the relaxed MagKmeans assignment LP for fixed centroids.

    ``D[i, j] = ‖X_i − C_j‖²``. The LP (variables ``Z`` row-major, then the
    slacks ``t``)::

        min  Σ_ij Z_ij D_ij + R Σ_(j,p) t_jp
        s.t. −t_jp ≤ Σ_i Z_ij a_ip ≤ t_jp,  0 ≤ Z_ij ≤ 1,  Σ_j Z_ij = 1,  t ≥ 0

    with the balance vectors ``a_i`` of :func:`class_imbalance` (one slack per
    cluster for two classes — the paper's form — one per cluster and class
    otherwise), and, if ``min_size > 0``, ``Σ_i Z_ij ≥ min_size`` for every
    cluster (not in the paper: an empty cluster is perfectly balanced, so with
    a large ``R`` the plain LP may empty clusters). Solved by
    ``scipy.optimize.linprog(method="highs")`` with sparse constraint matrices.
    Returns ``(Z, optimum)``, ``Z`` of shape ``(n, κ)``.
    """
    import scipy.sparse as sp
    from scipy.optimize import linprog

    D = np.asarray(D, dtype=np.float64)
    n, k = D.shape
    codes, classes = _encode_labels(y, n)
    A = _balance_matrix(codes, classes.shape[0], form)
    P = A.shape[1]
    nz, nt = n * k, k * P
    # Balance rows r = j * P + p:  Σ_i a_ip Z_ij − t_r ≤ 0  and  −Σ_i a_ip Z_ij − t_r ≤ 0.
    ii, jj, pp = np.meshgrid(np.arange(n), np.arange(k), np.arange(P), indexing="ij")
    ii, jj, pp = ii.ravel(), jj.ravel(), pp.ravel()
    rows = jj * P + pp
    cols = ii * k + jj
    vals = A[ii, pp]
    keep = vals != 0.0
    rows, cols, vals = rows[keep], cols[keep], vals[keep]
    t_rows = np.arange(nt)
    B = sp.csr_matrix(
        (
            np.concatenate([vals, -np.ones(nt)]),
            (np.concatenate([rows, t_rows]), np.concatenate([cols, nz + t_rows])),
        ),
        shape=(nt, nz + nt),
    )
    B_neg = sp.csr_matrix(
        (
            np.concatenate([-vals, -np.ones(nt)]),
            (np.concatenate([rows, t_rows]), np.concatenate([cols, nz + t_rows])),
        ),
        shape=(nt, nz + nt),
    )
    blocks = [B, B_neg]
    b_ub = [np.zeros(2 * nt)]
    if min_size > 0:
        # −Σ_i Z_ij ≤ −min_size
        blocks.append(
            sp.csr_matrix(
                (-np.ones(nz), (np.tile(np.arange(k), n), np.arange(nz))), shape=(k, nz + nt)
            )
        )
        b_ub.append(np.full(k, -float(min_size)))
    A_ub = sp.vstack(blocks, format="csr")
    A_eq = sp.csr_matrix(
        (np.ones(nz), (np.repeat(np.arange(n), k), np.arange(nz))), shape=(n, nz + nt)
    )
    c = np.concatenate([D.ravel(), np.full(nt, float(R))])
    bounds = np.zeros((nz + nt, 2))
    bounds[:nz, 1] = 1.0
    bounds[nz:, 1] = np.inf
    res = linprog(
        c,
        A_ub=A_ub,
        b_ub=np.concatenate(b_ub),
        A_eq=A_eq,
        b_eq=np.ones(n),
        bounds=bounds,
        method="highs",
    )
    if res.status != 0 or res.x is None:
        raise RuntimeError(f"the MagKmeans assignment LP failed: {res.message}")
    Z = np.clip(res.x[:nz].reshape(n, k), 0.0, 1.0)
    return Z, float(res.fun)


def _greedy_assign(
    D: np.ndarray,
    codes: np.ndarray,
    A: np.ndarray,
    R: float,
    labels: np.ndarray,
    min_size: int = 0,
) -> np.ndarray:
    """Best-improvement single-point moves on the discrete objective."""
    n, k = D.shape
    labels = labels.astype(np.intp).copy()
    rows = np.arange(n)
    # The balance vector of an example depends only on its class.
    ncls = int(codes.max()) + 1
    a_cls = np.zeros((ncls, A.shape[1]))
    a_cls[codes] = A
    S = _cluster_sums(labels, A, k)
    base = D - D[rows, labels][:, None]  # Δcohesion of moving i to cluster j
    counts = np.bincount(labels, minlength=k)
    scale = float(np.abs(D).max()) + R * n + 1.0
    tol = 1e-12 * scale
    for _ in range(50 * n + 100):
        absS = np.abs(S).sum(axis=1)  # (k,)
        # add[c, j]: Δimbalance of cluster j when an example of class c joins it;
        # rem[c, j]: ... when one leaves it.
        add = np.abs(S[None, :, :] + a_cls[:, None, :]).sum(axis=2) - absS[None, :]
        rem = np.abs(S[None, :, :] - a_cls[:, None, :]).sum(axis=2) - absS[None, :]
        delta = base + R * (add[codes] + rem[codes, labels][:, None])
        delta[rows, labels] = 0.0
        if min_size > 0:  # examples of clusters at the minimum size stay
            delta[counts[labels] <= min_size] = 0.0
        flat = int(np.argmin(delta))
        i, j = divmod(flat, k)
        if delta[i, j] >= -tol:
            break
        S[labels[i]] -= A[i]
        S[j] += A[i]
        counts[labels[i]] -= 1
        counts[j] += 1
        labels[i] = j
        base[i] = D[i] - D[i, j]
    return labels


def _repair_sizes(
    D: np.ndarray, labels: np.ndarray, min_size: int, Z: np.ndarray | None = None
) -> np.ndarray:
    """Move examples into clusters smaller than ``min_size``: for each such
    cluster ``j``, the examples with the largest ``Z_ij`` (ties: the smallest
    increase of ``D``) whose own cluster can spare them."""
    n, k = D.shape
    counts = np.bincount(labels, minlength=k)
    if min_size <= 0 or counts.min() >= min_size:
        return labels
    labels = labels.copy()
    rows = np.arange(n)
    for j in np.flatnonzero(counts < min_size):
        cost = D[:, j] - D[rows, labels]
        weight = Z[:, j] if Z is not None else np.zeros(n)
        for i in np.lexsort((cost, -weight)):
            if counts[j] >= min_size:
                break
            if labels[i] != j and counts[labels[i]] > min_size:
                counts[labels[i]] -= 1
                counts[j] += 1
                labels[i] = j
    return labels


def magkmeans_assign(
    D: Any,
    y: Any,
    R: float,
    *,
    method: str = "lp",
    start: Any = None,
    min_size: int = 0,
) -> np.ndarray:
    """The MagKmeans assignment step for fixed centroids: hard cluster labels.

    ``D[i, j] = ‖X_i − C_j‖²``; the objective is ``Σ_i D[i, labels_i] +
    R Σ_j imbalance_j`` (:func:`class_imbalance`).

    ``method="lp"``: solve the relaxation :func:`magkmeans_lp` (its global
    optimum) and round each row to its largest ``Z_ij`` (ties to the lowest
    cluster index). The LP solution is a vertex with at most about as many
    fractional rows as balance constraints, so it is usually (near-)integral,
    but rounding the fractional rows may slightly change the balance. If
    ``start`` (current labels) is given and has a lower objective than the
    rounded solution, ``start`` is returned, so the step never makes things
    worse.

    ``method="greedy"``: local search from ``start`` (default: the nearest
    centroid of each row): repeatedly move the single example whose move to
    another cluster lowers the objective most (the change is exact, from the
    per-cluster class sums), until no move improves. This reaches a *local*
    minimum of the discrete assignment problem (no single move improves),
    never worse than ``start``; the LP reaches the global minimum of the
    relaxation.

    ``min_size > 0`` keeps every cluster at ``min_size`` examples or more (the
    LP constraint ``Σ_i Z_ij ≥ min_size``; greedy never moves an example out of
    a cluster of that size or smaller). A cluster that rounding (or the greedy
    start) leaves too small is topped up with the examples of largest
    ``Z_ij`` (then cheapest ``D``) from clusters that can spare them.
    """
    D = np.asarray(D, dtype=np.float64)
    if D.ndim != 2:
        raise ValueError(f"D must be 2-D (n_samples, n_clusters), got shape {D.shape}")
    n, k = D.shape
    codes, classes = _encode_labels(y, n)
    A = _balance_matrix(codes, classes.shape[0])
    R = _check_R(R)
    if isinstance(min_size, bool) or not isinstance(min_size, Integral) or min_size < 0:
        raise ValueError(f"min_size must be an integer >= 0, got {min_size!r}")
    if min_size * k > n:
        raise ValueError(f"min_size={min_size} is impossible: {k} clusters of {n} examples")
    if start is not None:
        start = np.asarray(start, dtype=np.intp)
        if start.shape != (n,) or start.min() < 0 or start.max() >= k:
            raise ValueError(f"start must be {n} labels in [0, {k}), got {start!r}")
    if method == "lp":
        Z, _ = magkmeans_lp(D, y, R, min_size=min_size)
        labels = _repair_sizes(D, np.argmax(Z, axis=1).astype(np.intp), min_size, Z)
        if start is not None and _hard_objective(D, start, A, R, k) < _hard_objective(
            D, labels, A, R, k
        ):
            return start.copy()
        return labels
    if method == "greedy":
        if start is None:
            start = np.argmin(D, axis=1).astype(np.intp)
        start = _repair_sizes(D, start, min_size)
        return _greedy_assign(D, codes, A, R, start, min_size)
    raise ValueError(f"method must be 'lp' or 'greedy', got {method!r}")


def _check_R(R: Any) -> float:
    if isinstance(R, bool) or not isinstance(R, Real) or not np.isfinite(R) or R < 0:
        raise ValueError(f"R must be a finite number >= 0 (or None for diameter/κ), got {R!r}")
    return float(R)


def _check_positive_int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def _check_profiles(profiles: Any) -> np.ndarray:
    import scipy.sparse as sp

    if sp.issparse(profiles):
        profiles = profiles.toarray()
    X = np.asarray(profiles, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"profiles must be a 2-D array, got shape {X.shape}")
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"profiles must be non-empty, got shape {X.shape}")
    if not np.isfinite(X).all():
        raise ValueError("profiles must be finite (no NaN or inf)")
    return X


class MagKmeansClustering:
    """MagKmeans (Cheng, Tan, Jin, SDM 2007, §4.1): k-means with a class-balance penalty.

    Minimises ``Σ_j Σ_i Z_ij ‖X_i − C_j‖² + R Σ_j imbalance_j`` over hard
    assignments ``Z`` and centroids ``C``, where for two classes
    ``imbalance_j = |Σ_i Z_ij y_i|`` (``y_i = ±1``, the paper) and for K ≥ 3
    classes ``Σ_c |Σ_i Z_ij (1[y_i = c] − 1/K)|`` (the paper's future work; for
    K = 2 this equals the binary term exactly, see :func:`class_imbalance`).
    ``y`` may be any labels; it is required.

    Alternates (a) the assignment step with centroids fixed — here the LP of
    :func:`magkmeans_lp` rounded as in :func:`magkmeans_assign`
    (``"magkmeans-greedy"`` uses local search instead) — and (b) ``C_j`` = the
    mean of cluster ``j``'s members, until the assignment no longer changes or
    after ``max_iter`` iterations. The objective never increases: the
    assignment step keeps the current assignment when its result is worse.

    Parameters of :meth:`cluster`:

    * ``R`` — the penalty weight; ``None`` (default): the diameter of the rows
      divided by κ, as in the paper (exact up to 2000 rows, a double-sweep
      estimate above, see :func:`data_diameter`); ``0`` gives k-means.
    * ``max_iter`` — the most iterations per run; ``n_init`` — runs from
      different seeds, the lowest objective kept.
    * ``min_cluster_size`` (default 1) — every cluster keeps at least this
      many examples (a constraint of the assignment step, see
      :func:`magkmeans_assign`; not in the paper). An empty cluster is
      perfectly balanced, so without it a large ``R`` can put everything in
      few clusters; ``0`` gives the paper's unconstrained step.
    * ``init`` — ``"k-means++"`` (scikit-learn's seeding), ``"random"``
      (distinct random rows), or a ``(κ, m)`` array of initial centroids (then
      one run only).

    Empty clusters (possible only with ``min_cluster_size=0``): a cluster left
    empty by the assignment step is reseeded at
    the example farthest from its centroid (taken from a cluster with at least
    two members) when that does not raise the objective; otherwise it keeps its
    previous centroid and may be refilled later, and the result may contain an
    empty cluster (its ``imbalance`` is 0 and its centre the last centroid).
    """

    name = "magkmeans"
    _method = "lp"

    def cluster(
        self,
        profiles: np.ndarray,
        y: np.ndarray | None,
        n_clusters: int,
        *,
        random_state: Any = None,
        R: float | None = None,
        max_iter: int = 30,
        n_init: int = 1,
        init: Any = "k-means++",
        min_cluster_size: int = 1,
    ) -> ClusteringResult:
        from sklearn.cluster import kmeans_plusplus
        from sklearn.utils import check_random_state

        X = _check_profiles(profiles)
        n = X.shape[0]
        codes, classes = _encode_labels(y, n)
        k = check_n_clusters(n_clusters, n)
        max_iter = _check_positive_int(max_iter, "max_iter")
        n_init = _check_positive_int(n_init, "n_init")
        if (
            isinstance(min_cluster_size, bool)
            or not isinstance(min_cluster_size, Integral)
            or not 0 <= min_cluster_size * k <= n
        ):
            raise ValueError(
                f"min_cluster_size must be an integer >= 0 with n_clusters * min_cluster_size "
                f"<= {n} examples, got {min_cluster_size!r}"
            )
        min_size = int(min_cluster_size)
        R = data_diameter(X) / k if R is None else _check_R(R)
        A = _balance_matrix(codes, classes.shape[0])
        rng = check_random_state(random_state)

        fixed_init = None
        if isinstance(init, str):
            if init not in ("k-means++", "random"):
                raise ValueError(f"init must be 'k-means++', 'random' or an array, got {init!r}")
        else:
            fixed_init = np.asarray(init, dtype=np.float64)
            if fixed_init.shape != (k, X.shape[1]) or not np.isfinite(fixed_init).all():
                raise ValueError(
                    f"init must have shape ({k}, {X.shape[1]}) and be finite, "
                    f"got shape {fixed_init.shape}"
                )
            n_init = 1

        best: ClusteringResult | None = None
        for _ in range(n_init):
            if fixed_init is not None:
                centers = fixed_init.copy()
            elif init == "k-means++":
                centers, _ = kmeans_plusplus(X, k, random_state=rng)
            else:
                centers = X[rng.choice(n, size=k, replace=False)].copy()
            result = self._run(X, codes, A, k, R, centers, max_iter, min_size)
            if best is None or result.objective < best.objective:
                best = result
        assert best is not None
        return best

    def _run(
        self,
        X: np.ndarray,
        codes: np.ndarray,
        A: np.ndarray,
        k: int,
        R: float,
        centers: np.ndarray,
        max_iter: int,
        min_size: int,
    ) -> ClusteringResult:
        labels: np.ndarray | None = None
        history: list[float] = []
        n_iter = 0
        xx = (X * X).sum(axis=1)
        while n_iter < max_iter:
            n_iter += 1
            D = _sq_distances(X, centers, xx)
            new = magkmeans_assign(
                D, codes, R, method=self._method, start=labels, min_size=min_size
            )
            new = _fill_empty(D, new, A, R, k, centers, X)
            changed = labels is None or not np.array_equal(new, labels)
            labels = new
            counts = np.bincount(labels, minlength=k)
            sums = _cluster_sums(labels, X, k)
            nonempty = counts > 0
            centers = centers.copy()
            centers[nonempty] = sums[nonempty] / counts[nonempty, None]
            cohesion = float(((X - centers[labels]) ** 2).sum())
            imb = _imbalance_from_sums(_cluster_sums(labels, A, k))
            history.append(cohesion + R * float(imb.sum()))
            if not changed:
                break
        assert labels is not None
        imbalance = _imbalance_from_sums(_cluster_sums(labels, A, k))
        cohesion = float(((X - centers[labels]) ** 2).sum())
        return ClusteringResult(
            labels=labels,
            centers=centers,
            n_iter=n_iter,
            objective=cohesion + R * float(imbalance.sum()),
            imbalance=imbalance,
            cohesion=cohesion,
            history=tuple(history),
            R=R,
        )


def _fill_empty(
    D: np.ndarray,
    labels: np.ndarray,
    A: np.ndarray,
    R: float,
    k: int,
    centers: np.ndarray,
    X: np.ndarray,
) -> np.ndarray:
    """Reseed empty clusters at far-away examples when that does not raise the
    objective (the new centroid is the example itself); edits ``centers``."""
    counts = np.bincount(labels, minlength=k)
    if counts.min() > 0:
        return labels
    labels = labels.copy()
    D = D.copy()
    rows = np.arange(labels.shape[0])
    for j in np.flatnonzero(counts == 0):
        own = D[rows, labels]
        own = np.where(counts[labels] >= 2, own, -np.inf)
        i = int(np.argmax(own))
        if not np.isfinite(own[i]):
            break
        trial = labels.copy()
        trial[i] = j
        D_trial = D.copy()
        D_trial[:, j] = ((X - X[i]) ** 2).sum(axis=1)
        if _hard_objective(D_trial, trial, A, R, k) <= _hard_objective(D, labels, A, R, k):
            counts[labels[i]] -= 1
            counts[j] += 1
            labels = trial
            D = D_trial
            centers[j] = X[i]
    return labels


class MagKmeansGreedyClustering(MagKmeansClustering):
    """MagKmeans with a local-search assignment step (see :func:`magkmeans_assign`).

    Same parameters and objective as ``"magkmeans"``; instead of the LP each
    assignment step moves single examples to the cluster that lowers
    ``cohesion + R · imbalance`` most until no move improves (a local minimum
    of the assignment step, the LP reaches the global minimum of its
    relaxation), starting from the current assignment (the nearest centroid in
    the first iteration). Much faster than the LP for a few hundred examples
    and more.
    """

    name = "magkmeans-greedy"
    _method = "greedy"


@hookimpl
def localsvm_register_clusterings(register):
    """Register the built-in clustering strategies."""
    register(KMeansClustering())
    register(MagKmeansClustering())
    register(MagKmeansGreedyClustering())
