"""``localsvm.IncrementalSVC``: an online kernel SVM learnt one example at a
time by local re-optimisation (LISVM), with ``partial_fit``.

Each binary learner keeps the examples worth reconsidering, their multipliers
α, the kernel expansion ``g_i = Σ_j α_j y_j K(x_j, x_i)`` on them and the
bias ``b``, so that ``f(x_i) = g_i + b`` is known without a kernel sum. A new
example that the current machine classifies with margin (``y f(x) ≥ 1``)
changes nothing. Otherwise a working set grows from the new example and its
nearest neighbours in input space, among the examples of the band; the dual
is re-optimised over the working set only (the other multipliers fixed, the
equality constraint kept) by the solver backend, until the slack criterion
``‖ξ‖² / t`` falls under ``threshold``. See :class:`IncrementalSVC`.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass
from numbers import Integral, Real
from typing import ClassVar

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from ._base import FEATURE_KERNELS, BaseSVMClassifier, restore_on_interrupt
from ._compat import Interval, StrOptions, fit_context
from ._multiclass import (
    BinaryModelsMixin,
    assemble,
    binary_tasks,
    problem_classes,
)
from ._validation import prepare_input
from .backends.base import QPProblem, SolverBackend, native_online_learner
from .kernels import KernelSpec, decision_values, kernel_matrix, kernel_matrix_numpy
from .parallel import run_tasks

#: New examples whose decision values are computed at once (against the
#: support vectors), then corrected after each update by the changed
#: multipliers only.
BLOCK = 256

#: Size of the working sets of most violating examples solved after each
#: local update (``reprocess``); as the Rust learner's ``REPROCESS_SIZE``.
REPROCESS_SIZE = 10

#: Megabytes of kernel rows each native binary learner may cache.
NATIVE_CACHE_MB = 64.0

#: Columns of :attr:`IncrementalSVC.history_`.
HISTORY_FIELDS = (
    "learner",
    "n_seen",
    "updated",
    "neighbourhood",
    "n_solves",
    "reached",
    "criterion",
    "n_support",
    "n_stored",
    "time",
)


@dataclass
class _Context:
    """What a binary learner needs from its estimator for one ``partial_fit``
    call (not stored in the learner, so a pickled model holds no backend)."""

    spec: KernelSpec
    C: float
    threshold: float
    epsilon: float
    max_neighbors: int
    neighbor_step: int
    reprocess: int
    rebatch: bool
    max_support: int | None
    tol: float
    max_iter: int
    backend: SolverBackend


@dataclass
class _CallStats:
    """Per call: updates whose neighbourhood hit ``max_neighbors`` before
    the criterion fell under the threshold, and unconverged solves."""

    capped: int = 0
    updates: int = 0
    solves: int = 0
    unconverged: int = 0


def _describe_learn(result) -> str:
    """A log line's account of one binary model's batch."""
    stats = result[1]
    return f"{stats.updates} updates, {stats.solves} solves, {stats.unconverged} not converged"


class _OnlineBinary:
    """One binary online SVM (labels ±1).

    Stored examples live in growing arrays (``X``, ``sq`` = squared norms,
    ``y``, ``cls`` = class index, ``seen`` = position in the stream,
    ``alpha``, ``g``); ``alive`` marks the examples still reconsidered.
    Examples leave when their multiplier is 0 and their margin ``y f`` is
    beyond ``1 + epsilon``, or when the budget removes them; dead rows are
    compacted away once they are as many as the live ones.
    """

    def __init__(self, n_features: int, learner: int) -> None:
        cap = 64
        self.learner = learner
        self.X = np.zeros((cap, n_features))
        self.sq = np.zeros(cap)
        self.y = np.zeros(cap)
        self.cls = np.zeros(cap, dtype=np.intp)
        self.seen = np.zeros(cap, dtype=np.int64)
        self.alpha = np.zeros(cap)
        self.g = np.zeros(cap)
        self.alive = np.zeros(cap, dtype=bool)
        self.n = 0
        self.b = 0.0
        self.t = 0
        self.xi_sum = 0.0
        self.n_support = 0
        self.n_alive = 0
        self.n_iter = 0
        self.history: list[tuple] = []

    # ------------------------------------------------------------ storage

    def _append(self, x, label: float, cls: int, seen: int, g: float) -> int:
        if self.n == self.X.shape[0]:
            self._grow()
        j = self.n
        self.X[j] = x
        self.sq[j] = x @ x
        self.y[j] = label
        self.cls[j] = cls
        self.seen[j] = seen
        self.alpha[j] = 0.0
        self.g[j] = g
        self.alive[j] = True
        self.n += 1
        self.n_alive += 1
        return j

    def _grow(self) -> None:
        cap = 2 * self.X.shape[0]
        for name in ("X", "sq", "y", "cls", "seen", "alpha", "g", "alive"):
            old = getattr(self, name)
            new = np.zeros((cap, *old.shape[1:]), dtype=old.dtype)
            new[: self.n] = old[: self.n]
            setattr(self, name, new)

    def _compact(self) -> None:
        keep = np.flatnonzero(self.alive[: self.n])
        m = keep.size
        for name in ("X", "sq", "y", "cls", "seen", "alpha", "g", "alive"):
            arr = getattr(self, name)
            arr[:m] = arr[keep]
        self.alive[m : self.n] = False
        self.n = m

    def history_arrays(self) -> dict[str, np.ndarray]:
        """The history rows as columns (see :data:`HISTORY_FIELDS`)."""
        return _history_columns(self.history)

    def support(self) -> np.ndarray:
        """Store indices of the support vectors (α > 0, alive)."""
        n = self.n
        return np.flatnonzero(self.alive[:n] & (self.alpha[:n] > 0.0))

    def decision(self, Xq: np.ndarray, spec: KernelSpec) -> np.ndarray:
        """``f`` at the rows of ``Xq``, in float64 NumPy (the stored ``g``
        must agree with the kernel sums to rounding)."""
        sv = self.support()
        if sv.size == 0:
            return np.full(Xq.shape[0], self.b)
        coef = self.alpha[sv] * self.y[sv]
        return _kernel(spec, Xq, self.X[sv], None, self.sq[sv]) @ coef + self.b

    # ------------------------------------------------------------ learning

    def learn(self, Xb, labels, cls, seen, ctx: _Context, stats: _CallStats) -> None:
        """Learn the rows of ``Xb`` in order."""
        m = Xb.shape[0]
        for s in range(0, m, BLOCK):
            Xc = Xb[s : s + BLOCK]
            fc = self.decision(Xc, ctx.spec)
            for i in range(Xc.shape[0]):
                start = time.perf_counter()
                k = s + i
                record = self._step(Xc[i], labels[k], cls[k], seen[k], fc[i], ctx, stats)
                changes = record.pop()
                if changes is not None and i + 1 < Xc.shape[0]:
                    Xw, dcoef, db = changes
                    rest = Xc[i + 1 :]
                    if dcoef.size:
                        fc[i + 1 :] += _kernel(ctx.spec, rest, Xw) @ dcoef
                    fc[i + 1 :] += db
                crit = self.xi_sum / self.t
                record += [crit, self.n_support, self.n_alive, time.perf_counter() - start]
                self.history.append(tuple(record))

    def _step(self, x, label, cls, seen, f, ctx: _Context, stats: _CallStats) -> list:
        """Learn one example; returns the start of its history row
        (``learner, n_seen, updated, neighbourhood, n_solves, reached``) and,
        last, the change to the decision function (``None``, or the changed
        examples, their ``Δ(α y)`` and ``Δb``)."""
        self.t += 1
        margin = label * f
        if margin >= 1.0 and not ctx.rebatch:
            # Well classified: nothing to learn; kept (α = 0) if it lies in
            # the band.
            if margin <= 1.0 + ctx.epsilon:
                self._append(x, label, cls, seen, f - self.b)
                if ctx.max_support is not None:
                    self._trim_rest(ctx.max_support)
            return [self.learner, int(seen), False, 0, 0, True, None]
        j = self._append(x, label, cls, seen, f - self.b)
        n = self.n
        ys = self.y[:n]
        alive = self.alive[:n]
        if not (np.any(alive & (ys > 0)) and np.any(alive & (ys < 0))):
            # One class so far: the constant machine f = label classifies
            # every stored example with margin exactly 1.
            db = label - self.b
            self.b = label
            self.xi_sum = 0.0
            change = (np.zeros((0, x.shape[0])), np.zeros(0), db)
            return [self.learner, int(seen), True, 1, 0, True, change]
        stats.updates += 1
        if ctx.rebatch:
            return self._rebatch(seen, ctx, stats)
        return self._local(j, x, seen, ctx, stats)

    def _solve(self, problem: QPProblem, ctx: _Context, stats: _CallStats):
        sol = ctx.backend.solve(problem)
        stats.solves += 1
        self.n_iter += int(sol.n_iter)
        if not sol.converged:
            stats.unconverged += 1
        return sol

    def _local(self, j, x, seen, ctx: _Context, stats: _CallStats) -> list:
        n = self.n
        ys = self.y[:n]
        alive = self.alive[:n]
        # Candidates: the band (y f ≤ 1 + ε) and the support vectors.
        f_all = self.g[:n] + self.b
        cand = alive & ((ys * f_all <= 1.0 + ctx.epsilon) | (self.alpha[:n] > 0.0))
        cand[j] = False
        ci = np.flatnonzero(cand)
        d2 = self.sq[ci] - 2.0 * (self.X[ci] @ x)
        k = min(ctx.max_neighbors, ci.size)
        if k < ci.size:
            part = np.argpartition(d2, k - 1)[:k]
            near = ci[part[np.lexsort((part, d2[part]))]]
        else:
            near = ci[np.argsort(d2, kind="stable")]

        # Kernel columns of the working set against every stored example,
        # filled as the set grows.
        K = np.empty((n, near.size + 1))
        X, sq = self.X[:n], self.sq[:n]
        K[:, 0] = _kernel(ctx.spec, X, x[None, :], sq, self.sq[j : j + 1])[:, 0]
        W = np.empty(near.size + 1, dtype=np.intp)
        W[0] = j
        a_start = np.zeros(near.size + 1)
        a_start[1:] = self.alpha[near]
        aW = a_start[:1].copy()
        g_c = self.g[:n].copy()
        b_c = self.b
        w = 1
        n_solves = 0
        reached = False
        e_prev = self._slack(g_c, b_c) / self.t
        e = e_prev
        while True:
            take = near[w - 1 : w - 1 + ctx.neighbor_step]
            if take.size:
                W[w : w + take.size] = take
                K[:, w : w + take.size] = _kernel(ctx.spec, X, self.X[take], sq, self.sq[take])
                aW = np.concatenate([aW, a_start[w : w + take.size]])
                w += take.size
            Wi = W[:w]
            Kw = K[:, :w]
            sol_a, _, n_iter = self._solve_working_set(Wi, aW, g_c, Kw[Wi], ctx, stats)
            n_solves += 1
            # A neighbour whose subproblem is already optimal (SMO takes no
            # step) leaves the machine and the estimate as they were.
            moved = n_iter > 0
            if moved:
                delta = (sol_a - aW) * ys[Wi]
                g_c += Kw @ delta
                aW = sol_a
                self.alpha[Wi] = aW
                b_c = self._global_bias(g_c, ctx.C)
                e = self._slack(g_c, b_c) / self.t
            # The level, or the variation of the estimate between candidates
            # that differ.
            if e < ctx.threshold or (moved and abs(e_prev - e) < ctx.threshold * e_prev):
                reached = True
                break
            e_prev = e
            if w > near.size:
                if ci.size > ctx.max_neighbors:
                    stats.capped += 1
                break
        Wi = W[:w]
        self.g[:n] = g_c
        db = b_c - self.b
        self.b = b_c
        Xw = [self.X[Wi].copy()]
        dco = [(aW - a_start[:w]) * ys[Wi]]
        # The local update leaves the rest of the machine as it was; a few
        # subproblems over the most violating kept examples repair that.
        moved_any = False
        for _ in range(ctx.reprocess):
            ws = self._violators(REPROCESS_SIZE, ctx.C, ctx.tol)
            if ws is None:
                break
            a0 = self.alpha[ws].copy()
            Kc = _kernel(ctx.spec, X, self.X[ws], sq, self.sq[ws])
            sol_a, _, n_iter = self._solve_working_set(ws, a0, self.g[:n], Kc[ws], ctx, stats)
            if n_iter == 0:
                continue
            moved_any = True
            delta = (sol_a - a0) * ys[ws]
            self.g[:n] += Kc @ delta
            self.alpha[ws] = sol_a
            b_new = self._global_bias(self.g, ctx.C)
            db += b_new - self.b
            self.b = b_new
            Xw.append(self.X[ws].copy())
            dco.append(delta)
        self.xi_sum = self._slack(self.g, self.b) if moved_any else e * self.t
        self._retire(ctx)
        if ctx.max_support is not None:
            b_before = self.b
            for xs, dc in self._enforce_budget(ctx, stats):
                Xw.append(xs)
                dco.append(dc)
            db += self.b - b_before
        self._refresh_counts()
        change = (np.vstack(Xw), np.concatenate(dco), db)
        return [self.learner, int(seen), True, w, n_solves, reached, change]

    def _slack(self, g, b) -> float:
        """``‖ξ‖²`` over the kept examples for the decision values ``g + b``."""
        n = self.n
        xi = np.maximum(0.0, 1.0 - self.y[:n] * (g[:n] + b))
        xi[~self.alive[:n]] = 0.0
        return float(xi @ xi)

    def _global_bias(self, g, C: float) -> float:
        """The bias from the KKT conditions of every kept example (LIBSVM's
        rule over the whole machine, not the working set, whose few
        multipliers often all sit at a bound): minus the mean of ``g_i − y_i``
        over the free multipliers, else the middle of the interval the bounded
        ones allow."""
        n = self.n
        alive = self.alive[:n]
        a, y = self.alpha[:n][alive], self.y[:n][alive]
        yg = g[:n][alive] - y
        free = (a > 0.0) & (a < C)
        if np.any(free):
            return -float(np.sum(yg[free]) / np.count_nonzero(free))
        upper_side = (a >= C) == (y < 0.0)
        ub = float(yg[upper_side].min()) if np.any(upper_side) else np.inf
        lb = float(yg[~upper_side].max()) if np.any(~upper_side) else -np.inf
        if np.isfinite(ub) and np.isfinite(lb):
            return -0.5 * (ub + lb)
        if np.isfinite(ub):
            return -ub
        return -lb if np.isfinite(lb) else 0.0

    def _refresh_counts(self) -> None:
        n = self.n
        self.n_support = int(self.support().size)
        self.n_alive = int(self.alive[:n].sum())
        if self.n > 64 and 2 * self.n_alive < self.n:
            self._compact()

    def _solve_working_set(self, Wi, aW, g_c, Kww, ctx: _Context, stats: _CallStats):
        """Re-optimise the multipliers of the working set ``Wi`` (current
        values ``aW``) with the others fixed: the fixed ones enter through the
        linear term ``p_i = −1 + y_i Σ_{j∉W} α_j y_j K_ij``, and the equality
        constraint ``Σ_W y_i α_i = −Σ_{j∉W} y_j α_j`` through one extra fixed
        variable carrying that sum (its kernel terms taken back out of ``p``,
        so only the constraint remains). Returns the new ``aW``, ``rho`` and
        the solver's iterations."""
        yw = self.y[Wi]
        w = Wi.size
        coef = aW * yw
        p = -1.0 + yw * (g_c[Wi] - Kww @ coef)
        c = float(yw @ aW)
        rows, y_all, upper, alpha0 = Wi, yw, np.full(w, ctx.C), aW
        if c != 0.0:
            yd = -np.sign(c)
            # The balancing variable is a copy of W's first example.
            p = p - yw * (yd * abs(c)) * Kww[:, 0]
            rows = np.append(Wi, Wi[0])
            y_all = np.append(yw, yd)
            upper = np.append(upper, abs(c))
            alpha0 = np.append(aW, abs(c))
            p = np.append(p, 0.0)
        problem = QPProblem(
            X=self.X,
            rows=rows,
            y=y_all,
            upper=upper,
            kernel=ctx.spec,
            p=p,
            alpha0=np.clip(alpha0, 0.0, upper),
            active=np.arange(w),
            tol=ctx.tol,
            # The local batch's cap (see LocalSVC's max_iter): one update of
            # a few variables must not grind through a batch-sized cap.
            max_iter=ctx.max_iter if ctx.max_iter > 0 else max(100_000, 1000 * w),
            cache_size=8.0,
            shrinking=False,
        )
        sol = self._solve(problem, ctx, stats)
        return np.asarray(sol.alpha[:w], dtype=np.float64), float(sol.rho), int(sol.n_iter)

    def _violators(self, size: int, C: float, tol: float) -> np.ndarray | None:
        """The ``size`` kept examples that violate the KKT conditions most:
        half the largest ``y_i − g_i`` among those whose ``y_i α_i`` may grow,
        half the smallest among those whose ``y_i α_i`` may shrink (ties by
        position, in units of ``tol``); None when the largest violation is within
        ``tol``."""
        n = self.n
        alive, a, y = self.alive[:n], self.alpha[:n], self.y[:n]
        # In units of the solver's tolerance: the examples on the margin,
        # equal to within it, are ordered by position.
        v = np.rint((y - self.g[:n]) / tol)
        up = np.flatnonzero(alive & (((y > 0) & (a < C)) | ((y < 0) & (a > 0))))
        low = np.flatnonzero(alive & (((y < 0) & (a < C)) | ((y > 0) & (a > 0))))
        if up.size == 0 or low.size == 0:
            return None
        half = max(size // 2, 1)
        top = up[np.lexsort((up, -v[up]))[:half]]
        bottom = low[np.lexsort((low, v[low]))[:half]]
        i, j = top[0], bottom[0]
        if (y[i] - self.g[i]) - (y[j] - self.g[j]) <= tol:
            return None
        rest = bottom[~np.isin(bottom, top)]
        return np.concatenate([top, rest])

    def _retire(self, ctx: _Context) -> None:
        n = self.n
        f = self.g[:n] + self.b
        out = self.alive[:n] & (self.alpha[:n] == 0.0) & (self.y[:n] * f > 1.0 + ctx.epsilon)
        self.alive[:n] &= ~out

    def _enforce_budget(self, ctx: _Context, stats: _CallStats):
        """Remove support vectors while there are more than ``max_support``:
        each time the one with the smallest margin ``y f`` (then the smallest
        multiplier); its multiplier is
        handed to its nearest same-class candidates (or taken from the
        nearest other-class ones), keeping ``yᵀα = 0``, and that
        neighbourhood is re-optimised once. Then at most ``max_support``
        examples without a multiplier are kept (the oldest leave first)."""
        changes = []
        while True:
            sv = self.support()
            if sv.size <= ctx.max_support:
                break
            margin = self.y[sv] * (self.g[sv] + self.b)
            r = int(sv[np.lexsort((self.alpha[sv], np.round(margin, 9)))[0]])
            change = self._remove(r, ctx, stats)
            if change is None:
                break
            changes.append(change)
        self._trim_rest(ctx.max_support)
        return changes

    def _trim_rest(self, budget: int) -> None:
        """Keep at most ``budget`` examples without a multiplier, the most
        recent."""
        n = self.n
        rest = np.flatnonzero(self.alive[:n] & (self.alpha[:n] == 0.0))
        if rest.size > budget:
            self.alive[rest[: rest.size - budget]] = False
            self._refresh_counts()

    def _remove(self, r: int, ctx: _Context, stats: _CallStats):
        n = self.n
        ys = self.y[:n]
        cand = self.alive[:n].copy()
        cand[r] = False
        ci = np.flatnonzero(cand)
        d2 = self.sq[ci] - 2.0 * (self.X[ci] @ self.X[r])
        near = ci[np.argsort(d2, kind="stable")[: max(ctx.max_neighbors, 2)]]
        a_r, y_r = float(self.alpha[r]), float(ys[r])
        a_new = self.alpha[near].copy()
        need = a_r
        for idx in range(near.size):  # same class: add (room up to C)
            if need <= 0.0:
                break
            if ys[near[idx]] == y_r:
                add = min(need, ctx.C - a_new[idx])
                a_new[idx] += add
                need -= add
        for idx in range(near.size):  # other class: take away
            if need <= 0.0:
                break
            if ys[near[idx]] != y_r:
                sub = min(need, a_new[idx])
                a_new[idx] -= sub
                need -= sub
        if need > 1e-12 * max(a_r, 1.0):
            # No room nearby (rare): this support vector stays.
            return None
        Wi = near
        cols = np.concatenate([[r], Wi])
        K = _kernel(ctx.spec, self.X[:n], self.X[cols], self.sq[:n], self.sq[cols])
        # Apply the hand-off: α_r → 0 and the neighbours to a_new.
        d_start = np.concatenate([[-a_r * y_r], (a_new - self.alpha[Wi]) * ys[Wi]])
        g_c = self.g[:n] + K @ d_start
        a_before = self.alpha[Wi].copy()
        self.alpha[r] = 0.0
        self.alive[r] = False
        sol_a, _, _ = self._solve_working_set(Wi, a_new, g_c, K[Wi][:, 1:], ctx, stats)
        dco = (sol_a - a_new) * ys[Wi]
        g_c += K[:, 1:] @ dco
        self.g[:n] = g_c
        self.alpha[Wi] = sol_a
        self.b = self._global_bias(g_c, ctx.C)
        self.xi_sum = self._slack(g_c, self.b)
        Xs = np.vstack([self.X[r][None, :], self.X[Wi]])
        return Xs, np.concatenate([[-a_r * y_r], (sol_a - a_before) * ys[Wi]])

    def _rebatch(self, seen, ctx: _Context, stats: _CallStats):
        """Solve the dual over every stored example afresh (the batch SVM)."""
        n = self.n
        ys = self.y[:n]
        problem = QPProblem(
            X=self.X[:n],
            y=ys.copy(),
            upper=np.full(n, ctx.C),
            kernel=ctx.spec,
            tol=ctx.tol,
            max_iter=ctx.max_iter,
        )
        sol = self._solve(problem, ctx, stats)
        a = np.asarray(sol.alpha, dtype=np.float64)
        changed = np.flatnonzero(a != self.alpha[:n])
        dcoef = (a[changed] - self.alpha[changed]) * ys[changed]
        if changed.size:
            self.g[:n] += kernel_matrix(ctx.spec, self.X[:n], self.X[changed]) @ dcoef
        self.alpha[:n] = a
        db = -float(sol.rho) - self.b
        self.b = -float(sol.rho)
        xi = np.maximum(0.0, 1.0 - ys * (self.g[:n] + self.b))
        self.xi_sum = float(xi @ xi)
        self._refresh_counts()
        change = (self.X[changed].copy(), dcoef, db)
        return [self.learner, int(seen), True, n, 1, True, change]


_HISTORY_DTYPES = (np.intp, np.int64, bool, np.intp, np.intp, bool, float, np.intp, np.intp, float)


def _history_columns(rows: list[tuple]) -> dict[str, np.ndarray]:
    cols = list(zip(*rows, strict=True)) if rows else [()] * len(HISTORY_FIELDS)
    return {
        name: np.asarray(col, dtype=dt)
        for name, col, dt in zip(HISTORY_FIELDS, cols, _HISTORY_DTYPES, strict=True)
    }


class _NativeBinary:
    """One binary online SVM learnt by the backend's native learner (the Rust
    core's ``IncrementalLearner`` for the built-in backend): the same update
    as :class:`_OnlineBinary`, with every step of a batch run natively. The
    learner's state is read back through the same attribute names."""

    def __init__(self, native, learner: int) -> None:
        self.native = native
        self.learner = learner
        self._history: list[dict[str, np.ndarray]] = []

    def __getattr__(self, name):
        # X, y, cls, seen, alpha, g, alive, b, t, n, n_iter, n_support, n_alive
        if name in {"native", "learner", "_history"}:
            raise AttributeError(name)
        return getattr(self.native, name)

    def support(self) -> np.ndarray:
        """Store indices of the support vectors (α > 0, alive)."""
        return np.asarray(self.native.support(), dtype=np.intp)

    def learn(self, Xb, labels, cls, seen, ctx: _Context, stats: _CallStats) -> None:
        """Learn the rows of ``Xb`` in order, in one native call."""
        res = self.native.learn(
            Xb,
            np.ascontiguousarray(labels, dtype=np.float64),
            np.ascontiguousarray(cls, dtype=np.int64),
            np.ascontiguousarray(seen, dtype=np.int64),
            c=ctx.C,
            threshold=ctx.threshold,
            epsilon=ctx.epsilon,
            max_neighbors=ctx.max_neighbors,
            neighbor_step=ctx.neighbor_step,
            reprocess=ctx.reprocess,
            max_support=ctx.max_support,
            rebatch=ctx.rebatch,
            tol=ctx.tol,
            max_iter=ctx.max_iter,
            cache_size=NATIVE_CACHE_MB,
        )
        stats.capped += res.capped
        stats.updates += res.updates
        stats.solves += res.solves
        stats.unconverged += res.unconverged
        m = Xb.shape[0]
        cols = {
            "learner": np.full(m, self.learner),
            "n_seen": np.asarray(seen, dtype=np.int64),
            "updated": res.updated,
            "neighbourhood": res.neighbourhood,
            "n_solves": res.n_solves,
            "reached": res.reached,
            "criterion": res.criterion,
            "n_support": res.n_support,
            "n_stored": res.n_stored,
            "time": res.time,
        }
        self._history.append(
            {
                k: np.asarray(v, dtype=dt)
                for (k, v), dt in zip(cols.items(), _HISTORY_DTYPES, strict=True)
            }
        )

    def history_arrays(self) -> dict[str, np.ndarray]:
        """Every call's history, as columns (see :data:`HISTORY_FIELDS`)."""
        if not self._history:
            return _history_columns([])
        return {k: np.concatenate([h[k] for h in self._history]) for k in HISTORY_FIELDS}


def _kernel(spec: KernelSpec, A, B, sqA=None, sqB=None) -> np.ndarray:
    """``K(A, B)`` in float64 NumPy: the blocks here are thin (a few columns),
    where one matrix product beats a parallel call. ``sqA``/``sqB`` are the
    rows' squared norms when known (RBF)."""
    return kernel_matrix_numpy(spec, A, B, sq_a=sqA, sq_b=sqB)


def _learn_task(task):
    learner, Xb, labels, cls, seen, ctx = task
    stats = _CallStats()
    learner.learn(Xb, labels, cls, seen, ctx, stats)
    return learner, stats


class IncrementalSVC(BinaryModelsMixin, BaseSVMClassifier):
    """Online kernel SVM learnt one example at a time by local updates (LISVM).

    Each binary learner processes the examples in the order given. A new
    example ``(x_t, y_t)`` starts with multiplier ``α_t = 0``; if the current
    machine classifies it with margin (``y_t f(x_t) ≥ 1``) nothing changes.
    Otherwise a working set ``W`` starts as ``x_t`` and its nearest neighbour
    (Euclidean distance in input space) among the *candidates*, and grows by
    ``neighbor_step`` next-nearest candidates at a time. For each ``W`` the
    dual is re-optimised over the multipliers in ``W`` only, the others fixed
    and the equality constraint ``yᵀα = 0`` kept, by SMO warm-started from
    the previous working set's solution, giving a candidate machine; its
    bias comes from the KKT conditions of every kept example (the working
    set's few multipliers often all sit at a bound, which leaves its own
    bias undetermined).

    Growth is driven by the slack criterion ``E = ‖ξ‖² / t`` of [1]_
    (``ξ_i = max(0, 1 − y_i f(x_i))`` over the examples kept, ``t`` the
    number of examples the learner has seen), the part of the
    Cristianini–Shawe-Taylor margin bound that differs between candidates.
    It stops at the first candidate whose ``E`` is below ``threshold`` (η)
    or whose ``E`` differs by less than the fraction η from the previous
    candidate's (a neighbour that leaves the machine unchanged is skipped
    in that comparison), or when the candidates (at most ``max_neighbors``)
    are used up; the last candidate becomes the new machine. The paper's
    procedure grows "while the error estimate is above a threshold" and its
    abstract conditions the neighbourhood on "the variation of the error
    estimate"; on noisy data ``E`` settles well above any small η (about
    0.25 on Banana with C = 1), so the level alone would always use every
    neighbour, and the variation is what lets η in {0.1, 0.01, 0.001} give
    small, medium and large neighbourhoods.

    The candidates are the examples of the band around the decision surface
    (an example of class ``y`` whose ``y f(x) ≤ 1 + epsilon``) and the
    support vectors. An example with ``α = 0`` that lies beyond the band is
    forgotten: it is not reconsidered and counts as zero slack afterwards.
    The decision values of the stored examples are updated from the changed
    multipliers only, so one update costs ``O(|W| · n_kept)`` kernel values
    (``n_kept``: the support vectors and the band) and the neighbour search
    runs over the kept examples only.

    ``strategy='rebatch'`` is the baseline of [1]_: every example is kept and
    each new one triggers a batch SVM trained afresh on all the examples
    seen, so the model is always the batch SVM of the examples so far (up to
    ``tol``).

    Parameters
    ----------
    C : float, default=1.0
        Regularisation; must be positive.
    kernel : {'rbf', 'linear', 'poly', 'sigmoid'}, default='rbf'
        The local approach assumes a local kernel (RBF); the others are
        accepted. A precomputed kernel is not (the examples arrive one by
        one).
    degree : int, default=3
        Degree of the 'poly' kernel.
    gamma : {'scale', 'auto'} or float, default='scale'
        Kernel coefficient; 'scale' (``1 / (n_features · X.var())``) is
        computed on the first batch that :meth:`partial_fit` (or
        :meth:`fit`) receives and then kept.
    coef0 : float, default=0.0
        Constant term of the 'poly' and 'sigmoid' kernels.
    threshold : float, default=0.1
        The η of [1]_: growth of the working set stops once ``‖ξ‖² / t`` is
        below it or varies by less than this fraction from one candidate to
        the next; must be positive. Smaller values mean larger
        neighbourhoods. With the repair step (``reprocess``), η in
        {0.1, 0.01, 0.001} gave errors within about half a point of the batch
        SVM on Banana, Ringnorm and Diabetis (three splits each), and 0.1 is
        the fastest of the three (about a third of 0.001's time on Banana),
        hence the default.
    epsilon : float, default=0.5
        Width of the band: examples with ``y f(x) ≤ 1 + epsilon`` are kept
        and reconsidered; must be non-negative.
    max_neighbors : int, default=50
        Most neighbours added to a working set (which then has at most
        ``max_neighbors + 1`` examples).
    neighbor_step : int, default=1
        Neighbours added to the working set at each growth step (1 is the
        original procedure; larger steps solve fewer subproblems).
    reprocess : int, default=1
        After each local update, this many subproblems over the 10 kept
        examples that violate the KKT conditions most (the largest and the
        smallest ``y_i − g_i`` among the multipliers free to move each way),
        each solved with the other multipliers fixed; 0 is the paper's
        update alone. The local update never revisits multipliers away from
        the new example: on ijcnn1 (20 000 rows) they drift (multipliers at
        ``C`` of examples now well classified, ``b`` from inconsistent free
        multipliers) and the test accuracy falls to 86.7 % against 94.8 %
        for the batch SVM; one subproblem per update gives 94.7 %.
    strategy : {'local', 'rebatch'}, default='local'
        'local': the update described above. 'rebatch': retrain on all the
        examples seen at each new example.
    max_support : int or None, default=None
        Budget. When a binary learner holds more support vectors than this,
        the one with the smallest margin ``y f(x)`` is removed (the example
        deepest on the wrong side of the boundary, usually an outlier held
        at ``α = C``; among equal margins, the smallest multiplier): its
        multiplier is
        handed to its nearest same-class neighbours (or, if they lack room
        under ``C``, taken from its nearest other-class neighbours), so that
        ``yᵀα = 0`` still holds, and those neighbours are re-optimised once.
        Of the kept examples without a multiplier only the ``max_support``
        most recent stay. Memory is then bounded whatever the stream length.
        Ignored by ``strategy='rebatch'``.
    tol : float, default=1e-3
        Stopping tolerance of each subproblem's solver (maximal KKT
        violation).
    max_iter : int, default=-1
        Iteration cap of each subproblem's solver; -1 means
        ``max(100000, 1000·k)`` for a working set of ``k`` examples (the
        solver's own cap for ``strategy='rebatch'``), so that no single
        update runs for long.
    multiclass : {'ovo', 'ovr'}, default='ovo'
        'ovo': one online learner per pair of classes (each sees its two
        classes' examples), prediction by votes. 'ovr': one learner per class
        against the rest (each sees every example), prediction by the largest
        decision value. Two classes use one learner.
    decision_function_shape : {'ovr', 'ovo'}, default='ovr'
        With ``multiclass='ovo'``: 'ovo' returns the pairwise decision values,
        'ovr' one score per class (votes plus a tie-breaking confidence), as
        :class:`SVC` and scikit-learn's ``SVC``.
    break_ties : bool, default=False
        With ``multiclass='ovo'``, more than two classes and
        ``decision_function_shape='ovr'``, predict the largest score of
        ``decision_function``; otherwise the lowest class wins a tie of
        votes, as :class:`SVC`.
    backend : str, default='auto'
        Solver backend, chosen when the model is created (by :meth:`fit` or
        the first :meth:`partial_fit`); it must support optimising a subset
        of the variables. A backend with a native online learner
        (``capabilities.online``, as the built-in Rust backend for every
        kernel allowed here) runs each whole update natively; any other
        backend gets the same update from a Python implementation that poses
        each working set (and each rebatch) as a problem to its ``solve``,
        which is much slower.
    n_jobs : int or None, default=None
        Binary learners updated at once (threads) during a ``partial_fit``
        call. None or -1: all CPUs.
    verbose : int, default=0
        Logging through :mod:`logging` (logger ``localsvm.incremental``): 0
        logs nothing; 1 one line per binary model per batch (updates,
        solves, time) and a summary; 2 also the batch's size. Records are
        emitted at level INFO; without any logging configuration they go
        to stderr.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    support_ : ndarray of shape (n_SV,)
        Positions in the stream (counted over every row passed to
        :meth:`partial_fit` since the model was created by :meth:`fit` or
        the first :meth:`partial_fit` call) of the support vectors, grouped
        by class.
    support_vectors_ : ndarray of shape (n_SV, n_features)
    n_support_ : ndarray of shape (n_classes,), dtype=int32
    dual_coef_ : ndarray
        ``y_i α_i`` of the support vectors, laid out as in :class:`SVC`:
        ``(1, n_SV)`` for two classes (positive for ``classes_[1]``),
        ``(n_classes − 1, n_SV)`` for one-vs-one, ``(n_classes, n_SV)`` for
        one-vs-rest.
    intercept_ : ndarray of shape (n_models,)
    n_iter_ : ndarray of shape (n_models,)
        Solver iterations of each binary learner, summed over its updates.
    n_seen_ : int
        Examples learnt so far.
    history_ : dict of ndarray
        One entry per example and binary learner, in the order learnt:
        ``learner``, ``n_seen`` (position in the stream), ``updated``
        (False when the example was classified with margin),
        ``neighbourhood`` (final working-set size, 0 without an update),
        ``n_solves`` (subproblems solved), ``reached`` (the criterion fell
        under ``threshold``), ``criterion`` (``‖ξ‖² / t`` after the
        example), ``n_support``, ``n_stored`` (examples kept) and
        ``time`` (seconds spent on the example).
    kernel_spec_ : KernelSpec

    See Also
    --------
    SVC : The batch SVM that the 'rebatch' strategy reproduces.

    Notes
    -----
    Progress: ``set_callbacks`` takes scikit-learn ≥ 1.9 callbacks (e.g.
    ``sklearn.callback.ProgressBar()``). ``fit`` and each ``partial_fit``
    call (one batch of a stream) is one task with one subtask per binary
    model.

    References
    ----------
    .. [1] L. Ralaivola and F. d'Alché-Buc, "Incremental Support Vector
       Machine Learning: a Local Approach", in *Artificial Neural Networks —
       ICANN 2001*, Lecture Notes in Computer Science 2130, Springer, 2001,
       pp. 322–330.

    Examples
    --------
    >>> from localsvm import IncrementalSVC
    >>> from localsvm.datasets import load_banana
    >>> d = load_banana()
    >>> clf = IncrementalSVC(C=1.0, gamma=1.0)
    >>> for start in range(0, 400, 100):
    ...     _ = clf.partial_fit(d.X_train[start : start + 100],
    ...                         d.y_train[start : start + 100], classes=[-1, 1])
    >>> clf.n_seen_
    400
    >>> clf.score(d.X_test, d.y_test) > 0.85
    True
    """

    _parameter_constraints: ClassVar[dict] = {
        **BaseSVMClassifier._parameter_constraints,
        "kernel": [StrOptions(set(FEATURE_KERNELS)), callable],
        "threshold": [Interval(Real, 0.0, None, closed="neither")],
        "epsilon": [Interval(Real, 0.0, None, closed="left")],
        "max_neighbors": [Interval(Integral, 1, None, closed="left")],
        "neighbor_step": [Interval(Integral, 1, None, closed="left")],
        "reprocess": [Interval(Integral, 0, None, closed="left")],
        "strategy": [StrOptions({"local", "rebatch"})],
        "max_support": [Interval(Integral, 1, None, closed="left"), None],
        "multiclass": [StrOptions({"ovo", "ovr"})],
        "decision_function_shape": [StrOptions({"ovr", "ovo"})],
        "break_ties": ["boolean"],
    }

    def __init__(
        self,
        *,
        C=1.0,
        kernel="rbf",
        degree=3,
        gamma="scale",
        coef0=0.0,
        threshold=0.1,
        epsilon=0.5,
        max_neighbors=50,
        neighbor_step=1,
        reprocess=1,
        strategy="local",
        max_support=None,
        tol=1e-3,
        max_iter=-1,
        multiclass="ovo",
        decision_function_shape="ovr",
        break_ties=False,
        backend="auto",
        n_jobs=None,
        verbose=0,
    ):
        self.C = C
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.threshold = threshold
        self.epsilon = epsilon
        self.max_neighbors = max_neighbors
        self.neighbor_step = neighbor_step
        self.reprocess = reprocess
        self.strategy = strategy
        self.max_support = max_support
        self.tol = tol
        self.max_iter = max_iter
        self.multiclass = multiclass
        self.decision_function_shape = decision_function_shape
        self.break_ties = break_ties
        self.backend = backend
        self.n_jobs = n_jobs
        self.verbose = verbose

    # ------------------------------------------------------------ fitting

    @restore_on_interrupt
    @fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Learn every row of ``X`` in order, starting from a fresh model.

        The same as one :meth:`partial_fit` call on a new estimator, with the
        classes found in ``y``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The training rows, learnt in the order given.
        y : array-like of shape (n_samples,)
            Their labels; at least two classes.

        Returns
        -------
        self : IncrementalSVC
            The fitted estimator.
        """
        self._reset()
        X, _, idx = self._fit_prologue(X, y)
        self._start(X, self.classes_)
        return self._learn(X, idx, "fit")

    @fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y, classes=None):
        """Learn the rows of ``X`` in order, one example at a time.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The rows, learnt in the order given; the same number of features
            on every call.
        y : array-like of shape (n_samples,)
            Their labels, each one of ``classes``.
        classes : array-like of shape (n_classes,), default=None
            Every class the stream can hold. Required on the first call
            unless ``y`` already holds at least two classes; later calls may
            omit it, or must repeat the same classes.

        Returns
        -------
        self : IncrementalSVC
            The updated estimator.

        Notes
        -----
        The binary learners are updated in place, one example at a time, so
        an interrupted call (``KeyboardInterrupt``, e.g. Ctrl-C) cannot put
        the previous model back: it discards the model and leaves the
        estimator unfitted. An interrupted :meth:`fit` leaves the estimator
        as it was before the call.
        """
        try:
            return self._partial_fit(X, y, classes)
        except KeyboardInterrupt:
            self._discard_model()
            raise

    def _discard_model(self) -> None:
        """Forget everything but the constructor's parameters (unfitted)."""
        params = set(self.get_params(deep=False))
        for name in list(vars(self)):
            if name not in params:
                delattr(self, name)

    def _partial_fit(self, X, y, classes):
        first = not hasattr(self, "_learners")
        X = prepare_input(X, native=False, who=type(self).__name__)
        X, y = validate_data(self, X, y, dtype=np.float64, order="C", reset=first)
        check_classification_targets(y)
        if first:
            if classes is None:
                known = np.unique(y)
                if known.size < 2:
                    raise ValueError(
                        "classes must be passed on the first call to partial_fit unless y holds "
                        f"at least two classes; got only {known.tolist()}"
                    )
            else:
                known = np.unique(np.asarray(classes))
                if known.size < 2:
                    raise ValueError(
                        f"classes must list at least two classes, got {known.tolist()}"
                    )
            idx = self._encode(y, known)
            self.classes_ = known
            self._start(X, known)
            return self._learn(X, idx, "partial_fit")
        if classes is not None and not np.array_equal(np.unique(classes), self.classes_):
            raise ValueError(
                f"classes={np.unique(classes).tolist()} is not the same as on the first call "
                f"to partial_fit: {self.classes_.tolist()}"
            )
        return self._learn(X, self._encode(y, self.classes_), "partial_fit")

    def _reset(self) -> None:
        for name in ("_learners", "_spec", "classes_", "n_seen_"):
            if hasattr(self, name):
                delattr(self, name)

    def _start(self, X, classes) -> None:
        """Resolve the kernel on ``X`` and create the binary learners."""
        self._resolve_kernel(X)
        self._tasks = problem_classes(classes.shape[0], self.multiclass)
        backend = self._context().backend
        d = X.shape[1]
        learners = []
        for k in range(len(self._tasks)):
            native = native_online_learner(backend, self._spec, d)
            learners.append(_OnlineBinary(d, k) if native is None else _NativeBinary(native, k))
        self._learners = learners
        self.n_seen_ = 0

    def _context(self) -> _Context:
        d = self.n_features_in_
        probe = QPProblem(
            X=np.zeros((2, d)),
            y=np.array([1.0, -1.0]),
            upper=np.full(2, float(self.C)),
            kernel=self._spec,
            active=np.arange(2),
            p=-np.ones(2),
        )
        return _Context(
            spec=self._spec,
            C=float(self.C),
            threshold=float(self.threshold),
            epsilon=float(self.epsilon),
            max_neighbors=int(self.max_neighbors),
            neighbor_step=int(self.neighbor_step),
            reprocess=int(self.reprocess),
            rebatch=self.strategy == "rebatch",
            max_support=None
            if self.max_support is None or self.strategy == "rebatch"
            else int(self.max_support),
            tol=float(self.tol),
            max_iter=int(self.max_iter),
            backend=self._select_backend(probe),
        )

    @staticmethod
    def _encode(y, classes) -> np.ndarray:
        """Each label's index into ``classes``; ``ValueError`` for a label
        outside them."""
        y = np.asarray(y)
        if y.dtype.kind != classes.dtype.kind and not (
            y.dtype.kind in "iuf" and classes.dtype.kind in "iuf"
        ):
            raise ValueError(
                f"y's labels (dtype {y.dtype}) cannot belong to classes={classes.tolist()}"
            )
        idx = np.clip(np.searchsorted(classes, y), 0, classes.size - 1)
        bad = classes[idx] != y
        if np.any(bad):
            unknown = np.unique(y[bad]).tolist()
            raise ValueError(
                f"y holds labels {unknown} outside classes={classes.tolist()} "
                "(given on the first call to partial_fit, or found by fit)"
            )
        return idx

    def _learn(self, X, idx, task_name: str):
        """Learn one batch: a callback task (``task_name``) with one subtask
        per binary model."""
        began = time.perf_counter()
        report = self._fit_report(len(self._learners), X, None, task_name=task_name)
        report.subtasks("binary-model", len(self._learners))
        report.log(
            2,
            "IncrementalSVC %s: a batch of %d rows, %d binary models",
            task_name,
            X.shape[0],
            len(self._learners),
        )
        ctx = self._context()
        seen = np.arange(self.n_seen_, self.n_seen_ + X.shape[0], dtype=np.int64)
        tasks = [
            (learner, X[rows], labels, idx[rows], seen[rows], ctx)
            for learner, (rows, labels) in zip(
                self._learners,
                binary_tasks(idx, self._tasks),
                strict=True,
            )
        ]
        results = run_tasks(
            _learn_task,
            tasks,
            n_jobs=self.n_jobs,
            thread_safe=ctx.backend.capabilities.thread_safe,
            **report.hooks(_describe_learn),
        )
        self._learners = [r[0] for r in results]
        stats = [r[1] for r in results]
        self.n_seen_ += X.shape[0]
        self.backend_ = ctx.backend.name
        self._warn(stats)
        self._assemble()
        report.log(
            1,
            "IncrementalSVC %s: %d rows seen, %d support vectors, %.3f s",
            task_name,
            self.n_seen_,
            self.support_.size,
            time.perf_counter() - began,
        )
        report.end(X, None)
        return self

    def _warn(self, stats: list[_CallStats]) -> None:
        capped = sum(s.capped for s in stats)
        updates = sum(s.updates for s in stats)
        if capped:
            warnings.warn(
                f"{capped} of {updates} updates used max_neighbors={self.max_neighbors} "
                "neighbours while the slack criterion was still above threshold="
                f"{self.threshold} and varying by more than that fraction; raise "
                "max_neighbors or threshold if the model is not accurate enough",
                ConvergenceWarning,
                stacklevel=3,
            )
        self._warn_unconverged(
            [True] * sum(s.solves - s.unconverged for s in stats)
            + [False] * sum(s.unconverged for s in stats),
            "subproblem solves",
        )

    def _assemble(self) -> None:
        """The fitted attributes from the learners' current state."""
        parts = [(lr, lr.support()) for lr in self._learners]
        models = assemble(
            [lr.seen[s] for lr, s in parts],
            [lr.alpha[s] * lr.y[s] for lr, s in parts],
            [lr.b for lr in self._learners],
            [lr.cls[s] for lr, s in parts],
            self.classes_.shape[0],
            self.multiclass,
        )
        self.support_ = models.support.astype(np.int64)
        rows = np.concatenate([lr.X[s] for lr, s in parts]).reshape(-1, self.n_features_in_)
        offset = np.concatenate([[0], np.cumsum([s.size for _, s in parts])])
        model, position = models.source.T
        self.support_vectors_ = rows[offset[model] + position]
        self.n_support_ = models.n_support
        self._model_coef = models.coef
        self._model_intercept = models.intercept
        self.n_iter_ = np.array([lr.n_iter for lr in self._learners], dtype=np.int64)
        self.dual_coef_ = models.dual_coef
        self.intercept_ = models.public_intercept

    @property
    def history_(self) -> dict[str, np.ndarray]:
        """Per example and binary learner: see the class docstring."""
        check_is_fitted(self)
        parts = [lr.history_arrays() for lr in self._learners]
        cols = {k: np.concatenate([p[k] for p in parts]) for k in HISTORY_FIELDS}
        order = np.lexsort((cols["learner"], cols["n_seen"]))
        return {k: v[order] for k, v in cols.items()}

    # ------------------------------------------------------------ predicting

    def _model_decision(self, X) -> np.ndarray:
        X = self._predict_prologue(X)
        if self.support_vectors_.shape[0] == 0:
            return np.tile(self._model_intercept, (X.shape[0], 1))
        return decision_values(
            self._spec,
            X,
            np.ascontiguousarray(self.support_vectors_),
            self._model_coef,
            self._model_intercept,
            # The learner keeps its multipliers and kernel values in float64;
            # float32 sums would turn exact zeros into tiny values of either
            # sign and flip one-vs-one votes.
            precision="float64",
        )

    def decision_function(self, X):
        """Compute the signed distances to the decision boundaries.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The rows to score.

        Returns
        -------
        ndarray of shape (n_samples,), (n_samples, n_classes) or (n_samples, n_pairs)
            For two classes, positive for ``classes_[1]``; otherwise one
            column per class (one-vs-one votes with a confidence tie-break,
            as :class:`SVC`, or the one-vs-rest decision values), or one per
            class pair for ``multiclass='ovo'`` with
            ``decision_function_shape='ovo'``.
        """
        return self._multiclass_decision(X)

    def predict(self, X):
        """Predict the class of each row of ``X``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The rows to classify.

        Returns
        -------
        ndarray of shape (n_samples,)
            The predicted labels, taken from ``classes_``.
        """
        return self._multiclass_predict(X)
