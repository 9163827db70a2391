//! A two-thread team for one solve: the calling thread and one helper,
//! created once per solve (not per kernel column), that share the pieces
//! of a job.
//!
//! A job is `n` numbered pieces (`f(0)`, …, `f(n − 1)`). The caller publishes
//! it and takes pieces itself; the helper, spinning between jobs (parked
//! after [`SPIN`] without work), takes pieces too. Pieces are claimed one at
//! a time from a shared counter, so the caller never waits for the helper to
//! wake up: when the helper is slow (parked, or its core busy with other
//! work) the caller runs every piece, and waits only for pieces the helper
//! has already started. Each piece is bounded work, so every wait ends.
//!
//! Results do not depend on the split: every piece writes its own outputs,
//! and the callers merge per-piece results in piece order.
//!
//! The machine may be shared: when the helper's core is busy with other
//! work, the helper can be descheduled in the middle of a piece, and the
//! caller then waits for it for a time slice of the scheduler (milliseconds,
//! against tens of microseconds for a piece). The caller measures those long
//! waits; when they exceed [`LONG_WAIT_SHARE`] of a [`WINDOW`], it runs
//! every job alone for a back-off period (doubling, from [`BACKOFF_MIN`] to
//! [`BACKOFF_MAX`], while the contention lasts), during which the helper
//! parks, and then tries the team again. A busy second core therefore costs
//! a few percent, not the solve's time twice over.

use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::sync::Mutex;
use std::thread::{self, JoinHandle, Thread};
use std::time::{Duration, Instant};

/// How long the idle helper spins before it parks.
const SPIN: Duration = Duration::from_micros(200);
/// The longest park between checks for work (a missed wake-up cannot
/// happen, see [`Team::run`]; this only bounds the damage of one).
const PARK: Duration = Duration::from_millis(50);
/// Pieces per job at most: the piece counters are 16-bit fields.
pub const MAX_PIECES: usize = (1 << 16) - 1;
/// A wait for the helper's pieces longer than this beyond the caller's own
/// longest piece counts as the helper having been descheduled. (Up to a
/// piece's time is the unevenness of the split: the helper started its last
/// piece just before the caller ran out, which says nothing of the load.)
const LONG_WAIT: Duration = Duration::from_micros(100);
/// The period over which long waits are added up.
const WINDOW: Duration = Duration::from_millis(10);
/// The share of a window spent in long waits that sends the team into
/// back-off.
const LONG_WAIT_SHARE: f64 = 0.05;
/// The fraction of its half of a window's pieces (`⌊p/2⌋` of a job of `p`
/// pieces: the caller takes the first, so a helper on its core takes about
/// half, and one of three) the helper must take for the team to stay on: a
/// helper that takes less is mostly off its core (the core busy with other
/// work), and its spinning then only competes with the caller.
const MIN_HELPER_SHARE: f64 = 0.7;
/// The first back-off period; it doubles while the contention lasts.
const BACKOFF_MIN: Duration = Duration::from_millis(200);
/// The longest back-off period.
const BACKOFF_MAX: Duration = Duration::from_millis(3200);

/// A job as the helper sees it: a reference to the caller's closure.
type Job<'a> = &'a (dyn Fn(usize) + Sync);

/// `state`: epoch (32 bits) | pieces (16 bits) | next unclaimed piece (16 bits).
fn pack(epoch: u32, pieces: usize, next: usize) -> u64 {
    (u64::from(epoch) << 32) | ((pieces as u64) << 16) | next as u64
}

fn unpack(s: u64) -> (u32, usize, usize) {
    (
        (s >> 32) as u32,
        ((s >> 16) & 0xffff) as usize,
        (s & 0xffff) as usize,
    )
}

struct Shared {
    state: AtomicU64,
    /// Points to a [`Job`] on the caller's stack, valid while its epoch is
    /// current and pieces of it are unfinished.
    job: AtomicPtr<()>,
    /// Pieces the helper finished in the current job.
    helper_done: AtomicUsize,
    panicked: AtomicBool,
    sleeping: AtomicBool,
    quit: AtomicBool,
    /// Set by a caller that parks until the helper finishes its pieces (see
    /// [`Team::run`]); the helper then wakes the thread in `waiter`.
    waiting: AtomicBool,
    waiter: Mutex<Option<Thread>>,
}

impl Shared {
    /// Parks the calling thread until the helper has finished `theirs`
    /// pieces of the current job. The flag and the count are both
    /// sequentially consistent, as in the helper's [`Shared::finished`]:
    /// either the helper sees `waiting` and wakes this thread, or this thread
    /// sees the count; an early wake-up only costs one more check.
    fn park_until_done(&self, theirs: usize) {
        *self.waiter.lock().unwrap_or_else(|e| e.into_inner()) = Some(thread::current());
        self.waiting.store(true, Ordering::SeqCst);
        while self.helper_done.load(Ordering::SeqCst) < theirs {
            thread::park_timeout(PARK);
        }
        self.waiting.store(false, Ordering::SeqCst);
    }

    /// The helper's account of a finished piece, waking a parked caller.
    fn finished(&self) {
        self.helper_done.fetch_add(1, Ordering::SeqCst);
        if self.waiting.load(Ordering::SeqCst) {
            if let Some(caller) = &*self.waiter.lock().unwrap_or_else(|e| e.into_inner()) {
                caller.unpark();
            }
        }
    }

    /// Claims the next piece of job `epoch`, if any is left.
    fn claim(&self, epoch: u32) -> Option<usize> {
        let mut s = self.state.load(Ordering::Acquire);
        loop {
            let (e, pieces, next) = unpack(s);
            if e != epoch || next >= pieces {
                return None;
            }
            let claimed = pack(e, pieces, next + 1);
            match self
                .state
                .compare_exchange_weak(s, claimed, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return Some(next),
                Err(now) => s = now,
            }
        }
    }
}

/// A raw pointer the pieces of a job share; each piece touches only its own
/// elements.
struct SyncPtr<T>(*mut T);

// SAFETY: the pointer is only dereferenced at disjoint offsets, one piece per
// thread, while the data it points to is borrowed by the running job.
unsafe impl<T: Send> Send for SyncPtr<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for SyncPtr<T> {}

impl<T> SyncPtr<T> {
    /// The pointer (a method, so closures capture the whole wrapper).
    fn get(&self) -> *mut T {
        self.0
    }
}

/// The caller's account of its waits for the helper (the caller's thread
/// alone touches it; atomics only so the team can be shared by reference).
struct Backoff {
    start: Instant,
    /// Nanoseconds since `start` before which jobs run on the caller alone.
    off_until: AtomicU64,
    window_start: AtomicU64,
    /// Nanoseconds of long waits in the current window.
    window_wait: AtomicU64,
    /// The helper's half of the window's pieces (`⌊p/2⌋` per job of `p`),
    /// and the pieces it ran.
    window_half: AtomicU64,
    window_helped: AtomicU64,
    /// The next back-off period, in nanoseconds.
    next_backoff: AtomicU64,
}

impl Backoff {
    fn now(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// Whether jobs run on the caller alone now.
    fn off(&self) -> bool {
        self.now() < self.off_until.load(Ordering::Relaxed)
    }

    /// Records a shared job of `pieces` pieces, `helped` of them run by the
    /// helper, after a wait of `waited` for the helper's pieces beyond the
    /// caller's longest piece; starts a back-off when the window's long
    /// waits exceed their share or the helper took too few pieces, and
    /// halves the next back-off after a window with neither.
    fn record(&self, waited: Duration, pieces: usize, helped: usize) {
        let rel = Ordering::Relaxed;
        if waited > LONG_WAIT {
            let ns = u64::try_from(waited.as_nanos()).unwrap_or(u64::MAX);
            self.window_wait.fetch_add(ns, rel);
        }
        self.window_half.fetch_add((pieces / 2) as u64, rel);
        self.window_helped.fetch_add(helped as u64, rel);
        let now = self.now();
        let span = now.saturating_sub(self.window_start.load(rel));
        if span < WINDOW.as_nanos() as u64 {
            return;
        }
        let waited = self.window_wait.swap(0, rel);
        let half = self.window_half.swap(0, rel);
        let helped = self.window_helped.swap(0, rel);
        self.window_start.store(now, rel);
        let backoff = self.next_backoff.load(rel);
        let idle_helper = (helped as f64) < MIN_HELPER_SHARE * half as f64;
        if idle_helper || waited as f64 > LONG_WAIT_SHARE * span as f64 {
            let until = now.saturating_add(backoff);
            self.off_until.store(until, rel);
            // The next window starts when the team is tried again, so that
            // trial is judged on a whole window.
            self.window_start.store(until, rel);
            let longest = BACKOFF_MAX.as_nanos() as u64;
            self.next_backoff.store((2 * backoff).min(longest), rel);
        } else {
            let shortest = BACKOFF_MIN.as_nanos() as u64;
            self.next_backoff.store((backoff / 2).max(shortest), rel);
        }
    }
}

/// The team: the helper thread and what it shares with the caller. Dropping
/// it stops and joins the helper.
pub struct Team {
    shared: Arc<Shared>,
    helper: Option<JoinHandle<()>>,
    backoff: Backoff,
    /// Whether the back-off applies (always, except in this crate's unit
    /// tests, which must see the split code paths run whatever the load).
    adaptive: bool,
}

impl std::fmt::Debug for Team {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Team(2 threads)")
    }
}

impl Team {
    /// Starts the helper thread; `None` when the system refuses a thread
    /// (the caller then works alone, with the same results).
    pub fn new() -> Option<Team> {
        let shared = Arc::new(Shared {
            state: AtomicU64::new(pack(0, 0, 0)),
            job: AtomicPtr::new(std::ptr::null_mut()),
            helper_done: AtomicUsize::new(0),
            panicked: AtomicBool::new(false),
            sleeping: AtomicBool::new(false),
            quit: AtomicBool::new(false),
            waiting: AtomicBool::new(false),
            waiter: Mutex::new(None),
        });
        let theirs = Arc::clone(&shared);
        let helper = thread::Builder::new()
            .name("localsvm-team".into())
            .spawn(move || helper_loop(&theirs))
            .ok()?;
        Some(Team {
            shared,
            helper: Some(helper),
            backoff: Backoff {
                start: Instant::now(),
                off_until: AtomicU64::new(0),
                window_start: AtomicU64::new(0),
                window_wait: AtomicU64::new(0),
                window_half: AtomicU64::new(0),
                window_helped: AtomicU64::new(0),
                next_backoff: AtomicU64::new(BACKOFF_MIN.as_nanos() as u64),
            },
            adaptive: !cfg!(test),
        })
    }

    /// Whether jobs are shared now (not in a back-off): callers that would
    /// cut work into pieces only for the team do it unsplit otherwise.
    pub fn engaged(&self) -> bool {
        !(self.adaptive && self.backoff.off())
    }

    /// Runs `f(0)`, …, `f(pieces − 1)` on the two threads (on the calling
    /// thread alone during a back-off) and returns when all have finished.
    /// A panic in a piece is raised here once every started piece has
    /// finished.
    pub fn run(&self, pieces: usize, f: &(dyn Fn(usize) + Sync)) {
        assert!(
            pieces <= MAX_PIECES,
            "a team job has at most {MAX_PIECES} pieces"
        );
        if pieces <= 1 || !self.engaged() {
            (0..pieces).for_each(f);
            return;
        }
        let sh = &*self.shared;
        let job: Job<'_> = f;
        let epoch = unpack(sh.state.load(Ordering::Relaxed)).0.wrapping_add(1);
        sh.job
            .store(&job as *const Job<'_> as *mut (), Ordering::Relaxed);
        sh.helper_done.store(0, Ordering::Relaxed);
        // Publishing the epoch releases the job pointer. SeqCst pairs with the
        // helper's `sleeping` flag: either it sees this job before parking, or
        // this thread sees it asleep and wakes it.
        sh.state.store(pack(epoch, pieces, 0), Ordering::SeqCst);
        if sh.sleeping.load(Ordering::SeqCst) {
            if let Some(h) = &self.helper {
                h.thread().unpark();
            }
        }
        let mut mine = 0usize;
        let mut longest_piece = Duration::ZERO;
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            while let Some(c) = sh.claim(epoch) {
                mine += 1;
                let started = Instant::now();
                f(c);
                longest_piece = longest_piece.max(started.elapsed());
            }
        }));
        // After a panic here, claim what is left so the helper stops.
        while sh.claim(epoch).is_some() {
            mine += 1;
        }
        // The helper finishes what it claimed before `job` goes out of scope.
        let theirs = pieces - mine;
        if sh.helper_done.load(Ordering::Acquire) < theirs {
            let waiting = Instant::now();
            let mut spins = 0u32;
            while sh.helper_done.load(Ordering::Acquire) < theirs {
                spins = spins.saturating_add(1);
                if spins < 1 << 12 {
                    std::hint::spin_loop();
                } else {
                    // A long piece on the helper (one piece of an uneven job
                    // can be most of it): wait without holding the core.
                    sh.park_until_done(theirs);
                    break;
                }
            }
            let beyond = waiting.elapsed().saturating_sub(longest_piece);
            self.backoff.record(beyond, pieces, theirs);
        } else {
            self.backoff.record(Duration::ZERO, pieces, theirs);
        }
        if let Err(payload) = outcome {
            resume_unwind(payload);
        }
        if sh.panicked.swap(false, Ordering::Relaxed) {
            panic!("a piece of a two-thread team job panicked on the helper thread");
        }
    }

    /// `f(c)` for `c` in `0..pieces`, on the two threads; the results in
    /// piece order.
    pub fn map<R: Send>(&self, pieces: usize, f: impl Fn(usize) -> R + Sync) -> Vec<R> {
        let mut out: Vec<Option<R>> = (0..pieces).map(|_| None).collect();
        let base = SyncPtr(out.as_mut_ptr());
        self.run(pieces, &|c| {
            let r = f(c);
            // SAFETY: `c < pieces` is claimed by one thread only, so slot `c`
            // is written once, by that thread, while `out` outlives the job.
            unsafe { *base.get().add(c) = Some(r) };
        });
        out.into_iter()
            .map(|r| r.expect("every piece of a finished team job has run"))
            .collect()
    }

    /// Splits `data` into consecutive pieces of `chunk` elements (the last
    /// may be shorter) and returns `f(offset, piece)` for each, in order,
    /// computed on the two threads.
    pub fn map_chunks<T: Send, R: Send>(
        &self,
        data: &mut [T],
        chunk: usize,
        f: impl Fn(usize, &mut [T]) -> R + Sync,
    ) -> Vec<R> {
        let len = data.len();
        let chunk = chunk.max(1);
        let base = SyncPtr(data.as_mut_ptr());
        self.map(len.div_ceil(chunk), |c| {
            let start = c * chunk;
            let end = (start + chunk).min(len);
            // SAFETY: pieces are disjoint ranges of `data`, each claimed by
            // one thread, and `data` stays borrowed until the job ends.
            let piece =
                unsafe { std::slice::from_raw_parts_mut(base.get().add(start), end - start) };
            f(start, piece)
        })
    }

    /// [`Team::map_chunks`] over two slices of equal length, cut at the same
    /// offsets.
    pub fn for_chunks2<T: Send>(
        &self,
        a: &mut [T],
        b: &mut [T],
        chunk: usize,
        f: impl Fn(usize, &mut [T], &mut [T]) + Sync,
    ) {
        assert_eq!(a.len(), b.len(), "paired pieces need slices of one length");
        let pb = SyncPtr(b.as_mut_ptr());
        self.map_chunks(a, chunk, |start, piece_a| {
            // SAFETY: the same disjoint range of `b` as `piece_a` of `a`.
            let piece_b =
                unsafe { std::slice::from_raw_parts_mut(pb.get().add(start), piece_a.len()) };
            f(start, piece_a, piece_b);
        });
    }
}

impl Drop for Team {
    fn drop(&mut self) {
        self.shared.quit.store(true, Ordering::SeqCst);
        if let Some(h) = self.helper.take() {
            h.thread().unpark();
            // The helper only ever panics inside a piece, where it is caught.
            let _ = h.join();
        }
    }
}

/// The helper: waits for a new epoch (spinning, then parked), takes pieces
/// until none is left, and again, until told to quit.
fn helper_loop(sh: &Shared) {
    let mut seen = 0u32;
    loop {
        let mut idle_since: Option<Instant> = None;
        let mut spins = 0u32;
        let epoch = loop {
            if sh.quit.load(Ordering::Acquire) {
                return;
            }
            let (e, pieces, next) = unpack(sh.state.load(Ordering::Acquire));
            if e != seen {
                seen = e;
                if next < pieces {
                    break e;
                }
            }
            spins = spins.wrapping_add(1);
            if !spins.is_multiple_of(64) {
                std::hint::spin_loop();
                continue;
            }
            let since = *idle_since.get_or_insert_with(Instant::now);
            if since.elapsed() < SPIN {
                continue;
            }
            sh.sleeping.store(true, Ordering::SeqCst);
            let (e, pieces, next) = unpack(sh.state.load(Ordering::SeqCst));
            if (e == seen || next >= pieces) && !sh.quit.load(Ordering::SeqCst) {
                thread::park_timeout(PARK);
            }
            sh.sleeping.store(false, Ordering::SeqCst);
            idle_since = None;
        };
        while let Some(c) = sh.claim(epoch) {
            // SAFETY: piece `c` of job `epoch` is claimed and unfinished, so
            // the caller is still inside `Team::run` and `job` points to its
            // live closure reference.
            let job = unsafe { &*(sh.job.load(Ordering::Relaxed) as *const Job<'_>) };
            if catch_unwind(AssertUnwindSafe(|| job(c))).is_err() {
                sh.panicked.store(true, Ordering::Relaxed);
            }
            sh.finished();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_piece_runs_once_in_order_of_results() {
        let team = Team::new().expect("a thread");
        for round in 0..2000usize {
            let pieces = 1 + round % 17;
            let got = team.map(pieces, |c| c * 3 + round);
            let want: Vec<usize> = (0..pieces).map(|c| c * 3 + round).collect();
            assert_eq!(got, want);
        }
    }

    #[test]
    fn chunks_cover_the_data_exactly() {
        let team = Team::new().expect("a thread");
        let mut a: Vec<u64> = vec![0; 1003];
        let mut b: Vec<u64> = vec![0; 1003];
        team.for_chunks2(&mut a, &mut b, 64, |start, pa, pb| {
            for (k, (x, y)) in pa.iter_mut().zip(pb.iter_mut()).enumerate() {
                *x += (start + k) as u64;
                *y += 1;
            }
        });
        assert!(a.iter().enumerate().all(|(k, &v)| v == k as u64));
        assert!(b.iter().all(|&v| v == 1));
        let sums = team.map_chunks(&mut a, 100, |_, p| p.iter().sum::<u64>());
        assert_eq!(sums.len(), 11);
        assert_eq!(sums.iter().sum::<u64>(), (0..1003u64).sum::<u64>());
    }

    /// The calling thread's CPU time in nanoseconds, where Linux reports it.
    fn thread_cpu_ns() -> Option<u64> {
        let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
        stat.split_whitespace().next()?.parse().ok()
    }

    #[test]
    fn a_caller_waiting_for_a_long_helper_piece_does_not_hold_its_core() {
        let team = Team::new().expect("a thread");
        let caller = thread::current().id();
        let hits = AtomicUsize::new(0);
        let before = thread_cpu_ns();
        let started = Instant::now();
        // The helper's pieces are long and the caller's short: the caller
        // runs out of pieces and waits for the helper's.
        team.run(16, &|_| {
            let long = thread::current().id() != caller;
            thread::sleep(Duration::from_millis(if long { 300 } else { 2 }));
            hits.fetch_add(1, Ordering::Relaxed);
        });
        let waited = started.elapsed();
        assert_eq!(hits.load(Ordering::Relaxed), 16);
        if let (Some(a), Some(b)) = (before, thread_cpu_ns()) {
            if waited >= Duration::from_millis(250) {
                let busy = Duration::from_nanos(b - a);
                assert!(
                    busy < Duration::from_millis(100),
                    "{busy:?} busy of {waited:?}"
                );
            }
        }
    }

    #[test]
    fn work_after_a_long_idle_wakes_the_parked_helper() {
        let team = Team::new().expect("a thread");
        thread::sleep(Duration::from_millis(5));
        let hits = AtomicUsize::new(0);
        team.run(8, &|_| {
            hits.fetch_add(1, Ordering::Relaxed);
        });
        assert_eq!(hits.load(Ordering::Relaxed), 8);
    }

    #[test]
    fn long_waits_or_an_absent_helper_start_a_growing_back_off() {
        let team = Team::new().expect("a thread");
        let b = &team.backoff;
        assert!(!b.off());
        // A window whose helper ran half the pieces, without long waits.
        b.record(Duration::ZERO, 8, 4);
        thread::sleep(WINDOW);
        b.record(Duration::ZERO, 8, 4);
        assert!(!b.off());
        // A window spent mostly waiting for a descheduled helper.
        b.record(WINDOW, 8, 4);
        thread::sleep(WINDOW);
        b.record(Duration::ZERO, 8, 4);
        assert!(b.off());
        let first = b.off_until.load(Ordering::Relaxed);
        assert_eq!(
            b.next_backoff.load(Ordering::Relaxed),
            2 * BACKOFF_MIN.as_nanos() as u64
        );
        // The next window starts when the back-off ends.
        assert_eq!(b.window_start.load(Ordering::Relaxed), first);
        // A window in which the helper took almost nothing backs off too.
        b.off_until.store(0, Ordering::Relaxed);
        b.window_start.store(0, Ordering::Relaxed);
        b.record(Duration::ZERO, 100, 1);
        assert!(b.off() && b.off_until.load(Ordering::Relaxed) > first);
        assert_eq!(
            b.next_backoff.load(Ordering::Relaxed),
            4 * BACKOFF_MIN.as_nanos() as u64
        );
    }

    #[test]
    fn jobs_of_three_pieces_with_one_for_the_helper_keep_the_team() {
        // The caller claims first, so of three pieces a helper on its core
        // takes one: a third of the pieces, but all of its half.
        let team = Team::new().expect("a thread");
        let b = &team.backoff;
        thread::sleep(WINDOW);
        for _ in 0..20 {
            b.record(Duration::ZERO, 3, 1);
        }
        assert!(!b.off());
        thread::sleep(WINDOW);
        b.record(Duration::ZERO, 3, 1);
        assert!(!b.off());
        // Taking none of them is a helper off its core.
        for _ in 0..20 {
            b.record(Duration::ZERO, 3, 0);
        }
        thread::sleep(WINDOW);
        b.record(Duration::ZERO, 3, 0);
        assert!(b.off());
    }

    #[test]
    fn a_clean_window_shortens_the_next_back_off() {
        let team = Team::new().expect("a thread");
        let b = &team.backoff;
        thread::sleep(WINDOW);
        b.record(Duration::ZERO, 100, 1);
        assert!(b.off());
        assert_eq!(
            b.next_backoff.load(Ordering::Relaxed),
            2 * BACKOFF_MIN.as_nanos() as u64
        );
        // The trial window after the back-off: the helper ran its share.
        b.off_until.store(0, Ordering::Relaxed);
        b.window_start.store(0, Ordering::Relaxed);
        b.record(Duration::ZERO, 8, 4);
        assert!(!b.off());
        assert_eq!(
            b.next_backoff.load(Ordering::Relaxed),
            BACKOFF_MIN.as_nanos() as u64
        );
    }

    #[test]
    fn a_panicking_piece_is_raised_by_the_caller() {
        let team = Team::new().expect("a thread");
        let r = catch_unwind(AssertUnwindSafe(|| {
            team.run(6, &|c| {
                if c == 3 {
                    panic!("piece 3");
                }
            })
        }));
        assert!(r.is_err());
        // The team still works afterwards.
        assert_eq!(team.map(4, |c| c), vec![0, 1, 2, 3]);
    }
}
