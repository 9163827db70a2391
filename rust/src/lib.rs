//! The Rust core of localsvm: pure solvers (no Python), one folder per
//! algorithm, and thin PyO3 bindings behind the `python` feature.
//!
//! - [`kernel`]: kernel functions over contiguous rows, dense and CSR, the
//!   column fills and blocked products, and [`precision`] (the choice
//!   between the `f32` and `f64` kernel paths).
//! - [`solver`]: the dual solver, split as LIBSVM splits it: an LRU
//!   [`solver::cache`] of kernel columns bounded in bytes, the dual's
//!   Hessian served through it ([`solver::qmatrix`]), SMO with second-order
//!   working-set selection and shrinking ([`solver::smo`], [`solver::wss`]),
//!   the batched working-set rounds of large problems ([`solver::batched`]),
//!   coordinate descent for box-only duals ([`solver::boxqp`]), the gradient
//!   at a warm start ([`solver::gradient`]) and the entry point for a dual
//!   over a kernel source ([`solver::problem`]: validation, warm starts,
//!   subset optimisation).
//! - [`predict`]: decision values of kernel expansions.
//! - [`local`]: localized SVMs, one box-weighted dual per query, and their
//!   linear primal by Newton steps ([`local::primal`]).
//! - [`incremental`]: LISVM, an online SVM learnt one example at a time by
//!   local updates.
//! - [`flsa`]: forward least-squares selection of kernel columns for the
//!   FLSA-SVM, with its blocked Gram–Schmidt products ([`flsa::blocks`]).
//! - [`runtime`]: the two-thread [`runtime::team`] a large solve fills its
//!   columns and runs its scans with, and [`runtime::control`], which lets a
//!   caller stop any long solve ([`Error::Interrupted`]).
//! - [`numeric`]: per-instruction-set column kernels ([`numeric::simd`]) and
//!   small dense linear algebra ([`numeric::dense`]).
//!
//! The `python` feature adds the PyO3 bindings in `python/`, the only module
//! that touches Python.

pub mod error;
pub mod flsa;
pub mod incremental;
pub mod kernel;
pub mod local;
pub mod numeric;
pub mod predict;
pub mod runtime;
pub mod solver;

// The kernel values' arithmetic is part of the kernel package (it depends on
// the kernel's kind and the data, and the kernel sources resolve it); the
// crate-level path stays for every module that names a precision.
pub use kernel::precision;

#[cfg(feature = "python")]
mod python;

#[cfg(test)]
mod testing;

pub use error::{Error, Result};
pub use kernel::{KernelKind, KernelSource, Rows, TrainingData};
pub use precision::Precision;
pub use runtime::control::{interrupt_all, Control};
pub use solver::problem::{Constraint, DualProblem, Solution, SolverOptions, StartGradientMode};
