"""Benchmarks: ``localsvm.SVC`` on every registered backend against scikit-learn's ``SVC``.

Each data set × implementation gets a ``fit`` and a ``predict`` benchmark. An
implementation is a localsvm backend name (every backend registered when the
module is collected, plugins included, that supports the RBF kernel and
accepts the data set's size per ``capabilities.max_samples``) or
``"sklearn"`` (``sklearn.svm.SVC``, LIBSVM). All use the same ``C``,
``gamma``, ``tol=1e-3`` and ``cache_size=200``. Benchmarks are grouped per data
set (``fit <data set>`` / ``predict <data set>``) so the implementations sit
side by side in one table.

``benchmark.extra_info`` records the test accuracy, the number of support
vectors, the dual objective (½αᵀQα − eᵀα; summed over the one-vs-one
problems for more than two classes) and the backend that solved the problem
(``"libsvm"`` for scikit-learn); they are saved with ``--benchmark-autosave``
/ ``--benchmark-json``.

The benchmarks double as a smoke test: with benchmarks disabled (the default
``addopts``) every body runs once and the assertions still hold each
implementation to scikit-learn's accuracy (within one point) and dual
objective. Full-size data sets, and dense reference backends on more than
:data:`BOUNDED_QUICK_SAMPLES` points, are marked ``slow``. See README.md in
this folder for the commands.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import pytest
from sklearn.svm import SVC as SklearnSVC

import localsvm
from localsvm._objective import libsvm_dual_objectives
from localsvm.datasets import load_a9a, load_banana, load_ijcnn1, load_usps
from localsvm.kernels import KernelSpec, resolve_gamma

SKLEARN = "sklearn"
"""The implementation id of scikit-learn's ``SVC``."""

KERNEL = "rbf"
COMMON_PARAMS: dict[str, Any] = {"kernel": KERNEL, "tol": 1e-3, "cache_size": 200}
"""Solver settings shared by every implementation."""

SEED = 0
"""Seed of every subsample."""

ACCURACY_TOLERANCE = 0.01
"""Largest allowed gap to scikit-learn's test accuracy (one point)."""

OBJECTIVE_RTOL = 1e-4
"""Relative tolerance on the dual objective of each binary problem against
scikit-learn's (both stop at the same ``tol``; solutions agree to ~1e-7)."""

BOUNDED_QUICK_SAMPLES = 200
"""A backend that declares a ``max_samples`` is a dense reference solver (the
scipy one: SLSQP on the n × n dual; a few seconds for 200 points, over a
minute for 400). In the default run such backends only get data sets of at
most this many training points; larger ones are marked ``slow``."""

BOUNDED_FIT_ROUNDS = 3
"""Fit rounds for dense reference backends, whatever the data set asks."""


class Data(NamedTuple):
    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray


@dataclass(frozen=True)
class Case:
    """A benchmark data set: how to load it and how to train on it."""

    name: str
    load: Callable[[], Data]
    n_train: int  # declared so backends can be chosen at collection time; checked on load
    params: dict[str, Any]
    min_accuracy: float  # sanity floor for every implementation
    rounds: int  # timed rounds per fit / predict benchmark
    slow: bool = False


def _subsample(n: int, k: int, rng: np.random.Generator) -> np.ndarray:
    return np.sort(rng.choice(n, size=k, replace=False))


def _banana() -> Data:
    b = load_banana(0)
    return Data(b.X_train, b.y_train, b.X_test, b.y_test)


def _banana200() -> Data:
    d = _banana()
    tr = _subsample(d.y_train.shape[0], 200, np.random.default_rng(SEED))
    return Data(d.X_train[tr], d.y_train[tr], d.X_test, d.y_test)


def _usps() -> Data:
    u = load_usps()
    return Data(u.X_train, u.y_train, u.X_test, u.y_test)


def _usps_3v5() -> Data:
    d = _usps()
    tr = np.isin(d.y_train, (3, 5))
    te = np.isin(d.y_test, (3, 5))
    return Data(d.X_train[tr], d.y_train[tr], d.X_test[te], d.y_test[te])


def _ijcnn1() -> Data:
    j = load_ijcnn1()
    return Data(j.X_train, j.y_train, j.X_test, j.y_test)


def _ijcnn1_5k() -> Data:
    d = _ijcnn1()
    rng = np.random.default_rng(SEED)
    tr = _subsample(d.y_train.shape[0], 5000, rng)
    te = _subsample(d.y_test.shape[0], 5000, rng)
    return Data(d.X_train[tr], d.y_train[tr], d.X_test[te], d.y_test[te])


def _a9a() -> Data:
    a = load_a9a()
    return Data(a.X_train, a.y_train, a.X_test, a.y_test)


_BANANA_PARAMS = {"C": 1.0, "gamma": 1.0}
CASES: dict[str, Case] = {
    c.name: c
    for c in (
        # Default run: small data, a second or so per implementation.
        Case("banana200", _banana200, 200, _BANANA_PARAMS, 0.80, rounds=10),
        Case("banana", _banana, 400, _BANANA_PARAMS, 0.85, rounds=10),
        Case("usps-3v5", _usps_3v5, 1214, {"C": 10.0, "gamma": "scale"}, 0.90, rounds=10),
        Case("ijcnn1-5k", _ijcnn1_5k, 5000, {"C": 1.0, "gamma": "scale"}, 0.92, rounds=5),
        # Full size (slow): scikit-learn takes ~20 s to fit ijcnn1 and ~30 s to predict.
        Case("usps", _usps, 7291, {"C": 10.0, "gamma": "scale"}, 0.93, rounds=3, slow=True),
        Case("ijcnn1", _ijcnn1, 49990, {"C": 1.0, "gamma": "scale"}, 0.95, rounds=3, slow=True),
        Case("a9a", _a9a, 32561, {"C": 1.0, "gamma": "scale"}, 0.80, rounds=3, slow=True),
    )
}


@functools.cache
def load(name: str) -> Data:
    """The arrays of data set ``name``, loaded once per session."""
    case = CASES[name]
    data = case.load()
    assert data.X_train.shape[0] == case.n_train, f"{name}: n_train is stale"
    return data


# --------------------------------------------------------------- implementations


def _max_samples(impl: str) -> int | None:
    return None if impl == SKLEARN else localsvm.get_backend(impl).capabilities.max_samples


def implementations(case: Case) -> list[str]:
    """``"sklearn"`` (first: it is the reference the others are checked
    against) and every registered backend that accepts ``case``."""
    out = [SKLEARN]
    for name in localsvm.list_backends():
        caps = localsvm.get_backend(name).capabilities
        fits = caps.max_samples is None or case.n_train <= caps.max_samples
        if KERNEL in caps.kernels and fits:
            out.append(name)
    return out


def _is_bounded(impl: str) -> bool:
    return _max_samples(impl) is not None


def _params() -> list:
    out = []
    for case in CASES.values():
        for impl in implementations(case):
            slow = case.slow or (_is_bounded(impl) and case.n_train > BOUNDED_QUICK_SAMPLES)
            marks = [pytest.mark.slow] if slow else []
            out.append(pytest.param(case.name, impl, id=f"{case.name}-{impl}", marks=marks))
    return out


PARAMS = _params()


def make_estimator(case: Case, impl: str):
    """An unfitted estimator of implementation ``impl`` for ``case``."""
    if impl == SKLEARN:
        return SklearnSVC(**case.params, **COMMON_PARAMS)
    return localsvm.SVC(backend=impl, **case.params, **COMMON_PARAMS)


_FITTED: dict[tuple[str, str], Any] = {}
_OBJECTIVES: dict[tuple[str, str], np.ndarray] = {}
_SUMMARIES: dict[tuple[str, str], dict[str, Any]] = {}


def store_fitted(name: str, impl: str, model) -> None:
    """Cache ``model`` as the fitted model of ``impl`` on ``name``."""
    key = (name, impl)
    _FITTED[key] = model
    _OBJECTIVES.pop(key, None)
    _SUMMARIES.pop(key, None)


def fitted(name: str, impl: str):
    """The fitted model of ``impl`` on data set ``name``: the one the fit
    benchmark left behind, or fitted now (once per session)."""
    if (name, impl) not in _FITTED:
        data = load(name)
        store_fitted(name, impl, make_estimator(CASES[name], impl).fit(data.X_train, data.y_train))
    return _FITTED[(name, impl)]


# ------------------------------------------------------------ dual objective


def dual_objectives(name: str, impl: str) -> np.ndarray:
    """Dual objective of each binary problem of the cached model of ``impl``."""
    key = (name, impl)
    if key not in _OBJECTIVES:
        model = fitted(name, impl)
        if impl == SKLEARN:
            gamma = resolve_gamma(model.gamma, load(name).X_train)
            values = libsvm_dual_objectives(model, KernelSpec(model.kernel, gamma=gamma))
        else:
            values = np.asarray(model.dual_objective_, dtype=np.float64)
        _OBJECTIVES[key] = values
    return _OBJECTIVES[key]


# ------------------------------------------------------------------ checks


def summarize(name: str, impl: str, y_pred: np.ndarray) -> dict[str, Any]:
    """What goes into ``benchmark.extra_info``, for the cached model of
    ``impl`` on ``name`` and its predictions ``y_pred`` on the test set; also
    cached, as the reference when ``impl`` is scikit-learn."""
    data = load(name)
    model = fitted(name, impl)
    objectives = dual_objectives(name, impl)
    info: dict[str, Any] = {
        "implementation": impl,
        "backend": "libsvm" if impl == SKLEARN else model.backend_,
        "accuracy": float(np.mean(y_pred == data.y_test)),
        "n_support": len(model.support_),
        "dual_objective": float(objectives.sum()),
        "n_train": int(data.X_train.shape[0]),
        "n_test": int(data.X_test.shape[0]),
    }
    if objectives.size > 1:
        info["dual_objectives"] = [float(v) for v in objectives]
    _SUMMARIES[(name, impl)] = info
    return info


def summary(name: str, impl: str) -> dict[str, Any]:
    """The cached summary of ``impl`` on ``name``, predicting the test set
    (untimed) if no benchmark has done so yet."""
    if (name, impl) not in _SUMMARIES:
        summarize(name, impl, fitted(name, impl).predict(load(name).X_test))
    return _SUMMARIES[(name, impl)]


def check(name: str, impl: str, info: dict[str, Any]) -> None:
    """Hold ``impl`` to the data set's accuracy floor and to scikit-learn."""
    case = CASES[name]
    assert info["accuracy"] >= case.min_accuracy, info
    if impl == SKLEARN:
        return
    assert info["backend"] == impl
    ref = summary(name, SKLEARN)
    assert abs(info["accuracy"] - ref["accuracy"]) <= ACCURACY_TOLERANCE, (info, ref)
    np.testing.assert_allclose(
        info.get("dual_objectives", info["dual_objective"]),
        ref.get("dual_objectives", ref["dual_objective"]),
        rtol=OBJECTIVE_RTOL,
        err_msg=f"dual objective of {impl} on {name} differs from scikit-learn's",
    )


# ------------------------------------------------------------------- tests


def test_every_case_has_a_localsvm_backend():
    """A backend that fails to register must not silently shrink the suite."""
    assert "rust" in localsvm.list_backends()
    for case in CASES.values():
        assert len(implementations(case)) >= 2, case.name


@pytest.mark.parametrize(("name", "impl"), PARAMS)
def test_fit(benchmark, name: str, impl: str):
    case = CASES[name]
    data = load(name)
    rounds = min(case.rounds, BOUNDED_FIT_ROUNDS) if _is_bounded(impl) else case.rounds

    def setup():
        return (make_estimator(case, impl), data.X_train, data.y_train), {}

    benchmark.group = f"fit {name}"
    model = benchmark.pedantic(
        lambda est, X, y: est.fit(X, y), setup=setup, rounds=rounds, iterations=1
    )
    store_fitted(name, impl, model)
    info = summary(name, impl)
    benchmark.extra_info.update(info)
    check(name, impl, info)


@pytest.mark.parametrize(("name", "impl"), PARAMS)
def test_predict(benchmark, name: str, impl: str):
    case = CASES[name]
    data = load(name)
    model = fitted(name, impl)

    benchmark.group = f"predict {name}"
    y_pred = benchmark.pedantic(model.predict, args=(data.X_test,), rounds=case.rounds)
    info = summarize(name, impl, y_pred)
    benchmark.extra_info.update(info)
    check(name, impl, info)
