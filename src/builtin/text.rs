//! Line splitting shared by the text tools.

/// The lines of `text` as the recorded port splits them: on `\n` or `\r\n`,
/// with trailing empty lines dropped (so "a\nb\n" is two lines and "" none).
pub fn lines(text: &str) -> impl Iterator<Item = &str> {
    let mut body = text;
    loop {
        if let Some(s) = body.strip_suffix("\r\n") {
            body = s;
        } else if let Some(s) = body.strip_suffix('\n') {
            body = s;
        } else {
            break;
        }
    }
    let pieces = if body.is_empty() {
        None
    } else {
        Some(body.split('\n'))
    };
    pieces
        .into_iter()
        .flatten()
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
}
