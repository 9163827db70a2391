//! The Hessian of the dual, `Q_ij = s_i s_j K(x_i, x_j)`, served column by
//! column through the LRU cache.
//!
//! `s` is the label vector `y ∈ {−1, +1}` for the C-SVC dual and all ones for
//! problems stated directly on the kernel. The solvers see only the
//! [`QMatrix`] trait, so other Hessians (a reduced one for MCSVM, say) can be
//! plugged in later. Columns hold `f32` or `f64` values (`T`, the solve's
//! precision, see [`crate::precision`]); the diagonal is always `f64`.

use crate::cache::ColumnCache;
use crate::kernel::KernelSource;
use crate::precision::QValue;

/// Column access to a symmetric `n × n` matrix of `T` values (`f32` unless
/// said otherwise), with index swapping.
pub trait QMatrix<T: QValue = f32> {
    /// Number of variables.
    fn n(&self) -> usize;
    /// The diagonal `Q_ii`.
    fn diag(&self) -> &[f64];
    /// Column `i`, at least its first `len` entries.
    fn column(&mut self, i: usize, len: usize) -> &[T];
    /// Columns `i` and `j` at once, at least their first `len` entries each.
    fn pair(&mut self, i: usize, j: usize, len: usize) -> (&[T], &[T]);
    /// Exchanges variables `i` and `j` (rows and columns).
    fn swap_index(&mut self, i: usize, j: usize);
    /// Applies a sequence of [`QMatrix::swap_index`] calls, in order.
    fn swap_indices(&mut self, swaps: &[(usize, usize)]) {
        for &(i, j) in swaps {
            self.swap_index(i, j);
        }
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
        }
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
            let out = &mut self.cache.column_mut(i)[start..len];
            let job = ColumnJob {
                i,
                start,
                end: len,
                factor,
                scale: &self.sign,
            };
            T::fill(&self.source, job, out);
        }
    }
}

impl<T: SourceValue> QMatrix<T> for KernelQ<T> {
    fn n(&self) -> usize {
        self.sign.len()
    }

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
            let outs = [&mut col_i[common..len], &mut col_j[common..len]];
            T::fill_pair(src, job(i, common, len, fi), (j, fj), outs);
        } else {
            self.fill_rest(i, si, len);
            self.fill_rest(j, sj, len);
        }
        (self.cache.column(i), self.cache.column(j))
    }

    fn swap_index(&mut self, i: usize, j: usize) {
        self.swap_indices(&[(i, j)]);
    }

    fn swap_indices(&mut self, swaps: &[(usize, usize)]) {
        self.source.swap_many(swaps);
        for &(i, j) in swaps {
            self.sign.swap(i, j);
            self.diag.swap(i, j);
        }
        self.cache.swap_indices(swaps);
    }
}
