//! The reference game server as a state machine: connections, commands,
//! ticks and snapshots. No sockets, no clock, no threads.
//!
//! Order of calls, once per loop iteration of the I/O layer:
//!
//! 1. [`Server::handle`] for every datagram received (`now_us`, source, bytes);
//! 2. when a tick is due: [`Server::tick`] with the time it started and the
//!    time it was due, then [`Server::record_frame`] with the tick's measured
//!    processing time (reported in the *next* snapshots);
//! 3. [`Server::drain_transmits`] to send what the server queued.
//!
//! A command is applied at the next tick after it arrives; the snapshot built
//! by that tick carries its sequence number in `last_cmd_seq`, which is what
//! lets players measure in-game transaction latency.
//!
//! Until a source has completed the handshake (proving it receives at its
//! address), every reply to it passes through one check that drops the reply
//! if it is larger than the request that caused it.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;

use hdrhistogram::Histogram;
use tickpack_wire::{
    a2s, delta, CheckCounters, CheckGate, CheckVerdict, Command, Datagram, DisconnectReason,
    EntityState, Packet, RefuseReason, ServerStats, Snapshot, TokenKey, PROTOCOL_VERSION,
};

pub use crate::config::{Counters, ServerConfig, HEALTH_CHECK_RATE};
use crate::flood::{Ask, FloodGuard, TokenBucket};
use crate::recent::RecentWindow;
use crate::world::{World, WorldConfig};

/// Snapshots kept per player as delta baselines.
const HISTORY: usize = tickpack_wire::DELTA_HISTORY;
/// Entity ids of bots start here; humans take 1..=255.
const BOT_ID_BASE: u16 = 1000;

struct Client {
    addr: SocketAddr,
    entity: u16,
    name: String,
    connected_at_us: u64,
    last_heard_us: u64,
    /// Highest command sequence received.
    received_seq: Option<u32>,
    /// Highest command sequence applied by a tick.
    applied_seq: Option<u32>,
    acked_tick: Option<u32>,
    /// Ring of (tick, entities) sent to this player.
    history: VecDeque<(u32, Vec<EntityState>)>,
}

/// The server state machine.
pub struct Server {
    cfg: ServerConfig,
    key: TokenKey,
    world: World,
    clients: Vec<Option<Client>>,
    by_addr: HashMap<SocketAddr, usize>,
    tick: u32,
    started_us: Option<u64>,
    /// Due time of the first tick: tick numbers count schedule slots from it.
    first_due_us: Option<u64>,
    shutting_down: bool,
    last_frame_us: u32,
    last_lateness_us: u32,
    frame_hist: Histogram<u64>,
    lateness_hist: Histogram<u64>,
    /// The same over the last second or two (the guard's signals).
    recent: RecentWindow,
    counters: Counters,
    out: Vec<u8>,
    transmits: Vec<(SocketAddr, usize, usize)>,
    scratch: Vec<EntityState>,
    records: Vec<u8>,
    /// CPU time reported by the I/O layer, for stats.
    cpu_time_us: u64,
    /// Datagrams the kernel dropped on the socket, reported by the I/O layer.
    socket_drops: u64,
    flood: FloodGuard,
    /// The budget of the host's health checks.
    health_bucket: TokenBucket,
    /// Admits each of the host's checks once (with a key from the host).
    checks: Option<CheckGate>,
}

impl Server {
    /// A server with `secret` as its token key (make it random per start).
    pub fn new(cfg: ServerConfig, secret: [u8; 32]) -> Self {
        let mut world = World::new(WorldConfig {
            cost: cfg.cost,
            max_entities: usize::from(cfg.max_players) + usize::from(cfg.bots),
            seed: cfg.seed,
            ..Default::default()
        });
        for i in 0..u16::from(cfg.bots) {
            world.add_player(BOT_ID_BASE + i, true);
        }
        let hist = || Histogram::new_with_bounds(1, 60_000_000, 3).expect("valid bounds");
        // The slot hash key: secret and per start, like the token key.
        let flood_key = u64::from_le_bytes(secret[24..].try_into().expect("8 bytes"));
        Self {
            flood: FloodGuard::new(cfg.flood.clone(), flood_key),
            checks: cfg.health_key.clone().map(CheckGate::new),
            clients: (0..cfg.max_players).map(|_| None).collect(),
            cfg,
            key: TokenKey::new(secret),
            world,
            by_addr: HashMap::new(),
            tick: 0,
            started_us: None,
            first_due_us: None,
            shutting_down: false,
            last_frame_us: 0,
            last_lateness_us: 0,
            frame_hist: hist(),
            lateness_hist: hist(),
            recent: RecentWindow::new(),
            counters: Counters::default(),
            out: Vec::with_capacity(64 * 1024),
            transmits: Vec::new(),
            scratch: Vec::new(),
            records: Vec::new(),
            cpu_time_us: 0,
            socket_drops: 0,
            health_bucket: TokenBucket::full(HEALTH_CHECK_RATE, 0),
        }
    }

    pub fn config(&self) -> &ServerConfig {
        &self.cfg
    }

    pub fn counters(&self) -> Counters {
        Counters {
            flood: self.flood.counters(),
            ..self.counters
        }
    }

    /// Connected human players.
    pub fn players(&self) -> usize {
        self.by_addr.len()
    }

    /// Whether `addr` is a connected human player's address.
    pub fn is_player(&self, addr: SocketAddr) -> bool {
        self.by_addr.contains_key(&addr)
    }

    /// The addresses of the connected human players (in no order).
    pub fn player_addrs(&self) -> impl Iterator<Item = SocketAddr> + '_ {
        self.by_addr.keys().copied()
    }

    /// The names of the connected human players, in slot order (a player
    /// that sent no name is `player-N`).
    pub fn player_names(&self) -> impl Iterator<Item = &str> {
        self.clients.iter().flatten().map(|c| c.name.as_str())
    }

    /// Tick lateness and frame time over the last second or two.
    pub fn recent_stats(&self, now_us: u64) -> tickpack_wire::RecentStats {
        self.recent.stats(now_us)
    }

    pub fn current_tick(&self) -> u32 {
        self.tick
    }

    /// Schedule slots that passed without a tick (the caller fell a whole
    /// tick or more behind: a stall): every player lost a snapshot there.
    pub fn skipped_slots(&self) -> u64 {
        u64::from(self.tick).saturating_sub(self.counters.ticks)
    }

    pub fn world(&self) -> &World {
        &self.world
    }

    /// Frame time histogram (microseconds) since start.
    pub fn frame_histogram(&self) -> &Histogram<u64> {
        &self.frame_hist
    }

    /// Tick lateness histogram (microseconds) since start.
    pub fn lateness_histogram(&self) -> &Histogram<u64> {
        &self.lateness_hist
    }

    /// Lets the I/O layer report process CPU time for stats.
    pub fn set_cpu_time_us(&mut self, us: u64) {
        self.cpu_time_us = us;
    }

    /// Lets the I/O layer report the socket's kernel drop count for stats.
    pub fn set_socket_drops(&mut self, drops: u64) {
        self.socket_drops = drops;
    }

    fn queue(&mut self, dest: SocketAddr, p: &Packet<'_>) {
        let start = self.out.len();
        p.encode(&mut self.out);
        self.transmits.push((dest, start, self.out.len()));
    }

    /// Queues a reply to a source that has not proven its address, unless it
    /// is larger than the request: the anti-amplification rule, in one place.
    fn reply_unproven(&mut self, dest: SocketAddr, request_len: usize, p: &Packet<'_>) {
        let start = self.out.len();
        p.encode(&mut self.out);
        self.finish_unproven(dest, request_len, start);
    }

    fn finish_unproven(&mut self, dest: SocketAddr, request_len: usize, start: usize) {
        if self.out.len() - start > request_len {
            self.out.truncate(start);
            self.counters.amplification_drops += 1;
        } else {
            self.transmits.push((dest, start, self.out.len()));
        }
    }

    /// Hands every queued datagram to `send` and clears the queue.
    pub fn drain_transmits(&mut self, mut send: impl FnMut(SocketAddr, &[u8])) {
        for &(dest, a, b) in &self.transmits {
            self.counters.packets_out += 1;
            self.counters.bytes_out += (b - a) as u64;
            send(dest, &self.out[a..b]);
        }
        self.transmits.clear();
        self.out.clear();
    }

    /// Number of datagrams waiting in [`Self::drain_transmits`].
    pub fn pending_transmits(&self) -> usize {
        self.transmits.len()
    }

    /// Processes one received datagram. Never panics on what a peer sends:
    /// a malformed datagram is counted and dropped.
    pub fn handle(&mut self, now_us: u64, from: SocketAddr, data: &[u8]) {
        self.started_us.get_or_insert(now_us);
        self.counters.packets_in += 1;
        self.counters.bytes_in += data.len() as u64;
        let Ok(dgram) = Datagram::decode(data) else {
            self.counters.malformed += 1;
            return;
        };
        let slot = self.by_addr.get(&from).copied();
        let check = match (&mut self.checks, &dgram) {
            (Some(gate), Datagram::Game(Packet::StatsRequest { nonce, proof })) => {
                gate.judge(*nonce, proof.as_ref())
            }
            _ => CheckVerdict::Unproven,
        };
        if check == CheckVerdict::Stale {
            // A copy of a check already admitted, or an older one: it
            // takes nothing from the checks' budget, and gets nothing.
            self.counters.health_stale += 1;
            return;
        }
        if check == CheckVerdict::Fresh {
            // The host's own check: its budget, never the strangers'.
            if !self.health_bucket.take(HEALTH_CHECK_RATE, now_us) {
                self.counters.health_limited += 1;
                return;
            }
            self.counters.health_checks += 1;
        } else if let (None, Some(ask)) = (slot, unproven_ask(&dgram)) {
            // Flood limits, before any work: only for sources not connected.
            if !self.flood.admit(now_us, from, ask) {
                return;
            }
        }
        match dgram {
            Datagram::Query(q) => self.handle_query(now_us, from, data.len(), q),
            Datagram::Game(Packet::Hello { version, nonce }) => {
                let p = if version != PROTOCOL_VERSION {
                    Packet::Refused {
                        reason: RefuseReason::Version,
                    }
                } else {
                    Packet::Challenge {
                        nonce,
                        token: self.key.issue(from, now_us),
                    }
                };
                self.reply_unproven(from, data.len(), &p);
            }
            Datagram::Game(Packet::Connect {
                version,
                token,
                name,
                ..
            }) => self.handle_connect(now_us, from, data.len(), version, &token, name),
            Datagram::Game(Packet::Command(c)) => match slot {
                Some(s) => self.handle_command(now_us, s, &c),
                None => self.counters.malformed += 1,
            },
            Datagram::Game(Packet::Ping {
                nonce,
                client_time_us,
                len,
            }) => {
                if let Some(s) = slot {
                    self.touch(s, now_us);
                }
                self.reply_unproven(
                    from,
                    data.len(),
                    &Packet::Pong {
                        nonce,
                        client_time_us,
                        len,
                    },
                );
            }
            Datagram::Game(Packet::StatsRequest { nonce, .. }) => {
                let mut s = self.stats(now_us);
                s.nonce = nonce;
                self.reply_unproven(from, data.len(), &Packet::Stats(s));
            }
            Datagram::Game(Packet::Disconnect { .. }) => match slot {
                Some(s) => self.drop_client(s),
                None => self.counters.malformed += 1,
            },
            // Server-to-client packets have no business arriving here.
            Datagram::Game(_) => self.counters.malformed += 1,
        }
    }

    fn touch(&mut self, slot: usize, now_us: u64) {
        if let Some(c) = self.clients[slot].as_mut() {
            c.last_heard_us = now_us;
        }
    }

    fn handle_query(&mut self, now_us: u64, from: SocketAddr, len: usize, q: a2s::Query) {
        let valid = q
            .challenge()
            .is_some_and(|c| self.key.verify_a2s(from, c, now_us));
        let start = self.out.len();
        if !valid {
            a2s::encode_challenge(self.key.a2s_challenge(from, now_us), &mut self.out);
            self.finish_unproven(from, len, start);
            return;
        }
        // A valid challenge proves the source receives at its address.
        let up_s = |since: u64| (now_us.saturating_sub(since)) as f32 / 1e6;
        match q {
            a2s::Query::Info { .. } => {
                let version = env!("CARGO_PKG_VERSION");
                a2s::encode_info(
                    &a2s::ServerInfo {
                        name: &self.cfg.name,
                        map: &self.cfg.map,
                        folder: "tickpack",
                        game: "tickpack reference game",
                        app_id: 0,
                        players: (self.players() + usize::from(self.cfg.bots)).min(255) as u8,
                        max_players: self.cfg.max_players.saturating_add(self.cfg.bots),
                        bots: self.cfg.bots,
                        version,
                        port: self.cfg.port,
                        keywords: "tickpack",
                    },
                    &mut self.out,
                );
            }
            a2s::Query::Players { .. } => {
                let started = self.started_us.unwrap_or(now_us);
                let bot_names: Vec<String> =
                    (0..self.cfg.bots).map(|i| format!("bot-{i}")).collect();
                let mut rows: Vec<a2s::PlayerInfo<'_>> = self
                    .clients
                    .iter()
                    .flatten()
                    .map(|c| a2s::PlayerInfo {
                        name: &c.name,
                        score: self.world.stats(c.entity).map_or(0, |s| s.kills as i32),
                        duration_s: up_s(c.connected_at_us),
                    })
                    .collect();
                rows.extend(bot_names.iter().enumerate().map(|(i, n)| {
                    a2s::PlayerInfo {
                        name: n,
                        score: self
                            .world
                            .stats(BOT_ID_BASE + i as u16)
                            .map_or(0, |s| s.kills as i32),
                        duration_s: up_s(started),
                    }
                }));
                let mut out = std::mem::take(&mut self.out);
                a2s::encode_players(&rows, &mut out);
                self.out = out;
            }
            a2s::Query::Rules { .. } => {
                let hz = self.cfg.tick_hz.to_string();
                let snap = self.cfg.snapshot_len.to_string();
                let mut out = std::mem::take(&mut self.out);
                a2s::encode_rules(
                    &[
                        ("tp_tick_hz", &hz),
                        ("tp_snapshot_bytes", &snap),
                        ("tp_protocol", "1"),
                    ],
                    &mut out,
                );
                self.out = out;
            }
        }
        self.transmits.push((from, start, self.out.len()));
    }

    fn handle_connect(
        &mut self,
        now_us: u64,
        from: SocketAddr,
        len: usize,
        version: u16,
        token: &tickpack_wire::Token,
        name: &str,
    ) {
        let refuse = |reason| Packet::Refused { reason };
        if version != PROTOCOL_VERSION {
            return self.reply_unproven(from, len, &refuse(RefuseReason::Version));
        }
        if !self.key.verify(from, token, now_us) {
            self.counters.malformed += 1;
            return self.reply_unproven(from, len, &refuse(RefuseReason::BadToken));
        }
        if self.shutting_down {
            return self.reply_unproven(from, len, &refuse(RefuseReason::ShuttingDown));
        }
        let slot = match self.by_addr.get(&from) {
            // A retransmitted connect: answer again.
            Some(&s) => s,
            None => {
                let Some(s) = self.clients.iter().position(Option::is_none) else {
                    return self.reply_unproven(from, len, &refuse(RefuseReason::Full));
                };
                let entity = s as u16 + 1;
                self.world.add_player(entity, false);
                self.clients[s] = Some(Client {
                    addr: from,
                    entity,
                    name: if name.is_empty() {
                        format!("player-{entity}")
                    } else {
                        name.to_string()
                    },
                    connected_at_us: now_us,
                    last_heard_us: now_us,
                    received_seq: None,
                    applied_seq: None,
                    acked_tick: None,
                    history: VecDeque::with_capacity(HISTORY),
                });
                self.by_addr.insert(from, s);
                self.counters.connects += 1;
                s
            }
        };
        let entity = self.clients[slot].as_ref().map_or(0, |c| c.entity);
        self.queue(
            from,
            &Packet::Accepted {
                client_id: entity,
                tick_hz: self.cfg.tick_hz,
                snapshot_len: self.cfg.snapshot_len,
                server_time_us: now_us,
            },
        );
    }

    fn handle_command(&mut self, now_us: u64, slot: usize, cmd: &Command<'_>) {
        self.counters.commands += 1;
        let Some(c) = self.clients[slot].as_mut() else {
            return;
        };
        c.last_heard_us = now_us;
        if let Some(t) = cmd.ack_tick {
            if t <= self.tick && c.acked_tick.is_none_or(|a| t > a) {
                c.acked_tick = Some(t);
            }
        }
        // Late, duplicated or reordered commands do not roll the input back.
        if c.received_seq.is_some_and(|s| cmd.seq <= s) {
            return;
        }
        c.received_seq = Some(cmd.seq);
        let entity = c.entity;
        self.world.set_input(entity, cmd.input);
    }

    fn drop_client(&mut self, slot: usize) {
        if let Some(c) = self.clients[slot].take() {
            self.by_addr.remove(&c.addr);
            self.world.remove_player(c.entity);
            self.counters.disconnects += 1;
        }
    }

    /// Runs one tick: applies the commands received since the last tick,
    /// advances the world, and queues one snapshot per connected player.
    ///
    /// `now_us` is when the tick actually started; `due_us` when it should
    /// have. Lateness (`now_us - due_us`) is recorded and reported.
    pub fn tick(&mut self, now_us: u64, due_us: u64) {
        self.started_us.get_or_insert(now_us);
        let lateness = now_us.saturating_sub(due_us);
        self.last_lateness_us = lateness.min(u64::from(u32::MAX)) as u32;
        let _ = self.lateness_hist.record(lateness.max(1));
        self.recent.record_tick(now_us, lateness);
        self.tick = self.next_tick_number(due_us);
        self.counters.ticks += 1;

        // Drop players that went silent.
        let timeout = self.cfg.timeout_us;
        let silent: Vec<usize> = self
            .clients
            .iter()
            .enumerate()
            .filter_map(|(i, c)| {
                c.as_ref()
                    .filter(|c| now_us.saturating_sub(c.last_heard_us) > timeout)
                    .map(|_| i)
            })
            .collect();
        for s in silent {
            let addr = self.clients[s].as_ref().map(|c| c.addr);
            self.drop_client(s);
            if let Some(addr) = addr {
                self.queue(
                    addr,
                    &Packet::Disconnect {
                        reason: DisconnectReason::Timeout,
                    },
                );
            }
        }

        for c in self.clients.iter_mut().flatten() {
            c.applied_seq = c.received_seq;
        }
        self.world.step(self.cfg.tick_interval_us());

        for slot in 0..self.clients.len() {
            self.build_snapshot(slot);
        }
    }

    /// Tick numbers count the slots of the tick schedule, not the ticks
    /// run: a slot the I/O layer skipped (it fell more than a tick behind)
    /// leaves a gap in the numbers, so players count its snapshot as lost.
    fn next_tick_number(&mut self, due_us: u64) -> u32 {
        let first = *self.first_due_us.get_or_insert(due_us);
        let interval = self.cfg.tick_hz.interval_ns() as f64 / 1e3;
        let slot = (due_us.saturating_sub(first) as f64 / interval).round() as u32;
        let next = self.tick.wrapping_add(1);
        // Never repeat or go back, whatever due times the caller passes.
        if slot.wrapping_add(1).wrapping_sub(next) as i32 > 0 {
            slot.wrapping_add(1)
        } else {
            next
        }
    }

    fn build_snapshot(&mut self, slot: usize) {
        let Some(c) = self.clients[slot].as_mut() else {
            return;
        };
        self.scratch.clear();
        self.world.visible_to(c.entity, &mut self.scratch);
        self.scratch.sort_unstable_by_key(|e| e.id);
        let baseline = c
            .acked_tick
            .and_then(|t| c.history.iter().find(|(ht, _)| *ht == t));
        self.records.clear();
        let count = delta::encode(
            baseline.map_or(&[][..], |(_, e)| e),
            &self.scratch,
            &mut self.records,
        );
        let baseline_tick = baseline.map(|(t, _)| *t);
        // Remember what this player now has, for later deltas.
        // Reuse the oldest entry's buffer: no allocation per player per tick.
        let mut kept = if c.history.len() == HISTORY {
            c.history.pop_front().map(|(_, v)| v).unwrap_or_default()
        } else {
            Vec::with_capacity(self.scratch.len())
        };
        kept.clear();
        kept.extend_from_slice(&self.scratch);
        c.history.push_back((self.tick, kept));
        let addr = c.addr;
        let snap = Snapshot {
            tick: self.tick,
            last_cmd_seq: c.applied_seq,
            frame_us: self.last_frame_us,
            lateness_us: self.last_lateness_us,
            baseline_tick,
            record_count: count,
            records: &self.records,
            len: usize::from(self.cfg.snapshot_len),
        };
        let start = self.out.len();
        Packet::Snapshot(snap).encode(&mut self.out);
        self.transmits.push((addr, start, self.out.len()));
    }

    /// Records the processing time of the tick that just ran; it goes into
    /// the next snapshots and the stats. `budget_us` is the tick interval.
    pub fn record_frame(&mut self, frame_us: u64) {
        self.last_frame_us = frame_us.min(u64::from(u32::MAX)) as u32;
        let _ = self.frame_hist.record(frame_us.max(1));
        self.recent.record_frame(frame_us);
        if frame_us > self.cfg.tick_interval_us() {
            self.counters.overruns += 1;
        }
    }

    /// Tells every player the server is stopping and refuses new connects.
    pub fn shutdown(&mut self) {
        self.shutting_down = true;
        let addrs: Vec<SocketAddr> = self.clients.iter().flatten().map(|c| c.addr).collect();
        for a in addrs {
            self.queue(
                a,
                &Packet::Disconnect {
                    reason: DisconnectReason::ServerShutdown,
                },
            );
        }
    }

    /// Current stats, as served over the wire and as metrics.
    pub fn stats(&self, now_us: u64) -> ServerStats {
        let q = |h: &Histogram<u64>, p: f64| h.value_at_quantile(p).min(u64::from(u32::MAX)) as u32;
        ServerStats {
            nonce: 0,
            uptime_ms: now_us.saturating_sub(self.started_us.unwrap_or(now_us)) / 1000,
            tick: self.counters.ticks,
            tick_hz: self.cfg.tick_hz,
            players: self.players().min(255) as u8,
            bots: self.cfg.bots,
            max_players: self.cfg.max_players,
            frame_p50_us: q(&self.frame_hist, 0.5),
            frame_p99_us: q(&self.frame_hist, 0.99),
            frame_max_us: self.frame_hist.max().min(u64::from(u32::MAX)) as u32,
            lateness_p50_us: q(&self.lateness_hist, 0.5),
            lateness_p99_us: q(&self.lateness_hist, 0.99),
            lateness_max_us: self.lateness_hist.max().min(u64::from(u32::MAX)) as u32,
            overruns: self.counters.overruns,
            packets_in: self.counters.packets_in,
            packets_out: self.counters.packets_out,
            malformed: self.counters.malformed,
            cpu_time_us: self.cpu_time_us,
            rate_limited: self.flood.counters().total(),
            socket_drops: self.socket_drops,
            recent: Some(self.recent.stats(now_us)),
            checks: Some(CheckCounters {
                stale: self.counters.health_stale,
                over_budget: self.counters.health_limited,
            }),
        }
    }
}

/// What a datagram from a source that is not connected asks the server to
/// answer, if anything (see [`crate::flood`]). Datagrams that get no answer
/// (commands and disconnects from strangers, garbage) are only counted.
fn unproven_ask(d: &Datagram<'_>) -> Option<Ask> {
    match d {
        Datagram::Query(_) => Some(Ask::Query),
        Datagram::Game(Packet::Hello { .. } | Packet::Connect { .. }) => Some(Ask::Handshake),
        Datagram::Game(Packet::StatsRequest { .. }) => Some(Ask::Stats),
        Datagram::Game(Packet::Ping { .. }) => Some(Ask::Ping),
        Datagram::Game(_) => None,
    }
}
