//! Which arithmetic a solve or a prediction runs in, chosen per problem.
//!
//! Kernel values come from one of two paths:
//!
//! - **`float32`**: the feature-major `f32` copy of the rows ([`crate::kernel::Panel`])
//!   read by the vectorised loops, kernel values computed in `f32` and cached
//!   as `f32`. Fast, and as accurate as LIBSVM's `float` cache on ordinary
//!   data: a kernel value is off by about `ε₃₂ · s`, where `ε₃₂ = 2⁻²³ ≈
//!   1.2e-7` and `s` is the kernel-value scale of [`kernel_scale`].
//! - **`float64`**: kernel values computed in `f64` from the row-major rows
//!   (RBF from the differences `‖x − z‖²`, exact for close points) and cached
//!   as `f64` (half as many columns fit in the same `cache_size`). Slower,
//!   accurate to `f64` rounding, and safe for any finite input whose kernel
//!   values `f64` can hold.
//!
//! [`resolve`] picks the path. `float32` is used only when the data and the
//! kernel parameters keep every quantity the `f32` loops form (entries,
//! squared norms, `γ`, `coef0`, the polynomial and sigmoid arguments, the
//! kernel values) within `[2⁻¹⁰⁰, 2¹⁰⁰]` ([`f32_problem`]), and, for a solve,
//! when the requested `tol` is at least [`TOL_FACTOR`] `· ε₃₂ · s`: below
//! that, `f32` kernel values cannot deliver the tolerance. Otherwise
//! `float64`; and when even `f64` cannot hold the kernel values (squared
//! norms or polynomial values beyond `2¹⁰⁰⁰`, or all of them below `2⁻¹⁰⁰⁰`)
//! the call fails with an error naming the cause ([`f64_problem`]).

use std::fmt::Debug;

use super::kinds::KernelKind;
use super::rows::Rows;
use crate::error::{value_error, Result};

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}

/// The type kernel (Q) values are cached in: `f32` or `f64`.
pub trait QValue:
    Copy + Default + Send + Sync + PartialEq + Debug + Into<f64> + 'static + sealed::Sealed
{
    /// True for `f64` (the vector loops load the two types differently).
    const IS_F64: bool;
    /// `v` rounded to this type.
    fn from_f64(v: f64) -> Self;
    /// The value as `f64`.
    fn to_f64(self) -> f64;
    /// `acc[s] += w · col[s]` ([`crate::numeric::simd::add_scaled`]),
    /// compiled for the widest vector unit the CPU has.
    fn add_scaled_wide(acc: &mut [f64], w: f64, col: &[Self]);
}

impl QValue for f32 {
    const IS_F64: bool = false;
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    #[inline]
    fn add_scaled_wide(acc: &mut [f64], w: f64, col: &[Self]) {
        crate::numeric::simd::add_scaled_f32(acc, w, col)
    }
}

impl QValue for f64 {
    const IS_F64: bool = true;
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        v
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self
    }
    #[inline]
    fn add_scaled_wide(acc: &mut [f64], w: f64, col: &[Self]) {
        crate::numeric::simd::add_scaled_f64(acc, w, col)
    }
}

/// The arithmetic of kernel values: requested by the caller (`Auto` lets
/// [`resolve`] choose), or as resolved (`Float32` / `Float64`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Precision {
    /// `float32` when safe and accurate enough for `tol`, else `float64`.
    #[default]
    Auto,
    /// The vectorised `f32` path; an error when the data is out of its range.
    Float32,
    /// The `f64` path.
    Float64,
}

impl Precision {
    /// `'auto'`, `'float32'` or `'float64'`.
    pub fn from_name(name: &str) -> Result<Self> {
        Ok(match name {
            "auto" => Precision::Auto,
            "float32" => Precision::Float32,
            "float64" => Precision::Float64,
            other => {
                value_error!("precision must be one of 'auto', 'float32', 'float64', got {other:?}")
            }
        })
    }

    /// The name [`Precision::from_name`] reads.
    pub fn name(self) -> &'static str {
        match self {
            Precision::Auto => "auto",
            Precision::Float32 => "float32",
            Precision::Float64 => "float64",
        }
    }
}

/// Largest magnitude the `f32` path is trusted with (`2¹⁰⁰ ≈ 1.3e30`; `f32`
/// overflows at `2¹²⁸`, and sums of a few such values must still fit).
pub const F32_MAX_SAFE: f64 = 1.2676506002282294e30;
/// Smallest non-zero magnitude the `f32` path is trusted with (`2⁻¹⁰⁰`;
/// `f32` loses precision below `2⁻¹²⁶`).
pub const F32_MIN_SAFE: f64 = 7.888609052210118e-31;
/// Largest kernel-value scale the `f64` path computes (`2¹⁰⁰⁰`).
pub const F64_MAX_SAFE: f64 = 1.0715086071862673e301;
/// Smallest non-zero kernel-value scale the `f64` path computes (`2⁻¹⁰⁰⁰`).
pub const F64_MIN_SAFE: f64 = 9.332636185032189e-302;
/// `float32` serves a solve only when `tol ≥ TOL_FACTOR · ε₃₂ · s`
/// (`≈ 1.2e-6 · s`): a kernel value off by `ε₃₂ · s` moves the KKT
/// violations by about that much per unit of `α`, so a tighter `tol` would
/// stop on rounding noise, or never.
pub const TOL_FACTOR: f64 = 10.0;

/// Magnitudes of the data a kernel is evaluated on: the largest squared row
/// norm and the largest absolute entry (for a precomputed kernel, the
/// largest absolute kernel value, and `max_sq` unused).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Magnitudes {
    /// `max_i ‖x_i‖²` (may be `+∞` when it overflows `f64`).
    pub max_sq: f64,
    /// `max_ij |x_ij|`.
    pub max_abs: f64,
}

impl Magnitudes {
    /// The magnitudes of feature rows.
    pub fn of_rows(rows: &Rows) -> Self {
        Magnitudes {
            max_sq: (0..rows.n()).map(|i| rows.sq_norm(i)).fold(0.0, f64::max),
            max_abs: rows.max_abs(),
        }
    }

    /// The magnitudes of a kernel matrix's values.
    pub fn of_values(values: &[f64]) -> Self {
        let max_abs = values.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        Magnitudes {
            max_sq: max_abs * max_abs,
            max_abs,
        }
    }

    /// The magnitudes of two data sets together.
    pub fn join(self, other: Magnitudes) -> Self {
        Magnitudes {
            max_sq: self.max_sq.max(other.max_sq),
            max_abs: self.max_abs.max(other.max_abs),
        }
    }
}

/// The kernel-value scale `s`: a bound on the magnitudes the kernel's
/// arithmetic works at, so that `f32` rounding errs by about `ε₃₂ · s`.
///
/// With `S = max ‖x‖²`: linear `S`; polynomial `(γS + |coef0|)^degree`;
/// RBF `max(1, 2γS)` (its values lie in `[0, 1]`, but the squared distance
/// `‖x‖² + ‖z‖² − 2⟨x, z⟩` loses `ε₃₂ · 2S` before `γ` multiplies it);
/// sigmoid `max(1, γS + |coef0|)`; precomputed `max |K|`. May be `+∞`.
pub fn kernel_scale(kind: KernelKind, m: Magnitudes) -> f64 {
    let s = m.max_sq;
    match kind {
        KernelKind::Linear => s,
        KernelKind::Poly {
            gamma,
            coef0,
            degree,
        } => (gamma * s + coef0.abs()).powi(degree.min(i32::MAX as u32) as i32),
        KernelKind::Rbf { gamma } => (2.0 * gamma * s).max(1.0),
        KernelKind::Sigmoid { gamma, coef0 } => (gamma * s + coef0.abs()).max(1.0),
        KernelKind::Precomputed => m.max_abs,
    }
}

/// Outside `[F32_MIN_SAFE, F32_MAX_SAFE]` (zero is fine).
fn outside_f32(v: f64) -> bool {
    let v = v.abs();
    v > F32_MAX_SAFE || (v != 0.0 && v < F32_MIN_SAFE)
}

/// Why the `f32` path cannot compute this kernel on this data, if it cannot.
pub fn f32_problem(kind: KernelKind, m: Magnitudes) -> Option<String> {
    if kind == KernelKind::Precomputed {
        return outside_f32(m.max_abs).then(|| {
            format!(
                "the largest kernel value, {:e}, is outside float32's safe range [2^-100, 2^100]",
                m.max_abs
            )
        });
    }
    if m.max_abs == 0.0 {
        return None; // all-zero data: every kernel value is exact
    }
    if outside_f32(m.max_sq) {
        return Some(format!(
            "the largest squared row norm of X, {:e}, is outside float32's safe range \
             [2^-100, 2^100]",
            m.max_sq
        ));
    }
    let (gamma, coef0) = match kind {
        KernelKind::Poly { gamma, coef0, .. } | KernelKind::Sigmoid { gamma, coef0 } => {
            (Some(gamma), coef0)
        }
        KernelKind::Rbf { gamma } => (Some(gamma), 0.0),
        KernelKind::Linear | KernelKind::Precomputed => (None, 0.0),
    };
    if let Some(g) = gamma.filter(|&g| g == 0.0 || outside_f32(g)) {
        return Some(format!(
            "gamma = {g:e} is outside float32's safe range [2^-100, 2^100]"
        ));
    }
    if outside_f32(coef0) {
        return Some(format!("coef0 = {coef0:e} is outside float32's safe range"));
    }
    if let KernelKind::Poly { .. } = kind {
        let s = kernel_scale(kind, m);
        if outside_f32(s) {
            return Some(format!(
                "the polynomial kernel's values reach (gamma·max‖x‖² + |coef0|)^degree = {s:e}, \
                 outside float32's safe range [2^-100, 2^100]"
            ));
        }
    }
    None
}

/// Above `F64_MAX_SAFE`, infinite, or NaN.
fn beyond_f64(v: f64) -> bool {
    v.is_nan() || v > F64_MAX_SAFE
}

/// Why even the `f64` path cannot compute this kernel on this data, if it
/// cannot: the message names the cause and the remedy.
pub fn f64_problem(kind: KernelKind, m: Magnitudes) -> Option<String> {
    let overflow = |what: &str, v: f64| {
        format!(
            "the {what} kernel's values overflow float64 for this data (scale {v:e}, largest \
             |x| = {:e}); scale the features (e.g. StandardScaler){}",
            m.max_abs,
            if what == "linear" {
                ""
            } else {
                " or lower gamma"
            }
        )
    };
    let underflow = |what: &str, v: f64| {
        format!(
            "the {what} kernel's values underflow float64 for this data (scale {v:e}, largest \
             |x| = {:e}): every kernel value rounds to zero; scale the features (e.g. \
             StandardScaler){}",
            m.max_abs,
            if what == "linear" {
                ""
            } else {
                " or raise gamma"
            }
        )
    };
    match kind {
        KernelKind::Precomputed | KernelKind::Rbf { .. } => None,
        KernelKind::Linear => {
            let s = m.max_sq;
            if beyond_f64(s) {
                Some(overflow("linear", s))
            } else if m.max_abs > 0.0 && s < F64_MIN_SAFE {
                Some(underflow("linear", s))
            } else {
                None
            }
        }
        KernelKind::Poly { degree, .. } => {
            let s = kernel_scale(kind, m);
            if beyond_f64(m.max_sq) || beyond_f64(s) {
                Some(overflow("polynomial", s))
            } else if degree > 0 && m.max_abs > 0.0 && s < F64_MIN_SAFE {
                Some(underflow("polynomial", s))
            } else {
                None
            }
        }
        KernelKind::Sigmoid { .. } => beyond_f64(m.max_sq).then(|| overflow("sigmoid", m.max_sq)),
    }
}

/// The path for `kind` on data of magnitudes `m`: the requested one, or for
/// [`Precision::Auto`] `Float32` when [`f32_problem`] finds nothing and
/// `tol` (a solve's tolerance; `None` for a prediction) is at least
/// `TOL_FACTOR · ε₃₂ ·` [`kernel_scale`], else `Float64`.
///
/// Fails when even `f64` cannot compute the kernel ([`f64_problem`]), or
/// when `Float32` is requested for data outside its range.
pub fn resolve(
    requested: Precision,
    kind: KernelKind,
    m: Magnitudes,
    tol: Option<f64>,
) -> Result<Precision> {
    if let Some(why) = f64_problem(kind, m) {
        value_error!("{why}");
    }
    let f32_issue = f32_problem(kind, m);
    Ok(match requested {
        Precision::Float64 => Precision::Float64,
        Precision::Float32 => {
            if let Some(why) = f32_issue {
                value_error!(
                    "precision='float32' cannot represent this problem: {why}; use \
                     precision='auto' or 'float64'"
                );
            }
            Precision::Float32
        }
        Precision::Auto => {
            let floor = TOL_FACTOR * f64::from(f32::EPSILON) * kernel_scale(kind, m);
            if f32_issue.is_some() || tol.is_some_and(|t| t < floor) {
                Precision::Float64
            } else {
                Precision::Float32
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mags(max_abs: f64, max_sq: f64) -> Magnitudes {
        Magnitudes { max_sq, max_abs }
    }

    const RBF: KernelKind = KernelKind::Rbf { gamma: 0.5 };

    #[test]
    fn ordinary_data_at_the_default_tol_stays_float32() {
        let m = mags(3.0, 20.0);
        for kind in [
            KernelKind::Linear,
            RBF,
            KernelKind::Poly {
                gamma: 0.1,
                coef0: 1.0,
                degree: 3,
            },
            KernelKind::Sigmoid {
                gamma: 0.01,
                coef0: -1.0,
            },
        ] {
            let p = resolve(Precision::Auto, kind, m, Some(1e-3)).unwrap();
            assert_eq!(p, Precision::Float32, "{kind:?}");
        }
        // A prediction has no tol: range alone decides.
        assert_eq!(
            resolve(Precision::Auto, RBF, m, None).unwrap(),
            Precision::Float32
        );
    }

    #[test]
    fn a_tol_below_what_float32_delivers_takes_float64() {
        let m = mags(3.0, 20.0);
        // RBF: s = max(1, 2·0.5·20) = 20, so the floor is 10·ε₃₂·20 ≈ 2.4e-5.
        assert_eq!(
            resolve(Precision::Auto, RBF, m, Some(1e-4)).unwrap(),
            Precision::Float32
        );
        assert_eq!(
            resolve(Precision::Auto, RBF, m, Some(1e-5)).unwrap(),
            Precision::Float64
        );
        // Linear on iris-sized norms (S ≈ 130): tol 1e-6 needs f64.
        let iris = mags(7.9, 130.0);
        assert_eq!(
            resolve(Precision::Auto, KernelKind::Linear, iris, Some(1e-6)).unwrap(),
            Precision::Float64
        );
        // Forcing float32 is honoured when the range allows it.
        assert_eq!(
            resolve(Precision::Float32, KernelKind::Linear, iris, Some(1e-9)).unwrap(),
            Precision::Float32
        );
    }

    #[test]
    fn out_of_range_data_and_parameters_take_float64() {
        let huge = mags(1e150, 4e300);
        let tiny = mags(1e-20, 4e-40);
        for m in [huge, tiny] {
            assert_eq!(
                resolve(Precision::Auto, RBF, m, Some(1e-3)).unwrap(),
                Precision::Float64
            );
            let err = resolve(Precision::Float32, RBF, m, Some(1e-3)).unwrap_err();
            assert!(err.to_string().contains("squared row norm"), "{err}");
        }
        let m = mags(1.0, 4.0);
        let cases = [
            KernelKind::Rbf { gamma: 1e300 },
            KernelKind::Rbf { gamma: 1e-300 },
            KernelKind::Sigmoid {
                gamma: 1e40,
                coef0: 0.0,
            },
            KernelKind::Poly {
                gamma: 10.0,
                coef0: 0.0,
                degree: 40,
            },
            KernelKind::Poly {
                gamma: 1e-10,
                coef0: 0.0,
                degree: 5,
            },
        ];
        for kind in cases {
            assert!(f32_problem(kind, m).is_some(), "{kind:?}");
            assert_eq!(
                resolve(Precision::Auto, kind, m, Some(1e-3)).unwrap(),
                Precision::Float64,
                "{kind:?}"
            );
        }
        // All-zero data is exact in any precision.
        assert!(f32_problem(KernelKind::Linear, mags(0.0, 0.0)).is_none());
        // A precomputed kernel: its largest value decides.
        let k = KernelKind::Precomputed;
        assert!(f32_problem(k, Magnitudes::of_values(&[1.0, -2.0])).is_none());
        assert!(f32_problem(k, Magnitudes::of_values(&[1e40, 1.0])).is_some());
    }

    #[test]
    fn what_float64_cannot_hold_is_an_error_naming_the_cause() {
        let err = resolve(
            Precision::Auto,
            KernelKind::Linear,
            mags(1e200, f64::INFINITY),
            Some(1e-3),
        )
        .unwrap_err();
        assert!(err.to_string().contains("overflow float64"), "{err}");
        let err = resolve(
            Precision::Float64,
            KernelKind::Linear,
            mags(1e-300, 0.0),
            None,
        )
        .unwrap_err();
        assert!(err.to_string().contains("underflow float64"), "{err}");
        let poly = KernelKind::Poly {
            gamma: 1.0,
            coef0: 0.0,
            degree: 9,
        };
        let err = resolve(Precision::Auto, poly, mags(1e20, 1e40), None).unwrap_err();
        assert!(err.to_string().contains("polynomial"), "{err}");
        // RBF is computed from differences: any finite data works in f64.
        assert_eq!(
            resolve(Precision::Auto, RBF, mags(1e200, f64::INFINITY), None).unwrap(),
            Precision::Float64
        );
    }

    #[test]
    fn names_round_trip() {
        for p in [Precision::Auto, Precision::Float32, Precision::Float64] {
            assert_eq!(Precision::from_name(p.name()).unwrap(), p);
        }
        assert!(Precision::from_name("half").is_err());
    }
}
