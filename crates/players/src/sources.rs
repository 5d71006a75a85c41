//! Several local source addresses for one load generator: which address
//! each player's socket binds, and whether a game server's limit per
//! source address holds. Pure functions, no I/O.
//!
//! A game server may limit what one source address does (ioquake3 answers
//! connection requests from one address in a burst of 10, then one a
//! second: its definition's `[players] per_address`). Player `i` plays on
//! server `i mod T` (T targets); its rank on that server, `i / T`, picks
//! its address round robin, so each server's players are spread evenly
//! over the addresses and no address carries more than
//! `ceil(players on the server / addresses)` of them.

use std::net::IpAddr;

use crate::PlayersError;

/// Most source addresses one run takes.
pub const MAX_SOURCES: usize = 1024;

/// The source address of player `i` with `targets` servers: `None` (the
/// kernel picks) when no addresses are given.
pub fn source_of(i: usize, targets: usize, sources: &[IpAddr]) -> Option<IpAddr> {
    if sources.is_empty() {
        return None;
    }
    let rank = i / targets.max(1);
    Some(sources[rank % sources.len()])
}

/// The most players any one server sees from one source address, with
/// `players` spread round robin over `targets` servers and their ranks
/// over `sources` addresses (no addresses: all from one).
pub fn most_per_source(players: usize, targets: usize, sources: usize) -> usize {
    let per_server = players.div_ceil(targets.max(1));
    per_server.div_ceil(sources.max(1))
}

/// How many source addresses keep `per_server` players per server within
/// `limit` players per address (at least 1).
pub fn sources_needed(per_server: usize, limit: usize) -> usize {
    per_server.div_ceil(limit.max(1)).max(1)
}

/// Checks the addresses and the game's limit before any socket is opened:
/// no more than [`MAX_SOURCES`], no duplicates, one family (the targets'),
/// and with `limit`, no server sees more than `limit` players from one
/// address.
pub fn check(
    players: usize,
    targets: &[std::net::SocketAddr],
    sources: &[IpAddr],
    limit: Option<usize>,
) -> Result<(), PlayersError> {
    let bad = |m: String| Err(PlayersError::Config(m));
    if sources.len() > MAX_SOURCES {
        return bad(format!(
            "--source-addrs: {} addresses, at most {MAX_SOURCES}",
            sources.len()
        ));
    }
    let mut seen = std::collections::BTreeSet::new();
    for s in sources {
        if !seen.insert(s) {
            return bad(format!("--source-addrs: {s} is given twice"));
        }
        if s.is_unspecified() || s.is_multicast() {
            return bad(format!(
                "--source-addrs: {s} is not one local address (unspecified or multicast)"
            ));
        }
        if let Some(t) = targets.iter().find(|t| t.is_ipv4() != s.is_ipv4()) {
            return bad(format!(
                "--source-addrs: {s} cannot reach {t} (another address family)"
            ));
        }
    }
    if sources.is_empty() {
        return Ok(());
    }
    if let Some(limit) = limit {
        let most = most_per_source(players, targets.len(), sources.len());
        if most > limit {
            let per_server = players.div_ceil(targets.len().max(1));
            return bad(format!(
                "--source-addrs: {} addresses put {most} players on one server from one address, above the game's {limit} per address: {per_server} players per server need {} addresses",
                sources.len(),
                sources_needed(per_server, limit)
            ));
        }
    }
    Ok(())
}

/// Parses `--source-addrs`: a comma-separated list of addresses and
/// ranges `FIRST-LAST` (IPv4, both ends included, e.g.
/// `10.1.0.2-10.1.0.5` or `127.0.0.2-127.0.0.13`), at most
/// [`MAX_SOURCES`] in all.
pub fn parse(text: &str) -> Result<Vec<IpAddr>, PlayersError> {
    let bad = |why: String| PlayersError::Config(format!("--source-addrs {text:?}: {why}"));
    let mut out = Vec::new();
    for part in text.split(',').map(str::trim) {
        let addr = |s: &str| {
            s.trim()
                .parse::<IpAddr>()
                .map_err(|_| bad(format!("{s:?} is not an IP address")))
        };
        match part.split_once('-') {
            None => out.push(addr(part)?),
            Some((a, b)) => {
                let (IpAddr::V4(a), IpAddr::V4(b)) = (addr(a)?, addr(b)?) else {
                    return Err(bad(format!("{part:?}: ranges are IPv4 only")));
                };
                let (a, b) = (u32::from(a), u32::from(b));
                if a > b {
                    return Err(bad(format!(
                        "{part:?}: the first address is above the last"
                    )));
                }
                if (b - a) as usize >= MAX_SOURCES {
                    return Err(bad(format!("{part:?}: more than {MAX_SOURCES} addresses")));
                }
                out.extend((a..=b).map(|n| IpAddr::V4(n.into())));
            }
        }
        if out.len() > MAX_SOURCES {
            return Err(bad(format!("more than {MAX_SOURCES} addresses")));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ips(s: &str) -> Vec<IpAddr> {
        parse(s).unwrap()
    }

    fn targets(n: usize) -> Vec<std::net::SocketAddr> {
        (0..n)
            .map(|k| format!("198.18.0.{}:27960", 4 * k + 2).parse().unwrap())
            .collect()
    }

    #[test]
    fn parses_lists_and_ranges() {
        assert_eq!(
            ips("127.0.0.2-127.0.0.4, 10.0.0.9"),
            ["127.0.0.2", "127.0.0.3", "127.0.0.4", "10.0.0.9"]
                .map(|a| a.parse::<IpAddr>().unwrap())
        );
        assert_eq!(ips("::1"), vec!["::1".parse::<IpAddr>().unwrap()]);
        for (bad, why) in [
            ("127.0.0.5-127.0.0.2", "above the last"),
            ("x", "not an IP address"),
            ("10.0.0.0-10.0.255.255", "more than 1024"),
            ("::1-::2", "IPv4 only"),
        ] {
            let e = parse(bad).unwrap_err().to_string();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }

    /// Every server's players, counted per source address, for every
    /// player count and address count: never above the ceiling the check
    /// relies on, and spread evenly (within one).
    #[test]
    fn players_per_address_per_server_never_exceed_the_ceiling() {
        let sources = ips("10.0.0.1-10.0.0.5");
        for t in 1..=4 {
            for n in 1..=sources.len() {
                for players in 1..=60 {
                    let mut count = std::collections::BTreeMap::new();
                    for i in 0..players {
                        let s = source_of(i, t, &sources[..n]).unwrap();
                        *count.entry((i % t, s)).or_insert(0usize) += 1;
                    }
                    let most = *count.values().max().unwrap();
                    assert_eq!(most, most_per_source(players, t, n), "{players} {t} {n}");
                    for server in 0..t {
                        let c: Vec<usize> = count
                            .iter()
                            .filter(|((k, _), _)| *k == server)
                            .map(|(_, &c)| c)
                            .collect();
                        let (lo, hi) = (c.iter().min(), c.iter().max());
                        if c.len() == n {
                            assert!(hi.unwrap() - lo.unwrap() <= 1, "{players} {t} {n}: {c:?}");
                        }
                    }
                }
            }
        }
        assert_eq!(source_of(3, 2, &[]), None, "no addresses: the kernel picks");
    }

    #[test]
    fn twelve_players_per_server_at_four_per_address_take_three_addresses() {
        assert_eq!(sources_needed(12, 4), 3);
        assert_eq!(sources_needed(13, 4), 4);
        assert_eq!(sources_needed(0, 4), 1);
        let three = ips("10.0.0.1-10.0.0.3");
        // 5 servers of 12 players: 4 per address on each.
        assert!(check(60, &targets(5), &three, Some(4)).is_ok());
        assert_eq!(most_per_source(60, 5, 3), 4);
        assert!(check(60, &targets(5), &three, None).is_ok());
    }

    #[test]
    fn too_few_addresses_for_the_games_limit_is_an_error_naming_how_many() {
        let two = ips("10.0.0.1-10.0.0.2");
        let e = check(24, &targets(2), &two, Some(4))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("6 players on one server from one address"),
            "{e}"
        );
        assert!(e.contains("need 3 addresses"), "{e}");
    }

    #[test]
    fn duplicate_unspecified_or_foreign_family_addresses_are_refused() {
        let t = targets(1);
        for (bad, why) in [
            ("10.0.0.1,10.0.0.1", "twice"),
            ("0.0.0.0", "unspecified"),
            ("::1", "another address family"),
        ] {
            let e = check(4, &t, &ips(bad), None).unwrap_err().to_string();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }
}
