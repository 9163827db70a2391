"""The ``threads`` engine against the ``dask`` engine, in one run.

``python -m localsvm_benchmarks.engines [--workers 2] [--repeat 3]
[--ijcnn1 PATH [--profile-rows N]]``

Starts a ``LocalCluster`` of ``--workers`` single-threaded worker processes
and times, with each engine, the same work (the best of ``--repeat`` runs):

- the per-task overhead: 400 tasks that return at once;
- a 26-class one-vs-one ``SVC`` fit (325 binary problems) on a synthetic set
  of 15 000 rows × 16 features (``make_classification``, fixed seed);
- ``LocalSVC.predict`` of 1 000 Banana test examples (chunks of local
  problems);
- ``ProfileSVC(n_clusters=16)`` on ijcnn1's 49 990 training rows (or the
  first ``--profile-rows``) when ``--ijcnn1`` names its ``.npz`` file
  (per-cluster fits), else on the synthetic set.

Every line also says whether the two engines' predictions are identical.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np


def _noop(task, shared):
    return task


def _best(fn, repeat):
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def main(argv=None) -> None:
    """Run the comparison and print one line per workload.

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

    from distributed import Client, LocalCluster
    from sklearn.datasets import make_classification

    import localsvm
    from localsvm.datasets import load_banana

    cluster = LocalCluster(
        n_workers=args.workers,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        env={"RAYON_NUM_THREADS": "1"},
    )
    client = Client(cluster)
    print(
        f"Dask LocalCluster: {args.workers} worker processes × 1 thread; "
        f"threads engine: n_jobs={args.workers}; machine: {os.cpu_count()} CPUs; "
        f"best of {args.repeat}"
    )

    def both(label, work):
        res = {}
        for engine in ("threads", "dask"):
            with localsvm.use_engine(engine):
                res[engine] = _best(work, args.repeat)
        (t_thr, a), (t_dsk, b) = res["threads"], res["dask"]
        same = "identical" if np.array_equal(np.asarray(a), np.asarray(b)) else "DIFFERENT"
        print(f"{label:<46} threads {t_thr:8.3f} s   dask {t_dsk:8.3f} s   ({same})")
        return t_thr, t_dsk

    n_tasks = 400
    t_thr, t_dsk = both(
        f"{n_tasks} empty tasks",
        lambda: localsvm.run_tasks(_noop, range(n_tasks), n_jobs=args.workers, shared=0),
    )
    print(
        f"{'':<46} per task: threads {1e3 * t_thr / n_tasks:.3f} ms, "
        f"dask {1e3 * t_dsk / n_tasks:.3f} ms"
    )

    X, y = make_classification(
        15_000,
        16,
        n_informative=12,
        n_redundant=0,
        n_classes=26,
        n_clusters_per_class=1,
        random_state=0,
    )

    def svc26():
        model = localsvm.SVC(C=10.0, n_jobs=args.workers).fit(X[:12_000], y[:12_000])
        return model.predict(X[12_000:])

    both("SVC fit, 26 classes (325 pairs), 12 000 rows", svc26)

    banana = load_banana(0)

    def local():
        model = localsvm.LocalSVC(n_jobs=args.workers).fit(banana.X_train, banana.y_train)
        return model.predict(banana.X_test[:1000])

    both("LocalSVC predict, Banana, 1 000 queries", local)

    if args.ijcnn1:
        with np.load(args.ijcnn1) as f:
            Xp, yp = f["X_train"][: args.profile_rows], f["y_train"][: args.profile_rows]
        label = f"ProfileSVC fit (16 clusters), ijcnn1 {Xp.shape[0]} rows"
    else:
        Xp, yp = X, y
        label = f"ProfileSVC fit (16 clusters), synthetic {Xp.shape[0]} rows"

    def profile():
        model = localsvm.ProfileSVC(n_clusters=16, random_state=0, n_jobs=args.workers)
        model.fit(Xp, yp)
        return model.predict(Xp[:2000])

    both(label, profile)
    client.close()
    cluster.close()


if __name__ == "__main__":
    main()
