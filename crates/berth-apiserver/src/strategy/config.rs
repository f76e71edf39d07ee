//! ConfigMaps and Secrets: upstream's validation (berth-core's port), a
//! Secret's type defaulting to `Opaque`, and `stringData` folded into
//! `data` on every write, as upstream's conversion does (it is write-only:
//! never stored, never returned).

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use berth_core::validation::{
    ErrorList, secret_type, validate_config_map, validate_config_map_update, validate_secret,
    validate_secret_update,
};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use serde_json::{Value, json};

use super::{ObjectType, ResourceType, Strategy, typed_validation};

/// The strategy of core/v1 ConfigMaps.
#[derive(Debug)]
pub struct ConfigMaps;

fn config_map_rules(new: &ConfigMap, old: Option<&ConfigMap>) -> ErrorList {
    match old {
        None => validate_config_map(new),
        Some(old) => validate_config_map_update(new, old),
    }
}

impl Strategy for ConfigMaps {
    fn object_type(&self) -> ObjectType {
        ObjectType::of::<ConfigMap>()
    }

    typed_validation!(config_map_rules);
}

/// The strategy of core/v1 Secrets.
#[derive(Debug)]
pub struct Secrets;

fn secret_rules(new: &Secret, old: Option<&Secret>) -> ErrorList {
    match old {
        None => validate_secret(new),
        Some(old) => validate_secret_update(new, old),
    }
}

impl Strategy for Secrets {
    fn object_type(&self) -> ObjectType {
        ObjectType::of::<Secret>()
    }

    fn selectable_kind(&self, _rt: &ResourceType) -> crate::selectors::SelectableKind {
        crate::selectors::SelectableKind::Secret
    }

    /// `SetDefaults_Secret` and the conversion of `stringData`: its values
    /// replace `data`'s of the same key, base64-encoded.
    fn defaults(&self, object: &mut Value) {
        let Some(secret) = object.as_object_mut() else {
            return;
        };
        if let Some(Value::Object(strings)) = secret.remove("stringData") {
            let data = secret.entry("data").or_insert_with(|| json!({}));
            if !data.is_object() {
                *data = json!({});
            }
            if let Some(data) = data.as_object_mut() {
                for (key, value) in strings {
                    let text = value.as_str().unwrap_or("");
                    data.insert(key, json!(BASE64.encode(text)));
                }
            }
        }
        let untyped = secret
            .get("type")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty);
        if untyped {
            secret.insert("type".into(), json!(secret_type::OPAQUE));
        }
    }

    typed_validation!(secret_rules);
}
