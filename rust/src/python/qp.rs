//! Bindings of the dual QP: `solve_qp` (the one entry point,
//! [`crate::problem`]) and `dual_gradient` ([`crate::gradient`]).

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;

use super::convert::{cache_bytes, indices, iteration_cap, kernel_kind, vec1, Kernel, XArg};
use super::runner::{detached, detached_with_progress};
use crate::control::Control;
use crate::gradient;
use crate::precision::Precision;
use crate::problem::{Constraint, DualProblem, SolverOptions, StartGradientMode};

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
}

/// Solve `min ½αᵀQα + pᵀα, 0 ≤ α ≤ upper [, yᵀα = 0]`; see `_core.pyi`.
#[pyfunction]
#[pyo3(signature = (
    x, y, upper, *, kernel = None,
    p = None, alpha0 = None, active = None, equality = true, tol = 1e-3,
    max_iter = -1, cache_size = 200.0, shrinking = true, rows = None, precision = "auto",
    progress = None, threads = 1, gradient = None, gradient_upper = None, blocked_gradient = false,
    equality_kind = "zero"
), text_signature = "(x, y, upper, *, kernel=None, p=None, alpha0=None, active=None, equality=True, tol=0.001, max_iter=-1, \
    cache_size=200.0, shrinking=True, rows=None, precision='auto', progress=None, threads=1, \
    gradient=None, gradient_upper=None, blocked_gradient=False, equality_kind='zero')")]
#[allow(clippy::too_many_arguments)]
pub(super) fn solve_qp<'py>(
    py: Python<'py>,
    x: XArg<'py>,
    y: PyReadonlyArray1<'py, f64>,
    upper: PyReadonlyArray1<'py, f64>,
    kernel: Option<PyRef<'py, Kernel>>,
    p: Option<PyReadonlyArray1<'py, f64>>,
    alpha0: Option<PyReadonlyArray1<'py, f64>>,
    active: Option<PyReadonlyArray1<'py, i64>>,
    equality: bool,
    tol: f64,
    max_iter: i64,
    cache_size: f64,
    shrinking: bool,
    rows: Option<PyReadonlyArray1<'py, i64>>,
    precision: &str,
    progress: Option<Bound<'py, PyAny>>,
    threads: i64,
    gradient: Option<PyReadonlyArray1<'py, f64>>,
    gradient_upper: Option<PyReadonlyArray1<'py, f64>>,
    blocked_gradient: bool,
    equality_kind: &str,
) -> PyResult<QPResult> {
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
    let precision = Precision::from_name(precision)?;
    let opts = SolverOptions {
        tol,
        max_iter: iteration_cap(max_iter)?,
        shrinking,
        cache_bytes: cache_bytes(cache_size)?,
        threads: usize::try_from(threads).unwrap_or(usize::MAX),
        control: Control::none(),
    };
    let x = x.input()?;
    let x = &x;
    let rows = rows.map(|r| indices(r, "rows")).transpose()?;
    let active = active.map(|a| indices(a, "active")).transpose()?;
    let y = vec1(y.as_array());
    let p = p.map(|a| vec1(a.as_array()));
    let upper = vec1(upper.as_array());
    let alpha0 = alpha0.map(|a| vec1(a.as_array()));
    let constraint = match (equality, equality_kind) {
        (false, _) => Constraint::BoxOnly,
        (true, "zero") => Constraint::Equality,
        (true, "start") => Constraint::EqualityAtStart,
        (true, "per_label") => Constraint::PerLabel,
        (true, other) => {
            return Err(PyValueError::new_err(format!(
                "equality_kind must be 'zero', 'start' or 'per_label', got {other:?}"
            )))
        }
    };
    let start = match (gradient, gradient_upper, blocked_gradient) {
        (None, None, false) => StartGradientMode::Columns,
        (None, None, true) => StartGradientMode::Blocked,
        (Some(g), Some(gb), false) => StartGradientMode::Given {
            grad: vec1(g.as_array()),
            grad_bar: vec1(gb.as_array()),
        },
        (Some(_), Some(_), true) => {
            return Err(PyValueError::new_err(
                "give either gradient and gradient_upper or blocked_gradient=True, not both",
            ))
        }
        _ => {
            return Err(PyValueError::new_err(
                "gradient and gradient_upper go together: give both or neither",
            ))
        }
    };
    // Copying the data into the solver's layouts (f64 rows, f32 panel) runs
    // without the GIL too, so solves started from several threads overlap.
    let sol = detached_with_progress(py, progress.as_ref(), move |ctl| {
        let opts = SolverOptions {
            control: ctl.clone(),
            ..opts
        };
        let source = x.source(kind, rows.as_deref())?;
        let problem = DualProblem {
            source,
            y,
            p,
            upper,
            alpha0,
            active,
            constraint,
            start,
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
    })
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
