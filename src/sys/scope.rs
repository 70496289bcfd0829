//! Borrowing jobs on threads that outlive them. [`scoped`] gives its
//! caller a [`Scope`] whose jobs go to a spawner that takes only `'static`
//! jobs (the library's pooled threads, `runtime::run_pooled`), and does not
//! return, nor unwind, before every job handed over has run or been
//! dropped. What the jobs borrow therefore outlives them: the guarantee
//! `std::thread::scope` gives, without a thread start per job. No crate
//! offers this over a pool of our own (rayon's scope runs on rayon's
//! fixed-size pool, where a job that blocks for long, as a tool call may,
//! holds one of a few threads).
//!
//! One thing `std::thread::scope` cannot do: a job that no thread has
//! started by the time the caller's own work ends is taken back and
//! dropped unrun, so the caller waits only for jobs already running. A
//! caller whose jobs help it through a list of items it also works through
//! itself loses nothing by that, and does not wait for a helper to wake up
//! only to find the list done.

use std::marker::PhantomData;
use std::sync::{Arc, Condvar, Mutex, PoisonError};

/// What a spawner receives: it must run the job or drop it.
pub(crate) type StaticJob = Box<dyn FnOnce() + Send + 'static>;

/// Given to the spawner with a job handed over by [`Scope::spawn_later`]:
/// tells whether the job still waits for a thread (neither started nor
/// taken back), so a spawner that starts it later can drop it instead.
pub(crate) struct Pending(Arc<Slot>);

impl Pending {
    /// Whether the job still waits for a thread.
    pub(crate) fn get(&self) -> bool {
        self.0
            .job
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some()
    }
}

/// How many handed-over jobs have neither run nor been dropped, and
/// whether the scope's owner sleeps until none is left: the last job
/// wakes it only then (a wake-up with no one to wake is a system call for
/// nothing).
struct Latch {
    count: Mutex<Count>,
    zero: Condvar,
}

#[derive(Default)]
struct Count {
    left: usize,
    sleeping: bool,
}

impl Latch {
    fn add(&self) {
        self.count
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .left += 1;
    }

    fn done(&self) {
        let mut count = self.count.lock().unwrap_or_else(PoisonError::into_inner);
        count.left -= 1;
        if count.left == 0 && count.sleeping {
            self.zero.notify_all();
        }
    }

    fn wait(&self) {
        let mut count = self.count.lock().unwrap_or_else(PoisonError::into_inner);
        while count.left > 0 {
            count.sleeping = true;
            count = self
                .zero
                .wait(count)
                .unwrap_or_else(PoisonError::into_inner);
        }
        count.sleeping = false;
    }
}

/// A handed-over job, until a thread takes it to run or the scope takes it
/// back. Shared (an `Arc`) by the scope and the `'static` job the spawner
/// holds, which may outlive the scope: after the job is taken the slot
/// holds nothing that borrows.
struct Slot {
    /// The job, its lifetime erased (see [`Scope::spawn`]).
    job: Mutex<Option<StaticJob>>,
    latch: Arc<Latch>,
}

impl Slot {
    /// Takes the job, if nothing took it yet, runs it or drops it, and
    /// counts it done once it and everything it owns are gone (also when
    /// it panics).
    fn take(&self, run: bool) {
        let job = self
            .job
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let Some(job) = job else { return };
        struct Done<'l>(&'l Latch);
        impl Drop for Done<'_> {
            fn drop(&mut self) {
                self.0.done();
            }
        }
        let _done = Done(&self.latch);
        if run {
            job();
        } else {
            drop(job);
        }
    }
}

/// What the spawner holds: runs the slot's job when called, drops it
/// (counted done) when dropped uncalled.
struct Runner(Arc<Slot>);

impl Drop for Runner {
    fn drop(&mut self) {
        self.0.take(false);
    }
}

/// Where jobs that may borrow for `'env` are handed over, inside
/// [`scoped`]. Jobs may hand over more jobs through it.
pub(crate) struct Scope<'scope, 'env: 'scope> {
    spawn: Box<dyn Fn(StaticJob, Option<Pending>) + Sync + 'env>,
    latch: Arc<Latch>,
    slots: Mutex<Vec<Arc<Slot>>>,
    // Invariant in both, as `std::thread::Scope`.
    scope: PhantomData<&'scope mut &'scope ()>,
    env: PhantomData<&'env mut &'env ()>,
}

impl<'scope> Scope<'scope, '_> {
    /// Hands `job` to the spawner. It runs on the spawner's thread, or is
    /// dropped unrun: by the spawner, or by the scope when no thread has
    /// taken it by the time the caller's own work ends.
    pub(crate) fn spawn(&'scope self, job: Box<dyn FnOnce() + Send + 'scope>) {
        self.hand(job, false);
    }

    /// [`Scope::spawn`], for a job the spawner may start later (it gets a
    /// [`Pending`] with it): a helper the caller's own work may well make
    /// unneeded before it would start.
    pub(crate) fn spawn_later(&'scope self, job: Box<dyn FnOnce() + Send + 'scope>) {
        self.hand(job, true);
    }

    fn hand(&'scope self, job: Box<dyn FnOnce() + Send + 'scope>, later: bool) {
        self.latch.add();
        // SAFETY: only the lifetime changes (the same trait object, the
        // same layout). The job cannot outlive what it borrows: `scoped`
        // neither returns nor unwinds before the latch counts every job
        // handed over done, and a job is counted done only after it has
        // run (or panicked) or been dropped, with everything it owns (see
        // `Slot::take`), whoever takes it from its slot.
        let job: StaticJob =
            unsafe { std::mem::transmute::<Box<dyn FnOnce() + Send + 'scope>, StaticJob>(job) };
        let slot = Arc::new(Slot {
            job: Mutex::new(Some(job)),
            latch: Arc::clone(&self.latch),
        });
        self.slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Arc::clone(&slot));
        let pending = later.then(|| Pending(Arc::clone(&slot)));
        let runner = Runner(slot);
        (self.spawn)(Box::new(move || runner.0.take(true)), pending);
    }

    /// Takes back every job no thread has started and drops it unrun.
    fn reclaim(&self) {
        let slots = std::mem::take(&mut *self.slots.lock().unwrap_or_else(PoisonError::into_inner));
        for slot in slots {
            slot.take(false);
        }
    }
}

/// Runs `here` on this thread with a [`Scope`] to hand jobs over through
/// (to `spawn`, which must run or drop each); when `here` ends (returns or
/// panics), takes back the jobs not started yet, then waits until every
/// other job has run, and gives `here`'s result (or goes on up with its
/// panic). A spawner that neither runs nor drops a job hangs this call.
pub(crate) fn scoped<'env, R>(
    spawn: impl Fn(StaticJob, Option<Pending>) + Sync + 'env,
    here: impl for<'scope> FnOnce(&'scope Scope<'scope, 'env>) -> R,
) -> R {
    let scope = Scope {
        spawn: Box::new(spawn),
        latch: Arc::new(Latch {
            count: Mutex::new(Count::default()),
            zero: Condvar::new(),
        }),
        slots: Mutex::new(Vec::new()),
        scope: PhantomData,
        env: PhantomData,
    };
    /// Takes back and waits when `here` returns or unwinds.
    struct End<'s, 'scope, 'env>(&'s Scope<'scope, 'env>);
    impl Drop for End<'_, '_, '_> {
        fn drop(&mut self) {
            self.0.reclaim();
            self.0.latch.wait();
        }
    }
    let end = End(&scope);
    let r = here(end.0);
    drop(end);
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    fn on_a_thread(job: StaticJob, _later: Option<Pending>) {
        std::thread::spawn(move || {
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
        });
    }

    /// Until `job` has started on its thread.
    fn started(flag: &AtomicUsize, want: usize) {
        while flag.load(Ordering::SeqCst) < want {
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn jobs_that_borrow_have_all_run_when_it_returns() {
        let seen = AtomicUsize::new(0);
        let running = AtomicUsize::new(0);
        let words = ["a".to_string(), "bb".to_string(), "ccc".to_string()];
        let here = scoped(on_a_thread, |scope| {
            for w in &words {
                let (seen, running) = (&seen, &running);
                scope.spawn(Box::new(move || {
                    running.fetch_add(1, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(20));
                    seen.fetch_add(w.len(), Ordering::SeqCst);
                }));
            }
            // Every job started: none can be taken back.
            started(&running, 3);
            seen.load(Ordering::SeqCst)
        });
        assert!(here < 6, "the jobs ran on other threads, after a sleep");
        assert_eq!(seen.load(Ordering::SeqCst), 6);
    }

    #[test]
    fn a_job_may_hand_over_another_and_both_are_waited_for() {
        let seen = AtomicUsize::new(0);
        let running = AtomicUsize::new(0);
        scoped(on_a_thread, |scope| {
            let (seen, running) = (&seen, &running);
            scope.spawn(Box::new(move || {
                running.fetch_add(1, Ordering::SeqCst);
                scope.spawn(Box::new(move || {
                    running.fetch_add(1, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(20));
                    seen.fetch_add(2, Ordering::SeqCst);
                }));
                seen.fetch_add(1, Ordering::SeqCst);
            }));
            started(running, 2);
        });
        assert_eq!(seen.load(Ordering::SeqCst), 3);
    }

    #[test]
    fn a_job_no_thread_started_is_taken_back_unrun_and_not_waited_for() {
        // A spawner that keeps the jobs: no thread takes them before the
        // caller's work ends.
        let kept: Mutex<Vec<StaticJob>> = Mutex::new(Vec::new());
        let keep = |job: StaticJob, _later: Option<Pending>| kept.lock().expect("lock").push(job);
        let ran = AtomicUsize::new(0);
        let dropped = Arc::new(AtomicUsize::new(0));
        struct Counted(Arc<AtomicUsize>);
        impl Drop for Counted {
            fn drop(&mut self) {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
        let out = scoped(keep, |scope| {
            for _ in 0..3 {
                let ran = &ran;
                let counted = Counted(Arc::clone(&dropped));
                scope.spawn(Box::new(move || {
                    let _counted = counted;
                    ran.fetch_add(1, Ordering::SeqCst);
                }));
            }
            7
        });
        assert_eq!(out, 7);
        assert_eq!(dropped.load(Ordering::SeqCst), 3, "taken back and dropped");
        // What the spawner still holds runs nothing now: its job is gone.
        for job in kept.lock().expect("lock").drain(..) {
            job();
        }
        assert_eq!(ran.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn a_job_handed_over_for_later_says_whether_it_still_waits() {
        // The spawner keeps each job with what it says of itself, as a
        // spawner that starts jobs later does.
        type Kept = (StaticJob, Option<Pending>);
        let kept: Mutex<Vec<Kept>> = Mutex::new(Vec::new());
        let keep = |job: StaticJob, later: Option<Pending>| {
            kept.lock().expect("lock").push((job, later));
        };
        let ran = AtomicUsize::new(0);
        scoped(keep, |scope| {
            let ran = &ran;
            scope.spawn(Box::new(move || {
                ran.fetch_add(1, Ordering::SeqCst);
            }));
            scope.spawn_later(Box::new(move || {
                ran.fetch_add(10, Ordering::SeqCst);
            }));
            scope.spawn_later(Box::new(move || {
                ran.fetch_add(100, Ordering::SeqCst);
            }));
            let mut kept = kept.lock().expect("lock");
            assert!(kept[0].1.is_none(), "a job for now comes with nothing");
            assert!(kept[1].1.as_ref().is_some_and(Pending::get));
            // The second is started (here, as a thread would): it no
            // longer waits, and the third still does.
            let (job, pending) = kept.remove(1);
            job();
            assert!(!pending.expect("later").get());
            assert!(kept[1].1.as_ref().is_some_and(Pending::get));
        });
        assert_eq!(ran.load(Ordering::SeqCst), 10);
        // Taken back when the work here ended: nothing waits any more.
        for (job, pending) in kept.lock().expect("lock").drain(..) {
            if let Some(p) = pending {
                assert!(!p.get());
            }
            job();
        }
        assert_eq!(ran.load(Ordering::SeqCst), 10);
    }

    #[test]
    fn a_panicking_job_is_counted_done_and_the_others_still_run() {
        let seen = AtomicUsize::new(0);
        let running = AtomicUsize::new(0);
        scoped(on_a_thread, |scope| {
            for i in 0..4 {
                let (seen, running) = (&seen, &running);
                scope.spawn(Box::new(move || {
                    running.fetch_add(1, Ordering::SeqCst);
                    if i == 1 {
                        crate::quiet_panic::quietly(|| panic!("job {i} fails"));
                    }
                    seen.fetch_add(1, Ordering::SeqCst);
                }));
            }
            started(&running, 4);
        });
        assert_eq!(seen.load(Ordering::SeqCst), 3);
    }

    #[test]
    fn jobs_the_spawner_drops_unrun_do_not_hold_it_up() {
        let ran = AtomicUsize::new(0);
        let dropped = |job: StaticJob, _later: Option<Pending>| drop(job);
        let out = scoped(dropped, |scope| {
            for _ in 0..3 {
                let ran = &ran;
                scope.spawn(Box::new(move || {
                    ran.fetch_add(1, Ordering::SeqCst);
                }));
            }
            7
        });
        assert_eq!(out, 7);
        assert_eq!(ran.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn a_panic_here_still_waits_for_the_jobs() {
        let done = Arc::new(AtomicUsize::new(0));
        let running = Arc::new(AtomicUsize::new(0));
        let (d, r) = (Arc::clone(&done), Arc::clone(&running));
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            crate::quiet_panic::quietly(|| {
                scoped(on_a_thread, |scope| -> () {
                    scope.spawn(Box::new(move || {
                        r.fetch_add(1, Ordering::SeqCst);
                        std::thread::sleep(Duration::from_millis(50));
                        d.fetch_add(1, Ordering::SeqCst);
                    }));
                    started(&running, 1);
                    panic!("here fails")
                })
            })
        }));
        assert!(outcome.is_err());
        assert_eq!(done.load(Ordering::SeqCst), 1, "waited for the job");
    }
}
