//! The SSE2 block scan of the JSON string escaper ([`crate::json`]).
//!
//! It sits in `sys`, with the crate's other non-C `unsafe`, because Rust still calls
//! an SSE2 intrinsic `unsafe` outside a function marked with the feature,
//! even on x86_64, where every CPU has it; the safe function below is what
//! the escaper calls.

/// Bit `i` set when `block[i]` needs an escape in a JSON string (`"`, `\`,
/// or a byte below 0x20); the same mask as [`crate::json::escape_mask`].
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[inline(always)]
pub(crate) fn escape_mask(block: &[u8; 16]) -> u32 {
    // SAFETY: this build targets SSE2 (the cfg above), so the function's
    // feature is present.
    unsafe { mask(block) }
}

/// [`escape_mask`]: a byte needs an escape when it equals `"` or `\`, or
/// when its unsigned minimum with 0x1f is itself (it is below 0x20).
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[target_feature(enable = "sse2")]
fn mask(block: &[u8; 16]) -> u32 {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8,
    };
    // SAFETY: `block` is 16 readable bytes; the load has no alignment need.
    let v = unsafe { _mm_loadu_si128(block.as_ptr().cast::<__m128i>()) };
    let quote = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8));
    let backslash = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8));
    let control = _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1f)), v);
    _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(quote, backslash), control)) as u32
}
