//! Finding one byte in a slice with the C library's `memchr`.
//!
//! The C library picked its vector form for this CPU when it was loaded,
//! so the first call costs nothing more. The `memchr` crate instead reads
//! the CPU's features on its first call (std's `is_x86_feature_detected`),
//! with about ten `CPUID` instructions, each a trap to the hypervisor on a
//! virtual machine: some 80 µs once per process. That is half again what a
//! host pays to build and render a small toolkit (bench/README.md, "Cold
//! start without libgcc_s"), so the paths a start takes search here.

use nix::libc;

/// The offset of the first `byte` in `hay`.
#[inline]
pub(crate) fn find(byte: u8, hay: &[u8]) -> Option<usize> {
    if hay.is_empty() {
        return None;
    }
    // SAFETY: `hay` is a live slice of `hay.len()` readable bytes; `memchr`
    // reads no further and writes nothing. A non-null result points into
    // that slice, at or after its start.
    let at = unsafe { libc::memchr(hay.as_ptr().cast(), libc::c_int::from(byte), hay.len()) };
    if at.is_null() {
        None
    } else {
        Some(at as usize - hay.as_ptr() as usize)
    }
}

/// How many times `byte` occurs in `hay`.
pub(crate) fn count(byte: u8, hay: &[u8]) -> usize {
    let mut n = 0;
    let mut rest = hay;
    while let Some(i) = find(byte, rest) {
        n += 1;
        rest = &rest[i + 1..];
    }
    n
}

#[cfg(test)]
mod tests {
    use super::{count, find};

    #[test]
    fn finds_the_first_byte_and_counts_them_all() {
        assert_eq!(find(b'/', b""), None);
        assert_eq!(find(b'/', b"abc"), None);
        assert_eq!(find(b'/', b"a/b/c"), Some(1));
        assert_eq!(find(0, b"name\0next\0"), Some(4));
        let long: Vec<u8> = (0..10_000u32)
            .map(|i| if i == 9_999 { 0 } else { b'x' })
            .collect();
        assert_eq!(find(0, &long), Some(9_999));
        assert_eq!(find(0, &long[..9_999]), None);
        assert_eq!(count(b'/', b"a/b//c/"), 4);
        assert_eq!(count(b'/', b"abc"), 0);
        assert_eq!(count(b'/', b""), 0);
    }
}
