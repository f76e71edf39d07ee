//! `x-kubernetes-list-type` and `x-kubernetes-list-map-keys` of the
//! fields that carry them: upstream's `+listType` / `+listMapKey` markers
//! (`staging/src/k8s.io/api/core/v1/types.go`,
//! `staging/src/k8s.io/api/apps/v1/types.go`,
//! `staging/src/k8s.io/apimachinery/pkg/apis/meta/v1/types.go`).
//!
//! Only `map` and `set` lists are listed: a list without the extension is
//! atomic, which is also what upstream's `+listType=atomic` says. The
//! patch strategies (`x-kubernetes-patch-strategy`, `-merge-key`) are not
//! here: they come from the strategic-merge table in `patch/schema.rs`.
//! An entry whose definition is not in a document is ignored, so entries
//! for kinds berth does not serve yet cost nothing.

/// What a list's `x-kubernetes-list-type` says, when it is not `atomic`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ListType {
    /// `set`: items are unique scalars.
    Set,
    /// `map`: items are objects identified by these keys.
    Map(&'static [&'static str]),
}

/// One list field: the definition (package and type) and property that
/// has it, and its list type.
pub(super) struct ListField {
    package: &'static str,
    ty: &'static str,
    pub(super) property: &'static str,
    pub(super) list_type: ListType,
}

impl ListField {
    /// Whether the field belongs to the definition named `definition`.
    pub(super) fn is_in(&self, definition: &str) -> bool {
        definition.strip_prefix(self.package) == Some(self.ty)
    }
}

/// core/v1 definitions are named `io.k8s.api.core.v1.<Type>`.
const CORE: &str = "io.k8s.api.core.v1.";
/// meta/v1 definitions are named `io.k8s.apimachinery.pkg.apis.meta.v1.<Type>`.
const META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.";
/// apps/v1 definitions are named `io.k8s.api.apps.v1.<Type>`.
const APPS: &str = "io.k8s.api.apps.v1.";

use ListType::{Map, Set};

const fn field(
    package: &'static str,
    ty: &'static str,
    property: &'static str,
    list_type: ListType,
) -> ListField {
    ListField {
        package,
        ty,
        property,
        list_type,
    }
}

/// Every list field whose list type is `map` or `set`.
#[rustfmt::skip]
pub(super) static LIST_FIELDS: &[ListField] = &[
    field(META, "ObjectMeta", "finalizers", Set),
    field(META, "ObjectMeta", "ownerReferences", Map(&["uid"])),
    field(CORE, "VolumeHealthStatus", "healthConditions", Map(&["status", "reason"])),
    field(CORE, "PodVolumeHealth", "healthConditions", Map(&["status", "reason"])),
    field(CORE, "PersistentVolumeClaimStatus", "conditions", Map(&["type"])),
    field(CORE, "VolumeMount", "bindMountOptions", Set),
    field(CORE, "ResourceRequirements", "claims", Map(&["name"])),
    field(CORE, "Container", "ports", Map(&["containerPort", "protocol"])),
    field(CORE, "Container", "env", Map(&["name"])),
    field(CORE, "Container", "volumeMounts", Map(&["mountPath"])),
    field(CORE, "Container", "volumeDevices", Map(&["devicePath"])),
    field(CORE, "ContainerStatus", "volumeMounts", Map(&["mountPath"])),
    field(CORE, "ContainerStatus", "allocatedResourcesStatus", Map(&["name"])),
    field(CORE, "ResourceStatus", "resources", Map(&["resourceID"])),
    field(CORE, "ContainerRestartRuleOnExitCodes", "values", Set),
    field(CORE, "PodSpec", "volumes", Map(&["name"])),
    field(CORE, "PodSpec", "initContainers", Map(&["name"])),
    field(CORE, "PodSpec", "containers", Map(&["name"])),
    field(CORE, "PodSpec", "ephemeralContainers", Map(&["name"])),
    field(CORE, "PodSpec", "imagePullSecrets", Map(&["name"])),
    field(CORE, "PodSpec", "hostAliases", Map(&["ip"])),
    field(CORE, "PodSpec", "topologySpreadConstraints", Map(&["topologyKey", "whenUnsatisfiable"])),
    field(CORE, "PodSpec", "schedulingGates", Map(&["name"])),
    field(CORE, "PodSpec", "resourceClaims", Map(&["name"])),
    field(CORE, "PodSpec", "evictionResponders", Map(&["name"])),
    field(CORE, "EphemeralContainer", "ports", Map(&["containerPort", "protocol"])),
    field(CORE, "EphemeralContainer", "env", Map(&["name"])),
    field(CORE, "EphemeralContainer", "volumeMounts", Map(&["mountPath"])),
    field(CORE, "EphemeralContainer", "volumeDevices", Map(&["devicePath"])),
    field(CORE, "PodStatus", "conditions", Map(&["type"])),
    field(CORE, "PodStatus", "podIPs", Map(&["ip"])),
    field(CORE, "PodStatus", "resourceClaimStatuses", Map(&["name"])),
    field(CORE, "PodStatus", "nodeAllocatableResourceClaimStatuses", Map(&["resourceClaimName"])),
    field(CORE, "PodStatus", "volumeHealth", Map(&["name"])),
    field(CORE, "ReplicationControllerStatus", "conditions", Map(&["type"])),
    field(CORE, "ServiceStatus", "conditions", Map(&["type"])),
    field(CORE, "ServiceSpec", "ports", Map(&["port", "protocol"])),
    field(CORE, "ServiceAccount", "secrets", Map(&["name"])),
    field(CORE, "NodeSpec", "podCIDRs", Set),
    field(CORE, "NodePodPreemptionPolicy", "disableResizePreemption", Set),
    field(CORE, "NodeStatus", "conditions", Map(&["type"])),
    field(CORE, "NodeStatus", "addresses", Map(&["type"])),
    field(CORE, "NamespaceStatus", "conditions", Map(&["type"])),
    field(CORE, "ComponentStatus", "conditions", Map(&["type"])),
    field(CORE, "NodeAllocatableResourceClaimStatus", "containers", Set),
    field(CORE, "NodeAllocatableResourceClaimStatus", "mapping", Map(&["name"])),
    field(CORE, "NodeAllocatableResourceClaimStatus", "overhead", Map(&["name"])),
    field(APPS, "DeploymentStatus", "conditions", Map(&["type"])),
    field(APPS, "ReplicaSetStatus", "conditions", Map(&["type"])),
    field(APPS, "DaemonSetStatus", "conditions", Map(&["type"])),
    field(APPS, "StatefulSetStatus", "conditions", Map(&["type"])),
];
