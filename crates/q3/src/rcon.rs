//! The remote console ("rcon") of Quake III engines, sans-I/O: the request
//! datagram and the text of its answers.
//!
//! A request is connectionless: the four 0xFF bytes, then the line
//! `rcon PASSWORD COMMAND`. What the engines do with it (from their source,
//! not copied):
//!
//! - **ioquake3** (code/server/sv_main.c, `SVC_RemoteCommand`): the
//!   datagram's first line is read (to a newline, at most 1024 bytes; `%`
//!   and bytes above 127 read as `.`), its second word compared with the
//!   `rconpassword` cvar, and the rest of the line, after the password, run
//!   as one console command. What the command prints goes to the asker
//!   instead of the server's console, in `print\n` datagrams of at most
//!   1008 bytes of text, the last when the command ends (a `map` command
//!   ends when the new level is loaded). A wrong password is answered
//!   `Bad rconpassword.`, a server without one `No rconpassword set on
//!   the server.`. Requests are rate-limited: 10 in a burst, then one a
//!   second per source address (the same bucket as `getinfo` and
//!   `getstatus`), and wrong passwords 10 a second from everyone together.
//! - **DarkPlaces** (netconn.c) takes the same request only while its
//!   `rcon_secure` is 0 (1 and 2 ask for an HMAC-MD4 of the time or of a
//!   challenge; a game's own defaults may set 1, and a plain request is
//!   then ignored without a word), reads at most 63 bytes of password, prints
//!   the command's output to its console and to the asker in `n`
//!   datagrams (QuakeWorld's print), and does not answer a wrong password.
//!
//! [`request_into`] refuses a password or command that either engine would
//! read otherwise than written (see [`check_password`], [`check_command`]);
//! [`reply_text`] takes the text out of an answer without trusting it.

use crate::oob;

/// The longest password DarkPlaces reads (ioquake3 takes longer ones).
pub const MAX_PASSWORD_LEN: usize = 63;

/// The longest command sent: the request line stays far below the 1024
/// bytes ioquake3 reads of it.
pub const MAX_COMMAND_LEN: usize = 512;

/// What ioquake3 answers a request it refuses.
pub const REFUSALS: [&str; 2] = ["Bad rconpassword.", "No rconpassword set on the server."];

/// A password or command the request cannot carry as written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RconError {
    #[error("an rcon password is 1-{MAX_PASSWORD_LEN} ASCII letters and digits")]
    Password,
    #[error("rcon command {0}")]
    Command(String),
}

/// A password both engines read as one word, whole: 1-63 ASCII letters
/// and digits (a quote, `//` or white space would cut or split it).
pub fn check_password(password: &str) -> Result<(), RconError> {
    let ok = (1..=MAX_PASSWORD_LEN).contains(&password.len())
        && password.bytes().all(|b| b.is_ascii_alphanumeric());
    if ok {
        Ok(())
    } else {
        Err(RconError::Password)
    }
}

/// A command both engines run as written, as one command: 1-512 printable
/// ASCII characters, not starting with a space, without `;` (a second
/// command where an engine splits on it) or `%` (ioquake3 reads it as
/// `.`), and nothing that ends the line.
pub fn check_command(command: &str) -> Result<(), RconError> {
    let bad = |why: &str| {
        Err(RconError::Command(format!(
            "{:?}: {why}",
            command.chars().take(40).collect::<String>()
        )))
    };
    if command.is_empty() || command.len() > MAX_COMMAND_LEN {
        return bad(&format!("must be 1-{MAX_COMMAND_LEN} characters"));
    }
    if command.starts_with(' ') {
        return bad("must not start with a space");
    }
    match command
        .bytes()
        .find(|&b| !(b' '..=b'~').contains(&b) || b == b';' || b == b'%')
    {
        Some(_) => bad("must be printable ASCII without ; or %"),
        None => Ok(()),
    }
}

/// Writes the request running `command` with `password` into `out`
/// (cleared first).
pub fn request_into(password: &str, command: &str, out: &mut Vec<u8>) -> Result<(), RconError> {
    check_password(password)?;
    check_command(command)?;
    out.clear();
    out.extend_from_slice(&oob::MARKER);
    out.extend_from_slice(b"rcon ");
    out.extend_from_slice(password.as_bytes());
    out.push(b' ');
    out.extend_from_slice(command.as_bytes());
    Ok(())
}

/// The request running `command` with `password`.
pub fn request(password: &str, command: &str) -> Result<Vec<u8>, RconError> {
    let mut out = Vec::with_capacity(16 + password.len() + command.len());
    request_into(password, command, &mut out)?;
    Ok(out)
}

/// The text an rcon answer carries: after `print\n` (ioquake3) or `n`
/// (DarkPlaces); `None` for any other datagram. The text is the server's,
/// unchecked: any bytes.
pub fn reply_text(datagram: &[u8]) -> Option<&[u8]> {
    let payload = oob::payload(datagram)?;
    if let Some(text) = payload.strip_prefix(b"print\n") {
        return Some(text);
    }
    if payload == b"print" {
        return Some(&[]);
    }
    payload.strip_prefix(b"n")
}

/// Whether an answer's text is ioquake3's refusal (a wrong password, or
/// none set on the server).
pub fn is_refusal(text: &[u8]) -> bool {
    let line = text.split(|&b| b == b'\n').next().unwrap_or_default();
    REFUSALS.iter().any(|r| line == r.as_bytes())
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn a_request_is_the_marker_then_rcon_password_command() {
        assert_eq!(
            request("s3cret", "map oa_dm4").unwrap(),
            b"\xff\xff\xff\xffrcon s3cret map oa_dm4"
        );
        let mut out = b"old bytes".to_vec();
        request_into("a", "status", &mut out).unwrap();
        assert_eq!(out, b"\xff\xff\xff\xffrcon a status");
    }

    #[test]
    fn passwords_and_commands_an_engine_would_misread_are_refused() {
        let long = "x".repeat(MAX_PASSWORD_LEN + 1);
        for p in ["", "two words", "a\"b", "a//b", "pässword", long.as_str()] {
            assert_eq!(check_password(p), Err(RconError::Password), "{p:?}");
        }
        check_password(&"a".repeat(MAX_PASSWORD_LEN)).unwrap();
        let long = "m".repeat(MAX_COMMAND_LEN + 1);
        for c in [
            "",
            " map x",
            "map x; quit",
            "map x\nquit",
            "map x\rquit",
            "say 100%",
            "map \u{e9}",
            "map\0x",
            long.as_str(),
        ] {
            let e = check_command(c).unwrap_err();
            assert!(matches!(e, RconError::Command(_)), "{c:?}");
            assert!(request("pw", c).is_err(), "{c:?}");
        }
        check_command("map oa_dm4").unwrap();
        check_command("say \"hello there\"").unwrap();
    }

    #[test]
    fn answers_of_both_engines_give_their_text_and_others_none() {
        assert_eq!(
            reply_text(b"\xff\xff\xff\xffprint\nInitGame: x\n"),
            Some(&b"InitGame: x\n"[..])
        );
        assert_eq!(reply_text(b"\xff\xff\xff\xffprint"), Some(&b""[..]));
        assert_eq!(
            reply_text(b"\xff\xff\xff\xffnHost_ShutdownServer\n"),
            Some(&b"Host_ShutdownServer\n"[..])
        );
        assert_eq!(reply_text(b"\xff\xff\xff\xffinfoResponse\n\\a\\b"), None);
        assert_eq!(reply_text(b"\xff\xff\xff\xffprinted"), None);
        assert_eq!(reply_text(b"print\nno marker"), None);
        assert_eq!(reply_text(b""), None);
        assert!(is_refusal(b"Bad rconpassword.\n"));
        assert!(is_refusal(b"No rconpassword set on the server.\n"));
        assert!(!is_refusal(b"InitGame: Bad rconpassword.\n"));
    }

    fn password() -> impl Strategy<Value = String> {
        "[A-Za-z0-9]{1,63}"
    }

    fn command() -> impl Strategy<Value = String> {
        "[!-~&&[^;%]][ -~&&[^;%]]{0,200}"
    }

    proptest! {
        #[test]
        fn a_request_reads_back_as_the_engines_read_it(p in password(), c in command()) {
            let d = request(&p, &c).unwrap();
            let payload = oob::payload(&d).unwrap();
            // One line (ioquake3 reads to the first newline), no NUL.
            prop_assert!(!payload.contains(&b'\n') && !payload.contains(&0));
            let text = std::str::from_utf8(payload).unwrap();
            let rest = text.strip_prefix("rcon ").unwrap();
            // The password is the second word, whole; the command what
            // follows the one space after it.
            let (word, command) = rest.split_once(' ').unwrap();
            prop_assert_eq!(word, p.as_str());
            prop_assert_eq!(command, c.as_str());
        }

        #[test]
        fn any_text_is_either_refused_or_one_printable_line(p in ".{0,80}", c in "(?s).{0,80}") {
            match request(&p, &c) {
                Ok(d) => prop_assert!(d[4..].iter().all(|b| (b' '..=b'~').contains(b))),
                Err(_) => prop_assert!(check_password(&p).is_err() || check_command(&c).is_err()),
            }
        }

        #[test]
        fn any_bytes_give_an_answer_text_or_none_without_panicking(d in proptest::collection::vec(any::<u8>(), 0..64)) {
            if let Some(t) = reply_text(&d) {
                prop_assert!(t.len() + 4 < d.len() || t.is_empty());
                let _ = is_refusal(t);
            }
        }
    }
}
