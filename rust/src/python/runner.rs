//! The GIL-free runners every binding calls: the work runs without the GIL
//! on a thread of rayon's pool while the caller waits in short slices (or,
//! for work of short polled steps, [`inline`] on the calling thread),
//! checking for signals (Ctrl-C cancels the work's [`Control`]) and, for
//! solves, reporting progress; a panic becomes `RuntimeError`, unless it
//! carries a [`crate::Error`] (then raised as that error).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

use crate::runtime::control::{Control, WATCH_POLLS};

/// How long the waiting caller sleeps between signal checks.
const SIGNAL_SLICE: Duration = Duration::from_millis(50);

/// Runs `work` without the GIL on a thread of rayon's pool (so the parallel
/// loops inside it fork from a pool thread instead of crossing threads on
/// every call), turning a panic into `RuntimeError`. The caller waits in
/// slices of [`SIGNAL_SLICE`], taking the GIL between them to run Python's
/// signal handlers: when one raises (Ctrl-C: `KeyboardInterrupt`), the
/// work's [`Control`] is cancelled, the worker is waited for, and the
/// handler's exception is returned. Work stopped by [`crate::interrupt_all`] (from
/// another thread) raises `KeyboardInterrupt` too.
pub(super) fn detached<T: Send>(py: Python<'_>, work: impl Work<T>) -> PyResult<T> {
    detached_with_progress(py, None, work)
}

/// What the runners take: work that polls the given [`Control`] and whose
/// result crosses back to the calling thread.
pub(super) trait Work<T>: FnOnce(&Control) -> crate::Result<T> + Send {}

impl<T, F: FnOnce(&Control) -> crate::Result<T> + Send> Work<T> for F {}

/// [`detached`], and after each slice in which the work has not finished,
/// `progress(n_iter, gap)` with what the solver last published in the
/// [`Control`] (see [`Control::report`]). An exception raised by `progress`
/// stops the work like a signal and is returned.
pub(super) fn detached_with_progress<T: Send>(
    py: Python<'_>,
    progress: Option<&Bound<'_, PyAny>>,
    work: impl Work<T>,
) -> PyResult<T> {
    let ctl = Control::new();
    let worker_ctl = ctl.clone();
    let (tx, rx) = mpsc::sync_channel(1);
    let outcome = rayon::in_place_scope(|scope| {
        scope.spawn(move |_| {
            let out = catch_unwind(AssertUnwindSafe(|| work(&worker_ctl)));
            // The receiver lives until the scope ends; a failed send cannot
            // happen, and would only drop the result.
            let _ = tx.send(out);
        });
        let mut rx = rx;
        loop {
            // The receiver is `Send` but not `Sync`: it moves into the
            // GIL-free section and back.
            let (back, got) = py.detach(move || {
                let got = rx.recv_timeout(SIGNAL_SLICE);
                (rx, got)
            });
            rx = back;
            match got {
                Ok(out) => break Ok(out),
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    let raised = py.check_signals().err().or_else(|| {
                        let (n_iter, gap) = ctl.progress();
                        progress.and_then(|f| f.call1((n_iter, gap)).err())
                    });
                    if let Some(err) = raised {
                        ctl.cancel();
                        // The solvers poll the control at least once per
                        // iteration or block of rows: this wait is short.
                        let _ = py.detach(move || rx.recv());
                        break Err(err);
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    break Err(PyRuntimeError::new_err(
                        "internal error in the localsvm Rust core (please report it): \
                         the worker ended without a result",
                    ));
                }
            }
        }
    });
    finish(outcome?)
}

/// Rows up to which a solve without a progress callback runs on the calling
/// thread (GIL released) instead of a pool thread, whatever its `threads`
/// (a problem this small never starts the solver's two-thread team): it
/// usually finishes in milliseconds, so waking a pool thread (and its
/// spinning before it sleeps again, or its wait for a core on a busy
/// machine) would cost more than the solve; fits of hundreds of one-vs-one
/// problems pay that per problem. Signals are handled while it runs
/// ([`detached_small`]).
pub(super) const INLINE_ROWS: usize = 2048;
const _: () = assert!(cfg!(test) || INLINE_ROWS < crate::solver::problem::TEAM_MIN_VARIABLES);

/// [`detached_with_progress`] for small work: when `inline` (and no
/// `progress`), `work` runs on the calling thread with the GIL released;
/// otherwise on a pool thread as there. Inline, the work's [`Control`]
/// takes the GIL every [`SIGNAL_SLICE`] to run Python's signal handlers, so
/// Ctrl-C stops a small solve that runs long (a hard problem at a large
/// `C`) as promptly as one on a pool thread. A panic becomes
/// `RuntimeError` either way.
pub(super) fn detached_small<T: Send>(
    py: Python<'_>,
    inline: bool,
    progress: Option<&Bound<'_, PyAny>>,
    work: impl Work<T>,
) -> PyResult<T> {
    if !inline || progress.is_some() {
        return detached_with_progress(py, progress, work);
    }
    let out = on_calling_thread(py, WATCH_POLLS, work)?;
    py.check_signals()?;
    Ok(out)
}

/// Runs `work` on the calling thread without the GIL, for work made of
/// short steps (LISVM's local updates: a few milliseconds at most each)
/// that polls between them instead of running on a pool thread while the
/// caller waits: a `partial_fit` of one row then costs no thread hand-off.
/// Every [`SIGNAL_SLICE`] the poll takes the GIL and runs Python's signal
/// handlers; when one raises (Ctrl-C: `KeyboardInterrupt`), the work stops
/// before its next step and the handler's exception is returned. A panic
/// becomes `RuntimeError`, as in [`detached`].
pub(super) fn inline<T, F>(py: Python<'_>, work: F) -> PyResult<T>
where
    T: Send,
    F: FnOnce(&mut dyn FnMut() -> crate::Result<()>) -> crate::Result<T> + Send,
{
    on_calling_thread(py, 1, move |ctl: &Control| work(&mut || ctl.check()))
}

/// Runs `work` on the calling thread without the GIL with a [`Control`]
/// that, polled on this thread, takes the GIL every [`SIGNAL_SLICE`] (the
/// clock read once every `every` polls) to run Python's signal handlers:
/// when one raises, the control is cancelled, the work stops at its next
/// poll, and the handler's exception is returned. A panic becomes
/// `RuntimeError`, as in [`detached`].
fn on_calling_thread<T: Send>(py: Python<'_>, every: u32, work: impl Work<T>) -> PyResult<T> {
    let raised: Arc<Mutex<Option<PyErr>>> = Arc::default();
    let keep = Arc::clone(&raised);
    let ctl = Control::watched(SIGNAL_SLICE, every, move || {
        match Python::attach(|py| py.check_signals()) {
            Ok(()) => false,
            Err(err) => {
                if let Ok(mut slot) = keep.lock() {
                    *slot = Some(err);
                }
                true
            }
        }
    });
    let out = py.detach(|| catch_unwind(AssertUnwindSafe(|| work(&ctl))));
    let raised = raised.lock().ok().and_then(|mut slot| slot.take());
    match raised {
        Some(err) => Err(err),
        None => finish(out),
    }
}

/// The worker's outcome as a Python result (a panic as `RuntimeError`, or
/// as the crate's error it carries).
fn finish<T>(outcome: std::thread::Result<crate::Result<T>>) -> PyResult<T> {
    match outcome {
        Ok(result) => result.map_err(PyErr::from),
        Err(payload) => {
            // A failure that cannot travel as a `Result` (the column cache's
            // last-resort allocation) panics with the crate's error itself.
            if let Some(err) = payload.downcast_ref::<crate::Error>() {
                return Err(PyErr::from(err.clone()));
            }
            let msg = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown panic".to_string());
            Err(PyRuntimeError::new_err(format!(
                "internal error in the localsvm Rust core (please report it): {msg}"
            )))
        }
    }
}
