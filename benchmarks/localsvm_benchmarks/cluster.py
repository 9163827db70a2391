"""``localsvm bench cluster``: ``CellSVC`` on data no single process holds.

A :class:`distributed.LocalCluster` of ``--workers`` single-threaded worker
processes, each under ``--memory-limit`` (smaller than the data), generates
the data on the workers: ``n × 16`` float32 standard normal rows in blocks of
``--chunk-rows`` (``dask.array.random.default_rng``), labelled by a
fixed nonlinear rule of the first eight features (:func:`rule`); the test
rows come from another generator state. ``CellSVC`` (RBF, ``C = 1``, ``gamma='scale'``,
``--cell-size``, ``--overlap``, ``cache_size=100`` per worker, which the
Dask fit caps at 5 % of a worker's memory limit) is fitted on
the Dask arrays: the sample for the cells drawn on the workers, every block
routed where it lives, each cell's rows gathered to one worker and its SVM
trained there (the partitioning of C.-J. Hsieh, S. Si and I. S. Dhillon, "A
Divide-and-Conquer Solver for Kernel SVMs", ICML 2014; the overlapping cells of I. Steinwart
and P. Thomann, "liquidSVM: A Fast and Versatile SVM Package",
arXiv:1702.06899, 2017). Prediction is a blockwise map over the test array.

Per size: fit and predict seconds, test accuracy, the peak resident memory
of the client process (which also runs the scheduler) and of each worker
(``VmHWM``), workers that died, the bytes the workers sent each other, and
the bytes of the cells' models (support vectors, float32 here, and
coefficients) with where the fit left them: on the client, or on the
workers (in files on their disks) when they exceed a twentieth of one
worker's memory limit. At the
first size (``--compare-rows`` at most) the same rows are also fitted in
memory (``CellSVC`` with ``n_jobs`` = the number of workers) for the ratio
of the two fits and the accuracies.

``--memmap-rows``: ``CellSVC`` on a float64 ``np.memmap`` of that many rows ×
16 written to a temporary file, in a child process whose peak anonymous
memory (``RssAnon`` sampled every 20 ms) is set against the file's size and
against the documented bound on the fit's growth
(``localsvm._outofcore.chunked_memory_bound``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from typing import TextIO

import numpy as np

from .report import columns, print_table, timed

#: Features of the generated rows.
CLUSTER_FEATURES = 16
#: The table of ``bench cluster``.
COLUMNS = columns(
    "rows >10d | fit s >8.1f | predict s >9.1f | accuracy >8.2f% | client MiB >10d | "
    "workers MiB >13 | died >4d | moved MiB >9d | model MiB >9d | model on >8 | cells"
)
#: Kernel cache (MB) of each worker's cell SVM (the Dask fit takes at most
#: 5 % of a worker's memory limit: 26 MB at 512 MiB); the in-memory fit of
#: the comparison shares this much per worker among its cells.
CLUSTER_CACHE_MB = 100.0
#: Random states of the training and test rows.
TRAIN_STATE, TEST_STATE = 12345, 67890


def rule(X: np.ndarray) -> np.ndarray:
    """The labels of the generated rows: the sign of a fixed nonlinear
    function of the first eight features (module-level, so workers run it)."""
    X = np.asarray(X, dtype=np.float64)
    f = (
        np.sin(1.5 * X[:, 0]) * np.cos(X[:, 1])
        + 0.5 * X[:, 2] * X[:, 3]
        + 0.25 * (X[:, 4] ** 2 - 1.0)
        - 0.3 * np.abs(X[:, 5])
        + 0.2 * (X[:, 6] + X[:, 7])
        + 0.24
    )
    return (f > 0).astype(np.int8)


def generated(n: int, state: int, chunk_rows: int):
    """Lazy Dask arrays ``X`` (``n × 16`` float32) and ``y`` (int8)."""
    import dask.array as da

    rng = da.random.default_rng(state)
    X = rng.standard_normal(
        (n, CLUSTER_FEATURES), chunks=(chunk_rows, CLUSTER_FEATURES), dtype=np.float32
    )
    y = X.map_blocks(rule, drop_axis=1, dtype=np.int8)
    return X, y


def _vm(field: str, pid: str = "self") -> int:
    """A ``/proc/PID/status`` field in bytes (0 where unknown)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _reset_peak() -> None:
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as fh:
            fh.write("5")
    except OSError:
        pass


def _worker_facts(dask_worker=None) -> dict:
    """Run on each worker: its pid, peak resident bytes and bytes sent."""
    return {
        "pid": os.getpid(),
        "peak": _vm("VmHWM"),
        "sent": int(getattr(dask_worker, "transfer_outgoing_bytes_total", 0)),
    }


def _worker_reset(dask_worker=None) -> int:
    _reset_peak()
    return os.getpid()


def _model_bytes(clf) -> tuple[int, str]:
    """Bytes of the cells' models (support vectors and coefficients) and
    where they are: 'client', or 'workers' when the fit left them there
    (counted there, not brought back)."""
    from localsvm._outofcore import ClusterModels

    models = clf.cell_models_
    if isinstance(models, ClusterModels):
        return models.nbytes, "workers"
    return sum(m._model_bytes() for m in models if m is not None), "client"


def _mib(b: float) -> str:
    return f"{b / 2**20:.0f}"


def run_cluster(
    sizes,
    *,
    n_test: int,
    workers: int,
    memory_limit: str,
    chunk_rows: int,
    cell_size: int,
    overlap: float,
    compare_rows: int,
    memmap_rows: int,
    out: TextIO,
) -> list[dict]:
    """Run the section; returns one dict per fit."""
    rows = []
    out.write(
        f"CellSVC on a LocalCluster: {workers} single-threaded workers, memory_limit="
        f"{memory_limit} each; rows of {CLUSTER_FEATURES} float32 generated on the workers "
        f"in blocks of {chunk_rows}; cell_size={cell_size}, overlap={overlap:g}; "
        f"test: {n_test} rows\n"
    )
    out.write(f"load: {os.getloadavg()[0]:.1f} {os.getloadavg()[1]:.1f} (1 and 5 min)\n")
    out.flush()
    if sizes:
        rows += _on_cluster(
            sizes, n_test, workers, memory_limit, chunk_rows, cell_size, overlap, compare_rows, out
        )
    if memmap_rows:
        rows.append(_memmap(memmap_rows, cell_size, overlap, out))
    return rows


def _on_cluster(
    sizes, n_test, workers, memory_limit, chunk_rows, cell_size, overlap, compare_rows, out
) -> list[dict]:
    """The Dask fits, one per size, on one LocalCluster."""
    from distributed import Client, LocalCluster

    from localsvm import CellSVC

    rows = []
    with (
        LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            memory_limit=memory_limit,
            dashboard_address=None,
            env={
                "RAYON_NUM_THREADS": "1",
                "OMP_NUM_THREADS": "1",
                "OPENBLAS_NUM_THREADS": "1",
                "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
            },
        ) as cluster,
        Client(cluster) as client,
    ):
        print_table(COLUMNS, [], out)
        Xt, yt = generated(n_test, TEST_STATE, chunk_rows)
        for n in sizes:
            X, y = generated(n, TRAIN_STATE, chunk_rows)
            pids = set(client.run(_worker_reset).values())
            sent0 = sum(f["sent"] for f in client.run(_worker_facts).values())
            _reset_peak()
            clf = CellSVC(
                cell_size=cell_size, overlap=overlap, cache_size=CLUSTER_CACHE_MB, random_state=0
            )
            _, fit_s = timed(lambda clf=clf, X=X, y=y: clf.fit(X, y))
            acc, pred_s = timed(lambda clf=clf: float((clf.predict(Xt) == yt).mean().compute()))
            facts = client.run(_worker_facts)
            died = len(pids - {f["pid"] for f in facts.values()})
            moved = sum(f["sent"] for f in facts.values()) - sent0
            peaks = "/".join(_mib(f["peak"]) for f in facts.values())
            model, where = _model_bytes(clf)
            row = {
                "rows": n,
                "fit_s": fit_s,
                "predict_s": pred_s,
                "accuracy": acc,
                "client_peak": _vm("VmHWM"),
                "worker_peaks": [f["peak"] for f in facts.values()],
                "died": died,
                "moved": moved,
                "model_bytes": model,
                "model_on": where,
                "cells": clf.n_cells_,
            }
            rows.append(row)
            line = [
                n,
                fit_s,
                pred_s,
                100 * acc,
                round(row["client_peak"] / 2**20),
                peaks,
                died,
                round(moved / 2**20),
                round(model / 2**20),
                where,
                str(clf.n_cells_),
            ]
            print_table(COLUMNS, [line], out, head=False)
            if n <= compare_rows:
                rows.append(
                    _in_memory(clf, fit_s, X, y, Xt, yt, n, workers, cell_size, overlap, out)
                )
            del clf
    return rows


def _in_memory(dclf, dask_fit_s, X, y, Xt, yt, n, workers, cell_size, overlap, out) -> dict:
    """The same rows fitted in memory, for the ratios."""
    from localsvm import CellSVC

    Xm, ym = X.compute(), y.compute()
    Xtm, ytm = Xt.compute(), yt.compute()
    clf = CellSVC(
        cell_size=cell_size,
        overlap=overlap,
        cache_size=CLUSTER_CACHE_MB * workers,
        random_state=0,
        n_jobs=workers,
    )
    _, fit_s = timed(lambda: clf.fit(Xm, ym))
    acc = float((clf.predict(Xtm) == ytm).mean())
    same = float((dclf.predict(Xtm) == ytm).mean())
    out.write(
        f"{'':>10} in memory, n_jobs={workers}: fit {fit_s:.1f} s, accuracy {100 * acc:.2f} % "
        f"({clf.n_cells_} cells); the Dask fit's time / the in-memory fit's = "
        f"{dask_fit_s:.1f} / {fit_s:.1f} = {dask_fit_s / fit_s:.2f}; "
        f"Dask model on the same test rows: {100 * same:.2f} %\n"
    )
    out.flush()
    return {
        "rows": n,
        "in_memory_fit_s": fit_s,
        "in_memory_accuracy": acc,
        "ratio": dask_fit_s / fit_s,
    }


_MEMMAP_CHILD = textwrap.dedent(
    """
    import json, os, sys, tempfile, threading, time
    import numpy as np
    from localsvm import CellSVC
    from localsvm._outofcore import chunked_memory_bound
    from localsvm_benchmarks.cluster import rule

    n, d, cell_size = (int(v) for v in sys.argv[1:4])
    overlap = float(sys.argv[4])

    def anon():
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1]) * 1024
        return 0

    import atexit, shutil
    folder = tempfile.mkdtemp()
    atexit.register(shutil.rmtree, folder, True)
    path = os.path.join(folder, "X.f64")
    X = np.memmap(path, dtype=np.float64, mode="w+", shape=(n, d))
    y = np.empty(n, dtype=np.int8)
    rng = np.random.default_rng(1)
    for s in range(0, n, 250000):
        blk = rng.standard_normal((min(250000, n - s), d))
        X[s : s + blk.shape[0]] = blk
        y[s : s + blk.shape[0]] = rule(blk)
    X.flush()
    del X
    X = np.memmap(path, dtype=np.float64, mode="r", shape=(n, d))
    peak = [anon()]
    before = peak[0]
    stop = threading.Event()

    def watch():
        while not stop.is_set():
            peak[0] = max(peak[0], anon())
            time.sleep(0.02)

    t = threading.Thread(target=watch, daemon=True)
    t.start()
    t0 = time.perf_counter()
    clf = CellSVC(cell_size=cell_size, overlap=overlap, random_state=0, n_jobs=1).fit(X, y)
    fit_s = time.perf_counter() - t0
    stop.set()
    t.join()
    Xt = rng.standard_normal((100000, d))
    acc = float((clf.predict(Xt) == rule(Xt)).mean())
    model = sum(m._model_bytes() for m in clf.cell_models_ if m is not None)
    bound = chunked_memory_bound(clf, n)
    print(json.dumps({"before": before, "peak": peak[0], "fit_s": fit_s, "acc": acc,
                      "data": n * d * 8, "model": model, "bound": bound,
                      "cells": clf.n_cells_}))
    """
)


def _memmap(n: int, cell_size: int, overlap: float, out: TextIO) -> dict:
    """CellSVC on a float64 memmap in a child process: its peak anonymous
    memory against the data's size."""
    import json

    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    args = [str(n), str(CLUSTER_FEATURES), str(cell_size), str(overlap)]
    proc = subprocess.run(
        [sys.executable, "-c", _MEMMAP_CHILD, *args], capture_output=True, text=True, env=env
    )
    if proc.returncode != 0:
        out.write(f"memmap {n} rows: the child failed:\n{proc.stderr[-2000:]}\n")
        return {"rows": n, "memmap_error": proc.stderr[-2000:]}
    r = json.loads(proc.stdout.strip().splitlines()[-1])
    out.write(
        f"memmap {n} x {CLUSTER_FEATURES} float64 ({_mib(r['data'])} MiB on disk), n_jobs=1: "
        f"fit {r['fit_s']:.1f} s, accuracy {100 * r['acc']:.2f} % ({r['cells']} cells); "
        f"anonymous memory {_mib(r['before'])} MiB before the fit, peak {_mib(r['peak'])} MiB "
        f"(+{_mib(r['peak'] - r['before'])} MiB; the model's arrays: {_mib(r['model'])} MiB; "
        f"the documented bound on the growth: {_mib(r['bound'])} MiB)\n"
    )
    out.flush()
    return {"rows": n, "memmap": r}
