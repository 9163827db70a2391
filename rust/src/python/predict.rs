//! Bindings of kernel evaluation: `kernel_matrix` ([`crate::kernel`]) and
//! the decision values of kernel expansions, `decision_values` and
//! `decision_values_ovo` ([`crate::predict`]).

use numpy::{PyArray2, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use super::convert::{
    indices, into_matrix, kernel_kind, same_kind, vec1, Flat, Input, Kernel, XArg,
};
use super::runner::detached;
use crate::kernel::{kernel_matrix_with, CsrRows, KernelKind, Rows};
use crate::precision::Precision;
use crate::predict;
use crate::runtime::control::Control;

/// The kernel matrix between the rows of `a` and `b`.
#[pyfunction]
#[pyo3(signature = (a, b, *, kernel = None))]
pub(super) fn kernel_matrix<'py>(
    py: Python<'py>,
    a: PyReadonlyArray2<'py, f64>,
    b: PyReadonlyArray2<'py, f64>,
    kernel: Option<PyRef<'py, Kernel>>,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let kind = kernel_kind(kernel.as_deref(), "rbf")?;
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
#[pyo3(signature = (x, sv, coef, intercept, *, kernel = None, precision = "auto"))]
pub(super) fn decision_values<'py>(
    py: Python<'py>,
    x: XArg<'py>,
    sv: XArg<'py>,
    coef: PyReadonlyArray2<'py, f64>,
    intercept: PyReadonlyArray1<'py, f64>,
    kernel: Option<PyRef<'py, Kernel>>,
    precision: &str,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let (kind, precision) = expansion_kind(kernel.as_deref(), precision, &x, &sv)?;
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
    let (coef, intercept) = (&coef, &intercept);
    expansion(
        py,
        &x,
        &sv,
        intercept.len(),
        move |x, sv, ctl| predict::decision_values_sparse(kind, x, sv, coef, intercept, ctl),
        move |x, sv, ctl| {
            predict::decision_values_controlled(kind, x, sv, coef, intercept, precision, ctl)
                .map(|(v, _)| v)
        },
    )
}

/// Decision values of one-vs-one pairs over class-grouped support vectors,
/// each pair's coefficients only over its two classes; see `_core.pyi`.
#[pyfunction]
#[pyo3(signature = (
    x, sv, n_support, pairs, coef, intercept, *, kernel = None, precision = "auto"
))]
pub(super) fn decision_values_ovo<'py>(
    x: XArg<'py>,
    sv: XArg<'py>,
    n_support: PyReadonlyArray1<'py, i64>,
    pairs: PyReadonlyArray2<'py, i64>,
    coef: PyReadonlyArray1<'py, f64>,
    intercept: PyReadonlyArray1<'py, f64>,
    kernel: Option<PyRef<'py, Kernel>>,
    precision: &str,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    // Python's token from an argument: the binding takes the 8 arguments
    // Python passes and no more.
    let py = coef.py();
    let (kind, precision) = expansion_kind(kernel.as_deref(), precision, &x, &sv)?;
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
    let ovo = predict::OvoPairs {
        class_counts: &counts,
        pairs: &pairs,
    };
    let (ovo, coef, intercept) = (&ovo, &coef, &intercept);
    expansion(
        py,
        &x,
        &sv,
        intercept.len(),
        move |x, sv, ctl| {
            predict::decision_values_pairs_sparse(kind, x, sv, ovo, coef, intercept, ctl)
        },
        move |x, sv, ctl| {
            predict::decision_values_pairs_controlled(
                kind, x, sv, ovo, coef, intercept, precision, ctl,
            )
            .map(|(v, _)| v)
        },
    )
}

/// The decision functions' shared checks: the kernel (`Kernel('rbf')` when
/// None), the precision's name, and `x` and `sv` both dense or both sparse.
fn expansion_kind(
    kernel: Option<&Kernel>,
    precision: &str,
    x: &XArg<'_>,
    sv: &XArg<'_>,
) -> PyResult<(KernelKind, Precision)> {
    let kind = kernel_kind(kernel, "rbf")?;
    let precision = Precision::from_name(precision)?;
    same_kind(x, sv)?;
    Ok((kind, precision))
}

/// The decision functions' shared tail: `sparse` or `dense` (over the rows
/// copied into the core's layout) runs without the GIL on `x` and `sv`,
/// both sparse or both dense ([`same_kind`]), and its `k` values per row of
/// `x` come back as an `(n_samples, k)` array.
fn expansion<'py, S, D>(
    py: Python<'py>,
    x: &XArg<'py>,
    sv: &XArg<'py>,
    k: usize,
    sparse: S,
    dense: D,
) -> PyResult<Bound<'py, PyArray2<f64>>>
where
    S: FnOnce(&CsrRows, &CsrRows, &Control) -> crate::Result<Vec<f64>> + Send,
    D: FnOnce(&Rows, &Rows, &Control) -> crate::Result<Vec<f64>> + Send,
{
    let m = x.dim().0;
    let (x, sv) = (x.input()?, sv.input()?);
    let (x, sv) = (&x, &sv);
    let data = detached(py, move |ctl| match (x, sv) {
        (Input::Sparse(x), Input::Sparse(sv)) => sparse(x, sv, ctl),
        (Input::Dense(x), Input::Dense(sv)) => dense(&x.rows()?, &sv.rows()?, ctl),
        _ => unreachable!("same_kind checked the inputs"),
    })?;
    into_matrix(py, data, m, k)
}
