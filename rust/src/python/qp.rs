//! Bindings of the dual QP: `solve_qp` (the one entry point,
//! [`crate::solver::problem`]) and `dual_gradient` ([`crate::solver::gradient`]).

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;

use super::convert::{indices, kernel_kind, vec1, Kernel, SolverSettings, XArg};
use super::runner::{detached, detached_with_progress};
use crate::precision::Precision;
use crate::runtime::control::Control;
use crate::solver::gradient;
use crate::solver::problem::{
    twins_of_rows, Constraint, DualProblem, SolverChoice, SolverOptions, StartGradientMode,
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

/// Solve `min ½αᵀQα + pᵀα, 0 ≤ α ≤ upper [, yᵀα = 0]`; see `_core.pyi`.
#[pyfunction]
#[pyo3(signature = (
    x, y, upper, *, kernel = None, settings = None, p = None, alpha0 = None, active = None,
    rows = None, constraint = "zero", start = None, progress = None, threads = 1,
    solver = "auto"
), text_signature = "(x, y, upper, *, kernel=None, settings=None, p=None, alpha0=None, \
    active=None, rows=None, constraint='zero', start=None, progress=None, threads=1, \
    solver='auto')")]
#[allow(clippy::too_many_arguments)]
pub(super) fn solve_qp<'py>(
    py: Python<'py>,
    x: XArg<'py>,
    y: PyReadonlyArray1<'py, f64>,
    upper: PyReadonlyArray1<'py, f64>,
    kernel: Option<PyRef<'py, Kernel>>,
    settings: Option<PyRef<'py, SolverSettings>>,
    p: Option<PyReadonlyArray1<'py, f64>>,
    alpha0: Option<PyReadonlyArray1<'py, f64>>,
    active: Option<PyReadonlyArray1<'py, i64>>,
    rows: Option<PyReadonlyArray1<'py, i64>>,
    constraint: &str,
    start: Option<Bound<'py, PyAny>>,
    progress: Option<Bound<'py, PyAny>>,
    threads: i64,
    solver: &str,
) -> PyResult<QPResult> {
    let solver = match solver {
        "auto" => SolverChoice::Auto,
        "smo" => SolverChoice::Smo,
        "batched" => SolverChoice::Batched,
        other => {
            return Err(PyValueError::new_err(format!(
                "solver must be 'auto', 'smo' or 'batched', got {other:?}"
            )))
        }
    };
    if threads < 1 {
        return Err(PyValueError::new_err(format!(
            "threads must be a positive number of threads, got {threads}"
        )));
    }
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
    let precision = settings.precision_value();
    let opts = SolverOptions {
        tol: settings.tol_value(),
        max_iter: settings.iteration_cap(),
        shrinking: settings.shrinking_value(),
        cache_bytes: settings.cache_bytes(),
        threads: usize::try_from(threads).unwrap_or(usize::MAX),
        control: Control::none(),
        solver,
    };
    let constraint = match constraint {
        "box" => Constraint::BoxOnly,
        "zero" => Constraint::Equality,
        "start" => Constraint::EqualityAtStart,
        "per_label" => Constraint::PerLabel,
        other => {
            return Err(PyValueError::new_err(format!(
                "constraint must be 'box', 'zero', 'start' or 'per_label', got {other:?}"
            )))
        }
    };
    let start = start_gradient(start.as_ref())?;
    let x = x.input()?;
    let x = &x;
    let rows = rows.map(|r| indices(r, "rows")).transpose()?;
    let active = active.map(|a| indices(a, "active")).transpose()?;
    let y = vec1(y.as_array());
    let p = p.map(|a| vec1(a.as_array()));
    let upper = vec1(upper.as_array());
    let alpha0 = alpha0.map(|a| vec1(a.as_array()));
    // Copying the data into the solver's layouts (f64 rows, f32 panel) runs
    // without the GIL too, so solves started from several threads overlap.
    let sol = detached_with_progress(py, progress.as_ref(), move |ctl| {
        let opts = SolverOptions {
            control: ctl.clone(),
            ..opts
        };
        let source = x.source(kind, rows.as_deref())?;
        let twins = rows.as_deref().and_then(twins_of_rows);
        let problem = DualProblem {
            source,
            y,
            p,
            upper,
            alpha0,
            active,
            constraint,
            start,
            twins,
        };
        problem.solve_with(&opts, precision)
    })?;
    Ok(QPResult {
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
        solver: if sol.batched_rounds > 0 {
            "batched"
        } else {
            "smo"
        },
        batched_rounds: sol.batched_rounds,
    })
}

/// `solve_qp`'s `start`: None (the gradient from kernel columns),
/// `'blocked'` (blocked products), or a `(gradient, gradient_upper)` pair.
fn start_gradient(start: Option<&Bound<'_, PyAny>>) -> PyResult<StartGradientMode> {
    let Some(start) = start.filter(|s| !s.is_none()) else {
        return Ok(StartGradientMode::Columns);
    };
    if let Ok(name) = start.extract::<String>() {
        return match name.as_str() {
            "blocked" => Ok(StartGradientMode::Blocked),
            other => Err(PyValueError::new_err(format!(
                "start must be None, 'blocked' or a (gradient, gradient_upper) pair, got {other:?}"
            ))),
        };
    }
    match start.extract::<(PyReadonlyArray1<'_, f64>, PyReadonlyArray1<'_, f64>)>() {
        Ok((g, gb)) => Ok(StartGradientMode::Given {
            grad: vec1(g.as_array()),
            grad_bar: vec1(gb.as_array()),
        }),
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
#[pyo3(signature = (
    x, y, upper, alpha, *, kernel = None, p = None,
    rows = None, precision = "auto", tol = 1e-3
))]
#[allow(clippy::too_many_arguments)]
pub(super) fn dual_gradient<'py>(
    py: Python<'py>,
    x: XArg<'py>,
    y: PyReadonlyArray1<'py, f64>,
    upper: PyReadonlyArray1<'py, f64>,
    alpha: PyReadonlyArray1<'py, f64>,
    kernel: Option<PyRef<'py, Kernel>>,
    p: Option<PyReadonlyArray1<'py, f64>>,
    rows: Option<PyReadonlyArray1<'py, i64>>,
    precision: &str,
    tol: f64,
) -> PyResult<GradientOut<'py>> {
    let kind = kernel_kind(kernel.as_deref(), "rbf")?;
    let precision = Precision::from_name(precision)?;
    if !(tol.is_finite() && tol > 0.0) {
        return Err(PyValueError::new_err(format!(
            "tol must be a positive finite number, got {tol}"
        )));
    }
    let x = x.input()?;
    let x = &x;
    let rows = rows.map(|r| indices(r, "rows")).transpose()?;
    let y = vec1(y.as_array());
    let upper = vec1(upper.as_array());
    let alpha = vec1(alpha.as_array());
    let p = p.map(|a| vec1(a.as_array()));
    let (g, path) = detached(py, move |ctl| {
        let source = x.source(kind, rows.as_deref())?;
        let p = p.unwrap_or_else(|| vec![-1.0; source.n()]);
        let path = source.precision(precision, tol)?;
        let g = gradient::dual_gradient(&source, &y, &p, &upper, &alpha, path, ctl)?;
        Ok((g, path))
    })?;
    Ok((
        g.grad.into_pyarray(py),
        g.grad_bar.into_pyarray(py),
        path.name(),
    ))
}
