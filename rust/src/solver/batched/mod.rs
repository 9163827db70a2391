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

mod block;
mod rounds;
mod select;
#[cfg(test)]
mod tests;

use block::*;
use rounds::*;
use select::*;

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

/// Where the rounds start: the feasible `alpha`, its gradient `grad` and
/// `grad_bar` its `Ḡ` (`None`: zeros, right when no variable of `alpha` is
/// at its upper bound, as at `α = 0`).
#[derive(Clone, Debug)]
pub struct Start {
    pub alpha: Vec<f64>,
    pub grad: Vec<f64>,
    pub grad_bar: Option<Vec<f64>>,
}

/// Batched rounds from the feasible [`Start`]. `source` must be
/// [`applicable`]; `y` the labels (`±1`), `upper` the boxes. Returns
/// `None` when the budget holds no working set of [`MIN_WORKING_SET`].
/// Polls `ctl` once per round and per tile. The rows of `source` are
/// permuted while the rounds run (shrinking) and put back in their order
/// before it returns, with an error too.
pub fn presolve(
    source: &mut KernelSource,
    y: &[f64],
    upper: &[f64],
    start: Start,
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
    let args = Rounds {
        y,
        upper,
        start,
        settings,
        team,
        ctl,
    };
    let out = run_rounds(source, args, &mut swaps);
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
