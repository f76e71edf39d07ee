//! Claiming what a controller owns, for all four workload controllers:
//! upstream's `ControllerRefManager` (`ClaimPods`, `ClaimReplicaSets`,
//! `ClaimControllerRevisions`): the objects a controller owns, after it
//! adopts the orphans its selector matches and releases what it no longer
//! matches. The decision is
//! berth-core's ([`berth_core::workloads::ownership::claim`]); this file
//! writes it: an adoption is a strategic merge patch adding the
//! controller reference (with the object's UID as a precondition), a
//! release one deleting it, as upstream's patches are. An object gone
//! (404), or refusing the release (422: being deleted), is not ours either
//! way. An adopted object is the patch's answer when the writer has one,
//! so that the sync's next write of it names its current version.
//!
//! Before its first adoption a claim reads the owner afresh (upstream's
//! `RecheckDeletionTimestamp`): an owner being deleted, or replaced by
//! another object of its name, adopts nothing.
//!
//! A sync claims at each of its steps (upstream lists its cache again
//! each time); a [`ClaimSession`] remembers what the sync already
//! adopted and released, so each object is patched once per sync even
//! though the watch has not shown the patch yet.

use std::collections::HashSet;
use std::sync::{Arc, RwLock};

use berth_core::workloads::ownership::{Claim, adopt, claim, controller_of, new_controller_ref};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::json;

use crate::cache::ObjectCache;
use crate::shared::read;
use crate::sync_error::is_status;
use crate::workload::writes::{Object, Writes, api_error, is_not_found};

/// Why a claim could not adopt.
fn cannot_adopt(owner: &ObjectMeta, why: &str) -> kube::Error {
    api_error(
        409,
        "Conflict",
        &format!(
            "original {}/{} {why}",
            owner.namespace.as_deref().unwrap_or(""),
            owner.name.as_deref().unwrap_or("")
        ),
    )
}

/// What one sync has claimed so far (by UID).
#[derive(Debug, Default)]
pub struct ClaimSession {
    adopted: HashSet<String>,
    released: HashSet<String>,
    owner_rechecked: bool,
}

/// The objects among `candidates` that `owner` (of type `O`) controls once
/// adoptions and releases are written. `matches` is the selector and any
/// extra filter (a StatefulSet claims only pods named as its members).
pub async fn claim_objects<O, K, W>(
    writes: &W,
    session: &mut ClaimSession,
    owner: &O,
    candidates: Vec<Arc<K>>,
    matches: impl Fn(&K) -> bool,
) -> Result<Vec<Arc<K>>, kube::Error>
where
    O: Object,
    K: Object,
    W: Writes,
{
    claim_known_objects(writes, session, owner, candidates, matches, |_| false).await
}

/// [`claim_objects`], where `known(object)` says the owner claimed this
/// very version of the object as its own before (it is the owner's and
/// matched): it is kept without being read again.
pub async fn claim_known_objects<O, K, W>(
    writes: &W,
    session: &mut ClaimSession,
    owner: &O,
    candidates: Vec<Arc<K>>,
    matches: impl Fn(&K) -> bool,
    known: impl Fn(&Arc<K>) -> bool,
) -> Result<Vec<Arc<K>>, kube::Error>
where
    O: Object,
    K: Object,
    W: Writes,
{
    let owner_meta = owner.meta();
    let reference = new_controller_ref(owner_meta, &O::api_version(&()), &O::kind(&()));
    let mut claimed = Vec::with_capacity(candidates.len());
    for object in candidates {
        if known(&object) {
            claimed.push(object);
            continue;
        }
        let uid = object.meta().uid.clone().unwrap_or_default();
        if session.released.contains(&uid) {
            continue;
        }
        if session.adopted.contains(&uid) {
            let mut adopted = (*object).clone();
            if controller_of(adopted.meta()).is_none() {
                adopt(adopted.meta_mut(), reference.clone());
            }
            claimed.push(Arc::new(adopted));
            continue;
        }
        match claim(owner_meta, matches(&object), object.meta()) {
            Claim::Owned => claimed.push(object),
            Claim::Ignore => {}
            Claim::Adopt => {
                if !session.owner_rechecked {
                    recheck_owner(writes, owner).await?;
                    session.owner_rechecked = true;
                }
                let reference = reference.clone();
                let patch = json!({"metadata": {
                    "ownerReferences": [reference],
                    "uid": object.meta().uid,
                }});
                let meta = object.meta();
                let (namespace, name) = namespace_and_name(meta);
                match writes.patch::<K>(&namespace, &name, patch).await {
                    Ok(patched) => {
                        session.adopted.insert(uid);
                        let adopted = patched.unwrap_or_else(|| {
                            let mut adopted = (*object).clone();
                            adopt(adopted.meta_mut(), reference);
                            adopted
                        });
                        claimed.push(Arc::new(adopted));
                    }
                    // Gone meanwhile: nothing to claim.
                    Err(err) if is_not_found(&err) => {}
                    Err(err) => return Err(err),
                }
            }
            Claim::Release => {
                let patch = json!({"metadata": {
                    "ownerReferences": [{"$patch": "delete", "uid": owner_meta.uid}],
                    "uid": object.meta().uid,
                }});
                let (namespace, name) = namespace_and_name(object.meta());
                match writes.patch::<K>(&namespace, &name, patch).await {
                    Ok(_) => {
                        session.released.insert(uid);
                    }
                    Err(err) if is_not_found(&err) || is_status(&err, 422) => {}
                    Err(err) => return Err(err),
                }
            }
        }
    }
    Ok(claimed)
}

/// [`claim_objects`] over the objects of the owner's namespace in `cache`.
pub async fn claim_from<O, K, W>(
    writes: &W,
    session: &mut ClaimSession,
    owner: &O,
    cache: &RwLock<ObjectCache<K>>,
    matches: impl Fn(&K) -> bool,
) -> Result<Vec<Arc<K>>, kube::Error>
where
    O: Object,
    K: Object,
    W: Writes,
{
    let namespace = owner.meta().namespace.as_deref().unwrap_or("");
    let candidates: Vec<Arc<K>> = read(cache).in_namespace(namespace).cloned().collect();
    claim_objects(writes, session, owner, candidates, matches).await
}

fn namespace_and_name(meta: &ObjectMeta) -> (String, String) {
    (
        meta.namespace.clone().unwrap_or_default(),
        meta.name.clone().unwrap_or_default(),
    )
}

/// `RecheckDeletionTimestamp`: the owner as the API has it now must be
/// the same object and not being deleted.
async fn recheck_owner<O: Object, W: Writes>(writes: &W, owner: &O) -> Result<(), kube::Error> {
    let meta = owner.meta();
    let (namespace, name) = namespace_and_name(meta);
    let fresh: O = writes.get(&namespace, &name).await?;
    if fresh.meta().uid != meta.uid {
        return Err(cannot_adopt(
            meta,
            &format!(
                "is gone: got uid {}, wanted {}",
                fresh.meta().uid.as_deref().unwrap_or(""),
                meta.uid.as_deref().unwrap_or("")
            ),
        ));
    }
    if let Some(deleted) = &fresh.meta().deletion_timestamp {
        return Err(cannot_adopt(
            meta,
            &format!("has just been deleted at {}", deleted.0),
        ));
    }
    Ok(())
}
