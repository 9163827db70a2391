//! Matrix-matrix kernels of the in-order forward pass (RFLSA, see
//! [`crate::flsa`]) and of the decision values along a fitted path.
//!
//! * [`gram_t`] and [`sub_product`]: the two sweeps of one block classical
//!   Gram–Schmidt pass, `H = Qᵀ C` and `C −= Q H`, register-tiled (four basis
//!   columns by two block columns of dot products; eight rows by four block
//!   columns of updates), so the basis is read from cache, not memory, once
//!   per block instead of once per column.
//! * [`staged_decisions`]: the decision values of every model of a path
//!   (`k = 0..K` support vectors) at a set of points, a tile of eight points
//!   at a time: `u = R⁻ᵀ φ(x)` by forward substitution, four stages per sweep
//!   over the ones solved (a block of stages at once), then the cumulative sums
//!   `Σ_{j≤k} z_j u_j`.

use rayon::prelude::*;

use crate::error::{checked_len, shape_error, try_filled, value_error, Result};
use crate::numeric::simd;
use crate::runtime::control::Control;

/// Rows per chunk of [`gram_t`]: a tile of four basis columns of the chunk
/// stays in L1 while the block's columns stream past it.
const GRAM_ROWS: usize = 512;

/// Points per tile of [`staged_decisions`] (two AVX2 registers, one AVX-512).
const POINTS: usize = 8;

/// Work (entries × features, or points × stages²) above which a loop runs
/// on rayon's pool.
const PARALLEL_WORK: usize = 1 << 18;

/// `c + a·b` lane by lane (one vector fused multiply-add).
#[inline(always)]
fn fma4<const FMA: bool>(a: [f64; 4], b: [f64; 4], c: [f64; 4]) -> [f64; 4] {
    [
        simd::fmadd64::<FMA>(a[0], b[0], c[0]),
        simd::fmadd64::<FMA>(a[1], b[1], c[1]),
        simd::fmadd64::<FMA>(a[2], b[2], c[2]),
        simd::fmadd64::<FMA>(a[3], b[3], c[3]),
    ]
}

/// `[Σ_t q_j[t]·c_b[t]]` for `J` columns `q` and `B` columns `c` of the same
/// length: four-lane partial sums over the rows, `J·B` of them held in
/// registers.
#[inline(always)]
fn dots<const FMA: bool, const J: usize, const B: usize>(
    q: [&[f64]; J],
    c: [&[f64]; B],
) -> [[f64; B]; J] {
    let len = c[0].len();
    let qc = q.map(|s| s[..len].as_chunks::<4>().0);
    let cc = c.map(|s| s[..len].as_chunks::<4>().0);
    let m = len / 4;
    let mut acc = [[[0.0f64; 4]; B]; J];
    for t in 0..m {
        let x: [[f64; 4]; J] = std::array::from_fn(|j| qc[j][t]);
        let y: [[f64; 4]; B] = std::array::from_fn(|b| cc[b][t]);
        for j in 0..J {
            for b in 0..B {
                acc[j][b] = fma4::<FMA>(x[j], y[b], acc[j][b]);
            }
        }
    }
    let mut out = [[0.0f64; B]; J];
    for j in 0..J {
        for b in 0..B {
            let a = acc[j][b];
            let mut s = (a[0] + a[1]) + (a[2] + a[3]);
            for t in 4 * m..len {
                s = simd::fmadd64::<FMA>(q[j][t], c[b][t], s);
            }
            out[j][b] = s;
        }
    }
    out
}

/// The two tiles of the Gram–Schmidt sweeps written with AVX2 + FMA
/// intrinsics: the generic forms above are vectorised across the wrong
/// dimension by the compiler (shuffles instead of straight loads).
#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    /// [`super::dots`] for four basis columns and two block columns of
    /// length `len`: eight vector accumulators.
    ///
    /// # Safety
    /// The CPU must have AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn dots_4x2(q: [&[f64]; 4], c: [&[f64]; 2]) -> [[f64; 2]; 4] {
        let len = c[0].len();
        assert!(q.iter().chain(&c).all(|s| s.len() >= len));
        let m = len / 4;
        let mut acc = [[_mm256_setzero_pd(); 2]; 4];
        for t in 0..m {
            let o = 4 * t;
            // SAFETY: `o + 4 ≤ len ≤` every slice's length (asserted above).
            unsafe {
                let y0 = _mm256_loadu_pd(c[0].as_ptr().add(o));
                let y1 = _mm256_loadu_pd(c[1].as_ptr().add(o));
                for (a, qj) in acc.iter_mut().zip(&q) {
                    let x = _mm256_loadu_pd(qj.as_ptr().add(o));
                    a[0] = _mm256_fmadd_pd(x, y0, a[0]);
                    a[1] = _mm256_fmadd_pd(x, y1, a[1]);
                }
            }
        }
        let mut out = [[0.0f64; 2]; 4];
        for j in 0..4 {
            for b in 0..2 {
                let mut l = [0.0f64; 4];
                // SAFETY: `l` holds four values.
                unsafe { _mm256_storeu_pd(l.as_mut_ptr(), acc[j][b]) };
                let mut s = (l[0] + l[1]) + (l[2] + l[3]);
                for t in 4 * m..len {
                    s = q[j][t].mul_add(c[b][t], s);
                }
                out[j][b] = s;
            }
        }
        out
    }

    /// [`super::sub_tile`] for four block columns: rows `r0..r0+8` of each
    /// in two vector registers while the basis columns pass (eight values
    /// of basis column `j` at `q[j·stride..]`).
    ///
    /// # Safety
    /// The CPU must have AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    #[allow(clippy::needless_range_loop)]
    pub(super) unsafe fn sub_tile_4(
        q: &[f64],
        stride: usize,
        r0: usize,
        hs: [&[f64]; 4],
        cols: &mut [&mut [f64]],
    ) {
        let k = hs[0].len();
        assert!(hs.iter().all(|h| h.len() == k) && cols.len() >= 4);
        assert!(cols[..4].iter().all(|c| c.len() >= r0 + 8));
        assert!(k == 0 || q.len() >= (k - 1) * stride + 8);
        let mut lo = [_mm256_setzero_pd(); 4];
        let mut hi = [_mm256_setzero_pd(); 4];
        // SAFETY: every load and store lies within the slices (asserted
        // above: rows `r0..r0+8` of each column, eight values at `j·stride`
        // of `q` for each `j < k`).
        unsafe {
            for b in 0..4 {
                lo[b] = _mm256_loadu_pd(cols[b].as_ptr().add(r0));
                hi[b] = _mm256_loadu_pd(cols[b].as_ptr().add(r0 + 4));
            }
            for j in 0..k {
                let p = q.as_ptr().add(j * stride);
                let x0 = _mm256_loadu_pd(p);
                let x1 = _mm256_loadu_pd(p.add(4));
                for b in 0..4 {
                    let s = _mm256_set1_pd(-hs[b][j]);
                    lo[b] = _mm256_fmadd_pd(s, x0, lo[b]);
                    hi[b] = _mm256_fmadd_pd(s, x1, hi[b]);
                }
            }
            for b in 0..4 {
                _mm256_storeu_pd(cols[b].as_mut_ptr().add(r0), lo[b]);
                _mm256_storeu_pd(cols[b].as_mut_ptr().add(r0 + 4), hi[b]);
            }
        }
    }
}

/// [`dots`] for a 4 × 2 tile: the intrinsics when `FMA` (the caller runs
/// with AVX2 + FMA, see [`simd::multiversion!`]), else the generic form.
#[inline(always)]
fn dots_4x2<const FMA: bool>(q: [&[f64]; 4], c: [&[f64]; 2]) -> [[f64; 2]; 4] {
    #[cfg(target_arch = "x86_64")]
    if FMA {
        // SAFETY: `FMA` is true only in the AVX2 + FMA and AVX-512 builds,
        // which run only on CPUs that have AVX2 and FMA.
        return unsafe { x86::dots_4x2(q, c) };
    }
    dots::<FMA, 4, 2>(q, c)
}

/// [`sub_tile`] for four block columns, as [`dots_4x2`] chooses.
#[inline(always)]
fn sub_tile_4<const FMA: bool>(
    q: &[f64],
    stride: usize,
    r0: usize,
    hs: [&[f64]; 4],
    cols: &mut [&mut [f64]],
) {
    #[cfg(target_arch = "x86_64")]
    if FMA {
        // SAFETY: as in `dots_4x2`.
        return unsafe { x86::sub_tile_4(q, stride, r0, hs, cols) };
    }
    sub_tile::<FMA, 4>(q, stride, r0, hs, cols)
}

simd::multiversion! {
    /// [`gram_t`] over rows `r0..r1` only: `h` (zeroed first) receives
    /// that chunk's part of every dot product.
    fn gram_chunk, fn gram_chunk_impl(
        q: &[f64],
        lo: usize,
        hi: usize,
        c: &[f64],
        n: usize,
        r0: usize,
        r1: usize,
        h: &mut [f64],
    ) {
        let k = hi - lo;
        let nb = c.len().checked_div(n).unwrap_or(0);
        h.iter_mut().for_each(|v| *v = 0.0);
        {
            let qcol = |j: usize| &q[(lo + j) * n + r0..(lo + j) * n + r1];
            let ccol = |b: usize| &c[b * n + r0..b * n + r1];
            let mut j = 0;
            while j < k {
                let jw = (k - j).min(4);
                let mut b = 0;
                while b < nb {
                    let bw = (nb - b).min(2);
                    match (jw, bw) {
                        (4, 2) => {
                            let s = dots_4x2::<FMA>(
                                [qcol(j), qcol(j + 1), qcol(j + 2), qcol(j + 3)],
                                [ccol(b), ccol(b + 1)],
                            );
                            for (jj, row) in s.iter().enumerate() {
                                for (bb, v) in row.iter().enumerate() {
                                    h[(b + bb) * k + j + jj] += v;
                                }
                            }
                        }
                        (4, 1) => {
                            let s = dots::<FMA, 4, 1>(
                                [qcol(j), qcol(j + 1), qcol(j + 2), qcol(j + 3)],
                                [ccol(b)],
                            );
                            for (jj, row) in s.iter().enumerate() {
                                h[b * k + j + jj] += row[0];
                            }
                        }
                        _ => {
                            for jj in j..j + jw {
                                for bb in b..b + bw {
                                    h[bb * k + jj] += dots::<FMA, 1, 1>([qcol(jj)], [ccol(bb)])[0][0];
                                }
                            }
                        }
                    }
                    b += bw;
                }
                j += jw;
            }
        }
    }
}

/// `h = Qᵀc`: `h[b·k + j] = ⟨q_{lo+j}, c_b⟩` for the basis columns `lo..hi`
/// of `q` (column-major, `n` values per column, `k = hi − lo`) and the
/// columns `c_b` of `c` (each `n` values, contiguous). Each chunk of
/// [`GRAM_ROWS`] rows gives partial sums, added in row order, so the result
/// is the same serial or in parallel (chunks on rayon's pool when the work
/// is large).
pub fn gram_t(q: &[f64], lo: usize, hi: usize, c: &[f64], n: usize, h: &mut [f64]) {
    let k = hi - lo;
    let nb = c.len().checked_div(n).unwrap_or(0);
    h.iter_mut().for_each(|v| *v = 0.0);
    if k == 0 || nb == 0 {
        return;
    }
    // The partial sums: `k · nb` values per chunk, a block's share of the
    // basis (already allocated), so plain allocations.
    let part = |r0: usize| {
        let mut p = vec![0.0; k * nb];
        gram_chunk(q, lo, hi, c, n, r0, (r0 + GRAM_ROWS).min(n), &mut p);
        p
    };
    let add = |h: &mut [f64], p: &[f64]| h.iter_mut().zip(p).for_each(|(a, b)| *a += b);
    if n * k * nb >= PARALLEL_WORK && n > GRAM_ROWS {
        let starts: Vec<usize> = (0..n).step_by(GRAM_ROWS).collect();
        let parts: Vec<Vec<f64>> = starts.par_iter().map(|&r0| part(r0)).collect();
        parts.iter().for_each(|p| add(h, p));
    } else {
        for r0 in (0..n).step_by(GRAM_ROWS) {
            add(h, &part(r0));
        }
    }
}

/// `cols[b][r0..r0+8] −= Σ_j hs[b][j] x_j` for `B` block columns, where
/// `x_j = q[j·stride..j·stride + 8]` holds the tile's rows of basis column `j`,
/// the eight rows of each held in registers (two four-lane vectors) while the
/// basis columns pass.
#[inline(always)]
fn sub_tile<const FMA: bool, const B: usize>(
    q: &[f64],
    stride: usize,
    r0: usize,
    hs: [&[f64]; B],
    cols: &mut [&mut [f64]],
) {
    let k = hs[0].len();
    let mut lo: [[f64; 4]; B] = std::array::from_fn(|b| cols[b][r0..r0 + 4].try_into().unwrap());
    let mut hi: [[f64; 4]; B] =
        std::array::from_fn(|b| cols[b][r0 + 4..r0 + 8].try_into().unwrap());
    for j in 0..k {
        let x: &[f64; 8] = q[j * stride..j * stride + 8].try_into().unwrap();
        let x0 = [x[0], x[1], x[2], x[3]];
        let x1 = [x[4], x[5], x[6], x[7]];
        for b in 0..B {
            let s = [-hs[b][j]; 4];
            lo[b] = fma4::<FMA>(s, x0, lo[b]);
            hi[b] = fma4::<FMA>(s, x1, hi[b]);
        }
    }
    for (b, col) in cols.iter_mut().take(B).enumerate() {
        col[r0..r0 + 4].copy_from_slice(&lo[b]);
        col[r0 + 4..r0 + 8].copy_from_slice(&hi[b]);
    }
}

simd::multiversion! {
    /// [`sub_product`] for the rows `r0..r0 + len` of every block column:
    /// `cols[b]` holds those rows of column `b` (`r0` a multiple of 8).
    fn sub_rows, fn sub_rows_impl(
        basis: &BasisView<'_>,
        lo: usize,
        hi: usize,
        cols: &mut [&mut [f64]],
        r0: usize,
        h: &[f64],
    ) {
        let (n, tiles) = (basis.n, basis.tiles);
        let k = hi - lo;
        let nb = cols.len();
        if k == 0 || nb == 0 {
            return;
        }
        let len = cols[0].len();
        let full = len / 8 * 8;
        for t0 in (0..full).step_by(8) {
            // The tile's rows of the basis columns `lo..hi`: eight values per
            // column, contiguous in the panel copy, else `n` apart.
            let (q, stride) = if tiles.is_empty() {
                (&basis.col[lo * n + r0 + t0..], n)
            } else {
                let at = (r0 + t0) / 8 * 8 * basis.cap;
                (&tiles[at + lo * 8..at + hi * 8], 8)
            };
            let mut b = 0;
            while b < nb {
                let hb = |i: usize| &h[i * k..(i + 1) * k];
                let rest = &mut cols[b..];
                match nb - b {
                    1 => sub_tile::<FMA, 1>(q, stride, t0, [hb(b)], rest),
                    2 => sub_tile::<FMA, 2>(q, stride, t0, [hb(b), hb(b + 1)], rest),
                    3 => sub_tile::<FMA, 3>(q, stride, t0, [hb(b), hb(b + 1), hb(b + 2)], rest),
                    _ => sub_tile_4::<FMA>(
                        q,
                        stride,
                        t0,
                        [hb(b), hb(b + 1), hb(b + 2), hb(b + 3)],
                        rest,
                    ),
                }
                b += 4;
            }
        }
        let q = &basis.col[lo * n + r0..hi * n];
        for (b, col) in cols.iter_mut().enumerate() {
            let hb = &h[b * k..(b + 1) * k];
            for (t, v) in col.iter_mut().enumerate().skip(full) {
                for (j, &hj) in hb.iter().enumerate() {
                    *v = simd::fmadd64::<FMA>(-hj, q[j * n + t], *v);
                }
            }
        }
    }
}

/// The basis as [`sub_product`] reads it: column-major (`col`, column `j`
/// at `j·n`) and, optionally, a panel copy (`tiles`: for each tile of eight
/// rows, `cap` columns of eight values, so a tile's rows of consecutive
/// columns are contiguous; empty when absent).
#[derive(Clone, Copy, Debug)]
pub struct BasisView<'a> {
    /// Column-major, `n` values per column.
    pub col: &'a [f64],
    /// Rows per column.
    pub n: usize,
    /// The panel copy, `8 · cap` values per tile of rows, or empty.
    pub tiles: &'a [f64],
    /// Columns reserved per tile in `tiles`.
    pub cap: usize,
}

/// Rows per task of [`sub_product`] (a multiple of the eight-row tile).
const SUB_ROWS: usize = 512;

/// `c −= Q h`: `c_b −= Σ_j h[b·k + j] q_{lo+j}` (the layouts of [`gram_t`];
/// the basis read from its panel copy when it has one),
/// `j` in increasing order for every entry; chunks of rows on rayon's pool
/// when the work is large (the same arithmetic either way).
pub fn sub_product(basis: &BasisView<'_>, lo: usize, hi: usize, c: &mut [f64], h: &[f64]) {
    let (k, n) = (hi - lo, basis.n);
    if k == 0 || n == 0 {
        return;
    }
    let nb = c.len() / n;
    let mut parts: Vec<Vec<&mut [f64]>> = (0..n.div_ceil(SUB_ROWS)).map(|_| Vec::new()).collect();
    for col in c.chunks_exact_mut(n) {
        for (part, piece) in parts.iter_mut().zip(col.chunks_mut(SUB_ROWS)) {
            part.push(piece);
        }
    }
    let run = |(i, cols): (usize, &mut Vec<&mut [f64]>)| {
        sub_rows(basis, lo, hi, cols, i * SUB_ROWS, h);
    };
    if n * k * nb >= PARALLEL_WORK && n > SUB_ROWS {
        parts.par_iter_mut().enumerate().for_each(run);
    } else {
        parts.iter_mut().enumerate().for_each(run);
    }
}

/// Forward substitution of `JW` stages `j0..j0+JW` for a tile of points:
/// `u_j = (φ_j − Σ_{i<j} R[i, j] u_i) / R[j, j]`, the sweep over the
/// `j0` stages already solved shared by the `JW` new ones.
#[inline(always)]
fn solve_stages<const FMA: bool, const JW: usize>(
    u: &mut [[f64; POINTS]],
    r: &[f64],
    dim: usize,
    j0: usize,
) {
    let mut acc: [[f64; POINTS]; JW] = std::array::from_fn(|q| u[j0 + q]);
    for (i, x) in u[..j0].iter().enumerate() {
        let rr: &[f64; JW] = r[i * dim + j0..i * dim + j0 + JW].try_into().unwrap();
        for (a, &rij) in acc.iter_mut().zip(rr) {
            let s = -rij;
            for l in 0..POINTS {
                a[l] = simd::fmadd64::<FMA>(s, x[l], a[l]);
            }
        }
    }
    for q in 0..JW {
        for i in 0..q {
            let s = -r[(j0 + i) * dim + j0 + q];
            let x = acc[i];
            for l in 0..POINTS {
                acc[q][l] = simd::fmadd64::<FMA>(s, x[l], acc[q][l]);
            }
        }
        let diag = r[(j0 + q) * dim + j0 + q];
        acc[q].iter_mut().for_each(|v| *v /= diag);
    }
    u[j0..j0 + JW].copy_from_slice(&acc);
}

simd::multiversion! {
    /// The staged decision values of points `p0..p0+w` (`w ≤ POINTS`), into
    /// `out` (`w` rows of `stages` values): `u` is scratch of `stages` rows.
    fn staged_tile, fn staged_tile_impl(
        path: &Staged<'_>,
        p0: usize,
        u: &mut [[f64; POINTS]],
        out: &mut [f64],
    ) {
        let Staged { phi, m, r, dim, z } = *path;
        let stages = u.len();
        let w = out.len() / stages;
        u[0] = [1.0; POINTS];
        for (j, uj) in u.iter_mut().enumerate().skip(1) {
            let src = &phi[(j - 1) * m + p0..(j - 1) * m + p0 + w];
            uj[..w].copy_from_slice(src);
            uj[w..].iter_mut().for_each(|v| *v = 0.0);
        }
        let mut j0 = 0;
        while j0 + 4 <= stages {
            solve_stages::<FMA, 4>(u, r, dim, j0);
            j0 += 4;
        }
        while j0 < stages {
            solve_stages::<FMA, 1>(u, r, dim, j0);
            j0 += 1;
        }
        let mut s = [0.0f64; POINTS];
        for (j, uj) in u.iter().enumerate() {
            for l in 0..w {
                s[l] += z[j] * uj[l];
                out[l * stages + j] = s[l];
            }
        }
    }
}

/// A path's factor and coordinates, and the kernel of `m` points with its
/// support vectors: what [`staged_decisions`] and [`staged_correct`] read.
#[derive(Clone, Copy, Debug)]
pub struct Staged<'a> {
    /// `phi[(j−1)·m + p]`: the kernel of point `p` with the `j`-th support
    /// vector.
    pub phi: &'a [f64],
    /// Points.
    pub m: usize,
    /// The row-major `dim × dim` factor `R`.
    pub r: &'a [f64],
    pub dim: usize,
    /// The coordinates `z = Uᵀy`.
    pub z: &'a [f64],
}

/// The decision values of the models with `0..stages` columns of a path at
/// `m` points: `out[p·stages + k] = Σ_{j≤k} z_j u_j(x_p)` with
/// `u(x) = R⁻ᵀ [1, φ(x)]`, where `phi[(j−1)·m + p]` is the kernel of point `p`
/// with the path's `j`-th support vector and `r` the row-major `dim × dim`
/// factor (`stages ≤ dim`). Equal, up to rounding, to
/// `cumsum(z ⊙ solve_triangular(R, [1, φ]ᵀ, trans='T'))`. Runs in parallel
/// over tiles of points when the work is large; polls `ctl` per tile.
pub fn staged_decisions(path: &Staged<'_>, stages: usize, ctl: &Control) -> Result<Vec<f64>> {
    let Staged { phi, m, r, dim, z } = *path;
    if r.len() != dim.saturating_mul(dim) {
        shape_error!("R has {} values, expected {dim} × {dim}", r.len());
    }
    if stages == 0 || stages > dim || z.len() < stages {
        value_error!(
            "stages must be in 1..={} (the factor's order and z's length), got {stages}",
            dim.min(z.len())
        );
    }
    if phi.len() != (stages - 1).saturating_mul(m) {
        shape_error!(
            "phi has {} values, expected {} support vectors × {m} points",
            phi.len(),
            stages - 1
        );
    }
    if (0..stages).any(|j| {
        let v = r[j * dim + j];
        v == 0.0 || !v.is_finite()
    }) {
        value_error!("R has a zero or non-finite diagonal entry");
    }
    let what = format!("the decision values of {stages} models at {m} points");
    let hint = "score fewer points at once or use a smaller n_support";
    let len = checked_len::<f64>(m, stages, &what, hint)?;
    let mut out = try_filled(len, 0.0, &what, hint)?;
    if m == 0 {
        return Ok(out);
    }
    let body = |u: &mut Vec<[f64; POINTS]>, (tile, o): (usize, &mut [f64])| {
        if !ctl.is_cancelled() {
            staged_tile(path, tile * POINTS, u, o);
        }
    };
    let init = || vec![[0.0f64; POINTS]; stages];
    if m.saturating_mul(stages).saturating_mul(stages) >= PARALLEL_WORK {
        out.par_chunks_mut(POINTS * stages)
            .enumerate()
            .for_each_init(init, body);
    } else {
        let mut u = init();
        out.chunks_mut(POINTS * stages)
            .enumerate()
            .for_each(|item| body(&mut u, item));
    }
    ctl.check()?;
    Ok(out)
}

/// How many of the `m` points every model of the path classifies correctly:
/// `counts[k]` counts the points `p` with `target[p] = +1` and a decision
/// value of the model with `k` columns that is not negative, or
/// `target[p] = −1` and a negative one (any other target is never correct):
/// a value of exactly zero predicts the `+1` class, as LIBSVM's vote (and
/// the Python package's `binary_index`) decides it. The decision values
/// are those of [`staged_decisions`], computed a tile at a time and counted
/// while in cache, never stored.
pub fn staged_correct(
    path: &Staged<'_>,
    stages: usize,
    target: &[f64],
    ctl: &Control,
) -> Result<Vec<u64>> {
    let Staged { phi, m, .. } = *path;
    if target.len() != m {
        shape_error!(
            "target has {} values but there are {m} points",
            target.len()
        );
    }
    // The checks of `staged_decisions`, on no points.
    let rows = stages.saturating_sub(1);
    if phi.len() != rows.saturating_mul(m) {
        shape_error!(
            "phi has {} values, expected {rows} support vectors × {m} points",
            phi.len()
        );
    }
    let no_points = Staged {
        phi: &[],
        m: 0,
        ..*path
    };
    staged_decisions(&no_points, stages, ctl)?;
    let what = format!("a tile of the decision values of {stages} models");
    let hint = "use a smaller n_support";
    let tile_len = checked_len::<f64>(POINTS, stages, &what, hint)?;
    try_filled(tile_len, 0.0, &what, hint)?;
    let tiles = m.div_ceil(POINTS);
    let count = |(u, out, counts): &mut (Vec<[f64; POINTS]>, Vec<f64>, Vec<u64>), tile: usize| {
        if ctl.is_cancelled() {
            return;
        }
        let p0 = tile * POINTS;
        let w = POINTS.min(m - p0);
        let out = &mut out[..w * stages];
        staged_tile(path, p0, u, out);
        for (l, row) in out.chunks_exact(stages).enumerate() {
            let t = target[p0 + l];
            if t == 1.0 {
                counts
                    .iter_mut()
                    .zip(row)
                    .for_each(|(c, &v)| *c += u64::from(v >= 0.0 || v.is_nan()));
            } else if t == -1.0 {
                counts
                    .iter_mut()
                    .zip(row)
                    .for_each(|(c, &v)| *c += u64::from(v < 0.0));
            }
        }
    };
    let init = || {
        (
            vec![[0.0f64; POINTS]; stages],
            vec![0.0; tile_len],
            vec![0u64; stages],
        )
    };
    let counts = if m.saturating_mul(stages).saturating_mul(stages) >= PARALLEL_WORK {
        (0..tiles)
            .into_par_iter()
            .fold(init, |mut acc, tile| {
                count(&mut acc, tile);
                acc
            })
            .map(|(_, _, c)| c)
            .reduce(
                || vec![0u64; stages],
                |mut a, b| {
                    a.iter_mut().zip(&b).for_each(|(x, y)| *x += y);
                    a
                },
            )
    } else {
        let mut acc = init();
        (0..tiles).for_each(|tile| count(&mut acc, tile));
        acc.2
    };
    ctl.check()?;
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_sweeps_equal_plain_products() {
        for (n, k, nb) in [(37, 6, 3), (520, 9, 5), (8, 1, 1), (1030, 13, 2)] {
            let q: Vec<f64> = (0..n * (k + 2))
                .map(|v| ((v as f64) * 0.11).cos())
                .collect();
            let c0: Vec<f64> = (0..n * nb).map(|v| ((v as f64) * 0.23).sin()).collect();
            let (lo, hi) = (1, k + 1);
            let mut h = vec![0.0; k * nb];
            gram_t(&q, lo, hi, &c0, n, &mut h);
            let mut c = c0.clone();
            let plain = BasisView {
                col: &q,
                n,
                tiles: &[],
                cap: 0,
            };
            sub_product(&plain, lo, hi, &mut c, &h);
            // The same with the panel copy.
            let cap = k + 2;
            let mut tiles = vec![0.0; n.div_ceil(8) * 8 * cap];
            for j in 0..cap {
                for t in 0..n {
                    tiles[t / 8 * 8 * cap + j * 8 + t % 8] = q[j * n + t];
                }
            }
            let panel = BasisView {
                col: &q,
                n,
                tiles: &tiles,
                cap,
            };
            let mut c2 = c0.clone();
            sub_product(&panel, lo, hi, &mut c2, &h);
            assert_eq!(c, c2);
            for b in 0..nb {
                for j in 0..k {
                    let want: f64 = (0..n).map(|t| q[(lo + j) * n + t] * c0[b * n + t]).sum();
                    assert!((h[b * k + j] - want).abs() < 1e-10 * (1.0 + want.abs()));
                }
                for t in 0..n {
                    let want = c0[b * n + t]
                        - (0..k)
                            .map(|j| h[b * k + j] * q[(lo + j) * n + t])
                            .sum::<f64>();
                    assert!((c[b * n + t] - want).abs() < 1e-10);
                }
            }
        }
    }

    #[test]
    fn staged_decisions_solve_the_triangular_system() {
        let (m, dim) = (21, 11);
        let mut r = vec![0.0; dim * dim];
        for i in 0..dim {
            for j in i..dim {
                r[i * dim + j] = if i == j {
                    1.5 + i as f64 * 0.1
                } else {
                    ((i * 7 + j) as f64).sin() * 0.3
                };
            }
        }
        let z: Vec<f64> = (0..dim).map(|j| (j as f64 * 0.9).cos()).collect();
        let phi: Vec<f64> = (0..(dim - 1) * m)
            .map(|v| ((v as f64) * 0.41).sin())
            .collect();
        for stages in [1, 4, 7, dim] {
            let sub = &phi[..(stages - 1) * m];
            let path = Staged {
                phi: sub,
                m,
                r: &r,
                dim,
                z: &z,
            };
            let out = staged_decisions(&path, stages, &Control::none()).unwrap();
            for p in 0..m {
                // Plain forward substitution, then the running sum.
                let mut u = vec![0.0; stages];
                let mut s = 0.0;
                for j in 0..stages {
                    let f = if j == 0 { 1.0 } else { phi[(j - 1) * m + p] };
                    let t: f64 = (0..j).map(|i| r[i * dim + j] * u[i]).sum();
                    u[j] = (f - t) / r[j * dim + j];
                    s += z[j] * u[j];
                    assert!((out[p * stages + j] - s).abs() < 1e-12 * (1.0 + s.abs()));
                }
            }
        }
        let ctl = Control::none();
        let path = Staged {
            phi: &phi,
            m,
            r: &r,
            dim,
            z: &z,
        };
        let all = staged_decisions(&path, dim, &ctl).unwrap();
        let target: Vec<f64> = (0..m).map(|p| [1.0, -1.0, 0.0][p % 3]).collect();
        let counts = staged_correct(&path, dim, &target, &ctl).unwrap();
        for (k, &c) in counts.iter().enumerate() {
            let want = (0..m)
                .filter(|&p| {
                    let v = all[p * dim + k];
                    (target[p] == 1.0 && v > 0.0) || (target[p] == -1.0 && v <= 0.0)
                })
                .count();
            assert_eq!(c as usize, want, "stage {k}");
        }
        assert!(staged_correct(&path, dim, &target[1..], &ctl).is_err());
        assert!(staged_decisions(&path, dim + 1, &ctl).is_err());
        assert!(staged_decisions(
            &Staged {
                phi: &phi[1..],
                ..path
            },
            dim,
            &ctl
        )
        .is_err());
        let mut singular = r.clone();
        singular[2 * dim + 2] = 0.0;
        assert!(staged_decisions(
            &Staged {
                r: &singular,
                ..path
            },
            dim,
            &ctl
        )
        .is_err());
    }
}
