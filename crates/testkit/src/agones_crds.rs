//! Agones' CRD schemas, to validate generated manifests offline: the
//! `fleets.agones.dev` and `fleetautoscalers.autoscaling.agones.dev`
//! `openAPIV3Schema`s of Agones' install manifest, found at
//! `<workspace>/../shared/agones/install.yaml` or at
//! [`INSTALL_YAML_ENV`].
//!
//! The schemas are made strict before use, as `kubectl apply` (strict field
//! validation) would be: an object that lists its properties accepts no
//! others, unless it says `x-kubernetes-preserve-unknown-fields`; the root
//! accepts `apiVersion`, `kind` and `metadata`, which Kubernetes adds to
//! every CRD. Other Kubernetes extensions (`x-kubernetes-*`, `nullable`) are
//! keywords the validator ignores.
//!
//! Missing install manifest: with `CI=true` a test fails with the path it
//! looked at; elsewhere [`AgonesCrds::load_or_skip`] prints that the test
//! is skipped and why.

use std::path::PathBuf;
use std::sync::OnceLock;

use serde_json::{json, Value};

/// Overrides where the install manifest is.
pub const INSTALL_YAML_ENV: &str = "TICKPACK_AGONES_INSTALL_YAML";

/// The install manifest's path: [`INSTALL_YAML_ENV`], else
/// `<workspace root>/../shared/agones/install.yaml`.
pub fn install_yaml_path() -> PathBuf {
    match std::env::var_os(INSTALL_YAML_ENV) {
        Some(p) => PathBuf::from(p),
        None => {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/agones/install.yaml")
        }
    }
}

/// The two schemas, strict.
pub struct AgonesCrds {
    fleet: jsonschema::Validator,
    autoscaler: jsonschema::Validator,
}

static CRDS: OnceLock<Result<AgonesCrds, String>> = OnceLock::new();

impl AgonesCrds {
    /// The schemas (parsed once per test binary), or `None` after printing
    /// why `test` is skipped. Panics when they cannot be read under
    /// `CI=true`, or when the manifest is there but lacks them.
    pub fn load_or_skip(test: &str) -> Option<&'static AgonesCrds> {
        let path = install_yaml_path();
        if !path.exists() {
            crate::skip_unless_ci(
                test,
                &format!(
                    "the Agones install manifest is not at {} (set {INSTALL_YAML_ENV} to its path)",
                    path.display()
                ),
            );
            return None;
        }
        match CRDS.get_or_init(|| AgonesCrds::load(&path)) {
            Ok(c) => Some(c),
            Err(e) => panic!("{test}: {e}"),
        }
    }

    fn load(path: &std::path::Path) -> Result<AgonesCrds, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("reading {}: {e}", path.display()))?;
        let fleet = schema_of(&text, "fleets.agones.dev")?;
        let autoscaler = schema_of(&text, "fleetautoscalers.autoscaling.agones.dev")?;
        let build = |s: Value| {
            jsonschema::options()
                .with_draft(jsonschema::Draft::Draft4)
                .build(&s)
                .map_err(|e| format!("the CRD schema does not compile: {e}"))
        };
        Ok(AgonesCrds {
            fleet: build(fleet)?,
            autoscaler: build(autoscaler)?,
        })
    }

    /// Every schema error of one document, chosen by its `kind` (`Fleet` or
    /// `FleetAutoscaler`); empty when it is valid.
    pub fn errors(&self, doc: &Value) -> Vec<String> {
        let v = match doc["kind"].as_str() {
            Some("Fleet") => &self.fleet,
            Some("FleetAutoscaler") => &self.autoscaler,
            other => {
                return vec![format!(
                    "kind {other:?} is neither Fleet nor FleetAutoscaler"
                )]
            }
        };
        v.iter_errors(doc)
            .map(|e| format!("{}: {e}", e.instance_path()))
            .collect()
    }
}

/// The documents of a YAML stream, as JSON values.
pub fn yaml_documents(text: &str) -> Result<Vec<Value>, String> {
    use serde::Deserialize;
    serde_yaml::Deserializer::from_str(text)
        .map(|d| {
            let y = serde_yaml::Value::deserialize(d).map_err(|e| e.to_string())?;
            serde_json::to_value(y).map_err(|e| e.to_string())
        })
        .filter(|r| !matches!(r, Ok(Value::Null)))
        .collect()
}

/// The strict `openAPIV3Schema` of the CRD named `name` (its first version).
fn schema_of(install_yaml: &str, name: &str) -> Result<Value, String> {
    use serde::Deserialize;
    for d in serde_yaml::Deserializer::from_str(install_yaml) {
        let Ok(y) = serde_yaml::Value::deserialize(d) else {
            continue;
        };
        if y["kind"].as_str() != Some("CustomResourceDefinition")
            || y["metadata"]["name"].as_str() != Some(name)
        {
            continue;
        }
        let crd: Value = serde_json::to_value(&y).map_err(|e| format!("{name}: {e}"))?;
        let mut schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"].clone();
        if !schema.is_object() {
            return Err(format!("{name} has no openAPIV3Schema"));
        }
        if let Some(p) = schema["properties"].as_object_mut() {
            p.insert("apiVersion".into(), json!({"type": "string"}));
            p.insert("kind".into(), json!({"type": "string"}));
            p.insert("metadata".into(), json!({"type": "object"}));
        }
        strict(&mut schema);
        return Ok(schema);
    }
    Err(format!("the Agones install manifest has no CRD {name}"))
}

/// `additionalProperties: false` on every object schema that lists its
/// properties and neither allows others nor preserves unknown fields.
pub fn strict(schema: &mut Value) {
    match schema {
        Value::Object(m) => {
            let closes = m.contains_key("properties")
                && !m.contains_key("additionalProperties")
                && m.get("x-kubernetes-preserve-unknown-fields") != Some(&Value::Bool(true));
            if closes {
                m.insert("additionalProperties".into(), Value::Bool(false));
            }
            for (k, v) in m.iter_mut() {
                // `properties` maps names to schemas; recurse into each.
                if k == "properties" {
                    if let Value::Object(props) = v {
                        props.values_mut().for_each(strict);
                    }
                } else {
                    strict(v);
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(strict),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strict_closes_objects_that_list_their_properties() {
        let mut s = json!({
            "type": "object",
            "properties": {
                "a": {"type": "object", "properties": {"b": {"type": "integer"}}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                         "properties": {"c": {"type": "string"}}},
                "map": {"type": "object", "additionalProperties": {"type": "string"}}
            }
        });
        strict(&mut s);
        assert_eq!(s["additionalProperties"], false);
        assert_eq!(s["properties"]["a"]["additionalProperties"], false);
        assert!(s["properties"]["free"]
            .get("additionalProperties")
            .is_none());
        assert_eq!(
            s["properties"]["map"]["additionalProperties"]["type"],
            "string"
        );
    }

    #[test]
    fn a_yaml_stream_reads_as_documents() {
        let docs = yaml_documents("# c\na: 1\n---\nb: \"x\"\n").unwrap();
        assert_eq!(docs, vec![json!({"a": 1}), json!({"b": "x"})]);
    }
}
