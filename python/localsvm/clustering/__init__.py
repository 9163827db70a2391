"""Clustering strategies for cluster-based local SVMs (Profile SVM, MCSVM).

A strategy partitions rows (for Profile SVM: each training example's
similarity profile) into ``n_clusters`` groups, and may use the labels ``y``
(MagKmeans balances classes per cluster; plain k-means ignores them).
Built in:

* ``"kmeans"`` — scikit-learn's :class:`~sklearn.cluster.KMeans`; ignores ``y``
  (:mod:`.kmeans`).
* ``"magkmeans"`` — MagKmeans (H. Cheng, P.-N. Tan and R. Jin, "Localized
  Support Vector Machine and Its Efficient Algorithm", SIAM International
  Conference on Data Mining (SDM), 2007, §4.1): k-means plus a class-imbalance
  penalty ``R Σ_j |Σ_i Z_ij y_i|``; the assignment step is a linear program
  (:func:`magkmeans_lp`, solved by HiGHS), extended to any number of classes
  (:func:`class_imbalance`).
* ``"magkmeans-greedy"`` — the same objective, with the assignment step done by
  exact single-example local search instead of the LP (much faster, reaches a
  local minimum of the assignment step).

More register through the ``localsvm_register_clusterings`` hook.

Modules: :mod:`.base` (the interface: :class:`ClusteringStrategy`,
:class:`ClusteringResult`), :mod:`.kmeans`, :mod:`.objective` (the MagKmeans
objective), :mod:`.lp` (the LP assignment step), :mod:`.greedy` (the
local-search assignment step), :mod:`.repair` (cluster-size and empty-cluster
repairs) and :mod:`.magkmeans` (the iteration and the strategies).

Examples
--------
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

from ..hookspecs import register_builtins
from ..plugins import get_clustering
from .base import ClusteringResult, ClusteringStrategy, check_n_clusters
from .kmeans import KMeansClustering
from .lp import magkmeans_lp
from .magkmeans import MagKmeansClustering, MagKmeansGreedyClustering, magkmeans_assign
from .objective import class_imbalance, data_diameter, magkmeans_objective

__all__ = [
    "ClusteringResult",
    "ClusteringStrategy",
    "KMeansClustering",
    "MagKmeansClustering",
    "MagKmeansGreedyClustering",
    "check_n_clusters",
    "class_imbalance",
    "data_diameter",
    "get_clustering",
    "magkmeans_assign",
    "magkmeans_lp",
    "magkmeans_objective",
]


localsvm_register_clusterings = register_builtins(
    "localsvm_register_clusterings",
    KMeansClustering,
    MagKmeansClustering,
    MagKmeansGreedyClustering,
)
