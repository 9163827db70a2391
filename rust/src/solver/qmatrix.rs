//! The Hessian of the dual, `Q_ij = s_i s_j K(x_i, x_j)`, served column by
//! column through the LRU cache.
//!
//! `s` is the label vector `y ∈ {−1, +1}` for the C-SVC dual and all ones for
//! problems stated directly on the kernel. The solvers see only the
//! [`QMatrix`] trait, so other Hessians (a reduced one for MCSVM, say) can be
//! plugged in later. Columns hold `f32` or `f64` values (`T`, the solve's
//! precision, see [`crate::precision`]); the diagonal is always `f64`.

use std::sync::Arc;

use crate::error::{try_filled, try_with_capacity, Result};
use crate::kernel::{KernelSource, Rows};
use crate::precision::{Precision, QValue};
use crate::predict;
use crate::runtime::control::Control;
use crate::runtime::team::Team;
use crate::solver::cache::ColumnCache;

/// Rows × features of a column range below which a fill is not split
/// between the threads of a [`Team`]: the hand-over costs more than half
/// of so little work. (Lower in this crate's unit tests, as the next.)
pub const TEAM_FILL_WORK: usize = if cfg!(test) { 1 << 9 } else { 1 << 15 };
/// Rows × features per piece of a split fill, at least (so a piece
/// outweighs its claim), and pieces of at most [`TEAM_FILL_PIECES`].
const TEAM_PIECE_WORK: usize = if cfg!(test) { 1 << 8 } else { 1 << 15 };
/// Pieces a split fill is cut into, at most: enough that a helper which
/// starts late still takes a share, few enough that claiming stays cheap.
const TEAM_FILL_PIECES: usize = 8;
/// Rows per tile of the kernel loops: pieces start on tile boundaries.
const TILE_ROWS: usize = 64;

/// Column access to a symmetric `n × n` matrix of `T` values (`f32` unless
/// said otherwise), with index swapping.
pub trait QMatrix<T: QValue = f32> {
    /// The diagonal `Q_ii`, one entry per variable.
    fn diag(&self) -> &[f64];
    /// Number of variables (the diagonal's length).
    fn n(&self) -> usize {
        self.diag().len()
    }
    /// Column `i`, at least its first `len` entries.
    fn column(&mut self, i: usize, len: usize) -> &[T];
    /// Columns `i` and `j` at once, at least their first `len` entries each.
    fn pair(&mut self, i: usize, j: usize, len: usize) -> (&[T], &[T]);
    /// Exchanges variables `i` and `j` (rows and columns).
    fn swap_index(&mut self, i: usize, j: usize);
    /// The two-thread team the matrix fills columns with, which the solver
    /// may share for its own loops; `None` (the default) for one thread.
    fn team(&self) -> Option<Arc<Team>> {
        None
    }
    /// Applies a sequence of [`QMatrix::swap_index`] calls, in order.
    fn swap_indices(&mut self, swaps: &[(usize, usize)]) {
        for &(i, j) in swaps {
            self.swap_index(i, j);
        }
    }
    /// `out[t − from] += Σ_k w[k] · Q[t][cols[k]]` for the variables `t` in
    /// `from..from + out.len()` (`sum` gives `cols`, `w` and `from`), with
    /// the kernel values computed in blocks (every listed column against
    /// every row in cache-sized tiles, as prediction computes them) instead
    /// of one cached column at a time. `Ok(false)`, with `out` untouched,
    /// where the matrix has no blocked form for those rows (the default):
    /// the caller then goes column by column. Polls `ctl`
    /// ([`crate::Error::Interrupted`]).
    fn add_columns(&mut self, _: ColumnSum<'_>, _: &mut [f64], _: &Control) -> Result<bool> {
        Ok(false)
    }
}

/// The weighted sum of columns that [`QMatrix::add_columns`] adds: columns
/// `cols` with weights `w`, read at the variables from `from` on.
#[derive(Clone, Copy, Debug)]
pub struct ColumnSum<'a> {
    pub cols: &'a [usize],
    pub w: &'a [f64],
    pub from: usize,
}

/// Inside an `impl<T: QValue, …> QMatrix<T> for Wrapper`: the named
/// [`QMatrix`] methods passed on to the wrapped matrix in field `$q`, for
/// wrappers that watch some calls and pass the others on.
macro_rules! forward_qmatrix {
    ($q:ident: $($method:ident),* $(,)?) => {
        $($crate::solver::qmatrix::forward_qmatrix!(@one $q $method);)*
    };
    (@one $q:ident n) => {
        fn n(&self) -> usize {
            self.$q.n()
        }
    };
    (@one $q:ident diag) => {
        fn diag(&self) -> &[f64] {
            self.$q.diag()
        }
    };
    (@one $q:ident column) => {
        fn column(&mut self, i: usize, len: usize) -> &[T] {
            self.$q.column(i, len)
        }
    };
    (@one $q:ident pair) => {
        fn pair(&mut self, i: usize, j: usize, len: usize) -> (&[T], &[T]) {
            self.$q.pair(i, j, len)
        }
    };
    (@one $q:ident swap_index) => {
        fn swap_index(&mut self, i: usize, j: usize) {
            self.$q.swap_index(i, j)
        }
    };
    (@one $q:ident swap_indices) => {
        fn swap_indices(&mut self, swaps: &[(usize, usize)]) {
            self.$q.swap_indices(swaps)
        }
    };
    (@one $q:ident team) => {
        fn team(&self) -> Option<std::sync::Arc<$crate::runtime::team::Team>> {
            self.$q.team()
        }
    };
    (@one $q:ident add_columns) => {
        fn add_columns(
            &mut self,
            sum: $crate::solver::qmatrix::ColumnSum<'_>,
            out: &mut [f64],
            ctl: &$crate::runtime::control::Control,
        ) -> $crate::error::Result<bool> {
            self.$q.add_columns(sum, out, ctl)
        }
    };
}

pub(crate) use forward_qmatrix;

/// A [`QMatrix`] that passes every call on to `q` and reports each swap
/// made on it, in order, to `log(i, j)`: to undo them afterwards, or to
/// follow where the variables went.
pub(crate) struct Tracked<'q, Q, L> {
    pub q: &'q mut Q,
    pub log: L,
}

impl<T: QValue, Q: QMatrix<T>, L: FnMut(usize, usize)> QMatrix<T> for Tracked<'_, Q, L> {
    forward_qmatrix!(q: n, diag, column, pair, team, add_columns);

    fn swap_index(&mut self, i: usize, j: usize) {
        self.q.swap_index(i, j);
        (self.log)(i, j);
    }

    fn swap_indices(&mut self, swaps: &[(usize, usize)]) {
        self.q.swap_indices(swaps);
        for &(i, j) in swaps {
            (self.log)(i, j);
        }
    }
}

/// A dense symmetric `n × n` Hessian held whole, column after column (the
/// first `n²` values of `cols`), for small working-set problems solved by
/// SMO: the online learner's neighbourhoods and the batched rounds'
/// subproblems ([`crate::solver::batched`]).
pub struct DenseQ<T> {
    pub n: usize,
    pub cols: Vec<T>,
    /// The diagonal, `n` entries.
    pub diag: Vec<f64>,
}

impl<T: QValue> QMatrix<T> for DenseQ<T> {
    fn diag(&self) -> &[f64] {
        &self.diag
    }

    fn column(&mut self, i: usize, _len: usize) -> &[T] {
        &self.cols[i * self.n..(i + 1) * self.n]
    }

    fn pair(&mut self, i: usize, j: usize, _len: usize) -> (&[T], &[T]) {
        let n = self.n;
        (
            &self.cols[i * n..(i + 1) * n],
            &self.cols[j * n..(j + 1) * n],
        )
    }

    fn swap_index(&mut self, i: usize, j: usize) {
        if i == j {
            return;
        }
        let n = self.n;
        for c in 0..n {
            self.cols.swap(c * n + i, c * n + j);
        }
        for r in 0..n {
            self.cols.swap(i * n + r, j * n + r);
        }
        self.diag.swap(i, j);
    }
}

/// One column range to fill: `out[t − start] = factor · scale[t] · K(x_i,
/// x_t)` for `t ∈ [start, end)`.
#[derive(Clone, Copy, Debug)]
pub struct ColumnJob<'a, T> {
    pub i: usize,
    pub start: usize,
    pub end: usize,
    pub factor: T,
    pub scale: &'a [T],
}

/// A column value type a [`KernelSource`] can fill: `f32` through the
/// vectorised panel loops, `f64` through [`KernelSource::fill64`].
pub trait SourceValue: QValue {
    /// Fills `out` as `job` says.
    fn fill(src: &KernelSource, job: ColumnJob<'_, Self>, out: &mut [Self]);

    /// [`SourceValue::fill`] for column `job.i` and column `j.0` (factor
    /// `j.1`) over the same range: one pass over the data when it can, by
    /// default two.
    fn fill_pair(s: &KernelSource, job: ColumnJob<'_, Self>, j: (usize, Self), out: Pair<Self>) {
        let partner = ColumnJob {
            i: j.0,
            factor: j.1,
            ..job
        };
        let [out_i, out_j] = out;
        Self::fill(s, job, out_i);
        Self::fill(s, partner, out_j);
    }
}

/// The two output columns of [`SourceValue::fill_pair`].
pub type Pair<'a, T> = [&'a mut [T]; 2];

impl SourceValue for f32 {
    fn fill(src: &KernelSource, job: ColumnJob<'_, f32>, out: &mut [f32]) {
        src.fill(job.i, job.start, job.end, job.factor, job.scale, out);
    }

    fn fill_pair(s: &KernelSource, job: ColumnJob<'_, f32>, j: (usize, f32), out: Pair<f32>) {
        let [out_i, out_j] = out;
        let (range, factors) = ((job.start, job.end), (job.factor, j.1));
        s.fill_pair(
            (job.i, j.0),
            range.0,
            range.1,
            factors,
            job.scale,
            out_i,
            out_j,
        );
    }
}

impl SourceValue for f64 {
    fn fill(src: &KernelSource, job: ColumnJob<'_, f64>, out: &mut [f64]) {
        src.fill64(job.i, (job.start, job.end), job.factor, job.scale, out);
    }
}

/// A kernel Hessian with label signs and a column cache of `T` values.
#[derive(Debug)]
pub struct KernelQ<T: QValue = f32> {
    source: KernelSource,
    sign: Vec<T>,
    diag: Vec<f64>,
    cache: ColumnCache<T>,
    computed: u64,
    team: Option<Arc<Team>>,
}

/// Rows from which one kernel column at a time is bound by memory (each
/// streams the whole feature panel, which no longer stays in the
/// processor's cache): from there the solvers compute kernel values in
/// blocks, the batched rounds ([`crate::solver::batched::MIN_ROWS`]) and the
/// rebuild of the shrunk rows' gradient. (Lower in this crate's unit tests,
/// so small problems take the blocked paths.)
pub const MEMORY_BOUND_ROWS: usize = if cfg!(test) { 300 } else { 100_000 };

/// Rows copied at a time when [`KernelQ::add_columns`] evaluates its
/// expansion at part of the rows.
const ROWS_PER_PIECE: usize = 16_384;

/// Rows per piece when a fill of `rows` rows of `d` features is split
/// between two threads; `None` when it is too small to split.
fn piece_rows(rows: usize, d: usize) -> Option<usize> {
    let work = rows.saturating_mul(d.max(1));
    if work < TEAM_FILL_WORK {
        return None;
    }
    let pieces = (work / TEAM_PIECE_WORK).clamp(2, TEAM_FILL_PIECES);
    Some(rows.div_ceil(pieces).next_multiple_of(TILE_ROWS))
}

impl<T: SourceValue> KernelQ<T> {
    /// `Q_ij = sign_i sign_j K_ij`, caching at most `cache_bytes` of columns.
    pub fn new(source: KernelSource, sign: &[f64], cache_bytes: usize) -> Self {
        let n = source.n();
        assert_eq!(sign.len(), n, "sign vector length must match the kernel");
        let diag = (0..n).map(|i| source.eval(i, i)).collect();
        KernelQ {
            source,
            sign: sign.iter().map(|&v| T::from_f64(v)).collect(),
            diag,
            cache: ColumnCache::new(n, cache_bytes),
            computed: 0,
            team: None,
        }
    }

    /// Fills the columns with `team` from now on (and offers it to the
    /// solver, [`QMatrix::team`]): each large fill is cut into row ranges
    /// the two threads share. The values are the same either way, each
    /// entry being computed alone. Sources over sparse rows keep filling on
    /// one thread (their fills share one scratch buffer).
    pub fn with_team(mut self, team: Option<Arc<Team>>) -> Self {
        self.team = team.filter(|_| self.source.fills_by_rows());
        self
    }

    /// The team and the rows per piece for a fill of `rows` rows, if the
    /// team splits it.
    fn split(&self, rows: usize) -> Option<(Arc<Team>, usize)> {
        let team = self.team.as_ref().filter(|t| t.engaged())?;
        piece_rows(rows, self.source.features()).map(|r| (Arc::clone(team), r))
    }

    /// The cache, for statistics.
    pub fn cache(&self) -> &ColumnCache<T> {
        &self.cache
    }

    /// Kernel values computed so far (cache misses, counted per entry).
    pub fn kernel_evaluations(&self) -> u64 {
        self.computed
    }

    fn ensure(&mut self, i: usize, len: usize, keep: Option<usize>) {
        let start = self.cache.prepare(i, len, keep);
        self.fill_rest(i, start, len);
    }

    /// Computes entries `[start, len)` of column `i`, already prepared.
    fn fill_rest(&mut self, i: usize, start: usize, len: usize) {
        if start < len {
            self.computed += (len - start) as u64;
            let factor = self.sign[i];
            let split = self.split(len - start);
            let out = &mut self.cache.column_mut(i)[start..len];
            let job = |from: usize, to: usize| ColumnJob {
                i,
                start: from,
                end: to,
                factor,
                scale: &self.sign,
            };
            let src = &self.source;
            match split {
                Some((team, rows)) => {
                    team.map_chunks(out, rows, |off, piece| {
                        let from = start + off;
                        T::fill(src, job(from, from + piece.len()), piece);
                    });
                }
                None => T::fill(src, job(start, len), out),
            }
        }
    }
}

impl<T: SourceValue> QMatrix<T> for KernelQ<T> {
    fn diag(&self) -> &[f64] {
        &self.diag
    }

    fn column(&mut self, i: usize, len: usize) -> &[T] {
        self.ensure(i, len, None);
        self.cache.column(i)
    }

    fn pair(&mut self, i: usize, j: usize, len: usize) -> (&[T], &[T]) {
        if i == j {
            self.ensure(i, len, None);
            return (self.cache.column(i), self.cache.column(j));
        }
        let si = self.cache.prepare(i, len, None);
        let sj = self.cache.prepare(j, len, Some(i));
        if si < len && sj < len {
            // Both missing: fill the common range in one pass over the data.
            let common = si.max(sj);
            self.computed += (2 * len - si - sj) as u64;
            let (fi, fj) = (self.sign[i], self.sign[j]);
            let split = self.split(len - common);
            let (col_i, col_j) = self.cache.two_columns_mut(i, j);
            let src = &self.source;
            let job = |i, start, end, factor| ColumnJob {
                i,
                start,
                end,
                factor,
                scale: &self.sign,
            };
            if si < common {
                T::fill(src, job(i, si, common, fi), &mut col_i[si..common]);
            }
            if sj < common {
                T::fill(src, job(j, sj, common, fj), &mut col_j[sj..common]);
            }
            let (out_i, out_j) = (&mut col_i[common..len], &mut col_j[common..len]);
            match split {
                Some((team, rows)) => team.for_chunks2(out_i, out_j, rows, |off, a, b| {
                    let from = common + off;
                    let to = from + a.len();
                    T::fill_pair(src, job(i, from, to, fi), (j, fj), [a, b]);
                }),
                None => T::fill_pair(src, job(i, common, len, fi), (j, fj), [out_i, out_j]),
            }
        } else {
            self.fill_rest(i, si, len);
            self.fill_rest(j, sj, len);
        }
        (self.cache.column(i), self.cache.column(j))
    }

    fn swap_index(&mut self, i: usize, j: usize) {
        self.swap_indices(&[(i, j)]);
    }

    fn team(&self) -> Option<Arc<Team>> {
        self.team.clone()
    }

    fn swap_indices(&mut self, swaps: &[(usize, usize)]) {
        self.source.swap_many(swaps);
        for &(i, j) in swaps {
            self.sign.swap(i, j);
            self.diag.swap(i, j);
        }
        self.cache.swap_indices(swaps);
    }

    /// Dense rows only: the listed columns are the support vectors of one
    /// kernel expansion (coefficients `w_k s_k`), evaluated at the rows
    /// `from..` by [`predict`]'s blocked loops in this matrix's precision,
    /// then signed. The cache is neither read nor filled.
    fn add_columns(&mut self, sum: ColumnSum<'_>, out: &mut [f64], ctl: &Control) -> Result<bool> {
        let ColumnSum { cols, w, from } = sum;
        let KernelSource::Dense { kind, rows, .. } = &self.source else {
            return Ok(false);
        };
        if cols.is_empty() || out.is_empty() {
            return Ok(true);
        }
        let hint = "use fewer examples or shrinking=False";
        let sv = rows.gather(cols)?;
        let mut coef = try_with_capacity(cols.len(), "the columns' weights", hint)?;
        coef.extend(
            cols.iter()
                .zip(w)
                .map(|(&c, &wk)| wk * self.sign[c].to_f64()),
        );
        let path = if T::IS_F64 {
            Precision::Float64
        } else {
            Precision::Float32
        };
        let add = |at: &Rows, out: &mut [f64], sign: &[T]| -> Result<()> {
            let (values, _) =
                predict::decision_values_controlled(*kind, at, &sv, &coef, &[0.0], path, ctl)?;
            for ((o, v), s) in out.iter_mut().zip(&values).zip(sign) {
                *o += s.to_f64() * v;
            }
            Ok(())
        };
        if from == 0 && out.len() == rows.n() {
            add(rows, out, &self.sign)?;
        } else {
            // Part of the rows: copied a piece at a time, so the copy stays
            // small beside the data.
            for (k, piece) in out.chunks_mut(ROWS_PER_PIECE).enumerate() {
                let start = from + k * ROWS_PER_PIECE;
                let at = rows.gather(&(start..start + piece.len()).collect::<Vec<usize>>())?;
                add(&at, piece, &self.sign[start..])?;
            }
        }
        self.computed += (out.len() as u64).saturating_mul(cols.len() as u64);
        Ok(true)
    }
}

/// A Hessian over variables that share kernel rows: variable `t` stands
/// for a row of an inner kernel matrix, with sign `s_t`, so `Q_ut = s_u s_t
/// K(x_u, x_t)`. ε-SVR's and ν-SVR's `2n` variables `(α, α*)` take each
/// example twice; the inner matrix computes and caches each kernel column
/// once, over the distinct rows, and a column of `Q` is gathered from it
/// with the signs (LIBSVM's `SVR_Q` shares its kernel rows likewise, Chang &
/// Lin, ACM TIST 2011, §2.3 and §5).
///
/// Shrinking asks for the first `len` entries of a column only: the inner
/// matrix is kept ordered so that the rows of the variables before `len`
/// come first, and only those kernel values are computed (a request for
/// every variable takes every row, without reordering). Two buffers hold
/// the gathered columns ([`QMatrix::pair`] needs both at once); each
/// remembers the variable and length it holds, so the selection's column
/// and the update's pair are gathered once per iteration.
#[derive(Debug)]
pub struct SharedRowsQ<T: QValue = f32> {
    inner: KernelQ<T>,
    /// Each variable's row: its index in the inner matrix's current order.
    row: Vec<usize>,
    sign: Vec<f64>,
    diag: Vec<f64>,
    bufs: [Vec<T>; 2],
    /// `(variable, length)` each buffer holds, if any.
    held: [Option<(usize, usize)>; 2],
    /// The inner order puts the rows of the variables before `arranged.0`
    /// first, in `[0, arranged.1)`; `None` after the variables moved.
    arranged: Option<(usize, usize)>,
    /// Scratch over the inner rows (the rows a prefix of variables needs).
    mark: Vec<bool>,
}

impl<T: SourceValue> SharedRowsQ<T> {
    /// Variables `t` over the rows `row[t]` of `inner` (whose own signs
    /// should be all `+1`), with signs `sign[t]`.
    pub fn new(inner: KernelQ<T>, row: Vec<usize>, sign: &[f64]) -> Self {
        assert_eq!(row.len(), sign.len(), "one row and one sign per variable");
        let m = inner.n();
        assert!(
            row.iter().all(|&r| r < m),
            "rows must index the inner matrix"
        );
        let diag = row.iter().map(|&r| inner.diag()[r]).collect();
        let n = row.len();
        SharedRowsQ {
            inner,
            sign: sign.to_vec(),
            row,
            diag,
            bufs: [vec![T::default(); n], vec![T::default(); n]],
            held: [None, None],
            arranged: None,
            mark: vec![false; m],
        }
    }

    /// Kernel values computed so far (each distinct row's column once).
    pub fn kernel_evaluations(&self) -> u64 {
        self.inner.kernel_evaluations()
    }

    /// The buffer holding at least `len` entries of variable `i`'s column.
    fn holding(&self, i: usize, len: usize) -> Option<usize> {
        (0..2).find(|&b| matches!(self.held[b], Some((v, l)) if v == i && l >= len))
    }

    /// The number of leading inner rows that hold the rows of the
    /// variables before `len`, reordering the inner matrix if needed.
    fn live_rows(&mut self, len: usize) -> usize {
        let m = self.inner.n();
        if len >= self.row.len() {
            return m;
        }
        if let Some((l, live)) = self.arranged {
            if l == len {
                return live;
            }
        }
        let mark = &mut self.mark;
        mark.iter_mut().for_each(|v| *v = false);
        for &r in &self.row[..len] {
            mark[r] = true;
        }
        // Partition: needed rows to the front, by disjoint swaps.
        let mut swaps = Vec::new();
        let (mut lo, mut hi) = (0, m);
        loop {
            while lo < hi && mark[lo] {
                lo += 1;
            }
            while lo < hi && !mark[hi - 1] {
                hi -= 1;
            }
            if lo >= hi {
                break;
            }
            swaps.push((lo, hi - 1));
            mark.swap(lo, hi - 1);
            lo += 1;
            hi -= 1;
        }
        if !swaps.is_empty() {
            // Each inner row moves at most once: renumber the variables'.
            let mut moved = std::collections::HashMap::with_capacity(2 * swaps.len());
            for &(a, b) in &swaps {
                moved.insert(a, b);
                moved.insert(b, a);
            }
            for r in &mut self.row {
                if let Some(&to) = moved.get(r) {
                    *r = to;
                }
            }
            self.inner.swap_indices(&swaps);
        }
        self.arranged = Some((len, lo));
        lo
    }
}

/// `out[t] = s_i s_t k[row[t]]` for `t < out.len()` (signs `±1`, so the
/// products are exact).
fn gather_signed<T: QValue>(out: &mut [T], k: &[T], row: &[usize], sign: &[f64], i: usize) {
    let si = sign[i];
    for ((o, &r), &s) in out.iter_mut().zip(row).zip(sign) {
        *o = T::from_f64(si * s * k[r].to_f64());
    }
}

impl<T: SourceValue> QMatrix<T> for SharedRowsQ<T> {
    fn diag(&self) -> &[f64] {
        &self.diag
    }

    fn column(&mut self, i: usize, len: usize) -> &[T] {
        if let Some(b) = self.holding(i, len) {
            return &self.bufs[b];
        }
        // Keep the other buffer's column: the pair that follows may need it.
        let b = match self.held {
            [Some(_), None] => 1,
            _ => 0,
        };
        let live = self.live_rows(len);
        let k = self.inner.column(self.row[i], live);
        gather_signed(&mut self.bufs[b][..len], k, &self.row, &self.sign, i);
        self.held[b] = Some((i, len));
        &self.bufs[b]
    }

    fn pair(&mut self, i: usize, j: usize, len: usize) -> (&[T], &[T]) {
        let (hi, hj) = (self.holding(i, len), self.holding(j, len));
        // Buffers for i and j: reuse what they hold, never the same one
        // for both (unless i = j).
        let (bi, bj) = match (hi, hj) {
            (Some(a), Some(b)) if a != b || i == j => (a, b),
            (Some(a), _) => (a, 1 - a),
            (None, Some(b)) => (1 - b, b),
            (None, None) => (0, 1),
        };
        let need_i = hi != Some(bi);
        let need_j = hj != Some(bj) && bi != bj;
        if need_i || need_j {
            let live = self.live_rows(len);
            let (inner, row, sign) = (&mut self.inner, &self.row, &self.sign);
            let [b0, b1] = &mut self.bufs;
            let (out_i, out_j) = if bi == 0 { (b0, b1) } else { (b1, b0) };
            if need_i && need_j {
                let (ki, kj) = inner.pair(row[i], row[j], live);
                gather_signed(&mut out_i[..len], ki, row, sign, i);
                gather_signed(&mut out_j[..len], kj, row, sign, j);
            } else if need_i {
                let ki = inner.column(row[i], live);
                gather_signed(&mut out_i[..len], ki, row, sign, i);
            } else {
                let kj = inner.column(row[j], live);
                gather_signed(&mut out_j[..len], kj, row, sign, j);
            }
            if need_i {
                self.held[bi] = Some((i, len));
            }
            if need_j {
                self.held[bj] = Some((j, len));
            }
        }
        (&self.bufs[bi], &self.bufs[bj])
    }

    /// The inner matrix's blocked sum over the columns' rows (weights
    /// signed), over every inner row (a range of variables has its rows
    /// scattered over the inner matrix), read back at the variables' rows.
    fn add_columns(&mut self, sum: ColumnSum<'_>, out: &mut [f64], ctl: &Control) -> Result<bool> {
        let ColumnSum { cols, w, from } = sum;
        let rows: Vec<usize> = cols.iter().map(|&c| self.row[c]).collect();
        let weights: Vec<f64> = cols
            .iter()
            .zip(w)
            .map(|(&c, &wk)| wk * self.sign[c])
            .collect();
        let hint = "use fewer examples or shrinking=False";
        let mut by_row = try_filled(self.inner.n(), 0.0, "the columns' sums per row", hint)?;
        let inner_sum = ColumnSum {
            cols: &rows,
            w: &weights,
            from: 0,
        };
        if !self.inner.add_columns(inner_sum, &mut by_row, ctl)? {
            return Ok(false);
        }
        let (row, sign) = (&self.row[from..], &self.sign[from..]);
        for ((o, &r), s) in out.iter_mut().zip(row).zip(sign) {
            *o += s * by_row[r];
        }
        Ok(true)
    }

    fn swap_index(&mut self, i: usize, j: usize) {
        self.swap_indices(&[(i, j)]);
    }

    fn team(&self) -> Option<Arc<Team>> {
        self.inner.team()
    }

    fn swap_indices(&mut self, swaps: &[(usize, usize)]) {
        for &(i, j) in swaps {
            self.row.swap(i, j);
            self.sign.swap(i, j);
            self.diag.swap(i, j);
        }
        // The gathered columns and the inner order follow the old positions.
        self.held = [None, None];
        self.arranged = None;
    }
}
