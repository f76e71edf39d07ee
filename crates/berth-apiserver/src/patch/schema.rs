//! Strategic-merge-patch schemas: which fields of a kind merge lists by
//! key, union primitive lists, or replace a whole value.
//!
//! Upstream reads this from Go struct tags (`patchStrategy`,
//! `patchMergeKey`) through reflection. berth has no Go structs, so the
//! tags of the fields that carry one are copied here, by hand, from
//! `staging/src/k8s.io/api/core/v1/types.go`,
//! `staging/src/k8s.io/api/apps/v1/types.go` and
//! `staging/src/k8s.io/apimachinery/pkg/apis/meta/v1/types.go`. A field
//! that is not listed has no strategy: a map under it is merged key by
//! key, a list under it is replaced whole. That is also what upstream does
//! for every untagged field, so only tagged fields (and the structs on the
//! way to them) need an entry.
//!
//! Deliberately absent, because upstream has no tag on them: Pod
//! `spec.tolerations`, Node `spec.taints`, container `envFrom`, `args`,
//! `command`, `resizePolicy`, Namespace `spec.finalizers`, and everything
//! in Event and Lease.

/// What a field's `patchStrategy` tag says, reduced to what the apply side
/// of strategic merge patch looks at. `retainKeys` is kept apart
/// ([`Field::tag`]): when applying, only a `$retainKeys` directive in the
/// patch itself acts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Strategy {
    /// No tag: maps merge, lists are replaced.
    None,
    /// `patchStrategy:"merge"`: lists are merged (by `merge_key` for lists
    /// of maps, as a set for lists of primitives).
    Merge,
    /// `patchStrategy:"replace"`: the value is replaced whole.
    Replace,
}

/// One tagged field of a struct.
#[derive(Debug)]
pub(crate) struct Field {
    pub(crate) name: &'static str,
    pub(crate) strategy: Strategy,
    /// `patchMergeKey`, empty when the tag has none.
    pub(crate) merge_key: &'static str,
    /// The struct under the field (the element's struct for a list).
    pub(crate) ty: Option<&'static Type>,
    /// `retainKeys` beside `merge` in the tag: only computed patches (by
    /// clients, from the OpenAPI documents) act on it.
    retain_keys: bool,
}

impl Field {
    /// The `patchStrategy` tag as upstream writes it, which the OpenAPI
    /// documents publish as `x-kubernetes-patch-strategy`.
    pub(crate) fn tag(&self) -> Option<&'static str> {
        match (self.strategy, self.retain_keys) {
            (Strategy::None, false) => None,
            (Strategy::None, true) => Some("retainKeys"),
            (Strategy::Merge, false) => Some("merge"),
            (Strategy::Merge, true) => Some("merge,retainKeys"),
            (Strategy::Replace, _) => Some("replace"),
        }
    }
}

/// A struct: the tagged fields, and the untagged fields that lead to
/// tagged ones.
#[derive(Debug)]
pub(crate) struct Type {
    pub(crate) fields: &'static [Field],
}

/// What a lookup of a field finds: the strategy, the merge key and the
/// struct underneath (`None`: a struct with no tagged fields).
#[derive(Clone, Copy, Debug)]
pub(crate) struct FieldMeta {
    pub(crate) strategy: Strategy,
    pub(crate) merge_key: &'static str,
    pub(crate) ty: Option<&'static Type>,
}

const UNTAGGED: FieldMeta = FieldMeta {
    strategy: Strategy::None,
    merge_key: "",
    ty: None,
};

/// Looks a field up in `ty`; unknown fields and unknown structs are
/// untagged.
pub(crate) fn lookup(ty: Option<&'static Type>, name: &str) -> FieldMeta {
    ty.and_then(|t| t.fields.iter().find(|f| f.name == name))
        .map_or(UNTAGGED, |f| FieldMeta {
            strategy: f.strategy,
            merge_key: f.merge_key,
            ty: f.ty,
        })
}

const fn field(
    name: &'static str,
    strategy: Strategy,
    merge_key: &'static str,
    ty: Option<&'static Type>,
) -> Field {
    Field {
        name,
        strategy,
        merge_key,
        ty,
        retain_keys: false,
    }
}

const fn merge_by(name: &'static str, key: &'static str, ty: Option<&'static Type>) -> Field {
    field(name, Strategy::Merge, key, ty)
}

/// `patchStrategy:"merge,retainKeys"`.
const fn merge_retaining_keys(name: &'static str, key: &'static str) -> Field {
    Field {
        retain_keys: true,
        ..merge_by(name, key, None)
    }
}

const fn nested(name: &'static str, ty: &'static Type) -> Field {
    field(name, Strategy::None, "", Some(ty))
}

/// `metav1.ObjectMeta`: `finalizers` (`patchStrategy:"merge"`, a set of
/// strings) and `ownerReferences` (`patchStrategy:"merge"
/// patchMergeKey:"uid"`).
pub(crate) static OBJECT_META: Type = Type {
    fields: &[
        merge_by("finalizers", "", None),
        merge_by("ownerReferences", "uid", None),
    ],
};

/// `v1.Container`, and `v1.EphemeralContainerCommon` which carries the
/// same tags.
pub(crate) static CONTAINER: Type = Type {
    fields: &[
        merge_by("ports", "containerPort", None),
        merge_by("env", "name", None),
        merge_by("volumeMounts", "mountPath", None),
        merge_by("volumeDevices", "devicePath", None),
    ],
};

/// `v1.PodSpec`.
pub(crate) static POD_SPEC: Type = Type {
    fields: &[
        merge_retaining_keys("volumes", "name"),
        merge_by("initContainers", "name", Some(&CONTAINER)),
        merge_by("containers", "name", Some(&CONTAINER)),
        merge_by("ephemeralContainers", "name", Some(&CONTAINER)),
        merge_by("imagePullSecrets", "name", None),
        merge_by("hostAliases", "ip", None),
        merge_by("topologySpreadConstraints", "topologyKey", None),
        merge_by("schedulingGates", "name", None),
        merge_retaining_keys("resourceClaims", "name"),
    ],
};

/// `v1.PodStatus`.
pub(crate) static POD_STATUS: Type = Type {
    fields: &[
        merge_by("conditions", "type", None),
        merge_by("podIPs", "ip", None),
        merge_by("hostIPs", "ip", None),
        merge_retaining_keys("resourceClaimStatuses", "name"),
    ],
};

/// `v1.Pod`.
pub(crate) static POD: Type = Type {
    fields: &[
        nested("metadata", &OBJECT_META),
        nested("spec", &POD_SPEC),
        nested("status", &POD_STATUS),
    ],
};

/// `v1.NodeSpec`: `podCIDRs` is `patchStrategy:"merge"` (a set of
/// strings); `taints` has no tag, so `kubectl taint` replaces the list.
pub(crate) static NODE_SPEC: Type = Type {
    fields: &[merge_by("podCIDRs", "", None)],
};

/// `v1.NodeStatus`.
pub(crate) static NODE_STATUS: Type = Type {
    fields: &[
        merge_by("conditions", "type", None),
        merge_by("addresses", "type", None),
    ],
};

/// `v1.Node`.
pub(crate) static NODE: Type = Type {
    fields: &[
        nested("metadata", &OBJECT_META),
        nested("spec", &NODE_SPEC),
        nested("status", &NODE_STATUS),
    ],
};

/// `v1.NamespaceStatus`.
pub(crate) static NAMESPACE_STATUS: Type = Type {
    fields: &[merge_by("conditions", "type", None)],
};

/// `v1.Namespace`.
pub(crate) static NAMESPACE: Type = Type {
    fields: &[
        nested("metadata", &OBJECT_META),
        nested("status", &NAMESPACE_STATUS),
    ],
};

/// `v1.PodTemplateSpec`: a workload's `spec.template`.
pub(crate) static POD_TEMPLATE_SPEC: Type = Type {
    fields: &[nested("metadata", &OBJECT_META), nested("spec", &POD_SPEC)],
};

/// A status whose only tagged field is `conditions`, merged by `type`
/// (the apps/v1 workloads', a Service's).
pub(crate) static CONDITIONS_STATUS: Type = Type {
    fields: &[merge_by("conditions", "type", None)],
};

/// `apps/v1.DeploymentSpec`: `strategy` is `patchStrategy:"retainKeys"`
/// alone (a computed patch that changes its `type` carries a
/// `$retainKeys` directive, which drops the other strategy's fields).
pub(crate) static DEPLOYMENT_SPEC: Type = Type {
    fields: &[
        nested("template", &POD_TEMPLATE_SPEC),
        Field {
            retain_keys: true,
            ..field("strategy", Strategy::None, "", None)
        },
    ],
};

/// `apps/v1.Deployment`.
pub(crate) static DEPLOYMENT: Type = Type {
    fields: &[
        nested("metadata", &OBJECT_META),
        nested("spec", &DEPLOYMENT_SPEC),
        nested("status", &CONDITIONS_STATUS),
    ],
};

/// The spec of a ReplicaSet, DaemonSet or StatefulSet: only its template
/// has tagged fields.
pub(crate) static WORKLOAD_SPEC: Type = Type {
    fields: &[nested("template", &POD_TEMPLATE_SPEC)],
};

/// `apps/v1` ReplicaSet, DaemonSet and StatefulSet.
pub(crate) static WORKLOAD: Type = Type {
    fields: &[
        nested("metadata", &OBJECT_META),
        nested("spec", &WORKLOAD_SPEC),
        nested("status", &CONDITIONS_STATUS),
    ],
};

/// `v1.ServiceSpec`: `ports` merge by `port`.
pub(crate) static SERVICE_SPEC: Type = Type {
    fields: &[merge_by("ports", "port", None)],
};

/// `v1.Service`.
pub(crate) static SERVICE: Type = Type {
    fields: &[
        nested("metadata", &OBJECT_META),
        nested("spec", &SERVICE_SPEC),
        nested("status", &CONDITIONS_STATUS),
    ],
};

/// `v1.ServiceAccount`: `secrets` merge by `name`.
pub(crate) static SERVICE_ACCOUNT: Type = Type {
    fields: &[
        nested("metadata", &OBJECT_META),
        merge_by("secrets", "name", None),
    ],
};

/// Any kind whose only tagged fields are those of its `metadata`: Event,
/// Lease, and other built-in kinds without list tags of their own.
pub(crate) static METADATA_ONLY: Type = Type {
    fields: &[nested("metadata", &OBJECT_META)],
};

#[cfg(test)]
pub(crate) mod test_types {
    //! The `MergeItem` test struct of upstream `patch_test.go`, so that
    //! its YAML tables can be run unchanged.
    use super::{Strategy, Type, field, merge_by, nested};

    pub(crate) static MERGE_ITEM: Type = Type {
        fields: &[
            merge_by("mergingList", "name", Some(&MERGE_ITEM)),
            field("nonMergingList", Strategy::None, "", Some(&MERGE_ITEM)),
            merge_by("mergingIntList", "", None),
            merge_by("mergeItemPtr", "name", Some(&MERGE_ITEM)),
            field("replacingItem", Strategy::Replace, "", None),
            // `patchStrategy:"retainKeys"` alone: no strategy when applying.
            nested("retainKeysMap", &RETAIN_KEYS_MERGE_ITEM),
            merge_by("retainKeysMergingList", "name", Some(&MERGE_ITEM)),
        ],
    };

    pub(crate) static RETAIN_KEYS_MERGE_ITEM: Type = Type {
        fields: &[
            merge_by("mergingIntList", "", None),
            merge_by("mergingList", "name", Some(&MERGE_ITEM)),
            field("nonMergingList", Strategy::None, "", Some(&MERGE_ITEM)),
        ],
    };
}
