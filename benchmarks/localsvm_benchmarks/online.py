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
import time
import warnings
from collections.abc import Sequence
from typing import TextIO

import numpy as np

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
    from localsvm.incremental import IncrementalSVC

    clf = IncrementalSVC(**params)
    n = X.shape[0]
    calls, cpus, rows = [], [], []
    wall0, cpu0 = time.perf_counter(), time.process_time()
    for start in range(0, n, chunk):
        stop = min(start + chunk, n)
        began, began_cpu = time.perf_counter(), time.process_time()
        clf.partial_fit(X[start:stop], y[start:stop], classes=classes)
        calls.append(time.perf_counter() - began)
        cpus.append(time.process_time() - began_cpu)
        rows.append(stop - start)
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    rows = np.asarray(rows)
    return clf, np.asarray(calls) / rows, np.asarray(cpus) / rows, wall, cpu


def _batch(make, X, y):
    wall0, cpu0 = time.perf_counter(), time.process_time()
    model = make().fit(X, y)
    return model, time.perf_counter() - wall0, time.process_time() - cpu0


def _ms(values, q):
    return f"{1e3 * np.quantile(values, q):>9.3f}" if values is not None else f"{'':>9}"


def _row(out, rows, data, learner, n, wall, cpu, per, per_cpu, acc, n_sv, ref_cpu):
    ratio = f"{cpu / ref_cpu:>7.2f}" if ref_cpu else f"{'':>7}"
    print(
        f"{data:<7} {learner:<34} {n:>6} {wall:>8.2f} {cpu:>8.2f} {ratio} "
        f"{_ms(per, 0.5)} {_ms(per, 0.99)} {_ms(per_cpu, 0.99)} {100 * acc:>7.2f} {n_sv:>6}",
        file=out,
        flush=True,
    )
    rows.append(
        {
            "data": data,
            "learner": learner,
            "n": n,
            "wall": wall,
            "cpu": cpu,
            "cpu_vs_sklearn": cpu / ref_cpu if ref_cpu else None,
            "median_ms": None if per is None else 1e3 * float(np.median(per)),
            "p99_ms": None if per is None else 1e3 * float(np.quantile(per, 0.99)),
            "p99_cpu_ms": None if per_cpu is None else 1e3 * float(np.quantile(per_cpu, 0.99)),
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

    from localsvm.incremental import IncrementalSVC
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
    header = (
        f"{'data':<7} {'learner':<34} {'n':>6} {'wall s':>8} {'cpu s':>8} {'cpu/skl':>7} "
        f"{'med ms/ex':>9} {'p99 ms/ex':>9} {'p99 cpu':>9} {'acc %':>7} {'n_SV':>6}"
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
        print(header, file=out)
        # Untimed warm-up (imports, first calls) on a few hundred rows.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            IncrementalSVC(**params).fit(X[:300], y[:300])
            SVC(**params, **COMMON).fit(X[:300], y[:300])
        theirs, wall, cpu = _batch(lambda: sk.SVC(**params, **COMMON), X, y)  # noqa: B023
        ref_cpu = cpu
        _row(
            out,
            rows,
            name,
            "sklearn SVC.fit",
            X.shape[0],
            wall,
            cpu,
            None,
            None,
            theirs.score(Xt, yt),
            int(theirs.support_.size),
            ref_cpu,
        )
        ours, wall, cpu = _batch(lambda: SVC(**params, **COMMON), X, y)  # noqa: B023
        _row(
            out,
            rows,
            name,
            "localsvm SVC.fit",
            X.shape[0],
            wall,
            cpu,
            None,
            None,
            ours.score(Xt, yt),
            int(ours.support_.size),
            ref_cpu,
        )
        for chunk in chunks:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                clf, per, per_cpu, wall, cpu = _stream(X, y, int(chunk), classes, **params)
            _row(
                out,
                rows,
                name,
                f"IncrementalSVC chunks of {chunk}",
                X.shape[0],
                wall,
                cpu,
                per,
                per_cpu,
                clf.score(Xt, yt),
                int(clf.support_.size),
                ref_cpu,
            )
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
                _row(
                    out,
                    rows,
                    name,
                    f"IncrementalSVC {strategy}, first {m}",
                    m,
                    wall,
                    cpu,
                    per,
                    per_cpu,
                    clf.score(Xt, yt),
                    int(clf.support_.size),
                    None,
                )
        if name in curves:
            print(
                "\none-row partial_fit calls against examples seen "
                "(ms per call: wall clock; CPU time of the process):",
                file=out,
            )
            print(
                f"{'examples seen':>15} {'median ms':>10} {'p99 ms':>8} {'max ms':>8} "
                f"{'p99 cpu ms':>10}",
                file=out,
            )
            for w in curves[name]:
                print(
                    f"{w['start']:>6} - {w['end']:<6} {w['median_ms']:>10.3f} "
                    f"{w['p99_ms']:>8.3f} {w['max_ms']:>8.3f} {w['p99_cpu_ms']:>10.3f}",
                    file=out,
                )
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
