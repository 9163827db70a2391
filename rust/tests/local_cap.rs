//! The local batch with a huge `C`: every query stops at the per-problem
//! cap `max(10⁵, 1000·k)` (not LIBSVM's 10⁷) and says so, and the
//! decision stays finite; `C·σ` beyond `f64` is an error.

use localsvm_core::local::{local_iteration_cap, solve_local, LocalKernel, LocalOptions};
use localsvm_core::{Control, KernelKind, KernelSource, Precision, Rows};

/// Overlapping classes on a line (no linear separator): the hard-margin
/// dual is unbounded, so with a huge C the α grow toward the boxes.
fn overlapping(n: usize) -> (Rows, Vec<f64>) {
    let x: Vec<f64> = (0..n).map(|i| (i as f64 * 0.37).sin()).collect();
    let y = (0..n)
        .map(|i| if i % 3 == 0 { 1.0 } else { -1.0 })
        .collect();
    (Rows::new(x, n, 1).unwrap(), y)
}

fn opts(c: f64) -> LocalOptions {
    LocalOptions {
        c,
        threshold: 1e-6,
        tol: 1e-3,
        max_iter: None,
        shrinking: true,
        warm_start: true,
        precision: Precision::Auto,
        control: Control::none(),
        cache_bytes: 200 << 20,
    }
}

#[test]
fn huge_c_stops_at_the_local_cap_and_reports_it() {
    let n = 30;
    let (x, y) = overlapping(n);
    let xs: Vec<f64> = (0..n).map(|i| x.row(i)[0]).collect();
    let base = LocalKernel::Source(KernelSource::dense(KernelKind::Linear, x).unwrap());
    let queries = [0.1, -0.5];
    let mut sigma = Vec::new();
    let mut cross = Vec::new();
    for q in queries {
        sigma.extend(xs.iter().map(|v| (-(v - q) * (v - q)).exp()));
        cross.extend(xs.iter().map(|v| v * q));
    }
    let res = solve_local(&base, &y, &sigma, &cross, None, &opts(1e12)).unwrap();
    assert_eq!(local_iteration_cap(n), 100_000);
    for s in 0..queries.len() {
        assert!(res.decision[s].is_finite());
        assert!(!res.converged[s], "query {s} claims convergence");
        assert_eq!(res.n_iter[s], local_iteration_cap(res.n_active[s]));
    }
    // A moderate C converges well inside the cap.
    let res = solve_local(&base, &y, &sigma, &cross, None, &opts(10.0)).unwrap();
    assert!(res.converged.iter().all(|&c| c));
    // C·σ that overflows is refused, naming the cause.
    let big: Vec<f64> = sigma.iter().map(|s| s * 1e10).collect();
    let err = solve_local(&base, &y, &big, &cross, None, &opts(1e300)).unwrap_err();
    assert!(err.to_string().contains("overflows"), "{err}");
}
