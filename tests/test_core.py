"""The compiled core (localsvm._core) seen from Python: kernels against a NumPy
reference, decision values, input errors, and the GIL released while solving."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest

from conftest import make_problem_data, runs_detached
from localsvm import _core
from localsvm.kernels import KernelSpec, kernel_matrix, kernel_matrix_numpy

SPECS = [
    KernelSpec("linear"),
    KernelSpec("poly", gamma=0.3, coef0=1.0, degree=3),
    KernelSpec("poly", gamma=0.5, coef0=0.0, degree=0),
    KernelSpec("rbf", gamma=0.7),
    KernelSpec("sigmoid", gamma=0.1, coef0=-0.5),
]


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: f"{s.name}-{s.degree}")
def test_kernel_matrix_matches_numpy(spec, rng):
    A = rng.normal(size=(37, 5))
    B = rng.normal(size=(23, 5))
    np.testing.assert_allclose(
        kernel_matrix(spec, A, B), kernel_matrix_numpy(spec, A, B), rtol=1e-10, atol=1e-12
    )


def test_kernel_matrix_accepts_non_contiguous_input(rng):
    A = rng.normal(size=(10, 8))[:, ::2]
    spec = KernelSpec("rbf", gamma=0.2)
    np.testing.assert_allclose(kernel_matrix(spec, A, A), kernel_matrix_numpy(spec, A, A))


@pytest.mark.parametrize(("na", "nb", "d"), [(1, 1, 1), (9, 13, 1), (17, 8, 7), (40, 33, 22)])
def test_rbf_kernel_matrix_is_exact_for_close_points_far_from_the_origin(rng, na, nb, d):
    """RBF values come from the differences: no cancellation between norms."""
    A = 1e6 + rng.normal(size=(na, d))
    src = rng.integers(0, na, size=nb)
    B = A[src] + 1e-4 * rng.normal(size=(nb, d))
    gamma = 0.37
    got = _core.kernel_matrix(A, B, kernel=_core.Kernel("rbf", gamma))
    want = np.exp(-gamma * ((A[:, None, :] - B[None, :, :]) ** 2).sum(axis=-1))
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15)
    assert np.all(got[src, np.arange(nb)] > 0.99)


def test_rbf_kernel_matrix_underflows_to_zero(rng):
    A = rng.normal(size=(5, 3))
    got = _core.kernel_matrix(A, A + 100.0, kernel=_core.Kernel("rbf", 50.0))
    assert np.all(got == 0.0)
    diag = _core.kernel_matrix(A, A, kernel=_core.Kernel("rbf", 50.0))
    np.testing.assert_array_equal(np.diag(diag), 1.0)


def _ulps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Units in the last place between non-negative float64 arrays."""
    return np.abs(a.view(np.int64) - b.view(np.int64))


def test_rbf_exponential_is_within_one_ulp_of_libm():
    """The vectorised float64 ``exp`` (a 16-entry table and a degree-7
    polynomial) against libm's ``math.exp``, over a dense grid of the whole
    range where ``e^-t`` is neither 1 nor 0, in the kernel matrix and in the
    float64 decision values: one row at 0 against rows at ``sqrt(t)``, so
    the argument is exactly ``-fl(x·x)``."""
    t = np.concatenate(
        [
            np.arange(0.0, 746.5, 1.37e-3),
            [0.0, 5e-324, 1e-300, 1e-17, 708.39, 708.5, 745.0, 745.1, 745.13],
            [745.2, 746.0, 800.0, 1e4, 1e300],
        ]
    )
    x = np.sqrt(t)
    arg = -(x * x)
    want = np.array([math.exp(a) for a in arg])
    rbf = _core.Kernel("rbf", 1.0)
    zero = np.zeros((1, 1))
    from_matrix = _core.kernel_matrix(zero, x[:, None], kernel=rbf)[0]
    from_expansion = _core.decision_values(
        x[:, None], zero, np.ones((1, 1)), np.zeros(1), kernel=rbf, precision="float64"
    )[:, 0]
    for got in (from_matrix, from_expansion):
        assert _ulps(got, want).max() <= 1
        normal = want >= np.finfo(np.float64).tiny
        assert np.max(np.abs(got - want)[normal] / want[normal]) <= 2.3e-16
        assert got[0] == 1.0 and np.all(got[(t > 0) & (t < 1e-16)] == 1.0)
        assert np.all(got[t >= 745.2] == 0.0)


def test_float64_decision_values_are_the_exact_sum_and_ignore_the_other_rows(rng):
    """ijcnn1's shape (one of ten one-hot features and twelve dense ones):
    the float64 path groups rows by their non-zero features, which must
    change no value; the values are within 1e-13 (relative to the sum of
    absolute terms) of the exactly summed expansion with libm's ``exp``."""

    def rows(n):
        X = np.zeros((n, 22))
        X[np.arange(n), rng.integers(0, 10, size=n)] = 1.0
        X[:, 10:] = rng.normal(scale=0.3, size=(n, 12))
        return X

    X, sv = rows(400), rows(700)
    coef = rng.normal(size=(2, 700))
    b = rng.normal(size=2)
    rbf = _core.Kernel("rbf", 0.7)
    got = _core.decision_values(X, sv, coef, b, kernel=rbf, precision="float64")
    perm = rng.permutation(400)
    shuffled = _core.decision_values(X[perm], sv, coef, b, kernel=rbf, precision="float64")
    np.testing.assert_array_equal(shuffled, got[perm])
    for i in range(0, 400, 7):
        alone = _core.decision_values(X[i : i + 1], sv, coef, b, kernel=rbf, precision="float64")
        np.testing.assert_array_equal(alone[0], got[i])
    d2 = ((X[:, None, :] - sv[None, :, :]) ** 2).sum(axis=-1)
    K = np.vectorize(math.exp)(-0.7 * d2)
    for c in range(2):
        want = np.array([math.fsum([*(coef[c] * K[i]), b[c]]) for i in range(400)])
        scale = np.abs(K) @ np.abs(coef[c]) + abs(b[c])
        assert np.max(np.abs(got[:, c] - want) / scale) < 1e-13


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: f"{s.name}-{s.degree}")
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_decision_values_matches_numpy(rng, spec, sparse):
    """Prediction runs in f32 (f64 sums over blocks): agreement to ~1e-5."""
    X = rng.normal(size=(300, 6))
    sv = rng.normal(size=(700, 6))
    if sparse:  # mostly-zero rows take the dot-product path
        X[:, 1:5] = 0.0
        sv[::2, :4] = 0.0
    coef = rng.normal(size=(3, 700)) / 700
    b = rng.normal(size=3)
    got = _core.decision_values(X, sv, coef, b, kernel=spec.core())
    want = kernel_matrix_numpy(spec, X, sv) @ coef.T + b
    scale = np.abs(kernel_matrix_numpy(spec, X, sv)) @ np.abs(coef).T + 1.0
    assert np.max(np.abs(got - want) / scale) < 1e-5


def _args(n=20, d=3, seed=0):
    X, y = make_problem_data(n, d, seed)
    return X, y, np.ones(n)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda X, y, u: (X, np.where(y > 0, 2.0, -1.0), u), "y must contain only"),
        (lambda X, y, u: (X, y, u[:-1]), "upper has"),
        (lambda X, y, u: (X, y, -u), "non-negative"),
        (lambda X, y, u: (np.where(X > 1, np.nan, X), y, u), "NaN or infinity"),
        (lambda X, y, u: (np.where(X > 1, np.inf, X), y, u), "NaN or infinity"),
        (lambda X, y, u: (X[:-1], y, u), "examples"),
    ],
)
def test_solve_qp_rejects_bad_input(change, message):
    X, y, u = change(*_args())
    with pytest.raises(ValueError, match=message):
        _core.solve_qp(X, y, u, kernel=_core.Kernel("rbf", 1.0))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"alpha0": np.full(20, 5.0)}, "outside its box"),
        ({"active": np.array([0, 0])}, "appears twice"),
        ({"active": np.array([-1])}, "non-negative"),
        ({"active": np.array([99])}, "out of range"),
    ],
)
def test_solve_qp_rejects_bad_options(kwargs, message):
    X, y, u = _args()
    with pytest.raises(ValueError, match=message):
        _core.solve_qp(X, y, u, kernel=_core.Kernel("rbf", 1.0), options=_core.QPOptions(**kwargs))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": "cubic"}, "unknown kernel"),
        ({"gamma": 0.0}, "gamma must be a positive"),
        ({"gamma": -1.0}, "gamma must be a positive"),
    ],
)
def test_kernel_rejects_bad_parameters(kwargs, message):
    with pytest.raises(ValueError, match=message):
        _core.Kernel(**kwargs)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"tol": 0.0}, "tol must be"),
        ({"tol": float("nan")}, "tol must be"),
        ({"cache_size": 0.0}, "cache_size"),
        ({"max_iter": -2}, "max_iter"),
        ({"precision": "double"}, "precision must be one of"),
    ],
)
def test_solver_settings_reject_bad_values(kwargs, message):
    with pytest.raises(ValueError, match=message):
        _core.SolverSettings(**kwargs)


def test_solver_settings_pickle_compare_and_apply():
    s = _core.SolverSettings(tol=1e-5, max_iter=7, cache_size=3.0, shrinking=False)
    assert (s.tol, s.max_iter, s.cache_size, s.shrinking, s.precision) == (
        1e-5,
        7,
        3.0,
        False,
        "auto",
    )
    assert pickle.loads(pickle.dumps(s)) == s
    assert s != _core.SolverSettings(tol=1e-5, max_iter=7, cache_size=3.0)
    assert _core.SolverSettings() == _core.SolverSettings(tol=1e-3, max_iter=-1)
    # The settings reach the solver: the cap of 7 iterations stops it.
    X, y, u = _args()
    out = _core.solve_qp(X, y, u, kernel=_core.Kernel("rbf", 1.0), settings=s)
    assert out.n_iter == 7 and not out.converged
    with pytest.raises(TypeError):
        _core.solve_qp(X, y, u, settings={"tol": 1e-5})
    with pytest.raises(TypeError, match="constraint"):
        _core.QPOptions(constraint="equal")
    with pytest.raises(TypeError):
        _core.solve_qp(X, y, u, options={"constraint": _core.QPConstraint.BOX})


def test_kernel_pickles_and_compares():
    k = _core.Kernel("poly", 0.5, 1.0, 2)
    assert (k.name, k.gamma, k.coef0, k.degree) == ("poly", 0.5, 1.0, 2)
    assert pickle.loads(pickle.dumps(k)) == k
    assert k != _core.Kernel("poly", 0.5, 1.0, 3)


def test_precomputed_must_be_square():
    X, y, u = _args()
    with pytest.raises(ValueError, match="square"):
        _core.solve_qp(X @ X[:5].T, y, u, kernel=_core.Kernel("precomputed"))


def test_solve_qp_returns_a_feasible_solution():
    X, y, u = _args(60, 4, 3)
    out = _core.solve_qp(
        X, y, u, kernel=_core.Kernel("rbf", 0.5), settings=_core.SolverSettings(tol=1e-6)
    )
    a = out.alpha
    assert out.converged
    assert np.all(a >= 0) and np.all(a <= u)
    assert abs(a @ y) < 1e-10
    K = kernel_matrix_numpy(KernelSpec("rbf", gamma=0.5), X, X)
    Q = K * np.outer(y, y)
    assert out.objective == pytest.approx(0.5 * a @ Q @ a - a.sum(), rel=1e-6)


def test_solver_releases_the_gil():
    """While a solve runs in one thread, another thread executes Python."""
    X, y = make_problem_data(1000, 10, 1)
    u = np.full(y.shape, 10.0)
    assert runs_detached(
        lambda: _core.solve_qp(
            X,
            y,
            u,
            kernel=_core.Kernel("rbf", 0.05),
            settings=_core.SolverSettings(tol=1e-5, cache_size=1.0),
        )
    )


def test_gil_probe_detects_a_held_gil():
    """The probe of the test above answers False for a call that holds the
    GIL throughout (sorting a long list of Python ints is one C call)."""
    values = list(range(200_000, 0, -1))
    assert not runs_detached(lambda: sorted(values), max_calls=5)


def test_type_stub_matches_the_compiled_module():
    """_core.pyi describes what the extension really exports (mypy's stubtest)."""
    import subprocess
    import sys

    res = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "localsvm._core"],
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, res.stdout + res.stderr


def test_instruction_set_paths_agree():
    """The AVX-512, AVX2 and baseline builds of the hot loops solve alike."""
    import json
    import subprocess
    import sys

    code = (
        "import json, numpy as np\n"
        "from localsvm import _core\n"
        "r = np.random.default_rng(3)\n"
        "X = r.normal(size=(400, 7)); X[:, 3] = 0.0\n"
        "y = np.where(X[:, 0] + 0.3 * r.normal(size=400) > 0, 1.0, -1.0)\n"
        "out = _core.solve_qp(X, y, np.ones(400), kernel=_core.Kernel('rbf', 0.2),\n"
        "                    settings=_core.SolverSettings(tol=1e-6))\n"
        "print(json.dumps([out.objective, out.rho]))\n"
    )
    results = {}
    for level in ("baseline", "avx2", "avx512"):
        env = {**__import__("os").environ, "LOCALSVM_SIMD": level}
        res = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
        )
        results[level] = json.loads(res.stdout)
    for level in ("avx2", "avx512"):
        assert results[level][0] == pytest.approx(results["baseline"][0], rel=1e-6)
        assert results[level][1] == pytest.approx(results["baseline"][1], abs=1e-4)
