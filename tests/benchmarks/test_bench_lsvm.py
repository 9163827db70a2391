"""Benchmarks of the localized SVMs (Cheng, Tan & Jin, 2007).

Data: the Figure-4 stand-in of ``python -m localsvm reproduce lsvm`` — 300
training examples per class from ijcnn1's training set and a balanced test
sample from its test set (seed 0), attributes divided by their largest
|value| over the training set. Fixed parameters as in Figure 4: C = 10,
λ = 1 (RBF gamma = 1/λ), κ = 10.

* ``slsvm predict ijcnn1-600``: ``LocalSVC.predict`` (one local linear SVM
  per test example) on 600 test examples; ``extra_info`` has the cost per
  test example in ms.
* ``fit+predict ijcnn1-600/<n_test>``: PSVM (``ProfileSVC``, MagKmeans,
  transductive: profiles against the test set) against an RBF SVC
  (localsvm's and scikit-learn's), fit on the 600 examples then predicting
  the test set, for 600 and for 4800 test examples (all in the
  default run: the slowest, PSVM on 4800, takes about 0.6 s a round).

With benchmarks disabled (the default ``addopts``) each body runs once as a
smoke test and the accuracy floors still hold.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from sklearn.svm import SVC as SklearnSVC

from localsvm import SVC, LocalSVC, ProfileSVC
from localsvm.datasets import load_ijcnn1

C, WIDTH, KAPPA = 10.0, 1.0, 10
N_PER_CLASS = 300


@functools.cache
def ijcnn1_sample(n_test: int):
    """600 training examples (300 per class) and ``n_test`` test examples
    (half per class), scaled by the training set's column maxima."""
    j = load_ijcnn1()
    rng = np.random.default_rng(0)
    tr = np.concatenate(
        [rng.choice(np.flatnonzero(j.y_train == c), N_PER_CLASS, replace=False) for c in (-1, 1)]
    )
    te = np.concatenate(
        [rng.choice(np.flatnonzero(j.y_test == c), n_test // 2, replace=False) for c in (-1, 1)]
    )
    scale = np.abs(j.X_train[tr]).max(axis=0)
    scale[scale == 0] = 1.0
    return j.X_train[tr] / scale, j.y_train[tr], j.X_test[te] / scale, j.y_test[te]


def test_slsvm_predict(benchmark):
    X, y, Xt, yt = ijcnn1_sample(600)
    model = LocalSVC(C=C, bandwidth=WIDTH).fit(X, y)
    benchmark.group = "slsvm predict ijcnn1-600"
    pred = benchmark.pedantic(model.predict, args=(Xt,), rounds=3, iterations=1)
    acc = float(np.mean(pred == yt))
    stats = getattr(benchmark, "stats", None)
    info = {"accuracy": acc, "n_train": X.shape[0], "n_test": Xt.shape[0]}
    if stats is not None:
        info["ms_per_test_example"] = 1000.0 * stats.stats.min / Xt.shape[0]
    benchmark.extra_info.update(info)
    assert acc > 0.8


def _psvm(X, y, Xt):
    model = ProfileSVC(C=C, bandwidth=WIDTH, n_clusters=KAPPA, transductive=True, random_state=0)
    return model.fit(X, y, X_test=Xt).predict(Xt)


def _svc(X, y, Xt):
    return SVC(C=C, gamma=1.0 / WIDTH).fit(X, y).predict(Xt)


def _sklearn_svc(X, y, Xt):
    return SklearnSVC(C=C, gamma=1.0 / WIDTH).fit(X, y).predict(Xt)


MODELS = {"psvm": _psvm, "localsvm-svc": _svc, "sklearn-svc": _sklearn_svc}
FLOORS = {"psvm": 0.8, "localsvm-svc": 0.85, "sklearn-svc": 0.85}


#: (model, n_test) cases. None is ``slow``: the largest, PSVM on 4800 test
#: examples (MagKmeans on 600 profiles of length 4800), takes well under 2 s
#: (about 0.6 s on two cores).
CASES = [
    pytest.param(model, n_test, id=f"{model}-test{n_test}")
    for n_test in (600, 4800)
    for model in MODELS
]


@pytest.mark.parametrize(("model", "n_test"), CASES)
def test_fit_predict(benchmark, model, n_test):
    X, y, Xt, yt = ijcnn1_sample(n_test)
    benchmark.group = f"fit+predict ijcnn1-600/{n_test}"
    rounds = 3 if model == "psvm" else 10
    pred = benchmark.pedantic(MODELS[model], args=(X, y, Xt), rounds=rounds, iterations=1)
    acc = float(np.mean(pred == yt))
    benchmark.extra_info.update(accuracy=acc, n_train=X.shape[0], n_test=n_test)
    assert acc > FLOORS[model]
