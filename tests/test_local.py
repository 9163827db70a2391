"""LocalSVC (SLSVM / HLSVM): each test example's model against independent
references, warm starts, thresholds, fallbacks, plugins and bad input."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import SVC as SklearnSVC

import localsvm
from localsvm import LocalSVC, get_backend, hookimpl, plugins
from localsvm.backends.base import (
    EMPTY,
    ONLY_NEGATIVE,
    ONLY_POSITIVE,
    SOLVED,
    LocalBatch,
    feasible_start,
    solve_local_batch,
)
from localsvm.parallel import use_engine
from localsvm.similarity import squared_distances


@pytest.fixture(scope="module")
def small(banana):
    return banana.X_train[:120], banana.y_train[:120], banana.X_test[:15]


def test_each_decision_is_libsvm_with_sigma_weighted_boxes(small):
    """SLSVM's dual for x_s is the C-SVC with C·σ(x_s, x_i) per example, which is
    LIBSVM with sample_weight = σ (Cheng, Tan & Jin 2007, eq. 3.6)."""
    X, y, Q = small
    clf = LocalSVC(C=10.0, bandwidth=0.5, tol=1e-6, similarity_threshold=0.0).fit(X, y)
    ours = clf.decision_function(Q)
    for s in range(Q.shape[0]):
        sigma = np.exp(-squared_distances(X, Q[s : s + 1])[:, 0] / 0.5)
        ref = SklearnSVC(kernel="linear", C=10.0, tol=1e-8).fit(X, y, sample_weight=sigma)
        assert ours[s] == pytest.approx(ref.decision_function(Q[s : s + 1])[0], abs=2e-3)


def test_hlsvm_is_knn_svm(small):
    """σ ∈ {0, 1} for the k nearest: a linear SVM on the k nearest neighbours.

    Cold starts of the dual solver, because with every α at a bound the bias
    is any point of an interval: LIBSVM takes its midpoint from the solution
    it reaches, and a warm start (or the primal solver) can reach another
    optimal α with another interval."""
    X, y, Q = small
    clf = LocalSVC(C=1.0, similarity="knn", k=25, tol=1e-6, warm_start=False, solver="dual").fit(
        X, y
    )
    ours = clf.decision_function(Q)
    order = np.argsort(squared_distances(X, Q), axis=0, kind="stable")
    for s in range(Q.shape[0]):
        nn = order[:25, s]
        if np.unique(y[nn]).size < 2:
            assert ours[s] == (1.0 if y[nn][0] == 1 else -1.0)
            continue
        ref = SklearnSVC(kernel="linear", C=1.0, tol=1e-8).fit(X[nn], y[nn])
        assert ours[s] == pytest.approx(ref.decision_function(Q[s : s + 1])[0], abs=2e-3)


def test_infinite_bandwidth_is_the_global_linear_svm(small):
    X, y, Q = small
    ours = LocalSVC(C=1.0, bandwidth=1e12, tol=1e-6).fit(X, y).decision_function(Q)
    ref = SklearnSVC(kernel="linear", C=1.0, tol=1e-8).fit(X, y).decision_function(Q)
    np.testing.assert_allclose(ours, ref, atol=2e-3)


@pytest.mark.parametrize("backend", ["scipy", "clarabel"])
def test_other_backends_solve_the_same_local_problems(backend):
    if backend not in localsvm.list_backends():
        pytest.skip(f"{backend} backend not installed")
    rng = np.random.default_rng(3)
    X = rng.normal(size=(40, 2))
    y = np.where(X[:, 0] * X[:, 1] > 0, 1, -1)
    Q = rng.normal(size=(6, 2))
    kw = {"C": 5.0, "bandwidth": 1.0, "tol": 1e-6}
    rust = LocalSVC(**kw).fit(X, y).decision_details(Q)
    other = LocalSVC(backend=backend, **kw).fit(X, y).decision_details(Q)
    np.testing.assert_array_equal(rust.status, other.status)
    np.testing.assert_allclose(rust.decision, other.decision, atol=5e-3)


def test_warm_starts_agree_with_cold_starts_and_save_iterations(banana):
    X, y, Q = banana.X_train, banana.y_train, banana.X_test[:300]
    kw = {"C": 10.0, "bandwidth": 2.0, "tol": 1e-4}
    warm = LocalSVC(warm_start=True, **kw).fit(X, y).decision_details(Q)
    cold = LocalSVC(warm_start=False, **kw).fit(X, y).decision_details(Q)
    np.testing.assert_allclose(warm.decision, cold.decision, atol=1e-2)
    assert warm.n_iter.sum() < cold.n_iter.sum()
    assert np.all(cold.n_iter[cold.status == SOLVED] >= 1)


@pytest.mark.parametrize("solver", ["primal", "dual"])
@pytest.mark.parametrize("warm_start", [True, False])
@pytest.mark.parametrize("bandwidth", [0.3, 50.0])  # neighbourhoods vary / are everyone
def test_each_decision_is_independent_of_the_batch(small, warm_start, bandwidth, solver):
    """A test example's decision depends on it alone: not on the rest of the
    batch, its order, or how the batch is chunked among threads."""
    X, y, Q = small
    kw = {"warm_start": warm_start, "bandwidth": bandwidth, "C": 10.0, "solver": solver}
    clf = LocalSVC(**kw).fit(X, y)
    whole = clf.decision_function(Q)
    single = np.array([clf.decision_function(Q[i : i + 1])[0] for i in range(Q.shape[0])])
    np.testing.assert_array_equal(whole, single)
    reverse = clf.decision_function(Q[::-1])[::-1]
    np.testing.assert_array_equal(whole, reverse)
    labels = clf.predict(Q)
    assert [clf.predict(Q[i : i + 1])[0] for i in range(Q.shape[0])] == labels.tolist()
    for chunking in ({"chunk_size": 1}, {"chunk_size": 7, "n_jobs": 2}, {"n_jobs": 1}):
        other = LocalSVC(**kw, **chunking).fit(X, y).decision_function(Q)
        np.testing.assert_array_equal(whole, other)


@pytest.mark.parametrize("similarity", ["gaussian", "knn"])
def test_primal_and_dual_solvers_give_the_same_local_svms(banana, similarity):
    """Both solve each local problem to ``tol``: their decisions agree to a
    multiple of it, and the primal solver needs far fewer iterations."""
    X, y, Q = banana.X_train[:400], banana.y_train[:400], banana.X_test[:60]
    kw = {"C": 10.0, "bandwidth": 0.5, "k": 40, "similarity": similarity, "tol": 1e-6}
    primal = LocalSVC(solver="primal", **kw).fit(X, y)
    dual = LocalSVC(solver="dual", **kw).fit(X, y)
    assert (primal.solver_, dual.solver_) == ("primal", "dual")
    p, d = primal.decision_details(Q), dual.decision_details(Q)
    np.testing.assert_array_equal(p.status, d.status)
    solved = p.status == SOLVED
    assert solved.any() and p.converged.all()
    if similarity == "gaussian":  # every σ > 0: the bias is pinned by free multipliers
        np.testing.assert_allclose(p.decision, d.decision, atol=1e-4)
    else:  # HLSVM's all-at-bound neighbourhoods leave the bias in an interval
        assert np.mean(np.sign(p.decision) == np.sign(d.decision)) >= 0.95
    assert p.n_iter[solved].mean() < d.n_iter[solved].mean()


def test_solver_resolution_and_errors(small):
    X, y, _ = small
    assert LocalSVC().fit(X, y).solver_ == "primal"  # linear, 2 features
    assert LocalSVC(kernel="rbf").fit(X, y).solver_ == "dual"
    wide = np.hstack([X, np.random.default_rng(0).normal(size=(X.shape[0], 70))])
    clf = LocalSVC().fit(wide, y)
    assert clf.solver_ == "dual" and clf.use_gram_
    assert LocalSVC(solver="primal").fit(wide, y).solver_ == "primal"
    with pytest.raises(ValueError, match="solver='primal' needs kernel='linear'"):
        LocalSVC(solver="primal", kernel="rbf").fit(X, y)
    with pytest.raises(ValueError, match="solver"):
        LocalSVC(solver="newton").fit(X, y)
    # A backend without the primal solver: the message names those with it.
    with pytest.raises(ValueError, match="offers it: rust"):
        LocalSVC(solver="primal", backend="scipy").fit(X, y)


def test_n_iter_is_the_global_solve(small):
    X, y, _ = small
    clf = LocalSVC(C=1.0, tol=1e-6).fit(X, y)
    assert clf.n_iter_.shape == (1,) and clf.n_iter_[0] >= 1
    iris = localsvm.datasets.load_iris()
    multi = LocalSVC().fit(iris.X, iris.y)
    assert multi.n_iter_.shape == (3,) and np.all(multi.n_iter_ >= 1)


def test_threshold_drops_negligible_examples(small):
    X, y, Q = small
    clf = LocalSVC(bandwidth=0.05, similarity_threshold=1e-3).fit(X, y)
    details = clf.decision_details(Q)
    sigma = np.exp(-squared_distances(X, Q) / 0.05)
    np.testing.assert_array_equal(details.n_active[:, 0], (sigma >= 1e-3).sum(0))
    exact = LocalSVC(bandwidth=0.05, similarity_threshold=0.0).fit(X, y).decision_details(Q)
    assert np.all(exact.n_active >= details.n_active)


def test_one_class_and_empty_neighbourhoods():
    X = np.array([[0.0], [0.1], [0.2], [5.0], [5.1], [5.2], [5.3]])
    y = np.array(["a", "a", "a", "b", "b", "b", "b"])
    clf = LocalSVC(bandwidth=0.01, similarity_threshold=1e-3).fit(X, y)
    Q = np.array([[0.05], [5.15], [100.0]])
    details = clf.decision_details(Q)
    assert details.status[:, 0].tolist() == [ONLY_POSITIVE, ONLY_NEGATIVE, EMPTY]
    # Nobody within reach of 100.0 (every σ underflows to 0): the majority class.
    assert clf.predict(Q).tolist() == ["a", "b", "b"]
    assert clf.decision_function(Q)[:2].tolist() == [-1.0, 1.0]


def test_multiclass_votes_over_local_pairs():
    iris = localsvm.datasets.load_iris()
    X, y = iris.X / iris.X.max(0), iris.y
    clf = LocalSVC(C=10.0, bandwidth=0.1).fit(X[::2], y[::2])
    details = clf.decision_details(X[1::2])
    assert details.decision.shape == (75, 3)
    assert clf.decision_function(X[1::2]).shape == (75, 3)
    assert clf.score(X[1::2], y[1::2]) > 0.9


def test_chunks_go_through_the_engine(small):
    X, y, Q = small
    seen = []

    class Recording:
        name = "recording-local"

        def map(self, fn, tasks, *, n_jobs):
            seen.append(len(tasks))
            return [fn(t) for t in tasks]

    class Plugin:
        @hookimpl
        def localsvm_register_engines(self, register):
            register(Recording())

    pm = plugins.get_plugin_manager()
    plugin = Plugin()
    pm.register(plugin)
    try:
        with use_engine("recording-local"):
            a = LocalSVC(chunk_size=4).fit(X, y).decision_function(Q)
    finally:
        pm.unregister(plugin)
    # Fit: the local SVMs of the 120 anchors (every training example here) in
    # chunks of 4; predict: one batch, 15 test examples in chunks of 4.
    assert seen == [30, 4]
    b = LocalSVC(n_jobs=2).fit(X, y).decision_function(Q)
    np.testing.assert_array_equal(a, b)


def test_third_party_similarity_by_name(small):
    X, y, Q = small

    class Laplacian:
        name = "laplacian"
        parameters = ("scale",)

        def compute(self, X_train, X_query, *, scale=1.0):
            return np.exp(-np.sqrt(squared_distances(X_train, X_query)) / scale)

    class Plugin:
        @hookimpl
        def localsvm_register_similarities(self, register):
            register(Laplacian())

    pm = plugins.get_plugin_manager()
    plugin = Plugin()
    pm.register(plugin)
    try:
        clf = LocalSVC(similarity="laplacian", similarity_params={"scale": 0.5}).fit(X, y)
        assert clf.decision_function(Q).shape == (15,)
        with pytest.raises(TypeError):
            LocalSVC(similarity="laplacian", similarity_params={"nope": 1}).fit(X, y)
    finally:
        pm.unregister(plugin)


def test_bad_input(small):
    X, y, _ = small
    with pytest.raises(ValueError, match=r"k=500 is larger than the number of training"):
        LocalSVC(similarity="knn", k=500).fit(X, y)
    with pytest.raises(ValueError, match="bandwidth"):
        LocalSVC(bandwidth=0.0).fit(X, y)
    with pytest.raises(ValueError, match="bandwidth"):
        LocalSVC(bandwidth=-1.0).fit(X, y)
    with pytest.raises(ValueError, match="unknown similarity 'nope'"):
        LocalSVC(similarity="nope").fit(X, y)
    with pytest.raises(ValueError, match="similarity_threshold"):
        LocalSVC(similarity_threshold=1.5).fit(X, y)
    with pytest.raises(ValueError, match="greater than one"):
        LocalSVC().fit(X, np.ones_like(y))
    with pytest.raises(ValueError, match="NaN"):
        LocalSVC().fit(np.full_like(X, np.nan), y)


def test_feasible_start_keeps_boxes_and_balance():
    prev = np.array([1.0, 0.5, 2.0, 0.3])
    rows = np.array([0, 1, 2])
    y = np.array([1.0, -1.0, -1.0])
    upper = np.array([0.8, 1.0, 1.0])
    a = feasible_start(prev, rows, y, upper)
    assert a @ y == pytest.approx(0.0, abs=1e-12)
    assert np.all((a >= 0) & (a <= upper))
    # Clipped to [0.8, 0.5, 1.0]; the −1 side has 0.7 too much, taken off its
    # largest α only: the other −1 example keeps its value.
    np.testing.assert_allclose(a, [0.8, 0.5, 0.3])


def test_rust_batch_rejects_bad_arrays():
    from localsvm import _core

    X = np.zeros((3, 2))
    y = np.array([1.0, -1.0, 1.0])
    dual = _core.LocalOptions(1.0)
    with pytest.raises(ValueError, match="sigma must have shape"):
        _core.solve_local(X, y, np.ones((2, 4)), np.ones((2, 4)), options=dual)
    with pytest.raises(ValueError, match="cross must have the shape of sigma"):
        _core.solve_local(X, y, np.ones((2, 3)), np.ones((3, 3)), options=dual)
    with pytest.raises(ValueError, match=r"cross .* is needed unless the primal solver"):
        _core.solve_local(X, y, np.ones((2, 3)), None, options=dual)
    primal = _core.LocalOptions(1.0, primal=_core.LocalPrimal(queries=np.ones((2, 3))))
    with pytest.raises(ValueError, match=r"queries must have shape \(2, 2\)"):
        _core.solve_local(X, y, np.ones((2, 3)), None, options=primal)
    with pytest.raises(ValueError, match="C must be a positive"):
        _core.solve_local(X, y, np.ones((2, 3)), np.ones((2, 3)), options=_core.LocalOptions(-1.0))
    with pytest.raises(ValueError, match="similarities must be finite"):
        _core.solve_local(X, y, np.full((2, 3), np.nan), np.ones((2, 3)), options=dual)


@pytest.mark.parametrize(
    ("backend", "solver"), [("rust", "primal"), ("rust", "dual"), ("scipy", "dual")]
)
def test_a_batch_decides_from_the_queries_features_without_a_cross_kernel(banana, backend, solver):
    """With the linear kernel, a LocalBatch may carry the queries' features
    instead of their kernel rows: every backend and solver gives the same
    decision values."""
    X, y = banana.X_train[:60], np.where(banana.y_train[:60] > 0, 1.0, -1.0)
    Q = banana.X_test[:6]
    sigma = np.exp(-((Q[:, None, :] - X[None, :, :]) ** 2).sum(-1))
    common = dict(X=X, y=y, sigma=sigma, C=10.0, tol=1e-6, solver=solver)
    be = get_backend(backend)
    with_rows = solve_local_batch(be, LocalBatch(cross=Q @ X.T, **common))
    with_features = solve_local_batch(be, LocalBatch(cross=None, queries=Q, **common))
    np.testing.assert_allclose(with_features.decision, with_rows.decision, rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(with_features.status, with_rows.status)
    with pytest.raises(ValueError, match=r"cross .* is needed unless the kernel is linear"):
        solve_local_batch(be, LocalBatch(cross=None, **common))


@pytest.mark.parametrize("backend", ["rust", "scipy"])
def test_iteration_cap_warns(banana, backend):
    """A local problem stopped by max_iter is reported, whichever backend ran it."""
    X, y = banana.X_train[:120], banana.y_train[:120]
    clf = LocalSVC(C=10.0, bandwidth=0.5, max_iter=1, backend=backend).fit(X, y)
    with pytest.warns(ConvergenceWarning, match="local problems stopped"):
        details = clf.decision_details(banana.X_test[:8])
    solved = details.status == SOLVED
    assert solved.any() and not details.converged[solved].all()


def test_no_warning_when_every_local_problem_converges(banana, recwarn):
    clf = LocalSVC(C=10.0, bandwidth=0.5).fit(banana.X_train, banana.y_train)
    details = clf.decision_details(banana.X_test[:40])
    assert details.converged.all()
    assert not [w for w in recwarn if issubclass(w.category, ConvergenceWarning)]


class _PlainBackend:
    """A backend that does not subclass SolverBackend: no ``solve_local``."""

    name = "plain-test"
    priority = -1
    capabilities = localsvm.Capabilities(warm_start=True, subset=True, box_only=True)

    def __init__(self):
        self.calls = 0

    def check(self, problem):
        return None

    def solve(self, problem):
        self.calls += 1
        return localsvm.get_backend("rust").solve(problem)


def test_backend_without_local_batch_gets_one_problem_per_query(small):
    """The generic fallback poses one QPProblem per query and matches the
    Rust batch."""
    X, y, Xt = small
    backend = _PlainBackend()

    class Plugin:
        @hookimpl
        def localsvm_register_backends(self, register):
            register(backend)

    pm = plugins.get_plugin_manager()
    plugin = Plugin()
    pm.register(plugin)
    try:
        ours = LocalSVC(C=5.0, bandwidth=2.0, backend="plain-test", warm_start=False)
        dec = ours.fit(X, y).decision_function(Xt)
    finally:
        pm.unregister(plugin)
    ref = LocalSVC(C=5.0, bandwidth=2.0, warm_start=False, solver="dual")
    ref = ref.fit(X, y).decision_function(Xt)
    assert backend.calls > 0
    assert ours.solver_ == "dual"  # the plain backend has no primal solver
    np.testing.assert_allclose(dec, ref, atol=1e-3)


def test_warns_when_most_test_examples_have_nobody_nearby():
    # Standardized 30-feature data with bandwidth=1.0: every σ is about
    # exp(-60), so nearly every test example's local problem is empty and
    # the model silently becomes the σ-weighted vote (a 1-NN rule).
    import warnings

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 30))
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    Q = rng.normal(size=(100, 30))
    narrow = LocalSVC(bandwidth=1.0).fit(X, y)
    nobody = int((narrow.decision_details(Q).status[:, 0] == EMPTY).sum())
    assert nobody > 50
    for method in (narrow.predict, narrow.decision_function):
        with pytest.warns(UserWarning, match=f"{nobody} of 100 test examples") as record:
            method(Q)
        message = str(record[0].message)
        assert "bandwidth" in message and "similarity_threshold=1e-06" in message
    # The default bandwidth ('scale') reaches the training examples: no warning.
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        LocalSVC().fit(X, y).predict(Q)
