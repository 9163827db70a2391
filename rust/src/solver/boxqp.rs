//! Greedy coordinate descent for the box-constrained QP without an equality
//! constraint,
//!
//! ```text
//! min_α ½ αᵀQα + pᵀα   s.t.  0 ≤ α_i ≤ U_i,
//! ```
//!
//! the dual that the multiclass cluster SVM (MCSVM; Wang & Yang, Journal of
//! Computer Applications 30(1), 2010) and bias-free SVMs lead to. Each
//! iteration moves the single variable whose exact one-dimensional
//! minimisation (clipped to its box) lowers the objective most, and stops when
//! the largest projected-gradient violation is at most `tol`.

use crate::error::Result;
use crate::precision::QValue;
use crate::runtime::control::Control;
use crate::solver::qmatrix::QMatrix;
use crate::solver::smo::{SmoResult, TAU};

/// Step and objective decrease of the clipped Newton step on variable `t`.
#[inline]
fn newton_step(alpha: f64, grad: f64, qd: f64, upper: f64) -> (f64, f64) {
    let target = (alpha - grad / qd.max(TAU)).clamp(0.0, upper);
    let step = target - alpha;
    (step, -(grad * step + 0.5 * qd * step * step))
}

/// How far `t` violates the optimality conditions of the box QP.
#[inline]
fn violation(alpha: f64, grad: f64, upper: f64) -> f64 {
    if grad < 0.0 && alpha < upper {
        -grad
    } else if grad > 0.0 && alpha > 0.0 {
        grad
    } else {
        0.0
    }
}

/// Solves the box QP from the start `alpha` (which must lie in the box);
/// [`crate::Error::Interrupted`] soon after `ctl` is cancelled.
pub fn solve<T: QValue, Q: QMatrix<T>>(
    q: &mut Q,
    p: &[f64],
    upper: &[f64],
    alpha: &[f64],
    tol: f64,
    max_iter: u64,
    ctl: &Control,
) -> Result<SmoResult> {
    let n = q.n();
    let qd = q.diag().to_vec();
    let mut alpha = alpha.to_vec();
    let mut grad = p.to_vec();
    for (i, &a) in alpha.iter().enumerate() {
        if a != 0.0 {
            ctl.check()?;
            let col = q.column(i, n);
            for (g, &qv) in grad.iter_mut().zip(col) {
                *g += a * qv.to_f64();
            }
        }
    }
    let mut n_iter = 0u64;
    let mut converged = false;
    while n_iter < max_iter {
        ctl.check()?;
        let mut worst = 0.0f64;
        let mut best = None;
        let mut best_gain = 0.0;
        for t in 0..n {
            let v = violation(alpha[t], grad[t], upper[t]);
            if v > worst {
                worst = v;
            }
            if v > 0.0 {
                let (step, gain) = newton_step(alpha[t], grad[t], qd[t], upper[t]);
                if step != 0.0 && gain > best_gain {
                    best_gain = gain;
                    best = Some((t, step));
                }
            }
        }
        let Some((i, step)) = best else {
            converged = true;
            break;
        };
        if worst <= tol {
            converged = true;
            break;
        }
        n_iter += 1;
        ctl.report(n_iter, worst);
        let moved = (alpha[i] + step).clamp(0.0, upper[i]);
        let step = moved - alpha[i];
        alpha[i] = moved;
        let col = q.column(i, n);
        for (g, &qv) in grad.iter_mut().zip(col) {
            *g += step * qv.to_f64();
        }
    }
    let objective = 0.5
        * alpha
            .iter()
            .zip(grad.iter().zip(p))
            .map(|(a, (g, pv))| a * (g + pv))
            .sum::<f64>();
    Ok(SmoResult {
        alpha,
        gradient: grad,
        grad_bar: Vec::new(),
        rho: 0.0,
        objective,
        n_iter,
        converged,
    })
}
