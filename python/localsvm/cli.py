"""``localsvm train`` and ``localsvm predict``: LIBSVM's ``svm-train`` and
``svm-predict`` on localsvm's estimators.

``localsvm train [options] data_file [model_file]`` fits a model on a
LIBSVM/svmlight or CSV file and writes it (default model file: the data
file's name plus ``.model``, in the current directory); ``localsvm predict
[options] data_file model_file output_file`` writes one prediction per
line and, when the data has labels, prints ``Accuracy = x% (a/b)
(classification)``, or for a regression the mean squared error and the
squared correlation coefficient, as ``svm-predict`` does. Bad files and
options print one line on stderr and exit with status 1.

``-s`` picks LIBSVM's formulation as ``svm-train``'s does (Chang & Lin,
"LIBSVM: a library for support vector machines", ACM TIST 2(3), 2011): 0
C-SVC (:class:`~localsvm.SVC`), 1 ν-SVC (:class:`~localsvm.NuSVC`), 2
one-class SVM (:class:`~localsvm.OneClassSVM`), 3 ε-SVR
(:class:`~localsvm.SVR`), 4 ν-SVR (:class:`~localsvm.NuSVR`). These models
are written in LIBSVM's text format (see :mod:`localsvm.model_io`); the
other estimators (``--model``) are pickled behind a header line
``localsvm-model VERSION CLASS``, and a pickle is only read by the localsvm
version that wrote it.
"""

from __future__ import annotations

import contextlib
import csv
import os
import pickle
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .model_io import load_libsvm_model, save_libsvm_model

#: Largest dense training or test matrix the command line builds, in MiB,
#: unless ``--max-dense-mb`` says otherwise: the estimators take dense
#: arrays, so a sparse file is densified first.
MAX_DENSE_MB = 2048

PICKLE_MAGIC = b"localsvm-model"

#: ``--model`` names and the estimators they pick.
MODELS = {
    "svc": ("localsvm.svc", "SVC"),
    "lsvm": ("localsvm.local_svc", "LocalSVC"),
    "psvm": ("localsvm.profile_svc", "ProfileSVC"),
    "flsa": ("localsvm.flsa", "FLSAClassifier"),
    "rflsa": ("localsvm.flsa", "RFLSAClassifier"),
    "lisvm": ("localsvm.incremental_svc", "IncrementalSVC"),
    "mcsvm": ("localsvm.cluster_svc", "ClusterSVC"),
}

#: ``--model`` also takes the class names, in any case (``--model ProfileSVC``).
MODEL_CLASSES = {cls.lower(): name for name, (_, cls) in MODELS.items()}

KERNEL_TYPES = {0: "linear", 1: "poly", 2: "rbf", 3: "sigmoid"}

#: ``-s`` (LIBSVM's svm_type) and the estimators of ``--model svc``.
SVM_TYPES = {
    0: ("localsvm.svc", "SVC"),
    1: ("localsvm.svc", "NuSVC"),
    2: ("localsvm.svm_family", "OneClassSVM"),
    3: ("localsvm.svm_family", "SVR"),
    4: ("localsvm.svm_family", "NuSVR"),
}
REGRESSION_TYPES = (3, 4)
ONE_CLASS_TYPE = 2

TRAIN_USAGE = """\
Usage: localsvm train [options] data_file [model_file]
options (as LIBSVM's svm-train):
-s svm_type : set type of SVM (default 0)
        0 -- C-SVC              (multi-class classification)
        1 -- nu-SVC             (multi-class classification)
        2 -- one-class SVM
        3 -- epsilon-SVR        (regression)
        4 -- nu-SVR             (regression)
-t kernel_type : 0 -- linear, 1 -- polynomial, 2 -- radial basis function (default),
                 3 -- sigmoid
-d degree : degree of the polynomial kernel (default 3)
-g gamma : gamma of the kernel (default 1/num_features)
-r coef0 : coef0 of the polynomial and sigmoid kernels (default 0)
-c cost : the parameter C of C-SVC, epsilon-SVR and nu-SVR (default 1)
-n nu : the parameter nu of nu-SVC, one-class SVM and nu-SVR (default 0.5)
-p epsilon : the epsilon of epsilon-SVR's loss function (default 0.1)
-m cachesize : kernel cache in MB (default 100)
-e epsilon : stopping tolerance (default 0.001)
-h shrinking : 1 to use the shrinking heuristic, 0 not to (default 1)
-b probability_estimates : 0 only (probability estimates are not supported)
-wi weight : C of class i is weight*C (default 1; a class named twice gets their product)
-v n : n-fold cross validation: prints the accuracy (regression: the mean squared
        error and squared correlation coefficient), writes no model
-q : quiet mode (no output)
localsvm options:
--model NAME : svc (default; the type of -s), lsvm (LocalSVC), psvm (ProfileSVC),
        flsa (FLSAClassifier), rflsa (RFLSAClassifier), lisvm (IncrementalSVC) or
        mcsvm (ClusterSVC); the class name works too
--format FMT : svmlight or csv (default: csv for a .csv file, else svmlight)
--label-column N : CSV column of the labels, 0-based, negative from the end (default -1);
        a CSV file's first line is a header when one of its features is not a number,
        or its label is not a number where every other line's label is
--max-dense-mb MB : largest dense data matrix to build (default 2048)
--progress : show a progress bar of the fit (scikit-learn's ProgressBar; needs rich)
Options that the chosen estimator has no parameter for are refused. The models of -s
are written in LIBSVM's format; the others are pickled with a localsvm version header
(read only by that version; load only model files you trust)."""

PREDICT_USAGE = """\
Usage: localsvm predict [options] data_file model_file output_file
options:
-b probability_estimates : 0 only (probability estimates are not supported)
-q : quiet mode (no output)
--format FMT : svmlight or csv (default: csv for a .csv file, else svmlight)
--label-column N : CSV column of the labels, 0-based, negative from the end (default -1)
--max-dense-mb MB : largest dense data matrix to build (default 2048)
--precision P : float64 (default; LIBSVM's arithmetic and predictions), auto or float32
                (faster; may flip samples within about 1e-6 of a decision boundary);
                for LIBSVM model files"""


class CLIError(Exception):
    """A problem the command line reports in one line (exit status 1)."""


# ------------------------------------------------------------------ data


#: svm-train's options that set one estimator parameter: flag → (parameter, type).
PARAM_FLAGS: dict[str, tuple[str, type]] = {
    "-d": ("degree", int),
    "-g": ("gamma", float),
    "-r": ("coef0", float),
    "-c": ("C", float),
    "-n": ("nu", float),
    "-p": ("epsilon", float),
    "-e": ("tol", float),
    "-m": ("cache_size", float),
}


def _dense_limit(n_rows: int, n_cols: int, max_mb: float, path: str) -> None:
    need = n_rows * n_cols * 8 / 2**20
    if need > max_mb:
        raise CLIError(
            f"{path}: {n_rows} x {n_cols} features would take {need:.0f} MiB as a dense "
            f"matrix, above the limit of {max_mb:g} MiB (--max-dense-mb); the estimators "
            "do not take sparse input yet"
        )


def _fmt(path: str, fmt: str | None) -> str:
    if fmt is None:
        return "csv" if path.lower().endswith(".csv") else "svmlight"
    return fmt


def _numeric_labels(y: np.ndarray) -> np.ndarray:
    """Integer-valued float labels as int64, so they print and save as LIBSVM's
    (those within int64's range only: a larger one would wrap, and labels
    that differ would become one)."""
    if y.dtype.kind == "f" and y.size and np.all(np.abs(y) < 2.0**63) and np.all(y == np.round(y)):
        return y.astype(np.int64)
    return y


def _read_svmlight(path: str, n_features: int | None, max_mb: float):
    from sklearn.datasets import load_svmlight_file

    try:
        X, y = load_svmlight_file(path, dtype=np.float64, zero_based=False)
    except (ValueError, RuntimeError) as exc:
        raise CLIError(f"{path}: not a LIBSVM/svmlight data file ({exc})") from None
    if n_features is not None and X.shape[1] < n_features:
        X.resize((X.shape[0], n_features))
    if X.shape[0] == 0:
        raise CLIError(f"{path}: no examples")
    _dense_limit(X.shape[0], X.shape[1], max_mb, path)
    return X.toarray(), _numeric_labels(y), True


def _numbers(cells) -> bool:
    """Whether every cell of ``cells`` reads as a number."""
    try:
        [float(c) for c in cells]
    except ValueError:
        return False
    return True


def _is_header(first, feature_cols, col, rest) -> bool:
    """Whether a CSV file's first line is a header: a feature cell that is
    not a number, or, with labels, a label that is not a number where every
    other line's label is (feature names that are numbers, ``y,1,2,3``; the
    line would otherwise be read as an example of a class named ``y``)."""
    if not _numbers([first[c] for c in feature_cols]):
        return True
    if col is None or _numbers([first[col]]) or not rest:
        return False
    return all(len(cells) > col and _numbers([cells[col]]) for _, cells in rest)


def _read_csv(path: str, label_column: int, n_features: int | None, max_mb: float):
    """Features and labels of a CSV file (labels None when a predict file
    has exactly the model's number of columns)."""
    # utf-8-sig: a byte order mark (spreadsheet exports) is not part of the first cell.
    with open(path, newline="", encoding="utf-8-sig") as fh:
        rows = [(i + 1, r) for i, r in enumerate(csv.reader(fh)) if any(c.strip() for c in r)]
    if not rows:
        raise CLIError(f"{path}: no examples")
    width = len(rows[0][1])

    first = rows[0][1]
    has_labels = n_features is None or width == n_features + 1
    if n_features is not None and width not in (n_features, n_features + 1):
        raise CLIError(
            f"{path}, line {rows[0][0]}: {width} columns, but the model takes {n_features} "
            "features (plus an optional label column)"
        )
    if has_labels and not -width <= label_column < width:
        raise CLIError(f"--label-column {label_column} is outside the {width} columns of {path}")
    col = label_column % width if has_labels else None
    feature_cols = [c for c in range(width) if c != col]
    if _is_header(first, feature_cols, col, rows[1:]):
        rows = rows[1:]
        if not rows:
            raise CLIError(f"{path}: a header line but no examples")
    _dense_limit(len(rows), len(feature_cols), max_mb, path)
    X = np.empty((len(rows), len(feature_cols)))
    labels = []
    for r, (lineno, cells) in enumerate(rows):
        if len(cells) != width:
            raise CLIError(f"{path}, line {lineno}: {len(cells)} columns, expected {width}")
        for j, c in enumerate(feature_cols):
            try:
                X[r, j] = float(cells[c])
            except ValueError:
                raise CLIError(
                    f"{path}, line {lineno}, column {c + 1}: not a number: {cells[c]!r}"
                ) from None
        if col is not None:
            labels.append(cells[col].strip())
    if col is None:
        return X, None, False
    y = np.array(labels)
    try:
        y = _numeric_labels(y.astype(np.float64))
    except ValueError:
        pass
    return X, y, True


def read_data(path: str, fmt: str | None, label_column: int, max_mb: float, n_features=None):
    """Features (dense), labels and whether the file held labels."""
    if not os.path.isfile(path):
        raise CLIError(f"can't open data file {path}")
    if _fmt(path, fmt) == "csv":
        return _read_csv(path, label_column, n_features, max_mb)
    return _read_svmlight(path, n_features, max_mb)


# ---------------------------------------------------------------- models


@contextlib.contextmanager
def _replacing(path: str):
    """A temporary name next to ``path``, moved onto it once written, so an
    interrupted or failed write leaves no partial file (and an existing
    file as it was)."""
    tmp = f"{path}.partial-{os.getpid()}"
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise


def _check_writable(path: str, what: str) -> None:
    """Refuse an output file that cannot be written (its directory missing
    or not writable, or the path a directory), before the work whose result
    it would hold.

    Parameters
    ----------
    path : str
        The file to be written.
    what : str
        What it is, for the message ('model file', 'output file').
    """
    target = Path(path)
    folder = target.parent
    if target.is_dir():
        raise CLIError(f"can't write {what} {path}: it is a directory")
    if not folder.is_dir():
        raise CLIError(f"can't write {what} {path}: no directory {folder}")
    if not os.access(folder, os.W_OK | os.X_OK) or (
        target.exists() and not os.access(target, os.W_OK)
    ):
        raise CLIError(f"can't write {what} {path}: permission denied")


def _version() -> str:
    from . import __version__

    return __version__


def save_model(model, path: str) -> str:
    """Write ``model``: LIBSVM's format for the estimators of ``-s`` (SVC,
    NuSVC, OneClassSVM, SVR, NuSVR), else a versioned pickle.

    Returns the format written ('libsvm' or 'pickle').
    """
    from .model_io import _svm_type

    if _svm_type(model) is not None:
        save_libsvm_model(model, path)
        return "libsvm"
    header = f"{PICKLE_MAGIC.decode()} {_version()} {type(model).__name__}\n".encode()
    with open(path, "wb") as fh:
        fh.write(header)
        pickle.dump(model, fh, protocol=pickle.HIGHEST_PROTOCOL)
    return "pickle"


def load_model(path: str, n_features: int | None = None, precision: str = "float64"):
    """Read a model file written by :func:`save_model` or by LIBSVM."""
    if not os.path.isfile(path):
        raise CLIError(f"can't open model file {path}")
    with open(path, "rb") as fh:
        head = fh.read(len(PICKLE_MAGIC))
        if head == PICKLE_MAGIC:
            line = (head + fh.readline()).decode("ascii", "replace").split()
            if len(line) != 3:
                raise CLIError(f"{path}: damaged localsvm model header")
            version, name = line[1], line[2]
            if version != _version():
                raise CLIError(
                    f"{path} was written by localsvm {version}; this is localsvm "
                    f"{_version()}, which reads only its own pickled models: retrain the "
                    f"{name} model, or predict with localsvm {version}"
                )
            try:
                return pickle.load(fh)
            except Exception as exc:
                raise CLIError(f"{path}: damaged localsvm model ({exc})") from None
    try:
        return load_libsvm_model(path, n_features=n_features, precision=precision)
    except ValueError as exc:
        raise CLIError(f"not a model file localsvm can read: {exc}") from None


# ----------------------------------------------------------------- train


def _parse_train(argv: Sequence[str]) -> dict:
    opts: dict = {
        "params": {},
        "weights": [],
        "folds": None,
        "quiet": False,
        "model": "svc",
        "format": None,
        "label_column": -1,
        "max_mb": float(MAX_DENSE_MB),
        "svm_type": 0,
    }
    args = list(argv)
    i = 0

    def value(name: str, kind):
        nonlocal i
        if i + 1 >= len(args):
            raise CLIError(f"option {name} needs a value")
        text = args[i + 1]
        i += 2
        try:
            return kind(text)
        except ValueError:
            raise CLIError(
                f"option {name} takes {'an integer' if kind is int else 'a number'}, got {text!r}"
            ) from None

    while i < len(args) and args[i].startswith("-") and args[i] != "-":
        a = args[i]
        if a == "-q":
            opts["quiet"] = True
            i += 1
        elif a == "--progress":
            opts["progress"] = True
            i += 1
        elif a == "--model":
            name = value(a, str)
            opts["model"] = MODEL_CLASSES.get(name.lower(), name)
            if opts["model"] not in MODELS:
                raise CLIError(f"--model must be one of {', '.join(MODELS)}, got {opts['model']!r}")
        elif a == "--format":
            opts["format"] = value(a, str)
            if opts["format"] not in ("svmlight", "csv"):
                raise CLIError(f"--format must be svmlight or csv, got {opts['format']!r}")
        elif a == "--label-column":
            opts["label_column"] = value(a, int)
        elif a == "--max-dense-mb":
            opts["max_mb"] = value(a, float)
        elif a == "-s":
            opts["svm_type"] = value(a, int)
            if opts["svm_type"] not in SVM_TYPES:
                raise CLIError(f"-s must be 0, 1, 2, 3 or 4, got {opts['svm_type']}")
        elif a == "-b":
            if value(a, int) != 0:
                raise CLIError("probability estimates are not supported (-b 0 only)")
        elif a == "-t":
            t = value(a, int)
            if t not in KERNEL_TYPES:
                raise CLIError(
                    f"-t must be 0, 1, 2 or 3 (4, precomputed, is not supported), got {t}"
                )
            opts["params"]["kernel"] = KERNEL_TYPES[t]
        elif a in PARAM_FLAGS:
            param, kind = PARAM_FLAGS[a]
            opts["params"][param] = value(a, kind)
        elif a == "-h":
            h = value(a, int)
            if h not in (0, 1):
                raise CLIError(f"-h takes 0 or 1, got {h}")
            opts["params"]["shrinking"] = bool(h)
        elif a == "-v":
            opts["folds"] = value(a, int)
            if opts["folds"] < 2:
                raise CLIError("n-fold cross validation: n must be at least 2 (-v)")
        elif a.startswith("-w") and len(a) > 2:
            label = a[2:]
            # Kept in order: svm-train multiplies C by each -wi naming a class.
            opts["weights"].append((label, value(a, float)))
        else:
            raise CLIError(f"unknown option {a} (localsvm train --help lists the options)")
    files = args[i:]
    if not 1 <= len(files) <= 2:
        raise CLIError(
            "expected data_file [model_file] after the options "
            f"(got {len(files)} file names; localsvm train --help)"
        )
    opts["data"] = files[0]
    opts["model_file"] = files[1] if len(files) == 2 else Path(files[0]).name + ".model"
    return opts


def _estimator(opts: dict, y: np.ndarray, n_features: int):
    import importlib

    svm_type = opts.get("svm_type", 0)
    if svm_type != 0 and opts["model"] != "svc":
        raise CLIError(
            f"-s {svm_type} ({SVM_TYPES[svm_type][1]}) is offered by --model svc only, "
            f"not --model {opts['model']}"
        )
    module, name = SVM_TYPES[svm_type] if opts["model"] == "svc" else MODELS[opts["model"]]
    cls = getattr(importlib.import_module(module), name)
    chosen = f"-s {svm_type}" if opts["model"] == "svc" else f"--model {opts['model']}"
    known = set(cls().get_params())
    params = dict(opts["params"])
    flag = {
        "kernel": "-t",
        "degree": "-d",
        "gamma": "-g",
        "coef0": "-r",
        "C": "-c",
        "nu": "-n",
        "epsilon": "-p",
        "tol": "-e",
        "cache_size": "-m",
        "shrinking": "-h",
    }
    if opts["weights"] and "class_weight" not in known:
        raise CLIError(f"option -wi does not apply to {chosen} ({name})")
    if opts["weights"]:
        classes = {str(c): c for c in np.unique(y).tolist()}
        weights = {}
        for label, w in opts["weights"]:
            key = label
            if label not in classes:
                try:
                    key = str(_numeric_labels(np.array([float(label)]))[0])
                except ValueError:
                    key = label
            if key not in classes:
                raise CLIError(f"-w{label}: no class {label!r} in the data")
            weights[classes[key]] = weights.get(classes[key], 1.0) * w
        params["class_weight"] = weights
        flag["class_weight"] = "-wi"
    for p in params:
        if p not in known:
            raise CLIError(f"option {flag[p]} does not apply to {chosen} ({name})")
    if "gamma" in known and "gamma" not in params:
        params["gamma"] = "auto"  # LIBSVM's default, 1/num_features
    if "cache_size" in known and "cache_size" not in params:
        params["cache_size"] = 100.0  # LIBSVM's default
    try:
        return cls(**params)
    except (TypeError, ValueError) as exc:
        raise CLIError(str(exc)) from None


def _progress_bar():
    """scikit-learn's ProgressBar callback, or a one-line error without it."""
    try:
        from sklearn.callback import ProgressBar

        return ProgressBar()
    except ImportError as exc:
        raise CLIError(
            f"--progress needs scikit-learn >= 1.9 and rich ({exc}); "
            'install them with pip install "localsvm[progress]"'
        ) from None


def train(argv: Sequence[str], out=None) -> int:
    """Run ``localsvm train``; returns the exit status."""
    out = sys.stdout if out is None else out
    opts = _parse_train(argv)
    if opts["folds"] is None:
        _check_writable(opts["model_file"], "model file")
    X, y, _ = read_data(opts["data"], opts["format"], opts["label_column"], opts["max_mb"])
    model = _estimator(opts, y, X.shape[1])
    svm_type = opts["svm_type"] if opts["model"] == "svc" else 0
    regression = svm_type in REGRESSION_TYPES
    if regression:
        if y.dtype.kind not in "iuf":
            raise CLIError(f"{opts['data']}: regression (-s {svm_type}) needs numeric targets")
        y = y.astype(np.float64)
    elif svm_type != ONE_CLASS_TYPE and y.dtype.kind == "f":
        odd = y[(y != np.round(y)) | ~(np.abs(y) < 2.0**63)][0]
        raise CLIError(
            f"{opts['data']}: class labels must be whole numbers within 64-bit integer range "
            f"(got {_format_label(odd)}); -s 3 or -s 4 fit a regression"
        )
    elif svm_type != ONE_CLASS_TYPE and np.unique(y).size < 2:
        raise CLIError(f"{opts['data']}: the labels hold one class; at least two are needed")
    from sklearn.base import clone

    if opts["folds"] is not None:
        from sklearn.model_selection import KFold, StratifiedKFold

        k = opts["folds"]
        if k > X.shape[0]:
            raise CLIError(f"-v {k}: more folds than the {X.shape[0]} examples")
        classify = not regression and svm_type != ONE_CLASS_TYPE
        splitter = StratifiedKFold if classify else KFold
        cv = splitter(n_splits=k, shuffle=True, random_state=0)
        # The one-class SVM predicts ±1 whatever the labels: not in their dtype.
        numeric_pred = regression or svm_type == ONE_CLASS_TYPE
        pred = np.empty(y.shape[0], dtype=np.float64 if numeric_pred else y.dtype)
        import warnings

        with warnings.catch_warnings():
            if classify and np.unique(y, return_counts=True)[1].min() < k:
                warnings.simplefilter("ignore", UserWarning)
            for train_idx, test_idx in cv.split(X, y):
                m = clone(model).fit(X[train_idx], y[train_idx])
                pred[test_idx] = m.predict(X[test_idx])
        if regression:
            mse, scc = _regression_scores(pred, y)
            print(f"Cross Validation Mean squared error = {mse:g}", file=out)
            print(f"Cross Validation Squared correlation coefficient = {scc:g}", file=out)
            return 0
        if svm_type == ONE_CLASS_TYPE:
            # As svm-train: each ±1 prediction against the label (no text
            # label is a number, so none matches).
            acc = float(np.mean(pred == y)) if y.dtype.kind in "iuf" else 0.0
        else:
            acc = float(np.mean(pred == y))
        print(f"Cross Validation Accuracy = {100 * acc:g}%", file=out)
        return 0
    if opts.get("progress"):
        model.set_callbacks(_progress_bar())
    start = time.perf_counter()
    model.fit(X, y)
    seconds = time.perf_counter() - start
    with _replacing(opts["model_file"]) as tmp:
        kind = save_model(model, tmp)
    if not opts["quiet"]:
        n_sv = getattr(model, "support_", None)
        sv = f", #SV = {len(n_sv)}" if n_sv is not None else ""
        classes = getattr(model, "classes_", None)
        cls = f", {classes.shape[0]} classes" if classes is not None else ""
        print(
            f"{type(model).__name__}: {X.shape[0]} examples, {X.shape[1]} features"
            f"{cls}{sv}; fit in {seconds:.3f} s",
            file=out,
        )
        print(f"model written to {opts['model_file']} ({kind})", file=out)
    return 0


# --------------------------------------------------------------- predict


def _regression_scores(pred: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Mean squared error and squared correlation coefficient of ``pred``
    against ``y``, as LIBSVM's tools print them (0/0 gives nan, as there)."""
    pred = pred.astype(np.float64)
    y = y.astype(np.float64)
    n = y.shape[0]
    mse = float(np.mean((pred - y) ** 2))
    sv, sy = pred.sum(), y.sum()
    num = (n * float(pred @ y) - sv * sy) ** 2
    den = (n * float(pred @ pred) - sv * sv) * (n * float(y @ y) - sy * sy)
    with np.errstate(divide="ignore", invalid="ignore"):
        scc = float(np.float64(num) / np.float64(den))
    return mse, scc


def _format_label(v) -> str:
    if isinstance(v, (float, np.floating)):
        return format(float(v), ".17g")
    return str(v)


def predict(argv: Sequence[str], out=None) -> int:
    """Run ``localsvm predict``; returns the exit status."""
    out = sys.stdout if out is None else out
    args = list(argv)
    quiet, fmt, label_column, max_mb = False, None, -1, float(MAX_DENSE_MB)
    precision = "float64"
    i = 0
    while i < len(args) and args[i].startswith("-") and args[i] != "-":
        a = args[i]
        if a == "-q":
            quiet = True
            i += 1
            continue
        if a not in ("-b", "--format", "--label-column", "--max-dense-mb", "--precision"):
            raise CLIError(f"unknown option {a} (localsvm predict --help lists the options)")
        if i + 1 >= len(args):
            raise CLIError(f"option {a} needs a value")
        v = args[i + 1]
        i += 2
        try:
            if a == "-b" and int(v) != 0:
                raise CLIError("probability estimates are not supported (-b 0 only)")
            if a == "--format":
                if v not in ("svmlight", "csv"):
                    raise CLIError(f"--format must be svmlight or csv, got {v!r}")
                fmt = v
            elif a == "--label-column":
                label_column = int(v)
            elif a == "--max-dense-mb":
                max_mb = float(v)
            elif a == "--precision":
                if v not in ("float64", "auto", "float32"):
                    raise CLIError(f"--precision must be float64, auto or float32, got {v!r}")
                precision = v
        except ValueError:
            raise CLIError(f"option {a}: bad value {v!r}") from None
    files = args[i:]
    if len(files) != 3:
        raise CLIError(
            "expected data_file model_file output_file after the options "
            f"(got {len(files)} file names; localsvm predict --help)"
        )
    data, model_file, output = files
    if not os.path.isfile(data):
        raise CLIError(f"can't open data file {data}")
    _check_writable(output, "output file")
    model = load_model(model_file, precision=precision)
    n_model = int(model.n_features_in_)
    X, y, has_labels = read_data(data, fmt, label_column, max_mb, n_features=n_model)
    if X.shape[1] > n_model:
        from .model_io import _svm_type

        libsvm_file = not Path(model_file).read_bytes().startswith(PICKLE_MAGIC)
        if _svm_type(model) is not None and libsvm_file:
            # LIBSVM's models ignore no feature: widen with zeros, as LIBSVM does.
            model = load_model(model_file, n_features=X.shape[1], precision=precision)
        else:
            raise CLIError(f"{data} has {X.shape[1]} features but the model takes {n_model}")
    pred = model.predict(X)
    try:
        with _replacing(output) as tmp, open(tmp, "w", encoding="utf-8") as fh:
            fh.writelines(_format_label(v) + "\n" for v in pred.tolist())
    except OSError as exc:
        raise CLIError(f"can't write output file {output}: {exc.strerror}") from None
    if has_labels and y is not None and not quiet:
        from sklearn.base import is_regressor

        if is_regressor(model):
            if y.dtype.kind not in "iuf":
                raise CLIError(f"{data}: a regression model needs numeric targets to score")
            mse, scc = _regression_scores(pred, y)
            print(f"Mean squared error = {mse:g} (regression)", file=out)
            print(f"Squared correlation coefficient = {scc:g} (regression)", file=out)
            return 0
        if pred.dtype.kind in "iuf" and y.dtype.kind in "iuf":
            correct = int(np.sum(pred.astype(np.float64) == y.astype(np.float64)))
        else:
            correct = int(np.sum(pred.astype(str) == y.astype(str)))
        total = y.shape[0]
        print(
            f"Accuracy = {100 * correct / total:g}% ({correct}/{total}) (classification)",
            file=out,
        )
    return 0


def run(command: str, argv: Sequence[str]) -> int:
    """Run ``train`` or ``predict`` with LIBSVM-style ``argv``.

    Prints usage for ``--help``; any error is printed as one line on stderr
    and gives exit status 1. Ctrl-C (``KeyboardInterrupt``) prints one line
    on stderr and gives status 130 (128 + SIGINT), as command-line tools do;
    the output file is written last, so an interrupted command wrote none.
    """
    if any(a in ("--help", "-help") for a in argv) or (command == "train" and not argv):
        print(TRAIN_USAGE if command == "train" else PREDICT_USAGE)
        return 0 if argv else 1
    if command == "predict" and not argv:
        print(PREDICT_USAGE)
        return 1
    try:
        return (train if command == "train" else predict)(argv)
    except KeyboardInterrupt:
        what = "model" if command == "train" else "predictions"
        print(f"localsvm {command}: interrupted; no {what} written", file=sys.stderr)
        return 130
    except CLIError as exc:
        message = str(exc)
    except (ValueError, TypeError, OSError, MemoryError) as exc:
        message = str(exc) or type(exc).__name__
    except Exception as exc:  # never a traceback on the command line
        message = f"{type(exc).__name__}: {exc}"
    # One line, whatever the message (scikit-learn's for NaN in X spans two).
    message = " ".join(part.strip() for part in message.splitlines() if part.strip())
    print(f"localsvm {command}: error: {message}", file=sys.stderr)
    return 1
