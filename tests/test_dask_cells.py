"""``CellSVC`` on data no single array holds: Dask collections (fitted on the
cluster's workers) and arrays read in chunks (a memmap), with their faults.

Most tests run on one two-worker ``LocalCluster`` of threads in this process
(``processes=False``); the worker-kill test starts worker processes.
"""

from __future__ import annotations

import os
import signal
import threading
import time

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")

import _dask_tasks  # noqa: E402  (this folder is on sys.path under pytest)
from conftest import memmap_copy, run_in_child  # noqa: E402
from localsvm import SVC, SVR, CellSVC, IncrementalSVC, ProfileSVC  # noqa: E402
from localsvm._outofcore import _in_groups, input_kind  # noqa: E402

N, D, CHUNK = 4000, 6, 700
PARAMS = dict(cell_size=400, overlap=0.5, sample_size=600, random_state=0)


def rule(X):
    return (np.sin(2 * X[:, 0]) + X[:, 1] * X[:, 2] > 0).astype(int)


def data(n=N, seed=0, classes=2):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, D)
    y = rule(X)
    if classes == 3:
        y = y + (X[:, 3] > 0.8)
    return X, y


@pytest.fixture(scope="module")
def client():
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
        ) as lc,
        distributed.Client(lc) as c,
    ):
        yield c


_memmap = memmap_copy


def test_input_kinds():
    X, _ = data(50)
    assert input_kind(X) is None
    assert input_kind(X.tolist()) is None
    assert input_kind(_memmap(X)) == "chunked"
    assert input_kind(da.from_array(X)) == "dask"


def test_cells_cut_in_order_into_groups_within_the_cap():
    """Waves, piece groups and model packs: consecutive cells up to the cap
    in bytes, a cell over the cap alone, no empty group."""
    nbytes = [3, 4, 10, 1, 1, 2]
    assert _in_groups(range(6), nbytes, 7) == [[0, 1], [2], [3, 4, 5]]
    assert _in_groups([5, 2, 0], nbytes, 100) == [[5, 2, 0]]
    assert _in_groups([], nbytes, 7) == []


def test_dask_fit_same_model_as_memmap_and_close_to_in_memory(client):
    X, y = data()
    Xt, yt = data(2000, seed=1)
    dask_fit = CellSVC(**PARAMS).fit(da.from_array(X, chunks=(CHUNK, D)), da.from_array(y, CHUNK))
    mm_fit = CellSVC(**PARAMS).fit(_memmap(X), y)
    mem_fit = CellSVC(**PARAMS).fit(X, y)
    # The Dask and chunked fits take the same route: one model.
    np.testing.assert_array_equal(dask_fit.cell_train_sizes_, mm_fit.cell_train_sizes_)
    np.testing.assert_array_equal(dask_fit.decision_function(Xt), mm_fit.decision_function(Xt))
    # The in-memory fit draws the same sample; it cuts its cells on all rows.
    np.testing.assert_array_equal(
        mem_fit.partition_.representatives[: PARAMS["sample_size"]],
        dask_fit.partition_.representatives[: PARAMS["sample_size"]],
    )
    assert abs(dask_fit.routing_scale_ - mem_fit.routing_scale_) < 0.25 * mem_fit.routing_scale_
    # Each cell's overlap reach (the gap under which other cells' rows
    # joined it) is the in-memory one, to about a histogram bin.
    np.testing.assert_array_equal(dask_fit.cell_overlap_reach_, mm_fit.cell_overlap_reach_)
    if dask_fit.n_cells_ == mem_fit.n_cells_:
        np.testing.assert_allclose(
            dask_fit.cell_overlap_reach_, mem_fit.cell_overlap_reach_, rtol=0.1
        )
    # One model predicts the same through every route: in memory, read in
    # chunks from a memmap, and block by block on the cluster.
    for what in ("predict", "decision_function"):
        want = getattr(mem_fit, what)(Xt)
        np.testing.assert_array_equal(getattr(mem_fit, what)(_memmap(Xt)), want)
        got = getattr(mem_fit, what)(da.from_array(Xt, chunks=(300, D))).compute()
        np.testing.assert_array_equal(got, want)
    acc_dask = np.mean(dask_fit.predict(Xt) == yt)
    acc_mem = np.mean(mem_fit.predict(Xt) == yt)
    assert acc_dask > 0.85
    assert abs(acc_dask - acc_mem) < 0.02
    # The overlap reaches about overlap · |cell| rows per cell.
    extra = dask_fit.cell_train_sizes_ - dask_fit.cell_sizes_
    np.testing.assert_allclose(extra.sum(), 0.5 * dask_fit.cell_sizes_.sum(), rtol=0.1)
    # The training labels stay on the workers, as a Dask array.
    assert isinstance(dask_fit.cell_labels_, da.Array)
    np.testing.assert_array_equal(dask_fit.cell_labels_.compute(), mm_fit.cell_labels_)


def test_large_in_memory_fit_takes_the_chunked_route(monkeypatch, caplog):
    """An in-memory fit whose n x n_cells score matrix passes the budget is
    the chunked fit of the same rows (the model a memmap or a Dask
    collection gives); with sample_weight, or under the budget, it stays on
    the in-memory plan. Feature names are kept."""
    import pandas as pd

    import localsvm.cell_svc as cell_svc

    X, y = data()
    Xt, _ = data(1000, seed=1)
    under = CellSVC(**PARAMS).fit(X, y)
    mm_fit = CellSVC(**PARAMS).fit(_memmap(X), y)
    monkeypatch.setattr(cell_svc, "IN_MEMORY_SCORES_BYTES", 4 * N * 2)
    over = CellSVC(**PARAMS).fit(X, y)
    np.testing.assert_array_equal(over.cell_train_sizes_, mm_fit.cell_train_sizes_)
    np.testing.assert_array_equal(over.decision_function(Xt), mm_fit.decision_function(Xt))
    assert not np.array_equal(under.cell_train_sizes_, over.cell_train_sizes_)
    # Its cells are reported as an in-memory fit's are.
    with caplog.at_level("INFO", logger="localsvm"):
        CellSVC(**PARAMS, verbose=2).fit(X, y)
    lines = [r.getMessage() for r in caplog.records]
    assert sum(m.startswith("cell ") and "support vectors" in m for m in lines) == over.n_cells_
    weighted = CellSVC(**PARAMS).fit(X, y, sample_weight=np.ones(N))
    np.testing.assert_array_equal(weighted.decision_function(Xt), under.decision_function(Xt))
    names = [f"f{j}" for j in range(D)]
    framed = CellSVC(**PARAMS).fit(pd.DataFrame(X, columns=names), y)
    assert list(framed.feature_names_in_) == names
    np.testing.assert_array_equal(
        framed.decision_function(pd.DataFrame(Xt, columns=names)), over.decision_function(Xt)
    )


def test_chunked_routing_pieces_same_model_on_any_threads(monkeypatch):
    """The chunked passes route pieces of each chunk in n_jobs threads, cut
    at the routing's sub-blocks: the same model with 1 and 2 threads."""
    import localsvm._outofcore as outofcore
    from localsvm._outofcore import _pieces

    assert _pieces([0, 10], 10, 17, 3, 2) == [(0, 6), (6, 10), (10, 16), (16, 17)]
    assert _pieces([0], 10, 10, 3, 1) == [(0, 10)]
    assert _pieces([0], 10, 10, 30, 4) == [(0, 10)]
    X, y = data()
    Xt, _ = data(1000, seed=1)
    # Sub-blocks of 250 rows (600 sampled representatives): 16 per chunk.
    monkeypatch.setattr(outofcore, "SCORE_BLOCK_BYTES", 4 * 600 * 250)
    pieces = []
    monkeypatch.setattr(outofcore, "_pieces", lambda *a: pieces.append(_pieces(*a)) or pieces[-1])
    one = CellSVC(**PARAMS, n_jobs=1).fit(_memmap(X), y)
    two = CellSVC(**PARAMS, n_jobs=2).fit(_memmap(X), y)
    assert [len(p) for p in pieces] == [1, 1, 2, 2]
    np.testing.assert_array_equal(one.cell_labels_, two.cell_labels_)
    np.testing.assert_array_equal(one.decision_function(Xt), two.decision_function(Xt))


def test_kept_rows_pick_the_members_routing_picks():
    """The rows a block keeps below the cells' ceilings give each cell the
    training rows that routing the block again gives (dropped empty cells
    renumbered), and gap histograms exact below the ceilings."""
    import localsvm._outofcore as ooc
    from localsvm.cells import CellPartition
    from localsvm.kernels import KernelSpec

    X, _ = data(3000, seed=3)
    part = CellPartition.fit(X[:600], 12, spec=KernelSpec("rbf", gamma=0.2), random_state=0)
    router = ooc._Router(part, *ooc._hist_range(part, X[:600]))
    counts, full, _, _ = ooc._block_route(X, router, False)
    caps = ooc._route_caps(router, X[::7], 0.5)
    assert np.isfinite(caps).any()
    kc, hist, _, kept = ooc._block_route_keep(X.copy(), router, caps)
    np.testing.assert_array_equal(kc, counts)
    edges = router.edges()
    for j in range(part.n_cells):
        below = edges[1:] < caps[j] * (1 - 1e-3)
        np.testing.assert_array_equal(hist[j][below], full[j][below])
    used = np.flatnonzero(counts > 0)
    assert used.size == part.n_cells
    # Overlap gaps below the ceilings (as the fit makes sure they are).
    u = np.random.default_rng(0).uniform(0.2, 0.9, used.size)
    thr = np.where(np.isfinite(caps), u * caps, u).astype(np.float32)
    thr[0] = -1.0  # a cell without overlap
    router.thresholds = thr
    want_counts, (want_bounds, want_rows) = ooc._block_members(X, router)
    got_counts, (got_bounds, got_rows) = ooc._block_keep(kept, thr, used)
    np.testing.assert_array_equal(got_counts, want_counts)
    np.testing.assert_array_equal(got_bounds, want_bounds)
    np.testing.assert_array_equal(got_rows, want_rows)
    assert got_counts.sum() > counts.sum()
    # A cell that received no row (dropped, the others renumbered) keeps none.
    _, (b2, r2) = ooc._block_keep(kept, thr[1:], used[1:])
    np.testing.assert_array_equal(b2, want_bounds[1:] - want_bounds[1])
    np.testing.assert_array_equal(r2, want_rows[want_bounds[1] :])


@pytest.mark.parametrize("force_again", [False, True])
def test_dask_routes_once_or_again_same_model(client, monkeypatch, force_again):
    """The Dask fit routes its rows once (members picked from the rows kept
    below the ceilings) and, when a ceiling is too low, routes them again:
    the model of the memmap fit (which routes twice) either way."""
    import localsvm._outofcore as ooc

    held = []
    caps_hold = ooc._caps_hold
    monkeypatch.setattr(ooc, "_caps_hold", lambda *a: held.append(caps_hold(*a)) or held[-1])
    if not force_again:
        # Routing the rows again would fail.
        monkeypatch.setattr(ooc, "_block_members", None)
    if force_again:
        monkeypatch.setattr(ooc, "CAP_FACTOR", 0.0)
        monkeypatch.setattr(ooc, "CAP_SLACK", 0)
    X, y = data()
    Xt, _ = data(1000, seed=1)
    dask_fit = CellSVC(**PARAMS).fit(da.from_array(X, chunks=(CHUNK, D)), da.from_array(y, CHUNK))
    assert held == [not force_again]
    monkeypatch.undo()
    mm_fit = CellSVC(**PARAMS).fit(_memmap(X), y)
    np.testing.assert_array_equal(dask_fit.cell_train_sizes_, mm_fit.cell_train_sizes_)
    np.testing.assert_array_equal(dask_fit.cell_overlap_reach_, mm_fit.cell_overlap_reach_)
    np.testing.assert_array_equal(dask_fit.decision_function(Xt), mm_fit.decision_function(Xt))


def test_dask_tuned_cells_match_the_memmap_fit(client):
    """CellSVC(tune=True) on a Dask collection: each cell's search runs on
    the worker that trains it, with the seeds the memmap fit draws."""
    X, y = data()
    Xt, yt = data(1000, seed=1)
    kw = dict(PARAMS, tune=True, Cs=2, gammas=2, cv=2, tune_size=300)
    dask_fit = CellSVC(**kw).fit(da.from_array(X, chunks=(CHUNK, D)), da.from_array(y, CHUNK))
    mm_fit = CellSVC(**kw).fit(_memmap(X), y)
    assert dask_fit.cell_tuned_.all()
    np.testing.assert_array_equal(dask_fit.cell_C_, mm_fit.cell_C_)
    np.testing.assert_array_equal(dask_fit.cell_gamma_, mm_fit.cell_gamma_)
    np.testing.assert_array_equal(dask_fit.cell_cv_score_, mm_fit.cell_cv_score_)
    np.testing.assert_array_equal(dask_fit.decision_function(Xt), mm_fit.decision_function(Xt))
    assert np.mean(dask_fit.predict(Xt) == yt) > 0.8


def test_dask_predict_is_a_blockwise_dask_array(client):
    X, y = data(classes=3)
    Xt, _ = data(1500, seed=2, classes=3)
    clf = CellSVC(**PARAMS).fit(da.from_array(X, chunks=(CHUNK, D)), da.from_array(y, CHUNK))
    dXt = da.from_array(Xt, chunks=(500, D))
    pred = clf.predict(dXt)
    dec = clf.decision_function(dXt)
    assert isinstance(pred, da.Array) and isinstance(dec, da.Array)
    assert pred.numblocks == (3,)
    np.testing.assert_array_equal(pred.compute(), clf.predict(Xt))
    np.testing.assert_array_equal(dec.compute(), clf.decision_function(Xt))
    assert dec.compute().shape == (1500, 3)


def test_dask_dataframe_and_unknown_chunks(client):
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    X, y = data()
    Xt, _ = data(500, seed=3)
    ref = CellSVC(**PARAMS).fit(da.from_array(X, chunks=(CHUNK, D)), da.from_array(y, CHUNK))
    frame = dd.from_pandas(pd.DataFrame(X), npartitions=5)
    labels = dd.from_pandas(pd.Series(y), npartitions=5)
    got = CellSVC(**PARAMS).fit(frame, labels)
    np.testing.assert_array_equal(got.decision_function(Xt), ref.decision_function(Xt))
    np.testing.assert_array_equal(
        got.predict(dd.from_pandas(pd.DataFrame(Xt), 2)).compute(), ref.predict(Xt)
    )
    # Rows in memory, labels on the cluster: the same model.
    mixed = CellSVC(**PARAMS).fit(X, da.from_array(y, CHUNK))
    np.testing.assert_array_equal(mixed.decision_function(Xt), ref.decision_function(Xt))
    # A boolean mask leaves the row chunks unknown: they are computed.
    dX = da.from_array(X, chunks=(CHUNK, D))
    keep = dX[:, 0] > -100
    masked = CellSVC(**PARAMS).fit(dX[keep], da.from_array(y, CHUNK)[keep])
    np.testing.assert_array_equal(masked.decision_function(Xt), ref.decision_function(Xt))


def test_nan_names_block_and_row(client):
    X, y = data()
    X[2 * CHUNK + 17, 3] = np.nan
    with pytest.raises(ValueError, match=rf"block 2, row 17 .*row {2 * CHUNK + 17} of X"):
        CellSVC(**PARAMS).fit(da.from_array(X, chunks=(CHUNK, D)), da.from_array(y, CHUNK))


def test_blocks_mixing_dtypes(client):
    X, y = data()
    dX = da.from_array(X, chunks=(CHUNK, D)).map_blocks(
        _dask_tasks.cast_block_one, dtype=np.float64
    )
    with pytest.raises(TypeError, match=r"block 1 of X .* float32 .* declares float64"):
        CellSVC(**PARAMS).fit(dX, da.from_array(y, CHUNK))


def test_other_estimators_refuse_dask_input(client):
    X, y = data(300)
    dX, dy = da.from_array(X, chunks=100), da.from_array(y, chunks=100)
    for est in (SVC(), ProfileSVC(), SVR(), IncrementalSVC()):
        fit = est.partial_fit if isinstance(est, IncrementalSVC) else est.fit
        kw = {"classes": [0, 1]} if isinstance(est, IncrementalSVC) else {}
        with pytest.raises(TypeError, match="only CellSVC"):
            fit(dX, dy, **kw)
        with pytest.raises(TypeError, match="only CellSVC"):
            fit(X, dy, **kw)
    fitted = SVC().fit(X, y)
    with pytest.raises(TypeError, match="only CellSVC"):
        fitted.predict(dX)


def test_fit_without_a_client_is_a_clear_error():
    code = """
import numpy as np, dask.array as da
from localsvm import CellSVC
X = np.random.RandomState(0).randn(300, 3)
y = (X[:, 0] > 0).astype(int)
CellSVC(cell_size=100).fit(da.from_array(X, chunks=100), da.from_array(y, chunks=100))
"""
    got = run_in_child(code, timeout=300)
    assert got["error"] == "ValueError", got
    assert "create a distributed.Client" in got["message"]


def test_cell_beyond_worker_memory():
    X, y = data(3000)
    quiet = {
        f"distributed.worker.memory.{k}": False for k in ("target", "spill", "pause", "terminate")
    }
    with (
        __import__("dask").config.set(quiet),
        distributed.LocalCluster(
            n_workers=1,
            threads_per_worker=1,
            processes=False,
            memory_limit="64MiB",
            dashboard_address=None,
        ) as lc,
        distributed.Client(lc) as mc,
        mc.as_current(),
    ):
        clf = CellSVC(cell_size=3000)
        # 3 000 rows of 720 features: about 33 MiB of float64 rows, twice.
        X = np.repeat(X, 120, axis=1) * rng_factors(X.shape[0], 120 * D)
        with pytest.raises(MemoryError, match=r"cell_size.*|memory_limit of 64 MiB") as err:
            clf.fit(da.from_array(X, chunks=1000), da.from_array(y, chunks=1000))
        assert "cell_size" in str(err.value) and "memory_limit of 64 MiB" in str(err.value)
        assert not hasattr(clf, "cell_models_")


def rng_factors(n, d):
    return np.random.RandomState(1).uniform(0.5, 1.5, size=(n, d))


class _FakeClient:
    def __init__(self, nthreads):
        self._n = nthreads

    def nthreads(self):
        return self._n


def test_workers_listed_whatever_the_clients_refresh():
    # Client.scheduler_info()'s copy is replaced, by the client's periodic
    # refresh, with one that lists no worker; a fit asks the scheduler.
    from localsvm._outofcore import _worker_memory

    with (
        __import__("dask").config.set({"distributed.client.scheduler-info-interval": "5ms"}),
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
        ) as lc,
        distributed.Client(lc) as c,
    ):
        assert all(_worker_memory(c)[0] == 2 for _ in range(2000))


def test_cell_cache_follows_the_workers_memory():
    from localsvm._outofcore import CELL_CACHE_SHARE, _worker_cache_mib

    est = CellSVC(cache_size=200)
    limit = float(512 << 20)
    one = _worker_cache_mib(est, _FakeClient({"a": 1, "b": 1}), limit)
    assert one == pytest.approx(CELL_CACHE_SHARE * 512)
    # The worker with the most threads runs that many cells at once.
    two = _worker_cache_mib(est, _FakeClient({"a": 1, "b": 2}), limit)
    assert two == pytest.approx(one / 2)
    # Never more than cache_size; no limit: cache_size.
    assert _worker_cache_mib(CellSVC(cache_size=4), _FakeClient({"a": 1}), limit) == 4.0
    assert _worker_cache_mib(est, _FakeClient({"a": 1}), float("inf")) == 200.0


def test_cache_size_leaves_the_cell_models_unchanged():
    # What the cap relies on: a smaller cache computes columns again.
    X, y = data(1500)
    a = SVC(cache_size=200).fit(X, y)
    b = SVC(cache_size=0.05).fit(X, y)
    assert np.array_equal(a.dual_coef_, b.dual_coef_)
    assert np.array_equal(a.support_, b.support_)
    assert np.array_equal(a.intercept_, b.intercept_)


def test_next_fit_removes_packs_of_ended_client_processes(client):
    import subprocess
    import sys

    from localsvm._outofcore import PACK_FILE_PREFIX, _fit_owner

    folder = os.path.join(
        client.run(lambda dask_worker: _pack_folder_of(dask_worker)).popitem()[1],
        "localsvm-cells",
    )
    os.makedirs(folder, exist_ok=True)
    ended = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    host, _ = _fit_owner().split("-")
    gone = os.path.join(folder, f"{PACK_FILE_PREFIX}{host}-{ended.stdout.strip()}-abc-0")
    mine = os.path.join(folder, f"{PACK_FILE_PREFIX}{_fit_owner()}-abc-0")
    elsewhere = os.path.join(folder, f"{PACK_FILE_PREFIX}otherhost-1-abc-0")
    for path in (gone, mine, elsewhere):
        with open(path, "wb") as fh:
            fh.write(b"x")
    try:
        X, y = data()
        CellSVC(**PARAMS).fit(da.from_array(X, chunks=(CHUNK, D)), da.from_array(y, CHUNK))
        deadline = time.monotonic() + 10
        while os.path.exists(gone) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not os.path.exists(gone)
        assert os.path.exists(mine) and os.path.exists(elsewhere)
    finally:
        for path in (gone, mine, elsewhere):
            if os.path.exists(path):
                os.remove(path)


def _pack_folder_of(dask_worker):
    return os.path.dirname(os.path.abspath(dask_worker.local_directory))


def _slow(X, y, delay):
    dX = da.from_array(X, chunks=(CHUNK, D)).map_blocks(
        _dask_tasks.slow_block, delay, dtype=X.dtype
    )
    return dX, da.from_array(y, CHUNK)


def test_cluster_lost_mid_fit_leaves_estimator_unchanged():
    X, y = data()
    lc = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
    )
    client = distributed.Client(lc)
    try:
        clf = CellSVC(**PARAMS)
        dX, dy = _slow(X, y, 0.5)
        threading.Timer(1.0, lc.close).start()
        with (
            client.as_current(),
            pytest.raises(RuntimeError, match=r"went away during CellSVC\.fit"),
        ):
            clf.fit(dX, dy)
        assert not hasattr(clf, "cell_models_") and not hasattr(clf, "classes_")
    finally:
        client.close()
        lc.close()


def test_ctrl_c_cancels_the_tasks(client):
    X, y = data()
    clf = CellSVC(**PARAMS)
    dX, dy = _slow(X, y, 1.0)
    threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT)).start()
    with pytest.raises(KeyboardInterrupt):
        clf.fit(dX, dy)
    assert not hasattr(clf, "cell_models_")

    # Within a few seconds no task is left to run (queued, waiting or running).
    def pending(dask_scheduler):
        active = ("processing", "waiting", "queued", "no-worker")
        return [str(k) for k, t in dask_scheduler.tasks.items() if t.state in active]

    for _ in range(50):
        left = client.run_on_scheduler(pending)
        if not left:
            break
        time.sleep(0.1)
    assert not left


def test_worker_killed_during_cell_solves_same_model():
    X, y = data(6000)
    Xt, _ = data(1000, seed=5)
    params = dict(PARAMS, cell_size=300)
    path = os.pathsep.join(
        p for p in (os.path.dirname(__file__), os.environ.get("PYTHONPATH", "")) if p
    )
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
        dX, dy = da.from_array(X, chunks=(1000, D)), da.from_array(y, 1000)
        ref = CellSVC(**params).fit(dX, dy)
        clf = CellSVC(**params)
        done: dict = {}

        def run():
            try:
                done["m"] = clf.fit(dX, dy)
            except BaseException as err:  # reported below
                done["error"] = err

        fit = threading.Thread(target=run)
        fit.start()
        killed = None
        for _ in range(12000):
            for addr, keys in client.processing().items():
                if any("_fit_cell_pieces" in str(k) for k in keys):
                    pid = client.run(os.getpid, workers=[addr])[addr]
                    os.kill(pid, signal.SIGKILL)
                    killed = addr
                    break
            if killed or not fit.is_alive():
                break
            time.sleep(0.005)
        fit.join(timeout=300)
        assert killed is not None, "no cell solve was seen running"
        assert "m" in done, done
        np.testing.assert_array_equal(clf.cell_train_sizes_, ref.cell_train_sizes_)
        np.testing.assert_array_equal(clf.cell_n_iter_, ref.cell_n_iter_)
        np.testing.assert_array_equal(clf.decision_function(Xt), ref.decision_function(Xt))

        # Models kept on the workers: a worker that dies after the fit loses
        # none of them (their files outlive it, the client holds their
        # names); nor does a restart of every worker.
        import localsvm._outofcore as ooc

        # The nanny restarts the killed worker; this part needs both back.
        client.wait_for_workers(2, timeout=120)
        limit = ooc._worker_memory(client)[1]
        sizes = [m._model_bytes() for m in ref.cell_models_ if m is not None]
        saved = ooc.MODEL_MEMORY_SHARE, ooc.PACK_MEMORY_SHARE
        ooc.MODEL_MEMORY_SHARE, ooc.PACK_MEMORY_SHARE = 0.0, 3.0 * max(sizes) / limit
        try:
            kept = CellSVC(**params).fit(dX, dy)
        finally:
            ooc.MODEL_MEMORY_SHARE, ooc.PACK_MEMORY_SHARE = saved
        assert isinstance(kept.cell_models_, ooc.ClusterModels)
        alive = [a for a in client.nthreads() if a != killed]
        os.kill(client.run(os.getpid, workers=alive[:1])[alive[0]], signal.SIGKILL)
        np.testing.assert_array_equal(kept.decision_function(Xt), ref.decision_function(Xt))
        client.restart()
        np.testing.assert_array_equal(kept.predict(Xt), ref.predict(Xt))


def test_memmap_peak_memory_bound():
    """A memmap is read in chunks: until the cells are solved the fit holds
    far less than the data, and in all it adds no more than the documented
    bound (the working set of one chunk, one cell and the bookkeeping, plus
    the model it keeps)."""
    code = r"""
import os, tempfile, threading, time
import numpy as np
import localsvm._outofcore as ooc
from localsvm import CellSVC
ooc.CHUNK_BYTES = 1 << 20
ooc.SCORE_BLOCK_BYTES = 1 << 20
n, d = 200_000, 16
def anon():
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) * 1024
path = os.path.join(tempfile.mkdtemp(), "X")
X = np.memmap(path, dtype=np.float64, mode="w+", shape=(n, d))
rng = np.random.default_rng(0)
for s in range(0, n, 10_000):
    X[s : s + 10_000] = rng.standard_normal((10_000, d))
X.flush(); del X
X = np.memmap(path, dtype=np.float64, mode="r", shape=(n, d))
y = (np.sin(2 * X[:, 0]) + X[:, 1] * X[:, 2] > 0).astype(np.int8)
# Warm up (the fit's lazy imports and first allocations are not the data's).
CellSVC(cell_size=1000, sample_size=100, cache_size=4, n_jobs=1).fit(X[:3000], y[:3000])
before = anon(); timeline = []; stop = threading.Event(); t0 = time.perf_counter()
def watch():
    while not stop.is_set():
        timeline.append((time.perf_counter() - t0, anon() - before)); time.sleep(0.005)
t = threading.Thread(target=watch); t.start()
clf = CellSVC(cell_size=2000, overlap=0.5, sample_size=500, cache_size=4, n_jobs=1,
              random_state=0).fit(X, y)
stop.set(); t.join()
split = clf.timings_["partition"]
svs = sum(m.support_vectors_.nbytes + m.dual_coef_.nbytes for m in clf.cell_models_ if m)
cell = int(clf.cell_train_sizes_.max()) * (16 * d + 48) + 4 * 2**20
book = n * (8 + 8 + 8) + 2 * 4 * int(clf.cell_train_sizes_.sum())
chunk = 6 * (1 << 20) + 4 * (1 << 20)
kmeans = 3 * 8 * 500 * 500
RESULT = dict(
    grown=max(v for _, v in timeline),
    partition=max([v for s, v in timeline if s < 0.9 * split] or [0]),
    data=n * d * 8, svs=svs, bound=2.5 * svs + cell + book + chunk + kmeans,
    acc=float(np.mean(clf.predict(X[:5000]) == y[:5000])),
)
os.remove(path)
"""
    got = run_in_child(code, timeout=900)
    assert got["error"] is None, got
    r = got["value"]
    assert r["acc"] > 0.9
    assert r["partition"] < r["data"] / 2, r
    assert r["grown"] <= r["bound"], r


@pytest.mark.parametrize("classes, routing", [(2, "soft"), (3, "hard")])
def test_models_kept_on_the_cluster_predict_the_same(client, monkeypatch, classes, routing):
    """Cell models too large for the client stay packed on the workers:
    prediction (of Dask and of in-memory rows) goes to them and gives the
    values of the same models brought back; float32 rows keep float32
    support vectors, which predict as the float64 copies of the same values;
    the rows sent out in groups of a few cells give the same cells."""
    import pickle

    import localsvm._outofcore as ooc

    X, y = data(classes=classes)
    X = X.astype(np.float32)
    Xt, _ = data(1000, seed=3)
    dX, dy = da.from_array(X, chunks=(CHUNK, D)), da.from_array(y, CHUNK)
    dXt = da.from_array(Xt, chunks=(300, D))
    ref = CellSVC(routing=routing, **PARAMS).fit(dX, dy)
    assert isinstance(ref.cell_models_, list)
    kept = [m for m in ref.cell_models_ if m is not None]
    assert kept and all(m._sv.dtype == np.float32 for m in kept)
    for m in kept[:3]:
        wide = pickle.loads(pickle.dumps(m))
        wide.__dict__["_sv"] = wide._sv.astype(np.float64)
        np.testing.assert_array_equal(wide.decision_function(Xt), m.decision_function(Xt))

    monkeypatch.setattr(ooc, "MODEL_MEMORY_SHARE", 0.0)
    limit = ooc._worker_memory(client)[1]
    per_model = max(m._model_bytes() for m in kept)
    monkeypatch.setattr(ooc, "PACK_MEMORY_SHARE", 2.5 * per_model / limit)
    # The rows go out in groups of a few cells (one group above).
    monkeypatch.setattr(ooc, "PIECE_GROUP_BYTES", 3 * int(ref.cell_train_sizes_.max()) * 4 * D)
    clf = CellSVC(routing=routing, **PARAMS).fit(dX, dy)
    models = clf.cell_models_
    assert isinstance(models, ooc.ClusterModels) and len(models.packs) > 1
    # Blocks of test rows beyond a share of a worker's limit are cut (300
    # rows into blocks of 128): the same values.
    monkeypatch.setattr(ooc, "PREDICT_BLOCK_SHARE", 8 * D * 128.5 / limit)
    assert len(models) == ref.n_cells_
    np.testing.assert_array_equal(clf.cell_n_iter_, ref.cell_n_iter_)
    np.testing.assert_array_equal(clf.cell_train_sizes_, ref.cell_train_sizes_)
    for what in ("predict", "decision_function"):
        want = getattr(ref, what)(Xt)
        got = getattr(clf, what)(dXt)
        assert isinstance(got, da.Array)
        np.testing.assert_array_equal(got.compute(), want)
        np.testing.assert_array_equal(getattr(clf, what)(Xt), want)
    # In-memory rows are scattered to the workers in chunks (here four of
    # at most 300 rows), not sent inside the task graph.
    monkeypatch.setattr(ooc, "CHUNK_BYTES", 8 * D * 300)
    np.testing.assert_array_equal(clf.decision_function(Xt), ref.decision_function(Xt))
    j = next(i for i, m in enumerate(ref.cell_models_) if m is not None)
    np.testing.assert_array_equal(models[j].support_vectors_, ref.cell_models_[j].support_vectors_)
    back = pickle.loads(pickle.dumps(clf))
    assert isinstance(back.cell_models_, list)
    np.testing.assert_array_equal(back.decision_function(Xt), ref.decision_function(Xt))

    # The packs are files on the workers' disks (beside their local
    # directories, which a restarted worker loses), the workers hold only
    # their names; the files go when the models do.
    def files(prefix, dask_worker=None):
        import glob

        base = os.path.dirname(os.path.abspath(dask_worker.local_directory))
        folder = os.path.join(base, "localsvm-cells")
        return sorted(glob.glob(os.path.join(folder, prefix + "*")))

    import dask.sizeof

    prefix = models.prefix
    on_disk = [f for fs in client.run(files, prefix).values() for f in fs]
    assert len(set(on_disk)) == len(models.packs)
    # Not inside a worker's own directory, which goes when the worker restarts.
    own = client.run(lambda dask_worker: os.path.abspath(dask_worker.local_directory))
    assert not [f for f in on_disk for d in own.values() if f.startswith(d + os.sep)]
    held = client.run(
        lambda dask_worker: sum(dask.sizeof.sizeof(v) for v in dask_worker.data.values())
    )
    assert sum(held.values()) < models.nbytes / 4, (held, models.nbytes)
    del clf, models, back
    import gc

    gc.collect()
    for _ in range(200):
        if not any(client.run(files, prefix).values()):
            break
        time.sleep(0.05)
    assert not any(client.run(files, prefix).values())


@pytest.mark.slow
def test_bench_cluster_small(capsys):
    """``bench cluster`` end to end at a small size: a Dask fit on worker
    processes beside the in-memory fit, and the memmap child, each row
    reporting what it measured."""
    import io

    from localsvm_benchmarks.cluster import run_cluster

    out = io.StringIO()
    rows = run_cluster(
        [20_000],
        n_test=5_000,
        workers=2,
        memory_limit="512MiB",
        chunk_rows=5_000,
        cell_size=2_000,
        overlap=0.5,
        compare_rows=20_000,
        memmap_rows=20_000,
        out=out,
    )
    fit, memory, memmap = rows
    assert fit["died"] == 0 and fit["accuracy"] > 0.8 and fit["model_on"] in ("client", "workers")
    assert abs(memory["in_memory_accuracy"] - fit["accuracy"]) < 0.03
    r = memmap["memmap"]
    assert r["acc"] > 0.8 and r["peak"] - r["before"] <= r["bound"], r
