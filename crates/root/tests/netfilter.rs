//! Root tests for the instance firewall's records: the guard route and the
//! nftables table are in the record before they exist, and the record
//! alone removes them (what the next run does after a `kill -9`).
//!
//! Host names start with `n`, addresses are in 198.19.138.0/24; a guard
//! removes everything even when a test fails. They need root and fail
//! saying so without it.

use std::process::Command;
use std::sync::Mutex;

use tickpack_root::netpath::{cleanup_prefix, remove_guard_route, AddrPlan, HostNet, Ip, NetKind};

static LOCK: Mutex<()> = Mutex::new(());

fn require_root() {
    tickpack_testkit::require_root("namespaces, links, routes and nftables tables");
}

fn out(cmd: &str, args: &[&str]) -> String {
    let o = Command::new(cmd)
        .args(args)
        .output()
        .expect("running a tool");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn route_exists(range: &str) -> bool {
    out("ip", &["-4", "route", "show", "table", "main"])
        .lines()
        .any(|l| l.starts_with(&format!("unreachable {range}")))
}

fn table_exists(table: &str) -> bool {
    out("nft", &["list", "tables"])
        .lines()
        .any(|l| l.trim() == format!("table inet {table}"))
}

/// Removes the host's namespaces, links, route and table, pass or fail.
struct Sweep(&'static str, &'static str);

impl Drop for Sweep {
    fn drop(&mut self) {
        let _ = cleanup_prefix(&format!("tp{}", self.0));
        let _ = remove_guard_route(self.1.parse().unwrap());
        let _ = Command::new("nft")
            .args(["delete", "table", "inet", &format!("tp{}", self.0)])
            .output();
    }
}

#[test]
fn guard_route_and_firewall_are_recorded_before_they_exist_and_removed_by_the_record() {
    require_root();
    let _l = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let (host, range) = ("nj", "198.19.138.0/24");
    let _sweep = Sweep(host, range);
    let plan = AddrPlan::parse(range).unwrap();

    let mut journaled_route = None;
    let mut net = HostNet::setup_journaled(
        Ip::default(),
        host,
        NetKind::Bridge,
        plan,
        &[1, 2],
        &mut |rec| {
            journaled_route = Some((rec.routes.clone(), route_exists(range)));
        },
    )
    .unwrap();
    let (routes, existed) = journaled_route.expect("the journal was called");
    assert_eq!(
        routes,
        [format!("unreachable {range} metric 4294967295")],
        "the record names the guard route"
    );
    assert!(!existed, "...before the route is added");
    assert!(route_exists(range));

    let mut journaled_table = None;
    net.install_filter(27015, &[], &mut |rec| {
        journaled_table = Some((rec.tables.clone(), table_exists("tpnj")));
    })
    .unwrap();
    let (tables, existed) = journaled_table.expect("the journal was called");
    assert_eq!(tables, ["tpnj"], "the record names the table");
    assert!(!existed, "...before the table is created");
    assert!(table_exists("tpnj"));

    // The owner dies without cleaning up; its record alone removes all.
    let record = net.into_record();
    assert!(record.tables.contains(&"tpnj".to_string()));
    record.cleanup().unwrap();
    assert!(!table_exists("tpnj"), "the record removed the table");
    assert!(!route_exists(range), "the record removed the guard route");
    // Idempotent: a second run over the same record finds nothing to do.
    record.cleanup().unwrap();
}

#[test]
fn teardown_removes_the_firewall_table() {
    require_root();
    let _l = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let (host, range) = ("nj", "198.19.138.0/24");
    let _sweep = Sweep(host, range);
    let mut net = HostNet::setup(
        host,
        NetKind::Macvlan,
        AddrPlan::parse(range).unwrap(),
        &[1],
    )
    .unwrap();
    net.install_filter(27015, &[8080], &mut |_| {}).unwrap();
    let rules = out("nft", &["list", "table", "inet", "tpnj"]);
    assert!(
        rules.contains("tpnjgw"),
        "the host-side macvlan is filtered: {rules}"
    );
    assert!(rules.contains("dport 8080 accept"), "{rules}");
    net.teardown().unwrap();
    assert!(!table_exists("tpnj"));
    assert!(!route_exists(range));
}
