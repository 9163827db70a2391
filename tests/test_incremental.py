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
    QPProblem,
    SolverBackend,
    get_backend,
    hookimpl,
    plugins,
    select_backend,
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


class _NoOnline(SolverBackend):
    """A backend that solves QPs (through the Rust SMO) but has no online
    learner."""

    name = "no-online"
    priority = 1000  # above every built-in: 'auto' would pick it for a QP
    capabilities = Capabilities(warm_start=True, subset=True, box_only=True)

    def solve(self, problem):
        return get_backend("rust").solve(problem)


class _NoOnlinePlugin:
    @hookimpl
    def localsvm_register_backends(self, register):
        register(_NoOnline())


@pytest.fixture
def no_online_backend():
    pm = plugins.get_plugin_manager()
    plugin = _NoOnlinePlugin()
    pm.register(plugin)
    yield _NoOnline.name
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


def test_the_model_does_not_depend_on_how_the_stream_is_cut(banana0):
    # The rows of a call share one pass over the kept examples for their dot
    # products; each kernel value is still the same function of its pair, so
    # calls of 1, 7 or all the rows learn the same model.
    X, y = banana0.X_train[:300], banana0.y_train[:300]
    whole = _quiet(IncrementalSVC(**FAST, max_support=40).fit, X, y)
    for size in (1, 7):
        cut = IncrementalSVC(**FAST, max_support=40)
        for start in range(0, 300, size):
            _quiet(cut.partial_fit, X[start : start + size], y[start : start + size], [-1, 1])
        np.testing.assert_array_equal(cut.support_, whole.support_)
        np.testing.assert_array_equal(cut.dual_coef_, whole.dual_coef_)
        np.testing.assert_array_equal(cut.intercept_, whole.intercept_)
        for key in ("n_seen", "neighbourhood", "criterion", "n_support"):
            np.testing.assert_array_equal(cut.history_[key], whole.history_[key])


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


def test_a_backend_without_an_online_learner_is_refused(banana0, no_online_backend):
    X, y = banana0.X_train[:40], banana0.y_train[:40]
    with pytest.raises(ValueError, match=r"no-online.*online learner.*backends that can: 'rust'"):
        IncrementalSVC(backend=no_online_backend).fit(X, y)
    with pytest.raises(ValueError, match="online learner"):
        IncrementalSVC(backend=no_online_backend).partial_fit(X, y, classes=[-1, 1])
    # 'auto' passes over it (it comes first for a QP) to a backend that has one.
    probe = QPProblem(X=X[:2], y=np.array([1.0, -1.0]), upper=np.ones(2))
    assert select_backend("auto", probe).name == no_online_backend
    assert _quiet(IncrementalSVC(**FAST).fit, X, y).backend_ == "rust"


def _state(lr):
    """A learner's kept examples by stream position, ``seen → (x, y, α, g)``,
    and its bias."""
    n = lr.n
    alive = np.asarray(lr.alive[:n], dtype=bool)
    rows = zip(
        lr.seen[:n][alive],
        lr.X[:n][alive],
        lr.y[:n][alive],
        lr.alpha[:n][alive],
        lr.g[:n][alive],
        strict=True,
    )
    return {int(s): (x, yi, a, g) for s, x, yi, a, g in rows}, float(lr.b)


def _pair_solution(K, y, alpha, g, t, k, C):
    """The two-variable subproblem over ``(t, k)`` with the other multipliers
    fixed and ``y_t α_t + y_k α_k`` kept, in closed form: the step ``s`` of
    ``α_t += s``, ``α_k −= y_t y_k s`` that minimises the dual along that
    line (curvature ``K_tt + K_kk − 2 K_tk``), clipped to both boxes."""
    sign = y[t] * y[k]
    slope = (y[t] * g[t] - 1.0) - sign * (y[k] * g[k] - 1.0)
    s = -slope / (K[t, t] + K[k, k] - 2.0 * K[t, k])
    # 0 ≤ α_t + s ≤ C and 0 ≤ α_k − sign·s ≤ C.
    lo_k, hi_k = (alpha[k] - C, alpha[k]) if sign > 0 else (-alpha[k], C - alpha[k])
    s = min(max(s, -alpha[t], lo_k), C - alpha[t], hi_k)
    return alpha[t] + s, alpha[k] - sign * s


def test_each_local_update_solves_its_pair_exactly(banana0):
    # With a threshold above any criterion and no repair, every update
    # solves the new example with its nearest candidate only: a problem with
    # a closed form, checked here example by example on the learner's state.
    X, y = banana0.X_train, banana0.y_train
    C, eps = 1.0, 0.5
    model = IncrementalSVC(C=C, gamma=1.0, threshold=100.0, reprocess=0, epsilon=eps)
    model.partial_fit(X[:20], y[:20], classes=[-1, 1])
    spec = model.kernel_spec_
    updates = 0
    for i in range(20, 220):
        before, b0 = _state(model._learners[0])
        seen = sorted(before)
        Xs = np.array([before[s][0] for s in seen])
        ys = np.array([before[s][1] for s in seen])
        a0 = np.array([before[s][2] for s in seen])
        g0 = np.array([before[s][3] for s in seen])
        # The learner's own ±1 labelling of the two classes.
        label = ys[np.flatnonzero(y[seen] == y[i])[0]]
        Xa = np.vstack([Xs, X[i]])
        K = kernel_matrix_numpy(spec, Xa, Xa)
        g_new = K[-1, :-1] @ (a0 * ys)
        model.partial_fit(X[i : i + 1], y[i : i + 1])
        after, b1 = _state(model._learners[0])
        h = model.history_
        if label * (g_new + b0) >= 1.0:
            assert not h["updated"][-1]
            assert b1 == b0
            assert all(after[s][2] == before[s][2] for s in after if s in before)
            continue
        assert h["neighbourhood"][-1] == 2 and h["n_solves"][-1] == 1
        # The nearest candidate: a kept example in the band or a support vector.
        cand = (ys * (g0 + b0) <= 1.0 + eps) | (a0 > 0.0)
        d2 = ((Xs - X[i]) ** 2).sum(axis=1)
        d2[~cand] = np.inf
        k = int(np.argmin(d2))
        ya, alpha, ga = np.append(ys, label), np.append(a0, 0.0), np.append(g0, g_new)
        want_t, want_k = _pair_solution(K, ya, alpha, ga, alpha.size - 1, k, C)
        got_t = after[i][2] if i in after else 0.0
        got_k = after[seen[k]][2] if seen[k] in after else 0.0
        assert got_t == pytest.approx(want_t, abs=1e-5)
        assert got_k == pytest.approx(want_k, abs=1e-5)
        # Nothing else moved.
        assert all(after[s][2] == before[s][2] for s in after if s in before and s != seen[k])
        # The bias: minus the mean of g − y over the free multipliers.
        kept = np.array([after[s][1:] for s in sorted(after)])
        free = (kept[:, 1] > 0.0) & (kept[:, 1] < C)
        if free.any():
            assert b1 == pytest.approx(-np.mean(kept[free, 2] - kept[free, 0]), abs=1e-9)
        updates += 1
    assert updates >= 10


#: Keeping every example (a band wider than any margin) and repairing until
#: the largest KKT violation is within tol after each example makes the
#: machine the batch SVM of the examples so far, whatever path led there.
BATCH_LIKE = {"epsilon": 1e9, "reprocess": 1000, "tol": 1e-5, "max_neighbors": 10}


@pytest.mark.parametrize(
    "kernel",
    [{"gamma": 1.0}, {"kernel": "poly", "degree": 2, "gamma": 0.5}, {"kernel": "linear"}],
    ids=["rbf", "poly", "linear"],
)
def test_repaired_to_tol_is_the_batch_svm(banana0, kernel):
    X, y = banana0.X_train[:200], banana0.y_train[:200]
    model = IncrementalSVC(C=1.0, **kernel, **BATCH_LIKE)
    for start in range(0, 200, 50):
        _quiet(model.partial_fit, X[start : start + 50], y[start : start + 50], classes=[-1, 1])
    batch = SVC(C=1.0, **kernel, tol=1e-6).fit(X, y)
    Xt = banana0.X_test[:500]
    np.testing.assert_allclose(model.decision_function(Xt), batch.decision_function(Xt), atol=2e-4)
    assert abs(model.intercept_[0] - batch.intercept_[0]) < 2e-4
    assert _kkt_violation(model, X, y) <= 1.01 * BATCH_LIKE["tol"]


@pytest.mark.parametrize("multiclass", ["ovo", "ovr"])
def test_repaired_to_tol_multiclass_is_the_batch_svm(multiclass):
    d = load_iris()
    order = np.random.default_rng(0).permutation(150)
    X, y = d.X[order], d.y[order]
    model = _quiet(IncrementalSVC(C=1.0, gamma=0.5, multiclass=multiclass, **BATCH_LIKE).fit, X, y)
    if multiclass == "ovo":
        batch = SVC(C=1.0, gamma=0.5, tol=1e-6, decision_function_shape="ovo").fit(X, y)
        model.set_params(decision_function_shape="ovo")
        np.testing.assert_allclose(
            model.decision_function(X), batch.decision_function(X), atol=2e-3
        )
        np.testing.assert_array_equal(model.predict(X), batch.predict(X))
        return
    # One SVM per class against the rest.
    for k, cls in enumerate(model.classes_):
        rest = SVC(C=1.0, gamma=0.5, tol=1e-6).fit(X, np.where(y == cls, 1, -1))
        np.testing.assert_allclose(
            model.decision_function(X)[:, k], rest.decision_function(X), atol=2e-3
        )


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


def test_budget_holds_when_the_smallest_margin_cannot_be_handed_over():
    # On ijcnn1's first rows the support vector of smallest margin sometimes
    # has no neighbour with room for its multiplier; the next one is removed
    # instead, so the budget still holds after every update.
    from localsvm.datasets import load_ijcnn1

    X, y = load_ijcnn1(return_X_y=True)
    model = _quiet(IncrementalSVC(max_support=100).fit, X[:6000], y[:6000])
    assert model.history_["n_support"].max() <= 100
    assert all(lr.n_support <= 100 for lr in model._learners)


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


def test_the_learner_takes_the_solver_settings(banana0):
    # The core's learner takes the typed settings of solve_qp and
    # solve_local: each setting reaches the subproblems.
    from localsvm._core import IncrementalLearner, Kernel, LearnOptions, SolverSettings

    X, y = banana0.X_train[:150], np.where(banana0.y_train[:150] > 0, 1.0, -1.0)
    cls = np.zeros(150, dtype=np.int64)
    seen = np.arange(150, dtype=np.int64)

    def learn(kernel=None, **settings):
        lr = IncrementalLearner(2, kernel or Kernel("rbf", gamma=1.0))
        s = SolverSettings(**settings) if settings else None
        res = lr.learn(X, y, cls, seen, options=LearnOptions(10.0, 0.01), settings=s)
        return lr, res

    default, res = learn()
    assert res.solves > 0 and res.unconverged == 0
    # max_iter=1: every subproblem stops after one step, unconverged.
    capped, res = learn(max_iter=1)
    assert capped.n_iter <= res.solves and res.unconverged > 0
    # A tighter tol takes more iterations and reaches a smaller violation.
    tight, _ = learn(tol=1e-6)
    assert tight.n_iter > default.n_iter
    # 'auto' solves the working sets in float32, as 'float32' does; in
    # float64 the path differs (an online model depends on it) but fits as
    # well.
    f32, _ = learn(precision="float32")
    np.testing.assert_array_equal(f32.alpha, default.alpha)
    f64, _ = learn(precision="float64")
    assert not np.array_equal(f64.alpha, default.alpha)
    accuracy = [np.mean(np.sign(lr.decision_function(X)) == y) for lr in (default, f64)]
    assert abs(accuracy[0] - accuracy[1]) < 0.05, accuracy
    # float32 on a kernel it cannot represent is refused, naming it.
    with pytest.raises(ValueError, match="precision='float32'"):
        learn(Kernel("poly", gamma=1e-100, degree=3), precision="float32")
    with pytest.raises(TypeError):
        IncrementalLearner(2, Kernel("rbf", gamma=1.0)).learn(
            X, y, cls, seen, options=LearnOptions(1.0, 0.01), settings={"tol": 1e-3}
        )


def test_auto_precision_follows_the_batch_rule(banana0):
    # precision='auto' picks the working sets' arithmetic as batch solves
    # do (kernel/precision.rs): float64 where float32 cannot hold the kernel
    # values (a linear kernel on rows of norm ~1e20 has values ~1e40, beyond
    # float32's range) or cannot resolve tol; float32 otherwise.
    from localsvm._core import IncrementalLearner, Kernel, LearnOptions, SolverSettings

    X, y = banana0.X_train[:120], np.where(banana0.y_train[:120] > 0, 1.0, -1.0)
    cls = np.zeros(120, dtype=np.int64)
    seen = np.arange(120, dtype=np.int64)

    def learn(Xs, kernel, c, chunk=120, **settings):
        lr = IncrementalLearner(2, kernel)
        s = SolverSettings(**settings)
        for a in range(0, 120, chunk):
            b = a + chunk
            lr.learn(
                Xs[a:b], y[a:b], cls[a:b], seen[a:b], options=LearnOptions(c, 0.01), settings=s
            )
        return lr

    big = X * 1e20
    linear = Kernel("linear")
    auto = learn(big, linear, 1e-40, precision="auto")
    f64 = learn(big, linear, 1e-40, precision="float64")
    assert np.all(np.isfinite(auto.alpha)) and auto.n_support > 0
    np.testing.assert_array_equal(auto.alpha, f64.alpha)
    assert auto.b == f64.b
    # Per example, not per batch: the same model one row at a time.
    np.testing.assert_array_equal(
        learn(big, linear, 1e-40, chunk=1, precision="auto").alpha, auto.alpha
    )
    with pytest.raises(ValueError, match="precision='float32'"):
        learn(big, linear, 1e-40, precision="float32")
    # A tol below float32's resolution on this kernel: float64 too.
    rbf = Kernel("rbf", gamma=1.0)
    fine = learn(X, rbf, 10.0, tol=1e-7, precision="auto")
    np.testing.assert_array_equal(
        fine.alpha, learn(X, rbf, 10.0, tol=1e-7, precision="float64").alpha
    )
    # Ordinary data at the default tol: float32, as before.
    plain = learn(X, rbf, 10.0, precision="auto")
    np.testing.assert_array_equal(plain.alpha, learn(X, rbf, 10.0, precision="float32").alpha)
    assert not np.array_equal(plain.alpha, learn(X, rbf, 10.0, precision="float64").alpha)


def test_a_batch_crosses_into_the_core_once_per_binary_model(banana0):
    # A partial_fit of 100 rows is one call of the core's learner per binary
    # model, not one per row.
    X, y = banana0.X_train[:200], banana0.y_train[:200]
    model = IncrementalSVC(**FAST).partial_fit(X[:100], y[:100], classes=[-1, 1])
    calls = []

    class Counting:
        def __init__(self, native):
            self.native = native

        def learn(self, Xb, *args, **kwargs):
            calls.append(Xb.shape[0])
            return self.native.learn(Xb, *args, **kwargs)

        def __getattr__(self, name):
            return getattr(self.native, name)

    for lr in model._learners:
        lr.native = Counting(lr.native)
    model.partial_fit(X[100:200], y[100:200])
    assert calls == [100]
    assert model.n_seen_ == 200


def test_parameters_set_between_one_row_calls_take_effect(banana0):
    """The learners' settings are kept from one ``partial_fit`` call to the
    next; ``set_params`` between calls must still reach the next update (a
    budget set mid-stream holds from then on)."""
    X, y = np.ascontiguousarray(banana0.X_train), banana0.y_train
    model = IncrementalSVC(C=1.0, gamma=1.0)
    for i in range(200):
        model.partial_fit(X[i : i + 1], y[i : i + 1], classes=[-1, 1])
    assert model.support_.size > 30
    model.set_params(max_support=30)
    for i in range(200, 400):
        model.partial_fit(X[i : i + 1], y[i : i + 1])
    assert model.support_.size <= 30


def _imbalanced_classes(n=1500, seed=3):
    # Four classes of very different sizes: a batch of 60 rows often holds
    # none of the rarest, so some one-vs-one problems get no rows at all.
    from sklearn.datasets import make_classification

    X, y = make_classification(
        n,
        6,
        n_informative=4,
        n_redundant=0,
        n_classes=4,
        n_clusters_per_class=1,
        weights=[0.8, 0.12, 0.05, 0.03],
        class_sep=2.0,
        random_state=seed,
    )
    return np.ascontiguousarray(X), y


def _stream_of(model, X, y, weights=None):
    for start in range(0, X.shape[0], 60):
        part = slice(start, start + 60)
        sw = None if weights is None else weights[part]
        model.partial_fit(X[part], y[part], classes=[0, 1, 2, 3], sample_weight=sw)
    return model


@pytest.mark.parametrize("multiclass", ["ovo", "ovr"])
@pytest.mark.parametrize("n_jobs", [1, 2])
def test_one_native_call_per_batch_learns_what_one_call_per_model_learns(
    multiclass, n_jobs, monkeypatch
):
    # Several binary models learn a batch in one call of the core
    # (learn_many, the models shared between two threads for n_jobs=2):
    # the same models, histories and predictions as one call per model.
    X, y = _imbalanced_classes()
    weights = np.ones(y.shape[0])
    weights[::7] = 0.0
    params = {"multiclass": multiclass, "n_jobs": n_jobs, "C": 2.0}
    batches = -(-y.shape[0] // 60)
    learn_many = IncrementalSVC._learn_many
    many_calls = []

    def counted(self, *args):
        many_calls.append(args[-1])
        return learn_many(self, *args)

    monkeypatch.setattr(IncrementalSVC, "_learn_many", counted)
    many = _stream_of(IncrementalSVC(**params), X, y, weights)
    assert many_calls == [n_jobs] * batches
    calls = []
    monkeypatch.setattr(
        IncrementalSVC,
        "_learn_many_threads",
        lambda self, ctx, report: calls.append(1),
    )
    one_each = _stream_of(IncrementalSVC(**params), X, y, weights)
    assert len(calls) == batches and len(many_calls) == batches
    for a, b in zip(many._learners, one_each._learners, strict=True):
        for name in ("X", "y", "alpha", "g", "alive", "seen", "cls"):
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
        assert (a.b, a.t, a.n_iter) == (b.b, b.t, b.n_iter)
    h_many, h_each = many.history_, one_each.history_
    for name in h_many:
        if name != "time":
            np.testing.assert_array_equal(h_many[name], h_each[name])
    np.testing.assert_array_equal(many.support_, one_each.support_)
    np.testing.assert_array_equal(many.decision_function(X), one_each.decision_function(X))
    assert many.score(X, y) > 0.9
    # A model pickled mid-stream continues as the one that was not.
    half = X.shape[0] // 2
    first = _stream_of(IncrementalSVC(**params), X[:half], y[:half])
    resumed = _stream_of(pickle.loads(pickle.dumps(first)), X[half:], y[half:])
    whole = _stream_of(IncrementalSVC(**params), X[:half], y[:half])
    whole = _stream_of(whole, X[half:], y[half:])
    np.testing.assert_array_equal(resumed.history_["n_seen"], whole.history_["n_seen"])
    np.testing.assert_array_equal(resumed.dual_coef_, whole.dual_coef_)


@pytest.mark.parametrize("multiclass", ["ovo", "ovr"])
def test_a_budget_compacting_within_a_block_learns_what_one_row_calls_learn(multiclass):
    # max_support makes the learners compact their stores several times
    # within one block of a batch's dot products (whose remaining rows are
    # then renumbered): the same model as one row per call.
    d = load_iris()
    X = d.X - d.X.mean(axis=0)
    params = {"max_support": 50, "multiclass": multiclass, "gamma": 0.5}
    whole = IncrementalSVC(**params).fit(X, d.y)
    rows = IncrementalSVC(**params)
    for k in range(X.shape[0]):
        rows.partial_fit(X[k : k + 1], d.y[k : k + 1], classes=[0, 1, 2])
    np.testing.assert_array_equal(whole.support_, rows.support_)
    np.testing.assert_array_equal(whole.dual_coef_, rows.dual_coef_)
    np.testing.assert_array_equal(whole.intercept_, rows.intercept_)


def test_history_of_a_learner_that_saw_no_rows():
    """A one-vs-one learner whose classes have not yet come in the stream
    has an empty history: history_ lists the other learners' rows only."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((20, 3))
    model = IncrementalSVC().partial_fit(X, np.zeros(20, dtype=int), classes=[0, 1, 2])
    h = model.history_
    # Learners (0, 1) and (0, 2) took the 20 rows of class 0; (1, 2) none.
    learners, counts = np.unique(h["learner"], return_counts=True)
    assert learners.tolist() == [0, 1] and counts.tolist() == [20, 20]
    assert all(col.shape == (40,) for col in h.values())
