"""CellSVC and the kernel k-means cells it is built on."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.datasets import make_blobs, make_classification
from sklearn.exceptions import ConvergenceWarning

import localsvm
from localsvm import SVC, CellSVC, KernelSpec, use_engine
from localsvm.cells import CellPartition, kernel_kmeans, partition_cells, soft_weights
from localsvm.kernels import kernel_matrix


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(
        n_samples=3000,
        n_features=8,
        n_informative=6,
        n_clusters_per_class=4,
        class_sep=1.5,
        random_state=0,
    )
    X = (X - X.mean(0)) / X.std(0)
    return X[:2400], y[:2400], X[2400:], y[2400:]


# ------------------------------------------------------------------ cells


def test_kernel_kmeans_finds_separated_blobs_and_leaves_no_cluster_empty():
    X, truth = make_blobs(n_samples=300, centers=3, cluster_std=0.3, random_state=0)
    K = kernel_matrix(KernelSpec("rbf", gamma=0.5), X, X)
    labels = kernel_kmeans(K, 3, random_state=0)
    # The same partition up to the clusters' names.
    pairs = {(int(a), int(b)) for a, b in zip(labels, truth, strict=True)}
    assert len(pairs) == 3
    # More clusters than natural groups: still every cluster non-empty.
    labels = kernel_kmeans(K, 40, random_state=0)
    assert np.bincount(labels, minlength=40).min() >= 1
    with pytest.raises(ValueError, match="n_clusters=301"):
        kernel_kmeans(K, 301)


@pytest.mark.parametrize("kernel", ["rbf", "linear", "poly", "sigmoid"])
def test_routing_scores_are_kernel_distances_to_the_cells_means(kernel):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 4))
    spec = KernelSpec(kernel, gamma=0.2, coef0=0.5, degree=2)
    part = CellPartition.fit(X, 4, spec=spec, random_state=0, sample_size=200)
    Q = rng.normal(size=(50, 4))
    K = kernel_matrix(spec, Q, part.representatives)
    expect = np.column_stack(
        [part.within[c] - 2 * K[:, part.representative_cells == c].mean(axis=1) for c in range(4)]
    )
    got = part.scores(Q)
    np.testing.assert_allclose(got, expect, rtol=1e-4, atol=1e-4 * np.abs(expect).max())
    # Threads give the same scores as one thread.
    np.testing.assert_array_equal(part.scores(Q, n_jobs=2), got)
    labels = partition_cells(X, 4, spec=spec, random_state=0)
    assert labels.shape == (500,) and labels.min() >= 0 and labels.max() < 4


def test_restrict_keeps_the_rule_of_the_kept_cells():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(400, 3))
    part = CellPartition.fit(X, 5, spec=KernelSpec("rbf", gamma=0.3), random_state=0)
    labels = part.assign(X)
    keep = np.array([0, 2, 3])
    small = part.restrict(keep)
    rows = np.isin(labels, keep)
    np.testing.assert_array_equal(keep[small.assign(X[rows])], labels[rows])


# ------------------------------------------------------------------ CellSVC


def test_one_cell_is_the_global_svm(data):
    X, y, Xt, _ = data
    cells = CellSVC(n_cells=1).fit(X, y)
    svc = SVC().fit(X, y)
    assert cells.n_cells_ == 1 and cells.partition_ is None
    np.testing.assert_allclose(cells.decision_function(Xt), svc.decision_function(Xt))
    np.testing.assert_array_equal(cells.predict(Xt), svc.predict(Xt))
    # cell_size='auto' is one cell at this size.
    assert CellSVC().fit(X, y).n_cells_ == 1


def test_cells_with_overlap_approach_the_global_accuracy(data):
    X, y, Xt, yt = data
    glob = SVC().fit(X, y).score(Xt, yt)
    clf = CellSVC(cell_size=600, random_state=0).fit(X, y)
    assert clf.n_cells_ == 4
    assert clf.cell_sizes_.sum() == X.shape[0]
    # Each cell trained on its members and as many examples of other cells.
    np.testing.assert_array_equal(clf.cell_train_sizes_, np.minimum(2 * clf.cell_sizes_, 2400))
    assert clf.score(Xt, yt) > glob - 0.03
    # The training examples' cells are the routing rule's.
    np.testing.assert_array_equal(clf.assign(X), clf.cell_labels_)


def test_soft_routing_blends_only_near_borders(data):
    X, y, Xt, _ = data
    soft = CellSVC(cell_size=600, random_state=0).fit(X, y)
    hard = CellSVC(cell_size=600, random_state=0, routing="hard").fit(X, y)
    np.testing.assert_array_equal(soft.cell_labels_, hard.cell_labels_)
    d_soft, d_hard = soft.decision_function(Xt), hard.decision_function(Xt)
    first, _, w = soft._soft_weights(Xt)
    np.testing.assert_array_equal(first, hard.assign(Xt))
    deep = w >= 1 - 1e-4
    np.testing.assert_allclose(d_soft[deep], d_hard[deep])
    assert (~deep).any() and not np.allclose(d_soft[~deep], d_hard[~deep])
    # Hard routing's decision is the cell model's own.
    cell = hard.assign(Xt[:5])
    for i, c in enumerate(cell):
        assert d_hard[i] == pytest.approx(hard.cell_models_[c].decision_function(Xt[i : i + 1])[0])
    np.testing.assert_array_equal(soft.predict(Xt), soft.classes_[(d_soft > 0).astype(int)])


def far_regions(n_per_region: int, seed: int):
    """Two Gaussian blobs 20 apart, each labelled by its own nonlinear rule
    (a disc on the left, a product of waves on the right), and each row's
    region."""
    rng = np.random.RandomState(seed)
    a = rng.normal(size=(n_per_region, 2))
    b = rng.normal(size=(n_per_region, 2))
    ya = a[:, 0] ** 2 + a[:, 1] ** 2 > 1.4
    yb = np.sin(2.5 * b[:, 1]) * np.cos(2.5 * b[:, 0]) > 0
    X = np.vstack([a, b + np.array([20.0, 0.0])])
    y = np.concatenate([ya, yb]).astype(int)
    return X, y, np.repeat([0, 1], n_per_region)


def test_soft_routing_takes_nothing_from_a_cell_that_never_trained_near_the_row():
    """Two far regions, one cell each, tuned apart: a row of one region is
    beyond the other cell's overlap, so soft routing gives it its own
    cell's value alone and is as accurate as hard routing in each region
    (a plain logistic blend of the two cells lost 8 points on the right)."""
    X, y, _ = far_regions(1500, 0)
    Xt, yt, region = far_regions(1500, 1)
    kw = dict(n_cells=2, overlap=0.5, tune=True, Cs=[1.0, 1000.0], gammas=3, random_state=0)
    soft = CellSVC(**kw).fit(X, y)
    hard = CellSVC(routing="hard", **kw).fit(X, y)
    assert soft.cell_gamma_[0] != soft.cell_gamma_[1]
    for r in (0, 1):
        acc_soft = np.mean(soft.predict(Xt[region == r]) == yt[region == r])
        acc_hard = np.mean(hard.predict(Xt[region == r]) == yt[region == r])
        assert acc_hard > 0.85
        assert acc_soft >= acc_hard - 0.005, (r, acc_soft, acc_hard)
    _, second, w = soft._soft_weights(Xt)
    S = np.sort(soft.partition_.scores(Xt), axis=1).astype(np.float64)
    beyond = S[:, 1] - S[:, 0] >= soft.cell_overlap_reach_[second]
    assert beyond.mean() > 0.3
    assert np.all(w[beyond] == 1.0)


def test_rows_within_the_overlap_still_blend(data):
    """A row whose margin to its second cell lies well inside that cell's
    overlap reach takes a share of it; the reach is the largest gap among
    the rows the cell took from other cells."""
    X, y, Xt, _ = data
    clf = CellSVC(cell_size=600, random_state=0).fit(X, y)
    S = clf.partition_.scores(X, by_cell=True)
    best = S.min(axis=0)
    for j in range(clf.n_cells_):
        gaps = (S[j] - best)[clf.cell_labels_ != j]
        taken = int(clf.cell_train_sizes_[j] - clf.cell_sizes_[j])
        assert clf.cell_overlap_reach_[j] == pytest.approx(np.sort(gaps)[taken - 1])
    _, second, w = clf._soft_weights(Xt)
    St = np.sort(clf.partition_.scores(Xt), axis=1).astype(np.float64)
    margin = St[:, 1] - St[:, 0]
    inside = margin < 0.5 * clf.cell_overlap_reach_[second]
    near = inside & (margin < clf.routing_scale_)
    assert near.sum() > 10
    assert np.all(w[near] < 1.0 - 1e-4) and np.all(w[near] >= 0.5)
    assert np.all(w[~inside] > w[inside].min())


def test_soft_weight_is_continuous_and_reaches_one_at_the_reach():
    margin = np.linspace(0.0, 3.0, 30001)
    for reach, scale in [(2.0, 0.3), (2.0, 5.0), (0.01, 1.0)]:
        w = soft_weights(margin, np.full_like(margin, reach), scale)
        assert w[0] == pytest.approx(0.5)
        assert np.all(np.diff(w) >= -1e-12)
        # Lipschitz (no jump): |dw/dm| <= 0.75 / reach + 0.25 / scale.
        step = margin[1] - margin[0]
        assert np.max(np.diff(w)) <= (0.75 / reach + 0.25 / scale) * step * (1 + 1e-9)
        np.testing.assert_array_equal(w[margin >= reach], 1.0)
        assert np.all(w[margin < reach] < 1.0)
    # Far inside the reach the weight is the logistic one.
    assert soft_weights(np.array([0.01]), np.array([100.0]), 1.0)[0] == pytest.approx(
        1.0 / (1.0 + np.exp(-0.01)), rel=1e-6
    )
    # A cell without overlap never takes a share.
    np.testing.assert_array_equal(soft_weights(margin, np.zeros_like(margin), 1.0), 1.0)


def test_multiclass_through_the_same_cells():
    X, y = make_blobs(n_samples=900, centers=6, cluster_std=1.5, random_state=2)
    y = y % 3  # three classes, each in two places
    glob = SVC().fit(X, y).score(X, y)
    for routing in ("soft", "hard"):
        clf = CellSVC(n_cells=3, random_state=0, routing=routing).fit(X, y)
        dec = clf.decision_function(X)
        assert dec.shape == (900, 3)
        assert clf.score(X, y) > glob - 0.03
        assert set(np.unique(clf.predict(X))) <= {0, 1, 2}


def test_a_cell_with_one_class_predicts_it():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(200, 2)) + np.array([20.0, 0.0])  # one class, far away
    B = rng.normal(size=(400, 2))
    yB = (B[:, 0] > 0).astype(int)
    X = np.vstack([A, B])
    y = np.concatenate([np.ones(200, dtype=int), yB])
    clf = CellSVC(n_cells=2, overlap=0.0, random_state=0).fit(X, y)
    pure = [j for j in range(clf.n_cells_) if clf.cell_models_[j] is None]
    assert len(pure) == 1 and clf.cell_classes_[pure[0]].tolist() == [1]
    far = rng.normal(size=(20, 2)) + np.array([20.0, 0.0])
    assert np.all(clf.predict(far) == 1)
    assert np.all(clf.decision_function(far) > 0)


def test_bad_sizes_are_refused_with_the_parameter_named(data):
    X, y, _, _ = data
    with pytest.raises(ValueError, match="cell_size=5000 is larger"):
        CellSVC(cell_size=5000).fit(X, y)
    with pytest.raises(ValueError, match="cell_size"):
        CellSVC(cell_size=1).fit(X, y)
    with pytest.raises(ValueError, match="cell_size"):
        CellSVC(cell_size=2.5).fit(X, y)
    with pytest.raises(ValueError, match="n_cells=3000 is larger"):
        CellSVC(n_cells=3000).fit(X, y)
    with pytest.raises(ValueError, match="n_cells"):
        CellSVC(n_cells=0).fit(X, y)
    with pytest.raises(ValueError, match="overlap"):
        CellSVC(overlap=-0.1).fit(X, y)
    bad = X.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        CellSVC(n_cells=2).fit(bad, y)


def test_a_budget_that_cannot_hold_a_cell_is_a_memory_error(data, monkeypatch):
    X, y, _, _ = data
    from localsvm import _memory

    monkeypatch.setattr(_memory, "available_memory", lambda: 1000)
    with pytest.raises(MemoryError, match="cell_size"):
        CellSVC(n_cells=2).fit(X, y)


def test_one_convergence_warning_counts_the_cells_at_max_iter(data):
    X, y, _, _ = data
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf = CellSVC(n_cells=3, max_iter=5, random_state=0).fit(X, y)
    conv = [w for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert len(conv) == 1
    assert "3 of 3 cell SVMs" in str(conv[0].message)
    assert clf.fit_status_ == 1
    assert CellSVC(n_cells=3, random_state=0).fit(X, y).fit_status_ == 0


def test_cells_run_through_run_tasks_on_any_engine(data, monkeypatch):
    X, y, Xt, _ = data
    from localsvm import cell_svm

    seen = []
    real = cell_svm.run_tasks

    def spy(fn, tasks, **kw):
        tasks = list(tasks)
        seen.append((fn.__name__, len(tasks)))
        return real(fn, tasks, **kw)

    monkeypatch.setattr(cell_svm, "run_tasks", spy)
    threads = CellSVC(n_cells=3, random_state=0, n_jobs=2).fit(X, y)
    assert seen == [("_fit_cell", 3)]
    with use_engine("serial"):
        serial = CellSVC(n_cells=3, random_state=0).fit(X, y)
    np.testing.assert_array_equal(threads.predict(Xt), serial.predict(Xt))


def test_the_same_seed_gives_the_same_model(data):
    X, y, Xt, _ = data
    a = CellSVC(n_cells=3, random_state=7).fit(X, y)
    b = CellSVC(n_cells=3, random_state=7).fit(X, y)
    np.testing.assert_array_equal(a.cell_labels_, b.cell_labels_)
    np.testing.assert_array_equal(a.decision_function(Xt), b.decision_function(Xt))


def test_exported_at_top_level():
    assert "CellSVC" in localsvm.__all__


def test_cells_beyond_the_budget_are_cut():
    # Three groups, one holding most of the data: kernel k-means of the
    # sample gives that group one cell, which the budget then cuts.
    X, y = make_blobs(
        n_samples=[2000, 200, 200],
        centers=[[0.0, 0.0], [30.0, 0.0], [0.0, 30.0]],
        cluster_std=[3.0, 1.0, 1.0],
        random_state=0,
    )
    y = (X[:, 0] + X[:, 1] > 0).astype(int) ^ (np.arange(X.shape[0]) % 7 == 0)
    clf = CellSVC(n_cells=3, overlap=0.0, random_state=0).fit(X, y)
    budget = int(np.ceil(X.shape[0] / 3))
    assert clf.n_cells_ > 3
    assert clf.cell_sizes_.max() <= 2 * budget
    assert clf.cell_sizes_.sum() == X.shape[0]
    np.testing.assert_array_equal(clf.assign(X), clf.cell_labels_)
    # The same budget holds for partition_cells (SVC's init='cells').
    spec = KernelSpec("rbf", gamma=clf.kernel_spec_.gamma)
    labels = partition_cells(X, 3, spec=spec, random_state=0)
    sizes = np.bincount(labels)
    assert sizes.size > 3 and sizes.min() >= 1 and sizes.max() <= 2 * budget


@pytest.mark.parametrize("routing", ["soft", "hard"])
def test_clusters_that_collapse_to_one_cell_give_the_global_svm(routing):
    # With gamma=1e6 every example is its own island: kernel k-means puts
    # all of them, or all but one, in one cell (seed 4: all, the other cell
    # empty and dropped).
    X, y = make_blobs(n_samples=120, centers=2, random_state=0)
    glob = SVC(gamma=1e6).fit(X, y)
    collapsed = 0
    for seed in range(5):
        model = CellSVC(n_cells=2, gamma=1e6, routing=routing, random_state=seed).fit(X, y)
        assert model.predict(X).shape == y.shape
        if model.n_cells_ == 1:
            collapsed += 1
            assert model.partition_ is None
            np.testing.assert_array_equal(model.predict(X), glob.predict(X))
            np.testing.assert_allclose(model.decision_function(X), glob.decision_function(X))
    assert collapsed >= 1


def test_a_model_without_the_overlap_reach_says_what_to_do():
    """A soft-routing model pickled before ``cell_overlap_reach_`` existed
    names the fix instead of failing on a missing attribute."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((400, 2))
    y = (X[:, 0] * X[:, 1] > 0).astype(int)
    model = CellSVC(cell_size=100, random_state=0).fit(X, y)
    if model.n_cells_ < 2:
        pytest.skip("one cell: nothing to route")
    del model.cell_overlap_reach_
    with pytest.raises(AttributeError, match="routing='hard'"):
        model.predict(X)
    assert model.set_params(routing="hard").predict(X).shape == (400,)


def test_as_many_cells_as_sampled_rows_same_partition_without_dense_matrices(monkeypatch):
    """With as many cells as sampled rows (10⁷ rows of 2000-row cells) the
    partition is found without the ``m × m`` matrices and is the one dense
    kernel k-means gives, bit for bit, leaving the random state alike;
    repeated rows go the dense way."""
    import localsvm.cells as cells_mod

    X = np.random.RandomState(0).randn(900, 5)
    for spec in (KernelSpec("rbf", gamma=0.2), KernelSpec("poly", gamma=0.1, coef0=1.0)):
        lean_rng, dense_rng = np.random.RandomState(5), np.random.RandomState(5)
        lean = CellPartition.fit(X, 300, spec=spec, random_state=lean_rng, sample_size=300)
        with monkeypatch.context() as m:
            m.setattr(cells_mod, "_singleton_cells", lambda *args: None)
            dense = CellPartition.fit(X, 300, spec=spec, random_state=dense_rng, sample_size=300)
        np.testing.assert_array_equal(lean.representatives, dense.representatives)
        np.testing.assert_array_equal(lean.representative_cells, dense.representative_cells)
        np.testing.assert_array_equal(lean.within, dense.within)
        assert lean_rng.randint(2**30) == dense_rng.randint(2**30)
    twice = np.vstack([X[:50], X[:50]])
    rng = np.random.RandomState(1)
    assert cells_mod._singleton_cells(KernelSpec("rbf", gamma=0.2), twice, rng) is None
    assert rng.randint(2**30) == np.random.RandomState(1).randint(2**30)
    part = CellPartition.fit(twice, 100, spec=KernelSpec("rbf", gamma=0.2), random_state=0)
    assert part.n_cells == 100


def test_two_nearest_is_the_stable_sorts_first_two():
    from localsvm.cells import two_nearest

    rng = np.random.default_rng(3)
    S = rng.integers(0, 4, size=(400, 7)).astype(np.float32)  # many ties
    S[5] = np.inf
    S[6, 1:] = np.inf
    S[7, 3] = np.nan
    S[8, 0] = np.nan
    S[9] = [np.inf, 2, np.nan, 2, -np.inf, 0, np.inf]
    before = S.copy()
    first, second = two_nearest(S)
    two = np.argsort(before, axis=1, kind="stable")[:, :2]
    assert np.array_equal(first, two[:, 0]) and np.array_equal(second, two[:, 1])
    assert np.array_equal(S, before, equal_nan=True)
