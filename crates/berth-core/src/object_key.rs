//! An object's identity within its type: namespace and name, the key
//! every client keeps its state by.

use std::fmt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// Namespace (empty for cluster-scoped objects) and name. Displays as
/// `namespace/name`, or `name` alone when cluster-scoped, as upstream's
/// `cache.MetaNamespaceKeyFunc` does.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectKey {
    pub namespace: String,
    pub name: String,
}

impl ObjectKey {
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> ObjectKey {
        ObjectKey {
            namespace: namespace.into(),
            name: name.into(),
        }
    }

    /// A cluster-scoped object's key.
    pub fn cluster(name: impl Into<String>) -> ObjectKey {
        ObjectKey::new(String::new(), name)
    }

    pub fn of_meta(meta: &ObjectMeta) -> ObjectKey {
        ObjectKey {
            namespace: meta.namespace.clone().unwrap_or_default(),
            name: meta.name.clone().unwrap_or_default(),
        }
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.namespace.is_empty() {
            f.write_str(&self.name)
        } else {
            write!(f, "{}/{}", self.namespace, self.name)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn displays_as_upstreams_meta_namespace_key() {
        struct Case {
            key: ObjectKey,
            want: &'static str,
        }
        for case in [
            Case {
                key: ObjectKey::new("default", "web-1"),
                want: "default/web-1",
            },
            Case {
                key: ObjectKey::cluster("node-1"),
                want: "node-1",
            },
        ] {
            assert_eq!(case.key.to_string(), case.want);
        }
    }
}
