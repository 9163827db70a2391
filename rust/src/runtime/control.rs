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
//! A handle made by [`Control::watched`] also asks a function of its own,
//! from the thread that made it and at most once per period, whether to
//! stop: work that runs on the caller's thread (a small solve, where handing
//! it to a pool thread would cost more than the work) checks for signals
//! that way, since no other thread waits beside it to do so.
//!
//! The same handle carries progress the other way: a solver publishes its
//! iteration count and current KKT gap with [`Control::report`] (two relaxed
//! atomic stores, nothing at all on a [`Control::none`] handle), and the
//! waiting thread reads them with [`Control::progress`].

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::{self, ThreadId};
use std::time::{Duration, Instant};

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
    /// [`Control::watched`]'s question, if any.
    watch: Option<Watch>,
}

/// Polls of a watched handle between two looks at the clock for work that
/// polls once per short step (an SMO iteration): reading the clock costs
/// more than such a poll.
pub const WATCH_POLLS: u32 = 64;

/// The question of a [`Control::watched`] handle and when to ask it next.
struct Watch {
    /// The thread that made the handle: the only one that asks.
    owner: ThreadId,
    period: Duration,
    /// Polls between two looks at the clock (at least 1).
    every: u32,
    /// Polls left before the clock is read again (a plain load and store:
    /// a lost count among threads only moves the next look a little).
    countdown: AtomicU32,
    /// When the question was last asked.
    last: std::sync::Mutex<Instant>,
    stop: Box<dyn Fn() -> bool + Send + Sync>,
}

impl fmt::Debug for Watch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Watch")
            .field("owner", &self.owner)
            .field("period", &self.period)
            .finish_non_exhaustive()
    }
}

impl Watch {
    /// Whether `stop` says to stop, asked when this is the owner thread, an
    /// `every`-th poll and `period` has passed since the last time.
    #[cold]
    fn due_and_stop(&self) -> bool {
        self.countdown.store(self.every, Ordering::Relaxed);
        if thread::current().id() != self.owner {
            return false;
        }
        let Ok(mut last) = self.last.lock() else {
            return false;
        };
        if last.elapsed() < self.period {
            return false;
        }
        *last = Instant::now();
        drop(last);
        (self.stop)()
    }

    #[inline]
    fn poll(&self) -> bool {
        let left = self.countdown.load(Ordering::Relaxed);
        if left > 1 {
            self.countdown.store(left - 1, Ordering::Relaxed);
            return false;
        }
        self.due_and_stop()
    }
}

impl Control {
    /// A handle that can be cancelled by [`Control::cancel`] on any clone or
    /// by a later [`interrupt_all`].
    pub fn new() -> Self {
        Self::with_watch(None)
    }

    /// [`Control::new`], and cancelled too once `stop()` returns true:
    /// `stop` is asked only on the calling thread, at most once per
    /// `period`, the clock being read once every `every` polls
    /// ([`WATCH_POLLS`] for work that polls per iteration, 1 for work that
    /// polls between steps of milliseconds).
    pub fn watched(
        period: Duration,
        every: u32,
        stop: impl Fn() -> bool + Send + Sync + 'static,
    ) -> Self {
        let every = every.max(1);
        Self::with_watch(Some(Watch {
            owner: thread::current().id(),
            period,
            every,
            countdown: AtomicU32::new(every),
            last: std::sync::Mutex::new(Instant::now()),
            stop: Box::new(stop),
        }))
    }

    fn with_watch(watch: Option<Watch>) -> Self {
        Control {
            inner: Some(Arc::new(Shared {
                cancelled: AtomicBool::new(false),
                epoch: EPOCH.load(Ordering::Relaxed),
                iterations: AtomicU64::new(0),
                gap: AtomicU64::new(f64::NAN.to_bits()),
                watch,
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
    /// after it was made (or, on a [`Control::watched`] handle, once its
    /// question said to stop).
    #[inline]
    pub fn is_cancelled(&self) -> bool {
        match &self.inner {
            None => false,
            Some(s) => {
                if s.cancelled.load(Ordering::Relaxed) || EPOCH.load(Ordering::Relaxed) != s.epoch {
                    return true;
                }
                match &s.watch {
                    Some(w) if w.poll() => {
                        s.cancelled.store(true, Ordering::Relaxed);
                        true
                    }
                    _ => false,
                }
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
    fn a_watched_handle_asks_on_its_own_thread_once_per_period() {
        use std::sync::atomic::AtomicUsize;
        let asked = Arc::new(AtomicUsize::new(0));
        let seen = Arc::clone(&asked);
        // Says stop at its third question.
        let c = Control::watched(Duration::ZERO, WATCH_POLLS, move || {
            seen.fetch_add(1, Ordering::Relaxed) + 1 >= 3
        });
        let mut polls = 0;
        while !c.is_cancelled() {
            polls += 1;
            assert!(polls < 10 * WATCH_POLLS as usize, "never stopped");
        }
        assert_eq!(asked.load(Ordering::Relaxed), 3);
        assert!(polls >= 2 * WATCH_POLLS as usize);
        assert!(c.clone().is_cancelled());
        // Another thread polls, but never asks.
        let other = Control::watched(Duration::ZERO, WATCH_POLLS, || {
            panic!("asked on another thread")
        });
        let handle = other.clone();
        std::thread::spawn(move || {
            for _ in 0..(4 * WATCH_POLLS) {
                assert!(!handle.is_cancelled());
            }
        })
        .join()
        .unwrap();
        // A long period: not asked again before it has passed.
        let slow = Control::watched(Duration::from_secs(3600), 1, || panic!("asked too soon"));
        for _ in 0..(4 * WATCH_POLLS) {
            assert!(!slow.is_cancelled());
        }
        // Asked at every poll when `every` is 1.
        let count = Arc::new(AtomicUsize::new(0));
        let seen = Arc::clone(&count);
        let each = Control::watched(Duration::ZERO, 1, move || {
            seen.fetch_add(1, Ordering::Relaxed);
            false
        });
        for _ in 0..5 {
            assert!(!each.is_cancelled());
        }
        assert_eq!(count.load(Ordering::Relaxed), 5);
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
