//! The ring in steady state allocates nothing per datagram: its receive
//! buffers are one pool mapped at the start, its send buffers slots reused
//! once their sends completed, its list of completions sized for the whole
//! completion queue. A counting allocator (per thread) counts the calls
//! over rounds of sends on every socket and the replies to them.

use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use tickpack_net::{RecvBatch, RingEvent, RingSizes, SocketOptions, UdpRing, UdpSocket};
use tickpack_testkit::alloc::{allocations, Counting};

#[global_allocator]
static ALLOC: Counting = Counting;

const SOCKETS: usize = 64;

fn bind() -> UdpSocket {
    UdpSocket::bind("127.0.0.1:0".parse().unwrap(), &SocketOptions::default()).unwrap()
}

/// One round: a command on every socket, each answered with a 2000-byte
/// snapshot, all read back. Returns the snapshots read (or panics after 2 s).
fn round(
    ring: &mut UdpRing,
    peers: &[UdpSocket],
    cmd: &[u8],
    snap: &[u8],
    scratch: &mut RecvBatch,
) -> usize {
    for t in 0..SOCKETS {
        ring.send(t, cmd).unwrap();
    }
    ring.reap(|e| panic!("{e:?}")).unwrap();
    for p in peers {
        let end = Instant::now() + Duration::from_secs(2);
        // The peer reads the command (into a batch made before) and answers.
        while p.recv_batch(scratch).unwrap_or(0) == 0 {
            assert!(Instant::now() < end, "a command did not arrive");
        }
        p.send(snap).unwrap();
    }
    let mut got = 0;
    let end = Instant::now() + Duration::from_secs(2);
    while got < SOCKETS {
        ring.reap(|e| match e {
            RingEvent::Datagram { data, .. } => {
                assert_eq!(data.len(), snap.len());
                got += 1;
            }
            other => panic!("{other:?}"),
        })
        .unwrap();
        assert!(Instant::now() < end, "{got} of {SOCKETS} snapshots came");
    }
    got
}

#[test]
fn steady_state_sends_and_receives_allocate_nothing() {
    let clients: Vec<UdpSocket> = (0..SOCKETS).map(|_| bind()).collect();
    let peers: Vec<UdpSocket> = (0..SOCKETS).map(|_| bind()).collect();
    for (c, p) in clients.iter().zip(&peers) {
        c.connect(p.local_addr()).unwrap();
        p.connect(c.local_addr()).unwrap();
    }
    let mut ring = UdpRing::new(RingSizes::for_sockets(SOCKETS, 4, 2048)).unwrap();
    for c in &clients {
        ring.add(c.as_raw_fd()).unwrap();
    }
    let (cmd, snap, mut scratch) = (vec![1u8; 120], vec![2u8; 2000], RecvBatch::new(1, 4096));
    // Warm up: every send slot made once.
    for _ in 0..3 {
        round(&mut ring, &peers, &cmd, &snap, &mut scratch);
    }
    let (got, n) = allocations(|| {
        (0..20)
            .map(|_| round(&mut ring, &peers, &cmd, &snap, &mut scratch))
            .sum::<usize>()
    });
    assert_eq!(got, 20 * SOCKETS);
    assert_eq!(
        n, 0,
        "allocations over 20 rounds of {SOCKETS} sends and receives"
    );
}
