//! The maps inside Quake 3 data files. A `.pk3` is a zip archive; a map
//! is an entry `maps/NAME.bsp`. Only the zip's central directory is read
//! (the end record, then the directory it points to), never the contents,
//! so listing a 100 MB pak reads a few kilobytes.
//!
//! [`central_directory`] and [`entry_names`] are pure (bytes in, values
//! out) and tested on archives built in the test; [`maps_in`] reads files.
//!
//! Root reads these files, from directories a definition names, so the
//! read is bounded in every way: an archive is opened only if it is a
//! regular file (never a FIFO, whose open blocks for ever, nor a device:
//! [`tickpack_sys::user_file::open_regular`]); anything else named
//! `*.pk3` is refused with its path; a directory is read up to
//! [`MAX_ENTRIES`] entries, a central directory up to [`MAX_DIRECTORY`]
//! bytes, and the whole look up to [`MAX_LOOK`].

use std::collections::BTreeSet;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::time::{Duration, Instant};

use tickpack_sys::user_file::{open_regular, UserFileError};

/// The most entries read from one of `pk3_dirs` (a game ships tens).
pub const MAX_ENTRIES: usize = 10_000;
/// The largest central directory read (OpenArena's largest, of 1 753
/// entries, is 135 KB).
pub const MAX_DIRECTORY: usize = 16 << 20;
/// The longest the maps of all `pk3_dirs` are looked for.
pub const MAX_LOOK: Duration = Duration::from_secs(10);

/// "PK\5\6", the end of central directory record.
const END_SIGNATURE: u32 = 0x0605_4b50;
/// "PK\1\2", one central directory entry.
const ENTRY_SIGNATURE: u32 = 0x0201_4b50;
/// The end record without its comment.
const END_LEN: usize = 22;
/// The end record's comment is at most this long.
const MAX_COMMENT: usize = 0xFFFF;

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// Where the central directory is (offset from the archive's start, and
/// its length), from the archive's last bytes `tail` (up to
/// `END_LEN + MAX_COMMENT` of them). `None` if there is no end record.
pub fn central_directory(tail: &[u8]) -> Option<(u64, usize)> {
    let last = tail.len().checked_sub(END_LEN)?;
    (0..=last).rev().find_map(|at| {
        if u32_at(tail, at)? != END_SIGNATURE {
            return None;
        }
        let comment = usize::from(u16_at(tail, at + 20)?);
        if at + END_LEN + comment != tail.len() {
            return None;
        }
        let size = u32_at(tail, at + 12)? as usize;
        let offset = u64::from(u32_at(tail, at + 16)?);
        Some((offset, size))
    })
}

/// The entry names of a central directory; stops at the first entry that
/// does not parse.
pub fn entry_names(dir: &[u8]) -> Vec<String> {
    let mut names = vec![];
    let mut at = 0;
    while u32_at(dir, at) == Some(ENTRY_SIGNATURE) {
        let (Some(name), Some(extra), Some(comment)) = (
            u16_at(dir, at + 28),
            u16_at(dir, at + 30),
            u16_at(dir, at + 32),
        ) else {
            break;
        };
        let start = at + 46;
        let Some(bytes) = dir.get(start..start + usize::from(name)) else {
            break;
        };
        names.push(String::from_utf8_lossy(bytes).into_owned());
        at = start + usize::from(name) + usize::from(extra) + usize::from(comment);
    }
    names
}

/// Why an archive's entries were not listed.
#[derive(Debug)]
pub enum ListError {
    /// Not a regular file (a FIFO, a device, a directory): refused.
    NotRegular,
    /// Unreadable, or not a zip archive (or one beyond the bounds).
    Unreadable(std::io::Error),
}

/// The entry names of the archive at `path`, a regular file (anything
/// else is refused unopened).
pub fn list(path: &Path) -> Result<Vec<String>, ListError> {
    let mut f = open_regular(path).map_err(|e| match e {
        UserFileError::Io { source, .. } => ListError::Unreadable(source),
        _ => ListError::NotRegular,
    })?;
    entries_of(&mut f).map_err(ListError::Unreadable)
}

/// The entry names of the open archive `f`.
fn entries_of(f: &mut std::fs::File) -> std::io::Result<Vec<String>> {
    let len = f.metadata()?.len();
    let tail_len = len.min((END_LEN + MAX_COMMENT) as u64);
    f.seek(SeekFrom::Start(len - tail_len))?;
    let mut tail = vec![0; tail_len as usize];
    f.read_exact(&mut tail)?;
    let bad = || std::io::Error::new(std::io::ErrorKind::InvalidData, "not a zip archive");
    let (offset, size) = central_directory(&tail).ok_or_else(bad)?;
    if size > MAX_DIRECTORY || offset + size as u64 > len {
        return Err(bad());
    }
    f.seek(SeekFrom::Start(offset))?;
    let mut dir = vec![0; size];
    f.read_exact(&mut dir)?;
    Ok(entry_names(&dir))
}

/// The map name of an entry `maps/NAME.bsp` (lowercase: the engine's file
/// system ignores case in paks), else `None`.
pub fn map_name(entry: &str) -> Option<String> {
    let lower = entry.to_ascii_lowercase();
    let name = lower.strip_prefix("maps/")?.strip_suffix(".bsp")?;
    (!name.is_empty() && !name.contains('/')).then(|| name.to_string())
}

/// Every map in the `*.pk3` files of `dirs` (lowercase). Unreadable
/// directories and archives that are not zips are skipped; a `*.pk3`
/// that is not a regular file, a directory of more than [`MAX_ENTRIES`]
/// entries and a look longer than [`MAX_LOOK`] are refused, with the path.
pub fn maps_in(dirs: &[&Path]) -> Result<BTreeSet<String>, String> {
    let deadline = Instant::now() + MAX_LOOK;
    let mut maps = BTreeSet::new();
    for dir in dirs {
        // opendir opens with O_DIRECTORY: a FIFO here fails, never blocks.
        let Ok(read) = std::fs::read_dir(dir) else {
            continue;
        };
        for (n, e) in read.flatten().enumerate() {
            if n >= MAX_ENTRIES {
                return Err(format!(
                    "{}: more than {MAX_ENTRIES} entries, not a game's data directory",
                    dir.display()
                ));
            }
            let p = e.path();
            if !p.extension().is_some_and(|x| x.eq_ignore_ascii_case("pk3")) {
                continue;
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "{}: reading the *.pk3 files took more than {} s",
                    dir.display(),
                    MAX_LOOK.as_secs()
                ));
            }
            match list(&p) {
                Ok(names) => maps.extend(names.iter().filter_map(|n| map_name(n))),
                Err(ListError::NotRegular) => {
                    return Err(format!(
                        "{}: not a regular file (a *.pk3 in pk3_dirs)",
                        p.display()
                    ))
                }
                Err(ListError::Unreadable(_)) => {}
            }
        }
    }
    Ok(maps)
}

/// Why a run's maps cannot be played: the first item of `maps` (a
/// comma-separated list, the value of `variable`) that is in none of the
/// `*.pk3` files of `dirs`, with some that are (the items of `first`, the
/// definition's own, before the others), or why the files were refused
/// ([`maps_in`]); `None` when all are.
pub fn missing_map(
    game: &str,
    variable: &str,
    maps: &str,
    first: &str,
    dirs: &[&Path],
) -> Option<String> {
    let known = match maps_in(dirs) {
        Ok(known) => known,
        Err(why) => return Some(format!("{game} data: {why}")),
    };
    let m = maps
        .split(',')
        .find(|m| !known.contains(&m.to_ascii_lowercase()))?;
    let first: Vec<String> = first.split(',').map(str::to_ascii_lowercase).collect();
    let (mut some, others): (Vec<&str>, Vec<&str>) = known
        .iter()
        .map(String::as_str)
        .partition(|m| first.iter().any(|f| f == m));
    some.extend(others);
    some.truncate(6);
    Some(format!(
        "{variable} {m:?} is not in the {game} data ({}/*.pk3); some that are: {}",
        dirs.first()
            .map_or(String::new(), |d| d.display().to_string()),
        if some.is_empty() {
            "none".into()
        } else {
            some.join(", ")
        }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stored (uncompressed) zip of `files`, with `comment` on its end
    /// record, laid out as the format says (APPNOTE 4.3.6).
    fn zip(files: &[(&str, &[u8])], comment: &[u8]) -> Vec<u8> {
        let mut out = vec![];
        let mut dir = vec![];
        for (name, data) in files {
            let offset = out.len() as u32;
            out.extend_from_slice(&0x0403_4b50u32.to_le_bytes());
            out.extend_from_slice(&[20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
            out.extend_from_slice(&(data.len() as u32).to_le_bytes());
            out.extend_from_slice(&(data.len() as u32).to_le_bytes());
            out.extend_from_slice(&(name.len() as u16).to_le_bytes());
            out.extend_from_slice(&0u16.to_le_bytes());
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(data);
            dir.extend_from_slice(&ENTRY_SIGNATURE.to_le_bytes());
            dir.extend_from_slice(&[20, 0, 20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
            dir.extend_from_slice(&(data.len() as u32).to_le_bytes());
            dir.extend_from_slice(&(data.len() as u32).to_le_bytes());
            dir.extend_from_slice(&(name.len() as u16).to_le_bytes());
            dir.extend_from_slice(&[0; 12]); // extra, comment, disk, attributes
            dir.extend_from_slice(&offset.to_le_bytes());
            dir.extend_from_slice(name.as_bytes());
        }
        let dir_at = out.len() as u32;
        out.extend_from_slice(&dir);
        out.extend_from_slice(&END_SIGNATURE.to_le_bytes());
        out.extend_from_slice(&[0, 0, 0, 0]);
        out.extend_from_slice(&(files.len() as u16).to_le_bytes());
        out.extend_from_slice(&(files.len() as u16).to_le_bytes());
        out.extend_from_slice(&(dir.len() as u32).to_le_bytes());
        out.extend_from_slice(&dir_at.to_le_bytes());
        out.extend_from_slice(&(comment.len() as u16).to_le_bytes());
        out.extend_from_slice(comment);
        out
    }

    #[test]
    fn the_maps_of_an_archive_are_listed_from_its_central_directory() {
        let files: [(&str, &[u8]); 4] = [
            ("maps/oa_dm1.bsp", b"IBSP"),
            ("maps/oa_dm1.aas", b"x"),
            ("Maps/CTF_Gate1.BSP", b"IBSP"),
            ("textures/a.tga", b"yy"),
        ];
        for comment in [&b""[..], b"a comment with PK\x05\x06 inside"] {
            let z = zip(&files, comment);
            let (at, len) = central_directory(&z).expect("end record");
            let names = entry_names(&z[at as usize..at as usize + len]);
            assert_eq!(names.len(), 4, "{names:?}");
            let maps: Vec<_> = names.iter().filter_map(|n| map_name(n)).collect();
            assert_eq!(maps, ["oa_dm1", "ctf_gate1"]);
        }
    }

    #[test]
    fn maps_are_found_in_pk3_files_of_a_directory() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(
            d.path().join("pak9.pk3"),
            zip(&[("maps/arena.bsp", b"IBSP")], b""),
        )
        .unwrap();
        std::fs::write(d.path().join("notes.txt"), b"maps/no.bsp").unwrap();
        std::fs::write(d.path().join("broken.pk3"), b"not a zip").unwrap();
        let maps = maps_in(&[d.path(), Path::new("/nonexistent")]).unwrap();
        assert_eq!(maps.into_iter().collect::<Vec<_>>(), ["arena"]);
    }

    /// Issue 38: a FIFO named `*.pk3` in `pk3_dirs` hung `host up` in
    /// `openat` for ever. It is refused at once, with its path.
    #[test]
    fn a_fifo_in_pk3_dirs_hung_host_up_in_openat() {
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join("maps.pk3");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo with a valid C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let dir = d.path().to_path_buf();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(maps_in(&[dir.as_path()]));
        });
        let got = rx.recv_timeout(std::time::Duration::from_secs(10));
        if got.is_err() {
            // Unblock the reader stuck in open(2) before failing.
            let _ = std::fs::OpenOptions::new().write(true).open(&fifo);
        }
        let e = got
            .expect("maps_in returned within 10 s")
            .expect_err("a FIFO is refused");
        assert!(
            e.contains(fifo.to_str().unwrap()) && e.contains("not a regular file"),
            "{e}"
        );
    }

    #[test]
    fn truncated_or_foreign_bytes_list_nothing() {
        let z = zip(&[("maps/a.bsp", b"IBSP")], b"");
        for cut in 0..z.len() {
            if let Some((at, len)) = central_directory(&z[..cut]) {
                let _ = entry_names(z.get(at as usize..at as usize + len).unwrap_or(&[]));
            }
            let _ = entry_names(&z[cut..]);
        }
        assert_eq!(central_directory(b"short"), None);
        assert_eq!(map_name("maps/.bsp"), None);
        assert_eq!(map_name("maps/sub/x.bsp"), None);
        assert_eq!(map_name("levelshots/x.bsp"), None);
    }
}
