//! What happened on a host, as typed records: each [`Event`] has a kind and
//! its fields (the instance, the cause of an exit, what followed, the
//! values). The supervisor records them, `status.json` keeps them as they
//! are, `host up` prints them as they come, and every sentence a person
//! reads is made from them in one place, [`EventKind`]'s `Display`. Each is
//! also emitted as a `tracing` event with its kind, instance and record as fields
//! (target `tickpack::host`), inside whatever span the caller entered (the
//! bench enters one per step).
//!
//! Text that came from outside tickpack (a server's console answer, its
//! last output) is kept escaped and bounded where it is taken.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::guard::Action;

/// One thing that happened, and when (seconds since the host started).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    pub at_s: f64,
    #[serde(flatten)]
    pub kind: EventKind,
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{:8.2}s] {}", self.at_s, self.kind)
    }
}

/// How a process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "how", rename_all = "snake_case")]
pub enum ExitCause {
    /// It exited with this status code.
    Code { code: i32 },
    /// A signal ended it (or its init reported one as 128 + N).
    Signal { signal: i32 },
    /// The OOM killer ended it (its cgroup counted a kill).
    OomKilled { memory_limit_mib: Option<u64> },
    /// Neither a code nor a signal was reported.
    Unknown,
}

impl ExitCause {
    /// From a reaped child's status.
    pub fn of(status: std::process::ExitStatus) -> Self {
        use std::os::unix::process::ExitStatusExt;
        match (status.code(), status.signal()) {
            (Some(c), _) if c > 128 && c < 160 => Self::Signal { signal: c - 128 },
            (Some(code), _) => Self::Code { code },
            (None, Some(signal)) => Self::Signal { signal },
            _ => Self::Unknown,
        }
    }
}

impl fmt::Display for ExitCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Code { code } => write!(f, "exited with code {code}"),
            Self::Signal { signal } => write!(f, "was killed by signal {signal}"),
            Self::OomKilled { memory_limit_mib } => write!(
                f,
                "killed by the OOM killer (memory limit {})",
                memory_limit_mib.map_or("none".into(), |m| format!("{m} MiB"))
            ),
            Self::Unknown => f.write_str("exited"),
        }
    }
}

/// What the restart policy made of an exit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "then", rename_all = "snake_case")]
pub enum AfterExit {
    Restart { in_ms: u64 },
    GiveUp { exits: usize, window_s: f64 },
}

impl fmt::Display for AfterExit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Restart { in_ms } => write!(f, "restarting in {in_ms} ms"),
            Self::GiveUp { exits, window_s } => {
                write!(f, "it exited {exits} times in {window_s:.0} s, giving up")
            }
        }
    }
}

/// Why the health rule killed an instance that had not started.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "never", rename_all = "snake_case")]
pub enum NotReady {
    /// Its ready line never showed in its output.
    Printed { line: String },
    /// Its ready port was never bound.
    Bound { transport: String, port: u16 },
    /// Its checks were never answered.
    Answered,
}

/// Every kind of event, with its fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EventKind {
    /// What an earlier run left was removed before this one started.
    LeftoversRemoved { items: Vec<String> },
    /// The uid block taken, or one passed over and why.
    UidBlock { note: String },
    /// Placement could not do all it was asked (its own words).
    Placement { warning: String },
    /// An instance's init ended; what the restart policy does next.
    Exited {
        instance: u32,
        cause: ExitCause,
        after: AfterExit,
    },
    /// What outlived an exited instance's init could not be killed.
    KillingRemainsFailed { instance: u32, error: String },
    /// A due restart could not start the instance; it is failed.
    RestartFailed { instance: u32, error: String },
    /// Usage sampling saw the OOM killer end a process of the instance.
    OomKill { instance: u32 },
    /// The host's check socket for the instance dropped datagrams.
    CheckSocketOverflowed { instance: u32, dropped: u32 },
    /// The unprivileged process that decodes the checks' answers failed
    /// (`supervisor/decoder.rs`): the windows it left undecoded are not
    /// judged, and it is started again.
    DecoderFailed { error: String },
    /// Checks unanswered while others keep the server reading and running:
    /// not held against it.
    Contended {
        instance: u32,
        check: String,
        datagrams: u64,
        window_s: f64,
        cpu_ms: u64,
    },
    /// Killed for not becoming ready within its start limit.
    NeverReady {
        instance: u32,
        check: String,
        why: NotReady,
        limit_s: f64,
        last_output: String,
    },
    /// Unanswered checks in a row: marked unresponsive.
    Unresponsive {
        instance: u32,
        check: String,
        unanswered: u32,
    },
    /// Unanswered checks in a row: killed, to be restarted.
    LivenessKill {
        instance: u32,
        unanswered: u32,
        interval_s: f64,
    },
    /// A map change sent to the instance's console.
    MapChangeSent {
        instance: u32,
        map: String,
        command: String,
    },
    /// How a map change's answer ended (`excerpt`: the end of its
    /// text, escaped).
    MapChangeAnswer {
        instance: u32,
        map: String,
        answer: tickpack_game::console::Answer,
        datagrams: u32,
        bytes: u64,
        last_ms: Option<f64>,
        wait_s: u64,
        excerpt: String,
    },
    /// The server restarted before its map change was answered.
    MapChangeCutByRestart { instance: u32, map: String },
    /// Batch work began.
    BatchStarted {
        commands: usize,
        adopted: bool,
        cpus: Vec<usize>,
        how: String,
    },
    /// A batch command ended; what the restart policy does next.
    BatchExited {
        batch: usize,
        command: String,
        cause: ExitCause,
        after: AfterExit,
    },
    /// A due batch restart failed; the command is failed.
    BatchRestartFailed { batch: usize, error: String },
    /// A guard decision that changed the batch's allowance (or a zero).
    Guard {
        action: Action,
        quota_cores: f64,
        cpus: Vec<usize>,
        reason: String,
        apply_error: Option<String>,
    },
    /// The guard moved an instance to another core (or failed to).
    GuardMove {
        instance: u32,
        from: usize,
        to: usize,
        error: Option<String>,
    },
}

impl EventKind {
    /// The instance it is about, if one.
    pub fn instance(&self) -> Option<u32> {
        match self {
            Self::Exited { instance, .. }
            | Self::KillingRemainsFailed { instance, .. }
            | Self::RestartFailed { instance, .. }
            | Self::OomKill { instance }
            | Self::CheckSocketOverflowed { instance, .. }
            | Self::Contended { instance, .. }
            | Self::NeverReady { instance, .. }
            | Self::Unresponsive { instance, .. }
            | Self::LivenessKill { instance, .. }
            | Self::MapChangeSent { instance, .. }
            | Self::MapChangeAnswer { instance, .. }
            | Self::MapChangeCutByRestart { instance, .. }
            | Self::GuardMove { instance, .. } => Some(*instance),
            _ => None,
        }
    }

    /// Emits it as a `tracing` event: kind and instance as fields, every
    /// field of the record as `record` (its `status.json` form, where the
    /// kind's name comes from), the sentence as the message.
    pub fn trace(&self) {
        let record = serde_json::to_value(self).unwrap_or_default();
        tracing::info!(
            target: "tickpack::host",
            kind = record["kind"].as_str().unwrap_or_default(),
            instance = self.instance(),
            record = %record,
            "{self}"
        );
    }
}

impl fmt::Display for EventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::LeftoversRemoved { items } => write!(
                f,
                "removed leftovers of an earlier run: {}",
                items.join(", ")
            ),
            Self::UidBlock { note } => f.write_str(note),
            Self::Placement { warning } => f.write_str(warning),
            Self::Exited {
                instance,
                cause,
                after,
            } => write!(f, "instance {instance} {cause}; {after}"),
            Self::KillingRemainsFailed { instance, error } => {
                write!(f, "instance {instance}: killing what was left of it: {error}")
            }
            Self::RestartFailed { instance, error } => {
                write!(f, "instance {instance} could not be restarted: {error}")
            }
            Self::OomKill { instance } => write!(
                f,
                "instance {instance}: the OOM killer killed a process (memory limit reached)"
            ),
            Self::CheckSocketOverflowed { instance, dropped } => write!(
                f,
                "instance {instance}: the host's check socket for it overflowed ({dropped} datagrams dropped; it sends more than it is asked for); its checks are not judged while that lasts"
            ),
            Self::DecoderFailed { error } => write!(
                f,
                "the health checks' decoder failed ({error}); the checks it left undecoded are not judged, and it is started again"
            ),
            Self::Contended {
                instance,
                check,
                datagrams,
                window_s,
                cpu_ms,
            } => write!(
                f,
                "instance {instance}: {check} unanswered while others send to it; its server reads their datagrams ({datagrams} in {window_s:.0} s) and runs ({cpu_ms} ms of CPU), so this is not held against it while it lasts"
            ),
            Self::NeverReady {
                instance,
                check,
                why,
                limit_s,
                last_output,
            } => {
                write!(f, "instance {instance} ")?;
                match why {
                    NotReady::Printed { line } => write!(f, "never printed {line:?}")?,
                    NotReady::Bound { transport, port } => {
                        write!(f, "never bound its {transport} port {port}")?
                    }
                    NotReady::Answered => write!(f, "never answered {check}")?,
                }
                write!(
                    f,
                    " within {limit_s:.0} s of starting: killed, will restart; its last output: {last_output}"
                )
            }
            Self::Unresponsive {
                instance,
                check,
                unanswered,
            } => write!(
                f,
                "instance {instance} stopped answering {check} ({unanswered} unanswered in a row)"
            ),
            Self::LivenessKill {
                instance,
                unanswered,
                interval_s,
            } => write!(
                f,
                "instance {instance} left {unanswered} checks in a row unanswered ({interval_s:.0} s apart): killed, will restart"
            ),
            Self::MapChangeSent {
                instance,
                map,
                command,
            } => write!(
                f,
                "instance {instance}: changing the map to {map} (console: {command})"
            ),
            Self::MapChangeAnswer {
                instance,
                map,
                answer,
                datagrams,
                bytes,
                last_ms,
                wait_s,
                excerpt,
            } => {
                use tickpack_game::console::Answer;
                write!(f, "instance {instance}: map change to {map} ")?;
                match answer {
                    Answer::Answered => write!(
                        f,
                        "answered: {datagrams} datagram(s), {bytes} bytes, the last {:.0} ms after the command; it ends: {excerpt}",
                        last_ms.unwrap_or_default()
                    ),
                    Answer::Refused => write!(f, "refused by the server: {excerpt}"),
                    Answer::Unanswered => write!(
                        f,
                        "got no answer within {wait_s} s (its level load may still have happened: see its map in the status)"
                    ),
                }
            }
            Self::MapChangeCutByRestart { instance, map } => write!(
                f,
                "instance {instance}: map change to {map} not answered before the server started again"
            ),
            Self::BatchStarted {
                commands,
                adopted,
                cpus,
                how,
            } => write!(
                f,
                "batch: {commands} command(s){} on CPUs {cpus:?}, {how}",
                if *adopted { " and an adopted cgroup" } else { "" }
            ),
            Self::BatchExited {
                batch,
                command,
                cause,
                after,
            } => write!(f, "batch {batch} ({command}) {cause}; {after}"),
            Self::BatchRestartFailed { batch, error } => {
                write!(f, "batch {batch} could not be restarted: {error}")
            }
            Self::Guard {
                action,
                quota_cores,
                cpus,
                reason,
                apply_error,
            } => {
                let action = format!("{action:?}").to_lowercase();
                write!(
                    f,
                    "guard: {action} to {quota_cores:.2} cores on CPUs {cpus:?}: {reason}"
                )?;
                match apply_error {
                    Some(e) => write!(f, " (applying it failed: {e})"),
                    None => Ok(()),
                }
            }
            Self::GuardMove {
                instance,
                from,
                to,
                error: None,
            } => write!(
                f,
                "guard: moved instance {instance} from CPU {from} to CPU {to}: its core lost QoS and CPU {to} had the most slack"
            ),
            Self::GuardMove {
                instance,
                to,
                error: Some(e),
                ..
            } => write!(f, "guard: moving instance {instance} to CPU {to} failed: {e}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_keeps_its_fields_through_status_json() {
        let e = Event {
            at_s: 12.5,
            kind: EventKind::Exited {
                instance: 2,
                cause: ExitCause::OomKilled {
                    memory_limit_mib: Some(64),
                },
                after: AfterExit::Restart { in_ms: 1000 },
            },
        };
        let v = serde_json::to_value(&e).unwrap();
        assert_eq!(v["kind"], "exited");
        assert_eq!(v["instance"], 2);
        assert_eq!(v["cause"]["how"], "oom_killed");
        assert_eq!(v["cause"]["memory_limit_mib"], 64);
        assert_eq!(v["after"]["then"], "restart");
        assert_eq!(v["after"]["in_ms"], 1000);
        let back: Event = serde_json::from_value(v).unwrap();
        assert_eq!(back, e);
        assert_eq!(
            e.to_string(),
            "[   12.50s] instance 2 killed by the OOM killer (memory limit 64 MiB); restarting in 1000 ms"
        );
    }

    #[test]
    fn an_exit_status_becomes_its_cause() {
        use std::os::unix::process::ExitStatusExt;
        let st = std::process::ExitStatus::from_raw;
        assert_eq!(ExitCause::of(st(3 << 8)), ExitCause::Code { code: 3 });
        assert_eq!(ExitCause::of(st(9)), ExitCause::Signal { signal: 9 });
        // An init that reports its child's signal as 128 + N.
        assert_eq!(
            ExitCause::of(st((128 + 15) << 8)),
            ExitCause::Signal { signal: 15 }
        );
        assert_eq!(
            ExitCause::Signal { signal: 9 }.to_string(),
            "was killed by signal 9"
        );
    }
}
