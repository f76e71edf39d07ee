//! Key layout and validation.
//!
//! Keys follow what Kubernetes stores in etcd: `/registry/<resource>/<namespace>/<name>` for
//! namespaced objects and `/registry/<resource>/<name>` for cluster-scoped ones, so an operator
//! can read berth's data in etcd with `etcdctl get --prefix /registry/`. Every key and prefix is
//! validated before it reaches a backend: a bad key is a caller bug and must not become a
//! strange row in someone's cluster.

use crate::error::{Result, StoreError};

/// Every key lives under this root.
pub const KEY_ROOT: &str = "/registry/";

/// Longest accepted key, in bytes. Kubernetes names are at most 253 bytes and namespaces 63;
/// this leaves room for a group-qualified resource while refusing runaway input.
pub const MAX_KEY_BYTES: usize = 1024;

/// Largest accepted value, in bytes: 1.5 MiB, etcd's default request limit, so the same objects
/// fit in both backends.
pub const MAX_VALUE_BYTES: usize = 1536 * 1024;

fn invalid(key: &str, reason: &'static str) -> StoreError {
    StoreError::InvalidKey {
        key: key.to_owned(),
        reason,
    }
}

/// Checks what keys and prefixes have in common: length, root, characters, segments.
/// `body` is the part after the root, without a trailing `/` for prefixes.
fn check_common(key: &str) -> Result<()> {
    if key.is_empty() {
        return Err(invalid(key, "is empty"));
    }
    if key.len() > MAX_KEY_BYTES {
        return Err(invalid(key, "is longer than 1024 bytes"));
    }
    if !key.starts_with(KEY_ROOT) {
        return Err(invalid(key, "is not under /registry/"));
    }
    // Control characters (NUL above all) would clash with the continuation encoding and make
    // keys that cannot be typed at a shell.
    if key.chars().any(char::is_control) {
        return Err(invalid(key, "contains a control character"));
    }
    if key.contains("//") {
        return Err(invalid(key, "contains an empty segment (\"//\")"));
    }
    let body = key[KEY_ROOT.len()..].trim_end_matches('/');
    if !body.is_empty() && body.split('/').any(|s| s == "." || s == "..") {
        return Err(invalid(key, "contains a \".\" or \"..\" segment"));
    }
    Ok(())
}

/// Validates an object key: `/registry/<resource...>/<name>`, no empty, `.` or `..` segments,
/// no control characters, no trailing `/`, at most [`MAX_KEY_BYTES`].
pub fn validate_key(key: &str) -> Result<()> {
    check_common(key)?;
    if key.ends_with('/') {
        return Err(invalid(
            key,
            "ends with \"/\" (that is a prefix, not a key)",
        ));
    }
    if key[KEY_ROOT.len()..].split('/').count() < 2 {
        return Err(invalid(
            key,
            "names no object (expected /registry/<resource>/<name>)",
        ));
    }
    Ok(())
}

/// Validates a list or watch prefix: `/registry/` or a deeper path ending in `/`. The trailing
/// `/` is required so that `/registry/pods/ns` cannot also match `/registry/pods/ns2/...`.
pub fn validate_prefix(prefix: &str) -> Result<()> {
    check_common(prefix)?;
    if !prefix.ends_with('/') {
        return Err(invalid(prefix, "a prefix must end with \"/\""));
    }
    Ok(())
}

fn check_segment(full: &str, segment: &str) -> Result<()> {
    if segment.is_empty() || segment.contains('/') {
        return Err(invalid(
            full,
            "a namespace or name segment is empty or contains \"/\"",
        ));
    }
    Ok(())
}

/// Builds the key of an object: `/registry/<resource>/<namespace>/<name>`, or
/// `/registry/<resource>/<name>` for a cluster-scoped one (`namespace` = `None`). `resource` may
/// contain `/` (group-qualified resources such as `apiregistration.k8s.io/apiservices`).
pub fn object_key(resource: &str, namespace: Option<&str>, name: &str) -> Result<String> {
    let key = match namespace {
        Some(ns) => format!("{KEY_ROOT}{resource}/{ns}/{name}"),
        None => format!("{KEY_ROOT}{resource}/{name}"),
    };
    if let Some(ns) = namespace {
        check_segment(&key, ns)?;
    }
    check_segment(&key, name)?;
    validate_key(&key)?;
    Ok(key)
}

/// Builds the prefix of a resource (`/registry/<resource>/`) or of one namespace of it
/// (`/registry/<resource>/<namespace>/`).
pub fn resource_prefix(resource: &str, namespace: Option<&str>) -> Result<String> {
    let prefix = match namespace {
        Some(ns) => format!("{KEY_ROOT}{resource}/{ns}/"),
        None => format!("{KEY_ROOT}{resource}/"),
    };
    if let Some(ns) = namespace {
        check_segment(&prefix, ns)?;
    }
    if resource.is_empty() {
        return Err(invalid(&prefix, "the resource is empty"));
    }
    validate_prefix(&prefix)?;
    Ok(prefix)
}

/// The first key after every key starting with `prefix` (etcd's range end for a prefix).
/// Prefixes are validated to end with `/`, whose successor byte `0` keeps it valid UTF-8.
pub(crate) fn prefix_end(prefix: &str) -> String {
    match prefix.strip_suffix('/') {
        Some(stem) => format!("{stem}0"),
        // Not reachable for validated prefixes; append the highest char so the range is still
        // a correct upper bound.
        None => format!("{prefix}\u{10FFFF}"),
    }
}

/// Checks a value's size against [`MAX_VALUE_BYTES`].
pub(crate) fn validate_value(key: &str, value: &[u8]) -> Result<()> {
    if value.len() > MAX_VALUE_BYTES {
        return Err(StoreError::ValueTooLarge {
            key: key.to_owned(),
            size: value.len(),
            limit: MAX_VALUE_BYTES,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_keys_are_refused_with_a_reason() {
        let long = format!("/registry/pods/ns/{}", "a".repeat(MAX_KEY_BYTES));
        let cases: &[(&str, &str)] = &[
            ("", "is empty"),
            ("/pods/ns/a", "is not under /registry/"),
            ("registry/pods/a", "is not under /registry/"),
            ("/registry/pods//a", "empty segment"),
            ("/registry/pods/../secrets/a", "\"..\" segment"),
            ("/registry/pods/./a", "\"..\" segment"),
            ("/registry/pods/ns/a/", "ends with"),
            ("/registry/pods", "names no object"),
            ("/registry/pods/a\0b", "control character"),
            (long.as_str(), "longer than"),
        ];
        for (key, want) in cases {
            match validate_key(key) {
                Err(StoreError::InvalidKey { reason, .. }) => {
                    assert!(
                        reason.contains(want),
                        "{key:?}: reason {reason:?} lacks {want:?}"
                    )
                }
                other => panic!("{key:?}: expected InvalidKey, got {other:?}"),
            }
        }
    }

    #[test]
    fn valid_keys_are_accepted() {
        for key in [
            "/registry/pods/default/web-0",
            "/registry/nodes/node-1",
            "/registry/apiregistration.k8s.io/apiservices/v1.apps",
            "/registry/pods/ns/name.with.dots",
        ] {
            assert!(validate_key(key).is_ok(), "{key}");
        }
    }

    #[test]
    fn prefixes_must_end_with_slash() {
        assert!(validate_prefix("/registry/").is_ok());
        assert!(validate_prefix("/registry/pods/").is_ok());
        assert!(validate_prefix("/registry/pods/ns/").is_ok());
        for bad in [
            "/registry/pods",
            "/registry",
            "",
            "/registry/../",
            "/other/",
        ] {
            assert!(validate_prefix(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn object_key_builds_the_kubernetes_layout() {
        let cases = [
            ("pods", Some("default"), "web", "/registry/pods/default/web"),
            ("nodes", None, "n1", "/registry/nodes/n1"),
        ];
        for (resource, ns, name, want) in cases {
            assert_eq!(object_key(resource, ns, name).ok().as_deref(), Some(want));
        }
        assert!(object_key("pods", Some(""), "a").is_err());
        assert!(object_key("pods", Some("ns"), "a/b").is_err());
        assert!(object_key("pods", None, "..").is_err());
        assert_eq!(
            resource_prefix("pods", Some("ns")).ok().as_deref(),
            Some("/registry/pods/ns/")
        );
        assert!(resource_prefix("", None).is_err());
    }

    #[test]
    fn prefix_end_bounds_exactly_the_prefix() {
        let end = prefix_end("/registry/pods/ns/");
        assert_eq!(end, "/registry/pods/ns0");
        assert!("/registry/pods/ns/zzz" < end.as_str());
        assert!("/registry/pods/ns0" >= end.as_str());
        assert!("/registry/pods/ns2/a" > end.as_str());
    }

    #[test]
    fn values_over_the_limit_are_refused() {
        assert!(validate_value("/registry/a/b", &vec![0; MAX_VALUE_BYTES]).is_ok());
        assert!(matches!(
            validate_value("/registry/a/b", &vec![0; MAX_VALUE_BYTES + 1]),
            Err(StoreError::ValueTooLarge { .. })
        ));
    }
}
