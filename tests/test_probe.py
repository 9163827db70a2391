"""A probe of NuSVC, SVR, NuSVR, OneClassSVM and CellSVC: bad input, extreme
parameters, random small problems (hypothesis), pickling and concurrent fits.
Every call either raises a clean ``ValueError``/``TypeError`` whose message
names the cause, or gives finite outputs of the right shape; a pickled model
predicts exactly as the original, and fits in threads exactly as one alone.
(Ctrl-C during their fits: ``test_interrupt.py``.)"""

from __future__ import annotations

import pickle
import re
import threading
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.exceptions import ConvergenceWarning

from localsvm import SVR, CellSVC, NuSVC, NuSVR, OneClassSVM

#: Estimator, kind ('c' classifier, 'r' regressor, 'o' one-class).
ESTIMATORS = {
    "NuSVC": (NuSVC, "c"),
    "SVR": (SVR, "r"),
    "NuSVR": (NuSVR, "r"),
    "OneClassSVM": (OneClassSVM, "o"),
    "CellSVC": (CellSVC, "c"),
}

#: A refusal names the parameter or the problem at fault.
SPECIFIC = re.compile(
    r"NaN|infinit|overflow|underflow|float64|sample|class|feature|dim|shape|string|"
    r"\b(C|nu|gamma|epsilon|tol|max_iter|kernel)\b|margin variable r|nu is infeasible"
)

RNG = np.random.default_rng(0)
X0 = RNG.normal(size=(40, 3))
Y0 = {"c": (X0[:, 0] + 0.5 * X0[:, 1] > 0).astype(int), "r": X0[:, 0] + 0.1 * RNG.normal(size=40)}


def _fit(name, X, y=None, **params):
    Est, kind = ESTIMATORS[name]
    est = Est(**params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return est.fit(X) if kind == "o" else est.fit(X, y)


def _outputs(est, X):
    out = est.decision_function(X) if hasattr(est, "decision_function") else est.predict(X)
    return np.asarray(out, dtype=np.float64)


def _refused_or_finite(name, X, y, **params):
    """Fit and predict; a refusal must be a ValueError/TypeError naming its cause."""
    try:
        est = _fit(name, X, y, **params)
    except (ValueError, TypeError) as exc:
        assert SPECIFIC.search(str(exc)), (name, params, str(exc))
        return None
    Xq = np.asarray(X, dtype=np.float64)[:5]
    out = _outputs(est, Xq)
    assert out.shape == (Xq.shape[0],), (name, params, out.shape)
    assert np.all(np.isfinite(out)), (name, params, out)
    pred = est.predict(Xq)
    if ESTIMATORS[name][1] == "c":
        assert set(np.unique(pred)) <= set(est.classes_)
    elif ESTIMATORS[name][1] == "o":
        assert set(np.unique(pred)) <= {-1, 1}
    return est


def _y(name, n=40):
    kind = ESTIMATORS[name][1]
    return None if kind == "o" else Y0[kind][:n]


def _bad_inputs():
    X_nan = X0.copy()
    X_nan[0, 0] = np.nan
    X_inf = X0.copy()
    X_inf[0, 0] = np.inf
    return {
        "nan": (X_nan, "NaN"),
        "inf": (X_inf, "infinity"),
        "empty": (X0[:0], "0 sample"),
        "one-dimensional": (X0[:, 0], "2D array"),
        "three-dimensional": (X0[:, :, None], "dim 3"),
        "strings": (np.array([["a", "b", "c"]] * 40), "string"),
        "huge": (X0 * 1e200, "overflows"),
        "tiny": (X0 * 1e-200, "underflows"),
    }


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
@pytest.mark.parametrize("case", sorted(_bad_inputs()))
def test_bad_input_is_refused_with_its_cause(name, case):
    X, words = _bad_inputs()[case]
    y = _y(name)
    if y is not None and case == "empty":
        y = y[:0]
    with pytest.raises(ValueError, match=words):
        _fit(name, X, y)


@pytest.mark.parametrize("name", ["NuSVC", "SVR", "NuSVR", "CellSVC"])
def test_nan_targets_are_refused(name):
    y = _y(name).astype(np.float64)
    y[3] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        _fit(name, X0, y)


@pytest.mark.parametrize("name", ["NuSVC", "CellSVC"])
def test_one_class_and_one_sample_are_refused(name):
    with pytest.raises(ValueError, match="class"):
        _fit(name, X0, np.zeros(40, dtype=int))
    with pytest.raises(ValueError, match="class"):
        _fit(name, X0[:1], _y(name)[:1])


@pytest.mark.parametrize("name", ["SVR", "NuSVR", "OneClassSVM"])
def test_one_sample_gives_a_finite_model(name):
    est = _refused_or_finite(name, X0[:1], None if _y(name) is None else _y(name)[:1])
    assert est is not None


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_object_dtype_numbers_are_read_as_numbers(name):
    ours = _fit(name, X0.astype(object), _y(name))
    plain = _fit(name, X0, _y(name))
    np.testing.assert_array_equal(_outputs(ours, X0), _outputs(plain, X0))


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_predict_with_other_features_is_refused(name):
    est = _fit(name, X0, _y(name))
    with pytest.raises(ValueError, match="features"):
        est.predict(X0[:, :2])


def _extreme_params(name):
    cases = [
        {"tol": 1e-15},
        {"max_iter": 1},
        {"gamma": 1e-300},
        {"gamma": 1e300},
        {"kernel": "linear"},
    ]
    if name in ("NuSVC", "NuSVR", "OneClassSVM"):
        cases += [{"nu": 1e-12}, {"nu": 1e-6}, {"nu": 1.0}]
    if name == "SVR":
        cases += [{"epsilon": 1e10}, {"epsilon": 0.0}]
    if name in ("SVR", "NuSVR", "CellSVC"):
        cases += [{"C": 1e-12}, {"C": 1e12}]
    return cases


@pytest.mark.parametrize(
    ("name", "params"),
    [(name, params) for name in sorted(ESTIMATORS) for params in _extreme_params(name)],
)
def test_extreme_parameters_are_refused_or_finite(name, params):
    _refused_or_finite(name, X0, _y(name), **params)


def test_svr_with_a_tube_wider_than_the_targets_is_constant():
    est = _fit("SVR", X0, Y0["r"], epsilon=1e10)
    assert est.support_.size == 0
    out = est.predict(X0)
    np.testing.assert_allclose(out, out[0])
    assert Y0["r"].min() <= out[0] <= Y0["r"].max()


@pytest.mark.parametrize("scale", [1e-150, 1e150])
@pytest.mark.parametrize("name", ["SVR", "NuSVR"])
def test_huge_and_tiny_targets_scale_the_model(name, scale):
    # With C scaled alike, the regression of y·s is s times that of y.
    # (and epsilon, SVR's tube width, in the targets' units).
    tube = {"epsilon": 0.1 * scale} if name == "SVR" else {}
    base = _fit(name, X0, Y0["r"], gamma=0.5, tol=1e-8, precision="float64")
    try:
        big = _fit(name, X0, Y0["r"] * scale, C=scale, gamma=0.5, tol=1e-8 * scale, **tube)
    except ValueError as exc:
        assert SPECIFIC.search(str(exc)), str(exc)
        return
    np.testing.assert_allclose(big.predict(X0) / scale, base.predict(X0), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_pickle_round_trip_predicts_the_same(name):
    est = _fit(name, X0, _y(name))
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(_outputs(again, X0), _outputs(est, X0))
    np.testing.assert_array_equal(again.predict(X0), est.predict(X0))
    # And it refits.
    _fit(name, X0, _y(name))


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_concurrent_fits_in_threads_equal_a_fit_alone(name):
    want = _outputs(
        _fit(name, X0, _y(name), random_state=0) if name == "CellSVC" else _fit(name, X0, _y(name)),
        X0,
    )
    got = [None] * 4
    errors = []

    def work(i):
        try:
            params = {"random_state": 0} if name == "CellSVC" else {}
            got[i] = _outputs(_fit(name, X0, _y(name), **params), X0)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors and not any(t.is_alive() for t in threads), errors
    for out in got:
        np.testing.assert_array_equal(out, want)


@st.composite
def _problems(draw):
    seed = draw(st.integers(0, 2**16))
    n = draw(st.integers(2, 24))
    d = draw(st.integers(1, 3))
    rng = np.random.default_rng(seed)
    scale = 10.0 ** draw(st.sampled_from([0, 0, 3, -3, 50, -50, 150, -150]))
    X = rng.uniform(-1.0, 1.0, (n, d)) * scale
    if draw(st.booleans()):
        X[1] = X[0]
    if draw(st.booleans()):
        X[:, 0] = draw(st.sampled_from([0.0, 1.0, 1e300]))
    return X, rng


@settings(
    max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
@given(
    problem=_problems(),
    name=st.sampled_from(sorted(ESTIMATORS)),
    kernel=st.sampled_from(["rbf", "linear", "poly", "sigmoid"]),
    gamma=st.sampled_from(["scale", "auto", 1e-6, 1.0, 1e6]),
    nu=st.sampled_from([1e-9, 0.1, 0.5, 0.9, 1.0]),
    C=st.sampled_from([1e-6, 1.0, 1e6]),
)
def test_fuzz_refused_or_finite(problem, name, kernel, gamma, nu, C):
    X, rng = problem
    kind = ESTIMATORS[name][1]
    y = None
    if kind == "c":
        y = rng.integers(0, 2, X.shape[0])
    elif kind == "r":
        y = rng.normal(size=X.shape[0]) * 10.0 ** rng.integers(-3, 4)
    params = {"kernel": kernel, "gamma": gamma, "max_iter": 20_000}
    if name in ("NuSVC", "NuSVR", "OneClassSVM"):
        params["nu"] = nu
    if name in ("SVR", "NuSVR", "CellSVC"):
        params["C"] = C
    if name == "CellSVC":
        params["random_state"] = 0
    _refused_or_finite(name, X, y, **params)
