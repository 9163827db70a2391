//! Sequential minimal optimisation for the C-SVC dual with per-variable boxes:
//!
//! ```text
//! min_α ½ αᵀQα + pᵀα   s.t.  yᵀα = const,  0 ≤ α_i ≤ U_i
//! ```
//!
//! The constant is whatever `yᵀα` is at the start point, so a feasible warm
//! start keeps its feasibility. The method follows Fan, Chen & Lin, "Working
//! set selection using second order information for training SVM" (JMLR 6,
//! 2005), as used in LIBSVM (Chang & Lin, ACM TIST 2011):
//!
//! * working pair by second-order selection (WSS2), with the curvature floored
//!   at [`TAU`] so indefinite kernels still make progress;
//! * the analytic two-variable update clipped to both boxes;
//! * stopping when the maximal KKT violation `m(α) − M(α)` is at most `tol`;
//! * shrinking of variables stuck at a bound, with the gradient of the shrunk
//!   variables rebuilt (from `Ḡ`, the contribution of variables at their upper
//!   bound) before the final optimality check.
//!
//! [`solve_nu`] solves the ν-duals of Schölkopf, Smola, Williamson & Bartlett
//! ("New support vector algorithms", Neural Computation 12, 2000) in LIBSVM's
//! form (Chang & Lin, ACM TIST 2011, §4.2; Chen, Lin & Schölkopf, "A tutorial
//! on ν-support vector machines", 2005): two equality constraints,
//! `Σ_{y_t=+1} α_t` and `Σ_{y_t=−1} α_t` each held at its start value, so a
//! working pair is taken from one label set, and the bias `ρ` and the margin
//! variable `r` come from the two label sets' free gradients.

use std::marker::PhantomData;
use std::sync::Arc;

use crate::error::{shape_error, value_error, Result};
use crate::precision::QValue;
use crate::runtime::control::Control;
use crate::runtime::team::Team;
use crate::solver::qmatrix::{ColumnSum, QMatrix};
use crate::solver::wss;

/// Rows from which the shrunk variables' gradient is rebuilt in blocks
/// ([`QMatrix::add_columns`]): where one column at a time is bound by
/// memory. Below it the cached columns make the column loops cheaper: the
/// blocks recompute every free column over the shrunk rows.
const BLOCKED_REBUILD_ROWS: usize = crate::solver::qmatrix::MEMORY_BOUND_ROWS;

/// Floor for the curvature `a_ij` of a working pair.
pub const TAU: f64 = 1e-12;

/// Active variables below which the per-iteration scans (the partner
/// search, the gradient update) stay on one thread even when the Hessian
/// offers a [`Team`]: below it, handing half over costs more than it saves.
/// (Lower in this crate's unit tests, so small problems exercise the split.)
pub const TEAM_SCAN_MIN: usize = if cfg!(test) { 256 } else { 8192 };

/// The team that shares the scans over `active` variables: `team` when it
/// runs and the scans are long enough ([`TEAM_SCAN_MIN`]), else none.
fn scan_team(team: Option<&Team>, active: usize) -> Option<&Team> {
    team.filter(|t| active >= TEAM_SCAN_MIN && t.engaged())
}

/// Iterations between shrinking passes, at most (LIBSVM's 1000; lower in
/// this crate's unit tests, so small problems shrink often).
pub const SHRINK_PERIOD: usize = if cfg!(test) { 100 } else { 1000 };

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Bound {
    Lower,
    Upper,
    Free,
}

/// How close to a bound, relative to the box, a free multiplier counts as
/// at the bound when `ρ` is computed ([`State::rho_bound`]): far above the
/// roundings SMO's steps leave (a few ulps of the box), far below any
/// distance at which a multiplier is free in the solution's terms.
pub const RHO_BOUND_SLACK: f64 = 1e-12;

/// LIBSVM's shrinking rule (Fan, Chen & Lin, JMLR 6, 2005; Chang & Lin,
/// ACM TIST 2, 2011, §5.1): a variable at a bound whose gradient lies beyond
/// the current maximal violations `up = max_{up} −y_t G_t` and
/// `low = max_{low} y_t G_t` cannot be in a violating pair now. `alpha` and
/// `upper` give the bound, as the solver classifies it.
#[inline]
pub(crate) fn can_shrink_at(alpha: f64, upper: f64, y: f64, g: f64, up: f64, low: f64) -> bool {
    shrinkable(State::bound_of(alpha, upper), y, g, up, low)
}

#[inline]
fn shrinkable(bound: Bound, y: f64, g: f64, up: f64, low: f64) -> bool {
    let yg = y * g;
    let positive = y > 0.0;
    match bound {
        // Only in the low set (y > 0) or only in the up set (y < 0).
        Bound::Upper => {
            if positive {
                -yg > up
            } else {
                yg > low
            }
        }
        Bound::Lower => {
            if positive {
                yg > low
            } else {
                -yg > up
            }
        }
        Bound::Free => false,
    }
}

/// What the solver returns, in the caller's variable order.
#[derive(Clone, Debug)]
pub struct SmoResult {
    pub alpha: Vec<f64>,
    /// Gradient `Qα + p` at the solution.
    pub gradient: Vec<f64>,
    /// `Ḡ = Σ_{t: α_t ≥ U_t} U_t Q_t` at the solution, as the solver kept
    /// it (empty from a solver that keeps none: the box-constrained one).
    pub grad_bar: Vec<f64>,
    pub rho: f64,
    pub objective: f64,
    pub n_iter: u64,
    pub converged: bool,
}

/// Per-variable arrays, indexed by position. `order[pos]` is the caller's
/// index of the variable at that position (positions move when shrinking
/// swaps variables).
struct State {
    y: Vec<f64>,
    p: Vec<f64>,
    upper: Vec<f64>,
    alpha: Vec<f64>,
    bound: Vec<Bound>,
    // `up[t]` = 1.0 when t may move to increase y_t α_t (else 0.0), `low[t]`
    // likewise for decreasing it. Derived from `bound` and `y`, kept as flat
    // `f64` masks for the vector loops.
    up: Vec<f64>,
    low: Vec<f64>,
    // The ν-dual's up-set of each label set (index 0: y = +1, 1: y = −1),
    // as the same masks, for its scans that start without a fused update
    // (its other scans read `up` and `low` with the labels). Empty for the
    // other duals.
    up_by: [Vec<f64>; 2],
    grad: Vec<f64>,
    grad_bar: Vec<f64>,
    // Changes to `grad_bar` not yet applied: the net weight of each
    // variable's column (by the caller's index), and the variables listed
    // once each. `grad_bar` is read only when the gradient of shrunk
    // variables is rebuilt, so the columns are added then, all at once
    // ([`Smo::apply_pending`]).
    pending: Vec<f64>,
    pending_listed: Vec<bool>,
    pending_list: Vec<usize>,
    qd: Vec<f64>,
    order: Vec<usize>,
}

impl State {
    fn bound_of(alpha: f64, upper: f64) -> Bound {
        if alpha >= upper {
            Bound::Upper
        } else if alpha <= 0.0 {
            Bound::Lower
        } else {
            Bound::Free
        }
    }

    /// The bound status of `t` as `ρ` reads it: a free multiplier within
    /// [`RHO_BOUND_SLACK`] of a bound (relative to its box) counts as at
    /// that bound. SMO's pair clipping can leave one some ulps inside its
    /// box when both of a pair's multipliers reach their bounds at once
    /// (its partner's value less a difference, rounded); counted free, that
    /// one alone would set `ρ` where every other multiplier is bounded
    /// (any `ρ` of an interval is then optimal), and which variable keeps
    /// the rounding depends on the order of the steps: a fit from zero and
    /// a solve started elsewhere (the next `C` of a path) gave the same
    /// multipliers different intercepts.
    fn rho_bound(&self, t: usize) -> Bound {
        match self.bound[t] {
            Bound::Free => {
                let slack = RHO_BOUND_SLACK * self.upper[t];
                if self.alpha[t] >= self.upper[t] - slack {
                    Bound::Upper
                } else if self.alpha[t] <= slack {
                    Bound::Lower
                } else {
                    Bound::Free
                }
            }
            bound => bound,
        }
    }

    /// Records the bound status of `t` and its up/low-set membership.
    fn set_bound(&mut self, t: usize, bound: Bound) {
        self.bound[t] = bound;
        let positive = self.y[t] > 0.0;
        let (up, low) = if positive {
            (bound != Bound::Upper, bound != Bound::Lower)
        } else {
            (bound != Bound::Lower, bound != Bound::Upper)
        };
        self.up[t] = f64::from(u8::from(up));
        self.low[t] = f64::from(u8::from(low));
        if !self.up_by[0].is_empty() {
            let (c, other) = if positive { (0, 1) } else { (1, 0) };
            self.up_by[c][t] = self.up[t];
            self.up_by[other][t] = 0.0;
        }
    }

    /// What a partner search reads of the first `active` variables.
    fn scan(&self, active: usize) -> wss::Scan<'_> {
        wss::Scan {
            y: &self.y[..active],
            g: &self.grad[..active],
            qd: &self.qd[..active],
            low: &self.low[..active],
        }
    }

    /// Variable `t` may move in the direction that increases `y_t α_t`.
    #[inline]
    fn in_up_set(&self, t: usize) -> bool {
        self.up[t] > 0.5
    }

    /// Variable `t` may move in the direction that decreases `y_t α_t`.
    #[inline]
    fn in_low_set(&self, t: usize) -> bool {
        self.low[t] > 0.5
    }

    fn swap(&mut self, i: usize, j: usize) {
        self.y.swap(i, j);
        self.p.swap(i, j);
        self.upper.swap(i, j);
        self.alpha.swap(i, j);
        self.bound.swap(i, j);
        self.up.swap(i, j);
        self.low.swap(i, j);
        for c in 0..2 {
            if !self.up_by[c].is_empty() {
                self.up_by[c].swap(i, j);
            }
        }
        self.grad.swap(i, j);
        self.grad_bar.swap(i, j);
        self.qd.swap(i, j);
        self.order.swap(i, j);
    }
}

/// The solver: the Hessian (columns of `T` values), the state, and the
/// shrinking bookkeeping.
struct Smo<'q, T: QValue, Q: QMatrix<T>> {
    q: &'q mut Q,
    // Polled per kernel column in the gradient loops and per iteration.
    ctl: &'q Control,
    value: PhantomData<T>,
    st: State,
    n: usize,
    active: usize,
    tol: f64,
    unshrunk: bool,
    // The maximal violator of the active set, when the last gradient update
    // already found it.
    next_up: Option<(f64, usize)>,
    // The ν-dual's: the maximal violator of each label set's active
    // up-set (index 0: y = +1, 1: y = −1), when the last gradient update
    // already found them.
    next_up_nu: Option<[(f64, usize); 2]>,
    // The maximal KKT violation `m(α) − M(α)` the last selection found.
    gap: f64,
    // The Hessian's two-thread team, shared for the scans over large active
    // sets ([`TEAM_SCAN_MIN`]).
    team: Option<Arc<Team>>,
    // The ν-dual: one equality constraint per label set ([`solve_nu`]).
    nu: bool,
}

impl<T: QValue, Q: QMatrix<T>> Smo<'_, T, Q> {
    fn init_gradient(&mut self) {
        let n = self.n;
        let st = &mut self.st;
        st.grad.copy_from_slice(&st.p);
        st.grad_bar.iter_mut().for_each(|g| *g = 0.0);
        for i in 0..n {
            if st.bound[i] == Bound::Lower {
                continue;
            }
            if self.ctl.is_cancelled() {
                return;
            }
            let a = st.alpha[i];
            let at_upper = st.bound[i] == Bound::Upper;
            let u = st.upper[i];
            let col = self.q.column(i, n);
            T::add_scaled_wide(&mut st.grad, a, col);
            if at_upper {
                T::add_scaled_wide(&mut st.grad_bar, u, col);
            }
        }
    }

    /// Second-order working-set selection. Returns `None` when the active
    /// variables satisfy the stopping condition.
    fn select(&mut self) -> Option<(usize, usize)> {
        if self.nu {
            return self.select_nu();
        }
        let active = self.active;
        let (gmax, i) = match self.next_up.take() {
            Some(found) => found,
            None => {
                let st = &self.st;
                wss::max_up(&st.y[..active], &st.grad[..active], &st.up[..active])
            }
        };
        if i == usize::MAX {
            return None;
        }
        let partner = self.partner(i, gmax);
        self.gap = gmax + partner.gmax2;
        if self.gap < self.tol {
            return None;
        }
        partner.j.map(|j| (i, j))
    }

    /// The second-order partner of `i` (whose violation is `gmax`) over the
    /// active low-set, on the two-thread team while enough variables are
    /// active.
    fn partner(&mut self, i: usize, gmax: f64) -> wss::Partner {
        let active = self.active;
        let col_i = self.q.column(i, active);
        let st = &self.st;
        let search = wss::PartnerSearch {
            scan: st.scan(active),
            qi: &col_i[..active],
            gmax,
            yi: st.y[i],
            qd_i: st.qd[i],
            tau: TAU,
        };
        match scan_team(self.team.as_deref(), active) {
            Some(team) => wss::best_partner_team(team, &search),
            None => wss::best_partner(&search),
        }
    }

    /// Maximal violations `(m(α), −M(α))` over the active set.
    fn violations(&self) -> (f64, f64) {
        let st = &self.st;
        let mut up = f64::NEG_INFINITY;
        let mut low = f64::NEG_INFINITY;
        for t in 0..self.active {
            let yg = st.y[t] * st.grad[t];
            if st.in_up_set(t) {
                up = up.max(-yg);
            }
            if st.in_low_set(t) {
                low = low.max(yg);
            }
        }
        (up, low)
    }

    /// The ν-dual's selection: within each label set, `i` maximises `−y_i G_i`
    /// over the up-set and the partner `j` is chosen by second-order gain
    /// over the same label set's low-set; the pair with the larger gain of
    /// the two label sets is returned. `None` when, in both label sets, the
    /// maximal violation is below `tol`.
    fn select_nu(&mut self) -> Option<(usize, usize)> {
        self.next_up = None;
        let active = self.active;
        // Max of −y G over each label set's up-set (found by the last
        // gradient update, or scanned now).
        let up = match self.next_up_nu.take() {
            Some(found) => found,
            None => {
                let st = &self.st;
                [0, 1].map(|c| {
                    wss::max_up(&st.y[..active], &st.grad[..active], &st.up_by[c][..active])
                })
            }
        };
        let gmax = [up[0].0, up[1].0];
        let best = [up[0].1, up[1].1];
        let found: [wss::Partner; 2] = match (best[0] != usize::MAX, best[1] != usize::MAX) {
            (false, false) => {
                // No up-set variable in either label set: only the
                // low-sets' maxima, for the stopping test.
                let st = &self.st;
                let mut gmax2 = [f64::NEG_INFINITY; 2];
                for t in 0..active {
                    if st.low[t] > 0.5 {
                        let c = usize::from(st.y[t] < 0.0);
                        gmax2[c] = gmax2[c].max(st.y[t] * st.grad[t]);
                    }
                }
                gmax2.map(|g2| wss::Partner {
                    gmax2: g2,
                    j: None,
                    gain: f64::NEG_INFINITY,
                })
            }
            (has_p, has_n) => {
                // Both label sets' partners in one pass; a label set
                // without a working variable (its gmax −∞, so no partner)
                // reads the other's column.
                let (ip, jn) = (
                    if has_p { best[0] } else { best[1] },
                    if has_n { best[1] } else { best[0] },
                );
                let (col_p, col_n) = if ip == jn {
                    let col = self.q.column(ip, active);
                    (col, col)
                } else {
                    self.q.pair(ip, jn, active)
                };
                let st = &self.st;
                let search = wss::PartnerSearchNu {
                    scan: st.scan(active),
                    q: [&col_p[..active], &col_n[..active]],
                    gmax,
                    qd_i: [st.qd[ip], st.qd[jn]],
                    tau: TAU,
                };
                match scan_team(self.team.as_deref(), active) {
                    Some(team) => wss::best_partners_nu_team(team, &search),
                    None => wss::best_partners_nu(&search),
                }
            }
        };
        // The pair with the larger gain of the two label sets; the later
        // label set wins ties.
        let mut pick = (f64::NEG_INFINITY, None::<usize>);
        for partner in &found {
            if partner.j.is_some() && partner.gain >= pick.0 {
                pick = (partner.gain, partner.j);
            }
        }
        self.gap = (gmax[0] + found[0].gmax2).max(gmax[1] + found[1].gmax2);
        if self.gap < self.tol {
            return None;
        }
        let j = pick.1?;
        Some((best[usize::from(self.st.y[j] < 0.0)], j))
    }

    /// [`Smo::violations`] per label set (index 0: `y = +1`, 1: `y = −1`).
    fn violations_by_label(&self) -> [(f64, f64); 2] {
        let st = &self.st;
        let mut out = [(f64::NEG_INFINITY, f64::NEG_INFINITY); 2];
        for t in 0..self.active {
            let c = usize::from(st.y[t] < 0.0);
            let yg = st.y[t] * st.grad[t];
            if st.in_up_set(t) {
                out[c].0 = out[c].0.max(-yg);
            }
            if st.in_low_set(t) {
                out[c].1 = out[c].1.max(yg);
            }
        }
        out
    }

    /// A variable at a bound whose gradient pushes it further into the bound
    /// than the current maximal violation cannot move again soon.
    fn can_shrink(&self, t: usize, up: f64, low: f64) -> bool {
        let st = &self.st;
        shrinkable(st.bound[t], st.y[t], st.grad[t], up, low)
    }

    fn shrink(&mut self) -> Result<()> {
        self.next_up = None;
        self.next_up_nu = None;
        // The ν-dual compares each variable with its own label set's
        // violations (its pairs never cross label sets).
        let by_label = if self.nu {
            self.violations_by_label()
        } else {
            let both = self.violations();
            [both, both]
        };
        let gap = (by_label[0].0 + by_label[0].1).max(by_label[1].0 + by_label[1].1);
        if !self.unshrunk && gap <= self.tol * 10.0 {
            // Close to the end: bring everything back once, so the final
            // iterations see the true gradient of every variable.
            self.unshrunk = true;
            self.reconstruct_gradient()?;
            self.active = self.n;
        }
        // Move shrinkable variables behind the active ones. The solver's own
        // arrays swap at once; the Hessian (data rows, cached columns) gets
        // the whole sequence in one batch.
        let mut swaps = Vec::new();
        let mut i = 0;
        let shrinkable = |s: &Self, t: usize| {
            let (up, low) = by_label[usize::from(s.st.y[t] < 0.0)];
            s.can_shrink(t, up, low)
        };
        while i < self.active {
            if shrinkable(self, i) {
                self.active -= 1;
                while self.active > i {
                    if !shrinkable(self, self.active) {
                        self.st.swap(i, self.active);
                        swaps.push((i, self.active));
                        break;
                    }
                    self.active -= 1;
                }
            }
            i += 1;
        }
        if !swaps.is_empty() {
            self.q.swap_indices(&swaps);
        }
        Ok(())
    }

    /// Adds the pending columns to `Ḡ` (see [`State::pending`]): in blocks
    /// when the Hessian can ([`QMatrix::add_columns`]), else one full
    /// column each. Net weights that cancelled (a variable that left its
    /// upper bound and came back) cost nothing.
    fn apply_pending(&mut self) -> Result<()> {
        let st = &mut self.st;
        if st.pending_list.is_empty() {
            return Ok(());
        }
        let mut position = vec![0usize; self.n];
        for (pos, &orig) in st.order.iter().enumerate() {
            position[orig] = pos;
        }
        let (mut cols, mut weights) = (Vec::new(), Vec::new());
        for &orig in &st.pending_list {
            let w = std::mem::take(&mut st.pending[orig]);
            st.pending_listed[orig] = false;
            if w != 0.0 {
                cols.push(position[orig]);
                weights.push(w);
            }
        }
        st.pending_list.clear();
        let sum = ColumnSum {
            cols: &cols,
            w: &weights,
            from: 0,
        };
        if self.q.add_columns(sum, &mut st.grad_bar, self.ctl)? {
            return Ok(());
        }
        for (&t, &w) in cols.iter().zip(&weights) {
            self.ctl.check()?;
            T::add_scaled_wide(&mut st.grad_bar, w, self.q.column(t, self.n));
        }
        Ok(())
    }

    /// Rebuilds the gradient of the shrunk variables: `G = Ḡ + p + Σ_free α_t Q_t`.
    fn reconstruct_gradient(&mut self) -> Result<()> {
        let (n, active) = (self.n, self.active);
        if active == n {
            return Ok(());
        }
        self.apply_pending()?;
        let st = &mut self.st;
        for t in active..n {
            st.grad[t] = st.grad_bar[t] + st.p[t];
        }
        let free: Vec<usize> = (0..active)
            .filter(|&t| st.bound[t] == Bound::Free)
            .collect();
        // From BLOCKED_REBUILD_ROWS rows, in blocks where the Hessian can
        // (the free columns over the shrunk rows only); else pick the loop
        // that touches fewer kernel entries.
        if n >= BLOCKED_REBUILD_ROWS {
            let weights: Vec<f64> = free.iter().map(|&t| st.alpha[t]).collect();
            let shrunk = &mut st.grad[active..n];
            let sum = ColumnSum {
                cols: &free,
                w: &weights,
                from: active,
            };
            if self.q.add_columns(sum, shrunk, self.ctl)? {
                return Ok(());
            }
        }
        if free.len() * n > 2 * active * (n - active) {
            for i in active..n {
                self.ctl.check()?;
                let col = self.q.column(i, active);
                let acc: f64 = free.iter().map(|&t| st.alpha[t] * col[t].to_f64()).sum();
                st.grad[i] += acc;
            }
        } else {
            for &t in &free {
                self.ctl.check()?;
                let a = st.alpha[t];
                let col = self.q.column(t, n);
                T::add_scaled_wide(&mut st.grad[active..n], a, &col[active..n]);
            }
        }
        Ok(())
    }

    /// The analytic update of the pair `(i, j)`, then the gradient update.
    fn update_pair(&mut self, i: usize, j: usize) {
        let (n, active) = (self.n, self.active);
        let st = &mut self.st;
        let (ci, cj) = (st.upper[i], st.upper[j]);
        let (old_i, old_j) = (st.alpha[i], st.alpha[j]);
        let (col_i, col_j) = self.q.pair(i, j, active);
        let q_ij = col_i[j].to_f64();
        let (ai, aj) = if st.y[i] != st.y[j] {
            let quad = (st.qd[i] + st.qd[j] + 2.0 * q_ij).max(TAU);
            let delta = (-st.grad[i] - st.grad[j]) / quad;
            clip_opposite(old_i + delta, old_j + delta, old_i - old_j, ci, cj)
        } else {
            let quad = (st.qd[i] + st.qd[j] - 2.0 * q_ij).max(TAU);
            let delta = (st.grad[i] - st.grad[j]) / quad;
            clip_same(old_i - delta, old_j + delta, old_i + old_j, ci, cj)
        };
        let (di, dj) = (ai - old_i, aj - old_j);
        st.alpha[i] = ai;
        st.alpha[j] = aj;
        let (was_i, was_j) = (st.bound[i], st.bound[j]);
        st.set_bound(i, State::bound_of(ai, ci));
        st.set_bound(j, State::bound_of(aj, cj));
        let step = wss::GradientStep {
            qi: &col_i[..active],
            qj: &col_j[..active],
            di,
            dj,
        };
        let (g, y, up) = (&mut st.grad[..active], &st.y[..active], &st.up[..active]);
        let team = scan_team(self.team.as_deref(), active);
        if self.nu {
            self.next_up_nu = Some(match team {
                Some(team) => wss::update_and_max_up_nu_team(team, g, step, y, up),
                None => wss::update_and_max_up_nu(g, step, y, up),
            });
        } else {
            self.next_up = Some(match team {
                Some(team) => wss::update_and_max_up_team(team, g, step, y, up),
                None => wss::update_and_max_up(g, step, y, up),
            });
        }
        // Ḡ = Σ_{t at upper} U_t Q_t changes by ±U_t Q_t. The pair's
        // columns are held to `active` entries: while most variables are
        // active the rest of the column costs little and is added now;
        // otherwise the change is recorded and added, in blocks, when Ḡ is
        // next read ([`Smo::apply_pending`]; the blocked values cost about
        // half as much as a column's, so half-active is where the two
        // meet).
        for (t, was, c) in [(i, was_i, ci), (j, was_j, cj)] {
            let now = st.bound[t];
            if (was == Bound::Upper) != (now == Bound::Upper) {
                let weight = if now == Bound::Upper { c } else { -c };
                if 2 * active >= n {
                    T::add_scaled_wide(&mut st.grad_bar, weight, self.q.column(t, n));
                    continue;
                }
                let orig = st.order[t];
                if !st.pending_listed[orig] {
                    st.pending_listed[orig] = true;
                    st.pending_list.push(orig);
                }
                st.pending[orig] += weight;
            }
        }
    }

    /// ρ: the mean of `y_t G_t` over free variables, or the middle of the
    /// interval the bounded variables allow when none is free.
    fn rho(&self) -> f64 {
        let st = &self.st;
        let mut ub = f64::INFINITY;
        let mut lb = f64::NEG_INFINITY;
        let mut sum = 0.0;
        let mut free = 0usize;
        for t in 0..self.active {
            let yg = st.y[t] * st.grad[t];
            let positive = st.y[t] > 0.0;
            match st.rho_bound(t) {
                Bound::Free => {
                    free += 1;
                    sum += yg;
                }
                Bound::Upper if !positive => ub = ub.min(yg),
                Bound::Lower if positive => ub = ub.min(yg),
                _ => lb = lb.max(yg),
            }
        }
        rho_from(sum, free, ub, lb)
    }

    /// The ν-dual's `(ρ, r)`: with `r₊` and `r₋` each label set's own
    /// threshold on `G` (the mean over its free variables, else the middle
    /// of the interval its bounded variables allow), `ρ = (r₊ − r₋)/2` and
    /// `r = (r₊ + r₋)/2`.
    fn rho_nu(&self) -> (f64, f64) {
        let st = &self.st;
        let mut ub = [f64::INFINITY; 2];
        let mut lb = [f64::NEG_INFINITY; 2];
        let mut sum = [0.0; 2];
        let mut free = [0usize; 2];
        for t in 0..self.active {
            let c = usize::from(st.y[t] < 0.0);
            let g = st.grad[t];
            match st.rho_bound(t) {
                Bound::Free => {
                    free[c] += 1;
                    sum[c] += g;
                }
                Bound::Upper => lb[c] = lb[c].max(g),
                Bound::Lower => ub[c] = ub[c].min(g),
            }
        }
        let r1 = rho_from(sum[0], free[0], ub[0], lb[0]);
        let r2 = rho_from(sum[1], free[1], ub[1], lb[1]);
        (0.5 * (r1 - r2), 0.5 * (r1 + r2))
    }
}

/// `ρ` from `sum`, the sum of `y_t G_t` over the `free` free variables (their
/// mean), or, with none free, the middle of `[lb, ub]`, the interval the
/// bounded variables allow (an infinite end is left out; 0 when both are).
pub fn rho_from(sum: f64, free: usize, ub: f64, lb: f64) -> f64 {
    if free > 0 {
        sum / free as f64
    } else {
        match (ub.is_finite(), lb.is_finite()) {
            (true, true) => 0.5 * (ub + lb),
            (true, false) => ub,
            (false, true) => lb,
            (false, false) => 0.0,
        }
    }
}

/// Clips a step on a pair with `y_i ≠ y_j` (so `α_i − α_j = diff` is kept)
/// back into `[0, ci] × [0, cj]`.
fn clip_opposite(mut ai: f64, mut aj: f64, diff: f64, ci: f64, cj: f64) -> (f64, f64) {
    if diff > 0.0 {
        if aj < 0.0 {
            aj = 0.0;
            ai = diff;
        }
    } else if ai < 0.0 {
        ai = 0.0;
        aj = -diff;
    }
    if diff > ci - cj {
        if ai > ci {
            ai = ci;
            aj = ci - diff;
        }
    } else if aj > cj {
        aj = cj;
        ai = cj + diff;
    }
    (ai, aj)
}

/// Clips a step on a pair with `y_i = y_j` (so `α_i + α_j = sum` is kept)
/// back into `[0, ci] × [0, cj]`.
fn clip_same(ai: f64, aj: f64, sum: f64, ci: f64, cj: f64) -> (f64, f64) {
    let (ai, aj) = clip_same_to(ai, aj, sum, ci);
    let (aj, ai) = clip_same_to(aj, ai, sum, cj);
    (ai, aj)
}

/// One side of [`clip_same`]: when `sum > c`, caps `a` at `c`; otherwise
/// lifts `b` to 0. The partner takes what keeps `a + b = sum`.
fn clip_same_to(a: f64, b: f64, sum: f64, c: f64) -> (f64, f64) {
    if sum > c {
        if a > c {
            return (c, sum - c);
        }
    } else if b < 0.0 {
        return (sum, 0.0);
    }
    (a, b)
}

/// The dual SMO solves, `min ½ αᵀQα + pᵀα` with `0 ≤ α ≤ upper` and `yᵀα`
/// held at its start value, from the feasible start `alpha`: one entry per
/// variable in each, `y ∈ {−1, +1}`, `0 ≤ alpha ≤ upper`, `upper > 0`.
#[derive(Clone, Copy, Debug)]
pub struct Dual<'a> {
    pub p: &'a [f64],
    pub y: &'a [f64],
    pub upper: &'a [f64],
    pub alpha: &'a [f64],
}

/// Solves the equality-constrained `dual` from its feasible start.
///
/// `q` may be any [`QMatrix`], of `f32` or `f64` columns (the gradient
/// and `α` are `f64` either way). Returns after at most `max_iter` pair
/// updates, with `converged = false` if that limit stopped it, or with
/// [`crate::Error::Interrupted`] soon after `ctl` is cancelled (it is
/// polled once per iteration and per kernel column).
pub fn solve<T: QValue, Q: QMatrix<T>>(
    q: &mut Q,
    dual: &Dual<'_>,
    stop: &Stopping<'_>,
) -> Result<SmoResult> {
    solve_from(q, dual, None, stop)
}

/// When SMO stops, and what it polls: the tolerance `tol` on the maximal
/// KKT violation, the cap `max_iter` on pair updates, whether it shrinks,
/// and the control `ctl` polled once per iteration and per kernel column.
#[derive(Clone, Copy)]
pub struct Stopping<'a> {
    pub tol: f64,
    pub max_iter: u64,
    pub shrinking: bool,
    pub ctl: &'a Control,
}

/// The gradient at a start point, computed by the caller (for instance by
/// [`crate::solver::gradient::dual_gradient`]'s blocked products): `grad = Qα + p`
/// and `grad_bar = Σ_{t: α_t ≥ U_t} U_t Q_t`, one entry per variable.
#[derive(Clone, Copy, Debug)]
pub struct GivenGradient<'a> {
    pub grad: &'a [f64],
    pub grad_bar: &'a [f64],
}

impl GivenGradient<'_> {
    /// An error unless both parts have `n` entries (`n` of `what`: the
    /// error message's noun) and are finite.
    pub(crate) fn check(&self, n: usize, what: &str) -> Result<()> {
        for (name, v) in [("gradient", self.grad), ("gradient_upper", self.grad_bar)] {
            if v.len() != n {
                shape_error!(
                    "the start's {name} has {} entries but there are {n} {what}",
                    v.len()
                );
            }
            if v.iter().any(|x| !x.is_finite()) {
                value_error!("the start's {name} contains NaN or infinity");
            }
        }
        Ok(())
    }
}

/// [`solve`], starting from the caller's gradient at `alpha` when `start` is
/// given instead of filling it column by column from `q` (one kernel column
/// per non-zero `α_t`). Its lengths must be `n` and its values finite (an
/// error otherwise); that it is the gradient at `alpha` is the caller's
/// promise: the solver updates it incrementally and only rebuilds the
/// gradient of shrunk variables from `grad_bar`.
pub fn solve_from<T: QValue, Q: QMatrix<T>>(
    q: &mut Q,
    dual: &Dual<'_>,
    start: Option<GivenGradient<'_>>,
    stop: &Stopping<'_>,
) -> Result<SmoResult> {
    let (result, _) = run(q, dual, start, stop, false)?;
    Ok(result)
}

/// Solves the ν-dual (see the module notes) from the feasible start
/// `alpha`: `min ½ αᵀQα + pᵀα` with `0 ≤ α ≤ upper` and the sums of `α`
/// over `y = +1` and over `y = −1` each held at their start values. The
/// arguments are those of [`solve`]; returns the result (its `rho` is the
/// ν-dual's `ρ`) and the margin variable `r`.
pub fn solve_nu<T: QValue, Q: QMatrix<T>>(
    q: &mut Q,
    dual: &Dual<'_>,
    stop: &Stopping<'_>,
) -> Result<(SmoResult, f64)> {
    run(q, dual, None, stop, true)
}

fn run<T: QValue, Q: QMatrix<T>>(
    q: &mut Q,
    dual: &Dual<'_>,
    start: Option<GivenGradient<'_>>,
    stop: &Stopping<'_>,
    nu: bool,
) -> Result<(SmoResult, f64)> {
    let Dual { p, y, upper, alpha } = *dual;
    let Stopping {
        tol,
        max_iter,
        shrinking,
        ctl,
    } = *stop;
    let n = q.n();
    if let Some(g) = &start {
        g.check(n, "variables")?;
    }
    let mut st = State {
        y: y.to_vec(),
        p: p.to_vec(),
        upper: upper.to_vec(),
        alpha: alpha.to_vec(),
        bound: vec![Bound::Free; n],
        up: vec![0.0; n],
        low: vec![0.0; n],
        up_by: if nu {
            [vec![0.0; n], vec![0.0; n]]
        } else {
            [Vec::new(), Vec::new()]
        },
        grad: vec![0.0; n],
        grad_bar: vec![0.0; n],
        pending: vec![0.0; n],
        pending_listed: vec![false; n],
        pending_list: Vec::new(),
        qd: q.diag().to_vec(),
        order: (0..n).collect(),
    };
    for t in 0..n {
        st.set_bound(t, State::bound_of(alpha[t], upper[t]));
    }
    let mut s = Smo {
        q,
        ctl,
        value: PhantomData,
        st,
        n,
        active: n,
        tol,
        unshrunk: false,
        next_up: None,
        next_up_nu: None,
        gap: f64::NAN,
        team: None,
        nu,
    };
    s.team = s.q.team();
    let warm = start.is_some();
    match start {
        Some(g) => {
            s.st.grad.copy_from_slice(g.grad);
            s.st.grad_bar.copy_from_slice(g.grad_bar);
        }
        None => s.init_gradient(),
    }

    let period = n.clamp(1, SHRINK_PERIOD);
    // From a start with its gradient (the batched rounds' end, a warm
    // start), shrink before the first pair: the start's bounds already say
    // which variables cannot move, and the first period, over every row,
    // computes the longest columns.
    let mut countdown = if warm { 1 } else { period };
    let mut n_iter = 0u64;
    let mut converged = false;
    while n_iter < max_iter {
        ctl.check()?;
        countdown -= 1;
        if countdown == 0 {
            countdown = period;
            if shrinking {
                s.shrink()?;
            }
        }
        let (i, j) = match s.select() {
            Some(pair) => pair,
            None => {
                // Optimal on the active set: check every variable.
                s.reconstruct_gradient()?;
                s.active = n;
                s.next_up = None;
                s.next_up_nu = None;
                match s.select() {
                    Some(pair) => {
                        countdown = 1;
                        pair
                    }
                    None => {
                        converged = true;
                        break;
                    }
                }
            }
        };
        n_iter += 1;
        s.update_pair(i, j);
        ctl.report(n_iter, s.gap);
    }
    if s.active < n {
        s.reconstruct_gradient()?;
        s.active = n;
    }
    // Ḡ is returned whole (a caller may start the next solve from it): the
    // rebuild above applied what the shrunk phase left pending, and with
    // every variable active nothing is left pending.
    debug_assert!(s.st.pending_list.is_empty());
    // The gradient loops stop early once cancelled; never report their
    // partial sums.
    ctl.check()?;
    let (rho, r) = if nu { s.rho_nu() } else { (s.rho(), 0.0) };
    let st = &s.st;
    let objective = 0.5
        * st.alpha
            .iter()
            .zip(st.grad.iter().zip(&st.p))
            .map(|(a, (g, p))| a * (g + p))
            .sum::<f64>();
    // Back to the caller's order in place, not into new n-vectors: each
    // swap puts one variable at its index.
    let State {
        mut alpha,
        mut grad,
        mut grad_bar,
        mut order,
        ..
    } = s.st;
    for pos in 0..n {
        while order[pos] != pos {
            let to = order[pos];
            alpha.swap(pos, to);
            grad.swap(pos, to);
            grad_bar.swap(pos, to);
            order.swap(pos, to);
        }
    }
    Ok((
        SmoResult {
            alpha,
            gradient: grad,
            grad_bar,
            rho,
            objective,
            n_iter,
            converged,
        },
        r,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::{KernelKind, KernelSource, Rows};
    use crate::solver::qmatrix::KernelQ;

    /// Forwards to `q`, counting the blocked updates it answers: columns
    /// added to `Ḡ` (all rows), and gradients rebuilt over the shrunk rows.
    struct Counting<Q> {
        q: Q,
        blocked_columns: usize,
        blocked_rebuilds: usize,
    }

    impl<T: QValue, Q: QMatrix<T>> QMatrix<T> for Counting<Q> {
        crate::solver::qmatrix::forward_qmatrix!(q: n, diag, column, pair, swap_index, swap_indices);
        fn add_columns(
            &mut self,
            sum: ColumnSum<'_>,
            out: &mut [f64],
            ctl: &Control,
        ) -> Result<bool> {
            let blocked = self.q.add_columns(sum, out, ctl)?;
            if blocked && sum.from == 0 {
                self.blocked_columns += sum.cols.len();
            } else if blocked {
                self.blocked_rebuilds += 1;
            }
            Ok(blocked)
        }
    }

    /// Overlapping classes in 3-D: many multipliers end at the bound, and
    /// shrinking leaves few variables active while some still cross it.
    fn overlapping(n: usize) -> (Vec<f64>, Vec<f64>) {
        crate::testing::two_classes(n, 3, 17, 2, |_| 0.4)
    }

    #[test]
    fn deferred_upper_gradient_gives_the_unshrunk_solution() {
        let n = 1500;
        let (x, y) = overlapping(n);
        let upper: Vec<f64> = (0..n).map(|t| if t % 5 == 0 { 3.0 } else { 1.0 }).collect();
        let p = vec![-1.0; n];
        // A warm start at the bound (yᵀα = 0: the labels alternate), from
        // which shrinking drops most variables early and some cross the
        // bound later.
        let alpha = vec![1.0; n];
        let kind = KernelKind::Rbf { gamma: 0.7 };
        let dense = || KernelSource::dense(kind, Rows::new(x.clone(), n, 3).unwrap()).unwrap();
        let tol = 1e-6;
        let solve = |q: &mut Counting<KernelQ<f64>>, shrinking| {
            let stop = Stopping {
                tol,
                max_iter: 10_000_000,
                shrinking,
                ctl: &Control::none(),
            };
            let dual = Dual {
                p: &p,
                y: &y,
                upper: &upper,
                alpha: &alpha,
            };
            solve(q, &dual, &stop).unwrap()
        };
        let mut reference = Counting {
            q: KernelQ::<f64>::new(dense(), &y, 1 << 24),
            blocked_columns: 0,
            blocked_rebuilds: 0,
        };
        let want = solve(&mut reference, false);
        // Dense rows: Ḡ's pending columns are added in blocks.
        let mut blocked = Counting {
            q: KernelQ::<f64>::new(dense(), &y, 1 << 24),
            blocked_columns: 0,
            blocked_rebuilds: 0,
        };
        let got = solve(&mut blocked, true);
        assert!(blocked.blocked_columns > 0, "no update of Ḡ was deferred");
        assert!(
            blocked.blocked_rebuilds > 0,
            "no gradient rebuilt in blocks"
        );
        // A precomputed kernel has no blocked form: column by column.
        let source = dense();
        let mut k = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..n {
                k[i * n + j] = source.eval(i, j);
            }
        }
        let mut by_columns = Counting {
            q: KernelQ::<f64>::new(
                KernelSource::precomputed(k.clone(), n).unwrap(),
                &y,
                1 << 24,
            ),
            blocked_columns: 0,
            blocked_rebuilds: 0,
        };
        let fallback = solve(&mut by_columns, true);
        assert_eq!(by_columns.blocked_columns, 0);
        assert_eq!(by_columns.blocked_rebuilds, 0);
        for sol in [&got, &fallback] {
            assert!(sol.converged);
            crate::testing::assert_objective_near(sol.objective, want.objective, 1e-7);
            // The returned gradient is the true one, Ḡ included.
            for t in 0..n {
                let g: f64 = p[t]
                    + (0..n)
                        .filter(|&s| sol.alpha[s] > 0.0)
                        .map(|s| sol.alpha[s] * y[t] * y[s] * k[t * n + s])
                        .sum::<f64>();
                assert!((g - sol.gradient[t]).abs() < 1e-8, "gradient {t}");
            }
        }
    }
}
