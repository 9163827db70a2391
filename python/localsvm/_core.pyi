"""Type stubs for the compiled core, ``localsvm._core`` (rust/src/python/).

Every function reserves its input-sized buffers before filling them: one the
machine cannot hold raises ``MemoryError`` naming the object, its size and
the parameter that avoids it, instead of aborting the interpreter.
"""

from collections.abc import Callable
from typing import Any, ClassVar, final

import numpy as np
import numpy.typing as npt

__all__ = [
    "CPathFold",
    "CPathResult",
    "CsrMatrix",
    "FLSAGram",
    "FLSAOptions",
    "FLSAResult",
    "FLSASelection",
    "IncrementalLearner",
    "Kernel",
    "KernelMatrix",
    "LearnOptions",
    "LearnResult",
    "LocalOptions",
    "LocalPrimal",
    "LocalResult",
    "QPConstraint",
    "QPOptions",
    "QPResult",
    "QPSolver",
    "SolverSettings",
    "__version__",
    "_raise_internal_panic",
    "c_path",
    "decision_values",
    "decision_values_ovo",
    "dual_gradient",
    "flsa_path",
    "flsa_staged",
    "flsa_staged_correct",
    "interrupt_all",
    "kernel_matrix",
    "simd_level",
    "solve_local",
    "solve_qp",
    "solve_qp_many",
]
__version__: str

@final
class CsrMatrix:
    """A sparse matrix in compressed sparse row form, checked and copied
    into the core's layout once (values float64, feature indices as 32-bit
    integers, row norms precomputed): what :func:`solve_qp`,
    :func:`decision_values` and :func:`decision_values_ovo` take instead of
    a dense array. Kernel values over it are computed in float64 from dot
    products over the stored entries.

    ``data``, ``indices`` and ``indptr`` are scipy's CSR arrays; ``shape`` is
    ``(n_rows, n_features)``. Raises ``ValueError`` when ``indptr`` has not
    ``n_rows + 1`` entries, does not start at 0, decreases or does not end at
    ``len(data)``; when an index lies outside ``[0, n_features)`` or a row's
    indices are not strictly increasing (unsorted or duplicate entries: call
    ``sum_duplicates()`` first); when a stored value is NaN or infinite; and
    when ``n_features`` exceeds ``2³²``.
    """

    def __new__(
        cls,
        data: npt.NDArray[np.float64],
        indices: npt.NDArray[np.int64],
        indptr: npt.NDArray[np.int64],
        shape: tuple[int, int],
    ) -> CsrMatrix: ...
    @property
    def shape(self) -> tuple[int, int]:
        """``(n_rows, n_features)``."""
    @property
    def nnz(self) -> int:
        """Number of stored values."""

@final
class Kernel:
    """A kernel function and its parameters, as every function of this
    module takes them (``kernel=``): ``'linear'`` ``⟨x, z⟩``, ``'poly'``
    ``(γ⟨x, z⟩ + coef0)^degree``, ``'rbf'`` ``exp(−γ‖x − z‖²)``,
    ``'sigmoid'`` ``tanh(γ⟨x, z⟩ + coef0)``, or ``'precomputed'`` (the
    inputs are kernel values). Checked once, here: an unknown name, a
    ``gamma`` that is not positive and finite or a ``coef0`` that is not
    finite (where they are used) and a negative ``degree`` for 'poly' raise
    ``ValueError``. A function given ``kernel=None`` uses
    ``Kernel('rbf')`` (:func:`solve_local`: ``Kernel('linear')``). Compares
    by value and pickles."""

    def __new__(
        cls,
        name: str = "rbf",
        gamma: float = 1.0,
        coef0: float = 0.0,
        degree: int = 3,
    ) -> Kernel: ...
    @property
    def name(self) -> str:
        """``'linear'``, ``'poly'``, ``'rbf'``, ``'sigmoid'`` or ``'precomputed'``."""
    @property
    def gamma(self) -> float:
        """``γ`` of 'poly', 'rbf' and 'sigmoid'."""
    @property
    def coef0(self) -> float:
        """The constant term of 'poly' and 'sigmoid'."""
    @property
    def degree(self) -> int:
        """The degree of 'poly'."""

@final
class SolverSettings:
    """The settings of SMO that :func:`solve_qp`, :func:`solve_local` and
    :meth:`IncrementalLearner.learn` share, checked once, here (a function
    given ``settings=None`` uses ``SolverSettings()``). Compares by value and
    pickles.

    ``tol`` (positive, finite): the stopping tolerance on the maximal KKT
    violation. ``max_iter``: ``-1`` for the functions' safety caps, else a
    non-negative cap on the iterations. ``cache_size``: the kernel cache
    in MB (positive, finite). ``shrinking``: LIBSVM's shrinking heuristic.
    ``precision``: the kernel path, ``'auto'``, ``'float32'`` or
    ``'float64'`` (see :func:`solve_qp`). Anything else raises
    ``ValueError`` naming the setting."""

    def __new__(
        cls,
        *,
        tol: float = 1e-3,
        max_iter: int = -1,
        cache_size: float = 200.0,
        shrinking: bool = True,
        precision: str = "auto",
    ) -> SolverSettings: ...
    @property
    def tol(self) -> float:
        """The stopping tolerance."""
    @property
    def max_iter(self) -> int:
        """The iteration cap, ``-1`` for the safety cap."""
    @property
    def cache_size(self) -> float:
        """The kernel cache in MB."""
    @property
    def shrinking(self) -> bool:
        """Whether SMO shrinks."""
    @property
    def precision(self) -> str:
        """``'auto'``, ``'float32'`` or ``'float64'``."""
    def __getnewargs_ex__(self) -> tuple[tuple[()], dict[str, Any]]: ...

@final
class QPResult:
    """What :func:`solve_qp` returns."""

    @property
    def alpha(self) -> npt.NDArray[np.float64]:
        """The dual variables, in the caller's order."""
    @property
    def rho(self) -> float:
        """The threshold: ``f(x) = Σ α_i y_i K(x_i, x) − ρ``."""
    @property
    def r(self) -> float:
        """The ν-duals' margin variable (``equality_kind='per_label'``; else 0)."""
    @property
    def objective(self) -> float:
        """``½αᵀQα + pᵀα`` over the optimised variables."""
    @property
    def n_iter(self) -> int:
        """Solver iterations."""
    @property
    def converged(self) -> bool:
        """False when the iteration cap stopped the solver."""
    @property
    def n_optimised(self) -> int:
        """How many variables were optimised."""
    @property
    def kernel_evaluations(self) -> int:
        """Kernel values computed (what the column cache did not hold)."""
    @property
    def precision(self) -> str:
        """The kernel path used: ``'float32'`` or ``'float64'``."""
    @property
    def threads(self) -> int:
        """Threads the solve ran on: 2 with a two-thread team, else 1."""
    @property
    def start_evaluations(self) -> int:
        """Kernel values of the blocked start gradient (0 without one)."""
    @property
    def start_seconds(self) -> float:
        """Seconds spent on the blocked start gradient (0 without one)."""
    @property
    def solver(self) -> str:
        """``'batched'`` when batched working-set rounds preceded SMO, else ``'smo'``."""
    @property
    def batched_rounds(self) -> int:
        """Batched working-set rounds run (0 for SMO alone)."""

@final
class QPConstraint:
    """The constraint of :func:`solve_qp` besides the boxes (see there)."""

    BOX: ClassVar[QPConstraint]
    ZERO: ClassVar[QPConstraint]
    START: ClassVar[QPConstraint]
    PER_LABEL: ClassVar[QPConstraint]
    def __int__(self) -> int: ...

@final
class QPSolver:
    """The solver of :func:`solve_qp`: SMO alone, or batched rounds first (see there)."""

    AUTO: ClassVar[QPSolver]
    SMO: ClassVar[QPSolver]
    BATCHED: ClassVar[QPSolver]
    def __int__(self) -> int: ...

@final
class QPOptions:
    """What :func:`solve_qp` solves besides ``x``, ``y`` and ``upper``, and
    how (see there for each): the linear term ``p``, the start ``alpha0``,
    the ``active`` variables, the ``rows`` of ``x``, the ``constraint``, the
    ``start`` gradient, the ``threads`` and the ``solver``. Checked here:
    ``threads`` below 1 raises ``ValueError``; a ``start`` that is not None,
    ``'blocked'`` or a pair of float64 arrays raises ``ValueError`` (another
    string) or ``TypeError``. :func:`dual_gradient` reads its ``p`` and
    ``rows``."""

    def __new__(
        cls,
        *,
        p: npt.NDArray[np.float64] | None = None,
        alpha0: npt.NDArray[np.float64] | None = None,
        active: npt.NDArray[np.int64] | None = None,
        rows: npt.NDArray[np.int64] | None = None,
        constraint: QPConstraint = ...,
        start: str | tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]] | None = None,
        threads: int = 1,
        solver: QPSolver = ...,
    ) -> QPOptions: ...
    @property
    def p(self) -> npt.NDArray[np.float64] | None:
        """The linear term (None: −1)."""
    @property
    def alpha0(self) -> npt.NDArray[np.float64] | None:
        """The feasible start (None: 0)."""
    @property
    def active(self) -> npt.NDArray[np.int64] | None:
        """The variables optimised (None: all)."""
    @property
    def rows(self) -> npt.NDArray[np.int64] | None:
        """The examples of ``x`` (None: all)."""
    @property
    def constraint(self) -> QPConstraint:
        """The constraint besides the boxes."""
    @property
    def start(self) -> str | tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]] | None:
        """How the start gradient is computed, or the gradient given."""
    @property
    def threads(self) -> int:
        """Threads the solve may use."""
    @property
    def solver(self) -> QPSolver:
        """SMO alone or batched rounds first."""

def solve_qp(
    x: npt.NDArray[np.float64] | CsrMatrix,
    y: npt.NDArray[np.float64],
    upper: npt.NDArray[np.float64],
    *,
    kernel: Kernel | None = None,
    settings: SolverSettings | None = None,
    options: QPOptions | None = None,
    progress: Callable[[int, float], object] | None = None,
) -> QPResult:
    """Solve ``min ½αᵀQα + pᵀα`` s.t. ``0 ≤ α ≤ upper`` and ``constraint``,
    with ``Q_ij = y_i y_j K(x_i, x_j)``.

    ``options`` (:class:`QPOptions`; None: ``QPOptions()``) holds ``p``,
    ``alpha0``, ``active``, ``rows``, ``constraint``, ``start``, ``threads``
    and ``solver``, the names below.

    ``constraint`` (:class:`QPConstraint`): ``BOX`` is the box alone; ``ZERO``
    is ``yᵀα = 0``; ``START`` keeps ``yᵀα`` at its value at ``alpha0`` (the
    one-class dual); ``PER_LABEL`` keeps ``Σ_{y=+1} α`` and ``Σ_{y=−1} α``
    each at its value at ``alpha0`` and solves by LIBSVM's ν-solver (pairs
    from one label set; ``QPResult.r`` is the margin variable). ``rows`` may
    repeat an index (ε-SVR's doubled variables).

    ``x`` holds features (a dense array, or a :class:`CsrMatrix`, which is
    always solved in float64 whatever ``settings.precision`` says), or the square
    kernel matrix for ``Kernel('precomputed')``. ``p`` defaults to −1. ``alpha0`` is a feasible
    start; ``active`` restricts optimisation to those indices (the others stay
    at ``alpha0``). ``rows`` picks the examples out of ``x`` (``x[rows]``, or
    ``x[rows][:, rows]`` when precomputed) without a copy on the Python side.
    ``settings`` (:class:`SolverSettings`) holds ``tol``, ``max_iter``,
    ``cache_size`` (MB), ``shrinking`` and ``precision``; its ``max_iter=-1``
    is the safety cap ``max(10⁷, 100·n)`` here. Runs without the GIL; bad input raises
    ``ValueError``, and so does a solution that is not finite.

    ``settings.precision`` picks the kernel path (rust/src/kernel/precision.rs).
    ``'float32'``: kernel values from the vectorised float32 loops, cached as
    float32, off by about ``ε₃₂·s`` (``ε₃₂ ≈ 1.2e-7``; ``s`` the kernel-value
    scale: ``S = max‖x‖²`` for linear, ``(γS + |coef0|)^degree`` for poly,
    ``max(1, 2γS)`` for RBF, ``max(1, γS + |coef0|)`` for sigmoid, ``max|K|``
    precomputed); data or parameters outside ``[2⁻¹⁰⁰, 2¹⁰⁰]`` raise
    ``ValueError``. ``'float64'``: computed and cached in float64 (RBF from
    ``‖x − z‖²`` directly). ``'auto'``: float32 when in range and
    ``tol ≥ 10·ε₃₂·s``, else float64. Kernel values float64 cannot hold
    (beyond ``2¹⁰⁰⁰``, or all below ``2⁻¹⁰⁰⁰``) raise ``ValueError`` naming
    the cause. ``QPResult.precision`` reports the path taken.

    ``progress``, when given, is called as ``progress(n_iter, gap)`` from the
    calling thread (holding the GIL) every 50 ms while the solve runs: the
    iterations done so far and the current maximal KKT violation (NaN
    before the first iteration). An exception it raises stops the solve and
    propagates. Not called for a solve that ends within the first 50 ms.

    ``threads`` (at least 1, else ``ValueError``): with 2 or more, a problem
    of at least 8192 variables over dense rows or a precomputed kernel is
    solved by a two-thread team, the calling worker and one helper started
    for the solve: each large kernel-column fill is cut into row ranges the
    two share, and so are the partner search and the gradient update while
    at least 8192 variables are active. Every kernel value and every step
    is computed as on one thread, so ``alpha``, ``rho`` and ``n_iter`` are
    identical; sparse rows and smaller problems always use one thread.

    ``solver`` (:class:`QPSolver`: ``AUTO``, ``SMO`` or ``BATCHED``):
    ``BATCHED`` starts the C-SVC dual (``constraint=ZERO``, from zero,
    no ``start``) with rounds on batched working sets (Wen, Shi, Li, He &
    Chen, "ThunderSVM: A Fast SVM Library on GPUs and CPUs", JMLR 19, 2018;
    rust/src/batched.rs): 1024 variables per round, their kernel columns in
    one blocked float32 pass over the rows, the subproblem solved on their
    block, until the KKT gap is below ``10·tol``; SMO then finishes to
    ``tol``. The block of columns (float32, at most eight working sets', as
    many as the budget holds; fewer variables per round when it holds less
    than 1024 columns) counts inside ``cache_size``. It needs dense rows, a
    kernel function and the float32 path (``ValueError`` otherwise).
    ``AUTO`` takes it for at least 100 000 variables where it can run and
    ``max_iter`` is -1; ``QPResult.solver`` reports what ran.

    The solver needs the gradient ``G = Qα₀ + p`` at its start and ``Ḡ =
    Σ_{α₀_j ≥ upper_j} upper_j Q_j``. By default (``start=None``) it fills
    them one kernel column per non-zero ``α₀_j`` through the cache.
    ``start='blocked'`` computes them as :func:`dual_gradient` does (blocked
    products over the support vectors of ``alpha0``, in parallel, in the
    solve's precision), for large warm starts; ``start=(G, Ḡ)`` hands over
    values the caller computed (one value per example of the problem,
    finite, only without ``active``). Either needs ``constraint=ZERO``;
    wrong lengths or non-finite values raise ``ValueError``, any other
    ``start`` ``TypeError``. ``QPResult.start_evaluations`` and
    ``start_seconds`` report the blocked computation's cost.
    """

def solve_qp_many(
    x: npt.NDArray[np.float64] | CsrMatrix,
    problems: list[tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], QPOptions | None]],
    *,
    kernel: Kernel | None = None,
    settings: SolverSettings | None = None,
) -> list[QPResult]:
    """:func:`solve_qp` for each of ``problems``, ``(y, upper, options)``
    over the same ``x``, ``kernel`` and ``settings`` (typically each with
    its own ``options.rows``: the binary problems of a one-vs-one fit), in
    one call: the results, in order, are ``solve_qp``'s, bit for bit, and
    the first problem that fails raises its error. The arrays are read
    while the GIL is held and the solves run one after the other without
    it: on the calling thread for a batch of at most 2048 rows in all (as
    ``solve_qp`` runs a solve of that size without ``progress``, whatever
    its ``threads``; the solve itself then takes the GIL every 50 ms to
    handle signals), else on a worker thread while the caller handles
    signals every 50 ms. Either way Ctrl-C stops the batch."""

def dual_gradient(
    x: npt.NDArray[np.float64] | CsrMatrix,
    y: npt.NDArray[np.float64],
    upper: npt.NDArray[np.float64],
    alpha: npt.NDArray[np.float64],
    *,
    kernel: Kernel | None = None,
    settings: SolverSettings | None = None,
    options: QPOptions | None = None,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], str]:
    """``(G, Ḡ, path)`` of the dual of :func:`solve_qp` at ``alpha``.

    ``G = Qα + p`` (``p`` defaults to −1) and ``Ḡ = Σ_{α_j ≥ upper_j}
    upper_j Q_j``, as two kernel expansions over the support vectors
    (``α_j > 0``) evaluated at every example with the blocked, parallel
    loops of :func:`decision_values` (each kernel value computed once for
    both), without the GIL and stopping on Ctrl-C. ``path`` is the kernel
    arithmetic, chosen from ``settings.precision`` and ``settings.tol`` as
    :func:`solve_qp` chooses it ('float32': sums in float32 blocks of 256;
    sparse rows and precomputed kernels always 'float64'), but 'float64'
    unless the kernel is 'rbf' and float32's epsilon times ``Σ alpha`` is
    at most a tenth of ``tol`` (float32 sums err by about that much). ``x``, and the
    ``p`` and ``rows`` of ``options``, as in :func:`solve_qp`; options with
    ``alpha0`` or ``active`` raise ``ValueError``.
    """

def kernel_matrix(
    a: npt.NDArray[np.float64],
    b: npt.NDArray[np.float64],
    *,
    kernel: Kernel | None = None,
) -> npt.NDArray[np.float64]:
    """``K[i, j] = k(a[i], b[j])``, computed in parallel without the GIL."""

def decision_values(
    x: npt.NDArray[np.float64] | CsrMatrix,
    sv: npt.NDArray[np.float64] | CsrMatrix,
    coef: npt.NDArray[np.float64],
    intercept: npt.NDArray[np.float64],
    *,
    kernel: Kernel | None = None,
    precision: str = "auto",
) -> npt.NDArray[np.float64]:
    """``coef @ K(sv, x).T + intercept`` for every row of ``x``: shape
    ``(n_samples, n_models)``, computed in parallel without the GIL.

    ``precision``: ``'float32'`` (vectorised float32 kernel values, float32
    block sums), ``'float64'``, or ``'auto'``: float32 when ``x``, ``sv``,
    the kernel parameters and ``coef`` are within float32's safe range (as
    :func:`solve_qp`, without a ``tol``), else float64. ``x`` and ``sv``
    are both dense arrays or both :class:`CsrMatrix` (else ``TypeError``);
    sparse ones are computed in float64 (each row of ``x`` scattered once,
    gathered against every support vector's stored entries), whatever
    ``precision`` says."""

def decision_values_ovo(
    x: npt.NDArray[np.float64] | CsrMatrix,
    sv: npt.NDArray[np.float64] | CsrMatrix,
    n_support: npt.NDArray[np.int64],
    pairs: npt.NDArray[np.int64],
    coef: npt.NDArray[np.float64],
    intercept: npt.NDArray[np.float64],
    *,
    kernel: Kernel | None = None,
    precision: str = "auto",
) -> npt.NDArray[np.float64]:
    """One-vs-one decision values, shape ``(n_samples, n_pairs)``.

    ``sv`` is grouped by class, ``n_support[c]`` rows of class ``c``; the
    pair ``(a, b)`` in row ``p`` of ``pairs`` uses the next ``n_support[a] +
    n_support[b]`` values of the 1-D ``coef`` (class ``a``'s, then class
    ``b``'s). Each row's kernel values against all of ``sv`` are computed
    once, then every pair's value from them; ``precision``, and dense or
    sparse ``x`` and ``sv``, as in :func:`decision_values`."""

@final
class LocalResult:
    """What :func:`solve_local` returns: one entry per query, in query order."""

    @property
    def decision(self) -> npt.NDArray[np.float64]:
        """The query's decision value."""
    @property
    def status(self) -> npt.NDArray[np.uint8]:
        """0 solved, 1 only +1 examples, 2 only −1, 3 none."""
    @property
    def n_iter(self) -> npt.NDArray[np.uint64]:
        """Solver iterations (0 when no SVM was solved)."""
    @property
    def n_active(self) -> npt.NDArray[np.uint64]:
        """Examples in the query's problem."""
    @property
    def n_support(self) -> npt.NDArray[np.uint64]:
        """Support vectors of the query's model."""
    @property
    def converged(self) -> npt.NDArray[np.bool_]:
        """False when the iteration cap stopped the query's solver."""
    @property
    def precision(self) -> str:
        """The kernel path of the local problems: ``'float32'`` or ``'float64'``."""
    @property
    def primal(self) -> npt.NDArray[np.float64] | None:
        """With the primal solver, each query's ``(w, b)``, shape ``(n_queries, d + 1)``
        (zeros where no SVM was solved); else None."""

@final
class LocalPrimal:
    """The primal solver of :func:`solve_local` (see there) and what it
    starts from: ``start`` (one ``(w, b)``), ``anchors`` (an ``(index,
    solutions)`` pair) and the ``queries``' features."""

    def __new__(
        cls,
        *,
        start: npt.NDArray[np.float64] | None = None,
        anchors: tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]] | None = None,
        queries: npt.NDArray[np.float64] | None = None,
    ) -> LocalPrimal: ...
    @property
    def start(self) -> npt.NDArray[np.float64] | None:
        """The ``(w, b)`` every query may start from."""
    @property
    def anchors(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]] | None:
        """Anchor examples and their local models."""
    @property
    def queries(self) -> npt.NDArray[np.float64] | None:
        """The queries' features."""

@final
class LocalOptions:
    """What :func:`solve_local` solves besides the data (see there): ``c``,
    the ``threshold`` on ``sigma``, ``warm_start``, the dual ``start`` and
    the ``primal`` solver (a :class:`LocalPrimal`, or None)."""

    def __new__(
        cls,
        c: float,
        *,
        threshold: float = 1e-6,
        warm_start: bool = True,
        start: npt.NDArray[np.float64] | None = None,
        primal: LocalPrimal | None = None,
    ) -> LocalOptions: ...
    @property
    def c(self) -> float:
        """The box scale."""
    @property
    def threshold(self) -> float:
        """The smallest ``sigma`` of an example in a query's problem."""
    @property
    def warm_start(self) -> bool:
        """Whether queries start from ``start``."""
    @property
    def start(self) -> npt.NDArray[np.float64] | None:
        """One ``α_i`` per training example."""
    @property
    def primal(self) -> LocalPrimal | None:
        """The primal solver's settings, None for the dual solver."""

@final
class CPathResult:
    """What :func:`c_path` returns."""

    @property
    def decision(self) -> npt.NDArray[np.float64]:
        """Held-out decision values, one row per ``C``."""
    @property
    def n_iter(self) -> npt.NDArray[np.uint64]:
        """Solver iterations per ``C``."""
    @property
    def converged(self) -> npt.NDArray[np.bool_]:
        """False where the iteration cap stopped the solve."""
    @property
    def precision(self) -> str:
        """The kernel path used: ``'float32'`` or ``'float64'``."""
    @property
    def stopped(self) -> int | None:
        """The first ``C`` the early stop left unsolved (its decision
        values and those after it NaN), or None."""
    @property
    def alpha(self) -> npt.NDArray[np.float64] | None:
        """With the fold's ``keep_alpha``: the multipliers, one row per
        ``C`` (NaN where the early stop left it unsolved); else None."""

@final
class CPathFold:
    """One fold of a cross-validation path for :func:`c_path`: the
    training rows ``rows`` of ``x`` (the dual's variables; a row may
    repeat), the held-out rows ``valid``, the linear term ``p`` (None: −1)
    and, with ``Kernel('precomputed')`` only, ``cross``, the kernel block
    of shape ``(len(rows), len(valid))``. With ``stop_margin``, the path
    stops once its held-out loss on ``target`` (labels ±1, 0 for a row
    outside the problem: the 0-1 error; or, with ``regression``, values:
    the squared error) has been more than ``stop_margin`` standard errors
    above the best it reached for two ``C`` values in a row. With
    ``keep_alpha`` the result also holds each ``C``'s multipliers. Checked
    and copied once; raises ``ValueError`` for negative indices or mismatched
    shapes."""

    def __new__(
        cls,
        rows: npt.NDArray[np.int64],
        valid: npt.NDArray[np.int64],
        *,
        p: npt.NDArray[np.float64] | None = None,
        cross: npt.NDArray[np.float64] | None = None,
        target: npt.NDArray[np.float64] | None = None,
        stop_margin: float | None = None,
        regression: bool = False,
        keep_alpha: bool = False,
    ) -> CPathFold: ...

@final
class KernelMatrix:
    """The kernel matrix of every row, computed once (in parallel, without
    the GIL; Ctrl-C stops it) from ``base``, the square matrix of squared
    distances ``‖x_i − x_j‖²`` for ``Kernel('rbf')`` or of inner products
    ``⟨x_i, x_j⟩`` for the other kernels, and kept in the core, where
    :func:`c_path` reads each fold's rows of it in place. Raises
    ``ValueError`` for a base that is not square or kernel values that are
    not finite, ``MemoryError`` when the matrix cannot be allocated.

    With ``tol`` (the tolerance of the solves that will read it), an RBF
    matrix is stored in float32 when float32 arithmetic serves that
    tolerance, as the solves would then round every value to float32 anyway;
    a solve that needs float64 refuses such a matrix with ``ValueError``.
    With ``norms`` (the squared norms ``‖x_i‖²``; RBF kernel only) ``base``
    holds the inner products, from which the squared distances are formed
    as the matrix is computed, as NumPy's ``max(0, −2·⟨x_i, x_j⟩ + ‖x_i‖² +
    ‖x_j‖²)`` (0 on the diagonal) would."""

    def __new__(
        cls,
        base: npt.NDArray[np.float64],
        kernel: Kernel,
        *,
        tol: float | None = None,
        norms: npt.NDArray[np.float64] | None = None,
    ) -> KernelMatrix: ...
    @property
    def n(self) -> int:
        """Rows (and columns)."""
    @property
    def dtype(self) -> str:
        """The storage type of the values: 'float32' or 'float64'."""
    @staticmethod
    def itemsize(kernel: Kernel, tol: float | None = None) -> int:
        """Bytes per value of the matrix of ``kernel`` for solves at ``tol``."""

def c_path(
    x: npt.NDArray[np.float64] | CsrMatrix | KernelMatrix,
    y: npt.NDArray[np.float64],
    weights: npt.NDArray[np.float64],
    cs: npt.NDArray[np.float64],
    fold: CPathFold,
    *,
    kernel: Kernel | None = None,
    settings: SolverSettings | None = None,
) -> CPathResult:
    """One C-SVC (or, with ``p``, ε-SVR) dual solved along the increasing
    ``cs`` on a single Hessian, and scored on held-out rows.

    The variables are the rows ``fold.rows`` of ``x`` (a row may repeat), with
    labels ``y`` (±1), linear term ``p`` (None: −1) and boxes
    ``0 ≤ α_t ≤ c · weights[t]`` (weights positive); ``yᵀα = 0``. Each ``c``
    starts from the previous solution and its gradient (the boxes only
    widen: DeCoste & Wagstaff, "Alpha seeding for support vector machines",
    KDD 2000). Returns, per ``c``, the decision values
    ``Σ_t α_t y_t K(x_t, x_v) − ρ`` at the rows ``fold.valid`` of ``x``,
    the iterations and the convergence flag. With ``Kernel('precomputed')``,
    ``x`` is the square kernel matrix and ``fold.cross`` the held-out kernel
    values, or ``x`` is a :class:`KernelMatrix` (read in place, no
    ``cross``). Runs without the GIL; Ctrl-C stops it.
    """

def solve_local(
    x: npt.NDArray[np.float64],
    y: npt.NDArray[np.float64],
    sigma: npt.NDArray[np.float64],
    cross: npt.NDArray[np.float64] | None,
    *,
    options: LocalOptions,
    kernel: Kernel | None = None,
    settings: SolverSettings | None = None,
) -> LocalResult:
    """One localized SVM per query, each solved on its own.

    ``options`` (:class:`LocalOptions`) holds ``c``, ``threshold``,
    ``warm_start``, ``start`` and ``primal`` (a :class:`LocalPrimal` with
    ``start_primal``, ``anchors`` and ``queries`` as its ``start``,
    ``anchors`` and ``queries``; None for the dual solver), the names below.

    The localized SVM of H. Cheng, P.-N. Tan and R. Jin, "Localized Support
    Vector Machine and Its Efficient Algorithm", SIAM SDM 2007, eq. 3.6.

    ``x`` holds the ``n`` training examples (or their square kernel for
    ``Kernel('precomputed')``), ``y`` their ±1 labels; ``sigma[s, i]`` is
    σ(x_s, x_i) ≥ 0 and ``cross[s, i]`` is K(x_i, x_s). Query ``s`` solves the
    C-SVC dual with boxes ``c·sigma[s]`` over the examples with
    ``sigma[s, i] ≥ threshold``; with ``warm_start`` and ``start`` (one
    ``α_i ≥ 0`` per training example) it starts from ``start`` clipped to its
    boxes, the larger class side's largest α lowered until ``Σ α_i y_i = 0``, else from
    0, so its result depends on that query alone. Consecutive queries with the
    same neighbourhood share one Hessian (its cached columns). Returns
    ``decision``, ``status`` (uint8: 0 solved, 1 only +1 examples, 2 only −1,
    3 none; the decision is then +1, −1 or 0), ``n_iter``, ``n_active``,
    ``n_support`` and ``converged``, one entry per query. Runs without the GIL.
    ``settings`` (:class:`SolverSettings`): its ``max_iter=-1`` caps each
    query's SMO at ``max(100000, 1000·k)`` iterations for a problem of ``k``
    examples (``converged`` is False where the cap stopped it); ``c·sigma``
    beyond float64's range raises ``ValueError``. ``settings.precision`` picks
    the kernel path of every local problem, decided once on the whole training
    kernel as in :func:`solve_qp`; ``settings.cache_size`` (MB) bounds each
    problem's kernel cache, and so the call's,
    since the problems are solved one after another. An input-sized
    allocation that fails raises ``MemoryError``.

    ``primal`` given (``Kernel('linear')`` only, ``x`` the features) solves each
    query in the primal by Newton's method on a Huber-smoothed hinge of width
    ``0.45·tol`` (``settings.tol``), in float64, and accepts its multipliers
    only when they pass SMO's stopping test for ``tol``; a query that does not within 300 Newton
    steps is finished by SMO from there, and ``n_iter`` counts both; both
    compute in float64 (``settings.precision`` is not used).
    With ``warm_start`` a query starts from ``start_primal`` (``(w, b)``,
    ``d + 1`` values), or, with ``anchors=(index, solutions)``, from the row
    of ``solutions`` (shape ``(len(index), d + 1)``, local models of the
    training examples ``index``) of the anchor with the largest ``sigma[s, anchor]`` (the
    first of equals) when that is positive. ``LocalResult.primal`` then holds
    each query's ``(w, b)``. With the primal solver and ``queries`` (the queries'
    features, shape ``(n_queries, d)``) each decision value is ``w·x_s + b``
    from the query's model, and ``cross`` may be None: the kernel rows are then
    not needed at all.
    """

def flsa_staged(
    phi: npt.NDArray[np.float64],
    r: npt.NDArray[np.float64],
    z: npt.NDArray[np.float64],
    stages: int,
) -> npt.NDArray[np.float64]:
    """The decision values of the models with ``0 .. stages - 1`` columns of
    an FLSA path at ``m`` points: ``phi`` (``stages - 1`` rows of ``m``) holds
    the kernel of the points with the path's support vectors in order, ``r``
    and ``z`` are the path's factor and coordinates. Entry ``[p, k]`` is
    ``Σ_{j≤k} z_j u_j(x_p)`` with ``u = R⁻ᵀ [1, φ]``: shape ``(m, stages)``.
    Runs without the GIL.
    """

def flsa_staged_correct(
    phi: npt.NDArray[np.float64],
    r: npt.NDArray[np.float64],
    z: npt.NDArray[np.float64],
    stages: int,
    target: npt.NDArray[np.float64],
) -> npt.NDArray[np.uint64]:
    """For every model of :func:`flsa_staged`, the number of points it
    classifies correctly: ``target`` is +1 (correct when the decision value is
    positive), -1 (correct when it is not) or anything else (never correct).
    The decision values are counted a tile at a time, never stored. Runs
    without the GIL.
    """

@final
class FLSAResult:
    """What :func:`flsa_path` returns: the models for every number of terms."""

    @property
    def selected(self) -> npt.NDArray[np.int64]:
        """The selected rows of ``x``, in order."""
    @property
    def r(self) -> npt.NDArray[np.float64]:
        """``R``, upper triangular, constant column first."""
    @property
    def z(self) -> npt.NDArray[np.float64]:
        """``z = Uᵀy``."""
    @property
    def residual_sq(self) -> npt.NDArray[np.float64]:
        """Training squared error with ``k`` terms, for every ``k``."""
    @property
    def n_pruned(self) -> int:
        """Candidates pruned as dependent on the selected ones."""
    @property
    def exhausted(self) -> bool:
        """True when the rank, not ``max_terms``, ended the pass."""

@final
class FLSASelection:
    """How :func:`flsa_path` picks the next column (see there)."""

    GREEDY: ClassVar[FLSASelection]
    IN_ORDER: ClassVar[FLSASelection]
    def __int__(self) -> int: ...

@final
class FLSAGram:
    """How :func:`flsa_path` holds the candidates' kernel columns (see there)."""

    PRECOMPUTED: ClassVar[FLSAGram]
    ON_THE_FLY: ClassVar[FLSAGram]
    def __int__(self) -> int: ...

@final
class FLSAOptions:
    """The settings of one :func:`flsa_path` pass (see there): at most
    ``max_terms`` columns (a negative count raises ``ValueError``), the
    pruning ``tol``, the ``selection`` and the ``gram``."""

    def __new__(
        cls,
        *,
        max_terms: int = 10,
        tol: float = 1e-6,
        selection: FLSASelection = ...,
        gram: FLSAGram = ...,
    ) -> FLSAOptions: ...
    @property
    def max_terms(self) -> int:
        """Columns to select at most."""
    @property
    def tol(self) -> float:
        """Relative residue norm at or under which a column is pruned."""
    @property
    def selection(self) -> FLSASelection:
        """How the next column is picked."""
    @property
    def gram(self) -> FLSAGram:
        """How the candidate columns are held."""

def flsa_path(
    x: npt.NDArray[np.float64],
    y: npt.NDArray[np.float64],
    candidates: npt.NDArray[np.int64],
    *,
    kernel: Kernel | None = None,
    options: FLSAOptions | None = None,
) -> FLSAResult:
    """One forward least-squares pass over the kernel columns ``K(x, x[c])``
    for ``c`` in ``candidates`` (rust/src/flsa.rs).

    ``options`` (:class:`FLSAOptions`; None: ``FLSAOptions()``):
    ``selection=FLSASelection.GREEDY`` takes the column with the largest
    error reduction (FLSA), ``IN_ORDER`` the candidates in the given order
    (RFLSA); columns dependent on the selected ones (relative residue norm ≤
    ``tol``) are pruned. ``gram=FLSAGram.PRECOMPUTED`` holds the ``n ×
    len(candidates)`` block of columns (8 bytes each), ``ON_THE_FLY``
    evaluates columns when needed.
    For ``Kernel('precomputed')``, ``x`` is the square training kernel.
    Returns the selected rows of ``x`` in order, the upper-triangular ``r``
    (constant column first) and ``z = Uᵀy``, so the model with ``k`` columns
    has coefficients ``solve(r[:k+1, :k+1], z[:k+1])`` (intercept first);
    ``residual_sq[k]`` is its training squared error; ``exhausted`` tells that
    the rank, not ``max_terms``, ended the pass. Runs without the GIL.
    """

@final
class LearnResult:
    """What :meth:`IncrementalLearner.learn` returns: one entry per example,
    in the order learnt, and the call's counts."""

    @property
    def updated(self) -> npt.NDArray[np.bool_]:
        """False when the example was classified with margin."""
    @property
    def neighbourhood(self) -> npt.NDArray[np.uint64]:
        """Final working-set size (0 without an update)."""
    @property
    def n_solves(self) -> npt.NDArray[np.uint64]:
        """Subproblems solved."""
    @property
    def reached(self) -> npt.NDArray[np.bool_]:
        """The stopping rule, not the neighbour cap, ended the growth."""
    @property
    def criterion(self) -> npt.NDArray[np.float64]:
        """``‖ξ‖² / t`` after the example."""
    @property
    def n_support(self) -> npt.NDArray[np.uint64]:
        """Support vectors after the example."""
    @property
    def n_stored(self) -> npt.NDArray[np.uint64]:
        """Examples kept after the example."""
    @property
    def time(self) -> npt.NDArray[np.float64]:
        """Seconds spent on the example."""
    @property
    def updates(self) -> int:
        """Examples that triggered an update."""
    @property
    def capped(self) -> int:
        """Updates that used every allowed neighbour before the stopping rule held."""
    @property
    def solves(self) -> int:
        """Subproblems solved in the call."""
    @property
    def unconverged(self) -> int:
        """Subproblems stopped by the iteration cap."""
    @property
    def seen(self) -> npt.NDArray[np.int64] | None:
        """The stream positions of the rows learnt (from
        :meth:`IncrementalLearner.learn_many`, which picks each learner's
        rows; None from :meth:`IncrementalLearner.learn`)."""
    @property
    def offsets(self) -> npt.NDArray[np.int64] | None:
        """From :meth:`IncrementalLearner.learn_many`: learner ``k``'s
        entries are ``offsets[k]`` to ``offsets[k + 1]`` of each
        per-example array (the counts are the call's totals); None from
        :meth:`IncrementalLearner.learn`."""

@final
class LearnOptions:
    """The settings of LISVM's updates that :meth:`IncrementalLearner.learn`
    takes besides the SMO settings (see there): the box ``c``, the stopping
    ``threshold``, the band ``epsilon``, the neighbourhood's cap
    ``max_neighbors`` and growth ``neighbor_step``, the ``max_support``
    budget, ``rebatch`` and the ``reprocess`` count."""

    def __new__(
        cls,
        c: float,
        threshold: float,
        *,
        epsilon: float = 0.5,
        max_neighbors: int = 50,
        neighbor_step: int = 1,
        max_support: int | None = None,
        rebatch: bool = False,
        reprocess: int = 1,
    ) -> LearnOptions: ...
    @property
    def c(self) -> float:
        """The box."""
    @property
    def threshold(self) -> float:
        """The stopping threshold of a neighbourhood's growth."""
    @property
    def epsilon(self) -> float:
        """The band's width: examples with ``y f ≤ 1 + epsilon`` are candidates."""
    @property
    def max_neighbors(self) -> int:
        """The largest working set of an update."""
    @property
    def neighbor_step(self) -> int:
        """Neighbours added between two solves."""
    @property
    def max_support(self) -> int | None:
        """The budget of kept support vectors (None: no budget)."""
    @property
    def rebatch(self) -> bool:
        """Solve the batch SVM over every kept example instead."""
    @property
    def reprocess(self) -> int:
        """Subproblems over the most violating examples after each update."""

@final
class IncrementalLearner:
    """One binary online SVM (labels ±1) learnt by LISVM, one example at a
    time: the kept examples, their multipliers ``alpha``, ``g_i = Σ_j α_j y_j
    K(x_j, x_i)``, the bias ``b`` and a cache of kernel rows. Pickles with its
    whole state (the cache excepted), so a copy continues identically."""

    def __new__(
        cls,
        n_features: int,
        kernel: Kernel,
    ) -> IncrementalLearner: ...
    def learn(
        self,
        x: npt.NDArray[np.float64],
        y: npt.NDArray[np.float64],
        cls: npt.NDArray[np.int64],
        seen: npt.NDArray[np.int64],
        *,
        options: LearnOptions,
        settings: SolverSettings | None = None,
    ) -> LearnResult:
        """Learn the rows of ``x`` in order (labels ``y`` ±1; ``cls`` and
        ``seen``, each example's class index and stream position, are kept
        with it), with the update's settings ``options``
        (:class:`LearnOptions`: ``c``, ``threshold``, ``epsilon``,
        ``max_neighbors``, ``neighbor_step``, ``max_support``, ``rebatch``
        and ``reprocess``). A well-classified example (``y f ≥ 1``) changes nothing;
        otherwise a working set grows from it and its nearest neighbours
        among the band (``y f ≤ 1 + epsilon``) and the support vectors, each
        set re-optimised by SMO with the other multipliers fixed, until
        ``‖ξ‖²/t < threshold`` or its relative variation between two
        candidates is under ``threshold``; then ``reprocess`` subproblems
        over the 10 kept examples that violate the KKT conditions most.
        ``rebatch`` solves the batch SVM
        over every kept example instead.

        ``settings`` (:class:`SolverSettings`): ``tol`` stops each
        subproblem's SMO; ``max_iter=-1`` caps a working set of ``w``
        examples at ``max(100000, 1000·w)`` iterations (``rebatch``: the
        batch solver's cap); ``cache_size`` (MB) bounds the kernel-row
        cache; ``shrinking`` applies to ``rebatch``'s batch solves (a working
        set is solved without it); ``precision`` is the arithmetic of the
        working sets' Hessians, float64 for ``'float64'`` and float32
        otherwise (``'float32'`` refuses rows outside its range), and of
        ``rebatch``'s batch solves, as in :func:`solve_qp` (the learner's
        kernel rows, ``g`` and decision values are float64 whatever it
        says). Runs without the GIL; bad input raises ``ValueError``."""
    @staticmethod
    def learn_many(
        learners: list[IncrementalLearner],
        x: npt.NDArray[np.float64],
        cls: npt.NDArray[np.int64],
        seen: npt.NDArray[np.int64],
        problems: list[tuple[int, int]],
        *,
        options: LearnOptions,
        settings: SolverSettings | None = None,
        threads: int = 1,
    ) -> LearnResult:
        """:meth:`learn` for several binary learners over one batch, in one
        call: learner ``k`` learns the rows of its problem ``problems[k]``
        in order, ``(a, b)`` the rows whose class index ``cls`` is ``a``
        (label +1) or ``b`` (-1), ``(a, -1)`` every row (+1 for class
        ``a``). The same models as one :meth:`learn` call per learner, and
        one result for all of them: its per-example arrays (``seen`` the
        stream positions) concatenated in learner order, ``offsets``
        saying where each learner's are. With ``threads > 1``
        the learners are shared between the calling thread and one helper
        (largest stores first). Not for ``rebatch`` (``ValueError``). Runs
        without the GIL; bad input raises ``ValueError``."""
    def decision_function(self, x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """``f(x) = Σ α_i y_i K(x_i, x) + b`` for every row of ``x``."""
    def support(self) -> npt.NDArray[np.int64]:
        """Storage positions of the support vectors."""
    @property
    def n_features(self) -> int:
        """Number of features."""
    @property
    def kernel(self) -> str:
        """The kernel's name."""
    @property
    def n(self) -> int:
        """Stored rows (kept examples and forgotten ones not yet compacted away)."""
    @property
    def X(self) -> npt.NDArray[np.float64]:
        """The stored rows, a copy."""
    @property
    def y(self) -> npt.NDArray[np.float64]:
        """Labels of the stored rows."""
    @property
    def cls(self) -> npt.NDArray[np.int64]:
        """Class index of each stored row."""
    @property
    def seen(self) -> npt.NDArray[np.int64]:
        """Stream position of each stored row."""
    @property
    def alpha(self) -> npt.NDArray[np.float64]:
        """Multipliers of the stored rows."""
    @property
    def g(self) -> npt.NDArray[np.float64]:
        """``g_i = Σ_j α_j y_j K(x_j, x_i)`` of the stored rows."""
    @property
    def alive(self) -> npt.NDArray[np.bool_]:
        """False for rows forgotten but not yet compacted away."""
    @property
    def b(self) -> float:
        """The bias."""
    @property
    def t(self) -> int:
        """Examples seen."""
    @property
    def criterion(self) -> float:
        """``‖ξ‖² / t`` after the last example."""
    @property
    def n_iter(self) -> int:
        """Solver iterations so far."""
    @property
    def n_support(self) -> int:
        """Support vectors."""
    @property
    def n_alive(self) -> int:
        """Kept examples."""
    def __getstate__(self) -> dict[str, Any]: ...
    def __setstate__(self, state: dict[str, Any]) -> None: ...
    def __reduce__(self) -> tuple[Any, ...]: ...

def interrupt_all() -> None:
    """Stop every call of this module running now, in any thread.

    Each running ``solve_qp``, ``solve_local``, ``flsa_path``,
    ``decision_values``, ``kernel_matrix`` and ``IncrementalLearner.learn``
    raises ``KeyboardInterrupt`` soon after (they poll a shared epoch
    counter); calls started afterwards are not affected. Ctrl-C stops a
    call in the main thread without it; this is for calls in worker
    threads, which never see the signal.
    """

def simd_level() -> str:
    """The instruction set the hot loops run with: ``"avx512"``, ``"avx2"`` or
    ``"baseline"`` (``LOCALSVM_SIMD`` can force a lower one)."""

def _raise_internal_panic() -> None:
    """Test-only, not part of the API: panics inside the core's GIL-free
    runner, so a test can check that a panic reaches Python as
    ``RuntimeError("internal error in the localsvm Rust core …")`` and that
    the interpreter stays usable afterwards."""
