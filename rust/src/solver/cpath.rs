//! One dual solved along increasing values of `C` on a single Hessian, and
//! scored on held-out rows: the inner loop of a cross-validated choice of
//! `C` (the Python `SVCCV`/`SVRCV`).
//!
//! For each `C` the problem is `min ½αᵀQα + pᵀα`, `0 ≤ α_t ≤ C·w_t`,
//! `yᵀα = 0`. As `C` grows the boxes only widen, so the previous solution is
//! a feasible start (the α seeding of DeCoste & Wagstaff, "Alpha seeding for
//! support vector machines", KDD 2000), and its gradient `G = Qα + p` is
//! still the gradient there. Before each solve the multipliers that sat at
//! their old bounds are moved towards the new ones ([`move_bounded`]: each
//! class by one factor, so the gradient moves by the classes' shares of the
//! last solve's `Ḡ`, instead of the solver moving them a pair at a time).
//! The Hessian, with its column cache, is made once for the path; the
//! solver's shrinking leaves it permuted, which [`Tracked`] follows so that
//! each solve is posed in the matrix's current order instead of swapping it
//! back.
//!
//! The held-out decision values `Σ_t α_t y_t K(x_t, v) − ρ` come from a
//! second source over the held-out rows followed by the training rows, or
//! from a kernel matrix shared by every fold ([`HeldOutKernel::Gram`], which
//! also serves the training rows in place): the kernel column of a support
//! vector against the held-out rows is computed or gathered once for the
//! path (kept while they fit in the cache budget).

use std::collections::HashMap;

use crate::error::{value_error, Result};
use crate::kernel::{check_indices, Gram, GramRow, KernelSource};
use crate::precision::{Precision, QValue};
use crate::runtime::control::Control;
use crate::solver::qmatrix::{ColumnJob, KernelQ, QMatrix, SourceValue, Tracked};
use crate::solver::smo::{self, GivenGradient, Stopping};

/// The solver settings of a path.
#[derive(Clone, Debug)]
pub struct PathSettings {
    /// Stopping tolerance of every solve.
    pub tol: f64,
    /// Iteration cap per solve; `None`: `max(10⁷, 100·n)`.
    pub max_iter: Option<u64>,
    /// Shrinking heuristic.
    pub shrinking: bool,
    /// Bytes of training kernel columns cached, and at most as many of
    /// held-out kernel columns.
    pub cache_bytes: usize,
    /// The kernel values' arithmetic.
    pub precision: Precision,
}

/// Where the held-out kernel values come from.
pub enum HeldOutKernel {
    /// A source over the held-out rows, then the training rows in variable
    /// order: a support vector's column is computed once for the path.
    Rows(KernelSource),
    /// The values themselves, `K(x_t, v)` at `[t · n_valid + v]` (row-major
    /// `m × n_valid`), as from a precomputed kernel.
    Block(Vec<f64>),
    /// Columns of a shared kernel matrix over every row: `K(x_t, v)` is
    /// `gram[row_of[t]][valid[v]]`, read in place.
    Gram { gram: Gram, valid: Vec<usize> },
}

/// The problem of a path: the training source (one row per variable), the
/// held-out kernel, labels, linear term, box weights and the increasing `C`
/// values.
pub struct PathProblem {
    pub train: KernelSource,
    pub valid: HeldOutKernel,
    pub n_valid: usize,
    /// Each variable's data row (variables on the same row share a held-out
    /// column).
    pub row_of: Vec<usize>,
    pub y: Vec<f64>,
    pub p: Vec<f64>,
    pub weights: Vec<f64>,
    pub cs: Vec<f64>,
    /// When to stop the path early (`None`: solve every `C`).
    pub early_stop: Option<EarlyStop>,
    /// Whether the result keeps each solved `C`'s multipliers.
    pub keep_alpha: bool,
}

/// How many `C` values in a row must be clearly beaten before a path stops.
pub const PATIENCE: usize = 2;

/// Stops a path once its held-out loss has been clearly worse than the best
/// it reached, for [`PATIENCE`] values of `C` in a row: the `C` values after
/// those are left unsolved (their decision values NaN). Clearly worse: the
/// 0-1 error over the rows of nonzero `target` (labels ±1) more than
/// `margin` binomial standard errors (at the best error) above the best; or,
/// for `regression`, the mean squared error over every row (targets real)
/// more than `margin · √(2/n)` of the best above it (the standard error of
/// a mean of `n` squared Gaussian residuals).
#[derive(Clone, Debug)]
pub struct EarlyStop {
    pub target: Vec<f64>,
    pub regression: bool,
    pub margin: f64,
}

impl EarlyStop {
    /// The loss of one `C`'s held-out decision values, and how many rows it
    /// averages over.
    fn loss(&self, decision: &[f64]) -> (f64, usize) {
        if self.regression {
            let n = decision.len();
            let sq: f64 = decision
                .iter()
                .zip(&self.target)
                .map(|(d, t)| (d - t) * (d - t))
                .sum();
            (sq / n.max(1) as f64, n)
        } else {
            let (mut wrong, mut n) = (0usize, 0usize);
            for (&d, &t) in decision.iter().zip(&self.target) {
                if t != 0.0 {
                    n += 1;
                    if (d > 0.0) != (t > 0.0) {
                        wrong += 1;
                    }
                }
            }
            (wrong as f64 / n.max(1) as f64, n)
        }
    }

    /// Whether `loss` is clearly worse than `best` over `n` rows.
    fn beaten(&self, loss: f64, best: f64, n: usize) -> bool {
        let n = n.max(1) as f64;
        if self.regression {
            loss > best * (1.0 + self.margin * (2.0 / n).sqrt())
        } else {
            // At least one error's worth of spread, so that a perfect best
            // does not make every later error count.
            let spread = (best * (1.0 - best)).max(1.0 / n) / n;
            loss - best > self.margin * spread.sqrt()
        }
    }
}

/// Per `C`: the held-out decision values (row-major `n_C × n_valid`), the
/// iterations and whether the solve converged.
#[derive(Clone, Debug, Default)]
pub struct PathResult {
    pub decision: Vec<f64>,
    pub n_iter: Vec<u64>,
    pub converged: Vec<bool>,
    pub precision: Option<Precision>,
    /// The first `C` left unsolved by the early stop (`None`: all solved).
    pub stopped: Option<usize>,
    /// With `keep_alpha`: the multipliers in variable order, row-major
    /// `n_C × m` (NaN for the `C` values left unsolved); else empty.
    pub alpha: Vec<f64>,
}

impl PathProblem {
    fn validate(&self) -> Result<()> {
        let m = self.y.len();
        if self.train.n() != m
            || self.p.len() != m
            || self.weights.len() != m
            || self.row_of.len() != m
        {
            value_error!("the path's training rows, y, p and weights must have one entry each");
        }
        match &self.valid {
            HeldOutKernel::Rows(src) if src.n() != self.n_valid + m => {
                value_error!(
                    "the held-out source must hold the held-out rows then the training rows"
                );
            }
            HeldOutKernel::Block(v) if v.len() != self.n_valid * m => {
                value_error!("the held-out kernel block must hold m × n_valid values");
            }
            HeldOutKernel::Block(v) if v.iter().any(|x| !x.is_finite()) => {
                value_error!("the held-out kernel block contains NaN or infinity");
            }
            HeldOutKernel::Gram { gram, valid } => {
                if valid.len() != self.n_valid {
                    value_error!("the held-out rows must number n_valid");
                }
                check_indices(valid, gram.n(), "held-out row")?;
                check_indices(&self.row_of, gram.n(), "training row")?;
            }
            _ => {}
        }
        if self.y.iter().any(|&v| v != 1.0 && v != -1.0) {
            value_error!("y must contain only -1 and +1");
        }
        if self.weights.iter().any(|&w| !(w.is_finite() && w > 0.0)) {
            value_error!("the box weights must be positive and finite");
        }
        if self.cs.is_empty()
            || self.cs.iter().any(|&c| !(c.is_finite() && c > 0.0))
            || self.cs.windows(2).any(|w| w[1] <= w[0])
        {
            value_error!("Cs must be positive, finite and strictly increasing");
        }
        if self.p.iter().any(|v| !v.is_finite()) {
            value_error!("p must be finite");
        }
        if let Some(rule) = &self.early_stop {
            if rule.target.len() != self.n_valid || rule.target.iter().any(|t| !t.is_finite()) {
                value_error!("the early stop's targets must be finite, one per held-out row");
            }
            if !(rule.margin >= 0.0 && rule.margin.is_finite()) {
                value_error!("the early stop's margin must be finite and non-negative");
            }
        }
        Ok(())
    }

    /// Solves the path; polls `ctl` between and within the solves.
    pub fn solve(self, settings: &PathSettings, ctl: &Control) -> Result<PathResult> {
        self.validate()?;
        let path = self.train.precision(settings.precision, settings.tol)?;
        if path != Precision::Float64 {
            self.train.prepare_f32()?;
            if let HeldOutKernel::Rows(src) = &self.valid {
                src.prepare_f32()?;
            }
        }
        let mut out = match path {
            Precision::Float64 => self.run::<f64>(settings, ctl)?,
            _ => self.run::<f32>(settings, ctl)?,
        };
        out.precision = Some(path);
        Ok(out)
    }

    fn run<T: SourceValue>(self, settings: &PathSettings, ctl: &Control) -> Result<PathResult> {
        let m = self.y.len();
        let n_valid = self.n_valid;
        let n_c = self.cs.len();
        let max_iter = settings
            .max_iter
            .unwrap_or_else(|| 10_000_000u64.max(100 * m as u64));
        let mut q = KernelQ::<T>::new(self.train, &self.y, settings.cache_bytes);
        // perm[pos]: the variable at the matrix's position pos.
        let mut perm: Vec<usize> = (0..m).collect();
        let mut alpha = vec![0.0; m];
        let mut grad = self.p.clone();
        // Ḡ of the last solve, in variable order.
        let mut grad_bar = vec![0.0; m];
        let mut started = false;
        let mut held = HeldOut::<T>::new(&self.valid, n_valid, settings.cache_bytes);
        let stop = Stopping {
            tol: settings.tol,
            max_iter,
            shrinking: settings.shrinking,
            ctl,
        };
        let mut result = PathResult {
            decision: vec![0.0; n_c * n_valid],
            n_iter: vec![0; n_c],
            converged: vec![true; n_c],
            precision: None,
            stopped: None,
            alpha: if self.keep_alpha {
                vec![f64::NAN; n_c * m]
            } else {
                Vec::new()
            },
        };
        let (mut best, mut beaten) = (f64::INFINITY, 0usize);
        for (k, &c) in self.cs.iter().enumerate() {
            ctl.check()?;
            // The problem in the matrix's current order.
            let at = |v: &[f64]| -> Vec<f64> { perm.iter().map(|&t| v[t]).collect() };
            let y_q = at(&self.y);
            let p_q = at(&self.p);
            let upper_q: Vec<f64> = perm.iter().map(|&t| c * self.weights[t]).collect();
            let mut alpha_q = at(&alpha);
            let mut grad_q = at(&grad);
            let bar_q = at(&grad_bar);
            let order = perm.clone();
            let res = {
                // perm follows every swap made on the matrix.
                let mut tracked = Tracked {
                    q: &mut q,
                    log: |i, j| perm.swap(i, j),
                };
                let grad_bar = if started {
                    let before: Vec<f64> = order
                        .iter()
                        .map(|&t| self.cs[k - 1] * self.weights[t])
                        .collect();
                    Some(move_bounded(
                        &mut tracked,
                        (&mut alpha_q, &mut grad_q, &bar_q),
                        &y_q,
                        (&before, &upper_q),
                        ctl,
                    )?)
                } else {
                    None
                };
                let start = grad_bar.as_ref().map(|grad_bar| GivenGradient {
                    grad: &grad_q,
                    grad_bar,
                });
                let dual = smo::Dual {
                    p: &p_q,
                    y: &y_q,
                    upper: &upper_q,
                    alpha: &alpha_q,
                };
                smo::solve_from(&mut tracked, &dual, start, &stop)?
            };
            started = true;
            let finite = res.rho.is_finite() && res.alpha.iter().all(|a| a.is_finite());
            if !finite {
                value_error!(
                    "the dual solution is not finite at C = {c}: the kernel values or C are too \
                     large for float64 arithmetic; scale the features or lower C"
                );
            }
            // Back to variable order (the result is in the order the solve
            // started from).
            for (pos, &t) in order.iter().enumerate() {
                alpha[t] = res.alpha[pos];
                grad[t] = res.gradient[pos];
                grad_bar[t] = res.grad_bar[pos];
            }
            result.n_iter[k] = res.n_iter;
            result.converged[k] = res.converged;
            if self.keep_alpha {
                result.alpha[k * m..(k + 1) * m].copy_from_slice(&alpha);
            }
            let row = &mut result.decision[k * n_valid..(k + 1) * n_valid];
            held.decision(&alpha, &self.y, &self.row_of, res.rho, row, ctl)?;
            if let Some(rule) = &self.early_stop {
                let (loss, n) = rule.loss(row);
                if k == 0 || loss < best {
                    best = loss;
                }
                beaten = if rule.beaten(loss, best, n) {
                    beaten + 1
                } else {
                    0
                };
                if beaten >= PATIENCE && k + 1 < n_c {
                    result.stopped = Some(k + 1);
                    result.decision[(k + 1) * n_valid..].fill(f64::NAN);
                    break;
                }
            }
        }
        Ok(result)
    }
}

/// Moves the variables at their bounds for the previous `C` (`before`)
/// towards the bounds for the next (`upper`, wider by one factor), keeping
/// `yᵀα = 0`: the class whose bounded multipliers sum to less moves all of
/// them onto their new bounds, the other class scales its bounded ones by
/// the factor that balances the sum. Variables at their bound mostly stay
/// there as `C` grows, and the solver would otherwise move them a pair at a
/// time.
///
/// Each class's bounded multipliers change by one factor, so the gradient
/// changes by that factor less one times the class's share of
/// `Ḡ = Σ_{t: α_t ≥ U_t} U_t Q_t`, the previous solve's (`bar`). One class's
/// share is summed from its columns, the other's is `Ḡ` less it: the
/// columns of the class with fewer bounded multipliers, one pass each,
/// instead of a column and up to two passes for every bounded multiplier.
/// Updates `G` and returns the new `Ḡ`, both in the matrix's order.
fn move_bounded<T: SourceValue, Q: QMatrix<T>>(
    q: &mut Q,
    (alpha, grad, bar): (&mut [f64], &mut [f64], &[f64]),
    y: &[f64],
    (before, upper): (&[f64], &[f64]),
    ctl: &Control,
) -> Result<Vec<f64>> {
    let m = alpha.len();
    let bounded: Vec<usize> = (0..m)
        .filter(|&t| alpha[t] > 0.0 && alpha[t] >= before[t])
        .collect();
    let Some(&first) = bounded.first() else {
        return Ok(vec![0.0; m]);
    };
    let ratio = upper[first] / before[first];
    let (mut pos, mut neg, mut n_pos) = (0.0, 0.0, 0usize);
    for &t in &bounded {
        if y[t] > 0.0 {
            pos += alpha[t];
            n_pos += 1;
        } else {
            neg += alpha[t];
        }
    }
    if pos == 0.0 || neg == 0.0 {
        // One class alone cannot move; its multipliers now sit inside
        // their wider boxes, so none is at a bound.
        return Ok(vec![0.0; m]);
    }
    // The factor of each class's bounded multipliers (at most `ratio`:
    // the balancing one can round above it).
    let (r_pos, r_neg) = if pos >= neg {
        (1.0 + (ratio - 1.0) * neg / pos, ratio)
    } else {
        (ratio, 1.0 + (ratio - 1.0) * pos / neg)
    };
    let (r_pos, r_neg) = (r_pos.min(ratio), r_neg.min(ratio));
    // The share of Ḡ summed from columns: the class with fewer.
    let sum_pos = 2 * n_pos <= bounded.len();
    let mut part = vec![0.0; m];
    // Scaled multipliers that still reach their new bound (by rounding).
    let mut reached = Vec::new();
    for &t in &bounded {
        ctl.check()?;
        let r = if y[t] > 0.0 { r_pos } else { r_neg };
        alpha[t] = if r == ratio {
            upper[t]
        } else {
            let new = (r * alpha[t]).min(upper[t]);
            if new >= upper[t] {
                reached.push(t);
            }
            new
        };
        if (y[t] > 0.0) == sum_pos {
            T::add_scaled_wide(&mut part, before[t], &q.column(t, m)[..m]);
        }
    }
    let (r_part, r_rest) = if sum_pos {
        (r_pos, r_neg)
    } else {
        (r_neg, r_pos)
    };
    for ((g, &b), &pt) in grad.iter_mut().zip(bar).zip(&part) {
        *g += (r_part - 1.0) * pt + (r_rest - 1.0) * (b - pt);
    }
    // A fully moved class stays at its bounds, now `ratio` times wider;
    // the other's multipliers are inside theirs, but for any that reached.
    let keep = |r: f64| if r == ratio { ratio } else { 0.0 };
    let (k_part, k_rest) = (keep(r_part), keep(r_rest));
    for (pt, &b) in part.iter_mut().zip(bar) {
        *pt = k_part * *pt + k_rest * (b - *pt);
    }
    for t in reached {
        ctl.check()?;
        T::add_scaled_wide(&mut part, upper[t], &q.column(t, m)[..m]);
    }
    Ok(part)
}

/// The held-out kernel columns of the support vectors, kept while they fit.
struct HeldOut<'a, T: SourceValue> {
    source: &'a HeldOutKernel,
    n_valid: usize,
    ones: Vec<T>,
    columns: HashMap<usize, Vec<T>>,
    budget: usize,
    scratch: Vec<T>,
}

impl<'a, T: SourceValue> HeldOut<'a, T> {
    fn new(source: &'a HeldOutKernel, n_valid: usize, cache_bytes: usize) -> Self {
        let n = match source {
            HeldOutKernel::Rows(src) => src.n(),
            HeldOutKernel::Block(_) | HeldOutKernel::Gram { .. } => 0,
        };
        HeldOut {
            source,
            n_valid,
            ones: vec![T::from_f64(1.0); n],
            columns: HashMap::new(),
            budget: cache_bytes / (std::mem::size_of::<T>() * n_valid.max(1)),
            scratch: vec![T::default(); n_valid],
        }
    }

    /// `out[v] = Σ_t α_t y_t K(x_t, v) − ρ`, summed in variable order.
    fn decision(
        &mut self,
        alpha: &[f64],
        y: &[f64],
        row_of: &[usize],
        rho: f64,
        out: &mut [f64],
        ctl: &Control,
    ) -> Result<()> {
        out.fill(-rho);
        if self.n_valid == 0 {
            return Ok(());
        }
        for (t, &a) in alpha.iter().enumerate() {
            if a == 0.0 {
                continue;
            }
            ctl.check()?;
            let coef = a * y[t];
            if let HeldOutKernel::Block(block) = self.source {
                let col = &block[t * self.n_valid..(t + 1) * self.n_valid];
                f64::add_scaled_wide(out, coef, col);
                continue;
            }
            let row = row_of[t];
            if !self.columns.contains_key(&row) {
                match self.source {
                    HeldOutKernel::Gram { gram, valid } => {
                        // Gathered once into a contiguous column.
                        match gram.row(row) {
                            GramRow::F64(values) => gather_into(&mut self.scratch, values, valid),
                            GramRow::F32(values) => gather_into(&mut self.scratch, values, valid),
                        }
                    }
                    HeldOutKernel::Rows(src) => {
                        let job = ColumnJob {
                            i: self.n_valid + t,
                            start: 0,
                            end: self.n_valid,
                            factor: T::from_f64(1.0),
                            scale: &self.ones,
                        };
                        T::fill(src, job, &mut self.scratch);
                    }
                    HeldOutKernel::Block(_) => {}
                }
                if self.columns.len() < self.budget {
                    self.columns.insert(row, self.scratch.clone());
                }
            }
            let col = self.columns.get(&row).unwrap_or(&self.scratch);
            T::add_scaled_wide(out, coef, col);
        }
        Ok(())
    }
}

/// `out[k] = values[idx[k]]`, converted to the solve's arithmetic.
fn gather_into<T: SourceValue, V: QValue>(out: &mut [T], values: &[V], idx: &[usize]) {
    for (o, &v) in out.iter_mut().zip(idx) {
        *o = T::from_f64(values[v].to_f64());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::{KernelKind, Rows};
    use crate::solver::problem::{DualProblem, SolverOptions};

    fn data(n: usize, d: usize) -> (Vec<f64>, Vec<f64>) {
        let mut x = Vec::with_capacity(n * d);
        let mut y = Vec::with_capacity(n);
        let mut s = 12345u64;
        for i in 0..n {
            for _ in 0..d {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                x.push(((s >> 33) as f64 / (1u64 << 31) as f64) - 0.5);
            }
            y.push(if (x[i * d] + 0.3 * x[i * d + 1]) > 0.0 {
                1.0
            } else {
                -1.0
            });
        }
        (x, y)
    }

    fn source(x: &[f64], d: usize, idx: &[usize]) -> KernelSource {
        let mut v = Vec::new();
        for &i in idx {
            v.extend_from_slice(&x[i * d..(i + 1) * d]);
        }
        let rows = Rows::new(v, idx.len(), d).unwrap();
        KernelSource::dense(KernelKind::Rbf { gamma: 2.0 }, rows).unwrap()
    }

    /// `G = Qα + p` and `Ḡ = Σ_{α_t ≥ U_t} U_t Q_t`, from the columns.
    fn gradients(q: &mut KernelQ<f64>, alpha: &[f64], upper: &[f64]) -> (Vec<f64>, Vec<f64>) {
        let m = alpha.len();
        let (mut g, mut bar) = (vec![-1.0; m], vec![0.0; m]);
        for t in 0..m {
            let col = q.column(t, m)[..m].to_vec();
            for s in 0..m {
                g[s] += alpha[t] * col[s];
                if alpha[t] >= upper[t] {
                    bar[s] += upper[t] * col[s];
                }
            }
        }
        (g, bar)
    }

    #[test]
    fn moved_bounds_keep_the_gradient_and_its_bound_part_exact() {
        // Per class, `n` multipliers at the bound 0.1 · w and one free:
        // balanced sums and unbalanced ones, with equal or mixed weights.
        let (x, _) = data(120, 3);
        let mut rounded_above = false;
        // (39 multipliers at 0.1 sum to a value whose balancing factor
        // rounds above 10.)
        for (n_pos, n_neg, mixed) in [
            (39, 39, false),
            (25, 25, true),
            (30, 12, true),
            (5, 40, true),
        ] {
            let idx: Vec<usize> = (0..120).collect();
            let y: Vec<f64> = (0..120).map(|t| if t < 60 { 1.0 } else { -1.0 }).collect();
            let w: Vec<f64> = (0..120)
                .map(|t| if mixed { [1.0, 0.5, 2.0][t % 3] } else { 1.0 })
                .collect();
            let before: Vec<f64> = w.iter().map(|w| 0.1 * w).collect();
            let upper: Vec<f64> = w.iter().map(|w| 1.0 * w).collect();
            let mut alpha = vec![0.0; 120];
            alpha[..n_pos].copy_from_slice(&before[..n_pos]);
            alpha[60..60 + n_neg].copy_from_slice(&before[60..60 + n_neg]);
            // Free multipliers of both classes, off their bounds.
            alpha[55] = 0.03;
            alpha[115] = 0.04;
            let (pos, neg): (f64, f64) = (0..120)
                .filter(|&t| alpha[t] >= before[t] && alpha[t] > 0.0)
                .fold((0.0, 0.0), |(p, n), t| {
                    if y[t] > 0.0 {
                        (p + alpha[t], n)
                    } else {
                        (p, n + alpha[t])
                    }
                });
            let ratio = upper[0] / before[0];
            let (big, small) = if pos >= neg { (pos, neg) } else { (neg, pos) };
            rounded_above |= 1.0 + (ratio - 1.0) * small / big > ratio;
            let balance_before: f64 = alpha.iter().zip(&y).map(|(a, y)| a * y).sum();
            let mut q = KernelQ::<f64>::new(source(&x, 3, &idx), &y, 1 << 22);
            let (mut grad, bar) = gradients(&mut q, &alpha, &before);
            let new_bar = move_bounded(
                &mut q,
                (&mut alpha, &mut grad, &bar),
                &y,
                (&before, &upper),
                &Control::none(),
            )
            .unwrap();
            let (want_g, want_bar) = gradients(&mut q, &alpha, &upper);
            for s in 0..120 {
                assert!(
                    (grad[s] - want_g[s]).abs() < 1e-12,
                    "{n_pos}/{n_neg}: G[{s}]"
                );
                assert!(
                    (new_bar[s] - want_bar[s]).abs() < 1e-12,
                    "{n_pos}/{n_neg}: Ḡ[{s}] {} vs {}",
                    new_bar[s],
                    want_bar[s]
                );
            }
            // The moves keep yᵀα.
            let balance: f64 = alpha.iter().zip(&y).map(|(a, y)| a * y).sum();
            assert!(
                (balance - balance_before).abs() < 1e-12,
                "{n_pos}/{n_neg}: yᵀα"
            );
        }
        assert!(
            rounded_above,
            "no case had a balancing factor above the ratio"
        );
    }

    #[test]
    fn path_matches_independent_solves() {
        let (n, d) = (400, 3);
        let (x, y) = data(n, d);
        let train: Vec<usize> = (0..300).collect();
        let valid: Vec<usize> = (300..n).collect();
        let cs = vec![0.1, 1.0, 10.0, 100.0];
        let mut all = valid.clone();
        all.extend(&train);
        let yt: Vec<f64> = train.iter().map(|&i| y[i]).collect();
        let problem = PathProblem {
            train: source(&x, d, &train),
            valid: HeldOutKernel::Rows(source(&x, d, &all)),
            n_valid: valid.len(),
            row_of: train.clone(),
            y: yt.clone(),
            p: vec![-1.0; train.len()],
            weights: vec![1.0; train.len()],
            cs: cs.clone(),
            early_stop: None,
            keep_alpha: true,
        };
        let settings = PathSettings {
            tol: 1e-6,
            max_iter: None,
            shrinking: true,
            cache_bytes: 1 << 24,
            precision: Precision::Float64,
        };
        let out = problem.solve(&settings, &Control::none()).unwrap();
        for (k, &c) in cs.iter().enumerate() {
            let sol = DualProblem {
                source: source(&x, d, &train),
                y: yt.clone(),
                p: None,
                upper: vec![c; train.len()],
                alpha0: None,
                active: None,
                constraint: crate::solver::problem::Constraint::Equality,
                start: Default::default(),
                twins: None,
            }
            .solve_with(
                &SolverOptions {
                    tol: 1e-6,
                    ..SolverOptions::default()
                },
                Precision::Float64,
            )
            .unwrap();
            let src = source(&x, d, &all);
            for v in 0..valid.len() {
                let f: f64 = (0..train.len())
                    .map(|t| sol.alpha[t] * yt[t] * src.eval(v, valid.len() + t))
                    .sum::<f64>()
                    - sol.rho;
                let g = out.decision[k * valid.len() + v];
                assert!(
                    (f - g).abs() < 1e-3 * (1.0 + f.abs()),
                    "C={c} v={v}: {f} vs {g}"
                );
            }
            assert!(out.converged[k]);
            // The kept multipliers: in the box, on yᵀα = 0, and the
            // independent solve's (the dual of an RBF kernel has one
            // solution).
            let kept = &out.alpha[k * train.len()..(k + 1) * train.len()];
            let balance: f64 = kept.iter().zip(&yt).map(|(a, y)| a * y).sum();
            assert!(
                balance.abs() < 1e-9 * c * train.len() as f64,
                "C={c}: {balance}"
            );
            for (t, (&a, &b)) in kept.iter().zip(&sol.alpha).enumerate() {
                assert!((0.0..=c).contains(&a), "C={c} t={t}: {a}");
                assert!((a - b).abs() < 1e-2 * c, "C={c} t={t}: {a} vs {b}");
            }
        }
        assert_eq!(out.alpha.len(), cs.len() * train.len());
    }
}
