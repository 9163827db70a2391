//! Nearest-neighbour selection over `(distance², position)` pairs: the
//! neighbourhood a local update hands a multiplier to.

use super::*;

/// Orders `(distance², position)` pairs: nearest first, then by position.
pub(super) fn by_distance(a: &(f64, usize), b: &(f64, usize)) -> Ordering {
    a.0.total_cmp(&b.0).then(a.1.cmp(&b.1))
}

/// The `k` nearest of `cand`, nearest first (ties by position).
pub(super) fn nearest(mut cand: Vec<(f64, usize)>, k: usize) -> Vec<usize> {
    if k == 0 {
        return Vec::new();
    }
    if k < cand.len() {
        cand.select_nth_unstable_by(k - 1, by_distance);
        cand.truncate(k);
    }
    cand.sort_unstable_by(by_distance);
    cand.into_iter().map(|(_, i)| i).collect()
}

/// Offers `item` to `best`, the `k` smallest pairs offered so far in the
/// order of [`by_distance`]: after every pair is offered, `best` holds what
/// [`nearest`] returns for them (the order is total), without a list of all
/// of them. Cheap when most pairs are beyond the current `k`-th.
#[inline(always)]
pub(super) fn offer(best: &mut Vec<(f64, usize)>, k: usize, item: (f64, usize)) {
    if best.len() >= k {
        match best.last() {
            Some(last) if by_distance(&item, last) == Ordering::Less => {}
            _ => return,
        }
    }
    admit(best, k, item);
}

/// [`offer`]'s insertion (the rare case, kept out of the scans' loops).
#[inline(never)]
pub(super) fn admit(best: &mut Vec<(f64, usize)>, k: usize, item: (f64, usize)) {
    if best.len() >= k {
        best.pop();
    }
    let at = best.partition_point(|b| by_distance(b, &item) == Ordering::Less);
    best.insert(at, item);
}
