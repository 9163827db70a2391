//! Solver tests: tiny duals with known answers, KKT conditions at the
//! returned point, and agreement between the solver's modes.

// Index loops read clearer in these checks.
#![allow(clippy::needless_range_loop)]

use localsvm_core::{
    Constraint, DualProblem, KernelKind, KernelSource, Precision, Rows, SolverOptions,
};

/// A small deterministic pseudo-random generator (no dev-dependency needed).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 11) as f64) / ((1u64 << 53) as f64)
    }
}

/// Two noisy Gaussian blobs in 2-D with labels ±1.
fn blobs(n: usize, seed: u64) -> (Vec<f64>, Vec<f64>) {
    let mut rng = Lcg(seed);
    let mut x = Vec::with_capacity(2 * n);
    let mut y = Vec::with_capacity(n);
    for i in 0..n {
        let label = if i % 2 == 0 { 1.0 } else { -1.0 };
        x.push(label * 0.8 + 2.0 * (rng.next() - 0.5));
        x.push(-label * 0.3 + 2.0 * (rng.next() - 0.5));
        y.push(label);
    }
    (x, y)
}

fn rbf_source(x: &[f64], gamma: f64) -> KernelSource {
    let rows = Rows::new(x.to_vec(), x.len() / 2, 2).unwrap();
    KernelSource::dense(KernelKind::Rbf { gamma }, rows).unwrap()
}

fn problem(source: KernelSource, y: &[f64], upper: &[f64]) -> DualProblem {
    DualProblem {
        source,
        y: y.to_vec(),
        p: None,
        upper: upper.to_vec(),
        alpha0: None,
        active: None,
        constraint: Constraint::Equality,
        start: Default::default(),
        twins: None,
    }
}

fn opts(tol: f64) -> SolverOptions {
    SolverOptions {
        tol,
        ..SolverOptions::default()
    }
}

/// The full gradient `Qα + p` computed from scratch.
fn gradient(source: &KernelSource, y: &[f64], p: &[f64], alpha: &[f64]) -> Vec<f64> {
    let n = y.len();
    (0..n)
        .map(|i| {
            p[i] + (0..n)
                .map(|j| y[i] * y[j] * source.eval(i, j) * alpha[j])
                .sum::<f64>()
        })
        .collect()
}

/// Maximal KKT violation `m(α) − M(α)` of the equality-constrained dual.
fn kkt_gap(y: &[f64], upper: &[f64], alpha: &[f64], grad: &[f64], set: &[usize]) -> f64 {
    let mut up = f64::NEG_INFINITY;
    let mut low = f64::NEG_INFINITY;
    for &t in set {
        let yg = y[t] * grad[t];
        let can_up = if y[t] > 0.0 {
            alpha[t] < upper[t]
        } else {
            alpha[t] > 0.0
        };
        let can_down = if y[t] > 0.0 {
            alpha[t] > 0.0
        } else {
            alpha[t] < upper[t]
        };
        if can_up {
            up = up.max(-yg);
        }
        if can_down {
            low = low.max(yg);
        }
    }
    up + low
}

fn objective(source: &KernelSource, y: &[f64], alpha: &[f64]) -> f64 {
    let p = vec![-1.0; y.len()];
    let g = gradient(source, y, &p, alpha);
    0.5 * alpha
        .iter()
        .zip(g.iter().zip(&p))
        .map(|(a, (g, p))| a * (g + p))
        .sum::<f64>()
}

#[test]
fn two_points_hard_margin() {
    // x = ±1 with labels ±1: the maximal margin has w = 1, b = 0, so α = ½.
    let rows = Rows::new(vec![1.0, -1.0], 2, 1).unwrap();
    let source = KernelSource::dense(KernelKind::Linear, rows).unwrap();
    let sol = problem(source, &[1.0, -1.0], &[10.0, 10.0])
        .solve(&opts(1e-9))
        .unwrap();
    assert!((sol.alpha[0] - 0.5).abs() < 1e-9, "{:?}", sol.alpha);
    assert!((sol.alpha[1] - 0.5).abs() < 1e-9);
    assert!(sol.rho.abs() < 1e-9);
    assert!((sol.objective + 0.5).abs() < 1e-9);
    assert!(sol.converged);
}

#[test]
fn two_points_bounded() {
    // Same data with C = 0.1: both multipliers sit at their bound.
    let rows = Rows::new(vec![1.0, -1.0], 2, 1).unwrap();
    let source = KernelSource::dense(KernelKind::Linear, rows).unwrap();
    let sol = problem(source, &[1.0, -1.0], &[0.1, 0.1])
        .solve(&opts(1e-9))
        .unwrap();
    assert!((sol.alpha[0] - 0.1).abs() < 1e-12);
    assert!((sol.alpha[1] - 0.1).abs() < 1e-12);
    assert!((sol.objective + 0.18).abs() < 1e-12);
}

#[test]
fn kkt_conditions_hold_with_unequal_bounds() {
    let (x, y) = blobs(160, 7);
    let mut rng = Lcg(99);
    let upper: Vec<f64> = (0..y.len()).map(|_| 0.05 + 3.0 * rng.next()).collect();
    for shrinking in [true, false] {
        let tol = 1e-5;
        let sol = problem(rbf_source(&x, 0.8), &y, &upper)
            .solve(&SolverOptions {
                tol,
                shrinking,
                ..SolverOptions::default()
            })
            .unwrap();
        let source = rbf_source(&x, 0.8);
        let grad = gradient(&source, &y, &vec![-1.0; y.len()], &sol.alpha);
        let all: Vec<usize> = (0..y.len()).collect();
        // f32 cache storage perturbs the gradient slightly.
        assert!(kkt_gap(&y, &upper, &sol.alpha, &grad, &all) < tol + 1e-4);
        let ya: f64 = sol.alpha.iter().zip(&y).map(|(a, y)| a * y).sum();
        assert!(ya.abs() < 1e-10);
        for (a, u) in sol.alpha.iter().zip(&upper) {
            assert!(*a >= 0.0 && a <= u);
        }
        let obj = objective(&source, &y, &sol.alpha);
        assert!((obj - sol.objective).abs() < 1e-5 * obj.abs().max(1.0));
        // ρ agrees with the free variables: y_t G_t = ρ for 0 < α_t < U_t.
        for t in 0..y.len() {
            if sol.alpha[t] > 1e-8 && sol.alpha[t] < upper[t] - 1e-8 {
                assert!((y[t] * grad[t] - sol.rho).abs() < 1e-3);
            }
        }
    }
}

#[test]
fn tiny_cache_gives_the_same_answer() {
    let (x, y) = blobs(120, 3);
    let upper = vec![1.0; y.len()];
    let big = problem(rbf_source(&x, 0.5), &y, &upper)
        .solve(&opts(1e-6))
        .unwrap();
    let tiny = problem(rbf_source(&x, 0.5), &y, &upper)
        .solve(&SolverOptions {
            tol: 1e-6,
            cache_bytes: 1,
            ..SolverOptions::default()
        })
        .unwrap();
    assert!((big.objective - tiny.objective).abs() < 1e-7 * big.objective.abs());
}

#[test]
fn warm_start_from_the_optimum_stops_at_once() {
    let (x, y) = blobs(100, 11);
    let upper = vec![2.0; y.len()];
    let cold = problem(rbf_source(&x, 0.5), &y, &upper)
        .solve(&opts(1e-3))
        .unwrap();
    let mut warm = problem(rbf_source(&x, 0.5), &y, &upper);
    warm.alpha0 = Some(cold.alpha.clone());
    let warm = warm.solve(&opts(1e-3)).unwrap();
    assert!(warm.n_iter <= 1, "took {} iterations", warm.n_iter);
    assert!((warm.objective - cold.objective).abs() < 1e-6);
}

#[test]
fn subset_optimisation_holds_the_rest_fixed() {
    let (x, y) = blobs(80, 5);
    let n = y.len();
    let upper = vec![1.0; n];
    let full = problem(rbf_source(&x, 0.5), &y, &upper)
        .solve(&opts(1e-6))
        .unwrap();
    // Perturb a feasible point: move mass between two same-label variables
    // inside the subset, then re-optimise only the subset.
    let subset: Vec<usize> = (0..n).step_by(3).collect();
    let mut start = full.alpha.clone();
    let (a, b) = (subset[0], subset[2]);
    assert_eq!(y[a], y[b]);
    let shift = start[a].min(upper[b] - start[b]);
    start[a] -= shift;
    start[b] += shift;
    let mut sub = problem(rbf_source(&x, 0.5), &y, &upper);
    sub.alpha0 = Some(start.clone());
    sub.active = Some(subset.clone());
    let sol = sub.solve(&opts(1e-6)).unwrap();
    assert_eq!(sol.n_optimised, subset.len());
    for i in 0..n {
        if !subset.contains(&i) {
            assert_eq!(sol.alpha[i], start[i]);
        }
    }
    let source = rbf_source(&x, 0.5);
    let grad = gradient(&source, &y, &vec![-1.0; n], &sol.alpha);
    assert!(kkt_gap(&y, &upper, &sol.alpha, &grad, &subset) < 1e-6 + 1e-4);
    // Everything else was optimal already, so the full optimum is recovered.
    let obj = objective(&source, &y, &sol.alpha);
    assert!((obj - full.objective).abs() < 1e-5);
}

#[test]
fn zero_bounds_pin_variables() {
    let (x, y) = blobs(60, 2);
    let mut upper = vec![1.0; y.len()];
    upper[0] = 0.0;
    upper[1] = 0.0;
    let sol = problem(rbf_source(&x, 0.5), &y, &upper)
        .solve(&opts(1e-4))
        .unwrap();
    assert_eq!(sol.alpha[0], 0.0);
    assert_eq!(sol.alpha[1], 0.0);
    assert_eq!(sol.n_optimised, y.len() - 2);
}

#[test]
fn precomputed_matches_dense() {
    let (x, y) = blobs(70, 13);
    let n = y.len();
    let source = rbf_source(&x, 0.9);
    let matrix: Vec<f64> = (0..n * n).map(|k| source.eval(k / n, k % n)).collect();
    let upper = vec![0.7; n];
    let dense = problem(source, &y, &upper).solve(&opts(1e-6)).unwrap();
    let pre = problem(KernelSource::precomputed(matrix, n).unwrap(), &y, &upper)
        .solve(&opts(1e-6))
        .unwrap();
    assert!((dense.objective - pre.objective).abs() < 1e-6);
    assert!((dense.rho - pre.rho).abs() < 1e-4);
}

#[test]
fn box_only_matches_the_closed_form() {
    // Q = I (linear kernel on orthonormal rows): α = clip(−p, 0, U).
    let rows = Rows::new(vec![1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0], 3, 3).unwrap();
    let source = KernelSource::dense(KernelKind::Linear, rows).unwrap();
    let sol = DualProblem {
        p: Some(vec![-1.0, 2.0, -0.5]),
        constraint: Constraint::BoxOnly,
        ..DualProblem::new(source, vec![1.0, -1.0, 1.0], vec![0.5, 1.0, 1.0])
    }
    .solve(&opts(1e-9))
    .unwrap();
    let want = [0.5, 0.0, 0.5];
    for (a, w) in sol.alpha.iter().zip(want) {
        assert!((a - w).abs() < 1e-12, "{:?}", sol.alpha);
    }
    assert_eq!(sol.rho, 0.0);
}

#[test]
fn box_only_kkt_on_a_kernel_problem() {
    let (x, y) = blobs(90, 17);
    let n = y.len();
    let upper = vec![1.5; n];
    let mut prob = problem(rbf_source(&x, 0.6), &y, &upper);
    prob.constraint = Constraint::BoxOnly;
    let sol = prob.solve(&opts(1e-6)).unwrap();
    let grad = gradient(&rbf_source(&x, 0.6), &y, &vec![-1.0; n], &sol.alpha);
    for t in 0..n {
        let g = grad[t];
        let bad = (g < -1e-4 && sol.alpha[t] < upper[t]) || (g > 1e-4 && sol.alpha[t] > 0.0);
        assert!(!bad, "variable {t}: alpha {} grad {g}", sol.alpha[t]);
    }
}

#[test]
fn iteration_cap_is_reported() {
    let (x, y) = blobs(100, 19);
    let sol = problem(rbf_source(&x, 0.5), &y, &vec![10.0; y.len()])
        .solve(&SolverOptions {
            tol: 1e-8,
            max_iter: Some(3),
            ..SolverOptions::default()
        })
        .unwrap();
    assert_eq!(sol.n_iter, 3);
    assert!(!sol.converged);
}

#[test]
fn bad_input_is_an_error_not_a_panic() {
    let (x, y) = blobs(10, 1);
    let upper = vec![1.0; 10];
    let mut bad_y = y.clone();
    bad_y[0] = 0.5;
    let err = problem(rbf_source(&x, 0.5), &bad_y, &upper)
        .solve(&opts(1e-3))
        .unwrap_err();
    assert!(err.to_string().contains("y must contain only"));
    let err = problem(rbf_source(&x, 0.5), &y, &upper[..9])
        .solve(&opts(1e-3))
        .unwrap_err();
    assert!(err.to_string().contains("upper"));
    let mut infeasible = problem(rbf_source(&x, 0.5), &y, &upper);
    infeasible.alpha0 = Some(
        vec![0.5; 10]
            .into_iter()
            .enumerate()
            .map(|(i, a)| if i == 0 { 1.0 } else { a })
            .collect(),
    );
    let err = infeasible.solve(&opts(1e-3)).unwrap_err();
    assert!(err.to_string().contains("equality"));
    let mut out_of_box = problem(rbf_source(&x, 0.5), &y, &upper);
    out_of_box.alpha0 = Some(vec![2.0; 10]);
    assert!(out_of_box.solve(&opts(1e-3)).is_err());
    let mut bad_active = problem(rbf_source(&x, 0.5), &y, &upper);
    bad_active.active = Some(vec![0, 0]);
    assert!(bad_active.solve(&opts(1e-3)).is_err());
    assert!(problem(rbf_source(&x, 0.5), &y, &upper)
        .solve(&opts(0.0))
        .is_err());
}

/// The same RBF problem on data scaled by `s`, with γ scaled by `1/s²`:
/// the kernel values, hence the dual, do not change.
fn scaled_rbf(
    x: &[f64],
    y: &[f64],
    s: f64,
    precision: Precision,
    tol: f64,
) -> localsvm_core::Solution {
    let xs: Vec<f64> = x.iter().map(|v| v * s).collect();
    let gamma = 0.5 / (s * s);
    let upper = vec![1.0; y.len()];
    problem(rbf_source(&xs, gamma), y, &upper)
        .solve_with(&opts(tol), precision)
        .unwrap()
}

#[test]
fn ordinary_data_at_the_default_tol_solves_in_float32() {
    let (x, y) = blobs(60, 3);
    let sol = scaled_rbf(&x, &y, 1.0, Precision::Auto, 1e-3);
    assert_eq!(sol.precision, Precision::Float32);
    let sol = problem(rbf_source(&x, 0.5), &y, &vec![1.0; 60])
        .solve(&opts(1e-3))
        .unwrap();
    assert_eq!(sol.precision, Precision::Float32);
}

#[test]
fn a_tight_tol_solves_in_float64_and_reaches_it() {
    let (x, y) = blobs(60, 4);
    let sol = scaled_rbf(&x, &y, 1.0, Precision::Auto, 1e-9);
    assert_eq!(sol.precision, Precision::Float64);
    assert!(sol.converged);
    // The KKT gap, recomputed in f64 from scratch, meets the tolerance.
    let source = rbf_source(&x, 0.5);
    let upper = vec![1.0; 60];
    let g = gradient(&source, &y, &vec![-1.0; 60], &sol.alpha);
    let all: Vec<usize> = (0..60).collect();
    let gap = kkt_gap(&y, &upper, &sol.alpha, &g, &all);
    assert!(gap <= 1e-9 * 1.01, "gap {gap:e}");
}

#[test]
fn data_outside_float32_range_solves_in_float64_with_the_same_answer() {
    let (x, y) = blobs(60, 5);
    let base = scaled_rbf(&x, &y, 1.0, Precision::Float64, 1e-8);
    for s in [1e150, 1e-150, 1e25, 1e-25] {
        let sol = scaled_rbf(&x, &y, s, Precision::Auto, 1e-8);
        assert_eq!(sol.precision, Precision::Float64, "scale {s:e}");
        assert!(
            (sol.rho - base.rho).abs() < 1e-6,
            "scale {s:e}: rho {} vs {}",
            sol.rho,
            base.rho
        );
        for (a, b) in sol.alpha.iter().zip(&base.alpha) {
            assert!((a - b).abs() < 1e-6, "scale {s:e}: {a} vs {b}");
        }
        // Forcing float32 on such data is a clear error, not a wrong answer.
        let xs: Vec<f64> = x.iter().map(|v| v * s).collect();
        let err = problem(rbf_source(&xs, 0.5 / (s * s)), &y, &vec![1.0; 60])
            .solve_with(&opts(1e-3), Precision::Float32)
            .unwrap_err();
        assert!(err.to_string().contains("float32"), "{err}");
    }
}

#[test]
fn float64_and_float32_paths_agree_on_ordinary_data() {
    let (x, y) = blobs(80, 6);
    let upper = vec![2.0; 80];
    let solve = |p| {
        problem(rbf_source(&x, 0.7), &y, &upper)
            .solve_with(&opts(1e-4), p)
            .unwrap()
    };
    let (a, b) = (solve(Precision::Float32), solve(Precision::Float64));
    assert_eq!(
        (a.precision, b.precision),
        (Precision::Float32, Precision::Float64)
    );
    let src = rbf_source(&x, 0.7);
    let (oa, ob) = (objective(&src, &y, &a.alpha), objective(&src, &y, &b.alpha));
    assert!((oa - ob).abs() < 1e-4 * ob.abs().max(1.0), "{oa} vs {ob}");
    // Precomputed kernels take the f64 path too when asked: given the
    // dense path's own f64 kernel columns, the same solution.
    let n = 80;
    let mut gram = vec![0.0; n * n];
    for (i, column) in gram.chunks_exact_mut(n).enumerate() {
        src.fill64(i, (0, n), 1.0, &vec![1.0; n], column);
    }
    let pre = problem(KernelSource::precomputed(gram, n).unwrap(), &y, &upper)
        .solve_with(&opts(1e-4), Precision::Float64)
        .unwrap();
    assert_eq!(pre.precision, Precision::Float64);
    for (p, q) in pre.alpha.iter().zip(&b.alpha) {
        assert!((p - q).abs() < 1e-9, "{p} vs {q}");
    }
}

#[test]
fn linear_kernel_values_beyond_float64_are_an_error_naming_the_cause() {
    let (x, y) = blobs(20, 7);
    let xs: Vec<f64> = x.iter().map(|v| v * 1e200).collect();
    let rows = Rows::new(xs, 20, 2).unwrap();
    let err = problem(
        KernelSource::dense(KernelKind::Linear, rows).unwrap(),
        &y,
        &[1.0; 20],
    )
    .solve(&opts(1e-3))
    .unwrap_err();
    assert!(err.to_string().contains("overflow float64"), "{err}");
}

#[test]
fn small_or_sparse_problems_and_zero_threads() {
    let (x, y) = blobs(200, 3);
    let src = rbf_source(&x, 0.7);
    let opts2 = SolverOptions {
        threads: 2,
        ..SolverOptions::default()
    };
    // Below the size threshold the team is not started.
    let sol = problem(src.clone(), &y, &[1.0; 200]).solve(&opts2).unwrap();
    assert_eq!(sol.threads, 1);
    let opts0 = SolverOptions {
        threads: 0,
        ..SolverOptions::default()
    };
    let err = problem(src, &y, &[1.0; 200]).solve(&opts0).unwrap_err();
    assert!(err.to_string().contains("threads"), "{err}");
}
