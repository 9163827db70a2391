"""Ctrl-C during a long fit or predict.

Each case runs in a child process: a job that would run for many seconds
starts, a thread of the child sends the process SIGINT after about a second
and notes the time, and the child reports how long ``KeyboardInterrupt``
took to arrive, which fitted attributes the estimator holds afterwards, and
whether a second, small call in the same process then works.

The tests that bound the interrupt's latency are marked ``timing`` (a heavily
loaded machine can delay any thread past the bound): ``-m 'not timing'``
leaves them out.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from localsvm import SVC, run_tasks

#: SIGINT is sent this long after the job starts.
DELAY = 1.0
#: The interrupt must arrive within this long of the signal.
MAX_LATENCY = 1.5

CHILD = textwrap.dedent(
    """
    import json, os, signal, sys, threading, time
    import numpy as np
    import localsvm
    from sklearn.datasets import load_iris

    case, delay = sys.argv[1], float(sys.argv[2])
    rng = np.random.default_rng(0)

    def noisy(n, d, classes=2):
        # Random labels: hard problems, many SMO iterations.
        return rng.normal(size=(n, d)), rng.integers(0, classes, size=n)

    def fit(est, X, y):
        return lambda: est.fit(X, y)

    if case == "svc_binary":
        X, y = noisy(20000, 50)
        est = localsvm.SVC(C=100.0, n_jobs=1)
        job = fit(est, X, y)
    elif case in ("svc_small", "svc_small_jobs"):
        # A small problem (solved on the calling thread) that runs long: a
        # linear kernel on random labels at a large C.
        X, y = noisy(2000, 5)
        est = localsvm.SVC(C=1e4, kernel="linear", n_jobs=1 if case == "svc_small" else 2)
        job = fit(est, X, y)
    elif case == "svc_multiclass":
        X, y = noisy(18000, 50, classes=3)
        est = localsvm.SVC(C=100.0, n_jobs=2)
        job = fit(est, X, y)
    elif case == "flsa":
        X, y = noisy(20000, 20)
        est = localsvm.FLSAClassifier(n_support=300, gram="on_the_fly")
        job = fit(est, X, y)
    elif case == "local_predict":
        X, y = noisy(6000, 10)
        est = localsvm.LocalSVC(C=100.0, kernel="rbf", similarity="knn", k=2000)
        est.fit(X, y)
        Xq = rng.normal(size=(20000, 10))
        job = lambda: est.predict(Xq)
    elif case == "incremental":
        X, y = noisy(100000, 10)
        est = localsvm.IncrementalSVC(C=100.0, max_neighbors=200)
        job = fit(est, X, y)
    elif case == "cluster":
        X, y = noisy(20000, 50)
        est = localsvm.ClusterSVC(C=100.0, n_columns=6000, n_jobs=1)
        job = fit(est, X, y)
    elif case == "cluster_linear":
        # Wide linear rows: the signal lands in the per-class PᵀP and
        # Cholesky factorisation (seconds of BLAS), in two worker threads.
        X, y = noisy(12000, 2500)
        est = localsvm.ClusterSVC(C=100.0, kernel="linear", n_jobs=2)
        job = fit(est, X, y)
    elif case == "profile":
        X, y = noisy(16000, 50)
        est = localsvm.ProfileSVC(
            C=100.0, kernel="rbf", n_clusters=2, n_landmarks=200, n_jobs=2, random_state=0
        )
        job = fit(est, X, y)
    elif case == "svccv":
        X, y = noisy(6000, 50)
        est = localsvm.SVCCV(Cs=[10.0, 100.0, 1000.0], gammas=3, cv=3, n_jobs=2)
        job = fit(est, X, y)
    elif case == "cells":
        X, y = noisy(20000, 50)
        est = localsvm.CellSVC(C=100.0, n_cells=2, n_jobs=2, random_state=0)
        job = fit(est, X, y)
    elif case == "nusvc":
        X, y = noisy(20000, 50)
        est = localsvm.NuSVC(nu=0.3, n_jobs=1)
        job = fit(est, X, y)
    elif case in ("svr", "nusvr"):
        X, _ = noisy(20000, 50)
        y = rng.normal(size=X.shape[0])
        est = localsvm.SVR(C=100.0) if case == "svr" else localsvm.NuSVR(C=100.0)
        job = fit(est, X, y)
    elif case == "oneclass":
        X, _ = noisy(40000, 50)
        est = localsvm.OneClassSVM(nu=0.5)
        job = lambda: est.fit(X)
    else:
        raise SystemExit(f"unknown case {case}")

    sent = []

    def fire():
        time.sleep(delay)
        sent.append(time.monotonic())
        os.kill(os.getpid(), signal.SIGINT)

    fitted_before = sorted(k for k in vars(est) if k.endswith("_") and not k.startswith("__"))
    threading.Thread(target=fire, daemon=True).start()
    start = time.monotonic()
    out = {"fitted_before": fitted_before}
    try:
        job()
        out["interrupted"] = False
        out["elapsed"] = time.monotonic() - start
    except KeyboardInterrupt:
        out["interrupted"] = True
        out["latency"] = time.monotonic() - sent[0] if sent else None
    out["fitted_after"] = sorted(
        k for k in vars(est) if k.endswith("_") and not k.startswith("__")
    )
    # The next call in the same process runs normally.
    Xi, yi = load_iris(return_X_y=True)
    perm = np.random.default_rng(1).permutation(yi.size)  # iris is sorted by class
    Xi, yi = Xi[perm], yi[perm]
    again = type(est)(**est.get_params()).set_params(
        **({"n_support": 10} if case == "flsa" else {})
    )
    if case == "cluster":
        again.set_params(n_columns=50)
    if case == "cluster_linear":
        again.set_params(kernel="rbf", n_columns=50)  # linear MCSVM: 0.67 on iris
    if case == "local_predict":
        again.set_params(k=30)
    if case == "incremental":
        again.set_params(max_neighbors=20)
    if case == "profile":
        again.set_params(n_landmarks="auto")  # 200 would exceed iris' 150 rows
    if case == "svccv":
        again.set_params(Cs=[1.0, 10.0], gammas=2)
    if case == "oneclass":
        # No score: the refit's decision values are finite, one per row.
        d = again.fit(Xi).decision_function(Xi)
        out["score_after"] = float(d.shape == (yi.size,) and np.all(np.isfinite(d)))
    else:
        out["score_after"] = float(again.fit(Xi, yi).score(Xi, yi))
    print("RESULT " + json.dumps(out), flush=True)
    """
)


def _run_child(case: str) -> dict:
    env = dict(os.environ)
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, case, str(DELAY)],
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, (proc.returncode, proc.stdout, proc.stderr[-3000:])
    return json.loads(lines[-1][len("RESULT ") :])


CASES = {
    "cells": [],
    "svc_binary": [],
    "svc_small": [],
    "svc_small_jobs": [],
    "svccv": [],
    "svc_multiclass": [],
    "flsa": [],
    "local_predict": [
        "X_fit_",
        "classes_",
        "class_counts_",
        "n_features_in_",
        "use_gram_",
        "y_fit_",
    ],
    "incremental": [],
    "cluster": [],
    "cluster_linear": [],
    "profile": [],
    "nusvc": [],
    "svr": [],
    "nusvr": [],
    "oneclass": [],
}


@pytest.mark.timing
@pytest.mark.parametrize("case", sorted(CASES))
def test_sigint_stops_a_long_job_promptly(case):
    out = _run_child(case)
    print(case, out)
    assert out["interrupted"], f"the job ended before the signal: {out}"
    assert out["latency"] is not None and out["latency"] < MAX_LATENCY, out
    # A fit leaves the estimator as it was (unfitted); a predict leaves the
    # fitted model alone.
    assert out["fitted_after"] == out["fitted_before"], out
    if case != "local_predict":
        assert out["fitted_after"] == [], out
    else:
        assert set(CASES[case]) <= set(out["fitted_after"]), out
    assert out["score_after"] > 0.9, out


def test_an_interrupted_refit_keeps_the_previous_model(monkeypatch):
    X = np.array([[0.0, 0.0], [1.0, 1.0], [0.0, 1.0], [1.0, 0.0]] * 5)
    y = np.array([0, 1, 1, 0] * 5)
    est = SVC(kernel="linear").fit(X, y)
    before = est.dual_coef_.copy(), est.support_.copy(), est.intercept_.copy()

    import localsvm.svc as svc_module

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    # Interrupt the refit where the solves run.
    monkeypatch.setattr(svc_module, "run_tasks", interrupted)
    with pytest.raises(KeyboardInterrupt):
        est.fit(X[::-1] * 3.0, 1 - y[::-1])
    monkeypatch.undo()
    np.testing.assert_array_equal(est.dual_coef_, before[0])
    np.testing.assert_array_equal(est.support_, before[1])
    np.testing.assert_array_equal(est.intercept_, before[2])
    assert est.predict(X).tolist() == y.tolist()


def test_the_thread_engine_stops_pending_tasks_and_waits_for_running_ones():
    import threading
    import time

    started, finished = [], []
    lock = threading.Lock()
    main = threading.main_thread()

    def task(t):
        with lock:
            started.append(t)
        if t == 0:
            # The first task interrupts the waiting main thread, like Ctrl-C.
            import _thread

            _thread.interrupt_main()
        time.sleep(0.3)
        with lock:
            finished.append(t)
        return t

    assert threading.current_thread() is main
    with pytest.raises(KeyboardInterrupt):
        run_tasks(task, range(20), n_jobs=2, engine="threads")
    # Pending tasks were cancelled; the running ones ended before the raise.
    assert len(started) < 20
    assert sorted(finished) == sorted(started)


@pytest.mark.timing
def test_interrupt_all_stops_a_solve_in_a_worker_thread_and_nothing_later():
    import threading
    import time

    from localsvm import _core

    rng = np.random.default_rng(0)
    X = rng.normal(size=(6000, 20))
    y = np.where(rng.random(6000) < 0.5, 1.0, -1.0)
    upper = np.full(6000, 1e3)
    got = {}

    running = threading.Event()

    def worker():
        try:
            # The progress callback runs while the solve is under way.
            _core.solve_qp(
                X,
                y,
                upper,
                kernel=_core.Kernel("rbf", 0.05),
                settings=_core.SolverSettings(tol=1e-8, cache_size=4.0),
                progress=lambda n_iter, gap: running.set(),
            )
            got["result"] = "finished"
        except KeyboardInterrupt:
            got["result"] = "interrupted"
        got["at"] = time.monotonic()

    t = threading.Thread(target=worker)
    t.start()
    assert running.wait(timeout=120), "the solve never reported progress"
    sent = time.monotonic()
    _core.interrupt_all()
    t.join(timeout=30)
    assert got["result"] == "interrupted"
    assert got["at"] - sent < MAX_LATENCY
    # A call made after it runs normally.
    k = _core.kernel_matrix(X[:30], X[:30], kernel=_core.Kernel("linear"))
    np.testing.assert_allclose(k, X[:30] @ X[:30].T)
