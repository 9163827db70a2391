"""Multiclass classifiers from binary SVMs: the one place that decides how
binary models become fitted attributes, decision values and predictions.

Every estimator built from binary problems (:class:`localsvm.SVC`,
:class:`localsvm.IncrementalSVC`, :class:`localsvm.LocalSVC`,
:class:`localsvm.FLSAClassifier`, the region models of
:class:`localsvm.CellSVC` and :class:`localsvm.ProfileSVC`) goes through
these functions, so they break ties alike.

**The binary problems.** One-vs-one: one per class pair ``(a, b)``, ``a < b``,
in LIBSVM's order (:func:`ovo_pairs`), trained with class ``a`` as ``+1``;
two classes are the single pair ``(0, 1)``. One-vs-rest: one per class ``c``,
``c`` as ``+1``. A binary model's *value* is ``Σ y_i α_i K(x_i, x) + b``,
positive for its ``+1`` side; ``dec`` below is the ``(n_samples, n_models)``
matrix of them.

**The rules** are scikit-learn's ``SVC`` (Chang & Lin, "LIBSVM: a library
for support vector machines", ACM TIST 2(3), 2011, section 7; Hsu & Lin,
"A comparison of methods for multiclass support vector machines", IEEE
Transactions on Neural Networks 13(2), 2002):

- one-vs-one prediction (:func:`vote_winner`): pair ``(a, b)`` votes for
  ``a`` when its value is ``> 0`` and for ``b`` otherwise (a value of exactly
  zero, ``+0.0`` or ``−0.0``, votes for ``b``); the class with the most votes
  wins, a tie going to the lowest class index. Two classes: the public
  decision value is ``d = −value`` (positive for ``classes_[1]``), and
  ``classes_[1]`` is predicted unless ``d < 0`` (:func:`binary_index`);
- the one-vs-rest shaped score of one-vs-one models (:func:`ovo_to_ovr`,
  ``decision_function_shape='ovr'``): votes plus the sum of each class's
  pairwise confidences squashed into ``(−1/3, 1/3)``. As in scikit-learn,
  a pair votes for ``b`` here only when its value is ``< 0``, so a value of
  exactly zero counts for ``a`` (the opposite of the prediction's vote);
- ``break_ties=True``: the class with the largest one-vs-rest shaped score
  (lowest index among equal scores);
- one-vs-rest models: the class with the largest value, lowest index among
  equal values.

Models with abstaining pairs (:class:`localsvm.LocalSVC`'s neighbourhoods
without training examples) pass an ``abstain`` mask: those pairs cast no vote
and add no confidence.

The module also holds the attributes' layouts: :func:`assemble` turns the
binary models into the support vectors and coefficients over them, and
:func:`ovo_to_libsvm` / :func:`libsvm_to_ovo` convert to and from LIBSVM's
``dual_coef_`` layout.

>>> import numpy as np
>>> ovo_pairs(3)
[(0, 1), (0, 2), (1, 2)]
>>> dec = np.zeros((1, 3))  # every pair exactly undecided
>>> int(predict_index(dec, 3, "ovo")[0])  # votes (0, 1, 2): class 2
2
>>> int(predict_index(dec, 3, "ovo", break_ties=True)[0])  # scores (2, 1, 0)
0
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from sklearn.utils.validation import check_is_fitted


def ovo_pairs(n_classes: int) -> list[tuple[int, int]]:
    """Class pairs ``(a, b)``, ``a < b``, in LIBSVM's order."""
    return [(a, b) for a in range(n_classes) for b in range(a + 1, n_classes)]


def problem_classes(n_classes: int, multiclass: str) -> list[tuple[int, int]]:
    """The classes of each binary problem, in model order: ``(a, b)`` for a
    one-vs-one pair (two classes are always the pair ``(0, 1)``), ``(c, -1)``
    for class ``c`` against the rest."""
    if n_classes == 2 or multiclass == "ovo":
        return ovo_pairs(n_classes)
    return [(c, -1) for c in range(n_classes)]


def binary_tasks(
    y_idx: np.ndarray, problems: list[tuple[int, int]]
) -> list[tuple[np.ndarray, np.ndarray]]:
    """The rows of ``y_idx`` (class indices) each binary problem of
    ``problems`` (:func:`problem_classes`) trains on, and their ``±1``
    labels (``+1`` for the problem's first class)."""
    if problems and all(b >= 0 for _, b in problems):
        return _pair_tasks(y_idx, problems)
    tasks = []
    # Each class's rows once (ascending), not one pass over y per pair: a
    # pair's rows are the sorted union of its two classes'.
    by_class: dict[int, np.ndarray] = {}

    def members(c: int) -> np.ndarray:
        if c not in by_class:
            by_class[c] = np.flatnonzero(y_idx == c)
        return by_class[c]

    for a, b in problems:
        if b < 0:
            rows = np.arange(y_idx.shape[0])
        else:
            rows = np.sort(np.concatenate((members(a), members(b))))
        tasks.append((rows, np.where(y_idx[rows] == a, 1.0, -1.0)))
    return tasks


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``concatenate([arange(s, s + m) for s, m in zip(starts, lengths)])``
    in a few array operations."""
    lengths = np.asarray(lengths, dtype=np.intp)
    total = int(lengths.sum())
    ends = np.cumsum(lengths)
    offset = np.repeat(np.asarray(starts, dtype=np.intp) - (ends - lengths), lengths)
    return np.arange(total, dtype=np.intp) + offset


def _pair_tasks(
    y_idx: np.ndarray, problems: list[tuple[int, int]]
) -> list[tuple[np.ndarray, np.ndarray]]:
    """:func:`binary_tasks` of class pairs only, every pair at once: each
    pair's two classes' rows (grouped by class, ascending within a class)
    with their labels, ordered by row within each pair by one stable sort
    of ``pair · n + row``; hundreds of one-vs-one pairs then cost a few array
    operations, not a few each."""
    y_idx = np.asarray(y_idx)
    n = y_idx.shape[0]
    if len(problems) == 1:
        # One pair (two classes): its rows in order, no sort.
        a, b = problems[0]
        rows = np.flatnonzero((y_idx == a) | (y_idx == b))
        return [(rows, np.where(y_idx[rows] == a, 1.0, -1.0))]
    by_class = np.argsort(y_idx, kind="stable")
    n_classes = int(max(max(a, b) for a, b in problems)) + 1
    counts = np.bincount(y_idx[by_class], minlength=n_classes) if n else np.zeros(n_classes, int)
    first = np.concatenate(([0], np.cumsum(counts)[:-1]))
    seg_class = np.array(problems, dtype=np.intp).reshape(-1)  # a0, b0, a1, b1, …
    seg_len = counts[seg_class]
    seg_pair = np.repeat(np.arange(len(problems), dtype=np.int64), 2)
    rows = by_class[_ranges(first[seg_class], seg_len)]
    labels = np.repeat(np.tile([1.0, -1.0], len(problems)), seg_len)
    order = np.argsort(np.repeat(seg_pair, seg_len) * max(n, 1) + rows, kind="stable")
    rows, labels = rows[order], labels[order]
    ends = np.cumsum(seg_len.reshape(-1, 2).sum(axis=1))[:-1]
    return list(zip(np.split(rows, ends), np.split(labels, ends), strict=True))


# ------------------------------------------------------------------ fitting


class BinaryModels(NamedTuple):
    """Binary models over their common support vectors (:func:`assemble`).

    ``support``: the support vectors' example ids, grouped by class in
    class order, ascending ids within a class (LIBSVM's order);
    ``sv_class``: their class indices; ``n_support``: how many per class;
    ``source``: per support vector, ``(model, position)`` of one occurrence
    in the inputs (to fetch its features where the caller keeps them per
    model); ``coef``: ``(n_models, n_SV)`` coefficients ``y_i α_i`` (zero
    where a model does not use the vector); ``intercept``: each model's
    ``b``; ``dual_coef`` and ``public_intercept``: the public
    ``dual_coef_`` and ``intercept_`` (:func:`public_layout`).
    """

    support: np.ndarray
    sv_class: np.ndarray
    n_support: np.ndarray
    source: np.ndarray
    coef: np.ndarray
    intercept: np.ndarray
    dual_coef: np.ndarray
    public_intercept: np.ndarray


def assemble(
    ids: list[np.ndarray],
    coefs: list[np.ndarray],
    intercepts,
    classes: list[np.ndarray],
    n_classes: int,
    multiclass: str,
) -> BinaryModels:
    """Binary models, each given as its support vectors' example ids
    (``ids[k]``, no repeats within a model), their coefficients ``y_i α_i``
    (``coefs[k]``) and class indices (``classes[k]``), and its intercept
    ``b`` (``intercepts[k]``, value ``Σ coef K + b``), as
    :class:`BinaryModels`: one coefficient matrix over the union of their
    support vectors (never ``n_models × n_samples``)."""
    return assemble_joined(
        np.concatenate([np.asarray(i, dtype=np.int64) for i in ids] or [np.zeros(0)]),
        np.concatenate([np.asarray(c, dtype=np.float64) for c in coefs] or [np.zeros(0)]),
        intercepts,
        np.concatenate([np.asarray(c, dtype=np.intp) for c in classes] or [np.zeros(0)]),
        np.array([len(i) for i in ids], dtype=np.intp),
        n_classes,
        multiclass,
    )


def assemble_joined(
    all_ids: np.ndarray,
    all_coefs: np.ndarray,
    intercepts,
    all_cls: np.ndarray,
    counts: np.ndarray,
    n_classes: int,
    multiclass: str,
) -> BinaryModels:
    """:func:`assemble` of the models' arrays joined: the ids, coefficients
    and class indices of model 0, then of model 1, and so on, ``counts[k]``
    of model ``k`` (hundreds of one-vs-one models are then a few array
    operations, not a few each)."""
    n_models = counts.size
    all_ids = all_ids.astype(np.int64)
    all_cls = all_cls.astype(np.intp)
    model = np.repeat(np.arange(n_models), counts)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.intp)
    position = np.arange(all_ids.size) - np.repeat(starts, counts)
    uniq, first, slot = _distinct(all_ids)
    order = np.lexsort((uniq, all_cls[first]))
    support = uniq[order]
    sv_class = all_cls[first[order]]
    rank = np.empty(uniq.size, dtype=np.intp)
    rank[order] = np.arange(uniq.size)
    coef = np.zeros((n_models, support.size))
    column = rank[slot]
    if all_ids.size:
        coef[model, column] = all_coefs.astype(np.float64)
    # + 0.0: an intercept of −0.0 (−rho with rho = 0) reads 0.0, as
    # scikit-learn's; the votes treat both alike.
    intercept = np.asarray(intercepts, dtype=np.float64).reshape(n_models) + 0.0
    dual_coef, public_intercept = public_layout(coef, intercept, sv_class, n_classes, multiclass)
    return BinaryModels(
        support=support,
        sv_class=sv_class,
        n_support=np.bincount(sv_class, minlength=n_classes).astype(np.int32),
        source=np.column_stack([model[first[order]], position[first[order]]]).astype(np.intp),
        coef=coef,
        intercept=intercept,
        dual_coef=dual_coef,
        public_intercept=public_intercept,
    )


def _distinct(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``np.unique(ids, return_index=True, return_inverse=True)`` of the
    non-negative ``ids``: the distinct ids ascending, each one's first
    position in ``ids``, and each entry's index among the distinct ids.
    Where the ids are at most a few times more than their count (example
    ids), by a table indexed by id, in linear time; else by sorting."""
    if ids.size == 0 or int(ids.max()) >= 4 * ids.size + 1024:
        uniq, first, slot = np.unique(ids, return_index=True, return_inverse=True)
        return uniq, first, slot.reshape(-1)
    size = int(ids.max()) + 1
    first_at = np.full(size, ids.size, dtype=np.intp)
    np.minimum.at(first_at, ids, np.arange(ids.size))
    uniq = np.flatnonzero(first_at < ids.size)
    where = np.empty(size, dtype=np.intp)
    where[uniq] = np.arange(uniq.size)
    return uniq.astype(ids.dtype, copy=False), first_at[uniq], where[ids]


def public_layout(
    coef: np.ndarray, intercept: np.ndarray, sv_class: np.ndarray, n_classes: int, multiclass: str
) -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's ``dual_coef_`` and ``intercept_`` from the models'
    coefficients (``(n_models, n_SV)``) and intercepts: two classes, the
    signs flipped (positive for ``classes_[1]``); one-vs-rest, as they are;
    one-vs-one, LIBSVM's layout (:func:`ovo_to_libsvm`)."""
    if n_classes == 2:
        return -coef, -intercept
    if multiclass == "ovr":
        return coef.copy(), intercept.copy()
    return ovo_to_libsvm(coef, sv_class, n_classes), intercept.copy()


def ovo_compact(coef: np.ndarray, n_support: np.ndarray) -> np.ndarray:
    """One-vs-one coefficients without the zeros of the other classes.

    ``coef`` is ``(n_pairs, n_SV)`` over support vectors grouped by class
    (``n_support[c]`` of class ``c``, in class order); the result is 1-D: for
    each pair ``(a, b)`` of :func:`ovo_pairs`, its coefficients over class
    ``a``'s support vectors, then over class ``b``'s.
    """
    n_support = np.asarray(n_support, dtype=np.intp)
    pairs = ovo_pairs(n_support.shape[0])
    if not pairs:
        return np.zeros(0)
    first = np.concatenate(([0], np.cumsum(n_support)))
    seg_class = np.array(pairs, dtype=np.intp).reshape(-1)  # a0, b0, a1, b1, …
    seg_len = n_support[seg_class]
    model = np.repeat(np.repeat(np.arange(len(pairs)), 2), seg_len)
    column = _ranges(first[seg_class], seg_len)
    return np.ascontiguousarray(coef[model, column], dtype=np.float64)


def ovo_to_libsvm(coef: np.ndarray, sv_class: np.ndarray, n_classes: int) -> np.ndarray:
    """Pack one-vs-one coefficients into LIBSVM's ``dual_coef_`` layout.

    ``coef[k]`` holds pair ``k``'s coefficients ``y_i α_i`` over all support
    vectors (zero outside the pair); ``sv_class`` is each support vector's
    class index. For pair ``(a, b)`` the coefficients of class-``a`` support
    vectors go to row ``b − 1`` and those of class ``b`` to row ``a``, giving
    shape ``(n_classes − 1, n_SV)``.
    """
    dual = np.zeros((n_classes - 1, sv_class.shape[0]))
    sv_class = np.asarray(sv_class)
    pairs = ovo_pairs(n_classes)
    if sv_class.size and pairs and np.all(sv_class[1:] >= sv_class[:-1]):
        # Grouped by class in class order (as :func:`assemble` gives them):
        # each class is one slice, and every pair's two slices are moved by
        # one scatter (each entry of ``dual`` is written once: class ``a``'s
        # columns by the pairs ``(a, b)`` into rows ``b − 1 ≥ a``, by the
        # pairs ``(c, a)`` into rows ``c < a``).
        bounds = np.searchsorted(sv_class, np.arange(n_classes + 1), side="left")
        ab = np.array(pairs, dtype=np.intp)
        seg_class = ab.reshape(-1)  # a0, b0, a1, b1, …
        seg_row = np.stack((ab[:, 1] - 1, ab[:, 0]), axis=1).reshape(-1)
        seg_len = bounds[seg_class + 1] - bounds[seg_class]
        column = _ranges(bounds[seg_class], seg_len)
        model = np.repeat(np.repeat(np.arange(len(pairs)), 2), seg_len)
        dual[np.repeat(seg_row, seg_len), column] = coef[model, column]
        return dual
    for k, (a, b) in enumerate(pairs):
        in_a = sv_class == a
        in_b = sv_class == b
        dual[b - 1, in_a] = coef[k, in_a]
        dual[a, in_b] = coef[k, in_b]
    return dual


def libsvm_to_ovo(dual: np.ndarray, n_support: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """Unpack LIBSVM's ``dual_coef_`` (support vectors grouped by class,
    ``n_support`` per class): per class pair in :func:`ovo_pairs` order, the
    support-vector positions of the pair and their coefficients (the inverse
    of :func:`ovo_to_libsvm`)."""
    start = np.concatenate([[0], np.cumsum(n_support)]).astype(np.intp)
    out = []
    for a, b in ovo_pairs(len(n_support)):
        rows = np.r_[start[a] : start[a + 1], start[b] : start[b + 1]]
        coef = np.concatenate(
            [dual[b - 1, start[a] : start[a + 1]], dual[a, start[b] : start[b + 1]]]
        )
        out.append((rows, coef))
    return out


# --------------------------------------------------------------- predicting


def _voting(abstain: np.ndarray | None, shape: tuple[int, ...]) -> np.ndarray:
    return np.ones(shape, dtype=bool) if abstain is None else ~np.asarray(abstain, dtype=bool)


def ovo_votes(dec: np.ndarray, n_classes: int, abstain: np.ndarray | None = None) -> np.ndarray:
    """Votes per class, ``(n_samples, n_classes)``, as LIBSVM's prediction
    counts them: pair ``(a, b)`` votes for ``a`` when its value is ``> 0``,
    else for ``b``; pairs marked in ``abstain`` do not vote."""
    votes = np.zeros((dec.shape[0], n_classes))
    voting = _voting(abstain, dec.shape)
    for k, (a, b) in enumerate(ovo_pairs(n_classes)):
        wins_a = dec[:, k] > 0
        votes[:, a] += voting[:, k] & wins_a
        votes[:, b] += voting[:, k] & ~wins_a
    return votes


def ovo_to_ovr(dec: np.ndarray, n_classes: int, abstain: np.ndarray | None = None) -> np.ndarray:
    """The one-vs-rest shaped score of one-vs-one values, as scikit-learn's
    ``SVC.decision_function`` with ``decision_function_shape='ovr'``.

    Each class gets its votes (pair ``(a, b)`` counting for ``b`` when its
    value is ``< 0``, else for ``a``) plus the sum ``c`` of its pairwise
    confidences (the value for ``a``, its negation for ``b``) squashed by
    ``c / (3(|c| + 1))`` into ``(−1/3, 1/3)``, which reorders classes with
    equal votes but never overturns a vote. Pairs marked in ``abstain``
    count for nobody.
    """
    votes = np.zeros((dec.shape[0], n_classes))
    confidence = np.zeros((dec.shape[0], n_classes))
    voting = _voting(abstain, dec.shape)
    for k, (a, b) in enumerate(ovo_pairs(n_classes)):
        value = np.where(voting[:, k], dec[:, k], 0.0)
        wins_b = dec[:, k] < 0
        votes[:, a] += voting[:, k] & ~wins_b
        votes[:, b] += voting[:, k] & wins_b
        confidence[:, a] += value
        confidence[:, b] -= value
    return votes + confidence / (3.0 * (np.abs(confidence) + 1.0))


def vote_winner(
    dec: np.ndarray,
    n_classes: int,
    abstain: np.ndarray | None = None,
    order: np.ndarray | None = None,
) -> np.ndarray:
    """Class index with the most one-vs-one votes (:func:`ovo_votes`); ties
    go to the class that comes first in ``order`` (class indices; None:
    ``0, 1, …``, the lowest index). LIBSVM's rule is the first class of its
    model's ``label`` line, which is ``order`` for a model read from its file."""
    votes = ovo_votes(dec, n_classes, abstain)
    if order is None:
        return np.argmax(votes, axis=1)
    order = np.asarray(order, dtype=np.intp)
    return order[np.argmax(votes[:, order], axis=1)]


def binary_index(decision: np.ndarray) -> np.ndarray:
    """Class index (0 or 1) from a two-class public decision value
    (positive for ``classes_[1]``): 1 unless the value is negative, so that
    a value of exactly zero predicts ``classes_[1]`` as LIBSVM's vote does
    (the pair's value ``−decision`` is not ``> 0``)."""
    return (~(np.asarray(decision) < 0)).astype(np.intp)


def scores_index(scores: np.ndarray) -> np.ndarray:
    """Class index from public decision values: :func:`binary_index` for
    one value per sample, else the largest score (lowest index on ties)."""
    if scores.ndim == 1:
        return binary_index(scores)
    return np.argmax(scores, axis=-1)


def decision_function(
    dec: np.ndarray, n_classes: int, multiclass: str, shape: str = "ovr"
) -> np.ndarray:
    """Public decision values from the binary models' values ``dec``.

    Two classes: one value per sample, positive for ``classes_[1]``.
    One-vs-one with ``shape='ovr'``: :func:`ovo_to_ovr`; with ``'ovo'``, the
    pairs' values. One-vs-rest: the models' values.
    """
    if n_classes == 2:
        return -dec[:, 0]
    if multiclass == "ovo" and shape == "ovr":
        return ovo_to_ovr(dec, n_classes)
    return dec


def check_break_ties(break_ties: bool, shape: str) -> None:
    """scikit-learn's refusal of ``break_ties`` with the 'ovo' shape."""
    if break_ties and shape == "ovo":
        raise ValueError("break_ties must be False when decision_function_shape is 'ovo'")


def predict_index(
    dec: np.ndarray,
    n_classes: int,
    multiclass: str,
    break_ties: bool = False,
    shape: str = "ovr",
    vote_order: np.ndarray | None = None,
) -> np.ndarray:
    """Predicted class indices from the binary models' values ``dec``.

    Two classes and one-vs-one without ``break_ties``: the vote
    (:func:`vote_winner`; its ties go to the first class of ``vote_order``).
    One-vs-one with ``break_ties``: the largest :func:`ovo_to_ovr` score.
    One-vs-rest: the largest value. Other ties go to the lowest class
    index. ``break_ties`` with ``shape='ovo'`` raises ``ValueError``, as
    scikit-learn.
    """
    check_break_ties(break_ties, shape)
    if n_classes == 2:
        return binary_index(-dec[:, 0])
    if multiclass == "ovr":
        return np.argmax(dec, axis=1)
    if break_ties:
        return np.argmax(ovo_to_ovr(dec, n_classes), axis=1)
    return vote_winner(dec, n_classes, order=vote_order)


class BinaryModelsMixin:
    """``decision_function`` and ``predict`` bodies for an estimator whose
    binary models give their values through ``_model_decision(X)`` and
    that has the parameters ``multiclass``, ``decision_function_shape``
    and ``break_ties`` (:class:`localsvm.SVC`,
    :class:`localsvm.IncrementalSVC`); the estimator keeps its public
    methods and docstrings and calls these."""

    def _multiclass_decision(self, X) -> np.ndarray:
        return decision_function(
            self._model_decision(X),
            self.classes_.shape[0],
            self.multiclass,
            self.decision_function_shape,
        )

    def _multiclass_predict(self, X) -> np.ndarray:
        check_is_fitted(self)
        # Refused before X is looked at, as scikit-learn does.
        check_break_ties(self.break_ties, self.decision_function_shape)
        idx = predict_index(
            self._model_decision(X),
            self.classes_.shape[0],
            self.multiclass,
            self.break_ties,
            self.decision_function_shape,
            # A model read from a LIBSVM file breaks vote ties as LIBSVM does.
            getattr(self, "_vote_order", None),
        )
        return self.classes_[idx]
