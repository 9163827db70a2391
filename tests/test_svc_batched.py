"""SVC's batched working sets (solver='batched', rust/src/batched.rs): the
same dual optimum as SMO, the KKT conditions, determinism, the reported
choice and the refusals."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_classification
from sklearn.metrics.pairwise import rbf_kernel

from localsvm import SVC, NuSVC


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(
        n_samples=2500,
        n_features=12,
        n_informative=8,
        n_clusters_per_class=4,
        flip_y=0.05,
        random_state=3,
    )
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    return X, y


def _violation(clf, X, y):
    """The maximal KKT violation of the fitted binary dual, from float64
    kernel values."""
    s = np.where(y == clf.classes_[1], 1.0, -1.0)
    alpha = np.zeros(len(y))
    alpha[clf.support_] = np.abs(clf.dual_coef_[0])
    K = rbf_kernel(X, X[clf.support_], gamma=clf._spec.gamma)
    g = s * (K @ (s[clf.support_] * alpha[clf.support_])) - 1.0
    up = np.where(s > 0, alpha < clf.C, alpha > 0)
    low = np.where(s > 0, alpha > 0, alpha < clf.C)
    return np.max(-s[up] * g[up]) + np.max(s[low] * g[low])


def test_batched_reaches_the_smo_optimum(data):
    X, y = data
    smo = SVC(solver="smo", cache_size=50).fit(X, y)
    bat = SVC(solver="batched", cache_size=50).fit(X, y)
    assert smo.solver_ == "smo"
    assert bat.solver_ == "batched"
    rel = abs(bat.dual_objective_[0] - smo.dual_objective_[0]) / abs(smo.dual_objective_[0])
    assert rel < 1e-5
    assert np.mean(bat.predict(X) == smo.predict(X)) >= 0.999
    # The KKT conditions at tol (float32 kernel values: a little slack).
    assert _violation(bat, X, y) < 2e-3
    # Deterministic, on one thread or two.
    again = SVC(solver="batched", cache_size=50).fit(X, y)
    two = SVC(solver="batched", cache_size=50, n_jobs=2).fit(X, y)
    for other in (again, two):
        np.testing.assert_array_equal(other.support_, bat.support_)
        np.testing.assert_array_equal(other.dual_coef_, bat.dual_coef_)
        np.testing.assert_array_equal(other.intercept_, bat.intercept_)
        np.testing.assert_array_equal(other.n_iter_, bat.n_iter_)


@pytest.mark.parametrize("shrinking", [True, False])
def test_many_small_rounds_with_and_without_shrinking(data, shrinking):
    # cache_size=1.5 (MB) holds about 150 columns of 2500 rows: working sets
    # of 150, many rounds, and with shrinking rows set aside between them
    # (their gradient brought up to date before SMO finishes).
    X, y = data
    smo = SVC(solver="smo", cache_size=50).fit(X, y)
    bat = SVC(solver="batched", cache_size=1.5, shrinking=shrinking).fit(X, y)
    assert bat.solver_ == "batched"
    rel = abs(bat.dual_objective_[0] - smo.dual_objective_[0]) / abs(smo.dual_objective_[0])
    assert rel < 1e-6
    assert np.mean(bat.predict(X) == smo.predict(X)) >= 0.999
    assert _violation(bat, X, y) < 2e-3
    two = SVC(solver="batched", cache_size=1.5, shrinking=shrinking, n_jobs=2).fit(X, y)
    np.testing.assert_array_equal(two.support_, bat.support_)
    np.testing.assert_array_equal(two.dual_coef_, bat.dual_coef_)
    np.testing.assert_array_equal(two.kernel_evaluations_, bat.kernel_evaluations_)


def test_auto_keeps_smo_on_small_problems(data):
    X, y = data
    # 2500 rows: below the automatic choice's threshold.
    clf = SVC().fit(X, y)
    assert clf.solver_ == "smo"
    # Three classes, one-vs-one, every pair forced to batched rounds.
    y3 = np.arange(len(y)) % 3
    multi = SVC(solver="batched", cache_size=50).fit(X, y3)
    assert multi.solver_ == "batched"


def test_refusals_name_the_parameter(data):
    X, y = data
    with pytest.raises(ValueError, match="solver"):
        SVC(solver="thunder").fit(X, y)
    # Sparse rows (mostly zeros: kept sparse).
    Xs = sp.random(len(y), 200, density=0.02, format="csr", random_state=0)
    with pytest.raises(ValueError, match="solver='batched'"):
        SVC(solver="batched").fit(Xs, y)
    with pytest.raises(ValueError, match="solver='batched'"):
        SVC(solver="batched", kernel="precomputed").fit(X @ X.T, y)
    with pytest.raises(ValueError, match="solver='batched'"):
        SVC(solver="batched", precision="float64").fit(X, y)
    # NuSVC has no such setting: its dual has two equality constraints.
    assert "solver" not in NuSVC().get_params()


def test_rounds_start_from_the_cells(data):
    # init='cells': the global solve's rounds start from the cells'
    # multipliers (many at the bound) and their blocked gradient G, Ḡ; a
    # wrong Ḡ there moves the optimum.
    X, y = data
    smo = SVC(solver="smo", cache_size=50).fit(X, y)
    warm = SVC(solver="batched", init="cells", cell_size=600, cache_size=50, random_state=0).fit(
        X, y
    )
    assert warm.solver_ == "batched"
    assert warm.n_cells_[0] >= 2
    assert warm.init_time_["gradient"] > 0.0
    rel = abs(warm.dual_objective_[0] - smo.dual_objective_[0]) / abs(smo.dual_objective_[0])
    assert rel < 1e-5
    assert np.mean(warm.predict(X) == smo.predict(X)) >= 0.999
    assert _violation(warm, X, y) < 2e-3
    two = SVC(
        solver="batched", init="cells", cell_size=600, cache_size=50, random_state=0, n_jobs=2
    ).fit(X, y)
    np.testing.assert_array_equal(two.support_, warm.support_)
    np.testing.assert_array_equal(two.dual_coef_, warm.dual_coef_)
