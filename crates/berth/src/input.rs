//! Reading manifests from files for the commands, with errors that name the
//! file and the problem (and the field, where one is at fault); the same
//! for arguments and flags ([`UsageError`]).

use std::path::{Path, PathBuf};

use berth_core::manifest::{self, Document};
use berth_core::validation::ErrorList;

/// A file the user gave that berth cannot use. Commands exit with status 2
/// on it.
#[derive(Debug, thiserror::Error)]
#[error("{}: {problem}", path.display())]
pub struct InputError {
    pub path: PathBuf,
    pub problem: String,
}

impl InputError {
    pub fn new(path: &Path, problem: impl ToString) -> Self {
        InputError {
            path: path.to_path_buf(),
            problem: problem.to_string(),
        }
    }

    /// A document's field errors, one per line, as `kubectl` prints them.
    pub fn invalid(
        path: &Path,
        document: &Document,
        kind: &str,
        name: &str,
        errors: &ErrorList,
    ) -> Self {
        let details: Vec<String> = errors.iter().map(|e| format!("  * {e}")).collect();
        InputError::new(
            path,
            format!(
                "document {}: {kind} {name:?} is invalid:\n{}",
                document.number,
                details.join("\n")
            ),
        )
    }
}

/// An argument or flag the user gave that berth cannot use (`--for: ...`,
/// a taint spec). Commands exit with status 2 on it, as on an
/// [`InputError`].
#[derive(Debug, thiserror::Error)]
#[error("{field}: {problem}")]
pub struct UsageError {
    pub field: String,
    pub problem: String,
}

impl UsageError {
    pub fn new(field: impl Into<String>, problem: impl ToString) -> Self {
        UsageError {
            field: field.into(),
            problem: problem.to_string(),
        }
    }
}

/// Reads every object of a manifest file.
pub fn read_documents(path: &Path) -> Result<Vec<Document>, InputError> {
    let text = std::fs::read_to_string(path).map_err(|e| InputError::new(path, e))?;
    manifest::parse_documents(&text).map_err(|e| InputError::new(path, e))
}

/// Reads every object of a file as `T` (a Pod, a Node, ...).
pub fn read_objects<T>(path: &Path) -> Result<Vec<(Document, T)>, InputError>
where
    T: serde::de::DeserializeOwned + k8s_openapi::Resource,
{
    read_documents(path)?
        .into_iter()
        .map(|doc| {
            let object = doc.decode::<T>().map_err(|e| InputError::new(path, e))?;
            Ok((doc, object))
        })
        .collect()
}
