//! Where a solver's kernel values come from: feature rows with a kernel
//! function, or a kernel matrix the caller computed.

use std::sync::{Arc, Mutex, OnceLock};

use rayon::prelude::*;

use super::csr::{scratch, Csc, CsrRows};
use super::fill::{fill_one, fill_two};
use super::gram::{Gram, GramRow};
use super::kinds::KernelKind;
use super::matrix::{
    check_indices, check_kernel_values, exp_scaled, gather_square, values_from_dots, TrainingData,
};
use super::panel::{sq_dist_in_order, Columns64, Panel, Query};
use super::precision::{resolve, Magnitudes, Precision, QValue};
use super::rows::{gather_rows, kernel_value, Rows};
use crate::error::{try_copy, value_error, Result};

/// Rows × features below which a kernel column is filled on one thread:
/// spawning rayon tasks costs more than the arithmetic under this size.
const PARALLEL_WORK: usize = 1 << 22;
/// Rows handed to one rayon task when a column is filled in parallel.
const PARALLEL_CHUNK: usize = 2048;

std::thread_local! {
    /// Each thread's two [`Query`] buffers for [`KernelSource::fill`] and
    /// [`KernelSource::fill_pair`], reused from column to column.
    static QUERIES: std::cell::RefCell<[Query; 2]> =
        const { std::cell::RefCell::new([Query::EMPTY, Query::EMPTY]) };
}

/// `f` given rows `i` and `j` of `panel` as queries held in this thread's
/// reused buffers ([`Panel::query_into`]); in new buffers when those are
/// taken (a fill that runs while another on the same thread waits for its
/// parallel pieces).
fn with_queries<R>(
    panel: &Panel,
    (i, j): (usize, Option<usize>),
    f: impl FnOnce(&Query, &Query) -> R,
) -> R {
    let run = |qs: &mut [Query; 2]| {
        panel.query_into(i, &mut qs[0]);
        if let Some(j) = j {
            panel.query_into(j, &mut qs[1]);
        }
        f(&qs[0], &qs[1])
    };
    QUERIES.with(|cell| match cell.try_borrow_mut() {
        Ok(mut qs) => run(&mut qs),
        Err(_) => run(&mut [Query::empty(), Query::empty()]),
    })
}

/// Runs `fill(first, chunk)` over `out` (the entries from index `start` on,
/// `d` features each): in [`PARALLEL_CHUNK`]-sized chunks on rayon's pool
/// when the work is large, else in one piece.
fn in_chunks<T: Send>(
    out: &mut [T],
    start: usize,
    d: usize,
    fill: impl Fn(usize, &mut [T]) + Sync,
) {
    if out.len() * d.max(1) >= PARALLEL_WORK {
        out.par_chunks_mut(PARALLEL_CHUNK)
            .enumerate()
            .for_each(|(c, chunk)| fill(start + c * PARALLEL_CHUNK, chunk));
    } else {
        fill(start, out);
    }
}

/// Entries per stack block of [`kernel_run`].
const RUN_BLOCK: usize = 256;

/// `out[k] = value(s + k, K)` with `K` the kernel value of the dot product
/// `dot(s + k)`, the squared norm `sq(s + k)` and the query's `sq_q`: in
/// blocks on the stack, by [`values_from_dots`] (the dense
/// `float64` columns' exponential, so a sparse and a dense copy of the same
/// rows give the same values where their distances agree).
fn kernel_run<T>(
    kind: KernelKind,
    s: usize,
    out: &mut [T],
    value: &impl Fn(usize, f64) -> T,
    dot: impl Fn(usize) -> f64,
    sq: impl Fn(usize) -> f64,
    sq_q: f64,
) {
    let mut block = [0.0f64; RUN_BLOCK];
    for (b, part) in out.chunks_mut(RUN_BLOCK).enumerate() {
        let from = s + b * RUN_BLOCK;
        let vals = &mut block[..part.len()];
        for (k, v) in vals.iter_mut().enumerate() {
            *v = dot(from + k);
        }
        values_from_dots(kind, vals, |k| sq(from + k), sq_q);
        for (k, (slot, &v)) in part.iter_mut().zip(vals.iter()).enumerate() {
            *slot = value(from + k, v);
        }
    }
}

/// A sparse source's two zeroed work vectors: the dense row a column's row
/// is scattered into ([`CsrRows::scatter`], `d` values), and the dot
/// products accumulated over the transpose ([`Csc::accumulate`], `n`
/// values); all zeros between fills.
pub struct Scratch(Mutex<(Vec<f64>, Vec<f64>)>);

impl Scratch {
    fn new(d: usize, n: usize) -> Result<Self> {
        Ok(Scratch(Mutex::new((scratch(d)?, scratch(n)?))))
    }

    /// The buffers, all zeros (a fill that panicked may have left entries
    /// set: then they are cleared whole).
    fn lock(&self) -> std::sync::MutexGuard<'_, (Vec<f64>, Vec<f64>)> {
        match self.0.lock() {
            Ok(guard) => guard,
            Err(poisoned) => {
                let mut guard = poisoned.into_inner();
                guard.0.iter_mut().for_each(|v| *v = 0.0);
                guard.1.iter_mut().for_each(|v| *v = 0.0);
                guard
            }
        }
    }
}

impl Clone for Scratch {
    fn clone(&self) -> Self {
        Scratch(Mutex::new(self.lock().clone()))
    }
}

impl std::fmt::Debug for Scratch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let g = self.lock();
        write!(f, "Scratch({} + {} values)", g.0.len(), g.1.len())
    }
}

/// Where kernel values come from: feature rows and a kernel, or a matrix the
/// caller precomputed. All support swapping indices, which shrinking needs.
#[derive(Clone, Debug)]
pub enum KernelSource {
    /// Feature rows (swapped physically, so active rows stay contiguous): an
    /// `f64` copy for single values and `f64` columns, and an `f32`
    /// [`Panel`] for `f32` columns, built at the first `f32` fill (a
    /// `float64` solve never builds it).
    Dense {
        kind: KernelKind,
        rows: Rows,
        panel: OnceLock<Panel>,
        /// The rows feature by feature in `f64`, made by the first `f64`
        /// RBF fill (`None`: too large, or no room for it, see
        /// [`Columns64::try_new`]; the fills then go row by row, to the same
        /// values).
        cols64: OnceLock<Option<Columns64>>,
    },
    /// Sparse feature rows (CSR), addressed through a permutation; every
    /// kernel value is computed in `f64` from dot products over stored
    /// entries, whatever the column type. A column takes the cheaper of two
    /// ways: over the transpose `cols`, only the products of features the
    /// column's row shares with others; or one scatter of the row into
    /// `scratch`, then one gather per row of the range (cheaper when
    /// shrinking has left few active rows).
    Sparse {
        kind: KernelKind,
        rows: Arc<CsrRows>,
        cols: Option<Arc<Csc>>,
        perm: Vec<usize>,
        scratch: Scratch,
    },
    /// Rows of a square kernel matrix (possibly shared with other sources),
    /// addressed through `perm`: example `i` is the matrix's row `perm[i]`.
    Precomputed { gram: Gram, perm: Vec<usize> },
}

/// `out[k] = f(t, row[perm[t]])` for `t = start + k`: a column of a
/// precomputed matrix's rows in the source's order.
#[inline]
fn gather<V: QValue, O>(
    row: &[V],
    perm: &[usize],
    start: usize,
    out: &mut [O],
    f: impl Fn(usize, V) -> O,
) {
    for (k, slot) in out.iter_mut().enumerate() {
        let t = start + k;
        *slot = f(t, row[perm[t]]);
    }
}

impl KernelSource {
    /// A source over feature rows.
    pub fn dense(kind: KernelKind, rows: Rows) -> Result<Self> {
        kind.require_function("a kernel source over feature rows")?;
        Ok(KernelSource::Dense {
            kind,
            rows,
            panel: OnceLock::new(),
            cols64: OnceLock::new(),
        })
    }

    /// A source over sparse rows: all of them, or the listed ones (in that
    /// order, copied).
    pub fn sparse(kind: KernelKind, rows: &Arc<CsrRows>, subset: Option<&[usize]>) -> Result<Self> {
        kind.require_function("a kernel source over sparse rows")?;
        let rows = match subset {
            None => Arc::clone(rows),
            Some(r) => {
                check_indices(r, rows.n(), "rows")?;
                Arc::new(rows.gather(r)?)
            }
        };
        let n = rows.n();
        let hint = "train on fewer rows";
        let mut perm = crate::error::try_with_capacity(n, "the sparse rows' order", hint)?;
        perm.extend(0..n);
        Ok(KernelSource::Sparse {
            kind,
            scratch: Scratch::new(rows.d(), n)?,
            cols: rows.transpose()?,
            rows,
            perm,
        })
    }

    /// `out[t − start] = value(t, K(x_i, x_t))` for `t ∈ [start, end)` over
    /// sparse rows, in parallel when the work is large.
    fn sparse_column<T: Send>(
        &self,
        i: usize,
        start: usize,
        out: &mut [T],
        value: impl Fn(usize, f64) -> T + Sync,
    ) {
        if let KernelSource::Sparse {
            kind,
            rows,
            cols,
            perm,
            scratch,
        } = self
        {
            let mut guard = scratch.lock();
            let (w, acc) = &mut *guard;
            let r = perm[i];
            let sq_i = rows.sq_norm(r);
            let (idx, val) = rows.row(r);
            let per_row = rows.nnz() / rows.n().max(1) + 1;
            let gather_cost = out.len() * per_row;
            if let Some(cols) = cols
                .as_deref()
                .filter(|c| c.cost(idx) + out.len() < gather_cost)
            {
                cols.accumulate(idx, val, acc);
                let acc_ref: &[f64] = acc;
                in_chunks(out, start, 1, |s, chunk| {
                    let (dot, sq) = (
                        |t: usize| acc_ref[perm[t]],
                        |t: usize| rows.sq_norm(perm[t]),
                    );
                    kernel_run(*kind, s, chunk, &value, dot, sq, sq_i);
                });
                cols.clear(idx, acc);
            } else {
                rows.scatter(r, w);
                let w_ref: &[f64] = w;
                in_chunks(out, start, per_row, |s, chunk| {
                    let dot = |t: usize| rows.gather_dot(perm[t], w_ref);
                    let sq = |t: usize| rows.sq_norm(perm[t]);
                    kernel_run(*kind, s, chunk, &value, dot, sq, sq_i);
                });
                rows.clear(r, w);
            }
        }
    }

    /// A source over a square precomputed kernel matrix (row-major).
    pub fn precomputed(matrix: Vec<f64>, n: usize) -> Result<Self> {
        check_kernel_values(&matrix, n, n, "the precomputed kernel")?;
        Ok(KernelSource::checked_gram(matrix, n))
    }

    /// A source over a square kernel matrix already known to be finite.
    pub(crate) fn checked_gram(matrix: Vec<f64>, n: usize) -> Self {
        KernelSource::Precomputed {
            gram: Gram::checked(matrix, n),
            perm: (0..n).collect(),
        }
    }

    /// A source over the rows `rows` of a shared kernel matrix (in that
    /// order; a row may repeat): no value is copied.
    pub fn gram_rows(gram: &Gram, rows: &[usize]) -> Result<Self> {
        check_indices(rows, gram.n(), "rows")?;
        Ok(KernelSource::Precomputed {
            gram: gram.clone(),
            perm: rows.to_vec(),
        })
    }

    /// The source of the caller's training data, or of the listed examples
    /// only (`rows`, in that order): their feature rows, or for a
    /// precomputed kernel the square block `K[rows][:, rows]`. Only the
    /// examples used are copied and checked.
    pub fn from_data(data: &TrainingData<'_>, rows: Option<&[usize]>) -> Result<Self> {
        let (values, n, d) = (data.values(), data.n(), data.d());
        if let Some(r) = rows {
            check_indices(r, n, "rows")?;
        }
        match (rows, data.kind()) {
            (None, KernelKind::Precomputed) => {
                let what = format!("a copy of the {n} × {n} precomputed kernel");
                let hint = "use a kernel function instead of kernel='precomputed'";
                KernelSource::precomputed(try_copy(values, &what, hint)?, n)
            }
            (None, kind) => {
                let what = format!("a copy of the {n} × {d} training data");
                let values = try_copy(values, &what, "train on fewer rows")?;
                KernelSource::dense(kind, Rows::new(values, n, d)?)
            }
            (Some(r), KernelKind::Precomputed) => {
                let hint = "use a kernel function instead of kernel='precomputed'";
                KernelSource::precomputed(gather_square(values, n, r, hint)?, r.len())
            }
            (Some(r), kind) => {
                KernelSource::dense(kind, Rows::new(gather_rows(values, d, r)?, r.len(), d)?)
            }
        }
    }

    /// Builds the `f32` panel the `f32` fills read, if not yet built, with
    /// its allocation checked ([`Panel::try_new`]); solvers call it before an
    /// `f32` solve so that running out of memory is an error, not an abort.
    pub fn prepare_f32(&self) -> Result<()> {
        if let KernelSource::Dense { rows, panel, .. } = self {
            if panel.get().is_none() {
                let _ = panel.set(Panel::try_new(rows)?);
            }
        }
        Ok(())
    }

    /// Number of examples.
    pub fn n(&self) -> usize {
        match self {
            KernelSource::Dense { rows, .. } => rows.n(),
            KernelSource::Sparse { perm, .. } => perm.len(),
            KernelSource::Precomputed { perm, .. } => perm.len(),
        }
    }

    /// Features per row (1 for a precomputed matrix, whose values are read,
    /// not computed): the work of one kernel value, for sizing splits.
    pub fn features(&self) -> usize {
        match self {
            KernelSource::Dense { rows, .. } => rows.d(),
            KernelSource::Sparse { rows, .. } => rows.nnz() / rows.n().max(1) + 1,
            KernelSource::Precomputed { .. } => 1,
        }
    }

    /// Whether a column range can be filled as independent row ranges on
    /// several threads at once: dense rows and precomputed matrices; sparse
    /// rows share one scratch buffer per fill.
    pub fn fills_by_rows(&self) -> bool {
        !matches!(self, KernelSource::Sparse { .. })
    }

    /// The kernel function (`Precomputed` for a matrix).
    pub fn kind(&self) -> KernelKind {
        match self {
            KernelSource::Dense { kind, .. } | KernelSource::Sparse { kind, .. } => *kind,
            KernelSource::Precomputed { .. } => KernelKind::Precomputed,
        }
    }

    /// The magnitudes [`crate::precision`] decides the path from: of the
    /// feature rows, or of the kernel matrix's values.
    pub fn magnitudes(&self) -> Magnitudes {
        match self {
            KernelSource::Dense { rows, .. } => Magnitudes::of_rows(rows),
            KernelSource::Sparse { rows, .. } => Magnitudes {
                max_sq: rows.max_sq_norm(),
                max_abs: rows.max_abs(),
            },
            KernelSource::Precomputed { gram, .. } => gram.magnitudes(),
        }
    }

    /// The path a solve to `tol` runs in ([`super::precision::resolve`]);
    /// always `Float64` over sparse rows, whose kernel values are computed
    /// in `f64` only.
    pub fn precision(&self, requested: Precision, tol: f64) -> Result<Precision> {
        let requested = match self {
            KernelSource::Sparse { .. } => Precision::Float64,
            _ => requested,
        };
        let resolved = resolve(requested, self.kind(), self.magnitudes(), Some(tol))?;
        if let KernelSource::Precomputed { gram, .. } = self {
            if gram.is_f32() && resolved == Precision::Float64 {
                value_error!(
                    "the shared kernel matrix holds float32 values, which cannot serve a \
                     float64 solve (tol={tol:e}): build it with the solves' tol"
                );
            }
        }
        Ok(resolved)
    }

    /// `K(x_i, x_j)` in the current (possibly swapped) order, in `f64`.
    #[inline]
    pub fn eval(&self, i: usize, j: usize) -> f64 {
        match self {
            KernelSource::Dense { kind, rows, .. } => kernel_value(
                *kind,
                rows.row(i),
                rows.row(j),
                rows.sq_norm(i),
                rows.sq_norm(j),
            ),
            KernelSource::Sparse {
                kind, rows, perm, ..
            } => rows.kernel(*kind, perm[i], rows, perm[j]),
            KernelSource::Precomputed { gram, perm } => gram.at(perm[i], perm[j]),
        }
    }

    /// Writes `factor · scale[t] · K(x_i, x_t)` into `out[t − start]` for
    /// `t ∈ [start, end)`, vectorised, and in parallel when the work is large.
    pub fn fill(
        &self,
        i: usize,
        start: usize,
        end: usize,
        factor: f32,
        scale: &[f32],
        out: &mut [f32],
    ) {
        debug_assert_eq!(out.len(), end - start);
        match self {
            KernelSource::Dense {
                kind, rows, panel, ..
            } => {
                let panel = panel.get_or_init(|| Panel::new(rows));
                with_queries(panel, (i, None), |q, _| {
                    in_chunks(out, start, panel.d(), |s, chunk| {
                        fill_one(*kind, panel, q, factor, scale, s, s + chunk.len(), chunk);
                    });
                });
            }
            KernelSource::Sparse { .. } => {
                self.sparse_column(i, start, out, |t, v| factor * scale[t] * v as f32)
            }
            KernelSource::Precomputed { .. } => self.fill_precomputed(i, start, factor, scale, out),
        }
    }

    /// [`KernelSource::fill`] for two columns `i` and `j` at once (one pass
    /// over the data).
    pub fn fill_pair(
        &self,
        (i, j): (usize, usize),
        start: usize,
        end: usize,
        (fi, fj): (f32, f32),
        scale: &[f32],
        out_i: &mut [f32],
        out_j: &mut [f32],
    ) {
        match self {
            KernelSource::Dense {
                kind, rows, panel, ..
            } => {
                let panel = panel.get_or_init(|| Panel::new(rows));
                with_queries(panel, (i, Some(j)), |qi, qj| {
                    if (end - start) * panel.d().max(1) >= PARALLEL_WORK {
                        out_i
                            .par_chunks_mut(PARALLEL_CHUNK)
                            .zip(out_j.par_chunks_mut(PARALLEL_CHUNK))
                            .enumerate()
                            .for_each(|(c, (a, b))| {
                                let s = start + c * PARALLEL_CHUNK;
                                let e = s + a.len();
                                fill_two(*kind, panel, [qi, qj], [fi, fj], scale, s, e, [a, b]);
                            });
                    } else {
                        fill_two(
                            *kind,
                            panel,
                            [qi, qj],
                            [fi, fj],
                            scale,
                            start,
                            end,
                            [out_i, out_j],
                        );
                    }
                });
            }
            KernelSource::Sparse { .. } => {
                self.fill(i, start, end, fi, scale, out_i);
                self.fill(j, start, end, fj, scale, out_j);
            }
            KernelSource::Precomputed { .. } => {
                self.fill_precomputed(i, start, fi, scale, out_i);
                self.fill_precomputed(j, start, fj, scale, out_j);
            }
        }
    }

    /// [`KernelSource::fill`] in `f64`: `out[t − start] = factor · scale[t] ·
    /// K(x_i, x_t)`, each value computed in `f64` from the rows (RBF from
    /// the differences), in parallel when the work is large.
    pub fn fill64(
        &self,
        i: usize,
        (start, end): (usize, usize),
        factor: f64,
        scale: &[f64],
        out: &mut [f64],
    ) {
        debug_assert_eq!(out.len(), end - start);
        match self {
            KernelSource::Dense {
                kind, rows, cols64, ..
            } => {
                let (xi, sq_i) = (rows.row(i), rows.sq_norm(i));
                let cols = match kind {
                    KernelKind::Rbf { .. } => cols64.get_or_init(|| Columns64::try_new(rows)),
                    _ => &None,
                };
                in_chunks(out, start, rows.d(), |s, chunk| {
                    if let KernelKind::Rbf { gamma } = *kind {
                        // The squared distances (across rows feature by
                        // feature, or row by row: the same sums), then their
                        // exponentials in one vectorised pass (within an ulp
                        // of `f64::exp`, at a fraction of its scalar cost).
                        match cols {
                            Some(cols) => cols.sq_dists(xi, s, chunk),
                            None => {
                                for (k, slot) in chunk.iter_mut().enumerate() {
                                    *slot = sq_dist_in_order(xi, rows.row(s + k));
                                }
                            }
                        }
                        exp_scaled(chunk, -gamma);
                        for (k, slot) in chunk.iter_mut().enumerate() {
                            *slot *= factor * scale[s + k];
                        }
                        return;
                    }
                    for (k, slot) in chunk.iter_mut().enumerate() {
                        let t = s + k;
                        let v = kernel_value(*kind, xi, rows.row(t), sq_i, rows.sq_norm(t));
                        *slot = factor * scale[t] * v;
                    }
                });
            }
            KernelSource::Sparse { .. } => {
                self.sparse_column(i, start, out, |t, v| factor * scale[t] * v)
            }
            KernelSource::Precomputed { gram, perm } => match gram.row(perm[i]) {
                GramRow::F64(row) => {
                    gather(row, perm, start, out, |t, v| factor * scale[t] * v.to_f64())
                }
                GramRow::F32(row) => {
                    gather(row, perm, start, out, |t, v| factor * scale[t] * v.to_f64())
                }
            },
        }
    }

    fn fill_precomputed(
        &self,
        i: usize,
        start: usize,
        factor: f32,
        scale: &[f32],
        out: &mut [f32],
    ) {
        if let KernelSource::Precomputed { gram, perm } = self {
            match gram.row(perm[i]) {
                GramRow::F64(row) => gather(row, perm, start, out, |t, v| {
                    factor * scale[t] * f32::from_f64(v.to_f64())
                }),
                GramRow::F32(row) => gather(row, perm, start, out, |t, v| {
                    factor * scale[t] * f32::from_f64(v.to_f64())
                }),
            }
        }
    }

    /// Swaps examples `i` and `j`.
    pub fn swap(&mut self, i: usize, j: usize) {
        self.swap_many(&[(i, j)]);
    }

    /// Applies a sequence of swaps, in order.
    pub fn swap_many(&mut self, swaps: &[(usize, usize)]) {
        match self {
            KernelSource::Dense {
                rows,
                panel,
                cols64,
                ..
            } => {
                for &(i, j) in swaps {
                    rows.swap(i, j);
                }
                if let Some(panel) = panel.get_mut() {
                    panel.swap_many(swaps);
                }
                if let Some(Some(cols)) = cols64.get_mut() {
                    cols.swap_many(swaps);
                }
            }
            KernelSource::Precomputed { perm, .. } | KernelSource::Sparse { perm, .. } => {
                for &(i, j) in swaps {
                    perm.swap(i, j);
                }
            }
        }
    }

    /// A new source restricted to the listed examples (in the current
    /// order): feature rows are copied, a kernel matrix is shared.
    pub fn subset(&self, idx: &[usize]) -> Result<KernelSource> {
        Ok(match self {
            KernelSource::Dense { kind, rows, .. } => KernelSource::Dense {
                kind: *kind,
                rows: rows.gather(idx)?,
                panel: OnceLock::new(),
                cols64: OnceLock::new(),
            },
            KernelSource::Sparse {
                kind, rows, perm, ..
            } => {
                let at: Vec<usize> = idx.iter().map(|&a| perm[a]).collect();
                KernelSource::sparse(*kind, rows, Some(&at))?
            }
            KernelSource::Precomputed { gram, perm } => KernelSource::Precomputed {
                gram: gram.clone(),
                perm: idx.iter().map(|&a| perm[a]).collect(),
            },
        })
    }
}
