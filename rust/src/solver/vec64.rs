//! Explicit `f64` vectors for the SMO selection loops, which compilers do not
//! vectorise on their own (arg-max folds with masks). One generic body per
//! loop, written against the small [`F64s`] trait, is instantiated for
//! AVX-512 (8 lanes) and AVX2 (4 lanes) inside functions compiled for those
//! instruction sets; [`crate::solver::wss`] picks one at run time and keeps a scalar
//! version for other processors.

#![allow(unsafe_op_in_unsafe_fn)]

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

use crate::precision::QValue;

/// One SMO step's change of the gradient: `G += Q_i·di + Q_j·dj`, with
/// columns of `T` values (`f32` or `f64`).
#[derive(Clone, Copy, Debug)]
pub struct GradientStep<'a, T: QValue = f32> {
    /// Column `i` of `Q`.
    pub qi: &'a [T],
    /// Column `j` of `Q`.
    pub qj: &'a [T],
    /// The change of `α_i`.
    pub di: f64,
    /// The change of `α_j`.
    pub dj: f64,
}

/// One search for the partner of the working variable `i`, over the
/// low-set; `Q`'s column holds `T` values (`f32` or `f64`).
#[derive(Clone, Copy, Debug)]
pub struct PartnerSearch<'a, T: QValue = f32> {
    /// Labels `y_t`.
    pub y: &'a [f64],
    /// The gradient `G_t`.
    pub g: &'a [f64],
    /// The diagonal `Q_tt`.
    pub qd: &'a [f64],
    /// The low-set mask (1.0 in the set, 0.0 out).
    pub low: &'a [f64],
    /// Column `i` of `Q`.
    pub qi: &'a [T],
    /// `i`'s violation, `−y_i G_i`.
    pub gmax: f64,
    /// `y_i`.
    pub yi: f64,
    /// `Q_ii`.
    pub qd_i: f64,
    /// The floor of the curvature `a_it`.
    pub tau: f64,
}

/// A vector of `f64` lanes and its comparison mask.
///
/// # Safety
/// Every method requires the instruction set of the implementing type; call
/// them only from functions compiled with it.
pub(crate) trait F64s: Copy {
    type Mask: Copy;
    const LANES: usize;
    unsafe fn splat(x: f64) -> Self;
    unsafe fn load(p: *const f64) -> Self;
    unsafe fn load_f32(p: *const f32) -> Self;
    unsafe fn store(self, p: *mut f64);
    unsafe fn add(self, o: Self) -> Self;
    unsafe fn sub(self, o: Self) -> Self;
    unsafe fn mul(self, o: Self) -> Self;
    unsafe fn div(self, o: Self) -> Self;
    unsafe fn gt(self, o: Self) -> Self::Mask;
    unsafe fn ge(self, o: Self) -> Self::Mask;
    unsafe fn and(a: Self::Mask, b: Self::Mask) -> Self::Mask;
    /// Lanes of `yes` where `m` is set, else of `no`.
    unsafe fn select(m: Self::Mask, yes: Self, no: Self) -> Self;
}

#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
pub(crate) struct Avx512(__m512d);

#[cfg(target_arch = "x86_64")]
impl F64s for Avx512 {
    type Mask = __mmask8;
    const LANES: usize = 8;
    #[inline(always)]
    unsafe fn splat(x: f64) -> Self {
        Avx512(_mm512_set1_pd(x))
    }
    #[inline(always)]
    unsafe fn load(p: *const f64) -> Self {
        Avx512(_mm512_loadu_pd(p))
    }
    #[inline(always)]
    unsafe fn load_f32(p: *const f32) -> Self {
        Avx512(_mm512_cvtps_pd(_mm256_loadu_ps(p)))
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut f64) {
        _mm512_storeu_pd(p, self.0)
    }
    #[inline(always)]
    unsafe fn add(self, o: Self) -> Self {
        Avx512(_mm512_add_pd(self.0, o.0))
    }
    #[inline(always)]
    unsafe fn sub(self, o: Self) -> Self {
        Avx512(_mm512_sub_pd(self.0, o.0))
    }
    #[inline(always)]
    unsafe fn mul(self, o: Self) -> Self {
        Avx512(_mm512_mul_pd(self.0, o.0))
    }
    #[inline(always)]
    unsafe fn div(self, o: Self) -> Self {
        Avx512(_mm512_div_pd(self.0, o.0))
    }
    #[inline(always)]
    unsafe fn gt(self, o: Self) -> Self::Mask {
        _mm512_cmp_pd_mask::<_CMP_GT_OQ>(self.0, o.0)
    }
    #[inline(always)]
    unsafe fn ge(self, o: Self) -> Self::Mask {
        _mm512_cmp_pd_mask::<_CMP_GE_OQ>(self.0, o.0)
    }
    #[inline(always)]
    unsafe fn and(a: Self::Mask, b: Self::Mask) -> Self::Mask {
        a & b
    }
    #[inline(always)]
    unsafe fn select(m: Self::Mask, yes: Self, no: Self) -> Self {
        Avx512(_mm512_mask_blend_pd(m, no.0, yes.0))
    }
}

#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
pub(crate) struct Avx2(__m256d);

#[cfg(target_arch = "x86_64")]
impl F64s for Avx2 {
    type Mask = __m256d;
    const LANES: usize = 4;
    #[inline(always)]
    unsafe fn splat(x: f64) -> Self {
        Avx2(_mm256_set1_pd(x))
    }
    #[inline(always)]
    unsafe fn load(p: *const f64) -> Self {
        Avx2(_mm256_loadu_pd(p))
    }
    #[inline(always)]
    unsafe fn load_f32(p: *const f32) -> Self {
        Avx2(_mm256_cvtps_pd(_mm_loadu_ps(p)))
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut f64) {
        _mm256_storeu_pd(p, self.0)
    }
    #[inline(always)]
    unsafe fn add(self, o: Self) -> Self {
        Avx2(_mm256_add_pd(self.0, o.0))
    }
    #[inline(always)]
    unsafe fn sub(self, o: Self) -> Self {
        Avx2(_mm256_sub_pd(self.0, o.0))
    }
    #[inline(always)]
    unsafe fn mul(self, o: Self) -> Self {
        Avx2(_mm256_mul_pd(self.0, o.0))
    }
    #[inline(always)]
    unsafe fn div(self, o: Self) -> Self {
        Avx2(_mm256_div_pd(self.0, o.0))
    }
    #[inline(always)]
    unsafe fn gt(self, o: Self) -> Self::Mask {
        _mm256_cmp_pd::<_CMP_GT_OQ>(self.0, o.0)
    }
    #[inline(always)]
    unsafe fn ge(self, o: Self) -> Self::Mask {
        _mm256_cmp_pd::<_CMP_GE_OQ>(self.0, o.0)
    }
    #[inline(always)]
    unsafe fn and(a: Self::Mask, b: Self::Mask) -> Self::Mask {
        _mm256_and_pd(a, b)
    }
    #[inline(always)]
    unsafe fn select(m: Self::Mask, yes: Self, no: Self) -> Self {
        Avx2(_mm256_blendv_pd(no.0, yes.0, m))
    }
}

/// `V::LANES` column values from `p`, widened to `f64` when they are `f32`.
#[inline(always)]
unsafe fn load_q<V: F64s, T: QValue>(p: *const T) -> V {
    // `QValue` is sealed: `T` is `f64` or `f32`.
    if T::IS_F64 {
        V::load(p.cast::<f64>())
    } else {
        V::load_f32(p.cast::<f32>())
    }
}

/// Lane-wise running maximum with the index where it was reached (indices
/// as `f64`; later indices win ties, as in LIBSVM's scans).
#[derive(Clone, Copy)]
struct ArgMax<V: F64s> {
    best: V,
    arg: V,
}

impl<V: F64s> ArgMax<V> {
    #[inline(always)]
    unsafe fn new() -> Self {
        ArgMax {
            best: V::splat(f64::NEG_INFINITY),
            arg: V::splat(-1.0),
        }
    }

    /// Keeps lanes of `v` that are finite and at least the current best.
    #[inline(always)]
    unsafe fn keep(&mut self, v: V, idx: V) {
        let take = V::and(v.ge(self.best), v.gt(V::splat(f64::NEG_INFINITY)));
        self.best = V::select(take, v, self.best);
        self.arg = V::select(take, idx, self.arg);
    }

    /// `(value, index)`; index `usize::MAX` when no lane took a value.
    #[inline(always)]
    unsafe fn reduce(self) -> (f64, usize) {
        let mut best = [0.0f64; 8];
        let mut arg = [0.0f64; 8];
        self.best.store(best.as_mut_ptr());
        self.arg.store(arg.as_mut_ptr());
        let mut value = f64::NEG_INFINITY;
        let mut index = -1.0f64;
        for l in 0..V::LANES {
            if arg[l] >= 0.0 && (best[l] > value || (best[l] == value && arg[l] > index)) {
                value = best[l];
                index = arg[l];
            }
        }
        if index < 0.0 {
            (f64::NEG_INFINITY, usize::MAX)
        } else {
            (value, index as usize)
        }
    }
}

/// Lane indices `base, base + 1, …` as a vector.
#[inline(always)]
unsafe fn indices<V: F64s>(base: usize) -> V {
    let mut lanes = [0.0f64; 8];
    for (l, slot) in lanes.iter_mut().enumerate() {
        *slot = (base + l) as f64;
    }
    V::load(lanes.as_ptr())
}

/// `(max_{up} −y G, arg)` with masks `up` of 1.0 / 0.0; returns the vector
/// part's result and how many leading elements it covered.
#[inline(always)]
pub(crate) unsafe fn max_up<V: F64s>(y: &[f64], g: &[f64], up: &[f64]) -> (f64, usize, usize) {
    let n = y.len();
    let body = n - n % V::LANES;
    let (zero, half, neg_inf) = (V::splat(0.0), V::splat(0.5), V::splat(f64::NEG_INFINITY));
    let step = V::splat(V::LANES as f64);
    let mut idx = indices::<V>(0);
    let mut acc = ArgMax::<V>::new();
    let mut t = 0;
    while t < body {
        let v = zero.sub(V::load(y.as_ptr().add(t)).mul(V::load(g.as_ptr().add(t))));
        let m = V::load(up.as_ptr().add(t)).gt(half);
        acc.keep(V::select(m, v, neg_inf), idx);
        idx = idx.add(step);
        t += V::LANES;
    }
    let (v, i) = acc.reduce();
    (v, i, body)
}

/// `G += Q_i·di + Q_j·dj`, then [`max_up`] of the result.
#[inline(always)]
pub(crate) unsafe fn update_and_max_up<V: F64s, T: QValue>(
    g: &mut [f64],
    step: GradientStep<'_, T>,
    y: &[f64],
    up: &[f64],
) -> (f64, usize, usize) {
    let GradientStep { qi, qj, di, dj } = step;
    let n = g.len();
    let body = n - n % V::LANES;
    let (zero, half, neg_inf) = (V::splat(0.0), V::splat(0.5), V::splat(f64::NEG_INFINITY));
    let (vdi, vdj) = (V::splat(di), V::splat(dj));
    let step = V::splat(V::LANES as f64);
    let mut idx = indices::<V>(0);
    let mut acc = ArgMax::<V>::new();
    let mut t = 0;
    while t < body {
        let gp = g.as_mut_ptr().add(t);
        let gt = V::load(gp)
            .add(load_q::<V, T>(qi.as_ptr().add(t)).mul(vdi))
            .add(load_q::<V, T>(qj.as_ptr().add(t)).mul(vdj));
        gt.store(gp);
        let v = zero.sub(V::load(y.as_ptr().add(t)).mul(gt));
        let m = V::load(up.as_ptr().add(t)).gt(half);
        acc.keep(V::select(m, v, neg_inf), idx);
        idx = idx.add(step);
        t += V::LANES;
    }
    let (v, i) = acc.reduce();
    (v, i, body)
}

/// The second-order partner search of [`crate::solver::wss::best_partner`] over the
/// vector part: returns `(gmax2, best gain, its index, elements covered)`.
#[inline(always)]
pub(crate) unsafe fn best_partner<V: F64s, T: QValue>(
    s: &PartnerSearch<'_, T>,
) -> (f64, f64, usize, usize) {
    let (y, g, qd, low, qi) = (s.y, s.g, s.qd, s.low, s.qi);
    let n = y.len();
    let body = n - n % V::LANES;
    let (zero, half, neg_inf) = (V::splat(0.0), V::splat(0.5), V::splat(f64::NEG_INFINITY));
    let (vgmax, vtau, vqdi) = (V::splat(s.gmax), V::splat(s.tau), V::splat(s.qd_i));
    let two_yi = V::splat(2.0 * s.yi);
    let step = V::splat(V::LANES as f64);
    let mut idx = indices::<V>(0);
    let mut acc = ArgMax::<V>::new();
    let mut gmax2 = neg_inf;
    let mut t = 0;
    while t < body {
        let yt = V::load(y.as_ptr().add(t));
        let yg = yt.mul(V::load(g.as_ptr().add(t)));
        let in_low = V::load(low.as_ptr().add(t)).gt(half);
        let cand = V::select(in_low, yg, neg_inf);
        gmax2 = V::select(cand.gt(gmax2), cand, gmax2);
        let diff = vgmax.add(yg);
        // K_ii + K_tt − 2 K_it, with K_it = y_i y_t Q_it.
        let kit = two_yi.mul(yt).mul(load_q::<V, T>(qi.as_ptr().add(t)));
        let quad = vqdi.add(V::load(qd.as_ptr().add(t))).sub(kit);
        let quad = V::select(quad.gt(vtau), quad, vtau);
        let gain = diff.mul(diff).div(quad);
        let ok = V::and(in_low, diff.gt(zero));
        acc.keep(V::select(ok, gain, neg_inf), idx);
        idx = idx.add(step);
        t += V::LANES;
    }
    let mut lanes = [0.0f64; 8];
    gmax2.store(lanes.as_mut_ptr());
    let g2 = lanes[..V::LANES]
        .iter()
        .copied()
        .fold(f64::NEG_INFINITY, |a, b| if b > a { b } else { a });
    let (gain, j) = acc.reduce();
    (g2, gain, j, body)
}

/// The ν-dual's partner search over both label sets in one pass (index 0:
/// `y = +1`, 1: `y = −1`): each low-set variable is scored against its own
/// label set's working variable, whose column, violation and diagonal are
/// given per label set. Within a label set `y_i y_t = 1`, so the curvature
/// is `Q_ii + Q_tt − 2 Q_it`.
#[derive(Clone, Copy, Debug)]
pub struct PartnerSearchNu<'a, T: QValue = f32> {
    /// Labels `y_t`.
    pub y: &'a [f64],
    /// The gradient `G_t`.
    pub g: &'a [f64],
    /// The diagonal `Q_tt`.
    pub qd: &'a [f64],
    /// The low-set mask over both label sets (1.0 in the set, 0.0 out).
    pub low: &'a [f64],
    /// Column of each label set's working variable (a label set without
    /// one may repeat the other's column: its `gmax` is −∞).
    pub q: [&'a [T]; 2],
    /// Each label set's violation `−y_i G_i` (−∞ without a working variable).
    pub gmax: [f64; 2],
    /// Each label set's `Q_ii`.
    pub qd_i: [f64; 2],
    /// The floor of the curvature.
    pub tau: f64,
}

/// The vector part of [`crate::solver::wss::best_partners_nu`]: per label set,
/// `(gmax2, best gain, its index)`, and the elements covered.
#[inline(always)]
pub(crate) unsafe fn best_partners_nu<V: F64s, T: QValue>(
    s: &PartnerSearchNu<'_, T>,
) -> ([(f64, f64, usize); 2], usize) {
    let (y, g, qd, low) = (s.y, s.g, s.qd, s.low);
    let n = y.len();
    let body = n - n % V::LANES;
    let (zero, half, two) = (V::splat(0.0), V::splat(0.5), V::splat(2.0));
    let neg_inf = V::splat(f64::NEG_INFINITY);
    let vtau = V::splat(s.tau);
    let (gmax_p, gmax_n) = (V::splat(s.gmax[0]), V::splat(s.gmax[1]));
    let (qdi_p, qdi_n) = (V::splat(s.qd_i[0]), V::splat(s.qd_i[1]));
    let step = V::splat(V::LANES as f64);
    let mut idx = indices::<V>(0);
    let mut acc = [ArgMax::<V>::new(), ArgMax::<V>::new()];
    let mut gmax2 = [neg_inf, neg_inf];
    let mut t = 0;
    while t < body {
        let yt = V::load(y.as_ptr().add(t));
        let pos = yt.gt(zero);
        let neg = zero.gt(yt);
        let yg = yt.mul(V::load(g.as_ptr().add(t)));
        let in_low = V::load(low.as_ptr().add(t)).gt(half);
        let cand = V::select(in_low, yg, neg_inf);
        let cand_p = V::select(pos, cand, neg_inf);
        let cand_n = V::select(neg, cand, neg_inf);
        gmax2[0] = V::select(cand_p.gt(gmax2[0]), cand_p, gmax2[0]);
        gmax2[1] = V::select(cand_n.gt(gmax2[1]), cand_n, gmax2[1]);
        let diff = V::select(pos, gmax_p, gmax_n).add(yg);
        let q = V::select(
            pos,
            load_q::<V, T>(s.q[0].as_ptr().add(t)),
            load_q::<V, T>(s.q[1].as_ptr().add(t)),
        );
        let quad = V::select(pos, qdi_p, qdi_n)
            .add(V::load(qd.as_ptr().add(t)))
            .sub(two.mul(q));
        let quad = V::select(quad.gt(vtau), quad, vtau);
        let gain = V::select(
            V::and(in_low, diff.gt(zero)),
            diff.mul(diff).div(quad),
            neg_inf,
        );
        acc[0].keep(V::select(pos, gain, neg_inf), idx);
        acc[1].keep(V::select(neg, gain, neg_inf), idx);
        idx = idx.add(step);
        t += V::LANES;
    }
    let mut out = [(0.0, 0.0, 0); 2];
    for c in 0..2 {
        let mut lanes = [0.0f64; 8];
        gmax2[c].store(lanes.as_mut_ptr());
        let g2 = lanes[..V::LANES]
            .iter()
            .copied()
            .fold(f64::NEG_INFINITY, |a, b| if b > a { b } else { a });
        let (gain, j) = acc[c].reduce();
        out[c] = (g2, gain, j);
    }
    (out, body)
}

/// [`update_and_max_up`] with the arg-max taken per label set (index 0:
/// `y = +1`, 1: `y = −1`), for the ν-dual; returns both and the elements
/// covered.
#[inline(always)]
pub(crate) unsafe fn update_and_max_up_nu<V: F64s, T: QValue>(
    g: &mut [f64],
    step: GradientStep<'_, T>,
    y: &[f64],
    up: &[f64],
) -> ([(f64, usize); 2], usize) {
    let GradientStep { qi, qj, di, dj } = step;
    let n = g.len();
    let body = n - n % V::LANES;
    let (zero, half, neg_inf) = (V::splat(0.0), V::splat(0.5), V::splat(f64::NEG_INFINITY));
    let (vdi, vdj) = (V::splat(di), V::splat(dj));
    let step = V::splat(V::LANES as f64);
    let mut idx = indices::<V>(0);
    let mut acc = [ArgMax::<V>::new(), ArgMax::<V>::new()];
    let mut t = 0;
    while t < body {
        let gp = g.as_mut_ptr().add(t);
        let gt = V::load(gp)
            .add(load_q::<V, T>(qi.as_ptr().add(t)).mul(vdi))
            .add(load_q::<V, T>(qj.as_ptr().add(t)).mul(vdj));
        gt.store(gp);
        let yt = V::load(y.as_ptr().add(t));
        let v = zero.sub(yt.mul(gt));
        let m = V::load(up.as_ptr().add(t)).gt(half);
        let v = V::select(m, v, neg_inf);
        acc[0].keep(V::select(yt.gt(zero), v, neg_inf), idx);
        acc[1].keep(V::select(zero.gt(yt), v, neg_inf), idx);
        idx = idx.add(step);
        t += V::LANES;
    }
    ([acc[0].reduce(), acc[1].reduce()], body)
}
