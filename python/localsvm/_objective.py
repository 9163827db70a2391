"""Dual objectives recomputed from a fitted model's public attributes, so
models from different libraries (scikit-learn's LIBSVM, scikit-learn-intelex,
localsvm) can be compared on what they optimised.

For one binary problem with coefficients ``c = y·α`` on support vectors
``S``, the dual objective is ``½ cᵀ K(S, S) c − Σ|c|``.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ._multiclass import libsvm_to_ovo
from .kernels import KernelSpec, kernel_matrix

#: Support-vector rows per kernel block, so no ``n_SV × n_SV`` matrix is held.
CHUNK = 2048


def binary_dual_objective(spec: KernelSpec, sv: np.ndarray, coef: np.ndarray) -> float:
    """``½ cᵀKc − Σ|c|`` for one binary model (kernel in f64, in blocks)."""
    used = coef != 0.0
    sv, coef = sv[used], coef[used]
    quad = 0.0
    for start in range(0, sv.shape[0], CHUNK):
        block = kernel_matrix(spec, sv[start : start + CHUNK], sv)
        quad += float(coef[start : start + CHUNK] @ (block @ coef))
    return 0.5 * quad - float(np.abs(coef).sum())


def libsvm_dual_objectives(model, spec: KernelSpec) -> np.ndarray:
    """Per-problem dual objectives of a fitted model in LIBSVM's layout
    (``support_vectors_``, ``n_support_``, ``dual_coef_``; scikit-learn's and
    scikit-learn-intelex's ``SVC``, or localsvm's with ``multiclass='ovo'``).

    One value for two classes; otherwise one per class pair ``(a, b)``,
    ``a < b``, in LIBSVM's order (decoded by
    :func:`localsvm._multiclass.libsvm_to_ovo`).
    """
    sv = model.support_vectors_
    sv = sv.toarray() if sp.issparse(sv) else np.asarray(sv, dtype=np.float64)
    dual = model.dual_coef_
    # A sparse fit's coefficients are CSR (as scikit-learn's).
    dual = np.asarray(dual.toarray() if sp.issparse(dual) else dual, dtype=np.float64)
    n_classes = len(model.classes_)
    if n_classes == 2:
        return np.array([binary_dual_objective(spec, sv, dual[0])])
    return np.array(
        [
            binary_dual_objective(spec, sv[rows], coef)
            for rows, coef in libsvm_to_ovo(dual, np.asarray(model.n_support_))
        ]
    )
