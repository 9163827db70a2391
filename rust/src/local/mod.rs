//! Localized SVMs (H. Cheng, P.-N. Tan and R. Jin, "Localized Support Vector
//! Machine and Its Efficient Algorithm", SIAM SDM 2007): one dual per query.
//!
//! For each query (test example) `x_s` the C-SVC dual is solved with the
//! boxes `0 ≤ α_i ≤ C·σ(x_s, x_i)` instead of `C`, and the query is scored
//! by that model alone. The training kernel is built once by the caller
//! (a [`LocalKernel`]: the Gram matrix, borrowed, or features with a kernel
//! function) and every query's problem gathers its rows from it, so no kernel
//! value is derived twice and the Gram matrix is never copied whole. Training examples with `σ < threshold` are dropped from a query's
//! problem (their box is below `C·threshold`).
//!
//! Every query is solved on its own: it starts from the caller's `start`
//! (the global SVM's `α`, say) clipped to its boxes and rebalanced so that
//! `yᵀα = 0` ([`feasible_start`]), or from `α = 0`, so its result
//! does not depend on the other queries of the batch or on their order.
//! Consecutive queries with the same neighbourhood share one Hessian and its
//! cached columns.

pub mod primal;

use crate::error::{shape_error, value_error, Result};
use crate::kernel::{check_kernel_values, gather_square, KernelKind, KernelSource, TrainingData};
use crate::local::primal::{solve_primal, FeatureMajor, PrimalOutcome};
use crate::precision::{resolve, Magnitudes, Precision};
use crate::runtime::control::Control;
use crate::solver::qmatrix::{KernelQ, QMatrix, SourceValue, Tracked};
use crate::solver::smo;

/// The training kernel that every local problem is gathered from.
#[derive(Debug)]
pub enum LocalKernel<'a> {
    /// The square Gram matrix of the training examples, row-major.
    Gram { matrix: &'a [f64], n: usize },
    /// Features and a kernel function: local problems compute their columns.
    Source(KernelSource),
}

impl<'a> LocalKernel<'a> {
    /// The caller's training data: the Gram matrix, borrowed, for a
    /// precomputed kernel, else the feature rows, copied once.
    pub fn new(data: &TrainingData<'a>) -> Result<Self> {
        match data.kind() {
            KernelKind::Precomputed => LocalKernel::gram(data.values(), data.n()),
            _ => Ok(LocalKernel::Source(KernelSource::from_data(data, None)?)),
        }
    }

    /// A borrowed Gram matrix, checked once: square and finite.
    pub fn gram(matrix: &'a [f64], n: usize) -> Result<Self> {
        check_kernel_values(matrix, n, n, "the Gram matrix")?;
        Ok(LocalKernel::Gram { matrix, n })
    }

    /// Number of training examples.
    pub fn n(&self) -> usize {
        match self {
            LocalKernel::Gram { n, .. } => *n,
            LocalKernel::Source(s) => s.n(),
        }
    }

    /// The path every local problem is solved in, for `tol`: decided once
    /// on the whole training kernel ([`crate::precision::resolve`]).
    pub fn precision(&self, requested: Precision, tol: f64) -> Result<Precision> {
        match self {
            LocalKernel::Gram { matrix, .. } => resolve(
                requested,
                KernelKind::Precomputed,
                Magnitudes::of_values(matrix),
                Some(tol),
            ),
            LocalKernel::Source(s) => s.precision(requested, tol),
        }
    }

    /// The kernel of the listed examples, as a solver source: the block of
    /// the Gram matrix (`8·k²` bytes for `k` examples), or their feature rows.
    fn subset(&self, idx: &[usize]) -> Result<KernelSource> {
        let hint = "use a kernel function instead of a precomputed Gram matrix, \
                    a smaller bandwidth or a larger similarity_threshold";
        match self {
            LocalKernel::Gram { matrix, n } => Ok(KernelSource::checked_gram(
                gather_square(matrix, *n, idx, hint)?,
                idx.len(),
            )),
            LocalKernel::Source(s) => s.subset(idx),
        }
    }
}

/// How a query's neighbourhood turned out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum LocalStatus {
    /// Both classes present: an SVM was solved.
    Solved = 0,
    /// Only `y = +1` examples have `σ ≥ threshold`: the decision is `+1`.
    OnlyPositive = 1,
    /// Only `y = −1` examples: the decision is `−1`.
    OnlyNegative = 2,
    /// No example has `σ ≥ threshold`: the decision is `0`.
    Empty = 3,
}

/// Settings shared by every query.
#[derive(Clone, Debug)]
pub struct LocalOptions {
    /// The regularisation `C` (boxes are `C·σ_i`).
    pub c: f64,
    /// Examples with `σ < threshold` are left out of a query's problem.
    pub threshold: f64,
    /// SMO's stopping tolerance on the maximal KKT violation.
    pub tol: f64,
    /// Iteration cap per query; `None` means [`local_iteration_cap`] of the
    /// query's problem size.
    pub max_iter: Option<u64>,
    /// SMO's shrinking heuristic.
    pub shrinking: bool,
    /// Start each query from the caller's `start` vector (when given).
    pub warm_start: bool,
    /// The kernel path of the local problems ([`crate::precision`]).
    pub precision: Precision,
    /// Polled per query and inside each query's SMO; once cancelled the
    /// batch returns [`crate::Error::Interrupted`].
    pub control: Control,
    /// Bytes of kernel columns each local problem may cache (at least two
    /// columns are always held). Problems are solved one after another, so
    /// this bounds the cache of the whole call.
    pub cache_bytes: usize,
}

/// Per-query results, in query order.
#[derive(Clone, Debug, Default)]
pub struct LocalResult {
    /// `Σ α_i y_i K(x_i, x_s) − ρ`, or `±1` / `0` per [`LocalStatus`].
    pub decision: Vec<f64>,
    pub status: Vec<LocalStatus>,
    /// SMO iterations (0 when no SVM was solved).
    pub n_iter: Vec<u64>,
    /// Examples in the query's problem (`σ ≥ threshold`).
    pub n_active: Vec<usize>,
    /// Support vectors of the query's model.
    pub n_support: Vec<usize>,
    /// False when the iteration cap stopped the query's solver.
    pub converged: Vec<bool>,
    /// The path the local problems were solved in (`Float32` or `Float64`).
    pub precision: Precision,
    /// With the primal solver: each query's local model `(w, b)` (`d + 1`
    /// values per query, query-major; zeros where no SVM was solved).
    pub primal: Vec<f64>,
}

/// The linear kernel's features for the primal solver
/// ([`crate::local::primal`]): with them every query is first solved in the
/// primal, and SMO solves only the queries it cannot certify.
#[derive(Clone, Copy, Debug)]
pub struct PrimalInput<'a> {
    /// The training examples, row-major, `n × d` (the ones the linear
    /// kernel of `base` is built from).
    pub x: &'a [f64],
    /// Number of features.
    pub d: usize,
    /// `(w, b)`, `d + 1` values, every query's start with `warm_start`
    /// (typically the global SVM's); zero otherwise.
    pub start: Option<&'a [f64]>,
    /// Newton steps per query at most (also at most the query's iteration
    /// cap); a query that needs more is finished by SMO.
    pub max_steps: u64,
    /// Starts nearer than `start`: training examples (`index`, sorted) and
    /// their own local solutions (`solutions`, `(w, b)` each, `d + 1`
    /// values per example), e.g. computed at fit. With `warm_start`, a
    /// query starts from the solution of the listed example of largest
    /// similarity (the first of equals; `start` when all are 0).
    pub anchors: Option<Anchors<'a>>,
    /// The queries' features, row-major, `m × d`: with them each decision
    /// value is `w·x_s + b` from the query's model, and `cross` is not
    /// read (it may be empty).
    pub queries: Option<&'a [f64]>,
}

/// See [`PrimalInput::anchors`].
#[derive(Clone, Copy, Debug)]
pub struct Anchors<'a> {
    pub index: &'a [usize],
    pub solutions: &'a [f64],
}

/// The default [`PrimalInput::max_steps`].
pub const PRIMAL_STEP_CAP: u64 = 300;

/// Solves one localized SVM per query.
///
/// `sigma` and `cross` are query-major, `m × n`: `sigma[s·n + i] = σ(x_s,
/// x_i)` and `cross[s·n + i] = K(x_i, x_s)`. `y` holds `±1` for the `n`
/// training examples of `base`. `start`, when given with
/// `opts.warm_start`, holds one `α_i ≥ 0` per training example (typically
/// the global SVM's solution): every query starts from it, moved into its
/// own boxes ([`feasible_start`]), so a query's result does not depend on
/// the other queries of the batch; without it every query starts at `α = 0`.
///
/// Consecutive queries with the same neighbourhood share one Hessian (its
/// cached columns), restored to the training order after each solve, so the
/// columns each one reads are the values a fresh Hessian would compute.
pub fn solve_local(
    base: &LocalKernel<'_>,
    y: &[f64],
    sigma: &[f64],
    cross: &[f64],
    start: Option<&[f64]>,
    opts: &LocalOptions,
) -> Result<LocalResult> {
    solve_local_with(base, y, sigma, cross, start, None, opts)
}

/// [`solve_local`], with the primal solver when `primal` is given (the
/// kernel must then be linear): each query is solved in the primal, in
/// `f64`, and certified by SMO's stopping test; a query it cannot certify
/// within its step cap continues in SMO from the primal iterate's
/// multipliers, in `f64` too. `n_iter` then counts Newton steps plus SMO
/// iterations (within the query's iteration cap).
pub fn solve_local_with(
    base: &LocalKernel<'_>,
    y: &[f64],
    sigma: &[f64],
    cross: &[f64],
    start: Option<&[f64]>,
    primal: Option<PrimalInput<'_>>,
    opts: &LocalOptions,
) -> Result<LocalResult> {
    let n = base.n();
    if y.len() != n {
        shape_error!("y has {} entries but there are {n} examples", y.len());
    }
    if let Some(bad) = y.iter().find(|&&v| v != 1.0 && v != -1.0) {
        value_error!("y must contain only -1 and +1, found {bad}");
    }
    if n == 0 || !sigma.len().is_multiple_of(n) {
        shape_error!(
            "sigma has {} entries, not a multiple of the {n} training examples",
            sigma.len()
        );
    }
    let by_features = primal.is_some_and(|p| p.queries.is_some());
    if cross.len() != sigma.len() && !(by_features && cross.is_empty()) {
        shape_error!(
            "the query kernel has {} entries but sigma has {}",
            cross.len(),
            sigma.len()
        );
    }
    if let Some(st) = start {
        if st.len() != n {
            shape_error!("start has {} entries but there are {n} examples", st.len());
        }
        if let Some(bad) = st.iter().find(|&&v| !(v.is_finite() && v >= 0.0)) {
            value_error!("start values must be finite and non-negative, found {bad}");
        }
    }
    if let Some(bad) = sigma.iter().find(|&&v| !(v.is_finite() && v >= 0.0)) {
        value_error!("similarities must be finite and non-negative, found {bad}");
    }
    if !(opts.c.is_finite() && opts.c > 0.0) {
        value_error!("C must be a positive finite number, got {}", opts.c);
    }
    if !(opts.threshold.is_finite() && opts.threshold >= 0.0) {
        value_error!(
            "threshold must be a finite non-negative number, got {}",
            opts.threshold
        );
    }
    if !(opts.tol.is_finite() && opts.tol > 0.0) {
        value_error!("tol must be a positive finite number, got {}", opts.tol);
    }
    if let Some(p) = primal {
        if p.d == 0 || p.x.len() != n.saturating_mul(p.d) {
            shape_error!(
                "the primal solver's features have {} values, not {n} × {}",
                p.x.len(),
                p.d
            );
        }
        if let Some(a) = p.anchors {
            if a.solutions.len() != a.index.len().saturating_mul(p.d + 1)
                || a.index.iter().any(|&i| i >= n)
                || a.solutions.iter().any(|v| !v.is_finite())
            {
                value_error!(
                    "anchors must be {} training indices below {n} with {} finite values each",
                    a.index.len(),
                    p.d + 1
                );
            }
        }
        if let Some(q) = p.queries {
            if q.len() != (sigma.len() / n).saturating_mul(p.d) {
                shape_error!(
                    "the queries' features have {} values, not {} × {}",
                    q.len(),
                    sigma.len() / n,
                    p.d
                );
            }
        }
        if let Some(v) = p.start {
            if v.len() != p.d + 1 || v.iter().any(|v| !v.is_finite()) {
                value_error!(
                    "the primal start must be {} finite values (w, b), got {}",
                    p.d + 1,
                    v.len()
                );
            }
        }
    }
    // With the primal solver SMO only finishes what it could not certify
    // (huge C, say), where float32 kernel values would not reach `tol`.
    let path = match primal {
        Some(_) => Precision::Float64,
        None => base.precision(opts.precision, opts.tol)?,
    };
    let start = if opts.warm_start { start } else { None };
    let primal = primal.map(|p| PrimalInput {
        start: if opts.warm_start { p.start } else { None },
        anchors: if opts.warm_start { p.anchors } else { None },
        ..p
    });
    let queries = Queries {
        base,
        y,
        sigma,
        cross,
        start,
        primal,
        opts,
    };
    let mut out = match path {
        Precision::Float64 => queries.solve::<f64>(false)?,
        _ => queries.solve::<f32>(true)?,
    };
    out.precision = path;
    Ok(out)
}

/// The inputs of [`solve_local`], checked.
struct Queries<'a, 'b> {
    base: &'a LocalKernel<'b>,
    y: &'a [f64],
    sigma: &'a [f64],
    cross: &'a [f64],
    start: Option<&'a [f64]>,
    primal: Option<PrimalInput<'a>>,
    opts: &'a LocalOptions,
}

/// A query's Hessian, kept for the next query with the same neighbourhood.
struct Kept<T: SourceValue> {
    active: Vec<usize>,
    q: KernelQ<T>,
}

impl Queries<'_, '_> {
    /// Every query, its Hessian cached as `T` values (`f32`: the source's
    /// `f32` panel is built first, with its allocation checked).
    fn solve<T: SourceValue>(&self, f32_panel: bool) -> Result<LocalResult> {
        let (y, opts) = (self.y, self.opts);
        let n = y.len();
        let m = self.sigma.len() / n;
        let mut out = LocalResult::default();
        let mut kept: Option<Kept<T>> = None;
        let mut active: Vec<usize> = Vec::with_capacity(n);
        // The primal solver's features: every example, and the last subset.
        let mut every: Option<FeatureMajor> = None;
        let mut subset = FeatureMajor::default();
        let mut subset_of: Vec<usize> = Vec::new();
        for s in 0..m {
            opts.control.check()?;
            let sig = &self.sigma[s * n..(s + 1) * n];
            active.clear();
            active.extend((0..n).filter(|&i| sig[i] >= opts.threshold && sig[i] > 0.0));
            let n_pos = active.iter().filter(|&&i| y[i] > 0.0).count();
            let status = match (n_pos, active.len() - n_pos) {
                (0, 0) => LocalStatus::Empty,
                (_, 0) => LocalStatus::OnlyPositive,
                (0, _) => LocalStatus::OnlyNegative,
                _ => LocalStatus::Solved,
            };
            if status != LocalStatus::Solved {
                out.decision.push(match status {
                    LocalStatus::OnlyPositive => 1.0,
                    LocalStatus::OnlyNegative => -1.0,
                    _ => 0.0,
                });
                out.status.push(status);
                out.n_iter.push(0);
                out.n_active.push(active.len());
                out.n_support.push(0);
                out.converged.push(true);
                if let Some(p) = self.primal {
                    out.primal.extend(std::iter::repeat_n(0.0, p.d + 1));
                }
                continue;
            }
            let y_sub: Vec<f64> = active.iter().map(|&i| y[i]).collect();
            let upper: Vec<f64> = active.iter().map(|&i| opts.c * sig[i]).collect();
            if let Some(pos) = upper.iter().position(|u| !u.is_finite()) {
                value_error!(
                    "C × similarity overflows float64 for query {s} (C = {}, similarity {}); \
                     lower C or scale the similarities",
                    opts.c,
                    sig[active[pos]]
                );
            }
            let k = active.len();
            let mut max_iter = opts.max_iter.unwrap_or_else(|| local_iteration_cap(k));
            // The decision value: from the query's features and model, or
            // from its kernel row.
            let query = self
                .primal
                .and_then(|p| p.queries.map(|q| &q[s * p.d..(s + 1) * p.d]));
            let row = match query {
                Some(_) => &[][..],
                None => &self.cross[s * n..(s + 1) * n],
            };
            let mut primal_alpha = None;
            let mut steps = 0;
            if let Some(p) = self.primal {
                let fm = if k == n {
                    if every.is_none() {
                        every = Some(FeatureMajor::gather(p.x, p.d, None)?);
                    }
                    every.as_ref().expect("built above")
                } else {
                    if subset_of != active {
                        subset.refill(p.x, p.d, Some(&active))?;
                        subset_of.clone_from(&active);
                    }
                    &subset
                };
                let cap = max_iter.min(p.max_steps);
                let near = nearest_anchor(p.anchors, sig);
                let begin = near.or(p.start);
                let tol = opts.tol;
                match solve_primal(
                    fm,
                    &y_sub,
                    &upper,
                    begin,
                    near.is_some(),
                    tol,
                    cap,
                    &opts.control,
                )? {
                    PrimalOutcome::Solved(sol) => {
                        out.primal.extend_from_slice(&sol.w);
                        out.primal.push(-sol.rho);
                        let (f, n_sv) = match query {
                            Some(q) => model_at(&sol.w, sol.rho, q, &sol.alpha),
                            None => decision_at(&active, &sol.alpha, sol.rho, y, row),
                        };
                        out.decision.push(f);
                        out.status.push(LocalStatus::Solved);
                        out.n_iter.push(sol.steps);
                        out.n_active.push(k);
                        out.n_support.push(n_sv);
                        out.converged.push(true);
                        continue;
                    }
                    PrimalOutcome::Unsolved {
                        alpha,
                        steps: taken,
                    } => {
                        steps = taken;
                        max_iter = max_iter.saturating_sub(taken);
                        primal_alpha = Some(alpha);
                    }
                }
            }
            let alpha0 = match (&primal_alpha, self.start) {
                (Some(a), _) => {
                    let all: Vec<usize> = (0..k).collect();
                    feasible_start(a, &all, &y_sub, &upper)
                }
                (None, Some(st)) => feasible_start(st, &active, &y_sub, &upper),
                (None, None) => vec![0.0; active.len()],
            };
            let hessian = match kept.take() {
                Some(h) if h.active == active => kept.insert(h),
                old => {
                    drop(old); // free the previous Hessian before building this one
                    let source = self.base.subset(&active)?;
                    if f32_panel {
                        source.prepare_f32()?;
                    }
                    // At most the whole local Hessian (then columns are
                    // computed once), at most the caller's budget.
                    let whole = k
                        .saturating_mul(k)
                        .saturating_mul(std::mem::size_of::<T>())
                        .saturating_add(1 << 16);
                    let bytes = whole.min(opts.cache_bytes);
                    kept.insert(Kept {
                        active: active.clone(),
                        q: KernelQ::<T>::new(source, &y_sub, bytes),
                    })
                }
            };
            let res = solve_one(&mut hessian.q, &y_sub, &upper, &alpha0, opts, max_iter)?;
            if let Some(p) = self.primal {
                // The model SMO finished: w = Σ α_i y_i x_i, b = −ρ.
                let start = out.primal.len();
                out.primal.extend(std::iter::repeat_n(0.0, p.d + 1));
                let w = &mut out.primal[start..start + p.d];
                for (t, &i) in active.iter().enumerate() {
                    let ay = res.alpha[t] * y[i];
                    if ay != 0.0 {
                        for (wk, &xk) in w.iter_mut().zip(&p.x[i * p.d..(i + 1) * p.d]) {
                            *wk += ay * xk;
                        }
                    }
                }
                out.primal[start + p.d] = -res.rho;
            }
            let (f, n_sv) = match query {
                // `query` is given only with the primal solver: the model
                // just stored, `(w, b)`, is the last `d + 1` values.
                Some(q) => {
                    let w = out.primal.len() - (q.len() + 1);
                    model_at(&out.primal[w..w + q.len()], res.rho, q, &res.alpha)
                }
                None => decision_at(&active, &res.alpha, res.rho, y, row),
            };
            out.decision.push(f);
            out.status.push(LocalStatus::Solved);
            out.n_iter.push(steps + res.n_iter);
            out.n_active.push(k);
            out.n_support.push(n_sv);
            out.converged.push(res.converged);
        }
        Ok(out)
    }
}

/// The default iteration cap of a local problem with `k` examples:
/// `max(10⁵, 1000·k)`. LIBSVM's `max(10⁷, 100·k)` is meant for one big
/// problem; a batch solves one problem per query, and with a huge `C` on
/// data the kernel cannot separate, SMO raises the α of the bounded
/// examples by about one step per iteration toward boxes of size `C·σ`,
/// so it would spend the whole cap on every query. A problem that stops at
/// the cap reports `converged = false`.
pub fn local_iteration_cap(k: usize) -> u64 {
    100_000u64.max(1000u64.saturating_mul(k as u64))
}

/// One local problem on `q`, which is left in the order it came in: the
/// swaps shrinking makes are undone afterwards, so the next query sees the
/// same variable order (and the same results) as on a fresh Hessian.
fn solve_one<T: SourceValue>(
    q: &mut KernelQ<T>,
    y: &[f64],
    upper: &[f64],
    start: &[f64],
    opts: &LocalOptions,
    max_iter: u64,
) -> Result<smo::SmoResult> {
    let p = vec![-1.0; y.len()];
    let mut swaps = Vec::new();
    let mut tracked = Tracked {
        q: &mut *q,
        log: |i, j| swaps.push((i, j)),
    };
    // SMO on the batch's own Hessian, not through `DualProblem` (whose
    // Hessian and cache live for one solve): see the `problem` module.
    let stop = smo::Stopping {
        tol: opts.tol,
        max_iter,
        shrinking: opts.shrinking,
        ctl: &opts.control,
    };
    let dual = smo::Dual {
        p: &p,
        y,
        upper,
        alpha: start,
    };
    let res = smo::solve(&mut tracked, &dual, &stop);
    swaps.reverse();
    q.swap_indices(&swaps);
    res
}

/// A local model's decision at its query, `Σ α_t y_i K(x_i, x_s) − ρ` over
/// the problem's examples `active` (`row` holds `K(x_i, x_s)` for every
/// training example), and its number of support vectors.
fn decision_at(active: &[usize], alpha: &[f64], rho: f64, y: &[f64], row: &[f64]) -> (f64, usize) {
    let mut f = -rho;
    let mut n_sv = 0;
    for (&i, &a) in active.iter().zip(alpha) {
        if a != 0.0 {
            f += a * y[i] * row[i];
            n_sv += 1;
        }
    }
    (f, n_sv)
}

/// `w·x − ρ` for a query's features `x`, with the number of nonzero `α`.
fn model_at(w: &[f64], rho: f64, x: &[f64], alpha: &[f64]) -> (f64, usize) {
    let f = w.iter().zip(x).map(|(w, x)| w * x).sum::<f64>() - rho;
    (f, alpha.iter().filter(|&&a| a != 0.0).count())
}

/// The solution of the anchor most similar to the query (`sig` its
/// similarities to every training example), the first of equals; `None`
/// without anchors or when every anchor's similarity is 0.
fn nearest_anchor<'a>(anchors: Option<Anchors<'a>>, sig: &[f64]) -> Option<&'a [f64]> {
    let a = anchors?;
    let m = a.solutions.len() / a.index.len().max(1);
    let mut best: Option<(usize, f64)> = None;
    for (j, &i) in a.index.iter().enumerate() {
        if sig[i] > best.map_or(0.0, |b| b.1) {
            best = Some((j, sig[i]));
        }
    }
    best.map(|(j, _)| &a.solutions[j * m..(j + 1) * m])
}

/// A start moved into a query's boxes: clipped to them, then the excess
/// `|Σ_{y=+1} α − Σ_{y=−1} α|` taken off the larger class side, largest `α`
/// first (ties in index order), each lowered to 0 until the sides balance
/// (the last one partly), so that `yᵀα = 0`. Lowering few variables keeps
/// the others at the bounds the start put them on: SMO then has fewer of
/// them to move than after scaling the whole side down.
fn feasible_start(start: &[f64], active: &[usize], y: &[f64], upper: &[f64]) -> Vec<f64> {
    let mut a: Vec<f64> = active
        .iter()
        .zip(upper)
        .map(|(&i, &u)| start[i].clamp(0.0, u))
        .collect();
    let (mut pos, mut neg) = (0.0, 0.0);
    for (v, &yi) in a.iter().zip(y) {
        if yi > 0.0 {
            pos += v;
        } else {
            neg += v;
        }
    }
    if pos <= 0.0 || neg <= 0.0 {
        return vec![0.0; a.len()];
    }
    let side = if pos > neg { 1.0 } else { -1.0 };
    let mut excess = (pos - neg).abs();
    let mut order: Vec<usize> = (0..a.len())
        .filter(|&t| y[t] == side && a[t] > 0.0)
        .collect();
    order.sort_by(|&s, &t| a[t].total_cmp(&a[s]).then(s.cmp(&t)));
    for t in order {
        if excess <= 0.0 {
            break;
        }
        let take = a[t].min(excess);
        a[t] -= take;
        excess -= take;
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::{KernelKind, Rows};
    use crate::solver::problem::{DualProblem, SolverOptions};

    fn data() -> (Rows, Vec<f64>) {
        // Two interleaved groups on a line: locally linear, globally not.
        let x: Vec<f64> = (0..40).map(|i| f64::from(i) / 10.0).collect();
        let y: Vec<f64> = x
            .iter()
            .map(|&v| if (v as i64) % 2 == 0 { 1.0 } else { -1.0 })
            .collect();
        (Rows::new(x, 40, 1).unwrap(), y)
    }

    fn opts(warm: bool) -> LocalOptions {
        LocalOptions {
            c: 10.0,
            threshold: 1e-6,
            tol: 1e-6,
            max_iter: None,
            shrinking: true,
            warm_start: warm,
            precision: Precision::Auto,
            control: Control::none(),
            cache_bytes: 200 << 20,
        }
    }

    fn gaussian(x: &Rows, q: &[f64], bw: f64) -> Vec<f64> {
        let mut s = Vec::new();
        for &v in q {
            s.extend((0..x.n()).map(|i| (-(x.row(i)[0] - v).powi(2) / bw).exp()));
        }
        s
    }

    fn cross(x: &Rows, q: &[f64]) -> Vec<f64> {
        let mut c = Vec::new();
        for &v in q {
            c.extend((0..x.n()).map(|i| x.row(i)[0] * v));
        }
        c
    }

    #[test]
    fn the_primal_solver_agrees_with_smo_and_falls_back_to_it() {
        let (x, y) = data();
        let queries = [0.45, 1.5, 2.52, 3.3, 0.47, 3.95];
        let sigma = gaussian(&x, &queries, 2.0);
        let c = cross(&x, &queries);
        let base = LocalKernel::Source(KernelSource::dense(KernelKind::Linear, x.clone()).unwrap());
        let dual = solve_local(&base, &y, &sigma, &c, None, &opts(false)).unwrap();
        let features: Vec<f64> = (0..40).map(|i| x.row(i)[0]).collect();
        for max_steps in [PRIMAL_STEP_CAP, 1] {
            let primal = PrimalInput {
                x: &features,
                d: 1,
                start: None,
                max_steps,
                anchors: None,
                queries: None,
            };
            let out =
                solve_local_with(&base, &y, &sigma, &c, None, Some(primal), &opts(false)).unwrap();
            // From the queries' features instead of their kernel rows: the
            // same models, the same decision values up to rounding.
            let by_features = PrimalInput {
                queries: Some(&queries),
                ..primal
            };
            let same = solve_local_with(
                &base,
                &y,
                &sigma,
                &[],
                None,
                Some(by_features),
                &opts(false),
            )
            .unwrap();
            assert_eq!(same.primal, out.primal);
            assert_eq!(same.n_iter, out.n_iter);
            assert_eq!(same.n_support, out.n_support);
            for (a, b) in same.decision.iter().zip(&out.decision) {
                assert!((a - b).abs() <= 1e-12 * (1.0 + b.abs()), "{a} vs {b}");
            }
            for s in 0..queries.len() {
                assert!(out.converged[s], "query {s}");
                let gap = (out.decision[s] - dual.decision[s]).abs();
                assert!(
                    gap < 1e-4,
                    "query {s}: {} vs {}",
                    out.decision[s],
                    dual.decision[s]
                );
                if max_steps == 1 {
                    // One Newton step cannot certify these: SMO finished them.
                    assert!(out.n_iter[s] > 1, "query {s}");
                } else {
                    assert!(out.n_iter[s] < dual.n_iter[s].max(2), "query {s}");
                }
            }
        }
        let bad = PrimalInput {
            x: &features[..39],
            d: 1,
            start: None,
            max_steps: 10,
            anchors: None,
            queries: None,
        };
        assert!(solve_local_with(&base, &y, &sigma, &c, None, Some(bad), &opts(false)).is_err());
        // One feature short among the queries; no kernel rows and no
        // features to stand for them.
        let short = PrimalInput {
            x: &features,
            queries: Some(&queries[1..]),
            ..bad
        };
        assert!(solve_local_with(&base, &y, &sigma, &[], None, Some(short), &opts(false)).is_err());
        let no_rows = PrimalInput {
            x: &features,
            ..bad
        };
        assert!(
            solve_local_with(&base, &y, &sigma, &[], None, Some(no_rows), &opts(false)).is_err()
        );
    }

    #[test]
    fn a_query_starts_from_its_most_similar_anchor() {
        let solutions = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let anchors = Anchors {
            index: &[1, 3, 4],
            solutions: &solutions,
        };
        let sig = [0.9, 0.2, 0.0, 0.5, 0.5];
        // Anchors 3 and 4 tie at 0.5: the first wins; example 0 is no anchor.
        assert_eq!(nearest_anchor(Some(anchors), &sig), Some(&solutions[2..4]));
        assert_eq!(
            nearest_anchor(Some(anchors), &[1.0, 0.0, 0.0, 0.0, 0.0]),
            None
        );
        assert_eq!(nearest_anchor(None, &sig), None);
    }

    #[test]
    fn each_query_matches_a_direct_solve_with_scaled_boxes() {
        let (x, y) = data();
        let queries = [0.45, 1.5, 2.52, 3.3];
        let sigma = gaussian(&x, &queries, 0.3);
        let base = LocalKernel::Source(KernelSource::dense(KernelKind::Linear, x.clone()).unwrap());
        let cold =
            solve_local(&base, &y, &sigma, &cross(&x, &queries), None, &opts(false)).unwrap();
        let start = vec![1.0; 40];
        let warm = solve_local(
            &base,
            &y,
            &sigma,
            &cross(&x, &queries),
            Some(&start),
            &opts(true),
        )
        .unwrap();
        for (s, &qv) in queries.iter().enumerate() {
            let upper: Vec<f64> = sigma[s * 40..(s + 1) * 40]
                .iter()
                .map(|&v| if v >= 1e-6 { 10.0 * v } else { 0.0 })
                .collect();
            let sol = DualProblem::new(
                KernelSource::dense(KernelKind::Linear, x.clone()).unwrap(),
                y.clone(),
                upper,
            )
            .solve(&SolverOptions {
                tol: 1e-6,
                ..SolverOptions::default()
            })
            .unwrap();
            let w: f64 = (0..40).map(|i| sol.alpha[i] * y[i] * x.row(i)[0]).sum();
            let f = w * qv - sol.rho;
            assert_eq!(cold.status[s], LocalStatus::Solved);
            assert!(
                (cold.decision[s] - f).abs() < 1e-3,
                "{} vs {f}",
                cold.decision[s]
            );
            assert!(
                (warm.decision[s] - f).abs() < 1e-3,
                "{} vs {f}",
                warm.decision[s]
            );
        }
    }

    #[test]
    fn one_class_and_empty_neighbourhoods_are_reported() {
        let (x, y) = data();
        let base = LocalKernel::Source(KernelSource::dense(KernelKind::Linear, x.clone()).unwrap());
        let queries = [0.2, 1.2, 100.0];
        let sigma = gaussian(&x, &queries, 0.001);
        let r = solve_local(&base, &y, &sigma, &cross(&x, &queries), None, &opts(true)).unwrap();
        assert_eq!(
            r.status,
            vec![
                LocalStatus::OnlyPositive,
                LocalStatus::OnlyNegative,
                LocalStatus::Empty
            ]
        );
        assert_eq!(r.decision, vec![1.0, -1.0, 0.0]);
    }

    #[test]
    fn a_borrowed_gram_matrix_gives_the_feature_results() {
        let (x, y) = data();
        let queries = [0.45, 2.52];
        let sigma = gaussian(&x, &queries, 0.3);
        let gram = crate::kernel::kernel_matrix(KernelKind::Linear, &x, &x).unwrap();
        let c = cross(&x, &queries);
        let from_gram = solve_local(
            &LocalKernel::gram(&gram, 40).unwrap(),
            &y,
            &sigma,
            &c,
            None,
            &opts(true),
        );
        let features = LocalKernel::Source(KernelSource::dense(KernelKind::Linear, x).unwrap());
        let from_features = solve_local(&features, &y, &sigma, &c, None, &opts(true)).unwrap();
        for (a, b) in from_gram
            .unwrap()
            .decision
            .iter()
            .zip(&from_features.decision)
        {
            assert!((a - b).abs() < 1e-3, "{a} vs {b}");
        }
        assert!(LocalKernel::gram(&gram[..10], 40).is_err());
    }

    #[test]
    fn each_query_is_independent_of_the_batch() {
        let (x, y) = data();
        let queries = [0.45, 1.5, 2.52, 3.3, 0.47];
        let sigma = gaussian(&x, &queries, 2.0);
        let c = cross(&x, &queries);
        let start: Vec<f64> = (0..40).map(|i| f64::from(i % 7) * 0.5).collect();
        for features in [true, false] {
            let gram = crate::kernel::kernel_matrix(KernelKind::Linear, &x, &x).unwrap();
            let base = if features {
                LocalKernel::Source(KernelSource::dense(KernelKind::Linear, x.clone()).unwrap())
            } else {
                LocalKernel::gram(&gram, 40).unwrap()
            };
            let all = solve_local(&base, &y, &sigma, &c, Some(&start), &opts(true)).unwrap();
            for s in (0..queries.len()).rev() {
                let one = solve_local(
                    &base,
                    &y,
                    &sigma[s * 40..(s + 1) * 40],
                    &c[s * 40..(s + 1) * 40],
                    Some(&start),
                    &opts(true),
                )
                .unwrap();
                assert_eq!(one.decision[0], all.decision[s], "query {s}");
                assert_eq!(one.n_iter[0], all.n_iter[s], "query {s}");
            }
        }
    }

    #[test]
    fn warm_start_is_feasible() {
        let prev = vec![1.0, 0.5, 2.0, 0.0];
        let y = [1.0, -1.0, -1.0];
        let a = feasible_start(&prev, &[0, 1, 2], &y, &[0.8, 1.0, 1.0]);
        let ya: f64 = a.iter().zip(&y).map(|(a, y)| a * y).sum();
        assert!(ya.abs() < 1e-12);
        assert!(a
            .iter()
            .zip([0.8, 1.0, 1.0])
            .all(|(&v, u)| (0.0..=u).contains(&v)));
    }

    #[test]
    fn bad_input_is_an_error() {
        let (x, y) = data();
        let base = LocalKernel::Source(KernelSource::dense(KernelKind::Linear, x.clone()).unwrap());
        let mut sigma = gaussian(&x, &[1.0], 1.0);
        let c = cross(&x, &[1.0]);
        assert!(solve_local(&base, &y[..39], &sigma, &c, None, &opts(true)).is_err());
        assert!(solve_local(&base, &y, &sigma[..39], &c, None, &opts(true)).is_err());
        let mut bad = opts(true);
        bad.c = 0.0;
        assert!(solve_local(&base, &y, &sigma, &c, None, &bad).is_err());
        sigma[3] = f64::NAN;
        assert!(solve_local(&base, &y, &sigma, &c, None, &opts(true)).is_err());
    }
}
