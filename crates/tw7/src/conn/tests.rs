use super::*;
use crate::packet::Chunks;

const ME: u32 = 0x0102_0304;
const SRV: u32 = 0xaabb_ccdd;

fn server_control(msg: u8, extra: &[u8], ack: u16) -> Vec<u8> {
    crate::server_packets::control(ME, ack, msg, extra)
}

fn online(now: Instant) -> Connection {
    let mut c = Connection::new(ME, now);
    let mut buf = [0u8; MAX_PACKET_SIZE];
    let mut p = Vec::new();
    c.poll_transmit(now, &mut buf).unwrap();
    c.handle(
        now,
        &server_control(CTRL_TOKEN, &SRV.to_be_bytes(), 0),
        &mut p,
    )
    .unwrap();
    c.poll_transmit(now, &mut buf).unwrap();
    assert_eq!(
        c.handle(now, &server_control(CTRL_ACCEPT, &[], 0), &mut p)
            .unwrap(),
        Incoming::Accepted
    );
    c
}

#[test]
fn handshake_bytes() {
    let now = Instant::now();
    let mut c = Connection::new(ME, now);
    let mut buf = [0u8; MAX_PACKET_SIZE];
    let n = c.poll_transmit(now, &mut buf).unwrap();
    assert_eq!(n, 7 + 1 + 512);
    assert_eq!(
        &buf[..12],
        &[0x04, 0, 0, 0xff, 0xff, 0xff, 0xff, 5, 1, 2, 3, 4]
    );
    assert!(buf[12..n].iter().all(|&b| b == 0));
    assert!(c.poll_transmit(now, &mut buf).is_none());
    // Resent after 500 ms.
    c.handle_timeout(now + Duration::from_millis(600));
    assert!(c.poll_transmit(now, &mut buf).is_some());
    let mut p = Vec::new();
    c.handle(
        now,
        &server_control(CTRL_TOKEN, &SRV.to_be_bytes(), 0),
        &mut p,
    )
    .unwrap();
    assert_eq!(c.state(), ConnState::Connect);
    let n = c.poll_transmit(now, &mut buf).unwrap();
    assert_eq!(n, 520);
    assert_eq!(
        &buf[..12],
        &[0x04, 0, 0, 0xaa, 0xbb, 0xcc, 0xdd, 1, 1, 2, 3, 4]
    );
}

#[test]
fn wrong_token_and_bad_ack_are_dropped() {
    let now = Instant::now();
    let mut c = online(now);
    let mut p = Vec::new();
    let mut bad = server_control(CTRL_CLOSE, b"x\0", 0);
    bad[6] ^= 1;
    assert!(matches!(
        c.handle(now, &bad, &mut p),
        Err(Tw7Error::WrongToken { .. })
    ));
    // We sent nothing vital: ack 5 is impossible.
    assert!(c
        .handle(now, &server_control(CTRL_KEEPALIVE, &[], 5), &mut p)
        .is_err());
    assert_eq!(c.state(), ConnState::Online);
}

#[test]
fn vital_chunks_are_resent_until_acked() {
    let t0 = Instant::now();
    let mut c = online(t0);
    let mut buf = [0u8; MAX_PACKET_SIZE];
    c.queue_chunk(t0, true, b"hello").unwrap();
    let n = c.poll_transmit(t0, &mut buf).unwrap();
    let h = PacketHeader::decode(&buf[..n]).unwrap();
    assert_eq!((h.num_chunks, h.token), (1, SRV));
    assert_eq!(c.unacked(), 1);
    c.handle_timeout(t0 + Duration::from_millis(1100));
    let n = c.poll_transmit(t0, &mut buf).unwrap();
    let h = PacketHeader::decode(&buf[..n]).unwrap();
    let mut payload = Vec::new();
    if h.flags & FLAG_COMPRESSION != 0 {
        Huffman::get()
            .decompress(&buf[7..n], &mut payload, MAX_PAYLOAD)
            .unwrap();
    } else {
        payload.extend_from_slice(&buf[7..n]);
    }
    let (ch, data) = Chunks::new(&payload, h.num_chunks).next().unwrap().unwrap();
    assert_eq!(ch.flags, CHUNK_VITAL | CHUNK_RESEND);
    assert_eq!((ch.sequence, data), (1, &b"hello"[..]));
    // The server acks sequence 1.
    let mut p = Vec::new();
    c.handle(t0, &server_control(CTRL_KEEPALIVE, &[], 1), &mut p)
        .unwrap();
    let d = PacketHeader {
        flags: 0,
        ack: 1,
        num_chunks: 0,
        token: ME,
    }
    .encode();
    c.handle(t0, &d, &mut p).unwrap();
    assert_eq!(c.unacked(), 0);
}

#[test]
fn in_order_and_gaps() {
    let t0 = Instant::now();
    let mut c = online(t0);
    assert!(c.accept_vital(1));
    assert!(!c.accept_vital(1));
    assert!(!c.accept_vital(3));
    assert!(c.has_transmit(), "a gap asks for a resend");
    let mut buf = [0u8; MAX_PACKET_SIZE];
    let n = c.poll_transmit(t0, &mut buf).unwrap();
    let h = PacketHeader::decode(&buf[..n]).unwrap();
    assert_eq!((h.flags & FLAG_RESEND, h.ack), (FLAG_RESEND, 1));
}

#[test]
fn close_and_timeouts() {
    let t0 = Instant::now();
    let mut c = online(t0);
    let mut p = Vec::new();
    assert_eq!(
        c.handle(
            t0,
            &server_control(CTRL_CLOSE, b"kicked\x01\0junk", 0),
            &mut p
        )
        .unwrap(),
        Incoming::Closed
    );
    assert_eq!(c.close_reason(), "kicked ");
    let mut c = online(t0);
    c.handle_timeout(t0 + Duration::from_secs(11));
    assert_eq!(
        (c.state(), c.close_reason()),
        (ConnState::Closed, "Timeout")
    );
    let mut c = Connection::new(ME, t0);
    c.handle_timeout(t0 + Duration::from_secs(6));
    assert_eq!(c.state(), ConnState::Closed);
    let mut c = online(t0);
    c.close("bye");
    let mut buf = [0u8; MAX_PACKET_SIZE];
    let n = c.poll_transmit(t0, &mut buf).unwrap();
    assert_eq!(&buf[7..n], b"\x04bye\0");
    assert!(c.poll_transmit(t0, &mut buf).is_none());
}

#[test]
fn keepalive_after_a_second() {
    let t0 = Instant::now();
    let mut c = online(t0);
    let mut buf = [0u8; MAX_PACKET_SIZE];
    c.handle_timeout(t0 + Duration::from_millis(1500));
    let n = c.poll_transmit(t0, &mut buf).unwrap();
    assert_eq!(&buf[6..n], &[0xdd, CTRL_KEEPALIVE]);
}
