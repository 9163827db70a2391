"""class_weight and sample_weight on every classifier: what each honours, and
how (scikit-learn's SVC semantics: per-example boxes C · class_weight ·
sample_weight, examples of weight <= 0 left out)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.utils.class_weight import compute_class_weight

from localsvm import (
    SVC,
    CellSVC,
    ClusterSVC,
    FLSAClassifier,
    FLSAClassifierCV,
    IncrementalSVC,
    LocalSVC,
    ProfileSVC,
    RFLSAClassifier,
)
from localsvm.datasets import load_banana, load_iris

#: The estimators that weigh their examples.
WEIGHTED = [
    CellSVC(n_cells=2, random_state=0),
    LocalSVC(),
    LocalSVC(kernel="rbf", solver="dual"),
    ClusterSVC(),
    ClusterSVC(kernel="linear"),
    ProfileSVC(n_clusters=2, clustering="magkmeans-greedy", random_state=0),
]
#: The estimators that take sample_weight only to leave examples out.
UNWEIGHTED = [
    IncrementalSVC(),
    FLSAClassifier(n_support=10),
    RFLSAClassifier(n_support=10, random_state=0),
    FLSAClassifierCV(n_support=10, cv=3),
]


def _name(est) -> str:
    return repr(est)


@pytest.fixture(scope="module")
def banana():
    d = load_banana()
    return d.X_train[:240], d.y_train[:240], d.X_test[:300]


def _decision(model, X):
    return model.decision_function(X)


@pytest.mark.parametrize("est", WEIGHTED + UNWEIGHTED, ids=_name)
def test_zero_weight_means_removal(est, banana):
    X, y, X_test = banana
    w = np.ones(y.shape[0])
    w[::7] = 0.0
    w[3::11] = -1.0  # negative weights are left out too, as LIBSVM's
    kept = w > 0
    weighted = clone(est).fit(X, y, sample_weight=w)
    removed = clone(est).fit(X[kept], y[kept])
    np.testing.assert_array_equal(_decision(weighted, X_test), _decision(removed, X_test))


@pytest.mark.parametrize("est", WEIGHTED + UNWEIGHTED, ids=_name)
def test_unit_weights_change_nothing(est, banana):
    X, y, X_test = banana
    a = clone(est).fit(X, y, sample_weight=np.ones(y.shape[0]))
    b = clone(est).fit(X, y)
    np.testing.assert_array_equal(_decision(a, X_test), _decision(b, X_test))


@pytest.mark.parametrize("est", WEIGHTED + UNWEIGHTED, ids=_name)
def test_all_zero_weights_raise(est, banana):
    X, y, _ = banana
    with pytest.raises(ValueError, match="zero"):
        clone(est).fit(X, y, sample_weight=np.zeros(y.shape[0]))
    with pytest.raises(ValueError, match="shape"):
        clone(est).fit(X, y, sample_weight=np.ones(3))


@pytest.mark.parametrize(
    "est",
    [
        # One cell or one cluster: nothing computed from the rows but the
        # SVM itself (fixed gamma and bandwidth), which the maths makes equal.
        CellSVC(n_cells=1, gamma=1.0, tol=1e-9),
        ProfileSVC(n_clusters=1, kernel="rbf", gamma=1.0, bandwidth=1.0, tol=1e-9),
        LocalSVC(bandwidth=0.5, kernel="rbf", gamma=1.0, solver="dual", tol=1e-9),
        LocalSVC(bandwidth=0.5, tol=1e-9),
        ClusterSVC(kernel="linear", tol=1e-9),
    ],
    ids=_name,
)
def test_integer_weights_equal_repeated_rows(est, banana):
    # Weight 2 on a row is its box 2C, which is the dual of the row twice
    # (the two copies' multipliers add up), as LIBSVM scales its boxes.
    X, y, X_test = banana
    w = np.ones(y.shape[0])
    w[:15] = 2.0
    w[15:20] = 3.0
    w[20:25] = 0.0
    rows = np.r_[
        np.arange(25, y.shape[0]), np.repeat(np.arange(15), 2), np.repeat(np.arange(15, 20), 3)
    ]
    weighted = clone(est).fit(X, y, sample_weight=w)
    repeated = clone(est).fit(X[rows], y[rows])
    # The primal solver of the linear local problems smooths the hinge by
    # 0.45·tol: equal to about 1e-6 there, to the solver's tolerance elsewhere.
    np.testing.assert_allclose(_decision(weighted, X_test), _decision(repeated, X_test), atol=1e-5)


def test_cluster_svc_weights_the_own_class_term_too():
    # Repeating an example counts it twice in its own class's ||P u||², not
    # only in its slack elsewhere: the iris fit with repeated rows.
    d = load_iris()
    X, y = d.X, d.y
    w = np.ones(y.shape[0])
    w[10:30] = 2.0
    w[60:65] = 3.0
    rows = np.r_[np.arange(y.shape[0]), np.arange(10, 30), np.repeat(np.arange(60, 65), 2)]
    a = ClusterSVC(kernel="linear", tol=1e-10).fit(X, y, sample_weight=w)
    b = ClusterSVC(kernel="linear", tol=1e-10).fit(X[rows], y[rows])
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(X), atol=1e-6)
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-6)


def _imbalanced():
    X, y = make_classification(
        n_samples=900,
        n_features=6,
        n_informative=4,
        weights=[0.9],
        class_sep=0.6,
        flip_y=0.02,
        random_state=3,
    )
    return X[:600], y[:600], X[600:], y[600:]


@pytest.mark.parametrize(
    "est",
    [
        CellSVC(n_cells=3, random_state=0),
        LocalSVC(),
        ClusterSVC(),
        ProfileSVC(n_clusters=3, clustering="magkmeans-greedy", random_state=0),
        SVC(),
    ],
    ids=_name,
)
def test_balanced_class_weight_moves_the_decision_to_the_minority(est, banana):
    X, y, X_test, y_test = _imbalanced()
    plain = clone(est).fit(X, y)
    balanced = clone(est).set_params(class_weight="balanced").fit(X, y)
    np.testing.assert_allclose(
        balanced.class_weight_, compute_class_weight("balanced", classes=np.unique(y), y=y)
    )
    minority_plain = np.mean(plain.predict(X_test) == 1)
    minority_balanced = np.mean(balanced.predict(X_test) == 1)
    assert minority_balanced > minority_plain
    # The minority class is found more often (recall), as weighting is for.
    recall = [np.mean(m.predict(X_test[y_test == 1]) == 1) for m in (plain, balanced)]
    assert recall[1] > recall[0]


def test_class_weight_and_sample_weight_compose(banana):
    # class_weight {c: k} equals sample_weight k on class c's rows.
    X, y, X_test = banana
    classes = np.unique(y)
    for est in (CellSVC(n_cells=2, random_state=0), LocalSVC(), ClusterSVC()):
        a = clone(est).set_params(class_weight={classes[0]: 3.0}).fit(X, y)
        w = np.where(y == classes[0], 3.0, 1.0)
        b = clone(est).fit(X, y, sample_weight=w)
        np.testing.assert_array_equal(a.decision_function(X_test), b.decision_function(X_test))
        half = np.where(y == classes[0], 2.0, 1.0)
        c = clone(est).set_params(class_weight={classes[0]: 1.5}).fit(X, y, sample_weight=half)
        np.testing.assert_allclose(
            c.decision_function(X_test), b.decision_function(X_test), atol=1e-9
        )


def test_balanced_is_computed_on_the_whole_training_set():
    X, y, _, _ = _imbalanced()
    want = compute_class_weight("balanced", classes=np.unique(y), y=y)
    model = CellSVC(n_cells=4, class_weight="balanced", random_state=0).fit(X, y)
    np.testing.assert_array_equal(model.class_weight_, want)
    # Every cell SVM sees the whole set's factors, not its own cell's.
    for cell in model.cell_models_:
        if cell is not None:
            boxes = {round(float(b), 12) for b in np.abs(cell.dual_coef_).max(axis=1)}
            assert max(boxes) <= want.max() + 1e-12


@pytest.mark.parametrize("est", WEIGHTED, ids=_name)
def test_unknown_class_in_class_weight_is_named(est, banana):
    X, y, _ = banana
    with pytest.raises(ValueError, match="not in y"):
        clone(est).set_params(class_weight={7: 2.0}).fit(X, y)


def test_a_class_left_without_weight_is_refused():
    d = load_iris()
    w = np.where(d.y == 2, 0.0, 1.0)
    for est in (CellSVC(), ClusterSVC(), FLSAClassifier(n_support=5)):
        with pytest.raises(ValueError, match=r"classes \[2\]"):
            clone(est).fit(d.X, d.y, sample_weight=w)


@pytest.mark.parametrize("est", UNWEIGHTED, ids=_name)
def test_weights_the_algorithm_cannot_honour_are_refused(est, banana):
    X, y, _ = banana
    w = np.ones(y.shape[0])
    w[:10] = 2.0
    with pytest.raises(ValueError, match="SVC or CellSVC"):
        clone(est).fit(X, y, sample_weight=w)
    assert "class_weight" not in est.get_params()


def test_flsa_takes_one_common_weight():
    d = load_banana()
    X, y = d.X_train[:200], d.y_train[:200]
    a = FLSAClassifier(n_support=10).fit(X, y, sample_weight=np.full(200, 3.0))
    b = FLSAClassifier(n_support=10).fit(X, y)
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X))
    with pytest.raises(ValueError, match="weight 1"):
        IncrementalSVC().fit(X, y, sample_weight=np.full(200, 3.0))


def test_partial_fit_leaves_out_rows_of_weight_zero(banana):
    X, y, X_test = banana
    w = np.ones(y.shape[0])
    w[5::9] = 0.0
    kept = w > 0
    stream = IncrementalSVC(gamma=1.0)
    for s in range(0, y.shape[0], 60):
        part = slice(s, s + 60)
        stream.partial_fit(X[part], y[part], classes=np.unique(y), sample_weight=w[part])
    alone = IncrementalSVC(gamma=1.0).fit(X[kept], y[kept])
    assert stream.n_seen_ == int(kept.sum())
    np.testing.assert_array_equal(stream.decision_function(X_test), alone.decision_function(X_test))
    with pytest.raises(ValueError, match="SVC or CellSVC"):
        stream.partial_fit(X[:10], y[:10], sample_weight=np.full(10, 0.5))


def test_profile_svc_fit_predict_passes_the_weights_on(banana):
    """fit_predict weighs the examples as fit does, in both of its modes."""
    X, y, Q = banana
    w = np.where(y == y[0], 3.0, 0.5)
    base = ProfileSVC(n_clusters=2, clustering="magkmeans-greedy", random_state=0)
    fitted = clone(base).fit(X, y, sample_weight=w)
    np.testing.assert_array_equal(base.fit_predict(X, y, sample_weight=w), fitted.predict(X))
    np.testing.assert_array_equal(base.fit_predict(X, y, Q, sample_weight=w), fitted.predict(Q))
    tr = clone(base).set_params(transductive=True)
    by_fit = clone(tr).fit(X, y, X_test=Q, sample_weight=w)
    unweighted = clone(tr).fit_predict(X, y, Q)
    weighted = tr.fit_predict(X, y, Q, sample_weight=w)
    np.testing.assert_array_equal(
        weighted, by_fit.classes_[by_fit._region_predict(Q, by_fit.reference_clusters_)]
    )
    assert not np.array_equal(weighted, unweighted) or np.allclose(w, w[0])


@pytest.mark.parametrize(
    ("est", "attr"),
    [
        (CellSVC(n_cells=2, random_state=0), "cell_labels_"),
        (
            ProfileSVC(n_clusters=2, clustering="magkmeans-greedy", random_state=0),
            "cluster_labels_",
        ),
    ],
    ids=["CellSVC", "ProfileSVC"],
)
def test_per_row_labels_cover_every_row_given(est, attr, banana):
    """A row that a weight of 0 left out keeps its place, labelled -1; the
    others carry the labels of the fit without it."""
    X, y, _ = banana
    w = np.ones(y.size)
    w[::7] = 0.0
    weighted = clone(est).fit(X, y, sample_weight=w)
    kept = clone(est).fit(X[w > 0], y[w > 0])
    labels = getattr(weighted, attr)
    assert labels.shape == (y.size,)
    assert np.all(labels[w == 0] == -1)
    np.testing.assert_array_equal(labels[w > 0], getattr(kept, attr))
