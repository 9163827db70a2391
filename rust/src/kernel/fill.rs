//! The vectorised kernel-column loops: one query (or two) against a range of
//! panel rows, instantiated once per instruction set by
//! [`simd::multiversion!`](crate::numeric::simd).

use super::kinds::KernelKind;
use super::panel::{Panel, Query};
use crate::numeric::simd;

/// Rows per tile of the vectorised kernel loops.
const TILE: usize = 64;

/// `value[k] = factor · scale[k] · κ(acc[k])`, where `acc` is a squared
/// distance (RBF) or a dot product (the others).
#[inline(always)]
fn apply<const FMA: bool>(
    kind: KernelKind,
    acc: &[f32],
    scale: &[f32],
    factor: f32,
    out: &mut [f32],
) {
    let it = out.iter_mut().zip(acc.iter().zip(scale));
    match kind {
        KernelKind::Rbf { gamma } => {
            // e^{−γa} = 2^{−γ log₂(e) a}, the factor rounded once.
            let g = (-gamma * std::f64::consts::LOG2_E) as f32;
            for (o, (&a, &s)) in it {
                *o = factor * s * simd::exp2::<FMA>(g * a);
            }
        }
        KernelKind::Linear | KernelKind::Precomputed => {
            for (o, (&a, &s)) in it {
                *o = factor * s * a;
            }
        }
        KernelKind::Poly {
            gamma,
            coef0,
            degree,
        } => {
            let (g, c) = (gamma as f32, coef0 as f32);
            for (o, (&a, &s)) in it {
                let base = simd::fmadd::<FMA>(g, a, c);
                let mut v = 1.0f32;
                for _ in 0..degree {
                    v *= base;
                }
                *o = factor * s * v;
            }
        }
        KernelKind::Sigmoid { gamma, coef0 } => {
            let (g, c) = (gamma as f32, coef0 as f32);
            for (o, (&a, &s)) in it {
                // tanh z = sign(z)·(1 − e^{−2|z|}) / (1 + e^{−2|z|})
                let z = simd::fmadd::<FMA>(g, a, c);
                let e = simd::exp::<FMA>(-2.0 * z.abs());
                *o = factor * s * ((1.0 - e) / (1.0 + e)).copysign(z);
            }
        }
    }
}

/// How a tile's accumulator is formed for `kind` and a query.
#[inline(always)]
fn uses_difference(kind: KernelKind, q: &Query) -> bool {
    matches!(kind, KernelKind::Rbf { .. }) && !q.sparse()
}

/// Kernel values between `R` dense queries and panel rows `[start, end)` for
/// the RBF kernel, from squared differences (exact for close points):
/// `outs[r][t − start] = factors[r] · scale[t] · K(q_r, x_t)`. The panel is
/// read once for all `R` queries.
#[inline(always)]
fn fill_difference<const FMA: bool, const R: usize, const T: usize>(
    kind: KernelKind,
    panel: &Panel,
    queries: [&Query; R],
    factors: [f32; R],
    scale: &[f32],
    start: usize,
    end: usize,
    outs: [&mut [f32]; R],
) {
    let mut t0 = start;
    while t0 < end {
        let len = T.min(end - t0);
        let mut acc = [[0.0f32; T]; R];
        if len == T {
            // Compile-time tile size, and the running sums in a local array
            // no reference escapes from (copied out after the loop), so
            // they stay in vector registers across the features.
            let rows: [&[f32]; R] = std::array::from_fn(|r| &queries[r].row[..panel.d]);
            let mut sums = [[0.0f32; T]; R];
            #[allow(clippy::needless_range_loop)] // `f` indexes the panel too
            for f in 0..panel.d {
                let col: &[f32; T] = panel.feature(f, t0, t0 + T).try_into().unwrap();
                let qf: [f32; R] = std::array::from_fn(|r| rows[r][f]);
                for r in 0..R {
                    for k in 0..T {
                        let diff = col[k] - qf[r];
                        sums[r][k] = simd::fmadd::<FMA>(diff, diff, sums[r][k]);
                    }
                }
            }
            acc = sums;
        } else {
            for f in 0..panel.d {
                let col = panel.feature(f, t0, t0 + len);
                for (a, q) in acc.iter_mut().zip(&queries) {
                    let qf = q.row[f];
                    for (a, &v) in a[..len].iter_mut().zip(col) {
                        let diff = v - qf;
                        *a = simd::fmadd::<FMA>(diff, diff, *a);
                    }
                }
            }
        }
        for r in 0..R {
            let o = &mut outs[r][t0 - start..t0 - start + len];
            apply::<FMA>(kind, &acc[r][..len], &scale[t0..t0 + len], factors[r], o);
        }
        t0 += len;
    }
}

simd::multiversion! {
    /// One query against panel rows `[start, end)`:
    /// `out[t − start] = factor · scale[t] · K(q, x_t)`.
    pub(super) fn fill_one, pub(crate) fn fill_one_impl(
        kind: KernelKind,
        panel: &Panel,
        q: &Query,
        factor: f32,
        scale: &[f32],
        start: usize,
        end: usize,
        out: &mut [f32],
    ) {
        if uses_difference(kind, q) {
            fill_difference::<FMA, 1, TILE>(kind, panel, [q], [factor], scale, start, end, [out]);
            return;
        }
        // From dot products over the query's non-zero features only (every
        // kernel; for RBF the distance is `‖q‖² + ‖x‖² − 2⟨q, x⟩`).
        let rbf = matches!(kind, KernelKind::Rbf { .. });
        let mut t0 = start;
        while t0 < end {
            let len = TILE.min(end - t0);
            let mut tile = [0.0f32; TILE];
            if len == TILE {
                // A full tile has a size known at compile time, so its
                // accumulators stay in vector registers across the features.
                for &(f, qf) in &q.nonzero {
                    let col: &[f32; TILE] = panel.feature(f, t0, t0 + TILE).try_into().unwrap();
                    for k in 0..TILE {
                        tile[k] = simd::fmadd::<FMA>(col[k], qf, tile[k]);
                    }
                }
            } else {
                for &(f, qf) in &q.nonzero {
                    let col = panel.feature(f, t0, t0 + len);
                    for (a, &v) in tile[..len].iter_mut().zip(col) {
                        *a = simd::fmadd::<FMA>(v, qf, *a);
                    }
                }
            }
            let acc = &mut tile[..len];
            if rbf {
                for (a, &sq) in acc.iter_mut().zip(&panel.sq[t0..t0 + len]) {
                    *a = (q.sq + sq - 2.0 * *a).max(0.0);
                }
            }
            let o = &mut out[t0 - start..t0 - start + len];
            apply::<FMA>(kind, acc, &scale[t0..t0 + len], factor, o);
            t0 += len;
        }
    }
}

simd::multiversion! {
    /// Two queries against panel rows `[start, end)`, in one pass when both
    /// are dense.
    pub(super) fn fill_two, fn fill_two_impl(
        kind: KernelKind,
        panel: &Panel,
        queries: [&Query; 2],
        factors: [f32; 2],
        scale: &[f32],
        start: usize,
        end: usize,
        outs: [&mut [f32]; 2],
    ) {
        let ([q0, q1], [f0, f1], [out0, out1]) = (queries, factors, outs);
        if uses_difference(kind, q0) && uses_difference(kind, q1) {
            fill_difference::<FMA, 2, TILE>(
                kind,
                panel,
                [q0, q1],
                [f0, f1],
                scale,
                start,
                end,
                [out0, out1],
            );
        } else {
            fill_one_impl::<FMA>(kind, panel, q0, f0, scale, start, end, out0);
            fill_one_impl::<FMA>(kind, panel, q1, f1, scale, start, end, out1);
        }
    }
}

/// Four queries against panel rows `[start, end)`:
/// `outs[r][t − start] = factors[r] · scale[t] · K(q_r, x_t)`, in one pass
/// over the panel when all four are dense RBF queries (the register-tiled
/// difference loop) on AVX-512, else one query at a time. The values are
/// [`fill_one`]'s, bit for bit. For the vectorised loops of other modules
/// (inlined into their instruction-set builds).
#[inline(always)]
pub(crate) fn fill_four_impl<const FMA: bool>(
    kind: KernelKind,
    panel: &Panel,
    queries: [&Query; 4],
    factors: [f32; 4],
    scale: &[f32],
    start: usize,
    end: usize,
    outs: [&mut [f32]; 4],
) {
    if simd::level() == simd::Level::Avx512 && queries.iter().all(|q| uses_difference(kind, q)) {
        // Four queries' running sums (4 × 48 floats) fit AVX-512's 32
        // vector registers beside the panel values and the differences.
        fill_difference::<FMA, 4, 48>(kind, panel, queries, factors, scale, start, end, outs);
    } else {
        for ((q, out), f) in queries.into_iter().zip(outs).zip(factors) {
            fill_one_impl::<FMA>(kind, panel, q, f, scale, start, end, out);
        }
    }
}
