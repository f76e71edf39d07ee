//! `fieldValidation`: what happens to a body with unknown or duplicate
//! fields ([`Directive`]). `Strict` refuses it, as kube-apiserver does for
//! the strict decoding kubectl asks for by default (`kubectl apply` sends
//! `fieldValidation=Strict`); `Warn`, the default, accepts it and names
//! each problem in a `Warning` header; `Ignore` accepts it silently.
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

use crate::body::{StrictProblem, strict_decoding_error};
use crate::status::ApiError;

/// The `fieldValidation` query parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Directive {
    Ignore,
    Warn,
    Strict,
}

impl Directive {
    /// The directive a request names; unset is `Warn`, as upstream's.
    pub fn parse(value: Option<&str>) -> Result<Directive, ApiError> {
        match value {
            None | Some("Warn") => Ok(Directive::Warn),
            Some("Ignore") => Ok(Directive::Ignore),
            Some("Strict") => Ok(Directive::Strict),
            Some(other) => Err(ApiError::bad_request(format!(
                "fieldValidation must be one of \"Ignore\", \"Warn\", or \"Strict\", got {other:?}"
            ))),
        }
    }

    /// Whether problems are looked for at all.
    pub fn checks(self) -> bool {
        self != Directive::Ignore
    }

    /// A created or updated object's problems: with `Strict` upstream's
    /// 400 (`Pod in version "v1" cannot be handled as a Pod: strict
    /// decoding error: ...`), with `Warn` one warning each.
    pub fn enforce_on_object(
        self,
        kind: &str,
        version: &str,
        problems: &[StrictProblem],
    ) -> Result<(), ApiError> {
        self.enforce(problems, || {
            ApiError::bad_request(format!(
                "{kind} in version {version:?} cannot be handled as a {kind}: {}",
                strict_decoding_error(problems)
            ))
        })
    }

    /// With `Strict`, `refusal`; with `Warn`, one warning per problem.
    pub fn enforce(
        self,
        problems: &[StrictProblem],
        refusal: impl FnOnce() -> ApiError,
    ) -> Result<(), ApiError> {
        match self {
            _ if problems.is_empty() => Ok(()),
            Directive::Ignore => Ok(()),
            Directive::Warn => {
                for problem in problems {
                    crate::warnings::add(problem.warning());
                }
                Ok(())
            }
            Directive::Strict => Err(refusal()),
        }
    }
}

/// The unknown fields of `sent`, as upstream names them (`spec.foo`).
pub fn unknown_fields<T: DeserializeOwned + Serialize>(sent: &Value) -> Vec<String> {
    // `&Value` is a deserializer: no copy of the body.
    let Ok(typed) = T::deserialize(sent) else {
        return Vec::new();
    };
    let Ok(kept) = serde_json::to_value(&typed) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    compare(sent, &kept, &mut Vec::new(), &mut out);
    out
}

/// One step of the path to a field.
enum Step<'a> {
    Key(&'a str),
    Index(usize),
}

/// The path as upstream names it: `spec.containers[0].foo`.
fn path_name(path: &[Step<'_>]) -> String {
    let mut name = String::new();
    for step in path {
        match step {
            Step::Key(key) => {
                if !name.is_empty() {
                    name.push('.');
                }
                name.push_str(key);
            }
            Step::Index(i) => {
                name.push('[');
                name.push_str(&i.to_string());
                name.push(']');
            }
        }
    }
    name
}

/// Adds the fields of `sent` that `kept` (the body after a round trip
/// through the type) lacks to `out`. The path is named only for those: a
/// body is mostly known fields.
fn compare<'a>(sent: &'a Value, kept: &Value, path: &mut Vec<Step<'a>>, out: &mut Vec<String>) {
    match (sent, kept) {
        (Value::Object(sent), Value::Object(kept)) => {
            for (key, value) in sent {
                path.push(Step::Key(key));
                match kept.get(key) {
                    Some(k) => compare(value, k, path, out),
                    None if value.is_null() => {}
                    // A field whose value the type dropped as empty is known.
                    None if is_empty(value) => {}
                    None => out.push(path_name(path)),
                }
                path.pop();
            }
        }
        (Value::Array(sent), Value::Array(kept)) => {
            for (i, (s, k)) in sent.iter().zip(kept).enumerate() {
                path.push(Step::Index(i));
                compare(s, k, path, out);
                path.pop();
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
        let problems = [StrictProblem::UnknownField {
            path: "spec.foo".into(),
        }];
        assert_eq!(
            Directive::Strict
                .enforce_on_object("Pod", "v1", &problems)
                .map_err(|e| e.message),
            Err("Pod in version \"v1\" cannot be handled as a Pod: strict decoding error: unknown field \"spec.foo\"".to_string())
        );
        assert_eq!(
            Directive::Warn.enforce_on_object("Pod", "v1", &problems),
            Ok(())
        );
    }
}
