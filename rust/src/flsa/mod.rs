//! Forward least-squares approximation (FLSA): greedy or in-order selection
//! of kernel columns with an orthonormal basis kept by Gram–Schmidt, the
//! engine of the FLSA-SVM and the Reduced FLSA-SVM (Xia et al., Mathematical
//! Problems in Engineering 2013, articles 602341 and 712437).
//!
//! The model after `k` steps is `f(x) = β₀ + Σ_{j≤k} β_j K(x, x_{s_j})`, the
//! least-squares fit of `y` on the columns `[1, K[:, s_1], …, K[:, s_k]]`.
//! Those columns factor as `Φ = U R` (`U` orthonormal `n × (k+1)`, `R`
//! upper triangular with the constant column first), so with `z = Uᵀy`
//! the coefficients are the back-substitution `R β = z`. Every prefix of the
//! factorisation is the factorisation of the shorter model ("contexts
//! inheritance"), so one pass records the models for every `k` up to the
//! last: [`FlsaPath`] keeps the selected columns in order, `R` and `z`.
//!
//! # The greedy step in `O(n · #candidates)`
//! Residues are never stored. For each candidate column `k_c` the engine
//! keeps two scalars: `s_c = ‖q_c‖²`, the squared norm of its residue
//! `q_c = (I − UUᵀ) k_c`, and `p_c = rᵀk_c` (equal to `rᵀq_c`, because the
//! target residue `r` is orthogonal to `U`). The error reduction of adding
//! `c` is `p_c² / s_c`. After a new basis vector `u` with `ζ = uᵀr` joins,
//! each candidate needs one dot product `a_c = uᵀk_c`, then `s_c −= a_c²` and
//! `p_c −= ζ a_c`: one pass over the candidate columns per step.
//!
//! The column finally selected is re-orthogonalised explicitly (classical
//! Gram–Schmidt applied twice), which gives `R`'s column and a basis vector
//! orthogonal to working precision; its exact residue also guards the
//! downdated `s_c` against cancellation (a candidate whose exact gain is
//! less than half the downdated one gets its scalars corrected and the
//! choice is made again).
//!
//! # Pruning
//! A candidate is dropped for good once `s_c ≤ tol² ‖k_c‖²`: its column is,
//! to relative precision `tol`, a combination of the selected ones, so the
//! selected support vectors stay linearly independent and the path stops at
//! the numerical rank. `tol` should not go below about `1e-7`: the
//! downdated `s_c` carry rounding errors of order `k · ε · ‖k_c‖²`.
//!
//! # In-order selection (RFLSA)
//! With [`Selection::InOrder`] the candidates are taken in the order given
//! (the caller passes a random permutation of a random dictionary); a
//! candidate dependent on the selected ones is skipped (pruned) when its
//! turn comes, which equals pruning it at any earlier step because `s_c`
//! only decreases. No per-candidate scalars are needed, so a step costs
//! `O(n · k)` (one column and its orthogonalisation) and only the columns
//! actually used are ever computed. Since the order is fixed, the columns are
//! computed and orthogonalised a block at a time (`forward_in_order`): the
//! block's kernel columns at once, then block classical Gram–Schmidt against
//! the basis as two register-tiled matrix products (`H = QᵀC`, `C −= QH`;
//! [`crate::flsa::blocks`]), then column by column within the block; the basis
//! streams through the cache once per block instead of once per column.
//!
//! # Where the columns come from
//! [`Candidates`] either holds the `n × m` block of candidate columns
//! (`8·n·m` bytes, one kernel evaluation per entry, computed once, in
//! parallel) or computes each column from the feature rows whenever it is
//! needed (no block; a greedy step then costs `O(n · m · d)` kernel work
//! instead of `O(n · m)` reads).

pub mod blocks;

use rayon::prelude::*;

use crate::error::{checked_len, shape_error, try_filled, try_with_capacity, value_error, Result};
use crate::flsa::blocks::{gram_t, sub_product, BasisView};
use crate::kernel::{
    check_indices, check_kernel_values, dot, kernel_matrix_or, kernel_value, KernelKind,
    KernelRowsAgainst, Rows, TrainingData,
};
use crate::precision::{f64_problem, Magnitudes};
use crate::runtime::control::Control;

/// Candidate columns × rows above which a pass over the candidates runs on
/// rayon's pool.
const PARALLEL_WORK: usize = 1 << 16;

/// What avoids the `n × m` block of candidate columns when it does not fit.
const FLSA_HINT: &str =
    "use gram='on_the_fly' (columns computed when needed) or fewer candidates (dictionary_size)";

/// What avoids a basis of `max_terms` columns of `n` values that does not fit.
const BASIS_HINT: &str = "use a smaller max_terms";

/// Where the candidate columns come from.
#[derive(Clone, Debug)]
pub enum Candidates {
    /// Candidate-major block: column `c` is `data[c·n .. (c+1)·n]`.
    Block { data: Vec<f64>, n: usize, m: usize },
    /// Column `c` is `K(x_t, x_{idx[c]})` for `t < n`, evaluated on demand.
    OnTheFly {
        kind: KernelKind,
        rows: Rows,
        idx: Vec<usize>,
    },
}

/// How the candidate columns are held.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gram {
    /// The `n × m` block of columns, computed once (8 bytes per entry).
    Precomputed,
    /// Each column computed from the feature rows whenever it is needed.
    OnTheFly,
}

impl Candidates {
    /// The columns `K(X, x_c)` for `c` in `idx` of the caller's training
    /// data, held as `gram` says. For a precomputed kernel they are copied
    /// out of the caller's matrix into a block.
    pub fn new(data: &TrainingData<'_>, idx: Vec<usize>, gram: Gram) -> Result<Self> {
        Candidates::new_with(data, idx, gram, &Control::none())
    }

    /// [`Candidates::new`], polling `ctl` while the columns are computed:
    /// [`crate::Error::Interrupted`] once it is cancelled.
    pub fn new_with(
        data: &TrainingData<'_>,
        idx: Vec<usize>,
        gram: Gram,
        ctl: &Control,
    ) -> Result<Self> {
        match (data.kind(), gram) {
            (KernelKind::Precomputed, _) => {
                let (k, n) = (data.values(), data.n());
                check_indices(&idx, n, "candidates")?;
                let what = format!("the {n} × {} block of candidate columns", idx.len());
                let len = checked_len::<f64>(n, idx.len(), &what, FLSA_HINT)?;
                let mut block = try_with_capacity(len, &what, FLSA_HINT)?;
                for &c in &idx {
                    block.extend((0..n).map(|t| k[t * n + c]));
                }
                Candidates::block(block, n, idx.len())
            }
            (kind, Gram::OnTheFly) => Candidates::on_the_fly(kind, data.rows()?, idx),
            (kind, Gram::Precomputed) => {
                Candidates::precompute_with(kind, &data.rows()?, &idx, ctl)
            }
        }
    }

    /// A block supplied by the caller (candidate-major, `m` columns of `n`).
    pub fn block(data: Vec<f64>, n: usize, m: usize) -> Result<Self> {
        check_kernel_values(&data, n, m, "the kernel block of the candidates")?;
        Ok(Candidates::Block { data, n, m })
    }

    /// The columns `K(X, x_c)` for the listed rows, computed once, in parallel.
    pub fn precompute(kind: KernelKind, rows: &Rows, idx: &[usize]) -> Result<Self> {
        Candidates::precompute_with(kind, rows, idx, &Control::none())
    }

    /// [`Candidates::precompute`], polling `ctl` per row of the block.
    fn precompute_with(
        kind: KernelKind,
        rows: &Rows,
        idx: &[usize],
        ctl: &Control,
    ) -> Result<Self> {
        check_indices(idx, rows.n(), "candidates")?;
        let data = kernel_matrix_or(kind, &rows.gather(idx)?, rows, FLSA_HINT, ctl)?;
        Ok(Candidates::Block {
            data,
            n: rows.n(),
            m: idx.len(),
        })
    }

    /// Columns evaluated from `rows` whenever they are needed.
    pub fn on_the_fly(kind: KernelKind, rows: Rows, idx: Vec<usize>) -> Result<Self> {
        kind.require_function("gram='on_the_fly'")?;
        check_indices(&idx, rows.n(), "candidates")?;
        if let Some(why) = f64_problem(kind, Magnitudes::of_rows(&rows)) {
            value_error!("{why}");
        }
        Ok(Candidates::OnTheFly { kind, rows, idx })
    }

    /// Number of rows (training examples).
    pub fn n(&self) -> usize {
        match self {
            Candidates::Block { n, .. } => *n,
            Candidates::OnTheFly { rows, .. } => rows.n(),
        }
    }

    /// Number of candidate columns.
    pub fn m(&self) -> usize {
        match self {
            Candidates::Block { m, .. } => *m,
            Candidates::OnTheFly { idx, .. } => idx.len(),
        }
    }

    /// Runs `f` on column `c`, using `buf` (length `n`) when it must be computed.
    #[inline]
    fn with_column<R>(&self, c: usize, buf: &mut [f64], f: impl FnOnce(&[f64]) -> R) -> R {
        match self {
            Candidates::Block { data, n, .. } => f(&data[c * n..(c + 1) * n]),
            Candidates::OnTheFly { kind, rows, idx } => {
                let j = idx[c];
                let (xj, sq_j) = (rows.row(j), rows.sq_norm(j));
                for (t, slot) in buf.iter_mut().enumerate() {
                    *slot = kernel_value(*kind, rows.row(t), xj, rows.sq_norm(t), sq_j);
                }
                f(buf)
            }
        }
    }

    /// Column `c` as an owned vector.
    #[cfg(test)]
    fn column(&self, c: usize) -> Vec<f64> {
        let mut buf = vec![0.0; self.n()];
        self.with_column(c, &mut buf, |col| col.to_vec())
    }

    /// Column `c` as a new basis vector: a failed allocation is an error
    /// naming `max_terms`, not an abort.
    fn try_column(&self, c: usize) -> Result<Vec<f64>> {
        let n = self.n();
        let mut out = try_filled(n, 0.0, &format!("a basis column of {n} values"), BASIS_HINT)?;
        match self {
            Candidates::Block { data, .. } => out.copy_from_slice(&data[c * n..(c + 1) * n]),
            Candidates::OnTheFly { .. } => self.with_column(c, &mut out, |_| ()),
        }
        Ok(out)
    }

    /// `out[c] = g(c, column c)` for every `c` with `live[c]`, in parallel
    /// when the work is large; [`crate::Error::Interrupted`] (with `out`
    /// partly filled) once `ctl` is cancelled.
    fn map_columns<G>(&self, live: &[bool], out: &mut [[f64; 3]], ctl: &Control, g: G) -> Result<()>
    where
        G: Fn(usize, &[f64], &mut [f64; 3]) + Sync,
    {
        let n = self.n();
        let body = |buf: &mut Vec<f64>, (c, slot): (usize, &mut [f64; 3])| {
            if live[c] && !ctl.is_cancelled() {
                self.with_column(c, buf, |col| g(c, col, slot));
            }
        };
        if n * self.m() >= PARALLEL_WORK {
            out.par_iter_mut()
                .enumerate()
                .for_each_init(|| vec![0.0; n], body);
        } else {
            let mut buf = vec![0.0; n];
            out.iter_mut()
                .enumerate()
                .for_each(|item| body(&mut buf, item));
        }
        ctl.check()
    }
}

/// How the next basis function is chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Selection {
    /// The candidate with the largest error reduction (FLSA).
    Greedy,
    /// The next candidate in the given order (RFLSA, with a random order).
    InOrder,
}

/// Settings of one forward pass.
#[derive(Clone, Debug)]
pub struct FlsaOptions {
    /// Kernel columns to select at most (the constant column not counted).
    pub max_terms: usize,
    /// Relative residue norm under which a candidate is pruned.
    pub tol: f64,
    /// Greedy or in-order selection.
    pub selection: Selection,
    /// Polled per stage and per candidate column; once cancelled the pass
    /// returns [`crate::Error::Interrupted`].
    pub control: Control,
}

/// Why the pass ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// `max_terms` columns were selected.
    MaxTerms,
    /// Every remaining candidate was selected or pruned as dependent: the
    /// numerical rank of `[1, K[:, candidates]]` is the limit.
    Exhausted,
}

/// One forward pass: the models for every number of terms up to `k`.
#[derive(Clone, Debug)]
pub struct FlsaPath {
    /// Selected candidates (positions in the candidate list), in order.
    pub selected: Vec<usize>,
    /// `R`, row-major `(k+1) × (k+1)`, upper triangular; row/column 0 is
    /// the constant column.
    pub r: Vec<f64>,
    /// `z = Uᵀy`, length `k + 1`.
    pub z: Vec<f64>,
    /// `‖y − f_j‖²` on the training set for `j = 0..=k` terms.
    pub residual_sq: Vec<f64>,
    /// Candidates dropped as linearly dependent on the selected ones.
    pub n_pruned: usize,
    /// Why the pass ended.
    pub stop: Stop,
}

impl FlsaPath {
    /// Number of kernel columns selected.
    pub fn len(&self) -> usize {
        self.selected.len()
    }

    /// True when no kernel column was selected.
    pub fn is_empty(&self) -> bool {
        self.selected.is_empty()
    }

    /// `(β₀, β₁..β_k)` of the model with the first `k` columns
    /// (back-substitution of `R[..k+1, ..k+1] β = z[..k+1]`).
    pub fn coefficients(&self, k: usize) -> Vec<f64> {
        let dim = self.len() + 1;
        let k = k.min(self.len());
        let mut beta = self.z[..=k].to_vec();
        for i in (0..=k).rev() {
            let row = &self.r[i * dim..i * dim + dim];
            let tail: f64 = (i + 1..=k).map(|j| row[j] * beta[j]).sum();
            beta[i] = (beta[i] - tail) / row[i];
        }
        beta
    }
}

/// Rows of `q` updated by one task in [`orthogonalise`]: the chunk stays in
/// L1 while the basis vectors stream past it.
const ROW_CHUNK: usize = 512;

/// Removes from `q` its components along the (orthonormal) basis by
/// classical Gram–Schmidt with selective reorthogonalisation: a second pass
/// runs when the first removed more than half of `q`'s squared norm (the
/// Daniel–Gragg–Kaufman–Stewart criterion with η = 1/√2; "twice is
/// enough"), which keeps the basis orthogonal to working precision. Each
/// pass is two independent sweeps — all coefficients, then one update —
/// that run in parallel over basis vectors and rows. The passes stream the
/// basis (`n · k` numbers), so a step costs `O(n · k)` memory traffic.
/// Returns the coefficients.
fn orthogonalise(basis: &[Vec<f64>], q: &mut [f64]) -> Vec<f64> {
    let mut coef = vec![0.0; basis.len()];
    let parallel = q.len() * basis.len() >= PARALLEL_WORK;
    let mut before = dot(q, q);
    for _ in 0..2 {
        let c: Vec<f64> = if parallel {
            basis.par_iter().map(|u| dot(u, q)).collect()
        } else {
            basis.iter().map(|u| dot(u, q)).collect()
        };
        let update = |(b, chunk): (usize, &mut [f64])| {
            let start = b * ROW_CHUNK;
            for (u, &cj) in basis.iter().zip(&c) {
                let part = &u[start..start + chunk.len()];
                chunk.iter_mut().zip(part).for_each(|(v, w)| *v -= cj * w);
            }
        };
        if parallel {
            q.par_chunks_mut(ROW_CHUNK).enumerate().for_each(update);
        } else {
            q.chunks_mut(ROW_CHUNK).enumerate().for_each(update);
        }
        coef.iter_mut().zip(&c).for_each(|(a, b)| *a += b);
        let after = dot(q, q);
        if after > 0.5 * before {
            break;
        }
        before = after;
    }
    coef
}

/// Runs forward selection of the candidate columns for target `y`: the
/// greedy pass here, the in-order one in [`forward_in_order`].
pub fn forward_select(cand: &Candidates, y: &[f64], opts: &FlsaOptions) -> Result<FlsaPath> {
    let n = cand.n();
    let m = cand.m();
    if y.len() != n {
        shape_error!("y has {} values but there are {n} examples", y.len());
    }
    if n == 0 {
        value_error!("forward selection needs at least one example");
    }
    if y.iter().any(|v| !v.is_finite()) {
        value_error!("y contains NaN or infinity");
    }
    if !(opts.tol.is_finite() && opts.tol > 0.0 && opts.tol < 1.0) {
        value_error!("tol must be in (0, 1), got {}", opts.tol);
    }
    if opts.selection == Selection::InOrder {
        return forward_in_order(cand, y, opts);
    }
    let tol2 = opts.tol * opts.tol;

    // The constant column is the first basis function.
    let sqrt_n = (n as f64).sqrt();
    let u0 = vec![1.0 / sqrt_n; n];
    let z0 = y.iter().sum::<f64>() / sqrt_n;
    let mut r: Vec<f64> = y.iter().map(|v| v - z0 / sqrt_n).collect();
    let mut basis = vec![u0];
    let mut r_cols: Vec<Vec<f64>> = vec![vec![sqrt_n]];
    let mut z = vec![z0];
    let mut residual_sq = vec![dot(&r, &r)];
    let mut selected = Vec::new();
    let mut n_pruned = 0;

    // Per candidate: [‖k_c‖², s_c, p_c].
    let mut live = vec![true; m];
    let mut state = vec![[0.0f64; 3]; m];
    let ctl = &opts.control;
    cand.map_columns(&live, &mut state, ctl, |_, col, slot| {
        let norm2 = dot(col, col);
        let a0 = col.iter().sum::<f64>() / sqrt_n;
        *slot = [norm2, norm2 - a0 * a0, dot(&r, col)];
    })?;
    for (c, st) in state.iter().enumerate() {
        if st[1] <= tol2 * st[0] {
            live[c] = false;
            n_pruned += 1;
        }
    }
    let mut verified = vec![false; m];

    let stop = loop {
        ctl.check()?;
        if selected.len() >= opts.max_terms {
            break Stop::MaxTerms;
        }
        // Choose the candidate with the largest error reduction.
        let mut pick: Option<(usize, f64)> = None;
        for (c, st) in state.iter().enumerate() {
            if live[c] {
                let gain = st[2] * st[2] / st[1];
                if pick.is_none_or(|(_, g)| gain > g) {
                    pick = Some((c, gain));
                }
            }
        }
        let Some((c, claimed)) = pick else {
            break Stop::Exhausted;
        };
        // Its exact residue.
        let mut q = cand.try_column(c)?;
        let norm2 = state[c][0];
        let coef = orthogonalise(&basis, &mut q);
        let sq = dot(&q, &q);
        if sq <= tol2 * norm2 || norm2 == 0.0 {
            live[c] = false;
            n_pruned += 1;
            continue;
        }
        if !verified[c] {
            let p = dot(&r, &q);
            let exact = p * p / sq;
            if exact < 0.5 * claimed {
                // Rounding made the downdated scalars optimistic: correct
                // them and choose again.
                state[c][1] = sq;
                state[c][2] = p;
                verified[c] = true;
                continue;
            }
        }
        let norm = sq.sqrt();
        q.iter_mut().for_each(|v| *v /= norm);
        let zeta = dot(&q, &r);
        r.iter_mut().zip(&q).for_each(|(v, w)| *v -= zeta * w);
        let mut col = coef;
        col.push(norm);
        r_cols.push(col);
        z.push(zeta);
        residual_sq.push(dot(&r, &r));
        selected.push(c);
        live[c] = false;
        basis.push(q);
        let u = basis.last().map(Vec::as_slice).unwrap_or(&[]);
        let mut delta = vec![[0.0f64; 3]; m];
        cand.map_columns(&live, &mut delta, ctl, |_, col, slot| {
            slot[0] = dot(u, col);
        })?;
        for c in 0..m {
            if !live[c] {
                continue;
            }
            let a = delta[c][0];
            let st = &mut state[c];
            st[1] -= a * a;
            st[2] -= zeta * a;
            if st[1] <= tol2 * st[0] {
                live[c] = false;
                n_pruned += 1;
            }
        }
        verified.iter_mut().for_each(|v| *v = false);
    };

    Ok(assemble(selected, r_cols, z, residual_sq, n_pruned, stop))
}

// ------------------------------------------------------ blocked in-order pass

/// Dictionary columns orthogonalised together in the in-order pass: the
/// basis streams past a block of columns instead of one column, so the
/// projections run at arithmetic speed instead of memory speed.
const IN_ORDER_BLOCK: usize = 32;

/// One classical Gram–Schmidt pass of the columns of `c` (each `n` values,
/// contiguous) against the basis columns `lo..hi` of `q` (column-major):
/// `h = Qᵀc` (`h[b·(hi−lo) + j]`), then `c −= Q h`, both as register-tiled
/// matrix products ([`crate::flsa::blocks`]).
fn project_out(basis: &BasisView<'_>, lo: usize, hi: usize, c: &mut [f64], h: &mut Vec<f64>) {
    let n = basis.n;
    let nb = c.len().checked_div(n).unwrap_or(0);
    h.resize((hi - lo) * nb, 0.0);
    gram_t(basis.col, lo, hi, c, n, h);
    sub_product(basis, lo, hi, c, h);
}

/// Sum of squares of `c[b·n..(b+1)·n]` for every column `b`.
fn column_sq_norms(c: &[f64], n: usize) -> Vec<f64> {
    c.chunks_exact(n).map(|col| dot(col, col)).collect()
}

/// The in-order pass (RFLSA), a block of dictionary columns at a time.
///
/// Each block is computed (all its kernel columns at once, against the
/// rows transposed once into panels, as [`kernel_matrix_or`] computes
/// them), then orthogonalised against the basis so
/// far by block classical Gram–Schmidt (a second pass when some column lost
/// more than half its squared norm, as in [`orthogonalise`]); then its
/// columns are taken one by one, each orthogonalised against the columns of
/// the block already accepted the same way, and pruned or accepted. A block
/// never holds more columns than are still needed, so no column past the
/// last selected one is computed. The arithmetic is that of column-by-column
/// classical Gram–Schmidt, regrouped.
fn forward_in_order(cand: &Candidates, y: &[f64], opts: &FlsaOptions) -> Result<FlsaPath> {
    let n = cand.n();
    let m = cand.m();
    let tol2 = opts.tol * opts.tol;
    let cap = opts.max_terms.min(m) + 1;
    let sqrt_n = (n as f64).sqrt();
    // The basis column-major and as panels of eight rows (see
    // `BasisView`): 2 · 8 · n · (max_terms + 1) bytes, reserved up front.
    let what = format!("the basis of {cap} columns of {n} values");
    let len = checked_len::<f64>(cap, n, &what, BASIS_HINT)?;
    let mut q = try_with_capacity(len, &what, BASIS_HINT)?;
    q.extend(std::iter::repeat_n(1.0 / sqrt_n, n));
    let tiles_len = checked_len::<f64>(cap, n.div_ceil(8) * 8, &what, BASIS_HINT)?;
    let mut tiles = try_filled(tiles_len, 0.0, &what, BASIS_HINT)?;
    let add_to_tiles = |tiles: &mut [f64], j: usize, col: &[f64]| {
        for (t, &v) in col.iter().enumerate() {
            tiles[t / 8 * 8 * cap + j * 8 + t % 8] = v;
        }
    };
    add_to_tiles(&mut tiles, 0, &q);
    // Columns computed from the rows: the rows transposed once, then a
    // block of candidates' kernel rows against all of them at a time.
    let features = match cand {
        Candidates::OnTheFly { kind, rows, .. } => {
            Some(KernelRowsAgainst::try_new(*kind, rows, BASIS_HINT)?)
        }
        Candidates::Block { .. } => None,
    };
    let z0 = y.iter().sum::<f64>() / sqrt_n;
    let mut r: Vec<f64> = y.iter().map(|v| v - z0 / sqrt_n).collect();
    let mut r_cols: Vec<Vec<f64>> = vec![vec![sqrt_n]];
    let mut z = vec![z0];
    let mut residual_sq = vec![dot(&r, &r)];
    let mut selected = Vec::new();
    let mut n_pruned = 0;
    let mut next = 0;
    let what = format!("a block of {IN_ORDER_BLOCK} columns of {n} values");
    let mut block = try_with_capacity(
        checked_len::<f64>(IN_ORDER_BLOCK.min(cap), n, &what, BASIS_HINT)?,
        &what,
        BASIS_HINT,
    )?;
    let mut h = Vec::new();
    let mut h_new = Vec::new();
    let stop = loop {
        opts.control.check()?;
        if selected.len() >= opts.max_terms {
            break Stop::MaxTerms;
        }
        if next >= m {
            break Stop::Exhausted;
        }
        let nb = IN_ORDER_BLOCK
            .min(opts.max_terms - selected.len())
            .min(m - next);
        block.clear();
        match (cand, &features) {
            (Candidates::OnTheFly { rows, idx, .. }, Some(against)) => {
                block.resize(nb * n, 0.0);
                let centres = rows.gather(&idx[next..next + nb])?;
                against.fill(&centres, &mut block, &opts.control)?;
            }
            (Candidates::Block { data, .. }, _) => {
                block.extend_from_slice(&data[next * n..(next + nb) * n]);
            }
            (Candidates::OnTheFly { .. }, None) => unreachable!("the rows are copied above"),
        }
        let norms2 = column_sq_norms(&block, n);
        // Against the basis so far.
        let k0 = q.len() / n;
        let mut coef = vec![0.0; k0 * nb];
        let mut before = norms2.clone();
        for _ in 0..2 {
            let basis = BasisView {
                col: &q,
                n,
                tiles: &tiles,
                cap,
            };
            project_out(&basis, 0, k0, &mut block, &mut h);
            coef.iter_mut().zip(&h).for_each(|(a, b)| *a += b);
            let after = column_sq_norms(&block, n);
            let again = after.iter().zip(&before).any(|(a, b)| *a <= 0.5 * b);
            before = after;
            if !again {
                break;
            }
        }
        // Column by column against the block's accepted columns.
        for b in 0..nb {
            if selected.len() >= opts.max_terms {
                break;
            }
            let c = next + b;
            let col = &mut block[b * n..(b + 1) * n];
            let k1 = q.len() / n;
            let mut extra = vec![0.0; k1 - k0];
            if k1 > k0 {
                let mut prev = dot(col, col);
                for _ in 0..2 {
                    let basis = BasisView {
                        col: &q,
                        n,
                        tiles: &tiles,
                        cap,
                    };
                    project_out(&basis, k0, k1, col, &mut h_new);
                    extra.iter_mut().zip(&h_new).for_each(|(a, b)| *a += b);
                    let now = dot(col, col);
                    if now > 0.5 * prev {
                        break;
                    }
                    prev = now;
                }
            }
            let norm2 = norms2[b];
            let sq = dot(col, col);
            if sq <= tol2 * norm2 || norm2 == 0.0 {
                n_pruned += 1;
                continue;
            }
            let norm = sq.sqrt();
            col.iter_mut().for_each(|v| *v /= norm);
            let zeta = dot(col, &r);
            r.iter_mut()
                .zip(col.iter())
                .for_each(|(v, w)| *v -= zeta * w);
            let mut rc = coef[b * k0..(b + 1) * k0].to_vec();
            rc.extend_from_slice(&extra);
            rc.push(norm);
            r_cols.push(rc);
            z.push(zeta);
            residual_sq.push(dot(&r, &r));
            selected.push(c);
            add_to_tiles(&mut tiles, k1, col);
            q.extend_from_slice(col);
        }
        next += nb;
    };
    Ok(assemble(selected, r_cols, z, residual_sq, n_pruned, stop))
}

fn assemble(
    selected: Vec<usize>,
    r_cols: Vec<Vec<f64>>,
    z: Vec<f64>,
    residual_sq: Vec<f64>,
    n_pruned: usize,
    stop: Stop,
) -> FlsaPath {
    let dim = selected.len() + 1;
    let mut rm = vec![0.0; dim * dim];
    for (j, col) in r_cols.iter().enumerate() {
        for (i, &v) in col.iter().enumerate() {
            rm[i * dim + j] = v;
        }
    }
    FlsaPath {
        selected,
        r: rm,
        z,
        residual_sq,
        n_pruned,
        stop,
    }
}

#[cfg(test)]
#[allow(clippy::needless_range_loop)]
mod tests {
    use super::*;
    use crate::kernel::kernel_matrix;

    fn toy(n: usize, d: usize) -> (Rows, Vec<f64>) {
        let data: Vec<f64> = (0..n * d)
            .map(|v| ((v as f64) * 0.731).sin() * 2.0)
            .collect();
        let rows = Rows::new(data, n, d).unwrap();
        let y = (0..n)
            .map(|i| if (i * 7 % 5) < 2 { 1.0 } else { -1.0 })
            .collect();
        (rows, y)
    }

    /// Least squares of `y` on `[1, K[:, cols]]` by normal equations solved
    /// with Gaussian elimination (small, well-conditioned cases only).
    fn lstsq(cand: &Candidates, cols: &[usize], y: &[f64]) -> Vec<f64> {
        let n = y.len();
        let mut phi = vec![vec![1.0; n]];
        phi.extend(cols.iter().map(|&c| cand.column(c)));
        let k = phi.len();
        let mut a = vec![vec![0.0; k + 1]; k];
        for i in 0..k {
            for j in 0..k {
                a[i][j] = dot(&phi[i], &phi[j]);
            }
            a[i][k] = dot(&phi[i], y);
        }
        for p in 0..k {
            let piv = (p..k)
                .max_by(|&x, &y| a[x][p].abs().total_cmp(&a[y][p].abs()))
                .unwrap();
            a.swap(p, piv);
            for i in 0..k {
                if i != p {
                    let f = a[i][p] / a[p][p];
                    for j in p..=k {
                        a[i][j] -= f * a[p][j];
                    }
                }
            }
        }
        (0..k).map(|i| a[i][k] / a[i][i]).collect()
    }

    /// A greedy pass with every row of `toy(n, d)` a candidate (RBF kernel).
    fn greedy_on_toy(
        n: usize,
        d: usize,
        gamma: f64,
        max_terms: usize,
    ) -> (Candidates, Vec<f64>, FlsaPath) {
        let (rows, y) = toy(n, d);
        let idx: Vec<usize> = (0..n).collect();
        let cand = Candidates::precompute(KernelKind::Rbf { gamma }, &rows, &idx).unwrap();
        let path = forward_select(&cand, &y, &opts(max_terms, Selection::Greedy)).unwrap();
        (cand, y, path)
    }

    /// The path's model with `k` terms is the least-squares fit on its
    /// first `k` selected columns, to relative precision `tol`.
    fn assert_least_squares(path: &FlsaPath, cand: &Candidates, y: &[f64], k: usize, tol: f64) {
        let beta = path.coefficients(k);
        let want = lstsq(cand, &path.selected[..k], y);
        for (a, b) in beta.iter().zip(&want) {
            assert!((a - b).abs() < tol * (1.0 + b.abs()), "k={k}: {a} vs {b}");
        }
    }

    fn opts(max_terms: usize, selection: Selection) -> FlsaOptions {
        FlsaOptions {
            max_terms,
            tol: 1e-7,
            selection,
            control: Control::none(),
        }
    }

    #[test]
    fn coefficients_are_least_squares_at_every_step() {
        let (cand, y, path) = greedy_on_toy(40, 3, 0.5, 8);
        assert_eq!(path.len(), 8);
        for k in 0..=8 {
            assert_least_squares(&path, &cand, &y, k, 1e-6);
        }
    }

    #[test]
    fn greedy_picks_the_largest_error_reduction() {
        let (cand, y, path) = greedy_on_toy(30, 2, 1.0, 5);
        for k in 0..5 {
            let sse = |cols: &[usize]| {
                let beta = lstsq(&cand, cols, &y);
                let mut total = 0.0;
                for t in 0..30 {
                    let mut f = beta[0];
                    for (j, &c) in cols.iter().enumerate() {
                        f += beta[j + 1] * cand.column(c)[t];
                    }
                    total += (y[t] - f).powi(2);
                }
                total
            };
            let prefix = &path.selected[..k];
            let best = (0..30)
                .filter(|c| !prefix.contains(c))
                .min_by(|&a, &b| {
                    let mut pa = prefix.to_vec();
                    pa.push(a);
                    let mut pb = prefix.to_vec();
                    pb.push(b);
                    sse(&pa).total_cmp(&sse(&pb))
                })
                .unwrap();
            assert_eq!(path.selected[k], best, "step {k}");
            assert!((path.residual_sq[k + 1] - sse(&path.selected[..=k])).abs() < 1e-8);
        }
    }

    #[test]
    fn on_the_fly_matches_the_block() {
        let (rows, y) = toy(50, 4);
        let kind = KernelKind::Rbf { gamma: 0.3 };
        let idx: Vec<usize> = (0..50).step_by(2).collect();
        let block = Candidates::precompute(kind, &rows, &idx).unwrap();
        let fly = Candidates::on_the_fly(kind, rows, idx).unwrap();
        let a = forward_select(&block, &y, &opts(10, Selection::Greedy)).unwrap();
        let b = forward_select(&fly, &y, &opts(10, Selection::Greedy)).unwrap();
        assert_eq!(a.selected, b.selected);
        for (x, w) in a.z.iter().zip(&b.z) {
            assert!((x - w).abs() < 1e-12);
        }
    }

    #[test]
    fn duplicated_columns_are_pruned_and_the_rank_stops_the_pass() {
        // Linear kernel on 2-D points: rank of [1, K] is at most 3.
        let data = vec![1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 2.0, 0.5, 1.0, 0.0, -1.0, 3.0];
        let rows = Rows::new(data, 6, 2).unwrap();
        let y = vec![1.0, -1.0, 1.0, 1.0, -1.0, -1.0];
        let cand = Candidates::precompute(KernelKind::Linear, &rows, &[0, 1, 2, 3, 4, 5]).unwrap();
        for sel in [Selection::Greedy, Selection::InOrder] {
            let path = forward_select(&cand, &y, &opts(6, sel)).unwrap();
            assert_eq!(path.stop, Stop::Exhausted, "{sel:?}");
            assert!(path.len() <= 2, "{sel:?}: {:?}", path.selected);
            assert_eq!(path.len() + path.n_pruned, 6);
            if sel == Selection::InOrder {
                // Row 4 duplicates row 0: never both.
                assert!(!(path.selected.contains(&0) && path.selected.contains(&4)));
            }
        }
    }

    #[test]
    fn in_order_takes_the_given_order() {
        let (rows, y) = toy(20, 2);
        let kind = KernelKind::Rbf { gamma: 1.0 };
        let idx = vec![7, 3, 11, 0];
        let cand = Candidates::on_the_fly(kind, rows, idx).unwrap();
        let path = forward_select(&cand, &y, &opts(3, Selection::InOrder)).unwrap();
        assert_eq!(path.selected, vec![0, 1, 2]);
        assert_eq!(path.stop, Stop::MaxTerms);
        assert_least_squares(&path, &cand, &y, 3, 1e-8);
    }

    #[test]
    fn in_order_blocks_match_least_squares_across_block_edges() {
        // More columns than one block, with duplicates to prune on both
        // sides of a block edge.
        let (rows, y) = toy(90, 3);
        let kind = KernelKind::Rbf { gamma: 4.0 };
        let mut idx: Vec<usize> = (0..80).collect();
        idx[IN_ORDER_BLOCK - 1] = 5;
        idx[IN_ORDER_BLOCK + 1] = 7;
        let cand = Candidates::on_the_fly(kind, rows, idx).unwrap();
        let path = forward_select(&cand, &y, &opts(45, Selection::InOrder)).unwrap();
        assert_eq!(path.n_pruned, 2);
        assert_eq!(path.len(), 45);
        assert!(!path.selected.contains(&(IN_ORDER_BLOCK - 1)));
        assert!(!path.selected.contains(&(IN_ORDER_BLOCK + 1)));
        for k in [10, IN_ORDER_BLOCK, 45] {
            assert_least_squares(&path, &cand, &y, k, 1e-6);
        }
    }

    #[test]
    fn every_column_store_gives_the_same_path() {
        let (rows, _) = toy(30, 3);
        let kind = KernelKind::Rbf { gamma: 0.4 };
        let idx = vec![3, 17, 0, 29, 8, 11];
        let data: Vec<f64> = (0..30).flat_map(|i| rows.row(i).to_vec()).collect();
        let gram = kernel_matrix(kind, &rows, &rows).unwrap();
        let feats = TrainingData::new(kind, &data, 30, 3).unwrap();
        let k = TrainingData::new(KernelKind::Precomputed, &gram, 30, 30).unwrap();
        let want = Candidates::precompute(kind, &rows, &idx).unwrap();
        for cand in [
            Candidates::new(&feats, idx.clone(), Gram::Precomputed).unwrap(),
            Candidates::new(&feats, idx.clone(), Gram::OnTheFly).unwrap(),
            Candidates::new(&k, idx.clone(), Gram::OnTheFly).unwrap(),
        ] {
            for c in 0..idx.len() {
                for (a, b) in cand.column(c).iter().zip(want.column(c)) {
                    assert!((a - b).abs() < 1e-12);
                }
            }
        }
        assert!(Candidates::new(&k, vec![30], Gram::Precomputed).is_err());
    }

    #[test]
    fn bad_input_is_an_error() {
        let (rows, y) = toy(10, 2);
        let kind = KernelKind::Rbf { gamma: 1.0 };
        assert!(Candidates::precompute(kind, &rows, &[10]).is_err());
        let cand = Candidates::precompute(kind, &rows, &[0, 1]).unwrap();
        assert!(forward_select(&cand, &y[..9], &opts(2, Selection::Greedy)).is_err());
        let mut bad = y.clone();
        bad[0] = f64::NAN;
        assert!(forward_select(&cand, &bad, &opts(2, Selection::Greedy)).is_err());
        let mut o = opts(2, Selection::Greedy);
        o.tol = 0.0;
        assert!(forward_select(&cand, &y, &o).is_err());
        assert!(Candidates::block(vec![1.0; 5], 2, 3).is_err());
    }
}
