//! The generated schema's JSON names are Kubernetes' JSON names: for every message that has
//! a k8s-openapi type, the fields of the message and the properties of the type are the
//! same set. k8s-openapi's serde code names its properties in `deserialize_struct`; a
//! deserializer that records them reads the list without building a value.

use std::cell::Cell;
use std::collections::BTreeSet;

use serde::de::{DeserializeOwned, Deserializer, Visitor};

#[rustfmt::skip]
#[path = "generated/openapi_types.rs"]
mod openapi_types;

/// Fields that differ between the protos k8s-pb 0.9.0 is generated from (Kubernetes 1.35)
/// and k8s-openapi's v1_37 types: (message without `k8s.io.`, JSON name). All but one were
/// added in 1.36 or 1.37, so protobuf cannot carry them until k8s-pb has them (JSON can);
/// PodSpec.workloadRef was an alpha field that 1.37 replaced with schedulingGroup.
const VERSION_DIFFERENCES: &[(&str, &str)] = &[
    ("api.authentication.v1.TokenRequestSpec", "attestations"),
    (
        "api.autoscaling.v2.HorizontalPodAutoscalerCondition",
        "observedGeneration",
    ),
    ("api.batch.v1.JobSpec", "scheduling"),
    ("api.core.v1.ClusterTrustBundleProjection", "user"),
    ("api.core.v1.ConfigMapVolumeSource", "defaultUser"),
    ("api.core.v1.DownwardAPIVolumeFile", "user"),
    ("api.core.v1.DownwardAPIVolumeSource", "defaultUser"),
    ("api.core.v1.EmptyDirVolumeSource", "mode"),
    ("api.core.v1.GrpcAction", "mode"),
    ("api.core.v1.HttpGetAction", "protocol"),
    ("api.core.v1.KeyToPath", "user"),
    ("api.core.v1.NodeSpec", "podPreemptionPolicy"),
    ("api.core.v1.NodeSystemInfo", "runningInUserNamespace"),
    ("api.core.v1.PersistentVolumeClaimStatus", "healthStatus"),
    ("api.core.v1.PodCertificateProjection", "user"),
    ("api.core.v1.PodSpec", "evictionResponders"),
    ("api.core.v1.PodSpec", "schedulingGroup"),
    ("api.core.v1.PodSpec", "workloadRef"),
    (
        "api.core.v1.PodStatus",
        "nodeAllocatableResourceClaimStatuses",
    ),
    ("api.core.v1.PodStatus", "volumeHealth"),
    ("api.core.v1.ProjectedVolumeSource", "defaultUser"),
    ("api.core.v1.ResourceHealth", "message"),
    ("api.core.v1.SecretVolumeSource", "defaultUser"),
    ("api.core.v1.ServiceAccountTokenProjection", "user"),
    ("api.core.v1.VolumeMount", "bindMountOptions"),
    ("api.core.v1.VolumeMountStatus", "volumeStatus"),
    ("api.resource.v1.Device", "nodeAllocatableResources"),
    ("api.resource.v1.DeviceAttribute", "bools"),
    ("api.resource.v1.DeviceAttribute", "ints"),
    ("api.resource.v1.DeviceAttribute", "strings"),
    ("api.resource.v1.DeviceAttribute", "versions"),
    (
        "api.resource.v1.DeviceCounterConsumption",
        "compatibilityGroups",
    ),
    (
        "api.resource.v1.DeviceRequestAllocationResult",
        "skipNodeOperations",
    ),
    ("api.resource.v1.DeviceSubRequest", "derivedAttributes"),
    ("api.resource.v1.ExactDeviceRequest", "derivedAttributes"),
    (
        "api.resource.v1.ResourceSliceSpec",
        "partitionTypeAttribute",
    ),
    ("api.resource.v1.ResourceSliceSpec", "skipNodeOperations"),
    (
        "api.storage.v1.CSIDriverSpec",
        "preventPodSchedulingIfMissing",
    ),
    ("api.storage.v1.CSINode", "status"),
    ("apimachinery.pkg.apis.meta.v1.ListMeta", "shardInfo"),
];

struct FieldRecorder<'a>(&'a Cell<Option<&'static [&'static str]>>);

impl<'de> Deserializer<'de> for FieldRecorder<'_> {
    type Error = serde::de::value::Error;

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Self::Error> {
        Err(serde::de::Error::custom("not a struct"))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.set(Some(fields));
        Err(serde::de::Error::custom("recorded"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

/// How the generated list reads a k8s-openapi type's property names.
pub(crate) type FieldsOf = fn() -> Option<&'static [&'static str]>;

/// The JSON property names of a k8s-openapi type, if it is a struct.
pub(crate) fn fields_of<T: DeserializeOwned>() -> Option<&'static [&'static str]> {
    let recorded = Cell::new(None);
    let _ = T::deserialize(FieldRecorder(&recorded));
    recorded.get()
}

#[test]
fn json_names_match_k8s_openapi() {
    let mut mismatches = Vec::new();
    let mut compared = 0;
    for (name, openapi_fields) in openapi_types::TYPES {
        let message = berth_proto::schema::message(name).expect("a generated message");
        // Types with their own JSON (Time, Quantity, ...) are not structs in k8s-openapi.
        let Some(openapi_fields) = openapi_fields() else {
            continue;
        };
        compared += 1;
        let ours: BTreeSet<&str> = berth_proto::schema::json_field_names(message)
            .into_iter()
            .collect();
        let theirs: BTreeSet<&str> = openapi_fields
            .iter()
            .copied()
            // k8s-openapi's resource types carry apiVersion and kind in JSON; protobuf carries
            // them in the envelope (runtime.Unknown), never in the message.
            .filter(|field| ours.contains(field) || !matches!(*field, "apiVersion" | "kind"))
            .collect();
        let known = |field: &str| {
            VERSION_DIFFERENCES.iter().any(|(message, json)| {
                name.strip_prefix("k8s.io.") == Some(message) && *json == field
            })
        };
        for field in ours.symmetric_difference(&theirs) {
            if !known(field) {
                let side = if ours.contains(field) {
                    "only in the schema"
                } else {
                    "only in k8s-openapi"
                };
                mismatches.push(format!("{name}.{field}: {side}"));
            }
        }
    }
    assert!(compared > 300, "compared only {compared} messages");
    assert!(
        mismatches.is_empty(),
        "{} mismatches:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}
