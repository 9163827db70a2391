"""LIBSVM's text model format for localsvm's kernel machines.

:func:`save_libsvm_model` writes a fitted :class:`~localsvm.SVC` (two
classes, or one-vs-one with more), :class:`~localsvm.NuSVC`,
:class:`~localsvm.SVR`, :class:`~localsvm.NuSVR` or
:class:`~localsvm.OneClassSVM` in the format of LIBSVM's ``svm-train``
(``svm_type`` ``c_svc``, ``nu_svc``, ``epsilon_svr``, ``nu_svr`` and
``one_class``); :func:`load_libsvm_model` reads such a file, written by
LIBSVM or by localsvm, into the fitted estimator of its type, which predicts
without refitting.

The format (C.-C. Chang and C.-J. Lin, "LIBSVM: A library for support vector
machines", ACM TIST 2(3), 2011) is a header of ``key value…`` lines
(``svm_type``, ``kernel_type``, ``degree``, ``gamma``, ``coef0``,
``nr_class``, ``total_sv``, ``rho``, ``label``, ``nr_sv``), a line ``SV``,
and one line per support vector: its ``nr_class − 1`` coefficients, then its
non-zero features as 1-based ``index:value`` pairs.

* Classification (``c_svc``, ``nu_svc``; a ν-SVC model is stored, as LIBSVM
  stores it, in the C-SVC form, its solution divided by the margin variable
  ``r``): support vectors are grouped by class in the order of the ``label``
  line; for the class pair ``(i, j)`` (positions in that order, ``i < j``)
  the decision value is ``Σ coef·K(sv, x) − rho``, and a positive value
  votes for ``label[i]``.
* Regression and one-class (``epsilon_svr``, ``nu_svr``, ``one_class``):
  ``nr_class`` is 2, there is no ``label`` nor ``nr_sv`` line, one ``rho``
  and one coefficient per support vector (``α_i − α*_i`` for regression,
  ``α_i`` for one-class). The model is ``Σ coef·K(sv, x) − rho``: the
  prediction of a regression, and for one-class the decision value, so that
  ``rho`` is scikit-learn's ``offset_`` (``−intercept_``) and a positive
  value marks an inlier.
"""

from __future__ import annotations

import copy
import math
import os
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ._docstrings import fill
from ._multiclass import libsvm_to_ovo, ovo_pairs, ovo_to_libsvm, public_layout
from .kernels import KernelSpec
from .svc import SVC, NuSVC
from .svm_family import SVR, NuSVR, OneClassSVM

__all__ = ["libsvm_layout", "load_libsvm_model", "save_libsvm_model"]

#: localsvm kernel name -> LIBSVM ``kernel_type`` and back.
_KERNEL_TO_LIBSVM = {"linear": "linear", "poly": "polynomial", "rbf": "rbf", "sigmoid": "sigmoid"}
_LIBSVM_TO_KERNEL = {v: k for k, v in _KERNEL_TO_LIBSVM.items()}
_HEADER_KEYS = (
    "svm_type",
    "kernel_type",
    "degree",
    "gamma",
    "coef0",
    "nr_class",
    "total_sv",
    "rho",
    "label",
    "probA",
    "probB",
    "prob_density_marks",
    "nr_sv",
)
#: LIBSVM's ``svm_type`` of one dual problem with one coefficient row.
_SINGLE_TYPES = ("one_class", "epsilon_svr", "nu_svr")
_CLASSIFIER_TYPES = ("c_svc", "nu_svc")


def _svm_type(model) -> str | None:
    """LIBSVM's ``svm_type`` of a localsvm estimator, None for other objects."""
    for cls, name in (
        (NuSVC, "nu_svc"),
        (SVC, "c_svc"),
        (NuSVR, "nu_svr"),
        (SVR, "epsilon_svr"),
        (OneClassSVM, "one_class"),
    ):
        if isinstance(model, cls):
            return name
    return None


def _check_model(model, what: str, target: str = "LIBSVM's model format") -> str:
    """Refuse anything but a fitted one-vs-one ``SVC``, ``NuSVC``, ``SVR``,
    ``NuSVR`` or ``OneClassSVM`` on a feature kernel; ``what`` is the user's
    function, ``target`` the format it writes. Returns LIBSVM's
    ``svm_type``."""
    from sklearn.utils.validation import check_is_fitted

    svm_type = _svm_type(model)
    if svm_type is None:
        raise TypeError(
            f"{what} takes a fitted localsvm.SVC, NuSVC, SVR, NuSVR or OneClassSVM, "
            f"got {type(model).__name__}"
        )
    check_is_fitted(model)
    if model.kernel not in _KERNEL_TO_LIBSVM:
        raise ValueError(
            f"{what} supports the kernels {sorted(_KERNEL_TO_LIBSVM)}; "
            f"this model's kernel is {model.kernel!r}"
        )
    if svm_type == "c_svc" and model.classes_.shape[0] > 2 and model.multiclass != "ovo":
        raise ValueError(
            f"{what}: {target} holds one-vs-one models only, and this model of "
            f"{model.classes_.shape[0]} classes was trained with "
            f"multiclass={model.multiclass!r}. Refit it with multiclass='ovo' (the default) "
            "to write it this way, or save it as it is with pickle or joblib."
        )
    return svm_type


def libsvm_layout(model) -> dict:
    """A fitted model's parameters in LIBSVM's layout.

    Parameters
    ----------
    model : SVC, NuSVC, SVR, NuSVR or OneClassSVM
        A fitted localsvm estimator on a 'linear', 'poly', 'rbf' or
        'sigmoid' kernel (an ``SVC`` of more than two classes with
        ``multiclass='ovo'``).

    Returns
    -------
    dict
        ``svm_type`` (LIBSVM's name: 'c_svc', 'nu_svc', 'epsilon_svr',
        'nu_svr' or 'one_class'), ``labels`` (``classes_``, LIBSVM's label
        order; None for regression and one-class), ``n_support``,
        ``support_vectors`` (grouped by class), ``coef`` (LIBSVM's
        ``sv_coef``, of shape ``(n_classes − 1, n_SV)``, one row for
        regression and one-class) and ``rho``, one per class pair in
        LIBSVM's order (one for regression and one-class): the decision
        value is ``Σ coef·K(sv, x) − rho``, positive for ``labels[i]`` of the
        pair ``(i, j)``, for an inlier, and the prediction of a regression.

    Raises
    ------
    TypeError
        If ``model`` is none of these estimators.
    ValueError
        If its kernel is 'precomputed' or a callable, or it is a
        one-vs-rest model of more than two classes.

    Examples
    --------
    >>> from localsvm import SVC
    >>> from localsvm.datasets import load_iris
    >>> d = load_iris()
    >>> layout = libsvm_layout(SVC().fit(d.X, d.y))
    >>> layout["svm_type"], layout["coef"].shape[0], layout["rho"].shape
    ('c_svc', 2, (3,))
    """
    return _layout(model, "libsvm_layout")


def _layout(model, what: str, target: str = "LIBSVM's model format") -> dict:
    """:func:`libsvm_layout`, refusing a model in the words of the user's
    function ``what``, which writes ``target``."""
    svm_type = _check_model(model, what, target)
    dual = model.dual_coef_
    # A sparse fit's coefficients are CSR (as scikit-learn's).
    dual = np.asarray(dual.toarray() if sp.issparse(dual) else dual, dtype=np.float64)
    intercept = np.asarray(model.intercept_, dtype=np.float64)
    if svm_type in _SINGLE_TYPES:
        labels, coef, rho = None, dual.reshape(1, -1).copy(), -intercept.reshape(1)
    elif model.classes_.shape[0] == 2:
        # The public binary attributes are flipped to favour classes_[1];
        # LIBSVM's first label is the positive side.
        labels, coef, rho = model.classes_, -dual, intercept.copy()
    else:
        labels, coef, rho = model.classes_, dual.copy(), -intercept
    return {
        "svm_type": svm_type,
        "labels": labels,
        "n_support": np.asarray(model.n_support_, dtype=np.int64),
        "support_vectors": (
            sp.csr_matrix(model.support_vectors_, dtype=np.float64)
            if sp.issparse(model.support_vectors_)
            else np.asarray(model.support_vectors_, dtype=np.float64)
        ),
        "coef": coef,
        "rho": rho,
    }


def _integer_labels(classes: np.ndarray) -> list[int]:
    """The class labels as Python ints; LIBSVM's files hold integer labels."""
    try:
        values = classes.astype(np.float64)
    except (TypeError, ValueError):
        values = None
    if values is None or not np.all(np.isfinite(values)) or np.any(values != np.round(values)):
        raise ValueError(
            "LIBSVM model files hold integer class labels; this model's classes are "
            f"{classes.tolist()!r} (encode them as integers before fitting)"
        )
    return [int(v) for v in values]


def _in_label_order(layout: dict, order: np.ndarray) -> dict:
    """A classifier's LIBSVM layout (classes in ``classes_`` order) with
    its classes in ``order`` (class indices, first label first): the order
    of the file a model was read from, whose first label wins a tie of
    one-vs-one votes. The support vectors are regrouped, and a pair whose
    two classes trade places changes the sign of its coefficients and
    ``rho`` (its first class is the positive side)."""
    K = len(order)
    if np.array_equal(order, np.arange(K)):
        return layout
    counts = np.asarray(layout["n_support"], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(counts)])
    pairs = ovo_pairs(K)
    # Each pair's coefficients over every support vector (0 outside it).
    coef = np.zeros((len(pairs), int(starts[-1])))
    for k, (rows, values) in enumerate(libsvm_to_ovo(layout["coef"], counts)):
        coef[k, rows] = values
    columns = np.concatenate([np.arange(starts[c], starts[c + 1]) for c in order])
    index = {p: k for k, p in enumerate(pairs)}
    moved = np.empty_like(coef)
    rho = np.empty(len(pairs))
    for k, (i, j) in enumerate(pairs):
        a, b = int(order[i]), int(order[j])
        old = index[(min(a, b), max(a, b))]
        sign = 1.0 if a < b else -1.0
        moved[k] = sign * coef[old, columns]
        rho[k] = sign * layout["rho"][old]
    n_support = counts[order]
    return {
        **layout,
        "labels": np.asarray(layout["labels"])[order],
        "n_support": n_support,
        "support_vectors": layout["support_vectors"][columns],
        "coef": ovo_to_libsvm(moved, np.repeat(np.arange(K), n_support), K),
        "rho": rho,
    }


def _num(x: float) -> str:
    """Shortest text that reads back as exactly ``x``."""
    return repr(float(x))


#: The start of both functions' Examples: a file path and a model to save.
_EXAMPLE_SETUP = """\
Examples
--------
>>> import os, tempfile
>>> from localsvm import SVC, load_libsvm_model, save_libsvm_model
>>> from localsvm.datasets import load_iris
>>> d = load_iris()"""


@fill(example_setup=_EXAMPLE_SETUP)
def save_libsvm_model(model, path) -> None:
    """Write a fitted model as a LIBSVM model file.

    The file is what LIBSVM's ``svm-train`` writes for the model's type
    (``svm_type`` ``c_svc`` for :class:`~localsvm.SVC`, ``nu_svc`` for
    :class:`~localsvm.NuSVC`, ``epsilon_svr`` for :class:`~localsvm.SVR`,
    ``nu_svr`` for :class:`~localsvm.NuSVR`, ``one_class`` for
    :class:`~localsvm.OneClassSVM`), readable by LIBSVM's
    ``svm_load_model`` and ``svm-predict`` and by :func:`load_libsvm_model`.
    Numbers are written with all their digits, so a model read back with
    the original's arithmetic (``load_libsvm_model(path,
    precision=model.precision)``: the default 'float64' differs from the
    estimators' default 'auto' by about ``1e-6`` (relative) in the decision
    values) predicts exactly as the original. The file holds no prediction
    settings: ``break_ties`` and ``decision_function_shape`` come back at
    their defaults (set them again on the loaded model). Class labels are
    written in ``classes_`` order (sorted), or, for a model read by
    :func:`load_libsvm_model`, in its file's order, whose first label wins a
    tie of one-vs-one votes (LIBSVM's rule, which the model keeps). The
    last feature is written on the first support vector even when it is
    zero, so the number of features survives the round trip (a model
    without support vectors loses it).

    Parameters
    ----------
    model : SVC, NuSVC, SVR, NuSVR or OneClassSVM
        A fitted localsvm estimator on a 'linear', 'poly', 'rbf' or
        'sigmoid' kernel; a classifier with integer class labels, and, for an
        ``SVC`` of more than two classes, ``multiclass='ovo'`` (the default).
    path : str or path-like
        The file to write (overwritten).

    Raises
    ------
    TypeError
        If ``model`` is none of these estimators.
    ValueError
        If the kernel is 'precomputed' or a callable, the model is
        one-vs-rest with more than two classes, or a class label is not an
        integer.

    {example_setup}
    >>> clf = SVC(C=10).fit(d.X, d.y)
    >>> path = os.path.join(tempfile.mkdtemp(), "iris.model")
    >>> save_libsvm_model(clf, path)
    >>> bool((load_libsvm_model(path).predict(d.X) == clf.predict(d.X)).all())
    True
    """
    layout = _layout(model, "save_libsvm_model")
    classifier = layout["labels"] is not None
    order = getattr(model, "_vote_order", None)
    if classifier and len(layout["labels"]) > 2 and order is not None:
        layout = _in_label_order(layout, np.asarray(order, dtype=np.intp))
    labels = _integer_labels(np.asarray(layout["labels"])) if classifier else []
    spec = model.kernel_spec_
    sv = layout["support_vectors"]
    coef = layout["coef"]
    n_features = int(model.n_features_in_)
    lines = [f"svm_type {layout['svm_type']}", f"kernel_type {_KERNEL_TO_LIBSVM[spec.name]}"]
    if spec.name == "poly":
        lines.append(f"degree {int(spec.degree)}")
    if spec.name in ("poly", "rbf", "sigmoid"):
        lines.append(f"gamma {_num(spec.gamma)}")
    if spec.name in ("poly", "sigmoid"):
        lines.append(f"coef0 {_num(spec.coef0)}")
    lines += [
        # LIBSVM writes nr_class 2 for regression and one-class models.
        f"nr_class {len(labels) if classifier else 2}",
        f"total_sv {sv.shape[0]}",
        "rho " + " ".join(_num(r) for r in layout["rho"]),
    ]
    if classifier:
        lines += [
            "label " + " ".join(str(v) for v in labels),
            "nr_sv " + " ".join(str(int(n)) for n in layout["n_support"]),
        ]
    lines.append("SV")
    sparse = sp.issparse(sv)
    if sparse:
        sv = sp.csr_matrix(sv)
        sv.sum_duplicates()
    for i in range(sv.shape[0]):
        if sparse:
            lo, hi = sv.indptr[i], sv.indptr[i + 1]
            keep = sv.data[lo:hi] != 0
            nz, vals = sv.indices[lo:hi][keep], sv.data[lo:hi][keep]
        else:
            nz = np.flatnonzero(sv[i])
            vals = sv[i][nz]
        if i == 0 and n_features > 0 and (nz.size == 0 or nz[-1] != n_features - 1):
            # The last feature on the first line fixes n_features on reload.
            nz, vals = np.append(nz, n_features - 1), np.append(vals, 0.0)
        parts = [_num(c) for c in coef[:, i]]
        parts += [f"{j + 1}:{_num(v)}" for j, v in zip(nz, vals, strict=True)]
        lines.append(" ".join(parts))
    Path(os.fspath(path)).write_text("\n".join(lines) + "\n", encoding="ascii")


class _OpenWidth:
    """A model read by :func:`load_libsvm_model` without ``n_features``:
    like LIBSVM's ``svm-predict`` it takes rows wider than the file's largest
    feature index.

    A LIBSVM model file does not store its number of features; sparse rows
    omit zeros, so the largest index on a support vector is only a lower
    bound. The features beyond it are zero in every support vector: they
    leave the inner products unchanged and enter the RBF kernel through
    ``‖x − sv‖²``. Wider rows are evaluated against the support vectors
    padded with zero columns, which computes exactly that. A refit model
    takes only its training width, as any estimator.
    """

    def fit(self, X, y=None, sample_weight=None):
        """Fit as the estimator this class extends; the model then takes its
        training width only.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training examples.
        y : array-like of shape (n_samples,), default=None
            Their labels or targets (None for one-class).
        sample_weight : array-like of shape (n_samples,), default=None
            Per-sample weights.

        Returns
        -------
        self : object
            The fitted model.
        """
        super().fit(X, y, sample_weight=sample_weight)
        self.__dict__.pop("_open_width", None)
        return self

    def _wider(self, X) -> int:
        """The width of ``X`` when it is wider than an open-width model, else 0."""
        if self.__dict__.get("_open_width") and hasattr(self, "n_features_in_"):
            shape = X.shape if hasattr(X, "shape") else np.shape(X)
            if len(shape) == 2 and shape[1] > self.n_features_in_:
                return int(shape[1])
        return 0

    def _widened(self, width: int):
        """A shallow copy taking ``width`` features: the support vectors
        (and a linear model's weights) with zero columns appended."""
        wide = copy.copy(self)
        sv = self.support_vectors_
        extra = width - sv.shape[1]
        if sp.issparse(sv):
            sv = sp.csr_matrix(sv)
            wide.support_vectors_ = sp.csr_matrix(
                (sv.data, sv.indices, sv.indptr), shape=(sv.shape[0], width)
            )
        else:
            wide.support_vectors_ = np.hstack([sv, np.zeros((sv.shape[0], extra))])
        if self._linear_w is not None:
            w = self._linear_w
            wide._linear_w = np.hstack([w, np.zeros((w.shape[0], extra))])
        wide.n_features_in_ = width
        wide.shape_fit_ = (sv.shape[0], width)
        return wide

    def _estimator_method(self, name: str, X):
        """The extended estimator's method ``name`` on ``X``, called on a copy
        of this model padded to ``X``'s width when ``X`` is wider."""
        width = self._wider(X)
        model = self._widened(width) if width else self
        return getattr(super(_OpenWidth, model), name)(X)


class _OpenWidthClassifier(_OpenWidth):
    def _model_decision(self, X) -> np.ndarray:
        return self._estimator_method("_model_decision", X)


class _OpenWidthSingle(_OpenWidth):
    def _decision(self, X) -> np.ndarray:
        return self._estimator_method("_decision", X)


_WIDTH_DOC = """ read by :func:`load_libsvm_model` without
    ``n_features``: it takes rows wider than the file's largest feature
    index, as LIBSVM's ``svm-predict`` does (see
    :class:`localsvm.model_io._OpenWidth`); refit, it takes its training
    width only."""


class LibsvmSVC(_OpenWidthClassifier, SVC):
    __doc__ = "An :class:`~localsvm.SVC`" + _WIDTH_DOC


class LibsvmNuSVC(_OpenWidthClassifier, NuSVC):
    __doc__ = "A :class:`~localsvm.NuSVC`" + _WIDTH_DOC


class LibsvmSVR(_OpenWidthSingle, SVR):
    __doc__ = "An :class:`~localsvm.SVR`" + _WIDTH_DOC


class LibsvmNuSVR(_OpenWidthSingle, NuSVR):
    __doc__ = "A :class:`~localsvm.NuSVR`" + _WIDTH_DOC


class LibsvmOneClassSVM(_OpenWidthSingle, OneClassSVM):
    __doc__ = "A :class:`~localsvm.OneClassSVM`" + _WIDTH_DOC


#: svm_type -> (the estimator, its open-width variant).
_ESTIMATORS = {
    "c_svc": (SVC, LibsvmSVC),
    "nu_svc": (NuSVC, LibsvmNuSVC),
    "epsilon_svr": (SVR, LibsvmSVR),
    "nu_svr": (NuSVR, LibsvmNuSVR),
    "one_class": (OneClassSVM, LibsvmOneClassSVM),
}


class _Reader:
    """The lines of a model file with their numbers, for error messages."""

    def __init__(self, path) -> None:
        self.path = os.fspath(path)
        try:
            text = Path(self.path).read_text(encoding="ascii")
        except UnicodeDecodeError as exc:
            raise ValueError(
                f"{self.path}: not a LIBSVM model file (non-ASCII byte at offset {exc.start})"
            ) from None
        self.lines = text.splitlines()

    def error(self, lineno: int, what: str) -> ValueError:
        where = f"line {lineno}" if lineno else "end of file"
        return ValueError(f"{self.path}, {where}: {what}")


def _parse_float(reader: _Reader, lineno: int, token: str, what: str) -> float:
    try:
        value = float(token)
    except ValueError:
        raise reader.error(lineno, f"{what} must be a number, got {token!r}") from None
    if not math.isfinite(value):
        raise reader.error(lineno, f"{what} must be finite, got {token!r}")
    return value


def _parse_int(reader: _Reader, lineno: int, token: str, what: str, minimum: int) -> int:
    try:
        value = int(token)
    except ValueError:
        raise reader.error(lineno, f"{what} must be an integer, got {token!r}") from None
    if value < minimum:
        raise reader.error(lineno, f"{what} must be at least {minimum}, got {value}")
    return value


def _explain_line(reader: _Reader, lineno: int, tokens: list[str], n_coef: int) -> None:
    """Raise the error for the first malformed token of a support-vector line."""
    for t in tokens[:n_coef]:
        _parse_float(reader, lineno, t, "a coefficient")
    last = 0
    for token in tokens[n_coef:]:
        index_text, sep, value_text = token.partition(":")
        if not sep:
            raise reader.error(lineno, f"expected index:value, got {token!r}")
        index = _parse_int(reader, lineno, index_text, "a feature index", 1)
        if index <= last:
            raise reader.error(lineno, f"feature indices must increase, got {index} after {last}")
        last = index
        _parse_float(reader, lineno, value_text, f"the value of feature {index}")
    raise reader.error(lineno, "malformed support vector")  # pragma: no cover


def _read_header(reader: _Reader) -> tuple[dict, dict, int]:
    """Header values, the line of each key, and the index of the ``SV`` line."""
    values: dict[str, list[str]] = {}
    where: dict[str, int] = {}
    for i, raw in enumerate(reader.lines):
        lineno = i + 1
        tokens = raw.split()
        if not tokens:
            continue
        key, rest = tokens[0], tokens[1:]
        if key == "SV":
            if rest:
                raise reader.error(lineno, "the 'SV' line must hold nothing else")
            return values, where, i
        if key not in _HEADER_KEYS:
            raise reader.error(
                lineno,
                f"unknown header key {key!r} (expected one of {', '.join(_HEADER_KEYS)} or 'SV')",
            )
        if key in values:
            raise reader.error(lineno, f"{key!r} appears twice (first on line {where[key]})")
        if not rest:
            raise reader.error(lineno, f"{key!r} has no value")
        values[key] = rest
        where[key] = lineno
    if not values:
        raise reader.error(0, "the file is empty or holds no LIBSVM model header")
    raise reader.error(0, "no 'SV' line: the header is not followed by support vectors")


@fill(example_setup=_EXAMPLE_SETUP)
def load_libsvm_model(path, n_features=None, precision="float64", sparse=False):
    """Read a LIBSVM model file into a fitted estimator of its type.

    The file may come from LIBSVM's ``svm-train`` / ``svm_save_model`` or
    from :func:`save_libsvm_model`. Every ``svm_type`` is read: ``c_svc``
    into an :class:`~localsvm.SVC`, ``nu_svc`` into a
    :class:`~localsvm.NuSVC`, ``epsilon_svr`` into an :class:`~localsvm.SVR`,
    ``nu_svr`` into a :class:`~localsvm.NuSVR` and ``one_class`` into a
    :class:`~localsvm.OneClassSVM`, with the kernels 'linear',
    'polynomial', 'rbf' and 'sigmoid'. ``probA``, ``probB`` and
    ``prob_density_marks`` lines are accepted and ignored (localsvm does
    not estimate probabilities).

    A classifier's ``classes_`` are the labels sorted; its predictions
    equal LIBSVM's with the same file, ties included: when one-vs-one votes
    tie, the label that comes first on the file's ``label`` line wins, as
    in LIBSVM's ``svm-predict`` (``svm-train`` writes the labels in their
    order of first appearance in the training data; a model fitted by
    localsvm gives ties to the smallest label). A regression predicts LIBSVM's values and
    a one-class model LIBSVM's labels (``offset_`` is the file's ``rho``).
    The file does not hold the training indices or the training
    parameters: ``support_`` is ``0 … n_SV − 1``, ``C``, ``nu`` and
    ``epsilon`` keep their defaults, and ``n_iter_``, ``dual_objective_``,
    ``backend_`` (and a ν-SVR's ``epsilon_``) are not set.

    Parameters
    ----------
    path : str or path-like
        The model file.
    n_features : int, default=None
        Number of features the model takes. None: at least the largest
        feature index in the file (its ``n_features_in_``), and wider rows
        are accepted, as LIBSVM's ``svm-predict`` accepts them: their extra
        features are zero in every support vector (see :class:`LibsvmSVC`).
        An int: exactly that many features, at least the largest index.
    precision : {'float64', 'auto', 'float32'}, default='float64'
        Arithmetic of the kernel values at prediction. 'float64', as LIBSVM
        computes them, gives LIBSVM's predictions; 'auto' and 'float32' are
        :class:`localsvm.SVC`'s faster float32 paths (see its ``precision``
        parameter), which may flip samples within about ``1e-6`` (relative)
        of a decision boundary.
    sparse : bool, default=False
        Keep the support vectors as a CSR matrix (LIBSVM's files are sparse
        by nature): right for many features, and the model then predicts on
        sparse rows natively, in float64 (dense ``X`` is converted).

    Returns
    -------
    SVC, NuSVC, SVR, NuSVR or OneClassSVM
        The fitted estimator (its open-width variant, such as
        :class:`LibsvmSVC`, when ``n_features`` is None).

    Raises
    ------
    ValueError
        If the file's kernel is not supported, or the file is malformed:
        the message names the line and what is wrong. Also when
        ``n_features`` is smaller than the largest index in the file.
    OSError
        If the file cannot be read.

    {example_setup}
    >>> path = os.path.join(tempfile.mkdtemp(), "iris.model")
    >>> save_libsvm_model(SVC(kernel="linear").fit(d.X, d.y), path)
    >>> clf = load_libsvm_model(path)
    >>> clf.kernel, clf.classes_.tolist()
    ('linear', [0, 1, 2])
    """
    open_width = n_features is None
    if n_features is not None and (
        isinstance(n_features, bool) or not isinstance(n_features, (int, np.integer))
    ):
        raise TypeError(f"n_features must be an int or None, got {n_features!r}")
    if n_features is not None and n_features < 1:
        raise ValueError(f"n_features must be at least 1, got {n_features}")
    if precision not in ("float64", "auto", "float32"):
        raise ValueError(f"precision must be 'float64', 'auto' or 'float32', got {precision!r}")
    reader = _Reader(path)
    header, where, sv_start = _read_header(reader)

    def single(key: str) -> str:
        if len(header[key]) != 1:
            raise reader.error(where[key], f"{key!r} takes one value, got {len(header[key])}")
        return header[key][0]

    if "svm_type" not in header:
        raise reader.error(sv_start + 1, "the header lacks 'svm_type'")
    svm_type = single("svm_type")
    if svm_type not in _ESTIMATORS:
        raise reader.error(
            where["svm_type"],
            f"svm_type {svm_type!r} is not supported (expected one of {', '.join(_ESTIMATORS)})",
        )
    classifier = svm_type in _CLASSIFIER_TYPES
    required = ("kernel_type", "nr_class", "total_sv", "rho")
    missing = [k for k in required + (("label", "nr_sv") if classifier else ()) if k not in header]
    if missing:
        raise reader.error(sv_start + 1, f"the header lacks {', '.join(repr(k) for k in missing)}")
    if not classifier:
        for key in ("label", "nr_sv"):
            if key in header:
                raise reader.error(
                    where[key], f"a {svm_type} model has no {key!r} line (LIBSVM writes none)"
                )
    kernel_type = single("kernel_type")
    if kernel_type not in _LIBSVM_TO_KERNEL:
        raise reader.error(
            where["kernel_type"],
            f"kernel_type {kernel_type!r} is not supported (expected one of "
            f"{', '.join(_LIBSVM_TO_KERNEL)})",
        )
    kernel = _LIBSVM_TO_KERNEL[kernel_type]
    degree, gamma, coef0 = 3, 1.0, 0.0
    if kernel == "poly":
        if "degree" not in header:
            raise reader.error(where["kernel_type"], "a polynomial kernel needs a 'degree' line")
        degree = _parse_int(reader, where["degree"], single("degree"), "degree", 0)
    if kernel != "linear":
        if "gamma" not in header:
            raise reader.error(where["kernel_type"], f"kernel_type {kernel_type} needs 'gamma'")
        gamma = _parse_float(reader, where["gamma"], single("gamma"), "gamma")
        if gamma <= 0:
            raise reader.error(where["gamma"], f"gamma must be positive, got {gamma!r}")
    if "coef0" in header:
        coef0 = _parse_float(reader, where["coef0"], single("coef0"), "coef0")
    n_classes = _parse_int(reader, where["nr_class"], single("nr_class"), "nr_class", 2)
    if not classifier and n_classes != 2:
        raise reader.error(
            where["nr_class"],
            f"nr_class must be 2 in a {svm_type} model (LIBSVM's value for regression "
            f"and one-class), got {n_classes}",
        )
    total_sv = _parse_int(
        reader, where["total_sv"], single("total_sv"), "total_sv", 1 if classifier else 0
    )
    n_pairs = n_classes * (n_classes - 1) // 2

    def row(key: str, count: int) -> list[str]:
        if len(header[key]) != count:
            raise reader.error(
                where[key],
                f"{key!r} needs {count} values for nr_class {n_classes}, got {len(header[key])}",
            )
        return header[key]

    rho = np.array([_parse_float(reader, where["rho"], t, "rho") for t in row("rho", n_pairs)])
    if classifier:
        labels = [
            _parse_int(reader, where["label"], t, "a label", -(2**63))
            for t in row("label", n_classes)
        ]
        if len(set(labels)) != n_classes:
            raise reader.error(where["label"], f"the labels must be distinct, got {labels}")
        nr_sv = np.array(
            [_parse_int(reader, where["nr_sv"], t, "nr_sv", 0) for t in row("nr_sv", n_classes)],
            dtype=np.int64,
        )
        if int(nr_sv.sum()) != total_sv:
            raise reader.error(
                where["nr_sv"], f"nr_sv sums to {int(nr_sv.sum())} but total_sv is {total_sv}"
            )

    # Support vectors: each line's text is checked as a whole (fast path);
    # a line that fails is parsed token by token for the message.
    n_coef = n_classes - 1
    coef = np.empty((n_coef, total_sv))
    flat_idx: list[int] = []
    flat_val: list[float] = []
    row_start = [0]
    sv_lines: list[int] = []
    for i in range(sv_start + 1, len(reader.lines)):
        lineno = i + 1
        tokens = reader.lines[i].split()
        if not tokens:
            continue
        k = len(sv_lines)
        if k == total_sv:
            raise reader.error(lineno, f"more support vectors than total_sv ({total_sv})")
        if len(tokens) < n_coef or any(":" in t for t in tokens[:n_coef]):
            raise reader.error(
                lineno,
                f"a support vector needs {n_coef} coefficients before its index:value pairs",
            )
        try:
            coef[:, k] = [float(t) for t in tokens[:n_coef]]
            split = [t.split(":") for t in tokens[n_coef:]]
            flat_idx.extend(int(ix) for ix, _ in split)
            flat_val.extend(float(v) for _, v in split)
        except ValueError:
            _explain_line(reader, lineno, tokens, n_coef)
        if not np.all(np.isfinite(coef[:, k])):
            _explain_line(reader, lineno, tokens, n_coef)
        row_start.append(len(flat_idx))
        sv_lines.append(lineno)
    if len(sv_lines) < total_sv:
        raise reader.error(
            0, f"total_sv is {total_sv} but the file holds {len(sv_lines)} support vectors"
        )
    idx = np.array(flat_idx, dtype=np.int64)
    val = np.array(flat_val, dtype=np.float64)
    starts = np.array(row_start, dtype=np.intp)
    row_of = np.repeat(np.arange(total_sv), np.diff(starts))
    bad = (idx < 1) | ~np.isfinite(val)
    if idx.size > 1:
        not_first = np.ones(idx.size, dtype=bool)
        not_first[starts[:-1][starts[:-1] < idx.size]] = False
        bad[1:] |= not_first[1:] & (idx[1:] <= idx[:-1])
    if np.any(bad):
        r = int(row_of[np.argmax(bad)])
        lineno = sv_lines[r]
        _explain_line(reader, lineno, reader.lines[lineno - 1].split(), n_coef)
    max_index = int(idx.max()) if idx.size else 0
    if n_features is None:
        n_features = max(max_index, 1)
    elif n_features < max_index:
        raise ValueError(
            f"n_features={n_features} is smaller than the largest feature index in "
            f"{reader.path} ({max_index})"
        )
    if sparse:
        sv = sp.csr_matrix((val, (row_of, idx - 1)), shape=(total_sv, n_features))
        sv.sum_duplicates()
    else:
        sv = np.zeros((total_sv, n_features))
        sv[row_of, idx - 1] = val

    params = {"kernel": kernel, "degree": degree, "coef0": coef0, "precision": precision}
    if kernel != "linear":
        params["gamma"] = gamma
    model = _ESTIMATORS[svm_type][1 if open_width else 0](**params)
    if open_width:
        model._open_width = True
    model.n_features_in_ = n_features
    model._spec = KernelSpec(kernel, gamma=gamma, coef0=coef0, degree=degree)
    model.shape_fit_ = (total_sv, n_features)
    model.precision_ = "float64" if precision == "float64" else "float32"
    model.fit_status_ = 0
    if not classifier:
        return _single_dual_model(model, sv, coef, float(rho[0]), sparse)

    # LIBSVM's label order -> sorted classes: regroup the support vectors and
    # turn each pair around where the order flips (d_ji = −d_ij).
    labels_arr = np.array(labels, dtype=np.int64)
    order = np.argsort(labels_arr, kind="stable")
    rank = np.empty(n_classes, dtype=np.intp)
    rank[order] = np.arange(n_classes)
    sv_class_file = np.repeat(np.arange(n_classes), nr_sv)
    pair_index = {pair: p for p, pair in enumerate(ovo_pairs(n_classes))}
    model_coef = np.zeros((n_pairs, total_sv))
    model_intercept = np.zeros(n_pairs)
    for (i, j), (rows, c), r in zip(
        ovo_pairs(n_classes), libsvm_to_ovo(coef, nr_sv), rho, strict=True
    ):
        a, b = rank[i], rank[j]
        sign = 1.0 if a < b else -1.0
        p = pair_index[(min(a, b), max(a, b))]
        model_coef[p, rows] = sign * c
        model_intercept[p] = -sign * r
    sv_class = rank[sv_class_file]
    regroup = np.lexsort((np.arange(total_sv), sv_class))
    model_coef = model_coef[:, regroup]
    sv = sp.csr_matrix(sv[regroup]) if sparse else np.ascontiguousarray(sv[regroup])
    sv_class = sv_class[regroup]

    model.classes_ = labels_arr[order]
    # LIBSVM gives a tie of votes to the first label of the file's line.
    model._vote_order = rank.copy()
    model.support_vectors_ = sv
    model.support_ = np.arange(total_sv, dtype=np.int32)
    model.n_support_ = np.bincount(sv_class, minlength=n_classes).astype(np.int32)
    model._model_coef = model_coef
    model._model_intercept = model_intercept
    model._linear_w = None
    if kernel == "linear":
        model._linear_w = np.asarray((sv.T @ model_coef.T).T) if sparse else model_coef @ sv
    model.class_weight_ = np.ones(n_classes)
    model.dual_coef_, model.intercept_ = public_layout(
        model_coef, model_intercept, sv_class, n_classes, "ovo"
    )
    model._pair_coef = model._compact_pair_coef()
    return model


def _single_dual_model(model, sv, coef: np.ndarray, rho: float, sparse: bool):
    """The fitted attributes of a regression or one-class model read from a
    file: its support vectors, one coefficient row and ``rho``."""
    n_sv = sv.shape[0]
    dual = np.ascontiguousarray(coef.reshape(1, n_sv))
    model.support_vectors_ = sp.csr_matrix(sv) if sparse else np.ascontiguousarray(sv)
    model.support_ = np.arange(n_sv, dtype=np.int32)
    model.n_support_ = np.array([n_sv], dtype=np.int32)
    model._dual_dense = dual
    model.dual_coef_ = sp.csr_matrix(dual) if sparse else dual
    model._rho = rho
    model.intercept_ = np.array([-rho])
    model._linear_w = None
    if model.kernel == "linear":
        model._linear_w = (
            np.asarray((sv.T @ dual.T).T) if sparse else dual @ model.support_vectors_
        ).reshape(1, -1)
    if isinstance(model, OneClassSVM):
        model.offset_ = rho
    return model
