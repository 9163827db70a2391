//! PyO3 bindings: the only module that sees Python. Arrays are borrowed from
//! numpy, copied once into the solver's own row-major buffers, and the work
//! runs with the GIL released on a thread of rayon's pool while the caller
//! waits in short slices, checking for signals between them: Ctrl-C cancels
//! the work's [`Control`] and raises `KeyboardInterrupt` once it has stopped.
//! Input errors become `ValueError`, a failed input-sized allocation
//! `MemoryError`; a panic (a bug) becomes `RuntimeError` instead of aborting
//! the interpreter.
//!
//! One file per domain, each binding its solver module and no other:
//! [`qp`] (`solve_qp`, `dual_gradient`), [`local`] (`solve_local`),
//! [`flsa`] (`flsa_path`, its staged decision values), [`incremental`]
//! (`IncrementalLearner`), [`predict`] (`kernel_matrix`, decision values);
//! all of them run their work through [`runner`] and take their inputs
//! through [`convert`].

mod convert;
mod flsa;
mod incremental;
mod local;
mod predict;
mod qp;
mod runner;
mod tune;

use pyo3::prelude::*;

use crate::runtime::control::{interrupt_all as interrupt_all_rs, Control};
use runner::detached;

/// Stops every solve, kernel build and prediction of the core running now,
/// in any thread: each returns `KeyboardInterrupt` soon after. Work started
/// after the call is not affected.
#[pyfunction]
fn interrupt_all() {
    interrupt_all_rs();
}

/// Test-only: panics inside [`detached`], so that a test can check that a
/// panic in the core reaches Python as `RuntimeError` and leaves the
/// interpreter usable. Not part of the API.
#[pyfunction]
fn _raise_internal_panic(py: Python<'_>) -> PyResult<()> {
    detached(py, |_ctl: &Control| -> crate::Result<()> {
        panic!("deliberate panic raised by _raise_internal_panic (test-only)")
    })
}

/// The instruction set the hot loops run with: "avx512", "avx2" or "baseline".
#[pyfunction]
fn simd_level() -> &'static str {
    match crate::numeric::simd::level() {
        crate::numeric::simd::Level::Avx512 => "avx512",
        crate::numeric::simd::Level::Avx2 => "avx2",
        crate::numeric::simd::Level::Baseline => "baseline",
    }
}

/// The compiled core of localsvm.
#[pymodule]
#[pyo3(name = "_core")]
fn core_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(qp::solve_qp, m)?)?;
    m.add_function(wrap_pyfunction!(qp::solve_qp_many, m)?)?;
    m.add_function(wrap_pyfunction!(qp::dual_gradient, m)?)?;
    m.add_function(wrap_pyfunction!(predict::kernel_matrix, m)?)?;
    m.add_function(wrap_pyfunction!(predict::decision_values, m)?)?;
    m.add_function(wrap_pyfunction!(predict::decision_values_ovo, m)?)?;
    m.add_function(wrap_pyfunction!(local::solve_local, m)?)?;
    m.add_function(wrap_pyfunction!(flsa::flsa_path, m)?)?;
    m.add_function(wrap_pyfunction!(flsa::flsa_staged, m)?)?;
    m.add_function(wrap_pyfunction!(flsa::flsa_staged_correct, m)?)?;
    m.add_function(wrap_pyfunction!(tune::c_path, m)?)?;
    m.add_function(wrap_pyfunction!(simd_level, m)?)?;
    m.add_function(wrap_pyfunction!(interrupt_all, m)?)?;
    m.add_function(wrap_pyfunction!(_raise_internal_panic, m)?)?;
    m.add_class::<convert::CsrMatrix>()?;
    m.add_class::<convert::Kernel>()?;
    m.add_class::<convert::SolverSettings>()?;
    m.add_class::<qp::QPResult>()?;
    m.add_class::<qp::QPOptions>()?;
    m.add_class::<qp::QPConstraint>()?;
    m.add_class::<qp::QPSolver>()?;
    m.add_class::<local::LocalSolve>()?;
    m.add_class::<local::LocalPrimal>()?;
    m.add_class::<flsa::FLSAOptions>()?;
    m.add_class::<flsa::FLSASelection>()?;
    m.add_class::<flsa::FLSAGram>()?;
    m.add_class::<tune::CPathFold>()?;
    m.add_class::<tune::KernelMatrix>()?;
    m.add_class::<tune::CPathResult>()?;
    m.add_class::<local::LocalResult>()?;
    m.add_class::<flsa::FLSAResult>()?;
    m.add_class::<incremental::LearnResult>()?;
    m.add_class::<incremental::LearnOptions>()?;
    m.add_class::<incremental::IncrementalLearner>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
