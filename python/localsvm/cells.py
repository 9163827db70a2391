"""Cells of the training data in kernel space: the divide step of
divide-and-conquer kernel SVMs.

C.-J. Hsieh, S. Si and I. S. Dhillon, "A Divide-and-Conquer Solver for
Kernel SVMs", International Conference on Machine Learning (ICML), 2014,
partition the data by kernel k-means, because the kernel mass between
clusters, ``Σ_{π(i) ≠ π(j)} |K(x_i, x_j)|``, bounds how far the solutions of
the independent cell problems lie from the global solution (their
Theorem 1); and, as there, kernel k-means runs on a random sample, every
example then going to the cell whose sampled members are nearest in kernel
space (their two-step kernel k-means).

:func:`kernel_kmeans` is that clustering; :class:`CellPartition` keeps what
routing needs (the sampled members of each cell and each cell's
self-similarity) so that training and new examples are assigned by the
same rule. :func:`partition_cells` is the one-call form.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from sklearn.utils import check_random_state

from ._docstrings import fill
from .kernels import KernelSpec, kernel_matrix

__all__ = ["CellPartition", "fit_cells", "kernel_kmeans", "partition_cells"]

#: The kernel k-means sample's Gram matrix takes at most this many bytes
#: (``m ≤ 4096`` sampled examples).
SAMPLE_GRAM_BYTES = 128 << 20

#: Sampled examples per cell by default (at least ``MIN_SAMPLE`` in all):
#: routing an example costs one kernel value per sampled example.
SAMPLE_PER_CELL = 20

#: The smallest default sample.
MIN_SAMPLE = 2000

#: Lloyd iterations of kernel k-means on the sample.
KMEANS_MAX_ITER = 30

#: :func:`fit_cells`: a cell that receives more than this many times
#: ``ceil(n / n_cells)`` rows is cut by kernel k-means of its own members,
#: for at most ``SPLIT_ROUNDS`` rounds.
SPLIT_FACTOR = 2.0
SPLIT_ROUNDS = 3

#: Examples routed at once by one thread: bounds their ``block × m``
#: float32 kernel block.
ROUTE_BLOCK_BYTES = 16 << 20


#: ``routing='soft'``: a row whose nearest cell weighs more than
#: ``1 − SOFT_NEGLIGIBLE`` takes that cell's value alone.
SOFT_NEGLIGIBLE = 1e-4


def two_nearest(S: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The columns of each row's smallest and second smallest score in
    ``S`` (``rows × cells``, at least two), ties to the lower column: the
    first two of a stable ``argsort`` of the row, found by two ``argmin``
    passes instead of a sort (at 5 000 cells, 0.06 s for 20 000 rows where
    the sort took 12 s). ``S`` is left as it was."""
    at = np.arange(S.shape[0])
    first = np.argmin(S, axis=1)
    best = S[at, first]
    S[at, first] = np.inf
    second = np.argmin(S, axis=1)
    S[at, first] = best
    # A row whose other scores are all +inf, or that holds NaN: the sort.
    odd = np.flatnonzero((second == first) | np.isnan(best) | np.isnan(S[at, second]))
    if odd.size:
        two = np.argsort(S[odd], axis=1, kind="stable")[:, :2]
        first[odd], second[odd] = two[:, 0], two[:, 1]
    return first, second


def soft_weights(margin: np.ndarray, reach: np.ndarray, scale: float) -> np.ndarray:
    """``routing='soft'``: the weight of each row's nearest cell (the second
    nearest takes the rest).

    ``margin`` is ``s₂ − s₁ ≥ 0``, the row's kernel distances to its two
    nearest cells; ``reach`` is the second cell's overlap reach ``τ``, the
    largest such gap of the rows of other cells it trained on (0 for a cell
    without overlap). The second cell's share is
    ``(1 − σ(margin / scale)) · f(margin / τ)`` with σ the logistic function
    and ``f(t) = 1 − 3t² + 2t³`` on ``[0, 1]``, 0 beyond: the logistic blend
    near the border (``f ≈ 1`` for ``margin ≪ τ``), fading smoothly to
    nothing at the reach, so a row where the second cell never trained
    (``margin ≥ τ``) takes its own cell's value alone, and the weight is
    continuous in ``margin``.
    """
    margin = np.asarray(margin, dtype=np.float64)
    reach = np.asarray(reach, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        t = np.where(reach > 0, margin / reach, np.inf)
        fade = np.where(t < 1.0, 1.0 - t * t * (3.0 - 2.0 * t), 0.0)
        other = fade / (1.0 + np.exp(margin / scale))
    return 1.0 - other


def _sample_size(n: int, n_cells: int) -> int:
    cap = math.isqrt(SAMPLE_GRAM_BYTES // 8)
    return int(min(n, cap, max(MIN_SAMPLE, SAMPLE_PER_CELL * n_cells)))


def kernel_kmeans(
    K: np.ndarray, n_clusters: int, *, random_state=None, max_iter: int = KMEANS_MAX_ITER
) -> np.ndarray:
    """Kernel k-means (Lloyd's iterations in the kernel's feature space).

    The squared distance of example ``i`` to the mean of cluster ``c`` is
    ``K_ii − 2·mean_{j∈c} K_ij + mean_{j,l∈c} K_jl``. Seeds are chosen by
    k-means++ in kernel space; a cluster that empties is re-seeded with the
    example farthest from its own cluster's mean.

    Parameters
    ----------
    K : ndarray of shape (m, m)
        Symmetric kernel matrix of the examples.
    n_clusters : int
        Number of clusters, at most ``m``.
    random_state : int, RandomState instance or None, default=None
        Seeds the k-means++ draw.
    max_iter : int, default=30
        Iteration cap (the assignment usually settles in far fewer).

    Returns
    -------
    ndarray of shape (m,)
        The cluster of each example, in ``[0, n_clusters)``; every cluster is
        non-empty.
    """
    m = K.shape[0]
    k = int(n_clusters)
    if not 1 <= k <= m:
        raise ValueError(f"n_clusters={k} must lie in [1, {m}] (the number of examples)")
    rng = check_random_state(random_state)
    diag = np.diag(K).copy()
    # k-means++ seeding: distances ‖φ(x_i) − φ(x_s)‖² = K_ii − 2K_is + K_ss.
    seeds = [int(rng.randint(m))]
    d2 = np.maximum(diag - 2 * K[:, seeds[0]] + diag[seeds[0]], 0.0)
    for _ in range(1, k):
        total = d2.sum()
        s = int(rng.choice(m, p=d2 / total)) if total > 0 else int(rng.randint(m))
        seeds.append(s)
        d2 = np.minimum(d2, np.maximum(diag - 2 * K[:, s] + diag[s], 0.0))
    dist = diag[:, None] - 2 * K[:, seeds] + diag[seeds][None, :]
    labels = np.argmin(dist, axis=1)
    for _ in range(max_iter):
        labels = _fill_empty(labels, dist, k)
        Z = np.zeros((m, k))
        Z[np.arange(m), labels] = 1.0
        sizes = Z.sum(axis=0)
        KZ = K @ Z
        within = np.einsum("ic,ic->c", Z, KZ) / sizes**2
        dist = diag[:, None] - 2 * KZ / sizes + within
        new = np.argmin(dist, axis=1)
        if np.array_equal(new, labels):
            break
        labels = new
    return _fill_empty(labels, dist, k)


def _fill_empty(labels: np.ndarray, dist: np.ndarray, k: int) -> np.ndarray:
    """Give each empty cluster the example farthest from its own mean (one
    that is not the only member of its cluster)."""
    labels = labels.copy()
    sizes = np.bincount(labels, minlength=k)
    for c in np.flatnonzero(sizes == 0):
        own = dist[np.arange(labels.shape[0]), labels]
        own = np.where(sizes[labels] > 1, own, -np.inf)
        i = int(np.argmax(own))
        sizes[labels[i]] -= 1
        labels[i] = c
        sizes[c] = 1
    return labels


#: ``X`` and ``n_jobs`` of the methods that score rows against the cells.
_ROWS_PARAMS = """\
X : ndarray of shape (n, n_features)
    The examples.
n_jobs : int, default=1
    Threads computing blocks of rows at once."""

#: The first parameters of the functions that partition ``X`` into cells.
_CELLS_PARAMS = """\
X : ndarray of shape (n, n_features)
    The examples.
n_cells : int
    Number of cells aimed at, in ``[1, n]``.
spec : KernelSpec
    The kernel (not 'precomputed').
random_state : int, RandomState instance or None, default=None
    Seeds the samples and the clustering."""


def _check_float32(values: np.ndarray, X, RT: np.ndarray) -> None:
    """Refuse routing values that float32 cannot hold: an overflow (to
    ``inf``, or ``inf − inf = NaN``) would send rows to cells by nothing
    (``exp(−inf) = 0`` and ``tanh(inf) = 1`` hide it), in silence."""
    if np.isfinite(values).all():
        return
    top = float(np.abs(X).max()) if X.shape[0] else 0.0
    raise ValueError(
        "the cells route rows by kernel values computed in float32, which overflow "
        f"for these rows (largest |x| = {top:.3g}, largest |representative| = "
        f"{float(np.abs(RT[np.isfinite(RT)]).max(initial=0.0)):.3g} after the kernel's "
        "scaling): scale the features (e.g. StandardScaler), or lower gamma"
    )


@fill(rows_params=_ROWS_PARAMS)
@dataclass
class CellPartition:
    """Cells in kernel space, represented by sampled members.

    An example ``x`` goes to the cell ``c`` that minimises
    ``mean_{j,l∈S_c} K(r_j, r_l) − 2·mean_{j∈S_c} K(x, r_j)``, its squared
    kernel distance to the mean of the cell's sampled members ``S_c`` (up to
    ``K(x, x)``, the same for every cell).

    Parameters
    ----------
    spec : KernelSpec
        The kernel.
    representatives : ndarray of shape (m, n_features)
        The sampled members of all cells.
    representative_cells : ndarray of shape (m,)
        The cell of each representative.
    within : ndarray of shape (n_cells,)
        ``mean_{j,l∈S_c} K(r_j, r_l)`` of each cell.
    """

    spec: KernelSpec
    representatives: np.ndarray
    representative_cells: np.ndarray
    within: np.ndarray

    @property
    def n_cells(self) -> int:
        """The number of cells."""
        return int(self.within.shape[0])

    def _prepared(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The representatives as float32 rows grouped by cell (for RBF with
        a last column ``−γ‖r‖²`` and scaled by ``2γ``, so one product gives
        ``−γ‖x − r‖² + γ‖x‖²``), each cell's first row among them, ``1/|S_c|``
        and, for the linear kernel, the cells' means."""
        order = np.argsort(self.representative_cells, kind="stable")
        cells = self.representative_cells[order]
        R = self.representatives[order]
        starts = np.flatnonzero(np.r_[True, cells[1:] != cells[:-1]])
        inv = (1.0 / np.diff(np.r_[starts, cells.shape[0]])).astype(np.float32)
        means = np.add.reduceat(R, starts, axis=0) * inv[:, None]
        if self.spec.name == "rbf":
            g = self.spec.gamma
            R = np.column_stack([2.0 * g * R, -g * (R * R).sum(axis=1)])
        with np.errstate(over="ignore"):
            # An overflow here is refused by the first block's scores.
            return np.ascontiguousarray(R.T, dtype=np.float32), starts, inv, means

    def _block_scores(self, X: np.ndarray, prepared) -> np.ndarray:
        """:meth:`scores` of one block of rows, in float32 (kernel values
        for routing only: the same rule for training and new examples)."""
        spec = self.spec
        RT, starts, inv, means = prepared
        with np.errstate(over="ignore"):
            within = self.within.astype(np.float32)
        if spec.name == "linear":
            with np.errstate(over="ignore", invalid="ignore"):
                S = within - 2 * (X @ means.T).astype(np.float32)
            _check_float32(S, X, RT)
            return S
        with np.errstate(over="ignore", invalid="ignore"):
            Xb = np.asarray(X, dtype=np.float32)
            if spec.name == "rbf":
                g = np.float32(spec.gamma)
                K = np.column_stack([Xb, np.ones(Xb.shape[0], dtype=np.float32)]) @ RT
                K -= g * (Xb * Xb).sum(axis=1)[:, None]
                _check_float32(K, X, RT)
                np.minimum(K, 0.0, out=K)
                np.exp(K, out=K)
            else:
                K = Xb @ RT
                K *= np.float32(spec.gamma)
                K += np.float32(spec.coef0)
                if spec.name == "poly":
                    K **= spec.degree
                elif spec.name == "sigmoid":
                    _check_float32(K, X, RT)
                    np.tanh(K, out=K)
                else:  # pragma: no cover - guarded by the estimators' constraints
                    raise ValueError(f"cells need a kernel function, not {spec.name!r}")
                _check_float32(K, X, RT)
        # Each cell's mean kernel value: sums over its (contiguous) columns.
        # With one representative per cell (as many cells as sampled rows)
        # the sums are the values themselves; numpy's reduceat would pay a
        # call per row and cell for the same numbers. The arithmetic after
        # it runs in place, in the same order and precision.
        S = K if starts.shape[0] == K.shape[1] else np.add.reduceat(K, starts, axis=1)
        S *= inv
        S *= np.float32(2.0)
        return np.subtract(within, S, out=S)

    def scores(self, X: np.ndarray, n_jobs: int = 1, *, by_cell: bool = False) -> np.ndarray:
        """Squared kernel distances of the rows of ``X`` to each cell's mean,
        less ``K(x, x)``; shape ``(len(X), n_cells)``, float32.

        Parameters
        ----------
        {rows_params}
        by_cell : bool, default=False
            Return the transpose, ``(n_cells, len(X))`` and C-ordered (one
            cell's scores contiguous), without a second copy.

        Returns
        -------
        ndarray of shape (n, n_cells), or (n_cells, n) with ``by_cell``
            The scores; the smallest is the example's cell.
        """
        shape = (self.n_cells, X.shape[0]) if by_cell else (X.shape[0], self.n_cells)
        out = np.empty(shape, dtype=np.float32)
        view = out.T if by_cell else out

        def take(start, S):
            view[start : start + S.shape[0]] = S

        self._each_block(X, n_jobs, take)
        return out

    def _each_block(self, X: np.ndarray, n_jobs: int, take) -> None:
        """``take(start, S)`` for the scores ``S`` of each block of rows of
        ``X`` from ``start`` (:data:`ROUTE_BLOCK_BYTES` of scores each): in
        this thread, or in ``n_jobs`` threads (each with one BLAS thread)
        when there are several blocks."""
        from concurrent.futures import ThreadPoolExecutor

        from .parallel import one_blas_thread

        prepared = self._prepared()
        block = max(1, ROUTE_BLOCK_BYTES // (4 * max(self.representatives.shape[0], 1)))
        starts = range(0, X.shape[0], block)

        def one(start):
            take(start, self._block_scores(X[start : start + block], prepared))

        if n_jobs <= 1 or len(starts) <= 1:
            for start in starts:
                one(start)
            return
        with one_blas_thread(), ThreadPoolExecutor(n_jobs) as pool:
            list(pool.map(one, starts))

    def split(
        self, X: np.ndarray, labels: np.ndarray, cells, size: int, random_state=None
    ) -> tuple[CellPartition, dict[int, np.ndarray]]:
        """The partition with each of ``cells`` cut by kernel k-means of its
        own members into ``ceil(|cell| / size)`` cells (its first part keeps
        its index, the others are appended), so no cell grows far beyond a
        budget however unevenly kernel k-means of the whole sample divided
        the data.

        Parameters
        ----------
        X : ndarray of shape (n, n_features)
            The examples ``labels`` routes.
        labels : ndarray of shape (n,)
            Each example's cell under this partition.
        cells : iterable of int
            The cells to cut.
        size : int
            The examples per cell aimed at.
        random_state : int, RandomState instance or None, default=None
            Seeds the members sampled and the clustering.

        Returns
        -------
        CellPartition
            The finer partition.
        dict
            For each cell cut, the sorted indices of its parts.
        """
        rng = check_random_state(random_state)
        parts_of: dict[int, np.ndarray] = {}
        reps = [self.representatives]
        rep_cells = [self.representative_cells.copy()]
        within = list(self.within)
        for c in cells:
            members = np.flatnonzero(labels == c)
            parts = math.ceil(members.size / size)
            if parts < 2:
                continue
            m = min(members.size, _sample_size(members.size, parts))
            sample = np.sort(rng.choice(members, m, replace=False))
            rows = np.ascontiguousarray(X[sample], dtype=np.float64)
            K = kernel_matrix(self.spec, rows, rows)
            sub = kernel_kmeans(K, parts, random_state=rng)
            ids = np.array([c, *range(len(within), len(within) + parts - 1)])
            parts_of[int(c)] = ids
            for j in range(parts):
                inside = sub == j
                mean_k = float(K[np.ix_(inside, inside)].mean())
                if j == 0:
                    within[c] = mean_k
                else:
                    within.append(mean_k)
            # The cell's old representatives give way to its parts'.
            rep_cells[0][rep_cells[0] == c] = -1
            reps.append(rows)
            rep_cells.append(ids[sub])
        all_cells = np.concatenate(rep_cells)
        keep = all_cells >= 0
        finer = CellPartition(
            self.spec,
            np.concatenate(reps)[keep],
            all_cells[keep],
            np.asarray(within, dtype=np.float64),
        )
        return finer, parts_of

    def restrict(self, cells: np.ndarray) -> CellPartition:
        """The partition with only ``cells`` (sorted indices), renumbered
        ``0 .. len(cells) − 1``; the others are never chosen again.

        Parameters
        ----------
        cells : ndarray of int
            The cells to keep, sorted.

        Returns
        -------
        CellPartition
            The smaller partition.
        """
        keep = np.isin(self.representative_cells, cells)
        return CellPartition(
            self.spec,
            self.representatives[keep],
            np.searchsorted(cells, self.representative_cells[keep]),
            self.within[cells],
        )

    def assign(self, X: np.ndarray, n_jobs: int = 1) -> np.ndarray:
        """The cell of each row of ``X`` (ties to the lowest index).

        Parameters
        ----------
        {rows_params}

        Returns
        -------
        ndarray of shape (n,)
            The cell of each row.
        """
        # The blocks of :meth:`scores`, each reduced as it comes (the whole
        # score matrix is rows × cells).
        out = np.empty(X.shape[0], dtype=np.intp)

        def take(start, S):
            out[start : start + S.shape[0]] = np.argmin(S, axis=1)

        self._each_block(X, n_jobs, take)
        return out

    @classmethod
    def fit(
        cls,
        X: np.ndarray,
        n_cells: int,
        *,
        spec: KernelSpec,
        random_state=None,
        sample_size: int | None = None,
    ) -> CellPartition:
        """Cluster a sample of ``X`` by kernel k-means into ``n_cells`` cells.

        Parameters
        ----------
        X : ndarray of shape (n, n_features)
            The examples.
        n_cells : int
            Number of cells, in ``[1, n]``.
        spec : KernelSpec
            The kernel (not 'precomputed').
        random_state : int, RandomState instance or None, default=None
            Seeds the sample and the clustering.
        sample_size : int or None, default=None
            Examples clustered; None: ``max(2000, 20·n_cells)``, at most
            ``n`` and 4096 (so the sample's kernel matrix stays within
            128 MiB).

        Returns
        -------
        CellPartition
            The partition, ready to :meth:`assign` examples.
        """
        n = X.shape[0]
        if not 1 <= n_cells <= n:
            raise ValueError(
                f"the number of cells ({n_cells}) must lie in [1, {n}] (the number of examples)"
            )
        rng = check_random_state(random_state)
        m = _sample_size(n, n_cells) if sample_size is None else int(min(sample_size, n))
        m = max(m, n_cells)
        idx = np.sort(rng.choice(n, m, replace=False)) if m < n else np.arange(n)
        reps = np.ascontiguousarray(X[idx], dtype=np.float64)
        if n_cells == m:
            # As many cells as sampled rows (10⁷ rows of 2000-row cells):
            # each row is its own cell, found without the m × m matrices.
            found = _singleton_cells(spec, reps, rng)
            if found is not None:
                return cls(spec, reps, *found)
        K = kernel_matrix(spec, reps, reps)
        labels = kernel_kmeans(K, n_cells, random_state=rng)
        Z = np.zeros((m, n_cells))
        Z[np.arange(m), labels] = 1.0
        Z /= Z.sum(axis=0)
        within = np.einsum("ic,ic->c", Z, K @ Z)
        return cls(spec, reps, labels, within)


#: :func:`_singleton_cells` evaluates the kernel in blocks of this many bytes.
SINGLETON_BLOCK_BYTES = 16 << 20


def _singleton_cells(spec: KernelSpec, reps: np.ndarray, rng):
    """:func:`kernel_kmeans` of ``reps`` into as many clusters as rows,
    without its ``m × m`` matrices (five of them at once, 1 GB at
    ``m = 5000``): the same k-means++ draws (``rng``), with the kernel's
    columns computed one seed at a time, then each row's nearest seed in
    blocks of rows. When every row is nearest its own seed, Lloyd's
    iterations stop at once and the clusters are the seeds (their cells and
    ``within`` are returned: the values the matrices give, bit for bit);
    otherwise (repeated rows, a kernel that is not a distance) None, with
    ``rng`` as it was, for the dense route."""
    m = reps.shape[0]
    state = rng.get_state()
    block = max(1, SINGLETON_BLOCK_BYTES // (8 * m))
    diag = np.empty(m)
    for s in range(0, m, block):
        diag[s : s + block] = np.diag(kernel_matrix(spec, reps[s : s + block], reps[s : s + block]))

    def column(s):
        return kernel_matrix(spec, reps, reps[s : s + 1])[:, 0]

    seeds = [int(rng.randint(m))]
    d2 = np.maximum(diag - 2 * column(seeds[0]) + diag[seeds[0]], 0.0)
    for i in range(1, m):
        total = d2.sum()
        s = int(rng.choice(m, p=d2 / total)) if total > 0 else int(rng.randint(m))
        seeds.append(s)
        if i + 1 < m:
            d2 = np.minimum(d2, np.maximum(diag - 2 * column(s) + diag[s], 0.0))
    seeds = np.asarray(seeds)
    own = np.full(m, -1, dtype=np.intp)
    own[seeds] = np.arange(m)
    if np.all(own >= 0):
        centres, centre_diag = reps[seeds], diag[seeds]
        for s in range(0, m, block):
            D = diag[s : s + block, None] - 2 * kernel_matrix(spec, reps[s : s + block], centres)
            D += centre_diag[None, :]
            if not np.array_equal(np.argmin(D, axis=1), own[s : s + block]):
                break
        else:
            return own, centre_diag
    rng.set_state(state)
    return None


def cut_large_cells(
    partition: CellPartition,
    X: np.ndarray,
    labels: np.ndarray,
    budget: int,
    random_state,
    n_jobs: int = 1,
) -> CellPartition:
    """Cut the cells that hold more than ``SPLIT_FACTOR * budget`` rows of
    ``X``, by kernel k-means of their own members
    (:meth:`CellPartition.split`), for at most ``SPLIT_ROUNDS`` rounds; only
    the cut cells' members are routed again, among their parts.

    Parameters
    ----------
    partition : CellPartition
        The cells.
    X : ndarray of shape (n, n_features)
        The rows routed to them.
    labels : ndarray of shape (n,)
        Each row's cell; updated in place as cells are cut.
    budget : int
        The rows a cell is meant to hold.
    random_state : RandomState instance
        Seeds the clustering of the cut cells.
    n_jobs : int, default=1
        Threads routing blocks of rows at once.

    Returns
    -------
    CellPartition
        The partition after the cuts: ``partition`` itself when no cell was cut.
    """
    for _ in range(SPLIT_ROUNDS):
        sizes = np.bincount(labels, minlength=partition.n_cells)
        large = np.flatnonzero(sizes > SPLIT_FACTOR * budget)
        if large.size == 0:
            break
        partition, parts_of = partition.split(X, labels, large, budget, random_state=random_state)
        for c, ids in parts_of.items():
            members = np.flatnonzero(labels == c)
            labels[members] = ids[partition.restrict(ids).assign(X[members], n_jobs)]
    return partition


@fill(cells_params=_CELLS_PARAMS)
def fit_cells(
    X: np.ndarray,
    n_cells: int,
    *,
    spec: KernelSpec,
    random_state=None,
    sample_size: int | None = None,
    n_jobs: int = 1,
) -> tuple[CellPartition, np.ndarray]:
    """Cells of ``X`` by two-step kernel k-means, held to a budget.

    Kernel k-means clusters a sample (:meth:`CellPartition.fit`) and every
    row goes to its nearest cell. Kernel k-means may leave one cell holding
    much of the data (a local kernel attaches far examples to the most
    diffuse cell), so a cell that receives more than ``SPLIT_FACTOR`` times
    ``ceil(n / n_cells)`` rows is cut by kernel k-means of its own members
    (:meth:`CellPartition.split`), for at most ``SPLIT_ROUNDS`` rounds:
    between cuts only the cut cells' members are routed again, among their
    parts, and one pass over all rows then fixes the cells. Cells that
    receive no row are dropped.

    Parameters
    ----------
    {cells_params}
    sample_size : int or None, default=None
        Examples clustered (see :meth:`CellPartition.fit`).
    n_jobs : int, default=1
        Threads routing blocks of rows at once.

    Returns
    -------
    partition : CellPartition
        The cells, each of which received at least one row.
    scores : ndarray of shape (partition.n_cells, n)
        The rows' routing scores, cell-major (:meth:`CellPartition.scores`
        with ``by_cell=True``); a row's cell is its smallest.
    """
    rng = check_random_state(random_state)
    n = X.shape[0]
    partition = CellPartition.fit(X, n_cells, spec=spec, random_state=rng, sample_size=sample_size)
    scores = partition.scores(X, n_jobs, by_cell=True)
    labels = np.argmin(scores, axis=0)
    before = partition
    partition = cut_large_cells(partition, X, labels, math.ceil(n / n_cells), rng, n_jobs)
    if partition is not before:
        scores = partition.scores(X, n_jobs, by_cell=True)
        labels = np.argmin(scores, axis=0)
    used = np.unique(labels)
    if used.size < partition.n_cells:
        # The routing rule then never picks them, and no row's cell changes.
        partition = partition.restrict(used)
        scores = scores[used]
    return partition, scores


@fill(cells_params=_CELLS_PARAMS)
def partition_cells(X: np.ndarray, n_cells: int, *, spec: KernelSpec, random_state=None):
    """The cell of every row of ``X`` after two-step kernel k-means held to
    its budget (:func:`fit_cells`).

    Parameters
    ----------
    {cells_params}

    Returns
    -------
    ndarray of shape (n,)
        The cell of each row, in ``[0, c)`` with every one of the ``c`` cells
        used; ``c`` may exceed ``n_cells`` where a cell beyond the budget was
        cut.
    """
    _, scores = fit_cells(X, n_cells, spec=spec, random_state=random_state)
    return np.argmin(scores, axis=0)
