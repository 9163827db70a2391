"""Data preparation: the Table 1 sets split into two groups of classes, the
Figure-4 sample of ijcnn1, and the scaling both use."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from localsvm.datasets import load_breast_w, load_glass, load_ijcnn1, load_iris, load_yeast
from localsvm.similarity import squared_distances

from .protocol import Config

#: The Table 1 data sets that are bundled.
DATASETS = ("breast", "glass", "iris", "yeast")

#: UCI yeast class sizes (ERL's 5 examples are not in PMLB's copy).
YEAST_UCI_COUNTS = {
    "CYT": 463,
    "NUC": 429,
    "MIT": 244,
    "ME3": 163,
    "ME2": 51,
    "ME1": 44,
    "EXC": 35,
    "VAC": 30,
    "POX": 20,
}


@dataclass
class BinaryData:
    """A data set relabelled into two groups of classes.

    Attributes
    ----------
    name : str
        The data set.
    X : ndarray of shape (n_samples, n_features)
        The examples, unscaled.
    y : ndarray of shape (n_samples,)
        +1 for the ``positive`` group, −1 for the ``negative`` one.
    positive, negative : str
        The classes of each group, as printed.
    """

    name: str
    X: np.ndarray
    y: np.ndarray
    positive: str
    negative: str


def yeast_class_names(y: np.ndarray) -> dict[int, str]:
    """Name PMLB's yeast class codes after UCI's classes, matched by class size.

    Parameters
    ----------
    y : ndarray
        PMLB's yeast labels.

    Returns
    -------
    dict of int to str
        PMLB code → UCI class name.

    Raises
    ------
    ValueError
        If the class sizes do not match :data:`YEAST_UCI_COUNTS` one to one.
    """
    labels, counts = np.unique(y, return_counts=True)
    by_count = {count: name for name, count in YEAST_UCI_COUNTS.items()}
    names = {int(lab): by_count.get(int(c)) for lab, c in zip(labels, counts, strict=True)}
    if None in names.values() or len(set(names.values())) != len(names):
        raise ValueError(
            f"yeast class counts {dict(zip(labels, counts, strict=True))} do not match UCI's"
        )
    return names  # type: ignore[return-value]


def load_binary(name: str) -> BinaryData:
    """Load one of :data:`DATASETS`, split into its two groups of classes.

    Parameters
    ----------
    name : str
        One of :data:`DATASETS` (``"breast_w"`` is accepted for ``"breast"``).

    Returns
    -------
    BinaryData
    """
    if name in ("breast", "breast_w"):
        d = load_breast_w()
        return BinaryData("breast", d.X, np.where(d.y == 1, 1, -1), "malignant {1}", "benign {0}")
    if name == "glass":
        d = load_glass()
        y = np.where(np.isin(d.y, (1, 2, 3)), 1, -1)
        return BinaryData("glass", d.X, y, "window {1, 2, 3}", "non-window {5, 7}")
    if name == "iris":
        d = load_iris()
        y = np.where(d.y == 1, 1, -1)
        return BinaryData("iris", d.X, y, "versicolor {1}", "setosa + virginica {0, 2}")
    if name == "yeast":
        d = load_yeast()
        names = yeast_class_names(d.y)
        membrane = sorted(code for code, n in names.items() if n.startswith("ME"))
        rest = sorted(code for code in names if code not in membrane)
        y = np.where(np.isin(d.y, membrane), 1, -1)
        pos = ", ".join(f"{names[c]}={c}" for c in membrane)
        neg = ", ".join(f"{names[c]}={c}" for c in rest)
        return BinaryData("yeast", d.X, y, f"membrane {{{pos}}}", f"rest {{{neg}}}")
    raise ValueError(f"unknown data set {name!r}; available: {', '.join(DATASETS)}")


def max_scaler(X_train: np.ndarray) -> np.ndarray:
    """Per-column divisors for the paper's scaling.

    Parameters
    ----------
    X_train : ndarray of shape (n_samples, n_features)
        The training part.

    Returns
    -------
    ndarray of shape (n_features,)
        The largest |value| of each column (1 for an all-zero column).
    """
    scale = np.abs(X_train).max(axis=0)
    return np.where(scale > 0, scale, 1.0)


def median_sq_distance(X: np.ndarray) -> float:
    """The median squared distance between distinct rows of ``X``: the unit ``m``
    of the widths.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        The (scaled) training examples.

    Returns
    -------
    float
        The median, or 1 if it is 0 or there are fewer than two rows.
    """
    d = squared_distances(X, X)[np.triu_indices(X.shape[0], 1)]
    m = float(np.median(d)) if d.size else 1.0
    return m if m > 0 else 1.0


@dataclass
class RuntimeData:
    """The Figure-4 data, scaled by the training part's column maxima.

    Attributes
    ----------
    X, y : ndarray
        The training examples and their ±1 labels.
    X_test, y_test : ndarray
        The largest test set; the smaller ones are its prefixes.
    """

    X: np.ndarray
    y: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray


def runtime_data(cfg: Config) -> RuntimeData:
    """Draw the Figure-4 stand-in for the paper's Physics data from ijcnn1.

    Parameters
    ----------
    cfg : Config
        ``runtime_per_class`` training examples per class come from ijcnn1's
        training set; the largest of ``runtime_sizes`` test examples, half
        per class, from its test set, ordered so that every even prefix is
        half per class too. Drawn with ``numpy.random.default_rng(0)``.

    Returns
    -------
    RuntimeData
    """
    j = load_ijcnn1()
    rng = np.random.default_rng(0)
    per = cfg.runtime_per_class
    tr = np.concatenate(
        [rng.choice(np.flatnonzero(j.y_train == c), per, replace=False) for c in (-1, 1)]
    )
    half = max(cfg.runtime_sizes) // 2
    pools = [rng.choice(np.flatnonzero(j.y_test == c), half, replace=False) for c in (-1, 1)]
    te = np.empty(2 * half, dtype=np.intp)
    te[0::2], te[1::2] = pools[0], pools[1]  # alternate: each even prefix is balanced
    X, X_test = j.X_train[tr], j.X_test[te]
    scale = max_scaler(X)
    return RuntimeData(X / scale, j.y_train[tr], X_test / scale, j.y_test[te])
