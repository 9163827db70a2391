//! The block of held kernel columns, the column sums that add moved members'
//! columns to the gradient, and the chunks of a round's pass.

use super::*;

/// The block: the kernel columns of up to `cap` variables over all `n`
/// rows (the working set's and, while the budget holds them, those of
/// earlier members, so a variable that comes back needs no new column),
/// stored by tiles of [`TILE_ROWS`] rows: tile `r` holds, from
/// `r · TILE_ROWS · cap` on, every slot's values over its rows, one slot
/// after the other.
pub(super) struct Block {
    pub(super) cap: usize,
    pub(super) data: Vec<f32>,
    /// The variable each slot holds (`usize::MAX`: none).
    pub(super) holder: Vec<usize>,
    /// Each variable's slot (`usize::MAX`: none).
    pub(super) slot_of: Vec<usize>,
    /// The last round each slot was in the working set.
    pub(super) used: Vec<u64>,
}

impl Block {
    /// Forgets every held column and lays the block out anew for the
    /// first `rows` rows: as many slots as its values hold, `most` at most.
    pub(super) fn reset(&mut self, rows: usize, most: usize) {
        self.cap = (self.data.len() / rows.max(1)).min(most);
        self.holder.clear();
        self.holder.resize(self.cap, usize::MAX);
        self.used.clear();
        self.used.resize(self.cap, 0);
        self.slot_of.fill(usize::MAX);
    }

    /// Slots for the variables `wanted` (none of them held), taken from the
    /// free slots, then from those least recently in the working set; the
    /// slots in `keep` stay. The evicted variables lose their slot.
    pub(super) fn make_room(&mut self, wanted: &[usize], keep: &[bool]) -> Vec<usize> {
        let mut free: Vec<usize> = (0..self.cap).filter(|&s| !keep[s]).collect();
        free.sort_unstable_by_key(|&s| (self.holder[s] != usize::MAX, self.used[s], s));
        let mut slots = Vec::with_capacity(wanted.len());
        for (&t, &s) in wanted.iter().zip(&free) {
            if self.holder[s] != usize::MAX {
                self.slot_of[self.holder[s]] = usize::MAX;
            }
            self.holder[s] = t;
            self.slot_of[t] = s;
            slots.push(s);
        }
        slots
    }
}

multiversion! {
    /// The columns of `queries` (factors `factors`) over panel rows
    /// `[start, end)`, four per pass: `outs[k][t − start] = factors[k] ·
    /// scale[t] · K(q_k, x_t)`, the values of the one-column fill.
    pub(super) fn fill_tile, fn fill_tile_impl(
        kind: KernelKind,
        panel: &Panel,
        queries: &[&Query],
        factors: &[f32],
        scale: &[f32],
        start: usize,
        end: usize,
        outs: &mut [&mut [f32]],
    ) {
        let mut k = 0;
        while k + 4 <= queries.len() {
            let [a, b, c, d] = &mut outs[k..k + 4] else {
                unreachable!("four outputs");
            };
            let qs = [queries[k], queries[k + 1], queries[k + 2], queries[k + 3]];
            let fs = [factors[k], factors[k + 1], factors[k + 2], factors[k + 3]];
            let outs4 = [&mut **a, &mut **b, &mut **c, &mut **d];
            fill_four_impl::<FMA>(kind, panel, qs, fs, scale, start, end, outs4);
            k += 4;
        }
        while k < queries.len() {
            let out = &mut *outs[k];
            fill_one_impl::<FMA>(kind, panel, queries[k], factors[k], scale, start, end, out);
            k += 1;
        }
    }
}

/// `g[t] += w · cols[slot][t]` for each `(slot, w)` of `moves` in turn,
/// four columns per pass over `g` ([`simd::add_scaled_4`]: the bits of one
/// column at a time).
#[inline(always)]
pub(super) fn accumulate_columns(cols: &[&mut [f32]], moves: &[(usize, f64)], g: &mut [f64]) {
    let len = g.len();
    let col = |slot: usize| &cols[slot][..len];
    let mut quads = moves.chunks_exact(4);
    for quad in &mut quads {
        let w = [quad[0].1, quad[1].1, quad[2].1, quad[3].1];
        let four = [
            col(quad[0].0),
            col(quad[1].0),
            col(quad[2].0),
            col(quad[3].0),
        ];
        simd::add_scaled_4(g, w, four);
    }
    for &(slot, w) in quads.remainder() {
        simd::add_scaled(g, w, col(slot));
    }
}

multiversion! {
    /// `g[t] += w · cols[slot][t]` for each `(slot, w)` of `moves` and
    /// `gb[t] += v · cols[slot][t]` for each of `bar_moves`, over one tile,
    /// in their order.
    pub(super) fn add_tile, fn add_tile_impl(
        cols: &[&mut [f32]],
        moves: &[(usize, f64)],
        bar_moves: &[(usize, f64)],
        g: &mut [f64],
        gb: &mut [f64],
    ) {
        accumulate_columns(cols, moves, g);
        accumulate_columns(cols, bar_moves, gb);
    }
}

multiversion! {
    /// `own[k] = Σ_l b[k·m + l] · x[l]` over the `m × m` block `b` (its
    /// values widened to `f64`, exactly), the terms in the order of `l` (a
    /// product and a sum each, not fused: [`simd::add_scaled`]), those with
    /// `x[l] = 0` left out (they add a zero, which can change only the sign
    /// of a zero sum). The rows are read as columns: the block is symmetric
    /// bit for bit (each value is `y_k y_l` times the kernel of the same
    /// squared differences), so `own` is added a row of `b` at a time,
    /// across `k`.
    pub(super) fn block_times, fn block_times_impl(b: &[f32], x: &[f64], own: &mut [f64]) {
        let m = x.len();
        own.fill(0.0);
        for (l, &xl) in x.iter().enumerate() {
            if xl != 0.0 {
                simd::add_scaled(own, xl, &b[l * m..(l + 1) * m]);
            }
        }
    }
}

/// Rows of the subproblem's `q × q` block per piece of the team's job.
pub(super) const BLOCK_ROWS_PER_PIECE: usize = if cfg!(test) { 5 } else { 64 };

/// New columns per chunk of a round's pass (see [`Chunk`]): their values
/// over one tile (`4 · TILE_ROWS` bytes each) stay in the processor's
/// second-level cache until added to `G`.
/// (Fewer in this crate's unit tests, so rounds have several chunks and
/// chunks that are not whole fours.)
pub(super) const FRESH_PER_CHUNK: usize = if cfg!(test) { 6 } else { 32 };

/// A run of a round's moved members, in their order: its moves and
/// upper-bound changes (ranges of the round's lists) and its new columns
/// (a range of the round's missing members). The pass fills a chunk's new
/// columns over a tile, then adds the chunk's columns to `G` and `Ḡ`, so
/// the sums run in the members' order whatever the chunks.
#[derive(Clone, Debug)]
pub(super) struct Chunk {
    pub(super) moves: std::ops::Range<usize>,
    pub(super) bars: std::ops::Range<usize>,
    pub(super) fresh: std::ops::Range<usize>,
}

/// `sign`'s values as `f32` (`±1`, exact).
pub(super) fn signs_f32(y: &[f64]) -> Result<Vec<f32>> {
    let hint = "use a smaller cache_size or solver='smo'";
    let mut s = try_with_capacity(y.len(), "the labels as float32", hint)?;
    s.extend(y.iter().map(|&v| v as f32));
    Ok(s)
}
