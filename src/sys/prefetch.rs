//! A cache-line prefetch for the library's safe code (the one `unsafe` it
//! needs lives here, in `sys`).

/// Asks the CPU to bring the cache line holding `p` into its caches. A hint
/// only: nothing is read, and any address, even a dangling or null one, is
/// fine (a prefetch never faults).
#[inline(always)]
pub(crate) fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `prefetcht0` reads no memory the program can see and cannot
    // fault, whatever `p` is; SSE is part of the x86_64 baseline.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast())
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
