//! Borrowing jobs on threads that outlive them. [`scoped`] hands each job
//! to a spawner that takes only `'static` jobs (the library's pooled
//! threads, `runtime::run_pooled`) and does not return, nor unwind, before
//! every job it handed over has run or been dropped. What the jobs borrow
//! therefore outlives them: the guarantee `std::thread::scope` gives,
//! without a thread start per job. No crate offers this over a pool of our
//! own (rayon's scope runs on rayon's fixed-size pool, where a job that
//! blocks for long, as a tool call may, holds one of a few threads).

use std::sync::{Arc, Condvar, Mutex, PoisonError};

/// A job that may borrow from the caller of [`scoped`].
pub(crate) type Job<'a> = Box<dyn FnOnce() + Send + 'a>;

/// What a spawner receives: it must run the job or drop it.
pub(crate) type StaticJob = Box<dyn FnOnce() + Send + 'static>;

/// How many handed-over jobs have neither run nor been dropped.
struct Latch {
    left: Mutex<usize>,
    zero: Condvar,
}

impl Latch {
    fn add(&self) {
        *self.left.lock().unwrap_or_else(PoisonError::into_inner) += 1;
    }

    fn done(&self) {
        let mut left = self.left.lock().unwrap_or_else(PoisonError::into_inner);
        *left -= 1;
        if *left == 0 {
            self.zero.notify_all();
        }
    }

    fn wait(&self) {
        let mut left = self.left.lock().unwrap_or_else(PoisonError::into_inner);
        while *left > 0 {
            left = self.zero.wait(left).unwrap_or_else(PoisonError::into_inner);
        }
    }
}

/// A handed-over job: counted done once the job and everything it owns are
/// gone, whether it ran, panicked or was dropped unrun.
struct Tracked<'a> {
    job: Option<Job<'a>>,
    latch: Arc<Latch>,
}

impl Tracked<'_> {
    fn run(mut self) {
        if let Some(job) = self.job.take() {
            job();
        }
    }
}

impl Drop for Tracked<'_> {
    fn drop(&mut self) {
        drop(self.job.take());
        self.latch.done();
    }
}

/// Waits for every handed-over job when [`scoped`] returns or unwinds.
struct WaitAll(Arc<Latch>);

impl Drop for WaitAll {
    fn drop(&mut self) {
        self.0.wait();
    }
}

/// Hands every job of `jobs` to `spawn`, runs `here` on this thread, then
/// waits until each handed-over job has run or been dropped, and gives
/// `here`'s result. A panic in `here` (or in `spawn`) still waits for the
/// jobs already handed over before it goes on up; jobs not yet handed over
/// are dropped unrun. A spawner that neither runs nor drops a job hangs
/// this call: `spawn` must do one or the other.
pub(crate) fn scoped<'a, R>(
    jobs: Vec<Job<'a>>,
    spawn: &dyn Fn(StaticJob),
    here: impl FnOnce() -> R,
) -> R {
    let latch = Arc::new(Latch {
        left: Mutex::new(0),
        zero: Condvar::new(),
    });
    let _wait = WaitAll(Arc::clone(&latch));
    for job in jobs {
        latch.add();
        let tracked = Tracked {
            job: Some(job),
            latch: Arc::clone(&latch),
        };
        let job: Job<'a> = Box::new(move || tracked.run());
        // SAFETY: only the lifetime changes (the same trait object, the
        // same layout). The job cannot outlive what it borrows: `_wait`
        // blocks this function's return and its unwinding until `tracked`
        // is dropped, which happens after the job has run or when the
        // spawner drops it unrun, and `Tracked::drop` drops the job (and
        // everything it owns) before it counts it done.
        let job: StaticJob = unsafe { std::mem::transmute::<Job<'a>, StaticJob>(job) };
        spawn(job);
    }
    here()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    fn on_a_thread(job: StaticJob) {
        std::thread::spawn(move || {
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
        });
    }

    #[test]
    fn jobs_that_borrow_have_all_run_when_it_returns() {
        let seen = AtomicUsize::new(0);
        let words = ["a".to_string(), "bb".to_string(), "ccc".to_string()];
        let jobs: Vec<Job<'_>> = words
            .iter()
            .map(|w| {
                let seen = &seen;
                Box::new(move || {
                    std::thread::sleep(Duration::from_millis(20));
                    seen.fetch_add(w.len(), Ordering::SeqCst);
                }) as Job<'_>
            })
            .collect();
        let here = scoped(jobs, &on_a_thread, || seen.load(Ordering::SeqCst));
        assert!(here < 6, "the jobs ran on other threads, after a sleep");
        assert_eq!(seen.load(Ordering::SeqCst), 6);
    }

    #[test]
    fn a_panicking_job_is_counted_done_and_the_others_still_run() {
        let seen = AtomicUsize::new(0);
        let jobs: Vec<Job<'_>> = (0..4)
            .map(|i| {
                let seen = &seen;
                Box::new(move || {
                    if i == 1 {
                        crate::quiet_panic::quietly(|| panic!("job {i} fails"));
                    }
                    seen.fetch_add(1, Ordering::SeqCst);
                }) as Job<'_>
            })
            .collect();
        scoped(jobs, &on_a_thread, || ());
        assert_eq!(seen.load(Ordering::SeqCst), 3);
    }

    #[test]
    fn jobs_the_spawner_drops_unrun_do_not_hold_it_up() {
        let ran = AtomicUsize::new(0);
        let jobs: Vec<Job<'_>> = (0..3)
            .map(|_| {
                let ran = &ran;
                Box::new(move || {
                    ran.fetch_add(1, Ordering::SeqCst);
                }) as Job<'_>
            })
            .collect();
        let dropped = |job: StaticJob| drop(job);
        assert_eq!(scoped(jobs, &dropped, || 7), 7);
        assert_eq!(ran.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn a_panic_here_still_waits_for_the_jobs() {
        let done = Arc::new(AtomicUsize::new(0));
        let d = Arc::clone(&done);
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let jobs: Vec<Job<'_>> = vec![Box::new(move || {
                std::thread::sleep(Duration::from_millis(50));
                d.fetch_add(1, Ordering::SeqCst);
            })];
            crate::quiet_panic::quietly(|| {
                scoped(jobs, &on_a_thread, || -> () { panic!("here fails") })
            })
        }));
        assert!(outcome.is_err());
        assert_eq!(done.load(Ordering::SeqCst), 1, "waited for the job");
    }
}
