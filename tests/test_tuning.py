"""SVCCV and SVRCV: the same choice as GridSearchCV, bad input, warnings,
determinism, pickling and pipelines."""

from __future__ import annotations

import logging
import pickle
import warnings

import numpy as np
import pytest
from sklearn.datasets import load_iris, make_classification, make_regression
from sklearn.exceptions import ConvergenceWarning, FitFailedWarning
from sklearn.model_selection import GridSearchCV, KFold, StratifiedKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from localsvm import SVC, SVCCV, SVR, SVRCV, get_backend
from localsvm.backends.base import CPath, solve_c_path_generic

CS = [0.1, 1.0, 10.0, 100.0]
GAMMAS = [0.01, 0.05, 0.2]


@pytest.fixture(scope="module")
def binary():
    X, y = make_classification(n_samples=240, n_features=8, flip_y=0.05, random_state=0)
    return X, y


def _grid(est, grid, X, y, **kw):
    return GridSearchCV(est, grid, **kw).fit(X, y)


def test_binary_scores_match_grid_search(binary):
    X, y = binary
    ours = SVCCV(prune=None, Cs=CS, gammas=GAMMAS, cv=5, tol=1e-6, cv_tol=1e-6).fit(X, y)
    ref = _grid(SVC(tol=1e-6), {"C": CS, "gamma": GAMMAS}, X, y, cv=5)
    assert ours.cv_results_["params"] == ref.cv_results_["params"]
    np.testing.assert_allclose(
        ours.cv_results_["mean_test_score"], ref.cv_results_["mean_test_score"], atol=1e-9
    )
    np.testing.assert_array_equal(
        ours.cv_results_["rank_test_score"], ref.cv_results_["rank_test_score"]
    )
    assert ours.best_params_ == ref.best_params_
    assert ours.best_index_ == ref.best_index_
    assert (ours.C_, ours.gamma_) == (ref.best_params_["C"], ref.best_params_["gamma"])
    assert ours.best_score_ == pytest.approx(ref.best_score_)
    np.testing.assert_array_equal(ours.predict(X), ref.predict(X))
    # The refit starts from the folds' multipliers, the grid search's from
    # zero: two solutions at tol=1e-6 of the same dual.
    np.testing.assert_allclose(
        ours.decision_function(X), ref.best_estimator_.decision_function(X), atol=1e-5
    )


def test_multiclass_and_scorer_match_grid_search():
    X, y = load_iris(return_X_y=True)
    for scoring in (None, "balanced_accuracy", "f1_macro"):
        ours = SVCCV(
            prune=None, Cs=CS, gammas=GAMMAS, cv=5, scoring=scoring, tol=1e-6, cv_tol=1e-6
        ).fit(X, y)
        ref = _grid(SVC(tol=1e-6), {"C": CS, "gamma": GAMMAS}, X, y, cv=5, scoring=scoring)
        np.testing.assert_allclose(
            ours.cv_results_["mean_test_score"], ref.cv_results_["mean_test_score"], atol=1e-9
        )
        assert ours.best_params_ == ref.best_params_
    np.testing.assert_array_equal(ours.classes_, np.unique(y))


def test_decision_function_scorer_matches_grid_search(binary):
    X, y = binary
    ours = SVCCV(
        prune=None, Cs=CS, gammas=GAMMAS, cv=3, scoring="roc_auc", tol=1e-6, cv_tol=1e-6
    ).fit(X, y)
    ref = _grid(SVC(tol=1e-6), {"C": CS, "gamma": GAMMAS}, X, y, cv=3, scoring="roc_auc")
    np.testing.assert_allclose(
        ours.cv_results_["mean_test_score"], ref.cv_results_["mean_test_score"], atol=1e-4
    )


def test_svrcv_matches_grid_search():
    X, y = make_regression(n_samples=150, n_features=5, noise=5.0, random_state=0)
    eps = [0.1, 1.0, 5.0]
    ours = SVRCV(prune=None, Cs=CS, gammas=GAMMAS, epsilons=eps, cv=4, tol=1e-6, cv_tol=1e-6).fit(
        X, y
    )
    ref = _grid(SVR(tol=1e-6), {"C": CS, "epsilon": eps, "gamma": GAMMAS}, X, y, cv=4)
    assert ours.cv_results_["params"] == ref.cv_results_["params"]
    np.testing.assert_allclose(
        ours.cv_results_["mean_test_score"], ref.cv_results_["mean_test_score"], atol=1e-5
    )
    assert ours.best_params_ == ref.best_params_
    assert ours.epsilon_ == ref.best_params_["epsilon"]
    assert isinstance(ours.best_estimator_, SVR)


def test_rust_path_matches_generic_path(binary):
    X, y = binary
    rows = np.arange(160)
    lab = np.where(y[rows] == 1, 1.0, -1.0)
    from localsvm import KernelSpec

    path = CPath(
        X=X,
        rows=rows,
        y=lab,
        weights=np.ones(rows.size),
        Cs=np.array(CS),
        valid=np.arange(160, 240),
        kernel=KernelSpec("rbf", gamma=0.05),
        tol=1e-8,
        precision="float64",
    )
    backend = get_backend("rust")
    native = backend.solve_c_path(path)
    generic = solve_c_path_generic(backend, path)
    np.testing.assert_allclose(native.decision, generic.decision, atol=1e-5)
    assert native.converged.all()


@pytest.mark.parametrize("weighted", [False, True])
def test_path_on_the_core_kernel_matrix_matches_independent_fits(binary, weighted):
    """Each C of a path read from a shared ``KernelMatrix`` (the start moved
    from the previous C's solution) gives the decision values of a fit from
    scratch at that C."""
    from localsvm import KernelSpec, _core

    X, y = binary
    rows, valid = np.arange(40, 240), np.arange(40)
    lab = np.where(y[rows] == 1, 1.0, -1.0)
    w = np.where(lab > 0, 2.0, 0.5) if weighted else np.ones(rows.size)
    sq = np.einsum("ij,ij->i", X, X)
    base = np.maximum(sq[:, None] + sq[None, :] - 2.0 * X @ X.T, 0.0)
    gram = _core.KernelMatrix(base, KernelSpec("rbf", gamma=0.05).core())
    assert gram.n == X.shape[0]
    path = CPath(
        X=gram,
        rows=rows,
        y=lab,
        weights=w,
        Cs=np.array(CS),
        valid=valid,
        kernel=KernelSpec("precomputed"),
        tol=1e-8,
        precision="float64",
    )
    out = get_backend("rust").solve_c_path(path)
    assert out.converged.all()
    for k, c in enumerate(CS):
        ref = SVC(C=c, gamma=0.05, tol=1e-8).fit(X[rows], lab, sample_weight=w)
        np.testing.assert_allclose(out.decision[k], ref.decision_function(X[valid]), atol=1e-5)


def test_core_kernel_matrix_refuses_bad_bases():
    from localsvm import KernelSpec, _core

    rbf = KernelSpec("rbf", gamma=1.0).core()
    with pytest.raises(ValueError, match="square"):
        _core.KernelMatrix(np.zeros((3, 2)), rbf)
    with pytest.raises(ValueError, match="float64"):
        _core.KernelMatrix(np.full((2, 2), 1e300), KernelSpec("poly", gamma=1e10).core())
    with pytest.raises(ValueError, match="precomputed"):
        _core.KernelMatrix(np.zeros((2, 2)), KernelSpec("precomputed").core())


def test_default_grids_follow_the_data_scale(binary):
    X, y = binary
    small = SVCCV(Cs=2, gammas=3, cv=3).fit(X, y)
    big = SVCCV(Cs=2, gammas=3, cv=3).fit(X * 10.0, y)
    g_small = np.unique(small.cv_results_["param_gamma"].astype(float))
    g_big = np.unique(big.cv_results_["param_gamma"].astype(float))
    np.testing.assert_allclose(g_small, 100.0 * g_big)
    gs = 1.0 / (X.shape[1] * X.var())
    np.testing.assert_allclose(g_small, gs * np.logspace(-2, 1.5, 3))
    np.testing.assert_allclose(np.unique(small.cv_results_["param_C"].astype(float)), [0.1, 1e3])


@pytest.mark.parametrize(
    ("params", "name"),
    [
        ({"Cs": []}, "Cs"),
        ({"Cs": [1.0, 0.0]}, "Cs"),
        ({"Cs": [1.0, np.inf]}, "Cs"),
        ({"Cs": 0}, "Cs"),
        ({"gammas": [-1.0]}, "gammas"),
        ({"gammas": []}, "gammas"),
        ({"Cs": [1.0, 1.0]}, "Cs"),
        ({"Cs": [[1.0, 10.0]]}, "Cs"),
        ({"gammas": [[0.1], [1.0]]}, "gammas"),
    ],
)
def test_bad_grids_name_the_parameter(binary, params, name):
    X, y = binary
    with pytest.raises(ValueError, match=name):
        SVCCV(cv=3, **params).fit(X, y)


@pytest.mark.parametrize("bad", [[-0.1], [np.nan], [np.inf], []])
def test_bad_epsilons_name_the_parameter(bad):
    X, y = make_regression(n_samples=40, n_features=3, random_state=0)
    with pytest.raises(ValueError, match="epsilons"):
        SVRCV(Cs=2, gammas=2, epsilons=bad, cv=3).fit(X, y)


def test_cv_larger_than_the_smallest_class_and_a_missing_class():
    X, y = load_iris(return_X_y=True)
    X, y = X[:103], y[:103]  # class 2 has 3 members
    with pytest.warns(UserWarning, match="least populated class"):
        search = SVCCV(prune=None, Cs=[1.0, 10.0], gammas=[0.1], cv=5).fit(X, y)
    # Folds without class 2 in training still score: its pairs abstain.
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))
    ref = GridSearchCV(SVC(), {"C": [1.0, 10.0], "gamma": [0.1]}, cv=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref.fit(X, y)
    np.testing.assert_allclose(
        search.cv_results_["mean_test_score"], ref.cv_results_["mean_test_score"]
    )


def test_a_fold_without_two_classes_scores_error_score(binary):
    X, y = binary
    order = np.argsort(y, kind="stable")
    X, y = X[order], y[order]
    n0 = int(np.sum(y == 0))
    # Fold 0 trains on class 0 only.
    folds = [
        (np.arange(n0), np.arange(n0, y.size)),
        (np.arange(0, y.size, 2), np.arange(1, y.size, 2)),
    ]
    with pytest.warns(FitFailedWarning, match="fewer than two classes"):
        search = SVCCV(Cs=[1.0], gammas=[0.1], cv=folds, error_score=-1.0).fit(X, y)
    assert search.cv_results_["split0_test_score"][0] == -1.0
    with pytest.raises(ValueError, match="fewer than two classes"):
        SVCCV(Cs=[1.0], gammas=[0.1], cv=folds, error_score="raise").fit(X, y)
    with pytest.warns(FitFailedWarning):
        nan = SVCCV(Cs=[1.0], gammas=[0.1], cv=folds).fit(X, y)
    assert np.isnan(nan.best_score_)
    assert nan.cv_results_["rank_test_score"][0] == 1


def test_one_convergence_warning_per_search(binary):
    X, y = binary
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        SVCCV(Cs=CS, gammas=GAMMAS, cv=3, max_iter=2).fit(X, y)
    conv = [w for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert len(conv) == 1
    assert "12 candidates" in str(conv[0].message) or "of 12 candidates" in str(conv[0].message)


def test_results_are_deterministic_across_runs(binary):
    X, y = binary
    a = SVCCV(Cs=CS, gammas=GAMMAS, cv=5, n_jobs=2, random_state=3).fit(X, y)
    b = SVCCV(Cs=CS, gammas=GAMMAS, cv=5, n_jobs=2, random_state=3).fit(X, y)
    c = SVCCV(Cs=CS, gammas=GAMMAS, cv=5, n_jobs=1, random_state=3).fit(X, y)
    for k in range(5):
        key = f"split{k}_test_score"
        np.testing.assert_array_equal(a.cv_results_[key], b.cv_results_[key])
        np.testing.assert_array_equal(a.cv_results_[key], c.cv_results_[key])
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X))
    # random_state shuffles the folds of an int cv.
    d = SVCCV(Cs=CS, gammas=GAMMAS, cv=5, random_state=4).fit(X, y)
    assert any(
        not np.array_equal(
            a.cv_results_[f"split{k}_test_score"], d.cv_results_[f"split{k}_test_score"]
        )
        for k in range(5)
    )


def test_pickle_pipeline_and_refit_false(binary):
    X, y = binary
    pipe = make_pipeline(StandardScaler(), SVCCV(Cs=3, gammas=3, cv=3)).fit(X, y)
    clone = pickle.loads(pickle.dumps(pipe))
    np.testing.assert_array_equal(clone.predict(X), pipe.predict(X))
    assert pipe.score(X, y) > 0.8
    bare = SVCCV(Cs=2, gammas=2, cv=3, refit=False).fit(X, y)
    assert not hasattr(bare, "best_estimator_")
    with pytest.raises(AttributeError, match="refit=False"):
        bare.predict(X)


def test_linear_kernel_ignores_gammas(binary):
    X, y = binary
    search = SVCCV(Cs=CS, gammas=[5.0, 6.0], kernel="linear", cv=3).fit(X, y)
    assert len(search.cv_results_["params"]) == len(CS)
    assert search.best_estimator_.kernel == "linear"


def test_verbose_logs_progress(binary, caplog):
    X, y = binary
    with caplog.at_level(logging.INFO, logger="localsvm"):
        SVCCV(Cs=2, gammas=2, cv=3, verbose=1).fit(X, y)
    text = caplog.text
    assert "SVCCV" in text and "best" in text


def test_cv_results_layout(binary):
    X, y = binary
    search = SVCCV(Cs=[10.0, 1.0], gammas=[0.1, 0.01, 0.2], cv=KFold(3)).fit(X, y)
    res = search.cv_results_
    assert [p["C"] for p in res["params"]] == [10.0] * 3 + [1.0] * 3
    assert [p["gamma"] for p in res["params"]] == [0.1, 0.01, 0.2] * 2
    for key in ("mean_fit_time", "std_fit_time", "mean_score_time", "std_test_score"):
        assert res[key].shape == (6,)
    assert res["param_C"][0] == 10.0
    assert search.n_splits_ == 3
    assert search.best_params_ == res["params"][search.best_index_]


def test_sparse_input_matches_dense(binary):
    import scipy.sparse as sp

    X, y = binary
    dense = SVCCV(Cs=CS, gammas=GAMMAS, cv=StratifiedKFold(3)).fit(X, y)
    sparse = SVCCV(Cs=CS, gammas=GAMMAS, cv=StratifiedKFold(3)).fit(sp.csr_matrix(X), y)
    np.testing.assert_allclose(
        dense.cv_results_["mean_test_score"], sparse.cv_results_["mean_test_score"], atol=0.02
    )


def test_class_weight_matches_grid_search(binary):
    X, y = binary
    cw = {0: 1.0, 1: 3.0}
    ours = SVCCV(
        prune=None, Cs=CS, gammas=GAMMAS, cv=3, class_weight=cw, tol=1e-6, cv_tol=1e-6
    ).fit(X, y)
    ref = _grid(SVC(class_weight=cw, tol=1e-6), {"C": CS, "gamma": GAMMAS}, X, y, cv=3)
    np.testing.assert_allclose(
        ours.cv_results_["mean_test_score"], ref.cv_results_["mean_test_score"], atol=1e-9
    )
    np.testing.assert_allclose(ours.class_weight_, [1.0, 3.0])
    with pytest.raises(ValueError, match="class_weight"):
        SVCCV(prune=None, Cs=2, gammas=2, cv=3, class_weight={7: 1.0}).fit(X, y)


@pytest.mark.parametrize("seed", [48, 58])
def test_balanced_weights_at_small_c_score_as_fits(seed):
    """With class_weight='balanced' both classes' bounded multipliers carry
    the same mass, and at a small C every multiplier sits at its bound, so
    any intercept of an interval is optimal: the path's solves and a fit
    from zero must take the same one (a multiplier that SMO's steps left a
    rounding inside its box set it alone, and which one that was depended
    on where the solve started: held-out accuracy 0.25 where the fit scored
    0.75)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(60, 5))
    y = (rng.random(60) < 0.3).astype(int)
    X[:, 0] += y
    fold = next(StratifiedKFold(3, shuffle=True, random_state=0).split(X, y))
    cs, gamma = [0.05, 0.1, 0.2, 0.4], 0.01
    ours = SVCCV(
        Cs=cs,
        gammas=[gamma],
        cv=[fold],
        class_weight="balanced",
        prune=None,
        tol=1e-7,
        cv_tol=1e-7,
    ).fit(X, y)
    train, valid = fold
    for i, params in enumerate(ours.cv_results_["params"]):
        fit = SVC(C=params["C"], gamma=gamma, class_weight="balanced", tol=1e-7)
        fit.fit(X[train], y[train])
        assert ours.cv_results_["split0_test_score"][i] == fit.score(X[valid], y[valid])


def test_shared_and_per_fold_kernels_agree(binary):
    X, y = binary
    a = SVCCV(Cs=CS, gammas=GAMMAS, cv=3, kernel_matrix="shared", tol=1e-6, cv_tol=1e-6).fit(X, y)
    b = SVCCV(Cs=CS, gammas=GAMMAS, cv=3, kernel_matrix="per_fold", tol=1e-6, cv_tol=1e-6).fit(X, y)
    np.testing.assert_allclose(
        a.cv_results_["mean_test_score"], b.cv_results_["mean_test_score"], atol=1e-9
    )
    for kernel in ("poly", "sigmoid"):
        a = SVCCV(Cs=[1.0], gammas=[0.05], kernel=kernel, cv=3, kernel_matrix="shared").fit(X, y)
        b = SVCCV(Cs=[1.0], gammas=[0.05], kernel=kernel, cv=3, kernel_matrix="per_fold").fit(X, y)
        np.testing.assert_allclose(
            a.cv_results_["mean_test_score"], b.cv_results_["mean_test_score"], atol=0.02
        )


def test_default_cv_tolerance_keeps_the_grid_choice(binary):
    X, y = binary
    ours = SVCCV(prune=None, Cs=CS, gammas=GAMMAS, cv=5).fit(X, y)
    ref = _grid(SVC(), {"C": CS, "gamma": GAMMAS}, X, y, cv=5)
    grid_scores = ref.cv_results_["mean_test_score"]
    assert grid_scores[ours.best_index_] >= grid_scores.max() - 0.01
    np.testing.assert_allclose(ours.cv_results_["mean_test_score"], grid_scores, atol=0.02)


def _overfitting_problem():
    """Noisy labels on few rows: held-out accuracy falls as C grows past
    its best value at a wide kernel."""
    X, y = make_classification(
        n_samples=300, n_features=10, n_informative=3, flip_y=0.3, random_state=0
    )
    return StandardScaler().fit_transform(X), y


def test_pruned_candidates_are_nan_rank_last_and_keep_the_choice():
    X, y = _overfitting_problem()
    grid = dict(Cs=np.logspace(-1, 4, 8), gammas=[0.03, 0.3], cv=5, random_state=0)
    full = SVCCV(prune=None, **grid).fit(X, y)
    fast = SVCCV(prune=0.5, **grid).fit(X, y)
    mean = fast.cv_results_["mean_test_score"]
    left_out = np.isnan(mean)
    assert left_out.any(), "the noisy problem should let the early stop fire"
    assert not np.isnan(full.cv_results_["mean_test_score"]).any()
    # Scored candidates score exactly as in the full search.
    np.testing.assert_array_equal(mean[~left_out], full.cv_results_["mean_test_score"][~left_out])
    ranks = fast.cv_results_["rank_test_score"]
    assert ranks[left_out].min() > ranks[~left_out].max()
    # What is left out on a fold is the large C end of a path, or a whole
    # gamma after the first fold (which scored it).
    res = fast.cv_results_
    c = res["param_C"].astype(float)
    splits = np.stack([res[f"split{k}_test_score"] for k in range(5)], axis=1)
    for g in grid["gammas"]:
        at = res["param_gamma"].astype(float) == g
        for k in range(5):
            out = at & np.isnan(splits[:, k])
            if out.any() and (at & ~out).any():
                assert c[out].min() > c[at & ~out].max()
        if np.isnan(splits[at, 1:]).all():
            assert not np.isnan(splits[at, 0]).all()
    assert fast.best_params_ == full.best_params_
    assert fast.n_iter_.sum() < full.n_iter_.sum()


def _race_problem():
    """Two classes on a smooth boundary: a far too narrow kernel (gamma
    100) is clearly beaten at every C on any fold."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((400, 4))
    y = (X[:, 0] + 0.5 * X[:, 1] ** 2 > 0.3).astype(int)
    return X, y


@pytest.mark.parametrize("kernel_matrix", ["shared", "per_fold"])
def test_race_leaves_a_beaten_gamma_out_after_the_first_fold(caplog, kernel_matrix):
    X, y = _race_problem()
    grid = dict(Cs=[0.1, 1.0, 10.0], gammas=[0.1, 0.3, 100.0], cv=4, kernel_matrix=kernel_matrix)
    full = SVCCV(prune=None, **grid).fit(X, y)
    with caplog.at_level(logging.INFO, logger="localsvm.tuning"):
        raced = SVCCV(verbose=1, **grid).fit(X, y)
    assert "after fold 0, 1 of 3 gammas left out" in caplog.text
    res, ref = raced.cv_results_, full.cv_results_
    narrow = res["param_gamma"].astype(float) == 100.0
    # The first fold scores it as the full search does; the others leave it out.
    np.testing.assert_array_equal(res["split0_test_score"], ref["split0_test_score"])
    for k in range(1, 4):
        assert np.isnan(res[f"split{k}_test_score"][narrow]).all()
    assert np.isnan(res["mean_test_score"][narrow]).all()
    assert res["rank_test_score"][narrow].min() > res["rank_test_score"][~narrow].max()
    kept = ~np.isnan(res["mean_test_score"])
    np.testing.assert_array_equal(res["mean_test_score"][kept], ref["mean_test_score"][kept])
    assert raced.best_params_ == full.best_params_
    assert raced.n_iter_.sum() < full.n_iter_.sum()
    # Two folds are no race: every variant is scored on both.
    two = SVCCV(**{**grid, "cv": 2}).fit(X, y)
    assert not np.isnan(two.cv_results_["split1_test_score"][narrow]).any()
    # Nor are folds of too few rows to judge by (here 40 rows in 10 folds).
    few = SVCCV(**{**grid, "cv": 10}).fit(X[:40], y[:40])
    assert not np.isnan(few.cv_results_["split9_test_score"][narrow]).any()


def test_race_judges_by_a_paired_test_on_the_folds_so_far():
    from localsvm.tuning import _race

    valid = np.arange(200)

    def path(*decisions, pruned_from=None, errors=None):
        d = np.stack([np.asarray(x, dtype=float) for x in decisions])[:, :, None]
        n = d.shape[0]
        return (d, None, None, errors or [None] * n, n if pruned_from is None else pruned_from, 0)

    def loss(decision, valid):
        return (decision[valid, 0] > 0).astype(float)  # wrong where positive

    right = -np.ones(200)
    few = right.copy()
    few[:3] = 1.0  # 3 more rows wrong than the best: not clearly worse
    many = right.copy()
    many[:40] = 1.0  # 40 more: clearly worse
    first = [
        [path(many, right)],  # the best, at its second C
        [path(few, many)],  # its first C is within noise of the best
        [path(many, many)],  # beaten everywhere
        [path(many, right, pruned_from=1)],  # its second C left unsolved: beaten
        [path(many, right, errors=[None, "ValueError: x"])],  # a failed solve is kept
        None,  # out already
    ]
    caps = np.array([2, 2, 2, 2, 2, 0])
    np.testing.assert_array_equal(_race(first, loss, [valid], 2.0, caps), [2, 1, 0, 0, 2, 0])
    # With no margin, anything worse than the best is beaten.
    np.testing.assert_array_equal(_race(first, loss, [valid], 0.0, caps), [2, 0, 0, 0, 2, 0])
    # A variant never goes past what it solved so far.
    np.testing.assert_array_equal(
        _race(first, loss, [valid], 2.0, np.array([2, 2, 2, 2, 1, 0])), [2, 1, 0, 0, 0, 0]
    )
    # Over two folds the rows pool: 3 more wrong rows out of 200 are noise
    # on one fold (above), but 3 more on each of two folds are not.
    two = [[p, p] for p in (path(right), path(few))] + [[path(right), path(right)]]
    np.testing.assert_array_equal(
        _race(two, loss, [valid, valid], 2.0, np.array([1, 1, 1])), [1, 0, 1]
    )


def test_svrcv_race_keeps_the_choice():
    X, y = make_regression(n_samples=240, n_features=4, noise=10.0, random_state=2)
    grid = dict(Cs=4, gammas=[0.01, 0.1, 30.0], epsilons=2, cv=4)
    full = SVRCV(prune=None, **grid).fit(X, y)
    raced = SVRCV(**grid).fit(X, y)
    assert raced.best_params_ == full.best_params_
    res = raced.cv_results_
    narrow = res["param_gamma"].astype(float) == 30.0
    assert np.isnan(res["split3_test_score"][narrow]).all()
    assert not np.isnan(res["split0_test_score"][narrow]).any()


def test_path_early_stop_solves_a_prefix_of_the_full_path(binary):
    from localsvm import KernelSpec

    X, y = _overfitting_problem()
    rows, valid = np.arange(60, 300), np.arange(60)
    lab = np.where(y[rows] == 1, 1.0, -1.0)
    target = np.where(y[valid] == 1, 1.0, -1.0)
    kw = dict(
        X=X,
        rows=rows,
        y=lab,
        weights=np.ones(rows.size),
        Cs=np.logspace(-1, 5, 10),
        valid=valid,
        kernel=KernelSpec("rbf", gamma=0.03),
        target=target,
    )
    backend = get_backend("rust")
    full = backend.solve_c_path(CPath(**kw))
    cut = backend.solve_c_path(CPath(prune=0.0, **kw))
    assert full.stopped is None
    assert cut.stopped is not None and 2 <= cut.stopped < 10
    k = cut.stopped
    np.testing.assert_array_equal(cut.decision[:k], full.decision[:k])
    assert np.isnan(cut.decision[k:]).all()
    # The two C values before the stop are each worse than the best error.
    err = (np.sign(full.decision) != target).mean(axis=1)
    assert err[k - 1] > err[:k].min() and err[k - 2] > err[: k - 1].min()
    with pytest.raises(ValueError, match="target"):
        CPath(prune=1.0, **{**kw, "target": None}).validate()
    with pytest.raises(ValueError, match="prune"):
        CPath(prune=-1.0, **kw).validate()


def test_svrcv_prune_keeps_the_choice():
    X, y = make_regression(n_samples=200, n_features=5, noise=30.0, random_state=1)
    grid = dict(Cs=6, gammas=2, epsilons=2, cv=4)
    full = SVRCV(prune=None, **grid).fit(X, y)
    fast = SVRCV(**grid).fit(X, y)
    assert fast.best_params_ == full.best_params_
    scored = ~np.isnan(fast.cv_results_["mean_test_score"])
    np.testing.assert_allclose(
        fast.cv_results_["mean_test_score"][scored],
        full.cv_results_["mean_test_score"][scored],
    )


@pytest.mark.parametrize(("n_features", "shared"), [(4, False), (64, True)])
def test_auto_shares_kernel_matrices_from_64_features(caplog, n_features, shared):
    """'auto' computes a few features' kernel values per fold (cheaper than a
    matrix per gamma) and shares matrices from 64 features on."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((60, n_features))
    y = (X[:, 0] + 0.3 * rng.standard_normal(60) > 0).astype(int)
    with caplog.at_level(logging.INFO, logger="localsvm"):
        SVCCV(Cs=[1.0], gammas=[0.1], cv=3, verbose=2).fit(X, y)
    said = " ".join(r.getMessage() for r in caplog.records)
    assert ("shared across folds" in said) == shared
    assert ("computed per fold" in said) == (not shared)


@pytest.mark.parametrize("seed", [0, 3, 4])
def test_race_keeps_a_choice_within_the_full_grids_best(seed):
    """On noisy multiclass problems the raced search's choice scores within
    0.002 of the full grid's best mean (the documented promise), on fewer
    iterations."""
    rng = np.random.default_rng(seed)
    X, y = make_classification(
        n_samples=500,
        n_features=10,
        n_informative=3,
        n_classes=3,
        n_clusters_per_class=1,
        flip_y=float(rng.uniform(0.05, 0.3)),
        random_state=seed,
    )
    X = StandardScaler().fit_transform(X)
    grid = dict(Cs=6, gammas=6, cv=5, scoring="balanced_accuracy" if seed else None)
    full = SVCCV(prune=None, **grid).fit(X, y)
    raced = SVCCV(**grid).fit(X, y)
    mean = full.cv_results_["mean_test_score"]
    assert mean.max() - mean[raced.best_index_] <= 0.002
    assert np.isnan(raced.cv_results_["mean_test_score"]).any()
    assert raced.n_iter_.sum() < full.n_iter_.sum()


@pytest.mark.parametrize("fits", [True, False])
def test_race_keeps_the_matrices_between_rounds_when_they_fit(monkeypatch, fits):
    """A raced search builds each gamma's shared matrix once when all of
    them fit the memory budget, and again in each round otherwise; the
    scores are the same."""
    import localsvm.tuning as tuning

    X, y = _race_problem()
    grid = dict(Cs=[0.1, 1.0, 10.0], gammas=[0.1, 0.3, 100.0], cv=4, kernel_matrix="shared")
    ref = SVCCV(prune=None, **grid).fit(X, y)
    n = X.shape[0]
    # Kept: the float64 base and all three matrices (4 or 8 bytes a value).
    budget = float("inf") if fits else n * n * (8 + 4 * 4) - 1
    monkeypatch.setattr(tuning, "memory_budget", lambda: float(budget))
    built = []
    real = tuning._SharedKernels._build

    def counting(self, v):
        if v not in self.mats:
            built.append(v)
        return real(self, v)

    monkeypatch.setattr(tuning._SharedKernels, "_build", counting)
    raced = SVCCV(**grid).fit(X, y)
    kept = ~np.isnan(raced.cv_results_["mean_test_score"])
    np.testing.assert_array_equal(
        raced.cv_results_["mean_test_score"][kept], ref.cv_results_["mean_test_score"][kept]
    )
    survivors = 2  # gamma=100 races out after the first fold
    assert sorted(set(built)) == [0, 1, 2]
    if fits:
        assert len(built) == 3
    else:
        # Rounds after fold 0 and fold 1, then folds 2-3: the survivors'
        # matrices are built in each.
        assert len(built) >= 3 + 2 * survivors


def test_paths_keep_feasible_multipliers_per_c(binary):
    """keep_alpha: each C's multipliers, in the box and on yᵀα = 0, the same
    from the core's path and the generic one; NaN past the early stop."""
    X, y = binary
    rows = np.arange(160)
    lab = np.where(y[rows] == 1, 1.0, -1.0)
    weights = np.where(lab > 0, 1.0, 2.0)
    from localsvm import KernelSpec

    kw = dict(
        X=X,
        rows=rows,
        y=lab,
        weights=weights,
        Cs=np.array(CS),
        valid=np.arange(160, 240),
        kernel=KernelSpec("rbf", gamma=0.05),
        tol=1e-8,
        precision="float64",
        keep_alpha=True,
    )
    backend = get_backend("rust")
    native = backend.solve_c_path(CPath(**kw))
    generic = solve_c_path_generic(backend, CPath(**kw))
    assert native.alpha.shape == generic.alpha.shape == (len(CS), rows.size)
    for k, c in enumerate(CS):
        a = native.alpha[k]
        assert np.all(a >= 0) and np.all(a <= c * weights * (1 + 1e-12))
        assert abs(a @ lab) < 1e-9 * c * rows.size
    np.testing.assert_allclose(native.alpha, generic.alpha, atol=1e-4 * max(CS))
    assert backend.solve_c_path(CPath(**{**kw, "keep_alpha": False})).alpha is None
    # Held-out targets the path fits worse as C grows (the labels flipped)
    # stop it early: the C values left unsolved keep no multipliers.
    cut = backend.solve_c_path(
        CPath(**{**kw, "prune": 0.0, "target": -np.where(y[160:] == 1, 1.0, -1.0)})
    )
    assert cut.stopped is not None and 0 < cut.stopped < len(CS)
    assert np.isnan(cut.alpha[cut.stopped :]).all()
    assert np.isfinite(cut.alpha[: cut.stopped]).all()


def _cold_refit(search, X, y):
    """The search's refit model fitted again from zero."""
    from sklearn.base import clone

    return clone(search.best_estimator_).fit(X, y)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_svccv_refit_starts_from_the_folds(monkeypatch, n_classes):
    """The refit starts from the folds' multipliers: per pair, a feasible
    start on the pair's rows only (in the box, yᵀα = 0), and the model a
    refit from zero gives (the dual's optimum)."""
    X, y = make_classification(
        n_samples=600,
        n_features=10,
        n_informative=6,
        n_classes=n_classes,
        flip_y=0.1,
        random_state=1,
    )
    starts = []
    fit = SVC.fit

    def spy(self, *args, **kwargs):
        starts.append(self.__dict__.get("_alpha_start"))
        return fit(self, *args, **kwargs)

    monkeypatch.setattr(SVC, "fit", spy)
    search = SVCCV(Cs=[10.0, 100.0, 1000.0], gammas=[0.05, 0.1], cv=5, tol=1e-5).fit(X, y)
    (start,) = starts
    pairs = [(a, b) for a in range(n_classes) for b in range(a + 1, n_classes)]
    assert len(start) == len(pairs)
    for (a, b), alpha in zip(pairs, start, strict=True):
        rows = (y == a) | (y == b)
        assert np.all(alpha[~rows] == 0) and np.count_nonzero(alpha[rows]) > 0
        assert np.all(alpha >= 0) and np.all(alpha <= search.C_ * (1 + 1e-12))
        labels = np.where(y == a, 1.0, -1.0)
        assert abs(labels @ alpha) < 1e-9 * alpha.sum()
    cold = _cold_refit(search, X, y)
    warm = search.best_estimator_
    assert "_alpha_start" not in warm.__dict__
    np.testing.assert_allclose(
        warm.decision_function(X), cold.decision_function(X), atol=1e-2, rtol=1e-2
    )
    assert np.mean(warm.predict(X) == cold.predict(X)) >= 0.99
    np.testing.assert_allclose(warm.dual_objective_, cold.dual_objective_, rtol=1e-4)


def test_svrcv_refit_starts_from_the_folds(monkeypatch):
    """SVRCV's refit from the folds' multipliers: the same model, fewer
    iterations; with a budget too small for them, the refit from zero."""
    import localsvm.tuning as tuning

    X, y = make_regression(n_samples=400, n_features=5, noise=5.0, random_state=0)
    X = StandardScaler().fit_transform(X)
    y = (y - y.mean()) / y.std()
    kw = dict(Cs=[10.0, 100.0, 1000.0], gammas=[0.02, 0.05], epsilons=[0.1], cv=5, tol=1e-5)
    search = SVRCV(**kw).fit(X, y)
    cold = _cold_refit(search, X, y)
    warm = search.best_estimator_
    np.testing.assert_allclose(warm.predict(X), cold.predict(X), atol=1e-2)
    np.testing.assert_allclose(warm.dual_objective_, cold.dual_objective_, rtol=1e-4)
    assert warm.n_iter_ < 0.8 * cold.n_iter_
    monkeypatch.setattr(tuning, "WARM_REFIT_BYTES", 0)
    unstarted = SVRCV(**kw).fit(X, y)
    assert unstarted.best_params_ == search.best_params_
    assert unstarted.best_estimator_.n_iter_ == cold.n_iter_
