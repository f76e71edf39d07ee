//! Reading Kubernetes manifests the way `kubectl apply -f` does: YAML or
//! JSON, several `---`-separated documents per file, and `List` kinds
//! (`List`, `NodeList`, `PodList`, …) expanded into their items.
//!
//! Errors name the document (1-based, counting items of a list) and, for
//! a field of the wrong shape, the field path (`spec.tolerations[0].tolerationSeconds`),
//! so a command can print the file and the field.

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Why a manifest could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ManifestError {
    #[error("invalid YAML or JSON: {0}")]
    Syntax(String),
    #[error("document {document}: not an object")]
    NotAnObject { document: usize },
    #[error("document {document}: Object 'Kind' is missing")]
    MissingKind { document: usize },
    #[error("document {document}: expected kind {expected} ({api_version}), found {found}")]
    WrongKind {
        document: usize,
        expected: &'static str,
        api_version: &'static str,
        found: String,
    },
    #[error("document {document}: {field}: {message}")]
    Field {
        document: usize,
        field: String,
        message: String,
    },
    #[error("no objects in the file")]
    Empty,
}

/// One object of a manifest file.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    /// 1-based position among the file's objects, list items counted.
    pub number: usize,
    pub value: Value,
}

impl Document {
    /// The object's `kind`, or "" when it has none.
    pub fn kind(&self) -> &str {
        self.value.get("kind").and_then(Value::as_str).unwrap_or("")
    }

    /// Decodes the object as the Kubernetes type `T`, checking its kind and
    /// apiVersion first so a Node is never silently read as a Pod.
    pub fn decode<T>(&self) -> Result<T, ManifestError>
    where
        T: DeserializeOwned + k8s_openapi::Resource,
    {
        let document = self.number;
        let kind = self.kind();
        if kind.is_empty() {
            return Err(ManifestError::MissingKind { document });
        }
        let api_version = self.value.get("apiVersion").and_then(Value::as_str);
        if kind != T::KIND || api_version != Some(T::API_VERSION) {
            return Err(ManifestError::WrongKind {
                document,
                expected: T::KIND,
                api_version: T::API_VERSION,
                found: match api_version {
                    Some(v) => format!("{kind} ({v})"),
                    None => format!("{kind} (no apiVersion)"),
                },
            });
        }
        serde_path_to_error::deserialize(&self.value).map_err(|e| ManifestError::Field {
            document,
            field: e.path().to_string(),
            message: e.inner().to_string(),
        })
    }
}

/// Splits a YAML or JSON text into its objects, expanding lists. Empty
/// documents (a lone `---`) are skipped, as kubectl skips them.
pub fn parse_documents(text: &str) -> Result<Vec<Document>, ManifestError> {
    let mut values = Vec::new();
    for document in serde_yaml::Deserializer::from_str(text) {
        let value =
            Value::deserialize(document).map_err(|e| ManifestError::Syntax(e.to_string()))?;
        if !value.is_null() {
            values.push(value);
        }
    }
    let mut documents = Vec::new();
    for value in values {
        let is_list = value
            .get("kind")
            .and_then(Value::as_str)
            .is_some_and(|k| k.ends_with("List"))
            && value.get("items").is_some();
        let objects = match (is_list, value) {
            (true, Value::Object(mut map)) => match map.remove("items") {
                Some(Value::Array(items)) => items,
                _ => Vec::new(),
            },
            (_, value) => vec![value],
        };
        for value in objects {
            let number = documents.len() + 1;
            if !value.is_object() {
                return Err(ManifestError::NotAnObject { document: number });
            }
            documents.push(Document { number, value });
        }
    }
    if documents.is_empty() {
        return Err(ManifestError::Empty);
    }
    Ok(documents)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{Node, Pod};

    /// A case name, the manifest text, and the kinds read or an error prefix.
    type SplitCase = (
        &'static str,
        &'static str,
        Result<Vec<&'static str>, &'static str>,
    );

    #[test]
    fn manifests_split_into_objects() {
        let cases: &[SplitCase] = &[
            (
                "one YAML document",
                "apiVersion: v1\nkind: Pod\n",
                Ok(vec!["Pod"]),
            ),
            (
                "leading and trailing separators",
                "---\nkind: Pod\n---\n---\nkind: Node\n---\n",
                Ok(vec!["Pod", "Node"]),
            ),
            (
                "JSON",
                r#"{"kind": "Node", "apiVersion": "v1"}"#,
                Ok(vec!["Node"]),
            ),
            (
                "YAML flow style as in the upstream examples",
                "---\n{\n  apiVersion: \"v1\",\n  kind: \"Pod\",\n}\n",
                Ok(vec!["Pod"]),
            ),
            (
                "a List is expanded",
                "kind: List\nitems:\n- kind: Node\n- kind: Pod\n",
                Ok(vec!["Node", "Pod"]),
            ),
            (
                "a NodeList is expanded",
                r#"{"kind":"NodeList","items":[{"kind":"Node"}]}"#,
                Ok(vec!["Node"]),
            ),
            ("empty file", "", Err("no objects in the file")),
            (
                "only separators",
                "---\n---\n",
                Err("no objects in the file"),
            ),
            (
                "a scalar document",
                "42\n",
                Err("document 1: not an object"),
            ),
            ("broken YAML", "kind: [Pod\n", Err("invalid YAML or JSON")),
        ];
        for (name, text, want) in cases {
            let got = parse_documents(text);
            match (got, want) {
                (Ok(docs), Ok(kinds)) => {
                    let got: Vec<&str> = docs.iter().map(Document::kind).collect();
                    assert_eq!(&got, kinds, "{name}");
                    let numbers: Vec<usize> = docs.iter().map(|d| d.number).collect();
                    assert_eq!(numbers, (1..=kinds.len()).collect::<Vec<_>>(), "{name}");
                }
                (Err(e), Err(prefix)) => {
                    assert!(e.to_string().starts_with(prefix), "{name}: {e}")
                }
                (got, want) => panic!("{name}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn decode_checks_kind_and_names_the_bad_field() {
        let pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers: [{name: c}]\n  tolerations:\n  - {key: k, operator: Exists, tolerationSeconds: soon}\n";
        let cases: &[(&str, &str, Result<(), &str>)] = &[
            (
                "a good pod",
                "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\n",
                Ok(()),
            ),
            (
                "a node is not a pod",
                "apiVersion: v1\nkind: Node\nmetadata: {name: n}\n",
                Err("document 1: expected kind Pod (v1), found Node (v1)"),
            ),
            (
                "wrong apiVersion",
                "apiVersion: v2\nkind: Pod\n",
                Err("document 1: expected kind Pod (v1), found Pod (v2)"),
            ),
            (
                "no kind",
                "apiVersion: v1\nmetadata: {}\n",
                Err("document 1: Object 'Kind' is missing"),
            ),
            (
                "a field of the wrong type",
                pod,
                Err(
                    "document 1: spec.tolerations[0].tolerationSeconds: invalid type: string \"soon\", expected i64",
                ),
            ),
        ];
        for (name, text, want) in cases {
            let docs = parse_documents(text).expect("test manifests parse");
            let got = docs[0]
                .decode::<Pod>()
                .map(|_| ())
                .map_err(|e| e.to_string());
            assert_eq!(got, want.map_err(str::to_string), "{name}");
        }
        let node =
            parse_documents("apiVersion: v1\nkind: Node\nmetadata: {name: n}\n").expect("parses");
        assert_eq!(
            node[0].decode::<Node>().ok().and_then(|n| n.metadata.name),
            Some("n".to_string())
        );
    }
}
