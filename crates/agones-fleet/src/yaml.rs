//! A YAML text written line by line ([`Yaml`]): serde cannot write
//! comments, and every number in the manifest has one. Every string is a
//! JSON string literal ([`quote`]), which YAML reads as a double-quoted
//! scalar, so no value can break the document.

/// A YAML text written line by line.
#[derive(Default)]
pub struct Yaml(pub String);

impl Yaml {
    pub fn line(&mut self, indent: usize, text: &str) {
        self.0.push_str(&" ".repeat(indent));
        self.0.push_str(text);
        self.0.push('\n');
    }

    /// A comment, one `#` line per line of `text`.
    pub fn comment(&mut self, indent: usize, text: &str) {
        for l in text.lines() {
            self.line(indent, format!("# {l}").trim_end());
        }
    }

    /// `key: "value"`, the value as a quoted string.
    pub fn string(&mut self, indent: usize, key: &str, value: &str) {
        self.line(indent, &format!("{key}: {}", quote(value)));
    }

    /// `- "value"` items.
    pub fn list(&mut self, indent: usize, key: &str, items: &[String]) {
        self.line(indent, &format!("{key}:"));
        for i in items {
            self.line(indent + 2, &format!("- {}", quote(i)));
        }
    }
}

/// A YAML double-quoted scalar: JSON's string literal is one.
pub fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}
