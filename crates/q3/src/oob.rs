//! Connectionless datagrams: `0xFFFFFFFF` then a command line of text (or,
//! for `connect`, text followed by a Huffman-compressed userinfo).

/// The four bytes that start every connectionless datagram; a netchan
/// datagram never starts with them (its sequence is never -1).
pub const MARKER: [u8; 4] = [0xFF; 4];

/// Whether `datagram` is connectionless.
pub fn is_oob(datagram: &[u8]) -> bool {
    datagram.len() >= 4 && datagram[..4] == MARKER
}

/// A connectionless datagram carrying `text`.
pub fn encode(text: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + text.len());
    out.extend_from_slice(&MARKER);
    out.extend_from_slice(text.as_bytes());
    out
}

/// The payload of a connectionless datagram (after the marker), or `None`
/// if `datagram` is not one.
pub fn payload(datagram: &[u8]) -> Option<&[u8]> {
    is_oob(datagram).then(|| &datagram[4..])
}

/// The first word of a connectionless payload (the command, e.g.
/// `infoResponse`, `challengeResponse`, `print`), ended by whitespace or
/// the end, and the rest after that one separator. Non-UTF-8 bytes in the
/// command are replaced.
pub fn command(payload: &[u8]) -> (String, &[u8]) {
    let end = payload
        .iter()
        .position(|b| b.is_ascii_whitespace() || *b == 0)
        .unwrap_or(payload.len());
    let word = String::from_utf8_lossy(&payload[..end]).into_owned();
    let rest = if end < payload.len() {
        &payload[end + 1..]
    } else {
        &[]
    };
    (word, rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_then_split_gives_back_the_command_and_rest() {
        let d = encode("infoResponse\n\\a\\b");
        assert!(is_oob(&d));
        let (cmd, rest) = command(payload(&d).unwrap());
        assert_eq!(cmd, "infoResponse");
        assert_eq!(rest, b"\\a\\b");
    }

    #[test]
    fn a_netchan_datagram_is_not_oob() {
        assert!(!is_oob(&[1, 0, 0, 0, 9]));
        assert!(!is_oob(&[0xFF, 0xFF, 0xFF]));
        assert_eq!(payload(&[0, 0, 0, 0]), None);
    }
}
