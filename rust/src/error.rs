//! The error type shared by every solver in the crate.
//!
//! Everything that can go wrong because of the caller's input is an [`Error`]
//! with a message that names the offending argument; the Python bindings turn
//! it into a `ValueError`. An allocation whose size depends on the input is
//! reserved first ([`try_with_capacity`] and friends, sizes computed with
//! [`checked_len`]), so running out of memory is an [`Error::Memory`] (a
//! Python `MemoryError`) naming the object, its size and the parameter that
//! avoids it, never an abort of the process.

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
    /// The work was cancelled through its [`crate::runtime::control::Control`]
    /// (the bindings raise `KeyboardInterrupt`).
    #[error("interrupted")]
    Interrupted,
    /// An input-sized allocation failed or its size overflows: the message
    /// names the object, its size in GiB and the parameter that avoids it.
    #[error("{0}")]
    Memory(String),
}

/// Convenience alias used throughout the crate.
pub type Result<T> = std::result::Result<T, Error>;

/// Bytes as GiB, for messages.
fn gib(bytes: f64) -> f64 {
    bytes / f64::from(1u32 << 30)
}

/// The error for an allocation of `len` values of `T` that failed (or whose
/// byte count overflows): names `what` is allocated, its size in GiB, and
/// `hint`, the parameter that avoids it.
pub fn memory_error<T>(len: usize, what: &str, hint: &str) -> Error {
    let bytes = len as f64 * std::mem::size_of::<T>() as f64;
    Error::Memory(format!(
        "not enough memory for {what} ({:.2} GiB); {hint}",
        gib(bytes)
    ))
}

/// `a · b` values, or a memory error naming `what` and `hint` when the
/// product (or its size in bytes of `T`) overflows.
pub fn checked_len<T>(a: usize, b: usize, what: &str, hint: &str) -> Result<usize> {
    match a.checked_mul(b) {
        Some(len) if len.checked_mul(std::mem::size_of::<T>()).is_some() => Ok(len),
        _ => Err(Error::Memory(format!(
            "not enough memory for {what} ({:.2} GiB); {hint}",
            gib(a as f64 * b as f64 * std::mem::size_of::<T>() as f64)
        ))),
    }
}

/// An empty vector with room for `len` values, reserved up front: a failed
/// allocation is an [`Error::Memory`] naming `what` and `hint` instead of an
/// abort.
pub fn try_with_capacity<T>(len: usize, what: &str, hint: &str) -> Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(len)
        .map_err(|_| memory_error::<T>(len, what, hint))?;
    Ok(v)
}

/// `len` copies of `value`, allocated as [`try_with_capacity`] does.
pub fn try_filled<T: Clone>(len: usize, value: T, what: &str, hint: &str) -> Result<Vec<T>> {
    let mut v = try_with_capacity(len, what, hint)?;
    v.resize(len, value);
    Ok(v)
}

/// `len` zeros, for a large block whose pages are touched as it is
/// used: allocated zeroed (fresh pages from the system are zero already, so
/// nothing is written here, and each page is first touched by the loop that
/// uses it). A refused allocation is a [`crate::Error::Memory`] as in
/// [`try_with_capacity`].
pub fn try_zeroed_block(len: usize, what: &str, hint: &str) -> Result<Vec<f32>> {
    if len == 0 {
        return Ok(Vec::new());
    }
    let layout =
        std::alloc::Layout::array::<f32>(len).map_err(|_| memory_error::<f32>(len, what, hint))?;
    // SAFETY: the layout's size is not zero (`len > 0`).
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<f32>();
    if ptr.is_null() {
        return Err(memory_error::<f32>(len, what, hint));
    }
    // SAFETY: `ptr` comes from the global allocator with the layout of
    // `len` `f32` values (capacity `len`), all bytes zero: `len` valid 0.0s.
    Ok(unsafe { Vec::from_raw_parts(ptr, len, len) })
}

/// A copy of `values`, allocated as [`try_with_capacity`] does.
pub fn try_copy<T: Clone>(values: &[T], what: &str, hint: &str) -> Result<Vec<T>> {
    let mut v = try_with_capacity(values.len(), what, hint)?;
    v.extend_from_slice(values);
    Ok(v)
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn impossible_sizes_are_memory_errors() {
        // Overflowing byte counts and allocations no machine can hold are
        // errors naming the object and the parameter, not aborts.
        let err = checked_len::<f64>(usize::MAX / 2, 3, "the big matrix", "use less").unwrap_err();
        assert!(matches!(err, Error::Memory(_)));
        let err = try_filled::<f64>(1 << 50, 0.0, "the 2^50 values", "use fewer").unwrap_err();
        let Error::Memory(msg) = err else {
            panic!("not a memory error")
        };
        assert!(msg.contains("the 2^50 values"), "{msg}");
        assert!(msg.contains("8388608.00 GiB"), "{msg}");
        assert!(msg.contains("use fewer"), "{msg}");
        let err = try_with_capacity::<u8>(usize::MAX, "bytes", "hint").unwrap_err();
        assert!(matches!(err, Error::Memory(_)));
        assert_eq!(try_copy(&[1.0, 2.0], "x", "y").unwrap(), vec![1.0, 2.0]);
        for len in [1usize << 50, usize::MAX / 2] {
            let err = try_zeroed_block(len, "the block", "use less").unwrap_err();
            let Error::Memory(msg) = err else {
                panic!("not a memory error")
            };
            assert!(
                msg.contains("the block") && msg.contains("use less"),
                "{msg}"
            );
        }
        let block = try_zeroed_block(1000, "the block", "use less").unwrap();
        assert_eq!((block.len(), block.capacity()), (1000, 1000));
        assert!(block.iter().all(|&v| v == 0.0));
        assert!(try_zeroed_block(0, "the block", "use less")
            .unwrap()
            .is_empty());
    }
}
