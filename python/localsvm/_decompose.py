"""Multiclass decompositions shared by the estimators: one-vs-one pairs in
LIBSVM's order, one-vs-rest, the conversions between their decision
values and predictions, and LIBSVM's ``dual_coef_`` layout in both
directions (:func:`ovo_to_libsvm`, :func:`libsvm_to_ovo`).

>>> ovo_pairs(3)
[(0, 1), (0, 2), (1, 2)]
"""

from __future__ import annotations

import numpy as np


def ovo_pairs(n_classes: int) -> list[tuple[int, int]]:
    """Class pairs ``(a, b)``, ``a < b``, in LIBSVM's order."""
    return [(a, b) for a in range(n_classes) for b in range(a + 1, n_classes)]


def ovo_compact(coef: np.ndarray, n_support: np.ndarray) -> np.ndarray:
    """One-vs-one coefficients without the zeros of the other classes.

    ``coef`` is ``(n_pairs, n_SV)`` over support vectors grouped by class
    (``n_support[c]`` of class ``c``, in class order); the result is 1-D: for
    each pair ``(a, b)`` of :func:`ovo_pairs`, its coefficients over class
    ``a``'s support vectors, then over class ``b``'s.
    """
    n_support = np.asarray(n_support, dtype=np.intp)
    first = np.concatenate(([0], np.cumsum(n_support)))
    parts = []
    for k, (a, b) in enumerate(ovo_pairs(n_support.shape[0])):
        parts.append(coef[k, first[a] : first[a + 1]])
        parts.append(coef[k, first[b] : first[b + 1]])
    if not parts:
        return np.zeros(0)
    return np.ascontiguousarray(np.concatenate(parts), dtype=np.float64)


def ovo_votes(dec: np.ndarray, n_classes: int) -> np.ndarray:
    """Votes per class from one-vs-one decision values (positive: the lower
    class of the pair wins), shape ``(n_samples, n_classes)``."""
    votes = np.zeros((dec.shape[0], n_classes))
    for k, (a, b) in enumerate(ovo_pairs(n_classes)):
        wins_a = dec[:, k] > 0
        votes[:, a] += wins_a
        votes[:, b] += ~wins_a
    return votes


def ovo_to_ovr(dec: np.ndarray, n_classes: int) -> np.ndarray:
    """A one-vs-rest shaped score from one-vs-one decision values.

    Each class gets its number of votes plus a tie-breaking term: the sum of
    its pairwise confidences ``c`` (``dec`` for the lower class of a pair,
    ``−dec`` for the higher), squashed by ``c / (3(|c| + 1))`` into
    ``(−1/3, 1/3)`` so it can reorder classes with equal votes but never
    overturn a vote. This is the score scikit-learn's ``SVC`` returns with
    ``decision_function_shape='ovr'``.
    """
    confidence = np.zeros((dec.shape[0], n_classes))
    for k, (a, b) in enumerate(ovo_pairs(n_classes)):
        confidence[:, a] += dec[:, k]
        confidence[:, b] -= dec[:, k]
    return ovo_votes(dec, n_classes) + confidence / (3.0 * (np.abs(confidence) + 1.0))


def vote_winner(dec: np.ndarray, n_classes: int) -> np.ndarray:
    """Class index with the most one-vs-one votes; ties go to the lowest index
    (LIBSVM's rule)."""
    return np.argmax(ovo_votes(dec, n_classes), axis=1)


def ovo_to_libsvm(coef: np.ndarray, sv_class: np.ndarray, n_classes: int) -> np.ndarray:
    """Pack one-vs-one coefficients into LIBSVM's ``dual_coef_`` layout.

    ``coef[k]`` holds pair ``k``'s coefficients ``y_i α_i`` over all support
    vectors (zero outside the pair); ``sv_class`` is each support vector's
    class index. For pair ``(a, b)`` the coefficients of class-``a`` support
    vectors go to row ``b − 1`` and those of class ``b`` to row ``a``, giving
    shape ``(n_classes − 1, n_SV)``.
    """
    dual = np.zeros((n_classes - 1, sv_class.shape[0]))
    for k, (a, b) in enumerate(ovo_pairs(n_classes)):
        in_a = sv_class == a
        in_b = sv_class == b
        dual[b - 1, in_a] = coef[k, in_a]
        dual[a, in_b] = coef[k, in_b]
    return dual


def libsvm_to_ovo(dual: np.ndarray, n_support: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """Unpack LIBSVM's ``dual_coef_`` (support vectors grouped by class,
    ``n_support`` per class): per class pair in :func:`ovo_pairs` order, the
    support-vector positions of the pair and their coefficients (the inverse
    of :func:`ovo_to_libsvm`)."""
    start = np.concatenate([[0], np.cumsum(n_support)]).astype(np.intp)
    out = []
    for a, b in ovo_pairs(len(n_support)):
        rows = np.r_[start[a] : start[a + 1], start[b] : start[b + 1]]
        coef = np.concatenate(
            [dual[b - 1, start[a] : start[a + 1]], dual[a, start[b] : start[b + 1]]]
        )
        out.append((rows, coef))
    return out
