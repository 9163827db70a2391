"""The solver-backend interface: what a backend accepts, returns and declares.

Every estimator states its training problem as a :class:`QPProblem`, the
kernel dual

    min_α ½ αᵀQα + pᵀα,   Q_ij = y_i y_j K(x_i, x_j),
    0 ≤ α_i ≤ U_i   (per-sample upper bounds),
    yᵀα = 0         (unless ``equality=False``: boxes only),

optionally warm-started from ``alpha0`` and optionally restricted to the
variables in ``active`` (the others held at ``alpha0``). A backend is a small
object with a ``name``, a ``priority`` (used by ``backend="auto"``),
:class:`Capabilities`, and ``solve(problem) -> QPSolution``. Backends register
themselves through the ``localsvm_register_backends`` hook.

A backend owns the *solving* and nothing else. Kernel evaluation (decision
values at prediction, kernel matrices, start gradients handed over as
values) belongs to the package's compute layer, :mod:`localsvm.kernels`,
which every estimator uses whatever backend trained it: a model predicts the
same whichever backend solved for it, and a new backend need not implement
any kernel. What a backend offers beyond ``solve`` is declared in
:class:`Capabilities` (typed flags), and estimators ask for it there, never by
a backend's name (``tests/test_architecture.py`` checks both rules).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from numbers import Integral
from typing import Any

import numpy as np
import scipy.sparse as sp

from .._docstrings import fill
from ..kernels import KERNELS, KernelSpec, decision_values

#: Relative tolerance for a warm start's box membership and ``yᵀα₀ = 0``.
FEASIBILITY_TOL = 1e-9

#: The values of :attr:`QPProblem.equality_kind`.
EQUALITY_KINDS = frozenset({"zero", "start", "per_label"})


class UnsupportedProblemError(ValueError):
    """A backend was asked for something it declared it cannot do."""


@dataclass
class QPProblem:
    """A kernel dual with per-sample boxes.

    The problem is ``min ½αᵀQα + pᵀα`` with ``Q_ij = y_i y_j K(x_i, x_j)``,
    ``0 ≤ α_i ≤ upper_i`` and, unless ``equality=False``, ``yᵀα = 0``. The
    parameters are kept as attributes of the same names.

    Parameters
    ----------
    X : ndarray of shape (n_rows, n_features) or (n_rows, n_rows)
        Features, or the square training kernel matrix when
        ``kernel.name == 'precomputed'``.
    y : ndarray of shape (n,)
        Labels, ±1.
    upper : ndarray of shape (n,)
        Per-sample upper bounds ``U_i ≥ 0``.
    kernel : KernelSpec, default=KernelSpec()
        The kernel (RBF with γ = 1 by default).
    p : ndarray of shape (n,) or None, default=None
        Linear term; None means −1 everywhere (the C-SVC dual).
    alpha0 : ndarray of shape (n,) or None, default=None
        A feasible start point; None starts from 0.
    active : ndarray of int or None, default=None
        Indices of the variables to optimise; the others stay at ``alpha0``.
        None optimises all.
    equality : bool, default=True
        Whether the constraint ``yᵀα = 0`` applies; False leaves only the
        boxes.
    tol : float, default=1e-3
        Stopping tolerance on the KKT violation.
    max_iter : int, default=-1
        Iteration cap; -1 means no limit beyond the solver's own safety cap.
    cache_size : float, default=200.0
        Kernel cache, in megabytes.
    shrinking : bool, default=True
        Whether the solver may use the shrinking heuristic.
    rows : ndarray of int or None, default=None
        When given, picks the problem's examples out of ``X`` (``X[rows]``,
        or ``X[rows][:, rows]`` for a precomputed kernel) without the caller
        copying them: the one-vs-one subproblems of a multiclass fit share
        one ``X``.
    precision : {'auto', 'float32', 'float64'}, default='auto'
        The arithmetic of the kernel values, for backends that offer a
        choice (the Rust one): 'float32' computes and caches them in
        float32 (fast; off by about 1.2e-7 times the kernel-value scale),
        'float64' in float64; 'auto' takes float32 only when the data and
        the kernel parameters are within its range and ``tol`` is at least
        ``10 · ε₃₂ · scale`` (see :func:`localsvm._core.solve_qp`). Backends
        that compute in NumPy always use float64.
    progress : callable or None, default=None
        ``progress(n_iter, gap)``, called every 50 ms during a long solve
        with the iterations so far and the current maximal KKT violation,
        by backends that can (the Rust one); others ignore it. An exception
        it raises stops the solve.
    n_threads : int, default=1
        Threads this one solve may use, at least 1. The Rust backend, given 2
        or more, solves a problem of at least 8192 variables over dense rows
        or a precomputed kernel with two threads (the caller and one helper
        started for the solve) that share the large kernel-column fills and
        the scans over large active sets; the solution and the iterations
        are identical to one thread's. Other backends ignore it.
    start_gradient : {None, 'blocked'} or tuple of two ndarrays, default=None
        How a solver that keeps the gradient ``G = Qα₀ + p`` (and ``Ḡ =
        Σ_{α₀_j ≥ U_j} U_j Q_j``, the part from variables at their upper
        bound) obtains it at ``alpha0``: None lets the backend do as it
        does (the Rust one fills one kernel column per non-zero ``α₀_j``);
        'blocked' asks for blocked products over the support vectors of
        ``alpha0`` (in parallel, without passing through the kernel cache:
        the cheaper way for a large warm start); a tuple ``(G, Ḡ)`` hands
        over values the caller computed (one per variable, only without
        ``active``). Only with ``equality=True``. A speed hint: backends
        without such a gradient ignore it.
    equality_kind : {'zero', 'start', 'per_label'}, default='zero'
        Which equality the solution keeps (with ``equality=True``): 'zero'
        is ``yᵀα = 0`` (C-SVC, ε-SVR); 'start' is ``yᵀα = yᵀα₀``, the
        value at ``alpha0`` (the one-class SVM, whose ``Σ α = ν·n``; Schölkopf
        et al., "Estimating the support of a high-dimensional distribution",
        Neural Computation 13, 2001); 'per_label' holds ``Σ_{y=+1} α`` and
        ``Σ_{y=−1} α`` each at its value at ``alpha0`` (the ν-duals of
        Schölkopf, Smola, Williamson & Bartlett, "New support vector
        algorithms", Neural Computation 12, 2000, solved as in LIBSVM: Chang
        & Lin, ACM TIST 2011, §4.2). The last two need ``alpha0`` and a
        backend whose capabilities include ``equality_start`` or
        ``equality_per_label``.
    solver : {'auto', 'smo', 'batched'}, default='auto'
        For the Rust backend's C-SVC dual solved from zero: batched
        working-set rounds before SMO (see :func:`localsvm._core.solve_qp`)
        or SMO alone; 'auto' chooses. Other backends ignore it.

    Examples
    --------
    >>> import numpy as np
    >>> from localsvm import QPProblem, get_backend
    >>> problem = QPProblem(
    ...     X=np.array([[0.0], [1.0], [3.0]]), y=np.array([1.0, -1.0, -1.0]), upper=np.ones(3)
    ... )
    >>> problem.n, problem.features_used()
    (3, set())
    >>> solution = get_backend("rust").solve(problem)
    >>> solution.converged, np.round(solution.alpha, 2)
    (True, array([1.  , 0.69, 0.31]))
    """

    X: np.ndarray
    y: np.ndarray
    upper: np.ndarray
    kernel: KernelSpec = field(default_factory=KernelSpec)
    p: np.ndarray | None = None
    alpha0: np.ndarray | None = None
    active: np.ndarray | None = None
    equality: bool = True
    tol: float = 1e-3
    max_iter: int = -1
    cache_size: float = 200.0
    shrinking: bool = True
    rows: np.ndarray | None = None
    precision: str = "auto"
    progress: Callable[[int, float], Any] | None = None
    n_threads: int = 1
    start_gradient: str | tuple[np.ndarray, np.ndarray] | None = None
    equality_kind: str = "zero"
    solver: str = "auto"

    def examples(self) -> np.ndarray:
        """Return the problem's own examples.

        Returns
        -------
        ndarray
            ``X[rows]`` (``X[rows][:, rows]`` for a precomputed kernel), a
            copy when ``rows`` is set; ``X`` itself otherwise.
        """
        if self.rows is None:
            return self.X
        r = np.asarray(self.rows, dtype=np.intp)
        return self.X[np.ix_(r, r)] if self.kernel.precomputed else self.X[r]

    @property
    def n(self) -> int:
        """Number of variables."""
        return int(self.y.shape[0])

    def validate(self) -> None:
        """Check shapes and values; raises ``ValueError`` naming the field."""
        n = self.n
        if self.y.ndim != 1:
            raise ValueError(f"y must be one-dimensional, got shape {self.y.shape}")
        if self.X.ndim != 2:
            raise ValueError(f"X must be two-dimensional, got shape {self.X.shape}")
        if self.rows is None:
            if self.X.shape[0] != n:
                raise ValueError(f"X must have shape ({n}, n_features), got {self.X.shape}")
        else:
            r = np.asarray(self.rows)
            if r.shape != (n,):
                raise ValueError(f"rows must list {n} row indices (one per label), got {r.shape}")
            if r.size and (r.min() < 0 or r.max() >= self.X.shape[0]):
                raise ValueError(f"rows must index the {self.X.shape[0]} rows of X")
        if self.kernel.precomputed and self.X.shape[1] != self.X.shape[0]:
            raise ValueError(f"a precomputed kernel must be square, got shape {self.X.shape}")
        if not np.all(np.isin(self.y, (-1.0, 1.0))):
            raise ValueError("y must contain only -1 and +1")
        for name in ("upper", "p", "alpha0"):
            v = getattr(self, name)
            if v is not None and v.shape != (n,):
                raise ValueError(f"{name} must have shape ({n},), got {v.shape}")
        if not np.all(np.isfinite(self.upper)) or np.any(self.upper < 0):
            raise ValueError("upper bounds must be finite and non-negative")
        if not (np.isfinite(self.tol) and self.tol > 0):
            raise ValueError(f"tol must be a positive number, got {self.tol!r}")
        if isinstance(self.n_threads, bool) or not isinstance(self.n_threads, Integral):
            raise TypeError(f"n_threads must be an int, got {type(self.n_threads).__name__}")
        if self.n_threads < 1:
            raise ValueError(f"n_threads must be at least 1, got {self.n_threads}")
        if self.max_iter < -1:
            raise ValueError(f"max_iter must be -1 or non-negative, got {self.max_iter}")
        if self.active is not None:
            a = np.asarray(self.active)
            if a.ndim != 1 or (a.size and (a.min() < 0 or a.max() >= n)):
                raise ValueError(f"active must list indices in [0, {n})")
            if np.unique(a).size != a.size:
                raise ValueError("active must not repeat an index")
        if self.equality_kind not in EQUALITY_KINDS:
            raise ValueError(
                f"equality_kind must be one of {sorted(EQUALITY_KINDS)}, got {self.equality_kind!r}"
            )
        if self.equality and self.equality_kind != "zero" and self.alpha0 is None:
            raise ValueError(
                f"equality_kind={self.equality_kind!r} keeps the sums of alpha0: give alpha0"
            )
        if self.alpha0 is not None:
            self._check_start()
        self._check_start_gradient()

    def _check_start_gradient(self) -> None:
        """``start_gradient`` is None, 'blocked' or ``(G, Ḡ)`` of finite
        values, one per variable, with the equality constraint."""
        g = self.start_gradient
        if g is None:
            return
        if not self.equality or self.equality_kind != "zero":
            raise ValueError(
                "start_gradient applies to problems with yᵀα = 0 only (equality_kind='zero')"
            )
        if isinstance(g, str):
            if g != "blocked":
                raise ValueError(
                    f"start_gradient must be None, 'blocked' or (G, G_upper), got {g!r}"
                )
            return
        if not (isinstance(g, tuple) and len(g) == 2):
            raise ValueError("start_gradient must be None, 'blocked' or a tuple (G, G_upper)")
        if self.active is not None:
            raise ValueError("a given start_gradient needs every variable optimised (active=None)")
        for name, v in zip(("G", "G_upper"), g, strict=True):
            v = np.asarray(v)
            if v.shape != (self.n,):
                raise ValueError(
                    f"start_gradient's {name} must have shape ({self.n},), got {v.shape}"
                )
            if not np.all(np.isfinite(v)):
                raise ValueError(f"start_gradient's {name} contains NaN or infinity")

    def _check_start(self) -> None:
        """``alpha0`` must lie in its box and, with the equality constraint,
        satisfy ``yᵀα₀ = 0`` (both to a relative :data:`FEASIBILITY_TOL`, as the
        Rust core checks)."""
        a = np.asarray(self.alpha0, dtype=np.float64)
        upper = np.asarray(self.upper, dtype=np.float64)
        slack = FEASIBILITY_TOL * np.maximum(upper, 1.0)
        bad = np.flatnonzero(~np.isfinite(a) | (a < -slack) | (a > upper + slack))
        if bad.size:
            i = int(bad[0])
            raise ValueError(f"alpha0[{i}] = {a[i]} lies outside its box [0, {upper[i]}]")
        if self.equality and self.equality_kind == "zero":
            ya = float(np.asarray(self.y, dtype=np.float64) @ a)
            if abs(ya) > FEASIBILITY_TOL * max(float(np.abs(a).sum()), 1.0):
                raise ValueError(
                    f"alpha0 violates the equality constraint: y·alpha0 = {ya:e}, expected 0"
                )

    @property
    def movable(self) -> np.ndarray:
        """Indices of the variables the solver may move.

        Those in ``active`` (all when ``None``) whose box is wider than the
        single point 0.
        """
        mask = np.asarray(self.upper) > 0
        if self.active is not None:
            in_active = np.zeros(self.n, dtype=bool)
            in_active[np.asarray(self.active, dtype=np.intp)] = True
            mask &= in_active
        return np.flatnonzero(mask)

    def features_used(self) -> set[str]:
        """List the optional backend features this problem needs.

        A start point alone needs none: a backend that cannot start from it
        reaches the same optimum from elsewhere.

        Returns
        -------
        set of str
            Names of :class:`Capabilities` flags: ``'subset'`` when
            ``active`` is set, ``'box_only'`` when ``equality`` is False,
            ``'equality_start'`` or ``'equality_per_label'`` for those
            ``equality_kind`` values.
        """
        used = set()
        if self.active is not None:
            used.add("subset")
        if not self.equality:
            used.add("box_only")
        elif self.equality_kind != "zero":
            used.add(f"equality_{self.equality_kind}")
        return used


@dataclass
class QPSolution:
    """What a backend returns.

    The decision function is ``f(x) = Σ_i alpha_i y_i K(x_i, x) − rho``. The
    parameters are kept as attributes of the same names.

    Parameters
    ----------
    alpha : ndarray of shape (n,)
        The dual solution.
    rho : float
        Minus the bias of the decision function.
    objective : float
        The dual objective ½αᵀQα + pᵀα (over the optimised variables when
        ``active`` was given).
    n_iter : int
        Iterations the solver ran.
    converged : bool
        False when the solver stopped before reaching its accuracy (the
        ``max_iter`` cap, or a numerical failure).
    backend : str
        Name of the backend that solved the problem.
    message : str, default=''
        Why the solver did not converge; empty when it did.
    precision : {'float32', 'float64'}, default='float64'
        The arithmetic the kernel values were computed and cached in.
    kernel_evaluations : int or None, default=None
        Kernel values the solve computed (what its kernel cache did not
        hold); None when the backend does not count them.
    start_evaluations : int, default=0
        Kernel values of a blocked start gradient
        (``QPProblem.start_gradient='blocked'``), not counted in
        ``kernel_evaluations``; 0 without one.
    start_seconds : float, default=0.0
        Seconds spent on that blocked start gradient.
    r : float, default=0.0
        The ν-duals' margin variable (``equality_kind='per_label'``: half
        the sum of the two label sets' thresholds); 0 otherwise.
    solver : {'smo', 'batched'}, default='smo'
        'batched' when batched working-set rounds preceded SMO
        (``QPProblem.solver``), else 'smo'.

    Examples
    --------
    >>> import numpy as np
    >>> from localsvm import QPProblem, get_backend
    >>> problem = QPProblem(X=np.eye(2), y=np.array([1.0, -1.0]), upper=np.ones(2))
    >>> solution = get_backend("rust").solve(problem)
    >>> solution.backend, solution.converged, solution.message
    ('rust', True, '')
    """

    alpha: np.ndarray
    rho: float
    objective: float
    n_iter: int
    converged: bool
    backend: str
    message: str = ""
    precision: str = "float64"
    kernel_evaluations: int | None = None
    start_evaluations: int = 0
    start_seconds: float = 0.0
    r: float = 0.0
    solver: str = "smo"


@dataclass(frozen=True)
class Capabilities:
    """What a backend can do.

    :meth:`SolverBackend.check` compares a problem's needs with these flags.
    The parameters are kept as attributes of the same names.

    Parameters
    ----------
    kernels : frozenset of str, default=all kernels
        Kernel names the backend accepts.
    warm_start : bool, default=False
        Starts from ``alpha0``. A speed hint only: every backend must hold
        the variables outside ``active`` at ``alpha0``, and one without
        ``warm_start`` simply starts the others elsewhere.
    subset : bool, default=False
        Honours ``active``.
    box_only : bool, default=False
        Solves ``equality=False``.
    max_samples : int or None, default=None
        The most variables it will optimise at once (``QPProblem.movable``);
        None means no limit.
    thread_safe : bool, default=True
        Several problems may be solved at once from threads.
    local_batch : bool, default=False
        Solves a whole :class:`LocalBatch` natively in
        :meth:`SolverBackend.solve_local`. A speed hint: every backend can
        solve one, the generic fallback poses one :class:`QPProblem` per
        query.
    online : bool, default=False
        Provides the online learner (LISVM) of
        :class:`~localsvm.IncrementalSVC` through
        :meth:`SolverBackend.online_learner`. Required: the update is written
        once (the Rust core's), and the estimator refuses a backend without
        it, naming those that have it.
    sparse : bool, default=False
        Solves problems whose ``X`` is a scipy CSR matrix (canonical: sorted
        indices, no duplicates) without densifying it.
    local_primal : bool, default=False
        Solves the linear-kernel problems of a :class:`LocalBatch` with
        ``solver='primal'`` in the primal (``d + 1`` unknowns); a backend
        without it solves their duals, which have the same solutions to
        ``tol``.
    equality_start : bool, default=False
        Solves ``equality_kind='start'`` (``yᵀα`` kept at its start value:
        the one-class SVM).
    equality_per_label : bool, default=False
        Solves ``equality_kind='per_label'`` (the ν-duals' two constraints)
        and reports their ``r``.

    Examples
    --------
    >>> from localsvm import Capabilities, get_backend
    >>> caps = get_backend("scipy").capabilities
    >>> caps.max_samples, caps.thread_safe
    (1000, False)
    >>> Capabilities(kernels=frozenset({"linear"})).subset
    False
    """

    kernels: frozenset[str] = frozenset(KERNELS)
    warm_start: bool = False
    subset: bool = False
    box_only: bool = False
    max_samples: int | None = None
    thread_safe: bool = True
    local_batch: bool = False
    online: bool = False
    sparse: bool = False
    local_primal: bool = False
    equality_start: bool = False
    equality_per_label: bool = False


#: Parameter and return text shared by the interface's methods and the
#: built-in backends that implement them (filled in with ``_docstrings.fill``).
INTERFACE_DOC = {
    "local_io": """\
Parameters
----------
batch : LocalBatch
    The local problems of a batch of queries over one training set.

Returns
-------
LocalBatchResult
    Each query's decision value, status and solver statistics.""",
    "c_path_io": """\
Parameters
----------
path : CPath
    The dual, its ``C`` values and the held-out rows.

Returns
-------
CPathResult
    The held-out decision values and solver statistics per ``C``.""",
    "learner_params": """\
Parameters
----------
kernel : KernelSpec
    The kernel, with ``gamma`` resolved; not 'precomputed'.
n_features : int
    Number of features of the stream.""",
    "settings_params": """\
Parameters
----------
tol : float
    SMO's stopping tolerance in each subproblem.
max_iter : int
    Iteration cap per subproblem; -1 for the learner's own cap.
cache_size : float
    Megabytes of cached kernel rows for the learner.""",
}


@fill(**INTERFACE_DOC)
class SolverBackend(ABC):
    """Base class for solver backends.

    Subclassing it is optional: any object with ``name``, ``priority``,
    ``capabilities``, ``check`` and ``solve`` works. A plugin makes a backend
    available by registering it from a ``localsvm_register_backends`` hook
    implementation (:data:`localsvm.hookimpl`).

    Examples
    --------
    >>> import numpy as np
    >>> from localsvm import QPProblem, SolverBackend, get_backend
    >>> class Delegating(SolverBackend):
    ...     name = "delegating"
    ...     def solve(self, problem):
    ...         return get_backend("rust").solve(problem)
    >>> backend = Delegating()
    >>> backend
    <Delegating 'delegating'>
    >>> problem = QPProblem(X=np.eye(2), y=np.array([1.0, -1.0]), upper=np.ones(2))
    >>> backend.check(problem) is None, backend.solve(problem).converged
    (True, True)
    """

    #: Stable name users pass as ``backend=...``.
    name: str = ""
    #: ``backend="auto"`` picks the highest-priority backend that accepts the
    #: problem.
    priority: int = 0
    capabilities: Capabilities = Capabilities()

    def check(self, problem: QPProblem) -> str | None:
        """Tell whether this backend can solve ``problem``.

        Parameters
        ----------
        problem : QPProblem
            The problem to solve.

        Returns
        -------
        str or None
            None if the backend accepts the problem, else the reason why not,
            as a sentence.
        """
        return check_capabilities(self.capabilities, problem)

    @abstractmethod
    def solve(self, problem: QPProblem) -> QPSolution:
        """Solve ``problem``.

        Parameters
        ----------
        problem : QPProblem
            The problem; the backend has accepted it in :meth:`check`.

        Returns
        -------
        QPSolution
            The solution, with ``converged`` False if the solver stopped
            early.

        Raises
        ------
        ValueError
            For input the backend rejects.
        """

    def solve_many(self, problems: Sequence[QPProblem]) -> list[QPSolution]:
        """Solve several independent problems, in order.

        The binary problems of a multiclass fit come here in batches
        (:func:`solve_many_checked`). The default solves each with
        :meth:`solve`; a backend with a cheaper way to run many small
        solves (the Rust one: one call into its core for problems over the
        same ``X``) overrides it.

        Parameters
        ----------
        problems : sequence of QPProblem
            The problems; the backend has accepted each in :meth:`check`.

        Returns
        -------
        list of QPSolution
            One solution per problem, in the problems' order.
        """
        return [self.solve(problem) for problem in problems]

    def solve_local(self, batch: LocalBatch) -> LocalBatchResult:
        """Solve every query's localized dual of ``batch``.

        The default poses one :class:`QPProblem` per query
        (:func:`solve_local_generic`); backends with
        ``capabilities.local_batch`` solve the batch natively.

        {local_io}
        """
        return solve_local_generic(self, batch)

    def solve_c_path(self, path: CPath) -> CPathResult:
        """Solve ``path``'s dual at each of its increasing ``C`` values.

        The default solves one :class:`QPProblem` per value with
        :meth:`solve`, each started from the previous solution
        (:func:`solve_c_path_generic`); a backend may instead keep its
        kernel values and gradient from one value to the next.

        {c_path_io}
        """
        return solve_c_path_generic(self, path)

    def online_learner(self, kernel: KernelSpec, n_features: int):
        """Create the online learner for one binary LISVM problem.

        Backends with ``capabilities.online`` return an object with the
        interface of ``localsvm._core.IncrementalLearner`` (the one
        implementation of the update; a backend may return it, or wrap it).
        The default has none and raises.

        {learner_params}

        Returns
        -------
        object
            The learner.

        Raises
        ------
        UnsupportedProblemError
            The backend has no online learner.
        """
        raise self._no_online_learner()

    def online_settings(self, *, tol: float, max_iter: int, cache_size: float):
        """The solver settings the online learner's ``learn`` takes.

        Backends with ``capabilities.online`` return the object their
        learner's ``learn`` accepts as ``settings`` (for the Rust core's
        learner, a ``localsvm._core.SolverSettings``). The default has none
        and raises.

        {settings_params}

        Returns
        -------
        object
            The settings.

        Raises
        ------
        UnsupportedProblemError
            The backend has no online learner.
        """
        raise self._no_online_learner()

    def online_options(
        self,
        *,
        C: float,
        threshold: float,
        epsilon: float,
        max_neighbors: int,
        neighbor_step: int,
        reprocess: int,
        max_support: int | None,
        rebatch: bool,
    ):
        """The update options the online learner's ``learn`` takes.

        Backends with ``capabilities.online`` return the object their
        learner's ``learn`` accepts as ``options`` (for the Rust core's
        learner, a ``localsvm._core.LearnOptions``). The default has none
        and raises.

        Parameters
        ----------
        C : float
            The upper bound of every multiplier.
        threshold : float
            The η that stops the growth of a working set.
        epsilon : float
            Width of the band of examples kept and reconsidered.
        max_neighbors : int
            Most neighbours added to a working set.
        neighbor_step : int
            Neighbours added at each growth step.
        reprocess : int
            Subproblems over the strongest KKT violators after each update.
        max_support : int or None
            Support-vector budget per binary learner; None for none.
        rebatch : bool
            Retrain on all the examples seen at each new one
            (``strategy='rebatch'``) instead of the local update.

        Returns
        -------
        object
            The options.

        Raises
        ------
        UnsupportedProblemError
            The backend has no online learner.
        """
        raise self._no_online_learner()

    def _no_online_learner(self) -> UnsupportedProblemError:
        return UnsupportedProblemError(
            f"backend {self.name!r} has no online learner (capabilities.online is False)"
        )

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


def check_capabilities(caps: Capabilities, problem: QPProblem) -> str | None:
    """The first capability ``problem`` needs that ``caps`` lacks, as a sentence."""
    if problem.kernel.name not in caps.kernels:
        return f"it does not support the {problem.kernel.name!r} kernel"
    if sp.issparse(problem.X) and not getattr(caps, "sparse", False):
        return "it does not support sparse X"
    if caps.max_samples is not None:
        m = problem.movable.size
        if m > caps.max_samples:
            return f"it accepts at most {caps.max_samples} samples and this problem has {m}"
    missing = {
        "subset": caps.subset,
        "box_only": caps.box_only,
        "equality_start": getattr(caps, "equality_start", False),
        "equality_per_label": getattr(caps, "equality_per_label", False),
    }
    for feature in sorted(problem.features_used()):
        if not missing[feature]:
            return f"it does not support {feature.replace('_', '-')} problems"
    return None


# ----------------------------------------------------------- local batches

#: ``LocalBatchResult.status`` codes: the local problem was solved; only the
#: first (+1) class, only the second (−1) class, or nobody is in the
#: neighbourhood (no problem was posed).
SOLVED, ONLY_POSITIVE, ONLY_NEGATIVE, EMPTY = 0, 1, 2, 3


@dataclass
class LocalBatch:
    """The localized duals of a batch of queries over one training set.

    For query ``s`` the problem is the C-SVC dual over the training examples
    with ``sigma[s, i] ≥ threshold`` (and ``> 0``), each with the box
    ``0 ≤ α_i ≤ C·sigma[s, i]`` and ``yᵀα = 0``; its decision value at the
    query is ``Σ α_i y_i cross[s, i] − ρ``. With ``warm_start`` and a
    ``start`` (one ``α_i ≥ 0`` per training example, e.g. the global SVM's
    solution) each query starts from ``start`` moved into its own boxes
    (:func:`feasible_start`); otherwise from 0. Either way a query's result
    depends on that query alone, not on the rest of the batch.

    ``solver='primal'`` (linear kernel, ``X`` the features) lets a backend
    with ``capabilities.local_primal`` solve each query in the primal,
    starting from ``start_primal`` (``(w, b)``, ``d + 1`` values, e.g. the
    global SVM's) with ``warm_start``, or, when ``anchors`` (training
    indices) and ``anchor_solutions`` (their own local ``(w, b)``, one row
    each) are given, from the solution of the anchor with the largest
    similarity to the query; others solve the duals. With the linear kernel
    ``cross`` may be None when ``queries`` holds the queries' features
    (shape ``(n_queries, d)``): each decision value is then ``w·x + b`` from
    the query's model, and the cross kernel is never computed.

    ``X`` holds features, or the square training kernel matrix when
    ``kernel.name == 'precomputed'``; ``sigma`` and ``cross`` (the kernel
    values between the queries and the training examples) have shape
    ``(n_queries, n_train)``. ``precision`` ('auto', 'float32' or
    'float64') is the arithmetic of the local problems' kernel values, as
    :class:`QPProblem`'s; ``cache_size`` (MB) bounds the kernel cache of the
    batch (its problems are solved one after another).
    """

    X: np.ndarray
    y: np.ndarray
    sigma: np.ndarray
    cross: np.ndarray | None
    C: float
    kernel: KernelSpec = field(default_factory=lambda: KernelSpec("linear"))
    threshold: float = 1e-6
    tol: float = 1e-3
    max_iter: int = -1
    shrinking: bool = True
    warm_start: bool = True
    precision: str = "auto"
    cache_size: float = 200.0
    start: np.ndarray | None = None
    solver: str = "dual"
    start_primal: np.ndarray | None = None
    anchors: np.ndarray | None = None
    anchor_solutions: np.ndarray | None = None
    queries: np.ndarray | None = None

    @property
    def n_queries(self) -> int:
        """Number of local problems."""
        return int(self.sigma.shape[0])


@dataclass
class LocalBatchResult:
    """Per query of a :class:`LocalBatch`: ``decision`` (positive for the +1
    class), ``status`` (:data:`SOLVED`, :data:`ONLY_POSITIVE`,
    :data:`ONLY_NEGATIVE` or :data:`EMPTY`), ``n_iter``, ``n_active`` (the
    examples in the local problem), ``n_support`` and ``converged`` (False
    when the solver stopped at ``max_iter``); ``primal``, from a backend that
    solved a linear batch in the primal, each query's local ``(w, b)``
    (shape ``(n_queries, d + 1)``), else None."""

    decision: np.ndarray
    status: np.ndarray
    n_iter: np.ndarray
    n_active: np.ndarray
    n_support: np.ndarray
    converged: np.ndarray
    primal: np.ndarray | None = None

    @classmethod
    def empty(cls, q: int) -> LocalBatchResult:
        """A result for ``q`` queries, every field zero (``converged`` True)."""
        return cls(
            decision=np.zeros(q),
            status=np.zeros(q, dtype=np.uint8),
            n_iter=np.zeros(q, dtype=np.int64),
            n_active=np.zeros(q, dtype=np.int64),
            n_support=np.zeros(q, dtype=np.int64),
            converged=np.ones(q, dtype=bool),
        )


def feasible_start(
    start: np.ndarray, rows: np.ndarray, y: np.ndarray, upper: np.ndarray
) -> np.ndarray:
    """A start α (over all examples) moved into a query's boxes: clipped, then
    the excess of the class side with the larger sum taken off its largest α
    first (ties in index order), each lowered to 0 until ``yᵀα = 0`` (the
    last one partly)."""
    a = np.clip(start[rows], 0.0, upper)
    pos, neg = a[y > 0].sum(), a[y < 0].sum()
    if pos <= 0 or neg <= 0:
        return np.zeros_like(a)
    side = 1.0 if pos > neg else -1.0
    excess = abs(pos - neg)
    idx = np.flatnonzero((y == side) & (a > 0))
    for t in idx[np.argsort(-a[idx], kind="stable")]:
        if excess <= 0:
            break
        take = min(a[t], excess)
        a[t] -= take
        excess -= take
    return a


def kernel_rows(batch: LocalBatch) -> np.ndarray:
    """``batch.cross``, or with the linear kernel and no ``cross`` the same
    values from the queries' features (``queries @ X.T``); ``ValueError``
    when neither is given."""
    if batch.cross is not None:
        return np.asarray(batch.cross, dtype=np.float64)
    queries = getattr(batch, "queries", None)
    if queries is None or batch.kernel.name != "linear":
        raise ValueError(
            "LocalBatch.cross (the kernel between the queries and the training examples) "
            "is needed unless the kernel is linear and queries holds the queries' features"
        )
    return np.asarray(queries, dtype=np.float64) @ np.asarray(batch.X, dtype=np.float64).T


def solve_local_generic(backend, batch: LocalBatch) -> LocalBatchResult:
    """Solve a :class:`LocalBatch` with any backend's ``solve``: one
    :class:`QPProblem` per query, over the query's neighbourhood
    (``rows``), warm-started from ``batch.start`` with
    :func:`feasible_start`."""
    q = batch.n_queries
    res = LocalBatchResult.empty(q)
    start = getattr(batch, "start", None) if batch.warm_start else None
    cross = kernel_rows(batch)
    for s in range(q):
        sig = batch.sigma[s]
        active = np.flatnonzero((sig >= batch.threshold) & (sig > 0))
        ys = batch.y[active]
        n_pos = int(np.sum(ys > 0))
        res.n_active[s] = active.size
        if n_pos == 0 or n_pos == active.size:
            if active.size == 0:
                status = EMPTY
            else:
                status = ONLY_NEGATIVE if n_pos == 0 else ONLY_POSITIVE
            res.status[s] = status
            res.decision[s] = {ONLY_POSITIVE: 1.0, ONLY_NEGATIVE: -1.0}.get(status, 0.0)
            continue
        upper = float(batch.C) * sig[active]
        alpha0 = None
        if start is not None:
            alpha0 = feasible_start(np.asarray(start, dtype=np.float64), active, ys, upper)
        problem = QPProblem(
            X=batch.X,
            rows=active,
            y=ys,
            upper=upper,
            kernel=batch.kernel,
            alpha0=alpha0,
            tol=float(batch.tol),
            max_iter=int(batch.max_iter),
            shrinking=bool(batch.shrinking),
            cache_size=float(getattr(batch, "cache_size", 200.0)),
        )
        sol = solve_checked(backend, problem)
        alpha = np.asarray(sol.alpha)
        res.decision[s] = float(alpha * ys @ cross[s, active]) - sol.rho
        res.n_iter[s] = sol.n_iter
        res.n_support[s] = int(np.count_nonzero(alpha))
        res.converged[s] = bool(sol.converged)
    return res


def _backend_name(backend) -> str:
    return str(getattr(backend, "name", "") or type(backend).__name__)


def solve_checked(backend, problem: QPProblem) -> QPSolution:
    """``backend.solve(problem)``, its answer checked where it is received.

    Every caller in localsvm solves through this function, so a plugin
    backend that breaks the :meth:`SolverBackend.solve` contract is named at
    once, not by an error deep inside an estimator.

    Parameters
    ----------
    backend : SolverBackend
        Any object with ``name`` and ``solve``.
    problem : QPProblem
        The problem.

    Returns
    -------
    QPSolution
        The backend's answer (a :class:`QPSolution`, or any object with its
        fields), unchanged.

    Raises
    ------
    TypeError
        Naming the backend: the answer is not a solution (``None``, say;
        the message gives its type), lacks one of ``alpha``, ``rho``,
        ``objective``, ``n_iter`` or ``converged``, or its ``alpha`` is not
        a numeric array of shape ``(problem.n,)``, or ``rho``/``objective``
        are not numbers.

    Examples
    --------
    >>> import numpy as np
    >>> from localsvm import QPProblem, get_backend
    >>> from localsvm.backends.base import solve_checked
    >>> problem = QPProblem(X=np.eye(2), y=np.array([1.0, -1.0]), upper=np.ones(2))
    >>> solve_checked(get_backend("rust"), problem).alpha.shape
    (2,)
    """
    return _checked(backend, problem, backend.solve(problem))


def solve_many_checked(backend, problems: Sequence[QPProblem]) -> list[QPSolution]:
    """``backend.solve_many(problems)`` (one :meth:`SolverBackend.solve` per
    problem for a backend without the method), each answer checked as
    :func:`solve_checked` checks it.

    Parameters
    ----------
    backend : SolverBackend
        Any object with ``name`` and ``solve``.
    problems : sequence of QPProblem
        The problems.

    Returns
    -------
    list of QPSolution
        The backend's answers, unchanged, in the problems' order.

    Raises
    ------
    TypeError
        As :func:`solve_checked`, or when the backend returns another
        number of answers than problems.

    Examples
    --------
    >>> import numpy as np
    >>> from localsvm import QPProblem, get_backend
    >>> from localsvm.backends.base import solve_many_checked
    >>> problems = [
    ...     QPProblem(X=np.eye(3), y=np.array([1.0, -1.0, 1.0]), upper=np.ones(3), rows=rows)
    ...     for rows in (np.array([0, 1, 2]), np.array([2, 1, 0]))
    ... ]
    >>> [s.alpha.shape for s in solve_many_checked(get_backend("rust"), problems)]
    [(3,), (3,)]
    """
    problems = list(problems)
    many = getattr(backend, "solve_many", None)
    if many is None:
        return [solve_checked(backend, problem) for problem in problems]
    solutions = many(problems)
    if not isinstance(solutions, (list, tuple)) or len(solutions) != len(problems):
        got = len(solutions) if isinstance(solutions, (list, tuple)) else type(solutions).__name__
        raise TypeError(
            f"backend {_backend_name(backend)!r} returned {got} from solve_many() for "
            f"{len(problems)} problems; expected a list of one QPSolution per problem"
        )
    return [_checked(backend, p, s) for p, s in zip(problems, solutions, strict=True)]


def _checked(backend, problem: QPProblem, sol) -> QPSolution:
    """``sol``, ``backend``'s answer to ``problem``, if it is a solution
    (see :func:`solve_checked`); else ``TypeError`` naming the backend."""
    if (
        type(sol) is QPSolution
        and type(sol.alpha) is np.ndarray
        and sol.alpha.dtype == np.float64
        and sol.alpha.shape == (problem.n,)
        and type(sol.rho) is float
        and type(sol.objective) is float
    ):
        # The built-in backends' answer, of the right shape: nothing to name.
        return sol
    who = f"backend {_backend_name(backend)!r}"
    if sol is None or isinstance(sol, (str, bytes, tuple, list, dict, np.ndarray)):
        raise TypeError(
            f"{who} returned {type(sol).__name__} from solve(); expected a QPSolution "
            "(alpha, rho, objective, n_iter, converged, backend)"
        )
    fields = ("alpha", "rho", "objective", "n_iter", "converged")
    missing = [f for f in fields if not hasattr(sol, f)]
    if missing:
        raise TypeError(
            f"{who} returned {type(sol).__name__} from solve(), which lacks "
            f"{', '.join(missing)}; expected a QPSolution"
        )
    try:
        alpha = np.asarray(sol.alpha)
    except Exception as exc:  # an object numpy cannot read as an array
        raise TypeError(f"{who} returned an alpha numpy cannot read: {exc}") from exc
    if alpha.dtype.kind not in "biuf":
        raise TypeError(
            f"{who} returned alpha of dtype {alpha.dtype} ({type(sol.alpha).__name__}); "
            "expected real numbers"
        )
    if alpha.shape != (problem.n,):
        raise TypeError(
            f"{who} returned alpha of shape {alpha.shape}; expected ({problem.n},), one "
            "coefficient per variable of the problem"
        )
    for field_name in ("rho", "objective"):
        value = getattr(sol, field_name)
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
            raise TypeError(
                f"{who} returned {field_name} of type {type(value).__name__}; expected a "
                "real number"
            )
    return sol


def solve_local_batch(backend, batch: LocalBatch) -> LocalBatchResult:
    """``backend.solve_local(batch)``, or :func:`solve_local_generic` for a
    backend that does not subclass :class:`SolverBackend` and lacks the method."""
    method = getattr(backend, "solve_local", None)
    if method is None:
        return solve_local_generic(backend, batch)
    res = method(batch)
    fields = ("decision", "status", "n_iter", "n_active", "n_support", "converged")
    if res is None or not all(hasattr(res, f) for f in fields):
        raise TypeError(
            f"backend {_backend_name(backend)!r} returned {type(res).__name__} from "
            "solve_local(); expected a LocalBatchResult"
        )
    shape = np.shape(res.decision)
    if shape != (batch.n_queries,):
        raise TypeError(
            f"backend {_backend_name(backend)!r} returned decision values of shape "
            f"{shape} from solve_local(); expected ({batch.n_queries},), one per query"
        )
    return res


# ------------------------------------------------------------ C paths


@dataclass
class CPath:
    """One dual solved along increasing values of ``C``, scored on held-out rows.

    For each ``C`` in ``Cs`` the problem is the :class:`QPProblem` over the
    examples ``X[rows]`` (which may repeat a row, as ε-SVR's ``2n``
    variables do) with labels ``y``, linear term ``p`` (None: −1) and boxes
    ``0 ≤ α_t ≤ C · weights[t]``; its decision values at the rows ``valid``
    of ``X`` are ``Σ_t α_t y_t K(X[rows[t]], X[v]) − ρ``. As the boxes only
    widen along the path, each solution is a feasible start for the next
    (the α seeding of DeCoste & Wagstaff, "Alpha seeding for support vector
    machines", KDD 2000). ``X`` holds features, or the square kernel matrix
    of every row when ``kernel.name == 'precomputed'``; the remaining fields
    are :class:`QPProblem`'s.

    ``prune`` (None: solve every ``C``) lets a backend stop the path early,
    a speed hint that backends may ignore: once the held-out loss on
    ``target`` (labels ±1, 0 for a row outside the problem, scored by the
    0-1 error; or, with ``regression``, values scored by the squared error)
    has been more than ``prune`` standard errors above the best the path
    reached, for two values of ``C`` in a row, the later ``C`` values are
    left unsolved: their decision values are NaN and
    :attr:`CPathResult.stopped` names the first. ``keep_alpha`` asks for
    each ``C``'s multipliers in :attr:`CPathResult.alpha` (a backend that
    cannot give them leaves it None).
    """

    X: Any
    rows: np.ndarray
    y: np.ndarray
    weights: np.ndarray
    Cs: np.ndarray
    valid: np.ndarray
    kernel: KernelSpec = field(default_factory=KernelSpec)
    p: np.ndarray | None = None
    tol: float = 1e-3
    max_iter: int = -1
    cache_size: float = 200.0
    shrinking: bool = True
    precision: str = "auto"
    target: np.ndarray | None = None
    prune: float | None = None
    regression: bool = False
    keep_alpha: bool = False

    def validate(self) -> None:
        """Check shapes and values; raises ``ValueError`` naming the field."""
        m = int(np.asarray(self.y).shape[0])
        for name in ("rows", "weights", "p"):
            v = getattr(self, name)
            if v is not None and np.asarray(v).shape != (m,):
                raise ValueError(f"{name} must have shape ({m},), got {np.asarray(v).shape}")
        cs = np.asarray(self.Cs, dtype=np.float64)
        if cs.ndim != 1 or cs.size == 0:
            raise ValueError("Cs must list at least one value")
        if not (np.all(np.isfinite(cs)) and np.all(cs > 0) and np.all(np.diff(cs) > 0)):
            raise ValueError("Cs must be positive, finite and strictly increasing")
        w = np.asarray(self.weights, dtype=np.float64)
        if not (np.all(np.isfinite(w)) and np.all(w >= 0)):
            raise ValueError("weights must be finite and non-negative")
        if self.prune is not None:
            if not (np.isfinite(self.prune) and self.prune >= 0):
                raise ValueError(f"prune must be finite and non-negative, got {self.prune}")
            n_valid = np.asarray(self.valid).shape[0]
            if self.target is None or np.asarray(self.target).shape != (n_valid,):
                raise ValueError(f"prune needs target of shape ({n_valid},)")


@dataclass
class CPathResult:
    """Per value of :attr:`CPath.Cs`: ``decision`` (shape ``(n_C,
    n_valid)``, the held-out decision values), ``n_iter``, ``converged``
    (False when the solve stopped at ``max_iter``) and ``error`` (None, or
    why that solve failed: its decision values are then NaN); ``stopped``:
    the first ``C`` left unsolved by :attr:`CPath.prune`, or None;
    ``alpha``: with :attr:`CPath.keep_alpha`, the multipliers (shape
    ``(n_C, len(rows))``, NaN for a ``C`` left unsolved or failed), else
    None."""

    decision: np.ndarray
    n_iter: np.ndarray
    converged: np.ndarray
    error: list
    stopped: int | None = None
    alpha: np.ndarray | None = None


def smo_settings(source) -> dict[str, Any]:
    """The solver settings that ``source`` (an estimator or a :class:`CPath`)
    holds under :class:`QPProblem`'s names, as the problem takes them:
    ``tol``, ``max_iter``, ``cache_size``, ``shrinking`` and ``precision``.

    Parameters
    ----------
    source : object
        Anything with those five attributes.

    Returns
    -------
    dict
        The settings, as ``QPProblem`` keyword arguments.
    """
    return {
        "tol": float(source.tol),
        "max_iter": int(source.max_iter),
        "cache_size": float(source.cache_size),
        "shrinking": bool(source.shrinking),
        "precision": source.precision,
    }


def equality_start(alpha: np.ndarray, y: np.ndarray) -> np.ndarray | None:
    """``alpha`` (clipped at 0) as the start of a problem with ``yᵀα = 0``,
    or None (start from zero) when that equality holds less closely than a
    start must, with a margin (half :data:`FEASIBILITY_TOL`, relative, of
    :meth:`QPProblem.validate`'s check): an interior-point solver's answer
    (1e-8 off), or multipliers averaged over folds whose paths rounded
    large values."""
    a = np.maximum(alpha, 0.0)
    if abs(float(y @ a)) > 0.5 * FEASIBILITY_TOL * max(float(a.sum()), 1.0):
        return None
    return a


def solve_c_path_generic(backend, path: CPath) -> CPathResult:
    """Solve a :class:`CPath` with any backend's ``solve``: one
    :class:`QPProblem` per ``C``, started from the previous ``C``'s
    solution (feasible, the boxes having widened; from zero when it meets
    ``yᵀα = 0`` too loosely to start from), the held-out decision
    values from the kernel between the held-out rows and the support
    vectors."""
    path.validate()
    cs = np.asarray(path.Cs, dtype=np.float64)
    rows = np.asarray(path.rows, dtype=np.intp)
    valid = np.asarray(path.valid, dtype=np.intp)
    y = np.asarray(path.y, dtype=np.float64)
    weights = np.asarray(path.weights, dtype=np.float64)
    n_c = cs.size
    decision = np.full((n_c, valid.size), np.nan)
    n_iter = np.zeros(n_c, dtype=np.int64)
    converged = np.ones(n_c, dtype=bool)
    errors: list = [None] * n_c
    kept = np.full((n_c, y.size), np.nan) if path.keep_alpha else None
    alpha = None
    for k, c in enumerate(cs):
        problem = QPProblem(
            X=path.X,
            rows=rows,
            y=y,
            upper=c * weights,
            kernel=path.kernel,
            p=path.p,
            alpha0=alpha,
            **smo_settings(path),
        )
        try:
            sol = backend.solve(problem)
        except (ValueError, ArithmeticError, MemoryError) as exc:
            errors[k] = f"{type(exc).__name__}: {exc}"
            alpha = None
            continue
        a = np.asarray(sol.alpha, dtype=np.float64)
        coef = a * y
        sv = np.flatnonzero(coef)
        if path.kernel.precomputed:
            cross = np.asarray(path.X[np.ix_(valid, rows[sv])], dtype=np.float64)
            decision[k] = cross @ coef[sv] - float(sol.rho)
        elif sv.size:
            decision[k] = decision_values(
                path.kernel,
                path.X[valid],
                path.X[rows[sv]],
                coef[sv][None, :],
                np.array([-float(sol.rho)]),
                precision="float64",
            )[:, 0]
        else:
            decision[k] = -float(sol.rho)
        n_iter[k] = int(sol.n_iter)
        converged[k] = bool(sol.converged)
        alpha = equality_start(a, y)
        if kept is not None:
            kept[k] = a
    return CPathResult(
        decision=decision, n_iter=n_iter, converged=converged, error=errors, alpha=kept
    )


def solve_c_path(backend, path: CPath) -> CPathResult:
    """``backend.solve_c_path(path)``, or :func:`solve_c_path_generic` for a
    backend that does not subclass :class:`SolverBackend` and lacks the method."""
    method = getattr(backend, "solve_c_path", None)
    if method is None:
        return solve_c_path_generic(backend, path)
    return method(path)
