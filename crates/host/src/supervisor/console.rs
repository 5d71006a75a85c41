//! The console of an instance whose game has one (`[rcon]` in its
//! definition, `tickpack_game::console`): a new password at every start,
//! given to the server where `{rcon_password}` stands (the server's own
//! config file, argv or environment, written for this start only; the
//! spec in `state.json` keeps the placeholder, the status never shows
//! it), and map changes asked with [`Supervisor::change_map`] (the control
//! socket's `change-map N`, `tickpack host change-map`, a bench in the
//! same process).
//!
//! A command goes from the host side on a socket of its own, connected to
//! the instance's address (the kernel drops what anyone else sends to
//! it), as the health checks do; the instance firewall lets the answer in
//! as a flow the host started. The answer is read at every
//! [`Supervisor::poll`], at most [`READ_BUDGET`] datagrams each, and judged
//! by an [`Exchange`] (datagrams counted to a bound, 4 KiB of text kept),
//! then recorded as an event, the server's text escaped and cut, and kept
//! for the status ([`ConsoleStatus`]). One command per instance at a
//! time: a change asked while one waits for its answer is refused.

use std::net::UdpSocket;

use tickpack_game::console::{Answer, Exchange, Password, REPLY_TIMEOUT};
use tickpack_sys::text::{escape, EXCERPT};

use super::health::{check_socket, last_lines, recv_stamped, READ_BUDGET};
use super::Supervisor;
use crate::event::EventKind;
use crate::status::{ConsoleOutcome, ConsoleStatus, InstanceState, MapChangeSent};

/// Why a map change was not sent.
#[derive(Debug, thiserror::Error)]
pub enum ConsoleError {
    #[error("no instance {id} (this host has instances 1-{count})")]
    NoInstance { id: u32, count: usize },
    #[error(
        "instance {id}: its game's definition has no [rcon], so the host cannot reach its console"
    )]
    NoConsole { id: u32 },
    #[error("instance {id} is {state}: its map can change once it is running")]
    NotRunning { id: u32, state: String },
    #[error("instance {id} is still waiting for the answer to its map change to {map} (at most {} s)", REPLY_TIMEOUT.as_secs())]
    Busy { id: u32, map: String },
    #[error("instance {id}: the map change cannot be sent: {why}")]
    Command { id: u32, why: String },
    #[error("instance {id}: sending the map change: {err}")]
    Io { id: u32, err: std::io::Error },
}

/// A command waiting for its answer.
struct Pending {
    sock: UdpSocket,
    exchange: Exchange,
    sent: MapChangeSent,
}

/// One instance's console.
pub(super) struct ConsoleState {
    /// This start's password.
    password: Password,
    /// Map changes sent since this start.
    changes: u32,
    pending: Option<Pending>,
    /// The last command that finished.
    last: Option<ConsoleOutcome>,
}

/// A password from the OS's random source.
fn new_password() -> Password {
    use rand::RngCore;
    let mut bytes = [0u8; 16];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    Password::from_random(bytes)
}

impl ConsoleState {
    pub(super) fn new() -> ConsoleState {
        ConsoleState {
            password: new_password(),
            changes: 0,
            pending: None,
            last: None,
        }
    }

    /// The server starts again: a new password, no change asked yet; the
    /// command that waited (if any) is returned, never to be answered.
    pub(super) fn restart(&mut self) -> Option<MapChangeSent> {
        self.password = new_password();
        self.changes = 0;
        self.pending.take().map(|p| p.sent)
    }

    /// A command waits for its answer.
    pub(super) fn waiting(&self) -> bool {
        self.pending.is_some()
    }

    pub(super) fn password(&self) -> &Password {
        &self.password
    }

    pub(super) fn status(&self) -> ConsoleStatus {
        ConsoleStatus {
            map_changes: self.changes,
            waiting: self.pending.as_ref().map(|p| p.sent.clone()),
            last: self.last.clone(),
        }
    }
}

/// The event that says how a command ended; the server's text escaped.
fn outcome_event(o: &ConsoleOutcome) -> EventKind {
    let r = &o.outcome;
    let lines = if r.answer == Answer::Answered { 3 } else { 1 };
    EventKind::MapChangeAnswer {
        instance: o.sent.instance,
        map: o.sent.map.clone(),
        answer: r.answer,
        datagrams: r.datagrams,
        bytes: r.bytes,
        last_ms: r.last_ms,
        wait_s: REPLY_TIMEOUT.as_secs(),
        excerpt: escape(&last_lines(&r.text, lines), EXCERPT),
    }
}

impl Supervisor {
    /// Asks instance `id` (1-based) to change to the next map of its
    /// rotation: sends its definition's `map_change` command to its
    /// console and returns what was sent; the answer is read by
    /// [`Supervisor::poll`] and shows in the events and the status
    /// ([`Supervisor::console_status`]). Refused for an instance whose game
    /// has no `[rcon]`, that is not running, or whose last command still
    /// waits for its answer.
    pub fn change_map(&mut self, id: u32) -> Result<MapChangeSent, ConsoleError> {
        let now = self.query_clock();
        let count = self.instances.len();
        let i = self
            .instances
            .iter_mut()
            .find(|i| i.spec.id == id)
            .ok_or(ConsoleError::NoInstance { id, count })?;
        let (Some(console), Some(state)) = (&i.spec.server.console, &mut i.console) else {
            return Err(ConsoleError::NoConsole { id });
        };
        if i.child.is_none() || i.life.state() != InstanceState::Running {
            return Err(ConsoleError::NotRunning {
                id,
                state: format!("{:?}", i.life.state()).to_lowercase(),
            });
        }
        if let Some(p) = &state.pending {
            return Err(ConsoleError::Busy {
                id,
                map: p.sent.map.clone(),
            });
        }
        let (map, command) = console.map_change.nth(state.changes + 1);
        let datagram = state
            .password
            .request(&command)
            .map_err(|why| ConsoleError::Command { id, why })?;
        let sock = check_socket(i.addr).map_err(|err| ConsoleError::Io { id, err })?;
        sock.send(&datagram)
            .map_err(|err| ConsoleError::Io { id, err })?;
        state.changes += 1;
        let sent = MapChangeSent {
            instance: id,
            map,
            command,
        };
        state.pending = Some(Pending {
            sock,
            exchange: Exchange::new(now),
            sent: sent.clone(),
        });
        self.event(EventKind::MapChangeSent {
            instance: id,
            map: sent.map.clone(),
            command: sent.command.clone(),
        });
        Ok(sent)
    }

    /// Instance `id`'s console: the map changes asked since its start,
    /// the one waiting, the last answer; `None` without one.
    pub fn console_status(&self, id: u32) -> Option<ConsoleStatus> {
        let i = self.instances.iter().find(|i| i.spec.id == id)?;
        i.console.as_ref().map(ConsoleState::status)
    }

    /// Reads what came back to every waiting command (at most
    /// [`READ_BUDGET`] datagrams each) and records those that ended.
    pub(super) fn poll_console(&mut self) {
        let mut buf = [0u8; 2048];
        let mut events = vec![];
        for k in 0..self.instances.len() {
            for _ in 0..READ_BUDGET {
                let i = &self.instances[k];
                let Some(p) = i.console.as_ref().and_then(|c| c.pending.as_ref()) else {
                    break;
                };
                let Some(r) = recv_stamped(&p.sock, &mut buf) else {
                    break;
                };
                let at = self.stamp_on_query_clock(r.at_ns);
                let addr = self.instances[k].addr;
                if let Some(p) = self.instances[k]
                    .console
                    .as_mut()
                    .and_then(|c| c.pending.as_mut())
                {
                    if r.from == addr {
                        p.exchange.handle(at, &buf[..r.len]);
                    }
                }
            }
            let now = self.query_clock();
            let Some(state) = self.instances[k].console.as_mut() else {
                continue;
            };
            let Some(outcome) = state.pending.as_ref().and_then(|p| p.exchange.poll(now)) else {
                continue;
            };
            let sent = state.pending.take().map(|p| p.sent).expect("pending");
            let done = ConsoleOutcome { sent, outcome };
            events.push(outcome_event(&done));
            state.last = Some(done);
        }
        for e in events {
            self.event(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use tickpack_game::console::Outcome;

    use super::*;

    fn outcome(answer: Answer, text: &str) -> ConsoleOutcome {
        ConsoleOutcome {
            sent: MapChangeSent {
                instance: 2,
                map: "dm4".into(),
                command: "map dm4".into(),
            },
            outcome: Outcome {
                answer,
                datagrams: 3,
                bytes: text.len() as u64,
                first_ms: Some(80.0),
                last_ms: Some(105.4),
                text: text.into(),
                text_cut: false,
            },
        }
    }

    #[test]
    fn an_answer_is_recorded_with_the_servers_text_escaped() {
        let k = outcome_event(&outcome(
            Answer::Answered,
            "loaded maps/dm4.aas\nAAS initialized.\n\x1b[2Jfake row\n",
        ));
        let EventKind::MapChangeAnswer {
            instance,
            map,
            answer,
            datagrams,
            last_ms,
            excerpt,
            ..
        } = &k
        else {
            panic!("{k:?}")
        };
        assert_eq!((*instance, map.as_str()), (2, "dm4"));
        assert_eq!(
            (*answer, *datagrams, *last_ms),
            (Answer::Answered, 3, Some(105.4))
        );
        assert!(excerpt.contains("\\x1b[2Jfake row"), "{excerpt}");
        assert!(
            !excerpt.contains('\n') && !excerpt.contains('\x1b'),
            "{excerpt:?}"
        );
        // The words are made from the fields, the foreign text escaped.
        let e = k.to_string();
        assert!(
            e.starts_with("instance 2: map change to dm4 answered: 3 datagram(s)"),
            "{e}"
        );
        assert!(e.contains("the last 105 ms"), "{e}");
        let k = outcome_event(&outcome(Answer::Refused, "Bad rconpassword.\n"));
        assert!(
            matches!(&k, EventKind::MapChangeAnswer { answer: Answer::Refused, excerpt, .. } if excerpt == "Bad rconpassword."),
            "{k:?}"
        );
        let e = outcome_event(&outcome(Answer::Unanswered, "")).to_string();
        assert!(e.contains("got no answer within 10 s"), "{e}");
    }

    #[test]
    fn a_restart_makes_a_new_password_and_forgets_the_waiting_command() {
        let mut c = ConsoleState::new();
        let first = c.password().clone();
        assert_eq!(first.as_str().len(), 32);
        c.changes = 2;
        c.pending = Some(Pending {
            sock: UdpSocket::bind("127.0.0.1:0").unwrap(),
            exchange: Exchange::new(std::time::Duration::ZERO),
            sent: outcome(Answer::Answered, "").sent,
        });
        assert_eq!(c.restart().map(|s| s.map), Some("dm4".to_string()));
        assert_ne!(c.password(), &first, "a new secret at every start");
        assert_eq!((c.changes, c.pending.is_none()), (0, true));
        assert_eq!(c.status().map_changes, 0);
    }
}
