//! `tickpack players --targets-file F`: the servers to play on, from a file.
//!
//! Two forms, told apart by the first character that is not white space:
//! - text: one address per line (`IP:PORT`, `[IPv6]:PORT`, `host:PORT`);
//!   blank lines and `#` comments (whole line or after an address) are
//!   skipped.
//! - JSON (`{`): the output of `kubectl get gameservers -o json` (an
//!   Agones `GameServerList`; one `GameServer` object is taken too). The
//!   game servers whose `status.state` is `Ready` or `Allocated` are taken,
//!   each at `status.address` and the port of `status.ports` named
//!   `default` (else the first); the others (Scheduled, Unhealthy,
//!   Shutdown...) are skipped and listed.
//!
//! Every problem names its line (`LINE: reason`; for JSON, the line of the
//! game server's name): an address that does not parse, a duplicate
//! (players would be spread over the same server twice), a Ready game
//! server without address or port, no target at all.
//!
//! Sans-I/O: text in, addresses out; name resolution is the caller's
//! `resolve` (the same parser as `--target`'s).

use std::net::{IpAddr, SocketAddr};

use serde_json::Value;

/// A bad line of a targets file: `line` is 1-based, 0 for the whole file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetsError {
    pub line: usize,
    pub reason: String,
}

impl TargetsError {
    /// `FILE:LINE: reason` (or `FILE: reason` for the whole file).
    pub fn in_file(&self, file: &str) -> String {
        if self.line == 0 {
            format!("{file}: {}", self.reason)
        } else {
            format!("{file}:{}: {}", self.line, self.reason)
        }
    }
}

/// A game server of a kubectl listing that was not taken, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub name: String,
    pub state: String,
}

/// What a targets file gave.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Targets {
    pub addrs: Vec<SocketAddr>,
    /// kubectl JSON only: game servers not Ready or Allocated.
    pub skipped: Vec<Skipped>,
    /// The file was kubectl JSON.
    pub from_kubectl: bool,
}

/// The game server states whose servers can take players.
pub const TAKEN_STATES: [&str; 2] = ["Ready", "Allocated"];

fn err(line: usize, reason: impl Into<String>) -> TargetsError {
    TargetsError {
        line,
        reason: reason.into(),
    }
}

/// Parses a targets file's `text`; see the module header.
pub fn parse(
    text: &str,
    resolve: impl Fn(&str) -> Result<SocketAddr, String>,
) -> Result<Targets, TargetsError> {
    let t = if text.trim_start().starts_with('{') {
        parse_kubectl(text, &resolve)?
    } else {
        parse_lines(text, &resolve)?
    };
    if t.addrs.is_empty() {
        return Err(err(
            0,
            if t.from_kubectl {
                format!(
                    "no game server is {} ({} skipped: {})",
                    TAKEN_STATES.join(" or "),
                    t.skipped.len(),
                    skipped_list(&t.skipped)
                )
            } else {
                "no address in the file (one IP:PORT per line, or the JSON of `kubectl get gameservers -o json`)".into()
            },
        ));
    }
    Ok(t)
}

/// `name (State), ...`, at most 5 named.
pub fn skipped_list(s: &[Skipped]) -> String {
    let mut names: Vec<String> = s
        .iter()
        .take(5)
        .map(|k| format!("{} ({})", k.name, k.state))
        .collect();
    if s.len() > 5 {
        names.push(format!("and {} more", s.len() - 5));
    }
    names.join(", ")
}

fn parse_lines(
    text: &str,
    resolve: &impl Fn(&str) -> Result<SocketAddr, String>,
) -> Result<Targets, TargetsError> {
    let mut t = Targets::default();
    let mut lines: Vec<usize> = vec![];
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let s = raw.split('#').next().unwrap_or("").trim();
        if s.is_empty() {
            continue;
        }
        // A line that cannot be an address is not quoted: the file may be
        // anything (a secret, a huge line), and its text is not ours to print.
        if !address_shaped(s) {
            return Err(err(
                n,
                format!(
                    "not an address of the form IP:PORT (a line of {} characters; its text is not shown)",
                    s.chars().count()
                ),
            ));
        }
        if s.split_whitespace().nth(1).is_some() {
            return Err(err(
                n,
                format!("{s:?}: one address per line (IP:PORT), nothing else"),
            ));
        }
        let a = resolve(s).map_err(|why| err(n, why))?;
        add(&mut t.addrs, &mut lines, a, n, "")?;
    }
    Ok(t)
}

/// Whether `s` could be a server address (`IP:PORT`, `[IPv6]:PORT`,
/// `host:PORT`, a few of them by mistake on one line): short, of the
/// characters such addresses have. Only such a line is quoted in an error.
fn address_shaped(s: &str) -> bool {
    s.len() <= 300
        && s.chars().all(|c| {
            c.is_ascii_alphanumeric()
                || matches!(c, '.' | ':' | '[' | ']' | '-' | '_' | '%' | ' ' | '\t')
        })
}

/// Adds `a` (from line `n`), refusing a duplicate.
fn add(
    addrs: &mut Vec<SocketAddr>,
    lines: &mut Vec<usize>,
    a: SocketAddr,
    n: usize,
    prefix: &str,
) -> Result<(), TargetsError> {
    if let Some(k) = addrs.iter().position(|x| *x == a) {
        let first = lines[k];
        return Err(err(
            n,
            format!(
                "{prefix}{a} is already the target of line {first} (each server once; --players are spread over them)"
            ),
        ));
    }
    addrs.push(a);
    lines.push(n);
    Ok(())
}

fn parse_kubectl(
    text: &str,
    resolve: &impl Fn(&str) -> Result<SocketAddr, String>,
) -> Result<Targets, TargetsError> {
    let doc: Value =
        serde_json::from_str(text).map_err(|e| err(e.line(), format!("not valid JSON: {e}")))?;
    let items: Vec<&Value> = match (doc.get("items"), doc.get("kind").and_then(Value::as_str)) {
        (Some(Value::Array(items)), _) => items.iter().collect(),
        (None, Some("GameServer")) => vec![&doc],
        _ => {
            return Err(err(
                1,
                "JSON without an \"items\" list: expected the output of `kubectl get gameservers -o json`",
            ))
        }
    };
    let mut t = Targets {
        from_kubectl: true,
        ..Default::default()
    };
    let mut lines = vec![];
    let mut from = 0;
    for (i, item) in items.iter().enumerate() {
        let name = item
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .map_or_else(|| format!("items[{i}]"), str::to_string);
        let (n, after) = line_of(text, &name, from);
        from = after;
        let state = item
            .pointer("/status/state")
            .and_then(Value::as_str)
            .unwrap_or("");
        if !TAKEN_STATES.contains(&state) {
            t.skipped.push(Skipped {
                name,
                state: if state.is_empty() {
                    "no state".into()
                } else {
                    state.into()
                },
            });
            continue;
        }
        let bad = |why: String| err(n, format!("game server {name} ({state}): {why}"));
        let address = item
            .pointer("/status/address")
            .and_then(Value::as_str)
            .filter(|a| !a.is_empty())
            .ok_or_else(|| bad("no status.address".into()))?;
        let ports = item
            .pointer("/status/ports")
            .and_then(Value::as_array)
            .filter(|p| !p.is_empty())
            .ok_or_else(|| bad("no status.ports".into()))?;
        let port = ports
            .iter()
            .find(|p| p.get("name").and_then(Value::as_str) == Some("default"))
            .unwrap_or(&ports[0]);
        let port = port
            .get("port")
            .and_then(Value::as_u64)
            .filter(|p| (1..=65535).contains(p))
            .ok_or_else(|| bad(format!("status.ports: no port 1..65535 in {port}")))?
            as u16;
        let a = match address.parse::<IpAddr>() {
            Ok(ip) => SocketAddr::new(ip, port),
            Err(_) => resolve(&format!("{address}:{port}")).map_err(bad)?,
        };
        add(
            &mut t.addrs,
            &mut lines,
            a,
            n,
            &format!("game server {name}"),
        )?;
    }
    Ok(t)
}

/// The 1-based line of the first `"name"` (as a JSON string) at or after
/// byte `from`, and the byte after it; line 0 if not found. kubectl lists
/// items in order and each name once, so this is the item's line.
fn line_of(text: &str, name: &str, from: usize) -> (usize, usize) {
    let needle = Value::String(name.into()).to_string();
    match text.get(from..).and_then(|rest| rest.find(&needle)) {
        Some(at) => {
            let at = from + at;
            (text[..at].matches('\n').count() + 1, at + needle.len())
        }
        None => (0, from),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(s: &str) -> Result<SocketAddr, String> {
        // Parsing only: never resolves a name, sends nothing.
        s.parse()
            .map_err(|_| format!("{s:?} is not an address of the form IP:PORT"))
    }

    /// Issue 30, finding 5: `players --targets-file /etc/shadow` printed the
    /// file's first line in its error, and a 93 KB line whole.
    #[test]
    fn a_line_that_is_not_an_address_was_printed_in_the_error() {
        let secret = "root:$y$j9T$secretsalt$secrethash:19000:0:99999:7:::\n";
        let e = parse(secret, resolve).unwrap_err();
        assert_eq!(e.line, 1);
        assert!(!e.reason.contains("secret"), "{}", e.reason);
        assert!(e.reason.contains("not shown"), "{}", e.reason);
        let long = format!("{}\n", "1".repeat(93_000));
        let e = parse(&long, resolve).unwrap_err();
        assert!(e.reason.len() < 200, "bounded: {} bytes", e.reason.len());
        // An address-like mistake is still quoted, to be fixed.
        let e = parse("10.0.0.1:99999\n", resolve).unwrap_err();
        assert!(e.reason.contains("10.0.0.1:99999"), "{}", e.reason);
    }

    fn addrs(t: &Targets) -> Vec<String> {
        t.addrs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn lines_take_addresses_and_skip_blanks_and_comments() {
        let t = parse(
            "# fleet A\n10.0.0.5:7654\n\n  10.0.0.6:7001   # second\n[fd00::1]:7654\n",
            resolve,
        )
        .unwrap();
        assert_eq!(
            addrs(&t),
            ["10.0.0.5:7654", "10.0.0.6:7001", "[fd00::1]:7654"]
        );
        assert!(!t.from_kubectl && t.skipped.is_empty());
    }

    #[test]
    fn a_bad_line_is_named_by_its_number() {
        let e = parse("10.0.0.5:7654\n\n10.0.0.6\n", resolve).unwrap_err();
        assert_eq!(e.line, 3);
        assert!(e.reason.contains("\"10.0.0.6\""), "{e:?}");
        assert_eq!(e.in_file("f.txt").split(':').nth(1), Some("3"));
        let e = parse("10.0.0.5:7654 10.0.0.6:7654\n", resolve).unwrap_err();
        assert_eq!(e.line, 1);
        assert!(e.reason.contains("one address per line"), "{e:?}");
    }

    #[test]
    fn a_duplicate_names_the_line_it_repeats() {
        let e = parse("10.0.0.5:7654\n10.0.0.6:7654\n10.0.0.5:7654\n", resolve).unwrap_err();
        assert_eq!(e.line, 3);
        assert!(e.reason.contains("already the target of line 1"), "{e:?}");
    }

    #[test]
    fn an_empty_file_is_refused() {
        let e = parse("# nothing\n\n", resolve).unwrap_err();
        assert_eq!(e.line, 0);
        assert_eq!(e.in_file("f").split(": ").count(), 2);
    }

    const KUBECTL: &str = include_str!("../../tests/fixtures/gameservers.json");

    #[test]
    fn kubectl_json_takes_ready_and_allocated_servers_at_their_default_port() {
        let t = parse(KUBECTL, resolve).unwrap();
        assert!(t.from_kubectl);
        // Ready with ports [query, default] -> default; Allocated with one
        // unnamed port -> that port.
        assert_eq!(addrs(&t), ["10.0.0.5:7654", "10.0.0.7:7001"]);
        assert_eq!(
            t.skipped,
            [
                Skipped {
                    name: "tickpack-x2k4p-starting".into(),
                    state: "Scheduled".into()
                },
                Skipped {
                    name: "tickpack-x2k4p-sick".into(),
                    state: "Unhealthy".into()
                }
            ]
        );
    }

    #[test]
    fn kubectl_one_game_server_object_is_taken_too() {
        let one = r#"{"apiVersion":"agones.dev/v1","kind":"GameServer",
            "metadata":{"name":"solo"},
            "status":{"state":"Ready","address":"10.1.2.3","ports":[{"name":"default","port":7777}]}}"#;
        assert_eq!(addrs(&parse(one, resolve).unwrap()), ["10.1.2.3:7777"]);
    }

    #[test]
    fn kubectl_problems_name_the_line_of_the_game_server() {
        let no_port = KUBECTL.replace("\"port\": 7001", "\"port\": 0");
        let e = parse(&no_port, resolve).unwrap_err();
        let line = KUBECTL
            .lines()
            .position(|l| l.contains("\"tickpack-x2k4p-busy\""))
            .unwrap()
            + 1;
        assert_eq!(e.line, line, "{e:?}");
        assert!(
            e.reason.contains("tickpack-x2k4p-busy (Allocated)"),
            "{e:?}"
        );
        assert!(e.reason.contains("no port"), "{e:?}");

        let e = parse(&KUBECTL.replace("10.0.0.7", ""), resolve).unwrap_err();
        assert!(e.reason.contains("no status.address"), "{e:?}");

        let e = parse(
            &KUBECTL
                .replace("10.0.0.7", "10.0.0.5")
                .replace("7001", "7654"),
            resolve,
        )
        .unwrap_err();
        assert!(e.reason.contains("already the target"), "{e:?}");

        let e = parse("{\n  \"items\": [\n  }", resolve).unwrap_err();
        assert_eq!(e.line, 3, "{e:?}");
        assert!(e.reason.starts_with("not valid JSON"), "{e:?}");

        let e = parse("{\"kind\": \"Pod\"}", resolve).unwrap_err();
        assert!(
            e.reason.contains("kubectl get gameservers -o json"),
            "{e:?}"
        );
    }

    #[test]
    fn kubectl_with_nothing_ready_says_what_was_skipped() {
        let none = KUBECTL
            .replace("\"Ready\"", "\"Shutdown\"")
            .replace("\"Allocated\"", "\"Shutdown\"");
        let e = parse(&none, resolve).unwrap_err();
        assert_eq!(e.line, 0);
        assert!(
            e.reason
                .contains("no game server is Ready or Allocated (4 skipped"),
            "{e:?}"
        );
        assert!(
            e.reason.contains("tickpack-x2k4p-sick (Unhealthy)"),
            "{e:?}"
        );
    }
}
