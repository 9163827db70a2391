"""The multiclass layer (localsvm._multiclass): scikit-learn's rules for
votes, ties and the 'ovr' shaped scores, and the same binary models giving
the same predictions through every estimator built from binary problems."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_blobs
from sklearn.svm import SVC as SklearnSVC
from sklearn.utils import Bunch
from sklearn.utils.multiclass import _ovr_decision_function

from localsvm import (
    SVC,
    CellSVC,
    FLSAClassifier,
    IncrementalSVC,
    LocalSVC,
    ProfileSVC,
)
from localsvm._multiclass import (
    assemble,
    binary_tasks,
    decision_function,
    ovo_pairs,
    ovo_to_libsvm,
    ovo_to_ovr,
    predict_index,
    vote_winner,
)
from localsvm.backends.base import EMPTY, SOLVED


def libsvm_vote(dec: np.ndarray, n_classes: int) -> np.ndarray:
    """LIBSVM's svm_predict_values, written out: pair (i, j) votes i when its
    value is > 0, else j; the first class with the most votes wins."""
    out = []
    for row in dec:
        votes = [0] * n_classes
        for k, (i, j) in enumerate(ovo_pairs(n_classes)):
            votes[i if row[k] > 0 else j] += 1
        best = 0
        for c in range(1, n_classes):
            if votes[c] > votes[best]:
                best = c
        out.append(best)
    return np.array(out)


@pytest.fixture(scope="module")
def tied_values():
    """One-vs-one values of 4 classes full of exact ties: zeros of both signs
    and repeated magnitudes."""
    rng = np.random.default_rng(0)
    dec = rng.choice([-1.0, -0.5, -0.0, 0.0, 0.5, 1.0], size=(400, 6))
    return dec


def test_votes_are_libsvms(tied_values):
    np.testing.assert_array_equal(vote_winner(tied_values, 4), libsvm_vote(tied_values, 4))
    np.testing.assert_array_equal(predict_index(tied_values, 4, "ovo"), libsvm_vote(tied_values, 4))


def test_ovr_scores_are_scikit_learns(tied_values):
    expected = _ovr_decision_function(tied_values < 0, -tied_values, 4)
    np.testing.assert_array_equal(ovo_to_ovr(tied_values, 4), expected)
    np.testing.assert_array_equal(decision_function(tied_values, 4, "ovo", "ovr"), expected)
    np.testing.assert_array_equal(
        predict_index(tied_values, 4, "ovo", break_ties=True), np.argmax(expected, axis=1)
    )
    # A pair's exact zero counts for the lower class here, for the higher
    # one in the vote: the two rules differ on these rows.
    assert np.any(np.argmax(expected, axis=1) != libsvm_vote(tied_values, 4))


def test_two_classes_zero_goes_to_the_second_class():
    dec = np.array([[1.0], [-1.0], [0.0], [-0.0]])
    np.testing.assert_array_equal(predict_index(dec, 2, "ovo"), [0, 1, 1, 1])
    np.testing.assert_array_equal(predict_index(dec, 2, "ovo", break_ties=True), [0, 1, 1, 1])
    np.testing.assert_array_equal(decision_function(dec, 2, "ovo"), [-1.0, 1.0, 0.0, 0.0])


def test_one_vs_rest_lowest_index_wins():
    dec = np.array([[0.5, 0.5, -1.0], [-1.0, 0.2, 0.2], [0.0, -0.0, 0.0]])
    np.testing.assert_array_equal(predict_index(dec, 3, "ovr"), [0, 1, 0])
    np.testing.assert_array_equal(decision_function(dec, 3, "ovr", "ovo"), dec)


def test_break_ties_with_ovo_shape_is_refused():
    with pytest.raises(ValueError, match="break_ties must be False"):
        predict_index(np.zeros((1, 3)), 3, "ovo", break_ties=True, shape="ovo")
    X, y = make_blobs(60, centers=3, random_state=0)
    for est in (SVC, IncrementalSVC):
        model = est(break_ties=True, decision_function_shape="ovo").fit(X, y)
        with pytest.raises(ValueError, match="break_ties must be False"):
            model.predict(X)


def test_abstaining_pairs_cast_nothing():
    dec = np.array([[0.0, -2.0, 0.0]])
    abstain = np.array([[True, False, True]])
    # Only pair (0, 2) speaks: class 2 wins by it.
    assert vote_winner(dec, 3, abstain)[0] == 2
    scores = ovo_to_ovr(dec, 3, abstain)
    np.testing.assert_allclose(scores, [[-2 / 9, 0.0, 1 + 2 / 9]])


def test_assemble_groups_support_vectors_by_class():
    models = assemble(
        ids=[np.array([5, 1]), np.array([1, 7])],
        coefs=[np.array([0.5, -0.5]), np.array([2.0, -2.0])],
        intercepts=[-0.0, 1.0],
        classes=[np.array([1, 0]), np.array([0, 1])],
        n_classes=2,
        multiclass="ovo",
    )
    np.testing.assert_array_equal(models.support, [1, 5, 7])
    np.testing.assert_array_equal(models.n_support, [1, 2])
    np.testing.assert_array_equal(models.coef, [[-0.5, 0.5, 0.0], [2.0, 0.0, -2.0]])
    assert not np.signbit(models.intercept[0])  # −0.0 from −rho reads 0.0
    np.testing.assert_array_equal(models.dual_coef, -models.coef)
    # Each support vector's source is a (model, position) holding its id.
    ids = [np.array([5, 1]), np.array([1, 7])]
    assert [int(ids[k][p]) for k, p in models.source] == [1, 5, 7]


# ------------------------------------------------- against scikit-learn's SVC


@pytest.fixture(scope="module")
def tied_blobs():
    """3-class blobs with gamma=1e6: the kernel is the identity to machine
    precision, every α sits at C and every ρ is 0, so a test point away from
    the training points has value exactly 0 (or −0.0) in every pair."""
    X, y = make_blobs(90, centers=3, random_state=0)
    X_test, _ = make_blobs(60, centers=3, random_state=1)
    # Half the test points on training points: non-zero values there.
    return X, y, np.vstack([X_test, X[::3]])


@pytest.mark.parametrize("break_ties", [False, True])
def test_tie_heavy_matches_scikit_learn(tied_blobs, break_ties):
    X, y, X_test = tied_blobs
    theirs = SklearnSVC(gamma=1e6, break_ties=break_ties).fit(X, y)
    ours = SVC(gamma=1e6, break_ties=break_ties).fit(X, y)
    np.testing.assert_array_equal(ours.intercept_, theirs.intercept_)
    assert np.all(ours.intercept_ == 0.0)  # every value away from the data: ±0
    np.testing.assert_array_equal(ours.predict(X_test), theirs.predict(X_test))
    np.testing.assert_allclose(
        ours.decision_function(X_test), theirs.decision_function(X_test), atol=1e-9
    )
    # An intercept of −0.0 instead of 0.0 changes no vote and no score.
    predicted, scores = ours.predict(X_test), ours.decision_function(X_test)
    for zero in (-0.0, 0.0):
        ours._model_intercept = np.full_like(ours._model_intercept, zero)
        np.testing.assert_array_equal(ours.predict(X_test), predicted)
        np.testing.assert_array_equal(ours.decision_function(X_test), scores)
    for model in (ours, theirs):
        model.set_params(decision_function_shape="ovo", break_ties=False)
    np.testing.assert_allclose(
        ours.decision_function(X_test), theirs.decision_function(X_test), atol=1e-9
    )
    np.testing.assert_array_equal(ours.predict(X_test), theirs.predict(X_test))


def test_tie_heavy_predictions_differ_by_break_ties(tied_blobs):
    """The case above is a real test of the rule: scikit-learn itself
    predicts differently with and without break_ties on it."""
    X, y, X_test = tied_blobs
    a = SklearnSVC(gamma=1e6, break_ties=False).fit(X, y).predict(X_test)
    b = SklearnSVC(gamma=1e6, break_ties=True).fit(X, y).predict(X_test)
    assert np.any(a != b)


def test_tie_heavy_two_classes_matches_scikit_learn(tied_blobs):
    X, y, X_test = tied_blobs
    keep = y < 2
    theirs = SklearnSVC(gamma=1e6).fit(X[keep], y[keep])
    ours = SVC(gamma=1e6).fit(X[keep], y[keep])
    np.testing.assert_array_equal(ours.predict(X_test), theirs.predict(X_test))
    np.testing.assert_allclose(
        ours.decision_function(X_test), theirs.decision_function(X_test), atol=1e-9
    )
    assert np.any(ours.decision_function(X_test) == 0.0)  # the zero case is hit


# ------------------------------------- the same binary models, every estimator


def _incremental_with(svc: SVC, X, y, evaluate: bool = False) -> IncrementalSVC:
    """An IncrementalSVC whose binary models are ``svc``'s: their values
    (``evaluate=False``), or their attributes evaluated by IncrementalSVC's
    own kernel expansion (``evaluate=True``; it evaluates with
    ``precision='auto'``, so exact zeros of float64 may come out as float32
    denormals and ties are not comparable then)."""
    inc = IncrementalSVC(
        gamma=svc.gamma,
        multiclass=svc.multiclass,
        break_ties=svc.break_ties,
        decision_function_shape=svc.decision_function_shape,
    ).fit(X, y)
    if evaluate:
        inc._spec = svc._spec
        inc.support_vectors_ = np.ascontiguousarray(svc.support_vectors_)
        inc._model_coef = svc._model_coef
        inc._model_intercept = svc._model_intercept
    else:
        inc._model_decision = svc._model_decision
    return inc


def _local_with(svc: SVC, X, y) -> LocalSVC:
    """A LocalSVC whose every local problem is solved with ``svc``'s pair
    values (status solved everywhere)."""
    local = LocalSVC(k=5).fit(X, y)

    def details(X_new):
        dec = svc._model_decision(X_new)
        return Bunch(
            decision=dec,
            status=np.full(dec.shape, SOLVED, dtype=np.uint8),
            sigma_sum=np.ones((dec.shape[0], svc.classes_.shape[0])),
        )

    local.decision_details = details
    return local


def _regions_with(estimator, svc: SVC, X, y):
    """A region estimator (CellSVC, ProfileSVC) whose every region's model is
    ``svc`` (fitted on class indices, as the regions' models are)."""
    estimator.fit(X, y)
    models, held = estimator._region_attributes
    n_regions = len(getattr(estimator, models))
    setattr(estimator, models, [svc] * n_regions)
    setattr(estimator, held, [np.arange(svc.classes_.shape[0])] * n_regions)
    return estimator


@pytest.mark.parametrize("n_classes", [2, 3, 4])
@pytest.mark.parametrize("break_ties", [False, True])
def test_same_binary_models_same_predictions(n_classes, break_ties):
    X, y = make_blobs(120, centers=n_classes, random_state=3)
    # Test points on training points (values far from 0) and far away
    # (exact zeros from gamma=1e6): both tie regimes.
    X_test = np.vstack([X[::2], make_blobs(40, centers=n_classes, random_state=4)[0]])
    svc = SVC(gamma=1e6, break_ties=break_ties).fit(X, y)
    expected = svc.predict(X_test)
    expected_dec = svc.decision_function(X_test)

    inc = _incremental_with(svc, X, y)
    np.testing.assert_array_equal(inc.predict(X_test), expected)
    np.testing.assert_array_equal(inc.decision_function(X_test), expected_dec)

    if not break_ties:  # LocalSVC votes, as SVC's default
        local = _local_with(svc, X, y)
        np.testing.assert_array_equal(local.predict(X_test), expected)
        np.testing.assert_array_equal(local.decision_function(X_test), expected_dec)

    # The regions' models predict with classes_ as indices.
    y_idx = np.searchsorted(np.unique(y), y)
    region_svc = SVC(gamma=1e6, break_ties=break_ties).fit(X, y_idx)
    for estimator in (
        CellSVC(n_cells=2, gamma=1e6, routing="hard", random_state=0),
        ProfileSVC(n_clusters=2, n_landmarks=20, random_state=0),
    ):
        model = _regions_with(estimator, region_svc, X, y)
        np.testing.assert_array_equal(model.predict(X_test), expected)
        np.testing.assert_array_equal(model.decision_function(X_test), expected_dec)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_one_vs_rest_models_same_predictions(n_classes):
    """FLSA's one-vs-rest models and soft-routed cells decide from the
    public decision values as SVC does."""
    X, y = make_blobs(120, centers=n_classes, random_state=5)
    X_test = np.vstack([X[::2], make_blobs(40, centers=n_classes, random_state=6)[0]])
    svc = SVC(gamma=1e6, multiclass="ovr").fit(X, y)
    # Values within 1e-12 of zero made exact zeros: ties.
    values = svc._model_decision
    svc._model_decision = lambda X_new: np.where(np.abs(values(X_new)) < 1e-12, 0.0, values(X_new))
    expected = svc.predict(X_test)
    dec = svc.decision_function(X_test)
    if n_classes == 2:
        assert np.any(dec == 0.0)
    else:  # rows whose largest value is shared
        assert np.any(np.sum(dec == dec.max(axis=1, keepdims=True), axis=1) > 1)

    flsa = FLSAClassifier(n_support=10).fit(X, y)
    flsa.decision_function = lambda X_new: svc.decision_function(X_new)
    np.testing.assert_array_equal(flsa.predict(X_test), expected)

    inc = _incremental_with(svc, X, y)
    np.testing.assert_array_equal(inc.predict(X_test), expected)

    cells = CellSVC(n_cells=2, routing="soft", random_state=0).fit(X, y)
    cells._decision_valid = lambda X_new: svc.decision_function(X_new)
    np.testing.assert_array_equal(cells.predict(X_test), expected)


@pytest.mark.filterwarnings("ignore:.*no training example")
def test_local_abstention_and_fallback():
    """LocalSVC: a pair without examples nearby abstains in predict and in
    decision_function alike; nobody nearby falls back to the σ-weighted
    vote in both."""
    X, y = make_blobs(60, centers=3, random_state=0)
    local = LocalSVC(k=5).fit(X, y)
    dec = np.array([[0.0, -2.0, 0.0], [0.3, 0.3, 0.3]])
    status = np.array([[EMPTY, SOLVED, EMPTY], [EMPTY, EMPTY, EMPTY]], dtype=np.uint8)
    sigma = np.array([[0.0, 0.0, 0.0], [0.1, 0.7, 0.2]])
    local.decision_details = lambda X_new: Bunch(decision=dec, status=status, sigma_sum=sigma)
    np.testing.assert_array_equal(local.predict(X[:2]), local.classes_[[2, 1]])
    scores = local.decision_function(X[:2])
    np.testing.assert_array_equal(np.argmax(scores, axis=1), [2, 1])


@pytest.mark.parametrize("multiclass", ["ovo", "ovr"])
def test_incremental_evaluates_svc_attributes(multiclass):
    """SVC's support vectors, coefficients and intercepts, evaluated by
    IncrementalSVC's own kernel expansion, predict as SVC (values well away
    from zero: a moderate gamma)."""
    X, y = make_blobs(150, centers=4, cluster_std=2.0, random_state=7)
    X_test = make_blobs(100, centers=4, cluster_std=2.0, random_state=8)[0]
    svc = SVC(gamma=0.3, multiclass=multiclass).fit(X, y)
    inc = _incremental_with(svc, X, y, evaluate=True)
    np.testing.assert_array_equal(inc.predict(X_test), svc.predict(X_test))
    np.testing.assert_allclose(
        inc.decision_function(X_test), svc.decision_function(X_test), atol=1e-5
    )


@pytest.mark.parametrize("break_ties", [False, True])
@pytest.mark.parametrize("labels", ["ints", "strings"])
def test_onnx_export_breaks_ties_as_predict(tied_blobs, break_ties, labels):
    """The exported model's label and scores follow the same rules on the
    tie-heavy case (its values are exact zeros in float32 too)."""
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("skl2onnx")
    from localsvm.onnx import to_onnx

    X, y, X_test = tied_blobs
    if labels == "strings":
        y = np.array(["ant", "bee", "cat"])[y]
    clf = SVC(gamma=1e6, break_ties=break_ties).fit(X, y)
    onx = to_onnx(clf, X[:2].astype(np.float32))
    session = ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])
    label, scores = session.run(None, {"X": X_test.astype(np.float32)})
    np.testing.assert_array_equal(label, clf.predict(X_test))
    np.testing.assert_allclose(scores, clf.decision_function(X_test), atol=1e-6)


def test_grouped_and_ungrouped_layouts_agree():
    """ovo_to_libsvm takes slices when the support vectors are grouped by
    class and masks otherwise; both give LIBSVM's layout, and binary_tasks'
    per-class rows are the rows each pair's mask selects."""
    rng = np.random.default_rng(0)
    n_classes, n_sv = 5, 40
    sv_class = np.sort(rng.integers(0, n_classes, n_sv))
    coef = rng.standard_normal((len(ovo_pairs(n_classes)), n_sv))
    grouped = ovo_to_libsvm(coef, sv_class, n_classes)
    perm = rng.permutation(n_sv)
    shuffled = ovo_to_libsvm(coef[:, perm], sv_class[perm], n_classes)
    np.testing.assert_array_equal(shuffled[:, np.argsort(perm)], grouped)
    y_idx = rng.integers(0, n_classes, 200)
    for (a, b), (rows, labels) in zip(
        ovo_pairs(n_classes), binary_tasks(y_idx, ovo_pairs(n_classes)), strict=True
    ):
        np.testing.assert_array_equal(rows, np.flatnonzero((y_idx == a) | (y_idx == b)))
        np.testing.assert_array_equal(labels, np.where(y_idx[rows] == a, 1.0, -1.0))


@pytest.mark.parametrize(("n", "high"), [(0, 1), (1, 1), (7, 3), (20_000, 1300), (500, 10**12)])
def test_distinct_ids_are_numpys_unique(n, high):
    from localsvm._multiclass import _distinct

    ids = np.random.default_rng(n).integers(0, high, n).astype(np.int64)
    uniq, first, slot = _distinct(ids)
    want = np.unique(ids, return_index=True, return_inverse=True)
    for got, ref in zip((uniq, first, slot), want, strict=True):
        np.testing.assert_array_equal(got, ref.reshape(-1))
        assert got.dtype == ref.dtype
