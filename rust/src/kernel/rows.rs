//! Row-major `f64` feature rows with their squared norms.

use super::kinds::KernelKind;
use crate::error::{
    checked_len, memory_error, shape_error, try_with_capacity, value_error, Result,
};

/// `Σ term(a_k, b_k)` with four independent accumulators
/// ([`crate::numeric::lanes4`]), added up pairwise.
#[inline(always)]
fn sum4(a: &[f64], b: &[f64], term: impl Fn(f64, f64) -> f64) -> f64 {
    let (acc, tail) = crate::numeric::lanes4(a, b, term);
    (acc[0] + acc[1]) + (acc[2] + acc[3]) + tail
}

/// Dot product (four accumulators, vectorised).
#[inline]
pub fn dot(a: &[f64], b: &[f64]) -> f64 {
    sum4(a, b, |x, y| x * y)
}

/// `‖a − b‖²` from the differences (exact for close points, and no
/// cancellation between large norms).
#[inline]
pub fn sq_dist(a: &[f64], b: &[f64]) -> f64 {
    sum4(a, b, |x, y| (x - y) * (x - y))
}

/// `K(a, b)` in `f64`: the RBF kernel from the differences (so it stays
/// right for data far from the origin and for norms that overflow), the
/// others from the dot product. `sq_a` and `sq_b` are unused for RBF.
#[inline]
pub fn kernel_value(kind: KernelKind, a: &[f64], b: &[f64], sq_a: f64, sq_b: f64) -> f64 {
    match kind {
        KernelKind::Rbf { gamma } => (-gamma * sq_dist(a, b)).exp(),
        _ => kind.from_dot(dot(a, b), sq_a, sq_b),
    }
}

/// A dense row-major matrix with the squared norm of every row.
#[derive(Clone, Debug)]
pub struct Rows {
    data: Vec<f64>,
    n: usize,
    d: usize,
    sq_norms: Vec<f64>,
}

/// The most rows a matrix without features may claim (its row norms are
/// allocated even though its data is empty).
const MAX_ROWS: usize = 1 << 32;

impl Rows {
    /// Takes ownership of `data` (`n × d`, row-major) and computes row norms.
    pub fn new(data: Vec<f64>, n: usize, d: usize) -> Result<Self> {
        if n.checked_mul(d) != Some(data.len()) {
            shape_error!("data has {} values, expected n × d = {n} × {d}", data.len());
        }
        // Zero features admit any row count; the row norms still need memory.
        if d == 0 && n > MAX_ROWS {
            shape_error!("data has {n} rows of zero features, more than {MAX_ROWS}");
        }
        check_finite(&data, d)?;
        let sq_norms = if d == 0 {
            vec![0.0; n]
        } else {
            data.chunks_exact(d).map(|r| dot(r, r)).collect()
        };
        Ok(Rows {
            data,
            n,
            d,
            sq_norms,
        })
    }

    /// Number of rows.
    #[inline]
    pub fn n(&self) -> usize {
        self.n
    }

    /// Number of features.
    #[inline]
    pub fn d(&self) -> usize {
        self.d
    }

    /// Row `i`.
    #[inline]
    pub fn row(&self, i: usize) -> &[f64] {
        &self.data[i * self.d..(i + 1) * self.d]
    }

    /// Squared norm of row `i`.
    #[inline]
    pub fn sq_norm(&self, i: usize) -> f64 {
        self.sq_norms[i]
    }

    /// The squared norms of rows `start..end`.
    #[inline]
    pub fn sq_norms(&self, start: usize, end: usize) -> &[f64] {
        &self.sq_norms[start..end]
    }

    /// The largest absolute entry (0 for an empty matrix).
    pub fn max_abs(&self) -> f64 {
        self.data.iter().fold(0.0f64, |m, v| m.max(v.abs()))
    }

    /// Swaps rows `i` and `j` in place (used by shrinking).
    pub fn swap(&mut self, i: usize, j: usize) {
        if i == j {
            return;
        }
        let (lo, hi) = if i < j { (i, j) } else { (j, i) };
        let d = self.d;
        let (head, tail) = self.data.split_at_mut(hi * d);
        head[lo * d..(lo + 1) * d].swap_with_slice(&mut tail[..d]);
        self.sq_norms.swap(i, j);
    }

    /// A new matrix holding the listed rows, in that order.
    pub fn gather(&self, idx: &[usize]) -> Result<Rows> {
        let data = gather_rows(&self.data, self.d, idx)?;
        let sq_norms = idx.iter().map(|&i| self.sq_norms[i]).collect();
        Ok(Rows {
            data,
            n: idx.len(),
            d: self.d,
            sq_norms,
        })
    }
}

/// An error naming the first NaN or infinity of the row-major `data` (rows
/// of `d` features) by its row and column.
pub(crate) fn check_finite(data: &[f64], d: usize) -> Result<()> {
    if let Some(pos) = data.iter().position(|v| !v.is_finite()) {
        value_error!(
            "X contains NaN or infinity (row {}, column {})",
            pos / d.max(1),
            pos % d.max(1)
        );
    }
    Ok(())
}

/// The listed rows of the row-major matrix `data` (rows of `d` values), in
/// that order.
pub(crate) fn gather_rows(data: &[f64], d: usize, idx: &[usize]) -> Result<Vec<f64>> {
    // The message is written only on failure: small problems gather their
    // rows many times a fit.
    let mut out = checked_len::<f64>(idx.len(), d, "", "")
        .and_then(|len| try_with_capacity(len, "", ""))
        .map_err(|_| {
            memory_error::<f64>(
                idx.len().saturating_mul(d),
                &format!("a copy of {} rows of {d} features", idx.len()),
                "use fewer rows",
            )
        })?;
    for &i in idx {
        out.extend_from_slice(&data[i * d..(i + 1) * d]);
    }
    Ok(out)
}
