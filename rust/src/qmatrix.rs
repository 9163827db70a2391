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

/// A column value type a [`KernelSource`] can fill: `f32` through the
/// vectorised panel loops, `f64` through [`KernelSource::fill64`].
pub trait SourceValue: QValue {
    /// `out[t − start] = factor · scale[t] · K(x_i, x_t)` for `t ∈ [start, end)`.
    fn fill(
        src: &KernelSource,
        i: usize,
        range: (usize, usize),
        factor: Self,
        scale: &[Self],
        out: &mut [Self],
    );

    /// [`SourceValue::fill`] for columns `i` and `j` (one pass when it can).
    #[allow(clippy::too_many_arguments)]
    fn fill_pair(
        src: &KernelSource,
        ij: (usize, usize),
        range: (usize, usize),
        factors: (Self, Self),
        scale: &[Self],
        out_i: &mut [Self],
        out_j: &mut [Self],
    );
}

impl SourceValue for f32 {
    fn fill(
        src: &KernelSource,
        i: usize,
        (start, end): (usize, usize),
        factor: f32,
        scale: &[f32],
        out: &mut [f32],
    ) {
        src.fill(i, start, end, factor, scale, out);
    }

    fn fill_pair(
        src: &KernelSource,
        ij: (usize, usize),
        (start, end): (usize, usize),
        factors: (f32, f32),
        scale: &[f32],
        out_i: &mut [f32],
        out_j: &mut [f32],
    ) {
        src.fill_pair(ij, start, end, factors, scale, out_i, out_j);
    }
}

impl SourceValue for f64 {
    fn fill(
        src: &KernelSource,
        i: usize,
        (start, end): (usize, usize),
        factor: f64,
        scale: &[f64],
        out: &mut [f64],
    ) {
        src.fill64(i, start, end, factor, scale, out);
    }

    fn fill_pair(
        src: &KernelSource,
        (i, j): (usize, usize),
        (start, end): (usize, usize),
        (fi, fj): (f64, f64),
        scale: &[f64],
        out_i: &mut [f64],
        out_j: &mut [f64],
    ) {
        src.fill64(i, start, end, fi, scale, out_i);
        src.fill64(j, start, end, fj, scale, out_j);
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
            T::fill(&self.source, i, (start, len), factor, &self.sign, out);
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
            if si < common {
                T::fill(src, i, (si, common), fi, &self.sign, &mut col_i[si..common]);
            }
            if sj < common {
                T::fill(src, j, (sj, common), fj, &self.sign, &mut col_j[sj..common]);
            }
            T::fill_pair(
                src,
                (i, j),
                (common, len),
                (fi, fj),
                &self.sign,
                &mut col_i[common..len],
                &mut col_j[common..len],
            );
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
