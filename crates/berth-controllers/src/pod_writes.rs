//! The pod writes the controllers make, as raw requests whose answers are
//! not decoded (a controller needs only the status code; its watch brings
//! the objects, and decoding whole Pods was a good part of the taint
//! eviction controller's CPU): upstream's `PatchPodStatus` (a strategic
//! merge patch of the status, conditions merging by type, the pod's UID in
//! the patch) and a delete with the UID as precondition.
//!
//! Both answer whether the write reached the pod meant: a pod gone (404),
//! or another pod under its name now (the UID precondition failing: 409 on
//! a delete, 422 on a patch), is not an error but nothing to do.

use kube::api::{DeleteParams, Patch, PatchParams, Preconditions};
use kube::core::Request;
use serde_json::{Value, json};

/// Patches the status of pod `namespace/name` with UID `uid`. `Ok(false)`:
/// that pod is no more.
pub async fn patch_status(
    client: &kube::Client,
    (namespace, name, uid): (&str, &str, &str),
    status: Value,
) -> Result<bool, kube::Error> {
    let patch = json!({"metadata": {"uid": uid}, "status": status});
    let request = pods(namespace)
        .patch_subresource(
            "status",
            name,
            &PatchParams::default(),
            &Patch::Strategic(patch),
        )
        .map_err(kube::Error::BuildRequest)?;
    reached(client.request_text(request).await)
}

/// Deletes pod `namespace/name` with UID `uid`, with grace period `grace`
/// when given. `Ok(false)`: that pod is no more.
pub async fn delete(
    client: &kube::Client,
    (namespace, name, uid): (&str, &str, &str),
    grace: Option<i64>,
) -> Result<bool, kube::Error> {
    let params = DeleteParams {
        grace_period_seconds: grace.and_then(|g| u32::try_from(g).ok()),
        preconditions: Some(Preconditions {
            uid: Some(uid.to_string()),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    let request = pods(namespace)
        .delete(name, &params)
        .map_err(kube::Error::BuildRequest)?;
    reached(client.request_text(request).await)
}

fn pods(namespace: &str) -> Request {
    Request::new(format!("/api/v1/namespaces/{namespace}/pods"))
}

/// Whether a write reached the pod meant (see the module documentation).
fn reached(answer: Result<String, kube::Error>) -> Result<bool, kube::Error> {
    match answer {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(status))
            if status.is_not_found() || status.code == 409 || status.code == 422 =>
        {
            Ok(false)
        }
        Err(err) => Err(err),
    }
}
