"""localsvm.SVC: parity with scikit-learn's SVC, the scikit-learn ecosystem,
and clear errors for bad input."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
from sklearn.calibration import CalibratedClassifierCV
from sklearn.datasets import make_classification
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC as SklearnSVC

from localsvm import SVC
from localsvm.datasets import load_iris
from localsvm.kernels import KernelSpec, kernel_matrix_numpy


@pytest.fixture(scope="module")
def iris():
    d = load_iris()
    return StandardScaler().fit_transform(d.X), d.y


@pytest.fixture(scope="module")
def four_class():
    X, y = make_classification(
        n_samples=300, n_features=6, n_informative=4, n_classes=4, random_state=3
    )
    return X, y


def assert_same_model(ours, theirs, X, *, atol=1e-3):
    np.testing.assert_array_equal(ours.classes_, theirs.classes_)
    np.testing.assert_array_equal(ours.support_, theirs.support_)
    np.testing.assert_array_equal(ours.n_support_, theirs.n_support_)
    np.testing.assert_allclose(ours.dual_coef_, theirs.dual_coef_, atol=atol)
    np.testing.assert_allclose(ours.intercept_, theirs.intercept_, atol=atol)
    np.testing.assert_allclose(ours.decision_function(X), theirs.decision_function(X), atol=atol)
    np.testing.assert_array_equal(ours.predict(X), theirs.predict(X))


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"kernel": "linear", "C": 0.5},
        {"kernel": "poly", "degree": 2, "gamma": 0.3, "coef0": 1.0},
        {"kernel": "sigmoid", "gamma": 0.05, "coef0": -0.5},
        {"gamma": "auto", "C": 10.0},
    ],
    ids=["rbf", "linear", "poly", "sigmoid", "auto"],
)
def test_binary_matches_sklearn(banana, params):
    X, y = banana.X_train, banana.y_train
    ours = SVC(tol=1e-6, **params).fit(X, y)
    theirs = SklearnSVC(tol=1e-6, **params).fit(X, y)
    assert_same_model(ours, theirs, banana.X_test[:500])
    assert ours.dual_coef_.shape == (1, ours.support_.size)
    assert ours.decision_function(X).shape == (X.shape[0],)


@pytest.mark.parametrize("shape", ["ovr", "ovo"])
def test_multiclass_ovo_matches_sklearn(four_class, shape):
    X, y = four_class
    ours = SVC(tol=1e-6, decision_function_shape=shape).fit(X, y)
    theirs = SklearnSVC(tol=1e-6, decision_function_shape=shape).fit(X, y)
    assert_same_model(ours, theirs, X)
    n_models = 6
    assert ours.dual_coef_.shape == (3, ours.support_.size)
    assert ours.intercept_.shape == ours.n_iter_.shape == (n_models,)
    assert ours.decision_function(X).shape == (X.shape[0], 4 if shape == "ovr" else n_models)


@pytest.mark.parametrize("n_classes", [2, 4])
def test_linear_kernel_weights(four_class, n_classes):
    X, y = four_class
    if n_classes == 2:
        y = y % 2
    ours = SVC(kernel="linear", tol=1e-6).fit(X, y)
    theirs = SklearnSVC(kernel="linear", tol=1e-6).fit(X, y)
    np.testing.assert_allclose(ours.coef_, theirs.coef_, atol=1e-3)
    # Prediction goes through w, and agrees with the kernel expansion.
    expansion = ours.dual_coef_ @ (ours.support_vectors_ @ X.T)
    if n_classes == 2:
        np.testing.assert_allclose(ours.decision_function(X), expansion[0] + ours.intercept_[0])
    np.testing.assert_array_equal(ours.predict(X), theirs.predict(X))
    with pytest.raises(AttributeError, match="linear kernel"):
        _ = SVC().fit(X, y).coef_


def test_break_ties(four_class):
    X, y = four_class
    ours = SVC(break_ties=True).fit(X, y)
    theirs = SklearnSVC(break_ties=True).fit(X, y)
    np.testing.assert_array_equal(ours.predict(X), theirs.predict(X))
    np.testing.assert_array_equal(
        ours.predict(X), ours.classes_[ours.decision_function(X).argmax(1)]
    )
    with pytest.raises(ValueError, match="break_ties must be False"):
        SVC(break_ties=True, decision_function_shape="ovo").fit(X, y).predict(X)


def test_multiclass_ovr(four_class):
    X, y = four_class
    clf = SVC(multiclass="ovr", tol=1e-8).fit(X, y)
    dec = clf.decision_function(X)
    assert dec.shape == (X.shape[0], 4)
    assert clf.dual_coef_.shape == (4, clf.support_.size)
    assert clf.intercept_.shape == (4,)
    np.testing.assert_array_equal(clf.predict(X), clf.classes_[dec.argmax(1)])
    # Each row is one class-vs-rest SVM: check it against a binary fit.
    binary = SVC(tol=1e-8).fit(X, np.where(y == 2, 1, 0))
    np.testing.assert_allclose(dec[:, 2], binary.decision_function(X), atol=1e-5)
    # The decision values are the kernel expansion the attributes describe
    # (prediction runs in f32, hence the tolerance).
    spec = clf.kernel_spec_
    expansion = (
        clf.dual_coef_ @ kernel_matrix_numpy(spec, clf.support_vectors_, X)
        + clf.intercept_[:, None]
    )
    np.testing.assert_allclose(expansion.T, dec, atol=1e-5)
    assert clf.score(X, y) > 0.8


def test_string_labels_and_label_order(iris):
    X, y = iris
    names = np.array(["setosa", "versicolor", "virginica"])[y]
    clf = SVC().fit(X, names)
    assert list(clf.classes_) == ["setosa", "versicolor", "virginica"]
    np.testing.assert_array_equal(clf.predict(X) == names, SVC().fit(X, y).predict(X) == y)


def test_class_weight_matches_sklearn(four_class):
    X, y = four_class
    for cw in ("balanced", {0: 2.0, 1: 0.5, 2: 1.0, 3: 3.0}):
        ours = SVC(class_weight=cw, tol=1e-6).fit(X, y)
        theirs = SklearnSVC(class_weight=cw, tol=1e-6).fit(X, y)
        np.testing.assert_allclose(ours.class_weight_, theirs.class_weight_)
        assert_same_model(ours, theirs, X)


def test_sample_weight_matches_sklearn(banana):
    X, y = banana.X_train, banana.y_train
    w = np.random.default_rng(0).uniform(0.1, 3.0, size=y.shape)
    ours = SVC(tol=1e-6).fit(X, y, sample_weight=w)
    theirs = SklearnSVC(tol=1e-6).fit(X, y, sample_weight=w)
    assert_same_model(ours, theirs, banana.X_test[:500])


def test_sample_weight_means_removal_and_repetition(banana):
    X, y = banana.X_train[:120], banana.y_train[:120]
    w = np.ones(120)
    w[:10] = 0.0
    w[10:20] = 2.0
    # A fixed gamma: 'scale' would see the variance of the repeated data.
    weighted = SVC(gamma=1.0, tol=1e-9).fit(X, y, sample_weight=w)
    idx = np.r_[np.arange(10, 120), np.arange(10, 20)]
    repeated = SVC(gamma=1.0, tol=1e-9).fit(X[idx], y[idx])
    test = banana.X_test[:300]
    np.testing.assert_allclose(
        weighted.decision_function(test), repeated.decision_function(test), atol=1e-6
    )
    assert weighted.dual_objective_[0] == pytest.approx(repeated.dual_objective_[0], rel=1e-9)


def test_precomputed_kernel(banana):
    X, y = banana.X_train, banana.y_train
    spec = KernelSpec("rbf", gamma=0.5)
    K = kernel_matrix_numpy(spec, X, X)
    pre = SVC(kernel="precomputed", tol=1e-8).fit(K, y)
    rbf = SVC(gamma=0.5, tol=1e-8).fit(X, y)
    assert pre.support_vectors_.shape == (0, 0)
    np.testing.assert_array_equal(pre.support_, rbf.support_)
    Kt = kernel_matrix_numpy(spec, banana.X_test[:200], X)
    np.testing.assert_allclose(
        pre.decision_function(Kt), rbf.decision_function(banana.X_test[:200]), atol=1e-5
    )
    assert pre.__sklearn_tags__().input_tags.pairwise
    with pytest.raises(ValueError, match="square"):
        SVC(kernel="precomputed").fit(K[:, :50], y)
    with pytest.raises(ValueError, match="features"):
        pre.predict(Kt[:, :50])


def test_fitted_attributes(banana):
    clf = SVC().fit(banana.X_train, banana.y_train)
    assert clf.n_features_in_ == 2
    assert clf.fit_status_ == 0
    assert clf.backend_ == "rust"
    assert clf.support_vectors_.shape == (clf.support_.size, 2)
    np.testing.assert_array_equal(clf.support_vectors_, banana.X_train[clf.support_])
    assert clf.n_support_.sum() == clf.support_.size
    assert clf.n_iter_.dtype.kind == "i" and clf.n_iter_[0] > 0
    assert clf.shape_fit_ == banana.X_train.shape
    # The dual objective matches the coefficients.
    spec = clf.kernel_spec_
    c = clf.dual_coef_[0]
    K = kernel_matrix_numpy(spec, clf.support_vectors_, clf.support_vectors_)
    assert clf.dual_objective_[0] == pytest.approx(0.5 * c @ K @ c - np.abs(c).sum(), rel=1e-6)


def test_backends_agree_through_svc(banana):
    X, y = banana.X_train[:200], banana.y_train[:200]
    rust = SVC(tol=1e-6).fit(X, y)
    ref = SVC(tol=1e-6, backend="scipy").fit(X, y)
    assert ref.backend_ == "scipy"
    assert ref.dual_objective_[0] == pytest.approx(rust.dual_objective_[0], rel=1e-4)
    assert np.mean(ref.predict(banana.X_test) == rust.predict(banana.X_test)) >= 0.995


def test_serial_and_threaded_fits_agree(four_class):
    X, y = four_class
    a = SVC(n_jobs=1).fit(X, y)
    b = SVC(n_jobs=4).fit(X, y)
    np.testing.assert_array_equal(a.dual_coef_, b.dual_coef_)
    np.testing.assert_array_equal(a.intercept_, b.intercept_)


@pytest.mark.parametrize("n_jobs", [1, 3])
def test_chunked_one_vs_one_solves_match_one_solve_per_problem(four_class, n_jobs, caplog):
    # verbose=1 reports problem by problem, so each is solved on its own;
    # without it the problems go to the backend in chunks (solve_many).
    X, y = four_class
    chunked = SVC(n_jobs=n_jobs).fit(X, y)
    with caplog.at_level("INFO"):
        single = SVC(n_jobs=n_jobs, verbose=1).fit(X, y)
    assert "binary" in caplog.text
    for attr in ("dual_coef_", "intercept_", "support_", "n_iter_", "kernel_evaluations_"):
        np.testing.assert_array_equal(getattr(chunked, attr), getattr(single, attr))


def test_max_iter_warns(banana):
    with pytest.warns(ConvergenceWarning, match="max_iter=5"):
        clf = SVC(max_iter=5).fit(banana.X_train, banana.y_train)
    assert clf.fit_status_ == 1
    assert clf.n_iter_[0] == 5


def test_converged_fit_does_not_warn(banana):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        SVC().fit(banana.X_train, banana.y_train)


def test_pipeline_grid_search_and_calibration(iris):
    X, y = iris
    pipe = make_pipeline(StandardScaler(), SVC())
    search = GridSearchCV(pipe, {"svc__C": [0.1, 1.0, 10.0]}, cv=3).fit(X, y)
    assert search.best_score_ > 0.9
    cal = CalibratedClassifierCV(SVC(), ensemble=False, cv=3).fit(X, y)
    proba = cal.predict_proba(X)
    assert proba.shape == (X.shape[0], 3)
    np.testing.assert_allclose(proba.sum(1), 1.0)
    assert np.mean(cal.predict(X) == y) > 0.9


def test_pickle_roundtrip(four_class):
    X, y = four_class
    clf = SVC().fit(X, y)
    back = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(back.predict(X), clf.predict(X))
    np.testing.assert_array_equal(back.decision_function(X), clf.decision_function(X))


X_OK = np.array([[0.0, 1.0], [1.0, 0.0], [1.0, 1.0], [0.0, 0.0]])
Y_OK = np.array([0, 1, 1, 0])


@pytest.mark.parametrize(
    ("params", "X", "y", "message"),
    [
        ({}, np.array([[np.nan, 1.0], [1.0, 0.0]]), [0, 1], "NaN"),
        ({}, np.array([[np.inf, 1.0], [1.0, 0.0]]), [0, 1], "infinity"),
        ({}, X_OK, [0, 0, 0, 0], "got 1 class"),
        ({}, X_OK, [0, 1, 1], "inconsistent numbers of samples"),
        ({}, np.empty((0, 2)), [], "0 sample"),
        ({"C": 0.0}, X_OK, Y_OK, "'C' parameter"),
        ({"C": -1.0}, X_OK, Y_OK, "'C' parameter"),
        ({"gamma": 0.0}, X_OK, Y_OK, "'gamma' parameter"),
        ({"gamma": -0.5}, X_OK, Y_OK, "'gamma' parameter"),
        ({"gamma": "large"}, X_OK, Y_OK, "'gamma' parameter"),
        ({"kernel": "cubic"}, X_OK, Y_OK, "'kernel' parameter"),
        ({"backend": "nope"}, X_OK, Y_OK, "unknown backend 'nope'; registered backends: .*'rust'"),
        ({"tol": 0.0}, X_OK, Y_OK, "'tol' parameter"),
        ({"max_iter": -2}, X_OK, Y_OK, "'max_iter' parameter"),
        ({"multiclass": "all"}, X_OK, Y_OK, "'multiclass' parameter"),
        ({"kernel": "precomputed"}, X_OK, Y_OK, "square"),
        ({"class_weight": {0: 1.0, 1: 1.0, 5: 2.0}}, X_OK, Y_OK, r"not in y: \[5\]"),
        # gamma='scale' from a variance that overflows float64
        ({}, X_OK * 1e154, Y_OK, "variance of X, which overflows"),
        # a linear kernel whose values overflow: never a fitted model with a
        # NaN objective, but an error naming the cause
        ({"kernel": "linear"}, X_OK * 1e160, Y_OK, "linear kernel's values overflow float64"),
        # variance that underflows: not the silent gamma=1.0 of a constant X
        ({}, X_OK * 1e-300, Y_OK, "variance of X, which underflows"),
        ({"kernel": "linear"}, X_OK * 1e-300, Y_OK, "values underflow float64"),
    ],
)
def test_bad_input_raises_value_error(params, X, y, message):
    with pytest.raises(ValueError, match=message):
        SVC(**params).fit(X, y)


def test_bad_sample_weight():
    with pytest.raises(ValueError, match="sample_weight must have shape"):
        SVC().fit(X_OK, Y_OK, sample_weight=[1.0, 2.0])
    # As scikit-learn (LIBSVM): a weight <= 0 leaves its sample out, with
    # scikit-learn's messages when nothing or one class is left.
    with pytest.raises(ValueError, match="all samples have zero or negative weights"):
        SVC().fit(X_OK, Y_OK, sample_weight=[-1.0, 0.0, -2.0, 0.0])
    with pytest.raises(ValueError, match="all samples have zero or negative weights"):
        SVC().fit(X_OK, Y_OK, sample_weight=np.zeros(4))
    with pytest.raises(ValueError, match="positive weights belong to the same class"):
        SVC().fit(X_OK, Y_OK, sample_weight=[1.0, -1.0, 0.0, 1.0])
    with pytest.raises(ValueError, match="one class"):
        # Every sample kept, but class_weight leaves one class without a box.
        SVC(class_weight={Y_OK[0]: 0.0}).fit(X_OK, Y_OK)


def test_predict_errors():
    with pytest.raises(NotFittedError):
        SVC().predict(X_OK)
    clf = SVC().fit(X_OK, Y_OK)
    with pytest.raises(ValueError, match="features"):
        clf.predict(np.ones((2, 3)))
    with pytest.raises(ValueError, match="NaN"):
        clf.decision_function(np.array([[np.nan, 0.0]]))


def test_sparse_input_gives_the_dense_answer():
    # Sparse input is native (test_sparse.py has the full comparison).
    import scipy.sparse as sp

    sparse = SVC(tol=1e-8).fit(sp.csr_matrix(X_OK), Y_OK)
    dense = SVC(tol=1e-8, precision="float64").fit(X_OK, Y_OK)
    assert sp.issparse(sparse.support_vectors_)
    np.testing.assert_array_equal(sparse.support_, dense.support_)
    np.testing.assert_allclose(
        sparse.decision_function(sp.csr_matrix(X_OK)), dense.decision_function(X_OK), atol=1e-8
    )
