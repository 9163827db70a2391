"""Drop-in compatibility with scikit-learn's SVC: its whole signature,
``probability``, ``verbose``, callable kernels, and typical scikit-learn user
code run unchanged on both estimators."""

from __future__ import annotations

import inspect
import pickle
import warnings

import numpy as np
import pytest
from sklearn.calibration import CalibratedClassifierCV
from sklearn.datasets import make_classification
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GridSearchCV, StratifiedKFold, cross_val_score
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC as SklearnSVC

from localsvm import (
    SVC,
    ClusterSVC,
    FLSAClassifier,
    FLSAClassifierCV,
    IncrementalSVC,
    LocalSVC,
    ProfileSVC,
    RFLSAClassifier,
)
from localsvm.datasets import load_iris

# Probabilities come from a 5-fold cross-validation whose folds are drawn
# differently from LIBSVM's, so they agree with scikit-learn's to a
# tolerance, not exactly (measured: at most 0.03 apart on iris and banana).
PROBA_ATOL = 0.05
PROBA_MEAN_ATOL = 0.01


@pytest.fixture(scope="module")
def iris():
    d = load_iris()
    return StandardScaler().fit_transform(d.X), d.y


def fit_quietly(est, X, y):
    """Fit, ignoring the FutureWarning an explicit ``probability`` gives."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return est.fit(X, y)


def small_problem():
    return make_classification(
        n_samples=60, n_features=3, n_informative=2, n_redundant=0, random_state=0
    )


def linear_kernel(A, B):
    return A @ B.T


# ----------------------------------------------------------------- signature


def test_every_sklearn_parameter_with_the_same_default():
    theirs = inspect.signature(SklearnSVC).parameters
    ours = inspect.signature(SVC).parameters
    missing = sorted(set(theirs) - set(ours))
    assert not missing, f"parameters of sklearn's SVC that localsvm.SVC lacks: {missing}"
    for name, param in theirs.items():
        assert ours[name].default == param.default, name
        assert ours[name].kind is inspect.Parameter.KEYWORD_ONLY, name


def test_verbose_is_accepted_and_validated(iris):
    X, y = iris
    ref = SVC().fit(X, y)
    for verbose in (True, 1, 2, False):
        clf = SVC(verbose=verbose).fit(X, y)
        np.testing.assert_array_equal(clf.decision_function(X), ref.decision_function(X))
    with pytest.raises(ValueError, match="'verbose' parameter"):
        SVC(verbose="loud").fit(X, y)


# --------------------------------------------------------------- probability


@pytest.mark.parametrize("probability", [True, False])
def test_explicit_probability_warns_as_sklearn(iris, probability):
    X, y = iris
    with pytest.warns(FutureWarning, match="`probability` parameter") as ours:
        SVC(probability=probability).fit(X, y)
    with pytest.warns(FutureWarning, match="`probability` parameter") as theirs:
        SklearnSVC(probability=probability).fit(X, y)
    assert "CalibratedClassifierCV(SVC(), ensemble=False)" in str(ours[0].message)
    assert "CalibratedClassifierCV(SVC(), ensemble=False)" in str(theirs[0].message)


def test_default_probability_does_not_warn(iris):
    X, y = iris
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        SVC().fit(X, y)


@pytest.mark.parametrize("probability", ["deprecated", False])
def test_predict_proba_unavailable_as_sklearn(iris, probability):
    X, y = iris
    ours = fit_quietly(SVC(probability=probability), X, y)
    theirs = fit_quietly(SklearnSVC(probability=probability), X, y)
    assert not hasattr(ours, "predict_proba") and not hasattr(theirs, "predict_proba")
    for method in ("predict_proba", "predict_log_proba"):
        with pytest.raises(AttributeError) as ours_err:
            getattr(ours, method)(X)
        with pytest.raises(AttributeError) as theirs_err:
            getattr(theirs, method)(X)
        assert str(ours_err.value) == str(theirs_err.value)
        assert str(ours_err.value.__cause__) == str(theirs_err.value.__cause__)
        assert "probability=False" in str(ours_err.value.__cause__)


def test_predict_proba_after_enabling_without_refit(iris):
    X, y = iris
    for cls in (SVC, SklearnSVC):
        clf = cls().fit(X, y).set_params(probability=True)
        with pytest.raises(NotFittedError, match="fitted with probability=False"):
            clf.predict_proba(X)


@pytest.mark.parametrize("dataset", ["iris", "banana"])
def test_probabilities_match_sklearn(request, iris, dataset):
    if dataset == "iris":
        X, y = iris
        X_test = X
    else:
        banana = request.getfixturevalue("banana")
        X, y, X_test = banana.X_train, banana.y_train, banana.X_test
    ours = fit_quietly(SVC(probability=True, random_state=0), X, y)
    theirs = fit_quietly(SklearnSVC(probability=True, random_state=0), X, y)
    p, q = ours.predict_proba(X_test), theirs.predict_proba(X_test)
    assert p.shape == (X_test.shape[0], ours.classes_.size)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-12)
    assert np.all((p >= 0) & (p <= 1))
    assert np.abs(p - q).max() < PROBA_ATOL
    assert np.abs(p - q).mean() < PROBA_MEAN_ATOL
    # The sigmoids themselves are close to LIBSVM's.
    np.testing.assert_allclose(ours.probA_, theirs._probA, rtol=0.2, atol=0.1)
    # argmax agrees with predict as often as scikit-learn's does (not always:
    # the probabilities come from a separate, cross-validated model).
    agree = np.mean(ours.classes_[p.argmax(axis=1)] == ours.predict(X_test))
    agree_sk = np.mean(theirs.classes_[q.argmax(axis=1)] == theirs.predict(X_test))
    assert agree >= min(agree_sk, 0.99) - 0.01
    np.testing.assert_allclose(ours.predict_log_proba(X_test), np.log(p))


def test_probabilities_deterministic_with_random_state(iris):
    X, y = iris
    a = fit_quietly(SVC(probability=True, random_state=7), X, y).predict_proba(X)
    b = fit_quietly(SVC(probability=True, random_state=7), X, y).predict_proba(X)
    c = fit_quietly(SVC(probability=True, random_state=8), X, y).predict_proba(X)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)  # the folds, hence the sigmoids, differ


def test_probability_pickles(iris):
    X, y = iris
    clf = fit_quietly(SVC(probability=True, random_state=0), X, y)
    back = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(back.predict_proba(X), clf.predict_proba(X))


def test_probability_follows_the_decision_values():
    # Two classes: P(classes_[1]) rises with the decision value.
    X, y = make_classification(n_samples=200, n_features=4, random_state=1)
    clf = fit_quietly(SVC(probability=True, random_state=0), X, y)
    dec = clf.decision_function(X)
    p1 = clf.predict_proba(X)[:, 1]
    order = np.argsort(dec)
    assert np.all(np.diff(p1[order]) >= -1e-12)
    assert p1[order[0]] < 0.5 < p1[order[-1]]


@pytest.mark.parametrize(
    "params",
    [{"multiclass": "ovr"}, {"kernel": "precomputed"}, {"kernel": linear_kernel}],
    ids=["ovr", "precomputed", "callable"],
)
def test_probability_with_other_settings(iris, params):
    X, y = iris
    X_in = X @ X.T if params.get("kernel") == "precomputed" else X
    clf = fit_quietly(SVC(probability=True, random_state=0, **params), X_in, y)
    p = clf.predict_proba(X_in)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-12)
    assert np.mean(clf.classes_[p.argmax(axis=1)] == y) > 0.85


# ---------------------------------------------------------- callable kernels


def test_callable_kernel_matches_sklearn(iris):
    X, y = iris
    ours = SVC(kernel=linear_kernel, C=0.5).fit(X, y)
    theirs = SklearnSVC(kernel=linear_kernel, C=0.5).fit(X, y)
    np.testing.assert_array_equal(ours.support_, theirs.support_)
    np.testing.assert_allclose(ours.dual_coef_, theirs.dual_coef_, atol=1e-3)
    np.testing.assert_allclose(ours.decision_function(X), theirs.decision_function(X), atol=1e-3)
    np.testing.assert_array_equal(ours.predict(X), theirs.predict(X))
    # The same model as the named kernel it computes.
    named = SVC(kernel="linear", C=0.5).fit(X, y)
    np.testing.assert_allclose(ours.decision_function(X), named.decision_function(X), atol=1e-6)
    np.testing.assert_array_equal(ours.support_vectors_, X[ours.support_])


def test_callable_kernel_calls():
    X, y = small_problem()
    calls = []

    def kernel(A, B):
        calls.append((A.shape, B.shape))
        return np.exp(-0.5 * ((A[:, None, :] - B[None, :, :]) ** 2).sum(axis=2))

    clf = SVC(kernel=kernel).fit(X, y)
    assert calls == [((60, 3), (60, 3))]
    clf.predict(X[:7])
    n_sv = clf.support_vectors_.shape[0]
    assert calls[-1] == ((7, 3), (n_sv, 3))
    ref = SVC(kernel="rbf", gamma=0.5).fit(X, y)
    # (the named kernel is evaluated in float32 by default)
    np.testing.assert_allclose(clf.decision_function(X), ref.decision_function(X), atol=1e-5)


@pytest.mark.parametrize(
    "kernel, message",
    [
        (lambda A, B: A, r"returned an array of shape \(60, 3\)"),
        (lambda A, B: np.full((len(A), len(B)), np.nan), "NaN or infinite"),
        (lambda A, B: np.full((len(A), len(B)), "x"), "must return a numeric array"),
    ],
    ids=["shape", "nan", "text"],
)
def test_bad_callable_kernel_raises(kernel, message):
    X, y = small_problem()
    with pytest.raises(ValueError, match=message) as err:
        SVC(kernel=kernel).fit(X, y)
    assert "kernel callable <lambda>" in str(err.value)


def test_callable_kernel_checked_at_predict():
    X, y = small_problem()
    state = {"fitted": False}

    def kernel(A, B):
        K = A @ B.T
        return K if not state["fitted"] else K[:, :1]

    clf = SVC(kernel=kernel).fit(X, y)
    state["fitted"] = True
    with pytest.raises(ValueError, match="kernel callable kernel returned an array of shape"):
        clf.predict(X)


@pytest.mark.parametrize(
    "est",
    [
        LocalSVC(kernel=linear_kernel),
        FLSAClassifier(kernel=linear_kernel),
        RFLSAClassifier(kernel=linear_kernel),
        FLSAClassifierCV(kernel=linear_kernel),
        ClusterSVC(kernel=linear_kernel, random_state=0),
        IncrementalSVC(kernel=linear_kernel),
    ],
    ids=lambda e: type(e).__name__,
)
def test_callable_kernel_only_where_supported(iris, est):
    X, y = iris
    refusal = "callable kernels are supported by SVC, NuSVC, SVR, NuSVR, OneClassSVM and ProfileSVC"
    with pytest.raises(ValueError, match=refusal):
        est.fit(X, y)
    if hasattr(est, "partial_fit"):
        with pytest.raises(ValueError, match=refusal):
            est.partial_fit(X, y, classes=np.unique(y))
    # A bad kernel name's message offers only what the estimator takes.
    with pytest.raises(ValueError, match="kernel") as info:
        est.set_params(kernel="foo").fit(X, y)
    assert "callable" not in str(info.value)


@pytest.mark.parametrize(
    "est", [SVC(), ProfileSVC(n_clusters=2, random_state=0)], ids=lambda e: type(e).__name__
)
def test_bad_kernel_name_offers_a_callable_where_one_is_taken(iris, est):
    X, y = iris
    with pytest.raises(ValueError, match="or a callable"):
        est.set_params(kernel="foo").fit(X, y)


def test_profile_svc_takes_a_callable_kernel(iris):
    # Each cluster's SVM is an SVC with the callable, as the user guide says.
    X, y = iris
    named = ProfileSVC(kernel="linear", n_clusters=2, random_state=0)
    called = ProfileSVC(kernel=linear_kernel, n_clusters=2, random_state=0)
    np.testing.assert_array_equal(called.fit(X, y).predict(X), named.fit(X, y).predict(X))


# ------------------------------------------------ typical scikit-learn code


def every_parameter(**overrides):
    """Every parameter of scikit-learn's SVC signature, explicitly."""
    params = dict(
        C=1.0,
        kernel="rbf",
        degree=3,
        gamma="scale",
        coef0=0.0,
        shrinking=True,
        probability=True,
        tol=1e-3,
        cache_size=200,
        class_weight=None,
        verbose=False,
        max_iter=-1,
        decision_function_shape="ovr",
        break_ties=False,
        random_state=0,
    )
    params.update(overrides)
    return params


def user_code(svc_class, params, X, y):
    """A typical scikit-learn workflow, written once for either SVC."""
    out = {}
    pipe = Pipeline([("scale", StandardScaler()), ("svc", svc_class(**params))])
    X_train, y_train, X_test = X[::2], y[::2], X[1::2]
    pipe.fit(X_train, y_train)
    out["predict"] = pipe.predict(X_test)
    out["decision"] = pipe.decision_function(X_test)
    if params["probability"] is True:
        out["proba"] = pipe.predict_proba(X_test)
    cv = StratifiedKFold(n_splits=4, shuffle=True, random_state=0)
    grid = GridSearchCV(pipe, {"svc__C": [0.1, 1.0, 10.0]}, cv=cv).fit(X, y)
    out["best_C"] = grid.best_params_["svc__C"]
    out["grid_scores"] = grid.cv_results_["mean_test_score"]
    params_plain = {**params, "probability": False}
    calibrated = CalibratedClassifierCV(
        Pipeline([("scale", StandardScaler()), ("svc", svc_class(**params_plain))]),
        ensemble=False,
    ).fit(X_train, y_train)
    out["calibrated"] = calibrated.predict_proba(X_test)
    out["cv_scores"] = cross_val_score(pipe, X, y, cv=cv)
    return out


@pytest.mark.parametrize(
    "overrides",
    [
        {},
        {"probability": False, "class_weight": "balanced", "break_ties": True},
        {"kernel": "poly", "degree": 2, "gamma": 0.5, "coef0": 1.0, "shrinking": False},
        {"kernel": "linear", "decision_function_shape": "ovo", "probability": False},
    ],
    ids=["default", "balanced-break-ties", "poly", "linear-ovo"],
)
def test_sklearn_user_code_runs_unchanged(overrides):
    X, y = make_classification(
        n_samples=240, n_features=5, n_informative=3, n_classes=3, random_state=4
    )
    params = every_parameter(**overrides)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        ours = user_code(SVC, params, X, y)
        theirs = user_code(SklearnSVC, params, X, y)
    assert np.mean(ours["predict"] == theirs["predict"]) >= 0.99
    # Both solvers stop at a KKT violation of tol, not at the same point.
    np.testing.assert_allclose(ours["decision"], theirs["decision"], atol=0.05)
    assert ours["best_C"] == theirs["best_C"]
    np.testing.assert_allclose(ours["grid_scores"], theirs["grid_scores"], atol=0.02)
    np.testing.assert_allclose(ours["cv_scores"], theirs["cv_scores"], atol=0.02)
    np.testing.assert_allclose(ours["calibrated"], theirs["calibrated"], atol=0.02)
    if "proba" in theirs:
        # 120 training samples: the fold draws matter more than on iris;
        # scikit-learn's own probabilities here move by a mean 0.008-0.023
        # (max up to 0.1) from one random_state to another.
        diff = np.abs(ours["proba"] - theirs["proba"])
        assert diff.max() < 0.15
        assert diff.mean() < 0.03


@pytest.mark.parametrize("name", ["SVC", "NuSVC"])
def test_prob_ab_are_empty_without_probability_and_deprecated_as_sklearn(name):
    import sklearn.svm

    import localsvm

    X, y = make_classification(n_samples=60, n_features=4, random_state=0)
    ours = getattr(localsvm, name)().fit(X, y)
    theirs = getattr(sklearn.svm, name)().fit(X, y)
    for attr in ("probA_", "probB_"):
        with pytest.warns(FutureWarning, match=f"`{attr}` was deprecated") as caught:
            got = getattr(ours, attr)
        with pytest.warns(FutureWarning, match=f"`{attr}` was deprecated") as caught_sk:
            want = getattr(theirs, attr)
        assert str(caught[0].message) == str(caught_sk[0].message)
        assert got.shape == want.shape == (0,) and got.dtype == want.dtype
    with pytest.raises(NotFittedError):
        _ = getattr(localsvm, name)().probA_
