//! Reading a definition file: [`GameDef::parse`] (TOML, unknown keys are
//! errors) and the check of the definition as a whole, every refusal one
//! line, `FILE:LINE: what is wrong` ([`DefError`]).

use tickpack_wire::TickRate;

use crate::check::Ready;
use crate::console::PASSWORD_PLACEHOLDER;
use crate::def::*;
use crate::gamedig::GamedigProtocol;
use crate::lines::line_of;
use crate::names::{check_placeholders, check_value, is_name, is_package, is_var_name};
use crate::template::{for_head, COUNTS};

/// Where a problem is: a key path such as `["players", "protocol"]` or
/// `["file", "1", "path"]` (the second `[[file]]`).
type KeyPath = Vec<String>;

fn key(parts: &[&str]) -> KeyPath {
    parts.iter().map(|p| p.to_string()).collect()
}

impl GameDef {
    /// Reads and checks a definition's text; `file` names it in errors.
    pub fn parse(file: &str, text: &str) -> Result<GameDef, DefError> {
        let err = |line: usize, message: String| DefError {
            file: file.to_string(),
            line,
            message,
        };
        if text.len() as u64 > MAX_DEF_BYTES {
            return Err(err(
                1,
                format!("the file is larger than {MAX_DEF_BYTES} bytes"),
            ));
        }
        let def: GameDef = toml::from_str(text).map_err(|e| {
            let line = e.span().map_or(1, |s| {
                text[..s.start.min(text.len())].matches('\n').count() + 1
            });
            err(line, e.message().trim().replace('\n', " "))
        })?;
        def.check()
            .map_err(|(path, message)| err(line_of(text, &path), message))?;
        Ok(def)
    }

    /// Checks the definition as a whole: names, ranges, placeholders,
    /// paths, and that every setting it claims can be made.
    fn check(&self) -> Result<(), (KeyPath, String)> {
        if !is_name(&self.name) {
            return Err((
                key(&["name"]),
                format!(
                    "name {:?}: expected 1-32 lower-case letters, digits, - and _",
                    self.name
                ),
            ));
        }
        if self.description.is_empty()
            || self.description.len() > 160
            || self.description.chars().any(char::is_control)
        {
            return Err((
                key(&["description"]),
                "description: one line of 1-160 characters".into(),
            ));
        }
        if let Some(p) = self.packages.iter().find(|p| !is_package(p)) {
            return Err((
                key(&["packages"]),
                format!("package {p:?}: not a Debian package name"),
            ));
        }
        let known = self.placeholders();
        let words: Vec<&str> = self.command.split_whitespace().collect();
        if words.is_empty() {
            return Err((key(&["command"]), "command is empty".into()));
        }
        self.check_rcon()?;
        check_placeholders(&self.command, &known).map_err(|m| (key(&["command"]), m))?;
        for (k, v) in &self.env {
            crate::env_name::check_env_name(k).map_err(|m| (key(&["env", k]), m))?;
            check_placeholders(v, &known).map_err(|m| (key(&["env", k]), m))?;
        }
        if self.port == 0 {
            return Err((key(&["port"]), "port must be 1..=65535".into()));
        }
        if self.slots == 0 || self.slots > 1024 {
            return Err((key(&["slots"]), "slots must be 1..=1024".into()));
        }
        if let Some(h) = self.players.snapshot_hz {
            if h == 0 || h > self.tick.hz.hz() {
                return Err((
                    key(&["players", "snapshot_hz"]),
                    format!("snapshot_hz must be 1..={} (the tick rate)", self.tick.hz),
                ));
            }
        }
        if let Some(l) = &self.load {
            check_load_command(&l.command).map_err(|m| (key(&["load", "command"]), m))?;
            if l.players > 1024 {
                return Err((key(&["load", "players"]), "players must be 0..=1024".into()));
            }
        }
        for (k, v) in &self.variables {
            if !is_var_name(k) {
                return Err((
                    key(&["variables", k]),
                    format!("variable {k:?}: expected lower-case letters, digits and _"),
                ));
            }
            if INSTANCE_PLACEHOLDERS.contains(&k.as_str())
                || GAME_PLACEHOLDERS.contains(&k.as_str())
            {
                return Err((
                    key(&["variables", k]),
                    format!("variable {k:?}: tickpack fills {{{k}}} itself"),
                ));
            }
            check_value(k, v).map_err(|m| (key(&["variables", k]), m))?;
        }
        let uses = |name: &str| self.uses(name);
        let t = &self.tick;
        let (min, max) = self.tick_range();
        if min > max || !(min..=max).contains(&t.hz) || max.hz() > TickRate::SERVER_MAX_HZ {
            return Err((key(&["tick", "hz"]),
                format!("tick: expected 1 <= min_hz <= hz <= max_hz <= 1000, got hz {} in {min}..={max}", t.hz),
            ));
        }
        if (t.min_hz.is_some() || t.max_hz.is_some())
            && min != max
            && !uses("tick_hz")
            && !uses("tick_interval_s")
        {
            return Err((key(&["tick"]),
                "tick: a range of rates needs {tick_hz} or {tick_interval_s} in the command or a file (how the rate is set)".into(),
            ));
        }
        let bots_max = self.bots_max();
        if self.bots.default > bots_max {
            return Err((
                key(&["bots", "default"]),
                format!(
                    "bots: default {} is above the most ({bots_max})",
                    self.bots.default
                ),
            ));
        }
        if bots_max > 0 && !uses("bots") {
            return Err((key(&["bots"]),
                "bots: put {bots} in the command or a file (how bots are asked for), or set max = 0".into(),
            ));
        }
        match (self.query.protocol, &self.query.gamedig) {
            (QueryProtocol::Gamedig, None) => {
                return Err((
                    key(&["query", "protocol"]),
                    format!(
                        "query: protocol \"gamedig\" needs gamedig = \"NAME\", one of: {}",
                        GamedigProtocol::known()
                    ),
                ))
            }
            (QueryProtocol::Gamedig, Some(name)) => {
                name.parse::<GamedigProtocol>()
                    .map_err(|m| (key(&["query", "gamedig"]), format!("query: {m}")))?;
            }
            (_, Some(_)) => {
                return Err((
                    key(&["query", "gamedig"]),
                    "query: gamedig = ... goes with protocol = \"gamedig\"".into(),
                ))
            }
            (_, None) => {}
        }
        if self.ready.by == Some(ReadyBy::Query) && self.query.protocol == QueryProtocol::Gamedig {
            return Err((
                key(&["ready", "by"]),
                "ready.by = \"query\": the host checks gamedig games by their process only (for now); leave ready.by out or set \"process\"".into(),
            ));
        }
        if self.ready.by == Some(ReadyBy::Query) && self.query.protocol == QueryProtocol::None {
            return Err((
                key(&["ready", "by"]),
                "ready.by = \"query\" needs a [query] protocol".into(),
            ));
        }
        match (self.ready.by, &self.ready.log) {
            (Some(ReadyBy::Log), None) => {
                return Err((
                    key(&["ready", "by"]),
                    "ready.by = \"log\" needs ready.log, a piece of the line that says the server is ready".into(),
                ))
            }
            (Some(ReadyBy::Log), Some(l)) => {
                Ready::check_log(l).map_err(|m| (key(&["ready", "log"]), m))?;
                // Filled per instance, as in the command ("Bound socket
                // to {ip}:{port}"); never the rcon password (the line is
                // shown in the host's events).
                let shown: Vec<&str> = known
                    .iter()
                    .copied()
                    .filter(|p| *p != PASSWORD_PLACEHOLDER)
                    .collect();
                check_placeholders(l, &shown)
                    .map_err(|m| (key(&["ready", "log"]), format!("ready.log: {m}")))?
            }
            (_, Some(_)) => {
                return Err((
                    key(&["ready", "log"]),
                    "ready.log is read only with ready.by = \"log\"".into(),
                ))
            }
            _ => {}
        }
        if self.health.is_some() {
            if self.query.protocol == QueryProtocol::None {
                return Err((
                    key(&["health"]),
                    "[health] times the query: it needs a [query] protocol".into(),
                ));
            }
            if self.query.protocol == QueryProtocol::Gamedig {
                return Err((
                    key(&["health"]),
                    "[health] times the host's query, and the host checks a gamedig game by its process only".into(),
                ));
            }
            if self.ready.by == Some(ReadyBy::Process) {
                return Err((
                    key(&["health"]),
                    "[health] times the query, which ready.by = \"process\" turns off".into(),
                ));
            }
            if let Some(t) = self.health_timing() {
                t.check().map_err(|m| {
                    let k = if m.contains("interval_s") {
                        "interval_s"
                    } else if m.contains("kill_after") {
                        "kill_after"
                    } else {
                        "unresponsive_after"
                    };
                    (key(&["health", k]), m)
                })?;
            }
        }
        let r = &self.ready;
        if !(0.1..=600.0).contains(&r.timeout_s)
            || !(0.0..=60.0).contains(&r.per_server_s)
            || !(0.0..=600.0).contains(&r.warmup_s)
        {
            return Err((
                key(&["ready"]),
                "ready: timeout_s must be 0.1..=600, per_server_s 0..=60 and warmup_s 0..=600"
                    .into(),
            ));
        }
        if !(0.0..=60.0).contains(&self.stop.grace_s) {
            return Err((
                key(&["stop", "grace_s"]),
                "stop: grace_s must be 0..=60".into(),
            ));
        }
        let p = &self.players;
        match p.protocol {
            PlayerProtocol::Q3 if p.q3_protocol.is_none() => {
                return Err((
                    key(&["players", "q3_protocol"]),
                    "players: protocol q3 needs q3_protocol (ioquake3 1.36: 71)".into(),
                ))
            }
            PlayerProtocol::None if p.default > 0 => {
                return Err((
                    key(&["players", "default"]),
                    "players: default > 0 needs a player protocol (reference, q3 or teeworlds7)"
                        .into(),
                ))
            }
            _ => {}
        }
        if p.default > self.slots {
            return Err((
                key(&["players", "default"]),
                format!(
                    "players: default {} is above the slots ({})",
                    p.default, self.slots
                ),
            ));
        }
        if let Some(m) = p.max_with_bots {
            if m == 0 || m > self.slots || p.default > m {
                return Err((
                    key(&["players", "max_with_bots"]),
                    format!(
                        "players: max_with_bots must be 1..={} (the slots) and at least the default players",
                        self.slots
                    ),
                ));
            }
        }
        if self.files.len() > MAX_FILES {
            return Err((key(&["file"]), format!("at most {MAX_FILES} [[file]]s")));
        }
        // The paths as one set, by the rule every [[file]] follows.
        tickpack_sys::rel_path::check_file_set(self.files.iter().map(|f| f.path.as_str()))
            .map_err(|(k, m)| (key(&["file", &k.to_string(), "path"]), m))?;
        for (k, f) in self.files.iter().enumerate() {
            let idx = k.to_string();
            let at = |what: &str| key(&["file", &idx, what]);
            not_filled(&f.path, "a [[file]] path")
                .map_err(|m| (at("path"), format!("file {:?}: {m}", f.path)))?;
            if f.contents.len() > 32 * 1024 || f.contents.contains('\0') {
                return Err((
                    at("contents"),
                    format!("file {:?}: contents must be text of at most 32 KiB", f.path),
                ));
            }
            self.check_contents(&f.contents, &known)
                .map_err(|m| (at("contents"), format!("file {:?}: {m}", f.path)))?;
        }
        self.check_data()?;
        if let Some(a) = &self.agones {
            if let Some(arg) = a.args.iter().find(|w| not_filled(w, "").is_err()) {
                return Err((
                    key(&["agones", "args"]),
                    format!("agones: args {arg:?}: placeholders are not filled in args (they follow the command as written); put it in the command"),
                ));
            }
            a.check(self.query.protocol)?;
        }
        Ok(())
    }

    /// A config file's text: its placeholders, and every repetition line
    /// ([`crate::template`]) with its list, its count and its own names.
    fn check_contents(&self, contents: &str, known: &[&str]) -> Result<(), String> {
        for line in contents.lines() {
            let Some(head) = for_head(line) else {
                check_placeholders(line, known)?;
                continue;
            };
            let head = head?;
            if !self.variables.contains_key(head.list) {
                return Err(format!(
                    "{{for {} in {}}}: {} is not in [variables] (a list is a variable's value, items separated by commas)",
                    head.item, head.list, head.list
                ));
            }
            if let Some(c) = head.count.filter(|c| !COUNTS.contains(c)) {
                return Err(format!(
                    "{{for ... up to {c}}}: a count is one of {}",
                    COUNTS.join(", ")
                ));
            }
            let own = head.own_names();
            if let Some(n) = own.iter().find(|n| known.contains(&n.as_str())) {
                return Err(format!(
                    "{{for {} in ...}}: {{{n}}} is already a placeholder; name the item otherwise",
                    head.item
                ));
            }
            let mut names = known.to_vec();
            names.extend(own.iter().map(String::as_str));
            check_placeholders(head.body, &names)?;
        }
        Ok(())
    }

    /// `[data]`: the variable it checks exists, the directories are
    /// absolute.
    fn check_data(&self) -> Result<(), (KeyPath, String)> {
        let d = &self.data;
        match &d.pk3_maps {
            Some(v) if !self.variables.contains_key(v) => Err((
                key(&["data", "pk3_maps"]),
                format!("data: pk3_maps = {v:?} is not in [variables]"),
            )),
            Some(_) if d.pk3_dirs.is_empty() || d.pk3_dirs.len() > 8 => Err((
                key(&["data", "pk3_dirs"]),
                "data: pk3_maps needs pk3_dirs, 1-8 directories of the game's *.pk3".into(),
            )),
            None if !d.pk3_dirs.is_empty() => Err((
                key(&["data", "pk3_dirs"]),
                "data: pk3_dirs is read only with pk3_maps (the variable whose maps it holds)"
                    .into(),
            )),
            _ if d.pk3_dirs.iter().any(|p| not_filled(p, "").is_err()) => Err((
                key(&["data", "pk3_dirs"]),
                "data: pk3_dirs are read as written: placeholders are not filled there".into(),
            )),
            _ => match d.pk3_dirs.iter().find(|p| {
                !p.starts_with('/') || p.contains("/../") || p.chars().any(char::is_control)
            }) {
                Some(p) => Err((
                    key(&["data", "pk3_dirs"]),
                    format!("data: {p:?} is not an absolute directory"),
                )),
                None => Ok(()),
            },
        }
    }

    /// Every placeholder the definition may use (`{rcon_password}` only
    /// with `[rcon]`: the host fills it for no other game).
    fn placeholders(&self) -> Vec<&str> {
        INSTANCE_PLACEHOLDERS
            .iter()
            .filter(|p| self.rcon.is_some() || **p != PASSWORD_PLACEHOLDER)
            .chain(GAME_PLACEHOLDERS.iter())
            .copied()
            .chain(self.variables.keys().map(String::as_str))
            .collect()
    }

    /// `[rcon]` and `{rcon_password}` go together: a password the host
    /// never fills, or a console whose server never gets its password,
    /// is refused where it stands.
    fn check_rcon(&self) -> Result<(), (KeyPath, String)> {
        let wanted = format!("{{{PASSWORD_PLACEHOLDER}}}");
        let Some(rcon) = &self.rcon else {
            let at = if self.command.contains(&wanted) {
                Some(key(&["command"]))
            } else if let Some((k, _)) = self.env.iter().find(|(_, v)| v.contains(&wanted)) {
                Some(key(&["env", k]))
            } else {
                self.files
                    .iter()
                    .position(|f| f.contents.contains(&wanted))
                    .map(|i| key(&["file", &i.to_string(), "contents"]))
            };
            return match at {
                Some(at) => Err((at, format!(
                    "{wanted} is filled only for a game with an [rcon] table (the host makes the password at every start); add [rcon] or remove it"
                ))),
                None => Ok(()),
            };
        };
        if self.transport != Transport::Udp {
            return Err((
                key(&["rcon", "protocol"]),
                "rcon: protocol \"q3\" speaks UDP to the game port; this game is transport = \"tcp\"".into(),
            ));
        }
        if !self.variables.contains_key(&rcon.rotation) {
            return Err((
                key(&["rcon", "rotation"]),
                format!(
                    "rcon: rotation = {:?} is not in [variables] (the list variable holding the maps)",
                    rcon.rotation
                ),
            ));
        }
        rcon.check_map_change().map_err(|m| {
            (
                key(&["rcon", "map_change"]),
                format!("rcon: map_change: {m}"),
            )
        })?;
        if !self.uses(PASSWORD_PLACEHOLDER) {
            return Err((key(&["rcon"]), format!(
                "rcon: the server never gets its password: put {wanted} in the command or a config file (ioquake3: set rconpassword \"{wanted}\"; DarkPlaces: rcon_secure 0, then rcon_password \"{wanted}\")"
            )));
        }
        Ok(())
    }
}

/// Refuses a placeholder in a key whose text is used as written (a
/// `[[file]]` path, `[data] pk3_dirs`, `[agones] args`): a `{name}` there
/// would reach the machine unfilled. `what` names the key in the message.
fn not_filled(text: &str, what: &str) -> Result<(), String> {
    match crate::names::placeholders_in(text).next() {
        Some((_, name)) => Err(format!(
            "{{{name}}}: placeholders are not filled in {}",
            if what.is_empty() { "this key" } else { what }
        )),
        None => Ok(()),
    }
}
