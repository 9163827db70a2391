//! PyO3 bindings: the only module that sees Python. Arrays are borrowed from
//! numpy, copied once into the solver's own row-major buffers, and the work
//! runs with the GIL released on a thread of rayon's pool while the caller
//! waits in short slices, checking for signals between them: Ctrl-C cancels
//! the work's [`Control`] and raises `KeyboardInterrupt` once it has stopped.
//! Input errors become `ValueError`, a failed input-sized allocation
//! `MemoryError`; a panic (a bug) becomes `RuntimeError` instead of aborting
//! the interpreter.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use numpy::ndarray::{ArrayView1, ArrayView2};
use numpy::{IntoPyArray, PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::exceptions::{
    PyKeyboardInterrupt, PyMemoryError, PyRuntimeError, PyTypeError, PyValueError,
};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use crate::control::{interrupt_all as interrupt_all_rs, Control};
use crate::error::{try_copy, try_with_capacity, Error};
use crate::flsa::{forward_select, Candidates, FlsaOptions, Gram, Selection, Stop};
use crate::flsa_blocks::{staged_correct, staged_decisions};
use crate::gradient;
use crate::incremental::{LearnerState, OnlineLearner, OnlineOptions, StepRecord};
use crate::kernel::{kernel_matrix_with, CsrRows, KernelKind, KernelSource, Rows, TrainingData};
use crate::local::{
    solve_local_with, Anchors, LocalKernel, LocalOptions, PrimalInput, PRIMAL_STEP_CAP,
};
use crate::precision::Precision;
use crate::predict;
use crate::problem::{Constraint, DualProblem, SolverOptions, StartGradientMode};

/// What `solve_qp` returns.
#[pyclass(frozen, get_all, module = "localsvm._core")]
struct QPResult {
    /// The dual variables, in the caller's order.
    alpha: Py<PyArray1<f64>>,
    /// The threshold: `f(x) = Σ α_i y_i K(x_i, x) − ρ`.
    rho: f64,
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

/// What `solve_local` returns: one entry per query, in query order.
#[pyclass(frozen, get_all, module = "localsvm._core")]
struct LocalResult {
    /// The query's decision value.
    decision: Py<PyArray1<f64>>,
    /// 0 solved, 1 only +1 examples, 2 only −1, 3 none.
    status: Py<PyArray1<u8>>,
    /// Solver iterations (0 when no SVM was solved).
    n_iter: Py<PyArray1<u64>>,
    /// Examples in the query's problem.
    n_active: Py<PyArray1<u64>>,
    /// Support vectors of the query's model.
    n_support: Py<PyArray1<u64>>,
    /// False when the iteration cap stopped the query's solver.
    converged: Py<PyArray1<bool>>,
    /// The kernel path of the local problems: 'float32' or 'float64'.
    precision: &'static str,
    /// With the primal solver, each query's `(w, b)`, shape
    /// `(n_queries, d + 1)` (zeros where no SVM was solved); else None.
    primal: Option<Py<PyArray2<f64>>>,
}

/// What `flsa_path` returns: the models for every number of terms.
#[pyclass(frozen, get_all, module = "localsvm._core")]
struct FLSAResult {
    /// The selected rows of `x`, in order.
    selected: Py<PyArray1<i64>>,
    /// `R`, upper triangular, constant column first.
    r: Py<PyArray2<f64>>,
    /// `z = Uᵀy`.
    z: Py<PyArray1<f64>>,
    /// Training squared error with `k` terms, for every `k`.
    residual_sq: Py<PyArray1<f64>>,
    /// Candidates pruned as dependent on the selected ones.
    n_pruned: usize,
    /// True when the rank, not `max_terms`, ended the pass.
    exhausted: bool,
}

/// What `IncrementalLearner.learn` returns: one entry per example, in the
/// order learnt, and the call's counts.
#[pyclass(frozen, get_all, module = "localsvm._core")]
struct LearnResult {
    /// False when the example was classified with margin.
    updated: Py<PyArray1<bool>>,
    /// Final working-set size (0 without an update).
    neighbourhood: Py<PyArray1<u64>>,
    /// Subproblems solved.
    n_solves: Py<PyArray1<u64>>,
    /// The stopping rule, not the neighbour cap, ended the growth.
    reached: Py<PyArray1<bool>>,
    /// `‖ξ‖² / t` after the example.
    criterion: Py<PyArray1<f64>>,
    /// Support vectors after the example.
    n_support: Py<PyArray1<u64>>,
    /// Examples kept after the example.
    n_stored: Py<PyArray1<u64>>,
    /// Seconds spent on the example.
    time: Py<PyArray1<f64>>,
    /// Examples that triggered an update.
    updates: usize,
    /// Updates that used every allowed neighbour before the stopping rule held.
    capped: usize,
    /// Subproblems solved in the call.
    solves: usize,
    /// Subproblems stopped by the iteration cap.
    unconverged: usize,
}

/// One binary online SVM learnt by LISVM; see `_core.pyi`.
#[pyclass(module = "localsvm._core")]
struct IncrementalLearner {
    inner: OnlineLearner,
    kernel: String,
    gamma: f64,
    coef0: f64,
    degree: i64,
}

impl From<Error> for PyErr {
    fn from(err: Error) -> PyErr {
        match err {
            Error::Interrupted => PyKeyboardInterrupt::new_err("interrupted"),
            Error::Memory(msg) => PyMemoryError::new_err(msg),
            other => PyValueError::new_err(other.to_string()),
        }
    }
}

/// How long the waiting caller sleeps between signal checks.
const SIGNAL_SLICE: Duration = Duration::from_millis(50);

/// Runs `work` without the GIL on a thread of rayon's pool (so the parallel
/// loops inside it fork from a pool thread instead of crossing threads on
/// every call), turning a panic into `RuntimeError`. The caller waits in
/// slices of [`SIGNAL_SLICE`], taking the GIL between them to run Python's
/// signal handlers: when one raises (Ctrl-C: `KeyboardInterrupt`), the
/// work's [`Control`] is cancelled, the worker is waited for, and the
/// handler's exception is returned. Work stopped by [`interrupt_all`] (from
/// another thread) raises `KeyboardInterrupt` too.
fn detached<T, F>(py: Python<'_>, work: F) -> PyResult<T>
where
    T: Send,
    F: FnOnce(&Control) -> crate::Result<T> + Send,
{
    detached_with_progress(py, None, work)
}

/// [`detached`], and after each slice in which the work has not finished,
/// `progress(n_iter, gap)` with what the solver last published in the
/// [`Control`] (see [`Control::report`]). An exception raised by `progress`
/// stops the work like a signal and is returned.
fn detached_with_progress<T, F>(
    py: Python<'_>,
    progress: Option<&Bound<'_, PyAny>>,
    work: F,
) -> PyResult<T>
where
    T: Send,
    F: FnOnce(&Control) -> crate::Result<T> + Send,
{
    let ctl = Control::new();
    let worker_ctl = ctl.clone();
    let (tx, rx) = mpsc::sync_channel(1);
    let outcome = rayon::in_place_scope(|scope| {
        scope.spawn(move |_| {
            let out = catch_unwind(AssertUnwindSafe(|| work(&worker_ctl)));
            // The receiver lives until the scope ends; a failed send cannot
            // happen, and would only drop the result.
            let _ = tx.send(out);
        });
        let mut rx = rx;
        loop {
            // The receiver is `Send` but not `Sync`: it moves into the
            // GIL-free section and back.
            let (back, got) = py.detach(move || {
                let got = rx.recv_timeout(SIGNAL_SLICE);
                (rx, got)
            });
            rx = back;
            match got {
                Ok(out) => break Ok(out),
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    let raised = py.check_signals().err().or_else(|| {
                        let (n_iter, gap) = ctl.progress();
                        progress.and_then(|f| f.call1((n_iter, gap)).err())
                    });
                    if let Some(err) = raised {
                        ctl.cancel();
                        // The solvers poll the control at least once per
                        // iteration or block of rows: this wait is short.
                        let _ = py.detach(move || rx.recv());
                        break Err(err);
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    break Err(PyRuntimeError::new_err(
                        "internal error in the localsvm Rust core (please report it): \
                         the worker ended without a result",
                    ));
                }
            }
        }
    });
    match outcome? {
        Ok(result) => result.map_err(PyErr::from),
        Err(payload) => {
            let msg = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown panic".to_string());
            Err(PyRuntimeError::new_err(format!(
                "internal error in the localsvm Rust core (please report it): {msg}"
            )))
        }
    }
}

fn vec1(a: ArrayView1<'_, f64>) -> Vec<f64> {
    a.iter().copied().collect()
}

/// A 2-D array's values in row-major order: borrowed from numpy when the
/// array is C-contiguous (the borrow stays valid while the GIL is released),
/// else copied.
struct Flat<'a> {
    view: ArrayView2<'a, f64>,
    owned: Option<Vec<f64>>,
}

impl<'a> Flat<'a> {
    fn new(view: ArrayView2<'a, f64>) -> PyResult<Self> {
        let owned = match view.as_slice() {
            Some(_) => None,
            None => {
                let (n, d) = view.dim();
                let what = format!("a contiguous copy of the {n} × {d} input");
                let mut v = try_with_capacity(view.len(), &what, "pass a C-contiguous array")?;
                v.extend(view.iter().copied());
                Some(v)
            }
        };
        Ok(Flat { view, owned })
    }

    fn as_slice(&self) -> &[f64] {
        match &self.owned {
            Some(v) => v,
            None => self.view.as_slice().unwrap_or(&[]),
        }
    }

    fn rows(&self) -> crate::Result<Rows> {
        let (n, d) = self.view.dim();
        let what = format!("a copy of the {n} × {d} input");
        Rows::new(
            try_copy(self.as_slice(), &what, "pass fewer rows at once")?,
            n,
            d,
        )
    }

    /// The array as a solver's training data for `kind`.
    fn data(&self, kind: KernelKind) -> crate::Result<TrainingData<'_>> {
        let (n, d) = self.view.dim();
        TrainingData::new(kind, self.as_slice(), n, d)
    }
}

/// A sparse matrix in compressed sparse row form, checked and copied into
/// the core's layout once; see `_core.pyi`.
#[pyclass(frozen, module = "localsvm._core")]
struct CsrMatrix {
    inner: Arc<CsrRows>,
}

/// A 1-D array's values, borrowed when contiguous, else copied.
fn slice_of<'a, T: numpy::Element + Copy>(
    a: &'a PyReadonlyArray1<'_, T>,
) -> std::borrow::Cow<'a, [T]> {
    match a.as_slice() {
        Ok(s) => std::borrow::Cow::Borrowed(s),
        Err(_) => std::borrow::Cow::Owned(a.as_array().iter().copied().collect()),
    }
}

#[pymethods]
impl CsrMatrix {
    #[new]
    #[pyo3(signature = (data, indices, indptr, shape))]
    fn new(
        py: Python<'_>,
        data: PyReadonlyArray1<'_, f64>,
        indices: PyReadonlyArray1<'_, i64>,
        indptr: PyReadonlyArray1<'_, i64>,
        shape: (usize, usize),
    ) -> PyResult<Self> {
        let (data, indices, indptr) = (slice_of(&data), slice_of(&indices), slice_of(&indptr));
        let (data, indices, indptr) = (&*data, &*indices, &*indptr);
        let inner = detached(py, move |_| {
            CsrRows::from_parts(data, indices, indptr, shape.0, shape.1)
        })?;
        Ok(CsrMatrix {
            inner: Arc::new(inner),
        })
    }

    /// `(n_rows, n_features)`.
    #[getter]
    fn shape(&self) -> (usize, usize) {
        (self.inner.n(), self.inner.d())
    }

    /// Number of stored values.
    #[getter]
    fn nnz(&self) -> usize {
        self.inner.nnz()
    }
}

/// A 2-D input: a float64 array, or a [`CsrMatrix`].
#[derive(FromPyObject)]
enum XArg<'py> {
    Sparse(Bound<'py, CsrMatrix>),
    Dense(PyReadonlyArray2<'py, f64>),
}

impl XArg<'_> {
    /// The sparse rows, if sparse.
    fn csr(&self) -> Option<Arc<CsrRows>> {
        match self {
            XArg::Sparse(c) => Some(Arc::clone(&c.get().inner)),
            XArg::Dense(_) => None,
        }
    }

    /// `(rows, columns)`.
    fn dim(&self) -> (usize, usize) {
        match self {
            XArg::Sparse(c) => c.get().shape(),
            XArg::Dense(a) => a.as_array().dim(),
        }
    }

    /// The dense array's values, if dense.
    fn flat(&self) -> PyResult<Option<Flat<'_>>> {
        match self {
            XArg::Sparse(_) => Ok(None),
            XArg::Dense(a) => Flat::new(a.as_array()).map(Some),
        }
    }
}

/// Both sparse, or both dense: the decision functions take no mixture.
fn same_kind(x: &XArg<'_>, sv: &XArg<'_>) -> PyResult<()> {
    if matches!(x, XArg::Sparse(_)) != matches!(sv, XArg::Sparse(_)) {
        return Err(PyTypeError::new_err(
            "x and sv must both be float64 arrays or both CsrMatrix objects",
        ));
    }
    Ok(())
}

/// Index arrays (`rows`, `active`, `candidates`) as `usize`: non-negative
/// (the core checks the upper bound).
fn indices(a: PyReadonlyArray1<'_, i64>, name: &str) -> PyResult<Vec<usize>> {
    a.as_array()
        .iter()
        .map(|&v| {
            usize::try_from(v).map_err(|_| {
                PyValueError::new_err(format!("{name} indices must be non-negative, got {v}"))
            })
        })
        .collect()
}

/// `max_iter` as the solvers take it: `-1` means no cap of the caller's.
fn iteration_cap(max_iter: i64) -> PyResult<Option<u64>> {
    if max_iter < -1 {
        return Err(PyValueError::new_err(format!(
            "max_iter must be -1 (no limit) or a non-negative integer, got {max_iter}"
        )));
    }
    Ok(u64::try_from(max_iter).ok())
}

/// `cache_size` (megabytes) in bytes.
fn cache_bytes(cache_size: f64) -> PyResult<usize> {
    if !(cache_size.is_finite() && cache_size > 0.0) {
        return Err(PyValueError::new_err(format!(
            "cache_size must be a positive number of megabytes, got {cache_size}"
        )));
    }
    Ok((cache_size * f64::from(1u32 << 20)) as usize)
}

fn kind(kernel: &str, gamma: f64, coef0: f64, degree: i64) -> PyResult<KernelKind> {
    Ok(KernelKind::from_name(kernel, gamma, coef0, degree)?)
}

/// Solve `min ½αᵀQα + pᵀα, 0 ≤ α ≤ upper [, yᵀα = 0]`; see `_core.pyi`.
#[pyfunction]
#[pyo3(signature = (
    x, y, upper, *, kernel = "rbf", gamma = 1.0, coef0 = 0.0, degree = 3,
    p = None, alpha0 = None, active = None, equality = true, tol = 1e-3,
    max_iter = -1, cache_size = 200.0, shrinking = true, rows = None, precision = "auto",
    progress = None, threads = 1, gradient = None, gradient_upper = None, blocked_gradient = false
), text_signature = "(x, y, upper, *, kernel='rbf', gamma=1.0, coef0=0.0, degree=3, \
    p=None, alpha0=None, active=None, equality=True, tol=0.001, max_iter=-1, \
    cache_size=200.0, shrinking=True, rows=None, precision='auto', progress=None, threads=1, \
    gradient=None, gradient_upper=None, blocked_gradient=False)")]
#[allow(clippy::too_many_arguments)]
fn solve_qp<'py>(
    py: Python<'py>,
    x: XArg<'py>,
    y: PyReadonlyArray1<'py, f64>,
    upper: PyReadonlyArray1<'py, f64>,
    kernel: &str,
    gamma: f64,
    coef0: f64,
    degree: i64,
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
    let kind = kind(kernel, gamma, coef0, degree)?;
    let precision = Precision::from_name(precision)?;
    let opts = SolverOptions {
        tol,
        max_iter: iteration_cap(max_iter)?,
        shrinking,
        cache_bytes: cache_bytes(cache_size)?,
        threads: usize::try_from(threads).unwrap_or(usize::MAX),
        control: Control::none(),
    };
    let x_sparse = x.csr();
    let x_dense = x.flat()?;
    let x_dense = x_dense.as_ref();
    let rows = rows.map(|r| indices(r, "rows")).transpose()?;
    let active = active.map(|a| indices(a, "active")).transpose()?;
    let y = vec1(y.as_array());
    let p = p.map(|a| vec1(a.as_array()));
    let upper = vec1(upper.as_array());
    let alpha0 = alpha0.map(|a| vec1(a.as_array()));
    let constraint = if equality {
        Constraint::Equality
    } else {
        Constraint::BoxOnly
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
        let source = match (&x_sparse, x_dense) {
            (Some(csr), _) => KernelSource::sparse(kind, csr, rows.as_deref())?,
            (None, Some(x)) => KernelSource::from_data(&x.data(kind)?, rows.as_deref())?,
            (None, None) => unreachable!("an input is dense or sparse"),
        };
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
    x, y, upper, alpha, *, kernel = "rbf", gamma = 1.0, coef0 = 0.0, degree = 3, p = None,
    rows = None, precision = "auto", tol = 1e-3
))]
#[allow(clippy::too_many_arguments)]
fn dual_gradient<'py>(
    py: Python<'py>,
    x: XArg<'py>,
    y: PyReadonlyArray1<'py, f64>,
    upper: PyReadonlyArray1<'py, f64>,
    alpha: PyReadonlyArray1<'py, f64>,
    kernel: &str,
    gamma: f64,
    coef0: f64,
    degree: i64,
    p: Option<PyReadonlyArray1<'py, f64>>,
    rows: Option<PyReadonlyArray1<'py, i64>>,
    precision: &str,
    tol: f64,
) -> PyResult<GradientOut<'py>> {
    let kind = kind(kernel, gamma, coef0, degree)?;
    let precision = Precision::from_name(precision)?;
    if !(tol.is_finite() && tol > 0.0) {
        return Err(PyValueError::new_err(format!(
            "tol must be a positive finite number, got {tol}"
        )));
    }
    let x_sparse = x.csr();
    let x_dense = x.flat()?;
    let x_dense = x_dense.as_ref();
    let rows = rows.map(|r| indices(r, "rows")).transpose()?;
    let y = vec1(y.as_array());
    let upper = vec1(upper.as_array());
    let alpha = vec1(alpha.as_array());
    let p = p.map(|a| vec1(a.as_array()));
    let (g, path) = detached(py, move |ctl| {
        let source = match (&x_sparse, x_dense) {
            (Some(csr), _) => KernelSource::sparse(kind, csr, rows.as_deref())?,
            (None, Some(x)) => KernelSource::from_data(&x.data(kind)?, rows.as_deref())?,
            (None, None) => unreachable!("an input is dense or sparse"),
        };
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

fn into_matrix<'py>(
    py: Python<'py>,
    data: Vec<f64>,
    rows: usize,
    cols: usize,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let flat = data.into_pyarray(py);
    flat.reshape([rows, cols])
}

/// The kernel matrix between the rows of `a` and `b`.
#[pyfunction]
#[pyo3(signature = (a, b, *, kernel = "rbf", gamma = 1.0, coef0 = 0.0, degree = 3))]
fn kernel_matrix<'py>(
    py: Python<'py>,
    a: PyReadonlyArray2<'py, f64>,
    b: PyReadonlyArray2<'py, f64>,
    kernel: &str,
    gamma: f64,
    coef0: f64,
    degree: i64,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let kind = kind(kernel, gamma, coef0, degree)?;
    let (a, b) = (a.as_array(), b.as_array());
    let (na, nb) = (a.dim().0, b.dim().0);
    let (a, b) = (Flat::new(a)?, Flat::new(b)?);
    let (a, b) = (&a, &b);
    let data = detached(py, move |ctl| {
        kernel_matrix_with(kind, &a.rows()?, &b.rows()?, ctl)
    })?;
    into_matrix(py, data, na, nb)
}

/// Decision values `coef · K(sv, x) + intercept` for every row of `x`.
#[pyfunction]
#[pyo3(signature = (
    x, sv, coef, intercept, *, kernel = "rbf", gamma = 1.0, coef0 = 0.0, degree = 3,
    precision = "auto"
))]
#[allow(clippy::too_many_arguments)]
fn decision_values<'py>(
    py: Python<'py>,
    x: XArg<'py>,
    sv: XArg<'py>,
    coef: PyReadonlyArray2<'py, f64>,
    intercept: PyReadonlyArray1<'py, f64>,
    kernel: &str,
    gamma: f64,
    coef0: f64,
    degree: i64,
    precision: &str,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let kind = kind(kernel, gamma, coef0, degree)?;
    let precision = Precision::from_name(precision)?;
    same_kind(&x, &sv)?;
    let coef = coef.as_array();
    if coef.dim().1 != sv.dim().0 {
        return Err(PyValueError::new_err(format!(
            "coef has {} columns but there are {} support vectors",
            coef.dim().1,
            sv.dim().0
        )));
    }
    let coef: Vec<f64> = coef.iter().copied().collect();
    let intercept = vec1(intercept.as_array());
    let (m, k) = (x.dim().0, intercept.len());
    let sparse = (x.csr(), sv.csr());
    let (x, sv) = (x.flat()?, sv.flat()?);
    let (x, sv) = (x.as_ref(), sv.as_ref());
    let data = detached(py, move |ctl| match (sparse, x, sv) {
        ((Some(x), Some(sv)), _, _) => {
            predict::decision_values_sparse(kind, &x, &sv, &coef, &intercept, ctl)
        }
        (_, Some(x), Some(sv)) => {
            let (x, sv) = (x.rows()?, sv.rows()?);
            predict::decision_values_controlled(kind, &x, &sv, &coef, &intercept, precision, ctl)
                .map(|(v, _)| v)
        }
        _ => unreachable!("same_kind checked the inputs"),
    })?;
    into_matrix(py, data, m, k)
}

/// Decision values of one-vs-one pairs over class-grouped support vectors,
/// each pair's coefficients only over its two classes; see `_core.pyi`.
#[pyfunction]
#[pyo3(signature = (
    x, sv, n_support, pairs, coef, intercept, *, kernel = "rbf", gamma = 1.0, coef0 = 0.0,
    degree = 3, precision = "auto"
))]
#[allow(clippy::too_many_arguments)]
fn decision_values_ovo<'py>(
    py: Python<'py>,
    x: XArg<'py>,
    sv: XArg<'py>,
    n_support: PyReadonlyArray1<'py, i64>,
    pairs: PyReadonlyArray2<'py, i64>,
    coef: PyReadonlyArray1<'py, f64>,
    intercept: PyReadonlyArray1<'py, f64>,
    kernel: &str,
    gamma: f64,
    coef0: f64,
    degree: i64,
    precision: &str,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let kind = kind(kernel, gamma, coef0, degree)?;
    let precision = Precision::from_name(precision)?;
    same_kind(&x, &sv)?;
    let counts = indices(n_support, "n_support")?;
    let pairs = pairs.as_array();
    if pairs.dim().1 != 2 {
        return Err(PyValueError::new_err(format!(
            "pairs must have shape (n_pairs, 2), got ({}, {})",
            pairs.dim().0,
            pairs.dim().1
        )));
    }
    let flat: Vec<usize> = pairs
        .iter()
        .map(|&v| {
            usize::try_from(v).map_err(|_| {
                PyValueError::new_err(format!("pairs must name classes by index >= 0, got {v}"))
            })
        })
        .collect::<PyResult<_>>()?;
    let pairs: Vec<(usize, usize)> = flat.chunks_exact(2).map(|p| (p[0], p[1])).collect();
    let coef = vec1(coef.as_array());
    let intercept = vec1(intercept.as_array());
    let (m, k) = (x.dim().0, intercept.len());
    let sparse = (x.csr(), sv.csr());
    let (x, sv) = (x.flat()?, sv.flat()?);
    let (x, sv) = (x.as_ref(), sv.as_ref());
    let data = detached(py, move |ctl| match (sparse, x, sv) {
        ((Some(x), Some(sv)), _, _) => predict::decision_values_pairs_sparse(
            kind, &x, &sv, &counts, &pairs, &coef, &intercept, ctl,
        ),
        (_, Some(x), Some(sv)) => {
            let (x, sv) = (x.rows()?, sv.rows()?);
            predict::decision_values_pairs_controlled(
                kind, &x, &sv, &counts, &pairs, &coef, &intercept, precision, ctl,
            )
            .map(|(v, _)| v)
        }
        _ => unreachable!("same_kind checked the inputs"),
    })?;
    into_matrix(py, data, m, k)
}

/// One localized SVM per query (row of `sigma`); see `_core.pyi`.
#[pyfunction]
#[pyo3(signature = (
    x, y, sigma, cross, *, c, kernel = "linear", gamma = 1.0, coef0 = 0.0, degree = 3,
    threshold = 1e-6, tol = 1e-3, max_iter = -1, shrinking = true, warm_start = true,
    precision = "auto", cache_size = 200.0, start = None, primal = false, start_primal = None,
    anchors = None, anchor_solutions = None, queries = None
), text_signature = "(x, y, sigma, cross, *, c, kernel='linear', gamma=1.0, coef0=0.0, \
    degree=3, threshold=1e-06, tol=0.001, max_iter=-1, shrinking=True, warm_start=True, \
    precision='auto', cache_size=200.0, start=None, primal=False, start_primal=None, \
    anchors=None, anchor_solutions=None, queries=None)")]
#[allow(clippy::too_many_arguments)]
fn solve_local<'py>(
    py: Python<'py>,
    x: PyReadonlyArray2<'py, f64>,
    y: PyReadonlyArray1<'py, f64>,
    sigma: PyReadonlyArray2<'py, f64>,
    cross: Option<PyReadonlyArray2<'py, f64>>,
    c: f64,
    kernel: &str,
    gamma: f64,
    coef0: f64,
    degree: i64,
    threshold: f64,
    tol: f64,
    max_iter: i64,
    shrinking: bool,
    warm_start: bool,
    precision: &str,
    cache_size: f64,
    start: Option<PyReadonlyArray1<'py, f64>>,
    primal: bool,
    start_primal: Option<PyReadonlyArray1<'py, f64>>,
    anchors: Option<PyReadonlyArray1<'py, i64>>,
    anchor_solutions: Option<PyReadonlyArray2<'py, f64>>,
    queries: Option<PyReadonlyArray2<'py, f64>>,
) -> PyResult<LocalResult> {
    let kind = kind(kernel, gamma, coef0, degree)?;
    if primal && !matches!(kind, KernelKind::Linear) {
        return Err(PyValueError::new_err(format!(
            "the primal local solver needs kernel='linear', got kernel={kernel:?}"
        )));
    }
    let opts = LocalOptions {
        c,
        threshold,
        tol,
        max_iter: iteration_cap(max_iter)?,
        shrinking,
        warm_start,
        precision: Precision::from_name(precision)?,
        control: Control::none(),
        cache_bytes: cache_bytes(cache_size)?,
    };
    let (n, d) = x.as_array().dim();
    let sigma = sigma.as_array();
    if sigma.dim().1 != n {
        return Err(PyValueError::new_err(format!(
            "sigma must have shape (n_queries, {n}), got {:?}",
            sigma.dim()
        )));
    }
    let (queries, cross) = (
        queries.as_ref().map(|q| q.as_array()),
        cross.as_ref().map(|c| c.as_array()),
    );
    let queries = match queries {
        Some(_) if !primal => {
            return Err(PyValueError::new_err(
                "queries (the decision values from each query's primal model) need primal=True",
            ))
        }
        Some(q) if q.dim() != (sigma.dim().0, d) => {
            return Err(PyValueError::new_err(format!(
                "queries must have shape ({}, {d}), got {:?}",
                sigma.dim().0,
                q.dim()
            )));
        }
        Some(q) => Some(Flat::new(q)?),
        None => None,
    };
    let cross = match cross {
        Some(c) if c.dim() != sigma.dim() => {
            return Err(PyValueError::new_err(format!(
                "cross must have the shape of sigma, {:?}, got {:?}",
                sigma.dim(),
                c.dim()
            )));
        }
        Some(c) if queries.is_none() => Some(Flat::new(c)?),
        Some(_) => None, // the decision values come from the queries' features
        None if queries.is_none() => {
            return Err(PyValueError::new_err(
                "cross (the kernel between the queries and the training examples) is needed \
                 unless primal=True and queries are given",
            ))
        }
        None => None,
    };
    let y = vec1(y.as_array());
    let start = start.map(|s| vec1(s.as_array()));
    let start_primal = start_primal.map(|s| vec1(s.as_array()));
    let anchors = match (anchors, anchor_solutions) {
        (None, None) => None,
        (Some(idx), Some(sol)) => {
            let index = idx
                .as_array()
                .iter()
                .map(|&i| usize::try_from(i))
                .collect::<Result<Vec<usize>, _>>()
                .map_err(|_| PyValueError::new_err("anchors must be non-negative indices"))?;
            let sol = sol.as_array();
            if sol.dim() != (index.len(), d + 1) {
                return Err(PyValueError::new_err(format!(
                    "anchor_solutions must have shape ({}, {}), got {:?}",
                    index.len(),
                    d + 1,
                    sol.dim()
                )));
            }
            Some((index, sol.iter().copied().collect::<Vec<f64>>()))
        }
        _ => {
            return Err(PyValueError::new_err(
                "anchors and anchor_solutions must be given together",
            ))
        }
    };
    let (x, sigma) = (Flat::new(x.as_array())?, Flat::new(sigma)?);
    let (x, sigma, cross, queries) = (&x, &sigma, &cross, &queries);
    let res = detached(py, move |ctl| {
        let opts = LocalOptions {
            control: ctl.clone(),
            ..opts
        };
        // The Gram matrix is read where numpy holds it; features are copied
        // once into the solver's layout.
        let base = LocalKernel::new(&x.data(kind)?)?;
        let primal = primal.then(|| PrimalInput {
            x: x.as_slice(),
            d,
            start: start_primal.as_deref(),
            max_steps: PRIMAL_STEP_CAP,
            anchors: anchors
                .as_ref()
                .map(|(index, solutions)| Anchors { index, solutions }),
            queries: queries.as_ref().map(|q| q.as_slice()),
        });
        solve_local_with(
            &base,
            &y,
            sigma.as_slice(),
            cross.as_ref().map_or(&[][..], |c| c.as_slice()),
            start.as_deref(),
            primal,
            &opts,
        )
    })?;
    let counts = |v: Vec<usize>| -> Vec<u64> { v.into_iter().map(|c| c as u64).collect() };
    let status: Vec<u8> = res.status.iter().map(|&s| s as u8).collect();
    let primal = if primal {
        let m = res.decision.len();
        Some(into_matrix(py, res.primal, m, d + 1)?.unbind())
    } else {
        None
    };
    Ok(LocalResult {
        decision: res.decision.into_pyarray(py).unbind(),
        status: status.into_pyarray(py).unbind(),
        n_iter: res.n_iter.into_pyarray(py).unbind(),
        n_active: counts(res.n_active).into_pyarray(py).unbind(),
        n_support: counts(res.n_support).into_pyarray(py).unbind(),
        converged: res.converged.into_pyarray(py).unbind(),
        precision: res.precision.name(),
        primal,
    })
}

/// One forward least-squares pass (FLSA / RFLSA); see `_core.pyi`.
#[pyfunction]
#[pyo3(signature = (
    x, y, candidates, *, kernel = "rbf", gamma = 1.0, coef0 = 0.0, degree = 3,
    max_terms = 10, tol = 1e-6, selection = "greedy", gram = "precomputed"
))]
#[allow(clippy::too_many_arguments)]
fn flsa_path<'py>(
    py: Python<'py>,
    x: PyReadonlyArray2<'py, f64>,
    y: PyReadonlyArray1<'py, f64>,
    candidates: PyReadonlyArray1<'py, i64>,
    kernel: &str,
    gamma: f64,
    coef0: f64,
    degree: i64,
    max_terms: i64,
    tol: f64,
    selection: &str,
    gram: &str,
) -> PyResult<FLSAResult> {
    let kind = kind(kernel, gamma, coef0, degree)?;
    let gram = Gram::from_name(gram)?;
    let opts = FlsaOptions {
        max_terms: usize::try_from(max_terms).map_err(|_| {
            PyValueError::new_err(format!(
                "max_terms must be a non-negative integer, got {max_terms}"
            ))
        })?,
        tol,
        selection: Selection::from_name(selection)?,
        control: Control::none(),
    };
    let idx = indices(candidates, "candidates")?;
    let y = vec1(y.as_array());
    let x = Flat::new(x.as_array())?;
    let x = &x;
    let (path, idx) = detached(py, move |ctl| {
        let opts = FlsaOptions {
            control: ctl.clone(),
            ..opts
        };
        let cand = Candidates::new_with(&x.data(kind)?, idx.clone(), gram, ctl)?;
        Ok((forward_select(&cand, &y, &opts)?, idx))
    })?;
    let dim = path.len() + 1;
    let selected: Vec<i64> = path.selected.iter().map(|&c| idx[c] as i64).collect();
    Ok(FLSAResult {
        selected: selected.into_pyarray(py).unbind(),
        r: into_matrix(py, path.r, dim, dim)?.unbind(),
        z: path.z.into_pyarray(py).unbind(),
        residual_sq: path.residual_sq.into_pyarray(py).unbind(),
        n_pruned: path.n_pruned,
        exhausted: path.stop == Stop::Exhausted,
    })
}

/// How many points every model of an FLSA path classifies correctly; see
/// `_core.pyi`.
#[pyfunction]
#[pyo3(signature = (phi, r, z, stages, target))]
fn flsa_staged_correct<'py>(
    py: Python<'py>,
    phi: PyReadonlyArray2<'py, f64>,
    r: PyReadonlyArray2<'py, f64>,
    z: PyReadonlyArray1<'py, f64>,
    stages: usize,
    target: PyReadonlyArray1<'py, f64>,
) -> PyResult<Bound<'py, PyArray1<u64>>> {
    let (phi, r) = (phi.as_array(), r.as_array());
    let m = phi.dim().1;
    let (rows, cols) = r.dim();
    if rows != cols {
        return Err(PyValueError::new_err(format!(
            "r must be square, got shape ({rows}, {cols})"
        )));
    }
    let z = vec1(z.as_array());
    let target = vec1(target.as_array());
    let (phi, r) = (Flat::new(phi)?, Flat::new(r)?);
    let (phi, r) = (&phi, &r);
    let counts = detached(py, move |ctl| {
        staged_correct(
            phi.as_slice(),
            m,
            r.as_slice(),
            rows,
            &z,
            stages,
            &target,
            ctl,
        )
    })?;
    Ok(counts.into_pyarray(py))
}

/// The decision values of every model of an FLSA path; see `_core.pyi`.
#[pyfunction]
#[pyo3(signature = (phi, r, z, stages))]
fn flsa_staged<'py>(
    py: Python<'py>,
    phi: PyReadonlyArray2<'py, f64>,
    r: PyReadonlyArray2<'py, f64>,
    z: PyReadonlyArray1<'py, f64>,
    stages: usize,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let (phi, r) = (phi.as_array(), r.as_array());
    let m = phi.dim().1;
    let (rows, cols) = r.dim();
    if rows != cols {
        return Err(PyValueError::new_err(format!(
            "r must be square, got shape ({rows}, {cols})"
        )));
    }
    if phi.dim().0 + 1 != stages.max(1) {
        return Err(PyValueError::new_err(format!(
            "phi must hold stages - 1 = {} rows (one per support vector), got {}",
            stages.saturating_sub(1),
            phi.dim().0
        )));
    }
    let z = vec1(z.as_array());
    let (phi, r) = (Flat::new(phi)?, Flat::new(r)?);
    let (phi, r) = (&phi, &r);
    let data = detached(py, move |ctl| {
        staged_decisions(phi.as_slice(), m, r.as_slice(), rows, &z, stages, ctl)
    })?;
    into_matrix(py, data, m, stages)
}

fn counts_u64(v: impl Iterator<Item = usize>) -> Vec<u64> {
    v.map(|c| c as u64).collect()
}

/// A required entry of a pickled learner's state.
fn state_item<'py>(state: &Bound<'py, PyDict>, key: &str) -> PyResult<Bound<'py, PyAny>> {
    state
        .get_item(key)?
        .ok_or_else(|| PyValueError::new_err(format!("the learner's state lacks {key:?}")))
}

fn state_vec<T: numpy::Element + Copy>(state: &Bound<'_, PyDict>, key: &str) -> PyResult<Vec<T>> {
    let item = state_item(state, key)?;
    let arr = item.cast::<PyArray1<T>>()?;
    Ok(arr.readonly().as_array().iter().copied().collect())
}

#[pymethods]
impl IncrementalLearner {
    #[new]
    #[pyo3(signature = (n_features, kernel = "rbf", gamma = 1.0, coef0 = 0.0, degree = 3))]
    fn new(n_features: usize, kernel: &str, gamma: f64, coef0: f64, degree: i64) -> PyResult<Self> {
        let kind = kind(kernel, gamma, coef0, degree)?;
        Ok(IncrementalLearner {
            inner: OnlineLearner::new(kind, n_features)?,
            kernel: kernel.to_string(),
            gamma,
            coef0,
            degree,
        })
    }

    /// Learn the rows of `x` in order; see `_core.pyi`.
    #[pyo3(signature = (
        x, y, cls, seen, *, c, threshold, epsilon = 0.5, max_neighbors = 50,
        neighbor_step = 1, max_support = None, rebatch = false, tol = 1e-3,
        max_iter = -1, cache_size = 64.0, reprocess = 1
    ), text_signature = "(self, x, y, cls, seen, *, c, threshold, epsilon=0.5, \
        max_neighbors=50, neighbor_step=1, max_support=None, rebatch=False, tol=0.001, \
        max_iter=-1, cache_size=64.0, reprocess=1)")]
    #[allow(clippy::too_many_arguments)]
    fn learn<'py>(
        &mut self,
        py: Python<'py>,
        x: PyReadonlyArray2<'py, f64>,
        y: PyReadonlyArray1<'py, f64>,
        cls: PyReadonlyArray1<'py, i64>,
        seen: PyReadonlyArray1<'py, i64>,
        c: f64,
        threshold: f64,
        epsilon: f64,
        max_neighbors: usize,
        neighbor_step: usize,
        max_support: Option<usize>,
        rebatch: bool,
        tol: f64,
        max_iter: i64,
        cache_size: f64,
        reprocess: usize,
    ) -> PyResult<LearnResult> {
        let opts = OnlineOptions {
            c,
            threshold,
            epsilon,
            max_neighbors,
            neighbor_step,
            reprocess,
            max_support,
            rebatch,
            tol,
            max_iter: iteration_cap(max_iter)?,
            cache_bytes: cache_bytes(cache_size)?,
            control: Control::none(),
        };
        let d = x.as_array().dim().1;
        if d != self.inner.d() {
            return Err(PyValueError::new_err(format!(
                "x has {d} features, but the learner was created for {}",
                self.inner.d()
            )));
        }
        let x = Flat::new(x.as_array())?;
        let (x, y, cls, seen) = (&x, vec1(y.as_array()), cls.as_array(), seen.as_array());
        let cls: Vec<i64> = cls.iter().copied().collect();
        let seen: Vec<i64> = seen.iter().copied().collect();
        let inner = &mut self.inner;
        let rep = detached(py, move |ctl| {
            let opts = OnlineOptions {
                control: ctl.clone(),
                ..opts
            };
            inner.learn(x.as_slice(), &y, &cls, &seen, &opts)
        })?;
        let st = &rep.steps;
        let floats = |f: fn(&StepRecord) -> f64| -> Py<PyArray1<f64>> {
            st.iter()
                .map(f)
                .collect::<Vec<_>>()
                .into_pyarray(py)
                .unbind()
        };
        let flags = |f: fn(&StepRecord) -> bool| -> Py<PyArray1<bool>> {
            st.iter()
                .map(f)
                .collect::<Vec<_>>()
                .into_pyarray(py)
                .unbind()
        };
        let counts = |f: fn(&StepRecord) -> usize| -> Py<PyArray1<u64>> {
            counts_u64(st.iter().map(f)).into_pyarray(py).unbind()
        };
        Ok(LearnResult {
            updated: flags(|s| s.updated),
            neighbourhood: counts(|s| s.neighbourhood),
            n_solves: counts(|s| s.n_solves),
            reached: flags(|s| s.reached),
            criterion: floats(|s| s.criterion),
            n_support: counts(|s| s.n_support),
            n_stored: counts(|s| s.n_stored),
            time: floats(|s| s.seconds),
            updates: rep.updates,
            capped: rep.capped,
            solves: rep.solves,
            unconverged: rep.unconverged,
        })
    }

    /// `f(x)` for every row of `x`.
    fn decision_function<'py>(
        &self,
        py: Python<'py>,
        x: PyReadonlyArray2<'py, f64>,
    ) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let d = x.as_array().dim().1;
        if d != self.inner.d() {
            return Err(PyValueError::new_err(format!(
                "x has {d} features, but the learner was created for {}",
                self.inner.d()
            )));
        }
        let x = Flat::new(x.as_array())?;
        let (x, inner) = (&x, &self.inner);
        let f = detached(py, move |ctl| inner.decision_with(x.as_slice(), ctl))?;
        Ok(f.into_pyarray(py))
    }

    /// Storage positions of the support vectors.
    fn support<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        let s: Vec<i64> = self.inner.support().into_iter().map(|i| i as i64).collect();
        s.into_pyarray(py)
    }

    #[getter]
    fn n_features(&self) -> usize {
        self.inner.d()
    }

    #[getter]
    fn kernel(&self) -> &str {
        &self.kernel
    }

    #[getter]
    fn n(&self) -> usize {
        self.inner.len()
    }

    #[getter(X)]
    fn x<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<f64>>> {
        into_matrix(
            py,
            self.inner.x().to_vec(),
            self.inner.len(),
            self.inner.d(),
        )
    }

    #[getter]
    fn y<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        self.inner.y().to_vec().into_pyarray(py)
    }

    #[getter]
    fn cls<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        self.inner.cls().to_vec().into_pyarray(py)
    }

    #[getter]
    fn seen<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        self.inner.seen().to_vec().into_pyarray(py)
    }

    #[getter]
    fn alpha<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        self.inner.alpha().to_vec().into_pyarray(py)
    }

    #[getter]
    fn g<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        self.inner.g().to_vec().into_pyarray(py)
    }

    #[getter]
    fn alive<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<bool>> {
        self.inner.alive().to_vec().into_pyarray(py)
    }

    #[getter]
    fn b(&self) -> f64 {
        self.inner.bias()
    }

    #[getter]
    fn t(&self) -> u64 {
        self.inner.t()
    }

    #[getter]
    fn criterion(&self) -> f64 {
        self.inner.criterion()
    }

    #[getter]
    fn n_iter(&self) -> u64 {
        self.inner.n_iter()
    }

    #[getter]
    fn n_support(&self) -> usize {
        self.inner.n_support()
    }

    #[getter]
    fn n_alive(&self) -> usize {
        self.inner.n_alive()
    }

    fn __getstate__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.inner.state();
        let n = s.y.len();
        let d = self.inner.d();
        let out = PyDict::new(py);
        out.set_item("x", into_matrix(py, s.x, n, d)?)?;
        out.set_item("y", s.y.into_pyarray(py))?;
        out.set_item("cls", s.cls.into_pyarray(py))?;
        out.set_item("seen", s.seen.into_pyarray(py))?;
        out.set_item("alpha", s.alpha.into_pyarray(py))?;
        out.set_item("g", s.g.into_pyarray(py))?;
        out.set_item("alive", s.alive.into_pyarray(py))?;
        out.set_item("b", s.b)?;
        out.set_item("t", s.t)?;
        out.set_item("xi_sum", s.xi_sum)?;
        out.set_item("n_iter", s.n_iter)?;
        Ok(out)
    }

    fn __setstate__(&mut self, state: &Bound<'_, PyDict>) -> PyResult<()> {
        let x = state_item(state, "x")?;
        let x = x.cast::<PyArray2<f64>>()?.readonly();
        let x: Vec<f64> = x.as_array().iter().copied().collect();
        let st = LearnerState {
            x,
            y: state_vec(state, "y")?,
            cls: state_vec(state, "cls")?,
            seen: state_vec(state, "seen")?,
            alpha: state_vec(state, "alpha")?,
            g: state_vec(state, "g")?,
            alive: state_vec(state, "alive")?,
            b: state_item(state, "b")?.extract()?,
            t: state_item(state, "t")?.extract()?,
            xi_sum: state_item(state, "xi_sum")?.extract()?,
            n_iter: state_item(state, "n_iter")?.extract()?,
        };
        self.inner = OnlineLearner::from_state(self.inner.kind(), self.inner.d(), st)?;
        Ok(())
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        let py = slf.py();
        let me = slf.borrow();
        let args = (
            me.inner.d(),
            me.kernel.as_str(),
            me.gamma,
            me.coef0,
            me.degree,
        );
        let state = me.__getstate__(py)?;
        PyTuple::new(
            py,
            [
                slf.get_type().into_any(),
                args.into_pyobject(py)?.into_any(),
                state.into_any(),
            ],
        )
    }
}

/// Stops every solve, kernel build and prediction of the core running now,
/// in any thread: each returns `KeyboardInterrupt` soon after. Work started
/// after the call is not affected.
#[pyfunction]
fn interrupt_all() {
    interrupt_all_rs();
}

/// Test-only: panics inside [`detached`], so that a test can check that a
/// panic in the core reaches Python as `RuntimeError` and leaves the
/// interpreter usable. Not part of the API.
#[pyfunction]
fn _raise_internal_panic(py: Python<'_>) -> PyResult<()> {
    detached(py, |_ctl: &Control| -> crate::Result<()> {
        panic!("deliberate panic raised by _raise_internal_panic (test-only)")
    })
}

/// The instruction set the hot loops run with: "avx512", "avx2" or "baseline".
#[pyfunction]
fn simd_level() -> &'static str {
    match crate::simd::level() {
        crate::simd::Level::Avx512 => "avx512",
        crate::simd::Level::Avx2 => "avx2",
        crate::simd::Level::Baseline => "baseline",
    }
}

/// The compiled core of localsvm.
#[pymodule]
#[pyo3(name = "_core")]
fn core_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(solve_qp, m)?)?;
    m.add_function(wrap_pyfunction!(dual_gradient, m)?)?;
    m.add_function(wrap_pyfunction!(kernel_matrix, m)?)?;
    m.add_function(wrap_pyfunction!(decision_values, m)?)?;
    m.add_function(wrap_pyfunction!(decision_values_ovo, m)?)?;
    m.add_function(wrap_pyfunction!(solve_local, m)?)?;
    m.add_function(wrap_pyfunction!(flsa_path, m)?)?;
    m.add_function(wrap_pyfunction!(flsa_staged, m)?)?;
    m.add_function(wrap_pyfunction!(flsa_staged_correct, m)?)?;
    m.add_function(wrap_pyfunction!(simd_level, m)?)?;
    m.add_function(wrap_pyfunction!(interrupt_all, m)?)?;
    m.add_function(wrap_pyfunction!(_raise_internal_panic, m)?)?;
    m.add_class::<CsrMatrix>()?;
    m.add_class::<QPResult>()?;
    m.add_class::<LocalResult>()?;
    m.add_class::<FLSAResult>()?;
    m.add_class::<LearnResult>()?;
    m.add_class::<IncrementalLearner>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
