//! The rounds themselves: select, solve the subproblem on its block, fill
//! and add the moved members' columns, shrink every epoch.

use super::*;

/// [`presolve`]'s arguments besides the source, as it hands them on.
pub(super) struct Rounds<'a> {
    pub y: &'a [f64],
    pub upper: &'a [f64],
    pub start: Start,
    pub settings: &'a Settings,
    pub team: Option<&'a Arc<Team>>,
    pub ctl: &'a Control,
}

/// [`presolve`]'s rounds, in the permuted order; every swap it makes to
/// `source` is appended to `swaps`.
pub(super) fn run_rounds(
    source: &mut KernelSource,
    args: Rounds<'_>,
    swaps: &mut Vec<(usize, usize)>,
) -> Result<Option<Presolved>> {
    let Rounds {
        y,
        upper,
        start,
        settings,
        team,
        ctl,
    } = args;
    let n = y.len();
    let Some(mut q) = settings.size_for(n) else {
        return Ok(None);
    };
    let hint = "use a smaller cache_size or solver='smo'";
    // The block, as many columns as the budget holds (fewer, down to the
    // working set, when the system refuses).
    let mut cap = (settings.budget_bytes / (4 * n)).clamp(q, MAX_HELD * q);
    let data = loop {
        match try_zeroed_block(cap * n, "the batched working sets' kernel columns", hint) {
            Ok(d) => break d,
            Err(err) if cap == q && q / 2 < MIN_WORKING_SET => return Err(err),
            Err(_) if cap > q => cap = q.max(cap / 2),
            Err(_) => {
                q = (q / 2) & !1;
                cap = q;
            }
        }
    };
    let mut block = Block {
        cap,
        data,
        holder: vec![usize::MAX; cap],
        slot_of: vec![usize::MAX; n],
        used: vec![0; cap],
    };
    let mut sign = signs_f32(y)?;
    let mut y = y.to_vec();
    let mut upper = upper.to_vec();
    let Start {
        mut alpha,
        mut grad,
        grad_bar,
    } = start;
    let mut grad_bar = match grad_bar {
        Some(v) => v,
        None => try_filled(n, 0.0f64, "the gradient of bounded variables", hint)?,
    };
    // The working set's variables, oldest first.
    let mut ws: Vec<usize> = Vec::with_capacity(q);
    let mut member = vec![false; n];
    let mut taken = vec![false; n];
    let mut qbb32 = vec![0.0f32; q * q];
    // The selection's candidates, `(key, t)`, kept from round to round.
    let mut up: Vec<(f64, usize)> = Vec::new();
    let mut low: Vec<(f64, usize)> = Vec::new();
    let (mut rounds, mut pairs, mut evaluations) = (0u64, 0u64, 0u64);
    let team = team.filter(|t| t.engaged()).map(Arc::clone);
    let max_rounds = MIN_ROUNDS_CAP + ROUNDS_PER_SWEEP * (n / q) as u64;
    // Shrinking: rows `[active, n)` are frozen, in epochs (`frozen`).
    let mut active = n;
    let mut frozen: Vec<Frozen> = Vec::new();
    let mut shrinking = settings.shrinking;
    let mut shrunk = 0usize;
    let mut last_epoch = 0u64;
    let mut stalled = false;
    let mut last_gap;
    loop {
        ctl.check()?;
        last_gap = gap(
            &y[..active],
            &grad[..active],
            &alpha[..active],
            &upper[..active],
        );
        let capped = pairs >= settings.max_pairs || rounds >= max_rounds;
        if last_gap < settings.switch_gap || capped || stalled {
            if frozen.is_empty() {
                break;
            }
            // The end of the active rows' rounds: the frozen rows' G and Ḡ
            // caught up, every row active again.
            let (kind, _, panel) = dense_parts(source).expect("a dense source");
            evaluations += catch_up(
                &Columns {
                    kind,
                    panel,
                    sign: &sign,
                },
                &alpha,
                &upper,
                &mut grad,
                &mut grad_bar,
                &frozen,
                team.as_ref(),
                ctl,
            )?;
            frozen.clear();
            active = n;
            block.reset(active, MAX_HELD * q);
            for &t in &ws {
                member[t] = false;
            }
            ws.clear();
            shrinking = false;
            stalled = false;
            continue;
        }
        if shrinking && rounds >= last_epoch + SHRINK_EVERY {
            last_epoch = rounds;
            let (up, low) = thresholds(
                &y[..active],
                &grad[..active],
                &alpha[..active],
                &upper[..active],
            );
            let frozen_here =
                |t: usize| smo::can_shrink_at(alpha[t], upper[t], y[t], grad[t], up, low);
            let count = (0..active).filter(|&t| frozen_here(t)).count();
            if count > 0 && count * SHRINK_FRACTION >= active {
                // The shrinkable rows to the end, the others kept in front
                // (LIBSVM's partition: Chang & Lin, §5.1).
                let first = swaps.len();
                let (mut i, mut end) = (0, active);
                while i < end {
                    if frozen_here(i) {
                        end -= 1;
                        while end > i {
                            if !frozen_here(end) {
                                swaps.push((i, end));
                                break;
                            }
                            end -= 1;
                        }
                    }
                    i += 1;
                }
                let here = &swaps[first..];
                apply_swaps(&mut alpha, here);
                apply_swaps(&mut grad, here);
                apply_swaps(&mut grad_bar, here);
                apply_swaps(&mut y, here);
                apply_swaps(&mut upper, here);
                apply_swaps(&mut sign, here);
                for f in &mut frozen {
                    apply_swaps(&mut f.alpha, here);
                }
                source.swap_many(here);
                let mut snapshot =
                    try_with_capacity(end, "the multipliers at a shrinking epoch", SHRINK_HINT)?;
                snapshot.extend_from_slice(&alpha[..end]);
                frozen.push(Frozen {
                    lo: end,
                    hi: active,
                    alpha: snapshot,
                });
                shrunk += active - end;
                active = end;
                // The held columns are in the old order: dropped.
                block.reset(active, MAX_HELD * q);
                for &t in &ws {
                    member[t] = false;
                }
                ws.clear();
            }
        }
        let (kind, rows, panel) = dense_parts(source).expect("a dense source");
        // New members: all q in the first round, then half; the newer half
        // of the last working set stays.
        let fresh = if ws.is_empty() { q } else { q / 2 };
        let kept: Vec<usize> = ws[ws.len().saturating_sub(q - fresh)..].to_vec();
        for &t in &ws {
            member[t] = false;
        }
        for &t in &kept {
            member[t] = true;
        }
        up.clear();
        low.clear();
        for t in 0..active {
            if member[t] {
                continue;
            }
            let yg = y[t] * grad[t];
            if in_up(y[t], alpha[t], upper[t]) {
                up.push((-yg, t));
            }
            if in_low(y[t], alpha[t], upper[t]) {
                low.push((yg, t));
            }
        }
        let ups = top(&mut up, fresh);
        let lows = top(&mut low, fresh);
        let mut chosen = Vec::with_capacity(fresh);
        let (mut a, mut b) = (0, 0);
        // Alternate between the two lists, skipping variables taken.
        while chosen.len() < fresh && (a < ups.len() || b < lows.len()) {
            let from_up = (chosen.len() % 2 == 0 && a < ups.len()) || b >= lows.len();
            let t = if from_up {
                a += 1;
                ups[a - 1]
            } else {
                b += 1;
                lows[b - 1]
            };
            if !taken[t] {
                taken[t] = true;
                chosen.push(t);
            }
        }
        for &t in &chosen {
            taken[t] = false;
        }
        if chosen.is_empty() {
            stalled = true;
            continue;
        }
        ws = kept;
        ws.extend_from_slice(&chosen);
        for &t in &ws {
            member[t] = true;
            if block.slot_of[t] != usize::MAX {
                block.used[block.slot_of[t]] = rounds + 1;
            }
        }
        // The subproblem on the q × q block, its values computed afresh
        // from the members' rows (the same loops, so the same values as
        // the columns', without gathering them from q columns).
        let members = &ws;
        let m = members.len();
        let sub = Panel::try_new(&rows.gather(members)?)?;
        let sub_queries: Vec<Query> = (0..m).map(|k| sub.query(k)).collect();
        let sub_refs: Vec<&Query> = sub_queries.iter().collect();
        let sub_sign: Vec<f32> = members.iter().map(|&t| sign[t]).collect();
        {
            // Rows of the block in pieces of BLOCK_ROWS_PER_PIECE members,
            // on the team when it is engaged (each value computed alone:
            // the same bits either way).
            let fill_rows = |start: usize, piece: &mut [f32]| {
                let k0 = start / m;
                let k1 = k0 + piece.len() / m;
                let mut outs: Vec<&mut [f32]> = piece.chunks_exact_mut(m).collect();
                let (qs, fs) = (&sub_refs[k0..k1], &sub_sign[k0..k1]);
                fill_tile(kind, &sub, qs, fs, &sub_sign, 0, m, &mut outs);
            };
            let rows_of_block = &mut qbb32[..m * m];
            match &team {
                Some(team) => {
                    team.map_chunks(rows_of_block, BLOCK_ROWS_PER_PIECE * m, fill_rows);
                }
                None => fill_rows(0, rows_of_block),
            }
        }
        let yb: Vec<f64> = members.iter().map(|&t| y[t]).collect();
        let ub: Vec<f64> = members.iter().map(|&t| upper[t]).collect();
        let old: Vec<f64> = members.iter().map(|&t| alpha[t]).collect();
        // The subproblem over the working set, the rest fixed: SMO on the
        // block, with `p` such that its gradient starts at G's members.
        let mut own = vec![0.0f64; m];
        block_times(&qbb32[..m * m], &old, &mut own);
        let p: Vec<f64> = (0..m).map(|k| grad[members[k]] - own[k]).collect();
        let diag: Vec<f64> = (0..m).map(|k| f64::from(qbb32[k * m + k])).collect();
        let eps = settings.tol.max(0.1 * last_gap);
        let cap_pairs = (INNER_PAIRS_PER_VARIABLE * m as u64).min(settings.max_pairs - pairs);
        let mut block_q = DenseQ {
            n: m,
            cols: std::mem::take(&mut qbb32),
            diag,
        };
        let stop = smo::Stopping {
            tol: eps,
            max_iter: cap_pairs,
            shrinking: false,
            ctl,
        };
        let dual = smo::Dual {
            p: &p,
            y: &yb,
            upper: &ub,
            alpha: &old,
        };
        let solved = smo::solve(&mut block_q, &dual, &stop)?;
        qbb32 = block_q.cols;
        let ab = solved.alpha;
        pairs += solved.n_iter;
        rounds += 1;
        // Only the members whose α moved need their column (for G and Ḡ):
        // the held ones as they are, the others into the free or least
        // recently used slots, the moved members' slots kept.
        let moved: Vec<usize> = (0..m).filter(|&k| ab[k] != old[k]).collect();
        if moved.is_empty() {
            stalled = true;
            continue;
        }
        let mut keep = vec![false; block.cap];
        let mut missing = Vec::new();
        let mut fresh = Vec::with_capacity(moved.len());
        for &k in &moved {
            let slot = block.slot_of[members[k]];
            fresh.push(slot == usize::MAX);
            match slot {
                usize::MAX => missing.push(members[k]),
                s => keep[s] = true,
            }
        }
        let new_slots = block.make_room(&missing, &keep);
        for &s in &new_slots {
            block.used[s] = rounds;
        }
        // G and Ḡ from the moved members' columns, in chunks of at most
        // FRESH_PER_CHUNK new columns: the pass fills a chunk's new columns
        // over a tile, then adds the chunk's columns while they are in the
        // processor's cache.
        let mut moves = Vec::new();
        let mut bar_moves = Vec::new();
        let mut chunks: Vec<Chunk> = Vec::new();
        // Where the open chunk starts in `moves`, `bar_moves` and `missing`.
        let (mut from, mut made) = ((0, 0, 0), 0);
        for (i, &k) in moved.iter().enumerate() {
            let slot = block.slot_of[members[k]];
            moves.push((slot, ab[k] - old[k]));
            let (was, now) = (old[k] >= ub[k], ab[k] >= ub[k]);
            if was != now {
                bar_moves.push((slot, if now { ub[k] } else { -ub[k] }));
            }
            made += usize::from(fresh[i]);
            if made - from.2 == FRESH_PER_CHUNK || i + 1 == moved.len() {
                chunks.push(Chunk {
                    moves: from.0..moves.len(),
                    bars: from.1..bar_moves.len(),
                    fresh: from.2..made,
                });
                from = (moves.len(), bar_moves.len(), made);
            }
        }
        for k in 0..m {
            alpha[members[k]] = ab[k];
        }
        let queries: Vec<Query> = missing.iter().map(|&t| panel.query(t)).collect();
        let query_refs: Vec<&Query> = queries.iter().collect();
        let factors: Vec<f32> = missing.iter().map(|&t| sign[t]).collect();
        type Tile<'a> = (usize, &'a mut [f32], &'a mut [f64], &'a mut [f64]);
        let mut tiles: Vec<Tile<'_>> = block
            .data
            .chunks_mut(TILE_ROWS * block.cap)
            .zip(
                grad[..active]
                    .chunks_mut(TILE_ROWS)
                    .zip(grad_bar[..active].chunks_mut(TILE_ROWS)),
            )
            .enumerate()
            .map(|(r, (piece, (g, gbar)))| (r, piece, g, gbar))
            .collect();
        let pass = |tile: &mut Tile<'_>| {
            if ctl.is_cancelled() {
                return;
            }
            let (r, piece, g, gbar) = tile;
            let (t0, len) = (*r * TILE_ROWS, g.len());
            let mut cols: Vec<&mut [f32]> = piece.chunks_exact_mut(len).collect();
            for chunk in &chunks {
                if !chunk.fresh.is_empty() {
                    let made = &new_slots[chunk.fresh.clone()];
                    // The chunk's new columns, lent to the fill (distinct slots).
                    let mut outs: Vec<&mut [f32]> =
                        made.iter().map(|&s| std::mem::take(&mut cols[s])).collect();
                    fill_tile(
                        kind,
                        panel,
                        &query_refs[chunk.fresh.clone()],
                        &factors[chunk.fresh.clone()],
                        &sign,
                        t0,
                        t0 + len,
                        &mut outs,
                    );
                    for (&s, out) in made.iter().zip(outs) {
                        cols[s] = out;
                    }
                }
                let (mv, bars) = (&moves[chunk.moves.clone()], &bar_moves[chunk.bars.clone()]);
                add_tile(&cols, mv, bars, g, gbar);
            }
        };
        match &team {
            Some(team) => {
                team.map_chunks(&mut tiles, 1, |_, piece| piece.iter_mut().for_each(pass));
            }
            None => tiles.iter_mut().for_each(pass),
        }
        ctl.check()?;
        evaluations += (missing.len() as u64) * (active as u64);
    }
    Ok(Some(Presolved {
        alpha,
        grad,
        grad_bar,
        rounds,
        pairs,
        kernel_evaluations: evaluations,
        gap: last_gap,
        shrunk,
    }))
}
