//! NodeRestriction (`plugin/pkg/admission/noderestriction`), the parts
//! about nodes, pods and leases: a kubelet (user `system:node:<name>` in
//! group `system:nodes`) may only touch objects that belong to its node.
//!
//! - Node: only its own; on create no `configSource` and no labels outside
//!   the kubelet's set; on update no new `configSource`, no change to its
//!   taints (registration taints are allowed, later changes would let a
//!   node steer workloads to itself), no change to restricted labels.
//! - Pods: create only mirror pods bound to itself and owned by its Node,
//!   referencing no secrets, config maps, service accounts, cluster trust
//!   bundles or claims; delete and evict only pods bound to it; update
//!   only the status of pods bound to it, without touching labels or
//!   resource claim statuses; nothing else.
//! - Leases: only its own, in `kube-node-lease`.
//!
//! Messages are upstream's, wrapped like `admission.NewForbidden`
//! (`pods "x" is forbidden: node "a" can only ...`).
//!
//! Upstream looks stored objects up through informers; these functions are
//! pure, so the caller passes them in: on pod delete and eviction `pod` is
//! the stored pod, and the owner UID check on mirror pods is the separate
//! [`verify_mirror_pod_owner_uid`], called with the requesting node.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Container, EphemeralContainer, Node, Pod};

use super::{AdmissionError, Attributes, Operation, UserInfo};

const NODE_USER_PREFIX: &str = "system:node:";
const NODES_GROUP: &str = "system:nodes";
/// `api.MirrorPodAnnotationKey`.
pub const MIRROR_POD_ANNOTATION: &str = "kubernetes.io/config.mirror";
/// `api.NamespaceNodeLease`.
pub const NAMESPACE_NODE_LEASE: &str = "kube-node-lease";
/// `v1.LabelNamespaceNodeRestriction`.
const LABEL_NAMESPACE_NODE_RESTRICTION: &str = "node-restriction.kubernetes.io";

/// Upstream's default `NodeIdentity`: `Some(node name)` for a user named
/// `system:node:<name>` in group `system:nodes` (the name may be empty,
/// which NodeRestriction refuses), `None` for anyone else.
pub fn node_identity(user: &UserInfo) -> Option<&str> {
    let name = user.name.strip_prefix(NODE_USER_PREFIX)?;
    user.groups.iter().any(|g| g == NODES_GROUP).then_some(name)
}

/// `admission.NewForbidden`: the resource, the name from the request or the
/// object (else `Unknown`), then the reason.
fn forbidden(attrs: &Attributes, object_name: Option<&str>, reason: String) -> AdmissionError {
    let resource = match attrs.resource {
        "leases" => "leases.coordination.k8s.io",
        other => other,
    };
    let name = [Some(attrs.name), object_name]
        .into_iter()
        .flatten()
        .find(|n| !n.is_empty())
        .unwrap_or("Unknown");
    AdmissionError::Forbidden {
        message: format!("{resource} {} is forbidden: {reason}", quote(name)),
    }
}

fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("\"{s}\""))
}

/// The requesting node's name, `Ok(None)` when the user is not a node.
fn requesting_node<'u>(
    attrs: &Attributes<'u>,
    object_name: Option<&str>,
) -> Result<Option<&'u str>, AdmissionError> {
    match node_identity(attrs.user) {
        None => Ok(None),
        Some("") => Err(forbidden(
            attrs,
            object_name,
            format!(
                "could not determine node from user {}",
                quote(&attrs.user.name)
            ),
        )),
        Some(name) => Ok(Some(name)),
    }
}

fn node_name(pod: &Pod) -> &str {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .unwrap_or("")
}

/// NodeRestriction for pods and their subresources. `old` is the stored
/// pod on update; on delete and eviction `pod` is the stored pod.
pub fn admit_pod(attrs: &Attributes, pod: &Pod, old: Option<&Pod>) -> Result<(), AdmissionError> {
    let obj_name = pod.metadata.name.as_deref();
    let Some(node) = requesting_node(attrs, obj_name)? else {
        return Ok(());
    };
    let deny = |reason: String| Err(forbidden(attrs, obj_name, reason));
    match (attrs.subresource, attrs.operation) {
        ("", Operation::Create) => admit_mirror_pod(node, pod).or_else(deny),
        ("", Operation::Delete) => {
            if node_name(pod) != node {
                return deny(format!(
                    "node {} can only delete pods with spec.nodeName set to itself",
                    quote(node)
                ));
            }
            Ok(())
        }
        ("", op) => deny(format!(
            "unexpected operation {}, node {} can only create and delete mirror pods",
            quote(op.as_str()),
            quote(node)
        )),
        ("status", Operation::Update) => {
            let Some(old) = old else {
                return deny("unexpected type <nil>".to_string());
            };
            if node_name(old) != node {
                return deny(format!(
                    "node {} can only update pod status for pods with spec.nodeName set to itself",
                    quote(node)
                ));
            }
            let empty = BTreeMap::new();
            let labels = |p: &Pod| p.metadata.labels.as_ref().unwrap_or(&empty).clone();
            if labels(old) != labels(pod) {
                return deny(format!(
                    "node {} cannot update labels through pod status",
                    quote(node)
                ));
            }
            let claims = |p: &Pod| {
                p.status
                    .as_ref()
                    .and_then(|s| s.resource_claim_statuses.clone())
                    .unwrap_or_default()
            };
            if claims(old) != claims(pod) {
                return deny(format!(
                    "node {} cannot update resource claim statues",
                    quote(node)
                ));
            }
            Ok(())
        }
        ("status", op) => deny(format!("unexpected operation {}", quote(op.as_str()))),
        ("eviction", Operation::Create) => {
            if node_name(pod) != node {
                return deny(format!(
                    "node {node} can only evict pods with spec.nodeName set to itself"
                ));
            }
            Ok(())
        }
        ("eviction", op) => deny(format!("unexpected operation {}", op.as_str())),
        (sub, _) => deny(format!(
            "unexpected pod subresource {}, only 'status' and 'eviction' are allowed",
            quote(sub)
        )),
    }
}

/// Upstream `admitPodCreate` without the UID lookup.
fn admit_mirror_pod(node: &str, pod: &Pod) -> Result<(), String> {
    let q = quote(node);
    let is_mirror = pod
        .metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(MIRROR_POD_ANNOTATION));
    if !is_mirror {
        return Err(format!(
            "pod does not have {} annotation, node {q} can only create mirror pods",
            quote(MIRROR_POD_ANNOTATION)
        ));
    }
    if node_name(pod) != node {
        return Err(format!(
            "node {q} can only create pods with spec.nodeName set to itself"
        ));
    }
    let owners = pod.metadata.owner_references.as_deref().unwrap_or_default();
    match owners {
        [] => {
            return Err(format!(
                "node {q} can only create pods with an owner reference set to itself"
            ));
        }
        [owner] => {
            if owner.api_version != "v1" || owner.kind != "Node" || owner.name != node {
                return Err(format!(
                    "node {q} can only create pods with an owner reference set to itself"
                ));
            }
            if owner.controller != Some(true) {
                return Err(format!(
                    "node {q} can only create pods with a controller owner reference set to itself"
                ));
            }
            if owner.block_owner_deletion == Some(true) {
                return Err(format!(
                    "node {q} must not set blockOwnerDeletion on an owner reference"
                ));
            }
        }
        _ => {
            return Err(format!(
                "node {q} can only create pods with a single owner reference set to itself"
            ));
        }
    }
    let spec = pod.spec.as_ref();
    if spec
        .and_then(|s| s.service_account_name.as_deref())
        .is_some_and(|s| !s.is_empty())
    {
        return Err(format!(
            "node {q} can not create pods that reference a service account"
        ));
    }
    if references_secrets(pod) {
        return Err(format!(
            "node {q} can not create pods that reference secrets"
        ));
    }
    if references_config_maps(pod) {
        return Err(format!(
            "node {q} can not create pods that reference configmaps"
        ));
    }
    let volumes = spec.and_then(|s| s.volumes.as_deref()).unwrap_or_default();
    let trust_bundle = volumes.iter().any(|v| {
        v.projected
            .iter()
            .flat_map(|p| p.sources.iter().flatten())
            .any(|src| src.cluster_trust_bundle.is_some())
    });
    if trust_bundle {
        return Err(format!(
            "node {q} can not create pods that reference clustertrustbundles"
        ));
    }
    if volumes.iter().any(|v| v.persistent_volume_claim.is_some()) {
        return Err(format!(
            "node {q} can not create pods that reference persistentvolumeclaims"
        ));
    }
    Ok(())
}

/// The env and envFrom of every container kind (upstream visits all:
/// `podutil.AllContainers`).
fn env_sources(pod: &Pod) -> Vec<(bool, bool)> {
    let Some(spec) = pod.spec.as_ref() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut visit =
        |env: Option<&Vec<k8s_openapi::api::core::v1::EnvVar>>,
         env_from: Option<&Vec<k8s_openapi::api::core::v1::EnvFromSource>>| {
            for e in env.into_iter().flatten() {
                if let Some(src) = e.value_from.as_ref() {
                    out.push((
                        src.secret_key_ref.is_some(),
                        src.config_map_key_ref.is_some(),
                    ));
                }
            }
            for f in env_from.into_iter().flatten() {
                out.push((f.secret_ref.is_some(), f.config_map_ref.is_some()));
            }
        };
    let containers: Vec<&Container> = spec
        .containers
        .iter()
        .chain(spec.init_containers.iter().flatten())
        .collect();
    for c in containers {
        visit(c.env.as_ref(), c.env_from.as_ref());
    }
    let ephemeral: Vec<&EphemeralContainer> = spec.ephemeral_containers.iter().flatten().collect();
    for c in ephemeral {
        visit(c.env.as_ref(), c.env_from.as_ref());
    }
    out
}

/// Upstream `VisitPodSecretNames` found anything.
fn references_secrets(pod: &Pod) -> bool {
    let Some(spec) = pod.spec.as_ref() else {
        return false;
    };
    if spec
        .image_pull_secrets
        .as_ref()
        .is_some_and(|s| !s.is_empty())
    {
        return true;
    }
    if env_sources(pod).iter().any(|(secret, _)| *secret) {
        return true;
    }
    spec.volumes.iter().flatten().any(|v| {
        v.secret.is_some()
            || v.azure_file.is_some()
            || v.cephfs.as_ref().is_some_and(|c| c.secret_ref.is_some())
            || v.cinder.as_ref().is_some_and(|c| c.secret_ref.is_some())
            || v.flex_volume
                .as_ref()
                .is_some_and(|c| c.secret_ref.is_some())
            || v.iscsi.as_ref().is_some_and(|c| c.secret_ref.is_some())
            || v.rbd.as_ref().is_some_and(|c| c.secret_ref.is_some())
            || v.scale_io.is_some()
            || v.storageos.as_ref().is_some_and(|c| c.secret_ref.is_some())
            || v.csi
                .as_ref()
                .is_some_and(|c| c.node_publish_secret_ref.is_some())
            || v.projected
                .iter()
                .flat_map(|p| p.sources.iter().flatten())
                .any(|s| s.secret.is_some())
    })
}

/// Upstream `VisitPodConfigmapNames` found anything.
fn references_config_maps(pod: &Pod) -> bool {
    let Some(spec) = pod.spec.as_ref() else {
        return false;
    };
    if env_sources(pod).iter().any(|(_, cm)| *cm) {
        return true;
    }
    spec.volumes.iter().flatten().any(|v| {
        v.config_map.is_some()
            || v.projected
                .iter()
                .flat_map(|p| p.sources.iter().flatten())
                .any(|s| s.config_map.is_some())
    })
}

/// The owner UID check of mirror pod creation: upstream compares the owner
/// reference's UID with the requesting node's, looked up by the caller.
pub fn verify_mirror_pod_owner_uid(
    attrs: &Attributes,
    pod: &Pod,
    node: &Node,
) -> Result<(), AdmissionError> {
    let obj_name = pod.metadata.name.as_deref();
    let Some(node_name) = requesting_node(attrs, obj_name)? else {
        return Ok(());
    };
    let Some(owner) = pod
        .metadata
        .owner_references
        .as_deref()
        .and_then(|o| o.first())
    else {
        return Ok(());
    };
    let node_uid = node.metadata.uid.as_deref().unwrap_or("");
    if owner.uid != node_uid {
        return Err(forbidden(
            attrs,
            obj_name,
            format!(
                "node {node_name} UID mismatch: expected {} got {node_uid}",
                owner.uid
            ),
        ));
    }
    Ok(())
}

/// Upstream `getLabelNamespace`.
fn label_namespace(key: &str) -> &str {
    key.split_once('/').map(|(ns, _)| ns).unwrap_or("")
}

fn in_namespace(ns: &str, domain: &str) -> bool {
    ns == domain
        || ns
            .strip_suffix(domain)
            .is_some_and(|rest| rest.ends_with('.'))
}

/// `kubeletapis.IsKubeletLabel`: the labels a kubelet may set on itself.
pub fn is_kubelet_label(key: &str) -> bool {
    const KUBELET_LABELS: &[&str] = &[
        "kubernetes.io/hostname",
        "topology.kubernetes.io/zone",
        "topology.kubernetes.io/region",
        "failure-domain.beta.kubernetes.io/zone",
        "failure-domain.beta.kubernetes.io/region",
        "beta.kubernetes.io/instance-type",
        "node.kubernetes.io/instance-type",
        "kubernetes.io/os",
        "kubernetes.io/arch",
        "beta.kubernetes.io/os",
        "beta.kubernetes.io/arch",
    ];
    if KUBELET_LABELS.contains(&key) {
        return true;
    }
    let ns = label_namespace(key);
    in_namespace(ns, "kubelet.kubernetes.io") || in_namespace(ns, "node.kubernetes.io")
}

fn is_kubernetes_label(key: &str) -> bool {
    let ns = label_namespace(key);
    in_namespace(ns, "kubernetes.io") || in_namespace(ns, "k8s.io")
}

/// Upstream `getModifiedLabels` + `getForbiddenLabels`, sorted.
fn forbidden_labels(
    new: Option<&BTreeMap<String, String>>,
    old: Option<&BTreeMap<String, String>>,
) -> Vec<String> {
    let empty = BTreeMap::new();
    let (new, old) = (new.unwrap_or(&empty), old.unwrap_or(&empty));
    let modified: BTreeSet<&String> = new
        .iter()
        .filter(|(k, v)| old.get(*k) != Some(v))
        .chain(old.iter().filter(|(k, v)| new.get(*k) != Some(v)))
        .map(|(k, _)| k)
        .collect();
    modified
        .into_iter()
        .filter(|label| {
            in_namespace(label_namespace(label), LABEL_NAMESPACE_NODE_RESTRICTION)
                || (is_kubernetes_label(label) && !is_kubelet_label(label))
        })
        .cloned()
        .collect()
}

/// Taints equal as upstream's `Semantic.DeepEqual` sees them (an absent
/// list equals an empty one), except that a `timeAdded` berth stamped in
/// mutating admission on a taint the stored node had without one is not a
/// change the kubelet made.
fn taints_unchanged(node: &Node, old: &Node) -> bool {
    let taints = |n: &Node| {
        n.spec
            .as_ref()
            .and_then(|s| s.taints.clone())
            .unwrap_or_default()
    };
    let (new, old) = (taints(node), taints(old));
    new.len() == old.len()
        && new.iter().zip(&old).all(|(n, o)| {
            n.key == o.key
                && n.effect == o.effect
                && n.value.as_deref().unwrap_or("") == o.value.as_deref().unwrap_or("")
                && (n.time_added == o.time_added || o.time_added.is_none())
        })
}

/// NodeRestriction for nodes (and their status). `old` is the stored node
/// on update.
pub fn admit_node(
    attrs: &Attributes,
    node: &Node,
    old: Option<&Node>,
) -> Result<(), AdmissionError> {
    let obj_name = node.metadata.name.as_deref();
    let Some(me) = requesting_node(attrs, obj_name)? else {
        return Ok(());
    };
    let deny = |reason: String| Err(forbidden(attrs, obj_name, reason));
    // Upstream's create handler fills the request name from the object.
    let requested = if attrs.name.is_empty() {
        obj_name.unwrap_or("")
    } else {
        attrs.name
    };
    if requested != me {
        return deny(format!(
            "node {} is not allowed to modify node {}",
            quote(me),
            quote(requested)
        ));
    }
    let config_source = |n: &Node| n.spec.as_ref().and_then(|s| s.config_source.clone());
    match attrs.operation {
        Operation::Create => {
            if config_source(node).is_some() {
                return deny(format!(
                    "node {} is not allowed to create pods with a non-nil configSource",
                    quote(me)
                ));
            }
            let bad = forbidden_labels(node.metadata.labels.as_ref(), None);
            if !bad.is_empty() {
                return deny(format!(
                    "node {} is not allowed to set the following labels: {}",
                    quote(me),
                    bad.join(", ")
                ));
            }
        }
        Operation::Update => {
            let Some(old) = old else {
                return deny("unexpected type <nil>".to_string());
            };
            if config_source(node).is_some() && config_source(node) != config_source(old) {
                return deny(format!(
                    "node {} is not allowed to update configSource to a new non-nil configSource",
                    quote(me)
                ));
            }
            if !taints_unchanged(node, old) {
                return deny(format!(
                    "node {} is not allowed to modify taints",
                    quote(me)
                ));
            }
            let bad = forbidden_labels(node.metadata.labels.as_ref(), old.metadata.labels.as_ref());
            if !bad.is_empty() {
                return deny(format!(
                    "is not allowed to modify labels: {}",
                    bad.join(", ")
                ));
            }
        }
        Operation::Delete | Operation::Connect => {}
    }
    Ok(())
}

/// NodeRestriction for leases: a node only touches its own lease in
/// `kube-node-lease`. `lease` is the object on create (whose name counts,
/// the request has none yet); other operations use the request's name.
pub fn admit_lease(attrs: &Attributes, lease: Option<&Lease>) -> Result<(), AdmissionError> {
    let obj_name = lease.and_then(|l| l.metadata.name.as_deref());
    let Some(me) = requesting_node(attrs, obj_name)? else {
        return Ok(());
    };
    let deny = |reason: String| Err(forbidden(attrs, obj_name, reason));
    if attrs.namespace != NAMESPACE_NODE_LEASE {
        return deny(format!(
            "can only access leases in the {} system namespace",
            quote(NAMESPACE_NODE_LEASE)
        ));
    }
    let name = match attrs.operation {
        Operation::Create => obj_name.unwrap_or(""),
        _ => attrs.name,
    };
    if name != me {
        return deny(
            "can only access node lease with the same name as the requesting node".to_string(),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_core::test_util::taint;
    use k8s_openapi::api::core::v1::{
        EnvFromSource, NodeConfigSource, NodeSpec, PersistentVolumeClaimVolumeSource, PodSpec,
        PodStatus, SecretEnvSource, Volume,
    };
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo {
            name: name.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
        }
    }

    fn mynode() -> UserInfo {
        user("system:node:mynode", &["system:nodes"])
    }

    fn attrs<'a>(
        op: Operation,
        resource: &'a str,
        sub: &'a str,
        ns: &'a str,
        name: &'a str,
        user: &'a UserInfo,
    ) -> Attributes<'a> {
        Attributes {
            operation: op,
            resource,
            subresource: sub,
            namespace: ns,
            name,
            user,
            now: jiff::Timestamp::UNIX_EPOCH,
        }
    }

    fn message(r: Result<(), AdmissionError>) -> String {
        match r {
            Ok(()) => String::new(),
            Err(e) => e.to_string(),
        }
    }

    fn bound_pod(name: &str, node: &str) -> Pod {
        Pod {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("ns".into()),
                ..Default::default()
            },
            spec: Some(PodSpec {
                node_name: Some(node.into()),
                ..Default::default()
            }),
            status: None,
        }
    }

    fn mirror_pod(node: &str) -> Pod {
        let mut pod = bound_pod("mirror", node);
        pod.metadata.annotations =
            Some([(MIRROR_POD_ANNOTATION.to_string(), String::new())].into());
        pod.metadata.owner_references = Some(vec![OwnerReference {
            api_version: "v1".into(),
            kind: "Node".into(),
            name: node.into(),
            uid: "node-uid".into(),
            controller: Some(true),
            block_owner_deletion: None,
        }]);
        pod
    }

    #[test]
    fn node_identity_needs_prefix_and_group() {
        assert_eq!(node_identity(&mynode()), Some("mynode"));
        assert_eq!(node_identity(&user("system:node:mynode", &[])), None);
        assert_eq!(node_identity(&user("bob", &["system:nodes"])), None);
        assert_eq!(
            node_identity(&user("system:node:", &["system:nodes"])),
            Some("")
        );
    }

    #[test]
    fn pod_requests_match_upstream_messages() {
        // Rows of upstream Test_nodePlugin_Admit for pods, with its messages
        // (upstream checks them with strings.Contains; berth pins the whole
        // Forbidden message).
        let me = mynode();
        let other = user("system:node:othernode", &["system:nodes"]);
        let bob = user("bob", &[]);
        let empty_node = user("system:node:", &["system:nodes"]);
        let mut with_secret = mirror_pod("mynode");
        if let Some(spec) = with_secret.spec.as_mut() {
            spec.containers = vec![Container {
                env_from: Some(vec![EnvFromSource {
                    secret_ref: Some(SecretEnvSource {
                        name: "s".into(),
                        optional: None,
                    }),
                    ..Default::default()
                }]),
                ..Default::default()
            }];
        }
        let mut with_pvc = mirror_pod("mynode");
        if let Some(spec) = with_pvc.spec.as_mut() {
            spec.volumes = Some(vec![Volume {
                name: "v".into(),
                persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                    claim_name: "c".into(),
                    read_only: None,
                }),
                ..Default::default()
            }]);
        }
        let mut with_sa = mirror_pod("mynode");
        if let Some(spec) = with_sa.spec.as_mut() {
            spec.service_account_name = Some("foo".into());
        }
        let mut two_owners = mirror_pod("mynode");
        if let Some(refs) = two_owners.metadata.owner_references.as_mut() {
            refs.push(refs[0].clone());
        }
        let mut not_controller = mirror_pod("mynode");
        if let Some(refs) = not_controller.metadata.owner_references.as_mut() {
            refs[0].controller = Some(false);
        }
        let mut blocking = mirror_pod("mynode");
        if let Some(refs) = blocking.metadata.owner_references.as_mut() {
            refs[0].block_owner_deletion = Some(true);
        }
        let mut no_owner = mirror_pod("mynode");
        no_owner.metadata.owner_references = None;
        let mut not_mirror = mirror_pod("mynode");
        not_mirror.metadata.annotations = None;
        let mut relabeled = bound_pod("mypod", "mynode");
        relabeled.metadata.labels = Some([("a".to_string(), "b".to_string())].into());
        let mut claims = bound_pod("mypod", "mynode");
        claims.status = Some(PodStatus {
            resource_claim_statuses: Some(vec![Default::default()]),
            ..Default::default()
        });

        use Operation::*;
        struct Case<'a> {
            name: &'a str,
            attrs: Attributes<'a>,
            pod: Pod,
            old: Option<Pod>,
            want: &'a str,
        }
        let cases = vec![
            Case {
                name: "allow creating a mirror pod bound to self",
                attrs: attrs(Create, "pods", "", "ns", "", &me),
                pod: mirror_pod("mynode"),
                old: None,
                want: "",
            },
            Case {
                name: "forbid creating a mirror pod bound to another",
                attrs: attrs(Create, "pods", "", "ns", "", &me),
                pod: mirror_pod("othernode"),
                old: None,
                want: r#"pods "mirror" is forbidden: node "mynode" can only create pods with spec.nodeName set to itself"#,
            },
            Case {
                name: "forbid creating a normal pod",
                attrs: attrs(Create, "pods", "", "ns", "", &me),
                pod: not_mirror,
                old: None,
                want: r#"pods "mirror" is forbidden: pod does not have "kubernetes.io/config.mirror" annotation, node "mynode" can only create mirror pods"#,
            },
            Case {
                name: "forbid create of pod referencing secret",
                attrs: attrs(Create, "pods", "", "ns", "", &me),
                pod: with_secret,
                old: None,
                want: r#"pods "mirror" is forbidden: node "mynode" can not create pods that reference secrets"#,
            },
            Case {
                name: "forbid create of pod referencing persistentvolumeclaim",
                attrs: attrs(Create, "pods", "", "ns", "", &me),
                pod: with_pvc,
                old: None,
                want: r#"pods "mirror" is forbidden: node "mynode" can not create pods that reference persistentvolumeclaims"#,
            },
            Case {
                name: "forbid create of pod referencing service account",
                attrs: attrs(Create, "pods", "", "ns", "", &me),
                pod: with_sa,
                old: None,
                want: r#"pods "mirror" is forbidden: node "mynode" can not create pods that reference a service account"#,
            },
            Case {
                name: "forbid pod with no owner",
                attrs: attrs(Create, "pods", "", "ns", "", &me),
                pod: no_owner,
                old: None,
                want: r#"pods "mirror" is forbidden: node "mynode" can only create pods with an owner reference set to itself"#,
            },
            Case {
                name: "forbid pod with two owners",
                attrs: attrs(Create, "pods", "", "ns", "", &me),
                pod: two_owners,
                old: None,
                want: r#"pods "mirror" is forbidden: node "mynode" can only create pods with a single owner reference set to itself"#,
            },
            Case {
                name: "forbid non-controller owner",
                attrs: attrs(Create, "pods", "", "ns", "", &me),
                pod: not_controller,
                old: None,
                want: r#"pods "mirror" is forbidden: node "mynode" can only create pods with a controller owner reference set to itself"#,
            },
            Case {
                name: "forbid blockOwnerDeletion",
                attrs: attrs(Create, "pods", "", "ns", "", &me),
                pod: blocking,
                old: None,
                want: r#"pods "mirror" is forbidden: node "mynode" must not set blockOwnerDeletion on an owner reference"#,
            },
            Case {
                name: "forbid update of pod",
                attrs: attrs(Update, "pods", "", "ns", "mypod", &me),
                pod: bound_pod("mypod", "mynode"),
                old: Some(bound_pod("mypod", "mynode")),
                want: r#"pods "mypod" is forbidden: unexpected operation "UPDATE", node "mynode" can only create and delete mirror pods"#,
            },
            Case {
                name: "allow delete of pod bound to self",
                attrs: attrs(Delete, "pods", "", "ns", "mypod", &me),
                pod: bound_pod("mypod", "mynode"),
                old: None,
                want: "",
            },
            Case {
                name: "forbid delete of pod bound to another",
                attrs: attrs(Delete, "pods", "", "ns", "mypod", &me),
                pod: bound_pod("mypod", "othernode"),
                old: None,
                want: r#"pods "mypod" is forbidden: node "mynode" can only delete pods with spec.nodeName set to itself"#,
            },
            Case {
                name: "allow update of pod status bound to self",
                attrs: attrs(Update, "pods", "status", "ns", "mypod", &me),
                pod: bound_pod("mypod", "mynode"),
                old: Some(bound_pod("mypod", "mynode")),
                want: "",
            },
            Case {
                name: "forbid update of pod status bound to another",
                attrs: attrs(Update, "pods", "status", "ns", "mypod", &me),
                pod: bound_pod("mypod", "othernode"),
                old: Some(bound_pod("mypod", "othernode")),
                want: r#"pods "mypod" is forbidden: node "mynode" can only update pod status for pods with spec.nodeName set to itself"#,
            },
            Case {
                name: "forbid update of pod labels through status",
                attrs: attrs(Update, "pods", "status", "ns", "mypod", &me),
                pod: relabeled,
                old: Some(bound_pod("mypod", "mynode")),
                want: r#"pods "mypod" is forbidden: node "mynode" cannot update labels through pod status"#,
            },
            Case {
                name: "forbid update of resource claim statuses",
                attrs: attrs(Update, "pods", "status", "ns", "mypod", &me),
                pod: claims,
                old: Some(bound_pod("mypod", "mynode")),
                want: r#"pods "mypod" is forbidden: node "mynode" cannot update resource claim statues"#,
            },
            Case {
                name: "forbid create of pod status",
                attrs: attrs(Create, "pods", "status", "ns", "mypod", &me),
                pod: bound_pod("mypod", "mynode"),
                old: None,
                want: r#"pods "mypod" is forbidden: unexpected operation "CREATE""#,
            },
            Case {
                name: "allow eviction of pod bound to self",
                attrs: attrs(Create, "pods", "eviction", "ns", "mypod", &me),
                pod: bound_pod("mypod", "mynode"),
                old: None,
                want: "",
            },
            Case {
                name: "forbid eviction of pod bound to another",
                attrs: attrs(Create, "pods", "eviction", "ns", "mypod", &me),
                pod: bound_pod("mypod", "othernode"),
                old: None,
                want: r#"pods "mypod" is forbidden: node mynode can only evict pods with spec.nodeName set to itself"#,
            },
            Case {
                name: "forbid binding",
                attrs: attrs(Create, "pods", "binding", "ns", "mypod", &me),
                pod: bound_pod("mypod", "mynode"),
                old: None,
                want: r#"pods "mypod" is forbidden: unexpected pod subresource "binding", only 'status' and 'eviction' are allowed"#,
            },
            Case {
                name: "other node may not delete my pod",
                attrs: attrs(Delete, "pods", "", "ns", "mypod", &other),
                pod: bound_pod("mypod", "mynode"),
                old: None,
                want: r#"pods "mypod" is forbidden: node "othernode" can only delete pods with spec.nodeName set to itself"#,
            },
            Case {
                name: "a node user without a name is refused",
                attrs: attrs(Delete, "pods", "", "ns", "mypod", &empty_node),
                pod: bound_pod("mypod", "mynode"),
                old: None,
                want: r#"pods "mypod" is forbidden: could not determine node from user "system:node:""#,
            },
            Case {
                name: "other users are not restricted",
                attrs: attrs(Update, "pods", "", "ns", "mypod", &bob),
                pod: bound_pod("mypod", "othernode"),
                old: Some(bound_pod("mypod", "othernode")),
                want: "",
            },
        ];
        for Case {
            name,
            attrs: a,
            pod,
            old,
            want,
        } in cases
        {
            assert_eq!(message(admit_pod(&a, &pod, old.as_ref())), want, "{name}");
        }
    }

    #[test]
    fn mirror_pod_owner_uid_must_be_the_nodes() {
        let me = mynode();
        let a = attrs(Operation::Create, "pods", "", "ns", "", &me);
        let node = |uid: &str| Node {
            metadata: ObjectMeta {
                name: Some("mynode".into()),
                uid: Some(uid.into()),
                ..Default::default()
            },
            ..Default::default()
        };
        assert_eq!(
            message(verify_mirror_pod_owner_uid(
                &a,
                &mirror_pod("mynode"),
                &node("node-uid")
            )),
            ""
        );
        assert_eq!(
            message(verify_mirror_pod_owner_uid(
                &a,
                &mirror_pod("mynode"),
                &node("other")
            )),
            r#"pods "mirror" is forbidden: node mynode UID mismatch: expected node-uid got other"#
        );
    }

    fn node_obj(
        name: &str,
        labels: &[(&str, &str)],
        taints: Vec<k8s_openapi::api::core::v1::Taint>,
    ) -> Node {
        Node {
            metadata: ObjectMeta {
                name: Some(name.into()),
                labels: (!labels.is_empty()).then(|| {
                    labels
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect()
                }),
                ..Default::default()
            },
            spec: Some(NodeSpec {
                taints: (!taints.is_empty()).then_some(taints),
                ..Default::default()
            }),
            status: None,
        }
    }

    #[test]
    fn node_requests_match_upstream_messages() {
        let me = mynode();
        let t = || taint("foo", "bar", "NoSchedule");
        let mut config_source = node_obj("mynode", &[], vec![]);
        if let Some(spec) = config_source.spec.as_mut() {
            spec.config_source = Some(NodeConfigSource::default());
        }
        use Operation::*;
        struct Case<'a> {
            name: &'a str,
            attrs: Attributes<'a>,
            node: Node,
            old: Option<Node>,
            want: &'a str,
        }
        let cases = vec![
            Case {
                name: "allow create of my node",
                attrs: attrs(Create, "nodes", "", "", "mynode", &me),
                node: node_obj("mynode", &[], vec![]),
                old: None,
                want: "",
            },
            Case {
                name: "allow create of my node with taints",
                attrs: attrs(Create, "nodes", "", "", "mynode", &me),
                node: node_obj("mynode", &[], vec![t()]),
                old: None,
                want: "",
            },
            Case {
                name: "forbid create of other node",
                attrs: attrs(Create, "nodes", "", "", "othernode", &me),
                node: node_obj("othernode", &[], vec![]),
                old: None,
                want: r#"nodes "othernode" is forbidden: node "mynode" is not allowed to modify node "othernode""#,
            },
            Case {
                name: "forbid create of my node with config source",
                attrs: attrs(Create, "nodes", "", "", "mynode", &me),
                node: config_source.clone(),
                old: None,
                want: r#"nodes "mynode" is forbidden: node "mynode" is not allowed to create pods with a non-nil configSource"#,
            },
            Case {
                name: "allow create of my node with kubelet labels",
                attrs: attrs(Create, "nodes", "", "", "mynode", &me),
                node: node_obj(
                    "mynode",
                    &[
                        ("kubernetes.io/hostname", "x"),
                        ("node.kubernetes.io/foo", "x"),
                        ("foo.kubelet.kubernetes.io/bar", "x"),
                        ("example.com/x", "y"),
                    ],
                    vec![],
                ),
                old: None,
                want: "",
            },
            Case {
                name: "forbid create of my node with restricted labels",
                attrs: attrs(Create, "nodes", "", "", "mynode", &me),
                node: node_obj(
                    "mynode",
                    &[
                        ("node-restriction.kubernetes.io/foo", "x"),
                        ("other.k8s.io/foo", "x"),
                        ("kubernetes.io/hostname", "x"),
                    ],
                    vec![],
                ),
                old: None,
                want: r#"nodes "mynode" is forbidden: node "mynode" is not allowed to set the following labels: node-restriction.kubernetes.io/foo, other.k8s.io/foo"#,
            },
            Case {
                name: "allow update of my node keeping taints",
                attrs: attrs(Update, "nodes", "", "", "mynode", &me),
                node: node_obj("mynode", &[], vec![t()]),
                old: Some(node_obj("mynode", &[], vec![t()])),
                want: "",
            },
            Case {
                name: "allow update of my node status",
                attrs: attrs(Update, "nodes", "status", "", "mynode", &me),
                node: node_obj("mynode", &[], vec![t()]),
                old: Some(node_obj("mynode", &[], vec![t()])),
                want: "",
            },
            Case {
                name: "forbid update of my node: add taints",
                attrs: attrs(Update, "nodes", "", "", "mynode", &me),
                node: node_obj("mynode", &[], vec![t()]),
                old: Some(node_obj("mynode", &[], vec![])),
                want: r#"nodes "mynode" is forbidden: node "mynode" is not allowed to modify taints"#,
            },
            Case {
                name: "forbid update of my node: remove taints",
                attrs: attrs(Update, "nodes", "", "", "mynode", &me),
                node: node_obj("mynode", &[], vec![]),
                old: Some(node_obj("mynode", &[], vec![t()])),
                want: r#"nodes "mynode" is forbidden: node "mynode" is not allowed to modify taints"#,
            },
            Case {
                name: "forbid update of my node: change taints",
                attrs: attrs(Update, "nodes", "status", "", "mynode", &me),
                node: node_obj("mynode", &[], vec![taint("foo", "baz", "NoSchedule")]),
                old: Some(node_obj("mynode", &[], vec![t()])),
                want: r#"nodes "mynode" is forbidden: node "mynode" is not allowed to modify taints"#,
            },
            Case {
                name: "forbid update of my node: new config source",
                attrs: attrs(Update, "nodes", "", "", "mynode", &me),
                node: config_source,
                old: Some(node_obj("mynode", &[], vec![])),
                want: r#"nodes "mynode" is forbidden: node "mynode" is not allowed to update configSource to a new non-nil configSource"#,
            },
            Case {
                name: "forbid update of my node: remove restricted label",
                attrs: attrs(Update, "nodes", "", "", "mynode", &me),
                node: node_obj("mynode", &[], vec![]),
                old: Some(node_obj(
                    "mynode",
                    &[("node-restriction.kubernetes.io/foo", "x")],
                    vec![],
                )),
                want: r#"nodes "mynode" is forbidden: is not allowed to modify labels: node-restriction.kubernetes.io/foo"#,
            },
            Case {
                name: "allow delete of my node",
                attrs: attrs(Delete, "nodes", "", "", "mynode", &me),
                node: node_obj("mynode", &[], vec![]),
                old: None,
                want: "",
            },
            Case {
                name: "forbid delete of other node",
                attrs: attrs(Delete, "nodes", "", "", "othernode", &me),
                node: node_obj("othernode", &[], vec![]),
                old: None,
                want: r#"nodes "othernode" is forbidden: node "mynode" is not allowed to modify node "othernode""#,
            },
        ];
        for Case {
            name,
            attrs: a,
            node,
            old,
            want,
        } in cases
        {
            assert_eq!(message(admit_node(&a, &node, old.as_ref())), want, "{name}");
        }
    }

    #[test]
    fn a_stamped_time_added_is_not_a_taint_change() {
        let me = mynode();
        let a = attrs(Operation::Update, "nodes", "status", "", "mynode", &me);
        let mut stamped = taint("k", "", "NoExecute");
        stamped.time_added = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            jiff::Timestamp::UNIX_EPOCH,
        ));
        let new = node_obj("mynode", &[], vec![stamped]);
        let old = node_obj("mynode", &[], vec![taint("k", "", "NoExecute")]);
        assert_eq!(message(admit_node(&a, &new, Some(&old))), "");
    }

    #[test]
    fn lease_requests_match_upstream_messages() {
        let me = mynode();
        let lease = |name: &str| Lease {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..Default::default()
            },
            spec: None,
        };
        use Operation::*;
        struct Case<'a> {
            name: &'static str,
            attrs: Attributes<'a>,
            lease: Option<Lease>,
            want: &'static str,
        }
        let cases = [
            Case {
                name: "allow create of my lease",
                attrs: attrs(Create, "leases", "", NAMESPACE_NODE_LEASE, "", &me),
                lease: Some(lease("mynode")),
                want: "",
            },
            Case {
                name: "forbid create of other lease",
                attrs: attrs(Create, "leases", "", NAMESPACE_NODE_LEASE, "", &me),
                lease: Some(lease("othernode")),
                want: r#"leases.coordination.k8s.io "othernode" is forbidden: can only access node lease with the same name as the requesting node"#,
            },
            Case {
                name: "forbid create in another namespace",
                attrs: attrs(Create, "leases", "", "default", "", &me),
                lease: Some(lease("mynode")),
                want: r#"leases.coordination.k8s.io "mynode" is forbidden: can only access leases in the "kube-node-lease" system namespace"#,
            },
            Case {
                name: "allow update of my lease",
                attrs: attrs(Update, "leases", "", NAMESPACE_NODE_LEASE, "mynode", &me),
                lease: Some(lease("mynode")),
                want: "",
            },
            Case {
                name: "forbid update of other lease",
                attrs: attrs(Update, "leases", "", NAMESPACE_NODE_LEASE, "othernode", &me),
                lease: Some(lease("othernode")),
                want: r#"leases.coordination.k8s.io "othernode" is forbidden: can only access node lease with the same name as the requesting node"#,
            },
            Case {
                name: "allow delete of my lease",
                attrs: attrs(Delete, "leases", "", NAMESPACE_NODE_LEASE, "mynode", &me),
                lease: None,
                want: "",
            },
            Case {
                name: "forbid delete of other lease",
                attrs: attrs(Delete, "leases", "", NAMESPACE_NODE_LEASE, "othernode", &me),
                lease: None,
                want: r#"leases.coordination.k8s.io "othernode" is forbidden: can only access node lease with the same name as the requesting node"#,
            },
        ];
        for Case {
            name,
            attrs: a,
            lease,
            want,
        } in cases
        {
            assert_eq!(message(admit_lease(&a, lease.as_ref())), want, "{name}");
        }
    }
}
