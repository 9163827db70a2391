//! One batch of a multiclass stream learnt by every binary learner at once
//! (`IncrementalLearner.learn_many`): each learner takes its rows of the
//! batch (a pair of classes, or one class against the rest), on the calling
//! thread or shared between it and one helper thread, largest store first.

use super::*;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

/// How often the caller, its learners done, answers signals while the
/// helper finishes its own.
const WAIT_POLL: Duration = Duration::from_millis(50);

/// One batch of a multiclass stream: row-major `x` (`d` features), each
/// row's class index `cls` and stream position `seen`, and per learner its
/// binary problem: `(a, b)` a pair of classes (their rows, `+1` for `a`),
/// `(a, -1)` class `a` against the rest (every row).
#[derive(Clone, Copy, Debug)]
pub struct ManyBatch<'a> {
    pub x: &'a [f64],
    pub cls: &'a [i64],
    pub seen: &'a [i64],
    pub problems: &'a [(i64, i64)],
}

/// What one learner of [`learn_many`] did, and the stream positions of the
/// rows it learnt.
pub type Learnt = (LearnReport, Vec<i64>);

/// The rows of a batch one binary problem learns (None: every row) and
/// their labels; see [`ManyBatch`].
fn problem_rows(cls: &[i64], problem: (i64, i64)) -> (Option<Vec<usize>>, Vec<f64>) {
    let (a, b) = problem;
    let label = |c: i64| if c == a { 1.0 } else { -1.0 };
    if b < 0 {
        return (None, cls.iter().map(|&c| label(c)).collect());
    }
    let rows: Vec<usize> = (0..cls.len())
        .filter(|&r| cls[r] == a || cls[r] == b)
        .collect();
    let labels = rows.iter().map(|&r| label(cls[r])).collect();
    (Some(rows), labels)
}

/// One learner's share of [`learn_many`]: its rows of the batch (copied
/// out for a pair of classes), learnt in order.
fn learn_problem(
    lr: &mut OnlineLearner,
    batch: &ManyBatch<'_>,
    problem: (i64, i64),
    opts: &OnlineOptions,
    poll: &mut dyn FnMut() -> Result<()>,
) -> Result<Learnt> {
    let d = lr.d();
    let ManyBatch { x, cls, seen, .. } = *batch;
    let (rows, labels) = problem_rows(cls, problem);
    let (own_x, own_cls, own_seen);
    let own = match &rows {
        None => Batch {
            x,
            y: &labels,
            cls,
            seen,
        },
        Some(rows) => {
            own_x = rows
                .iter()
                .flat_map(|&r| x[r * d..(r + 1) * d].iter().copied())
                .collect::<Vec<f64>>();
            own_cls = rows.iter().map(|&r| cls[r]).collect::<Vec<i64>>();
            own_seen = rows.iter().map(|&r| seen[r]).collect::<Vec<i64>>();
            Batch {
                x: &own_x,
                y: &labels,
                cls: &own_cls,
                seen: &own_seen,
            }
        }
    };
    let out_seen = own.seen.to_vec();
    if labels.is_empty() {
        // None of the batch's rows: the learner is as it was.
        return Ok((LearnReport::default(), out_seen));
    }
    let rep = lr.learn_polled(own, opts, poll)?;
    Ok((rep, out_seen))
}

/// Every learner learns its rows of `batch` (learner `k` the problem
/// `batch.problems[k]`), on the calling thread, or with `threads > 1` on it
/// and one helper thread (the learners taken largest first, each by one
/// thread; the results do not depend on the split). Signals are answered
/// from the calling thread (`poll`); a stop there stops the helper's
/// learner before its next example too. The first error in learner order
/// is returned, as the calling thread alone would have met it.
pub fn learn_many(
    learners: &mut [&mut OnlineLearner],
    batch: &ManyBatch<'_>,
    opts: &OnlineOptions,
    threads: usize,
    poll: &mut dyn FnMut() -> Result<()>,
) -> Result<Vec<Learnt>> {
    let problems = batch.problems;
    if threads < 2 || learners.len() < 2 {
        return learners
            .iter_mut()
            .zip(problems)
            .map(|(lr, &p)| learn_problem(lr, batch, p, opts, poll))
            .collect();
    }
    let ctl = Control::new();
    let opts = OnlineOptions {
        control: ctl.clone(),
        ..opts.clone()
    };
    let poll = CallerOnly {
        poll: std::cell::UnsafeCell::new(poll),
        owner: std::thread::current().id(),
    };
    // Largest stores first, so that the last pieces are short ones.
    let mut order: Vec<usize> = (0..learners.len()).collect();
    order.sort_by_key(|&k| std::cmp::Reverse(learners[k].len()));
    let slots: Vec<std::sync::Mutex<&mut &mut OnlineLearner>> =
        learners.iter_mut().map(std::sync::Mutex::new).collect();
    let next = AtomicUsize::new(0);
    // Each thread takes the next learner until none is left. One job per
    // batch: the helper ends with it (a spawned thread, not a team that
    // spins for more work), and a caller done first waits for it off its
    // core (parked, woken by the helper), answering signals meanwhile.
    let work = || {
        let mut done = Vec::new();
        loop {
            let c = next.fetch_add(1, Ordering::Relaxed);
            let Some(&k) = order.get(c) else {
                return done;
            };
            let mut lr = slots[k].lock().unwrap_or_else(|e| e.into_inner());
            let mut check = || -> Result<()> {
                let outcome = poll.call();
                if outcome.is_err() {
                    ctl.cancel();
                }
                outcome
            };
            done.push((
                k,
                learn_problem(&mut lr, batch, problems[k], &opts, &mut check),
            ));
        }
    };
    let finished = AtomicBool::new(false);
    let caller = std::thread::current();
    let (done, stopped) = std::thread::scope(|s| {
        // Without a thread (the system refuses one) the caller takes every
        // learner; the results do not depend on the split.
        let helper = std::thread::Builder::new()
            .name("localsvm-learn".into())
            .spawn_scoped(s, || {
                let theirs = work();
                finished.store(true, Ordering::Release);
                caller.unpark();
                theirs
            })
            .ok();
        let mut done = work();
        let mut stopped = Ok(());
        if let Some(h) = helper {
            // Signals are still answered while the helper finishes its
            // learner: a stop cancels it before its next example.
            while !finished.load(Ordering::Acquire) {
                if stopped.is_ok() {
                    stopped = poll.call();
                    if stopped.is_err() {
                        ctl.cancel();
                    }
                }
                std::thread::park_timeout(WAIT_POLL);
            }
            match h.join() {
                Ok(theirs) => done.extend(theirs),
                Err(payload) => std::panic::resume_unwind(payload),
            }
        }
        (done, stopped)
    });
    stopped?;
    let mut out: Vec<Option<Result<Learnt>>> = (0..learners.len()).map(|_| None).collect();
    for (k, r) in done {
        out[k] = Some(r);
    }
    out.into_iter()
        .map(|r| r.expect("every learner of the job has run"))
        .collect()
}

/// The calling thread's poll, shared with the helper: only the thread
/// that made it calls it ([`CallerOnly::call`] does nothing on another).
struct CallerOnly<'a> {
    poll: std::cell::UnsafeCell<&'a mut dyn FnMut() -> Result<()>>,
    owner: std::thread::ThreadId,
}

// SAFETY: the poll is reached only from the thread `owner` (checked in
// `call`), which is also the thread that created it, one call at a time
// (a thread runs one piece of the job at a time).
unsafe impl Sync for CallerOnly<'_> {}

impl CallerOnly<'_> {
    /// The poll, on the owning thread; `Ok` on any other.
    fn call(&self) -> Result<()> {
        if std::thread::current().id() != self.owner {
            return Ok(());
        }
        // SAFETY: see the `Sync` impl: only the owner gets here, and it
        // holds no other reference to the poll meanwhile.
        unsafe { (*self.poll.get())() }
    }
}
