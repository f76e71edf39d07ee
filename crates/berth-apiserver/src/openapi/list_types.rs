//! `x-kubernetes-list-type` and `x-kubernetes-list-map-keys` of the
//! fields that carry them: upstream's `+listType` / `+listMapKey` markers
//! (`staging/src/k8s.io/api/core/v1/types.go`,
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
pub(super) static LIST_FIELDS: &[ListField] = &[
    field(META, "ObjectMeta", "finalizers", ListType::Set),
    field(META, "ObjectMeta", "ownerReferences", ListType::Map(&["uid"])),
    field(CORE, "VolumeHealthStatus", "healthConditions", ListType::Map(&["status", "reason"])),
    field(CORE, "PodVolumeHealth", "healthConditions", ListType::Map(&["status", "reason"])),
    field(CORE, "PersistentVolumeClaimStatus", "conditions", ListType::Map(&["type"])),
    field(CORE, "VolumeMount", "bindMountOptions", ListType::Set),
    field(CORE, "ResourceRequirements", "claims", ListType::Map(&["name"])),
    field(CORE, "Container", "ports", ListType::Map(&["containerPort", "protocol"])),
    field(CORE, "Container", "env", ListType::Map(&["name"])),
    field(CORE, "Container", "volumeMounts", ListType::Map(&["mountPath"])),
    field(CORE, "Container", "volumeDevices", ListType::Map(&["devicePath"])),
    field(CORE, "ContainerStatus", "volumeMounts", ListType::Map(&["mountPath"])),
    field(CORE, "ContainerStatus", "allocatedResourcesStatus", ListType::Map(&["name"])),
    field(CORE, "ResourceStatus", "resources", ListType::Map(&["resourceID"])),
    field(CORE, "ContainerRestartRuleOnExitCodes", "values", ListType::Set),
    field(CORE, "PodSpec", "volumes", ListType::Map(&["name"])),
    field(CORE, "PodSpec", "initContainers", ListType::Map(&["name"])),
    field(CORE, "PodSpec", "containers", ListType::Map(&["name"])),
    field(CORE, "PodSpec", "ephemeralContainers", ListType::Map(&["name"])),
    field(CORE, "PodSpec", "imagePullSecrets", ListType::Map(&["name"])),
    field(CORE, "PodSpec", "hostAliases", ListType::Map(&["ip"])),
    field(CORE, "PodSpec", "topologySpreadConstraints", ListType::Map(&["topologyKey", "whenUnsatisfiable"])),
    field(CORE, "PodSpec", "schedulingGates", ListType::Map(&["name"])),
    field(CORE, "PodSpec", "resourceClaims", ListType::Map(&["name"])),
    field(CORE, "PodSpec", "evictionResponders", ListType::Map(&["name"])),
    field(CORE, "EphemeralContainer", "ports", ListType::Map(&["containerPort", "protocol"])),
    field(CORE, "EphemeralContainer", "env", ListType::Map(&["name"])),
    field(CORE, "EphemeralContainer", "volumeMounts", ListType::Map(&["mountPath"])),
    field(CORE, "EphemeralContainer", "volumeDevices", ListType::Map(&["devicePath"])),
    field(CORE, "PodStatus", "conditions", ListType::Map(&["type"])),
    field(CORE, "PodStatus", "podIPs", ListType::Map(&["ip"])),
    field(CORE, "PodStatus", "resourceClaimStatuses", ListType::Map(&["name"])),
    field(CORE, "PodStatus", "nodeAllocatableResourceClaimStatuses", ListType::Map(&["resourceClaimName"])),
    field(CORE, "PodStatus", "volumeHealth", ListType::Map(&["name"])),
    field(CORE, "ReplicationControllerStatus", "conditions", ListType::Map(&["type"])),
    field(CORE, "ServiceStatus", "conditions", ListType::Map(&["type"])),
    field(CORE, "ServiceSpec", "ports", ListType::Map(&["port", "protocol"])),
    field(CORE, "ServiceAccount", "secrets", ListType::Map(&["name"])),
    field(CORE, "NodeSpec", "podCIDRs", ListType::Set),
    field(CORE, "NodePodPreemptionPolicy", "disableResizePreemption", ListType::Set),
    field(CORE, "NodeStatus", "conditions", ListType::Map(&["type"])),
    field(CORE, "NodeStatus", "addresses", ListType::Map(&["type"])),
    field(CORE, "NamespaceStatus", "conditions", ListType::Map(&["type"])),
    field(CORE, "ComponentStatus", "conditions", ListType::Map(&["type"])),
    field(CORE, "NodeAllocatableResourceClaimStatus", "containers", ListType::Set),
    field(CORE, "NodeAllocatableResourceClaimStatus", "mapping", ListType::Map(&["name"])),
    field(CORE, "NodeAllocatableResourceClaimStatus", "overhead", ListType::Map(&["name"])),
];
