"""``python -m localsvm bench sparse``: localsvm's SVC on sparse (CSR) input.

Three parts, each printed as a table:

- a9a and ijcnn1 loaded as CSR (the bundled dense arrays converted with
  ``scipy.sparse.csr_matrix``): fit and predict time and test accuracy of
  localsvm's SVC on the CSR matrix (its native sparse path, float64; a
  dense-like matrix such as ijcnn1's or a9a's is computed as dense rows, so its sums
  over stored entries are timed too, as 'localsvm CSR rows'), of
  localsvm's SVC on the dense arrays (its default path), and of
  scikit-learn's ``SVC`` fed the same CSR matrix; same ``C``, ``gamma``,
  ``tol=1e-3`` and ``cache_size``.
- the peak memory a sparse fit adds (measured in a fresh process, Linux
  only) next to the bound ``cache_size + O(nnz)``.
- a wide sparse set, 20 000 rows × 100 000 features at 0.1 % density
  (``scipy.sparse.random`` with the generator ``numpy.random.default_rng(0)``,
  labels from a sparse linear rule), whose dense copy would take 16 GB: its
  fit's peak memory, which stays at ``cache_size + O(nnz)``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from contextlib import contextmanager
from typing import TextIO

import numpy as np
import scipy.sparse as sp

from localsvm import kernels
from localsvm.kernels import dense_like

from .report import columns, print_table, timed

#: The data sets of the sparse benchmark and their SVC parameters.
SPARSE_CASES = {"a9a": {"C": 1.0, "gamma": "scale"}, "ijcnn1": {"C": 1.0, "gamma": "scale"}}
COMMON = {"kernel": "rbf", "tol": 1e-3, "cache_size": 200}
#: Copies of the stored entries a sparse fit may hold at once: the
#: validated canonical copy, the int64 indices handed to the core, the
#: core's rows and their transpose, and the support vectors; each counted as
#: a float64 value plus an int64 index (16 bytes), more than any of them
#: takes.
MEMORY_NNZ_COPIES = 5
BYTES_PER_STORED = 16
#: Allowance for the interpreter and allocator (arenas, thread stacks).
MEMORY_SLACK_MB = 64.0


def load_csr(name: str, n_train: int | None = None):
    """The bundled data set ``name`` as CSR matrices (and the dense arrays).

    Parameters
    ----------
    name : str
        'a9a' or 'ijcnn1'.
    n_train : int or None, default=None
        Keep only the first ``n_train`` training rows (and as many test
        rows).

    Returns
    -------
    tuple
        ``X_train, y_train, X_test, y_test`` (CSR) and the dense
        ``X_train, X_test``.
    """
    from localsvm.datasets import load_dataset

    d = load_dataset(name)
    Xd, Xtd, y, yt = d.X_train, d.X_test, d.y_train, d.y_test
    if n_train is not None:
        Xd, y, Xtd, yt = Xd[:n_train], y[:n_train], Xtd[:n_train], yt[:n_train]
    return sp.csr_matrix(Xd), y, sp.csr_matrix(Xtd), yt, Xd, Xtd


@contextmanager
def _sparse_rows_only(active: bool):
    """While ``active``, sparse input is never computed as dense rows
    (:data:`localsvm.kernels.DENSE_LIKE_DENSITY` set out of reach)."""
    old = kernels.DENSE_LIKE_DENSITY
    if active:
        kernels.DENSE_LIKE_DENSITY = float("inf")
    try:
        yield
    finally:
        kernels.DENSE_LIKE_DENSITY = old


def compare(datasets: list[str], n_train: int | None, peers: list[str], out: TextIO) -> list[dict]:
    """Fit and predict times of localsvm on CSR, localsvm on dense arrays
    and scikit-learn on CSR; one row per (data set, implementation)."""
    from sklearn.svm import SVC as SklearnSVC

    from localsvm.svc import SVC

    rows = []
    table = columns(
        "data <8 | implementation <18 | n >6d | nnz >9d | fit s >8.2f | predict s >10.2f | "
        "accuracy >8.2f% | SVs >6d | fit × >6.2f× | predict × >9.2f×"
    )
    lines = []
    notes: list[str] = []
    for name in datasets:
        X, y, Xt, yt, Xd, Xtd = load_csr(name, n_train)
        params = {**SPARSE_CASES[name], **COMMON}
        runs = {
            "localsvm CSR": (lambda p=params: SVC(**p), X, Xt, False),
            "localsvm CSR rows": (lambda p=params: SVC(**p), X, Xt, True),
            "localsvm dense": (lambda p=params: SVC(**p), Xd, Xtd, False),
            "sklearn CSR": (lambda p=params: SklearnSVC(**p), X, Xt, False),
        }
        if dense_like(X):
            notes.append(
                f"{name}: {X.nnz / (X.shape[0] * X.shape[1]):.0%} of the entries stored, so "
                "'localsvm CSR' computes it as dense rows; 'localsvm CSR rows' forces the "
                "sums over stored entries"
            )
        else:
            del runs["localsvm CSR rows"]  # the same as 'localsvm CSR'
        base = None
        for label, (make, A, At, rows_only) in runs.items():
            if label.split()[0] not in peers:
                continue
            with _sparse_rows_only(rows_only):
                model, fit_s = timed(lambda m=make, a=A, t=y: m().fit(a, t))
                pred, pred_s = timed(lambda m=model, a=At: m.predict(a))
            row = {
                "data": name,
                "implementation": label,
                "n_train": int(X.shape[0]),
                "nnz": int(X.nnz),
                "fit_s": fit_s,
                "predict_s": pred_s,
                "accuracy": float(np.mean(pred == yt)),
                "n_sv": len(model.support_),
            }
            rows.append(row)
            ratios = (None, None)
            if base is None:
                base = row
            else:
                ratios = (fit_s / base["fit_s"], pred_s / base["predict_s"])
            line = (name, label, row["n_train"], row["nnz"], fit_s, pred_s)
            lines.append((*line, 100 * row["accuracy"], row["n_sv"], *ratios))
            print(f"  {name}: {label} fit {fit_s:.2f} s, predict {pred_s:.2f} s", file=out)
    print(file=out)
    print_table(table, lines, out)
    if notes:
        print("\n".join(notes), file=out)
    return rows


_MEMORY_PROBE = """
import json, sys
import numpy as np, scipy.sparse as sp
from localsvm import SVC
def status(key):
    for line in open('/proc/self/status'):
        if line.startswith(key):
            return int(line.split()[1]) * 1024
kind, arg, cache = sys.argv[1], sys.argv[2], float(sys.argv[3])
if kind == 'dataset':
    from localsvm_benchmarks.sparse import load_csr
    n = None if arg == 'all' else int(arg)
    X, y = load_csr(sys.argv[4], n)[:2]
    kw = dict(C=1.0, gamma='scale')
else:
    from localsvm_benchmarks.sparse import wide_sparse
    X, y = wide_sparse(int(arg))
    kw = dict(C=1.0, kernel='linear')
before = status('VmRSS:')
open('/proc/self/clear_refs', 'w').write('5')  # reset the peak to the current size
from localsvm_benchmarks.report import timed
m, fit_s = timed(lambda: SVC(cache_size=cache, **kw).fit(X, y))
print(json.dumps({'before': before, 'peak': status('VmHWM:'), 'n': X.shape[0],
                  'd': X.shape[1], 'nnz': int(X.nnz), 'fit_s': fit_s,
                  'n_sv': int(m.support_.size), 'accuracy': float(m.score(X, y))}))
"""


def wide_sparse(n: int = 20_000, d: int = 100_000, density: float = 0.001):
    """The wide sparse set: ``scipy.sparse.random(n, d, density,
    random_state=numpy.random.default_rng(0))`` and labels from a sparse
    linear rule (the sign of the rows' products with a weight vector of
    1 000 non-zero normal weights, centred on its median so both classes
    are equally frequent). The random state is a ``Generator``, not the integer 0:
    with a legacy ``RandomState`` scipy draws the positions by permuting all
    ``n · d`` of them, an ``n × d`` allocation of its own (16 GB here).

    Parameters
    ----------
    n : int, default=20000
        Rows.
    d : int, default=100000
        Features.
    density : float, default=0.001
        Fraction of stored entries.

    Returns
    -------
    tuple
        ``X`` (CSR, float64) and ``y`` (0/1).
    """
    X = sp.random(
        n, d, density=density, format="csr", random_state=np.random.default_rng(0), dtype=np.float64
    )
    rng = np.random.default_rng(0)
    w = np.zeros(d)
    w[rng.choice(d, size=min(1000, d), replace=False)] = rng.normal(size=min(1000, d))
    score = np.asarray(X @ w).ravel()
    return X, (score > np.median(score)).astype(np.int64)


def _probe(args: list[str]) -> dict:
    res = subprocess.run(
        [sys.executable, "-c", _MEMORY_PROBE, *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(res.stdout.strip().splitlines()[-1])


def _bound_mb(cache: float, nnz: int, n: int, d: int) -> float:
    # A dense-like matrix is computed as dense rows: its float64 and float32
    # copies (12 bytes per entry, at most 192 per stored entry) come on top.
    dense = 12.0 * n * d if n * d and nnz >= kernels.DENSE_LIKE_DENSITY * n * d else 0.0
    copies = MEMORY_NNZ_COPIES * (nnz * BYTES_PER_STORED + 8 * (n + 1))
    return cache + (copies + dense) / 2**20 + MEMORY_SLACK_MB


def memory(
    datasets: list[str], n_train: int | None, cache_sizes: list[float], out: TextIO
) -> list[dict]:
    """Peak memory a sparse fit adds, in a fresh process per measurement,
    against ``cache_size + 5 × nnz × 16 bytes + 64 MB``, plus ``12 × n × d``
    bytes for a dense-like matrix (computed as dense rows)."""
    if not os.path.exists("/proc/self/clear_refs"):
        print("memory: skipped (needs Linux /proc)", file=out)
        return []
    table = columns(
        "data <8 | cache MB >9.0f | nnz >9d | dense X MB >11.1f | fit peak +MB >13.1f | "
        "bound MB >9.1f | within >7"
    )
    print_table(table, [], out, rule=False)
    rows = []
    for name in datasets:
        for cache in cache_sizes:
            m = _probe(["dataset", "all" if n_train is None else str(n_train), str(cache), name])
            extra = (m["peak"] - m["before"]) / 2**20
            bound = _bound_mb(cache, m["nnz"], m["n"], m["d"])
            rows.append(
                {"data": name, "cache_mb": cache, **m, "extra_mb": extra, "bound_mb": bound}
            )
            line = (name, cache, m["nnz"], m["n"] * m["d"] * 8 / 2**20, extra, bound)
            print_table(table, [(*line, "yes" if extra <= bound else "NO")], out, head=False)
    return rows


def wide(n: int, cache: float, out: TextIO) -> dict:
    """Fit the wide sparse set (linear kernel) in a fresh process; prints its
    peak memory next to the bound and to the size of a dense copy."""
    m = _probe(["wide", str(n), str(cache)])
    extra = (m["peak"] - m["before"]) / 2**20
    bound = _bound_mb(cache, m["nnz"], m["n"], m["d"])
    dense_gb = m["n"] * m["d"] * 8 / 1e9
    print(
        f"wide sparse set: {m['n']} × {m['d']}, nnz {m['nnz']}, dense copy would be "
        f"{dense_gb:.1f} GB; linear SVC fit {m['fit_s']:.1f} s, {m['n_sv']} SVs, training "
        f"accuracy {100 * m['accuracy']:.2f}%; fit peak +{extra:.1f} MB (bound {bound:.1f} MB, "
        f"{'within' if extra <= bound else 'NOT within'}), process peak {m['peak'] / 2**20:.1f} MB",
        file=out,
    )
    return {**m, "extra_mb": extra, "bound_mb": bound}


def run_sparse_bench(
    datasets: list[str],
    peers: list[str],
    n_train: int | None = None,
    memory_check: bool = True,
    wide_rows: int | None = 20_000,
    out: TextIO = sys.stdout,
) -> dict:
    """Everything ``python -m localsvm bench sparse`` prints; returns the
    numbers.

    Parameters
    ----------
    datasets : list of str
        From :data:`SPARSE_CASES`.
    peers : list of str
        'localsvm' and/or 'sklearn'.
    n_train : int or None, default=None
        Training rows per data set (None: all).
    memory_check : bool, default=True
        Measure the peak memory of sparse fits.
    wide_rows : int or None, default=20000
        Rows of the wide sparse set (None: skip it).
    out : file-like, default=sys.stdout
        Where the tables go.

    Returns
    -------
    dict
        ``rows``, and ``memory`` and ``wide`` when run.
    """
    from localsvm import _core

    unknown = [d for d in datasets if d not in SPARSE_CASES]
    if unknown:
        raise ValueError(
            f"unknown data sets {unknown} for the sparse bench; choose from "
            f"{', '.join(SPARSE_CASES)}"
        )
    print(
        f"localsvm bench sparse: {os.cpu_count()} CPUs, instruction set {_core.simd_level()}, "
        f"tol={COMMON['tol']}, cache_size={COMMON['cache_size']} MB",
        file=out,
    )
    result: dict = {"rows": compare(datasets, n_train, peers, out)}
    if memory_check:
        print("\nlocalsvm peak memory during a sparse fit (bound: cache_size + O(nnz)):", file=out)
        result["memory"] = memory(datasets, n_train, [50.0, 200.0], out)
    if wide_rows:
        print(file=out)
        result["wide"] = wide(wide_rows, 200.0, out)
    return result
