//! Arithmetic shared by the algorithms: per-instruction-set column kernels
//! ([`simd`]) and small dense linear algebra ([`dense`]).

pub mod dense;
pub mod simd;
