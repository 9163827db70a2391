"""The MagKmeans assignment step as a linear program (the relaxation of the
Z-step of H. Cheng, P.-N. Tan and R. Jin, "Localized Support Vector Machine
and Its Efficient Algorithm", SDM 2007, §4.1), solved by HiGHS."""

from __future__ import annotations

from typing import Any

import numpy as np

from .objective import balance_matrix, encode_labels

__all__ = ["magkmeans_lp"]


def magkmeans_lp(
    D: Any, y: Any, R: float, *, form: str = "auto", min_size: int = 0
) -> tuple[np.ndarray, float]:
    """Solve the relaxed MagKmeans assignment LP for fixed centroids.

    The LP (variables ``Z`` row-major, then the slacks ``t``)::

        min  Σ_ij Z_ij D_ij + R Σ_(j,p) t_jp
        s.t. −t_jp ≤ Σ_i Z_ij a_ip ≤ t_jp,  0 ≤ Z_ij ≤ 1,  Σ_j Z_ij = 1,  t ≥ 0

    with the balance vectors ``a_i`` of
    :func:`~localsvm.clustering.class_imbalance` (one slack per cluster for
    two classes — the paper's form — one per cluster and class otherwise).
    Solved by ``scipy.optimize.linprog(method="highs")`` with sparse
    constraint matrices.

    Parameters
    ----------
    D : array-like of shape (n_samples, κ)
        The cost of putting example ``i`` in cluster ``j``: its squared
        distance to the centroid, ``‖X_i − C_j‖²``.
    y : array-like of shape (n_samples,)
        Class labels, any values (mapped to ``0..K-1``).
    R : float
        The penalty weight.
    form : {"auto", "binary", "multiclass"}, default="auto"
        The form of the balance term, as in
        :func:`~localsvm.clustering.class_imbalance`.
    min_size : int, default=0
        If positive, adds ``Σ_i Z_ij ≥ min_size`` for every cluster (not in
        the paper: an empty cluster is perfectly balanced, so with a large
        ``R`` the plain LP may empty clusters).

    Returns
    -------
    Z : ndarray of shape (n_samples, κ)
        The optimal fractional assignment.
    optimum : float
        The LP's optimal value.

    Raises
    ------
    RuntimeError
        If HiGHS does not report an optimal solution.
    """
    import scipy.sparse as sp
    from scipy.optimize import linprog

    D = np.asarray(D, dtype=np.float64)
    n, k = D.shape
    codes, classes = encode_labels(y, n)
    A = balance_matrix(codes, classes.shape[0], form)
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
    # HiGHS sees costs of at most 1: with R many orders of magnitude above
    # the distances it otherwise fails (or churns for seconds) instead of
    # returning the balance-only optimum. The optimum is scaled back.
    scale = float(np.max(np.abs(c), initial=0.0)) or 1.0
    c /= scale
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
        raise RuntimeError(
            f"the MagKmeans assignment LP failed (R={float(R):g}, distances up to "
            f"{float(D.max(initial=0.0)):.3g}): {res.message}; if R is far above the "
            "distances, lower R"
        )
    Z = np.clip(res.x[:nz].reshape(n, k), 0.0, 1.0)
    return Z, float(res.fun) * scale
