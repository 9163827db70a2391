"""LIBSVM model files: localsvm reads LIBSVM's models and LIBSVM reads
localsvm's, with the same predictions, and bad files are refused with the
line that is wrong."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from localsvm import SVC, load_libsvm_model, save_libsvm_model
from localsvm.datasets import load_a9a, load_iris

KERNELS = {0: "linear", 1: "poly", 2: "rbf", 3: "sigmoid"}
PARAMS = {"C": 2.0, "gamma": 0.1, "coef0": 0.5, "degree": 2, "precision": "float64"}
LIBSVM_OPTIONS = "-c 2 -g 0.1 -r 0.5 -d 2 -q"


@pytest.fixture(scope="module")
def svmutil():
    return pytest.importorskip("libsvm.svmutil", reason="libsvm-official is not installed")


@functools.cache
def _iris():
    d = load_iris()
    # Shuffled so the first labels LIBSVM sees are 0, 2, 1: its label order
    # is not the sorted one, which exercises the reordering on load.
    perm = np.random.default_rng(0).permutation(d.y.shape[0])
    X, y = d.X[perm], d.y[perm].astype(np.int64)
    return X[:100], y[:100], X[100:]


@functools.cache
def _a9a():
    d = load_a9a()
    # The first training label is -1 or +1; LIBSVM's label line follows it.
    return d.X_train[:250], d.y_train[:250].astype(np.int64), d.X_test[:300]


DATA = {"iris": _iris, "a9a": _a9a}


def _libsvm_predict(svmutil, model, X):
    labels, _, dec = svmutil.svm_predict([0] * X.shape[0], X.tolist(), model, "-q")
    return np.asarray(labels), np.asarray(dec)


@pytest.mark.parametrize("data", sorted(DATA))
@pytest.mark.parametrize("t", sorted(KERNELS))
def test_libsvm_model_loads_with_same_predictions(svmutil, tmp_path, data, t):
    X, y, X_test = DATA[data]()
    model = svmutil.svm_train(y.tolist(), X.tolist(), f"-t {t} {LIBSVM_OPTIONS}")
    path = tmp_path / "libsvm.model"
    svmutil.svm_save_model(str(path), model)
    ours = load_libsvm_model(path, n_features=X.shape[1])
    assert ours.kernel == KERNELS[t]
    labels, dec = _libsvm_predict(svmutil, model, X_test)
    np.testing.assert_array_equal(ours.predict(X_test), labels)
    if data == "a9a":
        # One decision value per sample; LIBSVM's favours its first label.
        first = model.get_labels()[0]
        ours_dec = ours.decision_function(X_test)
        sign = 1.0 if first == ours.classes_[1] else -1.0
        np.testing.assert_allclose(sign * ours_dec, dec[:, 0], rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("data", sorted(DATA))
@pytest.mark.parametrize("t", sorted(KERNELS))
def test_localsvm_model_loads_in_libsvm(svmutil, tmp_path, data, t):
    X, y, X_test = DATA[data]()
    clf = SVC(kernel=KERNELS[t], **PARAMS).fit(X, y)
    path = tmp_path / "ours.model"
    save_libsvm_model(clf, path)
    model = svmutil.svm_load_model(str(path))
    assert model is not None
    labels, dec = _libsvm_predict(svmutil, model, X_test)
    expected = clf.predict(X_test)
    np.testing.assert_array_equal(labels, expected)
    if data == "iris":
        # Labels written sorted: LIBSVM's pairwise values are ours ('ovo').
        clf.set_params(decision_function_shape="ovo")
        np.testing.assert_allclose(dec, clf.decision_function(X_test), rtol=1e-9, atol=1e-9)
    back = load_libsvm_model(path)
    assert back.n_features_in_ == X.shape[1]
    np.testing.assert_array_equal(back.predict(X_test), expected)


def test_round_trip_keeps_every_number(tmp_path):
    X, y, X_test = _iris()
    clf = SVC(kernel="rbf", gamma=0.37, C=3.0, precision="float64").fit(X, y)
    path = tmp_path / "m.model"
    save_libsvm_model(clf, path)
    back = load_libsvm_model(path)
    np.testing.assert_array_equal(back.classes_, clf.classes_)
    np.testing.assert_array_equal(back.n_support_, clf.n_support_)
    np.testing.assert_array_equal(back.support_vectors_, clf.support_vectors_)
    np.testing.assert_array_equal(back.dual_coef_, clf.dual_coef_)
    np.testing.assert_array_equal(back.intercept_, clf.intercept_)
    np.testing.assert_array_equal(back.decision_function(X_test), clf.decision_function(X_test))
    assert back.get_params()["gamma"] == 0.37


def test_binary_file_layout_matches_libsvm_sign_convention(tmp_path):
    # Two classes -1/+1: LIBSVM's first label (-1 here, sorted) is the
    # positive side of rho and the coefficients.
    X = np.array([[0.0], [1.0], [3.0], [4.0]])
    y = np.array([-1, -1, 1, 1])
    clf = SVC(kernel="linear", C=10.0).fit(X, y)
    path = tmp_path / "b.model"
    save_libsvm_model(clf, path)
    lines = path.read_text().splitlines()
    assert lines[0] == "svm_type c_svc"
    assert lines[1] == "kernel_type linear"
    assert "label -1 1" in lines
    rho = float(next(ln for ln in lines if ln.startswith("rho")).split()[1])
    # Decision of LIBSVM: Σ coef·x·sv − rho > 0 for the first label (-1).
    sv_lines = lines[lines.index("SV") + 1 :]
    w = sum(float(ln.split()[0]) * float(ln.split()[1].split(":")[1]) for ln in sv_lines)
    assert w * 0.0 - rho > 0  # x = 0 is class -1
    assert w * 4.0 - rho < 0  # x = 4 is class +1


def test_precision_choice(tmp_path):
    X, y, X_test = _iris()
    clf = SVC(kernel="rbf", gamma=0.5, precision="float64").fit(X, y)
    path = tmp_path / "p.model"
    save_libsvm_model(clf, path)
    exact = load_libsvm_model(path)
    fast = load_libsvm_model(path, precision="float32")
    assert exact.precision_ == "float64" and fast.precision_ == "float32"
    dec = exact.decision_function(X_test)
    np.testing.assert_allclose(fast.decision_function(X_test), dec, rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="precision must be"):
        load_libsvm_model(path, precision="half")


def test_n_features_widens_the_model(tmp_path):
    X = np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 2.0, 0.0], [2.0, 0.0, 0.0]])
    y = np.array([0, 1, 0, 1])
    clf = SVC(kernel="rbf", gamma=0.5).fit(X, y)
    path = tmp_path / "w.model"
    save_libsvm_model(clf, path)
    # The zero last feature is written, so the width survives.
    assert load_libsvm_model(path).n_features_in_ == 3
    wide = load_libsvm_model(path, n_features=5)
    Xw = np.hstack([X, np.ones((4, 2))])
    # Extra features count in ‖x − sv‖² with zeros in the support vectors.
    expected = clf.decision_function(X) * 1.0
    got = wide.decision_function(Xw)
    assert got.shape == expected.shape
    assert not np.allclose(got, expected)
    with pytest.raises(ValueError, match="n_features=2 is smaller"):
        load_libsvm_model(path, n_features=2)


def test_save_refuses_what_libsvm_cannot_hold(tmp_path):
    X, y, _ = _iris()
    with pytest.raises(ValueError, match="precomputed"):
        save_libsvm_model(SVC(kernel="precomputed").fit(X @ X.T, y), tmp_path / "p")
    with pytest.raises(ValueError, match="one-vs-one") as info:
        save_libsvm_model(SVC(multiclass="ovr").fit(X, y), tmp_path / "o")
    # The message names the user's function and options, not an internal one.
    message = str(info.value)
    assert message.startswith("save_libsvm_model: LIBSVM's model format")
    assert "multiclass='ovo'" in message and "pickle or joblib" in message
    assert "libsvm_layout" not in message
    with pytest.raises(ValueError, match="integer class labels"):
        save_libsvm_model(SVC().fit(X, np.array(["a", "b", "c"])[y]), tmp_path / "s")
    with pytest.raises(TypeError, match=r"localsvm\.SVC"):
        save_libsvm_model(object(), tmp_path / "x")
    assert not any(tmp_path.iterdir())


GOOD = """svm_type c_svc
kernel_type rbf
gamma 0.5
nr_class 2
total_sv 2
rho 0.1
label 1 -1
nr_sv 1 1
SV
1 1:0.5 2:1
-1 1:-0.5
"""


def test_good_text_loads(tmp_path):
    path = tmp_path / "good.model"
    path.write_text(GOOD)
    clf = load_libsvm_model(path)
    assert clf.classes_.tolist() == [-1, 1]
    assert clf.n_features_in_ == 2
    # Σ coef·K − rho at x = (0.5, 1): K(sv1) = 1, K(sv2) = exp(−0.5·2) ...
    x = np.array([[0.5, 1.0]])
    k2 = np.exp(-0.5 * (1.0**2 + 1.0**2))
    libsvm_dec = 1.0 - k2 - 0.1  # positive for label 1
    np.testing.assert_allclose(clf.decision_function(x), [libsvm_dec])
    assert clf.predict(x).tolist() == [1]


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("svm_type c_svc", "svm_type nu_svm", r"line 1: svm_type 'nu_svm' is not supported"),
        ("kernel_type rbf", "kernel_type precomputed", r"line 2: kernel_type 'precomputed'"),
        ("gamma 0.5", "gamma abc", r"line 3: gamma must be a number, got 'abc'"),
        ("gamma 0.5", "gamma -1", r"line 3: gamma must be positive"),
        ("nr_class 2", "nr_class 1", r"line 4: nr_class must be at least 2"),
        ("rho 0.1", "rho 0.1 0.2", r"line 6: 'rho' needs 1 values for nr_class 2, got 2"),
        ("rho 0.1", "rho nan", r"line 6: rho must be finite"),
        ("label 1 -1", "label 1 1", r"line 7: the labels must be distinct"),
        ("label 1 -1", "label 1 x", r"line 7: a label must be an integer, got 'x'"),
        ("nr_sv 1 1", "nr_sv 1 2", r"line 8: nr_sv sums to 3 but total_sv is 2"),
        ("gamma 0.5", "gama 0.5", r"line 3: unknown header key 'gama'"),
        ("1 1:0.5 2:1", "1 2:0.5 1:1", r"line 10: feature indices must increase, got 1 after 2"),
        ("1 1:0.5 2:1", "1 1:0.5 2:x", r"line 10: the value of feature 2 must be a number"),
        ("1 1:0.5 2:1", "1 0:0.5", r"line 10: a feature index must be at least 1"),
        ("1 1:0.5 2:1", "1 1:0.5 2:inf", r"line 10: the value of feature 2 must be finite"),
        ("1 1:0.5 2:1", "x 1:0.5", r"line 10: a coefficient must be a number, got 'x'"),
        ("-1 1:-0.5", "-1 1:-0.5:3", r"line 11: the value of feature 1 must be a number"),
        ("1 1:0.5 2:1", "1 1=0.5", r"line 10: expected index:value, got '1=0.5'"),
        ("1 1:0.5 2:1", "1:0.5 2:1", r"line 10: a support vector needs 1 coefficients before"),
        ("-1 1:-0.5\n", "", r"end of file: total_sv is 2 but the file holds 1"),
        ("-1 1:-0.5\n", "-1 1:-0.5\n1 1:3\n", r"line 12: more support vectors than total_sv"),
        ("SV\n1 1:0.5 2:1\n-1 1:-0.5\n", "", r"end of file: no 'SV' line"),
        ("SV\n", "", r"line 9: unknown header key '1'"),
        ("nr_class 2\n", "nr_class 2\nnr_class 2\n", r"line 5: 'nr_class' appears twice"),
        ("rho 0.1\n", "", r"the header lacks 'rho'"),
        ("kernel_type rbf\ngamma 0.5\n", "kernel_type polynomial\n", r"needs a 'degree' line"),
    ],
)
def test_bad_files_name_the_line(tmp_path, old, new, message):
    assert old in GOOD
    path = tmp_path / "bad.model"
    path.write_text(GOOD.replace(old, new, 1))
    with pytest.raises(ValueError, match=message) as info:
        load_libsvm_model(path)
    assert str(path) in str(info.value)


def test_empty_and_binary_files(tmp_path):
    empty = tmp_path / "empty"
    empty.write_text("")
    with pytest.raises(ValueError, match="empty"):
        load_libsvm_model(empty)
    blob = tmp_path / "blob"
    blob.write_bytes(b"\x80\x81PK\x03")
    with pytest.raises(ValueError, match="not a LIBSVM model file"):
        load_libsvm_model(blob)
    with pytest.raises(FileNotFoundError):
        load_libsvm_model(tmp_path / "missing")


@pytest.mark.slow
def test_a9a_full_split_both_directions(svmutil, tmp_path):
    d = load_a9a()
    X, y = d.X_train[:8000], d.y_train[:8000].astype(np.int64)
    for t in sorted(KERNELS):
        model = svmutil.svm_train(y.tolist(), X.tolist(), f"-t {t} {LIBSVM_OPTIONS}")
        svmutil.svm_save_model(str(tmp_path / "l.model"), model)
        labels, _ = _libsvm_predict(svmutil, model, d.X_test)
        ours = load_libsvm_model(tmp_path / "l.model", n_features=X.shape[1])
        np.testing.assert_array_equal(ours.predict(d.X_test), labels)
        clf = SVC(kernel=KERNELS[t], **PARAMS).fit(X, y)
        save_libsvm_model(clf, tmp_path / "o.model")
        labels, _ = _libsvm_predict(
            svmutil, svmutil.svm_load_model(str(tmp_path / "o.model")), d.X_test
        )
        np.testing.assert_array_equal(labels, clf.predict(d.X_test))


def _last_feature_unused(n_classes: int):
    """16 features, the last zero in every training row (so in every support
    vector, and absent from LIBSVM's file) but not in the test rows."""
    rng = np.random.default_rng(n_classes)
    centers = rng.normal(scale=2.0, size=(n_classes, 16))
    y = np.repeat(np.arange(n_classes), 30)
    X = centers[y] + rng.normal(size=(y.size, 16))
    X[:, -1] = 0.0
    X_test = centers[np.arange(200) % n_classes] + rng.normal(size=(200, 16))
    return X, y.astype(np.int64), X_test


@pytest.mark.parametrize("n_classes", [2, 3, 10])
@pytest.mark.parametrize("t", sorted(KERNELS))
def test_libsvm_model_takes_rows_wider_than_its_largest_index(svmutil, tmp_path, n_classes, t):
    X, y, X_test = _last_feature_unused(n_classes)
    model = svmutil.svm_train(y.tolist(), X.tolist(), f"-t {t} -c 2 -g 0.05 -r 0.5 -d 2 -q")
    path = tmp_path / "libsvm.model"
    svmutil.svm_save_model(str(path), model)
    # LIBSVM's file holds the support vectors to 8 digits: compare with the
    # model read back from it.
    model = svmutil.svm_load_model(str(path))
    labels, dec = _libsvm_predict(svmutil, model, X_test)
    for sparse in (False, True):
        ours = load_libsvm_model(path, sparse=sparse)
        assert ours.n_features_in_ == 15
        np.testing.assert_array_equal(ours.predict(X_test), labels)
        if n_classes == 2:
            sign = 1.0 if model.get_labels()[0] == ours.classes_[1] else -1.0
            got = sign * ours.decision_function(X_test)
            np.testing.assert_allclose(got, dec[:, 0], rtol=1e-9, atol=1e-9)
        # The model is unchanged: it still takes rows of its own width.
        assert ours.predict(X_test[:, :15]).shape == (200,)
    # A stated width is exact.
    with pytest.raises(ValueError, match="16 features, but SVC is expecting 15"):
        load_libsvm_model(path, n_features=15).predict(X_test)
    stated = load_libsvm_model(path, n_features=16)
    np.testing.assert_array_equal(stated.predict(X_test), labels)
    with pytest.raises(ValueError, match="n_features must be at least 1"):
        load_libsvm_model(path, n_features=0)
    with pytest.raises(TypeError, match="n_features must be an int"):
        load_libsvm_model(path, n_features=16.0)


def test_ten_classes_vote_ties_go_to_the_first_label_of_the_file(svmutil, tmp_path):
    # Ten classes whose first appearances are not sorted, so svm-train's
    # label line is not the sorted order; ties of votes then went to the
    # smallest label here and to the first of the line in svm-predict.
    rng = np.random.default_rng(3)
    X = rng.normal(size=(400, 6))
    y = rng.permutation(np.repeat(np.arange(10), 40))
    model = svmutil.svm_train(y.tolist(), X.tolist(), "-c 1 -g 0.2 -q")
    path = tmp_path / "ten.model"
    svmutil.svm_save_model(str(path), model)
    file_order = model.get_labels()
    assert file_order != sorted(file_order)
    X_test = rng.normal(size=(1000, 6))
    labels, dec = _libsvm_predict(svmutil, model, X_test)
    # LIBSVM's votes, to know that the check meets ties broken by the line.
    votes = np.zeros((X_test.shape[0], 10))
    pairs = [(i, j) for i in range(10) for j in range(i + 1, 10)]
    for p, (i, j) in enumerate(pairs):
        votes[np.flatnonzero(dec[:, p] > 0), i] += 1
        votes[np.flatnonzero(dec[:, p] <= 0), j] += 1
    top = votes == votes.max(axis=1, keepdims=True)
    tied = top.sum(axis=1) > 1
    smallest = np.array(file_order)[np.argmax(top * (-np.array(file_order) + 100), axis=1)]
    assert np.sum(tied & (smallest != labels)) > 0
    for n_features in (None, 6):
        ours = load_libsvm_model(path, n_features=n_features)
        np.testing.assert_array_equal(ours.predict(X_test), labels)
