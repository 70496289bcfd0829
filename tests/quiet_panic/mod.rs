//! Silences the panic message of a panic a test expects (one that the code
//! under test catches and turns into a result), so a green test log holds no
//! `panicked at` line. Only the calling thread, only inside `quietly`; every
//! other panic (a failing assertion included) prints as usual.

use std::cell::Cell;
use std::sync::Once;

thread_local! {
    static QUIET: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` with this thread's panic messages silenced. Keep assertions
/// outside: a failing one inside would be silenced too.
pub fn quietly<T>(f: impl FnOnce() -> T) -> T {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.with(Cell::get) {
                default(info);
            }
        }));
    });
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            QUIET.with(|q| q.set(false));
        }
    }
    QUIET.with(|q| q.set(true));
    let _reset = Reset;
    f()
}
