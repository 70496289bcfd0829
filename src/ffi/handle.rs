//! Reference-counted handles (issue 25 H3): the pointer a host receives for
//! a client or a toolkit is `Arc::into_raw` of the object itself. The host
//! owns one reference; every call that uses the handle takes its own for
//! as long as it runs. The host's `*_free` releases the host's reference
//! once (a second free while a call still holds the object is ignored), and
//! the last release, whoever makes it, frees. So a host that frees a handle
//! inside one of its own callbacks, or from another thread while a call
//! waits on it, gets a deferred free instead of memory corruption. A free
//! after the last release is still the host's bug.
//!
//! A new handle type (the agent runtime) embeds a [`HostRef`], implements
//! [`Handle`] and hands itself out with [`hand_out`].

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Whether the host has released its reference to a handle.
#[derive(Debug, Default)]
pub(crate) struct HostRef(AtomicBool);

/// An object handed to C as a reference-counted handle.
pub(crate) trait Handle: Sized {
    /// The host's one reference.
    fn host_ref(&self) -> &HostRef;
}

/// Hands `value` to the host, which owns the one reference.
pub(crate) fn hand_out<T: Handle>(value: T) -> *mut T {
    Arc::into_raw(Arc::new(value)).cast_mut()
}

/// A call's own reference to a handle, held while the call runs; `None`
/// for NULL.
///
/// # Safety
/// `ptr` is NULL, or came from [`hand_out`] and still has a reference (the
/// host's, or one a call holds).
pub(crate) unsafe fn hold<T: Handle>(ptr: *const T) -> Option<Arc<T>> {
    if ptr.is_null() {
        return None;
    }
    // SAFETY: a live `Arc` allocation by the caller's contract; the count
    // is raised before the new `Arc` owns it.
    unsafe {
        Arc::increment_strong_count(ptr);
        Some(Arc::from_raw(ptr))
    }
}

/// Releases the host's reference: frees the object unless a call still
/// holds it (then the last such call frees it when it returns). What the
/// object's drop runs (closing sessions, ending children, the host's
/// `user_data_free`s) may not unwind into the host. NULL is a no-op, and so
/// is a second release while a call still holds the object.
///
/// # Safety
/// `ptr` is NULL, or came from [`hand_out`] and still has a reference.
pub(crate) unsafe fn release<T: Handle>(ptr: *mut T) {
    if ptr.is_null() {
        return;
    }
    // SAFETY: live by the caller's contract.
    let already = unsafe { &*ptr }.host_ref().0.swap(true, Ordering::AcqRel);
    if already {
        return;
    }
    // SAFETY: the host's reference, given up exactly once (the flag above).
    let own = unsafe { Arc::from_raw(ptr.cast_const()) };
    let _ = catch_unwind(AssertUnwindSafe(move || drop(own)));
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    static DROPS: AtomicUsize = AtomicUsize::new(0);

    #[derive(Default)]
    struct Thing(HostRef);

    impl Handle for Thing {
        fn host_ref(&self) -> &HostRef {
            &self.0
        }
    }

    impl Drop for Thing {
        fn drop(&mut self) {
            DROPS.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn the_last_release_frees_and_a_second_free_during_a_call_is_ignored() {
        let before = DROPS.load(Ordering::SeqCst);
        let ptr = hand_out(Thing::default());
        // SAFETY: a live handle; released twice while the call holds it.
        let call = unsafe { hold(ptr) };
        unsafe {
            release(ptr);
            release(ptr);
        }
        assert_eq!(DROPS.load(Ordering::SeqCst), before);
        drop(call);
        assert_eq!(DROPS.load(Ordering::SeqCst), before + 1);
        // SAFETY: NULL is a no-op.
        unsafe { release::<Thing>(std::ptr::null_mut()) };
        assert!(unsafe { hold::<Thing>(std::ptr::null()) }.is_none());
    }
}
