use super::*;

#[test]
fn info_value_finds_keys() {
    let i = "\\mapname\\oa_dm1\\sv_serverid\\12345\\x\\";
    assert_eq!(info_value(i, "mapname"), "oa_dm1");
    assert_eq!(info_value(i, "sv_serverid"), "12345");
    assert_eq!(info_value(i, "nope"), "");
    assert_eq!(atoi(" -42x"), -42);
    assert_eq!(atoi("abc"), 0);
}

#[test]
fn the_handshake_sends_getchallenge_then_a_compressed_connect() {
    let mut c = Client::new(ClientConfig::new("bot\\1", 777, 4242));
    let p = c.handshake_packet().unwrap();
    assert_eq!(p, oob::encode("getchallenge 4242 Quake3Arena"));
    let mut ev = Vec::new();
    // A wrong client challenge is ignored.
    c.handle(&oob::encode("challengeResponse 99 1 71"), &mut ev)
        .unwrap();
    assert_eq!(c.state(), ClientState::Challenging);
    c.handle(&oob::encode("challengeResponse -99 4242 71"), &mut ev)
        .unwrap();
    assert_eq!(ev, vec![Event::Challenged]);
    assert_eq!(c.state(), ClientState::Connecting);
    let p = c.handshake_packet().unwrap();
    assert_eq!(&p[..12], b"\xff\xff\xff\xffconnect ");
    let plain = huffman::decompress(&p, 12, MAX_MSGLEN).unwrap();
    let text = String::from_utf8(plain[12..].to_vec()).unwrap();
    assert_eq!(
        text,
        format!(
            "\"\\name\\bot1\\rate\\25000\\snaps\\1000\\cl_guid\\{}\\protocol\\71\\qport\\777\\challenge\\-99\"",
            info_value(&c.userinfo(), "cl_guid")
        )
    );
    assert_eq!(info_value(&c.userinfo(), "cl_guid").len(), 32);
    c.handle(&oob::encode("print\nServer is full.\n"), &mut ev)
        .unwrap();
    assert_eq!(ev.last(), Some(&Event::Print("Server is full.\n".into())));
    c.handle(&oob::encode("connectResponse -99"), &mut ev)
        .unwrap();
    assert_eq!(c.state(), ClientState::AwaitingGamestate);
    assert_eq!(c.handshake_packet(), None);
    assert!(c.last_snapshot().is_none());
    c.reset();
    assert_eq!(c.state(), ClientState::Challenging);
}

/// A baseline sent as removed used to be stored with number 0, out of
/// order, so later baseline lookups missed.
#[test]
fn removed_baseline_keeps_its_number_and_the_order() {
    let mut c = Client::new(ClientConfig::new("a", 1, 2));
    let mut w = Writer::new();
    w.write_long(0); // serverCommandSequence
    for (n, removed) in [(5, false), (9, true), (12, false)] {
        w.write_byte(SVC_BASELINE);
        let e = EntityState {
            number: n,
            fields: [7; 51],
        };
        if removed {
            delta::write_delta_entity(&mut w, Some(&e), None, false);
        } else {
            delta::write_delta_entity(&mut w, None, Some(&e), true);
        }
    }
    w.write_byte(SVC_EOF);
    w.write_long(3);
    w.write_long(4);
    let body = w.into_bytes();
    let mut ev = Vec::new();
    c.parse_gamestate(&mut Reader::new(&body), &mut ev).unwrap();
    let numbers: Vec<i32> = c.baselines.iter().map(|b| b.number).collect();
    assert_eq!(numbers, vec![5, 9, 12]);
    assert_eq!(c.baseline(12).fields[0], 7);
    assert_eq!(c.baseline(9).fields, [0; 51]);
}

#[test]
fn a_usercmd_packet_before_the_channel_opens_is_none() {
    let mut c = Client::new(ClientConfig::new("a", 1, 2));
    assert_eq!(c.usercmd_packet(&[]), None);
}
