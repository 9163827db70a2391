//! Decision values of kernel expansions `f_c(x) = Σ_s coef[c][s] K(x_s, x) + b_c`
//! for many test points at once, in parallel over test rows.

use rayon::prelude::*;

use crate::error::{shape_error, value_error, Result};
use crate::kernel::{dot, KernelKind, Rows};

/// Test rows handed to one rayon task.
const ROWS_PER_TASK: usize = 64;

/// Decision values, row-major `m × k` for `m` test rows and `k` expansions.
///
/// `coef` is row-major `k × s` (one row per expansion over the `s` support
/// vectors), `intercept` has `k` entries.
pub fn decision_values(
    kind: KernelKind,
    test: &Rows,
    sv: &Rows,
    coef: &[f64],
    intercept: &[f64],
) -> Result<Vec<f64>> {
    if kind == KernelKind::Precomputed {
        value_error!("decision_values needs a kernel function, not 'precomputed'");
    }
    kind.validate()?;
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
    if k == 0 {
        return Ok(out);
    }
    out.par_chunks_mut(ROWS_PER_TASK * k)
        .enumerate()
        .for_each(|(block, chunk)| {
            let mut kv = vec![0.0f64; s];
            for (r, row_out) in chunk.chunks_mut(k).enumerate() {
                let t = block * ROWS_PER_TASK + r;
                let x = test.row(t);
                let sq = test.sq_norm(t);
                for (v, j) in kv.iter_mut().zip(0..s) {
                    *v = kind.from_dot(dot(x, sv.row(j)), sq, sv.sq_norm(j));
                }
                for (c, slot) in row_out.iter_mut().enumerate() {
                    *slot = dot(&coef[c * s..(c + 1) * s], &kv) + intercept[c];
                }
            }
        });
    Ok(out)
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
