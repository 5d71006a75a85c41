//! [`Reporter`]: what a game server should tell Agones, sans-I/O.
//!
//! Observations of the game go in (is it serving, has its loop advanced,
//! who plays, its recent tick p99, is it ending), with the time; the SDK
//! calls to make come out as [`Action`]s. The rules, each tested below on a
//! virtual clock:
//!
//! - **Ready** once, the first time the game serves.
//! - **Health** at most once per [`Settings::health_every_us`], and only when
//!   the game's loop advanced since the last ping: a stalled tick loop (or a
//!   game that stopped answering its queries) stops the pings, so Agones
//!   marks the GameServer Unhealthy and replaces it.
//! - **Players**: the difference between who plays and who was reported
//!   becomes list removals and additions (the `players` list of Counts and
//!   Lists) and, where the feature gate is on, player tracking's connects
//!   and disconnects; the `players` counter is set when the count changes.
//!   Each only where the GameServer has it ([`PlayerSinks`]).
//!   Duplicate names (two `UnnamedPlayer`s) become `name#2`, ... so the
//!   list holds one value per player.
//! - **Labels** (the tick p99, the number of players) only when the value
//!   changed, and each at most once per [`Settings::label_every_us`]: each
//!   label is a write to the Kubernetes API server in a cluster.
//! - **Shutdown** once, when the game ends; nothing after it.

use std::collections::BTreeMap;

/// The label of the recent tick p99, microseconds (the SDK server prefixes
/// it: `agones.dev/sdk-tick-p99-us`). A decimal number is a valid label
/// value (`[A-Za-z0-9]`, at most 63 characters).
pub const LABEL_TICK_P99_US: &str = "tick-p99-us";

/// The label of the number of players (`agones.dev/sdk-players`), for
/// `kubectl get gs -L agones.dev/sdk-players` and label selectors.
pub const LABEL_PLAYERS: &str = "players";

/// The name of the Counts and Lists list and counter of players (the
/// GameServer spec must declare them, as docs/agones.md shows).
pub const PLAYERS: &str = "players";

/// What the game looks like now.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Observation {
    /// The game listens (the reference server bound its socket; the
    /// sidecar's game answered a query once).
    pub serving: bool,
    /// A number that grows while the game's loop runs (ticks, or answers
    /// to the sidecar's queries).
    pub progress: u64,
    /// Who plays (names, in any order; duplicates allowed).
    pub players: Vec<String>,
    /// The tick p99 over the last second or two, microseconds, if known.
    pub tick_p99_us: Option<u32>,
    /// The match ended or the process was told to stop.
    pub ending: bool,
}

/// One SDK call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    Ready,
    Health,
    /// Add this value to the `players` list.
    AddPlayer(String),
    /// Remove this value from the `players` list.
    RemovePlayer(String),
    /// Player tracking (alpha): this player connected.
    PlayerConnect(String),
    /// Player tracking (alpha): this player left.
    PlayerDisconnect(String),
    /// Set the `players` counter.
    SetPlayerCount(u64),
    SetLabel {
        key: &'static str,
        value: String,
    },
    Shutdown,
}

/// Where the players go: what the GameServer has (see
/// `GameServer::player_sinks`). A call to a list, counter or feature the
/// GameServer lacks would fail at every change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlayerSinks {
    /// The `players` list of Counts and Lists.
    pub list: bool,
    /// The `players` counter of Counts and Lists.
    pub counter: bool,
    /// Player tracking (the `PlayerTracking` feature gate is on).
    pub tracking: bool,
}

impl Default for PlayerSinks {
    fn default() -> Self {
        PlayerSinks {
            list: true,
            counter: true,
            tracking: false,
        }
    }
}

/// How often to say things, microseconds, and where the players go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// Least time between two health pings. Agones' default health period
    /// is 5 s with a failure threshold of 3: one ping a second leaves room.
    pub health_every_us: u64,
    /// Least time between two label writes.
    pub label_every_us: u64,
    pub sinks: PlayerSinks,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            health_every_us: 1_000_000,
            label_every_us: 10_000_000,
            sinks: PlayerSinks::default(),
        }
    }
}

/// The reporter's memory of what it told Agones.
#[derive(Debug, Clone, Default)]
pub struct Reporter {
    settings: Settings,
    ready_sent: bool,
    shutdown_sent: bool,
    /// Progress at the last health ping, and when it was sent.
    last_health: Option<(u64, u64)>,
    /// List values reported.
    listed: Vec<String>,
    count: Option<u64>,
    /// Per label: the value written and when.
    labels: BTreeMap<&'static str, (String, u64)>,
}

impl Reporter {
    pub fn new(settings: Settings) -> Reporter {
        Reporter {
            settings,
            ..Reporter::default()
        }
    }

    /// Whether Shutdown was asked for (nothing more will come).
    pub fn is_shut_down(&self) -> bool {
        self.shutdown_sent
    }

    /// What to tell Agones after observing `o` at `now_us`. The caller
    /// performs the actions in order; a failed call is not retried by the
    /// reporter (the next ping or change is).
    pub fn observe(&mut self, now_us: u64, o: &Observation) -> Vec<Action> {
        let mut out = Vec::new();
        if self.shutdown_sent {
            return out;
        }
        if o.ending {
            self.shutdown_sent = true;
            out.push(Action::Shutdown);
            return out;
        }
        if !o.serving {
            return out;
        }
        if !self.ready_sent {
            self.ready_sent = true;
            out.push(Action::Ready);
        }
        let due = self.last_health.is_none_or(|(progress, at)| {
            o.progress != progress && now_us >= at.saturating_add(self.settings.health_every_us)
        });
        if due {
            self.last_health = Some((o.progress, now_us));
            out.push(Action::Health);
        }
        self.players(o, &mut out);
        self.labels(now_us, o, &mut out);
        out
    }

    fn players(&mut self, o: &Observation, out: &mut Vec<Action>) {
        let sinks = self.settings.sinks;
        let now = unique_values(&o.players);
        for gone in self.listed.iter().filter(|v| !now.contains(v)) {
            if sinks.list {
                out.push(Action::RemovePlayer(gone.clone()));
            }
            if sinks.tracking {
                out.push(Action::PlayerDisconnect(gone.clone()));
            }
        }
        for new in now.iter().filter(|v| !self.listed.contains(v)) {
            if sinks.list {
                out.push(Action::AddPlayer(new.clone()));
            }
            if sinks.tracking {
                out.push(Action::PlayerConnect(new.clone()));
            }
        }
        self.listed = now;
        let count = o.players.len() as u64;
        if sinks.counter && self.count != Some(count) {
            self.count = Some(count);
            out.push(Action::SetPlayerCount(count));
        }
    }

    fn labels(&mut self, now_us: u64, o: &Observation, out: &mut Vec<Action>) {
        let wanted = [
            (LABEL_TICK_P99_US, o.tick_p99_us.map(|v| v.to_string())),
            (LABEL_PLAYERS, Some(o.players.len().to_string())),
        ];
        for (key, value) in wanted {
            let Some(value) = value else { continue };
            match self.labels.get(key) {
                Some((v, _)) if *v == value => continue,
                Some((_, at)) if now_us < at.saturating_add(self.settings.label_every_us) => {
                    continue
                }
                _ => {}
            }
            self.labels.insert(key, (value.clone(), now_us));
            out.push(Action::SetLabel { key, value });
        }
    }
}

/// One list value per player: the second `a` becomes `a#2`, the third
/// `a#3`; an empty name becomes `player`.
pub fn unique_values(names: &[String]) -> Vec<String> {
    let mut seen: BTreeMap<&str, u32> = BTreeMap::new();
    names
        .iter()
        .map(|n| {
            let base = if n.is_empty() { "player" } else { n.as_str() };
            let k = seen.entry(base).or_insert(0);
            *k += 1;
            if *k == 1 {
                base.to_string()
            } else {
                format!("{base}#{k}")
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000;

    fn serving(progress: u64, players: &[&str]) -> Observation {
        Observation {
            serving: true,
            progress,
            players: players.iter().map(|p| p.to_string()).collect(),
            tick_p99_us: None,
            ending: false,
        }
    }

    fn health_count(a: &[Action]) -> usize {
        a.iter().filter(|a| **a == Action::Health).count()
    }

    #[test]
    fn nothing_is_said_before_the_game_serves_then_ready_once() {
        let mut r = Reporter::new(Settings::default());
        assert!(r.observe(0, &Observation::default()).is_empty());
        let first = r.observe(S, &serving(1, &[]));
        assert_eq!(
            first,
            vec![
                Action::Ready,
                Action::Health,
                Action::SetPlayerCount(0),
                Action::SetLabel {
                    key: LABEL_PLAYERS,
                    value: "0".into()
                }
            ]
        );
        let later = r.observe(3 * S, &serving(2, &[]));
        assert_eq!(later, vec![Action::Health]);
    }

    #[test]
    fn health_pings_stop_while_the_loop_is_stalled_and_resume_when_it_runs() {
        let mut r = Reporter::new(Settings::default());
        let mut pings = vec![];
        // Ticks for 5 s, stalls for 10 s, ticks again for 5 s; observed
        // every 100 ms.
        let mut progress = 0;
        for step in 0..200u64 {
            let t = step * S / 10;
            if !(50..150).contains(&step) {
                progress += 10;
            }
            let a = r.observe(t, &serving(progress, &[]));
            pings.extend(std::iter::repeat_n(t, health_count(&a)));
        }
        let during_stall = pings.iter().filter(|t| (5 * S + 1..15 * S).contains(t));
        assert_eq!(during_stall.count(), 0, "pings: {pings:?}");
        let before = pings.iter().filter(|t| **t < 5 * S).count();
        let after = pings.iter().filter(|t| **t >= 15 * S).count();
        // At most one a second, and one each second the loop ran.
        assert_eq!(before, 5, "pings: {pings:?}");
        assert_eq!(after, 5, "pings: {pings:?}");
    }

    #[test]
    fn players_joining_and_leaving_become_list_and_counter_updates() {
        let mut r = Reporter::new(Settings::default());
        r.observe(0, &serving(1, &[]));
        let a = r.observe(S, &serving(1, &["alice", "bob"]));
        assert_eq!(
            a,
            vec![
                Action::AddPlayer("alice".into()),
                Action::AddPlayer("bob".into()),
                Action::SetPlayerCount(2)
            ]
        );
        assert!(r.observe(S, &serving(1, &["bob", "alice"])).is_empty());
        let a = r.observe(S, &serving(1, &["bob", "carol"]));
        assert_eq!(
            a,
            vec![
                Action::RemovePlayer("alice".into()),
                Action::AddPlayer("carol".into())
            ]
        );
        let a = r.observe(S, &serving(1, &[]));
        assert_eq!(
            a,
            vec![
                Action::RemovePlayer("bob".into()),
                Action::RemovePlayer("carol".into()),
                Action::SetPlayerCount(0)
            ]
        );
    }

    #[test]
    fn players_go_only_where_the_game_server_has_room_for_them() {
        let settings = |list, counter, tracking| Settings {
            sinks: PlayerSinks {
                list,
                counter,
                tracking,
            },
            ..Settings::default()
        };
        let mut r = Reporter::new(settings(false, false, true));
        r.observe(0, &serving(1, &[]));
        assert_eq!(
            r.observe(0, &serving(1, &["a"])),
            vec![Action::PlayerConnect("a".into())]
        );
        assert_eq!(
            r.observe(0, &serving(1, &[])),
            vec![Action::PlayerDisconnect("a".into())]
        );
        let mut r = Reporter::new(settings(false, true, false));
        r.observe(0, &serving(1, &[]));
        assert_eq!(
            r.observe(0, &serving(1, &["a"])),
            vec![Action::SetPlayerCount(1)]
        );
        let mut r = Reporter::new(settings(false, false, false));
        assert_eq!(
            r.observe(0, &serving(1, &["a"])),
            vec![
                Action::Ready,
                Action::Health,
                Action::SetLabel {
                    key: LABEL_PLAYERS,
                    value: "1".into()
                }
            ]
        );
    }

    #[test]
    fn two_players_with_one_name_are_two_list_values() {
        let names = ["x", "x", "", "x"].map(String::from);
        assert_eq!(unique_values(&names), ["x", "x#2", "player", "x#3"]);
        let mut r = Reporter::new(Settings::default());
        r.observe(0, &serving(1, &[]));
        let a = r.observe(0, &serving(1, &["UnnamedPlayer", "UnnamedPlayer"]));
        assert_eq!(
            a,
            vec![
                Action::AddPlayer("UnnamedPlayer".into()),
                Action::AddPlayer("UnnamedPlayer#2".into()),
                Action::SetPlayerCount(2)
            ]
        );
    }

    #[test]
    fn the_tick_p99_label_is_written_on_change_and_at_most_once_per_period() {
        let mut r = Reporter::new(Settings::default());
        let with = |p99| Observation {
            tick_p99_us: Some(p99),
            ..serving(1, &[])
        };
        let labels = |a: Vec<Action>| -> Vec<String> {
            a.into_iter()
                .filter_map(|a| match a {
                    Action::SetLabel { key, value } if key == LABEL_TICK_P99_US => Some(value),
                    _ => None,
                })
                .collect()
        };
        assert_eq!(labels(r.observe(0, &with(120))), ["120"]);
        // Changed, but too soon: held back until the period passed.
        assert!(labels(r.observe(S, &with(130))).is_empty());
        assert!(labels(r.observe(9 * S, &with(140))).is_empty());
        assert_eq!(labels(r.observe(10 * S, &with(140))), ["140"]);
        // Unchanged: never rewritten.
        assert!(labels(r.observe(30 * S, &with(140))).is_empty());
    }

    #[test]
    fn the_players_label_follows_the_count_each_label_on_its_own_period() {
        let mut r = Reporter::new(Settings::default());
        let players_label = |a: &[Action]| -> Option<String> {
            a.iter().find_map(|a| match a {
                Action::SetLabel { key, value } if *key == LABEL_PLAYERS => Some(value.clone()),
                _ => None,
            })
        };
        let with = |players: &[&str], p99| Observation {
            tick_p99_us: Some(p99),
            ..serving(1, players)
        };
        assert_eq!(
            players_label(&r.observe(0, &with(&[], 100))),
            Some("0".into())
        );
        assert_eq!(players_label(&r.observe(S, &with(&["a"], 100))), None);
        // The p99 label's own period: a new p99 at 10 s is written with
        // the players label, neither held back by the other.
        let a = r.observe(10 * S, &with(&["a", "b"], 200));
        assert_eq!(players_label(&a), Some("2".into()));
        assert!(a.contains(&Action::SetLabel {
            key: LABEL_TICK_P99_US,
            value: "200".into()
        }));
        assert_eq!(
            players_label(&r.observe(30 * S, &with(&["a", "b"], 200))),
            None
        );
    }

    #[test]
    fn shutdown_is_said_once_and_nothing_after() {
        let mut r = Reporter::new(Settings::default());
        r.observe(0, &serving(1, &["a"]));
        let end = Observation {
            ending: true,
            ..serving(2, &["a"])
        };
        assert_eq!(r.observe(2 * S, &end), vec![Action::Shutdown]);
        assert!(r.is_shut_down());
        assert!(r.observe(4 * S, &end).is_empty());
        assert!(r.observe(6 * S, &serving(3, &["b"])).is_empty());
    }

    #[test]
    fn a_game_that_ends_before_serving_still_says_shutdown() {
        let mut r = Reporter::new(Settings::default());
        let end = Observation {
            ending: true,
            ..Observation::default()
        };
        assert_eq!(r.observe(0, &end), vec![Action::Shutdown]);
    }
}
