//! The names and values a definition may use, and the placeholders in a
//! text: the lowest layer of the definition format, read by the parser
//! ([`crate::validate`]), the settings ([`crate::settings`]) and the
//! repetition lines ([`crate::template`]).

/// The longest value of a game variable (`{map}` and the like).
pub const MAX_VALUE_LEN: usize = 128;

/// `{name}` pieces of a text: only `{` + an identifier + `}` is a
/// placeholder; other braces are text.
pub(crate) fn placeholders_in(text: &str) -> impl Iterator<Item = (usize, &str)> + '_ {
    text.match_indices('{').filter_map(move |(i, _)| {
        let rest = &text[i + 1..];
        let end = rest.find('}')?;
        let name = &rest[..end];
        is_var_name(name).then_some((i, name))
    })
}

pub(crate) fn check_placeholders(text: &str, known: &[&str]) -> Result<(), String> {
    match placeholders_in(text).find(|(_, n)| !known.contains(n)) {
        Some((_, n)) => Err(format!(
            "unknown placeholder {{{n}}} (known: {}; add it to [variables] to define it)",
            known
                .iter()
                .map(|k| format!("{{{k}}}"))
                .collect::<Vec<_>>()
                .join(" ")
        )),
        None => Ok(()),
    }
}

/// A value a run puts into a command word or a config line: one word,
/// printable, no quotes, `;` or braces (they would start another command
/// or placeholder in the game's config language).
pub fn check_value(name: &str, value: &str) -> Result<(), String> {
    let ok = !value.is_empty()
        && value.len() <= MAX_VALUE_LEN
        && !value.starts_with('+')
        && !value.starts_with('-')
        && value.chars().all(|c| {
            c.is_ascii_graphic() && !matches!(c, '"' | '\'' | ';' | '{' | '}' | '\\' | '$' | '`')
        });
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{name} = {:?}: a value is one word of 1-{MAX_VALUE_LEN} printable characters, without quotes, ; \\ $ ` or braces, not starting with + or -",
            value.chars().take(40).collect::<String>()
        ))
    }
}

/// Whether `s` is a name (a game's, a tile member's): 1-32 lower-case
/// letters, digits, `-` and `_`, starting with a letter or digit.
pub fn is_name(s: &str) -> bool {
    (1..=32).contains(&s.len())
        && s.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
}

pub(crate) fn is_var_name(s: &str) -> bool {
    (1..=32).contains(&s.len())
        && s.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

pub(crate) fn is_package(s: &str) -> bool {
    (2..=64).contains(&s.len())
        && s.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '+' | '-' | '.'))
}
