"""IncrementalSVC: the local incremental update, its baselines, multiclass,
the budget, pickling mid-stream and bad input."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from localsvm import (
    SVC,
    Capabilities,
    IncrementalSVC,
    SolverBackend,
    get_backend,
    hookimpl,
    plugins,
)
from localsvm.datasets import load_banana, load_iris
from localsvm.kernels import KernelSpec, kernel_matrix_numpy

FAST = {"C": 1.0, "gamma": 1.0, "max_neighbors": 20}


@pytest.fixture(scope="module")
def banana0():
    return load_banana(0)


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return fn(*args, **kwargs)


class _Reference(SolverBackend):
    """A backend without a native online learner: IncrementalSVC runs its
    Python update and poses each working set to ``solve`` (here the Rust
    SMO, so only the update's implementation differs)."""

    name = "python-reference"
    capabilities = Capabilities(warm_start=True, subset=True, box_only=True)

    def solve(self, problem):
        return get_backend("rust").solve(problem)


class _ReferencePlugin:
    @hookimpl
    def localsvm_register_backends(self, register):
        register(_Reference())


@pytest.fixture(scope="module")
def reference_backend():
    pm = plugins.get_plugin_manager()
    plugin = _ReferencePlugin()
    pm.register(plugin)
    yield _Reference.name
    pm.unregister(plugin)


def _learner_invariants(model, C):
    spec = model.kernel_spec_
    for lr in model._learners:
        n = lr.n
        alive = lr.alive[:n]
        a, ys = lr.alpha[:n], lr.y[:n]
        assert np.all(a >= 0.0) and np.all(a <= C + 1e-12)
        assert np.all(a[~alive] == 0.0)
        assert abs(ys @ a) <= 1e-9 * max(1.0, a.sum())
        # g is kept up to date from the changes in α: compare with the sum.
        K = kernel_matrix_numpy(spec, lr.X[:n][alive], lr.X[:n])
        g = (a[alive] * ys[alive]) @ K
        np.testing.assert_allclose(lr.g[:n][alive], g[alive], atol=1e-8)
        # Only the band and the support vectors are kept.
        f = g + lr.b
        kept_ok = (ys * f <= 1.0 + model.epsilon + 1e-9) | (a > 0.0)
        assert np.all(kept_ok[alive])


def test_well_classified_example_changes_nothing(banana0):
    X, y = banana0.X_train, banana0.y_train
    model = _quiet(IncrementalSVC(**FAST).fit, X[:200], y[:200])
    dec = model.decision_function(X[200:])
    margin = np.where(y[200:] == model.classes_[1], 1.0, -1.0) * dec
    i = int(np.argmax(margin))  # far on its own side
    assert margin[i] > 1.0 + model.epsilon
    before = (model.dual_coef_.copy(), model.intercept_.copy(), model.support_.copy())
    model.partial_fit(X[200 + i : 201 + i], y[200 + i : 201 + i])
    np.testing.assert_array_equal(model.dual_coef_, before[0])
    np.testing.assert_array_equal(model.intercept_, before[1])
    np.testing.assert_array_equal(model.support_, before[2])
    h = model.history_
    assert not h["updated"][-1] and h["neighbourhood"][-1] == 0 and h["n_solves"][-1] == 0
    # Beyond the band, the example is not even kept.
    assert model._learners[0].seen[: model._learners[0].n][-1] != 200


def test_misclassified_example_grows_a_neighbourhood(banana0):
    X, y = banana0.X_train, banana0.y_train
    model = _quiet(IncrementalSVC(**FAST).fit, X[:200], y[:200])
    dec = model.decision_function(X[200:])
    margin = np.where(y[200:] == model.classes_[1], 1.0, -1.0) * dec
    i = int(np.argmin(margin))
    assert margin[i] < 0
    _quiet(model.partial_fit, X[200 + i : 201 + i], y[200 + i : 201 + i])
    h = model.history_
    assert h["updated"][-1]
    assert 2 <= h["neighbourhood"][-1] <= FAST["max_neighbors"] + 1
    assert h["n_solves"][-1] == h["neighbourhood"][-1] - 1  # one neighbour per step
    # The new example is now a support vector (or at least moved).
    assert model._learners[0].alpha[model._learners[0].n - 1] > 0 or not h["reached"][-1]


def test_threshold_stops_the_growth(banana0):
    X, y = banana0.X_train, banana0.y_train
    # With a threshold above any slack criterion, growth stops at the first
    # working set (the new example and its nearest neighbour).
    model = IncrementalSVC(C=1.0, gamma=1.0, threshold=100.0).fit(X, y)
    h = model.history_
    up = h["updated"] & (h["n_solves"] > 0)
    assert np.all(h["neighbourhood"][up] == 2) and np.all(h["reached"][up])
    assert np.all(h["criterion"] < 100.0)


def test_invariants_hold_along_the_stream(banana0):
    X, y = banana0.X_train, banana0.y_train
    model = IncrementalSVC(**FAST)
    for start in range(0, 400, 100):
        _quiet(model.partial_fit, X[start : start + 100], y[start : start + 100], classes=[-1, 1])
        _learner_invariants(model, FAST["C"])
    np.testing.assert_array_equal(model.support_vectors_, X[model.support_])
    assert model.n_seen_ == 400 and model.history_["n_seen"].shape == (400,)
    assert model.dual_coef_.shape == (1, model.support_.size)
    assert model.n_support_.sum() == model.support_.size


def test_accuracy_close_to_batch_svc(banana0):
    d = banana0
    model = _quiet(IncrementalSVC(C=1.0, gamma=1.0).fit, d.X_train, d.y_train)
    batch = SVC(C=1.0, gamma=1.0).fit(d.X_train, d.y_train)
    err = 1.0 - model.score(d.X_test, d.y_test)
    err_batch = 1.0 - batch.score(d.X_test, d.y_test)
    assert err <= err_batch + 0.01


def test_rebatch_is_the_batch_svm(banana0):
    X, y = banana0.X_train[:150], banana0.y_train[:150]
    model = IncrementalSVC(C=1.0, gamma=1.0, strategy="rebatch", tol=1e-6).fit(X, y)
    batch = SVC(C=1.0, gamma=1.0, tol=1e-6).fit(X, y)
    np.testing.assert_allclose(
        model.decision_function(banana0.X_test), batch.decision_function(banana0.X_test), atol=1e-4
    )
    np.testing.assert_array_equal(np.sort(model.support_), np.sort(batch.support_))
    assert model.history_["updated"].all()


def test_fit_is_partial_fit_on_a_fresh_model(banana0):
    X, y = banana0.X_train[:200], banana0.y_train[:200]
    a = _quiet(IncrementalSVC(**FAST).fit, X, y)
    b = _quiet(IncrementalSVC(**FAST).partial_fit, X, y)
    np.testing.assert_array_equal(a.dual_coef_, b.dual_coef_)
    np.testing.assert_array_equal(a.intercept_, b.intercept_)
    # fit starts over
    c = _quiet(IncrementalSVC(**FAST).fit, X[:50], y[:50])
    _quiet(c.fit, X, y)
    np.testing.assert_array_equal(a.dual_coef_, c.dual_coef_)
    assert c.n_seen_ == 200


def test_pickle_mid_stream_then_continue(banana0):
    X, y = banana0.X_train, banana0.y_train
    model = IncrementalSVC(**FAST, multiclass="ovr", max_support=60)
    _quiet(model.partial_fit, X[:150], y[:150], classes=[-1, 1])
    clone = pickle.loads(pickle.dumps(model))
    # The native learners' state survives the round trip whole.
    for a, b in zip(model._learners, clone._learners, strict=True):
        for attr in ("X", "alpha", "g", "alive", "seen", "cls"):
            np.testing.assert_array_equal(getattr(a, attr), getattr(b, attr))
        assert (a.b, a.t, a.n_iter) == (b.b, b.t, b.n_iter)
    for m in (model, clone):
        _quiet(m.partial_fit, X[150:300], y[150:300])
        _quiet(m.partial_fit, X[300:], y[300:])
    np.testing.assert_array_equal(model.support_, clone.support_)
    np.testing.assert_array_equal(model.dual_coef_, clone.dual_coef_)
    np.testing.assert_array_equal(model.intercept_, clone.intercept_)
    np.testing.assert_array_equal(
        model.decision_function(banana0.X_test), clone.decision_function(banana0.X_test)
    )
    h, hc = model.history_, clone.history_
    for key in ("neighbourhood", "criterion", "n_support", "n_stored"):
        np.testing.assert_array_equal(h[key], hc[key])


def test_native_learner_is_the_default(banana0):
    model = _quiet(IncrementalSVC(**FAST).fit, banana0.X_train[:50], banana0.y_train[:50])
    assert model.backend_ == "rust"
    assert all(type(lr.native).__name__ == "IncrementalLearner" for lr in model._learners)


# With threshold=100 growth stops at the first working set that moves, so the
# two implementations take the same discrete decisions and agree to rounding
# (with small thresholds a borderline stop can flip on a rounding difference
# of the float32 Hessians, after which the streams differ).
REFERENCE_CASES = [
    ({"threshold": 100.0, "reprocess": 0}, 400),
    ({"threshold": 0.01, "reprocess": 0}, 60),
    ({"threshold": 100.0, "reprocess": 0, "max_support": 20}, 200),
    ({"threshold": 100.0, "reprocess": 0, "kernel": "poly", "degree": 2, "gamma": 0.5}, 60),
    ({"threshold": 100.0, "reprocess": 0, "kernel": "linear"}, 100),
    ({"threshold": 100.0, "reprocess": 0, "kernel": "sigmoid", "gamma": 0.1}, 100),
    ({"strategy": "rebatch"}, 100),
    # The reprocessing picks the most violating examples by y − g (in units
    # of tol); the free multipliers sit on the margin only to within the
    # solver's accuracy, so their order can flip on a rounding difference of
    # the two implementations, after which the streams differ (on Banana from
    # the 33rd example with reprocess=1 since the reference's solves take the
    # float64 kernel path at this tol, the 32nd with reprocess=3).
    ({"threshold": 100.0}, 30),
    ({"threshold": 100.0, "reprocess": 3}, 30),
]


@pytest.mark.parametrize(("params", "n"), REFERENCE_CASES)
def test_native_learner_matches_the_python_reference(banana0, reference_backend, params, n):
    X, y = banana0.X_train[:n], banana0.y_train[:n]
    kw = {"C": 1.0, "gamma": 1.0, "tol": 1e-6, **params}
    native = _quiet(IncrementalSVC(**kw).fit, X, y)
    ref = _quiet(IncrementalSVC(**kw, backend=reference_backend).fit, X, y)
    assert ref.backend_ == reference_backend
    assert not hasattr(ref._learners[0], "native")
    Xt = banana0.X_test
    np.testing.assert_array_equal(native.predict(Xt), ref.predict(Xt))
    np.testing.assert_allclose(native.decision_function(Xt), ref.decision_function(Xt), atol=1e-5)
    hn, hr = native.history_, ref.history_
    for key in ("updated", "neighbourhood", "n_solves", "reached", "n_support", "n_stored"):
        np.testing.assert_array_equal(hn[key], hr[key], err_msg=key)
    # Both stop within tol = 1e-6 of the KKT conditions, so their criteria
    # agree to the solver's accuracy, not to rounding: 3.7e-6 apart on an
    # AVX-512 machine (reprocess=3), whose float32 Hessian rows round
    # differently from the reference's.
    np.testing.assert_allclose(hn["criterion"], hr["criterion"], rtol=1e-5, atol=10 * kw["tol"])


@pytest.mark.parametrize("multiclass", ["ovo", "ovr"])
def test_native_learner_matches_the_python_reference_multiclass(reference_backend, multiclass):
    d = load_iris()
    order = np.random.default_rng(0).permutation(150)[:60]
    # reprocess=0: the tie order of the reprocessing (see REFERENCE_CASES).
    kw = {"threshold": 100.0, "tol": 1e-6, "multiclass": multiclass, "reprocess": 0}
    native = IncrementalSVC(**kw).fit(d.X[order], d.y[order])
    ref = IncrementalSVC(**kw, backend=reference_backend).fit(d.X[order], d.y[order])
    np.testing.assert_array_equal(native.predict(d.X), ref.predict(d.X))
    np.testing.assert_allclose(native.decision_function(d.X), ref.decision_function(d.X), atol=1e-5)
    np.testing.assert_array_equal(native.support_, ref.support_)


def test_python_reference_pickles_mid_stream(banana0, reference_backend):
    X, y = banana0.X_train[:120], banana0.y_train[:120]
    model = IncrementalSVC(**FAST, threshold=0.01, backend=reference_backend)
    _quiet(model.partial_fit, X[:60], y[:60], classes=[-1, 1])
    clone = pickle.loads(pickle.dumps(model))
    for m in (model, clone):
        _quiet(m.partial_fit, X[60:], y[60:])
    np.testing.assert_array_equal(model.dual_coef_, clone.dual_coef_)
    np.testing.assert_array_equal(model.intercept_, clone.intercept_)


def test_variation_of_the_criterion_sets_the_neighbourhood(banana0):
    X, y = banana0.X_train, banana0.y_train
    sizes = []
    for eta in (0.1, 0.01, 0.001):
        h = _quiet(IncrementalSVC(C=1.0, gamma=1.0, threshold=eta).fit, X, y).history_
        up = h["n_solves"] > 0
        # The level is never reached (the criterion stays far above eta):
        # its variation stops the growth.
        assert np.all(h["criterion"][up][50:] > 0.1)
        assert h["reached"][up].mean() > 0.75
        sizes.append(h["neighbourhood"][up].mean())
    assert sizes[0] < sizes[1] < sizes[2]


@pytest.mark.parametrize("multiclass", ["ovo", "ovr"])
def test_multiclass(multiclass):
    d = load_iris()
    rng = np.random.default_rng(0)
    order = rng.permutation(d.y.shape[0])
    X, y = d.X[order], d.y[order]
    model = IncrementalSVC(multiclass=multiclass)
    model.partial_fit(X[:10], y[:10], classes=[0, 1, 2])
    for start in range(10, 150, 35):
        model.partial_fit(X[start : start + 35], y[start : start + 35])
    assert model.score(X, y) > 0.9
    n_models = 3
    rows = 2 if multiclass == "ovo" else 3
    assert model.dual_coef_.shape == (rows, model.support_.size)
    assert model.intercept_.shape == (n_models,)
    assert model.decision_function(X).shape == (150, 3)
    assert set(model.history_["learner"]) == {0, 1, 2}
    np.testing.assert_array_equal(model.support_vectors_, X[model.support_])


def test_budget_bounds_the_model(banana0):
    X, y = banana0.X_train, banana0.y_train
    model = _quiet(IncrementalSVC(**FAST, max_support=40).fit, X, y)
    for lr in model._learners:
        assert lr.n_support <= 40
        assert lr.n_alive <= 80
    assert model.history_["n_support"].max() <= 40
    _learner_invariants(model, FAST["C"])
    assert model.score(banana0.X_test, banana0.y_test) > 0.8


def test_convergence_warnings(banana0):
    X, y = banana0.X_train, banana0.y_train
    with pytest.warns(ConvergenceWarning, match="max_neighbors=3"):
        IncrementalSVC(C=1.0, gamma=1.0, max_neighbors=3, threshold=1e-6).fit(X, y)
    with pytest.warns(ConvergenceWarning, match="subproblem solves stopped"):
        IncrementalSVC(C=100.0, gamma=1.0, max_iter=1, threshold=10.0).fit(X[:100], y[:100])


def test_other_kernels(banana0):
    X, y = banana0.X_train[:100], banana0.y_train[:100]
    for kernel in ("linear", "poly", "sigmoid"):
        model = _quiet(IncrementalSVC(kernel=kernel, max_neighbors=10).fit, X, y)
        _learner_invariants(model, 1.0)
        assert model.predict(X).shape == (100,)


def test_spec_is_the_kernel_of_the_first_batch(banana0):
    X, y = banana0.X_train, banana0.y_train
    model = IncrementalSVC(max_neighbors=5).partial_fit(X[:10], y[:10], classes=[-1, 1])
    expected = 1.0 / (X.shape[1] * X[:10].var())
    assert model.kernel_spec_ == KernelSpec("rbf", gamma=expected)
    _quiet(model.partial_fit, X[10:], y[10:])
    assert model.kernel_spec_.gamma == expected


# ------------------------------------------------------------ bad input


def test_label_outside_classes(banana0):
    X, y = banana0.X_train[:20], banana0.y_train[:20]
    model = IncrementalSVC().partial_fit(X, y, classes=[-1, 1])
    with pytest.raises(ValueError, match=r"labels \[2\] outside classes"):
        model.partial_fit(X[:3], np.array([1, 2, -1]))
    with pytest.raises(ValueError, match="outside classes"):
        IncrementalSVC().partial_fit(X, np.where(y > 0, 3, -1), classes=[-1, 1])


def test_changing_number_of_features(banana0):
    X, y = banana0.X_train[:20], banana0.y_train[:20]
    model = IncrementalSVC().partial_fit(X, y)
    with pytest.raises(ValueError, match="features"):
        model.partial_fit(np.hstack([X, X]), y)


@pytest.mark.parametrize("threshold", [0.0, -0.1])
def test_threshold_must_be_positive(banana0, threshold):
    with pytest.raises(ValueError, match="threshold"):
        IncrementalSVC(threshold=threshold).fit(banana0.X_train[:20], banana0.y_train[:20])


def test_first_call_needs_two_classes(banana0):
    X = banana0.X_train[:10]
    with pytest.raises(ValueError, match="classes must be passed on the first call"):
        IncrementalSVC().partial_fit(X, np.ones(10))
    with pytest.raises(ValueError, match="at least two classes"):
        IncrementalSVC().partial_fit(X, np.ones(10), classes=[1])
    with pytest.raises(ValueError, match="greater than one"):
        IncrementalSVC().fit(X, np.ones(10))
    # with classes, a one-class first batch is fine
    model = IncrementalSVC().partial_fit(X, np.ones(10), classes=[-1, 1])
    assert np.all(model.predict(X) == 1)


def test_classes_must_not_change(banana0):
    X, y = banana0.X_train[:20], banana0.y_train[:20]
    model = IncrementalSVC().partial_fit(X, y, classes=[-1, 1])
    model.partial_fit(X, y, classes=[1, -1])  # same set
    with pytest.raises(ValueError, match="not the same as on the first call"):
        model.partial_fit(X, y, classes=[-1, 1, 2])


def test_precomputed_kernel_is_rejected(banana0):
    with pytest.raises(ValueError, match="kernel"):
        IncrementalSVC(kernel="precomputed").fit(banana0.X_train[:20], banana0.y_train[:20])


def test_unfitted_and_bad_parameters(banana0):
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        IncrementalSVC().predict(banana0.X_test[:2])
    for bad in (
        {"strategy": "exact"},
        {"epsilon": -1.0},
        {"max_neighbors": 0},
        {"neighbor_step": 0},
        {"max_support": 0},
        {"C": 0.0},
    ):
        with pytest.raises(ValueError):
            IncrementalSVC(**bad).fit(banana0.X_train[:20], banana0.y_train[:20])


def _kkt_violation(model, X, y):
    """Largest violation ``max_up (y − f) − min_low (y − f)`` of the batch
    SVM's KKT conditions over every example seen (α = 0 for those forgotten)."""
    f = model.decision_function(X) - model.intercept_[0]
    ys = np.where(y == model.classes_[1], 1.0, -1.0)
    a = np.zeros(y.size)
    a[model.support_] = np.abs(model.dual_coef_[0])
    up = ((ys > 0) & (a < model.C)) | ((ys < 0) & (a > 0))
    low = ((ys < 0) & (a < model.C)) | ((ys > 0) & (a > 0))
    v = ys - f
    return v[up].max() - v[low].min()


def test_reprocess_repairs_the_machine_away_from_the_update(banana0):
    # The local update alone leaves stale multipliers (at C while well
    # classified, free off the margin); the subproblems over the most
    # violating kept examples bring the machine nearer the batch optimum.
    X, y = banana0.X_train, banana0.y_train
    kw = {"C": 1.0, "gamma": 1.0, "threshold": 0.01}
    plain = _quiet(IncrementalSVC(**kw, reprocess=0).fit, X, y)
    repaired = _quiet(IncrementalSVC(**kw, reprocess=1).fit, X, y)
    assert _kkt_violation(repaired, X, y) < 0.5 * _kkt_violation(plain, X, y)


def test_decision_values_are_the_float64_expansion(banana0):
    # The learner works in float64, so its decision values are the float64
    # kernel expansion: exact zeros stay zero (float32 sums would give tiny
    # values of either sign, which flip one-vs-one votes).
    X, y = banana0.X_train[:300], banana0.y_train[:300]
    model = IncrementalSVC(kernel="rbf", gamma=0.7).fit(X, y)
    spec = KernelSpec("rbf", gamma=0.7)
    K = kernel_matrix_numpy(spec, X, model.support_vectors_)
    want = K @ model.dual_coef_[0] + model.intercept_[0]
    np.testing.assert_allclose(model.decision_function(X), want, rtol=0, atol=1e-12)
