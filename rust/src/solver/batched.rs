//! Batched working sets for the C-SVC dual over dense rows: rounds that
//! each take `q` variables at once, compute their kernel columns in one
//! blocked pass over the data, and solve the `q`-variable subproblem on its
//! `q × q` block, after Wen, Shi, Li, He & Chen, "ThunderSVM: A Fast SVM
//! Library on GPUs and CPUs" (JMLR 19, 2018), §3.
//!
//! One column at a time, as SMO asks for them (Fan, Chen & Lin, JMLR 6,
//! 2005; [`crate::solver::smo`]), each kernel column streams the whole feature panel
//! from memory: at `10⁵`–`10⁶` rows the fill is bound by memory bandwidth.
//! Here the new columns of a round are computed tile by tile, a tile of
//! [`TILE_ROWS`] rows staying in the processor's cache while every new
//! column's values over it are computed (four columns per pass, the
//! register-tiled loops of [`crate::kernel`]), so the arithmetic, not the
//! memory, bounds the fill. A round:
//!
//! 1. selects the new members: the most violating variables not in the
//!    kept part of the working set, alternately from the up-set by
//!    `−y_t G_t` and from the low-set by `y_t G_t`; the older half of the
//!    last working set leaves, the newer half stays (first in, first out:
//!    ThunderSVM's reuse of half the working set);
//! 2. solves the subproblem over the working set, the other variables
//!    fixed, by the crate's SMO ([`crate::solver::smo::solve`], without shrinking)
//!    on its `q × q` block held whole ([`DenseQ`]), to the local tolerance
//!    `max(tol, gap/10)`
//!    or at most [`INNER_PAIRS_PER_VARIABLE`]` · q` pair updates; the block
//!    is computed from the members' rows by the same loops as the columns
//!    (the same values, without gathering `q²` entries out of `q` columns);
//! 3. in one pass over the tiles, fills the columns of the members whose
//!    `α` moved and the block does not hold, and adds `Q[:, B] Δα_B` to the
//!    gradient `G` (and the changes at the upper bounds to `Ḡ`) while the
//!    tile is in cache. A member that did not move needs no column: the
//!    subproblem reads the `q × q` block, and `G` changes only by the moved
//!    members' columns. (At 200 000 rows this cuts the kernel values the
//!    rounds compute by 23 %, with the same rounds and the same bits.)
//!
//! The block keeps the columns of up to [`MAX_HELD`] working sets, as the
//! budget allows (more columns once shrinking has shortened them), and
//! evicts the least recently used: a variable that comes back costs no
//! column.
//!
//! Shrinking (after LIBSVM's: Fan, Chen & Lin, "Working Set Selection
//! Using Second Order Information for Training Support Vector Machines",
//! JMLR 6, 2005; Chang & Lin, "LIBSVM: A Library for Support Vector
//! Machines", ACM TIST 2, 2011, §5.1): every [`SHRINK_EVERY`] rounds (an
//! epoch), the rows that cannot be in a violating pair at the current
//! maximal violations — at a bound, `y_t G_t` beyond the other side's
//! threshold — are moved behind the active ones, if at least one in
//! [`SHRINK_FRACTION`] can go. The permutation moves `α`, `G`, `Ḡ`, the
//! labels, the boxes and the source's rows alike (the rows are put back in
//! their order before [`presolve`] returns); the block's held columns, in
//! the old order, are dropped. Selection, fills and the `G` pass then run
//! over the active rows only, and each epoch keeps `α` of the rows still
//! active. When the active rows' maximal violation is below the switch
//! (or a cap stops the rounds), the catch-up brings the frozen rows' `G`
//! and `Ḡ` to the current `α`: for the rows frozen at each epoch,
//! `Σ_s (α_s − α_s(epoch)) Q_ts` over the variables that moved since, and
//! the changes at the upper bounds to `Ḡ`, by the same blocked loops (its
//! kernel values counted with the rest). If the violation over every row
//! is still above the switch, the rounds go on over every row, without
//! shrinking again. So the rounds end with the exact `(α, G, Ḡ)` either
//! way; shrinking saves the `G` pass, the fills and the scans over the
//! rows that no longer move, the larger part of the late rounds.
//!
//! Rounds stop once the maximal KKT violation
//! is below [`SWITCH_FACTOR`]` · tol` (or at the round or pair cap); the caller then
//! hands `(α, G, Ḡ)` to [`crate::solver::smo::solve_from`], which finishes to `tol`
//! with shrinking, so the answer is the dual optimum either way.
//!
//! Memory: the block takes `cap · n` `f32` values with `q ≤ cap`, counted
//! inside the kernel cache's budget (the caller frees it before the
//! finishing SMO fills its cache); `q` is cut to what the budget holds,
//! and a refused allocation halves `cap`, then `q`, down to
//! [`MIN_WORKING_SET`] before it is a memory error. Besides: `q²` `f32`
//! values for the subproblem, a few vectors of `n`, and the
//! epochs' copies of `α` (each epoch sets aside at least one in
//! [`SHRINK_FRACTION`] of the active rows, so at most `SHRINK_FRACTION · n`
//! `f64` values together). Each value is computed alone and the sums run
//! in a fixed order, so the result is the same bits on one thread or two.

use std::sync::Arc;

use crate::error::{try_filled, try_with_capacity, try_zeroed_block, Result};
use crate::kernel::{fill_four_impl, fill_one_impl, KernelKind, KernelSource, Panel, Query, Rows};
use crate::numeric::simd::{self, multiversion};
use crate::runtime::control::Control;
use crate::runtime::team::Team;
use crate::solver::qmatrix::DenseQ;
use crate::solver::smo;

/// Variables from which the automatic choice takes batched rounds (dense
/// rows, `float32` kernel values, the C-SVC dual from `α = 0` or from a
/// start with its gradient): where one column at a time is bound by memory.
pub const MIN_ROWS: usize = crate::solver::qmatrix::MEMORY_BOUND_ROWS;

/// The working set's size, at most (even).
pub const WORKING_SET: usize = if cfg!(test) { 48 } else { 1024 };

/// Working sets below this are not worth a round: with a smaller cache
/// budget the solver keeps to SMO.
pub const MIN_WORKING_SET: usize = if cfg!(test) { 8 } else { 128 };

/// Rows per tile of the block: a tile of the `f32` panel (`TILE_ROWS · d`
/// values) stays in the processor's cache while the new columns' values
/// over it are computed.
pub const TILE_ROWS: usize = if cfg!(test) { 40 } else { 1024 };

/// Rounds stop once the maximal violation is below this many times `tol`.
pub const SWITCH_FACTOR: f64 = 10.0;

/// The block holds at most this many working sets' columns (as the budget
/// allows): columns of variables that come back are reused.
pub const MAX_HELD: usize = 8;

/// Rounds at most: this many plus [`ROUNDS_PER_SWEEP`] per `n / q` (then
/// SMO takes over, under its own cap).
pub const MIN_ROUNDS_CAP: u64 = 1000;

/// Rounds allowed per sweep of `n / q` working sets (see
/// [`MIN_ROUNDS_CAP`]).
pub const ROUNDS_PER_SWEEP: u64 = 10;

/// Rounds between shrinking epochs (see [`presolve`]).
pub const SHRINK_EVERY: u64 = 10;

/// An epoch sets rows aside only when at least one in this many active
/// rows can go (each epoch drops the block's held columns).
pub const SHRINK_FRACTION: usize = 20;

/// The subproblem's cap: pair updates per working-set variable.
pub const INNER_PAIRS_PER_VARIABLE: u64 = 20;

/// What the rounds leave for the finishing SMO.
#[derive(Clone, Debug)]
pub struct Presolved {
    pub alpha: Vec<f64>,
    /// `G = Qα + p`.
    pub grad: Vec<f64>,
    /// `Ḡ = Σ_{α_t ≥ U_t} U_t Q_t`.
    pub grad_bar: Vec<f64>,
    /// Rounds run.
    pub rounds: u64,
    /// Pair updates of the subproblems, all rounds together.
    pub pairs: u64,
    /// Kernel values computed (`n` per column filled: one per moved
    /// member the block did not hold).
    pub kernel_evaluations: u64,
    /// The maximal KKT violation where the rounds stopped.
    pub gap: f64,
    /// Rows set aside by shrinking, all epochs together.
    pub shrunk: usize,
}

/// The settings of [`presolve`].
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    /// Working-set size (cut to the budget, made even).
    pub working_set: usize,
    /// Stop once the maximal violation is below this.
    pub switch_gap: f64,
    /// The finishing solve's tolerance (the subproblems' floor).
    pub tol: f64,
    /// Pair updates, all subproblems together, at most.
    pub max_pairs: u64,
    /// Bytes the block may take.
    pub budget_bytes: usize,
    /// Whether rows far from violating are set aside between epochs.
    pub shrinking: bool,
}

impl Settings {
    /// The defaults for `tol`, a pair cap and the kernel cache's budget.
    pub fn new(tol: f64, max_pairs: u64, budget_bytes: usize) -> Self {
        Settings {
            working_set: WORKING_SET,
            switch_gap: SWITCH_FACTOR * tol,
            tol,
            max_pairs,
            budget_bytes,
            shrinking: true,
        }
    }

    /// The working-set size for `n` variables: [`Settings::working_set`]
    /// cut to the budget and to `n`, even; `None` when below
    /// [`MIN_WORKING_SET`].
    pub fn size_for(&self, n: usize) -> Option<usize> {
        let by_budget = self.budget_bytes / (4 * n.max(1));
        let q = self.working_set.min(by_budget).min(n) & !1;
        (q >= MIN_WORKING_SET).then_some(q)
    }
}

/// Whether batched rounds apply to a source: dense rows with a kernel
/// function and its `f32` panel built.
pub fn applicable(source: &KernelSource) -> bool {
    matches!(source, KernelSource::Dense { panel, .. } if panel.get().is_some())
}

/// The block: the kernel columns of up to `cap` variables over all `n`
/// rows (the working set's and, while the budget holds them, those of
/// earlier members, so a variable that comes back needs no new column),
/// stored by tiles of [`TILE_ROWS`] rows: tile `r` holds, from
/// `r · TILE_ROWS · cap` on, every slot's values over its rows, one slot
/// after the other.
struct Block {
    cap: usize,
    data: Vec<f32>,
    /// The variable each slot holds (`usize::MAX`: none).
    holder: Vec<usize>,
    /// Each variable's slot (`usize::MAX`: none).
    slot_of: Vec<usize>,
    /// The last round each slot was in the working set.
    used: Vec<u64>,
}

impl Block {
    /// Forgets every held column and lays the block out anew for the
    /// first `rows` rows: as many slots as its values hold, `most` at most.
    fn reset(&mut self, rows: usize, most: usize) {
        self.cap = (self.data.len() / rows.max(1)).min(most);
        self.holder.clear();
        self.holder.resize(self.cap, usize::MAX);
        self.used.clear();
        self.used.resize(self.cap, 0);
        self.slot_of.fill(usize::MAX);
    }

    /// Slots for the variables `wanted` (none of them held), taken from the
    /// free slots, then from those least recently in the working set; the
    /// slots in `keep` stay. The evicted variables lose their slot.
    fn make_room(&mut self, wanted: &[usize], keep: &[bool]) -> Vec<usize> {
        let mut free: Vec<usize> = (0..self.cap).filter(|&s| !keep[s]).collect();
        free.sort_unstable_by_key(|&s| (self.holder[s] != usize::MAX, self.used[s], s));
        let mut slots = Vec::with_capacity(wanted.len());
        for (&t, &s) in wanted.iter().zip(&free) {
            if self.holder[s] != usize::MAX {
                self.slot_of[self.holder[s]] = usize::MAX;
            }
            self.holder[s] = t;
            self.slot_of[t] = s;
            slots.push(s);
        }
        slots
    }
}

multiversion! {
    /// The columns of `queries` (factors `factors`) over panel rows
    /// `[start, end)`, four per pass: `outs[k][t − start] = factors[k] ·
    /// scale[t] · K(q_k, x_t)`, the values of the one-column fill.
    fn fill_tile, fn fill_tile_impl(
        kind: KernelKind,
        panel: &Panel,
        queries: &[&Query],
        factors: &[f32],
        scale: &[f32],
        start: usize,
        end: usize,
        outs: &mut [&mut [f32]],
    ) {
        let mut k = 0;
        while k + 4 <= queries.len() {
            let [a, b, c, d] = &mut outs[k..k + 4] else {
                unreachable!("four outputs");
            };
            let qs = [queries[k], queries[k + 1], queries[k + 2], queries[k + 3]];
            let fs = [factors[k], factors[k + 1], factors[k + 2], factors[k + 3]];
            let outs4 = [&mut **a, &mut **b, &mut **c, &mut **d];
            fill_four_impl::<FMA>(kind, panel, qs, fs, scale, start, end, outs4);
            k += 4;
        }
        while k < queries.len() {
            let out = &mut *outs[k];
            fill_one_impl::<FMA>(kind, panel, queries[k], factors[k], scale, start, end, out);
            k += 1;
        }
    }
}

/// `g[t] += w · cols[slot][t]` for each `(slot, w)` of `moves` in turn,
/// four columns per pass over `g` ([`simd::add_scaled_4`]: the bits of one
/// column at a time).
#[inline(always)]
fn accumulate_columns(cols: &[&mut [f32]], moves: &[(usize, f64)], g: &mut [f64]) {
    let len = g.len();
    let col = |slot: usize| &cols[slot][..len];
    let mut quads = moves.chunks_exact(4);
    for quad in &mut quads {
        let w = [quad[0].1, quad[1].1, quad[2].1, quad[3].1];
        let four = [
            col(quad[0].0),
            col(quad[1].0),
            col(quad[2].0),
            col(quad[3].0),
        ];
        simd::add_scaled_4(g, w, four);
    }
    for &(slot, w) in quads.remainder() {
        simd::add_scaled(g, w, col(slot));
    }
}

multiversion! {
    /// `g[t] += w · cols[slot][t]` for each `(slot, w)` of `moves` and
    /// `gb[t] += v · cols[slot][t]` for each of `bar_moves`, over one tile,
    /// in their order.
    fn add_tile, fn add_tile_impl(
        cols: &[&mut [f32]],
        moves: &[(usize, f64)],
        bar_moves: &[(usize, f64)],
        g: &mut [f64],
        gb: &mut [f64],
    ) {
        accumulate_columns(cols, moves, g);
        accumulate_columns(cols, bar_moves, gb);
    }
}

multiversion! {
    /// `own[k] = Σ_l b[k·m + l] · x[l]` over the `m × m` block `b` (its
    /// values widened to `f64`, exactly), the terms in the order of `l` (a
    /// product and a sum each, not fused: [`simd::add_scaled`]), those with
    /// `x[l] = 0` left out (they add a zero, which can change only the sign
    /// of a zero sum). The rows are read as columns: the block is symmetric
    /// bit for bit (each value is `y_k y_l` times the kernel of the same
    /// squared differences), so `own` is added a row of `b` at a time,
    /// across `k`.
    fn block_times, fn block_times_impl(b: &[f32], x: &[f64], own: &mut [f64]) {
        let m = x.len();
        own.fill(0.0);
        for (l, &xl) in x.iter().enumerate() {
            if xl != 0.0 {
                simd::add_scaled(own, xl, &b[l * m..(l + 1) * m]);
            }
        }
    }
}

/// Rows of the subproblem's `q × q` block per piece of the team's job.
const BLOCK_ROWS_PER_PIECE: usize = if cfg!(test) { 5 } else { 64 };

/// New columns per chunk of a round's pass (see [`Chunk`]): their values
/// over one tile (`4 · TILE_ROWS` bytes each) stay in the processor's
/// second-level cache until added to `G`.
/// (Fewer in this crate's unit tests, so rounds have several chunks and
/// chunks that are not whole fours.)
const FRESH_PER_CHUNK: usize = if cfg!(test) { 6 } else { 32 };

/// A run of a round's moved members, in their order: its moves and
/// upper-bound changes (ranges of the round's lists) and its new columns
/// (a range of the round's missing members). The pass fills a chunk's new
/// columns over a tile, then adds the chunk's columns to `G` and `Ḡ`, so
/// the sums run in the members' order whatever the chunks.
#[derive(Clone, Debug)]
struct Chunk {
    moves: std::ops::Range<usize>,
    bars: std::ops::Range<usize>,
    fresh: std::ops::Range<usize>,
}

/// `sign`'s values as `f32` (`±1`, exact).
fn signs_f32(y: &[f64]) -> Result<Vec<f32>> {
    let hint = "use a smaller cache_size or solver='smo'";
    let mut s = try_with_capacity(y.len(), "the labels as float32", hint)?;
    s.extend(y.iter().map(|&v| v as f32));
    Ok(s)
}

/// Up-set membership: `α_t` may move so that `y_t α_t` grows.
#[inline]
fn in_up(y: f64, a: f64, u: f64) -> bool {
    if y > 0.0 {
        a < u
    } else {
        a > 0.0
    }
}

/// Low-set membership: `α_t` may move so that `y_t α_t` shrinks.
#[inline]
fn in_low(y: f64, a: f64, u: f64) -> bool {
    if y > 0.0 {
        a > 0.0
    } else {
        a < u
    }
}

/// Rows set aside at one shrinking epoch: positions `[lo, hi)` of the
/// permuted order, with `α` over the rows still active then (`[0, lo)`),
/// from which the catch-up takes the changes since.
struct Frozen {
    lo: usize,
    hi: usize,
    alpha: Vec<f64>,
}

multiversion! {
    /// The thresholds `(max_{up} −y_t G_t, max_{low} y_t G_t)` (a maximum
    /// is exact in any order, so the scan runs without branches, a value
    /// outside its set counting as `−∞`).
    fn thresholds, fn thresholds_impl(
        y: &[f64],
        g: &[f64],
        alpha: &[f64],
        upper: &[f64],
    ) -> (f64, f64) {
        let (mut up, mut low) = (f64::NEG_INFINITY, f64::NEG_INFINITY);
        let n = y.len();
        let (g, alpha, upper) = (&g[..n], &alpha[..n], &upper[..n]);
        for t in 0..n {
            let yg = y[t] * g[t];
            let up_t = if in_up(y[t], alpha[t], upper[t]) { -yg } else { f64::NEG_INFINITY };
            let low_t = if in_low(y[t], alpha[t], upper[t]) { yg } else { f64::NEG_INFINITY };
            up = up.max(up_t);
            low = low.max(low_t);
        }
        (up, low)
    }
}

/// The maximal violation `max_{up} −y_t G_t + max_{low} y_t G_t`.
fn gap(y: &[f64], g: &[f64], alpha: &[f64], upper: &[f64]) -> f64 {
    let (up, low) = thresholds(y, g, alpha, upper);
    up + low
}

/// The `count` largest of `(value, t)` (ties to the lower index), in that
/// order.
fn top(cand: &mut Vec<(f64, usize)>, count: usize) -> Vec<usize> {
    let order = |a: &(f64, usize), b: &(f64, usize)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
    if cand.len() > count && count > 0 {
        cand.select_nth_unstable_by(count - 1, order);
        cand.truncate(count);
    }
    cand.sort_unstable_by(order);
    cand.iter().map(|&(_, t)| t).collect()
}

/// Applies `swaps`, in order, to `v`.
fn apply_swaps<T>(v: &mut [T], swaps: &[(usize, usize)]) {
    for &(i, j) in swaps {
        v.swap(i, j);
    }
}

/// The kind, rows and `f32` panel of a dense source.
fn dense_parts(source: &KernelSource) -> Option<(KernelKind, &Rows, &Panel)> {
    match source {
        KernelSource::Dense { kind, rows, panel } => Some((*kind, rows, panel.get()?)),
        _ => None,
    }
}

/// What avoids the shrinking's own allocations.
const SHRINK_HINT: &str = "use shrinking=False or solver='smo'";

/// Kernel columns per pass of the catch-up (their values over one tile
/// stay in the processor's cache until added).
const CATCH_UP_GROUP: usize = 32;

/// Variables whose queries the catch-up builds at once.
const CATCH_UP_BATCH: usize = 1024;

/// Brings `G` and `Ḡ` of the frozen rows up to date: for the rows frozen
/// at each epoch, `Σ_s (α_s − α_s(epoch)) Q_ts` over the variables that
/// moved since, and the changes at the upper bounds to `Ḡ`, tile by tile.
/// Returns the kernel values computed.
#[allow(clippy::too_many_arguments)]
fn catch_up(
    kind: KernelKind,
    panel: &Panel,
    sign: &[f32],
    alpha: &[f64],
    upper: &[f64],
    grad: &mut [f64],
    grad_bar: &mut [f64],
    frozen: &[Frozen],
    team: Option<&Arc<Team>>,
    ctl: &Control,
) -> Result<u64> {
    let mut evaluations = 0u64;
    for seg in frozen {
        let changed: Vec<(usize, f64, f64)> = (0..seg.lo)
            .filter_map(|s| {
                let (was, now) = (seg.alpha[s], alpha[s]);
                (now != was).then(|| {
                    let bar = match (was >= upper[s], now >= upper[s]) {
                        (false, true) => upper[s],
                        (true, false) => -upper[s],
                        _ => 0.0,
                    };
                    (s, now - was, bar)
                })
            })
            .collect();
        for batch in changed.chunks(CATCH_UP_BATCH) {
            ctl.check()?;
            let queries: Vec<Query> = batch.iter().map(|&(s, ..)| panel.query(s)).collect();
            let refs: Vec<&Query> = queries.iter().collect();
            let factors: Vec<f32> = batch.iter().map(|&(s, ..)| sign[s]).collect();
            let work = |start: usize, g: &mut [f64], gb: &mut [f64]| {
                if ctl.is_cancelled() {
                    return;
                }
                let (t0, len) = (seg.lo + start, g.len());
                let mut buf = vec![0.0f32; CATCH_UP_GROUP * len];
                for k0 in (0..batch.len()).step_by(CATCH_UP_GROUP) {
                    let k1 = (k0 + CATCH_UP_GROUP).min(batch.len());
                    let mut outs: Vec<&mut [f32]> =
                        buf.chunks_exact_mut(len).take(k1 - k0).collect();
                    fill_tile(
                        kind,
                        panel,
                        &refs[k0..k1],
                        &factors[k0..k1],
                        sign,
                        t0,
                        t0 + len,
                        &mut outs,
                    );
                    let moves: Vec<(usize, f64)> = (k0..k1).map(|k| (k - k0, batch[k].1)).collect();
                    let bar_moves: Vec<(usize, f64)> = (k0..k1)
                        .filter(|&k| batch[k].2 != 0.0)
                        .map(|k| (k - k0, batch[k].2))
                        .collect();
                    add_tile(&outs, &moves, &bar_moves, g, gb);
                }
            };
            let (g, gb) = (&mut grad[seg.lo..seg.hi], &mut grad_bar[seg.lo..seg.hi]);
            match team {
                Some(team) => team.for_chunks2(g, gb, TILE_ROWS, work),
                None => {
                    for (k, (g, gb)) in g
                        .chunks_mut(TILE_ROWS)
                        .zip(gb.chunks_mut(TILE_ROWS))
                        .enumerate()
                    {
                        work(k * TILE_ROWS, g, gb);
                    }
                }
            }
            ctl.check()?;
            evaluations += (batch.len() as u64) * ((seg.hi - seg.lo) as u64);
        }
    }
    Ok(evaluations)
}

/// Batched rounds from the feasible start `alpha` with gradient `grad`
/// and `grad_bar` its `Ḡ` (`None`: zeros, right when no variable of
/// `alpha` is at its upper bound, as at `α = 0`). `source` must be
/// [`applicable`]; `y` the labels (`±1`), `upper` the boxes. Returns
/// `None` when the budget holds no working set of [`MIN_WORKING_SET`].
/// Polls `ctl` once per round and per tile. The rows of `source` are
/// permuted while the rounds run (shrinking) and put back in their order
/// before it returns, with an error too.
#[allow(clippy::too_many_arguments)]
pub fn presolve(
    source: &mut KernelSource,
    y: &[f64],
    upper: &[f64],
    alpha: Vec<f64>,
    grad: Vec<f64>,
    grad_bar: Option<Vec<f64>>,
    settings: &Settings,
    team: Option<&Arc<Team>>,
    ctl: &Control,
) -> Result<Option<Presolved>> {
    if dense_parts(source).is_none() {
        return Ok(None);
    }
    // Every swap freezes one row, and a row freezes once.
    let mut swaps: Vec<(usize, usize)> = if settings.shrinking {
        try_with_capacity(y.len(), "the order of the shrunk rows", SHRINK_HINT)?
    } else {
        Vec::new()
    };
    let out = run_rounds(
        source, y, upper, alpha, grad, grad_bar, settings, team, ctl, &mut swaps,
    );
    swaps.reverse();
    source.swap_many(&swaps);
    let mut out = out?;
    if let Some(pre) = &mut out {
        apply_swaps(&mut pre.alpha, &swaps);
        apply_swaps(&mut pre.grad, &swaps);
        apply_swaps(&mut pre.grad_bar, &swaps);
    }
    Ok(out)
}

/// [`presolve`]'s rounds, in the permuted order; every swap it makes to
/// `source` is appended to `swaps`.
#[allow(clippy::too_many_arguments)]
fn run_rounds(
    source: &mut KernelSource,
    y: &[f64],
    upper: &[f64],
    alpha: Vec<f64>,
    grad: Vec<f64>,
    grad_bar: Option<Vec<f64>>,
    settings: &Settings,
    team: Option<&Arc<Team>>,
    ctl: &Control,
    swaps: &mut Vec<(usize, usize)>,
) -> Result<Option<Presolved>> {
    let n = y.len();
    let Some(mut q) = settings.size_for(n) else {
        return Ok(None);
    };
    let hint = "use a smaller cache_size or solver='smo'";
    // The block, as many columns as the budget holds (fewer, down to the
    // working set, when the system refuses).
    let mut cap = (settings.budget_bytes / (4 * n)).clamp(q, MAX_HELD * q);
    let data = loop {
        match try_zeroed_block(cap * n, "the batched working sets' kernel columns", hint) {
            Ok(d) => break d,
            Err(err) if cap == q && q / 2 < MIN_WORKING_SET => return Err(err),
            Err(_) if cap > q => cap = q.max(cap / 2),
            Err(_) => {
                q = (q / 2) & !1;
                cap = q;
            }
        }
    };
    let mut block = Block {
        cap,
        data,
        holder: vec![usize::MAX; cap],
        slot_of: vec![usize::MAX; n],
        used: vec![0; cap],
    };
    let mut sign = signs_f32(y)?;
    let mut y = y.to_vec();
    let mut upper = upper.to_vec();
    let mut alpha = alpha;
    let mut grad = grad;
    let mut grad_bar = match grad_bar {
        Some(v) => v,
        None => try_filled(n, 0.0f64, "the gradient of bounded variables", hint)?,
    };
    // The working set's variables, oldest first.
    let mut ws: Vec<usize> = Vec::with_capacity(q);
    let mut member = vec![false; n];
    let mut taken = vec![false; n];
    let mut qbb32 = vec![0.0f32; q * q];
    // The selection's candidates, `(key, t)`, kept from round to round.
    let mut up: Vec<(f64, usize)> = Vec::new();
    let mut low: Vec<(f64, usize)> = Vec::new();
    let (mut rounds, mut pairs, mut evaluations) = (0u64, 0u64, 0u64);
    let team = team.filter(|t| t.engaged()).map(Arc::clone);
    let max_rounds = MIN_ROUNDS_CAP + ROUNDS_PER_SWEEP * (n / q) as u64;
    // Shrinking: rows `[active, n)` are frozen, in epochs (`frozen`).
    let mut active = n;
    let mut frozen: Vec<Frozen> = Vec::new();
    let mut shrinking = settings.shrinking;
    let mut shrunk = 0usize;
    let mut last_epoch = 0u64;
    let mut stalled = false;
    let mut last_gap;
    loop {
        ctl.check()?;
        last_gap = gap(
            &y[..active],
            &grad[..active],
            &alpha[..active],
            &upper[..active],
        );
        let capped = pairs >= settings.max_pairs || rounds >= max_rounds;
        if last_gap < settings.switch_gap || capped || stalled {
            if frozen.is_empty() {
                break;
            }
            // The end of the active rows' rounds: the frozen rows' G and Ḡ
            // caught up, every row active again.
            let (kind, _, panel) = dense_parts(source).expect("a dense source");
            evaluations += catch_up(
                kind,
                panel,
                &sign,
                &alpha,
                &upper,
                &mut grad,
                &mut grad_bar,
                &frozen,
                team.as_ref(),
                ctl,
            )?;
            frozen.clear();
            active = n;
            block.reset(active, MAX_HELD * q);
            for &t in &ws {
                member[t] = false;
            }
            ws.clear();
            shrinking = false;
            stalled = false;
            continue;
        }
        if shrinking && rounds >= last_epoch + SHRINK_EVERY {
            last_epoch = rounds;
            let (up, low) = thresholds(
                &y[..active],
                &grad[..active],
                &alpha[..active],
                &upper[..active],
            );
            let frozen_here =
                |t: usize| smo::can_shrink_at(alpha[t], upper[t], y[t], grad[t], up, low);
            let count = (0..active).filter(|&t| frozen_here(t)).count();
            if count > 0 && count * SHRINK_FRACTION >= active {
                // The shrinkable rows to the end, the others kept in front
                // (LIBSVM's partition: Chang & Lin, §5.1).
                let first = swaps.len();
                let (mut i, mut end) = (0, active);
                while i < end {
                    if frozen_here(i) {
                        end -= 1;
                        while end > i {
                            if !frozen_here(end) {
                                swaps.push((i, end));
                                break;
                            }
                            end -= 1;
                        }
                    }
                    i += 1;
                }
                let here = &swaps[first..];
                apply_swaps(&mut alpha, here);
                apply_swaps(&mut grad, here);
                apply_swaps(&mut grad_bar, here);
                apply_swaps(&mut y, here);
                apply_swaps(&mut upper, here);
                apply_swaps(&mut sign, here);
                for f in &mut frozen {
                    apply_swaps(&mut f.alpha, here);
                }
                source.swap_many(here);
                let mut snapshot =
                    try_with_capacity(end, "the multipliers at a shrinking epoch", SHRINK_HINT)?;
                snapshot.extend_from_slice(&alpha[..end]);
                frozen.push(Frozen {
                    lo: end,
                    hi: active,
                    alpha: snapshot,
                });
                shrunk += active - end;
                active = end;
                // The held columns are in the old order: dropped.
                block.reset(active, MAX_HELD * q);
                for &t in &ws {
                    member[t] = false;
                }
                ws.clear();
            }
        }
        let (kind, rows, panel) = dense_parts(source).expect("a dense source");
        // New members: all q in the first round, then half; the newer half
        // of the last working set stays.
        let fresh = if ws.is_empty() { q } else { q / 2 };
        let kept: Vec<usize> = ws[ws.len().saturating_sub(q - fresh)..].to_vec();
        for &t in &ws {
            member[t] = false;
        }
        for &t in &kept {
            member[t] = true;
        }
        up.clear();
        low.clear();
        for t in 0..active {
            if member[t] {
                continue;
            }
            let yg = y[t] * grad[t];
            if in_up(y[t], alpha[t], upper[t]) {
                up.push((-yg, t));
            }
            if in_low(y[t], alpha[t], upper[t]) {
                low.push((yg, t));
            }
        }
        let ups = top(&mut up, fresh);
        let lows = top(&mut low, fresh);
        let mut chosen = Vec::with_capacity(fresh);
        let (mut a, mut b) = (0, 0);
        // Alternate between the two lists, skipping variables taken.
        while chosen.len() < fresh && (a < ups.len() || b < lows.len()) {
            let from_up = (chosen.len() % 2 == 0 && a < ups.len()) || b >= lows.len();
            let t = if from_up {
                a += 1;
                ups[a - 1]
            } else {
                b += 1;
                lows[b - 1]
            };
            if !taken[t] {
                taken[t] = true;
                chosen.push(t);
            }
        }
        for &t in &chosen {
            taken[t] = false;
        }
        if chosen.is_empty() {
            stalled = true;
            continue;
        }
        ws = kept;
        ws.extend_from_slice(&chosen);
        for &t in &ws {
            member[t] = true;
            if block.slot_of[t] != usize::MAX {
                block.used[block.slot_of[t]] = rounds + 1;
            }
        }
        // The subproblem on the q × q block, its values computed afresh
        // from the members' rows (the same loops, so the same values as
        // the columns', without gathering them from q columns).
        let members = &ws;
        let m = members.len();
        let sub = Panel::try_new(&rows.gather(members)?)?;
        let sub_queries: Vec<Query> = (0..m).map(|k| sub.query(k)).collect();
        let sub_refs: Vec<&Query> = sub_queries.iter().collect();
        let sub_sign: Vec<f32> = members.iter().map(|&t| sign[t]).collect();
        {
            // Rows of the block in pieces of BLOCK_ROWS_PER_PIECE members,
            // on the team when it is engaged (each value computed alone:
            // the same bits either way).
            let fill_rows = |start: usize, piece: &mut [f32]| {
                let k0 = start / m;
                let k1 = k0 + piece.len() / m;
                let mut outs: Vec<&mut [f32]> = piece.chunks_exact_mut(m).collect();
                let (qs, fs) = (&sub_refs[k0..k1], &sub_sign[k0..k1]);
                fill_tile(kind, &sub, qs, fs, &sub_sign, 0, m, &mut outs);
            };
            let rows_of_block = &mut qbb32[..m * m];
            match &team {
                Some(team) => {
                    team.map_chunks(rows_of_block, BLOCK_ROWS_PER_PIECE * m, fill_rows);
                }
                None => fill_rows(0, rows_of_block),
            }
        }
        let yb: Vec<f64> = members.iter().map(|&t| y[t]).collect();
        let ub: Vec<f64> = members.iter().map(|&t| upper[t]).collect();
        let old: Vec<f64> = members.iter().map(|&t| alpha[t]).collect();
        // The subproblem over the working set, the rest fixed: SMO on the
        // block, with `p` such that its gradient starts at G's members.
        let mut own = vec![0.0f64; m];
        block_times(&qbb32[..m * m], &old, &mut own);
        let p: Vec<f64> = (0..m).map(|k| grad[members[k]] - own[k]).collect();
        let diag: Vec<f64> = (0..m).map(|k| f64::from(qbb32[k * m + k])).collect();
        let eps = settings.tol.max(0.1 * last_gap);
        let cap_pairs = (INNER_PAIRS_PER_VARIABLE * m as u64).min(settings.max_pairs - pairs);
        let mut block_q = DenseQ {
            n: m,
            cols: std::mem::take(&mut qbb32),
            diag,
        };
        let solved = smo::solve(&mut block_q, &p, &yb, &ub, &old, eps, cap_pairs, false, ctl)?;
        qbb32 = block_q.cols;
        let ab = solved.alpha;
        pairs += solved.n_iter;
        rounds += 1;
        // Only the members whose α moved need their column (for G and Ḡ):
        // the held ones as they are, the others into the free or least
        // recently used slots, the moved members' slots kept.
        let moved: Vec<usize> = (0..m).filter(|&k| ab[k] != old[k]).collect();
        if moved.is_empty() {
            stalled = true;
            continue;
        }
        let mut keep = vec![false; block.cap];
        let mut missing = Vec::new();
        let mut fresh = Vec::with_capacity(moved.len());
        for &k in &moved {
            let slot = block.slot_of[members[k]];
            fresh.push(slot == usize::MAX);
            match slot {
                usize::MAX => missing.push(members[k]),
                s => keep[s] = true,
            }
        }
        let new_slots = block.make_room(&missing, &keep);
        for &s in &new_slots {
            block.used[s] = rounds;
        }
        // G and Ḡ from the moved members' columns, in chunks of at most
        // FRESH_PER_CHUNK new columns: the pass fills a chunk's new columns
        // over a tile, then adds the chunk's columns while they are in the
        // processor's cache.
        let mut moves = Vec::new();
        let mut bar_moves = Vec::new();
        let mut chunks: Vec<Chunk> = Vec::new();
        // Where the open chunk starts in `moves`, `bar_moves` and `missing`.
        let (mut from, mut made) = ((0, 0, 0), 0);
        for (i, &k) in moved.iter().enumerate() {
            let slot = block.slot_of[members[k]];
            moves.push((slot, ab[k] - old[k]));
            let (was, now) = (old[k] >= ub[k], ab[k] >= ub[k]);
            if was != now {
                bar_moves.push((slot, if now { ub[k] } else { -ub[k] }));
            }
            made += usize::from(fresh[i]);
            if made - from.2 == FRESH_PER_CHUNK || i + 1 == moved.len() {
                chunks.push(Chunk {
                    moves: from.0..moves.len(),
                    bars: from.1..bar_moves.len(),
                    fresh: from.2..made,
                });
                from = (moves.len(), bar_moves.len(), made);
            }
        }
        for k in 0..m {
            alpha[members[k]] = ab[k];
        }
        let queries: Vec<Query> = missing.iter().map(|&t| panel.query(t)).collect();
        let query_refs: Vec<&Query> = queries.iter().collect();
        let factors: Vec<f32> = missing.iter().map(|&t| sign[t]).collect();
        type Tile<'a> = (usize, &'a mut [f32], &'a mut [f64], &'a mut [f64]);
        let mut tiles: Vec<Tile<'_>> = block
            .data
            .chunks_mut(TILE_ROWS * block.cap)
            .zip(
                grad[..active]
                    .chunks_mut(TILE_ROWS)
                    .zip(grad_bar[..active].chunks_mut(TILE_ROWS)),
            )
            .enumerate()
            .map(|(r, (piece, (g, gbar)))| (r, piece, g, gbar))
            .collect();
        let pass = |tile: &mut Tile<'_>| {
            if ctl.is_cancelled() {
                return;
            }
            let (r, piece, g, gbar) = tile;
            let (t0, len) = (*r * TILE_ROWS, g.len());
            let mut cols: Vec<&mut [f32]> = piece.chunks_exact_mut(len).collect();
            for chunk in &chunks {
                if !chunk.fresh.is_empty() {
                    let made = &new_slots[chunk.fresh.clone()];
                    // The chunk's new columns, lent to the fill (distinct slots).
                    let mut outs: Vec<&mut [f32]> =
                        made.iter().map(|&s| std::mem::take(&mut cols[s])).collect();
                    fill_tile(
                        kind,
                        panel,
                        &query_refs[chunk.fresh.clone()],
                        &factors[chunk.fresh.clone()],
                        &sign,
                        t0,
                        t0 + len,
                        &mut outs,
                    );
                    for (&s, out) in made.iter().zip(outs) {
                        cols[s] = out;
                    }
                }
                let (mv, bars) = (&moves[chunk.moves.clone()], &bar_moves[chunk.bars.clone()]);
                add_tile(&cols, mv, bars, g, gbar);
            }
        };
        match &team {
            Some(team) => {
                team.map_chunks(&mut tiles, 1, |_, piece| piece.iter_mut().for_each(pass));
            }
            None => tiles.iter_mut().for_each(pass),
        }
        ctl.check()?;
        evaluations += (missing.len() as u64) * (active as u64);
    }
    Ok(Some(Presolved {
        alpha,
        grad,
        grad_bar,
        rounds,
        pairs,
        kernel_evaluations: evaluations,
        gap: last_gap,
        shrunk,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::Rows;
    use crate::precision::Precision;
    use crate::solver::problem::{Constraint, DualProblem, Solution, SolverChoice, SolverOptions};

    /// Two overlapping classes in 4-D (many multipliers end at the bound).
    fn overlapping(n: usize) -> (Vec<f64>, Vec<f64>) {
        let mut state = 23u64;
        let mut next = move || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 11) as f64) / ((1u64 << 53) as f64)
        };
        let (mut x, mut y) = (Vec::new(), Vec::new());
        for i in 0..n {
            let label = if i % 3 == 0 { 1.0 } else { -1.0 };
            for f in 0..4 {
                x.push(0.5 * label * f64::from(u8::from(f < 2)) + 2.0 * (next() - 0.5));
            }
            y.push(label);
        }
        (x, y)
    }

    /// The subproblem's block, as a round computes it (the members' rows
    /// as their own panel, four queries per pass and the remainder one at
    /// a time), is symmetric bit for bit, which [`block_times`] relies on;
    /// and `block_times` gives the bits of the plain sums in `l`'s order.
    #[test]
    fn the_block_is_symmetric_and_block_times_sums_in_order() {
        let (x, y) = overlapping(53);
        let kind = KernelKind::Rbf { gamma: 0.8 };
        let rows = Rows::new(x, 53, 4).unwrap();
        let members: Vec<usize> = (0..53).rev().step_by(2).collect();
        let m = members.len();
        let sub = Panel::try_new(&rows.gather(&members).unwrap()).unwrap();
        let queries: Vec<Query> = (0..m).map(|k| sub.query(k)).collect();
        let refs: Vec<&Query> = queries.iter().collect();
        let sign: Vec<f32> = members.iter().map(|&t| y[t] as f32).collect();
        let mut b32 = vec![0.0f32; m * m];
        let mut outs: Vec<&mut [f32]> = b32.chunks_exact_mut(m).collect();
        fill_tile(kind, &sub, &refs, &sign, &sign, 0, m, &mut outs);
        for k in 0..m {
            for l in 0..m {
                assert_eq!(
                    b32[k * m + l].to_bits(),
                    b32[l * m + k].to_bits(),
                    "({k}, {l})"
                );
            }
        }
        let xs: Vec<f64> = (0..m)
            .map(|l| {
                if l % 3 == 0 {
                    0.0
                } else {
                    0.37 * l as f64 - 2.0
                }
            })
            .collect();
        let mut own = vec![f64::NAN; m];
        block_times(&b32, &xs, &mut own);
        for k in 0..m {
            let plain: f64 = (0..m).map(|l| f64::from(b32[k * m + l]) * xs[l]).sum();
            assert_eq!(own[k].to_bits(), plain.to_bits(), "row {k}");
        }
    }

    /// Boxes of 1, every seventh 2 (so the bounds differ).
    fn uneven_boxes(n: usize) -> Vec<f64> {
        (0..n).map(|t| if t % 7 == 0 { 2.0 } else { 1.0 }).collect()
    }

    fn source(x: &[f64], n: usize) -> KernelSource {
        let rows = Rows::new(x.to_vec(), n, 4).unwrap();
        KernelSource::dense(KernelKind::Rbf { gamma: 0.8 }, rows).unwrap()
    }

    fn solve(x: &[f64], y: &[f64], upper: &[f64], opts: &SolverOptions) -> Solution {
        let n = y.len();
        let problem = DualProblem {
            source: source(x, n),
            y: y.to_vec(),
            p: None,
            upper: upper.to_vec(),
            alpha0: None,
            active: None,
            constraint: Constraint::Equality,
            start: Default::default(),
            twins: None,
        };
        problem.solve_with(opts, Precision::Float32).unwrap()
    }

    /// Options with `tol = 1e-5`.
    fn tight(solver: SolverChoice, threads: usize) -> SolverOptions {
        SolverOptions {
            tol: 1e-5,
            solver,
            threads,
            ..SolverOptions::default()
        }
    }

    /// Converged to the objective of `want` (relative 1e-6).
    fn assert_same_optimum(got: &Solution, want: &Solution) {
        assert!(got.converged);
        let rel = (got.objective - want.objective).abs() / want.objective.abs();
        assert!(
            rel < 1e-6,
            "objective {} vs {}",
            got.objective,
            want.objective
        );
    }

    /// `G = Qα + p` from the kernel values directly, in `f64`.
    fn gradient(src: &KernelSource, y: &[f64], alpha: &[f64]) -> Vec<f64> {
        (0..y.len())
            .map(|t| {
                -1.0 + (0..y.len())
                    .filter(|&s| alpha[s] != 0.0)
                    .map(|s| y[t] * y[s] * alpha[s] * src.eval(t, s))
                    .sum::<f64>()
            })
            .collect()
    }

    /// `Ḡ = Σ_{α_s ≥ U_s} U_s Q_s` from the kernel values directly.
    fn gradient_bar(src: &KernelSource, y: &[f64], alpha: &[f64], upper: &[f64]) -> Vec<f64> {
        let at_upper: Vec<f64> = alpha
            .iter()
            .zip(upper)
            .map(|(&a, &u)| if a >= u { u } else { 0.0 })
            .collect();
        let mut bar = gradient(src, y, &at_upper);
        bar.iter_mut().for_each(|g| *g += 1.0);
        bar
    }

    #[test]
    fn rounds_keep_the_gradient_and_approach_the_solution() {
        let n = 700;
        let (x, y) = overlapping(n);
        let upper = uneven_boxes(n);
        let src = source(&x, n);
        src.prepare_f32().unwrap();
        assert!(applicable(&src));
        let team = Team::new().map(Arc::new);
        let start = (vec![0.0; n], vec![-1.0; n]);
        let run = |shrinking: bool, team: Option<&Arc<Team>>| {
            let mut settings = Settings::new(1e-3, u64::MAX, 1 << 30);
            settings.switch_gap = 1e-3;
            settings.shrinking = shrinking;
            let (a, g) = start.clone();
            let mut own = src.clone();
            let pre = presolve(
                &mut own,
                &y,
                &upper,
                a,
                g,
                None,
                &settings,
                team,
                &Control::none(),
            )
            .unwrap()
            .unwrap();
            // The rows are back in their order.
            let (_, rows, panel) = dense_parts(&own).unwrap();
            let (_, rows0, panel0) = dense_parts(&src).unwrap();
            for t in 0..n {
                assert_eq!(rows.row(t), rows0.row(t), "row {t}");
                assert_eq!(panel.row(t), panel0.row(t), "panel row {t}");
            }
            pre
        };
        for shrinking in [true, false] {
            let pre = run(shrinking, None);
            assert!(pre.rounds > 1, "{} rounds", pre.rounds);
            assert!(pre.gap < 1e-3, "stopped at gap {}", pre.gap);
            assert_eq!(shrinking, pre.shrunk > 0, "{} rows shrunk", pre.shrunk);
            // Feasible: inside the boxes, yᵀα = 0.
            assert!(pre
                .alpha
                .iter()
                .zip(&upper)
                .all(|(&a, &u)| (0.0..=u).contains(&a)));
            let ya: f64 = pre.alpha.iter().zip(&y).map(|(a, y)| a * y).sum();
            assert!(ya.abs() < 1e-9, "yᵀα = {ya}");
            // The incremental G and Ḡ are the true ones (to f32 kernel
            // values), the shrunk rows' too.
            let want = gradient(&src, &y, &pre.alpha);
            let want_bar = gradient_bar(&src, &y, &pre.alpha, &upper);
            for t in 0..n {
                assert!((pre.grad[t] - want[t]).abs() < 1e-4, "G[{t}]");
                assert!((pre.grad_bar[t] - want_bar[t]).abs() < 1e-4, "Ḡ[{t}]");
            }
            // The same bits on the two-thread team.
            if let Some(team) = &team {
                let shared = run(shrinking, Some(team));
                assert_eq!(shared.alpha, pre.alpha);
                assert_eq!(shared.grad, pre.grad);
                assert_eq!(shared.grad_bar, pre.grad_bar);
                assert_eq!(shared.rounds, pre.rounds);
                assert_eq!(shared.kernel_evaluations, pre.kernel_evaluations);
            }
        }
    }

    #[test]
    fn catch_up_brings_frozen_rows_to_the_direct_sums() {
        // Rows [200, 300) frozen at α0, rows [120, 200) at α1 (after the
        // rows before 200 moved), then the rows before 120 moved to α2: to
        // the bound, off it, from zero.
        let n = 300;
        let (x, y) = overlapping(n);
        let upper = uneven_boxes(n);
        let src = source(&x, n);
        src.prepare_f32().unwrap();
        let (kind, _, panel) = dense_parts(&src).unwrap();
        let sign: Vec<f32> = y.iter().map(|&v| v as f32).collect();
        let a0: Vec<f64> = (0..n)
            .map(|t| match t % 3 {
                0 => upper[t],
                1 => 0.2 + 0.1 * (t % 5) as f64,
                _ => 0.0,
            })
            .collect();
        let step = |a: &[f64], active: usize, k: usize| -> Vec<f64> {
            (0..n)
                .map(|t| match (t < active && (t + k).is_multiple_of(4), t % 3) {
                    (false, _) => a[t],
                    (true, 0) => 0.5,
                    (true, 1) => upper[t],
                    (true, _) => 0.3,
                })
                .collect()
        };
        let a1 = step(&a0, 200, 0);
        let a2 = step(&a1, 120, 1);
        let at = |a: &[f64]| (gradient(&src, &y, a), gradient_bar(&src, &y, a, &upper));
        let ((g0, b0), (g1, b1), (g2, b2)) = (at(&a0), at(&a1), at(&a2));
        let seen = |t: usize| {
            if t >= 200 {
                0
            } else if t >= 120 {
                1
            } else {
                2
            }
        };
        let pick = |t: usize, v: [&Vec<f64>; 3]| v[seen(t)][t];
        let grad0: Vec<f64> = (0..n).map(|t| pick(t, [&g0, &g1, &g2])).collect();
        let bar0: Vec<f64> = (0..n).map(|t| pick(t, [&b0, &b1, &b2])).collect();
        // Stale before: a skipped catch-up would leave these.
        let stale = (120..n)
            .filter(|&t| (grad0[t] - g2[t]).abs() > 1e-2)
            .count();
        let stale_bar = (120..n).filter(|&t| (bar0[t] - b2[t]).abs() > 1e-2).count();
        assert!(stale > 50 && stale_bar > 50, "{stale}, {stale_bar} stale");
        let frozen = [
            Frozen {
                lo: 200,
                hi: 300,
                alpha: a0[..200].to_vec(),
            },
            Frozen {
                lo: 120,
                hi: 200,
                alpha: a1[..120].to_vec(),
            },
        ];
        let changed = |from: &[f64], len: usize| (0..len).filter(|&s| from[s] != a2[s]).count();
        let want_evaluations = 100 * changed(&a0, 200) + 80 * changed(&a1, 120);
        let team = Team::new().map(Arc::new);
        let mut results = Vec::new();
        for team in [None, team.as_ref()] {
            let (mut grad, mut bar) = (grad0.clone(), bar0.clone());
            let spent = catch_up(
                kind,
                panel,
                &sign,
                &a2,
                &upper,
                &mut grad,
                &mut bar,
                &frozen,
                team,
                &Control::none(),
            )
            .unwrap();
            assert_eq!(spent, want_evaluations as u64);
            for t in 0..n {
                assert!((grad[t] - g2[t]).abs() < 1e-4, "G[{t}]");
                assert!((bar[t] - b2[t]).abs() < 1e-4, "Ḡ[{t}]");
            }
            // The active rows are not touched.
            assert_eq!(grad[..120], grad0[..120]);
            results.push((grad, bar));
        }
        // The same bits on one thread or two.
        assert!(results.windows(2).all(|w| w[0] == w[1]));
    }

    #[test]
    fn only_moved_members_get_columns() {
        // One round (the pair cap stops the next): of the q members chosen
        // from α = 0, at most two per pair update move, and only their
        // columns are filled; G stays exact.
        let n = 500;
        let (x, y) = overlapping(n);
        let upper = vec![1.0; n];
        let src = source(&x, n);
        src.prepare_f32().unwrap();
        let max_pairs = 5;
        let settings = Settings::new(1e-3, max_pairs, 1 << 30);
        let q = settings.size_for(n).unwrap();
        let mut src = src;
        let pre = presolve(
            &mut src,
            &y,
            &upper,
            vec![0.0; n],
            vec![-1.0; n],
            None,
            &settings,
            None,
            &Control::none(),
        )
        .unwrap()
        .unwrap();
        assert_eq!(pre.rounds, 1);
        assert!(pre.pairs >= 1 && pre.pairs <= max_pairs);
        let moved = pre.alpha.iter().filter(|&&a| a != 0.0).count() as u64;
        let columns = pre.kernel_evaluations / n as u64;
        assert_eq!(pre.kernel_evaluations % n as u64, 0);
        assert!(
            moved >= 1 && columns >= moved,
            "{columns} columns, {moved} moved"
        );
        assert!(
            columns <= 2 * pre.pairs && columns < q as u64,
            "{columns} columns for {} pair updates (q = {q})",
            pre.pairs
        );
        let want = gradient(&src, &y, &pre.alpha);
        for (t, (got, want)) in pre.grad.iter().zip(&want).enumerate() {
            assert!((got - want).abs() < 1e-4, "G[{t}]");
        }
    }

    #[test]
    fn batched_then_smo_is_the_smo_solution() {
        let n = 900;
        let (x, y) = overlapping(n);
        let upper = vec![1.0; n];
        let opts = tight;
        let smo = solve(&x, &y, &upper, &opts(SolverChoice::Smo, 1));
        assert_eq!(smo.batched_rounds, 0);
        let batched = solve(&x, &y, &upper, &opts(SolverChoice::Batched, 1));
        let auto = solve(&x, &y, &upper, &opts(SolverChoice::Auto, 1));
        assert!(batched.batched_rounds > 0);
        assert_eq!(auto.batched_rounds, batched.batched_rounds);
        for sol in [&batched, &auto] {
            assert_same_optimum(sol, &smo);
        }
        // KKT at tol: every up-set violation below every low-set one + tol.
        let src = source(&x, n);
        let g = gradient(&src, &y, &batched.alpha);
        let (mut up, mut low) = (f64::NEG_INFINITY, f64::NEG_INFINITY);
        for t in 0..n {
            if in_up(y[t], batched.alpha[t], upper[t]) {
                up = up.max(-y[t] * g[t]);
            }
            if in_low(y[t], batched.alpha[t], upper[t]) {
                low = low.max(y[t] * g[t]);
            }
        }
        assert!(up + low < 1e-4, "KKT violation {}", up + low);
        // The same decisions on the training rows.
        let decide = |a: &[f64], rho: f64| -> Vec<bool> {
            (0..n)
                .map(|t| {
                    let f: f64 = (0..n)
                        .filter(|&s| a[s] != 0.0)
                        .map(|s| a[s] * y[s] * src.eval(t, s))
                        .sum();
                    f - rho > 0.0
                })
                .collect()
        };
        let d_smo = decide(&smo.alpha, smo.rho);
        let d_bat = decide(&batched.alpha, batched.rho);
        let differ = d_smo.iter().zip(&d_bat).filter(|(a, b)| a != b).count();
        assert!(differ <= 1, "{differ} decisions differ");
        // Deterministic, and the same on two threads.
        let again = solve(&x, &y, &upper, &opts(SolverChoice::Batched, 1));
        let team = solve(&x, &y, &upper, &opts(SolverChoice::Batched, 2));
        assert_eq!(again.alpha, batched.alpha);
        assert_eq!(team.alpha, batched.alpha);
        assert_eq!(team.n_iter, batched.n_iter);
    }

    #[test]
    fn warm_started_rounds_reach_the_solution() {
        // The start: each half's own solution (feasible for the whole
        // problem, many multipliers at the bound), its G and Ḡ by the
        // blocked products; the rounds then run from it.
        let n = 900;
        let (x, y) = overlapping(n);
        let upper = uneven_boxes(n);
        let opts = tight;
        let smo = solve(&x, &y, &upper, &opts(SolverChoice::Smo, 1));
        let half = n / 2;
        let mut alpha0 = Vec::with_capacity(n);
        for (lo, hi) in [(0, half), (half, n)] {
            let part = solve(
                &x[4 * lo..4 * hi],
                &y[lo..hi],
                &upper[lo..hi],
                &opts(SolverChoice::Smo, 1),
            );
            alpha0.extend(part.alpha);
        }
        assert!(alpha0.iter().zip(&upper).any(|(&a, &u)| a >= u));
        let from_start = |start| DualProblem {
            source: source(&x, n),
            y: y.clone(),
            p: None,
            upper: upper.clone(),
            alpha0: Some(alpha0.clone()),
            active: None,
            constraint: Constraint::Equality,
            start,
            twins: None,
        };
        let warm = |solver, threads| {
            from_start(crate::solver::problem::StartGradientMode::Blocked)
                .solve_with(&opts(solver, threads), Precision::Float32)
                .unwrap()
        };
        let batched = warm(SolverChoice::Batched, 1);
        assert!(batched.batched_rounds > 0);
        assert!(batched.start_evaluations > 0);
        assert_same_optimum(&batched, &smo);
        // Optimal for the whole problem: the KKT gap from the true G.
        let src = source(&x, n);
        let g = gradient(&src, &y, &batched.alpha);
        assert!(
            gap(&y, &g, &batched.alpha, &upper) < 1e-4,
            "KKT violation {}",
            gap(&y, &g, &batched.alpha, &upper)
        );
        // Deterministic, the same on two threads.
        assert_eq!(warm(SolverChoice::Batched, 1).alpha, batched.alpha);
        assert_eq!(warm(SolverChoice::Batched, 2).alpha, batched.alpha);
        // A nonzero start without its gradient cannot take the rounds.
        let err = from_start(Default::default())
            .solve_with(&opts(SolverChoice::Batched, 1), Precision::Float32)
            .unwrap_err();
        assert!(err.to_string().contains("start gradient"), "{err}");
    }

    #[test]
    fn automatic_choice_and_refusals() {
        let n = 400;
        let (x, y) = overlapping(n);
        let upper = vec![1.0; n];
        let opts = |solver| SolverOptions {
            solver,
            ..SolverOptions::default()
        };
        // Below MIN_ROWS the automatic choice is SMO.
        let small = 200;
        let few = solve(
            &x[..4 * small],
            &y[..small],
            &upper[..small],
            &opts(SolverChoice::Auto),
        );
        assert_eq!(few.batched_rounds, 0);
        // A caller's iteration cap keeps SMO under the automatic choice.
        let capped = SolverOptions {
            max_iter: Some(1_000_000),
            ..opts(SolverChoice::Auto)
        };
        assert_eq!(solve(&x, &y, &upper, &capped).batched_rounds, 0);
        // A budget below the smallest working set: SMO.
        let tiny = SolverOptions {
            cache_bytes: 4 * n * (MIN_WORKING_SET - 2),
            ..opts(SolverChoice::Batched)
        };
        assert_eq!(solve(&x, &y, &upper, &tiny).batched_rounds, 0);
        // float64 kernel values cannot take batched rounds: named error.
        let problem = DualProblem {
            source: source(&x, n),
            y: y.clone(),
            p: None,
            upper: upper.clone(),
            alpha0: None,
            active: None,
            constraint: Constraint::Equality,
            start: Default::default(),
            twins: None,
        };
        let err = problem
            .solve_with(&opts(SolverChoice::Batched), Precision::Float64)
            .unwrap_err();
        assert!(err.to_string().contains("solver='batched'"), "{err}");
    }

    #[test]
    fn block_values_are_the_columns_bit_for_bit() {
        let n = 300;
        let (x, y) = overlapping(n);
        let src = source(&x, n);
        src.prepare_f32().unwrap();
        let KernelSource::Dense { kind, rows, panel } = &src else {
            unreachable!("a dense source");
        };
        let panel = panel.get().unwrap();
        let sign: Vec<f32> = y.iter().map(|&v| v as f32).collect();
        let members = [5usize, 17, 120, 299, 42, 7, 64];
        let m = members.len();
        let factors: Vec<f32> = members.iter().map(|&t| sign[t]).collect();
        // The columns over every row, four per pass and one by one.
        let queries: Vec<Query> = members.iter().map(|&t| panel.query(t)).collect();
        let refs: Vec<&Query> = queries.iter().collect();
        let mut cols = vec![vec![0.0f32; n]; m];
        let mut outs: Vec<&mut [f32]> = cols.iter_mut().map(|c| c.as_mut_slice()).collect();
        fill_tile(*kind, panel, &refs, &factors, &sign, 0, n, &mut outs);
        // The subproblem's block from the members' rows.
        let sub = Panel::try_new(&rows.gather(&members).unwrap()).unwrap();
        let sub_q: Vec<Query> = (0..m).map(|k| sub.query(k)).collect();
        let sub_refs: Vec<&Query> = sub_q.iter().collect();
        let mut qbb = vec![vec![0.0f32; m]; m];
        let mut outs: Vec<&mut [f32]> = qbb.iter_mut().map(|c| c.as_mut_slice()).collect();
        fill_tile(*kind, &sub, &sub_refs, &factors, &factors, 0, m, &mut outs);
        for k in 0..m {
            // SMO's own column fill.
            let mut col = vec![0.0f32; n];
            src.fill(members[k], 0, n, factors[k], &sign, &mut col);
            assert_eq!(col, cols[k], "column {k}");
            for l in 0..m {
                assert_eq!(qbb[k][l].to_bits(), cols[k][members[l]].to_bits());
            }
        }
    }

    #[test]
    fn the_iteration_cap_counts_the_rounds_pair_updates() {
        let n = 600;
        let (x, y) = overlapping(n);
        let opts = SolverOptions {
            max_iter: Some(150),
            solver: SolverChoice::Batched,
            ..SolverOptions::default()
        };
        let sol = solve(&x, &y, &vec![1.0; n], &opts);
        assert!(sol.batched_rounds > 0);
        assert!(!sol.converged);
        assert!(sol.n_iter <= 150, "{} iterations", sol.n_iter);
    }

    #[test]
    fn interrupted_rounds_say_so() {
        let n = 500;
        let (x, y) = overlapping(n);
        let src = source(&x, n);
        src.prepare_f32().unwrap();
        let ctl = Control::new();
        ctl.cancel();
        let settings = Settings::new(1e-3, u64::MAX, 1 << 30);
        let mut src = src;
        let got = presolve(
            &mut src,
            &y,
            &vec![1.0; n],
            vec![0.0; n],
            vec![-1.0; n],
            None,
            &settings,
            None,
            &ctl,
        );
        assert!(matches!(got, Err(crate::error::Error::Interrupted)));
    }
}
