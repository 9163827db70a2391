//! Cooperative control of long-running work: a [`Control`] handle is passed
//! into the solvers, which poll it in every long loop (a relaxed atomic load
//! per iteration or per block of rows) and return [`Error::Interrupted`]
//! once it has been cancelled.
//!
//! A handle is cancelled in one of two ways:
//!
//! * [`Control::cancel`], by whoever holds a clone of it (the Python bindings
//!   do this from the waiting thread when a signal handler raises);
//! * [`interrupt_all`], process-wide: it bumps an epoch counter, and every
//!   handle made by [`Control::new`] before the bump sees itself cancelled.
//!   Handles made afterwards start from the new epoch, so nothing stays set.
//!
//! [`Control::none`] (also the `Default`) never cancels: the pure-Rust API
//! behaves as before for callers that do not ask for cancellation.
//!
//! The same handle carries progress the other way: a solver publishes its
//! iteration count and current KKT gap with [`Control::report`] (two relaxed
//! atomic stores, nothing at all on a [`Control::none`] handle), and the
//! waiting thread reads them with [`Control::progress`].

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use crate::error::{Error, Result};

/// Bumped by [`interrupt_all`]; every live handle compares against it.
static EPOCH: AtomicU64 = AtomicU64::new(0);

/// Cancels every [`Control`] made by [`Control::new`] before this call.
/// Work started afterwards is not affected.
pub fn interrupt_all() {
    EPOCH.fetch_add(1, Ordering::Relaxed);
}

/// A cheap, cloneable cancellation handle shared by a solve and the thread
/// that may stop it. Clones share the same flag.
#[derive(Clone, Debug, Default)]
pub struct Control {
    /// `None` for a handle that never cancels.
    inner: Option<Arc<Shared>>,
}

#[derive(Debug)]
struct Shared {
    cancelled: AtomicBool,
    /// [`EPOCH`] when the handle was made.
    epoch: u64,
    /// The last iteration count a solver reported.
    iterations: AtomicU64,
    /// The bits of the last KKT gap (`f64`) a solver reported; NaN before.
    gap: AtomicU64,
}

impl Control {
    /// A handle that can be cancelled by [`Control::cancel`] on any clone or
    /// by a later [`interrupt_all`].
    pub fn new() -> Self {
        Control {
            inner: Some(Arc::new(Shared {
                cancelled: AtomicBool::new(false),
                epoch: EPOCH.load(Ordering::Relaxed),
                iterations: AtomicU64::new(0),
                gap: AtomicU64::new(f64::NAN.to_bits()),
            })),
        }
    }

    /// A handle that never cancels.
    pub fn none() -> Self {
        Control { inner: None }
    }

    /// Requests that the work polling this handle (or a clone) stop.
    /// Has no effect on a [`Control::none`] handle.
    pub fn cancel(&self) {
        if let Some(s) = &self.inner {
            s.cancelled.store(true, Ordering::Relaxed);
        }
    }

    /// True once the handle was cancelled or [`interrupt_all`] was called
    /// after it was made.
    #[inline]
    pub fn is_cancelled(&self) -> bool {
        match &self.inner {
            None => false,
            Some(s) => {
                s.cancelled.load(Ordering::Relaxed) || EPOCH.load(Ordering::Relaxed) != s.epoch
            }
        }
    }

    /// Publishes a solver's progress: `n_iter` iterations done, maximal KKT
    /// violation `gap` (NaN when unknown). A no-op on [`Control::none`].
    #[inline]
    pub fn report(&self, n_iter: u64, gap: f64) {
        if let Some(s) = &self.inner {
            s.iterations.store(n_iter, Ordering::Relaxed);
            s.gap.store(gap.to_bits(), Ordering::Relaxed);
        }
    }

    /// The last `(iterations, gap)` published by [`Control::report`]:
    /// `(0, NaN)` before any report and on a [`Control::none`] handle.
    pub fn progress(&self) -> (u64, f64) {
        match &self.inner {
            None => (0, f64::NAN),
            Some(s) => (
                s.iterations.load(Ordering::Relaxed),
                f64::from_bits(s.gap.load(Ordering::Relaxed)),
            ),
        }
    }

    /// `Err(Error::Interrupted)` once cancelled, else `Ok(())`.
    #[inline]
    pub fn check(&self) -> Result<()> {
        if self.is_cancelled() {
            Err(Error::Interrupted)
        } else {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cancel_reaches_clones_and_none_never_cancels() {
        let c = Control::new();
        let d = c.clone();
        assert!(c.check().is_ok());
        d.cancel();
        assert_eq!(c.check(), Err(Error::Interrupted));
        let n = Control::none();
        n.cancel();
        assert!(n.check().is_ok());
    }

    #[test]
    fn progress_reaches_clones_and_none_reports_nothing() {
        let c = Control::new();
        let (it, gap) = c.progress();
        assert_eq!(it, 0);
        assert!(gap.is_nan());
        c.clone().report(42, 0.5);
        assert_eq!(c.progress(), (42, 0.5));
        let n = Control::none();
        n.report(7, 1.0);
        assert_eq!(n.progress().0, 0);
    }

    #[test]
    fn interrupt_all_stops_earlier_handles_only() {
        let before = Control::new();
        interrupt_all();
        let after = Control::new();
        assert!(before.is_cancelled());
        assert!(!after.is_cancelled());
        assert!(!Control::none().is_cancelled());
    }
}
