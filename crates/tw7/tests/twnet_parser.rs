//! Our packets, read by an independent decoder: the Python package
//! `twnet-parser` (sans-I/O, Teeworlds 0.6/0.7). The client is driven
//! through a join by hand-built server packets; every datagram it sends
//! (token request, connect, INFO, READY, CL_STARTINFO, ENTERGAME, INPUT) is
//! decoded by `twnet_parser.packet.parse7` and its fields checked.
//!
//! Needs python3 with twnet_parser; without it the test fails and says how
//! to install it (`python3 -m pip install twnet-parser`, or
//! scripts/setup.sh).

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;
use tickpack_tw7::msg::{game, sys};
use tickpack_tw7::packer::pack_int;
use tickpack_tw7::packet::{CTRL_ACCEPT, CTRL_TOKEN};
use tickpack_tw7::server_packets::{self, message};
use tickpack_tw7::{Client, ClientConfig, ClientState, Event, PlayerInput};

const MY_TOKEN: u32 = 0x1122_3344;
const SERVER_TOKEN: u32 = 0x5566_7788;

const DECODER: &str = r#"
import json, sys
try:
    from twnet_parser.packet import parse7
except ImportError as e:
    print("IMPORT-ERROR", e)
    sys.exit(3)

def plain(o):
    if isinstance(o, (bytes, bytearray)):
        return o.hex()
    if isinstance(o, (str, int, float, bool)) or o is None:
        return o
    if isinstance(o, (list, tuple)):
        return [plain(x) for x in o]
    if isinstance(o, dict):
        return {k: plain(v) for k, v in o.items()}
    try:
        return {k: plain(v) for k, v in dict(o).items()}
    except Exception:
        return str(o)

out = []
for h in sys.argv[1:]:
    p = parse7(bytes.fromhex(h), we_are_a_client=False)
    out.append({
        "flags": list(p.header.flags),
        "ack": p.header.ack,
        "token": p.header.token.hex(),
        "num_chunks": p.header.num_chunks,
        "messages": [plain(m) for m in p.messages],
    })
print(json.dumps(out))
"#;

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn server_control(msg: u8, extra: &[u8]) -> Vec<u8> {
    server_packets::control(MY_TOKEN, 0, msg, extra)
}

/// One uncompressed data packet with one chunk.
fn server_chunk(vital_seq: Option<u16>, body: &[u8]) -> Vec<u8> {
    server_packets::one_chunk(MY_TOKEN, 0, vital_seq, body)
}

fn sent(c: &mut Client, now: Instant) -> Vec<Vec<u8>> {
    let mut v = Vec::new();
    let mut buf = Vec::new();
    while c.poll_transmit(now, &mut buf) {
        v.push(buf.clone());
    }
    v
}

/// The datagrams a client sends through a join and its first input.
fn join_datagrams() -> Vec<Vec<u8>> {
    let t0 = Instant::now();
    let mut c = Client::new(ClientConfig::new("tp_parser", MY_TOKEN), t0);
    let mut out = Vec::new();
    out.extend(sent(&mut c, t0)); // token request
    c.handle(t0, &server_control(CTRL_TOKEN, &SERVER_TOKEN.to_be_bytes()))
        .unwrap();
    out.extend(sent(&mut c, t0)); // connect
    c.handle(t0, &server_control(CTRL_ACCEPT, &[])).unwrap();
    out.extend(sent(&mut c, t0)); // INFO
    let map = message(sys::MAP_CHANGE, true, |p| {
        p.string("dm1", 64)
            .int(0x3d8a_1f2b)
            .int(5000)
            .int(5)
            .int(1384);
        p.raw(&[0u8; 32]);
    });
    c.handle(t0, &server_chunk(Some(1), &map)).unwrap();
    out.extend(sent(&mut c, t0)); // READY
    c.handle(
        t0,
        &server_chunk(Some(2), &message(sys::CON_READY, true, |_| {})),
    )
    .unwrap();
    out.extend(sent(&mut c, t0)); // CL_STARTINFO
    let info = message(game::SV_CLIENTINFO, false, |p| {
        p.int(3).int(1).int(0);
    });
    c.handle(t0, &server_chunk(Some(3), &info)).unwrap();
    c.handle(
        t0,
        &server_chunk(Some(4), &message(game::SV_READYTOENTER, false, |_| {})),
    )
    .unwrap();
    out.extend(sent(&mut c, t0)); // ENTERGAME
    assert_eq!(c.state(), ClientState::Entering);
    // A snapshot from nothing at tick 100: one PlayerInfo(11) item.
    let mut delta = Vec::new();
    for v in [0, 1, 0, 11, 3, 0, 5, 20] {
        pack_int(&mut delta, v);
    }
    let snap = message(sys::SNAPSINGLE, true, |p| {
        p.int(100)
            .int(101)
            .int(25)
            .int(delta.len() as i32)
            .raw(&delta);
    });
    c.handle(t0, &server_chunk(None, &snap)).unwrap();
    let mut in_game = false;
    while let Some(e) = c.poll_event() {
        in_game |= matches!(e, Event::InGame { client_id: Some(3) });
    }
    assert!(in_game, "the snapshot put us in the game");
    c.input(
        t0,
        PlayerInput {
            direction: -1,
            target_x: 120,
            target_y: -45,
            jump: 1,
            wanted_weapon: 2,
            ..Default::default()
        },
    );
    let t1 = t0 + Duration::from_millis(30);
    out.extend(sent(&mut c, t1)); // INPUT
    out
}

#[test]
fn twnet_parser_reads_our_packets() {
    let datagrams = join_datagrams();
    assert_eq!(datagrams.len(), 7, "one datagram per step");
    let args: Vec<String> = datagrams.iter().map(|d| hex(d)).collect();
    let run = Command::new("python3")
        .arg("-c")
        .arg(DECODER)
        .args(&args)
        .output();
    let out = match run {
        Ok(o) => o,
        Err(e) => panic!(
            "python3 could not be run ({e}): install python3 and twnet-parser \
             (`python3 -m pip install twnet-parser`, or scripts/setup.sh)"
        ),
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.code() != Some(3),
        "the Python package twnet_parser is missing ({stdout}): install it with \
         `python3 -m pip install twnet-parser` (or run scripts/setup.sh)"
    );
    assert!(
        out.status.success(),
        "twnet_parser failed on our packets:\n{}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Vec<Value> = serde_json::from_str(stdout.trim()).expect("decoder JSON");
    let m = |i: usize| &v[i]["messages"][0];

    // Token request: control, token NONE, our token as the response token.
    assert_eq!(v[0]["flags"], serde_json::json!(["control"]));
    assert_eq!(v[0]["token"], "ffffffff");
    assert_eq!(m(0)["message_name"], "token");
    assert_eq!(m(0)["response_token"], format!("{MY_TOKEN:08x}"));
    // Connect: to the server's token, with ours.
    assert_eq!(v[1]["token"], format!("{SERVER_TOKEN:08x}"));
    assert_eq!(m(1)["message_name"], "connect");
    assert_eq!(m(1)["response_token"], format!("{MY_TOKEN:08x}"));
    // INFO, vital sequence 1.
    assert_eq!(v[2]["token"], format!("{SERVER_TOKEN:08x}"));
    assert_eq!(m(2)["message_name"], "info");
    assert_eq!(m(2)["version"], "0.7 802f1be60a05665f");
    assert_eq!(m(2)["password"], "");
    assert_eq!(m(2)["client_version"], 0x0705);
    assert_eq!(m(2)["header"]["flags"], serde_json::json!(["vital"]));
    assert_eq!(m(2)["header"]["seq"], 1);
    // READY, acking the server's vital 1.
    assert_eq!(m(3)["message_name"], "ready");
    assert_eq!(v[3]["ack"], 1);
    assert_eq!(m(3)["header"]["seq"], 2);
    // CL_STARTINFO.
    let s = m(4);
    assert_eq!(s["message_name"], "cl_start_info");
    assert_eq!(s["name"], "tp_parser");
    assert_eq!(s["clan"], "");
    assert_eq!(s["country"], -1);
    assert_eq!(
        s["skin_part_names"],
        serde_json::json!(["standard", "", "", "standard", "standard", "standard"])
    );
    assert_eq!(
        s["use_custom_colors"],
        serde_json::json!([true, true, true, true, true, true])
    );
    assert_eq!(s["skin_part_colors"][0], 0x1B6F74);
    // ENTERGAME after SV_CLIENTINFO and SV_READYTOENTER (vital 3 and 4).
    assert_eq!(m(5)["message_name"], "enter_game");
    assert_eq!(v[5]["ack"], 4);
    assert_eq!(m(5)["header"]["seq"], 4);
    // INPUT: acks snapshot 100, non-vital, the ten ints.
    let i = m(6);
    assert_eq!(i["message_name"], "input");
    assert_eq!(i["ack_snapshot"], 100);
    assert!(i["intended_tick"].as_i64().unwrap() >= 101);
    assert_eq!(i["input_size"], 40);
    assert_eq!(i["header"]["flags"], serde_json::json!([]));
    let inp = &i["input"];
    assert_eq!(inp["direction"], -1);
    assert_eq!(inp["target_x"], 120);
    assert_eq!(inp["target_y"], -45);
    assert_eq!(inp["jump"], true);
    assert_eq!(inp["wanted_weapon"], 2);
}
