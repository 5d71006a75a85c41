//! Counts in words, for every line a user reads: "1 server", "3 servers".

/// `n` followed by `one` or, when `n` is not 1, by `many`.
pub fn count(n: impl Into<u64>, one: &str, many: &str) -> String {
    let n = n.into();
    format!("{n} {}", if n == 1 { one } else { many })
}

/// "1 server", "0 servers", "3 servers".
pub fn servers(n: impl Into<u64>) -> String {
    count(n, "server", "servers")
}

/// What loads each server of a run, as its first line and its report say
/// it: players and bots always named ("0 players and 4 bots per server"),
/// and a load command with its players ("a load command (8 players) and
/// 0 bots per server").
pub fn load_per_server(s: &crate::bench::BenchSettings) -> String {
    let bots = count(s.bots_per_server, "bot", "bots");
    match &s.load {
        Some(l) => format!(
            "a load command ({}) and {bots} per server",
            count(l.players, "player", "players")
        ),
        None => format!(
            "{} and {bots} per server",
            count(s.players_per_server, "player", "players")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bench_said_1_servers() {
        assert_eq!(servers(1u32), "1 server");
        assert_eq!(servers(0u32), "0 servers");
        assert_eq!(servers(3u32), "3 servers");
        assert_eq!(count(1u32, "core", "cores"), "1 core");
    }
}
