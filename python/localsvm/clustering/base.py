"""The interface of a clustering strategy: the protocol and its result.

This module imports nothing from the plugin manager, so plugins and
estimators can depend on the interface alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral
from typing import Any, Protocol, runtime_checkable

import numpy as np

__all__ = ["ClusteringResult", "ClusteringStrategy", "check_n_clusters"]


@dataclass
class ClusteringResult:
    """The partition a clustering strategy returns.

    Parameters
    ----------
    labels : ndarray of shape (n_samples,)
        ``labels[i]`` is the cluster of row ``i``.
    centers : ndarray of shape (n_clusters, n_features)
        One row per cluster.
    n_iter : int
        Iterations run (of the best run when there were several).
    objective : float
        The value the strategy minimised.
    imbalance : ndarray of shape (n_clusters,) or None
        The class imbalance of each cluster (MagKmeans; see
        :func:`localsvm.clustering.class_imbalance`).
    cohesion : float or None
        The k-means part of the objective (MagKmeans).
    history : tuple of float or None
        The objective after each iteration (MagKmeans).
    R : float or None
        The penalty weight used (MagKmeans).
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
    """The interface of a clustering strategy.

    Attributes
    ----------
    name : str
        The name users pass as ``clustering=...``.
    """

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
        """Partition the rows of ``profiles`` into ``n_clusters`` clusters.

        Parameters
        ----------
        profiles : ndarray of shape (n_samples, n_features)
            The rows to cluster.
        y : ndarray of shape (n_samples,) or None
            Class labels, for strategies that use them.
        n_clusters : int
            The number of clusters.
        random_state : int, RandomState instance or None
            Controls the randomness of the strategy.
        **params
            Strategy-specific parameters.

        Returns
        -------
        ClusteringResult
        """
        ...


def check_n_clusters(n_clusters: Any, n_samples: int) -> int:
    """Validate ``n_clusters`` against the number of rows.

    Parameters
    ----------
    n_clusters : int
        The requested number of clusters.
    n_samples : int
        The number of rows to cluster.

    Returns
    -------
    int
        ``n_clusters`` as a Python int.

    Raises
    ------
    ValueError
        If ``n_clusters`` is not a positive integer or exceeds ``n_samples``.
    """
    if isinstance(n_clusters, bool) or not isinstance(n_clusters, Integral) or n_clusters < 1:
        raise ValueError(f"n_clusters must be a positive integer, got {n_clusters!r}")
    if n_clusters > n_samples:
        raise ValueError(
            f"n_clusters={n_clusters} is larger than the number of examples ({n_samples})"
        )
    return int(n_clusters)
