"""ProfileSVC: clustering of similarity profiles, per-cluster SVMs, the
assignment rule, the transductive mode, plugins and bad input."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.svm import SVC as SklearnSVC

import localsvm
from localsvm import ProfileSVC, _regions, hookimpl, plugins
from localsvm.clustering import ClusteringResult
from localsvm.similarity import squared_distances


def test_each_cluster_has_its_own_linear_svm(banana):
    X, y = banana.X_train, banana.y_train
    clf = ProfileSVC(C=10.0, n_clusters=6, bandwidth=0.5, random_state=0).fit(X, y)
    assert clf.cluster_labels_.shape == (400,)
    assert clf.cluster_sizes_.sum() == 400
    Q = banana.X_test[:400]
    cluster = clf.assign(Q)
    dec = clf.decision_function(Q)
    for j in range(6):
        members = clf.cluster_labels_ == j
        rows = cluster == j
        if not rows.any() or clf.cluster_models_[j] is None:
            continue
        ref = SklearnSVC(kernel="linear", C=10.0, tol=1e-8).fit(X[members], y[members])
        np.testing.assert_allclose(dec[rows], ref.decision_function(Q[rows]), atol=1e-2)


def test_assignment_is_the_largest_mean_similarity(banana):
    X, y = banana.X_train, banana.y_train
    clf = ProfileSVC(n_clusters=5, bandwidth=0.5, routing="mean-similarity", random_state=1)
    clf.fit(X, y)
    assert clf.routing_ == "mean-similarity"
    Q = banana.X_test[:50]
    sigma = np.exp(-squared_distances(X, Q) / 0.5)
    means = np.stack([sigma[clf.cluster_labels_ == j].mean(0) for j in range(5)])
    np.testing.assert_array_equal(clf.assign(Q), np.argmax(means, axis=0))


def test_centroid_routing_is_the_clusterings_own_assignment(banana):
    X, y = banana.X_train, banana.y_train
    Q = banana.X_test[:60]
    for refs in (None, 40):
        clf = ProfileSVC(n_clusters=5, bandwidth=0.5, n_landmarks=refs, random_state=1)
        clf.fit(X, y)
        assert clf.routing_ == "centroid"
        R = clf.references_
        P = np.exp(-squared_distances(Q, R) / 0.5)
        C = clf.clustering_.centers
        dist = ((P[:, None, :] - C[None, :, :]) ** 2).sum(-1)
        np.testing.assert_array_equal(clf.assign(Q), np.argmin(dist, axis=1))
    # k-means (no class-balance term) stops where every example is nearest
    # to its own cluster's centre: the routing puts each back there.
    km = ProfileSVC(n_clusters=5, bandwidth=0.5, clustering="kmeans", random_state=0).fit(X, y)
    np.testing.assert_array_equal(km.assign(X), km.cluster_labels_)
    # The transductive mode keeps the paper's rule unless told otherwise; the
    # references' clusters follow the rule in use.
    tr = ProfileSVC(n_clusters=4, bandwidth=0.5, transductive=True, random_state=0)
    assert tr.fit(X, y, X_test=Q).routing_ == "mean-similarity"
    tc = ProfileSVC(
        n_clusters=4, bandwidth=0.5, transductive=True, routing="centroid", random_state=0
    ).fit(X, y, X_test=Q)
    np.testing.assert_array_equal(tc.reference_clusters_, tc.assign(Q))
    np.testing.assert_array_equal(tc.fit_predict(X, y, X_test=Q), tc.predict(Q))


def test_magkmeans_keeps_both_classes_where_kmeans_may_not(banana):
    X, y = banana.X_train, banana.y_train
    mag = ProfileSVC(n_clusters=8, bandwidth=0.1, R=50.0, random_state=0).fit(X, y)
    km = ProfileSVC(n_clusters=8, bandwidth=0.1, clustering="kmeans", random_state=0).fit(X, y)

    def imbalance(model):
        return sum(abs(int(np.sum(y[model.cluster_labels_ == j]))) for j in range(8))

    # Banana's training set has 34 more positives than negatives: no
    # clustering can do better than that total, and a large R reaches it.
    assert imbalance(mag) == abs(int(y.sum())) < imbalance(km)


def test_accuracy_on_banana_is_close_to_rbf_svm(banana):
    clf = ProfileSVC(C=10.0, n_clusters=11, bandwidth=0.5, random_state=0)
    acc = clf.fit(banana.X_train, banana.y_train).score(banana.X_test, banana.y_test)
    ref = SklearnSVC(C=1.0, gamma=1.0).fit(banana.X_train, banana.y_train)
    assert acc > ref.score(banana.X_test, banana.y_test) - 0.03


def test_transductive_profiles_against_the_test_set(banana):
    X, y, Q = banana.X_train, banana.y_train, banana.X_test[:300]
    clf = ProfileSVC(n_clusters=6, bandwidth=0.5, transductive=True, random_state=0)
    pred = clf.fit_predict(X, y, Q)
    assert clf.references_.shape == (300, 2)
    assert np.mean(pred == banana.y_test[:300]) > 0.8
    # The centroid entry of a test example is its mean similarity to the members.
    sigma = np.exp(-squared_distances(X, Q) / 0.5)
    centers = np.stack([sigma[clf.cluster_labels_ == j].mean(0) for j in range(6)])
    np.testing.assert_array_equal(clf.assign(Q), np.argmax(centers, axis=0))
    # fit_predict reads the test examples' clusters off the fit's profiles.
    np.testing.assert_array_equal(clf.reference_clusters_, clf.assign(Q))
    np.testing.assert_array_equal(pred, clf.predict(Q))
    with pytest.raises(ValueError, match="X_test"):
        ProfileSVC(transductive=True).fit(X, y)
    with pytest.raises(ValueError, match="only used with transductive=True"):
        ProfileSVC().fit(X, y, X_test=Q)


def test_landmarks_bound_the_profile_width(banana):
    clf = ProfileSVC(n_clusters=4, n_landmarks=50, random_state=0)
    clf.fit(banana.X_train, banana.y_train)
    assert clf.references_.shape == (50, 2)
    assert clf.score(banana.X_test[:200], banana.y_test[:200]) > 0.6


def test_one_class_cluster_predicts_its_class():
    X = np.array([[0.0], [0.1], [0.2], [10.0], [10.1], [10.2], [10.3], [10.4]])
    y = np.array([0, 0, 0, 0, 1, 0, 1, 1])
    clf = ProfileSVC(n_clusters=2, clustering="kmeans", bandwidth=1.0, random_state=0)
    clf.fit(X, y)
    lonely = [j for j in range(2) if clf.cluster_classes_[j].size == 1]
    assert lonely and clf.cluster_models_[lonely[0]] is None
    assert clf.predict(np.array([[0.05]])).tolist() == [0]
    assert clf.decision_function(np.array([[0.05]])).tolist() == [-1.0]


def test_multiclass_keeps_every_class_per_cluster():
    iris = localsvm.datasets.load_iris()
    X, y = iris.X / iris.X.max(0), iris.y
    clf = ProfileSVC(C=10.0, n_clusters=3, bandwidth=0.1, R=50.0, random_state=0)
    clf.fit(X[::2], y[::2])
    assert all(c.size == 3 for c in clf.cluster_classes_)
    assert clf.decision_function(X[1::2]).shape == (75, 3)
    assert clf.score(X[1::2], y[1::2]) > 0.85


def test_third_party_clustering_by_name(banana):
    class Halves:
        name = "halves"

        def cluster(self, profiles, y, n_clusters, *, random_state=None):
            labels = (np.arange(profiles.shape[0]) * n_clusters) // profiles.shape[0]
            centers = np.stack([profiles[labels == j].mean(0) for j in range(n_clusters)])
            return ClusteringResult(labels=labels, centers=centers, n_iter=1, objective=0.0)

    class Plugin:
        @hookimpl
        def localsvm_register_clusterings(self, register):
            register(Halves())

    pm = plugins.get_plugin_manager()
    plugin = Plugin()
    pm.register(plugin)
    try:
        clf = ProfileSVC(n_clusters=2, clustering="halves").fit(banana.X_train, banana.y_train)
        assert np.bincount(clf.cluster_labels_).tolist() == [200, 200]
        with pytest.raises(ValueError, match="rejected its parameters"):
            ProfileSVC(n_clusters=2, clustering="halves", R=1.0).fit(banana.X_train, banana.y_train)
        # Centres that are not profiles: 'auto' falls back to the mean
        # similarity, and 'centroid' is refused with the shapes named.
        Halves.cluster = lambda self, profiles, y, k, random_state=None: ClusteringResult(
            labels=np.arange(profiles.shape[0]) % k, centers=np.zeros((k, 3)), n_iter=1, objective=0
        )
        odd = ProfileSVC(n_clusters=2, clustering="halves").fit(banana.X_train, banana.y_train)
        assert odd.routing_ == "mean-similarity"
        with pytest.raises(ValueError, match=r"routing='centroid'.*\(2, 400\)"):
            ProfileSVC(n_clusters=2, clustering="halves", routing="centroid").fit(
                banana.X_train, banana.y_train
            )
    finally:
        pm.unregister(plugin)


def test_bad_input(banana):
    X, y = banana.X_train[:30], banana.y_train[:30]
    with pytest.raises(ValueError, match=r"n_clusters=31 is larger than the number of examples"):
        ProfileSVC(n_clusters=31).fit(X, y)
    with pytest.raises(ValueError, match="bandwidth"):
        ProfileSVC(bandwidth=0.0).fit(X, y)
    with pytest.raises(ValueError, match="'R' parameter"):
        ProfileSVC(R=-1.0).fit(X, y)
    with pytest.raises(ValueError, match="unknown clustering 'nope'"):
        ProfileSVC(clustering="nope", n_clusters=2).fit(X, y)
    with pytest.raises(ValueError, match=r"k=40 is larger"):
        ProfileSVC(similarity="knn", k=40, n_clusters=2).fit(X, y)


def test_n_landmarks_larger_than_n_is_refused(banana):
    X, y = banana.X_train[:40], banana.y_train[:40]
    with pytest.raises(ValueError, match=r"n_landmarks=41 is larger .*\(n=40\)"):
        ProfileSVC(n_clusters=2, n_landmarks=41).fit(X, y)
    # At most n is fine; 'auto' and None measure against all 40 here.
    assert ProfileSVC(n_clusters=2, n_landmarks=40).fit(X, y).references_.shape[0] == 40
    assert ProfileSVC(n_clusters=2, n_landmarks=None).fit(X, y).references_.shape[0] == 40


def test_rbf_gamma_scale_is_resolved_on_each_clusters_members(banana):
    from localsvm.kernels import resolve_gamma

    X, y = banana.X_train, banana.y_train
    clf = ProfileSVC(kernel="rbf", C=10.0, n_clusters=3, bandwidth=0.5, random_state=0)
    clf.fit(X, y)
    models = [m for m in clf.cluster_models_ if m is not None]
    assert models
    assert clf.gamma_.shape == (3,)
    for members, m in enumerate(clf.cluster_models_):
        if m is None:
            assert np.isnan(clf.gamma_[members])
            continue
        rows = clf.cluster_labels_ == members
        want = resolve_gamma("scale", X[rows])
        # A cluster is narrower than the whole set: its own, larger number.
        assert want > resolve_gamma("scale", X)
        assert clf.gamma_[members] == pytest.approx(want)
        assert m.kernel == "rbf" and m.gamma == pytest.approx(want)
    fixed = ProfileSVC(kernel="rbf", gamma=0.7, n_clusters=3, bandwidth=0.5, random_state=0)
    fixed.fit(X, y)
    assert all(m.gamma == 0.7 for m in fixed.cluster_models_ if m is not None)
    ref = SklearnSVC(C=10.0, gamma="scale").fit(X, y).score(banana.X_test, banana.y_test)
    assert clf.score(banana.X_test, banana.y_test) > ref - 0.03


def test_rbf_one_class_cluster_and_single_example_cluster():
    # Cluster around 0: class 0 only; the far example at 50 is a cluster of
    # its own (k-means); the rest mixes both classes.
    rng = np.random.default_rng(0)
    left = rng.normal(0.0, 0.1, size=(10, 1))
    mixed = rng.normal(10.0, 0.5, size=(12, 1))
    X = np.vstack([left, mixed, [[50.0]]])
    y = np.array([0] * 10 + [0, 1] * 6 + [1])
    clf = ProfileSVC(
        kernel="rbf", n_clusters=3, clustering="kmeans", bandwidth=4.0, random_state=0
    ).fit(X, y)
    sizes = clf.cluster_sizes_
    single = int(np.flatnonzero(sizes == 1)[0])
    pure = int(np.flatnonzero(sizes == 10)[0])
    assert clf.cluster_models_[single] is None and clf.cluster_models_[pure] is None
    assert clf.cluster_classes_[pure].tolist() == [0]
    Q = np.array([[0.05], [49.0]])
    assert clf.assign(Q).tolist() == [pure, single]
    assert clf.predict(Q).tolist() == [0, 1]
    assert clf.decision_function(Q).tolist() == [-1.0, 1.0]
    # Every cluster is one class: no SVM at all, still predicts.
    keep = np.r_[0:10, 22]
    one = ProfileSVC(kernel="rbf", n_clusters=2, clustering="kmeans", random_state=0)
    one.fit(X[keep], y[keep])
    assert all(m is None for m in one.cluster_models_)
    assert one.predict(X[[0, 1, 22]]).tolist() == [0, 0, 1]


def test_landmark_routing_uses_the_representatives(banana, monkeypatch):
    from localsvm import profile_svm

    X, y = banana.X_train, banana.y_train
    clf = ProfileSVC(
        kernel="rbf",
        n_clusters=6,
        bandwidth=0.5,
        n_landmarks=30,
        routing="mean-similarity",
        random_state=0,
    )
    clf.fit(X, y)
    reps, rep_cl = clf.representatives_, clf.representative_clusters_
    assert reps.shape[0] <= 30 + 10 * 6
    counts = np.bincount(rep_cl, minlength=6)
    assert np.all(counts >= np.minimum(clf.cluster_sizes_, profile_svm.MIN_REPRESENTATIVES))
    # Every representative is a training example of the cluster it stands for.
    for r, j in zip(reps, rep_cl, strict=True):
        hits = np.flatnonzero((X == r).all(axis=1))
        assert j in clf.cluster_labels_[hits]
    Q = banana.X_test[:80]
    sigma = np.exp(-squared_distances(reps, Q) / 0.5)
    means = np.stack([sigma[rep_cl == j].mean(0) for j in range(6)])
    np.testing.assert_array_equal(clf.assign(Q), np.argmax(means, axis=0))
    # Without landmarks the representatives are all the training examples.
    full = ProfileSVC(n_clusters=6, bandwidth=0.5, random_state=0).fit(X, y)
    np.testing.assert_array_equal(full.representatives_, X)
    # The per-cluster predictions go through run_tasks, one task per cluster.
    seen = []
    real = _regions.run_tasks

    def spy(fn, tasks, **kw):
        tasks = list(tasks)
        seen.append((fn.__name__, len(tasks)))
        return real(fn, tasks, **kw)

    monkeypatch.setattr(_regions, "run_tasks", spy)
    pred = clf.predict(Q)
    assert seen[-1][0] == "region_output"
    with_svm = {j for j in clf.assign(Q).tolist() if clf.cluster_models_[j] is not None}
    assert seen[-1][1] == len(with_svm)
    assert np.mean(pred == banana.y_test[:80]) > 0.7


def test_rbf_defaults_follow_the_data_size():
    # A kernel SVM per cluster loses accuracy as clusters shrink: 'auto' takes
    # one cluster per 10 000 examples for kernels other than the linear one,
    # so on a few thousand examples the model is the global RBF SVM.
    from sklearn.datasets import make_classification
    from sklearn.preprocessing import StandardScaler

    from localsvm import SVC
    from localsvm.profile_svc import AUTO_CLUSTER_SIZE

    X, y = make_classification(n_samples=1500, n_features=8, n_informative=5, random_state=0)
    X = StandardScaler().fit_transform(X)
    model = ProfileSVC(kernel="rbf", random_state=0).fit(X[:1000], y[:1000])
    assert model.n_clusters_ == 1
    assert model.clustering_.n_iter == 0
    ref = SVC(kernel="rbf").fit(X[:1000], y[:1000])
    np.testing.assert_array_equal(model.predict(X[1000:]), ref.predict(X[1000:]))
    assert ProfileSVC(kernel="linear")._count_clusters(1000) == 10
    assert ProfileSVC(kernel="linear")._count_clusters(4) == 4
    assert ProfileSVC(kernel="rbf")._count_clusters(AUTO_CLUSTER_SIZE + 1) == 2
    assert ProfileSVC(kernel="rbf", n_clusters=3)._count_clusters(100) == 3
