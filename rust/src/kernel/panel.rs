//! The feature-major `f32` layout the vectorised kernel loops read, and the
//! rows kernel columns are computed against.

use super::rows::Rows;
use crate::error::{checked_len, memory_error, try_filled, Result};
use crate::numeric::simd;

/// A feature-major `f32` copy of a set of rows (`data[f·n + t]` is feature
/// `f` of row `t`), the layout the vectorised kernel loops read: one pass over
/// a feature touches consecutive rows, so many rows are processed per
/// instruction with no horizontal sums.
#[derive(Clone, Debug)]
pub struct Panel {
    data: Vec<f32>,
    pub(super) sq: Vec<f32>,
    n: usize,
    pub(super) d: usize,
}

impl Panel {
    /// The panel of `rows`; panics when it cannot be allocated (solvers
    /// build it through [`Panel::try_new`] first).
    pub fn new(rows: &Rows) -> Panel {
        Panel::try_new(rows).unwrap_or_else(|err| panic!("{err}"))
    }

    /// The panel of `rows`, its `4·n·d` bytes reserved first: a failed
    /// allocation is an [`crate::Error::Memory`].
    pub fn try_new(rows: &Rows) -> Result<Panel> {
        let (n, d) = (rows.n(), rows.d());
        // The message is written only when it is needed: a small problem's
        // panel costs about as much as formatting it.
        let blocks = || -> Result<(Vec<f32>, Vec<f32>)> {
            let data = try_filled(checked_len::<f32>(n, d, "", "")?, 0.0f32, "", "")?;
            Ok((data, try_filled(n, 0.0f32, "", "")?))
        };
        let (mut data, mut sq) = blocks().map_err(|_| {
            memory_error::<f32>(
                n.saturating_mul(d).saturating_add(n),
                &format!("the float32 copy of {n} rows of {d} features"),
                "use precision='float64' or fewer rows",
            )
        })?;
        transpose_into(rows, &mut data, |v| v as f32);
        for (t, norm) in sq.iter_mut().enumerate() {
            let sum: f64 = rows
                .row(t)
                .iter()
                .map(|&v| f64::from(v as f32).powi(2))
                .sum();
            *norm = sum as f32;
        }
        Ok(Panel { data, sq, n, d })
    }

    /// Row `i` as a [`Query`].
    pub fn query(&self, i: usize) -> Query {
        Query::with_norm(self.row(i), self.sq[i])
    }

    /// Row `i` written into `q` ([`Panel::query`]'s values), reusing its
    /// buffers: the column fills of small problems ask for a query per
    /// column, and two allocations each cost about as much as filling a
    /// column of a hundred rows.
    pub fn query_into(&self, i: usize, q: &mut Query) {
        q.row.clear();
        q.row.extend((0..self.d).map(|f| self.data[f * self.n + i]));
        q.nonzero.clear();
        q.nonzero.extend(
            q.row
                .iter()
                .enumerate()
                .filter(|(_, &v)| v != 0.0)
                .map(|(f, &v)| (f, v)),
        );
        q.sq = self.sq[i];
    }

    /// Number of rows.
    pub fn n(&self) -> usize {
        self.n
    }

    /// Number of features.
    pub fn d(&self) -> usize {
        self.d
    }

    /// Row `i` as a contiguous vector.
    pub fn row(&self, i: usize) -> Vec<f32> {
        (0..self.d).map(|f| self.data[f * self.n + i]).collect()
    }

    /// Applies a sequence of row swaps, in order, one feature at a time (so
    /// each feature's row stays in the processor's cache).
    pub fn swap_many(&mut self, swaps: &[(usize, usize)]) {
        swap_feature_major(&mut self.data, self.n, swaps);
        for &(i, j) in swaps {
            self.sq.swap(i, j);
        }
    }

    /// Feature `f` of rows `[start, end)`.
    #[inline(always)]
    pub(super) fn feature(&self, f: usize, start: usize, end: usize) -> &[f32] {
        &self.data[f * self.n + start..f * self.n + end]
    }
}

/// One row kernel columns are computed against: its values, its non-zero
/// features, and its squared norm.
#[derive(Clone, Debug)]
pub struct Query {
    pub(super) row: Vec<f32>,
    pub(super) nonzero: Vec<(usize, f32)>,
    pub(super) sq: f32,
}

impl Query {
    /// A query of no features, whose buffers [`Panel::query_into`] fills.
    pub const EMPTY: Query = Query {
        row: Vec::new(),
        nonzero: Vec::new(),
        sq: 0.0,
    };

    /// [`Query::EMPTY`], as a value.
    pub fn empty() -> Query {
        Query::EMPTY
    }

    /// A query from its values (norm computed here).
    pub fn new(row: Vec<f32>) -> Query {
        let sq = row
            .iter()
            .map(|&v| f64::from(v) * f64::from(v))
            .sum::<f64>() as f32;
        Query::with_norm(row, sq)
    }

    fn with_norm(row: Vec<f32>, sq: f32) -> Query {
        let nonzero = row
            .iter()
            .enumerate()
            .filter(|(_, &v)| v != 0.0)
            .map(|(f, &v)| (f, v))
            .collect();
        Query { row, nonzero, sq }
    }

    /// True when at most three quarters of the features are non-zero: then
    /// dot products that skip the zeros (reading fewer panel rows) beat the
    /// difference loop, which reads every feature of every row. For RBF the
    /// distance is then `‖q‖² + ‖x‖² − 2⟨q, x⟩` in `f32`, whose rounding
    /// grows with the norms: exact for binary data like a9a, about 1e-7 of
    /// `‖q‖² + ‖x‖²` otherwise, so data far from the origin should be
    /// centred or scaled (as SVMs want anyway).
    pub(super) fn sparse(&self) -> bool {
        4 * self.nonzero.len() <= 3 * self.row.len()
    }
}

/// `data[f·n + t] = cast(x_tf)` for the `n` rows of `rows`: the feature-major
/// copy, transposed in blocks of rows so that the writes along each feature
/// are contiguous and the block's rows stay in the processor's cache.
fn transpose_into<T>(rows: &Rows, data: &mut [T], cast: impl Fn(f64) -> T) {
    const BLOCK: usize = 64;
    let (n, d) = (rows.n(), rows.d());
    for t0 in (0..n).step_by(BLOCK) {
        let t1 = (t0 + BLOCK).min(n);
        for f in 0..d {
            let dst = &mut data[f * n + t0..f * n + t1];
            for (k, slot) in dst.iter_mut().enumerate() {
                *slot = cast(rows.row(t0 + k)[f]);
            }
        }
    }
}

/// Row swaps, in order, on `n` rows stored feature by feature (`data[f·n +
/// t]`), one feature at a time (so each feature's values stay in the
/// processor's cache).
fn swap_feature_major<T>(data: &mut [T], n: usize, swaps: &[(usize, usize)]) {
    if n == 0 {
        return;
    }
    for feature in data.chunks_exact_mut(n) {
        for &(i, j) in swaps {
            feature.swap(i, j);
        }
    }
}

/// The largest [`Columns64`] made: a fit's memory stays within what its
/// float64 rows and cache take (the rows once more would be a third copy of
/// the training data), plus this much; larger data sets fill row by row.
pub const COLUMNS64_MAX_BYTES: usize = 64 << 20;

/// The rows feature by feature in `f64` (`data[f·n + t]` is feature `f` of
/// row `t`), for the `float64` RBF columns: their squared distances are
/// summed across rows one feature at a time, so the loop vectorises over
/// rows ([`Columns64::sq_dists`]), the same sums as [`sq_dist_in_order`]
/// row by row.
#[derive(Clone, Debug)]
pub struct Columns64 {
    data: Vec<f64>,
    n: usize,
}

impl Columns64 {
    /// The copy of `rows`; `None` beyond [`COLUMNS64_MAX_BYTES`] or when it
    /// cannot be allocated (the fills then go row by row, to the same
    /// values).
    pub fn try_new(rows: &Rows) -> Option<Columns64> {
        let (n, d) = (rows.n(), rows.d());
        let len = n.checked_mul(d)?;
        if len.saturating_mul(std::mem::size_of::<f64>()) > COLUMNS64_MAX_BYTES {
            return None;
        }
        let mut data = try_filled(len, 0.0f64, "", "").ok()?;
        transpose_into(rows, &mut data, |v| v);
        Some(Columns64 { data, n })
    }

    /// Applies a sequence of swaps of rows, in order.
    pub fn swap_many(&mut self, swaps: &[(usize, usize)]) {
        swap_feature_major(&mut self.data, self.n, swaps);
    }

    /// `out[k] = Σ_f (x_{start+k, f} − q_f)²`, the features in order.
    pub fn sq_dists(&self, q: &[f64], start: usize, out: &mut [f64]) {
        sq_dists_across(&self.data, self.n, q, start, out);
    }
}

/// Rows per tile of [`Columns64::sq_dists`] (4 KiB of sums).
const SQ_DIST_TILE: usize = 512;

simd::multiversion! {
    /// [`Columns64::sq_dists`]'s loop: one pass over the rows per feature,
    /// plain multiplies and adds (no fused ones) as in [`sq_dist_in_order`].
    fn sq_dists_across, fn sq_dists_across_impl(
        data: &[f64],
        n: usize,
        q: &[f64],
        start: usize,
        out: &mut [f64],
    ) {
        let _ = FMA;
        // In tiles that stay in the first-level cache across the features.
        for (c, tile) in out.chunks_mut(SQ_DIST_TILE).enumerate() {
            let from = start + c * SQ_DIST_TILE;
            tile.iter_mut().for_each(|o| *o = 0.0);
            for (f, &qf) in q.iter().enumerate() {
                let col = &data[f * n + from..f * n + from + tile.len()];
                for (o, &v) in tile.iter_mut().zip(col) {
                    let t = v - qf;
                    *o += t * t;
                }
            }
        }
    }
}

/// `‖a − b‖²` summed feature by feature in order, with plain multiplies and
/// adds: the value [`Columns64::sq_dists`] gives for each row.
#[inline]
pub fn sq_dist_in_order(a: &[f64], b: &[f64]) -> f64 {
    let mut s = 0.0;
    for (&x, &y) in a.iter().zip(b) {
        let t = x - y;
        s += t * t;
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn feature_major_distances_are_the_row_by_row_sums_bit_for_bit() {
        // Odd row counts and widths (tiles and vector tails), magnitudes far
        // apart, and the rows permuted as shrinking does.
        let mut state = 7u64;
        let mut next = || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 11) as f64 / (1u64 << 52) as f64 - 1.0
        };
        for (n, d) in [(1, 1), (7, 3), (1037, 9), (2 * SQ_DIST_TILE + 5, 22)] {
            let data: Vec<f64> = (0..n * d)
                .map(|k| next() * [1.0, 1e4, 1e-3][k % 3])
                .collect();
            let mut rows = Rows::new(data, n, d).unwrap();
            let mut cols = Columns64::try_new(&rows).unwrap();
            let swaps: Vec<(usize, usize)> = (0..n / 2).map(|k| (k, n - 1 - k / 2)).collect();
            for &(i, j) in &swaps {
                rows.swap(i, j);
            }
            cols.swap_many(&swaps);
            for i in [0, n / 2, n - 1] {
                for start in [0, n / 3] {
                    let mut got = vec![f64::NAN; n - start];
                    cols.sq_dists(rows.row(i), start, &mut got);
                    for (k, g) in got.iter().enumerate() {
                        let want = sq_dist_in_order(rows.row(i), rows.row(start + k));
                        assert_eq!(g.to_bits(), want.to_bits(), "n={n} d={d} i={i} row {k}");
                    }
                }
            }
        }
    }
}
