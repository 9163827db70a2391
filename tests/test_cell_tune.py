"""CellSVC(tune=True): each cell chooses its own C and gamma by SVCCV's search."""

import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import StratifiedKFold

from localsvm import SVCCV, CellSVC


def two_scales(n_per_region: int, seed: int):
    """Two side-by-side squares of the plane that need different kernel
    widths: on the left (x₁ < 0) a checkerboard of squares 1/3 wide (a
    narrow kernel), on the right a noisy linear boundary (a wide one).
    γ_scale of all the data suits neither."""
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1.0, 1.0, size=(n_per_region, 2))
    ya = (np.floor(a[:, 0] * 3) + np.floor(a[:, 1] * 3)) % 2
    b = rng.uniform(-1.0, 1.0, size=(n_per_region, 2))
    yb = b[:, 0] + b[:, 1] + rng.normal(0.0, 0.3, n_per_region) > 0
    shift = np.array([1.0, 0.0])
    X = np.vstack([a - shift, b + shift])
    y = np.concatenate([ya, yb]).astype(int)
    return X, y


@pytest.fixture(scope="module")
def regions():
    return two_scales(600, 0), two_scales(1000, 1)


def test_cells_beat_one_setting_where_the_regions_need_different_gammas(regions):
    (X, y), (Xt, yt) = regions
    plain = CellSVC(n_cells=2, random_state=0).fit(X, y)
    tuned = CellSVC(n_cells=2, tune=True, random_state=0).fit(X, y)
    assert tuned.cell_tuned_.all()
    assert tuned.score(Xt, yt) >= plain.score(Xt, yt)
    # The checkerboard is learnt only with a narrower kernel than γ_scale.
    left = slice(0, 1000)
    assert tuned.score(Xt[left], yt[left]) > 0.85
    assert plain.score(Xt[left], yt[left]) < 0.7


def test_disjoint_cells_choose_the_width_of_their_region(regions):
    (X, y), (Xt, yt) = regions
    plain = CellSVC(n_cells=2, overlap=0.0, random_state=0).fit(X, y)
    tuned = CellSVC(n_cells=2, overlap=0.0, tune=True, random_state=0).fit(X, y)
    fine = np.bincount(tuned.assign(X[:600])).argmax()
    assert tuned.cell_gamma_[fine] > 10 * tuned.cell_gamma_[1 - fine]
    assert tuned.cell_gamma_[fine] > 10 * plain.cell_gamma_[fine]
    assert tuned.score(Xt, yt) >= plain.score(Xt, yt)


def test_each_cell_chooses_what_svccv_chooses_on_its_rows(regions):
    (X, y), _ = regions
    folds = StratifiedKFold(3, shuffle=True, random_state=4)
    clf = CellSVC(
        n_cells=2,
        overlap=0.0,
        tune=True,
        Cs=4,
        gammas=[0.01, 0.3, 3.0, 30.0],
        cv=folds,
        tune_size=None,
        random_state=0,
    ).fit(X, y)
    for j in range(clf.n_cells_):
        rows = np.flatnonzero(clf.cell_labels_ == j)
        ref = SVCCV(Cs=4, gammas=[0.01, 0.3, 3.0, 30.0], cv=folds, refit=False).fit(
            X[rows], y[rows]
        )
        assert clf.cell_C_[j] == ref.C_
        assert clf.cell_gamma_[j] == ref.gamma_
        assert clf.cell_cv_score_[j] == ref.best_score_
        assert clf.cell_models_[j].C == ref.C_
        assert clf.cell_models_[j].gamma == ref.gamma_
        assert clf.cell_models_[j].shape_fit_[0] == rows.size


def test_int_gammas_follow_each_cells_scale(regions):
    (X, y), _ = regions
    folds = StratifiedKFold(3)
    clf = CellSVC(
        n_cells=2,
        overlap=0.0,
        tune=True,
        Cs=2,
        gammas=3,
        cv=folds,
        tune_size=None,
        random_state=0,
    ).fit(X, y)
    for j in range(2):
        rows = np.flatnonzero(clf.cell_labels_ == j)
        ref = SVCCV(Cs=2, gammas=3, cv=folds, refit=False).fit(X[rows], y[rows])
        assert clf.cell_gamma_[j] == ref.gamma_
        assert ref.cv_results_["param_gamma"][0] == pytest.approx(0.01 / (2 * X[rows].var()))


def test_a_subsample_tunes_a_large_cell_and_the_fit_uses_all_its_rows(regions):
    (X, y), _ = regions
    clf = CellSVC(
        n_cells=2, overlap=0.5, tune=True, Cs=2, gammas=2, tune_size=100, random_state=0
    ).fit(X, y)
    assert clf.cell_tuned_.all()
    np.testing.assert_array_equal(
        [m.shape_fit_[0] for m in clf.cell_models_], clf.cell_train_sizes_
    )
    assert (clf.cell_train_sizes_ > 100).all()


def test_tune_false_reports_the_common_values(regions):
    (X, y), _ = regions
    clf = CellSVC(n_cells=2, C=3.0, gamma=0.5, random_state=0).fit(X, y)
    np.testing.assert_array_equal(clf.cell_C_, [3.0, 3.0])
    np.testing.assert_array_equal(clf.cell_gamma_, [0.5, 0.5])
    assert np.isnan(clf.cell_cv_score_).all()
    assert not clf.cell_tuned_.any()
    assert "tune" not in clf.timings_


def test_deterministic_for_a_random_state(regions):
    (X, y), (Xt, _) = regions
    kw = dict(n_cells=3, tune=True, Cs=3, gammas=3, tune_size=300, random_state=7)
    a = CellSVC(n_jobs=2, **kw).fit(X, y)
    b = CellSVC(n_jobs=2, **kw).fit(X, y)
    c = CellSVC(n_jobs=1, **kw).fit(X, y)
    for other in (b, c):
        np.testing.assert_array_equal(a.cell_C_, other.cell_C_)
        np.testing.assert_array_equal(a.cell_gamma_, other.cell_gamma_)
        np.testing.assert_array_equal(a.cell_cv_score_, other.cell_cv_score_)
    for ma, mb in zip(a.cell_models_, b.cell_models_, strict=True):
        np.testing.assert_array_equal(ma.dual_coef_, mb.dual_coef_)
        np.testing.assert_array_equal(ma.support_, mb.support_)
    np.testing.assert_array_equal(a.decision_function(Xt), b.decision_function(Xt))


def test_a_cell_with_a_rare_class_falls_back_and_says_so():
    rng = np.random.default_rng(3)
    X = np.vstack([rng.normal(-10, 1, (200, 2)), rng.normal(10, 1, (200, 2))])
    y = np.concatenate([rng.integers(0, 2, 200), np.zeros(200, dtype=int)])
    y[200:202] = 1  # two examples of class 1 on the right: fewer than 3 folds
    with pytest.warns(UserWarning, match=r"1 of 2 cell SVMs .* without tuning.*cv=3") as rec:
        clf = CellSVC(n_cells=2, overlap=0.0, tune=True, Cs=2, gammas=2, C=2.0, random_state=0).fit(
            X, y
        )
    assert rec[0].filename == __file__  # the warning points at the caller's fit
    right = int(clf.assign(X[200:201])[0])
    assert not clf.cell_tuned_[right] and clf.cell_tuned_[1 - right]
    assert clf.cell_C_[right] == 2.0
    assert clf.cell_gamma_[right] == clf.kernel_spec_.gamma
    assert np.isnan(clf.cell_cv_score_[right])
    assert clf.cell_models_[right].C == 2.0


def test_a_one_class_cell_has_no_svm_and_no_choice():
    rng = np.random.default_rng(3)
    X = np.vstack([rng.normal(-10, 1, (200, 2)), rng.normal(10, 1, (200, 2))])
    y = np.concatenate([rng.integers(0, 2, 200), np.zeros(200, dtype=int)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clf = CellSVC(n_cells=2, overlap=0.0, tune=True, Cs=2, gammas=2, random_state=0).fit(X, y)
    right = int(clf.assign(X[200:201])[0])
    assert clf.cell_models_[right] is None
    assert np.isnan(clf.cell_C_[right]) and np.isnan(clf.cell_gamma_[right])
    assert not clf.cell_tuned_[right] and clf.cell_tuned_[1 - right]


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"Cs": []}, "Cs must list at least one value"),
        ({"Cs": [1.0, -1.0]}, "Cs must hold positive finite values"),
        ({"Cs": [1.0, 1.0]}, "Cs must not repeat a value"),
        ({"gammas": []}, "gammas must list at least one value"),
        ({"gammas": [0.0, 1.0]}, "gammas must hold positive finite values"),
        ({"gammas": [np.inf]}, "gammas must hold positive finite values"),
        ({"Cs": 0}, "'Cs' parameter"),
        ({"cv": 1}, "'cv' parameter"),
        ({"cv": [(np.arange(3), np.arange(3, 6))]}, "'cv' parameter"),
        ({"tune_size": 1}, "'tune_size' parameter"),
    ],
)
def test_bad_grids_and_folds_name_the_parameter(regions, params, match):
    (X, y), _ = regions
    with pytest.raises(ValueError, match=match):
        CellSVC(n_cells=2, tune=True, **params).fit(X, y)


def test_cv_beyond_every_cells_smallest_class_trains_untuned(regions):
    (X, y), _ = regions
    with pytest.warns(UserWarning, match="2 of 2 cell SVMs"):
        clf = CellSVC(
            n_cells=2, tune=True, Cs=2, gammas=2, cv=50, tune_size=60, random_state=0
        ).fit(X, y)
    assert not clf.cell_tuned_.any()
    np.testing.assert_array_equal(clf.cell_C_, [1.0, 1.0])


def test_pickle_clone_and_params(regions):
    (X, y), (Xt, _) = regions
    clf = CellSVC(n_cells=2, tune=True, Cs=[0.5, 5.0], gammas=2, cv=2, random_state=0)
    params = clf.get_params()
    assert params["tune"] is True and params["Cs"] == [0.5, 5.0] and params["cv"] == 2
    assert params["tune_size"] == "auto"
    assert clone(clf).get_params() == params
    clf.fit(X, y)
    back = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(back.cell_C_, clf.cell_C_)
    np.testing.assert_array_equal(back.decision_function(Xt), clf.decision_function(Xt))


def test_sample_weight_reaches_each_cells_search(regions):
    (X, y), _ = regions
    w = np.ones(y.size)
    w[y == 1] = 5.0
    folds = StratifiedKFold(3)
    kw = dict(
        n_cells=2,
        overlap=0.0,
        tune=True,
        Cs=[0.1, 1.0, 10.0],
        gammas=[0.1, 3.0],
        cv=folds,
        tune_size=None,
        random_state=0,
    )
    weighted = CellSVC(**kw).fit(X, y, sample_weight=w)
    balanced = CellSVC(class_weight={0: 1.0, 1: 5.0}, **kw).fit(X, y)
    np.testing.assert_array_equal(weighted.cell_C_, balanced.cell_C_)
    np.testing.assert_array_equal(weighted.cell_cv_score_, balanced.cell_cv_score_)
    for j in range(2):
        rows = np.flatnonzero(weighted.cell_labels_ == j)
        ref = SVCCV(
            Cs=[0.1, 1.0, 10.0],
            gammas=[0.1, 3.0],
            cv=folds,
            refit=False,
            class_weight={0: 1.0, 1: 5.0},
        ).fit(X[rows], y[rows])
        assert weighted.cell_cv_score_[j] == ref.best_score_
        assert weighted.cell_C_[j] == ref.C_


def test_a_memmap_tunes_each_cell_as_in_memory_rows_do(regions, tmp_path):
    (X, y), (Xt, yt) = regions
    path = tmp_path / "X.npy"
    np.save(path, X)
    folds = StratifiedKFold(3)
    kw = dict(n_cells=2, overlap=0.0, tune=True, Cs=3, gammas=3, cv=folds, tune_size=None)
    clf = CellSVC(random_state=0, **kw).fit(np.load(path, mmap_mode="r"), y)
    assert clf.cell_tuned_.all()
    assert clf.timings_["tune"] > 0
    members = clf.assign(X)
    for j in range(2):
        rows = np.flatnonzero(members == j)
        ref = SVCCV(Cs=3, gammas=3, cv=folds, refit=False).fit(X[rows], y[rows])
        assert clf.cell_C_[j] == ref.C_
        assert clf.cell_gamma_[j] == ref.gamma_
        assert clf.cell_cv_score_[j] == ref.best_score_
    assert clf.score(Xt, yt) > 0.85
    plain = CellSVC(n_cells=2, random_state=0).fit(np.load(path, mmap_mode="r"), y)
    assert not plain.cell_tuned_.any()
    np.testing.assert_array_equal(plain.cell_C_, [1.0, 1.0])


def test_three_classes_tune_each_cells_one_vs_one_svms():
    from sklearn.datasets import make_classification

    X, y = make_classification(
        n_samples=900,
        n_features=5,
        n_informative=4,
        n_redundant=0,
        n_classes=3,
        random_state=0,
    )
    labels = np.array(["a", "b", "c"])[y]
    folds = StratifiedKFold(3)
    clf = CellSVC(
        n_cells=2, overlap=0.0, tune=True, Cs=3, gammas=3, cv=folds, tune_size=None, random_state=0
    ).fit(X, labels)
    for j in range(2):
        rows = np.flatnonzero(clf.cell_labels_ == j)
        ref = SVCCV(Cs=3, gammas=3, cv=folds, refit=False).fit(X[rows], labels[rows])
        assert clf.cell_C_[j] == ref.C_ and clf.cell_gamma_[j] == ref.gamma_
        assert clf.cell_cv_score_[j] == ref.best_score_
    assert set(clf.predict(X)) <= {"a", "b", "c"}
    assert clf.score(X, labels) > 0.8


def test_the_cells_searches_warn_once_for_all_cells(regions):
    """Searches that stop at max_iter give one ConvergenceWarning for every
    cell, counting them, at the caller's fit (not one per cell's search)."""
    from sklearn.exceptions import ConvergenceWarning

    (X, y), _ = regions
    clf = CellSVC(n_cells=3, tune=True, Cs=[1e3], gammas=2, max_iter=5, random_state=0)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        clf.fit(X, y)
    searches = [
        w for w in rec if issubclass(w.category, ConvergenceWarning) and "SVCCV" in str(w.message)
    ]
    assert len(searches) == 1
    tuned = int(clf.cell_tuned_.sum())
    assert tuned >= 2  # several searches warned, one warning says so
    assert f"the searches of {tuned} cells warned" in str(searches[0].message)
    assert searches[0].filename == __file__
