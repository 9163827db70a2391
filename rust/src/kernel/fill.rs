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

/// Rows per piece of the tail of a kernel loop (the rows after its last
/// whole tile): pieces this long keep their running sums in vector
/// registers, as whole tiles do.
const TAIL: usize = 16;

/// The pieces that cover the tail rows `[from, end)` in [`TAIL`] rows each,
/// as `(first row computed, first row kept)`: the last piece, when fewer
/// rows are left, is computed over the `TAIL` rows ending at `end` and
/// keeps only the rows not yet covered. Every kernel value is computed on
/// its own (its sum over the features, then the kernel function), so a row
/// computed in another piece comes out the same. Empty when `end < TAIL`.
fn tail_pieces(from: usize, end: usize) -> impl Iterator<Item = (usize, usize)> {
    let n = if end >= TAIL {
        (end - from).div_ceil(TAIL)
    } else {
        0
    };
    (0..n).map(move |k| {
        let keep = from + k * TAIL;
        (keep.min(end - TAIL), keep)
    })
}

/// The squared distances between `R` dense query rows and the `W` panel
/// rows from `at`, summed feature by feature in registers.
#[inline(always)]
fn difference_sums<const FMA: bool, const R: usize, const W: usize>(
    panel: &Panel,
    rows: [&[f32]; R],
    at: usize,
) -> [[f32; W]; R] {
    // A compile-time width and sums in a local array no reference escapes
    // from, so they stay in vector registers across the features.
    let mut sums = [[0.0f32; W]; R];
    #[allow(clippy::needless_range_loop)] // `f` indexes the panel too
    for f in 0..panel.d {
        let col: &[f32; W] = panel.feature(f, at, at + W).try_into().unwrap();
        let qf: [f32; R] = std::array::from_fn(|r| rows[r][f]);
        for r in 0..R {
            for k in 0..W {
                let diff = col[k] - qf[r];
                sums[r][k] = simd::fmadd::<FMA>(diff, diff, sums[r][k]);
            }
        }
    }
    sums
}

/// Kernel values between `R` dense queries and panel rows `[start, end)` for
/// the RBF kernel, from squared differences (exact for close points):
/// `outs[r][t − start] = factors[r] · scale[t] · K(q_r, x_t)`. The panel is
/// read once for all `R` queries: in tiles of `T` rows, then the rest in
/// pieces of [`TAIL`] rows ([`tail_pieces`]).
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
    let rows: [&[f32]; R] = std::array::from_fn(|r| &queries[r].row[..panel.d]);
    let mut t0 = start;
    while end - t0 >= T {
        let acc = difference_sums::<FMA, R, T>(panel, rows, t0);
        for r in 0..R {
            let o = &mut outs[r][t0 - start..t0 - start + T];
            apply::<FMA>(kind, &acc[r], &scale[t0..t0 + T], factors[r], o);
        }
        t0 += T;
    }
    let mut covered = t0;
    for (at, keep) in tail_pieces(t0, end) {
        let acc = difference_sums::<FMA, R, TAIL>(panel, rows, at);
        let stop = at + TAIL;
        for r in 0..R {
            let o = &mut outs[r][keep - start..stop - start];
            apply::<FMA>(
                kind,
                &acc[r][keep - at..],
                &scale[keep..stop],
                factors[r],
                o,
            );
        }
        covered = stop;
    }
    if covered < end {
        // Fewer than TAIL rows in all.
        let len = end - covered;
        let mut acc = [[0.0f32; TAIL]; R];
        for f in 0..panel.d {
            let col = panel.feature(f, covered, end);
            for (a, q) in acc.iter_mut().zip(&queries) {
                let qf = q.row[f];
                for (a, &v) in a[..len].iter_mut().zip(col) {
                    let diff = v - qf;
                    *a = simd::fmadd::<FMA>(diff, diff, *a);
                }
            }
        }
        for r in 0..R {
            let o = &mut outs[r][covered - start..end - start];
            apply::<FMA>(kind, &acc[r][..len], &scale[covered..end], factors[r], o);
        }
    }
}

/// The dot products between the query's non-zero features and the `W`
/// panel rows from `at`, summed in registers.
#[inline(always)]
fn dot_sums<const FMA: bool, const W: usize>(panel: &Panel, q: &Query, at: usize) -> [f32; W] {
    let mut tile = [0.0f32; W];
    for &(f, qf) in &q.nonzero {
        let col: &[f32; W] = panel.feature(f, at, at + W).try_into().unwrap();
        for k in 0..W {
            tile[k] = simd::fmadd::<FMA>(col[k], qf, tile[k]);
        }
    }
    tile
}

/// Kernel values of `q` against the panel rows `[keep, at + acc.len())`
/// from their dot products `acc`, which start at row `at`: for RBF the
/// distance `‖q‖² + ‖x‖² − 2⟨q, x⟩` first.
#[inline(always)]
fn apply_dots<const FMA: bool>(
    kind: KernelKind,
    panel: &Panel,
    q: &Query,
    (factor, scale): (f32, &[f32]),
    (at, keep): (usize, usize),
    acc: &mut [f32],
    out: &mut [f32],
) {
    let stop = at + acc.len();
    let acc = &mut acc[keep - at..];
    if matches!(kind, KernelKind::Rbf { .. }) {
        for (a, &sq) in acc.iter_mut().zip(&panel.sq[keep..stop]) {
            *a = (q.sq + sq - 2.0 * *a).max(0.0);
        }
    }
    apply::<FMA>(kind, acc, &scale[keep..stop], factor, out);
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
        // kernel; for RBF the distance is `‖q‖² + ‖x‖² − 2⟨q, x⟩`): in
        // tiles, then the rest in pieces of TAIL rows, as above.
        let mut t0 = start;
        while end - t0 >= TILE {
            let mut tile = dot_sums::<FMA, TILE>(panel, q, t0);
            let o = &mut out[t0 - start..t0 - start + TILE];
            apply_dots::<FMA>(kind, panel, q, (factor, scale), (t0, t0), &mut tile, o);
            t0 += TILE;
        }
        let mut covered = t0;
        for (at, keep) in tail_pieces(t0, end) {
            let mut tile = dot_sums::<FMA, TAIL>(panel, q, at);
            let o = &mut out[keep - start..at + TAIL - start];
            apply_dots::<FMA>(kind, panel, q, (factor, scale), (at, keep), &mut tile, o);
            covered = at + TAIL;
        }
        if covered < end {
            // Fewer than TAIL rows in all.
            let len = end - covered;
            let mut tile = [0.0f32; TAIL];
            for &(f, qf) in &q.nonzero {
                let col = panel.feature(f, covered, end);
                for (a, &v) in tile[..len].iter_mut().zip(col) {
                    *a = simd::fmadd::<FMA>(v, qf, *a);
                }
            }
            let o = &mut out[covered - start..end - start];
            let tile = &mut tile[..len];
            apply_dots::<FMA>(kind, panel, q, (factor, scale), (covered, covered), tile, o);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::Rows;

    /// Every row range, filled at once (whole tiles, then pieces of TAIL
    /// rows, the last one overlapping), gives each value as filling its row
    /// alone does, bit for bit: dense queries (the difference loop) and
    /// sparse ones (the dot products).
    #[test]
    fn range_fills_match_row_by_row_fills() {
        let (n, d) = (150, 5);
        let values: Vec<f64> = (0..n * d)
            .map(|k| {
                if k % 7 == 0 {
                    0.0
                } else {
                    ((k * 37) % 19) as f64 / 9.0 - 1.0
                }
            })
            .collect();
        let panel = Panel::new(&Rows::new(values, n, d).unwrap());
        let scale: Vec<f32> = (0..n)
            .map(|t| if t % 3 == 0 { -1.0 } else { 1.0 })
            .collect();
        let kinds = [
            KernelKind::Rbf { gamma: 0.3 },
            KernelKind::Poly {
                gamma: 0.5,
                coef0: 1.0,
                degree: 2,
            },
        ];
        let sparse = Query::new(vec![0.0, 0.5, 0.0, 0.0, -1.0]);
        for kind in kinds {
            for q in [panel.query(3), panel.query(140), sparse.clone()] {
                let alone: Vec<f32> = (0..n)
                    .map(|t| {
                        let mut out = [0.0f32];
                        fill_one(kind, &panel, &q, 0.5, &scale, t, t + 1, &mut out);
                        out[0]
                    })
                    .collect();
                for (start, end) in [(0, n), (0, 100), (5, 21), (64, 79), (90, 150), (140, 150)] {
                    let mut out = vec![0.0f32; end - start];
                    fill_one(kind, &panel, &q, 0.5, &scale, start, end, &mut out);
                    let want: Vec<u32> = alone[start..end].iter().map(|v| v.to_bits()).collect();
                    let got: Vec<u32> = out.iter().map(|v| v.to_bits()).collect();
                    assert_eq!(got, want, "{kind:?}, rows {start}..{end}");
                }
            }
        }
    }
}
