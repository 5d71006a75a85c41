//! The table of ladders: one row per ladder with its densities and why it
//! stopped.

use std::fmt::Write as _;

use crate::bench::BenchResult;

use super::format::{esc, ladder_max, or_na, servers, NA};

pub(super) fn ladders_table(out: &mut String, r: &BenchResult) {
    out.push_str("<h3>Ladders</h3>\n");
    if r.ladders.is_empty() {
        out.push_str("<p class=\"na\">No ladder ran.</p>\n");
        return;
    }
    let repeated = r.ladders.iter().any(|l| l.repetition() > 1);
    let games = r.ladders.iter().any(|l| l.game.is_some());
    w!(
        out,
        "<div class=\"scroll\"><table>\n<tr><th>Ladder</th>{}{}<th>Backend</th><th>Network</th>\
         <th>Placement</th><th class=\"num\">Steps</th><th class=\"num\">Recommended</th>\
         <th class=\"num\">Maximum</th><th>Stopped because</th></tr>\n",
        if repeated {
            "<th class=\"num\">Repetition</th>"
        } else {
            ""
        },
        if games { "<th>Game</th>" } else { "" },
    );
    for ladder in &r.ladders {
        let rep = if repeated {
            format!("<td class=\"num\">{}</td>", ladder.repetition())
        } else {
            String::new()
        };
        let game = match &ladder.game {
            Some(g) if games => format!(
                "<td>{}: {} players + {} bots per server, {} Hz</td>",
                esc(&g.game),
                g.players_per_server,
                g.bots_per_server,
                g.tick_hz
            ),
            None if games => format!("<td>{}</td>", esc(&r.settings.game)),
            _ => String::new(),
        };
        w!(
            out,
            "<tr><td>{}</td>{rep}{game}<td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>\n",
            esc(&ladder.label),
            or_na(&ladder.backend),
            ladder.net.as_deref().map_or(NA.into(), esc),
            or_na(&ladder.placement),
            ladder.steps.len(),
            servers(ladder.recommended_servers),
            ladder_max(ladder),
            or_na(&ladder.stopped)
        );
    }
    out.push_str("</table></div>\n");
}
