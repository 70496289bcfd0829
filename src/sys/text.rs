//! Cutting a `str` where its bytes already say the cut is a character
//! boundary, without the out-of-line call `str::get` costs on the JSON
//! reader's per-string path; and finding where a JSON string's plain text
//! stops sixteen bytes at a time.

/// `text[start..end]` when the byte before `start` and the byte at `end`
/// are ASCII (each then ends or starts a character, so both offsets are
/// character boundaries); `None` otherwise or out of range.
#[inline(always)]
pub(crate) fn between_ascii(text: &str, start: usize, end: usize) -> Option<&str> {
    let b = text.as_bytes();
    let before = *b.get(start.checked_sub(1)?)?;
    let at = *b.get(end)?;
    if start > end || before >= 0x80 || at >= 0x80 {
        return None;
    }
    // SAFETY: `start <= end < text.len()`, and both are character
    // boundaries of valid UTF-8: the byte before `start` and the byte at
    // `end` are ASCII, which is never inside a multi-byte character.
    Some(unsafe { text.get_unchecked(start..end) })
}

/// Bit `k` set for each byte `b[i + k]` (`k < 16`) that ends the plain
/// text of a JSON string: a byte below 0x20, `"` or `\`. `None` when fewer
/// than 16 bytes are left from `i`, or on a target without SSE2 (the caller
/// then looks with its word-at-a-time scan).
#[inline(always)]
pub(crate) fn string_stops16(b: &[u8], i: usize) -> Option<u32> {
    let block = b.get(i..i.checked_add(16)?)?;
    stops16(block)
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn stops16(block: &[u8]) -> Option<u32> {
    use std::arch::x86_64::{
        _mm_cmpeq_epi8, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8,
    };
    debug_assert!(block.len() >= 16);
    if block.len() < 16 {
        return None;
    }
    // SAFETY: SSE2 is part of every x86_64 target; the load reads the 16
    // bytes of `block` (checked above), unaligned loads allowed.
    let mask = unsafe {
        let v = _mm_loadu_si128(block.as_ptr().cast());
        let quote = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8));
        let backslash = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8));
        // Unsigned v <= 0x1f: the minimum of v and 0x1f is v itself.
        let control = _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1f)), v);
        _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(quote, backslash), control))
    };
    Some(mask as u32)
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn stops16(_block: &[u8]) -> Option<u32> {
    None
}

#[cfg(test)]
mod tests {
    use super::{between_ascii, string_stops16};

    #[test]
    fn the_stops_of_sixteen_bytes_are_exactly_the_bytes_that_end_plain_text() {
        // Every byte value at every position, against the byte-wise rule.
        for pos in 0..16 {
            for byte in 0..=255u8 {
                let mut block = [b'a'; 20];
                block[pos + 2] = byte;
                let want = u32::from(byte < 0x20 || byte == b'"' || byte == b'\\') << pos;
                let got = string_stops16(&block, 2);
                if cfg!(target_arch = "x86_64") {
                    assert_eq!(got, Some(want), "byte {byte:#x} at {pos}");
                } else {
                    assert_eq!(got, None, "no sixteen-byte scan on this target");
                }
            }
        }
        assert_eq!(string_stops16(&[b'a'; 20], 5), None, "15 bytes left");
        assert_eq!(string_stops16(&[b'a'; 20], usize::MAX), None);
    }

    #[test]
    fn cuts_between_ascii_bytes_only() {
        let t = "\"héllo\"";
        assert_eq!(between_ascii(t, 1, t.len() - 1), Some("héllo"));
        assert_eq!(between_ascii(t, 0, 1), None, "nothing before 0");
        assert_eq!(between_ascii(t, 1, t.len()), None, "no byte at the end");
        assert_eq!(between_ascii(t, 3, 4), None, "inside é");
        assert_eq!(between_ascii(t, 4, 3), None, "reversed");
        assert_eq!(between_ascii(t, 1, 1), Some(""));
    }
}
