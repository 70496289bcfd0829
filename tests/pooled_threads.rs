//! The library's thread pool (`runtime::run_pooled`, where the agent
//! runtime's turns run): a thread that finished a job takes the next one
//! instead of a new thread starting, a job's panic ends the job only, and a
//! thread waiting holds nothing of its last job. One test in a binary of
//! its own, so that no other test takes the waiting thread.

mod quiet_panic;

use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};
use toolnexus::runtime::{pooled_threads_waiting, run_pooled};

fn on_pool(job: impl FnOnce() -> std::thread::ThreadId + Send + 'static) -> std::thread::ThreadId {
    let (tx, rx) = mpsc::channel();
    run_pooled(
        "toolnexus-test",
        Box::new(move || {
            let _ = tx.send(job());
        }),
    )
    .expect("a thread");
    rx.recv_timeout(Duration::from_secs(30))
        .expect("the job ran")
}

fn until_waiting(n: usize) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while pooled_threads_waiting() != n {
        assert!(
            Instant::now() < deadline,
            "{} waiting, not {n}",
            pooled_threads_waiting()
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn a_finished_thread_takes_the_next_job_and_keeps_nothing_of_the_last() {
    let held = Arc::new(());
    let mine = Arc::clone(&held);
    let first = on_pool(move || {
        let _keep = mine;
        assert_eq!(std::thread::current().name(), Some("toolnexus-test"));
        std::thread::current().id()
    });
    until_waiting(1);
    assert_eq!(
        Arc::strong_count(&held),
        1,
        "the waiting thread let go of the job"
    );
    let second = on_pool(|| std::thread::current().id());
    assert_eq!(first, second, "the waiting thread took the job");
    until_waiting(1);

    // A job that panics ends itself only: the thread takes the next one.
    let job = || quiet_panic::quietly(|| panic!("a job's own panic"));
    run_pooled("toolnexus-test", Box::new(job)).expect("a thread");
    until_waiting(1);
    assert_eq!(on_pool(|| std::thread::current().id()), first);
    // Its id is back before the thread waits again: let it wait first.
    until_waiting(1);

    // Two jobs at once: the waiting thread takes one, a new thread the
    // other; both wait for a job afterwards.
    let gate = Arc::new(std::sync::Barrier::new(3));
    let (ids_tx, ids_rx) = mpsc::channel();
    for _ in 0..2 {
        let (ids, gate) = (ids_tx.clone(), Arc::clone(&gate));
        let job = move || {
            gate.wait();
            let _ = ids.send(std::thread::current().id());
        };
        run_pooled("toolnexus-test", Box::new(job)).expect("a thread");
    }
    gate.wait();
    let a = ids_rx.recv_timeout(Duration::from_secs(30)).expect("ran");
    let b = ids_rx.recv_timeout(Duration::from_secs(30)).expect("ran");
    assert_ne!(a, b);
    assert!(
        a == first || b == first,
        "the waiting thread took one of them"
    );
    until_waiting(2);
}
