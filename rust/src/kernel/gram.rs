//! A square kernel matrix held once and read by many sources: the kernel
//! values of every row that a cross-validated search reuses across its
//! folds and `C` values (each fold's dual reads the block of its training
//! rows through a permutation, without copying it).

use std::mem::MaybeUninit;
use std::sync::Arc;

use rayon::prelude::*;

use super::kinds::KernelKind;
use super::matrix::{check_kernel_values, exp_scaled};
use super::precision::{resolve, Magnitudes, Precision, QValue};
use crate::error::{checked_len, try_with_capacity, value_error, Result};
use crate::numeric::simd::multiversion;
use crate::runtime::control::Control;

/// Rows of the matrix transformed per task (and between two polls of the
/// caller's [`Control`]).
const ROWS_PER_TASK: usize = 64;

/// Values transformed at a time within a task: a block that stays in the
/// core's cache between the copy from the base, the kernel function and
/// the store.
const SCRATCH_VALUES: usize = 1 << 14;

/// The values of a [`Gram`]: `f64`, or `f32` where every solve over them
/// runs in `f32` arithmetic anyway (half the memory and half the reads).
#[derive(Debug)]
enum Values {
    F64(Vec<f64>),
    F32(Vec<f32>),
}

/// One row of a [`Gram`], in its storage type.
#[derive(Clone, Copy, Debug)]
pub enum GramRow<'a> {
    F64(&'a [f64]),
    F32(&'a [f32]),
}

/// A row-major `n × n` matrix of finite kernel values, shared by reference
/// count (cloning it copies no value), with the magnitudes that decide the
/// arithmetic of a solve over it.
#[derive(Clone, Debug)]
pub struct Gram {
    values: Arc<Values>,
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
            values: Arc::new(Values::F64(values)),
            n,
            magnitudes,
        }
    }

    /// The kernel matrix of `kind` from the row-major `n × n` `base`: the
    /// squared distances `‖x_i − x_j‖²` for the RBF kernel, the inner
    /// products `⟨x_i, x_j⟩` for the others; or, for the RBF kernel with
    /// the squared norms `norms` (`‖x_i‖²`), the inner products, from which
    /// the distances are formed on the way ([`squared_distances`]: one
    /// base serves every kernel, and no serial pass over it is needed
    /// before this parallel one). Computed in parallel over
    /// blocks of rows, polling `ctl` between them; `hint` names what avoids
    /// the allocation when it fails ([`crate::Error::Memory`]). Values that
    /// are not finite (a polynomial or a base that overflows) are an error.
    ///
    /// `tol`: the tolerance of the solves that will read the matrix, when
    /// known. An RBF matrix is then stored in `f32` when `f32` arithmetic
    /// serves that tolerance (the rule of [`resolve`], which the solves
    /// apply too): they round every value to `f32` as they read it, so the
    /// stored `f32` values give them the same numbers.
    pub fn from_base(
        (base, norms): (&[f64], Option<&[f64]>),
        n: usize,
        kind: KernelKind,
        tol: Option<f64>,
        hint: &str,
        ctl: &Control,
    ) -> Result<Self> {
        kind.require_function("a kernel matrix from a base matrix")?;
        let len = checked_len::<f64>(n, n, &format!("the {n} × {n} kernel matrix"), hint)?;
        if base.len() != len {
            value_error!(
                "the base matrix has {} values, expected {n} × {n}",
                base.len()
            );
        }
        if let Some(norms) = norms {
            if !matches!(kind, KernelKind::Rbf { .. }) {
                value_error!("squared norms go with inner products for the RBF kernel only");
            }
            if norms.len() != n {
                value_error!("the squared norms must number one per row");
            }
            if norms.iter().any(|v| !(v.is_finite() && *v >= 0.0)) {
                value_error!("the squared norms must be finite and non-negative");
            }
        }
        let (values, max_abs) = if Gram::stores_f32(kind, tol)? {
            let (v, m) = build::<f32>(base, norms, n, kind, hint, ctl)?;
            (Values::F32(v), m)
        } else {
            let (v, m) = build::<f64>(base, norms, n, kind, hint, ctl)?;
            (Values::F64(v), m)
        };
        Ok(Gram {
            values: Arc::new(values),
            n,
            magnitudes: Magnitudes {
                max_sq: max_abs * max_abs,
                max_abs,
            },
        })
    }

    /// Whether [`Gram::from_base`] stores the matrix of `kind` for solves
    /// at `tol` in `f32`.
    pub fn stores_f32(kind: KernelKind, tol: Option<f64>) -> Result<bool> {
        // An RBF matrix's values lie in [0, 1], 1 on the diagonal.
        let rbf_scale = Magnitudes {
            max_sq: 1.0,
            max_abs: 1.0,
        };
        Ok(matches!(kind, KernelKind::Rbf { .. })
            && tol.is_some()
            && resolve(Precision::Auto, KernelKind::Precomputed, rbf_scale, tol)?
                == Precision::Float32)
    }

    /// Rows (and columns).
    pub fn n(&self) -> usize {
        self.n
    }

    /// Whether the values are stored in `f32`.
    pub fn is_f32(&self) -> bool {
        matches!(*self.values, Values::F32(_))
    }

    /// Row `i`, in the storage type.
    #[inline]
    pub fn row(&self, i: usize) -> GramRow<'_> {
        let range = i * self.n..(i + 1) * self.n;
        match &*self.values {
            Values::F64(v) => GramRow::F64(&v[range]),
            Values::F32(v) => GramRow::F32(&v[range]),
        }
    }

    /// The entry `(i, j)`.
    #[inline]
    pub fn at(&self, i: usize, j: usize) -> f64 {
        match &*self.values {
            Values::F64(v) => v[i * self.n + j],
            Values::F32(v) => f64::from(v[i * self.n + j]),
        }
    }

    /// The magnitudes of the values (the largest absolute value).
    pub fn magnitudes(&self) -> Magnitudes {
        self.magnitudes
    }
}

/// The kernel values of [`Gram::from_base`] in storage type `V`, and their
/// largest absolute value. Each task copies a block of the base into a
/// scratch buffer, applies the kernel function there and stores the
/// result: one pass over the base, with the new pages touched by every
/// thread.
fn build<V: QValue + FromF64>(
    base: &[f64],
    norms: Option<&[f64]>,
    n: usize,
    kind: KernelKind,
    hint: &str,
    ctl: &Control,
) -> Result<(Vec<V>, f64)> {
    let len = base.len();
    let what = format!("the {n} × {n} kernel matrix");
    let mut values: Vec<V> = try_with_capacity(len, &what, hint)?;
    if n == 0 {
        return Ok((values, 0.0));
    }
    let rbf = matches!(kind, KernelKind::Rbf { .. });
    let task = n * ROWS_PER_TASK;
    // Whole rows per scratch block, so that each value's row and column are known.
    let rows_per_block = (SCRATCH_VALUES / n).max(1);
    let out = &mut values.spare_capacity_mut()[..len];
    let maxima: Vec<f64> = out
        .par_chunks_mut(task)
        .zip(base.par_chunks(task))
        .enumerate()
        .map(|(t, (dst, src))| {
            let mut scratch = vec![0.0f64; (rows_per_block * n).min(src.len())];
            let (mut max_abs, mut finite) = (0.0f64, true);
            let block = rows_per_block * n;
            for (b, (d, s)) in dst.chunks_mut(block).zip(src.chunks(block)).enumerate() {
                if ctl.is_cancelled() {
                    return f64::NAN;
                }
                let sc = &mut scratch[..s.len()];
                sc.copy_from_slice(s);
                if let Some(norms) = norms {
                    let first = t * ROWS_PER_TASK + b * rows_per_block;
                    for (r, row) in sc.chunks_mut(n).enumerate() {
                        squared_distances(row, first + r, norms);
                    }
                }
                // A base value that is not finite (an inner product or
                // distance that overflowed) would be lost in the kernel
                // function.
                finite &= largest(sc).1;
                transform(kind, sc);
                if !rbf {
                    // The other kernels' values can overflow, and their
                    // largest one decides a solve's arithmetic.
                    let (m, f) = largest(sc);
                    max_abs = max_abs.max(m);
                    finite &= f;
                }
                V::store(d, sc);
            }
            // A non-finite value marks the task.
            if finite {
                max_abs
            } else {
                f64::NAN
            }
        })
        .collect();
    ctl.check()?;
    if maxima.iter().any(|m| !m.is_finite()) {
        value_error!(
            "the kernel matrix of {kind:?} has values that float64 cannot hold; scale the \
             features or lower gamma"
        );
    }
    // SAFETY: the tasks above wrote every one of the `len` values (no task
    // returned early: the control was not cancelled, which `check` confirmed).
    unsafe { values.set_len(len) };
    if rbf {
        // exp(−γ·d) of finite distances d ≥ 0 lies in [0, 1] (1 on the
        // diagonal of a distance matrix): 1 bounds it.
        return Ok((values, 1.0));
    }
    Ok((values, maxima.iter().fold(0.0, |a, &b| a.max(b))))
}

multiversion! {
    /// Row `i` of inner products `⟨x_i, x_j⟩` turned into squared distances
    /// `max(0, (−2⟨x_i, x_j⟩ + ‖x_i‖²) + ‖x_j‖²)`, 0 at `j = i` (the same
    /// operations, in the same order, as the NumPy expression they replace;
    /// the `max` is [`transform`]'s).
    fn squared_distances, fn squared_distances_impl(row: &mut [f64], i: usize, norms: &[f64]) {
        let ni = norms[i];
        for (v, &nj) in row.iter_mut().zip(norms) {
            *v = (-2.0 * *v + ni) + nj;
        }
        row[i] = 0.0;
    }
}

multiversion! {
    /// The largest absolute value of `values`, and whether all are finite.
    fn largest, fn largest_impl(values: &[f64]) -> (f64, bool) {
        let (mut max_abs, mut finite) = (0.0f64, true);
        for &v in values {
            let a = v.abs();
            // False for infinity and NaN.
            finite &= a <= f64::MAX;
            if a > max_abs {
                max_abs = a;
            }
        }
        (max_abs, finite)
    }
}

multiversion! {
    /// `out[k] = values[k]` rounded to `f32`.
    fn store_f32, fn store_f32_impl(out: &mut [MaybeUninit<f32>], values: &[f64]) {
        for (o, &v) in out.iter_mut().zip(values) {
            *o = MaybeUninit::new(v as f32);
        }
    }
}

multiversion! {
    /// Negative values (the rounding of a squared distance) set to 0.
    fn clamp_negative, fn clamp_negative_impl(values: &mut [f64]) {
        for v in values.iter_mut() {
            if *v < 0.0 {
                *v = 0.0;
            }
        }
    }
}

/// Storage from the `f64` a kernel value is computed in.
trait FromF64: Sized {
    /// `out[k] = values[k]` in this type (every `out` written).
    fn store(out: &mut [MaybeUninit<Self>], values: &[f64]);
}

impl FromF64 for f64 {
    #[inline]
    fn store(out: &mut [MaybeUninit<Self>], values: &[f64]) {
        for (o, &v) in out.iter_mut().zip(values) {
            *o = MaybeUninit::new(v);
        }
    }
}

impl FromF64 for f32 {
    #[inline]
    fn store(out: &mut [MaybeUninit<Self>], values: &[f64]) {
        store_f32(out, values)
    }
}

/// The kernel function of `kind` applied in place to base values.
fn transform(kind: KernelKind, block: &mut [f64]) {
    match kind {
        KernelKind::Linear | KernelKind::Precomputed => {}
        KernelKind::Rbf { gamma } => {
            clamp_negative(block);
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
        let rbf = Gram::from_base(
            (&base, None),
            2,
            KernelKind::Rbf { gamma: 0.5 },
            None,
            "h",
            &ctl,
        )
        .unwrap();
        for (i, &b) in base.iter().enumerate() {
            let want = (-0.5 * b).exp();
            assert!((rbf.at(i / 2, i % 2) - want).abs() <= 1e-15 * want.max(1e-300));
        }
        let poly = KernelKind::Poly {
            gamma: 2.0,
            coef0: 1.0,
            degree: 3,
        };
        let p = Gram::from_base((&base, None), 2, poly, None, "h", &ctl).unwrap();
        assert_eq!(p.at(0, 1), 125.0);
        assert_eq!((p.at(1, 0), p.at(1, 1)), (125.0, 8.0));
        let lin = Gram::from_base((&base, None), 2, KernelKind::Linear, None, "h", &ctl).unwrap();
        assert_eq!((lin.at(0, 0), lin.at(0, 1)), (0.0, 2.0));
        assert_eq!(lin.magnitudes().max_abs, 2.0);
    }

    #[test]
    fn rbf_matrices_for_float32_solves_are_stored_in_float32() {
        let ctl = Control::none();
        let n = 150; // more rows than a task, and more values than a scratch block
        let base: Vec<f64> = (0..n * n)
            .map(|k| {
                if k / n == k % n {
                    0.0
                } else {
                    0.01 * (k % 97) as f64
                }
            })
            .collect();
        let rbf = KernelKind::Rbf { gamma: 0.7 };
        let wide = Gram::from_base((&base, None), n, rbf, None, "h", &ctl).unwrap();
        let single = Gram::from_base((&base, None), n, rbf, Some(1e-3), "h", &ctl).unwrap();
        let tight = Gram::from_base((&base, None), n, rbf, Some(1e-9), "h", &ctl).unwrap();
        assert!(!wide.is_f32() && single.is_f32() && !tight.is_f32());
        assert_eq!(single.magnitudes().max_abs, 1.0);
        for i in 0..n {
            for j in 0..n {
                // The value a float32 solve reads from either matrix.
                assert_eq!(single.at(i, j) as f32, wide.at(i, j) as f32);
                assert_eq!(tight.at(i, j), wide.at(i, j));
            }
        }
        // Other kernels keep float64 values whatever the tolerance.
        let lin =
            Gram::from_base((&base, None), n, KernelKind::Linear, Some(1e-3), "h", &ctl).unwrap();
        assert!(!lin.is_f32());
    }

    #[test]
    fn a_float32_matrix_refuses_a_float64_solve() {
        let ctl = Control::none();
        let base = vec![0.0, 1.0, 1.0, 0.0];
        let rbf = KernelKind::Rbf { gamma: 1.0 };
        let single = Gram::from_base((&base, None), 2, rbf, Some(1e-3), "h", &ctl).unwrap();
        let src = crate::kernel::KernelSource::gram_rows(&single, &[0, 1]).unwrap();
        assert_eq!(
            src.precision(Precision::Auto, 1e-3).unwrap(),
            Precision::Float32
        );
        assert!(src.precision(Precision::Auto, 1e-9).is_err());
        assert!(src.precision(Precision::Float64, 1e-3).is_err());
    }

    #[test]
    fn distances_from_inner_products_are_the_numpy_ones() {
        let ctl = Control::none();
        let x = [[0.3, -1.2], [2.0, 0.5], [-0.7, 0.1]];
        let n = x.len();
        let dot = |a: &[f64; 2], b: &[f64; 2]| a[0] * b[0] + a[1] * b[1];
        let inner: Vec<f64> = (0..n * n).map(|k| dot(&x[k / n], &x[k % n])).collect();
        let norms: Vec<f64> = x.iter().map(|r| dot(r, r)).collect();
        let dist: Vec<f64> = (0..n * n)
            .map(|k| {
                let (i, j) = (k / n, k % n);
                if i == j {
                    0.0
                } else {
                    (-2.0 * inner[k] + norms[i] + norms[j]).max(0.0)
                }
            })
            .collect();
        let rbf = KernelKind::Rbf { gamma: 0.4 };
        let a = Gram::from_base((&dist, None), n, rbf, None, "h", &ctl).unwrap();
        let b = Gram::from_base((&inner, Some(&norms)), n, rbf, None, "h", &ctl).unwrap();
        for i in 0..n {
            for j in 0..n {
                assert_eq!(a.at(i, j).to_bits(), b.at(i, j).to_bits());
            }
        }
        let lin = Gram::from_base(
            (&inner, Some(&norms)),
            n,
            KernelKind::Linear,
            None,
            "h",
            &ctl,
        );
        assert!(lin.is_err());
        let short = Gram::from_base((&inner, Some(&norms[..2])), n, rbf, None, "h", &ctl);
        assert!(short.is_err());
        // Inner products that overflowed are refused.
        let huge = [1e308, f64::INFINITY, f64::INFINITY, 1e308];
        let wide = Gram::from_base((&huge, Some(&[1e308, 1e308])), 2, rbf, None, "h", &ctl);
        assert!(wide.is_err());
        // So is a base of distances that is not finite.
        let bad = [0.0, f64::NAN, f64::NAN, 0.0];
        assert!(Gram::from_base((&bad, None), 2, rbf, None, "h", &ctl).is_err());
    }

    #[test]
    fn bad_bases_are_errors() {
        let ctl = Control::none();
        assert!(
            Gram::from_base((&[1.0; 3], None), 2, KernelKind::Linear, None, "h", &ctl).is_err()
        );
        assert!(Gram::from_base(
            (&[1.0; 4], None),
            2,
            KernelKind::Precomputed,
            None,
            "h",
            &ctl
        )
        .is_err());
        let huge = KernelKind::Poly {
            gamma: 1e300,
            coef0: 0.0,
            degree: 3,
        };
        assert!(Gram::from_base((&[1.0; 4], None), 2, huge, None, "h", &ctl).is_err());
        assert!(Gram::new(vec![f64::NAN; 4], 2).is_err());
    }
}
