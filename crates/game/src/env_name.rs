//! Which environment variables a game's definition (or a host file) may
//! set for its server: one rule for both.
//!
//! A variable is applied only by the server's own `execve`, inside every
//! wall (`tickpack_host::spawn::env`), but the keys that the dynamic
//! loader and the C library read to load code or files are refused
//! outright, at parse time: a server needs none of them, and a definition
//! that sets one is hostile or mistaken.
//!
//! So are the names the host itself sets for an instance ([`HOST_SET`],
//! and every name starting with [`HOST_PREFIX`]): set twice, the server's
//! environment held both values and `getenv` returned the file's, first.
//! The definition checker (`validate.rs`) and the host file's
//! (`tickpack_fleet::file`) both ask [`check_env_name`], each naming the
//! line.

/// Keys refused besides every `LD_*` one: what glibc's loader and C
/// library read to load code or data (its list of variables unsafe for
/// set-uid programs, less `TMPDIR` and `TZDIR`, which servers use).
pub const LOADER_KEYS: [&str; 11] = [
    "GLIBC_TUNABLES",
    "GCONV_PATH",
    "GETCONF_DIR",
    "HOSTALIASES",
    "LOCALDOMAIN",
    "LOCPATH",
    "MALLOC_TRACE",
    "NIS_PATH",
    "NLSPATH",
    "RESOLV_HOST_CONF",
    "RES_OPTIONS",
];

/// The variables the host sets for every instance, with what they hold.
pub const HOST_SET: [(&str, &str); 2] = [
    ("HOME", "the instance's directory, {dir}"),
    (
        tickpack_wire::HEALTH_KEY_ENV,
        "the key of its health checks, new at every start",
    ),
];

/// Names starting with this are the host's: [`HOST_SET`]'s own, an
/// Agones container's `TICKPACK_FILE_N`, and any it sets later.
pub const HOST_PREFIX: &str = "TICKPACK_";

/// `Ok` for a name a server may be given; else why not, in one line.
pub fn check_env_name(name: &str) -> Result<(), String> {
    let shaped = !name.is_empty()
        && name.len() <= 64
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !shaped {
        return Err(format!(
            "environment variable \"{}\": expected 1-64 letters, digits and _, not starting with a digit",
            tickpack_sys::text::escape(name, tickpack_sys::text::SHORT)
        ));
    }
    if let Some((_, holds)) = HOST_SET.iter().find(|(k, _)| *k == name) {
        return Err(format!(
            "environment variable {name:?}: set by the host ({holds})"
        ));
    }
    if name.starts_with(HOST_PREFIX) {
        return Err(format!(
            "environment variable {name:?}: set by the host (names starting with {HOST_PREFIX} are its own)"
        ));
    }
    if name.starts_with("LD_") || LOADER_KEYS.contains(&name) {
        return Err(format!(
            "environment variable {name:?}: refused, the dynamic loader or the C library reads it to load code or files"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loader_variables_are_refused() {
        for k in [
            "LD_PRELOAD",
            "LD_LIBRARY_PATH",
            "LD_AUDIT",
            "GLIBC_TUNABLES",
            "GCONV_PATH",
        ] {
            let e = check_env_name(k).unwrap_err();
            assert!(e.contains("refused"), "{k}: {e}");
        }
    }

    #[test]
    fn ordinary_names_pass_and_bad_shapes_do_not() {
        for k in ["PATH", "SV_FPS", "A", "_x1", "LDX", "TMPDIR"] {
            check_env_name(k).unwrap();
        }
        for k in ["", "1A", "A-B", "A=B", &"A".repeat(65)] {
            assert!(check_env_name(k).is_err(), "{k}");
        }
    }

    #[test]
    fn every_name_the_host_sets_is_refused() {
        for k in HOST_SET.map(|(k, _)| k).iter().chain(&[
            tickpack_wire::HEALTH_KEY_ENV,
            "TICKPACK_FILE_1",
            "TICKPACK_",
        ]) {
            let e = check_env_name(k).unwrap_err();
            assert!(e.contains("set by the host") && e.contains(k), "{k}: {e}");
        }
        check_env_name("TICKPACKX").unwrap();
    }
}
