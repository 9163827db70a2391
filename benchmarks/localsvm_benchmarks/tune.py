"""``python -m localsvm bench tune``: the time to a tuned RBF SVM, from the
data to the refitted model, for localsvm's ``SVCCV`` and the usual routes.

Data: a9a, ijcnn1 and USPS from :mod:`localsvm.datasets`, each subsampled to
``sizes`` training rows (drawn without replacement by
``numpy.random.default_rng(0)`` from its own training split; all of them
when it has fewer) and standardized on those rows (``StandardScaler``); the
test accuracy is measured on the set's own test split, transformed the same
way (all of it, or a fixed random ``n_test`` rows of it).

The grid: ``C`` log-spaced over 10⁻¹ … 10³ and ``gamma`` log-spaced over
``γ_scale · 10⁻² … γ_scale · 10^1.5`` (10 × 10 by default), where ``γ_scale
= 1 / (n_features · X.var())`` is scikit-learn's ``gamma='scale'`` on the
standardized training rows; 5 folds of ``StratifiedKFold(5, shuffle=True,
random_state=0)``, the same splits for every route; accuracy scores.

Routes, each timed from the data to the refitted model (search and refit):

- ``SVCCV``: localsvm's cross-validated SVC on that grid and those folds;
- ``GridSearchCV`` over localsvm's ``SVC(n_jobs=1)``, scikit-learn's ``SVC``
  (LIBSVM; only up to ``max_sklearn`` rows, it takes minutes per search
  beyond) and scikit-learn-intelex's ``SVC`` (oneDAL; up to
  ``max_sklearnex`` rows), each with ``n_jobs=2``;
- liquidSVM's ``mcSVM`` (I. Steinwart & P. Thomann, "liquidSVM: A Fast and
  Versatile SVM Package", arXiv:1702.06899, 2017) on its own default 10 × 10
  grid and 5 folds, next to ``SVCCV`` on its own default grid, the like
  for like of the two packages' defaults. liquidSVM keeps one model per fold
  (each fold picks its own λ and γ) and lets them vote; its chosen values
  are shown as the median over the folds in localsvm's terms: ``C = 1 /
  (2 λ n_fold)`` and ``gamma = 1 / g²`` for its kernel ``exp(-‖x - x'‖² /
  g²)``.

Columns: time to the tuned model, that time over ``SVCCV``'s on the same
grid (over ``SVCCV``'s default grid for liquidSVM), the best mean CV score
and its difference to ``SVCCV``'s, the test accuracy and its difference in
points, and the chosen ``C`` and ``gamma``. A route that is not installed is
named and skipped. Before each timed search, the same route runs untimed on
a small slice (so process pools and lazy imports start outside the timing).

``SVRCV`` against ``GridSearchCV`` over localsvm's ``SVR``: on scikit-learn's
``make_friedman1`` regression problem (J. H. Friedman, "Multivariate Adaptive
Regression Splines", The Annals of Statistics 19(1), 1991; 10 features,
noise 1), its features and target standardized on the training rows,
``svr_rows`` training and as many test rows, a ``C × gamma × epsilon`` grid
(``epsilon`` log-spaced over 10⁻² … 10^-0.5 of the standardized target),
``KFold(5, shuffle=True, random_state=0)``, R² scores.

At 200 000 rows of ``bench scale``'s generated problem (``cells_rows``;
slow, off by default): ``CellSVC(tune=True)`` (each cell choosing its own
``C`` and ``gamma`` by cross-validation, as liquidSVM's cells do) and
``CellSVC(tune=False)``, both with their default settings, against the
usual workflow of ``SVCCV`` on a ``cells_subsample``-row subsample (this
bench's grid and folds) followed by one global ``SVC`` at the chosen values
on every row; total time and test accuracy, and for ``CellSVC`` the median
of its cells' ``C`` and ``gamma``. ``cells_params`` adds a row of
``CellSVC(tune=True)`` with those settings besides (e.g. ``tune_size=5000,
Cs=10``: each cell's search on more rows, with a finer ``C`` grid).
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import os
import sys
import sysconfig
import warnings
from collections.abc import Iterator, Sequence
from typing import Any, TextIO

import numpy as np

from .data import N_TEST, generated
from .report import columns, timed
from .report import print_table as print_columns

#: Data sets of the classification tables.
TUNE_DATASETS = ("a9a", "ijcnn1", "usps")
#: Training rows per data set.
TUNE_SIZES = (5_000, 20_000)
#: Peers beside ``SVCCV``: GridSearchCV over localsvm's, scikit-learn's and
#: scikit-learn-intelex's SVC, and liquidSVM's own tuning.
TUNE_PEERS = ("localsvm", "sklearn", "sklearnex", "liquidsvm")
#: Processes (GridSearchCV), threads (localsvm, liquidSVM) of every route.
N_JOBS = 2
#: Cross-validation folds.
N_FOLDS = 5
#: Points of the grid: (C values, gamma values).
GRID = (10, 10)
#: log10 of the ends of the C range.
C_RANGE = (-1.0, 3.0)
#: log10 of the ends of the gamma range, in units of ``γ_scale``.
GAMMA_RANGE = (-2.0, 1.5)
#: log10 of the ends of the epsilon range, in units of the target's
#: standard deviation (1 after standardization).
EPSILON_RANGE = (-2.0, -0.5)
#: GridSearchCV over scikit-learn's SVC runs up to this many training rows.
MAX_SKLEARN = 5_000
#: GridSearchCV over scikit-learn-intelex's SVC runs up to this many rows.
MAX_SKLEARNEX = 20_000
#: The SVR grid: (C values, gamma values, epsilon values).
SVR_GRID = (5, 5, 4)
#: Training (and test) rows of the regression problem.
SVR_ROWS = 5_000
#: Training rows of the generated problem of the CellSVC part.
CELLS_ROWS = 200_000
#: Rows SVCCV tunes on before the global SVC in that part.
CELLS_SUBSAMPLE = 20_000
#: Rows of the untimed warm-up run of each route.
WARMUP_ROWS = 200

ROUTE_NAMES = {
    "svccv": "SVCCV",
    "localsvm": "GridSearchCV localsvm SVC",
    "sklearn": "GridSearchCV sklearn SVC",
    "sklearnex": "GridSearchCV sklearnex SVC",
    "svccv-own": "SVCCV (own grid)",
    "liquidsvm": "liquidSVM mcSVM (own grid)",
}


# ---------------------------------------------------------------- the peers


@contextlib.contextmanager
def so_suffix_shim() -> Iterator[None]:
    """Within the block, ``sysconfig.get_config_var('SO')`` answers the
    extension suffix (``'EXT_SUFFIX'``): Python 3.10 and later answer None for
    'SO', which liquidSVM's loader still asks for to find its library."""
    original = sysconfig.get_config_var

    def get_config_var(name: str, *rest: Any) -> Any:
        value = original(name, *rest)
        if name == "SO" and value is None:
            return original("EXT_SUFFIX")
        return value

    sysconfig.get_config_var = get_config_var
    try:
        yield
    finally:
        sysconfig.get_config_var = original


def load_liquidsvm() -> tuple[Any | None, str]:
    """liquidSVM's Python module, or None and why it cannot be used."""
    try:
        with so_suffix_shim(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # its pkg_resources import warns
            module = importlib.import_module("liquidSVM")
    except ImportError:
        return None, "not installed (pip install liquidsvm)"
    except Exception as exc:  # its loader fails as a NameError when no library is found
        return None, f"not usable ({type(exc).__name__}: {exc})"
    if not hasattr(module, "mcSVM"):
        return None, "not usable (the module has no mcSVM)"
    return module, ""


def load_cv_estimator(name: str) -> tuple[Any | None, str]:
    """localsvm's ``SVCCV`` or ``SVRCV``, or None and why it is missing."""
    import localsvm

    cls = getattr(localsvm, name, None)
    if cls is None:
        return None, f"localsvm.{name} is not in this build"
    return cls, ""


def grid_search_estimator(peer: str) -> tuple[Any | None, str]:
    """The unfitted SVC that ``GridSearchCV`` tunes for ``peer``, or None
    and why it is skipped."""
    if peer == "localsvm":
        from localsvm import SVC

        return SVC(n_jobs=1), ""
    if peer == "sklearn":
        from sklearn.svm import SVC

        return SVC(), ""
    if peer == "sklearnex":
        try:
            from sklearnex.svm import SVC
        except ImportError:
            return None, "not installed (pip install scikit-learn-intelex)"
        return SVC(), ""
    raise ValueError(
        f"no GridSearchCV route for {peer!r}; choose from localsvm, sklearn, sklearnex"
    )


# ------------------------------------------------------------------ the data


def gamma_scale(X: np.ndarray) -> float:
    """scikit-learn's ``gamma='scale'``: ``1 / (n_features · X.var())``."""
    var = float(np.var(X))
    return 1.0 / (X.shape[1] * var) if var > 0 else 1.0


def make_grid(X: np.ndarray, shape: Sequence[int] = GRID) -> tuple[list[float], list[float]]:
    """The C and gamma values of the grid on the training rows ``X``."""
    n_c, n_gamma = shape
    Cs = np.logspace(*C_RANGE, n_c)
    gammas = gamma_scale(X) * np.logspace(*GAMMA_RANGE, n_gamma)
    return [float(c) for c in Cs], [float(g) for g in gammas]


def make_folds(n_folds: int = N_FOLDS):
    """The folds every classification route gets."""
    from sklearn.model_selection import StratifiedKFold

    return StratifiedKFold(n_folds, shuffle=True, random_state=0)


def _standardize(X: np.ndarray, Xt: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    from sklearn.preprocessing import StandardScaler

    scaler = StandardScaler().fit(X)
    return scaler.transform(X), scaler.transform(Xt)


def load_case(name: str, n: int, n_test: int | None = None) -> tuple[np.ndarray, ...]:
    """``n`` training rows of data set ``name`` (all when it has fewer) and
    its test split (a fixed random ``n_test`` rows of it when given),
    standardized on the training rows."""
    from localsvm.datasets import load_dataset

    d = load_dataset(name)
    X, y, Xt, yt = d.X_train, d.y_train, d.X_test, d.y_test
    rng = np.random.default_rng(0)
    if n < X.shape[0]:
        rows = np.sort(rng.choice(X.shape[0], n, replace=False))
        X, y = X[rows], y[rows]
    if n_test is not None and n_test < Xt.shape[0]:
        rows = np.sort(rng.choice(Xt.shape[0], n_test, replace=False))
        Xt, yt = Xt[rows], yt[rows]
    X, Xt = _standardize(np.asarray(X, dtype=np.float64), np.asarray(Xt, dtype=np.float64))
    return X, y, Xt, yt


def _warmup_rows(y: np.ndarray, n_folds: int, total: int = WARMUP_ROWS) -> np.ndarray:
    """A small slice with every class at least ``n_folds`` times."""
    classes = np.unique(y)
    per = max(n_folds, total // max(classes.size, 1))
    return np.concatenate([np.flatnonzero(y == c)[:per] for c in classes])


# ------------------------------------------------------------------ the routes


def _grid_search(est, grid: dict, cv, X, y):
    from sklearn.model_selection import GridSearchCV

    return GridSearchCV(est, grid, cv=cv, n_jobs=N_JOBS, refit=True).fit(X, y)


def _cv_kwargs(cls, **kw) -> dict:
    """``kw`` less what ``cls.__init__`` does not take (``n_jobs``,
    ``random_state``), so the route follows the estimator's signature."""
    params = inspect.signature(cls.__init__).parameters
    return {k: v for k, v in kw.items() if k in params or k in ("Cs", "gammas", "cv")}


def _route_fit(route: str, X, y, Cs, gammas, cv, ctx: dict) -> dict:
    """Fit one route on ``X, y``; the fitted search and what to report."""
    if route in ("svccv", "svccv-own"):
        cls = ctx["SVCCV"]
        grid = {} if route == "svccv-own" else {"Cs": Cs, "gammas": gammas}
        kw = _cv_kwargs(cls, cv=cv, n_jobs=N_JOBS, random_state=0, **grid)
        model = cls(**kw).fit(X, y)
        return {
            "model": model,
            "cv_score": float(model.best_score_),
            "C": float(model.C_),
            "gamma": float(model.gamma_),
        }
    if route == "liquidsvm":
        svm = ctx["liquidSVM"].mcSVM(X, y.astype(np.float64), threads=N_JOBS)
        return {"model": svm, **_liquid_choice(svm, X.shape[0], ctx["n_folds"])}
    est, _ = grid_search_estimator(route)
    gs = _grid_search(est, {"C": Cs, "gamma": gammas}, cv, X, y)
    return {
        "model": gs,
        "cv_score": float(gs.best_score_),
        "C": float(gs.best_params_["C"]),
        "gamma": float(gs.best_params_["gamma"]),
    }


def _liquid_choice(svm, n: int, n_folds: int) -> dict:
    """liquidSVM's chosen values from its selection table (one row per task
    and fold: task, cell, fold, g, weight, λ, train error, validation error,
    …): the mean validation accuracy over the folds and the median λ and g
    in localsvm's terms (binary problems; None for several tasks)."""
    table = np.asarray(svm.errSelect)
    if table.ndim != 2 or table.shape[1] < 8 or np.unique(table[:, 0]).size != 1:
        return {"cv_score": None, "C": None, "gamma": None, "per_fold": True}
    n_fold = n * (n_folds - 1) / n_folds
    g, lam = np.median(table[:, 3]), np.median(table[:, 5])
    return {
        "cv_score": float(1.0 - np.mean(table[:, 7])),
        "C": float(1.0 / (2.0 * lam * n_fold)),
        "gamma": float(1.0 / g**2),
        "per_fold": True,
    }


def _predict(route: str, fitted: dict, Xt, yt) -> np.ndarray:
    model = fitted["model"]
    if route == "liquidsvm":
        result, _ = model.test(Xt, yt.astype(np.float64))
        return result[:, 0]
    return model.predict(Xt)


def _available_routes(peers: Sequence[str], n: int, opts: dict, ctx: dict) -> list[tuple]:
    """``(route, reason)`` for each route of a case; reason empty when it runs."""
    routes = []
    svccv_why = "" if ctx.get("SVCCV") is not None else ctx["SVCCV_why"]
    routes.append(("svccv", svccv_why))
    # scikit-learn's search last: the slowest, the one to cut short.
    for peer in ("localsvm", "sklearnex", "sklearn"):
        if peer not in peers:
            continue
        why = ""
        if peer == "sklearnex" and not ctx["sklearnex"]:
            why = "not installed (pip install scikit-learn-intelex)"
        elif peer == "sklearn" and n > opts["max_sklearn"]:
            why = f"more than --max-sklearn={opts['max_sklearn']} rows"
        elif peer == "sklearnex" and n > opts["max_sklearnex"]:
            why = f"more than --max-sklearnex={opts['max_sklearnex']} rows"
        routes.append((peer, why))
    if "liquidsvm" in peers:
        routes.append(("svccv-own", svccv_why))
        routes.append(("liquidsvm", "" if ctx.get("liquidSVM") is not None else ctx["liquid_why"]))
    return sorted(routes, key=lambda r: r[0] == "sklearn")


def run_case(
    name: str, n: int, peers: Sequence[str], opts: dict, ctx: dict, out: TextIO
) -> list[dict]:
    """Every route on ``n`` training rows of ``name``; one row per route run."""
    X, y, Xt, yt = load_case(name, n, opts["n_test"])
    Cs, gammas = make_grid(X, opts["grid"])
    cv = make_folds(opts["n_folds"])
    label = f"{name} n={X.shape[0]}"
    print(
        f"\n{label}: {X.shape[0]} train / {Xt.shape[0]} test (its own test split), "
        f"{X.shape[1]} features, {np.unique(y).size} classes; grid {len(Cs)} C "
        f"[{Cs[0]:.3g} … {Cs[-1]:.3g}] × {len(gammas)} gamma [{gammas[0]:.3g} … "
        f"{gammas[-1]:.3g}] (γ_scale {gamma_scale(X):.3g}), {opts['n_folds']} stratified folds",
        file=out,
        flush=True,
    )
    warm = _warmup_rows(y, 2)
    rows = []
    try:
        for route, why in _available_routes(peers, X.shape[0], opts, ctx):
            if why:
                print(f"  skipping {ROUTE_NAMES[route]}: {why}", file=out, flush=True)
                continue
            same = next((r for r in rows if r["route"] == "svccv"), None)
            if route == "svccv-own" and same is not None and _default_grid_is(opts["grid"], ctx):
                # The same estimator with the same folds: its default grid is
                # this grid, so the fit above is that route's fit too.
                rows.append({**same, "route": route, "grid": "own"})
                print(
                    f"  {ROUTE_NAMES[route]}: the fit above (its default grid is this grid)",
                    file=out,
                    flush=True,
                )
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # ConvergenceWarning of the grid's corners
                _route_fit(route, X[warm], y[warm], Cs[:2], gammas[:2], 2, ctx)
                fitted, seconds = timed(
                    lambda r=route: _route_fit(r, X, y, Cs, gammas, cv, ctx), opts["repeat"]
                )
            pred = _predict(route, fitted, Xt, yt)
            row = {
                "data": name,
                "n": int(X.shape[0]),
                "route": route,
                "grid": "own"
                if route in ("svccv-own", "liquidsvm")
                else f"{len(Cs)}×{len(gammas)}",
                "time_s": seconds,
                "cv_score": fitted["cv_score"],
                "accuracy": float(np.mean(pred == yt)),
                "C": fitted["C"],
                "gamma": fitted["gamma"],
                "per_fold": fitted.get("per_fold", False),
            }
            rows.append(row)
            print(
                f"  {ROUTE_NAMES[route]}: {seconds:.2f} s, "
                f"test accuracy {100 * row['accuracy']:.2f}%",
                file=out,
                flush=True,
            )
            if route == "liquidsvm":
                fitted["model"].clean()
            del fitted
    except KeyboardInterrupt:
        # Stopped by hand (a long peer): what finished is still reported.
        print(f"\n  interrupted: the table holds the {len(rows)} routes that finished", file=out)
        if rows:
            print_table(rows, out)
        raise
    if rows:
        print(file=out)
        print_table(rows, out)
    return rows


def _default_grid_is(shape: Sequence[int], ctx: dict) -> bool:
    """Whether SVCCV's default grid is the grid of ``shape`` points here."""
    import localsvm.tuning as tuning

    cls = ctx.get("SVCCV")
    if cls is None:
        return False
    defaults = inspect.signature(cls.__init__).parameters
    return (
        (defaults["Cs"].default, defaults["gammas"].default) == tuple(shape)
        and tuple(getattr(tuning, "C_DECADES", ())) == C_RANGE
        and tuple(getattr(tuning, "GAMMA_DECADES", ())) == GAMMA_RANGE
    )


def _base(rows: list[dict], r: dict) -> dict | None:
    """The SVCCV row that row ``r`` is compared with: the same grid (its
    default grid for liquidSVM)."""
    want = "svccv-own" if r["route"] == "liquidsvm" else "svccv"
    if r["route"] in ("svccv", "svccv-own"):
        return None
    return next(
        (b for b in rows if b["route"] == want and (b["data"], b["n"]) == (r["data"], r["n"])),
        None,
    )


#: The classification table's layout.
TABLE = columns(
    "data <7 | rows >6d | route <27 | grid >5 | time s >8.2f | × SVCCV >7.1f× | "
    "CV score >9.4f | ΔCV >+8.4f | test acc >8.2f% | Δacc pt >+8.2f | C >9 | gamma >10"
)


def _param(r: dict, key: str) -> str:
    if r[key] is None:
        return "per task" if r["per_fold"] else "—"
    return ("~" if r["per_fold"] else "") + f"{r[key]:.4g}"


def print_table(rows: list[dict], out: TextIO) -> None:
    """The classification table: one line per data set, size and route."""
    lines = []
    for r in rows:
        base = _base(rows, r)
        both = base is not None and r["cv_score"] is not None and base["cv_score"] is not None
        lines.append(
            (
                r["data"],
                r["n"],
                ROUTE_NAMES[r["route"]],
                r["grid"],
                r["time_s"],
                r["time_s"] / base["time_s"] if base else None,
                "—" if r["cv_score"] is None else r["cv_score"],
                r["cv_score"] - base["cv_score"] if both else None,
                100 * r["accuracy"],
                100 * (r["accuracy"] - base["accuracy"]) if base else None,
                _param(r, "C"),
                _param(r, "gamma"),
            )
        )
    print_columns(TABLE, lines, out)
    print(
        "time s: search and refit (best of --repeat); × SVCCV: time over SVCCV's on the same "
        "grid (liquidSVM: over SVCCV's own grid); CV score: best mean accuracy over the folds; "
        "ΔCV, Δacc pt: minus SVCCV's (points for accuracy); liquidSVM: its own folds, each "
        "keeps its own model and its best validation accuracy (CV score: their mean), "
        "~: the median of the folds' values",
        file=out,
        flush=True,
    )


# ------------------------------------------------------------------ SVR


#: The SVR table's layout.
SVR_TABLE = columns(
    "route <27 | time s >8.2f | × SVRCV >7.1f× | CV R² >8.4f | ΔCV >+8.4f | test R² >8.4f | "
    "ΔR² >+8.4f | C >9.4g | gamma >10.4g | epsilon >9.4g"
)


def regression_data(n: int, n_test: int | None = None) -> tuple[np.ndarray, ...]:
    """``make_friedman1`` with ``n`` training and ``n_test`` (default ``n``)
    test rows, features and target standardized on the training rows."""
    from sklearn.datasets import make_friedman1

    n_test = n if n_test is None else n_test
    X, y = make_friedman1(n_samples=n + n_test, n_features=10, noise=1.0, random_state=0)
    X, Xt = _standardize(X[:n], X[n:])
    mean, std = y[:n].mean(), y[:n].std() or 1.0
    y = (y - mean) / std
    return X, y[:n], Xt, y[n:]


def run_svr(n: int, shape: Sequence[int], opts: dict, ctx: dict, out: TextIO) -> list[dict]:
    """``SVRCV`` against ``GridSearchCV`` over localsvm's ``SVR``."""
    from sklearn.metrics import r2_score
    from sklearn.model_selection import KFold

    from localsvm import SVR

    X, y, Xt, yt = regression_data(n)
    Cs, gammas = make_grid(X, shape[:2])
    epsilons = [float(e) for e in np.logspace(*EPSILON_RANGE, shape[2])]
    cv = KFold(opts["n_folds"], shuffle=True, random_state=0)
    print(
        f"\nSVR: make_friedman1 (10 features, noise 1), {n} train / {Xt.shape[0]} test, "
        f"standardized; grid {len(Cs)} C × {len(gammas)} gamma × {len(epsilons)} epsilon "
        f"[{epsilons[0]:.3g} … {epsilons[-1]:.3g}], {opts['n_folds']} folds, R²",
        file=out,
        flush=True,
    )
    cls, why = ctx["SVRCV"], ctx["SVRCV_why"]
    warm = np.arange(min(WARMUP_ROWS, X.shape[0]))

    def svrcv(Xf, yf, folds, grid):
        kw = _cv_kwargs(cls, cv=folds, n_jobs=N_JOBS, random_state=0, **grid)
        kw["epsilons"] = grid["epsilons"]
        m = cls(**kw).fit(Xf, yf)
        return m, float(m.best_score_), (m.C_, m.gamma_, m.epsilon_)

    def search(Xf, yf, folds, grid):
        g = {"C": grid["Cs"], "gamma": grid["gammas"], "epsilon": grid["epsilons"]}
        gs = _grid_search(SVR(n_jobs=1), g, folds, Xf, yf)
        p = gs.best_params_
        return gs, float(gs.best_score_), (p["C"], p["gamma"], p["epsilon"])

    full = {"Cs": Cs, "gammas": gammas, "epsilons": epsilons}
    small = {"Cs": Cs[:2], "gammas": gammas[:2], "epsilons": epsilons[:1]}
    rows = []
    for name, fn in (("SVRCV", svrcv), ("GridSearchCV localsvm SVR", search)):
        if fn is svrcv and cls is None:
            print(f"  skipping SVRCV: {why}", file=out, flush=True)
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn(X[warm], y[warm], 2, small)
            (model, score, chosen), seconds = timed(lambda f=fn: f(X, y, cv, full), opts["repeat"])
        r2 = float(r2_score(yt, model.predict(Xt)))
        rows.append(
            {"route": name, "time_s": seconds, "cv_score": score, "r2": r2, "chosen": chosen}
        )
        print(f"  {name}: {seconds:.2f} s, test R² {r2:.4f}", file=out, flush=True)
    base = next((r for r in rows if r["route"] == "SVRCV"), None)
    lines = []
    for r in rows:
        other = base is not None and r is not base
        lines.append(
            (
                r["route"],
                r["time_s"],
                r["time_s"] / base["time_s"] if other else None,
                r["cv_score"],
                r["cv_score"] - base["cv_score"] if other else None,
                r["r2"],
                r["r2"] - base["r2"] if other else None,
                *(float(v) for v in r["chosen"]),
            )
        )
    print_columns(SVR_TABLE, lines, out)
    print(
        "time s: search and refit; × SVRCV: time over SVRCV's; ΔCV, ΔR²: minus SVRCV's",
        file=out,
        flush=True,
    )
    return rows


# ------------------------------------------------------------------ CellSVC


#: The CellSVC table's layout; ``{route}``: the route column's width.
CELLS_LAYOUT = (
    "route <{route} | search s >9.2f | fit s >8.2f | total s >8.2f | test acc >8.2f% | "
    "C >9.4g | gamma >10.4g"
)

#: The route column's least width (a row named by ``cells_params`` may need more).
CELLS_ROUTE_WIDTH = 44


def cells_table(routes: Sequence[str]):
    """The CellSVC table's columns, the route column as wide as the
    longest of ``routes`` (at least :data:`CELLS_ROUTE_WIDTH`), so a row
    named by long ``cells_params`` keeps its figures under their headers."""
    width = max([CELLS_ROUTE_WIDTH, *(len(r) for r in routes)])
    return columns(CELLS_LAYOUT.format(route=width))


def cellsvc_tunes() -> bool:
    """Whether localsvm's ``CellSVC`` takes a ``tune`` parameter."""
    from localsvm import CellSVC

    return "tune" in inspect.signature(CellSVC.__init__).parameters


def parse_cells_params(text: str) -> dict:
    """``CellSVC`` settings written ``name=value,name=value`` (an int, a
    float, None, or a word such as 'auto'), checked against its
    parameters; ``tune`` and ``random_state`` are the bench's."""
    from localsvm import CellSVC

    known = set(CellSVC().get_params()) - {"tune", "random_state", "n_jobs"}
    out: dict = {}
    for item in filter(None, (t.strip() for t in text.split(","))):
        name, eq, value = item.partition("=")
        name, value = name.strip(), value.strip()
        if not eq or name not in known:
            raise ValueError(
                f"cells_params: {item!r} is not name=value for one of CellSVC's "
                f"parameters ({', '.join(sorted(known))})"
            )
        for cast in (int, float):
            try:
                out[name] = cast(value)
                break
            except ValueError:
                continue
        else:
            out[name] = None if value == "None" else value
    return out


def _cells_route(params: dict) -> str:
    """The table's name of ``CellSVC(tune=True, **params)``."""
    extra = "".join(f", {k}={v!r}" for k, v in params.items())
    return f"CellSVC(tune=True{extra})"


def run_cells(
    n: int,
    subsample: int,
    opts: dict,
    ctx: dict,
    out: TextIO,
    n_test: int = N_TEST,
    cells_params: dict | None = None,
) -> list[dict]:
    """``CellSVC(tune=True)`` against ``SVCCV`` on a subsample followed by one
    global ``SVC`` at the chosen values on every row (and, with
    ``cells_params``, ``CellSVC(tune=True)`` with those settings)."""
    from localsvm import SVC, CellSVC

    X, y, Xt, yt = generated(n, n_test)
    print(
        f"\ngenerated n={n} (bench scale's problem): {n} train / {Xt.shape[0]} test, "
        f"{X.shape[1]} features",
        file=out,
        flush=True,
    )
    rows = []
    if cellsvc_tunes():
        settings = [(False, {}), (True, {})]
        if cells_params:
            settings.append((True, dict(cells_params)))
        for tune_cells, params in settings:
            route = _cells_route(params) if params else f"CellSVC(tune={tune_cells})"
            model, seconds = timed(
                lambda t=tune_cells, p=params: CellSVC(
                    tune=t, n_jobs=N_JOBS, random_state=0, **p
                ).fit(X, y),
                opts["repeat"],
            )
            fitted = np.isfinite(model.cell_C_)
            rows.append(
                {
                    "route": route,
                    "search_s": None,
                    "fit_s": seconds,
                    "accuracy": float(np.mean(model.predict(Xt) == yt)),
                    "C": float(np.median(model.cell_C_[fitted])),
                    "gamma": float(np.median(model.cell_gamma_[fitted])),
                    "n_cells": int(model.n_cells_),
                    "n_tuned": int(model.cell_tuned_.sum()),
                    "cell_C": model.cell_C_.tolist(),
                    "cell_gamma": model.cell_gamma_.tolist(),
                }
            )
            print(
                f"  {route}: {seconds:.2f} s, {model.n_cells_} cells"
                + (
                    f" ({int(model.cell_tuned_.sum())} tuned; searches "
                    f"{model.timings_['tune']:.2f} s summed over the cells)"
                    if tune_cells
                    else ""
                ),
                file=out,
                flush=True,
            )
            if tune_cells:
                print(
                    "    per cell C: "
                    + " ".join(f"{c:.3g}" for c in model.cell_C_)
                    + "\n    per cell gamma: "
                    + " ".join(f"{g:.3g}" for g in model.cell_gamma_),
                    file=out,
                    flush=True,
                )
    else:
        print("  skipping CellSVC(tune=True): this row needs CellSVC's tune parameter", file=out)
    cls = ctx["SVCCV"]
    if cls is None:
        print(f"  skipping SVCCV + SVC: {ctx['SVCCV_why']}", file=out, flush=True)
    else:
        rows_sub = np.sort(np.random.default_rng(0).choice(n, min(subsample, n), replace=False))
        Xs, ys = X[rows_sub], y[rows_sub]
        Cs, gammas = make_grid(Xs, opts["grid"])
        kw = _cv_kwargs(
            cls,
            Cs=Cs,
            gammas=gammas,
            cv=make_folds(opts["n_folds"]),
            n_jobs=N_JOBS,
            random_state=0,
        )
        cv_model, search_s = timed(lambda: cls(**kw).fit(Xs, ys), opts["repeat"])
        model, fit_s = timed(
            lambda: SVC(C=cv_model.C_, gamma=cv_model.gamma_, cache_size=2000, n_jobs=N_JOBS).fit(
                X, y
            ),
            opts["repeat"],
        )
        rows.append(
            {
                "route": f"SVCCV on {Xs.shape[0]} + SVC",
                "search_s": search_s,
                "fit_s": fit_s,
                "accuracy": float(np.mean(model.predict(Xt) == yt)),
                "C": float(cv_model.C_),
                "gamma": float(cv_model.gamma_),
            }
        )
        print(f"  SVCCV + SVC: {search_s:.2f} + {fit_s:.2f} s", file=out, flush=True)
    if rows:
        lines = [
            (
                r["route"],
                r["search_s"],
                r["fit_s"],
                r["fit_s"] + (r["search_s"] or 0.0),
                100 * r["accuracy"],
                r["C"],
                r["gamma"],
            )
            for r in rows
        ]
        print_columns(cells_table([r["route"] for r in rows]), lines, out)
        print(
            "CellSVC: its own defaults (cell_size 10 000, overlap 1; with tune=True a 5 x 5 "
            "grid, 3 folds on up to 2000 rows per cell) but the settings its row names, its "
            "search and fits in one time; C, gamma: the median over its cells",
            file=out,
            flush=True,
        )
    return rows


# ------------------------------------------------------------------ entry


def run_tune(
    datasets: Sequence[str] = TUNE_DATASETS,
    sizes: Sequence[int] = TUNE_SIZES,
    peers: Sequence[str] = TUNE_PEERS,
    *,
    grid: Sequence[int] = GRID,
    n_folds: int = N_FOLDS,
    n_test: int | None = None,
    max_sklearn: int = MAX_SKLEARN,
    max_sklearnex: int = MAX_SKLEARNEX,
    repeat: int = 1,
    svr_rows: int = SVR_ROWS,
    svr_grid: Sequence[int] = SVR_GRID,
    cells_rows: int = 0,
    cells_subsample: int = CELLS_SUBSAMPLE,
    cells_params: dict | None = None,
    out: TextIO | None = None,
) -> dict:
    """``python -m localsvm bench tune`` (see the module); returns the rows
    of each table (``'classification'``, ``'svr'``, ``'cells'``)."""
    from localsvm import _core
    from localsvm.plugins import get_plugin_manager

    out = sys.stdout if out is None else out
    unknown = [d for d in datasets if d not in TUNE_DATASETS]
    if unknown:
        raise ValueError(f"unknown data sets {unknown}; choose from {', '.join(TUNE_DATASETS)}")
    bad = [p for p in peers if p not in TUNE_PEERS]
    if bad:
        raise ValueError(f"unknown peers {bad}; choose from {', '.join(TUNE_PEERS)}")
    if len(grid) != 2 or min(grid) < 1:
        raise ValueError(f"grid must be two counts ≥ 1 (C, gamma), got {list(grid)}")
    if len(svr_grid) != 3 or min(svr_grid) < 1:
        raise ValueError(f"svr_grid must be three counts ≥ 1 (C, gamma, epsilon), got {svr_grid}")
    if n_folds < 2:
        raise ValueError(f"n_folds must be at least 2, got {n_folds}")
    get_plugin_manager()
    ctx: dict[str, Any] = {"n_folds": n_folds}
    ctx["SVCCV"], ctx["SVCCV_why"] = load_cv_estimator("SVCCV")
    ctx["SVRCV"], ctx["SVRCV_why"] = load_cv_estimator("SVRCV")
    ctx["sklearnex"] = grid_search_estimator("sklearnex")[0] is not None
    ctx["liquidSVM"], ctx["liquid_why"] = (
        load_liquidsvm() if "liquidsvm" in peers else (None, "not asked for")
    )
    opts = {
        "grid": tuple(grid),
        "n_folds": n_folds,
        "n_test": n_test,
        "max_sklearn": max_sklearn,
        "max_sklearnex": max_sklearnex,
        "repeat": repeat,
    }
    print(
        f"localsvm bench tune: {os.cpu_count()} CPUs, n_jobs={N_JOBS} for every route, "
        f"instruction set {_core.simd_level()}, load average "
        f"{' '.join(f'{v:.1f}' for v in os.getloadavg())}; time to the tuned model (search + "
        f"refit), best of {repeat}; scikit-learn's GridSearchCV up to {max_sklearn} rows, "
        f"scikit-learn-intelex's up to {max_sklearnex}",
        file=out,
        flush=True,
    )
    for name, why in (("SVCCV", ctx["SVCCV_why"]), ("liquidSVM", ctx["liquid_why"])):
        if why and why != "not asked for":
            print(f"  {name}: {why}", file=out)
    result: dict = {"classification": [], "svr": [], "cells": []}
    sizes_seen: dict[str, set] = {}
    for name in datasets:
        for n in sizes:
            rows_here = _rows_available(name, n)
            if rows_here in sizes_seen.setdefault(name, set()):
                continue  # a size beyond the set's rows repeats the full set
            sizes_seen[name].add(rows_here)
            result["classification"] += run_case(name, n, peers, opts, ctx, out)
    if len(sizes_seen) > 1 or sum(map(len, sizes_seen.values())) > 1:
        print("\nAll cases:", file=out)
        print_table(result["classification"], out)
    if svr_rows:
        result["svr"] = run_svr(svr_rows, svr_grid, opts, ctx, out)
    if cells_rows:
        result["cells"] = run_cells(
            cells_rows,
            cells_subsample,
            opts,
            ctx,
            out,
            n_test=n_test or N_TEST,
            cells_params=cells_params,
        )
    return result


def _rows_available(name: str, n: int) -> int:
    from localsvm.datasets import load_dataset

    return min(n, int(load_dataset(name).X_train.shape[0]))


__all__ = [
    "TUNE_DATASETS",
    "TUNE_PEERS",
    "TUNE_SIZES",
    "cellsvc_tunes",
    "gamma_scale",
    "load_case",
    "load_liquidsvm",
    "make_folds",
    "make_grid",
    "parse_cells_params",
    "regression_data",
    "run_tune",
    "so_suffix_shim",
]
