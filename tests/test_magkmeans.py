"""MagKmeans (Cheng, Tan & Jin 2007, §4.1): the LP and greedy assignment steps, the
multiclass extension, and the registered ``magkmeans`` strategies."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

import localsvm
from localsvm.clustering import (
    class_imbalance,
    data_diameter,
    get_clustering,
    magkmeans_assign,
    magkmeans_lp,
    magkmeans_objective,
)

NAMES = ["magkmeans", "magkmeans-greedy"]


def _hard_objective(D, labels, y, R):
    imb = class_imbalance(labels, y, n_clusters=D.shape[1])
    return float(D[np.arange(D.shape[0]), labels].sum() + R * imb.sum())


def _sq_dist(X, C):
    return ((X[:, None, :] - C[None, :, :]) ** 2).sum(axis=2)


def _figure2(m=40, seed=0):
    """Four tight blobs, two per class, the classes side by side (Cheng, Tan & Jin 2007, Fig. 2):
    k-means with two clusters splits by class."""
    rng = np.random.default_rng(seed)
    X, y = [], []
    for cx, cy, c in [(0.0, 0.0, 0), (0.0, 1.5, 0), (2.0, 0.0, 1), (2.0, 1.5, 1)]:
        X.append(rng.normal([cx, cy], 0.1, size=(m, 2)))
        y += [c] * m
    return np.vstack(X), np.array(y)


def _total_imbalance(labels, y, k):
    return float(class_imbalance(labels, y, n_clusters=k).sum())


def test_registered():
    assert {"kmeans", *NAMES} <= set(localsvm.list_clusterings())


@pytest.mark.parametrize("name", NAMES)
def test_magkmeans_mixes_classes_where_kmeans_makes_pure_clusters(name):
    X, y = _figure2()
    km = get_clustering("kmeans").cluster(X, y, 2, random_state=0)
    for j in range(2):
        assert len(set(y[km.labels == j])) == 1  # pure
    res = get_clustering(name).cluster(X, y, 2, random_state=0)
    assert all(len(set(y[res.labels == j])) == 2 for j in range(2))
    assert _total_imbalance(res.labels, y, 2) <= 0.1 * _total_imbalance(km.labels, y, 2)
    np.testing.assert_allclose(res.imbalance, class_imbalance(res.labels, y, n_clusters=2))
    # The reported objective is that of the returned assignment and centres.
    obj, coh, imb = magkmeans_objective(X, res.labels, res.centers, y, res.R)
    assert res.objective == pytest.approx(obj) and res.cohesion == pytest.approx(coh)
    np.testing.assert_allclose(imb, res.imbalance)
    # Default R = diameter / κ.
    assert res.R == pytest.approx(data_diameter(X) / 2)


@pytest.mark.parametrize("seed", range(8))
def test_lp_step_is_optimal_for_the_relaxation(seed):
    rng = np.random.default_rng(seed)
    n, k = 6, 2
    X = rng.normal(size=(n, 2))
    C = rng.normal(size=(k, 2))
    D = _sq_dist(X, C)
    y = rng.choice([-1, 1], size=n)
    y[:2] = [-1, 1]
    for R in (0.0, 0.5, 2.0, 10.0):
        Z, lp_opt = magkmeans_lp(D, y, R)
        np.testing.assert_allclose(Z.sum(axis=1), 1.0, atol=1e-8)
        # The reported optimum is the objective of the returned Z.
        relaxed = (Z * D).sum() + R * np.abs(Z.T @ y).sum()
        assert lp_opt == pytest.approx(relaxed, abs=1e-7)
        best = min(
            _hard_objective(D, np.array(lab), y, R) for lab in itertools.product(range(k), repeat=n)
        )
        assert lp_opt <= best + 1e-8
        labels = magkmeans_assign(D, y, R, method="lp")
        if np.all((Z < 1e-9) | (Z > 1 - 1e-9)):  # integral: rounding is exact
            assert _hard_objective(D, labels, y, R) == pytest.approx(best, abs=1e-8)
            assert lp_opt == pytest.approx(best, abs=1e-8)


def test_lp_step_with_zero_R_is_nearest_centroid():
    rng = np.random.default_rng(1)
    D = rng.random((30, 4))
    y = rng.choice(["a", "b", "c"], size=30)
    np.testing.assert_array_equal(magkmeans_assign(D, y, 0.0, method="lp"), D.argmin(axis=1))
    np.testing.assert_array_equal(magkmeans_assign(D, y, 0.0, method="greedy"), D.argmin(axis=1))


def test_greedy_close_to_lp_and_never_worse_than_its_start():
    ratios = []
    for seed in range(6):
        rng = np.random.default_rng(seed)
        X = rng.normal(size=(200, 3))
        C = X[rng.choice(200, 5, replace=False)]
        D = _sq_dist(X, C)
        y = rng.choice([-1, 1], size=200)
        for R in (0.3, 1.0, 3.0):
            _, lp_opt = magkmeans_lp(D, y, R)
            greedy = _hard_objective(D, magkmeans_assign(D, y, R, method="greedy"), y, R)
            start = _hard_objective(D, D.argmin(axis=1), y, R)
            assert greedy <= start + 1e-9
            assert greedy >= lp_opt - 1e-7  # the LP is a lower bound
            ratios.append(greedy / lp_opt)
            # From any start, greedy never makes it worse.
            s = rng.integers(0, 5, size=200)
            g2 = magkmeans_assign(D, y, R, method="greedy", start=s)
            assert _hard_objective(D, g2, y, R) <= _hard_objective(D, s, y, R) + 1e-9
    assert max(ratios) < 1.05


def test_multiclass_term_equals_binary_for_two_classes():
    rng = np.random.default_rng(0)
    Z = rng.random((50, 4))
    Z /= Z.sum(axis=1, keepdims=True)
    y = rng.choice([-1, 1], size=50)
    binary = np.abs(Z.T @ y)
    np.testing.assert_allclose(class_imbalance(Z, y, form="binary"), binary)
    np.testing.assert_allclose(class_imbalance(Z, y, form="multiclass"), binary)
    # Each class term is exactly half of the binary one.
    for c in (-1, 1):
        half = np.abs(Z.T @ ((y == c) - 0.5))
        np.testing.assert_allclose(half, binary / 2)
    # ... so the LP optimum is the same in both forms.
    D = rng.random((50, 4))
    _, opt_bin = magkmeans_lp(D, y, 0.7, form="binary")
    _, opt_multi = magkmeans_lp(D, y, 0.7, form="multiclass")
    assert opt_bin == pytest.approx(opt_multi, rel=1e-7)


def _sectors(n=90, seed=0):
    """Points in the unit disc, the class given by the angular third they lie in."""
    rng = np.random.default_rng(seed)
    ang = rng.uniform(0, 2 * np.pi, n)
    rad = np.sqrt(rng.uniform(0, 1, n))
    X = np.c_[rad * np.cos(ang), rad * np.sin(ang)]
    y = np.array(["x", "y", "z"])[(ang // (2 * np.pi / 3)).astype(int)]
    return X, y


@pytest.mark.parametrize("name", NAMES)
def test_three_classes_every_cluster_keeps_every_class(name):
    X, y = _sectors()
    km = get_clustering("kmeans").cluster(X, y, 3, random_state=0)
    assert all(len(set(y[km.labels == j])) < 3 for j in range(3))
    res = get_clustering(name).cluster(X, y, 3, R=5.0, random_state=0)
    for j in range(3):
        assert set(y[res.labels == j]) == {"x", "y", "z"}
    # Σ_j Σ_c |n_jc − n_j/3| ≥ Σ_c |n_c − n/3| (triangle inequality); reached here.
    counts = np.unique(y, return_counts=True)[1]
    floor = np.abs(counts - len(y) / 3).sum()
    assert res.imbalance.sum() == pytest.approx(floor)
    assert res.imbalance.sum() < _total_imbalance(km.labels, y, 3)


def test_min_cluster_size_keeps_clusters_non_empty():
    # An empty cluster is perfectly balanced: with a huge R and min_cluster_size=0
    # the LP may empty clusters; the default (1) keeps all of them.
    rng = np.random.default_rng(0)
    centers = np.array([[0.0, 0.0], [5.0, 0.0], [0.0, 5.0]])
    X = np.vstack([rng.normal(c, 0.3, size=(20, 2)) for c in centers])
    y = np.repeat([0, 1, 2], 20)
    for name in NAMES:
        res = get_clustering(name).cluster(X, y, 3, R=500.0, random_state=0)
        assert np.bincount(res.labels, minlength=3).min() >= 1
        res = get_clustering(name).cluster(X, y, 3, R=500.0, random_state=0, min_cluster_size=4)
        assert np.bincount(res.labels, minlength=3).min() >= 4
    D = _sq_dist(X, centers)
    Z, _ = magkmeans_lp(D, y, 500.0, min_size=5)
    assert np.all(Z.sum(axis=0) >= 5 - 1e-7)
    labels = magkmeans_assign(D, y, 500.0, method="lp", min_size=5)
    assert np.bincount(labels, minlength=3).min() >= 5
    with pytest.raises(ValueError, match="min_cluster_size"):
        get_clustering("magkmeans").cluster(X, y, 3, min_cluster_size=21)


@pytest.mark.parametrize("name", NAMES)
def test_zero_R_is_kmeans(name):
    rng = np.random.default_rng(3)
    centers = np.array([[0.0, 0.0], [6.0, 0.0], [0.0, 6.0]])
    X = np.vstack([rng.normal(c, 0.5, size=(25, 2)) for c in centers])
    y = rng.choice([0, 1], size=75)
    km = get_clustering("kmeans").cluster(X, y, 3, random_state=0)
    res = get_clustering(name).cluster(X, y, 3, R=0, random_state=0)
    assert res.objective == pytest.approx(km.objective, rel=1e-9)
    assert res.cohesion == pytest.approx(res.objective)


@pytest.mark.parametrize("name", NAMES)
def test_objective_never_increases(name):
    rng = np.random.default_rng(5)
    X = rng.random((120, 6))
    y = rng.choice([0, 1, 2], size=120)
    res = get_clustering(name).cluster(X, y, 6, random_state=1, max_iter=50)
    h = np.array(res.history)
    assert len(h) == res.n_iter and h[-1] == pytest.approx(res.objective)
    assert np.all(np.diff(h) <= 1e-9 * h[0])
    # Truncated runs follow the same path: their objectives are non-increasing.
    objs = [
        get_clustering(name).cluster(X, y, 6, random_state=1, max_iter=t).objective
        for t in (1, 2, 3, 4)
    ]
    assert all(b <= a + 1e-9 * a for a, b in itertools.pairwise(objs))
    steps = min(4, len(h))
    assert objs[:steps] == pytest.approx(h[:steps].tolist())


@pytest.mark.parametrize("name", NAMES)
def test_random_state_reproducible_and_n_init_keeps_best(name):
    rng = np.random.default_rng(2)
    X = rng.random((80, 4))
    y = rng.choice([-1, 1], size=80)
    s = get_clustering(name)
    a = s.cluster(X, y, 4, random_state=7)
    b = s.cluster(X, y, 4, random_state=7)
    np.testing.assert_array_equal(a.labels, b.labels)
    np.testing.assert_allclose(a.centers, b.centers)
    several = s.cluster(X, y, 4, random_state=7, n_init=4)
    assert several.objective <= a.objective + 1e-9  # the first run is among the four
    fixed = s.cluster(X, y, 4, init=X[:4], random_state=0)
    assert fixed.labels.shape == (80,)
    rnd = s.cluster(X, y, 4, init="random", random_state=0)
    assert set(rnd.labels) <= set(range(4))


def test_diameter_exact_and_estimate():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    exact = np.sqrt(_sq_dist(X, X).max())
    assert data_diameter(X) == pytest.approx(exact)
    est = data_diameter(X, exact_max=10)
    assert exact / 2 - 1e-12 <= est <= exact + 1e-12
    assert data_diameter(X[:1]) == 0.0


@pytest.mark.parametrize("name", NAMES)
def test_errors(name):
    X = np.random.default_rng(0).random((10, 3))
    y = np.array([0, 1] * 5)
    s = get_clustering(name)
    for bad in (-1.0, float("nan"), float("inf"), "big", True):
        with pytest.raises(ValueError, match="R must be"):
            s.cluster(X, y, 2, R=bad)
    with pytest.raises(ValueError, match="n_clusters"):
        s.cluster(X, y, 11)
    with pytest.raises(ValueError, match="n_clusters"):
        s.cluster(X, y, 0)
    with pytest.raises(ValueError, match="needs the class labels y"):
        s.cluster(X, None, 2)
    with pytest.raises(ValueError, match="y has 9 labels"):
        s.cluster(X, y[:9], 2)
    with pytest.raises(ValueError, match="max_iter"):
        s.cluster(X, y, 2, max_iter=0)
    with pytest.raises(ValueError, match="n_init"):
        s.cluster(X, y, 2, n_init=1.5)
    with pytest.raises(ValueError, match="profiles must be a 2-D"):
        s.cluster(X[0], y, 2)
    with pytest.raises(ValueError, match="finite"):
        s.cluster(np.where(X > 0.5, np.nan, X), y, 2)
    with pytest.raises(ValueError, match="init"):
        s.cluster(X, y, 2, init="spectral")
    with pytest.raises(ValueError, match="method"):
        magkmeans_assign(np.ones((3, 2)), [0, 1, 0], 1.0, method="simplex")


def _improving_move_exists(D, labels, y, R):
    """Brute force: does any single move lower the hard objective?"""
    base = _hard_objective(D, labels, y, R)
    for i in range(D.shape[0]):
        for j in range(D.shape[1]):
            if j != labels[i]:
                trial = labels.copy()
                trial[i] = j
                if _hard_objective(D, trial, y, R) < base - 1e-9:
                    return True
    return False


@pytest.mark.parametrize("n_classes", [2, 3])
def test_batched_assignment_reaches_a_local_minimum(n_classes):
    from localsvm.clustering.batched import batched_assign
    from localsvm.clustering.objective import balance_matrix

    rng = np.random.default_rng(n_classes)
    X = rng.normal(size=(60, 2))
    C = rng.normal(size=(4, 2))
    y = rng.integers(0, n_classes, size=60)
    D = _sq_dist(X, C)
    A = balance_matrix(y, n_classes)
    start = np.argmin(D, axis=1)
    R = 2.0
    labels, converged = batched_assign(D, y, A, R, start)
    assert converged
    assert _hard_objective(D, labels, y, R) < _hard_objective(D, start, y, R)
    assert not _improving_move_exists(D, labels, y, R)
    # One round only: the flag says whether moves are left.
    one, done = batched_assign(D, y, A, 50.0, start, max_rounds=1)
    assert done == (not _improving_move_exists(D, one, y, 50.0))
    assert _hard_objective(D, one, y, 50.0) <= _hard_objective(D, start, y, 50.0)


@pytest.mark.parametrize("name", NAMES)
def test_sampled_iteration_above_max_exact_samples(name):
    X, y = _figure2(m=150)  # 600 rows, two classes side by side
    strategy = get_clustering(name)
    params = dict(R=10.0, max_exact_samples=200, sample_size=100, random_state=0)
    res = strategy.cluster(X, y, 2, **params)
    assert res.labels.shape == (600,) and set(res.labels.tolist()) == {0, 1}
    # The balance term still keeps both classes in each cluster, as the
    # exact iteration does on the same data, unlike k-means.
    assert res.imbalance.sum() <= 2.0
    km = get_clustering("kmeans").cluster(X, None, 2, random_state=0)
    assert class_imbalance(km.labels, y).sum() > 100
    np.testing.assert_allclose(
        res.objective, magkmeans_objective(X, res.labels, res.centers, y, 10.0)[0], rtol=1e-6
    )
    # A cap that stops the passes over all rows while rows still move warns.
    with pytest.warns(ConvergenceWarning, match="refine_iter"):
        strategy.cluster(X, y, 2, refine_iter=1, **params)
    with pytest.raises(ValueError, match="refine_iter"):
        strategy.cluster(X, y, 2, refine_iter=0, **params)


def test_capped_assignment_rounds_warn(monkeypatch):
    from localsvm.clustering import batched, magkmeans

    real = batched.batched_assign

    def no_round(D, codes, A, R, labels, min_size=0, max_rounds=50):
        return real(D, codes, A, R, labels, min_size, max_rounds=0)

    monkeypatch.setattr(magkmeans, "batched_assign", no_round)
    X, y = _figure2(m=150)
    with pytest.warns(ConvergenceWarning, match="50 rounds"):
        get_clustering("magkmeans").cluster(
            X, y, 4, R=10.0, max_exact_samples=200, sample_size=100, random_state=0
        )
