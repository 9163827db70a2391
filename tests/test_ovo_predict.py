"""One-vs-one prediction with many classes: each row's kernel values against
the support vectors once, each pair from its two classes' support vectors
only. The values must equal the dense expansion (every pair over every
support vector) to float rounding, in both precision paths."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.preprocessing import StandardScaler

from localsvm import SVC
from localsvm._multiclass import ovo_compact, ovo_pairs
from localsvm.datasets import load_iris
from localsvm.kernels import KernelSpec, decision_values, decision_values_ovo

KERNELS = {
    "rbf": {"kernel": "rbf", "gamma": 0.2},
    "poly": {"kernel": "poly", "gamma": 0.1, "degree": 3, "coef0": 1.0},
    "sigmoid": {"kernel": "sigmoid", "gamma": 0.01, "coef0": 0.0},
    "linear": {"kernel": "linear"},
}


@pytest.fixture(scope="module")
def iris():
    d = load_iris()
    return StandardScaler().fit_transform(d.X), d.y


@pytest.fixture(scope="module")
def letters():
    """26 classes, a few dozen rows each."""
    X, y = make_classification(
        1300,
        8,
        n_informative=6,
        n_redundant=0,
        n_classes=26,
        n_clusters_per_class=1,
        random_state=0,
    )
    return X[:1000], y[:1000], X[1000:]


def dense_reference(model, X) -> np.ndarray:
    """The pairs' values from the dense ``n_pairs × n_SV`` coefficients."""
    precision = "float64" if model.precision_ == "float64" else model.precision
    if model._spec.name == "linear":
        return X @ (model._model_coef @ model.support_vectors_).T + model._model_intercept
    return decision_values(
        model._spec,
        X,
        model.support_vectors_,
        model._model_coef,
        model._model_intercept,
        precision=precision,
    )


def tolerance(precision: str, ref: np.ndarray) -> float:
    scale = 1.0 + np.max(np.abs(ref))
    return (1e-4 if precision == "float32" else 1e-9) * scale


@pytest.mark.parametrize("precision", ["float32", "float64"])
@pytest.mark.parametrize("kernel", sorted(KERNELS))
def test_iris_pairs_equal_the_dense_expansion(iris, kernel, precision):
    X, y = iris
    model = SVC(C=1.0, precision=precision, decision_function_shape="ovo", **KERNELS[kernel])
    model.fit(X, y)
    assert model.precision_ == precision
    dec = model.decision_function(X)
    ref = dense_reference(model, X)
    assert dec.shape == (X.shape[0], 3)
    np.testing.assert_allclose(dec, ref, rtol=0, atol=tolerance(precision, ref))


@pytest.mark.parametrize("precision", ["float32", "float64"])
@pytest.mark.parametrize("kernel", sorted(KERNELS))
def test_26_classes_pairs_equal_the_dense_expansion(letters, kernel, precision):
    X, y, Xt = letters
    model = SVC(C=1.0, precision=precision, decision_function_shape="ovo", **KERNELS[kernel])
    model.fit(X, y)
    dec = model.decision_function(Xt)
    ref = dense_reference(model, Xt)
    assert dec.shape == (Xt.shape[0], 325)
    np.testing.assert_allclose(dec, ref, rtol=0, atol=tolerance(precision, ref))
    if kernel != "linear":
        # The compact layout holds only each pair's two classes.
        counts = model.n_support_
        expected = sum(int(counts[a] + counts[b]) for a, b in ovo_pairs(26))
        assert model._pair_coef.shape == (expected,)
        assert expected < model._model_coef.size


def test_the_core_entry_point_matches_the_dense_one_for_every_kernel(letters):
    """``decision_values_ovo`` against ``decision_values`` on a hand-made
    class-grouped model with random coefficients, every kernel and path."""
    rng = np.random.default_rng(1)
    X, _, Xt = letters
    counts = np.array([3, 0, 5, 1, 7, 2])
    sv = X[: counts.sum()]
    first = np.concatenate(([0], np.cumsum(counts)))
    pairs = ovo_pairs(counts.size)
    dense = np.zeros((len(pairs), sv.shape[0]))
    for p, (a, b) in enumerate(pairs):
        for c in (a, b):
            dense[p, first[c] : first[c + 1]] = rng.normal(size=counts[c])
    intercept = rng.normal(size=len(pairs))
    compact = ovo_compact(dense, counts)
    assert compact.size == sum(counts[a] + counts[b] for a, b in pairs)
    for name, params in KERNELS.items():
        spec = KernelSpec(
            name,
            gamma=params.get("gamma", 1.0),
            coef0=params.get("coef0", 0.0),
            degree=params.get("degree", 3),
        )
        for precision in ("float32", "float64"):
            got = decision_values_ovo(spec, Xt, sv, counts, compact, intercept, precision=precision)
            want = decision_values(spec, Xt, sv, dense, intercept, precision=precision)
            np.testing.assert_allclose(got, want, rtol=0, atol=tolerance(precision, want))


def test_bad_layouts_raise_value_errors(letters):
    X, _, Xt = letters
    spec = KernelSpec("rbf", gamma=0.1)
    sv = X[:4]
    counts = np.array([2, 1, 1])
    compact = np.ones(3 + 3 + 2)
    decision_values_ovo(spec, Xt, sv, counts, compact, np.zeros(3))
    with pytest.raises(ValueError, match="add up to 3 support vectors"):
        decision_values_ovo(spec, Xt, sv, np.array([2, 1, 0]), compact, np.zeros(3))
    with pytest.raises(ValueError, match="expected 8"):
        decision_values_ovo(spec, Xt, sv, counts, np.ones(9), np.zeros(3))
    with pytest.raises(ValueError, match="intercept"):
        decision_values_ovo(spec, Xt, sv, counts, compact, np.zeros(2))
    with pytest.raises(ValueError, match="n_support"):
        decision_values_ovo(spec, Xt, sv, np.array([2, 3, -1]), compact, np.zeros(3))
    with pytest.raises(ValueError, match="features"):
        decision_values_ovo(spec, Xt[:, :3], sv, counts, compact, np.zeros(3))


def test_a_model_pickled_without_the_compact_layout_still_predicts(letters):
    """Models saved before the compact layout existed rebuild it on the fly
    (without changing the estimator in predict)."""
    X, y, Xt = letters
    model = SVC(C=1.0, gamma=0.2).fit(X, y)
    want = model.decision_function(Xt)
    old = pickle.loads(pickle.dumps(model))
    del old._pair_coef
    np.testing.assert_array_equal(old.decision_function(Xt), want)
    assert not hasattr(old, "_pair_coef")
    np.testing.assert_array_equal(old.predict(Xt), model.predict(Xt))
