//! Repetition in a config file: a line of a `[[file]]`'s contents that
//! starts with `{for ITEM in LIST}` is written once per item of `LIST`, a
//! game variable whose value is a comma-separated list (`map =
//! "oa_dm1,oa_dm4"`): `{ITEM}` is the item, `{ITEM_index}` its 1-based
//! position and `{ITEM_next}` the next one's (the first after the last),
//! so a line can chain a map rotation. `{for ITEM in LIST up to COUNT}`
//! takes only the first `COUNT` items, `COUNT` a number the run sets
//! ([`COUNTS`]): one `addbot` line per bot from a list of bot names.
//!
//! Sans-I/O: [`for_head`] reads a line's head (the definition's check
//! refuses a bad one with its line), [`expand`] writes the lines with the
//! run's values (a list too short for its count is refused then).

use crate::names::is_var_name;

/// The run's numbers a `{for ... up to COUNT}` may take.
pub const COUNTS: [&str; 4] = ["bots", "players", "players_and_bots", "slots"];

/// The head of a repetition line and the rest of the line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForLine<'a> {
    /// `ITEM`: the name the line's body uses for each item.
    pub item: &'a str,
    /// `LIST`: the variable holding the items.
    pub list: &'a str,
    /// `COUNT`: how many of the items, when not all.
    pub count: Option<&'a str>,
    /// What is written per item (placeholders not yet filled).
    pub body: &'a str,
}

impl ForLine<'_> {
    /// The names the body may use beside the definition's: the item, its
    /// position and the next position.
    pub fn own_names(&self) -> [String; 3] {
        [
            self.item.to_string(),
            format!("{}_index", self.item),
            format!("{}_next", self.item),
        ]
    }
}

/// The repetition head of `line`, if it starts with `{for `; `Err` says
/// what is wrong with a head that does.
pub fn for_head(line: &str) -> Option<Result<ForLine<'_>, String>> {
    let rest = line.strip_prefix("{for ")?;
    let bad = || {
        Err(format!(
            "{:?}: expected {{for ITEM in LIST}} or {{for ITEM in LIST up to COUNT}} at the start of a line",
            line.chars().take(60).collect::<String>()
        ))
    };
    let Some(end) = rest.find('}') else {
        return Some(bad());
    };
    let words: Vec<&str> = rest[..end].split_whitespace().collect();
    let (item, list, count) = match words.as_slice() {
        [item, "in", list] => (*item, *list, None),
        [item, "in", list, "up", "to", count] => (*item, *list, Some(*count)),
        _ => return Some(bad()),
    };
    if !is_var_name(item) || !is_var_name(list) || count.is_some_and(|c| !is_var_name(c)) {
        return Some(bad());
    }
    Some(Ok(ForLine {
        item,
        list,
        count,
        body: &rest[end + 1..],
    }))
}

/// The `COUNT`s a text's repetition lines take (to tell that a definition
/// uses `{bots}` where only `up to bots` stands).
pub fn counts_in(text: &str) -> impl Iterator<Item = &str> + '_ {
    text.lines().filter_map(|l| for_head(l)?.ok()?.count)
}

/// `text` with every repetition line written out: `list(LIST)` gives a
/// list variable's value, `count(COUNT)` a count's; each body line is
/// then handed to `fill` (the other placeholders). Lines without a head
/// are filled as they are.
pub fn expand(
    text: &str,
    list: impl Fn(&str) -> Option<String>,
    count: impl Fn(&str) -> Option<u32>,
    fill: impl Fn(&str) -> String,
) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let Some(head) = for_head(line) else {
            out.push_str(&fill(line));
            continue;
        };
        let head = head?;
        let value = list(head.list)
            .ok_or_else(|| format!("{{for}}: {} is not a variable of the game", head.list))?;
        let mut items: Vec<&str> = value.split(',').collect();
        if items.iter().any(|i| i.is_empty()) {
            return Err(format!(
                "{} = {value:?}: a list is items separated by commas, none empty",
                head.list
            ));
        }
        if let Some(c) = head.count {
            let n = count(c).ok_or_else(|| format!("{{for}}: {c} is not a count"))?;
            if n as usize > items.len() {
                return Err(format!(
                    "{} has {} items, and {c} asks for {n} (one line each)",
                    head.list,
                    items.len()
                ));
            }
            items.truncate(n as usize);
        }
        let (body, newline) = match head.body.strip_suffix('\n') {
            Some(b) => (b, "\n"),
            None => (head.body, ""),
        };
        let [item, index, next] = head.own_names().map(|n| format!("{{{n}}}"));
        for (k, value) in items.iter().enumerate() {
            let line = body
                .replace(&index, &(k + 1).to_string())
                .replace(&next, &((k + 1) % items.len() + 1).to_string())
                .replace(&item, value);
            out.push_str(&fill(&line));
            out.push_str(newline);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(text: &str, maps: &str, bots: u32) -> Result<String, String> {
        expand(
            text,
            |l| (l == "map" || l == "names").then(|| maps.to_string()),
            |c| (c == "bots").then_some(bots),
            |l| l.replace("{x}", "X"),
        )
    }

    #[test]
    fn a_line_is_written_once_per_item_with_its_position_and_the_next() {
        let text = "a {x}\n{for m in map}set m{m_index} \"map {m} ; next m{m_next}\"\nend\n";
        assert_eq!(
            run(text, "oa_dm1,oa_dm4", 0).unwrap(),
            "a X\nset m1 \"map oa_dm1 ; next m2\"\nset m2 \"map oa_dm4 ; next m1\"\nend\n"
        );
        assert_eq!(
            run(text, "q", 0).unwrap(),
            "a X\nset m1 \"map q ; next m1\"\nend\n"
        );
    }

    #[test]
    fn up_to_a_count_takes_the_first_items_and_refuses_too_few() {
        let text = "{for b in names up to bots}addbot {b} 2 {x}\n";
        assert_eq!(run(text, "A,B,C", 0).unwrap(), "");
        assert_eq!(
            run(text, "A,B,C", 2).unwrap(),
            "addbot A 2 X\naddbot B 2 X\n"
        );
        let e = run(text, "A,B,C", 4).unwrap_err();
        assert!(
            e.contains("names has 3 items") && e.contains("bots asks for 4"),
            "{e}"
        );
        let e = run(text, "A,,C", 1).unwrap_err();
        assert!(e.contains("none empty"), "{e}");
    }

    #[test]
    fn a_bad_head_is_refused_and_other_braces_are_text() {
        for bad in [
            "{for m in}x",
            "{for m map}x",
            "{for M in map}x",
            "{for m in map up bots}x",
            "{for m in map",
        ] {
            assert!(for_head(bad).unwrap().is_err(), "{bad}");
        }
        assert!(for_head("{form}x").is_none());
        assert!(for_head(" {for m in map}x").is_none(), "only at the start");
        assert_eq!(
            counts_in("{for b in n up to bots}x\n{for m in map}y").collect::<Vec<_>>(),
            ["bots"]
        );
    }
}
