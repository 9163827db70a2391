"""Progress reporting: scikit-learn's callback API (``set_callbacks``), the
solver's progress slices, and ``verbose`` logging."""

from __future__ import annotations

import importlib.util
import logging
import pickle
import threading
import types

import numpy as np
import pytest
from sklearn.datasets import make_classification

from localsvm import (
    SVC,
    ClusterSVC,
    FLSAClassifier,
    FLSAClassifierCV,
    IncrementalSVC,
    LocalSVC,
    ProfileSVC,
    RFLSAClassifier,
    _core,
    hookimpl,
    plugins,
    run_tasks,
)
from localsvm.parallel import use_engine

pytest.importorskip("sklearn.callback")


class Recorder:
    """A FitCallback that records every hook call with its task's place in
    the tree."""

    def __init__(self):
        self.events = []
        self.lock = threading.Lock()

    def _add(self, kind, context, **extra):
        parent = context.parent
        with self.lock:
            self.events.append(
                dict(
                    kind=kind,
                    name=context.task_name,
                    id=context.task_id,
                    max_subtasks=context.max_subtasks,
                    parent=None if parent is None else parent.task_name,
                    thread=threading.get_ident(),
                    **extra,
                )
            )

    def setup(self, estimator, context):
        self._add("setup", context)

    def teardown(self, estimator, context):
        self._add("teardown", context)

    def on_fit_task_begin(self, estimator, context, *, metadata=None):
        self._add("begin", context, metadata=metadata)

    def on_fit_task_end(self, estimator, context, *, metadata=None):
        self._add("end", context, metadata=metadata)

    def tasks(self, kind, name):
        return [e for e in self.events if e["kind"] == kind and e["name"] == name]


def _data(n_classes=3, n=150, seed=0):
    X, y = make_classification(
        n_samples=n,
        n_features=5,
        n_informative=3,
        n_redundant=0,
        n_classes=n_classes,
        n_clusters_per_class=1,
        random_state=seed,
    )
    return X, y


def _check_tree(rec, root, child, n_children, *, root_subtasks=None):
    """One root task (set up and torn down once) with ``n_children``
    subtasks named ``child``, each begun and ended once."""
    kinds = [e["kind"] for e in rec.events]
    assert kinds[0] == "setup" and kinds[-1] == "teardown"
    assert kinds.count("setup") == 1 and kinds.count("teardown") == 1
    roots = rec.tasks("begin", root)
    assert len(roots) == 1 and roots[0]["parent"] is None
    if root_subtasks is not None:
        assert roots[0]["max_subtasks"] == root_subtasks
    assert len(rec.tasks("end", root)) == 1
    begun = rec.tasks("begin", child)
    ended = rec.tasks("end", child)
    assert sorted(e["id"] for e in begun) == list(range(n_children))
    assert sorted(e["id"] for e in ended) == list(range(n_children))
    assert all(e["parent"] == root for e in begun)
    # The root ends after every subtask.
    last_child = max(i for i, e in enumerate(rec.events) if e["name"] == child)
    root_end = next(i for i, e in enumerate(rec.events) if e["kind"] == "end" and e["name"] == root)
    assert last_child < root_end


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_svc_multiclass_one_subtask_per_pair(n_jobs):
    X, y = _data(3)
    rec = Recorder()
    clf = SVC(n_jobs=n_jobs).set_callbacks(rec).fit(X, y)
    _check_tree(rec, "fit", "binary-problem", 3, root_subtasks=3)
    ref = SVC(n_jobs=n_jobs).fit(X, y)
    np.testing.assert_array_equal(clf.dual_coef_, ref.dual_coef_)
    np.testing.assert_array_equal(clf.intercept_, ref.intercept_)
    np.testing.assert_array_equal(clf.support_, ref.support_)
    # Nothing of the callback machinery is left on the estimator.
    assert not hasattr(clf, "_callback_fit_ctx")


def test_svc_ovr_one_subtask_per_class():
    X, y = _data(4, n=200)
    rec = Recorder()
    SVC(multiclass="ovr").set_callbacks(rec).fit(X, y)
    _check_tree(rec, "fit", "binary-problem", 4, root_subtasks=4)


def test_local_svc_one_subtask_per_pair():
    X, y = _data(3)
    rec = Recorder()
    clf = LocalSVC(bandwidth=1.0).set_callbacks(rec).fit(X, y)
    _check_tree(rec, "fit", "class-pair", 3, root_subtasks=3)
    ref = LocalSVC(bandwidth=1.0).fit(X, y)
    np.testing.assert_array_equal(clf.predict(X[:20]), ref.predict(X[:20]))


def test_profile_svc_one_subtask_per_cluster():
    X, y = _data(2, n=120)
    params = dict(n_clusters=3, n_landmarks=40, clustering="kmeans", random_state=0)
    rec = Recorder()
    clf = ProfileSVC(**params).set_callbacks(rec).fit(X, y)
    _check_tree(rec, "fit", "cluster", 3, root_subtasks=3)
    ref = ProfileSVC(**params).fit(X, y)
    np.testing.assert_array_equal(clf.cluster_labels_, ref.cluster_labels_)
    np.testing.assert_array_equal(clf.decision_function(X), ref.decision_function(X))


@pytest.mark.parametrize("cls", [FLSAClassifier, RFLSAClassifier])
def test_flsa_one_subtask_per_forward_pass(cls):
    X, y = _data(3)
    rec = Recorder()
    clf = cls(n_support=8, random_state=0).set_callbacks(rec).fit(X, y)
    _check_tree(rec, "fit", "forward-pass", 3, root_subtasks=3)
    ref = cls(n_support=8, random_state=0).fit(X, y)
    np.testing.assert_array_equal(clf.dual_coef_, ref.dual_coef_)


def test_flsa_cv_one_subtask_per_fold():
    X, y = _data(2)
    rec = Recorder()
    clf = FLSAClassifierCV(n_support=6, cv=4).set_callbacks(rec).fit(X, y)
    _check_tree(rec, "fit", "fold", 4, root_subtasks=5)
    refit = rec.tasks("begin", "refit")
    assert len(refit) == 1 and refit[0]["id"] == 4
    # The refit's forward pass hangs under the refit task.
    passes = rec.tasks("begin", "forward-pass")
    assert len(passes) == 1 and passes[0]["parent"] == "refit"
    ref = FLSAClassifierCV(n_support=6, cv=4).fit(X, y)
    np.testing.assert_array_equal(clf.cv_scores_, ref.cv_scores_)
    np.testing.assert_array_equal(clf.dual_coef_, ref.dual_coef_)


def test_incremental_one_task_per_batch():
    X, y = _data(3, n=90)
    rec = Recorder()
    clf = IncrementalSVC().set_callbacks(rec).fit(X, y)
    _check_tree(rec, "fit", "binary-model", 3, root_subtasks=3)
    ref = IncrementalSVC().fit(X, y)
    np.testing.assert_array_equal(clf.dual_coef_, ref.dual_coef_)

    # A stream: each partial_fit call is a task tree of its own.
    rec = Recorder()
    inc = IncrementalSVC().set_callbacks(rec)
    for batch in np.array_split(np.arange(90), 3):
        inc.partial_fit(X[batch], y[batch], classes=np.unique(y))
    roots = rec.tasks("begin", "partial_fit")
    assert len(roots) == 3 and all(r["max_subtasks"] == 3 for r in roots)
    assert len(rec.tasks("end", "binary-model")) == 9
    assert [e["kind"] for e in rec.events].count("teardown") == 3


def test_cluster_svc_one_subtask_per_class():
    X, y = _data(3)
    rec = Recorder()
    clf = ClusterSVC(n_jobs=2).set_callbacks(rec).fit(X, y)
    _check_tree(rec, "fit", "class", 3, root_subtasks=3)
    ref = ClusterSVC(n_jobs=2).fit(X, y)
    np.testing.assert_array_equal(clf.intercept_, ref.intercept_)


def _long_problem(n=2000, seed=0):
    """A dual that takes SMO well over 50 ms (the progress period) on any
    route: random labels, large C, and points close enough (spread 0.5) for
    the RBF kernel to couple them (at spread 1 the float64 route at
    tol=1e-6 solves it in about 80 ms, too close to the period)."""
    rng = np.random.default_rng(seed)
    X = 0.5 * rng.standard_normal((n, 10))
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    return X, y


def test_solve_qp_reports_iterations_and_gap():
    X, y = _long_problem()
    seen = []
    res = _core.solve_qp(
        X,
        y,
        np.full(y.size, 100.0),
        kernel=_core.Kernel("rbf", 0.5),
        settings=_core.SolverSettings(tol=1e-6),
        progress=lambda i, g: seen.append((i, g)),
    )
    assert seen, "a solve this long reports at least once"
    iters = [i for i, _ in seen]
    assert iters == sorted(iters) and 0 <= iters[-1] <= res.n_iter
    reported = [g for i, g in seen if i > 0]
    assert all(np.isfinite(g) and g > 0 for g in reported)
    plain = _core.solve_qp(
        X,
        y,
        np.full(y.size, 100.0),
        kernel=_core.Kernel("rbf", 0.5),
        settings=_core.SolverSettings(tol=1e-6),
    )
    np.testing.assert_array_equal(res.alpha, plain.alpha)


def test_solve_qp_progress_exception_stops_the_solve():
    X, y = _long_problem()

    def stop(n_iter, gap):
        raise RuntimeError(f"stop at {n_iter}")

    with pytest.raises(RuntimeError, match="stop at"):
        _core.solve_qp(
            X,
            y,
            np.full(y.size, 100.0),
            kernel=_core.Kernel("rbf", 0.5),
            settings=_core.SolverSettings(tol=1e-6),
            progress=stop,
        )


def test_solve_qp_progress_must_be_callable():
    X, y = _data(2, n=10)
    with pytest.raises(TypeError, match="progress must be a callable"):
        _core.solve_qp(X, np.where(y == 1, 1.0, -1.0), np.ones(10), progress=3)


def test_binary_svc_reports_solver_progress():
    # The single solve is a task of 100 steps, ended as the KKT gap
    # approaches tol: a progress bar moves during the solve, not only
    # from 0 to 100 % at its end.
    from localsvm._base import PROGRESS_STEPS

    X, y = _long_problem()
    rec = Recorder()
    clf = SVC(C=100.0, gamma=0.5, tol=1e-6).set_callbacks(rec).fit(X, y)
    pair = rec.tasks("begin", "binary-problem")
    assert len(pair) == 1 and pair[0]["max_subtasks"] == PROGRESS_STEPS
    slices = rec.tasks("end", "smo-progress")
    assert slices and all(s["parent"] == "binary-problem" for s in slices)
    assert len(slices) < PROGRESS_STEPS
    # Every step ends before the solve does.
    order = [e for e in rec.events if e["kind"] == "end"]
    pair_end = next(k for k, e in enumerate(order) if e["name"] == "binary-problem")
    assert all(order.index(s) < pair_end for s in slices)
    iters = [s["metadata"]["n_iter"] for s in slices]
    assert iters == sorted(iters) and iters[-1] <= clf.n_iter_[0]
    shares = [s["metadata"]["share"] for s in slices]
    assert shares == sorted(shares) and 0 < shares[-1] < 1
    assert len(slices) == int(shares[-1] * PROGRESS_STEPS)
    gaps = [s["metadata"]["kkt_gap"] for s in slices]
    assert all(g > 1e-6 for g in gaps)
    ref = SVC(C=100.0, gamma=0.5, tol=1e-6).fit(X, y)
    np.testing.assert_array_equal(clf.dual_coef_, ref.dual_coef_)


def test_solver_progress_steps_follow_the_gap_on_a_log_scale():
    from localsvm._base import PROGRESS_STEPS, FitReport, solve_share

    assert solve_share(1.0, 1e-2, 1e-4) == pytest.approx(0.5)
    assert solve_share(1.0, 1e-5, 1e-4) == 1.0
    assert solve_share(1.0, 3.0, 1e-4) == 0.0
    assert solve_share(float("nan"), 0.1, 1e-4) == 0.0
    assert solve_share(1e-5, 1e-6, 1e-4) == 0.0

    class Context:
        # Only what _SolverProgress calls: leaf subtasks and their hooks.
        def __init__(self):
            self.ended = []

        def subcontext(self, task_name):
            assert task_name == "smo-progress"
            return self

        def call_on_fit_task_begin(self, estimator, metadata):
            pass

        def call_on_fit_task_end(self, estimator, metadata):
            self.ended.append(metadata)

    ctx = Context()
    est = types.SimpleNamespace(verbose=0)
    progress = FitReport(est, ctx, threading.RLock(), logging.getLogger("x")).solver_progress(1e-4)
    counts = []
    # A NaN before the first iteration, a gap from 1 down to 1e-2, a gap
    # that grows back (after a reconstruction), then one within tol.
    steps = [(0, float("nan")), (10, 1.0), (20, 0.09), (30, 0.009), (40, 1.0), (50, 1e-5)]
    for n_iter, gap in steps:
        progress(n_iter, gap)
        counts.append(len(ctx.ended))
    # ln(1 / 0.09) / ln(1e4) = 0.261, ln(1 / 0.009) / ln(1e4) = 0.511.
    assert counts == [0, 0, 26, 51, 51, PROGRESS_STEPS - 1]
    assert [m["n_iter"] for m in ctx.ended] == [20] * 26 + [30] * 25 + [50] * 48
    # With the examples' count: iterations move it while the gap stays.
    ctx.ended.clear()
    report = FitReport(est, ctx, threading.RLock(), logging.getLogger("x"))
    progress = report.solver_progress(1e-4, n_samples=300)
    for n_iter in (0, 100, 300, 900):
        progress(n_iter, 2.0)
        counts.append(len(ctx.ended))
    # 100 / 800 = 0.125, 300 / 1200 = 0.25, 900 / 2400 = 0.375.
    assert counts[-4:] == [0, 12, 25, 37]


def test_run_tasks_hooks_called_once_per_task():
    calls = []
    lock = threading.Lock()

    def start(i):
        with lock:
            calls.append(("start", i))

    def done(i, result):
        with lock:
            calls.append(("done", i, result))

    out = run_tasks(lambda t, s: t * s, range(6), n_jobs=3, shared=10, on_start=start, on_done=done)
    assert out == [0, 10, 20, 30, 40, 50]
    assert sorted(c for c in calls if c[0] == "start") == [("start", i) for i in range(6)]
    assert sorted(c for c in calls if c[0] == "done") == [("done", i, 10 * i) for i in range(6)]


@pytest.mark.skipif(importlib.util.find_spec("rich") is None, reason="rich is not installed")
def test_progress_bar_on_a_multiclass_fit():
    from sklearn.callback import ProgressBar

    X, y = _data(4, n=200)
    clf = SVC(n_jobs=2).set_callbacks(ProgressBar()).fit(X, y)
    ref = SVC(n_jobs=2).fit(X, y)
    np.testing.assert_array_equal(clf.dual_coef_, ref.dual_coef_)


def test_verbose_logs_per_solve(caplog):
    X, y = _data(3)
    with caplog.at_level(logging.INFO, logger="localsvm"):
        SVC(verbose=1).fit(X, y)
    lines = [r.getMessage() for r in caplog.records if r.name == "localsvm.svc"]
    per_solve = [m for m in lines if m.startswith("binary-problem")]
    assert len(per_solve) == 3
    assert all("iterations" in m and "support vectors" in m and " s" in m for m in per_solve)
    assert any(m.startswith("SVC fit:") for m in lines)


def test_verbose_2_logs_steps(caplog):
    X, y = _data(3)
    with caplog.at_level(logging.INFO, logger="localsvm"):
        ClusterSVC(verbose=2).fit(X, y)
        IncrementalSVC(verbose=2).fit(X, y)
    names = {r.name for r in caplog.records}
    assert {"localsvm.cluster_svc", "localsvm.incremental_svc"} <= names
    assert any("backend" in r.getMessage() for r in caplog.records)


def test_verbose_0_logs_nothing(caplog):
    X, y = _data(3)
    with caplog.at_level(logging.DEBUG, logger="localsvm"):
        for est in (SVC(), ClusterSVC(), IncrementalSVC(), FLSAClassifierCV(n_support=4, cv=3)):
            est.fit(X, y)
        LocalSVC().fit(X, y).predict(X[:5])
    assert not [r for r in caplog.records if r.name.startswith("localsvm")]


def test_local_svc_verbose_logs_predict(caplog):
    X, y = _data(2)
    clf = LocalSVC(verbose=2).fit(X, y)
    with caplog.at_level(logging.INFO, logger="localsvm"):
        clf.predict(X[:30])
    lines = [r.getMessage() for r in caplog.records if r.name == "localsvm.local_svc"]
    assert any(m.startswith("LocalSVC predict:") for m in lines)
    assert any(m.startswith("chunk") for m in lines)


@pytest.mark.parametrize("bad", [-1, "yes", 1.5])
def test_verbose_is_validated(bad):
    X, y = _data(2, n=20)
    with pytest.raises(ValueError, match="verbose"):
        SVC(verbose=bad).fit(X, y)


class PicklingEngine:
    """An engine that runs tasks 'elsewhere': the function, the tasks and
    the shared data go through pickle, as a cluster's engine sends them."""

    name = "pickling"
    in_process = False
    accepts_shared = True

    def map(self, fn, tasks, *, n_jobs, shared=None):
        fn, tasks, shared = pickle.loads(pickle.dumps((fn, list(tasks), shared)))
        return [fn(t, shared) for t in tasks]


@pytest.fixture
def pickling_engine():
    pm = plugins.get_plugin_manager()
    mod = types.ModuleType("test_progress_engine")
    mod.localsvm_register_engines = hookimpl(lambda register: register(PicklingEngine()))
    pm.register(mod)
    yield "pickling"
    pm.unregister(mod)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_engine_in_other_processes_reports_after_the_batch(pickling_engine, n_classes):
    # The tasks run elsewhere: the subtasks are reported by the calling
    # thread once the batch is back, and the solver's progress function
    # (not picklable into another process's callbacks) stays behind.
    X, y = _long_problem() if n_classes == 2 else _data(3)
    rec = Recorder()
    with use_engine(pickling_engine):
        clf = SVC(C=100.0, gamma=0.5, n_jobs=2).set_callbacks(rec).fit(X, y)
    n_models = 1 if n_classes == 2 else 3
    _check_tree(rec, "fit", "binary-problem", n_models, root_subtasks=n_models)
    assert not rec.tasks("end", "smo-progress")
    assert {e["thread"] for e in rec.events} == {threading.get_ident()}
    ref = SVC(C=100.0, gamma=0.5, n_jobs=2).fit(X, y)
    np.testing.assert_array_equal(clf.dual_coef_, ref.dual_coef_)


def test_verbose_2_logs_a_long_solves_progress(caplog):
    X, y = _long_problem()
    with caplog.at_level(logging.INFO, logger="localsvm"):
        clf = SVC(C=100.0, gamma=0.5, tol=1e-6, verbose=2).fit(X, y)
    lines = [r.getMessage() for r in caplog.records if r.name == "localsvm.svc"]
    progress = [m for m in lines if m.startswith("solver:")]
    assert progress and all("iterations, KKT gap" in m for m in progress)
    iters = [int(m.split()[1]) for m in progress]
    assert iters == sorted(iters) and iters[-1] <= clf.n_iter_[0]
    assert any(m.startswith("SVC fit: 2000 samples, 2 classes") for m in lines)


def test_verbose_2_logs_a_repeated_progress_report_once(caplog):
    # The core calls progress every 50 ms with what the solver last
    # published; through a stretch without a report (a long kernel-column
    # fill) the values repeat, and each used to print its own line.
    from localsvm._base import FitReport

    est = types.SimpleNamespace(verbose=2)
    report = FitReport(est, None, threading.RLock(), logging.getLogger("localsvm.svc"))
    progress = report.solver_progress(1e-3)
    with caplog.at_level(logging.INFO, logger="localsvm"):
        for n_iter, gap in [(999, 0.5), (999, 0.5), (999, 0.5), (1999, 0.1), (1999, 0.1)]:
            progress(n_iter, gap)
        progress(2999, float("nan"))
        progress(2999, float("nan"))
    lines = [r.getMessage() for r in caplog.records]
    assert lines == [
        "solver: 999 iterations, KKT gap 0.5",
        "solver: 1999 iterations, KKT gap 0.1",
        "solver: 2999 iterations, KKT gap nan",
    ]
