"""Regressions found probing the command line, the solver backends and
``CellSVC``'s out-of-core routes (an array read in chunks, Dask)."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import memmap_copy
from localsvm import CellSVC, load_libsvm_model

PARAMS = dict(cell_size=400, overlap=0.5, sample_size=600, random_state=0)


def _data(n=1500, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, 4)
    y = (np.sin(2 * X[:, 0]) + X[:, 1] * X[:, 2] > 0).astype(int)
    return X, y


_memmap = memmap_copy


@pytest.mark.parametrize("class_weight", [{0: 1.0, 1: 50.0}, "balanced"])
def test_cellsvc_chunked_fit_weighs_each_cell_by_class_weight(class_weight):
    """The chunked (memmap) route trained its cells unweighted, in silence.
    Each cell's SVM now takes the class factors resolved on the whole
    training set ('balanced' from the first pass's counts), as in memory:
    it is the SVC of its training rows with those factors as weights."""
    from localsvm import SVC

    X, y = _imbalanced()
    params = dict(n_cells=2, overlap=0.0, random_state=0)
    clf = CellSVC(class_weight=class_weight, **params).fit(_memmap(X), y)
    counts = np.bincount(y)
    factors = (
        counts.sum() / (2.0 * counts)
        if class_weight == "balanced"
        else np.array([class_weight[0], class_weight[1]])
    )
    np.testing.assert_array_equal(clf.class_weight_, factors)
    np.testing.assert_array_equal(
        clf.class_weight_, CellSVC(class_weight=class_weight, **params).fit(X, y).class_weight_
    )
    plain = CellSVC(**params).fit(_memmap(X), y)
    assert not np.allclose(clf.decision_function(X), plain.decision_function(X))
    members = clf.cell_labels_
    for j in range(clf.n_cells_):
        rows = np.flatnonzero(members == j)
        ref = SVC(gamma=clf.kernel_spec_.gamma).fit(
            X[rows], y[rows], sample_weight=factors[y[rows]]
        )
        np.testing.assert_allclose(
            clf.cell_models_[j].decision_function(X[:50]), ref.decision_function(X[:50]), atol=1e-6
        )


def _imbalanced(n=1500, seed=0):
    X, y = _data(n, seed)
    # About one row in six of class 1.
    return X, (y & (X[:, 3] > 0.5)).astype(int)


def test_cellsvc_chunked_fit_refuses_sample_weight():
    """sample_weight is not applied on the chunked route: refused, naming
    it, not dropped in silence (in memory it changes the model)."""
    X, y = _data()
    w = np.where(y == 1, 50.0, 1.0)
    with pytest.raises(ValueError, match="sample_weight"):
        CellSVC(**PARAMS).fit(_memmap(X), y, sample_weight=w)
    weighted = CellSVC(**PARAMS).fit(X, y, sample_weight=w).decision_function(X)
    assert not np.allclose(weighted, CellSVC(**PARAMS).fit(X, y).decision_function(X))


def test_cellsvc_chunked_fit_refuses_a_class_weight_of_zero():
    X, y = _data()
    with pytest.raises(ValueError, match="class_weight"):
        CellSVC(class_weight={0: 0.0}, **PARAMS).fit(_memmap(X), y)
    with pytest.raises(ValueError, match="class_weight names classes"):
        CellSVC(class_weight={7: 2.0}, **PARAMS).fit(_memmap(X), y)


def test_cellsvc_dask_fit_weighs_cells_as_the_chunked_fit():
    """A Dask fit takes class_weight as the chunked fit does (the same
    model); sample_weight is refused, naming it."""
    distributed = pytest.importorskip("distributed")
    da = pytest.importorskip("dask.array")
    X, y = _imbalanced()
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
        ) as lc,
        distributed.Client(lc),
    ):
        dX = da.from_array(X, chunks=(500, 4))
        for class_weight in ({0: 1.0, 1: 5.0}, "balanced"):
            on_dask = CellSVC(class_weight=class_weight, **PARAMS).fit(dX, da.from_array(y, 500))
            chunked = CellSVC(class_weight=class_weight, **PARAMS).fit(_memmap(X), y)
            np.testing.assert_array_equal(on_dask.class_weight_, chunked.class_weight_)
            np.testing.assert_array_equal(
                on_dask.decision_function(X), chunked.decision_function(X)
            )
        with pytest.raises(ValueError, match="sample_weight"):
            CellSVC(**PARAMS).fit(dX, da.from_array(y, 500), sample_weight=np.ones(len(y)))
        with pytest.raises(ValueError, match="sample_weight"):
            CellSVC(**PARAMS).fit(X, da.from_array(y, 500), sample_weight=np.ones(len(y)))


def _cli(capsys, *argv):
    from localsvm.__main__ import main

    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_cli_labels_beyond_int64_are_not_merged(tmp_path, capsys, monkeypatch):
    """Whole-number labels were cast to int64 whatever their size: 1e19 and
    2e19 both became -2**63, so three classes were trained as two, in
    silence, and the model file held a label no row had."""
    monkeypatch.chdir(tmp_path)
    rows = [("1e19", 1.0), ("2e19", 2.0), ("5", 3.0)] * 4
    (tmp_path / "big.txt").write_text(
        "".join(f"{lab} 1:{x + 0.01 * i}\n" for i, (lab, x) in enumerate(rows))
    )
    status, _, err = _cli(capsys, "train", "-q", "big.txt", "big.model")
    # Refused in one line, naming the label: LIBSVM's model files hold
    # integer labels, and no class may be merged into another.
    assert status == 1
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "whole numbers" in err and "1e+19" in err
    assert not (tmp_path / "big.model").exists()
    # Labels with a fraction get the same line (LIBSVM truncates them).
    (tmp_path / "f.txt").write_text("1.5 1:1\n-2.25 1:2\n1.5 1:1.1\n-2.25 1:2.1\n")
    status, _, err = _cli(capsys, "train", "-q", "f.txt", "f.model")
    assert status == 1 and "whole numbers" in err and "1.5" in err


def test_cli_error_from_the_estimator_is_one_line(tmp_path, capsys, monkeypatch):
    """scikit-learn's message for NaN in X spans several lines; the command
    line printed all of them, where every error is one line on stderr."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "nan.txt").write_text("1 1:nan\n-1 1:2\n1 1:1\n-1 1:3\n")
    status, _, err = _cli(capsys, "train", "nan.txt")
    assert status == 1
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "NaN" in lines[0] and "Traceback" not in err


def test_cli_one_class_cross_validation_with_text_labels(tmp_path, capsys, monkeypatch):
    """``-s 2 -v k`` on a CSV file with text labels: the ±1 predictions were
    stored in an array of the labels' text dtype ('-1' cut to '-' for
    one-letter labels) and then read as numbers, so the command failed with
    "could not convert string to float". As svm-train, it compares each
    prediction with the label: no text label equals +1 or -1."""
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    lines = [f"{a:.5f},{b:.5f},{'a' if i % 2 else 'b'}\n" for i, (a, b) in enumerate(X)]
    (tmp_path / "t.csv").write_text("".join(lines))
    status, out, err = _cli(capsys, "train", "-s", "2", "-v", "3", "t.csv")
    assert status == 0, err
    assert out.strip() == "Cross Validation Accuracy = 0%"
    # Labels ±1: the share of rows whose prediction is their label.
    y = np.where(np.arange(60) % 3 == 0, -1, 1)
    lines = [f"{a:.5f},{b:.5f},{c}\n" for (a, b), c in zip(X, y, strict=True)]
    (tmp_path / "p.csv").write_text("".join(lines))
    status, out, err = _cli(capsys, "train", "-s", "2", "-n", "0.3", "-v", "3", "p.csv")
    assert status == 0, err
    from sklearn.model_selection import KFold

    from localsvm import OneClassSVM

    pred = np.empty(60)
    for tr, te in KFold(3, shuffle=True, random_state=0).split(X):
        model = OneClassSVM(nu=0.3, gamma="auto", cache_size=100.0).fit(X[tr])
        pred[te] = model.predict(X[te])
    assert out.strip() == f"Cross Validation Accuracy = {100 * np.mean(pred == y):g}%"


def test_cli_repeated_class_weight_multiplies_as_svm_train(tmp_path, capsys, monkeypatch):
    """svm-train multiplies C of a class by every ``-wi`` that names it
    (``-w7 2 -w7 3`` is ``-w7 6``); the command line kept only the last
    (``-w7 3``), a different model without a word."""
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = np.where(X[:, 0] + X[:, 1] ** 2 > 0.5, 7, 2)
    lines = [
        f"{c} " + " ".join(f"{j + 1}:{v:.6f}" for j, v in enumerate(x)) + "\n"
        for x, c in zip(X, y, strict=True)
    ]
    (tmp_path / "d.txt").write_text("".join(lines))

    def model(*weights):
        status, _, err = _cli(capsys, "train", "-q", *weights, "d.txt", "m.model")
        assert status == 0, err
        return load_libsvm_model(str(tmp_path / "m.model"))

    twice = model("-w7", "2", "-w7.0", "3")
    once = model("-w7", "6")
    last = model("-w7", "3")
    np.testing.assert_allclose(twice.intercept_, once.intercept_, rtol=1e-12)
    np.testing.assert_array_equal(twice.support_, once.support_)
    assert not np.allclose(twice.intercept_, last.intercept_)


def test_cli_csv_with_a_byte_order_mark_keeps_its_first_row(tmp_path, capsys, monkeypatch):
    """A CSV file saved with a UTF-8 byte order mark (as spreadsheet programs
    write it) read its first cell as '\\ufeff0.3466', not a number, so the
    first row was taken for a header and dropped: train fitted one example
    fewer and predict wrote one line fewer than the file's rows, every
    prediction on the line of the row after its own."""
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(1)
    X = rng.normal(size=(50, 2))
    text = "".join(f"{a:.4f},{b:.4f},{int(a > 0)}\n" for a, b in X)
    (tmp_path / "bom.csv").write_text(text, encoding="utf-8-sig")
    (tmp_path / "plain.csv").write_text(text, encoding="utf-8")
    test = "".join(f"{a:.4f},{b:.4f}\n" for a, b in X)
    (tmp_path / "t.csv").write_text(test, encoding="utf-8-sig")
    status, out, err = _cli(capsys, "train", "bom.csv", "bom.model")
    assert status == 0, err
    assert "50 examples" in out
    status, _, err = _cli(capsys, "train", "-q", "plain.csv", "plain.model")
    assert status == 0, err
    assert (tmp_path / "bom.model").read_text() == (tmp_path / "plain.model").read_text()
    status, _, err = _cli(capsys, "predict", "t.csv", "bom.model", "p.txt")
    assert status == 0, err
    got = [int(v) for v in (tmp_path / "p.txt").read_text().split()]
    want = load_libsvm_model(str(tmp_path / "plain.model")).predict(np.round(X, 4))
    assert got == want.tolist()
