"""``python -m localsvm reproduce lsvm``: the Localized SVM paper (seed 000:
Cheng, Tan & Jin, "Localized Support Vector Machine and Its Efficient
Algorithm", SDM 2007; ALGORITHMS.md §2–3), next to the paper's figures.

1. **Table 1.** Accuracy of SVM (:class:`localsvm.SVC`, RBF), KNN
   (scikit-learn's ``KNeighborsClassifier``), HLSVM (:class:`localsvm.LocalSVC`,
   ``similarity='knn'``), SLSVM (``LocalSVC``, Gaussian similarity) and PSVM
   (:class:`localsvm.ProfileSVC`, MagKmeans, transductive as in the paper) on
   Breast (``breast_w``), Glass, Iris and Yeast. Protocol (seed 000 §5.2):
   1/5 of each set for training and 4/5 for test (stratified; repetition
   ``r`` draws its split with ``random_state=r``), ``--repetitions`` (10)
   repetitions, every parameter chosen by ``--folds``-fold (10) stratified
   cross-validation on the training part (folds shuffled with
   ``random_state=r``; the fold count is lowered to the smaller class's size
   in the training part when that is smaller, and the output says so).
   *Scaling:* each attribute is divided by its largest absolute value over
   the training part (a column that is 0 there is left as it is), and the
   test part is divided by the same numbers ("normalized based on the maximum
   value of the attribute", §5.2).
   *Widths:* the RBF width and the similarity bandwidth λ (σ = exp(−‖x − x'‖²/λ),
   RBF ``gamma = 1/λ``) are tuned as multiples ``f·m`` of ``m``, the median
   squared distance between training examples (after scaling), so one grid
   suits every data set; the tables print ``f``.
   *PSVM* is fitted transductively (profiles against the examples to be
   classified: the validation fold during CV, the test part afterwards).
   Multiclass sets are split into two groups of classes (the paper does the
   same but does not say which groups):

   * Glass (labels 1, 2, 3, 5, 7): window glass {1, 2, 3} vs non-window {5, 7}.
   * Iris (labels 0, 1, 2): versicolor {1} vs setosa + virginica {0, 2} — a
     split no single line separates.
   * Yeast (PMLB labels 0–8): membrane proteins {ME1, ME2, ME3} vs the rest.
     PMLB's codes are not alphabetical; the class names are recovered from
     UCI's class counts (ME1 44, ME2 51, ME3 163, ...; all counts differ), which
     gives ME1 = 3, ME2 = 5, ME3 = 6 (the codes follow the order of first
     appearance in UCI's file: MIT, NUC, CYT, ME1, EXC, ME2, ME3, VAC, POX).
   * Breast is binary: malignant (1) vs benign (0).

   KDDCup, Physics, Robot and Covtype (the paper's other four rows) are not
   bundled, so they are not reproduced.

2. **Figure 4 (runtime).** The paper's Physics data is not available;
   ijcnn1 stands in: 300 training examples of each class drawn from ijcnn1's
   training set and test sets of 600, 1200, 2400, 4800 examples (half of each
   class, nested) from its test set (``numpy.random.default_rng(0)``), scaled
   as above. Fixed parameters (picked by a quick check on a different draw):
   C = 10 for every SVM, λ = 1 (RBF ``gamma = 1``), k = 50 (KNN and HLSVM),
   κ = 10 (PSVM). Time = fit + predict (PSVM: fit with the test set as the
   profiles' references, then predict it); PSVM's MagKmeans time is reported
   separately from ``ProfileSVC.timings_``. The plot goes to
   ``<out>/lsvm_runtime.png``.

3. **Figure 3.** PSVM's piecewise-linear boundary on Banana (realization 0,
   400 training points, unscaled: its two attributes are already centred and
   of unit scale) with κ = 11 clusters (the paper's count), inductive,
   λ = 0.5, C = 10: the plane coloured by predicted class, the training points
   coloured by cluster, saved to ``<out>/lsvm_psvm_boundary.png``.

4. **Performance bar** (issue 4): on the Figure-4 data (600 training, 4800
   test examples), SLSVM's prediction time per test example, and PSVM against
   an RBF SVC each tuned by the same CV (same folds, grids of 12 points), then
   fit + predict on the 4800 test examples (best of ``--bar-repeat`` runs)
   for PSVM, localsvm's SVC and scikit-learn's SVC. PASS when PSVM is faster
   than scikit-learn's SVC at an accuracy no worse.

``localsvm`` estimators use ``--n-jobs`` threads (default: every CPU);
scikit-learn's SVC and KNN are single-threaded. The CV runs its
(parameter, fold) fits on ``--n-jobs`` threads with single-threaded
estimators inside.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TextIO

import numpy as np
from sklearn.model_selection import StratifiedKFold, train_test_split
from sklearn.neighbors import KNeighborsClassifier

from ..datasets import load_banana, load_breast_w, load_glass, load_ijcnn1, load_iris, load_yeast
from ..local import LocalSVC
from ..parallel import run_tasks
from ..profile_svm import ProfileSVC
from ..similarity import squared_distances
from ..svc import SVC

PAPER_SOURCE = "seed 000 (Cheng, Tan & Jin, SDM 2007), Table 1"

METHODS = ("SVM", "KNN", "HLSVM", "SLSVM", "PSVM")

#: Seed 000, Table 1: accuracy (%) per data set and method.
PAPER: dict[str, dict[str, float]] = {
    "breast": {"SVM": 94.57, "KNN": 95.70, "HLSVM": 95.42, "SLSVM": 96.85, "PSVM": 96.52},
    "glass": {"SVM": 64.33, "KNN": 54.30, "HLSVM": 62.67, "SLSVM": 66.39, "PSVM": 66.91},
    "iris": {"SVM": 92.75, "KNN": 89.75, "HLSVM": 74.71, "SLSVM": 96.42, "PSVM": 97.06},
    "kddcup": {"SVM": 98.29, "KNN": 94.04, "HLSVM": 98.13, "SLSVM": 99.67, "PSVM": 99.22},
    "physics": {"SVM": 82.23, "KNN": 66.37, "HLSVM": 83.77, "SLSVM": 86.72, "PSVM": 85.77},
    "yeast": {"SVM": 92.31, "KNN": 93.36, "HLSVM": 94.62, "SLSVM": 96.00, "PSVM": 95.83},
    "robot": {"SVM": 86.51, "KNN": 84.54, "HLSVM": 85.45, "SLSVM": 89.01, "PSVM": 90.21},
    "covtype": {"SVM": 86.21, "KNN": 67.40, "HLSVM": 73.33, "SLSVM": 90.22, "PSVM": 90.39},
}

UNAVAILABLE = ("KDDCup", "Physics", "Robot", "Covtype")

DATASETS = ("breast", "glass", "iris", "yeast")

#: UCI yeast class sizes (ERL's 5 examples are not in PMLB's copy).
YEAST_UCI_COUNTS = {
    "CYT": 463,
    "NUC": 429,
    "MIT": 244,
    "ME3": 163,
    "ME2": 51,
    "ME1": 44,
    "EXC": 35,
    "VAC": 30,
    "POX": 20,
}


# ---------------------------------------------------------------- data sets


@dataclass
class BinaryData:
    """A data set relabelled into two groups: ``y`` is +1 for ``positive``."""

    name: str
    X: np.ndarray
    y: np.ndarray
    positive: str
    negative: str


def yeast_class_names(y: np.ndarray) -> dict[int, str]:
    """PMLB yeast code → UCI class name, matched by class size."""
    labels, counts = np.unique(y, return_counts=True)
    by_count = {count: name for name, count in YEAST_UCI_COUNTS.items()}
    names = {int(lab): by_count.get(int(c)) for lab, c in zip(labels, counts, strict=True)}
    if None in names.values() or len(set(names.values())) != len(names):
        raise ValueError(
            f"yeast class counts {dict(zip(labels, counts, strict=True))} do not match UCI's"
        )
    return names  # type: ignore[return-value]


def load_binary(name: str) -> BinaryData:
    """One of :data:`DATASETS`, split into the two groups of classes."""
    if name in ("breast", "breast_w"):
        d = load_breast_w()
        return BinaryData("breast", d.X, np.where(d.y == 1, 1, -1), "malignant {1}", "benign {0}")
    if name == "glass":
        d = load_glass()
        y = np.where(np.isin(d.y, (1, 2, 3)), 1, -1)
        return BinaryData("glass", d.X, y, "window {1, 2, 3}", "non-window {5, 7}")
    if name == "iris":
        d = load_iris()
        y = np.where(d.y == 1, 1, -1)
        return BinaryData("iris", d.X, y, "versicolor {1}", "setosa + virginica {0, 2}")
    if name == "yeast":
        d = load_yeast()
        names = yeast_class_names(d.y)
        membrane = sorted(code for code, n in names.items() if n.startswith("ME"))
        rest = sorted(code for code in names if code not in membrane)
        y = np.where(np.isin(d.y, membrane), 1, -1)
        pos = ", ".join(f"{names[c]}={c}" for c in membrane)
        neg = ", ".join(f"{names[c]}={c}" for c in rest)
        return BinaryData("yeast", d.X, y, f"membrane {{{pos}}}", f"rest {{{neg}}}")
    raise ValueError(f"unknown data set {name!r}; available: {', '.join(DATASETS)}")


def max_scaler(X_train: np.ndarray) -> np.ndarray:
    """Per-column divisors: the largest |value| over the training part (1 for
    an all-zero column)."""
    scale = np.abs(X_train).max(axis=0)
    return np.where(scale > 0, scale, 1.0)


def median_sq_distance(X: np.ndarray) -> float:
    """Median squared distance between distinct rows of ``X`` (1 if all equal)."""
    d = squared_distances(X, X)[np.triu_indices(X.shape[0], 1)]
    m = float(np.median(d)) if d.size else 1.0
    return m if m > 0 else 1.0


# ------------------------------------------------------------------ config


@dataclass
class Config:
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
    # Figure 4 / performance bar.
    runtime_per_class: int
    runtime_sizes: tuple[int, ...]
    bar_psvm_kappa: tuple[int, ...]
    bar_repeat: int
    # Figure 3.
    grid_points: int


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
    psvm_kappa=(3, 8),
    runtime_per_class=300,
    runtime_sizes=(600, 1200, 2400, 4800),
    bar_psvm_kappa=(5, 10),
    bar_repeat=3,
    grid_points=200,
)

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
    psvm_kappa=(3,),
    runtime_per_class=150,
    runtime_sizes=(300, 600),
    bar_psvm_kappa=(5,),
    bar_repeat=1,
    grid_points=60,
)

#: Figure-4 parameters (fixed, not tuned).
RUNTIME_PARAMS = {"C": 10.0, "width": 1.0, "k": 50, "kappa": 10}

#: Figure-3 parameters.
BANANA_PARAMS = {"C": 10.0, "bandwidth": 0.5, "n_clusters": 11}


def config(args: argparse.Namespace) -> Config:
    cfg = QUICK if args.quick else FULL
    if args.repetitions is not None:
        cfg = replace(cfg, repetitions=args.repetitions)
    if args.folds is not None:
        cfg = replace(cfg, folds=args.folds)
    if getattr(args, "bar_repeat", None) is not None:
        cfg = replace(cfg, bar_repeat=args.bar_repeat)
    return cfg


def grids(cfg: Config, n_fit: int) -> dict[str, list[dict[str, Any]]]:
    """Each method's grid; ``k`` and ``kappa`` are capped at ``n_fit`` (the
    smallest training fold) and duplicates dropped."""

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


def describe(params: dict[str, Any], relative: bool = True) -> str:
    """``C=10 λ=1m κ=3``-style text for a parameter point."""
    parts = []
    for key, value in params.items():
        if key == "width":
            parts.append(f"λ={value:g}{'m' if relative else ''}")
        elif key == "kappa":
            parts.append(f"κ={value}")
        else:
            parts.append(f"{key}={value:g}")
    return " ".join(parts)


# ----------------------------------------------------------------- methods


def fit_predict(
    method: str,
    params: dict[str, Any],
    X: np.ndarray,
    y: np.ndarray,
    X_test: np.ndarray,
    *,
    m: float = 1.0,
    n_jobs: int | None = 1,
    seed: int = 0,
    details: dict[str, Any] | None = None,
) -> np.ndarray:
    """Train ``method`` with ``params`` (widths times ``m``) and label ``X_test``.

    ``details`` (if given) receives PSVM's ``timings_`` and, for the lazy
    local SVMs, the split of the time between fit and predict."""
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
        start = time.perf_counter()
        model.fit(X, y)
        mid = time.perf_counter()
        pred = model.predict(X_test)
        if details is not None:
            details.update(fit=mid - start, predict=time.perf_counter() - mid)
        return pred
    if method in ("PSVM", "PSVM (inductive)"):
        model = ProfileSVC(
            C=params["C"],
            bandwidth=width,
            n_clusters=min(int(params["kappa"]), X.shape[0]),
            clustering="magkmeans",
            transductive=method == "PSVM",
            random_state=seed,
            n_jobs=n_jobs,
        )
        pred = model.fit_predict(X, y, X_test)
        if details is not None:
            details.update(model.timings_)
        return pred
    raise ValueError(f"unknown method {method!r}")


@dataclass
class CVResult:
    best: dict[str, Any]
    scores: np.ndarray  # mean validation accuracy per grid point
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
    seed: int,
) -> CVResult:
    """Validation accuracy of every grid point over ``splits``; the best
    point (the first one on ties). The (point, fold) fits run on ``n_jobs``
    threads, each estimator single-threaded."""
    start = time.perf_counter()
    tasks = [(g, f) for g in range(len(grid)) for f in range(len(splits))]

    def task(t: tuple[int, int]) -> int:
        g, f = t
        tr, va = splits[f]
        pred = fit_predict(method, grid[g], X[tr], y[tr], X[va], m=m, n_jobs=1, seed=seed)
        return int(np.sum(pred == y[va]))

    correct = run_tasks(task, tasks, n_jobs=n_jobs)
    scores = np.zeros(len(grid))
    for (g, _), c in zip(tasks, correct, strict=True):
        scores[g] += c
    scores /= y.shape[0]
    best = grid[int(np.argmax(scores))]
    return CVResult(best, scores, time.perf_counter() - start)


# ----------------------------------------------------------------- printing


def _say(out: TextIO, text: str = "") -> None:
    print(text, file=out, flush=True)


def _heading(out: TextIO, text: str) -> None:
    _say(out)
    _say(out, text)
    _say(out, "=" * len(text))


# ------------------------------------------------------------------ Table 1


def run_table(cfg: Config, datasets: Sequence[str], n_jobs: int | None, out: TextIO) -> list[dict]:
    _heading(out, "Table 1: accuracy (%), 1/5 train, 4/5 test")
    _say(
        out,
        f"{cfg.repetitions} repetitions (stratified split, random_state = repetition); parameters "
        f"by {cfg.folds}-fold stratified CV on the training part; attributes divided by their "
        "largest |value| over the training part; λ (SLSVM, PSVM bandwidth; RBF gamma = 1/λ) as "
        "f·m, m = median squared distance between training examples.",
    )
    _say(out, "Grids:")
    for method, grid in grids(cfg, 10**9).items():
        _say(out, f"  {method:<6} {len(grid):>3} points: " + grid_text(grid))
    _say(out, "Class groups (+1 vs −1):")
    data = [load_binary(name) for name in datasets]
    for d in data:
        n_pos = int(np.sum(d.y == 1))
        _say(
            out,
            f"  {d.name:<7} {d.positive} ({n_pos}) vs {d.negative} ({d.y.shape[0] - n_pos})",
        )
    rows: list[dict] = []
    results: dict[tuple[str, str], dict[str, Any]] = {}
    for d in data:
        start = time.perf_counter()
        accs: dict[str, list[float]] = {meth: [] for meth in METHODS}
        chosen: dict[str, list[str]] = {meth: [] for meth in METHODS}
        cv_time = dict.fromkeys(METHODS, 0.0)
        folds_used = set()
        n_train = 0
        for rep in range(cfg.repetitions):
            X_tr, X_te, y_tr, y_te = train_test_split(
                d.X, d.y, train_size=0.2, stratify=d.y, random_state=rep
            )
            n_train = X_tr.shape[0]
            scale = max_scaler(X_tr)
            X_tr, X_te = X_tr / scale, X_te / scale
            m = median_sq_distance(X_tr)
            n_folds = int(min(cfg.folds, np.bincount(y_tr == 1).min()))
            folds_used.add(n_folds)
            splits = list(
                StratifiedKFold(n_folds, shuffle=True, random_state=rep).split(X_tr, y_tr)
            )
            n_fit = min(tr.shape[0] for tr, _ in splits)
            for method, grid in grids(cfg, n_fit).items():
                cv = cross_validate(method, grid, X_tr, y_tr, splits, m=m, n_jobs=n_jobs, seed=rep)
                cv_time[method] += cv.seconds
                pred = fit_predict(method, cv.best, X_tr, y_tr, X_te, m=m, n_jobs=n_jobs, seed=rep)
                accs[method].append(100.0 * float(np.mean(pred == y_te)))
                chosen[method].append(describe(cv.best))
        seconds = time.perf_counter() - start
        _say(out)
        _say(
            out,
            f"{d.name}: {d.y.shape[0]} examples ({n_train} train / {d.y.shape[0] - n_train} test), "
            f"{d.X.shape[1]} attributes, CV folds used: "
            f"{', '.join(str(f) for f in sorted(folds_used))}; {seconds:.1f} s",
        )
        _say(
            out,
            f"  {'method':<6} {'ours (mean ± std)':>18} {'paper':>7} {'Δ':>7}  {'CV s':>6}  "
            "parameters CV chose most often",
        )
        for method in METHODS:
            a = np.asarray(accs[method])
            mean = float(a.mean())
            std = float(a.std(ddof=1)) if a.size > 1 else 0.0
            paper = PAPER[d.name][method]
            (top, count), *_ = Counter(chosen[method]).most_common(1)
            row = {
                "section": "table1",
                "data": d.name,
                "method": method,
                "mean": mean,
                "std": std,
                "paper": paper,
                "accuracies": a.tolist(),
                "chosen": top,
                "chosen_count": count,
                "repetitions": int(a.size),
                "cv_seconds": cv_time[method],
            }
            rows.append(row)
            results[(d.name, method)] = row
            _say(
                out,
                f"  {method:<6} {mean:>10.2f} ± {std:>5.2f} {paper:>7.2f} {mean - paper:>+7.2f}  "
                f"{cv_time[method]:>6.1f}  {top} ({count}/{a.size})",
            )
    # The paper's layout: one row per data set, ours [paper].
    _say(out)
    _say(out, f"Summary, ours [paper, {PAPER_SOURCE}]:")
    _say(out, f"  {'data':<8}" + "".join(f"{meth:>17}" for meth in METHODS))
    for d in data:
        cells = "".join(
            f"{results[(d.name, meth)]['mean']:>8.2f} [{PAPER[d.name][meth]:>6.2f}]"
            for meth in METHODS
        )
        _say(out, f"  {d.name:<8}{cells}")
    for name in UNAVAILABLE:
        cells = "".join(f"{'—':>8} [{PAPER[name.lower()][meth]:>6.2f}]" for meth in METHODS)
        _say(out, f"  {name:<8}{cells}")
    _say(
        out,
        f"{', '.join(UNAVAILABLE[:-1])} and {UNAVAILABLE[-1]} are not available here "
        "(not bundled with localsvm): their rows show the paper's figures only.",
    )
    return rows


def grid_text(grid: list[dict[str, Any]]) -> str:
    axes: dict[str, list[Any]] = {}
    for p in grid:
        for key, value in p.items():
            axes.setdefault(key, [])
            if value not in axes[key]:
                axes[key].append(value)
    names = {"width": "λ/m", "kappa": "κ"}
    return ", ".join(
        f"{names.get(k, k)} ∈ {{{', '.join(f'{v:g}' for v in vs)}}}" for k, vs in axes.items()
    )


# ------------------------------------------------------------- Figure 4 + bar


@dataclass
class RuntimeData:
    X: np.ndarray
    y: np.ndarray
    X_test: np.ndarray  # the largest test set; smaller ones are its prefixes
    y_test: np.ndarray


def runtime_data(cfg: Config) -> RuntimeData:
    """``runtime_per_class`` training examples per class from ijcnn1's training
    set; the largest test set, half per class, ordered so that every prefix
    of a size in ``runtime_sizes`` is also half per class."""
    j = load_ijcnn1()
    rng = np.random.default_rng(0)
    per = cfg.runtime_per_class
    tr = np.concatenate(
        [rng.choice(np.flatnonzero(j.y_train == c), per, replace=False) for c in (-1, 1)]
    )
    half = max(cfg.runtime_sizes) // 2
    pools = [rng.choice(np.flatnonzero(j.y_test == c), half, replace=False) for c in (-1, 1)]
    te = np.empty(2 * half, dtype=np.intp)
    te[0::2], te[1::2] = pools[0], pools[1]  # alternate: each even prefix is balanced
    X, X_test = j.X_train[tr], j.X_test[te]
    scale = max_scaler(X)
    return RuntimeData(X / scale, j.y_train[tr], X_test / scale, j.y_test[te])


RUNTIME_METHODS = ("SVM", "SVM (sklearn)", "KNN", "HLSVM", "SLSVM", "PSVM")


def run_runtime(cfg: Config, n_jobs: int | None, figdir: Path, out: TextIO) -> list[dict]:
    rows: list[dict] = []
    data = runtime_data(cfg)
    p = RUNTIME_PARAMS
    _heading(out, "Figure 4: runtime (s, fit + predict) against the number of test examples")
    _say(
        out,
        "The paper's Physics data is not available here; ijcnn1 stands in: "
        f"{cfg.runtime_per_class} + {cfg.runtime_per_class} training examples (one draw per class "
        "from ijcnn1's training set) and test sets of "
        f"{', '.join(str(s) for s in cfg.runtime_sizes)} examples (half per class, nested) from "
        "its test set, seed 0; attributes divided by their largest |value| over the training set.",
    )
    _say(
        out,
        f"Fixed parameters: C = {p['C']:g} (every SVM), λ = {p['width']:g} (SLSVM, PSVM; RBF "
        f"gamma = 1/λ = {1 / p['width']:g}), k = {p['k']} (KNN, HLSVM), κ = {p['kappa']} "
        "(PSVM, MagKmeans, transductive: profiles against the test set). localsvm estimators: "
        f"n_jobs = {n_jobs if n_jobs is not None else 'all CPUs'}; scikit-learn's: one thread.",
    )
    params = {
        "SVM": {"C": p["C"], "width": p["width"]},
        "SVM (sklearn)": {"C": p["C"], "width": p["width"]},
        "KNN": {"k": p["k"]},
        "HLSVM": {"k": p["k"], "C": p["C"]},
        "SLSVM": {"width": p["width"], "C": p["C"]},
        "PSVM": {"width": p["width"], "C": p["C"], "kappa": p["kappa"]},
    }
    columns = (*RUNTIME_METHODS, "PSVM clustering")
    times: dict[int, dict[str, float]] = {}
    accs: dict[int, dict[str, float]] = {}
    slsvm_predict: dict[int, float] = {}
    for size in cfg.runtime_sizes:
        Xt, yt = data.X_test[:size], data.y_test[:size]
        times[size], accs[size] = {}, {}
        for method in RUNTIME_METHODS:
            details: dict[str, Any] = {}
            start = time.perf_counter()
            pred = fit_predict(
                method, params[method], data.X, data.y, Xt, n_jobs=n_jobs, details=details
            )
            times[size][method] = time.perf_counter() - start
            accs[size][method] = 100.0 * float(np.mean(pred == yt))
            if method == "PSVM":
                times[size]["PSVM clustering"] = details["clustering"]
            if method == "SLSVM":
                slsvm_predict[size] = details["predict"]
        rows.append({"section": "runtime", "n_test": size, **times[size]})
    header = f"  {'n_test':>6}" + "".join(f"{c:>16}" for c in columns)
    _say(out, header)
    for size in cfg.runtime_sizes:
        _say(out, f"  {size:>6}" + "".join(f"{times[size][c]:>16.3f}" for c in columns))
    _say(out, "Test accuracy (%):")
    _say(out, f"  {'n_test':>6}" + "".join(f"{c:>16}" for c in RUNTIME_METHODS))
    for size in cfg.runtime_sizes:
        _say(out, f"  {size:>6}" + "".join(f"{accs[size][c]:>16.2f}" for c in RUNTIME_METHODS))
        rows.append({"section": "runtime-accuracy", "n_test": size, **accs[size]})
    first, last = cfg.runtime_sizes[0], cfg.runtime_sizes[-1]
    growth = ", ".join(f"{c} ×{times[last][c] / max(times[first][c], 1e-9):.1f}" for c in columns)
    _say(out, f"Growth of the time from {first} to {last} test examples: {growth}.")
    share = times[last]["PSVM clustering"] / times[last]["PSVM"]
    _say(
        out,
        f"PSVM spends {100 * share:.0f} % of its time in MagKmeans at {last} test examples "
        "(the paper: most of it).",
    )
    plot_runtime(cfg.runtime_sizes, times, figdir / "lsvm_runtime.png", out)

    rows += run_bar(cfg, data, slsvm_predict, n_jobs, out)
    return rows


def plot_runtime(
    sizes: Sequence[int], times: dict[int, dict[str, float]], path: Path, out: TextIO
) -> None:
    try:
        from matplotlib.figure import Figure
    except ImportError:
        _say(out, "figure skipped: matplotlib not installed")
        return
    fig = Figure(figsize=(11, 4.2))
    left, right = fig.subplots(1, 2)
    for method in RUNTIME_METHODS:
        left.plot(sizes, [times[s][method] for s in sizes], marker="o", label=method)
    left.set_yscale("log")
    left.set_xlabel("number of test examples")
    left.set_ylabel("fit + predict (s)")
    left.set_title("overall runtime (ijcnn1 for Physics)")
    left.legend(fontsize=8)
    total = [times[s]["PSVM"] for s in sizes]
    clus = [times[s]["PSVM clustering"] for s in sizes]
    right.plot(sizes, total, marker="o", label="PSVM (total)")
    right.plot(sizes, clus, marker="s", label="PSVM clustering")
    right.plot(
        sizes,
        [t - c for t, c in zip(total, clus, strict=True)],
        marker="^",
        label="PSVM without clustering",
    )
    right.plot(sizes, [times[s]["SVM"] for s in sizes], marker="x", ls="--", label="SVM")
    right.set_xlabel("number of test examples")
    right.set_ylabel("s")
    right.set_title("PSVM: clustering vs the rest")
    right.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    _say(out, f"saved {path}")


def _best_time(fn: Callable[[], np.ndarray], repeat: int) -> tuple[float, np.ndarray]:
    best, pred = np.inf, None
    for _ in range(max(1, repeat)):
        start = time.perf_counter()
        pred = fn()
        best = min(best, time.perf_counter() - start)
    assert pred is not None
    return best, pred


def run_bar(
    cfg: Config,
    data: RuntimeData,
    slsvm_predict: dict[int, float],
    n_jobs: int | None,
    out: TextIO,
) -> list[dict]:
    n_train = data.y.shape[0]
    n_test = max(cfg.runtime_sizes)
    X, y, Xt, yt = data.X, data.y, data.X_test, data.y_test
    _heading(out, f"Performance bar (issue 4), {n_train} training / {n_test} test examples")
    rows: list[dict] = []
    per_example = 1000.0 * slsvm_predict[n_test] / n_test
    _say(
        out,
        f"(a) SLSVM prediction: {slsvm_predict[n_test]:.3f} s for {n_test} test examples = "
        f"{per_example:.3f} ms per test example (n = {n_train} training examples, "
        f"λ = {RUNTIME_PARAMS['width']:g}, C = {RUNTIME_PARAMS['C']:g}).",
    )
    rows.append(
        {
            "section": "bar",
            "what": "SLSVM ms per test example",
            "value": per_example,
            "n_train": n_train,
            "n_test": n_test,
        }
    )
    m = median_sq_distance(X)
    splits = list(StratifiedKFold(cfg.folds, shuffle=True, random_state=0).split(X, y))
    svm_grid = [{"C": c, "width": w} for c in cfg.svm_C for w in cfg.svm_width]
    psvm_grid = [
        {"width": w, "C": c, "kappa": k}
        for w in cfg.psvm_width
        for c in cfg.psvm_C
        for k in cfg.bar_psvm_kappa
    ]
    _say(
        out,
        f"(b) Both tuned by the same {cfg.folds}-fold stratified CV (shuffled, seed 0) on the "
        f"{n_train} training examples, widths as f·m (m = {m:.3f}):",
    )
    _say(out, f"    RBF SVC {len(svm_grid)} points: {grid_text(svm_grid)}")
    _say(out, f"    PSVM    {len(psvm_grid)} points: {grid_text(psvm_grid)} (transductive)")
    cv_svm = cross_validate("SVM", svm_grid, X, y, splits, m=m, n_jobs=n_jobs, seed=0)
    cv_sk = cross_validate("SVM (sklearn)", svm_grid, X, y, splits, m=m, n_jobs=n_jobs, seed=0)
    cv_psvm = cross_validate("PSVM", psvm_grid, X, y, splits, m=m, n_jobs=n_jobs, seed=0)
    for label, cv in (
        ("localsvm SVC", cv_svm),
        ("sklearn SVC", cv_sk),
        ("PSVM", cv_psvm),
    ):
        _say(
            out,
            f"    CV tuning {label:<13} {cv.seconds:>7.2f} s, chose {describe(cv.best)} "
            f"(CV accuracy {100 * cv.scores.max():.2f} %)",
        )
        rows.append(
            {
                "section": "bar-cv",
                "model": label,
                "seconds": cv.seconds,
                "chosen": describe(cv.best),
                "cv_accuracy": 100 * float(cv.scores.max()),
            }
        )
    _say(
        out,
        f"    fit + predict on the {n_test} test examples with the chosen parameters "
        f"(best of {cfg.bar_repeat}):",
    )
    runs = {
        "PSVM": ("PSVM", cv_psvm.best),
        "localsvm SVC": ("SVM", cv_svm.best),
        "sklearn SVC": ("SVM (sklearn)", cv_sk.best),
        "PSVM inductive (info)": ("PSVM (inductive)", cv_psvm.best),
    }
    measured: dict[str, tuple[float, float]] = {}
    for label, (method, params) in runs.items():
        seconds, pred = _best_time(
            lambda method=method, params=params: fit_predict(
                method, params, X, y, Xt, m=m, n_jobs=n_jobs, seed=0
            ),
            cfg.bar_repeat,
        )
        acc = 100.0 * float(np.mean(pred == yt))
        measured[label] = (seconds, acc)
        _say(out, f"    {label:<22} {seconds:>8.3f} s   accuracy {acc:6.2f} %")
        rows.append(
            {
                "section": "bar-time",
                "model": label,
                "seconds": seconds,
                "accuracy": acc,
                "params": describe(params),
            }
        )
    p_s, p_a = measured["PSVM"]
    for label in ("sklearn SVC", "localsvm SVC"):
        s, a = measured[label]
        faster, no_worse = p_s < s, p_a >= a
        verdict = "PASS" if faster and no_worse else "FAIL"
        info = "" if label == "sklearn SVC" else " (for information)"
        _say(
            out,
            f"    {verdict}{info}: PSVM vs {label}: time ratio PSVM/{label} = {p_s / s:.2f} "
            f"({'faster' if faster else 'slower'}), accuracy {p_a:.2f} vs {a:.2f} % "
            f"({'no worse' if no_worse else 'worse'})",
        )
        rows.append(
            {
                "section": "bar-verdict",
                "against": label,
                "verdict": verdict,
                "time_ratio": p_s / s,
                "psvm_accuracy": p_a,
                "svc_accuracy": a,
                "faster": faster,
                "no_worse": no_worse,
            }
        )
    return rows


# ----------------------------------------------------------------- Figure 3


def run_boundary(cfg: Config, figdir: Path, out: TextIO) -> list[dict]:
    _heading(out, "Figure 3: PSVM's piecewise-linear boundary on Banana")
    b = load_banana(0)
    p = BANANA_PARAMS
    model = ProfileSVC(
        C=p["C"], bandwidth=p["bandwidth"], n_clusters=p["n_clusters"], random_state=0
    ).fit(b.X_train, b.y_train)
    acc = 100.0 * float(model.score(b.X_test, b.y_test))
    _say(
        out,
        f"Banana realization 0 ({b.y_train.shape[0]} train / {b.y_test.shape[0]} test), "
        f"ProfileSVC inductive, κ = {p['n_clusters']} (the paper's 11 pieces), "
        f"λ = {p['bandwidth']:g}, C = {p['C']:g}: test accuracy {acc:.2f} %; "
        f"cluster sizes {model.cluster_sizes_.tolist()}",
    )
    row = {"section": "figure3", "accuracy": acc, "cluster_sizes": model.cluster_sizes_.tolist()}
    try:
        from matplotlib.figure import Figure
    except ImportError:
        _say(out, "figure skipped: matplotlib not installed")
        return [row]
    X = b.X_train
    lo, hi = X.min(0) - 0.3, X.max(0) + 0.3
    gx, gy = np.meshgrid(
        np.linspace(lo[0], hi[0], cfg.grid_points), np.linspace(lo[1], hi[1], cfg.grid_points)
    )
    grid = np.column_stack([gx.ravel(), gy.ravel()])
    pred = np.concatenate([model.predict(grid[i : i + 10000]) for i in range(0, len(grid), 10000)])
    zz = (pred == model.classes_[1]).astype(float).reshape(gx.shape)
    fig = Figure(figsize=(6.4, 5.4))
    ax = fig.subplots()
    ax.contourf(gx, gy, zz, levels=[-0.5, 0.5, 1.5], colors=["#dce9f5", "#f8e0d8"])
    ax.contour(gx, gy, zz, levels=[0.5], colors="k", linewidths=1.0)
    k = int(p["n_clusters"])
    import matplotlib

    cmap = matplotlib.colormaps["tab20"].resampled(max(k, 2))
    for cls, marker in zip(model.classes_, ("o", "*"), strict=True):
        sel = b.y_train == cls
        ax.scatter(
            X[sel, 0],
            X[sel, 1],
            c=[cmap(c) for c in model.cluster_labels_[sel]],
            marker=marker,
            s=22 if marker == "o" else 40,
            edgecolors="k",
            linewidths=0.3,
            label=f"class {cls:+d}",
        )
    ax.set_title(
        f"PSVM on Banana, κ = {k}: test accuracy {acc:.1f} %\n"
        "background: predicted class; points: training clusters",
        fontsize=9,
    )
    ax.legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    path = figdir / "lsvm_psvm_boundary.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    _say(out, f"saved {path}")
    return [row]


# ---------------------------------------------------------------------- CLI


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--quick",
        action="store_true",
        help="2 repetitions, 3 folds, tiny grids, 150 + 150 training / 300, 600 test for "
        "Figure 4: a smoke run of seconds",
    )
    parser.add_argument("--repetitions", type=int, default=None, help="Table 1 repetitions (10)")
    parser.add_argument("--folds", type=int, default=None, help="CV folds (10)")
    parser.add_argument(
        "--out", default="localsvm-figures", help="folder for the images (localsvm-figures)"
    )
    parser.add_argument(
        "--datasets",
        default=",".join(DATASETS),
        help=f"comma-separated Table 1 data sets ({','.join(DATASETS)})",
    )
    parser.add_argument("--skip-table", action="store_true", help="skip Table 1")
    parser.add_argument(
        "--skip-runtime", action="store_true", help="skip Figure 4 and the performance bar"
    )
    parser.add_argument("--skip-figure", action="store_true", help="skip Figure 3")
    parser.add_argument(
        "--bar-repeat", type=int, default=None, help="timed runs per model in the bar (best kept)"
    )
    parser.add_argument(
        "--n-jobs", type=int, default=None, help="threads for localsvm and the CV (all CPUs)"
    )


def run(args: argparse.Namespace, out: TextIO) -> list[dict]:
    start = time.perf_counter()
    cfg = config(args)
    figdir = Path(args.out)
    title = "Localized SVM (seed 000) reproduced: Table 1, Figures 3 and 4"
    _say(out, title)
    _say(out, "#" * len(title))
    if args.quick:
        _say(out, "--quick: small grids and sizes, not the paper's protocol")
    rows: list[dict] = []
    if not args.skip_table:
        names = [n.strip() for n in args.datasets.split(",") if n.strip()]
        rows += run_table(cfg, names, args.n_jobs, out)
    if not args.skip_runtime:
        rows += run_runtime(cfg, args.n_jobs, figdir, out)
    if not getattr(args, "skip_figure", False):
        rows += run_boundary(cfg, figdir, out)
    _say(out)
    _say(out, f"total time: {time.perf_counter() - start:.1f} s")
    return rows
