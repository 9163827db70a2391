"""ClusterSVC (MCSVM): the per-class box QP against independent solves, the
backends against each other, the kernel form's geometry, and the estimator's
edge cases."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
from scipy.optimize import minimize
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

import localsvm.cluster_svc as cluster_svm
from localsvm import SVC, ClusterSVC, get_backend
from localsvm.backends import UnsupportedProblemError
from localsvm.cluster_svc import solve_box_qp
from localsvm.datasets import load_heart, load_iris
from localsvm.kernels import KernelSpec, kernel_matrix_numpy


@pytest.fixture(scope="module")
def iris():
    d = load_iris()
    X = StandardScaler().fit_transform(d.X)
    return X, d.y


def three_blobs(n_per_class=20, seed=0):
    rng = np.random.default_rng(seed)
    centres = np.array([[0.0, 0.0], [3.0, 0.5], [1.0, 3.0]])
    X = np.vstack([c + rng.normal(scale=0.9, size=(n_per_class, 2)) for c in centres])
    y = np.repeat([0, 1, 2], n_per_class)
    return X, y


def features(model, X):
    """The rows ``[x e]`` (linear form) or ``[K(x, R) e]`` (kernel form)."""
    if model.kernel == "linear":
        A = X
    else:
        A = kernel_matrix_numpy(model.kernel_spec_, X, X[model.columns_])
    return np.hstack([A, np.ones((X.shape[0], 1))])


def direct_solve(model, X, y, i):
    """Class ``i``'s dual, formed densely in NumPy (``H = Q M⁻¹ Qᵀ`` with an
    explicit solve) and solved by L-BFGS-B with bounds; returns ``u`` and the
    dual objective ``½αᵀHα − eᵀα``."""
    F = features(model, X)
    own = y == model.classes_[i]
    P, Q = F[own], F[~own]
    M = P.T @ P
    M += model.ridge * np.trace(M) / M.shape[0] * np.eye(M.shape[0])
    H = Q @ np.linalg.solve(M, Q.T)
    H = 0.5 * (H + H.T)
    m = Q.shape[0]

    def fun(a):
        Ha = H @ a
        return 0.5 * a @ Ha - a.sum(), Ha - 1.0

    res = minimize(
        fun,
        np.zeros(m),
        jac=True,
        method="L-BFGS-B",
        bounds=[(0.0, model.C)] * m,
        options={"ftol": 1e-15, "gtol": 1e-10, "maxiter": 20000},
    )
    u = -np.linalg.solve(M, Q.T @ res.x)
    return u, float(res.fun)


# --------------------------------------------------------------- the QP


@pytest.mark.parametrize(
    "params",
    [
        {"kernel": "linear"},
        {"kernel": "rbf", "gamma": 0.5, "n_columns": 15, "random_state": 0},
    ],
    ids=["linear", "rbf-15-columns"],
)
def test_hyperplanes_match_a_direct_dense_solve(params):
    X, y = three_blobs()
    model = ClusterSVC(C=1.0, tol=1e-7, **params).fit(X, y)
    for i in range(3):
        u, objective = direct_solve(model, X, y, i)
        w = model.coef_[i] if params["kernel"] == "linear" else model.expansion_coef_[i]
        scale = np.abs(u).max()
        np.testing.assert_allclose(w, u[:-1], atol=1e-4 * scale)
        np.testing.assert_allclose(model.intercept_[i], u[-1], atol=1e-4 * scale)
        np.testing.assert_allclose(model.dual_objective_[i], objective, rtol=1e-5)


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_rust_and_scipy_backends_agree(iris, kernel):
    X, y = iris
    X, y = X[::2], y[::2]  # 75 examples: the scipy backend is a dense reference
    params = {"kernel": kernel, "n_columns": 30, "random_state": 0, "tol": 1e-6}
    rust = ClusterSVC(backend="rust", **params).fit(X, y)
    ref = ClusterSVC(backend="scipy", **params).fit(X, y)
    assert (rust.backend_, ref.backend_) == ("rust", "scipy")
    np.testing.assert_allclose(rust.dual_objective_, ref.dual_objective_, rtol=1e-5)
    np.testing.assert_allclose(rust.intercept_, ref.intercept_, rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(rust.decision_function(X), ref.decision_function(X), atol=1e-3)
    np.testing.assert_array_equal(rust.predict(X), ref.predict(X))


def test_working_set_rounds_reach_the_one_shot_optimum():
    """Growing the working set a few rows at a time ends where one round over
    every row does: the KKT check over all rows makes it exact to tol."""
    rng = np.random.default_rng(1)
    P = np.hstack([rng.normal(size=(30, 6)), np.ones((30, 1))])
    Q = np.hstack([rng.normal(loc=1.0, size=(80, 6)), np.ones((80, 1))])
    M = P.T @ P + 1e-3 * np.eye(7)
    L = np.linalg.cholesky(M)
    backend = get_backend("rust")
    a_all, u_all, s_all = solve_box_qp(backend, Q, L, 2.0, tol=1e-8, step=80)
    a_few, u_few, s_few = solve_box_qp(backend, Q, L, 2.0, tol=1e-8, step=3)
    assert s_all.converged and s_few.converged
    np.testing.assert_allclose(a_few, a_all, atol=1e-6)
    np.testing.assert_allclose(u_few, u_all, atol=1e-6)
    np.testing.assert_allclose(s_few.objective, s_all.objective, rtol=1e-9)
    # KKT of the whole problem: ∇ = Hα − e ≥ −tol at α = 0, ≈ 0 inside the box.
    Z = np.linalg.solve(L, Q.T).T
    grad = Z @ (Z.T @ a_few) - 1.0
    assert grad[a_few == 0].min() > -1e-6
    inside = (a_few > 1e-9) & (a_few < 2.0 - 1e-9)
    assert np.abs(grad[inside]).max() < 1e-5


# ------------------------------------------------------------ the geometry


def test_kernel_form_norm_and_distances():
    X, y = three_blobs()
    model = ClusterSVC(gamma=0.5, n_columns=None).fit(X, y)
    assert model.columns_.size == X.shape[0]
    K = kernel_matrix_numpy(model.kernel_spec_, X, X)
    psi = model.expansion_coef_
    norms = np.sqrt(np.einsum("ij,jk,ik->i", psi, K, psi))
    np.testing.assert_allclose(model.w_norm_, norms, rtol=1e-8)
    f = kernel_matrix_numpy(model.kernel_spec_, X, X) @ psi.T + model.intercept_
    np.testing.assert_allclose(model.distances(X), np.abs(f) / norms, rtol=1e-8)
    np.testing.assert_allclose(model.decision_function(X), -np.abs(f) / norms, rtol=1e-8)
    assert np.array_equal(model.predict(X), model.classes_[np.argmin(np.abs(f) / norms, 1)])
    raw = ClusterSVC(gamma=0.5, n_columns=None, normalize=False).fit(X, y)
    np.testing.assert_allclose(raw.distances(X), np.abs(f), rtol=1e-8)


def test_linear_form_is_the_geometric_distance():
    X, y = three_blobs()
    model = ClusterSVC(kernel="linear").fit(X, y)
    w, b = model.coef_, model.intercept_
    dist = np.abs(X @ w.T + b) / np.linalg.norm(w, axis=1)
    np.testing.assert_allclose(model.distances(X), dist, rtol=1e-10)
    with pytest.raises(AttributeError, match="linear kernel"):
        _ = ClusterSVC().fit(X, y).coef_


def test_own_class_is_nearer_its_hyperplane(iris):
    X, y = iris
    model = ClusterSVC(C=1.0).fit(X, y)
    d = model.distances(X)
    for i, c in enumerate(model.classes_):
        own = d[y == c, i].mean()
        other = d[y != c, i].mean()
        assert own < other
    assert model.score(X, y) > 0.9


def test_reduced_columns_are_drawn_reproducibly(iris):
    X, y = iris
    a = ClusterSVC(n_columns=40, random_state=3).fit(X, y)
    b = ClusterSVC(n_columns=40, random_state=3).fit(X, y)
    assert a.columns_.size == 40 and np.all(np.diff(a.columns_) > 0)
    np.testing.assert_array_equal(a.columns_, b.columns_)
    np.testing.assert_array_equal(a.column_vectors_, X[a.columns_])
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(X))
    assert ClusterSVC(n_columns=1000).fit(X, y).columns_.size == X.shape[0]


def test_precomputed_kernel_matches_the_kernel_it_was_built_from(iris):
    X, y = iris
    X_tr, X_te, y_tr, _ = train_test_split(X, y, random_state=0, stratify=y)
    spec = KernelSpec("rbf", gamma=0.3)
    feats = ClusterSVC(gamma=0.3, n_columns=50, random_state=0).fit(X_tr, y_tr)
    pre = ClusterSVC(kernel="precomputed", n_columns=50, random_state=0)
    pre.fit(kernel_matrix_numpy(spec, X_tr, X_tr), y_tr)
    np.testing.assert_array_equal(pre.columns_, feats.columns_)
    assert pre.column_vectors_.shape == (0, 0)
    K_te = kernel_matrix_numpy(spec, X_te, X_tr)
    np.testing.assert_allclose(
        pre.decision_function(K_te), feats.decision_function(X_te), rtol=1e-6, atol=1e-8
    )


# ----------------------------------------------------------- edge cases


def test_two_classes_against_svc():
    d = load_heart()
    X_tr, X_te, y_tr, y_te = train_test_split(d.X, d.y, test_size=0.3, random_state=0, stratify=d.y)
    scaler = StandardScaler().fit(X_tr)
    X_tr, X_te = scaler.transform(X_tr), scaler.transform(X_te)
    labels = np.array(["absent", "present"])
    mc = ClusterSVC(C=1.0, gamma=0.01).fit(X_tr, labels[y_tr])
    svc = SVC(C=1.0, gamma=0.01).fit(X_tr, labels[y_tr])
    dec = mc.decision_function(X_te)
    assert dec.shape == (X_te.shape[0],)
    np.testing.assert_array_equal(mc.predict(X_te), mc.classes_[(dec > 0).astype(int)])
    d_all = mc.distances(X_te)
    np.testing.assert_allclose(dec, d_all[:, 0] - d_all[:, 1])
    acc_mc = mc.score(X_te, labels[y_te])
    acc_svc = svc.score(X_te, labels[y_te])
    assert acc_mc > 0.75 and acc_svc > 0.75
    assert abs(acc_mc - acc_svc) < 0.08


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_a_class_with_a_single_example(kernel):
    X, y = three_blobs()
    X = np.vstack([X, [[6.0, 6.0]]])
    y = np.append(y, 7)
    model = ClusterSVC(kernel=kernel).fit(X, y)
    assert list(model.classes_) == [0, 1, 2, 7]
    assert np.all(np.isfinite(model.w_norm_)) and np.all(model.w_norm_ > 0)
    assert model.predict([[6.0, 6.0]])[0] == 7
    assert model.decision_function(X).shape == (X.shape[0], 4)


def test_bad_input():
    X, y = three_blobs()
    with pytest.raises(ValueError, match="NaN"):
        ClusterSVC().fit(np.where(X > 2.5, np.nan, X), y)
    with pytest.raises(ValueError, match="greater than one"):
        ClusterSVC().fit(X, np.zeros_like(y))
    with pytest.raises(ValueError, match="Unknown label type"):
        ClusterSVC().fit(X, X[:, 0])
    for bad in ({"C": 0.0}, {"n_columns": 0}, {"ridge": -1.0}, {"normalize": "yes"}):
        with pytest.raises(ValueError):
            ClusterSVC(**bad).fit(X, y)
    with pytest.raises(ValueError, match="square"):
        ClusterSVC(kernel="precomputed").fit(X, y)
    with pytest.raises(NotFittedError):
        ClusterSVC().predict(X)
    model = ClusterSVC().fit(X, y)
    with pytest.raises(ValueError, match="features"):
        model.predict(np.hstack([X, X]))


def test_scipy_backend_refuses_what_it_cannot_hold(iris):
    X, y = iris
    X = np.repeat(X, 12, axis=0)  # 1200 examples of the other classes per class
    y = np.repeat(y, 12)
    with pytest.raises(UnsupportedProblemError, match="at most 1000"):
        ClusterSVC(backend="scipy").fit(X, y)


def test_memory_error_names_the_size_and_the_parameter(monkeypatch, iris):
    X, y = iris
    monkeypatch.setattr(cluster_svm, "_memory_limit", lambda: 1 << 12)
    with pytest.raises(MemoryError, match=r"GiB.*n_columns"):
        ClusterSVC().fit(X, y)
    with pytest.raises(MemoryError, match="number of features"):
        ClusterSVC(kernel="linear").fit(X, y)


def test_convergence_warning_at_the_iteration_cap(iris):
    X, y = iris
    with pytest.warns(ConvergenceWarning, match="per-class problems"):
        model = ClusterSVC(max_iter=1).fit(X, y)
    assert model.fit_status_ == 1
    assert np.all(model.n_iter_ <= 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        assert ClusterSVC().fit(X, y).fit_status_ == 0


def test_pickle_round_trip(iris):
    X, y = iris
    model = ClusterSVC(n_columns=60, random_state=0).fit(X, y)
    clone = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(clone.predict(X), model.predict(X))
    np.testing.assert_allclose(clone.decision_function(X), model.decision_function(X))


def test_serial_and_threaded_fits_agree(iris):
    X, y = iris
    a = ClusterSVC(n_jobs=1).fit(X, y)
    b = ClusterSVC(n_jobs=3).fit(X, y)
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(X))


def test_fits_are_bitwise_the_same_for_every_n_jobs():
    # n_jobs=1 used every BLAS thread, n_jobs=2 one per class, and OpenBLAS
    # rounds differently on 1 and 2 threads: decision values differed by
    # ~1e-9. Every class's solve now runs on one BLAS thread.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 20))
    y = (X[:, 0] + X[:, 1] > 0).astype(int) + (X[:, 2] > 0.5)
    dec = [
        ClusterSVC(n_columns=300, random_state=0, n_jobs=j).fit(X, y).decision_function(X)
        for j in (1, 2)
    ]
    np.testing.assert_array_equal(dec[0], dec[1])


@pytest.mark.parametrize("n", [5, 128, 300])
def test_blocked_gram_and_cholesky_match_scipy(n):
    from scipy.linalg import cholesky

    rng = np.random.default_rng(n)
    F = rng.normal(size=(n + 200, n))
    rows = np.flatnonzero(rng.uniform(size=n + 200) < 0.7)
    M = cluster_svm._gram_lower(F, rows, None)
    P = F[rows]
    np.testing.assert_allclose(np.tril(M), np.tril(P.T @ P), rtol=1e-12, atol=1e-9)
    assert not np.triu(M, 1).any()
    M[np.diag_indices_from(M)] += 1e-3
    want = cholesky(P.T @ P + 1e-3 * np.eye(n), lower=True)
    np.testing.assert_allclose(cluster_svm._cholesky_lower(M, None), want, rtol=1e-9, atol=1e-9)


def test_class_solves_stop_once_interrupted():
    # A worker thread never sees Ctrl-C: it polls interrupt_count between
    # the pieces of the factorisation and the working-set rounds.
    import os

    from localsvm.engines import interrupt_count

    stale = (os.getpid(), interrupt_count() - 1)
    rng = np.random.default_rng(0)
    F = rng.normal(size=(300, 20))
    with pytest.raises(KeyboardInterrupt):
        cluster_svm._gram_lower(F, np.arange(300), stale)
    with pytest.raises(KeyboardInterrupt):
        cluster_svm._cholesky_lower(np.asfortranarray(F.T @ F), stale)
    L = np.linalg.cholesky(F[:150].T @ F[:150] + np.eye(20))
    with pytest.raises(KeyboardInterrupt):
        solve_box_qp(get_backend("rust"), F[150:], L, 1.0, epoch=stale)


def test_an_epoch_from_another_process_never_interrupts():
    # A task shipped to a Dask worker carries its sender's count: after
    # earlier Ctrl-Cs in the sender the counts differ, but the worker was
    # never interrupted.
    import os

    from localsvm.engines import interrupt_count, interrupt_epoch, interrupted_since

    assert not interrupted_since(interrupt_epoch())
    assert not interrupted_since(None)
    foreign = (os.getpid() + 1, interrupt_count() + 5)
    assert not interrupted_since(foreign)
    cluster_svm._poll(foreign)  # no KeyboardInterrupt
    assert interrupted_since((os.getpid(), interrupt_count() - 1))


def test_concurrent_fits_equal_lone_fits_bit_for_bit():
    # Products of these sizes run on several BLAS threads when the library
    # may use them; the fit limits BLAS to one thread, a limit the fits in
    # every thread share, so fits running at once are the fits run alone
    # (they differed by up to 1e-9 when each fit set and restored its own).
    from threading import Thread

    from sklearn.base import clone
    from sklearn.datasets import make_classification
    from threadpoolctl import threadpool_info

    before = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
    jobs = []
    for seed in range(4):
        X, y = make_classification(
            n_samples=900, n_features=30, n_informative=15, n_classes=4, random_state=seed
        )
        kernel = "rbf" if seed % 2 else "linear"
        jobs.append((X, y, ClusterSVC(kernel=kernel, n_columns=250, random_state=0, n_jobs=1)))

    def run(job):
        X, y, est = job
        model = clone(est).fit(X, y)
        return model.dual_coef_, model.intercept_, model.decision_function(X[:100])

    alone = [run(job) for job in jobs]
    together = [None] * len(jobs)

    def work(i):
        together[i] = run(jobs[i])

    threads = [Thread(target=work, args=(i,)) for i in range(len(jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for a, b in zip(alone, together, strict=True):
        for x, y in zip(a[0], b[0], strict=True):
            np.testing.assert_array_equal(x, y)
        np.testing.assert_array_equal(a[1], b[1])
        np.testing.assert_array_equal(a[2], b[2])
    # The limit is lifted once the last fit ends.
    after = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
    assert after == before
