"""The data the benchmarks generate or split, shared by ``bench``,
``bench local`` and ``bench scale`` (their timer and table printer are in
:mod:`localsvm_benchmarks.report`)."""

from __future__ import annotations

import numpy as np

#: Test rows of the generated data.
N_TEST = 20_000
#: ``bench local``: the training rows of ijcnn1's split (the rest, 41 691, test).
LOCAL_N_TRAIN = 100_000


def generated(n: int, n_test: int = N_TEST) -> tuple[np.ndarray, ...]:
    """The generated problem with ``n`` training rows and ``n_test`` test
    rows (see :mod:`localsvm_benchmarks.scale`)."""
    from sklearn.datasets import make_classification

    X, y = make_classification(
        n_samples=n + n_test,
        n_features=20,
        n_informative=12,
        n_redundant=4,
        n_clusters_per_class=16,
        flip_y=0.02,
        class_sep=1.2,
        random_state=0,
    )
    mean, std = X[:n].mean(axis=0), X[:n].std(axis=0)
    std[std == 0] = 1.0
    X = (X - mean) / std
    return X[:n], y[:n], X[n:], y[n:]


def many_classes(n: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` rows of a synthetic 26-class problem (the size of UCI letter):
    16 features from scikit-learn's ``make_classification`` (fixed seed),
    one cluster per class."""
    from sklearn.datasets import make_classification

    return make_classification(
        n,
        16,
        n_informative=12,
        n_redundant=0,
        n_classes=26,
        n_clusters_per_class=1,
        random_state=0,
    )


def local_split(n_train: int = LOCAL_N_TRAIN, n_test: int | None = None) -> tuple:
    """ijcnn1's 141 691 rows (its training and test sets joined), shuffled by
    ``numpy.random.default_rng(0)``; the first 100 000 are the training pool
    and the rest the test pool. Returns the first ``n_train`` of the one and
    the first ``n_test`` (all when None) of the other."""
    from localsvm.datasets import load_dataset

    d = load_dataset("ijcnn1")
    X = np.vstack([d.X_train, d.X_test])
    y = np.concatenate([d.y_train, d.y_test])
    order = np.random.default_rng(0).permutation(y.shape[0])
    pool, rest = order[:LOCAL_N_TRAIN], order[LOCAL_N_TRAIN:]
    if not 2 <= n_train <= pool.shape[0]:
        raise ValueError(f"n_train must be in [2, {pool.shape[0]}], got {n_train}")
    if n_test is not None and not 1 <= n_test <= rest.shape[0]:
        raise ValueError(f"n_test must be in [1, {rest.shape[0]}], got {n_test}")
    tr = pool[:n_train]
    te = rest if n_test is None else rest[:n_test]
    return X[tr], y[tr], X[te], y[te]
