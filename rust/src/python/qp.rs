//! Bindings of the dual QP: `solve_qp` (the one entry point,
//! [`crate::solver::problem`]) and `dual_gradient` ([`crate::solver::gradient`]).

use numpy::{IntoPyArray, PyArray1, PyArrayMethods, PyReadonlyArray1};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;

use super::convert::{indices, kernel_kind, vec1, Input, Kernel, SolverSettings, XArg};
use super::runner::{detached, detached_small, INLINE_ROWS};
use crate::kernel::KernelKind;
use crate::precision::Precision;
use crate::runtime::control::Control;
use crate::solver::gradient;
use crate::solver::problem::{
    twins_of_rows, Constraint, DualProblem, Solution, SolverChoice, SolverOptions,
    StartGradientMode,
};

/// What `solve_qp` returns.
#[pyclass(frozen, get_all, module = "localsvm._core")]
pub(super) struct QPResult {
    /// The dual variables, in the caller's order.
    alpha: Py<PyArray1<f64>>,
    /// The threshold: `f(x) = Σ α_i y_i K(x_i, x) − ρ`.
    rho: f64,
    /// The ν-duals' margin variable (`equality_kind='per_label'`; else 0).
    r: f64,
    /// `½αᵀQα + pᵀα` over the optimised variables.
    objective: f64,
    /// Solver iterations.
    n_iter: u64,
    /// False when the iteration cap stopped the solver.
    converged: bool,
    /// How many variables were optimised.
    n_optimised: usize,
    /// Kernel values computed (what the column cache did not hold).
    kernel_evaluations: u64,
    /// The kernel path used: 'float32' or 'float64'.
    precision: &'static str,
    /// Threads the solve ran on: 2 with a two-thread team, else 1.
    threads: usize,
    /// Kernel values of the blocked start gradient (0 without one).
    start_evaluations: u64,
    /// Seconds spent on the blocked start gradient (0 without one).
    start_seconds: f64,
    /// 'batched' when batched working-set rounds preceded SMO, else 'smo'.
    solver: &'static str,
    /// Batched working-set rounds run (0 for SMO alone).
    batched_rounds: u64,
}

/// `solve_qp`'s constraint besides the boxes; see `_core.pyi`.
#[pyclass(eq, eq_int, frozen, from_py_object, module = "localsvm._core")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum QPConstraint {
    /// The boxes alone.
    #[pyo3(name = "BOX")]
    Box,
    /// `yᵀα = 0`.
    #[pyo3(name = "ZERO")]
    Zero,
    /// `yᵀα` kept at its value at the start.
    #[pyo3(name = "START")]
    Start,
    /// `Σ_{y=+1} α` and `Σ_{y=−1} α` each kept at its value at the start.
    #[pyo3(name = "PER_LABEL")]
    PerLabel,
}

impl From<QPConstraint> for Constraint {
    fn from(c: QPConstraint) -> Self {
        match c {
            QPConstraint::Box => Constraint::BoxOnly,
            QPConstraint::Zero => Constraint::Equality,
            QPConstraint::Start => Constraint::EqualityAtStart,
            QPConstraint::PerLabel => Constraint::PerLabel,
        }
    }
}

/// `solve_qp`'s solver: SMO alone, or batched rounds first; see `_core.pyi`.
#[pyclass(eq, eq_int, frozen, from_py_object, module = "localsvm._core")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum QPSolver {
    /// Batched rounds where they pay.
    #[pyo3(name = "AUTO")]
    Auto,
    /// SMO alone.
    #[pyo3(name = "SMO")]
    Smo,
    /// Batched rounds whenever they apply.
    #[pyo3(name = "BATCHED")]
    Batched,
}

impl From<QPSolver> for SolverChoice {
    fn from(s: QPSolver) -> Self {
        match s {
            QPSolver::Auto => SolverChoice::Auto,
            QPSolver::Smo => SolverChoice::Smo,
            QPSolver::Batched => SolverChoice::Batched,
        }
    }
}

/// `solve_qp`'s start gradient, as given.
enum StartArg {
    Columns,
    Blocked,
    Given(Py<PyArray1<f64>>, Py<PyArray1<f64>>),
}

/// What `solve_qp` solves besides `x`, `y` and `upper`, and how, checked
/// once; see `_core.pyi`.
#[pyclass(frozen, module = "localsvm._core")]
pub(super) struct QPOptions {
    #[pyo3(get)]
    p: Option<Py<PyArray1<f64>>>,
    #[pyo3(get)]
    alpha0: Option<Py<PyArray1<f64>>>,
    #[pyo3(get)]
    active: Option<Py<PyArray1<i64>>>,
    #[pyo3(get)]
    rows: Option<Py<PyArray1<i64>>>,
    #[pyo3(get)]
    constraint: QPConstraint,
    start: StartArg,
    #[pyo3(get)]
    threads: usize,
    #[pyo3(get)]
    solver: QPSolver,
}

#[pymethods]
impl QPOptions {
    #[new]
    #[pyo3(signature = (
        *, p = None, alpha0 = None, active = None, rows = None,
        constraint = QPConstraint::Zero, start = None, threads = 1, solver = QPSolver::Auto
    ), text_signature = "(*, p=None, alpha0=None, active=None, rows=None, \
        constraint=QPConstraint.ZERO, start=None, threads=1, solver=QPSolver.AUTO)")]
    fn new(
        p: Option<Bound<'_, PyArray1<f64>>>,
        alpha0: Option<Bound<'_, PyArray1<f64>>>,
        active: Option<Bound<'_, PyArray1<i64>>>,
        rows: Option<Bound<'_, PyArray1<i64>>>,
        constraint: QPConstraint,
        start: Option<Bound<'_, PyAny>>,
        threads: i64,
        solver: QPSolver,
    ) -> PyResult<Self> {
        let threads = usize::try_from(threads)
            .ok()
            .filter(|&t| t >= 1)
            .ok_or_else(|| {
                PyValueError::new_err(format!(
                    "threads must be a positive number of threads, got {threads}"
                ))
            })?;
        Ok(QPOptions {
            p: p.map(Bound::unbind),
            alpha0: alpha0.map(Bound::unbind),
            active: active.map(Bound::unbind),
            rows: rows.map(Bound::unbind),
            constraint,
            start: start_arg(start.as_ref())?,
            threads,
            solver,
        })
    }

    /// `None`, `'blocked'` or the `(gradient, gradient_upper)` pair.
    #[getter]
    fn start<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(match &self.start {
            StartArg::Columns => py.None().into_bound(py),
            StartArg::Blocked => "blocked".into_pyobject(py)?.into_any(),
            StartArg::Given(g, gb) => (g.clone_ref(py), gb.clone_ref(py))
                .into_pyobject(py)?
                .into_any(),
        })
    }
}

impl QPOptions {
    fn default_values() -> Self {
        QPOptions {
            p: None,
            alpha0: None,
            active: None,
            rows: None,
            constraint: QPConstraint::Zero,
            start: StartArg::Columns,
            threads: 1,
            solver: QPSolver::Auto,
        }
    }

    /// `rows` and `active`, checked, and `p` copied, as the solvers take them.
    fn terms(&self, py: Python<'_>) -> PyResult<Terms> {
        let idx = |a: &Option<Py<PyArray1<i64>>>, name| {
            a.as_ref()
                .map(|a| indices(a.bind(py).try_readonly()?, name))
                .transpose()
        };
        Ok(Terms {
            rows: idx(&self.rows, "rows")?,
            active: idx(&self.active, "active")?,
            p: floats(py, &self.p)?,
            alpha0: floats(py, &self.alpha0)?,
        })
    }
}

/// The arrays of a [`QPOptions`], detached from Python.
struct Terms {
    rows: Option<Vec<usize>>,
    active: Option<Vec<usize>>,
    p: Option<Vec<f64>>,
    alpha0: Option<Vec<f64>>,
}

fn floats(py: Python<'_>, a: &Option<Py<PyArray1<f64>>>) -> PyResult<Option<Vec<f64>>> {
    Ok(match a {
        Some(a) => Some(vec1(a.bind(py).try_readonly()?.as_array())),
        None => None,
    })
}

/// One problem of [`solve_qp`] or [`solve_qp_many`], its arrays detached
/// from Python and its settings checked.
struct Posed {
    opts: SolverOptions,
    precision: Precision,
    constraint: Constraint,
    start: StartGradientMode,
    terms: Terms,
    y: Vec<f64>,
    upper: Vec<f64>,
}

impl Posed {
    fn new(
        py: Python<'_>,
        y: &PyReadonlyArray1<'_, f64>,
        upper: &PyReadonlyArray1<'_, f64>,
        settings: &SolverSettings,
        options: &QPOptions,
    ) -> PyResult<Self> {
        let opts = SolverOptions {
            tol: settings.tol_value(),
            max_iter: settings.iteration_cap(),
            shrinking: settings.shrinking_value(),
            cache_bytes: settings.cache_bytes(),
            threads: options.threads,
            control: Control::none(),
            solver: options.solver.into(),
        };
        let start = match &options.start {
            StartArg::Columns => StartGradientMode::Columns,
            StartArg::Blocked => StartGradientMode::Blocked,
            StartArg::Given(g, gb) => StartGradientMode::Given {
                grad: vec1(g.bind(py).try_readonly()?.as_array()),
                grad_bar: vec1(gb.bind(py).try_readonly()?.as_array()),
            },
        };
        Ok(Posed {
            opts,
            precision: settings.precision_value(),
            constraint: options.constraint.into(),
            start,
            terms: options.terms(py)?,
            y: vec1(y.as_array()),
            upper: vec1(upper.as_array()),
        })
    }

    /// The variables the solve optimises over (the rows picked, or all).
    fn n_rows(&self) -> usize {
        self.terms.rows.as_ref().map_or(self.y.len(), Vec::len)
    }

    /// Solves over the data `x` (the GIL released), polling `ctl`.
    fn solve(self, x: &Input<'_>, kind: KernelKind, ctl: &Control) -> crate::Result<Solution> {
        let opts = SolverOptions {
            control: ctl.clone(),
            ..self.opts
        };
        let Terms {
            rows,
            active,
            p,
            alpha0,
        } = self.terms;
        let source = x.source(kind, rows.as_deref())?;
        let twins = rows.as_deref().and_then(twins_of_rows);
        let problem = DualProblem {
            source,
            y: self.y,
            p,
            upper: self.upper,
            alpha0,
            active,
            constraint: self.constraint,
            start: self.start,
            twins,
        };
        problem.solve_with(&opts, self.precision)
    }
}

impl QPResult {
    fn new(py: Python<'_>, sol: Solution) -> Self {
        let solver = if sol.batched_rounds > 0 {
            "batched"
        } else {
            "smo"
        };
        QPResult {
            alpha: sol.alpha.into_pyarray(py).unbind(),
            rho: sol.rho,
            r: sol.r,
            objective: sol.objective,
            n_iter: sol.n_iter,
            converged: sol.converged,
            n_optimised: sol.n_optimised,
            kernel_evaluations: sol.kernel_evaluations,
            precision: sol.precision.name(),
            threads: sol.threads,
            start_evaluations: sol.start_evaluations,
            start_seconds: sol.start_seconds,
            solver,
            batched_rounds: sol.batched_rounds,
        }
    }
}

/// Solve `min ½αᵀQα + pᵀα, 0 ≤ α ≤ upper [, yᵀα = 0]`; see `_core.pyi`.
#[pyfunction]
#[pyo3(signature = (x, y, upper, *, kernel = None, settings = None, options = None, progress = None))]
pub(super) fn solve_qp<'py>(
    py: Python<'py>,
    x: XArg<'py>,
    y: PyReadonlyArray1<'py, f64>,
    upper: PyReadonlyArray1<'py, f64>,
    kernel: Option<PyRef<'py, Kernel>>,
    settings: Option<PyRef<'py, SolverSettings>>,
    options: Option<PyRef<'py, QPOptions>>,
    progress: Option<Bound<'py, PyAny>>,
) -> PyResult<QPResult> {
    if let Some(f) = &progress {
        if !f.is_callable() {
            return Err(PyTypeError::new_err(format!(
                "progress must be a callable taking (n_iter, gap) or None, got {}",
                f.get_type().name()?
            )));
        }
    }
    let kind = kernel_kind(kernel.as_deref(), "rbf")?;
    let defaults = SolverSettings::default_values();
    let settings = settings.as_deref().unwrap_or(&defaults);
    let default_options = QPOptions::default_values();
    let options = options.as_deref().unwrap_or(&default_options);
    let posed = Posed::new(py, &y, &upper, settings, options)?;
    let x = x.input()?;
    let x = &x;
    // Copying the data into the solver's layouts (f64 rows, f32 panel) runs
    // without the GIL too, so solves started from several threads overlap.
    let small = posed.n_rows() <= INLINE_ROWS;
    let sol = detached_small(py, small, progress.as_ref(), move |ctl| {
        posed.solve(x, kind, ctl)
    })?;
    Ok(QPResult::new(py, sol))
}

/// Rows, summed over a batch of [`solve_qp_many`], up to which the batch
/// runs on the calling thread, as one solve of that many rows would
/// ([`INLINE_ROWS`]); larger batches run on a pool thread while the caller
/// checks for signals, so Ctrl-C stops a long batch at once.
const INLINE_BATCH_ROWS: usize = INLINE_ROWS;

/// One problem of [`solve_qp_many`]: `(y, upper, options)`.
type ManyArg<'py> = (
    PyReadonlyArray1<'py, f64>,
    PyReadonlyArray1<'py, f64>,
    Option<PyRef<'py, QPOptions>>,
);

/// [`solve_qp`] for each of `problems`, `(y, upper, options)` over the same
/// `x`, kernel and settings, in one call; see `_core.pyi`.
#[pyfunction]
#[pyo3(signature = (x, problems, *, kernel = None, settings = None))]
pub(super) fn solve_qp_many<'py>(
    py: Python<'py>,
    x: XArg<'py>,
    problems: Vec<ManyArg<'py>>,
    kernel: Option<PyRef<'py, Kernel>>,
    settings: Option<PyRef<'py, SolverSettings>>,
) -> PyResult<Vec<QPResult>> {
    let kind = kernel_kind(kernel.as_deref(), "rbf")?;
    let defaults = SolverSettings::default_values();
    let settings = settings.as_deref().unwrap_or(&defaults);
    let default_options = QPOptions::default_values();
    let posed = problems
        .iter()
        .map(|(y, upper, options)| {
            let options = options.as_deref().unwrap_or(&default_options);
            Posed::new(py, y, upper, settings, options)
        })
        .collect::<PyResult<Vec<_>>>()?;
    drop(problems);
    let small = posed.iter().map(Posed::n_rows).sum::<usize>() <= INLINE_BATCH_ROWS;
    let x = x.input()?;
    let x = &x;
    let solutions = detached_small(py, small, None, move |ctl| {
        posed
            .into_iter()
            .map(|p| p.solve(x, kind, ctl))
            .collect::<crate::Result<Vec<_>>>()
    })?;
    Ok(solutions
        .into_iter()
        .map(|sol| QPResult::new(py, sol))
        .collect())
}

/// `QPOptions`'s `start`: None (the gradient from kernel columns),
/// `'blocked'` (blocked products), or a `(gradient, gradient_upper)` pair.
fn start_arg(start: Option<&Bound<'_, PyAny>>) -> PyResult<StartArg> {
    let Some(start) = start.filter(|s| !s.is_none()) else {
        return Ok(StartArg::Columns);
    };
    if let Ok(name) = start.extract::<String>() {
        return match name.as_str() {
            "blocked" => Ok(StartArg::Blocked),
            other => Err(PyValueError::new_err(format!(
                "start must be None, 'blocked' or a (gradient, gradient_upper) pair, got {other:?}"
            ))),
        };
    }
    match start.extract::<(Bound<'_, PyArray1<f64>>, Bound<'_, PyArray1<f64>>)>() {
        Ok((g, gb)) => Ok(StartArg::Given(g.unbind(), gb.unbind())),
        Err(_) => Err(PyTypeError::new_err(format!(
            "start must be None, 'blocked' or a (gradient, gradient_upper) pair of float64 \
             arrays, got {}",
            start.get_type().name()?
        ))),
    }
}

/// What `dual_gradient` returns: `G`, `Ḡ` and the kernel path's name.
type GradientOut<'py> = (
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<f64>>,
    &'static str,
);

/// `G = Qα + p` and `Ḡ = Σ_{α_j ≥ U_j} U_j Q_j` of the dual at `alpha`, by
/// blocked products over its support vectors; see `_core.pyi`.
#[pyfunction]
#[pyo3(signature = (x, y, upper, alpha, *, kernel = None, settings = None, options = None))]
pub(super) fn dual_gradient<'py>(
    py: Python<'py>,
    x: XArg<'py>,
    y: PyReadonlyArray1<'py, f64>,
    upper: PyReadonlyArray1<'py, f64>,
    alpha: PyReadonlyArray1<'py, f64>,
    kernel: Option<PyRef<'py, Kernel>>,
    settings: Option<PyRef<'py, SolverSettings>>,
    options: Option<PyRef<'py, QPOptions>>,
) -> PyResult<GradientOut<'py>> {
    let kind = kernel_kind(kernel.as_deref(), "rbf")?;
    let defaults = SolverSettings::default_values();
    let settings = settings.as_deref().unwrap_or(&defaults);
    let (precision, tol) = (settings.precision_value(), settings.tol_value());
    let default_options = QPOptions::default_values();
    let options = options.as_deref().unwrap_or(&default_options);
    if options.alpha0.is_some() || options.active.is_some() {
        return Err(PyValueError::new_err(
            "dual_gradient reads p and rows of its options; alpha (not options.alpha0) is the \
             point, and every variable counts (no options.active)",
        ));
    }
    let Terms { rows, p, .. } = options.terms(py)?;
    let x = x.input()?;
    let x = &x;
    let y = vec1(y.as_array());
    let upper = vec1(upper.as_array());
    let alpha = vec1(alpha.as_array());
    let (g, path) = detached(py, move |ctl| {
        let source = x.source(kind, rows.as_deref())?;
        let p = p.unwrap_or_else(|| vec![-1.0; source.n()]);
        let path = source.precision(precision, tol)?;
        let path = gradient::gradient_path(source.kind(), path, &alpha, tol);
        let g = gradient::dual_gradient(&source, &y, &p, &upper, &alpha, path, ctl)?;
        Ok((g, path))
    })?;
    Ok((
        g.grad.into_pyarray(py),
        g.grad_bar.into_pyarray(py),
        path.name(),
    ))
}
