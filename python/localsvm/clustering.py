"""Clustering strategies for cluster-based local SVMs (Profile SVM, MCSVM).

A strategy partitions rows (for Profile SVM: each training example's
similarity profile) into ``n_clusters`` groups, and may use the labels ``y``
(MagKmeans balances classes per cluster; plain k-means ignores them).
Built in: ``"kmeans"`` (scikit-learn's :class:`~sklearn.cluster.KMeans`).
More register through the ``localsvm_register_clusterings`` hook.

>>> import numpy as np
>>> X = np.array([[0.0], [0.1], [5.0], [5.1]])
>>> res = get_clustering("kmeans").cluster(X, None, 2, random_state=0)
>>> len(set(res.labels[:2])), len(set(res.labels[2:])), bool(res.labels[0] != res.labels[2])
(1, 1, True)
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .hookspecs import hookimpl
from .plugins import get_clustering

__all__ = ["ClusteringResult", "ClusteringStrategy", "KMeansClustering", "get_clustering"]


@dataclass
class ClusteringResult:
    """``labels[i]`` is the cluster of row ``i``; ``centers`` has one row per cluster."""

    labels: np.ndarray
    centers: np.ndarray
    n_iter: int
    objective: float


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


@hookimpl
def localsvm_register_clusterings(register):
    """Register the built-in clustering strategies."""
    register(KMeansClustering())
