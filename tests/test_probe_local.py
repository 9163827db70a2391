"""A probe of LocalSVC, ProfileSVC, ClusterSVC, IncrementalSVC, the FLSA
classifiers, LIBSVM model files and the ONNX export: each test reproduces a
wrong answer, a crash or a refusal of valid input that the probe found, and
asserts the documented behaviour."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from localsvm import SVC, FLSAClassifier, IncrementalSVC, LocalSVC, ProfileSVC


def test_local_knn_with_more_neighbours_than_a_class_pair_holds():
    # k may be anything up to the training set's size; with three classes a
    # class pair holds fewer rows than that. The primal solver's anchors
    # used to measure their neighbours among the pair's rows only, so fit
    # refused such a k (and their neighbourhoods were not the ones the test
    # examples get: those are measured among every training example).
    # C=10 leaves free multipliers, so that each local bias is decided.
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1, 2], 10)
    X = rng.normal(size=(30, 2)) + np.c_[y, np.zeros(30)]
    Xt = rng.normal(size=(15, 2)) + np.array([1.0, 0.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for k in (21, 30):
            warm = LocalSVC(similarity="knn", k=k, C=10.0, tol=1e-6, n_jobs=1).fit(X, y)
            assert warm.solver_ == "primal"
            cold = LocalSVC(similarity="knn", k=k, C=10.0, tol=1e-6, warm_start=False, n_jobs=1)
            cold.fit(X, y)
            np.testing.assert_allclose(
                warm.decision_function(Xt), cold.decision_function(Xt), atol=1e-5
            )
            np.testing.assert_array_equal(warm.predict(Xt), cold.predict(Xt))


@pytest.mark.parametrize("bad", [-1, -5, 2.5, True, "3"])
def test_flsa_path_refuses_a_bad_max_n_support(bad):
    # A negative count reached the Rust core, whose message named its own
    # arrays; a fraction was truncated in silence.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    y = (X[:, 0] > 0).astype(int)
    clf = FLSAClassifier(n_support=5, random_state=0).fit(X, y)
    with pytest.raises((ValueError, TypeError), match="max_n_support"):
        clf.path_decision_function(X, max_n_support=bad)


def test_flsa_path_takes_any_non_negative_max_n_support():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    y = (X[:, 0] > 0).astype(int)
    clf = FLSAClassifier(n_support=5, random_state=0).fit(X, y)
    full = clf.path_decision_function(X)
    for k in (0, 3, np.int64(3), 5, 100):
        part = clf.path_decision_function(X, max_n_support=k)
        np.testing.assert_array_equal(part, full[: min(int(k), 5) + 1])


def test_incremental_batch_whose_rows_all_have_weight_zero_changes_nothing():
    # Weight 0 leaves a row out of the stream, and a later batch may lose
    # every row that way; it used to be refused ("all samples have zero or
    # negative weights") although it only leaves the model as it was.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    y = (X[:, 0] > 0).astype(int)
    clf = IncrementalSVC(gamma=0.5, n_jobs=1).partial_fit(X[:40], y[:40])
    before = clf.decision_function(X)
    clf.partial_fit(X[40:50], y[40:50], sample_weight=np.zeros(10))
    assert clf.n_seen_ == 40
    np.testing.assert_array_equal(clf.decision_function(X), before)
    # The stream goes on as if that batch had not been given.
    clf.partial_fit(X[50:], y[50:])
    ref = IncrementalSVC(gamma=0.5, n_jobs=1).partial_fit(X[:40], y[:40])
    ref.partial_fit(X[50:], y[50:])
    np.testing.assert_array_equal(clf.decision_function(X), ref.decision_function(X))
    # The first batch must still hold a row to learn from.
    with pytest.raises(ValueError, match="weight"):
        IncrementalSVC().partial_fit(X[:5], y[:5], classes=[0, 1], sample_weight=np.zeros(5))


@pytest.mark.parametrize("name", ["SVC", "NuSVC", "SVR", "NuSVR", "OneClassSVM"])
@pytest.mark.parametrize("precision", ["auto", "float64"])
def test_model_file_round_trip_is_exact_with_the_original_precision(tmp_path, name, precision):
    # save_libsvm_model promises an exact round trip; the loader's default
    # precision ('float64', LIBSVM's) is not the estimators' ('auto'), so the
    # promise holds with the original's precision (and its break_ties, which
    # the file cannot hold).
    import localsvm
    from localsvm import load_libsvm_model, save_libsvm_model

    rng = np.random.default_rng(4)
    X = rng.normal(size=(120, 4))
    Xt = rng.normal(size=(300, 4))
    y = np.digitize(X[:, 0] + 0.3 * X[:, 2], [-0.7, 0.0, 0.7])
    Est = getattr(localsvm, name)
    est = Est(precision=precision)
    if name in ("SVC", "NuSVC"):
        est.set_params(break_ties=True).fit(X, y)
    elif name == "OneClassSVM":
        est.fit(X)
    else:
        est.fit(X, X[:, 0] + 0.1 * rng.normal(size=120))
    path = tmp_path / "m.model"
    save_libsvm_model(est, path)
    loaded = load_libsvm_model(path, n_features=4, precision=precision)
    if name in ("SVC", "NuSVC"):
        loaded.set_params(break_ties=True)
    np.testing.assert_array_equal(loaded.predict(Xt), est.predict(Xt))
    if hasattr(est, "decision_function"):
        np.testing.assert_array_equal(loaded.decision_function(Xt), est.decision_function(Xt))


def test_profile_takes_an_imbalance_weight_far_above_the_distances():
    # R is any non-negative float. Far above the profiles' distances (about
    # 1e15 here) HiGHS failed on the assignment LP with an error that did
    # not name R, after churning for seconds; the LP's costs are now scaled
    # to at most 1, and such an R gives the balance-only assignment.
    rng = np.random.default_rng(10)
    X = rng.normal(size=(40, 3))
    y = np.digitize(X[:, 0], [-0.5, 0.5])
    labels = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for R in (1e14, 1e16, 1e19, 1e300):
            clf = ProfileSVC(R=R, random_state=0, n_jobs=1).fit(X, y)
            assert np.isfinite(clf.decision_function(X)).all()
            labels.append(clf.cluster_labels_)
    for other in labels[1:]:
        np.testing.assert_array_equal(other, labels[0])


def test_magkmeans_lp_reports_its_optimum_unscaled():
    from localsvm.clustering.lp import magkmeans_lp

    rng = np.random.default_rng(1)
    D = rng.uniform(0.0, 5.0, size=(12, 3))
    y = np.repeat([0, 1], 6)
    Z, optimum = magkmeans_lp(D, y, 2.0)
    codes = np.where(y == 1, 1.0, -1.0)
    # Σ Z·D + R Σ_j |Σ_i Z_ij a_i| with the two-class balance a_i = ±1.
    imbalance = np.abs((Z * codes[:, None]).sum(axis=0)).sum()
    assert optimum == pytest.approx((Z * D).sum() + 2.0 * imbalance, rel=1e-9)


@pytest.mark.parametrize("name", ["FLSAClassifier", "RFLSAClassifier", "FLSAClassifierCV"])
def test_flsa_zero_weights_keep_training_indices_and_precomputed_width(name):
    # Weight 0 leaves an example out. support_ (and each path's support)
    # indexed the examples kept, not those given to fit (SVC's rule: X of
    # fit indexed by support_ is support_vectors_), and a precomputed model
    # then refused both the full test kernel and the kept columns.
    import localsvm
    from localsvm.kernels import KernelSpec, kernel_matrix

    Est = getattr(localsvm, name)
    params = dict(n_support=8, random_state=0) | ({"cv": 3} if name.endswith("CV") else {})
    rng = np.random.default_rng(13)
    X = rng.normal(size=(60, 3))
    y = np.digitize(X[:, 0], [-0.5, 0.5])
    Xt = rng.normal(size=(20, 3))
    w = np.ones(60)
    w[::4] = 0
    keep = w > 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        weighted = Est(gamma=0.4, **params).fit(X, y, sample_weight=w)
        dropped = Est(gamma=0.4, **params).fit(X[keep], y[keep])
        np.testing.assert_array_equal(X[weighted.support_], weighted.support_vectors_)
        assert np.all(keep[weighted.support_])
        np.testing.assert_array_equal(np.flatnonzero(keep)[dropped.support_], weighted.support_)
        for a, b in zip(weighted.path_, dropped.path_, strict=True):
            np.testing.assert_array_equal(a.support, np.flatnonzero(keep)[b.support])
        np.testing.assert_array_equal(weighted.decision_function(Xt), dropped.decision_function(Xt))
        np.testing.assert_array_equal(
            weighted.path_decision_function(Xt), dropped.path_decision_function(Xt)
        )
        K = kernel_matrix(KernelSpec("rbf", gamma=0.4), X, X)
        Kt = kernel_matrix(KernelSpec("rbf", gamma=0.4), Xt, X)
        pre = Est(kernel="precomputed", **params).fit(K, y, sample_weight=w)
        assert pre.shape_fit_ == (60, 60)
        np.testing.assert_array_equal(pre.support_, weighted.support_)
        np.testing.assert_allclose(pre.decision_function(Kt), weighted.decision_function(Xt))
        np.testing.assert_allclose(
            pre.path_decision_function(Kt), weighted.path_decision_function(Xt)
        )
        with pytest.raises(ValueError, match="60"):
            pre.predict(Kt[:, keep])


def test_incremental_zero_weights_keep_stream_positions():
    # support_ holds positions in the stream counted over every row passed
    # (its docstring); rows of weight 0 were not counted, so with them
    # X[support_] was not support_vectors_ and the positions pointed at
    # other rows.
    rng = np.random.default_rng(1)
    X = rng.normal(size=(80, 2))
    y = np.digitize(X[:, 0], [-0.5, 0.5])
    w = np.ones(80)
    w[::3] = 0
    keep = w > 0
    weighted = IncrementalSVC(gamma=0.5, n_jobs=1).fit(X, y, sample_weight=w)
    dropped = IncrementalSVC(gamma=0.5, n_jobs=1).fit(X[keep], y[keep])
    assert weighted.n_seen_ == dropped.n_seen_ == keep.sum()
    np.testing.assert_array_equal(X[weighted.support_], weighted.support_vectors_)
    assert np.all(keep[weighted.support_])
    np.testing.assert_array_equal(np.flatnonzero(keep)[dropped.support_], weighted.support_)
    np.testing.assert_array_equal(weighted.decision_function(X), dropped.decision_function(X))
    # The same stream in batches (one of them all weight 0) and row by row.
    for step in (1, 7, 30):
        clf = IncrementalSVC(gamma=0.5, n_jobs=1)
        clf.partial_fit(X[:10], y[:10], classes=[0, 1, 2], sample_weight=np.r_[0, np.ones(9)])
        for s in range(10, 80, step):
            sw = w[s : s + step]
            if s == 10:
                sw = np.zeros_like(sw)
            clf.partial_fit(X[s : s + step], y[s : s + step], sample_weight=sw)
        learnt = keep.copy()
        learnt[:10] = np.arange(10) > 0
        learnt[10 : 10 + step] = False
        np.testing.assert_array_equal(X[clf.support_], clf.support_vectors_)
        assert np.all(learnt[clf.support_])
        assert clf.n_seen_ == learnt.sum()
        assert set(clf.history_["n_seen"].tolist()) == set(np.flatnonzero(learnt).tolist())


def test_profile_warns_once_for_all_its_cluster_svms():
    # Each cluster's SVC used to warn on its own: one ConvergenceWarning per
    # cluster, none saying which cluster or how many of them stopped.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 2))
    y = np.digitize(X[:, 0] * X[:, 1] + 0.3 * rng.normal(size=200), [-0.3, 0.3])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf = ProfileSVC(max_iter=1, n_clusters=10, random_state=0, n_jobs=1).fit(X, y)
    convergence = [w for w in caught if issubclass(w.category, ConvergenceWarning)]
    models = [m for m in clf.cluster_models_ if m is not None]
    stopped = sum(m.fit_status_ != 0 for m in models)
    assert stopped > 1
    assert len(convergence) == 1
    assert f"{stopped} of {len(models)} cluster SVMs" in str(convergence[0].message)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ProfileSVC(n_clusters=10, random_state=0, n_jobs=1).fit(X, y)
    assert not [w for w in caught if issubclass(w.category, ConvergenceWarning)]


def test_local_binary_tie_without_neighbours_predicts_as_its_decision_value():
    # Far from every training example (every σ 0) the fallback is the class
    # counts; with balanced classes their margin, the decision value, is 0,
    # which predicts classes_[1] by the rule of every two-class model here
    # (as LIBSVM's vote); predict took the first class instead.
    from localsvm._multiclass import binary_index

    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    y = np.repeat(["no", "yes"], 20)
    far = rng.normal(size=(10, 2)) * 100
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        clf = LocalSVC(bandwidth=1e-3, n_jobs=1).fit(X, y)
        dec = clf.decision_function(far)
        assert np.all(dec == 0.0)
        np.testing.assert_array_equal(clf.predict(far), clf.classes_[binary_index(dec)])
        both = np.vstack([X[:5], far])
        np.testing.assert_array_equal(
            clf.predict(both), clf.classes_[binary_index(clf.decision_function(both))]
        )


def test_onnx_of_a_libsvm_file_breaks_vote_ties_as_the_loaded_model(tmp_path):
    # A model read from a LIBSVM file gives a tie of one-vs-one votes to the
    # first label of the file's label line (LIBSVM's rule; svm-train lists
    # labels in their order of appearance). Its ONNX export gave ties to the
    # smallest label: with three classes a cyclic vote is a tie, and 3 % of
    # these rows were labelled otherwise than by predict (and LIBSVM).
    pytest.importorskip("skl2onnx")
    ort = pytest.importorskip("onnxruntime")
    svmutil = pytest.importorskip("libsvm.svmutil", reason="libsvm-official is not installed")
    from localsvm import load_libsvm_model
    from localsvm._multiclass import ovo_votes
    from localsvm.onnx import to_onnx

    rng = np.random.default_rng(9)
    X = rng.normal(size=(150, 2))
    y = np.array([7, -2, 3])[rng.integers(0, 3, 150)]
    trained = svmutil.svm_train(y.astype(float).tolist(), X.tolist(), "-t 2 -g 2 -c 10 -q")
    path = tmp_path / "libsvm.model"
    svmutil.svm_save_model(str(path), trained)
    assert "label 7 3 -2" in path.read_text().splitlines()
    Xt = rng.normal(size=(2000, 2))
    reference = np.asarray(svmutil.svm_predict([0] * len(Xt), Xt.tolist(), trained, "-q")[0])
    model = load_libsvm_model(path, n_features=2)
    np.testing.assert_array_equal(model.predict(Xt), reference)
    votes = ovo_votes(model._model_decision(Xt), 3)
    assert ((votes == votes.max(axis=1, keepdims=True)).sum(axis=1) > 1).sum() > 20
    for double in (False, True):
        dtype = np.float64 if double else np.float32
        onx = to_onnx(model, Xt[:1].astype(dtype), double=double)
        session = ort.InferenceSession(onx.SerializeToString())
        label = session.run(None, {session.get_inputs()[0].name: Xt.astype(dtype)})[0]
        np.testing.assert_array_equal(np.asarray(label).ravel(), reference)


def test_libsvm_file_saved_again_keeps_its_label_order(tmp_path):
    # A model read from a LIBSVM file gives vote ties to the first label of
    # the file's label line. save_libsvm_model wrote the labels sorted, so
    # the file saved again gave ties to the smallest label: 66 of 2000 rows
    # changed their label through load → save → load (and in LIBSVM) with
    # three classes.
    svmutil = pytest.importorskip("libsvm.svmutil", reason="libsvm-official is not installed")
    from localsvm import load_libsvm_model, save_libsvm_model

    rng = np.random.default_rng(9)
    X = rng.normal(size=(150, 2))
    y = np.array([7, -2, 3, 5])[rng.integers(0, 4, 150)]
    trained = svmutil.svm_train(y.astype(float).tolist(), X.tolist(), "-t 2 -g 2 -c 10 -q")
    first = tmp_path / "libsvm.model"
    svmutil.svm_save_model(str(first), trained)
    label_line = [line for line in first.read_text().splitlines() if line.startswith("label")]
    order = [int(v) for v in label_line[0].split()[1:]]
    assert order != sorted(order)
    Xt = rng.normal(size=(2000, 2))
    model = load_libsvm_model(first, n_features=2)
    again = tmp_path / "again.model"
    save_libsvm_model(model, again)
    assert [line for line in again.read_text().splitlines() if line.startswith("label")] == (
        label_line
    )
    reloaded = load_libsvm_model(again, n_features=2)
    np.testing.assert_array_equal(reloaded.predict(Xt), model.predict(Xt))
    np.testing.assert_array_equal(reloaded.decision_function(Xt), model.decision_function(Xt))
    theirs = svmutil.svm_load_model(str(again))
    labels = np.asarray(svmutil.svm_predict([0] * len(Xt), Xt.tolist(), theirs, "-q")[0])
    np.testing.assert_array_equal(labels, model.predict(Xt))
    # A model fitted here keeps its sorted labels.
    fitted = SVC(gamma=2.0).fit(X, y)
    save_libsvm_model(fitted, again)
    assert "label -2 3 5 7" in again.read_text().splitlines()


def test_cluster_binary_tie_predicts_as_its_decision_value():
    # Two classes mirrored about x0 = 0: every point of that line is as far
    # from both hyperplanes, its decision value d_0 − d_1 is 0, which
    # predicts classes_[1] by the rule of every two-class model here;
    # predict took the first of the equal distances, classes_[0].
    from localsvm import ClusterSVC
    from localsvm._multiclass import binary_index

    X = np.array([[-1, 0], [-2, 1], [-2, -1], [1, 0], [2, 1], [2, -1]], dtype=float)
    y = np.array([0, 0, 0, 1, 1, 1])
    clf = ClusterSVC(kernel="linear").fit(X, y)
    Q = np.array([[0.0, 0.0], [0.0, 5.0], [0.0, -3.0], [-1.0, 0.0], [1.5, 2.0]])
    dec = clf.decision_function(Q)
    assert np.all(dec[:3] == 0.0)
    np.testing.assert_array_equal(clf.predict(Q), clf.classes_[binary_index(dec)])


def test_flsa_cv_folds_given_as_indices_refer_to_the_rows_given():
    # cv as (train, test) index arrays names rows of X as given to fit; with
    # sample_weight zeros they were applied to the rows kept: shifted onto
    # other rows in silence, or an IndexError past the end.
    from localsvm import FLSAClassifierCV

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    y = (X[:, 0] + 0.3 * rng.normal(size=60) > 0).astype(int)
    w = np.ones(60)
    w[20:30] = 0
    keep = np.flatnonzero(w > 0)
    folds = [(np.arange(30, 60), np.arange(0, 30)), (np.arange(0, 30), np.arange(30, 60))]
    where = np.full(60, -1)
    where[keep] = np.arange(keep.size)
    kept_folds = [(where[tr][where[tr] >= 0], where[te][where[te] >= 0]) for tr, te in folds]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        weighted = FLSAClassifierCV(cv=folds, n_support=6).fit(X, y, sample_weight=w)
        dropped = FLSAClassifierCV(cv=kept_folds, n_support=6).fit(X[keep], y[keep])
    np.testing.assert_array_equal(weighted.cv_scores_, dropped.cv_scores_)
    assert weighted.best_n_support_ == dropped.best_n_support_
    # A fold left without a row of positive weight is refused, naming cv.
    with pytest.raises(ValueError, match="cv"):
        FLSAClassifierCV(cv=[(np.arange(30, 60), np.arange(20, 30))]).fit(X, y, sample_weight=w)
