"""Bad input to the searches and to CellSVC's per-cell tuning: one clear
message, in the name of the estimator the user called."""

import re
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import make_classification, make_regression
from sklearn.model_selection import (
    GroupKFold,
    KFold,
    LeaveOneGroupOut,
    LeaveOneOut,
    PredefinedSplit,
)

import localsvm
from localsvm import SVCCV, SVRCV, CellSVC, NuSVR


@pytest.mark.parametrize("method", ["predict", "decision_function", "score"])
def test_svccv_names_itself_when_x_has_the_wrong_number_of_features(method):
    X, y = make_classification(n_samples=60, n_features=4, random_state=0)
    search = SVCCV(Cs=[1.0], gammas=[0.2], cv=3).fit(X, y)
    args = (X[:, :3], y) if method == "score" else (X[:, :3],)
    with pytest.raises(ValueError, match="X has 3 features, but SVCCV is expecting 4"):
        getattr(search, method)(*args)


def test_svrcv_names_itself_when_x_has_the_wrong_number_of_features():
    X, y = make_regression(n_samples=60, n_features=4, random_state=0)
    search = SVRCV(Cs=[1.0], gammas=[0.2], epsilons=[0.1], cv=3).fit(X, y)
    with pytest.raises(ValueError, match="X has 2 features, but SVRCV is expecting 4"):
        search.predict(X[:, :2])


def test_search_warns_once_in_its_own_name_about_feature_names():
    X, y = make_classification(n_samples=60, n_features=4, random_state=0)
    frame = pd.DataFrame(X, columns=list("abcd"))
    search = SVCCV(Cs=[1.0], gammas=[0.2], cv=3).fit(frame, y)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        search.predict(X)
    messages = [str(w.message) for w in caught]
    assert len(messages) == 1, messages
    assert "SVCCV was fitted with feature names" in messages[0]
    with pytest.raises(ValueError, match="Feature names must be in the same order"):
        search.predict(frame[["b", "a", "c", "d"]])


def _nan_scoring(estimator, X, y):
    return float("nan")


@pytest.mark.parametrize("Search", [SVCCV, SVRCV])
def test_a_scoring_of_only_nan_gives_one_error_and_no_warning(Search):
    X, y = make_classification(n_samples=60, n_features=4, random_state=0)
    if Search is SVRCV:
        y = X[:, 0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=f"Every held-out score of {Search.__name__} is NaN"):
            Search(Cs=[1.0, 10.0], gammas=[0.2], cv=3, scoring=_nan_scoring).fit(X, y)


def test_failed_fits_and_nan_scores_together_give_one_error_naming_both():
    X, y = make_classification(n_samples=60, n_features=4, random_state=0)
    one_class = np.flatnonzero(y == 0)
    rest = np.setdiff1d(np.arange(60), one_class[:20])
    cv = [(one_class[:20], rest), (np.arange(40), np.arange(40, 60))]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=r"is NaN: scoring=.*1 of the 2 fits failed"):
            SVCCV(Cs=[1.0], gammas=[0.2], cv=cv, scoring=_nan_scoring).fit(X, y)


@pytest.mark.parametrize(
    "cv",
    [
        PredefinedSplit(np.arange(200) % 3),
        GroupKFold(3),
        LeaveOneGroupOut(),
    ],
)
def test_cell_svc_refuses_a_split_over_all_rows_before_any_work(cv):
    # A cell's search sees the cell's rows only: PredefinedSplit named rows
    # past the cell's ("outside the 162 rows of X") and a group splitter
    # asked for groups SVCCV does not take, both from inside a cell.
    X, y = make_classification(n_samples=200, n_features=4, random_state=0)
    est = CellSVC(tune=True, n_cells=2, cv=cv, random_state=0)
    with pytest.raises(ValueError, match=r"cannot be applied within a cell.*SVCCV"):
        est.fit(X, y)
    assert not hasattr(est, "cell_models_")


def test_cell_svc_takes_a_splitter_of_any_rows():
    X, y = make_classification(n_samples=200, n_features=4, random_state=0)
    est = CellSVC(tune=True, n_cells=2, Cs=2, gammas=2, cv=KFold(3), random_state=0)
    assert est.fit(X, y).cell_tuned_.all()


def test_nusvr_warns_when_rounding_decides_its_predictions():
    # C · nu · sum(w) = 1.5e8 multipliers from the start: the gradient's
    # rounding (~3e-8) dwarfs targets of spread ~1e-10, and the solver
    # stopped at once with an intercept 50 times that spread, silently.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 1))
    y = 1e-10 * np.sin(X[:, 0])
    with pytest.warns(UserWarning, match=r"NuSVR: the dual's gradient is rounded by about"):
        NuSVR(C=1e6, nu=0.5, gamma=6.0, tol=1e-6).fit(X, y)


def test_nusvr_says_nothing_of_rounding_on_ordinary_data():
    X, y = make_regression(n_samples=200, n_features=3, noise=1.0, random_state=0)
    with warnings.catch_warnings():
        # Large C may stop at the iteration cap (its own warning).
        warnings.filterwarnings("error", message="NuSVR: the dual's gradient")
        for C in (1.0, 1e3, 1e6):
            for kernel in ("rbf", "linear"):
                NuSVR(C=C, nu=0.5, kernel=kernel, max_iter=10**5).fit(X, y / np.std(y))


@pytest.mark.parametrize("scale", [1e150, 1e30, 1e-150])
@pytest.mark.parametrize("kernel", ["rbf", "sigmoid", "linear"])
def test_cell_routing_that_overflows_float32_is_refused(kernel, scale):
    # Routing runs in float32: rows of 1e150 became inf, their kernel
    # values NaN or exp(-inf) = 0, and the rows went to cells by nothing,
    # with a numpy RuntimeWarning at most.
    X, y = make_classification(n_samples=60, n_features=4, random_state=0)
    est = CellSVC(n_cells=3, kernel=kernel, random_state=0)
    if kernel == "linear" and scale < 1:
        est.fit(X * scale, y)  # linear routing sums in float64 first: fine
        return
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        # (or, past float64's range, the kernel's own overflow check)
        with pytest.raises(
            ValueError, match=r"kernel('s)? values (computed in float32, which )?overflow"
        ):
            est.fit(X * scale, y)


def test_cell_routing_of_ordinary_rows_is_unchanged():
    X, y = make_classification(n_samples=300, n_features=4, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        for kernel in ("rbf", "sigmoid", "linear", "poly"):
            est = CellSVC(n_cells=3, kernel=kernel, random_state=0).fit(X, y)
            assert est.score(X, y) > 0.6


@pytest.mark.parametrize("cv", [LeaveOneOut(), KFold(40)])
def test_cell_svc_tunes_with_a_splitter_of_more_folds_than_a_class_has(cv):
    # The check for StratifiedKFold (every class at least once per fold)
    # was applied to any splitter: LeaveOneOut on 40 rows of classes of 20
    # tuned no cell, though SVCCV with the same cv on the same rows does.
    X, y = make_classification(n_samples=40, n_features=4, random_state=0)
    est = CellSVC(tune=True, cv=cv, Cs=2, gammas=2, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        est.fit(X, y)
    assert est.cell_tuned_.all()
    search = SVCCV(Cs=2, gammas=2, cv=cv).fit(X, y)  # one cell: the same rows
    assert est.cell_cv_score_[0] == pytest.approx(search.best_score_)


def test_cell_svc_leaves_untuned_a_cell_a_splitter_leaves_a_class_out_of():
    X, y = make_classification(n_samples=40, n_features=4, random_state=0)
    order = np.argsort(y, kind="stable")
    est = CellSVC(tune=True, cv=KFold(2), Cs=2, gammas=2, random_state=0)
    with pytest.warns(
        UserWarning,
        match=r"cv=KFold.* gives their tuning rows no training fold with all their classes",
    ):
        est.fit(X[order], y[order])
    assert not est.cell_tuned_.any()


def test_search_names_itself_for_a_list_with_the_wrong_number_of_features():
    X, y = make_classification(n_samples=60, n_features=4, random_state=0)
    search = SVCCV(Cs=[1.0], gammas=[0.2], cv=3).fit(X, y)
    with pytest.raises(ValueError, match="X has 3 features, but SVCCV is expecting 4"):
        search.predict(X[:5, :3].tolist())
    with pytest.raises(ValueError, match="Reshape your data"):
        search.predict(X[0])


@pytest.mark.parametrize("make", [lambda: localsvm.NuSVC(), lambda: localsvm.OneClassSVM()])
def test_overflowing_weights_are_refused_in_few_words(make):
    # Uniform weights of 1e200 overflow the dual's objective: the error names
    # the weights (these estimators have no C to lower) and prints its
    # figures in scientific notation, not as 200-digit integers.
    rng = np.random.default_rng(0)
    X = rng.standard_normal((20, 3))
    y = (X[:, 0] > 0).astype(int)
    est = make()
    with pytest.raises(ValueError, match="sample weights") as err:
        est.fit(
            X,
            None if isinstance(est, localsvm.OneClassSVM) else y,
            sample_weight=np.full(20, 1e200),
        )
    assert not re.search(r"\d{20}", str(err.value)), str(err.value)


def test_nusvc_with_small_uniform_weights_is_the_unweighted_model():
    # A common factor of the weights leaves nu-SVC's model (alpha / r) as it
    # is, but tol bounds a gradient that shrinks with them: uniform weights
    # of 1e-6 had r below tol and were refused. Weights below 2**-10 are now
    # scaled up by a power of two: 2**-40 gives the unweighted model exactly.
    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 3))
    y = (X[:, 0] + 0.3 * rng.standard_normal(200) > 0).astype(int)
    plain = localsvm.NuSVC().fit(X, y)
    exact = localsvm.NuSVC().fit(X, y, sample_weight=np.full(200, 2.0**-40))
    np.testing.assert_array_equal(exact.decision_function(X), plain.decision_function(X))
    small = localsvm.NuSVC().fit(X, y, sample_weight=np.full(200, 1e-6))
    np.testing.assert_allclose(small.decision_function(X), plain.decision_function(X), atol=1e-2)


def test_one_class_svm_with_tiny_uniform_weights_is_the_unweighted_model_scaled():
    # The one-class dual scales with uniform weights, but tol bounds the
    # gradient, which scales too: at weights of 2**-40 (or 1e-10) every
    # gradient was below tol at the start and the start came back. The
    # weights are now scaled by a power of two for the solve.
    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 3))
    plain = localsvm.OneClassSVM().fit(X)
    tiny = localsvm.OneClassSVM().fit(X, sample_weight=np.full(300, 2.0**-40))
    np.testing.assert_allclose(
        tiny.decision_function(X) * 2.0**40, plain.decision_function(X), rtol=1e-12, atol=1e-12
    )
    np.testing.assert_array_equal(tiny.predict(X), plain.predict(X))
    small = localsvm.OneClassSVM().fit(X, sample_weight=np.full(300, 1e-10))
    assert np.mean(small.predict(X) == plain.predict(X)) >= 0.99


def test_prediction_with_coefficients_below_float32s_range_takes_float64():
    # Weights of 1e-300 give dual coefficients near 1e-300: the float32
    # prediction path flushed them to 0 and every decision value was -rho
    # (half the labels flipped). precision='auto' now predicts in float64.
    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 3))
    plain = localsvm.OneClassSVM().fit(X)
    tiny = localsvm.OneClassSVM().fit(X, sample_weight=np.full(300, 1e-300))
    assert np.unique(tiny.decision_function(X)).size > 1
    assert np.mean(tiny.predict(X) == plain.predict(X)) >= 0.98
