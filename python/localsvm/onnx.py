"""ONNX export of localsvm's kernel machines through ``skl2onnx``.

:func:`to_onnx` converts a fitted :class:`~localsvm.SVC` or
:class:`~localsvm.NuSVC` into an ONNX model whose graph is ONNX-ML's
``SVMClassifier`` operator holding the model's support vectors,
coefficients, intercepts and kernel parameters, followed by a few standard
operators that turn the one-vs-one decision values into one score per
class; a fitted :class:`~localsvm.SVR`, :class:`~localsvm.NuSVR` or
:class:`~localsvm.OneClassSVM` into ONNX-ML's ``SVMRegressor`` operator.
:func:`register` makes ``skl2onnx.to_onnx`` (and pipelines that contain
these estimators) use the same converters. Both need the optional packages
``skl2onnx`` and ``onnx`` (``pip install localsvm[onnx]``, which also brings
``onnxruntime`` to run the result).

A regression model has one output, ``variable`` of shape ``(n, 1)``: the
predictions. A one-class model has two, ``label`` (``(n, 1)``, int64: +1 for
an inlier, −1 for an outlier, as ``OneClassSVM.predict``, a decision value
of 0 included) and ``scores`` (``(n, 1)``: ``decision_function``), named and
shaped as skl2onnx writes those of scikit-learn's estimators (whose
one-class export labels a decision value of exactly 0 with 0).

A classifier's ONNX model has two outputs, named as skl2onnx names those of
scikit-learn's ``SVC`` without probability estimates, so that code written
for that export runs unchanged: ``label`` (the predicted class, by the
rules of ``SVC.predict``: the one-vs-one vote, whose ties go to the first
label of the file's ``label`` line for a model read by
:func:`~localsvm.load_libsvm_model`, or the largest score with
``break_ties=True``) and ``probabilities`` (``output_label`` and
``output_probability`` behind skl2onnx's ZipMap), which, as there, holds
decision scores, not probabilities. For more than two classes they are
skl2onnx's: the one-vs-rest shaped scores of ``decision_function`` with
``decision_function_shape='ovr'``. For two classes they are ``[−d, d]``
with ``d`` the ``SVC``'s ``decision_function``, so the larger column is the
predicted class; skl2onnx writes ``[d, −d]`` for scikit-learn's ``SVC``,
which ranks the predicted class lower (reported as onnx/sklearn-onnx#990).
ONNX-ML's operator stores its coefficients in single precision, so a
sample whose decision value is within about ``1e-6`` (relative) of zero may
get the other label.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ._validation import densify
from .model_io import _integer_labels, _layout

__all__ = ["register", "to_onnx"]

_ONNX_KERNELS = {"linear": "LINEAR", "poly": "POLY", "rbf": "RBF", "sigmoid": "SIGMOID"}
#: What the export writes, for the refusal of a model it cannot hold.
_TARGET = "ONNX-ML's SVMClassifier"
_TARGET_SINGLE = "ONNX-ML's SVMRegressor"
_registered = False


def _import_skl2onnx():
    try:
        import skl2onnx
    except ImportError as exc:  # pragma: no cover - exercised without the extra
        raise ImportError(
            "ONNX export needs the optional packages skl2onnx and onnx: "
            "pip install 'localsvm[onnx]'"
        ) from exc
    return skl2onnx


def _shape_calculator(operator) -> None:
    from skl2onnx.common.data_types import (
        DoubleTensorType,
        FloatTensorType,
        Int64TensorType,
        StringTensorType,
    )

    model = operator.raw_operator
    n = operator.inputs[0].get_first_dimension()
    n_classes = len(model.classes_)
    numeric = model.classes_.dtype.kind in "iubf"
    operator.outputs[0].type = Int64TensorType([n]) if numeric else StringTensorType([n])
    score_type = (
        DoubleTensorType
        if isinstance(operator.inputs[0].type, DoubleTensorType)
        else FloatTensorType
    )
    operator.outputs[1].type = score_type([n, n_classes])


def _dense_support(sv) -> np.ndarray:
    """The support vectors as a dense array (ONNX holds them dense): a CSR
    matrix from a sparse fit is densified under the limit of
    :func:`localsvm._validation.densify`, else ``MemoryError``."""
    if sp.issparse(sv):
        return densify(sp.csr_matrix(sv), "support_vectors_", "the ONNX export")
    return np.asarray(sv)


def _converter(scope, operator, container) -> None:
    from skl2onnx.common.data_types import DoubleTensorType
    from skl2onnx.proto import onnx_proto

    model = operator.raw_operator
    layout = _layout(model, "to_onnx", _TARGET)
    spec = model.kernel_spec_
    classes = model.classes_
    n_classes = len(classes)
    attrs = {
        "kernel_type": _ONNX_KERNELS[spec.name],
        "kernel_params": [float(spec.gamma), float(spec.coef0), float(spec.degree)],
        "support_vectors": _dense_support(layout["support_vectors"]).ravel().astype(np.float32),
        "vectors_per_class": [int(v) for v in layout["n_support"]],
        "coefficients": layout["coef"].ravel().astype(np.float32),
        # ONNX-ML adds rho where LIBSVM subtracts it.
        "rho": (-layout["rho"]).astype(np.float32),
        "post_transform": "NONE",
    }
    if classes.dtype.kind in "iubf":
        # Whole-number float labels (as from svmlight files) become int64.
        attrs["classlabels_ints"] = _integer_labels(classes)
    elif all(isinstance(c, str) for c in classes.tolist()):
        attrs["classlabels_strings"] = [str(c) for c in classes]
    else:
        raise ValueError(
            f"ONNX export needs integer or string class labels, got {classes.tolist()!r}"
        )
    double = isinstance(operator.inputs[0].type, DoubleTensorType)
    dtype = onnx_proto.TensorProto.DOUBLE if double else onnx_proto.TensorProto.FLOAT
    np_dtype = np.float64 if double else np.float32

    def name(stem: str) -> str:
        return scope.get_unique_variable_name(stem)

    def const(stem: str, value) -> str:
        value = np.asarray(value, dtype=np_dtype)
        var = name(stem)
        container.add_initializer(var, dtype, list(value.shape), value.ravel().tolist())
        return var

    def node(op_type: str, inputs: list[str], stem: str, **kwargs) -> str:
        out = name(stem)
        container.add_node(
            op_type, inputs, out, name=scope.get_unique_operator_name(op_type), **kwargs
        )
        return out

    raw = name("svm_scores")
    # The operator's label is LIBSVM's vote (break_ties=False); with
    # break_ties the label is the largest score instead (written below).
    by_scores = bool(getattr(model, "break_ties", False)) and n_classes > 2
    # A model read from a LIBSVM file gives a tie of votes to the first
    # class of the file's label line (LIBSVM's rule), not to the lowest
    # index as the operator does: its label is the vote written below.
    order = getattr(model, "_vote_order", None)
    by_order = (
        not by_scores
        and n_classes > 2
        and order is not None
        and not np.array_equal(order, np.arange(n_classes))
    )
    label = name("vote_label") if by_scores or by_order else operator.outputs[0].full_name
    container.add_node(
        "SVMClassifier",
        operator.inputs[0].full_name,
        [label, raw],
        op_domain="ai.onnx.ml",
        op_version=1,
        name=scope.get_unique_operator_name("SVMClassifier"),
        **attrs,
    )
    raw = node("Cast", [raw], "svm_scores_cast", to=dtype)
    pairs = [(a, b) for a in range(n_classes) for b in range(a + 1, n_classes)]
    if n_classes == 2:
        # onnxruntime writes the pair's value v (LIBSVM's: positive for
        # classes_[0]) as the columns [−v, v]; the scores are [v, −v], i.e.
        # [−d, d] with d = SVC.decision_function, positive for classes_[1].
        value = node(
            "Slice",
            [
                raw,
                _int_const(container, scope, [1]),
                _int_const(container, scope, [2]),
                _int_const(container, scope, [1]),
            ],
            "pair_value",
        )
        scores = node("Concat", [value, node("Neg", [value], "neg")], "scores", axis=1)
    else:
        # Votes plus squashed confidences, as SVC.decision_function ('ovr').
        win = np.zeros((len(pairs), n_classes))
        lose = np.zeros((len(pairs), n_classes))
        for k, (a, b) in enumerate(pairs):
            win[k, a] = 1.0
            lose[k, b] = 1.0
        # A pair votes for b where its value is < 0, else for a: the rule of
        # the 'ovr' shaped decision values (localsvm._multiclass.ovo_to_ovr).
        negative = node(
            "Cast", [node("Less", [raw, const("zero", 0.0)], "losses")], "losses_f", to=dtype
        )
        positive = node("Sub", [const("one", 1.0), negative], "wins")
        votes = node(
            "Add",
            [
                node("MatMul", [positive, const("win", win)], "votes_a"),
                node("MatMul", [negative, const("lose", lose)], "votes_b"),
            ],
            "votes",
        )
        conf = node("MatMul", [raw, const("sign", win - lose)], "confidence")
        squash = node(
            "Div",
            [
                conf,
                node(
                    "Mul",
                    [
                        const("three", 3.0),
                        node("Add", [node("Abs", [conf], "abs"), const("one_b", 1.0)], "abs1"),
                    ],
                    "denominator",
                ),
            ],
            "squashed",
        )
        scores = node("Add", [votes, squash], "scores")
    container.add_node(
        "Identity",
        [scores],
        [operator.outputs[1].full_name],
        name=scope.get_unique_operator_name("Identity"),
    )
    if by_scores or by_order:
        if by_scores:
            # ArgMax takes the first of equal scores: the lowest class index,
            # as localsvm._multiclass.predict_index.
            best = node("ArgMax", [scores], "best", axis=1, keepdims=0)
        else:
            # The votes in the label line's order: ArgMax takes the first of
            # equal votes, as localsvm._multiclass.vote_winner.
            ranks = _int_const(container, scope, [int(c) for c in order])
            ranked = node("Gather", [votes, ranks], "ranked_votes", axis=1)
            first = node("ArgMax", [ranked], "first_best", axis=1, keepdims=0)
            best = node("Gather", [ranks, first], "best", axis=0)
        if "classlabels_ints" in attrs:
            labels = _int_const(container, scope, attrs["classlabels_ints"])
        else:
            labels = scope.get_unique_variable_name("labels")
            container.add_initializer(
                labels,
                onnx_proto.TensorProto.STRING,
                [n_classes],
                [c.encode() for c in attrs["classlabels_strings"]],
            )
        container.add_node(
            "Gather",
            [labels, best],
            [operator.outputs[0].full_name],
            name=scope.get_unique_operator_name("Gather"),
            axis=0,
        )


def _single_shape_calculator(operator) -> None:
    from skl2onnx.common.data_types import DoubleTensorType, FloatTensorType, Int64TensorType

    n = operator.inputs[0].get_first_dimension()
    score_type = (
        DoubleTensorType
        if isinstance(operator.inputs[0].type, DoubleTensorType)
        else FloatTensorType
    )
    if len(operator.outputs) == 2:  # one-class: label and scores
        operator.outputs[0].type = Int64TensorType([n, 1])
        operator.outputs[1].type = score_type([n, 1])
    else:
        operator.outputs[0].type = score_type([n, 1])


def _single_converter(scope, operator, container) -> None:
    """ONNX-ML's ``SVMRegressor`` with ``Σ coef·K(sv, x) + intercept``: a
    regression's prediction, a one-class model's decision value."""
    from skl2onnx.common.data_types import DoubleTensorType
    from skl2onnx.proto import onnx_proto

    model = operator.raw_operator
    layout = _layout(model, "to_onnx", _TARGET_SINGLE)
    spec = model.kernel_spec_
    n_sv = int(layout["coef"].shape[1])
    attrs = {
        "kernel_type": _ONNX_KERNELS[spec.name],
        "kernel_params": [float(spec.gamma), float(spec.coef0), float(spec.degree)],
        # ONNX-ML adds rho where LIBSVM subtracts it.
        "rho": (-layout["rho"]).astype(np.float32),
        "post_transform": "NONE",
        "one_class": 0,
    }
    if n_sv:
        attrs["n_supports"] = n_sv
        attrs["support_vectors"] = (
            _dense_support(layout["support_vectors"]).ravel().astype(np.float32)
        )
        attrs["coefficients"] = layout["coef"].ravel().astype(np.float32)
    else:
        # No support vector: the operator's linear form with zero weights,
        # the constant intercept.
        attrs["n_supports"] = 0
        attrs["coefficients"] = np.zeros(int(model.n_features_in_), dtype=np.float32)
    double = isinstance(operator.inputs[0].type, DoubleTensorType)
    dtype = onnx_proto.TensorProto.DOUBLE if double else onnx_proto.TensorProto.FLOAT
    source = operator.inputs[0].full_name
    if double:
        # onnxruntime's SVMRegressor takes float32 input only (its
        # parameters are float32 in any case).
        source_f = scope.get_unique_variable_name("input_float")
        container.add_node(
            "Cast",
            [source],
            [source_f],
            name=scope.get_unique_operator_name("Cast"),
            to=onnx_proto.TensorProto.FLOAT,
        )
        source = source_f
    raw = scope.get_unique_variable_name("svm_value")
    container.add_node(
        "SVMRegressor",
        source,
        raw,
        op_domain="ai.onnx.ml",
        op_version=1,
        name=scope.get_unique_operator_name("SVMRegressor"),
        **attrs,
    )
    scores = operator.outputs[-1].full_name
    container.add_node(
        "Cast", [raw], [scores], name=scope.get_unique_operator_name("Cast"), to=dtype
    )
    if len(operator.outputs) == 2:
        # +1 where the decision value is > 0, else −1 (LIBSVM's rule).
        zero = scope.get_unique_variable_name("zero")
        container.add_initializer(zero, dtype, [], [0.0])
        inside = scope.get_unique_variable_name("inside")
        container.add_node(
            "Greater", [scores, zero], [inside], name=scope.get_unique_operator_name("Greater")
        )
        container.add_node(
            "Where",
            [inside, _int_const(container, scope, [1]), _int_const(container, scope, [-1])],
            [operator.outputs[0].full_name],
            name=scope.get_unique_operator_name("Where"),
        )


def _int_const(container, scope, values) -> str:
    from skl2onnx.proto import onnx_proto

    var = scope.get_unique_variable_name("index")
    container.add_initializer(var, onnx_proto.TensorProto.INT64, [len(values)], list(values))
    return var


def register() -> None:
    """Register the converters of localsvm's kernel machines with ``skl2onnx``.

    After this call ``skl2onnx.to_onnx`` and ``skl2onnx.convert_sklearn``
    convert :class:`localsvm.SVC`, :class:`localsvm.NuSVC`,
    :class:`localsvm.SVR`, :class:`localsvm.NuSVR` and
    :class:`localsvm.OneClassSVM` (and the models
    :func:`localsvm.load_libsvm_model` returns), alone or inside a
    scikit-learn pipeline. :func:`to_onnx` calls it; calling it again does
    nothing.

    Raises
    ------
    ImportError
        If ``skl2onnx`` is not installed.

    Examples
    --------
    >>> import pytest
    >>> _ = pytest.importorskip("skl2onnx")
    >>> from localsvm.onnx import register
    >>> register()
    """
    global _registered
    if _registered:
        return
    skl2onnx = _import_skl2onnx()
    from . import model_io

    # skl2onnx finds a converter by the model's exact class.
    for classifier, cls in [(True, model_io.SVC), (True, model_io.NuSVC)] + [
        (name in model_io._CLASSIFIER_TYPES, variant)
        for name, pair in model_io._ESTIMATORS.items()
        for variant in pair
    ]:
        if classifier:
            skl2onnx.update_registered_converter(
                cls,
                f"Localsvm{cls.__name__}",
                _shape_calculator,
                _converter,
                options={"zipmap": [True, False, "columns"], "nocl": [True, False]},
            )
        else:
            skl2onnx.update_registered_converter(
                cls, f"Localsvm{cls.__name__}", _single_shape_calculator, _single_converter
            )
    _registered = True


def to_onnx(model, X_sample=None, *, n_features=None, double=False, target_opset=None):
    """Convert a fitted localsvm kernel machine to an ONNX model.

    Parameters
    ----------
    model : SVC, NuSVC, SVR, NuSVR or OneClassSVM
        A fitted estimator on a kernel 'linear', 'poly', 'rbf' or
        'sigmoid'; a classifier with two classes or ``multiclass='ovo'``
        and integer or string class labels (whole-number float labels are
        output as int64).
    X_sample : array-like of shape (n_samples, n_features), default=None
        Example input; only its number of columns is used. None: the
        model's ``n_features_in_``.
    n_features : int, default=None
        Number of input columns, instead of ``X_sample``.
    double : bool, default=False
        Take float64 input (the operator's parameters stay float32);
        float32 otherwise.
    target_opset : int or dict, default=None
        Passed to ``skl2onnx.to_onnx`` (None: its default).

    Returns
    -------
    onnx.ModelProto
        The model, with input ``X`` and the outputs skl2onnx gives
        scikit-learn's estimator of the same kind: a classifier's ``label``
        and ``probabilities`` (decision scores, one column per class, not
        probabilities), a regression's ``variable``, a one-class model's
        ``label`` and ``scores`` (see the module's description).

    Raises
    ------
    ImportError
        If ``skl2onnx`` is not installed.
    TypeError
        If ``model`` is none of these estimators.
    ValueError
        If the model cannot be expressed (precomputed kernel, one-vs-rest
        with more than two classes, other class labels), or ``X_sample``
        does not have the model's number of features.

    Examples
    --------
    >>> import pytest
    >>> _ = pytest.importorskip("skl2onnx")
    >>> from localsvm import SVC
    >>> from localsvm.datasets import load_iris
    >>> from localsvm.onnx import to_onnx
    >>> d = load_iris()
    >>> onx = to_onnx(SVC().fit(d.X, d.y))
    >>> [o.name for o in onx.graph.output]
    ['label', 'probabilities']
    """
    skl2onnx = _import_skl2onnx()
    from skl2onnx.common.data_types import DoubleTensorType, FloatTensorType

    # Refuses what the operators cannot hold, clearly.
    layout = _layout(model, "to_onnx", _TARGET)
    classifier = layout["labels"] is not None
    width = int(model.n_features_in_)
    if X_sample is not None:
        X_sample = np.asarray(X_sample)
        if X_sample.ndim != 2:
            raise ValueError(f"X_sample must be 2-D, got shape {X_sample.shape}")
        n_features = X_sample.shape[1]
    if n_features is not None and n_features != width:
        raise ValueError(f"the input has {n_features} features but the model takes {width}")
    register()
    tensor = DoubleTensorType if double else FloatTensorType
    return skl2onnx.to_onnx(
        model,
        initial_types=[("X", tensor([None, width]))],
        options={id(model): {"zipmap": False}} if classifier else None,
        target_opset=target_opset,
    )
