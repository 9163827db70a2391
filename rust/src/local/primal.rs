//! The localized SVM's linear-kernel problems solved in the primal.
//!
//! With the linear kernel a local problem (boxes `c_i = C·σ_i`) is
//!
//! ```text
//! min_{w, b} ½‖w‖² + Σ c_i max(0, 1 − y_i (w·x_i + b)),
//! ```
//!
//! a convex problem in `d + 1` unknowns, whatever the number `n` of
//! examples. SMO works on its dual, two of the `n` multipliers at a time,
//! and needs a few hundred iterations of `O(n)` each when a query's boxes
//! move many multipliers from where the start put them. Here the hinge is
//! replaced by the Huber loss of width `δ` (quadratic for margins within
//! `δ` below 1, linear beyond):
//!
//! ```text
//! h_δ(t) = 0 (t ≤ 0),  t²/(2δ) (0 < t < δ),  t − δ/2 (t ≥ δ),   t = 1 − y_i (w·x_i + b),
//! ```
//!
//! whose dual is the SVM dual plus `(δ/2) Σ α_i²/c_i`, with
//! `α_i = c_i·h'_δ(t_i)` and `w = Σ α_i y_i x_i`. Newton's method on this
//! piecewise quadratic (Hessian `I_w + Σ_{0<t_i<δ} (c_i/δ) x̃_i x̃_iᵀ`,
//! `x̃ = (x, 1)`) ends when a full step leaves every example on the same
//! piece: the step is then the exact minimiser. Otherwise the step length is
//! the exact minimiser over `(0, 1]`, found by following the derivative
//! through the kinks of the examples the full step moves. Each step costs
//! one pass over the `n × d` features (the margins' changes), `O(n)` piece
//! tests, the rows of the examples whose multipliers change, and
//! `O((d + 1)²)` per example entering or leaving the quadratic piece: the
//! Hessian is factored (Cholesky) and inverted once, and the inverse then
//! follows those rank-one changes by the Sherman–Morrison formula (the
//! dense linear algebra is [`crate::numeric::dense`]'s). Before a
//! step that would end the solve, and after each recomputation of the
//! running sums (every [`REFRESH`] steps), the direction's residual is
//! checked against the Hessian and the direction refined, or the Hessian
//! factored afresh, so that drift in the tracked inverse costs time, never
//! accuracy. From a distant start two widths are used, a wide one (`0.1`)
//! for a few steps, then `δ = 0.45·tol`; from a neighbour's solution only
//! the second.
//!
//! At the exact Huber optimum the multipliers `α_i = c_i·clip(t_i/δ, 0, 1)`
//! satisfy `yᵀα = 0` and the SVM dual's stopping test of SMO (the maximal
//! violation `max_{I_up} −y_t G_t − min_{I_low} −y_t G_t`) is below `2δ`:
//! a free multiplier has `0 < t_i < δ`, and one at a bound has its margin on
//! the right side. The solver checks exactly that, on multipliers and a
//! gradient recomputed from the features, before it returns a solution; any
//! query it cannot certify (the step cap, a stalled line search, a
//! factorisation that fails) is left to SMO by the caller.
//!
//! The smoothing is the one of O. Chapelle, "Training a Support Vector
//! Machine in the Primal", Neural Computation 19(5), 2007, who solves the
//! primal by Newton's method; the exact stop on an unchanged piece is the
//! finite Newton method of S. S. Keerthi and D. DeCoste, "A Modified Finite
//! Newton Method for Fast Solution of Large Scale Linear SVMs", JMLR 6, 2005.

use crate::error::{try_filled, Result};
use crate::numeric::dense::{
    cholesky, cholesky_solve, dot, invert, matvec, rank_one, sherman_morrison,
};
use crate::numeric::simd::{fmadd64, multiversion};
use crate::runtime::control::Control;
use crate::solver::smo::rho_from;

/// The wide smoothing of the first stage, in margin units.
const FIRST_WIDTH: f64 = 0.1;
/// Newton steps of the first stage at most (it only brings the start near).
const FIRST_STEPS: u64 = 5;
/// The final width as a fraction of `tol`: the violation is below `2δ`.
const FINAL_WIDTH: f64 = 0.45;
/// Newton steps between recomputations of the running sums.
const REFRESH: u64 = 16;
/// Examples per block of [`affine`] (eight AVX2 registers of sums).
const BLOCK: usize = 32;
/// Kinks of the line search put in order at a time.
const KINK_BATCH: usize = 32;
/// Lanes of the reductions (an AVX-512 register, two AVX2 ones).
const LANES: usize = 8;
/// The Newton system's relative residual (see `Work::residual`) that a
/// direction from the tracked inverse must reach before a step that would
/// end the solve, and after a refresh.
const RESIDUAL: f64 = 1e-10;
/// Refinements of a direction from the tracked inverse at most.
const REFINEMENTS: usize = 2;

/// Training examples stored feature by feature (`data[k·stride + i]` is
/// feature `k` of example `i`; each feature is padded with zeros to a whole
/// number of [`BLOCK`]s), the layout of the solver's passes.
#[derive(Debug, Clone, Default)]
pub struct FeatureMajor {
    data: Vec<f64>,
    stride: usize,
    /// The same values row by row (`rows[i·d + k]`), for the passes that
    /// visit a few examples.
    rows: Vec<f64>,
    n: usize,
    d: usize,
}

impl FeatureMajor {
    /// The rows `idx` of the row-major `x` (`d` features each), or every
    /// row when `idx` is `None`. The `n·d` values are allocated checked.
    pub fn gather(x: &[f64], d: usize, idx: Option<&[usize]>) -> Result<Self> {
        let mut out = FeatureMajor::default();
        out.refill(x, d, idx)?;
        Ok(out)
    }

    /// Like [`FeatureMajor::gather`], reusing this buffer.
    pub fn refill(&mut self, x: &[f64], d: usize, idx: Option<&[usize]>) -> Result<()> {
        let n = match idx {
            Some(idx) => idx.len(),
            None if d == 0 => 0,
            None => x.len() / d,
        };
        let stride = n.div_ceil(BLOCK) * BLOCK;
        let lens = [stride.saturating_mul(d), n.saturating_mul(d)];
        for (buf, len) in [&mut self.data, &mut self.rows].into_iter().zip(lens) {
            if buf.len() < len {
                *buf = try_filled(
                    len,
                    0.0,
                    "the features of a local problem",
                    "use fewer training examples or a larger similarity_threshold",
                )?;
            }
            buf.truncate(len);
        }
        self.n = n;
        self.d = d;
        self.stride = stride;
        for t in 0..n {
            let i = idx.map_or(t, |idx| idx[t]);
            let row = &x[i * d..(i + 1) * d];
            self.rows[t * d..(t + 1) * d].copy_from_slice(row);
            for (k, &v) in row.iter().enumerate() {
                self.data[k * stride + t] = v;
            }
        }
        for k in 0..d {
            self.data[k * stride + n..(k + 1) * stride].fill(0.0);
        }
        Ok(())
    }

    /// Number of examples.
    pub fn n(&self) -> usize {
        self.n
    }

    /// Number of features.
    pub fn d(&self) -> usize {
        self.d
    }

    fn feature(&self, k: usize) -> &[f64] {
        &self.data[k * self.stride..k * self.stride + self.n]
    }

    /// Feature `k` with its zero padding.
    fn padded(&self, k: usize) -> &[f64] {
        &self.data[k * self.stride..(k + 1) * self.stride]
    }

    fn row(&self, i: usize) -> &[f64] {
        &self.rows[i * self.d..(i + 1) * self.d]
    }
}

multiversion! {
    /// `out[i] = b + Σ_k v[k]·x[k][i]` (`out` as long as `x` has examples),
    /// in blocks of [`BLOCK`] examples whose sums stay in registers while
    /// the features go by; the last block reads the zero padding.
    fn affine, fn affine_impl(x: &FeatureMajor, v: &[f64], b: f64, out: &mut [f64]) {
        let n = x.n();
        let (whole, last) = out[..n].as_chunks_mut::<BLOCK>();
        for (j, dst) in whole.iter_mut().enumerate() {
            *dst = block_sum::<FMA>(x, v, b, j * BLOCK);
        }
        if !last.is_empty() {
            let acc = block_sum::<FMA>(x, v, b, n - last.len());
            last.copy_from_slice(&acc[..last.len()]);
        }
    }
}

/// `b + Σ_k v[k]·x[k][start + l]` for the [`BLOCK`] examples from `start`
/// (padding included), the sums kept in registers.
#[inline(always)]
fn block_sum<const FMA: bool>(x: &FeatureMajor, v: &[f64], b: f64, start: usize) -> [f64; BLOCK] {
    let mut acc = [b; BLOCK];
    for (k, &vk) in v.iter().enumerate() {
        let xs: &[f64; BLOCK] = x.padded(k)[start..start + BLOCK]
            .try_into()
            .expect("a whole block");
        for l in 0..BLOCK {
            acc[l] = fmadd64::<FMA>(vk, xs[l], acc[l]);
        }
    }
    acc
}

multiversion! {
    /// `out[k] = Σ_i coef[i]·x[k][i]`, summed in [`LANES`] fixed lanes.
    fn transposed, fn transposed_impl(x: &FeatureMajor, coef: &[f64], out: &mut [f64]) {
        let (cc, ct) = coef.as_chunks::<LANES>();
        for (k, o) in out.iter_mut().enumerate() {
            let (xc, xt) = x.feature(k).as_chunks::<LANES>();
            let mut acc = [0.0f64; LANES];
            for (a, b) in cc.iter().zip(xc) {
                for l in 0..LANES {
                    acc[l] = fmadd64::<FMA>(a[l], b[l], acc[l]);
                }
            }
            let mut s = 0.0;
            for (a, b) in ct.iter().zip(xt) {
                s = fmadd64::<FMA>(*a, *b, s);
            }
            *o = acc.iter().sum::<f64>() + s;
        }
    }
}

multiversion! {
    /// `ay_i = y_i c_i clip(t_i·inv, 0, 1)` for every example; returns `Σ ay_i`.
    fn multipliers, fn multipliers_impl(
        t: &[f64],
        y: &[f64],
        c: &[f64],
        inv: f64,
        ay: &mut [f64],
    ) -> f64 {
        let n = t.len();
        let mut acc = [0.0f64; LANES];
        let (oc, ot) = ay[..n].as_chunks_mut::<LANES>();
        let (tc, tt) = t.as_chunks::<LANES>();
        let (yc, yt) = y[..n].as_chunks::<LANES>();
        let (cc, ct) = c[..n].as_chunks::<LANES>();
        for (((o, tv), yv), cv) in oc.iter_mut().zip(tc).zip(yc).zip(cc) {
            for l in 0..LANES {
                o[l] = cv[l] * (tv[l] * inv).clamp(0.0, 1.0) * yv[l];
                acc[l] += o[l];
            }
        }
        let mut sum = 0.0;
        for (((o, tv), yv), cv) in ot.iter_mut().zip(tt).zip(yt).zip(ct) {
            *o = cv * (tv * inv).clamp(0.0, 1.0) * yv;
            sum += *o;
        }
        acc.iter().sum::<f64>() + sum
    }
}

multiversion! {
    /// `e_i = y_i od_i` and `t1_i = t_i − e_i`; writes the examples the full
    /// step moves to another piece of the Huber loss of width `delta` to the
    /// front of `moved` (as long as `t`) and returns how many there are.
    fn directions, fn directions_impl(
        t: &[f64],
        y: &[f64],
        od: &[f64],
        delta: f64,
        e: &mut [f64],
        t1: &mut [f64],
        moved: &mut [u32],
    ) -> usize {
        let n = t.len();
        let (y, od, e, t1, moved) = (&y[..n], &od[..n], &mut e[..n], &mut t1[..n], &mut moved[..n]);
        // Elementwise first (vectorised), with a piece change recorded as
        // 1 in `moved`, then the moved examples' indices packed in front.
        for i in 0..n {
            let ei = y[i] * od[i];
            let after = t[i] - ei;
            e[i] = ei;
            t1[i] = after;
            moved[i] = (piece(t[i], delta) != piece(after, delta)) as u32;
        }
        let mut count = 0usize;
        for i in 0..n {
            let flag = moved[i];
            moved[count] = i as u32;
            count += flag as usize;
        }
        count
    }
}

/// A certified solution of one local problem.
#[derive(Debug, Clone)]
pub struct PrimalSolution {
    /// The dual multipliers, `0 ≤ α_i ≤ c_i`, `yᵀα = 0`.
    pub alpha: Vec<f64>,
    /// `ρ` as SMO computes it from the same multipliers: the decision
    /// function is `Σ α_i y_i K(x_i, x) − ρ`.
    pub rho: f64,
    /// `w = Σ α_i y_i x_i`.
    pub w: Vec<f64>,
    /// Newton steps taken.
    pub steps: u64,
}

/// What [`solve_primal`] ends with.
#[derive(Debug, Clone)]
pub enum PrimalOutcome {
    /// Certified: the dual stopping test holds for `tol`.
    Solved(PrimalSolution),
    /// Not certified; `alpha` is the last iterate's multipliers (within the
    /// boxes, `yᵀα` possibly off), a start for SMO.
    Unsolved { alpha: Vec<f64>, steps: u64 },
}

/// The piece of the Huber loss a margin `t` lies on.
#[inline(always)]
fn piece(t: f64, delta: f64) -> u8 {
    (t > 0.0) as u8 + (t >= delta) as u8
}

/// `m` rounded up to whole AVX2 registers (4 values).
fn padded(m: usize) -> usize {
    m.div_ceil(4) * 4
}

/// Scratch of one solve.
struct Work<'a> {
    x: &'a FeatureMajor,
    y: &'a [f64],
    c: &'a [f64],
    /// `(w, b)`.
    v: Vec<f64>,
    /// `t_i = 1 − y_i (w·x_i + b)`.
    t: Vec<f64>,
    /// `α_i y_i` of the current piece assignment.
    ay: Vec<f64>,
    /// `e_i = y_i x̃_i·dv` along the direction.
    e: Vec<f64>,
    /// `x̃_i·dv`.
    od: Vec<f64>,
    /// `t − e`.
    t1: Vec<f64>,
    grad: Vec<f64>,
    /// The Newton direction (`mp` values, zero beyond `m`).
    dv: Vec<f64>,
    /// The Hessian's Cholesky factor (`m × m`), when one is made.
    hess: Vec<f64>,
    /// The ridge added to the Hessian's last diagonal value when it was
    /// factored.
    ridge: f64,
    /// The inverse of that Hessian (`mp × mp`, zero beyond `m`), kept up
    /// to date through the zone's rank-one changes (Sherman–Morrison)
    /// while `inverse_ok`.
    inverse: Vec<f64>,
    inverse_ok: bool,
    /// Scratch: `inverse·x̃_i`; the Newton system's residual and its scale.
    z: Vec<f64>,
    resid: Vec<f64>,
    scale: Vec<f64>,
    /// Scratch: one example's `x̃` (`mp` values).
    xrow: Vec<f64>,
    zone: Vec<usize>,
    /// The line search's kinks: `(step, change of the slope)`.
    kinks: Vec<(f64, f64)>,
    /// Their order keys.
    keys: Vec<u64>,
    /// Examples the full step moves to another piece (the first ones).
    moved: Vec<u32>,
    /// `Σ α_i y_i x_i` and `Σ α_i y_i` of `ay`, kept up to date step by step.
    gsum: Vec<f64>,
    sum_ay: f64,
    /// Whether `ay`, the sums and the zone must be recomputed (new margins).
    fresh: bool,
    /// Scratch: the examples whose multiplier a step may have changed, and
    /// a mark per example (all false between steps) to list each once.
    touched: Vec<usize>,
    mark: Vec<bool>,
}

impl<'a> Work<'a> {
    /// Scratch for one solve from `v = (w, b)`.
    fn new(x: &'a FeatureMajor, y: &'a [f64], c: &'a [f64], v: Vec<f64>) -> Self {
        let (n, d) = (x.n(), x.d());
        let (m, mp) = (d + 1, padded(d + 1));
        Work {
            x,
            y,
            c,
            v,
            t: vec![0.0; n],
            ay: vec![0.0; n],
            e: vec![0.0; n],
            od: vec![0.0; n],
            t1: vec![0.0; n],
            grad: vec![0.0; mp],
            dv: vec![0.0; mp],
            hess: vec![0.0; m * m],
            ridge: 0.0,
            inverse: vec![0.0; mp * mp],
            inverse_ok: false,
            z: vec![0.0; mp],
            resid: vec![0.0; mp],
            scale: vec![0.0; m],
            xrow: vec![0.0; mp],
            zone: Vec::with_capacity(m),
            kinks: Vec::new(),
            keys: Vec::new(),
            moved: vec![0; n],
            gsum: vec![0.0; d],
            sum_ay: 0.0,
            fresh: true,
            touched: Vec::new(),
            mark: vec![false; n],
        }
    }

    fn dim(&self) -> usize {
        self.x.d() + 1
    }

    /// The stride of the inverse, [`padded`] `m`.
    fn padded_dim(&self) -> usize {
        padded(self.dim())
    }

    /// Margins from `v`, afresh.
    fn margins(&mut self) {
        let d = self.x.d();
        affine(self.x, &self.v[..d], self.v[d], &mut self.t);
        for (t, &y) in self.t.iter_mut().zip(self.y) {
            *t = 1.0 - y * *t;
        }
        self.fresh = true;
        // A new width (or the end): another Hessian.
        self.inverse_ok = false;
    }

    /// `α_i y_i`, `Σ α_i y_i x_i`, `Σ α_i y_i` and the zone, afresh for
    /// width `delta`: two passes over the examples.
    fn refresh(&mut self, delta: f64) {
        let (n, d) = (self.x.n(), self.x.d());
        self.sum_ay = multipliers(&self.t, self.y, self.c, 1.0 / delta, &mut self.ay);
        self.zone.clear();
        self.zone
            .extend((0..n).filter(|&i| self.t[i] > 0.0 && self.t[i] < delta));
        transposed(self.x, &self.ay, &mut self.gsum[..d]);
        self.fresh = false;
    }

    /// The gradient `(w − Σ α_i y_i x_i, −Σ α_i y_i)` from the running sums.
    fn gradient(&mut self) {
        let d = self.x.d();
        for k in 0..d {
            self.grad[k] = self.v[k] - self.gsum[k];
        }
        self.grad[d] = -self.sum_ay;
    }

    /// `x̃_i = (x_i, 1)` into `xrow`.
    fn load_row(&mut self, i: usize) {
        let d = self.x.d();
        self.xrow[..d].copy_from_slice(self.x.row(i));
        self.xrow[d] = 1.0;
    }

    /// The Hessian `I_w + Σ_zone (c_i/δ) x̃_i x̃_iᵀ` plus the ridge, factored,
    /// and its inverse; then `dv = −H⁻¹ grad` from the factor. Without a
    /// zone the loss is linear in b: the ridge keeps the system solvable,
    /// and the line search finds the step's length. False when the
    /// factorisation fails.
    fn factor_solve(&mut self, delta: f64) -> bool {
        let (d, m, mp) = (self.x.d(), self.dim(), self.padded_dim());
        let mut hess = std::mem::take(&mut self.hess);
        hess.fill(0.0);
        for k in 0..d {
            hess[k * m + k] = 1.0;
        }
        let mut curv = 0.0;
        for z in 0..self.zone.len() {
            let i = self.zone[z];
            let h = self.c[i] / delta;
            curv += h;
            self.load_row(i);
            rank_one(&mut hess, h, &self.xrow[..m]);
        }
        self.ridge = 1e-10 * (1.0 + curv);
        hess[m * m - 1] += self.ridge;
        let factored = cholesky(&mut hess, m);
        if factored {
            invert(&hess, m, mp, &mut self.inverse);
            for (v, g) in self.dv.iter_mut().zip(&self.grad) {
                *v = -g;
            }
        }
        let solved = factored && cholesky_solve(&hess, m, &mut self.dv);
        self.hess = hess;
        self.inverse_ok = solved;
        solved
    }

    /// `dv = −H⁻¹ grad` from the tracked inverse.
    fn inverse_solve(&mut self) {
        matvec(&self.inverse, &self.grad, &mut self.dv);
        for v in self.dv.iter_mut() {
            *v = -*v;
        }
    }

    /// Refines `dv` with the tracked inverse (`dv −= H⁻¹ r`, with the
    /// residual `r` of [`Work::residual`], left in `resid`) until the
    /// residual is small; false when [`REFINEMENTS`] refinements do not get
    /// there (the inverse has drifted too far from the Hessian).
    fn refine(&mut self, delta: f64) -> bool {
        let m = self.dim();
        for _ in 0..REFINEMENTS {
            matvec(&self.inverse, &self.resid, &mut self.z);
            for (v, z) in self.dv[..m].iter_mut().zip(&self.z) {
                *v -= z;
            }
            if self.residual(delta) {
                return true;
            }
        }
        false
    }

    /// `r = (H + ridge)·dv + grad` into `resid` (the zone's terms from its
    /// rows), and whether each of its entries is below [`RESIDUAL`] times the
    /// largest sum of the absolute values of an entry's terms.
    fn residual(&mut self, delta: f64) -> bool {
        let (d, m) = (self.x.d(), self.dim());
        let (resid, scale, dv) = (&mut self.resid, &mut self.scale, &self.dv);
        for k in 0..d {
            resid[k] = self.grad[k] + dv[k];
            scale[k] = self.grad[k].abs() + dv[k].abs();
        }
        resid[d] = self.grad[d] + self.ridge * dv[d];
        scale[d] = self.grad[d].abs() + (self.ridge * dv[d]).abs();
        for &i in &self.zone {
            let row = self.x.row(i);
            let a = self.c[i] / delta * (dot(row, &dv[..d]) + dv[d]);
            for ((r, s), &xk) in resid[..d].iter_mut().zip(&mut scale[..d]).zip(row) {
                *r += a * xk;
                *s += (a * xk).abs();
            }
            resid[d] += a;
            scale[d] += a.abs();
        }
        let worst = resid[..m].iter().fold(0.0f64, |w, r| w.max(r.abs()));
        let size = scale[..m].iter().fold(0.0f64, |w, s| w.max(*s));
        worst <= RESIDUAL * size
    }

    /// The inverse after the zone gains (`h > 0`) or loses (`h < 0`) the
    /// example in `xrow`: `(H + h x̃x̃ᵀ)⁻¹ = H⁻¹ − h z zᵀ/(1 + h x̃ᵀz)` with
    /// `z = H⁻¹x̃`. A denominator near 0 (an example leaving the zone took
    /// most of the curvature of some direction) would cancel badly: the
    /// inverse is then made afresh at the next step.
    fn track(&mut self, h: f64) {
        self.inverse_ok = sherman_morrison(&mut self.inverse, &self.xrow, h, &mut self.z);
    }

    /// The same after a step: only the examples that were in the zone or
    /// that the full step moved can have changed piece or multiplier (the
    /// others stayed at 0 or at their box), so only theirs are recomputed
    /// and their changes added to the sums.
    fn update_sums(&mut self, delta: f64, moved: usize) {
        let d = self.x.d();
        let mut touched = std::mem::take(&mut self.touched);
        touched.clear();
        let was_zone = self.zone.len();
        for i in self
            .zone
            .iter()
            .copied()
            .chain(self.moved[..moved].iter().map(|&i| i as usize))
        {
            if !self.mark[i] {
                self.mark[i] = true;
                touched.push(i);
            }
        }
        self.zone.clear();
        for (z, &i) in touched.iter().enumerate() {
            let t = self.t[i];
            let new = self.y[i] * self.c[i] * (t / delta).clamp(0.0, 1.0);
            let change = new - self.ay[i];
            if change != 0.0 {
                self.ay[i] = new;
                self.sum_ay += change;
                for (g, &xk) in self.gsum[..d].iter_mut().zip(self.x.row(i)) {
                    *g += change * xk;
                }
            }
            let in_zone = t > 0.0 && t < delta;
            if in_zone {
                self.zone.push(i);
            }
            // The Hessian follows the zone (the first `was_zone` touched
            // examples are the previous zone).
            if in_zone != (z < was_zone) && self.inverse_ok {
                let h = self.c[i] / delta;
                self.load_row(i);
                self.track(if in_zone { h } else { -h });
            }
            self.mark[i] = false;
        }
        self.touched = touched;
    }

    /// One Newton step at width `delta`; `Ok(true)` once the full step kept
    /// every example on its piece (the iterate is then the minimiser),
    /// `Ok(false)` after a line-searched step, `Err(())` when no progress
    /// can be made.
    fn step(&mut self, delta: f64) -> std::result::Result<bool, ()> {
        let d = self.x.d();
        let refreshed = self.fresh;
        if refreshed {
            self.refresh(delta);
        }
        self.gradient();
        // The Newton direction, from the tracked inverse when there is one.
        // Its accuracy is checked before a step that would end the solve
        // and after each refresh; where it falls short, and where there is
        // no inverse, the Hessian is factored afresh.
        // The Newton direction comes from the tracked inverse when there
        // is one. Before a step that would end the solve, and after each
        // refresh, it is refined to full accuracy; where the tracked inverse
        // cannot do that, and where there is none, the Hessian is factored
        // afresh.
        let mut tracked = self.inverse_ok;
        if tracked {
            self.inverse_solve();
        } else if !self.factor_solve(delta) {
            return Err(());
        }
        let n_moved = loop {
            affine(self.x, &self.dv[..d], self.dv[d], &mut self.od);
            let n_moved = directions(
                &self.t,
                self.y,
                &self.od,
                delta,
                &mut self.e,
                &mut self.t1,
                &mut self.moved,
            );
            if !tracked || !(n_moved == 0 || refreshed) || self.residual(delta) {
                break n_moved;
            }
            if !self.refine(delta) && !self.factor_solve(delta) {
                return Err(());
            }
            tracked = false;
        };
        let dv = std::mem::take(&mut self.dv);
        let same = n_moved == 0;
        let s = if same {
            1.0
        } else {
            let f0: f64 = self.grad.iter().zip(&dv).map(|(g, v)| g * v).sum();
            let dwdw: f64 = dv[..d].iter().map(|x| x * x).sum();
            let fp0 = dwdw
                + self
                    .zone
                    .iter()
                    .map(|&i| self.c[i] * self.e[i] * self.e[i])
                    .sum::<f64>()
                    / delta;
            let mut kinks = std::mem::take(&mut self.kinks);
            let mut keys = std::mem::take(&mut self.keys);
            let found = self.line_search(
                f0,
                fp0,
                &self.moved[..n_moved],
                delta,
                &mut kinks,
                &mut keys,
            );
            self.kinks = kinks;
            self.keys = keys;
            match found {
                Some(s) => s,
                None => {
                    self.dv = dv;
                    return Err(());
                }
            }
        };
        for (v, d) in self.v.iter_mut().zip(&dv) {
            *v += s * d;
        }
        if s == 1.0 {
            std::mem::swap(&mut self.t, &mut self.t1);
        } else {
            for (t, e) in self.t.iter_mut().zip(&self.e) {
                *t -= s * e;
            }
        }
        self.dv = dv;
        self.update_sums(delta, n_moved);
        Ok(same)
    }

    /// The minimiser of `φ(v + s·dv)` over `0 < s ≤ 1`. `φ'` is continuous,
    /// increasing and piecewise linear; its kinks are where an example's
    /// margin enters or leaves the quadratic piece, which only the examples
    /// in `moved` (those the full step moves to another piece) do within
    /// `[0, 1]`. From `φ'(0) = f0` and its slope `fp0` just after 0, the
    /// kinks are sorted and `φ'` is followed piece by piece to its root;
    /// when `φ'(1) ≤ 0` the full step is taken. No pass over all examples is
    /// needed. `None` when the direction does not descend.
    fn line_search(
        &self,
        f0: f64,
        fp0: f64,
        moved: &[u32],
        delta: f64,
        kinks: &mut Vec<(f64, f64)>,
        keys: &mut Vec<u64>,
    ) -> Option<f64> {
        if f0.is_nan() || f0 >= 0.0 {
            return None;
        }
        let inv = 1.0 / delta;
        // The kinks within [0, 1], kept without branches.
        kinks.clear();
        kinks.resize(2 * moved.len(), (0.0, 0.0));
        let mut count = 0;
        for &i in moved {
            let i = i as usize;
            let e = self.e[i];
            let (t, c) = (self.t[i], self.c[i]);
            let (a, b) = ((t - delta) / e, t / e);
            let (enter, leave) = if e > 0.0 { (a, b) } else { (b, a) };
            let jump = c * e * e * inv;
            // `+ 0.0` turns −0 into +0, for the ordering below.
            kinks[count] = (enter + 0.0, jump);
            count += (0.0..=1.0).contains(&enter) as usize;
            kinks[count] = (leave + 0.0, -jump);
            count += (0.0..=1.0).contains(&leave) as usize;
        }
        kinks.truncate(count);
        // The root usually comes after a few of the kinks: they are put in
        // order a batch of the earliest at a time, by integer keys. The bits
        // of a time in [0, 1] order as the time does; the kink's index
        // replaces the last `index_bits` of them, so times closer than
        // 2^index_bits units in the last place (relatively 3e-14 for a
        // hundred kinks) are taken in the order of their indices, which
        // moves the step by as little.
        let index_bits = usize::BITS - count.saturating_sub(1).leading_zeros();
        let mask = (1u64 << index_bits) - 1;
        keys.clear();
        keys.extend(
            kinks
                .iter()
                .enumerate()
                .map(|(k, &(b, _))| (b.to_bits() & !mask) | k as u64),
        );
        let (mut s, mut f, mut fp) = (0.0, f0, fp0);
        let mut next = 0;
        'walk: while next < keys.len() {
            let rest = &mut keys[next..];
            let take = rest.len().min(KINK_BATCH);
            if take < rest.len() {
                rest.select_nth_unstable(take - 1);
            }
            rest[..take].sort_unstable();
            for &key in &rest[..take] {
                let (b, jump) = kinks[(key & mask) as usize];
                let fb = f + fp * (b - s);
                if fb >= 0.0 {
                    break 'walk;
                }
                s = b;
                f = fb;
                fp += jump;
            }
            next += take;
        }
        if f + fp * (1.0 - s) <= 0.0 {
            return Some(1.0);
        }
        let root = if fp > 0.0 { s - f / fp } else { s };
        let root = root.clamp(s, 1.0);
        (root > 0.0 && root.is_finite()).then_some(root)
    }

    /// The multipliers of the current iterate at width `delta`.
    fn alpha(&self, delta: f64) -> Vec<f64> {
        self.t
            .iter()
            .zip(self.c)
            .map(|(&t, &c)| c * (t / delta).clamp(0.0, 1.0))
            .collect()
    }
}

/// Moves `α` (within its boxes) so that `yᵀα = 0`: the excess is taken off
/// the larger side's free multipliers, then added to the smaller side's
/// free ones, then taken off the larger side's others.
fn balance(alpha: &mut [f64], y: &[f64], c: &[f64]) {
    let r: f64 = alpha.iter().zip(y).map(|(a, y)| a * y).sum();
    if r == 0.0 {
        return;
    }
    let side = r.signum();
    let mut excess = r.abs();
    let n = alpha.len();
    let free = |a: f64, c: f64| a > 0.0 && a < c;
    for i in 0..n {
        if excess > 0.0 && y[i] == side && free(alpha[i], c[i]) {
            let take = alpha[i].min(excess);
            alpha[i] -= take;
            excess -= take;
        }
    }
    for i in 0..n {
        if excess > 0.0 && y[i] != side && free(alpha[i], c[i]) {
            let add = (c[i] - alpha[i]).min(excess);
            alpha[i] += add;
            excess -= add;
        }
    }
    for i in 0..n {
        if excess > 0.0 && y[i] == side && alpha[i] > 0.0 {
            let take = alpha[i].min(excess);
            alpha[i] -= take;
            excess -= take;
        }
    }
}

/// SMO's stopping test and `ρ` on `α`, with the gradient
/// `G_i = y_i (Σ_j α_j y_j x_j)·x_i − 1` recomputed from the features:
/// `(maximal violation, ρ, w = Σ_j α_j y_j x_j)`.
fn certify(x: &FeatureMajor, y: &[f64], c: &[f64], alpha: &[f64]) -> (f64, f64, Vec<f64>) {
    let (n, d) = (x.n(), x.d());
    let ay: Vec<f64> = alpha.iter().zip(y).map(|(a, y)| a * y).collect();
    let mut w = vec![0.0; d];
    transposed(x, &ay, &mut w);
    let mut f = vec![0.0; n];
    affine(x, &w, 0.0, &mut f);
    let (mut up, mut low) = (f64::NEG_INFINITY, f64::INFINITY);
    let (mut ub, mut lb) = (f64::INFINITY, f64::NEG_INFINITY);
    let (mut sum, mut free) = (0.0, 0usize);
    for i in 0..n {
        let g = y[i] * f[i] - 1.0;
        let v = -y[i] * g;
        let (a, pos) = (alpha[i], y[i] > 0.0);
        let at_upper = a >= c[i];
        let at_lower = a <= 0.0;
        // I_up: y = +1 below its box, or y = −1 above 0.
        if (pos && !at_upper) || (!pos && !at_lower) {
            up = up.max(v);
        }
        if (pos && !at_lower) || (!pos && !at_upper) {
            low = low.min(v);
        }
        let yg = y[i] * g;
        if !at_upper && !at_lower {
            free += 1;
            sum += yg;
        } else if (at_upper && !pos) || (at_lower && pos) {
            ub = ub.min(yg);
        } else {
            lb = lb.max(yg);
        }
    }
    (up - low, rho_from(sum, free, ub, lb), w)
}

/// Solves one local problem with the linear kernel (module docs).
///
/// `x` holds the problem's examples, `y` their ±1 labels (both classes
/// present), `c` their boxes (positive, finite); `start` is `(w, b)` to
/// start from (`d + 1` values) or `None` for zero; `near` says it is
/// close to the solution (a neighbour's local solution), so the wide first
/// stage, which would move it away, is skipped. At most `max_steps`
/// Newton steps are taken. `control` is polled every step.
pub fn solve_primal(
    x: &FeatureMajor,
    y: &[f64],
    c: &[f64],
    start: Option<&[f64]>,
    near: bool,
    tol: f64,
    max_steps: u64,
    control: &Control,
) -> Result<PrimalOutcome> {
    let (n, d) = (x.n(), x.d());
    debug_assert!(y.len() == n && c.len() == n);
    let m = d + 1;
    let v = match start {
        Some(s) if s.len() == m && s.iter().all(|v| v.is_finite()) => s.to_vec(),
        _ => vec![0.0; m],
    };
    let mut work = Work::new(x, y, c, v);
    work.margins();
    let last = FINAL_WIDTH * tol;
    let mut steps = 0u64;
    let mut stages: Vec<(f64, u64)> = Vec::with_capacity(2);
    if !near && FIRST_WIDTH > 4.0 * last {
        stages.push((FIRST_WIDTH, FIRST_STEPS));
    }
    stages.push((last, u64::MAX));
    let mut exact = false;
    'stages: for &(delta, cap) in &stages {
        work.margins();
        let mut taken = 0;
        while taken < cap {
            if steps >= max_steps {
                break 'stages;
            }
            control.check()?;
            steps += 1;
            taken += 1;
            // The running sums drift by rounding (much with huge boxes): they
            // are recomputed every REFRESH steps, and before giving up.
            if taken % REFRESH == 0 {
                work.fresh = true;
            }
            let fresh = work.fresh;
            match work.step(delta) {
                Ok(true) => {
                    exact = delta == last;
                    break;
                }
                Ok(false) => {}
                Err(()) if !fresh => {
                    work.fresh = true;
                    work.inverse_ok = false;
                }
                Err(()) => break 'stages,
            }
        }
    }
    // Multipliers from fresh margins: the iterate, not its running update.
    work.margins();
    let mut alpha = work.alpha(last);
    if !exact {
        return Ok(PrimalOutcome::Unsolved { alpha, steps });
    }
    balance(&mut alpha, y, c);
    let (violation, rho, w) = certify(x, y, c, &alpha);
    if violation <= tol && rho.is_finite() {
        Ok(PrimalOutcome::Solved(PrimalSolution {
            alpha,
            rho,
            w,
            steps,
        }))
    } else {
        Ok(PrimalOutcome::Unsolved { alpha, steps })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(n: usize, d: usize, seed: u64) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
        let mut u = crate::testing::uniform(seed);
        let mut next = move || u() * 2.0 - 1.0;
        let mut x = vec![0.0; n * d];
        let mut y = vec![0.0; n];
        for i in 0..n {
            let mut score = 0.0;
            for k in 0..d {
                let v = next();
                x[i * d + k] = v;
                score += v * (k as f64 + 1.0).recip();
            }
            y[i] = if score + 0.3 * next() > 0.0 {
                1.0
            } else {
                -1.0
            };
        }
        let c: Vec<f64> = (0..n).map(|_| 10.0 * (next() + 1.0) / 2.0 + 1e-4).collect();
        (x, y, c)
    }

    /// Solves `problem(n, d, seed)` from zero; asserts that the solution is
    /// certified and passes the dual test for `1e-3`.
    fn certified(
        n: usize,
        d: usize,
        seed: u64,
        near: bool,
    ) -> (PrimalSolution, Vec<f64>, Vec<f64>) {
        let (x, y, c) = problem(n, d, seed);
        let fm = FeatureMajor::gather(&x, d, None).unwrap();
        let out = solve_primal(&fm, &y, &c, None, near, 1e-3, 500, &Control::none()).unwrap();
        let PrimalOutcome::Solved(sol) = out else {
            panic!("seed {seed}: not certified");
        };
        let (viol, _, _) = certify(&fm, &y, &c, &sol.alpha);
        assert!(viol <= 1e-3, "seed {seed}: violation {viol}");
        (sol, y, c)
    }

    #[test]
    fn certified_solutions_pass_the_dual_test() {
        for seed in 0..20 {
            let (sol, y, c) = certified(300, 6, seed, false);
            let r: f64 = sol.alpha.iter().zip(&y).map(|(a, y)| a * y).sum();
            assert!(r.abs() < 1e-9, "yᵀα = {r}");
            for (a, c) in sol.alpha.iter().zip(&c) {
                assert!(*a >= 0.0 && *a <= *c);
            }
        }
    }

    #[test]
    fn long_line_searches_walk_past_a_batch_of_kinks() {
        // Thousands of examples from a zero start: the first steps move
        // hundreds of them, so the walk along the kinks goes on past the
        // first ordered batch.
        for seed in 0..3 {
            certified(3000, 3, seed, true);
        }
    }

    #[test]
    fn the_step_cap_leaves_the_problem_unsolved() {
        let (x, y, c) = problem(300, 6, 3);
        let fm = FeatureMajor::gather(&x, 6, None).unwrap();
        let out = solve_primal(&fm, &y, &c, None, false, 1e-3, 1, &Control::none()).unwrap();
        let PrimalOutcome::Unsolved { alpha, steps } = out else {
            panic!("one step cannot certify this problem");
        };
        assert_eq!(steps, 1);
        assert!(alpha.iter().zip(&c).all(|(a, c)| *a >= 0.0 && *a <= *c));
    }

    /// A symmetric positive definite `m × m` matrix: `I + Σ_k h_k u_k u_kᵀ`.
    fn spd(m: usize, seed: u64) -> Vec<f64> {
        let (u, _, h) = problem(m + 3, m, seed);
        let mut a = vec![0.0; m * m];
        for k in 0..m {
            a[k * m + k] = 1.0;
        }
        for (row, &hk) in u.chunks_exact(m).zip(&h) {
            rank_one(&mut a, hk * 100.0, row);
        }
        a
    }

    /// The inverse of `a` (`m × m`) by [`cholesky`] and [`invert`], in rows
    /// of `stride`.
    fn inverse_of(a: &[f64], m: usize, stride: usize) -> Vec<f64> {
        let mut l = a.to_vec();
        assert!(cholesky(&mut l, m));
        let mut out = vec![f64::NAN; stride * stride];
        invert(&l, m, stride, &mut out);
        out
    }

    fn assert_close(a: &[f64], b: &[f64], tol: f64) {
        let size = b.iter().fold(0.0f64, |s, v| s.max(v.abs()));
        for (x, y) in a.iter().zip(b) {
            assert!((x - y).abs() <= tol * size, "{x} against {y}");
        }
    }

    #[test]
    fn the_inverse_from_the_factor_inverts() {
        for (m, stride) in [(1, 4), (7, 8), (8, 8), (23, 24)] {
            let a = spd(m, m as u64);
            let inv = inverse_of(&a, m, stride);
            // Zero padding beyond m.
            for r in 0..stride {
                for c in 0..stride {
                    if r >= m || c >= m {
                        assert_eq!(inv[r * stride + c], 0.0);
                    }
                }
            }
            for r in 0..m {
                for c in 0..m {
                    let v: f64 = (0..m).map(|k| a[r * m + k] * inv[k * stride + c]).sum();
                    let want = if r == c { 1.0 } else { 0.0 };
                    assert!((v - want).abs() < 1e-10, "m {m}: (A A⁻¹)[{r}][{c}] = {v}");
                }
            }
        }
    }

    #[test]
    fn the_tracked_inverse_follows_rank_one_changes() {
        let m = 7;
        let a = spd(m, 11);
        let mut inv = inverse_of(&a, m, m);
        let (u, _, _) = problem(2, m, 12);
        let (u1, u2) = u.split_at(m);
        let mut z = vec![0.0; m];
        // Add two terms, then take one away: each step matches the inverse
        // of the changed matrix made afresh.
        let mut b = a.clone();
        for (u, h) in [(u1, 50.0), (u2, 3.0), (u1, -50.0)] {
            assert!(sherman_morrison(&mut inv, u, h, &mut z));
            rank_one(&mut b, h, u);
            assert_close(&inv, &inverse_of(&b, m, m), 1e-10);
        }
        // Taking away a term the matrix does not hold would make it
        // singular (or indefinite): refused, the inverse left as it was.
        let before = inv.clone();
        let mut big = u2.to_vec();
        big.iter_mut().for_each(|v| *v *= 1e3);
        assert!(!sherman_morrison(&mut inv, &big, -1.0, &mut z));
        assert_eq!(inv, before);
    }

    #[test]
    fn refinement_repairs_a_drifted_inverse_and_gives_up_on_a_wrong_one() {
        let (d, delta) = (6, 1.0);
        let (sol, y, c) = certified(300, d, 4, false);
        let (x, _, _) = problem(300, d, 4);
        let fm = FeatureMajor::gather(&x, d, None).unwrap();
        // Near the solution, with a wide zone: a Newton system of many
        // terms and a gradient that is not zero.
        let mut v = sol.w.clone();
        v.push(-sol.rho + 0.05);
        let mut work = Work::new(&fm, &y, &c, v);
        work.margins();
        work.refresh(delta);
        assert!(work.zone.len() > d, "a zone of {}", work.zone.len());
        work.gradient();
        assert!(work.factor_solve(delta));
        let exact = work.dv.clone();
        assert!(work.residual(delta));
        // Drift (a relative error of 1e-6 in every entry) is refined away.
        for v in work.inverse.iter_mut() {
            *v *= 1.0 + 1e-6;
        }
        work.inverse_solve();
        assert!(!work.residual(delta));
        assert!(work.refine(delta));
        assert_close(&work.dv, &exact, 1e-9);
        // A wrong inverse (three times too large) is not: the step would
        // factor the Hessian afresh.
        for v in work.inverse.iter_mut() {
            *v *= 3.0;
        }
        work.inverse_solve();
        assert!(!work.residual(delta));
        assert!(!work.refine(delta));
    }

    #[test]
    fn affine_reads_the_padding_of_a_partial_block() {
        for n in [1, 5, BLOCK - 1, BLOCK, BLOCK + 1, 3 * BLOCK + 7] {
            let d = 5;
            let (x, _, _) = problem(n, d, n as u64);
            let fm = FeatureMajor::gather(&x, d, None).unwrap();
            let v = [0.5, -1.0, 2.0, 0.25, -0.75];
            let mut out = vec![f64::NAN; n];
            affine(&fm, &v, 0.3, &mut out);
            for i in 0..n {
                let want: f64 = 0.3 + (0..d).map(|k| v[k] * x[i * d + k]).sum::<f64>();
                assert!((out[i] - want).abs() < 1e-12, "n {n}, example {i}");
            }
        }
    }

    #[test]
    fn gathered_rows_are_feature_major() {
        let x = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let fm = FeatureMajor::gather(&x, 2, Some(&[2, 0])).unwrap();
        assert_eq!((fm.n(), fm.d()), (2, 2));
        assert_eq!(fm.feature(0), &[5.0, 1.0]);
        assert_eq!(fm.feature(1), &[6.0, 2.0]);
    }
}
