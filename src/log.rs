//! Diagnostics for the host (CONTRACT §1): an optional process-wide log
//! callback, off by default. The library never writes to stdout or stderr
//! itself; what it has to say goes here, with a level and the subsystem it
//! came from (`mcp`, `http`, `translate`, `skills`, `client`).
//!
//! Messages never carry a header value, an API key or the expansion of an
//! `${ENV}` reference: callers build them from names and statuses, and a
//! server's own stderr lines are passed on as the server wrote them.
//!
//! When no logger is set, [`enabled`] is one relaxed atomic load and the
//! message is never built.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, RwLock};

/// How much a message matters; a logger set at a level receives that level
/// and every more severe one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum Level {
    Error = 1,
    Warn = 2,
    Info = 3,
    Debug = 4,
}

impl Level {
    /// A level from its number (1 error … 4 debug); 0 and anything above 4
    /// are `None` (0 turns logging off).
    pub fn from_number(n: i32) -> Option<Level> {
        Some(match n {
            1 => Level::Error,
            2 => Level::Warn,
            3 => Level::Info,
            4 => Level::Debug,
            _ => return None,
        })
    }
}

/// The host's logger: level, target, message.
pub type Logger = Arc<dyn Fn(Level, &str, &str) + Send + Sync>;

/// The most verbose level delivered; 0 is off.
static MAX: AtomicU8 = AtomicU8::new(0);
static LOGGER: RwLock<Option<Logger>> = RwLock::new(None);

/// Sets (or, with `None`, removes) the process-wide logger. A logger being
/// replaced may still receive the messages already under way.
pub fn set(logger: Option<(Level, Logger)>) {
    let mut slot = LOGGER
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    match logger {
        Some((level, f)) => {
            *slot = Some(f);
            MAX.store(level as u8, Ordering::Release);
        }
        None => {
            MAX.store(0, Ordering::Release);
            *slot = None;
        }
    }
}

/// Whether a message at `level` would be delivered.
#[inline]
pub fn enabled(level: Level) -> bool {
    (level as u8) <= MAX.load(Ordering::Relaxed)
}

/// Delivers a message when a logger wants its level; `message` is only
/// built then. The logger runs on the calling thread with no lock held that
/// a logger calling back into the library could need (the slot's read lock
/// is released before the call).
pub fn emit(level: Level, target: &str, message: impl FnOnce() -> String) {
    if !enabled(level) {
        return;
    }
    let logger = LOGGER
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    if let Some(f) = logger {
        let text = message();
        // A logger that panics must not take the library's call down.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(level, target, &text)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn messages_below_the_level_are_never_built() {
        let got = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&got);
        set(Some((
            Level::Warn,
            Arc::new(move |l: Level, t: &str, m: &str| {
                sink.lock().unwrap().push(format!("{l:?} {t} {m}"));
            }),
        )));
        emit(Level::Error, "mcp", || "bad".into());
        emit(Level::Info, "mcp", || {
            panic!("an info message must not be built")
        });
        emit(Level::Warn, "skills", || "odd".into());
        set(None);
        emit(Level::Error, "mcp", || panic!("off means off"));
        assert_eq!(*got.lock().unwrap(), ["Error mcp bad", "Warn skills odd"]);
        assert_eq!(Level::from_number(0), None);
        assert_eq!(Level::from_number(4), Some(Level::Debug));
    }
}
