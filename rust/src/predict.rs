//! Decision values of kernel expansions `f_c(x) = Σ_s coef[c][s] K(x_s, x) + b_c`
//! for many test points at once, in parallel over test rows.

use rayon::prelude::*;

use crate::error::{checked_len, shape_error, try_filled, try_with_capacity, value_error, Result};
use crate::kernel::{
    fill_four_impl, fill_one_impl, scratch, Csc, CsrRows, KernelKind, KernelRowsAgainst, Panel,
    Query, Rows,
};
use crate::numeric::simd;
use crate::precision::{resolve, Magnitudes, Precision, F32_MAX_SAFE, F32_MIN_SAFE};
use crate::runtime::control::Control;

/// Test rows handed to one rayon task.
const ROWS_PER_TASK: usize = 64;
/// Support vectors per partial sum: products are summed in `f32` within a
/// block and the blocks in `f64`.
const BLOCK: usize = 256;
/// Support vectors per block of the `f32` loop: the block's panel rows
/// and the task's kernel values against it (`ROWS_PER_TASK · SV_BLOCK`
/// floats) stay in the L2 cache. A multiple of [`BLOCK`] and of the kernel
/// loops' tiles (48 rows for four test rows, 64 for one), which are fastest
/// whole.
const SV_BLOCK: usize = 768;

/// Decision values, row-major `m × k` for `m` test rows and `k` expansions,
/// in the path [`crate::precision::resolve`] picks for the test rows and
/// support vectors together (no `tol`: range alone decides).
pub fn decision_values(
    kind: KernelKind,
    test: &Rows,
    sv: &Rows,
    coef: &[f64],
    intercept: &[f64],
) -> Result<Vec<f64>> {
    let ctl = Control::none();
    decision_values_controlled(kind, test, sv, coef, intercept, Precision::Auto, &ctl)
        .map(|(v, _)| v)
}

/// Decision values, row-major `m × k` for `m` test rows and `k` expansions,
/// and the path that computed them.
///
/// `coef` is row-major `k × s` (one row per expansion over the `s` support
/// vectors), `intercept` has `k` entries. On the `Float32` path kernel
/// values come from the same vectorised `f32` loops as the solver's columns
/// (the support vectors as a feature-major panel, each test row a query)
/// and are summed in `f32` blocks; on the `Float64` path everything is
/// `f64`. `Auto` takes `Float32` when the test rows, the support vectors,
/// the kernel parameters and the coefficients are within `f32`'s safe range
/// ([`crate::precision::f32_problem`]); a model fitted in `f64` should ask
/// for `Float64`. In parallel over test rows either way.
///
/// Polls `ctl` once per block of test rows: [`crate::Error::Interrupted`]
/// once it is cancelled.
pub fn decision_values_controlled(
    kind: KernelKind,
    test: &Rows,
    sv: &Rows,
    coef: &[f64],
    intercept: &[f64],
    precision: Precision,
    ctl: &Control,
) -> Result<(Vec<f64>, Precision)> {
    let layout = full_layout(coef, intercept.len(), sv.n())?;
    decision_core(kind, test, sv, &layout, intercept, precision, ctl)
}

/// The one-vs-one pairs over class-grouped support vectors: class `c` owns
/// the `class_counts[c]` rows after those of classes `0..c`; each entry
/// `(a, b)` of `pairs` is a model over classes `a` and `b`.
#[derive(Clone, Copy, Debug)]
pub struct OvoPairs<'a> {
    pub class_counts: &'a [usize],
    pub pairs: &'a [(usize, usize)],
}

/// Decision values of one-vs-one pairs, row-major `m × k` for `m` test rows
/// and the `k` pairs, and the path that computed them.
///
/// The support vectors are grouped by class: class `c` owns the
/// `class_counts[c]` rows after those of classes `0..c`. Pair `p = (a, b)`
/// of `pairs` is the expansion over the support vectors of classes `a` and
/// `b` only; its coefficients are the next `class_counts[a] +
/// class_counts[b]` values of `coef` (class `a`'s first, then class `b`'s),
/// so `coef` holds no zeros for the other classes. Each test row's kernel
/// values against all support vectors are computed once (as
/// [`decision_values_controlled`] computes them, in the same precision path) and
/// every pair's value is then two short dot products over them: the cost is
/// one kernel evaluation per (test row, support vector) plus one
/// multiply-add per (test row, pair, support vector of the pair). Polls
/// `ctl` as [`decision_values_controlled`] does.
pub fn decision_values_pairs_controlled(
    kind: KernelKind,
    test: &Rows,
    sv: &Rows,
    ovo: &OvoPairs<'_>,
    coef: &[f64],
    intercept: &[f64],
    precision: Precision,
    ctl: &Control,
) -> Result<(Vec<f64>, Precision)> {
    let layout = pair_layout(ovo, coef, intercept.len(), sv.n())?;
    decision_core(kind, test, sv, &layout, intercept, precision, ctl)
}

/// [`decision_values_controlled`] for sparse test rows and support vectors:
/// always in `f64` (kernel values from dot products over stored entries,
/// each test row scattered once into a dense scratch row of `d` values and
/// gathered against every support vector's stored entries), in parallel
/// over blocks of test rows, polling `ctl` once per block.
pub fn decision_values_sparse(
    kind: KernelKind,
    test: &CsrRows,
    sv: &CsrRows,
    coef: &[f64],
    intercept: &[f64],
    ctl: &Control,
) -> Result<Vec<f64>> {
    let layout = full_layout(coef, intercept.len(), sv.n())?;
    decision_sparse_core(kind, test, sv, &layout, intercept, ctl)
}

/// [`decision_values_pairs_controlled`] for sparse test rows and support
/// vectors, computed as [`decision_values_sparse`] computes its values.
pub fn decision_values_pairs_sparse(
    kind: KernelKind,
    test: &CsrRows,
    sv: &CsrRows,
    ovo: &OvoPairs<'_>,
    coef: &[f64],
    intercept: &[f64],
    ctl: &Control,
) -> Result<Vec<f64>> {
    let layout = pair_layout(ovo, coef, intercept.len(), sv.n())?;
    decision_sparse_core(kind, test, sv, &layout, intercept, ctl)
}

/// The checks of every decision-value path: `kind` has a decision function,
/// the test rows have as many features as the support vectors (`test` and
/// `sv` features) and the coefficients and intercepts are finite.
fn check_model(
    kind: KernelKind,
    test: usize,
    sv: usize,
    coef: &[f64],
    intercept: &[f64],
) -> Result<()> {
    kind.require_function("decision_values")?;
    if test != sv {
        shape_error!("X has {test} features, but the model was fitted with {sv} features");
    }
    if coef.iter().chain(intercept).any(|v| !v.is_finite()) {
        value_error!("the coefficients or intercepts contain NaN or infinity");
    }
    Ok(())
}

/// The decision values of `layout`'s expansions over sparse rows, in `f64`.
fn decision_sparse_core(
    kind: KernelKind,
    test: &CsrRows,
    sv: &CsrRows,
    layout: &Layout<'_>,
    intercept: &[f64],
    ctl: &Control,
) -> Result<Vec<f64>> {
    check_model(kind, test.d(), sv.d(), layout.coef, intercept)?;
    let mags = Magnitudes {
        max_sq: test.max_sq_norm().max(sv.max_sq_norm()),
        max_abs: test.max_abs().max(sv.max_abs()),
    };
    resolve(Precision::Float64, kind, mags, None)?;
    let (m, k, s) = (test.n(), intercept.len(), sv.n());
    let what = format!("the {m} × {k} matrix of decision values");
    let hint = "predict fewer rows at once";
    let mut out = try_filled(checked_len::<f64>(m, k, &what, hint)?, 0.0, &what, hint)?;
    if k == 0 || m == 0 {
        return Ok(out);
    }
    // Over the support vectors' transpose when it exists: only the products
    // of features a test row shares with them (else a scatter and gathers).
    let cols = Csc::of(sv)?;
    out.par_chunks_mut(ROWS_PER_TASK * k)
        .enumerate()
        .try_for_each(|(block, chunk)| -> Result<()> {
            ctl.check()?;
            let first = block * ROWS_PER_TASK;
            let hint = "use fewer support vectors";
            let mut kv = try_filled(s, 0.0f64, "a row of kernel values", hint)?;
            let mut w = match cols {
                Some(_) => Vec::new(),
                None => scratch(sv.d())?,
            };
            for (r, row_out) in chunk.chunks_mut(k).enumerate() {
                let i = first + r;
                let sq = test.sq_norm(i);
                if let Some(cols) = &cols {
                    let (idx, val) = test.row(i);
                    kv.iter_mut().for_each(|v| *v = 0.0);
                    cols.accumulate(idx, val, &mut kv);
                    for (t, slot) in kv.iter_mut().enumerate() {
                        *slot = kind.from_dot(*slot, sq, sv.sq_norm(t));
                    }
                } else {
                    test.scatter(i, &mut w);
                    for (t, slot) in kv.iter_mut().enumerate() {
                        *slot = kind.from_dot(sv.gather_dot(t, &w), sq, sv.sq_norm(t));
                    }
                    test.clear(i, &mut w);
                }
                apply_layout(layout, intercept, &kv, row_out);
            }
            Ok(())
        })?;
    ctl.check()?;
    finite(out, Precision::Float64).map(|(v, _)| v)
}

/// `row_out[c] = intercept[c] + Σ coef · kv` over expansion `c`'s segments.
fn apply_layout(layout: &Layout<'_>, intercept: &[f64], kv: &[f64], row_out: &mut [f64]) {
    for (c, slot) in row_out.iter_mut().enumerate() {
        let mut total = intercept[c];
        for seg in layout.segments(c) {
            let coef = &layout.coef[seg.coef..seg.coef + seg.len];
            let kv = &kv[seg.sv..seg.sv + seg.len];
            total += coef.iter().zip(kv).map(|(a, b)| a * b).sum::<f64>();
        }
        *slot = total;
    }
}

/// The layout of `k` expansions over all `s` support vectors (`coef`
/// row-major `k × s`).
fn full_layout(coef: &[f64], k: usize, s: usize) -> Result<Layout<'_>> {
    if coef.len() != k * s {
        shape_error!(
            "coef has {} values, expected {k} expansions × {s} support vectors",
            coef.len()
        );
    }
    let hint = "use fewer models";
    let mut segments = try_with_capacity(k, "the expansions' segments", hint)?;
    segments.extend((0..k).map(|c| Segment {
        sv: 0,
        len: s,
        coef: c * s,
    }));
    let mut starts = try_with_capacity(k + 1, "the expansions' segments", hint)?;
    starts.extend(0..=k);
    Ok(Layout {
        coef,
        segments,
        starts,
    })
}

/// The layout of one-vs-one pairs over class-grouped support vectors (see
/// [`decision_values_pairs_controlled`]), `n_sv` of them in all.
fn pair_layout<'a>(
    ovo: &OvoPairs<'_>,
    coef: &'a [f64],
    k: usize,
    n_sv: usize,
) -> Result<Layout<'a>> {
    let OvoPairs {
        class_counts,
        pairs,
    } = *ovo;
    if pairs.len() != k {
        shape_error!(
            "there are {} pairs but {k} intercepts; give one intercept per pair",
            pairs.len()
        );
    }
    let n_classes = class_counts.len();
    let hint = "use fewer classes";
    let mut first = try_with_capacity(n_classes, "the classes' support-vector ranges", hint)?;
    let mut total = 0usize;
    for &count in class_counts {
        first.push(total);
        total = match total.checked_add(count) {
            Some(t) => t,
            None => value_error!("the class counts of support vectors overflow"),
        };
    }
    if total != n_sv {
        shape_error!(
            "the class counts add up to {total} support vectors, but there are {}",
            n_sv
        );
    }
    let mut segments = try_with_capacity(2 * k, "the pairs' segments", hint)?;
    let mut starts = try_with_capacity(k + 1, "the pairs' segments", hint)?;
    let mut offset = 0usize;
    starts.push(0);
    for (p, &(a, b)) in pairs.iter().enumerate() {
        if a >= n_classes || b >= n_classes || a == b {
            value_error!(
                "pair {p} is ({a}, {b}); a pair needs two different classes \
                 below {n_classes}"
            );
        }
        for c in [a, b] {
            segments.push(Segment {
                sv: first[c],
                len: class_counts[c],
                coef: offset,
            });
            offset += class_counts[c];
        }
        starts.push(segments.len());
    }
    if coef.len() != offset {
        shape_error!(
            "coef has {} values, expected {offset}: for each pair, one per support \
             vector of its two classes",
            coef.len()
        );
    }
    Ok(Layout {
        coef,
        segments,
        starts,
    })
}

/// A run of `len` support vectors from row `sv` on, weighted by
/// `coef[coef..coef + len]`.
#[derive(Clone, Copy, Debug)]
struct Segment {
    sv: usize,
    len: usize,
    coef: usize,
}

/// The expansions' coefficients: expansion `c` is the sum over
/// `segments[starts[c]..starts[c + 1]]`.
struct Layout<'a> {
    coef: &'a [f64],
    segments: Vec<Segment>,
    starts: Vec<usize>,
}

impl Layout<'_> {
    fn segments(&self, c: usize) -> &[Segment] {
        &self.segments[self.starts[c]..self.starts[c + 1]]
    }
}

/// The decision values of `layout`'s expansions; shapes of `coef` against
/// the support vectors are already checked.
fn decision_core(
    kind: KernelKind,
    test: &Rows,
    sv: &Rows,
    layout: &Layout<'_>,
    intercept: &[f64],
    precision: Precision,
    ctl: &Control,
) -> Result<(Vec<f64>, Precision)> {
    check_model(kind, test.d(), sv.d(), layout.coef, intercept)?;
    let k = intercept.len();
    let s = sv.n();
    let coef = layout.coef;
    let m = test.n();
    let what = format!("the {m} × {k} matrix of decision values");
    let hint = "predict fewer rows at once";
    let mut out = try_filled(checked_len::<f64>(m, k, &what, hint)?, 0.0, &what, hint)?;
    let mags = Magnitudes::of_rows(test).join(Magnitudes::of_rows(sv));
    let mut path = resolve(precision, kind, mags, None)?;
    let coef_max = coef.iter().fold(0.0f64, |a, c| a.max(c.abs()));
    // Coefficients outside float32's safe range (huge, or so small that
    // their products with the kernel values underflow) go to float64.
    let coef_outside = coef_max > F32_MAX_SAFE || (coef_max > 0.0 && coef_max < F32_MIN_SAFE);
    if path == Precision::Float32 && precision == Precision::Auto && coef_outside {
        path = Precision::Float64;
    }
    if k == 0 || m == 0 {
        return Ok((out, path));
    }
    if path == Precision::Float64 {
        decision_f64(kind, test, sv, layout, intercept, &mut out, ctl)?;
        ctl.check()?;
        return finite(out, path);
    }
    let panel = Panel::try_new(sv)?;
    let what = "the coefficients in float32";
    let mut coef32 = try_with_capacity(coef.len(), what, "use fewer support vectors")?;
    coef32.extend(coef.iter().map(|&c| c as f32));
    let ones = try_filled(
        s,
        1.0f32,
        "a row of kernel weights",
        "use fewer support vectors",
    )?;
    out.par_chunks_mut(ROWS_PER_TASK * k)
        .enumerate()
        .for_each(|(block, chunk)| {
            if ctl.is_cancelled() {
                return;
            }
            let first = block * ROWS_PER_TASK;
            let ctx = Context {
                kind,
                panel: &panel,
                layout,
                coef: &coef32,
                intercept,
                ones: &ones,
            };
            decision_block(&ctx, test, first, chunk);
        });
    ctl.check()?;
    finite(out, path)
}

/// The decision values, or an error when a sum overflowed.
fn finite(out: Vec<f64>, path: Precision) -> Result<(Vec<f64>, Precision)> {
    if out.iter().any(|v| !v.is_finite()) {
        value_error!(
            "decision values overflow float64: the coefficients times the kernel values \
             exceed about 1.8e308"
        );
    }
    Ok((out, path))
}

/// Support vectors per range of the `Float64` path: the range's panels
/// (`8·d` bytes per support vector) stay within about 512 KiB of the L2
/// cache while the task's rows pass over them, and the task's kernel values
/// against the range (`ROWS_PER_TASK` rows) within 512 KiB more. A multiple
/// of [`BLOCK`], from one to four of them.
fn sv_block64(d: usize) -> usize {
    (64 * 1024 / d.max(1) / BLOCK * BLOCK).clamp(BLOCK, 4 * BLOCK)
}

/// [`decision_values_controlled`]'s `Float64` path, blocked over the support
/// vectors as the `Float32` path is: for each task of [`ROWS_PER_TASK`]
/// test rows, the support vectors go in ranges of [`sv_block64`]; the
/// kernel values of all the task's rows against a range come from
/// [`KernelRowsAgainst::fill_range`] (several dense rows per pass over the
/// range, fused multiply-adds, RBF in the norm form where it is exact or
/// accurate to 2⁻³⁸ in the exponent, else from the differences), and every
/// expansion's coefficients over the range are then applied to all of them
/// ([`apply_range64`]) while both are in cache. Each expansion's sum over
/// its support vectors is taken in chunks of at most [`BLOCK`] in `f64`
/// (16 lanes each, [`dot64`]) added in order to the intercept; a row's
/// value does not depend on the other rows.
fn decision_f64(
    kind: KernelKind,
    test: &Rows,
    sv: &Rows,
    layout: &Layout<'_>,
    intercept: &[f64],
    out: &mut [f64],
    ctl: &Control,
) -> Result<()> {
    let (k, s) = (intercept.len(), sv.n());
    let hint = "use fewer support vectors";
    let against = KernelRowsAgainst::for_ranges(kind, sv, hint)?;
    let step = sv_block64(sv.d());
    let stride = step.min(s);
    // Each worker keeps its buffer of kernel values from task to task: a
    // fresh 512 KiB buffer per task was fresh memory whose pages the
    // operating system zeroed on first touch (a tenth of the time on
    // ijcnn1).
    out.par_chunks_mut(ROWS_PER_TASK * k)
        .enumerate()
        .try_for_each_init(Vec::new, |kv, (block, chunk)| -> Result<()> {
            if ctl.is_cancelled() {
                return Ok(());
            }
            let rows = chunk.len() / k;
            let prepared = against.prepare(test, block * ROWS_PER_TASK, rows)?;
            let what = "the kernel values of a block of rows";
            let len = checked_len::<f64>(rows, stride, what, hint)?;
            if kv.len() < len {
                *kv = try_filled(len, 0.0f64, what, hint)?;
            }
            let kv = &mut kv[..len];
            for row_out in chunk.chunks_mut(k) {
                row_out.copy_from_slice(intercept);
            }
            for b0 in (0..s).step_by(step) {
                let b1 = (b0 + step).min(s);
                against.fill_range(test, &prepared, b0..b1, kv, stride)?;
                apply_range64(layout, kv, stride, b0, b1, chunk);
            }
            Ok(())
        })
}

simd::multiversion! {
    /// `out[r·k + c] += Σ coef_c · kv_r` over the support vectors `b0..b1`
    /// of expansion `c`'s segments, for the kernel values `kv` of the rows
    /// against them (row `r` at `kv[r·stride..]`, `k` values per row of
    /// `out`): in chunks of the segment's grid of [`BLOCK`] (cut at `b0`
    /// and `b1`), each chunk's products summed over 16 lanes ([`dot64`])
    /// and added in order; each chunk of coefficients is applied to every
    /// row in turn while it is in cache.
    fn apply_range64, fn apply_range64_impl(
        layout: &Layout<'_>,
        kv: &[f64],
        stride: usize,
        b0: usize,
        b1: usize,
        out: &mut [f64],
    ) {
        let k = layout.starts.len() - 1;
        for c in 0..k {
            for seg in layout.segments(c) {
                let (lo, hi) = (seg.sv.max(b0), (seg.sv + seg.len).min(b1));
                let mut t = lo;
                while t < hi {
                    let next = (seg.sv + ((t - seg.sv) / BLOCK + 1) * BLOCK).min(hi);
                    let cb = &layout.coef[seg.coef + (t - seg.sv)..seg.coef + (next - seg.sv)];
                    for (r, row_out) in out.chunks_mut(k).enumerate() {
                        let at = r * stride + (t - b0);
                        row_out[c] += dot64::<FMA>(cb, &kv[at..at + (next - t)]);
                    }
                    t = next;
                }
            }
        }
    }
}

/// Lanes of [`dot_lanes`].
const DOT_LANES: usize = 16;

/// A float type's `a·b + c`, fused when `FMA` ([`simd::fmadd`],
/// [`simd::fmadd64`]).
trait MulAdd: Copy + Default {
    fn mul_add<const FMA: bool>(a: Self, b: Self, c: Self) -> Self;
}

impl MulAdd for f32 {
    #[inline(always)]
    fn mul_add<const FMA: bool>(a: f32, b: f32, c: f32) -> f32 {
        simd::fmadd::<FMA>(a, b, c)
    }
}

impl MulAdd for f64 {
    #[inline(always)]
    fn mul_add<const FMA: bool>(a: f64, b: f64, c: f64) -> f64 {
        simd::fmadd64::<FMA>(a, b, c)
    }
}

/// `Σ a_i b_i` over [`DOT_LANES`] independent lanes (so it vectorises),
/// each step a [`MulAdd`]: the lanes' sums and the remainder's, for the
/// caller to add up in its own order.
#[inline(always)]
fn dot_lanes<const FMA: bool, T: MulAdd>(a: &[T], b: &[T]) -> ([T; DOT_LANES], T) {
    let mut acc = [T::default(); DOT_LANES];
    let (ca, cb) = (a.chunks_exact(DOT_LANES), b.chunks_exact(DOT_LANES));
    let mut tail = T::default();
    for (&x, &y) in ca.remainder().iter().zip(cb.remainder()) {
        tail = T::mul_add::<FMA>(x, y, tail);
    }
    for (x, y) in ca.zip(cb) {
        for l in 0..DOT_LANES {
            acc[l] = T::mul_add::<FMA>(x[l], y[l], acc[l]);
        }
    }
    (acc, tail)
}

/// `Σ a_i b_i` in `f64` ([`dot_lanes`], lanes summed pairwise), with fused
/// multiply-adds where the processor has them.
#[inline(always)]
fn dot64<const FMA: bool>(a: &[f64], b: &[f64]) -> f64 {
    let (acc, tail) = dot_lanes::<FMA, f64>(a, b);
    simd::sum_lanes(acc) + tail
}

/// What every block of test rows shares.
struct Context<'a> {
    kind: KernelKind,
    panel: &'a Panel,
    layout: &'a Layout<'a>,
    /// `layout.coef` in `f32`.
    coef: &'a [f32],
    intercept: &'a [f64],
    ones: &'a [f32],
}

simd::multiversion! {
    /// Decision values of test rows `first..` into `out` (`k` per row).
    ///
    /// The support vectors go in blocks of [`SV_BLOCK`], the outer loop: a
    /// block's panel rows (`SV_BLOCK · d` floats) stay in cache while the
    /// kernel values of every test row of the task against them are formed
    /// (four rows per pass over the block), and each expansion's
    /// coefficients for the block are then applied to all those rows. So
    /// the panel and the coefficients are read from memory once per task,
    /// not once per test row. A row's sum over a segment is summed in `f32`
    /// within each block (at most [`BLOCK`] values) and in `f64` across
    /// blocks, in the same order whatever the other rows of the task.
    fn decision_block, fn decision_block_impl(
        ctx: &Context<'_>,
        test: &Rows,
        first: usize,
        out: &mut [f64],
    ) {
        let k = ctx.intercept.len();
        let s = ctx.panel.n();
        let rows = out.len() / k;
        let queries: Vec<Query> = (0..rows)
            .map(|r| Query::new(test.row(first + r).iter().map(|&v| v as f32).collect()))
            .collect();
        for row_out in out.chunks_mut(k) {
            row_out.copy_from_slice(ctx.intercept);
        }
        let mut kv = vec![0.0f32; rows * SV_BLOCK];
        for b0 in (0..s).step_by(SV_BLOCK) {
            let b1 = (b0 + SV_BLOCK).min(s);
            let len = b1 - b0;
            let mut chunks = kv.chunks_mut(SV_BLOCK);
            let mut r = 0;
            while r + 4 <= rows {
                let outs: [&mut [f32]; 4] =
                    std::array::from_fn(|_| &mut chunks.next().unwrap()[..len]);
                let qs = [&queries[r], &queries[r + 1], &queries[r + 2], &queries[r + 3]];
                fill_four_impl::<FMA>(ctx.kind, ctx.panel, qs, [1.0; 4], ctx.ones, b0, b1, outs);
                r += 4;
            }
            for (q, kv_row) in queries[r..].iter().zip(chunks) {
                fill_one_impl::<FMA>(ctx.kind, ctx.panel, q, 1.0, ctx.ones, b0, b1, &mut kv_row[..len]);
            }
            for c in 0..k {
                for seg in ctx.layout.segments(c) {
                    let lo = seg.sv.max(b0);
                    let hi = (seg.sv + seg.len).min(b1);
                    if lo >= hi {
                        continue;
                    }
                    let cb = &ctx.coef[seg.coef + (lo - seg.sv)..seg.coef + (hi - seg.sv)];
                    for (kv_row, row_out) in kv.chunks(SV_BLOCK).zip(out.chunks_mut(k)) {
                        let kb = &kv_row[lo - b0..hi - b0];
                        let mut sum = 0.0f64;
                        for (cc, kk) in cb.chunks(BLOCK).zip(kb.chunks(BLOCK)) {
                            sum += f64::from(dot32::<FMA>(cc, kk));
                        }
                        row_out[c] += sum;
                    }
                }
            }
        }
    }
}

/// `Σ a_i b_i` in `f32` ([`dot_lanes`], lanes summed in order).
#[inline(always)]
fn dot32<const FMA: bool>(a: &[f32], b: &[f32]) -> f32 {
    let (acc, tail) = dot_lanes::<FMA, f32>(a, b);
    acc.iter().sum::<f32>() + tail
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::kernel_value;

    #[test]
    fn linear_expansion_is_a_dot_product() {
        let sv = Rows::new(vec![1.0, 0.0, 0.0, 1.0], 2, 2).unwrap();
        let test = Rows::new(vec![2.0, 3.0, -1.0, 1.0, 0.0, 0.0], 3, 2).unwrap();
        // f(x) = 2·x₀ − x₁ + 0.5
        let out = decision_values(KernelKind::Linear, &test, &sv, &[2.0, -1.0], &[0.5]).unwrap();
        assert_eq!(out, vec![1.5, -2.5, 0.5]);
    }

    #[test]
    fn float64_path_matches_the_formula_and_survives_extreme_data() {
        let kind = KernelKind::Rbf { gamma: 0.5 };
        let sv = Rows::new(vec![0.0, 1.0, 1.0, 0.5], 2, 2).unwrap();
        let test = Rows::new(vec![0.2, 0.9, -1.0, 3.0], 2, 2).unwrap();
        let coef = [1.5, -0.5];
        let want: Vec<f64> = (0..2)
            .map(|r| {
                let x = test.row(r);
                0.25 + (0..2)
                    .map(|s| coef[s] * (-0.5 * sq_dist_ref(x, sv.row(s))).exp())
                    .sum::<f64>()
            })
            .collect();
        // The model's values on `test` rows in `precision`.
        let values = |kind, test: &Rows, sv: &Rows, precision| {
            let ctl = Control::none();
            decision_values_controlled(kind, test, sv, &coef, &[0.25], precision, &ctl)
        };
        let (f32_out, p32) = values(kind, &test, &sv, Precision::Auto).unwrap();
        assert_eq!(p32, Precision::Float32);
        let (f64_out, p64) = values(kind, &test, &sv, Precision::Float64).unwrap();
        assert_eq!(p64, Precision::Float64);
        for r in 0..2 {
            assert!((f64_out[r] - want[r]).abs() < 1e-14);
            assert!((f32_out[r] - want[r]).abs() < 1e-6);
        }
        // The same model on data × 1e150 (γ scaled to match): f32 cannot
        // hold it, so Auto computes in f64 and gets the same values.
        let big = |r: &Rows| {
            let v: Vec<f64> = (0..r.n())
                .flat_map(|i| r.row(i).to_vec())
                .map(|v| v * 1e150)
                .collect();
            Rows::new(v, r.n(), r.d()).unwrap()
        };
        let scaled = KernelKind::Rbf { gamma: 0.5e-300 };
        let (out, p) = values(scaled, &big(&test), &big(&sv), Precision::Auto).unwrap();
        assert_eq!(p, Precision::Float64);
        for r in 0..2 {
            assert!(
                (out[r] - want[r]).abs() < 1e-12,
                "{} vs {}",
                out[r],
                want[r]
            );
        }
        let err = values(scaled, &big(&test), &big(&sv), Precision::Float32).unwrap_err();
        assert!(err.to_string().contains("float32"), "{err}");
    }

    #[test]
    fn float32_rows_together_give_each_row_alone() {
        // 2000 support vectors span several blocks with a ragged last one;
        // 11 test rows go four at a time (the AVX-512 loop) and one by one
        // for the rest. Every row must match its own one-row call bit for
        // bit, for each kernel and for rows with many zeros (dot products).
        let (s, d) = (2000, 7);
        let sv: Vec<f64> = (0..s * d).map(wiggle).collect();
        let sv = Rows::new(sv, s, d).unwrap();
        let coef: Vec<f64> = (0..2 * s).map(|i| wiggle(i + 77)).collect();
        let kinds = [
            KernelKind::Rbf { gamma: 0.3 },
            KernelKind::Linear,
            KernelKind::Sigmoid {
                gamma: 0.1,
                coef0: 0.2,
            },
        ];
        for kind in kinds {
            // The model's values on `rows` in `f32`.
            let values = |rows: &Rows| {
                let ctl = Control::none();
                let intercept = [0.5, -0.5];
                decision_values_controlled(
                    kind,
                    rows,
                    &sv,
                    &coef,
                    &intercept,
                    Precision::Float32,
                    &ctl,
                )
            };
            for sparse in [false, true] {
                let m = 11;
                let test: Vec<f64> = (0..m * d)
                    .map(|i| {
                        if sparse && i % 3 != 0 {
                            0.0
                        } else {
                            wiggle(i + 5000)
                        }
                    })
                    .collect();
                let rows = Rows::new(test.clone(), m, d).unwrap();
                let (all, path) = values(&rows).unwrap();
                assert_eq!(path, Precision::Float32);
                for r in 0..m {
                    let one = Rows::new(test[r * d..(r + 1) * d].to_vec(), 1, d).unwrap();
                    let (alone, _) = values(&one).unwrap();
                    for c in 0..2 {
                        assert_eq!(
                            all[r * 2 + c].to_bits(),
                            alone[c].to_bits(),
                            "{kind:?}, sparse {sparse}, row {r}"
                        );
                        let exact: f64 = (0..s)
                            .map(|t| {
                                coef[c * s + t]
                                    * kernel_value(
                                        kind,
                                        one.row(0),
                                        sv.row(t),
                                        one.sq_norm(0),
                                        sv.sq_norm(t),
                                    )
                            })
                            .sum::<f64>()
                            + [0.5, -0.5][c];
                        assert!((alone[c] - exact).abs() < 1e-3, "{} vs {exact}", alone[c]);
                    }
                }
            }
        }
    }

    #[test]
    fn float64_rows_together_give_each_row_alone() {
        // 700 support vectors over several ranges of the blocked loop (and
        // one-vs-one segments cut by them), 70 test rows over two tasks:
        // dense rows in groups, sparse ones in packs, rows far from the
        // origin from the differences. Every row must match its own
        // one-row call bit for bit.
        let (s, d, m) = (700, 9, 70);
        let sv = Rows::new((0..s * d).map(wiggle).collect(), s, d).unwrap();
        let test: Vec<f64> = (0..m * d)
            .map(|i| match (i / d) % 4 {
                1 if i % 3 != 0 => 0.0,
                3 if i / d > 60 => wiggle(i + 5000) + 3e4,
                _ => wiggle(i + 5000),
            })
            .collect();
        let rows = Rows::new(test.clone(), m, d).unwrap();
        let counts = [300usize, 150, 250];
        let pairs = [(0usize, 1usize), (0, 2), (1, 2)];
        let n_coef: usize = pairs.iter().map(|&(a, b)| counts[a] + counts[b]).sum();
        let coef: Vec<f64> = (0..n_coef).map(|i| wiggle(i + 77)).collect();
        let intercept = [0.5, -0.5, 0.25];
        let ctl = Control::none();
        for kind in [KernelKind::Rbf { gamma: 0.3 }, KernelKind::Linear] {
            let run = |x: &Rows| {
                decision_values_pairs_controlled(
                    kind,
                    x,
                    &sv,
                    &OvoPairs {
                        class_counts: &counts,
                        pairs: &pairs,
                    },
                    &coef,
                    &intercept,
                    Precision::Float64,
                    &ctl,
                )
                .unwrap()
                .0
            };
            let all = run(&rows);
            for r in 0..m {
                let one = Rows::new(test[r * d..(r + 1) * d].to_vec(), 1, d).unwrap();
                let alone = run(&one);
                for c in 0..3 {
                    assert_eq!(
                        all[r * 3 + c].to_bits(),
                        alone[c].to_bits(),
                        "{kind:?}, row {r}"
                    );
                }
            }
        }
    }

    fn sq_dist_ref(a: &[f64], b: &[f64]) -> f64 {
        a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
    }

    /// A deterministic pseudo-random value in [-1, 1) from `i`.
    fn wiggle(i: usize) -> f64 {
        let h = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 11;
        (h as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    }

    /// `a + b` as a rounded sum and its exact rounding error (Knuth's TwoSum).
    fn two_sum(a: f64, b: f64) -> (f64, f64) {
        let s = a + b;
        let bb = s - a;
        (s, (a - (s - bb)) + (b - bb))
    }

    /// `Σ values` to within one rounding of the exact sum: each addition's
    /// error is carried in a second sum (Ogita, Rump & Oishi, "Accurate Sum
    /// and Dot Product", SIAM J. Sci. Comput. 26(6), 2005, Sum2).
    fn exact_sum(values: impl IntoIterator<Item = f64>) -> f64 {
        let (mut s, mut e) = (0.0f64, 0.0f64);
        for v in values {
            let (t, err) = two_sum(s, v);
            s = t;
            e += err;
        }
        s + e
    }

    #[test]
    fn float64_path_is_within_its_error_bound_of_the_exact_sum() {
        // RBF over 5 000 support vectors with coefficients of one sign (the
        // hardest case for a running sum) and test rows not a multiple of
        // any block size.
        let (s, d, m) = (5_000, 7, 101);
        let kind = KernelKind::Rbf { gamma: 0.05 };
        let sv = Rows::new((0..s * d).map(wiggle).collect(), s, d).unwrap();
        let test = Rows::new((0..m * d).map(|i| wiggle(i + 77_777)).collect(), m, d).unwrap();
        let coef: Vec<f64> = (0..s).map(|t| 1.0 + 0.5 * wiggle(t + 31)).collect();
        let intercept = [0.125];
        let (got, path) = decision_values_controlled(
            kind,
            &test,
            &sv,
            &coef,
            &intercept,
            Precision::Float64,
            &Control::none(),
        )
        .unwrap();
        assert_eq!(path, Precision::Float64);
        let u = f64::EPSILON / 2.0;
        // First-order worst case of the path: 2 ulp in each RBF value, a
        // block's lane sums of BLOCK/16 products, 4 pairwise steps, a tail of
        // up to 15 products, and a running sum over the blocks.
        let bound = (4 + BLOCK / 16 + 4 + 15 + s.div_ceil(BLOCK) + 2) as f64 * u;
        let (mut err_new, mut err_running) = (0.0f64, 0.0f64);
        for (r, &value) in got.iter().enumerate() {
            let x = test.row(r);
            let kv: Vec<f64> = (0..s)
                .map(|t| (-0.05 * sq_dist_ref(x, sv.row(t))).exp())
                .collect();
            // The products c·k exactly as a sum of two doubles each.
            let exact = exact_sum(std::iter::once(intercept[0]).chain((0..s).flat_map(|t| {
                let p = coef[t] * kv[t];
                [p, coef[t].mul_add(kv[t], -p)]
            })));
            let magnitude: f64 =
                intercept[0].abs() + (0..s).map(|t| (coef[t] * kv[t]).abs()).sum::<f64>();
            let e = (value - exact).abs();
            assert!(
                e <= bound * magnitude,
                "row {r}: {value} vs exact {exact}, error {e:e} over the bound {:e}",
                bound * magnitude
            );
            // A plain running sum of the scalar kernel values, for scale.
            let running = intercept[0] + (0..s).map(|t| coef[t] * kv[t]).sum::<f64>();
            err_new += e;
            err_running += (running - exact).abs();
        }
        println!("total error {err_new:e}, running sum {err_running:e}");
        assert!(
            err_new <= err_running,
            "total error {err_new:e} against {err_running:e} for a running sum"
        );
    }

    /// Four classes with 3, 1, 4 and 2 support vectors, and all six pairs.
    fn four_classes() -> ([usize; 4], Vec<(usize, usize)>) {
        let pairs = (0..4)
            .flat_map(|a| (a + 1..4).map(move |b| (a, b)))
            .collect();
        ([3, 1, 4, 2], pairs)
    }

    #[test]
    fn pair_layout_matches_the_dense_expansion() {
        let (counts, pairs) = four_classes();
        let (s, d, m) = (10, 3, 70);
        let sv = Rows::new((0..s * d).map(wiggle).collect(), s, d).unwrap();
        let test = Rows::new((0..m * d).map(|i| wiggle(i + 1000)).collect(), m, d).unwrap();
        let first = [0usize, 3, 4, 8];
        let k = pairs.len();
        let mut compact = Vec::new();
        let mut dense = vec![0.0; k * s];
        for (p, &(a, b)) in pairs.iter().enumerate() {
            for c in [a, b] {
                for t in first[c]..first[c] + counts[c] {
                    let v = wiggle(7 * p + 13 * t + 5000);
                    compact.push(v);
                    dense[p * s + t] = v;
                }
            }
        }
        let intercept: Vec<f64> = (0..k).map(|p| wiggle(p + 9000)).collect();
        let ovo = OvoPairs {
            class_counts: &counts,
            pairs: &pairs,
        };
        let kinds = crate::testing::KINDS;
        for kind in kinds {
            for precision in [Precision::Float32, Precision::Float64] {
                let ctl = Control::none();
                let (want, p1) = decision_values_controlled(
                    kind, &test, &sv, &dense, &intercept, precision, &ctl,
                )
                .unwrap();
                let (got, p2) = decision_values_pairs_controlled(
                    kind, &test, &sv, &ovo, &compact, &intercept, precision, &ctl,
                )
                .unwrap();
                assert_eq!(p1, p2);
                assert_eq!(got.len(), m * k);
                for (g, w) in got.iter().zip(&want) {
                    assert!(
                        (g - w).abs() < 1e-5 * (1.0 + w.abs()),
                        "{kind:?}: {g} vs {w}"
                    );
                }
            }
        }
    }

    #[test]
    fn pair_layout_shapes_are_checked() {
        let sv = Rows::new(vec![1.0, 0.0, 0.0, 1.0, 1.0, 1.0], 3, 2).unwrap();
        let test = Rows::new(vec![1.0, 0.0], 1, 2).unwrap();
        let run = |counts: &[usize], pairs: &[(usize, usize)], coef: &[f64], b: &[f64]| {
            decision_values_pairs_controlled(
                KernelKind::Linear,
                &test,
                &sv,
                &OvoPairs {
                    class_counts: counts,
                    pairs,
                },
                coef,
                b,
                Precision::Auto,
                &Control::none(),
            )
        };
        assert!(run(&[1, 1, 1], &[(0, 1)], &[1.0, -1.0], &[0.0]).is_ok());
        // Counts that miss a support vector, a class out of range, a pair of
        // one class, too few coefficients, too few intercepts.
        assert!(run(&[1, 1], &[(0, 1)], &[1.0, -1.0], &[0.0]).is_err());
        assert!(run(&[1, 1, 1], &[(0, 3)], &[1.0, -1.0], &[0.0]).is_err());
        assert!(run(&[1, 1, 1], &[(1, 1)], &[1.0, -1.0], &[0.0]).is_err());
        assert!(run(&[1, 1, 1], &[(0, 1)], &[1.0], &[0.0]).is_err());
        assert!(run(&[1, 1, 1], &[(0, 1)], &[1.0, -1.0], &[]).is_err());
    }

    /// A CSR copy of dense rows (zeros dropped).
    fn to_csr(r: &Rows) -> CsrRows {
        let (mut v, mut idx, mut ptr) = (vec![], vec![], vec![0i64]);
        for i in 0..r.n() {
            for (c, &x) in r.row(i).iter().enumerate() {
                if x != 0.0 {
                    v.push(x);
                    idx.push(c as i64);
                }
            }
            ptr.push(v.len() as i64);
        }
        CsrRows::from_parts(&v, &idx, &ptr, r.n(), r.d()).unwrap()
    }

    #[test]
    fn sparse_paths_match_the_dense_float64_ones() {
        let (counts, pairs) = four_classes();
        let (s, d, m) = (10, 5, 70);
        // Every other entry zero, so the sparse rows really are sparse.
        let val = |i: usize| if i.is_multiple_of(2) { 0.0 } else { wiggle(i) };
        let sv = Rows::new((0..s * d).map(val).collect(), s, d).unwrap();
        let test = Rows::new((0..m * d).map(|i| val(i + 1001)).collect(), m, d).unwrap();
        let (sv_s, test_s) = (to_csr(&sv), to_csr(&test));
        let k = pairs.len();
        let compact: Vec<f64> = (0..2 * s * k).map(|i| wiggle(i + 77)).collect();
        let intercept: Vec<f64> = (0..k).map(|p| wiggle(p + 9000)).collect();
        let mut n_coef = 0;
        for &(a, b) in &pairs {
            n_coef += counts[a] + counts[b];
        }
        let compact = &compact[..n_coef];
        let dense_coef: Vec<f64> = (0..k * s).map(|i| wiggle(i + 3)).collect();
        let ovo = OvoPairs {
            class_counts: &counts,
            pairs: &pairs,
        };
        let ctl = Control::none();
        for kind in crate::testing::KINDS {
            let (want, _) = decision_values_controlled(
                kind,
                &test,
                &sv,
                &dense_coef,
                &intercept,
                Precision::Float64,
                &ctl,
            )
            .unwrap();
            let got = decision_values_sparse(kind, &test_s, &sv_s, &dense_coef, &intercept, &ctl)
                .unwrap();
            let (want_p, _) = decision_values_pairs_controlled(
                kind,
                &test,
                &sv,
                &ovo,
                compact,
                &intercept,
                Precision::Float64,
                &ctl,
            )
            .unwrap();
            let got_p =
                decision_values_pairs_sparse(kind, &test_s, &sv_s, &ovo, compact, &intercept, &ctl)
                    .unwrap();
            for (g, w) in got.iter().zip(&want).chain(got_p.iter().zip(&want_p)) {
                assert!(
                    (g - w).abs() < 1e-12 * (1.0 + w.abs()),
                    "{kind:?}: {g} vs {w}"
                );
            }
        }
        let narrow = to_csr(&Rows::new(vec![1.0; 4], 1, 4).unwrap());
        let err = decision_values_sparse(
            KernelKind::Linear,
            &narrow,
            &sv_s,
            &dense_coef[..s],
            &[0.0],
            &ctl,
        )
        .unwrap_err();
        assert!(err.to_string().contains("features"), "{err}");
    }

    #[test]
    fn shapes_are_checked() {
        let sv = Rows::new(vec![1.0, 0.0], 1, 2).unwrap();
        let test = Rows::new(vec![1.0, 0.0, 0.0], 1, 3).unwrap();
        assert!(decision_values(KernelKind::Linear, &test, &sv, &[1.0], &[0.0]).is_err());
        let test = Rows::new(vec![1.0, 0.0], 1, 2).unwrap();
        assert!(decision_values(KernelKind::Linear, &test, &sv, &[1.0, 2.0], &[0.0]).is_err());
    }
}
