"""``localsvm.CellSVC``: a kernel SVM per cell of the input space, for data
too large for one global kernel SVM.

The training data is split into cells by kernel k-means on a sample (the
divide step of C.-J. Hsieh, S. Si and I. S. Dhillon, "A Divide-and-Conquer
Solver for Kernel SVMs", ICML 2014), each cell's kernel SVM is trained on its
members plus the examples of neighbouring cells nearest to it (overlapping
cells, as the localized SVMs of I. Steinwart and P. Thomann, "liquidSVM: A
Fast and Versatile SVM Package", arXiv:1702.06899, 2017, and of M. Meister
and I. Steinwart, "Optimal Learning Rates for Localized SVMs", JMLR 17,
2016), and a test example is labelled by the SVM of its cell, DC-SVM's
"early prediction". The cost of the SMO solves then grows linearly with the
number of examples for a fixed cell size, instead of about quadratically.
"""

from __future__ import annotations

import math
import time
import warnings
from numbers import Integral, Real
from typing import ClassVar

import numpy as np
import scipy.sparse as sp
from sklearn.model_selection import PredefinedSplit
from sklearn.utils.validation import check_is_fitted, check_random_state

from ._base import (
    CACHE_CLASS_WEIGHT_CONSTRAINTS,
    FEATURE_KERNELS,
    BaseSVMClassifier,
    labels_of_every_row,
    restore_on_interrupt,
    store_params,
    weighted_training_rows,
)
from ._compat import GroupsConsumerMixin, HasMethods, Interval, StrOptions, fit_context
from ._memory import check_memory
from ._multiclass import scores_index
from ._outofcore import (
    NO_CHOICE,
    SOFT_QUANTILE,
    _cell_params,
    _CellSVM,
    describe_cell,
    fit_chunked,
    fit_dask,
    input_kind,
    is_dask_collection,
    models_on_cluster,
    predict_arrays_on_cluster,
    predict_chunked,
    predict_dask,
    tune_cell,
)
from ._regions import RegionModelsMixin, region_iterations
from .cells import SOFT_NEGLIGIBLE, fit_cells, soft_weights, two_nearest
from .parallel import effective_n_jobs, run_tasks
from .tuning import SVCCV, _grid

__all__ = ["CellSVC"]

#: ``cell_size='auto'``: training examples per cell before the overlap.
AUTO_CELL_SIZE = 10000


#: Training examples whose margins between their two nearest cells are
#: found at once (bounds the partial sort's copy of their scores).
MARGIN_BLOCK = 1 << 16

#: Bytes per stored routing score (float32): the ``n × n_cells`` scores of
#: the training examples are kept while the cells' overlaps are chosen.
SCORE_BYTES = 4

#: Largest ``n × n_cells`` score matrix (bytes) an in-memory fit keeps. A
#: dense fit without ``sample_weight`` whose matrix would be larger takes
#: the chunked route's passes over blocks of rows instead: its memory does
#: not grow with ``n · n_cells``, nor its partition time faster than ``n``
#: (its two routing passes cost more than the in-memory plan's partition on
#: small score matrices, less on large ones).
IN_MEMORY_SCORES_BYTES = 256 << 20

#: ``tune_size='auto'``: a cell's search runs on at most this many of its
#: training rows. The search's kernel values and SMO work grow with the
#: square of its rows (and the solves near the grid's largest ``C`` are the
#: slowest), so a fixed number of rows keeps each cell's search a bounded
#: multiple of its own fit, however large the cells are.
AUTO_TUNE_SIZE = 2000


def _fit_cell(task, shared):
    """Fit one cell's SVM on its training rows (None for a one-class cell);
    a :func:`~localsvm.run_tasks` task, module-level so it pickles."""
    if task is None:
        return None
    X, y_idx, weights, params = shared
    return _CellSVM(**params).fit(X[task], y_idx[task], sample_weight=weights[task])


def _tune_cell(task, shared):
    """One cell of ``CellSVC(tune=True)``: its ``(C, gamma)`` chosen on its
    training rows, then its SVM (:func:`tune_cell`); a
    :func:`~localsvm.run_tasks` task, module-level so it pickles. ``task``
    is None (a one-class cell) or ``(rows, seed)``."""
    if task is None:
        return None, NO_CHOICE
    rows, seed = task
    X, y_idx, weights, params, search = shared
    return tune_cell(X[rows], y_idx[rows], weights[rows], params, search, seed)


def _describe_tuned(out) -> str:
    """A log line's account of one tuned cell."""
    model, (C, gamma, score, tuned, seconds, _) = out
    if model is None:
        return describe_cell(model)
    how = f"CV score {score:.4f} in {seconds:.2f} s" if tuned else "not tuned (rare class)"
    return f"C={C:.4g}, gamma={gamma:.4g}, {how}; {describe_cell(model)}"


class CellSVC(RegionModelsMixin, BaseSVMClassifier):
    """Localized kernel SVM on cells: kernel k-means cells, one SVM each.

    Fit:

    1. ``gamma`` is resolved once on the whole training set, so every cell's
       SVM and the partition use the same kernel (``kernel_spec_``).
    2. Kernel k-means clusters a random sample of the training data
       (``sample_size``) into ``n_cells`` cells, and every training example
       goes to the cell whose sampled members' mean, in the kernel's feature
       space, is nearest (Hsieh, Si & Dhillon [1]_, two-step kernel k-means).
       ``n_cells`` defaults to ``ceil(n / cell_size)``. A cell that receives
       more than twice ``ceil(n / n_cells)`` examples is cut by kernel
       k-means of its own members (up to three rounds), so the budget holds
       however unevenly the sample's clustering divided the data;
       ``n_cells_`` counts the cells in the end.
    3. Each cell's SVM (a :class:`localsvm.SVC` with this kernel, ``C``,
       ``tol``, ``max_iter``, ``backend``) is trained on the cell's members
       plus the ``overlap · |cell|`` examples of other cells nearest to the
       cell in kernel space, so the examples near a cell's border are
       learnt with their neighbours on both sides (overlapping cells, as
       Steinwart & Thomann [2]_). The cells are solved through
       :func:`localsvm.run_tasks`, so an engine (Dask, say) can spread them.
       A cell whose training rows hold one class has no SVM and predicts
       that class. With ``tune=True`` each cell first chooses its own ``C``
       and ``gamma`` (below).

    Predict: a test example goes to its cell by the same rule as the
    training examples, and the cell's SVM labels it; with
    ``routing='soft'`` (the default) an example near a border, within the
    region its second-nearest cell took as overlap, is labelled by the
    weighted decision values of its two nearest cells' SVMs.

    Cost: for a fixed cell size ``s`` each SMO solve costs about what a
    global SVM on ``s·(1 + overlap)`` examples costs, so the fit grows
    linearly with ``n``; prediction evaluates one cell's support vectors per
    example. Accuracy grows with ``cell_size`` and ``overlap`` towards the
    global SVM's.

    More than two classes: each cell's SVM is a one-vs-one
    :class:`localsvm.SVC` over the classes its training rows hold.

    Tuning (``tune=True``): every cell picks its own ``(C, gamma)`` by
    cross-validation, as liquidSVM does by default (Steinwart & Thomann
    [2]_): :class:`localsvm.SVCCV`'s search, which solves each (γ, fold)
    along the increasing ``Cs`` with warm starts, runs on up to
    ``tune_size`` of the cell's training rows (members and overlap, a
    random subsample beyond that) with the weights the whole training set
    gave them, and the cell's SVM is then trained on all its rows at the
    winner. An int ``gammas`` is a grid around the cell's own γ_scale =
    1 / (n_features · var) of those rows, not the whole set's: a cell sees
    only its region, whose spread can be far from the whole data's, and a
    cell is tuned exactly as ``SVCCV`` would tune it on its rows. The
    defaults (5 × 5 candidates, 3 folds, 2000 rows) are smaller than
    ``SVCCV``'s (10 × 10, 5 folds, all rows) because the search runs once
    per cell: its cost grows with the square of its rows and linearly with
    candidates and folds, so on large data the cells' searches together
    stay near the cost of the cells' fits instead of a multiple of it. A
    cell whose tuning rows hold a class with fewer examples than an int
    ``cv``'s number of folds cannot be cross-validated (with a splitter:
    one that gives the cell no training fold with all its classes), nor
    can one whose search scores no candidate on every fold (a fold's fits
    failed, as when a splitter that does not stratify leaves a class out
    of a training fold):
    it is trained at ``C`` and the resolved ``gamma`` (the values of
    ``tune=False``), marked False in ``cell_tuned_``, and one
    ``UserWarning`` names those cells. ``C``
    chosen on a subsample is used unchanged on the cell's whole rows, as
    in the usual workflow of tuning on a subsample.

    Parameters
    ----------
    C : float, default=1.0
        Regularisation of each cell's SVM; must be positive.
    kernel : {'rbf', 'linear', 'poly', 'sigmoid'}, default='rbf'
        Kernel of the cells' SVMs and of the partition.
    degree : int, default=3
        Degree of the 'poly' kernel.
    gamma : {'scale', 'auto'} or float, default='scale'
        Kernel coefficient of 'rbf', 'poly' and 'sigmoid'; 'scale'
        (``1 / (n_features · X.var())``) and 'auto' (``1 / n_features``) are
        resolved on the whole training set.
    coef0 : float, default=0.0
        Constant term of the 'poly' and 'sigmoid' kernels.
    cell_size : int or 'auto', default='auto'
        Training examples per cell (before the overlap), at least 2 and at
        most the number of training examples; sets
        ``n_cells = ceil(n / cell_size)``. 'auto' is 10 000 (one cell, the
        global SVM, for at most 10 000 examples). Each SMO solve holds about
        ``cell_size · (1 + overlap)`` examples. On a Dask cluster a cell's
        solve must fit half of one worker's ``memory_limit`` (else
        ``MemoryError`` naming ``cell_size`` and the limit), and a model
        too large for the client is kept in files on the workers' disks
        (about ``(4·d + 20)·(1 + overlap)·n`` bytes at most for float32
        rows), not in their memory: see Notes.
    n_cells : int or None, default=None
        Number of cells, overriding ``cell_size``; at most the number of
        training examples. 1 is the global SVM.
    overlap : float, default=1.0
        Each cell also trains on this fraction of its size of the nearest
        examples of other cells (by the difference of their kernel distances
        to this cell and to their own); 0 makes the cells disjoint (DC-SVM's
        early prediction: no cell reaches past its border, so
        ``routing='soft'`` labels as 'hard' does), larger values buy
        accuracy at about ``(1 + overlap)²`` times the cost of the solves.
    sample_size : int or 'auto', default='auto'
        Examples clustered by kernel k-means. 'auto':
        ``max(2000, 20 · n_cells)``, at most ``n`` and 4096 (the sample's
        kernel matrix within 128 MiB). Larger samples give cells closer to
        kernel k-means on all the data, at ``O(n · sample_size)`` kernel
        evaluations to route the training and test examples.
    routing : {'soft', 'hard'}, default='soft'
        'hard': an example is labelled by its own cell's SVM alone. 'soft':
        by the decision values of its two nearest cells' SVMs, the second
        weighted ``(1 − σ(m / routing_scale_)) · f(m / τ)`` and the nearest
        the rest, for the margin ``m = s₂ − s₁`` between its kernel
        distances ``s₁ ≤ s₂`` to the two cells, σ the logistic function,
        ``τ`` the second cell's ``cell_overlap_reach_`` and
        ``f(t) = 1 − 3t² + 2t³`` on ``[0, 1]``, 0 beyond. An example near a
        border, which both cells trained on through the overlap, is then
        not decided by which side it falls on, while an example beyond the
        second cell's reach (``m ≥ τ``: that cell took no training example
        as far from it) gets its own cell's value alone, however small
        ``m`` is (kernel distances saturate far from a cell); the weight is
        continuous in ``m``. ``routing_scale_`` is the 5th percentile of
        ``s₂ − s₁`` over the training examples, so only the examples
        nearest a border are blended much (wider blending helped on some
        data and cost accuracy on others, e.g. ijcnn1). Rows whose own
        cell weighs more than ``1 − 10⁻⁴`` cost one cell's SVM; the others
        two.
    tune : bool, default=False
        Choose ``C`` and ``gamma`` per cell by cross-validation (see
        Tuning above); ``C`` and ``gamma`` are then the values of the cells
        that cannot be tuned. On a Dask collection each cell's search runs
        on the worker that trains the cell, on the rows gathered there.
    Cs : int or array-like of float, default=5
        ``tune=True``: the ``C`` values, or how many on
        :class:`localsvm.SVCCV`'s default grid 10⁻¹ … 10³ (log-spaced);
        positive, finite, not repeated.
    gammas : int or array-like of float, default=5
        ``tune=True``: the ``gamma`` values, or how many on the grid
        γ_scale · 10⁻² … γ_scale · 10^1.5 around each cell's own γ_scale;
        positive and finite. Ignored for ``kernel='linear'``.
    cv : int or cross-validation splitter, default=3
        ``tune=True``: the folds of each cell's search: an int for that
        many (``StratifiedKFold``, shuffled by a seed drawn per cell from
        ``random_state``), or a scikit-learn splitter (with ``split`` and
        ``get_n_splits``), applied to each cell's tuning rows: one that
        splits whatever rows it is given. ``PredefinedSplit`` and the
        splitters by groups (``GroupKFold``, ``LeaveOneGroupOut``, ...),
        whose folds are set per row of the whole training set, raise
        ``ValueError``.
    tune_size : int, 'auto' or None, default='auto'
        ``tune=True``: training rows of a cell its search runs on (a random
        subsample when the cell has more); 'auto' is 2000, None all of
        them.
    tol : float, default=1e-3
        SMO's stopping tolerance for each cell's SVM.
    max_iter : int, default=-1
        Iteration cap per binary problem of a cell (-1: the solver's safety
        cap); a cell stopped by it is counted in one ``ConvergenceWarning``.
    cache_size : float, default=200
        Megabytes of kernel cache of all the cell SVMs trained at once,
        together. On a Dask cluster each cell's SVM has at most
        ``cache_size`` and at most 5 % of its worker's ``memory_limit``
        divided by the worker's threads (26 MB at 512 MiB): a smaller cache
        only computes kernel columns again, to the same model.
    class_weight : dict, 'balanced' or None, default=None
        Multiplies ``C`` per class, as in :class:`localsvm.SVC`: an example
        of class ``c`` has the box ``C · class_weight[c]`` (times its
        ``sample_weight``) in every cell SVM that trains on it. 'balanced' is
        ``n_samples / (n_classes · bincount(y))`` computed once on the whole
        training set, not per cell, so an imbalanced problem gets the same
        weights as with :class:`localsvm.SVC` however the cells divide it
        (``class_weight_``), also on an array read in chunks or a Dask
        collection ('balanced' from the first pass's class counts).
    backend : str, default='auto'
        A registered solver backend for the cells' SVMs.
    random_state : int, RandomState instance or None, default=None
        Seeds the sample and kernel k-means.
    n_jobs : int or None, default=None
        CPUs for the fit and prediction: cells solved at once (and a cell's
        binary solve on two threads when there are CPUs to spare).
    verbose : int, default=0
        Logging through :mod:`logging` (logger ``localsvm.cell_svc``): 1 one
        line per cell; 2 also the fit's steps.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The class labels, sorted.
    class_weight_ : ndarray of shape (n_classes,)
        The factor of ``C`` of each class (``class_weight`` resolved on the
        whole training set).
    n_features_in_ : int
        Number of features seen during fit.
    kernel_spec_ : KernelSpec
        The kernel with ``gamma`` resolved.
    partition_ : CellPartition
        The cells: their sampled members and the routing rule.
    n_cells_ : int
        Number of cells (cells that received no training example are
        dropped).
    cell_labels_ : ndarray of shape (n_samples,)
        The cell of each training example (-1 for an example that a weight
        of 0 left out of the fit).
    cell_sizes_ : ndarray of shape (n_cells_,)
        Training examples routed to each cell.
    routing_scale_ : float
        The scale of ``routing='soft'``'s weights: the 5th percentile, over
        the training examples, of the difference between the kernel
        distances to their two nearest cells (1.0 with a single cell).
    cell_overlap_reach_ : ndarray of shape (n_cells_,)
        Each cell's overlap reach: the largest gap ``s_cell(x) − s_own(x)``
        (kernel distance to this cell less that to the example's own) of
        the other cells' examples it trained on; 0 for a cell without
        overlap. ``routing='soft'`` gives a cell no share of a row whose
        margin to it is at least its reach.
    cell_train_sizes_ : ndarray of shape (n_cells_,)
        Examples each cell's SVM was trained on (members plus overlap).
    cell_classes_ : list of ndarray
        Class indices in each cell's training rows.
    cell_models_ : list
        Each cell's fitted :class:`localsvm.SVC`, or None for a one-class
        cell.
    cell_n_iter_ : ndarray of shape (n_cells_,)
        SMO iterations of each cell's SVM (0 without one).
    n_iter_ : int
        SMO iterations of all cells together.
    fit_status_ : int
        0 if every cell's solves reached ``tol``, 1 if any stopped at
        ``max_iter``.
    cell_C_ : ndarray of shape (n_cells_,)
        The ``C`` of each cell's SVM: chosen by its search with
        ``tune=True``, else ``C``; NaN for a cell without an SVM.
    cell_gamma_ : ndarray of shape (n_cells_,)
        The ``gamma`` of each cell's SVM (chosen, or the resolved
        ``gamma``); NaN for a cell without an SVM.
    cell_cv_score_ : ndarray of shape (n_cells_,)
        Each tuned cell's best mean held-out accuracy over its folds; NaN
        for a cell that was not tuned.
    cell_tuned_ : ndarray of shape (n_cells_,) of bool
        Whether each cell's ``C`` and ``gamma`` come from its search (False
        everywhere with ``tune=False``; with ``tune=True`` False for a
        one-class cell, a cell with too few examples of a class for
        ``cv`` and one whose search scored no candidate on every fold).
    timings_ : dict
        Seconds spent in 'partition' and 'svm' (the cells' searches and
        fits) during fit; with ``tune=True`` also 'tune', the cells'
        search seconds summed (cells that ran at once overlap).

    Notes
    -----
    Memory: the fit holds the ``n × n_cells`` routing scores (float32:
    ``4 · n · n_cells`` bytes), the sample's kernel matrix (at most
    128 MiB), and per cell solved at once a copy of its training rows
    (``8 · cell_size · (1 + overlap) · d`` bytes) and its share of
    ``cache_size``; a ``MemoryError`` naming ``cell_size`` is raised before
    anything is computed when that exceeds half of the available memory.
    Routing computes 16 MiB of float32 kernel values per thread at a time;
    values that overflow float32 (features of magnitude beyond about
    ``1e30``, or below about ``1e-30`` with ``gamma='scale'``, whose
    ``gamma`` is then about ``1e60``) raise ``ValueError`` at fit or
    prediction: scale the features.
    The fitted cells keep their support vectors, at most
    ``(1 + overlap)·n`` rows. In all, about
    ``cache_size + 4·n·n_cells + 8·(1 + overlap)·n·d`` bytes besides ``X``.
    The scores grow as ``n²/cell_size``: a dense fit without
    ``sample_weight`` whose scores would take more than 256 MiB (above
    about 8·10⁵ rows at the default ``cell_size``, 3.7·10⁵ at 2000) takes
    the route of an array read in chunks below instead, on the same
    in-memory array: the same model a memmap or a Dask collection of these
    rows gives, with 16 MiB of scores per thread and ``8·(3 + overlap)·n``
    bytes of bookkeeping in place of the score matrix, and routing passes
    that run in ``n_jobs`` threads and take time proportional to ``n``.
    With ``tune=True`` each cell being
    fitted also holds its search's kernel values, as :class:`localsvm.SVCCV`
    does for ``m = tune_size`` rows: shared kernel matrices of
    ``8 · m² · (2 + 2 · j)`` bytes for ``j`` threads per cell (128 MiB at
    2000 rows and one thread) when they fit half of the available memory,
    else per-fold kernel caches within the cell's share of ``cache_size``.

    Data no single array holds. ``fit``, ``predict`` and
    ``decision_function`` also take

    * a Dask collection (``dask.array`` ``X`` and ``y``, or a
      ``dask.dataframe`` and series; Dask and ``distributed`` are imported
      only then). The fit runs on the cluster of the current
      :class:`distributed.Client` and never gathers ``X`` to the client:
      the kernel k-means sample (``sample_size`` rows, drawn as in memory)
      is taken from the blocks on the workers; every block is checked
      (dtype, finiteness: the block and row of the first NaN are named) and
      routed once where it lives, and the client receives per block only cell
      counts and ``O(n_cells · 256)`` histograms of the routing gaps, from
      which it sets each cell's overlap (met to about one histogram bin,
      its gap ``cell_overlap_reach_``) and ``routing_scale_``. Until then
      each worker keeps, per cell, its blocks' rows whose gap lies below a
      ceiling set from rows at a fixed stride (8 bytes each, a few per row
      of ``X``), from which each cell's rows are picked (should a cell's
      overlap pass its ceiling, the blocks are routed a second time, to the
      same model); each cell's
      rows are then gathered, in waves that take at most 3 % of the
      workers' memory limits, to one
      worker, which trains the cell's SVM. Float32 rows keep float32
      support vectors (the same values, half the bytes). The model is the
      cells' support vectors, at most ``(1 + overlap)·n`` rows of ``4·d``
      (float32) or ``8·d`` bytes, each with about 20 bytes of
      coefficients, and the sample. It comes back to the client when it
      takes at most a twentieth of one worker's ``memory_limit`` (judged
      from the first wave of cells, scaled to all the rows); beyond
      that it stays with the workers that trained it, packed in groups of
      cells (each at most 4 % of a worker's ``memory_limit``) that are
      written, as each wave of cells ends, to files beside the worker's
      ``local_directory``: a worker's memory then holds the files' names,
      one wave's models and one cell's solve, however many cells there
      are, and its disk the model. ``cell_models_`` is a
      ``ClusterModels`` sequence of futures (indexing it fetches one
      cell's model; iterating or pickling it brings every model to the
      client): prediction then sends each block's rows to the packs of the
      cells they route to, each task reading one pack from its file, and
      in-memory rows go to the cluster in 32 MiB chunks. The files are
      removed when the ``ClusterModels`` is garbage-collected; those of a
      client process that ended first (a fit interrupted together with its
      cluster) are removed by the next Dask fit on the same machine.
      ``cell_labels_`` is a lazy
      Dask array. A cell whose solve needs more than half of a worker's memory
      limit (``16·d + 48`` bytes per training row plus its kernel cache)
      raises ``MemoryError`` before any cell is gathered. Row chunks of
      unknown size are computed on the workers first (each block's length
      comes back, not its values). ``predict`` and ``decision_function``
      return Dask arrays, mapped block by block (a model on the client
      travels to the workers once). A task whose worker dies runs again elsewhere (every
      task is deterministic: the model is the same); a cluster that goes
      away raises ``RuntimeError`` and leaves the estimator as it was;
      Ctrl-C cancels the fit's tasks (a cell solve already running on a
      worker ends by itself).
    * a NumPy memmap, or any 2-D array-like that is not an ndarray and
      slices by rows (an h5py or zarr array): read in chunks of 32 MiB, in
      the same passes. Besides the model, the fit then holds one chunk and
      its routing scores (16 MiB), the sample's kernel matrix, about
      ``8·(3 + overlap)·n`` bytes of bookkeeping (labels, each row's cell,
      the cells' row lists) and per cell solved at once its rows and kernel
      cache, all well below ``X`` itself for large ``n``.

    Both take the same route through the data, so a Dask fit and a memmap
    fit of the same rows give the same model. They differ from the
    in-memory fit in two details: a cell beyond twice its share is cut by
    kernel k-means of its sampled members (not of all its rows), and the
    overlap, ``cell_overlap_reach_`` (the gap under which the overlap is
    taken) and ``routing_scale_`` come from histograms. Prediction is the
    same on every route: a fitted model labels in-memory rows, a memmap
    and a Dask array alike.

    References
    ----------
    .. [1] C.-J. Hsieh, S. Si and I. S. Dhillon, "A Divide-and-Conquer
       Solver for Kernel SVMs", International Conference on Machine
       Learning (ICML), 2014.
    .. [2] I. Steinwart and P. Thomann, "liquidSVM: A Fast and Versatile SVM
       Package", arXiv:1702.06899, 2017.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from localsvm import CellSVC
    >>> X, y = make_classification(n_samples=3000, random_state=0)
    >>> clf = CellSVC(cell_size=1000, random_state=0).fit(X, y)
    >>> clf.n_cells_, bool(clf.score(X, y) > 0.9)
    (3, True)

    Each cell choosing its own ``C`` and ``gamma``:

    >>> tuned = CellSVC(cell_size=1000, tune=True, Cs=3, gammas=3, random_state=0)
    >>> tuned = tuned.fit(X, y)
    >>> tuned.cell_C_.shape, bool(tuned.cell_tuned_.all())
    ((3,), True)
    >>> bool(tuned.score(X, y) > 0.9)
    True
    """

    _region_attributes = ("cell_models_", "cell_classes_")

    _parameter_constraints: ClassVar[dict] = {
        **BaseSVMClassifier._parameter_constraints,
        "kernel": [StrOptions(set(FEATURE_KERNELS))],
        "cell_size": [Interval(Integral, 2, None, closed="left"), StrOptions({"auto"})],
        "n_cells": [Interval(Integral, 1, None, closed="left"), None],
        "overlap": [Interval(Real, 0.0, None, closed="left")],
        "sample_size": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "routing": [StrOptions({"soft", "hard"})],
        "tune": ["boolean"],
        "Cs": ["array-like", Interval(Integral, 1, None, closed="left")],
        "gammas": ["array-like", Interval(Integral, 1, None, closed="left")],
        "cv": [Interval(Integral, 2, None, closed="left"), HasMethods(["split", "get_n_splits"])],
        "tune_size": [Interval(Integral, 2, None, closed="left"), StrOptions({"auto"}), None],
        "random_state": ["random_state"],
        **CACHE_CLASS_WEIGHT_CONSTRAINTS,
    }

    def __init__(
        self,
        *,
        C=1.0,
        kernel="rbf",
        degree=3,
        gamma="scale",
        coef0=0.0,
        cell_size="auto",
        n_cells=None,
        overlap=1.0,
        sample_size="auto",
        routing="soft",
        tune=False,
        Cs=5,
        gammas=5,
        cv=3,
        tune_size="auto",
        tol=1e-3,
        max_iter=-1,
        cache_size=200,
        class_weight=None,
        backend="auto",
        random_state=None,
        n_jobs=None,
        verbose=0,
    ):
        store_params(self, locals())

    def _count_cells(self, n: int) -> int:
        """``n_cells``, or ``ceil(n / cell_size)``, checked against ``n``."""
        if self.n_cells is not None:
            if self.n_cells > n:
                raise ValueError(
                    f"n_cells={self.n_cells} is larger than the number of training "
                    f"examples (n={n}); pass at most {n}"
                )
            return int(self.n_cells)
        if self.cell_size == "auto":
            return max(1, math.ceil(n / AUTO_CELL_SIZE))
        if self.cell_size > n:
            raise ValueError(
                f"cell_size={self.cell_size} is larger than the number of training "
                f"examples (n={n}); pass at most {n}, or 'auto'"
            )
        return max(1, math.ceil(n / int(self.cell_size)))

    @restore_on_interrupt
    @fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Partition the training data into cells and train one SVM per cell.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array or dataframe} of shape (n_samples, n_features)
            Training examples: in memory, read in chunks (a NumPy memmap or
            another 2-D array-like with row slicing), or a Dask collection
            (fitted on its cluster's workers; see the class notes).
        y : array-like or dask array or series of shape (n_samples,)
            Class labels.
        sample_weight : array-like of shape (n_samples,), default=None
            Per-example multipliers of ``C``, composed with ``class_weight``;
            None weighs every example 1. An example's weight follows it into
            every cell SVM that trains on it (its own cell, and the cells
            whose overlap takes it). As in LIBSVM, an example of weight
            ``<= 0`` is left out before anything is computed (``gamma='scale'``
            and the partition included). In memory only: with ``X`` read in
            chunks or a Dask collection, ``sample_weight`` raises
            ``ValueError`` (``class_weight`` applies there).

        Returns
        -------
        self : CellSVC
            The fitted estimator.
        """
        kind = input_kind(X)
        if kind is None and is_dask_collection(y):
            kind = "dask"
        search = self._search_settings() if self.tune else None
        if kind is not None:
            # The chunked and Dask routes weigh the cells by class_weight
            # only: sample_weight is refused there, not dropped in silence.
            route = "a Dask collection" if kind == "dask" else "an array read in chunks"
            if sample_weight is not None:
                raise ValueError(
                    f"sample_weight is not supported when CellSVC is fitted on {route} "
                    f"(X of type {type(X).__name__}): its cells take class_weight only; "
                    "pass sample_weight=None, or fit on an in-memory array"
                )
            (fit_dask if kind == "dask" else fit_chunked)(self, X, y)
            if search is not None:
                self._warn_untuned(self.kernel_spec_, search)
            return self
        X, y, y_idx = self._fit_prologue(X, y)
        if (
            sample_weight is None
            and not sp.issparse(X)
            and SCORE_BYTES * X.shape[0] * self._count_cells(X.shape[0]) > IN_MEMORY_SCORES_BYTES
        ):
            # Large: the chunked route's passes, to the model a memmap or a
            # Dask collection of these rows gives.
            names = getattr(self, "feature_names_in_", None)
            fit_chunked(self, X, y)
            if names is not None:
                self.feature_names_in_ = names
            if search is not None:
                self._warn_untuned(self.kernel_spec_, search)
            return self
        n_given = X.shape[0]
        X, y, y_idx, weights, kept = weighted_training_rows(self, X, y, y_idx, sample_weight)
        n, d = X.shape
        k = self._count_cells(n)
        spec = self._resolve_kernel(X)
        rng = check_random_state(self.random_state)
        n_jobs = effective_n_jobs(self.n_jobs)
        at_once = max(1, min(k, n_jobs))
        per_cell = math.ceil(n / k) * (1.0 + float(self.overlap))
        check_memory(
            SCORE_BYTES * n * k + at_once * 8.0 * min(per_cell, n) * (d + 2),
            f"{k} cells of about {math.ceil(n / k)} training examples "
            f"(+{float(self.overlap):g} overlap)",
            "use a smaller cell_size (or n_cells), a smaller overlap, or fewer n_jobs",
        )
        report = self._fit_report(None, X, y)
        timings = {}
        start = time.perf_counter()
        sample = None if self.sample_size == "auto" else int(self.sample_size)
        if k == 1:
            partition = None
            labels = np.zeros(n, dtype=np.intp)
            scores = None
        else:
            partition, scores = fit_cells(
                X, k, spec=spec, random_state=rng, sample_size=sample, n_jobs=n_jobs
            )
            labels = np.argmin(scores, axis=0)
            k = partition.n_cells
            if k == 1:
                # Every other cell came out empty (all the data in one
                # cluster): one SVM on all of it, nothing to route.
                partition, scores = None, None
        timings["partition"] = time.perf_counter() - start
        report.log(2, "CellSVC fit: %d cells, partition %.3f s", k, timings["partition"])
        self.routing_scale_ = 1.0
        if scores is not None:
            margin = np.empty(n)
            for start in range(0, n, MARGIN_BLOCK):
                two = np.partition(scores[:, start : start + MARGIN_BLOCK], 1, axis=0)[:2]
                margin[start : start + two.shape[1]] = two[1].astype(np.float64) - two[0]
            positive = margin[margin > 0]
            if positive.size:
                self.routing_scale_ = float(np.quantile(positive, SOFT_QUANTILE))
        rows, self.cell_overlap_reach_ = self._cell_rows(labels, scores, k)
        self.partition_ = partition
        self.n_cells_ = k
        self.cell_labels_ = labels_of_every_row(labels, kept, n_given)
        self.cell_sizes_ = np.bincount(labels, minlength=k)
        self.cell_train_sizes_ = np.array([r.size for r in rows], dtype=np.int64)
        self.cell_classes_ = [np.unique(y_idx[r]) for r in rows]
        del scores
        params = _cell_params(
            self, spec, max(1, n_jobs // at_once), float(self.cache_size) / at_once
        )
        tasks = [r if self.cell_classes_[j].size >= 2 else None for j, r in enumerate(rows)]
        start = time.perf_counter()
        report.subtasks("cell", k)
        if search is None:
            self.cell_models_ = run_tasks(
                _fit_cell,
                tasks,
                n_jobs=at_once,
                shared=(X, y_idx, weights, params),
                **report.hooks(describe_cell),
            )
            fitted = np.array([m is not None for m in self.cell_models_])
            chosen = [
                (params["C"], spec.gamma, np.nan, False, 0.0, ()) if f else NO_CHOICE
                for f in fitted
            ]
        else:
            # One seed per cell, drawn before any cell runs: the subsample
            # and folds of a cell do not depend on n_jobs or on timing.
            seeds = rng.randint(np.iinfo(np.int32).max, size=k)
            out = run_tasks(
                _tune_cell,
                [None if t is None else (t, int(seeds[j])) for j, t in enumerate(tasks)],
                n_jobs=at_once,
                shared=(X, y_idx, weights, params, search),
                **report.hooks(_describe_tuned),
            )
            self.cell_models_ = [model for model, _ in out]
            chosen = [info for _, info in out]
        timings["svm"] = time.perf_counter() - start
        self.cell_C_ = np.array([c[0] for c in chosen], dtype=np.float64)
        self.cell_gamma_ = np.array([c[1] for c in chosen], dtype=np.float64)
        self.cell_cv_score_ = np.array([c[2] for c in chosen], dtype=np.float64)
        self.cell_tuned_ = np.array([c[3] for c in chosen], dtype=bool)
        self._cell_search_notes = [note for c in chosen for note in c[5]]
        if search is not None:
            timings["tune"] = float(sum(c[4] for c in chosen))
            self._warn_untuned(spec, search)
        self.timings_ = timings
        self.cell_n_iter_ = region_iterations(self.cell_models_)
        self.n_iter_ = int(self.cell_n_iter_.sum())
        stopped = [m is not None and m.fit_status_ != 0 for m in self.cell_models_]
        self.fit_status_ = int(self._warn_unconverged([not s for s in stopped], "cell SVMs"))
        report.log(1, "CellSVC fit: %d cell SVMs, %.3f s", k, timings["svm"])
        report.end(X, y)
        return self

    def _search_settings(self) -> dict:
        """The per-cell search's grid, folds and subsample size, the grids
        checked as :class:`localsvm.SVCCV` checks them (before any work)."""
        Cs = self.Cs
        if not isinstance(Cs, Integral):
            Cs = SVCCV(Cs=Cs)._c_grid()
        gammas = self.gammas
        if not isinstance(gammas, Integral):
            gammas = _grid(gammas, "gammas", None)
        size = self.tune_size
        if size == "auto":
            size = AUTO_TUNE_SIZE
        self._check_cell_cv()
        return {"Cs": Cs, "gammas": gammas, "cv": self.cv, "tune_size": size}

    def _check_cell_cv(self) -> None:
        """Refuse a ``cv`` that splits the whole training set's rows, not any
        rows it is given: each cell's search sees only the cell's rows."""
        cv = self.cv
        if isinstance(cv, Integral):
            return
        if isinstance(cv, PredefinedSplit) or hasattr(cv, "test_fold"):
            why = "assigns a fold to each row of the whole training set"
        elif isinstance(cv, GroupsConsumerMixin):
            why = "splits by groups, which are given per row of the whole training set"
        else:
            return
        raise ValueError(
            f"cv={cv!r} {why}, but CellSVC(tune=True) searches each cell on the cell's own "
            "training rows (its members and overlap, a random subsample of tune_size "
            "beyond that), so such a split cannot be applied within a cell. Pass an int "
            "(StratifiedKFold on each cell's rows) or a splitter that splits whatever rows "
            "it is given (KFold, StratifiedKFold, ShuffleSplit), or choose C and gamma "
            "with localsvm.SVCCV(cv=...) on all the rows and fit CellSVC(tune=False) at "
            "the chosen values"
        )

    def _warn_untuned(self, spec, search) -> None:
        """One warning naming the cells with two classes that were fitted
        at the untuned ``C`` and ``gamma``, and one per kind of warning the
        cells' searches gave (how many cells, and the first message)."""
        by_kind: dict = {}
        for category, message in getattr(self, "_cell_search_notes", []):
            by_kind.setdefault(category, []).append(message)
        for category, messages in by_kind.items():
            warnings.warn(
                f"CellSVC(tune=True): the searches of {len(messages)} cells warned; the "
                f"first: {messages[0]}",
                category,
                stacklevel=5,
            )
        fitted = np.array([m is not None for m in self.cell_models_])
        untuned = np.flatnonzero(fitted & ~self.cell_tuned_)
        if untuned.size == 0:
            return
        cv = search["cv"]
        if isinstance(cv, Integral):
            why = f"their tuning rows hold a class with fewer examples than cv={cv!r} has folds"
        else:
            why = f"cv={cv!r} gives their tuning rows no training fold with all their classes"
        warnings.warn(
            f"CellSVC(tune=True): {untuned.size} of {fitted.sum()} cell SVMs (cells "
            f"{untuned[:5].tolist()}{' ...' if untuned.size > 5 else ''}) were fitted at "
            f"C={self.C:g}, gamma={spec.gamma:.6g} without tuning: {why}, or their search "
            "scored no candidate on every fold (a fold's fits failed). cell_tuned_ marks "
            "the tuned cells; a smaller or stratified cv, a larger tune_size or larger cells "
            "tune them.",
            UserWarning,
            # Past fit's two wrappers (interrupt restore, parameter checks).
            stacklevel=5,
        )

    def _cell_rows(self, labels, scores, k) -> tuple[list[np.ndarray], np.ndarray]:
        """Each cell's training rows: its members, then the
        ``overlap · |members|`` other examples nearest to it (``scores``:
        ``(k, n)``, one cell's routing scores per row, by the gap
        ``scores[j] − own score``); and each cell's overlap reach, the
        largest gap it took (0 without overlap)."""
        members = [np.flatnonzero(labels == j) for j in range(k)]
        reach = np.zeros(k)
        if scores is None or float(self.overlap) == 0.0:
            return members, reach
        n = labels.shape[0]
        best = scores[labels, np.arange(n)]
        rows = []
        for j in range(k):
            extra = min(int(float(self.overlap) * members[j].size), n - members[j].size)
            if extra <= 0:
                rows.append(members[j])
                continue
            gap = scores[j] - best
            gap[members[j]] = np.inf
            near = np.argpartition(gap, extra - 1)[:extra]
            reach[j] = max(float(gap[near].max()), 0.0)
            rows.append(np.sort(np.concatenate([members[j], near])))
        return rows, reach

    # ------------------------------------------------------------ predict

    def _route(self, X: np.ndarray) -> np.ndarray:
        if self.partition_ is None:
            return np.zeros(X.shape[0], dtype=np.intp)
        return self.partition_.assign(X, effective_n_jobs(self.n_jobs))

    def _soft_weights(self, X: np.ndarray):
        """The two nearest cells of each validated row and the weight of
        the nearest (:func:`~localsvm.cells.soft_weights` of the margin
        ``s₂ − s₁`` between the kernel distances to the two cells' means,
        the second cell's ``cell_overlap_reach_`` and ``routing_scale_``)."""
        S = self.partition_.scores(X, effective_n_jobs(self.n_jobs))
        first, second = two_nearest(S)
        at = np.arange(S.shape[0])
        s = np.stack([S[at, first], S[at, second]], axis=1).astype(np.float64)
        reach_all = getattr(self, "cell_overlap_reach_", None)
        if reach_all is None:
            # A model pickled before the reach was recorded.
            raise AttributeError(
                "this CellSVC was fitted by an earlier localsvm without "
                "cell_overlap_reach_, which routing='soft' needs: refit it, or set "
                "routing='hard' (model.set_params(routing='hard'))"
            )
        reach = reach_all[second]
        w = soft_weights(s[:, 1] - s[:, 0], reach, self.routing_scale_)
        return first, second, w

    def _decision_valid(self, X: np.ndarray) -> np.ndarray:
        """Decision values of validated rows: their cell's SVM's, or with
        ``routing='soft'`` those of their two nearest cells, weighted."""
        if self.routing == "hard" or self.partition_ is None:
            return self._region_decision(X, self._route(X))
        return self._blended_decision(X, *self._soft_weights(X))

    def _blended_decision(self, X, first, second, w) -> np.ndarray:
        """Decision values of validated rows: ``w`` times their cell
        ``first``'s plus ``1 − w`` times their cell ``second``'s."""
        dec = self._region_decision(X, first)
        # Rows far inside their cell take their own cell's value alone.
        near = np.flatnonzero(w < 1.0 - SOFT_NEGLIGIBLE)
        if near.size:
            other = self._region_decision(X[near], second[near])
            wn = w[near] if dec.ndim == 1 else w[near, None]
            dec[near] = wn * dec[near] + (1.0 - wn) * other
        return dec

    def _predict_valid(self, X: np.ndarray) -> np.ndarray:
        """Class indices of validated rows: by their cell's SVM, or with
        ``routing='soft'`` by the sign (two classes) or the largest of the
        weighted decision values."""
        if self.routing == "hard" or self.partition_ is None:
            return self._region_predict(X, self._route(X))
        return scores_index(self._decision_valid(X))

    def _predict_out_of_memory(self, X, what: str):
        """``what`` ('predict' or 'decision') of ``X`` when the work is not
        the in-memory one: ``X`` read in chunks or a Dask collection, or the
        cell models kept on a Dask cluster; None otherwise."""
        kind = input_kind(X)
        if kind is not None:
            check_is_fitted(self)
            if kind == "dask":
                return predict_dask(self, X, what)
            return predict_chunked(self, X, what)
        if models_on_cluster(self):
            return predict_arrays_on_cluster(self, X, what)
        return None

    def predict(self, X):
        """Predict the class of each sample with its cell's SVM.

        With ``routing='soft'`` a row near a border is labelled by the
        weighted decision values of its two nearest cells' SVMs (see the
        class description).

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array or dataframe} of shape (n_samples, n_features)
            Examples. A Dask collection gives a Dask array, computed block
            by block on the workers; an array read in chunks (a memmap) is
            labelled chunk by chunk.

        Returns
        -------
        ndarray or dask array of shape (n_samples,)
            The predicted labels, taken from ``classes_``.
        """
        out = self._predict_out_of_memory(X, "predict")
        return super().predict(X) if out is None else out

    def decision_function(self, X):
        """Evaluate the decision function of each row's cell SVM.

        With ``routing='soft'`` a row near a border gets the weighted
        decision values of its two nearest cells' SVMs.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array or dataframe} of shape (n_samples, n_features)
            Examples; a Dask collection gives a Dask array (see
            :meth:`predict`).

        Returns
        -------
        ndarray or dask array of shape (n_samples,) or (n_samples, n_classes)
            Two classes: the decision value, positive for ``classes_[1]``.
            More classes: per-class scores of the cell's model, −1 for
            classes the cell lacks.
        """
        out = self._predict_out_of_memory(X, "decision")
        return super().decision_function(X) if out is None else out

    def assign(self, X) -> np.ndarray:
        """Assign each row of ``X`` to its cell.

        The rule is the one the training examples were routed by.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Examples.

        Returns
        -------
        ndarray of shape (n_samples,)
            The cell index of each row.
        """
        return self._route(self._predict_prologue(X))
