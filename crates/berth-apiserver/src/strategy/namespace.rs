//! Namespaces: a DNS label for a name, the `kubernetes.io/metadata.name`
//! label, finalizer and phase set on create, the system namespaces that
//! may not be deleted, and the namespace field selectors.

use berth_core::validation::names::is_dns1123_label;
use k8s_openapi::api::core::v1::Namespace;
use serde_json::{Value, json};

use super::{ObjectType, ResourceType, Strategy};
use crate::objects::{metadata_mut, name_of};
use crate::selectors::SelectableKind;
use crate::status::ApiError;

/// Namespaces that exist from the start; the first three may not be
/// deleted.
pub const SYSTEM_NAMESPACES: &[&str] =
    &["default", "kube-system", "kube-public", "kube-node-lease"];

/// The strategy of core/v1 Namespaces.
#[derive(Debug)]
pub struct Namespaces;

impl Strategy for Namespaces {
    fn object_type(&self) -> ObjectType {
        ObjectType::of::<Namespace>()
    }

    fn has_status(&self) -> bool {
        true
    }

    fn name_problems(&self, name: &str) -> Vec<String> {
        is_dns1123_label(name)
    }

    fn selectable_kind(&self, _rt: &ResourceType) -> SelectableKind {
        SelectableKind::Namespace
    }

    fn on_create(&self, object: &mut Value) {
        let name = name_of(object).to_string();
        if let Some(meta) = metadata_mut(object) {
            let labels = meta.entry("labels").or_insert_with(|| json!({}));
            if let Some(labels) = labels.as_object_mut() {
                labels.insert("kubernetes.io/metadata.name".into(), json!(name));
            }
        }
        object["spec"] = json!({"finalizers": ["kubernetes"]});
        object["status"] = json!({"phase": "Active"});
    }

    fn check_deletable(&self, name: &str) -> Result<(), ApiError> {
        if SYSTEM_NAMESPACES[..3].contains(&name) {
            return Err(ApiError::forbidden_message(
                "",
                "namespaces",
                name,
                "this namespace may not be deleted",
            ));
        }
        Ok(())
    }
}
