//! Reading a file a user named (`--config`, a result for `report`,
//! `--targets-file`): only a regular file, only up to a size, so
//! `/dev/zero`, a FIFO or a huge file is refused before it is read instead
//! of growing the process. Opened with `O_NONBLOCK` so a FIFO cannot hang
//! the open; the check is made on the opened file (`fstat`), not the path.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// The largest config or list file read: far beyond any real one.
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;
/// The largest result document read (histograms of a long bench).
pub const MAX_RESULT_BYTES: u64 = 256 << 20;

/// Why a user's file was not read. The messages never quote the file.
#[derive(Debug, thiserror::Error)]
pub enum UserFileError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: not a regular file")]
    NotRegular { path: String },
    #[error("{path}: larger than {max} bytes")]
    TooLarge { path: String, max: u64 },
    #[error("{path}: not UTF-8 text")]
    NotText { path: String },
}

/// The bytes of the regular file `path`, refused if it is anything else
/// (a device, a FIFO, a directory) or holds more than `max` bytes.
pub fn read_bytes(path: &Path, max: u64) -> Result<Vec<u8>, UserFileError> {
    let shown = || path.display().to_string();
    let io = |source| UserFileError::Io {
        path: shown(),
        source,
    };
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    if !meta.is_file() {
        return Err(UserFileError::NotRegular { path: shown() });
    }
    if meta.len() > max {
        return Err(UserFileError::TooLarge { path: shown(), max });
    }
    read_bounded(file, max).map_err(|e| match e {
        Bounded::Io(source) => UserFileError::Io {
            path: shown(),
            source,
        },
        Bounded::TooLarge => UserFileError::TooLarge { path: shown(), max },
    })
}

/// [`read_bytes`] as UTF-8 text.
pub fn read_text(path: &Path, max: u64) -> Result<String, UserFileError> {
    String::from_utf8(read_bytes(path, max)?).map_err(|_| UserFileError::NotText {
        path: path.display().to_string(),
    })
}

/// Why [`read_bounded`] stopped.
#[derive(Debug)]
pub enum Bounded {
    Io(std::io::Error),
    /// More than the limit came (a file that grew, a stream).
    TooLarge,
}

/// Reads at most `max` bytes of `r` (a stream such as stdin too); more is
/// an error, not a silent cut.
pub fn read_bounded(r: impl Read, max: u64) -> Result<Vec<u8>, Bounded> {
    let mut bytes = vec![];
    r.take(max.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(Bounded::Io)?;
    if bytes.len() as u64 > max {
        return Err(Bounded::TooLarge);
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_fifos_directories_and_big_files_are_refused_unread() {
        let dir = std::env::temp_dir().join(format!("tp-sys-user-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for p in ["/dev/zero", "/dev/null"] {
            let e = read_bytes(Path::new(p), MAX_CONFIG_BYTES).unwrap_err();
            assert!(matches!(e, UserFileError::NotRegular { .. }), "{p}: {e}");
        }
        let e = read_bytes(&dir, MAX_CONFIG_BYTES).unwrap_err();
        assert!(matches!(e, UserFileError::NotRegular { .. }), "{e}");
        let fifo = dir.join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo with a valid C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = read_bytes(&fifo, MAX_CONFIG_BYTES).unwrap_err();
        assert!(matches!(e, UserFileError::NotRegular { .. }), "{e}");
        let big = dir.join("big");
        std::fs::write(&big, vec![b'#'; 2000]).unwrap();
        let e = read_text(&big, 1000).unwrap_err().to_string();
        assert!(e.contains("larger than 1000 bytes"), "{e}");
        assert_eq!(read_text(&big, 2000).unwrap().len(), 2000);
        let bin = dir.join("bin");
        std::fs::write(&bin, [0xff, 0xfe]).unwrap();
        assert!(matches!(
            read_text(&bin, 10),
            Err(UserFileError::NotText { .. })
        ));
        assert!(read_text(&dir.join("missing"), 10)
            .unwrap_err()
            .to_string()
            .contains("missing"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_stream_is_read_up_to_its_limit() {
        assert_eq!(read_bounded(&b"abc"[..], 3).unwrap(), b"abc");
        assert!(matches!(
            read_bounded(std::io::repeat(0), 1000),
            Err(Bounded::TooLarge)
        ));
    }
}
