//! ConfigMaps and Secrets: upstream's `ValidateConfigMap`,
//! `ValidateConfigMapUpdate`, `ValidateSecret` and `ValidateSecretUpdate`
//! (`pkg/apis/core/validation`), but for `metadata`, which the API server
//! validates for every type. Keys are ConfigMap keys, the values together
//! at most 1 MiB, a Secret's type decides the keys it must have, and an
//! `immutable` object keeps its data.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};

use super::names::is_config_map_key;
use super::{ErrorList, FieldError, Path};

/// `core.MaxSecretSize`: what a Secret's or ConfigMap's values may total.
pub const MAX_SECRET_SIZE: usize = 1024 * 1024;

/// The Secret types with rules of their own (`core.SecretType*`).
pub mod secret_type {
    pub const OPAQUE: &str = "Opaque";
    pub const SERVICE_ACCOUNT_TOKEN: &str = "kubernetes.io/service-account-token";
    pub const DOCKERCFG: &str = "kubernetes.io/dockercfg";
    pub const DOCKER_CONFIG_JSON: &str = "kubernetes.io/dockerconfigjson";
    pub const BASIC_AUTH: &str = "kubernetes.io/basic-auth";
    pub const SSH_AUTH: &str = "kubernetes.io/ssh-auth";
    pub const TLS: &str = "kubernetes.io/tls";
}

/// The annotation a service-account token Secret names its account in.
pub const SERVICE_ACCOUNT_NAME_KEY: &str = "kubernetes.io/service-account.name";

const IMMUTABLE: &str = "field is immutable when `immutable` is set";

fn invalid_keys<'a>(keys: impl Iterator<Item = &'a String>, path: &Path) -> ErrorList {
    keys.flat_map(|key| {
        is_config_map_key(key)
            .into_iter()
            .map(|msg| FieldError::invalid(&path.key(key.as_str()), key.as_str(), msg))
    })
    .collect()
}

/// `ValidateConfigMap` without the metadata.
pub fn validate_config_map(config_map: &ConfigMap) -> ErrorList {
    let empty = BTreeMap::new();
    let data = config_map.data.as_ref().unwrap_or(&empty);
    let empty_binary = BTreeMap::new();
    let binary = config_map.binary_data.as_ref().unwrap_or(&empty_binary);
    let data_path = Path::new("data");
    let mut errs = ErrorList::new();
    for key in data.keys() {
        errs.extend(invalid_keys(std::iter::once(key), &data_path));
        if binary.contains_key(key) {
            errs.push(FieldError::invalid(
                &data_path.key(key.as_str()),
                key.as_str(),
                "duplicate of key present in binaryData",
            ));
        }
    }
    errs.extend(invalid_keys(binary.keys(), &Path::new("binaryData")));
    let total: usize = data.values().map(String::len).sum::<usize>()
        + binary.values().map(|v| v.0.len()).sum::<usize>();
    if total > MAX_SECRET_SIZE {
        // The whole object: upstream's `field.NewPath("")`.
        errs.push(FieldError::too_long(&Path::new(""), "", MAX_SECRET_SIZE));
    }
    errs
}

/// `ValidateConfigMapUpdate` without the metadata: an immutable ConfigMap
/// stays immutable and keeps its data.
pub fn validate_config_map_update(new: &ConfigMap, old: &ConfigMap) -> ErrorList {
    let mut errs = ErrorList::new();
    if old.immutable == Some(true) {
        if new.immutable != Some(true) {
            errs.push(FieldError::forbidden(&Path::new("immutable"), IMMUTABLE));
        }
        if new.data != old.data {
            errs.push(FieldError::forbidden(&Path::new("data"), IMMUTABLE));
        }
        if new.binary_data != old.binary_data {
            errs.push(FieldError::forbidden(&Path::new("binaryData"), IMMUTABLE));
        }
    }
    errs.extend(validate_config_map(new));
    errs
}

/// `ValidateSecret` without the metadata (but for the annotation a
/// service-account token needs).
pub fn validate_secret(secret: &Secret) -> ErrorList {
    let empty = BTreeMap::new();
    let data = secret.data.as_ref().unwrap_or(&empty);
    let data_path = Path::new("data");
    let mut errs = invalid_keys(data.keys(), &data_path);
    let total: usize = data.values().map(|v| v.0.len()).sum();
    if total > MAX_SECRET_SIZE {
        errs.push(FieldError::too_long(&data_path, "", MAX_SECRET_SIZE));
    }
    let required = |key: &str| FieldError::required(&data_path.key(key), "");
    match secret.type_.as_deref().unwrap_or("") {
        secret_type::SERVICE_ACCOUNT_TOKEN => {
            let named = secret
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(SERVICE_ACCOUNT_NAME_KEY))
                .is_some_and(|name| !name.is_empty());
            if !named {
                errs.push(FieldError::required(
                    &Path::new("metadata")
                        .child("annotations")
                        .key(SERVICE_ACCOUNT_NAME_KEY),
                    "",
                ));
            }
        }
        secret_type::DOCKERCFG => errs.extend(json_key(data, ".dockercfg", &data_path)),
        secret_type::DOCKER_CONFIG_JSON => {
            errs.extend(json_key(data, ".dockerconfigjson", &data_path));
        }
        // Either may be empty, but one must be there.
        secret_type::BASIC_AUTH
            if !data.contains_key("username") && !data.contains_key("password") =>
        {
            errs.push(required("username"));
            errs.push(required("password"));
        }
        secret_type::SSH_AUTH if data.get("ssh-privatekey").is_none_or(|v| v.0.is_empty()) => {
            errs.push(required("ssh-privatekey"));
        }
        secret_type::TLS => {
            for key in ["tls.crt", "tls.key"] {
                if !data.contains_key(key) {
                    errs.push(required(key));
                }
            }
        }
        _ => {}
    }
    errs
}

/// A docker config Secret's key: present, and a JSON object.
fn json_key(
    data: &BTreeMap<String, k8s_openapi::ByteString>,
    key: &str,
    data_path: &Path,
) -> ErrorList {
    let Some(value) = data.get(key) else {
        return vec![FieldError::required(&data_path.key(key), "")];
    };
    match serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(&value.0) {
        Ok(_) => ErrorList::new(),
        Err(e) => vec![FieldError::invalid(
            &data_path.key(key),
            "<secret contents redacted>",
            e.to_string(),
        )],
    }
}

/// `ValidateSecretUpdate` without the metadata: the type never changes, an
/// immutable Secret stays immutable and keeps its data.
pub fn validate_secret_update(new: &Secret, old: &Secret) -> ErrorList {
    let mut errs = ErrorList::new();
    if new.type_ != old.type_ {
        errs.push(FieldError::invalid(
            &Path::new("type"),
            new.type_.clone().unwrap_or_default(),
            "field is immutable",
        ));
    }
    if old.immutable == Some(true) {
        if new.immutable != Some(true) {
            errs.push(FieldError::forbidden(&Path::new("immutable"), IMMUTABLE));
        }
        if new.data != old.data {
            errs.push(FieldError::forbidden(&Path::new("data"), IMMUTABLE));
        }
    }
    errs.extend(validate_secret(new));
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::ByteString;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn bytes(pairs: &[(&str, &str)]) -> Option<BTreeMap<String, ByteString>> {
        Some(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), ByteString(v.as_bytes().to_vec())))
                .collect(),
        )
    }

    fn strings(pairs: &[(&str, &str)]) -> Option<BTreeMap<String, String>> {
        Some(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
    }

    fn config_map(data: &[(&str, &str)], binary: &[(&str, &str)]) -> ConfigMap {
        ConfigMap {
            data: strings(data),
            binary_data: bytes(binary),
            ..ConfigMap::default()
        }
    }

    fn rendered(errs: ErrorList) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    /// Upstream's `TestValidateConfigMap`.
    #[test]
    fn config_maps_as_upstream() {
        struct Case {
            name: &'static str,
            config_map: ConfigMap,
            want: &'static [&'static str],
        }
        let regex = "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";
        let big = "a".repeat(MAX_SECRET_SIZE);
        let cases = [
            Case {
                name: "valid",
                config_map: config_map(
                    &[("key", "value"), ("key.with.dots", "v")],
                    &[("bin", "\x01")],
                ),
                want: &[],
            },
            Case {
                name: "dot key",
                config_map: config_map(&[(".dotfile", "x"), ("a_b", "y"), ("A-B", "z")], &[]),
                want: &[],
            },
            Case {
                name: "leading dots",
                config_map: config_map(&[("..dotfile", "x")], &[]),
                want: &["data[..dotfile]: Invalid value: \"..dotfile\": must not start with '..'"],
            },
            Case {
                name: "bad key",
                config_map: config_map(&[("key with space", "x")], &[]),
                want: &[],
            },
            Case {
                name: "bad binary key",
                config_map: config_map(&[], &[("b*d", "x")]),
                want: &[],
            },
            Case {
                name: "key in both",
                config_map: config_map(&[("dup", "x")], &[("dup", "y")]),
                want: &[
                    "data[dup]: Invalid value: \"dup\": duplicate of key present in binaryData",
                ],
            },
            Case {
                name: "too large",
                config_map: config_map(&[("big", &big), ("more", "x")], &[]),
                want: &["[]: Too long: may not be more than 1048576 bytes"],
            },
            Case {
                name: "exactly the limit",
                config_map: config_map(&[("big", &big)], &[]),
                want: &[],
            },
        ];
        for case in cases {
            let got = rendered(validate_config_map(&case.config_map));
            let want: Vec<String> = match case.name {
                "bad key" => vec![format!(
                    "data[key with space]: Invalid value: \"key with space\": {regex}"
                )],
                "bad binary key" => {
                    vec![format!("binaryData[b*d]: Invalid value: \"b*d\": {regex}")]
                }
                _ => case.want.iter().map(ToString::to_string).collect(),
            };
            assert_eq!(got, want, "{}", case.name);
        }
    }

    /// Upstream's `TestValidateConfigMapUpdate`.
    #[test]
    fn immutable_config_maps_keep_their_data() {
        struct Case {
            name: &'static str,
            old: ConfigMap,
            new: ConfigMap,
            want: &'static [&'static str],
        }
        let with = |immutable: Option<bool>, data: &[(&str, &str)]| ConfigMap {
            immutable,
            ..config_map(data, &[])
        };
        let cases = [
            Case {
                name: "mutable data changes",
                old: with(None, &[("a", "1")]),
                new: with(None, &[("a", "2")]),
                want: &[],
            },
            Case {
                name: "made immutable",
                old: with(Some(false), &[("a", "1")]),
                new: with(Some(true), &[("a", "1")]),
                want: &[],
            },
            Case {
                name: "immutable, data changed",
                old: with(Some(true), &[("a", "1")]),
                new: with(Some(true), &[("a", "2")]),
                want: &["data: Forbidden: field is immutable when `immutable` is set"],
            },
            Case {
                name: "immutable made mutable",
                old: with(Some(true), &[("a", "1")]),
                new: with(Some(false), &[("a", "1")]),
                want: &["immutable: Forbidden: field is immutable when `immutable` is set"],
            },
            Case {
                name: "immutable flag dropped",
                old: with(Some(true), &[("a", "1")]),
                new: with(None, &[("a", "1")]),
                want: &["immutable: Forbidden: field is immutable when `immutable` is set"],
            },
            Case {
                name: "immutable, binary data added",
                old: with(Some(true), &[]),
                new: ConfigMap {
                    binary_data: bytes(&[("b", "x")]),
                    ..with(Some(true), &[])
                },
                want: &["binaryData: Forbidden: field is immutable when `immutable` is set"],
            },
        ];
        for case in cases {
            assert_eq!(
                rendered(validate_config_map_update(&case.new, &case.old)),
                case.want,
                "{}",
                case.name
            );
        }
    }

    fn secret(type_: &str, data: &[(&str, &str)], annotations: &[(&str, &str)]) -> Secret {
        Secret {
            metadata: ObjectMeta {
                annotations: strings(annotations).filter(|a| !a.is_empty()),
                ..ObjectMeta::default()
            },
            type_: Some(type_.to_string()),
            data: bytes(data),
            ..Secret::default()
        }
    }

    /// Upstream's `TestValidateSecret` and the typed-secret tests
    /// (`TestValidateDockerConfigSecret`, `TestValidateBasicAuthSecret`,
    /// `TestValidateSSHAuth`, `TestValidateTLSSecret`).
    #[test]
    fn secrets_as_upstream() {
        struct Case {
            name: &'static str,
            secret: Secret,
            want: &'static [&'static str],
        }
        let big = "a".repeat(MAX_SECRET_SIZE + 1);
        let cases = [
            Case {
                name: "opaque",
                secret: secret("Opaque", &[("data-1", "bar")], &[]),
                want: &[],
            },
            Case {
                name: "custom type",
                secret: secret("example.com/thing", &[], &[]),
                want: &[],
            },
            Case {
                name: "leading dots",
                secret: secret("Opaque", &[("..dot", "x")], &[]),
                want: &["data[..dot]: Invalid value: \"..dot\": must not start with '..'"],
            },
            Case {
                name: "too large",
                secret: secret("Opaque", &[("big", &big)], &[]),
                want: &["data: Too long: may not be more than 1048576 bytes"],
            },
            Case {
                name: "token without account",
                secret: secret("kubernetes.io/service-account-token", &[], &[]),
                want: &["metadata.annotations[kubernetes.io/service-account.name]: Required value"],
            },
            Case {
                name: "token with empty account",
                secret: secret(
                    "kubernetes.io/service-account-token",
                    &[],
                    &[(SERVICE_ACCOUNT_NAME_KEY, "")],
                ),
                want: &["metadata.annotations[kubernetes.io/service-account.name]: Required value"],
            },
            Case {
                name: "token",
                secret: secret(
                    "kubernetes.io/service-account-token",
                    &[],
                    &[(SERVICE_ACCOUNT_NAME_KEY, "default")],
                ),
                want: &[],
            },
            Case {
                name: "dockercfg",
                secret: secret(
                    "kubernetes.io/dockercfg",
                    &[(".dockercfg", "{\"r\": {}}")],
                    &[],
                ),
                want: &[],
            },
            Case {
                name: "dockercfg missing",
                secret: secret("kubernetes.io/dockercfg", &[], &[]),
                want: &["data[.dockercfg]: Required value"],
            },
            Case {
                name: "dockerconfigjson missing",
                secret: secret("kubernetes.io/dockerconfigjson", &[], &[]),
                want: &["data[.dockerconfigjson]: Required value"],
            },
            Case {
                name: "basic auth username only",
                secret: secret("kubernetes.io/basic-auth", &[("username", "u")], &[]),
                want: &[],
            },
            Case {
                name: "basic auth neither",
                secret: secret("kubernetes.io/basic-auth", &[], &[]),
                want: &[
                    "data[username]: Required value",
                    "data[password]: Required value",
                ],
            },
            Case {
                name: "ssh auth empty key",
                secret: secret("kubernetes.io/ssh-auth", &[("ssh-privatekey", "")], &[]),
                want: &["data[ssh-privatekey]: Required value"],
            },
            Case {
                name: "tls",
                secret: secret(
                    "kubernetes.io/tls",
                    &[("tls.crt", "c"), ("tls.key", "k")],
                    &[],
                ),
                want: &[],
            },
            Case {
                name: "tls without key",
                secret: secret("kubernetes.io/tls", &[("tls.crt", "c")], &[]),
                want: &["data[tls.key]: Required value"],
            },
        ];
        for case in cases {
            assert_eq!(
                rendered(validate_secret(&case.secret)),
                case.want,
                "{}",
                case.name
            );
        }
        let bad_json = rendered(validate_secret(&secret(
            "kubernetes.io/dockerconfigjson",
            &[(".dockerconfigjson", "not json")],
            &[],
        )));
        assert_eq!(bad_json.len(), 1);
        assert!(
            bad_json[0].starts_with(
                "data[.dockerconfigjson]: Invalid value: \"<secret contents redacted>\": "
            ),
            "{bad_json:?}"
        );
    }

    /// Upstream's `TestValidateSecretUpdate`.
    #[test]
    fn secret_updates_keep_the_type_and_immutable_data() {
        struct Case {
            name: &'static str,
            old: Secret,
            new: Secret,
            want: &'static [&'static str],
        }
        let immutable = |flag: Option<bool>, value: &str| Secret {
            immutable: flag,
            ..secret("Opaque", &[("k", value)], &[])
        };
        let cases = [
            Case {
                name: "data changes",
                old: immutable(None, "a"),
                new: immutable(None, "b"),
                want: &[],
            },
            Case {
                name: "type changes",
                old: secret("Opaque", &[], &[]),
                new: secret("example.com/x", &[], &[]),
                want: &["type: Invalid value: \"example.com/x\": field is immutable"],
            },
            Case {
                name: "immutable data changes",
                old: immutable(Some(true), "a"),
                new: immutable(Some(true), "b"),
                want: &["data: Forbidden: field is immutable when `immutable` is set"],
            },
            Case {
                name: "immutable made mutable",
                old: immutable(Some(true), "a"),
                new: immutable(Some(false), "a"),
                want: &["immutable: Forbidden: field is immutable when `immutable` is set"],
            },
            Case {
                name: "made immutable",
                old: immutable(None, "a"),
                new: immutable(Some(true), "a"),
                want: &[],
            },
        ];
        for case in cases {
            assert_eq!(
                rendered(validate_secret_update(&case.new, &case.old)),
                case.want,
                "{}",
                case.name
            );
        }
    }
}
