//! Games are data: no Rust outside `crates/game` names a shipped game or
//! its port.
//!
//! Every shipped definition (`games/*.toml`, read through
//! [`tickpack_game::registry::built_in`]) gives a `name` and a `port`. This
//! test walks `crates/*/src` (all crates but `crates/game`, which holds the
//! definitions and their launchers) and fails with `FILE:LINE` for every
//! line of non-test code that carries one of them.
//!
//! What counts:
//! - A game's name, case-insensitive, as a whole word (`openarena`,
//!   `OpenArena`, `openarena_players`' `openarena` all count; `arena` does
//!   not), in code, strings and comments alike. A name that is also an
//!   ordinary English word (`reference`) counts only as a whole string
//!   literal, `"reference"`: "a reference to" is prose, `"reference"` is the
//!   game.
//!   Two lines are allowed by name in [`ALLOWED`]: the cost profile called
//!   `reference` (`--cost reference`), a profile, not the game; and the
//!   game that results from before results named their game were of
//!   (`report` depends on no tickpack crate, so it cannot ask the registry).
//! - A port, as a whole number (`27960`, not `279600` or `1.27960`).
//! - Comments count too: a comment that names a game is a place a newcomer
//!   reads as "this code is about that game". The one exception is a link
//!   (a word with `://` in it), which may have to name an upstream project.
//!
//! What does not count: test code. Files named `tests.rs`, anything under a
//! `tests/` directory, every item behind `#[cfg(test)]` (an inline
//! `mod tests { .. }` is skipped to its closing brace), and the file of a
//! module declared behind it (`#[cfg(test)] mod test_support;`).

use std::fs;
use std::path::{Path, PathBuf};

/// Names that are also ordinary words: counted only as a string literal.
const ORDINARY_WORDS: &[&str] = &["reference"];

/// Lines that may keep a match: (file under crates/, text on the line, why).
const ALLOWED: &[(&str, &str, &str)] = &[
    (
        "sim/src/world/cost.rs",
        "\"reference\" | \"default\" => CostProfile::reference()",
        "the cost profile named reference (`--cost reference`), not the game",
    ),
    (
        "report/src/lib.rs",
        "pub const GAME_OF_OLDER_RESULTS: &str = \"reference\";",
        "a fact of the old result schema: results written before results \
         named their game were all of tickpack's own server, and `report` \
         depends on no tickpack crate to ask the registry its name",
    ),
];

fn workspace_crates() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("crates/game has a parent")
        .to_path_buf()
}

/// Every `.rs` file under `dir`, except `tests.rs` files and `tests/` dirs.
fn source_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if path.is_dir() {
            if name != "tests" {
                source_files(&path, out);
            }
        } else if name.ends_with(".rs") && name != "tests.rs" {
            out.push(path);
        }
    }
}

/// The lines of `text` outside `#[cfg(test)]` items, with their numbers.
fn non_test_lines(text: &str) -> Vec<(usize, &str)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut kept = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if lines[i].trim() == "#[cfg(test)]" {
            // Skip further attributes, then the item: one line ending in
            // `;`, or everything up to the brace that closes it.
            i += 1;
            while i < lines.len() && lines[i].trim_start().starts_with("#[") {
                i += 1;
            }
            let mut depth: i64 = 0;
            let mut opened = false;
            while i < lines.len() {
                for c in lines[i].chars() {
                    match c {
                        '{' => {
                            depth += 1;
                            opened = true;
                        }
                        '}' => depth -= 1,
                        _ => {}
                    }
                }
                let line = lines[i].trim_end();
                i += 1;
                if (opened && depth <= 0) || (!opened && line.ends_with(';')) {
                    break;
                }
            }
            continue;
        }
        kept.push((i + 1, lines[i]));
        i += 1;
    }
    kept
}

/// Whether `word` occurs in `hay` (already lower-case) as a word of its
/// own: no letter or digit (for a number: no digit or `.`) right before
/// or after it (`_` separates words: `openarena_players` names the game).
fn has_word(hay: &str, word: &str, numeric: bool) -> bool {
    let bytes = hay.as_bytes();
    let mut from = 0;
    while let Some(at) = hay[from..].find(word) {
        let start = from + at;
        let end = start + word.len();
        let joins = |b: u8| {
            if numeric {
                b.is_ascii_digit() || b == b'.'
            } else {
                b.is_ascii_alphanumeric()
            }
        };
        let before_ok = start == 0 || !joins(bytes[start - 1]);
        let after_ok = end == bytes.len() || !joins(bytes[end]);
        if before_ok && after_ok {
            return true;
        }
        from = start + 1;
    }
    false
}

/// `line` with every link (a word containing `://`) blanked.
fn without_links(line: &str) -> String {
    line.split(' ')
        .map(|w| if w.contains("://") { "" } else { w })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The files of the modules `file` declares behind `#[cfg(test)]`
/// (`#[cfg(test)] mod test_support;`): `NAME.rs` or `NAME/mod.rs` beside a
/// `lib.rs`, `main.rs` or `mod.rs`, else in the directory named after
/// `file`.
fn test_module_files(file: &Path, text: &str) -> Vec<PathBuf> {
    let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    let parent = file.parent().unwrap_or(Path::new("."));
    let dir = if matches!(stem, "lib" | "main" | "mod") {
        parent.to_path_buf()
    } else {
        parent.join(stem)
    };
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    let mut out = Vec::new();
    for pair in lines.windows(2) {
        let [attr, item] = pair else { continue };
        if *attr != "#[cfg(test)]" {
            continue;
        }
        let item = item.strip_prefix("pub(crate) ").unwrap_or(item);
        let item = item.strip_prefix("pub ").unwrap_or(item);
        if let Some(name) = item.strip_prefix("mod ").and_then(|r| r.strip_suffix(';')) {
            out.push(dir.join(format!("{name}.rs")));
            out.push(dir.join(name).join("mod.rs"));
        }
    }
    out
}

#[test]
fn no_rust_outside_the_game_crate_names_a_shipped_game_or_its_port() {
    let defs = tickpack_game::registry::built_in();
    assert!(!defs.is_empty(), "no shipped game definitions");
    let names: Vec<String> = defs.iter().map(|(d, _)| d.name.to_lowercase()).collect();
    let ports: Vec<String> = defs.iter().map(|(d, _)| d.port.to_string()).collect();

    let crates = workspace_crates();
    let mut files = Vec::new();
    let mut crate_dirs: Vec<_> = fs::read_dir(&crates)
        .expect("crates/ is readable")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name().is_some_and(|n| n != "game"))
        .collect();
    crate_dirs.sort();
    for dir in crate_dirs {
        source_files(&dir.join("src"), &mut files);
    }
    assert!(!files.is_empty(), "no source files found under {crates:?}");
    let test_modules: Vec<PathBuf> = files
        .iter()
        .flat_map(|f| test_module_files(f, &fs::read_to_string(f).unwrap_or_default()))
        .collect();
    files.retain(|f| !test_modules.contains(f));

    let mut hits = Vec::new();
    for file in &files {
        let text = fs::read_to_string(file).expect("a source file is readable");
        for (n, line) in non_test_lines(&text) {
            let lower = without_links(line).to_lowercase();
            let mut found: Vec<&str> = Vec::new();
            for name in &names {
                let hit = if ORDINARY_WORDS.contains(&name.as_str()) {
                    lower.contains(&format!("\"{name}\""))
                } else {
                    has_word(&lower, name, false)
                };
                if hit {
                    found.push(name);
                }
            }
            for port in &ports {
                if has_word(&lower, port, true) {
                    found.push(port);
                }
            }
            let shown = file.strip_prefix(&crates).unwrap_or(file);
            let allowed = ALLOWED
                .iter()
                .any(|(f, text, _)| shown == Path::new(f) && line.contains(text));
            if !found.is_empty() && !allowed {
                hits.push(format!(
                    "crates/{}:{n}: {} in: {}",
                    shown.display(),
                    found.join(", "),
                    line.trim()
                ));
            }
        }
    }
    for hit in &hits {
        println!("{hit}");
    }
    assert!(
        hits.is_empty(),
        "{} line(s) outside crates/game name a shipped game or its port \
         (take it from the definition, tickpack_game::registry):\n{}",
        hits.len(),
        hits.join("\n")
    );
}

#[test]
fn the_scan_skips_test_items_and_sees_the_rest() {
    let text = "fn a() {}\n#[cfg(test)]\nmod tests {\n    fn b() { \"openarena\" }\n}\nconst P: u16 = 27960;\n#[cfg(test)]\nuse x;\nfn c() {}\n";
    let kept: Vec<usize> = non_test_lines(text).into_iter().map(|(n, _)| n).collect();
    assert_eq!(kept, vec![1, 6, 9]);
    assert!(has_word("port 27960 here", "27960", true));
    assert!(!has_word("port 279601", "27960", true));
    assert!(has_word("mod openarena;", "openarena", false));
    assert!(!has_word("myopenarenax", "openarena", false));
    assert_eq!(without_links("see https://openarena.ws now"), "see  now");
    let declared = test_module_files(
        Path::new("b/src/lib.rs"),
        "#[cfg(test)]\nmod test_support;\nmod kept;\n",
    );
    assert!(declared.contains(&PathBuf::from("b/src/test_support.rs")));
    assert!(!declared.iter().any(|p| p.ends_with("kept.rs")));
    let nested = test_module_files(
        Path::new("b/src/ladder.rs"),
        "#[cfg(test)]\nmod fixtures;\n",
    );
    assert!(nested.contains(&PathBuf::from("b/src/ladder/fixtures.rs")));
}
