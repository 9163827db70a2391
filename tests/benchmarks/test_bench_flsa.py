"""Benchmarks of the sparse least-squares SVMs (Xia et al., 2013).

* ``rflsa path ringnorm``: the whole RFLSA path (every N_sv up to 100) next
  to one RBF ``SVC`` fit (C=1, gamma='scale') on the same Ringnorm training
  set — the claim measured is that the whole path costs less than one SVC fit.
* ``flsa steps ringnorm``: greedy FLSA fits for growing ``n_support`` (the
  block of candidate columns held): the time grows linearly in N_sv, one
  pass over the candidate columns per step (O(n · #candidates)).

Sizes: 1000 training points in the default run; the paper's 3000 are marked
``slow``. ``extra_info`` records test accuracy and support vectors. With
benchmarks disabled (the default ``addopts``) each body runs once as a smoke
test.
"""

from __future__ import annotations

import numpy as np
import pytest

from localsvm import SVC, FLSAClassifier, RFLSAClassifier
from localsvm.datasets import load_ringnorm

SIZES = [
    pytest.param(1000, id="ringnorm1000"),
    pytest.param(3000, id="ringnorm3000", marks=pytest.mark.slow),
]


def ringnorm(n_train: int):
    """Realization 0's 7400 points, seeded split into n_train / 2000."""
    d = load_ringnorm(0)
    X = np.vstack([d.X_train, d.X_test])
    y = np.concatenate([d.y_train, d.y_test])
    perm = np.random.RandomState(0).permutation(X.shape[0])
    tr, te = perm[:n_train], perm[n_train : n_train + 2000]
    return X[tr], y[tr], X[te], y[te]


@pytest.mark.parametrize("n_train", SIZES)
@pytest.mark.parametrize("method", ["rflsa-path-100", "svc-fit"])
def test_rflsa_path_vs_svc(benchmark, n_train, method):
    X, y, Xt, yt = ringnorm(n_train)
    benchmark.group = f"rflsa path ringnorm{n_train}"
    if method == "svc-fit":
        model = benchmark(lambda: SVC(C=1.0, gamma="scale").fit(X, y))
        acc = model.score(Xt, yt)
        n_sv = int(model.support_.size)
    else:
        model = benchmark(lambda: RFLSAClassifier(n_support=100, random_state=0).fit(X, y))
        acc = float(model.path_score(Xt, yt).max())
        n_sv = len(model.path_[0])
    benchmark.extra_info.update(accuracy=acc, n_support=n_sv, n_train=n_train)
    assert acc > 0.95


@pytest.mark.parametrize("n_train", SIZES)
@pytest.mark.parametrize("n_support", [10, 50, 100])
def test_flsa_time_per_step(benchmark, n_train, n_support):
    X, y, Xt, yt = ringnorm(n_train)
    benchmark.group = f"flsa steps ringnorm{n_train}"
    model = benchmark.pedantic(
        lambda: FLSAClassifier(n_support=n_support, gram="precomputed").fit(X, y),
        rounds=3,
        iterations=1,
    )
    assert len(model.path_[0]) == n_support
    acc = model.score(Xt, yt)
    benchmark.extra_info.update(accuracy=acc, n_support=n_support, n_train=n_train)
    assert acc > 0.9
