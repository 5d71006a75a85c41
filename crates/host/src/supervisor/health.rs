//! Health: a stats request over the tickpack protocol to every running
//! instance once a second, the replies (which also carry the tick and frame
//! figures shown in the status), and the liveness rule: silent for 2 s is
//! `unresponsive`; silent for `unresponsive_s` is killed (and restarted by
//! the restart policy). Without health checks an instance is `running` once
//! it has lived 200 ms.

use std::time::{Duration, Instant};

use tickpack_wire::Packet;

use super::Supervisor;
use crate::status::InstanceState;

impl Supervisor {
    pub(super) fn send_health(&mut self) {
        let Some(sock) = &self.health else { return };
        let req = Packet::StatsRequest { nonce: 1 }.to_vec();
        for i in &self.instances {
            if i.child.is_some() {
                let _ = sock.send_to(&req, i.addr);
            }
        }
    }

    pub(super) fn read_health(&mut self, now: Instant) {
        let Some(sock) = &self.health else {
            // No health checks: running once the process has lived a moment.
            for i in &mut self.instances {
                if i.state == InstanceState::Starting
                    && i.child.is_some()
                    && i.started.elapsed() > Duration::from_millis(200)
                {
                    i.state = InstanceState::Running;
                }
            }
            return;
        };
        let mut buf = [0u8; 512];
        for _ in 0..1024 {
            let Ok((n, from)) = sock.recv_from(&mut buf) else {
                break;
            };
            let Some(&k) = self.health_by_addr.get(&from) else {
                continue;
            };
            if let Ok(Packet::Stats(s)) = Packet::decode(&buf[..n]) {
                let i = &mut self.instances[k];
                i.last_heard = Some(now);
                i.stats = Some(s);
                if matches!(
                    i.state,
                    InstanceState::Starting | InstanceState::Unresponsive
                ) && i.child.is_some()
                {
                    i.state = InstanceState::Running;
                }
            }
        }
    }

    pub(super) fn check_liveness(&mut self, now: Instant) {
        if self.health.is_none() {
            return;
        }
        let limit = Duration::from_secs_f64(self.cfg.restart.unresponsive_s);
        let mut events = vec![];
        for i in &mut self.instances {
            let Some(child) = i.child.as_mut() else {
                continue;
            };
            let since = i.last_heard.unwrap_or(i.started);
            if now.duration_since(since) > Duration::from_secs(2)
                && i.state == InstanceState::Running
            {
                i.state = InstanceState::Unresponsive;
                events.push(format!(
                    "instance {} stopped answering health checks",
                    i.spec.id
                ));
            }
            if now.duration_since(since) > limit {
                let _ = child.kill();
                events.push(format!(
                    "instance {} silent for {:.0} s: killed, will restart",
                    i.spec.id,
                    limit.as_secs_f64()
                ));
                i.last_heard = Some(now);
            }
        }
        for e in events {
            self.event(e);
        }
    }
}
