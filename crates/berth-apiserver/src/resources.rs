//! The resource types berth serves, one declaration each.
//!
//! A declaration says what discovery advertises (group, version, kind,
//! plural, short names, verbs, subresources), where objects live in the
//! store (upstream's etcd layout: nodes are `/registry/minions/...`), and
//! whether objects are namespaced. Adding a resource type is a few lines
//! here plus, where it needs one, a strategy in `strategy.rs`.

/// One served resource type.
#[derive(Debug, PartialEq, Eq)]
pub struct ResourceType {
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    pub plural: &'static str,
    pub singular: &'static str,
    pub namespaced: bool,
    pub short_names: &'static [&'static str],
    pub categories: &'static [&'static str],
    /// Subresources served under `<name>/<subresource>`.
    pub subresources: &'static [Subresource],
    /// The resource segment of the store key (`/registry/<this>/...`).
    pub storage: &'static str,
    /// Verbs discovery advertises.
    pub verbs: &'static [&'static str],
    /// Another version of a resource kept in that resource's storage form
    /// (events.k8s.io/v1 Events are core/v1 Events in the store).
    pub stored_as: Option<&'static ResourceType>,
}

/// A subresource and the kind its requests and responses carry.
#[derive(Debug, PartialEq, Eq)]
pub struct Subresource {
    pub name: &'static str,
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    pub verbs: &'static [&'static str],
}

const ALL_VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

const STATUS: Subresource = Subresource {
    name: "status",
    group: "",
    version: "",
    kind: "",
    verbs: &["get", "patch", "update"],
};

impl ResourceType {
    /// `v1` or `group/version`, as `apiVersion` fields write it.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    pub fn list_kind(&self) -> String {
        format!("{}List", self.kind)
    }

    pub fn subresource(&self, name: &str) -> Option<&'static Subresource> {
        self.subresources.iter().find(|s| s.name == name)
    }

    /// The store prefix of the objects of a namespace, or of all of them.
    pub fn prefix(&self, namespace: Option<&str>) -> String {
        match namespace {
            Some(ns) if self.namespaced && !ns.is_empty() => {
                format!("/registry/{}/{ns}/", self.storage)
            }
            _ => format!("/registry/{}/", self.storage),
        }
    }

    /// The store key of one object.
    pub fn key(&self, namespace: &str, name: &str) -> String {
        if self.namespaced {
            format!("/registry/{}/{namespace}/{name}", self.storage)
        } else {
            format!("/registry/{}/{name}", self.storage)
        }
    }
}

pub static NAMESPACES: ResourceType = ResourceType {
    group: "",
    version: "v1",
    kind: "Namespace",
    plural: "namespaces",
    singular: "namespace",
    namespaced: false,
    short_names: &["ns"],
    categories: &[],
    subresources: &[STATUS],
    storage: "namespaces",
    verbs: &[
        "create", "delete", "get", "list", "patch", "update", "watch",
    ],
    stored_as: None,
};

pub static NODES: ResourceType = ResourceType {
    group: "",
    version: "v1",
    kind: "Node",
    plural: "nodes",
    singular: "node",
    namespaced: false,
    short_names: &["no"],
    categories: &[],
    subresources: &[STATUS],
    storage: "minions",
    verbs: ALL_VERBS,
    stored_as: None,
};

pub static PODS: ResourceType = ResourceType {
    group: "",
    version: "v1",
    kind: "Pod",
    plural: "pods",
    singular: "pod",
    namespaced: true,
    short_names: &["po"],
    categories: &["all"],
    subresources: &[
        STATUS,
        Subresource {
            name: "binding",
            group: "",
            version: "v1",
            kind: "Binding",
            verbs: &["create"],
        },
        Subresource {
            name: "eviction",
            group: "policy",
            version: "v1",
            kind: "Eviction",
            verbs: &["create"],
        },
        Subresource {
            name: "log",
            group: "",
            version: "v1",
            kind: "Pod",
            verbs: &["get"],
        },
    ],
    storage: "pods",
    verbs: ALL_VERBS,
    stored_as: None,
};

pub static EVENTS: ResourceType = ResourceType {
    group: "",
    version: "v1",
    kind: "Event",
    plural: "events",
    singular: "event",
    namespaced: true,
    short_names: &["ev"],
    categories: &[],
    subresources: &[],
    storage: "events",
    verbs: ALL_VERBS,
    stored_as: None,
};

pub static LEASES: ResourceType = ResourceType {
    group: "coordination.k8s.io",
    version: "v1",
    kind: "Lease",
    plural: "leases",
    singular: "lease",
    namespaced: true,
    short_names: &[],
    categories: &[],
    subresources: &[],
    storage: "leases",
    verbs: ALL_VERBS,
    stored_as: None,
};

pub static EVENTS_V1: ResourceType = ResourceType {
    group: "events.k8s.io",
    version: "v1",
    kind: "Event",
    plural: "events",
    singular: "event",
    namespaced: true,
    short_names: &["ev"],
    categories: &[],
    subresources: &[],
    storage: "events",
    verbs: ALL_VERBS,
    stored_as: Some(&EVENTS),
};

/// Every served resource type, in discovery order.
pub static RESOURCES: &[&ResourceType] =
    &[&NAMESPACES, &NODES, &PODS, &EVENTS, &LEASES, &EVENTS_V1];

/// The resource type at `group/version/plural`, if served.
pub fn lookup(group: &str, version: &str, plural: &str) -> Option<&'static ResourceType> {
    RESOURCES
        .iter()
        .copied()
        .find(|r| r.group == group && r.version == version && r.plural == plural)
}

/// The served API groups (besides the core group) and their versions.
pub fn groups() -> Vec<(&'static str, &'static str)> {
    let mut groups: Vec<(&str, &str)> = RESOURCES
        .iter()
        .filter(|r| !r.group.is_empty())
        .map(|r| (r.group, r.version))
        .collect();
    groups.dedup();
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_follow_the_upstream_etcd_layout() {
        let cases: &[(&ResourceType, &str, &str, &str)] = &[
            (&PODS, "default", "web", "/registry/pods/default/web"),
            (&NODES, "", "node1", "/registry/minions/node1"),
            (
                &NAMESPACES,
                "",
                "kube-system",
                "/registry/namespaces/kube-system",
            ),
            (
                &LEASES,
                "kube-node-lease",
                "node1",
                "/registry/leases/kube-node-lease/node1",
            ),
            (
                &EVENTS,
                "default",
                "web.1",
                "/registry/events/default/web.1",
            ),
        ];
        for (rt, ns, name, want) in cases {
            assert_eq!(rt.key(ns, name), *want);
        }
        assert_eq!(PODS.prefix(Some("default")), "/registry/pods/default/");
        assert_eq!(PODS.prefix(None), "/registry/pods/");
        assert_eq!(NODES.prefix(Some("ignored")), "/registry/minions/");
    }

    #[test]
    fn lookup_finds_served_types_only() {
        assert_eq!(lookup("", "v1", "pods").map(|r| r.kind), Some("Pod"));
        assert_eq!(
            lookup("coordination.k8s.io", "v1", "leases").map(|r| r.kind),
            Some("Lease")
        );
        assert!(lookup("", "v1", "leases").is_none());
        assert!(lookup("apps", "v1", "deployments").is_none());
        assert_eq!(
            groups(),
            vec![("coordination.k8s.io", "v1"), ("events.k8s.io", "v1")]
        );
        assert_eq!(LEASES.api_version(), "coordination.k8s.io/v1");
    }
}
