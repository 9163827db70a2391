"""One binary solve on two threads: the same answer as on one, engaged only
where ``n_jobs`` leaves room, and the kernel-evaluation count it reports."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_classification

from localsvm import SVC, QPProblem, _core
from localsvm.kernels import core_rows

# Above the solver's size threshold (8192 variables) with enough features
# that every full kernel column is split between the two threads.
N, D = 9000, 8


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(N, D, n_informative=6, n_redundant=0, flip_y=0.05, random_state=3)
    return np.ascontiguousarray(X), y


@pytest.fixture
def solve_calls(monkeypatch):
    """Records the ``threads`` each core solve was given and ran on."""
    calls = []
    real = _core.solve_qp

    def spy(*args, **kwargs):
        out = real(*args, **kwargs)
        options = kwargs.get("options")
        calls.append((1 if options is None else options.threads, out.threads))
        return out

    monkeypatch.setattr(_core, "solve_qp", spy)
    return calls


def test_two_threads_give_the_one_thread_model(data, solve_calls):
    X, y = data
    one = SVC(C=1.0, gamma=0.2, n_jobs=1).fit(X, y)
    assert solve_calls == [(1, 1)]
    two = SVC(C=1.0, gamma=0.2, n_jobs=2).fit(X, y)
    # The team was asked for and started.
    assert solve_calls[1] == (2, 2)
    np.testing.assert_array_equal(one.support_, two.support_)
    np.testing.assert_array_equal(one.dual_coef_, two.dual_coef_)
    np.testing.assert_array_equal(one.intercept_, two.intercept_)
    np.testing.assert_array_equal(one.n_iter_, two.n_iter_)
    np.testing.assert_array_equal(one.kernel_evaluations_, two.kernel_evaluations_)


def test_float64_path_is_identical_too(data):
    X, y = data
    labels = np.where(y == 1, 1.0, -1.0)
    kw = dict(
        kernel=_core.Kernel("rbf", 0.2),
        settings=_core.SolverSettings(precision="float64", cache_size=8.0),
    )
    a = _core.solve_qp(X, labels, np.ones(N), options=_core.QPOptions(threads=1), **kw)
    b = _core.solve_qp(X, labels, np.ones(N), options=_core.QPOptions(threads=2), **kw)
    assert (a.threads, b.threads) == (1, 2)
    np.testing.assert_array_equal(a.alpha, b.alpha)
    assert (a.n_iter, a.rho) == (b.n_iter, b.rho)


def test_small_and_sparse_problems_stay_on_one_thread(data):
    X, y = data
    labels = np.where(y == 1, 1.0, -1.0)
    small = _core.solve_qp(
        X[:500],
        labels[:500],
        np.ones(500),
        kernel=_core.Kernel("rbf", 0.2),
        options=_core.QPOptions(threads=2),
    )
    assert small.threads == 1
    Xs = core_rows(sp.csr_matrix(np.where(np.abs(X) > 1.0, X, 0.0)), keep_sparse=True)
    sparse = _core.solve_qp(
        Xs, labels, np.ones(N), kernel=_core.Kernel("rbf", 0.2), options=_core.QPOptions(threads=2)
    )
    assert sparse.threads == 1


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_parallel_binary_problems_do_not_oversubscribe(data, solve_calls):
    X, _ = data
    y3 = np.arange(N) % 3  # three classes: three one-vs-one problems
    SVC(C=1.0, gamma=0.2, n_jobs=2, max_iter=50).fit(X, y3)
    assert [given for given, _ in solve_calls] == [1, 1, 1]
    solve_calls.clear()
    SVC(C=1.0, gamma=0.2, n_jobs=6, max_iter=50).fit(X, y3)
    assert [given for given, _ in solve_calls] == [2, 2, 2]


def test_thread_counts_are_validated():
    X = np.eye(2)
    with pytest.raises(ValueError, match="threads"):
        _core.QPOptions(threads=0)
    with pytest.raises(ValueError, match="n_threads"):
        QPProblem(X=X, y=np.array([1.0, -1.0]), upper=np.ones(2), n_threads=0).validate()
    with pytest.raises(TypeError, match="n_threads"):
        QPProblem(X=X, y=np.array([1.0, -1.0]), upper=np.ones(2), n_threads=1.5).validate()


def test_kernel_evaluations_are_at_least_the_floor(data):
    X, y = data
    clf = SVC(C=1.0, gamma=0.2, n_jobs=1).fit(X[:2000], y[:2000])
    n_sv = clf.support_.size
    assert clf.kernel_evaluations_.shape == (1,)
    # Every support vector's column is computed once at least.
    assert clf.kernel_evaluations_[0] >= n_sv * 2000
    # A cache of two columns only recomputes them again and again.
    tiny = SVC(C=1.0, gamma=0.2, n_jobs=1, cache_size=0.001).fit(X[:2000], y[:2000])
    assert tiny.kernel_evaluations_[0] > clf.kernel_evaluations_[0]


def test_backends_that_do_not_count_report_minus_one(data):
    X, y = data
    clf = SVC(C=1.0, gamma=0.2, backend="scipy").fit(X[:200], y[:200])
    assert clf.kernel_evaluations_.tolist() == [-1]
