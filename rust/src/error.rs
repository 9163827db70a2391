//! The error type shared by every solver in the crate.
//!
//! Everything that can go wrong because of the caller's input is an [`Error`]
//! with a message that names the offending argument; the Python bindings turn
//! it into a `ValueError`.

use thiserror::Error;

/// Errors reported by the solvers and kernels.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum Error {
    /// An argument has the wrong length or shape.
    #[error("{0}")]
    Shape(String),
    /// An argument has a value outside its allowed range.
    #[error("{0}")]
    Value(String),
    /// The work was cancelled through its [`crate::control::Control`]
    /// (the bindings raise `KeyboardInterrupt`).
    #[error("interrupted")]
    Interrupted,
}

/// Convenience alias used throughout the crate.
pub type Result<T> = std::result::Result<T, Error>;

/// Returns `Err(Error::Value(..))` built from a format string.
macro_rules! value_error {
    ($($arg:tt)*) => {
        return Err($crate::error::Error::Value(format!($($arg)*)))
    };
}

/// Returns `Err(Error::Shape(..))` built from a format string.
macro_rules! shape_error {
    ($($arg:tt)*) => {
        return Err($crate::error::Error::Shape(format!($($arg)*)))
    };
}

pub(crate) use shape_error;
pub(crate) use value_error;
