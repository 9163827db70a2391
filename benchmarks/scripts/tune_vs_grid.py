"""SVCCV / SVRCV against GridSearchCV on the same grid and folds.

Usage::

    python benchmarks/scripts/tune_vs_grid.py [--rows 5000] [--grid 10] [--folds 5]
        [--jobs 2] [--task svc|svr] [--cv-tol TOL] [--skip-grid]

Classification: ``--rows`` rows of a9a (``localsvm.datasets.load_a9a``),
standardized, a held-out test set of the same size drawn from the rest;
``C = 10^-1 … 10^3`` and ``gamma = γ_scale · 10^-2 … 10^1.5``, ``--grid``
log-spaced values each, ``--folds`` stratified folds. Prints both searches'
seconds, their ratio, the chosen parameters, the chosen candidates' CV
scores (and the gap to the grid's best) and their test accuracies.
Regression (``--task svr``): the same on a friedman1 sample with a
3-value epsilon grid.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from sklearn.datasets import make_friedman1
from sklearn.model_selection import GridSearchCV, KFold, StratifiedKFold
from sklearn.preprocessing import StandardScaler

import localsvm
from localsvm.datasets import load_a9a


def a9a(rows: int, seed: int = 0):
    X, y = load_a9a(return_X_y=True)
    X = X.toarray() if hasattr(X, "toarray") else np.asarray(X)
    rng = np.random.RandomState(seed)
    idx = rng.permutation(len(y))
    tr, te = idx[:rows], idx[rows : 2 * rows]
    scaler = StandardScaler().fit(X[tr])
    return scaler.transform(X[tr]), y[tr], scaler.transform(X[te]), y[te]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=5000)
    ap.add_argument("--grid", type=int, default=10)
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--task", choices=("svc", "svr"), default="svc")
    ap.add_argument("--cv-tol", type=float, default=None)
    ap.add_argument("--skip-grid", action="store_true")
    a = ap.parse_args()
    print(
        f"load: {os.getloadavg()[0]:.2f}; {a.task}, {a.rows} rows, grid {a.grid}, {a.folds} folds"
    )
    if a.task == "svc":
        X, y, Xt, yt = a9a(a.rows)
        gs = 1.0 / (X.shape[1] * X.var())
        Cs = np.logspace(-1, 3, a.grid)
        gammas = gs * np.logspace(-2, 1.5, a.grid)
        folds = StratifiedKFold(a.folds)
        grid = {"C": Cs, "gamma": gammas}
        base = localsvm.SVC(n_jobs=1)
        search = localsvm.SVCCV(
            Cs=Cs, gammas=gammas, cv=folds, n_jobs=a.jobs, cv_tol=a.cv_tol, random_state=0
        )
    else:
        X, y = make_friedman1(n_samples=2 * a.rows, noise=1.0, random_state=0)
        X, y, Xt, yt = X[: a.rows], y[: a.rows], X[a.rows :], y[a.rows :]
        gs = 1.0 / (X.shape[1] * X.var())
        Cs = np.std(y) * np.logspace(-1, 3, a.grid)
        gammas = gs * np.logspace(-2, 1.5, a.grid)
        eps = np.std(y) * np.logspace(-2.5, -0.5, 3)
        folds = KFold(a.folds)
        grid = {"C": Cs, "epsilon": eps, "gamma": gammas}
        base = localsvm.SVR(n_jobs=1)
        search = localsvm.SVRCV(
            Cs=Cs, gammas=gammas, epsilons=eps, cv=folds, n_jobs=a.jobs, cv_tol=a.cv_tol
        )
    t, c = time.perf_counter(), time.process_time()
    search.fit(X, y)
    t_cv, c_cv = time.perf_counter() - t, time.process_time() - c
    print(
        f"{type(search).__name__}: {t_cv:.2f} s ({c_cv:.2f} s CPU), best {search.best_params_}, "
        f"cv {search.best_score_:.4f}, test {search.score(Xt, yt):.4f}"
    )
    if a.skip_grid:
        return
    t, c = time.perf_counter(), time.process_time()
    g = GridSearchCV(base, grid, cv=folds, n_jobs=a.jobs).fit(X, y)
    t_grid, c_grid = time.perf_counter() - t, time.process_time() - c
    ours = g.cv_results_["mean_test_score"][search.best_index_]
    # With --jobs 1 both run in this process, so their CPU seconds compare
    # even on a loaded machine; GridSearchCV's workers are other processes.
    cpu = f" ({c_grid:.2f} s CPU)" if a.jobs == 1 else ""
    print(
        f"GridSearchCV: {t_grid:.2f} s{cpu}, best {g.best_params_}, cv {g.best_score_:.4f}, "
        f"test {g.score(Xt, yt):.4f}"
    )
    if a.jobs == 1:
        print(f"CPU-time ratio {c_grid / c_cv:.2f}x")
    diff = np.abs(g.cv_results_["mean_test_score"] - search.cv_results_["mean_test_score"])
    print(
        f"speed-up {t_grid / t_cv:.2f}x; grid's CV score of our choice {ours:.4f} "
        f"(best {g.best_score_:.4f}, gap {g.best_score_ - ours:.4f}); max |CV score "
        f"difference| over the grid {np.nanmax(diff):.4f}"
    )


if __name__ == "__main__":
    main()
