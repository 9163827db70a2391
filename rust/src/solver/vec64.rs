//! Explicit `f64` vectors for the SMO selection loops, which compilers do not
//! vectorise on their own (arg-max folds with masks). One generic body per
//! loop (a [`VectorLoop`]), written against the small [`F64s`] trait, is
//! instantiated for AVX-512 (8 lanes) and AVX2 (4 lanes) inside functions
//! compiled for those instruction sets; [`vector_head`] picks one at run
//! time, and [`crate::solver::wss`] keeps a scalar version for the tails and
//! other processors.

#![allow(unsafe_op_in_unsafe_fn)]

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

#[cfg(target_arch = "x86_64")]
use crate::numeric::simd::{level, Level};
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

impl<'a, T: QValue> GradientStep<'a, T> {
    /// The step over the variables `a..b`.
    pub fn range(&self, a: usize, b: usize) -> Self {
        GradientStep {
            qi: &self.qi[a..b],
            qj: &self.qj[a..b],
            ..*self
        }
    }
}

/// What a partner search reads of every variable it scans.
#[derive(Clone, Copy, Debug)]
pub struct Scan<'a> {
    /// Labels `y_t`.
    pub y: &'a [f64],
    /// The gradient `G_t`.
    pub g: &'a [f64],
    /// The diagonal `Q_tt`.
    pub qd: &'a [f64],
    /// The low-set mask (1.0 in the set, 0.0 out).
    pub low: &'a [f64],
}

impl<'a> Scan<'a> {
    /// The variables `a..b`.
    pub fn range(&self, a: usize, b: usize) -> Self {
        Scan {
            y: &self.y[a..b],
            g: &self.g[a..b],
            qd: &self.qd[a..b],
            low: &self.low[a..b],
        }
    }
}

/// One search for the partner of the working variable `i`, over the
/// low-set; `Q`'s column holds `T` values (`f32` or `f64`).
#[derive(Clone, Copy, Debug)]
pub struct PartnerSearch<'a, T: QValue = f32> {
    /// The variables scanned.
    pub scan: Scan<'a>,
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

impl<'a, T: QValue> PartnerSearch<'a, T> {
    /// The search over the variables `a..b`.
    pub fn range(&self, a: usize, b: usize) -> Self {
        PartnerSearch {
            scan: self.scan.range(a, b),
            qi: &self.qi[a..b],
            ..*self
        }
    }
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

/// Implements [`F64s`] for `$name`, a wrapper of the vector type `$vec`
/// with mask type `$mask`, from the instruction set's intrinsics; `and` and
/// `select` come as closures over the masks and the raw vectors, as their
/// operand orders differ between the instruction sets.
macro_rules! f64s {
    (
        $name:ident($vec:ty), mask $mask:ty, lanes $lanes:literal,
        splat $splat:ident, load $load:ident, load_f32 $cvt:ident($load_ps:ident),
        store $store:ident, add $add:ident, sub $sub:ident, mul $mul:ident, div $div:ident,
        cmp $cmp:ident, and |$a:ident, $b:ident| $and:expr,
        select |$m:ident, $yes:ident, $no:ident| $select:expr $(,)?
    ) => {
        #[cfg(target_arch = "x86_64")]
        #[derive(Clone, Copy)]
        pub(crate) struct $name($vec);

        #[cfg(target_arch = "x86_64")]
        impl F64s for $name {
            type Mask = $mask;
            const LANES: usize = $lanes;
            #[inline(always)]
            unsafe fn splat(x: f64) -> Self {
                $name($splat(x))
            }
            #[inline(always)]
            unsafe fn load(p: *const f64) -> Self {
                $name($load(p))
            }
            #[inline(always)]
            unsafe fn load_f32(p: *const f32) -> Self {
                $name($cvt($load_ps(p)))
            }
            #[inline(always)]
            unsafe fn store(self, p: *mut f64) {
                $store(p, self.0)
            }
            #[inline(always)]
            unsafe fn add(self, o: Self) -> Self {
                $name($add(self.0, o.0))
            }
            #[inline(always)]
            unsafe fn sub(self, o: Self) -> Self {
                $name($sub(self.0, o.0))
            }
            #[inline(always)]
            unsafe fn mul(self, o: Self) -> Self {
                $name($mul(self.0, o.0))
            }
            #[inline(always)]
            unsafe fn div(self, o: Self) -> Self {
                $name($div(self.0, o.0))
            }
            #[inline(always)]
            unsafe fn gt(self, o: Self) -> Self::Mask {
                $cmp::<_CMP_GT_OQ>(self.0, o.0)
            }
            #[inline(always)]
            unsafe fn ge(self, o: Self) -> Self::Mask {
                $cmp::<_CMP_GE_OQ>(self.0, o.0)
            }
            #[inline(always)]
            unsafe fn and($a: Self::Mask, $b: Self::Mask) -> Self::Mask {
                $and
            }
            #[inline(always)]
            unsafe fn select($m: Self::Mask, $yes: Self, $no: Self) -> Self {
                let ($yes, $no) = ($yes.0, $no.0);
                $name($select)
            }
        }
    };
}

f64s! {
    Avx512(__m512d), mask __mmask8, lanes 8,
    splat _mm512_set1_pd, load _mm512_loadu_pd, load_f32 _mm512_cvtps_pd(_mm256_loadu_ps),
    store _mm512_storeu_pd, add _mm512_add_pd, sub _mm512_sub_pd, mul _mm512_mul_pd,
    div _mm512_div_pd, cmp _mm512_cmp_pd_mask, and |a, b| a & b,
    select |m, yes, no| _mm512_mask_blend_pd(m, no, yes),
}

f64s! {
    Avx2(__m256d), mask __m256d, lanes 4,
    splat _mm256_set1_pd, load _mm256_loadu_pd, load_f32 _mm256_cvtps_pd(_mm_loadu_ps),
    store _mm256_storeu_pd, add _mm256_add_pd, sub _mm256_sub_pd, mul _mm256_mul_pd,
    div _mm256_div_pd, cmp _mm256_cmp_pd, and |a, b| _mm256_and_pd(a, b),
    select |m, yes, no| _mm256_blendv_pd(no, yes, m),
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

/// The largest lane of `v`.
#[inline(always)]
unsafe fn lane_max<V: F64s>(v: V) -> f64 {
    let mut lanes = [0.0f64; 8];
    v.store(lanes.as_mut_ptr());
    lanes[..V::LANES]
        .iter()
        .copied()
        .fold(f64::NEG_INFINITY, |a, b| if b > a { b } else { a })
}

/// The vectors of a scan over `n` elements, in order: each one's offset `t`,
/// its lanes' indices `t, t + 1, …` (as `f64`) and the first index it sees
/// for the first time. After the whole vectors, when `n` is not a multiple
/// of the lanes (and at least one vector long), the last `LANES` elements
/// come as one more vector, overlapping the one before: an arg-max or a
/// max fold may see an element twice (the same candidate, so the same
/// answer), and a loop that writes skips the lanes below that first new
/// index. `body`, the elements covered, is where a scalar tail starts.
struct Sweep<V> {
    t: usize,
    n: usize,
    body: usize,
    idx: V,
    step: V,
}

impl<V: F64s> Sweep<V> {
    #[inline(always)]
    unsafe fn new(n: usize) -> Self {
        let mut lanes = [0.0f64; 8];
        for (l, slot) in lanes.iter_mut().enumerate() {
            *slot = l as f64;
        }
        Sweep {
            t: 0,
            n,
            body: if n < V::LANES { 0 } else { n },
            idx: V::load(lanes.as_ptr()),
            step: V::splat(V::LANES as f64),
        }
    }

    #[inline(always)]
    unsafe fn next(&mut self) -> Option<(usize, V, usize)> {
        if self.t + V::LANES <= self.n {
            let at = (self.t, self.idx, self.t);
            self.t += V::LANES;
            self.idx = self.idx.add(self.step);
            return Some(at);
        }
        if self.t >= self.body {
            return None;
        }
        // The rest, fewer than LANES elements: the last LANES.
        let (fresh, t) = (self.t, self.n - V::LANES);
        let idx = self.idx.sub(V::splat((fresh - t) as f64));
        self.t = self.n;
        Some((t, idx, fresh))
    }
}

/// `−y G` in the lanes whose up-set mask (at `up`) is set, −∞ in the others.
#[inline(always)]
unsafe fn up_violation<V: F64s>(y: V, g: V, up: *const f64) -> V {
    let in_up = V::load(up).gt(V::splat(0.5));
    let v = V::splat(0.0).sub(y.mul(g));
    V::select(in_up, v, V::splat(f64::NEG_INFINITY))
}

/// The gradient at `t` after `step` (`G + Q_i·di + Q_j·dj`, with `di` and
/// `dj` splat in `d`), stored back into `g`; lanes whose index (`idx`) is
/// below `fresh` were updated already (a [`Sweep`]'s overlapping last
/// vector) and keep their value.
#[inline(always)]
unsafe fn step_gradient<V: F64s, T: QValue>(
    g: &mut [f64],
    step: &GradientStep<'_, T>,
    (di, dj): (V, V),
    (t, idx, fresh): (usize, V, usize),
) -> V {
    let gp = g.as_mut_ptr().add(t);
    let old = V::load(gp);
    let mut gt = old
        .add(load_q::<V, T>(step.qi.as_ptr().add(t)).mul(di))
        .add(load_q::<V, T>(step.qj.as_ptr().add(t)).mul(dj));
    if fresh > t {
        gt = V::select(idx.ge(V::splat(fresh as f64)), gt, old);
    }
    gt.store(gp);
    gt
}

/// A selection loop's vector part, written once against [`F64s`] and run
/// for the processor's instruction set by [`vector_head`]; its output ends
/// with the elements it covered (the scalar tail starts there).
pub(crate) trait VectorLoop {
    type Out;
    /// # Safety
    /// Requires `V`'s instruction set, and slices of equal lengths.
    unsafe fn run<V: F64s>(self) -> Self::Out;
}

/// `l` run on AVX-512 or AVX2 inside a function compiled for it; `None` on
/// other processors (the caller's scalar loop then does all the work).
pub(crate) fn vector_head<L: VectorLoop>(l: L) -> Option<L::Out> {
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx512f,avx512vl,avx2,fma")]
        fn wide<L: VectorLoop>(l: L) -> L::Out {
            // SAFETY: compiled for AVX-512; the caller's slices have equal lengths.
            unsafe { l.run::<Avx512>() }
        }
        #[target_feature(enable = "avx2,fma")]
        fn narrow<L: VectorLoop>(l: L) -> L::Out {
            // SAFETY: compiled for AVX2; the caller's slices have equal lengths.
            unsafe { l.run::<Avx2>() }
        }
        match level() {
            // SAFETY: `level()` reports these features only when present.
            Level::Avx512 => Some(unsafe { wide(l) }),
            Level::Avx2 => Some(unsafe { narrow(l) }),
            Level::Baseline => None,
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = l;
        None
    }
}

/// `(max_{up} −y G, arg)` over `(y, g, up)`, masks `up` of 1.0 / 0.0.
pub(crate) struct MaxUp<'a>(pub &'a [f64], pub &'a [f64], pub &'a [f64]);

impl VectorLoop for MaxUp<'_> {
    type Out = (f64, usize, usize);
    #[inline(always)]
    unsafe fn run<V: F64s>(self) -> Self::Out {
        let MaxUp(y, g, up) = self;
        let mut sweep = Sweep::<V>::new(y.len());
        let mut acc = ArgMax::<V>::new();
        while let Some((t, idx, _)) = sweep.next() {
            let (yt, gt) = (V::load(y.as_ptr().add(t)), V::load(g.as_ptr().add(t)));
            acc.keep(up_violation(yt, gt, up.as_ptr().add(t)), idx);
        }
        let (v, i) = acc.reduce();
        (v, i, sweep.body)
    }
}

/// `G += Q_i·di + Q_j·dj` over `(g, step, y, up)`, then [`MaxUp`] of the
/// result.
pub(crate) struct UpdateMaxUp<'a, 'g, T: QValue>(
    pub &'g mut [f64],
    pub GradientStep<'a, T>,
    pub &'a [f64],
    pub &'a [f64],
);

impl<T: QValue> VectorLoop for UpdateMaxUp<'_, '_, T> {
    type Out = (f64, usize, usize);
    #[inline(always)]
    unsafe fn run<V: F64s>(self) -> Self::Out {
        let UpdateMaxUp(g, step, y, up) = self;
        let d = (V::splat(step.di), V::splat(step.dj));
        let mut sweep = Sweep::<V>::new(g.len());
        let mut acc = ArgMax::<V>::new();
        while let Some((t, idx, fresh)) = sweep.next() {
            let gt = step_gradient(g, &step, d, (t, idx, fresh));
            let yt = V::load(y.as_ptr().add(t));
            acc.keep(up_violation(yt, gt, up.as_ptr().add(t)), idx);
        }
        let (v, i) = acc.reduce();
        (v, i, sweep.body)
    }
}

/// A loop with its arg-max taken per label set (index 0: `y = +1`, 1:
/// `y = −1`), for the ν-dual; returns both and the elements covered.
pub(crate) struct ByLabel<L>(pub L);

impl<T: QValue> VectorLoop for ByLabel<UpdateMaxUp<'_, '_, T>> {
    type Out = ([(f64, usize); 2], usize);
    #[inline(always)]
    unsafe fn run<V: F64s>(self) -> Self::Out {
        let ByLabel(UpdateMaxUp(g, step, y, up)) = self;
        let (zero, neg_inf) = (V::splat(0.0), V::splat(f64::NEG_INFINITY));
        let d = (V::splat(step.di), V::splat(step.dj));
        let mut sweep = Sweep::<V>::new(g.len());
        let mut acc = [ArgMax::<V>::new(), ArgMax::<V>::new()];
        while let Some((t, idx, fresh)) = sweep.next() {
            let gt = step_gradient(g, &step, d, (t, idx, fresh));
            let yt = V::load(y.as_ptr().add(t));
            let v = up_violation(yt, gt, up.as_ptr().add(t));
            acc[0].keep(V::select(yt.gt(zero), v, neg_inf), idx);
            acc[1].keep(V::select(zero.gt(yt), v, neg_inf), idx);
        }
        ([acc[0].reduce(), acc[1].reduce()], sweep.body)
    }
}

/// The second-order partner search of [`crate::solver::wss::best_partner`]
/// over the vector part: `(gmax2, best gain, its index, elements covered)`.
impl<T: QValue> VectorLoop for &PartnerSearch<'_, T> {
    type Out = (f64, f64, usize, usize);
    #[inline(always)]
    unsafe fn run<V: F64s>(self) -> Self::Out {
        let s = self;
        let Scan { y, g, qd, low } = s.scan;
        let (zero, half, neg_inf) = (V::splat(0.0), V::splat(0.5), V::splat(f64::NEG_INFINITY));
        let (vgmax, vtau, vqdi) = (V::splat(s.gmax), V::splat(s.tau), V::splat(s.qd_i));
        let two_yi = V::splat(2.0 * s.yi);
        let mut sweep = Sweep::<V>::new(y.len());
        let mut acc = ArgMax::<V>::new();
        let mut gmax2 = neg_inf;
        while let Some((t, idx, _)) = sweep.next() {
            let yt = V::load(y.as_ptr().add(t));
            let yg = yt.mul(V::load(g.as_ptr().add(t)));
            let in_low = V::load(low.as_ptr().add(t)).gt(half);
            let cand = V::select(in_low, yg, neg_inf);
            gmax2 = V::select(cand.gt(gmax2), cand, gmax2);
            let diff = vgmax.add(yg);
            // K_ii + K_tt − 2 K_it, with K_it = y_i y_t Q_it.
            let kit = two_yi.mul(yt).mul(load_q::<V, T>(s.qi.as_ptr().add(t)));
            let quad = vqdi.add(V::load(qd.as_ptr().add(t))).sub(kit);
            let quad = V::select(quad.gt(vtau), quad, vtau);
            let gain = diff.mul(diff).div(quad);
            let ok = V::and(in_low, diff.gt(zero));
            acc.keep(V::select(ok, gain, neg_inf), idx);
        }
        let (gain, j) = acc.reduce();
        (lane_max(gmax2), gain, j, sweep.body)
    }
}

/// The ν-dual's partner search over both label sets in one pass (index 0:
/// `y = +1`, 1: `y = −1`): each low-set variable is scored against its own
/// label set's working variable, whose column, violation and diagonal are
/// given per label set. Within a label set `y_i y_t = 1`, so the curvature
/// is `Q_ii + Q_tt − 2 Q_it`.
#[derive(Clone, Copy, Debug)]
pub struct PartnerSearchNu<'a, T: QValue = f32> {
    /// The variables scanned (the low-set mask over both label sets).
    pub scan: Scan<'a>,
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

impl<'a, T: QValue> PartnerSearchNu<'a, T> {
    /// The search over the variables `a..b`.
    pub fn range(&self, a: usize, b: usize) -> Self {
        PartnerSearchNu {
            scan: self.scan.range(a, b),
            q: [&self.q[0][a..b], &self.q[1][a..b]],
            ..*self
        }
    }
}

/// The vector part of [`crate::solver::wss::best_partners_nu`]: per label
/// set, `(gmax2, best gain, its index)`, and the elements covered.
impl<T: QValue> VectorLoop for &PartnerSearchNu<'_, T> {
    type Out = ([(f64, f64, usize); 2], usize);
    #[inline(always)]
    unsafe fn run<V: F64s>(self) -> Self::Out {
        let s = self;
        let Scan { y, g, qd, low } = s.scan;
        let (zero, half, two) = (V::splat(0.0), V::splat(0.5), V::splat(2.0));
        let neg_inf = V::splat(f64::NEG_INFINITY);
        let vtau = V::splat(s.tau);
        let (gmax_p, gmax_n) = (V::splat(s.gmax[0]), V::splat(s.gmax[1]));
        let (qdi_p, qdi_n) = (V::splat(s.qd_i[0]), V::splat(s.qd_i[1]));
        let mut sweep = Sweep::<V>::new(y.len());
        let mut acc = [ArgMax::<V>::new(), ArgMax::<V>::new()];
        let mut gmax2 = [neg_inf, neg_inf];
        while let Some((t, idx, _)) = sweep.next() {
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
        }
        let mut out = [(0.0, 0.0, 0); 2];
        for c in 0..2 {
            let (gain, j) = acc[c].reduce();
            out[c] = (lane_max(gmax2[c]), gain, j);
        }
        (out, sweep.body)
    }
}
