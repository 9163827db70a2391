"""``SVC(init='cells')``: the divide-and-conquer start (cells solved on their
own, the global SMO warm-started from their multipliers with a blocked start
gradient) reaches the optimum plain SMO reaches; the blocked gradient equals
the kernel-column one; bad parameters and bad gradients are errors."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_classification
from sklearn.preprocessing import StandardScaler

from localsvm import SVC, QPProblem, _core, get_backend
from localsvm.kernels import KernelSpec, kernel_matrix


@pytest.fixture(scope="module")
def clustered():
    X, y = make_classification(
        n_samples=3000,
        n_features=10,
        n_informative=6,
        n_redundant=2,
        n_clusters_per_class=8,
        flip_y=0.02,
        class_sep=1.2,
        random_state=0,
    )
    return StandardScaler().fit_transform(X), y


def test_cells_reach_the_plain_optimum(clustered):
    X, y = clustered
    plain = SVC(C=1.0).fit(X, y)
    cells = SVC(C=1.0, init="cells", cell_size=700, random_state=0).fit(X, y)
    assert cells.n_cells_[0] >= 2
    assert cells.init_n_iter_[0] > 0
    rel = abs(cells.dual_objective_[0] - plain.dual_objective_[0]) / abs(plain.dual_objective_[0])
    assert rel < 1e-3
    assert np.mean(cells.predict(X) == plain.predict(X)) >= 0.999
    assert set(cells.init_time_) == {"partition", "cells", "gradient", "smo"}
    assert all(v >= 0.0 for v in cells.init_time_.values())
    # The start gradient's rows × support vectors are counted.
    assert cells.kernel_evaluations_[0] > plain.support_.size


def test_two_levels_reach_the_plain_optimum(clustered):
    X, y = clustered
    plain = SVC(C=1.0).fit(X, y)
    # Cells of 150 rows inside cells of 600, then the global problem.
    two = SVC(C=1.0, init="cells", cell_size=150, cell_levels=2, random_state=0).fit(X, y)
    assert two.n_cells_[0] >= 16
    rel = abs(two.dual_objective_[0] - plain.dual_objective_[0]) / abs(plain.dual_objective_[0])
    assert rel < 1e-3
    assert np.mean(two.predict(X) == plain.predict(X)) >= 0.999


def test_cells_multiclass(clustered):
    X, y = clustered
    y3 = np.where(X[:, 0] > 0.8, 2, y)
    plain = SVC(C=1.0).fit(X, y3)
    cells = SVC(C=1.0, init="cells", cell_size=500, random_state=0).fit(X, y3)
    assert cells.n_cells_.shape == (3,) and np.all(cells.n_cells_ >= 2)
    rel = np.abs(cells.dual_objective_ - plain.dual_objective_) / np.abs(plain.dual_objective_)
    assert np.all(rel < 1e-3)
    assert np.mean(cells.predict(X) == plain.predict(X)) >= 0.999


def test_small_problems_and_sparse_rows_start_from_zero(clustered):
    X, y = clustered
    small = SVC(init="cells", cell_size=2000).fit(X, y)  # 3000 < 2 · 2000
    assert small.n_cells_[0] == 0 and small.init_n_iter_[0] == 0
    np.testing.assert_array_equal(small.n_iter_, SVC().fit(X, y).n_iter_)
    Xs = sp.csr_matrix(np.where(np.abs(X) > 1.0, X, 0.0))
    sparse = SVC(init="cells", cell_size=500).fit(Xs, y)
    assert sparse.n_cells_[0] == 0


@pytest.mark.parametrize("cell_size", [1, 0, -5, 2.5, "big", True])
def test_bad_cell_size(clustered, cell_size):
    X, y = clustered
    with pytest.raises(ValueError, match="cell_size"):
        SVC(init="cells", cell_size=cell_size).fit(X[:50], y[:50])


@pytest.mark.parametrize("cell_levels", [0, -1, 1.5])
def test_bad_cell_levels(clustered, cell_levels):
    X, y = clustered
    with pytest.raises(ValueError, match="cell_levels"):
        SVC(init="cells", cell_levels=cell_levels).fit(X[:50], y[:50])


def test_bad_init_and_kernels_without_features(clustered):
    X, y = clustered
    with pytest.raises(ValueError, match="init"):
        SVC(init="kmeans").fit(X[:50], y[:50])
    K = kernel_matrix(KernelSpec("rbf", gamma=0.1), X[:60], X[:60])
    with pytest.raises(ValueError, match="init"):
        SVC(kernel="precomputed", init="cells").fit(K, y[:60])
    with pytest.raises(ValueError, match="init"):
        SVC(kernel=lambda a, b: a @ b.T, init="cells").fit(X[:60], y[:60])


def _feasible_start(y, upper, rng):
    """Multipliers in their boxes with ``yᵀα = 0``, some at each bound."""
    a = rng.uniform(0, 1, y.size) * upper
    a[rng.uniform(size=y.size) < 0.3] = 0.0
    at_upper = rng.uniform(size=y.size) < 0.2
    a[at_upper] = upper[at_upper]
    # Scale one class down so the weighted sums agree.
    pos, neg = a[y > 0].sum(), a[y < 0].sum()
    if pos > neg:
        a[y > 0] *= neg / pos
    else:
        a[y < 0] *= pos / neg
    return a


def test_blocked_gradient_equals_the_column_gradient():
    rng = np.random.default_rng(3)
    n, d = 300, 5
    X = rng.normal(size=(n, d))
    y = np.where(rng.uniform(size=n) < 0.5, 1.0, -1.0)
    upper = np.where(rng.uniform(size=n) < 0.5, 1.0, 2.0)
    alpha = _feasible_start(y, upper, rng)
    spec = KernelSpec("rbf", gamma=0.3)
    K = kernel_matrix(spec, X, X)
    Q = y[:, None] * y[None, :] * K
    want_g = Q @ alpha - 1.0
    at_upper = alpha >= upper
    want_gbar = Q[:, at_upper] @ upper[at_upper]
    f64 = _core.SolverSettings(precision="float64")
    g, gbar, path = _core.dual_gradient(X, y, upper, alpha, kernel=spec.core(), settings=f64)
    assert path == "float64"
    scale = np.abs(want_g).max()
    np.testing.assert_allclose(g, want_g, rtol=0, atol=1e-10 * scale)
    np.testing.assert_allclose(gbar, want_gbar, rtol=0, atol=1e-10 * scale)
    # The same through rows of a larger X, and over sparse rows.
    Xbig = np.vstack([rng.normal(size=(40, d)), X])
    rows = np.arange(40, 40 + n, dtype=np.int64)
    g2, _, _ = _core.dual_gradient(
        Xbig, y, upper, alpha, kernel=spec.core(), settings=f64, options=_core.QPOptions(rows=rows)
    )
    np.testing.assert_allclose(g2, want_g, rtol=0, atol=1e-10 * scale)
    g3, gbar3, path3 = _core.dual_gradient(
        _core.CsrMatrix(*_csr_parts(X)), y, upper, alpha, kernel=spec.core()
    )
    assert path3 == "float64"
    np.testing.assert_allclose(g3, want_g, rtol=0, atol=1e-10 * scale)
    np.testing.assert_allclose(gbar3, want_gbar, rtol=0, atol=1e-10 * scale)
    # The solve from the blocked gradient, from the supplied one and from
    # the column fill: the same iterations and solution.
    settings = _core.SolverSettings(precision="float64", tol=1e-6)
    common = dict(kernel=spec.core(), settings=settings)
    columns = _core.solve_qp(X, y, upper, **common, options=_core.QPOptions(alpha0=alpha))
    blocked = _core.solve_qp(
        X, y, upper, **common, options=_core.QPOptions(alpha0=alpha, start="blocked")
    )
    given = _core.solve_qp(
        X, y, upper, **common, options=_core.QPOptions(alpha0=alpha, start=(g, gbar))
    )
    assert blocked.start_evaluations == n * np.count_nonzero(alpha)
    assert columns.start_evaluations == 0 and given.start_evaluations == 0
    for sol in (blocked, given):
        assert sol.n_iter == columns.n_iter
        np.testing.assert_allclose(sol.alpha, columns.alpha, atol=1e-9)


def test_blocked_gradient_sums_in_float64_past_float32_accuracy():
    """float32 sums serve the start gradient only while their rounding
    (about float32's epsilon times the multipliers' total) stays below a
    tenth of tol; past it the gradient is float64's to within 1e-9."""
    rng = np.random.default_rng(4)
    n, d = 2000, 6
    X = rng.normal(size=(n, d))
    y = np.where(rng.uniform(size=n) < 0.5, 1.0, -1.0)
    spec = KernelSpec("rbf", gamma=0.1)
    f64 = _core.SolverSettings(precision="float64")
    f32 = _core.SolverSettings(precision="float32", tol=1e-3)
    for C, want in [(1e-3, "float32"), (100.0, "float64")]:
        upper = np.full(n, C)
        alpha = _feasible_start(y, upper, rng)
        ref, _, _ = _core.dual_gradient(X, y, upper, alpha, kernel=spec.core(), settings=f64)
        g, _, path = _core.dual_gradient(X, y, upper, alpha, kernel=spec.core(), settings=f32)
        assert path == want
        err = np.abs(g - ref).max()
        assert err <= (1e-4 if want == "float32" else 1e-9 * np.abs(ref).max())


def _csr_parts(X):
    m = sp.csr_matrix(X)
    return m.data, m.indices.astype(np.int64), m.indptr.astype(np.int64), m.shape


def test_supplied_gradient_is_checked():
    rng = np.random.default_rng(0)
    n = 50
    X = rng.normal(size=(n, 3))
    y = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    upper = np.ones(n)
    alpha = _feasible_start(y, upper, rng)
    g, gbar, _ = _core.dual_gradient(X, y, upper, alpha)

    def solve(**options):
        return _core.solve_qp(X, y, upper, options=_core.QPOptions(**options))

    with pytest.raises(ValueError, match="gradient"):
        solve(alpha0=alpha, start=(g[:-1], gbar))
    with pytest.raises(ValueError, match="gradient_upper"):
        solve(alpha0=alpha, start=(g, np.ones(n + 1)))
    bad = g.copy()
    bad[3] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        solve(alpha0=alpha, start=(bad, gbar))
    with pytest.raises(TypeError, match="pair"):
        solve(alpha0=alpha, start=g)
    with pytest.raises(ValueError, match="'blocked'"):
        solve(alpha0=alpha, start="columns")
    with pytest.raises(ValueError, match="equality"):
        solve(constraint=_core.QPConstraint.BOX, start="blocked")
    with pytest.raises(ValueError, match="alpha"):
        _core.dual_gradient(X, y, upper, alpha[:-1])
    with pytest.raises(ValueError, match="alpha0"):
        _core.dual_gradient(X, y, upper, alpha, options=_core.QPOptions(alpha0=alpha))
    # Through the backend interface.
    problem = QPProblem(X=X, y=y, upper=upper, alpha0=alpha, start_gradient=(g[:-1], gbar))
    with pytest.raises(ValueError, match="start_gradient"):
        problem.validate()
    good = QPProblem(X=X, y=y, upper=upper, alpha0=alpha, start_gradient=(g, gbar))
    good.validate()
    sol = get_backend("rust").solve(good)
    ref = get_backend("rust").solve(QPProblem(X=X, y=y, upper=upper, alpha0=alpha))
    assert sol.converged and sol.n_iter == ref.n_iter


@pytest.mark.timing
def test_ctrl_c_stops_the_blocked_gradient():
    """SIGINT during a long blocked gradient (tens of seconds of kernel
    values) raises KeyboardInterrupt within a second and a half."""
    import subprocess
    import sys
    import textwrap

    child = textwrap.dedent(
        """
        import os, signal, threading, time
        import numpy as np
        from localsvm import _core

        rng = np.random.default_rng(0)
        n = 120000
        X = rng.normal(size=(n, 40))
        y = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
        alpha = np.full(n, 0.5)
        sent = []

        def interrupt():
            time.sleep(0.5)
            sent.append(time.perf_counter())
            os.kill(os.getpid(), signal.SIGINT)

        threading.Thread(target=interrupt, daemon=True).start()
        try:
            _core.dual_gradient(X, y, np.ones(n), alpha, kernel=_core.Kernel("rbf", 0.05))
            print("finished")
        except KeyboardInterrupt:
            print("latency", time.perf_counter() - sent[0])
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", child], capture_output=True, text=True, timeout=120
    ).stdout.split()
    assert out[0] == "latency", out
    assert float(out[1]) < 1.5, out


def test_auto_settings_never_choose_cells(clustered):
    """Exact mode runs only when asked for: every 'auto' setting (solver,
    precision, cell_size, backend) left as is solves from zero, even where
    the problem is large enough for cells, and ``init`` has no 'auto'."""
    X, y = clustered
    auto = SVC(C=1.0, cell_size=700).fit(X, y)
    assert auto.init is None
    assert not hasattr(auto, "init_time_") and not hasattr(auto, "n_cells_")
    assert auto.solver_ in {"smo", "batched"}
    plain = SVC(C=1.0, init=None).fit(X, y)
    np.testing.assert_array_equal(auto.dual_coef_, plain.dual_coef_)
    with pytest.raises(ValueError, match="init"):
        SVC(init="auto").fit(X, y)
