//! The rule for files tickpack writes below a directory it gives away (a
//! game definition's or a host file's `[[file]]`): plainly inside it, short,
//! and checked as a set, so a bad one is refused when the file is read, not
//! when an instance starts.

use std::path::{Component, Path};

/// The longest path accepted, in bytes.
pub const MAX_PATH_LEN: usize = 200;
/// The most parts (directories and the file) a path may have.
pub const MAX_PARTS: usize = 8;

/// Fails unless `p` is a relative path of plain parts (no `/` at the
/// start, no `..` or `.`), at most [`MAX_PARTS`] parts and
/// [`MAX_PATH_LEN`] bytes, without control characters (NUL among them) or
/// backslashes. The message quotes at most 60 characters of it, escaped.
pub fn check_relative_file(p: &str) -> Result<(), String> {
    // Split on `/` by hand: `Path::components` folds `a/./b` and `a//b`
    // into `a/b`, which let such paths through.
    let parts: Vec<&str> = p.split('/').collect();
    let plain = !p.is_empty()
        && p.len() <= MAX_PATH_LEN
        && !p.chars().any(|c| c.is_control() || c == '\\')
        && parts.len() <= MAX_PARTS
        && parts.iter().all(|s| !matches!(*s, "" | "." | ".."))
        && Path::new(p)
            .components()
            .all(|c| matches!(c, Component::Normal(_)));
    if plain {
        Ok(())
    } else {
        Err(format!(
            "file path \"{}\": expected a relative path inside the instance's directory (at most {MAX_PARTS} parts and {MAX_PATH_LEN} characters; no /, .. or ., no control characters)",
            crate::text::escape(p, 60)
        ))
    }
}

/// Checks every path with [`check_relative_file`] and the paths as a set:
/// no two the same, none inside another (a file cannot also be a
/// directory). On error, the index of the path to blame and why.
pub fn check_file_set<'a>(paths: impl IntoIterator<Item = &'a str>) -> Result<(), (usize, String)> {
    let mut seen: Vec<&Path> = vec![];
    for (k, p) in paths.into_iter().enumerate() {
        check_relative_file(p).map_err(|m| (k, m))?;
        let path = Path::new(p);
        if let Some(other) = seen
            .iter()
            .find(|o| path.starts_with(o) || o.starts_with(path))
        {
            return Err((
                k,
                format!(
                    "file \"{}\": clashes with file \"{}\" (the same path, or one inside the other)",
                    crate::text::escape(p, 60),
                    crate::text::escape(&other.display().to_string(), 60)
                ),
            ));
        }
        seen.push(path);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 30, finding 5: `cfg/./x` and `cfg//x` were taken for `cfg/x`
    /// (the standard library folds them), though the rule says no `.`.
    #[test]
    fn a_file_path_with_a_dot_or_an_empty_part_was_accepted() {
        for bad in ["cfg/./x", "cfg//x", "cfg/x/", "cfg/."] {
            assert!(check_relative_file(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn only_plain_short_relative_paths_pass() {
        for ok in ["server.cfg", "baseq3/server.cfg", "a/b/c/d/e/f/g/h"] {
            assert_eq!(check_relative_file(ok), Ok(()), "{ok}");
        }
        let long = "x".repeat(5000);
        for bad in [
            "",
            "/etc/passwd",
            "../x",
            "a/../../x",
            "./x",
            "a\0b",
            "a\nb",
            "a\\b",
            "a/b/c/d/e/f/g/h/i",
            long.as_str(),
        ] {
            let e = check_relative_file(bad).unwrap_err();
            assert!(e.len() < 300, "bounded: {e}");
            assert!(!e.contains('\0') && !e.contains('\n'), "escaped: {e}");
        }
    }

    #[test]
    fn duplicate_and_nested_paths_are_refused_as_a_set() {
        assert_eq!(check_file_set(["a.cfg", "b/a.cfg", "b/c.cfg"]), Ok(()));
        // The same path spelled twice.
        assert!(check_file_set(["b/a.cfg", "b/./a.cfg"]).is_err());
        let (k, e) = check_file_set(["a.cfg", "b.cfg", "a.cfg"]).unwrap_err();
        assert_eq!(k, 2);
        assert!(e.contains("clashes"), "{e}");
        let (k, e) = check_file_set(["cfg", "cfg/server.cfg"]).unwrap_err();
        assert_eq!(k, 1);
        assert!(e.contains("clashes"), "{e}");
        let (k, _) = check_file_set(["dir/x", "dir"]).unwrap_err();
        assert_eq!(k, 1);
    }
}
