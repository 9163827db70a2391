//! Property tests over the crate's entry points with arbitrary shapes and
//! values (NaN, infinities, extreme magnitudes, empty and mismatched
//! inputs, degenerate parameters): every call returns `Ok` or `Err(Error)`,
//! never panics, and an `Ok` answer is finite.
//!
//! Case counts and iteration caps are small so that `cargo test` stays fast.

use localsvm_core::flsa::{forward_select, Candidates, FlsaOptions, Gram, Selection};
use localsvm_core::kernel::kernel_matrix;
use localsvm_core::local::{solve_local, LocalKernel, LocalOptions};
use localsvm_core::predict::decision_values_controlled;
use localsvm_core::{
    Constraint, Control, DualProblem, KernelKind, KernelSource, Precision, Rows, SolverOptions,
    TrainingData,
};
use proptest::prelude::*;

/// Floats that break naive arithmetic, mixed with ordinary ones.
fn wild() -> impl Strategy<Value = f64> {
    prop_oneof![
        4 => -3.0f64..3.0,
        1 => Just(0.0),
        1 => Just(f64::NAN),
        1 => Just(f64::INFINITY),
        1 => Just(f64::NEG_INFINITY),
        1 => Just(f64::MAX),
        1 => Just(f64::MIN_POSITIVE),
        1 => Just(5e-324),
        1 => Just(-1e300),
        1 => Just(1e300),
        1 => Just(1e-300),
        1 => (-300i32..300).prop_map(|e| 10f64.powi(e)),
    ]
}

/// Finite floats over the whole exponent range.
fn finite() -> impl Strategy<Value = f64> {
    prop_oneof![
        3 => -3.0f64..3.0,
        1 => Just(0.0),
        1 => (-300i32..300, any::<bool>()).prop_map(|(e, s)| if s { 10f64.powi(e) } else { -10f64.powi(e) }),
    ]
}

/// Labels: mostly ±1, sometimes something else.
fn label() -> impl Strategy<Value = f64> {
    prop_oneof![8 => Just(1.0), 8 => Just(-1.0), 1 => Just(0.0), 1 => Just(f64::NAN), 1 => Just(2.0)]
}

/// Every kernel, with parameters that are sometimes invalid.
fn kernel() -> impl Strategy<Value = (String, f64, f64, i64)> {
    (
        prop_oneof![
            Just("linear"),
            Just("poly"),
            Just("rbf"),
            Just("sigmoid"),
            Just("precomputed"),
            Just("nonsense"),
        ],
        wild(),
        wild(),
        prop_oneof![4 => 0i64..5, 1 => Just(-1i64), 1 => Just(i64::MAX), 1 => Just(1000i64)],
    )
        .prop_map(|(k, g, c, d)| (k.to_string(), g, c, d))
}

fn kind_of(k: &(String, f64, f64, i64)) -> Option<KernelKind> {
    KernelKind::from_name(&k.0, k.1, k.2, k.3).ok()
}

/// A data matrix: rows × columns, values, and a claimed shape that is
/// usually right and sometimes not.
fn matrix(max_n: usize, max_d: usize) -> impl Strategy<Value = (Vec<f64>, usize, usize)> {
    (0..=max_n, 0..=max_d, any::<bool>(), 0usize..3).prop_flat_map(move |(n, d, wrong, extra)| {
        let len = if wrong { n * d + extra } else { n * d };
        (
            prop_oneof![3 => prop::collection::vec(finite(), len), 1 => prop::collection::vec(wild(), len)],
            Just(n),
            Just(d),
        )
    })
}

fn precision() -> impl Strategy<Value = Precision> {
    prop_oneof![
        Just(Precision::Auto),
        Just(Precision::Float32),
        Just(Precision::Float64)
    ]
}

fn source(kind: KernelKind, x: Vec<f64>, n: usize, d: usize) -> Option<KernelSource> {
    if kind == KernelKind::Precomputed {
        KernelSource::precomputed(x, n).ok()
    } else {
        KernelSource::dense(kind, Rows::new(x, n, d).ok()?).ok()
    }
}

/// 64 cases per property, or `LOCALSVM_PROPTEST_CASES` for a longer hunt.
fn cases() -> u32 {
    std::env::var("LOCALSVM_PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn rows_and_kernel_matrices_never_panic(
        k in kernel(),
        (a, n, d) in matrix(6, 4),
        (b, m, e) in matrix(6, 4),
    ) {
        let ra = Rows::new(a, n, d);
        let rb = Rows::new(b, m, e);
        if let (Some(kind), Ok(ra), Ok(rb)) = (kind_of(&k), ra, rb) {
            if let Ok(values) = kernel_matrix(kind, &ra, &rb) {
                prop_assert_eq!(values.len(), ra.n() * rb.n());
                prop_assert!(values.iter().all(|v| v.is_finite()));
            }
        }
    }

    #[test]
    fn training_data_rejects_impossible_shapes(
        n in prop_oneof![0usize..5, Just(usize::MAX), Just(usize::MAX / 2 + 1)],
        d in prop_oneof![0usize..5, Just(usize::MAX), Just(2usize)],
        len in 0usize..20,
    ) {
        let values = vec![1.0; len];
        let _ = TrainingData::new(KernelKind::Linear, &values, n, d);
        let _ = TrainingData::new(KernelKind::Precomputed, &values, n, d);
        let _ = Rows::new(values.clone(), n, d);
        let _ = KernelSource::precomputed(values, n);
    }

    #[test]
    fn the_dual_solver_never_panics(
        k in kernel(),
        (x, n, d) in matrix(8, 3),
        y in prop::collection::vec(label(), 0..10),
        upper in prop::collection::vec(wild(), 0..10),
        p in prop::option::of(prop::collection::vec(wild(), 0..10)),
        alpha0 in prop::option::of(prop::collection::vec(wild(), 0..10)),
        active in prop::option::of(prop::collection::vec(0usize..12, 0..10)),
        equality in any::<bool>(),
        tol in wild(),
        max_iter in 0u64..500,
        shrinking in any::<bool>(),
        cache_bytes in prop_oneof![Just(0usize), 1usize..4096, Just(200usize << 20)],
        prec in precision(),
    ) {
        let Some(kind) = kind_of(&k) else { return Ok(()) };
        let Some(source) = source(kind, x, n, d) else { return Ok(()) };
        let problem = DualProblem {
p,
alpha0,
active,
constraint: if equality { Constraint::Equality } else { Constraint::BoxOnly },
..DualProblem::new(source, y, upper)
};
        let opts = SolverOptions {
            tol,
            max_iter: Some(max_iter),
            shrinking,
            cache_bytes,
            ..SolverOptions::default()
        };
        if let Ok(sol) = problem.solve_with(&opts, prec) {
            prop_assert!(sol.alpha.iter().all(|a| a.is_finite()));
            prop_assert!(sol.rho.is_finite());
        }
    }

    #[test]
    fn well_formed_duals_with_extreme_boxes_stay_finite(
        (x, n) in (1usize..8).prop_flat_map(|n| (prop::collection::vec(finite(), 2 * n), Just(n))),
        signs in prop::collection::vec(any::<bool>(), 8),
        c in prop_oneof![Just(1e-300), Just(1e-6), Just(1.0), Just(1e12), Just(1e300), Just(f64::MAX)],
        gamma in prop_oneof![Just(1e-300), Just(0.5), Just(1e300)],
        linear in any::<bool>(),
    ) {
        let kind = if linear { KernelKind::Linear } else { KernelKind::Rbf { gamma } };
        let Ok(rows) = Rows::new(x, n, 2) else { return Ok(()) };
        let Ok(source) = KernelSource::dense(kind, rows) else { return Ok(()) };
        let y: Vec<f64> = signs[..n].iter().map(|&s| if s { 1.0 } else { -1.0 }).collect();
        let problem = DualProblem::new(source, y, vec![c; n]);
        let opts = SolverOptions { max_iter: Some(2000), ..SolverOptions::default() };
        if let Ok(sol) = problem.solve(&opts) {
            prop_assert!(sol.alpha.iter().all(|a| a.is_finite() && *a >= 0.0 && *a <= c));
            prop_assert!(sol.rho.is_finite());
        }
    }

    #[test]
    fn the_local_batch_never_panics(
        k in kernel(),
        (x, n, d) in matrix(7, 3),
        y in prop::collection::vec(label(), 0..8),
        sigma in prop::collection::vec(prop_oneof![3 => 0.0f64..1.5, 1 => wild()], 0..24),
        cross in prop::collection::vec(wild(), 0..24),
        c in wild(),
        threshold in wild(),
        tol in wild(),
        max_iter in prop::option::of(0u64..500),
        shrinking in any::<bool>(),
        warm_start in any::<bool>(),
        start in prop::option::of(prop::collection::vec(prop_oneof![3 => 0.0f64..20.0, 1 => wild()], 0..8)),
        prec in precision(),
    ) {
        let Some(kind) = kind_of(&k) else { return Ok(()) };
        let Ok(data) = TrainingData::new(kind, &x, n, d) else { return Ok(()) };
        let Ok(base) = LocalKernel::new(&data) else { return Ok(()) };
        // The default cap is what a caller gets; keep the problems tiny.
        let opts = LocalOptions {
            c,
            threshold,
            tol,
            max_iter,
            shrinking,
            warm_start,
            precision: prec,
            control: Control::none(),
            cache_bytes: 200 << 20,
        };
        if let Ok(res) = solve_local(&base, &y, &sigma, &cross, start.as_deref(), &opts) {
            prop_assert!(res.decision.iter().all(|v| v.is_finite()));
            prop_assert_eq!(res.decision.len() * n, sigma.len());
        }
    }

    #[test]
    fn the_flsa_path_never_panics(
        k in kernel(),
        (x, n, d) in matrix(8, 3),
        y in prop::collection::vec(wild(), 0..10),
        candidates in prop::collection::vec(prop_oneof![0usize..10, Just(usize::MAX)], 0..8),
        on_the_fly in any::<bool>(),
        max_terms in prop_oneof![0usize..10, Just(usize::MAX)],
        tol in wild(),
        greedy in any::<bool>(),
    ) {
        let Some(kind) = kind_of(&k) else { return Ok(()) };
        let Ok(data) = TrainingData::new(kind, &x, n, d) else { return Ok(()) };
        let gram = if on_the_fly { Gram::OnTheFly } else { Gram::Precomputed };
        let Ok(cand) = Candidates::new(&data, candidates, gram) else { return Ok(()) };
        let opts = FlsaOptions {
            max_terms,
            tol,
            selection: if greedy { Selection::Greedy } else { Selection::InOrder },
            control: Control::none(),
        };
        if let Ok(path) = forward_select(&cand, &y, &opts) {
            prop_assert!(path.len() <= cand.m());
            for t in 0..=path.len() {
                prop_assert!(path.coefficients(t).iter().all(|v| v.is_finite()));
            }
        }
    }

    #[test]
    fn decision_values_never_panic(
        k in kernel(),
        (test, m, d) in matrix(5, 3),
        (sv, s, e) in matrix(5, 3),
        coef in prop::collection::vec(wild(), 0..12),
        intercept in prop::collection::vec(wild(), 0..3),
        prec in precision(),
    ) {
        let Some(kind) = kind_of(&k) else { return Ok(()) };
        let (Ok(test), Ok(sv)) = (Rows::new(test, m, d), Rows::new(sv, s, e)) else { return Ok(()) };
        let ctl = Control::none();
        if let Ok((values, _)) =
            decision_values_controlled(kind, &test, &sv, &coef, &intercept, prec, &ctl)
        {
            prop_assert_eq!(values.len(), test.n() * intercept.len());
            prop_assert!(values.iter().all(|v| v.is_finite()));
        }
    }
}
