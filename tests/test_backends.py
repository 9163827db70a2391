"""Backends agree with each other, honour warm starts, subsets and box-only
problems, and the facade picks and refuses backends by documented rules."""

from __future__ import annotations

import numpy as np
import pytest

import localsvm
from conftest import make_problem_data
from localsvm.backends import (
    Capabilities,
    QPProblem,
    QPSolution,
    SolverBackend,
    UnsupportedProblemError,
)
from localsvm.backends.dense import dense_hessian, kkt_violation
from localsvm.kernels import KernelSpec

KERNELS = {
    "linear": KernelSpec("linear"),
    "poly": KernelSpec("poly", gamma=0.2, coef0=1.0, degree=2),
    "rbf": KernelSpec("rbf", gamma=0.5),
}


def relative_gap(a: float, b: float) -> float:
    return abs(a - b) / max(abs(a), abs(b), 1e-12)


def kkt_gap(problem: QPProblem, alpha: np.ndarray, index=None) -> float:
    """m(α) − M(α) of the equality-constrained dual over ``index``."""
    p = -np.ones(problem.n) if problem.p is None else problem.p
    g = dense_hessian(problem) @ alpha + p
    idx = np.arange(problem.n) if index is None else np.asarray(index)
    return kkt_violation(problem.y[idx], g[idx], alpha[idx], problem.upper[idx], True)


def test_kkt_violation_by_hand():
    y = np.array([1.0, -1.0, 1.0])
    upper = np.ones(3)
    alpha = np.array([0.0, 0.5, 1.0])
    g = np.array([-2.0, 0.5, 3.0])
    # up-set: t0 (−yG = 2), t1 (0.5); low-set: t1 (−0.5), t2 (3) → 2 + 3.
    assert kkt_violation(y, g, alpha, upper, True) == 5.0
    # Boxes only: t0 wants to grow by 2, t2 to shrink by 3.
    assert kkt_violation(y, g, alpha, upper, False) == 3.0


def problem(n=120, d=4, seed=0, kernel="rbf", upper=None, **kw) -> QPProblem:
    X, y = make_problem_data(n, d, seed)
    if upper is None:
        upper = np.ones(n)
    return QPProblem(X=X, y=y, upper=upper, kernel=KERNELS[kernel], tol=1e-6, **kw)


@pytest.mark.parametrize(
    ("kernel", "n"),
    [(k, n) for k in sorted(KERNELS) for n in (40, 150)] + [("rbf", 300)],
)
def test_rust_and_scipy_agree(kernel, n):
    prob = problem(n=n, seed=n, kernel=kernel)
    rust = localsvm.get_backend("rust").solve(prob)
    ref = localsvm.get_backend("scipy").solve(prob)
    assert relative_gap(rust.objective, ref.objective) < 1e-4
    assert rust.backend == "rust" and ref.backend == "scipy"


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_rust_and_scipy_agree_with_unequal_bounds(seed):
    r = np.random.default_rng(seed)
    upper = r.uniform(0.05, 5.0, size=200)
    upper[r.choice(200, 10, replace=False)] = 0.0  # pinned at zero
    prob = problem(n=200, seed=seed, upper=upper)
    rust = localsvm.get_backend("rust").solve(prob)
    ref = localsvm.get_backend("scipy").solve(prob)
    assert relative_gap(rust.objective, ref.objective) < 1e-4
    assert np.all(rust.alpha[upper == 0] == 0)
    assert np.all(rust.alpha <= upper)
    assert kkt_gap(prob, rust.alpha, np.flatnonzero(upper > 0)) < 1e-6 + 1e-4


def test_precomputed_kernel_agrees_with_features():
    prob = problem(n=100, seed=4)
    K = dense_hessian(prob) * np.outer(prob.y, prob.y)
    pre = QPProblem(X=K, y=prob.y, upper=prob.upper, kernel=KernelSpec("precomputed"), tol=1e-6)
    a = localsvm.get_backend("rust").solve(prob)
    b = localsvm.get_backend("rust").solve(pre)
    c = localsvm.get_backend("scipy").solve(pre)
    assert relative_gap(a.objective, b.objective) < 1e-6
    assert relative_gap(a.objective, c.objective) < 1e-4


def test_warm_start_and_subset_agree():
    base = problem(n=150, seed=5)
    full = localsvm.get_backend("rust").solve(base)
    # A feasible but non-optimal start: half of the optimum, rescaled per class
    # so that yᵀα stays 0.
    start = full.alpha * 0.5
    subset = np.arange(0, 150, 2)
    for backend in ("rust", "scipy"):
        prob = problem(n=150, seed=5, alpha0=start, active=subset)
        sol = localsvm.get_backend(backend).solve(prob)
        fixed = np.setdiff1d(np.arange(150), subset)
        np.testing.assert_array_equal(sol.alpha[fixed], start[fixed])
        assert abs(sol.alpha @ prob.y) < 1e-8
        assert kkt_gap(prob, sol.alpha, subset) < 1e-4
    rust = localsvm.get_backend("rust").solve(problem(n=150, seed=5, alpha0=start, active=subset))
    ref = localsvm.get_backend("scipy").solve(problem(n=150, seed=5, alpha0=start, active=subset))
    assert relative_gap(rust.objective, ref.objective) < 1e-4


def test_warm_start_from_the_optimum_is_immediate():
    prob = problem(n=200, seed=6)
    cold = localsvm.get_backend("rust").solve(prob)
    warm = localsvm.get_backend("rust").solve(problem(n=200, seed=6, alpha0=cold.alpha))
    assert warm.n_iter <= 1 < cold.n_iter
    assert relative_gap(cold.objective, warm.objective) < 1e-9


def test_box_only_agrees():
    prob = problem(n=120, seed=7, equality=False)
    rust = localsvm.get_backend("rust").solve(prob)
    ref = localsvm.get_backend("scipy").solve(prob)
    assert rust.rho == 0.0
    assert relative_gap(rust.objective, ref.objective) < 1e-4
    # Without the equality constraint yᵀα is free.
    assert abs(rust.alpha @ prob.y) > 1e-6


@pytest.mark.parametrize("backend", ["rust", "scipy"])
def test_infeasible_warm_start_is_rejected(backend):
    prob = problem(n=20, seed=8, alpha0=np.where(np.arange(20) == 0, 0.5, 0.0))
    with pytest.raises(ValueError, match="equality constraint"):
        localsvm.get_backend(backend).solve(prob)
    prob = problem(n=20, seed=8, alpha0=np.full(20, 2.0))
    with pytest.raises(ValueError, match="outside its box"):
        localsvm.get_backend(backend).solve(prob)


def test_auto_picks_rust():
    assert localsvm.select_backend("auto", problem(n=10)).name == "rust"


def test_unknown_backend_lists_registered_names():
    with pytest.raises(ValueError, match=r"unknown backend 'nope'.*'rust'.*'scipy'"):
        localsvm.select_backend("nope", problem(n=10))


def test_backend_declines_what_it_cannot_do():
    big = problem(n=1200, seed=9)
    with pytest.raises(UnsupportedProblemError, match="at most 1000 samples"):
        localsvm.select_backend("scipy", big)
    # The limit counts the variables that move, not the problem's size.
    local = problem(n=1200, seed=9, active=np.arange(50))
    assert localsvm.select_backend("scipy", local).name == "scipy"
    sol = localsvm.get_backend("scipy").solve(local)
    ref = localsvm.get_backend("rust").solve(local)
    assert relative_gap(sol.objective, ref.objective) < 1e-4


class _LinearOnly(SolverBackend):
    """A stand-in backend with narrow capabilities."""

    name = "linear-only"
    priority = 1000
    capabilities = Capabilities(kernels=frozenset({"linear"}))

    def solve(self, problem: QPProblem) -> QPSolution:  # pragma: no cover - never picked
        raise AssertionError("must not be called")


def test_capability_messages():
    b = _LinearOnly()
    assert "'rbf' kernel" in b.check(problem(n=10))
    # A start point is a hint, not a requirement.
    assert b.check(problem(n=10, kernel="linear", alpha0=np.zeros(10))) is None
    assert "subset" in b.check(problem(n=10, kernel="linear", active=np.arange(3)))
    assert "box-only" in b.check(problem(n=10, kernel="linear", equality=False))
    assert b.check(problem(n=10, kernel="linear")) is None


def test_problem_validation_names_the_field():
    prob = problem(n=10)
    prob.upper = np.ones(9)
    with pytest.raises(ValueError, match="upper"):
        prob.validate()
    prob = problem(n=10)
    prob.y = np.zeros(10)
    with pytest.raises(ValueError, match="-1 and \\+1"):
        prob.validate()


def test_dense_backend_reports_why_it_stopped():
    prob = problem(n=100, seed=10, max_iter=1)
    prob.tol = 1e-8
    sol = localsvm.get_backend("scipy").solve(prob)
    assert not sol.converged
    assert "KKT violation" in sol.message
    ok = localsvm.get_backend("scipy").solve(problem(n=100, seed=10))
    assert ok.converged and ok.message == ""


@pytest.mark.parametrize("backend", ["rust", "scipy"])
@pytest.mark.parametrize("precomputed", [False, True])
def test_rows_select_examples_without_copying(backend, precomputed):
    X, y = make_problem_data(150, 4, 11)
    rows = np.arange(3, 150, 2)
    spec = KernelSpec("rbf", gamma=0.5)
    if precomputed:
        X = dense_hessian(QPProblem(X=X, y=np.ones(150), upper=np.ones(150), kernel=spec))
        spec = KernelSpec("precomputed")
    sub = QPProblem(X=X, rows=rows, y=y[rows], upper=np.ones(rows.size), kernel=spec, tol=1e-6)
    copied = QPProblem(
        X=X[np.ix_(rows, rows)] if precomputed else X[rows],
        y=y[rows],
        upper=np.ones(rows.size),
        kernel=spec,
        tol=1e-6,
    )
    a = localsvm.get_backend(backend).solve(sub)
    b = localsvm.get_backend(backend).solve(copied)
    assert relative_gap(a.objective, b.objective) < 1e-9
    np.testing.assert_allclose(a.alpha, b.alpha, atol=1e-9)


def test_bad_rows_are_rejected():
    X, y = make_problem_data(20, 2, 0)
    prob = QPProblem(X=X, rows=np.array([0, 25]), y=y[:2], upper=np.ones(2))
    with pytest.raises(ValueError, match="rows must index"):
        prob.validate()
    with pytest.raises(ValueError, match="out of range"):
        localsvm.get_backend("rust").solve(prob)
    prob = QPProblem(X=X, rows=np.array([0, 1, 2]), y=y[:2], upper=np.ones(2))
    with pytest.raises(ValueError, match="rows must list 2"):
        prob.validate()


def _ovo_like_problems(kernel="rbf", nu=False):
    """Problems over one X, each on its own rows (a one-vs-one fit's)."""
    X, y = make_problem_data(200, 4, 5)
    problems = []
    for k, rows in enumerate((np.arange(0, 200, 3), np.arange(1, 200, 2), np.arange(150))):
        kw = {}
        if nu:
            from localsvm.svc import nu_start

            kw = dict(
                p=np.zeros(rows.size),
                alpha0=nu_start(y[rows], np.ones(rows.size), 0.3),
                equality_kind="per_label",
            )
        upper = np.full(rows.size, 1.0 + k)
        problems.append(
            QPProblem(X=X, rows=rows, y=y[rows], upper=upper, kernel=KERNELS[kernel], **kw)
        )
    return problems


@pytest.mark.parametrize(("kernel", "nu"), [("rbf", False), ("poly", False), ("rbf", True)])
def test_solve_many_is_solve_bit_for_bit(kernel, nu):
    backend = localsvm.get_backend("rust")
    problems = _ovo_like_problems(kernel, nu)
    many = backend.solve_many(problems)
    assert len(many) == len(problems)
    for problem, got in zip(problems, many, strict=True):
        want = backend.solve(problem)
        np.testing.assert_array_equal(got.alpha, want.alpha)
        assert (got.rho, got.r, got.objective, got.n_iter) == (
            want.rho,
            want.r,
            want.objective,
            want.n_iter,
        )
        assert got.kernel_evaluations == want.kernel_evaluations
        assert got.precision == want.precision


def test_solve_many_falls_back_for_problems_that_differ():
    backend = localsvm.get_backend("rust")
    problems = _ovo_like_problems()
    problems[1].tol = 1e-5  # another setting: solved on its own
    many = backend.solve_many(problems)
    for problem, got in zip(problems, many, strict=True):
        np.testing.assert_array_equal(got.alpha, backend.solve(problem).alpha)


def test_solve_qp_many_raises_the_failing_problems_error():
    from localsvm import _core

    X, y = make_problem_data(20, 2, 0)
    good = (y[:10].copy(), np.ones(10), _core.QPOptions(rows=np.arange(10)))
    bad = (y[:2].copy(), np.ones(2), _core.QPOptions(rows=np.array([0, 25])))
    with pytest.raises(ValueError, match="out of range"):
        _core.solve_qp_many(X, [good, bad])
    (out,) = _core.solve_qp_many(X, [good])
    ref = _core.solve_qp(X, good[0], good[1], options=good[2])
    np.testing.assert_array_equal(out.alpha, ref.alpha)
    assert _core.solve_qp_many(X, []) == []


def test_solve_many_checked_checks_every_answer():
    from localsvm.backends.base import solve_many_checked

    problems = _ovo_like_problems()

    class Plain:
        """A backend without solve_many: one solve per problem."""

        name = "plain"

        def solve(self, problem):
            return localsvm.get_backend("rust").solve(problem)

    class Short(SolverBackend):
        name = "short"

        def solve(self, problem):
            return localsvm.get_backend("rust").solve(problem)

        def solve_many(self, problems):
            return [self.solve(p) for p in problems[:-1]]

    class Broken(Short):
        name = "broken"

        def solve_many(self, problems):
            return [None for _ in problems]

    want = [localsvm.get_backend("rust").solve(p).alpha for p in problems]
    for got, ref in zip(solve_many_checked(Plain(), problems), want, strict=True):
        np.testing.assert_array_equal(got.alpha, ref)
    with pytest.raises(TypeError, match="'short' returned 2 from solve_many"):
        solve_many_checked(Short(), problems)
    with pytest.raises(TypeError, match="'broken' returned NoneType"):
        solve_many_checked(Broken(), problems)
