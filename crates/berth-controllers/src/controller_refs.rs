//! Claiming what a controller owns: upstream's `ControllerRefManager`
//! (`ClaimPods`, `ClaimReplicaSets`) as one generic pass. The decision per
//! object is berth-core's [`ownership::claim`]; this module carries it
//! out:
//!
//! - adoption patches the controller reference in (a strategic merge
//!   patch naming the object's UID, so a recreated object is not adopted
//!   by mistake), after one uncached read of the owner per pass that
//!   checks it is the same owner and not being deleted (upstream's
//!   `RecheckDeletionTimestamp`, issue #42639);
//! - release patches the reference out (`$patch: delete` by the owner's
//!   UID); an object gone (404) or refusing the patch (422) is left alone.
//!
//! Errors are gathered: the pass claims what it can and reports the first
//! failure, and the sync that asked fails (to be retried).

use std::sync::Arc;

use kube::Resource;
use kube::api::{Patch, PatchParams};
use kube::core::Request;
use serde::de::DeserializeOwned;
use serde_json::json;

use berth_core::labels::LabelSelector;
use berth_core::workloads::ownership::{self, Claim};

use crate::sync_error::SyncError;

/// Claims `candidates` for `owner`, whose `selector` says what it
/// selects: the objects it owns afterwards (adopted ones included).
pub async fn claim<O, K>(
    client: &kube::Client,
    owner: &O,
    selector: &LabelSelector,
    candidates: impl IntoIterator<Item = Arc<K>>,
) -> Result<Vec<Arc<K>>, SyncError>
where
    O: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + DeserializeOwned
        + Clone
        + std::fmt::Debug,
    K: Resource<DynamicType = ()> + DeserializeOwned,
{
    let owner_meta = owner.meta();
    let mut claimed = Vec::new();
    let mut first_error: Option<SyncError> = None;
    let mut can_adopt: Option<Result<(), String>> = None;
    for object in candidates {
        let meta = object.meta();
        match ownership::claim_by_selector(owner_meta, selector, meta) {
            Claim::Owned => claimed.push(object),
            Claim::Ignore => {}
            Claim::Adopt => {
                if can_adopt.is_none() {
                    can_adopt = Some(recheck_owner(client, owner).await);
                }
                if let Some(Err(why)) = &can_adopt {
                    first_error.get_or_insert_with(|| {
                        SyncError::Other(format!(
                            "can't adopt {} {}: {why}",
                            K::kind(&()),
                            berth_core::object_key::ObjectKey::of_meta(meta)
                        ))
                    });
                    continue;
                }
                let reference =
                    ownership::new_controller_ref(owner_meta, &O::api_version(&()), &O::kind(&()));
                let patch = json!({"metadata": {
                    "ownerReferences": [reference],
                    "uid": meta.uid,
                }});
                match patch_object::<K>(client, meta, patch).await {
                    // The adopted object as it is now, so that the sync's
                    // next write of it names its current version.
                    Ok(adopted) => claimed.push(
                        serde_json::from_str(&adopted).map_or(object, |adopted| Arc::new(adopted)),
                    ),
                    Err(err) if is_status(&err, 404) => {}
                    Err(err) => {
                        first_error.get_or_insert(err.into());
                    }
                }
            }
            Claim::Release => {
                let patch = json!({"metadata": {
                    "ownerReferences": [{"$patch": "delete", "uid": owner_meta.uid}],
                    "uid": meta.uid,
                }});
                match patch_object::<K>(client, meta, patch).await {
                    Ok(_) => {}
                    // Gone, or no longer patchable (being deleted): it is
                    // not ours either way.
                    Err(err) if is_status(&err, 404) || is_status(&err, 422) => {}
                    Err(err) => {
                        first_error.get_or_insert(err.into());
                    }
                }
            }
        }
    }
    match first_error {
        Some(err) => Err(err),
        None => Ok(claimed),
    }
}

/// Whether `err` is an API answer with this HTTP status.
pub fn is_status(err: &kube::Error, code: u16) -> bool {
    matches!(err, kube::Error::Api(status) if status.code == code)
}

/// `RecheckDeletionTimestamp`: the owner read past every cache is the
/// same object and is not being deleted.
async fn recheck_owner<O>(client: &kube::Client, owner: &O) -> Result<(), String>
where
    O: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + DeserializeOwned
        + Clone
        + std::fmt::Debug,
{
    let meta = owner.meta();
    let namespace = meta.namespace.as_deref().unwrap_or_default();
    let name = meta.name.as_deref().unwrap_or_default();
    let api: kube::Api<O> = kube::Api::namespaced(client.clone(), namespace);
    let fresh = api.get(name).await.map_err(|e| e.to_string())?;
    let fresh_meta = fresh.meta();
    if fresh_meta.uid != meta.uid {
        return Err(format!(
            "original {} {namespace}/{name} is gone: got uid {}, wanted {}",
            O::kind(&()),
            fresh_meta.uid.as_deref().unwrap_or_default(),
            meta.uid.as_deref().unwrap_or_default()
        ));
    }
    if let Some(at) = &fresh_meta.deletion_timestamp {
        return Err(format!(
            "{namespace}/{name} has just been deleted at {}",
            at.0
        ));
    }
    Ok(())
}

/// A strategic merge patch of a `K`; the answer's text.
async fn patch_object<K: Resource<DynamicType = ()>>(
    client: &kube::Client,
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    patch: serde_json::Value,
) -> Result<String, kube::Error> {
    let request = Request::new(K::url_path(&(), meta.namespace.as_deref()))
        .patch(
            meta.name.as_deref().unwrap_or_default(),
            &PatchParams::default(),
            &Patch::Strategic(patch),
        )
        .map_err(kube::Error::BuildRequest)?;
    client.request_text(request).await
}
