"""Table 1: accuracy of the five methods on the bundled data sets, printed
beside the paper's figures."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from typing import Any, TextIO

import numpy as np
from sklearn.model_selection import StratifiedKFold, train_test_split

from .data import load_binary, max_scaler, median_sq_distance
from .protocol import METHODS, Config, cross_validate, fit_predict, grids
from .report import describe, grid_text, heading, say

#: The source the printed summary names.
PAPER_SOURCE = "Cheng, Tan & Jin, SDM 2007, Table 1"

#: Table 1 of Cheng, Tan and Jin (SDM 2007): accuracy (%) per data set and method.
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

#: The paper's data sets that are not bundled (their rows show the paper's figures only).
UNAVAILABLE = ("KDDCup", "Physics", "Robot", "Covtype")


def run_table(cfg: Config, datasets: Sequence[str], n_jobs: int | None, out: TextIO) -> list[dict]:
    """Reproduce Table 1 and print it beside the paper's figures.

    Each repetition splits every data set 1/5 train, 4/5 test (stratified),
    scales it by the training part's column maxima, tunes every method by
    stratified cross-validation on the training part and scores it on the
    test part.

    Parameters
    ----------
    cfg : Config
        Repetitions, folds and grids.
    datasets : sequence of str
        Names from :data:`~localsvm.experiments.lsvm.DATASETS`.
    n_jobs : int or None
        Threads for the cross-validation and the final fits.
    out : TextIO
        Where the table is printed.

    Returns
    -------
    rows : list of dict
        One ``"table1"`` row per data set and method: the accuracies, their
        mean and standard deviation, the paper's figure and the parameters
        chosen most often.
    """
    heading(out, "Table 1: accuracy (%), 1/5 train, 4/5 test")
    say(
        out,
        f"{cfg.repetitions} repetitions (stratified split, random_state = repetition); parameters "
        f"by {cfg.folds}-fold stratified CV on the training part; attributes divided by their "
        "largest |value| over the training part; λ (SLSVM, PSVM bandwidth; RBF gamma = 1/λ) as "
        "f·m, m = median squared distance between training examples.",
    )
    say(out, "Grids:")
    for method, grid in grids(cfg, 10**9).items():
        say(out, f"  {method:<6} {len(grid):>3} points: " + grid_text(grid))
    say(out, "Class groups (+1 vs −1):")
    data = [load_binary(name) for name in datasets]
    for d in data:
        n_pos = int(np.sum(d.y == 1))
        say(
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
                cv = cross_validate(
                    method, grid, X_tr, y_tr, splits, m=m, n_jobs=n_jobs, random_state=rep
                )
                cv_time[method] += cv.seconds
                pred = fit_predict(
                    method, cv.best, X_tr, y_tr, X_te, m=m, n_jobs=n_jobs, random_state=rep
                )
                accs[method].append(100.0 * float(np.mean(pred == y_te)))
                chosen[method].append(describe(cv.best))
        seconds = time.perf_counter() - start
        say(out)
        say(
            out,
            f"{d.name}: {d.y.shape[0]} examples ({n_train} train / {d.y.shape[0] - n_train} test), "
            f"{d.X.shape[1]} attributes, CV folds used: "
            f"{', '.join(str(f) for f in sorted(folds_used))}; {seconds:.1f} s",
        )
        say(
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
            say(
                out,
                f"  {method:<6} {mean:>10.2f} ± {std:>5.2f} {paper:>7.2f} {mean - paper:>+7.2f}  "
                f"{cv_time[method]:>6.1f}  {top} ({count}/{a.size})",
            )
        say(
            out,
            f"  protocol ({d.name}): paper: 1/5 train, 4/5 test, ten trials, parameters "
            "(κ included) by 10-fold CV, grids and class groups not given; ours: the same "
            f"split sizes and CV ({cfg.repetitions} trials), the grids and class groups "
            "printed above",
        )
    # The paper's layout: one row per data set, ours [paper].
    say(out)
    say(out, f"Summary, ours [paper, {PAPER_SOURCE}]:")
    say(out, f"  {'data':<8}" + "".join(f"{meth:>17}" for meth in METHODS))
    for d in data:
        cells = "".join(
            f"{results[(d.name, meth)]['mean']:>8.2f} [{PAPER[d.name][meth]:>6.2f}]"
            for meth in METHODS
        )
        say(out, f"  {d.name:<8}{cells}")
    for name in UNAVAILABLE:
        cells = "".join(f"{'—':>8} [{PAPER[name.lower()][meth]:>6.2f}]" for meth in METHODS)
        say(out, f"  {name:<8}{cells}")
    say(
        out,
        f"{', '.join(UNAVAILABLE[:-1])} and {UNAVAILABLE[-1]} are not available here "
        "(not bundled with localsvm): their rows show the paper's figures only.",
    )
    return rows
