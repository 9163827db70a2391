//! Cancellation: every long-running entry point polls its `Control` and
//! returns `Error::Interrupted` once it is cancelled, promptly, and a fresh
//! control afterwards runs normally.

use std::thread;
use std::time::{Duration, Instant};

use localsvm_core::flsa::{forward_select, Candidates, FlsaOptions, Gram, Selection};
use localsvm_core::incremental::{OnlineLearner, OnlineOptions};
use localsvm_core::kernel::kernel_matrix_with;
use localsvm_core::local::{solve_local, LocalKernel, LocalOptions};
use localsvm_core::predict::decision_values_controlled;
use localsvm_core::{
    Constraint, Control, DualProblem, Error, KernelKind, KernelSource, Precision, Rows,
    SolverOptions, TrainingData,
};

/// A deterministic pseudo-random generator (no dev-dependency needed).
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

/// `n` noisy points in `d` dimensions with random labels: a hard problem
/// for a large `C` (many free variables, many iterations).
fn noisy(n: usize, d: usize, seed: u64) -> (Vec<f64>, Vec<f64>) {
    let mut rng = Lcg(seed);
    let x = (0..n * d).map(|_| rng.next() * 4.0 - 2.0).collect();
    let y = (0..n)
        .map(|_| if rng.next() < 0.5 { 1.0 } else { -1.0 })
        .collect();
    (x, y)
}

fn problem(x: &[f64], y: &[f64], d: usize, c: f64, constraint: Constraint) -> DualProblem {
    let rows = Rows::new(x.to_vec(), y.len(), d).unwrap();
    DualProblem {
        source: KernelSource::dense(KernelKind::Rbf { gamma: 0.5 }, rows).unwrap(),
        y: y.to_vec(),
        p: None,
        upper: vec![c; y.len()],
        alpha0: None,
        active: None,
        constraint,
        start: Default::default(),
        twins: None,
    }
}

fn cancelled() -> Control {
    let c = Control::new();
    c.cancel();
    c
}

#[test]
fn a_cancelled_control_stops_every_solver_at_once() {
    let (x, y) = noisy(400, 3, 1);
    for constraint in [Constraint::Equality, Constraint::BoxOnly] {
        for precision in [Precision::Float32, Precision::Float64] {
            let opts = SolverOptions {
                control: cancelled(),
                ..SolverOptions::default()
            };
            let got = problem(&x, &y, 3, 10.0, constraint).solve_with(&opts, precision);
            assert_eq!(got.unwrap_err(), Error::Interrupted);
        }
    }
    let rows = Rows::new(x.clone(), 400, 3).unwrap();
    let kind = KernelKind::Rbf { gamma: 0.5 };
    let err = kernel_matrix_with(kind, &rows, &rows, &cancelled()).unwrap_err();
    assert_eq!(err, Error::Interrupted);
    let coef = vec![0.1; 400];
    for precision in [Precision::Float32, Precision::Float64] {
        let err =
            decision_values_controlled(kind, &rows, &rows, &coef, &[0.0], precision, &cancelled())
                .unwrap_err();
        assert_eq!(err, Error::Interrupted);
    }

    let data = TrainingData::new(kind, &x, 400, 3).unwrap();
    let base = LocalKernel::new(&data).unwrap();
    let sigma = vec![1.0; 2 * 400];
    let cross = vec![0.5; 2 * 400];
    let lopts = LocalOptions {
        c: 1.0,
        threshold: 1e-6,
        tol: 1e-3,
        max_iter: None,
        shrinking: true,
        warm_start: true,
        precision: Precision::Auto,
        control: cancelled(),
        cache_bytes: 200 << 20,
    };
    let err = solve_local(&base, &y, &sigma, &cross, None, &lopts).unwrap_err();
    assert_eq!(err, Error::Interrupted);

    let idx: Vec<usize> = (0..400).collect();
    // Precomputing the candidate columns is the long part of building them.
    let built = Candidates::new_with(&data, idx.clone(), Gram::Precomputed, &cancelled());
    assert!(matches!(built, Err(Error::Interrupted)));
    for gram in [Gram::Precomputed, Gram::OnTheFly] {
        let cand = Candidates::new(&data, idx.clone(), gram).unwrap();
        for selection in [Selection::Greedy, Selection::InOrder] {
            let fopts = FlsaOptions {
                max_terms: 20,
                tol: 1e-6,
                selection,
                control: cancelled(),
            };
            let err = forward_select(&cand, &y, &fopts).unwrap_err();
            assert_eq!(err, Error::Interrupted);
        }
    }

    let mut learner = OnlineLearner::new(kind, 3).unwrap();
    let oopts = OnlineOptions {
        control: cancelled(),
        ..OnlineOptions::default()
    };
    let cls = vec![0i64; 400];
    let seen: Vec<i64> = (0..400).collect();
    let err = learner.learn(&x, &y, &cls, &seen, &oopts).unwrap_err();
    assert_eq!(err, Error::Interrupted);
    assert_eq!(
        learner.len(),
        0,
        "nothing is learnt after an interrupt before the first example"
    );
    // A fresh control runs normally, on the same learner.
    let rep = learner
        .learn(&x, &y, &cls, &seen, &OnlineOptions::default())
        .unwrap();
    assert_eq!(rep.steps.len(), 400);
}

#[test]
fn a_control_cancelled_from_another_thread_stops_a_long_solve() {
    // Unscaled large-C problem with a tiny tolerance: many seconds of SMO
    // (more in a debug build) unless it is stopped.
    let (x, y) = noisy(6000, 4, 7);
    let ctl = Control::new();
    let opts = SolverOptions {
        tol: 1e-9,
        cache_bytes: 1 << 20,
        control: ctl.clone(),
        ..SolverOptions::default()
    };
    let stopper = {
        let ctl = ctl.clone();
        thread::spawn(move || {
            thread::sleep(Duration::from_millis(200));
            ctl.cancel();
            Instant::now()
        })
    };
    let got = problem(&x, &y, 4, 1e4, Constraint::Equality).solve_with(&opts, Precision::Float64);
    let done = Instant::now();
    let cancelled_at = stopper.join().unwrap();
    assert_eq!(got.unwrap_err(), Error::Interrupted);
    let latency = done.duration_since(cancelled_at);
    assert!(
        latency < Duration::from_secs(1),
        "stopped {latency:?} after the cancel"
    );

    // The same problem with a fresh control and a small iteration cap runs.
    let opts = SolverOptions {
        max_iter: Some(50),
        cache_bytes: 1 << 20,
        control: Control::new(),
        ..SolverOptions::default()
    };
    let sol = problem(&x[..800], &y[..200], 4, 1e4, Constraint::Equality)
        .solve(&opts)
        .unwrap();
    assert_eq!(sol.n_iter, 50);
}

#[test]
fn a_two_thread_solve_stops_when_cancelled_and_joins_its_helper() {
    // Large enough for the two-thread team; stopped from another thread.
    let (x, y) = noisy(9000, 4, 9);
    let ctl = Control::new();
    let opts = SolverOptions {
        tol: 1e-9,
        cache_bytes: 1 << 20,
        threads: 2,
        control: ctl.clone(),
        ..SolverOptions::default()
    };
    let stopper = {
        let ctl = ctl.clone();
        thread::spawn(move || {
            thread::sleep(Duration::from_millis(200));
            ctl.cancel();
            Instant::now()
        })
    };
    let got = problem(&x, &y, 4, 1e4, Constraint::Equality).solve_with(&opts, Precision::Float32);
    let done = Instant::now();
    let cancelled_at = stopper.join().unwrap();
    assert_eq!(got.unwrap_err(), Error::Interrupted);
    let latency = done.duration_since(cancelled_at);
    assert!(
        latency < Duration::from_secs(1),
        "stopped {latency:?} after the cancel"
    );
}
