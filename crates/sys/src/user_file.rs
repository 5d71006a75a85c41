//! Reading a file a user named (`--config`, a result for `report`,
//! `--targets-file`, a game definition and the `*.pk3` of its `pk3_dirs`):
//! only a regular file, only up to a size, so `/dev/zero`, a FIFO or a
//! huge file is refused before it is read instead of growing the process.
//!
//! [`open_regular`] never opens anything but a regular file: the path is
//! first opened with `O_PATH` (which opens nothing: a FIFO cannot block
//! it, a device's driver is not called), checked on that descriptor
//! (`fstat`, not the path, so it cannot be swapped in between), and only
//! then reopened for reading through `/proc/self/fd`, which reaches the
//! same inode, with `O_NONBLOCK`.

use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
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

/// `path` open for reading if it is a regular file (a link to one is
/// followed); anything else (a device, a FIFO, a socket, a directory) is
/// refused without being opened. See the module's header.
pub fn open_regular(path: &Path) -> Result<std::fs::File, UserFileError> {
    let shown = || path.display().to_string();
    let io = |source| UserFileError::Io {
        path: shown(),
        source,
    };
    let handle = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH)
        .open(path)
        .map_err(io)?;
    let seen = handle.metadata().map_err(io)?;
    if !seen.is_file() {
        return Err(UserFileError::NotRegular { path: shown() });
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(format!("/proc/self/fd/{}", handle.as_raw_fd()))
        .map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    if !meta.is_file() || (meta.dev(), meta.ino()) != (seen.dev(), seen.ino()) {
        return Err(UserFileError::NotRegular { path: shown() });
    }
    Ok(file)
}

/// The bytes of the regular file `path`, refused if it is anything else
/// (a device, a FIFO, a directory) or holds more than `max` bytes.
pub fn read_bytes(path: &Path, max: u64) -> Result<Vec<u8>, UserFileError> {
    let shown = || path.display().to_string();
    let io = |source| UserFileError::Io {
        path: shown(),
        source,
    };
    let file = open_regular(path)?;
    let meta = file.metadata().map_err(io)?;
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

    fn mkfifo(path: &Path) {
        use rustix::fs::{mknodat, FileType, Mode, CWD};
        mknodat(CWD, path, FileType::Fifo, Mode::from_raw_mode(0o600), 0).unwrap();
    }

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
        mkfifo(&fifo);
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
    fn a_link_to_a_regular_file_is_followed_and_a_fifo_never_opened() {
        let dir = std::env::temp_dir().join(format!("tp-sys-open-regular-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("real"), b"data").unwrap();
        std::os::unix::fs::symlink(dir.join("real"), dir.join("link")).unwrap();
        let mut text = String::new();
        open_regular(&dir.join("link"))
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        assert_eq!(text, "data");
        let fifo = dir.join("fifo");
        mkfifo(&fifo);
        std::os::unix::fs::symlink(&fifo, dir.join("to-fifo")).unwrap();
        for p in [&fifo, &dir.join("to-fifo"), &dir, Path::new("/dev/null")] {
            let e = open_regular(p).unwrap_err();
            assert!(matches!(e, UserFileError::NotRegular { .. }), "{e}");
            assert!(e.to_string().contains(p.to_str().unwrap()), "{e}");
        }
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
