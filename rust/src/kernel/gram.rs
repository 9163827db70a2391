//! A square kernel matrix held once and read by many sources: the kernel
//! values of every row that a cross-validated search reuses across its
//! folds and `C` values (each fold's dual reads the block of its training
//! rows through a permutation, without copying it).

use std::sync::Arc;

use rayon::prelude::*;

use super::kinds::KernelKind;
use super::matrix::{check_kernel_values, exp_scaled};
use super::precision::Magnitudes;
use crate::error::{checked_len, try_with_capacity, value_error, Result};
use crate::runtime::control::Control;

/// Rows of the matrix transformed per task (and between two polls of the
/// caller's [`Control`]).
const ROWS_PER_TASK: usize = 64;

/// A row-major `n × n` matrix of finite kernel values, shared by reference
/// count (cloning it copies no value), with the magnitudes that decide the
/// arithmetic of a solve over it.
#[derive(Clone, Debug)]
pub struct Gram {
    values: Arc<Vec<f64>>,
    n: usize,
    magnitudes: Magnitudes,
}

impl Gram {
    /// A matrix from its values, checked to be `n × n` and finite.
    pub fn new(values: Vec<f64>, n: usize) -> Result<Self> {
        check_kernel_values(&values, n, n, "the precomputed kernel")?;
        Ok(Gram::checked(values, n))
    }

    /// A matrix whose values are already known to be `n × n` and finite.
    pub(crate) fn checked(values: Vec<f64>, n: usize) -> Self {
        debug_assert_eq!(values.len(), n * n);
        let magnitudes = Magnitudes::of_values(&values);
        Gram {
            values: Arc::new(values),
            n,
            magnitudes,
        }
    }

    /// The kernel matrix of `kind` from the row-major `n × n` `base`: the
    /// squared distances `‖x_i − x_j‖²` for the RBF kernel, the inner
    /// products `⟨x_i, x_j⟩` for the others. Computed in parallel over
    /// blocks of rows, polling `ctl` between them; `hint` names what avoids
    /// the allocation when it fails ([`crate::Error::Memory`]). Values that
    /// are not finite (a polynomial or a base that overflows) are an error.
    pub fn from_base(
        base: &[f64],
        n: usize,
        kind: KernelKind,
        hint: &str,
        ctl: &Control,
    ) -> Result<Self> {
        kind.require_function("a kernel matrix from a base matrix")?;
        let what = format!("the {n} × {n} kernel matrix");
        let len = checked_len::<f64>(n, n, &what, hint)?;
        if base.len() != len {
            value_error!(
                "the base matrix has {} values, expected {n} × {n}",
                base.len()
            );
        }
        let mut values: Vec<f64> = try_with_capacity(len, &what, hint)?;
        values.extend_from_slice(base);
        if n > 0 {
            values.par_chunks_mut(n * ROWS_PER_TASK).for_each(|block| {
                if !ctl.is_cancelled() {
                    transform(kind, block);
                }
            });
        }
        ctl.check()?;
        if values.iter().any(|v| !v.is_finite()) {
            value_error!(
                "the kernel matrix of {kind:?} has values that float64 cannot hold; scale the \
                 features or lower gamma"
            );
        }
        Ok(Gram::checked(values, n))
    }

    /// Rows (and columns).
    pub fn n(&self) -> usize {
        self.n
    }

    /// Row `i`.
    #[inline]
    pub fn row(&self, i: usize) -> &[f64] {
        &self.values[i * self.n..(i + 1) * self.n]
    }

    /// `K[i][j]`.
    #[inline]
    pub fn at(&self, i: usize, j: usize) -> f64 {
        self.values[i * self.n + j]
    }

    /// The largest absolute value (and its square).
    pub fn magnitudes(&self) -> Magnitudes {
        self.magnitudes
    }
}

/// The kernel function applied in place to base values (see
/// [`Gram::from_base`]).
fn transform(kind: KernelKind, block: &mut [f64]) {
    match kind {
        KernelKind::Linear | KernelKind::Precomputed => {}
        KernelKind::Rbf { gamma } => {
            for v in block.iter_mut() {
                *v = v.max(0.0);
            }
            exp_scaled(block, -gamma);
        }
        _ => {
            for v in block.iter_mut() {
                *v = kind.from_dot(*v, 0.0, 0.0);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transforms_match_the_kernel_functions() {
        let base = vec![0.0, 2.0, 2.0, 0.5];
        let ctl = Control::none();
        let rbf = Gram::from_base(&base, 2, KernelKind::Rbf { gamma: 0.5 }, "h", &ctl).unwrap();
        for (i, &b) in base.iter().enumerate() {
            let want = (-0.5 * b).exp();
            assert!((rbf.at(i / 2, i % 2) - want).abs() <= 1e-15 * want.max(1e-300));
        }
        let poly = KernelKind::Poly {
            gamma: 2.0,
            coef0: 1.0,
            degree: 3,
        };
        let p = Gram::from_base(&base, 2, poly, "h", &ctl).unwrap();
        assert_eq!(p.at(0, 1), 125.0);
        assert_eq!(p.row(1), &[125.0, 8.0]);
        let lin = Gram::from_base(&base, 2, KernelKind::Linear, "h", &ctl).unwrap();
        assert_eq!(lin.row(0), &[0.0, 2.0]);
        assert_eq!(lin.magnitudes().max_abs, 2.0);
    }

    #[test]
    fn bad_bases_are_errors() {
        let ctl = Control::none();
        assert!(Gram::from_base(&[1.0; 3], 2, KernelKind::Linear, "h", &ctl).is_err());
        assert!(Gram::from_base(&[1.0; 4], 2, KernelKind::Precomputed, "h", &ctl).is_err());
        let huge = KernelKind::Poly {
            gamma: 1e300,
            coef0: 0.0,
            degree: 3,
        };
        assert!(Gram::from_base(&[1.0; 4], 2, huge, "h", &ctl).is_err());
        assert!(Gram::new(vec![f64::NAN; 4], 2).is_err());
    }
}
