"""Multiclass decompositions shared by the estimators: one-vs-one pairs in
LIBSVM's order, one-vs-rest, and the conversions between their decision
values and predictions.

>>> ovo_pairs(3)
[(0, 1), (0, 2), (1, 2)]
"""

from __future__ import annotations

import numpy as np


def ovo_pairs(n_classes: int) -> list[tuple[int, int]]:
    """Class pairs ``(a, b)``, ``a < b``, in LIBSVM's order."""
    return [(a, b) for a in range(n_classes) for b in range(a + 1, n_classes)]


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
