//! Text that someone else wrote, made safe to print: a game server's map
//! name, a log excerpt, a control socket's answer. Control characters
//! (a newline that would forge a table row, an escape sequence that would
//! drive the terminal) and the bidirectional overrides that reorder what a
//! reader sees are shown as escapes (`\n`, `\x1b`, `\u{202e}`), a
//! backslash as `\\`, and the text is cut to a length.

/// The longest text a caller usually shows of a foreign string (a map or
/// server name, one log line).
pub const SHORT: usize = 64;
/// The longest excerpt shown (a few log lines, an unexpected answer).
pub const EXCERPT: usize = 400;

/// Bidirectional formatting characters (RLO, LRI, ...): printed raw they
/// make a terminal show text in another order than it is.
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `text` with control and bidi characters escaped and at most `max`
/// characters of it kept (a cut is marked with `...`). Printable text,
/// including non-ASCII letters, stays as it is.
pub fn escape(text: &str, max: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max * 4) + 3);
    for (n, c) in text.chars().enumerate() {
        if n >= max {
            out.push_str("...");
            break;
        }
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x80 && c.is_control() => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if c.is_control() || is_bidi_control(c) => {
                out.push_str(&format!("\\u{{{:x}}}", c as u32));
            }
            c => out.push(c),
        }
    }
    out
}

/// [`escape`] for bytes that may not be UTF-8 (a socket's answer, a log):
/// invalid sequences show as U+FFFD.
pub fn escape_bytes(bytes: &[u8], max: usize) -> String {
    // Never decode more than the shown characters can need.
    let cut = &bytes[..bytes.len().min(max.saturating_mul(4) + 4)];
    let mut s = escape(&String::from_utf8_lossy(cut), max);
    if cut.len() < bytes.len() && !s.ends_with("...") {
        s.push_str("...");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_and_bidi_overrides_are_escaped() {
        assert_eq!(escape("oa_dm1", SHORT), "oa_dm1");
        assert_eq!(escape("é ü 地图", SHORT), "é ü 地图");
        assert_eq!(
            escape("dm1\n   2 10.0.0.1 \x1b[31mred\x1b[0m", SHORT),
            "dm1\\n   2 10.0.0.1 \\x1b[31mred\\x1b[0m"
        );
        assert_eq!(escape("a\r\tb\0\x7f", SHORT), "a\\r\\tb\\x00\\x7f");
        assert_eq!(escape("\u{9b}\u{202e}x", SHORT), "\\u{9b}\\u{202e}x");
        assert_eq!(escape("a\\nb", SHORT), "a\\\\nb", "a real backslash");
    }

    #[test]
    fn long_text_is_cut_and_marked() {
        assert_eq!(escape(&"x".repeat(10), 4), "xxxx...");
        assert_eq!(escape("xxxx", 4), "xxxx");
        let huge = vec![b'y'; 1 << 20];
        let s = escape_bytes(&huge, EXCERPT);
        assert_eq!(s.len(), EXCERPT + 3);
        assert_eq!(escape_bytes(b"ok\xff\n", SHORT), "ok\u{fffd}\\n");
    }
}
