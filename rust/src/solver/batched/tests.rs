//! Tests of the batched rounds.

use super::*;
use crate::kernel::Rows;
use crate::precision::Precision;
use crate::solver::problem::{DualProblem, Solution, SolverChoice, SolverOptions};

/// Two overlapping classes in 4-D (many multipliers end at the bound).
fn overlapping(n: usize) -> (Vec<f64>, Vec<f64>) {
    crate::testing::two_classes(n, 4, 23, 3, |f| if f < 2 { 0.5 } else { 0.0 })
}

/// [`overlapping`] with [`uneven_boxes`].
fn uneven_problem(n: usize) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let (x, y) = overlapping(n);
    (x, y, uneven_boxes(n))
}

/// The subproblem's block, as a round computes it (the members' rows
/// as their own panel, four queries per pass and the remainder one at
/// a time), is symmetric bit for bit, which [`block_times`] relies on;
/// and `block_times` gives the bits of the plain sums in `l`'s order.
#[test]
fn the_block_is_symmetric_and_block_times_sums_in_order() {
    let (x, y) = overlapping(53);
    let kind = KernelKind::Rbf { gamma: 0.8 };
    let rows = Rows::new(x, 53, 4).unwrap();
    let members: Vec<usize> = (0..53).rev().step_by(2).collect();
    let m = members.len();
    let sub = Panel::try_new(&rows.gather(&members).unwrap()).unwrap();
    let queries: Vec<Query> = (0..m).map(|k| sub.query(k)).collect();
    let refs: Vec<&Query> = queries.iter().collect();
    let sign: Vec<f32> = members.iter().map(|&t| y[t] as f32).collect();
    let mut b32 = vec![0.0f32; m * m];
    let mut outs: Vec<&mut [f32]> = b32.chunks_exact_mut(m).collect();
    fill_tile(kind, &sub, &refs, &sign, &sign, 0, m, &mut outs);
    for k in 0..m {
        for l in 0..m {
            assert_eq!(
                b32[k * m + l].to_bits(),
                b32[l * m + k].to_bits(),
                "({k}, {l})"
            );
        }
    }
    let xs: Vec<f64> = (0..m)
        .map(|l| {
            if l % 3 == 0 {
                0.0
            } else {
                0.37 * l as f64 - 2.0
            }
        })
        .collect();
    let mut own = vec![f64::NAN; m];
    block_times(&b32, &xs, &mut own);
    for k in 0..m {
        let plain: f64 = (0..m).map(|l| f64::from(b32[k * m + l]) * xs[l]).sum();
        assert_eq!(own[k].to_bits(), plain.to_bits(), "row {k}");
    }
}

/// Boxes of 1, every seventh 2 (so the bounds differ).
fn uneven_boxes(n: usize) -> Vec<f64> {
    (0..n).map(|t| if t % 7 == 0 { 2.0 } else { 1.0 }).collect()
}

fn source(x: &[f64], n: usize) -> KernelSource {
    let rows = Rows::new(x.to_vec(), n, 4).unwrap();
    KernelSource::dense(KernelKind::Rbf { gamma: 0.8 }, rows).unwrap()
}

/// [`source`] with its `f32` panel built, as the rounds need it.
fn prepared(x: &[f64], n: usize) -> KernelSource {
    let src = source(x, n);
    src.prepare_f32().unwrap();
    src
}

/// The start at `α = 0` (`G = p = −1`, `Ḡ = 0`).
fn cold_start(n: usize) -> Start {
    Start {
        alpha: vec![0.0; n],
        grad: vec![-1.0; n],
        grad_bar: None,
    }
}

/// `result`'s error, which must name `what`.
fn assert_error_names<T: std::fmt::Debug>(result: Result<T>, what: &str) {
    let err = result.unwrap_err();
    assert!(err.to_string().contains(what), "{err}");
}

fn solve(x: &[f64], y: &[f64], upper: &[f64], opts: &SolverOptions) -> Solution {
    let n = y.len();
    let problem = DualProblem::new(source(x, n), y.to_vec(), upper.to_vec());
    problem.solve_with(opts, Precision::Float32).unwrap()
}

/// Options with `tol = 1e-5`.
fn tight(solver: SolverChoice, threads: usize) -> SolverOptions {
    SolverOptions {
        tol: 1e-5,
        solver,
        threads,
        ..SolverOptions::default()
    }
}

/// Converged to the objective of `want` (relative 1e-6).
fn assert_same_optimum(got: &Solution, want: &Solution) {
    assert!(got.converged);
    crate::testing::assert_objective_near(got.objective, want.objective, 1e-6);
}

/// `G = Qα + p` from the kernel values directly, in `f64`.
fn gradient(src: &KernelSource, y: &[f64], alpha: &[f64]) -> Vec<f64> {
    (0..y.len())
        .map(|t| {
            -1.0 + (0..y.len())
                .filter(|&s| alpha[s] != 0.0)
                .map(|s| y[t] * y[s] * alpha[s] * src.eval(t, s))
                .sum::<f64>()
        })
        .collect()
}

/// `Ḡ = Σ_{α_s ≥ U_s} U_s Q_s` from the kernel values directly.
fn gradient_bar(src: &KernelSource, y: &[f64], alpha: &[f64], upper: &[f64]) -> Vec<f64> {
    let at_upper: Vec<f64> = alpha
        .iter()
        .zip(upper)
        .map(|(&a, &u)| if a >= u { u } else { 0.0 })
        .collect();
    let mut bar = gradient(src, y, &at_upper);
    bar.iter_mut().for_each(|g| *g += 1.0);
    bar
}

#[test]
fn rounds_keep_the_gradient_and_approach_the_solution() {
    let n = 700;
    let (x, y, upper) = uneven_problem(n);
    let src = prepared(&x, n);
    assert!(applicable(&src));
    let team = Team::new().map(Arc::new);
    let start = (vec![0.0; n], vec![-1.0; n]);
    let run = |shrinking: bool, team: Option<&Arc<Team>>| {
        let mut settings = Settings::new(1e-3, u64::MAX, 1 << 30);
        settings.switch_gap = 1e-3;
        settings.shrinking = shrinking;
        let (a, g) = start.clone();
        let mut own = src.clone();
        let pre = presolve(
            &mut own,
            &y,
            &upper,
            Start {
                alpha: a,
                grad: g,
                grad_bar: None,
            },
            &settings,
            team,
            &Control::none(),
        )
        .unwrap()
        .unwrap();
        // The rows are back in their order.
        let (_, rows, panel) = dense_parts(&own).unwrap();
        let (_, rows0, panel0) = dense_parts(&src).unwrap();
        for t in 0..n {
            assert_eq!(rows.row(t), rows0.row(t), "row {t}");
            assert_eq!(panel.row(t), panel0.row(t), "panel row {t}");
        }
        pre
    };
    for shrinking in [true, false] {
        let pre = run(shrinking, None);
        assert!(pre.rounds > 1, "{} rounds", pre.rounds);
        assert!(pre.gap < 1e-3, "stopped at gap {}", pre.gap);
        assert_eq!(shrinking, pre.shrunk > 0, "{} rows shrunk", pre.shrunk);
        // Feasible: inside the boxes, yᵀα = 0.
        assert!(pre
            .alpha
            .iter()
            .zip(&upper)
            .all(|(&a, &u)| (0.0..=u).contains(&a)));
        let ya: f64 = pre.alpha.iter().zip(&y).map(|(a, y)| a * y).sum();
        assert!(ya.abs() < 1e-9, "yᵀα = {ya}");
        // The incremental G and Ḡ are the true ones (to f32 kernel
        // values), the shrunk rows' too.
        let want = gradient(&src, &y, &pre.alpha);
        let want_bar = gradient_bar(&src, &y, &pre.alpha, &upper);
        for t in 0..n {
            assert!((pre.grad[t] - want[t]).abs() < 1e-4, "G[{t}]");
            assert!((pre.grad_bar[t] - want_bar[t]).abs() < 1e-4, "Ḡ[{t}]");
        }
        // The same bits on the two-thread team.
        if let Some(team) = &team {
            let shared = run(shrinking, Some(team));
            assert_eq!(shared.alpha, pre.alpha);
            assert_eq!(shared.grad, pre.grad);
            assert_eq!(shared.grad_bar, pre.grad_bar);
            assert_eq!(shared.rounds, pre.rounds);
            assert_eq!(shared.kernel_evaluations, pre.kernel_evaluations);
        }
    }
}

#[test]
fn catch_up_brings_frozen_rows_to_the_direct_sums() {
    // Rows [200, 300) frozen at α0, rows [120, 200) at α1 (after the
    // rows before 200 moved), then the rows before 120 moved to α2: to
    // the bound, off it, from zero.
    let n = 300;
    let (x, y, upper) = uneven_problem(n);
    let src = prepared(&x, n);
    let (kind, _, panel) = dense_parts(&src).unwrap();
    let sign: Vec<f32> = y.iter().map(|&v| v as f32).collect();
    let a0: Vec<f64> = (0..n)
        .map(|t| match t % 3 {
            0 => upper[t],
            1 => 0.2 + 0.1 * (t % 5) as f64,
            _ => 0.0,
        })
        .collect();
    let step = |a: &[f64], active: usize, k: usize| -> Vec<f64> {
        (0..n)
            .map(|t| match (t < active && (t + k).is_multiple_of(4), t % 3) {
                (false, _) => a[t],
                (true, 0) => 0.5,
                (true, 1) => upper[t],
                (true, _) => 0.3,
            })
            .collect()
    };
    let a1 = step(&a0, 200, 0);
    let a2 = step(&a1, 120, 1);
    let at = |a: &[f64]| (gradient(&src, &y, a), gradient_bar(&src, &y, a, &upper));
    let ((g0, b0), (g1, b1), (g2, b2)) = (at(&a0), at(&a1), at(&a2));
    let seen = |t: usize| {
        if t >= 200 {
            0
        } else if t >= 120 {
            1
        } else {
            2
        }
    };
    let pick = |t: usize, v: [&Vec<f64>; 3]| v[seen(t)][t];
    let grad0: Vec<f64> = (0..n).map(|t| pick(t, [&g0, &g1, &g2])).collect();
    let bar0: Vec<f64> = (0..n).map(|t| pick(t, [&b0, &b1, &b2])).collect();
    // Stale before: a skipped catch-up would leave these.
    let stale = (120..n)
        .filter(|&t| (grad0[t] - g2[t]).abs() > 1e-2)
        .count();
    let stale_bar = (120..n).filter(|&t| (bar0[t] - b2[t]).abs() > 1e-2).count();
    assert!(stale > 50 && stale_bar > 50, "{stale}, {stale_bar} stale");
    let frozen = [
        Frozen {
            lo: 200,
            hi: 300,
            alpha: a0[..200].to_vec(),
        },
        Frozen {
            lo: 120,
            hi: 200,
            alpha: a1[..120].to_vec(),
        },
    ];
    let changed = |from: &[f64], len: usize| (0..len).filter(|&s| from[s] != a2[s]).count();
    let want_evaluations = 100 * changed(&a0, 200) + 80 * changed(&a1, 120);
    let team = Team::new().map(Arc::new);
    let mut results = Vec::new();
    for team in [None, team.as_ref()] {
        let (mut grad, mut bar) = (grad0.clone(), bar0.clone());
        let spent = catch_up(
            &Columns {
                kind,
                panel,
                sign: &sign,
            },
            &a2,
            &upper,
            &mut grad,
            &mut bar,
            &frozen,
            team,
            &Control::none(),
        )
        .unwrap();
        assert_eq!(spent, want_evaluations as u64);
        for t in 0..n {
            assert!((grad[t] - g2[t]).abs() < 1e-4, "G[{t}]");
            assert!((bar[t] - b2[t]).abs() < 1e-4, "Ḡ[{t}]");
        }
        // The active rows are not touched.
        assert_eq!(grad[..120], grad0[..120]);
        results.push((grad, bar));
    }
    // The same bits on one thread or two.
    assert!(results.windows(2).all(|w| w[0] == w[1]));
}

#[test]
fn only_moved_members_get_columns() {
    // One round (the pair cap stops the next): of the q members chosen
    // from α = 0, at most two per pair update move, and only their
    // columns are filled; G stays exact.
    let n = 500;
    let (x, y) = overlapping(n);
    let upper = vec![1.0; n];
    let src = prepared(&x, n);
    let max_pairs = 5;
    let settings = Settings::new(1e-3, max_pairs, 1 << 30);
    let q = settings.size_for(n).unwrap();
    let mut src = src;
    let pre = presolve(
        &mut src,
        &y,
        &upper,
        cold_start(n),
        &settings,
        None,
        &Control::none(),
    )
    .unwrap()
    .unwrap();
    assert_eq!(pre.rounds, 1);
    assert!(pre.pairs >= 1 && pre.pairs <= max_pairs);
    let moved = pre.alpha.iter().filter(|&&a| a != 0.0).count() as u64;
    let columns = pre.kernel_evaluations / n as u64;
    assert_eq!(pre.kernel_evaluations % n as u64, 0);
    assert!(
        moved >= 1 && columns >= moved,
        "{columns} columns, {moved} moved"
    );
    assert!(
        columns <= 2 * pre.pairs && columns < q as u64,
        "{columns} columns for {} pair updates (q = {q})",
        pre.pairs
    );
    let want = gradient(&src, &y, &pre.alpha);
    for (t, (got, want)) in pre.grad.iter().zip(&want).enumerate() {
        assert!((got - want).abs() < 1e-4, "G[{t}]");
    }
}

#[test]
fn batched_then_smo_is_the_smo_solution() {
    let n = 900;
    let (x, y) = overlapping(n);
    let upper = vec![1.0; n];
    let opts = tight;
    let smo = solve(&x, &y, &upper, &opts(SolverChoice::Smo, 1));
    assert_eq!(smo.batched_rounds, 0);
    let batched = solve(&x, &y, &upper, &opts(SolverChoice::Batched, 1));
    let auto = solve(&x, &y, &upper, &opts(SolverChoice::Auto, 1));
    assert!(batched.batched_rounds > 0);
    assert_eq!(auto.batched_rounds, batched.batched_rounds);
    for sol in [&batched, &auto] {
        assert_same_optimum(sol, &smo);
    }
    // KKT at tol: every up-set violation below every low-set one + tol.
    let src = source(&x, n);
    let g = gradient(&src, &y, &batched.alpha);
    let (mut up, mut low) = (f64::NEG_INFINITY, f64::NEG_INFINITY);
    for t in 0..n {
        if in_up(y[t], batched.alpha[t], upper[t]) {
            up = up.max(-y[t] * g[t]);
        }
        if in_low(y[t], batched.alpha[t], upper[t]) {
            low = low.max(y[t] * g[t]);
        }
    }
    assert!(up + low < 1e-4, "KKT violation {}", up + low);
    // The same decisions on the training rows.
    let decide = |a: &[f64], rho: f64| -> Vec<bool> {
        (0..n)
            .map(|t| {
                let f: f64 = (0..n)
                    .filter(|&s| a[s] != 0.0)
                    .map(|s| a[s] * y[s] * src.eval(t, s))
                    .sum();
                f - rho > 0.0
            })
            .collect()
    };
    let d_smo = decide(&smo.alpha, smo.rho);
    let d_bat = decide(&batched.alpha, batched.rho);
    let differ = d_smo.iter().zip(&d_bat).filter(|(a, b)| a != b).count();
    assert!(differ <= 1, "{differ} decisions differ");
    // Deterministic, and the same on two threads.
    let again = solve(&x, &y, &upper, &opts(SolverChoice::Batched, 1));
    let team = solve(&x, &y, &upper, &opts(SolverChoice::Batched, 2));
    assert_eq!(again.alpha, batched.alpha);
    assert_eq!(team.alpha, batched.alpha);
    assert_eq!(team.n_iter, batched.n_iter);
}

#[test]
fn warm_started_rounds_reach_the_solution() {
    // The start: each half's own solution (feasible for the whole
    // problem, many multipliers at the bound), its G and Ḡ by the
    // blocked products; the rounds then run from it.
    let n = 900;
    let (x, y, upper) = uneven_problem(n);
    let opts = tight;
    let smo = solve(&x, &y, &upper, &opts(SolverChoice::Smo, 1));
    let half = n / 2;
    let mut alpha0 = Vec::with_capacity(n);
    for (lo, hi) in [(0, half), (half, n)] {
        let part = solve(
            &x[4 * lo..4 * hi],
            &y[lo..hi],
            &upper[lo..hi],
            &opts(SolverChoice::Smo, 1),
        );
        alpha0.extend(part.alpha);
    }
    assert!(alpha0.iter().zip(&upper).any(|(&a, &u)| a >= u));
    let from_start = |start| DualProblem {
        alpha0: Some(alpha0.clone()),
        start,
        ..DualProblem::new(source(&x, n), y.clone(), upper.clone())
    };
    let warm = |solver, threads| {
        from_start(crate::solver::problem::StartGradientMode::Blocked)
            .solve_with(&opts(solver, threads), Precision::Float32)
            .unwrap()
    };
    let batched = warm(SolverChoice::Batched, 1);
    assert!(batched.batched_rounds > 0);
    assert!(batched.start_evaluations > 0);
    assert_same_optimum(&batched, &smo);
    // Optimal for the whole problem: the KKT gap from the true G.
    let src = source(&x, n);
    let g = gradient(&src, &y, &batched.alpha);
    assert!(
        gap(&y, &g, &batched.alpha, &upper) < 1e-4,
        "KKT violation {}",
        gap(&y, &g, &batched.alpha, &upper)
    );
    // Deterministic, the same on two threads.
    assert_eq!(warm(SolverChoice::Batched, 1).alpha, batched.alpha);
    assert_eq!(warm(SolverChoice::Batched, 2).alpha, batched.alpha);
    // A nonzero start without its gradient cannot take the rounds.
    let cold = from_start(Default::default());
    let got = cold.solve_with(&opts(SolverChoice::Batched, 1), Precision::Float32);
    assert_error_names(got, "start gradient");
}

#[test]
fn automatic_choice_and_refusals() {
    let n = 400;
    let (x, y) = overlapping(n);
    let upper = vec![1.0; n];
    let opts = |solver| SolverOptions {
        solver,
        ..SolverOptions::default()
    };
    // Below MIN_ROWS the automatic choice is SMO.
    let small = 200;
    let few = solve(
        &x[..4 * small],
        &y[..small],
        &upper[..small],
        &opts(SolverChoice::Auto),
    );
    assert_eq!(few.batched_rounds, 0);
    // A caller's iteration cap keeps SMO under the automatic choice.
    let capped = SolverOptions {
        max_iter: Some(1_000_000),
        ..opts(SolverChoice::Auto)
    };
    assert_eq!(solve(&x, &y, &upper, &capped).batched_rounds, 0);
    // A budget below the smallest working set: SMO.
    let tiny = SolverOptions {
        cache_bytes: 4 * n * (MIN_WORKING_SET - 2),
        ..opts(SolverChoice::Batched)
    };
    assert_eq!(solve(&x, &y, &upper, &tiny).batched_rounds, 0);
    // float64 kernel values cannot take batched rounds: named error.
    let problem = DualProblem::new(source(&x, n), y.clone(), upper.clone());
    let got = problem.solve_with(&opts(SolverChoice::Batched), Precision::Float64);
    assert_error_names(got, "solver='batched'");
}

#[test]
fn block_values_are_the_columns_bit_for_bit() {
    let n = 300;
    let (x, y) = overlapping(n);
    let src = prepared(&x, n);
    let KernelSource::Dense {
        kind, rows, panel, ..
    } = &src
    else {
        unreachable!("a dense source");
    };
    let panel = panel.get().unwrap();
    let sign: Vec<f32> = y.iter().map(|&v| v as f32).collect();
    let members = [5usize, 17, 120, 299, 42, 7, 64];
    let m = members.len();
    let factors: Vec<f32> = members.iter().map(|&t| sign[t]).collect();
    // The columns over every row, four per pass and one by one.
    let queries: Vec<Query> = members.iter().map(|&t| panel.query(t)).collect();
    let refs: Vec<&Query> = queries.iter().collect();
    let mut cols = vec![vec![0.0f32; n]; m];
    let mut outs: Vec<&mut [f32]> = cols.iter_mut().map(|c| c.as_mut_slice()).collect();
    fill_tile(*kind, panel, &refs, &factors, &sign, 0, n, &mut outs);
    // The subproblem's block from the members' rows.
    let sub = Panel::try_new(&rows.gather(&members).unwrap()).unwrap();
    let sub_q: Vec<Query> = (0..m).map(|k| sub.query(k)).collect();
    let sub_refs: Vec<&Query> = sub_q.iter().collect();
    let mut qbb = vec![vec![0.0f32; m]; m];
    let mut outs: Vec<&mut [f32]> = qbb.iter_mut().map(|c| c.as_mut_slice()).collect();
    fill_tile(*kind, &sub, &sub_refs, &factors, &factors, 0, m, &mut outs);
    for k in 0..m {
        // SMO's own column fill.
        let mut col = vec![0.0f32; n];
        src.fill(members[k], 0, n, factors[k], &sign, &mut col);
        assert_eq!(col, cols[k], "column {k}");
        for l in 0..m {
            assert_eq!(qbb[k][l].to_bits(), cols[k][members[l]].to_bits());
        }
    }
}

#[test]
fn the_iteration_cap_counts_the_rounds_pair_updates() {
    let n = 600;
    let (x, y) = overlapping(n);
    let opts = SolverOptions {
        max_iter: Some(150),
        solver: SolverChoice::Batched,
        ..SolverOptions::default()
    };
    let sol = solve(&x, &y, &vec![1.0; n], &opts);
    assert!(sol.batched_rounds > 0);
    assert!(!sol.converged);
    assert!(sol.n_iter <= 150, "{} iterations", sol.n_iter);
}

#[test]
fn interrupted_rounds_say_so() {
    let n = 500;
    let (x, y) = overlapping(n);
    let src = prepared(&x, n);
    let ctl = Control::new();
    ctl.cancel();
    let settings = Settings::new(1e-3, u64::MAX, 1 << 30);
    let mut src = src;
    let got = presolve(
        &mut src,
        &y,
        &vec![1.0; n],
        cold_start(n),
        &settings,
        None,
        &ctl,
    );
    assert!(matches!(got, Err(crate::error::Error::Interrupted)));
}
