"""Repair passes of the MagKmeans iteration: topping up clusters below the
minimum size, and re-opening empty clusters at far-away examples."""

from __future__ import annotations

import numpy as np

from .objective import hard_objective

__all__ = ["fill_empty", "repair_sizes"]


def repair_sizes(
    D: np.ndarray, labels: np.ndarray, min_size: int, Z: np.ndarray | None = None
) -> np.ndarray:
    """Move examples into clusters smaller than ``min_size``.

    For each such cluster ``j``, the examples with the largest ``Z_ij`` (ties:
    the smallest increase of ``D``) whose own cluster can spare them move to
    ``j``.

    Parameters
    ----------
    D : ndarray of shape (n_samples, k)
        Squared distances to the centroids.
    labels : ndarray of shape (n_samples,)
        The assignment (not modified).
    min_size : int
        The smallest allowed cluster size; ``0`` disables the pass.
    Z : ndarray of shape (n_samples, k), optional
        Fractional memberships that rank the candidates (e.g. the LP's).

    Returns
    -------
    ndarray of shape (n_samples,)
        ``labels`` itself when no cluster is too small, else a repaired copy.
    """
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


def fill_empty(
    D: np.ndarray,
    labels: np.ndarray,
    A: np.ndarray,
    R: float,
    k: int,
    centers: np.ndarray,
    X: np.ndarray,
) -> np.ndarray:
    """Re-open empty clusters at far-away examples when that does not raise
    the objective.

    For each empty cluster, the example farthest from its own centroid (in a
    cluster of two or more) becomes the cluster's only member and its
    centroid, if the objective does not increase.

    Parameters
    ----------
    D : ndarray of shape (n_samples, k)
        Squared distances to the current centroids; a re-opened cluster's
        column is recomputed from its new centroid.
    labels : ndarray of shape (n_samples,)
        The result of the assignment step (not modified).
    A : ndarray of shape (n_samples, P)
        The balance vectors of the examples.
    R : float
        The penalty weight.
    k : int
        The number of clusters.
    centers : ndarray of shape (k, n_features)
        The centroids; edited in place for every re-opened cluster.
    X : ndarray of shape (n_samples, n_features)
        The clustered rows.

    Returns
    -------
    ndarray of shape (n_samples,)
        ``labels`` itself when no cluster is empty, else the new assignment.
    """
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
        if hard_objective(D_trial, trial, A, R, k) <= hard_objective(D, labels, A, R, k):
            counts[labels[i]] -= 1
            counts[j] += 1
            labels = trial
            D = D_trial
            centers[j] = X[i]
    return labels
