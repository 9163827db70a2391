//! The caller's training data, checks and gathers of caller-supplied kernel
//! values, and whole kernel matrices.

mod blocks;
mod tiles;

pub(crate) use tiles::exp_scaled;

use std::mem::MaybeUninit;
use std::ops::Range;

use rayon::prelude::*;

use self::blocks::Narrow;
pub use self::blocks::Prepared;
use self::tiles::{fill_rows, Panels, LANES};
use super::kinds::KernelKind;
use super::precision::{f64_problem, Magnitudes};
use super::rows::Rows;
use crate::error::{checked_len, shape_error, try_copy, try_with_capacity, value_error, Result};
use crate::runtime::control::Control;

/// Training data as the caller holds it, borrowed: `n` row-major rows of `d`
/// features, or for a precomputed kernel the square `n × n` kernel matrix.
#[derive(Clone, Copy, Debug)]
pub struct TrainingData<'a> {
    kind: KernelKind,
    values: &'a [f64],
    n: usize,
    d: usize,
}

impl<'a> TrainingData<'a> {
    /// Checks the shape: `n × d` values, and square for a precomputed kernel.
    pub fn new(kind: KernelKind, values: &'a [f64], n: usize, d: usize) -> Result<Self> {
        if kind == KernelKind::Precomputed && n != d {
            shape_error!("a precomputed kernel must be square, got shape ({n}, {d})");
        }
        if n.checked_mul(d) != Some(values.len()) {
            shape_error!("X has {} values, expected {n} × {d}", values.len());
        }
        Ok(TrainingData { kind, values, n, d })
    }

    /// The kernel.
    pub fn kind(&self) -> KernelKind {
        self.kind
    }

    /// The values, row-major.
    pub fn values(&self) -> &'a [f64] {
        self.values
    }

    /// Number of examples.
    pub fn n(&self) -> usize {
        self.n
    }

    /// Number of columns: features, or `n` for a precomputed kernel.
    pub fn d(&self) -> usize {
        self.d
    }

    /// An owned copy of the feature rows (checked finite, norms computed).
    pub fn rows(&self) -> Result<Rows> {
        let what = format!("a copy of the {} × {} training data", self.n, self.d);
        let values = try_copy(self.values, &what, "train on fewer rows")?;
        Rows::new(values, self.n, self.d)
    }
}

/// Checks that every index lies below `n`; `what` names the index list in
/// the error message.
pub fn check_indices(idx: &[usize], n: usize, what: &str) -> Result<()> {
    if let Some(&bad) = idx.iter().find(|&&i| i >= n) {
        value_error!("{what} index {bad} is out of range for {n} rows");
    }
    Ok(())
}

/// The square block `K[idx][:, idx]` of the row-major `n × n` matrix
/// `matrix`; an [`crate::Error::Memory`] naming `hint` when it cannot be
/// allocated.
pub fn gather_square(matrix: &[f64], n: usize, idx: &[usize], hint: &str) -> Result<Vec<f64>> {
    let k = idx.len();
    let what = format!("the {k} × {k} block of the kernel matrix");
    let mut sub = try_with_capacity(checked_len::<f64>(k, k, &what, hint)?, &what, hint)?;
    for &a in idx {
        let row = &matrix[a * n..(a + 1) * n];
        sub.extend(idx.iter().map(|&b| row[b]));
    }
    Ok(sub)
}

/// [`KernelKind::from_dot`] over a buffer in place: `vals[k]`, a dot
/// product `x_k · q`, becomes `K(x_k, q)`, with `sq_of(k) = ‖x_k‖²` and
/// `sq_q = ‖q‖²`; the RBF exponentials in one vectorised pass
/// ([`exp_scaled`], within an ulp of `f64::exp`), so each value is the same
/// function of its pair wherever a buffer of them is computed.
#[inline]
pub(crate) fn values_from_dots(
    kind: KernelKind,
    vals: &mut [f64],
    sq_of: impl Fn(usize) -> f64,
    sq_q: f64,
) {
    match kind {
        KernelKind::Rbf { gamma } => {
            for (k, v) in vals.iter_mut().enumerate() {
                *v = (sq_of(k) + sq_q - 2.0 * *v).max(0.0);
            }
            exp_scaled(vals, -gamma);
        }
        kind => {
            for (k, v) in vals.iter_mut().enumerate() {
                *v = kind.from_dot(*v, sq_of(k), sq_q);
            }
        }
    }
}

/// Checks caller-supplied kernel values: `rows × cols` of them, all finite.
/// `what` names the matrix in the error message.
pub fn check_kernel_values(values: &[f64], rows: usize, cols: usize, what: &str) -> Result<()> {
    if rows.checked_mul(cols) != Some(values.len()) {
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
/// row-major `na × nb`, computed in `f64` in parallel over blocks of rows of
/// `a`, vectorised over rows of `b`. The sums over features are those of the
/// scalar [`crate::kernel::kernel_value`], bit for bit (RBF from the
/// differences, so exact for close points and for data far from the
/// origin); RBF's `exp` is a vectorised one within about one unit in the
/// last place of [`f64::exp`], underflowing to 0 as it does. Kernel values that `f64`
/// cannot hold are an error naming the cause
/// ([`super::precision::f64_problem`]), not a matrix of infinities or zeros.
pub fn kernel_matrix(kind: KernelKind, a: &Rows, b: &Rows) -> Result<Vec<f64>> {
    kernel_matrix_or(kind, a, b, DEFAULT_HINT, &Control::none())
}

/// What avoids a kernel matrix too large to allocate, when the caller names
/// nothing more specific.
const DEFAULT_HINT: &str = "compute it in blocks of fewer rows";

/// [`kernel_matrix`], polling `ctl` once per block of rows of the result:
/// [`crate::Error::Interrupted`] once it is cancelled.
pub fn kernel_matrix_with(kind: KernelKind, a: &Rows, b: &Rows, ctl: &Control) -> Result<Vec<f64>> {
    kernel_matrix_or(kind, a, b, DEFAULT_HINT, ctl)
}

/// [`kernel_matrix_with`], whose failure to allocate the matrix is an
/// [`crate::Error::Memory`] naming `hint`, the parameter that avoids it.
pub fn kernel_matrix_or(
    kind: KernelKind,
    a: &Rows,
    b: &Rows,
    hint: &str,
    ctl: &Control,
) -> Result<Vec<f64>> {
    kind.require_function("kernel_matrix")?;
    if let Some(why) = f64_problem(kind, Magnitudes::of_rows(a).join(Magnitudes::of_rows(b))) {
        value_error!("{why}");
    }
    if a.d() != b.d() {
        shape_error!(
            "the two matrices have {} and {} features; they must match",
            a.d(),
            b.d()
        );
    }
    let nb = b.n();
    let what = format!("the {} × {nb} kernel matrix", a.n());
    let len = checked_len::<f64>(a.n(), nb, &what, hint)?;
    let mut out: Vec<f64> = try_with_capacity(len, &what, hint)?;
    if len == 0 {
        return Ok(out);
    }
    let against = KernelRowsAgainst::try_new(kind, b, hint)?;
    let block = block_rows(a.n(), rayon::current_num_threads());
    // Each task zero-fills its own rows first (in parallel, and into its
    // cache), then computes them.
    out.spare_capacity_mut()[..len]
        .par_chunks_mut(nb * block)
        .enumerate()
        .for_each(|(k, chunk)| {
            for v in chunk.iter_mut() {
                v.write(0.0);
            }
            // SAFETY: every value of `chunk` was initialised just above, and
            // `MaybeUninit<f64>` has the layout of `f64`.
            let rows = unsafe { &mut *(chunk as *mut [MaybeUninit<f64>] as *mut [f64]) };
            if !ctl.is_cancelled() {
                fill_rows(kind, a, k * block, b, &against.panels, rows);
            }
        });
    // SAFETY: the chunks above cover the first `len` values, and each task
    // initialised all of its chunk.
    unsafe { out.set_len(len) };
    ctl.check()?;
    Ok(out)
}

/// The rows of `b` transposed once for many kernel rows against them (one
/// block of rows of `a` after another), computed as [`kernel_matrix`]
/// computes them: the same values.
pub struct KernelRowsAgainst<'b> {
    kind: KernelKind,
    b: &'b Rows,
    panels: Panels,
    /// `max_t ‖b_t‖²`.
    max_sq: f64,
    /// `b` in `f32` panels for exact dot products of small integers
    /// ([`Self::for_ranges`]).
    narrow: Option<Narrow>,
}

impl<'b> KernelRowsAgainst<'b> {
    /// Transposes `b` (`8·n·d` bytes; a failed allocation is an
    /// [`crate::Error::Memory`] naming `hint`). `kind` must be a kernel
    /// function.
    pub fn try_new(kind: KernelKind, b: &'b Rows, hint: &str) -> Result<Self> {
        kind.require_function("kernel rows")?;
        Ok(KernelRowsAgainst {
            kind,
            b,
            panels: Panels::try_new(b, hint)?,
            max_sq: (0..b.n()).map(|t| b.sq_norm(t)).fold(0.0, f64::max),
            narrow: None,
        })
    }

    /// [`Self::try_new`] for [`Self::fill_range`]: when every value of `b`
    /// is an integer small enough that dot products with like rows are
    /// exact in `f32` (`4·d·max|v|² ≤ 2²⁴`), also an `f32` copy of `b`
    /// (`4·n·d` bytes more), over which such rows with few non-zero
    /// features take their dot products with twice the values per
    /// instruction and the same, exact, results.
    pub fn for_ranges(kind: KernelKind, b: &'b Rows, hint: &str) -> Result<Self> {
        let mut against = Self::try_new(kind, b, hint)?;
        against.narrow = Narrow::try_new(b, against.panels.integer_max, hint)?;
        Ok(against)
    }

    /// Columns per range of [`Self::fill_range`] come in multiples of this.
    pub const RANGE_STEP: usize = 2 * LANES;

    /// Works out once how rows `first..first + n` of `a` get their kernel
    /// values in [`Self::fill_range`] (which rows share passes, which skip
    /// zero features, which keep RBF's difference form).
    pub fn prepare(&self, a: &Rows, first: usize, n: usize) -> Result<Prepared> {
        self.check_width(a)?;
        if first.checked_add(n).is_none_or(|end| end > a.n()) {
            shape_error!(
                "{n} rows from row {first} are not all among the {} rows given",
                a.n()
            );
        }
        Prepared::new(
            self.kind,
            a,
            first,
            n,
            &self.panels,
            self.max_sq,
            self.narrow.as_ref(),
        )
    }

    /// `out[r·stride + t − c0] = K(a_{first + r}, b_t)` for the rows
    /// `first..first + n` that `prepared` (from [`Self::prepare`] on the
    /// same `a`) plans and the columns `cols = c0..c1`, `c0` a multiple of
    /// [`Self::RANGE_STEP`], in the calling thread. Dot products are fused
    /// multiply-add chains over each row's non-zero features, RBF distances
    /// in the norm form where that is exact or accurate to 2⁻³⁸ in the
    /// exponent, else from the differences as in [`Self::fill`]; a row's
    /// values do not depend on the other rows or on the range.
    pub fn fill_range(
        &self,
        a: &Rows,
        prepared: &Prepared,
        cols: Range<usize>,
        out: &mut [f64],
        stride: usize,
    ) -> Result<()> {
        let (c0, c1) = (cols.start, cols.end);
        self.check_width(a)?;
        let n = prepared.n();
        if prepared.end() > a.n() {
            shape_error!(
                "the prepared rows end at {} but there are {} rows",
                prepared.end(),
                a.n()
            );
        }
        if !c0.is_multiple_of(Self::RANGE_STEP) || c0 > c1 || c1 > self.b.n() || c1 - c0 > stride {
            shape_error!(
                "columns {c0}..{c1} of {} with a stride of {stride} are not a range of whole panels",
                self.b.n()
            );
        }
        if n > 0 && out.len() < (n - 1) * stride + (c1 - c0) {
            shape_error!(
                "{} slots are too few for {n} rows of stride {stride}",
                out.len()
            );
        }
        blocks::fill_range(self, a, prepared, cols, out, stride);
        Ok(())
    }

    /// An error unless `a` has the prepared rows' number of features.
    fn check_width(&self, a: &Rows) -> Result<()> {
        if a.d() != self.b.d() {
            shape_error!(
                "the rows have {} features but the prepared rows {}",
                a.d(),
                self.b.d()
            );
        }
        Ok(())
    }

    /// `out[i·n_b + t] = K(a_i, b_t)` for every row of `a`, in parallel over
    /// blocks of rows; [`crate::Error::Interrupted`] once `ctl` is cancelled.
    pub fn fill(&self, a: &Rows, out: &mut [f64], ctl: &Control) -> Result<()> {
        let nb = self.b.n();
        self.check_width(a)?;
        if out.len() != a.n() * nb {
            shape_error!(
                "{} kernel rows of {nb} values need {} slots, got {}",
                a.n(),
                a.n() * nb,
                out.len()
            );
        }
        if out.is_empty() {
            return ctl.check();
        }
        let block = block_rows(a.n(), rayon::current_num_threads());
        out.par_chunks_mut(nb * block)
            .enumerate()
            .for_each(|(k, rows)| {
                if !ctl.is_cancelled() {
                    fill_rows(self.kind, a, k * block, self.b, &self.panels, rows);
                }
            });
        ctl.check()
    }

    /// `out[r·n_b + t] = K(a_{first + r}, b_t)` for the rows `first..first +
    /// out.len() / n_b` of `a`, in the calling thread (for callers that run
    /// their own parallel tasks over blocks of rows); the same values as
    /// [`Self::fill`].
    pub fn fill_block(&self, a: &Rows, first: usize, out: &mut [f64]) -> Result<()> {
        let nb = self.b.n();
        self.check_width(a)?;
        if nb == 0 {
            return Ok(());
        }
        let rows = out.len() / nb;
        if !out.len().is_multiple_of(nb) || first.checked_add(rows).is_none_or(|end| end > a.n()) {
            shape_error!(
                "{} slots are not whole kernel rows of {nb} values from row {first} of {}",
                out.len(),
                a.n()
            );
        }
        fill_rows(self.kind, a, first, self.b, &self.panels, out);
        Ok(())
    }
}

/// Rows of `a` per parallel task: up to 32 (the column panels are reused
/// from the cache across them), down to 1 so that every thread gets about
/// four tasks.
fn block_rows(na: usize, threads: usize) -> usize {
    (na / (4 * threads.max(1))).clamp(1, 32)
}

#[cfg(test)]
mod tests {
    use super::tiles::{exp_nonpositive, exp_scaled, fill_rows, fill_rows_impl, LANES};
    use super::*;
    use crate::kernel::rows::kernel_value;

    /// Uniform values in `[−1, 1)` from a fixed linear congruential stream
    /// (also for the tests of [`super::blocks`]).
    pub(super) fn uniform(len: usize, state: &mut u64) -> Vec<f64> {
        (0..len)
            .map(|_| {
                *state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                (*state >> 11) as f64 / (1u64 << 52) as f64 - 1.0
            })
            .collect()
    }

    fn rows(data: Vec<f64>, n: usize, d: usize) -> Rows {
        Rows::new(data, n, d).unwrap()
    }

    /// The scalar formula, one entry at a time.
    fn reference(kind: KernelKind, a: &Rows, b: &Rows) -> Vec<f64> {
        let mut out = Vec::new();
        for i in 0..a.n() {
            for t in 0..b.n() {
                out.push(kernel_value(
                    kind,
                    a.row(i),
                    b.row(t),
                    a.sq_norm(i),
                    b.sq_norm(t),
                ));
            }
        }
        out
    }

    /// The tiled matrix with fused multiply-adds or not (in `exp`), in
    /// blocks of `block` rows.
    fn tiled(kind: KernelKind, a: &Rows, b: &Rows, fma: bool, block: usize) -> Vec<f64> {
        let panels = Panels::try_new(b, "hint").unwrap();
        let mut out = vec![f64::NAN; a.n() * b.n()];
        if b.n() == 0 {
            return out;
        }
        for (k, chunk) in out.chunks_mut(block * b.n()).enumerate() {
            if fma {
                fill_rows_impl::<true>(kind, a, k * block, b, &panels, chunk);
            } else {
                fill_rows_impl::<false>(kind, a, k * block, b, &panels, chunk);
            }
        }
        out
    }

    fn assert_close(got: &[f64], want: &[f64], what: &str) {
        assert_eq!(got.len(), want.len(), "{what}");
        for (k, (&g, &w)) in got.iter().zip(want).enumerate() {
            let tol = (1e-13 * w.abs()).max(1e-15);
            assert!(
                (g - w).abs() <= tol,
                "{what}: entry {k} is {g:e}, the scalar formula gives {w:e}"
            );
        }
    }

    /// Kernels of every kind (also for the tests of [`super::blocks`]).
    pub(super) const KINDS: [KernelKind; 5] = [
        KernelKind::Linear,
        KernelKind::Poly {
            gamma: 0.3,
            coef0: 1.0,
            degree: 3,
        },
        KernelKind::Rbf { gamma: 0.7 },
        KernelKind::Rbf { gamma: 40.0 },
        KernelKind::Sigmoid {
            gamma: 0.05,
            coef0: -0.2,
        },
    ];

    #[test]
    fn rows_against_prepared_rows_equal_the_kernel_matrix() {
        let make = |n: usize, d: usize, phase: f64| {
            let data = (0..n * d)
                .map(|v| ((v as f64) * 0.37 + phase).sin())
                .collect();
            Rows::new(data, n, d).unwrap()
        };
        let kinds = [
            KernelKind::Rbf { gamma: 0.7 },
            KernelKind::Linear,
            KernelKind::Sigmoid {
                gamma: 0.2,
                coef0: -0.1,
            },
        ];
        let ctl = Control::none();
        for d in [1, 4, 9] {
            let b = make(83, d, 0.0);
            let a = make(37, d, 1.3);
            for kind in kinds {
                let against = KernelRowsAgainst::try_new(kind, &b, "h").unwrap();
                let mut out = vec![0.0; a.n() * b.n()];
                against.fill(&a, &mut out, &ctl).unwrap();
                let want = kernel_matrix(kind, &a, &b).unwrap();
                let same = out
                    .iter()
                    .zip(&want)
                    .all(|(x, y)| x.to_bits() == y.to_bits());
                assert!(same, "{kind:?} d={d}");
                // Rows 5..16 alone, in the calling thread: the same values.
                let mut part = vec![f64::NAN; 11 * b.n()];
                against.fill_block(&a, 5, &mut part).unwrap();
                let same = part
                    .iter()
                    .zip(&want[5 * b.n()..16 * b.n()])
                    .all(|(x, y)| x.to_bits() == y.to_bits());
                assert!(same, "{kind:?} d={d}, rows 5..16");
            }
        }
        let b = make(10, 2, 0.0);
        let against = KernelRowsAgainst::try_new(KernelKind::Linear, &b, "h").unwrap();
        let mut out = vec![0.0; 30];
        assert!(against.fill(&make(3, 3, 0.0), &mut out, &ctl).is_err());
        assert!(against.fill(&make(2, 2, 0.0), &mut out, &ctl).is_err());
        // Past the last row, not whole rows, too few features.
        assert!(against.fill_block(&make(3, 2, 0.0), 1, &mut out).is_err());
        assert!(against
            .fill_block(&make(3, 2, 0.0), 0, &mut out[..15])
            .is_err());
        assert!(against.fill_block(&make(3, 3, 0.0), 0, &mut out).is_err());
        assert!(against.fill_block(&make(3, 2, 0.0), 0, &mut out).is_ok());
        assert!(KernelRowsAgainst::try_new(KernelKind::Precomputed, &b, "h").is_err());
    }

    #[test]
    fn tiled_matrix_matches_the_scalar_formula() {
        let mut state = 7u64;
        // (na, nb, d): empty sides, single rows, d = 1, odd d, nb not a
        // multiple of the panel width, more rows than one block.
        let shapes = [
            (0, 5, 3),
            (4, 0, 3),
            (1, 1, 1),
            (3, 9, 0),
            (5, 13, 1),
            (7, LANES, 5),
            (9, 2 * LANES + 1, 4),
            (33, 17, 22),
            (40, 67, 31),
        ];
        for &(na, nb, d) in &shapes {
            for offset in [0.0, 1e4] {
                let shift = |v: Vec<f64>| v.into_iter().map(|x| x + offset).collect::<Vec<_>>();
                let a = rows(shift(uniform(na * d, &mut state)), na, d);
                // Far points, and points within 1e-9 of rows of `a`.
                let far = rows(shift(uniform(nb * d, &mut state)), nb, d);
                let close_data: Vec<f64> = (0..nb * d)
                    .map(|k| {
                        let src = if na > 0 {
                            a.row((k / d.max(1)) % na)[k % d.max(1)]
                        } else {
                            0.0
                        };
                        src + 1e-9 * uniform(1, &mut state)[0]
                    })
                    .collect();
                let close = rows(close_data, nb, d);
                for b in [&far, &close] {
                    for kind in KINDS {
                        let want = reference(kind, &a, b);
                        let what = format!("{kind:?} on {na} × {nb} × {d}, offset {offset}");
                        for (fma, block) in [(false, 1), (true, 3), (false, 32)] {
                            assert_close(&tiled(kind, &a, b, fma, block), &want, &what);
                        }
                        if let Ok(k) = kernel_matrix(kind, &a, b) {
                            assert_close(&k, &want, &what);
                        }
                        if !matches!(kind, KernelKind::Rbf { .. }) {
                            // Same sums in the same order: identical values.
                            assert_eq!(tiled(kind, &a, b, true, 2), want, "{what}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn rows_with_few_non_zeros_give_the_scalar_values() {
        // Rows with at most a quarter of their features non-zero take the
        // loops that skip zeros: dot products bit for bit the scalar ones,
        // RBF distances too where the data are integers small enough to
        // make them exact, else the difference loop.
        let mut state = 13u64;
        let (na, nb) = (21, 19);
        for d in [1, 4, 7, 30, 123] {
            let pattern = |len: usize, state: &mut u64| {
                uniform(len, state)
                    .into_iter()
                    .enumerate()
                    .map(|(k, v)| if (k * 7 + 3) % 4 == 0 { v } else { 0.0 })
                    .collect::<Vec<f64>>()
            };
            let real_a = pattern(na * d, &mut state);
            let real_b = pattern(nb * d, &mut state);
            let ints = |v: &[f64], scale: f64| v.iter().map(|x| (x * scale).round()).collect();
            let cases: [(&str, Vec<f64>, Vec<f64>); 4] = [
                ("real", real_a.clone(), real_b.clone()),
                ("binary", ints(&real_a, 1.0), ints(&real_b, 1.0)),
                ("counts", ints(&real_a, 1e3), ints(&real_b, 1e3)),
                // Integers too large for exact norms: the difference loop.
                ("large", ints(&real_a, 1e8), ints(&real_b, 1e8)),
            ];
            for (what, da, db) in cases {
                let (a, b) = (rows(da, na, d), rows(db, nb, d));
                for kind in KINDS {
                    let want = reference(kind, &a, &b);
                    let what = format!("{kind:?}, {what} data, d = {d}");
                    for (fma, block) in [(false, 1), (true, 5)] {
                        let got = tiled(kind, &a, &b, fma, block);
                        if matches!(kind, KernelKind::Rbf { .. }) {
                            assert_close(&got, &want, &what);
                        } else {
                            assert_eq!(got, want, "{what}");
                        }
                    }
                }
            }
            // Rows within 1e-9 of rows of `a` (same zeros), at a γ that makes
            // such distances matter: norms would lose them, differences not.
            let a = rows(real_a.clone(), na, d);
            let close: Vec<f64> = (0..nb * d)
                .map(|k| {
                    let v = real_a[(k / d % na) * d + k % d];
                    if v == 0.0 {
                        0.0
                    } else {
                        v + 1e-9 * uniform(1, &mut state)[0]
                    }
                })
                .collect();
            let b = rows(close, nb, d);
            let sharp = KernelKind::Rbf { gamma: 1e17 };
            let want = reference(sharp, &a, &b);
            assert_close(
                &tiled(sharp, &a, &b, true, 3),
                &want,
                &format!("close rows, d = {d}"),
            );
        }
    }

    #[test]
    fn rbf_of_identical_rows_is_one() {
        let mut state = 3u64;
        let a = rows(uniform(11 * 6, &mut state), 11, 6);
        let k = kernel_matrix(KernelKind::Rbf { gamma: 2.5 }, &a, &a).unwrap();
        for i in 0..11 {
            assert_eq!(k[i * 11 + i], 1.0);
        }
    }

    /// Distance in units in the last place between two non-negative floats.
    fn ulps(a: f64, b: f64) -> u64 {
        a.to_bits().abs_diff(b.to_bits())
    }

    /// The arguments of the vector `exp`'s tests: a dense grid over the
    /// whole range (steps of 1.37e-4, not commensurate with the table's
    /// `ln 2 / 16`), each boundary between two table entries and its
    /// neighbours, and the edges.
    fn exp_arguments() -> Vec<f64> {
        let mut xs = Vec::new();
        let mut x = -746.5f64;
        while x <= 0.0 {
            xs.push(x);
            x += 1.37e-4;
        }
        let step = std::f64::consts::LN_2 / 16.0;
        for m in 0..=17_300 {
            let b = -(m as f64 + 0.5) * step;
            xs.extend([b.next_down(), b, b.next_up()]);
        }
        xs.extend([
            0.0, -0.0, -5e-324, -1e-300, -1e-17, -1.1e-16, -0.5, -1.0, -708.39, -708.5, -745.0,
            -745.1, -745.13,
        ]);
        xs
    }

    #[test]
    fn vector_exp_is_within_one_ulp_and_underflows_to_zero() {
        let (mut worst, mut worst_rel) = (0, 0.0f64);
        for x in exp_arguments() {
            let want = x.exp();
            for got in [exp_nonpositive::<true>(x), exp_nonpositive::<false>(x)] {
                assert!(got >= 0.0, "e^{x} gave {got}");
                worst = worst.max(ulps(got, want));
                if want >= f64::MIN_POSITIVE {
                    worst_rel = worst_rel.max((got - want).abs() / want);
                }
            }
        }
        println!("worst error {worst} ulps, {worst_rel:e} relative");
        assert!(worst <= 1, "worst error {worst} ulps");
        assert!(worst_rel <= 2.3e-16, "worst relative error {worst_rel:e}");
        for x in [0.0, -0.0, -5e-324, -1e-300, -1e-17] {
            assert_eq!(exp_nonpositive::<false>(x), 1.0, "e^{x}");
            assert_eq!(exp_nonpositive::<true>(x), 1.0, "e^{x}");
        }
        for x in [-745.2, -746.0, -800.0, -1e300, f64::MIN, f64::NEG_INFINITY] {
            assert_eq!(exp_nonpositive::<false>(x), 0.0, "e^{x}");
            assert_eq!(exp_nonpositive::<true>(x), 0.0, "e^{x}");
        }
        // Larger arguments are taken as 0; NaN stays NaN.
        assert_eq!(exp_nonpositive::<true>(1e-3), 1.0);
        assert_eq!(exp_nonpositive::<true>(f64::INFINITY), 1.0);
        assert!(exp_nonpositive::<true>(f64::NAN).is_nan());
        assert!(exp_nonpositive::<false>(f64::NAN).is_nan());
        let mut v = vec![0.0, 1.0, 2.0, 1e4, 1e300];
        exp_scaled(&mut v, -0.5);
        assert_eq!(v[0], 1.0);
        assert!(ulps(v[1], (-0.5f64).exp()) <= 1);
        assert!(ulps(v[2], (-1.0f64).exp()) <= 1);
        assert_eq!(&v[3..], &[0.0, 0.0]);
    }

    #[test]
    fn exp_table_holds_the_rounded_powers_of_two() {
        // Each entry is the f64 nearest 2^(j/16) (worked out to 60 digits):
        // libm's `exp2` gives the same bits, and its logarithm is j/16·ln 2.
        for (j, &bits) in super::tiles::EXP2_FRACTIONS.iter().enumerate() {
            let t = f64::from_bits(bits);
            assert_eq!(
                t.to_bits(),
                (j as f64 / 16.0).exp2().to_bits(),
                "2^({j}/16)"
            );
            let back = (t.ln() * 16.0 / std::f64::consts::LN_2 - j as f64).abs();
            assert!(back < 1e-13, "2^({j}/16): log₂ gives {back:e} off");
        }
    }

    #[test]
    fn avx512_exp_gives_the_bits_of_the_generic_one() {
        if crate::numeric::simd::level() != crate::numeric::simd::Level::Avx512 {
            // Only an AVX-512 processor runs (and can test) that loop.
            return;
        }
        let mut xs = exp_arguments();
        xs.extend([f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1e-3, f64::MIN]);
        for factor in [1.0, 0.7, -1.0] {
            // Every tail length of the 8-lane loop.
            for len in [xs.len(), 1, 2, 3, 7, 9, 15, 17] {
                let src: Vec<f64> = xs[..len].iter().map(|x| x / factor).collect();
                let mut got = src.clone();
                // SAFETY: the level says the CPU has AVX-512.
                unsafe { super::tiles::avx512::exp_scaled(&mut got, factor) };
                for (g, s) in got.iter().zip(&src) {
                    let want = exp_nonpositive::<true>(factor * s);
                    if want.is_nan() {
                        // A NaN's sign and payload carry no meaning.
                        assert!(g.is_nan(), "e^({factor}·{s}) = {g}");
                    } else {
                        assert_eq!(g.to_bits(), want.to_bits(), "e^({factor}·{s})");
                    }
                }
            }
        }
    }

    #[test]
    fn cancelled_matrix_is_interrupted() {
        let mut state = 5u64;
        let a = rows(uniform(20 * 3, &mut state), 20, 3);
        let ctl = Control::new();
        ctl.cancel();
        let err = kernel_matrix_with(KernelKind::Linear, &a, &a, &ctl).unwrap_err();
        assert!(matches!(err, crate::Error::Interrupted), "{err}");
    }

    #[test]
    fn block_rows_bounds() {
        assert_eq!(block_rows(1, 2), 1);
        assert_eq!(block_rows(600, 2), 32);
        assert_eq!(block_rows(40, 2), 5);
        assert_eq!(block_rows(10, 0), 2);
    }

    /// Where the time goes on a 600 × 4800 × 22 RBF matrix: run with
    /// `cargo test --release -- --ignored --nocapture timing`.
    #[test]
    #[ignore]
    fn timing() {
        let mut state = 11u64;
        let (na, nb, d) = (600, 4800, 22);
        let a = rows(uniform(na * d, &mut state), na, d);
        let b = rows(uniform(nb * d, &mut state), nb, d);
        let time = |f: &mut dyn FnMut()| {
            let mut ts: Vec<f64> = (0..9)
                .map(|_| {
                    let t = std::time::Instant::now();
                    f();
                    t.elapsed().as_secs_f64() * 1e3
                })
                .collect();
            ts.sort_by(f64::total_cmp);
            ts[4]
        };
        let rbf = KernelKind::Rbf { gamma: 0.05 };
        let full = time(&mut || drop(kernel_matrix(rbf, &a, &b).unwrap()));
        let lin = time(&mut || drop(kernel_matrix(KernelKind::Linear, &a, &b).unwrap()));
        let scalar = time(&mut || drop(reference(rbf, &a, &b)));
        let mut v = kernel_matrix(KernelKind::Linear, &a, &b).unwrap();
        for x in &mut v {
            *x = x.abs();
        }
        let panels = Panels::try_new(&b, "hint").unwrap();
        let mut out = vec![0.0; na * nb];
        let mut fill = |kind| {
            time(&mut || {
                out.par_chunks_mut(32 * nb)
                    .enumerate()
                    .for_each(|(k, rows)| fill_rows(kind, &a, k * 32, &b, &panels, rows))
            })
        };
        let (fill_rbf, fill_lin) = (fill(rbf), fill(KernelKind::Linear));
        println!("fill only, ms: rbf {fill_rbf:.1}, linear {fill_lin:.1}");
        let mut small = v[..4096].to_vec();
        let l1_exp = time(&mut || {
            for _ in 0..703 {
                exp_scaled(&mut small, -1e-3);
            }
        });
        println!("exp on 4096 cached values × 703, ms: {l1_exp:.1}");
        let mut w = v.clone();
        let copy = time(&mut || w.copy_from_slice(&v));
        let vec_exp = time(&mut || {
            w.copy_from_slice(&v);
            exp_scaled(&mut w, -0.05);
        });
        let libm_exp = time(&mut || {
            w.copy_from_slice(&v);
            for x in &mut w {
                *x = (-0.05 * *x).exp();
            }
        });
        println!(
            "ms (median of 9): rbf {full:.1}, linear {lin:.1}, scalar rbf 1 thread {scalar:.1}; \
             exp over {} values 1 thread: vector {:.1}, libm {:.1}",
            v.len(),
            vec_exp - copy,
            libm_exp - copy
        );
    }
}
