"""Prediction by one model per region of the input space, shared by the
estimators that split the training data (:class:`localsvm.ProfileSVC`'s
clusters, :class:`localsvm.CellSVC`'s cells).

A fitted estimator of this kind keeps, per region ``j``, a fitted
:class:`localsvm.SVC` (or None when the region holds a single class or no
example: it then predicts that class) and the class indices it holds; it
routes an example to its region with ``_route``. The mixin turns those into
``decision_function`` and ``predict``; the regions' models run through
:func:`localsvm.run_tasks`, one task per region.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from sklearn.utils.validation import check_is_fitted

from ._docstrings import X_ROWS, fill
from .parallel import run_tasks


def region_output(task, shared):
    """One region's predictions or decision values for its rows of ``X``; a
    :func:`~localsvm.run_tasks` task (module-level so it pickles).

    ``task`` is ``(j, rows)``; ``shared`` is ``(X, models, what)`` with
    ``what`` 'predict' or 'decision'."""
    j, rows = task
    X, models, what = shared
    model = models[j]
    if what == "predict":
        return model.predict(X[rows])
    return model.decision_function(X[rows])


def region_iterations(models: list) -> np.ndarray:
    """SMO iterations of each region's SVM (summed over its binary
    problems; 0 for a region without one)."""
    return np.array([0 if m is None else int(np.sum(m.n_iter_)) for m in models], dtype=np.int64)


_ROUTED_ROWS = (
    """\
Which region's model labels a row (or, for ``CellSVC`` with
``routing='soft'``, which two models weighted) is the estimator's
routing rule, described with the class.

Parameters
----------
"""
    + X_ROWS
)


@fill(routed_rows=_ROUTED_ROWS)
class RegionModelsMixin:
    """``decision_function`` and ``predict`` from one model per region.

    Subclasses name their fitted attributes in ``_region_attributes`` (the
    per-region models, None for a region without an SVM; the class indices
    held per region) and provide ``_route(X)``, the region of each validated
    row; they may replace ``_decision_valid`` and ``_predict_valid`` (a
    validated ``X`` to decision values or class indices) with another rule
    than one region per row."""

    #: Names of the fitted attributes holding the regions' models and the
    #: class indices of each region.
    _region_attributes: ClassVar[tuple[str, str]] = ("", "")

    def _region_models(self) -> list:
        return getattr(self, self._region_attributes[0])

    def _region_classes(self) -> list:
        return getattr(self, self._region_attributes[1])

    def _route(self, X: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _per_region(self, X, what, fn_model, fn_constant, width: int, region):
        """Validated rows ``X`` labelled by their regions' models (one task
        per region with an SVM, mapped by ``fn_model(model, output)``) or by
        ``fn_constant(j)``."""
        models = self._region_models()
        out = np.zeros((X.shape[0], width))
        tasks = []
        for j in np.unique(region):
            rows = np.flatnonzero(region == j)
            if models[j] is None:
                out[rows] = fn_constant(j)
            else:
                tasks.append((int(j), rows))
        results = run_tasks(region_output, tasks, n_jobs=self.n_jobs, shared=(X, models, what))
        for (j, rows), res in zip(tasks, results, strict=True):
            out[rows] = fn_model(models[j], res)
        return out

    def _region_decision(self, X: np.ndarray, region: np.ndarray) -> np.ndarray:
        """Decision values of validated rows ``X`` by the models of the
        regions ``region`` (see :meth:`decision_function`)."""
        n_classes = self.classes_.shape[0]
        held = self._region_classes()
        if n_classes == 2:
            return self._per_region(
                X,
                "decision",
                lambda model, dec: dec[:, None],
                lambda j: 1.0 if held[j][0] == 1 else -1.0,
                1,
                region,
            )[:, 0]

        def scores(model, dec):
            full = np.full((dec.shape[0], n_classes), -1.0)
            if model.classes_.shape[0] == 2:
                # Two classes here: the binary margin, split symmetrically.
                dec = np.column_stack([-dec, dec])
            full[:, model.classes_] = dec
            return full

        def constant(j):
            row = np.full(n_classes, -1.0)
            row[held[j]] = float(n_classes)
            return row

        return self._per_region(X, "decision", scores, constant, n_classes, region)

    def _decision_valid(self, X: np.ndarray) -> np.ndarray:
        """Decision values of validated rows: each by its region's model."""
        return self._region_decision(X, self._route(X))

    def _predict_valid(self, X: np.ndarray) -> np.ndarray:
        """Class indices of validated rows: each by its region's model."""
        return self._region_predict(X, self._route(X))

    def decision_function(self, X):
        """Evaluate the decision function of each row's region model.

        {routed_rows}

        Returns
        -------
        ndarray of shape (n_samples,) or (n_samples, n_classes)
            Two classes: the decision value, positive for ``classes_[1]``
            (±1 from a region with one class). More classes: per-class
            scores of the region's model (its votes plus confidence, as
            :class:`localsvm.SVC`), −1 for classes the region lacks.
        """
        check_is_fitted(self)
        return self._decision_valid(self._predict_prologue(X))

    def predict(self, X):
        """Predict the class of each sample with its region's model.

        {routed_rows}

        Returns
        -------
        ndarray of shape (n_samples,)
            The predicted labels, taken from ``classes_``.
        """
        check_is_fitted(self)
        idx = self._predict_valid(self._predict_prologue(X))
        return self.classes_[idx]

    def _region_predict(self, X: np.ndarray, region: np.ndarray) -> np.ndarray:
        """Class indices of validated rows ``X`` by the models of the
        regions ``region``."""
        held = self._region_classes()
        idx = self._per_region(
            X,
            "predict",
            lambda model, pred: pred[:, None],
            lambda j: float(held[j][0]) if held[j].size else 0,
            1,
            region,
        )[:, 0]
        return idx.astype(np.intp)
