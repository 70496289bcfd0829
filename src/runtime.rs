//! The one tokio runtime the library drives its network and process I/O on,
//! created on first use and shared by every toolkit and every thread.

use std::future::Future;
use std::sync::OnceLock;
use tokio::runtime::{Builder, Runtime};

static RUNTIME: OnceLock<Runtime> = OnceLock::new();

/// The name of the runtime's threads (workers and blocking pool).
pub const THREAD_NAME: &str = "toolnexus-io";

/// The shared multi-threaded runtime.
pub fn get() -> &'static Runtime {
    RUNTIME.get_or_init(|| {
        Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name(THREAD_NAME)
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("toolnexus: cannot start the I/O runtime: {e}"))
    })
}

/// Runs `fut` to completion from a host thread. Must not be called from a
/// thread of the runtime itself; library code that is already async awaits
/// instead.
pub fn block_on<F: Future>(fut: F) -> F::Output {
    get().block_on(fut)
}
