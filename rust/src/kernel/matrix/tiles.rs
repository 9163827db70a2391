//! The vectorised body of the dense `f64` kernel matrix.
//!
//! The rows of `B` are transposed into panels of [`LANES`] rows (inside a
//! panel, feature `k` of its rows is `LANES` consecutive values), so one row
//! of `A` is compared with `LANES` rows of `B` at once, one lane each, with
//! no horizontal sums. Each lane sums its features in four interleaved
//! accumulators plus a tail, in exactly the order of the scalar
//! [`crate::kernel::dot`] / [`crate::kernel::sq_dist`] and without fused
//! multiply-adds, so the sums are bit for bit the scalar ones; RBF stays
//! computed from the differences (exact for close points). The only value
//! that differs from the scalar formula is the RBF's `exp`, here a
//! vectorised one accurate to about one unit in the last place
//! ([`exp_nonpositive`]). Columns are processed in groups whose panels fit
//! the processor's cache, for all rows of a block of `A` in turn.

use crate::error::{checked_len, try_filled, Result};
use crate::kernel::kinds::KernelKind;
use crate::kernel::rows::Rows;
use crate::numeric::simd::{fmadd64, multiversion};

/// Rows of `B` per panel: two AVX2 registers, one AVX-512 register.
pub(super) const LANES: usize = 8;

/// Panel values per column group (128 KiB): the group's panels stay in the
/// processor's cache while the rows of a block of `A` pass over them.
const GROUP_VALUES: usize = 16 * 1024;

/// The rows of `B` transposed into panels of [`LANES`] rows, the last one
/// padded with zeros: `data[(p·d + k)·LANES + l]` is feature `k` of row
/// `p·LANES + l`.
pub(super) struct Panels {
    data: Vec<f64>,
    d: usize,
    count: usize,
    /// The largest `|value|` of `B` when every value is an integer, else
    /// `None` (see [`SparseRow`]).
    pub(super) integer_max: Option<f64>,
}

impl Panels {
    /// The panels of `b`; a failed allocation is an [`crate::Error::Memory`]
    /// naming `hint`.
    pub(super) fn try_new(b: &Rows, hint: &str) -> Result<Panels> {
        let (n, d) = (b.n(), b.d());
        let count = n.div_ceil(LANES);
        let what = format!("the transposed copy of {n} rows of {d} features");
        // `d·LANES` values of a row panel fit in memory because the rows do.
        let len = checked_len::<f64>(count, d * LANES, &what, hint)?;
        let mut data = try_filled(len, 0.0f64, &what, hint)?;
        if d > 0 {
            for (p, panel) in data.chunks_exact_mut(d * LANES).enumerate() {
                for l in 0..LANES.min(n - p * LANES) {
                    for (k, &v) in b.row(p * LANES + l).iter().enumerate() {
                        panel[k * LANES + l] = v;
                    }
                }
            }
        }
        Ok(Panels {
            data,
            d,
            count,
            integer_max: integer_max((0..n).flat_map(|i| b.row(i).iter().copied())),
        })
    }

    /// Panel `p`: `d` groups of `LANES` values.
    #[inline(always)]
    pub(super) fn panel(&self, p: usize) -> &[[f64; LANES]] {
        let (rows, _) = self.data[p * self.d * LANES..(p + 1) * self.d * LANES].as_chunks();
        rows
    }
}

/// One term of a sum: `(x − y)²` for distances, `x·y` for dot products.
#[inline(always)]
fn term<const DIFF: bool>(x: f64, y: f64) -> f64 {
    if DIFF {
        (x - y) * (x - y)
    } else {
        x * y
    }
}

/// `Σ_k term(x_k, panel_k[l])` for every lane `l`, summed in the order of
/// the scalar [`crate::kernel::dot`]: four accumulators by feature index
/// modulo 4, then the remaining features, then `(s0 + s1) + (s2 + s3) + tail`.
#[inline(always)]
fn panel_sums<const DIFF: bool>(x: &[f64], panel: &[[f64; LANES]]) -> [f64; LANES] {
    debug_assert_eq!(x.len(), panel.len());
    let mut acc = [[0.0f64; LANES]; 4];
    let (xs, x_tail) = x.as_chunks::<4>();
    let (ps, p_tail) = panel.as_chunks::<4>();
    for (xc, pc) in xs.iter().zip(ps) {
        for j in 0..4 {
            for l in 0..LANES {
                acc[j][l] += term::<DIFF>(xc[j], pc[j][l]);
            }
        }
    }
    // The scalar tail is an iterator sum, which starts from −0.
    let mut tail = [-0.0f64; LANES];
    for (&xv, pr) in x_tail.iter().zip(p_tail) {
        for l in 0..LANES {
            tail[l] += term::<DIFF>(xv, pr[l]);
        }
    }
    let mut out = [0.0f64; LANES];
    for l in 0..LANES {
        out[l] = (acc[0][l] + acc[1][l]) + (acc[2][l] + acc[3][l]) + tail[l];
    }
    out
}

/// The largest `|v|` when every value is an integer, else `None`.
pub(super) fn integer_max(values: impl Iterator<Item = f64>) -> Option<f64> {
    let mut max = 0.0f64;
    for v in values {
        if v != v.trunc() {
            return None;
        }
        max = max.max(v.abs());
    }
    Some(max)
}

/// The non-zero features of a row of `A` that has few of them, split as
/// [`panel_sums`] splits the features among its accumulators, so that its
/// sums can skip the zeros ([`panel_sums_sparse`]).
///
/// Dot products (every kernel but RBF) skip them exactly: a zero feature
/// adds a zero product to its accumulator, which changes nothing, so the
/// sums are still bit for bit the scalar [`crate::kernel::dot`]. RBF's
/// squared distance has a term `y_k²` for every zero `x_k`, so the zeros are
/// skipped only through `‖x‖² + ‖y‖² − 2⟨x, y⟩`, and only when that is
/// exact: when every value of both rows is an integer and `4·d·max|v|² ≤
/// 2⁵³`, every product and partial sum of either form is an integer below
/// 2⁵³, so both forms give the exact distance (binary or count features, as
/// in LIBSVM's a9a). Other RBF rows keep the difference loop.
struct SparseRow {
    /// `(feature, value)` of the non-zero features `k < 4·⌊d/4⌋` with
    /// `k mod 4 = j`, in increasing order, for `j = 0..4`.
    by_acc: [Vec<(usize, f64)>; 4],
    /// The non-zero features of the last `d mod 4`.
    tail: Vec<(usize, f64)>,
}

impl SparseRow {
    /// Empty lists, to be filled by [`Self::fill`].
    fn new() -> SparseRow {
        SparseRow {
            by_acc: Default::default(),
            tail: Vec::new(),
        }
    }

    /// Takes row `x`'s non-zero features when at most three quarters of
    /// its features are non-zero and (for RBF, `rbf`) the distance from dot
    /// products is exact against `panels`; returns whether it did.
    fn fill(&mut self, x: &[f64], rbf: bool, panels: &Panels) -> bool {
        let d = x.len();
        let nonzero = x.iter().filter(|&&v| v != 0.0).count();
        if 4 * nonzero > 3 * d {
            return false;
        }
        if rbf {
            let (Some(mb), Some(mx)) = (panels.integer_max, integer_max(x.iter().copied())) else {
                return false;
            };
            let m = mb.max(mx);
            // 4·d·m² ≤ 2⁵³, written so that nothing overflows.
            if m > 0.0 && m * m > 2f64.powi(51) / d as f64 {
                return false;
            }
        }
        let head = d - d % 4;
        for list in self.by_acc.iter_mut() {
            list.clear();
        }
        self.tail.clear();
        for (k, &v) in x.iter().enumerate() {
            if v != 0.0 {
                if k < head {
                    self.by_acc[k % 4].push((k, v));
                } else {
                    self.tail.push((k, v));
                }
            }
        }
        true
    }
}

/// `start + Σ x_k·panel_k[l]` over the `(k, x_k)` of `list`, in order, for
/// every lane `l`.
#[inline(always)]
fn lane_sums(list: &[(usize, f64)], panel: &[[f64; LANES]], start: f64) -> [f64; LANES] {
    let mut acc = [start; LANES];
    for &(k, xv) in list {
        let p = &panel[k];
        for l in 0..LANES {
            acc[l] += xv * p[l];
        }
    }
    acc
}

/// `Σ_k x_k·panel_k[l]` over the non-zero features of `row` for every lane
/// `l`: [`panel_sums`]`::<false>` without its zero products, the same
/// values bit for bit.
#[inline(always)]
fn panel_sums_sparse(row: &SparseRow, panel: &[[f64; LANES]]) -> [f64; LANES] {
    let a0 = lane_sums(&row.by_acc[0], panel, 0.0);
    let a1 = lane_sums(&row.by_acc[1], panel, 0.0);
    let a2 = lane_sums(&row.by_acc[2], panel, 0.0);
    let a3 = lane_sums(&row.by_acc[3], panel, 0.0);
    // The scalar tail is an iterator sum, which starts from −0.
    let tail = lane_sums(&row.tail, panel, -0.0);
    let mut out = [0.0f64; LANES];
    for l in 0..LANES {
        out[l] = (a0[l] + a1[l]) + (a2[l] + a3[l]) + tail[l];
    }
    out
}

/// [`sums_row`]`::<false>` over the non-zero features of `row` only.
#[inline(always)]
fn sums_row_sparse(row: &SparseRow, panels: &Panels, first: usize, seg: &mut [f64]) {
    let (full, rest) = seg.as_chunks_mut::<LANES>();
    let n_full = full.len();
    for (p, dst) in full.iter_mut().enumerate() {
        *dst = panel_sums_sparse(row, panels.panel(first + p));
    }
    if !rest.is_empty() {
        let sums = panel_sums_sparse(row, panels.panel(first + n_full));
        rest.copy_from_slice(&sums[..rest.len()]);
    }
}

/// The sums of `x` against the panels `first..` covering `seg` (the last
/// panel may be partial).
#[inline(always)]
pub(super) fn sums_row<const DIFF: bool>(
    x: &[f64],
    panels: &Panels,
    first: usize,
    seg: &mut [f64],
) {
    let (full, rest) = seg.as_chunks_mut::<LANES>();
    let n_full = full.len();
    for (p, dst) in full.iter_mut().enumerate() {
        *dst = panel_sums::<DIFF>(x, panels.panel(first + p));
    }
    if !rest.is_empty() {
        let sums = panel_sums::<DIFF>(x, panels.panel(first + n_full));
        rest.copy_from_slice(&sums[..rest.len()]);
    }
}

const LOG2E: f64 = std::f64::consts::LOG2_E;
// ln 2 split (as in fdlibm) so that n·LN2_HI is exact for |n| < 2²¹.
const LN2_HI: f64 = f64::from_bits(0x3fe6_2e42_fee0_0000);
const LN2_LO: f64 = f64::from_bits(0x3dea_39ef_3579_3c76);
// Adding 1.5·2⁵² rounds to an integer held in the low mantissa bits.
const ROUND: f64 = 6_755_399_441_055_744.0;
// The result is scaled by 2^(n + SPLIT) (exact) and then by 2^−SPLIT (one
// rounding), so results in the subnormal range round once, as they should.
const SPLIT: u64 = 537;
// Below this, e^x is under half the smallest subnormal: the result is 0.
const LOWEST: f64 = -746.0;
/// log₂ of the entries of [`EXP2_TABLE`].
const TABLE_BITS: u32 = 4;
/// `2^(j/16)` for `j = 0..16`, correctly rounded (checked to 60 digits).
pub(super) const EXP2_FRACTIONS: [u64; 1 << TABLE_BITS] = [
    0x3ff0_0000_0000_0000,
    0x3ff0_b558_6cf9_890f,
    0x3ff1_72b8_3c7d_517b,
    0x3ff2_387a_6e75_6238,
    0x3ff3_06fe_0a31_b715,
    0x3ff3_dea6_4c12_3422,
    0x3ff4_bfda_d536_2a27,
    0x3ff5_ab07_dd48_5429,
    0x3ff6_a09e_667f_3bcd,
    0x3ff7_a114_73eb_0187,
    0x3ff8_ace5_422a_a0db,
    0x3ff9_c491_82a3_f090,
    0x3ffa_e89f_995a_d3ad,
    0x3ffc_199b_dd85_529c,
    0x3ffd_5818_dcfb_a487,
    0x3ffe_a4af_a2a4_90da,
];
/// `EXP2_FRACTIONS[j]`'s bits less `j` in the exponent's lowest bits: adding
/// `m·2^(52 − TABLE_BITS)` to entry `m mod 16` gives the bits of
/// `2^(m/16)` (the exponent field gains `⌊m/16⌋`), with no branch on `m`'s
/// sign.
const EXP2_TABLE: [u64; 1 << TABLE_BITS] = {
    let mut t = EXP2_FRACTIONS;
    let mut j = 0;
    while j < t.len() {
        t[j] = t[j].wrapping_sub((j as u64) << (52 - TABLE_BITS));
        j += 1;
    }
    t
};
/// `16/ln 2`: the argument in sixteenths of `ln 2`.
const SIXTEENTHS: f64 = LOG2E * (1 << TABLE_BITS) as f64;
/// `ln 2 / 16` split as [`LN2_HI`] and [`LN2_LO`] (exact scalings).
const STEP_HI: f64 = LN2_HI / (1 << TABLE_BITS) as f64;
const STEP_LO: f64 = LN2_LO / (1 << TABLE_BITS) as f64;
/// Subtracted from the bits of `x·16/ln2 + ROUND` to give `m + 16·SPLIT`
/// for the integer `m` nearest to `x·16/ln2` (two's complement): the index
/// into [`EXP2_TABLE`] is its low bits, the exponent of `2^(m/16 + SPLIT)`
/// the rest.
const ROUND_LESS_SPLIT: u64 = ROUND.to_bits().wrapping_sub(SPLIT << TABLE_BITS);
/// `2^−SPLIT`.
const DOWN: f64 = f64::from_bits((1023 - SPLIT) << 52);

/// `e^x` for `x ≤ 0` (larger arguments are taken as 0), within about one
/// unit in the last place of [`f64::exp`] (the tests measure at most one),
/// written with arithmetic, bit operations and a 16-entry table only so
/// loops over it vectorise. Underflows like `f64::exp`: subnormal results
/// below about `e^−708`, exactly 0 below about `−745.13` (and for `−∞`);
/// `e^0 = 1` exactly; NaN stays NaN.
///
/// The table-driven reduction of P. T. P. Tang ("Table-driven
/// implementation of the exponential function in IEEE floating-point
/// arithmetic", ACM TOMS 15(2), 1989) with 16 entries:
/// `x = (m/16)·ln 2 + r`, `|r| ≤ ln2/32`, `e^x = 2^⌊m/16⌋ · 2^((m mod 16)/16)
/// · e^r`, and `e^r − 1` from its Taylor series to degree 7 (truncation
/// below `2·10⁻¹⁸`): nine multiply-adds and a table look-up in place of a
/// degree-13 polynomial on `|r| ≤ ln2/2`. The table entry is rounded once
/// (half a unit) and the last multiply-add once more. [`exp_scaled`]'s
/// AVX-512 loop computes the same operations in the same order, with the
/// table in two registers, and gives the same bits.
#[inline(always)]
pub(super) fn exp_nonpositive<const FMA: bool>(x: f64) -> f64 {
    let x = x.clamp(LOWEST, 0.0);
    let shifted = fmadd64::<FMA>(x, SIXTEENTHS, ROUND);
    let m = shifted - ROUND;
    let m_bits = shifted.to_bits().wrapping_sub(ROUND_LESS_SPLIT);
    let r = fmadd64::<FMA>(-m, STEP_LO, fmadd64::<FMA>(-m, STEP_HI, x));
    let q = expm1_small::<FMA>(r);
    let entry = EXP2_TABLE[(m_bits as usize) & ((1 << TABLE_BITS) - 1)];
    let scale = f64::from_bits(entry.wrapping_add(m_bits << (52 - TABLE_BITS)));
    fmadd64::<FMA>(scale, q, scale) * DOWN
}

/// `e^r − 1` for `|r| ≤ ln2/32` from the Taylor series to degree 7:
/// `r + r²(a + r²(b + r²c))` with `a = 1/2 + r/6`, `b = 1/24 + r/120`,
/// `c = 1/720 + r/5040` (short dependency chains).
#[inline(always)]
fn expm1_small<const FMA: bool>(r: f64) -> f64 {
    let r2 = r * r;
    let a = fmadd64::<FMA>(r, 1.0 / 6.0, 0.5);
    let b = fmadd64::<FMA>(r, 1.0 / 120.0, 1.0 / 24.0);
    let c = fmadd64::<FMA>(r, 1.0 / 5040.0, 1.0 / 720.0);
    let inner = fmadd64::<FMA>(r2, fmadd64::<FMA>(r2, c, b), a);
    fmadd64::<FMA>(r2, inner, r)
}

multiversion! {
    /// `v ← e^(factor·v)` for every value, with [`exp_nonpositive`]
    /// (`factor·v ≤ 0`); on AVX-512 processors by [`avx512::exp_scaled`],
    /// the same operations with the table in registers.
    pub(crate) fn exp_scaled, fn exp_scaled_impl(values: &mut [f64], factor: f64) {
        #[cfg(target_arch = "x86_64")]
        if FMA && crate::numeric::simd::level() == crate::numeric::simd::Level::Avx512 {
            // SAFETY: `level()` reports AVX-512 only when the CPU has it.
            unsafe { avx512::exp_scaled(values, factor) };
            return;
        }
        for v in values.iter_mut() {
            *v = exp_nonpositive::<FMA>(factor * *v);
        }
    }
}

/// [`exp_scaled`] written with AVX-512 intrinsics: the compiler turns the
/// table look-up of [`exp_nonpositive`] into a gather, which costs as much
/// as the polynomial it saves; here the 16 entries sit in two registers and
/// one two-register permutation (`vpermt2pd`) looks up eight at once.
#[cfg(target_arch = "x86_64")]
pub(super) mod avx512 {
    use super::{
        DOWN, EXP2_TABLE, LOWEST, ROUND, ROUND_LESS_SPLIT, SIXTEENTHS, STEP_HI, STEP_LO, TABLE_BITS,
    };
    use std::arch::x86_64::*;

    /// `v ← e^(factor·v)`, bit for bit [`super::exp_nonpositive::<true>`]
    /// of each `factor·v`.
    ///
    /// # Safety
    /// The CPU must have AVX-512 F.
    #[target_feature(enable = "avx512f,avx512vl,avx2,fma")]
    pub(crate) unsafe fn exp_scaled(values: &mut [f64], factor: f64) {
        let table = |i: usize| -> __m512i {
            let t: [i64; 8] = std::array::from_fn(|l| EXP2_TABLE[i * 8 + l] as i64);
            _mm512_setr_epi64(t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7])
        };
        let (t0, t1) = (table(0), table(1));
        let one = |v: __m512d| -> __m512d {
            let x = _mm512_mul_pd(_mm512_set1_pd(factor), v);
            // As `clamp`: the second operand is returned for NaN.
            let x = _mm512_max_pd(_mm512_set1_pd(LOWEST), x);
            let x = _mm512_min_pd(_mm512_setzero_pd(), x);
            let round = _mm512_set1_pd(ROUND);
            let shifted = _mm512_fmadd_pd(x, _mm512_set1_pd(SIXTEENTHS), round);
            let m = _mm512_sub_pd(shifted, round);
            let m_bits = _mm512_sub_epi64(
                _mm512_castpd_si512(shifted),
                _mm512_set1_epi64(ROUND_LESS_SPLIT as i64),
            );
            let r = _mm512_fnmadd_pd(m, _mm512_set1_pd(STEP_HI), x);
            let r = _mm512_fnmadd_pd(m, _mm512_set1_pd(STEP_LO), r);
            let r2 = _mm512_mul_pd(r, r);
            let c = |a: f64| _mm512_set1_pd(a);
            let a = _mm512_fmadd_pd(r, c(1.0 / 6.0), c(0.5));
            let b = _mm512_fmadd_pd(r, c(1.0 / 120.0), c(1.0 / 24.0));
            let cc = _mm512_fmadd_pd(r, c(1.0 / 5040.0), c(1.0 / 720.0));
            let inner = _mm512_fmadd_pd(r2, _mm512_fmadd_pd(r2, cc, b), a);
            let q = _mm512_fmadd_pd(r2, inner, r);
            // The permutation reads the low four bits of each index.
            let entry = _mm512_permutex2var_epi64(t0, m_bits, t1);
            let scale = _mm512_castsi512_pd(_mm512_add_epi64(
                entry,
                _mm512_slli_epi64::<{ 52 - TABLE_BITS }>(m_bits),
            ));
            _mm512_mul_pd(_mm512_fmadd_pd(scale, q, scale), _mm512_set1_pd(DOWN))
        };
        let (chunks, rest) = values.as_chunks_mut::<8>();
        for chunk in chunks {
            // SAFETY: eight values in and out.
            unsafe {
                let v = _mm512_loadu_pd(chunk.as_ptr());
                _mm512_storeu_pd(chunk.as_mut_ptr(), one(v));
            }
        }
        if !rest.is_empty() {
            let mask: __mmask8 = (1u8 << rest.len()) - 1;
            // SAFETY: the mask covers `rest.len()` values.
            unsafe {
                let v = _mm512_maskz_loadu_pd(mask, rest.as_ptr());
                _mm512_mask_storeu_pd(rest.as_mut_ptr(), mask, one(v));
            }
        }
    }
}

/// Turns the sums of `seg` (columns `c0..` of row `x_sq`'s row) into kernel
/// values.
#[inline(always)]
pub(super) fn finish<const FMA: bool>(
    kind: KernelKind,
    seg: &mut [f64],
    sq_a: f64,
    b: &Rows,
    c0: usize,
) {
    match kind {
        // As the scalar `(−γ·‖a − b‖²).exp()`, with the same product.
        KernelKind::Rbf { gamma } => exp_scaled_impl::<FMA>(seg, -gamma),
        KernelKind::Linear => {}
        _ => {
            for (t, v) in seg.iter_mut().enumerate() {
                *v = kind.from_dot(*v, sq_a, b.sq_norm(c0 + t));
            }
        }
    }
}

multiversion! {
    /// Rows `first..first + out.len() / b.n()` of the kernel matrix between
    /// the rows of `a` and those of `b` (transposed in `panels`), into `out`
    /// (row-major); `kind` is a kernel function, not `Precomputed`.
    pub(super) fn fill_rows, pub(super) fn fill_rows_impl(
        kind: KernelKind,
        a: &Rows,
        first: usize,
        b: &Rows,
        panels: &Panels,
        out: &mut [f64],
    ) {
        let nb = b.n();
        if nb == 0 {
            return;
        }
        let diff = matches!(kind, KernelKind::Rbf { .. });
        let rows = out.len() / nb;
        // Which rows skip their zero features ([`SparseRow`]).
        let sparse: Vec<Option<SparseRow>> = (0..rows)
            .map(|r| {
                let mut row = SparseRow::new();
                row.fill(a.row(first + r), diff, panels).then_some(row)
            })
            .collect();
        let per_group = (GROUP_VALUES / (a.d().max(1) * LANES)).max(1);
        for g0 in (0..panels.count).step_by(per_group) {
            let (c0, c1) = (g0 * LANES, ((g0 + per_group) * LANES).min(nb));
            for (r, row) in out.chunks_exact_mut(nb).enumerate() {
                let i = first + r;
                let seg = &mut row[c0..c1];
                if let Some(nz) = &sparse[r] {
                    sums_row_sparse(nz, panels, g0, seg);
                    if diff {
                        // Exact integers (see `SparseRow`): the distance.
                        let sq = a.sq_norm(i);
                        for (v, &sq_b) in seg.iter_mut().zip(b.sq_norms(c0, c1)) {
                            *v = (sq + sq_b) - 2.0 * *v;
                        }
                    }
                } else if diff {
                    sums_row::<true>(a.row(i), panels, g0, seg);
                } else {
                    sums_row::<false>(a.row(i), panels, g0, seg);
                }
                finish::<FMA>(kind, seg, a.sq_norm(i), b, c0);
            }
        }
    }
}
