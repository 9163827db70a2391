//! Binding of the regularisation path of cross-validation, `c_path`
//! ([`crate::solver::cpath`]).

use numpy::{
    IntoPyArray, PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2,
    PyUntypedArrayMethods,
};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use super::convert::{
    indices, into_matrix, kernel_kind, vec1, Flat, Input, Kernel, SolverSettings, XArg,
};
use super::runner::detached;
use crate::kernel::{Gram, KernelSource};
use crate::solver::cpath::{EarlyStop, HeldOutKernel, PathProblem, PathSettings};

/// What `c_path` returns.
#[pyclass(frozen, get_all, module = "localsvm._core")]
pub(super) struct CPathResult {
    /// Held-out decision values, one row per `C`.
    decision: Py<PyArray2<f64>>,
    /// Solver iterations per `C`.
    n_iter: Py<PyArray1<u64>>,
    /// False where the iteration cap stopped the solve.
    converged: Py<PyArray1<bool>>,
    /// The kernel path used: 'float32' or 'float64'.
    precision: &'static str,
    /// The first `C` the early stop left unsolved (None: every `C` solved).
    stopped: Option<usize>,
    /// With the fold's `keep_alpha`: the multipliers per `C` (one row each,
    /// NaN where unsolved); else None.
    alpha: Option<Py<PyArray2<f64>>>,
}

/// One fold of a cross-validation path: the training rows (the dual's
/// variables), the held-out rows, the linear term and, with a precomputed
/// kernel, the held-out kernel block; checked once (the block is read
/// into the core by `c_path`, its one copy).
#[pyclass(frozen, module = "localsvm._core")]
pub(super) struct CPathFold {
    rows: Vec<usize>,
    valid: Vec<usize>,
    p: Option<Vec<f64>>,
    /// The caller's array, shape-checked here and copied once, by `c_path`.
    cross: Option<Py<PyArray2<f64>>>,
    /// When the path may stop early.
    early_stop: Option<EarlyStop>,
    /// Whether the result keeps the multipliers of every solved `C`.
    keep_alpha: bool,
}

#[pymethods]
impl CPathFold {
    #[new]
    #[pyo3(signature = (
        rows, valid, *, p = None, cross = None, target = None, stop_margin = None,
        regression = false, keep_alpha = false,
    ))]
    fn new(
        rows: PyReadonlyArray1<'_, i64>,
        valid: PyReadonlyArray1<'_, i64>,
        p: Option<PyReadonlyArray1<'_, f64>>,
        cross: Option<PyReadonlyArray2<'_, f64>>,
        target: Option<PyReadonlyArray1<'_, f64>>,
        stop_margin: Option<f64>,
        regression: bool,
        keep_alpha: bool,
    ) -> PyResult<Self> {
        let rows = indices(rows, "rows")?;
        let valid = indices(valid, "valid")?;
        if let Some(p) = &p {
            if p.len() != rows.len() {
                return Err(PyValueError::new_err(format!(
                    "p must have one value per row, got {} for {} rows",
                    p.len(),
                    rows.len()
                )));
            }
        }
        if let Some(c) = &cross {
            let (m, v) = c.as_array().dim();
            if (m, v) != (rows.len(), valid.len()) {
                return Err(PyValueError::new_err(format!(
                    "cross must have shape (len(rows), len(valid)), got ({m}, {v})"
                )));
            }
        }
        let early_stop = match (stop_margin, target) {
            (None, _) => None,
            (Some(margin), Some(target)) => {
                if target.len() != valid.len() {
                    return Err(PyValueError::new_err(format!(
                        "target must have one value per held-out row, got {} for {}",
                        target.len(),
                        valid.len()
                    )));
                }
                Some(EarlyStop {
                    target: vec1(target.as_array()),
                    regression,
                    margin,
                })
            }
            (Some(_), None) => {
                return Err(PyValueError::new_err(
                    "stop_margin needs target, the held-out rows' labels or values",
                ))
            }
        };
        Ok(CPathFold {
            rows,
            valid,
            p: p.map(|a| vec1(a.as_array())),
            cross: cross.map(|c| (*c).clone().unbind()),
            early_stop,
            keep_alpha,
        })
    }
}

/// A kernel matrix over every row, computed once in the core and read in
/// place by the paths of every fold; see `_core.pyi`.
#[pyclass(frozen, module = "localsvm._core")]
pub(super) struct KernelMatrix {
    gram: Gram,
}

#[pymethods]
impl KernelMatrix {
    #[new]
    #[pyo3(signature = (base, kernel, *, tol = None, norms = None))]
    fn new(
        py: Python<'_>,
        base: PyReadonlyArray2<'_, f64>,
        kernel: PyRef<'_, Kernel>,
        tol: Option<f64>,
        norms: Option<PyReadonlyArray1<'_, f64>>,
    ) -> PyResult<Self> {
        if tol.is_some_and(|t| !(t.is_finite() && t > 0.0)) {
            return Err(PyValueError::new_err("tol must be positive and finite"));
        }
        let (n, m) = base.as_array().dim();
        if n != m {
            return Err(PyValueError::new_err(format!(
                "base must be a square matrix, got shape ({n}, {m})"
            )));
        }
        let kind = kernel.kind();
        let flat = Flat::new(base.as_array())?;
        let flat = &flat;
        let norms = norms.map(|a| vec1(a.as_array()));
        let norms = norms.as_deref();
        let gram = detached(py, move |ctl| {
            Gram::from_base(
                (flat.as_slice(), norms),
                n,
                kind,
                tol,
                "pass kernel_matrix='per_fold' to compute kernel values per fold",
                ctl,
            )
        })?;
        Ok(KernelMatrix { gram })
    }

    /// Rows (and columns).
    #[getter]
    fn n(&self) -> usize {
        self.gram.n()
    }

    /// Bytes per value of the matrix of `kernel` for solves at `tol`.
    #[staticmethod]
    #[pyo3(signature = (kernel, tol = None))]
    fn itemsize(kernel: PyRef<'_, Kernel>, tol: Option<f64>) -> PyResult<usize> {
        let single = Gram::stores_f32(kernel.kind(), tol)?;
        Ok(if single { 4 } else { 8 })
    }

    /// The storage type of the values: 'float32' or 'float64'.
    #[getter]
    fn dtype(&self) -> &'static str {
        if self.gram.is_f32() {
            "float32"
        } else {
            "float64"
        }
    }
}

/// What a path reads its kernel values from: a shared [`KernelMatrix`], or
/// the caller's data (feature rows, or a precomputed kernel as an array).
#[derive(FromPyObject)]
pub(super) enum PathX<'py> {
    Gram(PyRef<'py, KernelMatrix>),
    Data(XArg<'py>),
}

/// A [`PathX`] detached from Python for the GIL-free solve.
enum Read<'a> {
    Gram(Gram),
    Data(Input<'a>),
}

/// Solve one dual along increasing `C` on one Hessian and score the
/// held-out rows of `fold`; see `_core.pyi`.
#[pyfunction]
#[pyo3(signature = (x, y, weights, cs, fold, *, kernel = None, settings = None))]
pub(super) fn c_path<'py>(
    py: Python<'py>,
    x: PathX<'py>,
    y: PyReadonlyArray1<'py, f64>,
    weights: PyReadonlyArray1<'py, f64>,
    cs: PyReadonlyArray1<'py, f64>,
    fold: PyRef<'py, CPathFold>,
    kernel: Option<PyRef<'py, Kernel>>,
    settings: Option<PyRef<'py, SolverSettings>>,
) -> PyResult<CPathResult> {
    let kind = kernel_kind(kernel.as_deref(), "rbf")?;
    let precomputed = matches!(kind, crate::kernel::KernelKind::Precomputed);
    let shared = matches!(x, PathX::Gram(_));
    if shared && (!precomputed || fold.cross.is_some()) {
        return Err(PyValueError::new_err(
            "a KernelMatrix is read with kernel='precomputed' and without cross",
        ));
    }
    if !shared && precomputed != fold.cross.is_some() {
        return Err(PyValueError::new_err(
            "cross (the kernel between the training and the held-out rows) is given with \
             kernel='precomputed', and only then",
        ));
    }
    let cross = match &fold.cross {
        Some(c) => Some(
            c.bind(py)
                .try_readonly()
                .map_err(|e| PyValueError::new_err(format!("cross cannot be read: {e}")))?
                .as_array()
                .iter()
                .copied()
                .collect::<Vec<f64>>(),
        ),
        None => None,
    };
    let defaults = SolverSettings::default_values();
    let settings = settings.as_deref().unwrap_or(&defaults);
    let path_settings = PathSettings {
        tol: settings.tol_value(),
        max_iter: settings.iteration_cap(),
        shrinking: settings.shrinking_value(),
        cache_bytes: settings.cache_bytes(),
        precision: settings.precision_value(),
    };
    let rows = fold.rows.clone();
    let valid = fold.valid.clone();
    let early_stop = fold.early_stop.clone();
    let keep_alpha = fold.keep_alpha;
    let n_rows = match &x {
        PathX::Gram(k) => k.gram.n(),
        PathX::Data(d) => d.dim().0,
    };
    if let Some(&bad) = rows.iter().chain(&valid).find(|&&i| i >= n_rows) {
        return Err(PyValueError::new_err(format!(
            "row index {bad} is out of range for the {n_rows} rows of x"
        )));
    }
    let y = vec1(y.as_array());
    let weights = vec1(weights.as_array());
    let cs = vec1(cs.as_array());
    if y.len() != rows.len() || weights.len() != rows.len() {
        return Err(PyValueError::new_err(format!(
            "y and weights must have one value per row of the fold ({}), got {} and {}",
            rows.len(),
            y.len(),
            weights.len()
        )));
    }
    let p = fold.p.clone().unwrap_or_else(|| vec![-1.0; y.len()]);
    let n_c = cs.len();
    let n_valid = valid.len();
    let read = match &x {
        PathX::Gram(k) => Read::Gram(k.gram.clone()),
        PathX::Data(d) => Read::Data(d.input()?),
    };
    let read = &read;
    let out = detached(py, move |ctl| {
        let (train, held) = match read {
            Read::Gram(gram) => (
                KernelSource::gram_rows(gram, &rows)?,
                HeldOutKernel::Gram {
                    gram: gram.clone(),
                    valid,
                },
            ),
            Read::Data(x) => {
                let train = x.source(kind, Some(&rows))?;
                let held = match cross {
                    Some(block) => HeldOutKernel::Block(block),
                    None => {
                        let mut both = valid;
                        both.extend_from_slice(&rows);
                        HeldOutKernel::Rows(x.source(kind, Some(&both))?)
                    }
                };
                (train, held)
            }
        };
        PathProblem {
            train,
            valid: held,
            n_valid,
            row_of: rows,
            y,
            p,
            weights,
            cs,
            early_stop,
            keep_alpha,
        }
        .solve(&path_settings, ctl)
    })?;
    let alpha = if keep_alpha {
        let n_var = out.alpha.len() / n_c;
        Some(into_matrix(py, out.alpha, n_c, n_var)?.unbind())
    } else {
        None
    };
    Ok(CPathResult {
        alpha,
        decision: into_matrix(py, out.decision, n_c, n_valid)?.unbind(),
        n_iter: out.n_iter.into_pyarray(py).unbind(),
        converged: out.converged.into_pyarray(py).unbind(),
        precision: out.precision.map_or("float64", |p| p.name()),
        stopped: out.stopped,
    })
}
