//! The definition parser takes files users write and pass to a root
//! process: whatever the text, it answers Ok or a one-line error, never a
//! panic (the same property as the `game_def` fuzz target, run here on
//! every test run).

use proptest::prelude::*;
use tickpack_game::registry::BUILT_IN;
use tickpack_game::{GameDef, GameSettings};

fn parse(text: &str) {
    match GameDef::parse("p.toml", text) {
        Ok(def) => {
            let _ = def.server_spec(&GameSettings::defaults(&def));
        }
        Err(e) => assert!(!e.to_string().contains('\n'), "{e}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn any_text_is_answered_without_a_panic(text in "\\PC{0,400}") {
        parse(&text);
    }

    #[test]
    fn a_shipped_file_cut_or_spliced_anywhere_is_answered_without_a_panic(
        which in 0..BUILT_IN.len(),
        at in any::<prop::sample::Index>(),
        len in 0usize..40,
        insert in "[\\[\\]{}=\"'\\n a-z0-9_.#-]{0,12}",
    ) {
        let text = BUILT_IN[which].1;
        let mut start = at.index(text.len());
        while !text.is_char_boundary(start) { start -= 1; }
        let mut end = (start + len).min(text.len());
        while !text.is_char_boundary(end) { end -= 1; }
        parse(&format!("{}{}{}", &text[..start], insert, &text[end..]));
    }

    /// Repetition lines, list values, counts and `[data]`, well and badly
    /// formed, parsed and then rendered with any bots and players.
    #[test]
    fn repetition_lines_and_data_are_answered_without_a_panic(
        head in "\\{for[a-z_ ]{0,14}( up to [a-z_]{0,16})?\\}?",
        body in "[{}a-z_ ;\"]{0,24}",
        list in "[a-z_,]{0,16}",
        data in "(pk3_maps = \"[a-z]{0,4}\"\n)?(pk3_dirs = \\[\"/?[a-z]{0,4}\"\\]\n)?",
        bots in 0u16..40,
        players in 0u16..40,
    ) {
        let text = format!(
            "name = \"g\"\ndescription = \"d\"\ncommand = \"/x {{port}} {{bots}}\"\nport = 1\nslots = 24\n[variables]\nmap = \"{list}\"\nnames = \"{list}\"\n[data]\n{data}[[file]]\npath = \"c\"\ncontents = \"\"\"\n{head}{body}\n\"\"\"\n[tick]\nhz = 20\n[bots]\nmax = 16\n"
        );
        match GameDef::parse("p.toml", &text) {
            Ok(def) => {
                let mut s = GameSettings::defaults(&def);
                s.bots = bots;
                s.players = players;
                if let Err(e) = def.server_spec(&s) {
                    assert!(!e.contains('\n'), "{e}");
                }
            }
            Err(e) => assert!(!e.to_string().contains('\n'), "{e}"),
        }
    }
}
