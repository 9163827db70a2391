//! Small dense linear algebra on row-major `f64` matrices: the products,
//! rank-one updates, Cholesky factorisation, solves and inverses of the
//! `(d + 1)`-square Newton systems of [`crate::local::primal`]. The products
//! and rank-one updates have one build per instruction set
//! ([`crate::numeric::simd::multiversion`]).

use crate::numeric::simd::{fmadd64, multiversion};

/// A tracked inverse's update is refused by [`sherman_morrison`] (the
/// caller makes the inverse afresh) when its denominator is below this.
pub const MIN_DENOMINATOR: f64 = 1e-6;

multiversion! {
    /// `A += h·r rᵀ` on the whole `m × m` row-major `A` (`m = r.len()`).
    pub fn rank_one, fn rank_one_impl(a: &mut [f64], h: f64, r: &[f64]) {
        let m = r.len();
        for (dst, &ra) in a.chunks_exact_mut(m).zip(r) {
            let ha = h * ra;
            for (v, &rb) in dst.iter_mut().zip(r) {
                *v = fmadd64::<FMA>(ha, rb, *v);
            }
        }
    }
}

multiversion! {
    /// `out = A·v` for the `m × m` row-major `A` (`m = v.len()`), each row
    /// summed in four lanes.
    pub fn matvec, fn matvec_impl(a: &[f64], v: &[f64], out: &mut [f64]) {
        let m = v.len();
        let (vc, vt) = v.as_chunks::<4>();
        for (row, o) in a.chunks_exact(m).zip(out.iter_mut()) {
            let (rc, rt) = row.as_chunks::<4>();
            let mut acc = [0.0f64; 4];
            for (x, y) in rc.iter().zip(vc) {
                for l in 0..4 {
                    acc[l] = fmadd64::<FMA>(x[l], y[l], acc[l]);
                }
            }
            let mut s = (acc[0] + acc[2]) + (acc[1] + acc[3]);
            for (x, y) in rt.iter().zip(vt) {
                s = fmadd64::<FMA>(*x, *y, s);
            }
            *o = s;
        }
    }
}

/// `A⁻¹ ← (A + h·u uᵀ)⁻¹ = A⁻¹ − h z zᵀ/(1 + h uᵀz)`, `z = A⁻¹u`, on the
/// `m × m` row-major `inverse` (`m = u.len()`; `z` is scratch); false,
/// leaving `inverse` as it was, when the denominator is below
/// [`MIN_DENOMINATOR`] or not finite.
pub fn sherman_morrison(inverse: &mut [f64], u: &[f64], h: f64, z: &mut [f64]) -> bool {
    matvec(inverse, u, z);
    let denom = 1.0 + h * dot(u, z);
    let fine = denom > MIN_DENOMINATOR && denom.is_finite();
    if fine {
        rank_one(inverse, -h / denom, z);
    }
    fine
}

/// Overwrites the lower triangle of the symmetric positive definite `H`
/// (`m × m`) with its Cholesky factor `L` (`H = L Lᵀ`); false when a pivot
/// is not positive.
pub fn cholesky(h: &mut [f64], m: usize) -> bool {
    let h = &mut h[..m * m];
    for j in 0..m {
        let row_j = &mut h[j * m..(j + 1) * m];
        let s = row_j[j] - dot(&row_j[..j], &row_j[..j]);
        if !(s > 0.0 && s.is_finite()) {
            return false;
        }
        let l = s.sqrt();
        row_j[j] = l;
        let inv = 1.0 / l;
        let (upto, below) = h.split_at_mut((j + 1) * m);
        let row_j = &upto[j * m..j * m + j];
        for row_i in below.chunks_exact_mut(m) {
            row_i[j] = (row_i[j] - dot(&row_i[..j], row_j)) * inv;
        }
    }
    true
}

/// Solves `L Lᵀ z = r` in place with the factor of [`cholesky`]; false when
/// the solution is not finite.
pub fn cholesky_solve(l: &[f64], m: usize, r: &mut [f64]) -> bool {
    let r = &mut r[..m];
    for i in 0..m {
        let row = &l[i * m..i * m + i];
        r[i] = (r[i] - dot(row, &r[..i])) / l[i * m + i];
    }
    for i in (0..m).rev() {
        let mut s = r[i];
        for k in i + 1..m {
            s -= l[k * m + i] * r[k];
        }
        r[i] = s / l[i * m + i];
    }
    r.iter().all(|v| v.is_finite())
}

/// `out = (L Lᵀ)⁻¹ = L⁻ᵀ L⁻¹` from the factor of [`cholesky`]: all `m × m`
/// entries, in rows of `stride ≥ m` values (zero beyond `m`). The rows of
/// `M = L⁻¹` come by forward substitution, row by row
/// (`M_i = −(Σ_{k<i} L_ik M_k)/L_ii`, `M_ii = 1/L_ii`), then the sum of their
/// outer products.
pub fn invert(l: &[f64], m: usize, stride: usize, out: &mut [f64]) {
    let mut rows = vec![0.0; m * m];
    for i in 0..m {
        let (done, rest) = rows.split_at_mut(i * m);
        let row_i = &mut rest[..m];
        for k in 0..i {
            let lik = l[i * m + k];
            for (v, &mk) in row_i[..i].iter_mut().zip(&done[k * m..k * m + i]) {
                *v += lik * mk;
            }
        }
        let inv = 1.0 / l[i * m + i];
        for v in row_i[..i].iter_mut() {
            *v *= -inv;
        }
        row_i[i] = inv;
    }
    out[..stride * stride].fill(0.0);
    for k in 0..m {
        let row_k = &rows[k * m..k * m + k + 1];
        for (a, &mka) in row_k.iter().enumerate() {
            for (v, &mkb) in out[a * stride..a * stride + k + 1].iter_mut().zip(row_k) {
                *v += mka * mkb;
            }
        }
    }
}

/// `Σ a_k b_k` in four lanes.
#[inline]
pub fn dot(a: &[f64], b: &[f64]) -> f64 {
    let n = a.len().min(b.len());
    let (acc, tail) = super::lanes4(&a[..n], &b[..n], |x, y| x * y);
    (acc[0] + acc[2]) + (acc[1] + acc[3]) + tail
}
