//! Bindings of the FLSA-SVM: `flsa_path` ([`crate::flsa`]) and the staged
//! decision values of its models ([`crate::flsa::blocks`]).

use numpy::{IntoPyArray, PyArray1, PyArray2, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use super::convert::{indices, into_matrix, kernel_kind, vec1, Flat, Kernel};
use super::runner::detached;
use crate::flsa::blocks::{staged_correct, staged_decisions, Staged};
use crate::flsa::{forward_select, Candidates, FlsaOptions, Gram, Selection, Stop};
use crate::runtime::control::Control;

/// What `flsa_path` returns: the models for every number of terms.
#[pyclass(frozen, get_all, module = "localsvm._core")]
pub(super) struct FLSAResult {
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

/// How `flsa_path` picks the next column; see `_core.pyi`.
#[pyclass(eq, eq_int, frozen, from_py_object, module = "localsvm._core")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum FLSASelection {
    /// The largest error reduction (FLSA).
    #[pyo3(name = "GREEDY")]
    Greedy,
    /// The candidates in the given order (RFLSA).
    #[pyo3(name = "IN_ORDER")]
    InOrder,
}

impl From<FLSASelection> for Selection {
    fn from(s: FLSASelection) -> Self {
        match s {
            FLSASelection::Greedy => Selection::Greedy,
            FLSASelection::InOrder => Selection::InOrder,
        }
    }
}

/// How `flsa_path` holds the candidates' kernel columns; see `_core.pyi`.
#[pyclass(eq, eq_int, frozen, from_py_object, module = "localsvm._core")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum FLSAGram {
    /// The `n × len(candidates)` block, computed once.
    #[pyo3(name = "PRECOMPUTED")]
    Precomputed,
    /// Each column evaluated when needed.
    #[pyo3(name = "ON_THE_FLY")]
    OnTheFly,
}

impl From<FLSAGram> for Gram {
    fn from(g: FLSAGram) -> Self {
        match g {
            FLSAGram::Precomputed => Gram::Precomputed,
            FLSAGram::OnTheFly => Gram::OnTheFly,
        }
    }
}

/// The settings of one `flsa_path` pass, checked once; see `_core.pyi`.
#[pyclass(frozen, get_all, module = "localsvm._core")]
pub(super) struct FLSAOptions {
    max_terms: usize,
    tol: f64,
    selection: FLSASelection,
    gram: FLSAGram,
}

#[pymethods]
impl FLSAOptions {
    #[new]
    #[pyo3(signature = (
        *, max_terms = 10, tol = 1e-6, selection = FLSASelection::Greedy,
        gram = FLSAGram::Precomputed
    ), text_signature = "(*, max_terms=10, tol=1e-06, selection=FLSASelection.GREEDY, \
        gram=FLSAGram.PRECOMPUTED)")]
    fn new(max_terms: i64, tol: f64, selection: FLSASelection, gram: FLSAGram) -> PyResult<Self> {
        let max_terms = usize::try_from(max_terms).map_err(|_| {
            PyValueError::new_err(format!(
                "max_terms must be a non-negative integer, got {max_terms}"
            ))
        })?;
        Ok(FLSAOptions {
            max_terms,
            tol,
            selection,
            gram,
        })
    }
}

/// One forward least-squares pass (FLSA / RFLSA); see `_core.pyi`.
#[pyfunction]
#[pyo3(signature = (x, y, candidates, *, kernel = None, options = None))]
pub(super) fn flsa_path<'py>(
    py: Python<'py>,
    x: PyReadonlyArray2<'py, f64>,
    y: PyReadonlyArray1<'py, f64>,
    candidates: PyReadonlyArray1<'py, i64>,
    kernel: Option<PyRef<'py, Kernel>>,
    options: Option<PyRef<'py, FLSAOptions>>,
) -> PyResult<FLSAResult> {
    let kind = kernel_kind(kernel.as_deref(), "rbf")?;
    let defaults = FLSAOptions {
        max_terms: 10,
        tol: 1e-6,
        selection: FLSASelection::Greedy,
        gram: FLSAGram::Precomputed,
    };
    let options = options.as_deref().unwrap_or(&defaults);
    let gram = options.gram.into();
    let opts = FlsaOptions {
        max_terms: options.max_terms,
        tol: options.tol,
        selection: options.selection.into(),
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

/// The order of an FLSA path's square factor `r` of shape `dim`.
fn square_order((rows, cols): (usize, usize)) -> PyResult<usize> {
    if rows != cols {
        return Err(PyValueError::new_err(format!(
            "r must be square, got shape ({rows}, {cols})"
        )));
    }
    Ok(rows)
}

/// An FLSA path's staged inputs, checked and copied: `phi` (rows of `m`
/// values), `r` (square) and `z`.
struct StagedInput<'a> {
    phi: Flat<'a>,
    m: usize,
    r: Flat<'a>,
    dim: usize,
    z: Vec<f64>,
}

impl<'a> StagedInput<'a> {
    fn new(
        phi: &'a PyReadonlyArray2<'_, f64>,
        r: &'a PyReadonlyArray2<'_, f64>,
        z: &PyReadonlyArray1<'_, f64>,
    ) -> PyResult<Self> {
        let (phi, r) = (phi.as_array(), r.as_array());
        Ok(StagedInput {
            m: phi.dim().1,
            dim: square_order(r.dim())?,
            phi: Flat::new(phi)?,
            r: Flat::new(r)?,
            z: vec1(z.as_array()),
        })
    }

    fn path(&self) -> Staged<'_> {
        Staged {
            phi: self.phi.as_slice(),
            m: self.m,
            r: self.r.as_slice(),
            dim: self.dim,
            z: &self.z,
        }
    }
}

/// How many points every model of an FLSA path classifies correctly; see
/// `_core.pyi`.
#[pyfunction]
#[pyo3(signature = (phi, r, z, stages, target))]
pub(super) fn flsa_staged_correct<'py>(
    py: Python<'py>,
    phi: PyReadonlyArray2<'py, f64>,
    r: PyReadonlyArray2<'py, f64>,
    z: PyReadonlyArray1<'py, f64>,
    stages: usize,
    target: PyReadonlyArray1<'py, f64>,
) -> PyResult<Bound<'py, PyArray1<u64>>> {
    let input = StagedInput::new(&phi, &r, &z)?;
    let target = vec1(target.as_array());
    let input = &input;
    let counts = detached(py, move |ctl| {
        staged_correct(&input.path(), stages, &target, ctl)
    })?;
    Ok(counts.into_pyarray(py))
}

/// The decision values of every model of an FLSA path; see `_core.pyi`.
#[pyfunction]
#[pyo3(signature = (phi, r, z, stages))]
pub(super) fn flsa_staged<'py>(
    py: Python<'py>,
    phi: PyReadonlyArray2<'py, f64>,
    r: PyReadonlyArray2<'py, f64>,
    z: PyReadonlyArray1<'py, f64>,
    stages: usize,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let rows = phi.as_array().dim().0;
    if rows + 1 != stages.max(1) {
        return Err(PyValueError::new_err(format!(
            "phi must hold stages - 1 = {} rows (one per support vector), got {}",
            stages.saturating_sub(1),
            rows
        )));
    }
    let input = StagedInput::new(&phi, &r, &z)?;
    let (m, input) = (input.m, &input);
    let data = detached(py, move |ctl| staged_decisions(&input.path(), stages, ctl))?;
    into_matrix(py, data, m, stages)
}
