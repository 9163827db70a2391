"""Input checks shared by the classifiers' ``fit`` methods."""

from __future__ import annotations

import numpy as np
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import validate_data


def validate_training_data(estimator, X, y, *, precomputed: bool = False):
    """``X`` as C-ordered float64 and ``y`` checked as classification targets
    (scikit-learn's messages); with ``precomputed``, ``X`` must be square."""
    X, y = validate_data(estimator, X, y, dtype=np.float64, order="C")
    check_classification_targets(y)
    n = X.shape[0]
    if precomputed and X.shape[1] != n:
        raise ValueError(
            f"Precomputed matrix must be a square matrix. Input is a {n}x{X.shape[1]} matrix."
        )
    return X, y


def encode_classes(estimator, y) -> np.ndarray:
    """Set ``estimator.classes_`` and return each label's index into it;
    at least two classes are required."""
    estimator.classes_, y_idx = np.unique(y, return_inverse=True)
    n_classes = estimator.classes_.shape[0]
    if n_classes < 2:
        raise ValueError(f"The number of classes has to be greater than one; got {n_classes} class")
    return y_idx


def check_sample_weight(sample_weight, n_samples: int) -> np.ndarray:
    """Validate ``sample_weight``: ``None`` (all ones), a scalar, or
    ``n_samples`` finite, non-negative numbers."""
    if sample_weight is None:
        return np.ones(n_samples)
    sw = np.asarray(sample_weight, dtype=np.float64)
    if sw.ndim == 0:
        sw = np.full(n_samples, float(sw))
    if sw.shape != (n_samples,):
        raise ValueError(f"sample_weight must have shape ({n_samples},) to match X, got {sw.shape}")
    if not np.all(np.isfinite(sw)):
        raise ValueError("sample_weight contains NaN or infinity")
    if np.any(sw < 0):
        raise ValueError("sample_weight must be non-negative")
    return sw
