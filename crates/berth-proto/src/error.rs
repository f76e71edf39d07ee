//! Why a conversion failed, with the path of the field it failed at.

/// A failed conversion between JSON and protobuf.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The JSON does not fit the message: a field of the wrong JSON type, a time that is not
    /// RFC 3339, bytes that are not base64. `path` names the field (`spec.containers[0].name`).
    #[error("{}{reason}", at(path))]
    Json { path: String, reason: String },
    /// The bytes are not a valid protobuf encoding of the message.
    #[error("invalid protobuf: {}{reason}", at(path))]
    Malformed { path: String, reason: String },
    /// No message of the schema is this (apiVersion, kind).
    #[error("no protobuf encoding for apiVersion {api_version:?}, kind {kind:?}")]
    UnknownKind { api_version: String, kind: String },
    /// No message of the schema has this name.
    #[error("unknown protobuf message {0:?}")]
    UnknownMessage(String),
    /// The bytes are not a Kubernetes protobuf object (`k8s\x00` + runtime.Unknown), or its
    /// envelope names an encoding this crate does not read.
    #[error("not a Kubernetes protobuf object: {0}")]
    Envelope(String),
}

fn at(path: &str) -> String {
    if path.is_empty() {
        String::new()
    } else {
        format!("{path}: ")
    }
}

impl Error {
    pub(crate) fn json(reason: impl Into<String>) -> Self {
        Self::Json {
            path: String::new(),
            reason: reason.into(),
        }
    }

    pub(crate) fn malformed(reason: impl Into<String>) -> Self {
        Self::Malformed {
            path: String::new(),
            reason: reason.into(),
        }
    }

    /// The error, as seen from the message that holds field `name`.
    pub(crate) fn within(mut self, name: &str) -> Self {
        if let Self::Json { path, .. } | Self::Malformed { path, .. } = &mut self {
            let separator = if path.is_empty() || path.starts_with('[') {
                ""
            } else {
                "."
            };
            *path = format!("{name}{separator}{path}");
        }
        self
    }

    /// The error, as seen from the list that holds item `index`.
    pub(crate) fn within_item(mut self, index: usize) -> Self {
        if let Self::Json { path, .. } | Self::Malformed { path, .. } = &mut self {
            let separator = if path.is_empty() || path.starts_with('[') {
                ""
            } else {
                "."
            };
            *path = format!("[{index}]{separator}{path}");
        }
        self
    }
}
