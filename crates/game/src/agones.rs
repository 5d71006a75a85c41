//! `[agones]`: what a game's pod in an Agones Fleet needs that is the
//! game's own: its container image, where the image keeps the game's home
//! and tickpack, and who tells Agones the server is Ready and healthy.
//! Everything else comes from the rest of the definition: the command and
//! its `[[file]]`s ([`crate::GameDef::server_spec`]), the port and its
//! transport, the `[query]` the sidecar asks. `tickpack agones fleet`
//! (`tickpack-agones-fleet`) writes the manifest from it.

use serde::{Deserialize, Serialize};

use crate::query_protocol::QueryProtocol;

/// Where tickpack's images put the tickpack binary (`{tickpack}` in the
/// pod, and the sidecar's program), unless `[agones] tickpack` says.
pub const TICKPACK_IN_IMAGE: &str = "/usr/local/bin/tickpack";

/// The one placeholder an image may name: tickpack's version.
pub const IMAGE_PLACEHOLDER: &str = "{version}";

/// `[agones]`: the game in an Agones Fleet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgonesDef {
    /// The container image, e.g. `"tickpack-openarena:{version}"`
    /// (`{version}`: tickpack's version); `--image` replaces it.
    pub image: String,
    /// The game container's name in the pod; default: the game's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
    /// The game's home in the image, an absolute path: `{dir}` and `$HOME`,
    /// where the `[[file]]`s are written before the server starts.
    pub dir: String,
    /// The tickpack binary in the image (`{tickpack}`, and the sidecar's
    /// program); default [`TICKPACK_IN_IMAGE`].
    #[serde(default = "default_tickpack")]
    pub tickpack: String,
    /// Who calls Agones' SDK: `sidecar` (the default: `tickpack
    /// agones-sidecar` beside the server asks its `[query]`) or `server`
    /// (the server itself, e.g. `tickpack server --agones`).
    #[serde(default)]
    pub reports: Reporter,
    /// Words put after the command in the pod (e.g. `--agones`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// The sidecar's image (it must hold tickpack at `tickpack`); default:
    /// the game's image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sidecar_image: Option<String>,
}

fn default_tickpack() -> String {
    TICKPACK_IN_IMAGE.into()
}

/// Who tells Agones about the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Reporter {
    /// `tickpack agones-sidecar`, a second container that asks the game's
    /// `[query]`.
    #[default]
    Sidecar,
    /// The game server calls the SDK itself.
    Server,
}

impl AgonesDef {
    /// The image with `{version}` filled.
    pub fn image(&self, version: &str) -> String {
        self.image.replace(IMAGE_PLACEHOLDER, version)
    }

    /// The sidecar's image with `{version}` filled.
    pub fn sidecar_image(&self, version: &str) -> String {
        self.sidecar_image
            .as_deref()
            .unwrap_or(&self.image)
            .replace(IMAGE_PLACEHOLDER, version)
    }

    /// The game container's name: `container`, else the game's name.
    pub fn container<'a>(&'a self, game_name: &'a str) -> &'a str {
        self.container.as_deref().unwrap_or(game_name)
    }

    /// Checks the table against its definition's `[query] protocol`: the
    /// key at fault (under `agones`) and what is wrong.
    pub(crate) fn check(&self, query: QueryProtocol) -> Result<(), (Vec<String>, String)> {
        let at = |k: &str| vec!["agones".to_string(), k.to_string()];
        check_image(&self.image).map_err(|m| (at("image"), format!("agones: image {m}")))?;
        if let Some(i) = &self.sidecar_image {
            check_image(i)
                .map_err(|m| (at("sidecar_image"), format!("agones: sidecar_image {m}")))?;
        }
        if let Some(c) = &self.container {
            if !is_dns_label(c) || c == "tickpack-sidecar" {
                return Err((
                    at("container"),
                    format!("agones: container {c:?}: 1-63 of a-z, 0-9 and '-', not starting or ending with '-', not \"tickpack-sidecar\""),
                ));
            }
        }
        for (k, p) in [("dir", &self.dir), ("tickpack", &self.tickpack)] {
            check_abs_path(p).map_err(|m| (at(k), format!("agones: {k} {p:?}: {m}")))?;
        }
        if let Some(a) = self.args.iter().find(|a| {
            a.is_empty() || a.len() > 256 || a.chars().any(|c| c.is_whitespace() || c.is_control())
        }) {
            return Err((
                at("args"),
                format!("agones: args {a:?}: one word each, 1-256 characters without spaces"),
            ));
        }
        if self.args.len() > 32 {
            return Err((at("args"), "agones: at most 32 args".into()));
        }
        if self.reports == Reporter::Sidecar
            && matches!(query, QueryProtocol::None | QueryProtocol::Gamedig)
        {
            return Err((
                at("reports"),
                "agones: the sidecar asks the game's [query] (q3, a2s or tickpack): set one, or reports = \"server\" when the server calls the SDK itself".into(),
            ));
        }
        Ok(())
    }
}

/// An image reference: one word of printable characters, at most 255,
/// whose only placeholder is `{version}`.
fn check_image(image: &str) -> Result<(), String> {
    let rest = image.replace(IMAGE_PLACEHOLDER, "");
    if image.is_empty()
        || image.len() > 255
        || !rest
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | '/' | ':' | '@'))
    {
        return Err(format!(
            "{image:?}: an image reference (letters, digits, . - _ / : @, at most 255; {IMAGE_PLACEHOLDER} for tickpack's version)"
        ));
    }
    Ok(())
}

/// An absolute path in the image: no `..`, no empty part, printable
/// characters without quotes or `$`.
fn check_abs_path(p: &str) -> Result<(), String> {
    let ok = p.starts_with('/')
        && p.len() <= 256
        && p[1..]
            .split('/')
            .all(|s| !s.is_empty() && s != "." && s != "..")
        && p.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '.' | '-' | '_' | '+'));
    if ok {
        Ok(())
    } else {
        Err(
            "an absolute path of letters, digits and / . - _ +, without empty, . or .. parts"
                .into(),
        )
    }
}

fn is_dns_label(s: &str) -> bool {
    (1..=63).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}
