//! What the garbage collector's workers do with an object of its queues
//! (upstream's `attemptToDeleteItem`, `processDeletingDependentsItem`,
//! `classifyReferences`/`isDangling`, `orphanDependents` and
//! `removeFinalizer`), against the API through [`GcApi`] so the decisions
//! are tested against a fake, as upstream's are.
//!
//! Every decision is made on the object as the API has it now (a GET), and
//! every owner is verified by UID: an owner found under the reference's
//! name with another UID is absent. Owners found absent are remembered
//! ([`AbsentOwners`]) so their other dependents go without asking again.

use std::future::Future;
use std::sync::Mutex;

use berth_core::deletion::{FOREGROUND_FINALIZER, ORPHAN_FINALIZER, Propagation};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use serde_json::{Value, json};

use super::absent_owners::AbsentOwners;
use super::graph::Identity;
use super::resources::{Resources, Served};

/// A patch of an object's metadata.
#[derive(Debug, Clone, PartialEq)]
pub enum MetaPatch {
    /// `application/strategic-merge-patch+json`.
    Strategic(Value),
    /// `application/merge-patch+json`.
    Merge(Value),
}

/// The API calls of the workers.
pub trait GcApi: Sync {
    /// The object's metadata; `None` when it does not exist.
    fn get(
        &self,
        resource: &Served,
        namespace: &str,
        name: &str,
    ) -> impl Future<Output = Result<Option<ObjectMeta>, kube::Error>> + Send;

    /// Deletes the object with `policy`, its UID as precondition.
    fn delete(
        &self,
        resource: &Served,
        object: &Identity,
        policy: Propagation,
    ) -> impl Future<Output = Result<(), kube::Error>> + Send;

    /// Patches the object's metadata.
    fn patch(
        &self,
        resource: &Served,
        object: &Identity,
        patch: &MetaPatch,
    ) -> impl Future<Output = Result<(), kube::Error>> + Send;
}

/// What the graph knows of an object to look at, taken when the attempt
/// starts.
#[derive(Debug, Clone, Default)]
pub struct DeleteAttempt {
    pub item: Identity,
    /// Its foreground deletion started.
    pub deleting_dependents: bool,
    /// Its dependents that block its deletion, each with whether it is
    /// itself deleting its dependents.
    pub blocking_dependents: Vec<(Identity, bool)>,
    pub has_dependents: bool,
    /// One of its dependents is deleting its own dependents (a possible
    /// cycle of foreground deletions).
    pub a_dependent_deletes_its_dependents: bool,
}

/// How an attempt ended, for the queue.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Nothing more to do (for now).
    Done,
    /// Try again after the item's backoff.
    Retry(String),
    /// The object no longer exists (or is another object now): forget it.
    Gone,
    /// Done; look at these objects (by UID) now.
    Enqueue(Vec<String>),
}

/// Why an owner reference cannot be judged.
enum Unjudged {
    /// Retry later (the API failed, or the kind is not served yet).
    Retry(String),
    /// Never (a cluster-scoped object naming a namespaced owner).
    Never,
}

/// The workers' shared state.
pub struct Workers<'a, A> {
    pub api: &'a A,
    pub resources: &'a Resources,
    pub absent: &'a Mutex<AbsentOwners>,
}

/// Owner references sorted by what their owner is doing.
#[derive(Debug, Default)]
struct Classified {
    /// The owner exists and is not deleting its dependents.
    solid: Vec<OwnerReference>,
    /// The owner does not exist.
    dangling: Vec<OwnerReference>,
    /// The owner is being deleted in the foreground.
    waiting: Vec<OwnerReference>,
}

impl<A: GcApi> Workers<'_, A> {
    fn resolve(&self, identity: &Identity) -> Result<&Served, Unjudged> {
        self.resources
            .resolve(&identity.api_version, &identity.kind)
            .ok_or_else(|| {
                Unjudged::Retry(format!(
                    "unable to get REST mapping for {}/{}",
                    identity.api_version, identity.kind
                ))
            })
    }

    /// Upstream `attemptToDeleteItem` on an object that is not being
    /// deleted, or is deleting its dependents.
    pub async fn attempt_to_delete(&self, attempt: &DeleteAttempt) -> Outcome {
        let item = &attempt.item;
        let resource = match self.resolve(item) {
            Ok(resource) => resource,
            Err(Unjudged::Retry(why)) => return Outcome::Retry(why),
            Err(Unjudged::Never) => return Outcome::Done,
        };
        let latest = match self.api.get(resource, &item.namespace, &item.name).await {
            Ok(Some(latest)) => latest,
            Ok(None) => return Outcome::Gone,
            Err(e) => return Outcome::Retry(e.to_string()),
        };
        if latest.uid.as_deref() != Some(item.uid.as_str()) {
            tracing::debug!(item = %item, "UID doesn't match, item not found");
            return Outcome::Gone;
        }
        if attempt.deleting_dependents {
            return self.process_deleting_dependents(attempt, resource).await;
        }
        let references = latest.owner_references.clone().unwrap_or_default();
        if references.is_empty() {
            return Outcome::Done;
        }
        let classified = match self.classify(item, &references).await {
            Ok(classified) => classified,
            Err(Unjudged::Retry(why)) => return Outcome::Retry(why),
            Err(Unjudged::Never) => return Outcome::Done,
        };
        tracing::debug!(item = %item, ?classified, "classified the item's references");
        if !classified.solid.is_empty() {
            if classified.dangling.is_empty() && classified.waiting.is_empty() {
                return Outcome::Done;
            }
            // References to absent owners go; so do those to owners
            // waiting for their dependents, or those owners would wait
            // for this object for ever.
            let gone: Vec<&str> = classified
                .dangling
                .iter()
                .chain(&classified.waiting)
                .map(|r| r.uid.as_str())
                .collect();
            tracing::info!(item = %item, references = ?gone, "Removing dangling and waiting references");
            return self.outcome(
                self.api
                    .patch(resource, item, &delete_references(&item.uid, &gone))
                    .await,
            );
        }
        if !classified.waiting.is_empty() && attempt.has_dependents {
            if attempt.a_dependent_deletes_its_dependents {
                // A possible cycle of foreground deletions: this object
                // stops blocking its owners first.
                tracing::info!(item = %item, "Unblocking the owner references of an item whose dependent deletes its dependents");
                if let Err(e) = self
                    .api
                    .patch(resource, item, &unblock_references(&item.uid, &references))
                    .await
                {
                    return Outcome::Retry(e.to_string());
                }
            }
            tracing::info!(item = %item, "An owner waits for its dependents and the item has dependents: deleting it in the foreground");
            return self.delete(resource, item, Propagation::Foreground).await;
        }
        // No owner left that keeps it: the item goes, its own dependents
        // as its finalizers say.
        let has = |f: &str| latest.finalizers.iter().flatten().any(|x| x == f);
        let policy = if has(ORPHAN_FINALIZER) {
            Propagation::Orphan
        } else if has(FOREGROUND_FINALIZER) {
            Propagation::Foreground
        } else {
            Propagation::Background
        };
        self.delete(resource, item, policy).await
    }

    async fn delete(&self, resource: &Served, item: &Identity, policy: Propagation) -> Outcome {
        tracing::info!(item = %item, propagation_policy = policy.as_str(), "Deleting item");
        match self.api.delete(resource, item, policy).await {
            // Gone already, or another object under the name now: the
            // watch brings the deletion.
            Err(kube::Error::Api(status)) if status.is_not_found() || status.code == 409 => {
                Outcome::Done
            }
            other => self.outcome(other),
        }
    }

    fn outcome(&self, result: Result<(), kube::Error>) -> Outcome {
        match result {
            Ok(()) => Outcome::Done,
            Err(e) => Outcome::Retry(e.to_string()),
        }
    }

    /// Upstream `processDeletingDependentsItem`: once no dependent blocks
    /// the object, its `foregroundDeletion` finalizer goes; until then, the
    /// blocking dependents are looked at.
    async fn process_deleting_dependents(
        &self,
        attempt: &DeleteAttempt,
        resource: &Served,
    ) -> Outcome {
        if attempt.blocking_dependents.is_empty() {
            tracing::info!(item = %attempt.item, "Removing the foregroundDeletion finalizer: no dependent blocks the item");
            return self.outcome(
                self.remove_finalizer(resource, &attempt.item, FOREGROUND_FINALIZER)
                    .await,
            );
        }
        Outcome::Enqueue(
            attempt
                .blocking_dependents
                .iter()
                .filter(|(_, deleting)| !deleting)
                .map(|(dependent, _)| dependent.uid.clone())
                .collect(),
        )
    }

    /// Upstream `classifyReferences`.
    async fn classify(
        &self,
        item: &Identity,
        references: &[OwnerReference],
    ) -> Result<Classified, Unjudged> {
        let mut classified = Classified::default();
        for reference in references {
            match self.owner_state(item, reference).await? {
                OwnerState::Absent => classified.dangling.push(reference.clone()),
                OwnerState::WaitingForDependents => classified.waiting.push(reference.clone()),
                OwnerState::Solid => classified.solid.push(reference.clone()),
            }
        }
        Ok(classified)
    }

    /// Upstream `isDangling`, and whether an existing owner is deleting its
    /// dependents.
    async fn owner_state(
        &self,
        item: &Identity,
        reference: &OwnerReference,
    ) -> Result<OwnerState, Unjudged> {
        let as_cluster_scoped = Identity::of_reference(reference, "");
        let as_namespaced = Identity::of_reference(reference, &item.namespace);
        if let Ok(mut absent) = self.absent.lock()
            && (absent.has(&as_cluster_scoped) || absent.has(&as_namespaced))
        {
            tracing::debug!(item = %item, owner = %as_namespaced, "according to the absent owner cache, the owner does not exist");
            return Ok(OwnerState::Absent);
        }
        let resource = self.resolve(&as_namespaced)?;
        if item.namespace.is_empty() && resource.namespaced {
            tracing::warn!(item = %item, owner = %as_namespaced, "item is cluster-scoped, but refers to a namespaced owner");
            return Err(Unjudged::Never);
        }
        let (key, namespace) = if resource.namespaced {
            (as_namespaced, item.namespace.as_str())
        } else {
            (as_cluster_scoped, "")
        };
        let owner = self
            .api
            .get(resource, namespace, &reference.name)
            .await
            .map_err(|e| Unjudged::Retry(e.to_string()))?;
        let Some(owner) = owner.filter(|o| o.uid.as_deref() == Some(reference.uid.as_str())) else {
            tracing::debug!(item = %item, owner = %key, "the item's owner is not found (or has another UID)");
            if let Ok(mut absent) = self.absent.lock() {
                absent.add(key);
            }
            return Ok(OwnerState::Absent);
        };
        let deleting_dependents = owner.deletion_timestamp.is_some()
            && owner
                .finalizers
                .iter()
                .flatten()
                .any(|f| f == FOREGROUND_FINALIZER);
        Ok(if deleting_dependents {
            OwnerState::WaitingForDependents
        } else {
            OwnerState::Solid
        })
    }

    /// Upstream's attempt to orphan: `owner`'s dependents lose their
    /// reference to it, then it loses its `orphan` finalizer.
    pub async fn attempt_to_orphan(&self, owner: &Identity, dependents: &[Identity]) -> Outcome {
        let patches = dependents.iter().map(|dependent| async move {
            let resource = match self.resolve(dependent) {
                Ok(resource) => resource,
                Err(_) => return Some(format!("orphaning {dependent} failed: unknown kind")),
            };
            let patch = delete_references(&dependent.uid, &[owner.uid.as_str()]);
            match self.api.patch(resource, dependent, &patch).await {
                Err(kube::Error::Api(status)) if status.is_not_found() => None,
                Err(e) => Some(format!("orphaning {dependent} failed, {e}")),
                Ok(()) => None,
            }
        });
        let errors: Vec<String> = futures::future::join_all(patches)
            .await
            .into_iter()
            .flatten()
            .collect();
        if !errors.is_empty() {
            return Outcome::Retry(format!(
                "failed to orphan dependents of owner {owner}, got errors: [{}]",
                errors.join(", ")
            ));
        }
        tracing::info!(owner = %owner, dependents = dependents.len(), "Orphaned the dependents; removing the orphan finalizer");
        let resource = match self.resolve(owner) {
            Ok(resource) => resource,
            Err(_) => return Outcome::Retry(format!("unable to get REST mapping for {owner}")),
        };
        self.outcome(
            self.remove_finalizer(resource, owner, ORPHAN_FINALIZER)
                .await,
        )
    }

    /// Upstream `removeFinalizer`: the object as it is now, less the
    /// finalizer, written on its resourceVersion; a conflict is tried again
    /// (a few times, as client-go's `retry.DefaultBackoff`).
    async fn remove_finalizer(
        &self,
        resource: &Served,
        object: &Identity,
        finalizer: &str,
    ) -> Result<(), kube::Error> {
        const ATTEMPTS: usize = 4;
        let mut attempt = 1;
        loop {
            let current = match self
                .api
                .get(resource, &object.namespace, &object.name)
                .await?
            {
                Some(current) if current.uid.as_deref() == Some(object.uid.as_str()) => current,
                _ => return Ok(()),
            };
            let finalizers = current.finalizers.unwrap_or_default();
            if !finalizers.iter().any(|f| f == finalizer) {
                return Ok(());
            }
            let kept: Vec<&String> = finalizers.iter().filter(|f| *f != finalizer).collect();
            let patch = MetaPatch::Merge(json!({"metadata": {
                "resourceVersion": current.resource_version,
                "finalizers": if kept.is_empty() { Value::Null } else { json!(kept) },
            }}));
            match self.api.patch(resource, object, &patch).await {
                Err(kube::Error::Api(status)) if status.code == 409 && attempt < ATTEMPTS => {
                    attempt += 1;
                }
                other => return other,
            }
        }
    }
}

enum OwnerState {
    Absent,
    WaitingForDependents,
    Solid,
}

/// Upstream `GenerateDeleteOwnerRefStrategicMergeBytes`: the references to
/// `owners` deleted, the object's UID as precondition.
pub fn delete_references(uid: &str, owners: &[&str]) -> MetaPatch {
    let deletions: Vec<Value> = owners
        .iter()
        .map(|owner| json!({"$patch": "delete", "uid": owner}))
        .collect();
    MetaPatch::Strategic(json!({"metadata": {"ownerReferences": deletions, "uid": uid}}))
}

/// Upstream `unblockOwnerReferencesStrategicMergePatch`: every blocking
/// reference set not to block, the object's UID as precondition.
pub fn unblock_references(uid: &str, references: &[OwnerReference]) -> MetaPatch {
    let unblocked: Vec<OwnerReference> = references
        .iter()
        .filter(|r| r.block_owner_deletion == Some(true))
        .map(|r| OwnerReference {
            block_owner_deletion: Some(false),
            ..r.clone()
        })
        .collect();
    MetaPatch::Strategic(json!({"metadata": {"ownerReferences": unblocked, "uid": uid}}))
}

#[cfg(test)]
#[path = "attempt_tests.rs"]
mod tests;
