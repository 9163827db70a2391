"""LIBSVM model files of ν-SVC, ε-SVR, ν-SVR and one-class SVM, both ways:
a model LIBSVM trains and writes loads in localsvm and predicts what LIBSVM
predicts from the same file, and a model localsvm fits and writes loads in
LIBSVM and predicts what localsvm predicts."""

from __future__ import annotations

import functools
from ctypes import c_double

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_friedman1
from sklearn.metrics.pairwise import rbf_kernel

from localsvm import SVR, NuSVC, NuSVR, OneClassSVM, load_libsvm_model, save_libsvm_model
from localsvm.datasets import load_iris
from localsvm.model_io import libsvm_layout

KERNELS = {0: "linear", 1: "poly", 2: "rbf", 3: "sigmoid"}
#: svm_type -> LIBSVM's -s, our estimator, its parameters, LIBSVM's options.
TYPES = {
    "nu_svc": (1, NuSVC, {"nu": 0.3}, "-n 0.3"),
    "one_class": (2, OneClassSVM, {"nu": 0.2}, "-n 0.2"),
    "epsilon_svr": (3, SVR, {"C": 2.0, "epsilon": 0.2}, "-c 2 -p 0.2"),
    "nu_svr": (4, NuSVR, {"C": 2.0, "nu": 0.3}, "-c 2 -n 0.3"),
}
KERNEL_PARAMS = {"gamma": 0.05, "coef0": 0.5, "degree": 2, "precision": "float64"}
KERNEL_OPTIONS = "-g 0.05 -r 0.5 -d 2 -q"


@pytest.fixture(scope="module")
def libsvm():
    pytest.importorskip("libsvm.svmutil", reason="libsvm-official is not installed")
    from libsvm import svm, svmutil

    return svm, svmutil


def _libsvm_predict(libsvm, model, X):
    """LIBSVM's prediction and decision values of each row.

    Through ``svm_predict_values`` with a buffer of one value per class
    pair: libsvm-official's ``svmutil.svm_predict`` sizes its buffer for one
    value when the model is ν-SVC, which overruns it for three classes.
    """
    svm, _ = libsvm
    k = model.get_nr_class()
    n_dec = max(1, k * (k - 1) // 2)
    buf = (c_double * n_dec)()
    labels, dec = [], []
    for row in np.asarray(X, dtype=np.float64):
        nodes, _ = svm.gen_svm_nodearray(row.tolist())
        labels.append(svm.libsvm.svm_predict_values(model, nodes, buf))
        dec.append(buf[:n_dec])
    return np.asarray(labels), np.asarray(dec)


@functools.cache
def _data(svm_type: str):
    if svm_type == "nu_svc":
        d = load_iris()
        # Shuffled so LIBSVM's label order (first seen) is not the sorted one.
        perm = np.random.default_rng(0).permutation(d.y.shape[0])
        X, y = d.X[perm], d.y[perm].astype(np.int64)
        return X[:100], y[:100], X[100:]
    X, y = make_friedman1(n_samples=260, n_features=6, noise=0.5, random_state=0)
    X_test = X[200:] + 0.05
    return X[:200], (None if svm_type == "one_class" else y[:200]), X_test


def _compare(svm_type, ours, labels, dec, X_test):
    if svm_type in ("epsilon_svr", "nu_svr"):
        np.testing.assert_allclose(ours.predict(X_test), labels, rtol=1e-10, atol=1e-10)
    elif svm_type == "one_class":
        np.testing.assert_array_equal(ours.predict(X_test), labels)
        np.testing.assert_allclose(
            ours.decision_function(X_test), dec[:, 0], rtol=1e-10, atol=1e-10
        )
    else:
        np.testing.assert_array_equal(ours.predict(X_test), labels)


@pytest.mark.parametrize("t", sorted(KERNELS))
@pytest.mark.parametrize("svm_type", sorted(TYPES))
def test_libsvm_model_loads_with_same_predictions(libsvm, tmp_path, svm_type, t):
    _, svmutil = libsvm
    s, cls, _, options = TYPES[svm_type]
    X, y, X_test = _data(svm_type)
    labels = np.ones(X.shape[0]) if y is None else y
    model = svmutil.svm_train(
        labels.tolist(), X.tolist(), f"-s {s} -t {t} {options} {KERNEL_OPTIONS}"
    )
    path = tmp_path / "libsvm.model"
    svmutil.svm_save_model(str(path), model)
    assert path.read_text().splitlines()[0] == f"svm_type {svm_type}"
    # The file holds the support vectors to 8 digits: compare with LIBSVM's
    # model read back from it.
    expected, dec = _libsvm_predict(libsvm, svmutil.svm_load_model(str(path)), X_test)
    for kwargs in ({"n_features": X.shape[1]}, {}, {"sparse": True}):
        ours = load_libsvm_model(path, **kwargs)
        assert isinstance(ours, cls)
        assert ours.kernel == KERNELS[t]
        _compare(svm_type, ours, expected, dec, X_test)


@pytest.mark.parametrize("t", sorted(KERNELS))
@pytest.mark.parametrize("svm_type", sorted(TYPES))
def test_localsvm_model_loads_in_libsvm(libsvm, tmp_path, svm_type, t):
    _, svmutil = libsvm
    _, cls, params, _ = TYPES[svm_type]
    X, y, X_test = _data(svm_type)
    est = cls(kernel=KERNELS[t], **params, **KERNEL_PARAMS).fit(X, y)
    path = tmp_path / "ours.model"
    save_libsvm_model(est, path)
    text = path.read_text().splitlines()
    assert text[0] == f"svm_type {svm_type}"
    model = svmutil.svm_load_model(str(path))
    assert model is not None
    labels, dec = _libsvm_predict(libsvm, model, X_test)
    _compare(svm_type, est, labels, dec, X_test)
    if svm_type == "nu_svc":
        # Labels written sorted: LIBSVM's pairwise values are ours ('ovo').
        est.set_params(decision_function_shape="ovo")
        np.testing.assert_allclose(dec, est.decision_function(X_test), rtol=1e-9, atol=1e-9)
    back = load_libsvm_model(path)
    assert type(back).__mro__[1:].count(cls) == 1
    np.testing.assert_array_equal(back.predict(X_test), est.predict(X_test))


@pytest.mark.parametrize("svm_type", ["one_class", "epsilon_svr", "nu_svr"])
def test_single_dual_file_layout(tmp_path, svm_type):
    """One coefficient per support vector (``dual_coef_``), ``rho`` the
    negated intercept (one-class: ``offset_``), ``nr_class 2`` and no
    ``label`` or ``nr_sv`` line, as LIBSVM writes them."""
    _, cls, params, _ = TYPES[svm_type]
    X, y, X_test = _data(svm_type)
    est = cls(kernel="rbf", **params, **KERNEL_PARAMS).fit(X, y)
    path = tmp_path / "m.model"
    save_libsvm_model(est, path)
    lines = path.read_text().splitlines()
    header = {ln.split()[0]: ln.split()[1:] for ln in lines[: lines.index("SV")]}
    assert header["nr_class"] == ["2"]
    assert "label" not in header and "nr_sv" not in header
    assert int(header["total_sv"][0]) == est.support_.size
    assert float(header["rho"][0]) == -est.intercept_[0]
    if svm_type == "one_class":
        assert float(header["rho"][0]) == est.offset_
    coef = [float(ln.split()[0]) for ln in lines[lines.index("SV") + 1 :]]
    np.testing.assert_array_equal(coef, est.dual_coef_[0])
    layout = libsvm_layout(est)
    assert layout["svm_type"] == svm_type and layout["labels"] is None
    back = load_libsvm_model(path)
    np.testing.assert_array_equal(back.dual_coef_, est.dual_coef_)
    np.testing.assert_array_equal(back.intercept_, est.intercept_)
    np.testing.assert_array_equal(back.support_vectors_, est.support_vectors_)
    method = "predict" if svm_type != "one_class" else "score_samples"
    np.testing.assert_array_equal(getattr(back, method)(X_test), getattr(est, method)(X_test))
    if svm_type == "one_class":
        assert back.offset_ == est.offset_


def test_sparse_fit_and_wider_rows(tmp_path):
    X, y, X_test = _data("epsilon_svr")
    X = X.copy()
    X[:, -1] = 0.0  # the last feature is absent from every support vector
    est = SVR(kernel="rbf", C=2.0, gamma=0.1, precision="float64").fit(sp.csr_matrix(X), y)
    path = tmp_path / "s.model"
    save_libsvm_model(est, path)
    back = load_libsvm_model(path, sparse=True)
    assert sp.issparse(back.support_vectors_) and sp.issparse(back.dual_coef_)
    assert back.n_features_in_ == X.shape[1]  # the zero last feature is written
    np.testing.assert_allclose(back.predict(X_test), est.predict(X_test), rtol=1e-12)
    # Rows wider than the model: the extra features are zero in every
    # support vector, and count in the RBF kernel's distance.
    wide = np.hstack([X_test, np.ones((X_test.shape[0], 2))])
    sv = np.hstack([est.support_vectors_.toarray(), np.zeros((est.support_.size, 2))])
    expected = rbf_kernel(wide, sv, gamma=0.1) @ est.dual_coef_.toarray()[0] + est.intercept_[0]
    np.testing.assert_allclose(load_libsvm_model(path).predict(wide), expected, rtol=1e-10)
    with pytest.raises(ValueError, match="expecting 6 features"):
        load_libsvm_model(path, n_features=6).predict(wide)


def test_model_without_support_vectors(tmp_path):
    # Every target inside the tube: no support vector, a constant model.
    X = np.arange(10.0)[:, None]
    est = SVR(kernel="linear", epsilon=5.0).fit(X, np.zeros(10))
    assert est.support_.size == 0
    path = tmp_path / "z.model"
    save_libsvm_model(est, path)
    back = load_libsvm_model(path)
    np.testing.assert_array_equal(back.predict(X), est.predict(X))


def test_refit_loaded_model_keeps_its_type(tmp_path):
    X, y, _ = _data("nu_svr")
    est = NuSVR(kernel="rbf", gamma=0.1).fit(X, y)
    path = tmp_path / "r.model"
    save_libsvm_model(est, path)
    back = load_libsvm_model(path)
    back.fit(X[:, :5], y)
    assert back.n_features_in_ == 5
    with pytest.raises(ValueError, match="features"):
        back.predict(X)


GOOD = """svm_type epsilon_svr
kernel_type rbf
gamma 0.5
nr_class 2
total_sv 2
rho 0.1
SV
1.5 1:0.5 2:1
-0.5 1:-0.5
"""


def test_good_regression_text_loads(tmp_path):
    path = tmp_path / "good.model"
    path.write_text(GOOD)
    reg = load_libsvm_model(path)
    assert isinstance(reg, SVR)
    x = np.array([[0.5, 1.0]])
    k2 = np.exp(-0.5 * (1.0**2 + 1.0**2))
    np.testing.assert_allclose(reg.predict(x), [1.5 - 0.5 * k2 - 0.1])
    path.write_text(GOOD.replace("epsilon_svr", "one_class"))
    det = load_libsvm_model(path)
    assert isinstance(det, OneClassSVM) and det.offset_ == 0.1
    np.testing.assert_allclose(det.score_samples(x), [1.5 - 0.5 * k2])
    assert det.predict(x).tolist() == [1]


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("nr_class 2", "nr_class 3", r"line 4: nr_class must be 2 in a epsilon_svr model"),
        ("rho 0.1", "rho 0.1 0.2", r"line 6: 'rho' needs 1 values"),
        ("rho 0.1\n", "rho 0.1\nlabel 1 -1\n", r"line 7: a epsilon_svr model has no 'label'"),
        ("rho 0.1\n", "rho 0.1\nnr_sv 1 1\n", r"line 7: a epsilon_svr model has no 'nr_sv'"),
        ("1.5 1:0.5 2:1", "1.5 -1 1:0.5", r"line 8: expected index:value, got '-1'"),
        ("total_sv 2", "total_sv -1", r"line 5: total_sv must be at least 0"),
        ("svm_type epsilon_svr\n", "", r"the header lacks 'svm_type'"),
    ],
)
def test_bad_regression_files_name_the_line(tmp_path, old, new, message):
    assert old in GOOD
    path = tmp_path / "bad.model"
    path.write_text(GOOD.replace(old, new, 1))
    with pytest.raises(ValueError, match=message) as info:
        load_libsvm_model(path)
    assert str(path) in str(info.value)


def test_save_refuses_other_models(tmp_path):
    X, y, _ = _data("epsilon_svr")
    with pytest.raises(ValueError, match="precomputed"):
        save_libsvm_model(SVR(kernel="precomputed").fit(X @ X.T, y), tmp_path / "p")
    with pytest.raises(TypeError, match=r"SVC, NuSVC, SVR, NuSVR or OneClassSVM"):
        save_libsvm_model(object(), tmp_path / "x")
    assert not any(tmp_path.iterdir())
