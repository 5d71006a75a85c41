//! Where a definition comes from: `--game NAME|FILE` (and `game =` in a
//! fleet file) as a checked [`GameDef`]. The crate's one piece of I/O: a
//! user's file is read only if it is a regular file of at most
//! [`MAX_DEF_BYTES`], as UTF-8 text; its contents are never quoted in an
//! error unless they parsed as TOML (a refusal names the line).

use std::io::Read;
use std::path::Path;

use crate::def::{DefError, GameDef, MAX_DEF_BYTES};
use crate::registry::{self, Source};

/// The text of `arg` (a built-in name or a file's path), the name errors
/// call it by, and where it came from.
pub fn read(arg: &str) -> Result<(String, String, Source), DefError> {
    if !registry::is_path(arg) {
        let (_, source) = registry::by_name(arg)?;
        let Source::BuiltIn(file) = source else {
            unreachable!("the registry holds built-in files")
        };
        let text = registry::BUILT_IN
            .iter()
            .find(|(f, _)| *f == file)
            .map_or("", |(_, t)| t);
        return Ok((text.to_string(), file.to_string(), source));
    }
    let refuse = |why: String| DefError {
        file: arg.to_string(),
        line: 0,
        message: why,
    };
    // Never opened unless a regular file: a FIFO named here hung the
    // open for ever.
    let file = tickpack_sys::user_file::open_regular(Path::new(arg)).map_err(|e| match e {
        tickpack_sys::user_file::UserFileError::NotRegular { .. } => {
            refuse("not a regular file".into())
        }
        tickpack_sys::user_file::UserFileError::Io { source, .. } => refuse(source.to_string()),
        other => refuse(other.to_string()),
    })?;
    let meta = file.metadata().map_err(|e| refuse(e.to_string()))?;
    if meta.len() > MAX_DEF_BYTES {
        return Err(refuse(format!(
            "larger than {MAX_DEF_BYTES} bytes: not a game definition"
        )));
    }
    let mut bytes = vec![];
    file.take(MAX_DEF_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| refuse(e.to_string()))?;
    let text = String::from_utf8(bytes).map_err(|_| refuse("not UTF-8 text".into()))?;
    Ok((text, arg.to_string(), Source::File(arg.to_string())))
}

/// `arg` as a checked definition.
pub fn load(arg: &str) -> Result<(GameDef, Source), DefError> {
    let (text, name, source) = read(arg)?;
    Ok((GameDef::parse(&name, &text)?, source))
}

/// Why the game cannot run on this machine (its program, an absolute
/// path, is missing), with what to install; `None` when it can.
pub fn missing_program(def: &GameDef) -> Option<String> {
    let program = def.program();
    if !program.starts_with('/') || Path::new(program).is_file() {
        return None;
    }
    Some(if def.packages.is_empty() {
        format!("{} is not installed ({program} is missing)", def.name)
    } else {
        format!(
            "{} is not installed ({program} is missing): apt-get install {} (or run scripts/setup.sh)",
            def.name,
            def.packages.join(" ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_small_regular_utf8_file_is_read() {
        let dir = std::env::temp_dir().join(format!("tp-game-source-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let d = dir.display().to_string();
        let e = load(&format!("{d}/")).unwrap_err().to_string();
        assert!(e.contains("not a regular file"), "{e}");
        let big = dir.join("big.toml");
        std::fs::write(&big, vec![b'#'; 70_000]).unwrap();
        let e = load(big.to_str().unwrap()).unwrap_err().to_string();
        assert!(e.contains("larger than"), "{e}");
        let bin = dir.join("bin.toml");
        std::fs::write(&bin, [0xff, 0xfe, 0]).unwrap();
        let e = load(bin.to_str().unwrap()).unwrap_err().to_string();
        assert!(e.contains("not UTF-8"), "{e}");
        let e = load("/dev/zero").unwrap_err().to_string();
        assert!(e.contains("not a regular file"), "{e}");
        let e = load(&format!("{d}/missing.toml")).unwrap_err().to_string();
        assert!(e.contains("missing.toml"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
        let (def, source) = load("nexuiz").unwrap();
        assert_eq!(def.name, "nexuiz");
        assert_eq!(source, Source::BuiltIn("games/nexuiz.toml"));
    }
}
