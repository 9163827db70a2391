"""Figure 4 (runtime against the number of test examples) and the
speed comparison (PSVM against a tuned SVC) on the same data."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TextIO

import numpy as np
from localsvm_benchmarks.report import Column, print_table, timed
from sklearn.model_selection import StratifiedKFold

from .data import RuntimeData, median_sq_distance, runtime_data
from .figures import plot_runtime
from .protocol import RUNTIME_METHODS, RUNTIME_PARAMS, Config, cross_validate, fit_predict
from .report import describe, grid_text, heading, say


def run_runtime(cfg: Config, n_jobs: int | None, figdir: Path, out: TextIO) -> list[dict]:
    """Time every method on growing test sets (Figure 4), then PSVM against a tuned SVC.

    Parameters
    ----------
    cfg : Config
        The sizes of the training and test sets.
    n_jobs : int or None
        Threads for localsvm's estimators.
    figdir : Path
        The folder for ``lsvm_runtime.png``.
    out : TextIO
        Where the timing tables are printed.

    Returns
    -------
    rows : list of dict
        ``"runtime"`` and ``"runtime-accuracy"`` rows per test-set size, then
        the rows of :func:`run_speed`.
    """
    rows: list[dict] = []
    data = runtime_data(cfg)
    p = RUNTIME_PARAMS
    heading(out, "Figure 4: runtime (s, fit + predict) against the number of test examples")
    say(
        out,
        "The paper's Physics data is not available here; ijcnn1 stands in: "
        f"{cfg.runtime_per_class} + {cfg.runtime_per_class} training examples (one draw per class "
        "from ijcnn1's training set) and test sets of "
        f"{', '.join(str(s) for s in cfg.runtime_sizes)} examples (half per class, nested) from "
        "its test set, random_state 0; attributes divided by their largest |value| over the "
        "training set.",
    )
    say(
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
            pred, times[size][method] = timed(
                lambda method=method, Xt=Xt, details=details: fit_predict(
                    method, params[method], data.X, data.y, Xt, n_jobs=n_jobs, details=details
                )
            )
            accs[size][method] = 100.0 * float(np.mean(pred == yt))
            if method == "PSVM":
                times[size]["PSVM clustering"] = details["clustering"]
            if method == "SLSVM":
                slsvm_predict[size] = details["predict"]
        rows.append({"section": "runtime", "n_test": size, **times[size]})
    layout = [Column("n_test", ">6")] + [Column(c, ">15.3f") for c in columns]
    lines = [(size, *(times[size][c] for c in columns)) for size in cfg.runtime_sizes]
    print_table(layout, lines, out, indent="  ", rule=False)
    say(out, "Test accuracy (%):")
    layout = [Column("n_test", ">6")] + [Column(c, ">15.2f") for c in RUNTIME_METHODS]
    lines = [(size, *(accs[size][c] for c in RUNTIME_METHODS)) for size in cfg.runtime_sizes]
    print_table(layout, lines, out, indent="  ", rule=False)
    for size in cfg.runtime_sizes:
        rows.append({"section": "runtime-accuracy", "n_test": size, **accs[size]})
    first, last = cfg.runtime_sizes[0], cfg.runtime_sizes[-1]
    rows.append(paper_statements(times, first, last, out))
    plot_runtime(cfg.runtime_sizes, times, figdir / "lsvm_runtime.png", out)

    rows += run_speed(cfg, data, slsvm_predict, n_jobs, out)
    return rows


def paper_statements(
    times: dict[int, dict[str, float]], first: int, last: int, out: TextIO
) -> dict:
    """Print our figures beside the three things the paper says of Figure 4.

    Cheng, Tan & Jin (SDM 2007, §5.2.2) give no numbers for Figure 4, only
    three statements: HLSVM's and SLSVM's runtimes grow rapidly with the
    number of test examples while PSVM's "grows more gradually"; PSVM
    "spends the majority of its time clustering"; and without the
    clustering, PSVM's training and prediction are faster than the
    nonlinear SVM's (the right-bottom panel). This prints our measurement of
    each, with no verdict.

    Parameters
    ----------
    times : dict
        Seconds per test-set size and column (``"PSVM clustering"`` included).
    first, last : int
        The smallest and the largest test-set size.
    out : TextIO
        Where the lines are printed.

    Returns
    -------
    row : dict
        The ``"runtime-statements"`` row: growth factors, PSVM's clustering
        share and PSVM's time without clustering against the SVM's.
    """
    growth = {c: times[last][c] / max(times[first][c], 1e-9) for c in times[last]}
    say(out, "Against the paper's statements on Figure 4 (it gives no figures), ours:")
    say(
        out,
        f"  growth of the time from {first} to {last} test examples (paper: HLSVM and SLSVM "
        "grow rapidly, PSVM more gradually): "
        + ", ".join(f"{c} ×{g:.1f}" for c, g in growth.items()),
    )
    share = times[last]["PSVM clustering"] / max(times[last]["PSVM"], 1e-12)
    say(
        out,
        f"  PSVM's share of time in MagKmeans at {last} test examples (paper: the majority): "
        f"{100 * share:.0f} %",
    )
    rest = times[last]["PSVM"] - times[last]["PSVM clustering"]
    say(
        out,
        f"  PSVM without clustering at {last} test examples (paper: less time than the nonlinear "
        f"SVM's): {rest:.3f} s against the SVM's {times[last]['SVM']:.3f} s (localsvm) and "
        f"{times[last]['SVM (sklearn)']:.3f} s (scikit-learn)",
    )
    ratio = times[last]["PSVM"] / max(times[last]["SLSVM"], 1e-12)
    say(
        out,
        f"  PSVM/SLSVM fit + predict at {last} test examples (ours; the paper gives no ratio): "
        f"{ratio:.2f}",
    )
    return {
        "section": "runtime-statements",
        "n_test": last,
        "growth": growth,
        "clustering_share": share,
        "psvm_without_clustering": rest,
        "svm": times[last]["SVM"],
        "svm_sklearn": times[last]["SVM (sklearn)"],
        "psvm_over_slsvm": ratio,
    }


def run_speed(
    cfg: Config,
    data: RuntimeData,
    slsvm_predict: dict[int, float],
    n_jobs: int | None,
    out: TextIO,
) -> list[dict]:
    """Time PSVM against a tuned SVC on the Figure-4 data.

    (a) SLSVM's prediction time per test example; (b) PSVM against an RBF
    SVC (localsvm's and scikit-learn's), each tuned by the same
    cross-validation, then fitted and applied to the largest test set:
    PSVM's time as a multiple of each SVC's, and both accuracies.

    Parameters
    ----------
    cfg : Config
        Folds, grids and timed repeats.
    data : RuntimeData
        The Figure-4 data.
    slsvm_predict : dict of int to float
        SLSVM's prediction time (s) per test-set size, from :func:`run_runtime`.
    n_jobs : int or None
        Threads for localsvm's estimators and the cross-validation.
    out : TextIO
        Where the measurements are printed.

    Returns
    -------
    rows : list of dict
        The ``"speed"``, ``"speed-cv"``, ``"speed-time"`` and ``"speed-compare"`` rows.
    """
    n_train = data.y.shape[0]
    n_test = max(cfg.runtime_sizes)
    X, y, Xt, yt = data.X, data.y, data.X_test, data.y_test
    heading(out, f"PSVM against a tuned SVC, {n_train} training / {n_test} test examples")
    rows: list[dict] = []
    per_example = 1000.0 * slsvm_predict[n_test] / n_test
    say(
        out,
        f"(a) SLSVM prediction: {slsvm_predict[n_test]:.3f} s for {n_test} test examples = "
        f"{per_example:.3f} ms per test example (n = {n_train} training examples, "
        f"λ = {RUNTIME_PARAMS['width']:g}, C = {RUNTIME_PARAMS['C']:g}).",
    )
    rows.append(
        {
            "section": "speed",
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
        for k in cfg.speed_psvm_kappa
    ]
    say(
        out,
        f"(b) Both tuned by the same {cfg.folds}-fold stratified CV (shuffled, random_state 0) "
        f"on the {n_train} training examples, widths as f·m (m = {m:.3f}):",
    )
    say(out, f"    RBF SVC {len(svm_grid)} points: {grid_text(svm_grid)}")
    say(out, f"    PSVM    {len(psvm_grid)} points: {grid_text(psvm_grid)} (transductive)")
    cv_svm = cross_validate("SVM", svm_grid, X, y, splits, m=m, n_jobs=n_jobs, random_state=0)
    cv_sk = cross_validate(
        "SVM (sklearn)", svm_grid, X, y, splits, m=m, n_jobs=n_jobs, random_state=0
    )
    cv_psvm = cross_validate("PSVM", psvm_grid, X, y, splits, m=m, n_jobs=n_jobs, random_state=0)
    for label, cv in (
        ("localsvm SVC", cv_svm),
        ("sklearn SVC", cv_sk),
        ("PSVM", cv_psvm),
    ):
        say(
            out,
            f"    CV tuning {label:<13} {cv.seconds:>7.2f} s, chose {describe(cv.best)} "
            f"(CV accuracy {100 * cv.scores.max():.2f} %)",
        )
        rows.append(
            {
                "section": "speed-cv",
                "model": label,
                "seconds": cv.seconds,
                "chosen": describe(cv.best),
                "cv_accuracy": 100 * float(cv.scores.max()),
            }
        )
    say(
        out,
        f"    fit + predict on the {n_test} test examples with the chosen parameters "
        f"(best of {cfg.speed_repeat}):",
    )
    runs = {
        "PSVM": ("PSVM", cv_psvm.best),
        "localsvm SVC": ("SVM", cv_svm.best),
        "sklearn SVC": ("SVM (sklearn)", cv_sk.best),
        "PSVM inductive (info)": ("PSVM (inductive)", cv_psvm.best),
    }
    measured: dict[str, tuple[float, float]] = {}
    for label, (method, params) in runs.items():
        pred, seconds = timed(
            lambda method=method, params=params: fit_predict(
                method, params, X, y, Xt, m=m, n_jobs=n_jobs, random_state=0
            ),
            cfg.speed_repeat,
        )
        acc = 100.0 * float(np.mean(pred == yt))
        measured[label] = (seconds, acc)
        say(out, f"    {label:<22} {seconds:>8.3f} s   accuracy {acc:6.2f} %")
        rows.append(
            {
                "section": "speed-time",
                "model": label,
                "seconds": seconds,
                "accuracy": acc,
                "params": describe(params),
            }
        )
    p_s, p_a = measured["PSVM"]
    for label in ("sklearn SVC", "localsvm SVC"):
        s, a = measured[label]
        info = "" if label == "sklearn SVC" else " (for information)"
        say(
            out,
            f"    PSVM against {label}{info}: time ratio PSVM/{label} = {p_s / s:.2f}, "
            f"accuracy {p_a:.2f} vs {a:.2f} %",
        )
        rows.append(
            {
                "section": "speed-compare",
                "against": label,
                "time_ratio": p_s / s,
                "psvm_accuracy": p_a,
                "svc_accuracy": a,
            }
        )
    return rows
