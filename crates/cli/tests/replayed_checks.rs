//! Issue 38, item 4, end to end: one of the host's keyed health checks,
//! captured on the wire as it leaves for a reference server and resent
//! 100 times a second, drained the 20 a second the server keeps for the
//! host's checks; the host's own checks went unanswered and the host
//! killed a healthy server in about 4 s. Needs root (the instance's
//! namespace, and a packet socket to see the check go by); the host is
//! taken down by its guard, pass or fail, and the replays are bounded in
//! count and time and go only to the instance in the namespace the host
//! made for this test.

mod support;

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::Stdio;
use std::time::{Duration, Instant};

use support::host::{instance, one_netns_instance, temp_run_dir, Host};
use support::{require_root, serial};
use tickpack_wire::{Packet, ServerStats};

const ROOT: &str = "the instance's namespace and a packet socket to capture its check";

/// `ETH_P_ALL` in network byte order, as `socket(2)` takes it: only such a
/// packet socket sees what this machine sends, not only what it receives.
fn eth_p_all() -> u16 {
    (libc::ETH_P_ALL as u16).to_be()
}

/// The first stats request seen leaving for `target` within `wait`, as
/// the bytes of its UDP payload: a packet socket on every link of the
/// host's namespace (root), which sees what the supervisor sends.
fn capture_check(target: SocketAddrV4, wait: Duration) -> Option<Vec<u8>> {
    // SAFETY: socket(2) with constant arguments; the descriptor is owned
    // right below.
    let fd = unsafe {
        libc::socket(
            libc::AF_PACKET,
            libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
            i32::from(eth_p_all()),
        )
    };
    assert!(
        fd >= 0,
        "packet socket: {}",
        std::io::Error::last_os_error()
    );
    // SAFETY: `fd` is a new descriptor nobody else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let tv = libc::timeval {
        tv_sec: 0,
        tv_usec: 100_000,
    };
    // SAFETY: setsockopt on a live socket with a timeval of the given size.
    let r = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            (&tv as *const libc::timeval).cast(),
            std::mem::size_of::<libc::timeval>() as libc::socklen_t,
        )
    };
    assert_eq!(r, 0, "SO_RCVTIMEO: {}", std::io::Error::last_os_error());
    let mut buf = [0u8; 2048];
    let t0 = Instant::now();
    while t0.elapsed() < wait {
        // SAFETY: recv into a live buffer of its own length.
        let n = unsafe { libc::recv(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n <= 0 {
            continue;
        }
        if let Some(payload) = udp_payload_to(&buf[..n as usize], target) {
            if matches!(Packet::decode(payload), Ok(Packet::StatsRequest { .. })) {
                return Some(payload.to_vec());
            }
        }
    }
    None
}

/// The UDP payload of `ip` if it is an IPv4 packet to `to` (anything
/// else the packet socket sees is `None`).
fn udp_payload_to(ip: &[u8], to: SocketAddrV4) -> Option<&[u8]> {
    let ihl = usize::from(*ip.first()? & 0x0f) * 4;
    let total = usize::from(u16::from_be_bytes([*ip.get(2)?, *ip.get(3)?]));
    if ip[0] >> 4 != 4 || *ip.get(9)? != 17 || ihl < 20 || total > ip.len() {
        return None;
    }
    let dst = Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]);
    let udp = ip.get(ihl..total)?;
    let port = u16::from_be_bytes([*udp.get(2)?, *udp.get(3)?]);
    (dst == *to.ip() && port == to.port()).then(|| &udp[8.min(udp.len())..])
}

/// The server's stats, asked as a stranger (no key) from a fresh socket;
/// a few tries.
fn stats_of(target: SocketAddr) -> Option<ServerStats> {
    let s = UdpSocket::bind("0.0.0.0:0").unwrap();
    s.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let mut buf = [0u8; 2048];
    for nonce in 1..=5 {
        s.send_to(
            &Packet::StatsRequest { nonce, proof: None }.to_vec(),
            target,
        )
        .unwrap();
        if let Ok((n, _)) = s.recv_from(&mut buf) {
            if let Ok(Packet::Stats(st)) = Packet::decode(&buf[..n]) {
                return Some(st);
            }
        }
    }
    None
}

#[test]
fn root_a_replayed_health_check_got_a_healthy_server_killed() {
    let _g = serial();
    require_root(ROOT);
    let dir = temp_run_dir("replay", "hrp");
    let mut host = Host::spawn(
        "hrp",
        &dir,
        &one_netns_instance("198.19.171.0/24", &[]),
        Stdio::null(),
    )
    .remove_on_drop(&dir)
    .running();
    let st = host.status().unwrap();
    let target: SocketAddr = instance(&st, 1)["address"]
        .as_str()
        .expect("address")
        .parse()
        .unwrap();
    let SocketAddr::V4(target4) = target else {
        panic!("an IPv4 instance: {target}")
    };
    assert!(
        target4.ip().to_string().starts_with("198.19.171."),
        "{target}"
    );
    // The host checks once a second: one goes by within a few.
    let check = capture_check(target4, Duration::from_secs(5))
        .expect("no health check of the host seen on the wire in 5 s");
    // 100 copies a second, evenly spaced, for 12 s: at most 1 200
    // datagrams, to our own instance. The host kills after 4 checks in a
    // row unanswered; nothing else runs in this loop (a pause would leave
    // the budget a token for the host's check).
    let replayer = UdpSocket::bind("0.0.0.0:0").unwrap();
    let (rate, secs) = (100u64, 12u64);
    let t0 = Instant::now();
    let mut sent = 0u64;
    while sent < rate * secs && t0.elapsed() < Duration::from_secs(secs + 5) {
        let due = Duration::from_millis(sent * 1000 / rate);
        if let Some(wait) = due.checked_sub(t0.elapsed()) {
            std::thread::sleep(wait);
        }
        replayer.send_to(&check, target).unwrap();
        sent += 1;
    }
    assert_eq!(sent, rate * secs, "the replays were sent");
    // What was in flight is judged: a check window and a bit.
    std::thread::sleep(Duration::from_millis(1_500));
    let st = host.status().unwrap();
    let i = instance(&st, 1);
    assert_eq!(i["restarts"], 0, "the server was killed: {st:#}");
    assert_eq!(i["state"], "running", "{st:#}");
    // Every copy was refused as stale (if the first copy overtook the
    // original, that one was answered and the original refused instead),
    // and no check of the host's found the budget spent.
    let stats = stats_of(target).expect("the server answers a stranger's stats request");
    let checks = stats.checks.expect("check counters in the server's stats");
    println!("{sent} replays sent; the server's checks: {checks:?}");
    assert_eq!(
        checks.over_budget, 0,
        "the host's checks found the budget spent: {stats:?}"
    );
    assert!(
        checks.stale >= sent - 1,
        "{} of {sent} replays refused as stale: {stats:?}",
        checks.stale
    );
    host.down();
}
