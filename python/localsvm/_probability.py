"""Probability estimates from SVM decision values (``SVC(probability=True)``).

Each binary model gets a sigmoid ``P(+1 | f) = 1 / (1 + exp(A·f + B))``
fitted to decision values that the model did not see in training (a 5-fold
cross-validation inside ``fit``), by Platt's method with the safeguards of
Lin, Lin & Weng [1]_. The binary probabilities of the one-vs-one models are
then coupled into one distribution over the classes by the second method of
Wu, Lin & Weng [2]_, which is LIBSVM's approach.

References
----------
.. [1] H.-T. Lin, C.-J. Lin and R. C. Weng, "A note on Platt's probabilistic
   outputs for support vector machines", Machine Learning 68(3), 2007.
.. [2] T.-F. Wu, C.-J. Lin and R. C. Weng, "Probability estimates for
   multi-class classification by pairwise coupling", Journal of Machine
   Learning Research 5, 2004.
"""

from __future__ import annotations

import numpy as np

#: Folds of the internal cross-validation (as LIBSVM).
N_FOLDS = 5
#: Pairwise probabilities are kept in ``[MIN_PROB, 1 − MIN_PROB]``.
MIN_PROB = 1e-7


def fold_splits(n: int, rng: np.random.RandomState) -> list[tuple[np.ndarray, np.ndarray]]:
    """``N_FOLDS`` (train, held-out) index pairs over a random permutation of
    ``range(n)``; held-out sets are empty when ``n < N_FOLDS``."""
    perm = rng.permutation(n)
    splits = []
    for k in range(N_FOLDS):
        lo, hi = k * n // N_FOLDS, (k + 1) * n // N_FOLDS
        splits.append((np.concatenate([perm[:lo], perm[hi:]]), perm[lo:hi]))
    return splits


def _neg_log_likelihood(f: np.ndarray, t: np.ndarray, a: float, b: float) -> float:
    z = a * f + b
    # log(1 + exp(z)) − (1 − t)·z, written to never overflow.
    return float(np.sum(np.logaddexp(0.0, -np.abs(z)) + np.maximum(z, 0.0) - (1.0 - t) * z))


def fit_sigmoid(dec: np.ndarray, positive: np.ndarray) -> tuple[float, float]:
    """Fit Platt's sigmoid to decision values and their true sides.

    Newton's method with a backtracking line search on the regularised
    targets ``(N₊ + 1) / (N₊ + 2)`` and ``1 / (N₋ + 2)`` (Lin, Lin & Weng,
    2007); at most 100 Newton steps.

    Parameters
    ----------
    dec : ndarray of shape (n,)
        Held-out decision values.
    positive : ndarray of shape (n,), dtype=bool
        True where the sample is on the model's +1 side.

    Returns
    -------
    A, B : float
        The sigmoid ``P(+1 | f) = 1 / (1 + exp(A·f + B))``.
    """
    f = np.asarray(dec, dtype=np.float64)
    n_pos = float(np.count_nonzero(positive))
    n_neg = float(f.size - n_pos)
    t = np.where(positive, (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0))
    a, b = 0.0, float(np.log((n_neg + 1.0) / (n_pos + 1.0)))
    fval = _neg_log_likelihood(f, t, a, b)
    for _ in range(100):
        z = a * f + b
        p = np.exp(-np.logaddexp(0.0, z))  # 1 / (1 + e^z)
        d2 = p * (1.0 - p)
        h11 = float(f @ (f * d2)) + 1e-12
        h22 = float(d2.sum()) + 1e-12
        h21 = float(f @ d2)
        d1 = t - p
        g1, g2 = float(f @ d1), float(d1.sum())
        if abs(g1) < 1e-5 and abs(g2) < 1e-5:
            break
        det = h11 * h22 - h21 * h21
        da = -(h22 * g1 - h21 * g2) / det
        db = -(-h21 * g1 + h11 * g2) / det
        slope = g1 * da + g2 * db
        step = 1.0
        while step >= 1e-10:
            new_a, new_b = a + step * da, b + step * db
            new_f = _neg_log_likelihood(f, t, new_a, new_b)
            if new_f < fval + 1e-4 * step * slope:
                a, b, fval = new_a, new_b, new_f
                break
            step /= 2.0
        else:
            break  # no step decreases the objective: stop at the current point
    return a, b


def sigmoid_proba(dec: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``1 / (1 + exp(a·dec + b))`` per column, clipped to
    ``[MIN_PROB, 1 − MIN_PROB]``."""
    z = dec * a + b
    return np.clip(np.exp(-np.logaddexp(0.0, z)), MIN_PROB, 1.0 - MIN_PROB)


def couple_pairwise(r: np.ndarray, n_classes: int) -> np.ndarray:
    """Class probabilities from one-vs-one pairwise probabilities.

    Minimises ``Σ_i Σ_{j≠i} (r_ji p_i − r_ij p_j)²`` subject to
    ``Σ p = 1`` (the second method of Wu, Lin & Weng, 2004), by solving its
    optimality system exactly for every sample.

    Parameters
    ----------
    r : ndarray of shape (n_samples, n_pairs)
        ``P(class i | class i or j)`` for the pairs ``(i, j)``, ``i < j``,
        in lexicographic order.
    n_classes : int
        The number of classes.

    Returns
    -------
    ndarray of shape (n_samples, n_classes)
        Rows that sum to 1.
    """
    n = r.shape[0]
    k = n_classes
    R = np.zeros((n, k, k))  # R[:, i, j] = P(i | i or j)
    col = 0
    for i in range(k):
        for j in range(i + 1, k):
            R[:, i, j] = r[:, col]
            R[:, j, i] = 1.0 - r[:, col]
            col += 1
    Q = -R.transpose(0, 2, 1) * R  # Q_ij = −r_ji r_ij off the diagonal
    idx = np.arange(k)
    Q[:, idx, idx] = (R**2).sum(axis=1) - R[:, idx, idx] ** 2  # Σ_{j≠i} r_ji²
    system = np.zeros((n, k + 1, k + 1))
    system[:, :k, :k] = Q
    system[:, :k, k] = 1.0
    system[:, k, :k] = 1.0
    rhs = np.zeros((n, k + 1))
    rhs[:, k] = 1.0
    p = np.linalg.solve(system, rhs[..., None])[..., 0][:, :k]
    p = np.clip(p, 0.0, None)
    return p / p.sum(axis=1, keepdims=True)
