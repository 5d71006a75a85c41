//! The maps inside Quake 3 data files. A `.pk3` is a zip archive; a map
//! is an entry `maps/NAME.bsp`. Only the zip's central directory is read
//! (the end record, then the directory it points to), never the contents,
//! so listing a 100 MB pak reads a few kilobytes.
//!
//! [`central_directory`] and [`entry_names`] are pure (bytes in, values
//! out) and tested on archives built in the test; [`maps_in`] reads files.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

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

/// The entry names of the archive at `path`.
pub fn list(path: &Path) -> std::io::Result<Vec<String>> {
    let mut f = File::open(path)?;
    let len = f.metadata()?.len();
    let tail_len = len.min((END_LEN + MAX_COMMENT) as u64);
    f.seek(SeekFrom::Start(len - tail_len))?;
    let mut tail = vec![0; tail_len as usize];
    f.read_exact(&mut tail)?;
    let bad = || std::io::Error::new(std::io::ErrorKind::InvalidData, "not a zip archive");
    let (offset, size) = central_directory(&tail).ok_or_else(bad)?;
    if offset + size as u64 > len {
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
/// directories and archives are skipped.
pub fn maps_in(dirs: &[&Path]) -> BTreeSet<String> {
    let mut maps = BTreeSet::new();
    for dir in dirs {
        let Ok(read) = std::fs::read_dir(dir) else {
            continue;
        };
        for e in read.flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x.eq_ignore_ascii_case("pk3")) {
                if let Ok(names) = list(&p) {
                    maps.extend(names.iter().filter_map(|n| map_name(n)));
                }
            }
        }
    }
    maps
}

/// Why a run's maps cannot be played: the first item of `maps` (a
/// comma-separated list, the value of `variable`) that is in none of the
/// `*.pk3` files of `dirs`, with some that are (the items of `first`, the
/// definition's own, before the others); `None` when all are.
pub fn missing_map(
    game: &str,
    variable: &str,
    maps: &str,
    first: &str,
    dirs: &[&Path],
) -> Option<String> {
    let known = maps_in(dirs);
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
        let maps = maps_in(&[d.path(), Path::new("/nonexistent")]);
        assert_eq!(maps.into_iter().collect::<Vec<_>>(), ["arena"]);
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
