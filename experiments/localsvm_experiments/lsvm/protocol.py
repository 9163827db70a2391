"""The protocol: the parameter grids of each run size, how each method is
trained and applied, and the cross-validation that picks its parameters."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from localsvm_benchmarks.report import timed
from sklearn.neighbors import KNeighborsClassifier

from localsvm.local_svc import LocalSVC
from localsvm.parallel import run_tasks
from localsvm.profile_svc import ProfileSVC
from localsvm.svc import SVC

#: The methods of Table 1, in the paper's column order.
METHODS = ("SVM", "KNN", "HLSVM", "SLSVM", "PSVM")

#: The methods timed for Figure 4 (scikit-learn's SVC as well as localsvm's).
RUNTIME_METHODS = ("SVM", "SVM (sklearn)", "KNN", "HLSVM", "SLSVM", "PSVM")


@dataclass
class Config:
    """The sizes and grids of one run (:data:`FULL` or :data:`QUICK`).

    Attributes
    ----------
    repetitions : int
        Table 1 repetitions (train/test splits).
    folds : int
        Cross-validation folds.
    svm_C, svm_width, knn_k, hlsvm_k, hlsvm_C : tuple
        The Table 1 grids of SVM, KNN and HLSVM.
    slsvm_width, slsvm_C, psvm_width, psvm_C, psvm_kappa : tuple
        The Table 1 grids of SLSVM and PSVM. Every width is a factor of the
        median squared distance ``m``.
    runtime_per_class : int
        Figure-4 training examples per class.
    runtime_sizes : tuple of int
        Figure-4 test-set sizes (nested prefixes of the largest).
    speed_psvm_kappa : tuple of int
        The cluster counts PSVM is tuned over in the speed comparison.
    speed_repeat : int
        Timed runs per model in the speed comparison (the best is kept).
    grid_points : int
        Grid points per axis of the Figure-3 image.
    """

    repetitions: int
    folds: int
    # Table 1 grids (widths are factors of the median squared distance m).
    svm_C: tuple[float, ...]
    svm_width: tuple[float, ...]
    knn_k: tuple[int, ...]
    hlsvm_k: tuple[int, ...]
    hlsvm_C: tuple[float, ...]
    slsvm_width: tuple[float, ...]
    slsvm_C: tuple[float, ...]
    psvm_width: tuple[float, ...]
    psvm_C: tuple[float, ...]
    psvm_kappa: tuple[int, ...]
    # Figure 4 / speed comparison.
    runtime_per_class: int
    runtime_sizes: tuple[int, ...]
    speed_psvm_kappa: tuple[int, ...]
    speed_repeat: int
    # Figure 3.
    grid_points: int


#: The paper's protocol.
FULL = Config(
    repetitions=10,
    folds=10,
    svm_C=(1.0, 10.0, 100.0),
    svm_width=(0.25, 1.0, 4.0, 16.0),
    knn_k=(1, 3, 5, 9, 15, 25),
    hlsvm_k=(5, 10, 20, 40),
    hlsvm_C=(1.0, 10.0, 100.0),
    slsvm_width=(0.0625, 0.25, 1.0, 4.0),
    slsvm_C=(1.0, 10.0, 100.0),
    psvm_width=(0.25, 1.0, 4.0),
    psvm_C=(10.0, 100.0),
    # The paper tunes κ by 10-fold CV with the other parameters and names no
    # grid, only that κ comes out "much smaller than m and n": doublings
    # from 2 to 16 (capped at the smallest training fold).
    psvm_kappa=(2, 4, 8, 16),
    runtime_per_class=300,
    runtime_sizes=(600, 1200, 2400, 4800),
    speed_psvm_kappa=(5, 10),
    speed_repeat=3,
    grid_points=200,
)

#: A smoke run of seconds (``--quick``).
QUICK = Config(
    repetitions=2,
    folds=3,
    svm_C=(10.0,),
    svm_width=(1.0, 4.0),
    knn_k=(3, 9),
    hlsvm_k=(10,),
    hlsvm_C=(10.0,),
    slsvm_width=(1.0,),
    slsvm_C=(10.0,),
    psvm_width=(1.0,),
    psvm_C=(10.0,),
    psvm_kappa=(2, 4),
    runtime_per_class=150,
    runtime_sizes=(300, 600),
    speed_psvm_kappa=(5,),
    speed_repeat=1,
    grid_points=60,
)

#: Figure-4 parameters (fixed, not tuned).
RUNTIME_PARAMS = {"C": 10.0, "width": 1.0, "k": 50, "kappa": 10}

#: Figure-3 parameters: κ = 11 is the paper's count of pieces for both sets;
#: the bandwidths suit each set's scale (Banana's attributes are of unit
#: scale, the spirals lie in [0, 1]²).
BANANA_PARAMS = {"C": 10.0, "bandwidth": 0.5, "n_clusters": 11}
SPIRALS_PARAMS = {"C": 100.0, "bandwidth": 0.03, "n_clusters": 11}


def config(args: argparse.Namespace) -> Config:
    """The run's :class:`Config`: :data:`QUICK` or :data:`FULL`, with the
    command line's overrides.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed options of :func:`~localsvm_experiments.lsvm.add_arguments`.

    Returns
    -------
    Config
    """
    cfg = QUICK if args.quick else FULL
    if args.repetitions is not None:
        cfg = replace(cfg, repetitions=args.repetitions)
    if args.folds is not None:
        cfg = replace(cfg, folds=args.folds)
    if getattr(args, "repeat", None) is not None:
        cfg = replace(cfg, speed_repeat=args.repeat)
    return cfg


def grids(cfg: Config, n_fit: int) -> dict[str, list[dict[str, Any]]]:
    """Each method's parameter grid.

    Parameters
    ----------
    cfg : Config
        The grids' axes.
    n_fit : int
        The smallest training fold: ``k`` and ``kappa`` are capped at it, and
        points that become equal are dropped.

    Returns
    -------
    dict of str to list of dict
        Method name → its grid points, in order.
    """

    def product(**axes: Sequence[Any]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = [{}]
        for key, values in axes.items():
            out = [{**p, key: v} for p in out for v in values]
        unique: list[dict[str, Any]] = []
        for p in out:
            if p not in unique:
                unique.append(p)
        return unique

    def cap(values: Sequence[int]) -> list[int]:
        return sorted({min(int(v), n_fit) for v in values})

    return {
        "SVM": product(C=cfg.svm_C, width=cfg.svm_width),
        "KNN": product(k=cap(cfg.knn_k)),
        "HLSVM": product(k=cap(cfg.hlsvm_k), C=cfg.hlsvm_C),
        "SLSVM": product(width=cfg.slsvm_width, C=cfg.slsvm_C),
        "PSVM": product(width=cfg.psvm_width, C=cfg.psvm_C, kappa=cap(cfg.psvm_kappa)),
    }


def fit_predict(
    method: str,
    params: dict[str, Any],
    X: np.ndarray,
    y: np.ndarray,
    X_test: np.ndarray,
    *,
    m: float = 1.0,
    n_jobs: int | None = 1,
    random_state: int = 0,
    details: dict[str, Any] | None = None,
) -> np.ndarray:
    """Train ``method`` with ``params`` and label ``X_test``.

    Parameters
    ----------
    method : str
        One of :data:`METHODS`, ``"SVM (sklearn)"`` (scikit-learn's SVC) or
        ``"PSVM (inductive)"`` (ProfileSVC fitted without the test set).
    params : dict
        One grid point: ``C``, ``width`` (a factor of ``m``), ``k``,
        ``kappa``, as the method needs.
    X, y : ndarray
        The training examples and their ±1 labels.
    X_test : ndarray
        The examples to label (PSVM's profile references when transductive).
    m : float, default=1.0
        The unit of ``width``: the RBF ``gamma`` and the similarity bandwidth
        use ``width * m``.
    n_jobs : int or None, default=1
        Threads for localsvm's estimators.
    random_state : int, default=0
        PSVM's clustering initialisation.
    details : dict, optional
        Receives PSVM's ``timings_`` and, for the lazy local SVMs, the split
        of the time between fit and predict.

    Returns
    -------
    ndarray of shape (n_test,)
        The predicted labels.
    """
    width = params.get("width", 1.0) * m
    if method == "SVM":
        return SVC(C=params["C"], gamma=1.0 / width, n_jobs=n_jobs).fit(X, y).predict(X_test)
    if method == "SVM (sklearn)":
        from sklearn.svm import SVC as SklearnSVC

        return SklearnSVC(C=params["C"], gamma=1.0 / width).fit(X, y).predict(X_test)
    if method == "KNN":
        k = min(int(params["k"]), X.shape[0])
        return KNeighborsClassifier(n_neighbors=k).fit(X, y).predict(X_test)
    if method in ("HLSVM", "SLSVM"):
        if method == "HLSVM":
            model = LocalSVC(
                similarity="knn", k=min(int(params["k"]), X.shape[0]), C=params["C"], n_jobs=n_jobs
            )
        else:
            model = LocalSVC(similarity="gaussian", bandwidth=width, C=params["C"], n_jobs=n_jobs)
        _, fit_s = timed(lambda: model.fit(X, y))
        pred, predict_s = timed(lambda: model.predict(X_test))
        if details is not None:
            details.update(fit=fit_s, predict=predict_s)
        return pred
    if method in ("PSVM", "PSVM (inductive)"):
        model = ProfileSVC(
            C=params["C"],
            bandwidth=width,
            n_clusters=min(int(params["kappa"]), X.shape[0]),
            clustering="magkmeans",
            transductive=method == "PSVM",
            # The paper's routing rule in both modes (the mean similarity).
            routing="mean-similarity",
            random_state=random_state,
            n_jobs=n_jobs,
        )
        pred = model.fit_predict(X, y, X_test)
        if details is not None:
            details.update(model.timings_)
        return pred
    raise ValueError(f"unknown method {method!r}")


@dataclass
class CVResult:
    """What :func:`cross_validate` found.

    Attributes
    ----------
    best : dict
        The grid point with the highest validation accuracy.
    scores : ndarray of shape (n_points,)
        The validation accuracy of each grid point over all folds.
    seconds : float
        Wall-clock time of the search.
    """

    best: dict[str, Any]
    scores: np.ndarray
    seconds: float


def cross_validate(
    method: str,
    grid: list[dict[str, Any]],
    X: np.ndarray,
    y: np.ndarray,
    splits: list[tuple[np.ndarray, np.ndarray]],
    *,
    m: float,
    n_jobs: int | None,
    random_state: int,
) -> CVResult:
    """Score every grid point over ``splits`` and pick the best.

    The (point, fold) fits run on ``n_jobs`` threads, each estimator
    single-threaded.

    Parameters
    ----------
    method : str
        As in :func:`fit_predict`.
    grid : list of dict
        The grid points.
    X, y : ndarray
        The training part.
    splits : list of (ndarray, ndarray)
        ``(train, validation)`` row indices of each fold.
    m : float
        The unit of the widths.
    n_jobs : int or None
        Threads for the (point, fold) fits.
    random_state : int
        Passed to :func:`fit_predict`.

    Returns
    -------
    CVResult
        The best point is the first one on ties.
    """
    tasks = [(g, f) for g in range(len(grid)) for f in range(len(splits))]

    def task(t: tuple[int, int]) -> int:
        g, f = t
        tr, va = splits[f]
        pred = fit_predict(
            method, grid[g], X[tr], y[tr], X[va], m=m, n_jobs=1, random_state=random_state
        )
        return int(np.sum(pred == y[va]))

    correct, seconds = timed(lambda: run_tasks(task, tasks, n_jobs=n_jobs))
    scores = np.zeros(len(grid))
    for (g, _), c in zip(tasks, correct, strict=True):
        scores[g] += c
    scores /= y.shape[0]
    best = grid[int(np.argmax(scores))]
    return CVResult(best, scores, seconds)
