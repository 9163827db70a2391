//! The dual's gradient at a warm start, by blocked products over the support
//! vectors instead of one kernel column per non-zero multiplier.
//!
//! For the C-SVC dual `min ½αᵀQα + pᵀα`, `Q_ij = y_i y_j K(x_i, x_j)`, SMO
//! needs at its start point
//!
//! ```text
//! G_i = p_i + y_i Σ_j α_j y_j K(x_i, x_j)
//! Ḡ_i =       y_i Σ_{j: α_j ≥ U_j} U_j y_j K(x_i, x_j)
//! ```
//!
//! Both are decision values of kernel expansions over the support vectors
//! (`α_j > 0`): two expansions, `α_j y_j` and `U_j y_j` (the latter zero
//! below the upper bound), evaluated at every training row by
//! [`crate::predict`]'s blocked, vectorised and parallel loops, each kernel
//! value computed once for both. [`crate::solver::smo`]'s column-by-column fill
//! costs the same number of kernel values, but one cached column at a time
//! through the kernel cache (evicting the columns the solve will want): at
//! DC-SVM's warm starts (Hsieh, Si & Dhillon, ICML 2014), with tens of
//! thousands of support vectors, that fill costs as much as the solve.

use rayon::prelude::*;

use crate::error::{shape_error, try_filled, value_error, Result};
use crate::kernel::{KernelKind, KernelSource};
use crate::precision::Precision;
use crate::predict;
use crate::runtime::control::Control;

/// Rows of the training set per parallel task on the sources without a
/// vectorised decision path (sparse rows, precomputed matrices).
const ROWS_PER_TASK: usize = 64;

/// The gradient of the dual at a start point and what computing it cost.
#[derive(Clone, Debug)]
pub struct StartGradient {
    /// `G = Qα + p`.
    pub grad: Vec<f64>,
    /// `Ḡ = Σ_{j at its upper bound} U_j Q_j`.
    pub grad_bar: Vec<f64>,
    /// Kernel values computed: rows × support vectors.
    pub kernel_evaluations: u64,
}

/// `G` and `Ḡ` (see the module's notes) of the dual over `source` at
/// `alpha`, with `alpha_j ≥ upper_j` counted as at the upper bound (the rule
/// [`crate::solver::smo`] applies). Kernel values are computed in `path`: the
/// `Float32` path of dense rows uses the vectorised `f32` loops of
/// [`predict`] (sums in `f32` blocks of 256, the blocks in `f64`), every
/// other case `f64`. In parallel over rows on rayon's pool; polls `ctl` once
/// per block of rows ([`crate::Error::Interrupted`] once cancelled).
pub fn dual_gradient(
    source: &KernelSource,
    y: &[f64],
    p: &[f64],
    upper: &[f64],
    alpha: &[f64],
    path: Precision,
    ctl: &Control,
) -> Result<StartGradient> {
    let n = source.n();
    for (name, v) in [("y", y), ("p", p), ("upper", upper), ("alpha", alpha)] {
        if v.len() != n {
            shape_error!("{name} has {} entries but there are {n} examples", v.len());
        }
    }
    if alpha.iter().chain(p).chain(upper).any(|v| !v.is_finite()) {
        value_error!("alpha, p or upper contain NaN or infinity");
    }
    let sv: Vec<usize> = (0..n).filter(|&j| alpha[j] > 0.0).collect();
    let s = sv.len();
    let mut grad = p.to_vec();
    let mut grad_bar = try_filled(n, 0.0, "the gradient at the start", "use fewer examples")?;
    if s == 0 {
        return Ok(StartGradient {
            grad,
            grad_bar,
            kernel_evaluations: 0,
        });
    }
    // Two expansions over the support vectors, row-major 2 × s.
    let mut coef = try_filled(2 * s, 0.0, "the start's coefficients", "use fewer examples")?;
    for (t, &j) in sv.iter().enumerate() {
        coef[t] = alpha[j] * y[j];
        if alpha[j] >= upper[j] {
            coef[s + t] = upper[j] * y[j];
        }
    }
    let values = match source {
        KernelSource::Dense { kind, rows, .. } => {
            let sv_rows = rows.gather(&sv)?;
            let path = match path {
                Precision::Float64 => Precision::Float64,
                _ => Precision::Float32,
            };
            predict::decision_values_controlled(
                *kind,
                rows,
                &sv_rows,
                &coef,
                &[0.0, 0.0],
                path,
                ctl,
            )?
            .0
        }
        _ => expansions_by_values(source, &sv, &coef, ctl)?,
    };
    ctl.check()?;
    for i in 0..n {
        grad[i] += y[i] * values[2 * i];
        grad_bar[i] = y[i] * values[2 * i + 1];
    }
    if grad.iter().chain(&grad_bar).any(|v| !v.is_finite()) {
        value_error!(
            "the gradient at the start point overflows float64: the multipliers times the \
             kernel values exceed about 1.8e308"
        );
    }
    Ok(StartGradient {
        grad,
        grad_bar,
        kernel_evaluations: (n as u64).saturating_mul(s as u64),
    })
}

/// The arithmetic of the start gradient at `alpha` for a solve in `path`
/// to `tol`: `path`, except that float32 sums serve only the RBF kernel
/// (values in [0, 1]) with multipliers of total mass `Σ α_j` small enough
/// that float32 rounding, about `ε₃₂ · Σ α_j` in each `G_i`, stays below a
/// tenth of `tol`; otherwise `Float64`. Measured: with 6 000 multipliers
/// of mass 4.5·10⁵ (`C` = 100) the float32 sums erred by 3·10⁻³ in `G`,
/// three times a `tol` of 10⁻³, which a solve from there takes as
/// converged.
pub fn gradient_path(kind: KernelKind, path: Precision, alpha: &[f64], tol: f64) -> Precision {
    if path == Precision::Float64 || !matches!(kind, KernelKind::Rbf { .. }) {
        return Precision::Float64;
    }
    let mass: f64 = alpha.iter().map(|a| a.abs()).sum();
    if f64::from(f32::EPSILON) * mass <= 0.1 * tol {
        path
    } else {
        Precision::Float64
    }
}

/// The two expansions `coef` (row-major `2 × sv.len()`) at every example of
/// `source`, row-major `n × 2`, from [`KernelSource::eval`] in `f64`.
fn expansions_by_values(
    source: &KernelSource,
    sv: &[usize],
    coef: &[f64],
    ctl: &Control,
) -> Result<Vec<f64>> {
    let n = source.n();
    let s = sv.len();
    let mut out = try_filled(2 * n, 0.0, "the start's expansions", "use fewer examples")?;
    out.par_chunks_mut(2 * ROWS_PER_TASK)
        .enumerate()
        .for_each(|(block, chunk)| {
            if ctl.is_cancelled() {
                return;
            }
            let first = block * ROWS_PER_TASK;
            for (r, pair) in chunk.chunks_mut(2).enumerate() {
                let i = first + r;
                let (mut a, mut b) = (0.0, 0.0);
                for (t, &j) in sv.iter().enumerate() {
                    let k = source.eval(i, j);
                    a += coef[t] * k;
                    b += coef[s + t] * k;
                }
                pair[0] = a;
                pair[1] = b;
            }
        });
    ctl.check()?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::{KernelKind, Rows};
    use crate::solver::problem::{DualProblem, SolverOptions};
    use crate::solver::qmatrix::KernelQ;
    use crate::solver::smo;

    fn blobs(n: usize, d: usize) -> (Vec<f64>, Vec<f64>) {
        crate::testing::two_classes(n, d, 5, 2, |_| 0.3)
    }

    /// A feasible start with multipliers at both bounds and in between.
    fn start(y: &[f64], upper: &[f64]) -> Vec<f64> {
        let n = y.len();
        let mut a = vec![0.0; n];
        // Pairs (2k, 2k + 1) have opposite labels: equal values keep yᵀα = 0.
        for k in 0..n / 2 {
            let v = match k % 4 {
                0 => 0.0,
                1 => 0.37 * upper[2 * k].min(upper[2 * k + 1]),
                _ => upper[2 * k].min(upper[2 * k + 1]),
            };
            a[2 * k] = v;
            a[2 * k + 1] = v;
        }
        a
    }

    #[test]
    fn blocked_gradient_matches_the_column_fill() {
        let (n, d) = (300, 4);
        let (x, y) = blobs(n, d);
        let upper: Vec<f64> = (0..n).map(|i| if i % 3 == 0 { 2.0 } else { 1.0 }).collect();
        let alpha = start(&y, &upper);
        let p = vec![-1.0; n];
        for kind in [
            KernelKind::Rbf { gamma: 0.4 },
            KernelKind::Linear,
            KernelKind::Poly {
                gamma: 0.5,
                coef0: 1.0,
                degree: 2,
            },
        ] {
            let source = KernelSource::dense(kind, Rows::new(x.clone(), n, d).unwrap()).unwrap();
            let gradient_over = |src: &KernelSource| {
                dual_gradient(
                    src,
                    &y,
                    &p,
                    &upper,
                    &alpha,
                    Precision::Float64,
                    &Control::none(),
                )
                .unwrap()
            };
            let got = gradient_over(&source);
            let n_sv = alpha.iter().filter(|&&a| a > 0.0).count();
            assert_eq!(got.kernel_evaluations, (n * n_sv) as u64);
            // The column-by-column fill: SMO's own start, no iterations.
            let mut q = KernelQ::<f64>::new(source.clone(), &y, 1 << 20);
            let stop = smo::Stopping {
                tol: 1e-3,
                max_iter: 0,
                shrinking: false,
                ctl: &Control::none(),
            };
            let dual = smo::Dual {
                p: &p,
                y: &y,
                upper: &upper,
                alpha: &alpha,
            };
            let want = smo::solve(&mut q, &dual, &stop).unwrap();
            let scale = want.gradient.iter().fold(1.0f64, |m, g| m.max(g.abs()));
            for (g, w) in got.grad.iter().zip(&want.gradient) {
                assert!((g - w).abs() <= 1e-12 * scale, "{kind:?}: {g} vs {w}");
            }
            // Ḡ by its definition.
            for i in 0..n {
                let want: f64 = (0..n)
                    .filter(|&j| alpha[j] >= upper[j])
                    .map(|j| upper[j] * y[i] * y[j] * source.eval(i, j))
                    .sum();
                assert!((got.grad_bar[i] - want).abs() <= 1e-12 * scale);
            }
            // The same values over a precomputed matrix (the generic path).
            let mut k = vec![0.0; n * n];
            for i in 0..n {
                for j in 0..n {
                    k[i * n + j] = source.eval(i, j);
                }
            }
            let pre = KernelSource::precomputed(k, n).unwrap();
            let by_values = gradient_over(&pre);
            for (g, w) in by_values.grad.iter().zip(&got.grad) {
                assert!((g - w).abs() <= 1e-12 * scale);
            }
            for (g, w) in by_values.grad_bar.iter().zip(&got.grad_bar) {
                assert!((g - w).abs() <= 1e-12 * scale);
            }
        }
    }

    #[test]
    fn supplied_gradient_gives_the_solution_of_the_column_fill() {
        let (n, d) = (400, 3);
        let (x, y) = blobs(n, d);
        let upper = vec![1.0; n];
        let alpha = start(&y, &upper);
        let solve = |mode| {
            rbf_problem(&x, (&y, &upper), &alpha, d, mode)
                .solve_with(
                    &SolverOptions {
                        tol: 1e-7,
                        ..SolverOptions::default()
                    },
                    Precision::Float64,
                )
                .unwrap()
        };
        use crate::solver::problem::StartGradientMode as M;
        let columns = solve(M::Columns);
        let blocked = solve(M::Blocked);
        assert!(columns.converged && blocked.converged);
        // The two starts differ in the last bits (blocked sums against one
        // column at a time), and the solves' deferred updates of Ḡ likewise:
        // the paths may part late, but reach the same optimum (a tight `tol`,
        // so that "same" can be checked to 1e-9).
        let (a, b) = (columns.n_iter as f64, blocked.n_iter as f64);
        assert!((a - b).abs() <= 0.1 * a.max(b), "{a} vs {b} iterations");
        crate::testing::assert_objective_near(blocked.objective, columns.objective, 1e-9);
        assert!(blocked.start_evaluations > 0);
        // The gradient handed over by the caller.
        let source = KernelSource::dense(
            KernelKind::Rbf { gamma: 0.5 },
            Rows::new(x.clone(), n, d).unwrap(),
        )
        .unwrap();
        let g = dual_gradient(
            &source,
            &y,
            &vec![-1.0; n],
            &upper,
            &alpha,
            Precision::Float64,
            &Control::none(),
        )
        .unwrap();
        let given = solve(M::Given {
            grad: g.grad.clone(),
            grad_bar: g.grad_bar.clone(),
        });
        assert_eq!(given.n_iter, blocked.n_iter);
        assert_eq!(given.alpha, blocked.alpha);
        // Wrong lengths and non-finite values are errors, not panics.
        let solve_err = |grad, grad_bar| {
            rbf_problem(&x, (&y, &upper), &alpha, d, M::Given { grad, grad_bar })
                .solve_with(&SolverOptions::default(), Precision::Float64)
                .unwrap_err()
                .to_string()
        };
        let short = solve_err(g.grad[1..].to_vec(), g.grad_bar.clone());
        assert!(short.contains("gradient"), "{short}");
        let mut bad = g.grad.clone();
        bad[7] = f64::NAN;
        let nan = solve_err(bad, g.grad_bar.clone());
        assert!(nan.contains("NaN"), "{nan}");
    }

    /// The dual of the RBF kernel (`γ = 0.5`) over the rows of `x` (`d`
    /// features), labels and boxes `(y, upper)`, from `alpha` with the
    /// start gradient `start`.
    fn rbf_problem(
        x: &[f64],
        (y, upper): (&[f64], &[f64]),
        alpha: &[f64],
        d: usize,
        start: crate::solver::problem::StartGradientMode,
    ) -> DualProblem {
        let rows = Rows::new(x.to_vec(), y.len(), d).unwrap();
        let source = KernelSource::dense(KernelKind::Rbf { gamma: 0.5 }, rows).unwrap();
        DualProblem {
            alpha0: Some(alpha.to_vec()),
            start,
            ..DualProblem::new(source, y.to_vec(), upper.to_vec())
        }
    }
}
