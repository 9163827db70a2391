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
//! `f32` columns' loops tile rows and columns); a row with few non-zero
//! features goes alone over them ([`SINGLE_PANELS`] panels at a time).
//!
//! The RBF kernel takes the squared distance as `(‖x‖² + ‖y‖²) − 2⟨x, y⟩`,
//! as LIBSVM's kernel columns do (C.-C. Chang and C.-J. Lin, "LIBSVM: A
//! library for support vector machines", ACM TIST 2(3), 2011), only for rows
//! where that is exact (integer data small enough, see [`Prepared`]) or
//! where its worst-case error in the exponent `γ‖x − y‖²` is at most
//! [`NORM_FORM_MAX_ERROR`]; other rows take the distance from the
//! differences, as [`super::kernel_matrix`] does, with the same values.

use super::tiles::{finish, integer_max, sums_row, Panels, LANES};
use crate::error::{try_with_capacity, Result};
use crate::kernel::kinds::KernelKind;
use crate::kernel::rows::Rows;
use crate::simd::{fmadd64, multiversion};

/// Dense rows per pass over the panels: `GROUP · LANES` running sums (12
/// AVX2 registers) beside the panel values.
const GROUP: usize = 6;

/// Panels per pass of a row that goes alone: `SINGLE_PANELS · LANES`
/// running sums (eight AVX2 registers).
const SINGLE_PANELS: usize = 4;

/// The largest worst-case error in RBF's exponent `γ‖x − y‖²` allowed to
/// the norm form: 2⁻³⁸ ≈ 3.6·10⁻¹², so kernel values stay within that
/// relative error of the exactly rounded ones (and within a few units in
/// the last place in practice). The bound of a row `x` is
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

/// How the rows of a block of `A` (rows `first..first + n`) get their
/// kernel values, worked out once for all ranges of `B`.
pub struct Prepared {
    first: usize,
    n: usize,
    /// Dense rows in groups of [`GROUP`].
    groups: Vec<Group<GROUP>>,
    /// Rows computed alone: their place in the block and `(feature, value)`
    /// of their non-zero features.
    singles: Vec<(usize, Vec<(usize, f64)>)>,
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
        let mut groups = Vec::new();
        let mut singles = Vec::new();
        let mut mark = vec![false; d];
        for chunk in dots.chunks(GROUP) {
            let lists: Vec<Vec<(usize, f64)>> = chunk.iter().map(|&r| nonzero(r)).collect();
            if chunk.len() == GROUP {
                for list in &lists {
                    for &(k, _) in list {
                        mark[k] = true;
                    }
                }
                let features: Vec<usize> = (0..d).filter(|&k| mark[k]).collect();
                mark.iter_mut().for_each(|m| *m = false);
                let alone: usize = lists.iter().map(Vec::len).sum();
                // A group pass costs a multiply-add per row and feature of
                // the union, rows alone one per non-zero feature but also a
                // load of the panels each: about twice as long per
                // multiply-add.
                if GROUP * features.len() <= 2 * alone {
                    let values = features
                        .iter()
                        .map(|&k| std::array::from_fn(|g| a.row(first + chunk[g])[k]))
                        .collect();
                    groups.push(Group {
                        rows: std::array::from_fn(|g| chunk[g]),
                        features,
                        values,
                    });
                    continue;
                }
            }
            singles.extend(chunk.iter().copied().zip(lists));
        }
        Ok(Prepared {
            first,
            n,
            groups,
            singles,
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

/// `out[r·stride + t − c0] = K(a_{first + r}, b_t)` for the rows of
/// `prepared` and the columns `t` in `c0..c1` (`c0` a multiple of
/// [`LANES`]).
#[allow(clippy::too_many_arguments)]
pub(super) fn fill_range(
    kind: KernelKind,
    a: &Rows,
    b: &Rows,
    panels: &Panels,
    prepared: &Prepared,
    c0: usize,
    c1: usize,
    out: &mut [f64],
    stride: usize,
) {
    fill_range_dispatch(kind, a, b, panels, prepared, c0, c1, out, stride);
}

multiversion! {
    /// [`fill_range`], per instruction set.
    fn fill_range_dispatch, fn fill_range_impl(
        kind: KernelKind,
        a: &Rows,
        b: &Rows,
        panels: &Panels,
        prepared: &Prepared,
        c0: usize,
        c1: usize,
        out: &mut [f64],
        stride: usize,
    ) {
        debug_assert!(c0.is_multiple_of(LANES) && c0 <= c1);
        let len = c1 - c0;
        if len == 0 {
            return;
        }
        let (p0, p1) = (c0 / LANES, c1.div_ceil(LANES));
        let first = prepared.first;
        for group in &prepared.groups {
            group_sums::<FMA, GROUP>(group, panels, p0, p1, len, out, stride);
        }
        for (r, list) in &prepared.singles {
            single_sums::<FMA>(list, panels, p0, p1, &mut out[r * stride..r * stride + len]);
        }
        let rbf = matches!(kind, KernelKind::Rbf { .. });
        let dot_rows = prepared.groups.iter().flat_map(|g| g.rows).chain(prepared.singles.iter().map(|s| s.0));
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

/// The dot products of a group's rows with the panels `p0..p1`, into
/// `out[row·stride ..][..len]`.
#[inline(always)]
fn group_sums<const FMA: bool, const R: usize>(
    group: &Group<R>,
    panels: &Panels,
    p0: usize,
    p1: usize,
    len: usize,
    out: &mut [f64],
    stride: usize,
) {
    for p in p0..p1 {
        let panel = panels.panel(p);
        let mut acc = [[0.0f64; LANES]; R];
        for (&k, v) in group.features.iter().zip(&group.values) {
            let col: [f64; LANES] = panel[k];
            for (sums, &x) in acc.iter_mut().zip(v) {
                axpy::<FMA>(sums, x, &col);
            }
        }
        let at = (p - p0) * LANES;
        let width = LANES.min(len - at);
        for (r, sums) in acc.iter().enumerate() {
            let row = group.rows[r] * stride + at;
            out[row..row + width].copy_from_slice(&sums[..width]);
        }
    }
}

/// The dot products of one row (its non-zero features `list`) with the
/// panels `p0..p1`, into `seg`.
#[inline(always)]
fn single_sums<const FMA: bool>(
    list: &[(usize, f64)],
    panels: &Panels,
    p0: usize,
    p1: usize,
    seg: &mut [f64],
) {
    const P: usize = SINGLE_PANELS;
    const { assert!(P == 4) };
    let mut p = p0;
    while p + P <= p1 {
        let (q0, q1, q2, q3) = (
            panels.panel(p),
            panels.panel(p + 1),
            panels.panel(p + 2),
            panels.panel(p + 3),
        );
        // Four named accumulators (one per panel): as an array of arrays
        // the compiler packs them across panels, with shuffles.
        let (mut a0, mut a1, mut a2, mut a3) = ([0.0f64; LANES], [0.0; LANES], [0.0; LANES], [0.0; LANES]);
        for &(k, x) in list {
            axpy::<FMA>(&mut a0, x, &q0[k]);
            axpy::<FMA>(&mut a1, x, &q1[k]);
            axpy::<FMA>(&mut a2, x, &q2[k]);
            axpy::<FMA>(&mut a3, x, &q3[k]);
        }
        let acc = [a0, a1, a2, a3];
        let at = (p - p0) * LANES;
        for (q, sums) in acc.iter().enumerate() {
            let lo = at + q * LANES;
            if lo >= seg.len() {
                break;
            }
            let width = LANES.min(seg.len() - lo);
            seg[lo..lo + width].copy_from_slice(&sums[..width]);
        }
        p += P;
    }
    while p < p1 {
        let panel = panels.panel(p);
        let mut acc = [0.0f64; LANES];
        for &(k, x) in list {
            let col: [f64; LANES] = panel[k];
            axpy::<FMA>(&mut acc, x, &col);
        }
        let lo = (p - p0) * LANES;
        let width = LANES.min(seg.len() - lo);
        seg[lo..lo + width].copy_from_slice(&acc[..width]);
        p += 1;
    }
}
