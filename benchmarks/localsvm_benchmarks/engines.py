"""The ``threads`` engine against the ``dask`` engine, in one run.

``localsvm bench engines [--workers 2] [--repeat 3] [--n-train N]`` (or
``python -m localsvm_benchmarks.engines [--workers 2] [--repeat 3]
[--ijcnn1 PATH] [--profile-rows N]``)

Starts a ``LocalCluster`` of ``--workers`` single-threaded worker processes
and times, with each engine, the same work (the best of ``--repeat`` runs):

- the per-task overhead: 400 tasks that return at once;
- a 26-class one-vs-one ``SVC`` fit (325 binary problems) on a synthetic set
  of 15 000 rows × 16 features (``make_classification``, fixed seed);
- ``LocalSVC.predict`` of 1 000 Banana test examples (chunks of local
  problems);
- ``ProfileSVC(n_clusters=16)`` on ijcnn1's 49 990 training rows (or the
  first ``--n-train`` / ``--profile-rows``; per-cluster fits): the bundled
  copy, or the ``.npz`` file ``--ijcnn1`` names.

Every row also says whether the two engines' predictions are identical.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TextIO

import numpy as np

from .data import many_classes
from .report import columns, print_table, timed


def _noop(task, shared):
    return task


#: Why ``bench engines`` cannot run without the Dask plugin.
DASK_MISSING = (
    "bench engines compares the threads engine with the dask engine, which the "
    "localsvm-dask plugin registers: pip install ./plugins/localsvm-dask"
)

#: The columns of the engines' table.
COLUMNS = columns("work <48 | threads s >10.3f | dask s >10.3f | predictions")


def run_engines(
    workers: int = 2,
    repeat: int = 3,
    *,
    ijcnn1: str | None = None,
    profile_rows: int | None = None,
    out: TextIO | None = None,
) -> list[dict]:
    """Time each workload with the ``threads`` and the ``dask`` engine and
    print one table row per workload.

    Parameters
    ----------
    workers : int, default=2
        Worker processes of the ``LocalCluster`` (one thread each), and
        ``n_jobs`` of the threads engine.
    repeat : int, default=3
        Runs per timing, the best kept.
    ijcnn1 : str or None, default=None
        Path of an ``.npz`` file with ijcnn1's ``X_train`` and ``y_train``
        for the ProfileSVC workload; None: the bundled copy.
    profile_rows : int or None, default=None
        The ProfileSVC workload uses only the first this many rows.
    out : text stream or None, default=None
        Where to print (standard output by default).

    Returns
    -------
    list of dict
        One row per workload: ``work``, ``threads_s``, ``dask_s``,
        ``identical`` (whether the two engines' results are equal).
    """
    import localsvm
    from localsvm.datasets import load_banana, load_dataset

    if "dask" not in localsvm.list_engines():
        raise ValueError(DASK_MISSING)
    from distributed import Client, LocalCluster

    out = sys.stdout if out is None else out
    cluster = LocalCluster(
        n_workers=workers,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        env={"RAYON_NUM_THREADS": "1"},
    )
    client = Client(cluster)
    print(
        f"Dask LocalCluster: {workers} worker processes × 1 thread; "
        f"threads engine: n_jobs={workers}; machine: {os.cpu_count()} CPUs; "
        f"best of {repeat}",
        file=out,
    )
    print_table(COLUMNS, [], out)
    rows: list[dict] = []

    def both(label, work):
        res = {}
        for engine in ("threads", "dask"):
            with localsvm.use_engine(engine):
                res[engine] = timed(work, repeat)
        (a, t_thr), (b, t_dsk) = res["threads"], res["dask"]
        same = bool(np.array_equal(np.asarray(a), np.asarray(b)))
        line = (label, t_thr, t_dsk, "identical" if same else "different")
        print_table(COLUMNS, [line], out, head=False)
        rows.append({"work": label, "threads_s": t_thr, "dask_s": t_dsk, "identical": same})
        return t_thr, t_dsk

    try:
        n_tasks = 400
        t_thr, t_dsk = both(
            f"{n_tasks} empty tasks",
            lambda: localsvm.run_tasks(_noop, range(n_tasks), n_jobs=workers, shared=0),
        )
        print(
            f"{'':<48} per task: threads {1e3 * t_thr / n_tasks:.3f} ms, "
            f"dask {1e3 * t_dsk / n_tasks:.3f} ms",
            file=out,
        )
        X, y = many_classes(15_000)

        def svc26():
            model = localsvm.SVC(C=10.0, n_jobs=workers).fit(X[:12_000], y[:12_000])
            return model.predict(X[12_000:])

        both("SVC fit, 26 classes (325 pairs), 12 000 rows", svc26)
        banana = load_banana(0)

        def local():
            model = localsvm.LocalSVC(n_jobs=workers).fit(banana.X_train, banana.y_train)
            return model.predict(banana.X_test[:1000])

        both("LocalSVC predict, Banana, 1 000 queries", local)
        if ijcnn1:
            with np.load(ijcnn1) as f:
                Xp, yp = f["X_train"][:profile_rows], f["y_train"][:profile_rows]
        else:
            d = load_dataset("ijcnn1")
            Xp, yp = d.X_train[:profile_rows], d.y_train[:profile_rows]

        def profile():
            model = localsvm.ProfileSVC(n_clusters=16, random_state=0, n_jobs=workers)
            model.fit(Xp, yp)
            return model.predict(Xp[:2000])

        both(f"ProfileSVC fit (16 clusters), ijcnn1 {Xp.shape[0]} rows", profile)
    finally:
        client.close()
        cluster.close()
    return rows


def main(argv=None) -> None:
    """``python -m localsvm_benchmarks.engines``: :func:`run_engines` from
    the command line (also ``localsvm bench engines``).

    Parameters
    ----------
    argv : list of str or None, default=None
        Command-line arguments; None reads ``sys.argv``.
    """
    parser = argparse.ArgumentParser(
        prog="python -m localsvm_benchmarks.engines", description=__doc__
    )
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--ijcnn1", default=None, help="path of ijcnn1.npz (X_train, y_train)")
    parser.add_argument(
        "--profile-rows", type=int, default=None, help="use only the first N rows for ProfileSVC"
    )
    args = parser.parse_args(argv)
    run_engines(args.workers, args.repeat, ijcnn1=args.ijcnn1, profile_rows=args.profile_rows)


if __name__ == "__main__":
    main()
