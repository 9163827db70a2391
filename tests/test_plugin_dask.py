"""The Dask engine plugin in ``plugins/localsvm-dask``: that it installs as an
entry point and registers ``"dask"``, that every estimator gives the same
model through it as through the ``"threads"`` engine, that shared data is
sent once per batch, and how it meets faults (a worker killed mid-batch, a
task that raises, a scheduler that cannot be reached).

The tests run on a two-process ``LocalCluster`` started once for the module.
They need the plugin installed (``pip install ./plugins/localsvm-dask``);
without it they fail, saying so, rather than skip.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import make_classification

import localsvm
from localsvm.plugins import DISABLE_AUTOLOAD_ENV, reset_plugin_manager

distributed = pytest.importorskip("distributed")

import _dask_tasks  # noqa: E402  (this folder is on sys.path under pytest)

INSTALL_HINT = (
    "the localsvm-dask plugin is not installed; run `pip install ./plugins/localsvm-dask` "
    "from the repository root"
)
TESTS_DIR = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def cluster():
    """A two-worker, one-thread-per-worker process cluster and its client."""
    path = os.pathsep.join(p for p in (str(TESTS_DIR), os.environ.get("PYTHONPATH", "")) if p)
    with (
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            env={"PYTHONPATH": path, "RAYON_NUM_THREADS": "1"},
        ) as lc,
        distributed.Client(lc) as client,
    ):
        yield lc, client


@pytest.fixture(autouse=True)
def dask_engine(monkeypatch):
    """Entry points loaded, and the engine registered (fail if it is not)."""
    monkeypatch.delenv(DISABLE_AUTOLOAD_ENV, raising=False)
    reset_plugin_manager()
    if "dask" not in localsvm.list_engines():
        pytest.fail(INSTALL_HINT)
    yield
    reset_plugin_manager()


def data(n_classes: int, n: int = 600, seed: int = 0):
    X, y = make_classification(
        n,
        8,
        n_informative=6,
        n_redundant=0,
        n_classes=n_classes,
        n_clusters_per_class=1,
        random_state=seed,
    )
    return X, y


def test_registered_and_listed():
    from localsvm_dask import DaskEngine

    engine = localsvm.get_engine("dask")
    assert isinstance(engine, DaskEngine)
    out = subprocess.run(
        [sys.executable, "-m", "localsvm", "info"], capture_output=True, text=True, check=True
    ).stdout
    engines_line = next(line for line in out.splitlines() if "engines" in line)
    assert "dask" in engines_line


def fit_both(make, fit, cluster):
    """``fit(make())`` under the threads engine and under the Dask engine."""
    with localsvm.use_engine("threads"):
        a = fit(make())
    with localsvm.use_engine("dask"):
        b = fit(make())
    return a, b


ESTIMATORS = {
    # 12 classes: 66 one-vs-one pairs, each its own task.
    "SVC-ovo": (lambda: localsvm.SVC(C=2.0, n_jobs=2), 12),
    "LocalSVC": (lambda: localsvm.LocalSVC(C=2.0, n_jobs=2), 3),
    "ProfileSVC": (lambda: localsvm.ProfileSVC(n_clusters=6, random_state=0, n_jobs=2), 3),
    "FLSAClassifier": (lambda: localsvm.FLSAClassifier(n_support=40, n_jobs=2), 4),
    "FLSAClassifierCV": (lambda: localsvm.FLSAClassifierCV(n_support=30, cv=3, n_jobs=2), 2),
    "ClusterSVC": (lambda: localsvm.ClusterSVC(random_state=0, n_jobs=2), 4),
    "IncrementalSVC": (lambda: localsvm.IncrementalSVC(n_jobs=2), 3),
}


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_same_model_as_threads(name, cluster):
    make, n_classes = ESTIMATORS[name]
    X, y = data(n_classes)
    train, test = slice(0, 450), slice(450, 600)
    if name == "LocalSVC":
        test = slice(450, 510)  # local problems are per query: keep the batch small

    def fit(est):
        return est.fit(X[train], y[train])

    a, b = fit_both(make, fit, cluster)
    with localsvm.use_engine("threads"):
        da, pa = a.decision_function(X[test]), a.predict(X[test])
    with localsvm.use_engine("dask"):
        db, pb = b.decision_function(X[test]), b.predict(X[test])
    np.testing.assert_array_equal(pa, pb)
    np.testing.assert_allclose(da, db, rtol=0, atol=1e-12)
    # The Dask-fitted model also predicts the same without Dask.
    np.testing.assert_array_equal(b.predict(X[test]), pa)


def test_shared_data_sent_once_per_worker(cluster):
    _, client = cluster
    shared = np.arange(200_000, dtype=float)  # 1.6 MB: would dominate each task if pickled in
    with localsvm.use_engine("dask"):
        out = localsvm.run_tasks(_dask_tasks.where_shared, range(40), shared=shared)
    pids = {pid for pid, _ in out}
    objects = {(pid, obj) for pid, obj in out}
    # Deserialised once per worker, not once per task.
    assert len(objects) == len(pids) <= len(client.nthreads())


def test_task_exception_keeps_type_and_message(cluster):
    with localsvm.use_engine("dask"), pytest.raises(ValueError, match="task 7 refused"):
        localsvm.run_tasks(_dask_tasks.fail_on, range(12), shared=7)


def test_worker_killed_mid_batch(cluster):
    lc, client = cluster
    before = set(client.nthreads())
    # Every task waits for this event, so the batch cannot end before the
    # kill whatever the machine's speed.
    gate = distributed.Event(f"release-{uuid.uuid4().hex}", client=client)
    result: dict[str, object] = {}

    def run():
        with localsvm.use_engine("dask"):
            result["out"] = localsvm.run_tasks(
                _dask_tasks.square_when_released, range(24), shared=gate.name
            )

    worker = threading.Thread(target=run)
    worker.start()
    victim = next(iter(lc.workers.values()))
    # Kill the victim once it holds a task of the batch (polled, at most a
    # minute: the tasks cannot finish meanwhile).
    for _ in range(600):
        if client.processing().get(victim.worker_address):
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"no task reached worker {victim.worker_address}")
    os.kill(victim.process.pid, signal.SIGKILL)
    assert worker.is_alive()  # still waiting for its tasks
    gate.set()
    worker.join(timeout=120)
    assert not worker.is_alive()
    assert result["out"] == [i * i for i in range(24)]
    client.wait_for_workers(2, timeout=60)
    assert set(client.nthreads()) != before  # the nanny restarted it


@pytest.mark.timing
def test_unreachable_scheduler_is_a_clear_error():
    script = textwrap.dedent(
        """
        import time, localsvm
        from sklearn.datasets import load_iris
        X, y = load_iris(return_X_y=True)
        t = time.perf_counter()
        try:
            with localsvm.use_engine("dask"):
                localsvm.SVC().fit(X, y)
        except ConnectionError as err:
            print("ConnectionError", round(time.perf_counter() - t, 1), err)
        """
    )
    env = dict(os.environ, LOCALSVM_DASK_SCHEDULER="tcp://127.0.0.1:9", LOCALSVM_DASK_TIMEOUT="2")
    env.pop(DISABLE_AUTOLOAD_ENV, None)
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120
    )
    assert out.stdout.startswith("ConnectionError"), out.stdout + out.stderr
    assert "tcp://127.0.0.1:9" in out.stdout and "LOCALSVM_DASK_SCHEDULER" in out.stdout
    assert float(out.stdout.split()[1]) < 30


def test_bad_timeout_names_the_variable(monkeypatch):
    from localsvm_dask import ENV_TIMEOUT, _timeout

    monkeypatch.setenv(ENV_TIMEOUT, "soon")
    with pytest.raises(ValueError, match=ENV_TIMEOUT):
        _timeout()


def test_script_without_main_guard_gets_one_line_saying_so(tmp_path):
    # Local worker processes import the main script again (spawn): without
    # the guard each of them would fit again and the cluster fail to start
    # with hundreds of lines from the workers. The engine refuses first.
    script = tmp_path / "fit_unguarded.py"
    script.write_text(
        textwrap.dedent(
            """
            import localsvm
            from sklearn.datasets import load_iris

            X, y = load_iris(return_X_y=True)
            with localsvm.use_engine("dask"):
                localsvm.SVC().fit(X, y)
            print("fitted")
            """
        )
    )
    env = dict(os.environ)
    env.pop("LOCALSVM_DASK_SCHEDULER", None)
    env.pop(DISABLE_AUTOLOAD_ENV, None)
    out = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120
    )
    assert out.returncode == 1 and "fitted" not in out.stdout, out.stdout + out.stderr
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("RuntimeError:"), out.stderr
    assert 'if __name__ == "__main__":' in last and f"{script} again" in last
    assert "line 7" in last  # the `localsvm.SVC().fit(X, y)` line
    assert "Nanny" not in out.stderr and "bootstrapping" not in out.stderr
    assert len(out.stderr.splitlines()) < 40


def test_main_guard_detection(tmp_path):
    # The line that led to the engine, at the script's top level: flagged
    # outside the guard (either spelling), not inside it, and not for code
    # run without a script file.
    script = tmp_path / "guards.py"
    script.write_text(
        textwrap.dedent(
            """
            from localsvm_dask import _unguarded_call_line

            def call():
                return _unguarded_call_line()

            print("top", call())
            if "__main__" == __name__:
                print("guarded", call())
            """
        )
    )
    out = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.splitlines() == [f"top ({str(script)!r}, 7)", "guarded None"]
    from localsvm_dask import _unguarded_call_line

    assert _unguarded_call_line() is None  # under pytest: no script's top level
    inline = subprocess.run(
        [sys.executable, "-c", "from localsvm_dask import _unguarded_call_line as f; print(f())"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert inline.stdout.strip() == "None"
