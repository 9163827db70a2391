"""``localsvm.LocalSVC``: localized SVMs, one linear SVM per test example.

SLSVM and HLSVM (H. Cheng, P.-N. Tan and R. Jin, "Localized Support Vector
Machine and Its Efficient Algorithm", SIAM International Conference on Data
Mining (SDM), 2007, §3). For each test example
``x_s`` the C-SVC dual is solved with per-example boxes ``C·σ(x_s, x_i)``, so
training examples far from ``x_s`` barely count, and ``x_s`` is classified by
that model alone. ``similarity='gaussian'`` (σ = exp(−‖x_s − x_i‖²/λ)) gives
the soft version, SLSVM; ``similarity='knn'`` (σ = 1 for the ``k`` nearest
examples, else 0) the hard one, HLSVM, which is SVM-KNN (H. Zhang, A. C.
Berg, M. Maire and J. Malik, CVPR 2006). With the linear kernel each local
problem is solved in the primal (``solver='primal'``, Rust core
``local_primal``); otherwise its dual by SMO.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass
from numbers import Integral, Real
from typing import ClassVar

import numpy as np
from sklearn.utils import Bunch

from ._base import (
    CACHE_CLASS_WEIGHT_CONSTRAINTS,
    FEATURE_KERNELS,
    BaseSVMClassifier,
    fit_method,
    store_params,
)
from ._compat import Interval, StrOptions
from ._docstrings import X_Y_CLASSES, fill
from ._multiclass import binary_index, ovo_pairs, ovo_to_ovr, ovo_votes
from .backends.base import (
    EMPTY,
    SOLVED,
    LocalBatch,
    QPProblem,
    solve_checked,
    solve_local_batch,
)
from .kernels import KernelSpec, kernel_matrix
from .parallel import effective_n_jobs, run_tasks
from .plugins import backends as registered_backends
from .similarity import (
    bandwidth_parts,
    compute_similarity,
    get_similarity,
    similarity_kwargs,
    similarity_parameter_constraints,
)

__all__ = ["LocalSVC"]

#: The training kernel is kept as a matrix (built once at fit) up to this
#: many bytes; above it, local problems compute kernel columns from features.
GRAM_LIMIT_BYTES = 128 << 20

#: The fit-time global SVM (every local problem's start) stops after at most
#: ``max(GLOBAL_MIN_ITER, 10·n)`` iterations.
GLOBAL_MIN_ITER = 10_000

#: ``solver='auto'`` solves linear-kernel local problems in the primal up to
#: this many features (each Newton step updates the inverse of a
#: ``(d + 1)``-square Hessian, by ``O(d²)`` per example that changes piece,
#: and a new factorisation costs ``(d + 1)³/3``). The primal solver itself
#: takes any ``d``: this choice is the estimator's, and made only here.
PRIMAL_MAX_FEATURES = 63

#: The primal solver's anchors per class pair: at most ``ANCHORS`` training
#: examples, fewer for large problems (about ``ANCHOR_WORK / (n·(d + 1))``,
#: at least ``ANCHOR_MIN``), whose own local SVMs are solved at fit; each
#: test example starts from the solution of its most similar anchor.
ANCHORS = 256
ANCHOR_MIN = 16
ANCHOR_WORK = 40_000_000

#: Queries handled per block of :meth:`LocalSVC.decision_details`: bounds the
#: ``n_train × block`` similarity and kernel matrices held at once.
BLOCK_BYTES = 64 << 20


@dataclass
class _Pair:
    """One binary problem: the training rows of classes ``a`` (+1) and ``b`` (−1)."""

    a: int
    b: int
    rows: np.ndarray
    y: np.ndarray
    kernel_input: np.ndarray  # features, or the Gram matrix of the rows
    spec: KernelSpec  # the kernel to apply to ``kernel_input``
    start: np.ndarray  # the global SVM's α over ``rows``: every query's start
    start_primal: np.ndarray | None  # its (w, b), the primal solver's start
    anchors: np.ndarray | None = None  # rows (indices into ``rows``) with own solutions
    anchor_solutions: np.ndarray | None = None  # their local (w, b), one row each


def _describe_chunk(res) -> str:
    """A log line's account of one chunk of local problems."""
    solved = np.asarray(res.status) == SOLVED
    n_iter = int(np.asarray(res.n_iter)[solved].sum())
    return f"{int(solved.sum())} local problems solved, {n_iter} iterations"


def _prepare_chunk(chunk, shared):
    """The similarities (queries × training), cross kernel (None when the
    primal solver's models give the decisions: ``spec`` is None) and
    per-class similarity sums of one chunk of queries (a
    :func:`~localsvm.run_tasks` task, so that both cores share this work too)."""
    similarity, X_fit, X, sim_kwargs, spec, classes, weights = shared
    Xc = X[chunk]
    sigma_t = np.ascontiguousarray(compute_similarity(similarity, X_fit, Xc, **sim_kwargs).T)
    if weights is not None:
        sigma_t *= weights  # each training example's box C·w_i·σ
    cross = None if spec is None else kernel_matrix(spec, Xc, X_fit)
    # einsum's own loop (each class's indicator row against each query's
    # row): a BLAS product would wake BLAS threads that then spin on the
    # cores the local solves need.
    return sigma_t, cross, np.einsum("qi,ci->qc", sigma_t, classes)


def _solve_chunk(task, shared):
    """Solve the local problems of one chunk of queries for one class pair
    (a :func:`~localsvm.run_tasks` task: module-level, so it pickles)."""
    p, c = task
    pairs, sigmas, crosses, queries, backend, settings = shared
    pair = pairs[p]
    start = pair.start if settings["warm_start"] else None
    sig, crs = sigmas[c], crosses[c]
    if pair.rows.size != sig.shape[1]:  # more than two classes: the pair's rows
        sig = np.ascontiguousarray(sig[:, pair.rows])
        if crs is not None:
            crs = np.ascontiguousarray(crs[:, pair.rows])
    batch = LocalBatch(
        X=pair.kernel_input,
        y=pair.y,
        sigma=sig,
        cross=crs,
        queries=None if crs is not None else queries[c],
        kernel=pair.spec,
        start=start,
        start_primal=pair.start_primal,
        anchors=pair.anchors,
        anchor_solutions=pair.anchor_solutions,
        **settings,
    )
    return solve_local_batch(backend, batch)


_X_LOCAL = """\
X : {array-like, sparse matrix} of shape (n_samples, n_features)
    Test examples; each gets its own local SVM."""


@fill(
    X_y_classes=X_Y_CLASSES,
    X_local=_X_LOCAL,
    **bandwidth_parts("exp(−‖x_s − x_i‖² / λ)"),
)
class LocalSVC(BaseSVMClassifier):
    """Localized SVM (SLSVM / HLSVM): one SVM per test example.

    For a test example ``x_s`` the model solves (Cheng, Tan & Jin [1]_,
    eq. 3.6)::

        max Σα_i − ½ Σ α_i α_j y_i y_j K(x_i, x_j)
        s.t. Σ α_i y_i = 0,  0 ≤ α_i ≤ C·σ(x_s, x_i),

    with a linear kernel by default (the paper's choice), and predicts
    ``x_s`` with that model. With weights (``class_weight``,
    ``sample_weight``) the boxes are ``C·w_i·σ(x_s, x_i)``, ``w_i`` the
    example's weight, in every local problem and in the global one.
    :meth:`fit` validates and stores the data (and the training kernel
    matrix, computed once); prediction solves one QP per test example (per
    class pair), in parallel over chunks of test examples with the GIL
    released. Fit also solves the global SVM (boxes
    ``C``) once per class pair; with ``warm_start`` every test example's
    solver starts from that solution moved into its own boxes. A test
    example's result therefore depends on that example alone, never on the
    rest of the batch or on how the batch is split among threads.

    Parameters
    ----------
    C : float, default=1.0
        Regularisation; boxes are ``C·σ``.
    similarity : str, default='gaussian'
        A registered similarity strategy (``localsvm.list_similarities()``):
        'gaussian' (SLSVM, uses ``bandwidth``) or 'knn' (HLSVM, uses ``k``;
        the SVM-KNN of Zhang et al. [2]_).
    {bandwidth}
    k : int, default=10
        Neighbours of the 'knn' similarity; at most the training set's size.
    similarity_params : dict, default=None
        Further keyword parameters for the strategy (third-party ones).
    similarity_threshold : float, default=1e-6
        Training examples with ``σ < similarity_threshold`` are left out of a
        test example's problem: their box is below ``C·similarity_threshold``,
        so they can move the local model only that much. 0 keeps every
        example with ``σ > 0``. With weights the test is on ``w_i·σ``, the
        box's factor.
    kernel : {'linear', 'poly', 'rbf', 'sigmoid'}, default='linear'
        Kernel of the local SVMs; the paper uses linear ones.
    degree : int, default=3
        Degree of the 'poly' kernel.
    gamma : {'scale', 'auto'} or float, default='scale'
        Coefficient of the 'poly', 'rbf' and 'sigmoid' kernels, as in
        :class:`localsvm.SVC`.
    coef0 : float, default=0.0
        Constant term of the 'poly' and 'sigmoid' kernels.
    tol : float, default=1e-3
        SMO's stopping tolerance per local problem.
    max_iter : int, default=-1
        Iteration cap per local problem (-1: ``max(100000, 1000·k)`` for a
        problem of ``k`` examples). A problem that stops at the cap is
        reported with a ``ConvergenceWarning``. With a very large ``C`` on data
        the kernel cannot separate locally, the local duals have boxes
        ``C·σ`` far beyond the solution's scale and SMO reaches the cap on
        every test example; lower ``C`` then.
    shrinking : bool, default=True
        Use SMO's shrinking heuristic in each local problem.
    warm_start : bool, default=True
        Start each test example's solver from the global SVM's α (solved at
        fit with boxes ``C``), clipped to the example's boxes ``C·σ`` and
        rebalanced so that ``Σ α_i y_i = 0`` (the class side with the larger
        ``Σα`` loses its excess, largest α first); False starts from α = 0. Either way a test
        example's result depends on that example alone (it used to start
        from the previous example of the batch; it no longer does). The local
        model is the same to ``tol`` with or without the warm start, except
        that a bias left undecided by the dual (every α at a bound, so any b
        in an interval is optimal) may come out as another point of that
        interval.
    solver : {'auto', 'primal', 'dual'}, default='auto'
        How each local problem is solved. 'dual': SMO on the dual (any
        kernel). 'primal': with the linear kernel, Newton's method on the
        primal smoothed by a Huber loss of width ``0.45·tol`` (O. Chapelle,
        "Training a Support Vector Machine in the Primal", Neural Computation,
        2007), in ``n_features + 1`` unknowns; its multipliers are checked
        against SMO's stopping test for ``tol`` before they are used, and a
        problem that does not pass within 300 Newton steps is finished by
        SMO from there. Both give the local SVM to ``tol``. 'auto':
        'primal' when the kernel is linear, there are at most 63 features and
        the backend has it (the Rust one does), else 'dual'. See Notes.
    backend : str, default='auto'
        A registered solver backend. The Rust one ('auto') solves a whole
        chunk of test examples in one call; others get one
        :class:`~localsvm.backends.QPProblem` per test example.
    chunk_size : int or None, default=None
        Test examples per parallel task (None: enough chunks for every
        worker, at least 16 examples each).
    cache_size : float, default=200
        Megabytes of kernel columns cached by all the local problems solved
        at once, together: each of the chunks solved concurrently gets
        ``cache_size / min(n_jobs, chunks)`` (at least two kernel columns of
        its problem). A local problem whose Hessian fits its share has every
        kernel column computed once; a larger one recomputes columns. See
        Notes for the peak memory of prediction.
    class_weight : dict, 'balanced' or None, default=None
        Multiplies ``C`` per class, as in :class:`localsvm.SVC`: the boxes of
        class ``c``'s examples are ``C · class_weight[c] · σ`` (times their
        ``sample_weight``). 'balanced' is ``n_samples / (n_classes ·
        bincount(y))`` on the training set (``class_weight_``). The
        fallback vote of a test example without neighbours weighs each
        training example by ``w_i·σ`` too.
    n_jobs : int or None, default=None
        Chunks solved at once (threads); None or -1: all CPUs.
    verbose : int, default=0
        Logging through :mod:`logging` (logger ``localsvm.local_svc``) at
        predict, where the local problems are solved: 0 logs nothing; 1 one
        line per block of test examples (local problems, iterations, time);
        2 also one line per chunk, and one for ``fit``. Records are
        emitted at level INFO; without any logging configuration they go
        to stderr.

    {bandwidth_attributes}
    X_fit_ : ndarray of shape (n_samples, n_features)
        The training examples, kept for prediction.
    y_fit_ : ndarray of shape (n_samples,)
        Index into ``classes_`` of each training label.
    class_counts_ : ndarray of shape (n_classes,)
        Training examples per class (of positive weight).
    class_weight_ : ndarray of shape (n_classes,)
        The factor of ``C`` of each class (``class_weight`` resolved).
    solver_ : str
        The solver of the local problems, 'primal' or 'dual' (``solver``
        resolved).
    use_gram_ : bool
        Whether the training kernel matrix was computed at fit (it is for the
        'dual' solver when it needs at most 128 MiB, ``n ≤ 4096``);
        otherwise the global and local problems compute kernel columns from
        the features, through the same least-recently-used column cache as
        :class:`localsvm.SVC`, bounded by ``cache_size``.
    n_iter_ : ndarray of shape (n_class_pairs,)
        SMO iterations of the global SVM solved at fit for each class pair
        (pairs ordered as in :meth:`decision_details`); it is capped at
        ``max(10000, 10·n)`` iterations for ``n`` examples of the pair, since
        it only serves as a start. The iterations of each test example's
        local problem are reported by :meth:`decision_details` (``n_iter``).

    Notes
    -----
    Memory: with ``n`` training examples of ``d`` features and ``P`` chunks
    solved at once, prediction needs about ``cache_size`` + 96 MiB (the
    similarity and kernel values of a block of test examples) +
    ``(1 + 4.5·P)·8·n·d`` bytes (the training data, and per chunk its
    copies in the solver, by features and by rows, and those of the rows of
    a neighbourhood) + ``O(P·n)``; fit needs
    ``cache_size`` (the global SVM's column cache) + ``O(n·d)``, plus, for
    the primal solver's anchors, up to 64 MiB of their similarities and
    the prediction memory above for their local problems. When the
    training kernel matrix is kept (``use_gram_``: ``8·n² ≤ 128 MiB``, so
    ``n ≤ 4096``), add it and, per chunk, the block of it that a
    neighbourhood gathers (at most the same size). Above that limit nothing
    of size ``n²`` is held: ``n = 50 000`` examples of a few features fit
    and predict within ``cache_size`` + a few hundred MiB.

    Speed: with the linear kernel the primal solver ('auto') needs a few
    dozen Newton steps per test example, each one pass over the ``n × d``
    training features, where SMO needs a few hundred iterations over the
    ``n`` multipliers; ``decision_details`` reports the steps (plus SMO
    iterations for a problem SMO finished) as ``n_iter``. With
    ``warm_start``, fit also solves the local SVMs of up to 256 anchors per
    class pair (a fixed random draw of its training examples, fewer when
    ``n·d`` is large), and each test example starts from the local model of
    the anchor most similar to it, which is close to its own; this depends
    on the test example alone, like every other start. With the 'dual'
    solver, consecutive test examples of a chunk whose neighbourhoods are the
    same training examples (a wide bandwidth, or a small
    ``similarity_threshold``) share one local Hessian, so each of its
    kernel columns is computed once per chunk rather than once per test
    example.

    A test example whose neighbourhood (``σ ≥ similarity_threshold``) holds
    one class only is given that class; one with no neighbour at all falls
    back to the σ-weighted vote of every training example (the weighted
    k-NN rule, Cheng, Tan & Jin [1]_, eq. 2.1), and to the most frequent
    class when every σ is 0. More than two classes: one local SVM per pair of
    classes present in the neighbourhood, then voting (as
    :class:`localsvm.SVC`).

    Progress: ``set_callbacks`` (scikit-learn ≥ 1.9 callbacks, e.g.
    ``ProgressBar()``) reports ``fit``, one subtask per class pair (its data
    set up for the local problems). The local problems themselves are
    solved at predict, which scikit-learn's callback API does not cover;
    ``verbose`` follows them.

    References
    ----------
    .. [1] H. Cheng, P.-N. Tan and R. Jin, "Localized Support Vector Machine
       and Its Efficient Algorithm", SIAM International Conference on Data
       Mining (SDM), 2007.
    .. [2] H. Zhang, A. C. Berg, M. Maire and J. Malik, "SVM-KNN:
       Discriminative Nearest Neighbor Classification for Visual Category
       Recognition", IEEE Conference on Computer Vision and Pattern
       Recognition (CVPR), 2006.

    Examples
    --------
    >>> from localsvm import LocalSVC
    >>> from localsvm.datasets import load_banana
    >>> d = load_banana()
    >>> clf = LocalSVC(C=10.0, bandwidth=0.5).fit(d.X_train, d.y_train)
    >>> round(clf.score(d.X_test[:500], d.y_test[:500]), 2) > 0.85
    True
    """

    _parameter_constraints: ClassVar[dict] = {
        **BaseSVMClassifier._parameter_constraints,
        "kernel": [StrOptions(set(FEATURE_KERNELS)), callable],
        **similarity_parameter_constraints(),
        "similarity_threshold": [Interval(Real, 0.0, 1.0, closed="left")],
        "shrinking": ["boolean"],
        "warm_start": ["boolean"],
        "solver": [StrOptions({"auto", "primal", "dual"})],
        "chunk_size": [Interval(Integral, 1, None, closed="left"), None],
        **CACHE_CLASS_WEIGHT_CONSTRAINTS,
    }

    def __init__(
        self,
        *,
        C=1.0,
        similarity="gaussian",
        bandwidth="scale",
        k=10,
        similarity_params=None,
        similarity_threshold=1e-6,
        kernel="linear",
        degree=3,
        gamma="scale",
        coef0=0.0,
        tol=1e-3,
        max_iter=-1,
        shrinking=True,
        warm_start=True,
        solver="auto",
        backend="auto",
        chunk_size=None,
        cache_size=200,
        class_weight=None,
        n_jobs=None,
        verbose=0,
    ):
        store_params(self, locals())

    # ------------------------------------------------------------------ fit

    @fit_method
    def fit(self, X, y, sample_weight=None):
        """Validate and store the training data; the work happens at predict.

        Parameters
        ----------
        {X_y_classes}
        sample_weight : array-like of shape (n_samples,), default=None
            Per-example multipliers of ``C`` (of every box ``C·σ`` the
            example has), composed with ``class_weight``; None weighs every
            example 1. As in LIBSVM, an example of weight ``<= 0`` is left
            out before anything is computed (``bandwidth='scale'``, the
            neighbours of the 'knn' similarity and ``gamma='scale'``
            included).

        Returns
        -------
        self : LocalSVC
            The fitted estimator.
        """
        X, y, y_idx, weights, _ = self._weighted_fit_prologue(X, y, sample_weight)
        self._weights = None if np.all(weights == 1.0) else weights
        # The strategy validates its own parameters (k > n, bandwidth ≤ 0, an
        # unknown name) now rather than at the first predict.
        self._sim_kwargs = similarity_kwargs(get_similarity(self.similarity), self, X)
        compute_similarity(self.similarity, X, X[:1], **self._sim_kwargs)
        self._resolve_kernel(X)
        self.X_fit_ = X
        self.y_fit_ = y_idx.astype(np.intp)
        self.class_counts_ = np.bincount(y_idx, minlength=self.classes_.shape[0])
        n = X.shape[0]
        linear = self._spec.name == "linear"
        if self.solver == "primal" and not linear:
            raise ValueError(
                f"solver='primal' needs kernel='linear', got kernel={self.kernel!r}; "
                "use solver='dual' or 'auto'"
            )
        pairs = ovo_pairs(self.classes_.shape[0])
        # One backend for every problem, chosen on the first class pair's.
        first = np.flatnonzero((y_idx == pairs[0][0]) | (y_idx == pairs[0][1]))
        backend = self._select_backend(
            QPProblem(
                X=X[first],
                y=np.where(y_idx[first] == pairs[0][0], 1.0, -1.0),
                upper=np.full(first.size, float(self.C)),
                kernel=self._spec,
            )
        )
        capable = bool(getattr(backend.capabilities, "local_primal", False))
        if self.solver == "primal" and not capable:
            offering = sorted(
                name
                for name, other in registered_backends().items()
                if getattr(other.capabilities, "local_primal", False)
            )
            raise ValueError(
                f"solver='primal' is not offered by backend {backend.name!r}; "
                "use solver='dual' or 'auto'"
                + (f", or a backend that offers it: {', '.join(offering)}" if offering else "")
            )
        primal = capable and (
            self.solver == "primal"
            or (self.solver == "auto" and linear and X.shape[1] <= PRIMAL_MAX_FEATURES)
        )
        self.use_gram_ = not primal and n**2 * 8 <= GRAM_LIMIT_BYTES
        gram = kernel_matrix(self._spec, X, X) if self.use_gram_ else None
        self._pairs = []
        report = self._fit_report(len(pairs), X, y)
        pair_tasks = report.subtasks("class-pair", len(pairs))
        n_iter: list[int] = []
        report.log(
            2,
            "LocalSVC fit: %d samples, %d class pairs, training kernel matrix %s",
            n,
            len(pairs),
            "kept" if self.use_gram_ else "not kept (too large)",
        )
        for (a, b), task in zip(pairs, pair_tasks, strict=True):
            task.begin()
            rows = np.flatnonzero((y_idx == a) | (y_idx == b))
            labels = np.where(y_idx[rows] == a, 1.0, -1.0)
            if gram is not None:
                kin = gram if rows.size == n else np.ascontiguousarray(gram[np.ix_(rows, rows)])
                spec = KernelSpec("precomputed")
            else:
                kin, spec = X[rows], self._spec
            upper = np.full(rows.size, float(self.C))
            if self._weights is not None:
                upper *= self._weights[rows]
            problem = QPProblem(
                X=kin,
                y=labels,
                upper=upper,
                kernel=spec,
                tol=float(self.tol),
                # Only a start for the local problems: a capped solve is a
                # feasible start all the same.
                max_iter=max(GLOBAL_MIN_ITER, 10 * rows.size),
                shrinking=bool(self.shrinking),
                cache_size=float(self.cache_size),
            )
            sol = solve_checked(backend, problem)
            self._check_finite([sol])
            start = np.clip(np.asarray(sol.alpha, dtype=np.float64), 0.0, upper)
            n_iter.append(int(sol.n_iter))
            start_primal = None
            if primal:
                w = (start * labels) @ X[rows]
                start_primal = np.append(w, -float(sol.rho))
            self._pairs.append(_Pair(a, b, rows, labels, kin, spec, start, start_primal))
            task.end()
        self.n_iter_ = np.asarray(n_iter, dtype=np.int64)
        self.solver_ = "primal" if primal else "dual"
        if primal and self.warm_start:
            self._fit_anchors(X, backend)
        report.end(X, y)
        return self

    def _fit_anchors(self, X, backend) -> None:
        """Solve the local SVMs of each class pair's anchors (a fixed random
        draw of its training examples) for the primal solver's starts."""
        at_once = max(1, effective_n_jobs(self.n_jobs))
        settings = self._solver_settings(float(self.cache_size) / at_once)
        rng = np.random.default_rng(0)
        for p, pair in enumerate(self._pairs):
            k = pair.rows.size
            count = min(k, ANCHORS, max(ANCHOR_MIN, ANCHOR_WORK // (k * (X.shape[1] + 1))))
            idx = np.sort(rng.choice(k, count, replace=False))
            Xp = X[pair.rows]
            whole = k == X.shape[0]
            solutions, keep = [], []
            # Blocks of anchors, so that their similarities stay within BLOCK_BYTES.
            block = max(1, BLOCK_BYTES // (16 * X.shape[0]))
            for start in range(0, count, block):
                part = idx[start : start + block]
                # Against every training example, as a test example's are
                # (the 'knn' neighbours are among all of them), then the
                # pair's columns.
                sigma = compute_similarity(self.similarity, X, Xp[part], **self._sim_kwargs)
                sigma_t = np.ascontiguousarray(sigma.T if whole else sigma.T[:, pair.rows])
                if self._weights is not None:
                    sigma_t *= self._weights[pair.rows]
                chunks = self._chunks(part.size)
                sigmas = [sigma_t[chunk] for chunk in chunks]
                # The decision values at the anchors are not used: they come
                # from the models, with no cross kernel.
                crosses = [None] * len(chunks)
                queries = [Xp[part[chunk]] for chunk in chunks]
                results = run_tasks(
                    _solve_chunk,
                    [(p, c) for c in range(len(chunks))],
                    n_jobs=self.n_jobs,
                    thread_safe=backend.capabilities.thread_safe,
                    shared=(self._pairs, sigmas, crosses, queries, backend, settings),
                )
                if any(r.primal is None for r in results):
                    break  # the backend solved the duals: no models to start from
                solutions += [r.primal for r in results]
                keep += [r.status == SOLVED for r in results]
            else:
                solved = np.concatenate(keep)
                if solved.any():
                    pair.anchors = idx[solved].astype(np.int64)
                    pair.anchor_solutions = np.ascontiguousarray(np.vstack(solutions)[solved])

    # -------------------------------------------------------------- predict

    def _chunks(self, m: int) -> list[np.ndarray]:
        if self.chunk_size is not None:
            size = int(self.chunk_size)
        else:
            size = max(16, math.ceil(m / (4 * effective_n_jobs(self.n_jobs))))
        return [np.arange(i, min(i + size, m)) for i in range(0, m, size)]

    def decision_details(self, X) -> Bunch:
        """Report every local model's outcome for each row of ``X``.

        Parameters
        ----------
        {X_local}

        Returns
        -------
        Bunch
            Arrays of shape ``(n_samples, n_pairs)``, one column per class
            pair (pairs ``(0, 1), (0, 2), …, (1, 2), …`` of class indices; one
            column for two classes): ``decision`` (positive for the pair's
            first class), ``status`` (0 solved, 1 only the first class nearby,
            2 only the second, 3 nobody nearby), ``n_iter``, ``n_active``
            (examples in the local problem), ``n_support`` and ``converged``;
            plus ``sigma_sum`` of shape ``(n_samples, n_classes)`` (Σσ per
            class, for the fallback vote).
        """
        X = self._predict_prologue(X)
        m, n = X.shape[0], self.X_fit_.shape[0]
        n_pairs = len(self._pairs)
        out = Bunch(
            decision=np.zeros((m, n_pairs)),
            status=np.zeros((m, n_pairs), dtype=np.uint8),
            n_iter=np.zeros((m, n_pairs), dtype=np.int64),
            n_active=np.zeros((m, n_pairs), dtype=np.int64),
            n_support=np.zeros((m, n_pairs), dtype=np.int64),
            converged=np.ones((m, n_pairs), dtype=bool),
            sigma_sum=np.zeros((m, self.classes_.shape[0])),
        )
        if m == 0:
            return out
        probe = QPProblem(
            X=self._pairs[0].kernel_input,
            y=self._pairs[0].y,
            upper=np.full(self._pairs[0].y.shape[0], float(self.C)),
            kernel=self._pairs[0].spec,
        )
        backend = self._select_backend(probe)
        primal = getattr(self, "solver_", "dual") == "primal"
        block = max(1, BLOCK_BYTES // (16 * n))
        report = self._log_report()
        classes = (np.arange(self.classes_.shape[0])[:, None] == self.y_fit_).astype(np.float64)
        for start in range(0, m, block):
            began = time.perf_counter()
            Xb = X[start : start + block]
            chunks = self._chunks(Xb.shape[0])
            # Each chunk's similarities and cross kernel, in parallel here
            # (the similarity strategy need not exist where an engine sends
            # the solves).
            # With the primal solver the decision values come from each
            # query's model (w·x + b), not from a cross kernel.
            spec = None if primal else self._spec
            prepared = run_tasks(
                _prepare_chunk,
                chunks,
                n_jobs=self.n_jobs,
                engine="threads",
                shared=(
                    self.similarity,
                    self.X_fit_,
                    Xb,
                    self._sim_kwargs,
                    spec,
                    classes,
                    getattr(self, "_weights", None),
                ),
            )
            sigmas = [sig for sig, _, _ in prepared]
            crosses = [crs for _, crs, _ in prepared]
            queries = [np.ascontiguousarray(Xb[chunk]) for chunk in chunks] if primal else None
            for chunk, (_, _, sums) in zip(chunks, prepared, strict=True):
                out.sigma_sum[start + chunk] = sums
            tasks = [(p, c) for p in range(n_pairs) for c in range(len(chunks))]
            thread_safe = backend.capabilities.thread_safe
            # The cache budget is shared by the chunks solved at once.
            at_once = min(len(tasks), effective_n_jobs(self.n_jobs)) if thread_safe else 1
            cache = float(self.cache_size) / max(1, at_once)
            report.subtasks("chunk", len(tasks))
            # The block's σ and cross kernel travel once per batch (shared);
            # each task names a class pair and a chunk of the block's queries.
            results = run_tasks(
                _solve_chunk,
                tasks,
                n_jobs=self.n_jobs,
                thread_safe=thread_safe,
                shared=(
                    self._pairs,
                    sigmas,
                    crosses,
                    queries,
                    backend,
                    self._solver_settings(cache),
                ),
                **(report.hooks(_describe_chunk) if report.verbose >= 2 else {}),
            )
            for (p, c), res in zip(tasks, results, strict=True):
                rows = start + chunks[c]
                for key in ("decision", "status", "n_iter", "n_active", "n_support", "converged"):
                    out[key][rows, p] = getattr(res, key)
            block_rows = slice(start, start + Xb.shape[0])
            solved = out.status[block_rows] == SOLVED
            report.log(
                1,
                "LocalSVC predict: examples %d-%d, %d local problems solved, %d iterations, "
                "%d not converged, %.3f s",
                start,
                start + Xb.shape[0] - 1,
                int(solved.sum()),
                int(out.n_iter[block_rows][solved].sum()),
                int((~out.converged[block_rows][solved]).sum()),
                time.perf_counter() - began,
            )
        self._warn_unconverged(
            out.converged[out.status == SOLVED],
            "local problems",
            (
                "SMO stopped at the iteration cap ("
                + (
                    "max(100000, 1000·k) for a local problem of k examples"
                    if self.max_iter == -1
                    else f"{self.max_iter}"
                )
                + f"); with C={self.C} the local problems may be too loosely "
                "bounded to converge: lower C",
            ),
        )
        return out

    def _solver_settings(self, cache_size: float) -> dict:
        """The :class:`~localsvm.backends.base.LocalBatch` fields every local
        problem shares, with ``cache_size`` megabytes of kernel cache per chunk."""
        return dict(
            C=float(self.C),
            threshold=float(self.similarity_threshold),
            tol=float(self.tol),
            max_iter=int(self.max_iter),
            shrinking=bool(self.shrinking),
            warm_start=bool(self.warm_start),
            cache_size=float(cache_size),
            solver=getattr(self, "solver_", "dual"),
        )

    def _warn_isolated(self, details: Bunch) -> None:
        """Warn when most test examples had nobody nearby: no training example
        with ``σ ≥ similarity_threshold`` in any of their local problems
        (``status`` 3 in every pair of :meth:`decision_details`). They get
        the σ-weighted vote of all training examples, a nearest-neighbour
        rule, so the model silently degrades to one when the Gaussian
        similarity is too narrow for the data."""
        m = details.status.shape[0]
        if m == 0:
            return
        nobody = int(np.all(details.status == EMPTY, axis=1).sum())
        if nobody <= m / 2:
            return
        if self.similarity == "gaussian":
            cause = (
                f"the Gaussian similarity's bandwidth is too narrow for this data "
                f"(bandwidth_={getattr(self, 'bandwidth_', self.bandwidth):.4g}): widen "
                "bandwidth (bandwidth='scale' sets it from the data)"
            )
        else:
            cause = (
                f"the similarity {self.similarity!r} is too narrow for this data "
                "(e.g. its bandwidth): widen it"
            )
        warnings.warn(
            f"{nobody} of {m} test examples have no training example with similarity "
            f">= similarity_threshold={self.similarity_threshold:g} in their local "
            "problem: they are predicted by the similarity-weighted vote of all "
            "training examples (a nearest-neighbour rule), not by a local SVM. Most "
            f"likely {cause}, or lower similarity_threshold.",
            UserWarning,
            stacklevel=3,
        )

    def _votes(self, details: Bunch) -> np.ndarray:
        """Per-class scores: ovo votes (a one-class neighbourhood votes for its
        class) with the σ-weighted fallback where no pair voted."""
        votes = ovo_votes(details.decision, self.classes_.shape[0], abstain=details.status == EMPTY)
        nobody = votes.sum(1) == 0
        if np.any(nobody):
            weights = details.sigma_sum[nobody]
            none = weights.sum(1) == 0
            weights[none] = self.class_counts_
            votes[nobody] = weights / weights.sum(1, keepdims=True)
        return votes

    def decision_function(self, X):
        """Evaluate each row's local decision function.

        Parameters
        ----------
        {X_local}

        Returns
        -------
        ndarray of shape (n_samples,) or (n_samples, n_classes)
            Two classes: the local decision value of each row, positive for
            ``classes_[1]`` (±1 for a one-class neighbourhood, the σ-weighted
            vote's margin when nobody is nearby). More classes: one score per
            class, votes plus a confidence in (−⅓, ⅓), as
            :class:`localsvm.SVC` (pairs without training examples nearby
            abstain; the σ-weighted vote's shares when every pair does).
        """
        details = self.decision_details(X)
        self._warn_isolated(details)
        if self.classes_.shape[0] == 2:
            dec = -details.decision[:, 0]
            nobody = details.status[:, 0] == EMPTY
            if np.any(nobody):
                votes = self._votes(Bunch(**{k: v[nobody] for k, v in details.items()}))
                dec[nobody] = votes[:, 1] - votes[:, 0]
            return dec
        empty = details.status == EMPTY
        scores = ovo_to_ovr(details.decision, self.classes_.shape[0], abstain=empty)
        nobody = np.all(empty, axis=1)
        if np.any(nobody):
            # The σ-weighted fallback that predict uses there.
            scores[nobody] = self._votes(Bunch(**{k: v[nobody] for k, v in details.items()}))
        return scores

    def predict(self, X):
        """Predict the class of each sample with its local SVM.

        Parameters
        ----------
        {X_local}

        Returns
        -------
        ndarray of shape (n_samples,)
            The predicted labels, taken from ``classes_``.
        """
        details = self.decision_details(X)
        self._warn_isolated(details)
        votes = self._votes(details)
        if self.classes_.shape[0] == 2:
            # The decision values (the fallback vote's margin where nobody is
            # nearby) by the two-class rule: a tie predicts classes_[1].
            dec = np.where(
                details.status[:, 0] == EMPTY, votes[:, 1] - votes[:, 0], -details.decision[:, 0]
            )
            return self.classes_[binary_index(dec)]
        return self.classes_[np.argmax(votes, axis=1)]
