//! Kernel functions and their evaluation over contiguous row-major data.
//!
//! A kernel value is always computed from the dot product of two rows and, for
//! the RBF kernel, their squared norms (precomputed once per matrix), so a whole
//! kernel column is one pass over contiguous memory with no allocation.

use rayon::prelude::*;

use crate::error::{shape_error, value_error, Result};
use crate::simd;

/// Rows × features below which a kernel column is filled on one thread:
/// spawning rayon tasks costs more than the arithmetic under this size.
const PARALLEL_WORK: usize = 1 << 22;
/// Rows handed to one rayon task when a column is filled in parallel.
const PARALLEL_CHUNK: usize = 2048;

/// The kernels of LIBSVM / scikit-learn, with their parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum KernelKind {
    /// `⟨x, z⟩`
    Linear,
    /// `(γ⟨x, z⟩ + coef0)^degree`
    Poly { gamma: f64, coef0: f64, degree: u32 },
    /// `exp(−γ‖x − z‖²)`
    Rbf { gamma: f64 },
    /// `tanh(γ⟨x, z⟩ + coef0)`
    Sigmoid { gamma: f64, coef0: f64 },
    /// The caller supplies the kernel matrix itself.
    Precomputed,
}

impl KernelKind {
    /// Builds a kernel from the names and parameters used by scikit-learn.
    pub fn from_name(name: &str, gamma: f64, coef0: f64, degree: i64) -> Result<Self> {
        let kind = match name {
            "linear" => KernelKind::Linear,
            "poly" => {
                if degree < 0 {
                    value_error!("degree must be a non-negative integer, got {degree}");
                }
                let degree = u32::try_from(degree)
                    .map_err(|_| crate::error::Error::Value(format!("degree {degree} is too large")))?;
                KernelKind::Poly {
                    gamma,
                    coef0,
                    degree,
                }
            }
            "rbf" => KernelKind::Rbf { gamma },
            "sigmoid" => KernelKind::Sigmoid { gamma, coef0 },
            "precomputed" => KernelKind::Precomputed,
            other => value_error!(
                "unknown kernel {other:?}; expected one of 'linear', 'poly', 'rbf', 'sigmoid', 'precomputed'"
            ),
        };
        kind.validate()?;
        Ok(kind)
    }

    /// Checks the parameters: γ must be positive and finite, coef0 finite.
    pub fn validate(&self) -> Result<()> {
        let gamma = match *self {
            KernelKind::Poly { gamma, coef0, .. } | KernelKind::Sigmoid { gamma, coef0 } => {
                if !coef0.is_finite() {
                    value_error!("coef0 must be finite, got {coef0}");
                }
                Some(gamma)
            }
            KernelKind::Rbf { gamma } => Some(gamma),
            KernelKind::Linear | KernelKind::Precomputed => None,
        };
        if let Some(g) = gamma {
            if !(g.is_finite() && g > 0.0) {
                value_error!("gamma must be a positive finite number, got {g}");
            }
        }
        Ok(())
    }

    /// True when the kernel needs squared row norms (only RBF does).
    #[inline]
    pub fn needs_norms(&self) -> bool {
        matches!(self, KernelKind::Rbf { .. })
    }

    /// The kernel value from a dot product and the two squared norms.
    #[inline(always)]
    pub fn from_dot(&self, dot: f64, sq_a: f64, sq_b: f64) -> f64 {
        match *self {
            KernelKind::Linear | KernelKind::Precomputed => dot,
            KernelKind::Poly {
                gamma,
                coef0,
                degree,
            } => powi(gamma * dot + coef0, degree),
            KernelKind::Rbf { gamma } => (-gamma * (sq_a + sq_b - 2.0 * dot).max(0.0)).exp(),
            KernelKind::Sigmoid { gamma, coef0 } => (gamma * dot + coef0).tanh(),
        }
    }
}

/// `base^exp` by repeated squaring (`f64::powi` takes an `i32`).
#[inline]
fn powi(base: f64, exp: u32) -> f64 {
    let mut result = 1.0;
    let mut b = base;
    let mut e = exp;
    while e > 0 {
        if e & 1 == 1 {
            result *= b;
        }
        b *= b;
        e >>= 1;
    }
    result
}

/// Dot product with four independent accumulators so the compiler can
/// vectorise it.
#[inline]
pub fn dot(a: &[f64], b: &[f64]) -> f64 {
    debug_assert_eq!(a.len(), b.len());
    let mut acc = [0.0f64; 4];
    let chunks_a = a.chunks_exact(4);
    let chunks_b = b.chunks_exact(4);
    let tail: f64 = chunks_a
        .remainder()
        .iter()
        .zip(chunks_b.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (ca, cb) in chunks_a.zip(chunks_b) {
        acc[0] += ca[0] * cb[0];
        acc[1] += ca[1] * cb[1];
        acc[2] += ca[2] * cb[2];
        acc[3] += ca[3] * cb[3];
    }
    (acc[0] + acc[1]) + (acc[2] + acc[3]) + tail
}

/// A dense row-major matrix with the squared norm of every row.
#[derive(Clone, Debug)]
pub struct Rows {
    data: Vec<f64>,
    n: usize,
    d: usize,
    sq_norms: Vec<f64>,
}

impl Rows {
    /// Takes ownership of `data` (`n × d`, row-major) and computes row norms.
    pub fn new(data: Vec<f64>, n: usize, d: usize) -> Result<Self> {
        if data.len() != n * d {
            shape_error!("data has {} values, expected n × d = {n} × {d}", data.len());
        }
        if let Some(pos) = data.iter().position(|v| !v.is_finite()) {
            value_error!(
                "X contains NaN or infinity (row {}, column {})",
                pos / d.max(1),
                pos % d.max(1)
            );
        }
        let sq_norms = if d == 0 {
            vec![0.0; n]
        } else {
            data.chunks_exact(d).map(|r| dot(r, r)).collect()
        };
        Ok(Rows {
            data,
            n,
            d,
            sq_norms,
        })
    }

    /// Number of rows.
    #[inline]
    pub fn n(&self) -> usize {
        self.n
    }

    /// Number of features.
    #[inline]
    pub fn d(&self) -> usize {
        self.d
    }

    /// Row `i`.
    #[inline]
    pub fn row(&self, i: usize) -> &[f64] {
        &self.data[i * self.d..(i + 1) * self.d]
    }

    /// Squared norm of row `i`.
    #[inline]
    pub fn sq_norm(&self, i: usize) -> f64 {
        self.sq_norms[i]
    }

    /// Swaps rows `i` and `j` in place (used by shrinking).
    pub fn swap(&mut self, i: usize, j: usize) {
        if i == j {
            return;
        }
        let (lo, hi) = if i < j { (i, j) } else { (j, i) };
        let d = self.d;
        let (head, tail) = self.data.split_at_mut(hi * d);
        head[lo * d..(lo + 1) * d].swap_with_slice(&mut tail[..d]);
        self.sq_norms.swap(i, j);
    }

    /// A new matrix holding the listed rows, in that order.
    pub fn gather(&self, idx: &[usize]) -> Rows {
        let mut data = Vec::with_capacity(idx.len() * self.d);
        for &i in idx {
            data.extend_from_slice(self.row(i));
        }
        let sq_norms = idx.iter().map(|&i| self.sq_norms[i]).collect();
        Rows {
            data,
            n: idx.len(),
            d: self.d,
            sq_norms,
        }
    }
}

/// A feature-major `f32` copy of a set of rows (`data[f·n + t]` is feature
/// `f` of row `t`), the layout the vectorised kernel loops read: one pass over
/// a feature touches consecutive rows, so many rows are processed per
/// instruction with no horizontal sums.
#[derive(Clone, Debug)]
pub struct Panel {
    data: Vec<f32>,
    sq: Vec<f32>,
    n: usize,
    d: usize,
}

impl Panel {
    /// The panel of `rows`.
    pub fn new(rows: &Rows) -> Panel {
        let (n, d) = (rows.n(), rows.d());
        let mut data = vec![0.0f32; n * d];
        let mut sq = vec![0.0f32; n];
        // Transpose in blocks of rows, so the writes along each feature are
        // contiguous and the block's rows stay in the processor's cache.
        const BLOCK: usize = 64;
        for t0 in (0..n).step_by(BLOCK) {
            let t1 = (t0 + BLOCK).min(n);
            for f in 0..d {
                let dst = &mut data[f * n + t0..f * n + t1];
                for (k, slot) in dst.iter_mut().enumerate() {
                    *slot = rows.row(t0 + k)[f] as f32;
                }
            }
            for (t, norm) in (t0..t1).zip(&mut sq[t0..t1]) {
                let sum: f64 = rows
                    .row(t)
                    .iter()
                    .map(|&v| f64::from(v as f32).powi(2))
                    .sum();
                *norm = sum as f32;
            }
        }
        Panel { data, sq, n, d }
    }

    /// Row `i` as a [`Query`].
    pub fn query(&self, i: usize) -> Query {
        Query::with_norm(self.row(i), self.sq[i])
    }

    /// Number of rows.
    pub fn n(&self) -> usize {
        self.n
    }

    /// Number of features.
    pub fn d(&self) -> usize {
        self.d
    }

    /// Row `i` as a contiguous vector.
    pub fn row(&self, i: usize) -> Vec<f32> {
        (0..self.d).map(|f| self.data[f * self.n + i]).collect()
    }

    /// Applies a sequence of row swaps, in order, one feature at a time (so
    /// each feature's row stays in the processor's cache).
    pub fn swap_many(&mut self, swaps: &[(usize, usize)]) {
        if self.n == 0 {
            return;
        }
        for row in self.data.chunks_exact_mut(self.n) {
            for &(i, j) in swaps {
                row.swap(i, j);
            }
        }
        for &(i, j) in swaps {
            self.sq.swap(i, j);
        }
    }

    /// Feature `f` of rows `[start, end)`.
    #[inline(always)]
    fn feature(&self, f: usize, start: usize, end: usize) -> &[f32] {
        &self.data[f * self.n + start..f * self.n + end]
    }
}

/// Rows per tile of the vectorised kernel loops.
const TILE: usize = 64;

/// `value[k] = factor · scale[k] · κ(acc[k])`, where `acc` is a squared
/// distance (RBF) or a dot product (the others).
#[inline(always)]
fn apply<const FMA: bool>(
    kind: KernelKind,
    acc: &[f32],
    scale: &[f32],
    factor: f32,
    out: &mut [f32],
) {
    let it = out.iter_mut().zip(acc.iter().zip(scale));
    match kind {
        KernelKind::Rbf { gamma } => {
            let g = -(gamma as f32);
            for (o, (&a, &s)) in it {
                *o = factor * s * simd::exp::<FMA>(g * a);
            }
        }
        KernelKind::Linear | KernelKind::Precomputed => {
            for (o, (&a, &s)) in it {
                *o = factor * s * a;
            }
        }
        KernelKind::Poly {
            gamma,
            coef0,
            degree,
        } => {
            let (g, c) = (gamma as f32, coef0 as f32);
            for (o, (&a, &s)) in it {
                let base = simd::fmadd::<FMA>(g, a, c);
                let mut v = 1.0f32;
                for _ in 0..degree {
                    v *= base;
                }
                *o = factor * s * v;
            }
        }
        KernelKind::Sigmoid { gamma, coef0 } => {
            let (g, c) = (gamma as f32, coef0 as f32);
            for (o, (&a, &s)) in it {
                // tanh z = sign(z)·(1 − e^{−2|z|}) / (1 + e^{−2|z|})
                let z = simd::fmadd::<FMA>(g, a, c);
                let e = simd::exp::<FMA>(-2.0 * z.abs());
                *o = factor * s * ((1.0 - e) / (1.0 + e)).copysign(z);
            }
        }
    }
}

/// One row kernel columns are computed against: its values, its non-zero
/// features, and its squared norm.
#[derive(Clone, Debug)]
pub struct Query {
    row: Vec<f32>,
    nonzero: Vec<(usize, f32)>,
    sq: f32,
}

impl Query {
    /// A query from its values (norm computed here).
    pub fn new(row: Vec<f32>) -> Query {
        let sq = row
            .iter()
            .map(|&v| f64::from(v) * f64::from(v))
            .sum::<f64>() as f32;
        Query::with_norm(row, sq)
    }

    fn with_norm(row: Vec<f32>, sq: f32) -> Query {
        let nonzero = row
            .iter()
            .enumerate()
            .filter(|(_, &v)| v != 0.0)
            .map(|(f, &v)| (f, v))
            .collect();
        Query { row, nonzero, sq }
    }

    /// True when at most three quarters of the features are non-zero: then
    /// dot products that skip the zeros (reading fewer panel rows) beat the
    /// difference loop, which reads every feature of every row. For RBF the
    /// distance is then `‖q‖² + ‖x‖² − 2⟨q, x⟩` in `f32`, whose rounding
    /// grows with the norms: exact for binary data like a9a, about 1e-7 of
    /// `‖q‖² + ‖x‖²` otherwise, so data far from the origin should be
    /// centred or scaled (as SVMs want anyway).
    fn sparse(&self) -> bool {
        4 * self.nonzero.len() <= 3 * self.row.len()
    }
}

/// How a tile's accumulator is formed for `kind` and a query.
#[inline(always)]
fn uses_difference(kind: KernelKind, q: &Query) -> bool {
    matches!(kind, KernelKind::Rbf { .. }) && !q.sparse()
}

/// Kernel values between `R` dense queries and panel rows `[start, end)` for
/// the RBF kernel, from squared differences (exact for close points):
/// `outs[r][t − start] = factors[r] · scale[t] · K(q_r, x_t)`. The panel is
/// read once for all `R` queries.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn fill_difference<const FMA: bool, const R: usize>(
    kind: KernelKind,
    panel: &Panel,
    queries: [&Query; R],
    factors: [f32; R],
    scale: &[f32],
    start: usize,
    end: usize,
    outs: [&mut [f32]; R],
) {
    let mut t0 = start;
    while t0 < end {
        let len = TILE.min(end - t0);
        let mut acc = [[0.0f32; TILE]; R];
        if len == TILE {
            // Compile-time tile size: accumulators stay in registers.
            for f in 0..panel.d {
                let col: &[f32; TILE] = panel.feature(f, t0, t0 + TILE).try_into().unwrap();
                for (a, q) in acc.iter_mut().zip(&queries) {
                    let qf = q.row[f];
                    for k in 0..TILE {
                        let diff = col[k] - qf;
                        a[k] = simd::fmadd::<FMA>(diff, diff, a[k]);
                    }
                }
            }
        } else {
            for f in 0..panel.d {
                let col = panel.feature(f, t0, t0 + len);
                for (a, q) in acc.iter_mut().zip(&queries) {
                    let qf = q.row[f];
                    for (a, &v) in a[..len].iter_mut().zip(col) {
                        let diff = v - qf;
                        *a = simd::fmadd::<FMA>(diff, diff, *a);
                    }
                }
            }
        }
        for r in 0..R {
            let o = &mut outs[r][t0 - start..t0 - start + len];
            apply::<FMA>(kind, &acc[r][..len], &scale[t0..t0 + len], factors[r], o);
        }
        t0 += len;
    }
}

/// The same from dot products over the query's non-zero features only
/// (every kernel; for RBF the distance is `‖q‖² + ‖x‖² − 2⟨q, x⟩`).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn fill_dot<const FMA: bool>(
    kind: KernelKind,
    panel: &Panel,
    q: &Query,
    factor: f32,
    scale: &[f32],
    start: usize,
    end: usize,
    out: &mut [f32],
) {
    let rbf = matches!(kind, KernelKind::Rbf { .. });
    let mut t0 = start;
    while t0 < end {
        let len = TILE.min(end - t0);
        let mut tile = [0.0f32; TILE];
        if len == TILE {
            // A full tile has a size known at compile time, so its
            // accumulators stay in vector registers across the features.
            for &(f, qf) in &q.nonzero {
                let col: &[f32; TILE] = panel.feature(f, t0, t0 + TILE).try_into().unwrap();
                for k in 0..TILE {
                    tile[k] = simd::fmadd::<FMA>(col[k], qf, tile[k]);
                }
            }
        } else {
            for &(f, qf) in &q.nonzero {
                let col = panel.feature(f, t0, t0 + len);
                for (a, &v) in tile[..len].iter_mut().zip(col) {
                    *a = simd::fmadd::<FMA>(v, qf, *a);
                }
            }
        }
        let acc = &mut tile[..len];
        if rbf {
            for (a, &sq) in acc.iter_mut().zip(&panel.sq[t0..t0 + len]) {
                *a = (q.sq + sq - 2.0 * *a).max(0.0);
            }
        }
        let o = &mut out[t0 - start..t0 - start + len];
        apply::<FMA>(kind, acc, &scale[t0..t0 + len], factor, o);
        t0 += len;
    }
}

simd::multiversion! {
    /// One query against panel rows `[start, end)`.
    fn fill_one, pub(crate) fn fill_one_impl(
        kind: KernelKind,
        panel: &Panel,
        q: &Query,
        factor: f32,
        scale: &[f32],
        start: usize,
        end: usize,
        out: &mut [f32],
    ) {
        if uses_difference(kind, q) {
            fill_difference::<FMA, 1>(kind, panel, [q], [factor], scale, start, end, [out]);
        } else {
            fill_dot::<FMA>(kind, panel, q, factor, scale, start, end, out);
        }
    }
}

simd::multiversion! {
    /// Two queries against panel rows `[start, end)`, in one pass when both
    /// are dense.
    fn fill_two, fn fill_two_impl(
        kind: KernelKind,
        panel: &Panel,
        q0: &Query,
        q1: &Query,
        f0: f32,
        f1: f32,
        scale: &[f32],
        start: usize,
        end: usize,
        out0: &mut [f32],
        out1: &mut [f32],
    ) {
        if uses_difference(kind, q0) && uses_difference(kind, q1) {
            fill_difference::<FMA, 2>(
                kind,
                panel,
                [q0, q1],
                [f0, f1],
                scale,
                start,
                end,
                [out0, out1],
            );
        } else {
            fill_one_impl::<FMA>(kind, panel, q0, f0, scale, start, end, out0);
            fill_one_impl::<FMA>(kind, panel, q1, f1, scale, start, end, out1);
        }
    }
}

/// Where kernel values come from: feature rows and a kernel, or a matrix the
/// caller precomputed. Both support swapping indices, which shrinking needs.
#[derive(Clone, Debug)]
pub enum KernelSource {
    /// Feature rows (swapped physically, so active rows stay contiguous): an
    /// `f64` copy for single values and an `f32` [`Panel`] for whole columns.
    Dense {
        kind: KernelKind,
        rows: Rows,
        panel: Panel,
    },
    /// A full `n × n` kernel matrix, addressed through a permutation.
    Precomputed {
        matrix: Vec<f64>,
        n: usize,
        perm: Vec<usize>,
    },
}

impl KernelSource {
    /// A source over feature rows.
    pub fn dense(kind: KernelKind, rows: Rows) -> Result<Self> {
        if kind == KernelKind::Precomputed {
            value_error!("a precomputed kernel needs the kernel matrix, not feature rows");
        }
        kind.validate()?;
        let panel = Panel::new(&rows);
        Ok(KernelSource::Dense { kind, rows, panel })
    }

    /// A source over a square precomputed kernel matrix (row-major).
    pub fn precomputed(matrix: Vec<f64>, n: usize) -> Result<Self> {
        check_kernel_values(&matrix, n, n, "the precomputed kernel")?;
        Ok(KernelSource::Precomputed {
            matrix,
            n,
            perm: (0..n).collect(),
        })
    }

    /// Number of examples.
    pub fn n(&self) -> usize {
        match self {
            KernelSource::Dense { rows, .. } => rows.n(),
            KernelSource::Precomputed { n, .. } => *n,
        }
    }

    /// `K(x_i, x_j)` in the current (possibly swapped) order, in `f64`.
    #[inline]
    pub fn eval(&self, i: usize, j: usize) -> f64 {
        match self {
            KernelSource::Dense { kind, rows, .. } => kind.from_dot(
                dot(rows.row(i), rows.row(j)),
                rows.sq_norm(i),
                rows.sq_norm(j),
            ),
            KernelSource::Precomputed { matrix, n, perm } => matrix[perm[i] * n + perm[j]],
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
            KernelSource::Dense { kind, panel, .. } => {
                let q = panel.query(i);
                if (end - start) * panel.d().max(1) >= PARALLEL_WORK {
                    out.par_chunks_mut(PARALLEL_CHUNK)
                        .enumerate()
                        .for_each(|(c, chunk)| {
                            let s = start + c * PARALLEL_CHUNK;
                            fill_one(*kind, panel, &q, factor, scale, s, s + chunk.len(), chunk);
                        });
                } else {
                    fill_one(*kind, panel, &q, factor, scale, start, end, out);
                }
            }
            KernelSource::Precomputed { .. } => self.fill_precomputed(i, start, factor, scale, out),
        }
    }

    /// [`KernelSource::fill`] for two columns `i` and `j` at once (one pass
    /// over the data).
    #[allow(clippy::too_many_arguments)]
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
            KernelSource::Dense { kind, panel, .. } => {
                let (qi, qj) = (panel.query(i), panel.query(j));
                if (end - start) * panel.d().max(1) >= PARALLEL_WORK {
                    out_i
                        .par_chunks_mut(PARALLEL_CHUNK)
                        .zip(out_j.par_chunks_mut(PARALLEL_CHUNK))
                        .enumerate()
                        .for_each(|(c, (a, b))| {
                            let s = start + c * PARALLEL_CHUNK;
                            let e = s + a.len();
                            fill_two(*kind, panel, &qi, &qj, fi, fj, scale, s, e, a, b);
                        });
                } else {
                    fill_two(
                        *kind, panel, &qi, &qj, fi, fj, scale, start, end, out_i, out_j,
                    );
                }
            }
            KernelSource::Precomputed { .. } => {
                self.fill_precomputed(i, start, fi, scale, out_i);
                self.fill_precomputed(j, start, fj, scale, out_j);
            }
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
        if let KernelSource::Precomputed { matrix, n, perm } = self {
            let row = &matrix[perm[i] * n..(perm[i] + 1) * n];
            for (k, slot) in out.iter_mut().enumerate() {
                let t = start + k;
                *slot = factor * scale[t] * row[perm[t]] as f32;
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
            KernelSource::Dense { rows, panel, .. } => {
                for &(i, j) in swaps {
                    rows.swap(i, j);
                }
                panel.swap_many(swaps);
            }
            KernelSource::Precomputed { perm, .. } => {
                for &(i, j) in swaps {
                    perm.swap(i, j);
                }
            }
        }
    }

    /// A new source restricted to the listed examples (in the current order).
    pub fn subset(&self, idx: &[usize]) -> KernelSource {
        match self {
            KernelSource::Dense { kind, rows, .. } => {
                let rows = rows.gather(idx);
                let panel = Panel::new(&rows);
                KernelSource::Dense {
                    kind: *kind,
                    rows,
                    panel,
                }
            }
            KernelSource::Precomputed { matrix, n, perm } => {
                let m = idx.len();
                let mut sub = Vec::with_capacity(m * m);
                for &a in idx {
                    let row = &matrix[perm[a] * n..(perm[a] + 1) * n];
                    sub.extend(idx.iter().map(|&b| row[perm[b]]));
                }
                KernelSource::Precomputed {
                    matrix: sub,
                    n: m,
                    perm: (0..m).collect(),
                }
            }
        }
    }
}

/// Checks caller-supplied kernel values: `rows × cols` of them, all finite.
/// `what` names the matrix in the error message.
pub fn check_kernel_values(values: &[f64], rows: usize, cols: usize, what: &str) -> Result<()> {
    if values.len() != rows * cols {
        shape_error!(
            "{what} has {} values, expected {rows} × {cols}",
            values.len()
        );
    }
    if values.iter().any(|v| !v.is_finite()) {
        value_error!("{what} contains NaN or infinity");
    }
    Ok(())
}

/// The kernel matrix between the rows of `a` (`na × d`) and `b` (`nb × d`),
/// row-major `na × nb`, computed in parallel over rows of `a`.
pub fn kernel_matrix(kind: KernelKind, a: &Rows, b: &Rows) -> Result<Vec<f64>> {
    if kind == KernelKind::Precomputed {
        value_error!("kernel_matrix needs a kernel function, not 'precomputed'");
    }
    kind.validate()?;
    if a.d() != b.d() {
        shape_error!(
            "the two matrices have {} and {} features; they must match",
            a.d(),
            b.d()
        );
    }
    let nb = b.n();
    let mut out = vec![0.0; a.n() * nb];
    if nb == 0 {
        return Ok(out);
    }
    out.par_chunks_mut(nb).enumerate().for_each(|(i, row)| {
        let xi = a.row(i);
        let sq_i = a.sq_norm(i);
        for (t, slot) in row.iter_mut().enumerate() {
            *slot = kind.from_dot(dot(xi, b.row(t)), sq_i, b.sq_norm(t));
        }
    });
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(data: &[f64], d: usize) -> Rows {
        Rows::new(data.to_vec(), data.len() / d, d).unwrap()
    }

    #[test]
    fn kernels_match_their_formulas() {
        let a = rows(&[1.0, 2.0, 0.5, -1.0], 2);
        let x = a.row(0);
        let z = a.row(1);
        let d = 0.5 - 2.0;
        let dist2 = (1.0f64 - 0.5).powi(2) + (2.0f64 + 1.0).powi(2);
        let cases = [
            (KernelKind::Linear, d),
            (
                KernelKind::Poly {
                    gamma: 0.5,
                    coef0: 1.0,
                    degree: 3,
                },
                (0.5 * d + 1.0f64).powi(3),
            ),
            (KernelKind::Rbf { gamma: 0.3 }, (-0.3 * dist2).exp()),
            (
                KernelKind::Sigmoid {
                    gamma: 0.2,
                    coef0: -0.1,
                },
                (0.2 * d - 0.1f64).tanh(),
            ),
        ];
        for (kind, want) in cases {
            let got = kind.from_dot(dot(x, z), a.sq_norm(0), a.sq_norm(1));
            assert!((got - want).abs() < 1e-12, "{kind:?}: {got} vs {want}");
        }
    }

    #[test]
    fn poly_degree_zero_is_one() {
        let k = KernelKind::Poly {
            gamma: 1.0,
            coef0: 0.0,
            degree: 0,
        };
        assert_eq!(k.from_dot(5.0, 0.0, 0.0), 1.0);
    }

    #[test]
    fn dot_handles_tails() {
        let a: Vec<f64> = (0..11).map(f64::from).collect();
        let want: f64 = a.iter().map(|v| v * v).sum();
        assert_eq!(dot(&a, &a), want);
    }

    #[test]
    fn bad_parameters_are_rejected() {
        assert!(KernelKind::from_name("rbf", 0.0, 0.0, 3).is_err());
        assert!(KernelKind::from_name("rbf", f64::NAN, 0.0, 3).is_err());
        assert!(KernelKind::from_name("poly", 1.0, 0.0, -1).is_err());
        let err = KernelKind::from_name("cubic", 1.0, 0.0, 3).unwrap_err();
        assert!(err.to_string().contains("unknown kernel"));
        assert!(Rows::new(vec![1.0, f64::NAN], 1, 2).is_err());
        assert!(Rows::new(vec![1.0, 2.0, 3.0], 2, 2).is_err());
        assert!(KernelSource::precomputed(vec![1.0; 6], 2).is_err());
    }

    #[test]
    fn swap_and_fill_agree_with_eval() {
        let data: Vec<f64> = (0..40).map(|v| (v as f64 * 0.37).sin()).collect();
        let mut src = KernelSource::dense(KernelKind::Rbf { gamma: 0.7 }, rows(&data, 4)).unwrap();
        let before = src.eval(2, 7);
        src.swap(2, 5);
        assert!((src.eval(5, 7) - before).abs() < 1e-15);
        let scale = vec![1.0f32; 10];
        let mut out = vec![0.0f32; 10];
        src.fill(5, 0, 10, 1.0, &scale, &mut out);
        for (t, v) in out.iter().enumerate() {
            assert!((f64::from(*v) - src.eval(5, t)).abs() < 1e-6);
        }
    }

    #[test]
    fn kernel_matrix_shapes_and_values() {
        let a = rows(&[0.0, 0.0, 1.0, 0.0, 0.0, 1.0], 2);
        let b = rows(&[1.0, 1.0], 2);
        let k = kernel_matrix(KernelKind::Linear, &a, &b).unwrap();
        assert_eq!(k, vec![0.0, 1.0, 1.0]);
        let c = rows(&[1.0, 1.0, 1.0], 3);
        assert!(kernel_matrix(KernelKind::Linear, &a, &c).is_err());
    }
}
