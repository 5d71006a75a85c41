//! What a server says about itself in a query answer, the same for every
//! protocol: [`Facts`] and, for answers that list them (`getstatus`), each
//! [`Player`].
//!
//! This is the game crate's own type: the result schema
//! (`tickpack_report::probe::ServerFacts`) and the host's status keep their
//! own shapes and convert where they take it, so this crate depends on no
//! report.

/// What one answer said.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Facts {
    /// The server's name (`hostname`, or ioq3's `sv_hostname` in
    /// `getstatus`; A2S: its name field).
    pub name: String,
    pub map: String,
    /// Clients, humans and bots together.
    pub players: u32,
    pub max_players: u32,
    /// Bots among `players`; `None` when the answer does not say (ioq3's
    /// `getstatus`, an ioq3 older than 1.36 without `g_humanplayers`).
    pub bots: Option<u32>,
    /// The clients listed one by one (`getstatus` only; `None` for answers
    /// that carry only counts).
    pub roster: Option<Vec<Player>>,
}

impl Facts {
    /// Humans: `players` less `bots`, when the bots are known.
    pub fn humans(&self) -> Option<u32> {
        self.bots.map(|b| self.players.saturating_sub(b))
    }
}

/// One client line of a `getstatus` answer.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Player {
    /// As the server wrote it, colour codes included.
    pub name: String,
    pub score: i32,
    /// The server's own ping for this client, ms (ioq3: 999 while
    /// connecting; bots 0 in ioq3 and DarkPlaces).
    pub ping: i32,
}

impl Player {
    /// The name without its colour codes ([`strip_colors`]).
    pub fn clean_name(&self) -> String {
        strip_colors(&self.name)
    }
}

/// A Quake III name without its colour codes (`^1Red` is `Red`), as ioq3's
/// `Q_CleanStr` cleans it: a caret followed by anything but another caret
/// or the end starts a two-character code.
pub fn strip_colors(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut it = name.chars().peekable();
    while let Some(c) = it.next() {
        if c == '^' && it.peek().is_some_and(|n| *n != '^') {
            it.next();
            continue;
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_codes_are_stripped_as_ioq3_strips_them() {
        assert_eq!(strip_colors("^1R^7ed"), "Red");
        // ioq3's Q_CleanStr: a caret before a caret is kept, the second
        // caret starts a colour code.
        assert_eq!(strip_colors("a^^b"), "a^");
        assert_eq!(strip_colors("end^"), "end^");
    }

    #[test]
    fn humans_are_the_players_less_the_bots_when_those_are_known() {
        let mut f = Facts {
            players: 5,
            bots: Some(3),
            ..Facts::default()
        };
        assert_eq!(f.humans(), Some(2));
        f.bots = Some(9);
        assert_eq!(f.humans(), Some(0), "never below zero");
        f.bots = None;
        assert_eq!(f.humans(), None);
    }
}
