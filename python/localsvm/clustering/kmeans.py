"""The ``"kmeans"`` strategy: scikit-learn's k-means, which ignores the labels."""

from __future__ import annotations

from typing import Any

import numpy as np

from .base import ClusteringResult, check_n_clusters

__all__ = ["KMeansClustering"]


class KMeansClustering:
    """Lloyd's k-means with k-means++ initialisation (scikit-learn); ignores ``y``."""

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
        """Partition the rows of ``profiles`` with :class:`sklearn.cluster.KMeans`.

        Parameters
        ----------
        profiles : array-like of shape (n_samples, n_features)
            The rows to cluster.
        y : array-like of shape (n_samples,) or None
            Ignored.
        n_clusters : int
            The number of clusters.
        random_state : int, RandomState instance or None, default=None
            Passed to :class:`~sklearn.cluster.KMeans`.
        n_init : int, default=4
            Runs from different initial centroids; the lowest inertia is kept.
        max_iter : int, default=300
            The most iterations per run.

        Returns
        -------
        ClusteringResult
            With ``objective`` the inertia (sum of squared distances to the
            centroids).
        """
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
