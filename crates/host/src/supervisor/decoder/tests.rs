//! The decoder's pipe: a real `serve` on a thread, and peers that answer
//! what a decoder taken over by a hostile server's bytes might.

use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

use tickpack_wire::{Packet, ServerStats};

use super::*;

/// A decoder whose other end `peer` serves on a thread.
fn with_peer(peer: impl FnOnce(OwnedFd) + Send + 'static) -> Decoder {
    let (ours, theirs) = pair().unwrap();
    std::thread::spawn(move || peer(theirs));
    Decoder::over(ours)
}

fn stats_reply(nonce: u64) -> Vec<u8> {
    let s = ServerStats {
        nonce,
        tick: 7,
        ..Default::default()
    };
    Packet::Stats(s).to_vec()
}

/// Reads one request, then does `answer` with the socket.
fn after_a_request(answer: impl FnOnce(&OwnedFd) + Send + 'static) -> Decoder {
    with_peer(move |s| {
        let mut buf = [0u8; MAX_DATAGRAM + 1];
        let _ = rustix::net::recv(&s, &mut buf[..], RecvFlags::empty());
        answer(&s);
        std::thread::sleep(Duration::from_secs(3));
    })
}

#[test]
fn the_child_answers_what_decoding_in_process_would() {
    let mut d = with_peer(|s| {
        serve(s);
    });
    let a2s_junk = b"\xff\xff\xff\xffI\x11junk".to_vec();
    let q3_info = b"\xff\xff\xff\xffinfoResponse\n\\mapname\\oa_dm1\\clients\\3\\sv_maxclients\\12\\challenge\\tp1".to_vec();
    let items: Vec<(Ask, Vec<u8>)> = vec![
        (Ask::Stats, stats_reply(5)),
        (Ask::Stats, b"not a packet".to_vec()),
        (Ask::Query(Query::Q3Info), q3_info),
        (Ask::Query(Query::A2sInfo), a2s_junk),
        (Ask::Query(Query::A2sInfo), vec![]),
    ];
    // More than the window, so answers are read while requests go.
    let many: Vec<(Ask, &[u8])> = items
        .iter()
        .cycle()
        .take(5 * WINDOW)
        .map(|(a, b)| (*a, &b[..]))
        .collect();
    let got = d.decode_all(&many).unwrap();
    assert_eq!(got.len(), many.len());
    for ((ask, bytes), g) in many.iter().zip(&got) {
        assert_eq!(*g, decode(*ask, bytes));
    }
    assert!(matches!(&got[0], Decoded::Stats(Some(s)) if s.nonce == 5 && s.tick == 7));
    assert_eq!(got[1], Decoded::Stats(None));
    assert!(
        matches!(&got[2], Decoded::Query(Heard::Answer { facts, .. }) if facts.map == "oa_dm1"),
        "{:?}",
        got[2]
    );
}

#[test]
fn an_answer_that_is_not_one_fails_the_batch() {
    let mut d = after_a_request(|s| {
        let _ = rustix::net::send(s, b"{\"rm -rf\":1}", SendFlags::NOSIGNAL);
    });
    let e = d.decode_all(&[(Ask::Stats, b"x")]).unwrap_err();
    assert!(matches!(e, DecoderError::Garbage(_)), "{e}");
}

#[test]
fn an_answer_of_another_kind_than_asked_fails_the_batch() {
    let mut d = after_a_request(|s| {
        let lie = serde_json::to_vec(&Decoded::Query(Heard::NotOurs)).unwrap();
        let _ = rustix::net::send(s, &lie, SendFlags::NOSIGNAL);
    });
    let e = d.decode_all(&[(Ask::Stats, b"x")]).unwrap_err();
    assert!(e.to_string().contains("another kind"), "{e}");
}

#[test]
fn an_answer_over_its_bound_fails_the_batch() {
    let mut d = after_a_request(|s| {
        let _ = rustix::net::send(s, &vec![b' '; MAX_ANSWER + 1], SendFlags::NOSIGNAL);
    });
    let e = d.decode_all(&[(Ask::Stats, b"x")]).unwrap_err();
    assert!(e.to_string().contains("over"), "{e}");
}

#[test]
fn a_silent_decoder_is_not_waited_for_past_its_timeout() {
    let mut d = after_a_request(|_| {});
    let t = Instant::now();
    let e = d.decode_all(&[(Ask::Stats, b"x")]).unwrap_err();
    assert!(matches!(e, DecoderError::Timeout), "{e}");
    assert!(t.elapsed() < ANSWER_TIMEOUT * 3, "{:?}", t.elapsed());
}

#[test]
fn a_decoder_that_ended_fails_the_batch() {
    let mut d = with_peer(drop);
    std::thread::sleep(Duration::from_millis(50));
    let e = d.decode_all(&[(Ask::Stats, b"x")]).unwrap_err();
    assert!(matches!(e, DecoderError::Ended), "{e}");
}

#[test]
fn the_child_refuses_a_request_the_supervisor_never_sends() {
    let (ours, theirs) = pair().unwrap();
    let served = std::thread::spawn(move || serve(theirs));
    rustix::net::send(&ours, b"\x09junk", SendFlags::NOSIGNAL).unwrap();
    assert_eq!(served.join().unwrap(), 2);
}
