"""Local search for the MagKmeans assignment step: single-example moves,
each exact from the per-cluster class sums, until none improves."""

from __future__ import annotations

import numpy as np

from .objective import cluster_sums

__all__ = ["greedy_assign"]


def greedy_assign(
    D: np.ndarray,
    codes: np.ndarray,
    A: np.ndarray,
    R: float,
    labels: np.ndarray,
    min_size: int = 0,
) -> np.ndarray:
    """Best-improvement single-example moves on the discrete objective.

    Repeatedly moves the one example whose move to another cluster lowers
    ``Σ_i D[i, labels_i] + R Σ_j imbalance_j`` most, until no move improves
    (a local minimum of the assignment step).

    Parameters
    ----------
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
        Examples of clusters with ``min_size`` members or fewer do not move.

    Returns
    -------
    ndarray of shape (n_samples,)
        The improved assignment, never worse than ``labels``.
    """
    n, k = D.shape
    labels = labels.astype(np.intp).copy()
    rows = np.arange(n)
    # The balance vector of an example depends only on its class.
    ncls = int(codes.max()) + 1
    a_cls = np.zeros((ncls, A.shape[1]))
    a_cls[codes] = A
    S = cluster_sums(labels, A, k)
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
