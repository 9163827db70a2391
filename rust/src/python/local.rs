//! Binding of the localized SVM, `solve_local` ([`crate::local`]).

use numpy::{IntoPyArray, PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use super::convert::{counts_u64, into_matrix, kernel_kind, vec1, Flat, Kernel, SolverSettings};
use super::runner::detached;
use crate::kernel::KernelKind;
use crate::local::{
    solve_local_with, Anchors, LocalKernel, LocalOptions, PrimalInput, PRIMAL_STEP_CAP,
};
use crate::runtime::control::Control;

/// What `solve_local` returns: one entry per query, in query order.
#[pyclass(frozen, get_all, module = "localsvm._core")]
pub(super) struct LocalResult {
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

/// Anchor examples and their `(w, b)`: `(index, solutions)`.
type AnchorsArg = (Py<PyArray1<i64>>, Py<PyArray2<f64>>);

/// The primal solver of `solve_local` and what it starts from; see
/// `_core.pyi`.
#[pyclass(frozen, module = "localsvm._core")]
pub(super) struct LocalPrimal {
    #[pyo3(get)]
    start: Option<Py<PyArray1<f64>>>,
    #[pyo3(get)]
    anchors: Option<AnchorsArg>,
    #[pyo3(get)]
    queries: Option<Py<PyArray2<f64>>>,
}

#[pymethods]
impl LocalPrimal {
    #[new]
    #[pyo3(signature = (*, start = None, anchors = None, queries = None))]
    fn new(
        start: Option<Py<PyArray1<f64>>>,
        anchors: Option<AnchorsArg>,
        queries: Option<Py<PyArray2<f64>>>,
    ) -> Self {
        LocalPrimal {
            start,
            anchors,
            queries,
        }
    }
}

/// What `solve_local` solves besides the data, checked once; see
/// `_core.pyi`.
#[pyclass(frozen, name = "LocalOptions", module = "localsvm._core")]
pub(super) struct LocalSolve {
    #[pyo3(get)]
    c: f64,
    #[pyo3(get)]
    threshold: f64,
    #[pyo3(get)]
    warm_start: bool,
    #[pyo3(get)]
    start: Option<Py<PyArray1<f64>>>,
    #[pyo3(get)]
    primal: Option<Py<LocalPrimal>>,
}

#[pymethods]
impl LocalSolve {
    #[new]
    #[pyo3(signature = (c, *, threshold = 1e-6, warm_start = true, start = None, primal = None))]
    fn new(
        c: f64,
        threshold: f64,
        warm_start: bool,
        start: Option<Py<PyArray1<f64>>>,
        primal: Option<Py<LocalPrimal>>,
    ) -> Self {
        LocalSolve {
            c,
            threshold,
            warm_start,
            start,
            primal,
        }
    }
}

/// One localized SVM per query (row of `sigma`); see `_core.pyi`.
#[pyfunction]
#[pyo3(signature = (x, y, sigma, cross, *, options, kernel = None, settings = None))]
pub(super) fn solve_local<'py>(
    py: Python<'py>,
    x: PyReadonlyArray2<'py, f64>,
    y: PyReadonlyArray1<'py, f64>,
    sigma: PyReadonlyArray2<'py, f64>,
    cross: Option<PyReadonlyArray2<'py, f64>>,
    options: PyRef<'py, LocalSolve>,
    kernel: Option<PyRef<'py, Kernel>>,
    settings: Option<PyRef<'py, SolverSettings>>,
) -> PyResult<LocalResult> {
    let kind = kernel_kind(kernel.as_deref(), "linear")?;
    let primal_options = options.primal.as_ref().map(|p| p.get());
    let primal = primal_options.is_some();
    if primal && !matches!(kind, KernelKind::Linear) {
        return Err(PyValueError::new_err(format!(
            "the primal local solver needs kernel='linear', got kernel={:?}",
            kernel.as_deref().map_or("linear", Kernel::label)
        )));
    }
    let defaults = SolverSettings::default_values();
    let settings = settings.as_deref().unwrap_or(&defaults);
    let opts = LocalOptions {
        c: options.c,
        threshold: options.threshold,
        tol: settings.tol_value(),
        max_iter: settings.iteration_cap(),
        shrinking: settings.shrinking_value(),
        warm_start: options.warm_start,
        precision: settings.precision_value(),
        control: Control::none(),
        cache_bytes: settings.cache_bytes(),
    };
    let read1 = |a: Option<&Py<PyArray1<f64>>>| a.map(|a| a.bind(py).try_readonly()).transpose();
    let start = read1(options.start.as_ref())?;
    let start_primal = read1(primal_options.and_then(|p| p.start.as_ref()))?;
    let queries = primal_options
        .and_then(|p| p.queries.as_ref())
        .map(|q| q.bind(py).try_readonly())
        .transpose()?;
    let anchors = match primal_options.and_then(|p| p.anchors.as_ref()) {
        Some((i, s)) => Some((i.bind(py).try_readonly()?, s.bind(py).try_readonly()?)),
        None => None,
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
                 unless the primal solver is given queries",
            ))
        }
        None => None,
    };
    let y = vec1(y.as_array());
    let start = start.map(|s| vec1(s.as_array()));
    let start_primal = start_primal.map(|s| vec1(s.as_array()));
    let anchors = match anchors {
        None => None,
        Some((idx, sol)) => {
            let index = idx
                .as_array()
                .iter()
                .map(|&i| usize::try_from(i))
                .collect::<Result<Vec<usize>, _>>()
                .map_err(|_| PyValueError::new_err("anchors must be non-negative indices"))?;
            let sol = sol.as_array();
            if sol.dim() != (index.len(), d + 1) {
                return Err(PyValueError::new_err(format!(
                    "anchors' solutions must have shape ({}, {}), got {:?}",
                    index.len(),
                    d + 1,
                    sol.dim()
                )));
            }
            Some((index, sol.iter().copied().collect::<Vec<f64>>()))
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
        n_active: counts_u64(res.n_active.into_iter())
            .into_pyarray(py)
            .unbind(),
        n_support: counts_u64(res.n_support.into_iter())
            .into_pyarray(py)
            .unbind(),
        converged: res.converged.into_pyarray(py).unbind(),
        precision: res.precision.name(),
        primal,
    })
}
