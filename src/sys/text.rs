//! Cutting a `str` where its bytes already say the cut is a character
//! boundary, without the out-of-line call `str::get` costs on the JSON
//! reader's per-string path.

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

#[cfg(test)]
mod tests {
    use super::between_ascii;

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
