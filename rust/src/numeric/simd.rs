//! Runtime choice of the instruction set for the hot loops, and the
//! arithmetic they share: fused multiply-add in `f32` and `f64`, a
//! vectorisable `exp`, and register-tiled `f64` column updates.
//!
//! The crate is compiled for the baseline x86-64 instruction set so a wheel
//! runs on any x86-64 machine. The few loops that dominate the run time are
//! written once as `#[inline(always)]` generic functions and instantiated by
//! [`multiversion!`] three times: for AVX-512, for AVX2 + FMA, and for the
//! baseline; [`level`] picks one at run time (the environment variable
//! `LOCALSVM_SIMD=baseline|avx2|avx512` can force a lower level, for tests).

use std::sync::OnceLock;

/// The instruction sets the hot loops are compiled for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    /// AVX-512 F/VL with AVX2 and FMA.
    Avx512,
    /// AVX2 with FMA.
    Avx2,
    /// Whatever the crate was compiled for (SSE2 on x86-64).
    Baseline,
}

/// The level used by this process, detected once.
pub fn level() -> Level {
    static LEVEL: OnceLock<Level> = OnceLock::new();
    *LEVEL.get_or_init(|| detect(std::env::var("LOCALSVM_SIMD").ok().as_deref()))
}

fn detect(forced: Option<&str>) -> Level {
    #[cfg(target_arch = "x86_64")]
    {
        let avx2 = is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma");
        let avx512 =
            avx2 && is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512vl");
        match forced {
            Some("baseline") => Level::Baseline,
            Some("avx2") if avx2 => Level::Avx2,
            _ if avx512 => Level::Avx512,
            _ if avx2 => Level::Avx2,
            _ => Level::Baseline,
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = forced;
        Level::Baseline
    }
}

/// From one body, defines the generic `$imp::<const FMA: bool>(args)` (the
/// body, inlined wherever it is called; `FMA` tells it whether fused
/// multiply-add is available, see [`fmadd`]) and the dispatcher `$name(args)`,
/// which runs the body compiled with AVX-512 or AVX2 + FMA when the CPU has
/// them, else the baseline build:
///
/// ```text
/// multiversion! {
///     /// Docs of the dispatcher.
///     pub fn name, fn name_impl(a: &[f32]) -> f32 { /* uses FMA */ }
/// }
/// ```
macro_rules! multiversion {
    (
        $(#[$meta:meta])*
        $vis:vis fn $name:ident, $ivis:vis fn $imp:ident($($arg:ident : $ty:ty),* $(,)?)
        $(-> $ret:ty)? $body:block
    ) => {
        #[inline(always)]
        $ivis fn $imp<const FMA: bool>($($arg: $ty),*) $(-> $ret)? $body

        $(#[$meta])*
        $vis fn $name($($arg: $ty),*) $(-> $ret)? {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f,avx512vl,avx2,fma")]
                fn wide($($arg: $ty),*) $(-> $ret)? {
                    $imp::<true>($($arg),*)
                }
                #[target_feature(enable = "avx2,fma")]
                fn narrow($($arg: $ty),*) $(-> $ret)? {
                    $imp::<true>($($arg),*)
                }
                match $crate::numeric::simd::level() {
                    // SAFETY: `level()` reports these features only when the
                    // CPU has them.
                    $crate::numeric::simd::Level::Avx512 => return unsafe { wide($($arg),*) },
                    $crate::numeric::simd::Level::Avx2 => return unsafe { narrow($($arg),*) },
                    $crate::numeric::simd::Level::Baseline => {}
                }
            }
            $imp::<false>($($arg),*)
        }
    };
}

pub(crate) use multiversion;

/// Defines `a·b + c` for one float type: fused when `FMA` (the caller was
/// compiled with FMA), else a plain multiply and add (a fused one would be a
/// slow library call).
macro_rules! fused_multiply_add {
    ($(#[$meta:meta])* $name:ident: $t:ty) => {
        $(#[$meta])*
        #[inline(always)]
        pub fn $name<const FMA: bool>(a: $t, b: $t, c: $t) -> $t {
            if FMA {
                a.mul_add(b, c)
            } else {
                a * b + c
            }
        }
    };
}

fused_multiply_add!(
    /// `a·b + c` in `f32`, fused when `FMA`.
    fmadd: f32
);
fused_multiply_add!(
    /// `a·b + c` in `f64`, fused when `FMA`.
    fmadd64: f64
);

/// Lanes of the `f64` tiles below: one AVX-512 register, two AVX2 ones.
const LANES: usize = 8;

/// `v += s · a`, lane by lane.
#[inline(always)]
fn axpy_lanes<const FMA: bool>(v: &mut [f64; LANES], s: f64, a: &[f64; LANES]) {
    for l in 0..LANES {
        v[l] = fmadd64::<FMA>(s, a[l], v[l]);
    }
}

/// `c −= Σ_j h[j] q[j]` for four columns `q` as long as `c`, in
/// tiles of eight rows that stay in registers.
#[inline(always)]
pub fn sub_4_columns<const FMA: bool>(q: [&[f64]; 4], h: [f64; 4], c: &mut [f64]) {
    let (q0, t0) = q[0].as_chunks::<LANES>();
    let (q1, t1) = q[1].as_chunks::<LANES>();
    let (q2, t2) = q[2].as_chunks::<LANES>();
    let (q3, t3) = q[3].as_chunks::<LANES>();
    let (cs, rest) = c.as_chunks_mut::<LANES>();
    let it = cs.iter_mut().zip(q0).zip(q1).zip(q2).zip(q3);
    for ((((v, x0), x1), x2), x3) in it {
        let mut w = *v;
        axpy_lanes::<FMA>(&mut w, -h[0], x0);
        axpy_lanes::<FMA>(&mut w, -h[1], x1);
        axpy_lanes::<FMA>(&mut w, -h[2], x2);
        axpy_lanes::<FMA>(&mut w, -h[3], x3);
        *v = w;
    }
    for (i, v) in rest.iter_mut().enumerate() {
        for (hj, tq) in h.iter().zip([t0, t1, t2, t3]) {
            *v = fmadd64::<FMA>(-hj, tq[i], *v);
        }
    }
}

/// `acc[s] += w · col[s]`, each product rounded, then added (no fused
/// multiply-add, so the sums are the same bits on every instruction set).
#[inline(always)]
pub fn add_scaled<T: Copy + Into<f64>>(acc: &mut [f64], w: f64, col: &[T]) {
    for (s, &x) in acc.iter_mut().zip(col) {
        *s += w * x.into();
    }
}

multiversion! {
    /// [`add_scaled`] over `f32` columns, compiled for the widest vector
    /// unit the CPU has (the same bits: no operation is fused or reordered).
    pub fn add_scaled_f32, fn add_scaled_f32_impl(acc: &mut [f64], w: f64, col: &[f32]) {
        add_scaled(acc, w, col)
    }
}

multiversion! {
    /// [`add_scaled`] over `f64` columns, compiled for the widest vector
    /// unit the CPU has (the same bits: no operation is fused or reordered).
    pub fn add_scaled_f64, fn add_scaled_f64_impl(acc: &mut [f64], w: f64, col: &[f64]) {
        add_scaled(acc, w, col)
    }
}

/// [`add_scaled`] for four columns in one pass over `acc`: the four
/// products are added to each `acc[s]` one after the other, in the order
/// given, as four passes would add them (the same bits), with `acc`
/// loaded and stored once instead of four times.
#[inline(always)]
pub fn add_scaled_4<T: Copy + Into<f64>>(acc: &mut [f64], w: [f64; 4], cols: [&[T]; 4]) {
    let n = acc.len();
    let (c0, c1, c2, c3) = (&cols[0][..n], &cols[1][..n], &cols[2][..n], &cols[3][..n]);
    for s in 0..n {
        let mut a = acc[s];
        a += w[0] * c0[s].into();
        a += w[1] * c1[s].into();
        a += w[2] * c2[s].into();
        a += w[3] * c3[s].into();
        acc[s] = a;
    }
}

/// The sum of `L` lanes (`L` a power of two), pairwise: each lane of the
/// lower half gets its partner of the upper half, halving until one is
/// left.
#[inline(always)]
pub fn sum_lanes<const L: usize>(mut acc: [f64; L]) -> f64 {
    let mut width = L;
    while width > 1 {
        width /= 2;
        for l in 0..width {
            acc[l] += acc[l + width];
        }
    }
    acc[0]
}

const LOG2E: f32 = std::f32::consts::LOG2_E;
// ln 2 split so that n·LN2_HI is exact for the |n| < 128 used here.
const LN2_HI: f32 = 0.693_359_4;
const LN2_LO: f32 = -2.121_944_4e-4;
// Adding 1.5·2²³ rounds to an integer held in the low mantissa bits.
const ROUND: f32 = 12_582_912.0;

/// `e^x` for `x ≤ 88`, accurate to a few units in the last place of `f32`,
/// written with arithmetic and bit operations only so loops over it
/// vectorise. Arguments below −87 return about 1.6e-38 instead of 0 (the
/// smallest normal `f32` is 1.2e-38).
#[inline(always)]
pub fn exp<const FMA: bool>(x: f32) -> f32 {
    let x = x.clamp(-87.0, 88.0);
    let shifted = x * LOG2E + ROUND;
    let n = shifted - ROUND;
    let n_int = shifted.to_bits().wrapping_sub(ROUND.to_bits());
    let r = fmadd::<FMA>(-n, LN2_LO, fmadd::<FMA>(-n, LN2_HI, x));
    // Taylor series to degree 7 on |r| ≤ ln2/2: truncation error < 1e-8.
    let mut p = 1.0 / 5040.0;
    p = fmadd::<FMA>(p, r, 1.0 / 720.0);
    p = fmadd::<FMA>(p, r, 1.0 / 120.0);
    p = fmadd::<FMA>(p, r, 1.0 / 24.0);
    p = fmadd::<FMA>(p, r, 1.0 / 6.0);
    p = fmadd::<FMA>(p, r, 0.5);
    p = fmadd::<FMA>(p, r, 1.0);
    p = fmadd::<FMA>(p, r, 1.0);
    let scale = f32::from_bits(n_int.wrapping_add(127) << 23);
    p * scale
}

/// Coefficients of `2^f` on `|f| ≤ 1/2`, degree 6, from the constant term
/// up (fitted to the least maximal relative error, 1.9e-9 before rounding
/// to `f32`).
const EXP2_POLY: [f32; 7] = [
    1.0,
    std::f32::consts::LN_2,
    0.240_226_46,
    0.055_503_286,
    0.009_618_489,
    0.001_339_993_1,
    0.000_153_458_11,
];

/// `2^x`, within about two units in the last place of `f32`, for
/// `−126 ≤ x ≤ 127` (clamped there: below, the smallest normal `f32`
/// instead of 0), with arithmetic and bit operations only so loops over it
/// vectorise. `e^{−γa}` is `2^{(−γ log₂e)·a}`: the kernel's scale and
/// `log₂e` fold into one factor, and the reduction `x − round(x)` is exact,
/// so the RBF kernel takes one multiply, a rounding, six multiply-adds and
/// the exponent's bits per value.
#[inline(always)]
pub fn exp2<const FMA: bool>(x: f32) -> f32 {
    let x = x.clamp(-126.0, 127.0);
    let shifted = x + ROUND;
    let n = shifted - ROUND;
    let n_int = shifted.to_bits().wrapping_sub(ROUND.to_bits());
    let f = x - n;
    let c = EXP2_POLY;
    let mut p = c[6];
    p = fmadd::<FMA>(p, f, c[5]);
    p = fmadd::<FMA>(p, f, c[4]);
    p = fmadd::<FMA>(p, f, c[3]);
    p = fmadd::<FMA>(p, f, c[2]);
    p = fmadd::<FMA>(p, f, c[1]);
    p = fmadd::<FMA>(p, f, c[0]);
    let scale = f32::from_bits(n_int.wrapping_add(127) << 23);
    p * scale
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The largest relative error of `got` (fused and not) against `want`
    /// on `[lo, hi]` in steps of `step`.
    fn worst_error(
        (lo, hi, step): (f32, f32, f32),
        got: impl Fn(f32) -> [f32; 2],
        want: impl Fn(f64) -> f64,
    ) -> f64 {
        let mut worst = 0.0f64;
        let mut x = lo;
        while x <= hi {
            let w = want(f64::from(x));
            for g in got(x) {
                worst = worst.max(((f64::from(g) - w) / w).abs());
            }
            x += step;
        }
        worst
    }

    #[test]
    fn exponentials_are_accurate() {
        let e = |x| [exp::<true>(x), exp::<false>(x)];
        let worst = worst_error((-87.0, 88.0, 0.0137), e, f64::exp);
        assert!(worst < 5e-7, "exp: worst relative error {worst}");
        let e2 = |x| [exp2::<true>(x), exp2::<false>(x)];
        let worst = worst_error((-126.0, 127.0, 0.0013), e2, f64::exp2);
        assert!(worst < 2.5e-7, "exp2: worst relative error {worst}");
        assert_eq!(exp::<false>(0.0), 1.0);
        assert!(exp::<false>(-1e30) < 2e-38);
        assert_eq!(exp2::<false>(0.0), 1.0);
        assert_eq!(exp2::<true>(-3.0), 0.125);
        assert_eq!(exp2::<false>(-1e30), f32::MIN_POSITIVE);
    }

    #[test]
    fn forced_levels() {
        assert_eq!(detect(Some("baseline")), Level::Baseline);
        assert!(matches!(
            detect(Some("avx2")),
            Level::Avx2 | Level::Baseline
        ));
    }
}
