//! The dual solver, in LIBSVM's split: [`cache`] (kernel columns, LRU,
//! bounded in bytes), [`qmatrix`] (the Hessian served through the cache),
//! [`smo`] and [`wss`] (the SMO iterations and their working-set selection),
//! [`batched`] (working sets of many pairs for large problems), [`boxqp`]
//! (box-only duals), [`gradient`] (the gradient at a warm start) and
//! [`problem`] (the entry point: a validated dual over a kernel source);
//! `vec64` holds the selection loops' explicit `f64` vectors.

pub mod batched;
pub mod boxqp;
pub mod cache;
pub mod cpath;
pub mod gradient;
pub mod problem;
pub mod qmatrix;
pub mod smo;
pub(crate) mod vec64;
pub mod wss;
