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
//! each other's links. It is created in one transaction through nftables'
//! JSON interface (`nft -j -f -`, libnftables-json(5)) and removed the same
//! way; whether it exists is read from `nft -j list tables`, never from
//! nft's English (absent counts as removed). Every `nft` run is bounded by
//! a timeout.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::json;

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

/// The nftables ruleset for `table` in nftables' JSON (`nft -j -f -`,
/// libnftables-json(5)): built as values, never as text an interface name
/// or a port could break out of. It first adds and deletes the table so
/// that loading it replaces any earlier copy in the same transaction.
pub fn ruleset(table: &str, spec: &FilterSpec) -> serde_json::Value {
    let mut ports: Vec<u16> = spec.allow_host_ports.clone();
    ports.sort_unstable();
    ports.dedup();
    let t = json!({"family": "inet", "name": table});
    // `iifname` or `oifname` is one of our links.
    let on_links = |key: &str| {
        json!({"match": {"op": "==", "left": {"meta": {"key": key}},
                         "right": {"set": spec.links}}})
    };
    let from_links = || on_links("iifname");
    let established = || {
        json!({"match": {"op": "in", "left": {"ct": {"key": "state"}},
                         "right": ["established", "related"]}})
    };
    let dport = |proto: &str, right: serde_json::Value| {
        json!({"match": {"op": "==", "left": {"payload": {"protocol": proto, "field": "dport"}},
                         "right": right}})
    };
    let chain = |name: &str| {
        json!({"add": {"chain": {"family": "inet", "table": table, "name": name,
                                 "type": "filter", "hook": name, "prio": 0, "policy": "accept"}}})
    };
    let rule = |chain: &str, expr: Vec<serde_json::Value>| json!({"add": {"rule": {"family": "inet", "table": table, "chain": chain, "expr": expr}}});
    let accept = json!({"accept": null});
    let drop = json!({"drop": null});
    let mut cmds = vec![
        json!({"add": {"table": t}}),
        json!({"delete": {"table": t}}),
        json!({"add": {"table": t}}),
        chain("input"),
        rule("input", vec![from_links(), established(), accept.clone()]),
    ];
    if !ports.is_empty() {
        for proto in ["tcp", "udp"] {
            cmds.push(rule(
                "input",
                vec![
                    from_links(),
                    dport(proto, json!({"set": ports})),
                    accept.clone(),
                ],
            ));
        }
    }
    cmds.extend([
        rule("input", vec![from_links(), drop.clone()]),
        chain("forward"),
        rule("forward", vec![from_links(), established(), accept.clone()]),
        rule(
            "forward",
            vec![
                from_links(),
                on_links("oifname"),
                dport("udp", json!(spec.game_port)),
                accept,
            ],
        ),
        rule("forward", vec![from_links(), drop]),
    ]);
    json!({"nftables": cmds})
}

/// Runs `nft`; `nft` from `PATH` unless told otherwise, each call bounded
/// by a timeout.
#[derive(Clone, Debug)]
pub struct Nft {
    program: PathBuf,
    timeout: Duration,
}

impl Default for Nft {
    fn default() -> Self {
        Self {
            program: PathBuf::from("nft"),
            timeout: super::bounded::DEFAULT_TIMEOUT,
        }
    }
}

impl Nft {
    /// Runs `program` instead of `nft` from `PATH`.
    pub fn new(program: impl Into<PathBuf>) -> Self {
        Self {
            program: program.into(),
            ..Self::default()
        }
    }

    /// Bounds each invocation by `timeout` (it is killed after that).
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    fn run(&self, step: &str, args: &[&str], stdin: Option<Vec<u8>>) -> Result<String, NetError> {
        super::bounded::run(&self.program, args, &[], stdin, self.timeout, step).map_err(
            |e| match e {
                NetError::Spawn {
                    command, source, ..
                } if source.kind() == std::io::ErrorKind::NotFound => {
                    NetError::NoNft { command, source }
                }
                e => e,
            },
        )
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
            &["-j", "-f", "-"],
            Some(ruleset(table, spec).to_string().into_bytes()),
        )
        .map(|_| ())
    }

    /// Deletes `inet table`; a table that is not there counts as removed
    /// (asked of nft's JSON listing, before and after a failed delete, never
    /// read from its error text).
    pub fn remove(&self, table: &str) -> Result<(), NetError> {
        ours(table)?;
        if !self.exists(table)? {
            return Ok(());
        }
        let delete =
            json!({"nftables": [{"delete": {"table": {"family": "inet", "name": table}}}]});
        match self.run(
            &format!("cleanup: delete nft table inet {table}"),
            &["-j", "-f", "-"],
            Some(delete.to_string().into_bytes()),
        ) {
            Ok(_) => Ok(()),
            // Gone in between (another cleanup got there first): removed.
            Err(e) => match self.exists(table) {
                Ok(false) => Ok(()),
                _ => Err(e),
            },
        }
    }

    /// Whether `inet table` exists.
    pub fn exists(&self, table: &str) -> Result<bool, NetError> {
        let out = self.run("list nft tables", &["-j", "list", "tables", "inet"], None)?;
        Ok(table_names(&out).iter().any(|t| t == table))
    }
}

/// The `inet` table names in `nft -j list tables` output (nothing for
/// output that is not nft's JSON).
fn table_names(json: &str) -> Vec<String> {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(json) else {
        return vec![];
    };
    v["nftables"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|o| {
            let t = o.get("table")?;
            (t["family"] == "inet").then(|| t["name"].as_str().map(str::to_string))?
        })
        .collect()
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

/// Removes the firewall table of host `name` (`inet tp<name>`) if present;
/// returns whether it existed. Without `nft` installed there is no table
/// (the process backend needs none).
pub fn remove_firewall(name: &str) -> Result<bool, NetError> {
    let nft = Nft::default();
    let table = table_name(name);
    match nft.exists(&table) {
        Ok(true) => {}
        Ok(false) | Err(NetError::NoNft { .. }) => return Ok(false),
        Err(e) => return Err(e),
    }
    nft.remove(&table)?;
    Ok(true)
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

    fn rules(r: &serde_json::Value, chain: &str) -> Vec<serde_json::Value> {
        r["nftables"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|c| c["add"].get("rule"))
            .filter(|rule| rule["chain"] == chain)
            .map(|rule| rule["expr"].clone())
            .collect()
    }

    #[test]
    fn ruleset_drops_new_flows_from_our_links_only() {
        let r = ruleset("tph1", &spec(&[]));
        let cmds = r["nftables"].as_array().unwrap();
        let t = json!({"family": "inet", "name": "tph1"});
        assert_eq!(cmds[0], json!({"add": {"table": t}}));
        assert_eq!(cmds[1], json!({"delete": {"table": t}}));
        for chain in ["input", "forward"] {
            let rules = rules(&r, chain);
            assert!(!rules.is_empty(), "{chain}");
            // Every rule matches our links first: none touches other traffic.
            for expr in &rules {
                assert_eq!(
                    expr[0]["match"]["right"]["set"],
                    json!(["tph1br", "tph1v1"]),
                    "{expr}"
                );
            }
            assert_eq!(rules.last().unwrap()[1], json!({"drop": null}), "{chain}");
        }
        let input = rules(&r, "input");
        assert_eq!(input.len(), 2, "no allowed ports: {input:?}");
        let forward = rules(&r, "forward").to_vec();
        assert_eq!(forward[1][2]["match"]["right"], json!(27015));
    }

    #[test]
    fn allowed_ports_open_tcp_and_udp_before_the_drop() {
        let r = ruleset("tph1", &spec(&[8080, 53, 8080]));
        let input = rules(&r, "input");
        assert_eq!(input.len(), 4);
        for (i, proto) in [(1, "tcp"), (2, "udp")] {
            let m = &input[i][1]["match"];
            assert_eq!(m["left"]["payload"]["protocol"], proto);
            assert_eq!(m["right"]["set"], json!([53, 8080]));
        }
        assert_eq!(input[3][1], json!({"drop": null}));
    }

    /// An interface name is a JSON string, never text nft parses as rules.
    #[test]
    fn a_link_name_cannot_add_a_rule() {
        let mut s = spec(&[]);
        s.links = vec!["tph1\" } accept; flush ruleset; {\"".into()];
        let r = ruleset("tph1", &s);
        assert!(!r.to_string().contains("\nflush"), "{r}");
        assert_eq!(
            rules(&r, "input")[0][0]["match"]["right"]["set"][0],
            json!(s.links[0])
        );
    }

    #[test]
    fn tables_are_read_from_nfts_json_listing() {
        let out = r#"{"nftables": [{"metainfo": {"version": "1.0.6", "json_schema_version": 1}}, {"table": {"family": "inet", "name": "tph1", "handle": 3}}, {"table": {"family": "ip", "name": "tph2", "handle": 4}}]}"#;
        assert_eq!(table_names(out), ["tph1"]);
        assert!(table_names("Error: No such file or directory").is_empty());
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

    /// `nft` that never ends was waited for without a bound.
    #[test]
    fn an_nft_that_never_ends_was_waited_for_forever() {
        let dir = std::env::temp_dir().join(format!("tp-nft-hang-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fake = dir.join("nft");
        std::fs::write(&fake, "#!/bin/sh\nexec sleep 30\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        let nft = Nft::new(&fake).with_timeout(Duration::from_millis(300));
        let e = nft.exists("tph1").unwrap_err();
        assert!(matches!(e, NetError::Timeout { .. }), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
