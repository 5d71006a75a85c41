use super::*;
use crate::socket::{SocketOptions, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

fn bind() -> UdpSocket {
    UdpSocket::bind("127.0.0.1:0".parse().unwrap(), &SocketOptions::default()).unwrap()
}

/// `n` pairs: a client connected to a server socket and back.
fn pairs(n: usize) -> Vec<(UdpSocket, UdpSocket)> {
    (0..n)
        .map(|_| {
            let (c, s) = (bind(), bind());
            c.connect(s.local_addr()).unwrap();
            s.connect(c.local_addr()).unwrap();
            (c, s)
        })
        .collect()
}

fn sizes(buffers: u16, max_datagram: usize) -> RingSizes {
    RingSizes {
        submissions: 256,
        buffers,
        max_datagram,
    }
}

/// Reaps until `want` events came or 2 s passed; returns them as
/// (token, payload or error kind).
fn reap_until(ring: &mut UdpRing, want: usize) -> Vec<(usize, Result<Vec<u8>, String>)> {
    let mut got = vec![];
    let end = Instant::now() + Duration::from_secs(2);
    while got.len() < want && Instant::now() < end {
        ring.reap(|e| match e {
            RingEvent::Datagram { token, data, .. } => got.push((token, Ok(data.to_vec()))),
            RingEvent::Truncated { token } => got.push((token, Err("truncated".into()))),
            RingEvent::RecvFailed { token, error } => {
                got.push((token, Err(format!("recv {:?}", error.kind()))))
            }
            RingEvent::SendFailed { token, error } => {
                got.push((token, Err(format!("send {:?}", error.kind()))))
            }
        })
        .unwrap();
        std::thread::sleep(Duration::from_millis(1));
    }
    got
}

fn read_one(s: &UdpSocket) -> Option<Vec<u8>> {
    let mut b = crate::socket::RecvBatch::new(1, 4096);
    let end = Instant::now() + Duration::from_secs(2);
    while Instant::now() < end {
        if s.recv_batch(&mut b).unwrap() > 0 {
            return b.iter().next().map(|(_, d)| d.to_vec());
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    None
}

#[test]
fn sends_of_many_sockets_leave_in_one_reap_and_every_reply_comes_back_by_token() {
    let p = pairs(64);
    let mut ring = UdpRing::new(sizes(256, 2048)).unwrap();
    for (c, _) in &p {
        ring.add(c.as_raw_fd()).unwrap();
    }
    for t in 0..p.len() {
        ring.send(t, format!("cmd {t}").as_bytes()).unwrap();
    }
    let before = ring.stats().enters;
    ring.reap(|_| panic!("nothing to report yet")).unwrap();
    assert_eq!(ring.stats().enters - before, 1, "one enter for 64 sends");
    for (t, (_, s)) in p.iter().enumerate() {
        assert_eq!(read_one(s).unwrap(), format!("cmd {t}").as_bytes());
        s.send(&vec![t as u8; 2000]).unwrap();
    }
    let mut got = reap_until(&mut ring, 64);
    got.sort_by_key(|g| g.0);
    assert_eq!(got.len(), 64);
    for (t, (token, data)) in got.into_iter().enumerate() {
        assert_eq!(token, t);
        assert_eq!(data.unwrap(), vec![t as u8; 2000]);
    }
}

#[test]
fn more_sends_than_the_submission_queue_holds_all_leave() {
    let p = pairs(4);
    let mut ring = UdpRing::new(RingSizes {
        submissions: 8,
        buffers: 64,
        max_datagram: 64,
    })
    .unwrap();
    for (c, _) in &p {
        ring.add(c.as_raw_fd()).unwrap();
    }
    for i in 0..100u32 {
        ring.send((i % 4) as usize, &i.to_le_bytes()).unwrap();
    }
    ring.reap(|e| panic!("{e:?}")).unwrap();
    for (t, (_, s)) in p.iter().enumerate() {
        for i in (t as u32..100).step_by(4) {
            assert_eq!(
                read_one(s).unwrap(),
                i.to_le_bytes(),
                "socket {t}, in order"
            );
        }
    }
    assert!(
        ring.sends.len() <= 100,
        "slots reused or bounded by the sends"
    );
}

#[test]
fn a_datagram_longer_than_the_buffers_is_reported_cut_and_the_socket_still_receives() {
    let p = pairs(1);
    let mut ring = UdpRing::new(sizes(64, 100)).unwrap();
    ring.add(p[0].0.as_raw_fd()).unwrap();
    p[0].1.send(&[7u8; 300]).unwrap();
    assert_eq!(reap_until(&mut ring, 1), vec![(0, Err("truncated".into()))]);
    p[0].1.send(&[8u8; 100]).unwrap();
    assert_eq!(reap_until(&mut ring, 1), vec![(0, Ok(vec![8u8; 100]))]);
}

#[test]
fn a_socket_refused_mid_batch_is_reported_and_the_others_deliver() {
    let p = pairs(2);
    let closed = bind();
    let gone = closed.local_addr();
    drop(closed);
    let refused = bind();
    refused.connect(gone).unwrap();
    let mut ring = UdpRing::new(sizes(64, 2048)).unwrap();
    let a = ring.add(p[0].0.as_raw_fd()).unwrap();
    let b = ring.add(refused.as_raw_fd()).unwrap();
    let c = ring.add(p[1].0.as_raw_fd()).unwrap();
    // The ICMP "port unreachable" for b's first datagram ends b's receive.
    for t in [a, b, c] {
        ring.send(t, b"one").unwrap();
    }
    let got = reap_until(&mut ring, 1);
    assert!(
        got.iter()
            .any(|(t, r)| *t == b && r.as_ref().is_err_and(|e| e.contains("ConnectionRefused"))),
        "{got:?}"
    );
    assert!(got.iter().all(|(t, _)| *t == b), "{got:?}");
    // a and c still send and receive, and so does b's re-armed receive
    // (here: nothing comes, nothing is reported).
    assert_eq!(read_one(&p[0].1).unwrap(), b"one");
    assert_eq!(read_one(&p[1].1).unwrap(), b"one");
    p[0].1.send(b"to a").unwrap();
    p[1].1.send(b"to c").unwrap();
    let mut got = reap_until(&mut ring, 2);
    got.sort_by_key(|g| g.0);
    assert_eq!(
        got,
        vec![(a, Ok(b"to a".to_vec())), (c, Ok(b"to c".to_vec()))]
    );
    assert!(ring.stats().rearms >= 1);
}

#[test]
fn one_send_failing_mid_batch_is_reported_and_the_rest_of_the_batch_leaves() {
    let p = pairs(3);
    let mut ring = UdpRing::new(sizes(64, 2048)).unwrap();
    for (c, _) in &p {
        ring.add(c.as_raw_fd()).unwrap();
    }
    ring.send(0, b"first").unwrap();
    // Longer than any UDP datagram: this one send fails (EMSGSIZE).
    ring.send(1, &vec![0u8; 70_000]).unwrap();
    ring.send(2, b"third").unwrap();
    let got = reap_until(&mut ring, 1);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].0, 1);
    assert!(
        got[0].1.as_ref().is_err_and(|e| e.starts_with("send")),
        "{got:?}"
    );
    assert_eq!(read_one(&p[0].1).unwrap(), b"first");
    assert_eq!(read_one(&p[2].1).unwrap(), b"third");
    // The failed send's slot is free again: the next send on it leaves.
    ring.send(1, b"again").unwrap();
    ring.reap(|e| panic!("{e:?}")).unwrap();
    assert_eq!(read_one(&p[1].1).unwrap(), b"again");
}

#[test]
fn a_ring_dropped_with_its_receives_armed_leaves_the_sockets_usable() {
    let p = pairs(2);
    {
        let mut ring = UdpRing::new(sizes(64, 2048)).unwrap();
        for (c, _) in &p {
            ring.add(c.as_raw_fd()).unwrap();
        }
        p[0].1.send(b"unread").unwrap();
        std::thread::sleep(Duration::from_millis(5));
    }
    // The pool is gone; datagrams arriving now go to the sockets' own
    // queues, read with plain system calls.
    p[1].1.send(b"after").unwrap();
    assert_eq!(read_one(&p[1].0).unwrap(), b"after");
}

/// The kernel reports a socket's pending ICMP error before the
/// datagrams queued ahead of it; the ring handed it over first too, so a
/// player whose command met a closed port gave up its session before
/// reading the server's goodbye that had come first, and went on
/// reconnecting (the e2e test `sigterm_tells_the_players...` caught it).
#[test]
fn a_goodbye_queued_before_a_port_unreachable_was_handed_over_after_it() {
    let (client, server) = pairs(1).pop().unwrap();
    let mut ring = UdpRing::new(sizes(64, 2048)).unwrap();
    let t = ring.add(client.as_raw_fd()).unwrap();
    // The receive armed and waiting, as in a running load generator.
    ring.reap(|e| panic!("{e:?}")).unwrap();
    server.send(b"goodbye").unwrap();
    drop(server);
    // The command meets the closed port: "port unreachable" comes back.
    ring.send(t, b"cmd").unwrap();
    let got = reap_until(&mut ring, 2);
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(
        got[0],
        (t, Ok(b"goodbye".to_vec())),
        "the goodbye first: {got:?}"
    );
    assert!(
        got[1]
            .1
            .as_ref()
            .is_err_and(|e| e.contains("ConnectionRefused")),
        "{got:?}"
    );
}

#[test]
fn a_pool_run_dry_keeps_the_datagrams_queued_until_buffers_come_back() {
    let p = pairs(1);
    let mut ring = UdpRing::new(sizes(4, 64)).unwrap();
    ring.add(p[0].0.as_raw_fd()).unwrap();
    for i in 0..20u8 {
        p[0].1.send(&[i; 10]).unwrap();
    }
    let got = reap_until(&mut ring, 20);
    let want: Vec<_> = (0..20u8).map(|i| (0, Ok(vec![i; 10]))).collect();
    assert_eq!(got, want, "all, in order");
    assert!(ring.stats().pool_empty >= 1, "{:?}", ring.stats());
}

#[test]
fn the_first_datagram_of_a_machines_first_stamping_socket_carries_its_receipt_time_not_its_read_time(
) {
    let p = pairs(1);
    let mut ring = UdpRing::new(sizes(64, 64)).unwrap();
    ring.add(p[0].0.as_raw_fd()).unwrap();
    let sent = now_ns();
    p[0].1.send(b"x").unwrap();
    let after_send = now_ns();
    std::thread::sleep(Duration::from_millis(30));
    let mut stamp = None;
    let end = Instant::now() + Duration::from_secs(2);
    while stamp.is_none() && Instant::now() < end {
        ring.reap(|e| {
            if let RingEvent::Datagram { received_ns, .. } = e {
                stamp = Some(received_ns);
            }
        })
        .unwrap();
    }
    let stamp = stamp.expect("the datagram came");
    assert!(ring.stamps_live(), "the kernel never stamped at receipt");
    // Stamped while it was sent, not 30 ms later when it was read (the
    // wall clock and the monotonic clock are read a few µs apart: 1 ms
    // of slack either way).
    assert!(stamp + 1_000_000 >= sent, "{stamp} vs {sent}");
    assert!(stamp <= after_send + 1_000_000, "{stamp} vs {after_send}");
}

#[test]
fn a_token_never_added_is_refused() {
    let mut ring = UdpRing::new(sizes(64, 64)).unwrap();
    assert_eq!(
        ring.send(0, b"x").unwrap_err().kind(),
        io::ErrorKind::InvalidInput
    );
    assert!(UdpRing::new(sizes(100, 64)).is_err(), "not a power of two");
}

#[test]
fn control_messages_are_read_within_their_bounds() {
    assert_eq!(kernel_stamp_ns(&[]), None);
    // A header claiming more than there is.
    let mut c = vec![0u8; 32];
    c[..8].copy_from_slice(&64u64.to_ne_bytes());
    assert_eq!(kernel_stamp_ns(&c), None);
    // A well-formed stamp.
    c[..8].copy_from_slice(&32u64.to_ne_bytes());
    c[8..12].copy_from_slice(&libc::SOL_SOCKET.to_ne_bytes());
    c[12..16].copy_from_slice(&libc::SCM_TIMESTAMPNS.to_ne_bytes());
    c[16..24].copy_from_slice(&3i64.to_ne_bytes());
    c[24..32].copy_from_slice(&5i64.to_ne_bytes());
    assert_eq!(kernel_stamp_ns(&c), Some(3_000_000_005));
    // A header too short to be one: no loop, no panic.
    c[..8].copy_from_slice(&0u64.to_ne_bytes());
    assert_eq!(kernel_stamp_ns(&c), None);
}
