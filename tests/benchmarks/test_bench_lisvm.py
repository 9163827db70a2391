"""Benchmarks of IncrementalSVC (LISVM) against their speed targets.

* ``banana stream``: the 400 training examples of Banana realization 0 learnt
  one at a time (C = 1, gamma = 1) by LISVM (eta = 0.1 and 0.01), by the paper's
  rebatch baseline, and the batch SVM; the target is LISVM ≤ 10 % of rebatch's
  time with a validation error within one point of the batch SVM.
* ``ijcnn1 stream`` (slow): one pass over ijcnn1's 49 990 training rows
  (C = 1, gamma = 'scale' as ``bench``, the other settings the defaults:
  threshold = 0.001, epsilon = 0.5, reprocess = 1), against scikit-learn's
  batch fit;
  ``extra_info`` holds the mean time per example around 5 000, 20 000 and
  49 990 examples seen, and the number of support vectors there.

Without ``--benchmark-enable`` each body runs once as a smoke test.
"""

from __future__ import annotations

import warnings

import pytest
from sklearn.exceptions import ConvergenceWarning

from localsvm import SVC, IncrementalSVC
from localsvm.datasets import load_banana, load_ijcnn1


def _banana():
    d = load_banana(0)
    n_val = 2 * d.X_test.shape[0] // 3
    return d.X_train, d.y_train, d.X_test[:n_val], d.y_test[:n_val]


def _stream(model, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return model.fit(X, y)


MODELS = {
    "lisvm-0.1": lambda: IncrementalSVC(C=1.0, gamma=1.0, threshold=0.1),
    "lisvm-0.01": lambda: IncrementalSVC(C=1.0, gamma=1.0, threshold=0.01),
    "rebatch": lambda: IncrementalSVC(C=1.0, gamma=1.0, strategy="rebatch"),
    "batch-svc": lambda: SVC(C=1.0, gamma=1.0),
}


@pytest.mark.parametrize("name", list(MODELS))
def test_banana_stream(benchmark, name):
    X, y, Xv, yv = _banana()
    benchmark.group = "banana stream (400)"
    model = benchmark.pedantic(
        lambda: _stream(MODELS[name](), X, y), rounds=1 if name.startswith("lisvm") else 3
    )
    err = 1.0 - model.score(Xv, yv)
    benchmark.extra_info.update(validation_error=err, n_support=int(model.support_.size))
    assert err < 0.15


def _per_update(model, marks, window=500):
    h = model.history_
    out = {}
    for m in marks:
        sel = (h["n_seen"] >= m - window) & (h["n_seen"] < m)
        out[f"ms_per_example_at_{m}"] = 1000.0 * float(h["time"][sel].mean())
        out[f"n_support_at_{m}"] = int(h["n_support"][sel][-1])
    return out


@pytest.mark.slow
def test_ijcnn1_stream(benchmark):
    j = load_ijcnn1()
    benchmark.group = "ijcnn1 stream (49990)"
    model = benchmark.pedantic(
        lambda: _stream(IncrementalSVC(C=1.0, gamma="scale"), j.X_train, j.y_train),
        rounds=1,
    )
    acc = model.score(j.X_test, j.y_test)
    benchmark.extra_info.update(accuracy=acc, **_per_update(model, (5000, 20000, 49990)))
    assert acc > 0.9
