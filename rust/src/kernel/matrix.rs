//! The caller's training data, checks and gathers of caller-supplied kernel
//! values, and whole kernel matrices.

use rayon::prelude::*;

use super::kinds::KernelKind;
use super::rows::{kernel_value, Rows};
use crate::control::Control;
use crate::error::{
    checked_len, shape_error, try_copy, try_filled, try_with_capacity, value_error, Result,
};
use crate::precision::{f64_problem, Magnitudes};

/// Training data as the caller holds it, borrowed: `n` row-major rows of `d`
/// features, or for a precomputed kernel the square `n × n` kernel matrix.
#[derive(Clone, Copy, Debug)]
pub struct TrainingData<'a> {
    kind: KernelKind,
    values: &'a [f64],
    n: usize,
    d: usize,
}

impl<'a> TrainingData<'a> {
    /// Checks the shape: `n × d` values, and square for a precomputed kernel.
    pub fn new(kind: KernelKind, values: &'a [f64], n: usize, d: usize) -> Result<Self> {
        if kind == KernelKind::Precomputed && n != d {
            shape_error!("a precomputed kernel must be square, got shape ({n}, {d})");
        }
        if n.checked_mul(d) != Some(values.len()) {
            shape_error!("X has {} values, expected {n} × {d}", values.len());
        }
        Ok(TrainingData { kind, values, n, d })
    }

    /// The kernel.
    pub fn kind(&self) -> KernelKind {
        self.kind
    }

    /// The values, row-major.
    pub fn values(&self) -> &'a [f64] {
        self.values
    }

    /// Number of examples.
    pub fn n(&self) -> usize {
        self.n
    }

    /// Number of columns: features, or `n` for a precomputed kernel.
    pub fn d(&self) -> usize {
        self.d
    }

    /// An owned copy of the feature rows (checked finite, norms computed).
    pub fn rows(&self) -> Result<Rows> {
        let what = format!("a copy of the {} × {} training data", self.n, self.d);
        let values = try_copy(self.values, &what, "train on fewer rows")?;
        Rows::new(values, self.n, self.d)
    }
}

/// Checks that every index lies below `n`; `what` names the index list in
/// the error message.
pub fn check_indices(idx: &[usize], n: usize, what: &str) -> Result<()> {
    if let Some(&bad) = idx.iter().find(|&&i| i >= n) {
        value_error!("{what} index {bad} is out of range for {n} rows");
    }
    Ok(())
}

/// The square block `K[idx][:, idx]` of the row-major `n × n` matrix
/// `matrix`; an [`crate::Error::Memory`] naming `hint` when it cannot be
/// allocated.
pub fn gather_square(matrix: &[f64], n: usize, idx: &[usize], hint: &str) -> Result<Vec<f64>> {
    let k = idx.len();
    let what = format!("the {k} × {k} block of the kernel matrix");
    let mut sub = try_with_capacity(checked_len::<f64>(k, k, &what, hint)?, &what, hint)?;
    for &a in idx {
        let row = &matrix[a * n..(a + 1) * n];
        sub.extend(idx.iter().map(|&b| row[b]));
    }
    Ok(sub)
}

/// Checks caller-supplied kernel values: `rows × cols` of them, all finite.
/// `what` names the matrix in the error message.
pub fn check_kernel_values(values: &[f64], rows: usize, cols: usize, what: &str) -> Result<()> {
    if rows.checked_mul(cols) != Some(values.len()) {
        shape_error!(
            "{what} has {} values, expected {rows} × {cols}",
            values.len()
        );
    }
    if values.iter().any(|v| !v.is_finite()) {
        value_error!("{what} contains NaN or infinity");
    }
    Ok(())
}

/// The kernel matrix between the rows of `a` (`na × d`) and `b` (`nb × d`),
/// row-major `na × nb`, computed in `f64` in parallel over rows of `a` (RBF
/// from the differences, see [`kernel_value`]). Kernel values that `f64`
/// cannot hold are an error naming the cause
/// ([`crate::precision::f64_problem`]), not a matrix of infinities or zeros.
pub fn kernel_matrix(kind: KernelKind, a: &Rows, b: &Rows) -> Result<Vec<f64>> {
    kernel_matrix_or(kind, a, b, DEFAULT_HINT, &Control::none())
}

/// What avoids a kernel matrix too large to allocate, when the caller names
/// nothing more specific.
const DEFAULT_HINT: &str = "compute it in blocks of fewer rows";

/// [`kernel_matrix`], polling `ctl` once per row of the result:
/// [`crate::Error::Interrupted`] once it is cancelled.
pub fn kernel_matrix_with(kind: KernelKind, a: &Rows, b: &Rows, ctl: &Control) -> Result<Vec<f64>> {
    kernel_matrix_or(kind, a, b, DEFAULT_HINT, ctl)
}

/// [`kernel_matrix_with`], whose failure to allocate the matrix is an
/// [`crate::Error::Memory`] naming `hint`, the parameter that avoids it.
pub fn kernel_matrix_or(
    kind: KernelKind,
    a: &Rows,
    b: &Rows,
    hint: &str,
    ctl: &Control,
) -> Result<Vec<f64>> {
    kind.require_function("kernel_matrix")?;
    if let Some(why) = f64_problem(kind, Magnitudes::of_rows(a).join(Magnitudes::of_rows(b))) {
        value_error!("{why}");
    }
    if a.d() != b.d() {
        shape_error!(
            "the two matrices have {} and {} features; they must match",
            a.d(),
            b.d()
        );
    }
    let nb = b.n();
    let what = format!("the {} × {nb} kernel matrix", a.n());
    let mut out = try_filled(
        checked_len::<f64>(a.n(), nb, &what, hint)?,
        0.0,
        &what,
        hint,
    )?;
    if nb == 0 {
        return Ok(out);
    }
    out.par_chunks_mut(nb).enumerate().for_each(|(i, row)| {
        if ctl.is_cancelled() {
            return;
        }
        let xi = a.row(i);
        let sq_i = a.sq_norm(i);
        for (t, slot) in row.iter_mut().enumerate() {
            *slot = kernel_value(kind, xi, b.row(t), sq_i, b.sq_norm(t));
        }
    });
    ctl.check()?;
    Ok(out)
}
