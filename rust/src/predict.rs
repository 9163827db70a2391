//! Decision values of kernel expansions `f_c(x) = Σ_s coef[c][s] K(x_s, x) + b_c`
//! for many test points at once, in parallel over test rows.

use rayon::prelude::*;

use crate::error::{shape_error, Result};
use crate::kernel::{fill_one_impl, KernelKind, Panel, Query, Rows};
use crate::simd;

/// Test rows handed to one rayon task.
const ROWS_PER_TASK: usize = 64;
/// Support vectors per partial sum: products are summed in `f32` within a
/// block and the blocks in `f64`.
const BLOCK: usize = 256;

/// Decision values, row-major `m × k` for `m` test rows and `k` expansions.
///
/// `coef` is row-major `k × s` (one row per expansion over the `s` support
/// vectors), `intercept` has `k` entries. Kernel values come from the same
/// vectorised `f32` loops as the solver's columns (the support vectors as a
/// feature-major panel, each test row a query), in parallel over test rows.
pub fn decision_values(
    kind: KernelKind,
    test: &Rows,
    sv: &Rows,
    coef: &[f64],
    intercept: &[f64],
) -> Result<Vec<f64>> {
    kind.require_function("decision_values")?;
    if test.d() != sv.d() {
        shape_error!(
            "X has {} features, but the model was fitted with {} features",
            test.d(),
            sv.d()
        );
    }
    let k = intercept.len();
    let s = sv.n();
    if coef.len() != k * s {
        shape_error!(
            "coef has {} values, expected {k} expansions × {s} support vectors",
            coef.len()
        );
    }
    let m = test.n();
    let mut out = vec![0.0; m * k];
    if k == 0 || m == 0 {
        return Ok(out);
    }
    let panel = Panel::new(sv);
    let coef32: Vec<f32> = coef.iter().map(|&c| c as f32).collect();
    let ones = vec![1.0f32; s];
    out.par_chunks_mut(ROWS_PER_TASK * k)
        .enumerate()
        .for_each(|(block, chunk)| {
            let first = block * ROWS_PER_TASK;
            let ctx = Context {
                kind,
                panel: &panel,
                coef: &coef32,
                intercept,
                ones: &ones,
            };
            decision_block(&ctx, test, first, chunk);
        });
    Ok(out)
}

/// What every block of test rows shares.
struct Context<'a> {
    kind: KernelKind,
    panel: &'a Panel,
    coef: &'a [f32],
    intercept: &'a [f64],
    ones: &'a [f32],
}

simd::multiversion! {
    /// Decision values of test rows `first..` into `out` (`k` per row).
    fn decision_block, fn decision_block_impl(
        ctx: &Context<'_>,
        test: &Rows,
        first: usize,
        out: &mut [f64],
    ) {
        let k = ctx.intercept.len();
        let s = ctx.panel.n();
        let mut kv = vec![0.0f32; s];
        for (r, row_out) in out.chunks_mut(k).enumerate() {
            let q = Query::new(test.row(first + r).iter().map(|&v| v as f32).collect());
            fill_one_impl::<FMA>(ctx.kind, ctx.panel, &q, 1.0, ctx.ones, 0, s, &mut kv);
            for (c, slot) in row_out.iter_mut().enumerate() {
                let coef = &ctx.coef[c * s..(c + 1) * s];
                let mut total = ctx.intercept[c];
                for (cb, kb) in coef.chunks(BLOCK).zip(kv.chunks(BLOCK)) {
                    total += f64::from(dot32::<FMA>(cb, kb));
                }
                *slot = total;
            }
        }
    }
}

/// `Σ a_i b_i` in `f32` over 16 independent lanes (so it vectorises).
#[inline(always)]
fn dot32<const FMA: bool>(a: &[f32], b: &[f32]) -> f32 {
    const L: usize = 16;
    let mut acc = [0.0f32; L];
    let (ca, cb) = (a.chunks_exact(L), b.chunks_exact(L));
    let mut tail = 0.0f32;
    for (&x, &y) in ca.remainder().iter().zip(cb.remainder()) {
        tail = simd::fmadd::<FMA>(x, y, tail);
    }
    for (x, y) in ca.zip(cb) {
        for l in 0..L {
            acc[l] = simd::fmadd::<FMA>(x[l], y[l], acc[l]);
        }
    }
    acc.iter().sum::<f32>() + tail
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linear_expansion_is_a_dot_product() {
        let sv = Rows::new(vec![1.0, 0.0, 0.0, 1.0], 2, 2).unwrap();
        let test = Rows::new(vec![2.0, 3.0, -1.0, 1.0, 0.0, 0.0], 3, 2).unwrap();
        // f(x) = 2·x₀ − x₁ + 0.5
        let out = decision_values(KernelKind::Linear, &test, &sv, &[2.0, -1.0], &[0.5]).unwrap();
        assert_eq!(out, vec![1.5, -2.5, 0.5]);
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
