//! The instance firewall: one nftables table per host (`inet tp<host>`)
//! that keeps instances away from the host's own services.
//!
//! Instances need to answer their players, the health checks and the
//! host's console commands (rcon to the game port, `supervisor/console.rs`),
//! all of which start in the root namespace. So, for every packet that arrives
//! from one of the host's links (veth host ends, the bridge, the host-side
//! macvlan/ipvlan, the parent links):
//!
//! - **input** (to any address of the host itself, IPv4 or IPv6):
//!   accepted only if it belongs to a flow the host started (conntrack
//!   `established,related`) or goes to a TCP/UDP port the operator allowed
//!   (`allow_host_ports`); everything else is dropped.
//! - **forward** (through the host, e.g. to another routed instance or out
//!   of the machine): accepted if it answers a flow, or is UDP to the game
//!   port on another instance of the same host (what the shared-segment
//!   paths allow anyway); everything else is dropped.
//!
//! Instances on a shared segment (bridge, macvlan, ipvlan) reach each other
//! at layer 2, where these `inet` hooks do not look: like servers on one
//! LAN, they can reach any port of each other.
//!
//! The table is matched by exact interface names, so two hosts never filter
//! each other's links. It is created with `nft -f -` in one transaction and
//! removed with `nft delete table inet NAME` (absent counts as removed).

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use super::{NetError, PREFIX};

/// The table of `host`: `tp<host>` in the `inet` family.
pub fn table_name(host: &str) -> String {
    format!("{PREFIX}{host}")
}

/// What the firewall of one host lets through.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FilterSpec {
    /// The host's root-namespace links (from its [`super::NetRecord`]).
    pub links: Vec<String>,
    /// The game port, open between instances of this host.
    pub game_port: u16,
    /// Host ports (TCP and UDP) instances may open connections to.
    pub allow_host_ports: Vec<u16>,
}

/// The nftables ruleset for `table`, in `nft -f` syntax. It first creates
/// and deletes the table so that loading it replaces any earlier copy in
/// the same transaction.
pub fn ruleset(table: &str, spec: &FilterSpec) -> String {
    let set = |items: Vec<String>| format!("{{ {} }}", items.join(", "));
    let links = set(spec.links.iter().map(|l| format!("\"{l}\"")).collect());
    let mut ports: Vec<u16> = spec.allow_host_ports.clone();
    ports.sort_unstable();
    ports.dedup();
    let allowed = set(ports.iter().map(ToString::to_string).collect());
    let mut r = format!(
        "table inet {table} {{}}\n\
         delete table inet {table}\n\
         table inet {table} {{\n\
         \tchain input {{\n\
         \t\ttype filter hook input priority filter; policy accept;\n\
         \t\tiifname {links} ct state established,related accept\n"
    );
    if !ports.is_empty() {
        r.push_str(&format!(
            "\t\tiifname {links} tcp dport {allowed} accept\n\
             \t\tiifname {links} udp dport {allowed} accept\n"
        ));
    }
    r.push_str(&format!(
        "\t\tiifname {links} drop\n\
         \t}}\n\
         \tchain forward {{\n\
         \t\ttype filter hook forward priority filter; policy accept;\n\
         \t\tiifname {links} ct state established,related accept\n\
         \t\tiifname {links} oifname {links} udp dport {port} accept\n\
         \t\tiifname {links} drop\n\
         \t}}\n\
         }}\n",
        port = spec.game_port
    ));
    r
}

/// Runs `nft`; `nft` from `PATH` unless told otherwise.
#[derive(Clone, Debug)]
pub struct Nft {
    program: PathBuf,
}

impl Default for Nft {
    fn default() -> Self {
        Self {
            program: PathBuf::from("nft"),
        }
    }
}

impl Nft {
    /// Runs `program` instead of `nft` from `PATH`.
    pub fn new(program: impl Into<PathBuf>) -> Self {
        Self {
            program: program.into(),
        }
    }

    fn run(&self, step: &str, args: &[&str], stdin: Option<&str>) -> Result<String, NetError> {
        let command = std::iter::once(self.program.display().to_string())
            .chain(args.iter().map(|a| a.to_string()))
            .collect::<Vec<_>>()
            .join(" ");
        // `nft` gets its three pipes alone ([`tickpack_sys::fds`]).
        let mut child = tickpack_sys::fds::only_stdio(Command::new(&self.program).args(args))
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|source| {
                if source.kind() == std::io::ErrorKind::NotFound {
                    NetError::NoNft {
                        command: command.clone(),
                        source,
                    }
                } else {
                    NetError::Spawn {
                        step: step.to_string(),
                        command: command.clone(),
                        source,
                    }
                }
            })?;
        if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
            // A failed write shows up as nft's own error below.
            let _ = pipe.write_all(text.as_bytes());
        }
        let out = child.wait_with_output().map_err(|source| NetError::Spawn {
            step: step.to_string(),
            command: command.clone(),
            source,
        })?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(NetError::Command {
                step: step.to_string(),
                command,
                status: out.status.to_string(),
                stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            })
        }
    }

    /// Loads the firewall of `table` (replacing an earlier copy).
    pub fn install(&self, table: &str, spec: &FilterSpec) -> Result<(), NetError> {
        ours(table)?;
        if spec.links.is_empty() {
            return Err(NetError::ForeignName {
                name: format!("{table} (a firewall without links would match nothing)"),
            });
        }
        self.run(
            &format!("load the instance firewall (nft table inet {table})"),
            &["-f", "-"],
            Some(&ruleset(table, spec)),
        )
        .map(|_| ())
    }

    /// Deletes `inet table`; a table that is not there counts as removed.
    pub fn remove(&self, table: &str) -> Result<(), NetError> {
        ours(table)?;
        match self.run(
            &format!("cleanup: delete nft table inet {table}"),
            &["delete", "table", "inet", table],
            None,
        ) {
            Ok(_) => Ok(()),
            Err(NetError::Command { ref stderr, .. })
                if stderr.contains("No such file or directory") =>
            {
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// Whether `inet table` exists.
    pub fn exists(&self, table: &str) -> Result<bool, NetError> {
        let out = self.run("list nft tables", &["list", "tables", "inet"], None)?;
        Ok(out
            .lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>() == ["table", "inet", table]))
    }
}

/// Table names must carry our prefix and be a plain word, so a damaged
/// record cannot delete someone else's table.
fn ours(table: &str) -> Result<(), NetError> {
    let plain = table
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if table.starts_with(PREFIX) && table.len() > PREFIX.len() && plain {
        Ok(())
    } else {
        Err(NetError::ForeignName {
            name: table.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(allow: &[u16]) -> FilterSpec {
        FilterSpec {
            links: vec!["tph1br".into(), "tph1v1".into()],
            game_port: 27015,
            allow_host_ports: allow.to_vec(),
        }
    }

    #[test]
    fn ruleset_drops_new_flows_from_our_links_only() {
        let r = ruleset("tph1", &spec(&[]));
        assert!(
            r.starts_with("table inet tph1 {}\ndelete table inet tph1\n"),
            "{r}"
        );
        assert!(r.contains("hook input"), "{r}");
        assert!(r.contains("hook forward"), "{r}");
        assert!(
            r.contains("iifname { \"tph1br\", \"tph1v1\" } ct state established,related accept"),
            "{r}"
        );
        assert!(r.contains("iifname { \"tph1br\", \"tph1v1\" } drop"), "{r}");
        assert!(!r.contains("tcp dport"), "no allowed ports: {r}");
        assert!(r.contains("udp dport 27015 accept"), "{r}");
        // Every drop is bound to our links: no rule touches other traffic.
        for line in r.lines().filter(|l| l.contains("drop")) {
            assert!(line.trim_start().starts_with("iifname {"), "{line}");
        }
    }

    #[test]
    fn allowed_ports_open_tcp_and_udp_before_the_drop() {
        let r = ruleset("tph1", &spec(&[8080, 53, 8080]));
        let tcp = r.find("tcp dport { 53, 8080 } accept").expect("tcp rule");
        let udp = r.find("udp dport { 53, 8080 } accept").expect("udp rule");
        let drop = r.find("} drop").expect("drop rule");
        assert!(tcp < drop && udp < drop, "{r}");
    }

    #[test]
    fn foreign_table_names_are_refused_without_running_nft() {
        let nft = Nft::new("/nonexistent/nft");
        for bad in ["filter", "tp", "tp x", "tp;flush ruleset", "nat"] {
            let e = nft.remove(bad).unwrap_err();
            assert!(matches!(e, NetError::ForeignName { .. }), "{bad}: {e}");
        }
        let e = nft.remove("tph1").unwrap_err();
        assert!(matches!(e, NetError::NoNft { .. }), "{e}");
        assert!(e.to_string().contains("nftables"), "{e}");
    }
}
