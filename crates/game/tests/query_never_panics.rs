//! Whatever a server (or anyone who can reach the asker's port) sends,
//! the query layer answers without a panic: the decoder says what a
//! datagram means, and a session fed any datagrams at any times (backwards
//! too) keeps its counts whole.

use std::time::Duration;

use proptest::prelude::*;
use tickpack_game::query::{Query, Schedule, Session};

const QUERIES: [Query; 3] = [Query::Q3Info, Query::Q3Status, Query::A2sInfo];

fn recorded() -> &'static [Vec<u8>] {
    static RECORDED: std::sync::OnceLock<Vec<Vec<u8>>> = std::sync::OnceLock::new();
    RECORDED.get_or_init(|| {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        let mut out = vec![];
        for sub in ["openarena", "darkplaces"] {
            for e in std::fs::read_dir(dir.join(sub)).unwrap() {
                out.push(std::fs::read(e.unwrap().path()).unwrap());
            }
        }
        let mut ch = vec![];
        tickpack_wire::a2s::encode_challenge(7, &mut ch);
        out.push(ch);
        out
    })
}

/// A datagram: random bytes, or a recorded answer cut anywhere and
/// followed by random bytes.
fn datagram() -> impl Strategy<Value = Vec<u8>> {
    let bytes = || proptest::collection::vec(any::<u8>(), 0..300);
    prop_oneof![
        bytes(),
        (
            any::<prop::sample::Index>(),
            any::<prop::sample::Index>(),
            bytes()
        )
            .prop_map(|(which, at, tail)| {
                let r = recorded();
                let d = &r[which.index(r.len())];
                let mut d = d[..at.index(d.len() + 1)].to_vec();
                d.extend_from_slice(&tail);
                d
            }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn any_datagram_is_read_without_a_panic(d in datagram(), q in 0..3usize) {
        let _ = QUERIES[q].decode(&d);
        let mut marked = b"\xff\xff\xff\xffstatusResponse\n".to_vec();
        marked.extend_from_slice(&d);
        let _ = QUERIES[q].decode(&marked);
    }

    #[test]
    fn a_session_fed_anything_at_any_time_keeps_its_counts(
        q in 0..3usize,
        interval_ms in 0u64..3_000,
        timeout_ms in 0u64..3_000,
        steps in proptest::collection::vec((-500i64..3_000, datagram(), any::<bool>()), 0..60),
    ) {
        let schedule = Schedule {
            interval: Duration::from_millis(interval_ms),
            timeout: Duration::from_millis(timeout_ms),
        };
        let mut s = Session::new(QUERIES[q], schedule, Duration::ZERO);
        let mut now = Duration::from_secs(1);
        let mut out = vec![];
        for (dt, d, tick) in steps {
            now = if dt < 0 {
                now.saturating_sub(Duration::from_millis(dt.unsigned_abs()))
            } else {
                now + Duration::from_millis(dt as u64)
            };
            if tick {
                let _ = s.handle_timeout(now);
                let mut n = 0;
                while s.poll_transmit(now, &mut out) {
                    n += 1;
                    prop_assert!(n <= 2, "one query, or one re-send, per call");
                }
            }
            let _ = s.handle(now, &d);
            let _ = s.next_timeout();
            let c = s.counts();
            prop_assert_eq!(c.sent, c.answered + c.timed_out + u64::from(!s.idle()));
            prop_assert!(c.late <= c.timed_out);
        }
        s.abandon();
        let c = s.counts();
        prop_assert_eq!(c.sent, c.answered + c.timed_out);
    }
}
