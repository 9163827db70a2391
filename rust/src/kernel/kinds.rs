//! The kernel functions of LIBSVM / scikit-learn and their parameters.

use crate::error::{value_error, Result};

/// The kernels of LIBSVM / scikit-learn, with their parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum KernelKind {
    /// `⟨x, z⟩`
    Linear,
    /// `(γ⟨x, z⟩ + coef0)^degree`
    Poly { gamma: f64, coef0: f64, degree: u32 },
    /// `exp(−γ‖x − z‖²)`
    Rbf { gamma: f64 },
    /// `tanh(γ⟨x, z⟩ + coef0)`
    Sigmoid { gamma: f64, coef0: f64 },
    /// The caller supplies the kernel matrix itself.
    Precomputed,
}

impl KernelKind {
    /// Builds a kernel from the names and parameters used by scikit-learn.
    pub fn from_name(name: &str, gamma: f64, coef0: f64, degree: i64) -> Result<Self> {
        let kind = match name {
            "linear" => KernelKind::Linear,
            "poly" => {
                if degree < 0 {
                    value_error!("degree must be a non-negative integer, got {degree}");
                }
                let degree = u32::try_from(degree)
                    .map_err(|_| crate::error::Error::Value(format!("degree {degree} is too large")))?;
                KernelKind::Poly {
                    gamma,
                    coef0,
                    degree,
                }
            }
            "rbf" => KernelKind::Rbf { gamma },
            "sigmoid" => KernelKind::Sigmoid { gamma, coef0 },
            "precomputed" => KernelKind::Precomputed,
            other => value_error!(
                "unknown kernel {other:?}; expected one of 'linear', 'poly', 'rbf', 'sigmoid', 'precomputed'"
            ),
        };
        kind.validate()?;
        Ok(kind)
    }

    /// Checks the parameters: γ must be positive and finite, coef0 finite.
    pub fn validate(&self) -> Result<()> {
        let gamma = match *self {
            KernelKind::Poly { gamma, coef0, .. } | KernelKind::Sigmoid { gamma, coef0 } => {
                if !coef0.is_finite() {
                    value_error!("coef0 must be finite, got {coef0}");
                }
                Some(gamma)
            }
            KernelKind::Rbf { gamma } => Some(gamma),
            KernelKind::Linear | KernelKind::Precomputed => None,
        };
        if let Some(g) = gamma {
            if !(g.is_finite() && g > 0.0) {
                value_error!("gamma must be a positive finite number, got {g}");
            }
        }
        Ok(())
    }

    /// [`KernelKind::validate`], and a kernel function of feature rows (not
    /// `Precomputed`); `what` names the caller in the error message.
    pub fn require_function(&self, what: &str) -> Result<()> {
        if *self == KernelKind::Precomputed {
            value_error!("{what} needs a kernel function, not 'precomputed'");
        }
        self.validate()
    }

    /// True when the kernel needs squared row norms (only RBF does).
    #[inline]
    pub fn needs_norms(&self) -> bool {
        matches!(self, KernelKind::Rbf { .. })
    }

    /// The kernel value from a dot product and the two squared norms.
    #[inline(always)]
    pub fn from_dot(&self, dot: f64, sq_a: f64, sq_b: f64) -> f64 {
        match *self {
            KernelKind::Linear | KernelKind::Precomputed => dot,
            KernelKind::Poly {
                gamma,
                coef0,
                degree,
            } => powi(gamma * dot + coef0, degree),
            KernelKind::Rbf { gamma } => (-gamma * (sq_a + sq_b - 2.0 * dot).max(0.0)).exp(),
            KernelKind::Sigmoid { gamma, coef0 } => (gamma * dot + coef0).tanh(),
        }
    }
}

/// `base^exp` by repeated squaring (`f64::powi` takes an `i32`).
#[inline]
fn powi(base: f64, exp: u32) -> f64 {
    let mut result = 1.0;
    let mut b = base;
    let mut e = exp;
    while e > 0 {
        if e & 1 == 1 {
            result *= b;
        }
        b *= b;
        e >>= 1;
    }
    result
}
