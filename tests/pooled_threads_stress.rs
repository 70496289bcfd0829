//! The library's thread pool under many hand-overs at once: jobs handed
//! from many threads, and from inside jobs, each run exactly once and none
//! is lost between a waiting thread and the one handing it a job (a lost
//! wake-up would leave a job waiting until its thread gives up waiting,
//! seconds later, or forever). A binary of its own, apart from
//! `pooled_threads.rs`, which counts waiting threads.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};
use toolnexus::runtime::{pooled_threads_waiting, run_pooled};

const HANDERS: usize = 8;
const JOBS: usize = 2_000;
/// The longest a job may wait for a thread: well under the
/// [`POOLED_THREAD_IDLE`](toolnexus::limits::POOLED_THREAD_IDLE) (5 s) after
/// which a thread whose wake-up was lost would look at its slot again.
const LATEST: Duration = Duration::from_secs(4);

#[test]
fn every_job_handed_at_once_runs_exactly_once() {
    let ran: Arc<Vec<AtomicUsize>> = Arc::new(
        (0..HANDERS * JOBS * 2)
            .map(|_| AtomicUsize::new(0))
            .collect(),
    );
    let (done_tx, done_rx) = mpsc::channel::<(usize, Duration)>();
    let handers: Vec<_> = (0..HANDERS)
        .map(|h| {
            let (ran, done) = (Arc::clone(&ran), done_tx.clone());
            std::thread::spawn(move || {
                for j in 0..JOBS {
                    let slot = (h * JOBS + j) * 2;
                    let (ran, done) = (Arc::clone(&ran), done.clone());
                    // Each job hands one more from inside the pool, as a
                    // turn hands a tool call's helper.
                    let handed = Instant::now();
                    let job = move || {
                        ran[slot].fetch_add(1, Ordering::SeqCst);
                        let _ = done.send((slot, handed.elapsed()));
                        let (ran2, done2) = (Arc::clone(&ran), done.clone());
                        let handed = Instant::now();
                        run_pooled(
                            "toolnexus-test",
                            Box::new(move || {
                                ran2[slot + 1].fetch_add(1, Ordering::SeqCst);
                                let _ = done2.send((slot + 1, handed.elapsed()));
                            }),
                        )
                        .expect("a thread for the inner job");
                    };
                    run_pooled("toolnexus-test", Box::new(job)).expect("a thread");
                    if j % 97 == 0 {
                        // Now and then a pause, so that threads go back to
                        // waiting and are handed jobs while they do.
                        std::thread::sleep(Duration::from_micros(200));
                    }
                }
            })
        })
        .collect();
    drop(done_tx);
    for h in handers {
        h.join().expect("a hander");
    }
    let total = HANDERS * JOBS * 2;
    let mut slowest = (0, Duration::ZERO);
    for n in 0..total {
        match done_rx.recv_timeout(Duration::from_secs(60)) {
            Ok((slot, waited)) if waited > slowest.1 => slowest = (slot, waited),
            Ok(_) => {}
            Err(_) => {
                let unrun = ran.iter().filter(|r| r.load(Ordering::SeqCst) == 0).count();
                panic!("{n} of {total} jobs ran in 60 s; {unrun} never ran");
            }
        }
    }
    assert!(
        slowest.1 < LATEST,
        "job {} waited {:?} for a thread (a lost wake-up)",
        slowest.0,
        slowest.1
    );
    let twice = ran.iter().filter(|r| r.load(Ordering::SeqCst) > 1).count();
    assert_eq!(twice, 0, "{twice} jobs ran more than once");
    assert!(
        pooled_threads_waiting() <= toolnexus::limits::POOLED_THREADS_IDLE,
        "{} threads wait, more than the pool keeps",
        pooled_threads_waiting()
    );
}
