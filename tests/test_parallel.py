"""run_tasks: the one place independent work goes through."""

from __future__ import annotations

import threading

import pytest

from localsvm import parallel
from localsvm.parallel import effective_n_jobs, run_tasks, set_default_engine, use_engine


def test_results_keep_task_order():
    assert run_tasks(lambda t: t * 2, range(20), n_jobs=4) == [2 * t for t in range(20)]


def test_threads_engine_uses_several_threads():
    barrier = threading.Barrier(2, timeout=10)

    def task(_):
        barrier.wait()  # deadlocks (then times out) unless two run at once
        return threading.get_ident()

    idents = run_tasks(task, [0, 1], n_jobs=2, engine="threads")
    assert len(set(idents)) == 2


def test_non_thread_safe_work_runs_in_the_caller():
    main = threading.get_ident()
    idents = run_tasks(lambda _: threading.get_ident(), range(4), n_jobs=4, thread_safe=False)
    assert set(idents) == {main}


def test_engine_selection_order(monkeypatch):
    monkeypatch.setenv(parallel.ENGINE_ENV, "serial")
    assert parallel.get_default_engine() == "serial"
    set_default_engine("threads")
    try:
        assert parallel.get_default_engine() == "threads"
        with use_engine("serial"):
            assert parallel.get_default_engine() == "serial"
        assert parallel.get_default_engine() == "threads"
    finally:
        set_default_engine(None)


def test_unknown_engine_is_refused():
    with pytest.raises(ValueError, match="unknown engine 'no-such-engine'"):
        set_default_engine("no-such-engine")
    with pytest.raises(ValueError, match="unknown engine"), use_engine("no-such-engine"):
        pass
    with pytest.raises(ValueError, match="unknown engine"):
        run_tasks(str, [1, 2], n_jobs=2, engine="no-such-engine")


@pytest.mark.parametrize("engine", ["serial", "threads"])
def test_shared_data_is_the_second_argument(engine):
    shared = {"offset": 100}
    seen = []

    def task(t, s):
        seen.append(s)
        return t + s["offset"]

    assert run_tasks(task, range(5), n_jobs=2, engine=engine, shared=shared) == [
        100,
        101,
        102,
        103,
        104,
    ]
    # In-process engines pass the object itself, never a copy.
    assert all(s is shared for s in seen)
    # Inline runs (one job) pass it the same way.
    assert run_tasks(task, [1], shared=shared) == [101]


@pytest.mark.parametrize(("n_jobs", "expected"), [(1, 1), (3, 3)])
def test_effective_n_jobs(n_jobs, expected):
    assert effective_n_jobs(n_jobs) == expected


def test_effective_n_jobs_defaults_and_errors():
    assert effective_n_jobs(None) == effective_n_jobs(-1) >= 1
    with pytest.raises(ValueError, match="n_jobs"):
        effective_n_jobs(0)


def test_a_joblib_configuration_chooses_the_joblib_engine(monkeypatch):
    import joblib

    monkeypatch.delenv(parallel.ENGINE_ENV, raising=False)
    assert parallel.get_default_engine() == "threads"
    with joblib.parallel_config(backend="threading", n_jobs=2):
        assert parallel.get_default_engine() == "joblib"
        with use_engine("serial"):  # a localsvm choice still wins
            assert parallel.get_default_engine() == "serial"
    # joblib's default (loky) is not taken: threads share the data.
    with joblib.parallel_config(backend="loky"):
        assert parallel.get_default_engine() == "threads"
    assert parallel.get_default_engine() == "threads"


def test_estimators_run_on_the_callers_joblib_backend(monkeypatch):
    # A backend of the user's own, registered with joblib, receives the
    # estimator's solves, and the model is the one the threads engine fits.
    import joblib
    import numpy as np
    from joblib._parallel_backends import ThreadingBackend
    from sklearn.datasets import make_blobs

    from localsvm import SVC, CellSVC

    calls = []

    class Counting(ThreadingBackend):
        def submit(self, func, callback=None):
            calls.append(func)
            return super().submit(func, callback=callback)

    joblib.register_parallel_backend("localsvm_counting", Counting)
    monkeypatch.delenv(parallel.ENGINE_ENV, raising=False)
    X, y = make_blobs(n_samples=400, centers=4, cluster_std=3.0, random_state=0)
    for make in (lambda: SVC(n_jobs=2), lambda: CellSVC(n_cells=3, n_jobs=2, random_state=0)):
        plain = make().fit(X, y)
        calls.clear()
        with joblib.parallel_config(backend="localsvm_counting"):
            configured = make().fit(X, y)
        assert calls, "the joblib backend ran nothing"
        np.testing.assert_array_equal(configured.predict(X), plain.predict(X))
        np.testing.assert_array_equal(configured.decision_function(X), plain.decision_function(X))


def test_processes_through_joblib_give_the_same_model():
    import joblib
    import numpy as np
    from sklearn.datasets import make_blobs

    from localsvm import SVC

    X, y = make_blobs(n_samples=300, centers=3, cluster_std=3.0, random_state=1)
    plain = SVC(n_jobs=2).fit(X, y)
    with joblib.parallel_config(backend="loky", n_jobs=2), use_engine("joblib"):
        loky = SVC(n_jobs=2).fit(X, y)
    np.testing.assert_array_equal(loky.dual_coef_, plain.dual_coef_)
    np.testing.assert_array_equal(loky.intercept_, plain.intercept_)
