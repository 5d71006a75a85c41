//! A tile run (`tickpack bench --tile FILE`): several games side by side
//! whose players come and go along curves, judged per member in windows.
//!
//! Order: the tile file, checked ([`tickpack_tile`]) → [`TilePlan`] (each
//! member's game resolved, its limits, its curve) → the ladder climbs
//! tiles as it climbs servers ([`crate::ladder`]); each step runs through
//! [`step::run`] (one host per member, each member's players with their
//! presence plans, the server cores and run delay sampled per window, the
//! map changes sent when the curves say) and is judged window by window
//! ([`judge`]). `--compare load` climbs the three [`LoadVariant`]s
//! interleaved.
//!
//! Every member gets its own host (name, run dir, address range, uid
//! block), made from the run's: [`member_host_name`], [`member_range`].

pub mod judge;
pub mod presence;
pub mod step;

use std::path::{Path, PathBuf};
use std::time::Duration;

use tickpack_report::bench::QosLimits;
pub use tickpack_report::tile::LoadVariant;
use tickpack_report::tile::TileSettings;
use tickpack_units::TickRate;

use crate::GameServer;

/// The most members a tile holds (each gets a host of its own).
pub const MAX_MEMBERS: usize = 16;

/// A tile ready to run: every member's game resolved and checked.
#[derive(Debug, Clone)]
pub struct TilePlan {
    /// What result.json records of the tile.
    pub settings: TileSettings,
    pub members: Vec<MemberPlan>,
    /// The measured span of a step (the curves' length).
    pub step: Duration,
    /// Length of a judged window.
    pub window: Duration,
    /// Time before the measured span: servers up, first players in.
    pub warmup: Duration,
    pub seed: u64,
}

/// One member of a tile.
#[derive(Debug, Clone)]
pub struct MemberPlan {
    pub name: String,
    pub game: GameServer,
    /// Servers per tile.
    pub count: u32,
    /// Emulated players per server at 100 % of its curve.
    pub players: u32,
    pub bots: u32,
    pub tick: TickRate,
    pub qos: QosLimits,
    pub max_join: Duration,
    /// An idle lobby server: started, answering, never played.
    pub idle: bool,
    /// How its players come and go.
    pub curve: tickpack_curve::Curve,
}

impl TilePlan {
    /// Servers in one tile, every member together.
    pub fn servers_per_tile(&self) -> u32 {
        self.members.iter().map(|m| m.count).sum()
    }
}

/// The host name of member `m` of a run whose hosts are called `base`:
/// at most 7 of its characters and the member's hex digit, so every
/// member's host is its own (names are 1-8 of a-z0-9).
pub fn member_host_name(base: &str, m: usize) -> String {
    let keep: String = base.chars().take(7).collect();
    format!("{keep}{m:x}")
}

/// Member `m`'s run dir, inside the run's (removed with it).
pub fn member_run_dir(run_dir: &Path, m: usize) -> PathBuf {
    run_dir.join(format!("member{m}"))
}

/// Member `m`'s share of the run's address range: the range cut into
/// [`MAX_MEMBERS`] equal parts (4 bits more of prefix), so no two
/// members' instances, gateways or source addresses meet. `None` (the
/// host's default range) is cut the same way.
pub fn member_range(range: Option<&str>, m: usize) -> Result<String, String> {
    let range = range.unwrap_or(tickpack_fleet::plan::DEFAULT_RANGE);
    let (addr, prefix) = range
        .split_once('/')
        .ok_or_else(|| format!("address range {range}: expected ADDR/PREFIX"))?;
    let addr: std::net::Ipv4Addr = addr
        .parse()
        .map_err(|_| format!("address range {range}: not an IPv4 address"))?;
    let prefix: u32 = prefix
        .parse()
        .map_err(|_| format!("address range {range}: not a prefix length"))?;
    let bits = MAX_MEMBERS.trailing_zeros();
    if prefix + bits > 24 {
        return Err(format!(
            "address range {range} is too small for a tile: each of up to {MAX_MEMBERS} members takes a sixteenth, so give a /{} or wider",
            24 - bits
        ));
    }
    let sub = prefix + bits;
    let base = u32::from(addr) & (u32::MAX << (32 - prefix));
    let start = base + ((m as u32) << (32 - sub));
    Ok(format!("{}/{sub}", std::net::Ipv4Addr::from(start)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_member_gets_its_own_host_name_and_share_of_the_range() {
        assert_eq!(member_host_name("bn", 0), "bn0");
        assert_eq!(member_host_name("abcdefgh", 7), "abcdefg7");
        assert_eq!(member_host_name("bn", 11), "bnb");
        assert_eq!(member_range(None, 0).unwrap(), "198.18.0.0/20");
        assert_eq!(member_range(None, 3).unwrap(), "198.18.48.0/20");
        assert_eq!(
            member_range(Some("10.20.0.0/16"), 15).unwrap(),
            "10.20.240.0/20"
        );
        let e = member_range(Some("10.20.30.0/24"), 0).unwrap_err();
        assert!(e.contains("/20 or wider"), "{e}");
    }
}
