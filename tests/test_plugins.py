"""The plugin system: hook specifications, lazy loading, registries, and
third-party backends, strategies and engines registered and used by name."""

from __future__ import annotations

import inspect
import types

import numpy as np
import pytest

import localsvm
from localsvm import hookimpl, hookspecs, plugins
from localsvm.backends import QPProblem
from localsvm.clustering import ClusteringResult
from localsvm.parallel import run_tasks, use_engine


@pytest.fixture
def plugin():
    """Register a throwaway plugin module; unregister it afterwards."""
    pm = plugins.get_plugin_manager()
    registered = []

    def add(**hooks):
        mod = types.ModuleType(f"test_plugin_{len(registered)}")
        for name, fn in hooks.items():
            setattr(mod, name, hookimpl(fn))
        pm.register(mod)
        registered.append(mod)
        return mod

    yield add
    for mod in registered:
        pm.unregister(mod)


def test_every_hook_is_named_documented_and_implemented():
    pm = plugins.get_plugin_manager()
    specs = [
        n for n, f in inspect.getmembers(hookspecs, inspect.isfunction) if n.startswith("localsvm_")
    ]
    assert set(specs) == {
        "localsvm_register_backends",
        "localsvm_register_similarities",
        "localsvm_register_clusterings",
        "localsvm_register_engines",
    }
    for name in specs:
        assert inspect.getdoc(getattr(hookspecs, name)), f"{name} lacks a docstring"
        assert pm.hook.__dict__[name].get_hookimpls(), f"no built-in implements {name}"


def test_builtins_are_registered():
    assert {"rust", "scipy"} <= set(localsvm.list_backends())
    assert {"gaussian", "knn"} <= set(localsvm.list_similarities())
    assert "kmeans" in localsvm.list_clusterings()
    assert {"serial", "threads"} <= set(localsvm.list_engines())


def test_plugin_manager_is_a_singleton():
    assert plugins.get_plugin_manager() is plugins.get_plugin_manager()


def test_autoload_can_be_disabled(monkeypatch):
    monkeypatch.setenv(plugins.DISABLE_AUTOLOAD_ENV, "1")
    plugins.reset_plugin_manager()
    try:
        pm = plugins.get_plugin_manager()
        names = {pm.get_name(p) for p in pm.get_plugins()}
        assert names == set(plugins.DEFAULT_PLUGINS)
        assert "rust" in localsvm.list_backends()
    finally:
        monkeypatch.delenv(plugins.DISABLE_AUTOLOAD_ENV)
        plugins.reset_plugin_manager()


def test_misspelt_hook_fails_loudly():
    pm = plugins.get_plugin_manager()
    mod = types.ModuleType("typo_plugin")
    mod.localsvm_register_backend = hookimpl(lambda register: None)  # missing "s"
    pm.register(mod)
    try:
        with pytest.raises(Exception, match="unknown hook"):
            pm.check_pending()
    finally:
        pm.unregister(mod)


class RecordingBackend(localsvm.SolverBackend):
    """A third-party backend that delegates to Rust and records its calls."""

    name = "recording"
    priority = -1
    capabilities = localsvm.Capabilities(warm_start=True, subset=True, box_only=True)

    def __init__(self):
        self.calls = 0

    def solve(self, problem: QPProblem):
        self.calls += 1
        sol = localsvm.get_backend("rust").solve(problem)
        sol.backend = self.name
        return sol


def test_third_party_backend_is_used_by_name(plugin, banana):
    backend = RecordingBackend()
    plugin(localsvm_register_backends=lambda register: register(backend))
    assert "recording" in localsvm.list_backends()
    clf = localsvm.SVC(backend="recording").fit(banana.X_train, banana.y_train)
    assert clf.backend_ == "recording"
    assert backend.calls == 1
    # "auto" still prefers the higher-priority Rust backend.
    assert localsvm.SVC().fit(banana.X_train, banana.y_train).backend_ == "rust"


def test_duplicate_names_are_an_error(plugin):
    plugin(localsvm_register_backends=lambda register: register(RecordingBackend()))
    plugin(localsvm_register_backends=lambda register: register(RecordingBackend()))
    with pytest.raises(plugins.PluginError, match="two plugins register a backend named"):
        localsvm.list_backends()


def test_nameless_registration_is_an_error(plugin):
    plugin(localsvm_register_similarities=lambda register: register(object()))
    with pytest.raises(plugins.PluginError, match="non-empty string 'name'"):
        localsvm.list_similarities()


class InverseDistance:
    """A third-party similarity: 1 / (1 + ‖x − z‖)."""

    name = "inverse-distance"
    parameters = ()

    def compute(self, X_train, X_query):
        d = np.sqrt(((X_train[:, None, :] - X_query[None, :, :]) ** 2).sum(-1))
        return 1.0 / (1.0 + d)


class FirstHalf:
    """A third-party clustering that splits rows in two halves."""

    name = "halves"

    def cluster(self, profiles, y, n_clusters, *, random_state=None):
        labels = (np.arange(len(profiles)) >= len(profiles) // 2).astype(np.intp)
        centers = np.stack([profiles[labels == k].mean(0) for k in (0, 1)])
        return ClusteringResult(labels=labels, centers=centers, n_iter=1, objective=0.0)


def test_third_party_strategies_are_used_by_name(plugin):
    plugin(
        localsvm_register_similarities=lambda register: register(InverseDistance()),
        localsvm_register_clusterings=lambda register: register(FirstHalf()),
    )
    X = np.array([[0.0], [3.0]])
    sim = localsvm.get_similarity("inverse-distance").compute(X, np.array([[0.0]]))
    np.testing.assert_allclose(sim.ravel(), [1.0, 0.25])
    res = localsvm.get_clustering("halves").cluster(np.arange(6.0)[:, None], None, 2)
    np.testing.assert_array_equal(res.labels, [0, 0, 0, 1, 1, 1])


def test_unknown_strategy_lists_names():
    with pytest.raises(ValueError, match=r"unknown similarity 'nope'.*'gaussian'"):
        localsvm.get_similarity("nope")
    with pytest.raises(ValueError, match=r"unknown clustering 'nope'.*'kmeans'"):
        localsvm.get_clustering("nope")


class ReversingEngine:
    """A third-party engine that runs tasks in reverse and records them."""

    name = "reversing"

    def __init__(self):
        self.seen = []

    def map(self, fn, tasks, *, n_jobs):
        self.seen.extend(tasks)
        return [fn(t) for t in reversed(tasks)][::-1]


def test_third_party_engine_takes_the_svc_problems(plugin):
    engine = ReversingEngine()
    plugin(localsvm_register_engines=lambda register: register(engine))
    assert run_tasks(lambda t: t + 1, [1, 2, 3], engine="reversing") == [2, 3, 4]
    iris = localsvm.datasets.load_iris()
    with use_engine("reversing"):
        clf = localsvm.SVC(n_jobs=2).fit(iris.X, iris.y)
    # The class pairs went through the engine in chunks (an engine without
    # ``accepts_shared`` gets the shared data bound into the function): each
    # task a list of pairs' rows and ±1 labels, every pair in one of them.
    pairs = [pair for chunk in engine.seen[3:] for pair in chunk]
    assert len(pairs) == 3
    seen = []
    for rows, labels in pairs:
        seen.append(set(np.unique(iris.y[rows]).tolist()))
        assert set(np.unique(labels).tolist()) == {-1.0, 1.0}
    assert sorted(map(sorted, seen)) == [[0, 1], [0, 2], [1, 2]]
    assert clf.score(iris.X, iris.y) > 0.9


class SharingEngine(ReversingEngine):
    """A third-party engine that takes the shared data itself."""

    name = "sharing"
    accepts_shared = True

    def map(self, fn, tasks, *, n_jobs, shared=None):
        self.shared = shared
        return [fn(t, shared) for t in tasks]


def test_engine_that_accepts_shared_data_gets_it(plugin):
    engine = SharingEngine()
    plugin(localsvm_register_engines=lambda register: register(engine))
    assert run_tasks(lambda t, s: t + s, [1, 2], shared=10, engine="sharing") == [11, 12]
    assert engine.shared == 10
    iris = localsvm.datasets.load_iris()
    with use_engine("sharing"):
        localsvm.SVC(n_jobs=2).fit(iris.X, iris.y)
    X, upper, _settings, backend = engine.shared
    assert X.shape == iris.X.shape and upper.shape == (150,) and backend.name == "rust"


def test_registry_follows_plugins_that_come_and_go():
    # A plugin unregistered and freed may leave its id to the next one: the
    # registry must still see the new plugin, not serve the old cache.
    pm = plugins.get_plugin_manager()
    for i in range(20):
        mod = types.ModuleType(f"short_lived_{i}")
        engine = ReversingEngine()
        engine.name = f"short-lived-{i}"
        mod.localsvm_register_engines = hookimpl(lambda register, e=engine: register(e))
        pm.register(mod)
        try:
            assert f"short-lived-{i}" in localsvm.list_engines()
        finally:
            pm.unregister(mod)
        # No query between the unregistration and the next registration: the
        # cache still holds the old set when the new plugin arrives.
        del mod, engine
    assert not any(name.startswith("short-lived") for name in localsvm.list_engines())


class BrokenBackend(localsvm.SolverBackend):
    """A third-party backend whose ``solve`` breaks the contract: it returns
    ``answer(rust_solution)`` instead of the solution."""

    priority = -1
    capabilities = localsvm.Capabilities(
        warm_start=True,
        subset=True,
        box_only=True,
        equality_per_label=True,
        equality_start=True,
    )

    def __init__(self, name, answer):
        self.name = name
        self.answer = answer

    def solve(self, problem: QPProblem):
        return self.answer(localsvm.get_backend("rust").solve(problem))


def _short_alpha(sol):
    sol.alpha = sol.alpha[:-1]
    return sol


def _text_rho(sol):
    sol.rho = "0.5"
    return sol


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (lambda sol: None, r"backend 'broken' returned NoneType from solve\(\)"),
        (lambda sol: (sol.alpha, sol.rho), r"backend 'broken' returned tuple from solve\(\)"),
        (_short_alpha, r"backend 'broken' returned alpha of shape \(\d+,\); expected \(\d+,\)"),
        (_text_rho, r"backend 'broken' returned rho of type str"),
    ],
)
@pytest.mark.parametrize("make", ["SVC", "NuSVC", "SVR", "OneClassSVM", "LocalSVC"])
def test_a_backend_that_breaks_the_solve_contract_is_named(plugin, answer, message, make):
    plugin(localsvm_register_backends=lambda register: register(BrokenBackend("broken", answer)))
    X = np.random.default_rng(0).normal(size=(30, 2))
    y = (X[:, 0] > 0).astype(int)
    est = getattr(localsvm, make)(backend="broken")
    with pytest.raises(TypeError, match=message):
        est.fit(X) if make == "OneClassSVM" else est.fit(X, y)
