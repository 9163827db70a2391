//! The entry point for solving a kernel dual posed over a [`KernelSource`]:
//! validation, warm starts, optimisation over a subset of the variables with
//! the others held fixed, the choice of precision and between the
//! equality-constrained SMO and the box-only coordinate descent, and the
//! Hessian ([`KernelQ`]) with its column cache, made for the one solve.
//!
//! Two algorithms own a Hessian that outlives a solve, and call
//! [`smo::solve`], the solver's entry point for a caller's [`crate::solver::qmatrix::QMatrix`],
//! directly: [`crate::local`] solves one problem per query of a batch on a
//! single [`KernelQ`] whose cached columns the next query reuses (a
//! [`DualProblem`] would build, and empty, a cache per query), and
//! [`crate::incremental`] solves each working set (a few dozen variables) on a
//! dense Hessian gathered from its kernel-row cache, many times per example,
//! where building a [`KernelSource`] and validating the inputs would cost
//! more than the solve. Both pass inputs that are valid by construction.

use std::sync::Arc;
use std::time::Instant;

use crate::error::{shape_error, value_error, Result};
use crate::kernel::KernelSource;
use crate::precision::Precision;
use crate::precision::QValue;
use crate::runtime::control::Control;
use crate::runtime::team::Team;
use crate::solver::batched::{self, Presolved};
use crate::solver::boxqp;
use crate::solver::gradient::{dual_gradient, gradient_path, StartGradient};
use crate::solver::qmatrix::{KernelQ, QMatrix, SharedRowsQ, SourceValue};
use crate::solver::smo::{self, Dual};

/// Variables below which a solve stays on one thread whatever
/// [`SolverOptions::threads`] allows: the helper thread would mostly wait.
/// (Lower in this crate's unit tests, so small problems exercise the team.)
pub const TEAM_MIN_VARIABLES: usize = if cfg!(test) { 256 } else { 8192 };

/// Runs `f` with rayon's parallel loops on at most `threads` threads: in a
/// pool of `threads` threads made for it when rayon's current pool is
/// larger (else, or when the system refuses the pool's threads, where it
/// is called).
pub fn within_threads<R: Send>(threads: usize, f: impl FnOnce() -> R + Send) -> R {
    if threads.max(1) >= rayon::current_num_threads() {
        return f();
    }
    match rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .thread_name(|k| format!("localsvm-solve-{k}"))
        .build()
    {
        Ok(pool) => pool.install(f),
        Err(_) => f(),
    }
}

/// Features per row (of a sparse row: stored values) from which variables
/// that share a kernel row ([`DualProblem::twins`]) are solved on
/// [`SharedRowsQ`]: each shared kernel value computed once, at the price of
/// gathering every column through the rows. Measured with `bench family`'s
/// ε-SVR and ν-SVR on 8 000 rows: at 100 features sharing took about half
/// the time, at 30 it broke even, and on friedman1's 10 features it took
/// longer (each kernel value costs about as much as its gather). (1 in this
/// crate's unit tests, so small problems exercise the sharing.)
pub const SHARED_ROWS_MIN_FEATURES: usize = if cfg!(test) { 1 } else { 64 };

/// Which constraints the dual carries besides the boxes `0 ≤ α_i ≤ U_i`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Constraint {
    /// `yᵀα = 0` (the C-SVC dual, with a bias term).
    Equality,
    /// `yᵀα = yᵀα₀`: the start's value, whatever it is (the one-class dual
    /// of Schölkopf et al., "Estimating the support of a high-dimensional
    /// distribution", Neural Computation 13, 2001, where `Σ α = ν·n`).
    EqualityAtStart,
    /// The ν-duals' two constraints: `Σ_{y=+1} α` and `Σ_{y=−1} α` each
    /// held at the start's value ([`crate::solver::smo::solve_nu`]).
    PerLabel,
    /// Boxes only (bias-free duals, MCSVM).
    BoxOnly,
}

/// Stopping and resource settings.
#[derive(Clone, Debug)]
pub struct SolverOptions {
    /// Stop when the maximal KKT violation is at most this.
    pub tol: f64,
    /// Cap on iterations; `None` means LIBSVM's safety cap,
    /// `max(10⁷, 100·n)`.
    pub max_iter: Option<u64>,
    /// Shrink bounded variables (equality-constrained problems only).
    pub shrinking: bool,
    /// Byte budget of the kernel-column cache.
    pub cache_bytes: usize,
    /// Threads the solve may use: 1, or 2 or more for a two-thread team
    /// (the caller and one helper, [`crate::runtime::team`]) that splits the large
    /// kernel-column fills and the scans over large active sets. The team
    /// is only started for problems of at least [`TEAM_MIN_VARIABLES`]
    /// variables over dense rows or a precomputed matrix; the answer (every
    /// `α`, the iterations) is the same as on one thread.
    pub threads: usize,
    /// Polled by the solver; once cancelled the solve returns
    /// [`crate::Error::Interrupted`]. The default never cancels.
    pub control: Control,
    /// Batched working-set rounds before SMO ([`crate::solver::batched`]) for the
    /// C-SVC dual, or SMO alone.
    pub solver: SolverChoice,
}

/// Whether the C-SVC dual ([`Constraint::Equality`]) starts with batched
/// working-set rounds ([`crate::solver::batched`]) before SMO finishes it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SolverChoice {
    /// Batched rounds where they pay: at least [`batched::MIN_ROWS`]
    /// variables over dense rows, `float32` kernel values, a start at
    /// `α = 0` and no iteration cap of the caller's.
    #[default]
    Auto,
    /// SMO alone.
    Smo,
    /// Batched rounds whenever they apply (an error where they cannot).
    Batched,
}

impl Default for SolverOptions {
    fn default() -> Self {
        SolverOptions {
            tol: 1e-3,
            max_iter: None,
            shrinking: true,
            cache_bytes: 200 << 20,
            threads: 1,
            control: Control::none(),
            solver: SolverChoice::Auto,
        }
    }
}

/// How SMO gets the gradient `G = Qα + p` (and `Ḡ`, the part from variables
/// at their upper bound) at its start point.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum StartGradientMode {
    /// One kernel column per non-zero `α_t`, through the kernel cache (the
    /// classic fill; nothing to compute from `α = 0`).
    #[default]
    Columns,
    /// Blocked products over the support vectors of the start
    /// ([`crate::solver::gradient::dual_gradient`]), in the solve's precision
    /// where float32 sums are accurate enough
    /// ([`crate::solver::gradient::gradient_path`]), else in float64: the
    /// same kernel values, computed in parallel and vectorised, without
    /// passing through (and evicting) the cache. For large warm starts.
    Blocked,
    /// The caller's `G` and `Ḡ` at `alpha0`, one entry per example (only
    /// with every variable optimised, `active = None`).
    Given { grad: Vec<f64>, grad_bar: Vec<f64> },
}

/// `min ½ αᵀQα + pᵀα` with `Q_ij = y_i y_j K(x_i, x_j)`, `0 ≤ α ≤ U`, and
/// optionally `yᵀα = 0`.
#[derive(Clone, Debug)]
pub struct DualProblem {
    /// The kernel.
    pub source: KernelSource,
    /// Labels `±1` (the signs in `Q`).
    pub y: Vec<f64>,
    /// Linear term; `None` means `−1` everywhere (the C-SVC dual).
    pub p: Option<Vec<f64>>,
    /// Per-variable upper bounds `U_i ≥ 0`; `U_i = 0` pins `α_i` at 0.
    pub upper: Vec<f64>,
    /// Start point; `None` means `α = 0`. With the equality constraint it
    /// must satisfy `yᵀα₀ = 0`.
    pub alpha0: Option<Vec<f64>>,
    /// Optimise only these variables, holding the others at `alpha0`.
    pub active: Option<Vec<usize>>,
    /// Equality constraint or boxes only.
    pub constraint: Constraint,
    /// How the start's gradient is obtained (equality-constrained duals
    /// only, for anything but [`StartGradientMode::Columns`]).
    pub start: StartGradientMode,
    /// Variables whose kernel rows are equal: `twins[t]` is the first
    /// variable with `t`'s row (`twins[t] ≤ t`), as when `rows` repeats an
    /// index (ε-SVR's `2n` variables). The solver then computes and caches
    /// each shared kernel column once ([`SharedRowsQ`]) when the rows have
    /// at least [`SHARED_ROWS_MIN_FEATURES`] features. `None`: every
    /// variable its own row.
    pub twins: Option<Vec<usize>>,
}

/// The solver's answer, in the caller's variable order.
#[derive(Clone, Debug)]
pub struct Solution {
    /// The dual variables (all of them, fixed ones unchanged).
    pub alpha: Vec<f64>,
    /// Decision threshold: `f(x) = Σ α_i y_i K(x_i, x) − ρ` (0 without the
    /// equality constraint).
    pub rho: f64,
    /// The ν-duals' margin variable `r` ([`Constraint::PerLabel`]; 0 for
    /// the other constraints).
    pub r: f64,
    /// `½ αᵀQα + pᵀα` over the optimised variables, with the fixed ones
    /// folded into the linear term; the full objective when every variable is
    /// optimised.
    pub objective: f64,
    /// Iterations (pair updates for SMO, coordinate steps for the box QP).
    pub n_iter: u64,
    /// False when the iteration cap stopped the solver.
    pub converged: bool,
    /// How many variables were optimised.
    pub n_optimised: usize,
    /// Kernel values computed during the solve (what the cache did not hold).
    pub kernel_evaluations: u64,
    /// The arithmetic the kernel values were computed and cached in
    /// (`Float32` or `Float64`, see [`crate::precision`]).
    pub precision: Precision,
    /// Threads the solve ran on: 2 when it started a team
    /// ([`SolverOptions::threads`]), else 1.
    pub threads: usize,
    /// Kernel values the blocked start gradient computed
    /// ([`StartGradientMode::Blocked`]; 0 otherwise).
    pub start_evaluations: u64,
    /// Seconds spent on the blocked start gradient (0 otherwise).
    pub start_seconds: f64,
    /// Batched working-set rounds run before SMO (0: SMO alone).
    pub batched_rounds: u64,
}

/// Relative tolerance for a warm start's `yᵀα₀ = 0` and box membership.
const FEASIBILITY_TOL: f64 = 1e-9;

impl DualProblem {
    /// The C-SVC dual over `source` with labels `y` and boxes `upper`:
    /// `p = −1`, from `α = 0`, every variable optimised, `yᵀα = 0`, the
    /// start's gradient from columns, each variable its own row. Set the
    /// other fields with struct update syntax.
    pub fn new(source: KernelSource, y: Vec<f64>, upper: Vec<f64>) -> Self {
        DualProblem {
            source,
            y,
            p: None,
            upper,
            alpha0: None,
            active: None,
            constraint: Constraint::Equality,
            start: StartGradientMode::Columns,
            twins: None,
        }
    }

    /// Checks shapes and values; every message names the argument at fault.
    pub fn validate(&self) -> Result<()> {
        let n = self.source.n();
        if self.y.len() != n {
            shape_error!("y has {} entries but there are {n} examples", self.y.len());
        }
        if self.upper.len() != n {
            shape_error!(
                "upper has {} entries but there are {n} examples",
                self.upper.len()
            );
        }
        if let Some(bad) = self.y.iter().find(|&&v| v != 1.0 && v != -1.0) {
            value_error!("y must contain only -1 and +1, found {bad}");
        }
        if let Some(bad) = self.upper.iter().find(|&&u| !(u.is_finite() && u >= 0.0)) {
            value_error!("upper bounds must be finite and non-negative, found {bad}");
        }
        if let Some(p) = &self.p {
            if p.len() != n {
                shape_error!("p has {} entries but there are {n} examples", p.len());
            }
            if p.iter().any(|v| !v.is_finite()) {
                value_error!("p contains NaN or infinity");
            }
        }
        if let Some(a) = &self.alpha0 {
            if a.len() != n {
                shape_error!("alpha0 has {} entries but there are {n} examples", a.len());
            }
            for (i, (&ai, &ui)) in a.iter().zip(&self.upper).enumerate() {
                let slack = FEASIBILITY_TOL * ui.max(1.0);
                if !ai.is_finite() || ai < -slack || ai > ui + slack {
                    value_error!("alpha0[{i}] = {ai} lies outside its box [0, {ui}]");
                }
            }
            if self.constraint == Constraint::Equality {
                let ya: f64 = a.iter().zip(&self.y).map(|(a, y)| a * y).sum();
                let scale: f64 = a.iter().map(|v| v.abs()).sum::<f64>().max(1.0);
                if ya.abs() > FEASIBILITY_TOL * scale {
                    value_error!(
                        "alpha0 violates the equality constraint: y·alpha0 = {ya:e}, expected 0"
                    );
                }
            }
        }
        if self.start != StartGradientMode::Columns && self.constraint != Constraint::Equality {
            value_error!(
                "a start gradient (blocked or given) applies to the equality-constrained dual \
                 only"
            );
        }
        if let StartGradientMode::Given { grad, grad_bar } = &self.start {
            if self.active.is_some() {
                value_error!("a given start gradient needs every variable optimised (active=None)");
            }
            let given = smo::GivenGradient { grad, grad_bar };
            given.check(n, "examples")?;
        }
        if let Some(twins) = &self.twins {
            if twins.len() != n {
                shape_error!(
                    "twins has {} entries but there are {n} examples",
                    twins.len()
                );
            }
            for (t, &c) in twins.iter().enumerate() {
                if c > t || twins[c] != c {
                    value_error!(
                        "twins[{t}] = {c} must name the first variable of its row (at most {t}, \
                         and its own twin)"
                    );
                }
            }
        }
        if let Some(active) = &self.active {
            let mut seen = vec![false; n];
            for &i in active {
                if i >= n {
                    value_error!("active index {i} is out of range for {n} examples");
                }
                if seen[i] {
                    value_error!("active index {i} appears twice");
                }
                seen[i] = true;
            }
        }
        Ok(())
    }

    /// Validates, then solves, in the precision [`crate::precision::resolve`]
    /// picks for the data, the kernel and `opts.tol`.
    pub fn solve(self, opts: &SolverOptions) -> Result<Solution> {
        self.solve_with(opts, Precision::Auto)
    }

    /// [`DualProblem::solve`] with the kernel path requested: `Auto` lets
    /// [`crate::precision::resolve`] choose, `Float32` fails on data outside
    /// its range, `Float64` always computes in `f64`. Fails, naming the cause,
    /// when `f64` cannot hold the kernel values, and when the solution is
    /// not finite: a non-finite answer is never reported as a solution.
    pub fn solve_with(self, opts: &SolverOptions, precision: Precision) -> Result<Solution> {
        if !(opts.tol.is_finite() && opts.tol > 0.0) {
            value_error!("tol must be a positive finite number, got {}", opts.tol);
        }
        if opts.threads == 0 {
            value_error!("threads must be at least 1, got 0");
        }
        self.validate()?;
        // The blocked products (start gradients, the rebuild of shrunk
        // rows) and the fills of long columns without a team run on rayon's
        // pool: for a problem large enough to split them, a pool of the
        // solve's own threads, so a solve given one thread uses one CPU.
        if self.y.len() >= TEAM_MIN_VARIABLES {
            within_threads(opts.threads, move || self.solve_validated(opts, precision))
        } else {
            self.solve_validated(opts, precision)
        }
    }

    /// [`DualProblem::solve_with`] after its checks.
    fn solve_validated(mut self, opts: &SolverOptions, precision: Precision) -> Result<Solution> {
        let n = self.source.n();
        // The start is clamped in its own buffer and the linear term taken
        // over, not copied: each is 8·n bytes held through the solve.
        let mut alpha: Vec<f64> = match self.alpha0.take() {
            Some(mut a) => {
                for (a, &u) in a.iter_mut().zip(&self.upper) {
                    *a = a.clamp(0.0, u);
                }
                a
            }
            None => vec![0.0; n],
        };
        let mut p_full = self.p.take().unwrap_or_else(|| vec![-1.0; n]);

        // Variables that can move: the requested subset, minus those whose
        // box is the single point 0.
        let mut in_set = vec![self.active.is_none(); n];
        if let Some(active) = &self.active {
            for &i in active {
                in_set[i] = true;
            }
        }
        let set: Vec<usize> = (0..n)
            .filter(|&i| in_set[i] && self.upper[i] > 0.0)
            .collect();
        for (i, a) in alpha.iter_mut().enumerate() {
            if self.upper[i] == 0.0 {
                *a = 0.0;
            }
        }
        if set.is_empty() {
            return Ok(Solution {
                alpha,
                rho: 0.0,
                r: 0.0,
                objective: 0.0,
                n_iter: 0,
                converged: true,
                n_optimised: 0,
                kernel_evaluations: 0,
                precision: Precision::Float64,
                threads: 1,
                start_evaluations: 0,
                start_seconds: 0.0,
                batched_rounds: 0,
            });
        }
        let whole = set.len() == n;

        // Fold the fixed variables into the linear term of the subproblem:
        // p_S + Q_SF α_F.
        let fixed: Vec<usize> = (0..n)
            .filter(|&j| !(in_set[j] && self.upper[j] > 0.0) && alpha[j] != 0.0)
            .collect();
        drop(in_set);
        let fold = |s: usize| -> f64 {
            let folded: f64 = fixed
                .iter()
                .map(|&j| alpha[j] * self.y[j] * self.source.eval(s, j))
                .sum();
            self.y[s] * folded
        };
        let p_sub: Vec<f64> = if whole {
            for (s, v) in p_full.iter_mut().enumerate() {
                if opts.control.is_cancelled() {
                    break;
                }
                *v += fold(s);
            }
            p_full
        } else {
            let p_sub = set
                .iter()
                .map(|&s| {
                    if opts.control.is_cancelled() {
                        return p_full[s];
                    }
                    p_full[s] + fold(s)
                })
                .collect();
            drop(p_full);
            p_sub
        };
        opts.control.check()?;
        // With every variable optimised the subproblem is the problem
        // itself: its source and vectors move into it instead of being
        // copied (`set` is then `None`).
        let (source, y_sub, u_sub, a_sub, set) = if whole {
            drop(set);
            let a_sub = std::mem::take(&mut alpha);
            (self.source, self.y, self.upper, a_sub, None)
        } else {
            let source = self.source.subset(&set)?;
            let gather = |v: &[f64]| -> Vec<f64> { set.iter().map(|&i| v[i]).collect() };
            let (y_sub, u_sub, a_sub) = (gather(&self.y), gather(&self.upper), gather(&alpha));
            (source, y_sub, u_sub, a_sub, Some(set))
        };
        let m = y_sub.len();
        let max_iter = opts
            .max_iter
            .unwrap_or_else(|| 10_000_000u64.max(100 * m as u64));
        let path = source.precision(precision, opts.tol)?;
        if path != Precision::Float64 {
            source.prepare_f32()?;
        }
        let clock = Instant::now();
        let start = match self.start {
            StartGradientMode::Columns => None,
            StartGradientMode::Blocked => Some(dual_gradient(
                &source,
                &y_sub,
                &p_sub,
                &u_sub,
                &a_sub,
                gradient_path(source.kind(), path, &a_sub, opts.tol),
                &opts.control,
            )?),
            StartGradientMode::Given { grad, grad_bar } => {
                let gather = |v: Vec<f64>| match &set {
                    None => v,
                    Some(set) => set.iter().map(|&i| v[i]).collect(),
                };
                Some(StartGradient {
                    grad: gather(grad),
                    grad_bar: gather(grad_bar),
                    kernel_evaluations: 0,
                })
            }
        };
        let start_seconds = clock.elapsed().as_secs_f64();
        let shared = self
            .twins
            .as_deref()
            .filter(|_| {
                !matches!(source.kind(), crate::kernel::KernelKind::Precomputed)
                    && source.features() >= SHARED_ROWS_MIN_FEATURES
            })
            .and_then(|tw| match &set {
                Some(set) => shared_rows(tw, set),
                None => shared_rows(tw, &(0..n).collect::<Vec<_>>()),
            });
        let sub = SubProblem {
            p: &p_sub,
            y: &y_sub,
            upper: &u_sub,
            alpha: &a_sub,
            start: start.as_ref(),
            constraint: self.constraint,
            max_iter,
            shared,
            capped: opts.max_iter.is_some(),
        };
        let (result, r, evaluations, threads, batched_rounds) = match path {
            Precision::Float64 => sub.run::<f64>(source, opts)?,
            _ => sub.run::<f32>(source, opts)?,
        };
        let finite = result.rho.is_finite()
            && result.objective.is_finite()
            && result.alpha.iter().all(|a| a.is_finite());
        if !finite {
            value_error!(
                "the dual solution is not finite (objective {:.3e}, rho {:.3e}): the kernel \
                 values or the bounds of the multipliers (C times the sample weights) are too \
                 large for float64 arithmetic; scale the features (e.g. StandardScaler), or \
                 lower C or the sample weights",
                result.objective,
                result.rho
            );
        }
        let alpha = match &set {
            None => result.alpha,
            Some(set) => {
                for (k, &i) in set.iter().enumerate() {
                    alpha[i] = result.alpha[k];
                }
                alpha
            }
        };
        Ok(Solution {
            alpha,
            rho: result.rho,
            r,
            objective: result.objective,
            n_iter: result.n_iter,
            converged: result.converged,
            n_optimised: m,
            kernel_evaluations: evaluations,
            precision: path,
            threads,
            start_evaluations: start.as_ref().map_or(0, |g| g.kernel_evaluations),
            start_seconds: if start.is_some() { start_seconds } else { 0.0 },
            batched_rounds,
        })
    }
}

/// The reduced problem over the optimised variables, ready for a solver.
struct SubProblem<'a> {
    p: &'a [f64],
    y: &'a [f64],
    upper: &'a [f64],
    alpha: &'a [f64],
    /// The start's gradient, when not filled column by column.
    start: Option<&'a StartGradient>,
    constraint: Constraint,
    max_iter: u64,
    /// Variables that share kernel rows: the positions of the distinct rows
    /// and each variable's index among them ([`shared_rows`]).
    shared: Option<(Vec<usize>, Vec<usize>)>,
    /// The caller set the iteration cap ([`SolverOptions::max_iter`]).
    capped: bool,
}

/// [`DualProblem::twins`] of variables over the data rows `rows` (which may
/// repeat an index): each variable's first variable on the same row; `None`
/// when no row repeats.
pub fn twins_of_rows(rows: &[usize]) -> Option<Vec<usize>> {
    // Increasing rows (a one-vs-one pair's, a subset's) repeat none: no
    // table for them.
    if rows.windows(2).all(|w| w[0] < w[1]) {
        return None;
    }
    let mut first = std::collections::HashMap::with_capacity(rows.len());
    let twins: Vec<usize> = rows
        .iter()
        .enumerate()
        .map(|(t, &r)| *first.entry(r).or_insert(t))
        .collect();
    twins
        .iter()
        .enumerate()
        .any(|(t, &c)| c != t)
        .then_some(twins)
}

/// The optimised variables `set`'s distinct kernel rows, when some repeat:
/// the positions (in `set`) of each row's first variable, and each
/// variable's index among those. `None` when no two share a row.
fn shared_rows(twins: &[usize], set: &[usize]) -> Option<(Vec<usize>, Vec<usize>)> {
    let mut slot = vec![usize::MAX; twins.len()];
    let mut first = Vec::new();
    let mut map = Vec::with_capacity(set.len());
    for (k, &v) in set.iter().enumerate() {
        let c = twins[v];
        if slot[c] == usize::MAX {
            slot[c] = first.len();
            first.push(k);
        }
        map.push(slot[c]);
    }
    (first.len() < set.len()).then_some((first, map))
}

impl SubProblem<'_> {
    /// Whether batched rounds precede SMO ([`SolverOptions::solver`]): an
    /// error when asked for where they cannot run.
    fn wants_batched<T: QValue>(
        &self,
        source: &KernelSource,
        opts: &SolverOptions,
    ) -> Result<bool> {
        let why_not = if T::IS_F64 {
            Some("float32 kernel values (precision='float32' or 'auto')")
        } else if self.constraint != Constraint::Equality {
            Some("the C-SVC dual")
        } else if self.start.is_none() && self.alpha.iter().any(|&a| a != 0.0) {
            Some("a start at alpha = 0 or a start gradient (blocked or given)")
        } else if self.shared.is_some() || !batched::applicable(source) {
            Some("dense feature rows (no sparse or precomputed kernel)")
        } else {
            None
        };
        match (opts.solver, why_not) {
            (SolverChoice::Smo, _) => Ok(false),
            (SolverChoice::Batched, Some(need)) => {
                value_error!("solver='batched' needs {need}; use solver='auto' or 'smo'")
            }
            (SolverChoice::Batched, None) => Ok(true),
            (SolverChoice::Auto, why_not) => {
                Ok(why_not.is_none() && !self.capped && self.y.len() >= batched::MIN_ROWS)
            }
        }
    }

    /// Solves with a Hessian cached as `T` values; returns the result, the
    /// number of kernel values computed, the threads used and the batched
    /// rounds run.
    fn run<T: SourceValue>(
        &self,
        mut source: KernelSource,
        opts: &SolverOptions,
    ) -> Result<(smo::SmoResult, f64, u64, usize, u64)> {
        let team =
            (opts.threads >= 2 && self.y.len() >= TEAM_MIN_VARIABLES && source.fills_by_rows())
                .then(Team::new)
                .flatten()
                .map(Arc::new);
        let threads = if team.is_some() { 2 } else { 1 };
        match &self.shared {
            None => {
                let presolved = if self.wants_batched::<T>(&source, opts)? {
                    let settings = batched::Settings {
                        shrinking: opts.shrinking,
                        ..batched::Settings::new(opts.tol, self.max_iter, opts.cache_bytes)
                    };
                    // From the start's gradient when given, else from α = 0.
                    let (grad, grad_bar) = match self.start {
                        Some(g) => (g.grad.clone(), Some(g.grad_bar.clone())),
                        None => (self.p.to_vec(), None),
                    };
                    let start = batched::Start {
                        alpha: self.alpha.to_vec(),
                        grad,
                        grad_bar,
                    };
                    batched::presolve(
                        &mut source,
                        self.y,
                        self.upper,
                        start,
                        &settings,
                        team.as_ref(),
                        &opts.control,
                    )?
                } else {
                    None
                };
                // The block is freed by now: the cache has the whole budget.
                let mut q = KernelQ::<T>::new(source, self.y, opts.cache_bytes).with_team(team);
                let Some(pre) = presolved else {
                    let (result, r) = self.solve_on(&mut q, opts)?;
                    return Ok((result, r, q.kernel_evaluations(), threads, 0));
                };
                let Presolved {
                    alpha,
                    grad,
                    grad_bar,
                    rounds,
                    pairs,
                    kernel_evaluations,
                    ..
                } = pre;
                let start = StartGradient {
                    grad,
                    grad_bar,
                    kernel_evaluations,
                };
                let finish = SubProblem {
                    alpha: &alpha,
                    start: Some(&start),
                    max_iter: self.max_iter.saturating_sub(pairs),
                    shared: None,
                    ..*self
                };
                let (mut result, r) = finish.solve_on(&mut q, opts)?;
                result.n_iter += pairs;
                let evaluations = q.kernel_evaluations() + kernel_evaluations;
                Ok((result, r, evaluations, threads, rounds))
            }
            Some((first, map)) => {
                // The distinct rows only: each kernel column once.
                let distinct = source.subset(first)?;
                drop(source);
                if !T::IS_F64 {
                    distinct.prepare_f32()?;
                }
                let ones = vec![1.0; first.len()];
                let inner = KernelQ::<T>::new(distinct, &ones, opts.cache_bytes).with_team(team);
                let mut q = SharedRowsQ::new(inner, map.clone(), self.y);
                let (result, r) = self.solve_on(&mut q, opts)?;
                Ok((result, r, q.kernel_evaluations(), threads, 0))
            }
        }
    }

    /// The solver of the constraint, on the Hessian `q`; returns its result
    /// and the ν-duals' `r` (0 for the others).
    fn solve_on<T: QValue, Q: QMatrix<T>>(
        &self,
        q: &mut Q,
        opts: &SolverOptions,
    ) -> Result<(smo::SmoResult, f64)> {
        let dual = smo::Dual {
            p: self.p,
            y: self.y,
            upper: self.upper,
            alpha: self.alpha,
        };
        let mut r = 0.0;
        let stop = smo::Stopping {
            tol: opts.tol,
            max_iter: self.max_iter,
            shrinking: opts.shrinking,
            ctl: &opts.control,
        };
        let result = match self.constraint {
            Constraint::PerLabel => {
                let (result, margin) = smo::solve_nu(q, &dual, &stop)?;
                r = margin;
                result
            }
            Constraint::Equality | Constraint::EqualityAtStart => smo::solve_from(
                q,
                &dual,
                self.start.map(|g| smo::GivenGradient {
                    grad: &g.grad,
                    grad_bar: &g.grad_bar,
                }),
                &stop,
            )?,
            Constraint::BoxOnly => {
                let Dual {
                    p, upper, alpha, ..
                } = dual;
                boxqp::solve(q, p, upper, alpha, opts.tol, self.max_iter, &opts.control)?
            }
        };
        Ok((result, r))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::{KernelKind, Rows};

    /// A solve given one thread runs rayon's loops on one thread, whatever
    /// rayon's global pool holds; given as many as the pool, in the pool.
    #[test]
    fn rayon_loops_run_on_the_solves_threads() {
        use rayon::prelude::*;
        assert_eq!(within_threads(1, rayon::current_num_threads), 1);
        let ids: std::collections::HashSet<_> = within_threads(1, || {
            (0..256)
                .into_par_iter()
                .map(|_| std::thread::current().id())
                .collect()
        });
        assert_eq!(ids.len(), 1);
        let all = rayon::current_num_threads();
        assert_eq!(within_threads(all, rayon::current_num_threads), all);
        assert_eq!(within_threads(0, rayon::current_num_threads), 1);
    }

    /// `n` points of `d` features in two overlapping noisy clusters.
    fn wide_blobs(n: usize, d: usize) -> (Vec<f64>, Vec<f64>) {
        crate::testing::two_classes(n, d, 11, 3, |f| if f % 2 == 0 { 0.4 } else { -0.2 })
    }

    /// Solves `wide_blobs(n, 2)` under `constraint` from `alpha0` (linear
    /// term 0, boxes 1).
    fn solve_from_start(constraint: Constraint, alpha0: Vec<f64>, y: Vec<f64>) -> Solution {
        let n = y.len();
        let (x, _) = wide_blobs(n, 2);
        let rows = Rows::new(x, n, 2).unwrap();
        let source = KernelSource::dense(KernelKind::Rbf { gamma: 0.5 }, rows).unwrap();
        let problem = DualProblem {
            p: Some(vec![0.0; n]),
            alpha0: Some(alpha0),
            constraint,
            ..DualProblem::new(source, y, vec![1.0; n])
        };
        let opts = SolverOptions {
            tol: 1e-6,
            ..SolverOptions::default()
        };
        problem.solve_with(&opts, Precision::Float64).unwrap()
    }

    #[test]
    fn one_class_and_nu_duals_keep_their_sums_and_improve_the_start() {
        let n = 120;
        let (_, labels) = wide_blobs(n, 2);
        // One-class: all y = +1, Σ α = 30 from LIBSVM's start.
        let start: Vec<f64> = (0..n).map(|i| if i < 30 { 1.0 } else { 0.0 }).collect();
        let one = solve_from_start(Constraint::EqualityAtStart, start, vec![1.0; n]);
        assert!(one.converged);
        assert!((one.alpha.iter().sum::<f64>() - 30.0).abs() < 1e-9);
        assert!(one.alpha.iter().all(|&a| (0.0..=1.0).contains(&a)));
        assert_eq!(one.r, 0.0);
        // ν-dual: each label set's sum kept, and r is positive for these
        // two fairly separated clusters.
        let start: Vec<f64> = labels
            .iter()
            .map(|&l| if l > 0.0 { 0.3 } else { 0.15 })
            .collect();
        let sums = |a: &[f64]| {
            let pos: f64 = a
                .iter()
                .zip(&labels)
                .filter(|(_, &l)| l > 0.0)
                .map(|(a, _)| a)
                .sum();
            let neg: f64 = a
                .iter()
                .zip(&labels)
                .filter(|(_, &l)| l < 0.0)
                .map(|(a, _)| a)
                .sum();
            (pos, neg)
        };
        let before = sums(&start);
        let nu = solve_from_start(Constraint::PerLabel, start, labels.clone());
        assert!(nu.converged);
        let after = sums(&nu.alpha);
        assert!((before.0 - after.0).abs() < 1e-9 && (before.1 - after.1).abs() < 1e-9);
        assert!(nu.r > 0.0, "r = {}", nu.r);
        assert!(nu.objective.is_finite());
    }

    #[test]
    fn two_thread_team_gives_the_one_thread_answer() {
        // The unit-test thresholds (256 variables, fills of 512 values, scans
        // over 256 active variables) make this small problem use the team
        // for fills and scans alike; a cache of a few columns makes columns
        // be computed again, partly and in pairs, through the shrinking.
        let (n, d) = (900, 3);
        let (x, y) = wide_blobs(n, d);
        let upper: Vec<f64> = (0..n).map(|i| if i % 5 == 0 { 2.0 } else { 1.0 }).collect();
        for precision in [Precision::Float32, Precision::Float64] {
            let solve = |threads: usize| {
                let rows = Rows::new(x.clone(), n, d).unwrap();
                let source = KernelSource::dense(KernelKind::Rbf { gamma: 0.5 }, rows).unwrap();
                let problem = DualProblem::new(source, y.clone(), upper.clone());
                let opts = SolverOptions {
                    cache_bytes: 40 * n * 8,
                    threads,
                    ..SolverOptions::default()
                };
                problem.solve_with(&opts, precision).unwrap()
            };
            let one = solve(1);
            let team = solve(2);
            assert_eq!((one.threads, team.threads), (1, 2), "{precision:?}");
            assert!(one.converged && one.n_iter > 100, "{precision:?}");
            assert_eq!(one.n_iter, team.n_iter, "{precision:?}");
            assert_eq!(one.alpha, team.alpha, "{precision:?}");
            assert_eq!(one.rho.to_bits(), team.rho.to_bits(), "{precision:?}");
            assert_eq!(one.kernel_evaluations, team.kernel_evaluations);
        }
    }

    /// ε-SVR's and ν-SVR's `2n` variables over `n` rows taken twice: the
    /// dual over the repeated rows, solved with `twins` (each kernel
    /// column once, [`SharedRowsQ`]) and without.
    #[test]
    fn shared_rows_give_the_answer_of_repeated_rows() {
        let (n, d) = (300, 3);
        let (x, labels) = wide_blobs(n, d);
        let target: Vec<f64> = (0..n)
            .map(|i| x[i * d] - 0.5 * x[i * d + 1] + 0.3 * labels[i])
            .collect();
        let doubled: Vec<f64> = x.iter().chain(&x).copied().collect();
        let rows: Vec<usize> = (0..n).chain(0..n).collect();
        let twins = twins_of_rows(&rows).unwrap();
        assert_eq!(twins[n + 7], 7);
        let y: Vec<f64> = (0..2 * n).map(|t| if t < n { 1.0 } else { -1.0 }).collect();
        let eps = 0.1;
        let svr_p: Vec<f64> = (0..2 * n)
            .map(|t| {
                if t < n {
                    eps - target[t]
                } else {
                    eps + target[t - n]
                }
            })
            .collect();
        let nu_p: Vec<f64> = (0..2 * n)
            .map(|t| if t < n { -target[t] } else { target[t - n] })
            .collect();
        // ν-SVR's start: α = α*, filled in order up to ν·n/2 (ν = 0.4).
        let half: Vec<f64> = (0..n)
            .map(|i| (0.2 * n as f64 - i as f64).clamp(0.0, 1.0))
            .collect();
        let nu_start: Vec<f64> = half.iter().chain(&half).copied().collect();
        let cases = [
            (Constraint::Equality, svr_p, None),
            (Constraint::PerLabel, nu_p, Some(nu_start)),
        ];
        for (constraint, p, alpha0) in cases {
            for precision in [Precision::Float32, Precision::Float64] {
                for threads in [1, 2] {
                    let solve = |twins: Option<Vec<usize>>| {
                        let rows = Rows::new(doubled.clone(), 2 * n, d).unwrap();
                        let source =
                            KernelSource::dense(KernelKind::Rbf { gamma: 0.5 }, rows).unwrap();
                        let problem = DualProblem {
                            p: Some(p.clone()),
                            alpha0: alpha0.clone(),
                            constraint,
                            twins,
                            ..DualProblem::new(source, y.clone(), vec![1.0; 2 * n])
                        };
                        // A cache of a few dozen columns: columns are
                        // computed again through the shrinking. SMO alone
                        // both ways (shared rows never take batched rounds).
                        let opts = SolverOptions {
                            cache_bytes: 40 * 2 * n * 8,
                            threads,
                            solver: SolverChoice::Smo,
                            ..SolverOptions::default()
                        };
                        problem.solve_with(&opts, precision).unwrap()
                    };
                    let plain = solve(None);
                    let shared = solve(Some(twins.clone()));
                    let what = format!("{constraint:?} {precision:?} threads={threads}");
                    assert!(plain.converged && shared.converged, "{what}");
                    assert!(plain.n_iter > 50, "{what}");
                    assert_eq!(plain.n_iter, shared.n_iter, "{what}");
                    for (a, b) in plain.alpha.iter().zip(&shared.alpha) {
                        assert!((a - b).abs() <= 1e-9, "{what}: {a} vs {b}");
                    }
                    assert!((plain.rho - shared.rho).abs() <= 1e-9, "{what}");
                    assert!((plain.r - shared.r).abs() <= 1e-9, "{what}");
                    assert!(
                        shared.kernel_evaluations < plain.kernel_evaluations,
                        "{what}: {} vs {}",
                        shared.kernel_evaluations,
                        plain.kernel_evaluations
                    );
                }
            }
        }
    }

    #[test]
    fn twins_must_name_the_first_variable_of_a_row() {
        let (x, y) = wide_blobs(4, 2);
        for bad in [vec![0, 1, 2], vec![0, 2, 2, 3], vec![0, 0, 1, 3]] {
            let problem = DualProblem {
                twins: Some(bad),
                ..DualProblem::new(
                    KernelSource::dense(
                        KernelKind::Rbf { gamma: 0.5 },
                        Rows::new(x.clone(), 4, 2).unwrap(),
                    )
                    .unwrap(),
                    y.clone(),
                    vec![1.0; 4],
                )
            };
            assert!(problem.validate().is_err());
        }
        assert_eq!(twins_of_rows(&[3, 1, 3, 1, 0]), Some(vec![0, 1, 0, 1, 4]));
        assert_eq!(twins_of_rows(&[2, 0, 1]), None);
    }
}
