"""``localsvm train`` / ``localsvm predict``: LIBSVM's command lines on
localsvm's estimators; every error is one line on stderr and status 1."""

from __future__ import annotations

import pickle
import sys

import numpy as np
import pytest
from sklearn.datasets import dump_svmlight_file, load_svmlight_file

import localsvm
from localsvm import SVC, load_libsvm_model
from localsvm.__main__ import main
from localsvm.cli import PICKLE_MAGIC


def _data(n: int, seed: int):
    rng = np.random.default_rng(seed)
    y = np.where(np.arange(n) % 3 == 0, 1, -1)
    X = rng.normal(size=(n, 5)) + 1.2 * y[:, None] * np.array([1.0, 0.5, 0.0, 0.0, 0.0])
    X[:, 4] = 0.0  # a feature that is zero everywhere: absent from the file
    return X, y


@pytest.fixture
def files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    X, y = _data(120, 0)
    Xt, yt = _data(60, 1)
    dump_svmlight_file(X, y, str(tmp_path / "train.svm"), zero_based=False)
    dump_svmlight_file(Xt, yt, str(tmp_path / "test.svm"), zero_based=False)
    return tmp_path, (X, y), (Xt, yt)


def _run(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_train_predict_round_trip(files, capsys):
    tmp, (X, y), (Xt, yt) = files
    status, out, err = _run(capsys, "train", "-c", "4", "-g", "0.3", "train.svm")
    assert status == 0, err
    assert "model written to train.svm.model (libsvm)" in out
    model = load_libsvm_model(tmp / "train.svm.model", n_features=5)
    reference = SVC(C=4, gamma=0.3, cache_size=100).fit(X[:, :4], y)
    np.testing.assert_array_equal(model.predict(Xt), reference.predict(Xt[:, :4]))

    status, out, err = _run(capsys, "predict", "test.svm", "train.svm.model", "pred.txt")
    assert status == 0, err
    status, out_fast, err = _run(
        capsys, "predict", "--precision", "auto", "test.svm", "train.svm.model", "fast.txt"
    )
    assert status == 0, err
    assert out_fast.startswith("Accuracy = ")
    lines = (tmp / "pred.txt").read_text().splitlines()
    expected = reference.predict(Xt[:, :4])
    assert lines == [str(int(v)) for v in expected]
    correct = int(np.sum(expected == yt))
    acc = 100 * correct / yt.shape[0]
    assert out.strip() == f"Accuracy = {acc:g}% ({correct}/{yt.shape[0]}) (classification)"


def test_svm_train_options_reach_the_estimator(files, capsys):
    tmp, (X, y), (Xt, _) = files
    argv = ["-t", "1", "-d", "2", "-g", "0.5", "-r", "1", "-c", "3", "-e", "0.01", "-m", "50"]
    argv += ["-h", "0", "-w1", "2", "-q", "train.svm", "m.model"]
    status, out, err = _run(capsys, "train", *argv)
    assert (status, out, err) == (0, "", "")
    text = (tmp / "m.model").read_text()
    assert "kernel_type polynomial" in text and "degree 2" in text and "coef0 1.0" in text
    reference = SVC(
        kernel="poly",
        degree=2,
        gamma=0.5,
        coef0=1.0,
        C=3,
        tol=0.01,
        shrinking=False,
        class_weight={1: 2.0},
    ).fit(X[:, :4], y)
    model = load_libsvm_model(tmp / "m.model")
    np.testing.assert_array_equal(model.predict(Xt[:, :4]), reference.predict(Xt[:, :4]))


def test_default_gamma_is_libsvms(files, capsys):
    tmp, _, _ = files
    assert _run(capsys, "train", "-q", "train.svm")[0] == 0
    # 1 / num_features, with the four features the file holds.
    assert "gamma 0.25\n" in (tmp / "train.svm.model").read_text()


def test_cross_validation_prints_accuracy_and_writes_no_model(files, capsys):
    tmp, _, _ = files
    status, out, err = _run(capsys, "train", "-v", "5", "train.svm")
    assert status == 0, err
    assert out.startswith("Cross Validation Accuracy = ")
    acc = float(out.split("=")[1].strip().rstrip("%"))
    assert 50 < acc <= 100
    assert not (tmp / "train.svm.model").exists()


def test_csv_and_another_estimator_pickled(files, capsys):
    tmp, (X, y), (Xt, _) = files
    rows = np.column_stack([y, X])
    np.savetxt(tmp / "train.csv", rows, delimiter=",", header="y,a,b,c,d,e", comments="")
    np.savetxt(tmp / "test.csv", Xt, delimiter=",")  # no label column
    status, out, err = _run(
        capsys, "train", "--model", "lsvm", "--label-column", "0", "train.csv", "l.model"
    )
    assert status == 0, err
    assert "(pickle)" in out
    raw = (tmp / "l.model").read_bytes()
    assert raw.startswith(PICKLE_MAGIC + f" {localsvm.__version__} LocalSVC\n".encode())
    model = pickle.loads(raw.split(b"\n", 1)[1])
    status, out, err = _run(capsys, "predict", "test.csv", "l.model", "p.txt")
    assert status == 0, err
    assert out == ""  # no labels, no accuracy
    got = [int(v) for v in (tmp / "p.txt").read_text().split()]
    assert got == model.predict(Xt).tolist()


def test_csv_header_of_numbered_features(files, capsys):
    """A header whose feature names are numbers (``y,1,2,...``) is a header,
    not an example of a class named ``y``; the same rows without the header
    give the same model."""
    from localsvm.cli import read_data

    tmp, (X, y), _ = files
    rows = np.column_stack([y, X])
    names = "y," + ",".join(str(j + 1) for j in range(X.shape[1]))
    np.savetxt(tmp / "named.csv", rows, delimiter=",", header=names, comments="")
    np.savetxt(tmp / "bare.csv", rows, delimiter=",")
    Xn, yn, _ = read_data(str(tmp / "named.csv"), None, 0, 100.0)
    Xb, yb, _ = read_data(str(tmp / "bare.csv"), None, 0, 100.0)
    assert Xn.shape == X.shape and np.array_equal(Xn, Xb)
    assert yn.dtype.kind == "i" and np.array_equal(yn, yb)
    # String labels: a first line whose label is a word stays an example.
    words = np.where(y > 0, "pos", "neg")
    with open(tmp / "words.csv", "w") as fh:
        for label, x in zip(words, X, strict=True):
            fh.write(label + "," + ",".join(repr(float(v)) for v in x) + "\n")
    Xw, yw, _ = read_data(str(tmp / "words.csv"), None, 0, 100.0)
    assert Xw.shape == X.shape and yw.tolist() == words.tolist()
    status, _, err = _run(capsys, "train", "--label-column", "0", "named.csv", "n.model")
    assert status == 0, err


def _one_error(capsys, *argv) -> str:
    status, _, err = _run(capsys, *argv)
    assert status == 1
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def test_error_paths(files, capsys):
    tmp, _, _ = files
    (tmp / "bad.svm").write_text("1 1:0.5 2:1\n-1 1:x\n")
    (tmp / "one.svm").write_text("1 1:0.5\n1 1:0.7\n")
    (tmp / "bad.csv").write_text("1,2,0\n1,oops,1\n")
    (tmp / "garbage.model").write_text("hello world\n")
    old = PICKLE_MAGIC + b" 0.0.1 LocalSVC\n" + pickle.dumps(object())
    (tmp / "old.model").write_bytes(old)
    assert _run(capsys, "train", "-q", "train.svm", "ok.model")[0] == 0
    cases = [
        (("train", "missing.svm"), "can't open data file missing.svm"),
        (("train", "bad.svm"), "bad.svm: not a LIBSVM/svmlight data file"),
        (("train", "one.svm"), "one class"),
        (("train", "bad.csv"), "bad.csv, line 2, column 2: not a number: 'oops'"),
        (("train", "-z", "1", "train.svm"), "unknown option -z"),
        (("train", "-c"), "option -c needs a value"),
        (("train", "-c", "abc", "train.svm"), "option -c takes a number, got 'abc'"),
        (("train", "-c", "-1", "train.svm"), "'C' parameter"),
        (("train", "-t", "4", "train.svm"), "-t must be 0, 1, 2 or 3"),
        (("train", "-s", "5", "train.svm"), "-s must be 0, 1, 2, 3 or 4, got 5"),
        (("train", "-s", "1", "--model", "flsa", "train.svm"), "offered by --model svc only"),
        (("train", "-p", "0.2", "train.svm"), "option -p does not apply to -s 0 (SVC)"),
        (("train", "-s", "1", "-c", "2", "train.svm"), "-c does not apply to -s 1 (NuSVC)"),
        (("train", "-s", "3", "-w1", "2", "train.svm"), "-wi does not apply to -s 3 (SVR)"),
        (("train", "-s", "1", "-n", "2", "train.svm"), "The 'nu' parameter of NuSVC"),
        (("train", "-s", "1", "-n", "0.9", "train.svm"), "specified nu is infeasible"),
        (("train", "-s", "3", "-p", "-1", "train.svm"), "The 'epsilon' parameter of SVR"),
        (("train", "-v", "1", "train.svm"), "must be at least 2"),
        (("train", "-w7", "2", "train.svm"), "-w7: no class '7'"),
        (("train", "--model", "flsa", "-c", "2", "train.svm"), "-c does not apply"),
        (("train", "--model", "nope", "train.svm"), "--model must be one of"),
        (("train", "--max-dense-mb", "0.001", "train.svm"), "above the limit"),
        (("train", "a", "b", "c"), "expected data_file [model_file]"),
        (("predict", "test.svm", "missing.model", "o"), "can't open model file missing.model"),
        (("predict", "test.svm", "garbage.model", "o"), "line 1: unknown header key 'hello'"),
        (("predict", "test.svm", "train.svm", "o"), "not a model file localsvm can read"),
        (("predict", "test.svm", "old.model", "o"), "written by localsvm 0.0.1"),
        (("predict", "missing.svm", "ok.model", "o"), "can't open data file"),
        (("predict", "-x", "test.svm", "ok.model", "o"), "unknown option -x"),
        (("predict", "test.svm", "ok.model"), "expected data_file model_file output_file"),
        (("predict", "--precision", "half", "test.svm", "ok.model", "o"), "--precision must be"),
        (("predict", "test.svm", "ok.model", "nodir/o"), "can't write output file"),
    ]
    for argv, message in cases:
        line = _one_error(capsys, *argv)
        assert line.startswith(f"localsvm {argv[0]}: error: "), line
        assert message in line, (argv, line)


def test_usage_and_version(capsys):
    assert main(["train", "--help"]) == 0
    assert "-wi weight" in capsys.readouterr().out
    assert main(["predict"]) == 1
    assert "output_file" in capsys.readouterr().out
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out.strip() == f"localsvm {localsvm.__version__}"


def test_progress_draws_a_bar_and_trains_the_same_model(files, capsys):
    pytest.importorskip("rich")
    pytest.importorskip("sklearn.callback")
    tmp, _, _ = files
    status, _, err = _run(capsys, "train", "-c", "4", "train.svm", "plain.model")
    assert status == 0, err
    status, out, err = _run(capsys, "train", "--progress", "-c", "4", "train.svm", "progress.model")
    assert status == 0, err
    assert "SVC - fit" in out + err  # the progress bar's label, wherever rich drew it
    assert (tmp / "plain.model").read_text() == (tmp / "progress.model").read_text()


def test_train_checks_the_model_path_before_the_fit(files, capsys, monkeypatch):
    tmp, _, _ = files
    fits = []
    (tmp / "adir").mkdir()
    cases = [
        ("no/such/dir/x.model", "can't write model file no/such/dir/x.model: no directory"),
        ("adir", "can't write model file adir: it is a directory"),
    ]
    with monkeypatch.context() as m:
        m.setattr(SVC, "fit", lambda self, X, y: fits.append(1) or self)
        for path, message in cases:
            line = _one_error(capsys, "train", "train.svm", path)
            assert line.startswith("localsvm train: error: " + message), line
    assert not fits  # refused before any fit
    # Cross-validation writes no model: its path is not checked.
    assert _run(capsys, "train", "-v", "2", "train.svm", "no/such/dir/x.model")[0] == 0


def test_ctrl_c_prints_one_line_and_exits_130(files, capsys, monkeypatch):
    tmp, _, _ = files

    def interrupted(self, X, y):
        raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(SVC, "fit", interrupted)
        status, out, err = _run(capsys, "train", "train.svm", "m.model")
    assert status == 130
    assert (out, err) == ("", "localsvm train: interrupted; no model written\n")
    assert not list(tmp.glob("m.model*"))
    # Interrupted while the model is written: no partial file is left, and
    # a model already there stays as it was.
    (tmp / "m.model").write_text("before\n")

    def half_written(model, path):
        with open(path, "w") as fh:
            fh.write("svm_type c_svc\n")
        raise KeyboardInterrupt

    monkeypatch.setattr("localsvm.cli.save_model", half_written)
    assert _run(capsys, "train", "train.svm", "m.model")[0] == 130
    assert [p.name for p in tmp.glob("m.model*")] == ["m.model"]
    assert (tmp / "m.model").read_text() == "before\n"


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (Linux /proc)."""
    import os

    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_sigint_stops_train_with_one_line(tmp_path):
    # The real thing: SIGINT to `python -m localsvm train` during a fit.
    import signal
    import subprocess
    import time

    rng = np.random.default_rng(0)
    # Random labels at C = 100: a fit of about a minute of CPU here.
    X, y = rng.normal(size=(30000, 40)), rng.integers(0, 2, size=30000)
    dump_svmlight_file(X, y, str(tmp_path / "big.svm"), zero_based=False)
    proc = subprocess.Popen(
        [sys.executable, "-m", "localsvm", "train", "-c", "100", "big.svm", "big.model"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # Interrupt once the child is inside the fit: past the imports and the
    # reading of the file (about 3 CPU seconds) and long before the fit's end,
    # measured in the child's own CPU time, so a loaded machine
    # only delays the signal.
    deadline = time.monotonic() + 300
    while proc.poll() is None and _cpu_seconds(proc.pid) < 4.0:
        assert time.monotonic() < deadline, "the child never reached 4 CPU seconds"
        time.sleep(0.05)
    assert proc.poll() is None, "the fit ended before it could be interrupted"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert err == "localsvm train: interrupted; no model written\n"
    assert out == ""
    assert not list(tmp_path.glob("big.model*"))


def _regression_files(tmp):
    from sklearn.datasets import make_friedman1

    X, y = make_friedman1(n_samples=160, n_features=5, noise=0.3, random_state=3)
    dump_svmlight_file(X[:120], y[:120], str(tmp / "reg.svm"), zero_based=False)
    dump_svmlight_file(X[120:], y[120:], str(tmp / "reg_test.svm"), zero_based=False)
    # The rows as the files hold them: their text rounds the features' last
    # bit, which moves a fit stopped at tol by more than that bit.
    X, y = load_svmlight_file(str(tmp / "reg.svm"), n_features=5)
    Xt, yt = load_svmlight_file(str(tmp / "reg_test.svm"), n_features=5)
    return (X.toarray(), y), (Xt.toarray(), yt)


@pytest.mark.parametrize(
    ("s", "options", "estimator", "params"),
    [
        (1, ["-n", "0.4"], "NuSVC", {"nu": 0.4}),
        (2, ["-n", "0.2"], "OneClassSVM", {"nu": 0.2}),
        (3, ["-c", "2", "-p", "0.3"], "SVR", {"C": 2.0, "epsilon": 0.3}),
        (4, ["-c", "2", "-n", "0.3"], "NuSVR", {"C": 2.0, "nu": 0.3}),
    ],
)
def test_svm_types_train_and_predict_as_svm_train(files, capsys, s, options, estimator, params):
    """``-s 1..4`` fit the estimator of LIBSVM's type with svm-train's
    defaults, write a LIBSVM model file of that type, and ``predict`` writes
    its predictions and prints svm-predict's figures."""
    tmp, (X, y), (Xt, yt) = files
    regression = s in (3, 4)
    if regression:
        (X, y), (Xt, yt) = _regression_files(tmp)
        train_file, test_file = "reg.svm", "reg_test.svm"
    else:
        X, Xt = X[:, :4], Xt[:, :4]  # the fifth feature is absent from the file
        train_file, test_file = "train.svm", "test.svm"
    argv = ["-s", str(s), "-g", "0.2", *options, train_file, "m.model"]
    status, out, err = _run(capsys, "train", *argv)
    assert status == 0, err
    assert out.startswith(f"{estimator}: ") and "(libsvm)" in out
    svm_type = {1: "nu_svc", 2: "one_class", 3: "epsilon_svr", 4: "nu_svr"}[s]
    assert (tmp / "m.model").read_text().splitlines()[0] == f"svm_type {svm_type}"
    cls = getattr(localsvm, estimator)
    reference = cls(gamma=0.2, cache_size=100, **params).fit(X, None if s == 2 else y)
    model = load_libsvm_model(tmp / "m.model", n_features=X.shape[1])
    assert isinstance(model, cls)
    if regression:
        # The fit's float32 kernel panels against the file's float64 model.
        np.testing.assert_allclose(model.predict(Xt), reference.predict(Xt), rtol=1e-5)
    else:
        np.testing.assert_array_equal(model.predict(Xt), reference.predict(Xt))

    status, out, err = _run(capsys, "predict", test_file, "m.model", "pred.txt")
    assert status == 0, err
    lines = (tmp / "pred.txt").read_text().splitlines()
    expected = model.predict(Xt)
    if regression:
        written = [float(v) for v in lines]
        # The test file's text rounds the features' last bit.
        np.testing.assert_allclose(written, expected, rtol=1e-12)
        # svm-predict's figures, as LIBSVM's own evaluation computes them.
        svmutil = pytest.importorskip("libsvm.svmutil")
        _, mse, scc = svmutil.evaluations(yt.tolist(), written)
        assert out.splitlines() == [
            f"Mean squared error = {mse:g} (regression)",
            f"Squared correlation coefficient = {scc:g} (regression)",
        ]
    else:
        assert lines == [str(int(v)) for v in expected]
        correct = int(np.sum(expected == yt))
        acc = 100 * correct / yt.shape[0]
        assert out.strip() == f"Accuracy = {acc:g}% ({correct}/{yt.shape[0]}) (classification)"


def test_regression_cross_validation_prints_mse_and_scc(files, capsys):
    tmp = files[0]
    (X, y), _ = _regression_files(tmp)
    status, out, err = _run(capsys, "train", "-s", "3", "-v", "4", "-g", "0.2", "reg.svm")
    assert status == 0, err
    from sklearn.model_selection import KFold, cross_val_predict

    pred = cross_val_predict(
        localsvm.SVR(gamma=0.2, cache_size=100), X, y, cv=KFold(4, shuffle=True, random_state=0)
    )
    svmutil = pytest.importorskip("libsvm.svmutil")
    _, mse, scc = svmutil.evaluations(y.tolist(), pred.tolist())
    assert out.splitlines() == [
        f"Cross Validation Mean squared error = {mse:g}",
        f"Cross Validation Squared correlation coefficient = {scc:g}",
    ]
    assert not (tmp / "reg.svm.model").exists()
    # One-class: the accuracy of the ±1 labels against the file's labels.
    status, out, err = _run(capsys, "train", "-s", "2", "-v", "3", "train.svm")
    assert status == 0, err
    assert out.startswith("Cross Validation Accuracy = ")
