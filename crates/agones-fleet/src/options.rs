//! What the user chose (`tickpack agones fleet` flags, [`FleetOptions`])
//! and the rules Agones puts on them, checked before anything is written.

use crate::sizing::Sizing;
use crate::FleetError;

/// What the user chose (`tickpack agones fleet` flags).
#[derive(Debug, Clone, PartialEq)]
pub struct FleetOptions {
    /// The Fleet's name (and the autoscaler's, with `-autoscaler`).
    pub name: Option<String>,
    /// The container image; default the definition's `[agones] image`.
    pub image: Option<String>,
    /// The Fleet's starting size and the autoscaler's `minReplicas`.
    pub replicas: u32,
    /// Ready servers the autoscaler keeps waiting for players.
    pub buffer: u32,
    /// The autoscaler's `maxReplicas`; default: the recommended servers.
    pub max_replicas: Option<u32>,
    /// The result file, named in the header.
    pub source: String,
    /// tickpack's version, for the image's `{version}`.
    pub version: String,
}

/// Ready servers kept by default: two, so one allocation right after
/// another still finds a Ready server while a new one starts (a game
/// server may load its map for a few seconds).
pub const DEFAULT_BUFFER: u32 = 2;

impl FleetOptions {
    /// The Fleet's name: `--name`, else `tickpack-GAME`.
    pub fn fleet_name(&self, game: &str) -> String {
        self.name
            .clone()
            .unwrap_or_else(|| format!("tickpack-{game}"))
    }

    /// Checks the names and Agones' rule bufferSize <= minReplicas <=
    /// maxReplicas (the webhook rejects anything else).
    pub fn check(&self, sizing: &Sizing) -> Result<(), FleetError> {
        let bad = |m: String| Err(FleetError::Input(m));
        let name = self.fleet_name(&sizing.game);
        // The autoscaler's name adds 11 characters; fleetName is a DNS label.
        let label = |s: &str| {
            !s.is_empty()
                && s.len() <= 52
                && s.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !s.starts_with('-')
                && !s.ends_with('-')
        };
        if !label(&name) {
            return bad(format!(
                "--name {name:?}: 1-52 of a-z, 0-9 and '-', not starting or ending with '-'"
            ));
        }
        if self.image.as_deref().is_some_and(|i| i.trim().is_empty()) {
            return bad("--image must not be empty".into());
        }
        if self.buffer == 0 {
            return bad("--buffer must be at least 1".into());
        }
        if self.replicas < self.buffer {
            return bad(format!(
                "--replicas {} is below --buffer {}: Agones needs bufferSize <= minReplicas",
                self.replicas, self.buffer
            ));
        }
        let max = self.max_replicas(sizing);
        if max < self.replicas {
            return bad(format!(
                "--max-replicas {max} is below --replicas {}: Agones needs minReplicas <= maxReplicas",
                self.replicas
            ));
        }
        Ok(())
    }

    /// The autoscaler's `maxReplicas`.
    pub fn max_replicas(&self, sizing: &Sizing) -> u32 {
        self.max_replicas
            .unwrap_or_else(|| sizing.recommended_servers.max(self.replicas))
    }
}
