"""Sparse input: SVC's native CSR path equals its dense float64 path, the
other estimators densify under a limit, and bad sparse input is refused."""

import numpy as np
import pytest
import scipy.sparse as sp

from localsvm import (
    SVC,
    ClusterSVC,
    FLSAClassifier,
    FLSAClassifierCV,
    IncrementalSVC,
    LocalSVC,
    ProfileSVC,
    RFLSAClassifier,
    _validation,
    kernels,
)
from localsvm.datasets import load_a9a, load_ijcnn1
from localsvm.model_io import load_libsvm_model, save_libsvm_model

KERNELS = [
    dict(kernel="linear"),
    dict(kernel="rbf", gamma="scale"),
    dict(kernel="rbf", gamma=0.3),
    dict(kernel="poly", gamma=0.5, coef0=1.0, degree=3),
    dict(kernel="sigmoid", gamma=0.05, coef0=0.1),
]


#: The library's threshold, before the fixture below moves it.
DENSE_LIKE_DENSITY = kernels.DENSE_LIKE_DENSITY


@pytest.fixture(autouse=True)
def sparse_rows(monkeypatch):
    """These tests check the sums over stored entries, so no input is taken
    as dense-like here unless a test says so."""
    monkeypatch.setattr(kernels, "DENSE_LIKE_DENSITY", float("inf"))


def random_sparse(n=150, d=40, density=0.15, n_classes=2, seed=0):
    """A sparse matrix and labels from a sparse linear rule (learnable)."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=density, format="csr", random_state=seed, dtype=np.float64)
    X.data = rng.normal(size=X.data.size)
    W = rng.normal(size=(d, n_classes))
    y = np.asarray(X @ W).argmax(axis=1) if n_classes > 2 else (np.asarray(X @ W[:, 0]) > 0)
    return X, y.astype(int)


def assert_same_model(sparse_model, dense_model, X_test_sparse, *, rtol=1e-7, atol=1e-7):
    np.testing.assert_array_equal(sparse_model.support_, dense_model.support_)
    np.testing.assert_array_equal(sparse_model.n_support_, dense_model.n_support_)
    # As scikit-learn's, a sparse fit's dual coefficients are CSR.
    assert sp.isspmatrix_csr(sparse_model.dual_coef_)
    np.testing.assert_allclose(
        sparse_model.dual_coef_.toarray(), dense_model.dual_coef_, rtol=rtol, atol=atol
    )
    np.testing.assert_allclose(
        sparse_model.intercept_, dense_model.intercept_, rtol=rtol, atol=atol
    )
    X_dense = X_test_sparse.toarray()
    np.testing.assert_allclose(
        sparse_model.decision_function(X_test_sparse),
        dense_model.decision_function(X_dense),
        rtol=rtol,
        atol=atol,
    )
    np.testing.assert_array_equal(sparse_model.predict(X_test_sparse), dense_model.predict(X_dense))


@pytest.mark.parametrize("params", KERNELS, ids=lambda p: f"{p['kernel']}-{p.get('gamma')}")
@pytest.mark.parametrize("n_classes,multiclass", [(2, "ovo"), (3, "ovo"), (4, "ovr")])
def test_svc_sparse_equals_dense_float64(params, n_classes, multiclass):
    X, y = random_sparse(n_classes=n_classes, seed=n_classes)
    common = dict(C=2.0, tol=1e-8, multiclass=multiclass, **params)
    sparse_model = SVC(**common).fit(X, y)
    dense_model = SVC(precision="float64", **common).fit(X.toarray(), y)
    assert sp.isspmatrix_csr(sparse_model.support_vectors_)
    assert sparse_model.precision_ == "float64"
    np.testing.assert_array_equal(
        sparse_model.support_vectors_.toarray(), dense_model.support_vectors_
    )
    X_test, _ = random_sparse(n=60, seed=100 + n_classes)
    assert_same_model(sparse_model, dense_model, X_test)
    if params["kernel"] == "linear":
        assert sp.isspmatrix_csr(sparse_model.coef_)
        np.testing.assert_allclose(
            sparse_model.coef_.toarray(), dense_model.coef_, rtol=1e-7, atol=1e-7
        )


def test_svc_sparse_sample_and_class_weight():
    X, y = random_sparse(n=160, n_classes=3, seed=7)
    sw = np.random.default_rng(1).uniform(0.2, 2.0, size=y.size)
    common = dict(C=1.5, gamma=0.4, tol=1e-8, class_weight={0: 2.0, 1: 0.5, 2: 1.0})
    sparse_model = SVC(**common).fit(X, y, sample_weight=sw)
    dense_model = SVC(precision="float64", **common).fit(X.toarray(), y, sample_weight=sw)
    assert_same_model(sparse_model, dense_model, X)


def test_svc_sparse_gamma_scale_is_scikit_learns():
    X, y = random_sparse(seed=3)
    model = SVC().fit(X, y)
    want = 1.0 / (X.shape[1] * (X.multiply(X).mean() - X.mean() ** 2))
    assert model.kernel_spec_.gamma == pytest.approx(want, rel=1e-12)
    assert model.kernel_spec_.gamma == pytest.approx(
        SVC().fit(X.toarray(), y).kernel_spec_.gamma, rel=1e-10
    )


@pytest.mark.parametrize("fmt", ["csc", "coo", "lil", "dok", "bsr", "dia"])
def test_every_format_and_csr_array(fmt):
    X, y = random_sparse(seed=4)
    want = SVC(gamma=0.5).fit(X, y).decision_function(X)
    Xf = X.asformat(fmt)
    got = SVC(gamma=0.5).fit(Xf, y).decision_function(Xf)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    arr = sp.csr_array(X)
    got = SVC(gamma=0.5).fit(arr, y).decision_function(arr)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_mixed_dense_and_sparse_prediction():
    X, y = random_sparse(n_classes=3, seed=5)
    X_test, _ = random_sparse(n=40, seed=50)
    sparse_model = SVC(gamma=0.5, tol=1e-8).fit(X, y)
    dense_model = SVC(gamma=0.5, tol=1e-8, precision="float64").fit(X.toarray(), y)
    ref = sparse_model.decision_function(X_test)
    np.testing.assert_allclose(sparse_model.decision_function(X_test.toarray()), ref, rtol=1e-10)
    np.testing.assert_allclose(dense_model.decision_function(X_test), ref, rtol=1e-7, atol=1e-7)


def _dataset_subset(loader, n=2000):
    d = loader()
    X = sp.csr_matrix(d.X_train[:n])
    return X, d.y_train[:n], sp.csr_matrix(d.X_test[:500])


@pytest.mark.parametrize("loader", [load_a9a, load_ijcnn1], ids=["a9a", "ijcnn1"])
def test_svc_sparse_on_a9a_and_ijcnn1(loader):
    # The sums over stored entries (the fixture), though both are dense-like.
    X, y, X_test = _dataset_subset(loader)
    common = dict(C=1.0, gamma=0.1 if loader is load_a9a else 1.0, tol=1e-9)
    sparse_model = SVC(**common).fit(X, y)
    dense_model = SVC(precision="float64", **common).fit(X.toarray(), y)
    assert_same_model(sparse_model, dense_model, X_test, rtol=1e-6, atol=1e-6)


def test_probability_on_sparse_input():
    X, y = random_sparse(n=120, n_classes=3, seed=8)
    with pytest.warns(FutureWarning):
        sparse_model = SVC(probability=True, random_state=0, gamma=0.5, tol=1e-8).fit(X, y)
    with pytest.warns(FutureWarning):
        dense_model = SVC(
            probability=True, random_state=0, gamma=0.5, tol=1e-8, precision="float64"
        ).fit(X.toarray(), y)
    np.testing.assert_allclose(
        sparse_model.predict_proba(X), dense_model.predict_proba(X.toarray()), atol=1e-6
    )


def test_model_io_round_trip_from_a_sparse_fit(tmp_path):
    X, y = random_sparse(n_classes=3, seed=9)
    model = SVC(gamma=0.5, tol=1e-8).fit(X, y)
    path = tmp_path / "m.model"
    save_libsvm_model(model, path)
    dense_fit = SVC(gamma=0.5, tol=1e-8, precision="float64").fit(X.toarray(), y)
    path_dense = tmp_path / "d.model"
    save_libsvm_model(dense_fit, path_dense)
    for sparse in (False, True):
        loaded = load_libsvm_model(path, sparse=sparse)
        assert sp.issparse(loaded.support_vectors_) == sparse
        np.testing.assert_allclose(
            loaded.decision_function(X), model.decision_function(X), rtol=1e-9, atol=1e-9
        )
        np.testing.assert_array_equal(loaded.predict(X.toarray()), model.predict(X))
    # The sparse fit's file holds the same support vectors as the dense fit's.
    a = load_libsvm_model(path).support_vectors_
    b = load_libsvm_model(path_dense).support_vectors_
    np.testing.assert_allclose(a, b, rtol=1e-12)


# ---------------------------------------------------------------- bad input


def _valid_csr():
    X, y = random_sparse(n=20, d=6, density=0.4, seed=11)
    return X, y


def test_nan_and_inf_stored_values_are_refused():
    X, y = _valid_csr()
    for bad in (np.nan, np.inf):
        Xb = X.copy()
        Xb.data[3] = bad
        with pytest.raises(ValueError, match="NaN or infinity"):
            SVC().fit(Xb, y)
        model = SVC().fit(X, y)
        with pytest.raises(ValueError, match="NaN or infinity"):
            model.predict(Xb)


def test_feature_count_mismatch_at_predict():
    X, y = _valid_csr()
    model = SVC().fit(X, y)
    with pytest.raises(ValueError, match="features"):
        model.predict(sp.random(4, 7, density=0.5, format="csr", random_state=0))


def _raw_csr(data, indices, indptr, shape):
    # Built around scipy's own checks, as malformed input can arrive.
    m = sp.csr_matrix(shape)
    m.data, m.indices, m.indptr = (
        np.asarray(data, dtype=np.float64),
        np.asarray(indices, dtype=np.int32),
        np.asarray(indptr, dtype=np.int32),
    )
    return m


@pytest.mark.parametrize(
    "indices,indptr,match",
    [
        ([0, 9, 1, 2], [0, 2, 3, 4], "indices must be < 4"),  # column out of range
        ([0, -1, 1, 2], [0, 2, 3, 4], "indices must be >= 0"),  # negative column
        ([0, 1, 1, 2], [0, 3, 2, 4], "indptr|pointer|non-decreasing"),  # not monotone
        ([0, 1, 1, 2], [0, 2, 4], "indptr|pointer|size"),  # wrong length
    ],
)
def test_structurally_invalid_csr_is_refused(indices, indptr, match):
    X = _raw_csr([1.0, 2.0, 3.0, 4.0], indices, indptr, (3, 4))
    y = np.array([0, 1, 0])
    with pytest.raises(ValueError, match="not a valid sparse matrix") as info:
        SVC().fit(X, y)
    assert info.match(match)


def test_unsorted_and_duplicate_entries_equal_the_dense_answer():
    X, y = random_sparse(n=80, d=10, density=0.3, seed=12)
    want = SVC(gamma=0.5, tol=1e-8).fit(X, y)
    # Reverse each row's entries, and split every value into two halves.
    rows, cols, vals = [], [], []
    for i in range(X.shape[0]):
        lo, hi = X.indptr[i], X.indptr[i + 1]
        for j, v in zip(X.indices[lo:hi][::-1], X.data[lo:hi][::-1], strict=True):
            rows += [i, i]
            cols += [j, j]
            vals += [v / 2, v / 2]
    messy = sp.coo_matrix((vals, (rows, cols)), shape=X.shape).tocsr(copy=False)
    messy = _raw_csr(
        np.asarray(vals),
        np.asarray(cols),
        np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=X.shape[0]))]),
        X.shape,
    )
    assert not messy.has_canonical_format
    snapshot = (messy.data.copy(), messy.indices.copy())
    got = SVC(gamma=0.5, tol=1e-8).fit(messy, y)
    np.testing.assert_array_equal(got.support_, want.support_)
    np.testing.assert_allclose(got.decision_function(messy), want.decision_function(X), rtol=1e-9)
    # The caller's matrix is left as it was (canonicalised on a copy).
    np.testing.assert_array_equal(messy.data, snapshot[0])
    np.testing.assert_array_equal(messy.indices, snapshot[1])


def test_int64_indices_are_accepted():
    X, y = random_sparse(seed=13)
    X64 = sp.csr_matrix(X.shape)
    X64.data, X64.indices, X64.indptr = (
        X.data,
        X.indices.astype(np.int64),
        X.indptr.astype(np.int64),
    )
    assert X64.indices.dtype == np.int64 and X64.indptr.dtype == np.int64
    np.testing.assert_allclose(
        SVC(gamma=0.5).fit(X64, y).decision_function(X64),
        SVC(gamma=0.5).fit(X, y).decision_function(X),
        rtol=1e-12,
    )


def test_core_refuses_invalid_structure_itself():
    from localsvm import _core

    f = np.array([1.0, 2.0])
    i64 = lambda *v: np.array(v, dtype=np.int64)  # noqa: E731
    with pytest.raises(ValueError, match="outside"):
        _core.CsrMatrix(f, i64(0, 5), i64(0, 1, 2), (2, 3))
    with pytest.raises(ValueError, match="not sorted or repeat"):
        _core.CsrMatrix(f, i64(2, 2), i64(0, 2, 2), (2, 3))
    with pytest.raises(ValueError, match="indptr"):
        _core.CsrMatrix(f, i64(0, 1), i64(0, 2, 1), (2, 3))


# ------------------------------------------------------- other estimators


OTHERS = [
    LocalSVC(),
    ProfileSVC(n_clusters=2, random_state=0),
    FLSAClassifier(n_support=10),
    RFLSAClassifier(dictionary_size=0.5, random_state=0),
    FLSAClassifierCV(n_support=10, cv=3),
    IncrementalSVC(),
    ClusterSVC(random_state=0),
    SVC(kernel="precomputed"),
]


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("estimator", OTHERS, ids=lambda e: type(e).__name__)
def test_other_estimators_equal_their_dense_answer(estimator):
    from sklearn.base import clone

    X, y = random_sparse(n=90, d=12, density=0.4, seed=14)
    X_test, _ = random_sparse(n=30, d=12, density=0.4, seed=15)
    if getattr(estimator, "kernel", None) == "precomputed":
        X, X_test = (X @ X.T).tocsr(), (X_test @ X.T).tocsr()
    dense = clone(estimator).fit(X.toarray(), y)
    sparse = clone(estimator).fit(X, y)
    np.testing.assert_array_equal(sparse.predict(X_test), dense.predict(X_test.toarray()))
    np.testing.assert_allclose(
        sparse.decision_function(X_test), dense.decision_function(X_test.toarray())
    )


def test_densify_refuses_above_the_limit(monkeypatch):
    monkeypatch.setattr(_validation, "DENSIFY_LIMIT_BYTES", 1000)
    X, y = random_sparse(n=50, d=10, seed=16)  # 50 × 10 × 8 = 4000 bytes
    with pytest.raises(MemoryError, match=r"shape \(50, 10\).*SVC"):
        LocalSVC().fit(X, y)
    # SVC with a kernel function never densifies.
    SVC().fit(X, y)


def test_incremental_partial_fit_takes_sparse():
    X, y = random_sparse(n=80, d=12, density=0.4, seed=17)
    a = IncrementalSVC().partial_fit(X[:40], y[:40], classes=[0, 1]).partial_fit(X[40:], y[40:])
    b = IncrementalSVC().partial_fit(X[:40].toarray(), y[:40], classes=[0, 1])
    b.partial_fit(X[40:].toarray(), y[40:])
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(X.toarray()))


def test_backends_without_sparse_support_decline_it_and_svc_densifies():
    from localsvm import QPProblem, select_backend

    X, y = random_sparse(n=40, d=8, density=0.4, seed=18)
    problem = QPProblem(X=X, y=np.where(y == 1, 1.0, -1.0), upper=np.ones(40))
    assert select_backend("auto", problem).capabilities.sparse
    with pytest.raises(ValueError, match="does not support sparse X"):
        select_backend("scipy", problem)
    # SVC with such a backend densifies (under the limit): the same model.
    a = SVC(backend="scipy", kernel="linear", tol=1e-6).fit(X, y)
    b = SVC(kernel="linear", tol=1e-6).fit(X, y)
    assert isinstance(a.support_vectors_, np.ndarray)
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(X), atol=1e-3)


@pytest.mark.slow
def test_wide_sparse_fit_never_allocates_n_by_d():
    """20 000 × 100 000 at 0.1 % density: a dense copy would take 16 GB, the
    child may address 4 GiB; the fit must succeed, its peak far below."""
    from conftest import run_in_child

    code = """
import time
from localsvm import SVC
from localsvm_benchmarks.sparse import wide_sparse
X, y = wide_sparse(20_000)
t = time.perf_counter()
m = SVC(kernel="linear", C=1.0).fit(X, y)
RESULT = {"fit_s": time.perf_counter() - t, "acc": float(m.score(X, y)),
          "sparse_sv": bool(__import__("scipy.sparse").sparse.issparse(m.support_vectors_))}
"""
    res = run_in_child(code, address_limit=4 << 30, timeout=1800)
    assert res["returncode"] == 0, res
    assert res["error"] is None, res
    assert res["value"]["sparse_sv"]
    assert res["value"]["acc"] > 0.9
    # Far below one dense copy (16 GB) and below the 4 GiB address limit.
    assert res["peak_mib"] < 2048, res


def test_dense_like_input_is_computed_as_dense_rows(monkeypatch):
    # ijcnn1 stores 13 of its 22 features per row: computed as dense rows,
    # the same model as the dense input, with CSR support vectors all the same.
    monkeypatch.setattr(kernels, "DENSE_LIKE_DENSITY", DENSE_LIKE_DENSITY)
    X, y, X_test = _dataset_subset(load_ijcnn1)
    assert kernels.dense_like(X)
    common = dict(C=1.0, gamma=1.0, tol=1e-6, precision="float32")
    from_csr = SVC(**common).fit(X, y)
    from_dense = SVC(**common).fit(X.toarray(), y)
    assert from_csr.precision_ == from_dense.precision_ == "float32"
    assert sp.isspmatrix_csr(from_csr.support_vectors_)
    np.testing.assert_array_equal(from_csr.support_, from_dense.support_)
    np.testing.assert_array_equal(from_csr.dual_coef_.toarray(), from_dense.dual_coef_)
    np.testing.assert_array_equal(
        from_csr.decision_function(X_test), from_dense.decision_function(X_test.toarray())
    )


def test_sparse_rows_are_kept_for_sparse_data(monkeypatch):
    monkeypatch.setattr(kernels, "DENSE_LIKE_DENSITY", DENSE_LIKE_DENSITY)
    X, y = random_sparse(d=400, density=0.02)
    assert not kernels.dense_like(X)
    model = SVC(gamma=0.3).fit(X, y)
    assert model.precision_ == "float64"  # the sums over stored entries
    # Predicting dense-like rows with a sparse model: both as sparse rows.
    dense_rows = sp.csr_matrix(np.ones((3, 400)))
    assert kernels.dense_like(dense_rows)
    dense_model = SVC(gamma=0.3, precision="float64").fit(X.toarray(), y)
    np.testing.assert_allclose(
        model.decision_function(dense_rows),
        dense_model.decision_function(np.ones((3, 400))),
        rtol=1e-7,
        atol=1e-7,
    )
