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
use crate::kernel::{dot, exp_scaled, KernelKind, KernelSource, Rows};
use crate::local::local_iteration_cap;
use crate::numeric::simd::{self, multiversion};
use crate::precision::{resolve, Magnitudes, Precision, QValue};
use crate::runtime::control::Control;
use crate::solver::cache::ColumnCache;
use crate::solver::problem::{Constraint, DualProblem, SolverOptions};
use crate::solver::qmatrix::DenseQ;
use crate::solver::smo;

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

/// SMO over one working set with the other multipliers fixed: `kernel`
/// holds the set's kernel matrix (row stride `stride`), `ys`, `a0` and `g`
/// its labels, starting multipliers (within `[0, C]`) and `g` values.
fn solve_dense<T: QValue>(
    kernel: &[f64],
    stride: usize,
    ys: &[f64],
    a0: &[f64],
    g: &[f64],
    opts: &OnlineOptions,
) -> smo::SmoResult {
    let w = ys.len();
    let mut cols = vec![T::default(); w * w];
    let mut diag = vec![0.0f64; w];
    for a in 0..w {
        for bb in 0..w {
            cols[a * w + bb] = T::from_f64(ys[a] * ys[bb] * kernel[a * stride + bb]);
        }
        diag[a] = kernel[a * stride + a];
    }
    // The fixed multipliers enter through p: g minus W's own share, taken
    // with the solver's own Hessian entries, so that the solver starts from
    // the exact gradient `y_a g_a − 1` and its stopping test agrees with the
    // learner's (`violators`).
    let p: Vec<f64> = (0..w)
        .map(|a| {
            let own: f64 = (0..w).map(|bb| a0[bb] * cols[a * w + bb].to_f64()).sum();
            -1.0 + ys[a] * g[a] - own
        })
        .collect();
    let upper = vec![opts.c; w];
    // The local batch's cap: LIBSVM's max(10⁷, 100·w) would let one update
    // of a few variables grind for seconds (huge C on data the kernel cannot
    // separate), and a learner makes one per example.
    let max_iter = opts.max_iter.unwrap_or_else(|| local_iteration_cap(w));
    let mut q = DenseQ { n: w, cols, diag };
    // A working set is small (at most `max_neighbors + 1` variables): its
    // solve is not interrupted, so the learner stays consistent. SMO on the
    // dense Hessian, not through `DualProblem`: see the `problem` module.
    smo::solve(
        &mut q,
        &p,
        ys,
        &upper,
        a0,
        opts.tol,
        max_iter,
        false,
        &Control::none(),
    )
    .unwrap_or_else(|_| unreachable!("a solve without a control is never interrupted"))
}

/// Orders `(distance², position)` pairs: nearest first, then by position.
fn by_distance(a: &(f64, usize), b: &(f64, usize)) -> Ordering {
    a.0.total_cmp(&b.0).then(a.1.cmp(&b.1))
}

/// The `k` nearest of `cand`, nearest first (ties by position).
fn nearest(mut cand: Vec<(f64, usize)>, k: usize) -> Vec<usize> {
    if k == 0 {
        return Vec::new();
    }
    if k < cand.len() {
        cand.select_nth_unstable_by(k - 1, by_distance);
        cand.truncate(k);
    }
    cand.sort_unstable_by(by_distance);
    cand.into_iter().map(|(_, i)| i).collect()
}

/// Offers `item` to `best`, the `k` smallest pairs offered so far in the
/// order of [`by_distance`]: after every pair is offered, `best` holds what
/// [`nearest`] returns for them (the order is total), without a list of all
/// of them. Cheap when most pairs are beyond the current `k`-th.
#[inline(always)]
fn offer(best: &mut Vec<(f64, usize)>, k: usize, item: (f64, usize)) {
    if best.len() >= k {
        match best.last() {
            Some(last) if by_distance(&item, last) == Ordering::Less => {}
            _ => return,
        }
    }
    admit(best, k, item);
}

/// [`offer`]'s insertion (the rare case, kept out of the scans' loops).
#[inline(never)]
fn admit(best: &mut Vec<(f64, usize)>, k: usize, item: (f64, usize)) {
    if best.len() >= k {
        best.pop();
    }
    let at = best.partition_point(|b| by_distance(b, &item) == Ordering::Less);
    best.insert(at, item);
}

/// The nonzeros of the stored rows that are sparse enough to take part in
/// the sparse dot product ([`sparse_pair`]), in increasing column order;
/// derived from the rows (never pickled).
#[derive(Clone, Debug, Default)]
struct Pattern {
    /// Nonzeros of each stored row.
    nnz: Vec<usize>,
    /// Where each stored row's entries start in `idx` and `val` (rows too
    /// dense for the sparse product have none).
    start: Vec<usize>,
    idx: Vec<u32>,
    val: Vec<f64>,
}

impl Pattern {
    /// Appends a row.
    fn push(&mut self, row: &[f64]) {
        let nnz = row.iter().filter(|&&v| v != 0.0).count();
        self.nnz.push(nnz);
        self.start.push(self.idx.len());
        if 3 * nnz <= row.len() {
            for (k, &v) in row.iter().enumerate() {
                if v != 0.0 {
                    self.idx.push(k as u32);
                    self.val.push(v);
                }
            }
        }
    }
}

/// True when the dot product of rows with `a` and `b` nonzeros is summed
/// over the sparser row's nonzeros ([`gather_dot`]) instead of over every
/// column ([`seq_dot`]). Every dot product of the learner is the one sum
/// `Σ_k a_k b_k` taken in increasing column order with one accumulator
/// that starts at `+0`, each product rounded and then added (no fused
/// multiply-add); the paths differ only in the terms they skip, products
/// with a zero factor, and adding a zero of either sign to such a sum
/// (which is never `−0`) leaves it as it is. So every kernel value is the
/// same function of its pair whichever side, path or block of rows
/// computes it ([`column_dots`] included), in whatever order, and after a
/// pickle round trip: the learner stays deterministic.
#[inline]
fn sparse_pair(a: usize, b: usize, d: usize) -> bool {
    3 * a.min(b) <= d
}

/// `Σ_k val[k] · dense[idx[k]]`, in order.
#[inline]
fn gather_dot(idx: &[u32], val: &[f64], dense: &[f64]) -> f64 {
    let mut sum = 0.0;
    for (&k, &v) in idx.iter().zip(val) {
        sum += v * dense[k as usize];
    }
    sum
}

/// `Σ_k a_k b_k` in column order, one accumulator (see [`sparse_pair`]).
#[inline]
fn seq_dot(a: &[f64], b: &[f64]) -> f64 {
    let mut sum = 0.0;
    for (&x, &y) in a.iter().zip(b) {
        sum += x * y;
    }
    sum
}

/// `x` rounded to the nearest integer, ties to even: `f64::round_ties_even`
/// without its library call (which the scan of [`OnlineLearner::violators`]
/// made once per kept example). Adding and taking away `2⁵²` rounds in the
/// default mode (to nearest, ties to even) and is exact below `2⁵²`, where
/// `ulp = 1`; the sign is put back so that `−0.3` gives `−0`, as
/// `round_ties_even` does. Larger values (already integers), infinities
/// and NaN come back as they are.
#[inline]
fn round_even(x: f64) -> f64 {
    const TWO52: f64 = 4_503_599_627_370_496.0;
    let a = x.abs();
    if a < TWO52 {
        ((a + TWO52) - TWO52).copysign(x)
    } else {
        x
    }
}

/// For the last rounded value `v` a full side of
/// [`OnlineLearner::violators`] holds (an integer), bounds `(lo, hi)` on
/// `exact` outside which `round_even(exact / tol)` is at least one unit
/// away from `v`: below `lo` it is at most `v − 1` (it cannot enter the up
/// side, which needs a value above `v`), above `hi` at least `v + 1` (it
/// cannot enter the low side, which needs one below `v`). The unit of room
/// keeps the signed zeros of `round_even` (ordered by `total_cmp`) out of
/// the question, and covers the rounding of the products and of the
/// quotient while `|v| < 2⁴⁰`; beyond that there are no bounds.
#[inline]
fn entry_bounds(v: f64, tol: f64) -> (f64, f64) {
    const BIG: f64 = 1_099_511_627_776.0; // 2⁴⁰
    if v.abs() < BIG {
        ((v - 0.75) * tol, (v + 0.75) * tol)
    } else {
        (f64::NEG_INFINITY, f64::INFINITY)
    }
}

/// `‖row‖²`, the learner's dot product of the row with itself, so that
/// `K(x, x)` comes out exact (`‖x − x‖² = 0` for RBF).
fn sq_norm(row: &[f64]) -> f64 {
    seq_dot(row, row)
}

/// The nonzeros `(column, value)` of a row, in column order: the terms of
/// its dot products in [`column_dots`].
fn nonzeros(row: &[f64]) -> Vec<(u32, f64)> {
    row.iter()
        .enumerate()
        .filter(|(_, &v)| v != 0.0)
        .map(|(k, &v)| (k as u32, v))
        .collect()
}

/// Kernel rows computed together by [`OnlineLearner::ensure_rows`] (the
/// dot products of at most this many rows with the store are held at
/// once).
const ROWS_PER_PASS: usize = 16;

/// Stored rows per pass of [`column_dots`]: the pass's columns (`8·d`
/// bytes per row) stay in cache while every query of the block runs down
/// them.
const COLUMN_TILE: usize = 512;

/// One feature of the stored rows (`x_ik` for every stored row `i`), held
/// in the narrowest of `i8`, `f32` and `f64` that gives back each of its
/// values bit for bit: [`column_dots`] streams the columns of a query's
/// nonzeros past every stored row, and on data of small integers (one-hot
/// encodings, counts) or of `float32` origin it then reads an eighth or
/// half of the bytes, with the same products (the conversion to `f64` is
/// exact). A column widens when a value it cannot hold arrives
/// ([`OnlineLearner::reserve`] does it before a batch, fallibly) and is
/// narrowed again when the store is rebuilt ([`OnlineLearner::index_rows`]).
#[derive(Clone, Debug)]
enum Column {
    Small(Vec<i8>),
    Single(Vec<f32>),
    Double(Vec<f64>),
}

impl Default for Column {
    fn default() -> Self {
        Column::Small(Vec::new())
    }
}

/// The widths of [`Column`]'s types, narrowest first.
const SMALL: u8 = 0;
const SINGLE: u8 = 1;
const DOUBLE: u8 = 2;

/// The narrowest [`Column`] width that gives `v` back bit for bit (`−0` is
/// not an `i8`).
#[inline]
fn width_of(v: f64) -> u8 {
    if f64::from(v as i8).to_bits() == v.to_bits() {
        SMALL
    } else if f64::from(v as f32).to_bits() == v.to_bits() {
        SINGLE
    } else {
        DOUBLE
    }
}

/// The narrowest [`Column`] width of each of the `d` features of the
/// row-major rows `x`.
fn column_widths(x: &[f64], d: usize) -> Vec<u8> {
    let mut widths = vec![SMALL; d];
    for row in x.chunks_exact(d.max(1)) {
        for (w, &v) in widths.iter_mut().zip(row) {
            *w = (*w).max(width_of(v));
        }
    }
    widths
}

impl Column {
    /// A column of `values`, all of which fit `width`.
    fn of(width: u8, values: impl Iterator<Item = f64>) -> Column {
        match width {
            SMALL => Column::Small(values.map(|v| v as i8).collect()),
            SINGLE => Column::Single(values.map(|v| v as f32).collect()),
            _ => Column::Double(values.collect()),
        }
    }

    /// An empty column of `width`, with room for `n` values.
    fn with_capacity(width: u8, n: usize) -> Column {
        match width {
            SMALL => Column::Small(Vec::with_capacity(n)),
            SINGLE => Column::Single(Vec::with_capacity(n)),
            _ => Column::Double(Vec::with_capacity(n)),
        }
    }

    fn width(&self) -> u8 {
        match self {
            Column::Small(_) => SMALL,
            Column::Single(_) => SINGLE,
            Column::Double(_) => DOUBLE,
        }
    }

    fn len(&self) -> usize {
        match self {
            Column::Small(c) => c.len(),
            Column::Single(c) => c.len(),
            Column::Double(c) => c.len(),
        }
    }

    /// `x_ik` of stored row `i`.
    fn get(&self, i: usize) -> f64 {
        match self {
            Column::Small(c) => f64::from(c[i]),
            Column::Single(c) => f64::from(c[i]),
            Column::Double(c) => c[i],
        }
    }

    /// Room for `extra` more values, in a type at least `width` wide (the
    /// values converted when it widens): fallible, so that a batch's
    /// columns are allocated before any of it is learnt.
    fn reserve(&mut self, width: u8, extra: usize) -> std::result::Result<(), ()> {
        let width = width.max(self.width());
        if width == self.width() {
            return match self {
                Column::Small(c) => c.try_reserve(extra),
                Column::Single(c) => c.try_reserve(extra),
                Column::Double(c) => c.try_reserve(extra),
            }
            .map_err(|_| ());
        }
        let n = self.len();
        let mut wide = match width {
            SINGLE => Column::Single(Vec::new()),
            _ => Column::Double(Vec::new()),
        };
        let room = n.checked_add(extra).ok_or(())?;
        match &mut wide {
            Column::Single(c) => c.try_reserve_exact(room),
            Column::Double(c) => c.try_reserve_exact(room),
            Column::Small(_) => unreachable!("only wider types are made"),
        }
        .map_err(|_| ())?;
        for i in 0..n {
            wide.push_fitting(self.get(i));
        }
        *self = wide;
        Ok(())
    }

    /// Appends `v`, which fits the column's type.
    #[inline]
    fn push_fitting(&mut self, v: f64) {
        match self {
            Column::Small(c) => c.push(v as i8),
            Column::Single(c) => c.push(v as f32),
            Column::Double(c) => c.push(v),
        }
    }

    /// Appends `v`, widening the column first if its type cannot hold it
    /// (after [`Column::reserve`] for the batch it never needs to).
    fn push(&mut self, v: f64) {
        let w = width_of(v);
        if w > self.width() {
            let wide = Column::of(w, (0..self.len()).map(|i| self.get(i)));
            *self = wide;
        }
        self.push_fitting(v);
    }
}

/// Adds the products of `q`'s nonzeros (in increasing column order) with
/// rows `a..b` of their columns to `acc`: four columns per pass where four
/// consecutive nonzeros have columns of one type, else one.
#[inline(always)]
fn accumulate(acc: &mut [f64], cols: &[Column], q: &[(u32, f64)], a: usize, b: usize) {
    // Four nonzeros whose columns are all of type `$kind`, if they are.
    macro_rules! four_of {
        ($kind:ident, $g:expr) => {
            match (
                &cols[$g[0].0 as usize],
                &cols[$g[1].0 as usize],
                &cols[$g[2].0 as usize],
                &cols[$g[3].0 as usize],
            ) {
                (Column::$kind(x0), Column::$kind(x1), Column::$kind(x2), Column::$kind(x3)) => {
                    let w = [$g[0].1, $g[1].1, $g[2].1, $g[3].1];
                    simd::add_scaled_4(acc, w, [&x0[a..b], &x1[a..b], &x2[a..b], &x3[a..b]]);
                    true
                }
                _ => false,
            }
        };
    }
    let mut t = 0;
    while t < q.len() {
        if t + 4 <= q.len() {
            let g = &q[t..t + 4];
            if four_of!(Small, g) || four_of!(Single, g) || four_of!(Double, g) {
                t += 4;
                continue;
            }
        }
        let (k, v) = q[t];
        match &cols[k as usize] {
            Column::Small(c) => simd::add_scaled(acc, v, &c[a..b]),
            Column::Single(c) => simd::add_scaled(acc, v, &c[a..b]),
            Column::Double(c) => simd::add_scaled(acc, v, &c[a..b]),
        }
        t += 1;
    }
}

multiversion! {
    /// `out[t·stride + i − lo] = x_i · q_t` for the stored rows `i` in
    /// `lo..lo + len`, from the rows feature by feature (`cols[k]`, holding
    /// `x_ik` exactly) and each query's nonzeros `nz[t]`: the sum over the
    /// query's nonzero columns in increasing order, one accumulator per
    /// stored row (so the loop vectorises across stored rows), the same
    /// value as [`OnlineLearner::dot_with`] (see [`sparse_pair`]). In tiles
    /// of [`COLUMN_TILE`] stored rows, every query passing over a tile
    /// while it is in cache.
    fn column_dots, fn column_dots_impl(
        cols: &[Column],
        nz: &[Vec<(u32, f64)>],
        lo: usize,
        len: usize,
        out: &mut [f64],
        stride: usize,
    ) {
        let mut a = lo;
        while a < lo + len {
            let b = (a + COLUMN_TILE).min(lo + len);
            for (t, q) in nz.iter().enumerate() {
                let acc = &mut out[t * stride + a - lo..t * stride + b - lo];
                acc.fill(0.0);
                accumulate(acc, cols, q, a, b);
            }
            a = b;
        }
    }
}

/// A row whose dot products with the stored rows are taken: dense, with
/// its nonzeros listed when it is sparse enough for [`sparse_pair`] to pick
/// them.
struct Query<'a> {
    dense: &'a [f64],
    nnz: usize,
    idx: std::borrow::Cow<'a, [u32]>,
    val: std::borrow::Cow<'a, [f64]>,
}

impl<'a> Query<'a> {
    /// A row from outside the store.
    fn new(dense: &'a [f64]) -> Self {
        let d = dense.len();
        let nnz = dense.iter().filter(|&&v| v != 0.0).count();
        let (mut idx, mut val) = (Vec::new(), Vec::new());
        if 3 * nnz <= d {
            for (k, &v) in dense.iter().enumerate() {
                if v != 0.0 {
                    idx.push(k as u32);
                    val.push(v);
                }
            }
        }
        Query {
            dense,
            nnz,
            idx: idx.into(),
            val: val.into(),
        }
    }
}

/// The dot products of a block of the batch's rows (the next ones to
/// learn) with the rows stored when the block was computed, all in one
/// pass over the stored columns ([`column_dots`]); each example then needs
/// dot products only with the rows stored since. Renumbered with the store
/// when it is compacted.
#[derive(Clone, Debug, Default)]
struct Block {
    /// Row-major, `width` values per row of the block.
    dots: Vec<f64>,
    /// Stored rows the block covers (the first `width`).
    width: usize,
    /// Rows in the block; the next to learn is `next`.
    rows: usize,
    next: usize,
}

/// Buffers reused from example to example (derived, never pickled): an
/// update would otherwise allocate several store-sized lists.
#[derive(Clone, Debug, Default)]
struct Scratch {
    /// A row's nonzeros, for [`column_dots`].
    nz: Vec<(u32, f64)>,
    /// The kept rows without a multiplier, and their kernel values with
    /// the new example.
    rest: Vec<usize>,
    k_rest: Vec<f64>,
    /// The nearest candidates, and the most violating examples
    /// ([`offer`]).
    near: Vec<(f64, usize)>,
    up: Vec<(f64, usize)>,
    low: Vec<(f64, usize)>,
    /// A batch row's dot products with the stored rows, and the support
    /// vectors' kernel values with it.
    dots: Vec<f64>,
    k_sv: Vec<f64>,
    /// The buffers of the last [`Expansion`].
    spare: Expansion,
    /// A solve's moved multipliers (position, weight), the kernel rows
    /// among them with nothing cached, and their dot products
    /// ([`OnlineLearner::ensure_rows`]).
    moved: Vec<(usize, f64)>,
    missing: Vec<usize>,
    rows: Vec<f64>,
}

impl Block {
    /// No rows; the buffer is kept for the next block.
    fn clear(&mut self) {
        self.dots.clear();
        self.width = 0;
        self.rows = 0;
        self.next = 0;
    }
}

/// The support vectors as [`OnlineLearner::step`] sums over them.
#[derive(Clone, Debug, Default)]
struct Expansion {
    idx: Vec<usize>,
    coef: Vec<f64>,
    sq: Vec<f64>,
}

/// Lanes of the sums over the stored rows that [`slack_lanes`] and
/// [`bias_terms`] take.
const LANES: usize = 8;

/// All ones for each `true` of eight flags, all zeros for each `false`: an
/// `f64` and-ed with it is kept or made `+0`. Read as one word (a `bool` is
/// the byte 0 or 1), so that the scans vectorise; lane by lane, each flag
/// cost a byte load and a mask move.
#[inline(always)]
fn lane_masks(flags: &[bool]) -> [u64; LANES] {
    let flags: &[bool; LANES] = flags.try_into().expect("a lane of flags");
    let word = u64::from_le_bytes(flags.map(u8::from));
    std::array::from_fn(|l| 0u64.wrapping_sub((word >> (8 * l)) & 1))
}

/// `v` where `mask` is all ones, `+0` where it is zero.
#[inline(always)]
fn masked(v: f64, mask: u64) -> f64 {
    f64::from_bits(v.to_bits() & mask)
}

/// `v` where `mask` is all ones, `other` where it is zero.
#[inline(always)]
fn select(mask: u64, v: f64, other: f64) -> f64 {
    f64::from_bits((v.to_bits() & mask) | (other.to_bits() & !mask))
}

multiversion! {
    /// `Σ_i max(0, 1 − y_i (g_i + b))²` over the rows with `alive[i]`, in
    /// eight lanes (row `i` in lane `i mod 8`, [`LANES`]) added pairwise,
    /// then the rows after the last whole lane.
    fn slack_lanes, fn slack_lanes_impl(y: &[f64], g: &[f64], alive: &[bool], b: f64) -> f64 {
        let n = y.len().min(g.len()).min(alive.len());
        let whole = n / LANES * LANES;
        let mut acc = [0.0f64; LANES];
        let lanes = y[..whole]
            .chunks_exact(LANES)
            .zip(g[..whole].chunks_exact(LANES))
            .zip(alive[..whole].chunks_exact(LANES));
        for ((y, g), alive) in lanes {
            let keep = lane_masks(alive);
            for l in 0..LANES {
                let xi = (1.0 - y[l] * (g[l] + b)).max(0.0);
                acc[l] += masked(xi * xi, keep[l]);
            }
        }
        let mut tail = 0.0;
        for i in whole..n {
            let xi = (1.0 - y[i] * (g[i] + b)).max(0.0);
            tail += if alive[i] { xi * xi } else { 0.0 };
        }
        simd::sum_lanes(acc) + tail
    }
}
multiversion! {
    /// `g_i += delta · k_i` for the rows with `alive[i]`; a forgotten row's
    /// `g_i` stays as it was when it was forgotten, whatever its entry in a
    /// cached kernel row holds (so the model does not depend on the cache).
    fn add_column, fn add_column_impl(g: &mut [f64], k: &[f64], alive: &[bool], delta: f64) {
        for ((gi, &ki), &a) in g.iter_mut().zip(k).zip(alive) {
            let v = *gi + delta * ki;
            *gi = if a { v } else { *gi };
        }
    }
}

multiversion! {
    /// What [`OnlineLearner::global_bias`] needs from the rows with
    /// `alive[i]`, for `v_i = g_i − y_i`: the sum and the number of `v_i`
    /// over the free multipliers (`0 < α_i < c`; the sum in eight lanes
    /// added pairwise, then the rows after the last whole lane), the
    /// smallest `v_i` over the bounded ones with `(α_i ≥ c) = (y_i < 0)`
    /// and the largest over the other bounded ones. Branch-free, the
    /// choices made with masks ([`lane_masks`]), so it vectorises.
    fn bias_terms, fn bias_terms_impl(
        y: &[f64],
        g: &[f64],
        alpha: &[f64],
        alive: &[bool],
        c: f64,
    ) -> (f64, usize, f64, f64) {
        let n = y.len().min(g.len()).min(alpha.len()).min(alive.len());
        let whole = n / LANES * LANES;
        let mut sum = [0.0f64; LANES];
        let mut free = [0u64; LANES];
        let mut ub = [f64::INFINITY; LANES];
        let mut lb = [f64::NEG_INFINITY; LANES];
        let lanes = y[..whole]
            .chunks_exact(LANES)
            .zip(g[..whole].chunks_exact(LANES))
            .zip(alpha[..whole].chunks_exact(LANES))
            .zip(alive[..whole].chunks_exact(LANES));
        for (((y, g), alpha), alive) in lanes {
            let live = lane_masks(alive);
            for l in 0..LANES {
                let (a, yi) = (alpha[l], y[l]);
                let v = g[l] - yi;
                let is_free = live[l] & 0u64.wrapping_sub(u64::from(a > 0.0 && a < c));
                let bounded = live[l] & !is_free;
                let up = bounded & 0u64.wrapping_sub(u64::from((a >= c) == (yi < 0.0)));
                let down = bounded & !up;
                sum[l] += masked(v, is_free);
                free[l] += is_free & 1;
                ub[l] = ub[l].min(select(up, v, f64::INFINITY));
                lb[l] = lb[l].max(select(down, v, f64::NEG_INFINITY));
            }
        }
        let sum = simd::sum_lanes(sum);
        let (mut tail_sum, mut tail_free) = (0.0, 0usize);
        let (mut tail_ub, mut tail_lb) = (f64::INFINITY, f64::NEG_INFINITY);
        for i in whole..n {
            let (a, yi) = (alpha[i], y[i]);
            let v = g[i] - yi;
            let is_free = alive[i] && a > 0.0 && a < c;
            let up = alive[i] && !is_free && ((a >= c) == (yi < 0.0));
            let down = alive[i] && !is_free && !up;
            tail_sum += if is_free { v } else { 0.0 };
            tail_free += usize::from(is_free);
            tail_ub = tail_ub.min(if up { v } else { f64::INFINITY });
            tail_lb = tail_lb.max(if down { v } else { f64::NEG_INFINITY });
        }
        let ub = ub.iter().chain([&tail_ub]).fold(f64::INFINITY, |m, &v| m.min(v));
        let lb = lb.iter().chain([&tail_lb]).fold(f64::NEG_INFINITY, |m, &v| m.max(v));
        let free = free.iter().sum::<u64>() as usize + tail_free;
        (sum + tail_sum, free, ub, lb)
    }
}

/// [`OnlineLearner::kernel_values`] for a kernel `kind`, as a function
/// of the kernel alone (so it can fill a cached row in place).
#[inline]
fn kernel_values(kind: KernelKind, vals: &mut [f64], sq_of: impl Fn(usize) -> f64, sq_q: f64) {
    match kind {
        KernelKind::Rbf { gamma } => {
            for (k, v) in vals.iter_mut().enumerate() {
                *v = (sq_of(k) + sq_q - 2.0 * *v).max(0.0);
            }
            exp_scaled(vals, -gamma);
        }
        kind => {
            for (k, v) in vals.iter_mut().enumerate() {
                *v = kind.from_dot(*v, sq_of(k), sq_q);
            }
        }
    }
}

/// Most dot products held in a [`Block`] (16 MiB); a block holds at most
/// [`BLOCK_ROWS`] rows, fewer when the store is large.
const BLOCK_VALUES: usize = 1 << 21;
const BLOCK_ROWS: usize = 64;

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

    /// Learns the rows of `x` (row-major, `d` features) in order; `y` holds
    /// their labels (±1), `cls` and `seen` the caller's class index and
    /// stream position of each (kept with the examples).
    pub fn learn(
        &mut self,
        x: &[f64],
        y: &[f64],
        cls: &[i64],
        seen: &[i64],
        opts: &OnlineOptions,
    ) -> Result<LearnReport> {
        self.learn_polled(x, y, cls, seen, opts, &mut || Ok(()))
    }

    /// [`OnlineLearner::learn`], calling `poll` (after checking
    /// `opts.control`) before each example: an error from it stops the
    /// batch there, as an interrupt does. This lets a caller run the batch
    /// on its own thread and still answer signals between examples.
    pub fn learn_polled(
        &mut self,
        x: &[f64],
        y: &[f64],
        cls: &[i64],
        seen: &[i64],
        opts: &OnlineOptions,
        poll: &mut dyn FnMut() -> Result<()>,
    ) -> Result<LearnReport> {
        opts.validate()?;
        let d = self.d;
        let m = y.len();
        if x.len() != m * d {
            shape_error!(
                "x has {} values, expected {m} rows of {d} features",
                x.len()
            );
        }
        if cls.len() != m || seen.len() != m {
            shape_error!(
                "cls and seen must have {m} entries (one per label), got {} and {}",
                cls.len(),
                seen.len()
            );
        }
        if let Some(v) = y.iter().find(|&&v| v != 1.0 && v != -1.0) {
            value_error!("y must contain only -1 and +1, found {v}");
        }
        if let Some(pos) = x.iter().position(|v| !v.is_finite()) {
            value_error!(
                "X contains NaN or infinity (row {}, column {})",
                pos / d.max(1),
                pos % d.max(1)
            );
        }
        // The kernel's range, as the batch solvers check it: on data where
        // every kernel value underflows (or overflows) float64 the updates
        // could only grind through their iteration caps.
        let stored = Magnitudes {
            max_sq: self.max_sq,
            max_abs: self.max_abs,
        };
        let batch = Magnitudes {
            max_sq: x.chunks_exact(d.max(1)).fold(0.0, |a, r| a.max(dot(r, r))),
            max_abs: x.iter().fold(0.0, |a, &v| a.max(v.abs())),
        };
        let magnitudes = stored.join(batch);
        // Checked over the whole batch up front; under 'auto' each example
        // then picks its working sets' arithmetic (`step`).
        self.hessian = resolve(opts.precision, self.kind, magnitudes, Some(opts.tol))?;
        self.cache.set_budget(opts.cache_bytes);
        self.reserve(x, m)?;
        let mut report = LearnReport {
            steps: Vec::with_capacity(m),
            ..LearnReport::default()
        };
        self.block.clear();
        let done = self.learn_rows(x, y, cls, seen, opts, poll, &mut report);
        self.block.clear();
        done.map(|()| report)
    }

    /// The loop of [`OnlineLearner::learn_polled`] over checked rows.
    #[allow(clippy::too_many_arguments)]
    fn learn_rows(
        &mut self,
        x: &[f64],
        y: &[f64],
        cls: &[i64],
        seen: &[i64],
        opts: &OnlineOptions,
        poll: &mut dyn FnMut() -> Result<()>,
        report: &mut LearnReport,
    ) -> Result<()> {
        // Per example: its dot products with the stored rows, and the
        // support vectors' kernel values (buffers kept across examples).
        let mut dots = std::mem::take(&mut self.scratch.dots);
        let mut k_sv = std::mem::take(&mut self.scratch.k_sv);
        let done = self.learn_each(x, y, cls, seen, opts, poll, report, &mut dots, &mut k_sv);
        self.scratch.dots = dots;
        self.scratch.k_sv = k_sv;
        done
    }

    /// [`OnlineLearner::learn_rows`]'s loop, with its buffers.
    #[allow(clippy::too_many_arguments)]
    fn learn_each(
        &mut self,
        x: &[f64],
        y: &[f64],
        cls: &[i64],
        seen: &[i64],
        opts: &OnlineOptions,
        poll: &mut dyn FnMut() -> Result<()>,
        report: &mut LearnReport,
        dots: &mut Vec<f64>,
        k_sv: &mut Vec<f64>,
    ) -> Result<()> {
        let d = self.d;
        for k in 0..y.len() {
            // Between examples the learner is consistent: an interrupt
            // leaves it with the examples before `k` learnt.
            opts.control.check()?;
            poll()?;
            if self.block.next == self.block.rows {
                self.compute_block(x, k, y.len());
            }
            let row = &x[k * d..(k + 1) * d];
            self.dots_of(row, dots);
            self.block.next += 1;
            let rec = self.step(row, dots, k_sv, y[k], cls[k], seen[k], opts, report)?;
            report.steps.push(rec);
        }
        Ok(())
    }

    /// The dot products of rows `k..` of `x` (at most [`BLOCK_ROWS`], at
    /// most [`BLOCK_VALUES`] values in all but one row) with every stored
    /// row, as the next [`Block`].
    fn compute_block(&mut self, x: &[f64], k: usize, m: usize) {
        let (n, d) = (self.len(), self.d);
        let rows = (m - k)
            .min(BLOCK_ROWS)
            .min((BLOCK_VALUES / n.max(1)).max(1));
        let nz: Vec<Vec<(u32, f64)>> = (k..k + rows)
            .map(|r| nonzeros(&x[r * d..(r + 1) * d]))
            .collect();
        let mut dots = std::mem::take(&mut self.block.dots);
        dots.clear();
        dots.resize(rows * n, 0.0);
        column_dots(&self.cols, &nz, 0, n, &mut dots, n);
        self.block = Block {
            dots,
            width: n,
            rows,
            next: 0,
        };
    }

    /// The dot products of `row`, the block's next row, with every stored
    /// row: from the block, and for the rows stored since it was computed.
    fn dots_of(&mut self, row: &[f64], dots: &mut Vec<f64>) {
        let n = self.len();
        let b = &self.block;
        dots.clear();
        dots.extend_from_slice(&b.dots[b.next * b.width..(b.next + 1) * b.width]);
        dots.resize(n, 0.0);
        if n > b.width {
            let len = n - b.width;
            let nz = &mut self.scratch.nz;
            nz.clear();
            nz.extend(
                row.iter()
                    .enumerate()
                    .filter(|(_, &v)| v != 0.0)
                    .map(|(k, &v)| (k as u32, v)),
            );
            column_dots(
                &self.cols,
                std::slice::from_ref(nz),
                b.width,
                len,
                &mut dots[b.width..],
                len,
            );
        }
    }

    /// Room for `m` more stored examples, reserved before learning them: a
    /// failed allocation is an error, not an abort midway.
    fn reserve(&mut self, x: &[f64], m: usize) -> Result<()> {
        let hint = "learn from fewer examples, or bound the kept ones (max_support)";
        let what = format!("{m} more stored examples of {} features", self.d);
        let values = checked_len::<f64>(m, self.d.max(1), &what, hint)?;
        // The rows, their columns (`cols`) and six values per row.
        let fail = |_| memory_error::<f64>(values.saturating_mul(2) + 6 * m, &what, hint);
        self.x.try_reserve(values).map_err(fail)?;
        self.sq.try_reserve(m).map_err(fail)?;
        self.y.try_reserve(m).map_err(fail)?;
        self.cls.try_reserve(m).map_err(fail)?;
        self.seen.try_reserve(m).map_err(fail)?;
        self.alpha.try_reserve(m).map_err(fail)?;
        self.g.try_reserve(m).map_err(fail)?;
        self.alive.try_reserve(m).map_err(fail)?;
        self.pattern.nnz.try_reserve(m).map_err(fail)?;
        self.pattern.start.try_reserve(m).map_err(fail)?;
        let d = self.d;
        // A column is widened now if the batch holds a value its type
        // cannot (so that learning the batch allocates nothing more).
        let widths = column_widths(x, d);
        for (col, &width) in self.cols.iter_mut().zip(&widths) {
            col.reserve(width, m)
                .map_err(|()| memory_error::<f64>(values.saturating_mul(2) + 6 * m, &what, hint))?;
        }
        let sparse: usize = x
            .chunks_exact(d.max(1))
            .map(|r| r.iter().filter(|&&v| v != 0.0).count())
            .filter(|&nnz| 3 * nnz <= d)
            .sum();
        self.pattern.idx.try_reserve(sparse).map_err(fail)?;
        self.pattern.val.try_reserve(sparse).map_err(fail)?;
        Ok(())
    }

    /// Learns one example; `dots` holds its dot products with every
    /// stored row (`k_sv`: room for the support vectors' kernel values).
    #[allow(clippy::too_many_arguments)]
    fn step(
        &mut self,
        xt: &[f64],
        dots: &[f64],
        k_sv: &mut Vec<f64>,
        label: f64,
        cls: i64,
        seen: i64,
        opts: &OnlineOptions,
        report: &mut LearnReport,
    ) -> Result<StepRecord> {
        let start = Instant::now();
        self.t += 1;
        let n = self.len();
        let sq_t = sq_norm(xt);
        if opts.precision == Precision::Auto {
            self.hessian = self.auto_precision(xt, sq_t, opts.tol);
        }
        // f(x_t) needs the support vectors' kernel values only; the others
        // are formed when an update needs them (its kernel row).
        let ex = match self.expansion.take() {
            Some(ex) => ex,
            None => self.expand(),
        };
        k_sv.clear();
        k_sv.extend(ex.idx.iter().map(|&i| dots[i]));
        self.kernel_values(k_sv, |k| ex.sq[k], sq_t);
        let mut f = self.b;
        for (&coef, &k) in ex.coef.iter().zip(k_sv.iter()) {
            f += coef * k;
        }
        let margin = label * f;
        let mut rec = StepRecord {
            reached: true,
            ..StepRecord::default()
        };
        if margin >= 1.0 && !opts.rebatch {
            // Well classified: nothing to learn; kept (α = 0) in the band,
            // its kernel row left to be computed if it is ever needed.
            self.expansion = Some(ex);
            if margin <= 1.0 + opts.epsilon {
                self.append(xt, sq_t, label, cls, seen, f - self.b);
                if let Some(budget) = opts.max_support {
                    self.trim_rest(budget);
                }
            }
            return Ok(self.finish(rec, start));
        }
        let mut rest = std::mem::take(&mut self.scratch.rest);
        let mut k_rest = std::mem::take(&mut self.scratch.k_rest);
        rest.clear();
        rest.extend((0..n).filter(|&i| self.alpha[i] <= 0.0 && self.alive[i]));
        k_rest.clear();
        k_rest.extend(rest.iter().map(|&i| dots[i]));
        self.kernel_values(&mut k_rest, |k| self.sq[rest[k]], sq_t);
        let j = self.append(xt, sq_t, label, cls, seen, f - self.b);
        // Its cached kernel row: the values just computed, 0 for forgotten
        // rows (see `forget`), then K(x_t, x_t).
        let mut own = [sq_t];
        self.kernel_values(&mut own, |_| sq_t, sq_t);
        self.cache.prepare(j, n + 1, None);
        let krow = self.cache.column_mut(j);
        for (&i, &k) in ex
            .idx
            .iter()
            .zip(k_sv.iter())
            .chain(rest.iter().zip(&k_rest))
        {
            krow[i] = k;
        }
        krow[n] = own[0];
        self.scratch.spare = ex;
        self.scratch.rest = rest;
        self.scratch.k_rest = k_rest;
        rec.updated = true;
        let (mut pos, mut neg) = (false, false);
        for i in 0..self.len() {
            if self.alive[i] {
                pos |= self.y[i] > 0.0;
                neg |= self.y[i] < 0.0;
                if pos && neg {
                    break;
                }
            }
        }
        if !(pos && neg) {
            // One class so far: the constant machine f = label classifies
            // every kept example with margin exactly 1.
            self.b = label;
            self.xi_sum = 0.0;
            rec.neighbourhood = 1;
            return Ok(self.finish(rec, start));
        }
        report.updates += 1;
        if opts.rebatch {
            self.rebatch(opts, report, &mut rec)?;
        } else {
            self.local(j, dots, opts, report, &mut rec)?;
        }
        Ok(self.finish(rec, start))
    }

    /// The working sets' arithmetic under [`Precision::Auto`] for the
    /// example `xt` (`‖xt‖² = sq_t`): the batch solvers' rule ([`resolve`])
    /// on the magnitudes of the stored rows and `xt`, the rows its working
    /// sets are built from, so `float64` where `float32` cannot represent
    /// their kernel values or `tol` is below what `float32` resolves. Per
    /// example, not per batch, so that the model does not depend on how
    /// the stream is cut into batches.
    fn auto_precision(&self, xt: &[f64], sq_t: f64, tol: f64) -> Precision {
        let m = Magnitudes {
            max_sq: self.max_sq.max(sq_t),
            max_abs: xt.iter().fold(self.max_abs, |a, &v| a.max(v.abs())),
        };
        // A subset of the batch checked up front: should even `f64` fail
        // on it alone (a kernel that underflows on these rows only), the
        // wider arithmetic is still the better one.
        resolve(Precision::Auto, self.kind, m, Some(tol)).unwrap_or(Precision::Float64)
    }

    /// The support vectors' [`Expansion`] as the multipliers now are (in
    /// the buffers of the last one).
    fn expand(&mut self) -> Expansion {
        let mut ex = std::mem::take(&mut self.scratch.spare);
        ex.idx.clear();
        ex.idx
            .extend((0..self.len()).filter(|&i| self.alpha[i] > 0.0));
        ex.coef.clear();
        ex.coef
            .extend(ex.idx.iter().map(|&i| self.alpha[i] * self.y[i]));
        ex.sq.clear();
        ex.sq.extend(ex.idx.iter().map(|&i| self.sq[i]));
        ex
    }

    fn finish(&self, mut rec: StepRecord, start: Instant) -> StepRecord {
        rec.criterion = self.criterion();
        rec.n_support = self.n_support;
        rec.n_stored = self.n_alive;
        rec.seconds = start.elapsed().as_secs_f64();
        rec
    }

    /// Stores a new example with `α = 0` (no kernel row cached yet).
    fn append(&mut self, xt: &[f64], sq_t: f64, label: f64, cls: i64, seen: i64, g: f64) -> usize {
        let j = self.len();
        self.x.extend_from_slice(xt);
        self.sq.push(sq_t);
        self.y.push(label);
        self.cls.push(cls);
        self.seen.push(seen);
        self.alpha.push(0.0);
        self.g.push(g);
        self.alive.push(true);
        self.index_last();
        self.n_alive += 1;
        self.cache.push();
        j
    }

    /// `K(x_i, x_j)` of two stored rows.
    fn kval(&self, i: usize, j: usize) -> f64 {
        if let Some(&v) = self.cache.column(i).get(j) {
            return v;
        }
        let mut v = [self.dot_with(i, &self.query(j))];
        self.kernel_values(&mut v, |_| self.sq[i], self.sq[j]);
        v[0]
    }

    /// Turns dot products `vals[k] = x_k · q` into kernel values `K(x_k, q)`,
    /// `sq_of(k)` giving `‖x_k‖²` and `sq_q` `‖q‖²`. Every kernel value of
    /// the learner comes from here, so each is the same function of its
    /// pair wherever it is computed; RBF values from the vectorised
    /// exponential of the batch kernel rows (within about an ulp of
    /// `f64::exp`, several times faster).
    #[inline]
    fn kernel_values(&self, vals: &mut [f64], sq_of: impl Fn(usize) -> f64, sq_q: f64) {
        kernel_values(self.kind, vals, sq_of, sq_q);
    }

    /// The kernel matrix of the listed stored rows (row-major).
    fn gram(&self, work: &[usize]) -> Vec<f64> {
        let w = work.len();
        let mut k = vec![0.0; w * w];
        for a in 0..w {
            for b in 0..=a {
                let v = self.kval(work[a], work[b]);
                k[a * w + b] = v;
                k[b * w + a] = v;
            }
        }
        k
    }

    /// Makes row `j` of the cache cover every stored example.
    fn ensure_row(&mut self, j: usize) {
        let (n, d) = (self.len(), self.d);
        let start = self.cache.prepare(j, n, None);
        if start < n {
            let len = n - start;
            // Into the cached row directly; entries of forgotten rows are
            // computed too, and never read (see `forget`).
            let nz = &mut self.scratch.nz;
            nz.clear();
            nz.extend(
                self.x[j * d..(j + 1) * d]
                    .iter()
                    .enumerate()
                    .filter(|(_, &v)| v != 0.0)
                    .map(|(k, &v)| (k as u32, v)),
            );
            let out = &mut self.cache.column_mut(j)[start..n];
            column_dots(&self.cols, std::slice::from_ref(nz), start, len, out, len);
            let sq = &self.sq;
            kernel_values(self.kind, out, |k| sq[start + k], sq[j]);
        }
    }

    /// Makes the rows of `rows` (storage positions, with a weight each)
    /// cover every stored example, as [`OnlineLearner::ensure_row`] does
    /// one by one, but the rows with nothing cached computed together, up
    /// to [`ROWS_PER_PASS`] per pass of [`column_dots`] over the stored
    /// columns (a moved working set's rows share most of their columns).
    /// Only while the cache holds four times the rows with room to spare:
    /// then none of them is evicted before it is used; otherwise, and for
    /// partly cached rows, `ensure_row` at use does it.
    fn ensure_rows(&mut self, rows: &[(usize, f64)]) {
        let n = self.len();
        let per_row =
            crate::solver::cache::size_class(n + n / 8 + crate::solver::cache::GROW_SLACK);
        let mut missing = std::mem::take(&mut self.scratch.missing);
        missing.clear();
        if rows.len() >= 2 && self.cache.capacity() / 4 / per_row >= rows.len() {
            missing.extend(
                rows.iter()
                    .map(|&(j, _)| j)
                    .filter(|&j| self.cache.held(j) == 0),
            );
        }
        let mut buf = std::mem::take(&mut self.scratch.rows);
        for part in missing.chunks(ROWS_PER_PASS) {
            if part.len() < 2 {
                break; // one row: ensure_row at use
            }
            let nz: Vec<Vec<(u32, f64)>> = part.iter().map(|&j| nonzeros(self.row(j))).collect();
            buf.clear();
            if buf.try_reserve(part.len() * n).is_err() {
                break; // no room for them together: ensure_row at use
            }
            buf.resize(part.len() * n, 0.0);
            column_dots(&self.cols, &nz, 0, n, &mut buf, n);
            for (t, &j) in part.iter().enumerate() {
                let start = self.cache.prepare(j, n, None);
                debug_assert_eq!(start, 0);
                let out = &mut self.cache.column_mut(j)[..n];
                out.copy_from_slice(&buf[t * n..(t + 1) * n]);
                let sq = &self.sq;
                kernel_values(self.kind, out, |k| sq[k], sq[j]);
            }
        }
        self.scratch.rows = buf;
        self.scratch.missing = missing;
    }

    /// `‖ξ‖²` over the kept examples.
    fn slack_sum(&self) -> f64 {
        slack_lanes(&self.y, &self.g, &self.alive, self.b)
    }

    /// The paper's update for the new example at `j` (`dots`: its dot
    /// products with the examples stored before it).
    fn local(
        &mut self,
        j: usize,
        dots: &[f64],
        opts: &OnlineOptions,
        report: &mut LearnReport,
        rec: &mut StepRecord,
    ) -> Result<()> {
        let eps = opts.epsilon;
        // The nearest candidates, kept while scanning (no list of all).
        let mut best = std::mem::take(&mut self.scratch.near);
        best.clear();
        let mut n_cand = 0;
        for (i, &dot) in dots.iter().enumerate().take(j) {
            if self.alive[i]
                && (self.y[i] * (self.g[i] + self.b) <= 1.0 + eps || self.alpha[i] > 0.0)
            {
                n_cand += 1;
                offer(&mut best, opts.max_neighbors, (self.sq[i] - 2.0 * dot, i));
            }
        }
        let near: Vec<usize> = best.iter().map(|&(_, i)| i).collect();
        self.scratch.near = best;
        let t = self.t as f64;
        let mut e_prev = self.slack_sum() / t;
        let mut work = vec![j];
        // K over the working set, grown by one row and column per member
        // (capacity for the largest set, so indices stay put).
        let cap = near.len() + 1;
        let what = format!("the {cap} × {cap} kernel matrix of the working set");
        let hint = "use a smaller max_neighbors";
        let mut kww = try_filled(checked_len::<f64>(cap, cap, &what, hint)?, 0.0, &what, hint)?;
        kww[0] = self.kval(j, j);
        let mut next = 0;
        let mut e = e_prev;
        loop {
            let take = opts.neighbor_step.min(near.len() - next);
            for &i in &near[next..next + take] {
                let a = work.len();
                work.push(i);
                for (bb, &ib) in work.iter().enumerate() {
                    let v = self.kval(i, ib);
                    kww[a * cap + bb] = v;
                    kww[bb * cap + a] = v;
                }
            }
            next += take;
            let moved = self.solve_working_set(&work, &kww, cap, opts, report);
            rec.n_solves += 1;
            // The level, or the variation of the estimate between candidates
            // that differ (a neighbour whose subproblem is already optimal,
            // SMO taking no step, leaves the machine and the estimate as
            // they were).
            if moved {
                e = self.slack_sum() / t;
            }
            if e < opts.threshold || (moved && (e_prev - e).abs() < opts.threshold * e_prev) {
                rec.reached = true;
                break;
            }
            e_prev = e;
            rec.reached = false;
            if next >= near.len() {
                if n_cand > opts.max_neighbors {
                    report.capped += 1;
                }
                break;
            }
        }
        rec.neighbourhood = work.len();
        // The local update leaves the rest of the machine as it was: stale
        // multipliers elsewhere (at C while now well classified, or free off
        // the margin) bias b and the whole machine. A few subproblems over
        // the kept examples that violate the KKT conditions most repair that.
        let mut any = false;
        for _ in 0..opts.reprocess {
            let Some(ws) = self.violators(REPROCESS_SIZE, opts.c, opts.tol) else {
                break;
            };
            let kernel = self.gram(&ws);
            let moved = self.solve_working_set(&ws, &kernel, ws.len(), opts, report);
            any |= moved;
            if !moved {
                // The same violators would come back, as optimal.
                break;
            }
        }
        self.xi_sum = if any { self.slack_sum() } else { e * t };
        self.retire(opts.epsilon);
        if let Some(budget) = opts.max_support {
            self.enforce_budget(budget, opts, report);
            self.count();
        }
        self.maybe_compact();
        Ok(())
    }

    /// Re-optimises the multipliers of `work` (storage positions) with the
    /// others fixed, then updates `g` from the changes and `b`; false when
    /// SMO took no step (the working set was already optimal).
    fn solve_working_set(
        &mut self,
        work: &[usize],
        kernel: &[f64],
        stride: usize,
        opts: &OnlineOptions,
        report: &mut LearnReport,
    ) -> bool {
        let ys: Vec<f64> = work.iter().map(|&i| self.y[i]).collect();
        let a0: Vec<f64> = work
            .iter()
            .map(|&i| self.alpha[i].clamp(0.0, opts.c))
            .collect();
        let g: Vec<f64> = work.iter().map(|&i| self.g[i]).collect();
        let res = if self.hessian == Precision::Float64 {
            solve_dense::<f64>(kernel, stride, &ys, &a0, &g, opts)
        } else {
            solve_dense::<f32>(kernel, stride, &ys, &a0, &g, opts)
        };
        report.solves += 1;
        if !res.converged {
            report.unconverged += 1;
        }
        self.n_iter += res.n_iter;
        if res.n_iter == 0 {
            return false;
        }
        let mut moved = std::mem::take(&mut self.scratch.moved);
        moved.clear();
        for (a, &ia) in work.iter().enumerate() {
            let delta = (res.alpha[a] - self.alpha[ia]) * ys[a];
            self.alpha[ia] = res.alpha[a];
            if delta != 0.0 {
                moved.push((ia, delta));
            }
        }
        self.ensure_rows(&moved);
        for &(ia, delta) in &moved {
            self.ensure_row(ia);
            add_column(&mut self.g, self.cache.column(ia), &self.alive, delta);
        }
        self.scratch.moved = moved;
        self.b = self.global_bias(opts.c);
        true
    }

    /// The bias from the KKT conditions of every kept example (LIBSVM's
    /// rule, over the whole machine rather than the working set, whose
    /// few variables often all sit at a bound): minus the mean of
    /// `g_i − y_i` over the free multipliers, else the middle of the interval
    /// the bounded ones allow.
    fn global_bias(&self, c: f64) -> f64 {
        let (sum, free, ub, lb) = bias_terms(&self.y, &self.g, &self.alpha, &self.alive, c);
        -crate::solver::smo::rho_from(sum, free, ub, lb)
    }

    /// The `size` kept examples that violate the KKT conditions most: half
    /// the largest `y_i − g_i` over the examples whose multiplier may move
    /// up (`y_i α_i` may grow), half the smallest over those that may move
    /// down (values within `tol` ordered by position; the pair of the
    /// largest violation always among them); `None` when the largest
    /// violation `max_up − min_low` is within `tol`.
    fn violators(&mut self, size: usize, c: f64, tol: f64) -> Option<Vec<usize>> {
        let half = (size / 2).max(1);
        // The `half` first of each side in the rounded order, kept while
        // scanning ([`offer`]), not sorted out of a list of every example.
        let mut up = std::mem::take(&mut self.scratch.up);
        let mut low = std::mem::take(&mut self.scratch.low);
        up.clear();
        low.clear();
        let (mut max_up, mut min_low) = (f64::NEG_INFINITY, f64::INFINITY);
        let (mut arg_up, mut arg_low) = (0, 0);
        // Once a side holds `half`, an example whose `exact` is beyond its
        // bound cannot enter it (see `entry_bounds`), and needs no rounded
        // value: most of the kept examples are far from both extremes.
        let (mut up_from, mut low_to) = (f64::NEG_INFINITY, f64::INFINITY);
        for i in 0..self.len() {
            if !self.alive[i] {
                continue;
            }
            let (a, y) = (self.alpha[i], self.y[i]);
            let exact = y - self.g[i];
            let may_up = (y > 0.0 && a < c) || (y < 0.0 && a > 0.0);
            let may_low = (y < 0.0 && a < c) || (y > 0.0 && a > 0.0);
            if may_up && exact > max_up {
                (max_up, arg_up) = (exact, i);
            }
            if may_low && exact < min_low {
                (min_low, arg_low) = (exact, i);
            }
            let to_up = may_up && exact >= up_from;
            let to_low = may_low && exact <= low_to;
            if to_up || to_low {
                // In units of the solver's tolerance: the examples on the
                // margin, equal to within it, are ordered by position.
                let v = round_even(exact / tol);
                if to_up {
                    offer(&mut up, half, (-v, i));
                    if up.len() >= half {
                        up_from = entry_bounds(-up[up.len() - 1].0, tol).0;
                    }
                }
                if to_low {
                    offer(&mut low, half, (v, i));
                    if low.len() >= half {
                        low_to = entry_bounds(low[low.len() - 1].0, tol).1;
                    }
                }
            }
        }
        let top: Vec<usize> = up.iter().map(|&(_, i)| i).collect();
        let bottom: Vec<usize> = low.iter().map(|&(_, i)| i).collect();
        self.scratch.up = up;
        self.scratch.low = low;
        // The violation itself, not that of the first in the rounded
        // order, which may fall within tol while the largest does not.
        if top.is_empty() || bottom.is_empty() || max_up - min_low <= tol {
            return None;
        }
        // The pair of the largest violation itself is always in: with more
        // than `half` examples within tol of an extreme the rounded order
        // may leave it out, and the set could then be optimal to within
        // tol while the machine is not.
        let mut top = top;
        if !top.contains(&arg_up) {
            let last = top.len() - 1;
            top[last] = arg_up;
        }
        let mut bottom = bottom;
        if !bottom.contains(&arg_low) {
            let last = bottom.len() - 1;
            bottom[last] = arg_low;
        }
        let mut ws = top;
        for k in bottom {
            if !ws.contains(&k) {
                ws.push(k);
            }
        }
        Some(ws)
    }

    /// Forgets the examples with `α = 0` beyond the band, and counts the
    /// kept examples and the support vectors ([`OnlineLearner::count`]) in
    /// the same pass.
    fn retire(&mut self, epsilon: f64) {
        let (mut alive, mut support) = (0, 0);
        for i in 0..self.len() {
            if !self.alive[i] {
                continue;
            }
            if self.alpha[i] > 0.0 {
                support += 1;
            } else if self.alpha[i] == 0.0 && self.y[i] * (self.g[i] + self.b) > 1.0 + epsilon {
                self.forget(i);
                continue;
            }
            alive += 1;
        }
        self.n_alive = alive;
        self.n_support = support;
    }

    /// Forgets stored row `i`: it leaves the machine. Its entries in the
    /// cached kernel rows stay as they are: nothing reads them (working
    /// sets hold kept rows only) and the updates of `g` skip forgotten rows
    /// ([`add_column`]), so `g_i` stays as it was whatever the cache held
    /// (the model does not depend on the cache). Zeroing the entry in every
    /// cached row instead cost a pass over the cache per forgotten row.
    fn forget(&mut self, i: usize) {
        self.alive[i] = false;
    }

    fn count(&mut self) {
        let (mut alive, mut support) = (0, 0);
        for (&a, &alpha) in self.alive.iter().zip(&self.alpha) {
            alive += usize::from(a);
            support += usize::from(a && alpha > 0.0);
        }
        self.n_alive = alive;
        self.n_support = support;
    }

    fn maybe_compact(&mut self) {
        let n = self.len();
        if n <= COMPACT_MIN || 4 * self.n_alive >= 3 * n {
            return;
        }
        let keep: Vec<usize> = (0..n).filter(|&i| self.alive[i]).collect();
        let d = self.d;
        self.x = keep
            .iter()
            .flat_map(|&i| self.x[i * d..(i + 1) * d].iter().copied())
            .collect();
        fn pick<T: Copy>(v: &[T], keep: &[usize]) -> Vec<T> {
            keep.iter().map(|&i| v[i]).collect()
        }
        self.sq = pick(&self.sq, &keep);
        self.y = pick(&self.y, &keep);
        self.cls = pick(&self.cls, &keep);
        self.seen = pick(&self.seen, &keep);
        self.alpha = pick(&self.alpha, &keep);
        self.g = pick(&self.g, &keep);
        self.alive = vec![true; keep.len()];
        self.cache.retain(&keep);
        self.index_rows();
        if let Some(ex) = self.expansion.take() {
            self.scratch.spare = ex;
        }
        let b = &mut self.block;
        *b = if b.next < b.rows {
            let width = keep.partition_point(|&i| i < b.width);
            let mut dots = Vec::with_capacity((b.rows - b.next) * width);
            for t in b.next..b.rows {
                let row = &b.dots[t * b.width..(t + 1) * b.width];
                dots.extend(keep[..width].iter().map(|&i| row[i]));
            }
            Block {
                dots,
                width,
                rows: b.rows - b.next,
                next: 0,
            }
        } else {
            Block::default()
        };
    }

    /// Removes support vectors while there are more than `budget`, each time
    /// the one with the smallest margin `y f` (then the smallest `α`, then
    /// the oldest); then keeps at most `budget` examples without a
    /// multiplier, the most recent.
    fn enforce_budget(&mut self, budget: usize, opts: &OnlineOptions, report: &mut LearnReport) {
        // Support vectors whose multiplier found no taker this time: the
        // next smallest margin is tried instead, so one stuck candidate
        // does not leave the learner over its budget.
        let mut stuck: Vec<usize> = Vec::new();
        loop {
            let sv = self.support();
            if sv.len() <= budget {
                break;
            }
            let key = |i: usize| {
                let m = self.y[i] * (self.g[i] + self.b);
                ((m * 1e9).round(), self.alpha[i])
            };
            let Some(r) = sv
                .iter()
                .copied()
                .filter(|i| !stuck.contains(i))
                .min_by(|&a, &b| {
                    let (ka, kb) = (key(a), key(b));
                    ka.0.total_cmp(&kb.0)
                        .then(ka.1.total_cmp(&kb.1))
                        .then(a.cmp(&b))
                })
            else {
                break; // no support vector can hand its multiplier over
            };
            if !self.remove(r, opts, report) {
                stuck.push(r);
            }
        }
        self.trim_rest(budget);
    }

    /// Keeps at most `budget` examples without a multiplier, the most recent.
    fn trim_rest(&mut self, budget: usize) {
        let rest: Vec<usize> = (0..self.len())
            .filter(|&i| self.alive[i] && self.alpha[i] == 0.0)
            .collect();
        if rest.len() > budget {
            for &i in &rest[..rest.len() - budget] {
                self.forget(i);
            }
            self.count();
            self.maybe_compact();
        }
    }

    /// Removes support vector `r`: its multiplier goes to its nearest
    /// same-class neighbours (room up to `C`) or is taken from its nearest
    /// other-class ones, keeping `yᵀα`; that neighbourhood is re-optimised
    /// once. False (nothing changed) when the neighbours lack the room.
    fn remove(&mut self, r: usize, opts: &OnlineOptions, report: &mut LearnReport) -> bool {
        let n = self.len();
        let mut dots = vec![0.0; n];
        column_dots(&self.cols, &[nonzeros(self.row(r))], 0, n, &mut dots, n);
        let cand: Vec<(f64, usize)> = (0..n)
            .filter(|&i| self.alive[i] && i != r)
            .map(|i| (self.sq[i] - 2.0 * dots[i], i))
            .collect();
        let near = nearest(cand, opts.max_neighbors.max(2));
        let (a_r, y_r) = (self.alpha[r], self.y[r]);
        let mut a_new: Vec<f64> = near.iter().map(|&i| self.alpha[i]).collect();
        let mut need = a_r;
        for (k, &i) in near.iter().enumerate() {
            if need <= 0.0 {
                break;
            }
            if self.y[i] == y_r {
                let add = need.min(opts.c - a_new[k]);
                a_new[k] += add;
                need -= add;
            }
        }
        for (k, &i) in near.iter().enumerate() {
            if need <= 0.0 {
                break;
            }
            if self.y[i] != y_r {
                let sub = need.min(a_new[k]);
                a_new[k] -= sub;
                need -= sub;
            }
        }
        if need > 1e-12 * a_r.max(1.0) {
            return false;
        }
        // Apply the hand-off: α_r → 0 and the neighbours to a_new.
        let mut changes = vec![(r, -a_r * y_r)];
        for (k, &i) in near.iter().enumerate() {
            changes.push((i, (a_new[k] - self.alpha[i]) * self.y[i]));
        }
        for &(i, delta) in &changes {
            if delta != 0.0 {
                self.ensure_row(i);
                add_column(&mut self.g, self.cache.column(i), &self.alive, delta);
            }
        }
        self.alpha[r] = 0.0;
        self.forget(r);
        for (k, &i) in near.iter().enumerate() {
            self.alpha[i] = a_new[k];
        }
        let kernel = self.gram(&near);
        self.solve_working_set(&near, &kernel, near.len(), opts, report);
        self.xi_sum = self.slack_sum();
        true
    }

    /// The baseline: a batch SVM over every kept example, trained afresh.
    fn rebatch(
        &mut self,
        opts: &OnlineOptions,
        report: &mut LearnReport,
        rec: &mut StepRecord,
    ) -> Result<()> {
        let n = self.len();
        let rows = Rows::new(self.x.clone(), n, self.d)?;
        let problem = DualProblem {
            source: KernelSource::dense(self.kind, rows)?,
            y: self.y.clone(),
            p: None,
            upper: vec![opts.c; n],
            alpha0: None,
            active: None,
            constraint: Constraint::Equality,
            start: Default::default(),
            twins: None,
        };
        let sol = problem.solve_with(
            &SolverOptions {
                tol: opts.tol,
                max_iter: opts.max_iter,
                shrinking: opts.shrinking,
                cache_bytes: opts.cache_bytes,
                threads: 1,
                control: opts.control.clone(),
                solver: Default::default(),
            },
            opts.precision,
        )?;
        report.solves += 1;
        if !sol.converged {
            report.unconverged += 1;
        }
        self.n_iter += sol.n_iter;
        for i in 0..n {
            let delta = (sol.alpha[i] - self.alpha[i]) * self.y[i];
            if delta != 0.0 {
                self.ensure_row(i);
                add_column(&mut self.g, self.cache.column(i), &self.alive, delta);
            }
        }
        self.alpha = sol.alpha;
        self.b = -sol.rho;
        self.xi_sum = self.slack_sum();
        self.count();
        rec.neighbourhood = n;
        rec.n_solves = 1;
        rec.reached = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A two-class stream: class by the sign of `sin(3 x₀) − x₁` with label
    /// noise every 7th example.
    fn stream(m: usize, seed: u64) -> (Vec<f64>, Vec<f64>) {
        let mut s = seed;
        let mut next = || {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 11) as f64) / ((1u64 << 53) as f64) * 2.0 - 1.0
        };
        let mut x = Vec::with_capacity(2 * m);
        let mut y = Vec::with_capacity(m);
        for k in 0..m {
            let (a, b) = (next(), next());
            x.extend_from_slice(&[a, b]);
            let mut label = if (3.0 * a).sin() > b { 1.0 } else { -1.0 };
            if k % 7 == 6 {
                label = -label;
            }
            y.push(label);
        }
        (x, y)
    }

    fn learner(kind: KernelKind, x: &[f64], y: &[f64], opts: &OnlineOptions) -> OnlineLearner {
        let mut lr = OnlineLearner::new(kind, 2).unwrap();
        let m = y.len();
        let seen: Vec<i64> = (0..m as i64).collect();
        let cls: Vec<i64> = y.iter().map(|&v| i64::from(v > 0.0)).collect();
        lr.learn(x, y, &cls, &seen, opts).unwrap();
        lr
    }

    /// `α` in its box, `yᵀα = 0`, `g` equal to the kernel sum, and only the
    /// band and the support vectors kept.
    fn check_invariants(lr: &OnlineLearner, opts: &OnlineOptions) {
        let n = lr.len();
        let ya: f64 = (0..n).map(|i| lr.y[i] * lr.alpha[i]).sum();
        let total: f64 = lr.alpha.iter().sum();
        assert!(ya.abs() <= 1e-9 * total.max(1.0), "yᵀα = {ya}");
        for i in 0..n {
            assert!(lr.alpha[i] >= 0.0 && lr.alpha[i] <= opts.c + 1e-12);
            if !lr.alive[i] {
                assert_eq!(lr.alpha[i], 0.0);
                continue;
            }
            let g: f64 = (0..n)
                .filter(|&j| lr.alive[j])
                .map(|j| {
                    lr.alpha[j]
                        * lr.y[j]
                        * lr.kind
                            .from_dot(dot(lr.row(j), lr.row(i)), lr.sq[j], lr.sq[i])
                })
                .sum();
            assert!((g - lr.g[i]).abs() < 1e-8, "g[{i}] = {} vs {g}", lr.g[i]);
            let margin = lr.y[i] * (g + lr.b);
            assert!(margin <= 1.0 + opts.epsilon + 1e-9 || lr.alpha[i] > 0.0);
        }
    }

    fn accuracy(lr: &OnlineLearner, x: &[f64], y: &[f64]) -> f64 {
        let f = lr.decision(x).unwrap();
        let hits = f.iter().zip(y).filter(|(f, y)| **f * **y > 0.0).count();
        hits as f64 / y.len() as f64
    }

    #[test]
    fn learns_a_stream_and_keeps_its_invariants() {
        let (x, y) = stream(300, 1);
        let opts = OnlineOptions {
            cache_bytes: 20_000, // small: rows are evicted and recomputed
            ..OnlineOptions::default()
        };
        let kind = KernelKind::Rbf { gamma: 2.0 };
        let lr = learner(kind, &x, &y, &opts);
        check_invariants(&lr, &opts);
        assert!(lr.n_support() > 0 && lr.n_alive() < 300);
        let (xt, yt) = stream(400, 2);
        // 1 in 7 labels is flipped: 6/7 is the best accuracy.
        assert!(accuracy(&lr, &xt, &yt) > 0.72);
        // The same stream with an ample cache: the same model.
        let ample = learner(kind, &x, &y, &OnlineOptions::default());
        assert_eq!(ample.state(), lr.state());
    }

    /// The largest KKT violation over the kept examples.
    fn violation(lr: &OnlineLearner, c: f64) -> f64 {
        let (mut up, mut low) = (f64::NEG_INFINITY, f64::INFINITY);
        for i in (0..lr.len()).filter(|&i| lr.alive[i]) {
            let (a, y, v) = (lr.alpha[i], lr.y[i], lr.y[i] - lr.g[i]);
            if (y > 0.0 && a < c) || (y < 0.0 && a > 0.0) {
                up = up.max(v);
            }
            if (y < 0.0 && a < c) || (y > 0.0 && a > 0.0) {
                low = low.min(v);
            }
        }
        up - low
    }

    /// [`stream`]'s examples in 30 features: the two of [`stream`] in the
    /// first two columns and ±0.3 in one of the others (sparse rows), every
    /// fifth row with every other column 0.05 (dense rows).
    fn mixed_stream(m: usize, seed: u64) -> (Vec<f64>, Vec<f64>, usize) {
        let d = 30;
        let (x2, y) = stream(m, seed);
        let mut x = vec![0.0; m * d];
        for k in 0..m {
            let row = &mut x[k * d..(k + 1) * d];
            row[0] = x2[2 * k];
            row[1] = x2[2 * k + 1];
            if k % 5 == 4 {
                row[2..].fill(0.05);
            } else {
                row[2 + (k * 7) % (d - 2)] = if k % 2 == 0 { 0.3 } else { -0.3 };
            }
        }
        (x, y, d)
    }

    #[test]
    fn offer_keeps_what_nearest_selects() {
        // Ties (equal keys, both zeros) and more or fewer pairs than k.
        let mut s = 7u64;
        for (m, k) in [(0, 3), (5, 10), (200, 1), (200, 5), (1000, 50)] {
            let pairs: Vec<(f64, usize)> = (0..m)
                .map(|i| {
                    s = s
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let v = ((s >> 58) as f64 - 8.0) * 0.5;
                    (if v == 0.0 && i % 2 == 0 { -0.0 } else { v }, i)
                })
                .collect();
            let mut best = Vec::new();
            for &p in &pairs {
                offer(&mut best, k, p);
            }
            let kept: Vec<usize> = best.iter().map(|&(_, i)| i).collect();
            assert_eq!(kept, nearest(pairs, k), "m = {m}, k = {k}");
        }
    }

    #[test]
    fn round_even_is_round_ties_even() {
        let mut values = vec![
            0.0,
            -0.0,
            0.5,
            -0.5,
            1.5,
            2.5,
            -2.5,
            0.49999999999999994,
            4503599627370495.5,
            4503599627370496.0,
            1e300,
            -1e-300,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ];
        values.extend((-2000..2000).map(|k| k as f64 * 0.25 + 1e-3 * (k % 7) as f64));
        for v in values {
            assert_eq!(
                round_even(v).to_bits(),
                v.round_ties_even().to_bits(),
                "{v}"
            );
        }
        assert!(round_even(f64::NAN).is_nan());
    }

    #[test]
    fn column_dots_are_the_pairwise_dot_products() {
        // More rows than a tile, so a pass crosses tiles.
        let (x, y, d) = mixed_stream(COLUMN_TILE + 90, 12);
        let n = y.len();
        let state = LearnerState {
            x,
            y,
            cls: vec![0; n],
            seen: (0..n as i64).collect(),
            alpha: vec![0.0; n],
            g: vec![0.0; n],
            alive: vec![true; n],
            ..LearnerState::default()
        };
        let lr = OnlineLearner::from_state(KernelKind::Linear, d, state).unwrap();
        // Three queries at once, from row 5 on.
        let queries = [0, 4, 77];
        let nz: Vec<_> = queries.iter().map(|&q| nonzeros(lr.row(q))).collect();
        let (lo, len) = (5, n - 5);
        let mut out = vec![f64::NAN; queries.len() * len];
        column_dots(&lr.cols, &nz, lo, len, &mut out, len);
        for (t, &q) in queries.iter().enumerate() {
            for i in lo..n {
                let got = out[t * len + i - lo];
                // Bit for bit, whichever side is the query.
                assert_eq!(got.to_bits(), lr.dot_with(i, &lr.query(q)).to_bits());
                assert_eq!(got.to_bits(), lr.dot_with(q, &lr.query(i)).to_bits());
            }
        }
        assert_eq!(lr.sq[4].to_bits(), lr.dot_with(4, &lr.query(4)).to_bits());
    }

    /// The scans of [`slack_lanes`] and [`bias_terms`] as they were written
    /// before their masks, lane by lane with `bool`s and branches: the
    /// values the learner's models were fitted with.
    fn slack_reference(y: &[f64], g: &[f64], alive: &[bool], b: f64) -> f64 {
        const L: usize = 8;
        let term = |y: f64, g: f64, alive: bool| {
            let xi = (1.0 - y * (g + b)).max(0.0);
            if alive {
                xi * xi
            } else {
                0.0
            }
        };
        let mut acc = [0.0f64; L];
        let (yc, gc, ac) = (y.chunks_exact(L), g.chunks_exact(L), alive.chunks_exact(L));
        let mut tail = 0.0;
        for ((&y, &g), &a) in yc
            .remainder()
            .iter()
            .zip(gc.remainder())
            .zip(ac.remainder())
        {
            tail += term(y, g, a);
        }
        for ((y, g), a) in yc.zip(gc).zip(ac) {
            for l in 0..L {
                acc[l] += term(y[l], g[l], a[l]);
            }
        }
        simd::sum_lanes(acc) + tail
    }

    fn bias_reference(
        y: &[f64],
        g: &[f64],
        alpha: &[f64],
        alive: &[bool],
        c: f64,
    ) -> (f64, usize, f64, f64) {
        const L: usize = 8;
        let mut sum = [0.0f64; L];
        let mut free = [0usize; L];
        let mut ub = [f64::INFINITY; L];
        let mut lb = [f64::NEG_INFINITY; L];
        let n = y.len();
        let whole = n / L * L;
        let one = |l: usize,
                   i: usize,
                   sum: &mut [f64; L],
                   free: &mut [usize; L],
                   ub: &mut [f64; L],
                   lb: &mut [f64; L]| {
            let (a, yi) = (alpha[i], y[i]);
            let v = g[i] - yi;
            let is_free = alive[i] && a > 0.0 && a < c;
            let up = alive[i] && !is_free && ((a >= c) == (yi < 0.0));
            let down = alive[i] && !is_free && !up;
            sum[l] += if is_free { v } else { 0.0 };
            free[l] += usize::from(is_free);
            ub[l] = ub[l].min(if up { v } else { f64::INFINITY });
            lb[l] = lb[l].max(if down { v } else { f64::NEG_INFINITY });
        };
        for base in (0..whole).step_by(L) {
            for l in 0..L {
                one(l, base + l, &mut sum, &mut free, &mut ub, &mut lb);
            }
        }
        let sum = simd::sum_lanes(sum);
        let mut tail = ([0.0; L], [0; L], [f64::INFINITY; L], [f64::NEG_INFINITY; L]);
        for i in whole..n {
            one(0, i, &mut tail.0, &mut tail.1, &mut tail.2, &mut tail.3);
        }
        let ub = ub
            .iter()
            .chain(&tail.2[..1])
            .fold(f64::INFINITY, |m, &v| m.min(v));
        let lb = lb
            .iter()
            .chain(&tail.3[..1])
            .fold(f64::NEG_INFINITY, |m, &v| m.max(v));
        (
            sum + tail.0[0],
            free.iter().sum::<usize>() + tail.1[0],
            ub,
            lb,
        )
    }

    #[test]
    fn masked_scans_are_the_branching_ones_bit_for_bit() {
        let mut s = 11u64;
        let mut r = move || {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (s >> 11) as f64 / (1u64 << 53) as f64
        };
        let c = 1.0;
        // Lengths around the lanes, so the tail is empty, short or the whole.
        for n in (0..20).chain([1003, 4096]) {
            let y: Vec<f64> = (0..n).map(|_| if r() < 0.5 { 1.0 } else { -1.0 }).collect();
            let g: Vec<f64> = (0..n).map(|_| 4.0 * r() - 2.0).collect();
            // Multipliers at 0, at C and between, some rows forgotten.
            let alpha: Vec<f64> = (0..n)
                .map(|_| match (4.0 * r()) as u32 {
                    0 => 0.0,
                    1 => c,
                    _ => r() * c,
                })
                .collect();
            let alive: Vec<bool> = (0..n).map(|_| r() < 0.8).collect();
            for b in [0.0, -0.3, 0.7] {
                let (got, want) = (
                    slack_lanes(&y, &g, &alive, b),
                    slack_reference(&y, &g, &alive, b),
                );
                assert_eq!(got.to_bits(), want.to_bits(), "slack, n = {n}");
            }
            let got = bias_terms(&y, &g, &alpha, &alive, c);
            let want = bias_reference(&y, &g, &alpha, &alive, c);
            assert_eq!(got.0.to_bits(), want.0.to_bits(), "sum, n = {n}");
            assert_eq!(got.1, want.1, "free, n = {n}");
            assert_eq!(got.2.to_bits(), want.2.to_bits(), "ub, n = {n}");
            assert_eq!(got.3.to_bits(), want.3.to_bits(), "lb, n = {n}");
        }
    }

    #[test]
    fn width_of_is_the_narrowest_type_that_gives_the_value_back() {
        for v in [0.0, 1.0, -1.0, 127.0, -128.0, 3.0] {
            assert_eq!(width_of(v), SMALL, "{v}");
        }
        // −0 is no i8; 128, 0.5 and 2¹⁰⁰ are f32 values; 0.1 and 2⁻¹⁵⁰ are not.
        for v in [-0.0, 128.0, -129.0, 0.5, 2f64.powi(100), f64::from(0.1f32)] {
            assert_eq!(width_of(v), SINGLE, "{v}");
        }
        for v in [0.1, 1e300, 2f64.powi(-150), 1.0 + f64::EPSILON] {
            assert_eq!(width_of(v), DOUBLE, "{v}");
        }
    }

    /// Every stored value is given back bit for bit by its column, and the
    /// column dot products of every pair of stored rows are the learner's
    /// (`dot_with`), bit for bit, whichever side is the query.
    fn check_columns(lr: &OnlineLearner) {
        let (n, d) = (lr.len(), lr.d);
        for (k, col) in lr.cols.iter().enumerate() {
            assert_eq!(col.len(), n);
            for i in 0..n {
                assert_eq!(
                    col.get(i).to_bits(),
                    lr.x[i * d + k].to_bits(),
                    "x[{i}, {k}]"
                );
            }
        }
        let nz: Vec<_> = (0..n).map(|q| nonzeros(lr.row(q))).collect();
        let mut out = vec![f64::NAN; n * n];
        column_dots(&lr.cols, &nz, 0, n, &mut out, n);
        for q in 0..n {
            for i in 0..n {
                let got = out[q * n + i].to_bits();
                assert_eq!(got, lr.dot_with(i, &lr.query(q)).to_bits(), "rows {i}, {q}");
                assert_eq!(got, lr.dot_with(q, &lr.query(i)).to_bits(), "rows {q}, {i}");
            }
        }
    }

    fn widths(lr: &OnlineLearner) -> Vec<u8> {
        lr.cols.iter().map(Column::width).collect()
    }

    #[test]
    fn columns_widen_for_new_values_and_narrow_when_rebuilt() {
        // Small integers in every column, some zero, over two tiles.
        let (n, d) = (COLUMN_TILE + 40, 5);
        let x: Vec<f64> = (0..n * d)
            .map(|k| ((k * 7919 + 13) % 11) as f64 - 5.0)
            .map(|v| if v.abs() < 2.0 { 0.0 } else { v })
            .collect();
        let state = LearnerState {
            x,
            y: (0..n)
                .map(|i| if i % 3 == 0 { 1.0 } else { -1.0 })
                .collect(),
            cls: vec![0; n],
            seen: (0..n as i64).collect(),
            alpha: vec![0.0; n],
            g: vec![0.0; n],
            alive: vec![true; n],
            ..LearnerState::default()
        };
        let mut lr = OnlineLearner::from_state(KernelKind::Linear, d, state).unwrap();
        assert_eq!(widths(&lr), [SMALL; 5]);
        check_columns(&lr);
        // A batch with an f32 value in column 1, −0 in column 3 and a
        // float64 one in column 2: reserved (widened) before it is stored.
        let batch = [
            [2.0, 0.5, 0.0, -0.0, 1.0],
            [0.0, 3.0, 0.1, 0.0, -4.0],
            [1.0, -0.25, 1.0 / 3.0, 2.0, 0.0],
        ];
        let flat: Vec<f64> = batch.iter().flatten().copied().collect();
        lr.reserve(&flat, batch.len()).unwrap();
        assert_eq!(widths(&lr), [SMALL, SINGLE, DOUBLE, SINGLE, SMALL]);
        for (k, row) in batch.iter().enumerate() {
            lr.append(row, sq_norm(row), 1.0, 0, (n + k) as i64, 0.0);
            assert_eq!(widths(&lr), [SMALL, SINGLE, DOUBLE, SINGLE, SMALL]);
        }
        check_columns(&lr);
        // Stored without a reservation, a value still widens its column.
        let row = [1e300, 0.0, 0.0, 0.0, 0.75];
        lr.append(&row, sq_norm(&row), -1.0, 0, (n + 3) as i64, 0.0);
        assert_eq!(widths(&lr), [DOUBLE, SINGLE, DOUBLE, SINGLE, SINGLE]);
        check_columns(&lr);
        // The wide rows forgotten, with a third of the others: compaction
        // rebuilds the columns, as narrow as the kept values allow.
        for i in (0..n).step_by(3).chain(n..n + 4) {
            lr.forget(i);
        }
        lr.count();
        lr.maybe_compact();
        assert_eq!(lr.len(), n - n.div_ceil(3));
        assert_eq!(widths(&lr), [SMALL; 5]);
        check_columns(&lr);
    }

    #[test]
    fn one_batch_learns_what_one_example_at_a_time_learns() {
        // Batches span several blocks of dot products and compactions.
        let (x, y, d) = mixed_stream(400, 13);
        let m = y.len();
        let seen: Vec<i64> = (0..m as i64).collect();
        let cls = vec![0; m];
        let kind = KernelKind::Rbf { gamma: 1.0 };
        // A narrow band: examples are forgotten, and the store compacted.
        let narrow = OnlineOptions {
            epsilon: 0.05,
            c: 10.0,
            ..OnlineOptions::default()
        };
        for opts in [
            narrow.clone(),
            OnlineOptions {
                max_support: Some(40),
                ..narrow
            },
        ] {
            let mut whole = OnlineLearner::new(kind, d).unwrap();
            whole.learn(&x, &y, &cls, &seen, &opts).unwrap();
            let mut single = OnlineLearner::new(kind, d).unwrap();
            let mut compacted = false;
            for k in 0..m {
                let before = single.len();
                let row = &x[k * d..(k + 1) * d];
                single
                    .learn(row, &y[k..=k], &cls[k..=k], &seen[k..=k], &opts)
                    .unwrap();
                compacted |= single.len() < before;
            }
            assert!(compacted);
            assert_eq!(whole.state(), single.state());
            // The budget's removals come after `retire`, so an example
            // without a multiplier may then lie beyond the band until the
            // next update: with a budget only the other invariants hold.
            let band = if opts.max_support.is_some() {
                OnlineOptions {
                    epsilon: f64::INFINITY,
                    ..opts.clone()
                }
            } else {
                opts.clone()
            };
            check_invariants(&whole, &band);
        }
    }

    #[test]
    fn slack_and_bias_are_the_sums_over_the_kept_examples() {
        let (x, y) = stream(300, 14);
        let opts = OnlineOptions::default();
        let lr = learner(KernelKind::Rbf { gamma: 2.0 }, &x, &y, &opts);
        let kept: Vec<usize> = (0..lr.len()).filter(|&i| lr.alive[i]).collect();
        assert!(kept.len() < lr.len(), "some stored rows are forgotten");
        let xi: f64 = kept
            .iter()
            .map(|&i| (1.0 - lr.y[i] * (lr.g[i] + lr.b)).max(0.0).powi(2))
            .sum();
        assert!((lr.slack_sum() - xi).abs() <= 1e-12 * xi.max(1.0));
        let (mut ub, mut lb, mut sum, mut free) = (f64::INFINITY, f64::NEG_INFINITY, 0.0, 0);
        for &i in &kept {
            let (a, y, v) = (lr.alpha[i], lr.y[i], lr.g[i] - lr.y[i]);
            if a > 0.0 && a < opts.c {
                sum += v;
                free += 1;
            } else if (a >= opts.c) == (y < 0.0) {
                ub = ub.min(v);
            } else {
                lb = lb.max(v);
            }
        }
        assert!(free > 0);
        let want = -crate::solver::smo::rho_from(sum, free, ub, lb);
        assert!((lr.global_bias(opts.c) - want).abs() <= 1e-12);
    }

    #[test]
    fn reprocessing_brings_the_kept_examples_nearer_the_optimum() {
        let (x, y) = stream(300, 10);
        let kind = KernelKind::Rbf { gamma: 2.0 };
        let run = |reprocess: usize| {
            let opts = OnlineOptions {
                reprocess,
                ..OnlineOptions::default()
            };
            let lr = learner(kind, &x, &y, &opts);
            check_invariants(&lr, &opts);
            violation(&lr, opts.c)
        };
        let (plain, repaired) = (run(0), run(3));
        assert!(repaired < 0.5 * plain, "{repaired} vs {plain}");
    }

    #[test]
    fn well_classified_examples_change_nothing() {
        let (x, y) = stream(200, 3);
        let opts = OnlineOptions::default();
        let mut lr = learner(KernelKind::Rbf { gamma: 2.0 }, &x, &y, &opts);
        let before = lr.state();
        // A probe far on its own side (the margin is largest there).
        let (xt, yt) = stream(400, 4);
        let f = lr.decision(&xt).unwrap();
        let k = (0..400)
            .max_by(|&a, &b| (yt[a] * f[a]).total_cmp(&(yt[b] * f[b])))
            .unwrap();
        assert!(yt[k] * f[k] >= 1.0);
        let rep = lr
            .learn(&xt[2 * k..2 * k + 2], &yt[k..=k], &[0], &[999], &opts)
            .unwrap();
        assert!(!rep.steps[0].updated && rep.steps[0].neighbourhood == 0);
        let after = lr.state();
        let n = before.alpha.len();
        assert_eq!(after.alpha[..n], before.alpha[..]);
        assert!(after.alpha[n..].iter().all(|&a| a == 0.0));
        assert_eq!(after.b, before.b);
        // Kept (with α = 0) only in the band.
        let kept = after.x.len() > before.x.len();
        assert_eq!(kept, yt[k] * f[k] <= 1.0 + opts.epsilon);
        assert_eq!(after.t, before.t + 1);
    }

    #[test]
    fn the_threshold_controls_the_neighbourhood() {
        let (x, y) = stream(250, 5);
        let kind = KernelKind::Rbf { gamma: 2.0 };
        let mean_size = |eta: f64| {
            let mut lr = OnlineLearner::new(kind, 2).unwrap();
            let opts = OnlineOptions {
                threshold: eta,
                ..OnlineOptions::default()
            };
            let seen: Vec<i64> = (0..250).collect();
            let rep = lr.learn(&x, &y, &vec![0; 250], &seen, &opts).unwrap();
            let up: Vec<_> = rep.steps.iter().filter(|s| s.n_solves > 0).collect();
            for s in &up {
                assert_eq!(s.n_solves + 1, s.neighbourhood);
            }
            up.iter().map(|s| s.neighbourhood as f64).sum::<f64>() / up.len() as f64
        };
        let (big, mid, small) = (mean_size(100.0), mean_size(0.01), mean_size(1e-4));
        assert_eq!(big, 2.0); // the first working set already meets the level
        assert!(big < mid && mid < small, "{big} {mid} {small}");
    }

    #[test]
    fn state_round_trip_continues_identically() {
        let (x, y) = stream(300, 6);
        let opts = OnlineOptions {
            max_support: Some(30),
            ..OnlineOptions::default()
        };
        let kind = KernelKind::Rbf { gamma: 2.0 };
        let seen: Vec<i64> = (0..300).collect();
        let cls = vec![0; 300];
        let mut a = OnlineLearner::new(kind, 2).unwrap();
        a.learn(&x[..300], &y[..150], &cls[..150], &seen[..150], &opts)
            .unwrap();
        let mut b = OnlineLearner::from_state(kind, 2, a.state()).unwrap();
        let ra = a
            .learn(&x[300..], &y[150..], &cls[150..], &seen[150..], &opts)
            .unwrap();
        let rb = b
            .learn(&x[300..], &y[150..], &cls[150..], &seen[150..], &opts)
            .unwrap();
        assert_eq!(a.state(), b.state());
        let strip = |r: &LearnReport| -> Vec<StepRecord> {
            r.steps
                .iter()
                .map(|s| StepRecord { seconds: 0.0, ..*s })
                .collect()
        };
        assert_eq!(strip(&ra), strip(&rb));
        assert!(a.n_support() <= 30);
        check_invariants(&a, &opts);
    }

    #[test]
    fn rebatch_keeps_everything_and_matches_the_batch_svm() {
        let (x, y) = stream(60, 7);
        let opts = OnlineOptions {
            rebatch: true,
            tol: 1e-8,
            ..OnlineOptions::default()
        };
        let kind = KernelKind::Rbf { gamma: 2.0 };
        let lr = learner(kind, &x, &y, &opts);
        assert_eq!(lr.n_alive(), 60);
        check_invariants(&lr, &opts);
        let batch = DualProblem {
            source: KernelSource::dense(kind, Rows::new(x.clone(), 60, 2).unwrap()).unwrap(),
            y: y.clone(),
            p: None,
            upper: vec![1.0; 60],
            alpha0: None,
            active: None,
            constraint: Constraint::Equality,
            start: Default::default(),
            twins: None,
        }
        .solve(&SolverOptions {
            tol: 1e-8,
            ..SolverOptions::default()
        })
        .unwrap();
        for (a, b) in lr.alpha.iter().zip(&batch.alpha) {
            assert!((a - b).abs() < 1e-5);
        }
        assert!((lr.b + batch.rho).abs() < 1e-5);
    }

    #[test]
    fn other_kernels_keep_the_invariants() {
        let (x, y) = stream(120, 8);
        let opts = OnlineOptions {
            max_neighbors: 10,
            ..OnlineOptions::default()
        };
        for kind in [
            KernelKind::Linear,
            KernelKind::Poly {
                gamma: 0.5,
                coef0: 1.0,
                degree: 3,
            },
            KernelKind::Sigmoid {
                gamma: 0.5,
                coef0: 0.0,
            },
        ] {
            let lr = learner(kind, &x, &y, &opts);
            check_invariants(&lr, &opts);
        }
    }

    #[test]
    fn one_class_so_far_is_a_constant_machine() {
        let mut lr = OnlineLearner::new(KernelKind::Rbf { gamma: 1.0 }, 1).unwrap();
        let opts = OnlineOptions::default();
        let rep = lr
            .learn(&[0.0, 1.0], &[-1.0, -1.0], &[0, 0], &[0, 1], &opts)
            .unwrap();
        assert_eq!(lr.bias(), -1.0);
        assert_eq!(rep.updates, 0);
        assert_eq!(lr.decision(&[5.0]).unwrap(), vec![-1.0]);
    }

    #[test]
    fn iteration_caps_are_reported() {
        let (x, y) = stream(100, 9);
        let opts = OnlineOptions {
            c: 100.0,
            max_iter: Some(1),
            threshold: 10.0,
            ..OnlineOptions::default()
        };
        let mut lr = OnlineLearner::new(KernelKind::Rbf { gamma: 2.0 }, 2).unwrap();
        let seen: Vec<i64> = (0..100).collect();
        let rep = lr.learn(&x, &y, &vec![0; 100], &seen, &opts).unwrap();
        assert!(rep.unconverged > 0 && rep.unconverged <= rep.solves);
    }

    #[test]
    fn bad_input_is_rejected() {
        assert!(OnlineLearner::new(KernelKind::Precomputed, 2).is_err());
        let mut lr = OnlineLearner::new(KernelKind::Linear, 2).unwrap();
        let opts = OnlineOptions::default();
        assert!(lr.learn(&[1.0; 3], &[1.0], &[0], &[0], &opts).is_err());
        assert!(lr.learn(&[1.0; 2], &[2.0], &[0], &[0], &opts).is_err());
        assert!(lr
            .learn(&[f64::NAN, 1.0], &[1.0], &[0], &[0], &opts)
            .is_err());
        let bad = OnlineOptions {
            threshold: 0.0,
            ..OnlineOptions::default()
        };
        assert!(lr.learn(&[1.0; 2], &[1.0], &[0], &[0], &bad).is_err());
        let state = LearnerState {
            y: vec![1.0],
            ..LearnerState::default()
        };
        assert!(OnlineLearner::from_state(KernelKind::Linear, 2, state).is_err());
    }

    #[test]
    fn kernel_values_outside_f64_are_rejected_up_front() {
        let poly = KernelKind::Poly {
            gamma: 1e-300,
            coef0: 0.0,
            degree: 3,
        };
        let opts = OnlineOptions::default();
        let mut lr = OnlineLearner::new(poly, 2).unwrap();
        let err = lr
            .learn(&[1e3, -5.0], &[1.0], &[0], &[0], &opts)
            .unwrap_err();
        assert!(err.to_string().contains("underflow float64"), "{err}");
        assert_eq!(lr.len(), 0);
        // A later batch is checked together with the kept examples.
        let mut lr = OnlineLearner::new(KernelKind::Linear, 2).unwrap();
        lr.learn(&[1.0, 2.0], &[1.0], &[0], &[0], &opts).unwrap();
        let err = lr
            .learn(&[1e300, 0.0], &[-1.0], &[0], &[1], &opts)
            .unwrap_err();
        assert!(err.to_string().contains("overflow float64"), "{err}");
        assert_eq!(lr.len(), 1);
    }
}
