""":class:`localsvm.CellSVC` on data no single array holds: a Dask collection
spread over a cluster's workers, or an array read from disk in chunks (a
NumPy memmap, or any 2-D array-like with ``shape``, ``dtype`` and row slicing).

The fit is the in-memory one (two-step kernel k-means cells, overlapping
cells, one SVM per cell; C.-J. Hsieh, S. Si and I. S. Dhillon, "A
Divide-and-Conquer Solver for Kernel SVMs", ICML 2014; I. Steinwart and
P. Thomann, "liquidSVM: A Fast and Versatile SVM Package", arXiv:1702.06899,
2017) reorganised as passes over blocks of rows, each block handled where it
lives:

1. *stats*: each block is checked (dtype, finiteness: the first bad block and
   row are named), its sum and sum of squared deviations (for
   ``gamma='scale'``) and its labels are reduced, and the rows of the
   kernel k-means sample that fall in it are taken. The sample is drawn as
   the in-memory fit draws it (``sample_size`` rows chosen without
   replacement by ``random_state``), so only ``sample_size`` rows reach the
   client.
2. The client clusters the sample by kernel k-means; a cell holding more
   than twice its share of the *sample* is cut by kernel k-means of its
   sampled members (the in-memory fit cuts on all the rows).
3. *route*: every block is routed; the cells' sizes, a log-spaced histogram
   of each cell's gaps ``s_j(x) − s_own(x)`` over the rows of other cells,
   and one of the margins between each row's two nearest cells come back.
   From them the client sets per cell the gap under which
   ``overlap · |cell|`` rows of other cells join it (interpolated within one
   histogram bin: the overlap's size is met to about one bin's count; the
   gap is the cell's ``cell_overlap_reach_``, which soft routing's weights
   use as the in-memory fit's) and ``routing_scale_`` (the margins' 5th
   percentile, interpolated the same way).
4. *members*: every block lists, per cell, its rows that train the cell
   (its members and the overlap below the gap). A chunked array is routed
   again for them. On Dask the routing pass has kept them: each block kept
   on its worker, per cell, its rows whose gap lies below a ceiling set
   beforehand from rows at a fixed stride (routed on the client), and the
   histograms counted those gaps, which is the whole histogram below the
   ceiling; when a cell's gap falls within two bins of its ceiling the
   blocks are routed twice as a chunked array is, so either way the cells
   train on the same rows.
5. *cells*: each cell's rows are gathered (from the blocks, in row order, so
   a cell trains on the rows the same selection takes from an in-memory
   array) and its SVM trained, in waves of cells; the models come back to
   the client, or, when too large for it, each wave's are written to files
   on the workers that trained them (:class:`ClusterModels`).

Prediction routes and labels each block of the test data by itself.
"""

from __future__ import annotations

import copy
import math
import os
import pickle
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from numbers import Integral
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import check_random_state

from ._base import balanced_class_factors
from ._memory import check_memory
from .cells import (
    SOFT_NEGLIGIBLE,
    CellPartition,
    _sample_size,
    cut_large_cells,
)
from .kernels import KernelSpec
from .svc import SVC

__all__ = ["ClusterModels", "input_kind", "is_dask_collection"]

#: ``routing='soft'``: the scale of the weights is this quantile of the
#: training examples' margins ``s₂ − s₁`` between their two nearest cells.
#: On the generated 200 000-row problem of ``bench scale`` hard routing gave
#: 86.72 %, the 5 %, 10 % and 50 % quantiles 86.88, 86.92 and 86.98 %; on
#: ijcnn1 (C = 1) 98.18 % against 98.18, 98.11 and 97.88 %: the 5 %
#: quantile gains where blending helps and costs nothing where it does not
#: (measured with the logistic blend alone; the overlap reach that now
#: bounds it changed neither figure by more than 0.01 point:
#: ``python -m localsvm_benchmarks.routing``).
SOFT_QUANTILE = 0.05

#: Rows of a chunked (memmap) array read at once: this many bytes of it.
CHUNK_BYTES = 32 << 20

#: Routing scores of one sub-block of rows: at most this many bytes.
SCORE_BLOCK_BYTES = 16 << 20

#: Bins of the gap and margin histograms (log-spaced between a floor and a
#: ceiling taken from the sample's own gaps; the first bin reaches 0 and the
#: last is open).
HIST_BINS = 256

#: The Dask fit routes its rows once: each block keeps, per cell, its rows
#: whose gap lies below a ceiling (and their gaps) on the worker, and the
#: members are picked from them once the overlap gaps are known, instead of
#: routing every row a second time. The ceilings come from the rows at a
#: fixed stride (``CAP_SAMPLE_PER_CELL`` per cell): per cell the gap under
#: which ``CAP_FACTOR`` times the overlap it needs (its strided count taken
#: two standard deviations high), plus ``CAP_SLACK`` rows, of the strided
#: rows lie, ``CAP_MARGIN_BINS`` histogram bins higher. A cell
#: whose overlap gap is not then known exactly (more than two bins under its
#: ceiling) sends the fit back to routing every row twice.
CAP_SAMPLE_PER_CELL = 40
CAP_FACTOR = 2.0
CAP_SLACK = 8
CAP_MARGIN_BINS = 3

#: The Dask fit gathers the cells in waves; a wave's rows take at most this
#: share of the workers' memory limits together. A worker holds its
#: blocks' pieces of a wave and the pieces its cells receive from the
#: others: at a tenth, with 2 workers of 512 MiB, about 100 MiB, on top of
#: the 200 to 250 MiB of an idle worker process and a cell's solve, which
#: passed Distributed's spill threshold (70 % of the limit) at 2·10⁶ rows and
#: its pause threshold (80 %) at 10⁷. Smaller waves cost one more read of
#: every block per wave.
WAVE_MEMORY_SHARE = 0.03

#: The Dask fit sends a block's rows of a wave's cells out in groups of
#: cells whose rows take about this many bytes (one task output each).
PIECE_GROUP_BYTES = 16 << 20

#: A cell's SVM may use at most this share of one worker's memory limit.
CELL_MEMORY_SHARE = 0.5

#: On a Dask cluster each cell's kernel cache takes at most this share of
#: one worker's memory limit, divided among the worker's threads (and at
#: most ``cache_size``): 26 MiB at 512 MiB. A cell's SVM reads its columns
#: again from a smaller cache, to the same model; its default 200 MB (or a
#: cell's whole kernel matrix, 100 MB in float32 for 5 000 rows) beside an
#: idle worker process of 200 to 250 MiB pushed 512 MiB workers past
#: Distributed's pause threshold at every large cell.
CELL_CACHE_SHARE = 0.05

#: The cells' SVMs of a Dask fit come back to the client when together they
#: take at most this share of one worker's memory limit (the blockwise
#: prediction sends the whole model to every worker; judged from the first
#: wave's models, scaled to all the cells' rows); beyond it they stay on the
#: workers that trained them, and prediction goes to them.
MODEL_MEMORY_SHARE = 0.05

#: Prediction by cell models kept on the workers routes blocks of test rows
#: whose float64 copy takes at most this share of one worker's memory limit
#: (larger blocks are cut: 83 886 rows of 16 features at 512 MiB).
PREDICT_BLOCK_SHARE = 0.02

#: Cells kept on the workers are packed in groups of at most this share of
#: one worker's memory limit (one prediction task loads one group).
PACK_MEMORY_SHARE = 0.04


class _CellSVM(SVC):
    """One cell's SVC: its unconverged solves are counted by the
    :class:`CellSVC` that owns it (one warning for all cells), not warned
    about cell by cell."""

    def _warn_unconverged(self, converged, what, reasons=()) -> bool:
        return not all(bool(c) for c in converged)

    @property
    def support_vectors_(self):
        sv = self.__dict__.get("_sv")
        if sv is None:
            raise AttributeError("support_vectors_")
        # Kept as float32 when the training rows were float32 values (the
        # cast back is exact); the core evaluates float64 arrays.
        return sv if sv.dtype == np.float64 else sv.astype(np.float64)

    @support_vectors_.setter
    def support_vectors_(self, value):
        self.__dict__["_sv"] = value

    def _keep_float32(self) -> None:
        """Store the support vectors as float32 (half the model's bytes):
        exact when the rows the cell trained on were float32 values, and
        the same decision values when the model was solved in float32
        (``precision_``), whose prediction computes the kernel from float32
        copies of the support vectors (test rows beyond float32's safe
        range, which switch prediction to float64, would see them rounded
        to float32)."""
        sv = self.__dict__.get("_sv")
        if isinstance(sv, np.ndarray) and sv.dtype == np.float64:
            self.__dict__["_sv"] = sv.astype(np.float32)

    def _model_bytes(self) -> int:
        """Bytes of the arrays the model keeps."""
        return sum(v.nbytes for v in self.__dict__.values() if isinstance(v, np.ndarray))

    def __sizeof__(self) -> int:
        # What Dask's memory manager counts for a model held by a worker.
        return object.__sizeof__(self) + self._model_bytes()


#: What :func:`tune_cell` reports for a cell without an SVM.
NO_CHOICE = (np.nan, np.nan, np.nan, False, 0.0, ())


def tune_cell(X, y_idx, weights, params: dict, search: dict | None, seed: int):
    """One cell's SVM on its rows ``X`` (class indices ``y_idx``, factors of
    ``C`` ``weights`` or None), with ``search`` (``CellSVC(tune=True)``)
    its ``(C, gamma)`` chosen first by :class:`localsvm.SVCCV`'s search on
    up to ``search['tune_size']`` of the rows (a random subsample drawn by
    ``seed``, which also seeds the folds). Returns the model and ``(C,
    gamma, best mean CV score, tuned, search seconds, the search's
    warnings)`` (``(category, message)`` pairs, reported by the caller once
    for every cell); a cell whose tuning rows hold a class with fewer
    examples than an int ``cv`` has folds (a splitter's: no training fold
    with all the cell's classes), or whose search scored no candidate on
    every fold, is fitted at ``params``' values, not tuned, with a NaN
    score."""
    from .tuning import SVCCV

    C, gamma, score, tuned, seconds = params["C"], params["gamma"], np.nan, False, 0.0
    notes: list = []
    if search is not None:
        rs = np.random.RandomState(seed)
        size = search["tune_size"]
        sub = np.arange(y_idx.shape[0])
        if size is not None and sub.size > size:
            sub = np.sort(rs.choice(sub.size, size, replace=False))
        Xs, ys = X[sub], y_idx[sub]
        cv = search["cv"]
        held = np.unique(y_idx)
        if isinstance(cv, Integral):
            # StratifiedKFold: every class in every fold.
            counts = np.bincount(ys, minlength=int(held.max()) + 1)[held]
            can_tune = counts.min() >= int(cv)
        else:
            # A splitter (LeaveOneOut, ShuffleSplit, ...) need not stratify:
            # the search runs when a training fold holds every class (a fold
            # that lacks one fails, its candidates score NaN, and the cell
            # is not tuned below, its FitFailedWarning in notes); with no
            # such fold every fit would fail and the search raise.
            splits = list(cv.split(Xs, ys))
            can_tune = any(
                np.unique(ys[np.asarray(train)]).size == held.size for train, _ in splits
            )
        if can_tune:
            start = time.perf_counter()
            cv_search = SVCCV(
                Cs=search["Cs"],
                gammas=search["gammas"],
                cv=cv,
                refit=False,
                random_state=rs.randint(np.iinfo(np.int32).max),
                kernel=params["kernel"],
                degree=params["degree"],
                coef0=params["coef0"],
                tol=params["tol"],
                cache_size=params["cache_size"],
                max_iter=params["max_iter"],
                backend=params["backend"],
                n_jobs=params["n_jobs"],
            )
            cv_search._warning_sink = notes
            cv_search._fit_weighted(Xs, ys, None if weights is None else weights[sub])
            seconds = time.perf_counter() - start
            if np.isfinite(cv_search.best_score_):
                C, gamma, score = cv_search.C_, cv_search.gamma_, cv_search.best_score_
                tuned = True
            # Else no candidate has a score on every fold (a fit failed on
            # one: its FitFailedWarning is in notes): the search's first
            # candidate was chosen by nothing, and the cell is not tuned.
    model = _CellSVM(**{**params, "C": C, "gamma": gamma}).fit(X, y_idx, sample_weight=weights)
    return model, (float(C), float(gamma), float(score), tuned, seconds, tuple(notes))


def is_dask_collection(obj) -> bool:
    """Whether ``obj`` is a Dask collection (array, dataframe, series),
    without importing Dask."""
    return hasattr(obj, "__dask_graph__") and callable(getattr(obj, "__dask_graph__", None))


def input_kind(X) -> str | None:
    """'dask' for a Dask collection, 'chunked' for a NumPy memmap or a 2-D
    array-like that is not a NumPy array (``shape``, ``dtype``, row
    slicing, no ``__array_function__``: an h5py or zarr array, say), None
    for everything else (the in-memory path)."""
    if is_dask_collection(X):
        return "dask"
    if isinstance(X, np.memmap):
        return "chunked" if X.ndim == 2 else None
    if isinstance(X, np.ndarray) or sp.issparse(X) or isinstance(X, (list, tuple)):
        return None
    if hasattr(X, "__array_function__") or hasattr(X, "iloc"):
        return None
    shape = getattr(X, "shape", None)
    if (
        shape is not None
        and len(shape) == 2
        and hasattr(X, "dtype")
        and hasattr(X, "__getitem__")
        and np.dtype(X.dtype).kind in "fiu"
    ):
        return "chunked"
    return None


# ---------------------------------------------------------------- blocks


def _check_block(X, b: int, offset: int, dtype, d: int, rows: int | None) -> np.ndarray:
    """Block ``b`` of ``X`` as an ndarray, checked: its dtype and width are
    the collection's, its values finite (else the block and row are named)."""
    X = np.asarray(X)
    if X.dtype != dtype:
        raise TypeError(
            f"block {b} of X (rows {offset}..) holds {X.dtype} values where the collection "
            f"declares {dtype}: the blocks mix dtypes; cast them to one "
            f"(X.astype('{np.dtype(dtype).name}')) before fitting"
        )
    if X.ndim != 2 or X.shape[1] != d or (rows is not None and X.shape[0] != rows):
        raise ValueError(
            f"block {b} of X has shape {X.shape}, where the collection declares "
            f"({rows}, {d}); the chunk sizes are stale: recompute them "
            f"(X.compute_chunk_sizes())"
        )
    if X.dtype.kind == "f":
        bad = ~np.isfinite(X).all(axis=1)
        if bad.any():
            r = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"Input X contains NaN or infinity: block {b}, row {r} of the block "
                f"(row {offset + r} of X); drop or impute it before fitting"
            )
    return X


def _block_stats(X, y, b: int, offset: int, dtype, d: int, sample_rows, check_y: bool):
    """Pass 1 on one block: its row count, sum, sum of squared deviations
    (float64, over all its values), its labels, and the sampled rows."""
    X = _check_block(X, b, offset, dtype, d, None)
    Xf = X.astype(np.float64)
    count = Xf.size
    total = float(Xf.sum())
    mean = total / count if count else 0.0
    m2 = float(((Xf - mean) ** 2).sum()) if count else 0.0
    labels = label_counts = None
    if check_y:
        y = np.asarray(y)
        if y.ndim != 1 or y.shape[0] != X.shape[0]:
            raise ValueError(
                f"block {b} of y has shape {y.shape}, block {b} of X {X.shape[0]} rows: "
                "X and y must be chunked alike along the rows"
            )
        if y.dtype.kind == "f" and not np.isfinite(y).all():
            r = int(np.flatnonzero(~np.isfinite(y))[0])
            raise ValueError(
                f"Input y contains NaN or infinity: block {b}, row {r} of the block "
                f"(row {offset + r} of y)"
            )
        labels, label_counts = np.unique(y, return_counts=True)
    return {
        "rows": X.shape[0],
        "count": count,
        "sum": total,
        "m2": m2,
        "labels": labels,
        "label_counts": None if labels is None else label_counts,
        "sample": np.ascontiguousarray(Xf[sample_rows]),
    }


@dataclass
class _Router:
    """What a block needs to route its rows: the partition, the histogram
    bins, the per-cell overlap gaps."""

    partition: CellPartition
    log_lo: float = 0.0
    inv_step: float = 1.0
    thresholds: np.ndarray | None = None
    prepared: Any = field(default=None, repr=False)

    def __getstate__(self):
        state = dict(self.__dict__)
        state["prepared"] = None
        return state

    def step(self) -> int:
        """Rows per sub-block of :meth:`scores` (``SCORE_BLOCK_BYTES`` of
        scores, or of kernel values against the representatives)."""
        k = self.partition.n_cells
        m = self.partition.representatives.shape[0]
        return max(1, SCORE_BLOCK_BYTES // (4 * max(k, m, 1)))

    def scores(self, X: np.ndarray):
        """Routing scores of sub-blocks of ``X``: ``(start, S)`` pairs."""
        if self.prepared is None:
            self.prepared = self.partition._prepared()
        step = self.step()
        for start in range(0, X.shape[0], step):
            yield start, self.partition._block_scores(X[start : start + step], self.prepared)

    def bins(self, g: np.ndarray) -> np.ndarray:
        """The histogram bin of each gap (``≥ 0``)."""
        with np.errstate(divide="ignore"):
            f = (np.log(np.maximum(g, 1e-30, dtype=np.float32)) - np.float32(self.log_lo)) * (
                np.float32(self.inv_step)
            ) + 1
        np.clip(f, 0, HIST_BINS - 1, out=f)
        return f.astype(np.int32)

    def edges(self) -> np.ndarray:
        """The bins' lower edges (``HIST_BINS + 1``: the last is infinite)."""
        e = np.exp(self.log_lo + np.arange(HIST_BINS - 1) / self.inv_step)
        return np.concatenate([[0.0], e, [np.inf]])


def _nearest(S, router: _Router, counts, margins):
    """Each row's own cell (the lowest of its scores ``S``, a block of
    :meth:`_Router.scores`) and that score, counted into the cell sizes
    ``counts`` and, the gap to the row's second-nearest cell, into the
    margins' histogram ``margins`` (``S`` is left as it was)."""
    at = np.arange(S.shape[0])
    lab = np.argmin(S, axis=1)
    counts += np.bincount(lab, minlength=S.shape[1])
    best = S[at, lab]
    if S.shape[1] > 1:
        # The second smallest score: the smallest once the row's own
        # cell is masked (a partial sort per row costs several times more).
        S[at, lab] = np.inf
        margin = S.min(axis=1).astype(np.float64) - best
        S[at, lab] = best
        pos = margin[margin > 0]
        margins += np.bincount(router.bins(pos), minlength=HIST_BINS)
    return at, lab, best


def _by_cell(cells: list, rows: list, k: int, *extra: list):
    """The (cell, row) pairs listed in pieces (``cells``, ``rows``, and any
    per-pair ``extra`` values) grouped by cell, rows ascending within one:
    ``(counts, bounds, rows, *extra)``, cell ``j``'s rows at
    ``rows[bounds[j]:bounds[j + 1]]``."""
    cells = np.concatenate(cells) if cells else np.empty(0, np.int32)
    order = np.argsort(cells, kind="stable")
    counts = np.bincount(cells, minlength=k)
    bounds = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    rows = np.concatenate(rows)[order] if rows else np.empty(0, np.int32)
    rest = [np.concatenate(e)[order] if e else np.empty(0, np.float32) for e in extra]
    return (counts, bounds, rows, *rest)


def _block_route(X, router: _Router, with_labels: bool):
    """Pass 3 on one block: cell sizes, per-cell gap histograms of the
    other cells' rows, the margins' histogram (and the labels)."""
    X = np.asarray(X)
    k = router.partition.n_cells
    counts = np.zeros(k, dtype=np.int64)
    gaps = np.zeros(k * (HIST_BINS + 1), dtype=np.int64)
    margins = np.zeros(HIST_BINS, dtype=np.int64)
    labels = np.empty(X.shape[0], dtype=np.intp) if with_labels else None
    base = (np.arange(k, dtype=np.int32) * (HIST_BINS + 1))[None, :]
    for start, S in router.scores(X):
        at, lab, best = _nearest(S, router, counts, margins)
        if labels is not None:
            labels[start : start + lab.size] = lab
        S -= best[:, None]
        B = router.bins(S)
        B[at, lab] = HIST_BINS  # a row's own cell: not counted
        B += base
        gaps += np.bincount(B.ravel(), minlength=k * (HIST_BINS + 1))
    return counts, gaps.reshape(k, HIST_BINS + 1)[:, :HIST_BINS], margins, labels


def _block_members(X, router: _Router):
    """Pass 4 on one block: the rows of the block that train each cell (its
    members, and the other cells' rows within its overlap gap), as
    ``(bounds, rows)``: cell ``j``'s rows (block-local, ascending, int32)
    are ``rows[bounds[j]:bounds[j + 1]]``; and the count per cell."""
    X = np.asarray(X)
    k = router.partition.n_cells
    thr = router.thresholds
    cells, rows = [], []
    for start, S in router.scores(X):
        r = S.shape[0]
        at = np.arange(r)
        lab = np.argmin(S, axis=1)
        S -= S[at, lab][:, None]
        sel = S <= thr[None, :]
        sel[at, lab] = True
        # Row-major, as np.nonzero lists them, from one flat search.
        i, j = np.divmod(np.flatnonzero(sel), k)
        rows.append((i + start).astype(np.int32))
        cells.append(j.astype(np.int32))
    counts, bounds, rows = _by_cell(cells, rows, k)
    return counts, (bounds, rows)


def _block_route_keep(X, router: _Router, caps: np.ndarray):
    """Pass 3 on one block, once for both: the cell sizes and the margins'
    histogram of :func:`_block_route`, the gap histograms counted over the
    gaps below each cell's ceiling ``caps`` (exact in the bins below it),
    and the block's rows that may train each cell, kept on the worker for
    :func:`_block_keep`: ``(bounds, rows, gaps)``, cell ``j``'s rows
    (block-local, ascending) ``rows[bounds[j]:bounds[j + 1]]`` with their
    gaps (``-inf`` for the cell's own rows)."""
    X = np.asarray(X)
    k = router.partition.n_cells
    counts = np.zeros(k, dtype=np.int64)
    hist = np.zeros(k * (HIST_BINS + 1), dtype=np.int64)
    margins = np.zeros(HIST_BINS, dtype=np.int64)
    rows, cells, gaps = [], [], []
    cap = caps.astype(np.float32)[None, :]
    for start, S in router.scores(X):
        at, lab, best = _nearest(S, router, counts, margins)
        S -= best[:, None]
        S[at, lab] = -np.inf  # a row's own cell: always kept, never counted
        flat = np.flatnonzero(S < cap)
        g = S.ravel()[flat]
        i, j = np.divmod(flat, k)
        other = g > -np.inf
        hist += np.bincount(
            router.bins(g[other]) + j[other] * (HIST_BINS + 1), minlength=k * (HIST_BINS + 1)
        )
        rows.append((i + start).astype(np.int32))
        cells.append(j.astype(np.int32))
        gaps.append(g)
    _, bounds, rows, gaps = _by_cell(cells, rows, k, gaps)
    hist = hist.reshape(k, HIST_BINS + 1)[:, :HIST_BINS]
    return counts, hist, margins, (bounds, rows, gaps)


def _block_keep(kept, thresholds: np.ndarray, used: np.ndarray):
    """The rows of one block that train each cell (as :func:`_block_members`
    lists them), picked from what :func:`_block_route_keep` kept: a cell's
    own rows and its other rows within its overlap gap ``thresholds``
    (over the cells ``used``, those that received rows)."""
    bounds, rows, gaps = kept
    k_all = bounds.shape[0] - 1
    thr = np.full(k_all, -np.inf, dtype=np.float32)
    thr[used] = thresholds
    taken = np.zeros(k_all, dtype=bool)
    taken[used] = True
    cell = np.repeat(np.arange(k_all), np.diff(bounds))
    keep = (gaps <= thr[cell]) & taken[cell]
    renumber = np.zeros(k_all, dtype=np.int64)
    renumber[used] = np.arange(used.shape[0])
    counts = np.bincount(renumber[cell[keep]], minlength=used.shape[0])
    new_bounds = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return counts, (new_bounds, rows[keep])


def _route_caps(router: _Router, rows: np.ndarray, overlap: float) -> np.ndarray:
    """Per cell, the gap below which a block keeps its rows for the cell
    (``inf``: all of them), from the strided ``rows``' histograms (see
    ``CAP_FACTOR``)."""
    k = router.partition.n_cells
    if overlap <= 0 or k <= 1:
        return np.zeros(k)
    counts, hist, _, _ = _block_route(rows, router, False)
    cum = np.cumsum(hist, axis=1)
    # A cell's strided rows undercount it by chance (some cells of
    # thousands): its count taken two standard deviations high.
    counts = counts + 2.0 * np.sqrt(counts) + 2.0
    target = CAP_FACTOR * overlap * counts + CAP_SLACK
    edges = router.edges()
    caps = np.full(k, np.inf)
    for j in range(k):
        b = int(np.searchsorted(cum[j], target[j])) + CAP_MARGIN_BINS + 1
        if b < HIST_BINS:
            caps[j] = edges[b]
    return caps


def _caps_hold(est, plan: _Plan, counts, hist, caps, used) -> bool:
    """Whether every cell's overlap gap falls at least two bins under its
    ceiling, where the kept gaps' histogram is the full one."""
    overlap = float(est.overlap)
    if overlap <= 0:
        return True
    edges = plan.router.edges()
    for j in used:
        if not np.isfinite(caps[j]):
            continue
        extra = min(int(overlap * counts[j]), plan.n - int(counts[j]))
        if extra <= 0:
            continue
        cum = np.cumsum(hist[j])
        if extra >= cum[-1]:
            return False
        b = int(np.searchsorted(cum, extra))
        if b + 3 > HIST_BINS or edges[b + 3] > caps[j]:
            return False
    return True


def _block_assign(X, partition: CellPartition):
    """The cell of each row of one block."""
    X = np.asarray(X)
    if partition is None:
        return np.zeros(X.shape[0], dtype=np.intp)
    router = _Router(partition)
    out = np.empty(X.shape[0], dtype=np.intp)
    for start, S in router.scores(X):
        out[start : start + S.shape[0]] = np.argmin(S, axis=1)
    return out


def _block_extract(X, y, entries, classes, groups):
    """One block's rows of the cells of a wave, by groups of cells: per
    group its cells, where each cell's rows start and end, and those rows
    and class indices, contiguous (one allocation per group and block, not
    one per cell: a worker's heap hands them back whole); the tuple alone
    for one group."""
    X = np.asarray(X)
    y_idx = np.searchsorted(classes, np.asarray(y)).astype(np.int32)
    bounds, rows = entries
    out = []
    for group in groups:
        group = np.asarray(group, dtype=np.intp)
        counts = bounds[group + 1] - bounds[group]
        local = (
            np.concatenate([rows[bounds[j] : bounds[j + 1]] for j in group])
            if group.size
            else rows[:0]
        )
        starts = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        out.append((group, starts, X[local], y_idx[local]))
    return tuple(out) if len(out) != 1 else out[0]


def _piece(group, j: int):
    """Cell ``j``'s rows and class indices in one block's group (from
    :func:`_block_extract`)."""
    cells, starts, X, y = group
    i = int(np.searchsorted(cells, j))
    return X[starts[i] : starts[i + 1]], y[starts[i] : starts[i + 1]]


def _fit_cell_rows(X: np.ndarray, y_idx: np.ndarray, params: dict):
    """One cell's SVM on its rows (None for a one-class cell), the class
    indices it holds, its size and what :func:`tune_cell` reports.
    ``params`` may hold ``'_tune'``: ``(search settings, seed)`` of
    ``CellSVC(tune=True)``, and ``'_class_factors'``: each class's factor
    of ``C`` (``class_weight``, resolved on the whole training set). Rows
    given as float32, or a model solved in float32, keep float32 support
    vectors (half the bytes, the same predictions: see
    :meth:`_CellSVM._keep_float32`)."""
    held = np.unique(y_idx)
    if held.size < 2:
        return None, held, int(y_idx.shape[0]), NO_CHOICE
    params = dict(params)
    search, seed = params.pop("_tune", (None, 0))
    factors = params.pop("_class_factors", None)
    weights = None if factors is None else np.asarray(factors, dtype=np.float64)[y_idx]
    single = np.asarray(X).dtype == np.float32
    X = np.ascontiguousarray(X, dtype=np.float64)
    model, chosen = tune_cell(X, y_idx.astype(np.intp), weights, params, search, seed)
    if single or getattr(model, "precision_", "float64") == "float32":
        model._keep_float32()
    return model, held, int(y_idx.shape[0]), chosen


def _fit_cell_pieces(params: dict, j: int, *groups):
    """A Dask task: cell ``j``'s SVM from its pieces, one per block (in
    each block's output of its group, :func:`_block_extract`)."""
    pieces = [_piece(g, j) for g in groups]
    del groups
    X = np.concatenate([p[0] for p in pieces])
    y = np.concatenate([p[1] for p in pieces])
    del pieces
    out = _fit_cell_rows(X, y, params)
    del X, y
    _release_free_memory()
    return out


def _cell_meta(result):
    """A Dask task: what the client keeps of a cell's fit when its model
    stays on the worker: ``(None, held classes, size, what tune_cell
    reports, iterations, whether a solve stopped at max_iter, the model's
    bytes)``."""
    model, held, size, chosen = result
    if model is None:
        return None, held, size, chosen, 0, False, 0
    n_iter = int(np.sum(model.n_iter_))
    return None, held, size, chosen, n_iter, model.fit_status_ != 0, model._model_bytes()


@dataclass
class _CellPack:
    """Some cells' SVMs, together in memory."""

    cells: np.ndarray
    models: list

    def __sizeof__(self) -> int:
        return self.cells.nbytes + sum(m.__sizeof__() for m in self.models if m is not None)

    def load(self) -> _CellPack:
        return self


#: Prefix of the files holding the cells' models a Dask fit keeps on its
#: workers (in the folder of the workers' local directories, see
#: :func:`_pack_folder`).
PACK_FILE_PREFIX = "localsvm-cells-"


def _pack_folder() -> str:
    """Where this process stores packs: on a Dask worker, the folder that
    holds the local directories of its machine's workers (Dask's
    ``temporary-directory``), not its own, which Dask removes when the worker
    restarts while other workers may still hold the packs' handles; else
    the temporary directory. The fit's client removes the files."""
    import tempfile

    try:
        from distributed import get_worker

        base = os.path.dirname(os.path.abspath(get_worker().local_directory))
    except (ImportError, ValueError):
        base = tempfile.gettempdir()
    return base


@dataclass
class _StoredPack:
    """Some cells' SVMs in a file on a worker's disk, and where: the client
    keeps this handle (the file's path, its cells, the models' bytes, the
    host of the worker that wrote it), and a task that needs the models
    reads the file (:meth:`load`), on a worker of that host, and drops them
    when done. Neither a worker's memory nor Dask's task graph holds the
    models: a worker that restarts loses none of them, and no pack travels
    between workers."""

    path: str
    cells: np.ndarray
    nbytes: int
    host: str = ""

    def load(self) -> _CellPack:
        try:
            with open(self.path, "rb") as fh:
                return pickle.load(fh)
        except FileNotFoundError:
            raise FileNotFoundError(
                f"the models of {self.cells.size} cells of a CellSVC fitted on a Dask cluster "
                f"were kept in {self.path!r} on {self.host or 'a worker'}'s disk, which no "
                f"longer holds it (the machine was lost or its temporary files removed): "
                f"fit the model again"
            ) from None

    def __sizeof__(self) -> int:
        return object.__sizeof__(self) + self.cells.nbytes + len(self.path)


def _store_pack(name: str, cells, *results):
    """A Dask task: the models of ``cells`` written to a file on this worker
    (a :class:`_StoredPack`); the cells' fits are then released."""
    pack = _CellPack(np.asarray(cells), [r[0] for r in results])
    nbytes = sum(m._model_bytes() for m in pack.models if m is not None)
    folder = os.path.join(_pack_folder(), "localsvm-cells")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, name)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "wb") as fh:
        pickle.dump(pack, fh, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(tmp, path)
    del pack, results
    _release_free_memory()
    return _StoredPack(path, np.asarray(cells), nbytes, _worker_host())


def _worker_host() -> str:
    """The host part of this worker's address ('' outside a worker)."""
    try:
        from distributed import get_worker
        from distributed.comm import get_address_host

        return get_address_host(get_worker().address)
    except (ImportError, ValueError):
        return ""


def _load_pack(pack: _StoredPack) -> _CellPack:
    """A Dask task: the models of a pack."""
    return pack.load()


def _pack_files(prefix: str) -> list[str]:
    """This process's pack files whose names start with ``prefix``."""
    import glob

    return glob.glob(os.path.join(_pack_folder(), "localsvm-cells", prefix + "*"))


def _remove_files(paths) -> int:
    """Remove ``paths`` (those already gone are skipped); how many went."""
    removed = 0
    for path in paths:
        try:
            os.remove(path)
            removed += 1
        except OSError:
            pass
    return removed


def _remove_packs(prefix: str) -> int:
    """A Dask task: remove this worker's pack files of one fit."""
    return _remove_files(_pack_files(prefix))


def _fit_owner() -> str:
    """The part of a fit's pack names that names the process whose fit
    wrote them: this machine's name and this process's id."""
    import socket

    return f"{socket.gethostname().replace('-', '_')}-{os.getpid()}"


def _process_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # alive, owned by another user
        return False
    return False


def _remove_orphan_packs() -> int:
    """A Dask task: remove this worker's pack files written for a fit whose
    client process, on this machine, has ended (a fit interrupted with its
    cluster, or a process that exited without collecting its model): no
    model can read them any more. Packs of a client on another machine are
    left alone (whether it still runs cannot be seen from here)."""
    host = _fit_owner().split("-")[0]

    def orphaned(path: str) -> bool:
        parts = os.path.basename(path)[len(PACK_FILE_PREFIX) :].split("-")
        return (
            len(parts) >= 3
            and parts[0] == host
            and parts[1].isdigit()
            and _process_gone(int(parts[1]))
        )

    return _remove_files(p for p in _pack_files(PACK_FILE_PREFIX) if orphaned(p))


def _pick(pack: _StoredPack, pos: int):
    """A Dask task: one model of a pack."""
    return pack.load().models[pos]


def _predict_block(X, model, what: str):
    """Predictions or decision values of one block of test rows by a model
    whose cells are all here: the rows routed a few thousand at a time
    (routing holds a ``rows × n_cells`` float32 score matrix:
    ``SCORE_BLOCK_BYTES`` at most), then each cell's rows of the whole
    block labelled by one call of its SVM."""
    hard = model.routing == "hard" or model.partition_ is None
    k = len(model.cell_models_)
    [piece] = _route_pieces(X, model, np.zeros(k, dtype=np.int32), 1, hard)
    pack = _CellPack(np.arange(k), list(model.cell_models_))
    part = _eval_piece(piece, pack, model, what, hard)
    return _combine(np.shape(X)[0], model.classes_, what, hard, part)


def _add(*parts):
    """The elementwise sum of arrays (a reduction step)."""
    out = parts[0].copy()
    for p in parts[1:]:
        out += p
    return out


# ---------------------------------------------------------------- the plan


def _interpolate(hist: np.ndarray, edges: np.ndarray, target: float) -> float:
    """The value below which ``target`` of the counts ``hist`` (over the
    bins ``edges``) lie, interpolated within the bin it falls in (in log
    space between positive edges, linearly in the first bin)."""
    cum = np.cumsum(hist)
    if target <= 0:
        return -1.0
    if target >= cum[-1]:
        return np.inf
    b = int(np.searchsorted(cum, target))
    before = cum[b - 1] if b else 0
    frac = (target - before) / max(hist[b], 1)
    lo, hi = edges[b], edges[b + 1]
    if not np.isfinite(hi):
        hi = lo * 4.0 if lo > 0 else 1.0
    if lo <= 0:
        return float(hi * frac)
    return float(lo * (hi / lo) ** frac)


def _gamma(gamma, kernel: str, n_features: int, var: float) -> float:
    """``gamma`` resolved from the data's variance as :func:`resolve_gamma`."""
    if kernel not in ("poly", "rbf", "sigmoid"):
        return 1.0
    if gamma == "auto":
        return 1.0 / n_features
    if gamma != "scale":
        return float(gamma)
    if not np.isfinite(var):
        raise ValueError(
            "gamma='scale' needs the variance of X, which overflows float64 for this "
            "data; scale the features (e.g. StandardScaler) or pass a numeric gamma"
        )
    return 1.0 / (n_features * var) if var > 0 else 1.0


def _combine_stats(parts) -> float:
    """The variance of all values from per-block counts, sums and sums of
    squared deviations (Chan, Golub and LeVeque's pairwise update)."""
    count, mean, m2 = 0, 0.0, 0.0
    for p in parts:
        nb = p["count"]
        if not nb:
            continue
        mb = p["sum"] / nb
        delta = mb - mean
        tot = count + nb
        m2 += p["m2"] + delta * delta * count * nb / tot
        mean += delta * nb / tot
        count = tot
    return m2 / count if count else 0.0


def _split_on_sample(est, partition, sample, k, rng):
    """Cells holding more than ``SPLIT_FACTOR`` times their share of the
    sample cut by kernel k-means of their sampled members (as
    :func:`~localsvm.cells.fit_cells` cuts on all rows)."""
    budget = math.ceil(sample.shape[0] / k)
    return cut_large_cells(partition, sample, partition.assign(sample), budget, rng)


def _hist_range(partition: CellPartition, sample: np.ndarray) -> tuple[float, float]:
    """The log of the histograms' lowest edge and the inverse bin width,
    from the gaps and margins of the sample."""
    # Block by block, the blocks of ``partition.scores``: the whole matrix
    # is sample × cells, 5000 × 5000 at 10⁷ rows.
    low, high = np.inf, -np.inf

    def take(start, S):
        nonlocal low, high
        G = S.astype(np.float64)
        G -= G.min(axis=1, keepdims=True)
        pos = G[G > 0]
        if pos.size:
            low, high = min(low, float(pos.min())), max(high, float(pos.max()))

    partition._each_block(sample, 1, take)
    if not np.isfinite(low):
        return math.log(1e-12), 1.0
    lo = max(low * 0.01, 1e-12)
    hi = high * 4.0
    step = max((math.log(hi) - math.log(lo)) / (HIST_BINS - 2), 1e-9)
    return math.log(lo), 1.0 / step


@dataclass
class _Plan:
    """What the passes decide, on the client."""

    n: int
    d: int
    classes: np.ndarray
    spec: KernelSpec
    partition: CellPartition | None
    router: _Router | None = None
    sizes: np.ndarray | None = None
    routing_scale: float = 1.0
    class_counts: np.ndarray | None = None
    class_factors: np.ndarray | None = None


def _plan_partition(est, n: int, d: int, stats: list, sample: np.ndarray, rng) -> _Plan:
    """The kernel, the classes and the cells from the first pass."""
    from .kernels import KernelSpec

    classes = np.unique(np.concatenate([s["labels"] for s in stats]))
    if classes.shape[0] < 2:
        raise ValueError(
            f"The number of classes has to be greater than one; got {classes.shape[0]} class"
        )
    class_counts = np.zeros(classes.shape[0], dtype=np.int64)
    for s in stats:
        if s.get("label_counts") is not None:
            np.add.at(class_counts, np.searchsorted(classes, s["labels"]), s["label_counts"])
    var = _combine_stats(stats)
    spec = KernelSpec(
        est.kernel,
        gamma=_gamma(est.gamma, est.kernel, d, var),
        coef0=float(est.coef0),
        degree=int(est.degree),
    )
    k = est._count_cells(n)
    partition = None
    if k > 1:
        partition = CellPartition.fit(sample, k, spec=spec, random_state=rng, sample_size=None)
        partition = _split_on_sample(est, partition, sample, k, rng)
    return _Plan(n, d, classes, spec, partition, class_counts=class_counts)


def _class_factors(est, plan: _Plan) -> np.ndarray | None:
    """Each class's factor of ``C`` from ``est.class_weight`` (None without
    one), scikit-learn's rule on the whole training set as in memory
    (:func:`~localsvm._base.class_weights`): 'balanced' is
    ``n_samples / (n_classes · count)`` from the first pass's counts."""
    if est.class_weight is None:
        return None
    if isinstance(est.class_weight, str):
        return balanced_class_factors(plan.class_counts)
    unknown = sorted(set(est.class_weight) - set(plan.classes.tolist()), key=str)
    if unknown:
        raise ValueError(
            f"class_weight names classes that are not in y: {unknown}; "
            f"the classes are {plan.classes.tolist()}"
        )
    factors = np.array([float(est.class_weight.get(c, 1.0)) for c in plan.classes.tolist()])
    bad = np.flatnonzero(~(factors > 0))
    if bad.size:
        raise ValueError(
            f"class_weight gives class {plan.classes[bad[0]]!r} the factor {factors[bad[0]]:g}: "
            "every example of it would be left out; give every class a positive weight"
        )
    return factors


def _plan_overlap(est, plan: _Plan, counts, gaps, margins) -> None:
    """Cell sizes, dropped empty cells, the overlap gaps and the routing
    scale from the second pass."""
    router = plan.router
    edges = router.edges()
    used = np.flatnonzero(counts > 0)
    if used.size < plan.partition.n_cells:
        plan.partition = plan.partition.restrict(used)
        counts, gaps = counts[used], gaps[used]
    router.partition = plan.partition
    router.prepared = None
    k = plan.partition.n_cells
    plan.sizes = counts
    q = margins.sum() * _soft_quantile()
    plan.routing_scale = 1.0
    if margins.sum() > 0:
        plan.routing_scale = max(_interpolate(margins, edges, q), 1e-30)
    thr = np.full(k, -1.0, dtype=np.float32)
    overlap = float(est.overlap)
    if overlap > 0 and k > 1:
        for j in range(k):
            extra = min(int(overlap * counts[j]), plan.n - int(counts[j]))
            if extra > 0:
                thr[j] = np.float32(min(_interpolate(gaps[j], edges, extra), 3.0e38))
    router.thresholds = thr


def _soft_quantile() -> float:
    """``routing='soft'``'s quantile of the margins (see ``CellSVC``)."""
    return SOFT_QUANTILE


def _cell_tuning(est, rng, k: int) -> list:
    """Per cell, ``(search settings, seed)`` for ``CellSVC(tune=True)``
    (the seeds drawn before any cell runs, so nothing depends on the order
    the cells finish in), or None."""
    if not est.tune:
        return [None] * k
    search = est._search_settings()
    return [(search, int(s)) for s in rng.randint(np.iinfo(np.int32).max, size=k)]


def _cell_params(est, spec: KernelSpec, n_jobs: int, cache_share: float) -> dict:
    """The keyword arguments of every cell's :class:`~localsvm.SVC` (in
    memory, chunked or on Dask): ``est``'s solver settings with the kernel
    ``spec``, ``n_jobs`` threads and ``cache_share`` MiB of kernel cache."""
    return dict(
        C=est.C,
        kernel=spec.name,
        degree=spec.degree,
        gamma=spec.gamma,
        coef0=spec.coef0,
        tol=est.tol,
        max_iter=est.max_iter,
        cache_size=cache_share,
        backend=est.backend,
        n_jobs=n_jobs,
    )


def _in_groups(cells, nbytes, cap: float) -> list[list[int]]:
    """``cells`` cut, in their order, into consecutive groups of at most
    ``cap`` bytes (``nbytes[j]`` for cell ``j``); a cell larger than ``cap``
    makes a group of its own, and no group is empty."""
    groups: list[list[int]] = []
    cur: list[int] = []
    cur_bytes = 0
    for j in cells:
        if cur and cur_bytes + nbytes[j] > cap:
            groups.append(cur)
            cur, cur_bytes = [], 0
        cur.append(j)
        cur_bytes += nbytes[j]
    if cur:
        groups.append(cur)
    return groups


def _cell_bytes(rows: int, d: int, cache_mib: float) -> float:
    """Bytes one cell's SVM needs: its rows (float64, twice: the gathered
    pieces and the solver's copy), the labels and dual variables, and the
    kernel cache (``cache_size``, or the whole float64 kernel matrix of the
    cell when that is smaller)."""
    cache = min(cache_mib * (1 << 20), 8.0 * rows * rows)
    return rows * (16.0 * d + 48.0) + cache


def _sample_rows(est, n: int, k: int, rng) -> np.ndarray:
    """The sampled rows, drawn as :meth:`CellPartition.fit` draws them."""
    if k <= 1:
        return np.empty(0, dtype=np.int64)
    m = _sample_size(n, k) if est.sample_size == "auto" else int(min(est.sample_size, n))
    m = max(m, k)
    return np.sort(rng.choice(n, m, replace=False)) if m < n else np.arange(n)


def _attributes(est, plan: _Plan, results, train_sizes, timings, labels, models=None) -> dict:
    """The fitted attributes of a chunked or Dask fit: from the cells'
    ``(model, held classes, size, tuning report)`` results, or from their
    :func:`_cell_meta` summaries and ``models`` (a :class:`ClusterModels`)."""
    from ._regions import region_iterations

    k = len(results)
    held = [r[1] for r in results]
    if models is None:
        models = [r[0] for r in results]
        n_iter = region_iterations(models)
        stopped = [m is not None and m.fit_status_ != 0 for m in models]
    else:
        n_iter = np.array([r[4] for r in results], dtype=np.int64)
        stopped = [r[5] for r in results]
    chosen = [r[3] for r in results]
    if est.tune:
        timings["tune"] = float(sum(c[4] for c in chosen))
    return {
        "classes_": plan.classes,
        "class_weight_": (
            np.ones(plan.classes.shape[0]) if plan.class_factors is None else plan.class_factors
        ),
        "n_features_in_": plan.d,
        "_spec": plan.spec,
        "partition_": plan.partition,
        "n_cells_": k,
        "cell_labels_": labels,
        "cell_sizes_": np.asarray(plan.sizes, dtype=np.int64),
        "cell_train_sizes_": np.asarray(train_sizes, dtype=np.int64),
        "cell_classes_": held,
        "cell_models_": models,
        "cell_C_": np.array([c[0] for c in chosen], dtype=np.float64),
        "cell_gamma_": np.array([c[1] for c in chosen], dtype=np.float64),
        "cell_cv_score_": np.array([c[2] for c in chosen], dtype=np.float64),
        "cell_tuned_": np.array([c[3] for c in chosen], dtype=bool),
        "_cell_search_notes": [note for c in chosen for note in c[5]],
        "routing_scale_": plan.routing_scale,
        "cell_overlap_reach_": _reach(plan, k),
        "cell_n_iter_": n_iter,
        "n_iter_": int(n_iter.sum()),
        "timings_": timings,
        "_stopped": stopped,
    }


def _reach(plan: _Plan, k: int) -> np.ndarray:
    """Each cell's overlap reach: the gap under which other cells' rows
    joined it (0 for a cell without overlap, or a single cell)."""
    if plan.router is None or plan.router.thresholds is None:
        return np.zeros(k)
    return np.maximum(plan.router.thresholds.astype(np.float64), 0.0)


def _apply(est, attrs: dict) -> None:
    """Set the fitted attributes at once (the estimator is untouched until
    every pass has succeeded)."""
    for key in ("n_features_in_", "feature_names_in_"):
        est.__dict__.pop(key, None)
    stopped = attrs.pop("_stopped")
    est.__dict__.update(attrs)
    est.fit_status_ = int(est._warn_unconverged([not s for s in stopped], "cell SVMs"))


# ---------------------------------------------------------------- chunked (memmap)


def _chunk_rows(X) -> int:
    shape = X.shape
    return max(1, CHUNK_BYTES // max(1, int(shape[1]) * np.dtype(X.dtype).itemsize))


def _take_rows(X, rows: np.ndarray, chunk: int) -> np.ndarray:
    """Rows ``rows`` (sorted) of an array read by slices: a memmap by fancy
    indexing (only those pages are read), another array-like chunk by
    chunk."""
    if isinstance(X, np.ndarray):
        return np.asarray(X[rows])
    parts = []
    for start in np.unique(rows // chunk) * chunk:
        sel = rows[(rows >= start) & (rows < start + chunk)]
        parts.append(np.asarray(X[int(start) : int(min(start + chunk, X.shape[0]))])[sel - start])
    return np.concatenate(parts) if parts else np.empty((0, X.shape[1]))


def _release_free_memory() -> None:
    """Hand the C heap's free pages back to the system (glibc's
    ``malloc_trim``; nothing elsewhere). A cell's temporaries lie between the
    models kept before and after it: without this, the heap's resident size
    keeps them."""
    global _TRIM
    if _TRIM is None:
        try:
            import ctypes

            _TRIM = ctypes.CDLL("libc.so.6").malloc_trim
        except (OSError, AttributeError):
            _TRIM = False
    if _TRIM:
        _TRIM(0)


_TRIM: Any = None


def describe_cell(model) -> str:
    """A log line's account of one cell's SVM (None: a one-class cell)."""
    if model is None:
        return "one class, no SVM"
    return (
        f"{model.shape_fit_[0]} examples, {int(np.sum(model.n_iter_))} iterations, "
        f"{'converged' if model.fit_status_ == 0 else 'stopped at max_iter'}, "
        f"{model.support_.size} support vectors"
    )


def _describe_result(out) -> str:
    """:func:`describe_cell` of a :func:`_fit_cell_rows` result."""
    return describe_cell(out[0])


def _chunked_cell(task, shared):
    """A :func:`~localsvm.run_tasks` task: one cell's SVM on rows read from
    the chunked array."""
    X, y_idx, chunk, params = shared
    rows, tune = task
    if tune is not None:
        params = {**params, "_tune": tune}
    out = _fit_cell_rows(_take_rows(X, rows, chunk), y_idx[rows], params)
    if not _in_memory(X):
        # Read from disk: the heap's freed pages go back at once, so the
        # process grows by one cell's solve (an in-memory array, a large fit
        # of CellSVC.fit, keeps them: the next cell reuses the pages instead
        # of faulting its kernel cache in again).
        _release_free_memory()
    return out


def _in_memory(X) -> bool:
    """Whether ``X`` is an in-memory array (a large in-memory fit of
    :meth:`CellSVC.fit` on the chunked route), not a memmap or another
    array-like read from disk."""
    return isinstance(X, np.ndarray) and not isinstance(X, np.memmap)


def _pieces(starts, chunk: int, n: int, step: int, parts: int) -> list[tuple[int, int]]:
    """The row ranges of the chunks from ``starts`` cut into at most
    ``parts`` pieces each, at multiples of ``step`` rows from the chunk's
    start (the routing's sub-blocks are then those of the whole chunk)."""
    out = []
    for s in starts:
        e = min(s + chunk, n)
        per = math.ceil(math.ceil((e - s) / step) / max(1, parts)) * step
        out.extend((lo, min(e, lo + per)) for lo in range(s, e, per))
    return out


def _map_pieces(func, pieces: list, n_jobs: int):
    """``func(start, stop)`` of each piece, yielded in order as they are
    done (the caller reduces each before the next is kept): in ``n_jobs``
    threads when there are several pieces, each with one BLAS thread (also
    in this thread alone, so that the scores do not depend on ``n_jobs``)."""
    from concurrent.futures import ThreadPoolExecutor

    from .parallel import one_blas_thread

    with one_blas_thread():
        if n_jobs <= 1 or len(pieces) <= 1:
            for s, e in pieces:
                yield func(s, e)
            return
        with ThreadPoolExecutor(min(n_jobs, len(pieces))) as pool:
            yield from pool.map(lambda p: func(*p), pieces)


def chunked_memory_bound(est, n: int) -> float:
    """The documented bound on what a fit on an array read in chunks adds
    to the process's memory (bytes), for the fitted ``est`` on ``n`` rows:
    1.5 times the model's arrays (support vectors and coefficients; the
    rest for their Python objects and the heap between them), the
    bookkeeping (``8·(3 + overlap)·n``), per thread (``n_jobs``) one
    cell's solve (its rows and kernel cache, :func:`_cell_bytes`) and four
    score blocks, two chunks, and three times the sample's kernel matrix
    (kernel k-means)."""
    from .cells import SAMPLE_GRAM_BYTES
    from .parallel import effective_n_jobs

    d = int(est.n_features_in_)
    models = [m for m in est.cell_models_ if m is not None]
    model = sum(m._model_bytes() for m in models)
    book = 8.0 * (3.0 + float(est.overlap)) * n
    threads = max(1, min(effective_n_jobs(est.n_jobs), int(est.n_cells_)))
    cell = threads * _cell_bytes(
        int(np.max(est.cell_train_sizes_)), d, float(est.cache_size) / threads
    )
    chunk = 2.0 * CHUNK_BYTES + 4.0 * SCORE_BLOCK_BYTES * threads
    k = est._count_cells(n)
    m = _sample_size(n, k) if est.sample_size == "auto" else int(min(est.sample_size, n))
    kmeans = 3.0 * min(SAMPLE_GRAM_BYTES, 8.0 * m * m) if k > 1 else 0.0
    return 1.5 * model + book + cell + chunk + kmeans


def fit_chunked(est, X, y) -> None:
    """:meth:`CellSVC.fit` on an array read in chunks of rows.

    Peak memory besides the model: one chunk of rows (``CHUNK_BYTES``), its
    routing scores (``SCORE_BLOCK_BYTES``), the sample's kernel matrix,
    ``O(n)`` bookkeeping (the labels ``y`` and their class indices, each
    row's cell, the cells' row lists: about ``8·(3 + overlap)·n`` bytes) and
    per cell solved at once its rows and kernel cache."""
    from .parallel import effective_n_jobs, run_tasks

    n, d = (int(s) for s in X.shape)
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != n:
        raise ValueError(f"y must be 1-D with {n} labels (the rows of X), got shape {y.shape}")
    dtype = np.dtype(X.dtype)
    chunk = _chunk_rows(X)
    starts = list(range(0, n, chunk))
    k = est._count_cells(n)
    rng = check_random_state(est.random_state)
    n_jobs = effective_n_jobs(est.n_jobs)
    # An in-memory array is handed to the callbacks.
    held = _in_memory(X)
    report = est._fit_report(None, X if held else None, y if held else None)
    timings = {}
    t0 = time.perf_counter()
    idx = _sample_rows(est, n, k, rng)
    stats = []
    for b, s in enumerate(starts):
        e = min(s + chunk, n)
        local = idx[(idx >= s) & (idx < e)] - s
        part = _block_stats(X[s:e], y[s:e], b, s, dtype, d, local, True)
        part["labels"] = part["label_counts"] = None
        stats.append(part)
    classes, y_idx = np.unique(y, return_inverse=True)
    y_idx = y_idx.astype(np.int32)
    for s in stats:
        s["labels"] = classes
    sample = np.concatenate([s["sample"] for s in stats]) if idx.size else np.empty((0, d))
    plan = _plan_partition(est, n, d, stats, sample, rng)
    del stats
    plan.class_counts = np.bincount(y_idx, minlength=classes.size)
    plan.class_factors = _class_factors(est, plan)
    if plan.partition is None:
        labels = np.zeros(n, dtype=np.intp)
        rows_of = [np.arange(n)]
        plan.sizes = np.array([n])
    else:
        log_lo, inv_step = _hist_range(plan.partition, sample)
        plan.router = _Router(plan.partition, log_lo, inv_step)
        kk = plan.partition.n_cells
        counts = np.zeros(kk, np.int64)
        gaps = np.zeros((kk, HIST_BINS), np.int64)
        margins = np.zeros(HIST_BINS, np.int64)
        labels = np.empty(n, dtype=np.intp)
        pieces = _pieces(starts, chunk, n, plan.router.step(), n_jobs)
        plan.router.prepared = plan.partition._prepared()
        for (s, _), (c, g, mg, lab) in zip(
            pieces,
            _map_pieces(lambda s, e: _block_route(X[s:e], plan.router, True), pieces, n_jobs),
            strict=True,
        ):
            counts += c
            gaps += g
            margins += mg
            labels[s : s + lab.shape[0]] = lab
        used = np.flatnonzero(counts > 0)
        _plan_overlap(est, plan, counts, gaps, margins)
        if used.size < kk:
            labels = np.searchsorted(used, labels)
        kk = plan.partition.n_cells
        itype = np.int32 if n < 2**31 else np.int64
        pieces = _pieces(starts, chunk, n, plan.router.step(), n_jobs)
        per_block = [
            (s, *out[1])
            for (s, _), out in zip(
                pieces,
                _map_pieces(lambda s, e: _block_members(X[s:e], plan.router), pieces, n_jobs),
                strict=True,
            )
        ]
        rows_of = []
        for j in range(kk):
            rows_of.append(
                np.concatenate([(r[bd[j] : bd[j + 1]] + s).astype(itype) for s, bd, r in per_block])
            )
        del per_block
    timings["partition"] = time.perf_counter() - t0
    k = len(rows_of)
    at_once = max(1, min(k, n_jobs))
    biggest = max(r.size for r in rows_of)
    check_memory(
        at_once * _cell_bytes(biggest, d, float(est.cache_size) / at_once),
        f"{at_once} cells of up to {biggest} training examples solved at once",
        "use a smaller cell_size (or more n_cells), a smaller overlap, or fewer n_jobs",
    )
    params = _cell_params(est, plan.spec, max(1, n_jobs // at_once), est.cache_size / at_once)
    if plan.class_factors is not None:
        params["_class_factors"] = plan.class_factors
    tasks = list(zip(rows_of, _cell_tuning(est, rng, k), strict=True))
    report.log(2, "CellSVC fit (chunked): %d cells, partition %.3f s", k, timings["partition"])
    report.subtasks("cell", k)
    t0 = time.perf_counter()
    results = run_tasks(
        _chunked_cell,
        tasks,
        n_jobs=at_once,
        shared=(X, y_idx, chunk, params),
        **report.hooks(_describe_result),
    )
    timings["svm"] = time.perf_counter() - t0
    train_sizes = [r.size for r in rows_of]
    attrs = _attributes(est, plan, results, train_sizes, timings, labels)
    _apply(est, attrs)
    report.log(1, "CellSVC fit (chunked): %d cell SVMs, %.3f s", k, timings["svm"])
    report.end(X if held else None, y if held else None)


def predict_chunked(est, X, what: str) -> np.ndarray:
    """Predictions or decision values of an array read in chunks of rows."""
    n = int(X.shape[0])
    chunk = _chunk_rows(X)
    outs = []
    for s in range(0, n, chunk):
        block = np.ascontiguousarray(X[s : s + chunk], dtype=np.float64)
        outs.append(_predict_block(block, est, what))
    if not outs:
        return _predict_block(np.empty((0, est.n_features_in_)), est, what)
    return np.concatenate(outs)


# ---------------------------------------------------------------- Dask


def _dask_client():
    """The current :class:`distributed.Client` (an ``as_current`` block's,
    else the one made last), or a clear error."""
    try:
        from distributed import Client
    except ImportError as err:  # pragma: no cover - dask without distributed
        raise ImportError(
            "CellSVC on Dask collections needs the 'distributed' package "
            "(pip install distributed, or localsvm-dask)"
        ) from err
    try:
        return Client.current()
    except ValueError:
        raise ValueError(
            "CellSVC fits Dask collections on a Dask cluster: create a distributed.Client "
            "first (distributed.Client(address), or distributed.Client(LocalCluster()))"
        ) from None


def _as_dask_array(X, name: str):
    """A Dask array from a Dask array, dataframe or series, with known
    chunk sizes along the rows (computed on the workers when unknown: each
    block's length comes back, not its values)."""
    import dask.array as da

    if not isinstance(X, da.Array):
        to = getattr(X, "to_dask_array", None)
        if to is None:
            raise TypeError(
                f"{name} is a Dask collection of type {type(X).__name__}; CellSVC takes a "
                "dask.array.Array, a dask.dataframe.DataFrame or a Series"
            )
        X = to(lengths=True)
    if any(math.isnan(c) for c in X.chunks[0]):
        X = X.compute_chunk_sizes()
    return X


def _workers(client) -> dict:
    """Every worker's address and facts (``memory_limit`` among them), asked
    of the scheduler. Not ``Client.scheduler_info()``'s copy: the client's
    periodic refresh replaces it with one that lists no worker, and it can
    do so between that method's fetch and its return."""
    try:
        info = client.sync(client.scheduler.identity, n_workers=-1)
    except TypeError:  # a scheduler whose identity takes no n_workers
        info = client.sync(client.scheduler.identity)
    return dict(info.get("workers", {}))


def _worker_memory(client) -> tuple[int, float]:
    """The number of workers and the smallest memory limit (inf when
    unlimited)."""
    workers = _workers(client)
    limits = [w.get("memory_limit") or 0 for w in workers.values()]
    if not workers:
        raise RuntimeError("the Dask cluster has no worker")
    lim = min((v for v in limits if v), default=0)
    return len(workers), (float(lim) if lim else math.inf)


def _worker_cache_mib(est, client, limit: float) -> float:
    """Megabytes of kernel cache of each cell's SVM on the cluster:
    ``cache_size``, at most :data:`CELL_CACHE_SHARE` of a worker's memory
    ``limit`` shared by the threads of the worker with the most."""
    if not math.isfinite(limit):
        return float(est.cache_size)
    threads = max(client.nthreads().values(), default=1)
    return min(float(est.cache_size), CELL_CACHE_SHARE * limit / max(threads, 1) / 2**20)


class _Futures:
    """The futures of one fit, all cancelled when it fails or is
    interrupted."""

    def __init__(self, client):
        self.client = client
        self.held: list = []

    def compute(self, items):
        futs = self.client.compute(items)
        self.held.extend(futs)
        return futs

    def gather(self, futs):
        return self.client.gather(futs)

    def map(self, func, futs):
        out = self.client.map(func, futs, pure=False)
        self.held.extend(out)
        return out

    def submit(self, func, *args, **kwargs):
        fut = self.client.submit(func, *args, pure=False, **kwargs)
        self.held.append(fut)
        return fut

    def scatter(self, obj):
        [fut] = self.client.scatter([obj], broadcast=True, hash=False)
        self.held.append(fut)
        return fut

    def release(self):
        """Drop this fit's hold on its futures (their results are used)."""
        self.held.clear()

    def drop(self, futs):
        """Drop this fit's hold on ``futs`` (the caller's list is emptied)."""
        ids = {id(f) for f in futs}
        self.held = [f for f in self.held if id(f) not in ids]
        futs.clear()

    def gather_in_order(self, futs, batch: int = 16):
        """``(index, result)`` of ``futs``, gathered ``batch`` at a time in
        submission order (the order the scheduler runs them in); each batch
        is dropped once here, so that the workers free its results. A task
        whose worker died is waited for while it runs again."""
        for start in range(0, len(futs), batch):
            part = futs[start : start + batch]
            for i, result in enumerate(self.client.gather(part)):
                yield start + i, result
            ids = {id(f) for f in part}
            self.held = [f for f in self.held if id(f) not in ids]
            for i in range(start, min(start + batch, len(futs))):
                futs[i] = None

    def cancel(self):
        """Cancel every future of this fit still pending or running."""
        futs = [f for f in self.held if f is not None]
        if futs:
            try:
                self.client.cancel(futs)
            except Exception:
                pass
        self.held.clear()


def _lost_cluster(client, err: BaseException) -> RuntimeError:
    return RuntimeError(
        f"the Dask cluster went away during CellSVC.fit ({type(err).__name__}: {err}); "
        "the estimator is unchanged: reconnect (distributed.Client) and fit again"
    )


def fit_dask(est, X, y) -> None:
    """:meth:`CellSVC.fit` on Dask collections (see the module documentation)."""
    client = _dask_client()
    futures = _Futures(client)
    try:
        attrs = _fit_dask(est, X, y, client, futures)
    except KeyboardInterrupt:
        futures.cancel()
        raise
    except (OSError, TimeoutError) as err:
        futures.cancel()
        raise _lost_cluster(client, err) from err
    except Exception as err:
        futures.cancel()
        if type(err).__name__ in ("CancelledError", "CommClosedError", "FutureCancelledError"):
            raise _lost_cluster(client, err) from err
        if client.status not in ("running", "connecting"):
            raise _lost_cluster(client, err) from err
        raise
    futures.release()
    _apply(est, attrs)


def _fit_dask(est, X, y, client, futures: _Futures) -> dict:
    import dask
    import dask.array as da

    if not is_dask_collection(y):
        y = da.from_array(np.asarray(y), chunks=-1)
    y = _as_dask_array(y, "y")
    if not is_dask_collection(X):
        # Labels on the cluster, rows in memory: the rows go out in the
        # labels' chunks.
        X = np.asarray(X)
        X = da.from_array(X, chunks=(y.chunks[0], *((s,) for s in X.shape[1:])))
    X = _as_dask_array(X, "X")
    if X.ndim != 2:
        raise ValueError(f"Expected a 2-D X, got {X.ndim} dimensions")
    if y.ndim != 1 or y.shape[0] != X.shape[0]:
        raise ValueError(
            f"y must be 1-D with {X.shape[0]} labels (the rows of X), got shape {y.shape}"
        )
    if X.dtype.kind not in "fiu":
        raise TypeError(f"X must hold numbers, it holds {X.dtype}")
    X = X.rechunk({1: -1})
    if y.chunks[0] != X.chunks[0]:
        y = y.rechunk((X.chunks[0],))
    n, d = (int(s) for s in X.shape)
    if n == 0:
        raise ValueError("Found array with 0 sample(s) while a minimum of 1 is required.")
    offsets = np.concatenate([[0], np.cumsum(X.chunks[0])]).astype(np.int64)
    xb = X.to_delayed().ravel()
    yb = y.to_delayed().ravel()
    nblocks = len(xb)
    k = est._count_cells(n)
    rng = check_random_state(est.random_state)
    n_workers, limit = _worker_memory(client)
    report = est._fit_report(None)
    timings = {}
    t0 = time.perf_counter()

    # Pass 1: checks, variance, labels, the sample (and the strided rows
    # that set the routing pass's ceilings).
    idx = _sample_rows(est, n, k, rng)
    strided_idx = _cap_rows(n, k) if k > 1 and float(est.overlap) > 0 else idx[:0]
    want = np.union1d(idx, strided_idx)
    stat = dask.delayed(_block_stats, pure=False)
    tasks = []
    for b in range(nblocks):
        s, e = offsets[b], offsets[b + 1]
        local = want[(want >= s) & (want < e)] - s
        tasks.append(stat(xb[b], yb[b], b, int(s), X.dtype, d, local, True))
    stats = futures.gather(futures.compute(tasks))
    futures.release()
    got = np.concatenate([s["sample"] for s in stats]) if want.size else np.empty((0, d))
    sample = got[np.searchsorted(want, idx)]
    strided = got[np.searchsorted(want, strided_idx)]
    del got
    plan = _plan_partition(est, n, d, stats, sample, rng)
    del stats
    plan.class_factors = _class_factors(est, plan)
    report.log(2, "CellSVC fit (Dask): %d blocks, sample %d rows", nblocks, sample.shape[0])

    if plan.partition is None:
        entries = [
            futures.compute([dask.delayed(_all_rows)(int(offsets[b]), int(offsets[b + 1]))])[0]
            for b in range(nblocks)
        ]
        plan.sizes = np.array([n])
        train_sizes = np.array([n])
        labels = da.zeros(n, chunks=(X.chunks[0],), dtype=np.intp)
    else:
        # Pass 2: sizes, gap and margin histograms; each block keeps its
        # rows within the cells' ceilings on its worker.
        log_lo, inv_step = _hist_range(plan.partition, sample)
        plan.router = _Router(plan.partition, log_lo, inv_step)
        caps = _route_caps(plan.router, strided, float(est.overlap))
        del strided
        router_f = dask.delayed(plan.router, name=f"localsvm-router-{uuid.uuid4().hex}")
        route = dask.delayed(_block_route_keep, pure=False, nout=4)
        parts = [route(xb[b], router_f, caps) for b in range(nblocks)]
        kept = futures.compute([p[3] for p in parts])
        counts, gaps, margins = futures.gather(futures.compute(_route_sums(parts)))
        futures.release()
        used = np.flatnonzero(counts > 0)
        once = _caps_hold(est, plan, counts, gaps, caps, used)
        if not once:
            # A cell's overlap reaches past its ceiling: every row routed
            # again, its full histograms counted.
            report.log(1, "CellSVC fit (Dask): an overlap passes its ceiling; routing again")
            del kept
            route = dask.delayed(_block_route, pure=False, nout=4)
            parts = [route(xb[b], router_f, False) for b in range(nblocks)]
            counts, gaps, margins = futures.gather(futures.compute(_route_sums(parts)))
            futures.release()
        _plan_overlap(est, plan, counts, gaps, margins)
        del gaps, parts
        # Pass 3: each block's rows of each cell (kept on the workers):
        # picked from the kept rows, or routed again.
        if once:
            pick = dask.delayed(_block_keep, pure=False, nout=2)
            thr = plan.router.thresholds
            mparts = [pick(kept[b], thr, used) for b in range(nblocks)]
        else:
            router_f = dask.delayed(plan.router, name=f"localsvm-router-{uuid.uuid4().hex}")
            memb = dask.delayed(_block_members, pure=False, nout=2)
            mparts = [memb(xb[b], router_f) for b in range(nblocks)]
        entries = futures.compute([p[1] for p in mparts])
        per_block = np.stack(futures.gather(futures.compute([p[0] for p in mparts])))
        kept = None
        train_sizes = per_block.sum(axis=0)
        part_f = plan.partition
        labels = X.map_blocks(
            _block_assign, part_f, dtype=np.intp, drop_axis=1, chunks=(X.chunks[0],)
        )
        del used
    timings["partition"] = time.perf_counter() - t0
    k = len(train_sizes)
    biggest = int(max(train_sizes))
    cache_mib = _worker_cache_mib(est, client, limit)
    need = _cell_bytes(biggest, d, cache_mib)
    if need > CELL_MEMORY_SHARE * limit:
        raise MemoryError(
            f"the largest cell trains on {biggest} examples, which need about "
            f"{need / 2**20:.0f} MiB on one worker, more than "
            f"{CELL_MEMORY_SHARE:.0%} of the workers' memory_limit of {limit / 2**20:.0f} MiB: "
            f"use a smaller cell_size (or more n_cells), a smaller overlap or cache_size, "
            f"or workers with more memory"
        )
    params = _cell_params(est, plan.spec, 1, cache_mib)
    if plan.class_factors is not None:
        params["_class_factors"] = plan.class_factors
    tuning = _cell_tuning(est, rng, k)
    classes = plan.classes
    t0 = time.perf_counter()
    per_row = X.dtype.itemsize * d + 4
    wave_bytes = WAVE_MEMORY_SHARE * limit * n_workers
    cell_bytes = [float(size) * per_row for size in train_sizes]
    waves = _in_groups(range(k), cell_bytes, wave_bytes)
    # Where the models go is decided after the first wave, from its models'
    # bytes scaled to all the cells' rows: the client gathers each wave's
    # models as the wave ends (freeing the workers), or the workers write
    # each wave's models to their disks in packs.
    metas: list = [None] * k
    results: list = [None] * k
    keep = None
    _on_every_worker(client, _remove_orphan_packs)
    stored = _Stored(uuid.uuid4().hex, client)
    total_rows = float(np.sum(train_sizes))
    fit_cell = dask.delayed(_fit_cell_pieces, pure=False)
    try:
        for wave in waves:
            # A block's pieces go out in groups of cells (one task output per
            # group, not per cell: the scheduler's tasks grow with the blocks
            # times the groups); each cell's task takes its group's output of
            # every block.
            groups = _in_groups(wave, cell_bytes, PIECE_GROUP_BYTES)
            ng = len(groups)
            pieces = []
            for b in range(nblocks):
                ex = dask.delayed(_block_extract, pure=False, nout=ng)(
                    xb[b], yb[b], entries[b], classes, groups
                )
                pieces.append([ex] if ng == 1 else [ex[g] for g in range(ng)])
            fits = futures.compute(
                [
                    fit_cell(
                        params if tuning[j] is None else {**params, "_tune": tuning[j]},
                        j,
                        *[pieces[b][g] for b in range(nblocks)],
                    )
                    for g, group in enumerate(groups)
                    for j in group
                ]
            )
            meta_futs = futures.map(_cell_meta, fits)
            for i, m in enumerate(futures.gather(meta_futs)):
                metas[wave[i]] = m
            futures.drop(meta_futs)
            if keep is None:
                done_rows = float(sum(train_sizes[j] for j in wave))
                first_bytes = float(sum(metas[j][6] for j in wave))
                keep = first_bytes * total_rows / max(done_rows, 1.0) > MODEL_MEMORY_SHARE * limit
            if keep:
                # The wave's models go to files on the workers that trained
                # them (one task per pack, where its cells are); their fits
                # are then dropped, so what the workers hold in memory does
                # not grow with the cells solved.
                stored.add(futures, fits, wave, metas, PACK_MEMORY_SHARE * limit)
            else:
                for i, r in futures.gather_in_order(fits):
                    results[wave[i]] = r
            report.log(2, "CellSVC fit (Dask): %d of %d cells", wave[-1] + 1, k)
    except BaseException:
        # The packs already written go with the failed fit.
        _forget_packs(client, stored.prefix)
        raise
    del entries, pieces, fits
    models = None
    if keep:
        report.log(
            2,
            "CellSVC fit (Dask): the cells' models (%d MiB) stay on the workers",
            sum(m[6] for m in metas) >> 20,
        )
        results = metas
        models = stored.models(k, sum(m[6] for m in metas))
    timings["svm"] = time.perf_counter() - t0
    futures.release()
    return _attributes(est, plan, results, train_sizes, timings, labels, models)


class ClusterModels(Sequence):
    """The cells' SVMs of a Dask fit, kept on the cluster's workers.

    :meth:`CellSVC.fit <localsvm.CellSVC.fit>` on a Dask collection leaves
    the models on the workers that trained them when together they take
    more than a twentieth of one worker's memory limit (``MODEL_MEMORY_SHARE``):
    packed in groups of cells (at most ``PACK_MEMORY_SHARE`` of a worker's
    limit each), each pack written to a file beside its worker's
    ``local_directory`` as soon as its wave of cells is solved; the client
    keeps each file's name, cells and host, and no worker holds anything
    of the models in memory. ``cell_models_`` is then this sequence:
    indexing it fetches one cell's model (None for a cell holding one
    class), iterating or pickling it brings every model to the client.
    Prediction runs on the workers of the machines whose disks hold the
    packs (see :func:`predict_dask`), a task reading one pack at a time.
    The files outlive a worker's restart; they are removed when this object
    is garbage-collected (or, if the client's process ends first, by the
    next Dask fit on that machine). Should a machine and its files be lost,
    a prediction that needs them raises ``FileNotFoundError`` naming the
    file: fit again.
    """

    def __init__(
        self, packs: list, groups: list, n_cells: int, nbytes: int = 0, prefix=None, client=None
    ):
        #: The packs' handles (:class:`_StoredPack`), one per group of cells.
        self.packs = packs
        self.groups = groups
        self.client = client
        #: Bytes of the models' arrays (support vectors, coefficients).
        self.nbytes = int(nbytes)
        self.group_of = np.zeros(n_cells, dtype=np.int32)
        self.position = np.zeros(n_cells, dtype=np.int32)
        for g, cells in enumerate(groups):
            self.group_of[cells] = g
            self.position[cells] = np.arange(len(cells))
        #: The start of the names of the pack files (None: not on disk).
        self.prefix = prefix
        if prefix is not None and packs:
            import weakref

            weakref.finalize(self, _forget_packs, client, prefix)

    def __len__(self) -> int:
        return int(self.group_of.shape[0])

    def __getitem__(self, j):
        if isinstance(j, slice):
            return [self[i] for i in range(len(self))[j]]
        j = range(len(self))[j]
        pack = self.packs[self.group_of[j]]
        where = _on_host(self.client, pack.host)
        return self.client.submit(_pick, pack, int(self.position[j]), pure=False, **where).result()

    def gather(self) -> list:
        """Every cell's model on the client, a pack at a time."""
        out: list = [None] * len(self)
        for handle in self.packs:
            where = _on_host(self.client, handle.host)
            pack = self.client.submit(_load_pack, handle, pure=False, **where).result()
            for j, model in zip(pack.cells, pack.models, strict=True):
                out[int(j)] = model
            del pack
        return out

    def __iter__(self):
        return iter(self.gather())

    def __reduce__(self):
        return (list, (self.gather(),))

    def __repr__(self) -> str:
        return f"ClusterModels({len(self)} cells in {len(self.packs)} packs on the cluster)"


def _on_host(client, host: str) -> dict:
    """Task placement on the workers of ``host`` (where a pack's file is),
    any other worker allowed (which then names the missing file)."""
    if not host:
        return {}
    from distributed.comm import get_address_host

    here = [a for a in _workers(client) if get_address_host(a) == host]
    return {"workers": here, "allow_other_workers": True} if here else {}


def _on_every_worker(client, task, *args) -> None:
    """Start ``task(*args)`` on every worker, not waiting for it."""
    try:
        from distributed import fire_and_forget

        for addr in list(_workers(client)):
            fire_and_forget(
                client.submit(task, *args, workers=[addr], allow_other_workers=True, pure=False)
            )
    except Exception:  # the client or the cluster is gone
        pass


def _forget_packs(client, prefix: str) -> None:
    """Remove the pack files of one fit on every worker (run when its
    :class:`ClusterModels` is garbage-collected; a fit whose client process
    ended first leaves them to the next fit's
    :func:`_remove_orphan_packs`)."""
    _on_every_worker(client, _remove_packs, prefix)


class _Stored:
    """The packs of one Dask fit's kept models, written wave by wave."""

    def __init__(self, fit_id: str, client):
        self.prefix = f"{PACK_FILE_PREFIX}{_fit_owner()}-{fit_id}-"
        self.packs: list = []
        self.groups: list = []
        self.client = client

    def add(self, futures, fits: list, wave: list, metas: list, budget: float) -> None:
        """Pack a wave's models (``fits``, the futures of its cells
        ``wave``) on the workers that hold them, in groups of at most
        ``budget`` bytes, wait for the files, and drop the fits."""
        from distributed import wait

        who = futures.client.who_has(fits)
        by_worker: dict = {}
        for i, f in enumerate(fits):
            addrs = who.get(f.key) or ("",)
            by_worker.setdefault(addrs[0], []).append(i)
        model_bytes = {i: metas[wave[i]][6] for i in range(len(wave))}
        new = []
        for addr, items in by_worker.items():
            for group in _in_groups(items, model_bytes, budget):
                where = {"workers": [addr], "allow_other_workers": True} if addr else {}
                cells = np.array([wave[i] for i in group], dtype=np.intp)
                name = f"{self.prefix}{len(self.packs) + len(new)}.pkl"
                args = [fits[i] for i in group]
                new.append(futures.submit(_store_pack, name, cells, *args, **where))
                self.groups.append(cells)
        wait(new)
        for p in new:
            if p.status == "error":
                p.result()
        # The client keeps the handles, not the futures: nothing of the
        # models stays in a worker's memory, and a worker that restarts
        # later loses none of them (their files outlive it).
        self.packs.extend(futures.gather(new))
        futures.drop(new)
        futures.drop(fits)

    def models(self, n_cells: int, nbytes: int) -> ClusterModels:
        return ClusterModels(self.packs, self.groups, n_cells, nbytes, self.prefix, self.client)


def _route_sums(parts: list) -> list:
    """The routing pass's counts, gap and margin histograms summed over the
    blocks by trees of tasks."""
    import dask

    add = dask.delayed(_add, pure=False)
    return [_tree(add, [p[i] for p in parts]) for i in range(3)]


def _cap_rows(n: int, k: int) -> np.ndarray:
    """The rows at a fixed stride that set the routing ceilings
    (``CAP_SAMPLE_PER_CELL`` per cell, at most all ``n``)."""
    m = min(n, CAP_SAMPLE_PER_CELL * k)
    return (np.arange(m, dtype=np.int64) * n) // m


def _all_rows(start: int, stop: int):
    """Every row of a block in the one cell."""
    return (np.array([0, stop - start]), np.arange(stop - start, dtype=np.int32))


def _tree(add, items: list, fan: int = 8):
    """A reduction tree of ``add`` over delayed ``items``."""
    while len(items) > 1:
        items = [add(*items[i : i + fan]) for i in range(0, len(items), fan)]
    return items[0]


def _light(est):
    """The fitted estimator without the training data's labels (nor the
    cells' models when they stay on the cluster), run with one thread: what
    a worker needs to predict."""
    model = copy.copy(est)
    model.__dict__.pop("cell_labels_", None)
    if isinstance(model.__dict__.get("cell_models_"), ClusterModels):
        model.cell_models_ = None
    model.n_jobs = 1
    return model


def models_on_cluster(est) -> bool:
    """Whether a fitted estimator's cell models stay on a Dask cluster."""
    return isinstance(getattr(est, "cell_models_", None), ClusterModels)


def _route_pieces(X, light, group_of: np.ndarray, n_groups: int, hard: bool):
    """A Dask task: one block of test rows split by the packs of the cells
    that label them: per pack ``(rows, X rows, cells, weights)``. A row goes
    to its nearest cell with weight 1, or with ``routing='soft'`` near a
    border to its two nearest with the weights ``w`` and ``1 − w`` (as
    :meth:`CellSVC.decision_function <localsvm.CellSVC.decision_function>`).
    Routed ``SCORE_BLOCK_BYTES`` of scores at a time."""

    X = light._predict_prologue(np.asarray(X))
    n = X.shape[0]
    rows = np.arange(n)
    k = 1 if light.partition_ is None else light.partition_.n_cells
    step = max(1, SCORE_BLOCK_BYTES // (4 * k))
    weights = np.ones(n)
    if hard or light.partition_ is None:
        cells = np.zeros(n, dtype=np.intp)
        for s in range(0, n, step):
            cells[s : s + step] = light._route(X[s : s + step])
    else:
        first, second = np.empty(n, dtype=np.intp), np.empty(n, dtype=np.intp)
        w = np.empty(n)
        for s in range(0, n, step):
            first[s : s + step], second[s : s + step], w[s : s + step] = light._soft_weights(
                X[s : s + step]
            )
        # Rows far inside their cell take its value alone (weight 1).
        near = np.flatnonzero(w < 1.0 - SOFT_NEGLIGIBLE)
        weights[near] = w[near]
        rows = np.concatenate([rows, near])
        cells = np.concatenate([first, second[near]])
        weights = np.concatenate([weights, 1.0 - w[near]])
    if n_groups == 1:
        return ((rows, X[rows] if rows.shape[0] != n else X, cells, weights),)
    group = group_of[cells]
    out = []
    for g in range(n_groups):
        sel = np.flatnonzero(group == g)
        out.append((rows[sel], X[rows[sel]], cells[sel], weights[sel]))
    return tuple(out)


def _eval_piece(piece, pack: _CellPack, light, what: str, hard: bool):
    """A Dask task: one pack's cells' values for their rows of one block
    (class indices, or weighted decision values)."""
    rows, X, cells, weights = piece
    if X.shape[0] == 0:
        return rows, None
    pack = pack.load()
    model = copy.copy(light)
    models: list = [None] * len(model.cell_classes_)
    for j, m in zip(pack.cells, pack.models, strict=True):
        models[int(j)] = m
    model.cell_models_ = models
    if what == "predict" and hard:
        return rows, model._region_predict(X, cells)
    dec = model._region_decision(X, cells)
    return rows, dec * (weights if dec.ndim == 1 else weights[:, None])


def _combine(n: int, classes: np.ndarray, what: str, hard: bool, *parts):
    """A Dask task: one block's predictions or decision values from its
    pieces (two weighted terms at most per row: their sum is the same in
    any order)."""
    from ._multiclass import scores_index

    if what == "predict" and hard:
        idx = np.zeros(n, dtype=np.intp)
        for rows, v in parts:
            if v is not None:
                idx[rows] = v
        return classes[idx]
    width = classes.shape[0]
    dec = np.zeros(n) if width == 2 else np.zeros((n, width))
    for rows, v in parts:
        if v is not None:
            np.add.at(dec, rows, v)
    return classes[scores_index(dec)] if what == "predict" else dec


def _predict_on_cluster(est, X, what: str):
    """Predictions of a Dask array by the cells' models where they are:
    each block routed, split by pack, each piece labelled by the worker
    holding its pack, and the pieces put together per block."""
    import dask
    import dask.array as da

    if any(math.isnan(c) for c in X.chunks[0]):
        X = X.compute_chunk_sizes()
    models: ClusterModels = est.cell_models_
    client = models.client
    limit = _worker_memory(client)[1]
    rows = max(1, int(PREDICT_BLOCK_SHARE * limit) // (8 * max(1, X.shape[1])))
    if X.chunks[0] and max(X.chunks[0]) > rows:
        # A routing task holds its block several times over (float64 rows,
        # scores, the pieces): at 10⁷ rows, blocks of 250 000 rows took a
        # 512 MiB worker past its limit on top of its share of the model's
        # leftovers. Each row is labelled alone: the same predictions.
        X = X.rechunk({0: rows})
    light = dask.delayed(_light(est), name=f"localsvm-cellsvc-{uuid.uuid4().hex}")
    hard = est.routing == "hard" or est.partition_ is None
    n_groups = len(models.packs)
    route = dask.delayed(_route_pieces, pure=False, nout=n_groups)
    evaluate = dask.delayed(_eval_piece, pure=False)
    combine = dask.delayed(_combine, pure=False)
    classes = est.classes_
    # Each pack's pieces are labelled on a worker of the machine whose disk
    # holds the pack (its rows travel, not the pack).
    where = {h: _on_host(client, h) for h in {p.host for p in models.packs}}
    blocks = []
    for b, xb in enumerate(X.to_delayed().ravel()):
        n = int(X.chunks[0][b])
        pieces = route(xb, light, models.group_of, n_groups, hard)
        if n_groups == 1:
            pieces = [pieces]
        parts = []
        for g in range(n_groups):
            with dask.annotate(**where[models.packs[g].host]):
                parts.append(evaluate(pieces[g], models.packs[g], light, what, hard))
        out = combine(n, classes, what, hard, *parts)
        if what == "predict" or classes.shape[0] == 2:
            dtype = classes.dtype if what == "predict" else np.dtype(np.float64)
            blocks.append(da.from_delayed(out, shape=(n,), dtype=dtype))
        else:
            blocks.append(da.from_delayed(out, shape=(n, classes.shape[0]), dtype=np.float64))
    return da.concatenate(blocks, axis=0)


def predict_dask(est, X, what: str):
    """Predictions or decision values of a Dask collection, as a Dask array
    mapped block by block (the model goes to the workers once)."""
    import dask
    import dask.array as da

    if not isinstance(X, da.Array):
        to = getattr(X, "to_dask_array", None)
        if to is None:
            raise TypeError(f"X is a Dask collection of type {type(X).__name__}")
        X = to()
    if X.ndim != 2 or X.shape[1] != est.n_features_in_:
        raise ValueError(
            f"X has {X.shape[1] if X.ndim == 2 else X.shape} features, but "
            f"{type(est).__name__} is expecting {est.n_features_in_} features as input."
        )
    X = X.rechunk({1: -1})
    if models_on_cluster(est):
        return _predict_on_cluster(est, X, what)
    # One key in the graph: each worker fetches the model once, and a worker
    # that dies can get it again (scattered data could not be recovered).
    model = dask.delayed(_light(est), name=f"localsvm-cellsvc-{uuid.uuid4().hex}")
    n_classes = est.classes_.shape[0]
    if what == "predict" or n_classes == 2:
        dtype = est.classes_.dtype if what == "predict" else np.dtype(np.float64)
        return X.map_blocks(
            _predict_block, model, what, dtype=dtype, drop_axis=1, meta=np.empty((0,), dtype)
        )
    return X.map_blocks(
        _predict_block,
        model,
        what,
        dtype=np.float64,
        chunks=(X.chunks[0], (n_classes,)),
        meta=np.empty((0, 0), np.float64),
    )


def predict_arrays_on_cluster(est, X, what: str) -> np.ndarray:
    """Predictions or decision values of in-memory rows by cell models kept
    on the cluster: the rows go to the workers in chunks of
    ``CHUNK_BYTES`` (as a Dask array inside the task graph, which the
    scheduler places on live workers; Distributed warns of a large graph
    for tens of MiB of rows) and the answer comes back."""
    import dask.array as da

    X = est._predict_prologue(X)
    if sp.issparse(X):
        X = X.toarray()
    chunk = _chunk_rows(X)
    return predict_dask(est, da.from_array(X, chunks=(chunk, X.shape[1])), what).compute()
