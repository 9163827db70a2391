//! The kernel store: the kept rows feature by feature (columns narrowed to
//! the type that holds their values), their sparsity pattern, the blocks of
//! dot products of a batch, and the lane-masked scans over the kept examples.

use super::*;

/// The nonzeros of the stored rows that are sparse enough to take part in
/// the sparse dot product ([`sparse_pair`]), in increasing column order;
/// derived from the rows (never pickled).
#[derive(Clone, Debug, Default)]
pub(super) struct Pattern {
    /// Nonzeros of each stored row.
    pub(super) nnz: Vec<usize>,
    /// Where each stored row's entries start in `idx` and `val` (rows too
    /// dense for the sparse product have none).
    pub(super) start: Vec<usize>,
    pub(super) idx: Vec<u32>,
    pub(super) val: Vec<f64>,
}

impl Pattern {
    /// Appends a row.
    pub(super) fn push(&mut self, row: &[f64]) {
        let nnz = row.iter().filter(|&&v| v != 0.0).count();
        self.nnz.push(nnz);
        self.start.push(self.idx.len());
        if 3 * nnz <= row.len() {
            for (k, &v) in row.iter().enumerate() {
                if v != 0.0 {
                    self.idx.push(k as u32);
                    self.val.push(v);
                }
            }
        }
    }
}

/// True when the dot product of rows with `a` and `b` nonzeros is summed
/// over the sparser row's nonzeros ([`gather_dot`]) instead of over every
/// column ([`seq_dot`]). Every dot product of the learner is the one sum
/// `Σ_k a_k b_k` taken in increasing column order with one accumulator
/// that starts at `+0`, each product rounded and then added (no fused
/// multiply-add); the paths differ only in the terms they skip, products
/// with a zero factor, and adding a zero of either sign to such a sum
/// (which is never `−0`) leaves it as it is. So every kernel value is the
/// same function of its pair whichever side, path or block of rows
/// computes it ([`column_dots`] included), in whatever order, and after a
/// pickle round trip: the learner stays deterministic.
#[inline]
pub(super) fn sparse_pair(a: usize, b: usize, d: usize) -> bool {
    3 * a.min(b) <= d
}

/// `Σ_k val[k] · dense[idx[k]]`, in order.
#[inline]
pub(super) fn gather_dot(idx: &[u32], val: &[f64], dense: &[f64]) -> f64 {
    let mut sum = 0.0;
    for (&k, &v) in idx.iter().zip(val) {
        sum += v * dense[k as usize];
    }
    sum
}

/// `Σ_k a_k b_k` in column order, one accumulator (see [`sparse_pair`]).
#[inline]
pub(super) fn seq_dot(a: &[f64], b: &[f64]) -> f64 {
    let mut sum = 0.0;
    for (&x, &y) in a.iter().zip(b) {
        sum += x * y;
    }
    sum
}

/// `x` rounded to the nearest integer, ties to even: `f64::round_ties_even`
/// without its library call (which the scan of [`OnlineLearner::violators`]
/// made once per kept example). Adding and taking away `2⁵²` rounds in the
/// default mode (to nearest, ties to even) and is exact below `2⁵²`, where
/// `ulp = 1`; the sign is put back so that `−0.3` gives `−0`, as
/// `round_ties_even` does. Larger values (already integers), infinities
/// and NaN come back as they are.
#[inline]
pub(super) fn round_even(x: f64) -> f64 {
    pub(super) const TWO52: f64 = 4_503_599_627_370_496.0;
    let a = x.abs();
    if a < TWO52 {
        ((a + TWO52) - TWO52).copysign(x)
    } else {
        x
    }
}

/// For the last rounded value `v` a full side of
/// [`OnlineLearner::violators`] holds (an integer), bounds `(lo, hi)` on
/// `exact` outside which `round_even(exact / tol)` is at least one unit
/// away from `v`: below `lo` it is at most `v − 1` (it cannot enter the up
/// side, which needs a value above `v`), above `hi` at least `v + 1` (it
/// cannot enter the low side, which needs one below `v`). The unit of room
/// keeps the signed zeros of `round_even` (ordered by `total_cmp`) out of
/// the question, and covers the rounding of the products and of the
/// quotient while `|v| < 2⁴⁰`; beyond that there are no bounds.
#[inline]
pub(super) fn entry_bounds(v: f64, tol: f64) -> (f64, f64) {
    pub(super) const BIG: f64 = 1_099_511_627_776.0; // 2⁴⁰
    if v.abs() < BIG {
        ((v - 0.75) * tol, (v + 0.75) * tol)
    } else {
        (f64::NEG_INFINITY, f64::INFINITY)
    }
}

/// `‖row‖²`, the learner's dot product of the row with itself, so that
/// `K(x, x)` comes out exact (`‖x − x‖² = 0` for RBF).
pub(super) fn sq_norm(row: &[f64]) -> f64 {
    seq_dot(row, row)
}

/// The nonzeros `(column, value)` of a row, in column order: the terms of
/// its dot products in [`column_dots`].
pub(super) fn nonzeros(row: &[f64]) -> Vec<(u32, f64)> {
    let mut out = Vec::new();
    nonzeros_into(row, &mut out);
    out
}

/// [`nonzeros`] of `row` into `out` (its old entries dropped, its room kept).
pub(super) fn nonzeros_into(row: &[f64], out: &mut Vec<(u32, f64)>) {
    out.clear();
    out.extend(
        row.iter()
            .enumerate()
            .filter(|(_, &v)| v != 0.0)
            .map(|(k, &v)| (k as u32, v)),
    );
}

/// Kernel rows computed together by [`OnlineLearner::ensure_rows`] (the
/// dot products of at most this many rows with the store are held at
/// once).
pub(super) const ROWS_PER_PASS: usize = 16;

/// Stored rows per pass of [`column_dots`]: the pass's columns (`8·d`
/// bytes per row) stay in cache while every query of the block runs down
/// them.
pub(super) const COLUMN_TILE: usize = 512;

/// One feature of the stored rows (`x_ik` for every stored row `i`), held
/// in the narrowest of `i8`, `f32` and `f64` that gives back each of its
/// values bit for bit: [`column_dots`] streams the columns of a query's
/// nonzeros past every stored row, and on data of small integers (one-hot
/// encodings, counts) or of `float32` origin it then reads an eighth or
/// half of the bytes, with the same products (the conversion to `f64` is
/// exact). A column widens when a value it cannot hold arrives
/// ([`OnlineLearner::reserve`] does it before a batch, fallibly) and is
/// narrowed again when the store is rebuilt ([`OnlineLearner::index_rows`]).
#[derive(Clone, Debug)]
pub(super) enum Column {
    Small(Vec<i8>),
    Single(Vec<f32>),
    Double(Vec<f64>),
}

impl Default for Column {
    fn default() -> Self {
        Column::Small(Vec::new())
    }
}

/// The widths of [`Column`]'s types, narrowest first.
pub(super) const SMALL: u8 = 0;
pub(super) const SINGLE: u8 = 1;
pub(super) const DOUBLE: u8 = 2;

/// The narrowest [`Column`] width that gives `v` back bit for bit (`−0` is
/// not an `i8`).
#[inline]
pub(super) fn width_of(v: f64) -> u8 {
    if f64::from(v as i8).to_bits() == v.to_bits() {
        SMALL
    } else if f64::from(v as f32).to_bits() == v.to_bits() {
        SINGLE
    } else {
        DOUBLE
    }
}

/// The narrowest [`Column`] width of each of the `d` features of the
/// row-major rows `x`.
pub(super) fn column_widths(x: &[f64], d: usize) -> Vec<u8> {
    let mut widths = vec![SMALL; d];
    for row in x.chunks_exact(d.max(1)) {
        for (w, &v) in widths.iter_mut().zip(row) {
            *w = (*w).max(width_of(v));
        }
    }
    widths
}

impl Column {
    /// A column of `values`, all of which fit `width`.
    pub(super) fn of(width: u8, values: impl Iterator<Item = f64>) -> Column {
        match width {
            SMALL => Column::Small(values.map(|v| v as i8).collect()),
            SINGLE => Column::Single(values.map(|v| v as f32).collect()),
            _ => Column::Double(values.collect()),
        }
    }

    /// An empty column of `width`, with room for `n` values.
    pub(super) fn with_capacity(width: u8, n: usize) -> Column {
        match width {
            SMALL => Column::Small(Vec::with_capacity(n)),
            SINGLE => Column::Single(Vec::with_capacity(n)),
            _ => Column::Double(Vec::with_capacity(n)),
        }
    }

    pub(super) fn width(&self) -> u8 {
        match self {
            Column::Small(_) => SMALL,
            Column::Single(_) => SINGLE,
            Column::Double(_) => DOUBLE,
        }
    }

    pub(super) fn len(&self) -> usize {
        match self {
            Column::Small(c) => c.len(),
            Column::Single(c) => c.len(),
            Column::Double(c) => c.len(),
        }
    }

    /// `x_ik` of stored row `i`.
    pub(super) fn get(&self, i: usize) -> f64 {
        match self {
            Column::Small(c) => f64::from(c[i]),
            Column::Single(c) => f64::from(c[i]),
            Column::Double(c) => c[i],
        }
    }

    /// Room for `extra` more values, in a type at least `width` wide (the
    /// values converted when it widens): fallible, so that a batch's
    /// columns are allocated before any of it is learnt.
    pub(super) fn reserve(&mut self, width: u8, extra: usize) -> std::result::Result<(), ()> {
        let width = width.max(self.width());
        if width == self.width() {
            return match self {
                Column::Small(c) => c.try_reserve(extra),
                Column::Single(c) => c.try_reserve(extra),
                Column::Double(c) => c.try_reserve(extra),
            }
            .map_err(|_| ());
        }
        let n = self.len();
        let mut wide = match width {
            SINGLE => Column::Single(Vec::new()),
            _ => Column::Double(Vec::new()),
        };
        let room = n.checked_add(extra).ok_or(())?;
        match &mut wide {
            Column::Single(c) => c.try_reserve_exact(room),
            Column::Double(c) => c.try_reserve_exact(room),
            Column::Small(_) => unreachable!("only wider types are made"),
        }
        .map_err(|_| ())?;
        for i in 0..n {
            wide.push_fitting(self.get(i));
        }
        *self = wide;
        Ok(())
    }

    /// Appends `v`, which fits the column's type.
    #[inline]
    pub(super) fn push_fitting(&mut self, v: f64) {
        match self {
            Column::Small(c) => c.push(v as i8),
            Column::Single(c) => c.push(v as f32),
            Column::Double(c) => c.push(v),
        }
    }

    /// Appends `v`, widening the column first if its type cannot hold it
    /// (after [`Column::reserve`] for the batch it never needs to).
    pub(super) fn push(&mut self, v: f64) {
        let w = width_of(v);
        if w > self.width() {
            let wide = Column::of(w, (0..self.len()).map(|i| self.get(i)));
            *self = wide;
        }
        self.push_fitting(v);
    }
}

/// Adds the products of `q`'s nonzeros (in increasing column order) with
/// rows `a..b` of their columns to `acc`: four columns per pass where four
/// consecutive nonzeros have columns of one type, else one.
#[inline(always)]
pub(super) fn accumulate(acc: &mut [f64], cols: &[Column], q: &[(u32, f64)], a: usize, b: usize) {
    // Four nonzeros whose columns are all of type `$kind`, if they are.
    macro_rules! four_of {
        ($kind:ident, $g:expr) => {
            match (
                &cols[$g[0].0 as usize],
                &cols[$g[1].0 as usize],
                &cols[$g[2].0 as usize],
                &cols[$g[3].0 as usize],
            ) {
                (Column::$kind(x0), Column::$kind(x1), Column::$kind(x2), Column::$kind(x3)) => {
                    let w = [$g[0].1, $g[1].1, $g[2].1, $g[3].1];
                    simd::add_scaled_4(acc, w, [&x0[a..b], &x1[a..b], &x2[a..b], &x3[a..b]]);
                    true
                }
                _ => false,
            }
        };
    }
    let mut t = 0;
    while t < q.len() {
        if t + 4 <= q.len() {
            let g = &q[t..t + 4];
            if four_of!(Small, g) || four_of!(Single, g) || four_of!(Double, g) {
                t += 4;
                continue;
            }
        }
        let (k, v) = q[t];
        match &cols[k as usize] {
            Column::Small(c) => simd::add_scaled(acc, v, &c[a..b]),
            Column::Single(c) => simd::add_scaled(acc, v, &c[a..b]),
            Column::Double(c) => simd::add_scaled(acc, v, &c[a..b]),
        }
        t += 1;
    }
}

multiversion! {
    /// `out[t·stride + i − lo] = x_i · q_t` for the stored rows `i` in
    /// `lo..lo + len`, from the rows feature by feature (`cols[k]`, holding
    /// `x_ik` exactly) and each query's nonzeros `nz[t]`: the sum over the
    /// query's nonzero columns in increasing order, one accumulator per
    /// stored row (so the loop vectorises across stored rows), the same
    /// value as [`OnlineLearner::dot_with`] (see [`sparse_pair`]). In tiles
    /// of [`COLUMN_TILE`] stored rows, every query passing over a tile
    /// while it is in cache.
    pub(super) fn column_dots, fn column_dots_impl(
        cols: &[Column],
        nz: &[Vec<(u32, f64)>],
        lo: usize,
        len: usize,
        out: &mut [f64],
        stride: usize,
    ) {
        let mut a = lo;
        while a < lo + len {
            let b = (a + COLUMN_TILE).min(lo + len);
            for (t, q) in nz.iter().enumerate() {
                let acc = &mut out[t * stride + a - lo..t * stride + b - lo];
                acc.fill(0.0);
                accumulate(acc, cols, q, a, b);
            }
            a = b;
        }
    }
}

multiversion! {
    /// `out[c·rows + t] = x_i · q_t` for the stored rows `i = cover[c]` and
    /// the `rows` queries held feature by feature in `qt` (`qt[k·rows + t]`
    /// is feature `k` of query `t`): the sum over stored row `i`'s features
    /// in increasing order (its nonzeros when it is sparse, every feature
    /// otherwise), one accumulator per query that starts at `+0`, each
    /// product rounded and then added. The same terms as [`column_dots`]
    /// in the same order, save products with a zero factor, which leave
    /// such a sum as it is (see [`sparse_pair`]): the same values, the
    /// loop vectorised across the queries instead of across stored rows,
    /// so that only the listed rows are visited.
    pub(super) fn row_dots, fn row_dots_impl(
        x: &[f64],
        d: usize,
        pattern: &Pattern,
        cover: &[usize],
        qt: &[f64],
        rows: usize,
        out: &mut [f64],
    ) {
        for (c, &i) in cover.iter().enumerate() {
            let acc = &mut out[c * rows..(c + 1) * rows];
            acc.fill(0.0);
            let nnz = pattern.nnz[i];
            if 3 * nnz <= d {
                let s = pattern.start[i];
                for (&k, &v) in pattern.idx[s..s + nnz].iter().zip(&pattern.val[s..s + nnz]) {
                    let k = k as usize;
                    simd::add_scaled(acc, v, &qt[k * rows..(k + 1) * rows]);
                }
            } else {
                let row = &x[i * d..(i + 1) * d];
                let mut k = 0;
                while k + 4 <= d {
                    let w = [row[k], row[k + 1], row[k + 2], row[k + 3]];
                    simd::add_scaled_4(
                        acc,
                        w,
                        [
                            &qt[k * rows..(k + 1) * rows],
                            &qt[(k + 1) * rows..(k + 2) * rows],
                            &qt[(k + 2) * rows..(k + 3) * rows],
                            &qt[(k + 3) * rows..(k + 4) * rows],
                        ],
                    );
                    k += 4;
                }
                while k < d {
                    simd::add_scaled(acc, row[k], &qt[k * rows..(k + 1) * rows]);
                    k += 1;
                }
            }
        }
    }
}

/// A row whose dot products with the stored rows are taken: dense, with
/// its nonzeros listed when it is sparse enough for [`sparse_pair`] to pick
/// them.
pub(super) struct Query<'a> {
    pub(super) dense: &'a [f64],
    pub(super) nnz: usize,
    pub(super) idx: std::borrow::Cow<'a, [u32]>,
    pub(super) val: std::borrow::Cow<'a, [f64]>,
}

impl<'a> Query<'a> {
    /// A row from outside the store.
    pub(super) fn new(dense: &'a [f64]) -> Self {
        let d = dense.len();
        let nnz = dense.iter().filter(|&&v| v != 0.0).count();
        let (mut idx, mut val) = (Vec::new(), Vec::new());
        if 3 * nnz <= d {
            for (k, &v) in dense.iter().enumerate() {
                if v != 0.0 {
                    idx.push(k as u32);
                    val.push(v);
                }
            }
        }
        Query {
            dense,
            nnz,
            idx: idx.into(),
            val: val.into(),
        }
    }
}

/// The dot products of a block of the batch's rows (the next ones to
/// learn) with the rows stored when the block was computed, all in one
/// pass over the stored columns ([`column_dots`]); each example then needs
/// dot products only with the rows stored since. Renumbered with the store
/// when it is compacted.
#[derive(Clone, Debug, Default)]
pub(super) struct Block {
    /// Row-major, `stride` values per row of the block.
    pub(super) dots: Vec<f64>,
    /// Stored rows the block covers (the first `width`).
    pub(super) width: usize,
    /// Values from one row of the block to the next in `dots` (a row
    /// over every stored row has room after its `width` values for the
    /// rows stored while the block is learnt).
    pub(super) stride: usize,
    /// Rows in the block; the next to learn is `next`.
    pub(super) rows: usize,
    pub(super) next: usize,
    /// Empty: `dots` holds each row's dot products with the first `width`
    /// stored rows. Otherwise the block covers these stored rows only (the
    /// support vectors when it was computed, [`OnlineLearner::compute_block`]),
    /// `dots` holding `rows` values per covered row (covered row by covered
    /// row), and `slot[i]` is where stored row `i` is covered ([`UNCOVERED`]
    /// if it is not; `slot` spans the first `width` stored rows).
    pub(super) cover: Vec<usize>,
    pub(super) slot: Vec<u32>,
    /// After a compaction while the block is learnt: the stored rows it
    /// covers that were kept, by their former positions (increasing), to
    /// be applied by [`Block::renumber`].
    pub(super) renumber: Option<Vec<usize>>,
}

/// [`Block::slot`] of a stored row the block does not cover.
pub(super) const UNCOVERED: u32 = u32::MAX;

/// Buffers reused from example to example (derived, never pickled): an
/// update would otherwise allocate several store-sized lists.
#[derive(Clone, Debug, Default)]
pub(super) struct Scratch {
    /// A row's nonzeros, for [`column_dots`].
    pub(super) nz: Vec<(u32, f64)>,
    /// The kept rows without a multiplier, and their kernel values with
    /// the new example.
    pub(super) rest: Vec<usize>,
    pub(super) k_rest: Vec<f64>,
    /// The nearest candidates, and the most violating examples
    /// ([`offer`]).
    pub(super) near: Vec<(f64, usize)>,
    pub(super) up: Vec<(f64, usize)>,
    pub(super) low: Vec<(f64, usize)>,
    /// A batch row's dot products with the stored rows, and the support
    /// vectors' kernel values with it.
    pub(super) dots: Vec<f64>,
    pub(super) k_sv: Vec<f64>,
    /// The buffers of the last [`Expansion`].
    pub(super) spare: Expansion,
    /// A solve's moved multipliers (position, weight), the kernel rows
    /// among them with nothing cached, and their dot products
    /// ([`OnlineLearner::ensure_rows`]).
    pub(super) moved: Vec<(usize, f64)>,
    pub(super) missing: Vec<usize>,
    pub(super) rows: Vec<f64>,
}

impl Block {
    /// No rows; the buffer is kept for the next block.
    pub(super) fn clear(&mut self) {
        self.dots.clear();
        self.width = 0;
        self.stride = 0;
        self.rows = 0;
        self.next = 0;
        self.cover.clear();
        self.slot.clear();
        self.renumber = None;
    }

    /// Applies a pending compaction ([`Block::renumber`]) to a block over
    /// every stored row, `n` rows being stored now: its rows not yet learnt
    /// keep the dot products of the kept rows, in their new order, and
    /// cover those only (the rows stored after them are formed as the
    /// block's own are, [`OnlineLearner::extend_block_row`]).
    pub(super) fn apply_renumber(&mut self, n: usize) {
        let Some(keep) = self.renumber.take() else {
            return;
        };
        // Room for the rows stored after the kept ones it covers (of the
        // `n` stored now) and for one per example still to learn.
        let (left, width) = (self.rows - self.next, keep.len());
        let stride = n.max(width) + left;
        let mut dots = Vec::with_capacity(left * stride);
        for t in self.next..self.rows {
            let row = &self.dots[t * self.stride..t * self.stride + self.width];
            dots.extend(keep.iter().map(|&i| row[i]));
            dots.resize(dots.len() + (stride - width), 0.0);
        }
        *self = Block {
            dots,
            width,
            stride,
            rows: left,
            next: 0,
            cover: std::mem::take(&mut self.cover),
            slot: std::mem::take(&mut self.slot),
            renumber: None,
        };
    }

    /// True when the block covers the support vectors only (see
    /// [`Block::cover`]).
    pub(super) fn covers_support(&self) -> bool {
        !self.cover.is_empty()
    }
}

/// The support vectors as [`OnlineLearner::step`] sums over them.
#[derive(Clone, Debug, Default)]
pub(super) struct Expansion {
    pub(super) idx: Vec<usize>,
    pub(super) coef: Vec<f64>,
    pub(super) sq: Vec<f64>,
}

/// Lanes of the sums over the stored rows that [`slack_lanes`] and
/// [`bias_terms`] take.
pub(super) const LANES: usize = 8;

/// All ones for each `true` of eight flags, all zeros for each `false`: an
/// `f64` and-ed with it is kept or made `+0`. Read as one word (a `bool` is
/// the byte 0 or 1), so that the scans vectorise; lane by lane, each flag
/// cost a byte load and a mask move.
#[inline(always)]
pub(super) fn lane_masks(flags: &[bool]) -> [u64; LANES] {
    let flags: &[bool; LANES] = flags.try_into().expect("a lane of flags");
    let word = u64::from_le_bytes(flags.map(u8::from));
    std::array::from_fn(|l| 0u64.wrapping_sub((word >> (8 * l)) & 1))
}

/// `v` where `mask` is all ones, `+0` where it is zero.
#[inline(always)]
pub(super) fn masked(v: f64, mask: u64) -> f64 {
    f64::from_bits(v.to_bits() & mask)
}

/// `v` where `mask` is all ones, `other` where it is zero.
#[inline(always)]
pub(super) fn select(mask: u64, v: f64, other: f64) -> f64 {
    f64::from_bits((v.to_bits() & mask) | (other.to_bits() & !mask))
}

multiversion! {
    /// `Σ_i max(0, 1 − y_i (g_i + b))²` over the rows with `alive[i]`, in
    /// eight lanes (row `i` in lane `i mod 8`, [`LANES`]) added pairwise,
    /// then the rows after the last whole lane.
    pub(super) fn slack_lanes, fn slack_lanes_impl(y: &[f64], g: &[f64], alive: &[bool], b: f64) -> f64 {
        let n = y.len().min(g.len()).min(alive.len());
        let whole = n / LANES * LANES;
        let mut acc = [0.0f64; LANES];
        let lanes = y[..whole]
            .chunks_exact(LANES)
            .zip(g[..whole].chunks_exact(LANES))
            .zip(alive[..whole].chunks_exact(LANES));
        for ((y, g), alive) in lanes {
            let keep = lane_masks(alive);
            for l in 0..LANES {
                let xi = (1.0 - y[l] * (g[l] + b)).max(0.0);
                acc[l] += masked(xi * xi, keep[l]);
            }
        }
        let mut tail = 0.0;
        for i in whole..n {
            let xi = (1.0 - y[i] * (g[i] + b)).max(0.0);
            tail += if alive[i] { xi * xi } else { 0.0 };
        }
        simd::sum_lanes(acc) + tail
    }
}
multiversion! {
    /// `g_i += delta · k_i` for the rows with `alive[i]`; a forgotten row's
    /// `g_i` stays as it was when it was forgotten, whatever its entry in a
    /// cached kernel row holds (so the model does not depend on the cache).
    pub(super) fn add_column, fn add_column_impl(g: &mut [f64], k: &[f64], alive: &[bool], delta: f64) {
        for ((gi, &ki), &a) in g.iter_mut().zip(k).zip(alive) {
            let v = *gi + delta * ki;
            *gi = if a { v } else { *gi };
        }
    }
}

/// One row's share of [`bias_terms`], for `v = g − y` and `live` all ones
/// (a kept row) or all zeros (a forgotten one): `(v, 1)` to the sum and the
/// count where the multiplier is free (`0 < a < c`), else `(+0, 0)`; `v` as
/// the candidate for the smallest (`(a ≥ c) = (y < 0)`) or the largest of
/// the bounded ones, `+∞` and `−∞` where the row is not one. Branch-free,
/// so the lanes' loop vectorises; the rows after the last whole lane take
/// the same arithmetic.
#[inline(always)]
fn bias_row(a: f64, yi: f64, gi: f64, live: u64, c: f64) -> (f64, u64, f64, f64) {
    let v = gi - yi;
    let is_free = live & 0u64.wrapping_sub(u64::from(a > 0.0 && a < c));
    let bounded = live & !is_free;
    let up = bounded & 0u64.wrapping_sub(u64::from((a >= c) == (yi < 0.0)));
    let down = bounded & !up;
    (
        masked(v, is_free),
        is_free & 1,
        select(up, v, f64::INFINITY),
        select(down, v, f64::NEG_INFINITY),
    )
}

multiversion! {
    /// What [`OnlineLearner::global_bias`] needs from the rows with
    /// `alive[i]`, for `v_i = g_i − y_i`: the sum and the number of `v_i`
    /// over the free multipliers (`0 < α_i < c`; the sum in eight lanes
    /// added pairwise, then the rows after the last whole lane), the
    /// smallest `v_i` over the bounded ones with `(α_i ≥ c) = (y_i < 0)`
    /// and the largest over the other bounded ones. Branch-free, the
    /// choices made with masks ([`lane_masks`]), so it vectorises.
    pub(super) fn bias_terms, fn bias_terms_impl(
        y: &[f64],
        g: &[f64],
        alpha: &[f64],
        alive: &[bool],
        c: f64,
    ) -> (f64, usize, f64, f64) {
        let n = y.len().min(g.len()).min(alpha.len()).min(alive.len());
        let whole = n / LANES * LANES;
        let mut sum = [0.0f64; LANES];
        let mut free = [0u64; LANES];
        let mut ub = [f64::INFINITY; LANES];
        let mut lb = [f64::NEG_INFINITY; LANES];
        let lanes = y[..whole]
            .chunks_exact(LANES)
            .zip(g[..whole].chunks_exact(LANES))
            .zip(alpha[..whole].chunks_exact(LANES))
            .zip(alive[..whole].chunks_exact(LANES));
        for (((y, g), alpha), alive) in lanes {
            let live = lane_masks(alive);
            for l in 0..LANES {
                let (s, f, u, d) = bias_row(alpha[l], y[l], g[l], live[l], c);
                sum[l] += s;
                free[l] += f;
                ub[l] = ub[l].min(u);
                lb[l] = lb[l].max(d);
            }
        }
        let sum = simd::sum_lanes(sum);
        let (mut tail_sum, mut tail_free) = (0.0, 0u64);
        let (mut tail_ub, mut tail_lb) = (f64::INFINITY, f64::NEG_INFINITY);
        for i in whole..n {
            let live = 0u64.wrapping_sub(u64::from(alive[i]));
            let (s, f, u, d) = bias_row(alpha[i], y[i], g[i], live, c);
            tail_sum += s;
            tail_free += f;
            tail_ub = tail_ub.min(u);
            tail_lb = tail_lb.max(d);
        }
        let ub = ub.iter().chain([&tail_ub]).fold(f64::INFINITY, |m, &v| m.min(v));
        let lb = lb.iter().chain([&tail_lb]).fold(f64::NEG_INFINITY, |m, &v| m.max(v));
        let free = (free.iter().sum::<u64>() + tail_free) as usize;
        (sum + tail_sum, free, ub, lb)
    }
}
