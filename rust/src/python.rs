//! PyO3 bindings: the only module that sees Python. Arrays are borrowed from
//! numpy, copied once into the solver's own row-major buffers, and the work
//! runs with the GIL released. Input errors become `ValueError`; a panic (a
//! bug) becomes `RuntimeError` instead of aborting the interpreter.

use std::panic::{catch_unwind, AssertUnwindSafe};

use numpy::ndarray::{ArrayView1, ArrayView2};
use numpy::{IntoPyArray, PyArray2, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::error::Error;
use crate::kernel::{kernel_matrix as kernel_matrix_rs, KernelKind, KernelSource, Rows};
use crate::predict;
use crate::problem::{Constraint, DualProblem, SolverOptions};

impl From<Error> for PyErr {
    fn from(err: Error) -> PyErr {
        PyValueError::new_err(err.to_string())
    }
}

/// Runs `work` without the GIL, on a thread of rayon's pool (so the parallel
/// loops inside it fork from a pool thread instead of crossing threads on
/// every call), turning a panic into `RuntimeError`.
fn detached<T, F>(py: Python<'_>, work: F) -> PyResult<T>
where
    T: Send,
    F: FnOnce() -> crate::Result<T> + Send,
{
    let outcome = py.detach(|| catch_unwind(AssertUnwindSafe(|| rayon::scope(|_| work()))));
    match outcome {
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

fn rows(a: ArrayView2<'_, f64>) -> crate::Result<Rows> {
    let (n, d) = a.dim();
    let data = match a.as_slice() {
        Some(s) => s.to_vec(),
        None => a.iter().copied().collect(),
    };
    Rows::new(data, n, d)
}

fn kind(kernel: &str, gamma: f64, coef0: f64, degree: i64) -> PyResult<KernelKind> {
    Ok(KernelKind::from_name(kernel, gamma, coef0, degree)?)
}

/// Solve `min ½αᵀQα + pᵀα, 0 ≤ α ≤ upper [, yᵀα = 0]`; see `_core.pyi`.
#[pyfunction]
#[pyo3(signature = (
    x, y, upper, *, kernel = "rbf", gamma = 1.0, coef0 = 0.0, degree = 3,
    p = None, alpha0 = None, active = None, equality = true, tol = 1e-3,
    max_iter = -1, cache_size = 200.0, shrinking = true
), text_signature = "(x, y, upper, *, kernel='rbf', gamma=1.0, coef0=0.0, degree=3, \
    p=None, alpha0=None, active=None, equality=True, tol=0.001, max_iter=-1, \
    cache_size=200.0, shrinking=True)")]
#[allow(clippy::too_many_arguments)]
fn solve_qp<'py>(
    py: Python<'py>,
    x: PyReadonlyArray2<'py, f64>,
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
) -> PyResult<Bound<'py, PyDict>> {
    let kind = kind(kernel, gamma, coef0, degree)?;
    if !(cache_size.is_finite() && cache_size > 0.0) {
        return Err(PyValueError::new_err(format!(
            "cache_size must be a positive number of megabytes, got {cache_size}"
        )));
    }
    if max_iter < -1 {
        return Err(PyValueError::new_err(format!(
            "max_iter must be -1 (no limit) or a non-negative integer, got {max_iter}"
        )));
    }
    let x = x.as_array();
    let source = if kind == KernelKind::Precomputed {
        let (n, m) = x.dim();
        if n != m {
            return Err(PyValueError::new_err(format!(
                "a precomputed kernel must be square, got shape ({n}, {m})"
            )));
        }
        KernelSource::precomputed(x.iter().copied().collect(), n)?
    } else {
        KernelSource::dense(kind, rows(x)?)?
    };
    let active = match active {
        Some(a) => {
            let mut out = Vec::with_capacity(a.len()?);
            for &v in a.as_array().iter() {
                let idx = usize::try_from(v).map_err(|_| {
                    PyValueError::new_err(format!("active indices must be non-negative, got {v}"))
                })?;
                out.push(idx);
            }
            Some(out)
        }
        None => None,
    };
    let problem = DualProblem {
        source,
        y: vec1(y.as_array()),
        p: p.map(|a| vec1(a.as_array())),
        upper: vec1(upper.as_array()),
        alpha0: alpha0.map(|a| vec1(a.as_array())),
        active,
        constraint: if equality {
            Constraint::Equality
        } else {
            Constraint::BoxOnly
        },
    };
    let opts = SolverOptions {
        tol,
        max_iter: u64::try_from(max_iter).ok(),
        shrinking,
        cache_bytes: (cache_size * f64::from(1u32 << 20)) as usize,
    };
    let sol = detached(py, move || problem.solve(&opts))?;
    let out = PyDict::new(py);
    out.set_item("alpha", sol.alpha.into_pyarray(py))?;
    out.set_item("rho", sol.rho)?;
    out.set_item("objective", sol.objective)?;
    out.set_item("n_iter", sol.n_iter)?;
    out.set_item("converged", sol.converged)?;
    out.set_item("n_optimised", sol.n_optimised)?;
    out.set_item("kernel_evaluations", sol.kernel_evaluations)?;
    Ok(out)
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
    let a = rows(a.as_array())?;
    let b = rows(b.as_array())?;
    let (na, nb) = (a.n(), b.n());
    let data = detached(py, move || kernel_matrix_rs(kind, &a, &b))?;
    into_matrix(py, data, na, nb)
}

/// Decision values `coef · K(sv, x) + intercept` for every row of `x`.
#[pyfunction]
#[pyo3(signature = (x, sv, coef, intercept, *, kernel = "rbf", gamma = 1.0, coef0 = 0.0, degree = 3))]
#[allow(clippy::too_many_arguments)]
fn decision_values<'py>(
    py: Python<'py>,
    x: PyReadonlyArray2<'py, f64>,
    sv: PyReadonlyArray2<'py, f64>,
    coef: PyReadonlyArray2<'py, f64>,
    intercept: PyReadonlyArray1<'py, f64>,
    kernel: &str,
    gamma: f64,
    coef0: f64,
    degree: i64,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let kind = kind(kernel, gamma, coef0, degree)?;
    let test = rows(x.as_array())?;
    let sv = rows(sv.as_array())?;
    let coef = coef.as_array();
    if coef.dim().1 != sv.n() {
        return Err(PyValueError::new_err(format!(
            "coef has {} columns but there are {} support vectors",
            coef.dim().1,
            sv.n()
        )));
    }
    let coef: Vec<f64> = coef.iter().copied().collect();
    let intercept = vec1(intercept.as_array());
    let (m, k) = (test.n(), intercept.len());
    let data = detached(py, move || {
        predict::decision_values(kind, &test, &sv, &coef, &intercept)
    })?;
    into_matrix(py, data, m, k)
}

/// The compiled core of localsvm.
#[pymodule]
#[pyo3(name = "_core")]
fn core_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(solve_qp, m)?)?;
    m.add_function(wrap_pyfunction!(kernel_matrix, m)?)?;
    m.add_function(wrap_pyfunction!(decision_values, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
