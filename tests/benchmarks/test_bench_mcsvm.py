"""Benchmarks of the multiclass cluster SVM (``ClusterSVC``) against
one-vs-rest and one-vs-one ``SVC``.

* ``fit+predict <data>``: ``ClusterSVC`` against one-vs-rest and one-vs-one
  ``SVC`` (RBF), fit on realization 0's stratified 70 % training part
  (standardised) and predicting the 30 % test part, as in ``python -m
  localsvm reproduce mcsvm``; fixed parameters ``C=10, gamma='scale'`` (``1/d``
  on standardised features), in the range the cross-validation of the
  reproduction picks. Segment runs by default; waveform (3500 training
  examples) is marked ``slow``.
* ``fit usps``: ``ClusterSVC`` on USPS (10 classes) with a reduced set of
  kernel columns: 2000 training examples and 300 columns by default; all
  7291 examples with 1000 columns (target: under 10 s) marked ``slow``.

``extra_info`` records test accuracy. With benchmarks disabled (the default
``addopts``) each body runs once as a smoke test and the accuracy floors
still hold.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from localsvm_experiments.mcsvm import Split, config, load_split

from localsvm import SVC, ClusterSVC
from localsvm.datasets import load_usps

MODELS = {
    "mcsvm": lambda: ClusterSVC(C=10.0, gamma="scale", random_state=0),
    "svc-ovr": lambda: SVC(C=10.0, gamma="scale", multiclass="ovr"),
    "svc-ovo": lambda: SVC(C=10.0, gamma="scale", multiclass="ovo"),
}
FLOORS = {"segment": 0.9, "waveform": 0.8}


@functools.cache
def split(name: str) -> Split:
    return load_split(name, 0, config(False, None, None))


def _fit_predict(make, s: Split):
    model = make().fit(s.X_train, s.y_train)
    return model.predict(s.X_test)


@pytest.mark.parametrize("name", ["segment", pytest.param("waveform", marks=pytest.mark.slow)])
@pytest.mark.parametrize("method", sorted(MODELS))
def test_fit_predict(benchmark, name, method):
    s = split(name)
    benchmark.group = f"fit+predict {name}"
    pred = benchmark.pedantic(_fit_predict, args=(MODELS[method], s), rounds=3, iterations=1)
    acc = float(np.mean(pred == s.y_test))
    benchmark.extra_info.update(accuracy=acc, n_train=s.y_train.size, n_test=s.y_test.size)
    assert acc > FLOORS[name]


@pytest.mark.parametrize(
    ("n_train", "n_columns"),
    [
        pytest.param(2000, 300, id="usps2000-300"),
        pytest.param(None, 1000, id="usps-1000", marks=pytest.mark.slow),
    ],
)
def test_fit_usps(benchmark, n_train, n_columns):
    u = load_usps()
    X, y = u.X_train, u.y_train
    if n_train is not None:
        keep = np.random.default_rng(0).permutation(y.size)[:n_train]
        X, y = X[keep], y[keep]
    benchmark.group = "fit usps"
    model = benchmark.pedantic(
        lambda: ClusterSVC(n_columns=n_columns, random_state=0).fit(X, y),
        rounds=3,
        iterations=1,
    )
    acc = model.score(u.X_test, u.y_test)
    benchmark.extra_info.update(accuracy=acc, n_train=y.size, n_columns=n_columns)
    assert acc > 0.88
