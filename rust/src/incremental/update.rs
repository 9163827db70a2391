//! The local update of one example (its multiplier handed to its nearest
//! neighbours) and the working-set solves that follow it.

use super::*;

/// SMO over one working set with the other multipliers fixed: `kernel`
/// holds the set's kernel matrix (row stride `stride`), `ys`, `a0` and `g`
/// its labels, starting multipliers (within `[0, C]`) and `g` values.
fn solve_dense<T: QValue>(
    kernel: &[f64],
    stride: usize,
    ys: &[f64],
    a0: &[f64],
    g: &[f64],
    opts: &OnlineOptions,
) -> smo::SmoResult {
    let w = ys.len();
    let mut cols = vec![T::default(); w * w];
    let mut diag = vec![0.0f64; w];
    for a in 0..w {
        for bb in 0..w {
            cols[a * w + bb] = T::from_f64(ys[a] * ys[bb] * kernel[a * stride + bb]);
        }
        diag[a] = kernel[a * stride + a];
    }
    // The fixed multipliers enter through p: g minus W's own share, taken
    // with the solver's own Hessian entries, so that the solver starts from
    // the exact gradient `y_a g_a − 1` and its stopping test agrees with the
    // learner's (`violators`).
    let p: Vec<f64> = (0..w)
        .map(|a| {
            let own: f64 = (0..w).map(|bb| a0[bb] * cols[a * w + bb].to_f64()).sum();
            -1.0 + ys[a] * g[a] - own
        })
        .collect();
    let upper = vec![opts.c; w];
    // The local batch's cap: LIBSVM's max(10⁷, 100·w) would let one update
    // of a few variables grind for seconds (huge C on data the kernel cannot
    // separate), and a learner makes one per example.
    let max_iter = opts.max_iter.unwrap_or_else(|| local_iteration_cap(w));
    let mut q = DenseQ { n: w, cols, diag };
    // A working set is small (at most `max_neighbors + 1` variables): its
    // solve is not interrupted, so the learner stays consistent. SMO on the
    // dense Hessian, not through `DualProblem`: see the `problem` module.
    let stop = smo::Stopping {
        tol: opts.tol,
        max_iter,
        shrinking: false,
        ctl: &Control::none(),
    };
    let dual = smo::Dual {
        p: &p,
        y: ys,
        upper: &upper,
        alpha: a0,
    };
    smo::solve(&mut q, &dual, &stop)
        .unwrap_or_else(|_| unreachable!("a solve without a control is never interrupted"))
}

impl OnlineLearner {
    /// Learns one example; `source` gives its dot products with the
    /// stored rows ([`Dots`]; `buf`: room for all of them when the block
    /// covers the support vectors only, `k_sv`: for the support vectors'
    /// kernel values).
    pub(super) fn step(
        &mut self,
        xt: &[f64],
        source: Dots<'_>,
        buf: &mut Vec<f64>,
        k_sv: &mut Vec<f64>,
        example: Example,
        opts: &OnlineOptions,
        report: &mut LearnReport,
    ) -> Result<StepRecord> {
        let Example { label, cls, seen } = example;
        let start = Instant::now();
        self.t += 1;
        let n = self.len();
        let sq_t = sq_norm(xt);
        if opts.precision == Precision::Auto {
            self.hessian = self.auto_precision(xt, sq_t, opts.tol);
        }
        // f(x_t) needs the support vectors' kernel values only; the others
        // are formed when an update needs them (its kernel row).
        let ex = match self.expansion.take() {
            Some(ex) => ex,
            None => self.expand(),
        };
        match source {
            Dots::Full(dots) => {
                k_sv.clear();
                k_sv.extend(ex.idx.iter().map(|&i| dots[i]));
            }
            Dots::Block(t) => self.support_dots(t, xt, &ex.idx, k_sv),
        }
        self.kernel_values(k_sv, |k| ex.sq[k], sq_t);
        let mut f = self.b;
        for (&coef, &k) in ex.coef.iter().zip(k_sv.iter()) {
            f += coef * k;
        }
        let margin = label * f;
        let mut rec = StepRecord {
            reached: true,
            ..StepRecord::default()
        };
        if margin >= 1.0 && !opts.rebatch {
            // Well classified: nothing to learn; kept (α = 0) in the band,
            // its kernel row left to be computed if it is ever needed.
            self.expansion = Some(ex);
            if margin <= 1.0 + opts.epsilon {
                self.append(xt, sq_t, label, cls, seen, f - self.b);
                if let Some(budget) = opts.max_support {
                    self.trim_rest(budget);
                }
            }
            return Ok(self.finish(rec, start));
        }
        let dots: &[f64] = match source {
            Dots::Full(dots) => dots,
            Dots::Block(_) => {
                self.all_dots(xt, buf);
                buf
            }
        };
        let mut rest = std::mem::take(&mut self.scratch.rest);
        let mut k_rest = std::mem::take(&mut self.scratch.k_rest);
        rest.clear();
        rest.extend((0..n).filter(|&i| self.alpha[i] <= 0.0 && self.alive[i]));
        k_rest.clear();
        k_rest.extend(rest.iter().map(|&i| dots[i]));
        self.kernel_values(&mut k_rest, |k| self.sq[rest[k]], sq_t);
        let j = self.append(xt, sq_t, label, cls, seen, f - self.b);
        // Its cached kernel row: the values just computed, 0 for forgotten
        // rows (see `forget`), then K(x_t, x_t).
        let mut own = [sq_t];
        self.kernel_values(&mut own, |_| sq_t, sq_t);
        self.cache.prepare(j, n + 1, None);
        let krow = self.cache.column_mut(j);
        for (&i, &k) in ex
            .idx
            .iter()
            .zip(k_sv.iter())
            .chain(rest.iter().zip(&k_rest))
        {
            krow[i] = k;
        }
        krow[n] = own[0];
        self.scratch.spare = ex;
        self.scratch.rest = rest;
        self.scratch.k_rest = k_rest;
        rec.updated = true;
        let (mut pos, mut neg) = (false, false);
        for i in 0..self.len() {
            if self.alive[i] {
                pos |= self.y[i] > 0.0;
                neg |= self.y[i] < 0.0;
                if pos && neg {
                    break;
                }
            }
        }
        if !(pos && neg) {
            // One class so far: the constant machine f = label classifies
            // every kept example with margin exactly 1.
            self.b = label;
            self.xi_sum = 0.0;
            rec.neighbourhood = 1;
            return Ok(self.finish(rec, start));
        }
        report.updates += 1;
        if opts.rebatch {
            self.rebatch(opts, report, &mut rec)?;
        } else {
            self.local(j, dots, opts, report, &mut rec)?;
        }
        Ok(self.finish(rec, start))
    }

    /// The working sets' arithmetic under [`Precision::Auto`] for the
    /// example `xt` (`‖xt‖² = sq_t`): the batch solvers' rule ([`resolve`])
    /// on the magnitudes of the stored rows and `xt`, the rows its working
    /// sets are built from, so `float64` where `float32` cannot represent
    /// their kernel values or `tol` is below what `float32` resolves. Per
    /// example, not per batch, so that the model does not depend on how
    /// the stream is cut into batches.
    pub(super) fn auto_precision(&self, xt: &[f64], sq_t: f64, tol: f64) -> Precision {
        let m = Magnitudes {
            max_sq: self.max_sq.max(sq_t),
            max_abs: xt.iter().fold(self.max_abs, |a, &v| a.max(v.abs())),
        };
        // A subset of the batch checked up front: should even `f64` fail
        // on it alone (a kernel that underflows on these rows only), the
        // wider arithmetic is still the better one.
        resolve(Precision::Auto, self.kind, m, Some(tol)).unwrap_or(Precision::Float64)
    }

    /// The support vectors' [`Expansion`] as the multipliers now are (in
    /// the buffers of the last one).
    pub(super) fn expand(&mut self) -> Expansion {
        let mut ex = std::mem::take(&mut self.scratch.spare);
        ex.idx.clear();
        ex.idx
            .extend((0..self.len()).filter(|&i| self.alpha[i] > 0.0));
        ex.coef.clear();
        ex.coef
            .extend(ex.idx.iter().map(|&i| self.alpha[i] * self.y[i]));
        ex.sq.clear();
        ex.sq.extend(ex.idx.iter().map(|&i| self.sq[i]));
        ex
    }

    pub(super) fn finish(&self, mut rec: StepRecord, start: Instant) -> StepRecord {
        rec.criterion = self.criterion();
        rec.n_support = self.n_support;
        rec.n_stored = self.n_alive;
        rec.seconds = start.elapsed().as_secs_f64();
        rec
    }

    /// Stores a new example with `α = 0` (no kernel row cached yet).
    pub(super) fn append(
        &mut self,
        xt: &[f64],
        sq_t: f64,
        label: f64,
        cls: i64,
        seen: i64,
        g: f64,
    ) -> usize {
        let j = self.len();
        self.x.extend_from_slice(xt);
        self.sq.push(sq_t);
        self.y.push(label);
        self.cls.push(cls);
        self.seen.push(seen);
        self.alpha.push(0.0);
        self.g.push(g);
        self.alive.push(true);
        self.index_last();
        self.n_alive += 1;
        self.cache.push();
        j
    }

    /// `K(x_i, x_j)` of two stored rows.
    pub(super) fn kval(&self, i: usize, j: usize) -> f64 {
        if let Some(&v) = self.cache.column(i).get(j) {
            return v;
        }
        let mut v = [self.dot_with(i, &self.query(j))];
        self.kernel_values(&mut v, |_| self.sq[i], self.sq[j]);
        v[0]
    }

    /// Turns dot products `vals[k] = x_k · q` into kernel values `K(x_k, q)`,
    /// `sq_of(k)` giving `‖x_k‖²` and `sq_q` `‖q‖²`. Every kernel value of
    /// the learner comes from here, so each is the same function of its
    /// pair wherever it is computed; RBF values from the vectorised
    /// exponential of the batch kernel rows (within about an ulp of
    /// `f64::exp`, several times faster).
    #[inline]
    pub(super) fn kernel_values(&self, vals: &mut [f64], sq_of: impl Fn(usize) -> f64, sq_q: f64) {
        values_from_dots(self.kind, vals, sq_of, sq_q);
    }

    /// The kernel matrix of the listed stored rows (row-major).
    pub(super) fn gram(&self, work: &[usize]) -> Vec<f64> {
        let w = work.len();
        let mut k = vec![0.0; w * w];
        for a in 0..w {
            for b in 0..=a {
                let v = self.kval(work[a], work[b]);
                k[a * w + b] = v;
                k[b * w + a] = v;
            }
        }
        k
    }

    /// Makes row `j` of the cache cover every stored example.
    pub(super) fn ensure_row(&mut self, j: usize) {
        let (n, d) = (self.len(), self.d);
        let start = self.cache.prepare(j, n, None);
        if start < n {
            let len = n - start;
            // Into the cached row directly; entries of forgotten rows are
            // computed too, and never read (see `forget`).
            let nz = &mut self.scratch.nz;
            nonzeros_into(&self.x[j * d..(j + 1) * d], nz);
            let out = &mut self.cache.column_mut(j)[start..n];
            column_dots(&self.cols, std::slice::from_ref(nz), start, len, out, len);
            let sq = &self.sq;
            values_from_dots(self.kind, out, |k| sq[start + k], sq[j]);
        }
    }

    /// Makes the rows of `rows` (storage positions, with a weight each)
    /// cover every stored example, as [`OnlineLearner::ensure_row`] does
    /// one by one, but the rows with nothing cached computed together, up
    /// to [`ROWS_PER_PASS`] per pass of [`column_dots`] over the stored
    /// columns (a moved working set's rows share most of their columns).
    /// Only while the cache holds four times the rows with room to spare:
    /// then none of them is evicted before it is used; otherwise, and for
    /// partly cached rows, `ensure_row` at use does it.
    pub(super) fn ensure_rows(&mut self, rows: &[(usize, f64)]) {
        let n = self.len();
        let per_row =
            crate::solver::cache::size_class(n + n / 8 + crate::solver::cache::GROW_SLACK);
        let mut missing = std::mem::take(&mut self.scratch.missing);
        missing.clear();
        if rows.len() >= 2 && self.cache.capacity() / 4 / per_row >= rows.len() {
            missing.extend(
                rows.iter()
                    .map(|&(j, _)| j)
                    .filter(|&j| self.cache.held(j) == 0),
            );
        }
        let mut buf = std::mem::take(&mut self.scratch.rows);
        for part in missing.chunks(ROWS_PER_PASS) {
            if part.len() < 2 {
                break; // one row: ensure_row at use
            }
            let nz: Vec<Vec<(u32, f64)>> = part.iter().map(|&j| nonzeros(self.row(j))).collect();
            buf.clear();
            if buf.try_reserve(part.len() * n).is_err() {
                break; // no room for them together: ensure_row at use
            }
            buf.resize(part.len() * n, 0.0);
            column_dots(&self.cols, &nz, 0, n, &mut buf, n);
            for (t, &j) in part.iter().enumerate() {
                let start = self.cache.prepare(j, n, None);
                debug_assert_eq!(start, 0);
                let out = &mut self.cache.column_mut(j)[..n];
                out.copy_from_slice(&buf[t * n..(t + 1) * n]);
                let sq = &self.sq;
                values_from_dots(self.kind, out, |k| sq[k], sq[j]);
            }
        }
        self.scratch.rows = buf;
        self.scratch.missing = missing;
    }

    /// `‖ξ‖²` over the kept examples.
    pub(super) fn slack_sum(&self) -> f64 {
        slack_lanes(&self.y, &self.g, &self.alive, self.b)
    }

    /// The paper's update for the new example at `j` (`dots`: its dot
    /// products with the examples stored before it).
    pub(super) fn local(
        &mut self,
        j: usize,
        dots: &[f64],
        opts: &OnlineOptions,
        report: &mut LearnReport,
        rec: &mut StepRecord,
    ) -> Result<()> {
        let eps = opts.epsilon;
        // The nearest candidates, kept while scanning (no list of all).
        let mut best = std::mem::take(&mut self.scratch.near);
        best.clear();
        let mut n_cand = 0;
        for (i, &dot) in dots.iter().enumerate().take(j) {
            if self.alive[i]
                && (self.y[i] * (self.g[i] + self.b) <= 1.0 + eps || self.alpha[i] > 0.0)
            {
                n_cand += 1;
                offer(&mut best, opts.max_neighbors, (self.sq[i] - 2.0 * dot, i));
            }
        }
        let near: Vec<usize> = best.iter().map(|&(_, i)| i).collect();
        self.scratch.near = best;
        let t = self.t as f64;
        let mut e_prev = self.slack_sum() / t;
        let mut work = vec![j];
        // K over the working set, grown by one row and column per member
        // (capacity for the largest set, so indices stay put).
        let cap = near.len() + 1;
        let what = format!("the {cap} × {cap} kernel matrix of the working set");
        let hint = "use a smaller max_neighbors";
        let mut kww = try_filled(checked_len::<f64>(cap, cap, &what, hint)?, 0.0, &what, hint)?;
        kww[0] = self.kval(j, j);
        let mut next = 0;
        let mut e = e_prev;
        loop {
            let take = opts.neighbor_step.min(near.len() - next);
            for &i in &near[next..next + take] {
                let a = work.len();
                work.push(i);
                for (bb, &ib) in work.iter().enumerate() {
                    let v = self.kval(i, ib);
                    kww[a * cap + bb] = v;
                    kww[bb * cap + a] = v;
                }
            }
            next += take;
            let moved = self.solve_working_set(&work, &kww, cap, opts, report);
            rec.n_solves += 1;
            // The level, or the variation of the estimate between candidates
            // that differ (a neighbour whose subproblem is already optimal,
            // SMO taking no step, leaves the machine and the estimate as
            // they were).
            if moved {
                e = self.slack_sum() / t;
            }
            if e < opts.threshold || (moved && (e_prev - e).abs() < opts.threshold * e_prev) {
                rec.reached = true;
                break;
            }
            e_prev = e;
            rec.reached = false;
            if next >= near.len() {
                if n_cand > opts.max_neighbors {
                    report.capped += 1;
                }
                break;
            }
        }
        rec.neighbourhood = work.len();
        // The local update leaves the rest of the machine as it was: stale
        // multipliers elsewhere (at C while now well classified, or free off
        // the margin) bias b and the whole machine. A few subproblems over
        // the kept examples that violate the KKT conditions most repair that.
        let mut any = false;
        for _ in 0..opts.reprocess {
            let Some(ws) = self.violators(REPROCESS_SIZE, opts.c, opts.tol) else {
                break;
            };
            let kernel = self.gram(&ws);
            let moved = self.solve_working_set(&ws, &kernel, ws.len(), opts, report);
            any |= moved;
            if !moved {
                // The same violators would come back, as optimal.
                break;
            }
        }
        self.xi_sum = if any { self.slack_sum() } else { e * t };
        self.retire(opts.epsilon);
        if let Some(budget) = opts.max_support {
            self.enforce_budget(budget, opts, report);
            self.count();
        }
        self.maybe_compact();
        Ok(())
    }

    /// Re-optimises the multipliers of `work` (storage positions) with the
    /// others fixed, then updates `g` from the changes and `b`; false when
    /// SMO took no step (the working set was already optimal).
    pub(super) fn solve_working_set(
        &mut self,
        work: &[usize],
        kernel: &[f64],
        stride: usize,
        opts: &OnlineOptions,
        report: &mut LearnReport,
    ) -> bool {
        let ys: Vec<f64> = work.iter().map(|&i| self.y[i]).collect();
        let a0: Vec<f64> = work
            .iter()
            .map(|&i| self.alpha[i].clamp(0.0, opts.c))
            .collect();
        let g: Vec<f64> = work.iter().map(|&i| self.g[i]).collect();
        let res = if self.hessian == Precision::Float64 {
            solve_dense::<f64>(kernel, stride, &ys, &a0, &g, opts)
        } else {
            solve_dense::<f32>(kernel, stride, &ys, &a0, &g, opts)
        };
        report.solves += 1;
        if !res.converged {
            report.unconverged += 1;
        }
        self.n_iter += res.n_iter;
        if res.n_iter == 0 {
            return false;
        }
        let mut moved = std::mem::take(&mut self.scratch.moved);
        moved.clear();
        for (a, &ia) in work.iter().enumerate() {
            let delta = (res.alpha[a] - self.alpha[ia]) * ys[a];
            self.alpha[ia] = res.alpha[a];
            if delta != 0.0 {
                moved.push((ia, delta));
            }
        }
        self.ensure_rows(&moved);
        for &(ia, delta) in &moved {
            self.ensure_row(ia);
            add_column(&mut self.g, self.cache.column(ia), &self.alive, delta);
        }
        self.scratch.moved = moved;
        self.b = self.global_bias(opts.c);
        true
    }

    /// The bias from the KKT conditions of every kept example (LIBSVM's
    /// rule, over the whole machine rather than the working set, whose
    /// few variables often all sit at a bound): minus the mean of
    /// `g_i − y_i` over the free multipliers, else the middle of the interval
    /// the bounded ones allow.
    pub(super) fn global_bias(&self, c: f64) -> f64 {
        let (sum, free, ub, lb) = bias_terms(&self.y, &self.g, &self.alpha, &self.alive, c);
        -crate::solver::smo::rho_from(sum, free, ub, lb)
    }
}
