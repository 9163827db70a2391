//! Learning a batch: the rows' dot products with the store computed block by
//! block, and the room for the batch reserved before any example is learnt.

use super::*;

/// The rows of one [`OnlineLearner::learn_polled`] call: row-major `x`
/// (`d` features), the labels `y` (±1), and the caller's class index and
/// stream position of each (kept with the examples).
#[derive(Clone, Copy, Debug)]
pub struct Batch<'a> {
    pub x: &'a [f64],
    pub y: &'a [f64],
    pub cls: &'a [i64],
    pub seen: &'a [i64],
}

/// One example of a batch: its label (±1), and the caller's class index
/// and stream position, kept with it.
#[derive(Clone, Copy, Debug)]
pub(super) struct Example {
    pub(super) label: f64,
    pub(super) cls: i64,
    pub(super) seen: i64,
}

impl OnlineLearner {
    /// Learns the rows of `x` (row-major, `d` features) in order; `y` holds
    /// their labels (±1), `cls` and `seen` the caller's class index and
    /// stream position of each (kept with the examples).
    pub fn learn(
        &mut self,
        x: &[f64],
        y: &[f64],
        cls: &[i64],
        seen: &[i64],
        opts: &OnlineOptions,
    ) -> Result<LearnReport> {
        self.learn_polled(Batch { x, y, cls, seen }, opts, &mut || Ok(()))
    }

    /// [`OnlineLearner::learn`], calling `poll` (after checking
    /// `opts.control`) before each example: an error from it stops the
    /// batch there, as an interrupt does. This lets a caller run the batch
    /// on its own thread and still answer signals between examples.
    pub fn learn_polled(
        &mut self,
        batch: Batch<'_>,
        opts: &OnlineOptions,
        poll: &mut dyn FnMut() -> Result<()>,
    ) -> Result<LearnReport> {
        let Batch { x, y, cls, seen } = batch;
        opts.validate()?;
        let d = self.d;
        let m = y.len();
        if x.len() != m * d {
            shape_error!(
                "x has {} values, expected {m} rows of {d} features",
                x.len()
            );
        }
        if cls.len() != m || seen.len() != m {
            shape_error!(
                "cls and seen must have {m} entries (one per label), got {} and {}",
                cls.len(),
                seen.len()
            );
        }
        if let Some(v) = y.iter().find(|&&v| v != 1.0 && v != -1.0) {
            value_error!("y must contain only -1 and +1, found {v}");
        }
        crate::kernel::check_finite(x, d)?;
        // The kernel's range, as the batch solvers check it: on data where
        // every kernel value underflows (or overflows) float64 the updates
        // could only grind through their iteration caps.
        let stored = Magnitudes {
            max_sq: self.max_sq,
            max_abs: self.max_abs,
        };
        let incoming = Magnitudes {
            max_sq: x.chunks_exact(d.max(1)).fold(0.0, |a, r| a.max(dot(r, r))),
            max_abs: x.iter().fold(0.0, |a, &v| a.max(v.abs())),
        };
        let magnitudes = stored.join(incoming);
        // Checked over the whole batch up front; under 'auto' each example
        // then picks its working sets' arithmetic (`step`).
        self.hessian = resolve(opts.precision, self.kind, magnitudes, Some(opts.tol))?;
        self.cache.set_budget(opts.cache_bytes);
        self.reserve(x, m)?;
        let mut report = LearnReport {
            steps: Vec::with_capacity(m),
            ..LearnReport::default()
        };
        self.block.clear();
        let done = self.learn_rows(&batch, opts, poll, &mut report);
        self.block.clear();
        done.map(|()| report)
    }

    /// The loop of [`OnlineLearner::learn_polled`] over checked rows.
    pub(super) fn learn_rows(
        &mut self,
        batch: &Batch<'_>,
        opts: &OnlineOptions,
        poll: &mut dyn FnMut() -> Result<()>,
        report: &mut LearnReport,
    ) -> Result<()> {
        // Per example: its dot products with the stored rows, and the
        // support vectors' kernel values (buffers kept across examples).
        let mut dots = std::mem::take(&mut self.scratch.dots);
        let mut k_sv = std::mem::take(&mut self.scratch.k_sv);
        let done = self.learn_each(batch, opts, poll, report, &mut dots, &mut k_sv);
        self.scratch.dots = dots;
        self.scratch.k_sv = k_sv;
        done
    }

    /// [`OnlineLearner::learn_rows`]'s loop, with its buffers.
    pub(super) fn learn_each(
        &mut self,
        batch: &Batch<'_>,
        opts: &OnlineOptions,
        poll: &mut dyn FnMut() -> Result<()>,
        report: &mut LearnReport,
        dots: &mut Vec<f64>,
        k_sv: &mut Vec<f64>,
    ) -> Result<()> {
        let Batch { x, y, cls, seen } = *batch;
        let d = self.d;
        for k in 0..y.len() {
            // Between examples the learner is consistent: an interrupt
            // leaves it with the examples before `k` learnt.
            opts.control.check()?;
            poll()?;
            if self.block.next == self.block.rows {
                self.compute_block(x, k, y.len());
            }
            let row = &x[k * d..(k + 1) * d];
            let t = self.block.next;
            self.block.next += 1;
            let example = Example {
                label: y[k],
                cls: cls[k],
                seen: seen[k],
            };
            let rec = if self.block.covers_support() {
                self.step(row, Dots::Block(t), dots, k_sv, example, opts, report)
            } else {
                // The block's row itself (no copy): taken out of the block
                // while the example is learnt (a compaction meanwhile only
                // ends the block, `maybe_compact`), then put back.
                self.extend_block_row(t, row);
                let (n, stride) = (self.len(), self.block.stride);
                let held = std::mem::take(&mut self.block.dots);
                let rec = self.step(
                    row,
                    Dots::Full(&held[t * stride..t * stride + n]),
                    dots,
                    k_sv,
                    example,
                    opts,
                    report,
                );
                self.block.dots = held;
                let n = self.len();
                self.block.apply_renumber(n);
                rec
            }?;
            report.steps.push(rec);
        }
        Ok(())
    }

    /// The dot products of rows `k..` of `x` (at most [`BLOCK_ROWS`], at
    /// most [`BLOCK_VALUES`] values in all but one row) with every stored
    /// row, as the next [`Block`].
    pub(super) fn compute_block(&mut self, x: &[f64], k: usize, m: usize) {
        let (n, d) = (self.len(), self.d);
        // Few support vectors among many stored rows (a class against a
        // rare one, where the band holds most of the other class): the
        // examples classified with margin need the support vectors' dot
        // products only, and the others are formed at an update.
        let ex = match self.expansion.take() {
            Some(ex) => ex,
            None => self.expand(),
        };
        let n_sv = ex.idx.len();
        let (ratio, least) = self.support_block;
        let sparse_cover = n_sv > 0 && n >= least && n >= ratio.saturating_mul(n_sv);
        if sparse_cover {
            self.compute_support_block(x, k, m, &ex.idx);
            self.expansion = Some(ex);
            return;
        }
        self.expansion = Some(ex);
        let rows = (m - k)
            .min(BLOCK_ROWS)
            .min((BLOCK_VALUES / n.max(1)).max(1));
        let nz: Vec<Vec<(u32, f64)>> = (k..k + rows)
            .map(|r| nonzeros(&x[r * d..(r + 1) * d]))
            .collect();
        // Each row has room for the rows stored while the block is learnt
        // (one per example at most, [`OnlineLearner::extend_block_row`]).
        // The values are written before they are read: only new room is
        // zeroed.
        let stride = n + rows;
        let mut dots = std::mem::take(&mut self.block.dots);
        dots.resize(rows * stride, 0.0);
        column_dots(&self.cols, &nz, 0, n, &mut dots, stride);
        let (mut cover, mut slot) = (
            std::mem::take(&mut self.block.cover),
            std::mem::take(&mut self.block.slot),
        );
        cover.clear();
        slot.clear();
        self.block = Block {
            dots,
            width: n,
            stride,
            rows,
            next: 0,
            cover,
            slot,
            renumber: None,
        };
    }

    /// The next [`Block`] covering only the stored rows of `cover` (the
    /// support vectors, in increasing position): the dot products of rows
    /// `k..` of `x` (at most [`BLOCK_ROWS`]) with them ([`row_dots`]).
    pub(super) fn compute_support_block(&mut self, x: &[f64], k: usize, m: usize, cover: &[usize]) {
        let (n, d) = (self.len(), self.d);
        let rows = (m - k)
            .min(BLOCK_ROWS)
            .min((BLOCK_VALUES / cover.len()).max(1));
        // The block's rows feature by feature.
        let mut qt = std::mem::take(&mut self.scratch.rows);
        qt.clear();
        qt.resize(d * rows, 0.0);
        for t in 0..rows {
            let row = &x[(k + t) * d..(k + t + 1) * d];
            for (kk, &v) in row.iter().enumerate() {
                qt[kk * rows + t] = v;
            }
        }
        let mut dots = std::mem::take(&mut self.block.dots);
        dots.resize(rows * cover.len(), 0.0);
        row_dots(&self.x, d, &self.pattern, cover, &qt, rows, &mut dots);
        self.scratch.rows = qt;
        let mut slot = std::mem::take(&mut self.block.slot);
        slot.clear();
        slot.resize(n, UNCOVERED);
        for (c, &i) in cover.iter().enumerate() {
            slot[i] = c as u32;
        }
        let mut own = std::mem::take(&mut self.block.cover);
        own.clear();
        own.extend_from_slice(cover);
        self.block = Block {
            dots,
            width: n,
            stride: rows,
            rows,
            next: 0,
            cover: own,
            slot,
            renumber: None,
        };
    }

    /// The dot products of `xt`, row `t` of a [`Block`] that covers the
    /// support vectors, with the stored rows `idx` (the current support
    /// vectors): from the block for the rows it covers, one by one
    /// ([`OnlineLearner::dot_with`], the same values) for the others.
    pub(super) fn support_dots(&self, t: usize, xt: &[f64], idx: &[usize], out: &mut Vec<f64>) {
        let b = &self.block;
        let mut query: Option<Query<'_>> = None;
        out.clear();
        out.extend(idx.iter().map(|&i| match b.slot.get(i) {
            Some(&c) if c != UNCOVERED => b.dots[c as usize * b.rows + t],
            _ => self.dot_with(i, query.get_or_insert_with(|| Query::new(xt))),
        }));
    }

    /// The dot products of `xt` with every stored row, into `dots`.
    pub(super) fn all_dots(&mut self, xt: &[f64], dots: &mut Vec<f64>) {
        let n = self.len();
        dots.clear();
        dots.resize(n, 0.0);
        let nz = &mut self.scratch.nz;
        nonzeros_into(xt, nz);
        column_dots(&self.cols, std::slice::from_ref(nz), 0, n, dots, n);
    }

    /// Completes row `t` of the block (its example `row`) with the dot
    /// products of the rows stored since the block was computed, in the
    /// room the row has for them: the row then holds `row`'s dot products
    /// with every stored row.
    pub(super) fn extend_block_row(&mut self, t: usize, row: &[f64]) {
        let n = self.len();
        let (width, stride) = (self.block.width, self.block.stride);
        if n > width {
            let len = n - width;
            assert!(
                n <= stride,
                "one stored row per example of the block at most"
            );
            let nz = &mut self.scratch.nz;
            nonzeros_into(row, nz);
            let out = &mut self.block.dots[t * stride + width..t * stride + n];
            column_dots(&self.cols, std::slice::from_ref(nz), width, len, out, len);
        }
    }

    /// Room for `m` more stored examples, reserved before learning them: a
    /// failed allocation is an error, not an abort midway.
    pub(super) fn reserve(&mut self, x: &[f64], m: usize) -> Result<()> {
        let hint = "learn from fewer examples, or bound the kept ones (max_support)";
        let what = format!("{m} more stored examples of {} features", self.d);
        let values = checked_len::<f64>(m, self.d.max(1), &what, hint)?;
        // The rows, their columns (`cols`) and six values per row.
        let fail = |_| memory_error::<f64>(values.saturating_mul(2) + 6 * m, &what, hint);
        self.x.try_reserve(values).map_err(fail)?;
        self.sq.try_reserve(m).map_err(fail)?;
        self.y.try_reserve(m).map_err(fail)?;
        self.cls.try_reserve(m).map_err(fail)?;
        self.seen.try_reserve(m).map_err(fail)?;
        self.alpha.try_reserve(m).map_err(fail)?;
        self.g.try_reserve(m).map_err(fail)?;
        self.alive.try_reserve(m).map_err(fail)?;
        self.pattern.nnz.try_reserve(m).map_err(fail)?;
        self.pattern.start.try_reserve(m).map_err(fail)?;
        let d = self.d;
        // A column is widened now if the batch holds a value its type
        // cannot (so that learning the batch allocates nothing more).
        let widths = column_widths(x, d);
        for (col, &width) in self.cols.iter_mut().zip(&widths) {
            col.reserve(width, m)
                .map_err(|()| memory_error::<f64>(values.saturating_mul(2) + 6 * m, &what, hint))?;
        }
        let sparse: usize = x
            .chunks_exact(d.max(1))
            .map(|r| r.iter().filter(|&&v| v != 0.0).count())
            .filter(|&nnz| 3 * nnz <= d)
            .sum();
        self.pattern.idx.try_reserve(sparse).map_err(fail)?;
        self.pattern.val.try_reserve(sparse).map_err(fail)?;
        Ok(())
    }
}
