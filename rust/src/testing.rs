//! Fixtures the unit tests share: a deterministic stream of uniform values,
//! two overlapping classes drawn from it, a kernel of every kind, and the
//! comparison of two solves' objectives.

use crate::kernel::KernelKind;

/// A kernel function of every kind (the precomputed kind aside).
pub(crate) const KINDS: [KernelKind; 4] = [
    KernelKind::Linear,
    KernelKind::Rbf { gamma: 0.7 },
    KernelKind::Poly {
        gamma: 0.5,
        coef0: 1.0,
        degree: 3,
    },
    KernelKind::Sigmoid {
        gamma: 0.3,
        coef0: -0.2,
    },
];

/// Uniform values in `[0, 1)` from the 64-bit linear congruential generator
/// of Knuth's MMIX (the top 53 bits of each state), started at `seed`.
pub(crate) fn uniform(seed: u64) -> impl FnMut() -> f64 {
    let mut state = seed;
    move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((state >> 11) as f64) / ((1u64 << 53) as f64)
    }
}

/// `n` examples of `d` features in two overlapping classes: example `i` is
/// labelled `+1` when `i` is a multiple of `every`, else `−1`, and its
/// feature `f` is `centre(f)·label` plus uniform noise in `[−1, 1)`
/// ([`uniform`] from `seed`). Row-major features and the labels.
pub(crate) fn two_classes(
    n: usize,
    d: usize,
    seed: u64,
    every: usize,
    centre: impl Fn(usize) -> f64,
) -> (Vec<f64>, Vec<f64>) {
    let mut next = uniform(seed);
    let mut x = Vec::with_capacity(n * d);
    let mut y = Vec::with_capacity(n);
    for i in 0..n {
        let label = if i % every == 0 { 1.0 } else { -1.0 };
        for f in 0..d {
            x.push(centre(f) * label + 2.0 * (next() - 0.5));
        }
        y.push(label);
    }
    (x, y)
}

/// Asserts that the objective `got` is within `rel` of `want`, relatively.
pub(crate) fn assert_objective_near(got: f64, want: f64, rel: f64) {
    let off = (got - want).abs() / want.abs();
    assert!(off < rel, "objective {got} vs {want}");
}
