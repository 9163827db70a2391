"""The third-party plugin in ``plugins/localsvm-clarabel``: that it installs as
an entry point, registers the ``"clarabel"`` backend, and solves the same
problems as the Rust backend.

These tests need the plugin installed (``pip install ./plugins/localsvm-clarabel``);
without it they fail, saying so, rather than skip.
"""

from __future__ import annotations

import importlib.metadata

import numpy as np
import pytest

import localsvm
from localsvm import QPProblem
from localsvm.datasets import load_banana
from localsvm.kernels import make_spec
from localsvm.plugins import DISABLE_AUTOLOAD_ENV, ENTRY_POINT_GROUP, reset_plugin_manager

INSTALL_HINT = (
    "the localsvm-clarabel plugin is not installed; run `pip install ./plugins/localsvm-clarabel` "
    "from the repository root"
)
REL_TOL = 1e-4


@pytest.fixture(autouse=True)
def fresh_plugins(monkeypatch):
    """Entry-point autoloading on, and a plugin manager built for this test."""
    monkeypatch.delenv(DISABLE_AUTOLOAD_ENV, raising=False)
    reset_plugin_manager()
    yield
    reset_plugin_manager()


def require_plugin() -> None:
    """Fail (not skip) with the install command when the backend is missing."""
    if "clarabel" not in localsvm.list_backends():
        pytest.fail(INSTALL_HINT)


def rel_diff(a: float, b: float) -> float:
    return abs(a - b) / max(abs(a), abs(b), 1.0)


def random_problem(n: int, *, seed: int, **kwargs) -> QPProblem:
    """An RBF dual on ``n`` random points with unequal upper bounds."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = np.where(X[:, 0] + 0.7 * rng.normal(size=n) > 0, 1.0, -1.0)
    upper = rng.uniform(0.2, 3.0, size=n)
    return QPProblem(
        X=X, y=y, upper=upper, kernel=make_spec("rbf", 0.5, 0.0, 3, X), tol=1e-7, **kwargs
    )


def feasible_warm_start(problem: QPProblem, seed: int) -> np.ndarray:
    """A start point inside the boxes with ``yᵀα = 0``: random values, the
    heavier class scaled down to balance the lighter one."""
    rng = np.random.default_rng(seed)
    alpha = problem.upper * rng.uniform(0.0, 0.6, size=problem.n)
    pos, neg = problem.y > 0, problem.y < 0
    s_pos, s_neg = alpha[pos].sum(), alpha[neg].sum()
    if s_pos > s_neg:
        alpha[pos] *= s_neg / s_pos
    else:
        alpha[neg] *= s_pos / s_neg
    return alpha


def test_entry_point_is_installed():
    eps = {ep.name: ep for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)}
    assert "clarabel" in eps, INSTALL_HINT
    assert eps["clarabel"].value == "localsvm_clarabel"
    assert eps["clarabel"].dist is not None
    assert eps["clarabel"].dist.name == "localsvm-clarabel"


def test_backend_is_registered():
    require_plugin()
    assert "clarabel" in localsvm.list_backends()
    backend = localsvm.get_backend("clarabel")
    assert backend.name == "clarabel"
    assert backend.priority < localsvm.get_backend("rust").priority
    caps = backend.capabilities
    assert not caps.warm_start and caps.subset and caps.box_only
    # "auto" still picks rust while it is registered.
    assert localsvm.select_backend("auto", random_problem(20, seed=0)).name == "rust"


def test_svc_matches_rust_on_banana():
    require_plugin()
    d = load_banana()
    X, y = d.X_train[:200], d.y_train[:200]
    params = {"C": 1.0, "gamma": 1.0, "tol": 1e-6}
    clf = localsvm.SVC(backend="clarabel", **params).fit(X, y)
    ref = localsvm.SVC(backend="rust", **params).fit(X, y)
    assert clf.backend_ == "clarabel"
    assert clf.fit_status_ == 0
    assert clf.dual_objective_.shape == ref.dual_objective_.shape
    for got, want in zip(clf.dual_objective_, ref.dual_objective_, strict=True):
        assert rel_diff(got, want) < REL_TOL, (got, want)
    agree = np.mean(clf.predict(d.X_test) == ref.predict(d.X_test))
    assert agree >= 0.995, agree


def test_multiclass_svc_matches_rust():
    require_plugin()
    d = localsvm.datasets.load_iris()
    clf = localsvm.SVC(backend="clarabel", tol=1e-6, n_jobs=2).fit(d.X, d.y)
    ref = localsvm.SVC(backend="rust", tol=1e-6).fit(d.X, d.y)
    np.testing.assert_allclose(clf.dual_objective_, ref.dual_objective_, rtol=REL_TOL)
    assert np.mean(clf.predict(d.X) == ref.predict(d.X)) >= 0.99


def test_warm_started_subset_matches_rust():
    require_plugin()
    problem = random_problem(150, seed=1)
    problem.alpha0 = feasible_warm_start(problem, seed=2)
    rng = np.random.default_rng(3)
    problem.active = np.sort(rng.choice(problem.n, size=70, replace=False))
    fixed = np.setdiff1d(np.arange(problem.n), problem.active)

    got = localsvm.get_backend("clarabel").solve(problem)
    want = localsvm.get_backend("rust").solve(problem)

    assert got.backend == "clarabel"
    assert got.converged
    assert rel_diff(got.objective, want.objective) < REL_TOL, (got.objective, want.objective)
    np.testing.assert_array_equal(got.alpha[fixed], problem.alpha0[fixed])
    assert np.all(got.alpha >= 0) and np.all(got.alpha <= problem.upper)
    assert abs(problem.y @ got.alpha) < 1e-8 * problem.upper.sum()
    assert abs(got.rho - want.rho) < 1e-3


def test_box_only_matches_rust():
    require_plugin()
    problem = random_problem(150, seed=4, equality=False)
    problem.p = -np.random.default_rng(5).uniform(0.5, 1.5, size=problem.n)
    got = localsvm.get_backend("clarabel").solve(problem)
    want = localsvm.get_backend("rust").solve(problem)
    assert got.converged
    assert got.rho == 0.0
    assert rel_diff(got.objective, want.objective) < REL_TOL, (got.objective, want.objective)
    np.testing.assert_allclose(got.alpha, want.alpha, atol=1e-3)


def test_nothing_to_optimise():
    require_plugin()
    problem = random_problem(30, seed=6)
    problem.alpha0 = feasible_warm_start(problem, seed=7)
    problem.active = np.array([], dtype=np.intp)
    got = localsvm.get_backend("clarabel").solve(problem)
    assert got.converged and got.n_iter == 0 and got.objective == 0.0
    np.testing.assert_array_equal(got.alpha, problem.alpha0)


def test_rejects_infeasible_warm_start_and_large_problems():
    require_plugin()
    backend = localsvm.get_backend("clarabel")
    problem = random_problem(30, seed=8)
    problem.alpha0 = np.where(problem.y > 0, problem.upper, 0.0)
    with pytest.raises(ValueError, match="equality constraint"):
        backend.solve(problem)
    big = random_problem(backend.capabilities.max_samples + 1, seed=9)
    assert "at most" in backend.check(big)
    with pytest.raises(ValueError, match="cannot solve"):
        localsvm.select_backend("clarabel", big)


def test_one_class_and_nu_duals_match_rust():
    """The one-class dual (yᵀα held at its start) and the ν-duals (each
    label set's sum held), through the estimators: the objective, ρ and the
    ν-duals' r as the Rust backend's."""
    require_plugin()
    caps = localsvm.get_backend("clarabel").capabilities
    assert caps.equality_start and caps.equality_per_label
    rng = np.random.default_rng(10)
    X = rng.normal(size=(120, 3))
    y = X[:, 0] - 0.5 * X[:, 1] + 0.1 * rng.normal(size=120)
    labels = np.where(X[:, 0] + 0.5 * rng.normal(size=120) > 0, 1, -1)
    cases = [
        (localsvm.OneClassSVM, {"nu": 0.2, "gamma": 0.5}, None),
        (localsvm.NuSVR, {"nu": 0.3, "C": 2.0, "gamma": 0.5}, y),
        (localsvm.NuSVC, {"nu": 0.4, "gamma": 0.5}, labels),
    ]
    for cls, params, target in cases:
        got = cls(backend="clarabel", tol=1e-6, **params).fit(X, target)
        want = cls(backend="rust", tol=1e-6, precision="float64", **params).fit(X, target)
        assert got.backend_ == "clarabel" and got.fit_status_ == 0, cls.__name__
        assert rel_diff(np.sum(got.dual_objective_), np.sum(want.dual_objective_)) < REL_TOL
        np.testing.assert_allclose(got.intercept_, want.intercept_, atol=1e-3)
        if cls is localsvm.NuSVR:
            assert abs(got.epsilon_ - want.epsilon_) < 1e-3
            scale = np.abs(want.predict(X)).max()
            np.testing.assert_allclose(got.predict(X), want.predict(X), atol=1e-3 * scale)
        else:
            # Fresh points away from the boundary (free support vectors lie
            # on it, and an interior-point solution only near it).
            X_test = rng.normal(size=(200, 3))
            dec = want.decision_function(X_test)
            sure = np.abs(dec) > 1e-3 * np.abs(dec).max()
            got_labels, want_labels = got.predict(X_test), want.predict(X_test)
            np.testing.assert_array_equal(got_labels[sure], want_labels[sure])
