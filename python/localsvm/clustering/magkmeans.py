"""MagKmeans: k-means with a class-balance penalty, alternating an assignment
step (LP or local search) with centroid updates.

Reference: H. Cheng, P.-N. Tan and R. Jin, "Localized Support Vector Machine
and Its Efficient Algorithm", SIAM International Conference on Data Mining
(SDM), 2007, §4.1. The multiclass balance term extends the paper's binary one
(see :func:`~localsvm.clustering.class_imbalance`).
"""

from __future__ import annotations

import warnings
from numbers import Integral, Real
from typing import Any, NamedTuple

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .base import ClusteringResult, check_n_clusters
from .batched import batched_assign
from .greedy import greedy_assign
from .lp import magkmeans_lp
from .objective import (
    balance_matrix,
    cluster_sums,
    data_diameter,
    encode_labels,
    hard_objective,
    imbalance_from_sums,
    sq_distances,
)
from .repair import fill_empty, repair_sizes

__all__ = ["MagKmeansClustering", "MagKmeansGreedyClustering", "magkmeans_assign"]

#: Above this many rows :class:`MagKmeansClustering` switches from the exact
#: iteration to the sampled one (see its ``max_exact_samples``).
MAX_EXACT_SAMPLES = 5000

#: The sampled iteration's passes over all rows stop once a pass moves at
#: most this fraction of the rows to another cluster.
REFINE_SETTLED = 0.01


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

    The objective is ``Σ_i D[i, labels_i] + R Σ_j imbalance_j``
    (:func:`~localsvm.clustering.class_imbalance`).

    Parameters
    ----------
    D : array-like of shape (n_samples, κ)
        ``D[i, j] = ‖X_i − C_j‖²``.
    y : array-like of shape (n_samples,)
        Class labels.
    R : float
        The penalty weight, finite and ``>= 0``.
    method : {"lp", "greedy"}, default="lp"
        ``"lp"``: solve the relaxation
        :func:`~localsvm.clustering.magkmeans_lp` (its global optimum) and
        round each row to its largest ``Z_ij`` (ties to the lowest cluster
        index). The LP solution is a vertex with at most about as many
        fractional rows as balance constraints, so it is usually
        (near-)integral, but rounding the fractional rows may slightly change
        the balance. If ``start`` has a lower objective than the rounded
        solution, ``start`` is returned, so the step never makes things worse.

        ``"greedy"``: local search from ``start`` (default: the nearest
        centroid of each row): repeatedly move the single example whose move
        to another cluster lowers the objective most (the change is exact,
        from the per-cluster class sums), until no move improves. This reaches
        a *local* minimum of the discrete assignment problem (no single move
        improves), never worse than ``start``; the LP reaches the global
        minimum of the relaxation.
    start : array-like of shape (n_samples,), optional
        The current labels, in ``[0, κ)``.
    min_size : int, default=0
        Keeps every cluster at ``min_size`` examples or more (the LP
        constraint ``Σ_i Z_ij ≥ min_size``; greedy never moves an example out
        of a cluster of that size or smaller). A cluster that rounding (or the
        greedy start) leaves too small is topped up with the examples of
        largest ``Z_ij`` (then cheapest ``D``) from clusters that can spare
        them.

    Returns
    -------
    ndarray of shape (n_samples,)
        The cluster of each example.
    """
    D = np.asarray(D, dtype=np.float64)
    if D.ndim != 2:
        raise ValueError(f"D must be 2-D (n_samples, n_clusters), got shape {D.shape}")
    n, k = D.shape
    codes, classes = encode_labels(y, n)
    A = balance_matrix(codes, classes.shape[0])
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
        labels = repair_sizes(D, np.argmax(Z, axis=1).astype(np.intp), min_size, Z)
        if start is not None and hard_objective(D, start, A, R, k) < hard_objective(
            D, labels, A, R, k
        ):
            return start.copy()
        return labels
    if method == "greedy":
        if start is None:
            start = np.argmin(D, axis=1).astype(np.intp)
        start = repair_sizes(D, start, min_size)
        return greedy_assign(D, codes, A, R, start, min_size)
    raise ValueError(f"method must be 'lp' or 'greedy', got {method!r}")


def _batched_step(D, codes, A, R, labels, min_size):
    """The assignment step by rounds of moves (:func:`batched_assign`), from
    the nearest centroids in the first iteration and from ``labels`` after
    (sizes repaired to ``min_size``); a ``ConvergenceWarning`` when its
    rounds ran out while moves still improved the objective."""
    start = np.argmin(D, axis=1).astype(np.intp) if labels is None else labels
    start = repair_sizes(D, start, min_size)
    new, converged = batched_assign(D, codes, A, R, start, min_size)
    if not converged:
        warnings.warn(
            "MagKmeans: the assignment step stopped after its 50 rounds of moves "
            "while moves still improved the objective",
            ConvergenceWarning,
            stacklevel=5,  # the caller of ``cluster``
        )
    return new


def _update_centers(centers: np.ndarray, labels: np.ndarray, sums: np.ndarray) -> np.ndarray:
    """The means of the clusters' members (``sums`` of their rows); an empty
    cluster keeps its centroid."""
    counts = np.bincount(labels, minlength=centers.shape[0])
    nonempty = counts > 0
    centers = centers.copy()
    centers[nonempty] = sums[nonempty] / counts[nonempty, None]
    return centers


class _Rows(NamedTuple):
    """The rows an iteration runs on: the profiles, their class codes and
    their balance vectors."""

    X: np.ndarray
    codes: np.ndarray
    A: np.ndarray


def _sparse_sums(labels: np.ndarray, V: np.ndarray, k: int) -> np.ndarray:
    """Per-cluster sums of the rows of ``V`` in ``O(n · m)`` (a sparse
    one-hot product), shape ``(k, m)``."""
    import scipy.sparse as sp

    n = labels.shape[0]
    onehot = sp.csr_matrix((np.ones(n), (labels, np.arange(n))), shape=(k, n))
    return np.asarray(onehot @ V)


def _sq_distances_inplace(X: np.ndarray, C: np.ndarray, xx: np.ndarray) -> np.ndarray:
    """:func:`~localsvm.clustering.objective.sq_distances` with one
    ``n × κ`` buffer instead of four; the product in the precision of ``X``
    (float32 in the sampled iteration's passes over all rows)."""
    D = (X @ C.T.astype(X.dtype)).astype(np.float64)
    D *= -2.0
    D += xx[:, None]
    D += np.einsum("ij,ij->i", C, C)[None, :]
    return np.maximum(D, 0.0, out=D)


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
    """MagKmeans: k-means with a class-balance penalty (Cheng, Tan and Jin, SDM 2007, §4.1).

    Minimises ``Σ_j Σ_i Z_ij ‖X_i − C_j‖² + R Σ_j imbalance_j`` over hard
    assignments ``Z`` and centroids ``C``, where for two classes
    ``imbalance_j = |Σ_i Z_ij y_i|`` (``y_i = ±1``, the paper) and for K ≥ 3
    classes ``Σ_c |Σ_i Z_ij (1[y_i = c] − 1/K)|`` (the paper's future work;
    for K = 2 this equals the binary term exactly, see
    :func:`~localsvm.clustering.class_imbalance`). ``y`` may be any labels; it
    is required.

    Alternates (a) the assignment step with centroids fixed — here the LP of
    :func:`~localsvm.clustering.magkmeans_lp` rounded as in
    :func:`magkmeans_assign` (``"magkmeans-greedy"`` uses local search
    instead) — and (b) ``C_j`` = the mean of cluster ``j``'s members, until
    the assignment no longer changes or after ``max_iter`` iterations. The
    objective never increases: the assignment step keeps the current
    assignment when its result is worse.

    Empty clusters (possible only with ``min_cluster_size=0``): a cluster left
    empty by the assignment step is re-opened at the example farthest from its
    centroid (taken from a cluster with at least two members) when that does
    not raise the objective; otherwise it keeps its previous centroid and may
    be refilled later, and the result may contain an empty cluster (its
    ``imbalance`` is 0 and its centre the last centroid).

    Many rows (more than ``max_exact_samples``, 5000 by default): the exact
    steps cost ``O(n² κ)`` (local search) or an LP with ``n · κ`` variables
    per iteration, so the iteration runs in two phases instead. (1) The
    iteration above on ``sample_size`` rows drawn uniformly gives the
    centroids, with the assignment step of phase 2 (default ``R``: the
    sample's diameter, estimated by the double sweep of
    :func:`~localsvm.clustering.data_diameter`, / κ). (2) At most
    ``refine_iter`` passes over all rows alternate the assignment step,
    done by rounds of first-improvement single-example moves on the same
    objective (:func:`~localsvm.clustering.batched.batched_assign`, each
    round one ``O(n · κ)`` pass), with the centroid update; they stop once
    a pass moves at most 1 % of the rows. Everything is ``O(n · m · κ)``
    per pass for ``m`` profile columns, never ``n × n`` (the distances of
    these passes are products in float32). A ``ConvergenceWarning`` says
    when ``refine_iter`` stopped the passes while more rows still moved, or
    when an assignment step stopped at its 50 rounds.
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
        max_exact_samples: int = MAX_EXACT_SAMPLES,
        sample_size: int = 2000,
        refine_iter: int = 10,
    ) -> ClusteringResult:
        """Partition the rows of ``profiles`` into ``n_clusters`` class-balanced clusters.

        Parameters
        ----------
        profiles : array-like or sparse matrix of shape (n_samples, n_features)
            The rows to cluster; finite.
        y : array-like of shape (n_samples,)
            Class labels (required).
        n_clusters : int
            κ, the number of clusters.
        random_state : int, RandomState instance or None, default=None
            Controls the initial centroids.
        R : float or None, default=None
            The penalty weight; ``None``: the diameter of the rows divided by
            κ, as in the paper (exact up to 2000 rows, a double-sweep estimate
            above, see :func:`~localsvm.clustering.data_diameter`; of the
            sample in the sampled iteration); ``0`` gives k-means.
        max_iter : int, default=30
            The most iterations per run.
        n_init : int, default=1
            Runs from different initial centroids; the lowest objective is
            kept.
        init : {"k-means++", "random"} or array-like, default="k-means++"
            ``"k-means++"`` (scikit-learn's initialisation), ``"random"``
            (distinct random rows), or the initial centroids, of shape
            ``(κ, n_features)`` (then one run only).
        min_cluster_size : int, default=1
            Every cluster keeps at least this many examples (a constraint of
            the assignment step, see :func:`magkmeans_assign`; not in the
            paper). An empty cluster is perfectly balanced, so without it a
            large ``R`` can put everything in few clusters; ``0`` gives the
            paper's unconstrained step.
        max_exact_samples : int, default=5000
            Up to this many rows the iteration is the exact one described
            above (the paper's); above it the sampled two-phase iteration
            (see the class description).
        sample_size : int, default=2000
            Rows of the first phase of the sampled iteration (at least
            ``4 · κ · max(1, min_cluster_size)``).
        refine_iter : int, default=10
            The most passes over all rows in the second phase; they stop
            earlier, once a pass moves at most 1 % of the rows.

        Returns
        -------
        ClusteringResult
            With ``imbalance``, ``cohesion``, ``history`` and ``R`` filled.
        """
        from sklearn.cluster import kmeans_plusplus
        from sklearn.utils import check_random_state

        X = _check_profiles(profiles)
        n = X.shape[0]
        codes, classes = encode_labels(y, n)
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
        max_exact_samples = _check_positive_int(max_exact_samples, "max_exact_samples")
        sample_size = _check_positive_int(sample_size, "sample_size")
        refine_iter = _check_positive_int(refine_iter, "refine_iter")
        A = balance_matrix(codes, classes.shape[0])
        rng = check_random_state(random_state)
        sampled = n > max_exact_samples
        if sampled:
            m = min(n, max(sample_size, 4 * k * max(1, min_size)))
            part = np.sort(rng.choice(n, size=m, replace=False))
            sample, method = _Rows(X[part], codes[part], A[part]), "batched"
        else:
            sample, method = _Rows(X, codes, A), self._method
        Xs = sample.X
        if R is None:
            # The sample's diameter: exact in the exact iteration (up to 2000
            # rows), the double-sweep estimate in the sampled one.
            R = data_diameter(Xs, exact_max=0 if sampled else 2000) / k
        else:
            R = _check_R(R)

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
                centers, _ = kmeans_plusplus(Xs, k, random_state=rng)
            else:
                centers = Xs[rng.choice(Xs.shape[0], size=k, replace=False)].copy()
            result = self._run(sample, k, R, centers, max_iter, min_size, method)
            if best is None or result.objective < best.objective:
                best = result
        assert best is not None
        if sampled:
            best = self._refine(_Rows(X, codes, A), k, R, best, refine_iter, min_size)
        return best

    def _refine(
        self,
        rows: _Rows,
        k: int,
        R: float,
        sample: ClusteringResult,
        refine_iter: int,
        min_size: int,
    ) -> ClusteringResult:
        """The second phase of the sampled iteration: passes over all rows
        from the sample's centroids."""
        X = rows.X
        centers = sample.centers.copy()
        xx = np.einsum("ij,ij->i", X, X)
        X32 = X.astype(np.float32)
        labels: np.ndarray | None = None
        history: list[float] = []
        n_iter = 0
        changed = X.shape[0]
        while n_iter < refine_iter:
            n_iter += 1
            D = _sq_distances_inplace(X32, centers, xx)
            new = _batched_step(D, rows.codes, rows.A, R, labels, min_size)
            new = fill_empty(D, new, rows.A, R, k, centers, X)
            changed = X.shape[0] if labels is None else int(np.count_nonzero(new != labels))
            labels = new
            counts = np.bincount(labels, minlength=k)
            sums = _sparse_sums(labels, X, k)
            centers = _update_centers(centers, labels, sums)
            nonempty = counts > 0
            # Σ_i ‖X_i − C_(labels_i)‖² with C_j the mean of its members.
            spread = (sums * sums).sum(axis=1)[nonempty] / counts[nonempty]
            cohesion = float(xx.sum() - spread.sum())
            imb = imbalance_from_sums(_sparse_sums(labels, rows.A, k))
            history.append(cohesion + R * float(imb.sum()))
            if changed <= REFINE_SETTLED * X.shape[0]:
                break
        assert labels is not None
        if changed > REFINE_SETTLED * X.shape[0]:
            warnings.warn(
                f"MagKmeans: {changed} of {X.shape[0]} rows still changed cluster in the "
                f"last of refine_iter={refine_iter} passes; raise refine_iter",
                ConvergenceWarning,
                stacklevel=3,
            )
        imbalance = imb
        return ClusteringResult(
            labels=labels,
            centers=centers,
            n_iter=sample.n_iter + n_iter,
            objective=cohesion + R * float(imbalance.sum()),
            imbalance=imbalance,
            cohesion=cohesion,
            history=tuple(history),
            R=R,
        )

    def _run(
        self,
        rows: _Rows,
        k: int,
        R: float,
        centers: np.ndarray,
        max_iter: int,
        min_size: int,
        method: str,
    ) -> ClusteringResult:
        """One run from the initial ``centers``: alternate assignment and update."""
        X, codes, A = rows
        labels: np.ndarray | None = None
        history: list[float] = []
        n_iter = 0
        xx = (X * X).sum(axis=1)
        while n_iter < max_iter:
            n_iter += 1
            D = sq_distances(X, centers, xx)
            if method == "batched":
                new = _batched_step(D, codes, A, R, labels, min_size)
            else:
                new = magkmeans_assign(D, codes, R, method=method, start=labels, min_size=min_size)
            new = fill_empty(D, new, A, R, k, centers, X)
            changed = labels is None or not np.array_equal(new, labels)
            labels = new
            sums = _sparse_sums(labels, X, k) if method == "batched" else cluster_sums(labels, X, k)
            centers = _update_centers(centers, labels, sums)
            cohesion = float(((X - centers[labels]) ** 2).sum())
            imb = imbalance_from_sums(cluster_sums(labels, A, k))
            history.append(cohesion + R * float(imb.sum()))
            if not changed:
                break
        assert labels is not None
        imbalance = imbalance_from_sums(cluster_sums(labels, A, k))
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
