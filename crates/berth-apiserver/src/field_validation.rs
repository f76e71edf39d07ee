//! `fieldValidation`: what happens to a body with unknown or duplicate
//! fields ([`Directive`]). `Strict` refuses it, as kube-apiserver does for
//! the strict decoding kubectl asks for by default (`kubectl apply` sends
//! `fieldValidation=Strict`); `Warn`, the default, accepts it and names
//! each problem in a `Warning` header; `Ignore` accepts it silently.
//!
//! Paths are written as upstream writes them: `spec.containers[0].imagee`.
//!
//! The check decodes what the client sent into its k8s-openapi type and
//! notes every key the type passes over: a field the type does not
//! declare. Nulls (and empty objects and lists) are ignored, as they decode
//! as an absent field does.

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

/// The unknown fields of `sent`, as upstream names them (`spec.foo`): the
/// keys its k8s-openapi type passes over while decoding it (one pass, no
/// copy), but for those whose value is null, `{}` or `[]` (they decode as
/// if absent).
pub fn unknown_fields<T: DeserializeOwned>(sent: &Value) -> Vec<String> {
    let mut passed_over: Vec<Vec<Step>> = Vec::new();
    // `&Value` is a deserializer: no copy of the body.
    let decoded: Result<T, _> =
        serde_ignored::deserialize(sent, |path| passed_over.push(steps(&path)));
    if decoded.is_err() {
        return Vec::new();
    }
    passed_over
        .into_iter()
        .filter(|path| at(sent, path).is_some_and(|v| !v.is_null() && !is_empty(v)))
        .map(|path| path_name(&path))
        .collect()
}

/// One step of the path to a field.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    Key(String),
    Index(usize),
}

/// A passed-over field's path as steps from the root.
fn steps(path: &serde_ignored::Path<'_>) -> Vec<Step> {
    use serde_ignored::Path;
    let mut out = match path {
        Path::Root => return Vec::new(),
        Path::Seq { parent, .. }
        | Path::Map { parent, .. }
        | Path::Some { parent }
        | Path::NewtypeStruct { parent }
        | Path::NewtypeVariant { parent } => steps(parent),
    };
    match path {
        Path::Seq { index, .. } => out.push(Step::Index(*index)),
        Path::Map { key, .. } => out.push(Step::Key(key.clone())),
        _ => {}
    }
    out
}

/// The member of `object` at `path`.
fn at<'a>(object: &'a Value, path: &[Step]) -> Option<&'a Value> {
    path.iter().try_fold(object, |value, step| match step {
        Step::Key(key) => value.get(key.as_str()),
        Step::Index(i) => value.get(*i),
    })
}

/// The path as upstream names it: `spec.containers[0].foo`.
fn path_name(path: &[Step]) -> String {
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

    /// The decoder's passed-over keys name the fields a round trip through
    /// the type drops (the check as it was first written, kept here as the
    /// oracle): on pods and nodes with unknown keys of any value put at any
    /// depth, and with values of the wrong type (nothing decodes, nothing
    /// is named).
    mod as_a_round_trip {
        use super::*;
        use proptest::prelude::*;
        use serde::Serialize;

        fn round_trip_unknown_fields<T: DeserializeOwned + Serialize>(sent: &Value) -> Vec<String> {
            let Ok(typed) = T::deserialize(sent) else {
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

        fn base_pod() -> Value {
            json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "p", "namespace": "d", "labels": {"a": "b"},
                    "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "r", "uid": "u"}]},
                "spec": {"containers": [{"name": "c", "image": "x",
                    "resources": {"requests": {"cpu": "1"}}, "ports": [{"containerPort": 80}]}],
                    "tolerations": [{"key": "k", "operator": "Exists"}],
                    "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                        {"nodeSelectorTerms": [{"matchExpressions": [{"key": "z", "operator": "In", "values": ["a"]}]}]}}}},
                "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}})
        }

        fn odd_value() -> impl Strategy<Value = Value> {
            prop_oneof![
                Just(Value::Null),
                Just(json!({})),
                Just(json!([])),
                Just(json!(1)),
                Just(json!("s")),
                Just(json!({"x": {"y": [1, {"z": null}]}})),
                Just(json!([{"a": 1}, {}])),
            ]
        }

        /// Puts `key: value` into the `pick`-th object of `object` (depth
        /// first), or replaces that object's `key` when it exists (a known
        /// field of the wrong type).
        fn put(object: &mut Value, pick: &mut usize, key: &str, value: &Value) -> bool {
            if let Value::Object(map) = object {
                if *pick == 0 {
                    map.insert(key.to_string(), value.clone());
                    return true;
                }
                *pick -= 1;
                for member in map.values_mut() {
                    if put(member, pick, key, value) {
                        return true;
                    }
                }
            } else if let Value::Array(items) = object {
                for item in items {
                    if put(item, pick, key, value) {
                        return true;
                    }
                }
            }
            false
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(1_000))]

            #[test]
            fn passed_over_keys_are_the_keys_a_round_trip_drops(
                inserts in proptest::collection::vec(
                    (0usize..40, prop_oneof![Just("foo"), Just("zeta"), Just("image"), Just("phase"), Just("labels"), Just("aa")], odd_value()),
                    0..4,
                ),
            ) {
                let mut pod = base_pod();
                for (pick, key, value) in &inserts {
                    let mut pick = *pick;
                    put(&mut pod, &mut pick, key, value);
                }
                prop_assert_eq!(unknown_fields::<Pod>(&pod), round_trip_unknown_fields::<Pod>(&pod), "{}", pod);
                prop_assert_eq!(unknown_fields::<Node>(&pod), round_trip_unknown_fields::<Node>(&pod), "{}", pod);
            }
        }
    }
}
