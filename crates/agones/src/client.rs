//! [`SdkClient`]: a blocking client of the Agones SDK server's HTTP API
//! (the REST gateway every Agones GameServer pod has beside the game, on
//! `AGONES_SDK_HTTP_PORT`), on `ureq`.
//!
//! Why HTTP and not the official `agones` crate over gRPC: that crate needs
//! tokio and tonic, and the reference server is one synchronous thread per
//! concern; the HTTP API is documented, served by the same `sdk-server`
//! binary, and needs one small blocking client. Each call is one short
//! request with a timeout, made from the reporter's own thread, never from
//! the tick loop.
//!
//! The calls, as the SDK server v1.60 serves them (tests/agones.rs in the
//! cli crate runs the real binary):
//!
//! | [`Action`] | request |
//! |---|---|
//! | Ready, Health, Shutdown | `POST /ready`, `/health`, `/shutdown` with `{}` |
//! | AddPlayer / RemovePlayer | `POST /v1beta1/lists/players:addValue` / `:removeValue` with `{"value":..}` |
//! | PlayerConnect / PlayerDisconnect | `POST /alpha/player/connect` / `disconnect` with `{"playerID":..}` |
//! | SetPlayerCount | `PATCH /v1beta1/counters/players` with `{"count":".."}` |
//! | SetLabel | `PUT /metadata/label` with `{"key":..,"value":..}` |
//!
//! Health is a `POST` of `{}` per ping (the gRPC API's client stream has
//! no HTTP form: the gateway turns each POST into one ping). Players go to
//! Counts and Lists (beta, on by default in Agones 1.60) where the
//! GameServer declares a `players` list or counter, and to player tracking
//! (alpha) only where its `PlayerTracking` feature gate is on
//! ([`GameServer::player_sinks`]).

use std::net::SocketAddr;
use std::time::Duration;

use serde::Deserialize;
use serde_json::json;

use crate::reporter::{Action, PlayerSinks, PLAYERS};

/// How long one SDK call may take. The SDK server is on the same host (the
/// same pod); a call that takes longer is a failure.
const CALL_TIMEOUT: Duration = Duration::from_secs(3);

/// Why an SDK call failed.
#[derive(Debug, thiserror::Error)]
pub enum SdkError {
    /// Nothing answered HTTP at the endpoint.
    #[error("no Agones SDK server answered at http://{endpoint}: {reason}")]
    Unreachable {
        endpoint: SocketAddr,
        reason: String,
    },
    /// The SDK server answered with an error.
    #[error("the Agones SDK server refused {call}: HTTP {status}: {body}")]
    Refused {
        call: String,
        status: u16,
        body: String,
    },
    /// The answer was not the JSON expected.
    #[error("the Agones SDK server's answer to {call} did not parse: {reason}")]
    BadAnswer { call: String, reason: String },
}

/// What `GET /gameserver` says, as far as tickpack reads it.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
pub struct GameServer {
    #[serde(default)]
    pub object_meta: ObjectMeta,
    #[serde(default)]
    pub status: Status,
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
pub struct ObjectMeta {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub labels: std::collections::BTreeMap<String, String>,
    #[serde(default)]
    pub annotations: std::collections::BTreeMap<String, String>,
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
pub struct Status {
    /// `Scheduled`, `RequestReady`, `Ready`, `Allocated`, `Shutdown`, ...
    #[serde(default)]
    pub state: String,
    /// Player tracking's status: `null` unless the `PlayerTracking`
    /// feature gate is on.
    #[serde(default)]
    pub players: Option<serde_json::Value>,
    /// Counts and Lists, by name.
    #[serde(default)]
    pub lists: Option<std::collections::BTreeMap<String, serde_json::Value>>,
    #[serde(default)]
    pub counters: Option<std::collections::BTreeMap<String, serde_json::Value>>,
}

impl GameServer {
    /// Where players can go on this GameServer: the `players` list and
    /// counter if its spec declares them, player tracking if its gate is on.
    pub fn player_sinks(&self) -> PlayerSinks {
        let has = |m: &Option<std::collections::BTreeMap<String, serde_json::Value>>| {
            m.as_ref().is_some_and(|m| m.contains_key(PLAYERS))
        };
        PlayerSinks {
            list: has(&self.status.lists),
            counter: has(&self.status.counters),
            tracking: self.status.players.as_ref().is_some_and(|p| !p.is_null()),
        }
    }
}

/// A client of one SDK server.
pub struct SdkClient {
    agent: ureq::Agent,
    endpoint: SocketAddr,
}

impl SdkClient {
    /// A client of the SDK server at `endpoint` (nothing is sent yet).
    pub fn new(endpoint: SocketAddr) -> SdkClient {
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(CALL_TIMEOUT))
            .http_status_as_error(false)
            .build()
            .into();
        SdkClient { agent, endpoint }
    }

    pub fn endpoint(&self) -> SocketAddr {
        self.endpoint
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.endpoint)
    }

    /// `GET /gameserver`: the GameServer as the SDK server sees it (also the
    /// reachability check before the game starts).
    pub fn game_server(&self) -> Result<GameServer, SdkError> {
        let call = "GET /gameserver";
        let resp = self.agent.get(self.url("/gameserver")).call();
        let body = self.answer(call, resp)?;
        serde_json::from_str(&body).map_err(|e| SdkError::BadAnswer {
            call: call.into(),
            reason: e.to_string(),
        })
    }

    /// Performs one action of the reporter.
    pub fn perform(&self, action: &Action) -> Result<(), SdkError> {
        let (method, path, body) = match action {
            Action::Ready => ("POST", "/ready".to_string(), json!({})),
            Action::Health => ("POST", "/health".to_string(), json!({})),
            Action::Shutdown => ("POST", "/shutdown".to_string(), json!({})),
            Action::AddPlayer(v) => (
                "POST",
                format!("/v1beta1/lists/{PLAYERS}:addValue"),
                json!({ "value": v }),
            ),
            Action::RemovePlayer(v) => (
                "POST",
                format!("/v1beta1/lists/{PLAYERS}:removeValue"),
                json!({ "value": v }),
            ),
            Action::PlayerConnect(id) => (
                "POST",
                "/alpha/player/connect".to_string(),
                json!({ "playerID": id }),
            ),
            Action::PlayerDisconnect(id) => (
                "POST",
                "/alpha/player/disconnect".to_string(),
                json!({ "playerID": id }),
            ),
            Action::SetPlayerCount(n) => (
                "PATCH",
                format!("/v1beta1/counters/{PLAYERS}"),
                // int64 travels as a string in proto3 JSON.
                json!({ "count": n.to_string() }),
            ),
            Action::SetLabel { key, value } => (
                "PUT",
                "/metadata/label".to_string(),
                json!({ "key": key, "value": value }),
            ),
        };
        let url = self.url(&path);
        let body = body.to_string();
        let resp = match method {
            "POST" => self
                .agent
                .post(&url)
                .content_type("application/json")
                .send(&body),
            "PUT" => self
                .agent
                .put(&url)
                .content_type("application/json")
                .send(&body),
            _ => self
                .agent
                .patch(&url)
                .content_type("application/json")
                .send(&body),
        };
        self.answer(&format!("{method} {path}"), resp).map(|_| ())
    }

    /// The body of a 2xx answer, or why there is none.
    fn answer(
        &self,
        call: &str,
        resp: Result<ureq::http::Response<ureq::Body>, ureq::Error>,
    ) -> Result<String, SdkError> {
        let mut resp = resp.map_err(|e| SdkError::Unreachable {
            endpoint: self.endpoint,
            reason: e.to_string(),
        })?;
        let status = resp.status().as_u16();
        let body = resp
            .body_mut()
            .read_to_string()
            .map_err(|e| SdkError::BadAnswer {
                call: call.into(),
                reason: e.to_string(),
            })?;
        if !(200..300).contains(&status) {
            return Err(SdkError::Refused {
                call: call.into(),
                status,
                body: body.trim().chars().take(200).collect(),
            });
        }
        Ok(body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_game_server_json_of_sdk_server_1_60_parses() {
        // As `GET /gameserver` of the real binary answered (trimmed).
        let body = r#"{"object_meta":{"name":"tickpack-local","namespace":"","annotations":{},"labels":{"agones.dev/sdk-tick-p99-us":"1234"}},"spec":{"health":{"disabled":false}},"status":{"state":"Ready","address":"127.0.0.1","players":null,"counters":{"players":{"count":"0","capacity":"100"}},"lists":{"players":{"capacity":"100","values":["alice"]}}}}"#;
        let gs: GameServer = serde_json::from_str(body).unwrap();
        assert_eq!(gs.status.state, "Ready");
        assert_eq!(gs.object_meta.name, "tickpack-local");
        assert_eq!(
            gs.object_meta.labels.get("agones.dev/sdk-tick-p99-us"),
            Some(&"1234".to_string())
        );
        assert_eq!(
            gs.player_sinks(),
            PlayerSinks {
                list: true,
                counter: true,
                tracking: false
            }
        );
    }

    #[test]
    fn player_tracking_is_used_when_its_gate_is_on_and_lists_when_declared() {
        // With --feature-gates PlayerTracking=true, and no Counts and Lists.
        let body = r#"{"object_meta":{"name":"g"},"status":{"state":"Scheduled","players":{"count":"0","capacity":"100","ids":[]},"counters":{},"lists":{}}}"#;
        let gs: GameServer = serde_json::from_str(body).unwrap();
        assert_eq!(
            gs.player_sinks(),
            PlayerSinks {
                list: false,
                counter: false,
                tracking: true
            }
        );
    }

    #[test]
    fn a_call_to_a_closed_port_says_where_it_looked() {
        // Bind then drop: the port is (very likely) closed for the call.
        let addr = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let err = SdkClient::new(addr).game_server().unwrap_err();
        assert!(matches!(err, SdkError::Unreachable { .. }), "{err}");
        assert!(err.to_string().contains(&addr.to_string()), "{err}");
    }
}
