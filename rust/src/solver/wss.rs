//! The per-iteration loops of SMO: the search for the maximal violator `i`,
//! the second-order search for its partner `j`, and the gradient update fused
//! with the next iteration's search for `i`.
//!
//! Set membership comes as `f64` masks (1.0 in the set, 0.0 out) so the loops
//! run on explicit vectors ([`crate::solver::vec64`]) on AVX-512 and AVX2 machines; a
//! scalar version serves the others and the tails. Ties go to the larger
//! index, as in LIBSVM's scans.

use crate::precision::QValue;
use crate::runtime::team::Team;
use crate::solver::vec64::{self, vector_head};
// The arguments of the selection loops are defined beside their vector
// versions, which read them, and are part of this module's interface.
pub use crate::solver::vec64::{GradientStep, PartnerSearch, PartnerSearchNu, Scan};

/// A running arg-max (later indices win ties).
#[derive(Clone, Copy, Debug)]
struct Best {
    value: f64,
    index: usize,
}

impl Best {
    const NONE: Best = Best {
        value: f64::NEG_INFINITY,
        index: usize::MAX,
    };

    #[inline(always)]
    fn keep(&mut self, value: f64, index: usize) {
        if value > f64::NEG_INFINITY && value >= self.value {
            self.value = value;
            self.index = index;
        }
    }

    /// Merges a result over earlier indices into one over later indices.
    fn after(earlier: (f64, usize), later: Best) -> Best {
        let mut best = Best {
            value: earlier.0,
            index: earlier.1,
        };
        if later.index != usize::MAX && later.value >= best.value {
            best = later;
        }
        best
    }

    /// The result of a scan over a range that starts at `a`, with its index
    /// counted from 0 (`usize::MAX`, none, stays).
    fn shifted((value, index): (f64, usize), a: usize) -> (f64, usize) {
        (
            value,
            if index == usize::MAX {
                index
            } else {
                a + index
            },
        )
    }

    fn pair(self) -> (f64, usize) {
        (self.value, self.index)
    }
}

fn max_up_scalar(y: &[f64], g: &[f64], up: &[f64], from: usize) -> Best {
    let mut best = Best::NONE;
    for t in from..y.len() {
        if up[t] > 0.5 {
            best.keep(-y[t] * g[t], t);
        }
    }
    best
}

/// `(max_{t ∈ up} −y_t G_t, arg max)`; the index is `usize::MAX` when the
/// up-set is empty.
pub fn max_up(y: &[f64], g: &[f64], up: &[f64]) -> (f64, usize) {
    let n = y.len();
    let (g, up) = (&g[..n], &up[..n]);
    match vector_head(vec64::MaxUp(y, g, up)) {
        Some((v, i, body)) => Best::after((v, i), max_up_scalar(y, g, up, body)).pair(),
        None => max_up_scalar(y, g, up, 0).pair(),
    }
}

/// `G += Q_i·di + Q_j·dj` from `from` on, with the arg-max of `−y G` over
/// the up-set kept by `keep(best, t, −y_t G_t)`.
fn update_scalar_with<T: QValue, B>(
    g: &mut [f64],
    step: GradientStep<'_, T>,
    (y, up): (&[f64], &[f64]),
    from: usize,
    mut best: B,
    keep: impl Fn(&mut B, usize, f64),
) -> B {
    let GradientStep { qi, qj, di, dj } = step;
    for t in from..g.len() {
        let gt = g[t] + qi[t].to_f64() * di + qj[t].to_f64() * dj;
        g[t] = gt;
        if up[t] > 0.5 {
            keep(&mut best, t, -y[t] * gt);
        }
    }
    best
}

fn update_scalar<T: QValue>(
    g: &mut [f64],
    step: GradientStep<'_, T>,
    y: &[f64],
    up: &[f64],
    from: usize,
) -> Best {
    update_scalar_with(g, step, (y, up), from, Best::NONE, |b, t, v| b.keep(v, t))
}

/// `G += Q_i·di + Q_j·dj` over `G`'s length, returning [`max_up`] of the
/// updated gradient.
pub fn update_and_max_up<T: QValue>(
    g: &mut [f64],
    step: GradientStep<'_, T>,
    y: &[f64],
    up: &[f64],
) -> (f64, usize) {
    let n = g.len();
    let (step, y, up) = (step.range(0, n), &y[..n], &up[..n]);
    match vector_head(vec64::UpdateMaxUp(g, step, y, up)) {
        Some((v, i, body)) => Best::after((v, i), update_scalar(g, step, y, up, body)).pair(),
        None => update_scalar(g, step, y, up, 0).pair(),
    }
}

/// What the partner search returns.
#[derive(Clone, Copy, Debug)]
pub struct Partner {
    /// `max_{t ∈ low} y_t G_t` (for the stopping test).
    pub gmax2: f64,
    /// The partner `j`, if any variable gives a positive second-order gain.
    pub j: Option<usize>,
    /// Its gain `(gmax + y_j G_j)² / a_ij` (−∞ without a partner), to
    /// compare partners found in separate scans.
    pub gain: f64,
}

impl Partner {
    fn new(gmax2: f64, best: Best) -> Partner {
        Partner {
            gmax2,
            j: (best.index != usize::MAX).then_some(best.index),
            gain: best.value,
        }
    }
}

fn partner_scalar<T: QValue>(s: &PartnerSearch<'_, T>, from: usize) -> (f64, Best) {
    let Scan { y, g, qd, low } = s.scan;
    let (qi, gmax, yi, qd_i, tau) = (s.qi, s.gmax, s.yi, s.qd_i, s.tau);
    let mut gmax2 = f64::NEG_INFINITY;
    let mut best = Best::NONE;
    for t in from..y.len() {
        if low[t] > 0.5 {
            let yg = y[t] * g[t];
            if yg > gmax2 {
                gmax2 = yg;
            }
            let diff = gmax + yg;
            if diff > 0.0 {
                // K_ii + K_tt − 2 K_it, with K_it = y_i y_t Q_it.
                let quad = qd_i + qd[t] - 2.0 * yi * y[t] * qi[t].to_f64();
                best.keep(diff * diff / quad.max(tau), t);
            }
        }
    }
    (gmax2, best)
}

/// The second-order partner of `i` among the low-set (Fan, Chen & Lin 2005):
/// the `t` maximising `(gmax + y_t G_t)² / a_it` over those with a positive
/// first factor, `a_it` floored at `tau`.
pub fn best_partner<T: QValue>(search: &PartnerSearch<'_, T>) -> Partner {
    let (gmax2, best) = partner_with_gain(search);
    Partner::new(gmax2, best)
}

/// [`best_partner`]'s `gmax2` and its best `(gain, index)`.
fn partner_with_gain<T: QValue>(search: &PartnerSearch<'_, T>) -> (f64, Best) {
    let s = search.range(0, search.scan.y.len());
    match vector_head(&s) {
        Some((g2, gain, j, body)) => {
            let (tail_g2, tail) = partner_scalar(&s, body);
            (g2.max(tail_g2), Best::after((gain, j), tail))
        }
        None => partner_scalar(&s, 0),
    }
}

/// Variables per piece when a scan over `n` is split between the two
/// threads of a team: a few pieces, so a helper that starts late still
/// takes one, each a multiple of the vector width.
fn scan_piece(n: usize) -> usize {
    n.div_ceil(4).next_multiple_of(8).max(8)
}

/// `scan(a, b)` for the ranges `a..b` that cut `0..n` into pieces for the
/// two threads of `team`, in range order.
fn scan_ranges<R: Send>(team: &Team, n: usize, scan: impl Fn(usize, usize) -> R + Sync) -> Vec<R> {
    let piece = scan_piece(n);
    team.map(n.div_ceil(piece), |c| {
        scan(c * piece, ((c + 1) * piece).min(n))
    })
}

/// Merges per-range arg-max results, given in range order, as one scan over
/// all ranges would have found them (later indices win ties).
fn merge_in_order(parts: impl IntoIterator<Item = (f64, usize)>) -> Best {
    parts.into_iter().fold(Best::NONE, |best, (value, index)| {
        Best::after((best.value, best.index), Best { value, index })
    })
}

/// Per-range partner searches, given in range order, as one search: the
/// largest `gmax2` and the best gain.
fn merge_partners(parts: impl Iterator<Item = (f64, (f64, usize))> + Clone) -> Partner {
    let gmax2 = parts.clone().fold(f64::NEG_INFINITY, |m, p| m.max(p.0));
    Partner::new(gmax2, merge_in_order(parts.map(|p| p.1)))
}

/// [`best_partner`] with the low-set cut into ranges the two threads of
/// `team` scan; the same answer as one scan.
pub fn best_partner_team<T: QValue>(team: &Team, search: &PartnerSearch<'_, T>) -> Partner {
    let parts = scan_ranges(team, search.scan.y.len(), |a, b| {
        let (g2, best) = partner_with_gain(&search.range(a, b));
        (g2, Best::shifted(best.pair(), a))
    });
    merge_partners(parts.into_iter())
}

/// [`update_and_max_up`] with `G` cut into ranges the two threads of `team`
/// update and scan; the same gradient and answer as one pass.
pub fn update_and_max_up_team<T: QValue>(
    team: &Team,
    g: &mut [f64],
    step: GradientStep<'_, T>,
    y: &[f64],
    up: &[f64],
) -> (f64, usize) {
    let piece = scan_piece(g.len());
    let parts = team.map_chunks(g, piece, |a, gp| {
        let b = a + gp.len();
        let found = update_and_max_up(gp, step.range(a, b), &y[a..b], &up[a..b]);
        Best::shifted(found, a)
    });
    merge_in_order(parts).pair()
}

/// The ν-dual's label set of `y_t`: 0 for `+1`, 1 for `−1`.
#[inline(always)]
fn label(y: f64) -> usize {
    usize::from(y < 0.0)
}

fn update_nu_scalar<T: QValue>(
    g: &mut [f64],
    step: GradientStep<'_, T>,
    y: &[f64],
    up: &[f64],
    from: usize,
) -> [Best; 2] {
    let best = [Best::NONE; 2];
    update_scalar_with(g, step, (y, up), from, best, |b, t, v| {
        if y[t] != 0.0 {
            b[label(y[t])].keep(v, t);
        }
    })
}

/// [`update_and_max_up`] for the ν-dual: `G += Q_i·di + Q_j·dj`, then the
/// maximal violator of each label set's up-set (index 0: `y = +1`, 1:
/// `y = −1`), as [`max_up`] over that label set's mask would find it.
pub fn update_and_max_up_nu<T: QValue>(
    g: &mut [f64],
    step: GradientStep<'_, T>,
    y: &[f64],
    up: &[f64],
) -> [(f64, usize); 2] {
    let n = g.len();
    let (step, y, up) = (step.range(0, n), &y[..n], &up[..n]);
    match vector_head(vec64::ByLabel(vec64::UpdateMaxUp(g, step, y, up))) {
        Some((heads, body)) => {
            let tails = update_nu_scalar(g, step, y, up, body);
            [0, 1].map(|c| Best::after(heads[c], tails[c]).pair())
        }
        None => update_nu_scalar(g, step, y, up, 0).map(Best::pair),
    }
}

/// [`update_and_max_up_nu`] on the two threads of `team`; the same gradient
/// and answer as one pass.
pub fn update_and_max_up_nu_team<T: QValue>(
    team: &Team,
    g: &mut [f64],
    step: GradientStep<'_, T>,
    y: &[f64],
    up: &[f64],
) -> [(f64, usize); 2] {
    let piece = scan_piece(g.len());
    let parts = team.map_chunks(g, piece, |a, gp| {
        let b = a + gp.len();
        let found = update_and_max_up_nu(gp, step.range(a, b), &y[a..b], &up[a..b]);
        found.map(|p| Best::shifted(p, a))
    });
    [0, 1].map(|c| merge_in_order(parts.iter().map(|p| p[c])).pair())
}

fn partners_nu_scalar<T: QValue>(s: &PartnerSearchNu<'_, T>, from: usize) -> [(f64, Best); 2] {
    let Scan { y, g, qd, low } = s.scan;
    let mut out = [(f64::NEG_INFINITY, Best::NONE); 2];
    for t in from..y.len() {
        if low[t] > 0.5 && y[t] != 0.0 {
            let c = label(y[t]);
            let yg = y[t] * g[t];
            if yg > out[c].0 {
                out[c].0 = yg;
            }
            let diff = s.gmax[c] + yg;
            if diff > 0.0 {
                let quad = s.qd_i[c] + qd[t] - 2.0 * s.q[c][t].to_f64();
                out[c].1.keep(diff * diff / quad.max(s.tau), t);
            }
        }
    }
    out
}

/// The ν-dual's partner search ([`best_partner`] for each label set, over
/// its own low-set and against its own working variable) in one pass over
/// both label sets; index 0: `y = +1`, 1: `y = −1`.
pub fn best_partners_nu<T: QValue>(search: &PartnerSearchNu<'_, T>) -> [Partner; 2] {
    let s = search.range(0, search.scan.y.len());
    partners_nu_with_gain(&s).map(|(gmax2, best)| Partner::new(gmax2, best))
}

fn partners_nu_with_gain<T: QValue>(s: &PartnerSearchNu<'_, T>) -> [(f64, Best); 2] {
    match vector_head(s) {
        Some((heads, body)) => {
            let tails = partners_nu_scalar(s, body);
            [0, 1].map(|c| {
                let (g2, gain, j) = heads[c];
                (g2.max(tails[c].0), Best::after((gain, j), tails[c].1))
            })
        }
        None => partners_nu_scalar(s, 0),
    }
}

/// [`best_partners_nu`] on the two threads of `team`; the same answer as
/// one scan.
pub fn best_partners_nu_team<T: QValue>(
    team: &Team,
    search: &PartnerSearchNu<'_, T>,
) -> [Partner; 2] {
    let parts = scan_ranges(team, search.scan.y.len(), |a, b| {
        partners_nu_with_gain(&search.range(a, b))
            .map(|(g2, best)| (g2, Best::shifted(best.pair(), a)))
    });
    [0, 1].map(|c| merge_partners(parts.iter().map(|p| p[c])))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Labels: −1 at every `every`-th index, +1 elsewhere.
    fn labels(n: usize, every: usize) -> Vec<f64> {
        (0..n)
            .map(|t| if t % every == 0 { -1.0 } else { 1.0 })
            .collect()
    }

    fn masks(n: usize, every: usize) -> Vec<f64> {
        (0..n)
            .map(|t| if t % every != 0 { 1.0 } else { 0.0 })
            .collect()
    }

    #[test]
    fn max_up_matches_a_plain_scan() {
        for n in [0, 3, 8, 37, 100] {
            let y = labels(n, 3);
            let g: Vec<f64> = (0..n).map(|t| ((t * 7919) % 23) as f64 - 11.0).collect();
            let up = masks(n, 5);
            let want = max_up_scalar(&y, &g, &up, 0);
            assert_eq!(max_up(&y, &g, &up), (want.value, want.index), "n = {n}");
        }
        let (v, i) = max_up(&[1.0; 9], &[0.0; 9], &[0.0; 9]);
        assert_eq!((v, i), (f64::NEG_INFINITY, usize::MAX));
    }

    #[test]
    fn fused_update_updates_and_searches() {
        let n = 21;
        let y = labels(n, 2);
        let qi: Vec<f32> = (0..n).map(|t| t as f32 * 0.5).collect();
        let qj: Vec<f32> = (0..n).map(|t| 1.0 - t as f32 * 0.25).collect();
        let up = masks(n, 4);
        let mut g = vec![0.3; n];
        let mut want_g = g.clone();
        let step = GradientStep {
            qi: &qi,
            qj: &qj,
            di: 1.5,
            dj: -0.5,
        };
        let want = update_scalar(&mut want_g, step, &y, &up, 0);
        let got = update_and_max_up(&mut g, step, &y, &up);
        assert_eq!(g, want_g);
        assert_eq!(got, (want.value, want.index));
    }

    #[test]
    fn partner_is_the_best_second_order_gain() {
        let y = vec![1.0, 1.0, -1.0, -1.0];
        let g = vec![-1.0, 0.5, 0.2, -0.3];
        let qd = vec![1.0; 4];
        let qi = vec![1.0, 0.2, -0.4, 0.1];
        let low = vec![1.0, 1.0, 1.0, 0.0];
        let p = best_partner(&PartnerSearch {
            gmax: 1.0,
            yi: 1.0,
            ..search([&y, &g, &qd, &low], &qi)
        });
        // t=1: diff 1.5, quad 1.6 → 1.406; t=2: diff 0.8, quad 1.2 → 0.533.
        assert_eq!(p.j, Some(1));
        assert_eq!(p.gmax2, 0.5);
    }

    #[test]
    fn team_scans_match_one_thread_scans() {
        let team = Team::new().expect("a thread");
        for n in [1, 7, 8, 33, 100, 1001] {
            let y = labels(n, 3);
            // Repeated values, so ties between the ranges are exercised.
            let g: Vec<f64> = (0..n).map(|t| ((t * 31) % 5) as f64 / 4.0 - 0.5).collect();
            let qd: Vec<f64> = (0..n).map(|t| 1.0 + (t % 2) as f64 * 0.5).collect();
            let qi: Vec<f32> = (0..n).map(|t| ((t * 13) % 3) as f32 / 3.0).collect();
            let qj: Vec<f32> = (0..n).map(|t| 0.5 - ((t * 7) % 4) as f32 / 8.0).collect();
            let low = masks(n, 6);
            let up = masks(n, 4);
            let search = search([&y, &g, &qd, &low], &qi);
            let (one, two) = (best_partner(&search), best_partner_team(&team, &search));
            assert_eq!((one.gmax2, one.j), (two.gmax2, two.j), "n = {n}");
            let step = GradientStep {
                qi: &qi,
                qj: &qj,
                di: 0.25,
                dj: -0.125,
            };
            let (mut g1, mut g2) = (g.clone(), g.clone());
            let a = update_and_max_up(&mut g1, step, &y, &up);
            let b = update_and_max_up_team(&team, &mut g2, step, &y, &up);
            assert_eq!(a, b, "n = {n}");
            assert_eq!(g1, g2, "n = {n}");
        }
    }

    #[test]
    fn vector_and_scalar_partner_searches_agree() {
        let n = 53;
        let y = labels(n, 3);
        let g: Vec<f64> = (0..n).map(|t| ((t * 31) % 17) as f64 / 7.0 - 1.0).collect();
        let qd: Vec<f64> = (0..n).map(|t| 1.0 + (t % 4) as f64 * 0.1).collect();
        let qi: Vec<f32> = (0..n)
            .map(|t| ((t * 13) % 11) as f32 / 11.0 - 0.5)
            .collect();
        let low = masks(n, 6);
        let search = search([&y, &g, &qd, &low], &qi);
        let p = best_partner(&search);
        let (g2, best) = partner_scalar(&search, 0);
        assert_eq!(p.gmax2, g2);
        assert_eq!(p.j, Some(best.index));
    }

    /// Every length, so the vector loops' last, overlapping vector (which
    /// sees some elements twice, and must update each gradient entry once)
    /// meets every remainder; repeated values make ties.
    #[test]
    fn vector_scans_match_scalar_scans_at_every_length() {
        for n in 0..=41 {
            let y = labels(n, 3);
            let g: Vec<f64> = (0..n).map(|t| ((t * 31) % 5) as f64 / 4.0 - 0.5).collect();
            let qd: Vec<f64> = (0..n).map(|t| 1.0 + (t % 2) as f64 * 0.5).collect();
            let qi: Vec<f32> = (0..n).map(|t| ((t * 13) % 3) as f32 / 3.0).collect();
            let qj: Vec<f32> = (0..n).map(|t| 0.5 - ((t * 7) % 4) as f32 / 8.0).collect();
            let (low, up) = (masks(n, 6), masks(n, 4));
            let search = search([&y, &g, &qd, &low], &qi);
            let (p, (g2, best)) = (best_partner(&search), partner_scalar(&search, 0));
            let j = (best.index != usize::MAX).then_some(best.index);
            assert_eq!((p.gmax2, p.j, p.gain), (g2, j, best.value), "n = {n}");
            let want = max_up_scalar(&y, &g, &up, 0);
            assert_eq!(max_up(&y, &g, &up), want.pair(), "n = {n}");
            let step = GradientStep {
                qi: &qi,
                qj: &qj,
                di: 0.25,
                dj: -0.125,
            };
            let (mut g1, mut g3) = (g.clone(), g.clone());
            let want = update_scalar(&mut g3, step, &y, &up, 0);
            assert_eq!(
                update_and_max_up(&mut g1, step, &y, &up),
                want.pair(),
                "n = {n}"
            );
            assert_eq!(g1, g3, "n = {n}");
        }
    }

    /// The search over `[y, g, qd, low]` and the column `qi`, from
    /// `gmax = 0.7` for `y_i = −1` and `Q_ii = 1`.
    fn search<'a>([y, g, qd, low]: [&'a [f64]; 4], qi: &'a [f32]) -> PartnerSearch<'a> {
        PartnerSearch {
            scan: Scan { y, g, qd, low },
            qi,
            gmax: 0.7,
            yi: -1.0,
            qd_i: 1.0,
            tau: 1e-12,
        }
    }

    /// The masks of label set `c` (0: y = +1, 1: y = −1) within `mask`.
    fn of_label(mask: &[f64], y: &[f64], c: usize) -> Vec<f64> {
        mask.iter()
            .zip(y)
            .map(|(&m, &yt)| if label(yt) == c { m } else { 0.0 })
            .collect()
    }

    #[test]
    fn nu_scans_match_per_label_scans() {
        let team = Team::new().expect("a thread");
        for n in [1, 5, 8, 19, 64, 203, 1001] {
            let y = labels(n, 3);
            // Repeated values, so ties within and across ranges occur.
            let g: Vec<f64> = (0..n).map(|t| ((t * 31) % 7) as f64 / 4.0 - 0.7).collect();
            let qd: Vec<f64> = (0..n).map(|t| 1.0 + (t % 3) as f64 * 0.25).collect();
            let qp: Vec<f32> = (0..n).map(|t| ((t * 13) % 5) as f32 / 5.0).collect();
            let qn: Vec<f32> = (0..n).map(|t| 0.6 - ((t * 7) % 4) as f32 / 8.0).collect();
            let (low, up) = (masks(n, 4), masks(n, 5));
            for gmax in [
                [0.9, 0.4],
                [f64::NEG_INFINITY, 0.8],
                [0.3, f64::NEG_INFINITY],
            ] {
                let search = PartnerSearchNu {
                    scan: Scan {
                        y: &y,
                        g: &g,
                        qd: &qd,
                        low: &low,
                    },
                    q: [&qp, &qn],
                    gmax,
                    qd_i: [1.25, 1.0],
                    tau: 1e-12,
                };
                let one = best_partners_nu(&search);
                let two = best_partners_nu_team(&team, &search);
                let scalar = partners_nu_scalar(&search, 0);
                for c in 0..2 {
                    let low_c = of_label(&low, &y, c);
                    let want = best_partner(&PartnerSearch {
                        gmax: gmax[c],
                        yi: if c == 0 { 1.0 } else { -1.0 },
                        qd_i: search.qd_i[c],
                        ..self::search([&y, &g, &qd, &low_c], search.q[c])
                    });
                    for got in [one[c], two[c]] {
                        assert_eq!(
                            (got.gmax2, got.j, got.gain.to_bits()),
                            (want.gmax2, want.j, want.gain.to_bits()),
                            "n = {n}, label set {c}"
                        );
                    }
                    assert_eq!(scalar[c].0, want.gmax2);
                    assert_eq!(
                        (scalar[c].1.index != usize::MAX).then_some(scalar[c].1.index),
                        want.j
                    );
                }
            }
            let step = GradientStep {
                qi: &qp,
                qj: &qn,
                di: 0.25,
                dj: -0.125,
            };
            let (mut g1, mut g2, mut g3) = (g.clone(), g.clone(), g.clone());
            update_and_max_up(&mut g1, step, &y, &up);
            let one = update_and_max_up_nu(&mut g2, step, &y, &up);
            let two = update_and_max_up_nu_team(&team, &mut g3, step, &y, &up);
            assert_eq!(g1, g2, "n = {n}");
            assert_eq!(g1, g3, "n = {n}");
            for c in 0..2 {
                let want = max_up(&y, &g1, &of_label(&up, &y, c));
                assert_eq!(one[c], want, "n = {n}, label set {c}");
                assert_eq!(two[c], want, "n = {n}, label set {c}");
            }
        }
    }
}
