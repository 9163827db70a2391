"""ONNX export of SVC: onnxruntime predicts what localsvm predicts."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from localsvm import SVC
from localsvm.datasets import load_a9a, load_iris

skl2onnx = pytest.importorskip("skl2onnx", reason="skl2onnx is not installed (extra 'onnx')")
ort = pytest.importorskip("onnxruntime", reason="onnxruntime is not installed (extra 'onnx')")

from localsvm.onnx import register, to_onnx  # noqa: E402


@functools.cache
def _split(name: str):
    if name == "iris":
        d = load_iris()
        perm = np.random.default_rng(1).permutation(d.y.shape[0])
        X, y = d.X[perm], d.y[perm]
        return X[:90], y[:90], X[90:]
    d = load_a9a()
    # float labels -1.0/+1.0, as load_svmlight_file gives them
    return d.X_train[:300], d.y_train[:300].astype(np.float64), d.X_test[:400]


def _session(onx):
    return ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])


def _scores(clf, X):
    dec = clf.decision_function(X)
    return np.column_stack([-dec, dec]) if dec.ndim == 1 else dec


@pytest.mark.parametrize("data", ["a9a", "iris"])
@pytest.mark.parametrize("kernel", ["linear", "rbf", "poly", "sigmoid"])
def test_onnxruntime_predicts_as_localsvm(data, kernel):
    X, y, X_test = _split(data)
    clf = SVC(kernel=kernel, C=2.0, gamma=0.1, coef0=0.5, degree=2).fit(X, y)
    label, scores = _session(to_onnx(clf, X[:2])).run(None, {"X": X_test.astype(np.float32)})
    expected = clf.predict(X_test)
    dec = _scores(clf, X_test)
    # float32 parameters: only samples on the boundary (to 1e-5) may differ.
    sure = np.abs(clf.decision_function(X_test)).reshape(X_test.shape[0], -1).min(axis=1) > 1e-5
    assert sure.mean() > 0.95
    np.testing.assert_array_equal(label[sure], expected[sure])
    np.testing.assert_allclose(scores, dec, rtol=1e-4, atol=1e-4)


def test_double_input_and_string_labels():
    X, y, X_test = _split("iris")
    names = np.array(["setosa", "versicolor", "virginica"])[y.astype(int)]
    clf = SVC(kernel="rbf", gamma=0.5).fit(X, names)
    label, _ = _session(to_onnx(clf, double=True)).run(None, {"X": X_test})
    np.testing.assert_array_equal(label, clf.predict(X_test))


def test_skl2onnx_converts_pipelines_after_register():
    from skl2onnx.common.data_types import FloatTensorType
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    register()
    X, y, X_test = _split("iris")
    pipe = make_pipeline(StandardScaler(), SVC(C=5.0)).fit(X, y)
    onx = skl2onnx.to_onnx(pipe, initial_types=[("X", FloatTensorType([None, X.shape[1]]))])
    label, probabilities = _session(onx).run(None, {"X": X_test.astype(np.float32)})
    np.testing.assert_array_equal(label, pipe.predict(X_test))
    assert set(probabilities[0]) == {0, 1, 2}  # ZipMap: one score per class


def test_refusals():
    X, y, _ = _split("iris")
    with pytest.raises(ValueError, match="one-vs-one") as info:
        to_onnx(SVC(multiclass="ovr").fit(X, y))
    assert str(info.value).startswith("to_onnx: ONNX-ML's SVMClassifier")
    assert "multiclass='ovo'" in str(info.value) and "libsvm_layout" not in str(info.value)
    with pytest.raises(ValueError, match="precomputed"):
        to_onnx(SVC(kernel="precomputed").fit(X @ X.T, y))
    with pytest.raises(ValueError, match="the input has 3 features but the model takes 4"):
        to_onnx(SVC().fit(X, y), X[:, :3])
    with pytest.raises(TypeError, match=r"localsvm\.SVC"):
        to_onnx(object())


def test_a_sparse_fit_exports_with_dense_support_vectors():
    import scipy.sparse as sp

    X, y, X_test = _split("a9a")
    clf = SVC(kernel="rbf", C=2.0, gamma=0.1).fit(sp.csr_matrix(X), y)
    assert sp.issparse(clf.support_vectors_)
    _, scores = _session(to_onnx(clf, X[:2])).run(None, {"X": X_test.astype(np.float32)})
    np.testing.assert_allclose(scores, _scores(clf, sp.csr_matrix(X_test)), rtol=1e-4, atol=1e-4)


# skl2onnx reads scikit-learn's deprecated probA_/probB_ attributes.
@pytest.mark.filterwarnings("ignore:Attribute .prob[AB]_. was deprecated:FutureWarning")
@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("zipmap", [False, True])
def test_outputs_are_named_and_filled_as_skl2onnx_does_for_sklearn_svc(n_classes, zipmap):
    # skl2onnx's converter of scikit-learn's SVC (no probability estimates)
    # names its outputs 'label' and 'probabilities' ('output_label' and
    # 'output_probability' behind its ZipMap) and fills the second with
    # decision scores: for more than two classes the one-vs-rest shaped
    # decision_function, as the export does. For two it writes [d, -d] (d
    # the decision_function, positive for classes_[1]), which ranks the
    # predicted class lower (onnx/sklearn-onnx#990, open); the export writes
    # [-d, d], whose larger column is the predicted class.
    from sklearn.svm import SVC as SklearnSVC

    X, y, X_test = _split("iris")
    y = y if n_classes == 3 else (y > 0).astype(np.int64)
    params = {"kernel": "rbf", "gamma": 0.1, "C": 2.0, "tol": 1e-6}
    ours, theirs = SVC(**params).fit(X, y), SklearnSVC(**params).fit(X, y)
    options = {"zipmap": zipmap}
    register()
    sessions = [
        _session(skl2onnx.to_onnx(m, X[:1].astype(np.float32), options={id(m): options}))
        for m in (ours, theirs)
    ]
    names = [[o.name for o in s.get_outputs()] for s in sessions]
    assert names[0] == names[1]
    assert names[0] == (
        ["output_label", "output_probability"] if zipmap else ["label", "probabilities"]
    )
    (label, scores), (their_label, their_scores) = (
        s.run(None, {"X": X_test.astype(np.float32)}) for s in sessions
    )
    np.testing.assert_array_equal(label, their_label)
    if zipmap:
        scores = np.array([[row[c] for c in sorted(row)] for row in scores])
        their_scores = np.array([[row[c] for c in sorted(row)] for row in their_scores])
    # The same scores, up to the two solvers' tolerance.
    if n_classes == 2:
        their_scores = -their_scores
    np.testing.assert_allclose(scores, their_scores, atol=1e-3)
    assert np.all(ours.classes_[np.argmax(scores, axis=1)] == label)
    np.testing.assert_allclose(scores, _scores(ours, X_test), rtol=1e-4, atol=1e-4)


def _family(kind: str):
    from sklearn.datasets import make_friedman1

    from localsvm import SVR, NuSVC, NuSVR, OneClassSVM

    if kind == "NuSVC":
        X, y, X_test = _split("iris")
        return NuSVC(nu=0.3), X, y, X_test
    X, y = make_friedman1(n_samples=260, n_features=6, noise=0.5, random_state=1)
    est = {"SVR": SVR(C=3.0), "NuSVR": NuSVR(C=3.0, nu=0.4), "OneClassSVM": OneClassSVM(nu=0.2)}
    return est[kind], X[:200], (None if kind == "OneClassSVM" else y[:200]), X[200:] + 0.05


@pytest.mark.parametrize("kind", ["SVR", "NuSVR", "OneClassSVM", "NuSVC"])
@pytest.mark.parametrize("kernel", ["linear", "rbf", "poly", "sigmoid"])
def test_family_exports_predict_as_localsvm(kind, kernel):
    est, X, y, X_test = _family(kind)
    est.set_params(kernel=kernel, gamma=0.05, coef0=0.5, degree=2).fit(X, y)
    sess = _session(to_onnx(est, X[:2]))
    outputs = sess.run(None, {"X": X_test.astype(np.float32)})
    if kind in ("SVR", "NuSVR"):
        assert [o.name for o in sess.get_outputs()] == ["variable"]
        (value,) = outputs
        assert value.shape == (X_test.shape[0], 1)
        # float32 parameters and input: relative to the targets' scale.
        pred = est.predict(X_test)
        np.testing.assert_allclose(value[:, 0], pred, atol=1e-4 * np.abs(pred).max())
    elif kind == "OneClassSVM":
        assert [o.name for o in sess.get_outputs()] == ["label", "scores"]
        label, scores = outputs
        assert label.shape == scores.shape == (X_test.shape[0], 1)
        dec = est.decision_function(X_test)
        np.testing.assert_allclose(scores[:, 0], dec, atol=1e-4 * max(1.0, np.abs(dec).max()))
        sure = np.abs(dec) > 1e-4 * max(1.0, np.abs(dec).max())
        assert sure.mean() > 0.9
        np.testing.assert_array_equal(label[sure, 0], est.predict(X_test)[sure])
        assert set(np.unique(label)) <= {-1, 1}
    else:
        label, scores = outputs
        dec = est.decision_function(X_test)
        sure = np.abs(dec).min(axis=1) > 1e-5
        assert sure.mean() > 0.95
        np.testing.assert_array_equal(label[sure], est.predict(X_test)[sure])
        np.testing.assert_allclose(scores, dec, rtol=1e-4, atol=1e-4)


def test_family_outputs_are_named_and_shaped_as_skl2onnx_does_for_sklearn():
    from sklearn import svm

    from localsvm import SVR, OneClassSVM

    for ours, theirs, kind in [
        (SVR(), svm.SVR(), "SVR"),
        (OneClassSVM(), svm.OneClassSVM(), "OneClassSVM"),
    ]:
        _, X, y, X_test = _family(kind)
        sessions = [
            _session(skl2onnx.to_onnx(m.fit(X, y), X[:1].astype(np.float32)))
            if m is theirs
            else _session(to_onnx(m.fit(X, y), X[:1]))
            for m in (ours, theirs)
        ]
        assert [(o.name, o.type) for o in sessions[0].get_outputs()] == [
            (o.name, o.type) for o in sessions[1].get_outputs()
        ]
        got, expected = (s.run(None, {"X": X_test.astype(np.float32)}) for s in sessions)
        for a, b in zip(got, expected, strict=True):
            assert a.shape == b.shape and a.dtype == b.dtype
        # The same model up to the two solvers' tolerance.
        np.testing.assert_allclose(got[-1], expected[-1], atol=2e-2 * np.abs(expected[-1]).max())


def test_family_double_input_loaded_models_and_pipelines(tmp_path):
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from localsvm import SVR, load_libsvm_model, save_libsvm_model

    est, X, y, X_test = _family("SVR")
    est.fit(X, y)
    (value,) = _session(to_onnx(est, double=True)).run(None, {"X": X_test})
    np.testing.assert_allclose(value[:, 0], est.predict(X_test), rtol=1e-5)
    save_libsvm_model(est, tmp_path / "m.model")
    loaded = load_libsvm_model(tmp_path / "m.model")
    (value,) = _session(to_onnx(loaded)).run(None, {"X": X_test.astype(np.float32)})
    np.testing.assert_allclose(value[:, 0], est.predict(X_test), rtol=1e-4)
    register()
    from skl2onnx.common.data_types import FloatTensorType

    pipe = make_pipeline(StandardScaler(), SVR(C=3.0)).fit(X, y)
    onx = skl2onnx.to_onnx(pipe, initial_types=[("X", FloatTensorType([None, X.shape[1]]))])
    (value,) = _session(onx).run(None, {"X": X_test.astype(np.float32)})
    np.testing.assert_allclose(value[:, 0], pipe.predict(X_test), rtol=1e-4)
    # No support vector: the constant model.
    flat = SVR(kernel="rbf", epsilon=100.0).fit(X, y)
    assert flat.support_.size == 0
    (value,) = _session(to_onnx(flat)).run(None, {"X": X_test.astype(np.float32)})
    np.testing.assert_allclose(value[:, 0], flat.predict(X_test), rtol=1e-6)


def test_family_refusals():
    from localsvm import SVR

    _, X, y, _ = _family("SVR")
    with pytest.raises(ValueError, match="precomputed"):
        to_onnx(SVR(kernel="precomputed").fit(X @ X.T, y))
    with pytest.raises(ValueError, match="the input has 3 features but the model takes 6"):
        to_onnx(SVR().fit(X, y), X[:, :3])
