//! Kernel functions and their evaluation over contiguous row-major data.
//!
//! A kernel value is always computed from the dot product of two rows and, for
//! the RBF kernel, their squared norms (precomputed once per matrix), so a whole
//! kernel column is one pass over contiguous memory with no allocation.
//!
//! - `kinds.rs`: the kernel functions and their parameters ([`KernelKind`]).
//! - `rows.rs`: row-major `f64` feature rows with their norms ([`Rows`]).
//! - `panel.rs`: the feature-major `f32` copy the vectorised loops read
//!   ([`Panel`]) and the rows columns are computed against ([`Query`]).
//! - `fill.rs`: the vectorised column loops, one build per instruction set.
//! - `source.rs`: where a solver's kernel values come from ([`KernelSource`]).
//! - `precision.rs`: the arithmetic of kernel values, `f32` or `f64`
//!   ([`precision::Precision`]), chosen from the kernel and the data.
//! - `gram.rs`: a square kernel matrix shared by many sources ([`Gram`]).
//! - `matrix.rs`: the caller's training data ([`TrainingData`]), checks and
//!   gathers of caller-supplied kernel values, and whole kernel matrices
//!   ([`kernel_matrix`]).

mod csr;
mod fill;
mod gram;
mod kinds;
mod matrix;
mod panel;
pub mod precision;
mod rows;
mod source;

pub use csr::{scratch, Csc, CsrRows};
pub(crate) use fill::{fill_four_impl, fill_one_impl};
pub use gram::{Gram, GramRow};
pub use kinds::KernelKind;
pub(crate) use matrix::values_from_dots;
pub use matrix::{
    check_indices, check_kernel_values, gather_square, kernel_matrix, kernel_matrix_or,
    kernel_matrix_with, KernelRowsAgainst, Prepared, TrainingData,
};
pub use panel::{Panel, Query};
pub(crate) use rows::check_finite;
pub use rows::{dot, kernel_value, sq_dist, Rows};
pub use source::{KernelSource, Scratch};

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
    fn sparse_source_matches_the_dense_one() {
        let (n, d) = (9, 6);
        let data: Vec<f64> = (0..n * d)
            .map(|v| {
                if v % 3 == 0 {
                    (v as f64 * 0.37).sin()
                } else {
                    0.0
                }
            })
            .collect();
        let (mut vals, mut idx, mut ptr) = (vec![], vec![], vec![0i64]);
        for r in 0..n {
            for c in 0..d {
                if data[r * d + c] != 0.0 {
                    vals.push(data[r * d + c]);
                    idx.push(c as i64);
                }
            }
            ptr.push(vals.len() as i64);
        }
        let csr = std::sync::Arc::new(CsrRows::from_parts(&vals, &idx, &ptr, n, d).unwrap());
        for kind in crate::testing::KINDS {
            let mut dense = KernelSource::dense(kind, rows(&data, d)).unwrap();
            let mut sparse = KernelSource::sparse(kind, &csr, None).unwrap();
            let swaps = [(1, 7), (0, 4)];
            dense.swap_many(&swaps);
            sparse.swap_many(&swaps);
            let scale = vec![1.0; n];
            let (mut a, mut b) = (vec![0.0; n], vec![0.0; n]);
            for i in 0..n {
                dense.fill64(i, (0, n), 2.0, &scale, &mut a);
                sparse.fill64(i, (0, n), 2.0, &scale, &mut b);
                for t in 0..n {
                    assert!((a[t] - b[t]).abs() < 1e-12, "{kind:?}");
                    assert!((sparse.eval(i, t) - dense.eval(i, t)).abs() < 1e-12);
                }
                let mut c = vec![0.0f32; n];
                sparse.fill(i, 0, n, 2.0, &vec![1.0f32; n], &mut c);
                assert!(c
                    .iter()
                    .zip(&b)
                    .all(|(x, y)| (f64::from(*x) - y).abs() < 1e-5));
                // A short range takes the gather path, a long one the
                // transpose: both give the same values.
                for start in [0, n - 2, n - 1] {
                    let mut part = vec![0.0; n - start];
                    sparse.fill64(i, (start, n), 2.0, &scale, &mut part);
                    for (k, v) in part.iter().enumerate() {
                        assert!((v - b[start + k]).abs() < 1e-12, "{kind:?} from {start}");
                    }
                }
            }
            let pick = [3, 0, 8];
            let (ds, ss) = (dense.subset(&pick).unwrap(), sparse.subset(&pick).unwrap());
            for x in 0..3 {
                for y in 0..3 {
                    assert!((ds.eval(x, y) - ss.eval(x, y)).abs() < 1e-12);
                }
            }
            assert_eq!(
                sparse
                    .precision(super::precision::Precision::Float32, 1e-3)
                    .unwrap(),
                super::precision::Precision::Float64
            );
        }
    }

    #[test]
    fn training_data_gathers_only_the_listed_rows() {
        let data: Vec<f64> = (0..24).map(|v| (v as f64 * 0.41).cos()).collect();
        let kind = KernelKind::Rbf { gamma: 0.5 };
        let x = TrainingData::new(kind, &data, 6, 4).unwrap();
        let full = KernelSource::from_data(&x, None).unwrap();
        let pick = [4, 1, 5];
        let sub = KernelSource::from_data(&x, Some(&pick)).unwrap();
        for (a, &i) in pick.iter().enumerate() {
            for (b, &j) in pick.iter().enumerate() {
                assert_eq!(sub.eval(a, b), full.eval(i, j));
            }
        }
        // A precomputed kernel: the square block, and the same block from a
        // subset of the full source.
        let gram = kernel_matrix(kind, &rows(&data, 4), &rows(&data, 4)).unwrap();
        let k = TrainingData::new(KernelKind::Precomputed, &gram, 6, 6).unwrap();
        let block = KernelSource::from_data(&k, Some(&pick)).unwrap();
        let again = KernelSource::from_data(&k, None)
            .unwrap()
            .subset(&pick)
            .unwrap();
        for a in 0..3 {
            for b in 0..3 {
                assert_eq!(block.eval(a, b), full.eval(pick[a], pick[b]));
                assert_eq!(again.eval(a, b), block.eval(a, b));
            }
        }
        // Rows left out may hold anything.
        let mut bad = data.clone();
        bad[0] = f64::NAN;
        let x = TrainingData::new(kind, &bad, 6, 4).unwrap();
        assert!(KernelSource::from_data(&x, Some(&pick)).is_ok());
        assert!(KernelSource::from_data(&x, None).is_err());
    }

    #[test]
    fn training_data_shapes_are_checked() {
        let data = vec![1.0; 6];
        let err = TrainingData::new(KernelKind::Precomputed, &data, 2, 3).unwrap_err();
        assert!(err.to_string().contains("square"));
        assert!(TrainingData::new(KernelKind::Linear, &data, 2, 2).is_err());
        let x = TrainingData::new(KernelKind::Linear, &data, 2, 3).unwrap();
        let err = KernelSource::from_data(&x, Some(&[0, 2])).unwrap_err();
        assert!(err.to_string().contains("rows index 2 is out of range"));
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
