//! Which line of a TOML text defines a key: refusals found after parsing
//! (a bad value, a clash between two keys) name the line a person edits.
//!
//! A small scanner, not a TOML parser: it follows `[table]` and
//! `[[array]]` headers, a table under the array element before it
//! (`[member.rounds]` after the second `[[member]]` is
//! `member.1.rounds`) and `key = ` lines (dotted and quoted keys too),
//! which is how definition and tile files are written. What it cannot
//! place is put at its table's header, else at line 1.

/// The 1-based line that defines `path` (e.g. `["players", "protocol"]`,
/// or `["file", "1", "path"]` for the second `[[file]]`'s `path`).
pub fn line_of(text: &str, path: &[String]) -> usize {
    let mut table: Vec<String> = vec![];
    let mut arrays: Vec<(Vec<String>, usize)> = vec![];
    let mut best = (0usize, 1usize);
    let mut in_multiline = false;
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim();
        // Skip the inside of multi-line strings.
        let quotes = line.matches("\"\"\"").count() + line.matches("'''").count();
        if in_multiline {
            if quotes % 2 == 1 {
                in_multiline = false;
            }
            continue;
        }
        let here: Vec<String>;
        if let Some(h) = line.strip_prefix("[[").and_then(|l| l.split("]]").next()) {
            let name = under_element(split_key(h), &arrays);
            let idx = match arrays.iter_mut().find(|(a, _)| *a == name) {
                Some((_, i)) => {
                    *i += 1;
                    *i - 1
                }
                None => {
                    arrays.push((name.clone(), 1));
                    0
                }
            };
            table = name;
            table.push(idx.to_string());
            here = table.clone();
        } else if let Some(h) = line.strip_prefix('[').and_then(|l| l.split(']').next()) {
            table = under_element(split_key(h), &arrays);
            here = table.clone();
        } else if let Some((k, v)) = line.split_once('=').filter(|_| !line.starts_with('#')) {
            let mut p = table.clone();
            p.extend(split_key(k));
            here = p;
            if (v.matches("\"\"\"").count() + v.matches("'''").count()) % 2 == 1 {
                in_multiline = true;
            }
        } else {
            continue;
        }
        let common = here.iter().zip(path).take_while(|(a, b)| a == b).count();
        if common == here.len() && common > best.0 {
            best = (common, n + 1);
            if common == path.len() {
                return n + 1;
            }
        }
    }
    best.1
}

/// `name` with the current element's index after the longest array it
/// starts with (`member.rounds` -> `member.1.rounds` after two
/// `[[member]]`s).
fn under_element(name: Vec<String>, arrays: &[(Vec<String>, usize)]) -> Vec<String> {
    for n in (1..name.len()).rev() {
        if let Some((_, count)) = arrays.iter().find(|(a, _)| a[..] == name[..n]) {
            let mut out = name[..n].to_vec();
            out.push((count - 1).to_string());
            out.extend_from_slice(&name[n..]);
            return out;
        }
    }
    name
}

fn split_key(k: &str) -> Vec<String> {
    k.split('.')
        .map(|p| p.trim().trim_matches('"').trim_matches('\'').to_string())
        .filter(|p| !p.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str, path: &[&str]) -> usize {
        line_of(
            text,
            &path.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
        )
    }

    #[test]
    fn keys_are_found_in_tables_arrays_and_dotted_names() {
        let text = "name = \"x\"\n[tick]\nhz = 60\n\n[[file]]\npath = \"a\"\ncontents = \"\"\"\nhz = 5\n\"\"\"\n[[file]]\npath = \"b\"\nplayers.protocol = \"q3\"\n";
        assert_eq!(at(text, &["name"]), 1);
        assert_eq!(at(text, &["tick", "hz"]), 3);
        assert_eq!(at(text, &["file", "0", "path"]), 6);
        assert_eq!(at(text, &["file", "0", "contents"]), 7);
        assert_eq!(at(text, &["file", "1", "path"]), 11);
        assert_eq!(at(text, &["file", "1", "players", "protocol"]), 12);
        assert_eq!(at(text, &["tick", "min_hz"]), 2, "the table's header");
        assert_eq!(at(text, &["nothing"]), 1);
    }

    #[test]
    fn a_table_under_an_array_element_is_that_elements() {
        let text = "[[member]]\ngame = \"a\"\n[member.rounds]\nround_s = 1\n\n[[member]]\ngame = \"b\"\n[member.rounds]\nround_s = 2\n[member.qos]\np99_ms = 3\n";
        assert_eq!(at(text, &["member", "0", "rounds", "round_s"]), 4);
        assert_eq!(at(text, &["member", "1", "game"]), 7);
        assert_eq!(at(text, &["member", "1", "rounds", "round_s"]), 9);
        assert_eq!(at(text, &["member", "1", "rounds"]), 8);
        assert_eq!(at(text, &["member", "1", "qos", "p99_ms"]), 11);
        assert_eq!(
            at(text, &["member", "1", "qos", "relative"]),
            10,
            "its header"
        );
    }
}
