"""Local search for the MagKmeans assignment step: single-example moves,
each exact from the per-cluster class sums, until none improves."""

from __future__ import annotations

import numpy as np

from .._docstrings import fill
from .objective import ASSIGN_PARAMS, join_leave_changes, move_example, start_moves

__all__ = ["greedy_assign"]


@fill(assign_params=ASSIGN_PARAMS)
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
    {assign_params}

    Returns
    -------
    ndarray of shape (n_samples,)
        The improved assignment, never worse than ``labels``.
    """
    n, k = D.shape
    labels, a_cls, S, counts, tol = start_moves(D, codes, A, R, labels)
    rows = np.arange(n)
    base = D - D[rows, labels][:, None]  # Δcohesion of moving i to cluster j
    for _ in range(50 * n + 100):
        add, rem = join_leave_changes(S, a_cls)
        delta = base + R * (add[codes] + rem[codes, labels][:, None])
        delta[rows, labels] = 0.0
        if min_size > 0:  # examples of clusters at the minimum size stay
            delta[counts[labels] <= min_size] = 0.0
        flat = int(np.argmin(delta))
        i, j = divmod(flat, k)
        if delta[i, j] >= -tol:
            break
        move_example(S, counts, labels, i, j, A[i])
        base[i] = D[i] - D[i, j]
    return labels
