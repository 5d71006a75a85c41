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
