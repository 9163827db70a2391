//! Keeping the store small: the most violating examples, retiring and
//! forgetting examples, compaction, the budget, and the batch baseline.

use super::*;

impl OnlineLearner {
    /// The `size` kept examples that violate the KKT conditions most: half
    /// the largest `y_i − g_i` over the examples whose multiplier may move
    /// up (`y_i α_i` may grow), half the smallest over those that may move
    /// down (values within `tol` ordered by position; the pair of the
    /// largest violation always among them); `None` when the largest
    /// violation `max_up − min_low` is within `tol`.
    pub(super) fn violators(&mut self, size: usize, c: f64, tol: f64) -> Option<Vec<usize>> {
        let half = (size / 2).max(1);
        // The `half` first of each side in the rounded order, kept while
        // scanning ([`offer`]), not sorted out of a list of every example.
        let mut up = std::mem::take(&mut self.scratch.up);
        let mut low = std::mem::take(&mut self.scratch.low);
        up.clear();
        low.clear();
        let (mut max_up, mut min_low) = (f64::NEG_INFINITY, f64::INFINITY);
        let (mut arg_up, mut arg_low) = (0, 0);
        // Once a side holds `half`, an example whose `exact` is beyond its
        // bound cannot enter it (see `entry_bounds`), and needs no rounded
        // value: most of the kept examples are far from both extremes.
        let (mut up_from, mut low_to) = (f64::NEG_INFINITY, f64::INFINITY);
        for i in 0..self.len() {
            if !self.alive[i] {
                continue;
            }
            let (a, y) = (self.alpha[i], self.y[i]);
            let exact = y - self.g[i];
            let may_up = (y > 0.0 && a < c) || (y < 0.0 && a > 0.0);
            let may_low = (y < 0.0 && a < c) || (y > 0.0 && a > 0.0);
            if may_up && exact > max_up {
                (max_up, arg_up) = (exact, i);
            }
            if may_low && exact < min_low {
                (min_low, arg_low) = (exact, i);
            }
            let to_up = may_up && exact >= up_from;
            let to_low = may_low && exact <= low_to;
            if to_up || to_low {
                // In units of the solver's tolerance: the examples on the
                // margin, equal to within it, are ordered by position.
                let v = round_even(exact / tol);
                if to_up {
                    offer(&mut up, half, (-v, i));
                    if up.len() >= half {
                        up_from = entry_bounds(-up[up.len() - 1].0, tol).0;
                    }
                }
                if to_low {
                    offer(&mut low, half, (v, i));
                    if low.len() >= half {
                        low_to = entry_bounds(low[low.len() - 1].0, tol).1;
                    }
                }
            }
        }
        let top: Vec<usize> = up.iter().map(|&(_, i)| i).collect();
        let bottom: Vec<usize> = low.iter().map(|&(_, i)| i).collect();
        self.scratch.up = up;
        self.scratch.low = low;
        // The violation itself, not that of the first in the rounded
        // order, which may fall within tol while the largest does not.
        if top.is_empty() || bottom.is_empty() || max_up - min_low <= tol {
            return None;
        }
        // The pair of the largest violation itself is always in: with more
        // than `half` examples within tol of an extreme the rounded order
        // may leave it out, and the set could then be optimal to within
        // tol while the machine is not.
        let mut top = top;
        if !top.contains(&arg_up) {
            let last = top.len() - 1;
            top[last] = arg_up;
        }
        let mut bottom = bottom;
        if !bottom.contains(&arg_low) {
            let last = bottom.len() - 1;
            bottom[last] = arg_low;
        }
        let mut ws = top;
        for k in bottom {
            if !ws.contains(&k) {
                ws.push(k);
            }
        }
        Some(ws)
    }

    /// Forgets the examples with `α = 0` beyond the band, and counts the
    /// kept examples and the support vectors ([`OnlineLearner::count`]) in
    /// the same pass.
    pub(super) fn retire(&mut self, epsilon: f64) {
        let (mut alive, mut support) = (0, 0);
        for i in 0..self.len() {
            if !self.alive[i] {
                continue;
            }
            if self.alpha[i] > 0.0 {
                support += 1;
            } else if self.alpha[i] == 0.0 && self.y[i] * (self.g[i] + self.b) > 1.0 + epsilon {
                self.forget(i);
                continue;
            }
            alive += 1;
        }
        self.n_alive = alive;
        self.n_support = support;
    }

    /// Forgets stored row `i`: it leaves the machine. Its entries in the
    /// cached kernel rows stay as they are: nothing reads them (working
    /// sets hold kept rows only) and the updates of `g` skip forgotten rows
    /// ([`add_column`]), so `g_i` stays as it was whatever the cache held
    /// (the model does not depend on the cache). Zeroing the entry in every
    /// cached row instead cost a pass over the cache per forgotten row.
    pub(super) fn forget(&mut self, i: usize) {
        self.alive[i] = false;
    }

    pub(super) fn count(&mut self) {
        let (mut alive, mut support) = (0, 0);
        for (&a, &alpha) in self.alive.iter().zip(&self.alpha) {
            alive += usize::from(a);
            support += usize::from(a && alpha > 0.0);
        }
        self.n_alive = alive;
        self.n_support = support;
    }

    pub(super) fn maybe_compact(&mut self) {
        let n = self.len();
        if n <= COMPACT_MIN || 4 * self.n_alive >= 3 * n {
            return;
        }
        let keep: Vec<usize> = (0..n).filter(|&i| self.alive[i]).collect();
        let d = self.d;
        self.x = keep
            .iter()
            .flat_map(|&i| self.x[i * d..(i + 1) * d].iter().copied())
            .collect();
        fn pick<T: Copy>(v: &[T], keep: &[usize]) -> Vec<T> {
            keep.iter().map(|&i| v[i]).collect()
        }
        self.sq = pick(&self.sq, &keep);
        self.y = pick(&self.y, &keep);
        self.cls = pick(&self.cls, &keep);
        self.seen = pick(&self.seen, &keep);
        self.alpha = pick(&self.alpha, &keep);
        self.g = pick(&self.g, &keep);
        self.alive = vec![true; keep.len()];
        self.cache.retain(&keep);
        self.index_rows();
        if let Some(ex) = self.expansion.take() {
            self.scratch.spare = ex;
        }
        // The block's dot products are by storage position. One over the
        // support vectors ends here (the next example forms the next one,
        // over the new positions); the rest of one over every stored row
        // is renumbered (`Block::renumber`), once `learn_each` has put back
        // its buffer, which it holds while an example is learnt.
        let b = &mut self.block;
        if b.covers_support() || b.next >= b.rows {
            b.rows = b.next;
            b.cover.clear();
            b.slot.clear();
            b.renumber = None;
            return;
        }
        // The rows the block covers: its first `width`, or those a pending
        // renumbering keeps.
        let covered = b.renumber.as_ref().map_or(b.width, Vec::len);
        let keep = keep[..keep.partition_point(|&i| i < covered)].to_vec();
        b.renumber = Some(match b.renumber.take() {
            // A second compaction before the first is applied: the kept
            // rows of the kept rows.
            Some(first) => keep.iter().map(|&i| first[i]).collect(),
            None => keep,
        });
    }

    /// Removes support vectors while there are more than `budget`, each time
    /// the one with the smallest margin `y f` (then the smallest `α`, then
    /// the oldest); then keeps at most `budget` examples without a
    /// multiplier, the most recent.
    pub(super) fn enforce_budget(
        &mut self,
        budget: usize,
        opts: &OnlineOptions,
        report: &mut LearnReport,
    ) {
        // Support vectors whose multiplier found no taker this time: the
        // next smallest margin is tried instead, so one stuck candidate
        // does not leave the learner over its budget.
        let mut stuck: Vec<usize> = Vec::new();
        loop {
            let sv = self.support();
            if sv.len() <= budget {
                break;
            }
            let key = |i: usize| {
                let m = self.y[i] * (self.g[i] + self.b);
                ((m * 1e9).round(), self.alpha[i])
            };
            let Some(r) = sv
                .iter()
                .copied()
                .filter(|i| !stuck.contains(i))
                .min_by(|&a, &b| {
                    let (ka, kb) = (key(a), key(b));
                    ka.0.total_cmp(&kb.0)
                        .then(ka.1.total_cmp(&kb.1))
                        .then(a.cmp(&b))
                })
            else {
                break; // no support vector can hand its multiplier over
            };
            if !self.remove(r, opts, report) {
                stuck.push(r);
            }
        }
        self.trim_rest(budget);
    }

    /// Keeps at most `budget` examples without a multiplier, the most recent.
    pub(super) fn trim_rest(&mut self, budget: usize) {
        let rest: Vec<usize> = (0..self.len())
            .filter(|&i| self.alive[i] && self.alpha[i] == 0.0)
            .collect();
        if rest.len() > budget {
            for &i in &rest[..rest.len() - budget] {
                self.forget(i);
            }
            self.count();
            self.maybe_compact();
        }
    }

    /// Removes support vector `r`: its multiplier goes to its nearest
    /// same-class neighbours (room up to `C`) or is taken from its nearest
    /// other-class ones, keeping `yᵀα`; that neighbourhood is re-optimised
    /// once. False (nothing changed) when the neighbours lack the room.
    pub(super) fn remove(
        &mut self,
        r: usize,
        opts: &OnlineOptions,
        report: &mut LearnReport,
    ) -> bool {
        let n = self.len();
        let mut dots = vec![0.0; n];
        column_dots(&self.cols, &[nonzeros(self.row(r))], 0, n, &mut dots, n);
        let cand: Vec<(f64, usize)> = (0..n)
            .filter(|&i| self.alive[i] && i != r)
            .map(|i| (self.sq[i] - 2.0 * dots[i], i))
            .collect();
        let near = nearest(cand, opts.max_neighbors.max(2));
        let (a_r, y_r) = (self.alpha[r], self.y[r]);
        let mut a_new: Vec<f64> = near.iter().map(|&i| self.alpha[i]).collect();
        let mut need = a_r;
        for (k, &i) in near.iter().enumerate() {
            if need <= 0.0 {
                break;
            }
            if self.y[i] == y_r {
                let add = need.min(opts.c - a_new[k]);
                a_new[k] += add;
                need -= add;
            }
        }
        for (k, &i) in near.iter().enumerate() {
            if need <= 0.0 {
                break;
            }
            if self.y[i] != y_r {
                let sub = need.min(a_new[k]);
                a_new[k] -= sub;
                need -= sub;
            }
        }
        if need > 1e-12 * a_r.max(1.0) {
            return false;
        }
        // Apply the hand-off: α_r → 0 and the neighbours to a_new.
        let mut changes = vec![(r, -a_r * y_r)];
        for (k, &i) in near.iter().enumerate() {
            changes.push((i, (a_new[k] - self.alpha[i]) * self.y[i]));
        }
        for &(i, delta) in &changes {
            if delta != 0.0 {
                self.ensure_row(i);
                add_column(&mut self.g, self.cache.column(i), &self.alive, delta);
            }
        }
        self.alpha[r] = 0.0;
        self.forget(r);
        for (k, &i) in near.iter().enumerate() {
            self.alpha[i] = a_new[k];
        }
        let kernel = self.gram(&near);
        self.solve_working_set(&near, &kernel, near.len(), opts, report);
        self.xi_sum = self.slack_sum();
        true
    }

    /// The baseline: a batch SVM over every kept example, trained afresh.
    pub(super) fn rebatch(
        &mut self,
        opts: &OnlineOptions,
        report: &mut LearnReport,
        rec: &mut StepRecord,
    ) -> Result<()> {
        let n = self.len();
        let rows = Rows::new(self.x.clone(), n, self.d)?;
        let problem = DualProblem::new(
            KernelSource::dense(self.kind, rows)?,
            self.y.clone(),
            vec![opts.c; n],
        );
        let sol = problem.solve_with(
            &SolverOptions {
                tol: opts.tol,
                max_iter: opts.max_iter,
                shrinking: opts.shrinking,
                cache_bytes: opts.cache_bytes,
                threads: 1,
                control: opts.control.clone(),
                solver: Default::default(),
            },
            opts.precision,
        )?;
        report.solves += 1;
        if !sol.converged {
            report.unconverged += 1;
        }
        self.n_iter += sol.n_iter;
        for i in 0..n {
            let delta = (sol.alpha[i] - self.alpha[i]) * self.y[i];
            if delta != 0.0 {
                self.ensure_row(i);
                add_column(&mut self.g, self.cache.column(i), &self.alive, delta);
            }
        }
        self.alpha = sol.alpha;
        self.b = -sol.rho;
        self.xi_sum = self.slack_sum();
        self.count();
        rec.neighbourhood = n;
        rec.n_solves = 1;
        rec.reached = true;
        Ok(())
    }
}
