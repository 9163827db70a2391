"""``python -m localsvm bench online``: one pass of :class:`IncrementalSVC`
over a stream next to the batch SVMs trained on the same rows.

For each data set (ijcnn1, a9a: their training rows in file order, the first
``n_train``; RBF kernel, ``C = 1``, ``gamma`` of scikit-learn's 'scale' rule
computed once on those rows and given to every model) the table shows one
row per learner:

- ``IncrementalSVC`` (the local update of Ralaivola & d'Alché-Buc,
  "Incremental Support Vector Machine Learning: a Local Approach", ICANN
  2001) fed by ``partial_fit`` calls of 1, 100 and 1000 rows (``chunks``);
- scikit-learn's ``SVC.fit`` and localsvm's ``SVC.fit`` on the same rows;
- ``IncrementalSVC(strategy='rebatch')`` (a batch SVM retrained at every
  example, the baseline of the paper) on the first ``rebatch_rows`` rows
  only, since it costs one batch solve per example, next to the local
  update on the same rows.

Columns: the total time of the pass or fit (wall clock and CPU time of the
process), the time per example (each ``partial_fit`` call's wall time
divided by its rows: median and 99th percentile over the calls), the test
accuracy (the first ``n_test`` test rows) and the number of support
vectors; also the 99th percentile of the CPU time per example (on a shared
machine the wall clock includes time the process waits). For the one-row
calls a second table gives the per-example time against the examples seen
(windows of the stream): the cost of one update as the model grows.

LASVM (Bordes, Ertekin, Weston & Bottou, "Fast Kernel Classifiers with
Online and Active Learning", JMLR 6, 2005) is the online learner these
figures are meant to be read against: one pass at a cost comparable to or
below a batch fit.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Sequence
from typing import TextIO

import numpy as np

from .report import Stopwatch, columns, print_table

#: Data sets the online bench runs on.
ONLINE_CASES = ("ijcnn1", "a9a")

#: Chunk sizes of ``partial_fit`` (rows per call).
DEFAULT_CHUNKS = (1, 100, 1000)

#: Rows of the rebatch baseline (one batch solve per example).
DEFAULT_REBATCH_ROWS = 1000

#: Ends of the windows of examples seen in the per-update table.
WINDOW_ENDS = (1000, 2000, 5000, 10_000, 20_000, 30_000, 40_000, 50_000)

COMMON = {"tol": 1e-3, "cache_size": 200}


def _load(name: str, n_train: int | None, n_test: int | None):
    from localsvm.datasets import load_dataset

    d = load_dataset(name)
    X, y = d.X_train, d.y_train
    Xt, yt = d.X_test, d.y_test
    if n_train is not None:
        X, y = X[:n_train], y[:n_train]
    if n_test is not None:
        Xt, yt = Xt[:n_test], yt[:n_test]
    return (
        np.ascontiguousarray(X, dtype=np.float64),
        np.asarray(y),
        np.ascontiguousarray(Xt, dtype=np.float64),
        np.asarray(yt),
    )


def _scale_gamma(X: np.ndarray) -> float:
    var = float(X.var())
    return 1.0 / (X.shape[1] * var) if var > 0 else 1.0


def _stream(X, y, chunk: int, classes, **params):
    """One pass of partial_fit calls of ``chunk`` rows: the model, the
    per-call wall times, their rows, the wall and CPU totals."""
    from localsvm.incremental_svc import IncrementalSVC

    clf = IncrementalSVC(**params)
    n = X.shape[0]
    calls, cpus, rows = [], [], []
    with Stopwatch() as total:
        for start in range(0, n, chunk):
            stop = min(start + chunk, n)
            with Stopwatch() as call:
                clf.partial_fit(X[start:stop], y[start:stop], classes=classes)
            calls.append(call.seconds)
            cpus.append(call.cpu_seconds)
            rows.append(stop - start)
    rows = np.asarray(rows)
    return clf, np.asarray(calls) / rows, np.asarray(cpus) / rows, total.seconds, total.cpu_seconds


def _batch(make, X, y):
    with Stopwatch() as clock:
        model = make().fit(X, y)
    return model, clock.seconds, clock.cpu_seconds


#: The columns of the learners' table.
COLUMNS = columns(
    "data <7 | learner <34 | n >6 | wall s >8.2f | cpu s >8.2f | cpu/skl >7.2f | "
    "med ms/ex >9.3f | p99 ms/ex >9.3f | p99 cpu >9.3f | acc % >7.2f | n_SV >6"
)


def _ms(values, q):
    return None if values is None else 1e3 * float(np.quantile(values, q))


def _row(out, rows, data, learner, n, timing, model, test, ref_cpu, per=None, per_cpu=None):
    """Score ``model`` on ``test``, print its row of :data:`COLUMNS` and
    append it to ``rows``; ``timing`` is ``(wall, cpu)`` of the fit or pass."""
    wall, cpu = timing
    acc, n_sv = model.score(*test), int(model.support_.size)
    ratio = cpu / ref_cpu if ref_cpu else None
    line = (data, learner, n, wall, cpu, ratio, _ms(per, 0.5), _ms(per, 0.99))
    print_table(COLUMNS, [(*line, _ms(per_cpu, 0.99), 100 * acc, n_sv)], out, head=False)
    rows.append(
        {
            "data": data,
            "learner": learner,
            "n": n,
            "wall": wall,
            "cpu": cpu,
            "cpu_vs_sklearn": ratio,
            "median_ms": _ms(per, 0.5),
            "p99_ms": _ms(per, 0.99),
            "p99_cpu_ms": _ms(per_cpu, 0.99),
            "accuracy": acc,
            "n_support": n_sv,
        }
    )


def run_online(
    datasets: Sequence[str] = ONLINE_CASES,
    *,
    n_train: int | None = None,
    n_test: int | None = 20_000,
    chunks: Sequence[int] = DEFAULT_CHUNKS,
    rebatch_rows: int = DEFAULT_REBATCH_ROWS,
    out: TextIO | None = None,
) -> dict:
    """Print and return the tables described in the module notes.

    Parameters
    ----------
    datasets : sequence of str, default=('ijcnn1', 'a9a')
        From :data:`ONLINE_CASES`.
    n_train : int or None, default=None
        Training rows of the stream (the first of the file); None: all.
    n_test : int or None, default=20000
        Test rows scored (the first of the file); None: all.
    chunks : sequence of int, default=(1, 100, 1000)
        Rows per ``partial_fit`` call, one pass each.
    rebatch_rows : int, default=1000
        Rows of the ``strategy='rebatch'`` baseline (0 skips it).
    out : text stream or None, default=None
        Where to print (standard output by default).

    Returns
    -------
    dict
        ``rows``: one dict per table row; ``curve``: per data set, the
        windows of the one-row pass (``end``, ``median_ms``, ``p99_ms``).
    """
    import sklearn.svm as sk

    from localsvm.incremental_svc import IncrementalSVC
    from localsvm.svc import SVC

    out = sys.stdout if out is None else out
    unknown = [d for d in datasets if d not in ONLINE_CASES]
    if unknown:
        raise ValueError(f"datasets {unknown} are not among {list(ONLINE_CASES)}")
    if not chunks or any(int(c) < 1 for c in chunks):
        raise ValueError(f"chunks must be positive row counts, got {list(chunks)}")
    rows: list[dict] = []
    curves: dict[str, list[dict]] = {}
    print(
        "localsvm bench online: one pass of IncrementalSVC's partial_fit (RBF, C=1, "
        "gamma='scale' on the training rows) beside batch fits on the same rows; "
        f"SVCs with tol={COMMON['tol']}, cache_size={COMMON['cache_size']} MB",
        file=out,
    )
    for name in datasets:
        X, y, Xt, yt = _load(name, n_train, n_test)
        classes = np.unique(y)
        params = {"C": 1.0, "gamma": _scale_gamma(X)}
        print(
            f"\n{name}: {X.shape[0]} training rows in file order, {Xt.shape[0]} test rows, "
            f"{X.shape[1]} features, gamma={params['gamma']:.6g}",
            file=out,
        )
        print_table(COLUMNS, [], out, rule=False)
        # Untimed warm-up (imports, first calls) on a few hundred rows.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            IncrementalSVC(**params).fit(X[:300], y[:300])
            SVC(**params, **COMMON).fit(X[:300], y[:300])
        n, test = X.shape[0], (Xt, yt)
        theirs, wall, ref_cpu = _batch(lambda: sk.SVC(**params, **COMMON), X, y)  # noqa: B023
        _row(out, rows, name, "sklearn SVC.fit", n, (wall, ref_cpu), theirs, test, ref_cpu)
        ours, wall, cpu = _batch(lambda: SVC(**params, **COMMON), X, y)  # noqa: B023
        _row(out, rows, name, "localsvm SVC.fit", n, (wall, cpu), ours, test, ref_cpu)
        for chunk in chunks:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                clf, per, per_cpu, wall, cpu = _stream(X, y, int(chunk), classes, **params)
            label = f"IncrementalSVC chunks of {chunk}"
            _row(out, rows, name, label, n, (wall, cpu), clf, test, ref_cpu, per, per_cpu)
            if int(chunk) == 1:
                curves[name] = _curve(per, per_cpu)
        if rebatch_rows:
            m = min(rebatch_rows, X.shape[0])
            chunk = min(100, m)
            for strategy in ("rebatch", "local"):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    clf, per, per_cpu, wall, cpu = _stream(
                        X[:m], y[:m], chunk, classes, strategy=strategy, **params
                    )
                label = f"IncrementalSVC {strategy}, first {m}"
                _row(out, rows, name, label, m, (wall, cpu), clf, test, None, per, per_cpu)
        if name in curves:
            print(
                "\none-row partial_fit calls against examples seen "
                "(ms per call: wall clock; CPU time of the process):",
                file=out,
            )
            table = columns(
                "examples seen >15 | median ms >10.3f | p99 ms >8.3f | max ms >8.3f | "
                "p99 cpu ms >10.3f"
            )
            keys = ("median_ms", "p99_ms", "max_ms", "p99_cpu_ms")
            windows = [
                (f"{w['start']:>6} - {w['end']:<6}", *(w[k] for k in keys)) for w in curves[name]
            ]
            print_table(table, windows, out, rule=False)
    return {"rows": rows, "curve": curves}


def _curve(calls: np.ndarray, cpus: np.ndarray) -> list[dict]:
    """The one-row calls' times in windows of the examples seen."""
    n = calls.size
    ends = [e for e in WINDOW_ENDS if e < n] + [n]
    windows, start = [], 0
    for end in ends:
        if end <= start:
            continue
        part = calls[start:end]
        windows.append(
            {
                "start": start,
                "end": end,
                "median_ms": 1e3 * float(np.median(part)),
                "p99_ms": 1e3 * float(np.quantile(part, 0.99)),
                "max_ms": 1e3 * float(part.max()),
                "p99_cpu_ms": 1e3 * float(np.quantile(cpus[start:end], 0.99)),
            }
        )
        start = end
    return windows
