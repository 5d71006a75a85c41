//! Root tests for `netpath`: real namespaces and links, real UDP through
//! each kind of path, and what is left behind afterwards.
//!
//! Traffic goes only from the root namespace to addresses inside namespaces
//! these tests create, in the RFC 2544 range 198.18.0.0/15 (its upper half, 198.19.0.0/16, so a default-range host elsewhere does not collide). Every test uses
//! its own host name (all names start with `tpnp`) and `/24`, holds one lock (they all
//! read the same namespace and link lists), and removes its leftovers in a
//! guard even when it panics. They need root and fail saying so without it.

use std::fs::File;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::process::Command;
use std::sync::mpsc;
use std::sync::{Mutex, MutexGuard};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use tickpack_testkit::{require_root, Leftovers};

use tickpack_root::netpath::{
    check_route, cleanup_host, cleanup_prefix, remove_guard_route, AddrPlan, HostNet, Ip, Ipv4Net,
    NetError, NetKind, NetRecord,
};

const PORT: u16 = 27015;

static LOCK: Mutex<()> = Mutex::new(());

/// Fails loudly without root; then serializes the test.
fn root() -> MutexGuard<'static, ()> {
    require_root(
        "the netpath tests create network namespaces and links; \
         or skip them with `cargo test -- --skip netpath`",
    );
    LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Removes every namespace and link starting with `prefix` and the guard
/// route of `range` when dropped, pass or fail.
struct Sweep {
    prefix: String,
    range: Ipv4Net,
}

impl Sweep {
    fn new(host: &str, range: &str) -> Sweep {
        Sweep {
            prefix: format!("tp{host}"),
            range: range.parse().unwrap(),
        }
    }
}

impl Drop for Sweep {
    fn drop(&mut self) {
        let _ = cleanup_prefix(&self.prefix);
        let _ = remove_guard_route(self.range);
    }
}

/// What an operator would see of a host: its namespaces (`ip netns list`),
/// its links (`ip -o link show`), tables and cgroups, and routes naming its
/// range.
fn leftovers(prefix: &str, range: &str) -> Vec<String> {
    Leftovers::of(prefix).routes(&[range]).scan()
}

fn plan(range: &str) -> AddrPlan {
    AddrPlan::parse(range).unwrap()
}

/// A UDP echo server on `addr` inside the namespace at `ns`, on its own
/// thread (setns changes only the calling thread). Stops on "stop", after
/// 16 datagrams or after 5 s. Returns how many it echoed.
fn echo_in(
    ns: PathBuf,
    addr: SocketAddrV4,
) -> (JoinHandle<usize>, mpsc::Receiver<Result<(), String>>) {
    let (ready_tx, ready) = mpsc::channel();
    let h = thread::spawn(move || {
        let sock = (|| {
            let f = File::open(&ns).map_err(|e| format!("open {}: {e}", ns.display()))?;
            // SAFETY: `f` is an open namespace file for the whole call;
            // CLONE_NEWNET moves only this thread, which ends with this closure's caller.
            let rc = unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) };
            if rc != 0 {
                return Err(format!(
                    "setns {}: {}",
                    ns.display(),
                    std::io::Error::last_os_error()
                ));
            }
            let s = UdpSocket::bind(addr)
                .map_err(|e| format!("bind {addr} in {}: {e}", ns.display()))?;
            s.set_read_timeout(Some(Duration::from_secs(1)))
                .map_err(|e| e.to_string())?;
            Ok(s)
        })();
        let sock = match sock {
            Ok(s) => {
                let _ = ready_tx.send(Ok(()));
                s
            }
            Err(e) => {
                let _ = ready_tx.send(Err(e));
                return 0;
            }
        };
        let start = Instant::now();
        let mut echoed = 0;
        let mut buf = [0u8; 512];
        while echoed < 16 && start.elapsed() < Duration::from_secs(5) {
            let Ok((n, from)) = sock.recv_from(&mut buf) else {
                continue;
            };
            if &buf[..n] == b"stop" {
                break;
            }
            if sock.send_to(&buf[..n], from).is_ok() {
                echoed += 1;
            }
        }
        echoed
    });
    (h, ready)
}

/// Starts an echo server on port 27015 in every instance, sends each one a
/// datagram from the root namespace and checks the echo comes back from the
/// instance's own address. Returns the output devices `check_route` named.
fn echo_through_every_instance(net: &HostNet) -> Vec<String> {
    let ids: Vec<u32> = net.instances().collect();
    let mut servers = Vec::new();
    for &id in &ids {
        let addr = SocketAddrV4::new(net.instance_addr(id), PORT);
        let (h, ready) = echo_in(net.netns_path(id), addr);
        let r = ready
            .recv_timeout(Duration::from_secs(5))
            .expect("echo server start");
        r.unwrap_or_else(|e| panic!("instance {id}: {e}"));
        servers.push((id, addr, h));
    }
    let client = UdpSocket::bind("0.0.0.0:0").unwrap();
    client
        .set_read_timeout(Some(Duration::from_secs(1)))
        .unwrap();
    let mut devs = Vec::new();
    for (id, addr, _) in &servers {
        // What a load generator does before sending.
        let dev = net
            .check_route(*addr.ip())
            .unwrap_or_else(|e| panic!("instance {id}: {e}"));
        devs.push(dev);
        let msg = format!("ping {id}");
        let mut got = None;
        for _try in 0..3 {
            client.send_to(msg.as_bytes(), addr).unwrap();
            let mut buf = [0u8; 512];
            if let Ok((n, from)) = client.recv_from(&mut buf) {
                got = Some((buf[..n].to_vec(), from));
                break;
            }
        }
        let (payload, from) = got.unwrap_or_else(|| {
            panic!(
                "{}: no echo from instance {id} at {addr} within 3 tries",
                net.kind()
            )
        });
        assert_eq!(payload, msg.as_bytes(), "instance {id}");
        assert_eq!(
            from,
            SocketAddr::V4(*addr),
            "the echo must come from the instance's own address"
        );
    }
    for (_, addr, _) in &servers {
        let _ = client.send_to(b"stop", addr);
    }
    for (id, _, h) in servers {
        assert!(h.join().unwrap() >= 1, "instance {id} echoed nothing");
    }
    devs
}

/// The whole life of one host of `kind`: set up, echo, route checks,
/// teardown, nothing left.
fn kind_round_trip(kind: NetKind, host: &str, range: &str) -> Option<NetError> {
    let prefix = format!("tp{host}");
    let net = match HostNet::setup(host, kind, plan(range), &[1, 2, 5]) {
        Ok(net) => net,
        Err(e) => {
            assert_eq!(
                leftovers(&prefix, range),
                Vec::<String>::new(),
                "failed setup left things behind"
            );
            return Some(e);
        }
    };
    assert_eq!(net.instances().collect::<Vec<_>>(), [1, 2, 5]);
    if matches!(kind, NetKind::Macvlan | NetKind::Ipvlan) {
        // A dummy where the kernel has one, else a veth pair: either way ours.
        let parent = net
            .parent_link()
            .expect("macvlan/ipvlan hang off a parent link of ours");
        eprintln!("{kind}: parent link is {parent:?}");
    } else {
        assert_eq!(net.parent_link(), None);
    }
    let devs = echo_through_every_instance(&net);
    assert!(devs.iter().all(|d| d.starts_with(&prefix)), "{devs:?}");

    // lo is not ours, for either check.
    assert!(matches!(
        check_route(Ipv4Addr::LOCALHOST),
        Err(NetError::RouteNotOurs { .. })
    ));
    assert!(net.check_route(Ipv4Addr::LOCALHOST).is_err());
    // The gateway is a local address of the host: not a target.
    let gw = net.gateway(1);
    assert!(
        check_route(gw).is_err(),
        "the gateway {gw} is local, not an instance"
    );

    let addrs: Vec<Ipv4Addr> = net.instances().map(|id| net.instance_addr(id)).collect();
    let record = net.record().clone();
    assert!(record.routes.iter().any(|r| r.starts_with("unreachable")));
    net.teardown().unwrap();
    assert_eq!(
        leftovers(&prefix, range),
        Vec::<String>::new(),
        "{kind}: teardown left things behind"
    );
    // Idempotent: cleaning up the persisted record again is fine.
    record.cleanup().unwrap();
    // Once torn down, instance addresses route out of the machine: the
    // check must refuse them (nothing is sent).
    for a in addrs {
        assert!(
            check_route(a).is_err(),
            "{a} is no longer ours after teardown"
        );
    }
    None
}

#[test]
fn netpath_veth_instances_all_echo_on_port_27015() {
    let _lock = root();
    let _sweep = Sweep::new("npv", "198.19.1.0/24");
    assert!(kind_round_trip(NetKind::Veth, "npv", "198.19.1.0/24").is_none());
}

#[test]
fn netpath_bridge_instances_all_echo_on_port_27015() {
    let _lock = root();
    let _sweep = Sweep::new("npb", "198.19.2.0/24");
    assert!(kind_round_trip(NetKind::Bridge, "npb", "198.19.2.0/24").is_none());
}

#[test]
fn netpath_macvlan_instances_all_echo_on_port_27015() {
    let _lock = root();
    let _sweep = Sweep::new("npm", "198.19.3.0/24");
    assert!(kind_round_trip(NetKind::Macvlan, "npm", "198.19.3.0/24").is_none());
}

#[test]
fn netpath_ipvlan_echoes_or_says_the_kernel_lacks_it() {
    let _lock = root();
    let _sweep = Sweep::new("npi", "198.19.4.0/24");
    if let Some(e) = kind_round_trip(NetKind::Ipvlan, "npi", "198.19.4.0/24") {
        assert!(
            matches!(
                e,
                NetError::Unsupported {
                    kind: NetKind::Ipvlan,
                    ..
                }
            ),
            "{e}"
        );
        let msg = e.to_string();
        assert!(
            msg.contains("ipvlan") && msg.contains("link add") && e.errno().is_some(),
            "{msg}"
        );
        eprintln!("ipvlan unavailable here, as reported: {msg}");
    }
}

#[test]
fn netpath_unserved_addresses_in_the_range_are_refused() {
    let _lock = root();
    let range = "198.19.5.0/24";
    let _sweep = Sweep::new("npr", range);
    let net = HostNet::setup("npr", NetKind::Veth, plan(range), &[1]).unwrap();
    let served = net.instance_addr(1);
    let dev = net.check_route(served).unwrap();
    assert!(dev.starts_with("tpnpr"), "{dev}");
    // The output link named by its index is the one `ip route get` names.
    let out = Command::new("ip")
        .args(["-o", "route", "get", &served.to_string()])
        .output()
        .expect("run ip route get");
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        shown
            .split_whitespace()
            .collect::<Vec<_>>()
            .windows(2)
            .any(|w| w == ["dev", dev.as_str()]),
        "check_route said {dev:?}, ip route get says {shown:?}"
    );
    // Naming it is its own request, failing in its own words.
    let e = FailingIp::new("link show")
        .ip()
        .check_route(served)
        .unwrap_err();
    assert!(matches!(e, NetError::Netlink { .. }), "{e}");
    assert_eq!(
        e.to_string(),
        "name the route's output link: `link show` failed: injected failure"
    );
    // id 9's /30 has no link: the guard route answers, nothing leaves.
    let unserved = plan(range).instance_addr(NetKind::Veth, 9).unwrap();
    let e = check_route(unserved).unwrap_err().to_string();
    assert!(
        e.contains(&unserved.to_string()) && e.contains("no route"),
        "{e}"
    );
    net.teardown().unwrap();
}

/// An [`Ip`] whose requests containing `trigger` (in `ip`'s words) fail,
/// like a kernel refusing halfway through.
struct FailingIp {
    trigger: &'static str,
}

impl FailingIp {
    fn new(trigger: &'static str) -> FailingIp {
        FailingIp { trigger }
    }

    fn ip(&self) -> Ip {
        Ip::default().failing_on(self.trigger)
    }
}

#[test]
fn netpath_setup_failing_halfway_leaves_nothing_behind() {
    let _lock = root();
    let range = "198.19.6.0/24";
    let _sweep = Sweep::new("npf", range);
    // Instance 2's last step fails: by then the guard route, the bridge,
    // instance 1 and most of instance 2 exist.
    let fail = FailingIp::new(" -n tpnpf-2 route add default ");
    let e = HostNet::setup_with(fail.ip(), "npf", NetKind::Bridge, plan(range), &[1, 2, 3])
        .unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, NetError::Netlink { .. }), "{msg}");
    assert!(
        msg.contains("instance 2: add the default route"),
        "the step: {msg}"
    );
    assert!(
        msg.contains("-n tpnpf-2 route add default via 198.19.6.1 dev eth0"),
        "the request: {msg}"
    );
    assert!(msg.contains("injected failure"), "the cause: {msg}");
    assert_eq!(leftovers("tpnpf", range), Vec::<String>::new());
}

#[test]
fn netpath_add_and_remove_instances_one_at_a_time() {
    let _lock = root();
    let range = "198.19.7.0/24";
    let _sweep = Sweep::new("npa", range);
    let fail = FailingIp::new(" tpnpa-3 ");
    let mut net =
        HostNet::setup_with(fail.ip(), "npa", NetKind::Veth, plan(range), &[1, 2]).unwrap();
    let before = leftovers("tpnpa", range);

    // A failing add removes its own half and keeps the others.
    let e = net.add_instance(3).unwrap_err().to_string();
    assert!(
        e.contains("instance 3") && e.contains("injected failure"),
        "{e}"
    );
    assert_eq!(leftovers("tpnpa", range), before);
    assert_eq!(net.instances().collect::<Vec<_>>(), [1, 2]);
    assert!(matches!(
        net.add_instance(1),
        Err(NetError::DuplicateInstance { id: 1, .. })
    ));

    net.add_instance(4).unwrap();
    net.remove_instance(1).unwrap();
    assert!(matches!(
        net.remove_instance(1),
        Err(NetError::NoSuchInstance { id: 1, .. })
    ));
    assert_eq!(net.instances().collect::<Vec<_>>(), [2, 4]);
    let now = leftovers("tpnpa", range);
    assert!(
        !now.iter()
            .any(|l| l.contains("tpnpa-1") || l.contains("tpnpav1")),
        "{now:?}"
    );
    assert!(
        now.contains(&"netns tpnpa-4".to_string()) && now.contains(&"link tpnpav4".to_string()),
        "{now:?}"
    );
    assert!(!net.record().namespaces.contains(&"tpnpa-1".to_string()));
    assert!(!net.netns_path(1).exists() && net.netns_path(4).exists());
    echo_through_every_instance(&net);

    net.teardown().unwrap();
    assert_eq!(leftovers("tpnpa", range), Vec::<String>::new());
}

#[test]
fn netpath_range_or_names_in_use_are_refused_before_anything_is_created() {
    let _lock = root();
    let (r1, r2) = ("198.19.8.0/24", "198.19.9.0/24");
    let _s1 = Sweep::new("npu", r1);
    let _s2 = Sweep::new("npw", r2);
    let net = HostNet::setup("npu", NetKind::Veth, plan(r1), &[1]).unwrap();
    let before = (leftovers("tpnpu", r1), leftovers("tpnpw", r2));

    // Another host on the same range: refused, naming the route.
    let e = HostNet::setup("npw", NetKind::Veth, plan(r1), &[1]).unwrap_err();
    assert!(matches!(e, NetError::RangeInUse { .. }), "{e}");
    assert!(e.to_string().contains("unreachable 198.19.8.0/24"), "{e}");
    // The same host name again: refused, naming the namespace.
    let e = HostNet::setup("npu", NetKind::Veth, plan(r2), &[1]).unwrap_err();
    assert!(matches!(e, NetError::NameInUse { .. }), "{e}");
    assert!(e.to_string().contains("tpnpu-1"), "{e}");
    assert_eq!(
        (leftovers("tpnpu", r1), leftovers("tpnpw", r2)),
        before,
        "refusals must not create or remove anything"
    );

    net.teardown().unwrap();
}

#[test]
fn netpath_record_recovers_after_the_owner_died() {
    let _lock = root();
    let range = "198.19.10.0/24";
    let _sweep = Sweep::new("npk", range);
    let net = HostNet::setup("npk", NetKind::Macvlan, plan(range), &[1, 2]).unwrap();
    // As if the supervisor was killed: the record on disk is all that is left.
    let json = serde_json::to_string(&net.into_record()).unwrap();
    assert!(!leftovers("tpnpk", range).is_empty());
    let record: NetRecord = serde_json::from_str(&json).unwrap();
    record.cleanup().unwrap();
    assert_eq!(leftovers("tpnpk", range), Vec::<String>::new());
    record.cleanup().unwrap();
}

#[test]
fn netpath_dropping_a_host_net_removes_everything() {
    let _lock = root();
    let range = "198.19.11.0/24";
    let _sweep = Sweep::new("npd", range);
    {
        let _net = HostNet::setup("npd", NetKind::Bridge, plan(range), &[1, 2]).unwrap();
        assert!(!leftovers("tpnpd", range).is_empty());
    }
    assert_eq!(leftovers("tpnpd", range), Vec::<String>::new());
}

#[test]
fn netpath_cleanup_prefix_removes_its_prefix_and_nothing_else() {
    let _lock = root();
    let _sweep = Sweep::new("npcx", "198.19.12.0/24");
    let _keep = Sweep::new("npcy", "198.19.13.0/24");
    let run = |args: &[&str]| {
        let st = Command::new("ip").args(args).status().unwrap();
        assert!(st.success(), "ip {args:?}");
    };
    // Leftovers of a killed run, made by hand...
    run(&["netns", "add", "tpnpcx-1"]);
    run(&[
        "link", "add", "tpnpcxa", "type", "veth", "peer", "name", "tpnpcxb",
    ]);
    run(&["link", "add", "tpnpcxbr", "type", "bridge"]);
    // ...and neighbours with another prefix that must survive.
    run(&["netns", "add", "tpnpcy-1"]);
    run(&["link", "add", "tpnpcy0", "type", "bridge"]);

    let removed = cleanup_prefix("tpnpcx").unwrap();
    assert!(
        removed.contains(&"tpnpcx-1".to_string()) && removed.contains(&"tpnpcxbr".to_string()),
        "{removed:?}"
    );
    assert!(
        removed.iter().all(|n| n.starts_with("tpnpcx")),
        "{removed:?}"
    );
    assert_eq!(leftovers("tpnpcx", "no-route"), Vec::<String>::new());
    assert_eq!(
        leftovers("tpnpcy", "no-route"),
        ["netns tpnpcy-1", "link tpnpcy0"]
    );
    // Nothing without the tp prefix is ever a target.
    assert!(matches!(
        cleanup_prefix("eth"),
        Err(NetError::ForeignName { .. })
    ));
    assert_eq!(leftovers("lo", "no-route"), ["link lo"]);

    cleanup_prefix("tpnpcy").unwrap();
    assert_eq!(leftovers("tpnpcy", "no-route"), Vec::<String>::new());
}

/// Regression: recovery after a crash removed every name starting with
/// `tp<host>`, so `host up --name h` (or the bench's host `bn`) deleted the
/// namespaces and links of a running host `h1` (`bn1`).
#[test]
fn recovering_a_host_never_removes_a_longer_named_hosts_network() {
    let _lock = root();
    let _sweep = Sweep::new("npz", "198.19.14.0/24");
    let run = |args: &[&str]| {
        let st = Command::new("ip").args(args).status().unwrap();
        assert!(st.success(), "ip {args:?}");
    };
    // Leftovers of host npz...
    run(&["netns", "add", "tpnpz-1"]);
    run(&["link", "add", "tpnpzbr", "type", "bridge"]);
    // ...and the live network of host npz1, which must survive.
    run(&["netns", "add", "tpnpz1-1"]);
    run(&["link", "add", "tpnpz1br", "type", "bridge"]);

    let removed = cleanup_host("npz").unwrap();
    let left = leftovers("tpnpz", "no-route");
    // Clean up npz1 before asserting, so a failure leaves nothing behind.
    cleanup_prefix("tpnpz1").unwrap();
    assert_eq!(removed, ["tpnpzbr", "tpnpz-1"], "only npz's own names");
    assert_eq!(
        left,
        ["netns tpnpz1-1", "link tpnpz1br"],
        "npz1's network stays"
    );
}
