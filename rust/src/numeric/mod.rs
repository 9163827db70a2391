//! Arithmetic shared by the algorithms: per-instruction-set column kernels
//! ([`simd`]) and small dense linear algebra ([`dense`]).

pub mod dense;
pub mod simd;

/// `Σ term(a_k, b_k)` over equal-length `a` and `b` in four independent
/// lanes (so the compiler can vectorise it): the lanes' sums and the
/// remainder's, for the caller to add up in its own order.
#[inline(always)]
pub fn lanes4(a: &[f64], b: &[f64], term: impl Fn(f64, f64) -> f64) -> ([f64; 4], f64) {
    debug_assert_eq!(a.len(), b.len());
    let mut acc = [0.0f64; 4];
    let chunks_a = a.chunks_exact(4);
    let chunks_b = b.chunks_exact(4);
    let tail: f64 = chunks_a
        .remainder()
        .iter()
        .zip(chunks_b.remainder())
        .map(|(&x, &y)| term(x, y))
        .sum();
    for (ca, cb) in chunks_a.zip(chunks_b) {
        for l in 0..4 {
            acc[l] += term(ca[l], cb[l]);
        }
    }
    (acc, tail)
}
