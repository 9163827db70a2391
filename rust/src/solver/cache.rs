//! A least-recently-used cache of kernel (Q) columns, bounded in bytes.
//!
//! Columns are stored as `f32` or `f64` (the [`QValue`] of the solve's
//! precision, [`crate::precision`]) and may be filled only partly: a column holds
//! its first `len` entries, which is what the SMO solver asks for while some
//! variables are shrunk away (the active ones sit at the front after index
//! swapping). Asking for more entries later extends the column in place.
//!
//! Buffers of evicted columns are kept in a pool and reused, so a long solve
//! does not keep returning memory to the system and faulting it back in; the
//! budget counts every buffer, pooled or held.
//!
//! Index swaps (shrinking) reach a held column when it is next asked for,
//! not when they happen: the swaps are logged, each column remembers how
//! much of the log it has seen, and a column evicted before it is asked for
//! again never pays for them. Permuting every held column at every shrink
//! (one cache miss per swap per column) took 12 % of a warm-started fit's
//! CPU with a 2000 MB cache at 100 000 rows, nearly as much as computing
//! its kernel columns (15 %).
//!
//! When the system refuses a new
//! buffer below the budget, the budget shrinks to what the cache holds and
//! the least recently used columns make room, so a budget larger than the
//! free memory slows the solve down instead of aborting it.
//!
//! The same cache holds the online learner's kernel rows
//! ([`crate::incremental`]), `f64` values over a store of examples that
//! grows ([`ColumnCache::push`]) and is compacted ([`ColumnCache::retain`]);
//! its rows are extended by a few entries at a time, so they are given room
//! to grow ([`ColumnCache::growing`]).

use crate::error::memory_error;
use crate::precision::QValue;

/// Spare values given to a growing column beyond its eighth
/// ([`ColumnCache::growing`]), so that short columns are not copied at
/// every extension.
pub const GROW_SLACK: usize = 16;

/// `len` rounded up to the next of eight sizes per power of two (exact
/// below 16, at most an eighth more above): the buffer sizes of a growing
/// cache ([`ColumnCache::growing`]). Its columns lengthen a row at a time,
/// so without the rounding nearly every buffer has a size of its own: the
/// least recently used column's buffer was then almost never large enough
/// to be taken over, and the allocator, handed back one odd-sized buffer
/// for each new one, spent a twelfth of a one-row pass over a9a searching
/// its free lists.
pub fn size_class(len: usize) -> usize {
    if len < 16 {
        return len;
    }
    let shift = (usize::BITS - len.leading_zeros()) as usize - 4;
    let step = 1usize << shift;
    len.div_ceil(step).saturating_mul(step)
}

/// The cache of `T` values. Column `i` of an `n`-variable problem lives in
/// `cols[i]`.
#[derive(Clone, Debug)]
pub struct ColumnCache<T: QValue = f32> {
    capacity: usize,
    used: usize,
    cols: Vec<Vec<T>>,
    pool: Vec<Vec<T>>,
    // Doubly linked LRU list over column indices; index `n` is the sentinel.
    // The sentinel's `next` is the least recently used column. The links,
    // the log and `seen` hold `u32` (at most [`MAX_COLUMNS`] columns): 12
    // bytes less per column, and half as much per logged swap (the log
    // reaches `2n` swaps), than `usize`.
    prev: Vec<u32>,
    next: Vec<u32>,
    linked: Vec<bool>,
    // Swaps `(lo, hi)`, `lo < hi`, in the order made; column `i` has had
    // `log[..seen[i]]` applied to its entries.
    log: Vec<(u32, u32)>,
    seen: Vec<u32>,
    /// Extending a column beyond its buffer gives it an eighth more room
    /// ([`ColumnCache::growing`]).
    grow: bool,
    hits: u64,
    misses: u64,
}

/// The most columns a cache holds: its links are `u32` (and its log is
/// emptied before a position would leave `u32`).
pub const MAX_COLUMNS: usize = (u32::MAX / 4) as usize;

/// Refuses a cache of more than [`MAX_COLUMNS`] columns, with a panic whose
/// payload is an [`crate::error::Error::Memory`] (raised as `MemoryError` by
/// the bindings), as for a column the system refuses.
fn check_columns(n: usize) {
    if n > MAX_COLUMNS {
        std::panic::panic_any(crate::error::Error::Memory(format!(
            "not enough memory for a kernel cache over {n} variables (at most {MAX_COLUMNS} in \
             one problem); use fewer training examples"
        )));
    }
}

impl<T: QValue> ColumnCache<T> {
    /// Bytes per stored kernel value.
    const VALUE_BYTES: usize = std::mem::size_of::<T>();

    /// A cache for `n` columns limited to `bytes` bytes of values. The limit is
    /// raised to two full columns if smaller, because the solver must hold the
    /// two columns of a working pair at once.
    pub fn new(n: usize, bytes: usize) -> Self {
        check_columns(n);
        let capacity = (bytes / Self::VALUE_BYTES).max(2 * n);
        let sentinel = n as u32;
        ColumnCache {
            capacity,
            used: 0,
            cols: vec![Vec::new(); n],
            pool: Vec::new(),
            prev: vec![sentinel; n + 1],
            next: vec![sentinel; n + 1],
            linked: vec![false; n],
            log: Vec::new(),
            seen: vec![0; n],
            grow: false,
            hits: 0,
            misses: 0,
        }
    }

    /// The cache with columns that grow geometrically: a column extended
    /// beyond its buffer gets an eighth more than asked (plus
    /// [`GROW_SLACK`] values), so a column extended by a few entries at a
    /// time is copied `O(log len)` times rather than at every extension.
    /// Its buffers are of the sizes of [`size_class`].
    /// The spare room counts against the budget, hence an eighth rather
    /// than doubling, which left up to half of the budget empty (fewer
    /// columns held, more of them computed again). A column that needs a
    /// new buffer while the cache is full takes the buffer of the least
    /// recently used column when it is large enough, rather than freeing
    /// that one and allocating another.
    pub fn growing(mut self) -> Self {
        self.grow = true;
        self
    }

    /// Adds an empty column for a new variable, index `n` (the number of
    /// columns so far). The budget's floor of two full columns follows.
    pub fn push(&mut self) {
        let s = self.sentinel();
        let t = s + 1; // the sentinel's new index
        check_columns(t);
        let (lru, mru) = (self.next[s] as usize, self.prev[s] as usize);
        self.cols.push(Vec::new());
        self.linked.push(false);
        self.seen.push(self.log.len() as u32);
        self.prev.push(t as u32);
        self.next.push(t as u32);
        if lru != s {
            self.next[t] = lru as u32;
            self.prev[t] = mru as u32;
            self.prev[lru] = t as u32;
            self.next[mru] = t as u32;
        }
        self.prev[s] = t as u32;
        self.next[s] = t as u32;
        self.capacity = self.capacity.max(2 * self.cols.len());
    }

    /// A new byte budget (at least two full columns); least recently used
    /// columns are dropped until the cache is within it.
    pub fn set_budget(&mut self, bytes: usize) {
        self.capacity = (bytes / Self::VALUE_BYTES).max(2 * self.cols.len());
        let s = self.sentinel();
        self.make_room(0, s, None);
    }

    /// Keeps the variables listed in `keep` (increasing), renumbered
    /// `0..keep.len()` in that order: their columns move down and keep only
    /// the entries of kept variables, in the same least-recently-used order;
    /// the other columns' buffers go to the pool.
    pub fn retain(&mut self, keep: &[usize]) {
        debug_assert!(keep.windows(2).all(|w| w[0] < w[1]));
        self.catch_up_all();
        let order = self.lru_order();
        let s = self.sentinel();
        let mut new_index = vec![usize::MAX; s];
        let mut cols = Vec::with_capacity(keep.len());
        for (t, &j) in keep.iter().enumerate() {
            new_index[j] = t;
            let mut col = std::mem::take(&mut self.cols[j]);
            // keep[k] ≥ k, so gathering forwards reads before it writes.
            let len = keep.partition_point(|&k| k < col.len());
            for (k, &from) in keep[..len].iter().enumerate() {
                col[k] = col[from];
            }
            col.truncate(len);
            cols.push(col);
        }
        for mut buf in std::mem::replace(&mut self.cols, cols) {
            if buf.capacity() > 0 {
                buf.clear();
                self.pool.push(buf);
            }
        }
        let m = keep.len();
        self.prev = vec![m as u32; m + 1];
        self.next = vec![m as u32; m + 1];
        self.linked = vec![false; m];
        self.seen = vec![0; m];
        for old in order {
            let t = new_index[old];
            if t == usize::MAX {
                continue;
            }
            if self.cols[t].is_empty() {
                let mut buf = std::mem::take(&mut self.cols[t]);
                buf.clear();
                self.pool.push(buf);
            } else {
                self.push_most_recent(t);
            }
        }
        self.make_room(0, m, None);
    }

    /// The held columns, from least to most recently used.
    fn lru_order(&self) -> Vec<usize> {
        let s = self.sentinel();
        let mut order = Vec::new();
        let mut cursor = self.next[s] as usize;
        while cursor != s {
            order.push(cursor);
            cursor = self.next[cursor] as usize;
        }
        order
    }

    /// Sets entry `i` of every held column that holds it to `value`.
    pub fn set_entry(&mut self, i: usize, value: T) {
        self.catch_up_all();
        for col in &mut self.cols {
            if let Some(v) = col.get_mut(i) {
                *v = value;
            }
        }
    }

    /// Capacity in stored values.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Values the cache's buffers can hold (held columns and the pool).
    pub fn used(&self) -> usize {
        self.used
    }

    /// Requests answered without computing anything.
    pub fn hits(&self) -> u64 {
        self.hits
    }

    /// Requests that needed at least some values computed.
    pub fn misses(&self) -> u64 {
        self.misses
    }

    /// Number of entries of column `i` currently held (before the swaps it
    /// has not seen yet, which may drop it).
    pub fn held(&self, i: usize) -> usize {
        self.cols[i].len()
    }

    /// Applies the logged swaps column `i` has not seen. A column that
    /// holds one entry of a swapped pair but not the other can no longer be
    /// kept consistent and is dropped.
    #[inline]
    fn catch_up(&mut self, i: usize) {
        // Most requests find the column up to date: no call for them.
        if self.seen[i] as usize != self.log.len() {
            self.apply_log(i);
        }
    }

    /// [`ColumnCache::catch_up`]'s work, for a column behind the log.
    fn apply_log(&mut self, i: usize) {
        let from = self.seen[i] as usize;
        self.seen[i] = self.log.len() as u32;
        let col = &mut self.cols[i];
        let len = col.len();
        if len == 0 {
            return;
        }
        let mut consistent = true;
        for &(lo, hi) in &self.log[from..] {
            let (lo, hi) = (lo as usize, hi as usize);
            if len > hi {
                col.swap(lo, hi);
            } else if len > lo {
                consistent = false;
                break;
            }
        }
        if !consistent {
            self.evict(i);
        }
    }

    #[inline]
    fn sentinel(&self) -> usize {
        self.cols.len()
    }

    #[inline]
    fn unlink(&mut self, i: usize) {
        if self.linked[i] {
            let (p, n) = (self.prev[i], self.next[i]);
            self.next[p as usize] = n;
            self.prev[n as usize] = p;
            self.linked[i] = false;
        }
    }

    #[inline]
    fn push_most_recent(&mut self, i: usize) {
        let s = self.sentinel();
        let last = self.prev[s];
        self.next[last as usize] = i as u32;
        self.prev[i] = last;
        self.next[i] = s as u32;
        self.prev[s] = i as u32;
        self.linked[i] = true;
    }

    /// Drops column `i`, keeping its buffer in the pool.
    fn evict(&mut self, i: usize) {
        self.seen[i] = self.log.len() as u32;
        self.unlink(i);
        let mut buf = std::mem::take(&mut self.cols[i]);
        buf.clear();
        self.pool.push(buf);
    }

    /// The smallest pooled buffer that holds `len` values, if any.
    fn take_pooled(&mut self, len: usize) -> Option<Vec<T>> {
        let best = self
            .pool
            .iter()
            .enumerate()
            .filter(|(_, b)| b.capacity() >= len)
            .min_by_key(|(_, b)| b.capacity())
            .map(|(k, _)| k)?;
        Some(self.pool.swap_remove(best))
    }

    /// While `want` more values would not fit in the budget, evicts the
    /// least recently used column other than `i` and `keep` and returns
    /// its buffer if it holds `len` values (it stays counted in `used`),
    /// else frees it; `None` once `want` fits or nothing is left to evict.
    /// Pooled buffers are freed first, as [`ColumnCache::make_room`] does.
    fn reclaim(
        &mut self,
        len: usize,
        want: usize,
        i: usize,
        keep: Option<usize>,
    ) -> Option<Vec<T>> {
        while self.used + want > self.capacity {
            if let Some(buf) = self.pool.pop() {
                self.used -= buf.capacity();
                continue;
            }
            let victim = self.lru_victim(i, keep)?;
            self.seen[victim] = self.log.len() as u32;
            self.unlink(victim);
            let mut buf = std::mem::take(&mut self.cols[victim]);
            if buf.capacity() >= len {
                buf.clear();
                return Some(buf);
            }
            self.used -= buf.capacity();
        }
        None
    }

    /// The least recently used held column other than `i` and `keep`, if
    /// any.
    fn lru_victim(&self, i: usize, keep: Option<usize>) -> Option<usize> {
        let s = self.sentinel();
        let mut victim = self.next[s] as usize;
        while victim != s && (victim == i || Some(victim) == keep) {
            victim = self.next[victim] as usize;
        }
        (victim != s).then_some(victim)
    }

    /// Frees pooled buffers, then evicts least recently used columns other
    /// than `i` and `keep`, until `extra` more values fit in the budget.
    fn make_room(&mut self, extra: usize, i: usize, keep: Option<usize>) {
        while self.used + extra > self.capacity {
            if let Some(buf) = self.pool.pop() {
                self.used -= buf.capacity();
                continue;
            }
            // None: only the protected columns are left.
            let Some(victim) = self.lru_victim(i, keep) else {
                break;
            };
            self.evict(victim);
        }
    }

    /// Makes column `i` hold at least `len` entries and marks it most recently
    /// used. Returns how many leading entries were already valid: the caller
    /// must compute entries `[start, len)` through [`ColumnCache::column_mut`].
    /// Least recently used columns other than `i` and `keep` are evicted to
    /// stay within the byte budget.
    pub fn prepare(&mut self, i: usize, len: usize, keep: Option<usize>) -> usize {
        self.catch_up(i);
        let have = self.cols[i].len();
        self.unlink(i);
        if have >= len {
            self.hits += 1;
            self.push_most_recent(i);
            return have;
        }
        self.misses += 1;
        if self.cols[i].capacity() >= len {
            self.cols[i].resize(len, T::default());
        } else {
            let n = self.cols.len();
            let want = match (self.grow, have) {
                // Every column at full length fits the budget (small
                // problems): each buffer is made full-length once, so a
                // column lengthened after the shrunk variables come back
                // grows in place instead of into a new buffer.
                (false, _) if n.saturating_mul(n) <= self.capacity => n,
                (false, _) => len,
                (true, 0) => size_class(len),
                (true, _) => size_class(len + len / 8 + GROW_SLACK),
            };
            let reclaimed = match self.take_pooled(len) {
                Some(buf) => Some(buf),
                None if self.grow => self.reclaim(len, want, i, keep),
                None => None,
            };
            let mut buf = match reclaimed {
                Some(buf) => buf,
                None => {
                    self.make_room(want, i, keep);
                    let buf = self.allocate(want, i, keep);
                    self.used += want;
                    buf
                }
            };
            buf.extend_from_slice(&self.cols[i][..have]);
            buf.resize(len, T::default());
            let mut old = std::mem::replace(&mut self.cols[i], buf);
            if old.capacity() > 0 {
                old.clear();
                self.pool.push(old);
                self.make_room(0, i, keep);
            }
        }
        self.push_most_recent(i);
        have
    }

    /// A new buffer for `len` values. If the system refuses it, the budget
    /// drops to what the cache holds (at least two full columns) and least
    /// recently used columns other than `i` and `keep` are freed until it
    /// fits; only when nothing is left to free does the allocation fail,
    /// with a panic whose payload is an [`crate::error::Error::Memory`]
    /// (raised as `MemoryError` by the bindings).
    fn allocate(&mut self, len: usize, i: usize, keep: Option<usize>) -> Vec<T> {
        let mut buf = Vec::new();
        if buf.try_reserve_exact(len).is_ok() {
            return buf;
        }
        self.capacity = self.used.max(2 * self.cols.len());
        loop {
            let before = self.used;
            self.make_room(len, i, keep);
            // make_room evicts into the pool; free those buffers too.
            for b in self.pool.drain(..) {
                self.used -= b.capacity();
            }
            if buf.try_reserve_exact(len).is_ok() {
                return buf;
            }
            if self.used == before {
                // The column accessors return plain slices, so this cannot
                // be a `Result`: the panic carries the error itself, and the
                // bindings' runner raises it as `MemoryError`.
                std::panic::panic_any(memory_error::<T>(
                    len,
                    "one kernel column, with the kernel cache (cache_size) emptied",
                    "use fewer training examples",
                ));
            }
            self.capacity = self.used.max(len);
        }
    }

    /// Column `i` as held.
    #[inline]
    pub fn column(&self, i: usize) -> &[T] {
        &self.cols[i]
    }

    /// Column `i` as held, for filling after [`ColumnCache::prepare`].
    #[inline]
    pub fn column_mut(&mut self, i: usize) -> &mut [T] {
        &mut self.cols[i]
    }

    /// Columns `i` and `j` (`i ≠ j`) as held, both mutable.
    pub fn two_columns_mut(&mut self, i: usize, j: usize) -> (&mut [T], &mut [T]) {
        assert_ne!(i, j, "two_columns_mut needs two different columns");
        if i < j {
            let (lo, hi) = self.cols.split_at_mut(j);
            (&mut lo[i], &mut hi[0])
        } else {
            let (lo, hi) = self.cols.split_at_mut(i);
            (&mut hi[0], &mut lo[j])
        }
    }

    /// Swaps variables `i` and `j`: their columns trade places, and every
    /// held column has its entries `i` and `j` exchanged. A column that holds
    /// one of the two entries but not the other can no longer be kept
    /// consistent and is dropped.
    pub fn swap_index(&mut self, i: usize, j: usize) {
        self.swap_indices(&[(i, j)]);
    }

    /// [`ColumnCache::swap_index`] for a sequence of swaps, applied in
    /// order. The columns trade places at once; their entries are permuted
    /// when each is next asked for (see the module's notes). The log is
    /// applied to every held column and emptied when it outgrows `2n`
    /// swaps, so it stays within `O(n)` memory.
    pub fn swap_indices(&mut self, swaps: &[(usize, usize)]) {
        for &(i, j) in swaps {
            if i != j {
                self.move_slots(i, j);
                self.seen.swap(i, j);
                self.log.push((i.min(j) as u32, i.max(j) as u32));
                if self.log.len() == u32::MAX as usize {
                    // A log position must stay a `u32` (only a batch of
                    // billions of swaps gets here).
                    self.catch_up_all();
                }
            }
        }
        if self.log.len() > 2 * self.cols.len() {
            self.catch_up_all();
        }
    }

    /// Applies the logged swaps to every held column and empties the log.
    fn catch_up_all(&mut self) {
        if self.log.is_empty() {
            return;
        }
        for i in 0..self.cols.len() {
            self.catch_up(i);
        }
        self.log.clear();
        self.seen.iter_mut().for_each(|v| *v = 0);
    }

    /// Moves the columns held for variables `i` and `j` into each other's slot.
    fn move_slots(&mut self, i: usize, j: usize) {
        if i == j {
            return;
        }
        let (i_linked, j_linked) = (self.linked[i], self.linked[j]);
        self.unlink(i);
        self.unlink(j);
        self.cols.swap(i, j);
        if j_linked {
            self.push_most_recent(i);
        }
        if i_linked {
            self.push_most_recent(j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_column_the_system_refuses_is_a_memory_error_naming_cache_size() {
        let mut c = ColumnCache::<f32>::new(4, 4 * 4);
        assert_eq!(c.prepare(0, 4, None), 0);
        // More values than any address space holds: the reservation fails
        // even after the cache has freed everything it may.
        let huge = usize::MAX / 8;
        let payload = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            c.allocate(huge, 1, None);
        }))
        .expect_err("the allocation cannot succeed");
        let err = payload
            .downcast_ref::<crate::error::Error>()
            .expect("the panic carries the crate's error");
        let crate::error::Error::Memory(msg) = err else {
            panic!("not a memory error: {err:?}");
        };
        assert!(msg.contains("cache_size"), "{msg}");
        assert!(msg.contains("fewer training examples"), "{msg}");
    }

    #[test]
    fn eviction_keeps_the_budget_and_the_pinned_column() {
        // Budget: 3 columns of 4 values.
        let mut c = ColumnCache::<f32>::new(6, 12 * 4);
        for i in 0..3 {
            assert_eq!(c.prepare(i, 4, None), 0);
        }
        assert_eq!(c.used(), 12);
        // Touch column 0 so column 1 becomes the least recently used.
        assert_eq!(c.prepare(0, 4, None), 4);
        assert_eq!(c.prepare(3, 4, Some(1)), 0);
        assert!(c.used() <= c.capacity());
        // Column 1 was pinned, so column 2 (next least recent) went instead.
        assert_eq!(c.held(1), 4);
        assert_eq!(c.held(2), 0);
        assert_eq!(c.held(0), 4);
        assert_eq!(c.held(3), 4);
        assert_eq!(c.hits(), 1);
    }

    #[test]
    fn budget_is_at_least_two_columns() {
        let c = ColumnCache::<f32>::new(10, 1);
        assert_eq!(c.capacity(), 20);
    }

    #[test]
    fn partial_columns_grow() {
        // Twelve values: less than the 16 of every column at full length,
        // so buffers are made as long as asked.
        let mut c = ColumnCache::<f32>::new(4, 48);
        assert_eq!(c.prepare(2, 2, None), 0);
        c.column_mut(2).copy_from_slice(&[1.0, 2.0]);
        assert_eq!(c.prepare(2, 4, None), 2);
        assert_eq!(&c.column(2)[..2], &[1.0, 2.0]);
        assert_eq!(c.column(2).len(), 4);
        // The outgrown 2-value buffer waits in the pool.
        assert_eq!(c.used(), 6);
        c.prepare(3, 2, None);
        assert_eq!(c.used(), 6);
    }

    #[test]
    fn swap_index_moves_columns_and_entries() {
        let mut c = ColumnCache::<f32>::new(4, 48);
        c.prepare(0, 4, None);
        c.column_mut(0).copy_from_slice(&[0.0, 1.0, 2.0, 3.0]);
        c.prepare(1, 2, None);
        c.column_mut(1).copy_from_slice(&[10.0, 11.0]);
        c.swap_index(0, 3);
        // Column 0 moved to slot 3 and, once asked for, has its entries 0
        // and 3 exchanged.
        assert_eq!(c.held(0), 0);
        assert_eq!(c.prepare(3, 4, None), 4);
        assert_eq!(c.column(3), &[3.0, 1.0, 2.0, 0.0]);
        // Column 1 held entry 0 but not entry 3: dropped when asked for
        // (its buffer pooled), so every entry is computed again.
        assert_eq!(c.prepare(1, 2, None), 0);
        assert_eq!(c.used(), 6);
    }

    #[test]
    fn columns_of_a_cache_that_holds_them_all_grow_in_place() {
        // 1024 bytes hold all 4 × 4 values: each buffer is made full-length
        // at once, and a partial column grows in it, keeping its entries.
        let mut c = ColumnCache::<f32>::new(4, 1024);
        assert_eq!(c.prepare(2, 2, None), 0);
        c.column_mut(2).copy_from_slice(&[1.0, 2.0]);
        assert_eq!(c.used(), 4);
        let before = c.column(2).as_ptr();
        assert_eq!(c.prepare(2, 4, None), 2);
        assert_eq!(c.column(2).len(), 4);
        assert_eq!(&c.column(2)[..2], &[1.0, 2.0]);
        assert_eq!(c.column(2).as_ptr(), before);
        assert_eq!(c.used(), 4);
        c.prepare(3, 1, None);
        assert_eq!(c.used(), 8);
    }

    #[test]
    fn pushed_columns_join_the_lru_order() {
        let mut c = ColumnCache::<f64>::new(0, 1 << 20);
        for n in 1..=3 {
            c.push();
            assert_eq!(c.prepare(n - 1, n, None), 0);
        }
        c.prepare(0, 3, None);
        assert_eq!(c.lru_order(), vec![1, 2, 0]);
        c.push();
        assert_eq!(c.lru_order(), vec![1, 2, 0]);
        assert_eq!(c.held(3), 0);
        c.prepare(3, 4, None);
        assert_eq!(c.lru_order(), vec![1, 2, 0, 3]);
        // Every slot's links are consistent after the sentinel moved.
        let s = c.sentinel();
        for &k in &c.lru_order() {
            assert_eq!(c.next[c.prev[k] as usize] as usize, k);
            assert_eq!(c.prev[c.next[k] as usize] as usize, k);
        }
        assert_eq!(c.next[c.prev[s] as usize] as usize, s);
    }

    #[test]
    fn retain_renumbers_columns_and_their_entries() {
        let mut c = ColumnCache::<f64>::new(5, 1 << 20);
        for i in [4, 0, 2, 1] {
            c.prepare(i, 5, None);
            for (k, v) in c.column_mut(i).iter_mut().enumerate() {
                *v = (10 * i + k) as f64;
            }
        }
        // Column 3 holds its first two entries only.
        c.prepare(3, 2, None);
        c.column_mut(3).copy_from_slice(&[30.0, 31.0]);
        let used = c.used();
        c.retain(&[1, 3, 4]);
        assert_eq!(c.column(0), &[11.0, 13.0, 14.0]);
        assert_eq!(c.column(1), &[31.0]);
        assert_eq!(c.column(2), &[41.0, 43.0, 44.0]);
        // Least recently used first: 4 (now 2), 1 (now 0), 3 (now 1).
        assert_eq!(c.lru_order(), vec![2, 0, 1]);
        // The dropped columns' buffers wait in the pool.
        assert_eq!(c.used(), used);
        c.push();
        assert_eq!(c.prepare(3, 4, None), 0);
        assert!(c.used() <= c.capacity());
    }

    #[test]
    fn retain_and_set_entry_apply_pending_swaps_first() {
        let mut c = ColumnCache::<f64>::new(3, 1 << 20);
        for i in 0..3 {
            c.prepare(i, 3, None);
            for (k, v) in c.column_mut(i).iter_mut().enumerate() {
                *v = (10 * i + k) as f64;
            }
        }
        c.swap_index(0, 2); // column 2 is now [22, 21, 20], held in slot 0
        c.set_entry(1, -1.0);
        c.retain(&[0, 2]);
        assert_eq!(c.prepare(0, 2, None), 2);
        assert_eq!(c.column(0), &[22.0, 20.0]);
        assert_eq!(c.column(1), &[2.0, 0.0]);
    }

    #[test]
    fn a_lower_budget_evicts_the_least_recent() {
        let mut c = ColumnCache::<f64>::new(4, 1 << 20);
        for i in 0..4 {
            c.prepare(i, 4, None);
        }
        c.set_budget(8 * 8);
        assert_eq!(c.capacity(), 8);
        assert_eq!((0..4).map(|i| c.held(i)).collect::<Vec<_>>(), [0, 0, 4, 4]);
    }

    #[test]
    fn growing_columns_grow_by_an_eighth_and_set_entry_reaches_every_column() {
        let mut c = ColumnCache::<f64>::new(0, 1 << 20).growing();
        let mut copies = 0;
        for n in 1..=100 {
            c.push();
            let before = c.column(0).as_ptr();
            let have = c.prepare(0, n, None);
            assert_eq!(have, n - 1);
            c.column_mut(0)[n - 1] = n as f64;
            if n > 1 && c.column(0).as_ptr() != before {
                copies += 1;
            }
        }
        assert!(copies <= 7, "{copies} copies");
        assert_eq!(c.column(0)[..3], [1.0, 2.0, 3.0]);
        c.prepare(5, 10, None);
        c.set_entry(7, 0.0);
        assert_eq!(c.column(0)[7], 0.0);
        assert_eq!(c.column(5)[7], 0.0);
        assert_eq!(c.column(0)[8], 9.0);
        assert!(c.used() <= c.capacity());
    }

    #[test]
    fn size_classes_round_up_by_at_most_an_eighth() {
        let mut classes = std::collections::BTreeSet::new();
        let mut last = 0;
        for len in 0..5000 {
            let c = size_class(len);
            assert!(c >= len && c >= last, "{len} -> {c}");
            assert!(8 * (c - len) <= len, "{len} -> {c}");
            if len < 16 {
                assert_eq!(c, len);
            }
            if (16..4096).contains(&len) {
                classes.insert(c);
            }
            last = c;
        }
        // Eight sizes per power of two from 16 to 4096 (4096 itself the
        // class of the largest lengths below it).
        assert_eq!(classes.len(), 8 * 8 + 1);
        assert_eq!(size_class(usize::MAX), usize::MAX);
    }

    #[test]
    fn a_full_growing_cache_hands_a_buffer_on_to_a_longer_column_of_its_class() {
        // Budget: two columns of a thousand values.
        let mut c = ColumnCache::<f64>::new(3, 2 * size_class(1000) * 8).growing();
        for i in 0..2 {
            assert_eq!(c.prepare(i, 1000, None), 0);
        }
        let lru = c.column(0).as_ptr();
        // One more row since: column 0's buffer (of 1024) still fits.
        assert_eq!(c.prepare(2, 1001, None), 0);
        assert_eq!(c.column(2).as_ptr(), lru);
        assert_eq!(c.held(0), 0);
        assert_eq!(size_class(1000), 1024);
        assert_eq!(c.used(), 2 * 1024);
        assert!(c.used() <= c.capacity());
    }

    #[test]
    fn a_full_growing_cache_reuses_the_least_recently_used_buffer() {
        // Budget: two columns of 8 values (the floor is two of n = 3).
        let mut c = ColumnCache::<f64>::new(3, 16 * 8).growing();
        for i in 0..2 {
            assert_eq!(c.prepare(i, 8, None), 0);
            c.column_mut(i).fill(i as f64);
        }
        let lru = c.column(0).as_ptr();
        // Column 2 needs a buffer: column 0's, evicted, not a new one.
        assert_eq!(c.prepare(2, 8, None), 0);
        assert_eq!(c.column(2).as_ptr(), lru);
        assert_eq!(c.held(0), 0);
        assert_eq!(c.column(1), [1.0; 8]);
        assert_eq!(c.column(2).len(), 8);
        assert!(c.used() <= c.capacity());
        // A buffer too small for the column is freed, and one allocated.
        assert_eq!(c.prepare(0, 12, None), 0);
        assert_eq!(c.held(0), 12);
        assert!(c.used() <= c.capacity().max(12 + 8));
    }

    #[test]
    fn swaps_reach_columns_in_order_however_late() {
        // A column asked for after many swaps sees them in the order made,
        // also across the log's compaction (more than 2n swaps).
        let n = 6;
        let mut c = ColumnCache::<f64>::new(n, 1 << 16);
        let mut truth: Vec<Vec<f64>> = (0..n)
            .map(|i| (0..n).map(|t| (10 * i + t) as f64).collect())
            .collect();
        for (i, col) in truth.iter().enumerate() {
            c.prepare(i, n, None);
            c.column_mut(i).copy_from_slice(col);
        }
        let mut state = 3usize;
        for step in 0..40 {
            state = (state * 5 + 1) % 97;
            let (i, j) = (state % n, (state / n) % n);
            c.swap_index(i, j);
            truth.swap(i, j);
            for col in &mut truth {
                col.swap(i, j);
            }
            if step % 7 == 0 {
                let k = step % n;
                assert_eq!(c.prepare(k, n, None), n);
                assert_eq!(c.column(k), truth[k].as_slice(), "step {step}");
            }
        }
        for (k, col) in truth.iter().enumerate() {
            assert_eq!(c.prepare(k, n, None), n);
            assert_eq!(c.column(k), col.as_slice());
        }
    }

    #[test]
    fn tiny_budget_under_churn_stays_bounded() {
        let n = 50;
        let mut c = ColumnCache::<f32>::new(n, 0);
        for step in 0..1000usize {
            let i = (step * 7) % n;
            let j = (step * 13 + 1) % n;
            c.prepare(i, n, None);
            c.prepare(j, n, Some(i));
            assert_eq!(c.held(i), n);
            assert_eq!(c.held(j), n);
            assert!(c.used() <= c.capacity());
        }
    }
}
