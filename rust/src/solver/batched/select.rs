//! Selection of a round's new members, the shrinking permutation and the
//! catch-up of the frozen rows' gradient.

use super::*;

/// Up-set membership: `α_t` may move so that `y_t α_t` grows.
#[inline]
pub(super) fn in_up(y: f64, a: f64, u: f64) -> bool {
    if y > 0.0 {
        a < u
    } else {
        a > 0.0
    }
}

/// Low-set membership: `α_t` may move so that `y_t α_t` shrinks.
#[inline]
pub(super) fn in_low(y: f64, a: f64, u: f64) -> bool {
    if y > 0.0 {
        a > 0.0
    } else {
        a < u
    }
}

/// Rows set aside at one shrinking epoch: positions `[lo, hi)` of the
/// permuted order, with `α` over the rows still active then (`[0, lo)`),
/// from which the catch-up takes the changes since.
pub(super) struct Frozen {
    pub(super) lo: usize,
    pub(super) hi: usize,
    pub(super) alpha: Vec<f64>,
}

multiversion! {
    /// The thresholds `(max_{up} −y_t G_t, max_{low} y_t G_t)` (a maximum
    /// is exact in any order, so the scan runs without branches, a value
    /// outside its set counting as `−∞`).
    pub(super) fn thresholds, fn thresholds_impl(
        y: &[f64],
        g: &[f64],
        alpha: &[f64],
        upper: &[f64],
    ) -> (f64, f64) {
        let (mut up, mut low) = (f64::NEG_INFINITY, f64::NEG_INFINITY);
        let n = y.len();
        let (g, alpha, upper) = (&g[..n], &alpha[..n], &upper[..n]);
        for t in 0..n {
            let yg = y[t] * g[t];
            let up_t = if in_up(y[t], alpha[t], upper[t]) { -yg } else { f64::NEG_INFINITY };
            let low_t = if in_low(y[t], alpha[t], upper[t]) { yg } else { f64::NEG_INFINITY };
            up = up.max(up_t);
            low = low.max(low_t);
        }
        (up, low)
    }
}

/// The maximal violation `max_{up} −y_t G_t + max_{low} y_t G_t`.
pub(super) fn gap(y: &[f64], g: &[f64], alpha: &[f64], upper: &[f64]) -> f64 {
    let (up, low) = thresholds(y, g, alpha, upper);
    up + low
}

/// The `count` largest of `(value, t)` (ties to the lower index), in that
/// order.
pub(super) fn top(cand: &mut Vec<(f64, usize)>, count: usize) -> Vec<usize> {
    let order = |a: &(f64, usize), b: &(f64, usize)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
    if cand.len() > count && count > 0 {
        cand.select_nth_unstable_by(count - 1, order);
        cand.truncate(count);
    }
    cand.sort_unstable_by(order);
    cand.iter().map(|&(_, t)| t).collect()
}

/// Applies `swaps`, in order, to `v`.
pub(super) fn apply_swaps<T>(v: &mut [T], swaps: &[(usize, usize)]) {
    for &(i, j) in swaps {
        v.swap(i, j);
    }
}

/// The kind, rows and `f32` panel of a dense source.
pub(super) fn dense_parts(source: &KernelSource) -> Option<(KernelKind, &Rows, &Panel)> {
    match source {
        KernelSource::Dense {
            kind, rows, panel, ..
        } => Some((*kind, rows, panel.get()?)),
        _ => None,
    }
}

/// What avoids the shrinking's own allocations.
pub(super) const SHRINK_HINT: &str = "use shrinking=False or solver='smo'";

/// Kernel columns per pass of the catch-up (their values over one tile
/// stay in the processor's cache until added).
pub(super) const CATCH_UP_GROUP: usize = 32;

/// Variables whose queries the catch-up builds at once.
pub(super) const CATCH_UP_BATCH: usize = 1024;

/// The kernel columns' parts: the kernel, the rows' panel and the labels'
/// signs (`Q_ts = y_t y_s K(x_t, x_s)`).
#[derive(Clone, Copy)]
pub(super) struct Columns<'a> {
    pub(super) kind: KernelKind,
    pub(super) panel: &'a Panel,
    pub(super) sign: &'a [f32],
}

/// Brings `G` and `Ḡ` of the frozen rows up to date: for the rows frozen
/// at each epoch, `Σ_s (α_s − α_s(epoch)) Q_ts` over the variables that
/// moved since, and the changes at the upper bounds to `Ḡ`, tile by tile.
/// Returns the kernel values computed.
pub(super) fn catch_up(
    cols: &Columns<'_>,
    alpha: &[f64],
    upper: &[f64],
    grad: &mut [f64],
    grad_bar: &mut [f64],
    frozen: &[Frozen],
    team: Option<&Arc<Team>>,
    ctl: &Control,
) -> Result<u64> {
    let Columns { kind, panel, sign } = *cols;
    let mut evaluations = 0u64;
    for seg in frozen {
        let changed: Vec<(usize, f64, f64)> = (0..seg.lo)
            .filter_map(|s| {
                let (was, now) = (seg.alpha[s], alpha[s]);
                (now != was).then(|| {
                    let bar = match (was >= upper[s], now >= upper[s]) {
                        (false, true) => upper[s],
                        (true, false) => -upper[s],
                        _ => 0.0,
                    };
                    (s, now - was, bar)
                })
            })
            .collect();
        for batch in changed.chunks(CATCH_UP_BATCH) {
            ctl.check()?;
            let queries: Vec<Query> = batch.iter().map(|&(s, ..)| panel.query(s)).collect();
            let refs: Vec<&Query> = queries.iter().collect();
            let factors: Vec<f32> = batch.iter().map(|&(s, ..)| sign[s]).collect();
            let work = |start: usize, g: &mut [f64], gb: &mut [f64]| {
                if ctl.is_cancelled() {
                    return;
                }
                let (t0, len) = (seg.lo + start, g.len());
                let mut buf = vec![0.0f32; CATCH_UP_GROUP * len];
                for k0 in (0..batch.len()).step_by(CATCH_UP_GROUP) {
                    let k1 = (k0 + CATCH_UP_GROUP).min(batch.len());
                    let mut outs: Vec<&mut [f32]> =
                        buf.chunks_exact_mut(len).take(k1 - k0).collect();
                    fill_tile(
                        kind,
                        panel,
                        &refs[k0..k1],
                        &factors[k0..k1],
                        sign,
                        t0,
                        t0 + len,
                        &mut outs,
                    );
                    let moves: Vec<(usize, f64)> = (k0..k1).map(|k| (k - k0, batch[k].1)).collect();
                    let bar_moves: Vec<(usize, f64)> = (k0..k1)
                        .filter(|&k| batch[k].2 != 0.0)
                        .map(|k| (k - k0, batch[k].2))
                        .collect();
                    add_tile(&outs, &moves, &bar_moves, g, gb);
                }
            };
            let (g, gb) = (&mut grad[seg.lo..seg.hi], &mut grad_bar[seg.lo..seg.hi]);
            match team {
                Some(team) => team.for_chunks2(g, gb, TILE_ROWS, work),
                None => {
                    for (k, (g, gb)) in g
                        .chunks_mut(TILE_ROWS)
                        .zip(gb.chunks_mut(TILE_ROWS))
                        .enumerate()
                    {
                        work(k * TILE_ROWS, g, gb);
                    }
                }
            }
            ctl.check()?;
            evaluations += (batch.len() as u64) * ((seg.hi - seg.lo) as u64);
        }
    }
    Ok(evaluations)
}
