"""FLSA-SVM and Reduced FLSA-SVM: the path equals least squares at every
step, greedy choices, pruning, contexts inheritance, CV along the path, and
clear errors for bad input."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.exceptions import NotFittedError

from conftest import runs_detached
from localsvm import (
    FLSAClassifier,
    FLSAClassifierCV,
    FLSARankWarning,
    RFLSAClassifier,
    _core,
)
from localsvm.datasets import load_banana, load_iris
from localsvm.kernels import KernelSpec, kernel_matrix_numpy


@pytest.fixture(scope="module")
def banana():
    return load_banana(0)


@pytest.fixture(scope="module")
def small():
    X, y = make_classification(
        n_samples=80, n_features=4, n_informative=3, n_redundant=0, random_state=1
    )
    return X, y


def design(X, support, gamma):
    K = kernel_matrix_numpy(KernelSpec("rbf", gamma=gamma), X, X[support])
    return np.column_stack([np.ones(X.shape[0]), K])


def test_every_prefix_is_the_least_squares_fit(small):
    X, y = small
    t = np.where(y == 1, 1.0, -1.0)
    clf = FLSAClassifier(n_support=15, gamma=0.5).fit(X, y)
    path = clf.path_[0]
    assert len(path) == 15
    for k in range(16):
        b, beta = path.coef(k)
        A = design(X, path.support[:k], 0.5)
        want, *_ = np.linalg.lstsq(A, t, rcond=None)
        np.testing.assert_allclose(np.r_[b, beta], want, atol=1e-8, rtol=1e-8)
        resid = t - A @ want
        np.testing.assert_allclose(path.residual_sq[k], resid @ resid, rtol=1e-9, atol=1e-9)


def test_greedy_takes_the_largest_error_reduction(small):
    X, y = small
    t = np.where(y == 1, 1.0, -1.0)
    path = FLSAClassifier(n_support=6, gamma=0.5).fit(X, y).path_[0]
    for k in range(6):
        prefix = list(path.support[:k])

        def sse(c, prefix=prefix):
            A = design(X, [*prefix, c], 0.5)
            r = t - A @ np.linalg.lstsq(A, t, rcond=None)[0]
            return r @ r

        errors = {c: sse(c) for c in range(X.shape[0]) if c not in prefix}
        best = min(errors, key=errors.get)
        assert path.support[k] == best or np.isclose(errors[path.support[k]], errors[best])


def test_path_models_equal_fresh_fits(small):
    X, y = small
    full = FLSAClassifier(n_support=20, gamma=0.5).fit(X, y)
    staged = full.path_decision_function(X)
    assert staged.shape == (21, X.shape[0])
    for k in (1, 5, 12, 20):
        fresh = FLSAClassifier(n_support=k, gamma=0.5).fit(X, y)
        model = full.sparse_model(k)
        np.testing.assert_array_equal(model.support_, fresh.support_)
        np.testing.assert_allclose(model.dual_coef_, fresh.dual_coef_, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(model.intercept_, fresh.intercept_, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(staged[k], fresh.decision_function(X), atol=1e-8)
    stages = list(full.staged_decision_function(X))
    assert len(stages) == 20
    np.testing.assert_allclose(stages[-1], full.decision_function(X), atol=1e-8)
    preds = list(full.staged_predict(X))
    np.testing.assert_array_equal(preds[-1], full.predict(X))


def test_on_the_fly_columns_match_the_block(small):
    X, y = small
    a = FLSAClassifier(n_support=12, gamma=0.5, gram="precomputed").fit(X, y)
    b = FLSAClassifier(n_support=12, gamma=0.5, gram="on_the_fly").fit(X, y)
    assert a.gram_ == "precomputed" and b.gram_ == "on_the_fly"
    np.testing.assert_array_equal(a.support_, b.support_)
    np.testing.assert_allclose(a.dual_coef_, b.dual_coef_, rtol=1e-8, atol=1e-8)


def test_duplicated_points_are_pruned_and_rank_stops_early():
    rng = np.random.RandomState(0)
    base = rng.randn(10, 2)
    X = np.vstack([base, base, base])  # every column appears three times
    y = np.tile(np.where(base[:, 0] > 0, 1, -1), 3)
    with pytest.warns(FLSARankWarning, match="linearly dependent"):
        clf = FLSAClassifier(n_support=25, gamma=0.5).fit(X, y)
    path = clf.path_[0]
    assert path.exhausted and len(path) <= 10
    assert len(set(map(tuple, X[path.support]))) == len(path)  # no duplicate SV
    assert path.n_pruned >= 20
    # A linear kernel in 2-D: [1, K] has rank 3, so at most 2 kernel columns.
    with pytest.warns(FLSARankWarning):
        lin = FLSAClassifier(n_support=10, kernel="linear").fit(X, y)
    assert lin.n_support_[0] <= 2
    with pytest.warns(FLSARankWarning):
        RFLSAClassifier(n_support=25, gamma=0.5, random_state=0).fit(X, y)


def test_random_mode_is_reproducible(small):
    X, y = small
    a = RFLSAClassifier(n_support=10, random_state=3).fit(X, y)
    b = RFLSAClassifier(n_support=10, random_state=3).fit(X, y)
    c = RFLSAClassifier(n_support=10, random_state=4).fit(X, y)
    np.testing.assert_array_equal(a.path_[0].support, b.path_[0].support)
    np.testing.assert_array_equal(a.dual_coef_, b.dual_coef_)
    assert not np.array_equal(a.path_[0].support, c.path_[0].support)
    # The dictionary: 20 random columns, taken in a random order.
    d = RFLSAClassifier(n_support=30, dictionary_size=20, random_state=3)
    with pytest.warns(FLSARankWarning):
        d.fit(X, y)
    assert len(d.path_[0]) == 20
    order = np.random.RandomState(3).permutation(X.shape[0])[:20]
    np.testing.assert_array_equal(d.path_[0].support, order)
    # Greedy over a fraction of the points draws that many candidates.
    g = FLSAClassifier(n_support=5, dictionary_size=0.25, random_state=0).fit(X, y)
    allowed = np.sort(np.random.RandomState(0).choice(80, size=20, replace=False))
    assert set(g.path_[0].support) <= set(allowed)


def test_multiclass_one_vs_rest():
    d = load_iris()
    clf = FLSAClassifier(n_support=10, gamma=0.5).fit(d.X, d.y)
    assert len(clf.path_) == 3
    assert clf.dual_coef_.shape == (3, clf.support_.size)
    dec = clf.decision_function(d.X)
    assert dec.shape == (150, 3)
    assert clf.score(d.X, d.y) > 0.9
    for c, p in enumerate(clf.path_):
        b, beta = p.coef(10)
        K = kernel_matrix_numpy(KernelSpec("rbf", gamma=0.5), d.X, d.X[p.support])
        np.testing.assert_allclose(dec[:, c], K @ beta + b, atol=1e-8)
    assert clf.path_decision_function(d.X).shape == (11, 150, 3)


def test_precomputed_kernel_matches_rbf(small):
    X, y = small
    K = kernel_matrix_numpy(KernelSpec("rbf", gamma=0.5), X, X)
    a = FLSAClassifier(n_support=8, gamma=0.5).fit(X, y)
    b = FLSAClassifier(n_support=8, kernel="precomputed").fit(K, y)
    np.testing.assert_array_equal(a.support_, b.support_)
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(K), atol=1e-8)


def test_cv_warns_when_no_n_support_beats_chance(banana):
    # The probe: random sparse rows with very many features. The RBF kernel
    # is nearly a constant plus the identity, every k validates at chance,
    # and the chosen model fit the training data at 0.54 without a word.
    import scipy.sparse as sp

    X = sp.random(120, 20_000, density=0.01, random_state=0, format="csr")
    y = np.random.default_rng(0).integers(0, 2, 120)
    with pytest.warns(UserWarning, match="no n_support that beats chance"):
        cv = FLSAClassifierCV(n_support=10, cv=3, random_state=0).fit(X, y)
    assert cv.mean_cv_scores_[cv.best_n_support_] < 0.5 + 2 * np.sqrt(0.25 / 120) + 0.01
    # Data the kernel does generalise on is chosen for silently.
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        FLSAClassifierCV(n_support=10, gamma=1.0, cv=3).fit(banana.X_train, banana.y_train)


def test_cv_picks_the_validation_optimum(banana):
    X, y = banana.X_train, banana.y_train
    cv = FLSAClassifierCV(n_support=50, gamma=1.0, cv=4).fit(X, y)
    assert cv.cv_scores_.shape == (4, 51)
    best = 1 + int(np.argmax(cv.mean_cv_scores_[1:]))
    assert cv.best_n_support_ == best
    assert cv.n_support_[0] == best and len(cv.path_[0]) == 50
    # The fold scores are the scores of plain fits on the folds.
    from sklearn.model_selection import StratifiedKFold

    train, val = next(StratifiedKFold(4).split(X, y))
    fold = FLSAClassifier(n_support=50, gamma=1.0).fit(X[train], y[train])
    np.testing.assert_allclose(cv.cv_scores_[0], fold.path_score(X[val], y[val]))
    assert cv.score(banana.X_test, banana.y_test) > 0.86


def test_banana_accuracy_with_few_support_vectors(banana):
    clf = FLSAClassifier(n_support=40, gamma=1.0).fit(banana.X_train, banana.y_train)
    scores = clf.path_score(banana.X_test, banana.y_test)
    assert scores[20:41].max() >= 0.885
    rf = RFLSAClassifier(n_support=40, gamma=1.0, random_state=0).fit(
        banana.X_train, banana.y_train
    )
    assert rf.score(banana.X_test, banana.y_test) > 0.86


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"n_support": 0}, "n_support"),
        ({"n_support": 2.5}, "n_support"),
        ({"dictionary_size": 0}, "dictionary_size"),
        ({"dictionary_size": 1.5}, "dictionary_size"),
        ({"dictionary_size": 1000}, "dictionary_size"),
        ({"selection": "best"}, "selection"),
        ({"tol": 0.0}, "tol"),
        ({"tol": 1.0}, "tol"),
        ({"gram": "dense"}, "gram"),
        ({"gamma": -1.0}, "gamma"),
        ({"kernel": "cubic"}, "kernel"),
    ],
)
def test_bad_parameters_name_the_parameter(small, params, match):
    X, y = small
    with pytest.raises(ValueError, match=match):
        FLSAClassifier(**params).fit(X, y)


def test_bad_data_is_a_clear_error(small):
    X, y = small
    with pytest.raises(ValueError, match=r"NaN|infinity"):
        FLSAClassifier().fit(np.where(np.eye(80, 4) == 1, np.nan, X), y)
    with pytest.raises(ValueError, match="class"):
        FLSAClassifier().fit(X, np.ones(80))
    with pytest.raises(ValueError, match="square"):
        FLSAClassifier(kernel="precomputed").fit(X, y)
    with pytest.raises(NotFittedError):
        FLSAClassifier().predict(X)
    clf = FLSAClassifier(n_support=5).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        clf.predict(X[:, :3])
    with pytest.raises(ValueError, match="k must be"):
        clf.sparse_model(-1)
    # The core's own checks, without the estimator in front.
    with pytest.raises(ValueError, match="candidates"):
        _core.flsa_path(X, np.ones(80), np.array([80]))
    with pytest.raises(TypeError, match="selection"):
        _core.FLSAOptions(selection="best")
    with pytest.raises(ValueError, match="max_terms"):
        _core.FLSAOptions(max_terms=-1)
    with pytest.raises(ValueError, match="y has"):
        _core.flsa_path(X, np.ones(79), np.arange(3))


def test_pickle_round_trip(small):
    X, y = small
    clf = FLSAClassifier(n_support=6).fit(X, y)
    back = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(back.decision_function(X), clf.decision_function(X))


def test_core_releases_the_gil():
    """While an FLSA pass runs in one thread, another thread executes Python."""
    rng = np.random.RandomState(0)
    X = rng.randn(800, 10)
    y = np.sign(rng.randn(800))
    cand = np.arange(800)
    assert runs_detached(
        lambda: _core.flsa_path(
            X,
            y,
            cand,
            kernel=_core.Kernel("rbf", 0.1),
            options=_core.FLSAOptions(max_terms=30, gram=_core.FLSAGram.ON_THE_FLY),
        )
    )


def test_flsa_cv_names_the_fold_and_the_data_size():
    X, y = make_classification(n_samples=40, n_features=4, random_state=0)
    for size in (33, 100):
        with pytest.raises(
            ValueError, match=r"fold \(32 of the 40 training examples\).*at most 32.*cv"
        ):
            FLSAClassifierCV(dictionary_size=size, cv=5).fit(X, y)
    # A count that fits every fold, and a fraction, are fine.
    FLSAClassifierCV(dictionary_size=32, n_support=5, cv=5).fit(X, y)
    FLSAClassifierCV(dictionary_size=0.9, n_support=5, cv=5).fit(X, y)
