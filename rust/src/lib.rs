//! The Rust core of localsvm.
//!
//! Pure solver modules (no Python): [`kernel`] (kernel functions over
//! contiguous rows), [`cache`] (an LRU cache of kernel columns bounded in
//! bytes), [`qmatrix`] (the dual's Hessian served through the cache),
//! [`smo`] (SMO with second-order working-set selection and shrinking),
//! [`boxqp`] (coordinate descent for box-only duals), [`flsa`] (forward
//! least-squares selection of kernel columns for the FLSA-SVM), [`problem`] (the
//! entry point for a dual over a kernel source: validation, warm starts,
//! subset optimisation; [`local`] and [`incremental`], which keep their
//! Hessians across solves, call [`smo::solve`] on them) and
//! [`predict`] (decision values of kernel expansions), [`gradient`] (the
//! dual's gradient at a warm start, by [`predict`]'s blocked products), [`precision`] (the
//! choice between the `f32` and `f64` kernel paths), [`local`]
//! (localized SVMs: one box-weighted dual per query) and [`incremental`]
//! (LISVM: an online SVM learnt one example at a time by local updates),
//! [`team`] (the two-thread team one large solve may fill its kernel
//! columns and run its scans with);
//! [`control`] lets a caller stop any long solve ([`Error::Interrupted`]). The `python` feature
//! adds the PyO3 bindings in `python/`, the only module that touches Python.

pub mod batched;
pub mod boxqp;
pub mod cache;
pub mod control;
pub mod dense;
pub mod error;
pub mod flsa;
pub mod flsa_blocks;
pub mod gradient;
pub mod incremental;
pub mod kernel;
pub mod local;
pub mod local_primal;
pub mod predict;
pub mod problem;
pub mod qmatrix;
pub mod simd;
pub mod smo;
pub mod team;
mod vec64;
pub mod wss;

// The kernel values' arithmetic is part of the kernel package (it depends on
// the kernel's kind and the data, and the kernel sources resolve it); the
// crate-level path stays for every module that names a precision.
pub use kernel::precision;

#[cfg(feature = "python")]
mod python;

pub use control::{interrupt_all, Control};
pub use error::{Error, Result};
pub use kernel::{KernelKind, KernelSource, Rows, TrainingData};
pub use precision::Precision;
pub use problem::{Constraint, DualProblem, Solution, SolverOptions, StartGradientMode};
