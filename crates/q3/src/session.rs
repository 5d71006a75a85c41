//! The public shapes of a client session ([`crate::client::Client`]): how
//! it presents itself ([`ClientConfig`]), where it is ([`ClientState`]),
//! and what the server said ([`Event`], [`SnapshotInfo`]). Plain data; the
//! state machine that fills them is in [`crate::client`].

/// How a client presents itself.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// The player name (userinfo `name`).
    pub name: String,
    /// The 16-bit port id that lets the server follow a client across
    /// source-port changes; distinct per client of one address.
    pub qport: u16,
    /// The client's challenge, echoed in `challengeResponse`.
    pub client_challenge: i32,
    /// The protocol announced in `connect` (71).
    pub protocol: i32,
    /// Speak the legacy channel (no checksums, XOR-encoded bodies): what a
    /// server whose `com_legacyprotocol` equals `protocol` expects (the
    /// Debian's packaged ioquake3 game server: both 71).
    pub legacy: bool,
    /// The game name in `getchallenge` (the server's `com_gamename`).
    pub gamename: String,
    /// Further userinfo keys in order (rate, snaps, model, ...).
    pub userinfo: Vec<(String, String)>,
}

impl ClientConfig {
    /// A config for Debian's packaged ioquake3 game server: protocol 71, legacy
    /// channel, gamename `Quake3Arena`, userinfo `rate 25000`,
    /// `snaps 1000` (the server caps snaps at its sv_fps) and a `cl_guid`
    /// of 32 hex digits derived from name, qport and challenge (its
    /// game module refuses a client without a valid, unique one).
    pub fn new(name: &str, qport: u16, client_challenge: i32) -> ClientConfig {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in name.bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        let guid = format!("{qport:08X}{:08X}{h:016X}", client_challenge as u32);
        ClientConfig {
            name: name.to_string(),
            qport,
            client_challenge,
            protocol: 71,
            legacy: true,
            gamename: "Quake3Arena".to_string(),
            userinfo: vec![
                ("rate".into(), "25000".into()),
                ("snaps".into(), "1000".into()),
                ("cl_guid".into(), guid),
            ],
        }
    }
}

/// Where the session is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ClientState {
    /// Sending `getchallenge` (the engine's CA_CONNECTING).
    Challenging,
    /// Sending `connect` (the engine's CA_CHALLENGING).
    Connecting,
    /// Channel open, no gamestate yet (CA_CONNECTED).
    AwaitingGamestate,
    /// Gamestate in, no valid snapshot yet (CA_PRIMED).
    Primed,
    /// Snapshots arriving (CA_ACTIVE).
    Active,
}

/// What one snapshot said.
#[derive(Debug, Clone, PartialEq)]
pub struct SnapshotInfo {
    /// The netchan sequence of the message that carried it.
    pub message_num: i32,
    /// The server's time for it, in ms.
    pub server_time: i32,
    /// The message it is a delta from, or -1.
    pub delta_num: i32,
    /// False if the delta base was missing: not a valid frame (it is not
    /// kept, and the next usercmd packet asks for a full one).
    pub delta_ok: bool,
    /// `snapFlags`.
    pub snap_flags: u8,
    /// `ps.commandTime`: the server time of the last usercmd the server ran.
    pub command_time: i32,
    /// `ps.clientNum`.
    pub client_num: i32,
    /// Entities in the snapshot.
    pub entities: usize,
    /// `ps.origin`.
    pub origin: [f32; 3],
}

/// Something the server said.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// `challengeResponse` accepted.
    Challenged,
    /// `connectResponse` accepted; the channel is open.
    Connected,
    /// A gamestate.
    Gamestate {
        /// `sv_serverid` from the systeminfo configstring.
        server_id: i32,
        /// Our client slot.
        client_num: i32,
        /// The usercmd key's base.
        checksum_feed: i32,
        /// Configstrings received.
        configstrings: usize,
        /// `mapname` from the serverinfo configstring.
        mapname: String,
    },
    /// A snapshot.
    Snapshot(SnapshotInfo),
    /// A new reliable server command.
    ServerCommand {
        /// Its sequence.
        sequence: i32,
        /// Its text.
        text: String,
    },
    /// The server dropped us.
    Disconnected {
        /// Its reason, if any.
        reason: String,
    },
    /// A connectionless `print` (e.g. why a connect was refused).
    Print(String),
}
