//! The rule for a host's name. It prefixes every name tickpack creates
//! (namespaces `tp<name>-<id>`, links `tp<name>v<id>`, `tp<name>br`, cgroups,
//! the firewall table), so it is short lowercase ASCII: a link name must fit
//! the kernel's 15 bytes (IFNAMSIZ - 1), and `tp` + 8 + `v` + a 3-digit
//! instance id (a host runs at most 250) is 14.

/// Longest host name accepted.
pub const MAX_HOST_NAME: usize = 8;

/// Why a host name was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostNameError {
    /// Empty or longer than [`MAX_HOST_NAME`].
    #[error("it must be 1 to 8 characters long")]
    Length,
    /// A character other than `a-z` and `0-9`.
    #[error("only a-z and 0-9 are allowed")]
    Characters,
}

/// Fails unless `name` can prefix tickpack's names: 1..=8 of `a-z0-9`.
pub fn validate_host_name(name: &str) -> Result<(), HostNameError> {
    if name.is_empty() || name.len() > MAX_HOST_NAME {
        return Err(HostNameError::Length);
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    {
        return Err(HostNameError::Characters);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// IFNAMSIZ - 1.
    const MAX_LINK_NAME: usize = 15;
    /// The most instances one host runs (the fleet's limit).
    const MAX_INSTANCE_ID: u32 = 250;

    #[test]
    fn host_names_are_one_to_eight_lowercase_alphanumerics() {
        assert_eq!(validate_host_name("h"), Ok(()));
        assert_eq!(validate_host_name("h1"), Ok(()));
        assert_eq!(validate_host_name("abcdefgh"), Ok(()));
        assert_eq!(validate_host_name(""), Err(HostNameError::Length));
        assert_eq!(validate_host_name("abcdefghi"), Err(HostNameError::Length));
        for bad in ["H1", "h-1", "h 1", "h/1", "é"] {
            assert_eq!(
                validate_host_name(bad),
                Err(HostNameError::Characters),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn the_longest_host_name_leaves_room_in_every_link_name() {
        let name = "a".repeat(MAX_HOST_NAME);
        assert_eq!(validate_host_name(&name), Ok(()));
        for link in [
            format!("tp{name}v{MAX_INSTANCE_ID}"),
            format!("tp{name}br"),
            format!("tp{name}d0"),
            format!("tp{name}d1"),
            format!("tp{name}gw"),
        ] {
            assert!(
                link.len() <= MAX_LINK_NAME,
                "{link} is {} bytes",
                link.len()
            );
        }
    }
}
