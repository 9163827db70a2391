//! LISVM: an online kernel SVM learnt one example at a time by local
//! re-optimisation (L. Ralaivola and F. d'Alché-Buc, "Incremental Support
//! Vector Machine Learning: a Local Approach", ICANN 2001).
//!
//! An [`OnlineLearner`] is one binary machine `f(x) = Σ_i α_i y_i K(x_i, x) + b`
//! over the examples it keeps. For each of them it holds the multiplier `α_i`
//! and `g_i = Σ_j α_j y_j K(x_j, x_i)`, so `f(x_i) = g_i + b` is known without
//! a kernel sum, and `g` is updated from the changes in `α` only. A new
//! example `(x_t, y_t)`:
//!
//! 1. enters with `α_t = 0`; if `y_t f(x_t) ≥ 1` nothing changes (it is kept,
//!    with `α_t = 0`, if it lies in the band `y f ≤ 1 + ε`);
//! 2. otherwise a working set grows from `x_t` and its nearest neighbours
//!    (input-space distance) among the *candidates*, the kept examples in the
//!    band or with `α > 0`; each working set is re-optimised by SMO
//!    ([`smo::solve`] on a dense Hessian gathered from the row cache) with
//!    the other multipliers fixed, which keeps `yᵀα` and so `yᵀα = 0`;
//! 3. growth stops once the slack criterion `E = ‖ξ‖² / t` (`ξ_i = max(0,
//!    1 − y_i f(x_i))` over the kept examples, `t` the examples seen) is under
//!    the threshold `η`, or once the last neighbour lowered it by less than
//!    the fraction `η` of its value (the *variation* of the estimate, which is
//!    what stops the growth on data whose `E` never falls under `η`), or when
//!    the neighbours run out.
//!
//! 4. then `reprocess` subproblems (1 by default) over the [`REPROCESS_SIZE`]
//!    kept examples that violate the KKT conditions most, again with the
//!    other multipliers fixed. This is not in the paper: its update never
//!    revisits multipliers away from the new example, and on long streams
//!    they drift (on ijcnn1's first 20 000 rows the test accuracy falls to
//!    86.7 % against 94.8 % for the batch SVM; 94.7 % with one subproblem).
//!
//! Examples with `α = 0` beyond the band are then forgotten (in `O(1)`:
//! the updates of `g` skip them, [`add_column`]). Kernel rows of the kept
//! examples against every kept example are cached (bounded in bytes, least
//! recently used out first) and extended lazily as the store grows, so an
//! update costs `O(|W| · n_kept)` once its rows are cached; the neighbour
//! search and the choice of violators are single scans that keep the best
//! as they go ([`offer`]), and the buffers are reused across examples.
//! The optional budget (`max_support`) removes support vectors (the one with
//! the smallest margin first, its multiplier handed to its nearest
//! neighbours); `rebatch` is the paper's baseline (a batch SVM over every
//! kept example at each new one). This is the only implementation of the
//! update: the Python estimator drives it through the bindings.

use std::cmp::Ordering;
use std::time::Instant;

use crate::error::{checked_len, memory_error, shape_error, try_filled, value_error, Result};
use crate::kernel::{dot, values_from_dots, KernelKind, KernelSource, Rows};
use crate::local::local_iteration_cap;
use crate::numeric::simd::{self, multiversion};
use crate::precision::{resolve, Magnitudes, Precision, QValue};
use crate::runtime::control::Control;
use crate::solver::cache::ColumnCache;
use crate::solver::problem::{DualProblem, SolverOptions};
use crate::solver::qmatrix::DenseQ;
use crate::solver::smo;

mod batch;
mod budget;
mod many;
mod neighbours;
mod store;
mod update;

pub use batch::Batch;
use batch::Example;
pub use many::{learn_many, Learnt, ManyBatch};
use neighbours::*;
use store::*;
#[cfg(test)]
mod tests;

/// Settings of one [`OnlineLearner::learn`] call.
#[derive(Clone, Debug)]
pub struct OnlineOptions {
    /// Regularisation `C` (every box is `[0, C]`).
    pub c: f64,
    /// `η`: the level and the relative variation of `‖ξ‖²/t` that stop growth.
    pub threshold: f64,
    /// Width of the band: examples with `y f ≤ 1 + ε` are kept.
    pub epsilon: f64,
    /// Most neighbours added to a working set.
    pub max_neighbors: usize,
    /// Neighbours added per growth step.
    pub neighbor_step: usize,
    /// Subproblems over the [`REPROCESS_SIZE`] most violating kept examples
    /// solved after each local update (0: the paper's update alone).
    pub reprocess: usize,
    /// Most support vectors kept; `None`: no budget.
    pub max_support: Option<usize>,
    /// Retrain a batch SVM on every kept example at each new one.
    pub rebatch: bool,
    /// SMO's stopping tolerance on the maximal KKT violation.
    pub tol: f64,
    /// Iteration cap per subproblem; `None` means
    /// [`local_iteration_cap`] (`max(10⁵, 1000·w)`) for a working set of
    /// `w` variables, the batch solver's own cap for `rebatch`.
    pub max_iter: Option<u64>,
    /// Byte budget of the kernel-row cache.
    pub cache_bytes: usize,
    /// Shrinking in `rebatch`'s batch solves (a working set of a few dozen
    /// variables is solved without it).
    pub shrinking: bool,
    /// The arithmetic of the working sets' Hessians: `Float64`; `f32` for
    /// `Float32` (an error when the stored and new rows are outside its
    /// range, [`resolve`]); for `Auto`, the batch solvers' rule applied per
    /// example to the stored rows and the new one (`f32` unless `f32`
    /// cannot represent their kernel values or `tol` is below what it
    /// resolves, [`resolve`]). Also the precision of `rebatch`'s batch
    /// solves, which resolve it as any batch solve does. The learner's own
    /// kernel values, `g` and decision values are `f64` whatever it says.
    pub precision: Precision,
    /// Polled before each example (and inside the batch solves of
    /// `rebatch`); once cancelled, [`OnlineLearner::learn`] returns
    /// [`crate::Error::Interrupted`]. The learner then holds the examples
    /// learnt before the interrupt, except after an interrupted `rebatch`
    /// solve, which leaves it mid-update (discard it).
    pub control: Control,
}

impl Default for OnlineOptions {
    fn default() -> Self {
        OnlineOptions {
            c: 1.0,
            threshold: 0.01,
            epsilon: 0.5,
            max_neighbors: 50,
            neighbor_step: 1,
            reprocess: 1,
            max_support: None,
            rebatch: false,
            tol: 1e-3,
            max_iter: None,
            cache_bytes: 64 << 20,
            shrinking: true,
            precision: Precision::Auto,
            control: Control::none(),
        }
    }
}

impl OnlineOptions {
    /// Checks every setting; the message names the one at fault.
    pub fn validate(&self) -> Result<()> {
        if !(self.c.is_finite() && self.c > 0.0) {
            value_error!("C must be a positive finite number, got {}", self.c);
        }
        if !(self.threshold.is_finite() && self.threshold > 0.0) {
            value_error!(
                "threshold must be a positive finite number, got {}",
                self.threshold
            );
        }
        if !(self.epsilon.is_finite() && self.epsilon >= 0.0) {
            value_error!(
                "epsilon must be a non-negative finite number, got {}",
                self.epsilon
            );
        }
        if self.max_neighbors == 0 || self.neighbor_step == 0 {
            value_error!("max_neighbors and neighbor_step must be at least 1");
        }
        if self.max_support == Some(0) {
            value_error!("max_support must be at least 1 (or None)");
        }
        if !(self.tol.is_finite() && self.tol > 0.0) {
            value_error!("tol must be a positive finite number, got {}", self.tol);
        }
        Ok(())
    }
}

/// What happened to one example.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StepRecord {
    /// False when the example was classified with margin.
    pub updated: bool,
    /// Final working-set size (0 without an update).
    pub neighbourhood: usize,
    /// Subproblems solved.
    pub n_solves: usize,
    /// The stopping rule (level or variation of `E`) ended the growth.
    pub reached: bool,
    /// `‖ξ‖² / t` after the example.
    pub criterion: f64,
    /// Support vectors after the example.
    pub n_support: usize,
    /// Examples kept after the example.
    pub n_stored: usize,
    /// Seconds spent on the example.
    pub seconds: f64,
}

/// What one [`OnlineLearner::learn`] call did.
#[derive(Clone, Debug, Default)]
pub struct LearnReport {
    /// One record per example, in order.
    pub steps: Vec<StepRecord>,
    /// Examples that triggered an update.
    pub updates: usize,
    /// Updates whose neighbours ran out (more candidates than
    /// `max_neighbors`) before the stopping rule held.
    pub capped: usize,
    /// Subproblems solved.
    pub solves: usize,
    /// Subproblems whose solver stopped at its iteration cap.
    pub unconverged: usize,
}

/// The whole state of a learner, enough to continue identically
/// ([`OnlineLearner::state`], [`OnlineLearner::from_state`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LearnerState {
    /// Kept examples, row-major `n × d`.
    pub x: Vec<f64>,
    pub y: Vec<f64>,
    /// Class index of each kept example (the caller's bookkeeping).
    pub cls: Vec<i64>,
    /// Position of each kept example in the stream.
    pub seen: Vec<i64>,
    pub alpha: Vec<f64>,
    /// `g_i = Σ_j α_j y_j K(x_j, x_i)`.
    pub g: Vec<f64>,
    /// False for examples forgotten but not yet compacted away.
    pub alive: Vec<bool>,
    pub b: f64,
    /// Examples seen.
    pub t: u64,
    /// `‖ξ‖²` after the last example.
    pub xi_sum: f64,
    /// Solver iterations so far.
    pub n_iter: u64,
}

/// Most dot products held in a [`Block`] (16 MiB); a block holds at most
/// [`BLOCK_ROWS`] rows, fewer when the store is large.
const BLOCK_VALUES: usize = 1 << 21;
const BLOCK_ROWS: usize = 64;

/// A batch's [`Block`] covers the support vectors only (the examples
/// classified with margin need no other dot products) once the stored rows
/// are at least this many times the support vectors and at least
/// [`SUPPORT_BLOCK_MIN`]: then an update forms its example's other dot
/// products on its own, at less cost than a block over every stored row
/// for every example. The values are the same either way.
const SUPPORT_BLOCK_RATIO: usize = 4;
const SUPPORT_BLOCK_MIN: usize = 1024;

/// Where [`OnlineLearner::step`] finds its example's dot products: `Full`,
/// the given ones with every stored row; `Block(t)`, for the support
/// vectors, in row `t` of a block that covers them ([`Block::cover`]), the
/// others to be formed if the example updates.
#[derive(Clone, Copy, Debug)]
pub(super) enum Dots<'a> {
    Full(&'a [f64]),
    Block(usize),
}

/// One binary online SVM (labels ±1); see the module documentation.
#[derive(Clone, Debug)]
pub struct OnlineLearner {
    kind: KernelKind,
    d: usize,
    x: Vec<f64>,
    sq: Vec<f64>,
    y: Vec<f64>,
    cls: Vec<i64>,
    seen: Vec<i64>,
    alpha: Vec<f64>,
    g: Vec<f64>,
    alive: Vec<bool>,
    b: f64,
    t: u64,
    xi_sum: f64,
    n_iter: u64,
    n_support: usize,
    n_alive: usize,
    /// Kernel rows `K(x_j, ·)` of stored examples against every stored
    /// example (indexed by storage position, extended lazily as the store
    /// grows; a forgotten example's entries are 0).
    cache: ColumnCache<f64>,
    pattern: Pattern,
    /// The stored rows feature by feature, `cols[k]` holding `x_ik` for
    /// every stored row `i` (derived from the rows, never pickled):
    /// [`column_dots`] runs down them.
    cols: Vec<Column>,
    /// Dot products of the rows of the batch being learnt with the rows
    /// stored when they were computed.
    block: Block,
    /// The support vectors' positions, `α_i y_i` and `‖x_i‖²`, for the
    /// decision values of new examples; rebuilt after a change (an update,
    /// a compaction), so the examples classified with margin between two
    /// updates share one.
    expansion: Option<Expansion>,
    /// Largest `‖x_i‖²` and `|x_ij|` over the stored rows (the kernel-range
    /// check of each batch), kept as rows are stored and compacted.
    max_sq: f64,
    max_abs: f64,
    /// The working sets' arithmetic for the current call
    /// ([`OnlineOptions::precision`]).
    hessian: Precision,
    scratch: Scratch,
    /// When a batch's blocks cover the support vectors only: at least
    /// `.0` times as many stored rows as support vectors, and at least `.1`
    /// stored rows ([`SUPPORT_BLOCK_RATIO`], [`SUPPORT_BLOCK_MIN`]; the
    /// tests set others). The values learnt do not depend on it.
    support_block: (usize, usize),
}

/// Size of the working sets of most violating examples solved after each
/// local update ([`OnlineOptions::reprocess`]).
pub const REPROCESS_SIZE: usize = 10;

/// Stored arrays are compacted once the forgotten rows are more than a
/// quarter of the stored ones and there are more than this many rows: every
/// cached kernel row spans the stored rows, so the forgotten ones cost time
/// in each decision-value update and room in the cache.
const COMPACT_MIN: usize = 64;

impl OnlineLearner {
    /// An empty learner for `d` features and a kernel function (not
    /// `Precomputed`).
    pub fn new(kind: KernelKind, d: usize) -> Result<Self> {
        kind.require_function("an online learner")?;
        Ok(OnlineLearner {
            kind,
            d,
            x: Vec::new(),
            sq: Vec::new(),
            y: Vec::new(),
            cls: Vec::new(),
            seen: Vec::new(),
            alpha: Vec::new(),
            g: Vec::new(),
            alive: Vec::new(),
            b: 0.0,
            t: 0,
            xi_sum: 0.0,
            n_iter: 0,
            n_support: 0,
            n_alive: 0,
            cache: ColumnCache::new(0, OnlineOptions::default().cache_bytes).growing(),
            pattern: Pattern::default(),
            cols: vec![Column::default(); d],
            block: Block::default(),
            expansion: None,
            max_sq: 0.0,
            max_abs: 0.0,
            hessian: Precision::Float32,
            scratch: Scratch::default(),
            support_block: (SUPPORT_BLOCK_RATIO, SUPPORT_BLOCK_MIN),
        })
    }

    /// A learner that continues from `state` (the kernel cache starts empty;
    /// it holds nothing that changes the results).
    pub fn from_state(kind: KernelKind, d: usize, state: LearnerState) -> Result<Self> {
        let mut lr = OnlineLearner::new(kind, d)?;
        let n = state.y.len();
        if state.x.len() != n * d {
            shape_error!("x has {} values, expected {n} × {d}", state.x.len());
        }
        let lens = [
            state.cls.len(),
            state.seen.len(),
            state.alpha.len(),
            state.g.len(),
            state.alive.len(),
        ];
        if lens.iter().any(|&l| l != n) {
            shape_error!("the state's arrays must all have {n} entries, got {lens:?}");
        }
        if let Some(v) = state.y.iter().find(|&&v| v != 1.0 && v != -1.0) {
            value_error!("y must contain only -1 and +1, found {v}");
        }
        let finite = |v: &[f64]| v.iter().all(|a| a.is_finite());
        if !(finite(&state.x) && finite(&state.alpha) && finite(&state.g) && state.b.is_finite()) {
            value_error!("the state holds NaN or infinity");
        }
        lr.sq = if d == 0 {
            vec![0.0; n]
        } else {
            state.x.chunks_exact(d).map(sq_norm).collect()
        };
        lr.x = state.x;
        lr.y = state.y;
        lr.cls = state.cls;
        lr.seen = state.seen;
        lr.alpha = state.alpha;
        lr.g = state.g;
        lr.alive = state.alive;
        lr.b = state.b;
        lr.t = state.t;
        lr.xi_sum = state.xi_sum;
        lr.n_iter = state.n_iter;
        for _ in 0..n {
            lr.cache.push();
        }
        lr.index_rows();
        lr.count();
        Ok(lr)
    }

    /// A copy of the learner's state.
    pub fn state(&self) -> LearnerState {
        LearnerState {
            x: self.x.clone(),
            y: self.y.clone(),
            cls: self.cls.clone(),
            seen: self.seen.clone(),
            alpha: self.alpha.clone(),
            g: self.g.clone(),
            alive: self.alive.clone(),
            b: self.b,
            t: self.t,
            xi_sum: self.xi_sum,
            n_iter: self.n_iter,
        }
    }

    /// Kept rows, row-major (`len() × d()`).
    pub fn x(&self) -> &[f64] {
        &self.x
    }

    /// Labels (±1) of the stored rows.
    pub fn y(&self) -> &[f64] {
        &self.y
    }

    /// The caller's class index of each stored row.
    pub fn cls(&self) -> &[i64] {
        &self.cls
    }

    /// Stream position of each stored row.
    pub fn seen(&self) -> &[i64] {
        &self.seen
    }

    /// Multipliers of the stored rows.
    pub fn alpha(&self) -> &[f64] {
        &self.alpha
    }

    /// `g_i = Σ_j α_j y_j K(x_j, x_i)` of the stored rows.
    pub fn g(&self) -> &[f64] {
        &self.g
    }

    /// False for rows forgotten but not yet compacted away.
    pub fn alive(&self) -> &[bool] {
        &self.alive
    }

    /// The kernel.
    pub fn kind(&self) -> KernelKind {
        self.kind
    }

    /// Number of features.
    pub fn d(&self) -> usize {
        self.d
    }

    /// Stored rows (kept examples and forgotten ones not yet compacted away).
    pub fn len(&self) -> usize {
        self.y.len()
    }

    /// True before any example is stored.
    pub fn is_empty(&self) -> bool {
        self.y.is_empty()
    }

    /// The bias `b`.
    pub fn bias(&self) -> f64 {
        self.b
    }

    /// Support vectors (kept, `α > 0`).
    pub fn n_support(&self) -> usize {
        self.n_support
    }

    /// Kept examples.
    pub fn n_alive(&self) -> usize {
        self.n_alive
    }

    /// Solver iterations so far.
    pub fn n_iter(&self) -> u64 {
        self.n_iter
    }

    /// Examples seen.
    pub fn t(&self) -> u64 {
        self.t
    }

    /// `‖ξ‖² / t` after the last example (0 before any).
    pub fn criterion(&self) -> f64 {
        if self.t == 0 {
            0.0
        } else {
            self.xi_sum / self.t as f64
        }
    }

    /// Storage positions of the support vectors.
    pub fn support(&self) -> Vec<usize> {
        (0..self.len())
            .filter(|&i| self.alive[i] && self.alpha[i] > 0.0)
            .collect()
    }

    /// `f(x) = Σ α_i y_i K(x_i, x) + b` for each row of `x` (row-major).
    pub fn decision(&self, x: &[f64]) -> Result<Vec<f64>> {
        self.decision_with(x, &Control::none())
    }

    /// [`OnlineLearner::decision`], polling `ctl` per row:
    /// [`crate::Error::Interrupted`] once it is cancelled.
    pub fn decision_with(&self, x: &[f64], ctl: &Control) -> Result<Vec<f64>> {
        let d = self.d;
        if d == 0 || !x.len().is_multiple_of(d) {
            shape_error!("x must hold rows of {d} features, got {} values", x.len());
        }
        let sv = self.support();
        x.chunks_exact(d)
            .map(|row| {
                ctl.check()?;
                let sq = sq_norm(row);
                let k = self.kernel_row(&Query::new(row), sq, &sv);
                Ok(sv
                    .iter()
                    .zip(k)
                    .map(|(&i, kv)| self.alpha[i] * self.y[i] * kv)
                    .sum::<f64>()
                    + self.b)
            })
            .collect()
    }

    /// `K(x_i, row)` for the listed storage positions.
    fn kernel_row(&self, q: &Query, sq: f64, idx: &[usize]) -> Vec<f64> {
        let mut k: Vec<f64> = idx.iter().map(|&i| self.dot_with(i, q)).collect();
        self.kernel_values(&mut k, |t| self.sq[idx[t]], sq);
        k
    }

    fn row(&self, i: usize) -> &[f64] {
        &self.x[i * self.d..(i + 1) * self.d]
    }

    /// Stored row `i` as a query.
    fn query(&self, i: usize) -> Query<'_> {
        let p = &self.pattern;
        let (s, nnz) = (p.start[i], p.nnz[i]);
        let len = if 3 * nnz <= self.d { nnz } else { 0 };
        Query {
            dense: self.row(i),
            nnz,
            idx: (&p.idx[s..s + len]).into(),
            val: (&p.val[s..s + len]).into(),
        }
    }

    /// `x_i · q` for stored row `i`, summed as [`sparse_pair`] says.
    #[inline]
    fn dot_with(&self, i: usize, q: &Query) -> f64 {
        let p = &self.pattern;
        let ni = p.nnz[i];
        if !sparse_pair(ni, q.nnz, self.d) {
            return seq_dot(self.row(i), q.dense);
        }
        if ni <= q.nnz {
            let s = p.start[i];
            gather_dot(&p.idx[s..s + ni], &p.val[s..s + ni], q.dense)
        } else {
            gather_dot(&q.idx, &q.val, self.row(i))
        }
    }

    /// Indexes a newly stored row (the last one): its nonzeros and its
    /// share of the magnitudes.
    fn index_last(&mut self) {
        let i = self.len() - 1;
        let row = &self.x[i * self.d..(i + 1) * self.d];
        self.pattern.push(row);
        for (col, &v) in self.cols.iter_mut().zip(row) {
            col.push(v);
        }
        self.max_sq = self.max_sq.max(self.sq[i]);
        self.max_abs = row.iter().fold(self.max_abs, |a, &v| a.max(v.abs()));
    }

    /// Rebuilds the nonzero lists and the magnitudes from the stored rows.
    fn index_rows(&mut self) {
        let mut pattern = Pattern::default();
        for i in 0..self.len() {
            pattern.push(self.row(i));
        }
        self.pattern = pattern;
        // Row by row (the rows are contiguous, the columns are not): the
        // width each column needs, then the columns.
        let (n, d) = (self.len(), self.d);
        let widths = column_widths(&self.x, d);
        let mut cols: Vec<Column> = widths
            .iter()
            .map(|&w| Column::with_capacity(w, n))
            .collect();
        for row in self.x.chunks_exact(d.max(1)) {
            for (col, &v) in cols.iter_mut().zip(row) {
                col.push_fitting(v);
            }
        }
        self.cols = cols;
        self.max_sq = self.sq.iter().fold(0.0, |a, &v| a.max(v));
        self.max_abs = self.x.iter().fold(0.0, |a, &v| a.max(v.abs()));
    }
}
