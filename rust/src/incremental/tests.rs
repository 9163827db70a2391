//! Tests of the online learner.

use super::*;

/// A two-class stream: class by the sign of `sin(3 x₀) − x₁` with label
/// noise every 7th example.
fn stream(m: usize, seed: u64) -> (Vec<f64>, Vec<f64>) {
    let mut u = crate::testing::uniform(seed);
    let mut next = || u() * 2.0 - 1.0;
    let mut x = Vec::with_capacity(2 * m);
    let mut y = Vec::with_capacity(m);
    for k in 0..m {
        let (a, b) = (next(), next());
        x.extend_from_slice(&[a, b]);
        let mut label = if (3.0 * a).sin() > b { 1.0 } else { -1.0 };
        if k % 7 == 6 {
            label = -label;
        }
        y.push(label);
    }
    (x, y)
}

fn learner(kind: KernelKind, x: &[f64], y: &[f64], opts: &OnlineOptions) -> OnlineLearner {
    let mut lr = OnlineLearner::new(kind, 2).unwrap();
    let m = y.len();
    let seen: Vec<i64> = (0..m as i64).collect();
    let cls: Vec<i64> = y.iter().map(|&v| i64::from(v > 0.0)).collect();
    lr.learn(x, y, &cls, &seen, opts).unwrap();
    lr
}

/// `α` in its box, `yᵀα = 0`, `g` equal to the kernel sum, and only the
/// band and the support vectors kept.
fn check_invariants(lr: &OnlineLearner, opts: &OnlineOptions) {
    let n = lr.len();
    let ya: f64 = (0..n).map(|i| lr.y[i] * lr.alpha[i]).sum();
    let total: f64 = lr.alpha.iter().sum();
    assert!(ya.abs() <= 1e-9 * total.max(1.0), "yᵀα = {ya}");
    for i in 0..n {
        assert!(lr.alpha[i] >= 0.0 && lr.alpha[i] <= opts.c + 1e-12);
        if !lr.alive[i] {
            assert_eq!(lr.alpha[i], 0.0);
            continue;
        }
        let g: f64 = (0..n)
            .filter(|&j| lr.alive[j])
            .map(|j| {
                lr.alpha[j]
                    * lr.y[j]
                    * lr.kind
                        .from_dot(dot(lr.row(j), lr.row(i)), lr.sq[j], lr.sq[i])
            })
            .sum();
        assert!((g - lr.g[i]).abs() < 1e-8, "g[{i}] = {} vs {g}", lr.g[i]);
        let margin = lr.y[i] * (g + lr.b);
        assert!(margin <= 1.0 + opts.epsilon + 1e-9 || lr.alpha[i] > 0.0);
    }
}

fn accuracy(lr: &OnlineLearner, x: &[f64], y: &[f64]) -> f64 {
    let f = lr.decision(x).unwrap();
    let hits = f.iter().zip(y).filter(|(f, y)| **f * **y > 0.0).count();
    hits as f64 / y.len() as f64
}

#[test]
fn learns_a_stream_and_keeps_its_invariants() {
    let (x, y) = stream(300, 1);
    let opts = OnlineOptions {
        cache_bytes: 20_000, // small: rows are evicted and recomputed
        ..OnlineOptions::default()
    };
    let kind = KernelKind::Rbf { gamma: 2.0 };
    let lr = learner(kind, &x, &y, &opts);
    check_invariants(&lr, &opts);
    assert!(lr.n_support() > 0 && lr.n_alive() < 300);
    let (xt, yt) = stream(400, 2);
    // 1 in 7 labels is flipped: 6/7 is the best accuracy.
    assert!(accuracy(&lr, &xt, &yt) > 0.72);
    // The same stream with an ample cache: the same model.
    let ample = learner(kind, &x, &y, &OnlineOptions::default());
    assert_eq!(ample.state(), lr.state());
}

/// The largest KKT violation over the kept examples.
fn violation(lr: &OnlineLearner, c: f64) -> f64 {
    let (mut up, mut low) = (f64::NEG_INFINITY, f64::INFINITY);
    for i in (0..lr.len()).filter(|&i| lr.alive[i]) {
        let (a, y, v) = (lr.alpha[i], lr.y[i], lr.y[i] - lr.g[i]);
        if (y > 0.0 && a < c) || (y < 0.0 && a > 0.0) {
            up = up.max(v);
        }
        if (y < 0.0 && a < c) || (y > 0.0 && a > 0.0) {
            low = low.min(v);
        }
    }
    up - low
}

/// [`stream`]'s examples in 30 features: the two of [`stream`] in the
/// first two columns and ±0.3 in one of the others (sparse rows), every
/// fifth row with every other column 0.05 (dense rows).
fn mixed_stream(m: usize, seed: u64) -> (Vec<f64>, Vec<f64>, usize) {
    let d = 30;
    let (x2, y) = stream(m, seed);
    let mut x = vec![0.0; m * d];
    for k in 0..m {
        let row = &mut x[k * d..(k + 1) * d];
        row[0] = x2[2 * k];
        row[1] = x2[2 * k + 1];
        if k % 5 == 4 {
            row[2..].fill(0.05);
        } else {
            row[2 + (k * 7) % (d - 2)] = if k % 2 == 0 { 0.3 } else { -0.3 };
        }
    }
    (x, y, d)
}

#[test]
fn offer_keeps_what_nearest_selects() {
    // Ties (equal keys, both zeros) and more or fewer pairs than k.
    let mut s = 7u64;
    for (m, k) in [(0, 3), (5, 10), (200, 1), (200, 5), (1000, 50)] {
        let pairs: Vec<(f64, usize)> = (0..m)
            .map(|i| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let v = ((s >> 58) as f64 - 8.0) * 0.5;
                (if v == 0.0 && i % 2 == 0 { -0.0 } else { v }, i)
            })
            .collect();
        let mut best = Vec::new();
        for &p in &pairs {
            offer(&mut best, k, p);
        }
        let kept: Vec<usize> = best.iter().map(|&(_, i)| i).collect();
        assert_eq!(kept, nearest(pairs, k), "m = {m}, k = {k}");
    }
}

#[test]
fn round_even_is_round_ties_even() {
    let mut values = vec![
        0.0,
        -0.0,
        0.5,
        -0.5,
        1.5,
        2.5,
        -2.5,
        0.49999999999999994,
        4503599627370495.5,
        4503599627370496.0,
        1e300,
        -1e-300,
        f64::INFINITY,
        f64::NEG_INFINITY,
    ];
    values.extend((-2000..2000).map(|k| k as f64 * 0.25 + 1e-3 * (k % 7) as f64));
    for v in values {
        assert_eq!(
            round_even(v).to_bits(),
            v.round_ties_even().to_bits(),
            "{v}"
        );
    }
    assert!(round_even(f64::NAN).is_nan());
}

/// A linear learner holding the rows `x` (`d` features) with labels `y`,
/// every multiplier 0.
fn stored_linear(x: Vec<f64>, y: Vec<f64>, d: usize) -> OnlineLearner {
    let n = y.len();
    let state = LearnerState {
        x,
        y,
        cls: vec![0; n],
        seen: (0..n as i64).collect(),
        alpha: vec![0.0; n],
        g: vec![0.0; n],
        alive: vec![true; n],
        ..LearnerState::default()
    };
    OnlineLearner::from_state(KernelKind::Linear, d, state).unwrap()
}

#[test]
fn column_dots_are_the_pairwise_dot_products() {
    // More rows than a tile, so a pass crosses tiles.
    let (x, y, d) = mixed_stream(COLUMN_TILE + 90, 12);
    let n = y.len();
    let lr = stored_linear(x, y, d);
    // Three queries at once, from row 5 on.
    let queries = [0, 4, 77];
    let nz: Vec<_> = queries.iter().map(|&q| nonzeros(lr.row(q))).collect();
    let (lo, len) = (5, n - 5);
    let mut out = vec![f64::NAN; queries.len() * len];
    column_dots(&lr.cols, &nz, lo, len, &mut out, len);
    for (t, &q) in queries.iter().enumerate() {
        for i in lo..n {
            let got = out[t * len + i - lo];
            // Bit for bit, whichever side is the query.
            assert_eq!(got.to_bits(), lr.dot_with(i, &lr.query(q)).to_bits());
            assert_eq!(got.to_bits(), lr.dot_with(q, &lr.query(i)).to_bits());
        }
    }
    assert_eq!(lr.sq[4].to_bits(), lr.dot_with(4, &lr.query(4)).to_bits());
}

/// The scans of [`slack_lanes`] and [`bias_terms`] as they were written
/// before their masks, lane by lane with `bool`s and branches: the
/// values the learner's models were fitted with.
fn slack_reference(y: &[f64], g: &[f64], alive: &[bool], b: f64) -> f64 {
    const L: usize = 8;
    let term = |y: f64, g: f64, alive: bool| {
        let xi = (1.0 - y * (g + b)).max(0.0);
        if alive {
            xi * xi
        } else {
            0.0
        }
    };
    let mut acc = [0.0f64; L];
    let (yc, gc, ac) = (y.chunks_exact(L), g.chunks_exact(L), alive.chunks_exact(L));
    let mut tail = 0.0;
    for ((&y, &g), &a) in yc
        .remainder()
        .iter()
        .zip(gc.remainder())
        .zip(ac.remainder())
    {
        tail += term(y, g, a);
    }
    for ((y, g), a) in yc.zip(gc).zip(ac) {
        for l in 0..L {
            acc[l] += term(y[l], g[l], a[l]);
        }
    }
    simd::sum_lanes(acc) + tail
}

fn bias_reference(
    y: &[f64],
    g: &[f64],
    alpha: &[f64],
    alive: &[bool],
    c: f64,
) -> (f64, usize, f64, f64) {
    const L: usize = 8;
    let mut sum = [0.0f64; L];
    let mut free = [0usize; L];
    let mut ub = [f64::INFINITY; L];
    let mut lb = [f64::NEG_INFINITY; L];
    let n = y.len();
    let whole = n / L * L;
    let one = |l: usize,
               i: usize,
               sum: &mut [f64; L],
               free: &mut [usize; L],
               ub: &mut [f64; L],
               lb: &mut [f64; L]| {
        let (a, yi) = (alpha[i], y[i]);
        let v = g[i] - yi;
        let is_free = alive[i] && a > 0.0 && a < c;
        let up = alive[i] && !is_free && ((a >= c) == (yi < 0.0));
        let down = alive[i] && !is_free && !up;
        sum[l] += if is_free { v } else { 0.0 };
        free[l] += usize::from(is_free);
        ub[l] = ub[l].min(if up { v } else { f64::INFINITY });
        lb[l] = lb[l].max(if down { v } else { f64::NEG_INFINITY });
    };
    for base in (0..whole).step_by(L) {
        for l in 0..L {
            one(l, base + l, &mut sum, &mut free, &mut ub, &mut lb);
        }
    }
    let sum = simd::sum_lanes(sum);
    let mut tail = ([0.0; L], [0; L], [f64::INFINITY; L], [f64::NEG_INFINITY; L]);
    for i in whole..n {
        one(0, i, &mut tail.0, &mut tail.1, &mut tail.2, &mut tail.3);
    }
    let ub = ub
        .iter()
        .chain(&tail.2[..1])
        .fold(f64::INFINITY, |m, &v| m.min(v));
    let lb = lb
        .iter()
        .chain(&tail.3[..1])
        .fold(f64::NEG_INFINITY, |m, &v| m.max(v));
    (
        sum + tail.0[0],
        free.iter().sum::<usize>() + tail.1[0],
        ub,
        lb,
    )
}

#[test]
fn masked_scans_are_the_branching_ones_bit_for_bit() {
    let mut r = crate::testing::uniform(11);
    let c = 1.0;
    // Lengths around the lanes, so the tail is empty, short or the whole.
    for n in (0..20).chain([1003, 4096]) {
        let y: Vec<f64> = (0..n).map(|_| if r() < 0.5 { 1.0 } else { -1.0 }).collect();
        let g: Vec<f64> = (0..n).map(|_| 4.0 * r() - 2.0).collect();
        // Multipliers at 0, at C and between, some rows forgotten.
        let alpha: Vec<f64> = (0..n)
            .map(|_| match (4.0 * r()) as u32 {
                0 => 0.0,
                1 => c,
                _ => r() * c,
            })
            .collect();
        let alive: Vec<bool> = (0..n).map(|_| r() < 0.8).collect();
        for b in [0.0, -0.3, 0.7] {
            let (got, want) = (
                slack_lanes(&y, &g, &alive, b),
                slack_reference(&y, &g, &alive, b),
            );
            assert_eq!(got.to_bits(), want.to_bits(), "slack, n = {n}");
        }
        let got = bias_terms(&y, &g, &alpha, &alive, c);
        let want = bias_reference(&y, &g, &alpha, &alive, c);
        assert_eq!(got.0.to_bits(), want.0.to_bits(), "sum, n = {n}");
        assert_eq!(got.1, want.1, "free, n = {n}");
        assert_eq!(got.2.to_bits(), want.2.to_bits(), "ub, n = {n}");
        assert_eq!(got.3.to_bits(), want.3.to_bits(), "lb, n = {n}");
    }
}

#[test]
fn width_of_is_the_narrowest_type_that_gives_the_value_back() {
    for v in [0.0, 1.0, -1.0, 127.0, -128.0, 3.0] {
        assert_eq!(width_of(v), SMALL, "{v}");
    }
    // −0 is no i8; 128, 0.5 and 2¹⁰⁰ are f32 values; 0.1 and 2⁻¹⁵⁰ are not.
    for v in [-0.0, 128.0, -129.0, 0.5, 2f64.powi(100), f64::from(0.1f32)] {
        assert_eq!(width_of(v), SINGLE, "{v}");
    }
    for v in [0.1, 1e300, 2f64.powi(-150), 1.0 + f64::EPSILON] {
        assert_eq!(width_of(v), DOUBLE, "{v}");
    }
}

/// Every stored value is given back bit for bit by its column, and the
/// column dot products of every pair of stored rows are the learner's
/// (`dot_with`), bit for bit, whichever side is the query.
fn check_columns(lr: &OnlineLearner) {
    let (n, d) = (lr.len(), lr.d);
    for (k, col) in lr.cols.iter().enumerate() {
        assert_eq!(col.len(), n);
        for i in 0..n {
            assert_eq!(
                col.get(i).to_bits(),
                lr.x[i * d + k].to_bits(),
                "x[{i}, {k}]"
            );
        }
    }
    let nz: Vec<_> = (0..n).map(|q| nonzeros(lr.row(q))).collect();
    let mut out = vec![f64::NAN; n * n];
    column_dots(&lr.cols, &nz, 0, n, &mut out, n);
    for q in 0..n {
        for i in 0..n {
            let got = out[q * n + i].to_bits();
            assert_eq!(got, lr.dot_with(i, &lr.query(q)).to_bits(), "rows {i}, {q}");
            assert_eq!(got, lr.dot_with(q, &lr.query(i)).to_bits(), "rows {q}, {i}");
        }
    }
}

fn widths(lr: &OnlineLearner) -> Vec<u8> {
    lr.cols.iter().map(Column::width).collect()
}

#[test]
fn columns_widen_for_new_values_and_narrow_when_rebuilt() {
    // Small integers in every column, some zero, over two tiles.
    let (n, d) = (COLUMN_TILE + 40, 5);
    let x: Vec<f64> = (0..n * d)
        .map(|k| ((k * 7919 + 13) % 11) as f64 - 5.0)
        .map(|v| if v.abs() < 2.0 { 0.0 } else { v })
        .collect();
    let y = (0..n)
        .map(|i| if i % 3 == 0 { 1.0 } else { -1.0 })
        .collect();
    let mut lr = stored_linear(x, y, d);
    assert_eq!(widths(&lr), [SMALL; 5]);
    check_columns(&lr);
    // A batch with an f32 value in column 1, −0 in column 3 and a
    // float64 one in column 2: reserved (widened) before it is stored.
    let batch = [
        [2.0, 0.5, 0.0, -0.0, 1.0],
        [0.0, 3.0, 0.1, 0.0, -4.0],
        [1.0, -0.25, 1.0 / 3.0, 2.0, 0.0],
    ];
    let flat: Vec<f64> = batch.iter().flatten().copied().collect();
    lr.reserve(&flat, batch.len()).unwrap();
    assert_eq!(widths(&lr), [SMALL, SINGLE, DOUBLE, SINGLE, SMALL]);
    for (k, row) in batch.iter().enumerate() {
        lr.append(row, sq_norm(row), 1.0, 0, (n + k) as i64, 0.0);
        assert_eq!(widths(&lr), [SMALL, SINGLE, DOUBLE, SINGLE, SMALL]);
    }
    check_columns(&lr);
    // Stored without a reservation, a value still widens its column.
    let row = [1e300, 0.0, 0.0, 0.0, 0.75];
    lr.append(&row, sq_norm(&row), -1.0, 0, (n + 3) as i64, 0.0);
    assert_eq!(widths(&lr), [DOUBLE, SINGLE, DOUBLE, SINGLE, SINGLE]);
    check_columns(&lr);
    // The wide rows forgotten, with a third of the others: compaction
    // rebuilds the columns, as narrow as the kept values allow.
    for i in (0..n).step_by(3).chain(n..n + 4) {
        lr.forget(i);
    }
    lr.count();
    lr.maybe_compact();
    assert_eq!(lr.len(), n - n.div_ceil(3));
    assert_eq!(widths(&lr), [SMALL; 5]);
    check_columns(&lr);
}

#[test]
fn one_batch_learns_what_one_example_at_a_time_learns() {
    // Batches span several blocks of dot products and compactions.
    let (x, y, d) = mixed_stream(400, 13);
    let m = y.len();
    let seen: Vec<i64> = (0..m as i64).collect();
    let cls = vec![0; m];
    let kind = KernelKind::Rbf { gamma: 1.0 };
    // A narrow band: examples are forgotten, and the store compacted.
    let narrow = OnlineOptions {
        epsilon: 0.05,
        c: 10.0,
        ..OnlineOptions::default()
    };
    for opts in [
        narrow.clone(),
        OnlineOptions {
            max_support: Some(40),
            ..narrow
        },
    ] {
        let mut whole = OnlineLearner::new(kind, d).unwrap();
        whole.learn(&x, &y, &cls, &seen, &opts).unwrap();
        let mut single = OnlineLearner::new(kind, d).unwrap();
        let mut compacted = false;
        for k in 0..m {
            let before = single.len();
            let row = &x[k * d..(k + 1) * d];
            single
                .learn(row, &y[k..=k], &cls[k..=k], &seen[k..=k], &opts)
                .unwrap();
            compacted |= single.len() < before;
        }
        assert!(compacted);
        assert_eq!(whole.state(), single.state());
        // The budget's removals come after `retire`, so an example
        // without a multiplier may then lie beyond the band until the
        // next update: with a budget only the other invariants hold.
        let band = if opts.max_support.is_some() {
            OnlineOptions {
                epsilon: f64::INFINITY,
                ..opts.clone()
            }
        } else {
            opts.clone()
        };
        check_invariants(&whole, &band);
    }
}

#[test]
fn blocks_over_the_support_vectors_learn_what_full_blocks_learn() {
    // An imbalanced stream (a small class inside a large one, as a
    // one-vs-one problem against a rare class) and the mixed one, in
    // batches of several sizes: blocks that cover the support vectors
    // only (their dot products by stored row, [`row_dots`], the others
    // formed at an update) against blocks over every stored row.
    let (x2, y2) = stream(900, 21);
    let imbalanced: Vec<f64> = (0..900)
        .map(|k| if k % 9 == 0 { y2[k] } else { -1.0 })
        .collect();
    let (xm, ym, dm) = mixed_stream(500, 22);
    let kind = KernelKind::Rbf { gamma: 1.0 };
    for (x, y, d) in [(&x2, &imbalanced, 2), (&xm, &ym, dm)] {
        let m = y.len();
        let seen: Vec<i64> = (0..m as i64).collect();
        let cls = vec![0; m];
        for (opts, chunk) in [
            (OnlineOptions::default(), 64),
            (OnlineOptions::default(), 37),
            (
                OnlineOptions {
                    epsilon: 0.05,
                    c: 10.0,
                    max_support: Some(30),
                    ..OnlineOptions::default()
                },
                100,
            ),
            (
                // A small budget: the store is compacted several times
                // within one block.
                OnlineOptions {
                    epsilon: 0.05,
                    max_support: Some(8),
                    ..OnlineOptions::default()
                },
                300,
            ),
        ] {
            let run = |support_block: (usize, usize)| {
                let mut lr = OnlineLearner::new(kind, d).unwrap();
                lr.support_block = support_block;
                let mut steps = Vec::new();
                let mut covered = false;
                for a in (0..m).step_by(chunk) {
                    let b = (a + chunk).min(m);
                    // With support vectors, the batch's first block covers
                    // them only under `(1, 0)`.
                    covered |= lr.support_block.0 == 1 && lr.n_support() > 0;
                    let rep = lr
                        .learn_polled(
                            Batch {
                                x: &x[a * d..b * d],
                                y: &y[a..b],
                                cls: &cls[a..b],
                                seen: &seen[a..b],
                            },
                            &opts,
                            &mut || Ok(()),
                        )
                        .unwrap();
                    steps.extend(
                        rep.steps
                            .into_iter()
                            .map(|s| StepRecord { seconds: 0.0, ..s }),
                    );
                }
                (lr.state(), steps, covered)
            };
            let (full, full_steps, _) = run((usize::MAX, usize::MAX));
            let (cover, cover_steps, covered) = run((1, 0));
            assert!(covered);
            assert_eq!(full, cover);
            assert_eq!(full_steps, cover_steps);
        }
    }
}

#[test]
fn slack_and_bias_are_the_sums_over_the_kept_examples() {
    let (x, y) = stream(300, 14);
    let opts = OnlineOptions::default();
    let lr = learner(KernelKind::Rbf { gamma: 2.0 }, &x, &y, &opts);
    let kept: Vec<usize> = (0..lr.len()).filter(|&i| lr.alive[i]).collect();
    assert!(kept.len() < lr.len(), "some stored rows are forgotten");
    let xi: f64 = kept
        .iter()
        .map(|&i| (1.0 - lr.y[i] * (lr.g[i] + lr.b)).max(0.0).powi(2))
        .sum();
    assert!((lr.slack_sum() - xi).abs() <= 1e-12 * xi.max(1.0));
    let (mut ub, mut lb, mut sum, mut free) = (f64::INFINITY, f64::NEG_INFINITY, 0.0, 0);
    for &i in &kept {
        let (a, y, v) = (lr.alpha[i], lr.y[i], lr.g[i] - lr.y[i]);
        if a > 0.0 && a < opts.c {
            sum += v;
            free += 1;
        } else if (a >= opts.c) == (y < 0.0) {
            ub = ub.min(v);
        } else {
            lb = lb.max(v);
        }
    }
    assert!(free > 0);
    let want = -crate::solver::smo::rho_from(sum, free, ub, lb);
    assert!((lr.global_bias(opts.c) - want).abs() <= 1e-12);
}

#[test]
fn reprocessing_brings_the_kept_examples_nearer_the_optimum() {
    let (x, y) = stream(300, 10);
    let kind = KernelKind::Rbf { gamma: 2.0 };
    let run = |reprocess: usize| {
        let opts = OnlineOptions {
            reprocess,
            ..OnlineOptions::default()
        };
        let lr = learner(kind, &x, &y, &opts);
        check_invariants(&lr, &opts);
        violation(&lr, opts.c)
    };
    let (plain, repaired) = (run(0), run(3));
    assert!(repaired < 0.5 * plain, "{repaired} vs {plain}");
}

#[test]
fn well_classified_examples_change_nothing() {
    let (x, y) = stream(200, 3);
    let opts = OnlineOptions::default();
    let mut lr = learner(KernelKind::Rbf { gamma: 2.0 }, &x, &y, &opts);
    let before = lr.state();
    // A probe far on its own side (the margin is largest there).
    let (xt, yt) = stream(400, 4);
    let f = lr.decision(&xt).unwrap();
    let k = (0..400)
        .max_by(|&a, &b| (yt[a] * f[a]).total_cmp(&(yt[b] * f[b])))
        .unwrap();
    assert!(yt[k] * f[k] >= 1.0);
    let rep = lr
        .learn(&xt[2 * k..2 * k + 2], &yt[k..=k], &[0], &[999], &opts)
        .unwrap();
    assert!(!rep.steps[0].updated && rep.steps[0].neighbourhood == 0);
    let after = lr.state();
    let n = before.alpha.len();
    assert_eq!(after.alpha[..n], before.alpha[..]);
    assert!(after.alpha[n..].iter().all(|&a| a == 0.0));
    assert_eq!(after.b, before.b);
    // Kept (with α = 0) only in the band.
    let kept = after.x.len() > before.x.len();
    assert_eq!(kept, yt[k] * f[k] <= 1.0 + opts.epsilon);
    assert_eq!(after.t, before.t + 1);
}

#[test]
fn the_threshold_controls_the_neighbourhood() {
    let (x, y) = stream(250, 5);
    let kind = KernelKind::Rbf { gamma: 2.0 };
    let mean_size = |eta: f64| {
        let mut lr = OnlineLearner::new(kind, 2).unwrap();
        let opts = OnlineOptions {
            threshold: eta,
            ..OnlineOptions::default()
        };
        let seen: Vec<i64> = (0..250).collect();
        let rep = lr.learn(&x, &y, &vec![0; 250], &seen, &opts).unwrap();
        let up: Vec<_> = rep.steps.iter().filter(|s| s.n_solves > 0).collect();
        for s in &up {
            assert_eq!(s.n_solves + 1, s.neighbourhood);
        }
        up.iter().map(|s| s.neighbourhood as f64).sum::<f64>() / up.len() as f64
    };
    let (big, mid, small) = (mean_size(100.0), mean_size(0.01), mean_size(1e-4));
    assert_eq!(big, 2.0); // the first working set already meets the level
    assert!(big < mid && mid < small, "{big} {mid} {small}");
}

#[test]
fn state_round_trip_continues_identically() {
    let (x, y) = stream(300, 6);
    let opts = OnlineOptions {
        max_support: Some(30),
        ..OnlineOptions::default()
    };
    let kind = KernelKind::Rbf { gamma: 2.0 };
    let seen: Vec<i64> = (0..300).collect();
    let cls = vec![0; 300];
    let mut a = OnlineLearner::new(kind, 2).unwrap();
    a.learn(&x[..300], &y[..150], &cls[..150], &seen[..150], &opts)
        .unwrap();
    let mut b = OnlineLearner::from_state(kind, 2, a.state()).unwrap();
    let ra = a
        .learn(&x[300..], &y[150..], &cls[150..], &seen[150..], &opts)
        .unwrap();
    let rb = b
        .learn(&x[300..], &y[150..], &cls[150..], &seen[150..], &opts)
        .unwrap();
    assert_eq!(a.state(), b.state());
    let strip = |r: &LearnReport| -> Vec<StepRecord> {
        r.steps
            .iter()
            .map(|s| StepRecord { seconds: 0.0, ..*s })
            .collect()
    };
    assert_eq!(strip(&ra), strip(&rb));
    assert!(a.n_support() <= 30);
    check_invariants(&a, &opts);
}

#[test]
fn rebatch_keeps_everything_and_matches_the_batch_svm() {
    let (x, y) = stream(60, 7);
    let opts = OnlineOptions {
        rebatch: true,
        tol: 1e-8,
        ..OnlineOptions::default()
    };
    let kind = KernelKind::Rbf { gamma: 2.0 };
    let lr = learner(kind, &x, &y, &opts);
    assert_eq!(lr.n_alive(), 60);
    check_invariants(&lr, &opts);
    let batch = DualProblem::new(
        KernelSource::dense(kind, Rows::new(x.clone(), 60, 2).unwrap()).unwrap(),
        y.clone(),
        vec![1.0; 60],
    )
    .solve(&SolverOptions {
        tol: 1e-8,
        ..SolverOptions::default()
    })
    .unwrap();
    for (a, b) in lr.alpha.iter().zip(&batch.alpha) {
        assert!((a - b).abs() < 1e-5);
    }
    assert!((lr.b + batch.rho).abs() < 1e-5);
}

#[test]
fn other_kernels_keep_the_invariants() {
    let (x, y) = stream(120, 8);
    let opts = OnlineOptions {
        max_neighbors: 10,
        ..OnlineOptions::default()
    };
    for kind in [
        KernelKind::Linear,
        KernelKind::Poly {
            gamma: 0.5,
            coef0: 1.0,
            degree: 3,
        },
        KernelKind::Sigmoid {
            gamma: 0.5,
            coef0: 0.0,
        },
    ] {
        let lr = learner(kind, &x, &y, &opts);
        check_invariants(&lr, &opts);
    }
}

#[test]
fn one_class_so_far_is_a_constant_machine() {
    let mut lr = OnlineLearner::new(KernelKind::Rbf { gamma: 1.0 }, 1).unwrap();
    let opts = OnlineOptions::default();
    let rep = lr
        .learn(&[0.0, 1.0], &[-1.0, -1.0], &[0, 0], &[0, 1], &opts)
        .unwrap();
    assert_eq!(lr.bias(), -1.0);
    assert_eq!(rep.updates, 0);
    assert_eq!(lr.decision(&[5.0]).unwrap(), vec![-1.0]);
}

#[test]
fn iteration_caps_are_reported() {
    let (x, y) = stream(100, 9);
    let opts = OnlineOptions {
        c: 100.0,
        max_iter: Some(1),
        threshold: 10.0,
        ..OnlineOptions::default()
    };
    let mut lr = OnlineLearner::new(KernelKind::Rbf { gamma: 2.0 }, 2).unwrap();
    let seen: Vec<i64> = (0..100).collect();
    let rep = lr.learn(&x, &y, &vec![0; 100], &seen, &opts).unwrap();
    assert!(rep.unconverged > 0 && rep.unconverged <= rep.solves);
}

#[test]
fn bad_input_is_rejected() {
    assert!(OnlineLearner::new(KernelKind::Precomputed, 2).is_err());
    let mut lr = OnlineLearner::new(KernelKind::Linear, 2).unwrap();
    let opts = OnlineOptions::default();
    assert!(lr.learn(&[1.0; 3], &[1.0], &[0], &[0], &opts).is_err());
    assert!(lr.learn(&[1.0; 2], &[2.0], &[0], &[0], &opts).is_err());
    assert!(lr
        .learn(&[f64::NAN, 1.0], &[1.0], &[0], &[0], &opts)
        .is_err());
    let bad = OnlineOptions {
        threshold: 0.0,
        ..OnlineOptions::default()
    };
    assert!(lr.learn(&[1.0; 2], &[1.0], &[0], &[0], &bad).is_err());
    let state = LearnerState {
        y: vec![1.0],
        ..LearnerState::default()
    };
    assert!(OnlineLearner::from_state(KernelKind::Linear, 2, state).is_err());
}

#[test]
fn kernel_values_outside_f64_are_rejected_up_front() {
    let poly = KernelKind::Poly {
        gamma: 1e-300,
        coef0: 0.0,
        degree: 3,
    };
    let opts = OnlineOptions::default();
    let mut lr = OnlineLearner::new(poly, 2).unwrap();
    let err = lr
        .learn(&[1e3, -5.0], &[1.0], &[0], &[0], &opts)
        .unwrap_err();
    assert!(err.to_string().contains("underflow float64"), "{err}");
    assert_eq!(lr.len(), 0);
    // A later batch is checked together with the kept examples.
    let mut lr = OnlineLearner::new(KernelKind::Linear, 2).unwrap();
    lr.learn(&[1.0, 2.0], &[1.0], &[0], &[0], &opts).unwrap();
    let err = lr
        .learn(&[1e300, 0.0], &[-1.0], &[0], &[1], &opts)
        .unwrap_err();
    assert!(err.to_string().contains("overflow float64"), "{err}");
    assert_eq!(lr.len(), 1);
}
