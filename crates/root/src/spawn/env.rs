//! The instance's environment, and how it reaches the server without
//! passing through anything that runs as root.
//!
//! Everything the supervisor runs before the walls go up (the forked child
//! before `exec`, the `__instance-init` that confines the command) starts
//! with an **empty** environment: a definition's `[env]` could otherwise
//! name a library for the dynamic loader of a root process (`LD_PRELOAD`),
//! or a `PATH` root would search. The instance's variables travel to the
//! init in a sealed memory file ([`EnvFile`]) it reads and closes, and are
//! applied only by the final `execve` of the server, after every wall
//! (namespaces, capabilities, no_new_privs, uid, seccomp).
//!
//! The server's environment is [`instance_env`]: a fixed `PATH`
//! ([`DEFAULT_PATH`], never the supervisor's) unless the definition sets
//! one, then the definition's variables and `HOME`. Nothing of the
//! supervisor's own environment reaches an instance.

use rustix::fs::MemfdFlags;
use std::ffi::CString;
use std::io::{Read, Seek, Write};
use std::os::fd::{AsRawFd, FromRawFd, RawFd};

/// The server's `PATH` unless its definition sets one.
pub const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin:/usr/local/games:/usr/games";

/// The largest environment the init reads back (a definition's `[env]` is
/// far smaller; this only bounds a corrupt file).
const MAX_ENV_BYTES: u64 = 1 << 20;

/// The server's whole environment: [`DEFAULT_PATH`] unless `spec_env`
/// names `PATH`, then `spec_env` in its order.
pub fn instance_env(spec_env: &[(String, String)]) -> Vec<(String, String)> {
    let mut env = Vec::with_capacity(spec_env.len() + 1);
    if !spec_env.iter().any(|(k, _)| k == "PATH") {
        env.push(("PATH".to_string(), DEFAULT_PATH.to_string()));
    }
    env.extend(spec_env.iter().cloned());
    env
}

/// An environment written to an anonymous memory file (`memfd`), handed to
/// the init by descriptor number (`--env-fd`).
pub struct EnvFile {
    file: std::fs::File,
}

impl EnvFile {
    /// Writes `env` as `KEY=VALUE` entries, each ended by a NUL byte.
    pub fn write(env: &[(String, String)]) -> std::io::Result<EnvFile> {
        let fd = rustix::fs::memfd_create(c"tickpack-instance-env", MemfdFlags::CLOEXEC)?;
        let mut file = std::fs::File::from(fd);
        let mut bytes = Vec::new();
        for (k, v) in env {
            if k.contains(['=', '\0']) || v.contains('\0') {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!("environment variable {k:?}: a name with '=' or a NUL byte"),
                ));
            }
            bytes.extend_from_slice(k.as_bytes());
            bytes.push(b'=');
            bytes.extend_from_slice(v.as_bytes());
            bytes.push(0);
        }
        file.write_all(&bytes)?;
        file.rewind()?;
        Ok(EnvFile { file })
    }

    /// The descriptor to name in `--env-fd` (close-on-exec until
    /// [`tickpack_sys::fds::keep_on_exec`] runs in the child).
    pub fn fd(&self) -> RawFd {
        self.file.as_raw_fd()
    }
}

/// The init's side: reads the environment from `fd` and closes it.
pub fn read_env_fd(fd: RawFd) -> std::io::Result<Vec<CString>> {
    // SAFETY: the supervisor passed this descriptor for the init to own;
    // nothing else in the init uses it.
    let file = unsafe { std::fs::File::from_raw_fd(fd) };
    let mut bytes = Vec::new();
    file.take(MAX_ENV_BYTES).read_to_end(&mut bytes)?;
    bytes
        .split(|&b| b == 0)
        .filter(|e| !e.is_empty())
        .map(|e| {
            if !e.contains(&b'=') {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "an environment entry without '='",
                ));
            }
            CString::new(e).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
        })
        .collect()
}

/// The `PATH` of `env` (its entries as `KEY=VALUE`), or [`DEFAULT_PATH`].
pub fn path_of(env: &[CString]) -> String {
    env.iter()
        .find_map(|e| e.to_bytes().strip_prefix(b"PATH="))
        .map_or_else(
            || DEFAULT_PATH.to_string(),
            |p| String::from_utf8_lossy(p).into_owned(),
        )
}

/// Where `execvp` would look for `program` on `path`: `program` itself
/// when it names a directory, else each `PATH` entry joined with it (an
/// empty entry is the working directory, as POSIX says).
pub fn exec_candidates(program: &str, path: &str) -> Vec<CString> {
    let join = |d: &str| {
        if d.is_empty() {
            program.to_string()
        } else {
            format!("{}/{program}", d.trim_end_matches('/'))
        }
    };
    if program.contains('/') {
        return CString::new(program).into_iter().collect();
    }
    path.split(':')
        .filter_map(|d| CString::new(join(d)).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::IntoRawFd;

    #[test]
    fn the_servers_path_is_fixed_unless_its_definition_sets_one() {
        let env = instance_env(&[("HOME".into(), "/d".into())]);
        assert_eq!(env[0], ("PATH".into(), DEFAULT_PATH.into()));
        assert_eq!(env[1], ("HOME".into(), "/d".into()));
        let own = instance_env(&[("PATH".into(), "/opt/game/bin".into())]);
        assert_eq!(own, vec![("PATH".into(), "/opt/game/bin".into())]);
    }

    #[test]
    fn an_environment_travels_through_its_file_unchanged() {
        let env = vec![
            ("PATH".to_string(), "/a:/b".to_string()),
            ("EMPTY".to_string(), String::new()),
            ("SPACES".to_string(), "a b = c".to_string()),
        ];
        let f = EnvFile::write(&env).unwrap();
        // The reader owns (and closes) its descriptor: give it a copy.
        let fd = rustix::io::dup(&f.file).unwrap().into_raw_fd();
        let back = read_env_fd(fd).unwrap();
        assert_eq!(path_of(&back), "/a:/b");
        let back: Vec<String> = back
            .iter()
            .map(|c| c.to_str().unwrap().to_string())
            .collect();
        assert_eq!(back, ["PATH=/a:/b", "EMPTY=", "SPACES=a b = c"]);
    }

    #[test]
    fn a_name_with_an_equals_sign_is_refused() {
        assert!(EnvFile::write(&[("A=B".into(), "c".into())]).is_err());
    }

    #[test]
    fn the_program_is_searched_on_the_instances_path() {
        let c = exec_candidates("srv", "/x:/y/:");
        let c: Vec<&str> = c.iter().map(|c| c.to_str().unwrap()).collect();
        assert_eq!(c, ["/x/srv", "/y/srv", "srv"]);
        let c = exec_candidates("./srv", "/x");
        assert_eq!(c[0].to_str().unwrap(), "./srv");
        assert_eq!(path_of(&[]), DEFAULT_PATH);
    }
}
