//! The resource types berth serves, one declaration each.
//!
//! A declaration says what discovery advertises (group, version, kind,
//! plural, short names, verbs, subresources), where objects live in the
//! store (upstream's etcd layout: nodes are `/registry/minions/...`), and
//! whether objects are namespaced, and the [`crate::strategy::Strategy`]
//! that serves it. Serving a new type is a declaration here (and its entry
//! in [`RESOURCES`]) and a strategy file in `strategy/` that names its
//! k8s-openapi type and overrides what it does differently
//! (`docs/architecture.md` walks through Lease).

pub use crate::strategy::{ResourceType, Subresource};
use crate::strategy::{
    config, controllerrevision, daemonset, deployment, dra, event, lease, namespace, node, pod,
    poddisruptionbudget, priorityclass, replicaset, review, service, statefulset, storage, stored,
};

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

/// `/scale` (Deployments, ReplicaSets, StatefulSets): an autoscaling/v1
/// Scale.
const SCALE: Subresource = Subresource {
    name: "scale",
    group: "autoscaling",
    version: "v1",
    kind: "Scale",
    verbs: &["get", "patch", "update"],
};

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
    strategy: &namespace::Namespaces,
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
    strategy: &node::Nodes,
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
        // berth's: why the pod goes where it goes (api/scheduling.rs).
        Subresource {
            name: "scheduling",
            group: "berth.dev",
            version: "v1alpha1",
            kind: "PodScheduling",
            verbs: &["get"],
        },
    ],
    storage: "pods",
    verbs: ALL_VERBS,
    stored_as: None,
    strategy: &pod::Pods,
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
    strategy: &event::Events,
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
    strategy: &lease::Leases,
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
    strategy: &event::EventsV1,
};

pub static DEPLOYMENTS: ResourceType = ResourceType {
    group: "apps",
    version: "v1",
    kind: "Deployment",
    plural: "deployments",
    singular: "deployment",
    namespaced: true,
    short_names: &["deploy"],
    categories: &["all"],
    subresources: &[STATUS, SCALE],
    storage: "deployments",
    verbs: ALL_VERBS,
    stored_as: None,
    strategy: &deployment::Deployments::new(),
};

pub static REPLICASETS: ResourceType = ResourceType {
    group: "apps",
    version: "v1",
    kind: "ReplicaSet",
    plural: "replicasets",
    singular: "replicaset",
    namespaced: true,
    short_names: &["rs"],
    categories: &["all"],
    subresources: &[STATUS, SCALE],
    storage: "replicasets",
    verbs: ALL_VERBS,
    stored_as: None,
    strategy: &replicaset::ReplicaSets::new(),
};

pub static DAEMONSETS: ResourceType = ResourceType {
    group: "apps",
    version: "v1",
    kind: "DaemonSet",
    plural: "daemonsets",
    singular: "daemonset",
    namespaced: true,
    short_names: &["ds"],
    categories: &["all"],
    subresources: &[STATUS],
    storage: "daemonsets",
    verbs: ALL_VERBS,
    stored_as: None,
    strategy: &daemonset::DaemonSets::new(),
};

pub static STATEFULSETS: ResourceType = ResourceType {
    group: "apps",
    version: "v1",
    kind: "StatefulSet",
    plural: "statefulsets",
    singular: "statefulset",
    namespaced: true,
    short_names: &["sts"],
    categories: &["all"],
    subresources: &[STATUS, SCALE],
    storage: "statefulsets",
    verbs: ALL_VERBS,
    stored_as: None,
    strategy: &statefulset::StatefulSets::new(),
};

pub static CONTROLLERREVISIONS: ResourceType = ResourceType {
    group: "apps",
    version: "v1",
    kind: "ControllerRevision",
    plural: "controllerrevisions",
    singular: "controllerrevision",
    namespaced: true,
    short_names: &[],
    categories: &[],
    subresources: &[],
    storage: "controllerrevisions",
    verbs: ALL_VERBS,
    stored_as: None,
    strategy: &controllerrevision::ControllerRevisions,
};

// The common core types: stored, validated, defaulted, listed and watched,
// with no data plane behind them (Services get cluster IPs and node ports,
// nothing proxies to them). Services and Endpoints are stored where
// upstream keeps them, under `/registry/services/`.

/// A namespaced core/v1 type with every verb and no subresource, stored
/// under its plural: where the declarations below start.
const fn core_namespaced(
    kind: &'static str,
    plural: &'static str,
    singular: &'static str,
    strategy: &'static dyn crate::strategy::Strategy,
) -> ResourceType {
    ResourceType {
        group: "",
        version: "v1",
        kind,
        plural,
        singular,
        namespaced: true,
        short_names: &[],
        categories: &[],
        subresources: &[],
        storage: plural,
        verbs: ALL_VERBS,
        stored_as: None,
        strategy,
    }
}

pub static CONFIG_MAPS: ResourceType = ResourceType {
    short_names: &["cm"],
    ..core_namespaced("ConfigMap", "configmaps", "configmap", &config::ConfigMaps)
};

pub static SECRETS: ResourceType = core_namespaced("Secret", "secrets", "secret", &config::Secrets);

pub static SERVICE_ACCOUNTS: ResourceType = ResourceType {
    short_names: &["sa"],
    ..core_namespaced(
        "ServiceAccount",
        "serviceaccounts",
        "serviceaccount",
        &stored::ServiceAccounts,
    )
};

pub static SERVICES: ResourceType = ResourceType {
    short_names: &["svc"],
    categories: &["all"],
    subresources: &[STATUS],
    storage: "services/specs",
    ..core_namespaced("Service", "services", "service", &service::Services)
};

pub static ENDPOINTS: ResourceType = ResourceType {
    short_names: &["ep"],
    storage: "services/endpoints",
    ..core_namespaced(
        "Endpoints",
        "endpoints",
        "endpoints",
        &stored::EndpointsStrategy,
    )
};

pub static ENDPOINT_SLICES: ResourceType = ResourceType {
    group: "discovery.k8s.io",
    ..core_namespaced(
        "EndpointSlice",
        "endpointslices",
        "endpointslice",
        &stored::EndpointSlices,
    )
};

pub static RESOURCE_QUOTAS: ResourceType = ResourceType {
    short_names: &["quota"],
    subresources: &[STATUS],
    ..core_namespaced(
        "ResourceQuota",
        "resourcequotas",
        "resourcequota",
        &stored::ResourceQuotas,
    )
};

pub static LIMIT_RANGES: ResourceType = ResourceType {
    short_names: &["limits"],
    ..core_namespaced(
        "LimitRange",
        "limitranges",
        "limitrange",
        &stored::LimitRanges,
    )
};

// The reviews of one's own access and identity: create-only, answered by
// the authorizer, never stored (no storage, no watch cache).

/// A review: cluster-scoped, created only, not stored.
const fn self_review(
    group: &'static str,
    kind: &'static str,
    plural: &'static str,
    singular: &'static str,
    strategy: &'static review::Review,
) -> ResourceType {
    ResourceType {
        group,
        version: "v1",
        kind,
        plural,
        singular,
        namespaced: false,
        short_names: &[],
        categories: &[],
        subresources: &[],
        storage: "",
        verbs: &["create"],
        stored_as: None,
        strategy,
    }
}

pub static SELF_SUBJECT_ACCESS_REVIEWS: ResourceType = self_review(
    "authorization.k8s.io",
    "SelfSubjectAccessReview",
    "selfsubjectaccessreviews",
    "selfsubjectaccessreview",
    &review::Review::Access,
);

pub static SELF_SUBJECT_RULES_REVIEWS: ResourceType = self_review(
    "authorization.k8s.io",
    "SelfSubjectRulesReview",
    "selfsubjectrulesreviews",
    "selfsubjectrulesreview",
    &review::Review::Rules {
        served: served_types,
    },
);

pub static SELF_SUBJECT_REVIEWS: ResourceType = self_review(
    "authentication.k8s.io",
    "SelfSubjectReview",
    "selfsubjectreviews",
    "selfsubjectreview",
    &review::Review::Identity,
);

pub static PRIORITY_CLASSES: ResourceType = ResourceType {
    group: "scheduling.k8s.io",
    version: "v1",
    kind: "PriorityClass",
    plural: "priorityclasses",
    singular: "priorityclass",
    namespaced: false,
    short_names: &["pc"],
    categories: &[],
    subresources: &[],
    storage: "priorityclasses",
    verbs: ALL_VERBS,
    stored_as: None,
    strategy: &priorityclass::PriorityClasses,
};

pub static POD_DISRUPTION_BUDGETS: ResourceType = ResourceType {
    group: "policy",
    version: "v1",
    kind: "PodDisruptionBudget",
    plural: "poddisruptionbudgets",
    singular: "poddisruptionbudget",
    namespaced: true,
    short_names: &["pdb"],
    categories: &[],
    subresources: &[STATUS],
    storage: "poddisruptionbudgets",
    verbs: ALL_VERBS,
    stored_as: None,
    strategy: &poddisruptionbudget::PodDisruptionBudgets,
};

/// A declaration of a type stored as sent, with every verb.
#[allow(clippy::too_many_arguments)]
const fn stored(
    group: &'static str,
    kind: &'static str,
    plural: &'static str,
    singular: &'static str,
    namespaced: bool,
    short_names: &'static [&'static str],
    subresources: &'static [Subresource],
    storage: &'static str,
    strategy: &'static dyn crate::strategy::Strategy,
) -> ResourceType {
    ResourceType {
        group,
        version: "v1",
        kind,
        plural,
        singular,
        namespaced,
        short_names,
        categories: &[],
        subresources,
        storage,
        verbs: ALL_VERBS,
        stored_as: None,
        strategy,
    }
}

// What upstream's kube-scheduler and kube-controller-manager list and
// watch, stored as sent (strategy/storage.rs, strategy/dra.rs), under
// upstream's storage keys (`/registry/controllers/` for
// ReplicationControllers).
pub static PERSISTENT_VOLUMES: ResourceType = stored(
    "",
    "PersistentVolume",
    "persistentvolumes",
    "persistentvolume",
    false,
    &["pv"],
    &[STATUS],
    "persistentvolumes",
    &storage::PersistentVolumes,
);
pub static PERSISTENT_VOLUME_CLAIMS: ResourceType = stored(
    "",
    "PersistentVolumeClaim",
    "persistentvolumeclaims",
    "persistentvolumeclaim",
    true,
    &["pvc"],
    &[STATUS],
    "persistentvolumeclaims",
    &storage::PersistentVolumeClaims,
);
pub static REPLICATION_CONTROLLERS: ResourceType = ResourceType {
    categories: &["all"],
    ..stored(
        "",
        "ReplicationController",
        "replicationcontrollers",
        "replicationcontroller",
        true,
        &["rc"],
        &[STATUS],
        "controllers",
        &stored::ReplicationControllers,
    )
};
pub static STORAGE_CLASSES: ResourceType = stored(
    "storage.k8s.io",
    "StorageClass",
    "storageclasses",
    "storageclass",
    false,
    &["sc"],
    &[],
    "storageclasses",
    &storage::StorageClasses,
);
pub static CSI_DRIVERS: ResourceType = stored(
    "storage.k8s.io",
    "CSIDriver",
    "csidrivers",
    "csidriver",
    false,
    &[],
    &[],
    "csidrivers",
    &storage::CsiDrivers,
);
pub static CSI_NODES: ResourceType = stored(
    "storage.k8s.io",
    "CSINode",
    "csinodes",
    "csinode",
    false,
    &[],
    &[],
    "csinodes",
    &storage::CsiNodes,
);
pub static CSI_STORAGE_CAPACITIES: ResourceType = stored(
    "storage.k8s.io",
    "CSIStorageCapacity",
    "csistoragecapacities",
    "csistoragecapacity",
    true,
    &[],
    &[],
    "csistoragecapacities",
    &storage::CsiStorageCapacities,
);
pub static VOLUME_ATTACHMENTS: ResourceType = stored(
    "storage.k8s.io",
    "VolumeAttachment",
    "volumeattachments",
    "volumeattachment",
    false,
    &[],
    &[STATUS],
    "volumeattachments",
    &storage::VolumeAttachments,
);
pub static DEVICE_CLASSES: ResourceType = stored(
    "resource.k8s.io",
    "DeviceClass",
    "deviceclasses",
    "deviceclass",
    false,
    &[],
    &[],
    "deviceclasses",
    &dra::DeviceClasses,
);
pub static RESOURCE_CLAIMS: ResourceType = stored(
    "resource.k8s.io",
    "ResourceClaim",
    "resourceclaims",
    "resourceclaim",
    true,
    &[],
    &[STATUS],
    "resourceclaims",
    &dra::ResourceClaims,
);
pub static RESOURCE_SLICES: ResourceType = stored(
    "resource.k8s.io",
    "ResourceSlice",
    "resourceslices",
    "resourceslice",
    false,
    &[],
    &[],
    "resourceslices",
    &dra::ResourceSlices,
);

/// Every served resource type, in discovery order (a group's types
/// together: [`groups`] lists each group once).
pub static RESOURCES: &[&ResourceType] = &[
    &NAMESPACES,
    &NODES,
    &PODS,
    &EVENTS,
    &CONFIG_MAPS,
    &SECRETS,
    &SERVICE_ACCOUNTS,
    &SERVICES,
    &ENDPOINTS,
    &RESOURCE_QUOTAS,
    &LIMIT_RANGES,
    &PERSISTENT_VOLUMES,
    &PERSISTENT_VOLUME_CLAIMS,
    &REPLICATION_CONTROLLERS,
    &LEASES,
    &EVENTS_V1,
    &DEPLOYMENTS,
    &REPLICASETS,
    &DAEMONSETS,
    &STATEFULSETS,
    &CONTROLLERREVISIONS,
    &ENDPOINT_SLICES,
    &SELF_SUBJECT_ACCESS_REVIEWS,
    &SELF_SUBJECT_RULES_REVIEWS,
    &SELF_SUBJECT_REVIEWS,
    &PRIORITY_CLASSES,
    &STORAGE_CLASSES,
    &CSI_DRIVERS,
    &CSI_NODES,
    &CSI_STORAGE_CAPACITIES,
    &VOLUME_ATTACHMENTS,
    &DEVICE_CLASSES,
    &RESOURCE_CLAIMS,
    &RESOURCE_SLICES,
    &POD_DISRUPTION_BUDGETS,
];

/// [`RESOURCES`], for the rules review (which its declaration names).
fn served_types() -> &'static [&'static ResourceType] {
    RESOURCES
}

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
        struct Case<'a> {
            rt: &'a ResourceType,
            ns: &'static str,
            name: &'static str,
            want: &'static str,
        }
        let cases: &[Case] = &[
            Case {
                rt: &PODS,
                ns: "default",
                name: "web",
                want: "/registry/pods/default/web",
            },
            Case {
                rt: &NODES,
                ns: "",
                name: "node1",
                want: "/registry/minions/node1",
            },
            Case {
                rt: &NAMESPACES,
                ns: "",
                name: "kube-system",
                want: "/registry/namespaces/kube-system",
            },
            Case {
                rt: &LEASES,
                ns: "kube-node-lease",
                name: "node1",
                want: "/registry/leases/kube-node-lease/node1",
            },
            Case {
                rt: &EVENTS,
                ns: "default",
                name: "web.1",
                want: "/registry/events/default/web.1",
            },
            Case {
                rt: &DEPLOYMENTS,
                ns: "default",
                name: "web",
                want: "/registry/deployments/default/web",
            },
            Case {
                rt: &REPLICASETS,
                ns: "default",
                name: "web-6d4b9c8f6d",
                want: "/registry/replicasets/default/web-6d4b9c8f6d",
            },
            Case {
                rt: &DAEMONSETS,
                ns: "kube-system",
                name: "agent",
                want: "/registry/daemonsets/kube-system/agent",
            },
            Case {
                rt: &STATEFULSETS,
                ns: "default",
                name: "db",
                want: "/registry/statefulsets/default/db",
            },
            Case {
                rt: &CONTROLLERREVISIONS,
                ns: "default",
                name: "db-7c9f8d6b5",
                want: "/registry/controllerrevisions/default/db-7c9f8d6b5",
            },
            Case {
                rt: &CONFIG_MAPS,
                ns: "default",
                name: "app",
                want: "/registry/configmaps/default/app",
            },
            Case {
                rt: &SECRETS,
                ns: "default",
                name: "db",
                want: "/registry/secrets/default/db",
            },
            Case {
                rt: &SERVICE_ACCOUNTS,
                ns: "default",
                name: "default",
                want: "/registry/serviceaccounts/default/default",
            },
            Case {
                rt: &SERVICES,
                ns: "default",
                name: "web",
                want: "/registry/services/specs/default/web",
            },
            Case {
                rt: &ENDPOINTS,
                ns: "default",
                name: "web",
                want: "/registry/services/endpoints/default/web",
            },
            Case {
                rt: &ENDPOINT_SLICES,
                ns: "default",
                name: "web-x1",
                want: "/registry/endpointslices/default/web-x1",
            },
            Case {
                rt: &RESOURCE_QUOTAS,
                ns: "team-a",
                name: "compute",
                want: "/registry/resourcequotas/team-a/compute",
            },
            Case {
                rt: &LIMIT_RANGES,
                ns: "team-a",
                name: "defaults",
                want: "/registry/limitranges/team-a/defaults",
            },
            Case {
                rt: &POD_DISRUPTION_BUDGETS,
                ns: "default",
                name: "web",
                want: "/registry/poddisruptionbudgets/default/web",
            },
            Case {
                rt: &PRIORITY_CLASSES,
                ns: "ignored",
                name: "system-node-critical",
                want: "/registry/priorityclasses/system-node-critical",
            },
            Case {
                rt: &PERSISTENT_VOLUMES,
                ns: "",
                name: "pv1",
                want: "/registry/persistentvolumes/pv1",
            },
            Case {
                rt: &PERSISTENT_VOLUME_CLAIMS,
                ns: "default",
                name: "data",
                want: "/registry/persistentvolumeclaims/default/data",
            },
            Case {
                rt: &REPLICATION_CONTROLLERS,
                ns: "default",
                name: "web",
                want: "/registry/controllers/default/web",
            },
            Case {
                rt: &STORAGE_CLASSES,
                ns: "",
                name: "fast",
                want: "/registry/storageclasses/fast",
            },
            Case {
                rt: &CSI_DRIVERS,
                ns: "",
                name: "csi.example.com",
                want: "/registry/csidrivers/csi.example.com",
            },
            Case {
                rt: &CSI_NODES,
                ns: "",
                name: "node1",
                want: "/registry/csinodes/node1",
            },
            Case {
                rt: &CSI_STORAGE_CAPACITIES,
                ns: "kube-system",
                name: "csisc-1",
                want: "/registry/csistoragecapacities/kube-system/csisc-1",
            },
            Case {
                rt: &VOLUME_ATTACHMENTS,
                ns: "",
                name: "csi-1",
                want: "/registry/volumeattachments/csi-1",
            },
            Case {
                rt: &DEVICE_CLASSES,
                ns: "",
                name: "gpu",
                want: "/registry/deviceclasses/gpu",
            },
            Case {
                rt: &RESOURCE_CLAIMS,
                ns: "default",
                name: "gpu-claim",
                want: "/registry/resourceclaims/default/gpu-claim",
            },
            Case {
                rt: &RESOURCE_SLICES,
                ns: "",
                name: "node1-gpu",
                want: "/registry/resourceslices/node1-gpu",
            },
        ];
        for Case { rt, ns, name, want } in cases {
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
        assert_eq!(
            lookup("apps", "v1", "deployments").map(|r| r.kind),
            Some("Deployment")
        );
        assert!(lookup("apps", "v1beta1", "deployments").is_none());
        assert_eq!(
            groups(),
            vec![
                ("coordination.k8s.io", "v1"),
                ("events.k8s.io", "v1"),
                ("apps", "v1"),
                ("discovery.k8s.io", "v1"),
                ("authorization.k8s.io", "v1"),
                ("authentication.k8s.io", "v1"),
                ("scheduling.k8s.io", "v1"),
                ("storage.k8s.io", "v1"),
                ("resource.k8s.io", "v1"),
                ("policy", "v1"),
            ]
        );
        // Services and Endpoints share upstream's `services/` prefix without
        // either's prefix holding the other's keys.
        assert_eq!(SERVICES.prefix(None), "/registry/services/specs/");
        assert_eq!(
            ENDPOINTS.prefix(Some("default")),
            "/registry/services/endpoints/default/"
        );
        assert_eq!(LEASES.api_version(), "coordination.k8s.io/v1");
    }
}
