//! The Hessian of the dual, `Q_ij = s_i s_j K(x_i, x_j)`, served column by
//! column through the LRU cache.
//!
//! `s` is the label vector `y ∈ {−1, +1}` for the C-SVC dual and all ones for
//! problems stated directly on the kernel. The solvers see only the
//! [`QMatrix`] trait, so other Hessians (a reduced one for MCSVM, say) can be
//! plugged in later.

use crate::cache::ColumnCache;
use crate::kernel::KernelSource;

/// Column access to a symmetric `n × n` matrix, with index swapping.
pub trait QMatrix {
    /// Number of variables.
    fn n(&self) -> usize;
    /// The diagonal `Q_ii`.
    fn diag(&self) -> &[f64];
    /// Column `i`, at least its first `len` entries.
    fn column(&mut self, i: usize, len: usize) -> &[f32];
    /// Columns `i` and `j` at once, at least their first `len` entries each.
    fn pair(&mut self, i: usize, j: usize, len: usize) -> (&[f32], &[f32]);
    /// Exchanges variables `i` and `j` (rows and columns).
    fn swap_index(&mut self, i: usize, j: usize);
}

/// A kernel Hessian with label signs and a column cache.
#[derive(Debug)]
pub struct KernelQ {
    source: KernelSource,
    sign: Vec<f64>,
    diag: Vec<f64>,
    cache: ColumnCache,
}

impl KernelQ {
    /// `Q_ij = sign_i sign_j K_ij`, caching at most `cache_bytes` of columns.
    pub fn new(source: KernelSource, sign: Vec<f64>, cache_bytes: usize) -> Self {
        let n = source.n();
        assert_eq!(sign.len(), n, "sign vector length must match the kernel");
        let diag = (0..n).map(|i| source.eval(i, i)).collect();
        KernelQ {
            source,
            sign,
            diag,
            cache: ColumnCache::new(n, cache_bytes),
        }
    }

    /// The cache, for statistics.
    pub fn cache(&self) -> &ColumnCache {
        &self.cache
    }

    fn ensure(&mut self, i: usize, len: usize, keep: Option<usize>) {
        let start = self.cache.prepare(i, len, keep);
        if start < len {
            let factor = self.sign[i];
            let out = &mut self.cache.column_mut(i)[start..len];
            self.source.fill(i, start, len, factor, &self.sign, out);
        }
    }
}

impl QMatrix for KernelQ {
    fn n(&self) -> usize {
        self.sign.len()
    }

    fn diag(&self) -> &[f64] {
        &self.diag
    }

    fn column(&mut self, i: usize, len: usize) -> &[f32] {
        self.ensure(i, len, None);
        self.cache.column(i)
    }

    fn pair(&mut self, i: usize, j: usize, len: usize) -> (&[f32], &[f32]) {
        self.ensure(i, len, None);
        self.ensure(j, len, Some(i));
        (self.cache.column(i), self.cache.column(j))
    }

    fn swap_index(&mut self, i: usize, j: usize) {
        self.source.swap(i, j);
        self.sign.swap(i, j);
        self.diag.swap(i, j);
        self.cache.swap_index(i, j);
    }
}
