//! Kernel values of a block of rows of `A` against a range of the rows of
//! `B`, for loops that go over `B` in ranges (the `f64` prediction path)
//! instead of computing whole kernel rows.
//!
//! A row's values come from its dot products with the rows of `B`, each a
//! fused multiply-add chain over the row's non-zero features in increasing
//! order (a zero feature leaves such a chain unchanged bit for bit, so the
//! value does not depend on which other rows share the pass or on which
//! loop runs it). Several dense rows share one pass over `B`'s panels with
//! their sums in registers ([`GROUP`] rows × [`LANES`] columns, as the
//! `f32` columns' loops tile rows and columns); rows with few non-zero
//! features go over them in packs of [`PACK`], each over its own features,
//! and for small integers over an `f32` copy of `B` ([`Narrow`]), whose
//! sums are exact and so the same.
//!
//! The RBF kernel takes the squared distance as `(‖x‖² + ‖y‖²) − 2⟨x, y⟩`,
//! as LIBSVM's kernel columns do (C.-C. Chang and C.-J. Lin, "LIBSVM: A
//! library for support vector machines", ACM TIST 2(3), 2011), only for rows
//! where that is exact (integer data small enough, see [`Prepared`]) or
//! where its worst-case error in the exponent `γ‖x − y‖²` is at most
//! [`NORM_FORM_MAX_ERROR`]; other rows take the distance from the
//! differences, as [`super::kernel_matrix`] does, with the same values.

use std::ops::Range;

use super::tiles::{finish, integer_max, sums_row, Panels, LANES};
use super::KernelRowsAgainst;
use crate::error::{try_with_capacity, Result};
use crate::kernel::kinds::KernelKind;
use crate::kernel::rows::Rows;
use crate::numeric::simd::{fmadd64, multiversion};

/// Dense rows per pass over the panels: `GROUP · LANES` running sums (six
/// AVX-512 or twelve AVX2 registers) beside the panel values.
const GROUP: usize = 6;

/// Rows with few non-zero features that go over the panels together, each
/// over its own features.
const PACK: usize = 4;

/// Panels per pass over the rows: their values stay in the L1 cache while
/// all the block's rows go over them, and a pack's `PACK · PANELS ·
/// LANES` running sums (eight AVX-512 or sixteen AVX2 registers) hide the
/// multiply-adds' latency.
const PANELS: usize = 2;

/// The largest worst-case error in RBF's exponent `γ‖x − y‖²` allowed to
/// the norm form: 2⁻³⁸ ≈ 3.6·10⁻¹², so kernel values stay within that
/// relative error of the exactly rounded ones (the actual errors are far
/// smaller: on ijcnn1's test set the decision values are as close to a
/// compensated sum as the difference form's). The bound of a row `x` is
/// `(2d + 3)·u·γ·(‖x‖² + max_t ‖y_t‖²)` with `u = 2⁻⁵³`: `d·u` relative for
/// each of the three sums over `d` features (the dot product's error is at
/// most `d·u·‖x‖‖y‖ ≤ d·u·(‖x‖² + ‖y‖²)/2`) and three roundings joining
/// them. The difference form's bound, `(d + 1)·u·γ‖x − y‖²`, is of the same
/// size for the farthest pairs; near pairs it is smaller, which matters only
/// for data far from the origin (large norms), and those rows keep it.
const NORM_FORM_MAX_ERROR: f64 = 1.0 / (1u64 << 38) as f64;

/// A list of features and, for each, the values of the rows of a group.
struct Group<const R: usize> {
    /// Where the group's rows are in the block (`R` of them).
    rows: [usize; R],
    /// The features where some row of the group is non-zero, increasing.
    features: Vec<usize>,
    /// `values[j][r]`: row `r`'s value of `features[j]`.
    values: Vec<[f64; R]>,
}

/// Rows with few non-zero features (up to [`PACK`]), stepped through their
/// lists of non-zero features together.
struct Pack {
    /// Where the rows are in the block (the first `count`).
    rows: [usize; PACK],
    count: usize,
    /// `steps[j][m]`: `(feature, value)` of row `m`'s `j`-th non-zero
    /// feature, `(0, 0.0)` past the end of its list (a multiply-add of zero
    /// that leaves its sums unchanged).
    steps: Vec<[(usize, f64); PACK]>,
}

impl Pack {
    fn new(rows: &[usize], lists: &[Vec<(usize, f64)>]) -> Pack {
        let len = lists.iter().map(Vec::len).max().unwrap_or(0);
        let steps = (0..len)
            .map(|j| {
                std::array::from_fn(|m| {
                    lists
                        .get(m)
                        .and_then(|l| l.get(j))
                        .copied()
                        .unwrap_or((0, 0.0))
                })
            })
            .collect();
        Pack {
            rows: std::array::from_fn(|m| rows.get(m).copied().unwrap_or(0)),
            count: rows.len(),
            steps,
        }
    }
}

/// Lanes of [`Narrow`]'s panels: two of [`Panels`]'.
const NARROW_LANES: usize = 2 * LANES;

/// The rows of `B` transposed into `f32` panels of [`NARROW_LANES`] rows
/// (as [`Panels`] in `f64`), for integer data whose dot products are exact
/// in `f32`.
pub(super) struct Narrow {
    data: Vec<f32>,
    d: usize,
    /// `max |v|` over `B`.
    max: f64,
}

impl Narrow {
    /// The panels of `b` when every value is an integer (`integer_max` is
    /// `Some`) and `4·d·max|v|² ≤ 2²⁴`, else `None`.
    pub(super) fn try_new(
        b: &Rows,
        integer_max: Option<f64>,
        hint: &str,
    ) -> Result<Option<Narrow>> {
        let d = b.d();
        let Some(max) = integer_max else {
            return Ok(None);
        };
        if d == 0 || !narrow_exact(max, d) {
            return Ok(None);
        }
        let n = b.n();
        let what = format!("the float32 copy of {n} rows of {d} features");
        let count = n.div_ceil(NARROW_LANES);
        let len = crate::error::checked_len::<f32>(count, d * NARROW_LANES, &what, hint)?;
        let mut data = crate::error::try_filled(len, 0.0f32, &what, hint)?;
        for (p, panel) in data.chunks_exact_mut(d * NARROW_LANES).enumerate() {
            for l in 0..NARROW_LANES.min(n - p * NARROW_LANES) {
                for (k, &v) in b.row(p * NARROW_LANES + l).iter().enumerate() {
                    panel[k * NARROW_LANES + l] = v as f32;
                }
            }
        }
        Ok(Some(Narrow { data, d, max }))
    }

    /// Panel `p`: `d` groups of [`NARROW_LANES`] values.
    #[inline(always)]
    fn panel(&self, p: usize) -> &[[f32; NARROW_LANES]] {
        let (rows, _) =
            self.data[p * self.d * NARROW_LANES..(p + 1) * self.d * NARROW_LANES].as_chunks();
        rows
    }
}

/// Whether integers up to `max` in magnitude over `d` features have dot
/// products (and every partial sum) exact in `f32`: `d·max² ≤ 2²²`.
fn narrow_exact(max: f64, d: usize) -> bool {
    max * max <= (1u64 << 22) as f64 / d.max(1) as f64
}

/// A [`Pack`] of integer rows whose dot products go over [`Narrow`].
struct Pack32 {
    rows: [usize; PACK],
    count: usize,
    steps: Vec<[(usize, f32); PACK]>,
}

/// How the rows of a block of `A` (rows `first..first + n`) get their
/// kernel values, worked out once for all ranges of `B`.
pub struct Prepared {
    first: usize,
    n: usize,
    /// Dense rows in groups of [`GROUP`].
    groups: Vec<Group<GROUP>>,
    /// Rows with few non-zero features, in packs.
    packs: Vec<Pack>,
    /// Such rows of small integers, over [`Narrow`].
    packs32: Vec<Pack32>,
    /// Rows (places in the block) whose RBF distances come from the
    /// differences.
    differences: Vec<usize>,
}

impl Prepared {
    /// Plans rows `first..first + n` of `a` against `b` (transposed in
    /// `panels`); `max_sq_b` is `max_t ‖b_t‖²`.
    pub(super) fn new(
        kind: KernelKind,
        a: &Rows,
        first: usize,
        n: usize,
        panels: &Panels,
        max_sq_b: f64,
        narrow: Option<&Narrow>,
    ) -> Result<Prepared> {
        let hint = "predict fewer rows at once";
        let d = a.d();
        let mut dots = try_with_capacity(n, "the rows' plans", hint)?;
        let mut differences = Vec::new();
        for r in 0..n {
            if norm_form_ok(kind, a, first + r, panels, max_sq_b) {
                dots.push(r);
            } else {
                differences.push(r);
            }
        }
        let nonzero = |r: usize| -> Vec<(usize, f64)> {
            let x = a.row(first + r);
            (0..d).filter(|&k| x[k] != 0.0).map(|k| (k, x[k])).collect()
        };
        // Rows with the same non-zero features next to each other, so that
        // a group's union of features is small (ijcnn1: twelve dense
        // features and one of ten one-hot ones; in arrival order six rows
        // span about 16.5 features, sorted about 13). Not where `B` has
        // narrow panels: sorted, sparse integer rows (a9a) passed the group
        // test and left the `f32` packs, which are faster for them.
        let mut dots: Vec<(usize, Vec<(usize, f64)>)> =
            dots.into_iter().map(|r| (r, nonzero(r))).collect();
        if narrow.is_none() {
            dots.sort_by(|(_, x), (_, y)| x.iter().map(|e| e.0).cmp(y.iter().map(|e| e.0)));
        }
        let mut groups = Vec::new();
        let mut singles = Vec::new();
        let mut mark = vec![false; d];
        for rows in dots.chunks(GROUP) {
            if rows.len() == GROUP {
                for (_, list) in rows {
                    for &(k, _) in list {
                        mark[k] = true;
                    }
                }
                let features: Vec<usize> = (0..d).filter(|&k| mark[k]).collect();
                mark.iter_mut().for_each(|m| *m = false);
                let alone: usize = rows.iter().map(|(_, list)| list.len()).sum();
                // A group pass costs a multiply-add per row and feature of
                // the union, rows alone one per non-zero feature but also a
                // load of the panels each: about twice as long per
                // multiply-add.
                if GROUP * features.len() <= 2 * alone {
                    let values = features
                        .iter()
                        .map(|&k| std::array::from_fn(|g| a.row(first + rows[g].0)[k]))
                        .collect();
                    groups.push(Group {
                        rows: std::array::from_fn(|g| rows[g].0),
                        features,
                        values,
                    });
                    continue;
                }
            }
            singles.extend(rows.iter().cloned());
        }
        // Rows of integers with exact `f32` dot products against `B` go
        // over the narrow panels.
        let (narrow_rows, wide): (Vec<_>, Vec<_>) = singles.into_iter().partition(|(r, _)| {
            narrow.is_some_and(|nw| {
                integer_max(a.row(first + r).iter().copied())
                    .is_some_and(|m| narrow_exact(m.max(nw.max), d))
            })
        });
        let packs32 = narrow_rows
            .chunks(PACK)
            .map(|c| {
                let len = c.iter().map(|s| s.1.len()).max().unwrap_or(0);
                Pack32 {
                    rows: std::array::from_fn(|m| c.get(m).map_or(0, |s| s.0)),
                    count: c.len(),
                    steps: (0..len)
                        .map(|j| {
                            std::array::from_fn(|m| {
                                c.get(m)
                                    .and_then(|s| s.1.get(j))
                                    .map_or((0, 0.0), |&(k, x)| (k, x as f32))
                            })
                        })
                        .collect(),
                }
            })
            .collect();
        let packs = wide
            .chunks(PACK)
            .map(|c| {
                let rows: Vec<usize> = c.iter().map(|s| s.0).collect();
                let lists: Vec<Vec<(usize, f64)>> = c.iter().map(|s| s.1.clone()).collect();
                Pack::new(&rows, &lists)
            })
            .collect();
        Ok(Prepared {
            first,
            n,
            groups,
            packs,
            packs32,
            differences,
        })
    }

    /// Rows in the block.
    pub fn n(&self) -> usize {
        self.n
    }

    /// One past the block's last row of `A`.
    pub(super) fn end(&self) -> usize {
        self.first + self.n
    }
}

/// Whether row `i` of `a` takes its kernel values from dot products: every
/// kernel but RBF, and RBF when the norm form is exact or accurate enough
/// (see [`NORM_FORM_MAX_ERROR`]).
fn norm_form_ok(kind: KernelKind, a: &Rows, i: usize, panels: &Panels, max_sq_b: f64) -> bool {
    let KernelKind::Rbf { gamma } = kind else {
        return true;
    };
    let d = a.d() as f64;
    let x = a.row(i);
    if let (Some(mb), Some(mx)) = (panels.integer_max, integer_max(x.iter().copied())) {
        // Every product and partial sum an integer below 2⁵³: exact.
        let m = mb.max(mx);
        if m == 0.0 || m * m <= 2f64.powi(51) / d {
            return true;
        }
    }
    let bound = (2.0 * d + 3.0) * (f64::EPSILON / 2.0) * gamma * (a.sq_norm(i) + max_sq_b);
    bound <= NORM_FORM_MAX_ERROR
}

multiversion! {
    /// `out[r·stride + t − c0] = K(a_{first + r}, b_t)` for the rows of
    /// `prepared` and the columns `t` in `cols = c0..c1` (`c0` a multiple
    /// of [`NARROW_LANES`]).
    pub(super) fn fill_range, fn fill_range_impl(
        against: &KernelRowsAgainst<'_>,
        a: &Rows,
        prepared: &Prepared,
        cols: Range<usize>,
        out: &mut [f64],
        stride: usize,
    ) {
        let (c0, c1) = (cols.start, cols.end);
        let (kind, b, panels) = (against.kind, against.b, &against.panels);
        let narrow_panels = against.narrow.as_ref();
        debug_assert!(c0.is_multiple_of(NARROW_LANES) && c0 <= c1);
        let len = c1 - c0;
        if len == 0 {
            return;
        }
        let (p0, p1) = (c0 / LANES, c1.div_ceil(LANES));
        let first = prepared.first;
        // A few panels at a time for all the rows, so that those panels
        // stay in the L1 cache while the rows pass over them.
        let mut q0 = p0;
        while q0 < p1 {
            let q1 = (q0 + PANELS).min(p1);
            let pass = Pass {
                panels,
                p0,
                q0,
                q1,
                len,
                stride,
            };
            for group in &prepared.groups {
                group_sums::<FMA, GROUP>(group, &pass, out);
            }
            for pack in &prepared.packs {
                pack_sums::<FMA>(pack, &pass, out);
            }
            if let Some(narrow) = narrow_panels {
                // `q0` is even: `c0` is a multiple of two panels.
                let at = (q0 - p0) * LANES;
                let width = NARROW_LANES.min(len - at);
                for pack in &prepared.packs32 {
                    pack32_sums::<FMA>(pack, narrow.panel(q0 / 2), at, width, out, stride);
                }
            }
            q0 = q1;
        }
        let rbf = matches!(kind, KernelKind::Rbf { .. });
        let dot_rows = prepared
            .groups
            .iter()
            .flat_map(|g| g.rows)
            .chain(prepared.packs.iter().flat_map(|p| p.rows[..p.count].iter().copied()))
            .chain(prepared.packs32.iter().flat_map(|p| p.rows[..p.count].iter().copied()));
        for r in dot_rows {
            let seg = &mut out[r * stride..r * stride + len];
            let sq = a.sq_norm(first + r);
            if rbf {
                for (v, &sq_b) in seg.iter_mut().zip(b.sq_norms(c0, c1)) {
                    *v = (sq + sq_b) - 2.0 * *v;
                }
            }
            finish::<FMA>(kind, seg, sq, b, c0);
        }
        for &r in &prepared.differences {
            let i = first + r;
            let seg = &mut out[r * stride..r * stride + len];
            sums_row::<true>(a.row(i), panels, p0, seg);
            finish::<FMA>(kind, seg, a.sq_norm(i), b, c0);
        }
    }
}

/// `sums += x·col`, lane by lane.
#[inline(always)]
fn axpy<const FMA: bool>(sums: &mut [f64; LANES], x: f64, col: &[f64; LANES]) {
    for l in 0..LANES {
        sums[l] = fmadd64::<FMA>(x, col[l], sums[l]);
    }
}

/// The panels `q0..q1` of a range of panels from `p0` (`len` columns in
/// all), and the rows' stride in the output: what one pass of
/// [`group_sums`] and [`pack_sums`] covers.
#[derive(Clone, Copy)]
struct Pass<'a> {
    panels: &'a Panels,
    p0: usize,
    q0: usize,
    q1: usize,
    len: usize,
    stride: usize,
}

/// The dot products of a group's rows with the panels of `pass`, into
/// `out[row·stride ..]`.
#[inline(always)]
fn group_sums<const FMA: bool, const R: usize>(group: &Group<R>, pass: &Pass<'_>, out: &mut [f64]) {
    for p in pass.q0..pass.q1 {
        let panel = pass.panels.panel(p);
        let mut acc = [[0.0f64; LANES]; R];
        for (&k, v) in group.features.iter().zip(&group.values) {
            let col: [f64; LANES] = panel[k];
            for (sums, &x) in acc.iter_mut().zip(v) {
                axpy::<FMA>(sums, x, &col);
            }
        }
        let at = (p - pass.p0) * LANES;
        let width = LANES.min(pass.len - at);
        for (r, sums) in acc.iter().enumerate() {
            store(&mut out[group.rows[r] * pass.stride + at..], sums, width);
        }
    }
}

/// `out[..width] = sums[..width]`: a whole panel's sums as one fixed-size
/// copy (vector stores; a copy of a variable length is a call to `memcpy`,
/// which cost a sixth of the time of the panels' loops on 22 features).
#[inline(always)]
fn store(out: &mut [f64], sums: &[f64; LANES], width: usize) {
    if width == LANES {
        out[..LANES].copy_from_slice(sums);
    } else {
        out[..width].copy_from_slice(&sums[..width]);
    }
}

/// The dot products of a [`Pack32`]'s rows with one narrow panel, exact
/// in `f32`, into `out[row·stride + at..][..width]` as `f64`.
#[inline(always)]
fn pack32_sums<const FMA: bool>(
    pack: &Pack32,
    panel: &[[f32; NARROW_LANES]],
    at: usize,
    width: usize,
    out: &mut [f64],
    stride: usize,
) {
    const { assert!(PACK == 4) };
    let z = [0.0f32; NARROW_LANES];
    let (mut a0, mut a1, mut a2, mut a3) = (z, z, z, z);
    for &[(k0, x0), (k1, x1), (k2, x2), (k3, x3)] in &pack.steps {
        axpy32::<FMA>(&mut a0, x0, &panel[k0]);
        axpy32::<FMA>(&mut a1, x1, &panel[k1]);
        axpy32::<FMA>(&mut a2, x2, &panel[k2]);
        axpy32::<FMA>(&mut a3, x3, &panel[k3]);
    }
    for (m, sums) in [a0, a1, a2, a3].iter().enumerate().take(pack.count) {
        let row = pack.rows[m] * stride + at;
        for (o, &v) in out[row..row + width].iter_mut().zip(sums) {
            *o = f64::from(v);
        }
    }
}

/// `sums += x·col` in `f32`, lane by lane.
#[inline(always)]
fn axpy32<const FMA: bool>(sums: &mut [f32; NARROW_LANES], x: f32, col: &[f32; NARROW_LANES]) {
    for l in 0..NARROW_LANES {
        sums[l] = crate::numeric::simd::fmadd::<FMA>(x, col[l], sums[l]);
    }
}

/// The dot products of a pack's rows with the panels of `pass` (at most
/// [`PANELS`]), into `out[row·stride ..]`.
#[inline(always)]
fn pack_sums<const FMA: bool>(pack: &Pack, pass: &Pass<'_>, out: &mut [f64]) {
    const { assert!(PANELS == 2 && PACK == 4) };
    // Named accumulators: as an array of arrays the compiler packs them
    // across rows and panels, with shuffles or scalar code.
    let z = [0.0f64; LANES];
    let (mut a0, mut a1, mut a2, mut a3) = (z, z, z, z);
    let (mut b0, mut b1, mut b2, mut b3) = (z, z, z, z);
    let pa = pass.panels.panel(pass.q0);
    if pass.q1 - pass.q0 == 2 {
        let pb = pass.panels.panel(pass.q0 + 1);
        for &[(k0, x0), (k1, x1), (k2, x2), (k3, x3)] in &pack.steps {
            axpy::<FMA>(&mut a0, x0, &pa[k0]);
            axpy::<FMA>(&mut b0, x0, &pb[k0]);
            axpy::<FMA>(&mut a1, x1, &pa[k1]);
            axpy::<FMA>(&mut b1, x1, &pb[k1]);
            axpy::<FMA>(&mut a2, x2, &pa[k2]);
            axpy::<FMA>(&mut b2, x2, &pb[k2]);
            axpy::<FMA>(&mut a3, x3, &pa[k3]);
            axpy::<FMA>(&mut b3, x3, &pb[k3]);
        }
    } else {
        for &[(k0, x0), (k1, x1), (k2, x2), (k3, x3)] in &pack.steps {
            axpy::<FMA>(&mut a0, x0, &pa[k0]);
            axpy::<FMA>(&mut a1, x1, &pa[k1]);
            axpy::<FMA>(&mut a2, x2, &pa[k2]);
            axpy::<FMA>(&mut a3, x3, &pa[k3]);
        }
    }
    let acc = [[a0, b0], [a1, b1], [a2, b2], [a3, b3]];
    for (m, sums) in acc.iter().enumerate().take(pack.count) {
        for (q, lanes) in sums.iter().enumerate().take(pass.q1 - pass.q0) {
            let at = (pass.q0 + q - pass.p0) * LANES;
            let width = LANES.min(pass.len - at);
            store(&mut out[pack.rows[m] * pass.stride + at..], lanes, width);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::matrix::tests::{uniform, KINDS};
    use crate::kernel::matrix::KernelRowsAgainst;
    use crate::kernel::rows::kernel_value;

    /// Rows of `a` in ranges of `step` columns, the rows `first..first + n`
    /// prepared together.
    fn by_ranges(
        kind: KernelKind,
        a: &Rows,
        b: &Rows,
        first: usize,
        n: usize,
        step: usize,
    ) -> Vec<f64> {
        let against = KernelRowsAgainst::for_ranges(kind, b, "h").unwrap();
        let prepared = against.prepare(a, first, n).unwrap();
        let mut out = vec![f64::NAN; n * b.n()];
        let mut buf = vec![f64::NAN; n * step];
        for c0 in (0..b.n()).step_by(step) {
            let c1 = (c0 + step).min(b.n());
            against
                .fill_range(a, &prepared, c0..c1, &mut buf, step)
                .unwrap();
            for r in 0..n {
                out[r * b.n() + c0..r * b.n() + c1]
                    .copy_from_slice(&buf[r * step..r * step + c1 - c0]);
            }
        }
        out
    }

    #[test]
    fn ranges_match_the_scalar_formula_and_each_row_alone() {
        let mut state = 21u64;
        let (na, nb) = (29, 75);
        for d in [1, 5, 22, 40] {
            // Dense rows, rows with a quarter of their features non-zero,
            // and a few rows far from the origin (RBF's difference form).
            let mut data = uniform(na * d, &mut state);
            for (k, v) in data.iter_mut().enumerate() {
                let row = k / d;
                if row % 3 == 1 && k % 4 != 0 {
                    *v = 0.0;
                } else if row % 7 == 5 {
                    *v += 1e4;
                }
            }
            let a = Rows::new(data, na, d).unwrap();
            let b = Rows::new(uniform(nb * d, &mut state), nb, d).unwrap();
            for kind in KINDS {
                let all = by_ranges(kind, &a, &b, 0, na, 16);
                for i in 0..na {
                    let alone = by_ranges(kind, &a, &b, i, 1, 32);
                    for t in 0..nb {
                        let got = all[i * nb + t];
                        assert_eq!(
                            got.to_bits(),
                            alone[t].to_bits(),
                            "{kind:?} d={d} ({i}, {t})"
                        );
                        let want =
                            kernel_value(kind, a.row(i), b.row(t), a.sq_norm(i), b.sq_norm(t));
                        let tol = 1e-13 * want.abs().max(1e-2);
                        assert!(
                            (got - want).abs() <= tol,
                            "{kind:?} d={d} ({i}, {t}): {got:e} vs {want:e}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn integer_rows_give_the_exact_distances() {
        // Counts: the norm form is exact, so RBF values equal those of the
        // kernel matrix (from the differences) bit for bit.
        let mut state = 5u64;
        let (na, nb, d) = (17, 41, 30);
        let ints = |v: Vec<f64>| -> Vec<f64> {
            v.iter()
                .enumerate()
                .map(|(k, x)| if k % 3 == 0 { (x * 50.0).round() } else { 0.0 })
                .collect()
        };
        let a = Rows::new(ints(uniform(na * d, &mut state)), na, d).unwrap();
        let b = Rows::new(ints(uniform(nb * d, &mut state)), nb, d).unwrap();
        let kind = KernelKind::Rbf { gamma: 0.01 };
        let got = by_ranges(kind, &a, &b, 0, na, 16);
        let want = crate::kernel::kernel_matrix(kind, &a, &b).unwrap();
        assert_eq!(got, want);
    }

    #[test]
    fn far_rows_keep_the_difference_form() {
        // Rows near each other 1e6 from the origin: the norm form would lose
        // every digit of their distances (its bound is far above 2⁻³⁸), the
        // difference form keeps them.
        let mut state = 9u64;
        let d = 6;
        let b_data: Vec<f64> = uniform(12 * d, &mut state)
            .iter()
            .map(|v| 1e6 + v)
            .collect();
        let b = Rows::new(b_data.clone(), 12, d).unwrap();
        let a_data: Vec<f64> = b_data.iter().map(|v| v + 1e-3).collect();
        let a = Rows::new(a_data, 12, d).unwrap();
        let kind = KernelKind::Rbf { gamma: 0.5 };
        let got = by_ranges(kind, &a, &b, 0, 12, 16);
        for i in 0..12 {
            for t in 0..12 {
                let want = kernel_value(kind, a.row(i), b.row(t), 0.0, 0.0);
                assert!((got[i * 12 + t] - want).abs() <= 1e-13 * want.max(1e-2));
            }
        }
    }

    #[test]
    fn bad_ranges_are_refused() {
        let mut state = 1u64;
        let a = Rows::new(uniform(12, &mut state), 4, 3).unwrap();
        let b = Rows::new(uniform(30, &mut state), 10, 3).unwrap();
        let against = KernelRowsAgainst::try_new(KernelKind::Linear, &b, "h").unwrap();
        assert!(against.prepare(&a, 2, 3).is_err());
        let p = against.prepare(&a, 1, 3).unwrap();
        let mut out = vec![0.0; 30];
        assert!(against.fill_range(&a, &p, 0..10, &mut out, 10).is_ok());
        // Not a whole panel, past the end, wider than the stride, too short.
        assert!(against.fill_range(&a, &p, 3..10, &mut out, 10).is_err());
        assert!(against.fill_range(&a, &p, 0..11, &mut out, 11).is_err());
        assert!(against.fill_range(&a, &p, 0..10, &mut out, 8).is_err());
        assert!(against
            .fill_range(&a, &p, 0..10, &mut out[..25], 10)
            .is_err());
        let short = Rows::new(uniform(6, &mut state), 2, 3).unwrap();
        assert!(against.fill_range(&short, &p, 0..8, &mut out, 10).is_err());
    }
}
