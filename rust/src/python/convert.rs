//! What every binding shares: core errors as Python exceptions, numpy
//! arrays as the core's buffers, the [`CsrMatrix`] class and dense-or-sparse
//! inputs, index arrays, and the checks of the options several bindings
//! take (the [`SolverSettings`] and the kernel's parameters).

use std::sync::Arc;

use numpy::ndarray::{ArrayView1, ArrayView2};
use numpy::{IntoPyArray, PyArray2, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::exceptions::{PyKeyboardInterrupt, PyMemoryError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyType};

use super::runner::detached;
use crate::error::{try_copy, try_with_capacity, Error};
use crate::kernel::{CsrRows, KernelKind, KernelSource, Rows, TrainingData};
use crate::precision::Precision;

impl From<Error> for PyErr {
    fn from(err: Error) -> PyErr {
        match err {
            Error::Interrupted => PyKeyboardInterrupt::new_err("interrupted"),
            Error::Memory(msg) => PyMemoryError::new_err(msg),
            other => PyValueError::new_err(other.to_string()),
        }
    }
}

pub(super) fn vec1(a: ArrayView1<'_, f64>) -> Vec<f64> {
    a.iter().copied().collect()
}

/// A 2-D array's values in row-major order: borrowed from numpy when the
/// array is C-contiguous (the borrow stays valid while the GIL is released),
/// else copied.
pub(super) struct Flat<'a> {
    view: ArrayView2<'a, f64>,
    owned: Option<Vec<f64>>,
}

impl<'a> Flat<'a> {
    pub(super) fn new(view: ArrayView2<'a, f64>) -> PyResult<Self> {
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

    pub(super) fn as_slice(&self) -> &[f64] {
        match &self.owned {
            Some(v) => v,
            None => self.view.as_slice().unwrap_or(&[]),
        }
    }

    pub(super) fn rows(&self) -> crate::Result<Rows> {
        let (n, d) = self.view.dim();
        let what = format!("a copy of the {n} × {d} input");
        Rows::new(
            try_copy(self.as_slice(), &what, "pass fewer rows at once")?,
            n,
            d,
        )
    }

    /// The array as a solver's training data for `kind`.
    pub(super) fn data(&self, kind: KernelKind) -> crate::Result<TrainingData<'_>> {
        let (n, d) = self.view.dim();
        TrainingData::new(kind, self.as_slice(), n, d)
    }
}

/// A sparse matrix in compressed sparse row form, checked and copied into
/// the core's layout once; see `_core.pyi`.
#[pyclass(frozen, module = "localsvm._core")]
pub(super) struct CsrMatrix {
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
pub(super) enum XArg<'py> {
    Sparse(Bound<'py, CsrMatrix>),
    Dense(PyReadonlyArray2<'py, f64>),
}

impl<'a, 'py> FromPyObject<'a, 'py> for XArg<'py> {
    type Error = PyErr;

    /// A type check first: calls with dense arrays (the one-vs-one solves of
    /// a fit, hundreds a fit) never build the error of a failed attempt.
    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        if let Ok(csr) = obj.cast::<CsrMatrix>() {
            return Ok(XArg::Sparse(csr.to_owned()));
        }
        obj.extract::<PyReadonlyArray2<'py, f64>>()
            .map(XArg::Dense)
            .map_err(|err| {
                PyTypeError::new_err(format!(
                    "expected a float64 array of two dimensions or a CsrMatrix: {err}"
                ))
            })
    }
}

impl XArg<'_> {
    /// `(rows, columns)`.
    pub(super) fn dim(&self) -> (usize, usize) {
        match self {
            XArg::Sparse(c) => c.get().shape(),
            XArg::Dense(a) => a.as_array().dim(),
        }
    }

    /// The input as the solvers read it without the GIL: sparse rows
    /// shared, a dense array's values borrowed (or copied when not
    /// C-contiguous).
    pub(super) fn input(&self) -> PyResult<Input<'_>> {
        Ok(match self {
            XArg::Sparse(c) => Input::Sparse(Arc::clone(&c.get().inner)),
            XArg::Dense(a) => Input::Dense(Flat::new(a.as_array())?),
        })
    }
}

/// An [`XArg`]'s rows, detached from Python.
pub(super) enum Input<'a> {
    Sparse(Arc<CsrRows>),
    Dense(Flat<'a>),
}

impl Input<'_> {
    /// The kernel source of the solvers over the rows `rows` (all when
    /// None).
    pub(super) fn source(
        &self,
        kind: KernelKind,
        rows: Option<&[usize]>,
    ) -> crate::Result<KernelSource> {
        match self {
            Input::Sparse(csr) => KernelSource::sparse(kind, csr, rows),
            Input::Dense(x) => KernelSource::from_data(&x.data(kind)?, rows),
        }
    }
}

/// Both sparse, or both dense: the decision functions take no mixture.
pub(super) fn same_kind(x: &XArg<'_>, sv: &XArg<'_>) -> PyResult<()> {
    if matches!(x, XArg::Sparse(_)) != matches!(sv, XArg::Sparse(_)) {
        return Err(PyTypeError::new_err(
            "x and sv must both be float64 arrays or both CsrMatrix objects",
        ));
    }
    Ok(())
}

/// Index arrays (`rows`, `active`, `candidates`) as `usize`: non-negative
/// (the core checks the upper bound).
pub(super) fn indices(a: PyReadonlyArray1<'_, i64>, name: &str) -> PyResult<Vec<usize>> {
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
pub(super) fn iteration_cap(max_iter: i64) -> PyResult<Option<u64>> {
    if max_iter < -1 {
        return Err(PyValueError::new_err(format!(
            "max_iter must be -1 (no limit) or a non-negative integer, got {max_iter}"
        )));
    }
    Ok(u64::try_from(max_iter).ok())
}

/// `cache_size` (megabytes) in bytes.
pub(super) fn cache_bytes(cache_size: f64) -> PyResult<usize> {
    if !(cache_size.is_finite() && cache_size > 0.0) {
        return Err(PyValueError::new_err(format!(
            "cache_size must be a positive number of megabytes, got {cache_size}"
        )));
    }
    Ok((cache_size * f64::from(1u32 << 20)) as usize)
}

/// A kernel function and its parameters, checked once; see `_core.pyi`.
#[pyclass(frozen, module = "localsvm._core")]
pub(super) struct Kernel {
    kind: KernelKind,
    name: String,
    gamma: f64,
    coef0: f64,
    degree: i64,
}

#[pymethods]
impl Kernel {
    #[new]
    #[pyo3(signature = (name = "rbf", gamma = 1.0, coef0 = 0.0, degree = 3))]
    fn new(name: &str, gamma: f64, coef0: f64, degree: i64) -> PyResult<Self> {
        Ok(Kernel {
            kind: KernelKind::from_name(name, gamma, coef0, degree)?,
            name: name.to_string(),
            gamma,
            coef0,
            degree,
        })
    }

    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    #[getter]
    fn gamma(&self) -> f64 {
        self.gamma
    }

    #[getter]
    fn coef0(&self) -> f64 {
        self.coef0
    }

    #[getter]
    fn degree(&self) -> i64 {
        self.degree
    }

    fn __repr__(&self) -> String {
        format!(
            "Kernel({:?}, gamma={:?}, coef0={:?}, degree={})",
            self.name, self.gamma, self.coef0, self.degree
        )
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.cast::<Kernel>().is_ok_and(|o| {
            let o = o.get();
            (&o.name, o.gamma, o.coef0, o.degree)
                == (&self.name, self.gamma, self.coef0, self.degree)
        })
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> (Bound<'py, PyType>, (String, f64, f64, i64)) {
        let k = slf.get();
        (slf.get_type(), (k.name.clone(), k.gamma, k.coef0, k.degree))
    }
}

impl Kernel {
    /// The kernel's function for the core.
    pub(super) fn kind(&self) -> KernelKind {
        self.kind
    }

    /// The kernel's name, as given.
    pub(super) fn label(&self) -> &str {
        &self.name
    }
}

/// The SMO settings `solve_qp` and `solve_local` share, checked once; see
/// `_core.pyi`.
#[pyclass(frozen, module = "localsvm._core")]
pub(super) struct SolverSettings {
    tol: f64,
    max_iter: i64,
    cache_size: f64,
    shrinking: bool,
    precision: Precision,
}

#[pymethods]
impl SolverSettings {
    #[new]
    #[pyo3(
        signature = (
            *, tol = 1e-3, max_iter = -1, cache_size = 200.0, shrinking = true, precision = "auto"
        ),
        text_signature = "(*, tol=0.001, max_iter=-1, cache_size=200.0, shrinking=True, \
            precision='auto')"
    )]
    fn new(
        tol: f64,
        max_iter: i64,
        cache_size: f64,
        shrinking: bool,
        precision: &str,
    ) -> PyResult<Self> {
        if !(tol.is_finite() && tol > 0.0) {
            return Err(PyValueError::new_err(format!(
                "tol must be a positive finite number, got {tol}"
            )));
        }
        iteration_cap(max_iter)?;
        cache_bytes(cache_size)?;
        Ok(SolverSettings {
            tol,
            max_iter,
            cache_size,
            shrinking,
            precision: Precision::from_name(precision)?,
        })
    }

    #[getter]
    fn tol(&self) -> f64 {
        self.tol
    }

    #[getter]
    fn max_iter(&self) -> i64 {
        self.max_iter
    }

    #[getter]
    fn cache_size(&self) -> f64 {
        self.cache_size
    }

    #[getter]
    fn shrinking(&self) -> bool {
        self.shrinking
    }

    #[getter]
    fn precision(&self) -> &'static str {
        self.precision.name()
    }

    fn __repr__(&self) -> String {
        format!(
            "SolverSettings(tol={:?}, max_iter={}, cache_size={:?}, shrinking={}, precision={:?})",
            self.tol,
            self.max_iter,
            self.cache_size,
            if self.shrinking { "True" } else { "False" },
            self.precision.name()
        )
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.cast::<SolverSettings>().is_ok_and(|o| {
            let o = o.get();
            (o.tol, o.max_iter, o.cache_size, o.shrinking, o.precision)
                == (
                    self.tol,
                    self.max_iter,
                    self.cache_size,
                    self.shrinking,
                    self.precision,
                )
        })
    }

    /// Pickling: the constructor is keyword-only, so its keywords.
    fn __getnewargs_ex__<'py>(&self, py: Python<'py>) -> PyResult<((), Bound<'py, PyDict>)> {
        let kwargs = PyDict::new(py);
        kwargs.set_item("tol", self.tol)?;
        kwargs.set_item("max_iter", self.max_iter)?;
        kwargs.set_item("cache_size", self.cache_size)?;
        kwargs.set_item("shrinking", self.shrinking)?;
        kwargs.set_item("precision", self.precision.name())?;
        Ok(((), kwargs))
    }
}

impl SolverSettings {
    /// The settings with their defaults (`SolverSettings()`).
    pub(super) fn default_values() -> Self {
        SolverSettings {
            tol: 1e-3,
            max_iter: -1,
            cache_size: 200.0,
            shrinking: true,
            precision: Precision::Auto,
        }
    }

    pub(super) fn tol_value(&self) -> f64 {
        self.tol
    }

    /// The iteration cap (`None`: the solver's own safety cap).
    pub(super) fn iteration_cap(&self) -> Option<u64> {
        u64::try_from(self.max_iter).ok()
    }

    /// The cache budget in bytes.
    pub(super) fn cache_bytes(&self) -> usize {
        (self.cache_size * f64::from(1u32 << 20)) as usize
    }

    pub(super) fn shrinking_value(&self) -> bool {
        self.shrinking
    }

    pub(super) fn precision_value(&self) -> Precision {
        self.precision
    }
}

/// A binding's `kernel` argument: the one given, else `default` with the
/// parameters' defaults (`Kernel(default)`).
pub(super) fn kernel_kind(kernel: Option<&Kernel>, default: &str) -> PyResult<KernelKind> {
    match kernel {
        Some(k) => Ok(k.kind),
        None => Ok(KernelKind::from_name(default, 1.0, 0.0, 3)?),
    }
}

pub(super) fn into_matrix<'py>(
    py: Python<'py>,
    data: Vec<f64>,
    rows: usize,
    cols: usize,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let flat = data.into_pyarray(py);
    flat.reshape([rows, cols])
}

pub(super) fn counts_u64(v: impl Iterator<Item = usize>) -> Vec<u64> {
    v.map(|c| c as u64).collect()
}
