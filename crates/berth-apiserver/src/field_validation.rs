//! `fieldValidation=Strict`: a body that names a field the type does not
//! have is refused, as kube-apiserver does for the strict decoding kubectl
//! asks for by default (`kubectl apply` sends `fieldValidation=Strict`).
//!
//! Paths are written as upstream writes them: `spec.containers[0].imagee`.
//!
//! The check compares what the client sent with the same object after a
//! round trip through its k8s-openapi type: a key that the type dropped is
//! a field the type does not declare. Nulls are ignored, as a null and an
//! absent field decode the same.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The unknown fields of `sent`, as upstream names them (`.spec.foo`).
pub fn unknown_fields<T: DeserializeOwned + Serialize>(sent: &Value) -> Vec<String> {
    let Ok(typed) = serde_json::from_value::<T>(sent.clone()) else {
        return Vec::new();
    };
    let Ok(kept) = serde_json::to_value(&typed) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    compare(sent, &kept, "", &mut out);
    out.into_iter()
        .map(|f| f.trim_start_matches('.').to_string())
        .collect()
}

fn compare(sent: &Value, kept: &Value, path: &str, out: &mut Vec<String>) {
    match (sent, kept) {
        (Value::Object(sent), Value::Object(kept)) => {
            for (key, value) in sent {
                let child = format!("{path}.{key}");
                match kept.get(key) {
                    Some(k) => compare(value, k, &child, out),
                    None if value.is_null() => {}
                    // A field whose value the type dropped as empty is known.
                    None if is_empty(value) => {}
                    None => out.push(child),
                }
            }
        }
        (Value::Array(sent), Value::Array(kept)) => {
            for (i, (s, k)) in sent.iter().zip(kept).enumerate() {
                compare(s, k, &format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

fn is_empty(value: &Value) -> bool {
    match value {
        Value::Object(m) => m.is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

/// Upstream's message for a strict decoding failure.
pub fn message(kind: &str, version: &str, fields: &[String]) -> String {
    let listed: Vec<String> = fields
        .iter()
        .map(|f| format!("unknown field {f:?}"))
        .collect();
    format!(
        "{kind} in version {version:?} cannot be handled as a {kind}: strict decoding error: {}",
        listed.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{Node, Pod};
    use serde_json::json;

    #[test]
    fn unknown_fields_are_found_at_any_depth() {
        let cases: &[(Value, &[&str])] = &[
            (
                json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x"}]}}),
                &[],
            ),
            (
                json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "imagee": "x"}]}}),
                &["spec.containers[0].imagee"],
            ),
            (
                json!({"metadata": {"name": "p", "lables": {}}, "spec": {"containers": [], "tolerations": [{"key": "k", "efect": "NoSchedule"}]}}),
                &["spec.tolerations[0].efect"],
            ),
            (
                json!({"metadata": {"name": "p"}, "spek": {"a": 1}}),
                &["spek"],
            ),
            (
                json!({"metadata": {"name": "p"}, "spec": {"containers": [], "nodeName": null}}),
                &[],
            ),
        ];
        for (object, want) in cases {
            assert_eq!(unknown_fields::<Pod>(object), *want, "{object}");
        }
        assert_eq!(
            unknown_fields::<Node>(
                &json!({"metadata": {"name": "n"}, "spec": {"taints": [{"key": "k", "effect": "NoSchedule", "vaule": "x"}]}})
            ),
            ["spec.taints[0].vaule"]
        );
        assert_eq!(
            message("Pod", "v1", &["spec.foo".into()]),
            "Pod in version \"v1\" cannot be handled as a Pod: strict decoding error: unknown field \"spec.foo\""
        );
    }
}
