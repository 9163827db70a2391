"""SVCCV and SVRCV against GridSearchCV on the cases a demanding user tries:
per-fold class weights, multiclass decision-value scorers, scorers that need
probabilities, empty splits and kernels whose dual is not convex; splits
given as masks or bad indices, one-row held-out parts, C grids spanning
many decades, grids too large for memory, loose third-party solutions,
stale refit attributes, and CellSVC cells whose search scores nothing."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import make_classification, make_friedman1
from sklearn.exceptions import ConvergenceWarning, FitFailedWarning
from sklearn.model_selection import GridSearchCV, KFold, StratifiedKFold

from localsvm import SVC, SVCCV, SVR, SVRCV, get_backend

CS = [0.1, 1.0, 10.0, 100.0]
GAMMAS = [0.02, 0.2, 1.0]


def _pair(X, y, svc_kw=None, grid=None, **kw):
    """SVCCV without pruning and the grid search over SVC, both at tol 1e-6."""
    svc_kw = svc_kw or {}
    grid = grid or {"C": CS, "gamma": GAMMAS}
    ours = SVCCV(
        prune=None, Cs=grid["C"], gammas=grid["gamma"], tol=1e-6, cv_tol=1e-6, **svc_kw, **kw
    ).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = GridSearchCV(SVC(tol=1e-6, **svc_kw), grid, **kw).fit(X, y)
    return ours, ref


def test_balanced_class_weight_is_resolved_on_each_training_fold():
    # As the grid search's SVC, each fold weighs the classes by the counts
    # of its own training rows (190 / 10 rows do not split evenly in 3).
    X, y = make_classification(
        n_samples=200, n_features=5, weights=[0.95], flip_y=0, random_state=3
    )
    ours, ref = _pair(X, y, svc_kw={"class_weight": "balanced"}, cv=3)
    np.testing.assert_allclose(
        ours.cv_results_["mean_test_score"], ref.cv_results_["mean_test_score"], atol=1e-9
    )
    assert ours.best_params_ == ref.best_params_
    # The refit weighs the classes on all the rows.
    np.testing.assert_allclose(ours.class_weight_, 200 / (2 * np.bincount(y)))


def test_balanced_class_weight_on_a_fold_without_a_class():
    X, y = make_classification(
        n_samples=150, n_features=6, n_informative=4, n_classes=3, random_state=1
    )
    order = np.argsort(y, kind="stable")
    X, y = X[order], y[order]
    # Fold 0 trains on classes 0 and 1 only.
    folds = [
        (np.flatnonzero(y < 2), np.flatnonzero(y == 2)),
        (np.arange(0, 150, 2), np.arange(1, 150, 2)),
    ]
    ours, ref = _pair(X, y, svc_kw={"class_weight": "balanced"}, cv=folds)
    np.testing.assert_allclose(
        ours.cv_results_["mean_test_score"], ref.cv_results_["mean_test_score"], atol=1e-9
    )


@pytest.mark.parametrize("scoring", ["top_k_accuracy", "decision_argmax"])
def test_multiclass_scorers_read_one_score_per_class(scoring):
    # SVC's decision_function has one column per class ('ovr' shape), and
    # a scorer reading it must get the same from the search.
    X, y = make_classification(
        n_samples=150, n_features=6, n_informative=4, n_classes=3, flip_y=0.05, random_state=3
    )
    if scoring == "decision_argmax":

        def scoring(est, X, y):
            return float(np.mean(est.classes_[np.argmax(est.decision_function(X), 1)] == y))

    ours, ref = _pair(X, y, cv=3, scoring=scoring)
    np.testing.assert_allclose(
        ours.cv_results_["mean_test_score"], ref.cv_results_["mean_test_score"], atol=1e-9
    )
    assert ours.best_params_ == ref.best_params_


@pytest.mark.parametrize(
    ("n_classes", "scoring"),
    [(2, "neg_log_loss"), (2, "neg_brier_score"), (3, "neg_log_loss"), (3, "roc_auc_ovr")],
)
def test_probability_scorers_are_refused_naming_scoring(n_classes, scoring):
    X, y = make_classification(
        n_samples=90, n_features=5, n_informative=3, n_classes=n_classes, random_state=0
    )
    with pytest.raises(ValueError, match=r"scoring=.*predict_proba"):
        SVCCV(Cs=2, gammas=2, cv=3, scoring=scoring).fit(X, y)


def test_a_callable_scorer_that_asks_for_probabilities_is_refused_naming_scoring():
    X, y = make_classification(n_samples=90, n_features=5, random_state=0)

    def proba_scorer(est, X, y):
        return float(np.mean(est.predict_proba(X)[:, 1]))

    with pytest.raises(ValueError, match=r"scoring=.*predict_proba"):
        SVCCV(Cs=2, gammas=2, cv=3, scoring=proba_scorer).fit(X, y)


@pytest.mark.parametrize("est", [SVCCV(Cs=2, gammas=2), SVRCV(Cs=2, gammas=2, epsilons=1)])
@pytest.mark.parametrize("empty", ["no splits", "no test rows", "no training rows"])
def test_empty_splits_are_a_value_error_naming_cv(est, empty):
    # An empty test part scored R² = 1 for SVRCV, in silence.
    X, y = make_classification(n_samples=40, n_features=4, random_state=0)
    rows, none = np.arange(40), np.array([], dtype=int)
    cv = {
        "no splits": [],
        "no test rows": [(rows[:20], rows[20:]), (rows, none)],
        "no training rows": [(none, rows)],
    }[empty]
    with pytest.raises(ValueError, match="cv"):
        est.set_params(cv=cv).fit(X, y.astype(float) if isinstance(est, SVRCV) else y)


@pytest.mark.parametrize(
    "svc_kw",
    [
        {"kernel": "sigmoid"},
        {"kernel": "poly", "degree": 2, "coef0": -1.0},
    ],
)
def test_kernels_without_a_convex_dual_score_and_refit_as_svc(svc_kw):
    # Their dual has several stationary points: each C must be solved from
    # zero, as SVC is, or the path's warm starts reach other ones.
    X, y = make_classification(n_samples=120, n_features=5, flip_y=0.1, random_state=1)
    ours, ref = _pair(X, y, svc_kw=svc_kw, cv=StratifiedKFold(3))
    np.testing.assert_allclose(
        ours.cv_results_["mean_test_score"], ref.cv_results_["mean_test_score"], atol=1e-9
    )
    assert ours.best_params_ == ref.best_params_
    alone = SVC(C=ours.C_, gamma=ours.gamma_, tol=1e-6, **svc_kw).fit(X, y)
    np.testing.assert_allclose(ours.decision_function(X), alone.decision_function(X), atol=1e-5)
    # The same with the default tolerances and pruning: the refit is SVC's.
    pruned = SVCCV(Cs=CS, gammas=GAMMAS, cv=3, **svc_kw).fit(X, y)
    alone = SVC(C=pruned.C_, gamma=pruned.gamma_, **svc_kw).fit(X, y)
    np.testing.assert_array_equal(pruned.predict(X), alone.predict(X))


def test_multiclass_sigmoid_poses_each_pair_in_the_given_order():
    # Where a solve from zero of a dual that is not convex ends depends on
    # the order of its variables: each pair's rows must come as SVC poses
    # them (in the order given), not grouped by class.
    X, y = make_classification(
        n_samples=90, n_features=5, n_informative=3, n_classes=3, flip_y=0.1, random_state=4
    )
    ours, ref = _pair(X, y, svc_kw={"kernel": "sigmoid"}, cv=StratifiedKFold(3))
    np.testing.assert_allclose(
        ours.cv_results_["mean_test_score"], ref.cv_results_["mean_test_score"], atol=1e-9
    )


def test_svrcv_sigmoid_scores_as_grid_search():
    X, y = make_friedman1(n_samples=100, noise=0.5, random_state=0)
    X = (X - X.mean(0)) / X.std(0)
    grid = {"C": [0.1, 1.0, 10.0], "epsilon": [0.1, 1.0], "gamma": [0.02, 0.2]}
    ours = SVRCV(
        prune=None,
        Cs=grid["C"],
        gammas=grid["gamma"],
        epsilons=grid["epsilon"],
        kernel="sigmoid",
        cv=3,
        tol=1e-6,
        cv_tol=1e-6,
    ).fit(X, y)
    ref = GridSearchCV(SVR(kernel="sigmoid", tol=1e-6), grid, cv=3).fit(X, y)
    np.testing.assert_allclose(
        ours.cv_results_["mean_test_score"], ref.cv_results_["mean_test_score"], atol=1e-9
    )
    assert ours.best_params_ == ref.best_params_
    np.testing.assert_allclose(ours.predict(X), ref.predict(X), atol=1e-5)


@pytest.mark.parametrize("est", [SVCCV(Cs=2, gammas=2, cv=3), SVRCV(Cs=2, gammas=2, cv=3)])
def test_a_dataframe_fit_checks_the_feature_names_at_predict(est):
    pd = pytest.importorskip("pandas")
    X, y = make_classification(n_samples=60, n_features=4, random_state=0)
    df = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    est.fit(df, y if isinstance(est, SVCCV) else X[:, 0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning per call
        pred = est.predict(df)
    np.testing.assert_array_equal(pred, est.best_estimator_.predict(df))
    np.testing.assert_array_equal(est.best_estimator_.feature_names_in_, est.feature_names_in_)
    # Columns in another order are refused, not silently misread.
    with pytest.raises(ValueError, match="feature names"):
        est.predict(df[["d", "c", "b", "a"]])


@pytest.mark.parametrize(
    ("scoring", "data_seed", "majority", "flip_y", "split_seed"),
    [("balanced_accuracy", 3, 0.9, 0.02, 3), ("recall", 103, 0.85, 0.03, 3)],
)
def test_prune_keeps_the_choice_of_a_scoring_unlike_accuracy(
    scoring, data_seed, majority, flip_y, split_seed
):
    # On imbalanced classes accuracy and these scorings rank candidates
    # differently: prune judged by the 0-1 loss left out the grid's best.
    X, y = make_classification(
        n_samples=300,
        n_features=8,
        weights=[majority],
        flip_y=flip_y,
        class_sep=0.7,
        random_state=data_seed,
    )
    grid = dict(Cs=6, gammas=6, cv=5, random_state=split_seed, scoring=scoring)
    full = SVCCV(prune=None, **grid).fit(X, y)
    pruned = SVCCV(**grid).fit(X, y)
    mean = full.cv_results_["mean_test_score"]
    assert mean.max() - mean[pruned.best_index_] <= 0.002
    if scoring == "balanced_accuracy":
        # Still raced, by the loss whose mean is one less balanced accuracy.
        assert np.isnan(pruned.cv_results_["mean_test_score"]).any()


def test_svrcv_prune_keeps_the_choice_of_a_scoring_unlike_squared_error():
    X, y = make_friedman1(n_samples=200, noise=1.0, random_state=0)
    rng = np.random.RandomState(0)
    y = y + (rng.rand(200) < 0.08) * rng.standard_cauchy(200) * 5  # heavy tails
    grid = dict(Cs=5, gammas=4, epsilons=2, cv=5, random_state=0)
    grid["scoring"] = "neg_median_absolute_error"
    full = SVRCV(prune=None, **grid).fit(X, y)
    pruned = SVRCV(**grid).fit(X, y)
    mean = full.cv_results_["mean_test_score"]
    assert mean.max() - mean[pruned.best_index_] <= 0.002


def _weights(n, seed, zeros_every=None):
    w = np.random.default_rng(seed).uniform(0.1, 3.0, n)
    if zeros_every:
        w[::zeros_every] = 0.0
    return w


@pytest.mark.parametrize("zeros_every", [None, 7])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_svccv_sample_weight_scores_and_refits_as_grid_search(n_classes, zeros_every):
    # GridSearchCV hands sample_weight to each fold's SVC.fit and weighs the
    # held-out scores by it; a weight of 0 leaves the row out of the fits.
    X, y = make_classification(
        n_samples=150,
        n_features=6,
        n_informative=4,
        n_classes=n_classes,
        n_clusters_per_class=1,
        random_state=0,
    )
    w = _weights(y.size, 0, zeros_every)
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    grid = {"C": [0.3, 3.0, 30.0], "gamma": [0.05, 0.3]}
    ours = SVCCV(Cs=grid["C"], gammas=grid["gamma"], cv=cv, prune=None, tol=1e-6, cv_tol=1e-6).fit(
        X, y, sample_weight=w
    )
    ref = GridSearchCV(SVC(tol=1e-6), grid, cv=cv).fit(X, y, sample_weight=w)
    np.testing.assert_allclose(
        ours.cv_results_["mean_test_score"], ref.cv_results_["mean_test_score"], atol=1e-6
    )
    assert ours.best_params_ == ref.best_params_
    alone = SVC(C=ours.C_, gamma=ours.gamma_, tol=1e-6).fit(X, y, sample_weight=w)
    np.testing.assert_allclose(ours.decision_function(X), alone.decision_function(X), atol=1e-4)


def test_svccv_unweighted_weights_change_nothing():
    X, y = make_classification(n_samples=150, n_features=6, random_state=1)
    kw = dict(Cs=[0.3, 3.0], gammas=[0.05, 0.3], cv=3)
    plain = SVCCV(**kw).fit(X, y)
    ones = SVCCV(**kw).fit(X, y, sample_weight=np.ones(y.size))
    np.testing.assert_array_equal(
        plain.cv_results_["mean_test_score"], ones.cv_results_["mean_test_score"]
    )


def _svr_pair(X, y, grid, cv, tol=1e-6, fit_kw=None, **kw):
    """SVRCV without pruning and the grid search over SVR on the same grid
    and folds, both at ``tol``, and each one's mean scores by candidate."""
    fit_kw = fit_kw or {}
    ours = SVRCV(
        Cs=grid["C"],
        gammas=grid["gamma"],
        epsilons=grid["epsilon"],
        cv=cv,
        prune=None,
        tol=tol,
        cv_tol=tol,
        **kw,
    ).fit(X, y, **fit_kw)
    ref = GridSearchCV(SVR(tol=tol), grid, cv=cv, **kw).fit(X, y, **fit_kw)

    def by_params(search):
        keys = [tuple(sorted(p.items())) for p in search.cv_results_["params"]]
        return dict(zip(keys, search.cv_results_["mean_test_score"], strict=True))

    return ours, by_params(ours), by_params(ref)


@pytest.mark.parametrize("scoring", [None, "neg_mean_absolute_error"])
def test_svrcv_sample_weight_scores_and_refits_as_grid_search(scoring):
    X, y = make_friedman1(120, noise=0.5, random_state=0)
    w = _weights(y.size, 1, zeros_every=5)
    cv = KFold(3, shuffle=True, random_state=0)
    grid = {"C": [1.0, 10.0], "gamma": [0.05, 0.2], "epsilon": [0.05, 0.2]}
    ours, ours_scores, ref_scores = _svr_pair(
        X, y, grid, cv, fit_kw={"sample_weight": w}, scoring=scoring
    )
    for key, value in ref_scores.items():
        np.testing.assert_allclose(ours_scores[key], value, atol=1e-5)
    alone = SVR(C=ours.C_, gamma=ours.gamma_, epsilon=ours.epsilon_, tol=1e-6)
    alone.fit(X, y, sample_weight=w)
    np.testing.assert_allclose(ours.predict(X), alone.predict(X), atol=1e-4)


def test_a_zero_epsilon_scores_as_svr_does():
    # SVR takes epsilon=0 (no tube): so does the search, with the same scores.
    X, y = make_friedman1(60, noise=0.5, random_state=2)
    grid = {"C": [1.0, 10.0], "gamma": [0.1], "epsilon": [0.0, 0.1]}
    _, ours_scores, ref_scores = _svr_pair(X, y, grid, KFold(3, shuffle=True, random_state=0))
    for key, value in ref_scores.items():
        assert ours_scores[key] == pytest.approx(value, abs=1e-5)


@pytest.mark.parametrize("search", [SVCCV, SVRCV])
@pytest.mark.parametrize(
    ("weights", "message"),
    [(np.ones(5), "sample_weight"), (np.zeros(60), "zero or negative")],
)
def test_bad_sample_weight_is_refused(search, weights, message):
    X, y = make_classification(n_samples=60, n_features=4, random_state=0)
    with pytest.raises(ValueError, match=message):
        search(Cs=[1.0], gammas=[0.1], cv=3).fit(X, y.astype(float), sample_weight=weights)


@pytest.mark.parametrize("seed", [0, 4])
def test_a_balanced_race_waits_for_enough_rows_of_the_small_class(seed):
    # 10 % of 300 rows in the small class: about 6 held-out rows of it per
    # fold. Counted as rows, the first fold alone raced, and on seed 0 the
    # race left out the grid's best (0.0047 below it); counted as Kish's
    # effective rows it waits for more folds.
    X, y = make_classification(
        n_samples=300, n_features=8, weights=[0.9], flip_y=0.02, class_sep=0.7, random_state=seed
    )
    kw = dict(Cs=6, gammas=6, cv=5, random_state=seed, scoring="balanced_accuracy")
    full = SVCCV(prune=None, **kw).fit(X, y)
    raced = SVCCV(**kw).fit(X, y)
    assert np.isnan(raced.cv_results_["split4_test_score"]).any()  # the race ran
    chosen = full.cv_results_["mean_test_score"][raced.best_index_]
    assert full.best_score_ - chosen <= 0.002


def test_effective_rows_count_weighted_losses_as_kish_does():
    from localsvm.tuning import _effective_rows, _weighed

    valids = [np.arange(0, 10), np.arange(10, 20)]
    plain = _weighed(lambda d, v: np.ones(v.size), np.ones(20))
    assert _effective_rows(lambda d, v: None, valids) == 20.0
    assert _effective_rows(plain, valids) == pytest.approx(20.0)
    # One row of each fold weighing 9 times the others: (Σw)² / Σw².
    w = np.ones(20)
    w[[0, 10]] = 9.0
    lopsided = _weighed(lambda d, v: np.ones(v.size), w)
    assert _effective_rows(lopsided, valids) == pytest.approx(36.0**2 / (2 * 81 + 18))


@pytest.mark.parametrize(
    "est", [SVCCV(Cs=[1.0, 10.0], gammas=[0.2]), SVRCV(Cs=[1.0], gammas=[0.2])]
)
def test_boolean_mask_splits_score_as_grid_search(est):
    # Masks were cast to integers: every split trained and tested on rows 0
    # and 1, and every candidate scored 1.0, in silence.
    X, y = make_classification(n_samples=60, n_features=4, random_state=0)
    y = y.astype(float) if isinstance(est, SVRCV) else y
    masks = []
    for _, test in KFold(3).split(X):
        mask = np.zeros(60, dtype=bool)
        mask[test] = True
        masks.append((~mask, mask))
    ours = clone(est).set_params(cv=masks, prune=None).fit(X, y)
    indices = clone(est).set_params(cv=KFold(3), prune=None).fit(X, y)
    np.testing.assert_array_equal(
        ours.cv_results_["mean_test_score"], indices.cv_results_["mean_test_score"]
    )


@pytest.mark.parametrize(
    "split, match",
    [
        ((np.arange(30), np.array([0.5, 40.0])), "dtype float64"),
        ((np.arange(30), np.array([30, 60])), "row 60, outside the 60 rows"),
        ((np.ones(59, dtype=bool), np.ones(60, dtype=bool)), "mask of 59 training rows"),
    ],
)
def test_bad_split_indices_name_cv(split, match):
    X, y = make_classification(n_samples=60, n_features=4, random_state=0)
    with pytest.raises(ValueError, match=match):
        SVCCV(Cs=[1.0], gammas=[0.2], cv=[split]).fit(X, y)


def test_svrcv_r2_on_one_held_out_row_is_nan_as_grid_search():
    # R² of one row is undefined (r2_score's NaN); the search scored it 0
    # or 1 and chose among the candidates by it.
    from sklearn.model_selection import LeaveOneOut

    X, y = make_friedman1(n_samples=20, noise=0.5, random_state=0)
    one = [(np.arange(1, 20), np.array([0])), (np.arange(10), np.arange(10, 20))]
    with pytest.warns(UserWarning, match="1 of 2 held-out scores are not finite"):
        ours = SVRCV(Cs=[1.0], gammas=[0.2], epsilons=[0.1], cv=one).fit(X, y)
    assert np.isnan(ours.cv_results_["split0_test_score"][0])
    # Every score NaN: one error, no warning repeating it.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="R² needs at least two held-out rows"):
            SVRCV(Cs=[1.0, 10.0], gammas=[0.2], epsilons=[0.1], cv=LeaveOneOut()).fit(X, y)
    # A score defined on one row chooses as usual.
    mse = SVRCV(
        Cs=[1.0, 10.0],
        gammas=[0.2],
        epsilons=[0.1],
        cv=LeaveOneOut(),
        scoring="neg_mean_squared_error",
    ).fit(X, y)
    assert np.isfinite(mse.best_score_)


def test_a_scorer_giving_only_nan_is_named_not_blamed_on_failed_fits():
    X, y = make_classification(n_samples=60, n_features=4, random_state=0)
    # One message: the error, without a warning saying the same before it.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="Every held-out score of SVCCV is NaN: scoring="):
            SVCCV(Cs=[1.0], gammas=[0.2], cv=3, scoring=lambda est, X, y: np.nan).fit(X, y)


def test_refit_false_leaves_no_model_from_an_earlier_fit():
    X, y = make_classification(n_samples=60, n_features=4, random_state=0)
    search = SVCCV(Cs=[1.0], gammas=[0.2], cv=3).fit(X, y)
    search.set_params(refit=False).fit(X[:40, :3], y[:40])
    assert not hasattr(search, "best_estimator_")
    assert not hasattr(search, "refit_time_")


@pytest.mark.parametrize("Cs", [[1.0, 1e50], [1e-300, 1.0, 1e300]])
@pytest.mark.parametrize("est", ["svc", "svr"])
def test_a_grid_with_a_huge_step_of_c_scores_as_grid_search(est, Cs):
    # The path scaled its bounded multipliers by the step (1e50: no solve
    # reached tol in 10^7 iterations; 1e-300 to 1e300: an infinite
    # gradient, every fit failed); past a step of 1e6 it starts from zero.
    X, y = make_classification(
        n_samples=90, n_features=3, n_informative=2, n_redundant=0, random_state=0
    )
    if est == "svc":
        ours = SVCCV(Cs=Cs, gammas=[0.5], cv=3, prune=None)
        ref = GridSearchCV(SVC(), {"C": Cs, "gamma": [0.5]}, cv=3)
        y_fit = y
    else:
        ours = SVRCV(Cs=Cs, gammas=[0.5], epsilons=[0.1], cv=3, prune=None)
        ref = GridSearchCV(SVR(), {"C": Cs, "epsilon": [0.1], "gamma": [0.5]}, cv=3)
        y_fit = X[:, 0] + 0.1 * y
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ours.fit(X, y_fit)
    ref.fit(X, y_fit)
    # The largest C only: the smallest leaves every multiplier at its bound,
    # where the intercept is any value of an interval.
    np.testing.assert_allclose(
        ours.cv_results_["mean_test_score"][-1],
        ref.cv_results_["mean_test_score"][-1],
        atol=1e-3,
    )


def test_svrcv_refits_after_a_path_over_a_wide_range_of_c():
    # The folds' yᵀα = 0 held to the rounding of multipliers of 1e12: their
    # average was refused as the refit's start (ValueError from the refit).
    rng = np.random.default_rng(0)
    X = rng.normal(size=(90, 3))
    y = X[:, 0] + 0.1 * rng.normal(size=90)
    search = SVRCV(Cs=[1.0, 1e12], gammas=[0.5], epsilons=[0.1], cv=3, prune=None).fit(X, y)
    assert search.C_ == 1e12
    alone = SVR(C=1e12, gamma=0.5, epsilon=0.1).fit(X, y)
    np.testing.assert_allclose(search.predict(X), alone.predict(X), atol=1e-3)


def test_all_failed_fits_give_the_reason_in_the_error():
    # A cell's search records its warnings for CellSVC, which never saw them
    # when the search raised: the error itself names the first reason.
    X, y = make_classification(n_samples=60, n_features=4, random_state=0)
    ones = np.flatnonzero(y == 1)
    cv = [(ones[:20], np.flatnonzero(y == 0)), (ones[5:25], np.flatnonzero(y == 0))]
    with pytest.warns(FitFailedWarning):
        with pytest.raises(ValueError, match="first reason: ValueError: the training fold"):
            SVCCV(Cs=[1.0], gammas=[0.2], cv=cv).fit(X, y)


@pytest.mark.parametrize("est", [SVCCV(Cs=[1.0], gammas=[0.2], cv=3), SVC()])
@pytest.mark.parametrize("factor", [np.nan, np.inf])
def test_a_class_weight_that_is_not_finite_names_class_weight(est, factor):
    # Every fold failed on "weights must be finite and non-negative", or the
    # fit on "upper bounds must be finite": neither named class_weight.
    X, y = make_classification(n_samples=60, n_features=4, random_state=0)
    with pytest.raises(ValueError, match="class_weight must give finite factors; class 0"):
        clone(est).set_params(class_weight={0: factor}).fit(X, y)


@pytest.mark.parametrize("est", [SVCCV(Cs=[1.0], gammas=[0.2]), SVRCV(Cs=[1.0], gammas=[0.2])])
def test_a_group_splitter_is_refused_naming_cv_and_the_way_round(est):
    # The error was scikit-learn's "The 'groups' parameter should not be
    # None.", naming neither cv nor how to pass the groups' splits.
    from sklearn.model_selection import GroupKFold

    X, y = make_classification(n_samples=60, n_features=4, random_state=0)
    with pytest.raises(ValueError, match=r"cv=GroupKFold.*list\(cv.split\(X, y, groups\)\)"):
        clone(est).set_params(cv=GroupKFold(3)).fit(X, y.astype(float))
    groups = np.arange(60) % 5
    fitted = clone(est).set_params(cv=list(GroupKFold(3).split(X, y, groups))).fit(X, y)
    assert fitted.n_splits_ == 3


def test_svrcv_targets_whose_spread_overflows_name_y():
    # Every fit failed on "p must be finite" after an overflow warning.
    X, y = make_friedman1(n_samples=40, random_state=0)
    with pytest.raises(ValueError, match=r"targets' spread overflows float64.*scale y"):
        SVRCV(Cs=[1.0], gammas=[0.2], cv=3).fit(X, y * 1e200)


@pytest.mark.parametrize(
    "max_iter, says",
    [
        (-1, r"the solver's iteration cap \(max_iter=-1.*leave out the largest Cs"),
        (5, r"max_iter=5 .*raise max_iter"),
    ],
)
def test_the_convergence_warning_gives_a_remedy_for_the_cap_that_stopped(max_iter, says):
    # With max_iter=-1 the warning said "stopped at max_iter=-1 ... raise
    # max_iter": no remedy, the cap being the solver's own.
    search = SVCCV(max_iter=max_iter, refit=False)
    with pytest.warns(ConvergenceWarning, match=says):
        search._finish(None, None, None, np.array([[True, False]]))


def test_a_backend_whose_solutions_meet_the_equality_loosely_scores_every_c():
    # An interior-point solver (the clarabel plugin) meets yᵀα = 0 to about
    # 1e-8: the generic path handed that solution to the next C as its
    # start, which was refused ("alpha0 violates the equality constraint")
    # and the candidate scored NaN with a FitFailedWarning.
    from localsvm.backends.base import CPath, solve_c_path_generic
    from localsvm.kernels import KernelSpec

    rust = get_backend("rust")

    class Loose:
        name = "loose"
        capabilities = rust.capabilities

        def solve(self, problem):
            sol = rust.solve(problem)
            sol.alpha = np.asarray(sol.alpha) + 1e-6 * (np.asarray(problem.y) > 0)
            return sol

    X, y = make_classification(n_samples=60, n_features=4, random_state=0)
    labels = np.where(y == 1, 1.0, -1.0)
    path = CPath(
        X=X,
        rows=np.arange(40),
        y=labels[:40],
        weights=np.ones(40),
        p=None,
        Cs=np.array([0.1, 1.0, 10.0]),
        valid=np.arange(40, 60),
        kernel=KernelSpec("rbf", gamma=0.2),
        target=labels[40:],
    )
    out = solve_c_path_generic(Loose(), path)
    assert out.error == [None, None, None]
    assert np.all(np.isfinite(out.decision))


@pytest.mark.parametrize(
    "est, grids, names",
    [
        (SVCCV(cv=3), {"Cs": 10**8, "gammas": 1}, "a grid of 100000000 Cs"),
        (SVCCV(cv=3), {"Cs": 3, "gammas": 10**6}, r"3 x 1000000 candidates.*fewer Cs and gammas"),
        (SVRCV(cv=3), {"Cs": 2, "gammas": 2, "epsilons": 10**6}, "fewer Cs, epsilons and gammas"),
    ],
)
def test_grids_too_large_for_memory_are_a_memory_error_naming_them(monkeypatch, est, grids, names):
    # numpy's MemoryError ("Unable to allocate 1.49 GiB for an array with
    # shape (10000000, 20, 1)") came after seconds of work and named no
    # parameter; 10^8 gammas took minutes of Python objects first.
    from localsvm import _memory

    monkeypatch.setattr(_memory, "available_memory", lambda: 600 << 20)
    X, y = make_classification(n_samples=60, n_features=4, random_state=0)
    with pytest.raises(MemoryError, match=names):
        clone(est).set_params(**grids).fit(X, y)


def test_the_held_out_values_of_a_long_c_grid_are_a_memory_error_naming_cs(monkeypatch):
    from localsvm import _memory

    monkeypatch.setattr(_memory, "available_memory", lambda: 600 << 20)
    # 200 held-out rows of 2e5 C values: 320 MB of decision values.
    X, y = make_classification(n_samples=600, n_features=4, random_state=0)
    Cs = np.logspace(-1, 3, 2 * 10**5)
    with pytest.raises(MemoryError, match=r"scoring 200000 C values.*fewer Cs"):
        SVCCV(Cs=Cs, gammas=[0.1], cv=3, n_jobs=1).fit(X, y)


def test_a_cell_whose_search_scores_no_candidate_on_every_fold_is_not_tuned():
    # Unshuffled KFold on rows sorted by class: a training fold holds one
    # class, every candidate's mean is NaN, and the search's first candidate
    # (chosen by nothing) was reported as the cell's tuned choice.
    from localsvm import CellSVC

    X, y = make_classification(n_samples=120, n_features=4, weights=[0.75], random_state=0)
    order = np.argsort(y, kind="stable")
    X, y = X[order], y[order]
    with pytest.warns(Warning) as caught:
        cell = CellSVC(tune=True, n_cells=1, cv=KFold(2), Cs=[0.5, 5.0], C=2.0, random_state=0).fit(
            X, y
        )
    assert not cell.cell_tuned_[0]
    assert cell.cell_C_[0] == 2.0
    assert np.isnan(cell.cell_cv_score_[0])
    messages = " ".join(str(w.message) for w in caught)
    assert "fewer than two classes" in messages
    assert "scored no candidate on every fold" in messages
